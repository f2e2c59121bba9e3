/**
 * API benchmark: the server in-process (test/helpers/cluster.ts) on the embedded store in a file, driven over
 * HTTPS with HTTP/2 (node:http2, the cluster's CA, a bearer token) at concurrency 16: PVC creates/s, gets/s,
 * lists of 1,000 and 10,000 PVCs, watch latency from create to ADDED event, and process RSS with 10,000 PVCs
 * stored. Client and server share this process (and its one JS thread), so every figure includes the client's
 * cost. Run with `node dist/bench/index.js api` (BENCH_SCALE=0.1 for a quick run; BENCH_API_PHASES=create,get
 * runs only those phases, e.g. under `node --cpu-prof`, which also prints phase marks for windowing the profile).
 */
import { connect, type ClientHttp2Session, type OutgoingHttpHeaders } from 'node:http2';
import { startCluster, type TestCluster } from '../test/helpers/cluster.js';

export interface ApiRow {
  metric: string;
  value: number;
  unit: string;
}

const CONCURRENCY = 16;
const NS = 'bench';
const NS_1K = 'bench-1k';
const NS_2S = 'bench-2s';
const NS_WATCH = 'bench-watch';
const PVC_PATH = (ns: string) => `/api/v1/namespaces/${ns}/persistentvolumeclaims`;

