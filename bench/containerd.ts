/**
 * Pod start and deletion on containerd (issue 7, item 7). Before each agent run, the runtime's own
 * floor at the same moment: 50 pods straight through the CRI, all at once (per pod, the time until its
 * container started), then each container stopped with a 1 s grace period and its sandbox stopped
 * and removed, all at once. Then 50 pods bound to one node are created at once; each pod's start
 * latency runs from just before its create request is sent to the moment a watch shows it Running.
 * Then all 50 are deleted at once with a 1 s grace period, and the time until the watch has seen
 * every one of them DELETED is taken (the agent stops each container and its sandbox, and finishes
 * the deletion), with the time until containerd holds no sandbox. The agent's figures are also given
 * as overhead over containerd alone (p50 and p99 against containerd's p50 and p99; deletion against
 * containerd's last sandbox stop), since on a loaded machine containerd's own time moves a lot.
 * The server (bin/orch-apiserver) and the agent (bin/orchlet --container-runtime=remote) each run as
 * their own process, on a containerd of their own (test/helpers/containerd.ts). Two runs:
 * `--orch-api-qps=50 --orch-api-burst=100` and the defaults (5/10); BENCH_CONTAINERD_RUNS=tuned or
 * =defaults runs one. Targets: p99 under 1.5 s at 50/100, all 50 gone within 5 s. Also the agent's
 * resident set, idle after each run, and the load average around each run.
 *
 * Skipped, saying why, when containerd (or root, runc, the CNI plugins, ...) is not available.
 * BENCH_AGENT_NODE_ARGS='--cpu-prof --cpu-prof-dir=/tmp/prof' profiles the agent;
 * BENCH_CONTAINERD_TIMELINE=<path> writes per pod the wall-clock times of its create, Running,
 * delete and DELETED to <path>.<namespace>; BENCH_CONTAINERD_LOG=<path> runs containerd at log level debug
 * (each CRI request with its time) and writes its log to <path>.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CriClient } from '../src/agent/runtime/cri/client.js';
import { BUSYBOX_IMAGE, missingPrograms, PAUSE_IMAGE, startContainerd, type ContainerdHarness } from '../test/helpers/containerd.js';
import { percentile, startBenchAgent, type BenchAgent } from './agentproc.js';
import { Client, startServerProcess, type BenchServer } from './api.js';
import { rowRecorder, type BenchRow } from './rows.js';

type Json = Record<string, any>;

/** Watches the pods of a namespace: onEvent(type, name, phase-or-running, time). */
function watchPods(server: BenchServer, ns: string, onEvent: (type: string, pod: Json, at: number) => void): { stop(): void; ready: Promise<void> } {
  let ready!: () => void;
  const readyP = new Promise<void>((r) => (ready = r));
  const req = request(`${server.url}/api/v1/namespaces/${ns}/pods?watch=1`, { ca: server.caCert, headers: { authorization: `Bearer ${server.token}` } }, (res) => {
    ready();
    let buf = '';
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => {
      const at = performance.now();
      buf += chunk;
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        if (line.trim() !== '') {
          const e = JSON.parse(line) as Json;
          onEvent(String(e.type), e.object as Json, at);
        }
      }
    });
    res.on('error', () => {});
  });
  req.on('error', () => {});
  req.end();
  return { stop: () => req.destroy(), ready: readyP };
}

function startAgent(server: BenchServer, h: ContainerdHarness, dir: string, node: string, qpsArgs: string[]): Promise<BenchAgent> {
  return startBenchAgent(server, dir, node, [
    '--container-runtime=remote',
    `--container-runtime-endpoint=${h.endpoint}`,
    `--cgroup-root=${h.cgroupRoot}`,
    `--pod-infra-container-image=${PAUSE_IMAGE}`,
    ...qpsArgs,
  ]);
}

async function until<T>(what: string, f: () => Promise<T | undefined>, ms: number): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function podBody(ns: string, name: string, node: string): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: ns },
    spec: {
      nodeName: node,
      automountServiceAccountToken: false,
      terminationGracePeriodSeconds: 1,
      containers: [{ name: 'main', image: BUSYBOX_IMAGE, command: ['sleep', '3600'] }],
    },
  });
}

/** CPU time (user + system) a process has used so far, in ms. */
function cpuMs(pid: number | undefined): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) * 10;
}

