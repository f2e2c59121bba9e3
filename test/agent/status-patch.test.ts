// The pod status PATCH body is kubelet 1.23's two-way strategic merge patch (PatchPodStatus): the
// expected bytes below are what strategicpatch.CreateTwoWayMergePatch gives for the same old and new
// v1.PodStatus (keys sorted as Go's encoder sorts a map's, conditions merged by type with
// $setElementOrder, atomic containerStatuses sent whole, null for cleared fields, metadata.uid).
// Then status posting uses it: the base is the newest status the agent knows (its last PATCH's
// answer or the pod source's copy, by resourceVersion), and an empty patch is not sent.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { ApiClient, type Json } from '../../src/agent/client/client.js';
import { StatusManager } from '../../src/agent/status-manager.js';
import { StatusSync, type StatusTarget } from '../../src/agent/status-sync.js';
import { podStatusPatch } from '../../src/agent/status-patch.js';
import type { Pod, PodStatus } from '../../src/agent/types.js';
import { waitFor } from './runtime-contract.js';

const T0 = '2026-01-01T00:00:00Z';
const T1 = '2026-01-01T00:00:05Z';
const T2 = '2026-01-01T00:01:00Z';

const cond = (type: string, status: string, t: string, reason?: string, message?: string): Json => ({
  type,
  status,
  lastProbeTime: null,
  lastTransitionTime: t,
  ...(reason !== undefined ? { reason } : {}),
  ...(message !== undefined ? { message } : {}),
});
const clone = <T>(v: T): T => structuredClone(v);

const pending: Json = {
  phase: 'Pending',
  conditions: [
    cond('Initialized', 'True', T0),
    cond('Ready', 'False', T0, 'ContainersNotReady', 'containers with unready status: [c]'),
    cond('ContainersReady', 'False', T0, 'ContainersNotReady', 'containers with unready status: [c]'),
    cond('PodScheduled', 'True', T0),
  ],
  hostIP: '127.0.0.1',
  startTime: T0,
  containerStatuses: [{ name: 'c', state: { waiting: { reason: 'ContainerCreating' } }, lastState: {}, ready: false, restartCount: 0, image: 'busybox', imageID: '', started: false }],
  qosClass: 'BestEffort',
};
const running: Json = {
  ...clone(pending),
  phase: 'Running',
  conditions: [cond('Initialized', 'True', T0), cond('Ready', 'True', T1), cond('ContainersReady', 'True', T1), cond('PodScheduled', 'True', T0)],
  podIP: '10.0.0.5',
  podIPs: [{ ip: '10.0.0.5' }],
  containerStatuses: [{ name: 'c', state: { running: { startedAt: T1 } }, lastState: {}, ready: true, restartCount: 0, image: 'busybox', imageID: 'sha256:1', containerID: 'orch://a', started: true }],
};

