/**
 * Kubernetes 1.23's bootstrap RBAC policy (plugin/pkg/auth/authorizer/rbac/bootstrappolicy): the cluster roles
 * and bindings every cluster starts with, reconciled at start by the server (src/server/bootstrap-policy.ts),
 * and the static rules of the Node authorizer. Rules may name resources orch does not serve yet.
 */
import type { KObject } from '../../kind.js';
import type { PolicyRule } from './rules.js';

const RBAC_GROUP = 'rbac.authorization.k8s.io';
const API_VERSION = `${RBAC_GROUP}/v1`;
export const AUTOUPDATE_ANNOTATION = 'rbac.authorization.kubernetes.io/autoupdate';
const BOOTSTRAP_LABELS = { 'kubernetes.io/bootstrapping': 'rbac-defaults' };
export const AGGREGATE_TO_ADMIN = 'rbac.authorization.k8s.io/aggregate-to-admin';
export const AGGREGATE_TO_EDIT = 'rbac.authorization.k8s.io/aggregate-to-edit';
export const AGGREGATE_TO_VIEW = 'rbac.authorization.k8s.io/aggregate-to-view';

const READ = ['get', 'list', 'watch'];
const READ_WRITE = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete', 'deletecollection'];
const WRITE = ['create', 'delete', 'deletecollection', 'patch', 'update'];

/** A resource rule; `names` restricts it to those objects. */
function rule(verbs: string[], groups: string[], resources: string[], names?: string[]): PolicyRule {
  return { verbs, apiGroups: groups, resources, ...(names ? { resourceNames: names } : {}) };
}
const urls = (verbs: string[], list: string[]): PolicyRule => ({ verbs, nonResourceURLs: list });
const core = (verbs: string[], ...resources: string[]) => rule(verbs, [''], resources);
const events = () => rule(['create', 'update', 'patch'], ['', 'events.k8s.io'], ['events']);

/** bootstrappolicy.NodeRules(): what every node may do, before the Node authorizer's own checks. */
export const NODE_RULES: PolicyRule[] = [
  rule(['create'], ['authentication.k8s.io'], ['tokenreviews']),
  rule(['create'], ['authorization.k8s.io'], ['subjectaccessreviews', 'localsubjectaccessreviews']),
  core(READ, 'services'),
  core(['create', 'get', 'list', 'watch'], 'nodes'),
  core(['update', 'patch'], 'nodes/status'),
  core(['update', 'patch'], 'nodes'),
  core(['create', 'update', 'patch'], 'events'),
  core(READ, 'pods'),
  core(['create', 'delete'], 'pods'),
  core(['update', 'patch'], 'pods/status'),
  core(['create'], 'pods/eviction'),
  core(['get', 'list', 'watch'], 'secrets', 'configmaps'),
  core(['get'], 'persistentvolumeclaims', 'persistentvolumes'),
  core(['get'], 'endpoints'),
  rule(['create', 'get', 'list', 'watch'], ['certificates.k8s.io'], ['certificatesigningrequests']),
  rule(['get', 'create', 'update', 'patch', 'delete'], ['coordination.k8s.io'], ['leases']),
  rule(['get'], ['storage.k8s.io'], ['volumeattachments']),
  core(['create'], 'serviceaccounts/token'),
  core(['get', 'update', 'patch'], 'persistentvolumeclaims/status'),
  rule(['get', 'watch', 'list'], ['storage.k8s.io'], ['csidrivers']),
  rule(['get', 'create', 'update', 'patch', 'delete'], ['storage.k8s.io'], ['csinodes']),
  rule(READ, ['node.k8s.io'], ['runtimeclasses']),
];

function clusterRole(name: string, rules: PolicyRule[] | null, extra: { labels?: Record<string, string>; aggregateFrom?: string } = {}): KObject {
  return {
    apiVersion: API_VERSION,
    kind: 'ClusterRole',
    metadata: { name, labels: { ...BOOTSTRAP_LABELS, ...(extra.labels ?? {}) }, annotations: { [AUTOUPDATE_ANNOTATION]: 'true' } },
    ...(extra.aggregateFrom ? { aggregationRule: { clusterRoleSelectors: [{ matchLabels: { [extra.aggregateFrom]: 'true' } }] } } : {}),
    ...(rules ? { rules } : {}),
  };
}

type SubjectSpec = { kind: 'User' | 'Group'; name: string } | { kind: 'ServiceAccount'; name: string; namespace: string };

