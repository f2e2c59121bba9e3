/**
 * The front-proxy request headers, as Kubernetes 1.23 (request/headerrequest behind an x509 verifier):
 * a request whose client certificate chains to --requestheader-client-ca-file (and whose CommonName is in
 * --requestheader-allowed-names, when that is not empty) is the user named by the first non-empty header of
 * --requestheader-username-headers, in the groups of every value of the --requestheader-group-headers, with
 * extras from the headers starting with a --requestheader-extra-headers-prefix (the rest of the name,
 * unescaped and lower-cased, is the key). A certificate the CA did not sign, or a name not allowed, is a
 * failure (another authenticator may still accept the request); no user header means no credential. The
 * identity headers are removed once used, so they are never passed on.
 */
import { X509Certificate } from 'node:crypto';
import type { TLSSocket } from 'node:tls';
import type { ApiRequest, UserInfo } from '../../endpoints/http.js';
import type { AuthenticationResult, Authenticator } from '../authn.js';

export interface RequestHeaderConfig {
  /** The CA bundle's certificates (PEM, one each). */
  caCerts: string[];
  allowedNames: readonly string[];
  usernameHeaders: readonly string[];
  groupHeaders: readonly string[];
  extraHeaderPrefixes: readonly string[];
}

function tlsSocketOf(req: ApiRequest): TLSSocket | undefined {
  const socket = req.socket as Partial<TLSSocket> | undefined;
  return typeof socket?.getPeerCertificate === 'function' ? (socket as TLSSocket) : undefined;
}

/**
 * Whether the socket's presented chain leads to one of `cas` (signatures and validity checked, each issuer
 * a CA). Undefined when no certificate was presented.
 */
export function peerChainsTo(socket: TLSSocket, cas: readonly X509Certificate[]): ChainResult | undefined {
  const leaf = socket.getPeerCertificate(true);
  if (!leaf || Object.keys(leaf).length === 0) return undefined;
  const chain: X509Certificate[] = [];
  const seen = new Set<string>();
  for (let c: typeof leaf | undefined = leaf; c && c.raw && !seen.has(c.fingerprint256); c = c.issuerCertificate) {
    seen.add(c.fingerprint256);
    chain.push(new X509Certificate(c.raw));
  }
  const cnField = leaf.subject?.CN;
  const cn = Array.isArray(cnField) ? cnField[0] : cnField;
  const now = Date.now();
  const valid = (c: X509Certificate) => Date.parse(c.validFrom) <= now && now <= Date.parse(c.validTo);
  let current = chain[0]!;
  if (!valid(current)) return { ok: false, ...(cn ? { cn } : {}), error: 'x509: certificate has expired or is not yet valid' };
  for (let i = 0; i <= chain.length; i++) {
    const root = cas.find((ca) => current.checkIssued(ca) && current.verify(ca.publicKey) && valid(ca));
    if (root) return { ok: true, ...(cn ? { cn } : {}) };
    const next = chain.find((c) => c !== current && c.ca && current.checkIssued(c) && current.verify(c.publicKey) && valid(c));
    if (!next) break;
    current = next;
  }
  return { ok: false, ...(cn ? { cn } : {}), error: 'x509: certificate signed by unknown authority' };
}

export type ChainResult = { ok: boolean; cn?: string; error?: string };

/**
 * peerChainsTo for one CA set, remembered per connection (a minute at most, so expiry is still noticed):
 * the chain does not change within a TLS connection.
 */
export function chainVerifier(cas: readonly X509Certificate[]): (socket: TLSSocket) => ChainResult | undefined {
  const seen = new WeakMap<TLSSocket, { at: number; result: ChainResult | undefined }>();
  return (socket) => {
    const now = Date.now();
    const hit = seen.get(socket);
    if (hit && now - hit.at < 60_000) return hit.result;
    const result = peerChainsTo(socket, cas);
    seen.set(socket, { at: now, result });
    return result;
  };
}

/** Each header's values as sent (repeated lines kept apart), by lower-cased name. */
function headerValues(req: ApiRequest): Map<string, string[]> {
  const out = new Map<string, string[]>();
  const raw = req.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    const list = out.get(name) ?? [];
    list.push(raw[i + 1]!);
    out.set(name, list);
  }
  return out;
}

function unescapeKey(key: string): string {
  try {
    return decodeURIComponent(key).toLowerCase();
  } catch {
    return key.toLowerCase();
  }
}

export function requestHeaderAuthenticator(cfg: RequestHeaderConfig): Authenticator {
  const verify = chainVerifier(cfg.caCerts.map((pem) => new X509Certificate(pem)));
  const userHeaders = cfg.usernameHeaders.map((h) => h.trim().toLowerCase()).filter((h) => h !== '');
  const groupHeaders = cfg.groupHeaders.map((h) => h.trim().toLowerCase()).filter((h) => h !== '');
  const prefixes = cfg.extraHeaderPrefixes.map((h) => h.trim().toLowerCase()).filter((h) => h !== '');
  return {
    authenticate(req): AuthenticationResult {
      const socket = tlsSocketOf(req);
      if (!socket) return { status: 'absent' };
      const verified = verify(socket);
      if (!verified) return { status: 'absent' };
      if (!verified.ok) return { status: 'failed', reason: `verifying certificate: ${verified.error ?? ''}` };
      if (cfg.allowedNames.length > 0 && !cfg.allowedNames.includes(verified.cn ?? '')) {
        return { status: 'failed', reason: `x509: subject with cn=${verified.cn ?? ''} is not in the allowed list` };
      }
      const headers = headerValues(req);
      const name = userHeaders.map((h) => (headers.get(h) ?? []).find((v) => v.trim() !== '')?.trim()).find((v) => v !== undefined);
      if (name === undefined) return { status: 'absent' };
      const groups = groupHeaders.flatMap((h) => headers.get(h) ?? []);
      const extra: Record<string, string[]> = {};
      for (const [h, values] of headers) {
        const prefix = prefixes.find((p) => h.startsWith(p));
        if (prefix === undefined) continue;
        const key = unescapeKey(h.slice(prefix.length));
        extra[key] = [...(extra[key] ?? []), ...values];
      }
      for (const h of [...userHeaders, ...groupHeaders]) delete req.headers[h];
      for (const h of headers.keys()) if (prefixes.some((p) => h.startsWith(p))) delete req.headers[h];
      const user: UserInfo = { name, groups };
      if (Object.keys(extra).length > 0) user.extra = extra;
      return { status: 'authenticated', user };
    },
  };
}
