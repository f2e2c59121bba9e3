/**
 * pods/exec, pods/attach and pods/portforward, as Kubernetes 1.23's ExecREST, AttachREST and
 * PortForwardREST find them (pkg/registry/core/pod/rest/subresources.go, strategy.go streamLocation):
 * connectors that require an upgraded connection (SPDY/3.1 or WebSocket), proxied as they are to the node
 * agent's /exec/{ns}/{pod}/{container}, /attach/{ns}/{pod}/{container} and /portForward/{ns}/{pod} at the
 * node's preferred address.
 *
 * Options come from the query as the parameter codec decodes them: a boolean is true unless its first
 * value is "0" or "false" (any case); PodExecOptions and PodAttachOptions default stdout and stderr to
 * true after decoding, so they are always asked for (kubelet drops stderr under a tty). The container is
 * the one named (it must exist in the pod) or the pod's only container; a pod not bound to a node is a
 * 400 "pod <name> does not have a host assigned".
 */
import { isIP } from 'node:net';
import { apiErrors } from '../../errors.js';
import type { ConnectLocation, ConnectorParam, ConnectorSubresource, KObject, SubresourceContext } from '../../kind.js';
import { DEFAULT_ADDRESS_TYPES, DEFAULT_AGENT_PORT, preferredNodeAddress } from './log.js';

type Json = Record<string, any>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const objects = (v: unknown): Json[] => (Array.isArray(v) ? v.filter(isObject) : []);
const s = (v: unknown): string => (typeof v === 'string' ? v : '');
const names = (cs: unknown) => objects(cs).map((c) => s(c['name']));

/** validateContainer of streamLocation: the container named (any kind of container of the pod), or the only one. */
export function streamContainer(pod: KObject, requested: string): string {
  const spec: Json = isObject(pod.spec) ? pod.spec : {};
  const name = s(pod.metadata?.name);
  if (requested !== '') {
    const all = [...names(spec['containers']), ...names(spec['initContainers']), ...names(spec['ephemeralContainers'])];
    if (!all.includes(requested)) throw apiErrors.badRequest(`container ${requested} is not valid for pod ${name}`);
    return requested;
  }
  const containers = names(spec['containers']);
  if (containers.length === 1) return containers[0]!;
  if (containers.length === 0) throw apiErrors.badRequest(`a container name must be specified for pod ${name}`);
  let msg = `a container name must be specified for pod ${name}, choose one of: [${containers.join(' ')}]`;
  const init = names(spec['initContainers']);
  if (init.length > 0) msg += ` or one of the init containers: [${init.join(' ')}]`;
  throw apiErrors.badRequest(msg);
}

/** runtime.Convert_Slice_string_To_bool: absent is false; "0" and "false" (any case) are false; anything else true. */
export function queryBool(query: URLSearchParams, key: string): boolean {
  const v = query.get(key);
  if (v === null) return false;
  return !(v === '0' || v.toLowerCase() === 'false');
}

/** The ports of PodPortForwardOptions (each an int32), as the agent's `port` parameter. */
function portsParam(query: URLSearchParams): string | undefined {
  const ports = query.getAll('ports');
  if (ports.length === 0) return undefined;
  for (const p of ports) {
    if (!/^[+-]?\d+$/.test(p)) throw apiErrors.badRequest(`strconv.ParseInt: parsing ${JSON.stringify(p)}: invalid syntax`);
    const n = Number(p);
    if (n < -2147483648 || n > 2147483647) throw apiErrors.badRequest(`strconv.ParseInt: parsing ${JSON.stringify(p)}: value out of range`);
  }
  return ports.map((p) => String(Number(p))).join(',');
}

/** The pod, and the agent of its node (https://host:port), or the 400 of a pod without a node. */
async function podAndAgent(ctx: SubresourceContext, name: string): Promise<{ pod: KObject; base: string }> {
  const pod = await ctx.store.get(ctx.scope, name);
  return { pod, base: await agentBase(ctx, pod, name) };
}

async function agentBase(ctx: SubresourceContext, pod: KObject, name: string): Promise<string> {
  const nodeName = isObject(pod.spec) ? s(pod.spec['nodeName']) : '';
  if (nodeName === '') throw apiErrors.badRequest(`pod ${name} does not have a host assigned`);
  const nodes = ctx.lookup('', 'nodes');
  if (!nodes) throw apiErrors.internal('nodes are not served');
  const node = await nodes.get({ namespace: '' }, nodeName);
  const host = await preferredNodeAddress(node, ctx.settings.agentAddressTypes ?? DEFAULT_ADDRESS_TYPES);
  const endpoint = isObject(node.status) && isObject(node.status['daemonEndpoints']) ? node.status['daemonEndpoints']['kubeletEndpoint'] : undefined;
  const port = isObject(endpoint) && typeof endpoint['Port'] === 'number' && endpoint['Port'] > 0 ? endpoint['Port'] : DEFAULT_AGENT_PORT;
  return `https://${isIP(host) === 6 ? `[${host}]` : host}:${port}`;
}

