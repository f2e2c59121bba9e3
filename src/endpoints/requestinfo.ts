/**
 * What a request is about, read from its method, path and query as Kubernetes' RequestInfoFactory does:
 *
 *   /api/v1/namespaces/{ns}/{resource}/{name}/{subresource}      (core group)
 *   /apis/{group}/{version}/namespaces/{ns}/{resource}/{name}/...  (named groups)
 *   /api/v1/watch/... (deprecated watch paths)
 */
import { tryParseSelector } from '../util/fields.js';

export interface RequestInfo {
  isResourceRequest: boolean;
  path: string;
  /** get, list, watch, create, update, patch, delete, deletecollection; or the lowercased method. */
  verb: string;
  apiPrefix: string;
  apiGroup: string;
  apiVersion: string;
  namespace: string;
  resource: string;
  subresource: string;
  name: string;
  parts: string[];
}

const SPECIAL_VERBS = new Set(['proxy', 'watch']);

/** A request's path, query and RequestInfo, worked out once (see parsedRequest). */
export interface ParsedRequest {
  path: string;
  query: URLSearchParams;
  info: RequestInfo;
}

/**
 * Per-request values live on the request object under symbols, not in WeakMaps keyed by it: a WeakMap entry per
 * request costs an ephemeron table that grows and is rehashed between collections, and GC work per entry.
 */
const PARSED = Symbol('orch.parsedRequest');

/**
 * The request's path, query and info from its method and URL, worked out on first use and shared by the
 * filters (request info, timeouts, limits, metrics, audit) and the API handler. Readers must not change them.
 */
export function parsedRequest(req: { method?: string | undefined; url?: string | undefined }): ParsedRequest {
  let p = (req as { [PARSED]?: ParsedRequest })[PARSED];
  if (!p) {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const query = new URLSearchParams(q < 0 ? '' : url.slice(q + 1));
    p = { path, query, info: requestInfo(req.method ?? 'GET', path, query) };
    (req as { [PARSED]?: ParsedRequest })[PARSED] = p;
  }
  return p;
}

/** Go's strconv.ParseBool, which Kubernetes uses for boolean query parameters. */
export function parseBoolParam(v: string | null | undefined): boolean | undefined {
  if (v === null || v === undefined) return undefined;
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(v)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False', ''].includes(v)) return false;
  return undefined;
}

/** The name a field selector requires exactly (metadata.name=x), when it is a valid path segment; else ''. */
function selectedName(selector: string | null): string {
  if (!selector) return '';
  const parsed = tryParseSelector(selector);
  if (parsed instanceof Error) return '';
  const name = parsed.requiresExactMatch('metadata.name');
  if (name === undefined || name === '.' || name === '..' || name.includes('/') || name.includes('%')) return '';
  return name;
}

export function requestInfo(method: string, path: string, query: URLSearchParams): RequestInfo {
  const info: RequestInfo = {
    isResourceRequest: false,
    path,
    verb: method.toLowerCase(),
    apiPrefix: '',
    apiGroup: '',
    apiVersion: '',
    namespace: '',
    resource: '',
    subresource: '',
    name: '',
    parts: [],
  };
  // The path less its leading and trailing slashes, split; `at` is where the unread segments start.
  let from = 0;
  let to = path.length;
  while (from < to && path.charCodeAt(from) === 0x2f) from++;
  while (to > from && path.charCodeAt(to - 1) === 0x2f) to--;
  const all = (from === 0 && to === path.length ? path : path.slice(from, to)).split('/');
  if (all.length < 3 || (all[0] !== 'api' && all[0] !== 'apis')) return info;
  info.apiPrefix = all[0];
  let at = 1;
  if (info.apiPrefix === 'apis') {
    if (all.length - at < 3) return info;
    info.apiGroup = all[at++]!;
  }
  info.apiVersion = all[at++]!;
  if (at === all.length) return info;
  info.isResourceRequest = true;
  if (SPECIAL_VERBS.has(all[at]!)) {
    if (all.length - at < 2) return { ...info, isResourceRequest: false };
    info.verb = all[at++]!;
  } else {
    switch (method) {
      case 'POST':
        info.verb = 'create';
        break;
      case 'GET':
      case 'HEAD':
        info.verb = 'get';
        break;
      case 'PUT':
        info.verb = 'update';
        break;
      case 'PATCH':
        info.verb = 'patch';
        break;
      case 'DELETE':
        info.verb = 'delete';
        break;
      default:
        info.verb = '';
    }
  }
  if (all[at] === 'namespaces') {
    if (all.length - at > 1) {
      info.namespace = all[at + 1]!;
      // /namespaces/{name}/{subresource} of the namespace itself, e.g. /namespaces/foo/status.
      if (all.length - at > 2 && all[at + 2] !== 'status' && all[at + 2] !== 'finalize') at += 2;
    }
  }
  const parts = at === 0 ? all : all.slice(at);
  info.parts = parts;
  if (parts.length >= 3) info.subresource = parts[2]!;
  if (parts.length >= 2) info.name = parts[1]!;
  if (parts.length >= 1) info.resource = parts[0]!;
  // Only a proxy subresource takes a path after it (nodes/{name}/proxy/{path}); deeper paths are not resources.
  if (parts.length >= 4 && parts[2] !== 'proxy') info.isResourceRequest = false;
  // A GET of a collection is a list, or a watch with ?watch=true; a metadata.name field selector names the
  // object (so that authorizers can allow a list or watch of one object).
  if (info.name === '' && info.verb === 'get') {
    info.verb = parseBoolParam(query.get('watch')) ? 'watch' : 'list';
    info.name = selectedName(query.get('fieldSelector'));
  }
  if (info.name === '' && info.verb === 'delete') info.verb = 'deletecollection';
  return info;
}
