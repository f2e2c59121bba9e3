// One SPDY/3.1 connection on the server side, as Kubernetes' streaming uses it: the client opens the
// streams (SYN_STREAM), the agent accepts each with an empty SYN_REPLY and writes data frames, ending
// its side with FLAG_FIN. PINGs are answered, SETTINGS and WINDOW_UPDATE read, and the agent opens the
// window again (WINDOW_UPDATE for the stream and the session) for every data frame it receives: a
// peer that honours windows gets more once the agent has passed the data on (the session's window opens
// at once, a stream's when its reader has taken the data). The agent sends within the socket's
// backpressure and does not wait for the peer's WINDOW_UPDATEs.
import type { Duplex } from 'node:stream';
import { PassThrough } from 'node:stream';
import {
  controlFrame,
  dataFrame,
  FLAG_FIN,
  FrameReader,
  FrameType,
  goAwayPayload,
  HeaderCodec,
  RST_CANCEL,
  RST_PROTOCOL_ERROR,
  rstStreamPayload,
  synReplyPayload,
  windowUpdatePayload,
  type Frame,
  type HeaderBlock,
} from './framing.js';

/** Largest data frame the agent writes. */
const MAX_DATA = 32 * 1024;

export class SpdyStream {
  /** What the client sends on the stream; ends at its FLAG_FIN (or a reset). */
  readonly incoming = new PassThrough();
  private ended = false;
  reset = false;
  /** Whether the agent's side has ended. */
  get finished(): boolean {
    return this.ended;
  }
  private readonly resetListeners: (() => void)[] = [];
  constructor(
    private readonly conn: SpdyConnection,
    readonly id: number,
    readonly headers: HeaderBlock,
  ) {}
  header(name: string): string | undefined {
    return this.headers[name.toLowerCase()]?.[0];
  }
  /** Sends data; resolves once the socket can take more. */
  async write(data: Buffer): Promise<void> {
    if (this.ended || this.reset) return;
    for (let at = 0; at < data.length; at += MAX_DATA) await this.conn.send(dataFrame(this.id, 0, data.subarray(at, at + MAX_DATA)));
  }
  /** Ends the agent's side (an empty data frame with FLAG_FIN). */
  end(): Promise<void> {
    if (this.ended || this.reset) return Promise.resolve();
    this.ended = true;
    if (this.incoming.readableEnded) this.conn.forget(this.id);
    return this.conn.send(dataFrame(this.id, FLAG_FIN, Buffer.alloc(0)));
  }
  /** Abandons the stream (RST_STREAM CANCEL). */
  cancel(): void {
    if (this.reset) return;
    void this.conn.send(controlFrame(FrameType.RstStream, 0, rstStreamPayload(this.id, RST_CANCEL)));
    this.gotReset();
  }
  onReset(f: () => void): void {
    if (this.reset) f();
    else this.resetListeners.push(f);
  }
  /** @internal */
  gotReset(): void {
    if (this.reset) return;
    this.reset = true;
    this.incoming.end();
    for (const f of this.resetListeners.splice(0)) f();
  }
}

export interface ConnectionOptions {
  /** Closes the connection after this many ms without frames either way; 0: never. */
  idleTimeoutMs: number;
}

export class SpdyConnection {
  private readonly codec = new HeaderCodec();
  private readonly reader = new FrameReader();
  private readonly streams = new Map<number, SpdyStream>();
  private incoming: Promise<void> = Promise.resolve();
  private outgoing: Promise<void> = Promise.resolve();
  private lastStreamId = 0;
  private idle: NodeJS.Timeout | undefined;
  private closing = false;
  /** Resolves when the socket has closed. */
  readonly closed: Promise<void>;

  constructor(
    private readonly socket: Duplex,
    private readonly onStream: (s: SpdyStream) => void,
    private readonly o: ConnectionOptions,
  ) {
    this.closed = new Promise((resolve) => socket.once('close', () => resolve()));
    void this.closed.then(() => this.teardown());
    socket.on('data', (chunk: Buffer) => this.receive(chunk));
    socket.on('end', () => void socket.end());
    this.touch();
  }

