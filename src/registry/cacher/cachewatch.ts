/**
 * One API watch served by a watch cache (Kubernetes' cacheWatcher): its initial events (the cached state
 * for resourceVersion 0 or sendInitialEvents, else the window's events after the requested version), then the
 * events the cache dispatches, through a bounded buffer. A watcher whose buffer stays full is ended by the
 * cache (see WatchCache.dispatch); its client watches again from the last version it got.
 *
 * Selectors are applied as the events arrive: an object that stops matching is DELETED, one that starts
 * matching ADDED. Event objects are decoded once per event and shared between watchers: consumers must not
 * change them.
 */
import type { KeyValue } from '../../storage/interface.js';
import { apiErrors, StatusError } from '../errors.js';
import { apiVersionOf, type KObject } from '../kind.js';
import type { RequestScope, ResourceStore, WatchEvent, WatchOptions } from '../store.js';
import { parseResourceVersion } from '../versions.js';
import { INITIAL_EVENTS_END_ANNOTATION, type ApiWatch } from '../watch.js';
import { TooOldError, type CacheEvent, type CacheSubscriber, type WatchCache } from './watchcache.js';

/** Live events a watcher may hold before the cache waits for it (then ends it). */
export const WATCHER_BUFFER = 100;
/** How long a read or watch waits for the cache to reach a requested resourceVersion (waitUntilFreshAndBlock). */
export const FRESHNESS_WAIT_MS = 3000;

export function tooLargeResourceVersion(rv: number, current: number): StatusError {
  const e = apiErrors.timeout(`Too large resource version: ${rv}, current: ${current}`, 1);
  e.status.details = { ...e.status.details, causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }] };
  return e;
}

/** The objects of a cache event as `store` decodes them; shared by every watcher of that store. */
function decoded(ev: CacheEvent, store: ResourceStore, needPrev: boolean): { cur: KObject | null; prev: KObject | null } {
  if (ev.decoder !== store) {
    ev.decoder = store;
    const fresh = ev.fresh;
    ev.fresh = undefined;
    ev.cur = ev.type === 'put' ? store.decode(ev.kv, ev.kv.modRevision, fresh) : null;
    ev.prev = undefined;
  }
  if (ev.prev === undefined && (needPrev || ev.type === 'delete')) ev.prev = ev.prevKv ? store.decode(ev.prevKv, ev.rev) : null;
  return { cur: ev.cur ?? null, prev: ev.prev ?? null };
}

export class CacheWatch implements ApiWatch, AsyncIterator<WatchEvent>, CacheSubscriber {
  private started = false;
  private closed = false;
  /** State items to send as ADDED first (resourceVersion 0 or sendInitialEvents). */
  private initialState: KeyValue[] = [];
  private initialPos = 0;
  private initialEnd: WatchEvent | null = null;
  /** Window events after the requested version, sent before live ones. */
  private initialEvents: CacheEvent[] = [];
  private initialEventPos = 0;
  private buf: WatchEvent[] = [];
  /** Events at or before this revision are already covered by the initial events. */
  private startRev = 0;
  /** Revision of the last event offered (matching or not) and of the last one handed out. */
  private seenRev = 0;
  private lastRV = 0;
  /** Every initial event has been handed out (see resumeRevision). */
  private initialDone = false;
  private wake: (() => void) | null = null;
  private roomWaiters: (() => void)[] = [];
  private nextBookmark = 0;
  private timer: NodeJS.Timeout | undefined;
  private readonly prefix: string;
  private readonly filtered: boolean;

  constructor(
    private readonly cache: WatchCache,
    private readonly store: ResourceStore,
    scope: RequestScope,
    private readonly opts: WatchOptions,
    private readonly bookmarkIntervalMs: number,
    private readonly progressBookmarks: boolean,
    private readonly capacity = WATCHER_BUFFER,
  ) {
    this.prefix = store.listPrefix(scope.namespace);
    this.filtered = !!(opts.labelSelector && !opts.labelSelector.empty()) || !!(opts.fieldSelector && !opts.fieldSelector.empty());
  }

  [Symbol.asyncIterator](): AsyncIterator<WatchEvent> {
    return this;
  }

  /** Registers with the cache, with the initial events; waits for the cache to reach a requested version first. */
  private async start(): Promise<void> {
    this.started = true;
    const rv = parseResourceVersion(this.opts.resourceVersion);
    const initial = this.opts.sendInitialEvents ?? rv === 0;
    if (initial) {
      if (rv > 0 && !(await this.cache.waitUntilFresh(rv, FRESHNESS_WAIT_MS))) {
        throw tooLargeResourceVersion(rv, this.cache.currentRevision());
      }
      if (this.closed) return;
      const at = this.cache.currentRevision();
      this.initialState = this.cache.list(this.prefix);
      this.startRev = Math.max(at, this.cache.lastDispatched);
      if (this.opts.sendInitialEvents) this.initialEnd = this.bookmark(this.startRev, { [INITIAL_EVENTS_END_ANNOTATION]: 'true' });
    } else {
      this.initialEvents = this.cache.eventsAfter(rv);
      const last = this.initialEvents[this.initialEvents.length - 1];
      this.startRev = Math.max(rv, last?.rev ?? 0);
    }
    this.seenRev = this.startRev;
    this.lastRV = this.startRev;
    this.cache.subscribe(this);
    this.nextBookmark = Date.now() + this.bookmarkIntervalMs;
  }

