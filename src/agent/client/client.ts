// A small Kubernetes API client for orchlet: over HTTPS one multiplexed HTTP/2 session per server, or
// HTTP/1.1 with keep-alive where the server does not offer h2 (transport.ts); bearer token or client
// certificate, the verbs the agent needs, and watch streams. Every request of a
// client takes a token from its rate limiter first (--orch-api-qps/--orch-api-burst for the main
// client, --event-qps/--event-burst for events, none for heartbeats: see withLimiter).
//
// Content type (--orch-api-content-type, ClientConfig.contentType): with protobuf (the default; the orch
// spelling application/vnd.orch.protobuf is sent as Kubernetes' application/vnd.kubernetes.protobuf), objects
// are sent as Kubernetes protobuf when their kind has a message and answers are accepted as protobuf or JSON,
// as client-go does; patches are JSON. Answers and watch streams are decoded by their Content-Type.
import { URL } from 'node:url';
import type { Readable } from 'node:stream';
import type { ClientConfig } from './kubeconfig.js';
import { urlTemplate, type RestClientMetrics } from './metrics.js';
import { TokenBucket } from './ratelimit.js';
import { Transport, type Protocol, type TransportResponse } from './transport.js';
import { PROTOBUF_MEDIA_TYPES, WatchFrameReader, canEncodeObject, decodeObject, encodeObject } from '../../util/protobuf.js';

const PROTOBUF = 'application/vnd.kubernetes.protobuf';

export type Json = Record<string, unknown>;

/** A non-2xx answer; `status` is the decoded metav1.Status when the server sent one. */
export class ApiError extends Error {
  override name = 'ApiError';
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
    readonly status?: Json,
  ) {
    super(message);
  }
}

export const isNotFound = (err: unknown): boolean => err instanceof ApiError && err.code === 404;
export const isConflict = (err: unknown): boolean => err instanceof ApiError && err.code === 409;
export const isAlreadyExists = (err: unknown): boolean => err instanceof ApiError && err.code === 409 && err.reason === 'AlreadyExists';
export const isGone = (err: unknown): boolean => err instanceof ApiError && err.code === 410;

export interface RequestOptions {
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  /** Content type of the body (application/json unless a patch type is given). */
  contentType?: string;
  /** Gives up after this many ms (default 60 s; watches set their own). */
  timeoutMs?: number;
  /** The caller already took this request's token from `limiter` (to build the body after waiting). */
  tokenTaken?: boolean;
  /** With tokenTaken: how long that take() waited (ms), for rest_client_rate_limiter_duration_seconds. */
  tokenWaitMs?: number;
  /**
   * Reads a 2xx answer instead of the full decode (`protobuf`: the body is Kubernetes protobuf, otherwise
   * JSON): for callers that need a part of the answer, or none (DISCARD_ANSWER). Errors are decoded as usual.
   */
  answer?: (body: Buffer, protobuf: boolean) => unknown;
}

/** RequestOptions.answer for a caller that uses nothing of the answer (it is not decoded; the request resolves with undefined). */
export const DISCARD_ANSWER = (): undefined => undefined;

export interface WatchEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  object: Json;
}

export interface WatchHandle {
  /** Resolves when the stream ends (server timeout, error or stop()); rejects with ApiError for a non-2xx answer. */
  done: Promise<void>;
  stop(): void;
}

export interface ApiClientOptions {
  userAgent?: string;
  /** Requests per second; <= 0: no limit. */
  qps?: number;
  burst?: number;
  /** client-go's rest_client_* metrics of the agent (shared by the clients withLimiter makes). */
  metrics?: RestClientMetrics;
  /**
   * A request waited over a second for its rate limiter: client-go's message, which it logs through a
   * throttled logger (at level 0, once every 10 s at most).
   */
  onThrottle?: (message: string) => void;
}

export class ApiClient {
  private readonly url: URL;
  private readonly transport: Transport;
  private readonly headers: Record<string, string>;
  /** Objects go out as protobuf (ClientConfig.contentType). */
  private readonly protobuf: boolean;

  constructor(
    readonly config: ClientConfig,
    private readonly options: ApiClientOptions = {},
    readonly limiter: TokenBucket = new TokenBucket(options.qps ?? 5, options.burst ?? 10),
    transport?: Transport,
  ) {
    this.url = new URL(config.server);
    this.transport = transport ?? new Transport(config);
    this.protobuf = PROTOBUF_MEDIA_TYPES.includes(config.contentType ?? 'application/json');
    this.headers = {
      'user-agent': options.userAgent ?? 'orchlet',
      accept: this.protobuf ? `${PROTOBUF}, application/json` : 'application/json',
      ...(config.token !== undefined ? { authorization: `Bearer ${config.token}` } : {}),
    };
  }

  /** The same server and connections with another rate limiter (qps <= 0: unlimited). */
  withLimiter(qps: number, burst: number): ApiClient {
    return new ApiClient(this.config, this.options, new TokenBucket(qps, burst), this.transport);
  }

