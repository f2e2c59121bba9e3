// The status manager (kubelet's pkg/kubelet/status): the one place that holds the latest status of
// every pod the agent runs. Pod workers write it after each sync; readers (the agent's HTTP server,
// tests) read copies; status posting (status-sync.ts) and listeners see the stored entry itself,
// read only, with its JSON computed once (no copy per reader on the path every pod start takes).
// Writers hand their objects over (the pod workers' pod, a status built for the call) and never change
// them afterwards, so nothing is copied on the way in either.
import type { Pod, PodStatus } from './types.js';

export interface PodStatusEntry {
  pod: Pod;
  status: PodStatus;
}

/** An entry as stored: never to be changed by whoever reads it. */
export interface StoredStatus extends Readonly<PodStatusEntry> {
  /** JSON.stringify(status), computed once. */
  readonly json: string;
}

/** Hears of each change; `entry` is the stored one (read only), undefined once the pod is removed. */
export type StatusListener = (uid: string, entry: StoredStatus | undefined) => void;

export class StatusManager {
  private readonly entries = new Map<string, StoredStatus>();
  private readonly listeners = new Set<StatusListener>();

  /**
   * Records a pod's status; listeners hear about it only when it changed. The pod and the status are
   * kept as given (not copied): the caller must not change either afterwards.
   */
  setPodStatus(pod: Pod, status: PodStatus): void {
    const uid = pod.metadata.uid;
    const json = JSON.stringify(status);
    if (this.entries.get(uid)?.json === json) return;
    const entry: StoredStatus = { pod, status, json };
    this.entries.set(uid, entry);
    this.notify(uid, entry);
  }

  /** The stored entry itself (no copy: read only), for readers on the hot path (status posting). */
  peek(uid: string): StoredStatus | undefined {
    return this.entries.get(uid);
  }

  getPodStatus(uid: string): PodStatus | undefined {
    const e = this.entries.get(uid);
    return e ? structuredClone(e.status) : undefined;
  }

  /** One pod's entry (a copy), or undefined. */
  getEntry(uid: string): PodStatusEntry | undefined {
    const e = this.entries.get(uid);
    return e ? { pod: structuredClone(e.pod), status: structuredClone(e.status) } : undefined;
  }

  /** The UIDs of every pod with a status. */
  uids(): string[] {
    return [...this.entries.keys()];
  }

  /** Every pod with a status, keyed by UID. */
  all(): Map<string, PodStatusEntry> {
    return new Map([...this.entries].map(([k, v]) => [k, { pod: structuredClone(v.pod), status: structuredClone(v.status) }]));
  }

  /** Forgets a pod (after it was deleted and cleaned up). */
  removePod(uid: string): void {
    if (this.entries.delete(uid)) this.notify(uid, undefined);
  }

  /** Subscribes; returns the unsubscribe function. */
  onChange(listener: StatusListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private notify(uid: string, entry: StoredStatus | undefined): void {
    for (const l of this.listeners) {
      try {
        l(uid, entry);
      } catch {
        // a listener's failure is its own
      }
    }
  }
}
