// The serving certificate of the agent's HTTPS server (kubelet's --tls-cert-file /
// --tls-private-key-file, else a self-signed pair in --cert-dir): when neither file is given,
// <cert-dir>/orchlet.crt and orchlet.key are used if they exist (as kubelet reuses kubelet.crt), else
// generated: a CA `<host>-ca@<unix time>` and a certificate `<host>@<unix time>` it signed for the
// host name, localhost, 127.0.0.1 and the node IPs (kubelet's GenerateSelfSignedCertKey), valid a year.
import { webcrypto } from 'node:crypto';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { join } from 'node:path';

/** @peculiar/x509, loaded only when a pair has to be generated (it needs the Reflect metadata API). */
async function loadX509(): Promise<typeof import('@peculiar/x509')> {
  await import('reflect-metadata');
  const x509 = await import('@peculiar/x509');
  x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);
  return x509;
}

export const AGENT_CERT_FILE = 'orchlet.crt';
export const AGENT_KEY_FILE = 'orchlet.key';

const ALG = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const YEAR_MS = 365 * 24 * 3600 * 1000;

export interface AgentCertOptions {
  certDir: string;
  certFile?: string;
  keyFile?: string;
  hostname: string;
  ips: string[];
}

export async function agentServingCert(o: AgentCertOptions): Promise<{ cert: string; key: string }> {
  if (o.certFile !== undefined || o.keyFile !== undefined) {
    if (o.certFile === undefined || o.keyFile === undefined) throw new Error('--tls-cert-file and --tls-private-key-file must be given together');
    return { cert: await readFile(o.certFile, 'utf8'), key: await readFile(o.keyFile, 'utf8') };
  }
  const certPath = join(o.certDir, AGENT_CERT_FILE);
  const keyPath = join(o.certDir, AGENT_KEY_FILE);
  try {
    return { cert: await readFile(certPath, 'utf8'), key: await readFile(keyPath, 'utf8') };
  } catch {
    // generate below
  }
  const pair = await generate(o.hostname, [...new Set(['127.0.0.1', ...o.ips])]);
  await mkdir(o.certDir, { recursive: true, mode: 0o700 });
  await writeFile(certPath, pair.cert, { mode: 0o644 });
  await writeFile(keyPath, pair.key, { mode: 0o600 });
  await chmod(keyPath, 0o600);
  return pair;
}

async function keys(): Promise<webcrypto.CryptoKeyPair> {
  return webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify']);
}

async function pemKey(k: webcrypto.CryptoKey): Promise<string> {
  const der = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', k));
  return `-----BEGIN PRIVATE KEY-----\n${der.toString('base64').replace(/(.{64})/g, '$1\n').replace(/\n$/, '')}\n-----END PRIVATE KEY-----\n`;
}

const serial = (): string => Buffer.from(webcrypto.getRandomValues(new Uint8Array(16))).toString('hex').replace(/^[89a-f]/, '1');

async function generate(host: string, ips: string[]): Promise<{ cert: string; key: string }> {
  const x509 = await loadX509();
  const stamp = Math.floor(Date.now() / 1000);
  const notBefore = new Date(Date.now() - 3600_000);
  const notAfter = new Date(Date.now() + YEAR_MS);
  const caKeys = await keys();
  const ca = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: [{ CN: [`${host}-ca@${stamp}`] }],
    notBefore,
    notAfter,
    keys: caKeys,
    signingAlgorithm: ALG,
    extensions: [new x509.BasicConstraintsExtension(true, undefined, true), new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.digitalSignature, true)],
  });
  const leafKeys = await keys();
  const names: import('@peculiar/x509').JsonGeneralName[] = [
    { type: 'dns', value: host },
    ...(host !== 'localhost' ? [{ type: 'dns' as const, value: 'localhost' }] : []),
    ...ips.filter((i) => isIP(i) !== 0).map((value) => ({ type: 'ip' as const, value })),
  ];
  const leaf = await x509.X509CertificateGenerator.create({
    serialNumber: serial(),
    subject: [{ CN: [`${host}@${stamp}`] }],
    issuer: ca.subject,
    notBefore,
    notAfter,
    publicKey: leafKeys.publicKey,
    signingKey: caKeys.privateKey,
    signingAlgorithm: ALG,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension(names),
    ],
  });
  return { cert: `${leaf.toString('pem')}\n${ca.toString('pem')}\n`, key: await pemKey(leafKeys.privateKey) };
}
