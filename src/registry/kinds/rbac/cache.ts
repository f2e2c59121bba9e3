/**
 * An in-memory copy of every object of one kind, as an informer keeps it: a list, then a watch from the
 * list's revision, plus this server's own writes, heard before the writer's caller hears of them (so a
 * binding just created is in effect for the next request). Each entry keeps the revision it was learned
 * at; older news never overwrites newer. A watch that ends is replaced by a new list and watch.
 */
import type { KObject } from '../../kind.js';
import type { ResourceStore } from '../../store.js';

interface Entry {
  revision: number;
  obj: KObject | null;
}

const RELIST_DELAY_MS = 1000;

export type CacheListener = (key: string, obj: KObject | null, previous: KObject | null) => void;

export class ObjectCache {
  private readonly entries = new Map<string, Entry>();
  private loaded: Promise<void> | undefined;
  private isLoaded = false;
  private stopped = false;
  private closeWatch: (() => void) | undefined;
  private readonly unobserve: () => void;
  private readonly listeners = new Set<CacheListener>();
  /** Memoized answers of list(), by namespace ('*' for all); cleared on every change. */
  private readonly lists = new Map<string, KObject[]>();

  constructor(private readonly store: ResourceStore) {
    // The observer names the object only; a namespaced kind's deletion (no object) is left to the watch.
    this.unobserve = store.observeWrites((name, obj, revision) => {
      if (obj) this.learn(`${obj.metadata?.namespace ?? ''}/${name}`, obj, revision);
      else if (!store.decl.namespaced) this.learn(`/${name}`, null, revision);
    });
  }

  /** Resolves once the first list is in; starts it on first call (again after a failed list). */
  ready(): Promise<void> {
    this.loaded ??= this.load().catch((err: unknown) => {
      this.loaded = undefined;
      throw err;
    });
    return this.loaded;
  }

  get isReady(): boolean {
    return this.isLoaded;
  }

  /** Told after every change, with the entry's key (namespace/name), new object (null: gone) and previous one. */
  onChange(listener: CacheListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  get(namespace: string, name: string): KObject | undefined {
    return this.entries.get(`${namespace}/${name}`)?.obj ?? undefined;
  }

  /** Every object, or those of one namespace, sorted by namespace and name. The array must not be changed. */
  list(namespace?: string): readonly KObject[] {
    const memo = this.lists.get(namespace ?? '*');
    if (memo) return memo;
    const out: KObject[] = [];
    const keys = [...this.entries.keys()].sort();
    for (const k of keys) {
      const e = this.entries.get(k)!;
      if (!e.obj) continue;
      if (namespace !== undefined && (e.obj.metadata?.namespace ?? '') !== namespace) continue;
      out.push(e.obj);
    }
    this.lists.set(namespace ?? '*', out);
    return out;
  }

  stop(): void {
    this.stopped = true;
    this.unobserve();
    this.closeWatch?.();
  }

  private learn(key: string, obj: KObject | null, revision: number): void {
    const known = this.entries.get(key);
    if (known && known.revision > revision) return;
    this.entries.set(key, { revision, obj });
    this.lists.clear();
    for (const l of this.listeners) l(key, obj, known?.obj ?? null);
  }

  private async load(): Promise<void> {
    const list = await this.store.list({ namespace: '' }, {});
    const revision = Number(list.metadata?.resourceVersion ?? 0);
    for (const item of list.items as KObject[]) {
      const meta = item.metadata ?? {};
      this.learn(`${meta.namespace ?? ''}/${meta.name ?? ''}`, item, Number(meta.resourceVersion ?? revision));
    }
    this.isLoaded = true;
    this.watchFrom(String(revision));
  }

  private watchFrom(resourceVersion: string): void {
    if (this.stopped) return;
    const watch = this.store.watch({ namespace: '' }, { resourceVersion });
    this.closeWatch = () => watch.close();
    void (async () => {
      try {
        for await (const ev of watch) {
          if (ev.type === 'ERROR') break;
          if (ev.type === 'BOOKMARK') continue;
          const meta = ev.object.metadata ?? {};
          const key = `${meta.namespace ?? ''}/${meta.name ?? ''}`;
          this.learn(key, ev.type === 'DELETED' ? null : ev.object, Number(meta.resourceVersion ?? 0));
        }
      } catch {
        // The watch failed (storage gone, compaction): list again below.
      } finally {
        watch.close();
      }
      if (this.stopped) return;
      const t = setTimeout(() => {
        this.store
          .list({ namespace: '' }, {})
          .then((list) => {
            const revision = Number(list.metadata?.resourceVersion ?? 0);
            const present = new Set<string>();
            for (const item of list.items as KObject[]) {
              const meta = item.metadata ?? {};
              const key = `${meta.namespace ?? ''}/${meta.name ?? ''}`;
              present.add(key);
              this.learn(key, item, Number(meta.resourceVersion ?? revision));
            }
            for (const key of this.entries.keys()) if (!present.has(key)) this.learn(key, null, revision);
            this.watchFrom(String(revision));
          })
          .catch(() => this.watchFrom(''));
      }, RELIST_DELAY_MS);
      t.unref();
    })();
  }
}
