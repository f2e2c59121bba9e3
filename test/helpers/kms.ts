/**
 * A fake KMS plugin for tests: the v1beta1 KeyManagementService on a unix socket in a temporary directory,
 * wrapping data keys with AES-256-GCM under its own key encryption key. It counts its calls and can be told
 * to answer another API version.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { kmsServiceDefinition } from '../../src/storage/transformer/kms.js';

export interface FakeKms {
  /** unix:///.../kms.sock */
  endpoint: string;
  calls: { Version: number; Encrypt: number; Decrypt: number };
  /** What Version answers; 'v1beta1' by default. */
  version: string;
  /** Unwraps a data key as the plugin would (for tests that decrypt stored values themselves). */
  unwrap(cipher: Uint8Array): Buffer;
  stop(): Promise<void>;
}

const KEK_MARK = Buffer.from('fakekms1');

export async function startFakeKms(): Promise<FakeKms> {
  const dir = await mkdtemp(join(tmpdir(), 'orch-kms-'));
  const kek = randomBytes(32);
  const wrap = (plain: Buffer) => {
    const nonce = randomBytes(12);
    const c = createCipheriv('aes-256-gcm', kek, nonce);
    return Buffer.concat([KEK_MARK, nonce, c.update(plain), c.final(), c.getAuthTag()]);
  };
  const unwrap = (cipher: Uint8Array) => {
    const b = Buffer.from(cipher);
    if (!b.subarray(0, KEK_MARK.length).equals(KEK_MARK)) throw new Error('not wrapped by this plugin');
    const nonce = b.subarray(8, 20);
    const d = createDecipheriv('aes-256-gcm', kek, nonce);
    d.setAuthTag(b.subarray(b.length - 16));
    return Buffer.concat([d.update(b.subarray(20, b.length - 16)), d.final()]);
  };
  const fake: FakeKms = {
    endpoint: `unix://${join(dir, 'kms.sock')}`,
    calls: { Version: 0, Encrypt: 0, Decrypt: 0 },
    version: 'v1beta1',
    unwrap,
    stop: async () => {
      await new Promise<void>((resolve) => server.tryShutdown(() => resolve()));
      await rm(dir, { recursive: true, force: true });
    },
  };
  type Req = { version: string; plain?: Buffer; cipher?: Buffer };
  const server = new grpc.Server();
  server.addService(kmsServiceDefinition(), {
    Version: (_call: grpc.ServerUnaryCall<Req, unknown>, cb: grpc.sendUnaryData<unknown>) => {
      fake.calls.Version++;
      cb(null, { version: fake.version, runtime_name: 'fake-kms', runtime_version: '0.1.0' });
    },
    Encrypt: (call: grpc.ServerUnaryCall<Req, unknown>, cb: grpc.sendUnaryData<unknown>) => {
      fake.calls.Encrypt++;
      cb(null, { cipher: wrap(call.request.plain ?? Buffer.alloc(0)) });
    },
    Decrypt: (call: grpc.ServerUnaryCall<Req, unknown>, cb: grpc.sendUnaryData<unknown>) => {
      fake.calls.Decrypt++;
      try {
        cb(null, { plain: unwrap(call.request.cipher ?? Buffer.alloc(0)) });
      } catch (err) {
        cb({ code: grpc.status.INVALID_ARGUMENT, details: (err as Error).message });
      }
    },
  });
  await new Promise<void>((resolve, reject) =>
    server.bindAsync(fake.endpoint, grpc.ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())),
  );
  return fake;
}
