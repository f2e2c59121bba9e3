/**
 * OpenID Connect ID tokens, as Kubernetes 1.23 (plugin/pkg/authenticator/token/oidc): a JWT whose
 * unverified `iss` is --oidc-issuer-url is verified with the issuer's keys (its discovery document at
 * /.well-known/openid-configuration names the jwks_uri; fetched on first use over TLS trusting
 * --oidc-ca-file, else the host's roots, and fetched again, once at a time, when a token does not verify with the
 * keys held: a new key id after rotation), with one of
 * --oidc-signing-algs, an audience containing --oidc-client-id, and an expiry not passed. The user name is
 * the --oidc-username-claim (email needs email_verified true when that claim is present), prefixed as
 * configured; groups come from --oidc-groups-claim (a string or a list; or a distributed claim, fetched
 * from its source endpoint and verified as its issuer's token), prefixed; every
 * --oidc-required-claim must be present with its value. Tokens of other issuers are left to other
 * authenticators.
 */
import { readFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import type { createLocalJWKSet, JSONWebKeySet, JWTPayload } from 'jose';
import type { UserInfo } from '../../endpoints/http.js';
import type { TokenAuthenticator, TokenResult } from './token.js';
import { dialOptions, type Dialer } from '../../util/dial.js';

export interface OidcOptions {
  issuerURL: string;
  clientID: string;
  caFile?: string;
  usernameClaim: string;
  /** As given: undefined when unset, '-' for none. */
  usernamePrefix?: string;
  groupsClaim?: string;
  groupsPrefix?: string;
  requiredClaims: Record<string, string>;
  signingAlgs: readonly string[];
  /** The controlplane egress (--egress-selector-config-file) discovery and key fetches go through. */
  dial?: Dialer;
}

/** How the discovery document, keys and distributed claims are fetched: --oidc-ca-file, and the egress. */
interface FetchOptions {
  ca?: Buffer;
  createConnection?: never;
  defaultPort?: number;
}

/** Startup checks with kube-apiserver's messages. */
export function validateOidcOptions(o: { issuerURL?: string; clientID?: string }): void {
  if (!o.issuerURL !== !o.clientID) throw new Error('oidc-issuer-url and oidc-client-id should be specified together');
  if (!o.issuerURL) return;
  let url: URL;
  try {
    url = new URL(o.issuerURL);
  } catch {
    throw new Error(`oidc-issuer-url (${JSON.stringify(o.issuerURL)}) is not a valid URL`);
  }
  if (url.protocol !== 'https:') {
    throw new Error(`'oidc-issuer-url' (${JSON.stringify(o.issuerURL)}) has invalid scheme (${JSON.stringify(url.protocol.slice(0, -1))}), require 'https'`);
  }
}

/** kube-apiserver's prefix rule: unset means the issuer URL and '#' unless the claim is email; '-' means none. */
export function effectiveUsernamePrefix(o: Pick<OidcOptions, 'issuerURL' | 'usernameClaim' | 'usernamePrefix'>): string {
  if (o.usernamePrefix === '-') return '';
  if (o.usernamePrefix === undefined || o.usernamePrefix === '') return o.usernameClaim === 'email' ? '' : `${o.issuerURL}#`;
  return o.usernamePrefix;
}

function getJSON(url: string, ca: FetchOptions): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(url, { method: 'GET', headers: { Accept: 'application/json' }, timeout: 30_000, ...ca }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        if ((res.statusCode ?? 0) !== 200) return reject(new Error(`${res.statusCode ?? 0} ${res.statusMessage ?? ''}: ${text}`));
        try {
          resolve(JSON.parse(text));
        } catch (e) {
          reject(new Error(`failed to decode response from ${url}: ${(e as Error).message}`));
        }
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`Get "${url}": context deadline exceeded`)));
    req.on('error', reject);
    req.end();
  });
}

function unverifiedIssuer(token: string): string | undefined {
  const parts = token.split('.');
  if (parts.length !== 3) return undefined;
  try {
    const payload = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8')) as unknown;
    const iss = (payload as { iss?: unknown } | null)?.iss;
    return typeof iss === 'string' ? iss : undefined;
  } catch {
    return undefined;
  }
}

