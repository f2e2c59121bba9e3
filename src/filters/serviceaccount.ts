/**
 * Service-account token authentication, as Kubernetes 1.23 (pkg/serviceaccount jwt.go, claims.go, legacy.go):
 * a JWT whose unverified `iss` is one of the authenticator's issuers is verified with the keys of its `kid`
 * (all keys without one), its issuer checked again, its audiences met with the target audiences (tokens
 * without audiences count as meant for the API audiences), then validated:
 *   - bound tokens (--service-account-issuer): times with a minute's leeway; the service account, and the
 *     pod or secret it is bound to, must exist with the same uid (and not be deleted for over a minute);
 *   - legacy tokens (iss kubernetes/serviceaccount): the claims must be complete and agree with `sub`; with
 *     --service-account-lookup the secret must still hold this very token and the service account exist.
 * The user is system:serviceaccount:<ns>:<name> in system:serviceaccounts and system:serviceaccounts:<ns>,
 * with the pod's name and uid as extras for pod-bound tokens.
 */
import type { KeyObject } from 'node:crypto';
import { isStatusError } from '../registry/errors.js';
import type { KObject } from '../registry/kind.js';
import type { Registry } from '../registry/registry.js';
import { keyIdOf, LEGACY_ISSUER, serviceAccountUser, splitUsername, type ServiceAccountInfo } from '../registry/kinds/authentication/tokens.js';
import { intersectAudiences, type TokenAuthenticator, type TokenResult } from './authn/token.js';

/** Reads the objects tokens are bound to; undefined when absent. Errors other than absence reject. */
export interface ServiceAccountTokenGetter {
  getServiceAccount(namespace: string, name: string): Promise<KObject | undefined>;
  getSecret(namespace: string, name: string): Promise<KObject | undefined>;
  getPod(namespace: string, name: string): Promise<KObject | undefined>;
}

/** The getter over the registry's stores (as the server itself, not as the token's user). */
export function registryTokenGetter(registry: () => Registry): ServiceAccountTokenGetter {
  const get = async (resource: string, namespace: string, name: string): Promise<KObject | undefined> => {
    const store = registry().store('', 'v1', resource);
    if (!store) return undefined;
    try {
      return await store.get({ namespace }, name);
    } catch (err) {
      if (isStatusError(err, 'NotFound')) return undefined;
      throw err;
    }
  };
  return {
    getServiceAccount: (ns, name) => get('serviceaccounts', ns, name),
    getSecret: (ns, name) => get('secrets', ns, name),
    getPod: (ns, name) => get('pods', ns, name),
  };
}

/** A key verifying tokens, with the key id kube derives from it. */
export interface VerifyingKey {
  kid: string;
  key: KeyObject;
}

export const verifyingKey = (key: KeyObject): VerifyingKey => ({ kid: keyIdOf(key), key });

type Claims = Record<string, unknown>;
type Validator = (token: string, claims: Claims) => Promise<ServiceAccountInfo | string>;

/** go-jose's jwt.DefaultLeeway. */
const LEEWAY_SECONDS = 60;
/** go-jose's error for a signature that does not verify. */
const BAD_SIGNATURE = 'square/go-jose: error in cryptographic primitive';

/** Go's %q of a []string: ["a" "b"]. */
const quoteList = (l: readonly string[]) => `[${l.map((a) => JSON.stringify(a)).join(' ')}]`;
const str = (v: unknown): string => (typeof v === 'string' ? v : '');
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function decodeSegment(segment: string): Claims | undefined {
  try {
    const v: unknown = JSON.parse(Buffer.from(segment, 'base64url').toString('utf8'));
    return isObject(v) ? v : undefined;
  } catch {
    return undefined;
  }
}

/** hasCorrectIssuer: a compact JWT whose unverified payload names one of `issuers`. */
function unverifiedParts(token: string, issuers: ReadonlySet<string>): { header: Claims } | undefined {
  if (token.trimStart().startsWith('{')) return undefined;
  const parts = token.split('.');
  if (parts.length !== 3) return undefined;
  const payload = decodeSegment(parts[1]!);
  if (!payload || !issuers.has(str(payload['iss']))) return undefined;
  const header = decodeSegment(parts[0]!);
  return header ? { header } : undefined;
}