  /** Feeds bytes that arrived with the upgrade request. */
  receive(chunk: Buffer): void {
    this.touch();
    let frames: Frame[];
    try {
      frames = this.reader.push(chunk);
    } catch {
      this.socket.destroy();
      return;
    }
    for (const f of frames) this.incoming = this.incoming.then(() => this.handle(f)).catch(() => void this.socket.destroy());
  }

  /** Queues bytes for the socket in order; resolves once written (or when the socket is full, once drained). */
  send(frame: Buffer | Promise<Buffer>): Promise<void> {
    const next = this.outgoing.then(async () => {
      const b = await frame;
      if (this.socket.destroyed || this.socket.writableEnded) return;
      this.touch();
      if (!this.socket.write(b)) await new Promise<void>((resolve) => {
        const done = (): void => {
          this.socket.off('drain', done);
          this.socket.off('close', done);
          resolve();
        };
        this.socket.on('drain', done);
        this.socket.on('close', done);
      });
    });
    this.outgoing = next.catch(() => undefined);
    return next;
  }

  /** Says GOAWAY once everything queued is out, then ends the connection. */
  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    await this.send(controlFrame(FrameType.GoAway, 0, goAwayPayload(this.lastStreamId, 0))).catch(() => undefined);
    this.socket.end();
  }

  /** Drops a stream both sides have finished. */
  forget(id: number): void {
    this.streams.delete(id);
  }

  private touch(): void {
    if (this.o.idleTimeoutMs <= 0) return;
    clearTimeout(this.idle);
    this.idle = setTimeout(() => this.socket.destroy(), this.o.idleTimeoutMs);
    this.idle.unref();
  }

  private teardown(): void {
    clearTimeout(this.idle);
    for (const s of this.streams.values()) s.gotReset();
    this.streams.clear();
    this.codec.close();
  }

  private async handle(f: Frame): Promise<void> {
    if (!f.control) {
      const s = this.streams.get(f.streamId);
      if (!s) {
        void this.send(controlFrame(FrameType.RstStream, 0, rstStreamPayload(f.streamId, RST_PROTOCOL_ERROR)));
        return;
      }
      if (f.payload.length > 0) {
        // The session's window opens at once; the stream's once its reader has taken the data.
        void this.send(controlFrame(FrameType.WindowUpdate, 0, windowUpdatePayload(0, f.payload.length)));
        const id = f.streamId;
        const n = f.payload.length;
        if (s.incoming.write(f.payload)) void this.send(controlFrame(FrameType.WindowUpdate, 0, windowUpdatePayload(id, n)));
        else s.incoming.once('drain', () => void this.send(controlFrame(FrameType.WindowUpdate, 0, windowUpdatePayload(id, n))));
      }
      if (f.flags & FLAG_FIN) s.incoming.end();
      return;
    }
    const p = f.payload;
    switch (f.type) {
      case FrameType.SynStream: {
        const id = p.readUInt32BE(0) & 0x7fffffff;
        const headers = await this.codec.decompress(p.subarray(10));
        this.lastStreamId = Math.max(this.lastStreamId, id);
        const s = new SpdyStream(this, id, headers);
        this.streams.set(id, s);
        s.incoming.once('end', () => {
          if (s.reset || s.finished) this.forget(id);
        });
        if (f.flags & FLAG_FIN) s.incoming.end();
        void this.send(this.codec.compress({}).then((block) => controlFrame(FrameType.SynReply, 0, synReplyPayload(id, block))));
        this.onStream(s);
        return;
      }
      case FrameType.SynReply:
      case FrameType.Headers:
        await this.codec.decompress(p.subarray(4));
        return;
      case FrameType.RstStream: {
        const id = p.readUInt32BE(0) & 0x7fffffff;
        this.streams.get(id)?.gotReset();
        this.streams.delete(id);
        return;
      }
      case FrameType.Ping:
        void this.send(controlFrame(FrameType.Ping, 0, p));
        return;
      case FrameType.GoAway:
        this.socket.end();
        return;
      default:
        return; // SETTINGS, WINDOW_UPDATE, unknown types: nothing to do.
    }
  }
}
