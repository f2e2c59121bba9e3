/**
 * The webhook backend (--audit-webhook-config-file): batches POSTed as an audit.k8s.io EventList to the
 * server of a kubeconfig-format file (its current context: cluster server, certificate authority, client
 * certificate or token), retried with exponential backoff from --audit-webhook-initial-backoff (factor 1.5,
 * jitter 0.2) on errors Kubernetes deems transient: connection failures, 500, 504, 429, or any answer with a
 * Retry-After header. Other answers fail the batch at once (errors of plugin 'webhook').
 *
 * Blocking modes try 5 times, as Kubernetes' generic webhook. In batch mode a batch is retried for as long
 * as the server runs, so a webhook that is down and comes back receives every event the buffer kept (the
 * buffer, not memory, bounds what waits); after shutdown begins, retries stop at the flush deadline.
 */
import { readFileSync } from 'node:fs';
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { dirname, isAbsolute, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { outgoingTraceparent } from '../../util/tracecontext.js';
import { dialOptions, type Dialer } from '../../util/dial.js';
import { yaml } from '../../util/yaml.js';
import { handlePluginError, type Backend, type PluginContext } from './backend.js';
import { eventListJSON } from './encode.js';
import type { AuditEvent, EventVersion } from './types.js';

export interface WebhookTarget {
  url: URL;
  ca?: string | Buffer;
  cert?: string | Buffer;
  key?: string | Buffer;
  insecureSkipTLSVerify?: boolean;
  servername?: string;
  token?: string;
  basicAuth?: string;
  /** The egress (--egress-selector-config-file) calls go through; absent: direct. */
  dial?: Dialer;
}

type Doc = Record<string, unknown>;

function named(list: unknown, name: string, what: string, file: string): Doc {
  const found = Array.isArray(list) ? (list as Doc[]).find((e) => e?.name === name) : undefined;
  if (!found) throw new Error(`${file}: ${what} "${name}" not found`);
  return (found[what] ?? {}) as Doc;
}

function fileOrData(base: string, doc: Doc, fileKey: string, dataKey: string): Buffer | undefined {
  const data = doc[dataKey];
  if (typeof data === 'string' && data !== '') return Buffer.from(data, 'base64');
  const file = doc[fileKey];
  if (typeof file === 'string' && file !== '') return readFileSync(isAbsolute(file) ? file : join(base, file));
  return undefined;
}

/** Reads a kubeconfig-format webhook configuration; errors name the file. */
export function loadWebhookConfig(path: string): WebhookTarget {
  let doc: Doc;
  try {
    doc = yaml().parse(readFileSync(path, 'utf8')) as Doc;
    if (doc === null || typeof doc !== 'object') throw new Error('not a kubeconfig');
  } catch (e) {
    throw new Error(`initializing audit webhook: ${path}: ${(e as Error).message}`, { cause: e });
  }
  try {
    const base = dirname(path);
    const contexts = Array.isArray(doc.contexts) ? (doc.contexts as Doc[]) : [];
    const str = (v: unknown): string => (typeof v === 'string' ? v : '');
    let current = str(doc['current-context']);
    if (current === '' && contexts.length === 1) current = str(contexts[0]?.name);
    if (current === '') throw new Error('invalid configuration: no current-context');
    const context = named(doc.contexts, current, 'context', path);
    const cluster = named(doc.clusters, str(context.cluster), 'cluster', path);
    const user = str(context.user) !== '' ? named(doc.users, str(context.user), 'user', path) : {};
    if (typeof cluster.server !== 'string' || cluster.server === '') throw new Error('invalid configuration: no server found for cluster');
    const url = new URL(cluster.server);
    const target: WebhookTarget = { url };
    const ca = fileOrData(base, cluster, 'certificate-authority', 'certificate-authority-data');
    if (ca) target.ca = ca;
    if (cluster['insecure-skip-tls-verify'] === true) target.insecureSkipTLSVerify = true;
    if (typeof cluster['tls-server-name'] === 'string') target.servername = cluster['tls-server-name'];
    const cert = fileOrData(base, user, 'client-certificate', 'client-certificate-data');
    const key = fileOrData(base, user, 'client-key', 'client-key-data');
    if (cert) target.cert = cert;
    if (key) target.key = key;
    if (typeof user.token === 'string' && user.token !== '') target.token = user.token;
    else if (typeof user.tokenFile === 'string') target.token = readFileSync(user.tokenFile, 'utf8').trim();
    if (typeof user.username === 'string' && typeof user.password === 'string') {
      target.basicAuth = Buffer.from(`${user.username}:${user.password}`).toString('base64');
    }
    return target;
  } catch (e) {
    throw new Error(`initializing audit webhook: ${(e as Error).message}`, { cause: e });
  }
}

export interface WebhookOptions {
  version: EventVersion;
  initialBackoffMs: number;
  /** Batch mode: retry transient failures until shutdown; otherwise at most 5 attempts. */
  persistent: boolean;
  /** How long retries may go on once shutdown begins; default 30 s. */
  flushTimeoutMs?: number;
  /** Per request; default 30 s. */
  requestTimeoutMs?: number;
}

class WebhookError extends Error {
  constructor(
    message: string,
    readonly retriable: boolean,
  ) {
    super(message);
  }
}

const BACKOFF_FACTOR = 1.5;
const BACKOFF_JITTER = 0.2;
const BLOCKING_ATTEMPTS = 5;
const MAX_BACKOFF_MS = 5 * 60 * 1000;
const RETRIABLE_CODES = new Set([500, 504, 429]);

export class WebhookBackend implements Backend {
  readonly name = 'webhook';
  private readonly agent: HttpAgent;
  private deadline = Infinity;
  private readonly inFlight = new Set<Promise<boolean>>();

  constructor(
    private readonly target: WebhookTarget,
    private readonly options: WebhookOptions,
    private readonly ctx: PluginContext,
  ) {
    const tls = target.url.protocol === 'https:';
    this.agent = tls
      ? new HttpsAgent({
          keepAlive: true,
          ...(target.ca ? { ca: target.ca } : {}),
          ...(target.cert ? { cert: target.cert } : {}),
          ...(target.key ? { key: target.key } : {}),
          ...(target.servername ? { servername: target.servername } : {}),
          rejectUnauthorized: !target.insecureSkipTLSVerify,
        })
      : new HttpAgent({ keepAlive: true });
  }

  /** The target's TLS options, for a call through the egress dialer (which makes no agent). */
  private tlsOptions(): Record<string, unknown> {
    const t = this.target;
    return {
      ...(t.ca ? { ca: t.ca } : {}),
      ...(t.cert ? { cert: t.cert } : {}),
      ...(t.key ? { key: t.key } : {}),
      ...(t.servername ? { servername: t.servername } : {}),
      rejectUnauthorized: !t.insecureSkipTLSVerify,
    };
  }

  processEvents(events: readonly AuditEvent[]): Promise<boolean> {
    const p = this.send(events).then(
      () => true,
      (e: unknown) => {
        handlePluginError(this.ctx, 'webhook', e, events);
        return false;
      },
    );
    this.inFlight.add(p);
    void p.finally(() => this.inFlight.delete(p));
    return p;
  }

  private async send(events: readonly AuditEvent[]): Promise<void> {
    const body = eventListJSON(events, this.options.version);
    let delay = this.options.initialBackoffMs;
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.post(body);
      } catch (e) {
        if (!(e instanceof WebhookError) || !e.retriable) throw e;
        const last = !this.options.persistent && attempt >= BLOCKING_ATTEMPTS;
        const wait = delay * (1 + Math.random() * BACKOFF_JITTER);
        if (last || Date.now() + wait > this.deadline) throw e;
        await sleep(wait);
        delay = Math.min(delay * BACKOFF_FACTOR, Math.max(MAX_BACKOFF_MS, this.options.initialBackoffMs));
      }
    }
  }

  private post(body: string): Promise<void> {
    const { url } = this.target;
    const headers: Record<string, string | number> = {
      'Content-Type': 'application/json',
      Accept: 'application/json, */*',
      'Content-Length': Buffer.byteLength(body),
      'User-Agent': 'orch-apiserver',
    };
    if (this.target.token) headers.Authorization = `Bearer ${this.target.token}`;
    else if (this.target.basicAuth) headers.Authorization = `Basic ${this.target.basicAuth}`;
    // Blocking mode runs in the request's span; batches are sent outside any request.
    const traceparent = outgoingTraceparent();
    if (traceparent) headers['traceparent'] = traceparent;
    const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise((resolve, reject) => {
      const via = this.target.dial ? { ...dialOptions(this.target.dial, url.protocol === 'https:'), ...this.tlsOptions() } : { agent: this.agent };
      const req = request(url, { method: 'POST', headers, ...via, timeout: this.options.requestTimeoutMs ?? 30_000 }, (res: IncomingMessage) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          if (text.length < 4096) text += c;
        });
        res.on('error', (e) => reject(new WebhookError(e.message, true)));
        res.on('end', () => {
          const code = res.statusCode ?? 0;
          if (code >= 200 && code < 300) return resolve();
          const retriable = RETRIABLE_CODES.has(code) || res.headers['retry-after'] !== undefined;
          reject(new WebhookError(`the server responded with ${code}: ${text.trim().slice(0, 200)}`, retriable));
        });
      });
      req.on('timeout', () => req.destroy(new Error('request timed out')));
      req.on('error', (e) => reject(new WebhookError(e.message, true)));
      req.end(body);
    });
  }

  beginShutdown(): void {
    this.deadline = Math.min(this.deadline, Date.now() + (this.options.flushTimeoutMs ?? 30_000));
  }

  async shutdown(): Promise<void> {
    this.beginShutdown();
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
    this.agent.destroy();
  }
}
