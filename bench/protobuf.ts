/**
 * `npm run bench protobuf`: Kubernetes' protobuf encoding on the wire and in storage.
 *   - For each --storage-media-type (JSON, protobuf), a server process (bin/orch-apiserver, its own process as in
 *     the api bench) holding N claims answers gets (concurrency 16) and lists of all N, each asked for JSON and for
 *     protobuf: gets/s, get latency p50/p99, server CPU per get, list time (median of 5).
 *   - The stored size of 10,000 PVCs in each encoding: the claims as the server stores them (uid, timestamps,
 *     managedFields, finalizers), encoded by the storage codec as protobuf, JSON and YAML.
 */
import { performance } from 'node:perf_hooks';
import { encodeStored, type StorageEncoding } from '../src/registry/storagecodec.js';
import { decodeObject } from '../src/util/protobuf.js';
import { CONCURRENCY, Client, PVC_PATH, pvcBody, pvcName, runConcurrent, startServerProcess, type BenchServer } from './api.js';
import { rowRecorder, type BenchRow } from './rows.js';

const NS = 'pb-bench';
const PROTOBUF = 'application/vnd.kubernetes.protobuf';

/** GET with an Accept header; resolves with the body's bytes and the time to its last byte (ms). */
function get(c: Client, path: string, accept: string): Promise<{ body: Buffer; ms: number }> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const stream = c.session.request({ ...c.headers('GET', path), accept }, { endStream: true });
    let status = 0;
    const chunks: Buffer[] = [];
    stream.on('response', (h) => {
      status = Number(h[':status']);
    });
    stream.on('data', (d: Buffer) => chunks.push(d));
    stream.on('end', () => {
      const body = Buffer.concat(chunks);
      if (status !== 200) reject(new Error(`GET ${path}: ${status}: ${body.toString().slice(0, 300)}`));
      else resolve({ body, ms: performance.now() - t0 });
    });
    stream.on('error', reject);
  });
}

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

export async function benchProtobuf(scale: number): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const add = rowRecorder(rows);
  const n = Math.max(200, Math.round(2_000 * scale));
  const gets = Math.max(1_000, Math.round(20_000 * scale));
  console.log(`protobuf: ${n} claims per server, ${gets} gets at concurrency ${CONCURRENCY} per phase, lists of all ${n}`);
  let stored: Record<string, unknown>[] = [];
  for (const storage of ['application/json', PROTOBUF] as const) {
    const server: BenchServer = await startServerProcess(() => [`--storage-media-type=${storage}`]);
    const c = await Client.open(server);
    try {
      await c.expect(201, 'POST', '/api/v1/namespaces', JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } }));
      await runConcurrent(n, CONCURRENCY, [c], (cl, i) => cl.expect(201, 'POST', PVC_PATH(NS), pvcBody(pvcName(i))));
      const label = storage === PROTOBUF ? 'protobuf' : 'JSON';
      for (const accept of ['application/json', PROTOBUF]) {
        const wire = accept === PROTOBUF ? 'protobuf' : 'JSON';
        const path = (i: number) => `${PVC_PATH(NS)}/${pvcName((i * 7919) % n)}`;
        await runConcurrent(Math.round(gets / 10), CONCURRENCY, [c], (cl, i) => get(cl, path(i), accept)); // warm-up
        const latencies: number[] = [];
        const r = await runConcurrent(gets, CONCURRENCY, [c], async (cl, i) => latencies.push((await get(cl, path(i), accept)).ms), server);
        latencies.sort((a, b) => a - b);
        add(`get, stored ${label}, answered ${wire}`, r.opsPerSec, 'gets/s');
        add(`  latency p50 / p99 (concurrency ${CONCURRENCY})`, pct(latencies, 50), `/ ${pct(latencies, 99).toFixed(2)} ms`);
        if (r.serverCpuUsPerOp !== null) add('  server CPU per get', r.serverCpuUsPerOp, 'us');
        const times: number[] = [];
        let bytes = 0;
        for (let k = 0; k < 5; k++) {
          const { body, ms } = await get(c, PVC_PATH(NS), accept);
          times.push(ms);
          bytes = body.length;
          const items = (accept === PROTOBUF ? decodeObject(body) : (JSON.parse(body.toString()) as Record<string, unknown>))['items'] as unknown[];
          if (items.length !== n) throw new Error(`list returned ${items.length}, expected ${n}`);
        }
        times.sort((a, b) => a - b);
        add(`list of ${n}, stored ${label}, answered ${wire} (median of 5)`, pct(times, 50), `ms (${(bytes / 1024).toFixed(0)} KiB)`);
      }
      if (storage === 'application/json') {
        const list = JSON.parse((await get(c, PVC_PATH(NS), 'application/json')).body.toString()) as { items: Record<string, unknown>[] };
        stored = list.items.map((o) => ({ apiVersion: 'v1', kind: 'PersistentVolumeClaim', ...o }));
      }
    } finally {
      await c.close();
      await server.stop();
    }
  }

  // Stored size of 10,000 claims: the claims the server stored, without their resourceVersion (as the store
  // writes them), repeated to 10,000 with their own names.
  const sizes: Record<StorageEncoding, number> = { protobuf: 0, json: 0, yaml: 0 };
  for (let i = 0; i < 10_000; i++) {
    const o = stored[i % stored.length]!;
    const { resourceVersion: _rv, ...meta } = o['metadata'] as Record<string, unknown>;
    const obj = { ...o, metadata: { ...meta, name: pvcName(i) } };
    for (const e of Object.keys(sizes) as StorageEncoding[]) sizes[e] += encodeStored(obj, e).length;
  }
  for (const e of ['protobuf', 'json', 'yaml'] as const) add(`stored size of 10,000 PVCs, ${e}`, sizes[e] / 1024, `KiB (${(sizes[e] / 10_000).toFixed(0)} B each)`);
  return rows;
}