  /** The protocol the connections speak ('h2' or 'http/1.1'), once the first request told. */
  get protocol(): Protocol | undefined {
    return this.transport.negotiated;
  }

  /** HTTP/2 sessions opened so far (one per server unless GOAWAY, errors or a rotation ended one). */
  get sessionsOpened(): number {
    return this.transport.sessionsOpened;
  }

  async get<T = Json>(path: string, query?: RequestOptions['query']): Promise<T> {
    return this.request<T>('GET', path, query ? { query } : {});
  }
  /** POST; `answer`: RequestOptions.answer. */
  async create<T = Json>(path: string, body: unknown, answer?: RequestOptions['answer']): Promise<T> {
    return this.request<T>('POST', path, answer ? { body, answer } : { body });
  }
  async update<T = Json>(path: string, body: unknown): Promise<T> {
    return this.request<T>('PUT', path, { body });
  }
  /** PATCH; `type` 'strategic' | 'merge' | 'json'; `answer`: RequestOptions.answer. */
  async patch<T = Json>(path: string, body: unknown, type: 'strategic' | 'merge' | 'json' = 'strategic', answer?: RequestOptions['answer']): Promise<T> {
    const contentType = { strategic: 'application/strategic-merge-patch+json', merge: 'application/merge-patch+json', json: 'application/json-patch+json' }[type];
    return this.request<T>('PATCH', path, answer ? { body, contentType, answer } : { body, contentType });
  }
  async delete<T = Json>(path: string, options?: Json): Promise<T> {
    return this.request<T>('DELETE', path, options ? { body: { kind: 'DeleteOptions', apiVersion: 'v1', ...options } } : {});
  }

