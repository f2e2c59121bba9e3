/**
 * Client-side apply (`kubectl apply` without --server-side: the last-applied-configuration annotation and a
 * strategic merge patch) keeps working, and an object moves from client-side to server-side apply as
 * kubectl's migration expects: kubectl upgrades the client-side manager's entry, and the server lets the
 * manager "kubectl" take over the fields whose live values are still the last-applied ones
 * (lastAppliedManager), without conflicts.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { requireBinary } from '../../helpers/binaries.js';
import { startCluster, type TestCluster } from '../../helpers/cluster.js';

const present = requireBinary(undefined, 'kubectl') !== null;

describe('client-side apply, then server-side apply', { skip: !present && 'kubectl not installed' }, () => {
  let c: TestCluster;
  before(async () => {
    c = await startCluster();
  });
  after(async () => c?.stop());
  const k = (args: string[], input?: string) => c.kubectl(args, input !== undefined ? { input } : {});

  it('applies client-side: the annotation records the configuration, and a field dropped from it is removed', async () => {
    const cm = (data: Record<string, string>) =>
      JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'csa', namespace: 'default' }, data });
    const created = await k(['apply', '-f', '-'], cm({ a: '1', b: '2' }));
    assert.equal(created.code, 0, created.stderr);
    assert.match(created.stdout, /configmap\/csa created/);
    // Someone else adds a key; the next client-side apply drops b (it left the configuration) and keeps theirs.
    assert.equal((await k(['patch', 'cm', 'csa', '-p', '{"data":{"other":"x"}}'])).code, 0);
    const applied = await k(['apply', '-f', '-'], cm({ a: '1' }));
    assert.equal(applied.code, 0, applied.stderr);
    assert.match(applied.stdout, /configmap\/csa configured/);
    const live = JSON.parse((await k(['get', 'cm', 'csa', '-o', 'json', '--show-managed-fields'])).stdout);
    assert.deepEqual(live.data, { a: '1', other: 'x' });
    const annotation = JSON.parse(live.metadata.annotations['kubectl.kubernetes.io/last-applied-configuration']);
    assert.deepEqual(annotation.data, { a: '1' });
    const managers = live.metadata.managedFields.map((e: { manager: string; operation: string }) => `${e.manager}/${e.operation}`);
    assert.deepEqual(managers.sort(), ['kubectl-client-side-apply/Update', 'kubectl-patch/Update']);
  });

  const lastApplied = (name: string, data: Record<string, string>) =>
    JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'default' }, data });

  for (const version of ['1.27', '1.33']) {
    it(`moves from client-side to server-side apply without conflicts (kubectl ${version})`, async () => {
      const name = `csa-${version.replace('.', '-')}`;
      const kv = (args: string[], input?: string) => c.kubectl(args, { version, ...(input !== undefined ? { input } : {}) });
      const created = await kv(['apply', '-f', '-'], lastApplied(name, { a: '1', b: '2' }));
      assert.equal(created.code, 0, created.stderr);
      const before = JSON.parse((await kv(['get', 'cm', name, '-o', 'json', '--show-managed-fields'])).stdout);
      assert.deepEqual(
        before.metadata.managedFields.map((e: { manager: string; operation: string }) => `${e.manager}/${e.operation}`),
        ['kubectl-client-side-apply/Update'],
      );
      // The same configuration with a changed value, now applied server-side: no conflict with the client-side manager.
      const moved = await kv(['apply', '--server-side', '-f', '-'], lastApplied(name, { a: 'changed', b: '2' }));
      assert.equal(moved.code, 0, moved.stderr);
      const after = JSON.parse((await kv(['get', 'cm', name, '-o', 'json', '--show-managed-fields'])).stdout);
      assert.deepEqual(after.data, { a: 'changed', b: '2' });
      const managers = after.metadata.managedFields.map((e: { manager: string; operation: string }) => `${e.manager}/${e.operation}`);
      assert.ok(managers.includes('kubectl/Apply'), JSON.stringify(managers));
      assert.ok(!managers.includes('kubectl-client-side-apply/Update'), JSON.stringify(managers));
      // kubectl's server-side apply keeps the client-side annotation in step with what it applied.
      const annotation = JSON.parse(after.metadata.annotations['kubectl.kubernetes.io/last-applied-configuration']);
      assert.deepEqual(annotation.data, { a: 'changed', b: '2' });
    });
  }

  it('lets the manager "kubectl" take over fields whose live values are still the last-applied ones, and no others', async () => {
    const apply = async (body: string, manager: string) => {
      const r = await c.request('PATCH', `/api/v1/namespaces/default/configmaps/csa-raw?fieldManager=${manager}`, {
        body,
        contentType: 'application/apply-patch+yaml',
      });
      return { status: r.status, body: r.json };
    };
    // As an older kubectl leaves it: created by client-side apply (an Update by kubectl-client-side-apply, with
    // the annotation), then changed by someone else on one field.
    const r = await k(['apply', '-f', '-'], lastApplied('csa-raw', { a: '1', b: '2' }));
    assert.equal(r.code, 0, r.stderr);
    assert.equal((await k(['patch', 'cm', 'csa-raw', '-p', '{"data":{"b":"patched"}}'])).code, 0);
    // b's live value is no longer the last-applied one: that conflict stays (with kubectl-patch, which owns it now).
    const conflict = await apply(lastApplied('csa-raw', { a: 'new', b: 'mine' }), 'kubectl');
    assert.equal(conflict.status, 409, JSON.stringify(conflict.body));
    assert.deepEqual(
      conflict.body.details.causes.map((x: { field: string }) => x.field),
      ['.data.b'],
    );
    // a still has its last-applied value: the server lets kubectl take it over from kubectl-client-side-apply.
    const ok = await apply(lastApplied('csa-raw', { a: 'new' }), 'kubectl');
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.equal(ok.body.data.a, 'new');
    // Another manager name gets no such allowance.
    const other = await apply(lastApplied('csa-raw', { a: 'other' }), 'not-kubectl');
    assert.equal(other.status, 409);
  });
});
