/**
 * The aescbc and aesgcm providers, in Kubernetes' stored layouts:
 * - aescbc: a random 16-byte IV, then AES-CBC of the value with PKCS#7 padding;
 * - aesgcm: a random 12-byte nonce, then AES-GCM of the value sealed with its 16-byte tag, the storage key
 *   as additional authenticated data (a value copied under another key does not decrypt).
 * The key's length (16, 24 or 32 bytes) chooses AES-128, -192 or -256.
 */
import { createCipheriv, createDecipheriv, randomBytes, type CipherGCMTypes } from 'node:crypto';
import { TransformError, concat, type FromStorage, type TransformContext, type ValueTransformer } from './transformer.js';

const BLOCK = 16;
const NONCE = 12;
const TAG = 16;

function algorithm(mode: 'cbc' | 'gcm', key: Uint8Array): string {
  if (key.length !== 16 && key.length !== 24 && key.length !== 32) throw new Error(`crypto/aes: invalid key size ${key.length}`);
  return `aes-${key.length * 8}-${mode}`;
}

export class AesCbcTransformer implements ValueTransformer {
  private readonly alg: string;
  constructor(private readonly key: Uint8Array) {
    this.alg = algorithm('cbc', key);
  }

  fromStorage(data: Uint8Array, _ctx?: TransformContext): Promise<FromStorage> {
    if (data.length < BLOCK) return Promise.reject(new TransformError('the stored data was shorter than the required size'));
    if ((data.length - BLOCK) % BLOCK !== 0) return Promise.reject(new TransformError('the stored data is not a multiple of the block size'));
    const body = data.subarray(BLOCK);
    if (body.length === 0) return Promise.reject(new TransformError('invalid PKCS7 data (empty or not padded)'));
    const d = createDecipheriv(this.alg, this.key, data.subarray(0, BLOCK));
    d.setAutoPadding(false);
    const plain = Buffer.concat([d.update(body), d.final()]);
    const pad = plain[plain.length - 1]!;
    if (pad === 0 || pad > plain.length) return Promise.reject(new TransformError('invalid PKCS7 data (empty or not padded)'));
    for (let i = plain.length - pad; i < plain.length; i++) {
      if (plain[i] !== pad) return Promise.reject(new TransformError('invalid padding on input'));
    }
    return Promise.resolve({ data: plain.subarray(0, plain.length - pad), stale: false });
  }

  toStorage(data: Uint8Array, _ctx?: TransformContext): Promise<Uint8Array> {
    const iv = randomBytes(BLOCK);
    const c = createCipheriv(this.alg, this.key, iv); // PKCS#7 padding is Node's default
    return Promise.resolve(concat(iv, c.update(data), c.final()));
  }
}

export class AesGcmTransformer implements ValueTransformer {
  private readonly alg: string;
  constructor(private readonly key: Uint8Array) {
    this.alg = algorithm('gcm', key);
  }

  fromStorage(data: Uint8Array, ctx: TransformContext): Promise<FromStorage> {
    if (data.length < NONCE) return Promise.reject(new TransformError('the stored data was shorter than the required size'));
    if (data.length < NONCE + TAG) return Promise.reject(new TransformError('cipher: message authentication failed'));
    const d = createDecipheriv(this.alg as CipherGCMTypes, this.key, data.subarray(0, NONCE), { authTagLength: TAG });
    d.setAAD(Buffer.from(ctx.key, 'utf8'));
    d.setAuthTag(data.subarray(data.length - TAG));
    try {
      const plain = Buffer.concat([d.update(data.subarray(NONCE, data.length - TAG)), d.final()]);
      return Promise.resolve({ data: plain, stale: false });
    } catch {
      return Promise.reject(new TransformError('cipher: message authentication failed'));
    }
  }

  toStorage(data: Uint8Array, ctx: TransformContext): Promise<Uint8Array> {
    const nonce = randomBytes(NONCE);
    const c = createCipheriv(this.alg as CipherGCMTypes, this.key, nonce, { authTagLength: TAG });
    c.setAAD(Buffer.from(ctx.key, 'utf8'));
    const sealed = concat(nonce, c.update(data), c.final(), c.getAuthTag());
    return Promise.resolve(sealed);
  }
}
