// Pod status as pure functions of the pod, what the runtime reports and the previous status
// (kubelet's generateAPIPodStatus / getPhase / pkg/kubelet/status/generate.go). No I/O, no clock:
// callers pass `now`. Called by the pod sync after every pass; the result goes to the status
// manager.
import * as rt from './runtime/runtime.js';
import { rfc3339 } from './time.js';
import type {
  Container,
  ContainerState,
  ContainerStatus,
  Pod,
  PodCondition,
  PodConditionType,
  PodPhase,
  PodStatus,
} from './types.js';
import { restartPolicyOf } from './types.js';

export const CONTAINER_ID_SCHEME = 'orch';

/** What the runtime holds for one container of the pod: its newest instance and the one before. */
export interface ContainerInstances {
  latest?: rt.ContainerStatus;
  previous?: rt.ContainerStatus;
}

/** Why a container is not running although the sync wanted it to (CrashLoopBackOff, CreateContainerConfigError, ...). */
export interface WaitingReason {
  reason: string;
  message?: string;
}

export interface PodStatusInput {
  pod: Pod;
  /** By container name (init and regular containers share one namespace of names). */
  instances: ReadonlyMap<string, ContainerInstances>;
  /** By container name. */
  waiting: ReadonlyMap<string, WaitingReason>;
  old?: PodStatus;
  now: Date;
  hostIP?: string;
  /** The pod's own IP (a runtime with pod networking); the host IP otherwise. */
  podIP?: string;
  /** started and ready of a running container from its probes; unset: a running container is both. */
  probes?: Readiness;
  /** A final verdict that replaces the phase (eviction: Failed, reason Evicted, and its message). */
  verdict?: { phase: PodPhase; reason: string; message: string };
}

export type Readiness = (container: string, containerId: string) => { started: boolean; ready: boolean };

export function containerID(id: string): string {
  return `${CONTAINER_ID_SCHEME}://${id}`;
}

function terminatedState(s: rt.ContainerStatus): ContainerState {
  return {
    terminated: {
      exitCode: s.exitCode ?? 0,
      reason: s.reason ?? (s.exitCode === 0 ? 'Completed' : 'Error'),
      ...(s.message !== undefined ? { message: s.message } : {}),
      ...(s.startedAt ? { startedAt: rfc3339(s.startedAt) } : {}),
      ...(s.finishedAt ? { finishedAt: rfc3339(s.finishedAt) } : {}),
      containerID: containerID(s.id),
    },
  };
}

/** The API status of one container (kubelet's convertToAPIContainerStatuses, one entry). */
export function containerStatusOf(
  container: Container,
  inst: ContainerInstances | undefined,
  waiting: WaitingReason | undefined,
  probes?: Readiness,
): ContainerStatus {
  const latest = inst?.latest;
  const out: ContainerStatus = {
    name: container.name,
    state: { waiting: { reason: 'ContainerCreating' } },
    lastState: {},
    ready: false,
    restartCount: latest?.metadata.attempt ?? 0,
    image: container.image,
    imageID: latest?.imageRef ?? '',
    started: false,
  };
  if (latest) out.containerID = containerID(latest.id);
  if (latest?.state === 'CONTAINER_RUNNING') {
    out.state = { running: latest.startedAt ? { startedAt: rfc3339(latest.startedAt) } : {} };
    const r = probes?.(container.name, latest.id) ?? { started: true, ready: true };
    out.ready = r.ready;
    out.started = r.started;
  } else if (latest?.state === 'CONTAINER_EXITED') {
    out.state = terminatedState(latest);
  }
  if (inst?.previous?.state === 'CONTAINER_EXITED') out.lastState = terminatedState(inst.previous);
  if (waiting && !out.state.running) {
    if (out.state.terminated) out.lastState = out.state;
    out.state = { waiting: { reason: waiting.reason, ...(waiting.message !== undefined ? { message: waiting.message } : {}) } };
  }
  return out;
}

