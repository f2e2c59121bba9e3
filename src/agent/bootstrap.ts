// TLS bootstrapping (kubelet's pkg/kubelet/certificate/bootstrap LoadClientCert): with
// --bootstrap-orchconfig, when the --orchconfig file is missing or its client certificate is not valid,
// the agent
//   1. takes the key of a request it started before (<cert-dir>/orchlet-client.key.tmp) or makes one;
//   2. asks for a client certificate for system:node:<node name> in group system:nodes from the
//      kubernetes.io/kube-apiserver-client-kubelet signer, with the bootstrap credentials, in a CSR whose
//      name is fixed by the key and subject (node-csr-...), so a restart finds it again;
//   3. waits until the request is approved (by the server's csrapproving controller for a bootstrap group
//      allowed certificatesigningrequests/nodeclient, or by hand) and issued;
//   4. stores the pair as <cert-dir>/orchlet-client-<time>.pem with orchlet-client-current.pem pointing to
//      it (kubelet-client-current.pem for kubelet), and writes the --orchconfig file: the bootstrap file's
//      cluster, and a user whose client-certificate and client-key are that current file.
import { createPublicKey } from 'node:crypto';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { stringify } from 'yaml';
import { ApiClient } from './client/client.js';
import { loadKubeconfig, type ClientConfig } from './client/kubeconfig.js';
import { CertificateStore, CLIENT_USAGES, digestedName, pairValid, requestCertificate, SIGNER_CLIENT_KUBELET } from './certificate-manager.js';
import { makeKeyAndCSR } from './certificate-request.js';

export const CLIENT_PREFIX = 'orchlet-client';

export interface BootstrapOptions {
  orchconfig: string;
  bootstrapOrchconfig: string;
  certDir: string;
  nodeName: string;
  log: (level: 'info' | 'error', message: string) => void;
  /** Gives up after this long (kubelet waits an hour); default an hour. */
  timeoutMs?: number;
  /** --orch-api-content-type: the CSR goes out (and its answers come back) in it; JSON when unset. */
  contentType?: string;
}

/** Whether the kubeconfig loads and its client certificate (if any) is valid now. */
async function stillValid(path: string): Promise<boolean> {
  let cfg: ClientConfig;
  try {
    cfg = await loadKubeconfig(path);
  } catch {
    return false;
  }
  if (cfg.cert === undefined || cfg.key === undefined) return true; // other credentials: nothing to renew
  return pairValid({ cert: cfg.cert, key: cfg.key });
}

/** The client store of the cert dir (shared with the rotating manager). */
export function clientStore(certDir: string): CertificateStore {
  return new CertificateStore(resolve(certDir), CLIENT_PREFIX);
}

/** Writes the --orchconfig for the issued client pair (kubelet's writeKubeconfigFromBootstrapping). */
async function writeOrchconfig(path: string, bootstrap: ClientConfig, pemFile: string): Promise<void> {
  const cluster: Record<string, unknown> = { server: bootstrap.server };
  if (bootstrap.ca !== undefined) cluster['certificate-authority-data'] = Buffer.from(bootstrap.ca).toString('base64');
  if (bootstrap.insecureSkipTLSVerify) cluster['insecure-skip-tls-verify'] = true;
  if (bootstrap.tlsServerName !== undefined) cluster['tls-server-name'] = bootstrap.tlsServerName;
  const doc = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'default-cluster', cluster }],
    contexts: [{ name: 'default-context', context: { cluster: 'default-cluster', namespace: 'default', user: 'default-auth' } }],
    'current-context': 'default-context',
    preferences: {},
    users: [{ name: 'default-auth', user: { 'client-certificate': pemFile, 'client-key': pemFile } }],
  };
  await mkdir(dirname(resolve(path)), { recursive: true });
  await writeFile(path, stringify(doc), { mode: 0o600 });
}

/**
 * LoadClientCert: makes sure `orchconfig` holds a valid client certificate, bootstrapping one with the
 * bootstrap kubeconfig when it does not. Resolves once the file is good.
 */
export async function bootstrapClientCert(o: BootstrapOptions): Promise<void> {
  if (await stillValid(o.orchconfig)) {
    o.log('info', `--orchconfig ${o.orchconfig} is valid: no bootstrap needed`);
    return;
  }
  const bootstrap = await loadKubeconfig(o.bootstrapOrchconfig);
  const store = clientStore(o.certDir);
  const existing = await store.current();
  if (existing && pairValid(existing)) {
    // A certificate was issued before but the kubeconfig is missing or stale: write it again.
    o.log('info', `using the client certificate in ${store.currentPath}`);
    await writeOrchconfig(o.orchconfig, bootstrap, store.currentPath);
    return;
  }
  await mkdir(store.dir, { recursive: true, mode: 0o700 });
  const keyTmp = join(store.dir, `${CLIENT_PREFIX}.key.tmp`);
  let keyPem: string | undefined;
  try {
    keyPem = await readFile(keyTmp, 'utf8');
  } catch {
    keyPem = undefined;
  }
  if (keyPem === undefined) {
    keyPem = (await makeKeyAndCSR({ commonName: `system:node:${o.nodeName}` })).keyPem;
    await writeFile(keyTmp, keyPem, { mode: 0o600 });
  }
  const subject = { commonName: `system:node:${o.nodeName}`, organizations: ['system:nodes'] };
  const spki = createPublicKey(keyPem).export({ format: 'der', type: 'spki' });
  const name = digestedName(spki, subject, CLIENT_USAGES);
  o.log('info', `bootstrapping: requesting a client certificate for ${subject.commonName} (certificatesigningrequest ${name})`);
  const client = new ApiClient(o.contentType ? { ...bootstrap, contentType: o.contentType } : bootstrap, { userAgent: 'orchlet-bootstrap', qps: 0, burst: 0 });
  try {
    const pair = await requestCertificate({
      client,
      subject,
      signerName: SIGNER_CLIENT_KUBELET,
      usages: CLIENT_USAGES,
      name,
      keyPem,
      timeoutMs: o.timeoutMs ?? 3600_000,
    });
    const file = await store.update(pair);
    await rm(keyTmp, { force: true });
    await writeOrchconfig(o.orchconfig, bootstrap, store.currentPath);
    o.log('info', `bootstrapping: client certificate issued (${file}); wrote ${o.orchconfig}`);
  } finally {
    client.close();
  }
}
