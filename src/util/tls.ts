/**
 * The TLS options shared by the server and the node agent (--tls-min-version, --tls-cipher-suites):
 * Go's names translated to Node's TLS options.
 *
 * Cipher suites: Go's names map to OpenSSL's. TLS 1.3 suites (TLS_AES_*, TLS_CHACHA20_*) go into the
 * TLS 1.3 list; when none is named, every TLS 1.3 suite stays enabled, as Go always enables them.
 * Insecure suites are accepted with Kubernetes' warning; suites this OpenSSL build cannot offer (RC4,
 * 3DES) are dropped with a warning, and a list left with none is a startup error.
 */
import type { SecureVersion } from 'node:tls';
import { getCiphers } from './node-tls.js';
import { TLS_INSECURE_CIPHER_SUITES } from './flags.js';

export const TLS_VERSION_MAP: Record<string, SecureVersion> = {
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
