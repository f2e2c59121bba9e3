/**
 * Request instrumentation, as Kubernetes' endpoint metrics (InstrumentRouteFunc and the in-flight
 * watermarks): every request that gets past authentication and the in-flight limits is counted with its
 * reported verb, dry-run value, group, version, resource, subresource, scope, component and code, and
 * timed; requests in flight are counted per kind (readOnly, mutating); long-running ones (watches, logs)
 * and watches are gauged while they last. The figures go to a RequestMetricsSink (the server's metrics).
 *
 * Per-request cost is a clock read, a request-info lookup and, at the end, one call to the sink.
 */
import type { ApiRequest, Handler } from './authn.js';
import { getRequestInfo, type LongRunningCheck, type RequestInfo } from './requestinfo.js';

export type RequestKind = 'readOnly' | 'mutating';

export interface RequestMetricsSink {
  /** A non-long-running request of `kind` starts (+1) or ends (-1). */
  inflight(kind: RequestKind, delta: 1 | -1): void;
  /** A long-running request starts (+1) or ends (-1); `watchKind` is set for watches of a served resource. */
  longRunning(verb: string, info: RequestInfo, delta: 1 | -1): void;
  /** A finished request; `seconds` from when it reached the filter. */
  observe(verb: string, dryRun: string, info: RequestInfo, code: number, seconds: number): void;
  /** Whether a request belongs in the request metrics (a served resource, or an instrumented path). */
  recorded(info: RequestInfo): boolean;
  /** The size of an answer (its Content-Length), for GET and LIST. */
  observeSize?(verb: string, info: RequestInfo, bytes: number): void;
  /**
   * A request the server ended in self-defense (apiserver_request_terminations_total): 429 from the
   * in-flight limits (then also a dropped request of `kind`, counted in apiserver_request_total), 504 on timeout.
   */
  terminated?(verb: string, dryRun: string, info: RequestInfo, code: number, kind?: RequestKind): void;
}

/** Records a terminated request on the sink (a no-op for requests outside the request metrics). */
export function recordTermination(sink: RequestMetricsSink, req: ApiRequest, code: number, kind?: RequestKind): void {
  const info = getRequestInfo(req);
  if (!sink.terminated || !sink.recorded(info)) return;
  sink.terminated(reportedVerb(req, info), dryRunLabel(req), info, code, kind);
}

const READ_ONLY_VERBS = new Set(['get', 'list', 'watch']);
const VERBS: Record<string, string> = {
  get: 'GET',
  list: 'LIST',
  watch: 'WATCH',
  create: 'POST',
  update: 'PUT',
  patch: 'PATCH',
  delete: 'DELETE',
  deletecollection: 'DELETECOLLECTION',
  proxy: 'PROXY',
};
const CONNECT_SUBRESOURCES = new Set(['exec', 'attach', 'portforward', 'proxy']);
const VALID_METHODS = new Set(['APPLY', 'CONNECT', 'CREATE', 'DELETE', 'DELETECOLLECTION', 'GET', 'LIST', 'PATCH', 'POST', 'PROXY', 'PUT', 'UPDATE', 'WATCH']);

/** The verb Kubernetes reports (cleanVerb): upper case, APPLY for apply patches, 'other' for unknown methods. */
export function reportedVerb(req: ApiRequest, info: RequestInfo): string {
  let verb: string;
  if (info.isResourceRequest) {
    verb = CONNECT_SUBRESOURCES.has(info.subresource) ? 'CONNECT' : (VERBS[info.verb] ?? info.verb.toUpperCase());
    if (verb === 'PATCH' && req.headers['content-type'] === 'application/apply-patch+yaml') verb = 'APPLY';
  } else {
    verb = (req.method ?? 'GET').toUpperCase();
  }
  return VALID_METHODS.has(verb) ? verb : 'other';
}

/** cleanDryRun: the sorted, de-duplicated dryRun values joined by ','; 'invalid' for values other than All. */
export function dryRunLabel(req: ApiRequest): string {
  const url = req.url ?? '';
  if (!url.includes('dryRun=')) return '';
  const values = new URLSearchParams(url.slice(url.indexOf('?') + 1)).getAll('dryRun');
  for (const v of values) if (v !== 'All') return 'invalid';
  return [...new Set(values)].sort().join(',');
}

export function withRequestMetrics(next: Handler, deps: { sink: RequestMetricsSink; longRunning: LongRunningCheck }): Handler {
  const { sink } = deps;
  return async (req, res) => {
    const info = getRequestInfo(req);
    if (!sink.recorded(info)) return next(req, res);
    const started = performance.now();
    const verb = reportedVerb(req, info);
    const long = deps.longRunning(req, info);
    const kind: RequestKind = READ_ONLY_VERBS.has(info.verb) ? 'readOnly' : 'mutating';
    if (long) sink.longRunning(verb, info, 1);
    else sink.inflight(kind, 1);
    try {
      await next(req, res);
    } finally {
      if (long) sink.longRunning(verb, info, -1);
      else sink.inflight(kind, -1);
      sink.observe(verb, dryRunLabel(req), info, res.statusCode, (performance.now() - started) / 1000);
      if (verb === 'GET' || verb === 'LIST') {
        const length = res.getHeader('content-length');
        if (length !== undefined) sink.observeSize?.(verb, info, Number(length));
      }
    }
  };
}
