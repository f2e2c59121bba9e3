/**
 * WithRequestInfo and the long-running check, as Kubernetes' request-info filter and
 * BasicLongRunningRequestCheck: the request info is computed once, outside every filter that needs it
 * (timeout, max-in-flight, wait group), and read through getRequestInfo(req).
 */
import { requestInfo, type RequestInfo } from '../endpoints/requestinfo.js';
import type { ApiRequest, Handler } from './authn.js';

export type { RequestInfo };

const infos = new WeakMap<ApiRequest, RequestInfo>();

function pathAndQuery(req: ApiRequest): { path: string; query: URLSearchParams } {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  return q < 0 ? { path: url, query: new URLSearchParams() } : { path: url.slice(0, q), query: new URLSearchParams(url.slice(q + 1)) };
}

/** The request's info; computed on first use when no withRequestInfo ran (in-process callers, tests). */
export function getRequestInfo(req: ApiRequest): RequestInfo {
  let info = infos.get(req);
  if (!info) {
    const { path, query } = pathAndQuery(req);
    info = requestInfo(req.method ?? 'GET', path, query);
    infos.set(req, info);
  }
  return info;
}

/** Computes the request info before `next` runs. */
export function withRequestInfo(next: Handler): Handler {
  return (req, res) => {
    getRequestInfo(req);
    return next(req, res);
  };
}

/** Says whether a request is long-running (watch, exec, logs...): exempt from the timeout and in-flight limits. */
export type LongRunningCheck = (req: ApiRequest, info: RequestInfo) => boolean;

const LONG_RUNNING_VERBS = new Set(['watch', 'proxy']);
const LONG_RUNNING_SUBRESOURCES = new Set(['attach', 'exec', 'proxy', 'log', 'portforward']);

/** kube-apiserver's check: verbs watch and proxy, subresources attach, exec, proxy, log, portforward, and /debug/pprof/. */
export const isLongRunning: LongRunningCheck = (_req, info) => {
  if (LONG_RUNNING_VERBS.has(info.verb)) return true;
  if (info.isResourceRequest && LONG_RUNNING_SUBRESOURCES.has(info.subresource)) return true;
  return !info.isResourceRequest && info.path.startsWith('/debug/pprof/');
};