void describe('pod status patch (kubelet PatchPodStatus)', () => {
  void it('Pending -> Running: the changed conditions with $setElementOrder, containerStatuses whole, new scalars', () => {
    const body = podStatusPatch('u1', pending, running);
    assert.equal(
      JSON.stringify(body),
      '{"metadata":{"uid":"u1"},"status":{' +
        '"$setElementOrder/conditions":[{"type":"Initialized"},{"type":"Ready"},{"type":"ContainersReady"},{"type":"PodScheduled"}],' +
        '"conditions":[{"lastTransitionTime":"' + T1 + '","message":null,"reason":null,"status":"True","type":"Ready"},' +
        '{"lastTransitionTime":"' + T1 + '","message":null,"reason":null,"status":"True","type":"ContainersReady"}],' +
        '"containerStatuses":[{"containerID":"orch://a","image":"busybox","imageID":"sha256:1","lastState":{},"name":"c","ready":true,"restartCount":0,"started":true,"state":{"running":{"startedAt":"' + T1 + '"}}}],' +
        '"phase":"Running","podIP":"10.0.0.5","podIPs":[{"ip":"10.0.0.5"}]}}',
    );
  });

  void it('a restart: only containerStatuses (an atomic list), no conditions when they did not change', () => {
    const restarted = clone(running);
    restarted.containerStatuses = [
      {
        name: 'c', state: { running: { startedAt: T2 } },
        lastState: { terminated: { exitCode: 1, reason: 'Error', startedAt: T1, finishedAt: T2, containerID: 'orch://a' } },
        ready: true, restartCount: 1, image: 'busybox', imageID: 'sha256:1', containerID: 'orch://b', started: true,
      },
    ];
    assert.equal(
      JSON.stringify(podStatusPatch('u1', running, restarted)),
      '{"metadata":{"uid":"u1"},"status":{"containerStatuses":[{"containerID":"orch://b","image":"busybox","imageID":"sha256:1",' +
        '"lastState":{"terminated":{"containerID":"orch://a","exitCode":1,"finishedAt":"' + T2 + '","reason":"Error","startedAt":"' + T1 + '"}},' +
        '"name":"c","ready":true,"restartCount":1,"started":true,"state":{"running":{"startedAt":"' + T2 + '"}}}]}}',
    );
  });

  void it('termination: phase, the conditions that changed, terminated containerStatuses', () => {
    const done = clone(running);
    done.phase = 'Succeeded';
    done.conditions = [
      cond('Initialized', 'True', T0, 'PodCompleted'),
      cond('Ready', 'False', T2, 'PodCompleted'),
      cond('ContainersReady', 'False', T2, 'PodCompleted'),
      cond('PodScheduled', 'True', T0),
    ];
    done.containerStatuses = [
      {
        name: 'c', state: { terminated: { exitCode: 0, reason: 'Completed', startedAt: T1, finishedAt: T2, containerID: 'orch://a' } },
        lastState: {}, ready: false, restartCount: 0, image: 'busybox', imageID: 'sha256:1', containerID: 'orch://a', started: false,
      },
    ];
    assert.equal(
      JSON.stringify(podStatusPatch('u1', running, done)),
      '{"metadata":{"uid":"u1"},"status":{' +
        '"$setElementOrder/conditions":[{"type":"Initialized"},{"type":"Ready"},{"type":"ContainersReady"},{"type":"PodScheduled"}],' +
        '"conditions":[{"reason":"PodCompleted","type":"Initialized"},' +
        '{"lastTransitionTime":"' + T2 + '","reason":"PodCompleted","status":"False","type":"Ready"},' +
        '{"lastTransitionTime":"' + T2 + '","reason":"PodCompleted","status":"False","type":"ContainersReady"}],' +
        '"containerStatuses":[{"containerID":"orch://a","image":"busybox","imageID":"sha256:1","lastState":{},"name":"c","ready":false,"restartCount":0,"started":false,' +
        '"state":{"terminated":{"containerID":"orch://a","exitCode":0,"finishedAt":"' + T2 + '","reason":"Completed","startedAt":"' + T1 + '"}}}],' +
        '"phase":"Succeeded"}}',
    );
  });

  void it('nothing changed: no patch; omitempty-empty values count as absent', () => {
    assert.equal(podStatusPatch('u1', running, clone(running)), undefined);
    const withEmpties = { ...clone(running), message: '', reason: null, initContainerStatuses: [] };
    assert.equal(podStatusPatch('u1', running, withEmpties), undefined);
  });

  void it('first status of a new pod: every field whole; fields the server has and the agent dropped are cleared', () => {
    const created: Json = { phase: 'Pending', qosClass: 'BestEffort', message: 'old', reason: 'X' };
    const body = podStatusPatch('u1', created, pending)!;
    const st = body.status as Json;
    assert.deepEqual(Object.keys(st), ['conditions', 'containerStatuses', 'hostIP', 'message', 'reason', 'startTime']);
    assert.equal(st.message, null);
    assert.equal(st.reason, null);
    assert.deepEqual(st.conditions, (pending.conditions as Json[]).map((c) => Object.fromEntries(Object.entries(c).sort(([a], [b]) => (a < b ? -1 : 1)))));
    assert.equal(JSON.stringify(st.conditions).startsWith('[{"lastProbeTime":null,"lastTransitionTime"'), true, 'a new element whole, as Go marshals it');
  });

  void it("keeps conditions kubelet does not own and fields it does not set; deletes its own removed ones by key", () => {
    const gate = cond('example.com/gate', 'True', T0);
    const server: Json = { ...clone(running), conditions: [gate, ...clone(running.conditions as Json[])], nominatedNodeName: 'n2' };
    // the agent's status has no gate and no nominatedNodeName: mergePodStatus keeps them, in the server's order first
    assert.equal(podStatusPatch('u1', server, clone(running)), undefined);
    const noContainersReady = clone(running);
    noContainersReady.conditions = (running.conditions as Json[]).filter((c) => c.type !== 'ContainersReady');
    assert.equal(
      JSON.stringify(podStatusPatch('u1', server, noContainersReady)),
      '{"metadata":{"uid":"u1"},"status":{' +
        '"$setElementOrder/conditions":[{"type":"example.com/gate"},{"type":"Initialized"},{"type":"Ready"},{"type":"PodScheduled"}],' +
        '"conditions":[{"$patch":"delete","type":"ContainersReady"}]}}',
    );
    // the server's order differs from kubelet's: only the order directive
    const reordered: Json = { ...clone(running), conditions: [...(running.conditions as Json[])].reverse() };
    assert.equal(
      JSON.stringify(podStatusPatch('u1', reordered, running)),
      '{"metadata":{"uid":"u1"},"status":{"$setElementOrder/conditions":[{"type":"Initialized"},{"type":"Ready"},{"type":"ContainersReady"},{"type":"PodScheduled"}]}}',
    );
    // the agent no longer has conditions at all: the list is cleared
    const none = { ...clone(running) };
    delete none.conditions;
    assert.equal(JSON.stringify(podStatusPatch('u1', running, none)), '{"metadata":{"uid":"u1"},"status":{"conditions":null}}');
  });
});

