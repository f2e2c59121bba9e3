/**
 * A local forwarding listener: a client that can only be given an address (the etcd client, whose gRPC
 * channel dials by itself) reaches host:port through a Dialer by connecting to 127.0.0.1:<port> instead.
 * Each accepted connection is one dial; bytes are copied both ways until either side closes.
 */
import { createServer, type Socket } from 'node:net';
import type { Dialer } from './dial.js';

export interface Forwarder {
  /** The local port that leads to the target. */
  readonly port: number;
  /** Stops listening and ends the forwarded connections. */
  close(): Promise<void>;
}

export async function forwardThrough(dial: Dialer, host: string, port: number, log?: (message: string) => void): Promise<Forwarder> {
  const open = new Set<{ destroy(): void }>();
  const server = createServer((client: Socket) => {
    open.add(client);
    client.once('close', () => open.delete(client));
    client.on('error', () => client.destroy());
    client.pause();
    dial(host, port).then(
      (upstream) => {
        if (client.destroyed) {
          upstream.destroy();
          return;
        }
        open.add(upstream);
        upstream.once('close', () => {
          open.delete(upstream);
          client.destroy();
        });
        upstream.on('error', () => upstream.destroy());
        client.once('close', () => upstream.destroy());
        client.pipe(upstream);
        upstream.pipe(client);
        client.resume();
      },
      (err: Error) => {
        log?.(`forwarding to ${host}:${port}: ${err.message}`);
        client.destroy();
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  return {
    port: typeof address === 'object' && address ? address.port : 0,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of open) s.destroy();
      }),
  };
}
