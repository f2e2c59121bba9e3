// Pod workers (kubelet's pkg/kubelet/pod_workers.go): one serial worker per pod UID, so that the
// sync, termination and cleanup of a pod never overlap, while different pods proceed in parallel.
//
// Lifecycle of a worker, one way only:
//   syncing      the pod should run: every update, runtime event, back-off end and periodic resync
//                runs PodLifecycle.syncPod; when the pod reaches Succeeded/Failed its volumes are
//                released and it becomes
//   terminated   (nothing runs; the status stays visible) — or, once the pod is deleted:
//   terminating  PodLifecycle.terminatePod with the grace period, then cleanupPod; the worker is
//                then forgotten.
// Requests that arrive while a pass runs are folded into one more pass with the newest pod.
import type { PodLifecycle } from './podsync.js';
import type { Pod } from './types.js';
import { gracePeriodOf } from './types.js';

export type PodWorkerState = 'syncing' | 'terminating' | 'terminated';

export type WorkType = 'ADD' | 'UPDATE' | 'DELETE' | 'SYNC';

export interface PodWorkersOptions {
  /** Delay before retrying a pass that threw (kubelet: 10 s). */
  errorBackoffMs?: number;
  onError?: (pod: Pod, err: unknown) => void;
  onStateChange?: (pod: Pod, state: PodWorkerState) => void;
  /**
   * Called once a deleted pod's containers are stopped and before its cleanup (its final status is
   * still in the status manager): API mode posts that status and deletes the pod on the server.
   */
  beforeCleanup?: (pod: Pod) => Promise<void>;
}

interface Worker {
  pod: Pod;
  state: PodWorkerState;
  /** Set when the pod was deleted; the grace period to give its containers. */
  deleteGrace?: number;
  running?: Promise<void>;
  dirty: boolean;
  timer?: NodeJS.Timeout;
}

export class PodWorkers {
  private readonly workers = new Map<string, Worker>();

  constructor(
    private readonly lifecycle: PodLifecycle,
    private readonly options: PodWorkersOptions = {},
  ) {}

  /**
   * Hands the worker of `pod.metadata.uid` new work. ADD and UPDATE replace the pod the worker syncs
   * (ignored once it is terminating); DELETE starts termination with `gracePeriodSeconds`, by default
   * the pod's terminationGracePeriodSeconds; SYNC asks for one more pass. The worker keeps the pod object
   * it is given: the caller hands it over and does not change it afterwards (the merge's updates are
   * its own read-only copies, never changed once returned), so no copy is made here.
   */
  update(type: WorkType, pod: Pod, gracePeriodSeconds?: number): void {
    const uid = pod.metadata.uid;
    let w = this.workers.get(uid);
    if (!w) {
      if (type === 'DELETE' || type === 'SYNC') return;
      w = { pod, state: 'syncing', dirty: false };
      this.workers.set(uid, w);
    }
    if (type === 'DELETE') {
      const grace = gracePeriodSeconds ?? gracePeriodOf(pod);
      w.deleteGrace = w.deleteGrace === undefined ? grace : Math.min(w.deleteGrace, grace);
    } else if ((type === 'ADD' || type === 'UPDATE') && w.deleteGrace === undefined) {
      w.pod = pod;
    }
    if (type === 'DELETE' && pod.metadata.deletionTimestamp !== undefined) w.pod = pod;
    this.kick(w);
  }

  /** Asks the worker of a pod UID for one more pass (runtime events, periodic resync). */
  sync(uid: string): void {
    const w = this.workers.get(uid);
    if (w) this.kick(w);
  }

  /** One more pass for every worker. */
  syncAll(): void {
    for (const w of this.workers.values()) this.kick(w);
  }

  state(uid: string): PodWorkerState | undefined {
    return this.workers.get(uid)?.state;
  }

  /** Whether the pod of a worker was deleted (kubelet's podSyncStatus IsDeleted). */
  deleted(uid: string): boolean {
    return this.workers.get(uid)?.deleteGrace !== undefined;
  }

  uids(): string[] {
    return [...this.workers.keys()];
  }

  /** Deletes every pod (each with its own grace period unless one is given) and waits until all are gone. */
  async terminateAll(gracePeriodSeconds?: number): Promise<void> {
    for (const w of [...this.workers.values()]) this.update('DELETE', w.pod, gracePeriodSeconds);
    await this.idle();
  }

  /** Resolves when no worker has a pass running or queued (timers for later passes do not count). */
  async idle(): Promise<void> {
    for (;;) {
      const running = [...this.workers.values()].map((w) => w.running).filter((p): p is Promise<void> => p !== undefined);
      if (running.length === 0) return;
      await Promise.all(running);
    }
  }

  private kick(w: Worker): void {
    w.dirty = true;
    if (w.running) return;
    w.running = this.loop(w).finally(() => {
      w.running = undefined;
    });
  }

  private async loop(w: Worker): Promise<void> {
    while (w.dirty) {
      w.dirty = false;
      clearTimeout(w.timer);
      w.timer = undefined;
      try {
        await this.pass(w);
      } catch (err) {
        this.options.onError?.(w.pod, err);
        this.later(w, this.options.errorBackoffMs ?? 10_000);
      }
    }
  }

  private async pass(w: Worker): Promise<void> {
    const uid = w.pod.metadata.uid;
    if (w.deleteGrace !== undefined) {
      this.setState(w, 'terminating');
      await this.lifecycle.terminatePod(w.pod, w.deleteGrace);
      await this.options.beforeCleanup?.(w.pod).catch((err: unknown) => this.options.onError?.(w.pod, err));
      await this.lifecycle.cleanupPod(w.pod);
      this.setState(w, 'terminated');
      w.dirty = false;
      this.workers.delete(uid);
      return;
    }
    if (w.state !== 'syncing') return;
    const result = await this.lifecycle.syncPod(w.pod);
    if (result.terminal) {
      await this.lifecycle.terminatePod(w.pod, 0);
      await this.lifecycle.releaseVolumes?.(w.pod);
      this.setState(w, 'terminated');
    } else if (result.requeueAfterMs !== undefined) {
      this.later(w, result.requeueAfterMs);
    }
  }

  private later(w: Worker, ms: number): void {
    clearTimeout(w.timer);
    w.timer = setTimeout(() => {
      w.timer = undefined;
      if (this.workers.get(w.pod.metadata.uid) === w) this.kick(w);
    }, Math.max(0, ms));
    w.timer.unref();
  }

  private setState(w: Worker, state: PodWorkerState): void {
    if (w.state === state) return;
    w.state = state;
    this.options.onStateChange?.(w.pod, state);
  }
}