  // ---- the cache's side -------------------------------------------------------------------------

  offer(ev: CacheEvent): boolean {
    if (this.closed || ev.rev <= this.startRev) return true;
    if (!ev.key.startsWith(this.prefix)) {
      this.seenRev = ev.rev;
      return true;
    }
    if (this.buf.length >= this.capacity) return false;
    this.seenRev = ev.rev;
    const out = this.convert(ev);
    if (out) {
      this.buf.push(out);
      this.wake?.();
    }
    return true;
  }

  room(): Promise<void> {
    if (this.closed || this.buf.length < this.capacity) return Promise.resolve();
    return new Promise((resolve) => this.roomWaiters.push(resolve));
  }

  terminate(): void {
    this.close();
  }

  // ---- the client's side ------------------------------------------------------------------------

  private convert(ev: CacheEvent): WatchEvent | null {
    if (!ev.key.startsWith(this.prefix)) return null;
    const { cur, prev } = decoded(ev, this.store, this.filtered);
    if (!this.filtered) {
      if (cur) return { type: ev.prevKv ? 'MODIFIED' : 'ADDED', object: cur };
      return prev ? { type: 'DELETED', object: prev } : null;
    }
    const curMatch = cur !== null && this.store.matches(cur, this.opts);
    const prevMatch = prev !== null && this.store.matches(prev, this.opts);
    if (curMatch && prevMatch) return { type: 'MODIFIED', object: cur };
    if (curMatch) return { type: 'ADDED', object: cur };
    if (prevMatch) return { type: 'DELETED', object: prev };
    return null;
  }

  private bookmark(rv: number, annotations?: Record<string, string>): WatchEvent {
    const metadata: Record<string, unknown> = { resourceVersion: String(rv) };
    if (annotations) metadata.annotations = annotations;
    return { type: 'BOOKMARK', object: { kind: this.store.decl.kind, apiVersion: apiVersionOf(this.store.decl), metadata } };
  }

  /** The next initial event, if any remain. */
  private nextInitial(): WatchEvent | null {
    while (this.initialPos < this.initialState.length) {
      const kv = this.initialState[this.initialPos]!;
      this.initialState[this.initialPos++] = undefined as unknown as KeyValue;
      const obj = this.store.decode(kv);
      if (!this.filtered || this.store.matches(obj, this.opts)) return { type: 'ADDED', object: obj };
    }
    this.initialState = [];
    while (this.initialEventPos < this.initialEvents.length) {
      const out = this.convert(this.initialEvents[this.initialEventPos++]!);
      if (out) return out;
    }
    this.initialEvents = [];
    const end = this.initialEnd;
    this.initialEnd = null;
    if (!end) this.initialDone = true;
    return end;
  }

  /**
   * Where a watch that the cache ended (it listed again, or found this watcher slow) could go on without a gap
   * or a repeat: the revision of the last event handed out, once every initial event was; else undefined.
   */
  resumeRevision(): number | undefined {
    return this.started && this.initialDone ? this.lastRV : undefined;
  }

  async next(): Promise<IteratorResult<WatchEvent>> {
    try {
      if (!this.started) await this.start();
    } catch (err) {
      return this.fail(err);
    }
    for (;;) {
      if (this.closed) return { value: undefined, done: true };
      const first = this.nextInitial();
      if (first) return this.hand(first);
      const ev = this.buf.shift();
      if (ev) {
        const waiters = this.roomWaiters;
        this.roomWaiters = [];
        for (const w of waiters) w();
        return this.hand(ev);
      }
      const r = await this.waitForEvent();
      if (r === 'bookmark' && !this.closed) {
        this.nextBookmark = Date.now() + this.bookmarkIntervalMs;
        return { value: this.bookmark(this.bookmarkRevision()), done: false };
      }
    }
  }

  private hand(ev: WatchEvent): IteratorResult<WatchEvent> {
    const rv = Number(ev.object.metadata?.resourceVersion);
    if (Number.isSafeInteger(rv) && rv > this.lastRV) this.lastRV = rv;
    return { value: ev, done: false };
  }

  /**
   * The version a bookmark may name: everything this watcher was offered has been handed out, so the last
   * offered revision; with progress bookmarks, the cache's progress once this watcher has seen every event.
   */
  private bookmarkRevision(): number {
    let rv = Math.max(this.lastRV, this.seenRev);
    if (this.progressBookmarks && this.seenRev >= this.cache.lastDispatched) rv = Math.max(rv, this.cache.currentRevision());
    this.lastRV = rv;
    return rv;
  }

