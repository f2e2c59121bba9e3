// The prober manager (kubelet's pkg/kubelet/prober manager.go and worker.go): one worker per
// container probe, each on its own timer every periodSeconds, feeding a results cache keyed by
// container id. Called by the pod sync after every pass (update) and at cleanup (removePod);
// results are read back when the pod status is built and when the sync decides whether to kill a
// container that failed its liveness or startup probe.
//
// Worker rules, as kubelet's:
//   - a new container id resets the worker: readiness starts as failure, liveness as success,
//     startup as unknown (not started);
//   - nothing is probed while the container is not running or for initialDelaySeconds after it
//     started; liveness and readiness wait until the startup probe succeeded, the startup probe
//     stops then;
//   - a result changes only after failureThreshold consecutive failures or successThreshold
//     consecutive successes; every failure records an Unhealthy event ("<Type> probe failed: ...");
//   - after a liveness or startup failure the worker holds until the container is replaced.
// A change of any result calls onChange(uid) (the pod is synced again).
import type { EventSink } from './events.js';
import type { Logger } from '../util/log.js';
import { probeSpec, runProbe, type ProbeSpec, type ProbeType } from './probes.js';
import type { Runtime } from './runtime/runtime.js';
import type { Container, Pod } from './types.js';

type Result = 'success' | 'failure';

interface Worker {
  uid: string;
  pod: Pod;
  container: Container;
  type: ProbeType;
  spec: ProbeSpec;
  containerId?: string;
  startedAt?: number;
  podIP: string;
  lastResult?: Result;
  resultRun: number;
  onHold: boolean;
  timer?: NodeJS.Timeout;
  running: boolean;
}

export interface RunningContainer {
  name: string;
  id: string;
  startedAt: Date;
}

export interface ProberOptions {
  runtime: Runtime;
  events: EventSink;
  onChange: (uid: string) => void;
  /** For the probes' -v=4 lines. */
  logger?: Logger;
}

const TYPES: ProbeType[] = ['startup', 'liveness', 'readiness'];
const TITLE: Record<ProbeType, string> = { liveness: 'Liveness', readiness: 'Readiness', startup: 'Startup' };

export class ProbeManager {
  private readonly workers = new Map<string, Worker>();
  /** `${type}/${containerId}` -> result */
  private readonly results = new Map<string, Result>();

  constructor(private readonly o: ProberOptions) {}

  /** Reconciles the workers of a pod with its spec and its running containers (after a sync pass). */
  update(pod: Pod, running: RunningContainer[], podIP: string): void {
    const uid = pod.metadata.uid;
    const want = new Set<string>();
    for (const c of pod.spec.containers) {
      for (const type of TYPES) {
        const spec = probeSpec(c, type);
        if (!spec) continue;
        const key = `${uid}/${c.name}/${type}`;
        want.add(key);
        let w = this.workers.get(key);
        if (!w) {
          w = { uid, pod, container: c, type, spec, podIP, resultRun: 0, onHold: false, running: false };
          this.workers.set(key, w);
        }
        w.pod = pod;
        w.podIP = podIP;
        const r = running.find((x) => x.name === c.name);
        if (r?.id !== w.containerId) this.reset(w, r);
      }
    }
    for (const [key, w] of this.workers) {
      if (w.uid === uid && !want.has(key)) this.stopWorker(key, w);
    }
  }

  removePod(uid: string): void {
    for (const [key, w] of this.workers) if (w.uid === uid) this.stopWorker(key, w);
  }

  stopAll(): void {
    for (const [key, w] of this.workers) this.stopWorker(key, w);
  }

  hasProbe(uid: string, container: string, type: ProbeType): boolean {
    return this.workers.has(`${uid}/${container}/${type}`);
  }

  /** started and ready of a running container (kubelet's UpdatePodStatus). */
  readiness(uid: string, container: string, containerId: string): { started: boolean; ready: boolean } {
    const started = this.hasProbe(uid, container, 'startup') ? this.results.get(`startup/${containerId}`) === 'success' : true;
    if (!started) return { started, ready: false };
    const ready = this.hasProbe(uid, container, 'readiness') ? this.results.get(`readiness/${containerId}`) === 'success' : true;
    return { started, ready };
  }