const rssMiB = (pid: number | undefined): number => {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
};

interface RunResult {
  label: string;
  p50: number;
  p99: number;
  max: number;
  /** create → sandbox created (containerd's createdAt), p99. */
  sandboxP99: number;
  /** create → container started (containerd's startedAt). */
  startedP50: number;
  startedP99: number;
  goneMs: number;
  sandboxesGoneMs: number;
  rssMiB: number;
  /** CPU time used while the pods were started (create → all Running), per process, in ms (containerd without its shims). */
  cpuCreate: { agent: number; server: number; containerd: number };
}

async function runOnce(server: BenchServer, client: Client, h: ContainerdHarness, cri: CriClient, dir: string, label: string, qpsArgs: string[], n: number): Promise<RunResult> {
  const ns = `cri-${label.replace(/[^a-z0-9]/g, '')}`.slice(0, 40);
  await client.expect(201, 'POST', '/api/v1/namespaces', JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } }));
  const node = `bench-${ns}`;
  const agent = await startAgent(server, h, join(dir, ns), node, qpsArgs);
  try {
    await until('node Ready', async () => {
      const r = await client.request('GET', `/api/v1/nodes/${node}`);
      const n = r.status === 200 ? (JSON.parse(r.body) as Json) : undefined;
      return (n?.status?.conditions as Json[] | undefined)?.some((c) => c.type === 'Ready' && c.status === 'True') ? true : undefined;
    }, 60_000);
    const running = new Map<string, number>();
    const deleted = new Map<string, number>();
    let allRunning!: () => void;
    let allGone!: () => void;
    const runningP = new Promise<void>((r) => (allRunning = r));
    const goneP = new Promise<void>((r) => (allGone = r));
    const w = watchPods(server, ns, (type, pod, at) => {
      const name = String(pod.metadata?.name);
      if (type === 'DELETED') {
        deleted.set(name, at);
        if (deleted.size === n) allGone();
      } else if (pod.status?.phase === 'Running' && !running.has(name)) {
        running.set(name, at);
        if (running.size === n) allRunning();
      }
    });
    await w.ready;
    const names = Array.from({ length: n }, (_, i) => `pod-${String(i).padStart(3, '0')}`);
    const cpu0 = { agent: cpuMs(agent.child.pid), server: (server.cpuUs() ?? 0) / 1000, containerd: cpuMs(h.pid) };
    const sent = new Map<string, number>();
    const sentWall = new Map<string, number>();
    await Promise.all(
      names.map((name) => {
        sent.set(name, performance.now());
        sentWall.set(name, Date.now());
        return client.expect(201, 'POST', `/api/v1/namespaces/${ns}/pods`, podBody(ns, name, node));
      }),
    );
    const limit = (what: string): Promise<never> => new Promise((_r, reject) => setTimeout(() => reject(new Error(`${label}: ${what} after 180 s`)), 180_000).unref());
    await Promise.race([runningP, limit(`only ${running.size}/${n} pods Running`)]);
    const lat = names.map((nm) => running.get(nm)! - sent.get(nm)!).sort((a, b) => a - b);
    const cpuCreate = { agent: cpuMs(agent.child.pid) - cpu0.agent, server: (server.cpuUs() ?? 0) / 1000 - cpu0.server, containerd: cpuMs(h.pid) - cpu0.containerd };
    // Step timings from containerd: when each pod's sandbox was created and its container started.
    const sandboxAt = new Map<string, number>();
    for (const s of await cri.listPodSandbox()) sandboxAt.set(String(s.metadata?.name), Math.floor(s.createdAt / 1_000_000));
    const startedAt = new Map<string, number>();
    for (const c of await cri.listContainers()) {
      const st = (await cri.containerStatus(c.id)).status;
      if (st) startedAt.set(c.labels['io.kubernetes.pod.name'] ?? '', Math.floor(st.startedAt / 1_000_000));
    }
    const steps = (m: Map<string, number>): number[] => names.map((nm) => (m.get(nm) ?? NaN) - sentWall.get(nm)!).sort((a, b) => a - b);
    const sbLat = steps(sandboxAt);
    const startLat = steps(startedAt);

    // Deletion: all at once with a 1 s grace period.
    const t0 = performance.now();
    await Promise.all(names.map((name) => client.expect(200, 'DELETE', `/api/v1/namespaces/${ns}/pods/${name}`, JSON.stringify({ gracePeriodSeconds: 1 }))));
    await Promise.race([goneP, limit(`only ${deleted.size}/${n} pods gone`)]);
    const goneMs = Math.max(...deleted.values()) - t0;
    if (process.env.BENCH_CONTAINERD_TIMELINE) {
      // per pod, wall-clock ms: create sent, Running seen, delete sent, DELETED seen (to line up with the agent's CRI trace)
      const wall = (t: number | undefined): string => (t === undefined ? 'NaN' : (performance.timeOrigin + t).toFixed(1));
      const rows = names.map((nm) => `${nm} ${sentWall.get(nm)} ${wall(running.get(nm))} ${wall(t0)} ${wall(deleted.get(nm))}`);
      writeFileSync(`${process.env.BENCH_CONTAINERD_TIMELINE}.${ns}`, `${rows.join('\n')}\n`);
    }
    await until('no sandbox left in containerd', async () => ((await cri.listPodSandbox()).length === 0 ? true : undefined), 60_000);
    const sandboxesGoneMs = performance.now() - t0;
    w.stop();
    await new Promise((r) => setTimeout(r, 3000));
    return {
      label,
      p50: lat[Math.floor(lat.length / 2)] ?? NaN,
      p99: percentile(lat, 99),
      max: lat[lat.length - 1]!,
      sandboxP99: percentile(sbLat, 99),
      startedP50: startLat[Math.floor(startLat.length / 2)] ?? NaN,
      startedP99: percentile(startLat, 99),
      goneMs,
      sandboxesGoneMs,
      rssMiB: rssMiB(agent.child.pid),
      cpuCreate,
    };
  } finally {
    await agent.stop();
  }
}

