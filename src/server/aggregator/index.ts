/**
 * The aggregation layer, as kube-aggregator 1.23 puts it in front of kube-apiserver:
 *   - APIServices (apiregistration.k8s.io/v1) name the server of each group version; a local one (no
 *     spec.service) is served by this server, the others' requests are proxied to their Service;
 *   - requests under /apis/<group>/<version> of a non-local APIService are proxied after authentication and
 *     authorization (the handler chain ran), to the Service's cluster IP (ExternalName: its external name) at
 *     spec.service.port, or with --enable-aggregator-routing to one of its Endpoints' addresses; over TLS
 *     verified with spec.caBundle (server name <service>.<namespace>.svc) unless insecureSkipTLSVerify, with
 *     --proxy-client-cert-file/--proxy-client-key-file as the client certificate and the user in the
 *     front-proxy headers X-Remote-User, X-Remote-Group and X-Remote-Extra-<key> (the Authorization header
 *     is not passed on); an APIService that is not Available answers 503 'service unavailable';
 *   - discovery: /apis lists the non-local groups too, /apis/<group> of such a group is answered here, and the
 *     aggregated /apis document (apidiscovery.k8s.io) carries their resources, from the extension servers' own
 *     /apis/<group>/<version> documents (fetched by the availability controller).
 */
import { createHash } from 'node:crypto';
import { request as httpsRequest, type RequestOptions } from 'node:https';
import type { IncomingHttpHeaders } from 'node:http';
import { isIP } from 'node:net';
import {
  aggregatedDiscovery,
  apiGroupList,
  compareKubeAwareVersions,
  negotiateDiscovery,
  negotiateLegacyDiscovery,
  type APIGroup,
  type APIResource,
  type APIResourceList,
} from '../../endpoints/discovery.js';
import type { ApiAggregator } from '../../endpoints/api.js';
import { getUser, type ApiRequest, type ApiResponse } from '../../endpoints/http.js';
import type { KObject, KindDecl } from '../../registry/kind.js';
import { APIREGISTRATION_GROUP, availableCondition } from '../../registry/kinds/apiregistration/index.js';
import type { Registry } from '../../registry/registry.js';
import { isLoopbackService, type ServiceAddress } from '../../registry/service-resolver.js';
import { currentSpanContext, formatTraceparent } from '../../util/tracecontext.js';
import { dialOptions, type Dialer } from '../../util/dial.js';
import { childSpan, SpanKind, type Span, type Tracer } from '../../util/tracing.js';

export interface AggregatorConfig {
  registry: Registry;
  /** The kinds this server serves (--runtime-config): their group versions are the local APIServices. */
  servedKinds: readonly KindDecl[];
  /** --proxy-client-cert-file / --proxy-client-key-file, read. */
  proxyClient?: { cert: string; key: string } | undefined;
  /** --enable-aggregator-routing: endpoint IPs instead of the Service's cluster IP. */
  enableAggregatorRouting: boolean;
  /** The server's loopback address: an APIService naming `kubernetes` in `default` on 443 is proxied to it. */
  loopback?: () => ServiceAddress | undefined;
  /** The cluster egress (--egress-selector-config-file): connections to extension API servers. */
  dial?: Dialer;
  /** --tracing-config-file: each proxied call is a client span, and its traceparent goes to the extension server. */
  tracer?: Tracer;
  log?: (message: string) => void;
}

type Json = Record<string, any>;

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'trailer', 'host', 'authorization']);

/** Where a non-local APIService's requests go. */
export interface ServiceTarget {
  host: string;
  port: number;
  /** The name the serving certificate is checked against: <service>.<namespace>.svc. */
  serverName: string;
  ca?: Buffer;
  insecure: boolean;
}

/** An error resolving a Service, with the Available condition's reason and message it gives. */
export class ResolveError extends Error {
  constructor(
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}

export class Aggregator implements ApiAggregator {
  /** The APIServices by name, as last read or written. */
  private readonly services = new Map<string, KObject>();
  /** remoteGroups() as of the last change to `services` (undefined: to be worked out again). */
  private remote: Map<string, KObject[]> | undefined;
  /** Each non-local group version's APIResourceList, from its server's discovery document. */
  readonly remoteResources = new Map<string, APIResource[]>();
  /** Each non-local APIService's server's /openapi/v2 document (fetched by the availability controller). */
  private readonly remoteOpenAPI = new Map<string, Json>();
  private openAPIList: Json[] | undefined;
  /** Called when a proxied request could not reach its server (the availability controller rechecks). */
  onProxyFailure: ((apiServiceName: string) => void) | undefined;
  private readonly unobserve: () => void;
  /** The groups of this server's own kinds: never proxied. */
  private readonly localGroups: ReadonlySet<string>;

