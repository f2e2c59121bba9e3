// What a pod asks of an isolating runtime (podconfig.ts) and the image pull policy (images.ts), as
// kubelet computes them; no runtime needed.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultPullPolicy, ImagePuller } from '../../src/agent/images.js';
import { containerResources, missingClusterDNS, podCgroupParent, podDNSConfig, podPortMappings, podSandboxLinux } from '../../src/agent/podconfig.js';
import { RuntimeError, type ImageInfo, type ImageService } from '../../src/agent/runtime/runtime.js';
import type { Container, Pod } from '../../src/agent/types.js';

const pod = (containers: Partial<Container>[], spec: Record<string, unknown> = {}): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'p', namespace: 'ns', uid: 'u1' },
  spec: { containers: containers.map((c, i) => ({ name: `c${i}`, image: 'busybox:1', ...c })), ...spec },
});

void describe('pod config for image runtimes', () => {
  void it('puts pods under kubepods/<qos>/pod<uid> below --cgroup-root', () => {
    const best = pod([{}]);
    const burst = pod([{ resources: { requests: { memory: '10Mi' } } }]);
    const guaranteed = pod([{ resources: { limits: { cpu: '1', memory: '10Mi' } } }]);
    assert.equal(podCgroupParent(best, {}), '/kubepods/besteffort/podu1');
    assert.equal(podCgroupParent(burst, { cgroupRoot: '/orch' }), '/orch/kubepods/burstable/podu1');
    assert.equal(podCgroupParent(guaranteed, { cgroupRoot: '/' }), '/kubepods/podu1');
    assert.equal(podCgroupParent(best, { cgroupsPerQOS: false }), undefined);
  });

  void it('maps resources to cpu shares, CFS quota, memory limit and oom_score_adj', () => {
    const p = pod([{ resources: { requests: { cpu: '250m', memory: '64Mi' }, limits: { cpu: '500m', memory: '128Mi' } } }]);
    assert.deepEqual(containerResources(p, p.spec.containers[0]!, { memoryCapacity: 1024 * 1024 * 1024 }), {
      cpuShares: 256,
      cpuPeriod: 100_000,
      cpuQuota: 50_000,
      memoryLimitInBytes: 128 * 1024 * 1024,
      oomScoreAdj: 938,
    });
    const noQuota = containerResources(p, p.spec.containers[0]!, { cpuCFSQuota: false, cpuCFSQuotaPeriodMs: 50 });
    assert.equal(noQuota.cpuQuota, undefined);
    const tiny = pod([{ resources: { limits: { cpu: '1m' } } }]);
    assert.deepEqual(containerResources(tiny, tiny.spec.containers[0]!, { cpuCFSQuotaPeriodMs: 50 }), { cpuShares: 2, cpuPeriod: 50_000, cpuQuota: 1000, oomScoreAdj: 999 });
    const best = pod([{}]);
    assert.deepEqual(containerResources(best, best.spec.containers[0]!, {}), { cpuShares: 2, cpuPeriod: 100_000, oomScoreAdj: 1000 });
    const g = pod([{ resources: { limits: { cpu: '2', memory: '1Gi' } } }]);
    assert.equal(containerResources(g, g.spec.containers[0]!, {}).oomScoreAdj, -997);
  });

  void it('derives DNS from dnsPolicy, --cluster-dns, --cluster-domain and --resolv-conf', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'orch-dns-'));
    try {
      const resolvConf = join(dir, 'resolv.conf');
      await writeFile(resolvConf, '# host\nnameserver 192.0.2.53\nsearch example.test\noptions edns0\n');
      const cluster = { clusterDNS: ['10.96.0.10'], clusterDomain: 'cluster.local', resolvConf };
      assert.deepEqual(podDNSConfig(pod([{}]), cluster), {
        servers: ['10.96.0.10'],
        searches: ['ns.svc.cluster.local', 'svc.cluster.local', 'cluster.local', 'example.test'],
        options: ['ndots:5'],
      });
      // No cluster DNS, or hostNetwork with ClusterFirst: the host's resolver.
      const host = { servers: ['192.0.2.53'], searches: ['example.test'], options: ['edns0'] };
      assert.deepEqual(podDNSConfig(pod([{}]), { resolvConf }), host);
      assert.deepEqual(podDNSConfig(pod([{}], { hostNetwork: true }), cluster), host);
      assert.equal(podDNSConfig(pod([{}], { hostNetwork: true, dnsPolicy: 'ClusterFirstWithHostNet' }), cluster).servers[0], '10.96.0.10');
      assert.deepEqual(podDNSConfig(pod([{}], { dnsPolicy: 'None', dnsConfig: { nameservers: ['1.1.1.1'], options: [{ name: 'ndots', value: '2' }] } }), cluster), {
        servers: ['1.1.1.1'],
        searches: [],
        options: ['ndots:2'],
      });
      assert.deepEqual(podDNSConfig(pod([{}]), { resolvConf: '' }), { servers: ['127.0.0.1'], searches: ['.'], options: [] });
      // MissingClusterDNS: ClusterFirst (off the host network) and ClusterFirstWithHostNet without --cluster-dns
      const warned = (p: ReturnType<typeof pod>, o: Parameters<typeof podDNSConfig>[1]): boolean => {
        let called = false;
        podDNSConfig(p, o, () => (called = true));
        assert.equal(missingClusterDNS(p, o), called);
        return called;
      };
      assert.equal(warned(pod([{}]), { resolvConf }), true);
      assert.equal(warned(pod([{}], { hostNetwork: true, dnsPolicy: 'ClusterFirstWithHostNet' }), { resolvConf }), true);
      assert.equal(warned(pod([{}], { hostNetwork: true }), { resolvConf }), false, 'ClusterFirst on the host network is Default');
      assert.equal(warned(pod([{}], { dnsPolicy: 'Default' }), { resolvConf }), false);
      assert.equal(warned(pod([{}], { dnsPolicy: 'None' }), { resolvConf }), false);
      assert.equal(warned(pod([{}]), cluster), false);
      // at most 3 nameservers and 6 search domains, the search line at most 256 characters (the last domains go)
      const long = Array.from({ length: 5 }, (_, i) => `${String(i).repeat(60)}.example`);
      const capped = podDNSConfig(pod([{}], { dnsPolicy: 'None', dnsConfig: { nameservers: ['1.1.1.1', '1.1.1.2', '1.1.1.3', '1.1.1.4'], searches: long } }), cluster);
      assert.deepEqual(capped.servers, ['1.1.1.1', '1.1.1.2', '1.1.1.3']);
      assert.deepEqual(capped.searches, long.slice(0, 3), 'four domains of 68 characters make a line of 275');
      const many = podDNSConfig(pod([{}], { dnsPolicy: 'None', dnsConfig: { searches: ['a', 'b', 'c', 'd', 'e', 'f', 'g'] } }), cluster);
      assert.deepEqual(many.searches, ['a', 'b', 'c', 'd', 'e', 'f']);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  void it('collects host ports and the sandbox namespaces', () => {
    const p = pod([{ ports: [{ containerPort: 80 }, { containerPort: 53, hostPort: 5353, protocol: 'UDP' }], securityContext: { privileged: true } }], {
      hostNetwork: true,
    });
    assert.deepEqual(podPortMappings(p), [{ protocol: 'UDP', containerPort: 53, hostPort: 5353 }]);
    assert.deepEqual(podSandboxLinux(p, { cgroupsPerQOS: false }), { hostNetwork: true, privileged: true });
  });

  void it('defaults the pull policy as the API server does', () => {
    assert.equal(defaultPullPolicy('busybox'), 'Always');
    assert.equal(defaultPullPolicy('busybox:latest'), 'Always');
    assert.equal(defaultPullPolicy('localhost:5000/busybox'), 'Always');
    assert.equal(defaultPullPolicy('localhost:5000/busybox:1.35'), 'IfNotPresent');
    assert.equal(defaultPullPolicy('busybox@sha256:0123'), 'IfNotPresent');
  });
});

