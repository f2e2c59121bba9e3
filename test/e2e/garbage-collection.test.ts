/**
 * Delete propagation (DeleteOptions.propagationPolicy) through ownerReferences, with a server this test
 * starts: Background deletes dependents after their owner, Orphan keeps them without the reference,
 * Foreground deletes dependents first; with --enable-garbage-collector=false (on the real binary, checked over
 * HTTPS) nothing deletes dependents.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startCluster, type TestCluster } from '../helpers/cluster.js';
import { startBinCluster, type BinCluster } from '../helpers/binserver.js';
import { StatusError } from '../../src/registry/errors.js';
import type { KObject } from '../../src/registry/kind.js';
import { eventually } from '../helpers/eventually.js';


describe('garbage collection of dependents', () => {
  let c: TestCluster;
  before(async () => {
    c = await startCluster();
  });
  after(async () => c?.stop());

  const stores = () => ({
    ns: c.cp.registry.store('', 'v1', 'namespaces')!,
    pvc: c.cp.registry.store('', 'v1', 'persistentvolumeclaims')!,
  });
  const claim = (name: string, owner: KObject, block = false): KObject => ({
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: {
      name,
      ownerReferences: [{ apiVersion: 'v1', kind: 'PersistentVolumeClaim', name: owner.metadata!.name, uid: owner.metadata!.uid, ...(block ? { blockOwnerDeletion: true } : {}) }],
    },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
  });
  const exists = async (name: string) => {
    try {
      await stores().pvc.get({ namespace: 'default' }, name);
      return true;
    } catch (err) {
      if (err instanceof StatusError && err.code === 404) return false;
      throw err;
    }
  };
  const base = (name: string): KObject => ({
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
  });
  const scope = { namespace: 'default' };

  it('Background: deletes a dependent once its only owner is gone', async () => {
    const owner = await stores().pvc.create(scope, base('bg-owner'));
    await stores().pvc.create(scope, claim('bg-dep', owner));
    await stores().pvc.delete(scope, 'bg-owner', { propagationPolicy: 'Background' });
    await eventually('owner and dependent gone', async () => !(await exists('bg-owner')) && !(await exists('bg-dep')));
  });

  it('Orphan: keeps the dependent and removes its reference to the owner', async () => {
    const owner = await stores().pvc.create(scope, base('or-owner'));
    await stores().pvc.create(scope, claim('or-dep', owner));
    await stores().pvc.delete(scope, 'or-owner', { propagationPolicy: 'Orphan' });
    await eventually('the owner gone', async () => !(await exists('or-owner')));
    const dep = await stores().pvc.get(scope, 'or-dep');
    assert.equal(dep.metadata!.ownerReferences, undefined);
  });

  it('Foreground: deletes blocking dependents before the owner', async () => {
    const owner = await stores().pvc.create(scope, base('fg-owner'));
    await stores().pvc.create(scope, claim('fg-dep', owner, true));
    const marked = await stores().pvc.delete(scope, 'fg-owner', { propagationPolicy: 'Foreground' });
    assert.equal(marked.deleted, false);
    assert.ok(marked.object.metadata!.finalizers!.includes('foregroundDeletion'));
    await eventually('dependent then owner gone', async () => !(await exists('fg-dep')) && !(await exists('fg-owner')));
  });
});

describe('--enable-garbage-collector=false (the binary)', () => {
  let c: BinCluster;
  before(async () => {
    c = await startBinCluster(['--enable-garbage-collector=false']);
  });
  after(async () => c?.stop());

  it('leaves the dependents of a deleted owner in place', async () => {
    const path = '/api/v1/namespaces/default/persistentvolumeclaims';
    const spec = { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } };
    const owner = await c.request('POST', path, { body: { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'owner' }, spec } });
    assert.equal(owner.status, 201, owner.text);
    const ref = { apiVersion: 'v1', kind: 'PersistentVolumeClaim', name: 'owner', uid: owner.json.metadata.uid as string };
    const dep = await c.request('POST', path, { body: { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'dep', ownerReferences: [ref] }, spec } });
    assert.equal(dep.status, 201, dep.text);
    const deleted = await c.request('DELETE', `${path}/owner?propagationPolicy=Background`);
    assert.equal(deleted.status, 200, deleted.text);
    await eventually('the owner gone', async () => (await c.request('GET', `${path}/owner`)).status === 404);
    // The collector of the other server removes such a dependent within milliseconds; here none runs.
    await new Promise((r) => setTimeout(r, 1000));
    const kept = await c.request('GET', `${path}/dep`);
    assert.equal(kept.status, 200);
    assert.deepEqual(kept.json.metadata.ownerReferences, [ref]);
  });
});
