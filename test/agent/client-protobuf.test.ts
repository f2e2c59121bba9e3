/**
 * --orch-api-content-type: the agent's API client speaks Kubernetes protobuf to a real orch server (through a
 * recording proxy that shows what went over the wire): object bodies in protobuf, answers, lists, errors and
 * watch streams decoded from protobuf; patches stay JSON; with application/json nothing is protobuf.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, request as httpRequest, type Server } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { ApiClient, ApiError, type Json, type WatchEvent } from '../../src/agent/client/client.js';
import { startCluster, type TestCluster } from '../helpers/cluster.js';
import { eventually } from '../helpers/eventually.js';
import { decodeObject, encodeObject } from '../../src/util/protobuf.js';

interface Seen {
  method: string;
  path: string;
  contentType: string;
  accept: string;
  answered: string;
}

describe('agent API client: protobuf', () => {
  let c: TestCluster;
  let proxy: Server;
  let proxyUrl = '';
  const seen: Seen[] = [];

  before(async () => {
    c = await startCluster();
    const target = new URL(c.url);
    proxy = createServer((req, res) => {
      const entry: Seen = {
        method: req.method ?? '',
        path: req.url ?? '',
        contentType: String(req.headers['content-type'] ?? ''),
        accept: String(req.headers['accept'] ?? ''),
        answered: '',
      };
      seen.push(entry);
      const up = httpsRequest(
        { host: target.hostname, port: target.port, path: req.url, method: req.method, headers: { ...req.headers, host: target.host }, ca: c.cp.server.caCert },
        (ur) => {
          entry.answered = String(ur.headers['content-type'] ?? '');
          res.writeHead(ur.statusCode ?? 502, ur.headers);
          res.flushHeaders(); // a watch answers its headers before any event
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
    for (const api of clients) api.close();
    proxy.closeAllConnections();
    await new Promise<void>((r) => proxy.close(() => r()));
    await c.stop();
  });

  const clients: ApiClient[] = [];
  const client = (contentType: string) => {
    const api = new ApiClient({ server: proxyUrl, token: c.token, contentType }, { qps: 0, burst: 0 });
    clients.push(api);
    return api;
  };
  const last = (method: string, path: RegExp) => [...seen].reverse().find((s) => s.method === method && path.test(s.path))!;

  it('creates, reads, lists, patches, updates and deletes in protobuf', async () => {
    const api = client('application/vnd.orch.protobuf');
    const node = await api.create<Json>('/api/v1/nodes', {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: 'pb-node', labels: { 'kubernetes.io/hostname': 'pb-node' } },
      spec: { taints: [{ key: 'k', value: 'v', effect: 'NoSchedule' }] },
    });
    assert.equal((node.metadata as Json).name, 'pb-node');
    let s = last('POST', /^\/api\/v1\/nodes$/);
    assert.equal(s.contentType, 'application/vnd.kubernetes.protobuf');
    assert.match(s.accept, /^application\/vnd\.kubernetes\.protobuf, application\/json$/);
    assert.equal(s.answered, 'application/vnd.kubernetes.protobuf');

    const got = await api.get<Json>('/api/v1/nodes/pb-node');
    assert.deepEqual(((got.spec as Json).taints as Json[])[0], { key: 'k', value: 'v', effect: 'NoSchedule' });
    assert.equal(last('GET', /^\/api\/v1\/nodes\/pb-node$/).answered, 'application/vnd.kubernetes.protobuf');

    const list = await api.get<Json>('/api/v1/nodes');
    assert.equal(list.kind, 'NodeList');
    assert.ok((list.items as Json[]).some((n) => (n.metadata as Json).name === 'pb-node'));

    // A strategic-merge patch of the status is JSON on the way in, protobuf on the way out.
    const patched = await api.patch<Json>('/api/v1/nodes/pb-node/status', { status: { conditions: [{ type: 'Ready', status: 'True', reason: 'R' }] } });
    s = last('PATCH', /\/status$/);
    assert.equal(s.contentType, 'application/strategic-merge-patch+json');
    assert.equal(s.answered, 'application/vnd.kubernetes.protobuf');
    assert.equal(((patched.status as Json).conditions as Json[])[0]!.reason, 'R');

    const current = await api.get<Json>('/api/v1/nodes/pb-node');
    const updated = await api.update<Json>('/api/v1/nodes/pb-node', { ...current, metadata: { ...(current.metadata as Json), labels: { a: 'b' } } });
    assert.deepEqual((updated.metadata as Json).labels, { a: 'b' });
    assert.equal(last('PUT', /^\/api\/v1\/nodes\/pb-node$/).contentType, 'application/vnd.kubernetes.protobuf');

    // A Lease (coordination.k8s.io) with MicroTime fields.
    await api.create('/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'kube-node-lease' } }).catch(() => undefined);
    const lease = await api.create<Json>('/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases', {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: 'pb-node' },
      spec: { holderIdentity: 'pb-node', leaseDurationSeconds: 40, renewTime: '2024-01-02T03:04:05.123456Z' },
    });
    assert.equal((lease.spec as Json).renewTime, '2024-01-02T03:04:05.123456Z');

    // Errors come back as a protobuf Status.
    await assert.rejects(api.get('/api/v1/nodes/missing'), (err: unknown) => err instanceof ApiError && err.code === 404 && err.reason === 'NotFound' && /"missing" not found/.test(err.message));
    assert.equal(last('GET', /missing$/).answered, 'application/vnd.kubernetes.protobuf');

    await api.delete('/api/v1/nodes/pb-node', { gracePeriodSeconds: 0 });
    assert.equal(last('DELETE', /pb-node$/).contentType, 'application/vnd.kubernetes.protobuf');
    await assert.rejects(api.get('/api/v1/nodes/pb-node'), (err: unknown) => err instanceof ApiError && err.code === 404);
  });

  it('watches in protobuf framing', async () => {
    const api = client('application/vnd.kubernetes.protobuf');
    await api.create('/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'pbw' } });
    const list = await api.get<Json>('/api/v1/namespaces/pbw/configmaps');
    const events: WatchEvent[] = [];
    const w = await api.watch('/api/v1/namespaces/pbw/configmaps', { resourceVersion: (list.metadata as Json).resourceVersion as string }, (e) => events.push(e));
    try {
      assert.equal(last('GET', /watch=true/).answered, 'application/vnd.kubernetes.protobuf;stream=watch');
      await api.create('/api/v1/namespaces/pbw/configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c1' }, data: { k: 'v' } });
      await api.delete('/api/v1/namespaces/pbw/configmaps/c1');
      await eventually(() => `ADDED and DELETED (got ${events.map((e) => e.type).join(',')})`, () => events.length >= 2);
      assert.deepEqual(events.map((e) => e.type), ['ADDED', 'DELETED']);
      assert.equal(events[0]!.object.kind, 'ConfigMap');
      assert.deepEqual(events[0]!.object.data, { k: 'v' });
    } finally {
      w.stop();
    }
  });

  it('the server reads a body sent as application/vnd.orch.protobuf', async () => {
    const body = encodeObject({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'orch-spelling' }, data: { a: 'b' } });
    const answer = await new Promise<{ status: number; body: Buffer }>((resolve, reject) => {
      const req = httpRequest(
        `${proxyUrl}/api/v1/namespaces/pbw/configmaps`,
        { method: 'POST', headers: { authorization: `Bearer ${c.token}`, 'content-type': 'application/vnd.orch.protobuf', accept: 'application/vnd.kubernetes.protobuf' } },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (d: Buffer) => chunks.push(d));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
        },
      );
      req.on('error', reject);
      req.end(body);
    });
    assert.equal(answer.status, 201);
    assert.deepEqual(decodeObject(answer.body)['data'], { a: 'b' });
  });

  it('straight to the server: one HTTP/2 session carries protobuf requests, answers and a watch', async () => {
    const api = new ApiClient({ server: c.url, ca: c.cp.server.caCert, token: c.token, contentType: 'application/vnd.kubernetes.protobuf' }, { qps: 0, burst: 0 });
    clients.push(api);
    await api.create('/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'h2' } });
    const events: WatchEvent[] = [];
    const w = await api.watch('/api/v1/namespaces/h2/configmaps', {}, (e) => events.push(e));
    try {
      await Promise.all(Array.from({ length: 20 }, (_, i) => api.create('/api/v1/namespaces/h2/configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `c${i}` }, data: { i: String(i) } })));
      const got = await api.get<Json>('/api/v1/namespaces/h2/configmaps/c7');
      assert.deepEqual(got.data, { i: '7' });
      await api.patch('/api/v1/namespaces/h2/configmaps/c7', { data: { i: 'seven' } }, 'merge');
      const modified = () => events.find((e) => e.type === 'MODIFIED' && (e.object.metadata as Json).name === 'c7');
      await eventually(() => `c7 MODIFIED (got ${events.length} events)`, modified);
      assert.deepEqual(modified()!.object.data, { i: 'seven' });
      assert.equal(events.filter((e) => e.type === 'ADDED' && /^c\d+$/.test(String((e.object.metadata as Json).name))).length, 20);
      assert.equal(api.protocol, 'h2');
      assert.equal(api.sessionsOpened, 1);
    } finally {
      w.stop();
    }
  });

  it('with application/json nothing is protobuf', async () => {
    const api = client('application/json');
    await api.create('/api/v1/namespaces/pbw/configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'j' } });
    const s = last('POST', /configmaps$/);
    assert.equal(s.contentType, 'application/json');
    assert.equal(s.accept, 'application/json');
    assert.match(s.answered, /^application\/json/);
  });
});
