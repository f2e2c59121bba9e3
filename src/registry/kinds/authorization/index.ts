/**
 * authorization.k8s.io/v1: SubjectAccessReview, SelfSubjectAccessReview, LocalSubjectAccessReview and
 * SelfSubjectRulesReview, as Kubernetes 1.23 serves them (pkg/registry/authorization): create-only, never
 * stored; the answer is the server's authorizer chain asked about the review's attributes (for the caller
 * itself in the Self* kinds). Validation as pkg/apis/authorization/validation.
 */
import { apiErrors } from '../../errors.js';
import type { KObject, KindDecl, StrategyContext } from '../../kind.js';
import { ref, type Definitions, type Schema } from '../../schema.js';
import { API_VERSION_PROPERTY, KIND_PROPERTY, OBJECT_META_REF } from '../../definitions/meta.js';
import { GoLiteral, goQuote, invalid, root, type FieldError } from '../../../util/validation.js';
import { isObject } from '../configmap.js';
import type { AccessAttributes, AccessAuthorizer, AccessUser } from './attributes.js';

export const AUTHORIZATION_GROUP = 'authorization.k8s.io';
const P = 'io.k8s.api.authorization.v1.';
const N = {
  SubjectAccessReview: `${P}SubjectAccessReview`,
  SelfSubjectAccessReview: `${P}SelfSubjectAccessReview`,
  LocalSubjectAccessReview: `${P}LocalSubjectAccessReview`,
  SelfSubjectRulesReview: `${P}SelfSubjectRulesReview`,
  SubjectAccessReviewSpec: `${P}SubjectAccessReviewSpec`,
  SelfSubjectAccessReviewSpec: `${P}SelfSubjectAccessReviewSpec`,
  SelfSubjectRulesReviewSpec: `${P}SelfSubjectRulesReviewSpec`,
  SubjectAccessReviewStatus: `${P}SubjectAccessReviewStatus`,
  SubjectRulesReviewStatus: `${P}SubjectRulesReviewStatus`,
  ResourceAttributes: `${P}ResourceAttributes`,
  NonResourceAttributes: `${P}NonResourceAttributes`,
  ResourceRule: `${P}ResourceRule`,
  NonResourceRule: `${P}NonResourceRule`,
};

type Json = Record<string, any>;

const s = (description: string): Schema => ({ description, type: 'string' });
const strings = (description: string): Schema => ({ description, items: { type: 'string' }, type: 'array' });
const gvk = (kind: string) => [{ group: AUTHORIZATION_GROUP, kind, version: 'v1' }];

function review(kind: string, description: string, spec: string, specDoc: string, status: string, statusDoc: string): Schema {
  return {
    description,
    properties: {
      apiVersion: API_VERSION_PROPERTY,
      kind: KIND_PROPERTY,
      metadata: OBJECT_META_REF,
      spec: ref(spec, specDoc),
      status: ref(status, statusDoc),
    },
    required: ['spec'],
    type: 'object',
    'x-kubernetes-group-version-kind': gvk(kind),
  };
}

const SAR_STATUS_DOC = 'Status is filled in by the server and indicates whether the request is allowed or not';
const SAR_SPEC_DOC = 'Spec holds information about the request being evaluated';

