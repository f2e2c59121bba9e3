/**
 * Mounts the resource API on a router: discovery (/api, /apis and below), OpenAPI (/openapi/v2, /openapi/v3)
 * and every resource path of the registry's kinds.
 */
import { serveDiscovery, isDiscoveryPath } from './discovery.js';
import { asRejection, type ApiRequest, type ApiResponse, type Handler } from './http.js';
import type * as OpenAPIModule from './openapi.js';
import { parseBoolParam, parsedRequest } from './requestinfo.js';
import { notFoundPath, serveResource, type ResourceDeps } from './resource.js';
import { writeError } from './respond.js';
import type { KindDecl } from '../registry/kind.js';

export interface Mux {
  handle(path: string, handler: Handler): void;
  handlePrefix(prefix: string, handler: Handler): void;
}

export interface ApiDeps extends ResourceDeps {
  /** host:port this server is reached at, for /api's serverAddressByClientCIDRs. */
  serverAddress: () => string;
  /** The server's gitVersion, for OpenAPI info.version. */
  version: string;
  /** The kinds served over HTTP (--runtime-config); default every kind of the registry. */
  servedKinds?: readonly KindDecl[];
  /** The aggregation layer (src/server/aggregator): takes the requests of other servers' group versions first. */
  aggregator?: ApiAggregator;
}

/**
 * What the aggregation layer answers before the local API: the group versions of non-local APIServices (proxied),
 * and the discovery documents that list them (/apis, /apis/<group>). serve() returns false to let the local API answer.
 */
export interface ApiAggregator {
  serve(req: ApiRequest, res: ApiResponse, path: string): boolean | Promise<boolean>;
  /** The extension servers' /openapi/v2 documents, merged into ours (the same array while they are unchanged). */
  openAPIV2Documents?(): readonly Record<string, unknown>[];
}

function split(req: ApiRequest): { path: string; query: URLSearchParams } {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  return { path: q < 0 ? url : url.slice(0, q), query: new URLSearchParams(q < 0 ? '' : url.slice(q + 1)) };
}

function header(req: ApiRequest, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v.join(',') : v;
}

function send(res: ApiResponse, status: number, headers: Record<string, string>, body: string | Buffer, method?: string): void {
  res.statusCode = status;
  for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
  if (status !== 304 && method !== 'HEAD') res.setHeader('Content-Length', Buffer.byteLength(body));
  if (status === 304 || method === 'HEAD') res.end();
  else res.end(body);
}

/** A path whose first segment is `apis` (empty segments skipped, as the aggregator splits paths). */
const APIS_PATH = /^\/*apis(\/|$)/;

export function installApi(mux: Mux, deps: ApiDeps): void {
  const kinds = deps.servedKinds ?? deps.registry.kinds;
  const served = new Set(kinds);
  const json = { mediaType: 'application/json' as const, pretty: false };

  /** The local API: discovery and resources. */
  const local = (req: ApiRequest, res: ApiResponse, path: string, query: URLSearchParams): void | Promise<void> => {
    const method = req.method ?? 'GET';
    if ((method === 'GET' || method === 'HEAD') && isDiscoveryPath(path)) {
      const r = serveDiscovery(kinds, {
        path,
        accept: header(req, 'accept'),
        ifNoneMatch: header(req, 'if-none-match'),
        serverAddress: deps.serverAddress(),
      });
      return send(res, r.status, r.headers, r.body, method);
    }
    const info = parsedRequest(req).info;
    const store = info.isResourceRequest ? deps.registry.store(info.apiGroup, info.apiVersion, info.resource) : undefined;
    if (!store || !served.has(store.decl)) {
      return writeError(res, notFoundPath(), { ...json, pretty: parseBoolParam(query.get('pretty')) ?? false });
    }
    return serveResource(req, res, info, query, deps, store);
  };
  const aggregated = async (req: ApiRequest, res: ApiResponse, path: string, query: URLSearchParams): Promise<void> => {
    if (await deps.aggregator!.serve(req, res, path)) return;
    await local(req, res, path, query);
  };
  // Not async itself (one promise fewer per request); a throw still comes out as a rejection.
  const api: Handler = (req, res) => {
    try {
      const { path, query } = parsedRequest(req);
      // The aggregation layer only ever takes /apis paths (the core group is always local).
      if (deps.aggregator && APIS_PATH.test(path)) return aggregated(req, res, path, query);
      return local(req, res, path, query);
    } catch (e) {
      return asRejection(e);
    }
  };
  mux.handle('/api', api);
  mux.handlePrefix('/api/', api);
  mux.handle('/apis', api);
  mux.handlePrefix('/apis/', api);

  // The OpenAPI builder loads with the first /openapi request (kubectl's first apply or explain), not at startup.
  let openapiModule: Promise<typeof OpenAPIModule> | undefined;
  const openapi: Handler = async (req, res) => {
    const { serveOpenAPI } = await (openapiModule ??= import('./openapi.js'));
    const { path, query } = split(req);
    const r = serveOpenAPI(kinds, deps.registry.definitions, {
      path,
      query,
      accept: header(req, 'accept'),
      ifNoneMatch: header(req, 'if-none-match'),
    }, { version: deps.version }, deps.aggregator?.openAPIV2Documents?.());
    if (!r) return writeError(res, notFoundPath(), json);
    send(res, r.status, r.headers, r.body, req.method);
  };
  mux.handle('/openapi/v2', openapi);
  mux.handle('/openapi/v3', openapi);
  mux.handlePrefix('/openapi/v3/', openapi);
}
