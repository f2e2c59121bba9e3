/**
 * pods/log, as Kubernetes 1.23's LogREST and LogLocation (pkg/registry/core/pod/rest/log.go,
 * pkg/registry/core/pod/strategy.go) find it: the pod's container (defaulted when the pod has one, or by
 * the kubectl.kubernetes.io/default-container annotation), the PodLogOptions checked as
 * ValidatePodLogOptions does, then the node agent's /containerLogs/{namespace}/{pod}/{container} at the
 * node's preferred address (the server's --orchlet-preferred-address-types order; a Hostname that does
 * not resolve is skipped) and its daemonEndpoints port. A pod not bound to a node has no log: null.
 */
import { isIP } from 'node:net';
import { apiErrors } from '../../errors.js';
import type { ConnectLocation, ConnectorSubresource, KObject, SubresourceContext } from '../../kind.js';
import { invalid, forbidden, root, type FieldError } from '../../../util/validation.js';

type Json = Record<string, any>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const objects = (v: unknown): Json[] => (Array.isArray(v) ? v.filter(isObject) : []);
const s = (v: unknown): string => (typeof v === 'string' ? v : '');

export const DEFAULT_ADDRESS_TYPES = ['Hostname', 'InternalDNS', 'InternalIP', 'ExternalDNS', 'ExternalIP'];
/** The agent's port when the node does not report one (kubelet's default). */
export const DEFAULT_AGENT_PORT = 10250;
export const DEFAULT_CONTAINER_ANNOTATION = 'kubectl.kubernetes.io/default-container';

const names = (cs: unknown) => objects(cs).map((c) => s(c['name']));

/**
 * validateContainer, as the log, exec, attach and port-forward locations share it: the container named (any
 * kind of container of the pod), or the pod's only container. Logs also honour the pod's
 * kubectl.kubernetes.io/default-container annotation when no container is named (`defaultAnnotation`).
 */
export function podContainer(pod: KObject, requested: string, opts: { defaultAnnotation?: boolean } = {}): string {
  const spec: Json = isObject(pod.spec) ? pod.spec : {};
  const name = s(pod.metadata?.name);
  const all = [...names(spec['containers']), ...names(spec['initContainers']), ...names(spec['ephemeralContainers'])];
  if (requested !== '') {
    if (!all.includes(requested)) throw apiErrors.badRequest(`container ${requested} is not valid for pod ${name}`);
    return requested;
  }
  if (opts.defaultAnnotation) {
    const annotated = s(pod.metadata?.annotations?.[DEFAULT_CONTAINER_ANNOTATION]);
    if (annotated !== '' && all.includes(annotated)) return annotated;
  }
  const containers = names(spec['containers']);
  if (containers.length === 1) return containers[0]!;
  if (containers.length === 0) throw apiErrors.badRequest(`a container name must be specified for pod ${name}`);
  let msg = `a container name must be specified for pod ${name}, choose one of: [${containers.join(' ')}]`;
  const init = names(spec['initContainers']);
  if (init.length > 0) msg += ` or one of the init containers: [${init.join(' ')}]`;
  throw apiErrors.badRequest(msg);
}

/** The log location's container: podContainer, honouring the default-container annotation. */
export const logContainer = (pod: KObject, requested: string): string => podContainer(pod, requested, { defaultAnnotation: true });

function intOption(query: URLSearchParams, key: string): number | undefined {
  const v = query.get(key);
  if (v === null || v === '') return undefined;
  if (!/^[+-]?\d+$/.test(v)) throw apiErrors.badRequest(`strconv.ParseInt: parsing ${JSON.stringify(v)}: invalid syntax`);
  return Number(v);
}

function boolOption(query: URLSearchParams, key: string): boolean {
  const v = query.get(key);
  return v === 'true' || v === '1' || v === 'True' || v === 'TRUE' || v === 't' || v === 'T';
}