  constructor(readonly config: AggregatorConfig) {
    this.localGroups = new Set(config.servedKinds.map((k) => k.group));
    const store = config.registry.store(APIREGISTRATION_GROUP, 'v1', 'apiservices');
    if (!store) throw new Error('the apiservices store is missing');
    this.unobserve = store.observeWrites((name, obj) => {
      this.remote = undefined;
      if (obj) this.services.set(name, obj);
      else {
        this.services.delete(name);
        this.remoteResources.delete(name);
        this.setOpenAPI(name, undefined);
      }
    });
  }

  stop(): void {
    this.unobserve();
  }

  /** Replaces the cache with a fresh list. */
  async resync(): Promise<KObject[]> {
    const store = this.config.registry.store(APIREGISTRATION_GROUP, 'v1', 'apiservices')!;
    const list = await store.list({ namespace: '' }, {});
    const items = (list['items'] ?? []) as KObject[];
    this.services.clear();
    this.remote = undefined;
    for (const o of items) this.services.set(o.metadata?.name ?? '', o);
    return items;
  }

  /** Records (or with undefined, forgets) the /openapi/v2 document of an APIService's server. */
  setOpenAPI(name: string, doc: Json | undefined): void {
    const before = this.remoteOpenAPI.get(name);
    if (doc === undefined ? before === undefined : before !== undefined && JSON.stringify(before) === JSON.stringify(doc)) return;
    if (doc === undefined) this.remoteOpenAPI.delete(name);
    else this.remoteOpenAPI.set(name, doc);
    this.openAPIList = undefined;
  }

  /** The extension servers' /openapi/v2 documents; the same array until one changes (openapi.ts caches by it). */
  openAPIV2Documents(): readonly Json[] {
    return (this.openAPIList ??= [...this.remoteOpenAPI.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([, d]) => d));
  }

  apiServices(): KObject[] {
    return [...this.services.values()];
  }

  /** The non-local APIServices, by group; worked out once per change, as every /apis request asks. */
  private remoteGroups(): Map<string, KObject[]> {
    if (this.remote) return this.remote;
    const out = new Map<string, KObject[]>();
    for (const o of this.services.values()) {
      const spec: Json = o['spec'] ?? {};
      if (!spec['service'] || this.localGroups.has(String(spec['group']))) continue;
      const g = String(spec['group'] ?? '');
      if (!out.has(g)) out.set(g, []);
      out.get(g)!.push(o);
    }
    for (const list of out.values()) {
      // VersionPriority highest first, then kube-aware version order.
      list.sort((a, b) => (b['spec'].versionPriority ?? 0) - (a['spec'].versionPriority ?? 0) || compareKubeAwareVersions(String(b['spec'].version), String(a['spec'].version)));
    }
    this.remote = out;
    return out;
  }

  private remoteGroupEntry(group: string, list: KObject[]): APIGroup {
    const versions = list.map((o) => ({ groupVersion: `${group}/${String(o['spec'].version)}`, version: String(o['spec'].version) }));
    return { name: group, versions, preferredVersion: versions[0]! };
  }

  async serve(req: ApiRequest, res: ApiResponse, path: string): Promise<boolean> {
    const parts = path.split('/').filter((s) => s !== '');
    if (parts[0] !== 'apis') return false;
    const method = req.method ?? 'GET';
    const remote = this.remoteGroups();
    if (remote.size === 0) return false;
    if (parts.length === 1 && (method === 'GET' || method === 'HEAD')) return this.serveApis(req, res, remote);
    const group = parts[1]!;
    const list = remote.get(group);
    if (!list) return false;
    if (parts.length === 2) {
      if (method !== 'GET' && method !== 'HEAD') return false;
      const neg = negotiateLegacyDiscovery(headerOf(req.headers, 'accept'));
      if (neg.form === 'notAcceptable') return false;
      sendText(res, 200, 'application/json', JSON.stringify({ kind: 'APIGroup', apiVersion: 'v1', ...this.remoteGroupEntry(group, list) }), method);
      return true;
    }
    const apiService = list.find((o) => o['spec'].version === parts[2]);
    if (!apiService) return false;
    await this.proxy(req, res, apiService);
    return true;
  }

