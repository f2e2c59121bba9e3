// Making a private key and a PKCS#10 certificate request for it (kubelet's certificate manager and
// bootstrap use client-go's cert.MakeCSR): ECDSA P-256 keys as kubelet generates them, the subject
// CN/O, and DNS and IP subject alternative names for serving certificates.
import { createPrivateKey, webcrypto } from 'node:crypto';
import { isIP } from 'node:net';

/** @peculiar/x509, loaded on first use (it needs the Reflect metadata API). */
async function loadX509(): Promise<typeof import('@peculiar/x509')> {
  await import('reflect-metadata');
  const x509 = await import('@peculiar/x509');
  x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);
  return x509;
}

const ALG = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;

export interface CSRSubject {
  commonName: string;
  organizations?: string[];
  /** Host names and IP addresses (serving certificates). */
  hosts?: string[];
}

/** A PEM private key (EC, as kubelet writes it) and a PEM certificate request signed by it. */
export async function makeKeyAndCSR(subject: CSRSubject, existingKeyPem?: string): Promise<{ keyPem: string; csrPem: string }> {
  const x509 = await loadX509();
  let keys: webcrypto.CryptoKeyPair;
  let keyPem: string;
  if (existingKeyPem !== undefined) {
    const k = createPrivateKey(existingKeyPem);
    const der = k.export({ format: 'der', type: 'pkcs8' });
    const privateKey = await webcrypto.subtle.importKey('pkcs8', der, ALG, true, ['sign']);
    const jwk = k.export({ format: 'jwk' });
    const publicKey = await webcrypto.subtle.importKey('jwk', { kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y } as webcrypto.JsonWebKey, ALG, true, ['verify']);
    keys = { privateKey, publicKey };
    keyPem = existingKeyPem;
  } else {
    keys = (await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify']));
    const der = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey));
    keyPem = createPrivateKey({ key: der, format: 'der', type: 'pkcs8' }).export({ format: 'pem', type: 'sec1' }).toString();
  }
  const name: import('@peculiar/x509').JsonName = [];
  if ((subject.organizations ?? []).length > 0) name.push({ O: subject.organizations! });
  name.push({ CN: [subject.commonName] });
  const hosts = subject.hosts ?? [];
  const extensions =
    hosts.length > 0
      ? [new x509.SubjectAlternativeNameExtension(hosts.map((h) => (isIP(h) !== 0 ? { type: 'ip' as const, value: h } : { type: 'dns' as const, value: h })))]
      : [];
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({ name, keys, signingAlgorithm: ALG, extensions });
  return { keyPem, csrPem: csr.toString('pem') + '\n' };
}
