/**
 * Storage benchmark: the same figures for every backend (embedded store in a file and in memory, and etcd when
 * the etcd binary is installed). Run with `npm run bench` (all benchmarks) or `node dist/bench/index.js storage`.
 */
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KV } from '../src/storage/interface.js';
import { openSqlite } from '../src/storage/sqlite.js';
import { openEtcd } from '../src/storage/etcd.js';
import { startEtcd } from '../test/helpers/etcd.js';
import { findBinary } from '../test/helpers/binaries.js';

export interface Row {
  backend: string;
  metric: string;
  value: number;
  unit: string;
}

const value = Buffer.alloc(256, 'v');

async function runConcurrent(total: number, concurrency: number, op: (i: number) => Promise<unknown>): Promise<number> {
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (;;) {
        const i = next++;
        if (i >= total) return;
        await op(i);
      }
    }),
  );
  return (total / (performance.now() - t0)) * 1000;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function watchLatency(kv: KV, prefix: string, n: number): Promise<{ p50: number; p99: number }> {
  const sent = new Map<string, number>();
  const lat: number[] = [];
  const w = kv.watch(prefix, { prefix: true });
  const done = (async () => {
    for await (const ev of w) {
      const t = sent.get(ev.kv.key);
      if (t !== undefined) lat.push(performance.now() - t);
      if (lat.length >= n) break;
    }
  })();
  for (let i = 0; i < n; i++) {
    const key = `${prefix}${i}`;
    sent.set(key, performance.now());
    await kv.create(key, value);
    await new Promise((r) => setImmediate(r));
  }
  await done;
  w.close();
  lat.sort((a, b) => a - b);
  return { p50: percentile(lat, 50), p99: percentile(lat, 99) };
}

/** Runs every storage figure against one store. `fileSize` reports the store's size on disk, when it has one. */
export async function benchKV(backend: string, kv: KV, scale: number, fileSize?: () => Promise<number>): Promise<Row[]> {
  const rows: Row[] = [];
  const add = (metric: string, v: number, unit: string) => {
    rows.push({ backend, metric, value: Math.round(v * 100) / 100, unit });
    console.log(`  ${backend.padEnd(14)} ${metric.padEnd(44)} ${(Math.round(v * 100) / 100).toString().padStart(10)} ${unit}`);
  };
  const nWrites = Math.round(20_000 * scale);
  add('writes/s, concurrency 1', await runConcurrent(Math.round(nWrites / 4), 1, (i) => kv.create(`/bench/w1/${i}`, value)), 'ops/s');
  add('writes/s, concurrency 16', await runConcurrent(nWrites, 16, (i) => kv.create(`/bench/w16/${i}`, value)), 'ops/s');
  add('reads/s, concurrency 1', await runConcurrent(Math.round(nWrites / 4), 1, (i) => kv.get(`/bench/w16/${(i * 7919) % nWrites}`)), 'ops/s');
  add('reads/s, concurrency 16', await runConcurrent(nWrites, 16, (i) => kv.get(`/bench/w16/${(i * 7919) % nWrites}`)), 'ops/s');

  await runConcurrent(10_000, 16, (i) => kv.create(`/bench/list/${String(i).padStart(6, '0')}`, value));
  const times: number[] = [];
  for (let i = 0; i < 5; i++) {
    const t0 = performance.now();
    const r = await kv.list('/bench/list/');
    times.push(performance.now() - t0);
    if (r.kvs.length !== 10_000) throw new Error(`list returned ${r.kvs.length} keys`);
  }
  times.sort((a, b) => a - b);
  add('list of 10,000 keys (median of 5)', times[2]!, 'ms');

  const wl = await watchLatency(kv, '/bench/watch/', Math.round(2000 * Math.max(scale, 0.5)));
  add('watch delivery latency p50', wl.p50, 'ms');
  add('watch delivery latency p99', wl.p99, 'ms');

  // 100,000 updates of 1,000 keys, then compaction.
  const keys = 1000;
  const updates = Math.round(100_000 * scale);
  const revs: number[] = [];
  await runConcurrent(keys, 16, async (k) => {
    revs[k] = (await kv.create(`/bench/churn/${k}`, value)).modRevision;
  });
  await runConcurrent(updates, 16, async (i) => {
    const k = i % keys;
    for (;;) {
      try {
        revs[k] = (await kv.update(`/bench/churn/${k}`, value, revs[k]!)).modRevision;
        return;
      } catch {
        revs[k] = (await kv.get(`/bench/churn/${k}`)).kv!.modRevision;
      }
    }
  });
  const size = fileSize ?? (async () => (await kv.stats()).dbSizeBytes);
  add(`size after ${updates.toLocaleString('en')} updates of 1,000 keys`, (await size()) / 1048576, 'MiB');
  const t0 = performance.now();
  await kv.compact(await kv.currentRevision());
  add('compaction time', performance.now() - t0, 'ms');
  add('size after compaction', (await size()) / 1048576, 'MiB');
  add('process RSS', process.memoryUsage().rss / 1048576, 'MiB');
  return rows;
}

export async function benchStorage(scale: number): Promise<Row[]> {
  const rows: Row[] = [];
  console.log('storage:');
  const dir = await mkdtemp(join(tmpdir(), 'orch-bench-'));
  try {
    const path = join(dir, 'state.db');
    const file = await openSqlite({ path });
    rows.push(...(await benchKV('sqlite-file', file, scale, async () => (await stat(path)).size + (await walSize(path)))));
    await file.close();
    const mem = await openSqlite({ path: ':memory:' });
    rows.push(...(await benchKV('sqlite-memory', mem, scale)));
    await mem.close();
    if (findBinary('etcd')) {
      const etcd = await startEtcd();
      try {
        const kv = await openEtcd({ endpoints: [etcd.endpoint] });
        rows.push(...(await benchKV('etcd', kv, scale)));
        await kv.close();
      } finally {
        await etcd.cleanup();
      }
    } else {
      console.log('  etcd: skipped (etcd binary not installed)');
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  return rows;
}

async function walSize(path: string): Promise<number> {
  try {
    return (await stat(path + '-wal')).size;
  } catch {
    return 0;
  }
}
