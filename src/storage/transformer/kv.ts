/**
 * A KV whose values pass through a value transformer: written values are transformed to storage (with the
 * key as their context), values read (gets, lists, watch events, the previous value of a delete, the
 * current value of a conflict) are transformed back. Keys, revisions and leases are the store's.
 *
 * A value read by a transformer other than the writing one comes back with `stale` set, so that the
 * registry rewrites it even when the object did not change (Kubernetes' GuaranteedUpdate does the same).
 * A value no transformer can read fails the call with an Internal storage error naming the key.
 */
import { StorageError, errors } from '../errors.js';
import { ForwardingKV } from '../forwarding.js';
import type {
  DeleteResult,
  GetResult,
  KV,
  KeyValue,
  ListOptions,
  ListResult,
  PutOptions,
  ReadOptions,
  Watch,
  WatchEvent,
  WatchOptions,
} from '../interface.js';
import type { ValueTransformer } from './transformer.js';

export class TransformingKV extends ForwardingKV {
  constructor(
    kv: KV,
    private readonly transformer: ValueTransformer,
  ) {
    super(kv);
  }

  override async get(key: string, opts?: ReadOptions): Promise<GetResult> {
    const res = await this.kv.get(key, opts);
    return res.kv ? { ...res, kv: await this.read(res.kv) } : res;
  }

  override async list(prefix: string, opts?: ListOptions): Promise<ListResult> {
    const res = await this.kv.list(prefix, opts);
    const kvs: KeyValue[] = [];
    for (const kv of res.kvs) kvs.push(await this.read(kv));
    return { ...res, kvs };
  }

  override async create(key: string, value: Uint8Array, opts?: PutOptions): Promise<KeyValue> {
    const kv = await this.kv.create(key, await this.write(key, value), opts);
    return { ...kv, value };
  }

  override async update(key: string, value: Uint8Array, expectedModRevision: number, opts?: PutOptions): Promise<KeyValue> {
    const stored = await this.write(key, value);
    try {
      return { ...(await this.kv.update(key, stored, expectedModRevision, opts)), value };
    } catch (err) {
      throw await this.readConflict(err);
    }
  }

  override async delete(key: string, expectedModRevision?: number): Promise<DeleteResult> {
    let res: DeleteResult;
    try {
      res = await this.kv.delete(key, expectedModRevision);
    } catch (err) {
      throw await this.readConflict(err);
    }
    return { ...res, prevKv: await this.read(res.prevKv) };
  }

  override watch(key: string, opts?: WatchOptions): Watch {
    const inner = this.kv.watch(key, opts);
    const it = inner[Symbol.asyncIterator]();
    const next = async (): Promise<IteratorResult<WatchEvent>> => {
      const r = await it.next();
      if (r.done) return r;
      return { done: false, value: await this.readEvent(r.value) };
    };
    // A backend's progress notification holds for this watch too: it hands out the same events, in order.
    const progress = (inner as { progress?: () => number | undefined }).progress;
    return {
      close: () => inner.close(),
      ...(progress ? { progress: () => progress.call(inner) } : {}),
      [Symbol.asyncIterator]: () => ({
        next,
        return: async (v?: unknown) => {
          inner.close();
          return (await it.return?.(v)) ?? { done: true, value: undefined };
        },
      }),
    };
  }

  private async write(key: string, value: Uint8Array): Promise<Uint8Array> {
    try {
      return await this.transformer.toStorage(value, { key });
    } catch (err) {
      throw errors.internal(`unable to transform key "${key}": ${(err as Error).message}`);
    }
  }

  private async read(kv: KeyValue): Promise<KeyValue> {
    // The empty value of a deleted key (or of a delete event whose previous value is gone) is not transformed.
    if (kv.value.length === 0) return kv;
    try {
      const out = await this.transformer.fromStorage(kv.value, { key: kv.key });
      return out.stale ? { ...kv, value: out.data, stale: true } : { ...kv, value: out.data };
    } catch (err) {
      throw errors.internal(`unable to transform key "${kv.key}": ${(err as Error).message}`);
    }
  }

  private async readEvent(ev: WatchEvent): Promise<WatchEvent> {
    if (ev.type === 'delete') return { ...ev, prevKv: await this.read(ev.prevKv) };
    return { ...ev, kv: await this.read(ev.kv), prevKv: ev.prevKv ? await this.read(ev.prevKv) : null };
  }

  private async readConflict(err: unknown): Promise<unknown> {
    if (!(err instanceof StorageError) || err.code !== 'Conflict' || !err.details.current) return err;
    const current = await this.read(err.details.current);
    return new StorageError(err.code, err.message, { ...err.details, current });
  }
}
