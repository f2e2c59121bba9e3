/**
 * The csrsigning controller, as kube-controller-manager 1.23's (pkg/controller/certificates/signer): signs
 * approved CertificateSigningRequests of the signers kubernetes.io/kube-apiserver-client,
 * kubernetes.io/kube-apiserver-client-kubelet and kubernetes.io/kubelet-serving with the cluster CA.
 *   - a request not approved, failed, already issued or of another signer is left alone;
 *   - one the signer refuses (kubelet requests must be CN=system:node:<name>, O=system:nodes, with the
 *     usages and subject alternative names kubelet's validation allows; client requests need 'client auth')
 *     gets a Failed condition, reason SignerValidationFailure;
 *   - the certificate: the request's subject, names and public key; key and extended key usages from
 *     spec.usages; not a CA; valid from 5 minutes ago for spec.expirationSeconds (at least 10 minutes) capped
 *     by the signing duration (a year by default), the end not backdated for certificates under 8 hours, and
 *     never past the CA's own expiry. It is written to status.certificate.
 *
 * The cluster CA (controller-manager's --cluster-signing-cert-file/--cluster-signing-key-file, which
 * document 2 does not have): the certificate of --client-ca-file with the private key beside it (the file
 * name with .key for its extension: ca.crt → ca.key, as kubeadm lays out its pki directory). Without that key
 * nothing is signed, as a controller-manager without a signing key; the server says why once at start, and
 * each approved request of these signers stays unsigned with a Warning event (reason SigningUnavailable)
 * saying so, which `kubectl describe csr` shows.
 */
import { createPrivateKey, X509Certificate, randomBytes, randomUUID, webcrypto } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import type * as X509 from '@peculiar/x509';
import { isStatusError } from '../../registry/errors.js';
import type { KObject } from '../../registry/kind.js';
import type { ParsedCSR } from '../../registry/kinds/certificates/csr.js';
import {
  CERTIFICATES_GROUP,
  csrOf,
  hasCondition,
  SIGNER_KUBE_APISERVER_CLIENT,
  SIGNER_KUBE_APISERVER_CLIENT_KUBELET,
  SIGNER_KUBELET_SERVING,
} from '../../registry/kinds/certificates/index.js';
import type { Registry } from '../../registry/registry.js';
import { loadX509, splitPemCertificates } from '../certs.js';
import { getIfExists, runController, type Controller } from './runner.js';

/** The identity the certificate controllers write as. */
export const CERTIFICATE_CONTROLLER_USER = { name: 'system:kube-controller-manager', groups: ['system:masters', 'system:authenticated'] };

export interface SigningCA {
  /** PEM of the CA certificate (the first of the file). */
  cert: string;
  /** PEM private key (RSA or ECDSA). */
  key: string;
  /** The longest validity issued, in seconds (controller-manager's --cluster-signing-duration; default a year). */
  durationSeconds?: number;
  /** How far notBefore is moved back (default 5 minutes). */
  backdateSeconds?: number;
}

const YEAR_SECONDS = 365 * 24 * 3600;

/** The signing CA beside --client-ca-file (ca.crt + ca.key), or undefined when there is no key there. */
export function signingCAFromClientCA(clientCAFile: string | undefined): SigningCA | undefined {
  const found = clusterSigningCA(clientCAFile);
  return 'problem' in found ? undefined : found;
}

/** The key file the cluster CA's private key is read from: the --client-ca-file name with .key for its extension. */
export const signingKeyFile = (clientCAFile: string): string => clientCAFile.replace(/\.(crt|pem|cert|cer)$/, '') + '.key';

/** The signing CA beside --client-ca-file, or why there is none (for the log and the CSRs' events). */
export function clusterSigningCA(clientCAFile: string | undefined): SigningCA | { problem: string } {
  const rule = 'the cluster CA is the --client-ca-file certificate with its private key beside it (ca.crt and ca.key)';
  if (!clientCAFile) return { problem: `no --client-ca-file: ${rule}` };
  const keyFile = signingKeyFile(clientCAFile);
  if (keyFile === clientCAFile) return { problem: `--client-ca-file ${clientCAFile} has no .crt, .pem, .cert or .cer extension to find its key by: ${rule}` };
  if (!existsSync(keyFile)) return { problem: `no private key ${keyFile} for --client-ca-file ${clientCAFile}: ${rule}` };
  let cert: string | undefined;
  let key: string;
  try {
    cert = splitPemCertificates(readFileSync(clientCAFile, 'utf8'))[0];
    key = readFileSync(keyFile, 'utf8');
  } catch (err) {
    return { problem: `cannot read the cluster CA: ${(err as Error).message}` };
  }
  if (!cert) return { problem: `no certificate in --client-ca-file ${clientCAFile}` };
  try {
    if (!new X509Certificate(cert).checkPrivateKey(createPrivateKey(key))) return { problem: `${keyFile} is not the private key of the first certificate of ${clientCAFile}` };
  } catch (err) {
    return { problem: `${keyFile} is not a usable private key: ${(err as Error).message}` };
  }
  return { cert, key };
}

