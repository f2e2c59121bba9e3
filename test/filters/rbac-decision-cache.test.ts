/**
 * The RBAC authorizer caches decisions per user and request: the cache must follow every change of roles and
 * bindings at once (this server's own writes are heard before the writer's answer). A user (by impersonation)
 * is refused, allowed once bound, refused again once unbound, refused through a binding to a missing role and
 * allowed as soon as the role appears, and refused again when the role loses the rule.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startCluster, type TestCluster } from '../helpers/cluster.js';

void describe('RBAC decision cache', () => {
  let c: TestCluster;
  before(async () => {
    c = await startCluster(['--authorization-mode=RBAC']);
    const ns = await c.request('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'cached' } } });
    assert.equal(ns.status, 201, ns.text);
  });
  after(async () => {
    await c?.stop();
  });

  const asAlice = () => c.request('GET', '/api/v1/namespaces/cached/configmaps', { headers: { 'impersonate-user': 'alice' } });
  const rbac = (path: string) => `/apis/rbac.authorization.k8s.io/v1/namespaces/cached/${path}`;
  const binding = (name: string, roleRef: { kind: string; name: string }) => ({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name, namespace: 'cached' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', ...roleRef },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'alice' }],
  });
  const expectStatus = async (want: number, r: Promise<{ status: number; text: string }>) => {
    const got = await r;
    assert.equal(got.status, want, got.text);
    return got;
  };

  void it('follows bindings and roles as they change', async () => {
    await expectStatus(403, asAlice());
    await expectStatus(403, asAlice());
    await expectStatus(201, c.request('POST', rbac('rolebindings'), { body: binding('view', { kind: 'ClusterRole', name: 'view' }) }));
    await expectStatus(200, asAlice());
    await expectStatus(200, asAlice());
    await expectStatus(200, c.request('DELETE', rbac('rolebindings/view')));
    await expectStatus(403, asAlice());

    await expectStatus(201, c.request('POST', rbac('rolebindings'), { body: binding('dangling', { kind: 'Role', name: 'reader' }) }));
    const missing = await expectStatus(403, asAlice());
    assert.match(missing.text, /RBAC: role.rbac.authorization.k8s.io \\"reader\\" not found/);
    const role = {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: 'reader', namespace: 'cached' },
      rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['list'] }],
    };
    await expectStatus(201, c.request('POST', rbac('roles'), { body: role }));
    await expectStatus(200, asAlice());
    const rules = [{ apiGroups: [''], resources: ['secrets'], verbs: ['list'] }];
    await expectStatus(200, c.request('PATCH', rbac('roles/reader'), { body: { rules }, contentType: 'application/merge-patch+json' }));
    await expectStatus(403, asAlice());
  });
});
