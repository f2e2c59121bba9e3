/**
 * Protobuf descriptors of rbac.authorization.k8s.io/v1 (k8s.io/api/rbac/v1/generated.proto, Kubernetes 1.23),
 * in the form src/registry/protobuf.ts reads; presence follows the Go fields' JSON tags. Plain data (no
 * imports of the codec, which includes these lists).
 */
import type { MessageDescriptor } from '../../protobuf.js';

const f = (no: number, json: string, type: string, presence: 'omitempty' | 'always' | 'pointer', repeated = false) =>
  repeated ? { no, json, type, presence, repeated } : { no, json, type, presence };

const META = 'meta.v1.ObjectMeta';
const LIST_META = 'meta.v1.ListMeta';

export const RBAC_PROTOBUF_MESSAGES: MessageDescriptor[] = [
  {
    name: 'rbac.v1.PolicyRule',
    fields: [
      f(1, 'verbs', 'string', 'always', true),
      f(2, 'apiGroups', 'string', 'omitempty', true),
      f(3, 'resources', 'string', 'omitempty', true),
      f(4, 'resourceNames', 'string', 'omitempty', true),
      f(5, 'nonResourceURLs', 'string', 'omitempty', true),
    ],
  },
  { name: 'rbac.v1.AggregationRule', fields: [f(1, 'clusterRoleSelectors', 'meta.v1.LabelSelector', 'omitempty', true)] },
  { name: 'rbac.v1.RoleRef', fields: [f(1, 'apiGroup', 'string', 'always'), f(2, 'kind', 'string', 'always'), f(3, 'name', 'string', 'always')] },
  {
    name: 'rbac.v1.Subject',
    fields: [f(1, 'kind', 'string', 'always'), f(2, 'apiGroup', 'string', 'omitempty'), f(3, 'name', 'string', 'always'), f(4, 'namespace', 'string', 'omitempty')],
  },
  { name: 'rbac.v1.Role', fields: [f(1, 'metadata', META, 'omitempty'), f(2, 'rules', 'rbac.v1.PolicyRule', 'always', true)] },
  {
    name: 'rbac.v1.ClusterRole',
    fields: [f(1, 'metadata', META, 'omitempty'), f(2, 'rules', 'rbac.v1.PolicyRule', 'always', true), f(3, 'aggregationRule', 'rbac.v1.AggregationRule', 'pointer')],
  },
  {
    name: 'rbac.v1.RoleBinding',
    fields: [f(1, 'metadata', META, 'omitempty'), f(2, 'subjects', 'rbac.v1.Subject', 'omitempty', true), f(3, 'roleRef', 'rbac.v1.RoleRef', 'always')],
  },
  {
    name: 'rbac.v1.ClusterRoleBinding',
    fields: [f(1, 'metadata', META, 'omitempty'), f(2, 'subjects', 'rbac.v1.Subject', 'omitempty', true), f(3, 'roleRef', 'rbac.v1.RoleRef', 'always')],
  },
  ...['Role', 'ClusterRole', 'RoleBinding', 'ClusterRoleBinding'].map((k) => ({
    name: `rbac.v1.${k}List`,
    fields: [f(1, 'metadata', LIST_META, 'omitempty'), f(2, 'items', `rbac.v1.${k}`, 'always', true)],
  })),
];

const RBAC_V1 = ['rbac.authorization.k8s.io/v1'];

export const RBAC_PROTOBUF_KINDS: Record<string, { message: string; apiVersions: readonly string[] | null }> = Object.fromEntries(
  ['Role', 'ClusterRole', 'RoleBinding', 'ClusterRoleBinding'].flatMap((k) => [
    [k, { message: `rbac.v1.${k}`, apiVersions: RBAC_V1 }],
    [`${k}List`, { message: `rbac.v1.${k}List`, apiVersions: RBAC_V1 }],
  ]),
);
