/**
 * More options of document 2 on the real bin/orch-apiserver, checked from outside (HTTPS requests, kubectl, the
 * audit log file, etcd read with its own client). Two server starts carry them all:
 *
 * - embedded store: the watch-cache sizes (the watch_cache_capacity metric), the admission plugin switches,
 *   --allow-privileged, a legacy-format batch audit log, and the service-account token options (discovery
 *   document, TokenRequest's cap and audiences, the token accepted, the year-long pod-bound token, a legacy
 *   token not looked up);
 * - etcd over TLS: the --kvstore-* client options and prefix, compaction, encryption at rest seen in etcd, and
 *   --watch-cache=false (lists with resourceVersion=0 paged by storage, no cache metrics);
 * - authentication and authorization: the request-header options (a front proxy's client certificate and
 *   identity headers), a token webhook and an authorization webhook the test serves (the review versions and
 *   the token cache), an ABAC policy file, and audit log rotation (size, backups, gzip, the JSON version);
 * - OIDC: an issuer the test serves over TLS, every --oidc-* option, the derived user seen in RBAC's answers;
 * - the audit webhook: a receiver the test serves (first answer 500, then 200), every --audit-webhook-* option,
 *   and the log's truncation options beside it.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, request as httpsRequest, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Etcd3 } from 'etcd3';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from 'jose';
import { stringify } from 'yaml';
import { makeCA, makeClientCert, makeServingCert } from '../../src/server/certs.js';
import { startBinCluster, type BinCluster } from '../helpers/binserver.js';
import { requireBinary } from '../helpers/binaries.js';
import { startEtcd, type EtcdProcess } from '../helpers/etcd.js';
import { eventually } from '../helpers/eventually.js';

type Json = Record<string, any>;

const podBody = (name: string, extra: Json = {}) =>
  JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { containers: [{ name: 'c', image: 'busybox', imagePullPolicy: 'IfNotPresent', ...extra }] } });

void describe('server options on the binary: embedded store', () => {
  let c: BinCluster;
  let dir = '';
  const auditLog = () => join(dir, 'audit.log');

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'orch-optbin-more-'));
    const keys = generateKeyPairSync('rsa', { modulusLength: 2048, publicKeyEncoding: { type: 'spki', format: 'pem' }, privateKeyEncoding: { type: 'pkcs8', format: 'pem' } });
    await writeFile(join(dir, 'sa.pub'), keys.publicKey);
    await writeFile(join(dir, 'sa.key'), keys.privateKey, { mode: 0o600 });
    await writeFile(
      join(dir, 'audit-policy.yaml'),
      ['apiVersion: audit.k8s.io/v1', 'kind: Policy', 'rules:', '- level: Metadata', '  resources: [{group: "", resources: [configmaps]}]', '- level: None', ''].join('\n'),
    );
    c = await startBinCluster([
      '--default-watch-cache-size=50',
      '--watch-cache-sizes=configmaps#7,secrets#0',
      '--enable-admission-plugins=AlwaysPullImages',
      '--disable-admission-plugins=NamespaceLifecycle',
      '--allow-privileged=true',
      `--audit-policy-file=${join(dir, 'audit-policy.yaml')}`,
      `--audit-log-path=${auditLog()}`,
      '--audit-log-format=legacy',
      '--audit-log-mode=batch',
      '--audit-log-batch-buffer-size=100',
      '--audit-log-batch-max-size=1',
      '--audit-log-batch-max-wait=1s',
      '--audit-log-batch-throttle-enable=true',
      '--audit-log-batch-throttle-qps=50',
      '--audit-log-batch-throttle-burst=5',
      '--service-account-issuer=https://issuer.optbin.example',
      `--service-account-key-file=${join(dir, 'sa.pub')}`,
      `--service-account-signing-key-file=${join(dir, 'sa.key')}`,
      '--api-audiences=aud-a,aud-b',
      '--service-account-max-token-expiration=2h',
      '--service-account-jwks-uri=https://keys.optbin.example/openid/v1/jwks',
      '--service-account-extend-token-expiration=true',
      '--service-account-lookup=false',
    ]);
  });
  after(async () => {
    await c?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  void it('--default-watch-cache-size and --watch-cache-sizes: the cache capacities in /metrics (size 0: no cache)', async () => {
    const m = await c.request('GET', '/metrics');
    assert.equal(m.status, 200);
    assert.match(m.text, /^watch_cache_capacity\{resource="\*core\.ConfigMap"\} 7$/m);
    assert.match(m.text, /^watch_cache_capacity\{resource="\*rbac\.ClusterRole"\} 50$/m);
    assert.doesNotMatch(m.text, /^watch_cache_capacity\{resource="\*core\.Secret"\}/m);
  });

  void it('--enable-admission-plugins=AlwaysPullImages, --allow-privileged=true', async () => {
    const r = await c.request('POST', '/api/v1/namespaces/default/pods', { body: podBody('priv', { securityContext: { privileged: true } }) });
    assert.equal(r.status, 201, r.text);
    assert.equal(r.json.spec.containers[0].imagePullPolicy, 'Always', 'AlwaysPullImages rewrote IfNotPresent');
    assert.equal(r.json.spec.containers[0].securityContext.privileged, true);
  });

  void it('--disable-admission-plugins=NamespaceLifecycle: a ConfigMap in a namespace that does not exist is admitted, and audited', async () => {
    const r = await c.kubectl(['create', 'configmap', 'ghostly', '-n', 'ghost-ns', '--from-literal=a=b']);
    assert.equal(r.code, 0, r.stderr);
    // --audit-log-format=legacy in batch mode: one text line per event, written within the batch wait
    const line = await eventually('the legacy audit line', async () => {
      const text = await readFile(auditLog(), 'utf8').catch(() => '');
      return text.split('\n').find((l) => / AUDIT: .*method="create".*namespace="ghost-ns".*stage="ResponseComplete"|stage="ResponseComplete".*method="create".*namespace="ghost-ns"/.test(l));
    }, { timeoutMs: 15_000 });
    assert.match(
      line,
      /^\d{4}-\d\d-\d\dT[\d:.]+[Z+-][\d:]* AUDIT: id="[0-9a-f-]{36}" stage="ResponseComplete" ip="127\.0\.0\.1" method="create" user="admin" groups="\\"system:masters\\",\\"system:authenticated\\"" as="<self>" asgroups="<lookup>" user-agent="[^"]*" namespace="ghost-ns" uri="\/api\/v1\/namespaces\/ghost-ns\/configmaps[^"]*" response="201"$/,
    );
    const text = await readFile(auditLog(), 'utf8');
    assert.ok(!text.includes('/api/v1/namespaces/default/pods'), 'the policy leaves pods out (level None)');
  });

  void it('service-account options: --service-account-jwks-uri, --api-audiences, --service-account-max-token-expiration', async () => {
    const disc = await c.request('GET', '/.well-known/openid-configuration');
    assert.equal(disc.status, 200, disc.text);
    assert.equal(disc.json.issuer, 'https://issuer.optbin.example');
    assert.equal(disc.json.jwks_uri, 'https://keys.optbin.example/openid/v1/jwks');
    assert.equal((await c.kubectl(['create', 'serviceaccount', 'robot'])).code, 0);
    const tr = await c.request('POST', '/api/v1/namespaces/default/serviceaccounts/robot/token', {
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 36_000 } },
    });
    assert.equal(tr.status, 201, tr.text);
    const left = Date.parse(tr.json.status.expirationTimestamp) - Date.now();
    assert.ok(left > 7_000_000 && left <= 7_200_000, `capped to 2h (${left} ms left)`);
    const token: string = tr.json.status.token;
    const claims = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')) as Json;
    assert.deepEqual(claims.aud, ['aud-a', 'aud-b'], 'the default audiences are --api-audiences');
    assert.equal(claims.iss, 'https://issuer.optbin.example');
    // the token authenticates: a review of itself names the service account
    const review = await c.server.request('/apis/authorization.k8s.io/v1/selfsubjectrulesreviews', {
      method: 'POST',
      token,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectRulesReview', spec: { namespace: 'default' } }),
    });
    assert.equal(review.status, 201, review.body);
  });

  void it('--service-account-lookup=false: a legacy token still authenticates after its Secret is deleted', async () => {
    assert.equal((await c.kubectl(['create', 'serviceaccount', 'legacy'])).code, 0);
    const secret = { apiVersion: 'v1', kind: 'Secret', type: 'kubernetes.io/service-account-token', metadata: { name: 'legacy-token', annotations: { 'kubernetes.io/service-account.name': 'legacy' } } };
    assert.equal((await c.kubectl(['create', '-f', '-'], { input: JSON.stringify(secret) })).code, 0);
    const token = await eventually('the tokens controller to fill the Secret', async () => {
      const r = await c.request('GET', '/api/v1/namespaces/default/secrets/legacy-token');
      const t = (r.json?.data as Json | undefined)?.token as string | undefined;
      return t ? Buffer.from(t, 'base64').toString('utf8') : undefined;
    }, { timeoutMs: 15_000 });
    const as = () => c.server.request('/api/v1/namespaces/default/configmaps', { token });
    assert.equal((await as()).status, 200);
    assert.equal((await c.kubectl(['delete', 'secret', 'legacy-token'])).code, 0);
    const after = await as();
    assert.equal(after.status, 200, `not looked up in storage: ${after.body}`);
  });

  void it('--service-account-extend-token-expiration: a pod-bound 3607 s token lives a year, past the 2h cap', async () => {
    const pod = await c.request('GET', '/api/v1/namespaces/default/pods/priv');
    assert.equal(pod.status, 200, pod.text);
    const ask = (seconds: number) =>
      c.request('POST', `/api/v1/namespaces/default/serviceaccounts/${pod.json.spec.serviceAccountName as string}/token`, {
        body: {
          apiVersion: 'authentication.k8s.io/v1',
          kind: 'TokenRequest',
          spec: { expirationSeconds: seconds, boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'priv', uid: pod.json.metadata.uid } },
        },
      });
    const extended = await ask(3607);
    assert.equal(extended.status, 201, extended.text);
    const claims = JSON.parse(Buffer.from((extended.json.status.token as string).split('.')[1]!, 'base64url').toString('utf8')) as Json;
    assert.ok(claims.exp - claims.iat > 364 * 24 * 3600, `exp - iat = ${claims.exp - claims.iat}`);
    assert.equal(claims['kubernetes.io'].warnafter, claims.iat + 3607);
    assert.equal(claims['kubernetes.io'].pod.name, 'priv');
    const capped = await ask(3608);
    const left = Date.parse(capped.json.status.expirationTimestamp) - Date.now();
    assert.ok(left <= 7_200_000, 'any other duration is capped by --service-account-max-token-expiration');
  });
});

void describe('server options on the binary: etcd over TLS', { skip: requireBinary(undefined, 'etcd') === null && !process.env.CI && 'etcd not installed' }, () => {
  let etcd: EtcdProcess;
  let c: BinCluster;
  let client: Etcd3;
  let dir = '';
  const secretValue = `plain-${randomBytes(6).toString('hex')}`;

  before(async () => {
    assert.ok(requireBinary(undefined, 'etcd'), 'etcd is installed');
    dir = await mkdtemp(join(tmpdir(), 'orch-optbin-etcd-'));
    const ca = await makeCA('optbin-etcd-ca');
    const server = await makeServingCert(ca.cert, ca.key, 'etcd', ['127.0.0.1', 'localhost']);
    const cl = await makeClientCert({ caCert: ca.cert, caKey: ca.key, commonName: 'orch-apiserver' });
    const f = (n: string) => join(dir, n);
    await writeFile(f('ca.crt'), ca.cert);
    await writeFile(f('server.crt'), server.cert);
    await writeFile(f('server.key'), server.key, { mode: 0o600 });
    await writeFile(f('client.crt'), cl.cert);
    await writeFile(f('client.key'), cl.key, { mode: 0o600 });
    etcd = await startEtcd({ tls: { certFile: f('server.crt'), keyFile: f('server.key'), caFile: f('ca.crt'), clientCertFile: f('client.crt'), clientKeyFile: f('client.key') } });
    client = new Etcd3({ hosts: etcd.endpoint, credentials: { rootCertificate: Buffer.from(ca.cert), certChain: Buffer.from(cl.cert), privateKey: Buffer.from(cl.key) } });
    await writeFile(
      f('encryption.yaml'),
      [
        'apiVersion: apiserver.config.k8s.io/v1',
        'kind: EncryptionConfiguration',
        'resources:',
        '- resources: [secrets]',
        '  providers:',
        `  - aescbc: {keys: [{name: key1, secret: ${randomBytes(32).toString('base64')}}]}`,
        '  - identity: {}',
        '',
      ].join('\n'),
    );
    c = await startBinCluster([
      `--kvstore-servers=${etcd.endpoint}`,
      `--kvstore-cafile=${f('ca.crt')}`,
      `--kvstore-certfile=${f('client.crt')}`,
      `--kvstore-keyfile=${f('client.key')}`,
      '--kvstore-prefix=/optbin-registry',
      '--kvstore-compaction-interval=1s',
      '--kvstore-healthcheck-timeout=5s',
      '--storage-backend=etcd3',
      `--encryption-provider-config=${f('encryption.yaml')}`,
      '--watch-cache=false',
    ]);
  });
  after(async () => {
    await c?.stop();
    client?.close();
    await etcd?.cleanup();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  void it('--kvstore-cafile/--kvstore-certfile/--kvstore-keyfile and --kvstore-prefix: objects under the prefix in the TLS etcd; /readyz/etcd', async () => {
    assert.equal((await c.kubectl(['create', 'configmap', 'cm1', '--from-literal=k=v'])).code, 0);
    const kv = await client.get('/optbin-registry/configmaps/default/cm1').buffer();
    assert.ok(kv, 'the ConfigMap is stored under the prefix');
    const none = await client.getAll().prefix('/registry/').keys();
    assert.deepEqual(none, [], 'nothing under the default prefix');
    const ready = await c.request('GET', '/readyz/etcd');
    assert.equal(ready.status, 200, ready.text);
  });

  void it('--encryption-provider-config: the Secret is aescbc ciphertext in etcd and plain through kubectl', async () => {
    assert.equal((await c.kubectl(['create', 'secret', 'generic', 's1', `--from-literal=v=${secretValue}`])).code, 0);
    const raw = (await client.get('/optbin-registry/secrets/default/s1').buffer())!;
    assert.ok(raw.subarray(0, 23).toString('latin1').startsWith('k8s:enc:aescbc:v1:key1:'), raw.subarray(0, 30).toString('latin1'));
    assert.ok(!raw.includes(secretValue), 'the value is not stored in the clear');
    const got = await c.kubectl(['get', 'secret', 's1', '-o', 'jsonpath={.data.v}']);
    assert.equal(Buffer.from(got.stdout, 'base64').toString('utf8'), secretValue);
  });

  void it('--kvstore-compaction-interval: old revisions are compacted in etcd', async () => {
    assert.equal((await c.kubectl(['create', 'configmap', 'cm2', '--from-literal=n=0'])).code, 0);
    const first = Number((await c.kubectl(['get', 'configmap', 'cm2', '-o', 'jsonpath={.metadata.resourceVersion}'])).stdout);
    assert.equal((await c.kubectl(['patch', 'configmap', 'cm2', '-p', '{"data":{"n":"1"}}'])).code, 0);
    await eventually('revision of cm2 compacted', async () => {
      try {
        await client.get('/optbin-registry/configmaps/default/cm2').revision(first).buffer();
        return undefined;
      } catch (err) {
        return /compacted/.test(String(err)) || undefined;
      }
    }, { timeoutMs: 20_000 });
  });

  void it('--watch-cache=false: a list with resourceVersion=0 is paged by storage; no cache metrics', async () => {
    for (const n of ['p1', 'p2', 'p3']) assert.equal((await c.kubectl(['create', 'configmap', n, '-n', 'default'])).code, 0);
    const list = await c.request('GET', '/api/v1/namespaces/default/configmaps?resourceVersion=0&limit=2');
    assert.equal(list.status, 200, list.text);
    assert.equal(list.json.items.length, 2, 'storage honours the limit (the cache would not)');
    assert.ok(list.json.metadata.continue);
    const m = await c.request('GET', '/metrics');
    assert.doesNotMatch(m.text, /^watch_cache_capacity\{/m);
  });
});

/** An HTTPS webhook answering TokenReviews (/authn) and SubjectAccessReviews (/authz), keeping what it was sent. */
async function reviewWebhook(dir: string): Promise<{ server: Server; reviews: Json[]; kubeconfig(path: string): Promise<string> }> {
  const ca = await makeCA('optbin-hook-ca');
  const serving = await makeServingCert(ca.cert, ca.key, 'hook', ['127.0.0.1']);
  const reviews: Json[] = [];
  const server = createServer({ cert: serving.cert, key: serving.key }, (req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (d: string) => (body += d));
    req.on('end', () => {
      const review = JSON.parse(body) as Json;
      reviews.push({ ...review, path: req.url });
      res.setHeader('content-type', 'application/json');
      if (req.url === '/authn') {
        const ok = review.spec.token === 'hook-token-1';
        res.end(JSON.stringify({ apiVersion: review.apiVersion, kind: 'TokenReview', status: ok ? { authenticated: true, user: { username: 'hooked', groups: ['hook-group'] } } : { authenticated: false } }));
      } else {
        // allows the user hooked everything; no opinion on anyone else
        const allowed = review.spec.user === 'hooked';
        res.end(JSON.stringify({ apiVersion: review.apiVersion, kind: 'SubjectAccessReview', status: { allowed } }));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    server,
    reviews,
    async kubeconfig(path) {
      const file = join(dir, `${path}.kubeconfig`);
      await writeFile(
        file,
        stringify({
          apiVersion: 'v1',
          kind: 'Config',
          clusters: [{ name: 'hook', cluster: { server: `https://127.0.0.1:${port}/${path}`, 'certificate-authority-data': Buffer.from(ca.cert).toString('base64') } }],
          users: [{ name: 'apiserver', user: {} }],
          contexts: [{ name: 'hook', context: { cluster: 'hook', user: 'apiserver' } }],
          'current-context': 'hook',
        }),
      );
      return file;
    },
  };
}

void describe('server options on the binary: authentication, authorization, audit rotation', () => {
  let c: BinCluster;
  let dir = '';
  let hook: Awaited<ReturnType<typeof reviewWebhook>>;
  const proxy: { cert: string; key: string } = { cert: '', key: '' };
  const stranger: { cert: string; key: string } = { cert: '', key: '' };
  const auditDir = () => join(dir, 'audit');

  /** A request with a client certificate and extra headers; the status and body. */
  const call = (path: string, o: { cert?: { cert: string; key: string }; token?: string; headers?: Record<string, string>; method?: string; body?: string } = {}) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = httpsRequest(
        c.url + path,
        {
          method: o.method ?? 'GET',
          ca: c.caCert,
          agent: false,
          ...(o.cert ? { cert: o.cert.cert, key: o.cert.key } : {}),
          headers: { ...(o.token ? { authorization: `Bearer ${o.token}` } : {}), ...(o.body ? { 'content-type': 'application/json' } : {}), ...o.headers },
        },
        (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (d: string) => (body += d));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      req.on('error', reject);
      req.end(o.body);
    });

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'orch-optbin-authn-'));
    const proxyCA = await makeCA('optbin-front-proxy-ca');
    Object.assign(proxy, await makeClientCert({ caCert: proxyCA.cert, caKey: proxyCA.key, commonName: 'front-proxy' }));
    Object.assign(stranger, await makeClientCert({ caCert: proxyCA.cert, caKey: proxyCA.key, commonName: 'not-allowed' }));
    await writeFile(join(dir, 'front-proxy-ca.crt'), proxyCA.cert);
    hook = await reviewWebhook(dir);
    // ABAC: bob reads namespaces, the group readers reads configmaps; admin (the token file's) everything
    await writeFile(
      join(dir, 'admission.yaml'),
      [
        'apiVersion: apiserver.config.k8s.io/v1',
        'kind: AdmissionConfiguration',
        'plugins:',
        '- name: PodSecurity',
        '  configuration:',
        '    apiVersion: pod-security.admission.config.k8s.io/v1beta1',
        '    kind: PodSecurityConfiguration',
        '    defaults: {enforce: baseline, enforce-version: latest}',
        '',
      ].join('\n'),
    );
    await writeFile(
      join(dir, 'abac.jsonl'),
      [
        { apiVersion: 'abac.authorization.kubernetes.io/v1beta1', kind: 'Policy', spec: { user: 'bob', resource: 'namespaces', namespace: '*', apiGroup: '*', readonly: true } },
        { apiVersion: 'abac.authorization.kubernetes.io/v1beta1', kind: 'Policy', spec: { group: 'readers', resource: 'configmaps', namespace: '*', apiGroup: '*', readonly: true } },
        { apiVersion: 'abac.authorization.kubernetes.io/v1beta1', kind: 'Policy', spec: { group: 'system:masters', resource: '*', namespace: '*', apiGroup: '*', nonResourcePath: '*' } },
      ]
        .map((l) => JSON.stringify(l))
        .join('\n') + '\n',
    );
    await writeFile(
      join(dir, 'audit-policy.yaml'),
      ['apiVersion: audit.k8s.io/v1', 'kind: Policy', 'omitStages: [RequestReceived]', 'rules:', '- level: Request', '  resources: [{group: "", resources: [configmaps]}]', '- level: Metadata', ''].join('\n'),
    );
    c = await startBinCluster([
      `--requestheader-client-ca-file=${join(dir, 'front-proxy-ca.crt')}`,
      '--requestheader-allowed-names=front-proxy',
      '--requestheader-username-headers=X-Remote-User',
      '--requestheader-group-headers=X-Remote-Group',
      '--requestheader-extra-headers-prefix=X-Remote-Extra-',
      `--authentication-token-webhook-config-file=${await hook.kubeconfig('authn')}`,
      '--authentication-token-webhook-version=v1',
      '--authentication-token-webhook-cache-ttl=1h',
      '--authorization-mode=ABAC,Webhook',
      `--authorization-policy-file=${join(dir, 'abac.jsonl')}`,
      `--authorization-webhook-config-file=${await hook.kubeconfig('authz')}`,
      '--authorization-webhook-version=v1',
      `--audit-policy-file=${join(dir, 'audit-policy.yaml')}`,
      `--audit-log-path=${join(auditDir(), 'audit.log')}`,
      '--audit-log-version=audit.k8s.io/v1beta1',
      '--audit-log-maxsize=1',
      '--audit-log-maxbackup=1',
      '--audit-log-compress',
      `--admission-control-config-file=${join(dir, 'admission.yaml')}`,
    ]);
  });
  after(async () => {
    await c?.stop();
    hook?.server.closeAllConnections();
    hook?.server.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  void it('--requestheader-*: the front proxy names the user, groups and extras; another certificate of the CA is not trusted', async () => {
    const headers = { 'X-Remote-User': 'bob', 'X-Remote-Group': 'readers', 'X-Remote-Extra-Scopes': 'view' };
    assert.equal((await call('/api/v1/namespaces', { cert: proxy, headers })).status, 200, 'bob may list namespaces (ABAC)');
    assert.equal((await call('/api/v1/namespaces/default/configmaps', { cert: proxy, headers })).status, 200, 'the group readers may list configmaps (ABAC)');
    assert.equal((await call('/api/v1/namespaces/default/secrets', { cert: proxy, headers })).status, 403, 'nothing allows secrets');
    const notAllowed = await call('/api/v1/namespaces', { cert: stranger, headers });
    // the request-header authenticator's error fails the request before the anonymous fallback, as in 1.23
    assert.equal(notAllowed.status, 401, `a name outside --requestheader-allowed-names is refused: ${notAllowed.body}`);
    // the audit log names the proxied user with the extra
    const ev = await eventually('the audited proxied request', async () => {
      const text = await readFile(join(auditDir(), 'audit.log'), 'utf8').catch(() => '');
      return text
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Json)
        .find((e) => e.user?.username === 'bob' && e.requestURI === '/api/v1/namespaces');
    });
    assert.equal(ev.apiVersion, 'audit.k8s.io/v1beta1', '--audit-log-version');
    assert.deepEqual(ev.user.groups, ['readers', 'system:authenticated']);
    assert.deepEqual(ev.user.extra, { scopes: ['view'] });
  });

  void it('token webhook v1 with its cache; authorization webhook v1 after ABAC has no opinion', async () => {
    const before = hook.reviews.filter((r) => r.path === '/authn').length;
    for (let i = 0; i < 3; i++) assert.equal((await call('/api/v1/namespaces/default/pods', { token: 'hook-token-1' })).status, 200);
    const authn = hook.reviews.filter((r) => r.path === '/authn');
    assert.equal(authn.length - before, 1, 'the answer is cached (--authentication-token-webhook-cache-ttl=1h)');
    assert.equal(authn.at(-1)!.apiVersion, 'authentication.k8s.io/v1');
    const authz = hook.reviews.filter((r) => r.path === '/authz' && r.spec.user === 'hooked');
    assert.ok(authz.length >= 1, 'ABAC has no rule for hooked: the webhook decided');
    assert.equal(authz.at(-1)!.apiVersion, 'authorization.k8s.io/v1');
    assert.deepEqual(authz.at(-1)!.spec.groups, ['hook-group', 'system:authenticated']);
    assert.equal((await call('/api/v1/namespaces', { token: 'wrong' })).status, 401);
  });

  void it('--admission-control-config-file: PodSecurity enforces baseline by default', async () => {
    const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'hostnet' }, spec: { hostNetwork: true, containers: [{ name: 'c', image: 'busybox' }] } };
    const r = await c.request('POST', '/api/v1/namespaces/default/pods', { body: pod });
    assert.equal(r.status, 403, r.text);
    assert.match(r.json.message as string, /violates PodSecurity "baseline:latest": host namespaces \(hostNetwork=true\)/);
  });

  void it('--audit-log-maxsize, --audit-log-maxbackup and --audit-log-compress: rotated at 1 MiB, one gzip backup kept', async () => {
    const big = 'x'.repeat(400 * 1024);
    for (let i = 0; i < 8; i++) {
      const r = await c.request('POST', '/api/v1/namespaces/default/configmaps', { body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `big-${i}` }, data: { big } } });
      assert.equal(r.status, 201, r.text);
    }
    // rotation compresses and prunes after the switch, as lumberjack's mill does: wait for it to settle
    let names: string[] = [];
    const backups = await eventually(() => `one gzip backup (files: ${names.join(' ')})`, async () => {
      names = await readdir(auditDir());
      const b = names.filter((n) => n !== 'audit.log');
      return b.length === 1 && b[0]!.endsWith('.gz') ? b : undefined;
    });
    assert.match(backups[0]!, /^audit-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d{3}\.log\.gz$/);
  });
});

