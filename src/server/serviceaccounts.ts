/**
 * The service-account options of document 2 section 5, read and checked as kube-apiserver 1.23 does
 * (pkg/kubeapiserver/options/authentication.go, cmd/kube-apiserver/app/options/validation.go):
 *   --service-account-key-file (PEM: RSA or ECDSA public keys, private keys or certificates; several per file,
 *   other blocks ignored), falling back to the serving key (--tls-private-key-file or the generated one);
 *   --service-account-issuer (repeatable, no empty or duplicate values; one with ':' must be a URL);
 *   --api-audiences (default: the issuers); --service-account-signing-key-file (with an issuer it enables
 *   TokenRequest); --service-account-max-token-expiration (1 h to 2^32 s).
 * Unlike kube-apiserver, a server given none of the signing options still starts (without TokenRequest).
 */
import { createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { tokenUnion, type TokenAuthenticator } from '../filters/authn/token.js';
import { registryTokenGetter, serviceAccountAuthenticators, verifyingKey } from '../filters/serviceaccount.js';
import type { KindSettings } from '../registry/kind.js';
import { TokenSigner } from '../registry/kinds/authentication/tokens.js';
import type { Registry } from '../registry/registry.js';
import { SERVING_KEY_FILE } from './certs.js';
import type { Controller } from './controllers/runner.js';
import { startTokensController } from './controllers/serviceaccount-tokens.js';
import { startRootCAPublisher, startServiceAccountController } from './controllers/serviceaccounts.js';
import { installIssuerDiscovery } from './issuer-discovery.js';
import type { ServerOptions } from './options.js';
import type { ApiServer } from './server.js';

export interface ServiceAccountConfig {
  issuers: string[];
  apiAudiences: string[];
  /** Public keys verifying tokens. */
  verifyKeys: KeyObject[];
  /** Present when --service-account-signing-key-file and an issuer are given. */
  signer?: TokenSigner;
  /** The private signing key, also used by the tokens controller for legacy secret tokens. */
  signingKey?: KeyObject;
  maxExpirationSeconds: number;
  extendExpiration: boolean;
  lookup: boolean;
  jwksUri?: string;
}

const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----[\s\S]*?-----END \1-----/g;

/** keyutil.ParsePublicKeysPEM: every RSA or ECDSA key of the PEM blocks, as public keys. */
export function parsePublicKeysPem(pem: string): KeyObject[] {
  const keys: KeyObject[] = [];
  for (const m of pem.matchAll(PEM_BLOCK)) {
    let key: KeyObject;
    try {
      key = createPublicKey(m[0]);
    } catch {
      continue; // other blocks (EC PARAMETERS) are tolerated
    }
    if (key.asymmetricKeyType === 'rsa' || key.asymmetricKeyType === 'ec') keys.push(key);
  }
  if (keys.length === 0) throw new Error('data does not contain any valid RSA or ECDSA public keys');
  return keys;
}

async function publicKeysFromFile(path: string): Promise<KeyObject[]> {
  const pem = await readFile(path, 'utf8');
  try {
    return parsePublicKeysPem(pem);
  } catch (e) {
    throw new Error(`error reading public key file ${path}: ${(e as Error).message}`, { cause: e });
  }
}

async function privateKeyFromFile(path: string): Promise<KeyObject> {
  const pem = await readFile(path, 'utf8');
  for (const m of pem.matchAll(PEM_BLOCK)) {
    try {
      const key = createPrivateKey(m[0]);
      if (key.asymmetricKeyType === 'rsa' || key.asymmetricKeyType === 'ec') return key;
    } catch {
      continue;
    }
  }
  throw new Error(`failed to parse service-account-issuer-key-file: data does not contain a valid RSA or ECDSA private key`);
}

/** ServiceAccountAuthenticationOptions.Validate's issuer checks. */
function validateIssuers(issuers: readonly string[]): void {
  const seen = new Set<string>();
  for (const issuer of issuers) {
    if (issuer.includes(':')) {
      try {
        new URL(issuer);
      } catch (e) {
        throw new Error(`service-account-issuer ${JSON.stringify(issuer)} contained a ':' but was not a valid URL: ${(e as Error).message}`, { cause: e });
      }
    }
    if (issuer === '') throw new Error('service-account-issuer should not be an empty string');
    if (seen.has(issuer)) throw new Error(`service-account-issuer ${JSON.stringify(issuer)} is already specified`);
    seen.add(issuer);
  }
}

/** Reads the keys and checks the options; `servingKeyFile` is the key the server serves with. */
export async function loadServiceAccountConfig(o: ServerOptions, servingKeyFile: string | undefined): Promise<ServiceAccountConfig> {
  const issuers = o.serviceAccountIssuer ?? [];
  validateIssuers(issuers);
  const maxMs = o.serviceAccountMaxTokenExpiration ?? 0;
  if (maxMs !== 0 && (maxMs < 3600_000 || maxMs > 2 ** 32 * 1000)) {
    throw new Error('the service-account-max-token-expiration must be between 1 hour and 2^32 seconds');
  }
  const apiAudiences = apiAudiencesFrom(o);
  const keyFiles = (o.serviceAccountKeyFile ?? []).length > 0 ? (o.serviceAccountKeyFile ?? []) : servingKeyFile ? [servingKeyFile] : [];
  const verifyKeys: KeyObject[] = [];
  for (const f of keyFiles) verifyKeys.push(...(await publicKeysFromFile(f)));
  const signingKey = o.serviceAccountSigningKeyFile ? await privateKeyFromFile(o.serviceAccountSigningKeyFile) : undefined;
  const signer = signingKey && issuers.length > 0 ? new TokenSigner(issuers[0]!, signingKey) : undefined;
  const attempted = !!o.serviceAccountSigningKeyFile || issuers.length > 0 || (o.apiAudiences ?? []).length > 0;
  if (attempted && !signer) {
    throw new Error('--service-account-signing-key-file, --service-account-issuer, and --api-audiences should be specified together');
  }
  return {
    issuers: [...issuers],
    apiAudiences,
    verifyKeys,
    ...(signer ? { signer } : {}),
    ...(signingKey ? { signingKey } : {}),
    maxExpirationSeconds: Math.floor(maxMs / 1000),
    extendExpiration: o.serviceAccountExtendTokenExpiration,
    lookup: o.serviceAccountLookup,
    ...(o.serviceAccountJwksUri ? { jwksUri: o.serviceAccountJwksUri } : {}),
  };
}

// ---- wiring into the control plane -------------------------------------------------------------------

/** A token authenticator handed to the server before the keys are read; set() fills it in (before start). */
export function lateTokenAuthenticator(): TokenAuthenticator & { set(list: TokenAuthenticator[]): void } {
  let inner: TokenAuthenticator = tokenUnion([]);
  return {
    authenticateToken: (token, audiences) => inner.authenticateToken(token, audiences),
    set(list) {
      inner = tokenUnion(list);
    },
  };
}

/** --api-audiences, else the issuers. */
export function apiAudiencesFrom(o: ServerOptions): string[] {
  return (o.apiAudiences ?? []).length > 0 ? [...(o.apiAudiences ?? [])] : [...(o.serviceAccountIssuer ?? [])];
}

export interface ServiceAccountSetup {
  /** What the kinds need: TokenReview's reviewer, TokenRequest's signer. */
  settings: Pick<KindSettings, 'tokenReviewer' | 'serviceAccountTokens'>;
  /** The service account, root-CA publisher and (with a signing key) tokens controllers. */
  startControllers(registry: Registry, log: (m: string) => void): Controller[];
}

/**
 * Reads the keys, fills in `late` with the service-account token authenticators (reading the registry
 * `registry()` names once requests come), and installs issuer discovery on the server.
 */
export async function setupServiceAccounts(
  o: ServerOptions,
  server: ApiServer,
  late: { set(list: TokenAuthenticator[]): void },
  registry: () => Registry,
): Promise<ServiceAccountSetup> {
  const servingKey = o.tlsPrivateKeyFile ?? join(o.certDir, SERVING_KEY_FILE);
  const c = await loadServiceAccountConfig(o, existsSync(servingKey) ? servingKey : undefined);
  late.set(
    serviceAccountAuthenticators({
      issuers: c.issuers,
      keys: c.verifyKeys.map(verifyingKey),
      apiAudiences: c.apiAudiences,
      lookup: c.lookup,
      getter: registryTokenGetter(registry),
    }),
  );
  if (c.issuers.length > 0) {
    installIssuerDiscovery(server.mux, {
      issuer: c.issuers[0]!,
      ...(c.jwksUri ? { jwksUri: c.jwksUri } : {}),
      externalAddress: () => server.externalAddress,
      keys: c.verifyKeys,
      log: server.logger,
    });
  }
  const signer = c.signer;
  const signingKey = c.signingKey;
  return {
    settings: {
      tokenReviewer: server.tokenReviewer,
      ...(signer
        ? { serviceAccountTokens: { signer, apiAudiences: c.apiAudiences, maxExpirationSeconds: c.maxExpirationSeconds, extendExpiration: c.extendExpiration } }
        : {}),
    },
    startControllers(reg, log) {
      const list = [startServiceAccountController(reg, log), startRootCAPublisher(reg, server.caCert, log)];
      if (signingKey) list.push(startTokensController(reg, { signingKey, rootCA: server.caCert, log }));
      return list;
    },
  };
}
