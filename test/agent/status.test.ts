import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type * as rt from '../../src/agent/runtime/runtime.js';
import { buildPodStatus, type ContainerInstances, type WaitingReason } from '../../src/agent/status.js';
import { staticPodFromManifest } from '../../src/agent/sources/manifest.js';
import type { Pod, PodStatus, RestartPolicy } from '../../src/agent/types.js';

const T0 = new Date('2024-05-01T10:00:00Z');
const T1 = new Date('2024-05-01T10:00:05Z');

function pod(restartPolicy: RestartPolicy, names = ['a', 'b'], init: string[] = []): Pod {
  const c = (name: string) => ({ name, image: 'img', command: ['true'] });
  return staticPodFromManifest(
    { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: { restartPolicy, containers: names.map(c), initContainers: init.map(c) } },
    'file',
    'n',
    '/m/p.yaml',
  );
}

function inst(name: string, state: rt.ContainerState, attempt = 0, exitCode?: number): rt.ContainerStatus {
  const s: rt.ContainerStatus = {
    id: `${name}${attempt}`,
    podSandboxId: 's',
    metadata: { name, attempt },
    image: 'img',
    state,
    createdAt: T0,
    labels: {},
    annotations: {},
    logPath: '/x',
  };
  if (state !== 'CONTAINER_CREATED') s.startedAt = T0;
  if (state === 'CONTAINER_EXITED') {
    s.finishedAt = T1;
    s.exitCode = exitCode ?? 0;
    s.reason = s.exitCode === 0 ? 'Completed' : 'Error';
  }
  return s;
}

function status(p: Pod, list: Record<string, ContainerInstances>, waiting: Record<string, WaitingReason> = {}, old?: PodStatus): PodStatus {
  return buildPodStatus({
    pod: p,
    instances: new Map(Object.entries(list)),
    waiting: new Map(Object.entries(waiting)),
    now: T1,
    ...(old ? { old } : {}),
  });
}

const cond = (s: PodStatus) => Object.fromEntries(s.conditions.map((c) => [c.type, c.status]));

void describe('pod status', () => {
  void it('is Pending with ContainerCreating before anything runs', () => {
    const s = status(pod('Always'), {});
    assert.equal(s.phase, 'Pending');
    assert.deepEqual(s.containerStatuses.map((c) => c.state), [{ waiting: { reason: 'ContainerCreating' } }, { waiting: { reason: 'ContainerCreating' } }]);
    assert.deepEqual(cond(s), { Initialized: 'True', Ready: 'False', ContainersReady: 'False', PodScheduled: 'True' });
    assert.equal(s.conditions.find((c) => c.type === 'Ready')?.message, 'containers with unready status: [a b]');
    assert.equal(s.qosClass, 'BestEffort');
  });

  void it('is Running and Ready when every container runs', () => {
    const s = status(pod('Always'), { a: { latest: inst('a', 'CONTAINER_RUNNING') }, b: { latest: inst('b', 'CONTAINER_RUNNING') } });
    assert.equal(s.phase, 'Running');
    assert.deepEqual(cond(s), { Initialized: 'True', Ready: 'True', ContainersReady: 'True', PodScheduled: 'True' });
    const a = s.containerStatuses[0]!;
    assert.deepEqual(a.state, { running: { startedAt: '2024-05-01T10:00:00Z' } });
    assert.equal(a.containerID, 'orch://a0');
    assert.equal(a.ready, true);
    assert.equal(a.restartCount, 0);
  });

  void it('reports terminated containers with exit code, reason and times; phase by restart policy', () => {
    const done = { a: { latest: inst('a', 'CONTAINER_EXITED', 0, 0) }, b: { latest: inst('b', 'CONTAINER_EXITED', 0, 2) } };
    const never = status(pod('Never'), done);
    assert.equal(never.phase, 'Failed');
    assert.deepEqual(never.containerStatuses[1]!.state, {
      terminated: { exitCode: 2, reason: 'Error', startedAt: '2024-05-01T10:00:00Z', finishedAt: '2024-05-01T10:00:05Z', containerID: 'orch://b0' },
    });
    assert.equal(never.containerStatuses[0]!.state.terminated?.reason, 'Completed');
    assert.equal(status(pod('OnFailure'), done).phase, 'Running');
    assert.equal(status(pod('Always'), done).phase, 'Running');
    const ok = { a: { latest: inst('a', 'CONTAINER_EXITED', 0, 0) }, b: { latest: inst('b', 'CONTAINER_EXITED', 0, 0) } };
    const succeeded = status(pod('OnFailure'), ok);
    assert.equal(succeeded.phase, 'Succeeded');
    assert.equal(succeeded.conditions.find((c) => c.type === 'Ready')?.reason, 'PodCompleted');
    assert.equal(status(pod('Never'), ok).phase, 'Succeeded');
  });

  void it('shows CrashLoopBackOff as waiting with the last termination and the restart count', () => {
    const s = status(
      pod('Always', ['a']),
      { a: { latest: inst('a', 'CONTAINER_EXITED', 3, 1), previous: inst('a', 'CONTAINER_EXITED', 2, 1) } },
      { a: { reason: 'CrashLoopBackOff', message: 'back-off 40s restarting failed container=a pod=p-n_default(u)' } },
    );
    const a = s.containerStatuses[0]!;
    assert.equal(a.state.waiting?.reason, 'CrashLoopBackOff');
    assert.equal(a.lastState.terminated?.exitCode, 1);
    assert.equal(a.lastState.terminated?.containerID, 'orch://a3');
    assert.equal(a.restartCount, 3);
    assert.equal(s.phase, 'Running');
  });

  void it('keeps lastTransitionTime while a condition keeps its status', () => {
    const p = pod('Always', ['a']);
    const first = status(p, {});
    const later = buildPodStatus({ pod: p, instances: new Map(), waiting: new Map(), old: first, now: new Date('2024-05-01T11:00:00Z') });
    assert.equal(later.conditions[0]!.lastTransitionTime, first.conditions[0]!.lastTransitionTime);
    assert.equal(later.startTime, first.startTime);
    const running = buildPodStatus({
      pod: p,
      instances: new Map([['a', { latest: inst('a', 'CONTAINER_RUNNING') }]]),
      waiting: new Map(),
      old: first,
      now: new Date('2024-05-01T11:00:00Z'),
    });
    assert.equal(running.conditions.find((c) => c.type === 'Ready')?.lastTransitionTime, '2024-05-01T11:00:00Z');
  });

  void it('waits for init containers: Pending, PodInitializing, Initialized False', () => {
    const p = pod('Always', ['a'], ['init']);
    const s = status(p, { init: { latest: inst('init', 'CONTAINER_RUNNING') } });
    assert.equal(s.phase, 'Pending');
    assert.equal(s.containerStatuses[0]!.state.waiting?.reason, 'PodInitializing');
    assert.equal(s.conditions.find((c) => c.type === 'Initialized')?.status, 'False');
    assert.equal(s.initContainerStatuses?.[0]?.state.running?.startedAt, '2024-05-01T10:00:00Z');
    const failed = status(pod('Never', ['a'], ['init']), { init: { latest: inst('init', 'CONTAINER_EXITED', 0, 1) } });
    assert.equal(failed.phase, 'Failed');
  });
});
