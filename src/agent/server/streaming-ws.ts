// The WebSocket channel protocols of exec and attach (Kubernetes' remotecommand over WebSocket), for
// runtimes whose streams the agent serves itself (the process runtime). kubectl 1.30 and later offer
// v5.channel.k8s.io first; v4.channel.k8s.io is served too.
//
// Every binary message starts with its channel: 0 stdin, 1 stdout, 2 stderr, 3 error (the final
// metav1.Status as JSON: Success, or Failure with reason NonZeroExitCode and the exit code as the
// message of the cause ExitCode), 4 resize (ignored: the process runtime has no terminal), and in v5
// 255 close (the client closed the channel in its second byte: 0 ends the command's stdin). The agent
// first sends an empty message on stdout (else stderr, else error) to say the streams are ready, and
// closes the connection after the status.
//
// Port-forward over WebSocket as kubelet 1.23 serves it (cri/streaming/portforward/websocket.go, what
// @kubernetes/client-node's PortForward speaks): the ports come from the `port` query parameter (required,
// 400 otherwise); protocols v4.channel.k8s.io (binary), v4.base64.channel.k8s.io (text: the channel as an
// ASCII digit, then base64) or none offered (binary). Port i has channels 2i (data, both ways) and 2i+1
// (error); each starts with the port as two little-endian bytes. A failed dial writes 'error forwarding
// port ...' on the error channel; the connection closes once every port's connection has ended. kubectl
// 1.30+'s tunnelled SPDY (SPDY/3.1+portforward.k8s.io) is refused, so that it falls back to SPDY.
import type { IncomingMessage } from 'node:http';
import type { Duplex, Readable } from 'node:stream';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import type { AttachSession, ExecSession, Runtime } from '../runtime/runtime.js';
import type { StreamingOptions, StreamTarget } from './streaming.js';
import { exitStatus, internalStatus, SUCCESS_STATUS } from './streaming-status.js';

export const CHANNEL_PROTOCOLS = ['v5.channel.k8s.io', 'v4.channel.k8s.io'];
/** The port-forward protocols of kubelet 1.23's WebSocket handler ('' when the client offers none). */
export const PORT_FORWARD_WS_PROTOCOLS = ['v4.channel.k8s.io', 'v4.base64.channel.k8s.io'];

const STDIN = 0;
const STDOUT = 1;
const STDERR = 2;
const ERROR = 3;
const CLOSE = 255;

/** The protocol the agent picks from the client's offer (the first it supports), if any. */
export function websocketProtocolOf(req: IncomingMessage, kind: StreamTarget['kind']): string | undefined {
  const offered = (req.headers['sec-websocket-protocol'] ?? '')
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '');
  if (kind === 'portForward') return offered.length === 0 ? '' : offered.find((p) => PORT_FORWARD_WS_PROTOCOLS.includes(p));
  return offered.find((p) => CHANNEL_PROTOCOLS.includes(p));
}

/** Closes the connection once nothing went either way for `ms` (0: never); returns the activity mark. */
function idleTimer(ms: number, close: () => void): { touch: () => void; stop: () => void } {
  let timer: NodeJS.Timeout | undefined;
  const touch = (): void => {
    if (ms <= 0) return;
    clearTimeout(timer);
    timer = setTimeout(close, ms);
    timer.unref();
  };
  touch();
  return { touch, stop: () => clearTimeout(timer) };
}

/** Sends a stream's data on a channel, pausing it while the socket's buffer is full; resolves at its end. */
function pump(ws: WebSocket, channel: number, stream: Readable, touch: () => void): Promise<void> {
  return new Promise((resolve) => {
    stream.on('data', (chunk: Buffer) => {
      touch();
      if (ws.readyState !== ws.OPEN) return;
      const full = ws.bufferedAmount > 1 << 20;
      if (full) stream.pause();
      ws.send(Buffer.concat([Buffer.from([channel]), chunk]), () => {
        if (full) stream.resume();
      });
    });
    stream.once('end', () => resolve());
    stream.once('close', () => resolve());
    stream.once('error', () => resolve());
  });
}

async function startSession(runtime: Runtime, t: Extract<StreamTarget, { kind: 'exec' | 'attach' }>): Promise<ExecSession | AttachSession> {
  if (t.kind === 'exec') {
    if (!runtime.execStream) throw new Error('the runtime cannot exec');
    return runtime.execStream(t.containerId, t.cmd, t.options);
  }
  if (!runtime.attachStream) throw new Error('the runtime cannot attach');
  return runtime.attachStream(t.containerId, t.options);
}

