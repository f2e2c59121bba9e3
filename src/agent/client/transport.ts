// How the agent's API client reaches its server: over HTTPS, one multiplexed HTTP/2 session per
// server (as client-go does), so a hundred concurrent requests cost one TLS handshake instead of one
// each; over plain HTTP, or where the server or a TLS-terminating proxy does not offer h2 in ALPN,
// HTTP/1.1 with keep-alive connections.
//
// The first request of a transport (and the first after every reset) opens a TLS connection offering
// h2 and http/1.1. If the peer picks h2, the connection becomes the session requests go on until the
// session ends (GOAWAY, close, error, stream IDs used up): the next request opens a new one. A session
// carries at most the streams the server allows at once (its SETTINGS_MAX_CONCURRENT_STREAMS, 250 on
// kube-apiserver and orch): a request beyond that goes on another session, opened when none has room,
// as Go's HTTP/2 transport does, so watches (one per ConfigMap or Secret a pod uses) never fill a
// session and leave other requests waiting behind them.
// A request the server never took up (refused by GOAWAY or REFUSED_STREAM before any answer) is sent
// once more on a new session. If the peer picks http/1.1 (or nothing), the transport uses an HTTP/1.1
// keep-alive pool from then on.
//
// reset() (certificate rotation, see ApiClient.setClientCertificate) closes every connection at once,
// watches included, so the next requests and the resumed watches present the new certificate.
import { connect as http2Connect, constants as h2c, type ClientHttp2Session, type ClientHttp2Stream, type IncomingHttpHeaders } from 'node:http2';
import { Agent as HttpAgent, request as httpRequest, type ClientRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { ConnectionOptions, TLSSocket } from 'node:tls';
import { connect as tlsConnect } from '../../util/node-tls.js';
import type { Readable } from 'node:stream';
import type { ClientConfig } from './kubeconfig.js';

/** One answer: status, headers and the body as a stream. */
export interface TransportResponse {
  status: number;
  /** Lower-case header names. */
  headers: Record<string, string | string[] | undefined>;
  body: Readable;
  /** Ends the exchange (the body stops; on HTTP/2 the stream is cancelled, the session stays). */
  destroy(): void;
}

export interface TransportRequest {
  method: string;
  /** Path with query. */
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
  /** 0: none. */
  timeoutMs: number;
}

export type Protocol = 'h2' | 'http/1.1';

/** Errors that mean the server never took the stream up: safe to send again on a new session. */
const RETRYABLE_CODES = new Set(['ERR_HTTP2_GOAWAY_SESSION', 'ERR_HTTP2_INVALID_SESSION', 'ERR_HTTP2_STREAM_CANCEL', 'ERR_HTTP2_OUT_OF_STREAMS']);

class NotTakenUp extends Error {}

export class Transport {
  private readonly url: URL;
  private readonly tls: boolean;
  /** Decided by the first TLS handshake (ALPN); undefined: not known yet. */
  private protocol: Protocol | undefined;
  /** Sessions that take new streams. */
  private sessions: ClientHttp2Session[] = [];
  private connecting: Promise<ClientHttp2Session | undefined> | undefined;
  private h1: HttpsAgent | HttpAgent | undefined;
  /** Streams open or about to open per session (a slot is taken before the stream is created). */
  private readonly active = new WeakMap<ClientHttp2Session, number>();
  /** Sessions opened so far (tests and the bench read it). */
  sessionsOpened = 0;
  /** Bumped by reset(): a connection opened before it is not used. */
  private generation = 0;

  constructor(private readonly config: ClientConfig) {
    this.url = new URL(config.server);
    this.tls = this.url.protocol === 'https:';
    if (!this.tls) this.protocol = 'http/1.1';
  }

  /** The protocol in use, once known. */
  get negotiated(): Protocol | undefined {
    return this.protocol;
  }

  private tlsOptions(): ConnectionOptions {
    const c = this.config;
    return {
      ...(c.ca !== undefined ? { ca: c.ca } : {}),
      ...(c.cert !== undefined ? { cert: c.cert, key: c.key } : {}),
      ...(c.tlsServerName !== undefined ? { servername: c.tlsServerName } : {}),
      rejectUnauthorized: c.insecureSkipTLSVerify !== true,
    };
  }

  async send(req: TransportRequest, onStart?: (abort: () => void) => void): Promise<TransportResponse> {
    if (this.protocol !== 'http/1.1') {
      for (let attempt = 0; ; attempt++) {
        const session = await this.h2Slot();
        if (!session) break; // the peer speaks only HTTP/1.1
        try {
          return await this.sendH2(session, req, onStart);
        } catch (err) {
          if (err instanceof NotTakenUp && attempt === 0) {
            this.drop(session);
            continue;
          }
          throw err instanceof NotTakenUp ? (err.cause as Error) : err;
        }
      }
    }
    return this.sendH1(req, onStart);
  }

  /** Closes every connection now (in-flight requests and watches end); later requests reconnect. */
  reset(): void {
    this.generation++;
    const sessions = this.sessions;
    this.sessions = [];
    this.connecting = undefined;
    if (this.tls) this.protocol = undefined;
    for (const s of sessions) s.destroy();
    const a = this.h1;
    this.h1 = undefined;
    a?.destroy();
  }

  /** Closes the connections (after the last request; a later request connects again). */
  close(): void {
    this.reset();
  }

  // ---- HTTP/2 ----

  /**
   * A session with room for one more stream, that stream's slot taken (sendH2 gives it back when the
   * stream closes); undefined when the peer speaks only HTTP/1.1.
   */
  private async h2Slot(): Promise<ClientHttp2Session | undefined> {
    for (;;) {
      const s = this.sessions.find((x) => !x.closed && !x.destroyed && (this.active.get(x) ?? 0) < streamLimit(x));
      if (s) {
        this.take(s);
        return s;
      }
      if (this.protocol === 'http/1.1') return undefined;
      if (!this.connecting) {
        const p: Promise<ClientHttp2Session | undefined> = this.openSession().finally(() => {
          if (this.connecting === p) this.connecting = undefined;
        });
        this.connecting = p;
      }
      if ((await this.connecting) === undefined) return undefined;
    }
  }

  /** Takes a stream slot of `session` (it holds the event loop open while any is taken). */
  private take(session: ClientHttp2Session): void {
    const n = this.active.get(session) ?? 0;
    this.active.set(session, n + 1);
    if (n === 0) session.ref();
  }

  private give(session: ClientHttp2Session): void {
    const left = (this.active.get(session) ?? 1) - 1;
    this.active.set(session, left);
    if (left === 0 && !session.destroyed) session.unref();
  }

  /** Opens a TLS connection offering h2 and http/1.1; the session if h2 was picked, else undefined (HTTP/1.1 from now on). */
  private openSession(): Promise<ClientHttp2Session | undefined> {
    const generation = this.generation;
    return new Promise((resolve, reject) => {
      const socket: TLSSocket = tlsConnect({
        host: this.url.hostname.replace(/^\[|\]$/g, ''),
        port: Number(this.url.port || 443),
        ALPNProtocols: ['h2', 'http/1.1'],
        ...this.tlsOptions(),
      });
      const fail = (err: Error): void => {
        socket.destroy();
        reject(err);
      };
      socket.once('error', fail);
      socket.once('secureConnect', () => {
        socket.off('error', fail);
        if (generation !== this.generation) {
          // reset (a rotated certificate) while connecting: the caller connects again with the new settings
          socket.destroy();
          resolve(this.openSession());
          return;
        }
        if (socket.alpnProtocol !== 'h2') {
          socket.destroy();
          this.protocol = 'http/1.1';
          resolve(undefined);
          return;
        }
        this.protocol = 'h2';
        const session = http2Connect(this.url.origin, { createConnection: () => socket });
        this.sessionsOpened++;
        const forget = (): void => this.drop(session);
        session.on('goaway', forget);
        session.on('close', forget);
        session.on('error', forget);
        session.on('frameError', forget);
        session.unref();
        // ready once the server's SETTINGS (its stream limit) are known
        const timer = setTimeout(() => session.destroy(new Error('no HTTP/2 SETTINGS from the server within 30 s')), 30_000);
        const ready = (): void => {
          clearTimeout(timer);
          session.off('close', notReady);
          if (generation !== this.generation) {
            session.destroy(); // reset while it got ready
            resolve(this.openSession());
            return;
          }
          this.sessions.push(session);
          resolve(session);
        };
        const notReady = (): void => {
          clearTimeout(timer);
          session.off('remoteSettings', ready);
          reject(new Error(`the HTTP/2 session to ${this.url.host} closed before it was ready`));
        };
        session.once('remoteSettings', ready);
        session.once('close', notReady);
      });
    });
  }

  /** Stops using `session` for new requests; its open streams end on their own. */
  private drop(session: ClientHttp2Session): void {
    this.sessions = this.sessions.filter((x) => x !== session);
    if (!session.closed && !session.destroyed) session.close();
  }

  private sendH2(session: ClientHttp2Session, req: TransportRequest, onStart?: (abort: () => void) => void): Promise<TransportResponse> {
    return new Promise((resolve, reject) => {
      let stream: ClientHttp2Stream;
      try {
        stream = session.request(
          {
            ...req.headers,
            [h2c.HTTP2_HEADER_METHOD]: req.method,
            [h2c.HTTP2_HEADER_PATH]: req.path,
            [h2c.HTTP2_HEADER_AUTHORITY]: this.url.host,
            [h2c.HTTP2_HEADER_SCHEME]: 'https',
          },
          { endStream: req.body === undefined },
        );
      } catch (err) {
        // the session closed between our check and the request (GOAWAY just arrived)
        this.give(session);
        reject(new NotTakenUp('session closed', { cause: err }));
        return;
      }
      stream.once('close', () => this.give(session));
      let answered = false;
      onStart?.(() => stream.close(h2c.NGHTTP2_CANCEL));
      stream.once('error', (err: NodeJS.ErrnoException) => {
        if (answered) return;
        reject(!answered && (RETRYABLE_CODES.has(err.code ?? '') || stream.rstCode === h2c.NGHTTP2_REFUSED_STREAM) ? new NotTakenUp(err.message, { cause: err }) : err);
      });
      stream.once('close', () => {
        if (answered) return;
        const err = new Error(`${req.method} ${req.path}: stream closed before an answer (code ${stream.rstCode})`);
        reject(stream.rstCode === h2c.NGHTTP2_REFUSED_STREAM ? new NotTakenUp(err.message, { cause: err }) : err);
      });
      if (req.timeoutMs > 0) {
        stream.setTimeout(req.timeoutMs, () => stream.destroy(new Error(`${req.method} ${req.path}: timed out after ${req.timeoutMs} ms`)));
      }
      stream.once('response', (headers: IncomingHttpHeaders) => {
        answered = true;
        stream.on('error', () => {}); // a body that breaks off ends the body stream (readers see close)
        resolve({
          status: Number(headers[h2c.HTTP2_HEADER_STATUS] ?? 0),
          headers,
          body: stream,
          destroy: () => stream.close(h2c.NGHTTP2_CANCEL),
        });
      });
      stream.end(req.body);
    });
  }

  // ---- HTTP/1.1 ----

  private agent(): HttpsAgent | HttpAgent {
    this.h1 ??= this.tls ? new HttpsAgent({ keepAlive: true, maxSockets: 64, ...this.tlsOptions() }) : new HttpAgent({ keepAlive: true, maxSockets: 64 });
    return this.h1;
  }

  private sendH1(req: TransportRequest, onStart?: (abort: () => void) => void): Promise<TransportResponse> {
    const doRequest = this.tls ? httpsRequest : httpRequest;
    return new Promise((resolve, reject) => {
      const r: ClientRequest = doRequest(new URL(req.path, this.url), { method: req.method, headers: req.headers, agent: this.agent() }, (res) => {
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: res, destroy: () => (r.destroy(), res.destroy()) });
      });
      onStart?.(() => r.destroy());
      r.on('error', reject);
      if (req.timeoutMs > 0) r.setTimeout(req.timeoutMs, () => r.destroy(new Error(`${req.method} ${req.path}: timed out after ${req.timeoutMs} ms`)));
      r.end(req.body);
    });
  }
}

/** The streams `session` may have open at once: the server's limit (unlimited if it set none). */
function streamLimit(session: ClientHttp2Session): number {
  return session.remoteSettings.maxConcurrentStreams ?? Number.MAX_SAFE_INTEGER;
}
