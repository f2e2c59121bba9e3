/**
 * A range of numbered items (offsets 0..size-1) allocated through storage, as Kubernetes' RangeAllocation
 * objects do it (pkg/registry/core/service/allocator and its etcd-backed storage): the bitmap of taken
 * offsets lives in one storage key, and every allocation or release writes it with compare-and-swap on the
 * key's revision. Several servers sharing the store therefore never hand out one offset twice: a write
 * that lost the race re-reads the bitmap and tries again.
 *
 * Within one server the operations of an allocator run one at a time (a promise chain), so concurrent
 * requests do not race each other into conflicts; the bitmap read last is kept and used as the expected
 * revision of the next write, so an allocation costs one storage write when nothing else writes the key.
 *
 * The stored value is Kubernetes' RangeAllocation as JSON: `range` names what the offsets mean (a CIDR or
 * a port range) and `data` is the bitmap as the big-endian bytes of a big integer whose bit i is offset i.
 * A stored bitmap of another range (the option changed) is discarded.
 */
import { randomInt } from 'node:crypto';
import { StorageError } from '../../storage/errors.js';
import type { KV, KeyValue } from '../../storage/interface.js';
import { decodeStored, encodeStored, type StorageEncoding } from '../storagecodec.js';

export type AllocationErrorKind = 'allocated' | 'notInRange' | 'full';

/** A refused allocation; the message is Kubernetes' (the caller adds the field path). */
export class AllocationError extends Error {
  constructor(
    readonly kind: AllocationErrorKind,
    message: string,
  ) {
    super(message);
  }
}

/** A set of offsets as a bit array (offset i is bit i % 8 of byte i / 8). */
export class Bitmap {
  readonly bytes: Uint8Array;
  constructor(readonly size: number, bytes?: Uint8Array) {
    this.bytes = new Uint8Array(Math.ceil(size / 8));
    if (bytes) this.bytes.set(bytes.subarray(0, this.bytes.length));
  }
  has(i: number): boolean {
    return i >= 0 && i < this.size && (this.bytes[i >> 3]! & (1 << (i & 7))) !== 0;
  }
  set(i: number): void {
    this.bytes[i >> 3]! |= 1 << (i & 7);
  }
  clear(i: number): void {
    this.bytes[i >> 3]! &= ~(1 << (i & 7));
  }
  count(): number {
    let n = 0;
    for (const b of this.bytes) for (let v = b; v; v &= v - 1) n++;
    return n;
  }
  offsets(): number[] {
    const out: number[] = [];
    // Byte by byte, skipping empty ones: the repair at every start reads ranges of thousands of offsets.
    for (let k = 0; k < this.bytes.length; k++) {
      const b = this.bytes[k]!;
      if (b === 0) continue;
      for (let bit = 0; bit < 8; bit++) {
        const i = k * 8 + bit;
        if (b & (1 << bit) && i < this.size) out.push(i);
      }
    }
    return out;
  }
  clone(): Bitmap {
    return new Bitmap(this.size, this.bytes);
  }
  /** big.Int.Bytes() of the bitmap: big-endian, without leading zero bytes. */
  toBigEndian(): Buffer {
    let end = this.bytes.length;
    while (end > 0 && this.bytes[end - 1] === 0) end--;
    return Buffer.from(this.bytes.subarray(0, end)).reverse();
  }
  static fromBigEndian(size: number, data: Uint8Array): Bitmap {
    return new Bitmap(size, Buffer.from(data).reverse());
  }
}

interface State {
  bits: Bitmap;
  /** modRevision of the stored key; 0 when the key does not exist. */
  rev: number;
}

/** Leaked offsets are kept this many repairs before they are freed (Kubernetes' numRepairsBeforeLeakCleanup). */
export const REPAIRS_BEFORE_LEAK_CLEANUP = 3;

export class RangeAllocator {
  private state: State | undefined;
  private queue: Promise<unknown> = Promise.resolve();
  /** Offsets taken in storage that no object holds, with the repairs that have seen them so. */
  private readonly leaks = new Map<number, number>();

  /**
   * @param key the storage key of the bitmap, e.g. '/registry/ranges/serviceips'
   * @param range what the offsets mean, as stored in `range` ('10.0.0.0/24', '30000-32767')
   */
  constructor(
    private readonly kv: KV,
    readonly key: string,
    readonly size: number,
    readonly range: string,
    /** --storage-media-type: the bitmap is stored as kube-apiserver stores it (protobuf core/v1 RangeAllocation by default). */
    private readonly encoding: StorageEncoding = 'json',
  ) {}