const KEY_USAGE_BITS: Record<string, keyof typeof X509.KeyUsageFlags> = {
  signing: 'digitalSignature',
  'digital signature': 'digitalSignature',
  'content commitment': 'nonRepudiation',
  'key encipherment': 'keyEncipherment',
  'key agreement': 'keyAgreement',
  'data encipherment': 'dataEncipherment',
  'cert sign': 'keyCertSign',
  'crl sign': 'cRLSign',
  'encipher only': 'encipherOnly',
  'decipher only': 'decipherOnly',
};
const EXT_KEY_USAGES: Record<string, string> = {
  any: '2.5.29.37.0',
  'server auth': '1.3.6.1.5.5.7.3.1',
  'client auth': '1.3.6.1.5.5.7.3.2',
  'code signing': '1.3.6.1.5.5.7.3.3',
  'email protection': '1.3.6.1.5.5.7.3.4',
  's/mime': '1.3.6.1.5.5.7.3.4',
  'ipsec end system': '1.3.6.1.5.5.7.3.5',
  'ipsec tunnel': '1.3.6.1.5.5.7.3.6',
  'ipsec user': '1.3.6.1.5.5.7.3.7',
  timestamping: '1.3.6.1.5.5.7.3.8',
  'ocsp signing': '1.3.6.1.5.5.7.3.9',
  'microsoft sgc': '1.3.6.1.4.1.311.10.3.3',
  'netscape sgc': '2.16.840.1.113730.4.1',
};

const sameSet = (a: string[], b: string[]) => new Set(a).size === b.length && b.every((x) => a.includes(x));
/** Go's %v of a sorted []string. */
const goList = (l: string[]) => `[${[...l].sort().join(' ')}]`;

const KUBELET_CLIENT_USAGES = ['digital signature', 'key encipherment', 'client auth'];
const KUBELET_SERVING_USAGES = ['digital signature', 'key encipherment', 'server auth'];

/** ValidateKubeletClientCSR: '' when the request is a kubelet client certificate request, else why not. */
export function kubeletClientProblem(cr: ParsedCSR, usages: string[]): string {
  if (cr.organizations.length !== 1 || cr.organizations[0] !== 'system:nodes') return 'subject organization is not system:nodes';
  if (cr.dnsNames.length > 0) return 'DNS subjectAltNames are not allowed';
  if (cr.emailAddresses.length > 0) return 'Email subjectAltNames are not allowed';
  if (cr.ipAddresses.length > 0) return 'IP subjectAltNames are not allowed';
  if (cr.uris.length > 0) return 'URI subjectAltNames are not allowed';
  if (!cr.commonName.startsWith('system:node:')) return 'subject common name does not begin with system:node:';
  if (!sameSet(usages, KUBELET_CLIENT_USAGES) && !sameSet(usages, ['digital signature', 'client auth'])) return `usages did not match ${goList(KUBELET_CLIENT_USAGES)}`;
  return '';
}

/** ValidateKubeletServingCSR. */
export function kubeletServingProblem(cr: ParsedCSR, usages: string[]): string {
  if (cr.organizations.length !== 1 || cr.organizations[0] !== 'system:nodes') return 'subject organization is not system:nodes';
  if (cr.dnsNames.length === 0 && cr.ipAddresses.length === 0) return 'DNS or IP subjectAltName is required';
  if (cr.emailAddresses.length > 0) return 'Email subjectAltNames are not allowed';
  if (cr.uris.length > 0) return 'URI subjectAltNames are not allowed';
  if (!sameSet(usages, KUBELET_SERVING_USAGES) && !sameSet(usages, ['digital signature', 'server auth'])) return `usages did not match ${goList(KUBELET_SERVING_USAGES)}`;
  if (!cr.commonName.startsWith('system:node:')) return 'subject common name does not begin with system:node:';
  return '';
}

