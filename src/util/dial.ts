/**
 * Dialers: how a part of the server opens a TCP connection when it must not dial directly (the egress
 * selector, --egress-selector-config-file, gives one per egress type). A Dialer resolves with a byte stream
 * to host:port (a tunnel through a proxy); viaDialer turns it into the `createConnection` option of Node's
 * http.request/https.request (TLS is then spoken over the tunnel). Parts that dial take an optional Dialer:
 * without one they dial directly, as before.
 */
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { ConnectionOptions } from 'node:tls';
import { connect as tlsConnect } from './node-tls.js';

/** Opens a connection to host:port (a bare IPv6 address without brackets). */
export type Dialer = (host: string, port: number) => Promise<Duplex>;

type CreateConnection = (options: Record<string, unknown>, done: (err: Error | null, socket?: Duplex) => void) => undefined;

/**
 * The `createConnection` request option that opens the request's connection with dial (TLS over it when
 * secure, with the request's TLS options). Pass it instead of an `agent`.
 */
export function viaDialer(dial: Dialer, secure: boolean): CreateConnection {
  return (options, done) => {
    const named = options['host'] ?? options['hostname'];
    const host = (typeof named === 'string' && named !== '' ? named : 'localhost').replace(/^\[|\]$/g, '');
    const port = Number(options['port'] ?? (secure ? 443 : 80));
    // The request's `timeout` is the socket's idle timeout; net.connect sets it, a custom connection must too,
    // and it bounds the dial as well.
    const timeout = typeof options['timeout'] === 'number' && options['timeout'] > 0 ? options['timeout'] : undefined;
    let settled = false;
    const timer = timeout
      ? setTimeout(() => {
          settled = true;
          done(new Error(`dial ${host}:${port}: i/o timeout`));
        }, timeout)
      : undefined;
    dial(host, port).then(
      (tunnel) => {
        clearTimeout(timer);
        if (settled) {
          tunnel.destroy();
          return;
        }
        settled = true;
        const conn = secure ? tlsConnect({ ...(options as ConnectionOptions), socket: tunnel }) : tunnel;
        if (timeout) (conn as Partial<Socket>).setTimeout?.(timeout);
        done(null, conn);
        // A dialer may hand the tunnel over paused; the peer speaks only after the request is written.
        if (!secure) tunnel.resume();
      },
      (err: Error) => {
        clearTimeout(timer);
        if (settled) return;
        settled = true;
        done(err);
      },
    );
    return undefined;
  };
}

/**
 * The request options that open the connection with dial: viaDialer's `createConnection`, and the scheme's
 * default port (without an agent, Node's client would otherwise take 80 for a URL without a port, in the
 * dial and in the Host header).
 */
export function dialOptions(dial: Dialer, secure: boolean): { createConnection: never; defaultPort: number } {
  return { createConnection: viaDialer(dial, secure) as never, defaultPort: secure ? 443 : 80 };
}

/** Node's http client calls these on its socket; a tunnel that is not a net.Socket gets harmless stand-ins. */
export function socketLike<T extends Duplex>(stream: T): T & Pick<Socket, 'setNoDelay' | 'setKeepAlive' | 'ref' | 'unref'> {
  const s = stream as T & Partial<Socket>;
  s.setNoDelay ??= () => s as Socket;
  s.setKeepAlive ??= () => s as Socket;
  s.ref ??= () => s as Socket;
  s.unref ??= () => s as Socket;
  return s as T & Pick<Socket, 'setNoDelay' | 'setKeepAlive' | 'ref' | 'unref'>;
}