/** Whether every init container has completed successfully (vacuously true without any). */
export function initDone(initStatuses: readonly ContainerStatus[]): boolean {
  return initStatuses.every((s) => s.state.terminated?.exitCode === 0);
}

/** The pod phase (kubelet's getPhase) from its container statuses. */
export function podPhase(pod: Pod, initStatuses: readonly ContainerStatus[], statuses: readonly ContainerStatus[]): PodPhase {
  const policy = restartPolicyOf(pod);
  if (!initDone(initStatuses)) {
    const failedInit = initStatuses.some(
      (s) => (s.state.terminated && s.state.terminated.exitCode !== 0) || (s.state.waiting && s.lastState.terminated && s.lastState.terminated.exitCode !== 0),
    );
    return failedInit && policy === 'Never' ? 'Failed' : 'Pending';
  }
  let pending = 0;
  let running = 0;
  let stopped = 0;
  let succeeded = 0;
  for (const s of statuses) {
    if (s.state.running) running++;
    else if (s.state.terminated) {
      stopped++;
      if (s.state.terminated.exitCode === 0) succeeded++;
    } else if (s.lastState.terminated) stopped++;
    else pending++;
  }
  if (pending > 0) return 'Pending';
  if (running > 0) return 'Running';
  if (stopped > 0) {
    if (policy === 'Always') return 'Running';
    if (policy === 'OnFailure') return stopped === succeeded ? 'Succeeded' : 'Running';
    return stopped === succeeded ? 'Succeeded' : 'Failed';
  }
  return 'Pending';
}

function condition(
  type: PodConditionType,
  ok: boolean,
  old: PodStatus | undefined,
  now: Date,
  reason?: string,
  message?: string,
): PodCondition {
  const status = ok ? 'True' : 'False';
  const prev = old?.conditions?.find((c) => c.type === type);
  const c: PodCondition = {
    type,
    status,
    lastProbeTime: null,
    lastTransitionTime: prev && prev.status === status ? prev.lastTransitionTime : rfc3339(now),
  };
  if (!ok && reason !== undefined) c.reason = reason;
  if (!ok && message !== undefined) c.message = message;
  return c;
}

/** Conditions in kubelet's order: Initialized, Ready, ContainersReady, PodScheduled. */
export function podConditions(
  phase: PodPhase,
  initStatuses: readonly ContainerStatus[],
  statuses: readonly ContainerStatus[],
  old: PodStatus | undefined,
  now: Date,
): PodCondition[] {
  const incomplete = initStatuses.filter((s) => s.state.terminated?.exitCode !== 0).map((s) => s.name);
  const unready = statuses.filter((s) => !s.ready).map((s) => s.name);
  const completed = phase === 'Succeeded';
  let notReadyReason = 'ContainersNotReady';
  let notReadyMessage = `containers with unready status: [${unready.join(' ')}]`;
  if (completed) {
    notReadyReason = 'PodCompleted';
    notReadyMessage = '';
  } else if (incomplete.length > 0) {
    notReadyReason = 'ContainersNotInitialized';
    notReadyMessage = `containers with incomplete status: [${incomplete.join(' ')}]`;
  }
  const ready = !completed && incomplete.length === 0 && unready.length === 0;
  const msg = notReadyMessage === '' ? undefined : notReadyMessage;
  return [
    incomplete.length === 0 || completed
      ? condition('Initialized', true, old, now, completed ? 'PodCompleted' : undefined)
      : condition('Initialized', false, old, now, 'ContainersNotInitialized', `containers with incomplete status: [${incomplete.join(' ')}]`),
    condition('Ready', ready, old, now, notReadyReason, msg),
    condition('ContainersReady', ready, old, now, notReadyReason, msg),
    condition('PodScheduled', true, old, now),
  ];
}

