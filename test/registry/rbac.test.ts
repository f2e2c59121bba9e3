/**
 * The pure parts of authorization: RBAC rule matching and covering (escalation checks) with Kubernetes'
 * compact rule text, the RBAC kinds' validation, ABAC policy lines (v1beta1 and converted v0), impersonation
 * header parsing, the Node authorizer's graph, the Forbidden message and the union of authorizers.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { compactRules, compactString, covers, ruleAllows, type PolicyRule } from '../../src/registry/kinds/rbac/rules.js';
import { clusterRoleBindingKind, clusterRoleKind, roleBindingKind, roleKind } from '../../src/registry/kinds/rbac/index.js';
import { parsePolicyLine, abacAuthorizer } from '../../src/filters/authz/abac.js';
import { impersonationRequests } from '../../src/filters/impersonation.js';
import { NodeGraph, podReferences } from '../../src/filters/authz/node.js';
import { forbiddenMessage } from '../../src/filters/authorization.js';
import { alwaysDenyAuthorizer, unionAuthorizer } from '../../src/filters/authz/union.js';
import { resourceAttributes, type AccessAttributes } from '../../src/registry/kinds/authorization/attributes.js';
import type { StrategyContext } from '../../src/registry/kind.js';

const ctx: StrategyContext = { featureGates: {}, namespace: 'ns', subresource: '' };
const res = (a: Partial<AccessAttributes> & { verb: string; resource: string }) => resourceAttributes({ apiVersion: 'v1', ...a });
const path = (verb: string, p: string): AccessAttributes => ({ ...res({ verb, resource: '' }), isResourceRequest: false, path: p });

void describe('RBAC rules', () => {
  void it('match verbs, groups, resources, subresources, names and URL prefixes as RuleAllows', () => {
    const rule: PolicyRule = { verbs: ['get'], apiGroups: [''], resources: ['pods', '*/status'], resourceNames: ['a'] };
    assert.equal(ruleAllows(res({ verb: 'get', resource: 'pods', name: 'a' }), rule), true);
    assert.equal(ruleAllows(res({ verb: 'get', resource: 'pods', name: 'b' }), rule), false);
    assert.equal(ruleAllows(res({ verb: 'get', resource: 'nodes', subresource: 'status', name: 'a' }), rule), true);
    assert.equal(ruleAllows(res({ verb: 'get', resource: 'pods', subresource: 'log', name: 'a' }), rule), false);
    assert.equal(ruleAllows(res({ verb: 'list', resource: 'pods', name: 'a' }), rule), false);
    assert.equal(ruleAllows(res({ verb: 'get', resource: 'pods', apiGroup: 'apps', name: 'a' }), rule), false);
    const urls: PolicyRule = { verbs: ['get'], nonResourceURLs: ['/healthz', '/apis/*'] };
    assert.equal(ruleAllows(path('get', '/apis/apps/v1'), urls), true);
    assert.equal(ruleAllows(path('get', '/healthz/etcd'), urls), false);
    assert.equal(ruleAllows(path('post', '/healthz'), urls), false);
    assert.equal(ruleAllows(res({ verb: 'get', resource: 'pods' }), urls), false);
  });

  void it('covers as Kubernetes breaks rules down, and says what is missing in compact form', () => {
    const owner: PolicyRule[] = [
      { verbs: ['get', 'list'], apiGroups: [''], resources: ['pods', '*/log'] },
      { verbs: ['*'], apiGroups: ['apps'], resources: ['deployments'], resourceNames: ['web'] },
      { verbs: ['get'], nonResourceURLs: ['/api/*'] },
    ];
    assert.deepEqual(covers(owner, [{ verbs: ['get'], apiGroups: [''], resources: ['pods', 'pods/log'] }]).covered, true);
    assert.deepEqual(covers(owner, [{ verbs: ['delete'], apiGroups: ['apps'], resources: ['deployments'], resourceNames: ['web'] }]).covered, true);
    assert.deepEqual(covers(owner, [{ verbs: ['get'], nonResourceURLs: ['/api/v1'] }]).covered, true);
    const { covered, missing } = covers(owner, [
      { verbs: ['get', 'watch', 'delete'], apiGroups: [''], resources: ['pods', 'secrets'] },
      { verbs: ['update'], apiGroups: ['apps'], resources: ['deployments'] },
      { verbs: ['get'], nonResourceURLs: ['/healthz'] },
    ]);
    assert.equal(covered, false);
    assert.deepEqual([...new Set(compactRules(missing).map(compactString))].sort(), [
      '{APIGroups:[""], Resources:["pods"], Verbs:["watch" "delete"]}',
      '{APIGroups:[""], Resources:["secrets"], Verbs:["get" "watch" "delete"]}',
      '{APIGroups:["apps"], Resources:["deployments"], Verbs:["update"]}',
      '{NonResourceURLs:["/healthz"], Verbs:["get"]}',
    ]);
  });
});

