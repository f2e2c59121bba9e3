/**
 * Graceful shutdown filters, as Kubernetes' WithRetryAfter and WithWaitGroup.
 *
 * withWaitGroup counts in-flight non-long-running requests, so that shutdown can wait for them to drain.
 * withRetryAfter, once the server stops accepting new requests (after --shutdown-delay-duration, with
 * --shutdown-send-retry-after), answers every new request with 429, 'Retry-After: 5' and a closed
 * connection ('Connection: close' for HTTP/1.1, GOAWAY for HTTP/2), except health checks, /metrics and the
 * server's own loopback client; both filters exempt the same requests, so draining cannot wait forever.
 */
import type { ApiRequest, Handler } from './authn.js';
import { closeConnectionAfterResponse, writeHttpError } from './httperror.js';
import { getRequestInfo, type LongRunningCheck } from './requestinfo.js';

export const SHUTTING_DOWN_MESSAGE = 'The apiserver is shutting down, please try again later.';
const EXEMPT_PATH_PREFIXES = ['/readyz', '/livez', '/healthz', '/metrics'];
/** The user agent of the server's own loopback client (kube-apiserver's is 'kube-apiserver/...'). */
const LOOPBACK_USER_AGENT_PREFIX = 'orch-apiserver/';

export function isRequestExemptFromRetryAfter(req: ApiRequest): boolean {
  const ua = req.headers['user-agent'] ?? '';
  if (ua.startsWith(LOOPBACK_USER_AGENT_PREFIX)) return true;
  // The path is the URL up to '?': a prefix of the path is a prefix of the URL that ends before any '?'.
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  for (const p of EXEMPT_PATH_PREFIXES) if (url.startsWith(p) && (q < 0 || q >= p.length)) return true;
  return false;
}

/** In-flight requests and a promise of their draining. */
export class RequestWaitGroup {
  private count = 0;
  private waiters: (() => void)[] = [];

  get inFlight(): number {
    return this.count;
  }

  add(): void {
    this.count++;
  }

  done(): void {
    this.count--;
    if (this.count === 0) for (const w of this.waiters.splice(0)) w();
  }

  /** Resolves once no request is in flight. */
  wait(): Promise<void> {
    return this.count === 0 ? Promise.resolve() : new Promise((resolve) => this.waiters.push(resolve));
  }
}

export function withWaitGroup(next: Handler, deps: { longRunning: LongRunningCheck; group: RequestWaitGroup }): Handler {
  return async (req, res) => {
    if (isRequestExemptFromRetryAfter(req) || deps.longRunning(req, getRequestInfo(req))) return next(req, res);
    deps.group.add();
    try {
      await next(req, res);
    } finally {
      deps.group.done();
    }
  };
}

export function withRetryAfter(next: Handler, deps: { notAcceptingNewRequests: () => boolean }): Handler {
  return (req, res) => {
    if (!deps.notAcceptingNewRequests() || isRequestExemptFromRetryAfter(req)) return next(req, res);
    closeConnectionAfterResponse(res);
    res.setHeader('Retry-After', '5');
    writeHttpError(res, 429, SHUTTING_DOWN_MESSAGE);
  };
}
