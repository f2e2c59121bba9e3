/**
 * Pod start latency (issue 6, item 11): 100 pods bound to one node are created at once; each pod's
 * latency runs from just before its create request is sent to the moment a watch shows it Running.
 * The server (bin/orch-apiserver) and the agent (bin/orchlet, built-in process runtime) each run
 * as their own process. Two runs: `--orch-api-qps=50 --orch-api-burst=100` and the defaults (5/10);
 * each reports p50, p99 and the slowest pod, and the pod status PATCHes the server received
 * (its apiserver_request_total), per pod, and the CPU time the agent (with its spawner helper
 * processes), the server and this process (the client: creates and the watch) used per pod from the
 * first create until the last pod was seen Running. Target: p99 under 500 ms at 50/100.
 *
 * Before the measured runs, 20 pods go through one untimed run on a node of their own
 * (BENCH_PODSTART_WARMUP=N pods, 0 for none), so that the server's code for creates, status patches and
 * watches is compiled, as in a cluster whose API server has been running; each measured run starts a new
 * agent, which is as cold as a node that has just joined.
 *
 * BENCH_PODSTART_RUNS=N repeats each setting N times (a fresh node and namespace each time);
 * BENCH_PODSTART_ONLY=qps50 or =defaults runs one setting; BENCH_PODSTART_DEBUG=1 prints the
 * timeline of each run: the agent's CPU on its main thread apart from its other threads and its
 * spawner helpers (GC, file system, forks), the requests per pod, and each pod's time per phase (create
 * answered, the agent's watch event, from there to Running seen; the agent's event times are read from
 * its log, which it then writes at -v=2).
 * BENCH_AGENT_LOG=<prefix> keeps each agent's stderr in <prefix>.<node> and the wall-clock create
 * sent, create answered and Running times in <prefix>.<node>.json, with the monotonic clock (µs, as
 * in `node --cpu-prof` profiles) at the first create and the last Running, to cut profiles to the run.
 *
 * The pods opt out of the service account token volume (automountServiceAccountToken: false) so
 * the figures measure the agent's start and status path, not token issuance.
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { agentCpuMs, percentile, startBenchAgent, type BenchAgent } from './agentproc.js';
import { Client, startServerProcess, type BenchServer } from './api.js';

type Json = Record<string, any>;

/** The server's requests so far (apiserver_request_total) by `VERB resource[/subresource]`. */
async function requestCounts(client: Client): Promise<Map<string, number>> {
  const text = await client.expect(200, 'GET', '/metrics');
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line.startsWith('apiserver_request_total{')) continue;
    const label = (name: string): string => new RegExp(`${name}="([^"]*)"`).exec(line)?.[1] ?? '';
    const sub = label('subresource');
    const key = `${label('verb')} ${label('resource')}${sub ? `/${sub}` : ''}`;
    out.set(key, (out.get(key) ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1)));
  }
  return out;
}

/** The count of pod status PATCHes in a requestCounts answer. */
const statusPatchesOf = (counts: Map<string, number>): number => counts.get('PATCH pods/status') ?? 0;

