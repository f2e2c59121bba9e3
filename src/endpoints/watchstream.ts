/**
 * Serving a watch: a chunked stream of JSON watch events, one per line, as Kubernetes writes them
 * ({"type":"ADDED","object":{...}}). Backpressure: the next event is read from the store only once the
 * connection has taken the previous one. Ends at timeoutSeconds, when the client goes away, or when the
 * server stops.
 */
import type { Writable } from 'node:stream';
import type { RequestScope, ResourceStore, WatchOptions } from '../registry/store.js';
import type { ApiRequest, ApiResponse } from './http.js';
import type { KObject } from '../registry/kind.js';
import { encodeWatchEventProtobuf } from '../registry/protobuf.js';

export async function serveWatch(
  req: ApiRequest,
  res: ApiResponse,
  store: ResourceStore,
  scope: RequestScope,
  opts: WatchOptions,
  transform: (obj: KObject) => unknown,
  timeoutSeconds: number,
  signal?: AbortSignal,
  /** The protobuf media type the client accepted (either spelling); JSON when unset. */
  protobufMediaType?: string,
): Promise<void> {
  const protobuf = protobufMediaType !== undefined;
  const watch = store.watch(scope, opts);
  const stop = () => watch.close();
  const timer = setTimeout(stop, timeoutSeconds * 1000);
  timer.unref();
  req.once('close', stop);
  res.once('close', stop);
  signal?.addEventListener('abort', stop, { once: true });
  try {
    res.statusCode = 200;
    res.setHeader('Content-Type', protobuf ? `${protobufMediaType};stream=watch` : 'application/json');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Cache-Control', 'no-cache, private');
    (res as { flushHeaders?: () => void }).flushHeaders?.();
    for await (const ev of watch) {
      const change = ev.type === 'ADDED' || ev.type === 'MODIFIED' || ev.type === 'DELETED';
      const object = change ? transform(ev.object) : ev.object;
      const encode = () => (protobuf ? encodeWatchEventProtobuf(ev.type, object as object) : JSON.stringify({ type: ev.type, object }) + '\n');
      let line: string | Buffer;
      if (change && object === ev.object && typeof object === 'object' && object !== null) {
        // The object as the store gave it (no Table or metadata-only conversion): the same object reaches every
        // watcher of this event, so the line is encoded once per event type and content type and shared.
        let byOutput = store.watchEncodings.get(object);
        if (!byOutput) store.watchEncodings.set(object, (byOutput = new Map()));
        const k = protobuf ? `${ev.type} pb` : `${ev.type} json`;
        const done = byOutput.get(k);
        if (done === undefined) byOutput.set(k, (line = encode()));
        else line = done;
      } else {
        line = encode();
      }
      if (!(res as unknown as Writable).write(line)) {
        await new Promise<void>((resolve) => {
          const done = () => {
            res.off('drain', done);
            res.off('close', done);
            resolve();
          };
          res.on('drain', done);
          res.on('close', done);
        });
      }
      if (res.destroyed || (res as { writableEnded?: boolean }).writableEnded) break;
    }
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', stop);
    watch.close();
    if (!res.destroyed && !(res as { writableEnded?: boolean }).writableEnded) res.end();
  }
}