/** validAPIServerClientUsages. */
function apiServerClientProblem(usages: string[]): string {
  for (const u of usages) if (!['digital signature', 'key encipherment', 'client auth'].includes(u)) return `invalid usage for client certificate: ${u}`;
  return usages.includes('client auth') ? '' : 'invalid usage for client certificate: missing required usage client auth';
}

/** Whether this signer handles the signer name, and if so what it refuses in the request ('' for nothing). */
function signerProblem(signerName: string, cr: ParsedCSR, usages: string[]): string | null {
  switch (signerName) {
    case SIGNER_KUBE_APISERVER_CLIENT:
      return apiServerClientProblem(usages);
    case SIGNER_KUBE_APISERVER_CLIENT_KUBELET:
      return kubeletClientProblem(cr, usages);
    case SIGNER_KUBELET_SERVING:
      return kubeletServingProblem(cr, usages);
    default:
      return null;
  }
}

const SIGNERS = [SIGNER_KUBE_APISERVER_CLIENT, SIGNER_KUBE_APISERVER_CLIENT_KUBELET, SIGNER_KUBELET_SERVING];

function signingAlgorithm(keyPem: string): { name: string; hash: string; namedCurve?: string } {
  const k = createPrivateKey(keyPem);
  if (k.asymmetricKeyType === 'rsa') return { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' };
  if (k.asymmetricKeyType === 'ec') {
    const curve = k.asymmetricKeyDetails?.namedCurve;
    if (curve === 'secp384r1') return { name: 'ECDSA', namedCurve: 'P-384', hash: 'SHA-384' };
    if (curve === 'secp521r1') return { name: 'ECDSA', namedCurve: 'P-521', hash: 'SHA-512' };
    return { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
  }
  throw new Error(`the signing key's type ${k.asymmetricKeyType ?? 'unknown'} is not supported (RSA or ECDSA)`);
}

/** Issues the certificate of a request: PEM. */
export async function signRequest(ca: SigningCA, cr: ParsedCSR, usages: string[], expirationSeconds: number | undefined, now = Date.now()): Promise<string> {
  const x509 = await loadX509();
  const caCert = new x509.X509Certificate(ca.cert);
  const alg = signingAlgorithm(ca.key);
  const der = createPrivateKey(ca.key).export({ format: 'der', type: 'pkcs8' });
  const importAlg = alg.name === 'ECDSA' ? { name: 'ECDSA', namedCurve: alg.namedCurve! } : { name: alg.name, hash: alg.hash };
  const signingKey = await webcrypto.subtle.importKey('pkcs8', der, importAlg, false, ['sign']);
  const certTTL = ca.durationSeconds ?? YEAR_SECONDS;
  // signer.duration: the requested duration within [10 minutes, the signing duration].
  const ttl = expirationSeconds === undefined ? certTTL : Math.max(600, Math.min(expirationSeconds, certTTL));
  const backdate = (ca.backdateSeconds ?? 300) * 1000;
  const notBefore = new Date(now - backdate);
  let notAfter = new Date(ttl < 8 * 3600 ? now + ttl * 1000 : notBefore.getTime() + ttl * 1000);
  if (notAfter.getTime() > caCert.notAfter.getTime()) notAfter = caCert.notAfter;
  let bits = 0;
  for (const u of usages) {
    const flag = KEY_USAGE_BITS[u];
    if (flag) bits |= x509.KeyUsageFlags[flag];
  }
  const ext = [...new Set(usages.map((u) => EXT_KEY_USAGES[u]).filter((o): o is string => o !== undefined))];
  const names: X509.JsonGeneralName[] = [
    ...cr.dnsNames.map((value) => ({ type: 'dns' as const, value })),
    ...cr.ipAddresses.map((value) => ({ type: 'ip' as const, value })),
    ...cr.emailAddresses.map((value) => ({ type: 'email' as const, value })),
    ...cr.uris.map((value) => ({ type: 'url' as const, value })),
  ];
  const extensions: X509.Extension[] = [new x509.BasicConstraintsExtension(false, undefined, true)];
  if (bits !== 0) extensions.push(new x509.KeyUsagesExtension(bits, true));
  if (ext.length > 0) extensions.push(new x509.ExtendedKeyUsageExtension(ext));
  if (names.length > 0) extensions.push(new x509.SubjectAlternativeNameExtension(names));
  extensions.push(await x509.AuthorityKeyIdentifierExtension.create(caCert.publicKey));
  const serial = randomBytes(16);
  serial[0] = (serial[0]! & 0x7f) | 0x01;
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serial.toString('hex'),
    subject: new x509.Name(cr.subjectDER),
    issuer: caCert.subject,
    notBefore,
    notAfter,
    publicKey: cr.spki,
    signingKey,
    signingAlgorithm: alg,
    extensions,
  });
  return cert.toString('pem') + '\n';
}

