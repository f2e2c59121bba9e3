import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createServer as createHttpServer, request as httpRequest, type Server as HttpServer } from 'node:http';
import { connect as h2connect } from 'node:http2';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createApiServer, type ApiServer, type ServerConfig } from '../../src/server/server.js';
import { ensureServingCert, makeCA, makeClientCert, type CertAndKey } from '../../src/server/certs.js';
import {
  UNAUTHORIZED_STATUS,
  getUser,
  loadTokenFile,
  parseTokenFile,
  tokenAuthenticator,
  unionAuthenticator,
  withAuthentication,
} from '../../src/filters/authn.js';

const run = promisify(execFile);

const TOKEN = 'secret-token-1';
const VERSION = {
  major: '1',
  minor: '22',
  gitVersion: 'v1.22.0-orch.test',
  gitCommit: '0000000000000000000000000000000000000000',
  gitTreeState: 'clean',
  buildDate: '2024-01-01T00:00:00Z',
  goVersion: 'go1.16.15',
  compiler: 'gc',
  platform: 'linux/amd64',
};
const NOT_FOUND = {
  kind: 'Status',
  apiVersion: 'v1',
  metadata: {},
  status: 'Failure',
  message: 'the server could not find the requested resource',
  reason: 'NotFound',
  details: {},
  code: 404,
};

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  httpVersion: string;
}

interface ClientOptions {
  ca: string;
  token?: string;
  client?: CertAndKey;
  headers?: Record<string, string>;
}

function authHeaders(o: ClientOptions): Record<string, string> {
  return { ...(o.token ? { authorization: `Bearer ${o.token}` } : {}), ...o.headers };
}

/** GET over HTTP/2 (a fresh session per call). */
function h2get(url: string, path: string, o: ClientOptions): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const session = h2connect(url, { ca: o.ca, ...(o.client ? { cert: o.client.cert, key: o.client.key } : {}) });
    session.on('error', reject);
    const req = session.request({ ':path': path, ...authHeaders(o) });
    let status = 0;
    let headers: Reply['headers'] = {};
    let body = '';
    req.setEncoding('utf8');
    req.on('response', (h) => {
      status = Number(h[':status']);
      headers = h;
    });
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      session.close();
      resolve({ status, headers, body, httpVersion: '2.0' });
    });
    req.on('error', reject);
    req.end();
  });
}

/** GET over HTTP/1.1 (no ALPN h2 offered by node:https). */
function h1get(url: string, path: string, o: ClientOptions): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      new URL(path, url),
      { ca: o.ca, agent: false, headers: authHeaders(o), ...(o.client ? { cert: o.client.cert, key: o.client.key } : {}) },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body, httpVersion: res.httpVersion }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

const BOTH = [
  ['HTTP/2', h2get],
  ['HTTP/1.1', h1get],
] as const;

