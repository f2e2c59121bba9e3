/**
 * Namespace deletion as Kubernetes' namespace controller does it: Terminating, content deleted, the five
 * conditions, finalize, gone; and NamespaceLifecycle refusing new content meanwhile.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startCluster, type TestCluster } from '../helpers/cluster.js';
import { StatusError } from '../../src/registry/errors.js';
import type { KObject } from '../../src/registry/kind.js';
import { eventually } from '../helpers/eventually.js';


describe('namespace lifecycle', () => {
  let c: TestCluster;
  before(async () => {
    c = await startCluster();
  });
  after(async () => c?.stop());

  it('reports remaining content and finalizers, refuses new content, and goes once content is gone', async () => {
    const ns = c.cp.registry.store('', 'v1', 'namespaces')!;
    const pvc = c.cp.registry.store('', 'v1', 'persistentvolumeclaims')!;
    await ns.create({ namespace: '' }, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'doomed' } });
    const claim: KObject = {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'held', finalizers: ['example.com/hold'] },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
    };
    await pvc.create({ namespace: 'doomed' }, claim);
    await ns.delete({ namespace: '' }, 'doomed');
    let last: KObject | undefined;
    const terminating = await eventually(
      () => `the NamespaceFinalizersRemaining condition; last: ${JSON.stringify(last?.status)}`,
      async () => {
        last = await ns.get({ namespace: '' }, 'doomed');
        // The pvc-protection finalizer goes first (the claim is deleted and unused); example.com/hold stays.
        const held = (last.status?.conditions ?? []).some(
          (x: KObject) => x.type === 'NamespaceFinalizersRemaining' && x.message === 'Some finalizers are remaining: example.com/hold in 1 resource instances',
        );
        return held ? last : undefined;
      },
    );
    assert.equal(terminating.status.phase, 'Terminating');
    const byType = Object.fromEntries((terminating.status.conditions as KObject[]).map((x) => [x.type, x]));
    assert.deepEqual(Object.keys(byType).sort(), [
      'NamespaceContentRemaining',
      'NamespaceDeletionContentFailure',
      'NamespaceDeletionDiscoveryFailure',
      'NamespaceDeletionGroupVersionParsingFailure',
      'NamespaceFinalizersRemaining',
    ]);
    assert.equal(byType.NamespaceContentRemaining.reason, 'SomeResourcesRemain');
    assert.equal(byType.NamespaceContentRemaining.message, 'Some resources are remaining: persistentvolumeclaims. has 1 resource instances');
    assert.equal(byType.NamespaceFinalizersRemaining.reason, 'SomeFinalizerRemain');
    assert.equal(byType.NamespaceFinalizersRemaining.message, 'Some finalizers are remaining: example.com/hold in 1 resource instances');
    assert.equal(byType.NamespaceDeletionDiscoveryFailure.status, 'False');
    assert.equal(byType.NamespaceDeletionDiscoveryFailure.reason, 'ResourcesDiscovered');
    assert.equal(byType.NamespaceDeletionContentFailure.reason, 'ContentDeleted');
    try {
      await pvc.create({ namespace: 'doomed' }, { ...claim, metadata: { name: 'late' } });
      assert.fail('created content in a terminating namespace');
    } catch (err) {
      assert.ok(err instanceof StatusError);
      assert.equal(err.code, 403);
      assert.equal(err.status.message, 'persistentvolumeclaims "late" is forbidden: unable to create new content in namespace doomed because it is being terminated');
      assert.deepEqual(err.status.details?.causes, [
        { reason: 'NamespaceTerminating', message: 'namespace doomed is being terminated', field: 'metadata.namespace' },
      ]);
    }
    await pvc.update({ namespace: 'doomed' }, 'held', (cur) => ({ ...cur!, metadata: { ...cur!.metadata, finalizers: [] } }));
    await eventually('the namespace to be gone', async () => {
      try {
        await ns.get({ namespace: '' }, 'doomed');
        return false;
      } catch (err) {
        return err instanceof StatusError && err.code === 404;
      }
    });
  });
});
