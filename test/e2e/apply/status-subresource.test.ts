/**
 * Server-side apply on the status subresource: only status changes, the entry is recorded under
 * subresource "status", and a spec sent to /status is neither applied, owned nor a conflict.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { requireBinary } from '../../helpers/binaries.js';
import { startCluster, type TestCluster } from '../../helpers/cluster.js';

const present = requireBinary(undefined, 'kubectl') !== null;

describe('server-side apply on /status', { skip: !present && 'kubectl not installed' }, () => {
  let c: TestCluster;
  before(async () => {
    c = await startCluster();
  });
  after(async () => c?.stop());
  const k = (args: string[], input?: string) => c.kubectl(args, input !== undefined ? { input } : {});

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

  it('does not create through /status: an apply there to a missing object is a 404', async () => {
    const r = await c.request('PATCH', '/api/v1/namespaces/default/persistentvolumeclaims/missing/status?fieldManager=volume-binder', {
      body: JSON.stringify({ apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'missing' }, status: { phase: 'Bound' } }),
      contentType: 'application/apply-patch+yaml',
    });
    assert.equal(r.status, 404, r.text);
    assert.equal(r.json.message, 'persistentvolumeclaims "missing" not found');
  });
});