async function verifySignature(token: string, keys: readonly VerifyingKey[]): Promise<Claims | string> {
  const errors: string[] = [];
  for (const k of keys) {
    try {
      // jose (~45 modules) loads on the first token to verify, not at startup.
      const { compactVerify } = await import('jose');
      const { payload } = await compactVerify(token, k.key);
      const claims = JSON.parse(Buffer.from(payload).toString('utf8')) as unknown;
      if (!isObject(claims)) return 'square/go-jose/jwt: illegal claims';
      return claims;
    } catch {
      errors.push(BAD_SIGNATURE);
    }
  }
  return errors.length === 1 ? errors[0]! : `[${errors.join(', ')}]`;
}

function audiencesOf(claims: Claims): string[] {
  const aud = claims['aud'];
  if (typeof aud === 'string') return aud === '' ? [] : [aud];
  return Array.isArray(aud) ? aud.filter((a): a is string => typeof a === 'string') : [];
}

/** JWTTokenAuthenticator: one issuer set, its keys, the API audiences, and the claims' validator. */
export function jwtTokenAuthenticator(opts: {
  issuers: readonly string[];
  keys: readonly VerifyingKey[];
  implicitAudiences: readonly string[];
  validate: Validator;
}): TokenAuthenticator {
  const issuers = new Set(opts.issuers);
  return {
    async authenticateToken(token, audiences): Promise<TokenResult> {
      const parts = unverifiedParts(token, issuers);
      if (!parts) return { status: 'unknown' };
      const kid = str(parts.header['kid']);
      const keys = kid === '' ? opts.keys : opts.keys.filter((k) => k.kid === kid);
      if (keys.length === 0) return { status: 'failed', reason: 'invalid signature, no keys found' };
      const claims = await verifySignature(token, keys);
      if (typeof claims === 'string') return { status: 'failed', reason: claims };
      if (!issuers.has(str(claims['iss']))) return { status: 'failed', reason: `token issuer ${JSON.stringify(str(claims['iss']))} is invalid` };
      let tokenAudiences = audiencesOf(claims);
      if (tokenAudiences.length === 0) tokenAudiences = [...opts.implicitAudiences];
      const requested = audiences ?? opts.implicitAudiences;
      const auds = intersectAudiences(tokenAudiences, requested);
      if (auds.length === 0 && opts.implicitAudiences.length > 0) {
        return { status: 'failed', reason: `token audiences ${quoteList(tokenAudiences)} is invalid for the target audiences ${quoteList(requested)}` };
      }
      const info = await opts.validate(token, claims);
      if (typeof info === 'string') return { status: 'failed', reason: info };
      return { status: 'authenticated', user: serviceAccountUser(info), audiences: auds };
    },
  };
}

/** Whether an object was deleted before `limit` (seconds since the epoch). */
const deletedBefore = (obj: KObject, limit: number): boolean =>
  !!obj.metadata?.deletionTimestamp && Date.parse(obj.metadata.deletionTimestamp) / 1000 < limit;

