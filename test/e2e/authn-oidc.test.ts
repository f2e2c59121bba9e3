/**
 * --oidc-* from outside: an OpenID issuer the test serves on loopback over TLS (its own CA, given with
 * --oidc-ca-file; discovery document and key set), ID tokens the test signs with jose, used with kubectl
 * --token; RBAC's Forbidden messages show the user name the server derived. Then the key rotation, and
 * (in-process) the username prefix rules, email_verified, required claims and signing algorithms.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import { requireBinary } from '../helpers/binaries.js';
import { startCluster, type TestCluster } from '../helpers/cluster.js';
import { makeCA, makeServingCert } from '../../src/server/certs.js';
import { oidcAuthenticator, validateOidcOptions, type OidcOptions } from '../../src/filters/authn/oidc.js';
import { parseServerOptions } from '../../src/server/options.js';
import { createControlPlane } from '../../src/server/controlplane.js';

const present = requireBinary(undefined, 'kubectl') !== null;
if (!present && process.env.CI === 'true') throw new Error('kubectl is required under CI=true');
const skip = !present && 'kubectl not installed';

interface SigningKey {
  kid: string;
  alg: string;
  privateKey: CryptoKey;
  jwk: JWK;
}

async function signingKey(kid: string, alg = 'RS256'): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg);
  return { kid, alg, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' } };
}

describe('OIDC authentication through kubectl', () => {
  let c: TestCluster;
  let dir: string;
  let issuerServer: Server;
  let issuer: string;
  let caFile: string;
  /** The keys the issuer publishes; the first signs. */
  let published: SigningKey[] = [];
  let keyFetches = 0;
  const claimRequests: (string | undefined)[] = [];

  const sign = (claims: Record<string, unknown>, opts: { key?: SigningKey; aud?: string; exp?: number; iss?: string } = {}) => {
    const key = opts.key ?? published[0]!;
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT(claims)
      .setProtectedHeader({ alg: key.alg, kid: key.kid })
      .setIssuer(opts.iss ?? issuer)
      .setAudience(opts.aud ?? 'orch')
      .setIssuedAt(now)
      .setExpirationTime(opts.exp ?? now + 600)
      .sign(key.privateKey);
  };
  const withToken = (token: string, args: string[]) => c.kubectl([`--token=${token}`, ...args]);
  const options = (o: Partial<OidcOptions> = {}): OidcOptions => ({
    issuerURL: issuer,
    clientID: 'orch',
    caFile,
    usernameClaim: 'sub',
    requiredClaims: {},
    signingAlgs: ['RS256'],
    ...o,
  });

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'orch-authn-oidc-'));
    const ca = await makeCA('oidc-test-ca');
    caFile = join(dir, 'oidc-ca.crt');
    await writeFile(caFile, ca.cert);
    const serving = await makeServingCert(ca.cert, ca.key, 'issuer', ['127.0.0.1']);
    published = [await signingKey('key-1')];
    issuerServer = createServer({ cert: serving.cert, key: serving.key }, (req, res) => {
      res.setHeader('Content-Type', 'application/json');
      if (req.url === '/.well-known/openid-configuration') {
        res.end(JSON.stringify({ issuer, jwks_uri: `${issuer}/keys`, id_token_signing_alg_values_supported: ['RS256'] }));
      } else if (req.url === '/claims/groups') {
        claimRequests.push(req.headers.authorization);
        res.setHeader('Content-Type', 'application/jwt');
        void sign({ sub: 'alice', groups: ['distributed'] }).then((jwt) => res.end(jwt));
      } else if (req.url === '/keys') {
        keyFetches++;
        res.end(JSON.stringify({ keys: published.map((k) => k.jwk) }));
      } else {
        res.statusCode = 404;
        res.end('{}');
      }
    });
    await new Promise<void>((resolve) => issuerServer.listen(0, '127.0.0.1', resolve));
    issuer = `https://127.0.0.1:${(issuerServer.address() as AddressInfo).port}`;
    if (!present) return;
    c = await startCluster([
      '--authorization-mode=RBAC',
      `--oidc-issuer-url=${issuer}`,
      '--oidc-client-id=orch',
      `--oidc-ca-file=${caFile}`,
      '--oidc-groups-claim=groups',
      '--oidc-groups-prefix=oidc:',
    ]);
    const bind = await c.kubectl(['create', 'rolebinding', 'oidc-devs', '--clusterrole=view', '--group=oidc:devs', '-n', 'default']);
    assert.equal(bind.code, 0, bind.stderr);
  });
  after(async () => {
    await c?.stop();
    await new Promise((resolve) => issuerServer?.close(resolve));
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('a signed ID token is the issuer-prefixed subject, with prefixed groups from the claim', { skip }, async () => {
    const alone = await withToken(await sign({ sub: 'alice' }), ['get', 'configmaps', '-n', 'default']);
    assert.equal(
      alone.stderr.trim(),
      `Error from server (Forbidden): configmaps is forbidden: User "${issuer}#alice" cannot list resource "configmaps" in API group "" in the namespace "default"`,
    );
    const dev = await withToken(await sign({ sub: 'bob', groups: ['devs', 'ops'] }), ['get', 'configmaps', '-n', 'default']);
    assert.equal(dev.code, 0, dev.stderr);
    const single = await withToken(await sign({ sub: 'carol', groups: 'devs' }), ['get', 'configmaps', '-n', 'default']);
    assert.equal(single.code, 0, single.stderr);
  });

  it('refuses tokens for another audience, expired, of another issuer, or signed by an unpublished key', { skip }, async () => {
    const now = Math.floor(Date.now() / 1000);
    const stranger = await signingKey('stranger');
    for (const token of [
      await sign({ sub: 'alice' }, { aud: 'someone-else' }),
      await sign({ sub: 'alice' }, { exp: now - 60 }),
      await sign({ sub: 'alice' }, { iss: 'https://127.0.0.1:1' }),
      await sign({ sub: 'alice' }, { key: stranger }),
      'not-a-jwt',
    ]) {
      const r = await withToken(token, ['get', 'configmaps', '-n', 'default']);
      assert.equal(r.code, 1);
      assert.match(r.stderr, /error: You must be logged in to the server \(Unauthorized\)/);
    }
  });

  it('follows a key rotation: a token of a new key id makes the server fetch the key set again', { skip }, async () => {
    const before = keyFetches;
    published = [await signingKey('key-2')];
    const r = await withToken(await sign({ sub: 'bob', groups: ['devs'] }), ['get', 'configmaps', '-n', 'default']);
    assert.equal(r.code, 0, r.stderr);
    assert.ok(keyFetches > before, 'the key set was fetched again');
  });

  it('applies the username prefix rules, email_verified, required claims and the signing algorithms', async () => {
    const user = async (o: Partial<OidcOptions>, claims: Record<string, unknown>, key?: SigningKey) => {
      const r = await oidcAuthenticator(options(o)).authenticateToken(await sign(claims, key ? { key } : {}), undefined);
      return r.status === 'authenticated' ? r.user : r;
    };
    published = [await signingKey('key-3'), await signingKey('es-key', 'ES256')];
    const claims = { sub: 'alice', email: 'alice@example.com', name: 'Alice' };
    assert.deepEqual(await user({}, claims), { name: `${issuer}#alice`, groups: [] });
    assert.deepEqual(await user({ usernameClaim: 'email' }, claims), { name: 'alice@example.com', groups: [] });
    assert.deepEqual(await user({ usernameClaim: 'name' }, claims), { name: `${issuer}#Alice`, groups: [] });
    assert.deepEqual(await user({ usernamePrefix: '-' }, claims), { name: 'alice', groups: [] });
    assert.deepEqual(await user({ usernameClaim: 'email', usernamePrefix: 'corp:' }, claims), { name: 'corp:alice@example.com', groups: [] });
    assert.deepEqual(await user({ usernameClaim: 'email' }, { ...claims, email_verified: true }), { name: 'alice@example.com', groups: [] });
    assert.deepEqual(await user({ usernameClaim: 'email' }, { ...claims, email_verified: false }), { status: 'failed', reason: 'oidc: email not verified' });
    assert.deepEqual(await user({ usernameClaim: 'upn' }, claims), { status: 'failed', reason: 'oidc: parse username claims "upn": claim not present' });
    assert.deepEqual(await user({ requiredClaims: { tenant: 'a' } }, { ...claims, tenant: 'a' }), { name: `${issuer}#alice`, groups: [] });
    assert.deepEqual(await user({ requiredClaims: { tenant: 'a' } }, claims), { status: 'failed', reason: 'oidc: required claim tenant not present in ID token' });
    assert.deepEqual(await user({ requiredClaims: { tenant: 'a' } }, { ...claims, tenant: 'b' }), {
      status: 'failed',
      reason: 'oidc: required claim tenant value does not match. Got = b, want = a',
    });
    const es = published[1]!;
    assert.equal(((await user({}, claims, es)) as { status: string }).status, 'failed');
    assert.deepEqual(await user({ signingAlgs: ['RS256', 'ES256'] }, claims, es), { name: `${issuer}#alice`, groups: [] });
    // A distributed groups claim is fetched from its source with the access token and verified.
    const distributed = {
      ...claims,
      _claim_names: { groups: 'src1' },
      _claim_sources: { src1: { endpoint: `${issuer}/claims/groups`, access_token: 'claims-secret' } },
    };
    assert.deepEqual(await user({ groupsClaim: 'groups', groupsPrefix: 'oidc:' }, distributed), { name: `${issuer}#alice`, groups: ['oidc:distributed'] });
    assert.deepEqual(claimRequests, ['Bearer claims-secret']);
    assert.deepEqual(await user({ groupsClaim: 'groups' }, { ...claims, _claim_names: { groups: 'src1' } }), {
      status: 'failed',
      reason: 'oidc: could not expand distributed claims: oidc: no claim sources',
    });
    // Tokens of another issuer are not OIDC's: other authenticators are asked.
    const other = await oidcAuthenticator(options()).authenticateToken(await sign(claims, { iss: 'https://elsewhere' }), undefined);
    assert.deepEqual(other, { status: 'unknown' });
  });

  it('refuses an http issuer, and an issuer or a client id alone, at startup', async () => {
    assert.throws(() => validateOidcOptions({ clientID: 'x' }), { message: 'oidc-issuer-url and oidc-client-id should be specified together' });
    assert.throws(() => validateOidcOptions({ issuerURL: 'http://127.0.0.1', clientID: 'x' }), {
      message: `'oidc-issuer-url' ("http://127.0.0.1") has invalid scheme ("http"), require 'https'`,
    });
    await assert.rejects(
      createControlPlane(parseServerOptions(['--data-dir=:memory:', `--cert-dir=${join(dir, 'certs2')}`, `--oidc-issuer-url=${issuer}`]), { securePort: 0, logger: () => {} }),
      { message: 'oidc-issuer-url and oidc-client-id should be specified together' },
    );
  });
});
