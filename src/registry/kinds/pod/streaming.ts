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
import { apiErrors } from '../../errors.js';
import type { ConnectLocation, ConnectorParam, ConnectorSubresource, KObject, SubresourceContext } from '../../kind.js';
import { nodeAgentBase, podContainer } from './log.js';

type Json = Record<string, any>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const s = (v: unknown): string => (typeof v === 'string' ? v : '');

/** validateContainer of streamLocation: podContainer without the default-container annotation. */
export const streamContainer = (pod: KObject, requested: string): string => podContainer(pod, requested);

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
  return nodeAgentBase(ctx, nodeName);
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

const bool = (v: unknown): boolean => v === true;
const strs = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);

/**
 * PodExecOptions or PodAttachOptions in v1 as the parameter codec decodes the query (stdout and stderr
 * defaulted to true), in Go field order with omitempty (an exec's command is always written).
 */
function streamOptions(kind: 'PodExecOptions' | 'PodAttachOptions'): NonNullable<ConnectorSubresource['connectOptions']> {
  return {
    decode(query) {
      const o: KObject = { kind, apiVersion: 'v1' };
      if (queryBool(query, 'stdin')) o['stdin'] = true;
      o['stdout'] = true;
      o['stderr'] = true;
      if (queryBool(query, 'tty')) o['tty'] = true;
      const container = query.get('container') ?? '';
      if (container !== '') o['container'] = container;
      if (kind === 'PodExecOptions') {
        const command = query.getAll('command');
        o['command'] = command.length > 0 ? command : null;
      }
      return o;
    },
    encode(o) {
      const q = new URLSearchParams();
      if (kind === 'PodExecOptions') for (const c of strs(o['command'])) q.append('command', c);
      if (typeof o['container'] === 'string' && o['container'] !== '') q.set('container', o['container']);
      for (const k of ['stdin', 'stdout', 'stderr', 'tty']) if (bool(o[k])) q.set(k, 'true');
      return q;
    },
  };
}

const portForwardOptions: NonNullable<ConnectorSubresource['connectOptions']> = {
  decode(query) {
    const ports = portsParam(query);
    return { kind: 'PodPortForwardOptions', apiVersion: 'v1', ...(ports !== undefined ? { ports: ports.split(',').map(Number) } : {}) };
  },
  encode(o) {
    const q = new URLSearchParams();
    if (Array.isArray(o['ports'])) for (const p of o['ports']) if (typeof p === 'number') q.append('ports', String(p));
    return q;
  },
};

export const execConnector: ConnectorSubresource = {
  verbs: ['create', 'get'],
  upgradeRequired: true,
  options: { kind: 'PodExecOptions', params: EXEC_PARAMS },
  location: containerStream('exec'),
  connectOptions: streamOptions('PodExecOptions'),
};

export const attachConnector: ConnectorSubresource = {
  verbs: ['create', 'get'],
  upgradeRequired: true,
  options: { kind: 'PodAttachOptions', params: ATTACH_PARAMS },
  location: containerStream('attach'),
  connectOptions: streamOptions('PodAttachOptions'),
};

export const portForwardConnector: ConnectorSubresource = {
  verbs: ['create', 'get'],
  upgradeRequired: true,
  options: { kind: 'PodPortForwardOptions', params: [{ name: 'ports', type: 'integer', description: 'List of ports to forward Required when using WebSockets' }] },
  connectOptions: portForwardOptions,
  async location(ctx, name, query): Promise<ConnectLocation> {
    const ports = portsParam(query);
    const { pod, base } = await podAndAgent(ctx, name);
    const ns = s(pod.metadata?.namespace);
    const qs = ports !== undefined ? `?${new URLSearchParams({ port: ports }).toString()}` : '';
    return { url: new URL(`${base}/portForward/${seg(ns)}/${seg(name)}${qs}`), contentType: '' };
  },
};
