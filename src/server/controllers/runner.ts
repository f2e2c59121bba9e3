/**
 * The loop every in-process controller shares: watch one kind, queue the keys of objects that need work,
 * run one sync per key at a time (a key changed during its sync is synced again), and retry later when a
 * sync asks for it or fails.
 */
import type { KObject } from '../../registry/kind.js';
import type { ResourceStore } from '../../registry/store.js';

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

  const watch = spec.store.watch({ namespace: '' }, {});
  void (async () => {
    try {
      for await (const ev of watch) {
        if (ev.type !== 'ADDED' && ev.type !== 'MODIFIED') continue;
        if (spec.wants(ev.object)) enqueue(`${ev.object.metadata?.namespace ?? ''}/${ev.object.metadata?.name ?? ''}`);
      }
    } catch (err) {
      if (!stopped) log(`${spec.name}: watch ended: ${(err as Error).message}`);
    }
  })();

  return {
    stop() {
      stopped = true;
      watch.close();
      for (const t of retries.values()) clearTimeout(t);
    },
  };
}
