/**
 * The request deadline and the timeout of non-long-running requests, as Kubernetes' WithRequestDeadline
 * and WithTimeoutForNonLongRunningRequests.
 *
 * withRequestDeadline fixes each non-long-running request's deadline: --request-timeout after it arrived,
 * or the request's own ?timeout= when that is positive and shorter; a malformed ?timeout= is a 400.
 * withTimeoutForNonLongRunningRequests enforces it: when the deadline passes before the handler has
 * written anything, the client gets 504 with the Timeout Status (encoded as Kubernetes' timeout writer
 * does: no kind or apiVersion, Go's sniffed text/plain content type); when the handler had already
 * started its response, the HTTP/2 stream is reset or the HTTP/1.1 connection closed. Either way the
 * handler keeps running, and its later writes are dropped.
 */
import { constants as h2 } from 'node:http2';
import { parseDuration } from '../util/flags.js';
import { asRejection, type ApiRequest, type ApiResponse, type Handler } from '../endpoints/http.js';
import { getRequestInfo, getRequestQuery, type LongRunningCheck } from './requestinfo.js';

export const TIMEOUT_MESSAGE = 'Timeout: request did not complete within the allotted timeout';
const INVALID_TIMEOUT_IN_URL = 'invalid timeout specified in the request URL';

/** On the request under a symbol (cheaper than a WeakMap entry per request). */
const DEADLINE = Symbol('orch.requestDeadline');

/** The request's deadline (ms since the epoch) set by withRequestDeadline; undefined for long-running ones. */
export function getRequestDeadline(req: ApiRequest): number | undefined {
  return (req as { [DEADLINE]?: number })[DEADLINE];
}

export interface RequestDeadlineDeps {
  longRunning: LongRunningCheck;
  /** --request-timeout in ms. */
  requestTimeoutMs: number;
  now?: () => number;
}

function timeoutParam(req: ApiRequest): string {
  const url = req.url ?? '';
  // The query as parsed once for the request (parsedRequest), not parsed again.
  return url.indexOf('?') < 0 ? '' : (getRequestQuery(req).get('timeout') ?? '');
}

function writeBadRequest(res: ApiResponse, message: string): void {
  const body =
    JSON.stringify({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message,
      reason: 'BadRequest',
      code: 400,
    }) + '\n';
  res.statusCode = 400;
  res.setHeader('Content-Type', 'application/json');
  res.setHeader('Content-Length', Buffer.byteLength(body));
  res.end(body);
}

export function withRequestDeadline(next: Handler, deps: RequestDeadlineDeps): Handler {
  const now = deps.now ?? Date.now;
  return (req, res) => {
    if (deps.longRunning(req, getRequestInfo(req))) return next(req, res);
    const started = now();
    let timeout = deps.requestTimeoutMs;
    const raw = timeoutParam(req);
    if (raw !== '') {
      let requested: number;
      try {
        requested = parseDuration(raw);
      } catch (e) {
        return writeBadRequest(res, `${INVALID_TIMEOUT_IN_URL} - time: ${(e as Error).message}`);
      }
      if (requested > 0 && requested < timeout) timeout = requested;
    }
    (req as { [DEADLINE]?: number })[DEADLINE] = started + timeout;
    return next(req, res);
  };
}

export interface TimeoutDeps {
  longRunning: LongRunningCheck;
  now?: () => number;
  /** Told of each request whose deadline passed (for apiserver_request_terminations_total). */
  onTimeout?: (req: ApiRequest) => void;
}

const TIMEOUT_BODY =
  JSON.stringify({ metadata: {}, status: 'Failure', message: TIMEOUT_MESSAGE, reason: 'Timeout', details: {}, code: 504 }) + '\n';

/** Makes every writing method of `res` a no-op, so that a timed-out handler cannot touch the response. */
function silence(res: ApiResponse): void {
  const r = res as unknown as Record<string, unknown>;
  const self = (): ApiResponse => res;
  for (const m of ['setHeader', 'appendHeader', 'removeHeader', 'writeHead', 'flushHeaders', 'addTrailers', 'writeContinue']) r[m] = self;
  r.write = () => true;
  r.end = (...args: unknown[]) => {
    const cb = args.find((a) => typeof a === 'function') as (() => void) | undefined;
    cb?.();
    return res;
  };
}

function abortResponse(res: ApiResponse): void {
  if ('stream' in res) res.stream.close(h2.NGHTTP2_INTERNAL_ERROR);
  else res.destroy();
}

/** Answers a request whose deadline passed: 504 when nothing was written yet, else a reset stream or connection. */
function timeOut(res: ApiResponse, preserved: readonly string[]): void {
  if (res.headersSent) {
    abortResponse(res);
  } else {
    // Headers the handler set are dropped, as Go's timeout writer keeps them aside until written.
    for (const name of res.getHeaderNames()) if (!preserved.includes(name)) res.removeHeader(name);
    res.statusCode = 504;
    res.setHeader('Content-Type', 'text/plain; charset=utf-8');
    res.setHeader('Content-Length', Buffer.byteLength(TIMEOUT_BODY));
    res.end(TIMEOUT_BODY);
  }
  silence(res);
}

/**
 * Resolves when the handler settles or the deadline passes, whichever is first; after a timeout the
 * handler runs on in the background and its failure is ignored.
 */
export function withTimeoutForNonLongRunningRequests(next: Handler, deps: TimeoutDeps): Handler {
  const now = deps.now ?? Date.now;
  return (req, res) => {
    const deadline = getRequestDeadline(req);
    if (deadline === undefined || deps.longRunning(req, getRequestInfo(req))) return next(req, res);
    // Headers set by outer filters before this one survive a timeout.
    const preserved = res.getHeaderNames();
    return new Promise<void>((resolve, reject) => {
      let done = false;
      const timer = setTimeout(
        () => {
          done = true;
          if (!res.writableEnded) {
            deps.onTimeout?.(req);
            timeOut(res, preserved);
          }
          resolve();
        },
        Math.max(0, deadline - now()),
      );
      timer.unref();
      // The handler starts now (the timer is already set); a throw is a rejection as from an async handler.
      let handled: void | Promise<void>;
      try {
        handled = next(req, res);
      } catch (e) {
        handled = asRejection(e);
      }
      Promise.resolve(handled).then(
        () => {
          clearTimeout(timer);
          if (!done) resolve();
        },
        (e: unknown) => {
          clearTimeout(timer);
          if (!done) reject(e instanceof Error ? e : new Error(String(e)));
        },
      );
    });
  };
}