interface AloneResult {
  /** Per pod, the time from the start until its container started (sorted). */
  started: number[];
  /** Per pod, the time from the start of the deletion until its sandbox was stopped (sorted). */
  stopped: number[];
  /** Until the last sandbox was removed. */
  goneMs: number;
}

/**
 * The runtime's own floor: n pods (sandbox, container, start) straight through the CRI, all at once,
 * then each stopped with a 1 s grace period, its sandbox stopped and removed, all at once. Returns
 * per pod the time until its container started and until its sandbox was stopped (what the agent
 * waits for before the pod's final deletion), and the time until the last sandbox was removed.
 */
async function criAlone(h: ContainerdHarness, cri: CriClient, dir: string, n: number, round: number): Promise<AloneResult> {
  const ns = { network: 'POD', pid: 'CONTAINER', ipc: 'POD' } as const;
  const t0 = performance.now();
  const started: number[] = [];
  const pods = await Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const uid = `floor-${round}-${i}`;
      const sandbox = {
        metadata: { name: uid, uid, namespace: 'floor', attempt: 0 },
        hostname: uid,
        logDirectory: join(dir, 'floor', uid),
        labels: {},
        annotations: {},
        linux: { cgroupParent: `${h.cgroupRoot}/floor/pod${uid}`, securityContext: { namespaceOptions: ns } },
      };
      const id = await cri.runPodSandbox(sandbox);
      const container = { metadata: { name: 'main', attempt: 0 }, image: { image: BUSYBOX_IMAGE }, command: ['sleep', '3600'], args: [], envs: [], mounts: [], labels: {}, annotations: {}, logPath: 'main.log', linux: { securityContext: { namespaceOptions: ns } } };
      const cid = await cri.createContainer(id, container, sandbox);
      await cri.startContainer(cid);
      started.push(performance.now() - t0);
      return { id, cid };
    }),
  );
  const t1 = performance.now();
  const stopped: number[] = [];
  await Promise.all(
    pods.map(async ({ id, cid }) => {
      await cri.stopContainer(cid, 1);
      await cri.stopPodSandbox(id);
      stopped.push(performance.now() - t1);
      await cri.removePodSandbox(id);
    }),
  );
  const goneMs = performance.now() - t1;
  return { started: started.sort((a, b) => a - b), stopped: stopped.sort((a, b) => a - b), goneMs };
}

const loadavg = (): string => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