/** A realistic small claim, as `kubectl apply` would send it (about 330 bytes). */
function pvcBody(name: string): string {
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

const pvcName = (i: number) => `pvc-${String(i).padStart(6, '0')}`;

interface Response {
  status: number;
  body: string;
}

class Client {
  private constructor(
    readonly session: ClientHttp2Session,
    private readonly token: string,
  ) {}

  /** One HTTP/2 session with Go's (client-go's) flow-control windows: 4 MiB per stream, 1 GiB per connection. */
  static async open(c: TestCluster): Promise<Client> {
    const session = connect(c.url, { ca: c.cp.server.caCert, settings: { initialWindowSize: 4 << 20 } });
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

  async expect(status: number, method: string, path: string, body?: string): Promise<string> {
    const r = await this.request(method, path, body);
    if (r.status !== status) throw new Error(`${method} ${path}: ${r.status}, expected ${status}: ${r.body.slice(0, 500)}`);
    return r.body;
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.session.close(() => resolve()));
  }
}

/**
 * Runs `total` operations with `concurrency` workers; worker w uses clients[w % clients.length]. Returns ops/s and
 * the process CPU time (all threads: main, GC helpers, libuv) per operation and in cores, which other load on the
 * machine affects far less than ops/s.
 */
async function runConcurrent(
  total: number,
  concurrency: number,
  clients: Client[],
  op: (client: Client, i: number) => Promise<unknown>,
): Promise<{ opsPerSec: number; cpuUsPerOp: number; cores: number }> {
  let next = 0;
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
  return { opsPerSec: (total / ms) * 1000, cpuUsPerOp: cpuUs / total, cores: cpuUs / 1000 / ms };
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

function median(xs: number[]): number {
  return [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
}

const create = (ns: string, offset = 0) => (c: Client, i: number) => c.expect(201, 'POST', PVC_PATH(ns), pvcBody(pvcName(offset + i)));
const get = (ns: string, stored: number) => (c: Client, i: number) => c.expect(200, 'GET', `${PVC_PATH(ns)}/${pvcName((i * 7919) % stored)}`);

/** Lists `ns` five times; the median time to the last byte (the body is parsed and counted outside the timing). */
async function listMedian(c: Client, ns: string, expected: number): Promise<number> {
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
async function watchLatency(c: Client, ns: string, n: number): Promise<{ p50: number; p99: number; max: number; createP50: number }> {
  const rv = (JSON.parse(await c.expect(200, 'GET', PVC_PATH(ns))) as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
  const stream = c.session.request(c.headers('GET', `${PVC_PATH(ns)}?watch=1&resourceVersion=${rv}`));
  const waiting = new Map<string, (t: number) => void>();
  let buf = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    const now = performance.now();
    buf += chunk;
    for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (line === '') continue;
      const ev = JSON.parse(line) as { type: string; object: { metadata?: { name?: string } } };
      const name = ev.object.metadata?.name;
      if (ev.type === 'ADDED' && name !== undefined) waiting.get(name)?.(now);
    }
  });
  const closed = new Promise<void>((resolve) => {
    stream.on('close', resolve);
    stream.on('error', () => resolve());
  });
  const status = await new Promise<number>((resolve, reject) => {
    stream.once('response', (h) => resolve(Number(h[':status'])));
    stream.once('error', reject);
  });
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
  stream.close();
  await closed;
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
  const add = (metric: string, v: number, unit: string) => {
    const value = Math.round(v * 100) / 100;
    rows.push({ metric, value, unit });
    console.log(`  ${metric.padEnd(58)} ${value.toLocaleString('en').padStart(10)} ${unit}`);
  };
  const throughput = async (metric: string, total: number, clients: Client[], op: (client: Client, i: number) => Promise<unknown>) => {
    const r = await runConcurrent(total, CONCURRENCY, clients, op);
    add(metric, r.opsPerSec, 'ops/s');
    add(`  process CPU per op (${r.cores.toFixed(2)} cores busy)`, r.cpuUsPerOp, 'us');
  };
  const phases = new Set((process.env.BENCH_API_PHASES ?? 'create,get,list,rss,sessions,watch').split(','));
  // Under --cpu-prof, phase boundaries on the profile's clock (microseconds of the monotonic clock).
  const profiling = process.execArgv.some((a) => a.startsWith('--cpu-prof'));
  const mark = (what: string) => {
    if (profiling) console.log(`  mark ${what} ${process.hrtime.bigint() / 1000n}`);
  };

  const n = Math.max(100, Math.round(10_000 * scale));
  const n1k = Math.max(10, Math.round(1_000 * scale));
  const warm = Math.round(n / 50);
  console.log(
    `api: node ${process.version}, HTTPS + HTTP/2, embedded store in a file, concurrency ${CONCURRENCY}; ` +
      `client and server share this process${(globalThis as { gc?: unknown }).gc ? '' : ' (no --expose-gc: RSS without a forced GC)'}`,
  );
  const cluster = await startCluster([], { fileStore: true });
  const clients: Client[] = [];
  try {
    const one = await Client.open(cluster);
    clients.push(one);
    for (const ns of [NS, NS_1K, NS_2S, NS_WATCH]) {
      await one.expect(201, 'POST', '/api/v1/namespaces', JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } }));
    }
    collectGarbage();
    const base = process.memoryUsage();

    // Namespace `bench` ends up holding exactly n claims: `warm` untimed (JIT warm-up), then n - warm timed.
    await runConcurrent(warm, CONCURRENCY, [one], create(NS));
    if (phases.has('create')) {
      mark('create-start');
      await throughput(`PVC creates/s (${(n - warm).toLocaleString('en')}, 1 session)`, n - warm, [one], create(NS, warm));
      mark('create-end');
    } else {
      await runConcurrent(n - warm, CONCURRENCY, [one], create(NS, warm));
    }
    if (phases.has('get')) {
      await runConcurrent(warm, CONCURRENCY, [one], get(NS, n));
      mark('get-start');
      await throughput(`PVC gets/s (${(2 * n).toLocaleString('en')}, 1 session)`, 2 * n, [one], get(NS, n));
      mark('get-end');
    }
    if (phases.has('rss')) {
      const forced = collectGarbage();
      const mem = process.memoryUsage();
      add(`process RSS at start (no PVCs${forced ? ', after GC' : ''})`, mib(base.rss), 'MiB');
      add(`  external at start`, mib(base.external), 'MiB');
      add(`process RSS, ${n.toLocaleString('en')} PVCs stored${forced ? ' (after GC)' : ''}`, mib(mem.rss), 'MiB');
      add(`  JS heap used`, mib(mem.heapUsed), 'MiB');
      add(`  JS heap committed`, mib(mem.heapTotal), 'MiB');
      add(`  external (Buffers, native objects)`, mib(mem.external), 'MiB');
    }
    if (phases.has('list')) {
      add(`list of ${n.toLocaleString('en')} PVCs (median of 5)`, await listMedian(one, NS, n), 'ms');
      await runConcurrent(n1k, CONCURRENCY, [one], create(NS_1K));
      add(`list of ${n1k.toLocaleString('en')} PVCs (median of 5)`, await listMedian(one, NS_1K, n1k), 'ms');
    }
    if (phases.has('sessions')) {
      const two = [one, await Client.open(cluster)];
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
    await cluster.stop();
  }
  return rows;
}
