import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { createDecipheriv, randomBytes } from 'node:crypto';
import nacl from 'tweetnacl';
import { AesCbcTransformer, AesGcmTransformer } from '../../src/storage/transformer/aes.js';
import { SecretboxTransformer } from '../../src/storage/transformer/secretbox.js';
import { EnvelopeTransformer, type EnvelopeService } from '../../src/storage/transformer/envelope.js';
import { GrpcKmsService, kmsServiceDefinition, kmsTarget } from '../../src/storage/transformer/kms.js';
import { PrefixTransformers, identityTransformer, type TransformObserver } from '../../src/storage/transformer/transformer.js';
import { TransformingKV } from '../../src/storage/transformer/kv.js';
import { openSqlite } from '../../src/storage/sqlite.js';
import { startFakeKms } from '../helpers/kms.js';

const text = (b: Uint8Array) => Buffer.from(b).toString('utf8');
const bytes = (s: string) => Buffer.from(s, 'utf8');
const ctx = { key: '/registry/secrets/default/s1' };

describe('value transformers', () => {
  it('aescbc stores a random IV then AES-CBC with PKCS#7 padding, for 16, 24 and 32-byte keys', async () => {
    for (const size of [16, 24, 32]) {
      const key = randomBytes(size);
      const t = new AesCbcTransformer(key);
      for (const plain of ['', 'x', '0123456789abcdef', '{"kind":"Secret","data":{"a":"Yg=="}}']) {
        const stored = await t.toStorage(bytes(plain), ctx);
        const padded = Math.floor(plain.length / 16) * 16 + 16;
        assert.equal(stored.length, 16 + padded);
        // Independently: Node's AES-CBC with the stored IV and standard padding gives the value back.
        const d = createDecipheriv(`aes-${size * 8}-cbc`, key, stored.subarray(0, 16));
        assert.equal(Buffer.concat([d.update(stored.subarray(16)), d.final()]).toString(), plain);
        assert.equal(text((await t.fromStorage(stored, ctx)).data), plain);
      }
    }
    const t = new AesCbcTransformer(randomBytes(32));
    await assert.rejects(t.fromStorage(randomBytes(8), ctx), /the stored data was shorter than the required size/);
    await assert.rejects(t.fromStorage(randomBytes(40), ctx), /the stored data is not a multiple of the block size/);
  });

  it('aesgcm stores a 12-byte nonce then the sealed value, with the storage key as additional data', async () => {
    const key = randomBytes(32);
    const t = new AesGcmTransformer(key);
    const stored = await t.toStorage(bytes('hello'), ctx);
    assert.equal(stored.length, 12 + 5 + 16);
    const d = createDecipheriv('aes-256-gcm', key, stored.subarray(0, 12));
    d.setAAD(bytes(ctx.key));
    d.setAuthTag(stored.subarray(stored.length - 16));
    assert.equal(Buffer.concat([d.update(stored.subarray(12, stored.length - 16)), d.final()]).toString(), 'hello');
    assert.equal(text((await t.fromStorage(stored, ctx)).data), 'hello');
    // The same bytes under another key do not decrypt.
    await assert.rejects(t.fromStorage(stored, { key: '/registry/secrets/default/other' }), /cipher: message authentication failed/);
    await assert.rejects(t.fromStorage(randomBytes(4), ctx), /the stored data was shorter than the required size/);
  });

  it('secretbox stores a 24-byte nonce then NaCl secretbox', async () => {
    const key = randomBytes(32);
    const t = new SecretboxTransformer(key);
    const stored = await t.toStorage(bytes('hello'), ctx);
    assert.equal(stored.length, 24 + 16 + 5);
    const opened = nacl.secretbox.open(stored.subarray(24), stored.subarray(0, 24), key);
    assert.equal(opened && text(opened), 'hello');
    const tampered = Buffer.from(stored);
    tampered[30]! ^= 1;
    await assert.rejects(t.fromStorage(tampered, ctx), /output array was not large enough for encryption/);
    await assert.rejects(t.fromStorage(randomBytes(20), ctx), /the stored data was shorter than the required size/);
  });

  it('prefix transformers: the first writes, any reads by prefix, others are stale, identity gives way on encrypted data', async () => {
    const k1 = new AesCbcTransformer(randomBytes(32));
    const k2 = new AesCbcTransformer(randomBytes(32));
    const seen: string[] = [];
    const observer: TransformObserver = { transformation: (type, prefix, status) => seen.push(`${type} ${prefix} ${status}`) };
    const aes = (keys: [string, AesCbcTransformer][]) =>
      new PrefixTransformers(keys.map(([n, t]) => ({ prefix: `${n}:`, transformer: t })), 'no matching key was found for the provided AES transformer');
    const old = new PrefixTransformers([{ prefix: 'k8s:enc:aescbc:v1:', transformer: aes([['key1', k1]]) }], 'no matching prefix found');
    const rotated = new PrefixTransformers(
      [
        { prefix: 'k8s:enc:aescbc:v1:', transformer: aes([['key2', k2], ['key1', k1]]) },
        { prefix: '', transformer: identityTransformer },
      ],
      'no matching prefix found',
      observer,
    );
    const stored = await old.toStorage(bytes('v'), ctx);
    assert.ok(text(stored).startsWith('k8s:enc:aescbc:v1:key1:'));
    assert.deepEqual({ ...(await rotated.fromStorage(stored, ctx)), data: 'v' }, { data: 'v', stale: true });
    assert.equal(text((await rotated.fromStorage(stored, ctx)).data), 'v');
    const fresh = await rotated.toStorage(bytes('v'), ctx);
    assert.ok(text(fresh).startsWith('k8s:enc:aescbc:v1:key2:'));
    assert.equal((await rotated.fromStorage(fresh, ctx)).stale, false);
    // Plaintext reads through the identity provider listed last (stale: the write would encrypt it).
    assert.deepEqual(await rotated.fromStorage(bytes('{"a":1}'), ctx), { data: bytes('{"a":1}'), stale: true });
    // Without identity, plaintext matches no provider.
    await assert.rejects(old.fromStorage(bytes('{"a":1}'), ctx), /^TransformError: no matching prefix found$/);
    // A key no longer listed.
    await assert.rejects(
      new PrefixTransformers([{ prefix: 'k8s:enc:aescbc:v1:', transformer: aes([['key2', k2]]) }], 'no matching prefix found').fromStorage(stored, ctx),
      /no matching key was found for the provided AES transformer/,
    );
    // Identity first: plaintext is current, encrypted data is read by the provider after it.
    const decrypting = new PrefixTransformers(
      [
        { prefix: '', transformer: identityTransformer },
        { prefix: 'k8s:enc:aescbc:v1:', transformer: aes([['key1', k1]]) },
      ],
      'no matching prefix found',
    );
    assert.deepEqual(await decrypting.fromStorage(stored, ctx), { data: bytes('v'), stale: true });
    assert.equal(text(await decrypting.toStorage(bytes('v'), ctx)), 'v');
    assert.ok(seen.includes('from_storage k8s:enc:aescbc:v1: OK'));
    assert.ok(seen.includes('to_storage k8s:enc:aescbc:v1: OK'));
    assert.ok(seen.includes('from_storage identity OK'));
  });

  it('kms envelope: 2-byte DEK length, the DEK wrapped by the plugin, aescbc data; DEKs cached', async () => {
    const kek = randomBytes(32);
    let decrypts = 0;
    const xor = (b: Uint8Array) => Buffer.from(b).map((x, i) => x ^ kek[i % 32]!);
    const service: EnvelopeService = {
      encrypt: (p) => Promise.resolve(Buffer.concat([bytes('wrapped:'), xor(p)])),
      decrypt: (c) => {
        decrypts++;
        return Promise.resolve(xor(Buffer.from(c).subarray(8)));
      },
    };
    let misses = 0;
    const t = new EnvelopeTransformer(service, 10, { transformation: () => {}, cacheMiss: () => misses++ });
    const stored = Buffer.from(await t.toStorage(bytes('hello')));
    const len = stored.readUInt16BE(0);
    assert.equal(len, 8 + 32);
    const dek = xor(stored.subarray(2 + 8, 2 + len));
    const body = stored.subarray(2 + len);
    const d = createDecipheriv('aes-256-cbc', dek, body.subarray(0, 16));
    assert.equal(Buffer.concat([d.update(body.subarray(16)), d.final()]).toString(), 'hello');
    assert.equal(text((await t.fromStorage(stored)).data), 'hello');
    assert.equal(decrypts, 0, 'the DEK of a write is cached');
    const other = new EnvelopeTransformer(service, 10, { transformation: () => {}, cacheMiss: () => misses++ });
    assert.equal(text((await other.fromStorage(stored)).data), 'hello');
    assert.equal(text((await other.fromStorage(stored)).data), 'hello');
    assert.equal(decrypts, 1);
    assert.equal(misses, 1);
    const uncached = new EnvelopeTransformer(service, -1);
    await uncached.fromStorage(stored);
    await uncached.fromStorage(stored);
    assert.equal(decrypts, 3);
    await assert.rejects(t.fromStorage(Buffer.from([0, 200, 1])), /invalid data encountered by envelope transformer: length longer than available bytes: 3/);
  });

  it('the kms client speaks v1beta1 with upstream field numbers, checks the version once, and names gRPC failures', async (t) => {
    const m = kmsServiceDefinition();
    assert.equal(m.Encrypt.path, '/v1beta1.KeyManagementService/Encrypt');
    // EncryptRequest{version=1 (string), plain=2 (bytes)}; DecryptRequest{version=1, cipher=2}.
    assert.deepEqual([...m.Encrypt.requestSerialize({ version: 'v', plain: Buffer.from([7]) })], [0x0a, 1, 0x76, 0x12, 1, 7]);
    assert.deepEqual([...m.Decrypt.requestSerialize({ version: 'v', cipher: Buffer.from([7]) })], [0x0a, 1, 0x76, 0x12, 1, 7]);
    assert.deepEqual([...m.Version.responseSerialize({ version: 'v', runtime_name: 'n', runtime_version: 'r' })], [0x0a, 1, 0x76, 0x12, 1, 0x6e, 0x1a, 1, 0x72]);
    assert.equal(kmsTarget('unix:///tmp/kms.sock'), 'unix:///tmp/kms.sock');
    assert.equal(kmsTarget('unix:///@abstract'), 'unix-abstract:abstract');
    assert.throws(() => kmsTarget('tcp://127.0.0.1:1'), /unsupported scheme "tcp" for remote KMS provider/);

    const kms = await startFakeKms();
    t.after(() => kms.stop());
    const svc = new GrpcKmsService(kms.endpoint, 3000);
    t.after(() => svc.close());
    const wrapped = await svc.encrypt(bytes('dek'));
    assert.equal(text(await svc.decrypt(wrapped)), 'dek');
    assert.deepEqual(kms.calls, { Version: 1, Encrypt: 1, Decrypt: 1 });
    await assert.rejects(svc.decrypt(bytes('garbage')), /^TransformError: rpc error: code = InvalidArgument desc = not wrapped by this plugin$/);

    kms.version = 'v2';
    const wrong = new GrpcKmsService(kms.endpoint, 3000);
    t.after(() => wrong.close());
    await assert.rejects(wrong.encrypt(bytes('x')), /KMS provider api version v2 is not supported, only v1beta1 is supported now/);
    const absent = new GrpcKmsService('unix:///nonexistent/kms.sock', 300);
    t.after(() => absent.close());
    await assert.rejects(absent.encrypt(bytes('x')), /failed get version from remote KMS provider: rpc error: code = DeadlineExceeded/);
  });
});