void describe('server options on the binary: OIDC', () => {
  let c: BinCluster;
  let dir = '';
  let issuerServer: Server;
  let issuer = '';
  const es = { kid: 'es-1', alg: 'ES256' } as { kid: string; alg: string; privateKey: CryptoKey; jwk: Json };
  const rs = { kid: 'rs-1', alg: 'RS256' } as { kid: string; alg: string; privateKey: CryptoKey; jwk: Json };

  const sign = (claims: Json, key = es) => {
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT(claims).setProtectedHeader({ alg: key.alg, kid: key.kid }).setIssuer(issuer).setAudience('orch-cli').setIssuedAt(now).setExpirationTime(now + 600).sign(key.privateKey);
  };
  const get = (token: string) => c.server.request('/api/v1/namespaces/default/configmaps', { token });

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'orch-optbin-oidc-'));
    for (const k of [es, rs]) {
      const pair = await generateKeyPair(k.alg);
      k.privateKey = pair.privateKey;
      k.jwk = { ...(await exportJWK(pair.publicKey)), kid: k.kid, alg: k.alg, use: 'sig' };
    }
    const ca = await makeCA('optbin-oidc-ca');
    await writeFile(join(dir, 'oidc-ca.crt'), ca.cert);
    const serving = await makeServingCert(ca.cert, ca.key, 'issuer', ['127.0.0.1']);
    issuerServer = createServer({ cert: serving.cert, key: serving.key }, (req, res) => {
      res.setHeader('content-type', 'application/json');
      if (req.url === '/.well-known/openid-configuration') res.end(JSON.stringify({ issuer, jwks_uri: `${issuer}/keys` }));
      else if (req.url === '/keys') res.end(JSON.stringify({ keys: [es.jwk, rs.jwk] }));
      else {
        res.statusCode = 404;
        res.end('{}');
      }
    });
    await new Promise<void>((resolve) => issuerServer.listen(0, '127.0.0.1', resolve));
    issuer = `https://127.0.0.1:${(issuerServer.address() as AddressInfo).port}`;
    c = await startBinCluster([
      '--authorization-mode=RBAC',
      `--oidc-issuer-url=${issuer}`,
      '--oidc-client-id=orch-cli',
      `--oidc-ca-file=${join(dir, 'oidc-ca.crt')}`,
      '--oidc-username-claim=email',
      '--oidc-username-prefix=oidc-user:',
      '--oidc-groups-claim=roles',
      '--oidc-groups-prefix=g:',
      '--oidc-required-claim=tenant=blue',
      '--oidc-signing-algs=ES256',
    ]);
    assert.equal((await c.kubectl(['create', 'rolebinding', 'oidc-viewers', '--clusterrole=view', '--group=g:viewers', '-n', 'default'])).code, 0);
  });
  after(async () => {
    await c?.stop();
    issuerServer?.closeAllConnections();
    issuerServer?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  void it('the user from --oidc-username-claim with --oidc-username-prefix; groups from --oidc-groups-claim with --oidc-groups-prefix', async () => {
    const plain = await get(await sign({ sub: 's1', email: 'ann@example.com', email_verified: true, tenant: 'blue' }));
    assert.equal(plain.status, 403, plain.body);
    assert.match(JSON.parse(plain.body).message as string, /^configmaps is forbidden: User "oidc-user:ann@example\.com" cannot list resource "configmaps"/);
    const viewer = await get(await sign({ sub: 's2', email: 'ben@example.com', email_verified: true, tenant: 'blue', roles: ['viewers'] }));
    assert.equal(viewer.status, 200, viewer.body);
  });

  void it('--oidc-required-claim and --oidc-signing-algs refuse a token (401)', async () => {
    const wrongTenant = await get(await sign({ sub: 's3', email: 'cy@example.com', email_verified: true, tenant: 'red', roles: ['viewers'] }));
    assert.equal(wrongTenant.status, 401, wrongTenant.body);
    const rsSigned = await get(await sign({ sub: 's4', email: 'di@example.com', email_verified: true, tenant: 'blue', roles: ['viewers'] }, rs));
    assert.equal(rsSigned.status, 401, rsSigned.body);
  });
});

