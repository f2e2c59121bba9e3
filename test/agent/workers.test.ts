import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { PodLifecycle, SyncResult } from '../../src/agent/podsync.js';
import { staticPodFromManifest } from '../../src/agent/sources/manifest.js';
import type { Pod } from '../../src/agent/types.js';
import { PodWorkers, type PodWorkerState } from '../../src/agent/workers.js';
import { waitFor } from './runtime-contract.js';

const pod = (name: string, grace = 30): Pod =>
  staticPodFromManifest(
    { apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { terminationGracePeriodSeconds: grace, containers: [{ name: 'c', image: 'i', command: ['true'] }] } },
    'file',
    'n',
    `/m/${name}`,
  );

/** Records calls; a sync takes `delayMs` so overlaps would show. */
class FakeLifecycle implements PodLifecycle {
  calls: string[] = [];
  active = 0;
  maxActivePerPod = new Map<string, number>();
  result: SyncResult = { terminal: false };
  constructor(private readonly delayMs = 20) {}
  private async step(what: string, p: Pod): Promise<void> {
    const uid = p.metadata.uid;
    const n = (this.maxActivePerPod.get(`${uid}:now`) ?? 0) + 1;
    this.maxActivePerPod.set(`${uid}:now`, n);
    this.maxActivePerPod.set(uid, Math.max(n, this.maxActivePerPod.get(uid) ?? 0));
    this.calls.push(`${what} ${p.metadata.name}`);
    await new Promise((r) => setTimeout(r, this.delayMs));
    this.maxActivePerPod.set(`${uid}:now`, n - 1);
  }
  async syncPod(p: Pod): Promise<SyncResult> {
    await this.step(`sync(${p.metadata.labels?.v ?? ''})`, p);
    return this.result;
  }
  async terminatePod(p: Pod, grace: number): Promise<void> {
    await this.step(`terminate(${grace})`, p);
  }
  async cleanupPod(p: Pod): Promise<void> {
    await this.step('cleanup', p);
  }
}

void describe('pod workers', () => {
  void it('serialises work per pod and folds queued updates into one pass with the newest pod', async () => {
    const lc = new FakeLifecycle();
    const w = new PodWorkers(lc);
    const p = pod('a');
    w.update('ADD', p);
    for (const v of ['1', '2', '3']) {
      const u = structuredClone(p);
      u.metadata.labels = { v };
      w.update('UPDATE', u);
    }
    await w.idle();
    assert.deepEqual(lc.calls, ['sync() a-n', 'sync(3) a-n']);
    assert.equal(lc.maxActivePerPod.get(p.metadata.uid), 1);
    assert.equal(w.state(p.metadata.uid), 'syncing');
  });

  void it('runs different pods in parallel', async () => {
    const lc = new FakeLifecycle(100);
    const w = new PodWorkers(lc);
    const t0 = Date.now();
    for (const n of ['a', 'b', 'c', 'd']) w.update('ADD', pod(n));
    await w.idle();
    assert.ok(Date.now() - t0 < 300, 'four 100 ms syncs overlapped');
  });

  void it('terminates with the grace period, cleans up and forgets a deleted pod', async () => {
    const lc = new FakeLifecycle();
    const states: PodWorkerState[] = [];
    const w = new PodWorkers(lc, { onStateChange: (_p, s) => states.push(s) });
    const p = pod('a', 7);
    w.update('ADD', p);
    w.update('DELETE', p);
    w.update('UPDATE', p); // ignored once deletion is requested
    await w.idle();
    assert.deepEqual(lc.calls, ['sync() a-n', 'terminate(7) a-n', 'cleanup a-n']);
    assert.deepEqual(states, ['terminating', 'terminated']);
    assert.equal(w.state(p.metadata.uid), undefined);
    w.update('DELETE', p); // unknown pod: nothing
    await w.idle();
    assert.equal(lc.calls.length, 3);
  });

  void it('marks a pod terminated when it reaches a terminal phase, and stops syncing it', async () => {
    const lc = new FakeLifecycle(1);
    lc.result = { terminal: true };
    const w = new PodWorkers(lc);
    const p = pod('a');
    w.update('ADD', p);
    await w.idle();
    assert.equal(w.state(p.metadata.uid), 'terminated');
    w.sync(p.metadata.uid);
    await w.idle();
    assert.deepEqual(lc.calls, ['sync() a-n', 'terminate(0) a-n']);
    await w.terminateAll();
    assert.deepEqual(lc.calls.slice(2), ['terminate(30) a-n', 'cleanup a-n']);
  });

  void it('syncs again when asked to requeue, and retries after an error', async () => {
    const lc = new FakeLifecycle(1);
    lc.result = { terminal: false, requeueAfterMs: 30 };
    const errors: unknown[] = [];
    const w = new PodWorkers(lc, { errorBackoffMs: 30, onError: (_p, e) => errors.push(e) });
    w.update('ADD', pod('a'));
    await waitFor('a requeued sync', () => (lc.calls.length >= 3 ? true : undefined));
    lc.syncPod = async () => {
      lc.calls.push('boom');
      throw new Error('boom');
    };
    await waitFor('two failures', () => (errors.length >= 2 ? true : undefined));
    await w.terminateAll(0);
  });
});