/** Upgrades to WebSocket and runs the exec or attach session over the channel protocol. */
export async function serveWebSocketStream(req: IncomingMessage, socket: Duplex, head: Buffer, runtime: Runtime, target: StreamTarget, o: StreamingOptions): Promise<void> {
  if (target.kind === 'portForward') return serveWebSocketPortForward(req, socket, head, runtime, target, o);
  const protocol = websocketProtocolOf(req, target.kind)!;
  const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false, handleProtocols: () => protocol });
  const ws = await new Promise<WebSocket>((resolve) => wss.handleUpgrade(req, socket, head, resolve));
  const idle = idleTimer(o.idleTimeoutMs, () => ws.terminate());
  const sendStatus = (status: object): void => {
    if (ws.readyState === ws.OPEN) ws.send(Buffer.concat([Buffer.from([ERROR]), Buffer.from(JSON.stringify(status))]));
  };
  const { options } = target;
  ws.send(Buffer.from([options.stdout ? STDOUT : options.stderr ? STDERR : ERROR]));
  let session: ExecSession | AttachSession;
  try {
    session = await startSession(runtime, target);
  } catch (err) {
    sendStatus(internalStatus(`error executing command in container: ${err instanceof Error ? err.message : String(err)}`));
    ws.close(1000);
    idle.stop();
    return;
  }
  const end = (): void => ('kill' in session ? session.kill() : session.detach());
  ws.on('close', end);
  ws.on('message', (data: RawData) => {
    idle.touch();
    const buf = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer);
    if (buf.length === 0) return;
    const channel = buf[0];
    if (channel === STDIN) session.stdin?.write(buf.subarray(1));
    else if (channel === CLOSE && buf[1] === STDIN) session.stdin?.end();
  });
  const outputs: Promise<void>[] = [];
  if (session.stdout) outputs.push(pump(ws, STDOUT, session.stdout, idle.touch));
  if (session.stderr) outputs.push(pump(ws, STDERR, session.stderr, idle.touch));
  const code = await session.exited;
  await Promise.all(outputs);
  idle.stop();
  ws.off('close', end);
  sendStatus(target.kind === 'exec' ? exitStatus(code, target.cmd) : SUCCESS_STATUS);
  ws.close(1000);
}

/** Port-forward over WebSocket: a data and an error channel per port of the `port` parameter. */
async function serveWebSocketPortForward(req: IncomingMessage, socket: Duplex, head: Buffer, runtime: Runtime, t: Extract<StreamTarget, { kind: 'portForward' }>, o: StreamingOptions): Promise<void> {
  const protocol = websocketProtocolOf(req, t.kind) ?? '';
  const base64 = protocol === 'v4.base64.channel.k8s.io';
  const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false, handleProtocols: () => (protocol === '' ? false : protocol) });
  const ws = await new Promise<WebSocket>((resolve) => wss.handleUpgrade(req, socket, head, resolve));
  const idle = idleTimer(o.idleTimeoutMs, () => ws.terminate());
  const send = (channel: number, data: Buffer, done?: () => void): void => {
    if (ws.readyState !== ws.OPEN) return;
    if (base64) ws.send(String.fromCharCode(48 + channel) + data.toString('base64'), done);
    else ws.send(Buffer.concat([Buffer.from([channel]), data]), done);
  };
  const conns: (Duplex | undefined)[] = [];
  const pending: Buffer[][] = t.ports.map(() => []);
  ws.on('message', (raw: RawData, isBinary: boolean) => {
    idle.touch();
    let buf = Array.isArray(raw) ? Buffer.concat(raw) : Buffer.from(raw as ArrayBuffer);
    if (buf.length === 0) return;
    let channel = buf[0]!;
    if (base64 && !isBinary) {
      channel -= 48;
      buf = Buffer.concat([Buffer.from([channel]), Buffer.from(buf.subarray(1).toString('latin1'), 'base64')]);
    }
    // Only the data channels (even numbers) are read from the client; anything else is ignored.
    if (channel % 2 !== 0 || channel / 2 >= t.ports.length) return;
    const i = channel / 2;
    const conn = conns[i];
    if (conn) conn.write(buf.subarray(1));
    else pending[i]?.push(buf.subarray(1));
  });
  const forward = async (i: number, port: number): Promise<void> => {
    const portBytes = Buffer.alloc(2);
    portBytes.writeUInt16LE(port);
    send(2 * i, portBytes);
    send(2 * i + 1, portBytes);
    let conn: Duplex;
    try {
      if (!runtime.portForwardDial) throw new Error('the runtime cannot forward ports');
      conn = await runtime.portForwardDial(t.sandboxId, port);
    } catch (err) {
      send(2 * i + 1, Buffer.from(`error forwarding port ${port} to pod ${t.pod.metadata.name}, uid ${t.pod.metadata.uid ?? ''}: ${err instanceof Error ? err.message : String(err)}`));
      return;
    }
    conns[i] = conn;
    for (const chunk of pending[i] ?? []) conn.write(chunk);
    pending[i] = [];
    ws.once('close', () => conn.destroy());
    conn.on('error', () => conn.destroy());
    await new Promise<void>((resolve) => {
      conn.on('data', (chunk: Buffer) => {
        idle.touch();
        const full = ws.bufferedAmount > 1 << 20;
        if (full) conn.pause();
        send(2 * i, chunk, () => {
          if (full) conn.resume();
        });
      });
      conn.once('end', () => resolve());
      conn.once('close', () => resolve());
    });
  };
  await Promise.all(t.ports.map((port, i) => forward(i, port)));
  idle.stop();
  if (ws.readyState === ws.OPEN) ws.close(1000);
}