void describe('server options on the binary: audit webhook', () => {
  let c: BinCluster;
  let dir = '';
  let receiver: Server;
  const batches: Json[] = [];
  let failures = 0;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'orch-optbin-auditwh-'));
    const ca = await makeCA('optbin-audit-ca');
    const serving = await makeServingCert(ca.cert, ca.key, 'audit', ['127.0.0.1']);
    receiver = createServer({ cert: serving.cert, key: serving.key }, (req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (d: string) => (body += d));
      req.on('end', () => {
        // the first batch is refused once: the backend retries it after --audit-webhook-initial-backoff
        if (failures === 0) {
          failures++;
          res.statusCode = 500;
          res.end('{}');
          return;
        }
        batches.push(JSON.parse(body) as Json);
        res.end('{}');
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    await writeFile(
      join(dir, 'audit.kubeconfig'),
      stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'a', cluster: { server: `https://127.0.0.1:${(receiver.address() as AddressInfo).port}/audit`, 'certificate-authority-data': Buffer.from(ca.cert).toString('base64') } }],
        users: [{ name: 'a', user: {} }],
        contexts: [{ name: 'a', context: { cluster: 'a', user: 'a' } }],
        'current-context': 'a',
      }),
    );
    await writeFile(
      join(dir, 'policy.yaml'),
      ['apiVersion: audit.k8s.io/v1', 'kind: Policy', 'omitStages: [RequestReceived]', 'rules:', '- level: Request', '  resources: [{group: "", resources: [configmaps]}]', '- level: None', ''].join('\n'),
    );
    c = await startBinCluster([
      `--audit-policy-file=${join(dir, 'policy.yaml')}`,
      `--audit-webhook-config-file=${join(dir, 'audit.kubeconfig')}`,
      '--audit-webhook-mode=batch',
      '--audit-webhook-version=audit.k8s.io/v1beta1',
      '--audit-webhook-initial-backoff=100ms',
      '--audit-webhook-batch-buffer-size=1000',
      '--audit-webhook-batch-max-size=2',
      '--audit-webhook-batch-max-wait=200ms',
      '--audit-webhook-batch-throttle-enable=true',
      '--audit-webhook-batch-throttle-qps=100',
      '--audit-webhook-batch-throttle-burst=10',
      '--audit-webhook-truncate-enabled',
      '--audit-webhook-truncate-max-event-size=20000',
      '--audit-webhook-truncate-max-batch-size=200000',
      `--audit-log-path=${join(dir, 'audit.log')}`,
      '--audit-log-mode=batch',
      '--audit-log-truncate-enabled',
      '--audit-log-truncate-max-event-size=30000',
      '--audit-log-truncate-max-batch-size=300000',
    ]);
  });
  after(async () => {
    await c?.stop();
    receiver?.closeAllConnections();
    receiver?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  void it('batches of at most 2 events in v1beta1, the refused batch retried, a large event truncated', async () => {
    for (let i = 0; i < 5; i++) assert.equal((await c.kubectl(['create', 'configmap', `wh-${i}`, '--from-literal=k=v'])).code, 0);
    const big = await c.request('POST', '/api/v1/namespaces/default/configmaps', { body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'wh-big' }, data: { big: 'y'.repeat(50_000) } } });
    assert.equal(big.status, 201, big.text);
    const events = () => batches.flatMap((b) => b.items as Json[]);
    await eventually(() => `all six creates delivered (${events().length} events so far)`, () => {
      const names = new Set(events().map((e) => e.objectRef?.name as string));
      return ['wh-0', 'wh-1', 'wh-2', 'wh-3', 'wh-4', 'wh-big'].every((n) => names.has(n)) || undefined;
    }, { timeoutMs: 20_000 });
    assert.equal(failures, 1);
    for (const b of batches) {
      assert.equal(b.apiVersion, 'audit.k8s.io/v1beta1');
      assert.equal(b.kind, 'EventList');
      assert.ok((b.items as Json[]).length <= 2, `batch of ${(b.items as Json[]).length}`);
    }
    const small = events().find((e) => e.objectRef?.name === 'wh-0')!;
    assert.equal(small.requestObject?.metadata?.name, 'wh-0', 'level Request keeps the request body');
    const truncated = events().find((e) => e.objectRef?.name === 'wh-big')!;
    assert.equal(truncated.requestObject, undefined, 'the request body is dropped from an event over 20000 bytes');
    assert.equal(truncated.annotations?.['audit.k8s.io/truncated'], 'true');
  });

  void it('--audit-log-truncate-*: the log file gets the same truncation', async () => {
    const logged = await eventually('wh-big in the audit log', async () => {
      const text = await readFile(join(dir, 'audit.log'), 'utf8').catch(() => '');
      return text
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Json)
        .find((e) => e.objectRef?.name === 'wh-big');
    }, { timeoutMs: 15_000 });
    assert.equal(logged.requestObject, undefined);
    assert.equal(logged.annotations?.['audit.k8s.io/truncated'], 'true');
  });
});
