/**
 * The kms (v1) provider's envelope encryption, in Kubernetes 1.23's stored layout: every write makes a fresh
 * 32-byte data key (DEK), has the KMS plugin encrypt it, and stores
 *   2-byte big-endian length of the encrypted DEK | encrypted DEK | aescbc of the value under the DEK
 * (after the provider prefix `k8s:enc:kms:v1:<name>:`). Decrypted DEKs are kept in an LRU cache keyed by the
 * encrypted DEK (cachesize entries; a negative cachesize disables the cache).
 */
import { randomBytes } from 'node:crypto';
import { AesCbcTransformer } from './aes.js';
import { TransformError, concat, type FromStorage, type TransformContext, type TransformObserver, type ValueTransformer } from './transformer.js';

/** What the envelope needs of a KMS: Kubernetes' envelope.Service. */
export interface EnvelopeService {
  encrypt(plain: Uint8Array): Promise<Uint8Array>;
  decrypt(cipher: Uint8Array): Promise<Uint8Array>;
  close?(): void;
}

const DEK_BYTES = 32;

export class EnvelopeTransformer implements ValueTransformer {
  private readonly cache = new Map<string, AesCbcTransformer>();

  constructor(
    private readonly service: EnvelopeService,
    private readonly cacheSize: number,
    private readonly observer?: TransformObserver,
  ) {}

  async fromStorage(data: Uint8Array, _ctx?: TransformContext): Promise<FromStorage> {
    if (data.length < 2) throw new TransformError(`invalid data encountered by envelope transformer: length longer than available bytes: ${data.length}`);
    const keyLen = (data[0]! << 8) | data[1]!;
    if (keyLen + 2 > data.length) {
      throw new TransformError(`invalid data encountered by envelope transformer: length longer than available bytes: ${data.length}`);
    }
    const encKey = data.subarray(2, 2 + keyLen);
    let t = this.lookup(encKey);
    if (!t) {
      if (this.cacheSize > 0) this.observer?.cacheMiss?.();
      t = this.remember(encKey, await this.service.decrypt(encKey));
    }
    return t.fromStorage(data.subarray(2 + keyLen));
  }

  async toStorage(data: Uint8Array, _ctx?: TransformContext): Promise<Uint8Array> {
    const start = performance.now();
    const dek = randomBytes(DEK_BYTES);
    this.observer?.dataKeyGeneration?.((performance.now() - start) / 1000, true);
    const encKey = await this.service.encrypt(dek);
    if (encKey.length > 0xffff) throw new TransformError(`encrypted data key is too long: ${encKey.length} bytes`);
    const t = this.remember(encKey, dek);
    const len = Buffer.from([encKey.length >> 8, encKey.length & 0xff]);
    return concat(len, encKey, await t.toStorage(data));
  }

  close(): void {
    this.service.close?.();
  }

  private lookup(encKey: Uint8Array): AesCbcTransformer | undefined {
    if (this.cacheSize <= 0) return undefined;
    const id = Buffer.from(encKey).toString('base64');
    const t = this.cache.get(id);
    if (t) {
      this.cache.delete(id);
      this.cache.set(id, t);
    }
    return t;
  }

  private remember(encKey: Uint8Array, dek: Uint8Array): AesCbcTransformer {
    let t: AesCbcTransformer;
    try {
      t = new AesCbcTransformer(dek);
    } catch (err) {
      throw new TransformError((err as Error).message);
    }
    if (this.cacheSize > 0) {
      this.cache.set(Buffer.from(encKey).toString('base64'), t);
      while (this.cache.size > this.cacheSize) this.cache.delete(this.cache.keys().next().value!);
    }
    return t;
  }
}
