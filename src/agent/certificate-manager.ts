// The agent's certificates from the cluster (kubelet's pkg/kubelet/certificate and client-go's
// util/certificate): a file store in --cert-dir and a manager that requests a certificate through a
// CertificateSigningRequest and renews it as it ages.
//
// Store (client-go's fileStore): each issued pair is one PEM file `<prefix>-<YYYY-MM-DD-HH-MM-SS>.pem`
// (certificate, then key) and `<prefix>-current.pem` is a symlink to the newest; orchlet's prefixes are
// orchlet-client (kubelet-client) and orchlet-server (kubelet-server).
//
// Manager: the deadline to renew is notBefore + 70–84% of the certificate's lifetime (wait.Jitter(0.7,
// 0.2), as kubelet's nextRotationDeadline); there it makes a new key and a CSR for the same subject to
// its signer (generateName csr-), waits for the server to approve and issue it (a denied or failed request
// is an error, retried with back-off), stores the pair and hands it to `onRotate`. Without a valid
// certificate it requests one at once.
import { X509Certificate, createHash, createPrivateKey } from 'node:crypto';
import { mkdir, readFile, readlink, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { isAlreadyExists, type ApiClient, type Json } from './client/client.js';
import { makeKeyAndCSR, type CSRSubject } from './certificate-request.js';

export const CSR_PATH = '/apis/certificates.k8s.io/v1/certificatesigningrequests';
export const SIGNER_CLIENT_KUBELET = 'kubernetes.io/kube-apiserver-client-kubelet';
export const SIGNER_KUBELET_SERVING = 'kubernetes.io/kubelet-serving';
export const CLIENT_USAGES = ['digital signature', 'key encipherment', 'client auth'];
export const SERVING_USAGES = ['digital signature', 'key encipherment', 'server auth'];

export interface CertPair {
  cert: string;
  key: string;
}

/** The first certificate of a PEM bundle, parsed; undefined when there is none or it does not parse. */
export function leafOf(pem: string): X509Certificate | undefined {
  const first = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/.exec(pem);
  if (!first) return undefined;
  try {
    return new X509Certificate(first[0]);
  } catch {
    return undefined;
  }
}

/** Whether the pair's certificate is valid now and matches its key. */
export function pairValid(p: CertPair, now = Date.now()): boolean {
  const leaf = leafOf(p.cert);
  if (!leaf) return false;
  if (Date.parse(leaf.validFrom) > now || Date.parse(leaf.validTo) <= now) return false;
  try {
    return leaf.checkPrivateKey(createPrivateKey(p.key));
  } catch {
    return false;
  }
}

/** The certificate and key blocks of one PEM file. */
export function splitPair(pem: string): CertPair {
  const certs = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----\n?/g) ?? [];
  const key = /-----BEGIN ([A-Z ]*)PRIVATE KEY-----[\s\S]+?-----END \1PRIVATE KEY-----\n?/.exec(pem);
  return { cert: certs.join(''), key: key ? key[0] : '' };
}

/** A string field of a decoded object ('' when absent or not a string). */
const str = (v: unknown): string => (typeof v === 'string' ? v : '');

const stamp = (d: Date) => d.toISOString().slice(0, 19).replace(/[T:]/g, '-');

/** client-go's fileStore: `<dir>/<prefix>-current.pem` → the newest `<prefix>-<time>.pem`. */
export class CertificateStore {
  constructor(
    readonly dir: string,
    readonly prefix: string,
  ) {}

  get currentPath(): string {
    return join(this.dir, `${this.prefix}-current.pem`);
  }

  async current(): Promise<CertPair | undefined> {
    try {
      const p = splitPair(await readFile(this.currentPath, 'utf8'));
      return p.cert !== '' && p.key !== '' ? p : undefined;
    } catch {
      return undefined;
    }
  }

  /** Writes a new pair file and points `-current` at it (atomically, by renaming a new symlink over it). */
  async update(p: CertPair): Promise<string> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    const name = `${this.prefix}-${stamp(new Date())}.pem`;
    const file = join(this.dir, name);
    await writeFile(file, ensureNL(p.cert) + ensureNL(p.key), { mode: 0o600 });
    const tmp = `${this.currentPath}.tmp`;
    await rm(tmp, { force: true });
    await symlink(name, tmp);
    await rename(tmp, this.currentPath);
    return file;
  }

  /** The file `-current` points to (for tests and logs). */
  async currentTarget(): Promise<string | undefined> {
    try {
      return await readlink(this.currentPath);
    } catch {
      return undefined;
    }
  }
}

const ensureNL = (s: string) => (s.endsWith('\n') ? s : s + '\n');
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export interface RequestOptions {
  client: ApiClient;
  subject: CSRSubject;
  signerName: string;
  usages: string[];
  /** A fixed name (bootstrap's digested name); default generateName csr-. */
  name?: string;
  /** A key to reuse (bootstrap keeps its key across restarts); default a new one. */
  keyPem?: string;
  /** Gives up after this long (default: never). */
  timeoutMs?: number;
  /** Stops waiting when it returns true. */
  stopped?: () => boolean;
  pollMs?: number;
}

/** kubelet's digestedName: a name fixed by the key, the subject and the usages, so a restart finds its request. */
export function digestedName(spki: Buffer, subject: CSRSubject, usages: string[]): string {
  const h = createHash('sha512');
  const field = (s: string) => h.update(`${s.length}:${s}`);
  h.update(spki);
  field(subject.commonName);
  for (const o of subject.organizations ?? []) field(o);
  for (const u of usages) field(u);
  return `node-csr-${h.digest('base64url')}`;
}

