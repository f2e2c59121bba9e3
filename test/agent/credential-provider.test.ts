/**
 * Image credentials (src/agent/credentialprovider): kubelet's keyring matching, the pod's pull secrets,
 * the CredentialProviderConfig file, the exec plugin's answers and cache; and, end to end, bin/orchlet
 * on containerd pulling from a registry on loopback that requires Basic auth, with the login a plugin
 * script answers (an image the plugin does not match fails with ErrImagePull/ImagePullBackOff); and through
 * kubectl, a pod's imagePullSecrets (a docker-registry Secret) pulling from that registry.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildImageLayout, stopHarness, containerdTestPrerequisites, startContainerd, unmountUnder, type ContainerdHarness } from '../helpers/containerd.js';
import { startCluster } from '../helpers/cluster.js';
import { startAgent } from '../helpers/agent.js';
import { waitFor } from './runtime-contract.js';
import { CriRuntime } from '../../src/agent/runtime/cri.js';
import { startRegistry, type TestRegistry } from '../helpers/registry.js';
import { freePort } from '../helpers/ports.js';
import { eventually } from '../helpers/eventually.js';
import { BasicKeyring, keyOf, repositoryOf, secretsKeyring, urlsMatch, type AuthConfig } from '../../src/agent/credentialprovider/keyring.js';
import { readCredentialProviderConfig } from '../../src/agent/credentialprovider/config.js';
import { decodeResponse, PluginProvider, ProvidersKeyring, type PluginResponse } from '../../src/agent/credentialprovider/plugin.js';
import { ImagePuller } from '../../src/agent/images.js';
import type { ImageService } from '../../src/agent/runtime/runtime.js';
import type { Pod } from '../../src/agent/types.js';
import { getJSON } from '../helpers/http.js';
import { criStandaloneArgs, spawnOrchlet } from '../helpers/orchlet-process.js';

const ORCHLET = fileURLToPath(new URL('../../../bin/orchlet', import.meta.url));
const NODE = 'credprov-node';
const V1ALPHA1 = 'credentialprovider.kubelet.k8s.io/v1alpha1';

const dirs: string[] = [];
const tempDir = async (): Promise<string> => {
  const d = await mkdtemp(join(tmpdir(), 'orch-credprov-'));
  dirs.push(d);
  return d;
};
let harness: ContainerdHarness | undefined;
let registry: TestRegistry | undefined;
after(async () => {
  await registry?.stop();
  await stopHarness(harness);
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

const provider = (o: Partial<{ matchImages: string[]; defaultCacheDuration: number }> = {}) => ({
  name: 'p',
  matchImages: o.matchImages ?? ['*.registry.io', 'reg:5000'],
  defaultCacheDuration: o.defaultCacheDuration ?? 60_000,
  apiVersion: V1ALPHA1,
  args: [],
  env: [],
});

void describe('image credentials: matching', () => {
  void it('normalizes image references to repositories as Docker does', () => {
    assert.equal(repositoryOf('busybox'), 'docker.io/library/busybox');
    assert.equal(repositoryOf('busybox:1.35'), 'docker.io/library/busybox');
    assert.equal(repositoryOf('me/app@sha256:abc'), 'docker.io/me/app');
    assert.equal(repositoryOf('index.docker.io/me/app:1'), 'docker.io/me/app');
    assert.equal(repositoryOf('localhost/app:1'), 'localhost/app');
    assert.equal(repositoryOf('127.0.0.1:5000/a/b:2'), '127.0.0.1:5000/a/b');
    assert.equal(repositoryOf('gcr.io/p/i'), 'gcr.io/p/i');
  });

  void it('URLsMatch: glob host parts, same part count, same port, path prefix', () => {
    assert.equal(urlsMatch('*.docker.io', 'blah.docker.io/x'), true);
    assert.equal(urlsMatch('*.docker.io', 'not.right.io/x'), false);
    assert.equal(urlsMatch('*.docker.io', 'docker.io/x'), false, 'part counts differ');
    assert.equal(urlsMatch('*.*.registry.io', 'a.b.registry.io/x'), true);
    assert.equal(urlsMatch('reg:5000', 'reg:5000/a'), true);
    assert.equal(urlsMatch('reg:5000', 'reg/a'), false, 'ports differ');
    assert.equal(urlsMatch('reg/team', 'reg/team/app'), true);
    assert.equal(urlsMatch('reg/team', 'reg/other/app'), false);
    assert.equal(urlsMatch('r?g', 'reg/a'), false, "'?' starts the query, as in Go's url.Parse");
    assert.equal(urlsMatch('*eg:5000/te', 'reg:5000/team/x'), true, 'the path is a plain prefix');
    assert.equal(urlsMatch('[a-r]eg', 'reg/a'), false, "a host starting with '[' does not parse (Go's url.Parse refuses it too)");
  });

  void it('keys drop the scheme and /v1/ or /v2/; the most specific key first; index.docker.io serves Docker Hub', () => {
    assert.equal(keyOf('https://reg.io/v2/'), 'reg.io');
    assert.equal(keyOf('http://reg.io:5000/team'), 'reg.io:5000/team');
    const ring = new BasicKeyring();
    ring.add({ 'reg.io': { username: 'host', password: 'h' }, 'https://reg.io/team': { username: 'team', password: 't' }, 'index.docker.io/v1/': { username: 'hub', password: 'x' } });
    assert.deepEqual(ring.lookup('reg.io/team/app').map((a) => a.username), ['team', 'host']);
    assert.deepEqual(ring.lookup('reg.io/other').map((a) => a.username), ['host']);
    assert.deepEqual(ring.lookup('docker.io/library/busybox').map((a) => a.username), ['hub']);
    assert.deepEqual(ring.lookup('quay.io/x'), []);
  });

  void it('pull secrets: dockerconfigjson (auths, auth decoded) and dockercfg; other types ignored', () => {
    const b64 = (s: string) => Buffer.from(s).toString('base64');
    const ring = secretsKeyring([
      { type: 'kubernetes.io/dockerconfigjson', data: { '.dockerconfigjson': b64(JSON.stringify({ auths: { 'reg.io': { auth: b64('u1:p:1') } } })) } },
      { type: 'kubernetes.io/dockercfg', data: { '.dockercfg': b64(JSON.stringify({ 'other.io': { username: 'u2', password: 'p2' } })) } },
      { type: 'Opaque', data: { '.dockerconfigjson': b64('{}') } },
    ]);
    assert.deepEqual(ring?.lookup('reg.io/a'), [{ username: 'u1', password: 'p:1' }]);
    assert.deepEqual(ring?.lookup('other.io/a'), [{ username: 'u2', password: 'p2' }]);
    assert.equal(secretsKeyring([{ type: 'Opaque', data: {} }]), undefined);
  });

  void it('pulls anonymously without credentials, else pull secrets first, then the providers, until one works', async () => {
    const tried: (AuthConfig | undefined)[] = [];
    const images: ImageService = {
      imageStatus: async () => undefined,
      pullImage: async (_image, _sb, auth) => {
        tried.push(auth);
        if (auth?.username !== 'good') throw new Error(`denied for ${auth?.username ?? 'anonymous'}`);
        return 'sha256:1';
      },
      listImages: async () => [],
      removeImage: async () => {},
    };
    const b64 = (s: string) => Buffer.from(s).toString('base64');
    const secret = { type: 'kubernetes.io/dockerconfigjson', data: { '.dockerconfigjson': b64(JSON.stringify({ auths: { 'reg.io': { username: 'bad', password: 'x' } } })) } };
    const keyring = { lookup: (repo: string) => (repo.startsWith('reg.io/') ? [{ username: 'good', password: 'y' }] : []) };
    const puller = new ImagePuller({ images, qps: 0, keyring, pullSecrets: async (p) => (p.metadata.name === 'with-secret' ? [secret] : []) });
    const pod = (name: string) => ({ metadata: { name, namespace: 'ns', uid: name }, spec: { containers: [] } }) as unknown as Pod;
    const c = (image: string) => ({ name: 'c', image, imagePullPolicy: 'Always' }) as Pod['spec']['containers'][0];
    const events: string[] = [];
    assert.deepEqual(await puller.ensure(pod('with-secret'), c('reg.io/app:1'), undefined, (_t, reason) => events.push(reason)), { ok: true, imageRef: 'sha256:1' });
    assert.deepEqual(tried.map((a) => a?.username), ['bad', 'good']);
    tried.length = 0;
    const r = await puller.ensure(pod('plain'), c('quay.io/app:1'), undefined, () => {});
    assert.equal(r.ok, false);
    assert.deepEqual(tried, [undefined], 'an anonymous pull');
    assert.equal(!r.ok && r.message, 'denied for anonymous');
  });
});

void describe('image credentials: the config file and the exec plugin', () => {
  void it('reads and validates CredentialProviderConfig as kubelet', async () => {
    const dir = await tempDir();
    const file = join(dir, 'c.yaml');
    await writeFile(
      file,
      `apiVersion: kubelet.config.k8s.io/v1alpha1
kind: CredentialProviderConfig
providers:
  - name: ecr
    matchImages: ["*.dkr.ecr.*.amazonaws.com", "reg:5000/team"]
    defaultCacheDuration: 12h
    apiVersion: ${V1ALPHA1}
    args: [get-credentials]
    env: [{name: AWS_PROFILE, value: temp}]
`,
    );
    assert.deepEqual(readCredentialProviderConfig(file), [
      { name: 'ecr', matchImages: ['*.dkr.ecr.*.amazonaws.com', 'reg:5000/team'], defaultCacheDuration: 12 * 3600_000, apiVersion: V1ALPHA1, args: ['get-credentials'], env: [{ name: 'AWS_PROFILE', value: 'temp' }] },
    ]);
    await writeFile(file, JSON.stringify({ apiVersion: 'kubelet.config.k8s.io/v1alpha1', kind: 'CredentialProviderConfig', providers: [{ name: 'a/b', matchImages: [], apiVersion: 'x/v1' }] }));
    assert.throws(() => readCredentialProviderConfig(file), (e: Error) => {
      assert.match(e.message, /^failed to validate credential provider config: \[/);
      assert.match(e.message, /provider name cannot contain '\/'/);
      assert.match(e.message, /providers\.apiVersion: Unsupported value: "x\/v1"/);
      assert.match(e.message, /at least 1 item in matchImages is required/);
      assert.match(e.message, /defaultCacheDuration is required/);
      return true;
    });
    await writeFile(file, JSON.stringify({ apiVersion: 'kubelet.config.k8s.io/v1alpha1', kind: 'CredentialProviderConfig', providers: [], extra: 1 }));
    assert.throws(() => readCredentialProviderConfig(file), /error decoding config .*unknown field "extra"/);
    await writeFile(file, JSON.stringify({ apiVersion: 'v1', kind: 'Pod' }));
    assert.throws(() => readCredentialProviderConfig(file), /failed to decode "Pod" \(wrong Kind\)/);
  });

  void it('decodes responses strictly, of the provider\'s apiVersion only', () => {
    const ok = JSON.stringify({ kind: 'CredentialProviderResponse', apiVersion: V1ALPHA1, cacheKeyType: 'Registry', cacheDuration: '5m', auth: { 'reg:5000': { username: 'u', password: 'p' } } });
    assert.deepEqual(decodeResponse(ok, V1ALPHA1), { cacheKeyType: 'Registry', cacheDuration: 300_000, auth: { 'reg:5000': { username: 'u', password: 'p' } } });
    assert.throws(() => decodeResponse(ok, 'credentialprovider.kubelet.k8s.io/v1'), /did not match expected apiVersion:credentialprovider.kubelet.k8s.io\/v1, actual apiVersion:credentialprovider.kubelet.k8s.io\/v1alpha1/);
    assert.throws(() => decodeResponse(JSON.stringify({ kind: 'CredentialProviderResponse', apiVersion: V1ALPHA1, secret: 'x' }), V1ALPHA1), /^Error: error decoding credential provider plugin response from stdout$/);
  });

  void it('caches per image, registry or globally for cacheDuration (or the default); 0 does not cache', async () => {
    let now = 0;
    const calls: string[] = [];
    let answer: PluginResponse = { cacheKeyType: 'Registry', auth: { 'reg:5000': { username: 'u', password: 'p' } } };
    const p = new PluginProvider(provider(), '/nowhere', () => {}, () => now, async (image) => {
      calls.push(image);
      return answer;
    });
    const ring = new ProvidersKeyring([p]);
    assert.deepEqual(await ring.lookup('reg:5000/a'), [{ username: 'u', password: 'p' }]);
    assert.deepEqual(await ring.lookup('reg:5000/b'), [{ username: 'u', password: 'p' }], 'the registry key serves b too');
    assert.deepEqual(await ring.lookup('other.io/a'), [], 'not in matchImages: the plugin is not run');
    assert.deepEqual(calls, ['reg:5000/a']);
    now = 60_001; // the default duration passed
    await ring.lookup('reg:5000/b');
    assert.deepEqual(calls, ['reg:5000/a', 'reg:5000/b']);
    answer = { cacheKeyType: 'Image', cacheDuration: 0, auth: answer.auth };
    now = 200_000;
    await ring.lookup('reg:5000/c');
    await ring.lookup('reg:5000/c');
    assert.deepEqual(calls.slice(2), ['reg:5000/c', 'reg:5000/c'], 'cacheDuration 0: every pull runs the plugin');
    answer = { cacheKeyType: 'Global', cacheDuration: 1000, auth: { '*.registry.io': { username: 'g', password: 'g' } } };
    assert.deepEqual(await ring.lookup('x.registry.io/a'), [{ username: 'g', password: 'g' }]);
    assert.deepEqual(await ring.lookup('y.registry.io/b'), [{ username: 'g', password: 'g' }]);
    assert.equal(calls.length, 5, 'the global key serves every image');
    answer = { cacheKeyType: 'Bogus' as 'Image', auth: answer.auth };
    now = 300_000;
    assert.deepEqual(await ring.lookup('z.registry.io/a'), [], 'an invalid cacheKeyType gives nothing');
  });
});

const missing = containerdTestPrerequisites();

void describe('bin/orchlet: credential provider plugins', () => {
  void it('refuses a missing bin directory with the gate on; ignores the options with it off', async () => {
    const dir = await tempDir();
    const r = spawnSync(
      process.execPath,
      [ORCHLET, '--make-iptables-util-chains=false', '--feature-gates=KubeletCredentialProviders=true', `--image-credential-provider-config=${join(dir, 'c.yaml')}`, `--image-credential-provider-bin-dir=${join(dir, 'nope')}`, `--root-dir=${dir}`, '--enable-server=false', '--healthz-port=0', '--fail-swap-on=false'],
      { encoding: 'utf8', timeout: 20_000 },
    );
    assert.equal(r.status, 1, r.stderr);
    assert.match(r.stderr, new RegExp(`Failed to register CRI auth plugins: plugin binary directory ${join(dir, 'nope')} did not exist`));
    const args = [`--image-credential-provider-config=${join(dir, 'c.yaml')}`, `--root-dir=${dir}`, '--enable-server=false', '--healthz-port=0', '--fail-swap-on=false', '--log-flush-frequency=100ms'];
    const child = spawn(process.execPath, [ORCHLET, '--make-iptables-util-chains=false', ...args], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const exited = new Promise((resolve) => child.once('exit', resolve));
    try {
      await eventually('the agent runs', () => /running standalone/.test(stderr), { timeoutMs: 20_000 });
      assert.match(stderr, /were set but the feature gate was disabled, these flags will be ignored/);
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
  });

  void it('on containerd: the plugin\'s login pulls from a registry requiring Basic auth; an image it does not match fails', async (t) => {
    if (missing.length > 0) return t.skip(`missing: ${missing.join(', ')}`);
    const dir = await tempDir();
    registry = await startRegistry(await buildImageLayout(dir), { basicAuth: { username: 'plug', password: 's3cret' } });
    const host = registry.host;
    harness = await startContainerd({ registryMirrors: { [host]: [`http://${host}`] } });
    const h = harness;
    const bin = join(dir, 'bin');
    await mkdir(bin);
    const plugin = join(bin, 'test-plugin');
    // Records its arguments, environment and request; answers the login for the registry (cached per registry).
    await writeFile(
      plugin,
      `#!/bin/sh
echo "$@ $PLUGIN_MODE" >> ${join(dir, 'plugin.calls')}
cat >> ${join(dir, 'plugin.requests')}
echo >> ${join(dir, 'plugin.requests')}
echo '{"kind":"CredentialProviderResponse","apiVersion":"${V1ALPHA1}","cacheKeyType":"Registry","cacheDuration":"10m","auth":{"${host}":{"username":"plug","password":"s3cret"}}}'
`,
    );
    await chmod(plugin, 0o755);
    const config = join(dir, 'credential-providers.yaml');
    await writeFile(
      config,
      `apiVersion: kubelet.config.k8s.io/v1alpha1
kind: CredentialProviderConfig
providers:
  - name: test-plugin
    matchImages: ["${host}/team"]
    defaultCacheDuration: 1m
    apiVersion: ${V1ALPHA1}
    args: [get-credentials]
    env: [{name: PLUGIN_MODE, value: test}]
`,
    );
    const manifests = join(dir, 'manifests');
    await mkdir(manifests);
    const manifest = (name: string, image: string) =>
      JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { restartPolicy: 'Never', containers: [{ name: 'c', image, imagePullPolicy: 'Always', command: ['sh', '-c', 'echo pulled-ok'] }] } });
    await writeFile(join(manifests, 'matched.json'), manifest('matched', `${host}/team/busybox:1.35`));
    await writeFile(join(manifests, 'unmatched.json'), manifest('unmatched', `${host}/other/busybox:1.35`));
    const readOnlyPort = await freePort();
    const orchlet = spawnOrchlet([
      ...criStandaloneArgs(h, { node: NODE, manifests, root: join(dir, 'root'), certDir: join(dir, 'pki'), port: await freePort(), readOnlyPort }),
      '--feature-gates=KubeletCredentialProviders=true',
      `--image-credential-provider-config=${config}`,
      `--image-credential-provider-bin-dir=${bin}`,
    ]);
    const { child, exited } = orchlet;
    const podNamed = async (name: string): Promise<Pod | undefined> => {
      const list = (await getJSON(readOnlyPort, '/pods').catch(() => undefined)) as { items?: Pod[] } | undefined;
      return list?.items?.find((x) => x.metadata.name === `${name}-${NODE}`);
    };
    try {
      const matched = await eventually('the matched pod to succeed', async () => ((await podNamed('matched'))?.status?.phase === 'Succeeded' ? true : undefined), {
        timeoutMs: 60_000,
      }).catch((err: unknown) => {
        throw new Error(`${String(err)}\norchlet stderr:\n${orchlet.stderr()}\nregistry: ${JSON.stringify(registry?.requests.slice(-5))}`);
      });
      assert.ok(matched);
      const waiting = await eventually(
        'the unmatched pod to fail its pull',
        async () => {
          const reason = ((await podNamed('unmatched'))?.status?.containerStatuses?.[0] as { state?: { waiting?: { reason?: string } } } | undefined)?.state?.waiting?.reason;
          return reason === 'ErrImagePull' || reason === 'ImagePullBackOff' ? reason : undefined;
        },
        { timeoutMs: 60_000 },
      );
      assert.ok(['ErrImagePull', 'ImagePullBackOff'].includes(waiting));
      // the plugin ran once, for the matched repository, with its args and env, and the request kubelet sends
      assert.deepEqual((await readFile(join(dir, 'plugin.calls'), 'utf8')).trim().split('\n'), ['get-credentials test']);
      assert.deepEqual(JSON.parse((await readFile(join(dir, 'plugin.requests'), 'utf8')).trim()), { kind: 'CredentialProviderRequest', apiVersion: V1ALPHA1, image: `${host}/team/busybox` });
      // the registry served the matched pull to the plugin's user, and refused the anonymous one
      assert.ok(registry.requests.some((r) => r.path.startsWith('/v2/team/busybox/manifests/') && r.user === 'plug' && r.status === 200), JSON.stringify(registry.requests));
      assert.ok(registry.requests.some((r) => r.path.startsWith('/v2/other/busybox/') && r.status === 401));
      assert.ok(!registry.requests.some((r) => r.path.startsWith('/v2/other/busybox/') && r.user !== ''));
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
  });
  void it('imagePullSecrets (kubectl, API-server mode on containerd): a docker-registry Secret\'s login pulls; without it the pull fails', async (t) => {
    if (missing.length > 0 || !harness || !registry) return t.skip('needs the containerd harness and registry of the test before');
    const h = harness;
    const host = registry.host;
    const c = await startCluster();
    const runtime = await CriRuntime.connect({ runtimeEndpoint: h.endpoint, cgroupRoot: h.cgroupRoot, eventPollMs: 200, requestTimeoutMs: 30_000 });
    const a = await startAgent(c, { nodeName: `credprov-api-${process.pid}`, extra: { runtime, podConfig: { cgroupRoot: h.cgroupRoot } } });
    const kubectlJSON = async (args: string[]): Promise<Record<string, any> | undefined> => {
      const r = await c.kubectl([...args, '-o', 'json']);
      return r.code === 0 ? (JSON.parse(r.stdout) as Record<string, any>) : undefined;
    };
    try {
      const r = await c.kubectl(['create', 'secret', 'docker-registry', 'regcred', `--docker-server=${host}`, '--docker-username=plug', '--docker-password=s3cret']);
      assert.equal(r.code, 0, r.stderr);
      const pod = (name: string, repo: string, secrets: boolean) => ({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name, namespace: 'default' },
        spec: {
          nodeName: a.nodeName,
          restartPolicy: 'Never',
          automountServiceAccountToken: false,
          ...(secrets ? { imagePullSecrets: [{ name: 'regcred' }] } : {}),
          containers: [{ name: 'c', image: `${host}/${repo}/busybox:1.35`, command: ['sh', '-c', 'echo pulled-ok'] }],
        },
      });
      for (const p of [pod('with-secret', 'secret', true), pod('without-secret', 'nosecret', false)]) {
        await waitFor(`pod ${p.metadata.name} admitted`, async () => ((await c.kubectl(['create', '-f', '-'], { input: JSON.stringify(p) })).code === 0 ? true : undefined));
      }
      const done = await waitFor('with-secret to succeed', async () => {
        const x = await kubectlJSON(['get', 'pod', 'with-secret']);
        return x?.status?.phase === 'Succeeded' || x?.status?.phase === 'Failed' ? x : undefined;
      }, 60_000);
      assert.equal(done.status.phase, 'Succeeded', JSON.stringify(done.status));
      assert.equal((await c.kubectl(['logs', 'with-secret'])).stdout, 'pulled-ok\n');
      const reason = await waitFor('without-secret to fail its pull', async () => {
        const w = (await kubectlJSON(['get', 'pod', 'without-secret']))?.status?.containerStatuses?.[0]?.state?.waiting?.reason as string | undefined;
        return w === 'ErrImagePull' || w === 'ImagePullBackOff' ? w : undefined;
      }, 60_000);
      assert.ok(reason);
      assert.ok(registry.requests.some((q) => q.path.startsWith('/v2/secret/busybox/manifests/') && q.user === 'plug' && q.status === 200));
      assert.ok(!registry.requests.some((q) => q.path.startsWith('/v2/nosecret/') && q.status === 200));
      await c.kubectl(['delete', 'pod', '--all', '--grace-period=0', '--force']);
    } finally {
      await a.agent.stop();
      unmountUnder(a.rootDir);
      await rm(a.rootDir, { recursive: true, force: true });
      await c.stop();
    }
  });
});
