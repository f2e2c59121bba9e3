/**
 * Watches of a kind: storage events turned into ADDED/MODIFIED/DELETED of objects the selectors match
 * (an object that stops matching is DELETED, one that starts matching ADDED, as the watch cache does),
 * initial events for a watch without a resourceVersion, BOOKMARKs, and ERROR for a compacted start.
 * Pull-based end to end: nothing is read from storage until the consumer asks for the next event.
 */
import { StorageError } from '../storage/errors.js';
import type { Watch as StorageWatch, WatchEvent as StorageEvent } from '../storage/interface.js';
import { forbidden, notSupported, root, type FieldError } from '../util/validation.js';
import { apiErrors, StatusError } from './errors.js';
import { apiVersionOf, type KObject } from './kind.js';
import type { RequestScope, ResourceStore, WatchEvent, WatchOptions } from './store.js';
import { parseResourceVersion } from './versions.js';

export const INITIAL_EVENTS_END_ANNOTATION = 'k8s.io/initial-events-end';
/** How often a watch that asked for bookmarks gets one (Kubernetes: about once a minute). */
export const DEFAULT_BOOKMARK_INTERVAL_MS = 60_000;

export interface ApiWatch extends AsyncIterable<WatchEvent> {
  close(): void;
}

/** apimachinery's validation of watch options (sendInitialEvents and resourceVersionMatch). */
export function validateWatchOptions(opts: WatchOptions): FieldError[] {
  const errs: FieldError[] = [];
  const match = opts.resourceVersionMatch ?? '';
  if (opts.sendInitialEvents !== undefined) {
    if (match !== 'NotOlderThan') {
      errs.push(forbidden(root('resourceVersionMatch'), 'sendInitialEvents requires setting resourceVersionMatch to NotOlderThan'));
    }
    if (opts.sendInitialEvents && !opts.allowWatchBookmarks) {
      errs.push(forbidden(root('allowWatchBookmarks'), 'allowWatchBookmarks must be set to true when sendInitialEvents is true'));
    }
  }
  if (match !== '') {
    if (opts.sendInitialEvents === undefined) {
      errs.push(forbidden(root('resourceVersionMatch'), 'resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided'));
    } else if (match !== 'NotOlderThan') {
      errs.push(notSupported(root('resourceVersionMatch'), match, ['NotOlderThan']));
    }
    if (opts.continue) errs.push(forbidden(root('resourceVersionMatch'), 'resourceVersionMatch is forbidden when continue is provided'));
  }
  return errs;
}

export function openWatch(
  store: ResourceStore,
  kv: { watch(key: string, o: { prefix: boolean; afterRevision?: number }): StorageWatch; currentRevision(): Promise<number> },
  scope: RequestScope,
  opts: WatchOptions,
  bookmarkIntervalMs = DEFAULT_BOOKMARK_INTERVAL_MS,
  progressBookmarks = false,
): ApiWatch {
  const errs = validateWatchOptions(opts);
  if (errs.length > 0) throw apiErrors.invalid('meta.k8s.io', 'ListOptions', '', errs);
  store.checkFieldSelector(opts.fieldSelector);
  return new KindWatch(store, kv, scope, opts, bookmarkIntervalMs, progressBookmarks);
}

class KindWatch implements ApiWatch, AsyncIterator<WatchEvent> {
  private queue: WatchEvent[] = [];
  private started = false;
  private closed = false;
  private source: StorageWatch | null = null;
  private iter: AsyncIterator<StorageEvent> | null = null;
  private pending: Promise<IteratorResult<StorageEvent>> | null = null;
  private lastRV = 0;
  private nextBookmark = 0;
  private timer: NodeJS.Timeout | undefined;
  private wake: (() => void) | null = null;

  constructor(
    private readonly store: ResourceStore,
    private readonly kv: {
      watch(key: string, o: { prefix: boolean; afterRevision?: number }): StorageWatch;
      currentRevision(): Promise<number>;
    },
    private readonly scope: RequestScope,
    private readonly opts: WatchOptions,
    private readonly bookmarkIntervalMs: number,
    /** EfficientWatchResumption: bookmarks carry the storage's progress, not only the last event's revision. */
    private readonly progressBookmarks: boolean,
  ) {}

  [Symbol.asyncIterator](): AsyncIterator<WatchEvent> {
    return this;
  }

  private get prefix(): string {
    return this.store.listPrefix(this.scope.namespace);
  }

