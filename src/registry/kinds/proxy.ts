/**
 * nodes/proxy, pods/proxy and services/proxy: where Kubernetes 1.23's ProxyREST connecters send a request
 * (pkg/registry/core/{node,pod,service} ResourceLocation). The name part of the URL is `name`, `name:port`
 * or `scheme:name:port` (scheme http or https; utilnet.SplitSchemeNamePort), else a 400 "invalid <kind>
 * request".
 *
 * - nodes: the node agent at the node's preferred address and its daemonEndpoints port, over the agent
 *   transport; another port is reached with the scheme asked for (http by default), as a plain backend.
 * - pods: the pod's first IP, at the port named or the first declared container port (none: no port).
 * - services: a port number is turned into the service port's name (none: 503 "no service port N found");
 *   then an address of an Endpoints subset with a port of that name, whose targetRef is a pod of the same
 *   namespace that has that IP (503 "no endpoints available for service" otherwise).
 *
 * Kubernetes refuses to proxy to loopback, link-local and multicast addresses ("address not allowed"), so that
 * whoever may proxy cannot reach the server's own host. orch does the same, except where the server serves on a
 * loopback address alone (settings.proxyToLoopback): its clients are then all on this machine and reach its
 * loopback anyway, and a single-machine cluster's node and pod IPs are loopback addresses (README). The node
 * agent's own port is reached as exec and logs reach it, without this check.
 */
import { isIP } from 'node:net';
import { apiErrors } from '../errors.js';
import type { ConnectLocation, ConnectorSubresource, KObject, SubresourceContext } from '../kind.js';
import { nodeAgentBase } from './pod/log.js';

type Json = Record<string, any>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const s = (v: unknown): string => (typeof v === 'string' ? v : '');
const objects = (v: unknown): Json[] => (Array.isArray(v) ? v.filter(isObject) : []);

/** The HTTP methods Kubernetes 1.23's proxy connecters serve. */
export const PROXY_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'];
/** Their discovery verbs (HEAD and OPTIONS have none). */
const PROXY_VERBS = ['create', 'delete', 'get', 'patch', 'update'];

/** utilnet.SplitSchemeNamePort: undefined when the id is not valid. */
export function splitSchemeNamePort(id: string): { scheme: string; name: string; port: string } | undefined {
  const parts = id.split(':');
  if (parts.length > 3) return undefined;
  const [scheme, name, port] = parts.length === 3 ? (parts as [string, string, string]) : ['', parts[0]!, parts[1] ?? ''];
  if (name === '' || !['', 'http', 'https'].includes(scheme)) return undefined;
  return { scheme, name, port };
}

/** An IPv4 address, or the IPv4 address an IPv4-mapped IPv6 address (::ffff:a.b.c.d) holds; else undefined. */
function ipv4Of(ip: string): string | undefined {
  const v = isIP(ip);
  if (v === 4) return ip;
  return v === 6 && /^::ffff:\d+\.\d+\.\d+\.\d+$/i.test(ip) ? ip.slice(7) : undefined;
}

/** Whether an IP literal is a loopback address: 127.0.0.0/8 (also IPv4-mapped) or ::1. */
export function isLoopbackIP(ip: string): boolean {
  const v4 = ipv4Of(ip);
  if (v4 !== undefined) return v4.startsWith('127.');
  const l = ip.toLowerCase();
  return isIP(ip) === 6 && (l === '::1' || l === '0:0:0:0:0:0:0:1');
}

/**
 * Whether orch proxies to this IP: as Kubernetes' IsProxyableIP, not loopback, link-local, multicast or
 * unspecified; loopback only when `allowLoopback` (settings.proxyToLoopback).
 */
export function isProxyableIP(ip: string, allowLoopback = false): boolean {
  if (isLoopbackIP(ip)) return allowLoopback;
  const v4 = ipv4Of(ip);
  if (v4 !== undefined) {
    const [a, b] = v4.split('.').map(Number) as [number, number];
    return !(a === 0 || (a === 169 && b === 254) || a >= 224);
  }
  if (isIP(ip) === 6) {
    const l = ip.toLowerCase();
    return !(l === '::' || /^fe[89ab]/.test(l) || l.startsWith('ff'));
  }
  return false;
}

const hostPort = (host: string, port: string): string => {
  const h = isIP(host) === 6 ? `[${host}]` : host;
  return port === '' ? h : `${h}:${port}`;
};

/**
 * The URL of a backend. Go dials any port string and fails there; a port the URL cannot hold is answered as
 * that failure (503 "error trying to reach service").
 */
function backendURL(scheme: string, host: string, port: string): URL {
  if (port !== '' && !/^\d+$/.test(port)) throw apiErrors.serviceUnavailable(`error trying to reach service: dial tcp: lookup tcp/${port}: unknown port`);
  if (port !== '' && Number(port) > 65535) throw apiErrors.serviceUnavailable(`error trying to reach service: dial tcp: address ${port}: invalid port`);
  return new URL(`${scheme || 'http'}://${hostPort(host, port === '' ? '' : String(Number(port)))}`);
}

const pathParam = (what: string): ConnectorSubresource['options'] => ({
  kind: `${what}ProxyOptions`,
  params: [
    {
      name: 'path',
      type: 'string',
      description:
        what === 'Service'
          ? 'Path is the part of URLs that include service endpoints, suffixes, and parameters to use for the current proxy request to service. For example, the whole request URL is http://localhost/api/v1/namespaces/kube-system/services/elasticsearch-logging/_search?q=user:kimchy. Path is _search?q=user:kimchy.'
          : `Path is the URL path to use for the current proxy request to ${what.toLowerCase()}.`,
    },
  ],
});

