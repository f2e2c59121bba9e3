// The node lifecycle controller with an agent that stops posting and comes back, seen through kubectl.
// The controller under test runs with a short grace period (the server's own one keeps the 40 s default
// and does not act within this test).
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startCluster, type TestCluster } from '../helpers/cluster.js';
import { startAgent } from '../helpers/agent.js';
import { waitFor } from '../agent/runtime-contract.js';
import { reconcileTaints, startNodeLifecycleController, unknownConditions } from '../../src/server/controllers/node-lifecycle.js';
import type { Controller } from '../../src/server/controllers/runner.js';

type Json = Record<string, any>;

void describe('node lifecycle controller', () => {
  let c: TestCluster;
  let controller: Controller;
  before(async () => {
    c = await startCluster();
    controller = startNodeLifecycleController(c.cp.registry, { gracePeriodMs: 2000, monitorPeriodMs: 200 });
  });
  after(async () => {
    controller?.stop();
    await c?.stop();
  });

  const node = async (name: string): Promise<Json | undefined> => {
    const r = await c.kubectl(['get', 'node', name, '-o', 'json']);
    return r.code === 0 ? (JSON.parse(r.stdout) as Json) : undefined;
  };
  const ready = (n: Json | undefined): Json | undefined => n?.status?.conditions?.find((x: Json) => x.type === 'Ready');

  void it('marks a silent node Unknown with the unreachable taints, and clears them when the agent returns', async () => {
    const first = await startAgent(c, { nodeName: 'lifecycle-node' });
    try {
      await waitFor('Ready', async () => (ready(await node('lifecycle-node'))?.status === 'True' ? true : undefined));
      first.agent.api!.stop(); // the agent goes silent: no status, no lease
      const silent = await waitFor('Unknown', async () => {
        const n = await node('lifecycle-node');
        return ready(n)?.status === 'Unknown' && (n!.spec.taints ?? []).length === 2 ? n : undefined;
      }, 20_000);
      for (const type of ['Ready', 'MemoryPressure', 'DiskPressure', 'PIDPressure']) {
        const cond = silent.status.conditions.find((x: Json) => x.type === type);
        assert.equal(cond.status, 'Unknown', type);
        assert.equal(cond.reason, 'NodeStatusUnknown');
        assert.equal(cond.message, 'Kubelet stopped posting node status.');
      }
      const taints = silent.spec.taints.map((t: Json) => `${t.key}:${t.effect}${t.timeAdded ? '+time' : ''}`).sort();
      assert.deepEqual(taints, ['node.kubernetes.io/unreachable:NoExecute+time', 'node.kubernetes.io/unreachable:NoSchedule']);
      const table = await c.kubectl(['get', 'nodes', 'lifecycle-node', '--no-headers']);
      assert.match(table.stdout, /lifecycle-node\s+NotReady\s/);
    } finally {
      await first.stop();
    }
    const second = await startAgent(c, { nodeName: 'lifecycle-node' });
    try {
      const back = await waitFor('Ready again without taints', async () => {
        const n = await node('lifecycle-node');
        return ready(n)?.status === 'True' && (n!.spec.taints ?? []).length === 0 ? n : undefined;
      }, 20_000);
      assert.equal(ready(back)!.reason, 'KubeletReady');
    } finally {
      await second.stop();
    }
  });

  void it('computes conditions and taints as the controller does', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    const never = unknownConditions({ metadata: { creationTimestamp: '2025-12-31T00:00:00Z' }, status: {} }, now)!;
    assert.deepEqual(never.map((x) => `${x.type}:${x.status}:${x.reason}`), [
      'Ready:Unknown:NodeStatusNeverUpdated',
      'MemoryPressure:Unknown:NodeStatusNeverUpdated',
      'DiskPressure:Unknown:NodeStatusNeverUpdated',
      'PIDPressure:Unknown:NodeStatusNeverUpdated',
    ]);
    assert.equal(unknownConditions({ status: { conditions: never } }, now), null, 'already Unknown: no change');
    const notReady = { spec: { taints: [{ key: 'other', effect: 'NoSchedule' }] }, status: { conditions: [{ type: 'Ready', status: 'False' }] } };
    assert.deepEqual(reconcileTaints(notReady, now)!.map((t) => `${t.key}:${t.effect}`), [
      'other:NoSchedule',
      'node.kubernetes.io/not-ready:NoSchedule',
      'node.kubernetes.io/not-ready:NoExecute',
    ]);
    assert.equal(reconcileTaints({ spec: {}, status: { conditions: [{ type: 'Ready', status: 'True' }] } }, now), null);
  });
});
