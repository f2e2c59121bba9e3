// End to end: bin/orch, the all-in-one, brings up the API server and a node that turns Ready, runs a
// pod bound to it, and stops cleanly on SIGTERM.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { get as httpsGet } from 'node:https';
import { fileURLToPath } from 'node:url';
import { kubectlPath } from '../helpers/cluster.js';
import { waitFor } from '../agent/runtime-contract.js';

const ORCH = fileURLToPath(new URL('../../../bin/orch', import.meta.url));

void describe('bin/orch (all-in-one)', () => {
  void it('starts the server and a Ready node, runs a pod, and stops on SIGTERM', async (t) => {
    const bin = kubectlPath();
    if (!bin) {
      if (process.env.CI === 'true') throw new Error('kubectl is not installed');
      t.skip('kubectl is not installed');
      return;
    }
    const home = await mkdtemp(join(tmpdir(), 'orch-aio-'));
    const child = spawn(process.execPath, [ORCH, '--home', home, '--secure-port', '0', '--orchlet-port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const kubectl = (args: string[], input?: string): Promise<{ code: number; stdout: string; stderr: string }> =>
      new Promise((resolve) => {
        const p = execFile(bin, ['--kubeconfig', join(home, 'admin.kubeconfig'), ...args], { env: { ...process.env, HOME: home } }, (err, stdout, se) =>
          resolve({ code: err ? 1 : 0, stdout, stderr: se }),
        );
        if (input !== undefined) p.stdin?.end(input);
      });
    try {
      const line = await waitFor('the ready line', () => /orch: API server on (https:\/\/\S+), node (\S+) .*export KUBECONFIG=(\S+); kubectl get nodes/.exec(stderr) ?? undefined, 30_000);
      assert.equal(line[3], join(home, 'admin.kubeconfig'));
      const node = line[2]!;
      await waitFor('node Ready', async () => {
        const r = await kubectl(['get', 'nodes', '--no-headers']);
        return new RegExp(`^${node}\\s+Ready\\s`, 'm').test(r.stdout) ? true : undefined;
      }, 30_000);
      const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'hi' }, spec: { nodeName: node, containers: [{ name: 'c', image: 'busybox', command: ['sleep', '600'] }] } };
      assert.equal((await kubectl(['create', '-f', '-'], JSON.stringify(pod))).code, 0);
      await waitFor('pod Running', async () => {
        const r = await kubectl(['get', 'pod', 'hi', '-o', 'jsonpath={.status.phase}']);
      return r.stdout === 'Running' ? true : undefined;
      }, 30_000);
      // Secure defaults: the default admission plugins ran on the pod (ServiceAccount, Priority,
      // DefaultTolerationSeconds), the agent is confined by the Node authorizer, and anonymous requests
      // get only what RBAC grants system:unauthenticated.
      const admitted = JSON.parse((await kubectl(['get', 'pod', 'hi', '-o', 'json'])).stdout) as { spec: Record<string, any> };
      assert.equal(admitted.spec['serviceAccountName'], 'default');
      assert.equal(admitted.spec['priority'], 0);
      assert.ok((admitted.spec['tolerations'] as { key?: string; tolerationSeconds?: number }[]).some((t) => t.key === 'node.kubernetes.io/not-ready' && t.tolerationSeconds === 300));
      const canI = async (args: string[]) => (await kubectl(['auth', 'can-i', ...args, '--as', `system:node:${node}`, '--as-group', 'system:nodes'])).stdout.trim();
      assert.match(await canI(['get', 'secrets', '-n', 'default']), /^no\b/);
      assert.equal(await canI(['update', `nodes/${node}/status`]), 'yes');
      const anonymous = await new Promise<number>((resolve, reject) => {
        const req = httpsGet(`${line[1]}/api/v1/namespaces`, { rejectUnauthorized: false }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on('error', reject);
      });
      assert.equal(anonymous, 403);
    } finally {
      child.kill('SIGTERM');
      let timer: NodeJS.Timeout | undefined;
      const code = await Promise.race([exited, new Promise<'timeout'>((r) => (timer = setTimeout(() => r('timeout'), 45_000)))]);
      clearTimeout(timer);
      if (code === 'timeout') child.kill('SIGKILL');
      await rm(home, { recursive: true, force: true });
      assert.equal(code, 0, stderr);
    }
  });
});