const seg = encodeURIComponent;

/** streamParams of exec and attach: the standard streams always (defaulted), stdin and tty when asked, the command. */
function streamQuery(query: URLSearchParams, withCommand: boolean): URLSearchParams {
  const out = new URLSearchParams();
  if (withCommand) for (const c of query.getAll('command')) out.append('command', c);
  out.set('error', '1');
  if (queryBool(query, 'stdin')) out.set('input', '1');
  out.set('output', '1');
  if (queryBool(query, 'tty')) out.set('tty', '1');
  out.sort();
  return out;
}

function containerStream(path: 'exec' | 'attach'): ConnectorSubresource['location'] {
  return async (ctx, name, query): Promise<ConnectLocation> => {
    const pod = await ctx.store.get(ctx.scope, name);
    const container = streamContainer(pod, query.get('container') ?? '');
    const base = await agentBase(ctx, pod, name);
    const ns = s(pod.metadata?.namespace);
    const params = streamQuery(query, path === 'exec');
    return { url: new URL(`${base}/${path}/${seg(ns)}/${seg(name)}/${seg(container)}?${params.toString()}`), contentType: '' };
  };
}

const CONTAINER_PARAM: ConnectorParam = {
  name: 'container',
  type: 'string',
  description: 'The container in which to execute the command. Defaults to only container if there is only one container in the pod.',
};

const EXEC_PARAMS: ConnectorParam[] = [
  { name: 'command', type: 'string', description: 'Command is the remote command to execute. argv array. Not executed within a shell.' },
  CONTAINER_PARAM,
  { name: 'stderr', type: 'boolean', description: 'Redirect the standard error stream of the pod for this call.' },
  { name: 'stdin', type: 'boolean', description: 'Redirect the standard input stream of the pod for this call. Defaults to false.' },
  { name: 'stdout', type: 'boolean', description: 'Redirect the standard output stream of the pod for this call.' },
  { name: 'tty', type: 'boolean', description: 'TTY if true indicates that a tty will be allocated for the exec call. Defaults to false.' },
];

const ATTACH_PARAMS: ConnectorParam[] = [
  CONTAINER_PARAM,
  { name: 'stderr', type: 'boolean', description: 'Stderr if true indicates that stderr is to be redirected for the attach call. Defaults to true.' },
  { name: 'stdin', type: 'boolean', description: 'Stdin if true, redirects the standard input stream of the pod for this call. Defaults to false.' },
  { name: 'stdout', type: 'boolean', description: 'Stdout if true indicates that stdout is to be redirected for the attach call. Defaults to true.' },
  {
    name: 'tty',
    type: 'boolean',
    description:
      'TTY if true indicates that a tty will be allocated for the attach call. This is passed through the container runtime so the tty is allocated on the worker node by the container runtime. Defaults to false.',
  },
];

export const execConnector: ConnectorSubresource = {
  verbs: ['create', 'get'],
  upgradeRequired: true,
  options: { kind: 'PodExecOptions', params: EXEC_PARAMS },
  location: containerStream('exec'),
};

export const attachConnector: ConnectorSubresource = {
  verbs: ['create', 'get'],
  upgradeRequired: true,
  options: { kind: 'PodAttachOptions', params: ATTACH_PARAMS },
  location: containerStream('attach'),
};

export const portForwardConnector: ConnectorSubresource = {
  verbs: ['create', 'get'],
  upgradeRequired: true,
  options: { kind: 'PodPortForwardOptions', params: [{ name: 'ports', type: 'integer', description: 'List of ports to forward Required when using WebSockets' }] },
  async location(ctx, name, query): Promise<ConnectLocation> {
    const ports = portsParam(query);
    const { pod, base } = await podAndAgent(ctx, name);
    const ns = s(pod.metadata?.namespace);
    const qs = ports !== undefined ? `?${new URLSearchParams({ port: ports }).toString()}` : '';
    return { url: new URL(`${base}/portForward/${seg(ns)}/${seg(name)}${qs}`), contentType: '' };
  },
};
