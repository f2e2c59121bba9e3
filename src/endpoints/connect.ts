/**
 * The generic handlers of a kind's action and connector subresources (kind.ts): an action decodes its body
 * as one of its declared body kinds and calls the declaration; a connector asks the declaration where the
 * answer lives and streams it back from there (pods/log from the node agent) over HTTPS, verifying the
 * agent's certificate only when a CA is configured, and presenting a client certificate when one is.
 * A connector that requires an upgrade (exec, attach, portforward) has its upgraded connection proxied
 * to the location (streaming.ts). A connector with connect options (Kubernetes' Connecters) first has its
 * options object admitted as a CONNECT (AlwaysDeny, the admission webhooks).
 */
import { request as httpsRequest } from 'node:https';
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import { connect as tlsConnect } from '../util/node-tls.js';
import { apiErrors, StatusError } from '../registry/errors.js';
import { apiVersionOf, type ActionSubresource, type ConnectorSubresource, type KObject, type KindDecl, type SubresourceContext } from '../registry/kind.js';
import { cannotBeHandledMessage, checkFields, parseBody } from '../registry/decode.js';
import { REF_PREFIX, type Definitions } from '../registry/schema.js';
import { canEncodeProtobuf, decodeKubernetesProtobuf } from '../registry/protobuf.js';
import type { Dialer } from '../util/dial.js';
import { bodyFormat, readBody } from './body.js';
import type { ApiRequest, ApiResponse } from './http.js';
import { isUpgradeRequest, proxyUpgrade, upgradeConnection } from './streaming.js';

/** How the server reaches node agents (--orchlet-certificate-authority, --orchlet-client-certificate/key, --orchlet-timeout). */
export interface AgentTransport {
  ca?: string | Buffer;
  cert?: string | Buffer;
  key?: string | Buffer;
  /** Time to wait for the agent to answer (headers), in ms. */
  timeoutMs?: number;
  /** The cluster egress (--egress-selector-config-file): opens the TCP connection to the agent, e.g. through an HTTP CONNECT proxy. */
  dial?: Dialer;
}

/** Decodes an action's body as one of its body kinds (a body without apiVersion and kind is the first). */
export async function decodeActionBody(req: ApiRequest, action: ActionSubresource, defs: Definitions): Promise<KObject> {
  const format = bodyFormat(req);
  const first = action.bodyKinds[0]!;
  const body = await readBody(req);
  if (format === 'protobuf') return decodeActionProtobuf(body, action);
  const parsed = parseBody(body, format, first.kind);
  if (parsed.value === null || typeof parsed.value !== 'object' || Array.isArray(parsed.value)) {
    throw apiErrors.badRequest(`the body of the request must be a ${first.kind} object`);
  }
  const raw = parsed.value as KObject;
  const apiVersion = typeof raw.apiVersion === 'string' && raw.apiVersion !== '' ? raw.apiVersion : apiVersionOf(first);
  const kind = typeof raw.kind === 'string' && raw.kind !== '' ? raw.kind : first.kind;
  const bk = action.bodyKinds.find((b) => apiVersionOf(b) === apiVersion && b.kind === kind);
  if (!bk) {
    throw apiErrors.badRequest(
      `${kind} in version ${JSON.stringify(apiVersion.split('/').pop())} cannot be handled as a ${first.kind}: no kind ${JSON.stringify(kind)} is registered for version ${JSON.stringify(apiVersion)} in scheme "k8s.io/kubernetes/pkg/api/legacyscheme/scheme.go:30"`,
    );
  }
  const checked = checkFields(raw, { $ref: REF_PREFIX + bk.definition }, defs, parsed);
  if (checked.decodeError !== undefined) throw apiErrors.badRequest(cannotBeHandledMessage(bk.kind, bk.version, bk.kind, checked.decodeError));
  return { ...(checked.pruned as KObject), apiVersion, kind };
}

/** A protobuf body: one of the action's body kinds that has a protobuf descriptor. */
function decodeActionProtobuf(body: Buffer, action: ActionSubresource): KObject {
  const first = action.bodyKinds[0]!;
  if (!action.bodyKinds.some((b) => canEncodeProtobuf(apiVersionOf(b), b.kind))) {
    throw apiErrors.unsupportedMediaType(`the body of the request was in an unknown format - accepted media types include: application/json, application/yaml`);
  }
  const obj = decodeKubernetesProtobuf(body, action.bodyKinds.length === 1 ? { apiVersion: apiVersionOf(first), kind: first.kind } : undefined) as KObject;
  if (!action.bodyKinds.some((b) => apiVersionOf(b) === obj.apiVersion && b.kind === obj.kind)) {
    throw apiErrors.badRequest(`the object provided is unrecognized (must be of type ${first.kind}): ${String(obj.kind)}`);
  }
  return obj;
}