export async function benchContainerd(scale: number): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const missing = missingPrograms();
  if (missing.length > 0) {
    console.log(`containerd: skipped: this bench runs containerd and needs ${missing.join(', ')}`);
    return rows;
  }
  const n = Math.max(10, Math.round(50 * Math.min(1, scale)));
  // BENCH_CONTAINERD_LOG=<path>: containerd runs at --log-level debug (every CRI request, with its time) and its log goes to <path>.
  const logPath = process.env.BENCH_CONTAINERD_LOG;
  const logLines: string[] = [];
  const h = await startContainerd(logPath ? { logLevel: 'debug', onLog: (l) => logLines.push(l) } : {});
  const server = await startServerProcess();
  const dir = await mkdtemp(join(tmpdir(), 'orch-bench-cri-'));
  const client = await Client.open(server);
  const cri = await CriClient.connect({ runtimeEndpoint: h.endpoint });
  const add = rowRecorder(rows);
  console.log(`containerd: ${n} pods created at once, then deleted with a 1 s grace period, on one orchlet on containerd (each its own process); ${server.where}`);
  try {
    // BENCH_CONTAINERD_RUNS=tuned (or defaults) runs only that one of the two agent runs. Each agent
    // run follows a run of containerd alone, so that the two meet about the same load on this machine.
    const which = process.env.BENCH_CONTAINERD_RUNS ?? 'tuned,defaults';
    const setups = [
      { key: 'tuned', label: 'qps 50, burst 100', args: ['--orch-api-qps=50', '--orch-api-burst=100'] },
      { key: 'defaults', label: 'defaults (qps 5, burst 10)', args: [] },
    ].filter((x) => which.includes(x.key));
    for (const [round, setup] of setups.entries()) {
      console.log(`  load average before: ${loadavg()}`);
      const alone = await criAlone(h, cri, dir, n, round);
      add(`containerd alone (CRI calls, no agent): ${n} pods, container started p50`, percentile(alone.started, 50), 'ms');
      add(`containerd alone: container started p99`, percentile(alone.started, 99), 'ms');
      add(`containerd alone: ${n} stopped (grace 1 s), sandbox stopped p99`, percentile(alone.stopped, 99), 'ms');
      add(`containerd alone: ${n} stopped and removed`, alone.goneMs, 'ms');
      const r = await runOnce(server, client, h, cri, dir, setup.label, setup.args, n);
      add(`${r.label}: create → Running p50`, r.p50, 'ms');
      add(`${r.label}: create → Running p99`, r.p99, 'ms');
      add(`${r.label}: overhead over containerd alone, p50`, r.p50 - percentile(alone.started, 50), 'ms');
      add(`${r.label}: overhead over containerd alone, p99`, r.p99 - percentile(alone.started, 99), 'ms');
      add(`${r.label}: create → Running slowest`, r.max, 'ms');
      add(`${r.label}: create → sandbox created p99 (containerd)`, r.sandboxP99, 'ms');
      add(`${r.label}: create → container started p50 (containerd)`, r.startedP50, 'ms');
      add(`${r.label}: create → container started p99 (containerd)`, r.startedP99, 'ms');
      add(`${r.label}: CPU while starting: agent`, r.cpuCreate.agent, 'ms');
      add(`${r.label}: CPU while starting: server`, r.cpuCreate.server, 'ms');
      add(`${r.label}: CPU while starting: containerd (not its shims)`, r.cpuCreate.containerd, 'ms');
      add(`${r.label}: delete (grace 1 s) → all ${n} gone`, r.goneMs, 'ms');
      add(`${r.label}: deletion overhead over containerd alone's sandbox stops`, r.goneMs - percentile(alone.stopped, 100), 'ms');
      add(`${r.label}: delete → no sandbox left in containerd`, r.sandboxesGoneMs, 'ms');
      add(`${r.label}: agent resident set, idle after the run`, r.rssMiB, 'MiB');
      console.log(`  load average after: ${loadavg()}`);
    }
    console.log('  targets: p99 under 1500 ms at qps 50 / burst 100; all gone within 5000 ms');
  } finally {
    cri.close();
    await client.close();
    await server.stop();
    await h.stop();
    if (logPath) writeFileSync(logPath, `${logLines.join('\n')}\n`);
    await rm(dir, { recursive: true, force: true });
  }
  return rows;
}
