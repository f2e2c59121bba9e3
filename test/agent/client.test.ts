// The agent's API client pieces against a fake API server over plain HTTP: kubeconfig resolution, the
// token bucket, errors as ApiError, and the reflector's list, watch, resumption and re-list on 410.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiClient, ApiError, type Json } from '../../src/agent/client/client.js';
import { loadKubeconfig } from '../../src/agent/client/kubeconfig.js';
import { TokenBucket } from '../../src/agent/client/ratelimit.js';
import { Reflector } from '../../src/agent/client/reflector.js';
import { waitFor } from './runtime-contract.js';

async function fakeServer(handler: (req: IncomingMessage, res: ServerResponse, url: URL) => void) {
  const requests: string[] = [];
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    requests.push(`${req.method} ${url.pathname}${url.search}`);
    handler(req, res, url);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}

const pod = (name: string, rv: string): Json => ({ metadata: { name, namespace: 'default', resourceVersion: rv } });

void describe('agent API client', () => {
  void it('resolves a kubeconfig: current context, data fields, files relative to it', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'orchlet-kc-'));
    try {
      await writeFile(join(dir, 'token'), 'file-token\n');
      await writeFile(join(dir, 'ca.crt'), 'CA PEM');
      await writeFile(
        join(dir, 'config'),
        [
          'apiVersion: v1',
          'kind: Config',
          'current-context: b',
          'clusters:',
          '- {name: c1, cluster: {server: "https://one:6443/", certificate-authority: ca.crt}}',
          `- {name: c2, cluster: {server: "https://two:6443", certificate-authority-data: ${Buffer.from('DATA PEM').toString('base64')}, insecure-skip-tls-verify: true}}`,
          'users:',
          '- {name: u1, user: {tokenFile: token}}',
          '- {name: u2, user: {token: inline}}',
          'contexts:',
          '- {name: a, context: {cluster: c2, user: u2}}',
          '- {name: b, context: {cluster: c1, user: u1}}',
        ].join('\n'),
      );
      assert.deepEqual(await loadKubeconfig(join(dir, 'config')), { server: 'https://one:6443', ca: 'CA PEM', token: 'file-token' });
      await assert.rejects(loadKubeconfig(join(dir, 'missing')), /kubeconfig .*missing: ENOENT/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  void it('token bucket: burst at once, then qps per second', async () => {
    let now = 0;
    const b = new TokenBucket(10, 3, () => now);
    for (let i = 0; i < 3; i++) await b.take();
    let got = false;
    const p = b.take().then(() => (got = true));
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(got, false, 'the fourth request waits');
    now = 100; // one token after 1/qps seconds
    await p;
    assert.equal(got, true);
    const unlimited = new TokenBucket(0, 0, () => now);
    for (let i = 0; i < 1000; i++) await unlimited.take();
  });

  void it('answers errors as ApiError with the Status', async () => {
    const s = await fakeServer((_req, res) => {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotFound', code: 404, message: 'pods "x" not found' }));
    });
    try {
      const client = new ApiClient({ server: s.url }, { qps: 0 });
      const err = await client.get('/api/v1/namespaces/default/pods/x').catch((e: unknown) => e);
      assert.ok(err instanceof ApiError);
      assert.equal(err.code, 404);
      assert.equal(err.reason, 'NotFound');
      assert.equal(err.message, 'pods "x" not found');
      client.close();
    } finally {
      await s.close();
    }
  });

  void it('reflector: lists, watches from the list, resumes after a watch ends, re-lists on 410', async () => {
    let watches = 0;
    let lists = 0;
    const s = await fakeServer((_req, res, url) => {
      res.setHeader('content-type', 'application/json');
      if (url.searchParams.get('watch') !== 'true') {
        lists++;
        const items = lists === 1 ? [pod('a', '5')] : [pod('a', '5'), pod('c', '20')];
        res.end(JSON.stringify({ kind: 'PodList', metadata: { resourceVersion: lists === 1 ? '5' : '20' }, items }));
        return;
      }
      watches++;
      if (watches === 1) {
        res.write(JSON.stringify({ type: 'ADDED', object: pod('b', '6') }) + '\n');
        res.write(JSON.stringify({ type: 'BOOKMARK', object: { metadata: { resourceVersion: '7' } } }) + '\n');
        res.end(); // the server ended the watch: resume from 7
      } else if (watches === 2) {
        res.end(JSON.stringify({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version' } }) + '\n');
      } else {
        res.write(JSON.stringify({ type: 'DELETED', object: pod('a', '21') }) + '\n'); // stays open
      }
    });
    const client = new ApiClient({ server: s.url }, { qps: 0 });
    const snapshots: string[][] = [];
    const deletedNames: string[] = [];
    const r = new Reflector<Json>(client, {
      path: '/api/v1/pods',
      fieldSelector: 'spec.nodeName=n1',
      onChange: (items, deleted) => {
        snapshots.push([...items.keys()].sort());
        for (const d of deleted) deletedNames.push(String((d.metadata as Json).name));
      },
    });
    try {
      await r.start();
      await waitFor('the third watch', () => (watches >= 3 && snapshots.at(-1)?.join() === 'default/c' ? true : undefined));
      assert.deepEqual(snapshots[0], ['default/a']);
      assert.ok(snapshots.some((x) => x.join() === 'default/a,default/b'), 'the watched ADDED pod');
      assert.ok(snapshots.some((x) => x.join() === 'default/a,default/c'), 're-listed after 410: b is gone, c appeared');
      assert.deepEqual(deletedNames, ['b', 'a']);
      const watchRequests = s.requests.filter((q) => q.includes('watch=true'));
      assert.match(watchRequests[0]!, /resourceVersion=5/);
      assert.match(watchRequests[1]!, /resourceVersion=7/, 'resumed from the bookmark');
      assert.match(watchRequests[2]!, /resourceVersion=20/, 'the re-list\'s version');
      assert.ok(s.requests.every((q) => q.includes('fieldSelector=spec.nodeName%3Dn1')));
    } finally {
      r.stop();
      client.close();
      await s.close();
    }
  });
});
