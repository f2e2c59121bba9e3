/**
 * Post-start hooks as kube-apiserver 1.23 lists them: before start() has done its part, /readyz, /livez and
 * /healthz fail on `poststarthook/<name>` (and /readyz on informer-sync); once started they pass, in
 * Kubernetes' order, each with its own path. The control plane's handler is served over plain HTTP on
 * loopback here, so that it can be asked before start() listens.
 */
import assert from 'node:assert/strict';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { createControlPlane } from '../../src/server/controlplane.js';
import { parseServerOptions } from '../../src/server/options.js';
import { passedLines, POST_START_HOOKS } from '../helpers/health.js';

const TOKEN = 'startup-health-token';

function get(port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, headers: { authorization: `Bearer ${TOKEN}` } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}


void describe('post-start hooks in the health checks', () => {
  void it('fail until the control plane has started, then pass in kube-apiserver\'s order', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'orch-startup-health-'));
    await writeFile(join(dir, 'tokens.csv'), `${TOKEN},admin,admin,"system:masters"\n`);
    const options = parseServerOptions(['--bind-address=127.0.0.1', '--data-dir=:memory:', `--cert-dir=${join(dir, 'certs')}`, `--token-auth-file=${join(dir, 'tokens.csv')}`]);
    const cp = await createControlPlane(options, { securePort: 0, logger: () => {} });
    let plain: Server | undefined;
    try {
      plain = createServer((req, res) => void cp.server.handle(req as never, res as never));
      await new Promise<void>((resolve) => plain!.listen(0, '127.0.0.1', resolve));
      const port = (plain.address() as AddressInfo).port;

      const before = await get(port, '/readyz?verbose');
      assert.equal(before.status, 500, before.body);
      assert.match(before.body, /^\[-\]informer-sync failed: reason withheld$/m);
      assert.match(before.body, /^\[-\]poststarthook\/rbac\/bootstrap-roles failed: reason withheld$/m);
      assert.equal((await get(port, '/livez/poststarthook/bootstrap-controller')).status, 500);
      assert.equal((await get(port, '/healthz')).status, 500);

      await cp.start();
      const livez = await get(port, '/livez?verbose');
      assert.equal(livez.status, 200);
      assert.equal(livez.body, passedLines(['ping', 'log', 'etcd', ...POST_START_HOOKS], 'livez check passed'));
      const readyz = await get(port, '/readyz?verbose');
      assert.equal(readyz.body, passedLines(['ping', 'log', 'etcd', 'informer-sync', ...POST_START_HOOKS, 'shutdown'], 'readyz check passed'));
      assert.equal((await get(port, '/healthz?verbose')).body, passedLines(['ping', 'log', 'etcd', ...POST_START_HOOKS], 'healthz check passed'));
      const one = await get(port, '/readyz/poststarthook/rbac/bootstrap-roles');
      assert.deepEqual(one, { status: 200, body: 'ok' });
    } finally {
      plain?.close();
      await cp.stop();
    }
  });
});
