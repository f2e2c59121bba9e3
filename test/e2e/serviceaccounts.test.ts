/**
 * Service accounts from outside, through kubectl and raw HTTPS: `kubectl create token` (audiences,
 * durations, pod binding) and the tokens it gives used with kubectl; TokenReview; expiry, audience and
 * issuer enforcement on tokens the test signs itself (RSA and ECDSA keys, two issuers); legacy secret tokens
 * made by the tokens controller; issuer discovery under RBAC; the `default` ServiceAccount and
 * kube-root-ca.crt controllers; the ServiceAccount admission plugin on pods.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync, randomUUID, type KeyObject } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { decodeJwt, decodeProtectedHeader, SignJWT } from 'jose';
import { parseServerOptions } from '../../src/server/options.js';
import { createControlPlane } from '../../src/server/controlplane.js';
import { keyIdOf } from '../../src/registry/kinds/authentication/tokens.js';
import { kubectlPath, startCluster, type TestCluster } from '../helpers/cluster.js';
import { eventually } from '../helpers/eventually.js';

const ISSUER = 'https://orch.test.example';
const OLD_ISSUER = 'https://old.test.example';

type Json = Record<string, any>;


describe('service accounts', { skip: kubectlPath() ? false : 'kubectl is not installed' }, () => {
  let c: TestCluster;
  let keyDir: string;
  let rsa: { privateKey: KeyObject; publicKey: KeyObject };
  let ec: { privateKey: KeyObject; publicKey: KeyObject };

  const review = async (token: string, audiences?: string[]): Promise<Json> => {
    const r = await c.request('POST', '/apis/authentication.k8s.io/v1/tokenreviews', {
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token, ...(audiences ? { audiences } : {}) } },
    });
    assert.equal(r.status, 201, r.text);
    return (r.json as Json)['status'] as Json;
  };
  const asToken = (token: string, args: string[]) => c.kubectl(['--token', token, ...args]);
  const createToken = async (args: string[]): Promise<string> => {
    const r = await c.kubectl(['create', 'token', ...args]);
    assert.equal(r.code, 0, r.stderr);
    return r.stdout.trim();
  };
  const getJson = async (args: string[]): Promise<Json> => {
    const r = await c.kubectl(['get', ...args, '-o', 'json']);
    assert.equal(r.code, 0, r.stderr);
    return JSON.parse(r.stdout) as Json;
  };
  const defaultAccount = (ns: string) =>
    eventually(`the default ServiceAccount in ${ns}`, async () => {
      const r = await c.request('GET', `/api/v1/namespaces/${ns}/serviceaccounts/default`);
      return r.status === 200 ? (r.json as Json) : undefined;
    });
  /** A token the test signs itself, with the claims of a bound token for default/default. */
  const signed = async (key: KeyObject, alg: string, claims: Json): Promise<string> => {
    const sa = await defaultAccount('default');
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({
      aud: [ISSUER],
      iat: now,
      nbf: now,
      exp: now + 3600,
      iss: ISSUER,
      sub: 'system:serviceaccount:default:default',
      'kubernetes.io': { namespace: 'default', serviceaccount: { name: 'default', uid: sa['metadata'].uid } },
      ...claims,
    })
      .setProtectedHeader({ alg, kid: keyIdOf(key) })
      .sign(key);
  };

  before(async () => {
    keyDir = await mkdtemp(join(tmpdir(), 'orch-sa-keys-'));
    rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
    ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    await writeFile(join(keyDir, 'sa.key'), rsa.privateKey.export({ format: 'pem', type: 'pkcs8' }));
    await writeFile(join(keyDir, 'ec.pub'), ec.publicKey.export({ format: 'pem', type: 'spki' }));
    c = await startCluster([
      '--authorization-mode=RBAC',
      `--service-account-issuer=${ISSUER}`,
      `--service-account-issuer=${OLD_ISSUER}`,
      `--service-account-key-file=${join(keyDir, 'sa.key')}`,
      `--service-account-key-file=${join(keyDir, 'ec.pub')}`,
      `--service-account-signing-key-file=${join(keyDir, 'sa.key')}`,
      '--service-account-max-token-expiration=2h',
    ]);
  });
  after(async () => {
    await c?.stop();
    await rm(keyDir, { recursive: true, force: true });
  });

  it('kubectl create token gives a token kubectl can use, reviewed as the service account', async () => {
    const sa = await defaultAccount('default');
    const token = await createToken(['default']);
    const claims = decodeJwt(token);
    assert.equal(claims.iss, ISSUER);
    assert.deepEqual(claims.aud, [ISSUER, OLD_ISSUER]);
    assert.equal(claims.sub, 'system:serviceaccount:default:default');
    assert.equal((claims.exp ?? 0) - (claims.iat ?? 0), 3600);
    assert.deepEqual(decodeProtectedHeader(token), { alg: 'RS256', kid: keyIdOf(rsa.publicKey) });

    const api = await asToken(token, ['get', '--raw', '/api']);
    assert.equal(api.code, 0, api.stderr);
    assert.equal((JSON.parse(api.stdout) as Json)['kind'], 'APIVersions');
    // RBAC: the account has no role to list pods; the 403 names the user.
    const pods = await asToken(token, ['get', 'pods']);
    assert.notEqual(pods.code, 0);
    assert.match(pods.stderr, /User "system:serviceaccount:default:default" cannot list resource "pods"/);

    const status = await review(token);
    assert.equal(status['authenticated'], true);
    assert.deepEqual(status['user'], {
      username: 'system:serviceaccount:default:default',
      uid: sa['metadata'].uid,
      groups: ['system:serviceaccounts', 'system:serviceaccounts:default', 'system:authenticated'],
    });
    assert.deepEqual(status['audiences'], [ISSUER, OLD_ISSUER]);

    // A --token-auth-file token knows no audiences: it is good for the API audiences only.
    const admin = await review(c.token);
    assert.equal(admin['user'].username, 'admin');
    assert.deepEqual(admin['audiences'], [ISSUER, OLD_ISSUER]);
    assert.equal((await review(c.token, ['vault']))['error'], 'invalid bearer token');
  });

  it('enforces audiences and durations', async () => {
    const token = await createToken(['default', '--audience', 'vault', '--duration', '10m']);
    const claims = decodeJwt(token);
    assert.deepEqual(claims.aud, ['vault']);
    assert.equal((claims.exp ?? 0) - (claims.iat ?? 0), 600);
    const forVault = await review(token, ['vault', 'other']);
    assert.equal(forVault['authenticated'], true);
    assert.deepEqual(forVault['audiences'], ['vault']);
    const forApi = await review(token);
    assert.equal(forApi['authenticated'], undefined);
    assert.equal(forApi['error'], `token audiences ["vault"] is invalid for the target audiences ["${ISSUER}" "${OLD_ISSUER}"]`);
    const api = await asToken(token, ['get', '--raw', '/api']);
    assert.notEqual(api.code, 0);
    assert.match(api.stderr, /Unauthorized/);

    // Capped by --service-account-max-token-expiration (2h); under 10 minutes is refused.
    const long = decodeJwt(await createToken(['default', '--duration', '5h']));
    assert.equal((long.exp ?? 0) - (long.iat ?? 0), 7200);
    const short = await c.kubectl(['create', 'token', 'default', '--duration', '1m']);
    assert.notEqual(short.code, 0);
    assert.match(short.stderr, /TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes/);
    const missing = await c.kubectl(['create', 'token', 'nobody']);
    assert.notEqual(missing.code, 0);
    assert.match(missing.stderr, /serviceaccounts "nobody" not found/);
  });

  it('checks signature, issuer and expiry of tokens it did not issue itself', async () => {
    const now = Math.floor(Date.now() / 1000);
    const expired = await signed(rsa.privateKey, 'RS256', { iat: now - 7200, nbf: now - 7200, exp: now - 120 });
    assert.equal((await review(expired))['error'], 'service account token has expired');
    assert.match((await asToken(expired, ['get', '--raw', '/api'])).stderr, /Unauthorized/);
    // Every --service-account-issuer is accepted; ECDSA keys of --service-account-key-file verify.
    const ecToken = await signed(ec.privateKey, 'ES256', { iss: OLD_ISSUER });
    assert.equal((await review(ecToken))['authenticated'], true);
    // An issuer the server does not know: not a service-account token at all.
    const stranger = await signed(rsa.privateKey, 'RS256', { iss: 'https://elsewhere.example' });
    assert.equal((await review(stranger))['error'], 'invalid bearer token');
    // A key the server does not have.
    const other = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const forged = await new SignJWT(decodeJwt(await signed(rsa.privateKey, 'RS256', {}))).setProtectedHeader({ alg: 'RS256' }).sign(other.privateKey);
    assert.match((await review(forged))['error'] as string, /go-jose: error in cryptographic primitive/);
    // A uid that is not the account's (deleted and made again).
    const stale = await signed(rsa.privateKey, 'RS256', { 'kubernetes.io': { namespace: 'default', serviceaccount: { name: 'default', uid: randomUUID() } } });
    assert.match((await review(stale))['error'] as string, /^service account UID \(.+\) does not match claim/);
  });

  it('admits pods with the default service account and the projected token volume, and refuses missing accounts', async () => {
    await defaultAccount('default');
    const created = await c.kubectl(['run', 'sa-pod', '--image=busybox', '--restart=Never', '--command', '--', 'sleep', '3600']);
    assert.equal(created.code, 0, created.stderr);
    const pod = await getJson(['pod', 'sa-pod']);
    const spec = pod['spec'] as Json;
    assert.equal(spec['serviceAccountName'], 'default');
    const volume = (spec['volumes'] as Json[]).find((v) => /^kube-api-access-[a-z0-9]{5}$/.test(v['name'] as string));
    assert.ok(volume, JSON.stringify(spec['volumes']));
    assert.deepEqual(volume['projected'], {
      defaultMode: 420,
      sources: [
        { serviceAccountToken: { expirationSeconds: 3607, path: 'token' } },
        { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
        { downwardAPI: { items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }] } },
      ],
    });
    assert.deepEqual(spec['containers'][0].volumeMounts, [{ name: volume['name'], readOnly: true, mountPath: '/var/run/secrets/kubernetes.io/serviceaccount' }]);

    const refused = await c.kubectl(['run', 'sa-pod-2', '--image=busybox', '--restart=Never', '--overrides', '{"spec":{"serviceAccountName":"missing"}}']);
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /pods "sa-pod-2" is forbidden: error looking up service account default\/missing: serviceaccount "missing" not found/);

    const optOut = await c.kubectl(['run', 'sa-pod-3', '--image=busybox', '--restart=Never', '--overrides', '{"spec":{"automountServiceAccountToken":false}}']);
    assert.equal(optOut.code, 0, optOut.stderr);
    assert.equal((await getJson(['pod', 'sa-pod-3']))['spec'].volumes, undefined);
  });

  it('binds a token to a pod: extras name the pod, and the token dies with it', async () => {
    const created = await c.kubectl(['run', 'bound-pod', '--image=busybox', '--restart=Never']);
    assert.equal(created.code, 0, created.stderr);
    const pod = await getJson(['pod', 'bound-pod']);
    const token = await createToken(['default', '--bound-object-kind', 'Pod', '--bound-object-name', 'bound-pod']);
    const status = await review(token);
    assert.equal(status['authenticated'], true);
    assert.deepEqual(status['user'].extra, {
      'authentication.kubernetes.io/pod-name': ['bound-pod'],
      'authentication.kubernetes.io/pod-uid': [pod['metadata'].uid],
    });
    // The projected volume's request (3607 s, bound to the pod, API audiences) gets a year, warning after 3607 s.
    const projected = await c.request('POST', '/api/v1/namespaces/default/serviceaccounts/default/token', {
      body: {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenRequest',
        spec: { expirationSeconds: 3607, boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: 'bound-pod', uid: pod['metadata'].uid } },
      },
    });
    assert.equal(projected.status, 201, projected.text);
    const answer = projected.json as Json;
    const extended = decodeJwt(answer['status'].token as string);
    assert.equal((extended.exp ?? 0) - (extended.iat ?? 0), 365 * 24 * 3600);
    assert.equal((extended['kubernetes.io'] as Json)['warnafter'], (extended.iat ?? 0) + 3607);
    assert.equal(Date.parse(answer['status'].expirationTimestamp as string) / 1000, (extended.iat ?? 0) + 3607);
    assert.deepEqual(answer['spec'].audiences, [ISSUER, OLD_ISSUER]);
    const wrongUid = await c.request('POST', '/api/v1/namespaces/default/serviceaccounts/default/token', {
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: 'bound-pod', uid: 'x' } } },
    });
    assert.equal(wrongUid.status, 409);
    assert.match((wrongUid.json as Json)['message'] as string, /^Operation cannot be fulfilled on Pod "bound-pod": the UID in the bound object reference \(x\) does not match/);
    const wrongKind = await c.kubectl(['create', 'token', 'default', '--bound-object-kind', 'Secret', '--bound-object-name', 'nope']);
    assert.match(wrongKind.stderr, /secrets "nope" not found/);
    const deleted = await c.kubectl(['delete', 'pod', 'bound-pod', '--grace-period=0', '--force']);
    assert.equal(deleted.code, 0, deleted.stderr);
    await eventually('the pod to go', async () => ((await c.request('GET', '/api/v1/namespaces/default/pods/bound-pod')).status === 404 ? true : undefined));
    assert.equal((await review(token))['error'], 'service account token has been invalidated');
    assert.match((await asToken(token, ['get', '--raw', '/api'])).stderr, /Unauthorized/);
  });

  it('makes legacy token secrets that authenticate until deleted', async () => {
    const secretName = await eventually('a token secret referenced by default/default', async () => {
      const sa = (await c.request('GET', '/api/v1/namespaces/default/serviceaccounts/default')).json as Json;
      return (sa['secrets'] as Json[] | undefined)?.[0]?.name as string | undefined;
    });
    assert.match(secretName, /^default-token-[a-z0-9]{5}$/);
    const secret = await getJson(['secret', secretName]);
    assert.equal(secret['type'], 'kubernetes.io/service-account-token');
    const data = secret['data'] as Record<string, string>;
    assert.equal(Buffer.from(data['namespace']!, 'base64').toString(), 'default');
    assert.equal(Buffer.from(data['ca.crt']!, 'base64').toString(), c.cp.server.caCert);
    const token = Buffer.from(data['token']!, 'base64').toString();
    assert.equal(decodeJwt(token).iss, 'kubernetes/serviceaccount');
    const api = await asToken(token, ['get', '--raw', '/api']);
    assert.equal(api.code, 0, api.stderr);
    assert.equal((await review(token))['user'].username, 'system:serviceaccount:default:default');

    // A token secret a user makes is filled in.
    const made = await c.kubectl(['apply', '-f', '-'], {
      input: JSON.stringify({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'my-token', annotations: { 'kubernetes.io/service-account.name': 'default' } }, type: 'kubernetes.io/service-account-token' }),
    });
    assert.equal(made.code, 0, made.stderr);
    const mine = await eventually('my-token to get a token', async () => ((await getJson(['secret', 'my-token']))['data'] as Json | undefined)?.['token'] as string | undefined);
    assert.equal((await review(Buffer.from(mine, 'base64').toString()))['authenticated'], true);
    // A token bound to that secret lives as long as the secret.
    const bound = await createToken(['default', '--bound-object-kind', 'Secret', '--bound-object-name', 'my-token']);
    assert.equal((await review(bound))['authenticated'], true);
    assert.equal((await c.kubectl(['delete', 'secret', 'my-token'])).code, 0);
    assert.equal((await review(bound))['error'], 'service account token has been invalidated');

    const del = await c.kubectl(['delete', 'secret', secretName]);
    assert.equal(del.code, 0, del.stderr);
    assert.equal((await review(token))['error'], 'Token has been invalidated');
    const replaced = await eventually('a new token secret', async () => {
      const sa = (await c.request('GET', '/api/v1/namespaces/default/serviceaccounts/default')).json as Json;
      const names = ((sa['secrets'] as Json[] | undefined) ?? []).map((s) => s['name'] as string);
      return names.length > 0 && !names.includes(secretName) ? names : undefined;
    });
    assert.equal(replaced.length, 1);
  });

  it('serves issuer discovery to service accounts, not to anonymous users', async () => {
    const token = await createToken(['default']);
    const config = await asToken(token, ['get', '--raw', '/.well-known/openid-configuration']);
    assert.equal(config.code, 0, config.stderr);
    assert.deepEqual(JSON.parse(config.stdout), {
      issuer: ISSUER,
      jwks_uri: `https://${c.cp.server.externalAddress}/openid/v1/jwks`,
      response_types_supported: ['id_token'],
      subject_types_supported: ['public'],
      id_token_signing_alg_values_supported: ['ES256', 'RS256'],
    });
    const jwks = JSON.parse((await asToken(token, ['get', '--raw', '/openid/v1/jwks'])).stdout) as { keys: Json[] };
    assert.deepEqual(
      jwks.keys.map((k) => [k['kid'], k['alg'], k['use'], k['kty']]),
      [
        [keyIdOf(rsa.publicKey), 'RS256', 'sig', 'RSA'],
        [keyIdOf(ec.publicKey), 'ES256', 'sig', 'EC'],
      ],
    );
    const anonymous = await c.request('GET', '/.well-known/openid-configuration', { headers: { authorization: '' } });
    assert.equal(anonymous.status, 403);
    assert.equal(anonymous.headers['cache-control'], undefined);
    const raw = await c.request('GET', '/openid/v1/jwks');
    assert.equal(raw.headers['content-type'], 'application/jwk-set+json');
    assert.equal(raw.headers['cache-control'], 'public, max-age=3600');
  });

  it('keeps a default ServiceAccount and kube-root-ca.crt in every namespace', async () => {
    assert.equal((await c.kubectl(['create', 'namespace', 'sa-ns'])).code, 0);
    const first = await defaultAccount('sa-ns');
    const cm = await eventually('kube-root-ca.crt', async () => {
      const r = await c.request('GET', '/api/v1/namespaces/sa-ns/configmaps/kube-root-ca.crt');
      return r.status === 200 ? (r.json as Json) : undefined;
    });
    assert.deepEqual(cm['data'], { 'ca.crt': c.cp.server.caCert });
    assert.equal((await c.kubectl(['-n', 'sa-ns', 'delete', 'serviceaccount', 'default'])).code, 0);
    const again = await eventually('the default ServiceAccount again', async () => {
      const sa = await defaultAccount('sa-ns');
      return sa['metadata'].uid !== first['metadata'].uid ? sa : undefined;
    });
    assert.equal(again['metadata'].name, 'default');
    assert.equal((await c.kubectl(['-n', 'sa-ns', 'patch', 'configmap', 'kube-root-ca.crt', '-p', '{"data":{"ca.crt":"tampered"}}'])).code, 0);
    await eventually('kube-root-ca.crt to be put back', async () => {
      const r = await c.request('GET', '/api/v1/namespaces/sa-ns/configmaps/kube-root-ca.crt');
      return (r.json as Json)['data']?.['ca.crt'] === c.cp.server.caCert ? true : undefined;
    });
  });
});

