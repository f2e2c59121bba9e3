/**
 * Authorization and admission benchmark (issue 8's target: RBAC with the default admission plugins at most 15%
 * slower than AlwaysAllow with none): PVC creates/s through `bin/orch-apiserver` (its own process, HTTP/2,
 * concurrency 16, as the API bench) under
 *   - --authorization-mode=AlwaysAllow with every admission plugin disabled (the baseline),
 *   - RBAC,Node with the default admission plugins (document 2's default list) as a system:masters user,
 *   - the same as a user bound to the `edit` role in the namespace (every cluster binding is looked at first).
 * BENCH_AUTHZ_SETUPS=plugins,rbac,... picks setups (plus the baseline), among them two apart: AlwaysAllow with
 * the plugins, and RBAC without them. The setups run in rounds (BENCH_AUTHZ_ROUNDS, default 3), each in a rotated order and with fresh servers;
 * rows are medians over the rounds. Other load on the machine moves creates/s far more than the server's CPU
 * per create, so both are printed, each with its cost against the baseline.
 *
 * Run with `node dist/bench/index.js authz` (BENCH_SCALE=0.1 for a quick run).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, CONCURRENCY, PVC_PATH, pvcBody, startServerProcess, timedCreates } from './api.js';
import { compareSetups, rowRecorder, type BenchRow } from './rows.js';
import { DEFAULT_ADMISSION_PLUGINS } from '../src/server/options.js';

export type AuthzRow = BenchRow;

interface Setup {
  key: string;
  label: string;
  modes: string;
  /** Creates as the editor (bound to edit in the namespace) rather than as the admin. */
  editor: boolean;
  /** The default admission plugins on (else all disabled). */
  admission: boolean;
  /** Run only when BENCH_AUTHZ_SETUPS names it. */
  extra?: boolean;
}

const SETUPS: Setup[] = [
  { key: 'allow', label: 'AlwaysAllow, no admission plugins', modes: 'AlwaysAllow', editor: false, admission: false },
  { key: 'masters', label: 'RBAC,Node + default admission plugins, as system:masters', modes: 'RBAC,Node', editor: false, admission: true },
  { key: 'editor', label: 'RBAC,Node + default admission plugins, as a user bound to edit', modes: 'RBAC,Node', editor: true, admission: true },
  // Only when named in BENCH_AUTHZ_SETUPS: the two halves apart.
  { key: 'plugins', label: 'AlwaysAllow + default admission plugins', modes: 'AlwaysAllow', editor: false, admission: true, extra: true },
  { key: 'rbac', label: 'RBAC,Node, no admission plugins, as system:masters', modes: 'RBAC,Node', editor: false, admission: false, extra: true },
];

const EDITOR_TOKEN = 'bench-editor-token';

async function measure(setup: Setup, n: number): Promise<{ opsPerSec: number; serverCpuUsPerOp: number | null }> {
  const server = await startServerProcess((dir) => {
    writeFileSync(join(dir, 'users.csv'), `bench-admin-token,admin,admin,"system:masters"\n${EDITOR_TOKEN},editor,editor\n`);
    return [
      `--token-auth-file=${join(dir, 'users.csv')}`,
      `--authorization-mode=${setup.modes}`,
      ...(setup.admission ? [] : [`--disable-admission-plugins=${DEFAULT_ADMISSION_PLUGINS.join(',')}`]),
    ];
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
  const rounds = Math.max(1, Number(process.env.BENCH_AUTHZ_ROUNDS ?? 3));
  const wanted = process.env.BENCH_AUTHZ_SETUPS?.split(',');
  const setups = SETUPS.filter((s) => s.key === 'allow' || (wanted ? wanted.includes(s.key) : !s.extra));
  console.log(
    `authz: node ${process.version}, bin/orch-apiserver in its own process, HTTPS + HTTP/2, concurrency ${CONCURRENCY}, ` +
      `${n.toLocaleString('en')} PVC creates per run, ${rounds} round(s) in rotated order, medians`,
  );
  await compareSetups({ setups, baseline: 'allow', baselineLabel: 'AlwaysAllow without plugins', rounds, measure: (setup) => measure(setup, n), add });
  return rows;
}