function clusterRoleBinding(name: string, role: string, subjects: SubjectSpec[]): KObject {
  return {
    apiVersion: API_VERSION,
    kind: 'ClusterRoleBinding',
    metadata: { name, labels: { ...BOOTSTRAP_LABELS }, annotations: { [AUTOUPDATE_ANNOTATION]: 'true' } },
    roleRef: { apiGroup: RBAC_GROUP, kind: 'ClusterRole', name: role },
    ...(subjects.length > 0
      ? { subjects: subjects.map((s) => (s.kind === 'ServiceAccount' ? { kind: s.kind, name: s.name, namespace: s.namespace } : { apiGroup: RBAC_GROUP, ...s })) }
      : {}),
  };
}

const group = (name: string): SubjectSpec => ({ kind: 'Group', name });
const user = (name: string): SubjectSpec => ({ kind: 'User', name });
const sa = (name: string, namespace = 'kube-system'): SubjectSpec => ({ kind: 'ServiceAccount', name, namespace });

/** Controllers orch runs in-process, with their roles (controller_policy.go). */
const CONTROLLER_ROLES: Record<string, PolicyRule[]> = {
  'clusterrole-aggregation-controller': [rule(['escalate', 'get', 'list', 'watch'], [RBAC_GROUP], ['clusterroles']), rule(['update'], [RBAC_GROUP], ['clusterroles'])],
  'generic-garbage-collector': [rule(['get', 'list', 'watch', 'patch', 'update', 'delete'], ['*'], ['*'])],
  'namespace-controller': [rule(['get', 'list', 'delete', 'deletecollection'], ['*'], ['*']), core(['update'], 'namespaces/finalize', 'namespaces/status')],
  'pvc-protection-controller': [core(['get', 'list', 'watch', 'update'], 'persistentvolumeclaims'), core(['list', 'watch', 'get'], 'pods'), events()],
};

const VIEW_RULES: PolicyRule[] = [
  core(READ, 'pods', 'replicationcontrollers', 'replicationcontrollers/scale', 'serviceaccounts', 'services', 'services/status', 'endpoints', 'persistentvolumeclaims', 'persistentvolumeclaims/status', 'configmaps'),
  core(READ, 'limitranges', 'resourcequotas', 'bindings', 'events', 'pods/status', 'resourcequotas/status', 'namespaces/status', 'replicationcontrollers/status', 'pods/log'),
  core(READ, 'namespaces'),
  rule(READ, ['discovery.k8s.io'], ['endpointslices']),
  rule(READ, ['apps'], ['controllerrevisions', 'statefulsets', 'statefulsets/scale', 'statefulsets/status', 'daemonsets', 'daemonsets/status', 'deployments', 'deployments/scale', 'deployments/status', 'replicasets', 'replicasets/scale', 'replicasets/status']),
  rule(READ, ['autoscaling'], ['horizontalpodautoscalers', 'horizontalpodautoscalers/status']),
  rule(READ, ['batch'], ['jobs', 'cronjobs', 'cronjobs/status', 'jobs/status']),
  rule(READ, ['extensions'], ['daemonsets', 'daemonsets/status', 'deployments', 'deployments/scale', 'deployments/status', 'ingresses', 'ingresses/status', 'replicasets', 'replicasets/scale', 'replicasets/status', 'replicationcontrollers/scale', 'networkpolicies']),
  rule(READ, ['policy'], ['poddisruptionbudgets', 'poddisruptionbudgets/status']),
  rule(READ, ['networking.k8s.io'], ['networkpolicies', 'ingresses', 'ingresses/status']),
];

const EDIT_RULES: PolicyRule[] = [
  core(READ, 'pods/attach', 'pods/proxy', 'pods/exec', 'pods/portforward', 'secrets', 'services/proxy'),
  core(['impersonate'], 'serviceaccounts'),
  core(WRITE, 'pods', 'pods/attach', 'pods/proxy', 'pods/exec', 'pods/portforward'),
  core(['create'], 'pods/eviction'),
  core(WRITE, 'replicationcontrollers', 'replicationcontrollers/scale', 'serviceaccounts', 'services', 'services/proxy', 'persistentvolumeclaims', 'configmaps', 'secrets', 'events'),
  core(['create'], 'serviceaccounts/token'),
  rule(WRITE, ['apps'], ['statefulsets', 'statefulsets/scale', 'daemonsets', 'deployments', 'deployments/scale', 'deployments/rollback', 'replicasets', 'replicasets/scale']),
  rule(WRITE, ['autoscaling'], ['horizontalpodautoscalers']),
  rule(WRITE, ['batch'], ['jobs', 'cronjobs']),
  rule(WRITE, ['extensions'], ['daemonsets', 'deployments', 'deployments/scale', 'deployments/rollback', 'ingresses', 'replicasets', 'replicasets/scale', 'replicationcontrollers/scale', 'networkpolicies']),
  rule(WRITE, ['policy'], ['poddisruptionbudgets']),
  rule(WRITE, ['networking.k8s.io'], ['networkpolicies', 'ingresses']),
  rule(READ_WRITE, ['coordination.k8s.io'], ['leases']),
];

