/**
 * The node agent's TLS bootstrap sends its CertificateSigningRequest in --orch-api-content-type: protobuf when
 * asked (the default of orchlet), JSON when not. Seen through a recording proxy in front of a real server.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bootstrapClientCert } from '../../src/agent/bootstrap.js';
import { startCluster, type TestCluster } from '../helpers/cluster.js';

describe('agent bootstrap: content type of the CSR', () => {
  let c: TestCluster;
  let proxy: Server;
  let proxyUrl = '';
  let dir = '';
  const posts: string[] = [];

  before(async () => {
    c = await startCluster();
    dir = mkdtempSync(join(tmpdir(), 'orch-pb-boot-'));
    const target = new URL(c.url);
    proxy = createServer((req, res) => {
      if (req.method === 'POST' && (req.url ?? '').includes('certificatesigningrequests')) posts.push(String(req.headers['content-type'] ?? ''));
      const up = httpsRequest(
        { host: target.hostname, port: target.port, path: req.url, method: req.method, headers: { ...req.headers, host: target.host }, ca: c.cp.server.caCert },
        (ur) => {
          res.writeHead(ur.statusCode ?? 502, ur.headers);
          ur.pipe(res);
        },
      );
      up.on('error', () => res.destroy());
      req.pipe(up);
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    proxyUrl = `http://127.0.0.1:${(proxy.address() as { port: number }).port}`;
  });
  after(async () => {
    proxy.closeAllConnections();
    await new Promise<void>((r) => proxy.close(() => r()));
    await c.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  for (const [contentType, expected] of [
    ['application/vnd.kubernetes.protobuf', 'application/vnd.kubernetes.protobuf'],
    [undefined, 'application/json'],
  ] as const) {
    it(`--orch-api-content-type ${contentType ?? '(unset)'}: the CSR is sent as ${expected}`, async () => {
      const sub = join(dir, contentType ? 'pb' : 'json');
      const bootstrapConfig = join(dir, `${contentType ? 'pb' : 'json'}-bootstrap.conf`);
      writeFileSync(
        bootstrapConfig,
        [
          'apiVersion: v1',
          'kind: Config',
          `clusters: [{name: c, cluster: {server: "${proxyUrl}"}}]`,
          `users: [{name: u, user: {token: "${c.token}"}}]`,
          'contexts: [{name: c, context: {cluster: c, user: u}}]',
          'current-context: c',
          '',
        ].join('\n'),
      );
      const before = posts.length;
      // Nobody approves the request: the bootstrap gives up soon; only the request matters here.
      await bootstrapClientCert({
        orchconfig: join(sub, 'orchconfig'),
        bootstrapOrchconfig: bootstrapConfig,
        certDir: join(sub, 'pki'),
        nodeName: contentType ? 'pb-node' : 'json-node',
        log: () => {},
        timeoutMs: 1500,
        ...(contentType ? { contentType } : {}),
      }).catch(() => undefined);
      assert.ok(posts.length > before, 'no CSR was posted');
      assert.equal(posts[before], expected);
    });
  }
});
