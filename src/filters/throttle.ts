/**
 * Two response filters:
 *
 * withCompression (feature gate APIResponseCompression): as Kubernetes 1.23's deferred response writer, a
 * response body over 128 KiB is gzipped (level 1) when the request's Accept-Encoding lists the token 'gzip',
 * with 'Content-Encoding: gzip' and 'Vary: Accept-Encoding'. Long-running requests (watches, logs) are left
 * alone, as Kubernetes streams them through other writers.
 *
 * withConnectionThrottle (--max-connection-bytes-per-sec): the responses of long-running requests are paced
 * to that many bytes per second per connection (an HTTP/1.1 socket or an HTTP/2 session, shared by its
 * streams), with a burst of one second. A throttled write returns false and 'drain' follows once it went
 * out, so writers that honour backpressure (the watch stream) slow down instead of buffering.
 */
import { gzip } from 'node:zlib';
import type { ApiRequest, ApiResponse, Handler } from './authn.js';
import { getRequestInfo, type LongRunningCheck } from './requestinfo.js';

/** Kubernetes' defaultGzipThresholdBytes. */
export const GZIP_THRESHOLD_BYTES = 128 * 1024;

/** negotiateContentEncoding: 'gzip' when a comma-separated token of Accept-Encoding is exactly 'gzip'. */
export function acceptsGzip(req: ApiRequest): boolean {
  const header = req.headers['accept-encoding'];
  if (typeof header !== 'string' || header === '') return false;
  for (const token of header.split(',')) if (token.trim() === 'gzip') return true;
  return false;
}

type End = (chunk?: unknown, encoding?: unknown, cb?: unknown) => ApiResponse;

export function withCompression(next: Handler, deps: { longRunning: LongRunningCheck }): Handler {
  return (req, res) => {
    if (!acceptsGzip(req) || deps.longRunning(req, getRequestInfo(req))) return next(req, res);
    const r = res as unknown as { end: End };
    const end = r.end;
    r.end = function (this: ApiResponse, chunk?: unknown, encoding?: unknown, cb?: unknown): ApiResponse {
      const body = typeof chunk === 'string' || Buffer.isBuffer(chunk) ? chunk : undefined;
      if (body === undefined || res.headersSent || res.getHeader('content-encoding') !== undefined || Buffer.byteLength(body) <= GZIP_THRESHOLD_BYTES) {
        return end.call(res, chunk, encoding, cb);
      }
      r.end = end;
      gzip(body, { level: 1 }, (err, zipped) => {
        if (res.writableEnded || res.destroyed) return;
        if (err) return void end.call(res, chunk, encoding, cb);
        res.setHeader('Content-Encoding', 'gzip');
        const vary = res.getHeader('vary');
        res.setHeader('Vary', vary === undefined ? 'Accept-Encoding' : `${String(vary)}, Accept-Encoding`);
        res.setHeader('Content-Length', zipped.length);
        end.call(res, zipped, typeof cb === 'function' ? cb : typeof encoding === 'function' ? encoding : undefined);
      });
      return res;
    };
    return next(req, res);
  };
}

interface Bucket {
  tokens: number;
  last: number;
}

/** The connection a response goes out on: its HTTP/2 session or HTTP/1.1 socket. */
function connectionOf(req: ApiRequest): object {
  return 'stream' in req && req.stream.session ? req.stream.session : req.socket;
}

type Write = (chunk: unknown, encoding?: unknown, cb?: unknown) => boolean;

export function withConnectionThrottle(next: Handler, deps: { longRunning: LongRunningCheck; bytesPerSecond: number }): Handler {
  const rate = deps.bytesPerSecond;
  const buckets = new WeakMap<object, Bucket>();
  return (req, res) => {
    if (!deps.longRunning(req, getRequestInfo(req))) return next(req, res);
    const conn = connectionOf(req);
    let bucket = buckets.get(conn);
    if (!bucket) {
      bucket = { tokens: rate, last: performance.now() };
      buckets.set(conn, bucket);
    }
    const b = bucket;
    const refill = () => {
      const now = performance.now();
      b.tokens = Math.min(rate, b.tokens + ((now - b.last) / 1000) * rate);
      b.last = now;
    };
    const r = res as unknown as { write: Write; end: End };
    const write = r.write.bind(res);
    const end = r.end.bind(res);
    const pending: { chunk: unknown; args: unknown[]; end: boolean }[] = [];
    let timer: NodeJS.Timeout | undefined;
    const size = (chunk: unknown) => (typeof chunk === 'string' || Buffer.isBuffer(chunk) ? Buffer.byteLength(chunk) : 0);
    // A chunk goes out once the bucket holds its size (at most one second's worth, for larger chunks).
    const affordable = (chunk: unknown) => b.tokens >= Math.min(size(chunk), rate);
    const pump = () => {
      timer = undefined;
      refill();
      while (pending.length > 0 && affordable(pending[0]!.chunk)) {
        const p = pending.shift()!;
        if (res.destroyed) return;
        if (p.end) {
          end(p.chunk, ...p.args);
          return;
        }
        b.tokens -= size(p.chunk);
        write(p.chunk, ...p.args);
      }
      if (pending.length > 0) schedule();
      else res.emit('drain');
    };
    const schedule = () => {
      if (timer || res.destroyed || pending.length === 0) return;
      const need = Math.min(size(pending[0]!.chunk), rate) - b.tokens;
      timer = setTimeout(pump, Math.max(1, Math.ceil((need / rate) * 1000)));
    };
    res.once('close', () => clearTimeout(timer));
    r.write = (chunk, ...args) => {
      refill();
      if (pending.length === 0 && affordable(chunk)) {
        b.tokens -= size(chunk);
        return write(chunk, ...args);
      }
      pending.push({ chunk, args, end: false });
      schedule();
      return false;
    };
    r.end = (chunk?: unknown, ...args: unknown[]) => {
      if (pending.length === 0 && (chunk === undefined || typeof chunk === 'function')) return end(chunk, ...args);
      refill();
      if (pending.length === 0 && affordable(chunk)) {
        b.tokens -= size(chunk);
        return end(chunk, ...args);
      }
      pending.push({ chunk, args, end: true });
      schedule();
      return res;
    };
    return next(req, res);
  };
}
