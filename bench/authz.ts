/**
 * Authorization benchmark: PVC creates/s through `bin/orch-apiserver` (its own process, HTTP/2, concurrency 16,
 * as the API bench) under --authorization-mode=AlwaysAllow, then under RBAC,Node as a system:masters user
 * (allowed by the cluster-admin binding) and as a user bound to the `edit` role in the namespace (every
 * cluster binding is looked at first). Prints each figure, the server's CPU per create, and the cost against
 * AlwaysAllow.
 *
 * Run with `node dist/bench/index.js authz` (BENCH_SCALE=0.1 for a quick run).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, CONCURRENCY, PVC_PATH, pvcBody, startServerProcess, timedCreates } from './api.js';
import { rowRecorder, type BenchRow } from './rows.js';

export type AuthzRow = BenchRow;

interface Setup {
  label: string;
  modes: string;
  /** Creates as the editor (bound to edit in the namespace) rather than as the admin. */
  editor: boolean;
}

const SETUPS: Setup[] = [
  { label: 'AlwaysAllow', modes: 'AlwaysAllow', editor: false },
  { label: 'RBAC,Node as system:masters', modes: 'RBAC,Node', editor: false },
  { label: 'RBAC,Node as a user bound to edit', modes: 'RBAC,Node', editor: true },
];

const EDITOR_TOKEN = 'bench-editor-token';

async function measure(setup: Setup, n: number): Promise<{ opsPerSec: number; serverCpuUsPerOp: number | null }> {
  const server = await startServerProcess((dir) => {
    writeFileSync(join(dir, 'users.csv'), `bench-admin-token,admin,admin,"system:masters"\n${EDITOR_TOKEN},editor,editor\n`);
    return [`--token-auth-file=${join(dir, 'users.csv')}`, `--authorization-mode=${setup.modes}`];
  });
  try {
    const admin = await Client.open(server);
    const client = setup.editor ? await Client.open({ ...server, token: EDITOR_TOKEN }) : admin;
    try {
      await admin.expect(201, 'POST', '/api/v1/namespaces', JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'bench' } }));
      if (setup.editor) {
        const binding = {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'RoleBinding',
          metadata: { name: 'editor', namespace: 'bench' },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'edit' },
          subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'editor' }],
        };
        await admin.expect(201, 'POST', '/apis/rbac.authorization.k8s.io/v1/namespaces/bench/rolebindings', JSON.stringify(binding));
        // The edit role's rules are aggregated a moment after start.
        for (let i = 0; (await client.request('POST', PVC_PATH('bench'), pvcBody('probe'))).status !== 201; i++) {
          if (i > 100) throw new Error('the editor never got the edit role');
          await sleep(50);
        }
      }
      return await timedCreates(client, server, 'bench', n);
    } finally {
      if (client !== admin) await client.close();
      await admin.close();
    }
  } finally {
    await server.stop();
  }
}

export async function benchAuthz(scale: number): Promise<AuthzRow[]> {
  const rows: AuthzRow[] = [];
  const add = rowRecorder(rows);
  const n = Math.max(300, Math.round(5_000 * scale));
  console.log(`authz: node ${process.version}, bin/orch-apiserver in its own process, HTTPS + HTTP/2, concurrency ${CONCURRENCY}, ${n.toLocaleString('en')} PVC creates each`);
  let base: number | undefined;
  for (const setup of SETUPS) {
    const r = await measure(setup, n);
    add(`PVC creates/s, ${setup.label}`, r.opsPerSec, 'ops/s');
    if (r.serverCpuUsPerOp !== null) add(`  server CPU per create`, r.serverCpuUsPerOp, 'us');
    if (base === undefined) base = r.opsPerSec;
    else add(`  throughput cost against AlwaysAllow`, (1 - r.opsPerSec / base) * 100, '%');
  }
  return rows;
}