export const AUTHORIZATION_DEFINITIONS: Definitions = {
  [N.ResourceAttributes]: {
    description: 'ResourceAttributes includes the authorization attributes available for resource requests to the Authorizer interface',
    properties: {
      group: s('Group is the API Group of the Resource.  "*" means all.'),
      name: s('Name is the name of the resource being requested for a "get" or deleted for a "delete". "" (empty) means all.'),
      namespace: s(
        'Namespace is the namespace of the action being requested.  Currently, there is no distinction between no namespace and all namespaces "" (empty) is defaulted for LocalSubjectAccessReviews "" (empty) is empty for cluster-scoped resources "" (empty) means "all" for namespace scoped resources from a SubjectAccessReview or SelfSubjectAccessReview',
      ),
      resource: s('Resource is one of the existing resource types.  "*" means all.'),
      subresource: s('Subresource is one of the existing resource types.  "" means none.'),
      verb: s('Verb is a kubernetes resource API verb, like: get, list, watch, create, update, delete, proxy.  "*" means all.'),
      version: s('Version is the API Version of the Resource.  "*" means all.'),
    },
    type: 'object',
  },
  [N.NonResourceAttributes]: {
    description: 'NonResourceAttributes includes the authorization attributes available for non-resource requests to the Authorizer interface',
    properties: { path: s('Path is the URL path of the request'), verb: s('Verb is the standard HTTP verb') },
    type: 'object',
  },
  [N.SubjectAccessReviewSpec]: {
    description: 'SubjectAccessReviewSpec is a description of the access request.  Exactly one of ResourceAuthorizationAttributes and NonResourceAuthorizationAttributes must be set',
    properties: {
      extra: {
        additionalProperties: { items: { type: 'string' }, type: 'array' },
        description: 'Extra corresponds to the user.Info.GetExtra() method from the authenticator.  Since that is input to the authorizer it needs a reflection here.',
        type: 'object',
      },
      groups: strings("Groups is the groups you're testing for."),
      nonResourceAttributes: ref(N.NonResourceAttributes, 'NonResourceAttributes describes information for a non-resource access request'),
      resourceAttributes: ref(N.ResourceAttributes, 'ResourceAuthorizationAttributes describes information for a resource access request'),
      uid: s('UID information about the requesting user.'),
      user: s('User is the user you\'re testing for. If you specify "User" but not "Groups", then is it interpreted as "What if User were not a member of any groups'),
    },
    type: 'object',
  },
  [N.SelfSubjectAccessReviewSpec]: {
    description:
      'SelfSubjectAccessReviewSpec is a description of the access request.  Exactly one of ResourceAuthorizationAttributes and NonResourceAuthorizationAttributes must be set',
    properties: {
      nonResourceAttributes: ref(N.NonResourceAttributes, 'NonResourceAttributes describes information for a non-resource access request'),
      resourceAttributes: ref(N.ResourceAttributes, 'ResourceAuthorizationAttributes describes information for a resource access request'),
    },
    type: 'object',
  },
  [N.SelfSubjectRulesReviewSpec]: {
    description: 'SelfSubjectRulesReviewSpec defines the specification for SelfSubjectRulesReview.',
    properties: { namespace: s('Namespace to evaluate rules for. Required.') },
    type: 'object',
  },
  [N.SubjectAccessReviewStatus]: {
    description: 'SubjectAccessReviewStatus',
    properties: {
      allowed: { description: 'Allowed is required. True if the action would be allowed, false otherwise.', type: 'boolean' },
      denied: {
        description:
          'Denied is optional. True if the action would be denied, otherwise false. If both allowed is false and denied is false, then the authorizer has no opinion on whether to authorize the action. Denied may not be true if Allowed is true.',
        type: 'boolean',
      },
      evaluationError: s(
        'EvaluationError is an indication that some error occurred during the authorization check. It is entirely possible to get an error and be able to continue determine authorization status in spite of it. For instance, RBAC can be missing a role, but enough roles are still present and bound to reason about the request.',
      ),
      reason: s('Reason is optional.  It indicates why a request was allowed or denied.'),
    },
    required: ['allowed'],
    type: 'object',
  },
  [N.ResourceRule]: {
    description:
      "ResourceRule is the list of actions the subject is allowed to perform on resources. The list ordering isn't significant, may contain duplicates, and possibly be incomplete.",
    properties: {
      apiGroups: strings(
        'APIGroups is the name of the APIGroup that contains the resources.  If multiple API groups are specified, any action requested against one of the enumerated resources in any API group will be allowed.  "*" means all.',
      ),
      resourceNames: strings('ResourceNames is an optional white list of names that the rule applies to.  An empty set means that everything is allowed.  "*" means all.'),
      resources: strings('Resources is a list of resources this rule applies to.  "*" means all in the specified apiGroups.\n "*/foo" represents the subresource \'foo\' for all resources in the specified apiGroups.'),
      verbs: strings('Verb is a list of kubernetes resource API verbs, like: get, list, watch, create, update, delete, proxy.  "*" means all.'),
    },
    required: ['verbs'],
    type: 'object',
  },
  [N.NonResourceRule]: {
    description: 'NonResourceRule holds information that describes a rule for the non-resource',
    properties: {
      nonResourceURLs: strings('NonResourceURLs is a set of partial urls that a user should have access to.  *s are allowed, but only as the full, final step in the path.  "*" means all.'),
      verbs: strings('Verb is a list of kubernetes non-resource API verbs, like: get, post, put, delete, patch, head, options.  "*" means all.'),
    },
    required: ['verbs'],
    type: 'object',
  },
  [N.SubjectRulesReviewStatus]: {
    description:
      "SubjectRulesReviewStatus contains the result of a rules check. This check can be incomplete depending on the set of authorizers the server is configured with and any errors experienced during evaluation. Because authorization rules are additive, if a rule appears in a list it's safe to assume the subject has that permission, even if that list is incomplete.",
    properties: {
      evaluationError: s(
        "EvaluationError can appear in combination with Rules. It indicates an error occurred during rule evaluation, such as an authorizer that doesn't support rule evaluation, and that ResourceRules and/or NonResourceRules may be incomplete.",
      ),
      incomplete: {
        description: "Incomplete is true when the rules returned by this call are incomplete. This is most commonly encountered when an authorizer, such as an external authorizer, doesn't support rules evaluation.",
        type: 'boolean',
      },
      nonResourceRules: {
        description: "NonResourceRules is the list of actions the subject is allowed to perform on non-resources. The list ordering isn't significant, may contain duplicates, and possibly be incomplete.",
        items: ref(N.NonResourceRule),
        type: 'array',
      },
      resourceRules: {
        description: "ResourceRules is the list of actions the subject is allowed to perform on resources. The list ordering isn't significant, may contain duplicates, and possibly be incomplete.",
        items: ref(N.ResourceRule),
        type: 'array',
      },
    },
    required: ['resourceRules', 'nonResourceRules', 'incomplete'],
    type: 'object',
  },
  [N.SubjectAccessReview]: review(
    'SubjectAccessReview',
    'SubjectAccessReview checks whether or not a user or group can perform an action.',
    N.SubjectAccessReviewSpec,
    SAR_SPEC_DOC,
    N.SubjectAccessReviewStatus,
    SAR_STATUS_DOC,
  ),
  [N.SelfSubjectAccessReview]: review(
    'SelfSubjectAccessReview',
    'SelfSubjectAccessReview checks whether or the current user can perform an action.  Not filling in a spec.namespace means "in all namespaces".  Self is a special case, because users should always be able to check whether they can perform an action',
    N.SelfSubjectAccessReviewSpec,
    'Spec holds information about the request being evaluated.  user and groups must be empty',
    N.SubjectAccessReviewStatus,
    SAR_STATUS_DOC,
  ),
  [N.LocalSubjectAccessReview]: review(
    'LocalSubjectAccessReview',
    'LocalSubjectAccessReview checks whether or not a user or group can perform an action in a given namespace. Having a namespace scoped resource makes it much easier to grant namespace scoped policy that includes permissions checking.',
    N.SubjectAccessReviewSpec,
    'Spec holds information about the request being evaluated.  spec.namespace must be equal to the namespace you made the request against.  If empty, it is defaulted.',
    N.SubjectAccessReviewStatus,
    SAR_STATUS_DOC,
  ),
  [N.SelfSubjectRulesReview]: review(
    'SelfSubjectRulesReview',
    "SelfSubjectRulesReview enumerates the set of actions the current user can perform within a namespace. The returned list of actions may be incomplete depending on the server's authorization mode, and any errors experienced during the evaluation. SelfSubjectRulesReview should be used by UIs to show/hide actions, or to quickly let an end user reason about their permissions. It should NOT Be used by external systems to drive authorization decisions as this raises confused deputy, cache lifetime/revocation, and correctness concerns. SubjectAccessReview, and LocalAccessReview are the correct way to defer authorization decisions to the API server.",
    N.SelfSubjectRulesReviewSpec,
    'Spec holds information about the request being evaluated.',
    N.SubjectRulesReviewStatus,
    'Status is filled in by the server and indicates the set of actions a user can perform.',
  ),
};

