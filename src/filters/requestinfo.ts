/**
 * WithRequestInfo and the long-running check, as Kubernetes' request-info filter and
 * BasicLongRunningRequestCheck: the request info is computed once, outside every filter that needs it
 * (timeout, max-in-flight, wait group), and read through getRequestInfo(req).
 */
import { parsedRequest, type RequestInfo } from '../endpoints/requestinfo.js';
import type { ApiRequest, Handler } from './authn.js';

export type { RequestInfo };

/** The request's info; computed on first use when no withRequestInfo ran (in-process callers, tests). */
export function getRequestInfo(req: ApiRequest): RequestInfo {
  return parsedRequest(req).info;
}

/** The request's query parameters, parsed once with its info (readers must not change them). */
export function getRequestQuery(req: ApiRequest): URLSearchParams {
  return parsedRequest(req).query;
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
