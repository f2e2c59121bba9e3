/**
 * Opens the storage the server runs on, from the --kvstore-* and --data-dir options: the embedded store
 * (a file under the data directory, or memory) when no servers are given, etcd otherwise, with per-resource
 * etcd overrides. Runs the periodic compaction and the count and size polls whose figures feed metrics.
 */
import { join } from 'node:path';
import { StorageError, errors } from './errors.js';
import type { EtcdOptions } from './etcd.js';
import type { KV } from './interface.js';
import { openSqlite } from './sqlite.js';
import { TransformingKV } from './transformer/kv.js';
import type { ValueTransformer } from './transformer/transformer.js';
import type { Dialer } from '../util/dial.js';

export interface StorageConfig {
  /** --kvstore-servers; empty for the embedded store. */
  servers: string[];
  /** --kvstore-servers-overrides: 'group/resource#url;url' (core group: '/resource#...'). */
  serversOverrides: string[];
  /** --kvstore-prefix. */
  prefix: string;
  caFile?: string;
  certFile?: string;
  keyFile?: string;
  healthcheckTimeoutMs: number;
  /** 0 disables compaction. */
  compactionIntervalMs: number;
  /** 0 disables the poll. */
  countMetricPollPeriodMs: number;
  /** 0 disables the poll. */
  dbMetricPollIntervalMs: number;
  /** Directory of the embedded store, or ':memory:'. */
  dataDir: string;
  /** Where failures of the periodic tasks are logged; default standard error. */
  log?: (message: string) => void;
  /**
   * --encryption-provider-config: the value transformer of each resource ('secrets', 'deployments.apps')
   * whose values are encrypted at rest. Closed with the storage.
   */
  transformers?: ReadonlyMap<string, ValueTransformer>;
  /** The etcd egress (--egress-selector-config-file): the etcd clients' connections go through it. */
  dial?: Dialer;
}

export const EMBEDDED_DB_FILE = 'state.db';

export interface StorageMetrics {
  /** Objects per resource ('pods', 'persistentvolumeclaims', 'ingresses.networking.k8s.io'), from the count poll. */
  objectCounts: Map<string, number>;
  /** Size of each store's data ('default' or the override's resource), from the size poll. */
  dbSizeBytes: Map<string, number>;
}

export interface Storage {
  readonly prefix: string;
  /** The store of a resource: its override when one is configured, else the default store. */
  kvFor(group: string, resource: string): KV;
  /** Counts keys under `keyPrefix` at every count poll, reported as `resource`. */
  trackCount(group: string, resource: string, keyPrefix: string): void;
  readonly metrics: StorageMetrics;
  /** Compacts each store once now (what the periodic compactor does each interval). */
  compactNow(): Promise<void>;
  close(): Promise<void>;
}

export interface ServersOverride {
  group: string;
  resource: string;
  servers: string[];
}

/** Parses one --kvstore-servers-overrides entry; throws a message naming the option on a malformed one. */
export function parseServersOverride(entry: string): ServersOverride {
  const hash = entry.indexOf('#');
  const gr = hash < 0 ? '' : entry.slice(0, hash);
  const slash = gr.indexOf('/');
  const servers = hash < 0 ? [] : entry.slice(hash + 1).split(';').filter((s) => s !== '');
  if (hash < 0 || slash < 0 || gr.slice(slash + 1) === '' || servers.length === 0) {
    throw errors.invalid(
      `invalid --kvstore-servers-overrides entry "${entry}": expected 'group/resource#url;url' (core group: '/resource#url')`,
    );
  }
  for (const s of servers) {
    if (!/^https?:\/\/[^/]+/.test(s)) {
      throw errors.invalid(`invalid server "${s}" in --kvstore-servers-overrides: must be an http:// or https:// URL`);
    }
  }
  return { group: gr.slice(0, slash), resource: gr.slice(slash + 1), servers };
}

const resourceKey = (group: string, resource: string) => (group ? `${resource}.${group}` : resource);

export async function openStorage(cfg: StorageConfig): Promise<Storage> {
  const tls = { caFile: cfg.caFile, certFile: cfg.certFile, keyFile: cfg.keyFile, ...(cfg.dial ? { dial: cfg.dial } : {}) };
  const overrides = cfg.serversOverrides.map(parseServersOverride);
  const opened: KV[] = [];
  // The etcd client (and gRPC under it) is loaded only when etcd is used: it costs some 25 MiB of memory.
  const openEtcd = async (opts: EtcdOptions): Promise<KV> => (await import('./etcd.js')).openEtcd(opts);
  try {
    const main =
      cfg.servers.length === 0
        ? await openSqlite({ path: cfg.dataDir === ':memory:' ? ':memory:' : join(cfg.dataDir, EMBEDDED_DB_FILE) })
        : await openEtcd({ endpoints: cfg.servers, ...tls, healthcheckTimeoutMs: cfg.healthcheckTimeoutMs });
    opened.push(main);
    const byResource = new Map<string, KV>();
    for (const o of overrides) {
      const kv = await openEtcd({ endpoints: o.servers, ...tls, healthcheckTimeoutMs: cfg.healthcheckTimeoutMs });
      opened.push(kv);
      byResource.set(resourceKey(o.group, o.resource), kv);
    }
    return new StorageImpl(cfg, main, byResource);
  } catch (err) {
    await Promise.allSettled(opened.map((kv) => kv.close()));
    throw err;
  }
}

