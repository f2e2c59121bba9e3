// SPDY/3.1 for runtimes whose streams the agent serves itself (the process runtime), as kubelet's
// streaming server speaks it (framing and connection in ./spdy/):
//   - the upgrade: Connection: Upgrade, Upgrade: SPDY/3.1, and X-Stream-Protocol-Version picked from the
//     client's offer in its order (exec and attach: v4.channel.k8s.io, v3, v2, channel.k8s.io;
//     port-forward: portforward.k8s.io); an offer with none of them gets 403 as from kubelet;
//   - exec and attach: the client opens one stream per role (header streamType: error, stdin, stdout,
//     stderr, resize); once all the request asks for are there the command starts; stdout and stderr
//     end with FLAG_FIN, then the error stream carries the end: in v4 a metav1.Status as JSON (Success,
//     or NonZeroExitCode with the exit code), in the older protocols the error's text only;
//   - port-forward: a pair of streams per connection (streamType error and data, with port and
//     requestID); the agent dials the port in the pod's network, copies both ways, and on failure writes
//     kubelet's message on the error stream.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { AttachSession, ExecSession, Runtime } from '../runtime/runtime.js';
import { SpdyConnection, type SpdyStream } from './spdy/connection.js';
import type { StreamingOptions, StreamTarget } from './streaming.js';
import { exitStatus, internalStatus, SUCCESS_STATUS } from './streaming-status.js';

export const SPDY_UPGRADE = 'SPDY/3.1';
export const EXEC_PROTOCOLS = ['v4.channel.k8s.io', 'v3.channel.k8s.io', 'v2.channel.k8s.io', 'channel.k8s.io'];
export const PORT_FORWARD_PROTOCOLS = ['portforward.k8s.io'];

/** How long the client has to open the streams the request asks for (kubelet's stream creation timeout). */
const STREAM_CREATION_TIMEOUT_MS = 30_000;

/** The protocol picked from the client's X-Stream-Protocol-Version offer; '' when it offered none; undefined: no match. */
export function negotiate(req: IncomingMessage, supported: string[]): string | undefined {
  const raw = req.headers['x-stream-protocol-version'];
  const offered = (Array.isArray(raw) ? raw.join(',') : (raw ?? ''))
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '');
  if (offered.length === 0) return '';
  return offered.find((p) => supported.includes(p));
}

