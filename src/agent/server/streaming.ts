// The agent's streaming endpoints (kubelet's /exec, /attach and /portForward, installed with the
// debugging handlers on the main server):
//   /exec/{namespace}/{pod}/{container}?command=...&input=1&output=1&error=1&tty=1
//   /attach/{namespace}/{pod}/{container}?input=1&output=1&error=1&tty=1
//   /portForward/{namespace}/{pod}[?port=80,443]
// Checks as kubelet makes them: at least one of input, output, error (400 "you must specify at least 1
// of stdin, stdout, stderr"), the pod (404 "pod does not exist"), a running container (500 `container
// not found ("name")`), the pod's sandbox for port-forward (500 `pod not found ("name_namespace")`).
// A request without an Upgrade header gets 400 "Upgrade request required".
//
// Then, per runtime:
//   - a runtime with its own streaming server (CRI: containerd speaks SPDY/3.1 and the WebSocket channel
//     protocols itself) gives a URL, and the client's upgrade request is forwarded there and the two
//     connections spliced, as kubelet's proxyStream does;
//   - the process runtime gives sessions, and the agent speaks the protocols: the WebSocket channel
//     protocols (v5.channel.k8s.io, v4.channel.k8s.io; port-forward v4.channel.k8s.io and
//     v4.base64.channel.k8s.io: streaming-ws.ts) and SPDY/3.1 (streaming-spdy.ts,
//     exec, attach and port-forward).
// --streaming-connection-idle-timeout closes a connection the agent serves itself after that long
// without traffic (0: never).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { dialUpgrade, readAll, splice } from '../../util/upgrade.js';
import type { Runtime, StreamOptions } from '../runtime/runtime.js';
import type { Pod } from '../types.js';
import { serveSpdyExec, serveSpdyPortForward, SPDY_UPGRADE } from './streaming-spdy.js';
import { serveWebSocketStream, websocketProtocolOf } from './streaming-ws.js';

export interface StreamingHost {
  podByName(namespace: string, name: string): Pod | undefined;
  readonly runtime?: Runtime;
}

/** What one exec, attach or port-forward request asks for, once checked. */
export type StreamTarget =
  | { kind: 'exec' | 'attach'; pod: Pod; containerId: string; cmd: string[]; options: StreamOptions }
  | { kind: 'portForward'; pod: Pod; sandboxId: string; ports: number[] };

class HttpError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

const STATUS_TEXT: Record<number, string> = { 400: 'Bad Request', 403: 'Forbidden', 404: 'Not Found', 500: 'Internal Server Error' };

/** Writes a plain-text HTTP answer on a raw socket and closes it (an upgrade that is refused). */
export function refuseUpgrade(socket: Duplex, code: number, text: string): void {
  const body = Buffer.from(text);
  socket.end(
    `HTTP/1.1 ${code} ${STATUS_TEXT[code] ?? 'Error'}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body.toString('latin1')}`,
    'latin1',
  );
}

/** Whether a request is for one of the streaming paths. */
export function isStreamingPath(path: string): boolean {
  return path.startsWith('/exec/') || path.startsWith('/attach/') || path.startsWith('/portForward/');
}

const flag = (q: URLSearchParams, name: string): boolean => q.get(name) === '1';

/** The container's runtime id when it is running, from the pod's status. */
async function runningContainer(runtime: Runtime, pod: Pod, name: string): Promise<string | undefined> {
  const statuses = [...(pod.status?.containerStatuses ?? []), ...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.ephemeralContainerStatuses ?? [])];
  const st = statuses.find((c) => c.name === name);
  if (!st?.containerID || !st.state?.running) return undefined;
  const id = st.containerID.replace(/^[a-z]+:\/\//, '');
  const now = await runtime.containerStatus(id).catch(() => undefined);
  return now?.state === 'CONTAINER_RUNNING' ? id : undefined;
}

/** Reads and checks a streaming request; throws HttpError with kubelet's answer. */
export async function streamTarget(host: StreamingHost, url: URL): Promise<StreamTarget> {
  const runtime = host.runtime;
  if (!runtime) throw new HttpError(500, 'no container runtime');
  const [kind = '', ...rest] = url.pathname.slice(1).split('/').map(decodeURIComponent);
  const [namespace = '', podName = ''] = rest;
  const q = url.searchParams;
  if (kind === 'portForward') {
    if (rest.length !== 2 || namespace === '' || podName === '') throw new HttpError(404, '404 page not found');
    const ports = q.getAll('port').flatMap((v) => v.split(',')).filter((p) => p !== '');
    if (ports.some((p) => !/^\d+$/.test(p) || Number(p) < 1 || Number(p) > 65535)) throw new HttpError(400, `invalid port: ${q.getAll('port').join(',')}`);
    const pod = host.podByName(namespace, podName);
    if (!pod) throw new HttpError(404, 'pod does not exist');
    const sandbox = (await runtime.listPodSandbox({ state: 'SANDBOX_READY' })).find((s) => s.metadata.uid === pod.metadata.uid);
    if (!sandbox) throw new HttpError(500, `pod not found (${JSON.stringify(`${podName}_${namespace}`)})`);
    return { kind, pod, sandboxId: sandbox.id, ports: ports.map(Number) };
  }
  if ((kind !== 'exec' && kind !== 'attach') || rest.length !== 3 || rest.some((p) => p === '')) throw new HttpError(404, '404 page not found');
  const container = rest[2]!;
  const options: StreamOptions = { stdin: flag(q, 'input'), stdout: flag(q, 'output'), stderr: flag(q, 'error'), tty: flag(q, 'tty') };
  if (!options.stdin && !options.stdout && !options.stderr) throw new HttpError(400, 'you must specify at least 1 of stdin, stdout, stderr');
  const pod = host.podByName(namespace, podName);
  if (!pod) throw new HttpError(404, 'pod does not exist');
  const containerId = await runningContainer(runtime, pod, container);
  if (!containerId) throw new HttpError(500, `container not found (${JSON.stringify(container)})`);
  return { kind, pod, containerId, cmd: q.getAll('command'), options };
}

