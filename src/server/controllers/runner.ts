/**
 * The loop every in-process controller shares: watch one kind, queue the keys of objects that need work,
 * run one sync per key at a time (a key changed during its sync is synced again), and retry later when a
 * sync asks for it or fails.
 */
import { isStatusError } from '../../registry/errors.js';
import type { KObject } from '../../registry/kind.js';
import type { ResourceStore, WatchEvent } from '../../registry/store.js';

/** What a subscriber to a kind's shared watch hears: each event, and the end of the watch (with its error). */
export interface WatchSubscriber {
  event(ev: WatchEvent): void;
  ended?(err: unknown): void;
}

interface SharedWatch {
  subscribers: Set<WatchSubscriber>;
  started: boolean;
  close(): void;
}

const shared = new WeakMap<ResourceStore, SharedWatch>();

/**
 * Subscribes to one watch of every object of the kind (all namespaces, from its current state), shared by
 * the in-process controllers so that each event is read and decoded once. The event objects are shared
 * between subscribers: they must not change them. Subscribers that join before the watch starts (in the
 * same turn of the event loop) share it; a later one gets a watch of its own, with its own initial events.
 * Returns the unsubscribe function; the watch closes when its last subscriber goes.
 */
export function subscribe(store: ResourceStore, sub: WatchSubscriber): () => void {
  let group = shared.get(store);
  if (!group || group.started) {
    const g: SharedWatch = { subscribers: new Set(), started: false, close: () => {} };
    group = g;
    shared.set(store, g);
    queueMicrotask(() => {
      g.started = true;
      if (g.subscribers.size === 0) return;
      const watch = store.watch({ namespace: '' }, {});
      g.close = () => watch.close();
      void (async () => {
        let failure: unknown;
        try {
          for await (const ev of watch) for (const s of g.subscribers) s.event(ev);
        } catch (err) {
          failure = err;
        }
        if (shared.get(store) === g) shared.delete(store);
        for (const s of g.subscribers) s.ended?.(failure);
      })();
    });
  }
  const g = group;
  g.subscribers.add(sub);
  return () => {
    if (!g.subscribers.delete(sub) || g.subscribers.size > 0) return;
    if (shared.get(store) === g) shared.delete(store);
    g.close();
  };
}

/** The object as storage has it now, or undefined when it is gone (a sync then has nothing to do). */
export async function getIfExists(store: ResourceStore, scope: Parameters<ResourceStore['get']>[0], name: string): Promise<KObject | undefined> {
  try {
    return await store.get(scope, name);
  } catch (err) {
    if (isStatusError(err, 'NotFound')) return undefined;
    throw err;
  }
}

/** Removes one metadata finalizer from an object, on its latest version (a stale read retries in the store). */
export async function removeFinalizer(
  store: ResourceStore,
  namespace: string,
  name: string,
  finalizer: string,
  user: { name: string; groups: string[] },
): Promise<void> {
  await store.update({ namespace, user }, name, (cur) => {
    const next = structuredClone(cur!);
    next.metadata!.finalizers = (next.metadata!.finalizers ?? []).filter((f: string) => f !== finalizer);
    return next;
  });
}

export interface Controller {
  stop(): void;
}

export interface ControllerSpec {
  name: string;
  store: ResourceStore;
  /** Whether an object needs a sync (checked on every ADDED and MODIFIED event). */
  wants(obj: KObject): boolean;
  /** Syncs one object; returns when to look again (ms), or null when done. */
  sync(namespace: string, name: string): Promise<number | null>;
  log?: (message: string) => void;
}

export function runController(spec: ControllerSpec): Controller {
  const busy = new Set<string>();
  const again = new Set<string>();
  const retries = new Map<string, NodeJS.Timeout>();
  let stopped = false;
  const log = spec.log ?? (() => {});

  const enqueue = (key: string, delayMs = 0): void => {
    if (stopped) return;
    if (delayMs > 0) {
      if (retries.has(key)) return;
      const t = setTimeout(() => {
        retries.delete(key);
        enqueue(key);
      }, delayMs);
      t.unref();
      retries.set(key, t);
      return;
    }
    if (busy.has(key)) {
      again.add(key);
      return;
    }
    busy.add(key);
    const slash = key.indexOf('/');
    void spec
      .sync(key.slice(0, slash), key.slice(slash + 1))
      .then((retryMs) => {
        if (retryMs !== null) enqueue(key, retryMs);
      })
      .catch((err: unknown) => {
        if (!stopped) log(`${spec.name}: ${key}: ${(err as Error).message}`);
        enqueue(key, 1000);
      })
      .finally(() => {
        busy.delete(key);
        if (again.delete(key)) enqueue(key);
      });
  };

  const unsubscribe = subscribe(spec.store, {
    event(ev) {
      if (ev.type !== 'ADDED' && ev.type !== 'MODIFIED') return;
      if (spec.wants(ev.object)) enqueue(`${ev.object.metadata?.namespace ?? ''}/${ev.object.metadata?.name ?? ''}`);
    },
    ended(err) {
      if (err !== undefined && !stopped) log(`${spec.name}: watch ended: ${(err as Error).message}`);
    },
  });

  return {
    stop() {
      stopped = true;
      unsubscribe();
      for (const t of retries.values()) clearTimeout(t);
    },
  };
}
