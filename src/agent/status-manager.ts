// The status manager (kubelet's pkg/kubelet/status): the one place that holds the latest status of
// every pod the agent runs. Pod workers write it after each sync; readers (the agent's future HTTP
// server, tests) read copies. For now it lives in memory only; pushing statuses to the API server
// (in the background, rate-limited, with mirror pods for static pods) is a later step.
import type { Pod, PodStatus } from './types.js';

export interface PodStatusEntry {
  pod: Pod;
  status: PodStatus;
}

export type StatusListener = (uid: string, entry: PodStatusEntry | undefined) => void;

export class StatusManager {
  private readonly entries = new Map<string, PodStatusEntry>();
  private readonly listeners = new Set<StatusListener>();

  /** Records a pod's status (a copy is kept); listeners hear about it only when it changed. */
  setPodStatus(pod: Pod, status: PodStatus): void {
    const uid = pod.metadata.uid;
    const old = this.entries.get(uid);
    if (old && JSON.stringify(old.status) === JSON.stringify(status)) return;
    const entry = { pod: structuredClone(pod), status: structuredClone(status) };
    this.entries.set(uid, entry);
    this.notify(uid, entry);
  }

  getPodStatus(uid: string): PodStatus | undefined {
    const e = this.entries.get(uid);
    return e ? structuredClone(e.status) : undefined;
  }

  /** One pod's entry (a copy), or undefined. */
  getEntry(uid: string): PodStatusEntry | undefined {
    const e = this.entries.get(uid);
    return e ? structuredClone(e) : undefined;
  }

  /** The UIDs of every pod with a status. */
  uids(): string[] {
    return [...this.entries.keys()];
  }

  /** Every pod with a status, keyed by UID. */
  all(): Map<string, PodStatusEntry> {
    return new Map([...this.entries].map(([k, v]) => [k, structuredClone(v)]));
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

  private notify(uid: string, entry: PodStatusEntry | undefined): void {
    for (const l of this.listeners) {
      try {
        l(uid, entry ? structuredClone(entry) : undefined);
      } catch {
        // a listener's failure is its own
      }
    }
  }
}
