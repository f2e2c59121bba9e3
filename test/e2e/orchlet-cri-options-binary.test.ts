/**
 * The node agent's CRI options on the real binary: bin/orchlet (--container-runtime=remote) on a
 * containerd of its own (test/helpers/containerd.ts), registered with a server this file starts,
 * each option's effect seen from outside: the container's /etc/resolv.conf through `kubectl exec`,
 * cgroup files on the host's cgroupfs, node status and pod status through kubectl, dead containers
 * and images through the CRI, pulls in the log of a loopback registry.
 *
 * One containerd, one server, one registry. Two agents in turn on the same node name and root
 * directory (the second adopts the first one's pods, as after a restart):
 *   A: --cluster-dns, --cluster-domain, --resolv-conf=<file>; --cpu-cfs-quota-period=50ms (with its
 *      gate); --node-status-max-images=2; --registry-qps=1 --registry-burst=4; the static CPU manager
 *      with --topology-manager-policy=single-numa-node --topology-manager-scope=pod;
 *      --maximum-dead-containers-per-container=3 (dead instances stay for B);
 *   B: --resolv-conf="" without cluster DNS; --cpu-cfs-quota=false; --topology-manager-policy=restricted
 *      --topology-manager-scope=container; --maximum-dead-containers-per-container=1
 *      --maximum-dead-containers=3 --minimum-container-ttl-duration=30s, whose first collection (at
 *      start, as kubelet's) acts on what A left, and whose container deletor removes older dead
 *      instances as a container dies; -v=3 (the MissingClusterDNS event lines);
 *   C: an always-met disk eviction threshold with --minimum-image-ttl-duration=20s: the eviction
 *      manager's image reclaim every 10 s (kubelet's periodic image collection is every 5 minutes).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { CriClient } from '../../src/agent/runtime/cri/client.js';
import { startCluster, type TestCluster } from '../helpers/cluster.js';
import { BUSYBOX_IMAGE, buildImageLayout, containerdTestPrerequisites, stopHarness, startContainerd, type ContainerdHarness } from '../helpers/containerd.js';
import { eventually } from '../helpers/eventually.js';
import { ORCHLET_BIN, spawnOrchlet, type OrchletProcess } from '../helpers/orchlet-process.js';
import { freePort } from '../helpers/ports.js';
import { startRegistry, type TestRegistry } from '../helpers/registry.js';

type Json = Record<string, any>;

const NODE = 'cri-options-node';
const CPU_CGROUP = '/sys/fs/cgroup/cpu';
const HOST_RESOLV = 'nameserver 192.0.2.53\nnameserver 192.0.2.54\nsearch corp.example. lab.example\noptions edns0 timeout:2\n';
/** The static CPU manager and the topology manager need two CPUs (one reserved, one exclusive). */
const TWO_CPUS = cpus().length === 2;

const missing = containerdTestPrerequisites();

