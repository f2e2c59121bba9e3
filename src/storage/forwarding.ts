/**
 * A KV that hands every call to another: the base of KV decorators (value transformers, timing), which
 * override only the calls they change.
 */
import type { DeleteResult, GetResult, KV, KeyValue, ListOptions, ListResult, PutOptions, ReadOptions, StoreStats, Watch, WatchOptions } from './interface.js';

export class ForwardingKV implements KV {
  constructor(protected readonly kv: KV) {}

  get backend(): string {
    return this.kv.backend;
  }

  get(key: string, opts?: ReadOptions): Promise<GetResult> {
    return this.kv.get(key, opts);
  }

  list(prefix: string, opts?: ListOptions): Promise<ListResult> {
    return this.kv.list(prefix, opts);
  }

  count(prefix: string): Promise<number> {
    return this.kv.count(prefix);
  }

  create(key: string, value: Uint8Array, opts?: PutOptions): Promise<KeyValue> {
    return this.kv.create(key, value, opts);
  }

  update(key: string, value: Uint8Array, expectedModRevision: number, opts?: PutOptions): Promise<KeyValue> {
    return this.kv.update(key, value, expectedModRevision, opts);
  }

  delete(key: string, expectedModRevision?: number): Promise<DeleteResult> {
    return this.kv.delete(key, expectedModRevision);
  }

  watch(key: string, opts?: WatchOptions): Watch {
    return this.kv.watch(key, opts);
  }

  compact(revision: number): Promise<void> {
    return this.kv.compact(revision);
  }

  currentRevision(): Promise<number> {
    return this.kv.currentRevision();
  }

  grantLease(ttlSeconds: number): Promise<number> {
    return this.kv.grantLease(ttlSeconds);
  }

  stats(): Promise<StoreStats> {
    return this.kv.stats();
  }

  close(): Promise<void> {
    return this.kv.close();
  }
}
