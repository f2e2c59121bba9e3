/**
 * The authenticators of --enable-bootstrap-token-auth, --oidc-*, --authentication-token-webhook-* and
 * --requestheader-*, built from the options (checked at startup with kube-apiserver's messages), and the
 * --proxy-client-cert-file/--proxy-client-key-file pair: the server's own identity when it calls out,
 * loaded and checked here; the aggregation layer (not built yet) is what presents it.
 */
import type { Dialer } from '../util/dial.js';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { bootstrapTokenAuthenticator, BOOTSTRAP_NAMESPACE } from '../filters/authn/bootstrap.js';
import { oidcAuthenticator, validateOidcOptions } from '../filters/authn/oidc.js';
import { audienceAgnostic, type TokenAuthenticator } from '../filters/authn/token.js';
import { webhookTokenAuthenticator } from '../filters/authn/webhook.js';
import { isStatusError } from '../registry/errors.js';
import type { Registry } from '../registry/registry.js';
import type { ServerOptions } from './options.js';
import type { ServerConfig } from './server.js';

/** Bootstrap tokens, OIDC, then the token webhook: the order kube-apiserver asks them in after service accounts. */
export function extraTokenAuthenticators(o: ServerOptions, registry: () => Registry, apiAudiences: readonly string[], controlplane?: Dialer): TokenAuthenticator[] {
  const list: TokenAuthenticator[] = [];
  if (o.enableBootstrapTokenAuth) {
    const getSecret = async (name: string) => {
      const store = registry().store('', 'v1', 'secrets');
      try {
        return store ? await store.get({ namespace: BOOTSTRAP_NAMESPACE }, name) : undefined;
      } catch (err) {
        if (isStatusError(err, 'NotFound')) return undefined;
        throw err;
      }
    };
    list.push(audienceAgnostic(apiAudiences, bootstrapTokenAuthenticator(getSecret)));
  }
  validateOidcOptions({ ...(o.oidcIssuerUrl ? { issuerURL: o.oidcIssuerUrl } : {}), ...(o.oidcClientId ? { clientID: o.oidcClientId } : {}) });
  if (o.oidcIssuerUrl && o.oidcClientId) {
    let auth: TokenAuthenticator;
    try {
      auth = oidcAuthenticator({
        issuerURL: o.oidcIssuerUrl,
        clientID: o.oidcClientId,
        ...(o.oidcCaFile ? { caFile: o.oidcCaFile } : {}),
        usernameClaim: o.oidcUsernameClaim,
        ...(o.oidcUsernamePrefix !== undefined ? { usernamePrefix: o.oidcUsernamePrefix } : {}),
        ...(o.oidcGroupsClaim ? { groupsClaim: o.oidcGroupsClaim } : {}),
        ...(o.oidcGroupsPrefix !== undefined ? { groupsPrefix: o.oidcGroupsPrefix } : {}),
        requiredClaims: o.oidcRequiredClaim ?? {},
        signingAlgs: o.oidcSigningAlgs,
        ...(controlplane ? { dial: controlplane } : {}),
      });
    } catch (e) {
      throw new Error(`--oidc-ca-file ${o.oidcCaFile ?? ''}: ${(e as Error).message}`, { cause: e });
    }
    list.push(audienceAgnostic(apiAudiences, auth));
  }
  if (o.authenticationTokenWebhookConfigFile) {
    list.push(
      webhookTokenAuthenticator({
        configFile: o.authenticationTokenWebhookConfigFile,
        version: o.authenticationTokenWebhookVersion,
        cacheTTLMs: o.authenticationTokenWebhookCacheTtl,
        apiAudiences,
        ...(controlplane ? { dial: controlplane } : {}),
      }),
    );
  }
  return list;
}

/** The --requestheader-* options, when --requestheader-client-ca-file is given. */
export function requestHeaderFrom(o: ServerOptions): ServerConfig['requestHeader'] {
  if (!o.requestheaderClientCaFile) return undefined;
  return {
    clientCaFile: o.requestheaderClientCaFile,
    allowedNames: o.requestheaderAllowedNames ?? [],
    usernameHeaders: o.requestheaderUsernameHeaders ?? [],
    groupHeaders: o.requestheaderGroupHeaders ?? [],
    extraHeaderPrefixes: o.requestheaderExtraHeadersPrefix ?? [],
  };
}

