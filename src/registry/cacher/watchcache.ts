/**
 * The watch cache of one stored resource, as Kubernetes 1.23's cacher: one storage watch per resource,
 * fanned out to every watcher; the resource's current state in memory; and a window of its recent events.
 *
 * The state keeps the stored bytes (KeyValue as storage gave them), never decoded objects: readers decode
 * what they answer with. Events of the window carry the objects decoded for the watchers they were
 * dispatched to, shared between those watchers (they must not change them).
 *
 * Life: start() lists the resource and watches it from the list's revision. A failed storage watch
 * (compaction, unavailability) lists again after a backoff: the window starts afresh at the new list's
 * revision and every watcher is ended, so that clients watch again (and re-list when they are too old),
 * as the cacher's terminateAllWatchers does. While it (re)lists the cache is not ready: readers go to storage.
 */
import { decodeStored, isStoredJSON } from '../storagecodec.js';
import { StorageError } from '../../storage/errors.js';
import type { KV, KeyValue, Watch as StorageWatch, WatchEvent as StorageEvent } from '../../storage/interface.js';
import type { KObject } from '../kind.js';

/** A change in the window: the key's value after it (kv; an empty value for a delete) and before it (prevKv). */
export interface CacheEvent {
  readonly type: 'put' | 'delete';
  readonly key: string;
  readonly rev: number;
  readonly kv: KeyValue;
  readonly prevKv: KeyValue | null;
  /** Decoded objects of the last decoder that asked (see decodedFor): shared, never to be changed. */
  decoder?: unknown;
  cur?: KObject | null;
  prev?: KObject | null;
  /**
   * The new object as decoded when its value was cached (protobuf or YAML storage), without resourceVersion:
   * the first decoder takes it over instead of decoding the value again. Dropped once the event is dispatched.
   */
  fresh?: KObject;
}

/** What the cache needs of a watcher: dispatch offers it every event, in revision order. */
export interface CacheSubscriber {
  /** Takes the event, or answers false when its buffer is full. */
  offer(ev: CacheEvent): boolean;
  /** Resolves once the buffer has room (or the watcher ended). */
  room(): Promise<void>;
  /** Ends the watch: the client's stream closes (it watches again, or re-lists). */
  terminate(): void;
}

export interface WatchCacheConfig {
  /** Root key of the resource (with the trailing slash). */
  prefix: string;
  /** Events kept in the window (the configured watch cache size). */
  capacity: number;
  /** Name for logs ('pods', 'deployments.apps'). */
  resource: string;
  /** The cached type as Kubernetes' metrics label it ('*core.Pod'); defaults to `resource`. */
  objectType?: string;
  log?: (message: string) => void;
  /** Wait before listing again after the storage watch failed (Kubernetes' reflector backs off about 1 s). */
  relistBackoffMs?: number;
}

/** Kubernetes' watchers time budget: 100 ms at most, refilled by 50 ms each second. */
const MAX_BUDGET_MS = 100;
const BUDGET_REFILL_PER_SECOND_MS = 50;

export class TooOldError extends Error {
  constructor(
    readonly requested: number,
    readonly oldest: number,
  ) {
    super(`too old resource version: ${requested} (${oldest})`);
  }
}

export class WatchCache {
  /** The resource's current state: key → value as stored. */
  private readonly state = new Map<string, KeyValue>();
  /** The window, oldest first; `floor` is the revision after which every event of the resource is in it. */
  private window: CacheEvent[] = [];
  private head = 0;
  private floorRev = 0;
  /** Revision the state is complete up to (the last event's, or the storage watch's progress). */
  private rev = 0;
  private lastEventRev = 0;
  private readyFlag = false;
  private stopped = false;
  private source: StorageWatch | null = null;
  private readonly subscribers = new Set<CacheSubscriber>();
  private readonly freshWaiters = new Set<() => void>();
  private running: Promise<void> | null = null;
  private firstList: { resolve: () => void; promise: Promise<void> } | null = null;
  private budgetMs = MAX_BUDGET_MS;
  private budgetAt = Date.now();
  private relistTimer: NodeJS.Timeout | undefined;
  private wakeRelist: (() => void) | null = null;
  /** Events handed to watchers (apiserver_watch_cache_events_dispatched_total). */
  dispatched = 0;
  /** Watchers ended because they did not take events in time. */
  terminatedSlow = 0;
  /** Consistent lists (no resourceVersion) answered from memory (reads.ts listConsistentFromCache). */
  consistentLists = 0;

  constructor(
    private readonly kv: Pick<KV, 'list' | 'watch' | 'currentRevision'>,
    readonly config: WatchCacheConfig,
  ) {}

  get ready(): boolean {
    return this.readyFlag;
  }

  get objectType(): string {
    return this.config.objectType ?? this.config.resource;
  }

  get capacity(): number {
    return this.config.capacity;
  }

  /** The revision the cache is complete up to, with the storage watch's progress when it reports it. */
  currentRevision(): number {
    if (this.readyFlag) {
      const p = this.source?.progress?.();
      if (p !== undefined && p > this.rev) this.rev = p;
    }
    return this.rev;
  }

