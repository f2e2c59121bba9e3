/**
 * Audit benchmark: PVC creates/s through `bin/orch-apiserver` (its own process, HTTP/2, concurrency 16, as
 * the API bench) without auditing, then with a Metadata-level policy logging to a file in batch mode and in
 * blocking mode. Prints each figure, the server's CPU per create, and the cost against no audit (the issue's
 * target: batch mode costs under 10% of throughput).
 *
 * Run with `node dist/bench/index.js audit` (BENCH_SCALE=0.1 for a quick run).
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
  label: string;
  /** The server's extra arguments; may write files into the server's directory. */
  args: (dir: string) => string[];
}

const withPolicy = (mode: string) => (dir: string) => {
  writeFileSync(join(dir, 'policy.yaml'), POLICY);
  return [`--audit-policy-file=${join(dir, 'policy.yaml')}`, `--audit-log-path=${join(dir, 'audit.log')}`, `--audit-log-mode=${mode}`];
};

const SETUPS: Setup[] = [
  { label: 'no audit', args: () => [] },
  { label: 'Metadata policy, log in batch mode', args: withPolicy('batch') },
  { label: 'Metadata policy, log in blocking mode', args: withPolicy('blocking') },
];

/** Creates `n` claims after a warm-up; creates/s and the server's CPU per create. */
async function measure(setup: Setup, n: number): Promise<{ opsPerSec: number; serverCpuUsPerOp: number | null }> {
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

export async function benchAudit(scale: number): Promise<AuditRow[]> {
  const rows: AuditRow[] = [];
  const add = rowRecorder(rows);
  const n = Math.max(300, Math.round(5_000 * scale));
  console.log(`audit: node ${process.version}, bin/orch-apiserver in its own process, HTTPS + HTTP/2, concurrency ${CONCURRENCY}, ${n.toLocaleString('en')} PVC creates each`);
  let base: number | undefined;
  for (const setup of SETUPS) {
    const r = await measure(setup, n);
    add(`PVC creates/s, ${setup.label}`, r.opsPerSec, 'ops/s');
    if (r.serverCpuUsPerOp !== null) add(`  server CPU per create`, r.serverCpuUsPerOp, 'us');
    if (base === undefined) base = r.opsPerSec;
    else add(`  throughput cost against no audit`, (1 - r.opsPerSec / base) * 100, '%');
  }
  return rows;
}