function hasCommand(cmd: string, args: string[]): boolean {
  try {
    execFileSync(cmd, args, { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
const KUBECTL = hasCommand('kubectl', ['version', '--client']);
const CURL = hasCommand('curl', ['--version']);

async function baseConfig(dir: string, logs: string[]): Promise<ServerConfig> {
  return {
    bindAddress: '127.0.0.1',
    securePort: 0,
    certDir: join(dir, 'certs'),
    anonymousAuth: true,
    authorizationModes: ['AlwaysAllow'],
    versionInfo: () => VERSION,
    logger: (m) => logs.push(m),
  };
}

void describe('API server serving', () => {
  let dir: string;
  let server: ApiServer;
  let testCA: CertAndKey;
  let otherCA: CertAndKey;
  const logs: string[] = [];

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'orch-serving-'));
    testCA = await makeCA('orch-test-client-ca');
    otherCA = await makeCA('someone-else');
    await writeFile(join(dir, 'client-ca.pem'), testCA.cert);
    await writeFile(join(dir, 'tokens.csv'), `${TOKEN},alice,uid-alice,"dev,ops"\n\nother-token,bob,uid-bob\n`);
    server = await createApiServer({
      ...(await baseConfig(dir, logs)),
      tokenAuthFile: join(dir, 'tokens.csv'),
      clientCaFile: join(dir, 'client-ca.pem'),
    });
    server.mux.handle('/whoami', (req, res) => {
      res.setHeader('Content-Type', 'application/json');
      res.end(JSON.stringify(getUser(req)));
    });
    await server.start();
  });

  after(async () => {
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  });

  void it('warns that AlwaysAllow turns anonymous auth off, and serves on the bound port', () => {
    assert.ok(logs.includes('AnonymousAuth is not allowed with the AlwaysAllow authorizer. Resetting AnonymousAuth to false.'));
    assert.match(server.url, /^https:\/\/127\.0\.0\.1:\d+$/);
    assert.notEqual(server.port, 0);
  });

  for (const [proto, get] of BOTH) {
    void it(`${proto}: a request without credentials gets the 401 Status, even on /healthz`, async () => {
      for (const path of ['/readyz', '/healthz', '/version', '/nope']) {
        const r = await get(server.url, path, { ca: server.caCert });
        assert.equal(r.status, 401, path);
        assert.equal(r.headers['content-type'], 'application/json');
        assert.deepEqual(JSON.parse(r.body), UNAUTHORIZED_STATUS);
        assert.deepEqual(JSON.parse(r.body), {
          kind: 'Status',
          apiVersion: 'v1',
          metadata: {},
          status: 'Failure',
          message: 'Unauthorized',
          reason: 'Unauthorized',
          code: 401,
        });
      }
    });

    void it(`${proto}: a token from the token file is authenticated; an unknown one is 401`, async () => {
      const ok = await get(server.url, '/readyz', { ca: server.caCert, token: TOKEN });
      assert.equal(ok.status, 200);
      assert.equal(ok.body, 'ok');
      assert.equal(ok.httpVersion, proto === 'HTTP/2' ? '2.0' : '1.1');
      const who = await get(server.url, '/whoami', { ca: server.caCert, token: TOKEN });
      assert.deepEqual(JSON.parse(who.body), { name: 'alice', uid: 'uid-alice', groups: ['dev', 'ops', 'system:authenticated'] });
      const bob = await get(server.url, '/whoami', { ca: server.caCert, token: 'other-token' });
      assert.deepEqual(JSON.parse(bob.body), { name: 'bob', uid: 'uid-bob', groups: ['system:authenticated'] });
      const bad = await get(server.url, '/readyz', { ca: server.caCert, token: 'not-a-token' });
      assert.equal(bad.status, 401);
      assert.deepEqual(JSON.parse(bad.body), UNAUTHORIZED_STATUS);
    });

    void it(`${proto}: a client certificate signed by --client-ca-file authenticates as CN with O as groups`, async () => {
      const client = await makeClientCert({ caCert: testCA.cert, caKey: testCA.key, commonName: 'carol', organizations: ['team-a', 'team-b'] });
      const who = await get(server.url, '/whoami', { ca: server.caCert, client });
      assert.equal(who.status, 200);
      assert.deepEqual(JSON.parse(who.body), { name: 'carol', groups: ['team-a', 'team-b', 'system:authenticated'] });
      const untrusted = await makeClientCert({ caCert: otherCA.cert, caKey: otherCA.key, commonName: 'mallory', organizations: ['system:masters'] });
      const denied = await get(server.url, '/whoami', { ca: server.caCert, client: untrusted });
      assert.equal(denied.status, 401);
      const withToken = await get(server.url, '/whoami', { ca: server.caCert, client: untrusted, token: TOKEN });
      assert.equal(JSON.parse(withToken.body).name, 'alice');
    });

    void it(`${proto}: /readyz?verbose, single checks, exclusions, and a failing check`, async () => {
      const o = { ca: server.caCert, token: TOKEN };
      const verbose = await get(server.url, '/readyz?verbose', o);
      assert.equal(verbose.status, 200);
      assert.equal(verbose.headers['content-type'], 'text/plain; charset=utf-8');
      assert.equal(verbose.body, '[+]ping ok\n[+]log ok\n[+]shutdown ok\nreadyz check passed\n');
      assert.equal((await get(server.url, '/livez?verbose', o)).body, '[+]ping ok\n[+]log ok\nlivez check passed\n');
      assert.equal((await get(server.url, '/healthz?verbose', o)).body, '[+]ping ok\n[+]log ok\nhealthz check passed\n');
      assert.equal((await get(server.url, '/readyz/ping', o)).body, 'ok');
      assert.equal((await get(server.url, '/livez/log', o)).body, 'ok');
      assert.equal((await get(server.url, '/readyz/nope', o)).status, 404);
      const excluded = await get(server.url, '/readyz?verbose&exclude=log&exclude=zzz', o);
      assert.equal(
        excluded.body,
        '[+]ping ok\n[+]log excluded: ok\n[+]shutdown ok\nwarn: some health checks cannot be excluded: no matches for "zzz"\nreadyz check passed\n',
      );
    });

    void it(`${proto}: an unknown path is the NotFound Status; /version is the configured JSON`, async () => {
      const nf = await get(server.url, '/apis/nothing.example.com/v1', { ca: server.caCert, token: TOKEN });
      assert.equal(nf.status, 404);
      assert.equal(nf.headers['content-type'], 'application/json');
      assert.deepEqual(JSON.parse(nf.body), NOT_FOUND);
      const v = await get(server.url, '/version', { ca: server.caCert, token: TOKEN });
      assert.equal(v.status, 200);
      assert.equal(v.headers['content-type'], 'application/json');
      assert.deepEqual(JSON.parse(v.body), VERSION);
    });
  }

  void it('a failing readyz check answers 500 withholding the reason; its own path tells it', async () => {
    const tokensOnly = await createApiServer({ ...(await baseConfig(dir, [])), tokenAuthFile: join(dir, 'tokens.csv') });
    tokensOnly.addHealthCheck('broken', () => {
      throw new Error('disk on fire');
    }, { livez: false });
    await tokensOnly.start();
    try {
      const o = { ca: tokensOnly.caCert, token: TOKEN };
      for (const path of ['/readyz', '/readyz?verbose']) {
        const r = await h2get(tokensOnly.url, path, o);
        assert.equal(r.status, 500);
        assert.equal(r.body, '[+]ping ok\n[+]log ok\n[-]broken failed: reason withheld\n[+]shutdown ok\nreadyz check failed\n');
      }
      const own = await h2get(tokensOnly.url, '/readyz/broken', o);
      assert.equal(own.status, 500);
      assert.equal(own.body, 'internal server error: disk on fire\n');
      assert.equal((await h2get(tokensOnly.url, '/livez', o)).body, 'ok');
      assert.equal((await h2get(tokensOnly.url, '/healthz', o)).body, 'ok');
      assert.equal((await h2get(tokensOnly.url, '/livez/broken', o)).status, 404);
    } finally {
      await tokensOnly.stop();
    }
  });

  void it('curl over HTTP/1.1 with a bearer token reads /readyz', { skip: CURL ? false : 'curl is not on PATH' }, async () => {
    const { stdout } = await run('curl', ['-sk', '--max-time', '20', '--http1.1', '-H', `Authorization: Bearer ${TOKEN}`, `${server.url}/readyz`]);
    assert.equal(stdout, 'ok');
    const { stdout: v } = await run('curl', ['-sk', '--max-time', '20', '--http1.1', '-o', '/dev/null', '-w', '%{http_version} %{http_code}', `${server.url}/readyz`]);
    assert.equal(v, '1.1 401');
  });

  void it('kubectl reads /readyz and the server version', { skip: KUBECTL ? false : 'kubectl is not on PATH' }, async () => {
    const caFile = join(dir, 'ca.pem');
    await writeFile(caFile, server.caCert);
    const env = { ...process.env, KUBECONFIG: join(dir, 'no-kubeconfig'), HOME: dir };
    const opts = { env, timeout: 30_000 };
    const flags = [`--server=${server.url}`, `--token=${TOKEN}`, `--certificate-authority=${caFile}`];
    const ready = await run('kubectl', [...flags, 'get', '--raw', '/readyz'], opts);
    assert.equal(ready.stdout.trim(), 'ok');
    const version = await run('kubectl', [...flags, 'version', '-o', 'json'], opts);
    assert.deepEqual(JSON.parse(version.stdout).serverVersion, VERSION);
    // A wrong token, not none: without credentials kubectl answers a 401 by prompting for a user name.
    await assert.rejects(
      run('kubectl', [`--server=${server.url}`, '--token=wrong', `--certificate-authority=${caFile}`, 'get', '--raw', '/readyz'], opts),
      (e: Error & { stderr?: string }) => /Unauthorized/.test(e.stderr ?? ''),
    );
  });

  void it('handle() serves in-process, without the TLS listener', async () => {
    const plain: HttpServer = createHttpServer((req, res) => void server.handle(req, res));
    await new Promise<void>((r) => plain.listen(0, '127.0.0.1', r));
    try {
      const port = (plain.address() as AddressInfo).port;
      const get = (headers: Record<string, string>) =>
        new Promise<{ status: number; body: string }>((resolve, reject) => {
          const req = httpRequest({ host: '127.0.0.1', port, path: '/livez', headers, agent: false }, (res) => {
            let body = '';
            res.on('data', (c: Buffer) => (body += c.toString()));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
          });
          req.on('error', reject);
          req.end();
        });
      assert.deepEqual(await get({ authorization: `Bearer ${TOKEN}` }), { status: 200, body: 'ok' });
      assert.equal((await get({})).status, 401);
    } finally {
      await new Promise((r) => plain.close(r));
    }
  });
});