/** What the server was asked between two requestCounts answers, per pod, largest first: 'POST pods 1.00, ...'. */
function requestsPerPod(before: Map<string, number>, after: Map<string, number>, pods: number): string {
  return [...after]
    .map(([k, v]) => [k, (v - (before.get(k) ?? 0)) / pods] as const)
    .filter(([, v]) => v > 0)
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${k} ${v.toFixed(2)}`)
    .join(', ');
}

/** Watches the pods of a namespace over HTTPS; calls onRunning(name, time) when a pod is first seen Running. */
function watchRunning(server: BenchServer, ns: string, onRunning: (name: string, at: number) => void): { stop(): void; ready: Promise<void> } {
  let ready!: () => void;
  const readyP = new Promise<void>((r) => (ready = r));
  const seen = new Set<string>();
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
        if (line.trim() === '') continue;
        const e = JSON.parse(line) as Json;
        const name = String(e.object?.metadata?.name);
        if (e.object?.status?.phase === 'Running' && !seen.has(name)) {
          seen.add(name);
          onRunning(name, at);
        }
      }
    });
    res.on('error', () => {});
  });
  req.on('error', () => {});
  req.end();
  return { stop: () => req.destroy(), ready: readyP };
}

function startAgent(server: BenchServer, dir: string, node: string, qpsArgs: string[], logFile: string | undefined): Promise<BenchAgent> {
  return startBenchAgent(server, dir, node, ['--max-pods=250', '--node-status-update-frequency=2s', ...qpsArgs], logFile);
}

async function waitNodeReady(client: Client, node: string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    const r = await client.request('GET', `/api/v1/nodes/${node}`);
    if (r.status === 200) {
      const n = JSON.parse(r.body) as Json;
      if ((n.status?.conditions as Json[] | undefined)?.some((c) => c.type === 'Ready' && c.status === 'True')) return;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('the node did not turn Ready');
}

async function waitNamespaceSA(client: Client, ns: string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    if ((await client.request('GET', `/api/v1/namespaces/${ns}/serviceaccounts/default`)).status === 200) return;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * When the agent received each pod of `ns`, from its log (the agent runs with -v=2 for it): kubelet's line
 * '"SyncLoop ADD" source="api" pods=[<ns>/<name> ...]' with klog's header (local time to the microsecond), as
 * performance.now() times of this process.
 */
function agentAdds(log: string, ns: string): Map<string, number> {
  const out = new Map<string, number>();
  const year = new Date().getFullYear();
  const re = /^I(\d\d)(\d\d) (\d\d):(\d\d):(\d\d)\.(\d{6}) +\d+ [^\]]*\] "SyncLoop ADD" source="api" pods=\[([^\]]*)\]/gm;
  for (const m of log.matchAll(re)) {
    const wall = new Date(year, Number(m[1]) - 1, Number(m[2]), Number(m[3]), Number(m[4]), Number(m[5])).getTime() + Number(m[6]) / 1000;
    for (const ref of m[7]!.split(' ')) {
      const [podNs, name] = ref.split('/');
      if (podNs === ns && name !== undefined && !out.has(name)) out.set(name, wall - performance.timeOrigin);
    }
  }
  return out;
}

/**
 * Where each pod's time went, p50/p99 over the pods: its create answered; the agent's watch event for it
 * (from the create sent); from that event until this process's watch showed it Running (the agent's
 * admission, sandbox, process spawn and status post, the server's status write and its watch event).
 */
function phases(names: string[], sent: Map<string, number>, created: Map<string, number>, added: Map<string, number>, running: Map<string, number>): string {
  const span = (what: string, from: Map<string, number>, to: Map<string, number>): string => {
    const d = names.filter((nm) => from.has(nm) && to.has(nm)).map((nm) => to.get(nm)! - from.get(nm)!).sort((a, b) => a - b);
    return d.length === 0 ? `${what} -` : `${what} ${percentile(d, 50).toFixed(0)}/${percentile(d, 99).toFixed(0)} ms`;
  };
  return `per phase, p50/p99: ${span('create answered', sent, created)}; ${span('create to the agent\'s watch event', sent, added)}; ${span('agent\'s event to Running seen', added, running)} (${added.size} of ${names.length} pods found in the agent's log)`;
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
      containers: [{ name: 'main', image: 'busybox', command: ['sleep', '3600'] }],
    },
  });
}

interface RunResult {
  label: string;
  p50: number;
  p99: number;
  max: number;
  posts: number;
  pods: number;
  /** CPU ms per pod from the first create until the last pod was seen Running. */
  cpuPerPod: { agent: number; server: number; client: number };
  /** The machine's 1-minute load average when the pods were created (figures from a loaded machine compare only with runs at the same load). */
  load: number;
}

