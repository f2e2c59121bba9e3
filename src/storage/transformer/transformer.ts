/**
 * Value transformers: what happens to a resource's bytes between the registry and the store (Kubernetes'
 * storage/value). A transformer turns the registry's bytes into stored bytes and back; reading also says
 * whether the value is stale, i.e. was not written by the transformer that writes now, so that rewriting
 * it (even unchanged) re-encrypts it with the current write key.
 *
 * Transformers are built once from the encryption configuration and shared by every request: they keep no
 * per-request state and may be called concurrently.
 */

/** What a transformer knows of the value: the storage key it lives under (AES-GCM's additional data). */
export interface TransformContext {
  key: string;
}

export interface FromStorage {
  data: Uint8Array;
  /** True when the value was read by a transformer other than the one that writes. */
  stale: boolean;
}

export interface ValueTransformer {
  fromStorage(data: Uint8Array, ctx: TransformContext): Promise<FromStorage>;
  toStorage(data: Uint8Array, ctx: TransformContext): Promise<Uint8Array>;
  /** Releases connections (a KMS plugin's); called once when the storage closes. */
  close?(): void;
}

/** How long a transformation took and how it ended, for apiserver_storage_transformation_* metrics. */
export interface TransformObserver {
  transformation(type: 'from_storage' | 'to_storage', prefix: string, status: string, seconds: number): void;
  /** A KMS envelope's data key that was not in the cache and had to be decrypted by the plugin. */
  cacheMiss?(): void;
  /** A data key generated and encrypted by the KMS plugin for a write. */
  dataKeyGeneration?(seconds: number, ok: boolean): void;
}

/** A transformation that failed: the message is Kubernetes' for the same failure. */
export class TransformError extends Error {
  override readonly name = 'TransformError';
  /** gRPC-style status of the failure for metrics: 'Unknown' unless a KMS plugin answered with a code. */
  readonly status: string;
  constructor(message: string, status = 'Unknown') {
    super(message);
    this.status = status;
  }
}

const enc = new TextEncoder();

export function startsWith(data: Uint8Array, prefix: Uint8Array): boolean {
  if (data.length < prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) if (data[i] !== prefix[i]) return false;
  return true;
}

export function concat(...parts: Uint8Array[]): Uint8Array {
  return Buffer.concat(parts);
}

/** The stored bytes of every encrypting provider start with this (and a plaintext object never does). */
export const ENCRYPTED_PREFIX = 'k8s:enc:';

export interface PrefixEntry {
  /** The bytes a stored value starts with; empty for the identity transformer. */
  prefix: string;
  transformer: ValueTransformer;
}

const now = () => performance.now();

/**
 * Kubernetes' prefix transformers: the first entry writes (its prefix, then its output); a read goes to the
 * first entry whose prefix the value starts with. An entry with an empty prefix (identity) that cannot read
 * the value gives way to the next one; any other failure is final. A read by an entry other than the first
 * is stale. No entry matching fails with `noMatch`.
 */
export class PrefixTransformers implements ValueTransformer {
  private readonly entries: { prefix: Uint8Array; label: string; transformer: ValueTransformer }[];

  constructor(
    entries: readonly PrefixEntry[],
    private readonly noMatch: string,
    private readonly observer?: TransformObserver,
  ) {
    if (entries.length === 0) throw new Error('prefix transformers need at least one transformer');
    this.entries = entries.map((e) => ({ prefix: enc.encode(e.prefix), label: e.prefix === '' ? 'identity' : e.prefix, transformer: e.transformer }));
  }

  async fromStorage(data: Uint8Array, ctx: TransformContext): Promise<FromStorage> {
    const start = now();
    for (let i = 0; i < this.entries.length; i++) {
      const e = this.entries[i]!;
      if (!startsWith(data, e.prefix)) continue;
      try {
        const out = await e.transformer.fromStorage(data.subarray(e.prefix.length), ctx);
        this.record('from_storage', e.label, 'OK', start);
        return { data: out.data, stale: out.stale || i !== 0 };
      } catch (err) {
        if (e.prefix.length === 0) continue;
        this.record('from_storage', e.label, statusOf(err), start);
        throw err;
      }
    }
    this.record('from_storage', 'unknown', 'Unknown', start);
    throw new TransformError(this.noMatch);
  }

  async toStorage(data: Uint8Array, ctx: TransformContext): Promise<Uint8Array> {
    const start = now();
    const e = this.entries[0]!;
    try {
      const out = await e.transformer.toStorage(data, ctx);
      this.record('to_storage', e.label, 'OK', start);
      return e.prefix.length === 0 ? out : concat(e.prefix, out);
    } catch (err) {
      this.record('to_storage', e.label, statusOf(err), start);
      throw err;
    }
  }

  close(): void {
    for (const e of this.entries) e.transformer.close?.();
  }

  private record(type: 'from_storage' | 'to_storage', label: string, status: string, start: number): void {
    this.observer?.transformation(type, label, status, (now() - start) / 1000);
  }
}

function statusOf(err: unknown): string {
  return err instanceof TransformError ? err.status : 'Unknown';
}

/**
 * The identity provider: values are stored as they are. It refuses to read an encrypted value, so that an
 * identity provider listed first (to decrypt everything) hands encrypted values on to the providers after it.
 */
export const identityTransformer: ValueTransformer = {
  fromStorage(data) {
    if (startsWith(data, enc.encode(ENCRYPTED_PREFIX))) return Promise.reject(new TransformError('identity transformer tried to read encrypted data'));
    return Promise.resolve({ data, stale: false });
  },
  toStorage(data) {
    return Promise.resolve(data);
  },
};
