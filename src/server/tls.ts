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
import { createSecureContext, getCiphers, type SecureContext, type SecureVersion } from 'node:tls';
import { TLS_INSECURE_CIPHER_SUITES } from '../util/flags.js';

const TLS_VERSION_MAP: Record<string, SecureVersion> = {
  VersionTLS10: 'TLSv1',
  VersionTLS11: 'TLSv1.1',
  VersionTLS12: 'TLSv1.2',
  VersionTLS13: 'TLSv1.3',
};

/** --tls-min-version → Node's minVersion; kube-apiserver's default is TLS 1.2. */
export function tlsMinVersion(version: string | undefined): SecureVersion {
  if (version === undefined || version === '') return 'TLSv1.2';
  const v = TLS_VERSION_MAP[version];
  if (!v) throw new Error(`--tls-min-version: unknown tls version "${version}"; allowed: ${Object.keys(TLS_VERSION_MAP).join(', ')}`);
  return v;
}

/** Go cipher suite names (the document's) → OpenSSL names. */
export const CIPHER_SUITE_OPENSSL_NAMES: Readonly<Record<string, string>> = {
  TLS_AES_128_GCM_SHA256: 'TLS_AES_128_GCM_SHA256',
  TLS_AES_256_GCM_SHA384: 'TLS_AES_256_GCM_SHA384',
  TLS_CHACHA20_POLY1305_SHA256: 'TLS_CHACHA20_POLY1305_SHA256',
  TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA: 'ECDHE-ECDSA-AES128-SHA',
  TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256: 'ECDHE-ECDSA-AES128-GCM-SHA256',
  TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA: 'ECDHE-ECDSA-AES256-SHA',
  TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384: 'ECDHE-ECDSA-AES256-GCM-SHA384',
  TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305: 'ECDHE-ECDSA-CHACHA20-POLY1305',
  TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256: 'ECDHE-ECDSA-CHACHA20-POLY1305',
  TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA: 'ECDHE-RSA-AES128-SHA',
  TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256: 'ECDHE-RSA-AES128-GCM-SHA256',
  TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA: 'ECDHE-RSA-AES256-SHA',
  TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384: 'ECDHE-RSA-AES256-GCM-SHA384',
  TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305: 'ECDHE-RSA-CHACHA20-POLY1305',
  TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256: 'ECDHE-RSA-CHACHA20-POLY1305',
  TLS_RSA_WITH_AES_128_CBC_SHA: 'AES128-SHA',
  TLS_RSA_WITH_AES_128_GCM_SHA256: 'AES128-GCM-SHA256',
  TLS_RSA_WITH_AES_256_CBC_SHA: 'AES256-SHA',
  TLS_RSA_WITH_AES_256_GCM_SHA384: 'AES256-GCM-SHA384',
  // insecure
  TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256: 'ECDHE-ECDSA-AES128-SHA256',
  TLS_ECDHE_ECDSA_WITH_RC4_128_SHA: 'ECDHE-ECDSA-RC4-SHA',
  TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA: 'ECDHE-RSA-DES-CBC3-SHA',
  TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256: 'ECDHE-RSA-AES128-SHA256',
  TLS_ECDHE_RSA_WITH_RC4_128_SHA: 'ECDHE-RSA-RC4-SHA',
  TLS_RSA_WITH_3DES_EDE_CBC_SHA: 'DES-CBC3-SHA',
  TLS_RSA_WITH_AES_128_CBC_SHA256: 'AES128-SHA256',
  TLS_RSA_WITH_RC4_128_SHA: 'RC4-SHA',
};

/**
 * --tls-cipher-suites → Node's `ciphers` string (TLS 1.2 and TLS 1.3 names together), or undefined for
 * Node's defaults when the list is empty. Warnings go to `warn`; throws naming the option on an unknown
 * suite or when nothing usable remains.
 */
export function tlsCiphers(suites: readonly string[], warn: (m: string) => void): string | undefined {
  if (suites.length === 0) return undefined;
  const available = new Set(getCiphers().map((c) => c.toLowerCase()));
  const names: string[] = [];
  for (const suite of suites) {
    const name = CIPHER_SUITE_OPENSSL_NAMES[suite];
    if (!name) {
      throw new Error(`--tls-cipher-suites: Cipher suite ${suite} not supported or doesn't exist; allowed: ${Object.keys(CIPHER_SUITE_OPENSSL_NAMES).join(', ')}`);
    }
    if (TLS_INSECURE_CIPHER_SUITES.includes(suite)) warn(`Use of insecure cipher '${suite}' detected.`);
    if (!available.has(name.toLowerCase())) {
      warn(`--tls-cipher-suites: ${suite} is not available in this OpenSSL build and is ignored`);
      continue;
    }
    if (!names.includes(name)) names.push(name);
  }
  if (names.length === 0) throw new Error('--tls-cipher-suites: none of the given cipher suites is available in this OpenSSL build');
  return names.join(':');
}

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
