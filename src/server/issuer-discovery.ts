/**
 * Service-account issuer discovery, as Kubernetes 1.23 (pkg/serviceaccount/openidmetadata.go,
 * pkg/routes/openidmetadata.go): /.well-known/openid-configuration and /openid/v1/jwks, rendered once at
 * start from the first issuer and the verifying keys, served with `Cache-Control: public, max-age=3600`.
 * Who may read them is the authorization chain's decision (RBAC's system:service-account-issuer-discovery).
 * The issuer must be an https URL without query or fragment, and the key-set URI --service-account-jwks-uri
 * (https) or https://<external address>/openid/v1/jwks; otherwise the endpoints are not installed and a
 * warning says why, as kube-apiserver does.
 */
import type { KeyObject } from 'node:crypto';
import type { Handler } from '../filters/authn.js';
import { algorithmOf, keyIdOf } from '../registry/kinds/authentication/tokens.js';
import type { Router } from './server.js';

export const OPENID_CONFIG_PATH = '/.well-known/openid-configuration';
export const JWKS_PATH = '/openid/v1/jwks';
const MAX_AGE_SECONDS = 3600;

/** A public key as go-jose's JSONWebKey marshals it: use, kty, kid, crv, alg, x, y, n, e. */
export function jwkOf(key: KeyObject): Record<string, string> {
  const jwk = key.export({ format: 'jwk' });
  const out: Record<string, string> = { use: 'sig', kty: String(jwk.kty), kid: keyIdOf(key) };
  if (jwk.crv) out['crv'] = jwk.crv;
  out['alg'] = algorithmOf(key);
  for (const f of ['x', 'y', 'n', 'e'] as const) if (jwk[f]) out[f] = jwk[f];
  return out;
}

/** The discovery documents, or an error saying why they cannot be served. */
export function openIDMetadata(issuer: string, jwksUri: string | undefined, externalAddress: string, keys: readonly KeyObject[]): { config: string; jwks: string } {
  if (issuer === '') throw new Error('empty issuer URL');
  let iss: URL;
  try {
    iss = new URL(issuer);
  } catch (e) {
    throw new Error(`parse ${JSON.stringify(issuer)}: ${(e as Error).message}`, { cause: e });
  }
  if (iss.protocol !== 'https:') throw new Error(`issuer URL must use https scheme, got: ${issuer}`);
  if (iss.search !== '') throw new Error(`issuer URL may not include a query, got: ${issuer}`);
  if (iss.hash !== '') throw new Error(`issuer URL may not include a fragment, got: ${issuer}`);
  let uri = jwksUri ?? '';
  if (uri === '') {
    uri = `https://${externalAddress}${JWKS_PATH}`;
  } else if (new URL(uri).protocol !== 'https:') {
    throw new Error(`jwksURI requires https scheme, parsed as: ${uri}`);
  }
  if (keys.length === 0) throw new Error('no keys provided for validating keyset');
  const jwks = keys.map(jwkOf);
  const algs = [...new Set(jwks.map((k) => k['alg']!))].sort();
  return {
    config: JSON.stringify({
      issuer,
      jwks_uri: uri,
      response_types_supported: ['id_token'],
      subject_types_supported: ['public'],
      id_token_signing_alg_values_supported: algs,
    }),
    jwks: JSON.stringify({ keys: jwks }),
  };
}

function serveBytes(render: () => string, contentType: string): Handler {
  return (_req, res) => {
    const body = render();
    res.statusCode = 200;
    res.setHeader('Content-Type', contentType);
    res.setHeader('Cache-Control', `public, max-age=${MAX_AGE_SECONDS}`);
    res.setHeader('Content-Length', Buffer.byteLength(body));
    res.end(body);
  };
}

/** Installs both endpoints when the issuer allows; logs the reason and installs nothing otherwise. */
export function installIssuerDiscovery(
  mux: Router,
  opts: { issuer: string; jwksUri?: string; externalAddress: () => string; keys: readonly KeyObject[]; log: (m: string) => void },
): boolean {
  // The default key-set URI names the bound port, known once the server listens: rendered again when it changes.
  let docs: { config: string; jwks: string; address: string };
  const render = () => {
    const address = opts.externalAddress();
    if (docs.address !== address) docs = { ...openIDMetadata(opts.issuer, opts.jwksUri, address, opts.keys), address };
    return docs;
  };
  try {
    docs = { ...openIDMetadata(opts.issuer, opts.jwksUri, opts.externalAddress(), opts.keys), address: opts.externalAddress() };
  } catch (e) {
    opts.log(
      `Could not construct pre-rendered responses for ServiceAccountIssuerDiscovery endpoints. Endpoints will not be enabled. Error: ${(e as Error).message}`,
    );
    return false;
  }
  mux.handle(OPENID_CONFIG_PATH, serveBytes(() => render().config, 'application/json'));
  mux.handle(JWKS_PATH, serveBytes(() => render().jwks, 'application/jwk-set+json'));
  return true;
}
