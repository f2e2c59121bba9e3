/**
 * Which reads a watch cache answers, as Kubernetes 1.23's cacher decides (shouldDelegateList, Get, Watch):
 * lists and gets that name a resourceVersion other than an Exact one, without a continue token, and without
 * a limit unless the version is "0", are answered from memory once the cache has caught up with the version;
 * so are watches that name a resourceVersion. Everything else (consistent reads) goes to storage.
 */
import type { KeyValue } from '../../storage/interface.js';
import { apiVersionOf, type KObject } from '../kind.js';
import type { ListOptions, RequestScope, ResourceStore, WatchOptions } from '../store.js';
import { parseResourceVersion } from '../versions.js';
import { FRESHNESS_WAIT_MS, tooLargeResourceVersion } from './cachewatch.js';
import type { WatchCache } from './watchcache.js';

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

/** The list object from memory, once cacheFresh() allowed it: every matching item (a limit is ignored, as the cacher does). */
export function listFromCache(store: ResourceStore, cache: WatchCache, scope: RequestScope, opts: ListOptions): KObject {
  const revision = cache.currentRevision();
  const kvs = cache.list(store.listPrefix(scope.namespace));
  const filtered = !!(opts.labelSelector && !opts.labelSelector.empty()) || !!(opts.fieldSelector && !opts.fieldSelector.empty());
  const items: KObject[] = [];
  for (const kv of kvs) {
    const obj = store.decode(kv);
    if (!filtered || store.matches(obj, opts)) items.push(obj);
  }
  return { kind: store.decl.listKind, apiVersion: apiVersionOf(store.decl), metadata: { resourceVersion: String(revision) }, items };
}