void describe('RBAC kinds: validation and defaults', () => {
  void it('refuses rules without verbs, groups or resources, and URLs in namespaced roles', () => {
    const errs = roleKind.strategy.validate({ rules: [{ verbs: [] }, { verbs: ['get'], nonResourceURLs: ['/x'] }] }, ctx).map(String);
    assert.deepEqual(errs, [
      'rules[0].verbs: Required value: verbs must contain at least one value',
      'rules[0].apiGroups: Required value: resource rules must supply at least one api group',
      'rules[0].resources: Required value: resource rules must supply at least one resource',
      'rules[1].nonResourceURLs: Invalid value: []string{"/x"}: namespaced rules cannot apply to non-resource URLs',
    ]);
    assert.deepEqual(clusterRoleKind.strategy.validate({ rules: [{ verbs: ['get'], nonResourceURLs: ['/x'] }], aggregationRule: {} }, { ...ctx, namespace: '' }).map(String), [
      'aggregationRule.clusterRoleSelectors: Required value: at least one clusterRoleSelector required if aggregationRule is non-nil',
    ]);
    assert.deepEqual(roleKind.nameValidator!('a/b%', false), ["may not contain '/'", "may not contain '%'"]);
  });

  void it('validates bindings, defaults their API groups and keeps roleRef immutable', () => {
    const binding = { roleRef: { kind: 'Role', name: 'r' }, subjects: [{ kind: 'User', name: 'u' }, { kind: 'ServiceAccount', name: 'Bad_Name' }, { kind: 'Robot', name: 'x' }] };
    roleBindingKind.strategy.default!(binding, ctx);
    assert.equal((binding.roleRef as { apiGroup?: string }).apiGroup, 'rbac.authorization.k8s.io');
    assert.deepEqual(roleBindingKind.strategy.validate(binding, ctx).map(String), [
      'subjects[1].name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, \'-\' or \'.\', and must start and end with an alphanumeric character (e.g. \'example.com\', regex used for validation is \'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\')',
      'subjects[2].kind: Unsupported value: "Robot": supported values: "ServiceAccount", "User", "Group"',
    ]);
    const crb = { roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'r' }, subjects: [{ kind: 'ServiceAccount', name: 'sa' }] };
    assert.deepEqual(clusterRoleBindingKind.strategy.validate(crb, ctx).map(String), [
      'roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole"',
      'subjects[0].namespace: Required value',
    ]);
    const old = { roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' } };
    const changed = { roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'edit' } };
    assert.deepEqual(roleBindingKind.strategy.validateUpdate(changed, old, ctx).map(String), [
      'roleRef: Invalid value: rbac.RoleRef{APIGroup:"rbac.authorization.k8s.io", Kind:"ClusterRole", Name:"edit"}: cannot change roleRef',
    ]);
  });
});

void describe('ABAC', () => {
  void it('reads v1beta1 policies and converts v0 ones', () => {
    assert.deepEqual(parsePolicyLine('{"user":"carl"}'), {
      user: 'carl',
      group: '',
      readonly: false,
      apiGroup: '*',
      resource: '*',
      namespace: '*',
      nonResourcePath: '*',
    });
    assert.deepEqual(parsePolicyLine('{"user":"*","resource":"pods","readonly":true}'), {
      user: '',
      group: 'system:authenticated',
      readonly: true,
      apiGroup: '*',
      resource: 'pods',
      namespace: '*',
      nonResourcePath: '',
    });
    assert.deepEqual(parsePolicyLine('{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"user":"*","nonResourcePath":"/x"}}'), {
      user: '',
      group: 'system:authenticated',
      readonly: false,
      apiGroup: '',
      resource: '',
      namespace: '',
      nonResourcePath: '/x',
    });
    assert.throws(() => parsePolicyLine('{"apiVersion":"v2"}'), { message: 'unknown policy apiVersion "v2"' });
  });

  void it('allows by subject, readonly verbs and resource or path; otherwise says no policy matched', async () => {
    const a = abacAuthorizer([parsePolicyLine('{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"group":"devs","namespace":"ns","resource":"pods","apiGroup":"","readonly":true}}')]);
    const dev = { name: 'x', groups: ['devs'] };
    assert.deepEqual(a.authorize(dev, res({ verb: 'watch', resource: 'pods', namespace: 'ns' })), { decision: 'allow', reason: '' });
    assert.deepEqual(a.authorize(dev, res({ verb: 'create', resource: 'pods', namespace: 'ns' })), { decision: 'noOpinion', reason: 'No policy matched.' });
    assert.equal((await a.authorize({ name: 'y', groups: [] }, res({ verb: 'get', resource: 'pods', namespace: 'ns' }))).decision, 'noOpinion');
  });
});

