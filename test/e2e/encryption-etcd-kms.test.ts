/**
 * Encryption at rest on etcd: secrets through the kms (v1) provider and a fake KMS plugin this test serves
 * on a unix socket, configmaps with aescbc, serviceaccounts with aesgcm and leases with secretbox; values are
 * read straight from etcd with the etcd3 client and decrypted by the test's own code. The API (kubectl, a
 * watch) sees plaintext; /healthz/kms-provider-0 probes the plugin.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createDecipheriv, randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Etcd3 } from 'etcd3';
import nacl from 'tweetnacl';
import { requireBinary } from '../helpers/binaries.js';
import { decodeStored } from '../../src/registry/storagecodec.js';
import { startCluster, type TestCluster } from '../helpers/cluster.js';
import { startEtcd, type EtcdProcess } from '../helpers/etcd.js';
import { startFakeKms, type FakeKms } from '../helpers/kms.js';

const kubectl = requireBinary(undefined, 'kubectl') !== null;
const etcdBin = requireBinary(undefined, 'etcd') !== null;
if ((!kubectl || !etcdBin) && process.env.CI === 'true') throw new Error('kubectl and etcd are required under CI=true');
const skip = (!kubectl && 'kubectl not installed') || (!etcdBin && 'etcd not installed');

const cbcKey = randomBytes(24);
const gcmKey = randomBytes(32);
const boxKey = randomBytes(32);

function cbc(key: Buffer, data: Buffer): Buffer {
  const d = createDecipheriv(`aes-${key.length * 8}-cbc`, key, data.subarray(0, 16));
  return Buffer.concat([d.update(data.subarray(16)), d.final()]);
}

describe('encryption at rest: etcd and a KMS plugin', { skip }, () => {
  let etcd: EtcdProcess;
  let kms: FakeKms;
  let c: TestCluster;
  let client: Etcd3;
  const raw = async (key: string) => {
    const v = await client.get(key).buffer();
    assert.ok(v, `${key} is in etcd`);
    return v;
  };
  const ok = async (args: string[]) => {
    const r = await c.kubectl(args);
    assert.equal(r.code, 0, `kubectl ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };

  before(async () => {
    etcd = await startEtcd();
    kms = await startFakeKms();
    client = new Etcd3({ hosts: etcd.endpoint });
    const file = join(etcd.dataDir, '..', 'encryption.yaml');
    await writeFile(
      file,
      `apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets]
  providers:
  - kms: {name: fake-plugin, endpoint: "${kms.endpoint}", cachesize: 100, timeout: 5s}
- resources: [configmaps]
  providers:
  - aescbc: {keys: [{name: cbc1, secret: ${cbcKey.toString('base64')}}]}
- resources: [serviceaccounts]
  providers:
  - aesgcm: {keys: [{name: gcm1, secret: ${gcmKey.toString('base64')}}]}
- resources: [leases.coordination.k8s.io]
  providers:
  - secretbox: {keys: [{name: box1, secret: ${boxKey.toString('base64')}}]}
`,
    );
    c = await startCluster([`--kvstore-servers=${etcd.endpoint}`, `--encryption-provider-config=${file}`]);
  });
  after(async () => {
    await c?.stop();
    client?.close();
    await kms?.stop();
    await etcd?.cleanup();
  });

  it('stores secrets as KMS envelopes: the DEK wrapped by the plugin, the data aescbc under the DEK', async () => {
    const rv = (await c.request('GET', '/api/v1/namespaces/default/secrets')).json.metadata.resourceVersion as string;
    await ok(['create', 'secret', 'generic', 'db', '--from-literal=password=s3cr3t-value']);
    const stored = await raw('/registry/secrets/default/db');
    const prefix = 'k8s:enc:kms:v1:fake-plugin:';
    assert.equal(stored.subarray(0, prefix.length).toString(), prefix);
    assert.ok(!stored.includes(Buffer.from('s3cr3t-value').toString('base64')));
    const body = stored.subarray(prefix.length);
    const keyLen = body.readUInt16BE(0);
    const dek = kms.unwrap(body.subarray(2, 2 + keyLen));
    assert.equal(dek.length, 32);
    const obj = decodeStored(cbc(dek, body.subarray(2 + keyLen)));
    assert.equal(Buffer.from(obj.data.password, 'base64').toString(), 's3cr3t-value');
    assert.ok(kms.calls.Version >= 1 && kms.calls.Encrypt >= 1);

    assert.equal(Buffer.from(await ok(['get', 'secret', 'db', '-o', 'jsonpath={.data.password}']), 'base64').toString(), 's3cr3t-value');
    // A watch from before the create sees the decrypted object.
    const watch = await c.request('GET', `/api/v1/namespaces/default/secrets?watch=1&resourceVersion=${rv}&timeoutSeconds=1`);
    const events = watch.text.trim().split('\n').map((l) => JSON.parse(l));
    const added = events.find((e) => e.type === 'ADDED' && e.object.metadata.name === 'db');
    assert.equal(added?.object.data.password, Buffer.from('s3cr3t-value').toString('base64'));
    // Every write gets a new DEK; the server's reads hit its DEK cache, not the plugin.
    const decrypts = kms.calls.Decrypt;
    await ok(['get', 'secrets', 'db']);
    assert.equal(kms.calls.Decrypt, decrypts);
  });

  it('stores configmaps (aescbc), serviceaccounts (aesgcm) and leases (secretbox) in their layouts', async () => {
    await ok(['create', 'configmap', 'settings', '--from-literal=mode=turbo']);
    await ok(['create', 'serviceaccount', 'robot']);
    await ok(['create', 'namespace', 'enc-test']);
    const lease = { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: 'holder', namespace: 'default' }, spec: { holderIdentity: 'me' } };
    assert.equal((await c.request('POST', '/apis/coordination.k8s.io/v1/namespaces/default/leases', { body: lease })).status, 201);

    const cm = await raw('/registry/configmaps/default/settings');
    const cmPrefix = 'k8s:enc:aescbc:v1:cbc1:';
    assert.equal(cm.subarray(0, cmPrefix.length).toString(), cmPrefix);
    assert.equal(decodeStored(cbc(cbcKey, cm.subarray(cmPrefix.length))).data.mode, 'turbo');

    const sa = await raw('/registry/serviceaccounts/default/robot');
    const saPrefix = 'k8s:enc:aesgcm:v1:gcm1:';
    assert.equal(sa.subarray(0, saPrefix.length).toString(), saPrefix);
    const sealed = sa.subarray(saPrefix.length);
    const d = createDecipheriv('aes-256-gcm', gcmKey, sealed.subarray(0, 12));
    d.setAAD(Buffer.from('/registry/serviceaccounts/default/robot'));
    d.setAuthTag(sealed.subarray(sealed.length - 16));
    assert.equal(decodeStored(Buffer.concat([d.update(sealed.subarray(12, sealed.length - 16)), d.final()])).metadata?.name, 'robot');

    const l = await raw('/registry/leases/default/holder');
    const lPrefix = 'k8s:enc:secretbox:v1:box1:';
    assert.equal(l.subarray(0, lPrefix.length).toString(), lPrefix);
    const box = l.subarray(lPrefix.length);
    const opened = nacl.secretbox.open(box.subarray(24), box.subarray(0, 24), boxKey);
    assert.ok(opened);
    assert.equal(decodeStored(Buffer.from(opened)).spec.holderIdentity, 'me');

    // Resources not listed stay plaintext.
    assert.equal(decodeStored(await raw('/registry/namespaces/enc-test')).metadata?.name, 'enc-test');
    assert.equal(await ok(['get', 'configmap', 'settings', '-o', 'jsonpath={.data.mode}']), 'turbo');
  });

  it('probes the plugin in /healthz/kms-provider-0', async () => {
    const r = await c.request('GET', '/healthz/kms-provider-0');
    assert.equal(r.status, 200, r.text);
    assert.equal(r.text, 'ok');
  });
});