/** The URL of the runtime's streaming server for the target, or undefined when the agent serves it itself. */
async function runtimeURL(runtime: Runtime, t: StreamTarget): Promise<URL | undefined> {
  let url: string | undefined;
  if (t.kind === 'exec' && runtime.getExecURL) url = await runtime.getExecURL(t.containerId, t.cmd, t.options);
  else if (t.kind === 'attach' && runtime.getAttachURL) url = await runtime.getAttachURL(t.containerId, t.options);
  else if (t.kind === 'portForward' && runtime.getPortForwardURL) url = await runtime.getPortForwardURL(t.sandboxId, t.ports);
  return url === undefined ? undefined : new URL(url);
}

/** The head of an HTTP/1.1 answer as the runtime's streaming server sent it. */
function answerHead(res: IncomingMessage): string {
  let head = `HTTP/1.1 ${res.statusCode ?? 502} ${res.statusMessage ?? ''}\r\n`;
  for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) head += `${res.rawHeaders[i]}: ${res.rawHeaders[i + 1]}\r\n`;
  return `${head}\r\n`;
}

/** kubelet's proxyStream: the client's upgrade request goes to the runtime's streaming server as it is. */
async function proxyToRuntime(req: IncomingMessage, socket: Duplex, head: Buffer, url: URL): Promise<void> {
  const headers: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(req.headers)) if (v !== undefined && k !== 'host') headers[k] = v;
  headers['host'] = url.host;
  const answer = await dialUpgrade(url, { method: req.method ?? 'GET', headers });
  if (!answer.upgraded) {
    const body = await readAll(answer.response);
    const res = answer.response;
    const raw = res.rawHeaders.filter((_, i) => i % 2 === 0).map((k) => k.toLowerCase());
    let text = answerHead(res);
    if (!raw.includes('content-length') && !raw.includes('transfer-encoding')) text = text.replace(/\r\n\r\n$/, `\r\nContent-Length: ${body.length}\r\n\r\n`);
    socket.end(Buffer.concat([Buffer.from(text, 'latin1'), body]));
    return;
  }
  socket.write(answerHead(answer.response), 'latin1');
  if (answer.head.length > 0) socket.write(answer.head);
  if (head.length > 0) answer.socket.write(head);
  await splice(socket, answer.socket);
}

export interface StreamingOptions {
  /** --streaming-connection-idle-timeout in ms; 0: none. */
  idleTimeoutMs: number;
  log?: (message: string) => void;
}

/** Serves an upgrade request on a streaming path (the caller authenticated it). */
export async function serveStreamingUpgrade(host: StreamingHost, req: IncomingMessage, socket: Duplex, head: Buffer, o: StreamingOptions): Promise<void> {
  socket.on('error', () => socket.destroy());
  const url = new URL(req.url ?? '/', 'http://agent');
  let target: StreamTarget;
  let forward: URL | undefined;
  try {
    target = await streamTarget(host, url);
    forward = await runtimeURL(host.runtime!, target);
  } catch (err) {
    const code = err instanceof HttpError ? err.code : 500;
    return refuseUpgrade(socket, code, err instanceof Error ? err.message : String(err));
  }
  try {
    if (forward) return await proxyToRuntime(req, socket, head, forward);
    const upgrade = (req.headers['upgrade'] ?? '').toLowerCase();
    const runtime = host.runtime!;
    if (upgrade === 'websocket') {
      const protocol = websocketProtocolOf(req, target.kind);
      if (protocol === undefined) return refuseUpgrade(socket, 400, `requested protocol(s) are not supported: ${req.headers['sec-websocket-protocol'] ?? ''}`);
      if (target.kind === 'portForward' && target.ports.length === 0) return refuseUpgrade(socket, 400, 'query parameter "port" is required');
      return await serveWebSocketStream(req, socket, head, runtime, target, o);
    }
    if (upgrade === SPDY_UPGRADE.toLowerCase()) {
      if (target.kind === 'portForward') return await serveSpdyPortForward(req, socket, head, runtime, target, o);
      return await serveSpdyExec(req, socket, head, runtime, target, o);
    }
    return refuseUpgrade(socket, 400, `unsupported upgrade protocol ${JSON.stringify(req.headers['upgrade'] ?? '')}`);
  } catch (err) {
    o.log?.(`streaming ${url.pathname}: ${err instanceof Error ? err.message : String(err)}`);
    socket.destroy();
  }
}

/** A streaming path asked for without an upgrade: checked as an upgrade would be, then refused. */
export async function serveStreamingRequest(host: StreamingHost, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://agent');
  let code = 400;
  let text = 'Upgrade request required';
  try {
    await streamTarget(host, url);
  } catch (err) {
    code = err instanceof HttpError ? err.code : 500;
    text = err instanceof Error ? err.message : String(err);
  }
  res.writeHead(code, { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}