void describe('orchlet CRI options on the real binary', { skip: missing.length > 0 ? `missing: ${missing.join(', ')}` : false }, () => {
  let c: TestCluster;
  let h: ContainerdHarness;
  let registry: TestRegistry;
  let cri: CriClient;
  let dir: string;
  let agent: OrchletProcess | undefined;
  let port: number;

  const commonArgs = (): string[] => [
    `--orchconfig=${c.kubeconfig}`,
    '--container-runtime=remote',
    `--container-runtime-endpoint=${h.endpoint}`,
    `--cgroup-root=${h.cgroupRoot}`,
    `--pod-infra-container-image=${h.images.pause}`,
    `--root-dir=${join(dir, 'root')}`,
    `--cert-dir=${join(dir, 'pki')}`,
    `--hostname-override=${NODE}`,
    '--node-ip=127.0.0.1',
    '--address=127.0.0.1',
    `--port=${port}`,
    '--read-only-port=0',
    '--healthz-port=0',
    ...(TWO_CPUS ? ['--cpu-manager-policy=static', '--reserved-cpus=0', '--cpu-manager-reconcile-period=1s'] : []),
  ];
  const startAgent = async (args: string[]): Promise<void> => {
    await stopAgent().catch(() => undefined); // one left running by a failed test
    agent = spawnOrchlet([...commonArgs(), ...args]);
    await eventually(
      'the node to be Ready',
      async () => {
        if (agent!.child.exitCode !== null) throw new Error(`orchlet exited (${agent!.child.exitCode}):\n${agent!.stderr()}`);
        const r = await c.kubectl(['get', 'node', NODE, '-o', 'json']);
        const node = r.code === 0 ? (JSON.parse(r.stdout) as Json) : undefined;
        return node?.status?.conditions?.some((x: Json) => x.type === 'Ready' && x.status === 'True') === true;
      },
      { timeoutMs: 60_000, intervalMs: 250 },
    );
  };
  const stopAgent = async (): Promise<void> => {
    if (!agent) return;
    const a = agent;
    agent = undefined;
    if (a.child.exitCode === null) {
      a.child.kill('SIGTERM');
      const killer = setTimeout(() => a.child.kill('SIGKILL'), 20_000);
      const code = await a.exited;
      clearTimeout(killer);
      assert.equal(code, 0, a.stderr());
    }
  };
  const stderrTail = (): string => `\norchlet stderr:\n${(agent?.stderr() ?? '').slice(-4000)}`;

  const pod = (name: string, spec: Json, metadata: Json = {}): Json => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default', ...metadata },
    spec: { nodeName: NODE, terminationGracePeriodSeconds: 1, automountServiceAccountToken: false, ...spec },
  });
  /** A pod whose container fails twice before it succeeds (three instances, 10 s then 20 s of back-off between them). */
  const retrying = (name: string): Json =>
    pod(name, {
      restartPolicy: 'OnFailure',
      volumes: [{ name: 'state', emptyDir: {} }],
      containers: [
        {
          name: 'main',
          image: BUSYBOX_IMAGE,
          command: ['sh', '-c', 'n=$(cat /state/n 2>/dev/null || echo 0); n=$((n+1)); echo $n > /state/n; [ $n -ge 3 ]'],
          volumeMounts: [{ name: 'state', mountPath: '/state' }],
        },
      ],
    });
  const sleeper = (extra: Json = {}): Json => ({ name: 'main', image: BUSYBOX_IMAGE, command: ['sleep', '3600'], ...extra });
  const create = async (...objs: Json[]): Promise<void> => {
    const r = await c.kubectl(['create', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objs }) });
    assert.equal(r.code, 0, r.stderr);
  };
  /** A pod by name, or <namespace>/<name>. */
  const getPod = async (name: string): Promise<Json | undefined> => {
    const [ns, n] = name.includes('/') ? name.split('/') : ['default', name];
    const r = await c.kubectl(['get', 'pod', '-n', ns!, n!, '-o', 'json']);
    return r.code === 0 ? (JSON.parse(r.stdout) as Json) : undefined;
  };
  const waitPod = (name: string, what: string, ok: (p: Json) => boolean, timeoutMs = 45_000): Promise<Json> =>
    eventually(
      `pod ${name} ${what}`,
      async () => {
        const p = await getPod(name);
        return p && ok(p) ? p : undefined;
      },
      { timeoutMs, intervalMs: 250 },
    ).catch((err: unknown) => {
      throw new Error(`${String(err)}${stderrTail()}`);
    });
  const running = (name: string, timeoutMs?: number) => waitPod(name, 'Running', (p) => p.status?.phase === 'Running' && p.status?.containerStatuses?.every((s: Json) => s.state?.running), timeoutMs);
  const phase = (name: string, want: string, timeoutMs?: number) => waitPod(name, want, (p) => p.status?.phase === want, timeoutMs);
  const exec = async (name: string, cmd: string[]): Promise<string> => {
    const r = await c.kubectl(['exec', name, '--', ...cmd]);
    assert.equal(r.code, 0, r.stderr);
    return r.stdout;
  };
  const deletePods = async (names: string[]): Promise<void> => {
    if (names.length === 0) return;
    const r = await c.kubectl(['delete', 'pod', ...names, '--wait=false']);
    assert.equal(r.code, 0, r.stderr);
    await eventually(
      `pods ${names.join(', ')} to go`,
      async () => {
        const left = await c.kubectl(['get', 'pods', '-o', 'name']);
        return names.every((n) => !left.stdout.includes(`pod/${n}\n`));
      },
      { timeoutMs: 45_000, intervalMs: 250 },
    );
  };
  /** The resolv.conf lines of a pod's container, parsed. */
  const resolvOf = async (name: string): Promise<{ nameservers: string[]; search: string[]; options: string[]; text: string }> => {
    const text = await exec(name, ['cat', '/etc/resolv.conf']);
    const out = { nameservers: [] as string[], search: [] as string[], options: [] as string[], text };
    for (const line of text.split('\n')) {
      const [key, ...rest] = line.trim().split(/\s+/);
      if (key === 'nameserver') out.nameservers.push(...rest);
      else if (key === 'search') out.search = rest;
      else if (key === 'options') out.options.push(...rest);
    }
    return out;
  };
  /** The cgroup directory of a container (named by its id) under the cpu hierarchy of the harness's --cgroup-root. */
  const cpuCgroupOf = (containerID: string): string => {
    const id = containerID.replace(/^[a-z]+:\/\//, '');
    const find = (d: string): string | undefined => {
      if (!existsSync(d)) return undefined;
      for (const e of readdirSync(d, { withFileTypes: true })) {
        if (!e.isDirectory()) continue;
        if (e.name === id) return join(d, e.name);
        const found = find(join(d, e.name));
        if (found) return found;
      }
      return undefined;
    };
    const found = find(join(CPU_CGROUP, h.cgroupRoot));
    assert.ok(found, `the cpu cgroup of container ${id} under ${join(CPU_CGROUP, h.cgroupRoot)}`);
    return found;
  };
  /** The CFS period and quota of a container's cgroup, or (pod: true) of its pod's cgroup, its parent. */
  const cfsOf = (containerID: string, o: { pod?: boolean } = {}): { period: number; quota: number } => {
    const d = o.pod ? dirname(cpuCgroupOf(containerID)) : cpuCgroupOf(containerID);
    return { period: Number(readFileSync(join(d, 'cpu.cfs_period_us'), 'utf8')), quota: Number(readFileSync(join(d, 'cpu.cfs_quota_us'), 'utf8')) };
  };
  const containerID = (p: Json, name: string): string => p.status.containerStatuses.find((s: Json) => s.name === name).containerID as string;
  /** The agent's exited containers in the runtime, by pod name, oldest first (createdAt in ms). */
  const deadContainers = async (): Promise<{ pod: string; id: string; createdAt: number; attempt: number }[]> =>
    (await cri.listContainers({ state: { state: 'CONTAINER_EXITED' } }))
      // createdAt: nanoseconds
      .map((x) => ({ pod: x.labels['io.kubernetes.pod.name'] ?? '', id: x.id, createdAt: x.createdAt / 1e6, attempt: x.metadata?.attempt ?? 0 }))
      .sort((a, b) => a.createdAt - b.createdAt);

  /** Guaranteed pods for the topology manager: `cpus` whole CPUs per container. */
  const guaranteed = (cpu: string) => ({ limits: { cpu, memory: '32Mi' }, requests: { cpu, memory: '32Mi' } });
  /**
   * The admission outcomes both topology scopes give on this one-NUMA-node machine with CPU 0 reserved:
   * two containers of one CPU each cannot both get the one exclusive CPU (TopologyAffinityError); an init
   * container's CPU is reused by the app container (admitted); a further pod finds no CPU left.
   */
  const topologyOutcomes = async (): Promise<void> => {
    await create(pod('topo-pair', { containers: [sleeper({ resources: guaranteed('1') }), sleeper({ name: 'second', resources: guaranteed('1') })] }));
    const pair = await phase('topo-pair', 'Failed');
    assert.equal(pair.status.reason, 'TopologyAffinityError', JSON.stringify(pair.status));
    assert.match(pair.status.message ?? '', /Resources cannot be allocated with Topology locality/);
    await create(
      pod('topo-init', {
        initContainers: [{ name: 'init', image: BUSYBOX_IMAGE, command: ['true'], resources: guaranteed('1') }],
        containers: [sleeper({ resources: guaranteed('1') })],
      }),
    );
    const init = await running('topo-init');
    assert.equal(init.status.qosClass, 'Guaranteed');
    // the app container runs on the exclusive CPU 1 (its cpuset, from the host's cgroupfs)
    const cpuset = cpuCgroupOf(containerID(init, 'main')).replace(CPU_CGROUP, '/sys/fs/cgroup/cpuset');
    assert.equal(readFileSync(join(cpuset, 'cpuset.cpus'), 'utf8').trim(), '1');
    await create(pod('topo-more', { containers: [sleeper({ resources: guaranteed('1') })] }));
    const more = await phase('topo-more', 'Failed');
    assert.equal(more.status.reason, 'TopologyAffinityError', JSON.stringify(more.status));
    await deletePods(['topo-pair', 'topo-init', 'topo-more']);
  };

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'orch-cri-options-'));
    registry = await startRegistry(await buildImageLayout(dir));
    h = await startContainerd({ registryMirrors: { [registry.host]: [`http://${registry.host}`] } });
    cri = await CriClient.connect({ runtimeEndpoint: h.endpoint });
    c = await startCluster();
    port = await freePort();
    await mkdir(join(dir, 'etc'));
    await writeFile(join(dir, 'etc/resolv.conf'), HOST_RESOLV);
    await startAgent([
      '--cluster-dns=10.96.0.10',
      '--cluster-domain=cluster.local',
      `--resolv-conf=${join(dir, 'etc/resolv.conf')}`,
      '--cpu-cfs-quota-period=50ms',
      '--feature-gates=CustomCPUCFSQuotaPeriod=true',
      '--node-status-max-images=2',
      '--registry-qps=1',
      '--registry-burst=4',
      '--serialize-image-pulls=false',
      ...(TWO_CPUS ? ['--topology-manager-policy=single-numa-node', '--topology-manager-scope=pod'] : []),
      '--maximum-dead-containers-per-container=3',
    ]);
    // Dead containers for agent B's collection, made first so that they are old by then: a container
    // that fails twice before it succeeds (three instances), and three that ran once.
    const once = (name: string): Json => pod(name, { restartPolicy: 'Never', containers: [{ name: 'main', image: BUSYBOX_IMAGE, command: ['true'] }] });
    await create(
      retrying('gc-retry'),
      once('gc-done-1'),
      once('gc-done-2'),
      once('gc-done-3'),
    );
  });

  after(async () => {
    await stopAgent().catch(() => undefined);
    cri?.close();
    await c?.stop();
    await registry?.stop();
    await stopHarness(h);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  // ---- agent A --------------------------------------------------------------------------------

  void it('--cluster-dns, --cluster-domain and --resolv-conf: the container resolv.conf of each dnsPolicy', async () => {
    await create(
      pod('dns-cluster', {
        containers: [sleeper()],
        dnsConfig: { nameservers: ['192.0.2.99'], searches: ['extra.example'], options: [{ name: 'ndots', value: '2' }, { name: 'rotate' }] },
      }),
      pod('dns-default', { dnsPolicy: 'Default', containers: [sleeper()] }),
      pod('dns-none', { dnsPolicy: 'None', dnsConfig: { nameservers: ['192.0.2.7'], searches: ['only.example'], options: [{ name: 'ndots', value: '1' }] }, containers: [sleeper()] }),
      pod('dns-hostnet', { hostNetwork: true, containers: [sleeper()] }),
      pod('dns-hostnet-cluster', { hostNetwork: true, dnsPolicy: 'ClusterFirstWithHostNet', containers: [sleeper()] }, { namespace: 'kube-system' }),
    );
    for (const name of ['dns-cluster', 'dns-default', 'dns-none', 'dns-hostnet']) await running(name);
    // ClusterFirst: the cluster's server only, <ns>.svc.<domain> svc.<domain> <domain> then the host's
    // search (normalised), ndots:5; spec.dnsConfig appended, its options replacing those of the same name.
    const cluster = await resolvOf('dns-cluster');
    assert.deepEqual(cluster.nameservers, ['10.96.0.10', '192.0.2.99'], cluster.text);
    assert.deepEqual(cluster.search, ['default.svc.cluster.local', 'svc.cluster.local', 'cluster.local', 'corp.example', 'lab.example', 'extra.example'], cluster.text);
    assert.deepEqual(cluster.options.sort(), ['ndots:2', 'rotate'], cluster.text);
    // Default (and ClusterFirst on the host network): the --resolv-conf file's servers, search and options.
    for (const name of ['dns-default', 'dns-hostnet']) {
      const d = await resolvOf(name);
      assert.deepEqual(d.nameservers, ['192.0.2.53', '192.0.2.54'], `${name}:\n${d.text}`);
      assert.deepEqual(d.search, ['corp.example', 'lab.example'], `${name}:\n${d.text}`);
      assert.deepEqual(d.options.sort(), ['edns0', 'timeout:2'], `${name}:\n${d.text}`);
    }
    // None: only spec.dnsConfig.
    const none = await resolvOf('dns-none');
    assert.deepEqual([none.nameservers, none.search, none.options], [['192.0.2.7'], ['only.example'], ['ndots:1']], none.text);
    // ClusterFirstWithHostNet on the host network: the cluster's resolver, in the pod's namespace.
    await running('kube-system/dns-hostnet-cluster');
    const r = await c.kubectl(['exec', '-n', 'kube-system', 'dns-hostnet-cluster', '--', 'cat', '/etc/resolv.conf']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^nameserver 10\.96\.0\.10$/m);
    assert.match(r.stdout, /^search kube-system\.svc\.cluster\.local svc\.cluster\.local cluster\.local corp\.example lab\.example$/m);
    assert.match(r.stdout, /^options ndots:5$/m);
    assert.equal((await c.kubectl(['delete', 'pod', '-n', 'kube-system', 'dns-hostnet-cluster'])).code, 0);
    await deletePods(['dns-cluster', 'dns-default', 'dns-none', 'dns-hostnet']);
  });

  void it('--cpu-cfs-quota-period (CustomCPUCFSQuotaPeriod): cpu.cfs_period_us and cpu.cfs_quota_us of the containers', async () => {
    await create(
      pod('cfs', {
        containers: [
          sleeper({ resources: { requests: { cpu: '100m', memory: '16Mi' }, limits: { cpu: '250m', memory: '32Mi' } } }),
          sleeper({ name: 'nolimit', resources: { requests: { cpu: '100m' } } }),
        ],
      }),
      pod('cfs-guaranteed', { containers: [sleeper({ resources: guaranteed('250m') })] }),
    );
    const p = await running('cfs');
    // 250m of a 50 ms period; a container without a cpu limit gets the period and no quota, as kubelet sets them
    assert.deepEqual(cfsOf(containerID(p, 'main')), { period: 50_000, quota: 12_500 });
    assert.deepEqual(cfsOf(containerID(p, 'nolimit')), { period: 50_000, quota: -1 });
    // the pod's cgroup: a limit only when every container declares one (the kernel's defaults otherwise)
    assert.deepEqual(cfsOf(containerID(p, 'main'), { pod: true }), { period: 100_000, quota: -1 });
    const g = await running('cfs-guaranteed');
    assert.deepEqual(cfsOf(containerID(g, 'main'), { pod: true }), { period: 50_000, quota: 12_500 });
    assert.deepEqual(cfsOf(containerID(g, 'main')), { period: 50_000, quota: 12_500 });
    await deletePods(['cfs', 'cfs-guaranteed']);
  });

  void it('--cpu-cfs-quota-period other than 100ms needs the CustomCPUCFSQuotaPeriod gate, and lies within 1µs..1s', async () => {
    const run = async (args: string[]): Promise<{ code: number | null; stderr: string }> => {
      const child = spawn(process.execPath, [ORCHLET_BIN, '--make-iptables-util-chains=false', `--root-dir=${join(dir, 'refused')}`, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const code = await new Promise<number | null>((resolve) => child.on('exit', (x) => resolve(x)));
      return { code, stderr };
    };
    const [noGate, tooLong] = await Promise.all([run(['--cpu-cfs-quota-period=50ms']), run(['--cpu-cfs-quota-period=2s', '--feature-gates=CustomCPUCFSQuotaPeriod=true'])]);
    assert.equal(noGate.code, 1);
    assert.match(noGate.stderr, /invalid configuration: cpuCFSQuotaPeriod \(--cpu-cfs-quota-period\) 50ms requires feature gate CustomCPUCFSQuotaPeriod/);
    assert.equal(tooLong.code, 1);
    assert.match(tooLong.stderr, /cpuCFSQuotaPeriod \(--cpu-cfs-quota-period\) 2s must be between 1usec and 1sec, inclusive/);
  });

  void it('--registry-qps and --registry-burst: pulls beyond the burst are refused (pull QPS exceeded) and retried after the back-off', async () => {
    // twice the burst at once: 4 go, the others are refused unless the 8 pulls spread over 4 s; after the 10 s back-off the bucket is full again
    const names = ['one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight'];
    await create(...names.map((n) => pod(`pull-${n}`, { containers: [sleeper({ image: `${registry.host}/pull-${n}:1.35` })] })));
    for (const n of names) await running(`pull-${n}`, 90_000);
    const events = await c.kubectl(['get', 'events', '--field-selector', 'reason=Failed', '-o', 'json']);
    assert.equal(events.code, 0, events.stderr);
    const refused = (JSON.parse(events.stdout) as Json).items.filter((e: Json) => /^Failed to pull image ".*\/pull-\w+:1\.35": pull QPS exceeded$/.test(e.message ?? ''));
    assert.ok(refused.length >= 1, 'at least one pull was refused');
    for (const n of names) {
      assert.ok(
        registry.requests.some((r) => r.path === `/v2/pull-${n}/manifests/1.35` && r.status === 200),
        `the registry served pull-${n}: ${registry.requests.map((r) => r.path).join(' ')}`,
      );
    }
    await deletePods(names.map((n) => `pull-${n}`));
  });

  void it('--node-status-max-images: the node lists the 2 largest images', async () => {
    const images = await cri.listImages();
    assert.ok(images.length > 2, `${images.length} images in the runtime`);
    const largest = [...images].sort((a, b) => b.size - a.size).slice(0, 2).map((i) => i.size);
    const node = await eventually(
      'node status images',
      async () => {
        const r = await c.kubectl(['get', 'node', NODE, '-o', 'json']);
        const n = JSON.parse(r.stdout) as Json;
        return (n.status?.images?.length ?? 0) > 0 ? n : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 250 },
    );
    assert.equal(node.status.images.length, 2);
    assert.deepEqual(node.status.images.map((i: Json) => i.sizeBytes), largest);
  });

  void it('--topology-manager-scope=pod with single-numa-node and the static CPU manager: admission through kubectl', async (t) => {
    if (!TWO_CPUS) return t.skip('needs 2 CPUs');
    await topologyOutcomes();
  });

  void it('--maximum-dead-containers-per-container=3 keeps the dead instances; agent A stops, leaving them to agent B', async () => {
    await phase('gc-retry', 'Succeeded', 90_000);
    for (const n of [1, 2, 3]) await phase(`gc-done-${n}`, 'Succeeded');
    const dead = await deadContainers();
    assert.deepEqual(dead.filter((d) => d.pod === 'gc-retry').map((d) => d.attempt), [0, 1, 2], 'three instances of the retried container');
    // What B's --minimum-container-ttl-duration=30s is to find old: everything so far, 30 s and more before
    // B starts (waited for here); and young: one more dead container made just before B starts.
    const newest = Math.max(...dead.map((d) => d.createdAt));
    const wait = newest + 32_000 - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    await create(pod('gc-young', { restartPolicy: 'Never', containers: [{ name: 'main', image: BUSYBOX_IMAGE, command: ['true'] }] }));
    await phase('gc-young', 'Succeeded');
    await stopAgent();
    const left = await deadContainers();
    assert.deepEqual(left.map((d) => d.pod).sort(), ['gc-done-1', 'gc-done-2', 'gc-done-3', 'gc-retry', 'gc-retry', 'gc-retry', 'gc-young']);
  });

  // ---- agent B --------------------------------------------------------------------------------

  void it('container GC at agent B start: one dead instance per container, 3 in all, none younger than --minimum-container-ttl-duration', async () => {
    const before = await deadContainers();
    await startAgent([
      '--resolv-conf=',
      '--cpu-cfs-quota=false',
      ...(TWO_CPUS ? ['--topology-manager-policy=restricted', '--topology-manager-scope=container'] : []),
      '--maximum-dead-containers-per-container=1',
      '--maximum-dead-containers=3',
      '--minimum-container-ttl-duration=30s',
      '-v=3', // the event lines ("Event occurred") of kubelet's event broadcaster
    ]);
    // Old enough: gc-retry's three instances and gc-done-1..3. Per container 1: gc-retry keeps its newest.
    // Then 4 > 3 in all: the oldest of those four goes. gc-young is too young to be touched.
    const old = before.filter((d) => d.pod !== 'gc-young');
    const retryNewest = old.filter((d) => d.pod === 'gc-retry').at(-1)!;
    const afterPerUnit = old.filter((d) => d.pod !== 'gc-retry' || d === retryNewest);
    const expected = [...afterPerUnit.slice(1), ...before.filter((d) => d.pod === 'gc-young')].map((d) => d.id).sort();
    await eventually(
      () => `dead containers to be ${expected.join(', ')}${stderrTail()}`,
      async () => {
        const now = (await deadContainers()).map((d) => d.id).sort();
        return JSON.stringify(now) === JSON.stringify(expected);
      },
      { timeoutMs: 30_000, intervalMs: 250 },
    );
    assert.equal(expected.length, 4);
    await deletePods(['gc-retry', 'gc-done-1', 'gc-done-2', 'gc-done-3', 'gc-young']);
  });

  void it('--resolv-conf="" without --cluster-dns: ClusterFirst falls back to Default, which resolves nothing; MissingClusterDNS warnings', async () => {
    // for the next test (its back-off takes a while): a container that fails twice before it succeeds
    await create(retrying('deletor-retry'));
    await create(pod('dns-off', { containers: [sleeper()] }), pod('dns-off-none', { dnsPolicy: 'None', dnsConfig: { nameservers: ['192.0.2.7'] }, containers: [sleeper()] }));
    const p = await running('dns-off');
    const off = await resolvOf('dns-off');
    assert.equal(off.text, 'search .\nnameserver 127.0.0.1\n');
    await running('dns-off-none');
    assert.equal((await resolvOf('dns-off-none')).text, 'nameserver 192.0.2.7\n');
    // kubelet 1.23's warnings (network/dns): one about the node, one about the pod; none for dnsPolicy None
    const message = 'kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.';
    const events = await eventually(
      () => `MissingClusterDNS events about the node and pod dns-off${stderrTail()}`,
      async () => {
        const r = await c.kubectl(['get', 'events', '-A', '-o', 'json']);
        const items = ((JSON.parse(r.stdout) as Json).items as Json[]).filter((e) => e.reason === 'MissingClusterDNS');
        const about = (kind: string, name: string): Json | undefined => items.find((e) => e.involvedObject?.kind === kind && e.involvedObject?.name === name);
        const [node, ofPod] = [about('Node', NODE), about('Pod', 'dns-off')];
        return node && ofPod ? { node, ofPod, items } : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 250 },
    );
    assert.equal(events.ofPod.type, 'Warning');
    assert.equal(events.ofPod.message, `pod: "dns-off_default(${p.metadata.uid})". ${message}`);
    assert.equal(events.ofPod.source?.component, 'kubelet');
    assert.equal(events.node.type, 'Warning');
    assert.equal(events.node.message, message);
    assert.ok(!events.items.some((e) => e.involvedObject?.name === 'dns-off-none'), 'dnsPolicy None asks for no cluster DNS');
    // and logged as kubelet's event broadcaster logs events at -v=3
    const line = agent!.stderr().split('\n').find((l) => l.includes('"Event occurred"') && l.includes('object="default/dns-off"') && l.includes('reason="MissingClusterDNS"'));
    assert.ok(line, `an "Event occurred" line for the pod${stderrTail()}`);
    assert.match(line, /kind="Pod" apiVersion="v1" type="Warning" reason="MissingClusterDNS" message="pod: \\"dns-off_default\(/);
    await deletePods(['dns-off', 'dns-off-none']);
  });

  void it('the container deletor: as a container dies, its older dead instances go beyond max(--maximum-dead-containers-per-container, 1)', async () => {
    // kubelet removes them on the ContainerDied event, whatever --minimum-container-ttl-duration (30 s here,
    // which keeps the periodic collection off them): between the second failure and the third start
    // (a 20 s back-off) only the second instance is left dead; the first, ~10 s old, is gone.
    const ofPod = async (): Promise<{ attempt: number; state: string }[]> =>
      (await cri.listContainers())
        .filter((x) => x.labels['io.kubernetes.pod.name'] === 'deletor-retry')
        .map((x) => ({ attempt: x.metadata?.attempt ?? 0, state: x.state }))
        .sort((a, b) => a.attempt - b.attempt);
    const seen = await eventually(
      () => `only attempt 1 dead before attempt 2 starts${stderrTail()}`,
      async () => {
        const list = await ofPod();
        if (list.some((x) => x.attempt >= 2)) throw new Error(`attempt 2 started before the first instance went: ${JSON.stringify(list)}`);
        return list.length === 1 && list[0]!.attempt === 1 && list[0]!.state === 'CONTAINER_EXITED' ? list : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 200 },
    );
    assert.deepEqual(seen, [{ attempt: 1, state: 'CONTAINER_EXITED' }]);
    await phase('deletor-retry', 'Succeeded', 60_000);
    let last: unknown;
    await eventually(
      () => `one dead instance (the last) in containerd, not ${JSON.stringify(last)}${stderrTail()}`,
      async () => JSON.stringify((last = await ofPod())) === JSON.stringify([{ attempt: 2, state: 'CONTAINER_EXITED' }]),
      { timeoutMs: 15_000, intervalMs: 250 },
    );
    await deletePods(['deletor-retry']);
  });

  void it('--cpu-cfs-quota=false: a cpu limit sets no CFS quota', async () => {
    await create(pod('cfs-off', { containers: [sleeper({ resources: { limits: { cpu: '250m', memory: '32Mi' } } })] }));
    const p = await running('cfs-off');
    assert.deepEqual(cfsOf(containerID(p, 'main')), { period: 100_000, quota: -1 });
    assert.deepEqual(cfsOf(containerID(p, 'main'), { pod: true }), { period: 100_000, quota: -1 }, 'nor on the pod');
    await deletePods(['cfs-off']);
  });

  void it('--topology-manager-scope=container with restricted and the static CPU manager: the same admission outcomes', async (t) => {
    if (!TWO_CPUS) return t.skip('needs 2 CPUs');
    await topologyOutcomes();
  });

  void it('--node-status-max-images default (50): every image of the runtime is listed', async () => {
    const images = await cri.listImages();
    await eventually(
      'node status to list every image',
      async () => {
        const r = await c.kubectl(['get', 'node', NODE, '-o', 'json']);
        return (JSON.parse(r.stdout) as Json).status?.images?.length === images.length;
      },
      { timeoutMs: 30_000, intervalMs: 250 },
    );
    await stopAgent();
  });

  // ---- agent C --------------------------------------------------------------------------------

  void it('--minimum-image-ttl-duration when disk pressure reclaims images: an unused image younger than the TTL stays, older ones go', async () => {
    // kubelet's periodic image collection runs every 5 minutes; under pressure on the image filesystem
    // (or the node's, when the images live there) the eviction manager reclaims every 10 s instead:
    // dead containers, then unused images first seen at least the TTL ago. A threshold of 100% is
    // always met; no pod runs to be evicted.
    const dedicated = statSync(h.dir).dev !== statSync(dir).dev;
    await startAgent([`--eviction-hard=${dedicated ? 'imagefs' : 'nodefs'}.available<100%`, '--minimum-image-ttl-duration=20s']);
    const a = agent!;
    const has = async (ref: string): Promise<boolean> => (await cri.listImages()).some((i) => i.repoTags.includes(ref));
    // Images are recorded by id. Those here when the agent first looked count as first seen long ago:
    // the unused ones go at the first reclaim; the pinned sandbox image stays.
    await eventually(
      () => `the spare and busybox images to go${stderrTail()}`,
      async () => !(await has(h.images.spare)) && !(await has(h.images.busybox)),
      { timeoutMs: 30_000, intervalMs: 250 },
    );
    assert.ok(await has(h.images.pause), 'the pinned sandbox image stays');
    // The spare image's id once more (the registry serves its manifest as tag 1), now first seen after the agent started.
    const young = `${registry.host}/young:1`;
    await cri.pullImage(young);
    const mark = a.stderr().length;
    // two reclaims begun after the pull, the second one over: the first sees the image for the first time, the second 10 s later
    await eventually(
      () => `two reclaims after the pull${stderrTail()}`,
      () => {
        const text = a.stderr().slice(mark);
        const first = text.indexOf('eviction manager: attempting to reclaim');
        const second = first < 0 ? -1 : text.indexOf('eviction manager: attempting to reclaim', first + 1);
        return second >= 0 && text.indexOf('eviction manager: reclaimed', second) >= 0;
      },
      { timeoutMs: 30_000, intervalMs: 100 },
    );
    assert.ok(await has(young), 'the unused image first seen less than 20 s ago is still there');
    await eventually(() => `the image to go once seen 20 s ago${stderrTail()}`, async () => !(await has(young)), { timeoutMs: 45_000, intervalMs: 250 });
    await stopAgent();
  });
});
