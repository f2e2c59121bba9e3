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
import { compareSetups, rowRecorder, type BenchRow, type CompareResult } from './rows.js';

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

/** Creates `n` claims after a warm-up; creates/s and the server's CPU per create. */
async function measure(setup: Setup, n: number): Promise<CompareResult> {
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
  const rounds = Math.max(1, Number(process.env.BENCH_AUDIT_ROUNDS ?? 3));
  const wanted = process.env.BENCH_AUDIT_SETUPS?.split(',');
  const setups = SETUPS.filter((s) => s.key === 'none' || !wanted || wanted.includes(s.key));
  console.log(
    `audit: node ${process.version}, bin/orch-apiserver in its own process, HTTPS + HTTP/2, concurrency ${CONCURRENCY}, ` +
      `${n.toLocaleString('en')} PVC creates per run, ${rounds} round(s) in rotated order, medians`,
  );
  await compareSetups({ setups, baseline: 'none', baselineLabel: 'no audit', rounds, measure: (setup) => measure(setup, n), add });
  return rows;
}
