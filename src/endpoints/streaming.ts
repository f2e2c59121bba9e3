/**
 * Upgraded connections (kubectl exec, attach, port-forward: SPDY/3.1 or WebSocket over HTTP/1.1), as
 * Kubernetes' UpgradeAwareHandler passes them through: the server does not speak the streaming protocols,
 * it forwards the client's upgrade request to the node agent and, once the agent switches protocols,
 * copies bytes both ways until either side closes.
 *
 * The listener (src/server/server.ts) hands every HTTP/1.1 request with an Upgrade header to the handler
 * chain with a response bound to the raw socket, and records the socket here (registerUpgrade); filters
 * answer such requests as any other (401, 403, 429 ...). A connector that requires an upgrade takes the
 * socket over (proxyUpgrade); anything else that answers through the response ends the connection after.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { apiErrors, StatusError } from '../registry/errors.js';
import { dialUpgrade, readAll, splice, type DialResult } from '../util/upgrade.js';
import { viaDialer, type Dialer } from '../util/dial.js';
import type { ApiRequest, ApiResponse } from './http.js';

/** The raw connection of an HTTP/1.1 upgrade request, and the bytes read past its head. */
export interface UpgradeConnection {
  socket: Duplex;
  head: Buffer;
  /** Set once a handler took the socket over; the listener then leaves it alone. */
  hijacked: boolean;
}

const upgrades = new WeakMap<ApiRequest, UpgradeConnection>();

/** Records the socket of an upgrade request; for the listener, before the handler chain runs. */
export function registerUpgrade(req: ApiRequest, socket: Duplex, head: Buffer): UpgradeConnection {
  const conn: UpgradeConnection = { socket, head, hijacked: false };
  upgrades.set(req, conn);
  return conn;
}

/** The upgrade connection of a request, when the client asked for an upgrade over HTTP/1.1. */
export function upgradeConnection(req: ApiRequest): UpgradeConnection | undefined {
  return upgrades.get(req);
}

/** httpstream.IsUpgradeRequest: a Connection header naming "upgrade". */
export function isUpgradeRequest(req: ApiRequest): boolean {
  const c = req.headers['connection'];
  const values = Array.isArray(c) ? c : typeof c === 'string' ? [c] : [];
  return values.some((v: string) => v.split(',').some((t: string) => t.trim().toLowerCase() === 'upgrade'));
}

/** How the server reaches the agent: its CA (verification only when set), client certificate, header timeout. */
export interface UpgradeTransport {
  ca?: string | Buffer;
  cert?: string | Buffer;
  key?: string | Buffer;
  timeoutMs?: number;
  /** The cluster egress (--egress-selector-config-file): opens the connection to the agent. */
  dial?: Dialer;
}

/** Request headers that stay with the server: its own credentials, hop-by-hop proxy headers, impersonation. */
function forwardedHeaders(req: ApiRequest, host: string): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(req.headers)) {
    if (v === undefined) continue;
    const key = k.toLowerCase();
    if (key === 'host' || key === 'authorization' || key.startsWith('impersonate-') || key.startsWith('proxy-') || key.startsWith(':')) continue;
    out[k] = v;
  }
  const remote = req.socket?.remoteAddress;
  if (remote) {
    const prior = req.headers['x-forwarded-for'];
    out['x-forwarded-for'] = prior ? `${Array.isArray(prior) ? prior.join(', ') : prior}, ${remote}` : remote;
  }
  out['host'] = host;
  return out;
}

/**
 * Forwards the client's upgrade request to `url` (the agent) and, when the agent switches protocols,
 * splices the two connections; resolves when the tunnel closes. When the agent answers without switching,
 * its answer (status, headers, body) goes back to the client as it is, which is what makes clients fall
 * back (kubectl 1.30+ tries WebSocket first and falls back to SPDY on any answer other than 101). Errors
 * before anything was sent are thrown as a Status (500 "error dialing backend: ...").
 */
export async function proxyUpgrade(req: ApiRequest, res: ApiResponse, conn: UpgradeConnection, url: URL, transport: UpgradeTransport): Promise<void> {
  const gone = new AbortController();
  const onClose = (): void => gone.abort();
  conn.socket.once('close', onClose);
  let answer: DialResult;
  try {
    answer = await dialUpgrade(url, {
      method: req.method ?? 'GET',
      headers: forwardedHeaders(req, url.host),
      ...(transport.ca !== undefined ? { ca: transport.ca } : {}),
      ...(transport.cert !== undefined ? { cert: transport.cert } : {}),
      ...(transport.key !== undefined ? { key: transport.key } : {}),
      ...(transport.timeoutMs !== undefined ? { timeoutMs: transport.timeoutMs } : {}),
      ...(transport.dial ? { createConnection: viaDialer(transport.dial, url.protocol === 'https:') } : {}),
      signal: gone.signal,
    });
  } catch (err) {
    throw err instanceof StatusError ? err : apiErrors.internal(`error dialing backend: ${(err as Error).message}`);
  } finally {
    conn.socket.off('close', onClose);
  }
  if (!answer.upgraded) return relayAnswer(res, answer.response);
  conn.hijacked = true;
  const client = conn.socket;
  // The 101 goes out through the response, so that filters see it (audit's ResponseStarted, metrics' code),
  // with the agent's headers as it sent them (a flat name, value list keeps repeated names); from then on
  // the tunnel owns the socket.
  (res as ServerResponse).writeHead(101, answer.response.statusMessage || 'Switching Protocols', answer.response.rawHeaders);
  res.end();
  if (!res.writableFinished) await new Promise<void>((resolve) => res.once('finish', () => resolve()));
  (res as ServerResponse).detachSocket?.(client as never);
  if (answer.head.length > 0) client.write(answer.head);
  if (conn.head.length > 0) answer.socket.write(conn.head);
  await splice(client, answer.socket);
}

/** The agent's non-101 answer, passed on as it is. */
async function relayAnswer(res: ApiResponse, upstream: IncomingMessage): Promise<void> {
  res.statusCode = upstream.statusCode ?? 502;
  for (const [k, v] of Object.entries(upstream.headers)) {
    if (v === undefined || ['connection', 'transfer-encoding', 'keep-alive', 'content-length'].includes(k)) continue;
    res.setHeader(k, v);
  }
  const body = await readAll(upstream);
  res.setHeader('content-length', body.length);
  res.end(body);
}