describe('transforming KV', () => {
  const kvs: { close(): Promise<void> }[] = [];
  after(() => Promise.all(kvs.map((k) => k.close())));

  it('encrypts writes, decrypts reads, list, watch and deletes, and marks values read with an old key stale', async () => {
    const raw = await openSqlite({ path: ':memory:' });
    kvs.push(raw);
    const k1 = new AesGcmTransformer(randomBytes(32));
    const k2 = new AesGcmTransformer(randomBytes(32));
    const provider = (keys: [string, AesGcmTransformer][]) =>
      new PrefixTransformers(
        [{ prefix: 'k8s:enc:aesgcm:v1:', transformer: new PrefixTransformers(keys.map(([n, t]) => ({ prefix: `${n}:`, transformer: t })), 'no key') }],
        'no matching prefix found',
      );
    const kv = new TransformingKV(raw, provider([['key1', k1]]));
    const watch = kv.watch('/registry/secrets/', { prefix: true });
    const events = watch[Symbol.asyncIterator]();
    const created = await kv.create('/registry/secrets/ns/a', bytes('{"v":1}'));
    assert.equal(text(created.value), '{"v":1}');
    assert.ok(text((await raw.get('/registry/secrets/ns/a')).kv!.value).startsWith('k8s:enc:aesgcm:v1:key1:'));
    assert.equal(text((await kv.get('/registry/secrets/ns/a')).kv!.value), '{"v":1}');
    const updated = await kv.update('/registry/secrets/ns/a', bytes('{"v":2}'), created.modRevision);
    assert.equal(text((await kv.list('/registry/secrets/')).kvs[0]!.value), '{"v":2}');
    const ev1 = (await events.next()).value;
    const ev2 = (await events.next()).value;
    assert.equal(text(ev1.kv.value), '{"v":1}');
    assert.equal(text(ev2.kv.value), '{"v":2}');
    assert.equal(text(ev2.prevKv!.value), '{"v":1}');
    watch.close();

    const rotated = new TransformingKV(raw, provider([['key2', k2], ['key1', k1]]));
    const old = (await rotated.get('/registry/secrets/ns/a')).kv!;
    assert.equal(old.stale, true);
    await rotated.update('/registry/secrets/ns/a', old.value, updated.modRevision);
    assert.ok(text((await raw.get('/registry/secrets/ns/a')).kv!.value).startsWith('k8s:enc:aesgcm:v1:key2:'));
    assert.equal((await rotated.get('/registry/secrets/ns/a')).kv!.stale, undefined);

    await assert.rejects(kv.get('/registry/secrets/ns/a'), (e: Error & { code?: string }) => {
      assert.equal(e.code, 'Internal');
      assert.equal(e.message, 'unable to transform key "/registry/secrets/ns/a": no key');
      return true;
    });
    const del = await rotated.delete('/registry/secrets/ns/a');
    assert.equal(text(del.prevKv.value), '{"v":2}');
  });
});
