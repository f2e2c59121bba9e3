/**
 * Audit benchmark: PVC creates/s through `bin/orch-apiserver` (its own process, HTTP/2, concurrency 16, as
 * the API bench) without auditing, then with a Metadata-level policy logging to a file in batch mode and in
 * blocking mode. Prints each figure, the server's CPU per create, and the cost against no audit (the issue's
 * target: batch mode costs under 10% of throughput).
 *
 * The setups run in rounds (BENCH_AUDIT_ROUNDS, default 3), each round in a rotated order so that no setup
 * always runs first (on a cold machine) or last; each round starts fresh servers. The rows are the medians
 * over the rounds. Other load on the machine moves creates/s far more than the server's CPU per create, so
 * the cost is given both ways: in throughput, and in server CPU per create.
 *
 * Run with `node dist/bench/index.js audit` (BENCH_SCALE=0.1 for a quick run; BENCH_AUDIT_SETUPS=batch
 * runs 'no audit' and the batch setup only).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client, CONCURRENCY, startServerProcess, timedCreates } from './api.js';
import { rowRecorder, type BenchRow } from './rows.js';

const POLICY = `apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: Metadata
`;

export type AuditRow = BenchRow;

interface Setup {
  key: string;
  label: string;
  /** The server's extra arguments; may write files into the server's directory. */
  args: (dir: string) => string[];
}

const withPolicy = (mode: string) => (dir: string) => {
  writeFileSync(join(dir, 'policy.yaml'), POLICY);
  return [`--audit-policy-file=${join(dir, 'policy.yaml')}`, `--audit-log-path=${join(dir, 'audit.log')}`, `--audit-log-mode=${mode}`];
};

const SETUPS: Setup[] = [
  { key: 'none', label: 'no audit', args: () => [] },
  { key: 'batch', label: 'Metadata policy, log in batch mode', args: withPolicy('batch') },
  { key: 'blocking', label: 'Metadata policy, log in blocking mode', args: withPolicy('blocking') },
];

interface Result {
  opsPerSec: number;
  serverCpuUsPerOp: number | null;
}

/** Creates `n` claims after a warm-up; creates/s and the server's CPU per create. */
async function measure(setup: Setup, n: number): Promise<Result> {
  const server = await startServerProcess(setup.args);
  try {
    const client = await Client.open(server);
    try {
      await client.expect(201, 'POST', '/api/v1/namespaces', JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'bench' } }));
      return await timedCreates(client, server, 'bench', n);
    } finally {
      await client.close();
    }
  } finally {
    await server.stop();
  }
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

export async function benchAudit(scale: number): Promise<AuditRow[]> {
  const rows: AuditRow[] = [];
  const add = rowRecorder(rows);
  const n = Math.max(300, Math.round(5_000 * scale));
  const rounds = Math.max(1, Number(process.env.BENCH_AUDIT_ROUNDS ?? 3));
  const wanted = process.env.BENCH_AUDIT_SETUPS?.split(',');
  const setups = SETUPS.filter((s) => s.key === 'none' || !wanted || wanted.includes(s.key));
  console.log(
    `audit: node ${process.version}, bin/orch-apiserver in its own process, HTTPS + HTTP/2, concurrency ${CONCURRENCY}, ` +
      `${n.toLocaleString('en')} PVC creates per run, ${rounds} round(s) in rotated order, medians`,
  );
  const results = new Map<string, Result[]>(setups.map((s) => [s.key, []]));
  for (let round = 0; round < rounds; round++) {
    const order = setups.map((_, i) => setups[(i + round) % setups.length]!);
    const line: string[] = [];
    for (const setup of order) {
      const r = await measure(setup, n);
      results.get(setup.key)!.push(r);
      line.push(`${setup.key} ${Math.round(r.opsPerSec)}/s ${r.serverCpuUsPerOp === null ? '?' : Math.round(r.serverCpuUsPerOp)}us`);
    }
    console.log(`  (round ${round + 1}: ${line.join(', ')})`);
  }
  const ops = (key: string) => median(results.get(key)!.map((r) => r.opsPerSec));
  const cpus = (key: string) => results.get(key)!.flatMap((r) => (r.serverCpuUsPerOp === null ? [] : [r.serverCpuUsPerOp]));
  const baseOps = ops('none');
  const baseCpu = cpus('none').length > 0 ? median(cpus('none')) : undefined;
  for (const setup of setups) {
    add(`PVC creates/s, ${setup.label}`, ops(setup.key), 'ops/s');
    const c = cpus(setup.key);
    const cpu = c.length > 0 ? median(c) : undefined;
    if (cpu !== undefined) add(`  server CPU per create`, cpu, 'us');
    if (setup.key === 'none') continue;
    add(`  throughput cost against no audit`, (1 - ops(setup.key) / baseOps) * 100, '%');
    if (cpu !== undefined && baseCpu !== undefined) add(`  server CPU cost against no audit`, (cpu / baseCpu - 1) * 100, '%');
  }
  return rows;
}
