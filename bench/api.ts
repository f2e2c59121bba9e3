/**
 * API benchmark: `bin/orch-apiserver` as its own process on the embedded store in a file, driven from this
 * process over HTTPS with HTTP/2 (node:http2, the server's CA, a bearer token) at concurrency 16: PVC
 * creates/s, gets/s, lists of 1,000 and 10,000 PVCs, watch latency from create to ADDED event, and the
 * server's RSS with 10,000 PVCs stored. Client and server share the machine's two cores, as the issue's
 * targets assume.
 *
 * Run with `node dist/bench/index.js api` (BENCH_SCALE=0.1 for a quick run; BENCH_API_PHASES=create,get runs
 * only those phases; BENCH_SERVER_NODE_ARGS passes node options to the server). BENCH_API_INPROCESS=1 runs the server inside this process instead (test/helpers/cluster.ts),
 * for `node --cpu-prof` of client and server together; it also prints phase marks for windowing the profile.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { openSync, readFileSync } from 'node:fs';
import { launcherNodeArgs } from '../test/helpers/binserver.js';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { connect, type ClientHttp2Session, type OutgoingHttpHeaders } from 'node:http2';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startCluster } from '../test/helpers/cluster.js';
import { freePort } from '../test/helpers/ports.js';
import { rowRecorder, type BenchRow } from './rows.js';
import { LeanH2Client } from './h2lean.js';

/** Where the bench reaches the server, and how it reads the server's memory. */
export interface BenchServer {
  url: string;
  caCert: string;
  token: string;
  /** The server process's resident set (MiB). */
  rssMiB(): Promise<number>;
  /** Of the resident set, the part mapped from files (the node binary, shared libraries) in MiB; null in-process. */
  rssFileMiB?(): number;
  /** CPU time (user + system, all threads) the server has used so far, in microseconds; null in-process. */
  cpuUs(): number | null;
  /** A line saying where the server runs. */
  where: string;
  /** Writes a heap snapshot of the server into its working directory (needs --heapsnapshot-signal=SIGUSR2). */
  heapSnapshot?(): Promise<void>;
  stop(): Promise<void>;
}

const REPO = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

export { launcherNodeArgs };

/** Spawns `bin/orch-apiserver` on `dir` and resolves once it serves. */
async function spawnServer(dir: string, extraArgs: readonly string[] = []): Promise<{ child: ChildProcess; url: string }> {
  const launcher = join(REPO, 'bin', 'orch-apiserver');
  const child: ChildProcess = spawn(
    process.execPath,
    [
      // The node options of the launcher's `#!/usr/bin/env -S node ...` line, as running it directly applies them.
      ...launcherNodeArgs(launcher),
      // e.g. BENCH_SERVER_NODE_ARGS='--cpu-prof --cpu-prof-dir=/tmp/prof' to profile the server alone (later options win).
      ...(process.env.BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter(Boolean),
      launcher,
      `--secure-port=${await freePort()}`,
      '--bind-address=127.0.0.1',
      `--data-dir=${join(dir, 'data')}`,
      `--cert-dir=${join(dir, 'certs')}`,
      `--token-auth-file=${join(dir, 'tokens.csv')}`,
      ...extraArgs,
    ],
    // BENCH_SERVER_STDOUT=<file> keeps the server's standard output (e.g. with BENCH_SERVER_NODE_ARGS=--trace-gc).
    { stdio: ['ignore', process.env.BENCH_SERVER_STDOUT ? openSync(process.env.BENCH_SERVER_STDOUT, 'a') : 'ignore', 'pipe'] },
  );
  const url = await new Promise<string>((resolve, reject) => {
    let err = '';
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (chunk: string) => {
      err += chunk;
      const m = /serving on (https:\/\/\S+)/.exec(err);
      if (m) resolve(m[1]!);
    });
    child.once('exit', (code) => reject(new Error(`orch-apiserver exited with ${code}: ${err}`)));
  });
  return { child, url };
}

async function stopServer(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  await exited;
}

/**
 * Starts `bin/orch-apiserver` on a free port with the embedded store in a temporary file. It is started
 * twice: the first start generates the self-signed certificate, the second (measured) reuses it, as a
 * server does after its first start.
 */