describe('a server that issues no tokens', { skip: kubectlPath() ? false : 'kubectl is not installed' }, () => {
  it('names the default service account on pods but mounts no token a node agent could not fill', async () => {
    const c = await startCluster();
    try {
      await eventually('the default ServiceAccount', async () => ((await c.request('GET', '/api/v1/namespaces/default/serviceaccounts/default')).status === 200 ? true : undefined));
      const created = await c.kubectl(['run', 'plain', '--image=busybox', '--restart=Never']);
      assert.equal(created.code, 0, created.stderr);
      const spec = ((await c.request('GET', '/api/v1/namespaces/default/pods/plain')).json as Json)['spec'] as Json;
      assert.equal(spec['serviceAccountName'], 'default');
      assert.equal(spec['volumes'], undefined);
      const token = await c.kubectl(['create', 'token', 'default']);
      assert.notEqual(token.code, 0);
      assert.match(token.stderr, /NotFound|not found/);
    } finally {
      await c.stop();
    }
  });
});

describe('service-account options', () => {
  const start = async (args: string[]) => {
    const dir = await mkdtemp(join(tmpdir(), 'orch-sa-opts-'));
    try {
      const cp = await createControlPlane(parseServerOptions(['--data-dir=:memory:', '--bind-address=127.0.0.1', `--cert-dir=${dir}`, ...args]), {
        securePort: 0,
        logger: () => {},
      });
      await cp.stop();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  };

  it('refuses an issuer without a signing key, and a max expiration under an hour, as kube-apiserver does', async () => {
    await assert.rejects(start([`--service-account-issuer=${ISSUER}`]), /--service-account-signing-key-file, --service-account-issuer, and --api-audiences should be specified together/);
    const dir = await mkdtemp(join(tmpdir(), 'orch-sa-key-'));
    try {
      const key = join(dir, 'k.pem');
      await writeFile(key, generateKeyPairSync('ec', { namedCurve: 'P-384' }).privateKey.export({ format: 'pem', type: 'sec1' }));
      await assert.rejects(
        start([`--service-account-issuer=${ISSUER}`, `--service-account-signing-key-file=${key}`, '--service-account-max-token-expiration=30m']),
        /the service-account-max-token-expiration must be between 1 hour and 2\^32 seconds/,
      );
      await assert.rejects(start([`--service-account-issuer=${ISSUER}`, `--service-account-issuer=${ISSUER}`, `--service-account-signing-key-file=${key}`]), /is already specified/);
      await writeFile(join(dir, 'junk.pem'), 'not a key');
      await assert.rejects(start([`--service-account-key-file=${join(dir, 'junk.pem')}`]), /data does not contain any valid RSA or ECDSA public keys/);
      // An ECDSA signing key (sec1 PEM) is fine.
      await start([`--service-account-issuer=${ISSUER}`, `--service-account-signing-key-file=${key}`, `--service-account-key-file=${key}`]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
