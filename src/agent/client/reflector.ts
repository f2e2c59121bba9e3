// List+watch of one collection kept in a local store (client-go's Reflector with a store): list,
// then watch from the list's resourceVersion; a watch that ends is resumed from the last
// resourceVersion seen (bookmarks included); a 410 Gone (expired resourceVersion, as an answer or
// as an ERROR event) re-lists. Transport errors retry after a back-off of 1 s doubling to 30 s.
//
// After every list and every batch of watch events (events arriving in one turn of the event loop
// are one batch), onChange gets the whole store, and after a batch also what the batch changed, so a
// source can pass on a delta (a SET snapshot after a list, a DELTA after a batch).
import { isGone, type ApiClient, type Json, type WatchEvent, type WatchHandle } from './client.js';

export interface ReflectorOptions<T extends Json> {
  /** Collection path, e.g. /api/v1/pods. */
  path: string;
  fieldSelector?: string;
  labelSelector?: string;
  /** Store key of an object (default namespace/name). */
  key?: (obj: T) => string;
  /**
   * The store after a list or a batch of events (the live store: read it, do not keep it); `deleted` holds
   * the objects a list no longer has or whose DELETED events were in the batch; `changed`, after a batch
   * only (undefined after a list), the objects the batch added or modified, each once, as the store has them.
   */
  onChange: (items: ReadonlyMap<string, T>, deleted: T[], changed?: T[]) => void;
  onError?: (err: unknown) => void;
  /** Maximum back-off between failed attempts (ms). */
  maxBackoffMs?: number;
}

const metaOf = (o: Json): Json => (typeof o.metadata === 'object' && o.metadata !== null ? (o.metadata as Json) : {});
const defaultKey = (o: Json): string => {
  const m = metaOf(o);
  return `${typeof m.namespace === 'string' ? m.namespace : ''}/${String(m.name)}`;
};

export class Reflector<T extends Json> {
  private readonly store = new Map<string, T>();
  private rv = '';
  private stopped = false;
  private watch: WatchHandle | undefined;
  private pending: WatchEvent[] = [];
  private flushScheduled = false;
  private wake: (() => void) | undefined;
  private synced!: () => void;
  /** Resolves after the first successful list. */
  readonly hasSynced = new Promise<void>((r) => (this.synced = r));

  constructor(
    private readonly client: ApiClient,
    private readonly o: ReflectorOptions<T>,
  ) {}

  /** Runs until stop(); resolves after the first successful list. */
  start(): Promise<void> {
    void this.run();
    return this.hasSynced;
  }

  stop(): void {
    this.stopped = true;
    this.watch?.stop();
    this.wake?.();
  }

  items(): T[] {
    return [...this.store.values()];
  }

  private get query(): Record<string, string | undefined> {
    return { fieldSelector: this.o.fieldSelector, labelSelector: this.o.labelSelector };
  }

  private async run(): Promise<void> {
    let backoff = 0;
    let needList = true;
    while (!this.stopped) {
      try {
        if (needList) {
          await this.list();
          needList = false;
        }
        const outcome = await this.watchOnce();
        if (outcome === 'gone') needList = true;
        backoff = 0;
      } catch (err) {
        if (this.stopped) return;
        if (isGone(err)) needList = true;
        else {
          this.o.onError?.(err);
          backoff = Math.min(this.o.maxBackoffMs ?? 30_000, backoff === 0 ? 1000 : backoff * 2);
          await this.sleep(backoff);
        }
      }
    }
  }

  private async list(): Promise<void> {
    const list = await this.client.get<{ metadata?: Json; items?: T[] }>(this.o.path, this.query);
    const key = this.o.key ?? defaultKey;
    const deleted = [...this.store.values()];
    this.store.clear();
    for (const item of list.items ?? []) this.store.set(key(item), item);
    this.rv = typeof list.metadata?.resourceVersion === 'string' ? list.metadata.resourceVersion : '';
    this.o.onChange(this.store, deleted.filter((d) => !this.store.has(key(d))));
    this.synced();
  }

  /** One watch stream; 'gone' when the resourceVersion expired. */
  private async watchOnce(): Promise<'ended' | 'gone'> {
    let gone = false;
    const timeoutSeconds = 300 + Math.floor(Math.random() * 300);
    const handle = await this.client.watch(
      this.o.path,
      { ...this.query, resourceVersion: this.rv, allowWatchBookmarks: true, timeoutSeconds },
      (e) => {
        if (e.type === 'ERROR') {
          if (e.object.code === 410) gone = true;
          handle.stop();
          return;
        }
        this.pending.push(e);
        this.scheduleFlush();
      },
    );
    this.watch = handle;
    if (this.stopped) handle.stop();
    await handle.done;
    this.flush();
    return gone ? 'gone' : 'ended';
  }

  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => this.flush());
  }

  private flush(): void {
    this.flushScheduled = false;
    if (this.pending.length === 0 || this.stopped) return;
    const key = this.o.key ?? defaultKey;
    const deleted: T[] = [];
    const changed = new Map<string, T>();
    for (const e of this.pending.splice(0)) {
      const rv = metaOf(e.object).resourceVersion;
      if (typeof rv === 'string' && rv !== '') this.rv = rv;
      if (e.type === 'BOOKMARK') continue;
      const obj = e.object as T;
      const k = key(obj);
      if (e.type === 'DELETED') {
        this.store.delete(k);
        changed.delete(k);
        deleted.push(obj);
      } else {
        this.store.set(k, obj);
        changed.set(k, obj);
      }
    }
    if (changed.size > 0 || deleted.length > 0) this.o.onChange(this.store, deleted, [...changed.values()]);
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(resolve, ms);
      this.wake = () => {
        clearTimeout(t);
        resolve();
      };
    });
  }
}
