// The agent's servers (kubelet's pkg/kubelet/server): the main HTTPS server on --address:--port,
// the unauthenticated read-only HTTP server on --read-only-port, and the health server on
// --healthz-bind-address:--healthz-port. Handlers:
//   all three    /healthz
//   main, r/o    /pods (PodList of the pods the agent runs), /stats/summary, /metrics (client/metrics.ts)
//   main only    with --enable-debugging-handlers: /containerLogs/{ns}/{pod}/{container}, /runningpods/,
//                /exec/, /attach/ and /portForward/ (streaming.ts: upgraded connections), /debug/pprof/
//                (util/profiling.ts; /debug/pprof/block with --contention-profiling);
//                always: /manifests (the agent's manifest endpoint, see the README)
// Authentication and authorization on the main server: auth.ts (client certificates of --client-ca-file,
// bearer tokens by TokenReview, anonymous; AlwaysAllow or Webhook by SubjectAccessReview).
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type { SecureVersion } from 'node:tls';
import type { Pod } from '../types.js';
import type { Json } from '../client/client.js';
import { streamLog, type LogOptions } from './logs.js';
import type { Runtime } from '../runtime/runtime.js';
import { isStreamingPath, refuseUpgrade, serveStreamingRequest, serveStreamingUpgrade } from './streaming.js';
import { AgentAuth, type AgentAuthOptions } from './auth.js';
import { installProfiling } from '../../util/profiling.js';
import type { ApiClient } from '../client/client.js';

export interface LogTarget {
  path: string;
  running: () => Promise<boolean>;
}

export interface ManifestStore {
  list(): Json;
  /** Stores a submitted manifest; resolves with whether it was new, rejects with a message for a bad one. */
  put(name: string, text: string): Promise<{ created: boolean }>;
  delete(name: string): Promise<boolean>;
}

/** What the servers ask of the agent. */
export interface ServerHost {
  /** Every pod the agent runs, with its latest status. */
  pods(): Pod[];
  /** The pod named `name` in `namespace` (API pods and static/mirror names alike). */
  podByName(namespace: string, name: string): Pod | undefined;
  runningPods(): Promise<Json[]>;
  statsSummary(): Promise<Json>;
  /** Where the log of `container` is, or the message of a 400 answer. */
  logTarget(pod: Pod, container: string, previous: boolean): Promise<LogTarget | string>;
  manifests?: ManifestStore;
  /** The runtime, for exec, attach and port-forward (streaming.ts). */
  readonly runtime?: Runtime;
  /** The node's name (the object of the webhook authorizer's reviews). */
  readonly nodeName?: string;
  /** The API client the webhook authenticator and authorizer ask (API-server mode). */
  apiClient?(): ApiClient | undefined;
  /** /metrics in Prometheus' text format. */
  metrics?(): string;
}

export interface AgentServerOptions extends AgentAuthOptions {
  address: string;
  /** 0 picks a free port. */
  port: number;
  readOnlyPort: number;
  healthzAddress: string;
  healthzPort: number;
  enableServer: boolean;
  enableDebuggingHandlers: boolean;
  anonymousAuth: boolean;
  clientCA?: string;
  cert: string;
  key: string;
  /** --streaming-connection-idle-timeout in ms (default 4 h; 0: none). */
  streamingIdleTimeoutMs?: number;
  /** --tls-min-version as Node's name; Node's default (TLS 1.2) when unset. */
  tlsMinVersion?: SecureVersion;
  /** --tls-cipher-suites as an OpenSSL cipher list (util/tls.ts); Node's defaults when unset. */
  tlsCiphers?: string;
  /** --contention-profiling: /debug/pprof/block (the event loop's delay) among the debugging handlers' profiles. */
  contentionProfiling?: boolean;
}

type Handler = (req: IncomingMessage, res: ServerResponse, url: URL) => Promise<void> | void;

