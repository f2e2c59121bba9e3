/**
 * The secretbox provider in Kubernetes' stored layout: a random 24-byte nonce, then NaCl's secretbox
 * (XSalsa20 and Poly1305: the 16-byte authenticator, then the ciphertext) under a 32-byte key.
 */
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import type naclType from 'tweetnacl';
import { TransformError, concat, type FromStorage, type TransformContext, type ValueTransformer } from './transformer.js';

const NONCE = 24; // nacl.secretbox.nonceLength
const OVERHEAD = 16; // nacl.secretbox.overheadLength
const KEY = 32; // nacl.secretbox.keyLength

// tweetnacl (CommonJS) loads with the first secretbox provider, not with every server.
const requireCjs = createRequire(import.meta.url);
let naclModule: typeof naclType | undefined;
const nacl = (): typeof naclType => (naclModule ??= requireCjs('tweetnacl') as typeof naclType);

export class SecretboxTransformer implements ValueTransformer {
  private readonly nacl = nacl();
  constructor(private readonly key: Uint8Array) {
    if (key.length !== KEY) throw new Error(`expected key size 32 for secretbox provider, got ${key.length}`);
  }

  fromStorage(data: Uint8Array, _ctx?: TransformContext): Promise<FromStorage> {
    if (data.length < NONCE + OVERHEAD) return Promise.reject(new TransformError('the stored data was shorter than the required size'));
    const plain = this.nacl.secretbox.open(data.subarray(NONCE), data.subarray(0, NONCE), this.key);
    if (!plain) return Promise.reject(new TransformError('output array was not large enough for encryption'));
    return Promise.resolve({ data: plain, stale: false });
  }

  toStorage(data: Uint8Array, _ctx?: TransformContext): Promise<Uint8Array> {
    const nonce = new Uint8Array(randomBytes(NONCE));
    return Promise.resolve(concat(nonce, this.nacl.secretbox(data, nonce, this.key)));
  }
}
