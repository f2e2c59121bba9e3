// End to end through kubectl: node-pressure eviction on a threshold that is always crossed
// (memory.available<100Ti): MemoryPressure on the Node, pods evicted one per monitoring pass in
// Kubernetes' order with kubelet's status and message, and BestEffort pods refused at admission.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { parseThresholds } from '../../src/agent/eviction.js';
import { parseDuration } from '../../src/util/flags.js';
import { startCluster, type TestCluster } from '../helpers/cluster.js';
import { startAgent, type TestAgent } from '../helpers/agent.js';
import { waitFor } from '../agent/runtime-contract.js';

type Json = Record<string, any>;

void describe('orchlet eviction (kubectl)', () => {
  let c: TestCluster;
  let a: TestAgent | undefined;
  const node = `evict-${process.pid}`;
  const kubectlJSON = async (args: string[]): Promise<Json | undefined> => {
    const r = await c.kubectl([...args, '-o', 'json']);
    return r.code === 0 ? (JSON.parse(r.stdout) as Json) : undefined;
  };
  const pod = (name: string, memoryRequest: string | undefined, priority?: number): Json => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default' },
    spec: {
      nodeName: node,
      terminationGracePeriodSeconds: 30,
      // The Priority admission plugin sets spec.priority from the class (p1000 is made in before()).
      ...(priority ? { priorityClassName: `p${priority}` } : {}),
      containers: [
        { name: 'main', image: 'busybox', command: ['sleep', '600'], ...(memoryRequest ? { resources: { requests: { memory: memoryRequest } } } : {}) },
      ],
    },
  });

  before(async () => {
    c = await startCluster();
    const r = await c.kubectl(['create', 'priorityclass', 'p1000', '--value=1000']);
    assert.equal(r.code, 0, r.stderr);
  });
  after(async () => {
    await a?.stop();
    await c?.stop();
  });

  void it('reports MemoryPressure and evicts pods in kubelet order: above request first, then by priority', async () => {
    // The pods exist before the agent starts, so they reach it in one list and are ranked together.
    const list = { apiVersion: 'v1', kind: 'List', items: [pod('low-fat', '1Gi', 0), pod('high-fat', '1Gi', 1000), pod('high-hog', '1Ki', 1000)] };
    const r = await c.kubectl(['create', '-f', '-'], { input: JSON.stringify(list) });
    assert.equal(r.code, 0, r.stderr);
    a = await startAgent(c, {
      nodeName: node,
      extra: {
        eviction: {
          thresholds: parseThresholds({ 'memory.available': '100Ti' }, {}, {}, {}, parseDuration),
          pressureTransitionPeriodMs: 60_000,
          maxPodGracePeriodSeconds: 0,
          monitoringPeriodMs: 1500,
          // Ranking needs each pod's usage: the first pass waits until the containers have started.
          firstPassDelayMs: 8000,
        },
      },
    });
    const agent = a;
    await waitFor('the three pods Running before the first eviction pass', async () => {
      const l = await kubectlJSON(['get', 'pods']);
      const running = (l?.items ?? []).filter((p: Json) => p.status?.phase === 'Running').length;
      return running === 3 || undefined;
    }, 20_000);
    assert.equal(agent.logs.filter((l) => l.includes('evicting pod')).length, 0, 'the pods ran before any eviction');
    const nodeObj = await waitFor('MemoryPressure on the node', async () => {
      const n = await kubectlJSON(['get', 'node', node]);
      return n?.status?.conditions?.find((x: Json) => x.type === 'MemoryPressure')?.status === 'True' ? n : undefined;
    }, 20_000);
    const mp = nodeObj.status.conditions.find((x: Json) => x.type === 'MemoryPressure');
    assert.equal(mp.reason, 'KubeletHasInsufficientMemory');
    assert.equal(mp.message, 'kubelet has insufficient memory available');

    const evicted = await waitFor('three evictions', () => {
      const order = agent.logs.filter((l) => l.includes('evicting pod')).map((l) => /evicting pod default\/(\S+)/.exec(l)?.[1]);
      return order.length >= 3 ? order : undefined;
    }, 30_000);
    assert.deepEqual(evicted, ['high-hog', 'low-fat', 'high-fat']);

    const hog = await waitFor('high-hog Failed', async () => {
      const p = await kubectlJSON(['get', 'pod', 'high-hog']);
      return p?.status?.phase === 'Failed' && p.status.containerStatuses?.[0]?.state?.terminated ? p : undefined;
    });
    assert.equal(hog.status.reason, 'Evicted');
    assert.match(hog.status.message, /^The node was low on resource: memory\. Container main was using \d+Ki, which exceeds its request of 1Ki\. $/);
    // a hard threshold gives grace 0: SIGTERM, then SIGKILL at once (sleep dies of the SIGTERM)
    assert.ok([137, 143].includes(hog.status.containerStatuses[0].state.terminated.exitCode), JSON.stringify(hog.status.containerStatuses[0]));
    const fat = await waitFor('low-fat Failed', async () => {
      const p = await kubectlJSON(['get', 'pod', 'low-fat']);
      return p?.status?.phase === 'Failed' ? p : undefined;
    });
    assert.equal(fat.status.message, 'The node was low on resource: memory. ');
    const ev = await waitFor('the Evicted event', async () => {
      const l = await kubectlJSON(['get', 'events', '--field-selector', 'involvedObject.name=high-hog']);
      return (l?.items as Json[] | undefined)?.find((e) => e.reason === 'Evicted');
    });
    assert.equal(ev.type, 'Warning');
  });

  void it('refuses BestEffort pods at admission under memory pressure (reason Evicted)', async () => {
    const r = await c.kubectl(['create', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [pod('besteffort', undefined)] }) });
    assert.equal(r.code, 0, r.stderr);
    const p = await waitFor('besteffort refused', async () => {
      const x = await kubectlJSON(['get', 'pod', 'besteffort']);
      return x?.status?.phase === 'Failed' ? x : undefined;
    });
    assert.equal(p.status.reason, 'Evicted');
    assert.equal(p.status.message, 'Pod The node had condition: [MemoryPressure]. ');
  });
});