  /** Runs `fn` after every earlier operation of this allocator. */
  private serialize<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => undefined);
    return run;
  }

  private decode(kv: KeyValue | null): State {
    if (!kv) return { bits: new Bitmap(this.size), rev: 0 };
    try {
      // Read whatever encoding it was written in.
      const obj = decodeStored(kv.value) as { range?: unknown; data?: unknown };
      if (obj.range === this.range && typeof obj.data === 'string') {
        return { bits: Bitmap.fromBigEndian(this.size, Buffer.from(obj.data, 'base64')), rev: kv.modRevision };
      }
    } catch {
      // An unreadable bitmap is rebuilt by the repair from the stored objects.
    }
    return { bits: new Bitmap(this.size), rev: kv.modRevision };
  }

  private encode(bits: Bitmap): Buffer {
    return encodeStored(
      {
        kind: 'RangeAllocation',
        apiVersion: 'v1',
        metadata: { creationTimestamp: null },
        range: this.range,
        data: bits.toBigEndian().toString('base64'),
      },
      this.encoding,
    );
  }

  private async load(): Promise<State> {
    this.state ??= this.decode((await this.kv.get(this.key)).kv);
    return this.state;
  }

  /**
   * Applies `change` to the current bitmap and stores the result with compare-and-swap, re-reading and
   * re-applying on a conflict. `change` returns its result and whether it changed the bitmap.
   */
  private mutate<T>(change: (bits: Bitmap) => { result: T; changed: boolean }): Promise<T> {
    return this.serialize(async () => {
      for (let attempt = 1; ; attempt++) {
        const fresh = this.state === undefined;
        const state = await this.load();
        const bits = state.bits.clone();
        let outcome: { result: T; changed: boolean };
        try {
          outcome = change(bits);
        } catch (err) {
          // A refusal seen on a bitmap read earlier is checked against storage (another server may have
          // released the offset since).
          if (err instanceof AllocationError && !fresh) {
            this.state = undefined;
            continue;
          }
          throw err;
        }
        const { result, changed } = outcome;
        if (!changed) return result;
        try {
          const kv = state.rev === 0 ? await this.kv.create(this.key, this.encode(bits)) : await this.kv.update(this.key, this.encode(bits), state.rev);
          this.state = { bits, rev: kv.modRevision };
          return result;
        } catch (err) {
          if (!(err instanceof StorageError) || attempt >= 32) throw err;
          if (err.code === 'Conflict' && err.details.current !== undefined) this.state = this.decode(err.details.current);
          else if (err.code === 'Conflict' || err.code === 'KeyExists' || err.code === 'NotFound') this.state = undefined;
          else throw err;
        }
      }
    });
  }

  /** Takes `offset`; fails with 'allocated' when it is taken. A dry run only checks. */
  allocate(offset: number, allocatedMessage: string, dryRun = false): Promise<void> {
    if (dryRun) {
      return this.serialize(async () => {
        this.state = undefined;
        if ((await this.load()).bits.has(offset)) throw new AllocationError('allocated', allocatedMessage);
      });
    }
    return this.mutate((bits) => {
      if (bits.has(offset)) throw new AllocationError('allocated', allocatedMessage);
      bits.set(offset);
      return { result: undefined, changed: true };
    });
  }

  /**
   * Takes a free offset, scanning from a random one as Kubernetes does; a dry run only finds it. Offsets
   * below `reserved` are never picked (they are only taken by name).
   */
  allocateNext(dryRun = false, reserved = 0): Promise<number> {
    const pick = (bits: Bitmap): number => {
      const span = this.size - reserved;
      if (span <= 0) throw new AllocationError('full', 'range is full');
      for (let k = 0, start = randomInt(span); k < span; k++) {
        const i = reserved + ((start + k) % span);
        if (!bits.has(i)) return i;
      }
      throw new AllocationError('full', 'range is full');
    };
    if (dryRun) {
      return this.serialize(async () => {
        this.state = undefined;
        return pick((await this.load()).bits);
      });
    }
    return this.mutate((bits) => {
      const i = pick(bits);
      bits.set(i);
      return { result: i, changed: true };
    });
  }

  /** Frees `offset` (nothing happens when it is free). */
  release(offset: number): Promise<void> {
    return this.mutate((bits) => {
      if (!bits.has(offset)) return { result: undefined, changed: false };
      bits.clear(offset);
      return { result: undefined, changed: true };
    });
  }

  /** Whether `offset` is taken, as last read (reads storage first when nothing was read yet). */
  has(offset: number): Promise<boolean> {
    return this.serialize(async () => (await this.load()).bits.has(offset));
  }

  /** Forgets the bitmap read last, so the next operation reads storage (for tests of other writers). */
  forget(): void {
    this.state = undefined;
  }

  /**
   * Kubernetes' repair loop for one range: the stored bitmap becomes exactly the offsets `inUse` (what the
   * stored objects hold), except that offsets taken in storage but held by no object (leaks, or
   * allocations whose object is not written yet) stay taken until REPAIRS_BEFORE_LEAK_CLEANUP repairs have
   * seen them so. Reads storage afresh. Returns the offsets freed as leaks.
   */
  repair(inUse: Iterable<number>): Promise<number[]> {
    const used = new Bitmap(this.size);
    for (const i of inUse) if (i >= 0 && i < this.size) used.set(i);
    this.state = undefined;
    return this.mutate((bits) => {
      const next = used.clone();
      const freed: number[] = [];
      const seen = new Set<number>();
      for (const i of bits.offsets()) {
        if (used.has(i)) continue;
        seen.add(i);
        const count = (this.leaks.get(i) ?? 0) + 1;
        if (count >= REPAIRS_BEFORE_LEAK_CLEANUP) {
          this.leaks.delete(i);
          freed.push(i);
        } else {
          this.leaks.set(i, count);
          next.set(i);
        }
      }
      for (const i of this.leaks.keys()) if (!seen.has(i)) this.leaks.delete(i);
      const changed = next.bytes.some((b, k) => b !== bits.bytes[k]);
      if (changed || this.state?.rev === 0) {
        bits.bytes.set(next.bytes);
        return { result: freed, changed: true };
      }
      return { result: freed, changed: false };
    });
  }
}