  private serveApis(req: ApiRequest, res: ApiResponse, remote: Map<string, KObject[]>): boolean {
    const method = req.method ?? 'GET';
    const neg = negotiateDiscovery(headerOf(req.headers, 'accept'));
    if (neg.form === 'notAcceptable') return false;
    const kinds = this.config.servedKinds;
    const names = [...remote.keys()].sort();
    if (neg.form === 'legacy') {
      const doc = apiGroupList(kinds);
      doc.groups.push(...names.map((g) => this.remoteGroupEntry(g, remote.get(g)!)));
      sendText(res, 200, 'application/json', JSON.stringify(doc), method);
      return true;
    }
    const doc = aggregatedDiscovery(kinds, 'apis', neg.version);
    for (const g of names) doc.items.push(this.aggregatedGroup(g, remote.get(g)!) as never);
    const body = JSON.stringify(doc);
    const etag = JSON.stringify(createHash('sha512').update(body).digest('hex'));
    const headers = { ETag: etag, Vary: 'Accept', 'Cache-Control': 'public' };
    if (headerOf(req.headers, 'if-none-match') === etag) {
      res.statusCode = 304;
      for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
      res.end();
      return true;
    }
    for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
    sendText(res, 200, neg.contentType, body, method);
    return true;
  }

  /** A non-local group in apidiscovery form: its versions' resources as their servers list them. */
  private aggregatedGroup(group: string, list: KObject[]): object {
    return {
      metadata: { name: group, creationTimestamp: null },
      versions: list.map((o) => {
        const version = String(o['spec'].version);
        const resources = this.remoteResources.get(o.metadata?.name ?? '') ?? [];
        const available = availableCondition(o)?.status === 'True';
        return { version, resources: toAggregatedResources(resources), freshness: available ? 'Current' : 'Stale' };
      }),
    };
  }

  /** The APIService's Service reference and the Service; throws ResolveError (ServiceNotFound). */
  private async serviceOf(apiService: KObject): Promise<{ ns: string; name: string; port: number; svc: KObject }> {
    const ref: Json = apiService['spec']?.['service'] ?? {};
    const ns = String(ref['namespace'] ?? '');
    const name = String(ref['name'] ?? '');
    const port = Number(ref['port'] ?? 443);
    try {
      return { ns, name, port, svc: await this.config.registry.store('', 'v1', 'services')!.get({ namespace: ns }, name) };
    } catch {
      throw new ResolveError('ServiceNotFound', `service/${name} in "${ns}" is not present`);
    }
  }

  /**
   * The Service's port the APIService names, and a ready address of its Endpoints in a subset with a port of
   * that port's name; throws ResolveError (ServicePortError, EndpointsNotFound, MissingEndpoints).
   */
  private async readyEndpoint(ns: string, name: string, port: number, svc: KObject): Promise<{ ip: string; port: number }> {
    const svcPort = ((svc['spec']?.['ports'] ?? []) as Json[]).find((p) => p['port'] === port);
    if (!svcPort) throw new ResolveError('ServicePortError', `service/${name} in "${ns}" is not listening on port ${port}`);
    let endpoints: KObject;
    try {
      endpoints = await this.config.registry.store('', 'v1', 'endpoints')!.get({ namespace: ns }, name);
    } catch {
      throw new ResolveError('EndpointsNotFound', `cannot find endpoints for service/${name} in "${ns}"`);
    }
    const portName = String(svcPort['name'] ?? '');
    for (const subset of (endpoints['subsets'] ?? []) as Json[]) {
      const ep = ((subset['ports'] ?? []) as Json[]).find((p) => String(p['name'] ?? '') === portName);
      const addresses = (subset['addresses'] ?? []) as Json[];
      if (!ep || addresses.length === 0) continue;
      const address = addresses[Math.floor(Math.random() * addresses.length)]!;
      return { ip: String(address['ip']), port: Number(ep['port']) };
    }
    throw new ResolveError('MissingEndpoints', `endpoints for service/${name} in "${ns}" have no addresses with port name "${portName}"`);
  }

  /**
   * The availability controller's checks of the Service before its discovery check, as kube-aggregator 1.23's
   * AvailableConditionController makes them whatever --enable-aggregator-routing says: the Service exists
   * (ServiceNotFound); a ClusterIP Service listens on the APIService's port (ServicePortError) and its
   * Endpoints have a ready address for that port's name (EndpointsNotFound, MissingEndpoints). Throws
   * ResolveError.
   */
  async checkService(apiService: KObject): Promise<void> {
    const { ns, name, port, svc } = await this.serviceOf(apiService);
    if ((svc['spec']?.['type'] ?? 'ClusterIP') === 'ClusterIP') await this.readyEndpoint(ns, name, port, svc);
  }

