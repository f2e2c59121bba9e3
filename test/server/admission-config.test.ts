import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadAdmissionConfig, webhookAuthFrom } from '../../src/server/admission-config.js';

describe('--admission-control-config-file', () => {
  let dir = '';
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'admission-config-'));
    await mkdir(join(dir, 'sub'));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('gives each plugin its inline configuration or the file at its path, relative to the configuration file', async () => {
    await writeFile(
      join(dir, 'sub', 'quota.yaml'),
      'apiVersion: apiserver.config.k8s.io/v1\nkind: ResourceQuotaConfiguration\nlimitedResources:\n- resource: pods\n',
    );
    const file = join(dir, 'admission.yaml');
    await writeFile(
      file,
      `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: ResourceQuota
  path: sub/quota.yaml
- name: EventRateLimit
  configuration:
    apiVersion: eventratelimit.admission.k8s.io/v1alpha1
    kind: Configuration
    limits: [{type: Server, qps: 5, burst: 10}]
- name: PodSecurity
`,
    );
    const read = loadAdmissionConfig(file, ['ResourceQuota']);
    const quota = read('ResourceQuota');
    assert.equal(quota?.source, join(dir, 'sub', 'quota.yaml'));
    assert.deepEqual((quota?.object as { limitedResources: unknown }).limitedResources, [{ resource: 'pods' }]);
    const erl = read('EventRateLimit');
    assert.equal(erl?.source, file);
    assert.deepEqual(JSON.parse(erl.data), {
      apiVersion: 'eventratelimit.admission.k8s.io/v1alpha1',
      kind: 'Configuration',
      limits: [{ type: 'Server', qps: 5, burst: 10 }],
    });
    assert.equal(read('PodSecurity'), undefined, 'an entry with neither configuration nor path');
    assert.equal(read('LimitRanger'), undefined, 'no entry');
    assert.equal(loadAdmissionConfig(undefined, [])('ResourceQuota'), undefined);
  });

  it('accepts apiserver.k8s.io/v1alpha1 and the legacy ImagePolicyWebhook/PodNodeSelector form', async () => {
    const file = join(dir, 'alpha.yaml');
    await writeFile(file, 'apiVersion: apiserver.k8s.io/v1alpha1\nkind: AdmissionConfiguration\nplugins:\n- name: X\n  configuration: {a: 1}\n');
    assert.deepEqual(loadAdmissionConfig(file, [])('X')?.object, { a: 1 });
    const legacy = join(dir, 'legacy.yaml');
    await writeFile(legacy, 'imagePolicy:\n  kubeConfigFile: /x\n  allowTTL: 50\n');
    const read = loadAdmissionConfig(legacy, ['ImagePolicyWebhook']);
    assert.deepEqual(read('ImagePolicyWebhook')?.object, { imagePolicy: { kubeConfigFile: '/x', allowTTL: 50 } });
    assert.equal(read('ResourceQuota'), undefined);
  });

  it('refuses unreadable and unversioned files, unknown versions and a missing plugin file of an enabled plugin', async () => {
    assert.throws(() => loadAdmissionConfig(join(dir, 'nope.yaml'), []), /^Error: unable to read admission control configuration from ".*nope.yaml" \[/);
    const bare = join(dir, 'bare.yaml');
    await writeFile(bare, 'plugins: []\n');
    assert.throws(() => loadAdmissionConfig(bare, []), /Object 'Version' is missing/);
    const wrong = join(dir, 'wrong.yaml');
    await writeFile(wrong, 'apiVersion: apiserver.config.k8s.io/v2\nkind: AdmissionConfiguration\n');
    assert.throws(() => loadAdmissionConfig(wrong, []), /no kind "AdmissionConfiguration" is registered for version "apiserver.config.k8s.io\/v2"/);
    const missing = join(dir, 'missing.yaml');
    await writeFile(missing, 'apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: ResourceQuota\n  path: gone.yaml\n');
    assert.throws(() => loadAdmissionConfig(missing, ['ResourceQuota']), /Couldn't open admission plugin configuration .*gone.yaml/);
    assert.equal(loadAdmissionConfig(missing, [])('ResourceQuota'), undefined, 'not read while the plugin is off');
  });

  it('finds the webhook credentials of a host:port as Kubernetes: exact, *.suffix, without :443, *, the current context', async () => {
    const kubeconfig = join(dir, 'hooks.kubeconfig');
    await writeFile(
      kubeconfig,
      `apiVersion: v1
kind: Config
users:
- {name: 'hook.example.com:8443', user: {token: exact}}
- {name: '*.example.com:8443', user: {token: star}}
- {name: 'plain.example.org', user: {username: u, password: p}}
- {name: 'ctx', user: {token: from-context}}
contexts:
- {name: c, context: {user: ctx}}
current-context: c
`,
    );
    const cfg = (object: unknown) => ({ data: JSON.stringify(object), object, source: 'test' });
    const resolve = webhookAuthFrom(cfg({ apiVersion: 'apiserver.config.k8s.io/v1', kind: 'WebhookAdmissionConfiguration', kubeConfigFile: kubeconfig }))!;
    assert.deepEqual(resolve('hook.example.com:8443'), { token: 'exact' });
    assert.deepEqual(resolve('other.example.com:8443'), { token: 'star' });
    assert.deepEqual(resolve('plain.example.org:443'), { basic: Buffer.from('u:p').toString('base64') });
    assert.deepEqual(resolve('unknown:1'), { token: 'from-context' });
    assert.equal(webhookAuthFrom(undefined), undefined);
    assert.throws(
      () => webhookAuthFrom(cfg({ apiVersion: 'apiserver.config.k8s.io/v1', kind: 'WebhookAdmissionConfiguration', kubeConfigFile: 'relative' })),
      /kubeConfigFile: Invalid value: "relative": must be an absolute file path/,
    );
  });
});