// ---- validation ----------------------------------------------------------------------------------------

const str = (v: unknown): string => (typeof v === 'string' ? v : '');
const strList = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);

/** Go's %#v of the *NonResourceAttributes in an error (nil when absent). */
function nonResourceLiteral(v: unknown): GoLiteral {
  if (!isObject(v)) return new GoLiteral('(*authorization.NonResourceAttributes)(nil)');
  return new GoLiteral(`&authorization.NonResourceAttributes{Path:${goQuote(str(v['path']))}, Verb:${goQuote(str(v['verb']))}}`);
}

function validateAttributesChoice(spec: Json): FieldError[] {
  const errs: FieldError[] = [];
  const hasResource = isObject(spec['resourceAttributes']);
  const hasNonResource = isObject(spec['nonResourceAttributes']);
  if (hasResource && hasNonResource) {
    errs.push(invalid(root('spec', 'nonResourceAttributes'), nonResourceLiteral(spec['nonResourceAttributes']), 'cannot be specified in combination with resourceAttributes'));
  }
  if (!hasResource && !hasNonResource) {
    errs.push(invalid(root('spec', 'resourceAttributes'), nonResourceLiteral(undefined), 'exactly one of nonResourceAttributes or resourceAttributes must be specified'));
  }
  return errs;
}