/** Reads and checks the proxy client pair (both or neither); undefined when not given. */
export function loadProxyClient(o: ServerOptions): { cert: string; key: string } | undefined {
  const certFile = o.proxyClientCertFile;
  const keyFile = o.proxyClientKeyFile;
  if (!certFile && !keyFile) return undefined;
  if (!certFile || !keyFile) throw new Error('--proxy-client-cert-file and --proxy-client-key-file must be given together');
  try {
    const cert = readFileSync(certFile, 'utf8');
    const key = readFileSync(keyFile, 'utf8');
    if (!new X509Certificate(cert).checkPrivateKey(createPrivateKey(key))) throw new Error('private key does not match public key');
    return { cert, key };
  } catch (e) {
    throw new Error(`--proxy-client-cert-file ${certFile}, --proxy-client-key-file ${keyFile}: ${(e as Error).message}`, { cause: e });
  }
}

const AUTHENTICATION_CONFIGMAP = 'extension-apiserver-authentication';

/** Certificates and header names other servers (aggregated API servers) trust the way this one does. */
export function authenticationInfoFrom(o: ServerOptions): Record<string, string> | undefined {
  const data: Record<string, string> = {};
  if (o.clientCaFile) data['client-ca-file'] = readFileSync(o.clientCaFile, 'utf8');
  if (o.requestheaderClientCaFile) {
    data['requestheader-client-ca-file'] = readFileSync(o.requestheaderClientCaFile, 'utf8');
    data['requestheader-username-headers'] = JSON.stringify(o.requestheaderUsernameHeaders ?? []);
    data['requestheader-group-headers'] = JSON.stringify(o.requestheaderGroupHeaders ?? []);
    data['requestheader-extra-headers-prefix'] = JSON.stringify(o.requestheaderExtraHeadersPrefix ?? []);
    data['requestheader-allowed-names'] = JSON.stringify(o.requestheaderAllowedNames ?? []);
  }
  return Object.keys(data).length > 0 ? data : undefined;
}

function uniqueCertificates(...bundles: (string | undefined)[]): string {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const pem of bundles) {
    for (const cert of (pem ?? '').match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? []) {
      const key = cert.replace(/\s+/g, '');
      if (!seen.has(key)) out.push(cert);
      seen.add(key);
    }
  }
  return out.length > 0 ? out.join('\n') + '\n' : '';
}

function uniqueJSONLists(...lists: (string | undefined)[]): string {
  const out: string[] = [];
  for (const l of lists) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(l ?? '[]');
    } catch {
      parsed = [];
    }
    for (const v of Array.isArray(parsed) ? parsed : []) if (typeof v === 'string' && !out.includes(v)) out.push(v);
  }
  return JSON.stringify(out);
}

/**
 * The kube-system/extension-apiserver-authentication ConfigMap (kube-apiserver's cluster authentication
 * trust controller), written at start: this server's client CA and front-proxy settings merged into what
 * other servers of the cluster wrote (certificates and names kept unique).
 */
export async function publishAuthenticationInfo(registry: Registry, info: Record<string, string>): Promise<void> {
  const store = registry.store('', 'v1', 'configmaps');
  if (!store) return;
  const scope = { namespace: 'kube-system' };
  const merged = (existing: Record<string, string>): Record<string, string> => {
    const data = { ...existing };
    for (const [k, v] of Object.entries(info)) data[k] = k.endsWith('-file') ? uniqueCertificates(existing[k], v) : uniqueJSONLists(existing[k], v);
    return data;
  };
  try {
    await store.create(scope, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: AUTHENTICATION_CONFIGMAP, namespace: 'kube-system' }, data: merged({}) });
    return;
  } catch (err) {
    if (!isStatusError(err, 'AlreadyExists')) throw err;
  }
  await store.update(scope, AUTHENTICATION_CONFIGMAP, (now) => {
    if (!now) throw new Error(`${AUTHENTICATION_CONFIGMAP} disappeared`);
    return { ...now, data: merged(((now as { data?: Record<string, string> }).data ?? {})) };
  });
}
