/**
 * Watch cache sizes per resource, as kube-apiserver derives them from --watch-cache,
 * --default-watch-cache-size and --watch-cache-sizes: 0 means no cache for the resource.
 */

export interface WatchCacheSettings {
  /** --watch-cache: false turns every cache off. */
  enabled: boolean;
  /** --default-watch-cache-size: for resources without a size of their own. */
  defaultSize: number;
  /** --watch-cache-sizes entries, 'resource[.group]#size'. */
  sizes: readonly string[];
}

/** Kubernetes 1.23's system defaults (DefaultWatchCacheSizes): Events are not cached. */
const SYSTEM_DEFAULTS: Readonly<Record<string, number>> = { events: 0, 'events.events.k8s.io': 0 };

/** 'resource' for the core group, 'resource.group' for others: the spelling --watch-cache-sizes uses. */
export function groupResourceName(group: string, resource: string): string {
  return group === '' ? resource : `${resource}.${group}`;
}

/** The size for each resource: the function answers the cache size of group/resource (0: no cache). */
export function watchCacheSizes(s: WatchCacheSettings): (group: string, resource: string) => number {
  const sizes = new Map<string, number>(Object.entries(SYSTEM_DEFAULTS));
  for (const entry of s.sizes) {
    const at = entry.lastIndexOf('#');
    const size = Number(entry.slice(at + 1));
    if (at <= 0 || !Number.isSafeInteger(size) || size < 0) throw new Error(`invalid value "${entry}" for --watch-cache-sizes`);
    sizes.set(entry.slice(0, at), size);
  }
  return (group, resource) => {
    if (!s.enabled) return 0;
    return sizes.get(groupResourceName(group, resource)) ?? s.defaultSize;
  };
}