/** Creates a CSR (or finds the one of the same name) and waits until it is issued; the issued pair. */
export async function requestCertificate(o: RequestOptions): Promise<CertPair> {
  const { keyPem, csrPem } = await makeKeyAndCSR(o.subject, o.keyPem);
  const name = o.name;
  const body: Json = {
    apiVersion: 'certificates.k8s.io/v1',
    kind: 'CertificateSigningRequest',
    metadata: name !== undefined ? { name } : { generateName: 'csr-' },
    spec: { request: Buffer.from(csrPem).toString('base64'), signerName: o.signerName, usages: o.usages },
  };
  let created: Json;
  try {
    created = await o.client.create(CSR_PATH, body);
  } catch (err) {
    if (name === undefined || !isAlreadyExists(err)) throw err;
    created = await o.client.get(`${CSR_PATH}/${encodeURIComponent(name)}`);
    const existing = Buffer.from(str((created['spec'] as Json | undefined)?.['request']), 'base64').toString('utf8');
    if (existing.trim() !== csrPem.trim()) throw new Error(`certificate signing request ${name} exists with another request`, { cause: err });
  }
  const csrName = String((created['metadata'] as Json)['name']);
  const deadline = o.timeoutMs !== undefined ? Date.now() + o.timeoutMs : Infinity;
  for (let csr = created; ; ) {
    const status = (csr['status'] ?? {}) as Json;
    const conditions = (Array.isArray(status['conditions']) ? status['conditions'] : []) as Json[];
    for (const c of conditions) {
      if (c['type'] === 'Denied') throw new Error(`certificate signing request ${csrName} was denied, reason: ${str(c['reason'])}, message: ${str(c['message'])}`);
      if (c['type'] === 'Failed') throw new Error(`certificate signing request ${csrName} failed, reason: ${str(c['reason'])}, message: ${str(c['message'])}`);
    }
    if (typeof status['certificate'] === 'string' && status['certificate'] !== '' && conditions.some((c) => c['type'] === 'Approved')) {
      return { cert: Buffer.from(status['certificate'], 'base64').toString('utf8'), key: keyPem };
    }
    if (o.stopped?.()) throw new Error(`stopped waiting for certificate signing request ${csrName}`);
    if (Date.now() > deadline) throw new Error(`timed out waiting for certificate signing request ${csrName} to be approved and issued`);
    await sleep(o.pollMs ?? 500);
    csr = await o.client.get(`${CSR_PATH}/${encodeURIComponent(csrName)}`);
  }
}

/** kubelet's nextRotationDeadline: notBefore + 70–84% of the lifetime. */
export function rotationDeadline(cert: X509Certificate, random = Math.random()): number {
  const from = Date.parse(cert.validFrom);
  const total = Date.parse(cert.validTo) - from;
  return from + total * 0.7 * (1 + 0.2 * random);
}

export interface ManagerOptions {
  name: string;
  store: CertificateStore;
  /** The client the CSRs are sent with (the agent's own client). */
  client: () => ApiClient;
  subject: () => CSRSubject;
  signerName: string;
  usages: string[];
  onRotate(p: CertPair): void;
  /**
   * Called when renewing keeps failing this long after the certificate expired (kubelet's exitAfter: with a
   * bootstrap file, kubelet exits after 5 minutes without a valid client certificate, so that a restart
   * bootstraps again).
   */
  onExpired?: { afterMs: number; call(): void };
  log: (level: 'info' | 'error', message: string) => void;
}

/** Keeps one certificate fresh: renews at the rotation deadline, and at once when there is none valid. */
export class CertificateManager {
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private failures = 0;
  current: CertPair | undefined;

  constructor(private readonly o: ManagerOptions) {}

  async start(): Promise<void> {
    // An expired pair stays current (renewed at once: its deadline is past) until a new one comes.
    const p = await this.o.store.current();
    if (p && leafOf(p.cert)) this.current = p;
    this.schedule();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private schedule(): void {
    if (this.stopped) return;
    const leaf = this.current ? leafOf(this.current.cert) : undefined;
    const at = leaf ? rotationDeadline(leaf) : Date.now();
    const backoff = this.failures > 0 ? Math.min(5 * 60_000, 1000 * 2 ** Math.min(this.failures, 8)) : 0;
    const delay = Math.max(backoff, at - Date.now());
    this.timer = setTimeout(() => void this.rotate(), Math.min(delay, 2 ** 31 - 1));
    this.timer.unref();
  }

  private async rotate(): Promise<void> {
    if (this.stopped) return;
    try {
      this.o.log('info', `${this.o.name}: requesting a new certificate from ${this.o.signerName}`);
      const pair = await requestCertificate({
        client: this.o.client(),
        subject: this.o.subject(),
        signerName: this.o.signerName,
        usages: this.o.usages,
        stopped: () => this.stopped,
      });
      const file = await this.o.store.update(pair);
      this.current = pair;
      this.failures = 0;
      this.o.onRotate(pair);
      const leaf = leafOf(pair.cert);
      this.o.log('info', `${this.o.name}: certificate rotated (${file}), valid until ${leaf?.validTo ?? '?'}`);
    } catch (err) {
      if (this.stopped) return;
      this.failures++;
      this.o.log('error', `${this.o.name}: certificate rotation failed: ${err instanceof Error ? err.message : String(err)}`);
      const leaf = this.current ? leafOf(this.current.cert) : undefined;
      const expired = leaf ? Date.parse(leaf.validTo) : undefined;
      if (this.o.onExpired && expired !== undefined && Date.now() - expired > this.o.onExpired.afterMs) {
        this.o.log('error', `${this.o.name}: no valid certificate for ${Math.round((Date.now() - expired) / 1000)}s`);
        this.o.onExpired.call();
      }
    }
    this.schedule();
  }
}
