/**
 * Which reads a watch cache answers, as Kubernetes 1.23's cacher decides (shouldDelegateList, Get, Watch):
 * lists and gets that name a resourceVersion other than an Exact one, without a continue token, and without
 * a limit unless the version is "0", are answered from memory once the cache has caught up with the version;
 * so are watches that name a resourceVersion. Consistent lists (no resourceVersion, no continue token) are
 * answered from memory too, as Kubernetes' later ConsistentListFromCache: once the cache has caught up with
 * storage's current revision (listConsistentFromCache). Everything else goes to storage.
 */
import type { KeyValue } from '../../storage/interface.js';
import { apiVersionOf, type KObject } from '../kind.js';
import type { ListOptions, RequestScope, ResourceStore, WatchOptions } from '../store.js';
import { parseResourceVersion } from '../versions.js';
import { FRESHNESS_WAIT_MS, tooLargeResourceVersion } from './cachewatch.js';
import type { WatchCache } from './watchcache.js';
import { encodeContinue } from '../versions.js';

export function cacheServesList(cache: WatchCache | undefined, opts: ListOptions): cache is WatchCache {
  if (!cache?.ready) return false;
  const rv = opts.resourceVersion ?? '';
  if (rv === '' || opts.continue) return false;
  if (opts.resourceVersionMatch === 'Exact') return false;
  return !(opts.limit && opts.limit > 0 && rv !== '0');
}

export function cacheServesGet(cache: WatchCache | undefined, resourceVersion: string | undefined): cache is WatchCache {
  return !!cache?.ready && resourceVersion !== undefined && resourceVersion !== '';
}

export function cacheServesWatch(cache: WatchCache | undefined, opts: WatchOptions): cache is WatchCache {
  return !!cache?.ready && (opts.resourceVersion ?? '') !== '';
}

/**
 * Waits until the cache has reached the requested version (true); 504 Too large resource version after 3 s.
 * A storage watch that reports no progress (etcd's before it has answered a progress request) cannot show
 * that a quiet resource has caught up with a version written elsewhere: when storage has reached the
 * version, the answer is false and the read goes to storage, which is then just as fresh.
 */
export async function cacheFresh(cache: WatchCache, resourceVersion: string | undefined): Promise<boolean> {
  const rv = parseResourceVersion(resourceVersion);
  if (rv === 0 || cache.currentRevision() >= rv) return true;
  if (!cache.reportsProgress && (await cache.storageRevision()) >= rv && cache.currentRevision() < rv) return false;
  if (!(await cache.waitUntilFresh(rv, FRESHNESS_WAIT_MS))) throw tooLargeResourceVersion(rv, cache.currentRevision());
  return true;
}

/** The stored value of a key as the cache holds it (null when absent), once cacheFresh() allowed it. */
export function getFromCache(cache: WatchCache, key: string): KeyValue | null {
  return cache.get(key) ?? null;
}

/**
 * A consistent get (no resourceVersion) from memory, where storage's current revision costs no round trip
 * (`local`: the embedded store): when the cache has already reached that revision, its value is the one a
 * storage read would give now, so every write acknowledged before the request is seen. The stored value (null
 * when absent), or undefined when the cache is behind (no wait): the caller reads storage.
 */
export async function getConsistentFromCache(cache: WatchCache | undefined, key: string, local: boolean): Promise<KeyValue | null | undefined> {
  if (!local || !cache?.ready) return undefined;
  let rev: number;
  try {
    rev = await cache.storageRevision();
  } catch {
    return undefined;
  }
  if (!cache.ready || cache.currentRevision() < rev) return undefined;
  return cache.get(key) ?? null;
}

/**
 * How long a consistent list waits for the cache to reach storage's current revision before it reads
 * storage instead: about what a storage list costs. Events (a write just acknowledged) wake the wait at
 * once; the embedded store's watch reports progress at once; etcd's answers progress requests (at most
 * every 100 ms), so while other resources are written the cache of a quiet one often cannot show in time
 * that it is current, and the list then reads storage, as before.
 */
export const CONSISTENT_WAIT_MS = 20;
const CONSISTENT_POLL_MS = 5;

/**
 * A consistent list (no resourceVersion, no continue token) from memory: storage's current revision is
 * read, the cache waits (briefly) to reach it, and the list is the cache's state at its revision, which is
 * at least that one, so every write acknowledged before the request is in it. A limit pages as storage does
 * (the continue token names that revision and the next key, and the next pages are read from storage at
 * that revision, so a compacted one answers 410 as before). Undefined when the cache is not ready or did not
 * catch up in time: the caller reads storage.
 */
export async function listConsistentFromCache(
  store: ResourceStore,
  cache: WatchCache | undefined,
  scope: RequestScope,
  opts: ListOptions,
): Promise<KObject | undefined> {
  if (!cache?.ready || (opts.resourceVersion ?? '') !== '' || opts.continue || opts.resourceVersionMatch) return undefined;
  let rev: number;
  try {
    rev = await cache.storageRevision();
  } catch {
    return undefined;
  }
  if (cache.currentRevision() < rev && !(await cache.waitUntilFresh(rev, CONSISTENT_WAIT_MS, CONSISTENT_POLL_MS))) return undefined;
  if (!cache.ready || cache.currentRevision() < rev) return undefined;
  cache.consistentLists++;
  return listFromCache(store, cache, scope, opts, true);
}

/**
 * The list object from memory, once cacheFresh() allowed it: every matching item (a limit is ignored, as the
 * cacher does for resourceVersion "0"); with `paged`, at most `limit` items and a continue token when keys follow.
 */
export function listFromCache(store: ResourceStore, cache: WatchCache, scope: RequestScope, opts: ListOptions, paged = false): KObject {
  const revision = cache.currentRevision();
  const prefix = store.listPrefix(scope.namespace);
  const kvs = cache.list(prefix);
  const limit = paged && opts.limit && opts.limit > 0 ? opts.limit : 0;
  const filtered = !!(opts.labelSelector && !opts.labelSelector.empty()) || !!(opts.fieldSelector && !opts.fieldSelector.empty());
  const items: KObject[] = [];
  const metadata: Record<string, unknown> = { resourceVersion: String(revision) };
  for (let i = 0; i < kvs.length; i++) {
    const kv = kvs[i]!;
    const obj = store.decode(kv);
    if (filtered && !store.matches(obj, opts)) continue;
    items.push(obj);
    if (limit && items.length === limit) {
      // As storage pages: a continue token whenever keys follow (matching or not); their count unless filtered.
      const rest = kvs.length - i - 1;
      if (rest > 0) {
        metadata.continue = encodeContinue({ rv: revision, start: kv.key.slice(prefix.length) + '\0' });
        if (!filtered) metadata.remainingItemCount = rest;
      }
      break;
    }
  }
  return { kind: store.decl.listKind, apiVersion: apiVersionOf(store.decl), metadata, items };
}
