/**
 * Protobuf descriptors of authorization.k8s.io/v1 (k8s.io/api/authorization/v1/generated.proto, Kubernetes
 * 1.23), in the form src/registry/protobuf.ts reads. SubjectAccessReviewSpec.extra (a map of ExtraValue
 * lists) is not described: it is skipped on decode, as an unknown field.
 */
import type { MessageDescriptor } from '../../protobuf.js';

const f = (no: number, json: string, type: string, presence: 'omitempty' | 'always' | 'pointer', repeated = false) =>
  repeated ? { no, json, type, presence, repeated } : { no, json, type, presence };
const META = 'meta.v1.ObjectMeta';
const A = 'authorization.v1.';

function review(kind: string, spec: string, status: string): MessageDescriptor {
  return { name: `${A}${kind}`, fields: [f(1, 'metadata', META, 'omitempty'), f(2, 'spec', `${A}${spec}`, 'always'), f(3, 'status', `${A}${status}`, 'omitempty')] };
}

export const AUTHORIZATION_PROTOBUF_MESSAGES: MessageDescriptor[] = [
  {
    name: `${A}ResourceAttributes`,
    fields: ['namespace', 'verb', 'group', 'version', 'resource', 'subresource', 'name'].map((n, i) => f(i + 1, n, 'string', 'omitempty')),
  },
  { name: `${A}NonResourceAttributes`, fields: [f(1, 'path', 'string', 'omitempty'), f(2, 'verb', 'string', 'omitempty')] },
  {
    name: `${A}SubjectAccessReviewSpec`,
    fields: [
      f(1, 'resourceAttributes', `${A}ResourceAttributes`, 'pointer'),
      f(2, 'nonResourceAttributes', `${A}NonResourceAttributes`, 'pointer'),
      f(3, 'user', 'string', 'omitempty'),
      f(4, 'groups', 'string', 'omitempty', true),
      f(6, 'uid', 'string', 'omitempty'),
    ],
  },
  {
    name: `${A}SelfSubjectAccessReviewSpec`,
    fields: [f(1, 'resourceAttributes', `${A}ResourceAttributes`, 'pointer'), f(2, 'nonResourceAttributes', `${A}NonResourceAttributes`, 'pointer')],
  },
  { name: `${A}SelfSubjectRulesReviewSpec`, fields: [f(1, 'namespace', 'string', 'omitempty')] },
  {
    name: `${A}SubjectAccessReviewStatus`,
    fields: [f(1, 'allowed', 'bool', 'always'), f(2, 'reason', 'string', 'omitempty'), f(3, 'evaluationError', 'string', 'omitempty'), f(4, 'denied', 'bool', 'omitempty')],
  },
  {
    name: `${A}ResourceRule`,
    fields: [f(1, 'verbs', 'string', 'always', true), f(2, 'apiGroups', 'string', 'omitempty', true), f(3, 'resources', 'string', 'omitempty', true), f(4, 'resourceNames', 'string', 'omitempty', true)],
  },
  { name: `${A}NonResourceRule`, fields: [f(1, 'verbs', 'string', 'always', true), f(2, 'nonResourceURLs', 'string', 'omitempty', true)] },
  {
    name: `${A}SubjectRulesReviewStatus`,
    fields: [
      f(1, 'resourceRules', `${A}ResourceRule`, 'always', true),
      f(2, 'nonResourceRules', `${A}NonResourceRule`, 'always', true),
      f(3, 'incomplete', 'bool', 'always'),
      f(4, 'evaluationError', 'string', 'omitempty'),
    ],
  },
  review('SubjectAccessReview', 'SubjectAccessReviewSpec', 'SubjectAccessReviewStatus'),
  review('LocalSubjectAccessReview', 'SubjectAccessReviewSpec', 'SubjectAccessReviewStatus'),
  review('SelfSubjectAccessReview', 'SelfSubjectAccessReviewSpec', 'SubjectAccessReviewStatus'),
  review('SelfSubjectRulesReview', 'SelfSubjectRulesReviewSpec', 'SubjectRulesReviewStatus'),
];

const AUTHORIZATION_V1 = ['authorization.k8s.io/v1'];

export const AUTHORIZATION_PROTOBUF_KINDS: Record<string, { message: string; apiVersions: readonly string[] | null }> = Object.fromEntries(
  ['SubjectAccessReview', 'LocalSubjectAccessReview', 'SelfSubjectAccessReview', 'SelfSubjectRulesReview'].map((k) => [
    k,
    { message: `${A}${k}`, apiVersions: AUTHORIZATION_V1 },
  ]),
);
