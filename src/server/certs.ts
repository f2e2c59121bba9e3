/**
 * The API server's serving certificate, as kube-apiserver handles --tls-cert-file, --tls-private-key-file
 * and --cert-dir: given files are read and checked; otherwise a self-signed CA and a serving certificate
 * it signed are generated into the cert dir (apiserver.crt holds the serving certificate then the CA,
 * apiserver.key the serving key) and reused on later starts while they are valid and cover the hosts.
 * Also issues CAs and client certificates for tests and tools (ECDSA P-256, SHA-256, PEM).
 */
import { X509Certificate, createPrivateKey, randomBytes, webcrypto, type KeyObject } from 'node:crypto';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type * as X509 from '@peculiar/x509';

/**
 * @peculiar/x509 (and the tsyringe and Reflect metadata it needs) costs about 15 MiB of memory, and is only
 * needed to generate certificates: it is loaded on the first generation, not when stored ones are reused.
 */
let x509Module: Promise<typeof X509> | undefined;
export function loadX509(): Promise<typeof X509> {
  x509Module ??= (async () => {
    await import('reflect-metadata');
    const x509 = await import('@peculiar/x509');
    x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);
    return x509;
  })();
  return x509Module;
}

export const SERVING_CERT_FILE = 'apiserver.crt';
export const SERVING_KEY_FILE = 'apiserver.key';

const DAY_MS = 24 * 60 * 60 * 1000;
/** kube-apiserver backdates by an hour for clock skew and issues for a year. */
const BACKDATE_MS = 60 * 60 * 1000;
const VALIDITY_MS = 365 * DAY_MS;
/** A stored certificate expiring sooner than this is regenerated instead of reused. */
const REUSE_MIN_REMAINING_MS = DAY_MS;

const KEY_ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256' } as const;
const SIGNING_ALGORITHM = { name: 'ECDSA', hash: 'SHA-256' } as const;

export interface ServingCertOptions {
  /** --cert-dir: where the self-signed pair is written and looked for. */
  certDir: string;
  /** --tls-cert-file; with keyFile, replaces the self-signed pair. */
  certFile?: string;
  /** --tls-private-key-file. */
  keyFile?: string;
  /** Names and IPs the serving certificate must cover besides localhost, 127.0.0.1, ::1 and the host name. */
  hosts: string[];
}

export interface ServingCert {
  /** PEM chain: the serving certificate first. */
  cert: string;
  /** PEM private key of the serving certificate. */
  key: string;
  /** PEM of the CA that signed it (the last certificate of the chain), for kubeconfigs and clients. */
  caCert: string;
}

export interface CertAndKey {
  cert: string;
  key: string;
}

/** Reads the given pair or generates/reuses the self-signed one; throws a message naming the flag on bad files. */
export async function ensureServingCert(opts: ServingCertOptions): Promise<ServingCert> {
  if (opts.certFile || opts.keyFile) {
    if (!opts.certFile || !opts.keyFile) {
      throw new Error('--tls-cert-file and --tls-private-key-file must be given together');
    }
    return readServingPair(opts.certFile, opts.keyFile);
  }
  const hosts = servingHosts(opts.hosts);
  const certPath = join(opts.certDir, SERVING_CERT_FILE);
  const keyPath = join(opts.certDir, SERVING_KEY_FILE);
  const existing = await reusablePair(certPath, keyPath, hosts);
  if (existing) return existing;

  await mkdir(opts.certDir, { recursive: true, mode: 0o700 });
  const generated = await generateServingPair(hosts);
  await writeFile(certPath, generated.cert, { mode: 0o644 });
  await writeFile(keyPath, generated.key, { mode: 0o600 });
  await chmod(keyPath, 0o600);
  return generated;
}

/** localhost, loopback IPs and the host name, then `extra`, without duplicates or empty entries. */
export function servingHosts(extra: string[]): string[] {
  const all = ['localhost', '127.0.0.1', '::1', hostname(), ...extra];
  return [...new Set(all.map((h) => h.trim()).filter((h) => h !== ''))];
}

/** A new self-signed CA certificate (valid for a year) and its key. */
export async function makeCA(commonName: string): Promise<CertAndKey> {
  const x509 = await loadX509();
  const keys = await generateKeys();
  const now = Date.now();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: newSerial(),
    name: [{ CN: [commonName] }],
    notBefore: new Date(now - BACKDATE_MS),
    notAfter: new Date(now + VALIDITY_MS),
    keys,
    signingAlgorithm: SIGNING_ALGORITHM,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment,
        true,
      ),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { cert: cert.toString('pem') + '\n', key: await exportKey(keys.privateKey) };
}

export interface ClientCertOptions {
  /** PEM of the issuing CA. */
  caCert: string;
  /** PEM private key of the issuing CA (PKCS#8 or SEC1). */
  caKey: string;
  /** Becomes the user name. */
  commonName: string;
  /** Become the groups. */
  organizations?: string[];
}

/** A client certificate (clientAuth) signed by the given CA; Kubernetes reads CN as the user, O as groups. */
export async function makeClientCert(opts: ClientCertOptions): Promise<CertAndKey> {
  const x509 = await loadX509();
  const subject: X509.JsonName = [{ CN: [opts.commonName] }];
  for (const o of opts.organizations ?? []) subject.push({ O: [o] });
  return issue(opts.caCert, opts.caKey, subject, [
    new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true),
    new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.clientAuth]),
  ]);
}

