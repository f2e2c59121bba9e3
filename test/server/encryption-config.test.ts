import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadEncryptionConfig, parseEncryptionConfiguration, storageResourceKey } from '../../src/server/encryption-config.js';

const K32 = Buffer.alloc(32, 1).toString('base64');
const K16 = Buffer.alloc(16, 2).toString('base64');
const head = 'apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\n';

function message(text: string): string {
  try {
    parseEncryptionConfiguration(text);
  } catch (err) {
    return (err as Error).message;
  }
  return 'accepted';
}

describe('--encryption-provider-config', () => {
  it('decodes a configuration with every provider, defaulting kms cachesize and timeout', () => {
    const c = parseEncryptionConfiguration(`${head}resources:
- resources: [secrets, configmaps]
  providers:
  - aescbc: {keys: [{name: key1, secret: ${K32}}, {name: key0, secret: ${K16}}]}
  - aesgcm: {keys: [{name: k, secret: ${K16}}]}
  - secretbox: {keys: [{name: k, secret: ${K32}}]}
  - kms: {name: plugin, endpoint: unix:///tmp/kms.sock}
  - identity: {}
`);
    assert.deepEqual(c.resources[0]!.resources, ['secrets', 'configmaps']);
    assert.deepEqual(c.resources[0]!.providers[3]!.kms, { name: 'plugin', endpoint: 'unix:///tmp/kms.sock', cachesize: 1000, timeoutMs: 3000 });
    assert.deepEqual(c.resources[0]!.providers[4], { identity: {} });
    // JSON is accepted as well.
    const json = JSON.stringify({ apiVersion: 'apiserver.config.k8s.io/v1', kind: 'EncryptionConfiguration', resources: [{ resources: ['secrets'], providers: [{ identity: {} }] }] });
    assert.equal(parseEncryptionConfiguration(json).resources.length, 1);
  });

  it('names resources as the storage does (resource.group)', () => {
    assert.equal(storageResourceKey('secrets'), 'secrets');
    assert.equal(storageResourceKey('deployments.apps'), 'deployments.apps');
    assert.equal(storageResourceKey('leases.coordination.k8s.io'), 'leases.coordination.k8s.io');
    assert.equal(storageResourceKey('secrets.'), 'secrets');
  });

  it('reports field errors as Kubernetes 1.23 words them', () => {
    const one = (providers: string) => message(`${head}resources:\n- resources: [secrets]\n  providers:\n${providers}`);
    assert.equal(
      one(`  - aescbc: {keys: [{name: k, secret: ${Buffer.from('12345678').toString('base64')}}]}\n`),
      'resources[0].providers[0].aescbc.keys[0].secret: Invalid value: "REDACTED": secret is not of the expected length, got 8, expected one of [16 24 32]',
    );
    assert.equal(
      one(`  - secretbox: {keys: [{name: k, secret: ${K16}}]}\n`),
      'resources[0].providers[0].secretbox.keys[0].secret: Invalid value: "REDACTED": secret is not of the expected length, got 16, expected one of [32]',
    );
    assert.equal(one(`  - aesgcm: {keys: [{name: k, secret: "not base64!"}]}\n`), 'resources[0].providers[0].aesgcm.keys[0].secret: Invalid value: "REDACTED": secrets must be base64 encoded');
    assert.equal(one(`  - aesgcm: {keys: []}\n`), 'resources[0].providers[0].aesgcm.keys: Required value: at least one keys is required');
    assert.equal(
      one(`  - aescbc: {keys: [{secret: ""}]}\n`),
      '[resources[0].providers[0].aescbc.keys[0].name: Required value: name is a mandatory field for a key, resources[0].providers[0].aescbc.keys[0].secret: Required value: secret is a mandatory field for a key]',
    );
    assert.match(one(`  - identity: {}\n    aescbc: {keys: [{name: k, secret: ${K32}}]}\n`), /^resources\[0\]\.providers\[0\]: Invalid value: config\.ProviderConfiguration\{.*\}: more than one provider specified in a single element, should split into different list elements$/);
    assert.match(one(`  - identity:\n`), /^resources\[0\]\.providers\[0\]: Invalid value: .*: provider does not contain any of the expected providers: KMS, AESGCM, AESCBC, Secretbox, Identity$/);
    assert.equal(
      one(`  - kms: {name: p, endpoint: "tcp://127.0.0.1:1", cachesize: 0, timeout: 0s}\n`),
      '[resources[0].providers[0].kms.timeout: Invalid value: 0s: timeout should be a positive value, resources[0].providers[0].kms.endpoint: Invalid value: "tcp://127.0.0.1:1": unsupported scheme "tcp" for KMS provider, only unix is supported, resources[0].providers[0].kms.cachesize: Invalid value: 0: cachesize should be a positive value, or negative to disable]',
    );
    assert.equal(
      one(`  - kms: {}\n`),
      '[resources[0].providers[0].kms.name: Required value: name is a mandatory field for a provider, resources[0].providers[0].kms.endpoint: Invalid value: "": endpoint is a mandatory field for a kms]',
    );
    assert.equal(message(`${head}resources: []\n`), 'resources: Required value: at least one resources is required');
    assert.equal(
      message(`${head}resources:\n- resources: []\n  providers: []\n`),
      '[resources[0].resources: Required value: at least one resources[0].resources is required, resources[0].providers: Required value: at least one resources[0].providers is required]',
    );
    assert.equal(message('apiVersion: v1\nkind: EncryptionConfig\nresources: []\n'), 'no kind "EncryptionConfig" is registered for version "v1" in scheme "pkg/runtime/scheme.go:100"');
    assert.match(message('resources: []\n'), /^Object 'Kind' is missing in /);
    assert.match(message(`${head}resources: secrets\n`), /^json: cannot unmarshal string into Go struct field EncryptionConfiguration.resources of type \[\]v1.ResourceConfiguration$/);
    assert.equal(message(`${head}resources:\n- resources: [s]\n  providers: [{kms: {name: p, endpoint: "unix:///x", timeout: soon}}]\n`), 'time: invalid duration "soon"');
  });

  it('wraps the errors with the file name, as kube-apiserver does', async (t) => {
    const dir = await mkdtemp(join(tmpdir(), 'orch-enc-'));
    t.after(() => rm(dir, { recursive: true, force: true }));
    const missing = join(dir, 'missing.yaml');
    assert.throws(() => loadEncryptionConfig(missing), { message: `error opening encryption provider configuration file "${missing}": open ${missing}: no such file or directory` });
    const bad = join(dir, 'bad.yaml');
    await writeFile(bad, `${head}resources:\n- resources: [secrets]\n  providers: []\n`);
    assert.throws(() => loadEncryptionConfig(bad), {
      message: `error while parsing encryption provider configuration file "${bad}": error while parsing file: resources[0].providers: Required value: at least one resources[0].providers is required`,
    });
    const good = join(dir, 'good.yaml');
    await writeFile(good, `${head}resources:\n- resources: [secrets, deployments.apps]\n  providers: [{aescbc: {keys: [{name: k, secret: ${K32}}]}}, {identity: {}}]\n- resources: [secrets]\n  providers: [{secretbox: {keys: [{name: k, secret: ${K32}}]}}]\n`);
    const setup = loadEncryptionConfig(good);
    t.after(() => setup.close());
    assert.deepEqual([...setup.transformers.keys()].sort(), ['deployments.apps', 'secrets']);
    // secrets: aescbc writes; the secretbox of the second entry still reads.
    const secrets = setup.transformers.get('secrets')!;
    const stored = await secrets.toStorage(Buffer.from('x'), { key: '/registry/secrets/a/b' });
    assert.ok(Buffer.from(stored).toString().startsWith('k8s:enc:aescbc:v1:k:'));
  });
});