async function runOnce(server: BenchServer, client: Client, dir: string, label: string, qpsArgs: string[], n: number, run = 0): Promise<RunResult> {
  const ns = `podstart-${label.replace(/[^a-z0-9]/g, '')}${run > 0 ? `-${run}` : ''}`;
  await client.expect(201, 'POST', '/api/v1/namespaces', JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } }));
  await waitNamespaceSA(client, ns);
  // A node of its own per run: an agent sees only its own pods.
  const node = `bench-${ns}`;
  const debug = (process.env.BENCH_PODSTART_DEBUG ?? '') !== '';
  // the agent's log: kept with BENCH_AGENT_LOG; with BENCH_PODSTART_DEBUG read for the per-phase breakdown
  const logFile = process.env.BENCH_AGENT_LOG ? `${process.env.BENCH_AGENT_LOG}.${node}` : debug ? join(dir, `${ns}.agent.log`) : undefined;
  // with BENCH_PODSTART_DEBUG at -v=2, for kubelet's 'SyncLoop ADD' lines (agentAdds)
  const agent = await startAgent(server, join(dir, ns), node, debug ? [...qpsArgs, '--v=2'] : qpsArgs, logFile);
  try {
    await waitNodeReady(client, node);
    const running = new Map<string, number>();
    const runningWall = new Map<string, number>();
    let allRunning!: () => void;
    const done = new Promise<void>((r) => (allRunning = r));
    const w = watchRunning(server, ns, (name, at) => {
      running.set(name, at);
      runningWall.set(name, performance.timeOrigin + at);
      if (running.size === n) allRunning();
    });
    await w.ready;
    const countsBefore = await requestCounts(client);
    // CPU ms of a process (all its threads), or with `thread` of one of its threads (the main thread: its pid)
    const cpu = (pid: number | undefined, thread?: number): number => {
      const stat = readFileSync(thread === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${thread}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return (Number(f[11]) + Number(f[12])) * 10;
    };
    // the agent's process and its spawner helpers (agentproc.ts)
    const agentCpu0 = agentCpuMs(agent.child.pid!);
    const agentMain0 = cpu(agent.child.pid, agent.child.pid);
    const serverCpu0 = (server.cpuUs() ?? 0) / 1000;
    const clientCpu0 = process.cpuUsage();
    const load = loadavg()[0] ?? 0;
    const mono0 = process.hrtime.bigint();
    const sent = new Map<string, number>();
    const sentWall = new Map<string, number>();
    const created = new Map<string, number>();
    const names = Array.from({ length: n }, (_, i) => `pod-${String(i).padStart(3, '0')}`);
    await Promise.all(
      names.map((name) => {
        sent.set(name, performance.now());
        if (process.env.BENCH_AGENT_LOG) sentWall.set(name, Date.now());
        return client.expect(201, 'POST', `/api/v1/namespaces/${ns}/pods`, podBody(ns, name, node)).then(() => void created.set(name, performance.now()));
      }),
    );
    const createdAt = performance.now();
    const timeout = new Promise<void>((_r, reject) => setTimeout(() => reject(new Error(`${label}: only ${running.size}/${n} pods Running after 180 s`)), 180_000).unref());
    await Promise.race([done, timeout]);
    const mono1 = process.hrtime.bigint();
    const clientCpu = process.cpuUsage(clientCpu0);
    const agentMain = cpu(agent.child.pid, agent.child.pid) - agentMain0;
    const cpuPerPod = {
      agent: (agentCpuMs(agent.child.pid!) - agentCpu0) / n,
      server: ((server.cpuUs() ?? 0) / 1000 - serverCpu0) / n,
      client: (clientCpu.user + clientCpu.system) / 1000 / n,
    };
    // let trailing status posts land before counting
    await new Promise((r) => setTimeout(r, 2000));
    const countsAfter = await requestCounts(client);
    const posts = statusPatchesOf(countsAfter) - statusPatchesOf(countsBefore);
    if (process.env.BENCH_AGENT_LOG) await writeFile(`${process.env.BENCH_AGENT_LOG}.${node}.json`, JSON.stringify({ sent: [...sentWall], created: [...created].map(([k, v]) => [k, performance.timeOrigin + v]), running: [...runningWall], monotonicUs: [Number(mono0 / 1000n), Number(mono1 / 1000n)] }));
    w.stop();
    const lat = names.map((nm) => running.get(nm)! - sent.get(nm)!).sort((a, b) => a - b);
    const t0 = Math.min(...sent.values());
    if (debug) {
      console.log(`  (${label}: creates answered after ${(createdAt - t0).toFixed(0)} ms, first Running ${(Math.min(...running.values()) - t0).toFixed(0)} ms, last ${(Math.max(...running.values()) - t0).toFixed(0)} ms; CPU agent ${(cpuPerPod.agent * n).toFixed(0)} ms (main thread ${agentMain} ms; the rest: spawner helpers, GC, file system), server ${(cpuPerPod.server * n).toFixed(0)} ms; requests per pod (all clients, until 2 s after the last Running): ${requestsPerPod(countsBefore, countsAfter, n)})`);
      if (logFile !== undefined) console.log(`  (${label}: ${phases(names, sent, created, agentAdds(readFileSync(logFile, 'utf8'), ns), running)})`);
    }
    return { label, p50: percentile(lat, 50), p99: percentile(lat, 99), max: lat[lat.length - 1]!, posts, pods: n, cpuPerPod, load };
  } finally {
    await agent.stop();
  }
}

