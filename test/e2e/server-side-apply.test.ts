/**
 * Server-side apply through kubectl: create by apply, managedFields, conflicts with another manager,
 * --force-conflicts, and removal of a field the applier stops applying.
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
});
