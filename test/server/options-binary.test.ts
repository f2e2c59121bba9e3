/**
 * Serving, limit and shutdown options of document 2 on the real bin/orch-apiserver, checked from outside with
 * HTTPS and HTTP/2 clients, signals and `openssl s_client`. Several options share one server start.
 *
 * Requests are held in flight with an authorization webhook the test serves: a request of the user alice
 * reaches the webhook (RBAC does not allow her), which answers only when the test releases it. Authorization
 * runs inside the in-flight limits and the request timeout, as in kube-apiserver's handler chain.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import type { ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { stringify } from 'yaml';
import { makeCA, makeServingCert } from '../../src/server/certs.js';
import { requireBinary } from '../helpers/binaries.js';
import { eventually } from '../helpers/eventually.js';
import { freePort } from '../helpers/ports.js';
import { ADMIN_TOKEN, runBin, startBin, USER_TOKEN, type BinServer } from '../helpers/binserver.js';

/** An authorization webhook that allows everything, answering alice's reviews only when released. */
interface HoldingWebhook {
  kubeconfig: string;
  /** alice's reviews waiting for an answer. */
  held(): number;
  release(): void;
  close(): Promise<void>;
}

async function holdingWebhook(dir: string): Promise<HoldingWebhook> {
  const ca = await makeCA('hold-webhook-ca');
  const serving = await makeServingCert(ca.cert, ca.key, 'hold-webhook', ['127.0.0.1']);
  let waiting: ServerResponse[] = [];
  const answer = (res: ServerResponse, apiVersion: string) => {
    res.setHeader('Content-Type', 'application/json');
    res.end(JSON.stringify({ apiVersion, kind: 'SubjectAccessReview', status: { allowed: true, reason: 'held, then allowed' } }));
  };
  const hook: Server = createServer({ cert: serving.cert, key: serving.key }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (d: Buffer) => chunks.push(d));
    req.on('end', () => {
      const review = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { apiVersion: string; spec: { user?: string } };
      if (review.spec.user !== 'alice') return answer(res, review.apiVersion);
      (res as ServerResponse & { apiVersion?: string }).apiVersion = review.apiVersion;
      waiting.push(res);
    });
  });
  await new Promise<void>((resolve) => hook.listen(0, '127.0.0.1', resolve));
  const kubeconfig = join(dir, 'hold-webhook.kubeconfig');
  await writeFile(
    kubeconfig,
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'hook', cluster: { server: `https://127.0.0.1:${(hook.address() as AddressInfo).port}/authorize`, 'certificate-authority-data': Buffer.from(ca.cert).toString('base64') } }],
      users: [{ name: 'apiserver', user: { token: 'hook-token' } }],
      contexts: [{ name: 'hook', context: { cluster: 'hook', user: 'apiserver' } }],
      'current-context': 'hook',
    }),
  );
  const release = () => {
    for (const res of waiting) if (!res.writableEnded && !res.destroyed) answer(res, (res as ServerResponse & { apiVersion?: string }).apiVersion ?? 'authorization.k8s.io/v1beta1');
    waiting = [];
  };
  return {
    kubeconfig,
    held: () => waiting.length,
    release,
    async close() {
      release();
      hook.closeAllConnections();
      await new Promise((resolve) => hook.close(resolve));
    },
  };
}

/** The webhook options that put alice's requests through `hook` (answers are not cached, so each one is held). */
const webhookArgs = (hook: HoldingWebhook) => [
  '--authorization-mode=RBAC,Webhook',
  `--authorization-webhook-config-file=${hook.kubeconfig}`,
  '--authorization-webhook-cache-authorized-ttl=0s',
];