const wantsSigning = (csr: KObject): boolean =>
  SIGNERS.includes(csr['spec']?.signerName) &&
  hasCondition(csr, 'Approved') &&
  !hasCondition(csr, 'Failed') &&
  !(typeof csr['status']?.certificate === 'string' && csr['status'].certificate !== '');

export function startCsrSigningController(registry: Registry, ca: SigningCA, log?: (m: string) => void): Controller {
  const csrs = registry.store(CERTIFICATES_GROUP, 'v1', 'certificatesigningrequests')!;
  const scope = { namespace: '', user: CERTIFICATE_CONTROLLER_USER };
  return runController({
    name: 'csrsigning controller',
    store: csrs,
    wants: wantsSigning,
    async sync(_namespace, name) {
      const csr = await getIfExists(csrs, scope, name);
      if (!csr || !wantsSigning(csr)) return null;
      const usages: string[] = Array.isArray(csr['spec']?.usages) ? csr['spec'].usages : [];
      const cr = csrOf(csr);
      const problem = signerProblem(csr['spec'].signerName, cr, usages);
      if (problem === null) return null;
      let update: (cur: KObject) => KObject;
      if (problem !== '') {
        update = (cur) => {
          const next = structuredClone(cur);
          const status = (next['status'] ??= {});
          (status.conditions ??= []).push({ type: 'Failed', status: 'True', reason: 'SignerValidationFailure', message: problem });
          return next;
        };
      } else {
        const pem = await signRequest(ca, cr, usages, csr['spec']?.expirationSeconds);
        update = (cur) => {
          const next = structuredClone(cur);
          (next['status'] ??= {}).certificate = Buffer.from(pem).toString('base64');
          return next;
        };
      }
      try {
        await csrs.update(scope, name, (cur) => {
          if (!cur || !wantsSigning(cur)) throw new SkipUpdate();
          return update(cur);
        }, { subresource: 'status' });
      } catch (err) {
        if (err instanceof SkipUpdate || isStatusError(err, 'NotFound')) return null;
        if (isStatusError(err, 'Conflict')) return 100;
        throw err;
      }
      return null;
    },
    ...(log ? { log } : {}),
  });
}

/**
 * Without a signing CA: each approved request of the three signers stays unsigned and gets one Warning event
 * (in `default`, as events about cluster-scoped objects are) saying why; the reason is logged at start.
 */
export function startCsrSigningUnavailable(registry: Registry, problem: string, log?: (m: string) => void): Controller {
  const csrs = registry.store(CERTIFICATES_GROUP, 'v1', 'certificatesigningrequests')!;
  const events = registry.store('', 'v1', 'events');
  log?.(`csrsigning controller: not signing kubernetes.io/kube-apiserver-client, kube-apiserver-client-kubelet and kubelet-serving requests: ${problem}`);
  const told = new Set<string>();
  const message = `Not signed: ${problem}`;
  return runController({
    name: 'csrsigning controller',
    store: csrs,
    wants: (csr) => wantsSigning(csr) && !told.has(csr.metadata?.uid ?? ''),
    async sync(_namespace, name) {
      const csr = await getIfExists(csrs, { namespace: '', user: CERTIFICATE_CONTROLLER_USER }, name);
      const uid = csr?.metadata?.uid ?? '';
      if (!csr || !wantsSigning(csr) || told.has(uid) || !events) return null;
      const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
      await events.create(
        { namespace: 'default', user: CERTIFICATE_CONTROLLER_USER },
        {
          apiVersion: 'v1',
          kind: 'Event',
          metadata: { name: `${name}.${randomUUID().replace(/-/g, '').slice(0, 16)}`, namespace: 'default' },
          involvedObject: { kind: 'CertificateSigningRequest', apiVersion: 'certificates.k8s.io/v1', name, uid, resourceVersion: csr.metadata?.resourceVersion ?? '' },
          reason: 'SigningUnavailable',
          message,
          source: { component: 'csrsigning-controller' },
          firstTimestamp: now,
          lastTimestamp: now,
          count: 1,
          type: 'Warning',
        },
      );
      told.add(uid);
      return null;
    },
    ...(log ? { log } : {}),
  });
}

/** Thrown inside an update when the object no longer needs it. */
export class SkipUpdate extends Error {}
