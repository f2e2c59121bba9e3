/**
 * Node-agent options of document 3 on the real bin/orchlet (process runtime, API-server mode) against the real
 * bin/orch-apiserver, their effects checked from outside: the Node and Lease objects through kubectl, the agent's
 * health and main servers over HTTP(S), its process limits in /proc, and the requests its HTTP manifest source
 * sends to a server the test runs. Two agents share one server start; each agent carries several options.
 *
 * The server's --default-not-ready-toleration-seconds and --default-unreachable-toleration-seconds are checked
 * on the same server start (the tolerations DefaultTolerationSeconds adds to a pod), and its --orchlet-timeout
 * with a fake node agent that answers a log request only after 3 s.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { access, chmod, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { createServer, get as httpGet, type IncomingHttpHeaders, type Server } from 'node:http';
import { createServer as createHttpsServer, get as httpsGet } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { makeCA, makeServingCert } from '../../src/server/certs.js';
import { startBinCluster, type BinCluster } from '../helpers/binserver.js';
import { eventually } from '../helpers/eventually.js';
import { freePort } from '../helpers/ports.js';

const ORCHLET = fileURLToPath(new URL('../../../bin/orchlet', import.meta.url));
type Json = Record<string, any>;

interface Orchlet {
  child: ChildProcess;
  exited: Promise<number | null>;
  stderr(): string;
  stop(): Promise<void>;
}

function startOrchlet(args: string[]): Orchlet {
  const child = spawn(process.execPath, [ORCHLET, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    exited,
    stderr: () => err,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

function plainGet(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const done = (res: import('node:http').IncomingMessage) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    };
    const req = url.startsWith('https:') ? httpsGet(url, { rejectUnauthorized: false, agent: false }, done) : httpGet(url, { agent: false }, done);
    req.on('error', reject);
  });
}

void describe('orchlet options on the binary (API-server mode, process runtime)', () => {
  let c: BinCluster;
  let dir = '';
  const agents: Orchlet[] = [];
  const tag = String(process.pid);
  const NODE = `optbin-a-${tag}`;
  const NODE2 = `optbin-b-${tag}`;
  const NODE3 = `optbin-c-${tag}`;
  let healthz3 = 0;
  let healthzPort = 0;
  let mainPort = 0;
  let manifests: Server;
  const manifestRequests: IncomingHttpHeaders[] = [];

  const getJSON = async (args: string[]): Promise<Json | undefined> => {
    const r = await c.kubectl([...args, '-o', 'json']);
    return r.code === 0 ? (JSON.parse(r.stdout) as Json) : undefined;
  };
  const common = async (node: string): Promise<string[]> => [
    '--make-iptables-util-chains=false',
    `--orchconfig=${c.kubeconfig}`,
    `--root-dir=${join(dir, node)}`,
    `--cert-dir=${join(dir, `${node}-pki`)}`,
    `--hostname-override=${node}`,
    '--node-ip=127.0.0.1',
    '--address=127.0.0.1',
    '--read-only-port=0',
    '--node-status-update-frequency=1s',
  ];
  const registered = (node: string, a: Orchlet) =>
    eventually(`node ${node} to register`, async () => getJSON(['get', 'node', node]), { timeoutMs: 30_000 }).catch((err: unknown) => {
      throw new Error(`${String(err)}\norchlet stderr:\n${a.stderr()}`);
    });

  before(async () => {
    c = await startBinCluster(['--default-not-ready-toleration-seconds=111', '--default-unreachable-toleration-seconds=222', '--orchlet-timeout=1s']);
    dir = await mkdtemp(join(tmpdir(), 'orch-agent-optbin-'));
    // the containers run as nobody and reach their volumes through it (the agent opens its root dir's own path)
    await chmod(dir, 0o755);
    // the HTTP manifest source: one static pod, and the headers of each request kept
    manifests = createServer((req, res) => {
      manifestRequests.push(req.headers);
      res.setHeader('content-type', 'application/yaml');
      res.end(
        JSON.stringify({
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: 'from-url', namespace: 'default' },
          spec: { containers: [{ name: 'c', image: 'busybox', command: ['sleep', `3611.${tag}`] }] },
        }),
      );
    });
    await new Promise<void>((resolve) => manifests.listen(0, '127.0.0.1', resolve));
    healthzPort = await freePort();
    mainPort = await freePort();
    const a = startOrchlet([
      ...(await common(NODE)),
      `--port=${mainPort}`,
      '--healthz-bind-address=127.0.0.1',
      `--healthz-port=${healthzPort}`,
      '--enable-debugging-handlers=false',
      '--provider-id=fake://optbin/a',
      '--node-labels=env=optbin,node.orch.io/role=worker',
      '--register-with-taints=dedicated=infra:NoSchedule',
      '--register-schedulable=false',
      '--node-lease-duration-seconds=17',
      '--max-open-files=4000',
      `--manifest-url=http://127.0.0.1:${(manifests.address() as AddressInfo).port}/pod.yaml`,
      '--manifest-url-header=X-Optbin:one,X-Optbin:two',
      '--manifest-url-header=Authorization:Bearer m-token',
      '--http-check-frequency=1s',
      '--volume-stats-agg-period=1s',
      '--keep-terminated-pod-volumes',
      '--max-pods=42',
      '--container-log-max-size=4Ki',
      '--container-log-max-files=3',
    ]);
    agents.push(a);
    const b = startOrchlet([
      ...(await common(NODE2)),
      `--port=${await freePort()}`,
      '--healthz-port=0',
      '--experimental-allocatable-ignore-eviction',
      '--eviction-soft=memory.available<1000Ti',
      '--eviction-soft-grace-period=memory.available=0s',
      '--eviction-minimum-reclaim=memory.available=1Mi',
      '--eviction-pressure-transition-period=2s',
      '--eviction-max-pod-grace-period=5',
      '--enable-controller-attach-detach=false',
    ]);
    agents.push(b);
    healthz3 = await freePort();
    agents.push(startOrchlet([...(await common(NODE3)), `--port=${await freePort()}`, `--healthz-port=${healthz3}`, '--register-node=false']));
    await Promise.all([registered(NODE, a), registered(NODE2, b)]);
  });
  after(async () => {
    await Promise.all(agents.map((a) => a.stop()));
    manifests?.close();
    await c?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  void it('--provider-id, --node-labels, --register-with-taints and --register-schedulable=false on the registered Node', async () => {
    const node = (await getJSON(['get', 'node', NODE]))!;
    assert.equal(node.spec.providerID, 'fake://optbin/a');
    assert.equal(node.metadata.labels.env, 'optbin');
    assert.equal(node.metadata.labels['node.orch.io/role'], 'worker');
    assert.equal(node.metadata.labels['kubernetes.io/hostname'], NODE);
    assert.equal(node.spec.unschedulable, true);
    const taints = (node.spec.taints as Json[]).map((t) => `${t.key}=${t.value ?? ''}:${t.effect}`);
    assert.ok(taints.includes('dedicated=infra:NoSchedule'), taints.join(' '));
    // kubelet 1.23 adds the unschedulable taint with --register-schedulable=false
    assert.ok(taints.includes('node.kubernetes.io/unschedulable=:NoSchedule'), taints.join(' '));
    const other = (await getJSON(['get', 'node', NODE2]))!;
    assert.equal(other.spec.unschedulable, undefined, 'the other agent registers schedulable (the default)');
    // pflag's warnings, as kubelet 1.23 prints them: its own message for --register-schedulable, the config
    // file's for a KubeletConfiguration option, none for --hostname-override
    const err = agents[0]!.stderr();
    assert.match(err, /^Flag --register-schedulable has been deprecated, will be removed in a future version$/m);
    assert.match(err, /^Flag --provider-id has been deprecated, This parameter should be set via the config file specified by the Kubelet's --config flag\. See https:\/\/kubernetes\.io\/docs\/tasks\/administer-cluster\/kubelet-config-file\/ for more information\.$/m);
    assert.doesNotMatch(err, /Flag --hostname-override/);
  });

  void it('--register-node=false: the agent runs (healthy) and never creates its Node', async () => {
    const h = await eventually('the third agent healthy', () => plainGet(`http://127.0.0.1:${healthz3}/healthz`).catch(() => undefined), { timeoutMs: 20_000 });
    assert.equal(h.status, 200);
    // it works with the server: a pod bound to it runs and its status is posted; still no Node
    const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: `on-c-${tag}` }, spec: { nodeName: NODE3, containers: [{ name: 'c', image: 'busybox', command: ['sleep', `3613.${tag}`] }] } };
    assert.equal((await c.kubectl(['create', '-f', '-'], { input: JSON.stringify(pod) })).code, 0);
    await eventually('the pod on the unregistered node running', async () => ((await getJSON(['get', 'pod', `on-c-${tag}`]))?.status?.phase === 'Running') || undefined, {
      timeoutMs: 30_000,
    });
    const r = await c.kubectl(['get', 'node', NODE3]);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /NotFound|not found/);
    assert.match(agents[2]!.stderr(), /^Flag --register-node has been deprecated/m);
  });

  void it('--node-lease-duration-seconds: the Lease in kube-node-lease', async () => {
    const lease = await eventually('the node lease', async () => getJSON(['get', 'lease', '-n', 'kube-node-lease', NODE]), { timeoutMs: 20_000 });
    assert.equal(lease.spec.leaseDurationSeconds, 17);
    assert.equal(lease.spec.holderIdentity, NODE);
  });

  void it('--healthz-bind-address/--healthz-port serve /healthz; --enable-debugging-handlers=false removes the debugging endpoints', async () => {
    const h = await eventually('the health server', () => plainGet(`http://127.0.0.1:${healthzPort}/healthz`).catch(() => undefined), { timeoutMs: 10_000 });
    assert.equal(h.status, 200);
    assert.equal(h.body, 'ok');
    // the main server still serves /pods (a default handler), but not /containerLogs, /logs or /run
    const pods = await plainGet(`https://127.0.0.1:${mainPort}/pods`);
    assert.equal(pods.status, 200, pods.body);
    for (const path of ['/containerLogs/default/x/c', '/logs/', '/run/default/x/c']) {
      const r = await plainGet(`https://127.0.0.1:${mainPort}${path}`);
      assert.equal(r.status, 404, `${path}: ${r.status} ${r.body}`);
    }
  });

  void it('--max-open-files: the agent process has that RLIMIT_NOFILE', async () => {
    const pid = agents[0]!.child.pid!;
    const limits = await import('node:fs/promises').then((fs) => fs.readFile(`/proc/${pid}/limits`, 'utf8'));
    const m = /^Max open files\s+(\d+)\s+(\d+)/m.exec(limits);
    assert.ok(m, limits);
    assert.deepEqual([Number(m[1]), Number(m[2])], [4000, 4000]);
  });

  void it('--manifest-url with --manifest-url-header and --http-check-frequency: the static pod, its mirror, the headers', async () => {
    const mirror = await eventually('the mirror pod of the URL pod', async () => {
      const p = await getJSON(['get', 'pod', `from-url-${NODE}`]);
      return p?.status?.phase === 'Running' ? p : undefined;
    }, { timeoutMs: 30_000 }).catch((err: unknown) => {
      throw new Error(`${String(err)}\norchlet stderr:\n${agents[0]!.stderr()}`);
    });
    assert.ok(mirror.metadata.annotations['kubernetes.io/config.mirror']);
    assert.equal(mirror.metadata.annotations['kubernetes.io/config.source'], 'http');
    // the URL is checked again and again (every second here; 20 s by default)
    await eventually('three requests to the manifest URL', async () => manifestRequests.length >= 3 || undefined, { timeoutMs: 20_000 });
    const h = manifestRequests[0]!;
    assert.equal(h['x-optbin'], 'one, two', 'same-name headers added in the order given');
    assert.equal(h.authorization, 'Bearer m-token');
  });

  void it('--eviction-soft with its grace period and minimum reclaim: MemoryPressure on the Node', async () => {
    const cond = await eventually('MemoryPressure True on the second node', async () => {
      const n = await getJSON(['get', 'node', NODE2]);
      const mp = (n?.status?.conditions as Json[] | undefined)?.find((x) => x.type === 'MemoryPressure');
      return mp?.status === 'True' ? mp : undefined;
    }, { timeoutMs: 30_000 }).catch((err: unknown) => {
      throw new Error(`${String(err)}\norchlet stderr:\n${agents[1]!.stderr()}`);
    });
    assert.equal(cond.reason, 'KubeletHasInsufficientMemory');
    const first = (await getJSON(['get', 'node', NODE]))!;
    const mp = (first.status.conditions as Json[]).find((x) => x.type === 'MemoryPressure');
    assert.equal(mp?.status, 'False', 'the first agent keeps the default thresholds');
  });

  void it('--max-pods and --experimental-allocatable-ignore-eviction in the Node status', async () => {
    const a = (await getJSON(['get', 'node', NODE]))!.status;
    const b = (await getJSON(['get', 'node', NODE2]))!.status;
    assert.equal(a.capacity.pods, '42');
    assert.equal(a.allocatable.pods, '42');
    const ki = (q: string) => Number(/^(\d+)Ki$/.exec(q)?.[1]);
    assert.equal(ki(a.capacity.memory) - ki(a.allocatable.memory), 100 * 1024, 'the default hard threshold memory.available<100Mi');
    assert.equal(ki(b.allocatable.memory), ki(b.capacity.memory), 'hard thresholds ignored');
    assert.match(agents[1]!.stderr(), /^Flag --experimental-allocatable-ignore-eviction has been deprecated, will be removed in 1\.23\.$/m);
  });

  void it('--container-log-max-size and --container-log-max-files: the log is rotated, at most 3 files kept', async () => {
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: `chatty-${tag}` },
      spec: { nodeName: NODE, containers: [{ name: 'c', image: 'busybox', command: ['sh', '-c', 'while true; do echo "chatty line $(date +%s%N) ................................................"; sleep 0.02; done'] }] },
    };
    assert.equal((await c.kubectl(['create', '-f', '-'], { input: JSON.stringify(pod) })).code, 0);
    const uid = await eventually('the chatty pod running', async () => {
      const p = await getJSON(['get', 'pod', `chatty-${tag}`]);
      return p?.status?.phase === 'Running' ? (p.metadata.uid as string) : undefined;
    }, { timeoutMs: 30_000 });
    const logDir = join(dir, NODE, 'pods', uid, 'containers', 'c');
    let seen: string[] = [];
    // rotation runs every 10 s: after two passes a rotated file is compressed
    await eventually(() => `a compressed rotated log (files: ${seen.join(' ')})`, async () => {
      seen = await readdir(logDir);
      assert.ok(seen.length <= 3, `at most --container-log-max-files files: ${seen.join(' ')}`);
      return seen.some((f) => f.endsWith('.gz')) || undefined;
    }, { timeoutMs: 45_000 });
    assert.ok(seen.includes('0.log'), seen.join(' '));
    // the runtime reopened the log: new lines go to 0.log (kubectl logs needs the debugging handlers this agent lacks)
    await eventually('new lines in the reopened 0.log', async () => /stdout F chatty line \d+/.test(await readFile(join(logDir, '0.log'), 'utf8').catch(() => '')) || undefined);
    assert.equal((await c.kubectl(['delete', 'pod', `chatty-${tag}`, '--wait=false'])).code, 0);
  });

  void it('--enable-controller-attach-detach: the Node annotation set by default, absent with false', async () => {
    const key = 'volumes.kubernetes.io/controller-managed-attach-detach';
    assert.equal((await getJSON(['get', 'node', NODE]))!.metadata.annotations?.[key], 'true');
    assert.equal((await getJSON(['get', 'node', NODE2]))!.metadata.annotations?.[key], undefined);
  });

  void it("--volume-stats-agg-period: an emptyDir's usage in /stats/summary", async () => {
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'vol-writer' },
      spec: {
        nodeName: NODE,
        volumes: [{ name: 'data', emptyDir: {} }],
        containers: [
          // the process runtime's view of the mounts: $ORCH_ROOTFS/<mountPath> links to the volume
          { name: 'c', image: 'busybox', command: ['sh', '-c', `head -c 300000 /dev/zero > "$ORCH_ROOTFS/data/f"; exec sleep 3612.${tag}`], volumeMounts: [{ name: 'data', mountPath: '/data' }] },
        ],
      },
    };
    assert.equal((await c.kubectl(['create', '-f', '-'], { input: JSON.stringify(pod) })).code, 0);
    let last = '';
    const used = await eventually('the volume usage in /stats/summary', async () => {
      const r = await plainGet(`https://127.0.0.1:${mainPort}/stats/summary`);
      last = r.body;
      const summary = JSON.parse(r.body) as Json;
      const p = (summary.pods as Json[] | undefined)?.find((x) => x.podRef?.name === 'vol-writer');
      const v = (p?.volume as Json[] | undefined)?.find((x) => x.name === 'data');
      return typeof v?.usedBytes === 'number' && v.usedBytes >= 300_000 ? v.usedBytes : undefined;
    }, { timeoutMs: 30_000 }).catch((err: unknown) => {
      throw new Error(`${String(err)}\nlast summary: ${last.slice(0, 2000)}`);
    });
    assert.ok(used >= 300_000);
  });

  void it('--keep-terminated-pod-volumes: a Succeeded pod keeps its emptyDir; without it the volume is torn down', async () => {
    const done = (name: string, node: string) => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name },
      spec: {
        nodeName: node,
        restartPolicy: 'Never',
        volumes: [{ name: 'data', emptyDir: {} }],
        // Guaranteed, so that the second agent (under memory pressure) admits it
        containers: [{ name: 'c', image: 'busybox', command: ['true'], volumeMounts: [{ name: 'data', mountPath: '/data' }], resources: { limits: { cpu: '10m', memory: '16Mi' } } }],
      },
    });
    for (const [name, node] of [['done-keep', NODE], ['done-drop', NODE2]] as const) {
      assert.equal((await c.kubectl(['create', '-f', '-'], { input: JSON.stringify(done(name, node)) })).code, 0);
    }
    const uids: Record<string, string> = {};
    for (const name of ['done-keep', 'done-drop']) {
      const p = await eventually(`${name} Succeeded`, async () => {
        const x = await getJSON(['get', 'pod', name]);
        return x?.status?.phase === 'Succeeded' ? x : undefined;
      }, { timeoutMs: 30_000 });
      uids[name] = p.metadata.uid as string;
    }
    const vol = (node: string, uid: string) => join(dir, node, 'pods', uid, 'volumes', 'kubernetes.io~empty-dir', 'data');
    await eventually('the volume of the pod on the second agent torn down', async () => (await access(vol(NODE2, uids['done-drop']!)).then(() => false, () => true)) || undefined, { timeoutMs: 30_000 });
    await access(vol(NODE, uids['done-keep']!)); // still there
  });

  void it('server: --orchlet-timeout=1s ends a log request to an agent that answers after 3 s', async () => {
    const ca = await makeCA('slow-agent-ca');
    const pair = await makeServingCert(ca.cert, ca.key, 'slow-agent', ['127.0.0.1']);
    let asked = 0;
    const slow = createHttpsServer({ cert: pair.cert, key: pair.key }, (_req, res) => {
      asked++;
      setTimeout(() => res.end('late log line\n'), 3000);
    });
    await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve));
    try {
      const node = { apiVersion: 'v1', kind: 'Node', metadata: { name: `slow-${tag}` } };
      assert.equal((await c.kubectl(['create', '-f', '-'], { input: JSON.stringify(node) })).code, 0);
      const st = await c.request('PATCH', `/api/v1/nodes/slow-${tag}/status`, {
        contentType: 'application/merge-patch+json',
        body: { status: { addresses: [{ type: 'InternalIP', address: '127.0.0.1' }], daemonEndpoints: { kubeletEndpoint: { Port: (slow.address() as AddressInfo).port } } } },
      });
      assert.equal(st.status, 200, st.text);
      const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: `on-slow-${tag}` }, spec: { nodeName: `slow-${tag}`, containers: [{ name: 'c', image: 'busybox' }] } };
      assert.equal((await c.kubectl(['create', '-f', '-'], { input: JSON.stringify(pod) })).code, 0);
      const r = await c.request('GET', `/api/v1/namespaces/default/pods/on-slow-${tag}/log?container=c`);
      assert.equal(asked, 1, 'the server called the fake agent');
      assert.equal(r.status, 500, r.text);
      assert.match(r.json.message, /timeout/);
    } finally {
      slow.closeAllConnections();
      slow.close();
    }
  });

  void it("server: --default-not-ready-toleration-seconds and --default-unreachable-toleration-seconds on a new pod's tolerations", async () => {
    const r = await c.kubectl(['run', `tol-${tag}`, '--image=busybox', '--restart=Never', `--overrides={"spec":{"nodeName":"nowhere-${tag}"}}`]);
    assert.equal(r.code, 0, r.stderr);
    const pod = (await getJSON(['get', 'pod', `tol-${tag}`]))!;
    const secs = Object.fromEntries((pod.spec.tolerations as Json[]).map((t) => [t.key, t.tolerationSeconds]));
    assert.equal(secs['node.kubernetes.io/not-ready'], 111);
    assert.equal(secs['node.kubernetes.io/unreachable'], 222);
  });
});