/** Kubernetes' generic response checker: an agent's error answer as a Status. */
function agentError(res: IncomingMessage, text: string, decl: KindDecl, sub: string, name: string): StatusError {
  const code = res.statusCode ?? 500;
  if (code === 500) return apiErrors.internal(text);
  if (code === 400) return apiErrors.badRequest(text);
  const reason = code === 404 ? 'NotFound' : code === 403 ? 'Forbidden' : code === 401 ? 'Unauthorized' : '';
  return new StatusError({
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: text || `the server responded with the status code ${code} but did not return more information (${decl.resource}/${sub} ${name})`,
    ...(reason ? { reason } : {}),
    details: { name, kind: `${decl.resource}/${sub}` },
    code,
  });
}

/**
 * Streams what a connector's location answers. Errors before the first byte are thrown (a Status);
 * after it, the stream ends. Ends the upstream request when the client goes away.
 */
export async function serveConnector(
  req: ApiRequest,
  res: ApiResponse,
  connector: ConnectorSubresource,
  ctx: SubresourceContext,
  name: string,
  sub: string,
  query: URLSearchParams,
  transport: AgentTransport,
): Promise<void> {
  if (connector.connectOptions) {
    // Kubernetes' ConnectResource: the options decoded, admitted as a CONNECT, then handed to the connector.
    const options = connector.connectOptions.decode(query);
    await ctx.store.admitConnect(ctx.scope, name, sub, options);
    query = connector.connectOptions.encode(options);
  }
  if (connector.upgradeRequired) return serveUpgradeConnector(req, res, connector, ctx, name, query, transport);
  const loc = await connector.location(ctx, name, query);
  if (!loc) {
    res.statusCode = 200;
    res.setHeader('Content-Type', 'text/plain');
    res.end();
    return;
  }
  const tunnel = transport.dial
    ? await transport.dial(loc.url.hostname.replace(/^\[|\]$/g, ''), Number(loc.url.port || 443)).catch((err: Error) => {
        throw apiErrors.internal(`Get ${JSON.stringify(loc.url.toString())}: ${err.message}`);
      })
    : undefined;
  const upstream = await new Promise<IncomingMessage>((resolve, reject) => {
    const r = httpsRequest(
      loc.url,
      {
        method: 'GET',
        // Through the egress tunnel: TLS to the agent over the proxied connection (no agent, or Node ignores it).
        ...(tunnel
          ? { createConnection: (opts: object) => tlsConnect({ ...opts, socket: tunnel, ...(isIP(loc.url.hostname) ? {} : { servername: loc.url.hostname }) }) }
          : { agent: false }),
        rejectUnauthorized: transport.ca !== undefined,
        ...(transport.ca !== undefined ? { ca: transport.ca } : {}),
        ...(transport.cert !== undefined ? { cert: transport.cert } : {}),
        ...(transport.key !== undefined ? { key: transport.key } : {}),
      },
      resolve,
    );
    const timer = setTimeout(() => r.destroy(new Error('timeout awaiting response headers')), transport.timeoutMs ?? 30_000);
    r.on('response', () => clearTimeout(timer));
    r.on('error', (err) => {
      clearTimeout(timer);
      reject(apiErrors.internal(`Get ${JSON.stringify(loc.url.toString())}: ${err.message}`));
    });
    req.on('close', () => r.destroy());
    r.end();
  });
  const code = upstream.statusCode ?? 500;
  if (code < 200 || code > 206) {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const c of upstream) {
      chunks.push(c as Buffer);
      size += (c as Buffer).length;
      if (size > 50_000) break;
    }
    throw agentError(upstream, Buffer.concat(chunks).toString('utf8').slice(0, 50_000).trim(), ctx.store.decl, sub, name);
  }
  res.statusCode = 200;
  res.setHeader('Content-Type', loc.contentType);
  (res as { flushHeaders?: () => void }).flushHeaders?.();
  const out = res as unknown as NodeJS.WritableStream & { once(event: 'drain', f: () => void): void };
  res.on('close', () => upstream.destroy());
  for await (const chunk of upstream) {
    if (!out.write(chunk as Buffer)) await new Promise<void>((r) => out.once('drain', r));
  }
  res.end();
}

/**
 * A connector that requires an upgrade: the location is checked first (its errors are the answer), then a
 * request without an Upgrade header gets 400 "Upgrade request required", and an upgrade is proxied.
 */
async function serveUpgradeConnector(
  req: ApiRequest,
  res: ApiResponse,
  connector: ConnectorSubresource,
  ctx: SubresourceContext,
  name: string,
  query: URLSearchParams,
  transport: AgentTransport,
): Promise<void> {
  const loc = await connector.location(ctx, name, query);
  const conn = upgradeConnection(req);
  if (!isUpgradeRequest(req) || !conn) throw apiErrors.badRequest('Upgrade request required');
  if (!loc) throw apiErrors.internal(`${name} has nowhere to connect to`);
  await proxyUpgrade(req, res, conn, loc.url, transport);
}
