/**
 * The storage's metrics on the server's registry: apiserver_storage_objects and the database size from the
 * storage's polls, and etcd_request_duration_seconds from a timed view of the storage the registry uses.
 */
import { join } from 'node:path';
import { EMBEDDED_DB_FILE, parseServersOverride, type Storage, type StorageConfig } from '../storage/factory.js';
import { ForwardingKV } from '../storage/forwarding.js';
import type { KV } from '../storage/interface.js';
import { STORAGE_DURATION_BUCKETS, type HistogramSeries, type ServerMetrics } from './metrics.js';

/**
 * The storage metrics, from the storage's count and size polls (--kvstore-count-metric-poll-period,
 * --kvstore-db-metric-poll-interval): apiserver_storage_objects (and 1.22's etcd_object_counts, hidden in
 * 1.23), and the database size per endpoint under 1.23's name etcd_db_total_size_in_bytes and the later
 * apiserver_storage_db_total_size_in_bytes. The endpoint label is the store's server URLs (comma-separated)
 * or, for the embedded store, 'file://<path>' or 'memory'.
 */
export function registerStorageMetrics(metrics: ServerMetrics, storage: Storage, cfg: StorageConfig): void {
  const objectsHelp = 'Number of stored objects at the time of last check split by kind.';
  const counts = () => storage.metrics.objectCounts;
  metrics.gaugeFromMap({ name: 'apiserver_storage_objects', help: objectsHelp, stability: 'STABLE' }, 'resource', counts);
  metrics.gaugeFromMap({ name: 'etcd_object_counts', help: objectsHelp, deprecatedVersion: '1.22.0' }, 'resource', counts);
  const endpoints = new Map<string, string>();
  endpoints.set(
    'default',
    cfg.servers.length > 0 ? cfg.servers.join(',') : cfg.dataDir === ':memory:' ? 'memory' : `file://${join(cfg.dataDir, EMBEDDED_DB_FILE)}`,
  );
  for (const entry of cfg.serversOverrides) {
    const o = parseServersOverride(entry);
    endpoints.set(o.group ? `${o.resource}.${o.group}` : o.resource, o.servers.join(','));
  }
  const sizeHelp = 'Total size of the etcd database file physically allocated in bytes.';
  const sizes = () => storage.metrics.dbSizeBytes;
  const endpointOf = (key: string) => endpoints.get(key) ?? key;
  metrics.gaugeFromMap({ name: 'etcd_db_total_size_in_bytes', help: sizeHelp }, 'endpoint', sizes, endpointOf);
  metrics.gaugeFromMap({ name: 'apiserver_storage_db_total_size_in_bytes', help: sizeHelp }, 'endpoint', sizes, endpointOf);
}

/** Kubernetes' type name of a kind in etcd_request_duration_seconds: '*core.Pod', '*coordination.Lease'. */
function storageTypeName(group: string, kind: string): string {
  return `*${group === '' ? 'core' : group.split('.')[0]}.${kind}`;
}

/** A KV whose reads and writes are timed into etcd_request_duration_seconds{operation,type}. */
class TimedKV extends ForwardingKV {
  constructor(
    kv: KV,
    private readonly s: Record<'get' | 'list' | 'listWithCount' | 'create' | 'update' | 'delete', HistogramSeries>,
  ) {
    super(kv);
  }

  override async get(key: string, opts?: Parameters<KV['get']>[1]): ReturnType<KV['get']> {
    const t = performance.now();
    try {
      return await this.kv.get(key, opts);
    } finally {
      this.s.get.observe((performance.now() - t) / 1000);
    }
  }

  override async list(prefix: string, opts?: Parameters<KV['list']>[1]): ReturnType<KV['list']> {
    const t = performance.now();
    try {
      return await this.kv.list(prefix, opts);
    } finally {
      this.s.list.observe((performance.now() - t) / 1000);
    }
  }

  override async count(prefix: string): Promise<number> {
    const t = performance.now();
    try {
      return await this.kv.count(prefix);
    } finally {
      this.s.listWithCount.observe((performance.now() - t) / 1000);
    }
  }

  override async create(key: string, value: Uint8Array, opts?: Parameters<KV['create']>[2]): ReturnType<KV['create']> {
    const t = performance.now();
    try {
      return await this.kv.create(key, value, opts);
    } finally {
      this.s.create.observe((performance.now() - t) / 1000);
    }
  }

  override async update(key: string, value: Uint8Array, expected: number, opts?: Parameters<KV['update']>[3]): ReturnType<KV['update']> {
    const t = performance.now();
    try {
      return await this.kv.update(key, value, expected, opts);
    } finally {
      this.s.update.observe((performance.now() - t) / 1000);
    }
  }

  override async delete(key: string, expected?: number): ReturnType<KV['delete']> {
    const t = performance.now();
    try {
      return await this.kv.delete(key, expected);
    } finally {
      this.s.delete.observe((performance.now() - t) / 1000);
    }
  }

}

/**
 * The storage as the registry should see it: every resource's KV timed into etcd_request_duration_seconds
 * (Kubernetes 1.23's buckets; type the kind's internal type name, '*core.PersistentVolumeClaim', and its
 * List type for lists). The storage itself (its compactor and polls) is not timed. When the metric is
 * disabled, the storage is returned as it is.
 */
export function instrumentStorage(storage: Storage, metrics: ServerMetrics, kinds: readonly { group: string; resource: string; kind: string }[]): Storage {
  const histogram = metrics.fastHistogram({
    name: 'etcd_request_duration_seconds',
    help: 'Etcd request latency in seconds for each operation and object type.',
    buckets: STORAGE_DURATION_BUCKETS,
  });
  if (!histogram) return storage;
  const timed = new Map<string, KV>();
  const wrapped = Object.create(storage) as Storage;
  Object.defineProperty(wrapped, 'kvFor', {
    value: (group: string, resource: string): KV => {
      const key = `${group}/${resource}`;
      let kv = timed.get(key);
      if (!kv) {
        const kind = kinds.find((k) => k.group === group && k.resource === resource)?.kind ?? resource;
        const type = storageTypeName(group, kind);
        const series = (operation: string, t = type) => histogram.series({ operation, type: t });
        kv = new TimedKV(storage.kvFor(group, resource), {
          get: series('get'),
          list: series('list', `${type}List`),
          listWithCount: series('listWithCount', `${type}List`),
          create: series('create'),
          update: series('update'),
          delete: series('delete'),
        });
        timed.set(key, kv);
      }
      return kv;
    },
  });
  return wrapped;
}