function getterError(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** The time claims, as go-jose's Claims.Validate with the default leeway. */
function timeError(claims: Claims, now: number): string | undefined {
  const num = (k: string): number | undefined => {
    const v = claims[k];
    return typeof v === 'number' ? v : undefined;
  };
  const nbf = num('nbf');
  const exp = num('exp');
  const iat = num('iat');
  if (nbf !== undefined && now + LEEWAY_SECONDS < nbf) return 'service account token is not valid yet';
  if (exp !== undefined && now - LEEWAY_SECONDS > exp) return 'service account token has expired';
  if (iat !== undefined && now + LEEWAY_SECONDS < iat) return 'service account token claims could not be validated due to unexpected validation error';
  return undefined;
}

/** claims.go's validator of bound tokens. */
export function boundTokenValidator(getter: ServiceAccountTokenGetter): Validator {
  return async (_token, claims) => {
    const now = Date.now() / 1000;
    const bad = timeError(claims, now);
    if (bad) return bad;
    const k8s = isObject(claims['kubernetes.io']) ? claims['kubernetes.io'] : {};
    const namespace = str(k8s['namespace']);
    const saRef = isObject(k8s['serviceaccount']) ? k8s['serviceaccount'] : {};
    const limit = now - LEEWAY_SECONDS;
    let sa: KObject | undefined;
    try {
      sa = await getter.getServiceAccount(namespace, str(saRef['name']));
    } catch (err) {
      return getterError(err);
    }
    if (!sa) return `serviceaccounts ${JSON.stringify(str(saRef['name']))} not found`;
    if (deletedBefore(sa, limit)) return `service account ${namespace}/${str(saRef['name'])} has been deleted`;
    if (sa.metadata?.uid !== str(saRef['uid'])) return `service account UID (${sa.metadata?.uid ?? ''}) does not match claim (${str(saRef['uid'])})`;
    for (const [kind, get] of [
      ['secret', (n: string) => getter.getSecret(namespace, n)],
      ['pod', (n: string) => getter.getPod(namespace, n)],
    ] as const) {
      const ref = k8s[kind];
      if (!isObject(ref)) continue;
      const obj = await get(str(ref['name'])).catch(() => undefined);
      if (!obj || deletedBefore(obj, limit)) return 'service account token has been invalidated';
      if (obj.metadata?.uid !== str(ref['uid'])) {
        return kind === 'secret'
          ? `secret UID (${obj.metadata?.uid ?? ''}) does not match service account secret ref claim (${str(ref['uid'])})`
          : `pod UID (${obj.metadata?.uid ?? ''}) does not match service account pod ref claim (${str(ref['uid'])})`;
      }
    }
    const pod = isObject(k8s['pod']) ? k8s['pod'] : undefined;
    return {
      namespace,
      name: str(saRef['name']),
      uid: str(saRef['uid']),
      ...(pod ? { podName: str(pod['name']), podUID: str(pod['uid']) } : {}),
    };
  };
}

const LEGACY = 'kubernetes.io/serviceaccount/';

/** legacy.go's validator of secret tokens; `lookup` is --service-account-lookup. */
export function legacyTokenValidator(lookup: boolean, getter: ServiceAccountTokenGetter): Validator {
  return async (token, claims) => {
    const sub = str(claims['sub']);
    const namespace = str(claims[`${LEGACY}namespace`]);
    const secretName = str(claims[`${LEGACY}secret.name`]);
    const name = str(claims[`${LEGACY}service-account.name`]);
    const uid = str(claims[`${LEGACY}service-account.uid`]);
    if (sub === '') return 'sub claim is missing';
    if (namespace === '') return 'namespace claim is missing';
    if (secretName === '') return 'secretName claim is missing';
    if (name === '') return 'serviceAccountName claim is missing';
    if (uid === '') return 'serviceAccountUID claim is missing';
    const subject = splitUsername(sub);
    if (!subject || subject.namespace !== namespace || subject.name !== name) return 'sub claim is invalid';
    if (lookup) {
      const secret = await getter.getSecret(namespace, secretName).catch(() => undefined);
      if (!secret || secret.metadata?.deletionTimestamp) return 'Token has been invalidated';
      const stored = typeof secret['data']?.token === 'string' ? Buffer.from(secret['data'].token as string, 'base64').toString('utf8') : '';
      if (stored !== token) return "Token does not match server's copy";
      let sa: KObject | undefined;
      try {
        sa = await getter.getServiceAccount(namespace, name);
      } catch (err) {
        return getterError(err);
      }
      if (!sa) return `serviceaccounts ${JSON.stringify(name)} not found`;
      if (sa.metadata?.deletionTimestamp) return `ServiceAccount ${namespace}/${name} has been deleted`;
      if (sa.metadata?.uid !== uid) return `ServiceAccount UID (${sa.metadata?.uid ?? ''}) does not match claim (${uid})`;
    }
    return { namespace, name, uid };
  };
}

export interface ServiceAccountAuthConfig {
  /** --service-account-issuer values; empty: bound tokens are not accepted. */
  issuers: readonly string[];
  keys: readonly VerifyingKey[];
  apiAudiences: readonly string[];
  lookup: boolean;
  getter: ServiceAccountTokenGetter;
}

/** The legacy then the bound service-account token authenticators, in kube-apiserver's order. */
export function serviceAccountAuthenticators(c: ServiceAccountAuthConfig): TokenAuthenticator[] {
  if (c.keys.length === 0) return [];
  const list = [
    jwtTokenAuthenticator({ issuers: [LEGACY_ISSUER], keys: c.keys, implicitAudiences: c.apiAudiences, validate: legacyTokenValidator(c.lookup, c.getter) }),
  ];
  if (c.issuers.length > 0) {
    list.push(jwtTokenAuthenticator({ issuers: c.issuers, keys: c.keys, implicitAudiences: c.apiAudiences, validate: boundTokenValidator(c.getter) }));
  }
  return list;
}