function validateSubjectSpec(spec: Json): FieldError[] {
  const errs = validateAttributesChoice(spec);
  if (str(spec['user']) === '' && strList(spec['groups']).length === 0) {
    errs.push(invalid(root('spec', 'user'), str(spec['user']), 'at least one of user or group must be specified'));
  }
  return errs;
}

/** Whether metadata is empty (managedFields, a null creationTimestamp and `allowNamespace` aside). */
function metadataEmpty(meta: unknown, allowNamespace: boolean): boolean {
  if (!isObject(meta)) return true;
  return Object.entries(meta).every(([k, v]) => {
    if (k === 'managedFields' || (allowNamespace && k === 'namespace')) return true;
    if (v === null || v === '' || v === 0) return true;
    if (Array.isArray(v) || isObject(v)) return Object.keys(v).length === 0;
    return false;
  });
}

function metadataLiteral(meta: unknown): GoLiteral {
  const m: Json = isObject(meta) ? meta : {};
  return new GoLiteral(`v1.ObjectMeta{Name:${goQuote(str(m['name']))}, GenerateName:${goQuote(str(m['generateName']))}, Namespace:${goQuote(str(m['namespace']))}, ...}`);
}

// ---- evaluation ----------------------------------------------------------------------------------------

/** authorizationutil.ResourceAttributesFrom / NonResourceAttributesFrom. */
function attributesFrom(spec: Json): AccessAttributes {
  const r = spec['resourceAttributes'];
  if (isObject(r)) {
    return {
      isResourceRequest: true,
      path: '',
      verb: str(r['verb']),
      namespace: str(r['namespace']),
      apiGroup: str(r['group']),
      apiVersion: str(r['version']) || '*',
      resource: str(r['resource']),
      subresource: str(r['subresource']),
      name: str(r['name']),
    };
  }
  const n: Json = isObject(spec['nonResourceAttributes']) ? spec['nonResourceAttributes'] : {};
  return { isResourceRequest: false, path: str(n['path']), verb: str(n['verb']), namespace: '', apiGroup: '', apiVersion: '', resource: '', subresource: '', name: '' };
}

function authorizerOf(ctx: StrategyContext): AccessAuthorizer {
  const a = ctx.settings?.authorizer;
  if (!a) throw apiErrors.internal('no authorizer is configured');
  return a;
}

function requestUser(ctx: StrategyContext): AccessUser {
  if (!ctx.user) throw apiErrors.badRequest('no user present on request');
  return ctx.user;
}

function invalidReview(kind: string, errs: FieldError[]): never {
  throw apiErrors.invalid(AUTHORIZATION_GROUP, kind, '', errs);
}

async function accessStatus(authorizer: AccessAuthorizer, user: AccessUser, spec: Json): Promise<Json> {
  const { decision, reason, error } = await authorizer.authorize(user, attributesFrom(spec));
  return {
    allowed: decision === 'allow',
    ...(decision === 'deny' ? { denied: true } : {}),
    ...(reason ? { reason } : {}),
    ...(error ? { evaluationError: error } : {}),
  };
}

function answer(obj: KObject, status: Json, spec?: Json): KObject {
  return {
    kind: obj.kind,
    apiVersion: obj.apiVersion,
    metadata: { ...(isObject(obj.metadata) ? obj.metadata : {}), creationTimestamp: null },
    spec: spec ?? (isObject(obj['spec']) ? obj['spec'] : {}),
    status,
  };
}

async function subjectAccessReview(obj: KObject, ctx: StrategyContext): Promise<KObject> {
  const spec: Json = isObject(obj['spec']) ? obj['spec'] : {};
  const errs = validateSubjectSpec(spec);
  if (!metadataEmpty(obj.metadata, false)) errs.push(invalid(root('metadata'), metadataLiteral(obj.metadata), 'must be empty'));
  if (errs.length > 0) invalidReview('SubjectAccessReview', errs);
  const user: AccessUser = {
    name: str(spec['user']),
    groups: strList(spec['groups']),
    ...(str(spec['uid']) ? { uid: str(spec['uid']) } : {}),
    ...(isObject(spec['extra']) ? { extra: spec['extra'] } : {}),
  };
  return answer(obj, await accessStatus(authorizerOf(ctx), user, spec));
}