void describe('image puller', () => {
  function fakeImages(present: string[]) {
    const pulls: string[] = [];
    const images: ImageService = {
      imageStatus: async (image) => (present.includes(image) ? ({ id: `sha256:${image}`, repoTags: [image], repoDigests: [], size: 1 } satisfies ImageInfo) : undefined),
      pullImage: async (image) => {
        pulls.push(image);
        if (image.startsWith('bad')) throw new RuntimeError('Failed', `failed to pull and unpack image "${image}": connection refused`);
        present.push(image);
        return `sha256:${image}`;
      },
      listImages: async () => [],
      removeImage: async () => undefined,
    };
    return { images, pulls };
  }

  void it('pulls per policy, backs off after a failure and reports kubelet events', async () => {
    let now = 1_000_000;
    const { images, pulls } = fakeImages(['have:1']);
    const puller = new ImagePuller({ images, qps: 0, now: () => now });
    const events: string[] = [];
    const ev = (_t: string, reason: string, message: string): void => void events.push(`${reason}: ${message}`);
    const p = pod([{}]);
    assert.deepEqual(await puller.ensure(p, { name: 'a', image: 'have:1' }, undefined, ev), { ok: true, imageRef: 'sha256:have:1' });
    assert.deepEqual(pulls, []);
    assert.deepEqual(await puller.ensure(p, { name: 'a', image: 'have:1', imagePullPolicy: 'Always' }, undefined, ev), { ok: true, imageRef: 'sha256:have:1' });
    assert.deepEqual(pulls, ['have:1']);
    const never = await puller.ensure(p, { name: 'a', image: 'missing:1', imagePullPolicy: 'Never' }, undefined, ev);
    assert.deepEqual(never, { ok: false, reason: 'ErrImageNeverPull', message: 'Container image "missing:1" is not present with pull policy of Never' });

    const first = await puller.ensure(p, { name: 'a', image: 'bad:1' }, undefined, ev);
    assert.equal(first.ok ? '' : first.reason, 'ErrImagePull');
    assert.match(first.ok ? '' : first.message, /connection refused/);
    now += 5_000;
    const second = await puller.ensure(p, { name: 'a', image: 'bad:1' }, undefined, ev);
    assert.deepEqual(second, { ok: false, reason: 'ImagePullBackOff', message: 'Back-off pulling image "bad:1"', retryAfterMs: 5_000 });
    now += 5_001;
    const third = await puller.ensure(p, { name: 'a', image: 'bad:1' }, undefined, ev);
    assert.equal(third.ok ? '' : third.reason, 'ErrImagePull');
    now += 15_000; // the back-off doubled to 20 s
    assert.equal((await puller.ensure(p, { name: 'a', image: 'bad:1' }, undefined, ev)).ok ? '' : 'backoff', 'backoff');
    assert.deepEqual(pulls.filter((i) => i === 'bad:1').length, 2);
    assert.ok(events.includes('Pulling: Pulling image "bad:1"'), events.join('\n'));
    assert.ok(events.some((e) => e.startsWith('Failed: Failed to pull image "bad:1": ')), events.join('\n'));
    assert.ok(events.includes('Pulled: Container image "have:1" already present on machine'), events.join('\n'));
    assert.ok(events.includes('BackOff: Back-off pulling image "bad:1"'), events.join('\n'));
  });

  /** Image pulls that wait until released, recording how many run at once. */
  function gatedImages() {
    let running = 0;
    let most = 0;
    const started: string[] = [];
    const gates: (() => void)[] = [];
    const images: ImageService = {
      imageStatus: async () => undefined,
      pullImage: async (image) => {
        started.push(image);
        most = Math.max(most, ++running);
        await new Promise<void>((r) => gates.push(r));
        running--;
        return `sha256:${image}`;
      },
      listImages: async () => [],
      removeImage: async () => undefined,
    };
    const settle = (): Promise<void> => new Promise((r) => setTimeout(r, 20));
    return { images, started, most: () => most, release: () => gates.splice(0).forEach((g) => g()), settle };
  }

  void it('pulls one image at a time with --serialize-image-pulls, all at once without', async () => {
    for (const serialize of [true, false]) {
      const g = gatedImages();
      const puller = new ImagePuller({ images: g.images, serialize, qps: 0 });
      const p = pod([{}]);
      const all = ['a:1', 'b:1', 'c:1'].map((image) => puller.ensure(p, { name: image[0]!, image }, undefined, () => {}));
      await g.settle();
      assert.equal(g.started.length, serialize ? 1 : 3, `serialize=${serialize}`);
      while (g.started.length < 3) {
        g.release();
        await g.settle();
      }
      g.release();
      assert.ok((await Promise.all(all)).every((r) => r.ok));
      assert.equal(g.most(), serialize ? 1 : 3);
    }
  });

  void it('takes a --registry-qps token per pull, --registry-burst at once, and refuses a pull without a token as kubelet does', async () => {
    let now = 1_000_000;
    const g = gatedImages();
    const puller = new ImagePuller({ images: g.images, serialize: false, qps: 50, burst: 2, now: () => now });
    const p = pod([{}]);
    const events: string[] = [];
    const all = ['a:1', 'b:1', 'c:1'].map((image) => puller.ensure(p, { name: image[0]!, image }, undefined, (_t, reason, m) => events.push(`${reason}: ${m}`)));
    await g.settle();
    assert.deepEqual(g.started, ['a:1', 'b:1'], 'the burst goes at once');
    const third = await all[2]!;
    assert.deepEqual(third.ok ? undefined : [third.reason, third.message], ['ErrImagePull', 'pull QPS exceeded'], 'no token: refused at once');
    assert.ok(events.includes('Failed: Failed to pull image "c:1": pull QPS exceeded'), events.join('\n'));
    now += 20; // one token at 50 per second
    const fourth = puller.ensure(p, { name: 'd', image: 'd:1' }, undefined, () => {});
    await g.settle();
    assert.deepEqual(g.started, ['a:1', 'b:1', 'd:1'], 'a token came back with time');
    g.release();
    assert.ok((await Promise.all([all[0]!, all[1]!, fourth])).every((r) => r.ok));
  });
});
