/**
 * The registry: one generic ResourceStore per declared kind, found by group, version and resource.
 */
import type { Storage } from '../storage/factory.js';
import { META_DEFINITIONS } from './definitions/meta.js';
import type { KindDecl, KindSettings } from './kind.js';
import type { Definitions } from './schema.js';
import { ResourceStore, type Admission } from './store.js';
import { WatchCache } from './cacher/watchcache.js';
import { groupResourceName } from './cacher/sizes.js';
import { storageEncoding } from './storagecodec.js';
import { kindFieldManager } from './fieldmanager.js';
import { mergeDefinitions } from './lazydefs.js';

export interface RegistryConfig {
  storage: Storage;
  kinds: readonly KindDecl[];
  featureGates: Readonly<Record<string, boolean>>;
  admission?: Admission;
  now?: () => Date;
  /** Server settings the kinds' strategies read (--allow-privileged, --event-ttl, ...). */
  settings?: KindSettings;
  /** --delete-collection-workers (default 1). */
  deleteCollectionWorkers?: number;
  /** The watch cache size of a resource (cacher/sizes.ts); absent or 0: no cache, reads go to storage. */
  watchCacheSize?: (group: string, resource: string) => number;
  log?: (message: string) => void;
  /** --storage-media-type (storagecodec.ts); default application/json. */
  storageMediaType?: string;
  /** --lease-reuse-duration-seconds (default 60). */
  leaseReuseDurationSeconds?: number;
}

export class Registry {
  private readonly stores = new Map<string, ResourceStore>();
  /** One watch cache per stored resource ('resource[.group]'), shared by the versions that store there. */
  readonly watchCaches = new Map<string, WatchCache>();
  readonly kinds: readonly KindDecl[];
  /** Every schema: the shared meta types and each kind's own. */
  readonly definitions: Definitions;
  /** The server settings the kinds' strategies and subresources read. */
  readonly settings: Readonly<KindSettings>;

  constructor(cfg: RegistryConfig) {
    this.kinds = cfg.kinds.map((k) => withoutGatedSubresources(k, cfg.featureGates));
    // Kinds' hooks reach other kinds' stores through the settings (a Service's delete removes its Endpoints).
    this.settings = { ...(cfg.settings ?? {}), lookup: (group, resource) => this.storeOfResource(group, resource) };
    // Lazy definitions (lazydefs.ts) stay unread until a request needs them.
    this.definitions = mergeDefinitions(META_DEFINITIONS, ...cfg.kinds.map((k) => k.definitions));
    for (const decl of this.kinds) {
      const kv = cfg.storage.kvFor(decl.storedAs?.group ?? decl.group, decl.storedAs?.resource ?? decl.resource);
      const watchCache = this.watchCacheFor(cfg, decl, kv);
      const store = new ResourceStore(decl, {
        kv,
        prefix: cfg.storage.prefix,
        featureGates: cfg.featureGates,
        definitions: this.definitions,
        ...(cfg.admission ? { admission: cfg.admission } : {}),
        ...(cfg.now ? { now: cfg.now } : {}),
        settings: this.settings,
        ...(cfg.deleteCollectionWorkers ? { deleteCollectionWorkers: cfg.deleteCollectionWorkers } : {}),
        ...(watchCache ? { watchCache } : {}),
        storageEncoding: storageEncoding(cfg.storageMediaType ?? 'application/json'),
        fieldManager: kindFieldManager(decl, cfg.kinds),
        ...(cfg.leaseReuseDurationSeconds ? { leaseReuseDurationSeconds: cfg.leaseReuseDurationSeconds } : {}),
      });
      this.stores.set(`${decl.group}/${decl.version}/${decl.resource}`, store);
      // Kinds that are never stored (reviews) have no objects to count.
      if (!decl.storedAs && !decl.compute) cfg.storage.trackCount(decl.group, decl.resource, store.listPrefix(''));
    }
  }

  /**
   * The cache a kind reads through, shared with the other versions stored in the same place (the first one's
   * size wins); undefined when its size is 0 or it is never stored.
   */
  private watchCacheFor(cfg: RegistryConfig, decl: KindDecl, kv: ReturnType<Storage['kvFor']>): WatchCache | undefined {
    const size = cfg.watchCacheSize?.(decl.group, decl.resource) ?? 0;
    if (size <= 0 || decl.compute) return undefined;
    const resource = groupResourceName(decl.storedAs?.group ?? decl.group, decl.storedAs?.resource ?? decl.resource);
    let cache = this.watchCaches.get(resource);
    if (!cache) {
      const prefix = `${cfg.storage.prefix}/${decl.storedAs?.resource ?? decl.resource}/`;
      const objectType = `*${decl.group === '' ? 'core' : decl.group.split('.')[0]}.${decl.kind}`;
      cache = new WatchCache(kv, { prefix, capacity: size, resource, objectType, ...(cfg.log ? { log: cfg.log } : {}) });
      this.watchCaches.set(resource, cache);
    }
    return cache;
  }

  /** Fills every watch cache (one storage list and watch each); reads use storage until a cache is ready. */
  async startWatchCaches(): Promise<void> {
    await Promise.all([...this.watchCaches.values()].map((c) => c.start()));
  }

  /** Stops every watch cache, ending its watchers. */
  async stopWatchCaches(): Promise<void> {
    await Promise.all([...this.watchCaches.values()].map((c) => c.stop()));
  }

  /** The store of a resource, or undefined when the group, version or resource is not served. */
  store(group: string, version: string, resource: string): ResourceStore | undefined {
    return this.stores.get(`${group}/${version}/${resource}`);
  }

  /** The store of a kind by its name (e.g. 'Namespace' in group ''). */
  storeOfKind(group: string, kind: string): ResourceStore | undefined {
    for (const s of this.stores.values()) if (s.decl.group === group && s.decl.kind === kind) return s;
    return undefined;
  }

  /** The store of a resource in any served version of its group (the first declared). */
  storeOfResource(group: string, resource: string): ResourceStore | undefined {
    for (const s of this.stores.values()) if (s.decl.group === group && s.decl.resource === resource) return s;
    return undefined;
  }

  all(): ResourceStore[] {
    return [...this.stores.values()];
  }
}

/** The kind without the write subresources whose feature gate is off (a gate left out of the map counts as on). */
function withoutGatedSubresources(decl: KindDecl, gates: Readonly<Record<string, boolean>>): KindDecl {
  const subs = decl.subresources;
  if (!subs || !Object.values(subs).some((s) => s?.featureGate !== undefined && gates[s.featureGate] === false)) return decl;
  const kept = Object.fromEntries(Object.entries(subs).filter(([, s]) => !(s?.featureGate !== undefined && gates[s.featureGate] === false)));
  return { ...decl, subresources: kept };
}