  /** 'liveness' or 'startup' when the container failed that probe and must be killed. */
  failed(containerId: string): 'liveness' | 'startup' | undefined {
    if (this.results.get(`liveness/${containerId}`) === 'failure') return 'liveness';
    if (this.results.get(`startup/${containerId}`) === 'failure') return 'startup';
    return undefined;
  }

  /** The grace period a probe asks for when it kills the container (ProbeTerminationGracePeriod). */
  probeGrace(uid: string, container: string, type: 'liveness' | 'startup'): number | undefined {
    return this.workers.get(`${uid}/${container}/${type}`)?.spec.terminationGracePeriodSeconds;
  }

  private stopWorker(key: string, w: Worker): void {
    clearTimeout(w.timer);
    if (w.containerId) this.results.delete(`${w.type}/${w.containerId}`);
    this.workers.delete(key);
  }

  private reset(w: Worker, r: RunningContainer | undefined): void {
    clearTimeout(w.timer);
    w.timer = undefined;
    if (w.containerId) this.results.delete(`${w.type}/${w.containerId}`);
    w.lastResult = undefined;
    w.resultRun = 0;
    w.onHold = false;
    if (!r) {
      w.containerId = undefined;
      w.startedAt = undefined;
      return;
    }
    w.containerId = r.id;
    w.startedAt = r.startedAt.getTime();
    if (w.type === 'readiness') this.results.set(`readiness/${r.id}`, 'failure');
    else if (w.type === 'liveness') this.results.set(`liveness/${r.id}`, 'success');
    this.schedule(w, Math.max(0, w.startedAt + w.spec.initialDelaySeconds * 1000 - Date.now()));
  }

  private schedule(w: Worker, ms: number): void {
    clearTimeout(w.timer);
    w.timer = setTimeout(() => void this.tick(w), ms);
    w.timer.unref();
  }

  private async tick(w: Worker): Promise<void> {
    const key = `${w.uid}/${w.container.name}/${w.type}`;
    if (this.workers.get(key) !== w || w.containerId === undefined || w.running) return;
    const id = w.containerId;
    const next = (): void => {
      if (this.workers.get(key) === w && w.containerId === id) this.schedule(w, w.spec.periodSeconds * 1000);
    };
    if (w.onHold) return;
    if (w.type !== 'startup' && this.hasProbe(w.uid, w.container.name, 'startup') && this.results.get(`startup/${id}`) !== 'success') return next();
    if (w.type === 'startup' && this.results.get(`startup/${id}`) === 'success') return;
    w.running = true;
    let outcome;
    try {
      outcome = await runProbe(w.spec, { runtime: this.o.runtime, containerId: id, container: w.container, podIP: w.podIP, ...(this.o.logger ? { logger: this.o.logger } : {}) });
    } finally {
      w.running = false;
    }
    if (this.workers.get(key) !== w || w.containerId !== id) return;
    const result: Result = outcome.ok ? 'success' : 'failure';
    if (!outcome.ok) this.unhealthy(w, outcome.output);
    w.resultRun = w.lastResult === result ? w.resultRun + 1 : 1;
    w.lastResult = result;
    const threshold = result === 'failure' ? w.spec.failureThreshold : w.spec.successThreshold;
    if (w.resultRun >= threshold) {
      const rk = `${w.type}/${id}`;
      const before = this.results.get(rk);
      this.results.set(rk, result);
      if (result === 'failure' && w.type !== 'readiness') {
        w.onHold = true;
        w.resultRun = 0;
      }
      if (before !== result) this.o.onChange(w.uid);
    }
    next();
  }

  private unhealthy(w: Worker, output: string): void {
    const { namespace, name, uid } = w.pod.metadata;
    this.o.events.event(
      { kind: 'Pod', apiVersion: 'v1', namespace, name, uid, fieldPath: `spec.containers{${w.container.name}}` },
      'Warning',
      'Unhealthy',
      `${TITLE[w.type]} probe failed: ${output}`,
    );
  }
}