/** Verifies ID tokens of one issuer: its discovery document and key set, fetched on first use and again on a miss. */
function issuerVerifier(issuer: string, clientID: string, algorithms: readonly string[], ca: FetchOptions): (token: string) => Promise<JWTPayload> {
  let jwksURI: string | undefined;
  let keys: ReturnType<typeof createLocalJWKSet> | undefined;
  let inflight: Promise<void> | undefined;

  const refresh = (): Promise<void> =>
    (inflight ??= (async () => {
      try {
        if (!jwksURI) {
          const wellKnown = `${issuer.replace(/\/$/, '')}/.well-known/openid-configuration`;
          const doc = (await getJSON(wellKnown, ca)) as { issuer?: unknown; jwks_uri?: unknown };
          if (doc.issuer !== issuer) throw new Error(`oidc: issuer did not match the issuer returned by provider, expected ${JSON.stringify(issuer)} got ${JSON.stringify(doc.issuer)}`);
          if (typeof doc.jwks_uri !== 'string') throw new Error('oidc: discovery document has no jwks_uri');
          jwksURI = doc.jwks_uri;
        }
        // jose (~45 modules) loads on the first ID token, not at startup.
        const { createLocalJWKSet } = await import('jose');
        keys = createLocalJWKSet((await getJSON(jwksURI, ca)) as JSONWebKeySet);
      } finally {
        inflight = undefined;
      }
    })());

  return async (token) => {
    if (!keys) await refresh();
    const { jwtVerify } = await import('jose');
    const opts = { issuer, audience: clientID, algorithms: [...algorithms] };
    try {
      return (await jwtVerify(token, keys!, opts)).payload;
    } catch (e) {
      const code = (e as { code?: string }).code;
      if (code !== 'ERR_JWKS_NO_MATCHING_KEY' && code !== 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED') throw e;
      await refresh();
      return (await jwtVerify(token, keys!, opts)).payload;
    }
  };
}

function getText(url: string, ca: FetchOptions, accessToken: string | undefined): Promise<string> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = accessToken ? { Authorization: `Bearer ${accessToken}` } : {};
    const req = httpsRequest(url, { method: 'GET', headers, timeout: 30_000, ...ca }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const code = res.statusCode ?? 0;
        if (code < 200 || code > 226) return reject(new Error(`error while getting distributed claim JWT: ${code} ${res.statusMessage ?? ''}`));
        resolve(Buffer.concat(chunks).toString('utf8'));
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`Get "${url}": context deadline exceeded`)));
    req.on('error', reject);
    req.end();
  });
}

/**
 * Distributed claims (OpenID Connect Core 5.6.2) for the groups claim, as Kubernetes' claimResolver: when the
 * token lacks the claim but `_claim_names` maps it to a `_claim_sources` endpoint, that endpoint's answer (a
 * JWT, fetched with the source's access token) is verified as an ID token of its own issuer for the client
 * id, and its value of the claim is used. Aggregated claims (a source with a JWT) are not resolved.
 */
