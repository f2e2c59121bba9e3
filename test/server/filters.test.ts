import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect as h2connect, createSecureServer, type ClientHttp2Session } from 'node:http2';
import { request as httpsRequest } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildHandlerChain, createApiServer, type ApiServer, type ServerConfig } from '../../src/server/server.js';
import { makeCA, makeServingCert } from '../../src/server/certs.js';
import { unionAuthenticator, type Handler } from '../../src/filters/authn.js';
import { withProbabilisticGoaway } from '../../src/filters/goaway.js';
import { RequestWaitGroup } from '../../src/filters/shutdown.js';
import { parseServerOptions } from '../../src/server/options.js';
import { serverConfigFrom } from '../../src/server/controlplane.js';
import { eventually } from '../helpers/eventually.js';

const TOKEN = 'filters-token';
const ADMIN_TOKEN = 'admin-token';

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

interface Req {
  method?: string;
  token?: string | null;
  headers?: Record<string, string>;
}

function h1(server: ApiServer, path: string, o: Req = {}): Promise<Reply> {
  const token = o.token === undefined ? TOKEN : o.token;
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      new URL(path, server.url),
      {
        ca: server.caCert,
        agent: false,
        method: o.method ?? 'GET',
        headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...o.headers },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

function h2(session: ClientHttp2Session, path: string, o: Req = {}): Promise<Reply> {
  const token = o.token === undefined ? TOKEN : o.token;
  return new Promise((resolve, reject) => {
    const req = session.request({
      ':path': path,
      ':method': o.method ?? 'GET',
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...o.headers,
    });
    let status = 0;
    let headers: Reply['headers'] = {};
    let body = '';
    req.setEncoding('utf8');
    req.on('response', (h) => {
      status = Number(h[':status']);
      headers = h;
    });
    req.on('data', (c: string) => (body += c));
    req.on('end', () => resolve({ status, headers, body }));
    req.on('error', reject);
    req.end();
  });
}

/** A handler that answers only when released. */
function gate(): { handler: Handler; release: () => void; waiting: () => number } {
  let waiters: (() => void)[] = [];
  return {
    handler: async (_req, res) => {
      await new Promise<void>((r) => waiters.push(r));
      res.setHeader('Content-Type', 'text/plain');
      res.end('released');
    },
    release: () => {
      for (const w of waiters) w();
      waiters = [];
    },
    waiting: () => waiters.length,
  };
}


void describe('handler chain filters', () => {
  let dir: string;
  const servers: ApiServer[] = [];

  function config(extra: Partial<ServerConfig> = {}): ServerConfig {
    return {
      bindAddress: '127.0.0.1',
      securePort: 0,
      certDir: join(dir, 'certs'),
      tokenAuthFile: join(dir, 'tokens.csv'),
      anonymousAuth: false,
      authorizationModes: ['AlwaysAllow'],
      versionInfo: () => ({ gitVersion: 'v0' }),
      logger: () => {},
      ...extra,
    };
  }

  async function serve(extra: Partial<ServerConfig>, setup?: (s: ApiServer) => void): Promise<ApiServer> {
    const s = await createApiServer(config(extra));
    servers.push(s);
    setup?.(s);
    await s.start();
    return s;
  }

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'orch-filters-'));
    await writeFile(join(dir, 'tokens.csv'), `${TOKEN},alice,1\n${ADMIN_TOKEN},admin,2,system:masters\n`);
  });
  after(async () => {
    for (const s of servers) await s.stop();
    await rm(dir, { recursive: true, force: true });
  });

  void it('lists every filter in kube-apiserver order', () => {
    const names: string[] = [];
    buildHandlerChain(
      () => {},
      {
        authenticator: unionAuthenticator([]),
        anonymous: false,
        logger: () => {},
        goawayChance: 0.01,
        waitGroup: new RequestWaitGroup(),
        notAcceptingNewRequests: () => false,
      },
      (n) => names.push(n),
    );
    assert.deepEqual(names.reverse(), [
      'auditID',
      'panicRecovery',
      'requestInfo',
      'retryAfter',
      'hsts',
      'probabilisticGoaway',
      'waitGroup',
      'requestDeadline',
      'timeoutForNonLongRunningRequests',
      'cors',
      'authentication',
      'impersonation',
      'maxInFlightLimit',
      'authorization',
    ]);
  });

  void describe('--strict-transport-security-directives', () => {
    // The directives on every response (a 401, HTTP/2): test/server/options-binary.test.ts, on the binary.
    void it('refuses invalid directives with the Kubernetes message', async () => {
      await assert.rejects(createApiServer(config({ hstsDirectives: ['max-age'] })), /--strict-transport-security-directives invalid, allowed values/);
      assert.throws(() => parseServerOptions(['--strict-transport-security-directives=max-age=1,bogus']), /--strict-transport-security-directives/);
      const o = parseServerOptions(['--strict-transport-security-directives=max-age=1,preload']);
      assert.deepEqual(serverConfigFrom(o).hstsDirectives, ['max-age=1', 'preload']);
    });
  });

  void describe('--cors-allowed-origins', () => {
    // The headers for matching origins, preflights and other origins: test/server/options-binary.test.ts, on the binary.
    void it('refuses an invalid regular expression, naming the option', async () => {
      await assert.rejects(createApiServer(config({ corsAllowedOrigins: ['('] })), /--cors-allowed-origins: invalid regular expression "\("/);
      assert.throws(() => parseServerOptions(['--cors-allowed-origins=(']), /--cors-allowed-origins/);
    });
  });

  void describe('--max-requests-inflight and --max-mutating-requests-inflight', () => {
    void it('answers 429 with Retry-After: 1 over the limit, per kind, exempting watches and system:masters', async () => {
      const g = gate();
      const s = await serve({ maxRequestsInflight: 1, maxMutatingRequestsInflight: 1 }, (srv) => {
        srv.mux.handle('/slow', g.handler);
        srv.mux.handlePrefix('/api/v1/', g.handler);
      });
      const first = h1(s, '/slow');
      await eventually('1 waiting', () => g.waiting() === 1, { intervalMs: 5 });
      const over = await h1(s, '/version');
      assert.equal(over.status, 429);
      assert.equal(over.headers['retry-after'], '1');
      assert.equal(over.headers['content-type'], 'text/plain; charset=utf-8');
      assert.equal(over.body, 'Too many requests, please try again later.\n');
      // A mutating request has its own limit; a watch is never limited; system:masters always gets through.
      const post = h1(s, '/slow', { method: 'POST' });
      const watch = h1(s, '/api/v1/namespaces?watch=true');
      const admin = h1(s, '/slow', { token: ADMIN_TOKEN });
      await eventually('4 waiting', () => g.waiting() === 4, { intervalMs: 5 });
      const postOver = await h1(s, '/slow', { method: 'DELETE' });
      assert.equal(postOver.status, 429);
      g.release();
      for (const r of await Promise.all([first, post, watch, admin])) assert.equal(r.status, 200);
      assert.equal((await h1(s, '/version')).status, 200);
    });

    void it('with priority and fairness, applies the sum as one limit; 0 disables', async () => {
      const g = gate();
      const s = await serve({ maxRequestsInflight: 1, maxMutatingRequestsInflight: 1, enablePriorityAndFairness: true }, (srv) =>
        srv.mux.handle('/slow', g.handler),
      );
      const a = h1(s, '/slow');
      const b = h1(s, '/slow');
      await eventually('2 waiting', () => g.waiting() === 2, { intervalMs: 5 });
      assert.equal((await h1(s, '/slow', { method: 'POST' })).status, 429);
      g.release();
      await Promise.all([a, b]);

      const g2 = gate();
      const off = await serve({ maxRequestsInflight: 0, maxMutatingRequestsInflight: 0 }, (srv) => srv.mux.handle('/slow', g2.handler));
      const many = [1, 2, 3].map(() => h1(off, '/slow'));
      await eventually('3 waiting', () => g2.waiting() === 3, { intervalMs: 5 });
      assert.equal((await h1(off, '/version')).status, 200);
      g2.release();
      await Promise.all(many);
    });
  });

  void describe('--request-timeout', () => {
    const TIMEOUT_BODY = {
      metadata: {},
      status: 'Failure',
      message: 'Timeout: request did not complete within the allotted timeout',
      reason: 'Timeout',
      details: {},
      code: 504,
    };

    void it('answers a non-long-running request 504 after the timeout, keeping outer headers only', async () => {
      const g = gate();
      const s = await serve({ requestTimeoutMs: 150, hstsDirectives: ['max-age=5'], corsAllowedOrigins: ['.*'] }, (srv) => {
        srv.mux.handle('/slow', async (req, res) => {
          res.setHeader('X-Handler', 'set');
          await g.handler(req, res);
        });
        srv.mux.handlePrefix('/api/v1/', g.handler);
      });
      const started = Date.now();
      const r = await h1(s, '/slow', { headers: { origin: 'https://x.test' } });
      assert.ok(Date.now() - started >= 140);
      assert.equal(r.status, 504);
      assert.deepEqual(JSON.parse(r.body), TIMEOUT_BODY);
      assert.equal(r.headers['content-type'], 'text/plain; charset=utf-8');
      assert.equal(r.headers['strict-transport-security'], 'max-age=5');
      assert.equal(r.headers['access-control-allow-origin'], undefined);
      assert.equal(r.headers['x-handler'], undefined);

      // A watch is long-running: no timeout.
      const watch = h1(s, '/api/v1/namespaces?watch=1');
      await new Promise((res) => setTimeout(res, 250));
      g.release();
      assert.equal((await watch).status, 200);
    });

    void it('honours a shorter ?timeout= and rejects a malformed one with 400', async () => {
      const g = gate();
      const s = await serve({ requestTimeoutMs: 10_000 }, (srv) => srv.mux.handle('/slow', g.handler));
      const started = Date.now();
      const r = await h1(s, '/slow?timeout=100ms');
      assert.equal(r.status, 504);
      assert.ok(Date.now() - started < 5000);
      const bad = await h1(s, '/slow?timeout=soon');
      assert.equal(bad.status, 400);
      assert.deepEqual(JSON.parse(bad.body), {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: 'invalid timeout specified in the request URL - time: invalid duration "soon"',
        reason: 'BadRequest',
        code: 400,
      });
      g.release();
    });

    void it('resets the HTTP/2 stream when the handler had already started answering', async () => {
      const s = await serve({ requestTimeoutMs: 100 }, (srv) =>
        srv.mux.handle('/half', (_req, res) => {
          res.writeHead(200, { 'content-type': 'text/plain' });
          (res as { write(chunk: string): boolean }).write('partial');
          return new Promise<void>((r) => setTimeout(r, 400)).then(() => void res.end('late'));
        }),
      );
      const session = h2connect(s.url, { ca: s.caCert });
      try {
        await assert.rejects(h2(session, '/half'), /NGHTTP2_INTERNAL_ERROR|stream error/i);
        await new Promise((r) => setTimeout(r, 400));
        assert.equal((await h2(session, '/version')).status, 200);
      } finally {
        session.close();
      }
    });
  });

  void describe('--goaway-chance', () => {
    void it('sends GOAWAY after the chosen HTTP/2 response, which still completes (injected random)', async () => {
      const ca = await makeCA('goaway-ca');
      const cert = await makeServingCert(ca.cert, ca.key, 'localhost', ['127.0.0.1']);
      const draws = [0.9, 0.5, 0.001, 0.9];
      let served = 0;
      const h = withProbabilisticGoaway(
        (_req, res) => {
          served++;
          res.end(`response ${served}`);
        },
        { chance: 0.02, random: () => draws.shift() ?? 0.9 },
      );
      const server = createSecureServer({ cert: cert.cert, key: cert.key, allowHTTP1: true }, (req, res) => void h(req, res));
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const session = h2connect(url, { ca: ca.cert });
      let goaways = 0;
      session.on('goaway', () => goaways++);
      try {
        assert.equal((await h2(session, '/', { token: null })).body, 'response 1');
        assert.equal((await h2(session, '/', { token: null })).body, 'response 2');
        assert.equal(goaways, 0);
        assert.equal((await h2(session, '/', { token: null })).body, 'response 3');
        await eventually('a GOAWAY', () => goaways === 1, { intervalMs: 5 });
        const next = h2connect(url, { ca: ca.cert });
        assert.equal((await h2(next, '/', { token: null })).body, 'response 4');
        next.close();
      } finally {
        session.destroy();
        await new Promise((r) => server.close(r));
      }
    });

    // An HTTP/2 client sent GOAWAY now and then at 0.02: test/server/options-binary.test.ts, on the binary.
    void it('refuses a chance over 0.02 at the server value', async () => {
      await assert.rejects(createApiServer(config({ goawayChance: 0.5 })), /--goaway-chance can not be less than 0 or greater than 0.02/);
    });
  });

  // A value given is offered as it is: test/server/options-binary.test.ts, on the binary.
  void it('offers --http2-max-streams-per-connection=0 to clients as 250', async () => {
    for (const [value, expected] of [[0, 250]] as const) {
      const s = await serve({ http2MaxStreamsPerConnection: value });
      const session = h2connect(s.url, { ca: s.caCert });
      const settings = await new Promise<{ maxConcurrentStreams?: number }>((r) => session.once('remoteSettings', r));
      assert.equal(settings.maxConcurrentStreams, expected);
      session.close();
    }
  });

  void describe('--shutdown-send-retry-after', () => {
    void it('after the delay, answers new requests 429 with Retry-After and Connection: close until in-flight ones drain', async () => {
      const g = gate();
      const s = await createApiServer(config({ shutdownSendRetryAfter: true, shutdownDelayMs: 100 }));
      s.mux.handle('/slow', g.handler);
      await s.start();
      const inflight = h1(s, '/slow');
      await eventually('1 waiting', () => g.waiting() === 1, { intervalMs: 5 });
      let stopped = false;
      const stopping = s.stop().then(() => (stopped = true));
      await new Promise((r) => setTimeout(r, 200));
      const rejected = await h1(s, '/version');
      assert.equal(rejected.status, 429);
      assert.equal(rejected.headers['retry-after'], '5');
      assert.equal(rejected.headers.connection, 'close');
      assert.equal(rejected.body, 'The apiserver is shutting down, please try again later.\n');
      const session = h2connect(s.url, { ca: s.caCert });
      const overH2 = await h2(session, '/version');
      assert.equal(overH2.status, 429);
      session.close();
      // Health checks stay exempt.
      assert.equal((await h1(s, '/livez')).status, 200);
      assert.equal((await h1(s, '/readyz')).status, 500);
      assert.equal(stopped, false);
      g.release();
      assert.equal((await inflight).status, 200);
      await stopping;
    });

    void it('without it, the listener closes right after the delay', async () => {
      const s = await createApiServer(config({ shutdownDelayMs: 50 }));
      await s.start();
      await s.stop();
      await assert.rejects(h1(s, '/version'), /ECONNREFUSED/);
    });
  });

  void describe('listening options', () => {
    void it('--permit-port-sharing fails at startup on a Node.js without reusePort', async (t) => {
      const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
      if (major > 23 || (major === 23 && minor >= 1) || (major === 22 && minor >= 12)) {
        const a = await serve({ permitPortSharing: true });
        const b = await serve({ permitPortSharing: true, securePort: a.port });
        assert.equal(b.port, a.port);
        return;
      }
      t.diagnostic(`Node.js ${process.versions.node} has no reusePort`);
      await assert.rejects(createApiServer(config({ permitPortSharing: true })), /--permit-port-sharing: SO_REUSEPORT needs Node.js 22.12\+ or 23.1\+/);
    });

    // --permit-address-sharing: test/server/options-binary.test.ts, on the binary.
    void it('--external-hostname sets the external address', async () => {
      const s = await serve({ externalHostname: 'api.example.com' });
      assert.equal(s.externalAddress, `api.example.com:${s.port}`);
      const o = parseServerOptions(['--external-hostname=api.example.com', '--advertise-address=10.0.0.1']);
      assert.equal(serverConfigFrom(o).externalHostname, 'api.example.com');
      const fallback = await serve({ advertiseAddress: '10.9.8.7' });
      assert.equal(fallback.externalAddress, `10.9.8.7:${fallback.port}`);
    });
  });
});
