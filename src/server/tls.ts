/**
 * TLS options of the secure port, as kube-apiserver applies --tls-min-version, --tls-cipher-suites and
 * --tls-sni-cert-key, translated to Node's TLS options.
 *
 * Cipher suites: Go's names map to OpenSSL's. TLS 1.3 suites (TLS_AES_*, TLS_CHACHA20_*) go into the
 * TLS 1.3 list; when none is named, every TLS 1.3 suite stays enabled, as Go always enables them.
 * Insecure suites are accepted with Kubernetes' warning; suites this OpenSSL build cannot offer (RC4,
 * 3DES) are dropped with a warning, and a list left with none is a startup error.
 *
 * SNI: each --tls-sni-cert-key is 'cert,key[:name,...]'. Without explicit names, the certificate's CN
 * (when a DNS name, not an IP) and DNS SANs are used. Explicit names override names taken from
 * certificates; among equals the earlier option wins. Lookup is Go's: the exact (lowercased) server name,
 * then the name with its first label replaced by '*'; otherwise the default certificate.
 */
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import type { SecureContext, SecureVersion } from 'node:tls';
import { createSecureContext } from '../util/node-tls.js';

export { CIPHER_SUITE_OPENSSL_NAMES, tlsCiphers, tlsMinVersion } from '../util/tls.js';

// ---- SNI -------------------------------------------------------------------------------------------

export interface SniCertKey {
  certFile: string;
  keyFile: string;
  /** Explicit names; empty means names from the certificate. */
  names: string[];
}

/** Parses one --tls-sni-cert-key value 'cert,key[:name1,name2]'. */
export function parseSniCertKey(value: string): SniCertKey {
  const colon = value.indexOf(':');
  const files = colon < 0 ? value : value.slice(0, colon);
  const names = colon < 0 ? [] : value.slice(colon + 1).split(',').map((n) => n.trim()).filter((n) => n !== '');
  const parts = files.split(',').map((p) => p.trim());
  if (parts.length !== 2 || parts[0] === '' || parts[1] === '') {
    throw new Error(`--tls-sni-cert-key: "${value}" is not of the form cert,key[:name1,name2]`);
  }
  return { certFile: parts[0]!, keyFile: parts[1]!, names };
}

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Kubernetes' getCertificateNames: the CN when it is '*' or a (wildcard) DNS name and not an IP, then the DNS SANs. */
export function certificateNames(cert: X509Certificate): string[] {
  const names: string[] = [];
  const cn = /(?:^|\n)CN=([^\n]*)/.exec(cert.subject)?.[1] ?? '';
  const bare = cn.startsWith('*.') ? cn.slice(2) : cn;
  if (isIP(cn) === 0 && (cn === '*' || (bare.length <= 253 && DNS_SUBDOMAIN.test(bare)))) names.push(cn);
  for (const entry of (cert.subjectAltName ?? '').split(', ')) {
    if (entry.startsWith('DNS:')) names.push(entry.slice(4));
  }
  return names;
}

export interface SniContexts {
  /** Server name (lowercase, possibly '*.'-prefixed) → the context serving it. */
  byName: Map<string, SecureContext>;
}

/** Loads every --tls-sni-cert-key pair (throwing with the option name and index) and builds the name map. */
export async function loadSniCertificates(values: readonly string[], contextOptions: { ciphers?: string; minVersion: SecureVersion; ca?: string }): Promise<SniContexts> {
  const entries = values.map(parseSniCertKey);
  const loaded = await Promise.all(
    entries.map(async (e, i) => {
      try {
        const [cert, key] = await Promise.all([readFile(e.certFile, 'utf8'), readFile(e.keyFile, 'utf8')]);
        const x509 = new X509Certificate(cert);
        if (!x509.checkPrivateKey(createPrivateKey(key))) throw new Error('private key does not match public key');
        const context = createSecureContext({
          cert,
          key,
          minVersion: contextOptions.minVersion,
          ...(contextOptions.ciphers ? { ciphers: contextOptions.ciphers } : {}),
          // Client certificates are verified against the context chosen by SNI, so it needs the client CA too.
          ...(contextOptions.ca ? { ca: contextOptions.ca } : {}),
        });
        return { entry: e, x509, context };
      } catch (err) {
        throw new Error(`--tls-sni-cert-key: invalid SNI cert keypair [${i}/"${e.certFile}::${e.keyFile}"]: ${(err as Error).message}`, { cause: err });
      }
    }),
  );
  const byName = new Map<string, SecureContext>();
  const explicit = new Map<string, SecureContext>();
  // Backwards, so that earlier pairs take precedence.
  for (let i = loaded.length - 1; i >= 0; i--) {
    const { entry, x509, context } = loaded[i]!;
    for (const n of entry.names) explicit.set(n.toLowerCase(), context);
    if (entry.names.length === 0) for (const n of certificateNames(x509)) byName.set(n.toLowerCase(), context);
  }
  for (const [n, c] of explicit) byName.set(n, c);
  return { byName };
}

/** Go's crypto/tls lookup: exact name, then the first label replaced by '*'. */
export function lookupSniContext(sni: SniContexts, serverName: string): SecureContext | undefined {
  let name = serverName.toLowerCase();
  if (name.endsWith('.')) name = name.slice(0, -1);
  const exact = sni.byName.get(name);
  if (exact) return exact;
  const labels = name.split('.');
  labels[0] = '*';
  return sni.byName.get(labels.join('.'));
}

/** The SNICallback for Node's TLS server; unknown names get the default certificate. */
export function sniCallback(sni: SniContexts): (serverName: string, cb: (err: Error | null, ctx?: SecureContext) => void) => void {
  return (serverName, cb) => cb(null, lookupSniContext(sni, serverName));
}
