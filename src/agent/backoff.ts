// Crash-loop back-off per container (kubelet's flowcontrol.Backoff as used by kuberuntime): the
// first restart after an exit is immediate; each further one waits twice as long as the last,
// from 10 s up to 5 min, counted from the moment the container exited. An entry untouched for
// twice the maximum is forgotten (a container that ran 10 minutes starts again at 10 s).

export interface BackoffOptions {
  initialMs: number;
  maxMs: number;
  now?: () => number;
}

export const KUBELET_BACKOFF: BackoffOptions = { initialMs: 10_000, maxMs: 300_000 };

interface Entry {
  backoffMs: number;
  lastUpdate: number;
}

export class Backoff {
  private readonly entries = new Map<string, Entry>();
  private readonly now: () => number;

  constructor(private readonly options: BackoffOptions = KUBELET_BACKOFF) {
    this.now = options.now ?? Date.now;
  }

  /**
   * Whether a restart of `key` must still wait, given that its container exited at `exitedAt`
   * (ms); when it must, also how long (ms) from now.
   */
  inBackoff(key: string, exitedAt: number): { wait: false } | { wait: true; remainingMs: number; backoffMs: number } {
    const e = this.entries.get(key);
    const now = this.now();
    if (!e || this.expired(e, now)) return { wait: false };
    const remainingMs = exitedAt + e.backoffMs - now;
    return remainingMs > 0 ? { wait: true, remainingMs, backoffMs: e.backoffMs } : { wait: false };
  }

  /** Records a restart of `key` for a container that exited at `exitedAt`; returns the next back-off (ms). */
  next(key: string, exitedAt: number): number {
    const e = this.entries.get(key);
    const now = this.now();
    const backoffMs = !e || this.expired(e, now) ? this.options.initialMs : Math.min(e.backoffMs * 2, this.options.maxMs);
    this.entries.set(key, { backoffMs, lastUpdate: exitedAt });
    return backoffMs;
  }

  /** Forgets every key for which `drop` is true (e.g. the containers of a deleted pod). */
  forget(drop: (key: string) => boolean): void {
    for (const key of [...this.entries.keys()]) if (drop(key)) this.entries.delete(key);
  }

  private expired(e: Entry, now: number): boolean {
    return now - e.lastUpdate > 2 * this.options.maxMs;
  }
}

/** Back-off text as kubelet words it, e.g. "back-off 10s restarting failed container=app pod=web_default(uid)". */
export function backoffMessage(backoffMs: number, container: string, podName: string, namespace: string, uid: string): string {
  return `back-off ${formatDuration(backoffMs)} restarting failed container=${container} pod=${podName}_${namespace}(${uid})`;
}

/** Go's time.Duration.String for whole seconds and minutes: 10s, 1m20s, 5m0s; sub-second: 500ms. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${ms}ms`;
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  return `${h > 0 ? `${h}h` : ''}${m}m${s % 60}s`;
}