export const nodeProxyConnector: ConnectorSubresource = {
  verbs: PROXY_VERBS,
  proxy: { methods: PROXY_METHODS },
  options: pathParam('Node'),
  async location(ctx: SubresourceContext, id: string): Promise<ConnectLocation> {
    const parts = splitSchemeNamePort(id);
    if (!parts) throw apiErrors.badRequest(`invalid node request ${JSON.stringify(id)}`);
    const agent = new URL(await nodeAgentBase(ctx, parts.name));
    if (parts.port === '' || parts.port === agent.port) return { url: agent, contentType: '', agent: true };
    const host = agent.hostname.replace(/^\[|\]$/g, '');
    if (isIP(host) !== 0 && !isProxyableIP(host, ctx.settings.proxyToLoopback)) throw apiErrors.badRequest('address not allowed');
    return { url: backendURL(parts.scheme, host, parts.port), contentType: '' };
  },
};

/** The pod's first IP (status.podIPs, else status.podIP). */
function podIP(pod: KObject): string {
  const status = isObject(pod.status) ? pod.status : {};
  const first = objects(status['podIPs'])[0];
  return first ? s(first['ip']) : s(status['podIP']);
}

export const podProxyConnector: ConnectorSubresource = {
  verbs: PROXY_VERBS,
  proxy: { methods: PROXY_METHODS },
  options: pathParam('Pod'),
  async location(ctx: SubresourceContext, id: string): Promise<ConnectLocation> {
    const parts = splitSchemeNamePort(id);
    if (!parts) throw apiErrors.badRequest(`invalid pod request ${JSON.stringify(id)}`);
    const pod = await ctx.store.get(ctx.scope, parts.name);
    let port = parts.port;
    if (port === '') {
      for (const c of objects(isObject(pod.spec) ? pod.spec['containers'] : undefined)) {
        const p = objects(c['ports'])[0];
        if (p) {
          port = String(p['containerPort']);
          break;
        }
      }
    }
    const ip = podIP(pod);
    if (!isProxyableIP(ip, ctx.settings.proxyToLoopback)) throw apiErrors.badRequest('address not allowed');
    return { url: backendURL(parts.scheme, ip, port), contentType: '' };
  },
};

/** isValidAddress: the address names a pod of the request's namespace that has that IP. */
async function validAddress(ctx: SubresourceContext, addr: Json): Promise<boolean> {
  const ref = isObject(addr['targetRef']) ? addr['targetRef'] : undefined;
  if (!ref || s(ref['namespace']) !== ctx.scope.namespace) return false;
  const pods = ctx.lookup('', 'pods');
  if (!pods) return false;
  const pod = await pods.get(ctx.scope, s(ref['name'])).catch(() => undefined);
  if (!pod) return false;
  const status = isObject(pod.status) ? pod.status : {};
  return objects(status['podIPs']).some((p) => s(p['ip']) === s(addr['ip']));
}

const randomInt = (n: number): number => Math.floor(Math.random() * n);

export const serviceProxyConnector: ConnectorSubresource = {
  verbs: PROXY_VERBS,
  proxy: { methods: PROXY_METHODS },
  options: pathParam('Service'),
  async location(ctx: SubresourceContext, id: string): Promise<ConnectLocation> {
    const parts = splitSchemeNamePort(id);
    if (!parts) throw apiErrors.badRequest(`invalid service request ${JSON.stringify(id)}`);
    let portName = parts.port;
    // strconv.ParseInt(port, 10, 64): a number names the service port of that number.
    if (/^[+-]?\d+$/.test(portName) && Math.abs(Number(portName)) <= Number.MAX_SAFE_INTEGER) {
      const num = Number(portName);
      const svc = await ctx.store.get(ctx.scope, parts.name);
      const found = objects(isObject(svc.spec) ? svc.spec['ports'] : undefined).find((p) => p['port'] === num);
      if (!found) throw apiErrors.serviceUnavailable(`no service port ${num} found for service ${JSON.stringify(parts.name)}`);
      portName = s(found['name']);
    }
    const endpointsStore = ctx.lookup('', 'endpoints');
    if (!endpointsStore) throw apiErrors.internal('endpoints are not served');
    const eps = await endpointsStore.get(ctx.scope, parts.name);
    const subsets = objects(eps['subsets']);
    if (subsets.length === 0) throw apiErrors.serviceUnavailable(`no endpoints available for service ${JSON.stringify(parts.name)}`);
    const seed = randomInt(subsets.length);
    for (let i = 0; i < subsets.length; i++) {
      const ss = subsets[(seed + i) % subsets.length]!;
      const addresses = objects(ss['addresses']);
      if (addresses.length === 0) continue;
      for (const port of objects(ss['ports'])) {
        if (s(port['name']) !== portName) continue;
        const addrSeed = randomInt(addresses.length);
        for (let t = 0; t < addresses.length; t++) {
          const addr = addresses[(addrSeed + t) % addresses.length]!;
          if (!(await validAddress(ctx, addr))) continue;
          return { url: backendURL(parts.scheme, s(addr['ip']), String(port['port'])), contentType: '' };
        }
      }
    }
    throw apiErrors.serviceUnavailable(`no endpoints available for service ${JSON.stringify(id)}`);
  },
};
