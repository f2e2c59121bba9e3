/** The OpenAPI definitions of authentication.k8s.io/v1 (TokenReview, TokenRequest), as Kubernetes 1.23 publishes them. */
import { ref, type Definitions, type Schema } from '../../schema.js';
import { API_VERSION_PROPERTY, KIND_PROPERTY, OBJECT_META_REF } from '../../definitions/meta.js';

export const AUTHENTICATION_GROUP = 'authentication.k8s.io';
const P = 'io.k8s.api.authentication.v1.';
export const AUTHN_NAMES = {
  TokenReview: `${P}TokenReview`,
  TokenReviewSpec: `${P}TokenReviewSpec`,
  TokenReviewStatus: `${P}TokenReviewStatus`,
  UserInfo: `${P}UserInfo`,
  TokenRequest: `${P}TokenRequest`,
  TokenRequestSpec: `${P}TokenRequestSpec`,
  TokenRequestStatus: `${P}TokenRequestStatus`,
  BoundObjectReference: `${P}BoundObjectReference`,
};
const N = AUTHN_NAMES;

const s = (description: string): Schema => ({ description, type: 'string' });
const strings = (description: string): Schema => ({ description, items: { type: 'string' }, type: 'array' });
const gvk = (kind: string) => [{ group: AUTHENTICATION_GROUP, kind, version: 'v1' }];
const SPEC_STATUS = 'https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#spec-and-status';

export const AUTHENTICATION_DEFINITIONS: Definitions = {
  [N.TokenReview]: {
    description:
      'TokenReview attempts to authenticate a token to a known user. Note: TokenReview requests may be cached by the webhook token authenticator plugin in the kube-apiserver.',
    properties: {
      apiVersion: API_VERSION_PROPERTY,
      kind: KIND_PROPERTY,
      metadata: OBJECT_META_REF,
      spec: ref(N.TokenReviewSpec, 'Spec holds information about the request being evaluated'),
      status: ref(N.TokenReviewStatus, 'Status is filled in by the server and indicates whether the request can be authenticated.'),
    },
    required: ['spec'],
    type: 'object',
    'x-kubernetes-group-version-kind': gvk('TokenReview'),
  },
  [N.TokenReviewSpec]: {
    description: 'TokenReviewSpec is a description of the token authentication request.',
    properties: {
      audiences: strings(
        'Audiences is a list of the identifiers that the resource server presented with the token identifies as. Audience-aware token authenticators will verify that the token was intended for at least one of the audiences in this list. If no audiences are provided, the audience will default to the audience of the Kubernetes apiserver.',
      ),
      token: s('Token is the opaque bearer token.'),
    },
    type: 'object',
  },
  [N.TokenReviewStatus]: {
    description: 'TokenReviewStatus is the result of the token authentication request.',
    properties: {
      audiences: strings(
        'Audiences are audience identifiers chosen by the authenticator that are compatible with both the TokenReview and token. An identifier is any identifier in the intersection of the TokenReviewSpec audiences and the token\'s audiences. A client of the TokenReview API that sets the spec.audiences field should validate that a compatible audience identifier is returned in the status.audiences field to ensure that the TokenReview server is audience aware. If a TokenReview returns an empty status.audience field where status.authenticated is "true", the token is valid against the audience of the Kubernetes API server.',
      ),
      authenticated: { description: 'Authenticated indicates that the token was associated with a known user.', type: 'boolean' },
      error: s("Error indicates that the token couldn't be checked"),
      user: ref(N.UserInfo, 'User is the UserInfo associated with the provided token.'),
    },
    type: 'object',
  },
  [N.UserInfo]: {
    description: 'UserInfo holds the information about the user needed to implement the user.Info interface.',
    properties: {
      extra: {
        additionalProperties: { items: { type: 'string' }, type: 'array' },
        description: 'Any additional information provided by the authenticator.',
        type: 'object',
      },
      groups: strings('The names of groups this user is a part of.'),
      uid: s(
        'A unique value that identifies this user across time. If this user is deleted and another user by the same name is added, they will have different UIDs.',
      ),
      username: s('The name that uniquely identifies this user among all active users.'),
    },
    type: 'object',
  },
  [N.TokenRequest]: {
    description: 'TokenRequest requests a token for a given service account.',
    properties: {
      apiVersion: API_VERSION_PROPERTY,
      kind: KIND_PROPERTY,
      metadata: OBJECT_META_REF,
      spec: ref(N.TokenRequestSpec, `Spec holds information about the request being evaluated`),
      status: ref(N.TokenRequestStatus, `Status is filled in by the server and indicates whether the token can be authenticated. More info: ${SPEC_STATUS}`),
    },
    required: ['spec'],
    type: 'object',
    'x-kubernetes-group-version-kind': gvk('TokenRequest'),
  },
  [N.TokenRequestSpec]: {
    description: 'TokenRequestSpec contains client provided parameters of a token request.',
    properties: {
      audiences: strings(
        'Audiences are the intendend audiences of the token. A recipient of a token must identify themself with an identifier in the list of audiences of the token, and otherwise should reject the token. A token issued for multiple audiences may be used to authenticate against any of the audiences listed but implies a high degree of trust between the target audiences.',
      ),
      boundObjectRef: ref(
        N.BoundObjectReference,
        "BoundObjectRef is a reference to an object that the token will be bound to. The token will only be valid for as long as the bound object exists. NOTE: The API server's TokenReview endpoint will validate the BoundObjectRef, but other audiences may not. Keep ExpirationSeconds small if you want prompt revocation.",
      ),
      expirationSeconds: {
        description:
          "ExpirationSeconds is the requested duration of validity of the request. The token issuer may return a token with a different validity duration so a client needs to check the 'expiration' field in a response.",
        format: 'int64',
        type: 'integer',
      },
    },
    required: ['audiences'],
    type: 'object',
  },
  [N.TokenRequestStatus]: {
    description: 'TokenRequestStatus is the result of a token request.',
    properties: {
      expirationTimestamp: ref('io.k8s.apimachinery.pkg.apis.meta.v1.Time', 'ExpirationTimestamp is the time of expiration of the returned token.'),
      token: s('Token is the opaque bearer token.'),
    },
    required: ['token', 'expirationTimestamp'],
    type: 'object',
  },
  [N.BoundObjectReference]: {
    description: 'BoundObjectReference is a reference to an object that a token is bound to.',
    properties: {
      apiVersion: s('API version of the referent.'),
      kind: s("Kind of the referent. Valid kinds are 'Pod' and 'Secret'."),
      name: s('Name of the referent.'),
      uid: s('UID of the referent.'),
    },
    type: 'object',
  },
};