export async function benchPodStart(scale: number): Promise<RunResult[]> {
  const n = Math.max(10, Math.round(100 * Math.min(1, scale)));
  const server = await startServerProcess();
  const dir = await mkdtemp(join(tmpdir(), 'orch-podstart-'));
  const client = await Client.open(server);
  const results: RunResult[] = [];
  console.log(`podstart: ${n} pods created at once on one orchlet (built-in process runtime, its own process); ${server.where}`);
  try {
    const warmup = Math.max(0, Number(process.env.BENCH_PODSTART_WARMUP ?? 20) || 0);
    if (warmup > 0) {
      await runOnce(server, client, dir, 'warmup', ['--orch-api-qps=50', '--orch-api-burst=100'], warmup);
      console.log(`  (warm-up: ${warmup} pods on a node of their own, not counted)`);
    }
    const runs = Math.max(1, Number(process.env.BENCH_PODSTART_RUNS ?? 1) || 1);
    const only = process.env.BENCH_PODSTART_ONLY;
    const settings: [string, string, string[]][] = [
      ['qps50', 'qps 50, burst 100', ['--orch-api-qps=50', '--orch-api-burst=100']],
      ['defaults', 'defaults (qps 5, burst 10)', []],
    ];
    for (const [key, label, args] of settings) {
      if (only !== undefined && only !== '' && only !== key) continue;
      for (let i = 0; i < runs; i++) results.push(await runOnce(server, client, dir, label, args, n, i));
    }
    for (const r of results) {
      const c = r.cpuPerPod;
      console.log(
        `  ${r.label.padEnd(28)} p50 ${r.p50.toFixed(0).padStart(6)} ms   p99 ${r.p99.toFixed(0).padStart(6)} ms   slowest ${r.max.toFixed(0).padStart(6)} ms   status posts ${r.posts} (${(r.posts / r.pods).toFixed(2)} per pod)   CPU per pod: agent ${c.agent.toFixed(1)} ms, server ${c.server.toFixed(1)} ms, client ${c.client.toFixed(1)} ms   load ${r.load.toFixed(1)}`,
      );
    }
    console.log('  target: p99 under 500 ms at qps 50 / burst 100');
  } finally {
    await client.close();
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  }
  return results;
}
