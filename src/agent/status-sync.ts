// Posting pod status to the API server (the sending half of kubelet's status manager). The status
// manager says which pods' statuses changed; this keeps a set of dirty pods and sends each one's
// newest status with one strategic-merge PATCH of pods/<name>/status carrying metadata.uid, so a pod
// that was replaced under the same name is never written. The body is kubelet's two-way patch from
// the status the server holds (status-patch.ts): only what changed. The server's status is the newest
// of the pod source's copy and the answer to this agent's last PATCH (compared by resourceVersion),
// so a post that the watch has not brought back yet is not sent again; when the patch is empty
// nothing is sent. Changes that arrive while a pod waits for
// the rate limiter fold into one request: a worker takes its token first and only then reads the
// pod's status, so a pod is posted at most once per token, never once per transition. A status equal to the one last posted is not sent again. Every 10 s all pods are
// checked again (a failed post, a recreated mirror pod).
//
// Static pods are posted to their mirror pods (the mirror's uid and name); a static pod without a
// mirror yet stays dirty until the mirror appears.
import type { ApiClient, Json } from './client/client.js';
import { isConflict, isNotFound } from './client/client.js';
import { readStatusAnswer, type StatusAnswer } from './client/answers.js';
import { podStatusPatch } from './status-patch.js';
import type { StatusManager } from './status-manager.js';
import type { Pod } from './types.js';

export interface StatusTarget {
  namespace: string;
  name: string;
  uid: string;
  /** The status the server holds now (the base of the patch), if known. */
  current?: Json;
  /** The resourceVersion of the object `current` was read from, if known. */
  resourceVersion?: string;
}

export interface StatusSyncOptions {
  client: ApiClient;
  statusManager: StatusManager;
  /** Where the status of a pod goes; undefined: nowhere yet. */
  target: (pod: Pod) => StatusTarget | undefined;
  log: (level: 'info' | 'error', message: string) => void;
  /** Requests in flight at once (they still take limiter tokens one by one); default 32. */
  concurrency?: number;
  periodMs?: number;
}

export class StatusSync {
  private readonly dirty = new Set<string>();
  /** uid -> JSON of the last status posted, with the target uid. */
  private readonly posted = new Map<string, string>();
  /** uid -> the target's status as the answer to our last PATCH of it gave it (decoded when first needed). */
  private readonly answered = new Map<string, { uid: string; resourceVersion: string | undefined; status: () => Json | undefined }>();
  private readonly inFlight = new Map<string, Promise<void>>();
  private workers = 0;
  private timer: NodeJS.Timeout | undefined;
  private unsubscribe: (() => void) | undefined;
  private stopped = false;

  /**
   * Posts in flight at once. They are streams of the client's one HTTP/2 session, so one more costs no
   * connection: enough in flight that a pod that turns Running is posted at once rather than waiting
   * for a slot while the server works through the ones before it (the server then answers them in its
   * own order); the rate limiter, not this, sets the pace.
   */
  private readonly concurrency: number;

  constructor(private readonly o: StatusSyncOptions) {
    this.concurrency = o.concurrency ?? 32;
  }

  start(): void {
    this.unsubscribe = this.o.statusManager.onChange((uid, entry) => {
      if (entry) this.mark(uid);
      else {
        this.posted.delete(uid);
        this.answered.delete(uid);
      }
    });
    this.timer = setInterval(() => {
      for (const uid of this.o.statusManager.uids()) this.mark(uid);
    }, this.o.periodMs ?? 10_000);
    this.timer.unref();
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.timer);
    this.unsubscribe?.();
  }

  /** Asks for the status of `uid` to be (re)considered. */
  mark(uid: string): void {
    if (this.stopped) return;
    this.dirty.add(uid);
    while (this.workers < this.concurrency && this.dirty.size > this.workers) {
      this.workers++;
      void this.work().finally(() => this.workers--);
    }
  }

  /** Posts the status of `uid` now if it is not the one last posted; resolves when done. */
  async flush(uid: string): Promise<void> {
    await this.inFlight.get(uid);
    this.dirty.delete(uid);
    await this.send(uid);
  }

  /** Whether the pod has a status that differs from the one last posted (checked without a token). */
  private pending(uid: string): boolean {
    const entry = this.o.statusManager.peek(uid);
    if (!entry) return false;
    const target = this.o.target(entry.pod);
    if (!target) return false;
    return this.posted.get(uid) !== `${target.uid}:${entry.json}`;
  }

  private async work(): Promise<void> {
    while (!this.stopped) {
      const uid = this.next();
      if (uid === undefined) return;
      this.dirty.delete(uid);
      const p = this.send(uid);
      this.inFlight.set(uid, p);
      await p.finally(() => this.inFlight.delete(uid));
    }
  }

  /** The longest-waiting dirty pod with no post in flight (at most `concurrency` are skipped). */
  private next(): string | undefined {
    for (const uid of this.dirty) if (!this.inFlight.has(uid)) return uid;
    return undefined;
  }

  /** The newest status of the target the agent knows: the pod source's, or our last PATCH's answer if that is newer. */
  private serverStatus(uid: string, target: StatusTarget): Json {
    const a = this.answered.get(uid);
    if (a && a.uid === target.uid && (target.current === undefined || olderThan(target.resourceVersion, a.resourceVersion))) return a.status() ?? {};
    return target.current ?? {};
  }

  private async send(uid: string): Promise<void> {
    if (!this.pending(uid)) return;
    // Wait for the rate limiter before reading the status: what is posted is the newest one.
    const waited = await this.o.client.limiter.take();
    const entry = this.o.statusManager.peek(uid);
    const target = entry ? this.o.target(entry.pod) : undefined;
    if (!entry || !target) return;
    const sig = `${target.uid}:${entry.json}`;
    if (this.posted.get(uid) === sig) return;
    const body = podStatusPatch(target.uid, this.serverStatus(uid, target), entry.status as unknown as Json);
    if (body === undefined) {
      // the server already holds this status: nothing to send (the token is spent, as kubelet's GET spends one)
      this.posted.set(uid, sig);
      return;
    }
    try {
      // Only the answer's resourceVersion and status are read (its status decoded only if a later patch is based on it).
      const answer = await this.o.client.request<StatusAnswer>('PATCH', `/api/v1/namespaces/${target.namespace}/pods/${target.name}/status`, {
        body,
        contentType: 'application/strategic-merge-patch+json',
        tokenTaken: true,
        tokenWaitMs: waited,
        answer: readStatusAnswer,
      });
      this.posted.set(uid, sig);
      if (answer.hasStatus) this.answered.set(uid, { uid: target.uid, resourceVersion: answer.resourceVersion, status: answer.status });
    } catch (err) {
      if (isNotFound(err) || isConflict(err)) return; // the pod is gone or was replaced: nothing to write
      this.o.log('error', `posting the status of pod ${target.namespace}/${target.name}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
}

/** Whether resourceVersion `a` is older than `b` (both decimal, as every store here writes them; otherwise unknown: false). */
function olderThan(a: string | undefined, b: string | undefined): boolean {
  if (a === undefined || b === undefined) return a === undefined && b !== undefined;
  if (!/^\d+$/.test(a) || !/^\d+$/.test(b)) return false;
  return a.length !== b.length ? a.length < b.length : a < b;
}