export async function startServerProcess(extraArgs: (dir: string) => string[] = () => []): Promise<BenchServer> {
  const dir = await mkdtemp(join(tmpdir(), 'orch-bench-'));
  const token = 'bench-admin-token';
  await writeFile(join(dir, 'tokens.csv'), `${token},admin,admin,"system:masters"\n`);
  await stopServer((await spawnServer(dir, extraArgs(dir))).child);
  const { child, url } = await spawnServer(dir, extraArgs(dir));
  const caCert = await readFile(join(dir, 'certs', 'apiserver.crt'), 'utf8');
  return {
    url,
    caCert,
    token,
    where: `server: bin/orch-apiserver, pid ${child.pid}, its own process, node options ${JSON.stringify(launcherNodeArgs(join(REPO, 'bin', 'orch-apiserver')).join(' '))}`,
    cpuUs: () => {
      // /proc/<pid>/stat: utime and stime (fields 14 and 15) in clock ticks of 1/100 s.
      const stat = readFileSync(`/proc/${child.pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return (Number(fields[11]) + Number(fields[12])) * 10_000;
    },
    rssMiB: async () => {
      const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
      const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN);
      return kb / 1024;
    },
    rssFileMiB: () => {
      const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
      return Number(/RssFile:\s+(\d+)/.exec(status)?.[1] ?? NaN) / 1024;
    },
    async heapSnapshot() {
      child.kill('SIGUSR2');
      await new Promise((resolve) => setTimeout(resolve, 5000));
    },
    async stop() {
      await stopServer(child);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** The server inside this process (for profiling client and server together). */
async function startServerInProcess(): Promise<BenchServer> {
  const c = await startCluster([], { fileStore: true });
  return {
    url: c.url,
    caCert: c.cp.server.caCert,
    token: c.token,
    where: 'server: in this process, sharing its JS thread with the client',
    cpuUs: () => null,
    rssMiB: () => {
      collectGarbage();
      const m = process.memoryUsage();
      console.log(`  (in-process memory: heap used ${mib(m.heapUsed).toFixed(1)} MiB, heap committed ${mib(m.heapTotal).toFixed(1)} MiB, external ${mib(m.external).toFixed(1)} MiB)`);
      return Promise.resolve(mib(m.rss));
    },
    stop: () => c.stop(),
  };
}

export type ApiRow = BenchRow;

export const CONCURRENCY = 16;
const NS = 'bench';
const NS_1K = 'bench-1k';
const NS_2S = 'bench-2s';
const NS_WATCH = 'bench-watch';
export const PVC_PATH = (ns: string) => `/api/v1/namespaces/${ns}/persistentvolumeclaims`;

/** A realistic small claim, as `kubectl apply` would send it (about 330 bytes). */
export function pvcBody(name: string): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, labels: { app: 'bench', tier: 'db' }, annotations: { 'bench.orch.io/owner': 'api-bench' } },
    spec: {
      accessModes: ['ReadWriteOnce'],
      resources: { requests: { storage: '1Gi' } },
      storageClassName: 'standard',
      volumeMode: 'Filesystem',
    },
  });
}

export const pvcName = (i: number) => `pvc-${String(i).padStart(6, '0')}`;

interface Response {
  status: number;
  body: string;
}

/** What the API bench's phases need from a client: checked requests and one watch stream. */
export interface ApiClient {
  expectBytes(status: number, method: 'GET' | 'POST', path: string, body?: string): Promise<number>;
  expect(status: number, method: 'GET' | 'POST', path: string, body?: string): Promise<string>;
  /** Opens a watch: `onData` gets each chunk of the body; `status` settles with the response's status. */
  watch(path: string, onData: (chunk: Buffer) => void): { status: Promise<number>; cancel(): Promise<void> };
  close(): Promise<void>;
}

export class Client implements ApiClient {
  private constructor(
    readonly session: ClientHttp2Session,
    private readonly token: string,
  ) {}

  /** One HTTP/2 session with Go's (client-go's) flow-control windows: 4 MiB per stream, 1 GiB per connection. */
  static async open(c: BenchServer): Promise<Client> {
    const session = connect(c.url, { ca: c.caCert, settings: { initialWindowSize: 4 << 20 } });
    await new Promise<void>((resolve, reject) => {
      session.once('connect', () => resolve());
      session.once('error', reject);
    });
    session.on('error', () => {});
    session.setLocalWindowSize(1 << 30);
    return new Client(session, c.token);
  }

  headers(method: string, path: string): OutgoingHttpHeaders {
    return { ':method': method, ':path': path, authorization: `Bearer ${this.token}`, accept: 'application/json' };
  }

  request(method: string, path: string, body?: string): Promise<Response> {
    return new Promise((resolve, reject) => {
      const headers = this.headers(method, path);
      if (body !== undefined) {
        headers['content-type'] = 'application/json';
        headers['content-length'] = Buffer.byteLength(body);
      }
      const stream = this.session.request(headers, { endStream: body === undefined });
      let status = 0;
      const chunks: Buffer[] = [];
      stream.on('response', (h) => {
        status = Number(h[':status']);
      });
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => resolve({ status, body: Buffer.concat(chunks).toString() }));
      stream.on('error', reject);
      if (body !== undefined) stream.end(body);
    });
  }

  /**
   * A request whose answer is only checked, not decoded: the status is compared and the body's bytes counted
   * (the error body is read only on a wrong status). The create and get phases use it, so that the client,
   * sharing the cores with the server, spends as little as a lean client would.
   */
  expectBytes(status: number, method: string, path: string, body?: string): Promise<number> {
    return new Promise((resolve, reject) => {
      const headers = this.headers(method, path);
      if (body !== undefined) {
        headers['content-type'] = 'application/json';
        headers['content-length'] = Buffer.byteLength(body);
      }
      const stream = this.session.request(headers, { endStream: body === undefined });
      let got = 0;
      let bytes = 0;
      let errorBody = '';
      stream.on('response', (h) => {
        got = Number(h[':status']);
      });
      stream.on('data', (c: Buffer) => {
        bytes += c.length;
        if (got !== status && errorBody.length < 500) errorBody += c.toString();
      });
      stream.on('end', () => {
        if (got !== status) reject(new Error(`${method} ${path}: ${got}, expected ${status}: ${errorBody.slice(0, 500)}`));
        else resolve(bytes);
      });
      stream.on('error', reject);
      if (body !== undefined) stream.end(body);
    });
  }

  async expect(status: number, method: string, path: string, body?: string): Promise<string> {
    const r = await this.request(method, path, body);
    if (r.status !== status) throw new Error(`${method} ${path}: ${r.status}, expected ${status}: ${r.body.slice(0, 500)}`);
    return r.body;
  }

  watch(path: string, onData: (chunk: Buffer) => void): { status: Promise<number>; cancel(): Promise<void> } {
    const stream = this.session.request(this.headers('GET', path));
    stream.on('data', onData);
    const closed = new Promise<void>((resolve) => {
      stream.on('close', resolve);
      stream.on('error', () => resolve());
    });
    const status = new Promise<number>((resolve, reject) => {
      stream.once('response', (h) => resolve(Number(h[':status'])));
      stream.once('error', reject);
    });
    return {
      status,
      cancel: async () => {
        stream.close();
        await closed;
      },
    };
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.session.close(() => resolve()));
  }
}

/**
 * The API bench's client: one HTTP/2 connection of bench/h2lean.ts (its own lean framing, as client-go has its
 * own), checking each answer's status. Every request and response is whole and real; what it saves against
 * node:http2's client is that client's per-request CPU, which shares the two cores with the server.
 */
export class LeanClient implements ApiClient {
  private constructor(private readonly h2: LeanH2Client) {}

  static async open(c: BenchServer): Promise<LeanClient> {
    return new LeanClient(await LeanH2Client.open(c));
  }

  get raw(): LeanH2Client {
    return this.h2;
  }

  /** Checks the status and counts the body's bytes without decoding it (the body is kept only for an error). */
  async expectBytes(status: number, method: 'GET' | 'POST', path: string, body?: string): Promise<number> {
    const r = await this.h2.request(method, path, body);
    if (r.status !== status) {
      const again = await this.h2.request(method, path, body, undefined, { keepBody: true });
      throw new Error(`${method} ${path}: ${r.status}, expected ${status} (then ${again.status}: ${again.body?.toString().slice(0, 500) ?? ''})`);
    }
    return r.bytes;
  }

  async expect(status: number, method: 'GET' | 'POST', path: string, body?: string): Promise<string> {
    const r = await this.h2.request(method, path, body, undefined, { keepBody: true });
    const text = r.body?.toString() ?? '';
    if (r.status !== status) throw new Error(`${method} ${path}: ${r.status}, expected ${status}: ${text.slice(0, 500)}`);
    return text;
  }

  watch(path: string, onData: (chunk: Buffer) => void): { status: Promise<number>; cancel(): Promise<void> } {
    let cancel: (() => void) | undefined;
    let gotStatus!: (n: number) => void;
    const status = new Promise<number>((resolve) => (gotStatus = resolve));
    const done = this.h2.request('GET', path, undefined, undefined, { onOpen: (c) => (cancel = c), onStatus: gotStatus, onData });
    void done.catch(() => gotStatus(0));
    return {
      status,
      cancel: async () => {
        cancel?.();
        await done.catch(() => undefined);
      },
    };
  }

  close(): Promise<void> {
    return this.h2.close();
  }
}

/**
 * Runs `total` operations with `concurrency` workers; worker w uses clients[w % clients.length]. Returns ops/s and
 * the process CPU time (all threads: main, GC helpers, libuv) per operation and in cores, which other load on the
 * machine affects far less than ops/s.
 */
export async function runConcurrent<C>(
  total: number,
  concurrency: number,
  clients: C[],
  op: (client: C, i: number) => Promise<unknown>,
  server?: BenchServer,
): Promise<{ opsPerSec: number; cpuUsPerOp: number; cores: number; serverCpuUsPerOp: number | null; serverCores: number | null }> {
  let next = 0;
  const server0 = server?.cpuUs() ?? null;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async (_, w) => {
      const client = clients[w % clients.length]!;
      for (;;) {
        const i = next++;
        if (i >= total) return;
        await op(client, i);
      }
    }),
  );
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const cpuUs = cpu.user + cpu.system;
  const server1 = server?.cpuUs() ?? null;
  const serverUs = server0 !== null && server1 !== null ? server1 - server0 : null;
  return {
    opsPerSec: (total / ms) * 1000,
    cpuUsPerOp: cpuUs / total,
    cores: cpuUs / 1000 / ms,
    serverCpuUsPerOp: serverUs === null ? null : serverUs / total,
    serverCores: serverUs === null ? null : serverUs / 1000 / ms,
  };
}

/**
 * Creates n / 10 claims in `ns` untimed (JIT warm-up), then `n` timed ones at concurrency 16: creates/s and the
 * server's CPU per create (null in-process).
 */
export async function timedCreates(
  client: Client,
  server: BenchServer,
  ns: string,
  n: number,
): Promise<{ opsPerSec: number; serverCpuUsPerOp: number | null }> {
  const warm = Math.round(n / 10);
  const create = (offset: number) => (c: Client, i: number) => c.expect(201, 'POST', PVC_PATH(ns), pvcBody(pvcName(offset + i)));
  await runConcurrent(warm, CONCURRENCY, [client], create(0));
  const r = await runConcurrent(n, CONCURRENCY, [client], create(warm), server);
  return { opsPerSec: r.opsPerSec, serverCpuUsPerOp: r.serverCpuUsPerOp };
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

function median(xs: number[]): number {
  return [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
}

// The client checks each create's status and counts its bytes; it does not decode the body.
const create = (ns: string, offset = 0) => (c: ApiClient, i: number) => c.expectBytes(201, 'POST', PVC_PATH(ns), pvcBody(pvcName(offset + i)));
const get = (ns: string, stored: number) => (c: ApiClient, i: number) => c.expectBytes(200, 'GET', `${PVC_PATH(ns)}/${pvcName((i * 7919) % stored)}`);

/** Lists `ns` five times; the median time to the last byte (the body is parsed and counted outside the timing). */
async function listMedian(c: ApiClient, ns: string, expected: number): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < 5; i++) {
    const t0 = performance.now();
    const body = await c.expect(200, 'GET', PVC_PATH(ns));
    times.push(performance.now() - t0);
    const n = (JSON.parse(body) as { items: unknown[] }).items.length;
    if (n !== expected) throw new Error(`list of ${ns} returned ${n} items, expected ${expected}`);
  }
  return median(times);
}

/**
 * Opens a watch on `ns` from the list's resourceVersion, then creates `n` claims one after the other; each latency
 * runs from just before the create is sent to the arrival of the chunk holding its ADDED event. The next create
 * waits for both the response and the event.
 */
async function watchLatency(c: ApiClient, ns: string, n: number): Promise<{ p50: number; p99: number; max: number; createP50: number }> {
  const rv = (JSON.parse(await c.expect(200, 'GET', PVC_PATH(ns))) as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
  const waiting = new Map<string, (t: number) => void>();
  let buf = '';
  const decoder = new TextDecoder();
  const watch = c.watch(`${PVC_PATH(ns)}?watch=1&resourceVersion=${rv}`, (chunk) => {
    const now = performance.now();
    buf += decoder.decode(chunk, { stream: true });
    for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (line === '') continue;
      const ev = JSON.parse(line) as { type: string; object: { metadata?: { name?: string } } };
      const name = ev.object.metadata?.name;
      if (ev.type === 'ADDED' && name !== undefined) waiting.get(name)?.(now);
    }
  });
  const status = await watch.status;
  if (status !== 200) throw new Error(`watch of ${ns}: ${status}`);

  const lat: number[] = [];
  const createLat: number[] = [];
  for (let i = 0; i < n; i++) {
    const name = pvcName(i);
    const event = new Promise<number>((resolve) => waiting.set(name, resolve));
    const t0 = performance.now();
    await c.expect(201, 'POST', PVC_PATH(ns), pvcBody(name));
    createLat.push(performance.now() - t0);
    lat.push((await event) - t0);
    waiting.delete(name);
  }
  await watch.cancel();
  lat.sort((a, b) => a - b);
  createLat.sort((a, b) => a - b);
  return { p50: percentile(lat, 50), p99: percentile(lat, 99), max: lat[lat.length - 1]!, createP50: percentile(createLat, 50) };
}

function collectGarbage(): boolean {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) return false;
  gc();
  gc();
  return true;
}

const mib = (bytes: number) => bytes / 1048576;

export async function benchApi(scale: number): Promise<ApiRow[]> {
  const rows: ApiRow[] = [];
  const add = rowRecorder(rows);
  const inProcess = process.env.BENCH_API_INPROCESS === '1';
  const server = inProcess ? await startServerInProcess() : await startServerProcess();
  const throughput = async (metric: string, total: number, clients: ApiClient[], op: (client: ApiClient, i: number) => Promise<unknown>) => {
    const r = await runConcurrent(total, CONCURRENCY, clients, op, server);
    add(metric, r.opsPerSec, 'ops/s');
    if (r.serverCpuUsPerOp !== null && r.serverCores !== null) {
      add(`  server CPU per op (${r.serverCores.toFixed(2)} cores busy)`, r.serverCpuUsPerOp, 'us');
      add(`  client CPU per op (${r.cores.toFixed(2)} cores busy)`, r.cpuUsPerOp, 'us');
    } else {
      add(`  process CPU per op (${r.cores.toFixed(2)} cores busy)`, r.cpuUsPerOp, 'us');
    }
  };
  const phases = new Set((process.env.BENCH_API_PHASES ?? 'create,get,list,rss,sessions,watch').split(','));
  // Under --cpu-prof, phase boundaries on the profile's clock (microseconds of the monotonic clock).
  const profiling = process.execArgv.some((a) => a.startsWith('--cpu-prof')) || (process.env.BENCH_SERVER_NODE_ARGS ?? '').includes('--cpu-prof');
  const mark = (what: string) => {
    if (profiling) console.log(`  mark ${what} ${process.hrtime.bigint() / 1000n}`);
  };

  const n = Math.max(100, Math.round(10_000 * scale));
  const n1k = Math.max(10, Math.round(1_000 * scale));
  const warm = Math.round(n / 50);
  console.log(
    `api: node ${process.version}, HTTPS + HTTP/2 (${process.env.BENCH_API_CLIENT === 'node' ? "node:http2's client" : "bench/h2lean.ts's client"}), embedded store in a file, concurrency ${CONCURRENCY}; ${server.where}; load ${(await readFile('/proc/loadavg', 'utf8')).split(' ').slice(0, 3).join(' ')}`,
  );
  // BENCH_API_CLIENT=node drives the server with node:http2's client instead (about as much client CPU per GET
  // as the server's, on the same two cores).
  const openClient = (): Promise<ApiClient> => (process.env.BENCH_API_CLIENT === 'node' ? Client.open(server) : LeanClient.open(server));
  const clients: ApiClient[] = [];
  try {
    const one = await openClient();
    clients.push(one);
    for (const ns of [NS, NS_1K, NS_2S, NS_WATCH]) {
      await one.expect(201, 'POST', '/api/v1/namespaces', JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } }));
    }
    const baseRss = await server.rssMiB();

    // Namespace `bench` ends up holding exactly n claims: `warm` untimed (JIT warm-up), then n - warm timed.
    await runConcurrent(warm, CONCURRENCY, [one], create(NS));
    if (phases.has('create')) {
      mark('create-start');
      await throughput(`PVC creates/s (${(n - warm).toLocaleString('en')}, 1 session; status checked, body bytes counted)`, n - warm, [one], create(NS, warm));
      mark('create-end');
    } else {
      await runConcurrent(n - warm, CONCURRENCY, [one], create(NS, warm));
    }
    if (phases.has('get')) {
      await runConcurrent(warm, CONCURRENCY, [one], get(NS, n));
      mark('get-start');
      // The client checks each get's status and counts its bytes; it does not decode the body.
      await throughput(`PVC gets/s (${(2 * n).toLocaleString('en')}, 1 session; status checked, body bytes counted)`, 2 * n, [one], get(NS, n));
      mark('get-end');
    }
    if (phases.has('rss')) {
      add(`server RSS at start (4 namespaces)`, baseRss, 'MiB');
      add(`server RSS, ${n.toLocaleString('en')} PVCs stored, after the creates and gets`, await server.rssMiB(), 'MiB');
      if (server.rssFileMiB) add(`  of which mapped from files (node binary, libraries)`, server.rssFileMiB(), 'MiB');
      if (process.env.BENCH_SERVER_HEAP_SNAPSHOT === '1') await server.heapSnapshot?.();
    }
    if (phases.has('list')) {
      add(`list of ${n.toLocaleString('en')} PVCs (median of 5)`, await listMedian(one, NS, n), 'ms');
      await runConcurrent(n1k, CONCURRENCY, [one], create(NS_1K));
      add(`list of ${n1k.toLocaleString('en')} PVCs (median of 5)`, await listMedian(one, NS_1K, n1k), 'ms');
    }
    if (phases.has('sessions')) {
      const two = [one, await openClient()];
      clients.push(two[1]!);
      const half = Math.round(n / 2);
      await throughput(`PVC creates/s (${half.toLocaleString('en')}, 2 sessions x 8 streams)`, half, two, create(NS_2S));
      await throughput(`PVC gets/s (${(2 * n).toLocaleString('en')}, 2 sessions x 8 streams)`, 2 * n, two, get(NS, n));
    }
    if (phases.has('watch')) {
      const w = await watchLatency(one, NS_WATCH, Math.max(200, Math.round(2_000 * scale)));
      add('watch latency create -> ADDED p50 (sequential creates)', w.p50, 'ms');
      add('watch latency create -> ADDED p99', w.p99, 'ms');
      add('watch latency create -> ADDED max', w.max, 'ms');
      add('create round trip p50 (sequential, concurrency 1)', w.createP50, 'ms');
    }
  } finally {
    await Promise.all(clients.map((c) => c.close()));
    await server.stop();
  }
  return rows;
}
