/**
 * Spans for storage calls (--tracing-config-file): a view of the storage whose KVs start a child span of
 * the current request span around each get, list, count, create, update, delete, lease grant and watch.
 * Spans are named after the etcd v3 call the operation is (as kube-apiserver 1.23's otelgrpc-instrumented
 * etcd client names them: 'etcdserverpb.KV/Range', 'etcdserverpb.KV/Txn', 'etcdserverpb.Watch/Watch',
 * 'etcdserverpb.Lease/LeaseGrant'), for etcd and the embedded store alike; kind CLIENT. Calls made outside a
 * sampled request span (watch caches, controllers, compaction) are not traced. Used only when tracing is
 * configured: without it the storage is not wrapped at all.
 */
import { childSpan, errorStatus, SpanKind, type Attributes, type Span, type Tracer } from '../util/tracing.js';
import type { Storage } from './factory.js';
import { ForwardingKV } from './forwarding.js';
import type { DeleteResult, GetResult, KV, KeyValue, ListOptions, ListResult, PutOptions, ReadOptions, Watch, WatchOptions } from './interface.js';

/** The instrumentation scope of storage spans. */
export const STORAGE_TRACING_SCOPE = 'k8s.io/apiserver/pkg/storage';

type Rpc = readonly [service: string, method: string];
const RANGE: Rpc = ['etcdserverpb.KV', 'Range'];
const TXN: Rpc = ['etcdserverpb.KV', 'Txn'];
const WATCH: Rpc = ['etcdserverpb.Watch', 'Watch'];
const LEASE_GRANT: Rpc = ['etcdserverpb.Lease', 'LeaseGrant'];

class TracedKV extends ForwardingKV {
  constructor(
    kv: KV,
    private readonly tracer: Tracer,
    private readonly resource: string,
  ) {
    super(kv);
  }

  private start(rpc: Rpc, operation: string, key: string): Span | undefined {
    const attributes: Attributes = {
      'rpc.system': 'grpc',
      'rpc.service': rpc[0],
      'rpc.method': rpc[1],
      'storage.backend': this.kv.backend,
      'storage.operation': operation,
      resource: this.resource,
      key,
    };
    return childSpan(this.tracer, `${rpc[0]}/${rpc[1]}`, { kind: SpanKind.CLIENT, attributes, scope: STORAGE_TRACING_SCOPE });
  }

  private async traced<T>(rpc: Rpc, operation: string, key: string, call: () => Promise<T>): Promise<T> {
    const span = this.start(rpc, operation, key);
    if (!span) return call();
    try {
      const out = await call();
      span.end();
      return out;
    } catch (err) {
      span.end(errorStatus(err));
      throw err;
    }
  }

  override get(key: string, opts?: ReadOptions): Promise<GetResult> {
    return this.traced(RANGE, 'get', key, () => this.kv.get(key, opts));
  }

  override list(prefix: string, opts?: ListOptions): Promise<ListResult> {
    return this.traced(RANGE, 'list', prefix, () => this.kv.list(prefix, opts));
  }

  override count(prefix: string): Promise<number> {
    return this.traced(RANGE, 'count', prefix, () => this.kv.count(prefix));
  }

  override create(key: string, value: Uint8Array, opts?: PutOptions): Promise<KeyValue> {
    return this.traced(TXN, 'create', key, () => this.kv.create(key, value, opts));
  }

  override update(key: string, value: Uint8Array, expectedModRevision: number, opts?: PutOptions): Promise<KeyValue> {
    return this.traced(TXN, 'update', key, () => this.kv.update(key, value, expectedModRevision, opts));
  }

  override delete(key: string, expectedModRevision?: number): Promise<DeleteResult> {
    return this.traced(TXN, 'delete', key, () => this.kv.delete(key, expectedModRevision));
  }

  override grantLease(ttlSeconds: number): Promise<number> {
    return this.traced(LEASE_GRANT, 'grantLease', '', () => this.kv.grantLease(ttlSeconds));
  }

  /** A watch's span lasts until the watch is closed. */
  override watch(key: string, opts?: WatchOptions): Watch {
    const span = this.start(WATCH, 'watch', key);
    const w = this.kv.watch(key, opts);
    if (!span) return w;
    const close = w.close.bind(w);
    w.close = () => {
      close();
      span.end();
    };
    return w;
  }
}

/** The storage as the registry should see it with tracing on: every resource's KV traced. */
export function traceStorage(storage: Storage, tracer: Tracer): Storage {
  const traced = new Map<string, KV>();
  const wrapped = Object.create(storage) as Storage;
  Object.defineProperty(wrapped, 'kvFor', {
    value: (group: string, resource: string): KV => {
      const name = group === '' ? resource : `${resource}.${group}`;
      let kv = traced.get(name);
      if (!kv) traced.set(name, (kv = new TracedKV(storage.kvFor(group, resource), tracer, name)));
      return kv;
    },
  });
  return wrapped;
}
