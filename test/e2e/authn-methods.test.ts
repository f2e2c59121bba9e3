/**
 * Webhook token review, the front proxy's request headers and bootstrap tokens from outside, on one
 * cluster with RBAC (Forbidden messages show the user name the server derived; role bindings to groups
 * show the groups): kubectl with tokens reviewed by a TLS webhook the test serves, HTTPS requests with
 * client certificates of a front-proxy CA and identity headers, kubectl with bootstrap tokens stored as
 * Secrets in kube-system. In-process: v1 reviews and the request-header extras on a real TLS connection.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, request, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { requireBinary } from '../helpers/binaries.js';
import { startCluster, type TestCluster } from '../helpers/cluster.js';
import { makeCA, makeClientCert, makeServingCert, type CertAndKey } from '../../src/server/certs.js';
import { webhookTokenAuthenticator } from '../../src/filters/authn/webhook.js';
import { requestHeaderAuthenticator } from '../../src/filters/authn/requestheader.js';
import { bootstrapTokenAuthenticator } from '../../src/filters/authn/bootstrap.js';
import type { KObject } from '../../src/registry/kind.js';
import { webSocketProtocolAuthenticator } from '../../src/filters/authn/websocket.js';
import { tokenTableAuthenticator } from '../../src/filters/authn/token.js';
import type { ApiRequest } from '../../src/endpoints/http.js';

const present = requireBinary(undefined, 'kubectl') !== null;
if (!present && process.env.CI === 'true') throw new Error('kubectl is required under CI=true');
const skip = !present && 'kubectl not installed';

type Review = { apiVersion: string; kind: string; spec: { token: string; audiences?: string[] } };

function forbidden(user: string): string {
  return `Error from server (Forbidden): configmaps is forbidden: User "${user}" cannot list resource "configmaps" in API group "" in the namespace "default"`;
}

/** One HTTPS request with a client certificate and headers; the status code and body. */
function call(url: string, path: string, ca: string, client: CertAndKey, headers: Record<string, string | string[]>): Promise<{ code: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}${path}`, { ca, cert: client.cert, key: client.key, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ code: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('Webhook tokens, front-proxy headers and bootstrap tokens', () => {
  let c: TestCluster;
  let dir: string;
  let hook: Server;
  let kubeconfig: string;
  let servingCA: string;
  let proxyCA: CertAndKey;
  let clientCA: CertAndKey;
  const reviews: { review: Review; authorization: string | undefined }[] = [];
  const withToken = (token: string, args: string[]) => c.kubectl([`--token=${token}`, ...args]);

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'orch-authn-methods-'));
    const hookCA = await makeCA('token-webhook-ca');
    const serving = await makeServingCert(hookCA.cert, hookCA.key, 'webhook', ['127.0.0.1']);
    hook = createServer({ cert: serving.cert, key: serving.key }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (d: Buffer) => chunks.push(d));
      req.on('end', () => {
        const review = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Review;
        reviews.push({ review, authorization: req.headers.authorization });
        const status = review.spec.token.startsWith('hooked-')
          ? { authenticated: true, user: { username: 'hooked', uid: '42', groups: ['hook-group'], extra: { scope: ['a'] } } }
          : review.spec.token === 'broken-token'
            ? { authenticated: false, error: 'the review failed' }
            : { authenticated: false };
        res.setHeader('Content-Type', 'application/json');
        res.end(JSON.stringify({ apiVersion: review.apiVersion, kind: 'TokenReview', status }));
      });
    });
    await new Promise<void>((resolve) => hook.listen(0, '127.0.0.1', resolve));
    kubeconfig = join(dir, 'token-webhook.kubeconfig');
    await writeFile(
      kubeconfig,
      stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'hook', cluster: { server: `https://127.0.0.1:${(hook.address() as AddressInfo).port}/review`, 'certificate-authority-data': Buffer.from(hookCA.cert).toString('base64') } }],
        users: [{ name: 'apiserver', user: { token: 'webhook-secret' } }],
        contexts: [{ name: 'hook', context: { cluster: 'hook', user: 'apiserver' } }],
        'current-context': 'hook',
      }),
    );
    proxyCA = await makeCA('front-proxy-ca');
    clientCA = await makeCA('client-ca');
    const proxyClient = await makeClientCert({ caCert: proxyCA.cert, caKey: proxyCA.key, commonName: 'front-proxy' });
    for (const [name, text] of [
      ['front-proxy-ca.crt', proxyCA.cert],
      ['client-ca.crt', clientCA.cert],
      ['proxy-client.crt', proxyClient.cert],
      ['proxy-client.key', proxyClient.key],
    ] as const) {
      await writeFile(join(dir, name), text);
    }
    if (!present) return;
    c = await startCluster([
      '--authorization-mode=RBAC',
      `--client-ca-file=${join(dir, 'client-ca.crt')}`,
      `--authentication-token-webhook-config-file=${kubeconfig}`,
      `--requestheader-client-ca-file=${join(dir, 'front-proxy-ca.crt')}`,
      '--requestheader-allowed-names=front-proxy,aggregator',
      '--requestheader-username-headers=X-Remote-User',
      '--requestheader-group-headers=X-Remote-Group',
      '--requestheader-extra-headers-prefix=X-Remote-Extra-',
      `--proxy-client-cert-file=${join(dir, 'proxy-client.crt')}`,
      `--proxy-client-key-file=${join(dir, 'proxy-client.key')}`,
      '--enable-bootstrap-token-auth',
    ]);
    servingCA = c.cp.server.caCert;
    for (const group of ['hook-group', 'proxied', 'system:bootstrappers:workers']) {
      const bind = await c.kubectl(['create', 'rolebinding', `view-${group.replace(/:/g, '-')}`, '--clusterrole=view', `--group=${group}`, '-n', 'default']);
      assert.equal(bind.code, 0, bind.stderr);
    }
  });
  after(async () => {
    await c?.stop();
    await new Promise((resolve) => hook?.close(resolve));
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('a token the webhook accepts is its user, asked once per token within the cache time', { skip }, async () => {
    const r = await withToken('hooked-1', ['get', 'configmaps', '-n', 'default']);
    assert.equal(r.code, 0, r.stderr);
    const sent = reviews.filter((x) => x.review.spec.token === 'hooked-1');
    assert.equal(sent.length, 1);
    assert.equal(sent[0]!.authorization, 'Bearer webhook-secret');
    assert.equal(sent[0]!.review.apiVersion, 'authentication.k8s.io/v1beta1');
    assert.equal(sent[0]!.review.kind, 'TokenReview');
    assert.equal((await withToken('hooked-1', ['get', 'configmaps', '-n', 'default'])).code, 0);
    assert.equal(reviews.filter((x) => x.review.spec.token === 'hooked-1').length, 1, 'answered from the cache');
    const denied = await withToken('hooked-1', ['get', 'secrets', '-n', 'default']);
    assert.match(denied.stderr, /User "hooked" cannot list resource "secrets"/);
  });

  it('a token the webhook refuses, or fails to review, is unauthorized', { skip }, async () => {
    for (const token of ['stranger-token', 'broken-token']) {
      const r = await withToken(token, ['get', 'configmaps', '-n', 'default']);
      assert.equal(r.code, 1);
      assert.match(r.stderr, /error: You must be logged in to the server \(Unauthorized\)/);
    }
    assert.ok(reviews.some((x) => x.review.spec.token === 'broken-token'));
  });

  it('sends v1 reviews when asked, with the audiences, and reports the user with uid and extras', async () => {
    const v1 = webhookTokenAuthenticator({ configFile: kubeconfig, version: 'v1', cacheTTLMs: 0, apiAudiences: ['api'] });
    const r = await v1.authenticateToken('hooked-v1', ['api']);
    assert.deepEqual(r, { status: 'authenticated', user: { name: 'hooked', uid: '42', groups: ['hook-group'], extra: { scope: ['a'] } }, audiences: ['api'] });
    const last = reviews[reviews.length - 1]!.review;
    assert.equal(last.apiVersion, 'authentication.k8s.io/v1');
    assert.deepEqual(last.spec, { token: 'hooked-v1', audiences: ['api'] });
    assert.deepEqual(await v1.authenticateToken('stranger', undefined), { status: 'unknown' });
    // Without audiences in the answer the API audiences are implied: a token for another audience is not the webhook's.
    assert.deepEqual(await v1.authenticateToken('hooked-other', ['other']), { status: 'unknown' });
    assert.deepEqual(await v1.authenticateToken('broken-token', undefined), { status: 'failed', reason: 'the review failed' });
  });

  it('trusts identity headers only from certificates of the front-proxy CA with an allowed name', { skip }, async () => {
    const proxy = await makeClientCert({ caCert: proxyCA.cert, caKey: proxyCA.key, commonName: 'front-proxy' });
    const headers = { 'X-Remote-User': 'proxied-user', 'X-Remote-Group': 'proxied' };
    const ok = await call(c.url, '/api/v1/namespaces/default/configmaps', servingCA, proxy, headers);
    assert.equal(ok.code, 200, ok.body);
    const noGroup = await call(c.url, '/api/v1/namespaces/default/configmaps', servingCA, proxy, { 'X-Remote-User': 'proxied-user' });
    assert.equal(noGroup.code, 403);
    assert.match(noGroup.body, /User \\"proxied-user\\" cannot list resource \\"configmaps\\"/);
    // A name not in --requestheader-allowed-names, a certificate of the client CA (whose CN is the user,
    // the headers ignored), and a front-proxy certificate without the user header.
    const other = await makeClientCert({ caCert: proxyCA.cert, caKey: proxyCA.key, commonName: 'intruder' });
    assert.equal((await call(c.url, '/api/v1/namespaces/default/configmaps', servingCA, other, headers)).code, 401);
    const user = await makeClientCert({ caCert: clientCA.cert, caKey: clientCA.key, commonName: 'cert-user' });
    const asCert = await call(c.url, '/api/v1/namespaces/default/configmaps', servingCA, user, headers);
    assert.equal(asCert.code, 403);
    assert.match(asCert.body, /User \\"cert-user\\" cannot list/);
    assert.equal((await call(c.url, '/api/v1/namespaces/default/configmaps', servingCA, proxy, {})).code, 401);
  });

  it('publishes the client CA and front-proxy settings in kube-system/extension-apiserver-authentication', { skip }, async () => {
    const r = await c.kubectl(['get', 'configmap', 'extension-apiserver-authentication', '-n', 'kube-system', '-o', 'json']);
    assert.equal(r.code, 0, r.stderr);
    const data = (JSON.parse(r.stdout) as { data: Record<string, string> }).data;
    assert.deepEqual(data, {
      'client-ca-file': clientCA.cert,
      'requestheader-client-ca-file': proxyCA.cert,
      'requestheader-username-headers': '["X-Remote-User"]',
      'requestheader-group-headers': '["X-Remote-Group"]',
      'requestheader-extra-headers-prefix': '["X-Remote-Extra-"]',
      'requestheader-allowed-names': '["front-proxy","aggregator"]',
    });
  });

  it('reads the user, every group value and the extras, and removes the headers', async () => {
    const proxy = await makeClientCert({ caCert: proxyCA.cert, caKey: proxyCA.key, commonName: 'aggregator' });
    const serverCA = await makeCA('in-process');
    const serving = await makeServingCert(serverCA.cert, serverCA.key, 'server', ['127.0.0.1']);
    const auth = requestHeaderAuthenticator({
      caCerts: [proxyCA.cert],
      allowedNames: [],
      usernameHeaders: ['X-Remote-User', 'X-User'],
      groupHeaders: ['X-Remote-Group'],
      extraHeaderPrefixes: ['X-Remote-Extra-'],
    });
    const server = createServer({ cert: serving.cert, key: serving.key, ca: proxyCA.cert, requestCert: true, rejectUnauthorized: false }, (req, res) => {
      void Promise.resolve(auth.authenticate(req as unknown as ApiRequest)).then((result) => {
        res.end(JSON.stringify({ result, left: Object.keys(req.headers).filter((h) => h.startsWith('x-')) }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const r = await call(url, '/', serverCA.cert, proxy, {
        'X-User': 'second-header-user',
        'X-Remote-Group': ['one', 'two'],
        'X-Remote-Extra-Scopes': ['read', 'write'],
        'X-Remote-Extra-Acme.com%2Fproject': 'p',
      });
      assert.deepEqual(JSON.parse(r.body), {
        result: {
          status: 'authenticated',
          user: { name: 'second-header-user', groups: ['one', 'two'], extra: { scopes: ['read', 'write'], 'acme.com/project': ['p'] } },
        },
        left: [],
      });
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('a bootstrap token of a kube-system Secret is system:bootstrap:<id> in system:bootstrappers and its extra groups', { skip }, async () => {
    const secret = (name: string, data: Record<string, string>) =>
      c.kubectl(['create', 'secret', 'generic', name, '-n', 'kube-system', '--type=bootstrap.kubernetes.io/token', ...Object.entries(data).map(([k, v]) => `--from-literal=${k}=${v}`)]);
    const base = { 'usage-bootstrap-authentication': 'true', 'auth-extra-groups': 'system:bootstrappers:workers' };
    assert.equal((await secret('bootstrap-token-abcdef', { 'token-id': 'abcdef', 'token-secret': '0123456789abcdef', ...base })).code, 0);
    assert.equal((await secret('bootstrap-token-plain1', { 'token-id': 'plain1', 'token-secret': '0123456789abcdef', 'usage-bootstrap-authentication': 'true' })).code, 0);
    const expired = new Date(Date.now() - 60_000).toISOString().replace(/\.\d+Z$/, 'Z');
    assert.equal((await secret('bootstrap-token-old111', { 'token-id': 'old111', 'token-secret': '0123456789abcdef', expiration: expired, ...base })).code, 0);
    assert.equal((await secret('bootstrap-token-nouse1', { 'token-id': 'nouse1', 'token-secret': '0123456789abcdef', 'usage-bootstrap-authentication': 'false' })).code, 0);

    const worker = await withToken('abcdef.0123456789abcdef', ['get', 'configmaps', '-n', 'default']);
    assert.equal(worker.code, 0, worker.stderr);
    assert.match((await withToken('abcdef.0123456789abcdef', ['get', 'secrets', '-n', 'default'])).stderr, /User "system:bootstrap:abcdef" cannot list resource "secrets"/);
    assert.equal((await withToken('plain1.0123456789abcdef', ['get', 'configmaps', '-n', 'default'])).stderr.trim(), forbidden('system:bootstrap:plain1'));
    for (const token of ['abcdef.0123456789abcdee', 'old111.0123456789abcdef', 'nouse1.0123456789abcdef', 'zzzzzz.0123456789abcdef']) {
      const r = await withToken(token, ['get', 'configmaps', '-n', 'default']);
      assert.match(r.stderr, /error: You must be logged in to the server \(Unauthorized\)/, token);
    }
  });

  it('bootstrap tokens: sorted groups, and no user for a bad extra group, another type or a secret being deleted', async () => {
    const b64 = (v: string) => Buffer.from(v).toString('base64');
    const secret = (extra: Partial<KObject> & { data?: Record<string, string> } = {}): KObject => ({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'bootstrap-token-abcdef', namespace: 'kube-system', ...extra.metadata },
      type: 'bootstrap.kubernetes.io/token',
      data: Object.fromEntries(
        Object.entries({ 'token-id': 'abcdef', 'token-secret': '0123456789abcdef', 'usage-bootstrap-authentication': 'true', ...extra.data }).map(([k, v]) => [k, b64(v)]),
      ),
      ...(extra.type ? { type: extra.type } : {}),
    }) as KObject;
    const auth = (s: KObject) => bootstrapTokenAuthenticator(async (name) => (name === 'bootstrap-token-abcdef' ? s : undefined)).authenticateToken('abcdef.0123456789abcdef', undefined);
    assert.deepEqual(await auth(secret({ data: { 'auth-extra-groups': 'system:bootstrappers:z,system:bootstrappers:a,system:bootstrappers:z' } })), {
      status: 'authenticated',
      user: { name: 'system:bootstrap:abcdef', groups: ['system:bootstrappers', 'system:bootstrappers:a', 'system:bootstrappers:z'] },
    });
    assert.deepEqual(await auth(secret({ data: { 'auth-extra-groups': 'system:masters' } })), { status: 'unknown' });
    assert.deepEqual(await auth(secret({ type: 'Opaque' } as Partial<KObject>)), { status: 'unknown' });
    assert.deepEqual(await auth(secret({ metadata: { deletionTimestamp: new Date().toISOString() } })), { status: 'unknown' });
    assert.deepEqual(await auth(secret({ data: { expiration: 'tomorrow' } })), { status: 'unknown' });
  });

  it('WebSocket requests may carry the bearer token as a subprotocol, removed once used', async () => {
    const auth = webSocketProtocolAuthenticator(tokenTableAuthenticator(new Map([['ws-token', { name: 'ws-user', groups: ['g'] }]])), []);
    const req = (protocols: string[], upgrade = true) =>
      ({
        headers: {
          ...(upgrade ? { connection: 'keep-alive, Upgrade', upgrade: 'websocket' } : {}),
          'sec-websocket-protocol': protocols.join(', '),
        },
      }) as unknown as ApiRequest;
    const bearer = (t: string) => `base64url.bearer.authorization.k8s.io.${Buffer.from(t).toString('base64url')}`;
    const ok = req(['v4.channel.k8s.io', bearer('ws-token')]);
    assert.deepEqual(await auth.authenticate(ok), { status: 'authenticated', user: { name: 'ws-user', groups: ['g'] } });
    assert.equal(ok.headers['sec-websocket-protocol'], 'v4.channel.k8s.io');
    assert.deepEqual(await auth.authenticate(req([bearer('ws-token')])), { status: 'failed', reason: 'missing additional subprotocol' });
    assert.deepEqual(await auth.authenticate(req(['v4.channel.k8s.io', bearer('other')])), { status: 'failed', reason: 'invalid bearer token' });
    assert.deepEqual(await auth.authenticate(req(['v4.channel.k8s.io', bearer('a'), bearer('b')])), {
      status: 'failed',
      reason: 'multiple base64.bearer.authorization tokens specified',
    });
    assert.deepEqual(await auth.authenticate(req(['v4.channel.k8s.io', 'base64url.bearer.authorization.k8s.io.a+b'])), {
      status: 'failed',
      reason: 'invalid base64.bearer.authorization token encoding',
    });
    assert.deepEqual(await auth.authenticate(req(['v4.channel.k8s.io', bearer('ws-token')], false)), { status: 'absent' });
    assert.deepEqual(await auth.authenticate(req(['v4.channel.k8s.io'])), { status: 'absent' });
  });

  it('a WebSocket upgrade authenticates with the token subprotocol through the server', { skip }, async () => {
    const upgrade = (token: string) =>
      new Promise<{ code: number; body: string }>((resolve, reject) => {
        const req = request(`${c.url}/api/v1/namespaces/default/pods/nothing/exec?command=ls&stdout=true`, {
          ca: servingCA,
          agent: false,
          headers: {
            Connection: 'Upgrade',
            Upgrade: 'websocket',
            'Sec-WebSocket-Version': '13',
            'Sec-WebSocket-Key': Buffer.from('0123456789abcdef').toString('base64'),
            'Sec-WebSocket-Protocol': `v4.channel.k8s.io, base64url.bearer.authorization.k8s.io.${Buffer.from(token).toString('base64url')}`,
          },
        });
        req.on('response', (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (d: Buffer) => chunks.push(d));
          res.on('end', () => resolve({ code: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
        });
        req.on('upgrade', (res, socket) => {
          socket.destroy();
          resolve({ code: res.statusCode ?? 0, body: '' });
        });
        req.on('error', reject);
        req.end();
      });
    const hooked = await upgrade('hooked-ws');
    assert.equal(hooked.code, 403, hooked.body);
    assert.match(hooked.body, /User \\"hooked\\" cannot get resource \\"pods\/exec\\"/);
    assert.equal((await upgrade('stranger-token')).code, 401);
  });

  it('the TokenReview API reviews webhook and bootstrap tokens with the same authenticators', { skip }, async () => {
    const review = async (token: string) =>
      (await c.request('POST', '/apis/authentication.k8s.io/v1/tokenreviews', { body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token } } })).json
        .status as Record<string, unknown>;
    assert.deepEqual((await review('hooked-review'))['user'], { username: 'hooked', uid: '42', groups: ['hook-group', 'system:authenticated'], extra: { scope: ['a'] } });
    const bootstrap = await review('abcdef.0123456789abcdef');
    assert.equal(bootstrap['authenticated'], true);
    assert.deepEqual(bootstrap['user'], { username: 'system:bootstrap:abcdef', groups: ['system:bootstrappers', 'system:bootstrappers:workers', 'system:authenticated'] });
    assert.notEqual((await review('old111.0123456789abcdef'))['authenticated'], true);
  });
});