const ADMIN_RULES: PolicyRule[] = [
  rule(['create'], ['authorization.k8s.io'], ['localsubjectaccessreviews']),
  rule(READ_WRITE, [RBAC_GROUP], ['roles', 'rolebindings']),
];

const SCHEDULER_RULES: PolicyRule[] = [
  events(),
  rule(['create'], ['coordination.k8s.io'], ['leases']),
  rule(['get', 'update'], ['coordination.k8s.io'], ['leases'], ['kube-scheduler']),
  core(READ, 'nodes'),
  core(['get', 'list', 'watch', 'delete'], 'pods'),
  core(['create'], 'bindings', 'pods/binding'),
  core(['patch', 'update'], 'pods/status'),
  core(READ, 'replicationcontrollers', 'services'),
  rule(READ, ['apps', 'extensions'], ['replicasets']),
  rule(READ, ['apps'], ['statefulsets']),
  rule(READ, ['policy'], ['poddisruptionbudgets']),
  core(READ, 'persistentvolumeclaims', 'persistentvolumes'),
  rule(['create'], ['authentication.k8s.io'], ['tokenreviews']),
  rule(['create'], ['authorization.k8s.io'], ['subjectaccessreviews']),
  rule(READ, ['storage.k8s.io'], ['csinodes']),
  core(READ, 'namespaces'),
  rule(READ, ['storage.k8s.io'], ['csidrivers']),
  rule(READ, ['storage.k8s.io'], ['csistoragecapacities']),
];

const CONTROLLER_MANAGER_RULES: PolicyRule[] = [
  events(),
  rule(['create'], ['coordination.k8s.io'], ['leases']),
  rule(['get', 'update'], ['coordination.k8s.io'], ['leases'], ['kube-controller-manager']),
  core(['create'], 'secrets', 'serviceaccounts'),
  core(['delete'], 'secrets'),
  core(['get'], 'configmaps', 'namespaces', 'secrets', 'serviceaccounts'),
  core(['update'], 'secrets', 'serviceaccounts'),
  rule(['create'], ['authentication.k8s.io'], ['tokenreviews']),
  rule(['create'], ['authorization.k8s.io'], ['subjectaccessreviews']),
  rule(['list', 'watch'], ['*'], ['*']),
  core(['create'], 'serviceaccounts/token'),
];