function send(res: ServerResponse, code: number, body: string, type = 'text/plain; charset=utf-8'): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  res.writeHead(code, { 'content-type': type, 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

const sendJSON = (res: ServerResponse, code: number, obj: unknown): void => send(res, code, JSON.stringify(obj), 'application/json');

/** Go's strconv.ParseBool. */
function parseBool(v: string): boolean | undefined {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(v)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(v)) return false;
  return undefined;
}

/** PodLogOptions from the query; 'decode' or 'invalid' for kubelet's 400 and 422 answers. */
export function logOptionsFromQuery(q: URLSearchParams): (LogOptions & { previous: boolean }) | 'decode' | 'invalid' {
  const out: LogOptions & { previous: boolean } = { previous: false };
  const tail = q.get('tail');
  const tailLines = tail !== null && tail !== '' ? (tail === 'all' ? null : tail) : q.get('tailLines');
  for (const f of ['follow', 'previous', 'timestamps'] as const) {
    const v = q.get(f);
    if (v === null || v === '') continue;
    const b = parseBool(v);
    if (b === undefined) return 'decode';
    out[f] = b;
  }
  const int = (v: string | null): number | undefined | 'bad' => (v === null || v === '' ? undefined : /^-?\d+$/.test(v) ? Number(v) : 'bad');
  const since = int(q.get('sinceSeconds'));
  const lines = int(tailLines);
  const limit = int(q.get('limitBytes'));
  if (since === 'bad' || lines === 'bad' || limit === 'bad') return 'decode';
  const sinceTime = q.get('sinceTime');
  let sinceDate: Date | undefined;
  if (sinceTime !== null && sinceTime !== '') {
    const t = Date.parse(sinceTime);
    if (Number.isNaN(t) || !/^\d{4}-\d{2}-\d{2}T/.test(sinceTime)) return 'decode';
    sinceDate = new Date(t);
  }
  if (since !== undefined && since < 1) return 'invalid';
  if (lines !== undefined && lines < 0) return 'invalid';
  if (limit !== undefined && limit < 1) return 'invalid';
  if (since !== undefined && sinceDate !== undefined) return 'invalid';
  if (since !== undefined) out.since = new Date(Date.now() - since * 1000);
  if (sinceDate) out.since = sinceDate;
  if (lines !== undefined) out.tailLines = lines;
  if (limit !== undefined) out.limitBytes = limit;
  return out;
}

export class AgentServers {
  private main: Server | undefined;
  private readOnly: Server | undefined;
  private health: Server | undefined;
  /** Upgraded (streaming) connections, which the servers no longer track; ended by stop(). */
  private readonly upgraded = new Set<Duplex>();
  private readonly auth: AgentAuth;
  /** Ends CPU profiles in progress and the event-loop delay histogram at stop(). */
  private readonly abort = new AbortController();

  constructor(
    private readonly host: ServerHost,
    private readonly o: AgentServerOptions,
  ) {
    this.auth = new AgentAuth(o, host.nodeName ?? '', () => host.apiClient?.());
  }

  /** A new serving certificate (--rotate-server-certificates): new connections get it. */
  setCertificate(cert: string, key: string): void {
    (this.main as import('node:https').Server | undefined)?.setSecureContext({
      cert,
      key,
      ...this.tlsOptions(),
      ...(this.o.clientCA !== undefined ? { ca: this.o.clientCA } : {}),
    });
  }

  /** --tls-min-version and --tls-cipher-suites as Node's options. */
  private tlsOptions(): { minVersion?: SecureVersion; ciphers?: string } {
    return {
      ...(this.o.tlsMinVersion !== undefined ? { minVersion: this.o.tlsMinVersion } : {}),
      ...(this.o.tlsCiphers !== undefined ? { ciphers: this.o.tlsCiphers } : {}),
    };
  }

  /** The bound port of the main server (0 when it does not run). */
  get port(): number {
    return (this.main?.address() as AddressInfo | null)?.port ?? 0;
  }
  get readOnlyPort(): number {
    return (this.readOnly?.address() as AddressInfo | null)?.port ?? 0;
  }
  get healthzPort(): number {
    return (this.health?.address() as AddressInfo | null)?.port ?? 0;
  }

  async start(): Promise<void> {
    if (this.o.enableServer) {
      const routes = this.routes(true);
      this.main = createHttpsServer(
        { cert: this.o.cert, key: this.o.key, ...this.tlsOptions(), ...(this.o.clientCA !== undefined ? { ca: this.o.clientCA, requestCert: true, rejectUnauthorized: false } : {}) },
        (req, res) => this.serve(req, res, routes, true),
      );
      this.main.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => this.upgrade(req, socket, head));
      await listen(this.main, this.o.port, this.o.address);
      if (this.o.readOnlyPort > 0) {
        const ro = this.routes(false);
        this.readOnly = createHttpServer((req, res) => this.serve(req, res, ro, false));
        await listen(this.readOnly, this.o.readOnlyPort, this.o.address);
      }
    }
    if (this.o.healthzPort > 0) {
      this.health = createHttpServer((req, res) => this.serve(req, res, new Map([['/healthz', healthz]]), false));
      await listen(this.health, this.o.healthzPort, this.o.healthzAddress);
    }
  }

  async stop(): Promise<void> {
    this.abort.abort();
    for (const s of this.upgraded) s.destroy();
    await Promise.all([this.main, this.readOnly, this.health].filter((s): s is Server => s !== undefined).map((s) => close(s)));
  }

  private routes(main: boolean): Map<string, Handler> {
    const r = new Map<string, Handler>([
      ['/healthz', healthz],
      ['/pods', (_q, res) => sendJSON(res, 200, { kind: 'PodList', apiVersion: 'v1', metadata: {}, items: this.host.pods() })],
      ['/stats/summary', async (_q, res) => sendJSON(res, 200, await this.host.statsSummary())],
      ['/metrics', (_q, res) => send(res, 200, this.host.metrics?.() ?? '', 'text/plain; version=0.0.4; charset=utf-8')],
    ]);
    if (main && this.o.enableDebuggingHandlers) {
      const running: Handler = async (_q, res) => sendJSON(res, 200, { kind: 'PodList', apiVersion: 'v1', metadata: {}, items: await this.host.runningPods() });
      r.set('/runningpods', running);
      r.set('/runningpods/', running);
      r.set('/containerLogs/', (req, res, url) => this.containerLogs(req, res, url));
      for (const p of ['/exec/', '/attach/', '/portForward/']) r.set(p, (req, res) => serveStreamingRequest(this.host, req, res));
      // kubelet's pprof handlers, and with --contention-profiling the block profile (util/profiling.ts)
      const set = (path: string, h: (req: IncomingMessage, res: ServerResponse) => void | Promise<void>): void => void r.set(path, (req, res) => h(req, res));
      installProfiling({ handle: set, handlePrefix: set }, { signal: this.abort.signal, contention: this.o.contentionProfiling === true });
    }
    if (main && this.host.manifests) r.set('/manifests', (req, res, url) => this.manifests(req, res, url));
    return r;
  }

  private serve(req: IncomingMessage, res: ServerResponse, routes: Map<string, Handler>, authenticate: boolean): void {
    if (!authenticate) return this.route(req, res, routes);
    void this.auth.check(req).then((denied) => (denied ? send(res, denied.code, denied.message) : this.route(req, res, routes)));
  }

  private route(req: IncomingMessage, res: ServerResponse, routes: Map<string, Handler>): void {
    const url = new URL(req.url ?? '/', 'http://agent');
    let handler = routes.get(url.pathname);
    if (!handler) for (const [prefix, h] of routes) if (prefix.endsWith('/') && url.pathname.startsWith(prefix)) handler = h;
    if (!handler && url.pathname.startsWith('/manifests/')) handler = routes.get('/manifests');
    if (!handler) {
      send(res, 404, '404 page not found');
      return;
    }
    Promise.resolve(handler(req, res, url)).catch((err: unknown) => send(res, 500, `Internal Error: ${err instanceof Error ? err.message : String(err)}`));
  }

  /** An upgrade request on the main server: exec, attach and port-forward (with the debugging handlers). */
  private upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    this.upgraded.add(socket);
    socket.once('close', () => this.upgraded.delete(socket));
    socket.on('error', () => socket.destroy());
    void this.auth.check(req).then((denied) => {
      if (denied) return refuseUpgrade(socket, denied.code, denied.message);
      const path = new URL(req.url ?? '/', 'http://agent').pathname;
      if (!this.o.enableDebuggingHandlers || !isStreamingPath(path)) return refuseUpgrade(socket, 404, '404 page not found');
      const o = { idleTimeoutMs: this.o.streamingIdleTimeoutMs ?? 4 * 3600_000 };
      void serveStreamingUpgrade(this.host, req, socket, head, o).catch(() => socket.destroy());
    });
  }

  private async containerLogs(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const parts = url.pathname.slice('/containerLogs/'.length).split('/').map(decodeURIComponent);
    const [namespace = '', podName = '', container = ''] = parts;
    if (podName === '') return send(res, 400, '{"message": "Missing podID."}');
    if (container === '') return send(res, 400, '{"message": "Missing container name."}');
    if (namespace === '') return send(res, 400, '{"message": "Missing podNamespace."}');
    const opts = logOptionsFromQuery(url.searchParams);
    if (opts === 'decode') return send(res, 400, '{"message": "Unable to decode query."}');
    if (opts === 'invalid') return send(res, 422, '{"message": "Invalid request."}');
    const pod = this.host.podByName(namespace, podName);
    if (!pod) return send(res, 404, `pod "${podName}" does not exist`);
    const known = [...pod.spec.containers, ...(pod.spec.initContainers ?? []), ...(pod.spec.ephemeralContainers ?? [])].some((c) => c.name === container);
    if (!known) return send(res, 404, `container "${container}" not found in pod "${podName}"`);
    const target = await this.host.logTarget(pod, container, opts.previous);
    if (typeof target === 'string') return send(res, 400, target);
    let closed = false;
    res.on('close', () => (closed = true));
    res.writeHead(200, { 'content-type': 'text/plain', 'transfer-encoding': 'chunked' });
    const sink = {
      get closed() {
        return closed;
      },
      write: (chunk: string) =>
        new Promise<void>((resolve) => {
          if (closed || res.write(chunk)) resolve();
          else res.once('drain', () => resolve());
        }),
    };
    try {
      await streamLog(target.path, opts, sink, target.running);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') res.write(`\nerror reading the log: ${err instanceof Error ? err.message : String(err)}\n`);
    }
    res.end();
    void req;
  }

  private async manifests(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const store = this.host.manifests!;
    const name = url.pathname === '/manifests' ? '' : decodeURIComponent(url.pathname.slice('/manifests/'.length));
    if (name === '') {
      if (req.method === 'GET') return sendJSON(res, 200, store.list());
      return send(res, 405, 'method not allowed: use GET /manifests, or PUT / DELETE /manifests/{name}');
    }
    if (!/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(name) || name.length > 253) return send(res, 400, `invalid manifest name "${name}": must be a DNS-1123 subdomain`);
    if (req.method === 'PUT') {
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      try {
        const { created } = await store.put(name, Buffer.concat(chunks).toString('utf8'));
        return send(res, created ? 201 : 200, `manifest ${name} ${created ? 'created' : 'replaced'}\n`);
      } catch (err) {
        return send(res, 400, `${err instanceof Error ? err.message : String(err)}\n`);
      }
    }
    if (req.method === 'DELETE') {
      return (await store.delete(name)) ? send(res, 200, `manifest ${name} deleted\n`) : send(res, 404, `manifest ${name} not found\n`);
    }
    return send(res, 405, 'method not allowed: use PUT or DELETE on /manifests/{name}');
  }
}

const healthz: Handler = (_req, res) => send(res, 200, 'ok');

function listen(server: Server, port: number, address: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, address, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

function close(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