  /** The address, server name and trust of an APIService's Service; throws ResolveError. */
  async resolve(apiService: KObject): Promise<ServiceTarget> {
    const spec: Json = apiService['spec'] ?? {};
    const { ns, name, port, svc } = await this.serviceOf(apiService);
    const target = (host: string, p: number): ServiceTarget => ({
      host,
      port: p,
      serverName: `${name}.${ns}.svc`,
      insecure: spec['insecureSkipTLSVerify'] === true,
      ...(spec['caBundle'] ? { ca: Buffer.from(String(spec['caBundle']), 'base64') } : {}),
    });
    const svcSpec: Json = svc['spec'] ?? {};
    if (svcSpec['type'] === 'ExternalName') {
      // Kubernetes' ResolveCluster resolves an ExternalName Service; ResolveEndpoint (routing) refuses it.
      if (this.config.enableAggregatorRouting) throw new ResolveError('ServiceNotFound', `unsupported service type "ExternalName" for service/${name} in "${ns}"`);
      return target(String(svcSpec['externalName'] ?? ''), port);
    }
    if (!((svcSpec['ports'] ?? []) as Json[]).some((p) => p['port'] === port)) {
      throw new ResolveError('ServicePortError', `service/${name} in "${ns}" is not listening on port ${port}`);
    }
    // The loopback resolver comes first in kube-apiserver's resolver chain.
    const self = isLoopbackService(ns, name, port) ? this.config.loopback?.() : undefined;
    if (self) return target(self.host, self.port);
    if (!this.config.enableAggregatorRouting) {
      const ip = String(svcSpec['clusterIP'] ?? '');
      if (ip === '' || ip === 'None') throw new ResolveError('ServiceNotFound', `service/${name} in "${ns}" has no cluster IP`);
      return target(ip, port);
    }
    const ep = await this.readyEndpoint(ns, name, port, svc);
    return target(ep.ip, ep.port);
  }

  /** TLS options of a request to `target`. */
  tlsOptions(target: ServiceTarget): RequestOptions {
    return {
      host: target.host,
      port: target.port,
      servername: isIP(target.serverName) ? '' : target.serverName,
      rejectUnauthorized: !target.insecure,
      ...(target.ca ? { ca: target.ca } : {}),
      ...(target.insecure ? {} : { checkServerIdentity: checkName(target.serverName) }),
      ...(this.config.proxyClient ? { cert: this.config.proxyClient.cert, key: this.config.proxyClient.key } : {}),
      ...(this.config.dial ? dialOptions(this.config.dial, true) : { agent: false }),
    };
  }

  /**
   * With tracing on (otelhttp's transport, as kube-aggregator wraps its proxy round tripper): a client span
   * 'HTTP <method>' under the request's span when that is sampled, and the traceparent of that span (else of
   * the request's own span) in place of the one the client sent.
   */
  private traceProxy(req: ApiRequest, target: ServiceTarget, headers: Record<string, string | string[]>): Span | undefined {
    const method = req.method ?? 'GET';
    const host = target.host.includes(':') ? `[${target.host}]:${target.port}` : `${target.host}:${target.port}`;
    const span = childSpan(this.config.tracer!, `HTTP ${method}`, {
      kind: SpanKind.CLIENT,
      scope: 'go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp',
      attributes: { 'http.method': method, 'http.url': `https://${host}${req.url ?? '/'}`, 'http.flavor': '1.1', 'net.peer.name': target.host, 'net.peer.port': target.port },
    });
    const ctx = span?.context ?? currentSpanContext();
    delete headers['traceparent'];
    if (ctx) headers['traceparent'] = formatTraceparent(ctx);
    return span;
  }

