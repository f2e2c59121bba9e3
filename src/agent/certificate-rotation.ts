// The agent's certificate managers (kubelet's --rotate-certificates and --rotate-server-certificates):
//   - client: renews the client certificate of the orchconfig (kept in <cert-dir>/orchlet-client-current.pem,
//     which the orchconfig written by bootstrapping points to); each new pair goes to the API client, whose
//     new connections present it (open ones are closed, as kubelet closes its connections on rotation);
//   - server (with the RotateKubeletServerCertificate gate): a serving certificate for the node's host name
//     and IPs from the kubernetes.io/kubelet-serving signer, kept in <cert-dir>/orchlet-server-current.pem;
//     the agent's HTTPS server takes each new pair for new connections. Until the first is issued the server
//     keeps the pair it started with (--tls-cert-file or the self-signed one). Kubernetes never approves
//     serving requests by itself: an administrator (or a controller of theirs) approves them.
import { resolve } from 'node:path';
import type { ApiClient } from './client/client.js';
import { CertificateManager, CertificateStore, CLIENT_USAGES, leafOf, pairValid, SERVING_USAGES, SIGNER_CLIENT_KUBELET, SIGNER_KUBELET_SERVING, type CertPair } from './certificate-manager.js';
import { CLIENT_PREFIX } from './bootstrap.js';

export const SERVER_PREFIX = 'orchlet-server';

export interface CertificateRotationConfig {
  certDir: string;
  /** --rotate-certificates. */
  rotateClient: boolean;
  /** --rotate-server-certificates (with the RotateKubeletServerCertificate gate). */
  rotateServer: boolean;
  /** With --bootstrap-orchconfig: what to do 5 minutes after the client certificate expired unrenewed (orchlet exits, to bootstrap again). */
  onClientExpired?: () => void;
}

export interface RotationHost {
  nodeName: string;
  /** The names and IPs the serving certificate covers. */
  hosts(): string[];
  client(): ApiClient;
  setServingPair?(p: CertPair): void;
  log: (level: 'info' | 'error', message: string) => void;
}

export interface CertificateRotation {
  client?: CertificateManager;
  server?: CertificateManager;
  stop(): void;
}

export async function startCertificateRotation(cfg: CertificateRotationConfig, host: RotationHost): Promise<CertificateRotation> {
  const dir = resolve(cfg.certDir);
  const subject = { commonName: `system:node:${host.nodeName}`, organizations: ['system:nodes'] };
  const out: CertificateRotation = {
    stop() {
      out.client?.stop();
      out.server?.stop();
    },
  };
  if (cfg.rotateClient) {
    const store = new CertificateStore(dir, CLIENT_PREFIX);
    const current = await store.current();
    const cert = host.client().config.cert;
    // Only a client certificate that lives in the store is renewed (kubelet: the orchconfig of bootstrapping);
    // an orchconfig with its own certificate or a token has nothing here to rotate.
    if (current && cert !== undefined && leafOf(current.cert)?.fingerprint256 === leafOf(cert)?.fingerprint256) {
      out.client = new CertificateManager({
        name: 'client certificate',
        store,
        client: () => host.client(),
        subject: () => subject,
        signerName: SIGNER_CLIENT_KUBELET,
        usages: CLIENT_USAGES,
        onRotate: (p) => host.client().setClientCertificate(p.cert, p.key),
        ...(cfg.onClientExpired ? { onExpired: { afterMs: 5 * 60_000, call: cfg.onClientExpired } } : {}),
        log: host.log,
      });
      await out.client.start();
    } else {
      host.log('info', `--rotate-certificates: the orchconfig's credentials are not the certificate of ${store.currentPath}; not rotating them`);
    }
  }
  if (cfg.rotateServer && host.setServingPair) {
    const store = new CertificateStore(dir, SERVER_PREFIX);
    const setServing = host.setServingPair.bind(host);
    out.server = new CertificateManager({
      name: 'serving certificate',
      store,
      client: () => host.client(),
      subject: () => ({ ...subject, hosts: host.hosts() }),
      signerName: SIGNER_KUBELET_SERVING,
      usages: SERVING_USAGES,
      onRotate: setServing,
      log: host.log,
    });
    await out.server.start();
    if (out.server.current && pairValid(out.server.current)) setServing(out.server.current);
  }
  return out;
}
