/**
 * Passing an upgraded HTTP/1.1 connection on (Kubernetes' UpgradeAwareHandler): the API server forwards
 * kubectl's exec, attach and port-forward upgrades to the node agent, and the agent forwards them to the
 * container runtime's streaming server. Neither speaks the streaming protocol: dialUpgrade sends the
 * client's request on, and splice copies bytes both ways once the other side switched protocols.
 */
import { request as httpRequest, type IncomingMessage, type OutgoingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Duplex } from 'node:stream';
import type { viaDialer } from './dial.js';

export interface DialOptions {
  method: string;
  headers: OutgoingHttpHeaders;
  /** For https URLs: the CA to verify with (no verification without one), and a client certificate. */
  ca?: string | Buffer;
  cert?: string | Buffer;
  key?: string | Buffer;
  /** Time to wait for the answer's head, in ms (default 30 s). */
  timeoutMs?: number;
  /** Aborts the dial (the client went away). */
  signal?: AbortSignal;
  /** Opens the connection instead of a direct dial (the server's egress; see dial.ts viaDialer). */
  createConnection?: ReturnType<typeof viaDialer>;
}

export type DialResult =
  /** The other side switched protocols: its 101 answer, its socket, and bytes it sent past the head. */
  | { upgraded: true; response: IncomingMessage; socket: Duplex; head: Buffer }
  /** It answered without switching: the answer, with its body still to read. */
  | { upgraded: false; response: IncomingMessage };

/** Sends an upgrade request to `url`; rejects with the connection error (or a header timeout). */
export function dialUpgrade(url: URL, o: DialOptions): Promise<DialResult> {
  const common = {
    method: o.method,
    headers: o.headers,
    ...(o.createConnection ? { createConnection: o.createConnection as never, defaultPort: url.protocol === 'https:' ? 443 : 80 } : { agent: false as const }),
  };
  const req =
    url.protocol === 'https:'
      ? httpsRequest(url, {
          ...common,
          rejectUnauthorized: o.ca !== undefined,
          ...(o.ca !== undefined ? { ca: o.ca } : {}),
          ...(o.cert !== undefined ? { cert: o.cert } : {}),
          ...(o.key !== undefined ? { key: o.key } : {}),
        })
      : httpRequest(url, common);
  return new Promise<DialResult>((resolve, reject) => {
    const timer = setTimeout(() => req.destroy(new Error('timeout awaiting response headers')), o.timeoutMs ?? 30_000);
    const abort = (): void => {
      req.destroy(new Error('the client went away'));
    };
    o.signal?.addEventListener('abort', abort, { once: true });
    const done = (): void => {
      clearTimeout(timer);
      o.signal?.removeEventListener('abort', abort);
    };
    req.once('upgrade', (response: IncomingMessage, socket: Duplex, head: Buffer) => {
      done();
      resolve({ upgraded: true, response, socket, head });
    });
    req.once('response', (response: IncomingMessage) => {
      done();
      resolve({ upgraded: false, response });
    });
    req.once('error', (err: Error) => {
      done();
      reject(err);
    });
    req.end();
  });
}

/** Copies bytes both ways until either side closes (the other is then closed too); resolves once both are. */
export function splice(a: Duplex, b: Duplex): Promise<void> {
  return new Promise((resolve) => {
    let open = 2;
    const closed = (): void => {
      if (--open === 0) resolve();
    };
    for (const [x, y] of [
      [a, b],
      [b, a],
    ] as const) {
      x.once('close', closed);
      x.once('close', () => y.destroy());
      x.on('error', () => y.destroy());
      x.pipe(y);
    }
  });
}

/** Reads a (small) answer body whole. */
export async function readAll(stream: IncomingMessage, limit = 1 << 20): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of stream) {
    chunks.push(c as Buffer);
    size += (c as Buffer).length;
    if (size > limit) break;
  }
  return Buffer.concat(chunks);
}
