/**
 * Watch delivery for a store that owns its log (the embedded store).
 *
 * Every write publishes exactly one event, so the events of revisions (floor, newest] sit in a ring at index
 * `revision - floor - 1`. Watchers pull: a watcher that is nearly caught up takes its events from the ring; one
 * that fell further behind reads them from the log on disk. Nothing is queued per watcher beyond one batch, so
 * a watcher that stops reading costs no memory, and catches up from the log when it reads again.
 */
import { StorageError, errors } from './errors.js';
import type { Watch, WatchEvent } from './interface.js';

const BATCH = 1000;

export class EventLog {
  private ring: WatchEvent[] = [];
  private head = 0;
  private bytes = 0;
  /** Revision just before the oldest event kept in the ring. */
  private floorRev: number;
  private readonly waiters = new Set<() => void>();
  private ended = false;

  constructor(
    private readonly maxEvents: number,
    private readonly maxBytes: number,
    currentRevision: number,
  ) {
    this.floorRev = currentRevision;
  }

  get floor(): number {
    return this.floorRev;
  }

  get closed(): boolean {
    return this.ended;
  }

  /** Records the event of the newest revision and wakes waiting watchers. */
  publish(event: WatchEvent): void {
    this.ring.push(event);
    this.bytes += eventSize(event);
    while (this.ring.length - this.head > this.maxEvents || (this.bytes > this.maxBytes && this.ring.length - this.head > 1)) {
      this.bytes -= eventSize(this.ring[this.head]!);
      this.ring[this.head] = undefined as unknown as WatchEvent;
      this.head++;
      this.floorRev++;
    }
    if (this.head > 4096 && this.head * 2 > this.ring.length) {
      this.ring = this.ring.slice(this.head);
      this.head = 0;
    }
    this.wake();
  }

  /** The event of revision `rev`, which must lie in (floor, newest]. */
  at(rev: number): WatchEvent | undefined {
    return this.ring[this.head + (rev - this.floorRev - 1)];
  }

  get newest(): number {
    return this.floorRev + (this.ring.length - this.head);
  }

  /** Resolves at the next publish or close. */
  waitForChange(): { promise: Promise<void>; cancel: () => void } {
    let resolve!: () => void;
    const promise = new Promise<void>((r) => (resolve = r));
    this.waiters.add(resolve);
    return { promise, cancel: () => this.waiters.delete(resolve) };
  }

  close(): void {
    this.ended = true;
    this.wake();
  }

  private wake(): void {
    if (this.waiters.size === 0) return;
    const ws = [...this.waiters];
    this.waiters.clear();
    for (const w of ws) w();
  }
}

function eventSize(e: WatchEvent): number {
  return 200 + e.kv.key.length + e.kv.value.byteLength + (e.prevKv ? e.prevKv.value.byteLength : 0);
}

export interface LogSource {
  compactedRevision(): number;
  currentRevision(): number;
  closed(): boolean;
  /** Matching events with revisions in (from, to], oldest first, at most `limit`. */
  readAfter(from: number, to: number, limit: number): WatchEvent[];
}

/** One watcher: pulls its events from the ring or the log, one batch at a time. */
export class LogWatch implements Watch, AsyncIterator<WatchEvent> {
  private batch: WatchEvent[] = [];
  private pos = 0;
  private lastRev: number;
  private done = false;
  private cancelWait: (() => void) | null = null;
  private wakeClose: (() => void) | null = null;
  /** A failure known when the watch was made (its start revision was compacted), thrown at the first read. */
  private failure: StorageError | null = null;

  constructor(
    private readonly log: EventLog,
    private readonly match: (key: string) => boolean,
    afterRevision: number,
    private readonly source: LogSource,
  ) {
    this.lastRev = afterRevision;
    const compacted = source.compactedRevision();
    if (afterRevision < compacted) this.failure = errors.compacted(afterRevision, compacted, source.currentRevision());
  }

  [Symbol.asyncIterator](): AsyncIterator<WatchEvent> {
    return this;
  }

  async next(): Promise<IteratorResult<WatchEvent>> {
    if (this.failure) {
      const err = this.failure;
      this.failure = null;
      this.done = true;
      throw err;
    }
    for (;;) {
      if (this.pos < this.batch.length) {
        const ev = this.batch[this.pos++]!;
        return { value: ev, done: false };
      }
      if (this.done) return { value: undefined, done: true };
      if (this.source.closed() || this.log.closed) {
        this.done = true;
        throw errors.closed();
      }
      this.fill();
      if (this.pos < this.batch.length) continue;
      await this.waitForChange();
    }
  }

  /** Reads the next batch after lastRev: from the ring when it still holds it, else from the log. */
  private fill(): void {
    this.batch = [];
    this.pos = 0;
    const newest = this.source.currentRevision();
    if (this.lastRev >= newest) return;
    if (this.lastRev >= this.log.floor) {
      const to = Math.min(newest, this.log.newest, this.lastRev + BATCH);
      for (let r = this.lastRev + 1; r <= to; r++) {
        const ev = this.log.at(r)!;
        if (this.match(ev.kv.key)) this.batch.push(ev);
      }
      this.lastRev = to;
      return;
    }
    if (this.lastRev < this.source.compactedRevision()) {
      this.done = true;
      throw errors.compacted(this.lastRev, this.source.compactedRevision(), newest);
    }
    const to = Math.min(newest, this.log.floor);
    const rows = this.source.readAfter(this.lastRev, to, BATCH);
    this.batch = rows;
    this.lastRev = rows.length === BATCH ? rows[rows.length - 1]!.kv.modRevision : to;
  }

  private async waitForChange(): Promise<void> {
    const { promise, cancel } = this.log.waitForChange();
    this.cancelWait = cancel;
    const closed = new Promise<void>((r) => (this.wakeClose = r));
    try {
      await Promise.race([promise, closed]);
    } finally {
      this.cancelWait = null;
      this.wakeClose = null;
    }
  }

  async return(): Promise<IteratorResult<WatchEvent>> {
    this.close();
    return { value: undefined, done: true };
  }

  /** While waiting for changes everything scanned (up to lastRev) has been handed out. */
  progress(): number | undefined {
    return this.cancelWait !== null && !this.done ? this.lastRev : undefined;
  }

  close(): void {
    this.done = true;
    this.batch = [];
    this.pos = 0;
    this.cancelWait?.();
    this.wakeClose?.();
  }
}

