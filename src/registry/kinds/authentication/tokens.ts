/**
 * Service-account JWTs as Kubernetes 1.23 makes them (pkg/serviceaccount: jwt.go, claims.go, legacy.go):
 * the signer (RS256 for RSA keys, ES256/384/512 by curve; the key id is the unpadded base64url SHA-256 of
 * the public key's PKIX DER), the claims of bound tokens (TokenRequest) and of legacy secret tokens, and the
 * user a token's service account stands for. Payload keys are sorted, as go-jose writes them.
 */
import { createHash, createPublicKey, type KeyObject } from 'node:crypto';
import type { KObject } from '../../kind.js';

/** The `iss` of tokens the tokens controller puts in secrets. */
export const LEGACY_ISSUER = 'kubernetes/serviceaccount';
/** Injected projected tokens ask for this lifetime; with extension on they live a year but warn after it. */
export const WARN_ONLY_BOUND_TOKEN_EXPIRATION_SECONDS = 60 * 60 + 7;
export const EXPIRATION_EXTENSION_SECONDS = 24 * 365 * 60 * 60;

export const SERVICE_ACCOUNT_USERNAME_PREFIX = 'system:serviceaccount:';
export const ALL_SERVICE_ACCOUNTS_GROUP = 'system:serviceaccounts';
export const POD_NAME_KEY = 'authentication.kubernetes.io/pod-name';
export const POD_UID_KEY = 'authentication.kubernetes.io/pod-uid';

export const makeUsername = (namespace: string, name: string): string => `${SERVICE_ACCOUNT_USERNAME_PREFIX}${namespace}:${name}`;

/** apiserverserviceaccount.SplitUsername; undefined when `username` is not a service account's. */
export function splitUsername(username: string): { namespace: string; name: string } | undefined {
  if (!username.startsWith(SERVICE_ACCOUNT_USERNAME_PREFIX)) return undefined;
  const parts = username.slice(SERVICE_ACCOUNT_USERNAME_PREFIX.length).split(':');
  if (parts.length !== 2 || parts[0] === '' || parts[1] === '') return undefined;
  return { namespace: parts[0]!, name: parts[1]! };
}

/** What a valid token says about its service account (ServiceAccountInfo). */
export interface ServiceAccountInfo {
  namespace: string;
  name: string;
  uid: string;
  podName?: string;
  podUID?: string;
}

/** ServiceAccountInfo.UserInfo: the service account's user, its groups, and the pod it is bound to. */
export function serviceAccountUser(sa: ServiceAccountInfo): { name: string; uid: string; groups: string[]; extra?: Record<string, string[]> } {
  return {
    name: makeUsername(sa.namespace, sa.name),
    uid: sa.uid,
    groups: [ALL_SERVICE_ACCOUNTS_GROUP, `${ALL_SERVICE_ACCOUNTS_GROUP}:${sa.namespace}`],
    ...(sa.podName && sa.podUID ? { extra: { [POD_NAME_KEY]: [sa.podName], [POD_UID_KEY]: [sa.podUID] } } : {}),
  };
}

/** keyIDFromPublicKey: base64url(SHA-256(PKIX DER)), unpadded. */
export function keyIdOf(key: KeyObject): string {
  const pub = key.type === 'private' ? createPublicKey(key) : key;
  const der = pub.export({ format: 'der', type: 'spki' });
  return createHash('sha256').update(der).digest('base64url');
}

/** The JWS algorithm of a key, as kube signs with it; throws for other key types and curves. */
export function algorithmOf(key: KeyObject): string {
  if (key.asymmetricKeyType === 'rsa') return 'RS256';
  if (key.asymmetricKeyType === 'ec') {
    const curve = key.asymmetricKeyDetails?.namedCurve;
    if (curve === 'prime256v1') return 'ES256';
    if (curve === 'secp384r1') return 'ES384';
    if (curve === 'secp521r1') return 'ES512';
    throw new Error('unknown private key curve, must be 256, 384, or 521');
  }
  throw new Error(`unknown private key type ${String(key.asymmetricKeyType)}, must be RSA or ECDSA`);
}

/** Signs claims with one private key, stamping `iss` (JWTTokenGenerator). */
export class TokenSigner {
  readonly alg: string;
  readonly kid: string;

  constructor(
    readonly issuer: string,
    private readonly key: KeyObject,
  ) {
    this.alg = algorithmOf(key);
    this.kid = keyIdOf(key);
  }

  async sign(claims: Record<string, unknown>): Promise<string> {
    const payload = sortKeys({ ...claims, iss: this.issuer });
    // jose (~45 modules) loads on the first token to sign, not at startup.
    const { SignJWT } = await import('jose');
    return new SignJWT(payload).setProtectedHeader({ alg: this.alg, kid: this.kid }).sign(this.key);
  }
}

function sortKeys(o: Record<string, unknown>): Record<string, any> {
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(o).sort()) if (o[k] !== undefined) out[k] = o[k];
  return out;
}

const ref = (o: KObject) => ({ name: o.metadata?.name ?? '', uid: o.metadata?.uid ?? '' });

/** Claims of a bound token (serviceaccount.Claims); times in seconds since the epoch. */
export function boundClaims(opts: {
  serviceAccount: KObject;
  pod?: KObject;
  secret?: KObject;
  expirationSeconds: number;
  warnAfterSeconds: number;
  audiences: string[];
  nowSeconds: number;
}): Record<string, unknown> {
  const { serviceAccount: sa, nowSeconds: now } = opts;
  const namespace = sa.metadata?.namespace ?? '';
  const k8s: Record<string, unknown> = { namespace, serviceaccount: ref(sa) };
  if (opts.pod) k8s['pod'] = ref(opts.pod);
  else if (opts.secret) k8s['secret'] = ref(opts.secret);
  if (opts.warnAfterSeconds !== 0) k8s['warnafter'] = now + opts.warnAfterSeconds;
  return {
    aud: opts.audiences,
    exp: now + opts.expirationSeconds,
    iat: now,
    'kubernetes.io': sortKeys(k8s),
    nbf: now,
    sub: makeUsername(namespace, sa.metadata?.name ?? ''),
  };
}

/** Claims of a legacy secret token (serviceaccount.LegacyClaims). */
export function legacyClaims(serviceAccount: KObject, secretName: string): Record<string, unknown> {
  const namespace = serviceAccount.metadata?.namespace ?? '';
  const name = serviceAccount.metadata?.name ?? '';
  return {
    'kubernetes.io/serviceaccount/namespace': namespace,
    'kubernetes.io/serviceaccount/secret.name': secretName,
    'kubernetes.io/serviceaccount/service-account.name': name,
    'kubernetes.io/serviceaccount/service-account.uid': serviceAccount.metadata?.uid ?? '',
    sub: makeUsername(namespace, name),
  };
}

/** What the TokenRequest subresource needs from the server's options (KindSettings.serviceAccountTokens). */
export interface ServiceAccountTokenSettings {
  /** Signs with --service-account-signing-key-file as the first --service-account-issuer. */
  signer: TokenSigner;
  /** --api-audiences (default: the issuers): a request without audiences gets these. */
  apiAudiences: readonly string[];
  /** --service-account-max-token-expiration in seconds; 0: no cap. */
  maxExpirationSeconds: number;
  /** --service-account-extend-token-expiration. */
  extendExpiration: boolean;
}