/** Answers the upgrade (101 with the protocol picked) and starts the SPDY connection; undefined when refused. */
function upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, supported: string[], onStream: (s: SpdyStream) => void, o: StreamingOptions): { conn: SpdyConnection; protocol: string } | undefined {
  const protocol = negotiate(req, supported);
  if (protocol === undefined) {
    const offered = String(req.headers['x-stream-protocol-version'] ?? '');
    const body = `unable to upgrade: unable to negotiate protocol: client supports [${offered.split(',').map((p) => p.trim()).join(' ')}], server supports [${supported.join(' ')}]`;
    socket.end(
      `HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain; charset=utf-8\r\nX-Accepted-Stream-Protocol-Versions: ${supported.join(', ')}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
    return undefined;
  }
  socket.write(`HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: ${SPDY_UPGRADE}\r\n${protocol ? `X-Stream-Protocol-Version: ${protocol}\r\n` : ''}\r\n`);
  const conn = new SpdyConnection(socket, onStream, { idleTimeoutMs: o.idleTimeoutMs });
  if (head.length > 0) conn.receive(head);
  return { conn, protocol };
}

/** Copies a readable into a stream's data frames; resolves at its end or close (after the FIN). */
function pump(from: NodeJS.ReadableStream, to: SpdyStream): Promise<void> {
  return new Promise((resolve) => {
    let writing = Promise.resolve();
    from.on('data', (c: Buffer) => {
      from.pause();
      writing = to.write(c).then(() => void from.resume());
    });
    const done = (): void => void writing.then(() => to.end()).then(resolve, resolve);
    from.once('end', done);
    from.once('close', done);
    from.once('error', done);
  });
}

/** exec and attach over SPDY. */
export async function serveSpdyExec(req: IncomingMessage, socket: Duplex, head: Buffer, runtime: Runtime, t: StreamTarget, o: StreamingOptions): Promise<void> {
  if (t.kind === 'portForward') throw new Error('not an exec or attach');
  const { options } = t;
  const wanted = new Set(['error']);
  if (options.stdin) wanted.add('stdin');
  if (options.stdout) wanted.add('stdout');
  if (options.stderr && !options.tty) wanted.add('stderr');
  // v3 and v4 clients open a resize stream under a tty (the process runtime has no terminal to resize).
  const offered = negotiate(req, EXEC_PROTOCOLS);
  if (options.tty && (offered === 'v4.channel.k8s.io' || offered === 'v3.channel.k8s.io')) wanted.add('resize');
  const streams = new Map<string, SpdyStream>();
  let ready!: () => void;
  const allThere = new Promise<void>((resolve) => (ready = resolve));
  const up = upgrade(
    req,
    socket,
    head,
    EXEC_PROTOCOLS,
    (s) => {
      const type = s.header('streamtype') ?? '';
      if (type === 'resize' || !wanted.has(type) || streams.has(type)) s.incoming.resume();
      if (!wanted.has(type) || streams.has(type)) return;
      streams.set(type, s);
      if (streams.size === wanted.size) ready();
    },
    o,
  );
  if (!up) return;
  const { conn, protocol } = up;
  const timer = setTimeout(() => void conn.close(), STREAM_CREATION_TIMEOUT_MS);
  const gone = conn.closed.then(() => 'gone' as const);
  if ((await Promise.race([allThere.then(() => 'ready' as const), gone])) === 'gone') return clearTimeout(timer);
  clearTimeout(timer);
  const errorStream = streams.get('error')!;
  errorStream.incoming.resume();
  const finish = async (status: object | undefined, text: string | undefined): Promise<void> => {
    if (protocol === 'v4.channel.k8s.io') {
      if (status) await errorStream.write(Buffer.from(JSON.stringify(status)));
    } else if (text) await errorStream.write(Buffer.from(text));
    await errorStream.end();
    await conn.close();
  };
  let session: ExecSession | AttachSession;
  try {
    if (t.kind === 'exec') {
      if (!runtime.execStream) throw new Error('the runtime cannot exec');
      session = await runtime.execStream(t.containerId, t.cmd, options);
    } else {
      if (!runtime.attachStream) throw new Error('the runtime cannot attach');
      session = await runtime.attachStream(t.containerId, options);
    }
  } catch (err) {
    const message = `error executing command in container: ${err instanceof Error ? err.message : String(err)}`;
    return finish(internalStatus(message), message);
  }
  const end = (): void => ('kill' in session ? session.kill() : session.detach());
  void conn.closed.then(end);
  const stdin = streams.get('stdin');
  if (stdin) {
    if (session.stdin) stdin.incoming.pipe(session.stdin);
    else stdin.incoming.resume();
  }
  const outputs: Promise<void>[] = [];
  for (const [type, from] of [
    ['stdout', session.stdout],
    ['stderr', session.stderr],
  ] as const) {
    const to = streams.get(type);
    if (!to) continue;
    to.incoming.resume();
    if (from) outputs.push(pump(from, to));
    else outputs.push(to.end());
  }
  const code = await session.exited;
  await Promise.all(outputs);
  if (t.kind === 'attach' || code === 0) return finish(SUCCESS_STATUS, undefined);
  const status = exitStatus(code, t.cmd) as { message: string };
  return finish(status, status.message);
}

/** port-forward over SPDY: one pair of streams (error, data) per forwarded connection. */
export async function serveSpdyPortForward(req: IncomingMessage, socket: Duplex, head: Buffer, runtime: Runtime, t: StreamTarget, o: StreamingOptions): Promise<void> {
  if (t.kind !== 'portForward') throw new Error('not a port-forward');
  const pairs = new Map<string, { error?: SpdyStream; data?: SpdyStream }>();
  const forward = async (port: number, error: SpdyStream, data: SpdyStream): Promise<void> => {
    error.incoming.resume();
    let conn: Duplex;
    try {
      if (!runtime.portForwardDial) throw new Error('the runtime cannot forward ports');
      conn = await runtime.portForwardDial(t.sandboxId, port);
    } catch (err) {
      const message = `error forwarding port ${port} to pod ${t.pod.metadata.name}, uid ${t.pod.metadata.uid ?? ''}: ${err instanceof Error ? err.message : String(err)}`;
      await error.write(Buffer.from(message));
      await error.end();
      await data.end();
      return;
    }
    conn.on('error', () => conn.destroy());
    data.onReset(() => conn.destroy());
    data.incoming.pipe(conn);
    await pump(conn, data);
    await error.end();
  };
  const up = upgrade(
    req,
    socket,
    head,
    PORT_FORWARD_PROTOCOLS,
    (s) => {
      const type = s.header('streamtype');
      const id = s.header('requestid') ?? String(type === 'data' ? s.id - 2 : s.id);
      const port = Number(s.header('port') ?? 'NaN');
      if ((type !== 'error' && type !== 'data') || !Number.isInteger(port) || port < 1 || port > 65535) {
        s.cancel();
        return;
      }
      const pair = pairs.get(id) ?? {};
      pair[type] = s;
      pairs.set(id, pair);
      if (pair.error && pair.data) {
        pairs.delete(id);
        void forward(port, pair.error, pair.data).catch(() => pair.data?.cancel());
      }
    },
    o,
  );
  if (!up) return;
  await up.conn.closed;
}
