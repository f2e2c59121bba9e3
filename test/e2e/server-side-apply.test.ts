/**
 * Server-side apply through kubectl: create by apply, managedFields, conflicts with another manager,
 * --force-conflicts, removal of a field the applier stops applying, and the move from client-side to
 * server-side apply (kubectl's managedFields upgrade, and the server's allowance for the last-applied fields).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { requireBinary } from '../helpers/binaries.js';
import { startCluster, type TestCluster } from '../helpers/cluster.js';

const present = requireBinary(undefined, 'kubectl') !== null;

const config = (data: Record<string, string>, labels: Record<string, string> = { app: 'web' }) =>
  JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'ssa', namespace: 'default', labels }, data });

describe('server-side apply (kubectl apply --server-side)', { skip: !present && 'kubectl not installed' }, () => {
  let c: TestCluster;
  before(async () => {
    c = await startCluster();
  });
  after(async () => c?.stop());
  const k = (args: string[], input?: string) => c.kubectl(args, input !== undefined ? { input } : {});
  const get = async () => JSON.parse((await k(['get', 'cm', 'ssa', '-o', 'json', '--show-managed-fields'])).stdout);

  it('creates by apply and records the applier as the manager of what it applied', async () => {
    const r = await k(['apply', '--server-side', '-f', '-'], config({ a: '1', b: '2' }));
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /configmap\/ssa serverside-applied/);
    const cm = await get();
    assert.deepEqual(cm.data, { a: '1', b: '2' });
    assert.equal(cm.metadata.managedFields.length, 1);
    const [entry] = cm.metadata.managedFields;
    assert.equal(entry.manager, 'kubectl');
    assert.equal(entry.operation, 'Apply');
    assert.equal(entry.apiVersion, 'v1');
    assert.equal(entry.fieldsType, 'FieldsV1');
    assert.deepEqual(entry.fieldsV1, { 'f:data': { 'f:a': {}, 'f:b': {} }, 'f:metadata': { 'f:labels': { 'f:app': {} } } });
  });

  it('conflicts with a field another manager changed, and takes it over with --force-conflicts', async () => {
    assert.equal((await k(['patch', 'cm', 'ssa', '-p', '{"data":{"a":"patched"}}'])).code, 0);
    const patched = await get();
    assert.ok(patched.metadata.managedFields.some((e: { manager: string; operation: string }) => e.manager === 'kubectl-patch' && e.operation === 'Update'));
    const conflict = await k(['apply', '--server-side', '-f', '-'], config({ a: '1', b: '2' }));
    assert.notEqual(conflict.code, 0);
    assert.match(conflict.stderr, /Apply failed with 1 conflict: conflict with "kubectl-patch" using v1: \.data\.a/);
    const forced = await k(['apply', '--server-side', '--force-conflicts', '-f', '-'], config({ a: '1', b: '2' }));
    assert.equal(forced.code, 0, forced.stderr);
    const cm = await get();
    assert.equal(cm.data.a, '1');
    assert.ok(!cm.metadata.managedFields.some((e: { manager: string }) => e.manager === 'kubectl-patch'));
  });

  it('removes a field the applier stops applying, and keeps one another manager owns', async () => {
    assert.equal((await k(['label', 'cm', 'ssa', 'owner=ops'])).code, 0);
    const r = await k(['apply', '--server-side', '-f', '-'], config({ a: '1' }, { app: 'web' }));
    assert.equal(r.code, 0, r.stderr);
    const cm = await get();
    assert.deepEqual(cm.data, { a: '1' });
    assert.deepEqual(cm.metadata.labels, { app: 'web', owner: 'ops' });
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
  it('applies to the status subresource: only status changes, recorded under subresource "status"', async () => {
    const pvc = {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'ssa-status', namespace: 'default' },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
    };
    const created = await k(['apply', '--server-side', '-f', '-'], JSON.stringify(pvc));
    assert.equal(created.code, 0, created.stderr);
    const status = {
      ...pvc,
      // A spec change sent to /status is ignored, not owned and not a conflict.
      spec: { ...pvc.spec, resources: { requests: { storage: '5Gi' } } },
      status: { phase: 'Bound', accessModes: ['ReadWriteOnce'], capacity: { storage: '1Gi' } },
    };
    const r = await c.request('PATCH', '/api/v1/namespaces/default/persistentvolumeclaims/ssa-status/status?fieldManager=volume-binder', {
      body: JSON.stringify(status),
      contentType: 'application/apply-patch+yaml',
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.status.phase, 'Bound');
    assert.equal(r.json.spec.resources.requests.storage, '1Gi');
    const entries = r.json.metadata.managedFields.filter((e: { manager: string }) => e.manager === 'volume-binder');
    assert.equal(entries.length, 1);
    assert.equal(entries[0].operation, 'Apply');
    assert.equal(entries[0].subresource, 'status');
    assert.deepEqual(entries[0].fieldsV1, {
      'f:status': { 'f:accessModes': {}, 'f:capacity': { 'f:storage': {} }, 'f:phase': {} },
    });
    // The main resource's applier still owns the spec, and applying there does not touch the status.
    const again = await k(['apply', '--server-side', '-f', '-'], JSON.stringify(pvc));
    assert.equal(again.code, 0, again.stderr);
    const live = JSON.parse((await k(['get', 'pvc', 'ssa-status', '-o', 'json'])).stdout);
    assert.equal(live.status.phase, 'Bound');
  });
});