/** A serving certificate (serverAuth) for `hosts`, signed by the given CA. */
export async function makeServingCert(caCert: string, caKey: string, commonName: string, hosts: string[]): Promise<CertAndKey> {
  const x509 = await loadX509();
  const names: X509.JsonGeneralName[] = hosts.map((h) =>
    isIP(h) ? { type: 'ip', value: h } : { type: 'dns', value: h },
  );
  return issue(caCert, caKey, [{ CN: [commonName] }], [
    new x509.BasicConstraintsExtension(false, undefined, true),
    new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true),
    new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
    new x509.SubjectAlternativeNameExtension(names),
  ]);
}

/** Splits a PEM bundle into its certificates, in order. */
export function splitPemCertificates(pem: string): string[] {
  return pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g)?.map((c) => c + '\n') ?? [];
}

async function issue(caCertPem: string, caKeyPem: string, subject: X509.JsonName, extensions: X509.Extension[]): Promise<CertAndKey> {
  const x509 = await loadX509();
  const ca = new x509.X509Certificate(caCertPem);
  const caKey = await importPrivateKey(caKeyPem);
  const keys = await generateKeys();
  const now = Date.now();
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: newSerial(),
    subject,
    issuer: ca.subject,
    notBefore: new Date(now - BACKDATE_MS),
    notAfter: new Date(now + VALIDITY_MS),
    publicKey: keys.publicKey,
    signingKey: caKey,
    signingAlgorithm: SIGNING_ALGORITHM,
    extensions: [...extensions, await x509.AuthorityKeyIdentifierExtension.create(ca.publicKey)],
  });
  return { cert: cert.toString('pem') + '\n', key: await exportKey(keys.privateKey) };
}

/** As kube-apiserver: CA `<host>-ca@<unix time>`, serving certificate `<host>@<unix time>`. */
async function generateServingPair(hosts: string[]): Promise<ServingCert> {
  const first = hosts.find((h) => h !== 'localhost' && !isIP(h)) ?? 'localhost';
  const stamp = Math.floor(Date.now() / 1000);
  const ca = await makeCA(`${first}-ca@${stamp}`);
  const serving = await makeServingCert(ca.cert, ca.key, `${first}@${stamp}`, hosts);
  return { cert: serving.cert + ca.cert, key: serving.key, caCert: ca.cert };
}

/** The stored pair when both files parse, match, are valid for a while longer and cover `hosts`; else null. */
async function reusablePair(certPath: string, keyPath: string, hosts: string[]): Promise<ServingCert | null> {
  let certPem: string;
  let keyPem: string;
  try {
    [certPem, keyPem] = await Promise.all([readFile(certPath, 'utf8'), readFile(keyPath, 'utf8')]);
  } catch {
    return null;
  }
  try {
    const chain = splitPemCertificates(certPem);
    const leaf = new X509Certificate(chain[0] ?? '');
    const now = Date.now();
    if (Date.parse(leaf.validFrom) > now || Date.parse(leaf.validTo) < now + REUSE_MIN_REMAINING_MS) return null;
    if (!leaf.checkPrivateKey(createPrivateKey(keyPem))) return null;
    if (!hosts.every((h) => coversHost(leaf, h))) return null;
    return { cert: certPem, key: keyPem, caCert: chain[chain.length - 1] ?? '' };
  } catch {
    return null;
  }
}

function coversHost(cert: X509Certificate, host: string): boolean {
  if (isIP(host)) return cert.checkIP(host) !== undefined;
  return cert.checkHost(host, { subject: 'never', wildcards: false }) !== undefined;
}

async function readServingPair(certFile: string, keyFile: string): Promise<ServingCert> {
  const certPem = await readFile(certFile, 'utf8').catch((e: Error) => {
    throw new Error(`--tls-cert-file ${certFile}: cannot be read: ${e.message}`);
  });
  const keyPem = await readFile(keyFile, 'utf8').catch((e: Error) => {
    throw new Error(`--tls-private-key-file ${keyFile}: cannot be read: ${e.message}`);
  });
  const chain = splitPemCertificates(certPem);
  let leaf: X509Certificate;
  try {
    leaf = new X509Certificate(chain[0] ?? certPem);
  } catch (e) {
    throw new Error(`--tls-cert-file ${certFile}: not a PEM certificate: ${(e as Error).message}`, { cause: e });
  }
  let key: KeyObject;
  try {
    key = createPrivateKey(keyPem);
  } catch (e) {
    throw new Error(`--tls-private-key-file ${keyFile}: not a PEM private key: ${(e as Error).message}`, { cause: e });
  }
  if (!leaf.checkPrivateKey(key)) {
    throw new Error(
      `--tls-private-key-file ${keyFile} does not match --tls-cert-file ${certFile}: the key is not the certificate's private key`,
    );
  }
  return { cert: certPem, key: keyPem, caCert: chain[chain.length - 1] ?? certPem };
}

async function generateKeys(): Promise<webcrypto.CryptoKeyPair> {
  return webcrypto.subtle.generateKey(KEY_ALGORITHM, true, ['sign', 'verify']);
}

async function exportKey(key: webcrypto.CryptoKey): Promise<string> {
  const der = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', key));
  return createPrivateKey({ key: der, format: 'der', type: 'pkcs8' }).export({ format: 'pem', type: 'pkcs8' }).toString();
}

async function importPrivateKey(pem: string): Promise<webcrypto.CryptoKey> {
  const der = createPrivateKey(pem).export({ format: 'der', type: 'pkcs8' });
  return webcrypto.subtle.importKey('pkcs8', der, KEY_ALGORITHM, false, ['sign']);
}

/** 128-bit positive serial (the high bit cleared: Go rejects negative serials). */
function newSerial(): string {
  const bytes = randomBytes(16);
  bytes[0] = (bytes[0]! & 0x7f) | 0x01;
  return bytes.toString('hex');
}