  /** Lists the current state as ADDED events when the watch starts without a resourceVersion. */
  private async start(): Promise<void> {
    this.started = true;
    const rv = parseResourceVersion(this.opts.resourceVersion);
    const initial = this.opts.sendInitialEvents ?? rv === 0;
    let after = rv;
    if (initial) {
      const list = await this.store.list(this.scope, {
        labelSelector: this.opts.labelSelector,
        fieldSelector: this.opts.fieldSelector,
        ...(rv > 0 ? { resourceVersion: String(rv) } : {}),
      });
      for (const item of list.items as KObject[]) this.queue.push({ type: 'ADDED', object: item });
      after = Number(list.metadata!.resourceVersion);
      if (this.opts.sendInitialEvents) {
        this.queue.push(this.bookmark(after, { [INITIAL_EVENTS_END_ANNOTATION]: 'true' }));
      }
    }
    this.lastRV = after;
    this.source = this.kv.watch(this.prefix, { prefix: true, afterRevision: after });
    this.iter = this.source[Symbol.asyncIterator]();
    this.nextBookmark = Date.now() + this.bookmarkIntervalMs;
  }

  private bookmark(rv: number, annotations?: Record<string, string>): WatchEvent {
    const metadata: Record<string, unknown> = { resourceVersion: String(rv) };
    if (annotations) metadata.annotations = annotations;
    return { type: 'BOOKMARK', object: { kind: this.store.decl.kind, apiVersion: apiVersionOf(this.store.decl), metadata } };
  }

  /** Turns one storage event into the event this watcher sees, if any. */
  private convert(ev: StorageEvent): WatchEvent | null {
    const rev = ev.kv.modRevision;
    this.lastRV = rev;
    const cur = ev.type === 'put' ? this.store.decode(ev.kv) : null;
    const prev = ev.prevKv ? this.store.decode(ev.prevKv, rev) : null;
    const curMatch = cur !== null && this.store.matches(cur, this.opts);
    const prevMatch = prev !== null && this.store.matches(prev, this.opts);
    if (curMatch && prevMatch) return { type: 'MODIFIED', object: cur };
    if (curMatch) return { type: 'ADDED', object: cur };
    if (prevMatch) return { type: 'DELETED', object: prev };
    return null;
  }

  async next(): Promise<IteratorResult<WatchEvent>> {
    try {
      if (!this.started) await this.start();
    } catch (err) {
      return this.fail(err);
    }
    for (;;) {
      const queued = this.queue.shift();
      if (queued) return { value: queued, done: false };
      if (this.closed) return { value: undefined, done: true };
      this.pending ??= this.iter!.next();
      const tick = this.opts.allowWatchBookmarks ? this.waitForBookmark() : null;
      let r: IteratorResult<StorageEvent> | 'bookmark' | 'closed';
      try {
        r = await Promise.race([this.pending, ...(tick ? [tick] : []), this.closedSignal()]);
      } catch (err) {
        this.pending = null;
        return this.fail(err);
      } finally {
        clearTimeout(this.timer);
      }
      if (r === 'closed') return { value: undefined, done: true };
      if (r === 'bookmark') {
        this.nextBookmark = Date.now() + this.bookmarkIntervalMs;
        const progress = this.progressBookmarks ? this.source?.progress?.() : undefined;
        if (progress !== undefined && progress > this.lastRV) this.lastRV = progress;
        return { value: this.bookmark(this.lastRV), done: false };
      }
      this.pending = null;
      if (r.done) {
        this.closed = true;
        return { value: undefined, done: true };
      }
      const ev = this.convert(r.value);
      if (ev) return { value: ev, done: false };
    }
  }

  private waitForBookmark(): Promise<'bookmark'> {
    return new Promise((resolve) => {
      this.timer = setTimeout(() => resolve('bookmark'), Math.max(0, this.nextBookmark - Date.now()));
    });
  }

  private closedSignal(): Promise<'closed'> {
    return new Promise((resolve) => {
      this.wake = () => resolve('closed');
    });
  }

  /** A watch that cannot go on ends with one ERROR event carrying the Status. */
  private async fail(err: unknown): Promise<IteratorResult<WatchEvent>> {
    if (this.closed) return { value: undefined, done: true };
    this.close();
    let status: StatusError;
    if (err instanceof StorageError && err.code === 'Compacted') {
      const e = apiErrors.expired(`too old resource version: ${this.opts.resourceVersion ?? this.lastRV} (${err.details.compactedRevision ?? 0})`);
      status = e;
    } else if (err instanceof StatusError) {
      status = err;
    } else if (err instanceof StorageError && err.code === 'Unavailable') {
      status = apiErrors.serviceUnavailable('storage is unavailable: please retry');
    } else if (err instanceof StorageError && err.code === 'Closed') {
      return { value: undefined, done: true };
    } else {
      status = apiErrors.internal();
    }
    return { value: { type: 'ERROR', object: status.status }, done: false };
  }

  async return(): Promise<IteratorResult<WatchEvent>> {
    this.close();
    return { value: undefined, done: true };
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.timer);
    this.source?.close();
    this.wake?.();
  }
}