  /** Whether the storage watch tells its progress while no event comes (the embedded store's does). */
  get reportsProgress(): boolean {
    return this.source?.progress !== undefined && this.source.progress() !== undefined;
  }

  /** The storage's newest revision (every resource's writes count). */
  storageRevision(): Promise<number> {
    return this.kv.currentRevision();
  }

  /** Starts caching; resolves after the first list (or when the first list failed: readers use storage). */
  start(): Promise<void> {
    if (!this.running) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => (resolve = r));
      this.firstList = { resolve, promise };
      this.running = this.run();
    }
    return this.firstList!.promise;
  }

  /** Lists again now, as after a failed storage watch: every watcher ends and the window starts afresh. */
  restart(): void {
    this.source?.close();
  }

  /** Stops the storage watch and ends every watcher. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.readyFlag = false;
    clearTimeout(this.relistTimer);
    this.wakeRelist?.();
    this.source?.close();
    this.terminateAll();
    this.wakeFresh();
    await this.running;
  }

  private async run(): Promise<void> {
    let backoff = this.config.relistBackoffMs ?? 1000;
    while (!this.stopped) {
      let failed = false;
      try {
        const list = await this.kv.list(this.config.prefix);
        if (this.stopped) break;
        this.replace(list.kvs, list.revision);
        this.firstList?.resolve();
        const watch = this.kv.watch(this.config.prefix, { prefix: true, afterRevision: list.revision });
        this.source = watch;
        for await (const ev of watch) {
          this.apply(ev);
          const last = this.window[this.window.length - 1]!;
          await this.dispatch(last);
          last.fresh = undefined;
          backoff = this.config.relistBackoffMs ?? 1000;
        }
        if (this.stopped) break;
      } catch (err) {
        if (this.stopped) break;
        if (err instanceof StorageError && err.code === 'Closed') break;
        failed = true;
        this.config.log?.(`watch cache of ${this.config.resource}: ${err instanceof Error ? err.message : String(err)}; listing again`);
      }
      this.readyFlag = false;
      this.source?.close();
      this.source = null;
      this.firstList?.resolve();
      if (!failed) continue;
      await new Promise<void>((r) => {
        this.wakeRelist = r;
        this.relistTimer = setTimeout(r, backoff);
      });
      this.wakeRelist = null;
      backoff = Math.min(backoff * 2, 30_000);
    }
    this.readyFlag = false;
    this.firstList?.resolve();
    this.terminateAll();
  }

  /** A fresh state from a list: the window starts empty at its revision; watchers of the old one are ended. */
  private replace(kvs: KeyValue[], revision: number): void {
    this.terminateAll();
    this.state.clear();
    for (const kv of kvs) this.state.set(kv.key, this.compact(kv));
    this.decoded = undefined;
    this.window = [];
    this.head = 0;
    this.floorRev = revision;
    this.rev = revision;
    this.lastEventRev = revision;
    this.readyFlag = true;
    this.wakeFresh();
  }

  private apply(ev: StorageEvent): void {
    // The value before the change is the one the state holds (already compacted): it is shared, not decoded again.
    const held = ev.prevKv ? this.state.get(ev.kv.key) : undefined;
    const prevKv = ev.prevKv ? (held && held.modRevision === ev.prevKv.modRevision ? held : this.compact(ev.prevKv)) : null;
    this.decoded = undefined;
    const kv = this.compact(ev.kv);
    const fresh = this.decoded;
    this.decoded = undefined;
    if (ev.type === 'put') this.state.set(kv.key, kv);
    else this.state.delete(kv.key);
    const rev = kv.modRevision;
    const cacheEvent: CacheEvent = { type: ev.type, key: kv.key, rev, kv, prevKv };
    if (fresh) cacheEvent.fresh = fresh;
    this.window.push(cacheEvent);
    if (this.window.length - this.head > this.config.capacity) {
      while (this.window.length - this.head > this.config.capacity) {
        this.window[this.head] = undefined as unknown as CacheEvent;
        this.head++;
      }
      // 1.23's 'oldest-1': a watch resumes from just before the oldest event kept (no event of the resource
      // lies between the one evicted last and it), and a 410 names that revision.
      this.floorRev = (this.window[this.head]?.rev ?? rev + 1) - 1;
    }
    if (this.head > 1024 && this.head * 2 > this.window.length) {
      this.window = this.window.slice(this.head);
      this.head = 0;
    }
    this.lastEventRev = rev;
    if (rev > this.rev) this.rev = rev;
    this.wakeFresh();
  }

  /**
   * Offers the event to every watcher. Those whose buffer is full get what is left of the time budget to
   * make room; those that still have none are ended (Kubernetes' dispatchEvent with blockedWatchers).
   */
  private async dispatch(ev: CacheEvent): Promise<void> {
    let blocked: CacheSubscriber[] | null = null;
    for (const s of this.subscribers) {
      if (!s.offer(ev)) (blocked ??= []).push(s);
    }
    this.dispatched += this.subscribers.size;
    if (!blocked) return;
    const budget = this.takeBudget();
    const started = Date.now();
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<void>((r) => (timer = setTimeout(r, budget)));
    for (const s of blocked) {
      if (!this.subscribers.has(s)) continue;
      if (Date.now() - started < budget) await Promise.race([s.room(), deadline]);
      if (s.offer(ev)) continue;
      this.terminatedSlow++;
      this.config.log?.(`watch cache of ${this.config.resource}: ending a watcher that did not take events in time`);
      this.unsubscribe(s);
      s.terminate();
    }
    clearTimeout(timer);
    this.returnBudget(budget - (Date.now() - started));
  }

  private takeBudget(): number {
    const now = Date.now();
    this.budgetMs = Math.min(MAX_BUDGET_MS, this.budgetMs + ((now - this.budgetAt) / 1000) * BUDGET_REFILL_PER_SECOND_MS);
    this.budgetAt = now;
    const b = this.budgetMs;
    this.budgetMs = 0;
    return b;
  }

  private returnBudget(unused: number): void {
    if (unused > 0) this.budgetMs = Math.min(MAX_BUDGET_MS, this.budgetMs + unused);
  }

  // ---- readers ----------------------------------------------------------------------------------

  /**
   * Waits until the cache is complete up to `rev` (Kubernetes' waitUntilFreshAndBlock); false when it is
   * not after `timeoutMs` or the cache stopped being ready.
   */
  async waitUntilFresh(rev: number, timeoutMs: number, pollMs = 50): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (this.readyFlag && this.currentRevision() < rev) {
      const left = deadline - Date.now();
      if (left <= 0) return false;
      // Woken by events; polled for the storage watch's progress, which comes without an event.
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(t);
          this.freshWaiters.delete(done);
          resolve();
        };
        const t = setTimeout(done, Math.min(left, pollMs));
        this.freshWaiters.add(done);
      });
    }
    return this.readyFlag;
  }

  private wakeFresh(): void {
    for (const w of [...this.freshWaiters]) w();
  }

  /** The stored value of a key, as of currentRevision(). */
  get(key: string): KeyValue | undefined {
    return this.state.get(key);
  }

  /** Stored values of the keys under `prefix`, in key order. */
  list(prefix: string): KeyValue[] {
    const out: KeyValue[] = [];
    for (const [k, kv] of this.state) if (k.startsWith(prefix)) out.push(kv);
    return out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  get size(): number {
    return this.state.size;
  }

  /** Events after `rev` in the window, oldest first; throws TooOldError when the window no longer holds them all. */
  eventsAfter(rev: number): CacheEvent[] {
    if (rev < this.floorRev) throw new TooOldError(rev, this.floorRev);
    const out: CacheEvent[] = [];
    // Binary search for the first event after rev.
    let lo = this.head;
    let hi = this.window.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.window[mid]!.rev <= rev) lo = mid + 1;
      else hi = mid;
    }
    for (let i = lo; i < this.window.length; i++) out.push(this.window[i]!);
    return out;
  }

  /** The revision of the last event dispatched (a watcher that has seen it has seen everything). */
  get lastDispatched(): number {
    return this.lastEventRev;
  }

  subscribe(s: CacheSubscriber): void {
    this.subscribers.add(s);
  }

  unsubscribe(s: CacheSubscriber): void {
    this.subscribers.delete(s);
  }

  get watchers(): number {
    return this.subscribers.size;
  }

  /** The object compact() decoded last (see CacheEvent.fresh). */
  private decoded: KObject | undefined;

  /**
   * The KeyValue to keep: values that are views into a much larger buffer (a whole storage response) are
   * copied, so that keeping one object does not keep the response alive. Values stored as protobuf or YAML
   * (--storage-media-type) are kept as compact JSON, decoded once here (the object is left in `decoded`):
   * reads from the cache, and storage reads of the same revision (ResourceStore.readable), then answer
   * without decoding (rawjson.ts), as with JSON storage.
   */
  private compact(kv: KeyValue): KeyValue {
    if (kv.value.length > 0 && !isStoredJSON(kv.value)) {
      try {
        const obj = decodeStored(kv.value);
        const out = { ...kv, value: ownBuffer(JSON.stringify(obj)) };
        this.decoded = obj;
        return out;
      } catch {
        // Not decodable: kept as stored; reads report the problem.
      }
    }
    const v = kv.value;
    if (v.buffer.byteLength <= v.byteLength * 2 + 64) return kv;
    const copy = Buffer.allocUnsafeSlow(v.byteLength);
    copy.set(v);
    return { ...kv, value: copy };
  }

  private terminateAll(): void {
    const all = [...this.subscribers];
    this.subscribers.clear();
    for (const s of all) s.terminate();
  }
}

/**
 * The string's UTF-8 bytes in a buffer of their own. Buffer.from would slice the shared 8 KiB pool, and a
 * cached value living there keeps the whole slab (and the short-lived data around it) alive: with 10,000
 * PVCs that was ~24 MiB of slabs for ~10 MiB of values.
 */
function ownBuffer(s: string): Buffer {
  const b = Buffer.allocUnsafeSlow(Buffer.byteLength(s));
  b.write(s);
  return b;
}