async function localSubjectAccessReview(obj: KObject, ctx: StrategyContext): Promise<KObject> {
  const spec: Json = isObject(obj['spec']) ? obj['spec'] : {};
  const metaNamespace = str(obj.metadata?.namespace);
  const errs = validateSubjectSpec(spec);
  if (!metadataEmpty(obj.metadata, true)) errs.push(invalid(root('metadata'), metadataLiteral(obj.metadata), 'must be empty except for namespace'));
  const r = spec['resourceAttributes'];
  if (isObject(r) && str(r['namespace']) !== metaNamespace) {
    errs.push(invalid(root('spec.resourceAttributes.namespace'), str(r['namespace']), 'must match metadata.namespace'));
  }
  if (isObject(spec['nonResourceAttributes'])) {
    errs.push(invalid(root('spec.nonResourceAttributes'), nonResourceLiteral(spec['nonResourceAttributes']), 'disallowed on this kind of request'));
  }
  if (errs.length > 0) invalidReview('LocalSubjectAccessReview', errs);
  if (ctx.namespace === '') throw apiErrors.badRequest(`namespace is required on this type: ${ctx.namespace}`);
  if (ctx.namespace !== metaNamespace) throw apiErrors.badRequest(`spec.resourceAttributes.namespace must match namespace: ${ctx.namespace}`);
  const user: AccessUser = { name: str(spec['user']), groups: strList(spec['groups']), ...(str(spec['uid']) ? { uid: str(spec['uid']) } : {}) };
  return answer(obj, await accessStatus(authorizerOf(ctx), user, spec));
}

async function selfSubjectAccessReview(obj: KObject, ctx: StrategyContext): Promise<KObject> {
  const spec: Json = isObject(obj['spec']) ? obj['spec'] : {};
  const errs = validateAttributesChoice(spec);
  if (!metadataEmpty(obj.metadata, false)) errs.push(invalid(root('metadata'), metadataLiteral(obj.metadata), 'must be empty'));
  if (errs.length > 0) invalidReview('SelfSubjectAccessReview', errs);
  return answer(obj, await accessStatus(authorizerOf(ctx), requestUser(ctx), spec));
}

async function selfSubjectRulesReview(obj: KObject, ctx: StrategyContext): Promise<KObject> {
  const user = requestUser(ctx);
  const namespace = str(obj['spec']?.namespace);
  if (namespace === '') throw apiErrors.badRequest('no namespace on request');
  const authorizer = authorizerOf(ctx);
  const rules = authorizer.rulesFor
    ? await authorizer.rulesFor(user, namespace)
    : { resourceRules: [], nonResourceRules: [], incomplete: true, error: undefined };
  const status: Json = {
    resourceRules: rules.resourceRules.map((r) => ({
      verbs: r.verbs,
      ...(r.apiGroups.length ? { apiGroups: r.apiGroups } : {}),
      ...(r.resources.length ? { resources: r.resources } : {}),
      ...(r.resourceNames.length ? { resourceNames: r.resourceNames } : {}),
    })),
    nonResourceRules: rules.nonResourceRules.map((r) => ({ verbs: r.verbs, ...(r.nonResourceURLs.length ? { nonResourceURLs: r.nonResourceURLs } : {}) })),
    incomplete: rules.incomplete,
    ...(rules.error ? { evaluationError: rules.error } : {}),
  };
  return answer(obj, status, {});
}

// ---- the kinds -----------------------------------------------------------------------------------------

function reviewKind(kind: string, resource: string, namespaced: boolean, compute: KindDecl['compute']): KindDecl {
  return {
    group: AUTHORIZATION_GROUP,
    version: 'v1',
    kind,
    listKind: `${kind}List`,
    resource,
    singular: kind.toLowerCase(),
    namespaced,
    definition: N[kind as keyof typeof N],
    listDefinition: N[kind as keyof typeof N],
    definitions: AUTHORIZATION_DEFINITIONS,
    verbs: ['create'],
    tracksGeneration: false,
    compute,
    strategy: { validate: () => [], validateUpdate: () => [] },
  };
}

export const subjectAccessReviewKind = reviewKind('SubjectAccessReview', 'subjectaccessreviews', false, subjectAccessReview);
export const selfSubjectAccessReviewKind = reviewKind('SelfSubjectAccessReview', 'selfsubjectaccessreviews', false, selfSubjectAccessReview);
export const localSubjectAccessReviewKind = reviewKind('LocalSubjectAccessReview', 'localsubjectaccessreviews', true, localSubjectAccessReview);
export const selfSubjectRulesReviewKind = reviewKind('SelfSubjectRulesReview', 'selfsubjectrulesreviews', false, selfSubjectRulesReview);

export const AUTHORIZATION_KINDS: KindDecl[] = [
  localSubjectAccessReviewKind,
  selfSubjectAccessReviewKind,
  selfSubjectRulesReviewKind,
  subjectAccessReviewKind,
];
