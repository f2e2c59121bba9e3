/**
 * The generic handler of proxy subresources (kind.ts `proxy`: nodes/proxy, pods/proxy, services/proxy), as
 * Kubernetes 1.23's ProxyREST connecters with the UpgradeAwareHandler and its rewriting transport do it:
 *
 * - the path after `<name>/proxy` (with a leading slash, and the request's trailing slash) is the connect
 *   options' `path`, admitted as a CONNECT, then joined to the location the declaration finds;
 * - an empty path is answered with a 301 to the request's path plus '/';
 * - an upgrade request (WebSocket, SPDY) is proxied as an upgraded connection;
 * - otherwise the method, query, headers (less hop-by-hop ones; X-Forwarded-For and X-Forwarded-Uri added)
 *   and body go to the backend, and its status, headers (less hop-by-hop and CORS ones; a same-host Location
 *   rewritten under the proxy path) and body come back;
 * - a backend that cannot be reached is a 503 "error trying to reach service: ...".
 *
 * A location on a node agent (`agent`) is reached with the agent transport (its CA, the server's client
 * certificate); others (pods, service endpoints) over plain HTTP, or HTTPS without verifying the backend.
 * Unlike Kubernetes, links in proxied HTML pages are not rewritten.
 */
import { request as httpRequest, type IncomingMessage, type OutgoingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { posix } from 'node:path';
import { apiErrors, StatusError } from '../registry/errors.js';
import { viaDialer } from '../util/dial.js';
import { apiVersionOf, type ConnectorSubresource, type KObject, type SubresourceContext } from '../registry/kind.js';
import type { AgentTransport } from './connect.js';
import type { ApiRequest, ApiResponse } from './http.js';
import { parsedRequest } from './requestinfo.js';
import { isUpgradeRequest, proxyUpgrade, upgradeConnection } from './streaming.js';

const HOP_BY_HOP = new Set(['connection', 'proxy-connection', 'keep-alive', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'http2-settings']);
const CORS = new Set(['access-control-allow-credentials', 'access-control-allow-headers', 'access-control-allow-methods', 'access-control-allow-origin']);

/** Go's path.Join of two parts, keeping the second's trailing slash (net.JoinPreservingTrailingSlash); '' for nothing. */
function joinPath(base: string, p: string): string {
  if (base === '' && p === '') return '';
  const joined = posix.join(base === '' ? '' : base, p);
  const clean = joined === '.' ? '' : joined.length > 1 && joined.endsWith('/') ? joined.slice(0, -1) : joined;
  return p.endsWith('/') && !clean.endsWith('/') ? `${clean}/` : clean;
}

/** A connection error as Go's dialer words it, where Node's differs. */
function dialMessage(err: NodeJS.ErrnoException, url: URL): string {
  const host = `${url.hostname}:${url.port || (url.protocol === 'https:' ? '443' : '80')}`;
  if (err.code === 'ECONNREFUSED') return `dial tcp ${host}: connect: connection refused`;
  if (err.code === 'EHOSTUNREACH') return `dial tcp ${host}: connect: no route to host`;
  if (err.code === 'ETIMEDOUT') return `dial tcp ${host}: i/o timeout`;
  return err.message;
}

/** The Location a backend redirects to, under the proxy path when it is on the backend's own host (Kubernetes' rewriteURL). */
function rewriteLocation(location: string, target: URL, requestHost: string, prepend: string): string {
  let u: URL;
  try {
    u = new URL(location, target);
  } catch {
    return location;
  }
  if (u.host !== '' && u.host !== target.host && u.host !== requestHost) return location;
  if (u.pathname.startsWith(prepend)) return `${u.pathname}${u.search}${u.hash}`;
  return `${joinPath(prepend, u.pathname)}${u.search}${u.hash}`;
}

/** Serves a request to a proxy subresource; `rest` is the raw path after `<name>/<sub>/` ('' for none). */
export async function serveProxy(
  req: ApiRequest,
  res: ApiResponse,
  connector: ConnectorSubresource,
  ctx: SubresourceContext,
  name: string,
  sub: string,
  rest: string,
  transport: AgentTransport,
): Promise<void> {
  const { path: requestPath, query } = parsedRequest(req);
  const trailing = requestPath.endsWith('/');
  let path = rest === '' ? '' : `/${rest}`;
  if (trailing && !path.endsWith('/')) path += '/';
  const decl = ctx.store.decl;
  const options: KObject = { kind: connector.options?.kind ?? `${decl.kind}ProxyOptions`, apiVersion: apiVersionOf(decl), ...(path !== '' ? { path } : {}) };
  await ctx.store.admitConnect(ctx.scope, name, sub, options);
  path = typeof options['path'] === 'string' ? options['path'] : '';
  const loc = await connector.location(ctx, name, query);
  if (!loc) throw apiErrors.internal(`${name} has nowhere to proxy to`);
  const base = loc.url;
  let locPath = joinPath(base.pathname === '/' ? '' : base.pathname, path);
  if (trailing && !locPath.endsWith('/')) locPath += '/';
  const rawQuery = query.toString() === '' ? '' : (req.url ?? '').slice((req.url ?? '').indexOf('?') + 1);
  const target = new URL(`${base.protocol}//${base.host}${locPath || '/'}${rawQuery ? `?${rawQuery}` : ''}`);
  const agentOpts = loc.agent ? transport : { ...(transport.dial ? { dial: transport.dial } : {}) };
  const conn = upgradeConnection(req);
  if (isUpgradeRequest(req) && conn) return proxyUpgrade(req, res, conn, target, agentOpts);
  if (locPath === '') {
    res.statusCode = 301;
    res.setHeader('Location', `${requestPath}/${rawQuery ? `?${rawQuery}` : ''}`);
    res.end();
    return;
  }
  const requestHost = String(req.headers['host'] ?? req.headers[':authority'] ?? '');
  const headers: OutgoingHttpHeaders = {};
  for (const [k, v] of Object.entries(req.headers)) {
    if (v === undefined || k.startsWith(':') || HOP_BY_HOP.has(k) || k === 'authorization' || k.startsWith('impersonate-')) continue;
    headers[k] = v;
  }
  if (requestHost !== '') headers['host'] = requestHost;
  const client = req.socket?.remoteAddress;
  if (client) headers['x-forwarded-for'] = headers['x-forwarded-for'] ? `${String(headers['x-forwarded-for'])}, ${client}` : client;
  headers['x-forwarded-uri'] = joinPath('', requestPath) + (trailing && requestPath !== '/' ? '/' : '');
  const prependSuffix = trailing && !locPath.endsWith('/') ? `${locPath}/` : locPath;
  const prepend = requestPath.endsWith(prependSuffix) ? requestPath.slice(0, requestPath.length - prependSuffix.length) : requestPath;

  const https = target.protocol === 'https:';
  const tls = loc.agent
    ? {
        rejectUnauthorized: transport.ca !== undefined,
        ...(transport.ca !== undefined ? { ca: transport.ca } : {}),
        ...(transport.cert !== undefined ? { cert: transport.cert } : {}),
        ...(transport.key !== undefined ? { key: transport.key } : {}),
      }
    : { rejectUnauthorized: false };
  // Through the cluster egress (--egress-selector-config-file) when there is one, as Kubernetes' proxy transport dials.
  const via = transport.dial ? { createConnection: viaDialer(transport.dial, https) as never } : { agent: false as const };
  const method = req.method ?? 'GET';
  const upstream = await new Promise<IncomingMessage>((resolve, reject) => {
    const r = https ? httpsRequest(target, { method, headers, ...via, ...tls }, resolve) : httpRequest(target, { method, headers, ...via }, resolve);
    r.on('error', (err: NodeJS.ErrnoException) => reject(apiErrors.serviceUnavailable(`error trying to reach service: ${dialMessage(err, target)}`)));
    res.on('close', () => {
      if (!res.writableFinished) r.destroy();
    });
    if (method === 'GET' || method === 'HEAD' || method === 'OPTIONS' || method === 'DELETE' ? req.headers['content-length'] === undefined && req.headers['transfer-encoding'] === undefined : false) r.end();
    else (req as unknown as NodeJS.ReadableStream).pipe(r);
  });
  res.statusCode = upstream.statusCode ?? 502;
  for (const [k, v] of Object.entries(upstream.headers)) {
    if (v === undefined || HOP_BY_HOP.has(k) || CORS.has(k)) continue;
    if (k === 'location' && typeof v === 'string') res.setHeader(k, rewriteLocation(v, target, requestHost, prepend));
    else res.setHeader(k, v);
  }
  res.on('close', () => upstream.destroy());
  try {
    for await (const chunk of upstream) {
      const out = res as unknown as NodeJS.WritableStream & { once(event: 'drain', f: () => void): void };
      if (!out.write(chunk as Buffer)) await new Promise<void>((r) => out.once('drain', r));
    }
  } catch (err) {
    if (err instanceof StatusError) throw err;
  }
  res.end();
}
