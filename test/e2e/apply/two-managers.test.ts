/**
 * `kubectl apply --server-side` with two field managers on one ConfigMap, as Kubernetes documents server-side
 * apply (https://kubernetes.io/docs/reference/using-api/server-side-apply/): the applier owns what it applied;
 * two appliers of the same value share the field; a different value is a conflict naming the owner, unless
 * --force-conflicts takes the field over; a field an applier stops applying is removed, unless another manager
 * still owns it.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { requireBinary } from '../../helpers/binaries.js';
import { startCluster, type TestCluster } from '../../helpers/cluster.js';

const present = requireBinary(undefined, 'kubectl') !== null;

const config = (data: Record<string, string>, labels: Record<string, string> = { app: 'web' }) =>
  JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'ssa', namespace: 'default', labels }, data });

interface Entry {
  manager: string;
  operation: string;
  apiVersion: string;
  fieldsType: string;
  fieldsV1: Record<string, unknown>;
}

describe('kubectl apply --server-side with two field managers', { skip: !present && 'kubectl not installed' }, () => {
  let c: TestCluster;
  before(async () => {
    c = await startCluster();
  });
  after(async () => c?.stop());
  const k = (args: string[], input?: string) => c.kubectl(args, input !== undefined ? { input } : {});
  const apply = (manager: string, body: string, ...flags: string[]) =>
    k(['apply', '--server-side', `--field-manager=${manager}`, ...flags, '-f', '-'], body);
  const get = async () => JSON.parse((await k(['get', 'cm', 'ssa', '-o', 'json', '--show-managed-fields'])).stdout);
  const owners = async (): Promise<Record<string, Record<string, unknown>>> =>
    Object.fromEntries(((await get()).metadata.managedFields as Entry[]).map((e) => [`${e.manager}/${e.operation}`, e.fieldsV1]));

  it('creates by apply and records the applier as the manager of exactly what it applied', async () => {
    const r = await k(['apply', '--server-side', '-f', '-'], config({ a: '1', b: '2' }));
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /configmap\/ssa serverside-applied/);
    const cm = await get();
    assert.deepEqual(cm.data, { a: '1', b: '2' });
    assert.equal(cm.metadata.managedFields.length, 1);
    const [entry] = cm.metadata.managedFields as Entry[];
    assert.equal(entry?.manager, 'kubectl');
    assert.equal(entry?.operation, 'Apply');
    assert.equal(entry?.apiVersion, 'v1');
    assert.equal(entry?.fieldsType, 'FieldsV1');
    assert.deepEqual(entry?.fieldsV1, { 'f:data': { 'f:a': {}, 'f:b': {} }, 'f:metadata': { 'f:labels': { 'f:app': {} } } });
  });

  it('shares a field two appliers set to the same value; it stays while either still applies it', async () => {
    const r = await apply('team-b', config({ b: '2', c: '3' }, {}));
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(await owners(), {
      'kubectl/Apply': { 'f:data': { 'f:a': {}, 'f:b': {} }, 'f:metadata': { 'f:labels': { 'f:app': {} } } },
      'team-b/Apply': { 'f:data': { 'f:b': {}, 'f:c': {} } },
    });
    // kubectl stops applying b: team-b still owns it, so it stays.
    assert.equal((await k(['apply', '--server-side', '-f', '-'], config({ a: '1' }))).code, 0);
    assert.deepEqual((await get()).data, { a: '1', b: '2', c: '3' });
    // team-b stops applying it too: now it goes.
    assert.equal((await apply('team-b', config({ c: '3' }, {}))).code, 0);
    assert.deepEqual((await get()).data, { a: '1', c: '3' });
  });

  it('refuses a different value for a field another applier owns, naming it, and takes it with --force-conflicts', async () => {
    const conflict = await apply('team-b', config({ a: 'theirs', c: '3' }, {}));
    assert.notEqual(conflict.code, 0);
    assert.match(conflict.stderr, /Apply failed with 1 conflict: conflict with "kubectl": \.data\.a/);
    assert.deepEqual((await get()).data, { a: '1', c: '3' }, 'nothing changed');

    const forced = await apply('team-b', config({ a: 'theirs', c: '3' }, {}), '--force-conflicts');
    assert.equal(forced.code, 0, forced.stderr);
    assert.equal((await get()).data.a, 'theirs');
    const o = await owners();
    assert.deepEqual(o['kubectl/Apply'], { 'f:metadata': { 'f:labels': { 'f:app': {} } } }, 'kubectl lost data.a');
    assert.deepEqual(o['team-b/Apply'], { 'f:data': { 'f:a': {}, 'f:c': {} } });
  });

  it('conflicts with an update manager (kubectl patch) and reports it with its version', async () => {
    assert.equal((await k(['patch', 'cm', 'ssa', '-p', '{"data":{"c":"patched"}}'])).code, 0);
    const o = await owners();
    assert.deepEqual(o['kubectl-patch/Update'], { 'f:data': { 'f:c': {} } });
    assert.deepEqual(o['team-b/Apply'], { 'f:data': { 'f:a': {} } }, 'the update took c from team-b without a conflict');
    const conflict = await apply('team-b', config({ a: 'theirs', c: '3' }, {}));
    assert.notEqual(conflict.code, 0);
    assert.match(conflict.stderr, /Apply failed with 1 conflict: conflict with "kubectl-patch" using v1: \.data\.c/);
  });

  it('reports every conflicting field, grouped by manager', async () => {
    const r = await c.request('PATCH', '/api/v1/namespaces/default/configmaps/ssa?fieldManager=team-c', {
      body: config({ a: 'x', c: 'y' }, { app: 'z' }),
      contentType: 'application/apply-patch+yaml',
    });
    assert.equal(r.status, 409);
    assert.equal(r.json.reason, 'Conflict');
    assert.equal(
      r.json.message,
      'Apply failed with 3 conflicts: conflicts with "kubectl":\n- .metadata.labels.app\nconflicts with "kubectl-patch" using v1:\n- .data.c\nconflicts with "team-b":\n- .data.a',
    );
    assert.deepEqual(r.json.details.causes, [
      { reason: 'FieldManagerConflict', message: 'conflict with "kubectl"', field: '.metadata.labels.app' },
      { reason: 'FieldManagerConflict', message: 'conflict with "kubectl-patch" using v1', field: '.data.c' },
      { reason: 'FieldManagerConflict', message: 'conflict with "team-b"', field: '.data.a' },
    ]);
  });

  it('removes a field the applier stops applying, and keeps one another manager owns', async () => {
    assert.equal((await k(['label', 'cm', 'ssa', 'owner=ops'])).code, 0);
    assert.equal((await k(['apply', '--server-side', '-f', '-'], config({}, { app: 'web', tier: 'front' }))).code, 0);
    // kubectl drops tier; owner (kubectl-label's) stays.
    const r = await k(['apply', '--server-side', '-f', '-'], config({}, { app: 'web' }));
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual((await get()).metadata.labels, { app: 'web', owner: 'ops' });
  });
});
