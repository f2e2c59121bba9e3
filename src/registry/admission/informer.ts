/**
 * What admission plugins read other objects through, as Kubernetes' plugins read informer listers: an
 * in-memory copy of the kind (ObjectCache: a list, then a watch, plus this server's own writes at once),
 * made on first use, so that a request costs a map lookup instead of a storage list or get. Objects handed
 * out are the cache's own: never change them. A get that misses asks storage (a NotFound is then the answer),
 * as an object another server just wrote may not have reached the watch yet.
 */
import type { KObject } from '../kind.js';
import type { ResourceStore } from '../store.js';
import { ObjectCache } from '../kinds/rbac/cache.js';

export interface Lister {
  /** The objects of a namespace ('' for a cluster-scoped kind), sorted by name; empty when the kind is not served. */
  list(namespace: string): Promise<readonly KObject[]>;
  /** The object, or what storage answers when the cache does not have it (throws its NotFound). */
  get(namespace: string, name: string): Promise<KObject>;
  /** Whether the kind is served at all. */
  served(): boolean;
}

export function lister(store: () => ResourceStore | undefined): Lister {
  let cache: ObjectCache | undefined;
  let cachedStore: ResourceStore | undefined;
  const ready = async (): Promise<ObjectCache | undefined> => {
    const s = store();
    if (!s) return undefined;
    if (!cache || cachedStore !== s) {
      cache?.stop();
      cache = new ObjectCache(s);
      cachedStore = s;
    }
    if (!cache.isReady) await cache.ready();
    return cache;
  };
  return {
    async list(namespace) {
      const c = await ready();
      return c ? c.list(namespace) : [];
    },
    async get(namespace, name) {
      const c = await ready();
      const hit = c?.get(namespace, name);
      if (hit) return hit;
      const s = store();
      if (!s) throw new Error('not served');
      return s.get({ namespace }, name);
    },
    served: () => store() !== undefined,
  };
}