  private async proxy(req: ApiRequest, res: ApiResponse, apiService: KObject): Promise<void> {
    const name = apiService.metadata?.name ?? '';
    if (availableCondition(apiService)?.status !== 'True') {
      sendText(res, 503, 'text/plain; charset=utf-8', 'service unavailable\n', req.method);
      return;
    }
    let target: ServiceTarget;
    try {
      target = await this.resolve(apiService);
    } catch (err) {
      this.onProxyFailure?.(name);
      sendText(res, 503, 'text/plain; charset=utf-8', `service unavailable: ${(err as Error).message}\n`, req.method);
      return;
    }
    const headers: Record<string, string | string[]> = {};
    for (const [k, v] of Object.entries(req.headers)) {
      if (v === undefined || k.startsWith(':') || HOP_BY_HOP.has(k) || k.startsWith('impersonate-')) continue;
      if (k === 'x-remote-user' || k === 'x-remote-group' || k.startsWith('x-remote-extra-')) continue;
      headers[k] = v;
    }
    const user = getUser(req);
    if (user) {
      headers['x-remote-user'] = user.name;
      if (user.groups.length) headers['x-remote-group'] = [...user.groups];
      for (const [key, values] of Object.entries(user.extra ?? {})) headers[`x-remote-extra-${headerKeyEscape(key)}`] = [...values];
    }
    const span = this.config.tracer ? this.traceProxy(req, target, headers) : undefined;
    await new Promise<void>((resolve) => {
      const upstream = httpsRequest({ ...this.tlsOptions(target), method: req.method ?? 'GET', path: req.url ?? '/', headers }, (up) => {
        res.statusCode = up.statusCode ?? 502;
        if (span) {
          span.setAttributes({ 'http.status_code': res.statusCode });
          up.on('close', () => span.end(res.statusCode >= 400 ? { error: '' } : undefined));
        }
        for (const [k, v] of Object.entries(up.headers)) {
          if (v === undefined || HOP_BY_HOP.has(k)) continue;
          res.setHeader(k, v);
        }
        (res as NodeJS.WritableStream).on('close', () => up.destroy());
        up.pipe(res as NodeJS.WritableStream);
        up.on('end', resolve);
        up.on('error', () => resolve());
      });
      upstream.on('error', (err) => {
        span?.end({ error: err.message });
        this.onProxyFailure?.(name);
        if (!res.headersSent) sendText(res, 503, 'text/plain; charset=utf-8', `service unavailable: ${err.message}\n`, req.method);
        else res.end();
        resolve();
      });
      (req as NodeJS.ReadableStream).pipe(upstream);
    });
  }
}

/** An RFC 7230 token character, the only bytes a header name may hold. */
const TOKEN_BYTE = /^[!#$&'*+\-.^_`|~0-9A-Za-z]$/;

/**
 * An extra's key in a header name, as client-go's headerKeyEscape writes it for X-Remote-Extra-<key>: each
 * UTF-8 byte that is not a token character, and '%', percent-encoded (the receiver path-unescapes it).
 */
export function headerKeyEscape(key: string): string {
  let out = '';
  for (const b of Buffer.from(key, 'utf8')) {
    const ch = String.fromCharCode(b);
    out += b < 0x80 && TOKEN_BYTE.test(ch) ? ch : `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

function checkName(serverName: string): RequestOptions['checkServerIdentity'] {
  return (_host, cert) => {
    const names = (cert.subjectaltname ?? '').split(', ').filter((s) => s.startsWith('DNS:')).map((s) => s.slice(4));
    if (names.includes(serverName) || cert.subject?.CN === serverName) return undefined;
    return new Error(`x509: certificate is valid for ${names.join(', ') || cert.subject?.CN}, not ${serverName}`);
  };
}

function headerOf(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v.join(',') : v;
}

function sendText(res: ApiResponse, status: number, contentType: string, body: string, method?: string): void {
  res.statusCode = status;
  res.setHeader('Content-Type', contentType);
  res.setHeader('Content-Length', Buffer.byteLength(body));
  if (method === 'HEAD') res.end();
  else res.end(body);
}

/** A legacy APIResourceList's resources in apidiscovery form (subresources under their resource). */
export function toAggregatedResources(resources: readonly APIResource[]): object[] {
  const out: Json[] = [];
  const byName = new Map<string, Json>();
  for (const r of resources) {
    if (r.name.includes('/')) continue;
    const d: Json = {
      resource: r.name,
      responseKind: { group: r.group ?? '', version: r.version ?? '', kind: r.kind },
      scope: r.namespaced ? 'Namespaced' : 'Cluster',
      singularResource: r.singularName,
      verbs: r.verbs,
    };
    if (r.shortNames?.length) d['shortNames'] = r.shortNames;
    if (r.categories?.length) d['categories'] = r.categories;
    out.push(d);
    byName.set(r.name, d);
  }
  for (const r of resources) {
    const slash = r.name.indexOf('/');
    if (slash < 0) continue;
    const parent = byName.get(r.name.slice(0, slash));
    if (parent) (parent['subresources'] ??= []).push({ subresource: r.name.slice(slash + 1), responseKind: { group: r.group ?? '', version: r.version ?? '', kind: r.kind }, verbs: r.verbs });
  }
  return out;
}

/** Parses a server's /apis/<group>/<version> document; undefined when it is not an APIResourceList. */
export function parseResourceList(text: string): APIResource[] | undefined {
  try {
    const doc = JSON.parse(text) as APIResourceList;
    return doc && Array.isArray(doc.resources) ? doc.resources : undefined;
  } catch {
    return undefined;
  }
}