describe('orch-apiserver serving, limit and shutdown options (the binary)', () => {
  let dir: string;
  let hook: HoldingWebhook;
  const servers: BinServer[] = [];
  const start = async (args: string[]) => {
    const s = await startBin(args);
    servers.push(s);
    return s;
  };

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'orch-options-bin-'));
    hook = await holdingWebhook(dir);
  });
  after(async () => {
    hook.release();
    for (const s of servers) await s.stop();
    await hook.close();
    await rm(dir, { recursive: true, force: true });
  });

  describe('response headers, HTTP/2 settings and the request timeout', () => {
    let s: BinServer;
    before(async () => {
      s = await start([
        '--strict-transport-security-directives=max-age=31536000,includeSubDomains,preload',
        '--cors-allowed-origins=//example\\.com$,^https://[a-z]+\\.corp\\.test$',
        '--http2-max-streams-per-connection=7',
        '--goaway-chance=0.02',
        '--permit-address-sharing',
        ...webhookArgs(hook),
        '--anonymous-auth=false',
        '--request-timeout=3s',
      ]);
    });

    it('--request-timeout: a request still unanswered after it gets 504 with a Timeout Status; watches are not cut', async () => {
      const watch = s.request('/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=5');
      const started = Date.now();
      const r = await s.request('/api/v1/namespaces/default/secrets', { token: USER_TOKEN }).finally(() => hook.release());
      assert.ok(Date.now() - started >= 2900, `answered after ${Date.now() - started} ms`);
      assert.equal(r.status, 504);
      const status = JSON.parse(r.body);
      assert.equal(status.reason, 'Timeout');
      assert.equal(status.message, 'Timeout: request did not complete within the allotted timeout');
      // Headers of the filters outside the timeout stay (HSTS).
      assert.equal(r.headers['strict-transport-security'], 'max-age=31536000; includeSubDomains; preload');
      // The watch (timeoutSeconds=5) outlives the 3 s request timeout and ends normally.
      assert.equal((await watch).status, 200);
      assert.ok(Date.now() - started >= 4500);
    });

    it('--strict-transport-security-directives: on every response, also a 401 and over HTTP/2', async () => {
      for (const r of [await s.request('/version'), await s.request('/version', { token: null })]) {
        assert.equal(r.headers['strict-transport-security'], 'max-age=31536000; includeSubDomains; preload');
      }
      const session = s.h2();
      try {
        const headers = await new Promise<Record<string, unknown>>((resolve, reject) => {
          const req = session.request({ ':path': '/healthz' });
          req.on('response', resolve);
          req.on('error', reject);
          req.resume();
          req.end();
        });
        assert.equal(headers['strict-transport-security'], 'max-age=31536000; includeSubDomains; preload');
      } finally {
        session.close();
      }
    });

    it('--cors-allowed-origins: Access-Control headers for matching origins (also on a 401), preflight 204, others untouched', async () => {
      for (const origin of ['https://example.com', 'https://dev.corp.test']) {
        for (const token of [undefined, null]) {
          const r = await s.request('/version', { token, headers: { origin } });
          assert.equal(r.status, token === null ? 401 : 200);
          assert.equal(r.headers['access-control-allow-origin'], origin);
          assert.equal(r.headers['access-control-allow-credentials'], 'true');
          assert.equal(r.headers['access-control-allow-methods'], 'POST, GET, OPTIONS, PUT, DELETE, PATCH');
          assert.equal(
            r.headers['access-control-allow-headers'],
            'Content-Type, Content-Length, Accept-Encoding, X-CSRF-Token, Authorization, X-Requested-With, If-Modified-Since',
          );
          assert.equal(r.headers['access-control-expose-headers'], 'Date');
        }
      }
      const pre = await s.request('/api/v1/pods', { method: 'OPTIONS', token: null, headers: { origin: 'https://example.com' } });
      assert.equal(pre.status, 204);
      assert.equal(pre.body, '');
      assert.equal(pre.headers['access-control-allow-origin'], 'https://example.com');
      const other = await s.request('/version', { headers: { origin: 'https://example.org' } });
      assert.equal(other.status, 200);
      assert.equal(other.headers['access-control-allow-origin'], undefined);
      assert.equal((await s.request('/version', { method: 'OPTIONS', token: null, headers: { origin: 'https://evil.corp.test.x' } })).status, 401);
    });

    it('--http2-max-streams-per-connection is the SETTINGS_MAX_CONCURRENT_STREAMS offered', async () => {
      const session = s.h2();
      try {
        const settings = await new Promise<{ maxConcurrentStreams?: number }>((resolve) => session.once('remoteSettings', resolve));
        assert.equal(settings.maxConcurrentStreams, 7);
      } finally {
        session.close();
      }
    });

    it('--goaway-chance=0.02: an HTTP/2 client is sent GOAWAY now and then, and every request still completes', async () => {
      let goaways = 0;
      let completed = 0;
      let session = s.h2();
      for (let i = 0; i < 600 && goaways === 0; i++) {
        if (session.closed || session.destroyed || (session as { goawayReceived?: boolean }).goawayReceived) session = s.h2();
        const current = session;
        current.once('goaway', () => {
          (current as { goawayReceived?: boolean }).goawayReceived = true;
          goaways++;
        });
        const status = await new Promise<number>((resolve, reject) => {
          const req = current.request({ ':path': '/healthz', authorization: `Bearer ${ADMIN_TOKEN}` });
          let code = 0;
          req.on('response', (h) => (code = Number(h[':status'])));
          req.on('end', () => resolve(code));
          req.on('error', reject);
          req.resume();
          req.end();
        });
        assert.equal(status, 200);
        completed++;
        current.removeAllListeners('goaway');
      }
      session.close();
      assert.ok(goaways >= 1, `no GOAWAY in ${completed} requests`);
    });

    it('--permit-address-sharing is accepted', async () => {
      assert.equal((await s.request('/version')).status, 200);
    });
  });

  describe('in-flight limits', () => {
    let s: BinServer;
    before(async () => {
      s = await start([
        ...webhookArgs(hook),
        '--max-requests-inflight=1',
        '--max-mutating-requests-inflight=1',
        '--enable-priority-and-fairness=false',
      ]);
    });

    it('--max-requests-inflight / --max-mutating-requests-inflight: 429 with Retry-After past the limit, per kind; system:masters exempt', async () => {
      const alice = { token: USER_TOKEN };
      const heldRead = s.request('/api/v1/namespaces/default/configmaps?limit=1', alice);
      const heldWrite = s.request('/api/v1/namespaces/default/configmaps', {
        ...alice,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'held' } }),
      });
      try {
        await eventually('both requests held at the webhook', () => hook.held() === 2);
      } finally {
        setTimeout(() => hook.release(), 5000).unref(); // whatever happens below, the held requests end
      }
      const read = await s.request('/api/v1/namespaces/kube-system/configmaps', alice);
      assert.equal(read.status, 429);
      assert.equal(read.headers['retry-after'], '1');
      assert.match(read.body, /^Too many requests, please try again later\./);
      const write = await s.request('/api/v1/namespaces/default/configmaps/x', { ...alice, method: 'DELETE' });
      assert.equal(write.status, 429);
      // The admin (system:masters) is not counted.
      assert.equal((await s.request('/api/v1/namespaces/default/configmaps')).status, 200);
      hook.release();
      assert.equal((await heldRead).status, 200);
      assert.equal((await heldWrite).status, 201);
      assert.equal((await s.request('/api/v1/namespaces/kube-system/configmaps', alice)).status, 200);
    });
  });

  it('--shutdown-delay-duration with --shutdown-send-retry-after: on SIGTERM /readyz fails at once, requests are served for the delay, then new ones get 429 until in-flight ones drain, and the process exits 0', async () => {
    const s = await start([...webhookArgs(hook), '--shutdown-delay-duration=2s', '--shutdown-send-retry-after']);
    assert.equal((await s.request('/readyz')).status, 200);
    const held = s.request('/api/v1/namespaces/default/pods', { token: USER_TOKEN });
    setTimeout(() => hook.release(), 15_000).unref(); // the held request ends even when an assertion below fails
    await eventually('the request held at the webhook', () => hook.held() === 1);
    s.kill('SIGTERM');
    await eventually('/readyz failing', async () => (await s.request('/readyz')).status === 500);
    assert.equal((await s.request('/healthz')).status, 200);
    assert.equal((await s.request('/livez')).status, 200);
    assert.equal((await s.request('/api/v1/namespaces')).status, 200);
    // After the delay, while the held request drains: 429, Retry-After and Connection: close.
    await sleep(2200);
    const late = await s.request('/api/v1/namespaces');
    assert.equal(late.status, 429);
    assert.ok(Number(late.headers['retry-after']) > 0, JSON.stringify(late.headers));
    assert.equal(late.headers.connection, 'close');
    hook.release();
    assert.equal((await held).status, 200);
    assert.equal(await s.exited, 0);
  });

  it('--cert-dir: the self-signed pair is generated once (0700 dir, 0600 key) and served again after a restart; --advertise-address and --secure-port are what the kubernetes Endpoints publish; --external-hostname is the host of the JWKS URI', async () => {
    const certDir = join(dir, 'reused-certs');
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
    await writeFile(join(dir, 'sa.key'), rsa.privateKey.export({ format: 'pem', type: 'pkcs8' }));
    const args = [
      '--advertise-address=10.11.12.13',
      '--external-hostname=api.example.com',
      '--service-account-issuer=https://issuer.example',
      `--service-account-key-file=${join(dir, 'sa.key')}`,
      `--service-account-signing-key-file=${join(dir, 'sa.key')}`,
    ];
    const first = await startBin(args, { certDir });
    const written = first.ca;
    assert.equal((await stat(certDir)).mode & 0o777, 0o700);
    assert.equal((await stat(join(certDir, 'apiserver.key'))).mode & 0o777, 0o600);
    await first.stop();
    assert.equal(await first.exited, 0);
    const second = await startBin(args, { certDir });
    servers.push(second);
    assert.equal(await readFile(join(certDir, 'apiserver.crt'), 'utf8'), written);
    // The client trusts the first start's certificate: the handshake with the second start succeeds.
    assert.equal((await second.request('/readyz')).status, 200);
    const endpoints = await eventually('the kubernetes Endpoints', async () => {
      const r = await second.request('/api/v1/namespaces/default/endpoints/kubernetes');
      return r.status === 200 && (JSON.parse(r.body) as { subsets?: unknown[] }).subsets?.length ? JSON.parse(r.body) : undefined;
    });
    assert.deepEqual(endpoints.subsets, [{ addresses: [{ ip: '10.11.12.13' }], ports: [{ name: 'https', port: second.port, protocol: 'TCP' }] }]);
    const discovery = JSON.parse((await second.request('/.well-known/openid-configuration')).body);
    assert.equal(discovery.issuer, 'https://issuer.example');
    assert.equal(discovery.jwks_uri, `https://api.example.com:${second.port}/openid/v1/jwks`);
  });

  describe('TLS through openssl s_client', () => {
    const openssl = requireBinary(undefined, 'openssl');
    if (!openssl && process.env.CI === 'true') throw new Error('openssl is required under CI=true');
    const skip = !openssl && 'openssl not installed';

    /** Runs `openssl s_client` against the server; the protocol and cipher it negotiated, or null when refused. */
    function sClient(s: BinServer, args: string[]): Promise<{ protocol: string; cipher: string; subject: string } | null> {
      return new Promise((resolve) => {
        const child = execFile(openssl!, ['s_client', '-connect', `127.0.0.1:${s.port}`, '-brief', ...args], { timeout: 20_000 }, (_err, stdout, stderr) => {
          const out = stdout + stderr;
          const protocol = /Protocol version: (\S+)/.exec(out)?.[1];
          const cipher = /Ciphersuite: (\S+)/.exec(out)?.[1];
          const subject = /Peer certificate: (.*)/.exec(out)?.[1] ?? '';
          resolve(protocol && cipher ? { protocol, cipher, subject } : null);
        });
        child.stdin?.end();
      });
    }

    it('--tls-min-version and --tls-cipher-suites: TLS 1.2 offers only the named suite, older versions are refused', { skip }, async () => {
      const s = await start(['--tls-min-version=VersionTLS12', '--tls-cipher-suites=TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,TLS_AES_128_GCM_SHA256']);
      assert.deepEqual(await sClient(s, ['-tls1_2']).then((r) => r && [r.protocol, r.cipher]), ['TLSv1.2', 'ECDHE-ECDSA-AES256-GCM-SHA384']);
      assert.equal(await sClient(s, ['-tls1_2', '-cipher', 'ECDHE-ECDSA-AES128-GCM-SHA256']), null);
      assert.equal(await sClient(s, ['-tls1_1', '-cipher', 'DEFAULT@SECLEVEL=0']), null);
      // A TLS 1.3 suite named keeps only it for TLS 1.3.
      assert.deepEqual(await sClient(s, ['-tls1_3']).then((r) => r && [r.protocol, r.cipher]), ['TLSv1.3', 'TLS_AES_128_GCM_SHA256']);
    });

    it('--tls-min-version=VersionTLS13 refuses TLS 1.2; --tls-sni-cert-key serves the pair the server name matches, --tls-cert-file/--tls-private-key-file the others', { skip }, async () => {
      const ca = await makeCA('sni-bin-ca');
      const pair = await makeServingCert(ca.cert, ca.key, 'a.example.com', ['a.example.com']);
      await writeFile(join(dir, 'sni.crt'), pair.cert);
      await writeFile(join(dir, 'sni.key'), pair.key);
      const given = await makeServingCert(ca.cert, ca.key, 'given-cert', ['127.0.0.1']);
      await writeFile(join(dir, 'given.crt'), given.cert);
      await writeFile(join(dir, 'given.key'), given.key);
      const s = await startBin(
        [
          '--tls-min-version=VersionTLS13',
          `--tls-sni-cert-key=${join(dir, 'sni.crt')},${join(dir, 'sni.key')}`,
          `--tls-cert-file=${join(dir, 'given.crt')}`,
          `--tls-private-key-file=${join(dir, 'given.key')}`,
        ],
        { ca: ca.cert },
      );
      servers.push(s);
      // --tls-cert-file: the pair served by default, trusted through its CA.
      assert.equal((await s.request('/readyz')).status, 200);
      assert.equal(await sClient(s, ['-tls1_2']), null);
      const named = await sClient(s, ['-servername', 'a.example.com']);
      assert.equal(named?.protocol, 'TLSv1.3');
      assert.match(named.subject, /CN ?= ?a\.example\.com/);
      const other = await sClient(s, ['-servername', 'b.example.org']);
      assert.match(other!.subject, /CN ?= ?given-cert/);
    });
  });

  describe('options refused at startup by the binary, naming the option', () => {
    const cases: [string[], RegExp][] = [
      [['--goaway-chance=0.5'], /invalid value "0\.5" for --goaway-chance: must be between 0 and 0\.02/],
      [['--strict-transport-security-directives=max-age'], /invalid value "max-age" for --strict-transport-security-directives: "max-age": allowed values: max-age=expireTime, includeSubDomains, preload/],
      [['--cors-allowed-origins=('], /invalid value "\(" for --cors-allowed-origins: "\(" is not a valid regular expression/],
    ];
    const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
    if (major < 22 || (major === 22 && minor < 12)) cases.push([['--permit-port-sharing'], /--permit-port-sharing: SO_REUSEPORT needs Node.js 22.12\+ or 23.1\+/]);
    for (const [args, message] of cases) {
      it(args.join(' '), async () => {
        const r = await runBin(['--bind-address=127.0.0.1', `--secure-port=${await freePort()}`, '--data-dir=:memory:', `--cert-dir=${join(dir, 'refused-certs')}`, ...args]);
        assert.notEqual(r.code, 0);
        assert.match(r.stderr, message);
      });
    }
  });
});
