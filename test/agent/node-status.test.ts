// Pure parts of API-server mode: the Node orchlet registers, its allocatable and conditions, and the
// CRI log reading of /containerLogs.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { allocatableOf, capacityOf, initialNode, nodeConditions, nodeStatusChanged, parseTaints, type HostFacts, type NodeSettings } from '../../src/agent/node/nodestatus.js';
import { logContainerID, streamLog, tailStart } from '../../src/agent/server/logs.js';
import { logOptionsFromQuery } from '../../src/agent/server/server.js';

const host: HostFacts = {
  hostname: 'h1', cpus: 4, memoryBytes: 8 * 1024 ** 3, rootFsBytes: 100 * 1024 ** 3,
  machineID: 'm', systemUUID: 'U', bootID: 'b', kernelVersion: '6', osImage: 'Debian',
};
const settings: NodeSettings = {
  nodeName: 'h1', nodeIPs: ['127.0.0.1'], labels: { 'node.kubernetes.io/role': 'x' }, taints: parseTaints({ dedicated: 'gpu:NoSchedule', bare: ':NoExecute' }),
  registerSchedulable: false, providerID: 'p://1', maxPods: 50, reserved: [{ cpu: '500m', memory: '1Gi' }, { cpu: '250m' }],
  evictionHard: { 'memory.available': '100Mi', 'nodefs.available': '10%' }, port: 10250, containerRuntimeVersion: 'orch://0.1.0',
  kubeletVersion: 'v1.23.17', controllerManagedAttachDetach: true,
};

void describe('node status', () => {
  void it('registers with kubelet labels, taints and spec', () => {
    const n = initialNode(settings, host) as { metadata: { labels: Record<string, string>; annotations: Record<string, string> }; spec: Record<string, unknown> };
    assert.equal(n.metadata.labels['kubernetes.io/hostname'], 'h1');
    assert.equal(n.metadata.labels['beta.kubernetes.io/os'], process.platform);
    assert.equal(n.metadata.labels['node.kubernetes.io/role'], 'x');
    assert.equal(n.metadata.annotations['volumes.kubernetes.io/controller-managed-attach-detach'], 'true');
    assert.deepEqual(n.spec, {
      unschedulable: true,
      taints: [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }, { key: 'bare', effect: 'NoExecute' }, { key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule' }],
      providerID: 'p://1',
    });
  });

  void it('allocatable is capacity minus reservations and hard eviction thresholds', () => {
    assert.deepEqual(capacityOf(settings, host), { cpu: '4', 'ephemeral-storage': '104857600Ki', 'hugepages-1Gi': '0', 'hugepages-2Mi': '0', memory: '8388608Ki', pods: '50' });
    const a = allocatableOf(settings, host);
    assert.equal(a.cpu, '3250m');
    assert.equal(a.memory, `${8 * 1024 * 1024 - 1024 * 1024 - 100 * 1024}Ki`);
    assert.equal(a['ephemeral-storage'], '94371840Ki'); // 90% of 100Gi, whole Ki
  });

  void it('conditions keep their transition time while unchanged; heartbeats alone are no change', () => {
    const t0 = new Date('2026-01-01T00:00:00Z');
    const first = nodeConditions({ ready: false, notReadyReasons: ['runtime down'] }, undefined, t0);
    assert.deepEqual(first.at(-1), { type: 'Ready', status: 'False', lastHeartbeatTime: '2026-01-01T00:00:00Z', lastTransitionTime: '2026-01-01T00:00:00Z', reason: 'KubeletNotReady', message: 'runtime down' });
    const second = nodeConditions({ ready: true }, first, new Date('2026-01-01T00:00:10Z'));
    assert.equal(second[0]!.lastTransitionTime, '2026-01-01T00:00:00Z', 'MemoryPressure unchanged');
    assert.equal(second[3]!.lastTransitionTime, '2026-01-01T00:00:10Z', 'Ready changed');
    const third = nodeConditions({ ready: true }, second, new Date('2026-01-01T00:00:20Z'));
    assert.equal(nodeStatusChanged({ conditions: second }, { conditions: third }), false);
    assert.equal(nodeStatusChanged({ conditions: first }, { conditions: third }), true);
  });
});

void describe('/containerLogs reading', () => {
  void it('strips the CRI prefix, joins partial records, applies tail, since, limit and timestamps', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'orchlet-log-'));
    const path = join(dir, '0.log');
    await writeFile(
      path,
      [
        '2026-01-01T00:00:01.5Z stdout F one',
        '2026-01-01T00:00:02Z stderr P tw',
        '2026-01-01T00:00:02.1Z stderr F o',
        '2026-01-01T00:00:03Z stdout F three',
        '',
      ].join('\n'),
    );
    const read = async (o: Parameters<typeof streamLog>[1]): Promise<string> => {
      let out = '';
      await streamLog(path, o, { closed: false, write: async (c) => void (out += c) }, async () => false);
      return out;
    };
    try {
      assert.equal(await read({}), 'one\ntwo\nthree\n');
      assert.equal(await read({ tailLines: 1 }), 'three\n');
      assert.equal(await read({ tailLines: 0 }), '');
      assert.equal(await read({ since: new Date('2026-01-01T00:00:02Z') }), 'two\nthree\n');
      assert.equal(await read({ limitBytes: 5 }), 'one\nt');
      assert.equal(await read({ timestamps: true, tailLines: 1 }), '2026-01-01T00:00:03Z three\n');
      assert.equal(await read({ follow: true }), 'one\ntwo\nthree\n', 'follow ends when the container is not running');
      assert.equal(tailStart(Buffer.from('a\nb\nc\n'), 2), 2);
      assert.equal(tailStart(Buffer.from('a\nb\nc\n'), 9), 0);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  void it('parses PodLogOptions from the query as kubelet does', () => {
    assert.equal(logOptionsFromQuery(new URLSearchParams('follow=maybe')), 'decode');
    assert.equal(logOptionsFromQuery(new URLSearchParams('sinceSeconds=0')), 'invalid');
    assert.equal(logOptionsFromQuery(new URLSearchParams('sinceSeconds=5&sinceTime=2026-01-01T00:00:00Z')), 'invalid');
    assert.deepEqual(logOptionsFromQuery(new URLSearchParams('tail=all&follow=1')), { previous: false, follow: true });
    assert.deepEqual(logOptionsFromQuery(new URLSearchParams('tail=3&limitBytes=10&previous=true')), { previous: true, tailLines: 3, limitBytes: 10 });
  });

  void it('picks the container whose log is read, or says why not', () => {
    const status = {
      containerStatuses: [
        { name: 'a', containerID: 'orch://1', state: { running: {} }, lastState: { terminated: { containerID: 'orch://0' } } },
        { name: 'b', state: { waiting: { reason: 'ContainerCreating' } }, lastState: {} },
      ],
    };
    assert.deepEqual(logContainerID(status, 'p', 'a', false), { id: 'orch://1' });
    assert.deepEqual(logContainerID(status, 'p', 'a', true), { id: 'orch://0' });
    assert.deepEqual(logContainerID(status, 'p', 'b', false), { error: 'container "b" in pod "p" is waiting to start: ContainerCreating' });
    assert.deepEqual(logContainerID(status, 'p', 'c', false), { error: 'container "c" in pod "p" is not available' });
  });
});