/** The key the compactors of several servers sharing one store agree through, as kube-apiserver does. */
const COMPACT_KEY = 'compact_rev_key';

class StorageImpl implements Storage {
  readonly metrics: StorageMetrics = { objectCounts: new Map(), dbSizeBytes: new Map() };
  private readonly counted = new Map<string, { kv: KV; keyPrefix: string }>();
  private readonly timers: NodeJS.Timeout[] = [];
  private firstCountScheduled = false;
  /** Per store: the revision seen at the previous compaction tick, compacted to at the next. */
  private readonly lastSeen = new Map<KV, { revision: number; keyRevision: number }>();
  private closed = false;
  private readonly transformed = new Map<string, KV>();

  constructor(
    private readonly cfg: StorageConfig,
    private readonly main: KV,
    private readonly byResource: Map<string, KV>,
  ) {
    this.every(cfg.compactionIntervalMs, () => this.compactNow());
    this.every(cfg.countMetricPollPeriodMs, () => this.pollCounts());
    this.every(cfg.dbMetricPollIntervalMs, () => this.pollSizes());
  }

  get prefix(): string {
    return this.cfg.prefix;
  }

  kvFor(group: string, resource: string): KV {
    const key = resourceKey(group, resource);
    const kv = this.byResource.get(key) ?? this.main;
    const transformer = this.cfg.transformers?.get(key);
    if (!transformer) return kv;
    let t = this.transformed.get(key);
    if (!t) this.transformed.set(key, (t = new TransformingKV(kv, transformer)));
    return t;
  }

  trackCount(group: string, resource: string, keyPrefix: string): void {
    this.counted.set(resourceKey(group, resource), { kv: this.kvFor(group, resource), keyPrefix });
    // The first counts right after the resources are tracked, as Kubernetes polls at once (wait.Forever):
    // priority and fairness sizes lists by them.
    if (!this.firstCountScheduled) {
      this.firstCountScheduled = true;
      this.every(this.cfg.countMetricPollPeriodMs, () => this.pollCounts(), true);
    }
  }

  private stores(): [string, KV][] {
    return [['default', this.main], ...this.byResource.entries()];
  }

  /** Runs `fn` every `ms` (and, with `now`, once on the next turn of the event loop). */
  private every(ms: number, fn: () => Promise<void>, now = false): void {
    if (ms <= 0) return;
    const run = () => {
      fn().catch((err: unknown) => {
        if (!this.closed) (this.cfg.log ?? ((m: string) => process.stderr.write(`${m}\n`)))(`storage: periodic task failed: ${(err as Error).message}`);
      });
    };
    if (now) {
      const first = setTimeout(run, 0);
      first.unref();
      this.timers.push(first);
      return;
    }
    const t = setInterval(run, ms);
    t.unref();
    this.timers.push(t);
  }

  /**
   * One compaction tick per store: compacts to the revision seen at the previous tick, so that at least one
   * interval of history stays readable. Servers sharing a store coordinate through COMPACT_KEY: a server
   * compacts only when nobody else moved the key since its previous tick.
   */
  async compactNow(): Promise<void> {
    for (const [, kv] of this.stores()) {
      const seen = this.lastSeen.get(kv);
      const key = (await kv.get(COMPACT_KEY)).kv;
      const keyRevision = key?.modRevision ?? 0;
      const revision = await kv.currentRevision();
      if (seen && seen.keyRevision === keyRevision && seen.revision > 0) {
        try {
          const written = key
            ? await kv.update(COMPACT_KEY, Buffer.from(String(seen.revision)), keyRevision)
            : await kv.create(COMPACT_KEY, Buffer.from(String(seen.revision)));
          await kv.compact(seen.revision);
          this.lastSeen.set(kv, { revision, keyRevision: written.modRevision });
          continue;
        } catch (err) {
          if (!(err instanceof StorageError) || !['Conflict', 'KeyExists', 'Compacted'].includes(err.code)) throw err;
        }
      }
      const now = (await kv.get(COMPACT_KEY)).kv;
      this.lastSeen.set(kv, { revision, keyRevision: now?.modRevision ?? 0 });
    }
  }

  private async pollCounts(): Promise<void> {
    for (const [name, { kv, keyPrefix }] of this.counted) this.metrics.objectCounts.set(name, await kv.count(keyPrefix));
  }

  private async pollSizes(): Promise<void> {
    for (const [name, kv] of this.stores()) this.metrics.dbSizeBytes.set(name, (await kv.stats()).dbSizeBytes);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const t of this.timers) clearInterval(t);
    await Promise.allSettled(this.stores().map(([, kv]) => kv.close()));
    for (const t of new Set(this.cfg.transformers?.values())) t.close?.();
  }
}