/** ClusterRoles(): the cluster roles of the bootstrap policy, in Kubernetes' order. */
export function bootstrapClusterRoles(): KObject[] {
  return [
    clusterRole('cluster-admin', [rule(['*'], ['*'], ['*']), urls(['*'], ['*'])]),
    clusterRole('system:discovery', [urls(['get'], ['/healthz', '/livez', '/readyz', '/version', '/version/', '/openapi', '/openapi/*', '/api', '/api/*', '/apis', '/apis/*'])]),
    clusterRole('system:monitoring', [urls(['get'], ['/metrics', '/livez', '/readyz', '/healthz', '/livez/*', '/readyz/*', '/healthz/*'])]),
    clusterRole('system:basic-user', [rule(['create'], ['authorization.k8s.io'], ['selfsubjectaccessreviews', 'selfsubjectrulesreviews'])]),
    clusterRole('system:public-info-viewer', [urls(['get'], ['/healthz', '/livez', '/readyz', '/version', '/version/'])]),
    clusterRole('admin', null, { aggregateFrom: AGGREGATE_TO_ADMIN }),
    clusterRole('edit', null, { aggregateFrom: AGGREGATE_TO_EDIT, labels: { [AGGREGATE_TO_ADMIN]: 'true' } }),
    clusterRole('view', null, { aggregateFrom: AGGREGATE_TO_VIEW, labels: { [AGGREGATE_TO_EDIT]: 'true' } }),
    clusterRole('system:aggregate-to-admin', ADMIN_RULES, { labels: { [AGGREGATE_TO_ADMIN]: 'true' } }),
    clusterRole('system:aggregate-to-edit', EDIT_RULES, { labels: { [AGGREGATE_TO_EDIT]: 'true' } }),
    clusterRole('system:aggregate-to-view', VIEW_RULES, { labels: { [AGGREGATE_TO_VIEW]: 'true' } }),
    clusterRole('system:node', NODE_RULES),
    clusterRole('system:node-proxier', [
      core(['list', 'watch'], 'services', 'endpoints'),
      core(READ, 'nodes'),
      events(),
      rule(['list', 'watch'], ['discovery.k8s.io'], ['endpointslices']),
    ]),
    clusterRole('system:node-bootstrapper', [rule(['create', 'get', 'list', 'watch'], ['certificates.k8s.io'], ['certificatesigningrequests'])]),
    clusterRole('system:auth-delegator', [rule(['create'], ['authentication.k8s.io'], ['tokenreviews']), rule(['create'], ['authorization.k8s.io'], ['subjectaccessreviews'])]),
    clusterRole('system:kube-controller-manager', CONTROLLER_MANAGER_RULES),
    clusterRole('system:kube-scheduler', SCHEDULER_RULES),
    clusterRole('system:volume-scheduler', [
      core(['get', 'list', 'watch', 'update', 'patch'], 'persistentvolumes'),
      rule(READ, ['storage.k8s.io'], ['storageclasses']),
      core(['get', 'list', 'watch', 'update', 'patch'], 'persistentvolumeclaims'),
    ]),
    clusterRole('system:service-account-issuer-discovery', [urls(['get'], ['/.well-known/openid-configuration', '/openid/v1/jwks'])]),
    clusterRole('system:heapster', [core(READ, 'events', 'pods', 'nodes', 'namespaces'), rule(READ, ['extensions'], ['deployments'])]),
    clusterRole('system:kube-aggregator', [core(READ, 'endpoints', 'services')]),
    clusterRole('system:kube-dns', [core(['list', 'watch'], 'endpoints', 'services')]),
    clusterRole('system:kubelet-api-admin', [core(READ, 'nodes'), core(['proxy'], 'nodes'), core(['*'], 'nodes/proxy', 'nodes/metrics', 'nodes/stats', 'nodes/log')]),
    clusterRole('system:node-problem-detector', [core(['get'], 'nodes'), core(['patch'], 'nodes/status'), events()]),
    clusterRole('system:persistent-volume-provisioner', [
      core(['get', 'list', 'watch', 'create', 'delete'], 'persistentvolumes'),
      core(['get', 'list', 'watch', 'update'], 'persistentvolumeclaims'),
      rule(READ, ['storage.k8s.io'], ['storageclasses']),
      core(['watch'], 'events'),
      events(),
    ]),
    clusterRole('system:certificates.k8s.io:certificatesigningrequests:nodeclient', [rule(['create'], ['certificates.k8s.io'], ['certificatesigningrequests/nodeclient'])]),
    clusterRole('system:certificates.k8s.io:certificatesigningrequests:selfnodeclient', [rule(['create'], ['certificates.k8s.io'], ['certificatesigningrequests/selfnodeclient'])]),
    ...['kube-apiserver-client', 'kube-apiserver-client-kubelet', 'kubelet-serving', 'legacy-unknown'].map((signer) =>
      clusterRole(`system:certificates.k8s.io:${signer}-approver`, [rule(['approve'], ['certificates.k8s.io'], ['signers'], [`kubernetes.io/${signer}`])]),
    ),
    ...Object.entries(CONTROLLER_ROLES).map(([name, rules]) => clusterRole(`system:controller:${name}`, rules)),
  ];
}