/** The query the agent gets, from the PodLogOptions of the request (ValidatePodLogOptions first). */
export function agentLogQuery(query: URLSearchParams, podName: string): URLSearchParams {
  const tail = intOption(query, 'tailLines');
  const limit = intOption(query, 'limitBytes');
  const since = intOption(query, 'sinceSeconds');
  const sinceTime = query.get('sinceTime') ?? '';
  const errs: FieldError[] = [];
  if (tail !== undefined && tail < 0) errs.push(invalid(root('tailLines'), tail, 'must be greater than or equal to 0'));
  if (limit !== undefined && limit < 1) errs.push(invalid(root('limitBytes'), limit, 'must be greater than 0'));
  if (since !== undefined && sinceTime !== '') errs.push(forbidden(root(''), 'at most one of `sinceTime` or `sinceSeconds` may be specified'));
  if (since !== undefined && since < 1) errs.push(invalid(root('sinceSeconds'), since, 'must be greater than 0'));
  if (errs.length > 0) throw apiErrors.invalid('', 'PodLogOptions', podName, errs);
  const out = new URLSearchParams();
  if (boolOption(query, 'follow')) out.set('follow', 'true');
  if (boolOption(query, 'previous')) out.set('previous', 'true');
  if (boolOption(query, 'timestamps')) out.set('timestamps', 'true');
  if (since !== undefined) out.set('sinceSeconds', String(since));
  if (sinceTime !== '') {
    const t = Date.parse(sinceTime);
    if (Number.isNaN(t)) throw apiErrors.badRequest(`parsing time ${JSON.stringify(sinceTime)} as "2006-01-02T15:04:05Z07:00": cannot parse`);
    out.set('sinceTime', new Date(t).toISOString().replace(/\.\d{3}Z$/, 'Z'));
  }
  if (tail !== undefined) out.set('tailLines', String(tail));
  if (limit !== undefined) out.set('limitBytes', String(limit));
  return out;
}

async function resolves(host: string): Promise<boolean> {
  if (isIP(host) !== 0) return true;
  try {
    // node:dns/promises is loaded here, on the first host name to resolve, not at every start (~30 ms).
    const { lookup } = await import('node:dns/promises');
    await lookup(host);
    return true;
  } catch {
    return false;
  }
}

/** GetPreferredNodeAddress, skipping a Hostname (or DNS name) that does not resolve. */
export async function preferredNodeAddress(node: KObject, types: readonly string[]): Promise<string> {
  const addresses = objects(isObject(node.status) ? node.status['addresses'] : undefined);
  for (const type of types) {
    for (const a of addresses) {
      if (s(a['type']) !== type) continue;
      const host = s(a['address']);
      if ((type === 'Hostname' || type.endsWith('DNS')) && !(await resolves(host))) continue;
      return host;
    }
  }
  const known = addresses.map((a) => `{${s(a['type'])} ${s(a['address'])}}`).join(' ');
  throw apiErrors.internal(`no preferred addresses found; known addresses: [${known}]`);
}

/** The node agent of `nodeName`: https://<preferred address>:<its daemonEndpoints port, or 10250>. */
export async function nodeAgentBase(ctx: SubresourceContext, nodeName: string): Promise<string> {
  const nodes = ctx.lookup('', 'nodes');
  if (!nodes) throw apiErrors.internal('nodes are not served');
  const node = await nodes.get({ namespace: '' }, nodeName);
  const host = await preferredNodeAddress(node, ctx.settings.agentAddressTypes ?? DEFAULT_ADDRESS_TYPES);
  const endpoint = isObject(node.status) && isObject(node.status['daemonEndpoints']) ? node.status['daemonEndpoints']['kubeletEndpoint'] : undefined;
  const port = isObject(endpoint) && typeof endpoint['Port'] === 'number' && endpoint['Port'] > 0 ? endpoint['Port'] : DEFAULT_AGENT_PORT;
  return `https://${isIP(host) === 6 ? `[${host}]` : host}:${port}`;
}

export const logConnector: ConnectorSubresource = {
  verbs: ['get'],
  async location(ctx: SubresourceContext, name: string, query: URLSearchParams): Promise<ConnectLocation | null> {
    const pod = await ctx.store.get(ctx.scope, name);
    const container = logContainer(pod, query.get('container') ?? '');
    const params = agentLogQuery(query, name);
    const nodeName = isObject(pod.spec) ? s(pod.spec['nodeName']) : '';
    if (nodeName === '') return null;
    const ns = s(pod.metadata?.namespace);
    const path = `/containerLogs/${encodeURIComponent(ns)}/${encodeURIComponent(name)}/${encodeURIComponent(container)}`;
    const qs = params.toString();
    return { url: new URL(`${await nodeAgentBase(ctx, nodeName)}${path}${qs ? `?${qs}` : ''}`), contentType: 'text/plain' };
  },
};
