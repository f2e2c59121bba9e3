// The agent's API client on the wire: one HTTP/2 session for many concurrent requests, a new session
// after GOAWAY, HTTP/1.1 keep-alive where the server offers no h2, and a rotated client certificate
// presented on a new session (open watches end so they resume with it). Fake TLS servers signed by a
// test CA; the client against a real orch server is in client-protobuf.test.ts.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createSecureServer, type Http2ServerRequest, type Http2ServerResponse, type ServerHttp2Session } from 'node:http2';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { ApiClient, type WatchEvent } from '../../src/agent/client/client.js';
import { makeCA, makeClientCert, makeServingCert } from '../../src/server/certs.js';
import { eventually } from '../helpers/eventually.js';

interface Seen {
  version: string;
  path: string;
  cn: string;
  auth: string;
  accept: string;
}

type Handler = (req: Http2ServerRequest | IncomingMessage, res: Http2ServerResponse | ServerResponse) => void;

describe('agent API client: transport', () => {
  let ca: { cert: string; key: string };
  let serving: { cert: string; key: string };
  let clientA: { cert: string; key: string };
  let clientB: { cert: string; key: string };

  before(async () => {
    ca = await makeCA('transport-test-ca');
    serving = await makeServingCert(ca.cert, ca.key, 'localhost', ['127.0.0.1', 'localhost']);
    clientA = await makeClientCert({ caCert: ca.cert, caKey: ca.key, commonName: 'agent-a' });
    clientB = await makeClientCert({ caCert: ca.cert, caKey: ca.key, commonName: 'agent-b' });
  });

  const servers: { close(): void }[] = [];
  after(() => {
    for (const s of servers) s.close();
  });

  const record = (seen: Seen[], req: Http2ServerRequest | IncomingMessage): void => {
    const peer = (req.socket as TLSSocket).getPeerCertificate?.();
    seen.push({
      version: req.httpVersion,
      path: req.url ?? '',
      cn: typeof peer?.subject?.CN === 'string' ? peer.subject.CN : '',
      auth: String(req.headers.authorization ?? ''),
      accept: String(req.headers.accept ?? ''),
    });
  };

  const json = (res: Http2ServerResponse | ServerResponse, body: unknown): void => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };

  /** An h2 server (HTTP/1.1 allowed, as orch's) counting TLS connections and sessions. */
  async function h2Server(handler: Handler, maxConcurrentStreams?: number) {
    const seen: Seen[] = [];
    const sessions: ServerHttp2Session[] = [];
    let connections = 0;
    const settings = maxConcurrentStreams !== undefined ? { settings: { maxConcurrentStreams } } : {};
    const server = createSecureServer({ cert: serving.cert, key: serving.key, ca: ca.cert, requestCert: true, rejectUnauthorized: false, allowHTTP1: true, ...settings }, (req, res) => {
      record(seen, req);
      handler(req, res);
    });
    server.on('secureConnection', () => connections++);
    server.on('session', (s) => sessions.push(s));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    servers.push({ close: () => (sessions.forEach((s) => s.destroy()), server.close()) });
    return { url: `https://127.0.0.1:${(server.address() as { port: number }).port}`, seen, sessions, connections: () => connections };
  }

  it('sends concurrent requests on one HTTP/2 session, with token and content types', async () => {
    const s = await h2Server((req, res) => json(res, { kind: 'Pod', apiVersion: 'v1', metadata: { name: req.url } }));
    const api = new ApiClient({ server: s.url, ca: ca.cert, token: 'tok', contentType: 'application/vnd.kubernetes.protobuf' }, { qps: 0 });
    try {
      const got = await Promise.all(Array.from({ length: 50 }, (_, i) => api.get<{ metadata: { name: string } }>(`/api/v1/namespaces/ns/pods/p${i}`)));
      assert.equal(got[7]!.metadata.name, '/api/v1/namespaces/ns/pods/p7');
      assert.equal(api.protocol, 'h2');
      assert.equal(s.connections(), 1, 'one TLS connection for 50 concurrent requests');
      assert.equal(s.sessions.length, 1);
      assert.equal(api.sessionsOpened, 1);
      assert.ok(s.seen.every((x) => x.version === '2.0' && x.auth === 'Bearer tok' && x.accept === 'application/vnd.kubernetes.protobuf, application/json'));
      // a client with another rate limiter shares the session
      await api.withLimiter(0, 0).get('/api/v1/nodes/x');
      assert.equal(s.connections(), 1);
    } finally {
      api.close();
    }
  });

  it('opens a new session after GOAWAY and after the server closes the connection', async () => {
    let n = 0;
    const s = await h2Server((req, res) => {
      n++;
      const session = (req as Http2ServerRequest).stream.session;
      json(res, { n });
      if (n === 1) session?.goaway(); // no new streams on this session
      if (n === 2) setTimeout(() => session?.destroy(), 10); // the connection closes

    });
    const api = new ApiClient({ server: s.url, ca: ca.cert }, { qps: 0 });
    try {
      assert.deepEqual(await api.get('/a'), { n: 1 });
      assert.deepEqual(await api.get('/b'), { n: 2 });
      await new Promise((r) => setTimeout(r, 50));
      assert.deepEqual(await api.get('/c'), { n: 3 });
      assert.deepEqual([api.sessionsOpened, s.sessions.length, s.seen.map((x) => x.path)], [3, 3, ['/a', '/b', '/c']]);
    } finally {
      api.close();
    }
  });

  it('opens another session when the server\'s stream limit is reached (long watches do not block requests)', async () => {
    const s = await h2Server((req, res) => {
      if ((req.url ?? '').includes('watch=true')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        (res as ServerResponse).write(JSON.stringify({ type: 'ADDED', object: { metadata: { name: req.url } } }) + '\n'); // stays open
        return;
      }
      json(res, { ok: true });
    }, 2);
    const api = new ApiClient({ server: s.url, ca: ca.cert }, { qps: 0 });
    const watches = [];
    try {
      for (let i = 0; i < 3; i++) watches.push(await api.watch(`/api/v1/namespaces/ns${i}/configmaps`, {}, () => {}));
      assert.deepEqual(await api.get('/api/v1/nodes/n'), { ok: true });
      assert.equal(api.sessionsOpened, 2, 'two streams a session: the third watch and the request after it on a second one');
      assert.equal(s.connections(), 2);
      watches.shift()!.stop();
      watches.shift()!.stop();
      await new Promise((r) => setTimeout(r, 50));
      assert.deepEqual(await Promise.all([api.get('/a'), api.get('/b')]), [{ ok: true }, { ok: true }]);
      assert.equal(api.sessionsOpened, 2, 'room again on the first session: no third one');
    } finally {
      for (const w of watches) w.stop();
      api.close();
    }
  });

  it('falls back to HTTP/1.1 keep-alive where the server offers no h2', async () => {
    const seen: Seen[] = [];
    let connections = 0;
    const server: HttpsServer = createHttpsServer({ cert: serving.cert, key: serving.key }, (req, res) => {
      record(seen, req);
      json(res, { ok: req.url });
    });
    server.on('secureConnection', () => connections++);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    servers.push({ close: () => (server.closeAllConnections(), server.close()) });
    const api = new ApiClient({ server: `https://127.0.0.1:${(server.address() as { port: number }).port}`, ca: ca.cert, token: 't' }, { qps: 0 });
    try {
      for (let i = 0; i < 5; i++) assert.deepEqual(await api.get(`/x${i}`), { ok: `/x${i}` });
      assert.equal(api.protocol, 'http/1.1');
      assert.equal(api.sessionsOpened, 0);
      assert.ok(seen.every((x) => x.version === '1.1' && x.auth === 'Bearer t'));
      // one probe connection (ALPN) and then one kept-alive connection for five requests in a row
      assert.ok(connections <= 2, `${connections} connections`);
      await Promise.all(Array.from({ length: 10 }, (_, i) => api.get(`/y${i}`)));
      assert.equal(seen.length, 15);
    } finally {
      api.close();
    }
  });

  it('presents a rotated client certificate on a new session; open watches end and can resume with it', async () => {
    const s = await h2Server((req, res) => {
      if ((req.url ?? '').includes('watch=true')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        (res as ServerResponse).write(JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'w' } } }) + '\n'); // stays open
        return;
      }
      json(res, {});
    });
    const api = new ApiClient({ server: s.url, ca: ca.cert, cert: clientA.cert, key: clientA.key }, { qps: 0 });
    try {
      await api.get('/before');
      const events: WatchEvent[] = [];
      const w = await api.watch('/api/v1/pods', {}, (e) => events.push(e));
      await eventually('the first watch event', () => events.length === 1);
      api.setClientCertificate(clientB.cert, clientB.key);
      await w.done; // the watch's session was closed by the rotation
      await api.get('/after');
      const w2 = await api.watch('/api/v1/pods', {}, () => {});
      w2.stop();
      await w2.done;
      assert.deepEqual(
        s.seen.map((x) => `${x.path.split('?')[0]} ${x.cn} ${x.version}`),
        ['/before agent-a 2.0', '/api/v1/pods agent-a 2.0', '/after agent-b 2.0', '/api/v1/pods agent-b 2.0'],
      );
      assert.equal(api.sessionsOpened, 2);
    } finally {
      api.close();
    }
  });
});