/** ClusterRoleBindings(): the bootstrap bindings. system:node has no subjects (the Node authorizer decides). */
export function bootstrapClusterRoleBindings(): KObject[] {
  return [
    clusterRoleBinding('cluster-admin', 'cluster-admin', [group('system:masters')]),
    clusterRoleBinding('system:monitoring', 'system:monitoring', [group('system:monitoring')]),
    clusterRoleBinding('system:discovery', 'system:discovery', [group('system:authenticated')]),
    clusterRoleBinding('system:basic-user', 'system:basic-user', [group('system:authenticated')]),
    clusterRoleBinding('system:public-info-viewer', 'system:public-info-viewer', [group('system:authenticated'), group('system:unauthenticated')]),
    clusterRoleBinding('system:node-proxier', 'system:node-proxier', [user('system:kube-proxy')]),
    clusterRoleBinding('system:kube-controller-manager', 'system:kube-controller-manager', [user('system:kube-controller-manager')]),
    clusterRoleBinding('system:kube-scheduler', 'system:kube-scheduler', [user('system:kube-scheduler')]),
    clusterRoleBinding('system:volume-scheduler', 'system:volume-scheduler', [user('system:kube-scheduler')]),
    clusterRoleBinding('system:node', 'system:node', []),
    clusterRoleBinding('system:service-account-issuer-discovery', 'system:service-account-issuer-discovery', [group('system:serviceaccounts')]),
    clusterRoleBinding('system:kube-dns', 'system:kube-dns', [sa('kube-dns')]),
    ...Object.keys(CONTROLLER_ROLES).map((name) => clusterRoleBinding(`system:controller:${name}`, `system:controller:${name}`, [sa(name)])),
  ];
}

function role(namespace: string, name: string, rules: PolicyRule[]): KObject {
  return {
    apiVersion: API_VERSION,
    kind: 'Role',
    metadata: { name, namespace, labels: { ...BOOTSTRAP_LABELS }, annotations: { [AUTOUPDATE_ANNOTATION]: 'true' } },
    rules,
  };
}

function roleBinding(namespace: string, name: string, roleName: string, subjects: SubjectSpec[]): KObject {
  const b = clusterRoleBinding(name, roleName, subjects);
  return { ...b, kind: 'RoleBinding', metadata: { ...b.metadata, namespace }, roleRef: { apiGroup: RBAC_GROUP, kind: 'Role', name: roleName } };
}

/** NamespaceRoles(): the roles of kube-system and kube-public. */
export function bootstrapNamespaceRoles(): KObject[] {
  const leaderLocking = (name: string) => [core(['watch'], 'configmaps'), rule(['get', 'update'], [''], ['configmaps'], [name])];
  return [
    role('kube-system', 'extension-apiserver-authentication-reader', [rule(READ, [''], ['configmaps'], ['extension-apiserver-authentication'])]),
    role('kube-system', 'system::leader-locking-kube-controller-manager', leaderLocking('kube-controller-manager')),
    role('kube-system', 'system::leader-locking-kube-scheduler', leaderLocking('kube-scheduler')),
    role('kube-system', 'system:controller:bootstrap-signer', [core(READ, 'secrets')]),
    role('kube-system', 'system:controller:cloud-provider', [core(['create', 'get', 'list', 'watch'], 'configmaps')]),
    role('kube-system', 'system:controller:token-cleaner', [core(['delete', 'get', 'list', 'watch'], 'secrets'), events()]),
    role('kube-public', 'system:controller:bootstrap-signer', [core(READ, 'configmaps'), rule(['update'], [''], ['configmaps'], ['cluster-info']), events()]),
  ];
}

/** NamespaceRoleBindings(). */
export function bootstrapNamespaceRoleBindings(): KObject[] {
  return [
    roleBinding('kube-system', 'system::extension-apiserver-authentication-reader', 'extension-apiserver-authentication-reader', [
      user('system:kube-controller-manager'),
      user('system:kube-scheduler'),
    ]),
    roleBinding('kube-system', 'system::leader-locking-kube-controller-manager', 'system::leader-locking-kube-controller-manager', [
      user('system:kube-controller-manager'),
      sa('kube-controller-manager'),
    ]),
    roleBinding('kube-system', 'system::leader-locking-kube-scheduler', 'system::leader-locking-kube-scheduler', [user('system:kube-scheduler'), sa('kube-scheduler')]),
    roleBinding('kube-system', 'system:controller:bootstrap-signer', 'system:controller:bootstrap-signer', [sa('bootstrap-signer')]),
    roleBinding('kube-system', 'system:controller:cloud-provider', 'system:controller:cloud-provider', [sa('cloud-provider')]),
    roleBinding('kube-system', 'system:controller:token-cleaner', 'system:controller:token-cleaner', [sa('token-cleaner')]),
    roleBinding('kube-public', 'system:controller:bootstrap-signer', 'system:controller:bootstrap-signer', [sa('bootstrap-signer')]),
  ];
}