  /** One request; resolves with the decoded JSON answer, rejects with ApiError (or a transport error). */
  async request<T = Json>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
    const waited = opts.tokenTaken === true ? opts.tokenWaitMs : await this.limiter.take();
    if (waited !== undefined && waited > 1000) this.throttled(method, path, opts, waited);
    const res = await this.send(method, path, opts, undefined, waited);
    const body = await readAll(res.body);
    const code = res.status;
    if (code < 200 || code >= 300) throw toApiError(code, decodeBody(res, body));
    if (opts.answer) return opts.answer(body, mediaType(res) === PROTOBUF) as T;
    return decodeBody(res, body) as T;
  }

  /**
   * Starts a watch: GET `path`?watch=true with `query`. Each decoded event goes to `onEvent` in
   * order. The limiter is used once, for the request that opens the stream.
   */
  async watch(path: string, query: RequestOptions['query'], onEvent: (e: WatchEvent) => void): Promise<WatchHandle> {
    const waited = await this.limiter.take();
    if (waited > 1000) this.throttled('GET', path, { query: { ...query, watch: true } }, waited);
    let abort: (() => void) | undefined;
    const res = await this.send('GET', path, { query: { ...query, watch: true }, timeoutMs: 0 }, (a) => (abort = a), waited);
    const code = res.status;
    if (code < 200 || code >= 300) throw toApiError(code, decodeBody(res, await readAll(res.body)));
    let stopped = false;
    const body = res.body;
    const done = new Promise<void>((resolve) => {
      body.on('end', () => resolve());
      body.on('close', () => resolve());
      body.on('error', () => resolve());
      if (mediaType(res) === PROTOBUF) {
        // Length-prefixed WatchEvent frames.
        const frames = new WatchFrameReader();
        body.on('data', (chunk: Buffer) => {
          let events;
          try {
            events = frames.push(chunk);
          } catch {
            res.destroy(); // a malformed frame loses the framing: end the stream, the next list repairs it
            return;
          }
          for (const e of events) if (!stopped) onEvent(e as WatchEvent);
        });
        return;
      }
      let buf = '';
      body.setEncoding('utf8');
      body.on('data', (chunk: string) => {
        buf += chunk;
        let nl: number;
        while ((nl = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, nl).trim();
          buf = buf.slice(nl + 1);
          if (line === '' || stopped) continue;
          try {
            onEvent(JSON.parse(line) as WatchEvent);
          } catch {
            // a malformed frame ends nothing; the next list repairs what was missed
          }
        }
      });
    });
    return {
      done,
      stop: () => {
        stopped = true;
        abort?.();
        res.destroy();
      },
    };
  }

  /**
   * A new client certificate (certificate rotation): the open connections (the HTTP/2 session, watches
   * included) are closed so that the next requests and the resumed watches connect anew presenting it,
   * as kubelet closes its connections on rotation. Every client sharing the transport (withLimiter)
   * changes with it.
   */
  setClientCertificate(cert: string, key: string): void {
    if (this.url.protocol !== 'https:') return;
    this.config.cert = cert;
    this.config.key = key;
    this.transport.reset();
  }

  /** Closes the connections. */
  close(): void {
    this.transport.close();
  }

  /** client-go's tryThrottle message for a wait over extraLongThrottleLatency (1 s). */
  private throttled(method: string, path: string, opts: RequestOptions, waitedMs: number): void {
    if (!this.options.onThrottle) return;
    const url = new URL(this.url.pathname.replace(/\/$/, '') + path, this.url);
    for (const [k, v] of Object.entries(opts.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    // Go's Duration.String() of a wait over a second: seconds, up to nanoseconds, trailing zeros dropped
    const waited = `${(Math.round(waitedMs * 1e6) / 1e9).toFixed(9).replace(/\.?0+$/, '')}s`;
    this.options.onThrottle(`Waited for ${waited} due to client-side throttling, not priority and fairness, request: ${method}:${url.toString()}`);
  }

  /** Sends one request; with metrics, observes the limiter's wait (`waitedMs`, when the request had a limiter) and the answer. */
  private send(method: string, path: string, opts: RequestOptions, onStart?: (abort: () => void) => void, waitedMs?: number): Promise<TransportResponse> {
    const metrics = this.options.metrics;
    if (!metrics) return this.sendNow(method, path, opts, onStart);
    const template = urlTemplate(this.url, path, Object.keys(opts.query ?? {}).filter((k) => opts.query![k] !== undefined));
    if (waitedMs !== undefined && this.limiter.qps > 0) metrics.rateLimited(method, template, waitedMs);
    const start = performance.now();
    const sent = this.sendNow(method, path, opts, onStart);
    void sent.then(
      (res) => metrics.done(method, template, this.url.host, res.status, performance.now() - start),
      () => metrics.done(method, template, this.url.host, undefined, performance.now() - start),
    );
    return sent;
  }

  private sendNow(method: string, path: string, opts: RequestOptions, onStart?: (abort: () => void) => void): Promise<TransportResponse> {
    const headers: Record<string, string> = { ...this.headers };
    let body: Buffer | undefined;
    if (opts.body !== undefined) {
      const obj = opts.body as Json;
      if (this.protobuf && opts.contentType === undefined && typeof obj.apiVersion === 'string' && typeof obj.kind === 'string' && canEncodeObject(obj.apiVersion, obj.kind)) {
        body = encodeObject(obj);
        headers['content-type'] = PROTOBUF;
      } else {
        body = Buffer.from(JSON.stringify(opts.body));
        headers['content-type'] = opts.contentType ?? 'application/json';
      }
      headers['content-length'] = String(body.length);
    }
    return this.transport.send({ method, path: requestTarget(this.url, path, opts.query), headers, ...(body !== undefined ? { body } : {}), timeoutMs: opts.timeoutMs ?? 60_000 }, onStart);
  }
}

/** Path characters a URL keeps as they are (no percent-encoding, no dot segment can start with them), '/' first. */
const PLAIN_PATH = /^\/[A-Za-z0-9\-_~:@!$&'()*+,;=][A-Za-z0-9\-._~:@!$&'()*+,;=/]*$/;

/**
 * The request target (path and query) for `path` under the server URL's path, as `new URL` resolves
 * it; a plain path without a query (most of the agent's requests) is joined without building a URL.
 */
export function requestTarget(server: URL, path: string, query?: RequestOptions['query']): string {
  const prefix = server.pathname.replace(/\/$/, '');
  if (PLAIN_PATH.test(path) && !path.includes('/.') && !path.includes('//') && (query === undefined || Object.values(query).every((v) => v === undefined)) && PLAIN_PATH.test(prefix + '/x')) return prefix + path;
  const url = new URL(prefix + path, server);
  for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
  return url.pathname + url.search;
}

function readAll(body: Readable): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    body.on('data', (c: Buffer) => chunks.push(c));
    body.on('end', () => resolve(Buffer.concat(chunks)));
    body.on('error', reject);
    body.on('close', () => (body.readableEnded ? undefined : reject(new Error('the answer broke off'))));
  });
}

/** The media type of an answer, without parameters. */
function mediaType(res: TransportResponse): string {
  const ct = res.headers['content-type'];
  return (typeof ct === 'string' ? ct : '').split(';')[0]!.trim().toLowerCase();
}

/** An answer's body decoded by its Content-Type: a protobuf object, JSON, or (not JSON) its text. */
function decodeBody(res: TransportResponse, body: Buffer): unknown {
  if (body.length === 0) return {};
  if (mediaType(res) === PROTOBUF) return decodeObject(body);
  const text = body.toString('utf8');
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    const code = res.status;
    if (code >= 200 && code < 300) throw err;
    return text;
  }
}

function toApiError(code: number, decoded: unknown): ApiError {
  const status = typeof decoded === 'object' && decoded !== null && (decoded as Json).kind === 'Status' ? (decoded as Json) : undefined;
  const text = typeof decoded === 'string' ? decoded : '';
  const reason = typeof status?.reason === 'string' ? status.reason : '';
  const message = typeof status?.message === 'string' ? status.message : text.trim() || `HTTP ${code}`;
  return new ApiError(code, reason, message, status);
}
