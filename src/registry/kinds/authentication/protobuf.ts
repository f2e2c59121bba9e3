/**
 * Protobuf descriptors of authentication.k8s.io/v1 TokenRequest (k8s.io/api/authentication/v1/generated.proto,
 * Kubernetes 1.23), in the form src/registry/protobuf.ts reads: kubectl posts serviceaccounts/token in
 * protobuf. TokenReview is served as JSON only (UserInfo.extra, a map of ExtraValue lists, has no codec).
 */
import type { MessageDescriptor } from '../../protobuf.js';

const f = (no: number, json: string, type: string, presence: 'omitempty' | 'always' | 'pointer', repeated = false) =>
  repeated ? { no, json, type, presence, repeated } : { no, json, type, presence };
const A = 'authentication.v1.';

export const AUTHENTICATION_PROTOBUF_MESSAGES: MessageDescriptor[] = [
  {
    name: `${A}BoundObjectReference`,
    fields: [f(1, 'kind', 'string', 'omitempty'), f(2, 'apiVersion', 'string', 'omitempty'), f(3, 'name', 'string', 'omitempty'), f(4, 'uid', 'string', 'omitempty')],
  },
  {
    name: `${A}TokenRequestSpec`,
    fields: [f(1, 'audiences', 'string', 'always', true), f(4, 'expirationSeconds', 'int64', 'pointer'), f(3, 'boundObjectRef', `${A}BoundObjectReference`, 'pointer')],
  },
  { name: `${A}TokenRequestStatus`, fields: [f(1, 'token', 'string', 'always'), f(2, 'expirationTimestamp', 'meta.v1.Time', 'always')] },
  {
    name: `${A}TokenRequest`,
    fields: [f(1, 'metadata', 'meta.v1.ObjectMeta', 'omitempty'), f(2, 'spec', `${A}TokenRequestSpec`, 'always'), f(3, 'status', `${A}TokenRequestStatus`, 'omitempty')],
  },
];

export const AUTHENTICATION_PROTOBUF_KINDS = {
  TokenRequest: { message: `${A}TokenRequest`, apiVersions: ['authentication.k8s.io/v1'] },
} as const;