void describe('impersonation headers', () => {
  void it('become requests in Kubernetes order: user or service account, groups, extras, uid', () => {
    const r = impersonationRequests({
      'impersonate-user': ['system:serviceaccount:ns:robot'],
      'impersonate-group': ['a', 'b,c'],
      'impersonate-extra-scopes%2Fx': ['s1', 's2'],
      'impersonate-uid': ['123'],
    });
    assert.deepEqual(
      r.map((x) => `${x.kind}:${x.namespace}:${x.name}:${x.fieldPath}`),
      ['ServiceAccount:ns:robot:', 'Group::a:', 'Group::b,c:', 'UserExtra::s1:scopes/x', 'UserExtra::s2:scopes/x', 'UID::123:'],
    );
    assert.throws(() => impersonationRequests({ 'impersonate-uid': ['1'] }), {
      message: 'requested [{UID  1  authentication.k8s.io/v1  }] without impersonating a user',
    });
  });
});

void describe('Node authorizer graph', () => {
  void it('links a node to what the pods bound to it reference, and forgets them with the pod', () => {
    const pod = {
      metadata: { name: 'p', namespace: 'ns' },
      spec: {
        nodeName: 'n1',
        serviceAccountName: 'sa',
        imagePullSecrets: [{ name: 'pull' }],
        containers: [{ envFrom: [{ configMapRef: { name: 'env-cm' } }], env: [{ valueFrom: { secretKeyRef: { name: 'env-s' } } }] }],
        volumes: [{ name: 'v', projected: { sources: [{ secret: { name: 'proj-s' } }] } }, { name: 'e', ephemeral: {} }, { name: 'c', persistentVolumeClaim: { claimName: 'claim' } }],
      },
    };
    assert.deepEqual(
      podReferences(pod).map((r) => `${r.type}/${r.name}`),
      ['secret/pull', 'configmap/env-cm', 'secret/env-s', 'secret/proj-s', 'pvc/p-e', 'pvc/claim', 'serviceaccount/sa'],
    );
    const g = new NodeGraph();
    g.podChanged('ns/p', pod);
    assert.equal(g.hasPathFrom('n1', 'secret', 'ns', 'proj-s'), true);
    assert.equal(g.hasPathFrom('n2', 'secret', 'ns', 'proj-s'), false);
    assert.equal(g.hasPathFrom('n1', 'secret', 'other', 'proj-s'), false);
    g.podChanged('ns/p', { ...pod, spec: { ...pod.spec, nodeName: 'n2' } });
    assert.equal(g.hasPathFrom('n1', 'pvc', 'ns', 'claim'), false);
    assert.equal(g.hasPathFrom('n2', 'pvc', 'ns', 'claim'), true);
    g.podChanged('ns/p', null);
    assert.equal(g.hasPathFrom('n2', 'pvc', 'ns', 'claim'), false);
  });
});

void describe('Forbidden message and the union of authorizers', () => {
  void it('words denials as errors.NewForbidden around responsewriters.Forbidden', () => {
    const u = { name: 'bob', groups: [] };
    assert.equal(
      forbiddenMessage(u, res({ verb: 'get', resource: 'deployments', subresource: 'scale', apiGroup: 'apps', namespace: 'ns', name: 'web' }), 'why'),
      'deployments.apps "web" is forbidden: User "bob" cannot get resource "deployments/scale" in API group "apps" in the namespace "ns": why',
    );
    assert.equal(forbiddenMessage(u, res({ verb: 'list', resource: 'nodes' }), ''), 'nodes is forbidden: User "bob" cannot list resource "nodes" in API group "" at the cluster scope');
    assert.equal(forbiddenMessage(u, path('get', '/metrics'), ''), 'forbidden: User "bob" cannot get path "/metrics"');
  });

  void it('stops at the first decision and joins the reasons of authorizers without an opinion', async () => {
    const noOpinion = { authorize: () => ({ decision: 'noOpinion' as const, reason: 'first' }) };
    const deny = { authorize: () => ({ decision: 'deny' as const, reason: 'denied' }) };
    const never = {
      authorize: (): never => {
        throw new Error('not reached');
      },
    };
    const u = { name: 'u', groups: [] };
    const a = res({ verb: 'get', resource: 'pods' });
    assert.deepEqual(await unionAuthorizer([noOpinion, alwaysDenyAuthorizer]).authorize(u, a), { decision: 'noOpinion', reason: 'first\nEverything is forbidden.' });
    assert.deepEqual(await unionAuthorizer([noOpinion, deny, never]).authorize(u, a), { decision: 'deny', reason: 'denied' });
  });
});