/** BestEffort, Burstable or Guaranteed from the containers' resources (kubelet's qos.GetPodQOS, simplified to cpu and memory). */
export function qosClass(pod: Pod): string {
  const all = [...pod.spec.containers, ...(pod.spec.initContainers ?? [])];
  const res = all.map((c) => (c.resources ?? {}) as { requests?: Record<string, unknown>; limits?: Record<string, unknown> });
  const any = res.some((r) => Object.keys(r.requests ?? {}).length > 0 || Object.keys(r.limits ?? {}).length > 0);
  if (!any) return 'BestEffort';
  const guaranteed = res.every((r) =>
    ['cpu', 'memory'].every((k) => r.limits?.[k] !== undefined && (r.requests?.[k] === undefined || JSON.stringify(r.requests[k]) === JSON.stringify(r.limits[k]))),
  );
  return guaranteed ? 'Guaranteed' : 'Burstable';
}

/** The whole pod status. */
export function buildPodStatus(input: PodStatusInput): PodStatus {
  const { pod, instances, waiting, old, now } = input;
  // kubelet's convertToAPIContainerStatuses: a container the runtime no longer has (its dead instances
  // removed: the container deletor, the GC) keeps the terminated state it had
  const kept = (list: ContainerStatus[] | undefined, c: Container, inst: ContainerInstances | undefined): ContainerStatus | undefined => {
    if (inst?.latest !== undefined) return undefined;
    const prev = list?.find((s) => s.name === c.name);
    return prev?.state.terminated ? { ...prev, name: c.name, image: c.image, ready: false, started: false } : undefined;
  };
  const statusOf = (list: ContainerStatus[] | undefined, c: Container, probes?: Readiness): ContainerStatus => {
    const inst = instances.get(c.name);
    const w = waiting.get(c.name);
    const prev = kept(list, c, inst);
    if (!prev) return containerStatusOf(c, inst, w, probes);
    return w ? { ...prev, lastState: prev.state, state: { waiting: { reason: w.reason, ...(w.message !== undefined ? { message: w.message } : {}) } } } : prev;
  };
  const initStatuses = (pod.spec.initContainers ?? []).map((c) => statusOf(old?.initContainerStatuses, c));
  const statuses = pod.spec.containers.map((c) => statusOf(old?.containerStatuses, c, input.probes));
  if (!initDone(initStatuses)) {
    for (const s of statuses) if (s.state.waiting?.reason === 'ContainerCreating') s.state.waiting.reason = 'PodInitializing';
  }
  const phase = input.verdict?.phase ?? podPhase(pod, initStatuses, statuses);
  const status: PodStatus = {
    phase,
    conditions: podConditions(phase, initStatuses, statuses, old, now),
    startTime: old?.startTime ?? rfc3339(now),
    containerStatuses: statuses,
    qosClass: qosClass(pod),
  };
  if (initStatuses.length > 0) status.initContainerStatuses = initStatuses;
  // kubelet converts them as init containers: never ready (the prober skips them), no started field
  const ephemeral = (pod.spec.ephemeralContainers ?? []).map((c) => {
    const { started: _started, ...s } = statusOf(old?.ephemeralContainerStatuses, c);
    return { ...s, ready: false };
  });
  if (ephemeral.length > 0) status.ephemeralContainerStatuses = ephemeral;
  if (input.verdict) {
    status.reason = input.verdict.reason;
    status.message = input.verdict.message;
  }
  if (input.hostIP !== undefined) {
    status.hostIP = input.hostIP;
    status.podIP = input.hostIP; // process runtime: every pod shares the host's network
    status.podIPs = [{ ip: input.hostIP }];
  }
  if (input.podIP !== undefined) {
    status.podIP = input.podIP;
    status.podIPs = [{ ip: input.podIP }];
  }
  return status;
}

/** Whether the phase is terminal: nothing of the pod will run again. */
export function isTerminal(phase: PodPhase): boolean {
  return phase === 'Succeeded' || phase === 'Failed';
}