  private waitForEvent(): Promise<'event' | 'bookmark'> {
    return new Promise((resolve) => {
      this.wake = () => {
        this.wake = null;
        clearTimeout(this.timer);
        resolve('event');
      };
      if (this.opts.allowWatchBookmarks) {
        this.timer = setTimeout(() => {
          this.wake = null;
          resolve('bookmark');
        }, Math.max(0, this.nextBookmark - Date.now()));
      }
    });
  }

  /** A watch that cannot start ends with one ERROR event carrying the Status. */
  private fail(err: unknown): IteratorResult<WatchEvent> {
    if (this.closed) return { value: undefined, done: true };
    this.close();
    let status: StatusError;
    if (err instanceof TooOldError) status = apiErrors.expired(err.message);
    else if (err instanceof StatusError) status = err;
    else status = apiErrors.internal();
    return { value: { type: 'ERROR', object: status.status }, done: false };
  }

  async return(): Promise<IteratorResult<WatchEvent>> {
    this.close();
    return { value: undefined, done: true };
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.cache.unsubscribe(this);
    clearTimeout(this.timer);
    this.buf = [];
    this.initialState = [];
    this.initialEvents = [];
    this.wake?.();
    const waiters = this.roomWaiters;
    this.roomWaiters = [];
    for (const w of waiters) w();
  }
}

/**
 * A watch without a resourceVersion (initial events of the current state, then every change) from memory
 * when the cache can show it is consistent: storage's current revision is read and the cache waits (briefly,
 * as a consistent list does) to reach it; the watch then starts from the cache's state at its revision, which
 * holds every write acknowledged before the request. When the cache is not ready or does not catch up in time,
 * `fallback` (a storage watch) serves it. The choice is made at the first read.
 */
export function consistentCacheWatch(
  cache: WatchCache,
  store: ResourceStore,
  scope: RequestScope,
  opts: WatchOptions,
  bookmarkIntervalMs: number,
  progressBookmarks: boolean,
  fallback: (resourceVersion?: string) => ApiWatch,
): ApiWatch {
  return new ChosenWatch(async () => {
    if (!(await cacheReachesStorage(cache))) return { watch: fallback() };
    const watch = new CacheWatch(cache, store, scope, { ...opts, resourceVersion: '0' }, bookmarkIntervalMs, progressBookmarks);
    return {
      watch,
      // A storage watch never ends on its own: when the cache ends this one, storage carries on from where it was.
      resume: () => {
        const rv = watch.resumeRevision();
        return rv === undefined ? undefined : fallback(String(rv));
      },
    };
  });
}

/** Whether the cache is ready and at (or past) storage's current revision, after a short wait. */
async function cacheReachesStorage(cache: WatchCache): Promise<boolean> {
  if (!cache.ready) return false;
  let rev: number;
  try {
    rev = await cache.storageRevision();
  } catch {
    return false;
  }
  if (cache.currentRevision() < rev && !(await cache.waitUntilFresh(rev, CONSISTENT_WATCH_WAIT_MS, CONSISTENT_WATCH_POLL_MS))) return false;
  return cache.ready && cache.currentRevision() >= rev;
}

/** As a consistent list (reads.ts CONSISTENT_WAIT_MS): about what starting from storage costs. */
const CONSISTENT_WATCH_WAIT_MS = 20;
const CONSISTENT_WATCH_POLL_MS = 5;

interface Chosen {
  watch: ApiWatch;
  /** When `watch` ends without the client closing it: the watch that carries on, if any. */
  resume?: () => ApiWatch | undefined;
}

/** A watch whose source is chosen at its first read. */
class ChosenWatch implements ApiWatch, AsyncIterator<WatchEvent> {
  private inner: ApiWatch | null = null;
  private iter: AsyncIterator<WatchEvent> | null = null;
  private resume: Chosen['resume'];
  private closed = false;

  constructor(private readonly choose: () => Promise<Chosen>) {}

  [Symbol.asyncIterator](): AsyncIterator<WatchEvent> {
    return this;
  }

  private use(inner: ApiWatch): void {
    this.inner = inner;
    this.iter = inner[Symbol.asyncIterator]();
    if (this.closed) inner.close();
  }

  async next(): Promise<IteratorResult<WatchEvent>> {
    if (!this.iter) {
      if (this.closed) return { value: undefined, done: true };
      const chosen = await this.choose();
      this.resume = chosen.resume;
      this.use(chosen.watch);
    }
    for (;;) {
      const r = await this.iter!.next();
      if (!r.done || this.closed || !this.resume) return r;
      const next = this.resume();
      this.resume = undefined;
      if (!next) return r;
      this.use(next);
    }
  }

  async return(): Promise<IteratorResult<WatchEvent>> {
    this.close();
    return { value: undefined, done: true };
  }

  close(): void {
    this.closed = true;
    this.inner?.close();
  }
}