void describe('status posting sends the patch from the newest known server status', () => {
  void it('diffs against the last PATCH answer until the pod source has a newer copy; sends nothing when the server has it', async () => {
    const bodies: Json[] = [];
    let answer: Json = {};
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        bodies.push(JSON.parse(Buffer.concat(chunks).toString('utf8')) as Json);
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify(answer));
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const client = new ApiClient({ server: `http://127.0.0.1:${(server.address() as { port: number }).port}` }, { qps: 0 });
    const statusManager = new StatusManager();
    let target: StatusTarget = { namespace: 'ns', name: 'p', uid: 'u1', current: { phase: 'Pending', qosClass: 'BestEffort' }, resourceVersion: '3' };
    const sync = new StatusSync({ client, statusManager, target: () => target, log: () => {} });
    sync.start();
    const pod = { metadata: { name: 'p', namespace: 'ns', uid: 'u1' }, spec: { containers: [] } } as unknown as Pod;
    const set = (s: Json): void => statusManager.setPodStatus(pod, s as unknown as PodStatus);
    try {
      answer = { metadata: { resourceVersion: '5' }, status: { phase: 'Running', qosClass: 'BestEffort' } };
      set({ phase: 'Running', qosClass: 'BestEffort' });
      await waitFor('post 1', () => (bodies.length >= 1 ? true : undefined));
      assert.deepEqual(bodies[0], { metadata: { uid: 'u1' }, status: { phase: 'Running' } });
      // the pod source still has rv 3 (Pending): the base is the answer (Running), so phase is not sent again
      answer = { metadata: { resourceVersion: '6' }, status: { phase: 'Running', qosClass: 'BestEffort', podIP: '10.0.0.1' } };
      set({ phase: 'Running', qosClass: 'BestEffort', podIP: '10.0.0.1' });
      await waitFor('post 2', () => (bodies.length >= 2 ? true : undefined));
      assert.deepEqual(bodies[1], { metadata: { uid: 'u1' }, status: { podIP: '10.0.0.1' } });
      // the pod source catches up past our answer (rv 10) with a message someone else set: it is the base now
      target = { ...target, current: { phase: 'Running', qosClass: 'BestEffort', podIP: '10.0.0.1', message: 'm' }, resourceVersion: '10' };
      set({ phase: 'Running', qosClass: 'BestEffort', podIP: '10.0.0.1', reason: 'R' });
      await waitFor('post 3', () => (bodies.length >= 3 ? true : undefined));
      assert.deepEqual(bodies[2], { metadata: { uid: 'u1' }, status: { message: null, reason: 'R' } });
      // a status the server already holds (the source's copy equals it): no request
      target = { ...target, current: { phase: 'Succeeded', qosClass: 'BestEffort' }, resourceVersion: '12' };
      set({ phase: 'Succeeded', qosClass: 'BestEffort' });
      await new Promise((r) => setTimeout(r, 100));
      sync.mark('u1');
      await new Promise((r) => setTimeout(r, 100));
      assert.equal(bodies.length, 3);
    } finally {
      sync.stop();
      client.close();
      server.closeAllConnections();
      server.close();
    }
  });
});
