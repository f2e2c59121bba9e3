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
  /**
   * Watchers waiting for an event, each woken only by an event of a key it matches (or by close): by their
   * bucket (see bucketOf), so that an event is offered to the watchers of its own resource only, and the
   * others (no bucket) offered every event.
   */
  private readonly waiters = new Map<string, Set<Waiter>>();
  private readonly anyBucket = new Set<Waiter>();
  private waiting = 0;
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
    if (this.waiting === 0) return;
    const key = event.kv.key;
    const bucket = bucketOf(key);
    const same = bucket === undefined ? undefined : this.waiters.get(bucket);
    if (same) this.wake(same, key);
    if (this.anyBucket.size > 0) this.wake(this.anyBucket, key);
  }

  private wake(set: Set<Waiter>, key: string): void {
    for (const w of set) {
      if (!w.match(key)) continue;
      set.delete(w);
      this.waiting--;
      w.wake();
    }
  }

  /** The event of revision `rev`, which must lie in (floor, newest]. */
  at(rev: number): WatchEvent | undefined {
    return this.ring[this.head + (rev - this.floorRev - 1)];
  }

  get newest(): number {
    return this.floorRev + (this.ring.length - this.head);
  }

  /**
   * Calls `waiter.wake` once, at the next publish of a key `waiter.match` accepts, or at close; until then
   * `remove` takes it back. A write of another key wakes no one (every kind's watch cache watches this one log).
   */
  waitForChange(waiter: Waiter): void {
    const set = this.setOf(waiter, true)!;
    if (set.has(waiter)) return;
    set.add(waiter);
    this.waiting++;
  }

  removeWaiter(waiter: Waiter): void {
    const set = this.setOf(waiter, false);
    if (!set?.delete(waiter)) return;
    this.waiting--;
    if (set.size === 0 && set !== this.anyBucket) this.waiters.delete(waiter.bucket!);
  }

  private setOf(waiter: Waiter, make: boolean): Set<Waiter> | undefined {
    if (waiter.bucket === undefined) return this.anyBucket;
    let set = this.waiters.get(waiter.bucket);
    if (!set && make) this.waiters.set(waiter.bucket, (set = new Set()));
    return set;
  }

  close(): void {
    this.ended = true;
    const ws = [...this.anyBucket];
    for (const set of this.waiters.values()) ws.push(...set);
    this.waiters.clear();
    this.anyBucket.clear();
    this.waiting = 0;
    for (const w of ws) w.wake();
  }
}

export interface Waiter {
  match(key: string): boolean;
  wake(): void;
  /** The bucket of every key `match` accepts (see watchBucket), or undefined when they have none in common. */
  readonly bucket: string | undefined;
}

/**
 * Keys up to and including their third '/' (the resource's root, '/registry/pods/'), or undefined when they have
 * fewer. Two keys of different buckets are never in one watch's range, unless its range is wider than a bucket.
 */
function bucketOf(key: string): string | undefined {
  const a = key.indexOf('/', 1);
  const b = a < 0 ? -1 : key.indexOf('/', a + 1);
  return b < 0 ? undefined : key.slice(0, b + 1);
}

/**
 * The bucket of a watch of one key, or of every key under a prefix: the key's (a key under the prefix has the
 * same first three '/'), or none when it has fewer than three.
 */
export function watchBucket(key: string): string | undefined {
  return bucketOf(key);
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
  /** Set while waiting for an event: resolves the wait (at a matching event, or close). */
  private wakeUp: (() => void) | null = null;
  /** Whether the wait has been ended and the watch has not read yet. */
  private woken = false;
  private readonly waiter: Waiter;
  /** A failure known when the watch was made (its start revision was compacted), thrown at the first read. */
  private failure: StorageError | null = null;

  constructor(
    private readonly log: EventLog,
    private readonly match: (key: string) => boolean,
    afterRevision: number,
    private readonly source: LogSource,
    bucket?: string,
  ) {
    this.lastRev = afterRevision;
    this.waiter = {
      match,
      bucket,
      wake: () => {
        this.woken = true;
        this.wakeUp?.();
      },
    };
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
      const before = this.lastRev;
      this.fill();
      if (this.pos < this.batch.length) continue;
      // A batch of events of other keys only: read on while there are more.
      if (this.lastRev > before && this.lastRev < this.source.currentRevision()) continue;
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
    this.woken = false;
    await new Promise<void>((resolve) => {
      this.wakeUp = resolve;
      this.log.waitForChange(this.waiter);
    });
    this.wakeUp = null;
    this.log.removeWaiter(this.waiter);
  }

  async return(): Promise<IteratorResult<WatchEvent>> {
    this.close();
    return { value: undefined, done: true };
  }

  /**
   * While waiting for changes everything scanned (up to lastRev) has been handed out, and until a matching
   * event wakes the watch every later event (up to the newest) is of another key: the watch is complete up to
   * the newest revision.
   */
  progress(): number | undefined {
    if (this.wakeUp === null || this.done) return undefined;
    if (!this.woken) {
      const newest = Math.min(this.log.newest, this.source.currentRevision());
      if (newest > this.lastRev) this.lastRev = newest;
    }
    return this.lastRev;
  }

  close(): void {
    this.done = true;
    this.batch = [];
    this.pos = 0;
    this.log.removeWaiter(this.waiter);
    this.waiter.wake();
  }
}