void describe('serving certificates', () => {
  void it('generates the self-signed pair once into a 0700 cert dir and reuses it across restarts', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'orch-certs-'));
    try {
      const config = await baseConfig(dir, []);
      const first = await createApiServer(config);
      await first.start();
      await first.stop();
      const certPath = join(config.certDir, 'apiserver.crt');
      const written = await readFile(certPath, 'utf8');
      assert.equal((await stat(config.certDir)).mode & 0o777, 0o700);
      assert.equal((await stat(join(config.certDir, 'apiserver.key'))).mode & 0o777, 0o600);
      const second = await createApiServer(config);
      await second.start();
      try {
        assert.equal(await readFile(certPath, 'utf8'), written);
        assert.equal(second.caCert, first.caCert);
        const r = await h2get(second.url, '/readyz', { ca: second.caCert });
        assert.equal(r.status, 401);
      } finally {
        await second.stop();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  void it('covers localhost, loopback, the kubernetes service names and the given hosts', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'orch-certs-'));
    try {
      const { cert } = await ensureServingCert({ certDir: dir, hosts: ['10.0.0.1', 'kubernetes.default.svc'] });
      const { X509Certificate } = await import('node:crypto');
      const leaf = new X509Certificate(cert);
      for (const ip of ['127.0.0.1', '::1', '10.0.0.1']) assert.ok(leaf.checkIP(ip), ip);
      for (const h of ['localhost', 'kubernetes.default.svc']) assert.ok(leaf.checkHost(h), h);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  void it('reads --tls-cert-file/--tls-private-key-file and refuses a key of another certificate', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'orch-certs-'));
    try {
      const a = await makeCA('a');
      const b = await makeCA('b');
      await writeFile(join(dir, 'a.crt'), a.cert);
      await writeFile(join(dir, 'a.key'), a.key);
      await writeFile(join(dir, 'b.key'), b.key);
      const ok = await ensureServingCert({ certDir: dir, certFile: join(dir, 'a.crt'), keyFile: join(dir, 'a.key'), hosts: [] });
      assert.equal(ok.cert, a.cert);
      await assert.rejects(
        ensureServingCert({ certDir: dir, certFile: join(dir, 'a.crt'), keyFile: join(dir, 'b.key'), hosts: [] }),
        /--tls-private-key-file .* does not match --tls-cert-file/,
      );
      await assert.rejects(
        ensureServingCert({ certDir: dir, certFile: join(dir, 'missing.crt'), keyFile: join(dir, 'a.key'), hosts: [] }),
        /--tls-cert-file .*missing\.crt/,
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

void describe('shutdown', () => {
  void it('fails /readyz at once while /livez and /healthz pass, then closes after the delay; stop() twice is safe', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'orch-shutdown-'));
    try {
      await writeFile(join(dir, 'tokens.csv'), `${TOKEN},alice,1\n`);
      const server = await createApiServer({ ...(await baseConfig(dir, [])), tokenAuthFile: join(dir, 'tokens.csv'), shutdownDelayMs: 500 });
      await server.start();
      const o = { ca: server.caCert, token: TOKEN };
      const url = server.url;
      const started = Date.now();
      const stopped = server.stop();
      const ready = await h1get(url, '/readyz', o);
      assert.equal(ready.status, 500);
      assert.equal(ready.body, '[+]ping ok\n[+]log ok\n[-]shutdown failed: reason withheld\nreadyz check failed\n');
      assert.equal((await h2get(url, '/readyz/shutdown', o)).body, 'internal server error: process is shutting down\n');
      assert.equal((await h2get(url, '/livez', o)).status, 200);
      assert.equal((await h1get(url, '/healthz', o)).status, 200);
      assert.ok(!server.signal.aborted);
      await stopped;
      await server.stop();
      assert.ok(Date.now() - started >= 450);
      assert.ok(server.signal.aborted);
      await assert.rejects(h1get(url, '/livez', o), /ECONNREFUSED/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  void it('stop() closes idle keep-alive HTTP/1.1 connections promptly', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'orch-shutdown-'));
    const agent = new HttpsAgent({ keepAlive: true });
    try {
      const server = await createApiServer(await baseConfig(dir, []));
      await server.start();
      const sockets: Socket[] = [];
      agent.on('free', (s: Socket) => sockets.push(s));
      const status = await new Promise<number>((resolve, reject) => {
        const req = httpsRequest(new URL('/livez', server.url), { ca: server.caCert, agent }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        req.on('error', reject);
        req.end();
      });
      assert.equal(status, 401);
      await new Promise((r) => setImmediate(r));
      assert.equal(sockets.length, 1);
      const closed = new Promise<void>((resolve) => sockets[0]!.once('close', () => resolve()));
      const t0 = Date.now();
      await server.stop();
      await closed;
      assert.ok(Date.now() - t0 < 5000);
    } finally {
      agent.destroy();
      await rm(dir, { recursive: true, force: true });
    }
  });

  void it('stop() closes idle keep-alive HTTP/2 sessions promptly', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'orch-shutdown-'));
    try {
      const server = await createApiServer(await baseConfig(dir, []));
      await server.start();
      const session = h2connect(server.url, { ca: server.caCert });
      await new Promise<void>((resolve) => session.once('connect', () => resolve()));
      const closed = new Promise<void>((resolve) => session.once('close', () => resolve()));
      session.on('error', () => {});
      const t0 = Date.now();
      await server.stop();
      await closed;
      assert.ok(Date.now() - t0 < 5000);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

void describe('authentication', () => {
  void it('reads token files as Kubernetes CSV and names the file and line of a malformed record', async () => {
    const tokens = parseTokenFile('t1,alice,u1,"a,b",extra\n\n  \r\nt2, bob ,u2\n"t,3",carol,u3,\n', 'tokens.csv');
    assert.deepEqual(tokens.get('t1'), { name: 'alice', uid: 'u1', groups: ['a', 'b'] });
    assert.deepEqual(tokens.get('t2'), { name: 'bob ', uid: 'u2', groups: [] });
    assert.deepEqual(tokens.get('t,3'), { name: 'carol', uid: 'u3', groups: [] });
    assert.throws(() => parseTokenFile('t1,alice,u1\n\nt2,bob\n', '/etc/tokens.csv'), /--token-auth-file \/etc\/tokens\.csv, line 3: .*at least 3 columns/);
    assert.throws(() => parseTokenFile('t1,al"ice,u1\n', 'x.csv'), /x\.csv, line 1/);
    await assert.rejects(loadTokenFile('/nonexistent/tokens.csv'), /--token-auth-file \/nonexistent\/tokens\.csv/);
    const dir = await mkdtemp(join(tmpdir(), 'orch-authn-'));
    try {
      await writeFile(join(dir, 'bad.csv'), 'only,two\n');
      await assert.rejects(
        createApiServer({ ...(await baseConfig(dir, [])), tokenAuthFile: join(dir, 'bad.csv') }),
        /bad\.csv, line 1/,
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  void it('with anonymous auth on: no credentials is system:anonymous, an unknown token is still 401', async () => {
    const chain = withAuthentication(
      (req, res) => {
        res.end(JSON.stringify(getUser(req)));
      },
      { authenticator: unionAuthenticator([tokenAuthenticator(new Map([['t', { name: 'u', groups: [] }]]))]), anonymous: true },
    );
    const plain = createHttpServer((req, res) => void chain(req, res));
    await new Promise<void>((r) => plain.listen(0, '127.0.0.1', r));
    try {
      const port = (plain.address() as AddressInfo).port;
      const get = (headers: Record<string, string>) =>
        new Promise<{ status: number; body: string }>((resolve, reject) => {
          const req = httpRequest({ host: '127.0.0.1', port, path: '/', headers, agent: false }, (res) => {
            let body = '';
            res.on('data', (c: Buffer) => (body += c.toString()));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
          });
          req.on('error', reject);
          req.end();
        });
      assert.deepEqual(JSON.parse((await get({})).body), { name: 'system:anonymous', groups: ['system:unauthenticated'] });
      assert.deepEqual(JSON.parse((await get({ authorization: 'Basic abc' })).body).name, 'system:anonymous');
      assert.deepEqual(JSON.parse((await get({ authorization: 'Bearer t' })).body), { name: 'u', groups: ['system:authenticated'] });
      const bad = await get({ authorization: 'Bearer wrong' });
      assert.equal(bad.status, 401);
      assert.deepEqual(JSON.parse(bad.body), UNAUTHORIZED_STATUS);
    } finally {
      await new Promise((r) => plain.close(r));
    }
  });

  void it('refuses unknown or repeated authorization modes', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'orch-authz-'));
    try {
      const base = await baseConfig(dir, []);
      await assert.rejects(createApiServer({ ...base, authorizationModes: ['Foo'] }), /authorization-mode "Foo" is not a valid mode/);
      await assert.rejects(createApiServer({ ...base, authorizationModes: ['RBAC', 'RBAC'] }), /authorization-mode "RBAC" has mode specified more than once/);
      await assert.rejects(createApiServer({ ...base, authorizationModes: [] }), /at least one authorization-mode/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
