/**
 * Encryption at rest on the embedded store (--encryption-provider-config): secrets with aescbc, configmaps
 * with aesgcm and serviceaccounts with secretbox, checked by reading the SQLite file itself and decrypting
 * with the test's own code; plaintext from before encryption still reads; key rotation by rewriting every
 * secret with kubectl; a key that is gone gives an internal error naming the key; an identity-first
 * configuration decrypts; a bad configuration stops the real binary at start with kube-apiserver's message.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createDecipheriv, randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import nacl from 'tweetnacl';
import { requireBinary } from '../helpers/binaries.js';
import { decodeStored } from '../../src/registry/storagecodec.js';
import { startCluster, type TestCluster } from '../helpers/cluster.js';
import { freePort } from '../helpers/ports.js';

const present = requireBinary(undefined, 'kubectl') !== null;
if (!present && process.env.CI === 'true') throw new Error('kubectl is required under CI=true');
const skip = !present && 'kubectl not installed';

const key1 = randomBytes(32);
const key2 = randomBytes(32);
const key3 = randomBytes(32);
const gcmKey = randomBytes(16);
const boxKey = randomBytes(32);
const b64 = (b: Buffer) => b.toString('base64');

function config(secretsProviders: string): string {
  return `apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets]
  providers:
${secretsProviders}
- resources: [configmaps]
  providers:
  - aesgcm: {keys: [{name: gcm1, secret: ${b64(gcmKey)}}]}
- resources: [serviceaccounts]
  providers:
  - secretbox: {keys: [{name: box1, secret: ${b64(boxKey)}}]}
  - identity: {}
`;
}
const aescbc = (...keys: [string, Buffer][]) => `  - aescbc:\n      keys:\n${keys.map(([n, k]) => `      - {name: ${n}, secret: ${b64(k)}}\n`).join('')}`;
const identity = '  - identity: {}\n';

function cbcDecrypt(key: Buffer, data: Buffer): Buffer {
  const d = createDecipheriv('aes-256-cbc', key, data.subarray(0, 16));
  return Buffer.concat([d.update(data.subarray(16)), d.final()]);
}

describe('encryption at rest: embedded store', { skip }, () => {
  let dir: string;
  let c: TestCluster | undefined;
  const dataDir = () => join(dir, 'data');

  /** The value of a key as the SQLite file holds it now. */
  function stored(key: string): Buffer {
    const db = new Database(join(dataDir(), 'state.db'), { readonly: true, fileMustExist: true });
    try {
      const row = db.prepare('SELECT l.value AS value FROM current c JOIN log l ON l.id = c.id WHERE c.name = ?').get(key) as { value: Buffer } | undefined;
      assert.ok(row, `${key} is stored`);
      return row.value;
    } finally {
      db.close();
    }
  }
  function storedKeys(prefix: string): string[] {
    const db = new Database(join(dataDir(), 'state.db'), { readonly: true, fileMustExist: true });
    try {
      return (db.prepare('SELECT name FROM current WHERE name >= ? AND name < ?').all(prefix, `${prefix}\u00ff`) as { name: string }[]).map((r) => r.name);
    } finally {
      db.close();
    }
  }

  /** The file is locked while a server runs on it: stop before reading it. */
  async function stopServer(): Promise<void> {
    await c?.stop();
    c = undefined;
  }
  async function start(configText?: string): Promise<TestCluster> {
    await stopServer();
    const args = [`--data-dir=${dataDir()}`];
    if (configText !== undefined) {
      const file = join(dir, `encryption-${Date.now()}.yaml`);
      await writeFile(file, configText);
      args.push(`--encryption-provider-config=${file}`);
    }
    c = await startCluster(args);
    return c;
  }
  const ok = async (args: string[], input?: string) => {
    const r = await c!.kubectl(args, input !== undefined ? { input } : {});
    assert.equal(r.code, 0, `kubectl ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };
  const password = async (name: string) => Buffer.from(await ok(['get', 'secret', name, '-o', 'jsonpath={.data.password}']), 'base64').toString();
  const rewriteAllSecrets = async () => ok(['replace', '-f', '-'], await ok(['get', 'secrets', '-A', '-o', 'json']));

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'orch-encryption-'));
  });
  after(async () => {
    await c?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('encrypts each resource with its first provider, in Kubernetes layouts, and still reads plaintext written before', async () => {
    await start();
    await ok(['create', 'secret', 'generic', 'plain', '--from-literal=password=before-encryption']);
    await stopServer();
    // Unencrypted values are what kube-apiserver stores: protobuf (the default --storage-media-type).
    assert.equal(stored('/registry/secrets/default/plain').subarray(0, 4).toString('latin1'), 'k8s\0');

    await start(config(aescbc(['key1', key1]) + identity));
    await ok(['create', 'secret', 'generic', 's1', '--from-literal=password=hunter2']);
    await ok(['create', 'configmap', 'c1', '--from-literal=color=ultraviolet']);
    await ok(['create', 'serviceaccount', 'sa1']);

    // Through the API everything reads as plaintext: get, list, and the secret stored before encryption.
    assert.equal(await password('s1'), 'hunter2');
    assert.equal(await password('plain'), 'before-encryption');
    assert.equal(await ok(['get', 'configmap', 'c1', '-o', 'jsonpath={.data.color}']), 'ultraviolet');
    assert.match(await ok(['get', 'secrets']), /plain[\s\S]*s1/);
    assert.match(await ok(['get', 'serviceaccount', 'sa1', '-o', 'name']), /serviceaccount\/sa1/);

    // apiserver_storage_transformation_operations_total counts the writes and reads per provider.
    const metrics = (await c!.request('GET', '/metrics')).text;
    assert.match(metrics, /apiserver_storage_transformation_operations_total\{status="OK",transformation_type="to_storage",transformer_prefix="k8s:enc:aescbc:v1:"\} [1-9]/);
    assert.match(metrics, /apiserver_storage_transformation_operations_total\{status="OK",transformation_type="from_storage",transformer_prefix="identity"\} [1-9]/);

    await stopServer();
    const secret = stored('/registry/secrets/default/s1');
    const secretPrefix = 'k8s:enc:aescbc:v1:key1:';
    assert.equal(secret.subarray(0, secretPrefix.length).toString(), secretPrefix);
    assert.ok(!secret.includes(Buffer.from('hunter2').toString('base64')), 'no plaintext in the file');
    const secretObj = decodeStored(cbcDecrypt(key1, secret.subarray(secretPrefix.length)));
    assert.equal(secretObj.metadata?.name, 's1');
    assert.equal(Buffer.from(secretObj.data.password, 'base64').toString(), 'hunter2');

    const cm = stored('/registry/configmaps/default/c1');
    const cmPrefix = 'k8s:enc:aesgcm:v1:gcm1:';
    assert.equal(cm.subarray(0, cmPrefix.length).toString(), cmPrefix);
    assert.ok(!cm.includes(Buffer.from('ultraviolet')));
    const sealed = cm.subarray(cmPrefix.length);
    const gcm = createDecipheriv('aes-128-gcm', gcmKey, sealed.subarray(0, 12));
    gcm.setAAD(Buffer.from('/registry/configmaps/default/c1'));
    gcm.setAuthTag(sealed.subarray(sealed.length - 16));
    const cmObj = decodeStored(Buffer.concat([gcm.update(sealed.subarray(12, sealed.length - 16)), gcm.final()]));
    assert.equal(cmObj.data.color, 'ultraviolet');

    const sa = stored('/registry/serviceaccounts/default/sa1');
    const saPrefix = 'k8s:enc:secretbox:v1:box1:';
    assert.equal(sa.subarray(0, saPrefix.length).toString(), saPrefix);
    const box = sa.subarray(saPrefix.length);
    const opened = nacl.secretbox.open(box.subarray(24), box.subarray(0, 24), boxKey);
    assert.ok(opened, 'secretbox opens with the configured key');
    assert.equal(decodeStored(Buffer.from(opened)).metadata?.name, 'sa1');
  });

  it('rotates keys: an old key listed second still reads, and rewriting every secret re-encrypts with the new first key', async () => {
    await start(config(aescbc(['key2', key2], ['key1', key1]) + identity));
    assert.equal(await password('s1'), 'hunter2');
    await rewriteAllSecrets();
    const rv = await ok(['get', 'secret', 's1', '-o', 'jsonpath={.metadata.resourceVersion}']);
    // A rewrite of a current value changes nothing (no write).
    await rewriteAllSecrets();
    assert.equal(await ok(['get', 'secret', 's1', '-o', 'jsonpath={.metadata.resourceVersion}']), rv);
    assert.equal(await password('plain'), 'before-encryption');
    await stopServer();
    const keys = storedKeys('/registry/secrets/');
    assert.ok(keys.includes('/registry/secrets/default/s1') && keys.includes('/registry/secrets/default/plain'));
    for (const k of keys) assert.equal(stored(k).subarray(0, 23).toString(), 'k8s:enc:aescbc:v1:key2:', k);
    assert.equal(decodeStored(cbcDecrypt(key2, stored('/registry/secrets/default/plain').subarray(23))).data.password, Buffer.from('before-encryption').toString('base64'));
  });

  it('a value no provider can read is an internal error naming the key', async () => {
    await start(config(aescbc(['key3', key3])));
    const r = await c!.kubectl(['get', 'secret', 's1']);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /Internal error occurred: unable to transform key "\/registry\/secrets\/default\/s1": no matching key was found for the provided AES transformer/);
    const list = await c!.kubectl(['get', 'secrets']);
    assert.notEqual(list.code, 0);
    assert.match(list.stderr, /unable to transform key "\/registry\/secrets\/default\/(plain|s1)"/);
  });

  it('identity first decrypts: encrypted values read through the provider after it and are written back as plaintext', async () => {
    await start(config(identity + aescbc(['key2', key2])));
    assert.equal(await password('s1'), 'hunter2');
    await rewriteAllSecrets();
    assert.equal(await password('s1'), 'hunter2');
    await stopServer();
    const value = stored('/registry/secrets/default/s1');
    assert.equal(decodeStored(value).metadata?.name, 's1');
  });

  it('a bad configuration file stops orch-apiserver at start with a message naming the file and the field', async () => {
    const file = join(dir, 'bad.yaml');
    await writeFile(file, config(aescbc(['short', Buffer.from('12345678')])));
    const bin = join(process.cwd(), 'bin', 'orch-apiserver');
    const port = await freePort();
    const r = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        [bin, '--data-dir=:memory:', '--bind-address=127.0.0.1', `--secure-port=${port}`, `--cert-dir=${join(dir, 'badcerts')}`, `--encryption-provider-config=${file}`],
        { timeout: 60_000 },
        (err, _stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stderr }),
      );
    });
    assert.equal(r.code, 1, r.stderr);
    assert.match(
      r.stderr,
      new RegExp(
        `error while parsing encryption provider configuration file "${file.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}": error while parsing file: ` +
          `resources\\[0\\]\\.providers\\[0\\]\\.aescbc\\.keys\\[0\\]\\.secret: Invalid value: "REDACTED": secret is not of the expected length, got 8, expected one of \\[16 24 32\\]`,
      ),
    );
  });
});