function claimResolver(claim: string, verifierFor: (iss: string) => (token: string) => Promise<JWTPayload>, ca: FetchOptions) {
  const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
  return async (claims: JWTPayload): Promise<void> => {
    if (claims[claim] !== undefined) return;
    const names = claims['_claim_names'];
    if (names === undefined) return;
    if (!isObject(names) || !Object.values(names).every((v) => typeof v === 'string')) throw new Error('oidc: error parsing distributed claim names');
    const sources = claims['_claim_sources'];
    if (sources === undefined) throw new Error('oidc: no claim sources');
    if (!isObject(sources) || !Object.values(sources).every(isObject)) throw new Error('oidc: could not parse claim sources');
    const src = names[claim] as string | undefined;
    if (src === undefined) return;
    const ep = sources[src] as Record<string, unknown> | undefined;
    if (!ep) throw new Error(`id token _claim_names contained a source ${src} missing in _claims_sources`);
    const url = typeof ep['endpoint'] === 'string' ? ep['endpoint'] : '';
    if (url === '') return;
    let jwt: string;
    try {
      jwt = await getText(url, ca, typeof ep['access_token'] === 'string' ? ep['access_token'] : undefined);
    } catch (e) {
      throw new Error(`while getting distributed claim ${JSON.stringify(claim)}: ${(e as Error).message}`, { cause: e });
    }
    const iss = unverifiedIssuer(jwt);
    if (iss === undefined) throw new Error(`getting untrusted issuer from endpoint ${url} failed for claim ${JSON.stringify(claim)}`);
    let distributed: JWTPayload;
    try {
      distributed = await verifierFor(iss)(jwt);
    } catch (e) {
      throw new Error(`verify distributed claim token: ${(e as Error).message}`, { cause: e });
    }
    if (distributed[claim] === undefined) throw new Error(`jwt returned by distributed claim endpoint ${url} did not contain claim: ${claim}`);
    claims[claim] = distributed[claim];
  };
}

export function oidcAuthenticator(o: OidcOptions): TokenAuthenticator {
  const ca: FetchOptions = {
    ...(o.caFile ? { ca: readFileSync(o.caFile) } : {}),
    ...(o.dial ? dialOptions(o.dial, true) : {}),
  };
  const prefix = effectiveUsernamePrefix(o);
  const verifiers = new Map<string, (token: string) => Promise<JWTPayload>>();
  const verifierFor = (iss: string) => {
    let v = verifiers.get(iss);
    if (!v) verifiers.set(iss, (v = issuerVerifier(iss, o.clientID, o.signingAlgs, ca)));
    return v;
  };
  const verify = verifierFor(o.issuerURL);
  const expand = o.groupsClaim ? claimResolver(o.groupsClaim, verifierFor, ca) : undefined;

  return {
    async authenticateToken(token): Promise<TokenResult> {
      if (unverifiedIssuer(token) !== o.issuerURL) return { status: 'unknown' };
      let claims: JWTPayload;
      try {
        claims = await verify(token);
      } catch (e) {
        return { status: 'failed', reason: `oidc: verify token: ${(e as Error).message}` };
      }
      const fail = (reason: string): TokenResult => ({ status: 'failed', reason });
      try {
        await expand?.(claims);
      } catch (e) {
        return fail(`oidc: could not expand distributed claims: ${(e as Error).message}`);
      }
      const username = claims[o.usernameClaim];
      if (username === undefined) return fail(`oidc: parse username claims ${JSON.stringify(o.usernameClaim)}: claim not present`);
      if (typeof username !== 'string') return fail(`oidc: parse username claims ${JSON.stringify(o.usernameClaim)}: claim is not a string`);
      if (o.usernameClaim === 'email' && 'email_verified' in claims) {
        if (typeof claims['email_verified'] !== 'boolean') return fail("oidc: parse 'email_verified' claim: not a boolean");
        if (!claims['email_verified']) return fail('oidc: email not verified');
      }
      const user: UserInfo = { name: prefix + username, groups: [] };
      if (o.groupsClaim && claims[o.groupsClaim] !== undefined) {
        const g = claims[o.groupsClaim];
        const list = typeof g === 'string' ? [g] : Array.isArray(g) && g.every((x) => typeof x === 'string') ? g : undefined;
        if (!list) return fail(`oidc: parse groups claim ${JSON.stringify(o.groupsClaim)}: not a string or a list of strings`);
        user.groups = list.map((x) => (o.groupsPrefix ?? '') + x);
      }
      for (const [claim, want] of Object.entries(o.requiredClaims)) {
        const got = claims[claim];
        if (got === undefined) return fail(`oidc: required claim ${claim} not present in ID token`);
        if (typeof got !== 'string') return fail(`oidc: parse claim ${claim}: not a string`);
        if (got !== want) return fail(`oidc: required claim ${claim} value does not match. Got = ${got}, want = ${want}`);
      }
      return { status: 'authenticated', user };
    },
  };
}
