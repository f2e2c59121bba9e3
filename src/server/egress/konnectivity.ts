/**
 * The GRPC egress protocol: a konnectivity client (konnectivity.proto). As kube-apiserver 1.23 uses
 * konnectivity-client's single-use tunnel, each dial opens its own gRPC connection to the proxy server and one
 * ProxyService.Proxy stream on it: DIAL_REQ {protocol "tcp", address host:port, random} is answered by DIAL_RSP
 * (an error, or the connectID); bytes then travel as DATA packets both ways; the side that closes sends
 * CLOSE_REQ and the other answers CLOSE_RSP, after which the stream and the connection end. gRPC is loaded
 * only when a GRPC egress selection is configured.
 */
import { randomBytes } from 'node:crypto';
import { Duplex } from 'node:stream';
import type { ClientDuplexStream } from '@grpc/grpc-js';
import type { Dialer } from '../../util/dial.js';
import { DialError } from './metrics.js';

const PROXY_METHOD = '/ProxyService/Proxy';
/** konnectivity-client's dial and close timeouts. */
const DIAL_TIMEOUT_MS = 30_000;
const CLOSE_TIMEOUT_MS = 30_000;

export const PacketType = { DIAL_REQ: 0, DIAL_RSP: 1, CLOSE_REQ: 2, CLOSE_RSP: 3, DATA: 4, DIAL_CLS: 5 } as const;

// ---- Packet, encoded and decoded by hand (field numbers of konnectivity.proto) ------------------------------

function varint(out: number[], v: bigint): void {
  let n = BigInt.asUintN(64, v);
  while (n >= 0x80n) {
    out.push(Number(n & 0x7fn) | 0x80);
    n >>= 7n;
  }
  out.push(Number(n));
}

class Writer {
  private readonly parts: Buffer[] = [];
  int(field: number, v: number | bigint): this {
    if (v === 0 || v === 0n) return this;
    const b: number[] = [];
    varint(b, BigInt(field << 3));
    varint(b, BigInt(v));
    this.parts.push(Buffer.from(b));
    return this;
  }
  bytes(field: number, v: Buffer | string, always = false): this {
    const data = typeof v === 'string' ? Buffer.from(v, 'utf8') : v;
    if (data.length === 0 && !always) return this;
    const b: number[] = [];
    varint(b, BigInt((field << 3) | 2));
    varint(b, BigInt(data.length));
    this.parts.push(Buffer.from(b), data);
    return this;
  }
  finish(): Buffer {
    return Buffer.concat(this.parts);
  }
}

/** Fields of one message: varints as bigint, length-delimited fields as Buffers (last one wins). */
function fields(buf: Buffer): Map<number, bigint | Buffer> {
  const out = new Map<number, bigint | Buffer>();
  let i = 0;
  const readVarint = (): bigint => {
    let v = 0n;
    let shift = 0n;
    for (;;) {
      if (i >= buf.length) throw new Error('truncated varint');
      const b = buf[i++]!;
      v |= BigInt(b & 0x7f) << shift;
      if (b < 0x80) return v;
      shift += 7n;
    }
  };
  while (i < buf.length) {
    const key = Number(readVarint());
    const field = key >> 3;
    switch (key & 7) {
      case 0:
        out.set(field, readVarint());
        break;
      case 1:
        i += 8;
        break;
      case 2: {
        const len = Number(readVarint());
        if (i + len > buf.length) throw new Error('truncated field');
        out.set(field, buf.subarray(i, i + len));
        i += len;
        break;
      }
      case 5:
        i += 4;
        break;
      default:
        throw new Error(`unsupported wire type ${key & 7}`);
    }
  }
  return out;
}

export type Packet =
  | { type: 0; dialRequest: { protocol: string; address: string; random: bigint } }
  | { type: 1; dialResponse: { error: string; connectID: bigint; random: bigint } }
  | { type: 2; closeRequest: { connectID: bigint } }
  | { type: 3; closeResponse: { error: string; connectID: bigint } }
  | { type: 4; data: { connectID: bigint; error: string; data: Buffer } }
  | { type: 5; closeDial: { random: bigint } };

export function encodePacket(p: Packet): Buffer {
  const w = new Writer().int(1, p.type);
  switch (p.type) {
    case 0:
      return w.bytes(2, new Writer().bytes(1, p.dialRequest.protocol).bytes(2, p.dialRequest.address).int(3, p.dialRequest.random).finish(), true).finish();
    case 1:
      return w.bytes(3, new Writer().bytes(1, p.dialResponse.error).int(2, p.dialResponse.connectID).int(3, p.dialResponse.random).finish(), true).finish();
    case 2:
      return w.bytes(5, new Writer().int(1, p.closeRequest.connectID).finish(), true).finish();
    case 3:
      return w.bytes(6, new Writer().bytes(1, p.closeResponse.error).int(2, p.closeResponse.connectID).finish(), true).finish();
    case 4:
      return w.bytes(4, new Writer().int(1, p.data.connectID).bytes(2, p.data.error).bytes(3, p.data.data).finish(), true).finish();
    case 5:
      return w.bytes(7, new Writer().int(1, p.closeDial.random).finish(), true).finish();
  }
}

export function decodePacket(buf: Buffer): Packet {
  const f = fields(buf);
  const type = Number(f.get(1) ?? 0n);
  const sub = (n: number): Map<number, bigint | Buffer> => {
    const v = f.get(n);
    return v instanceof Buffer ? fields(v) : new Map();
  };
  const int = (m: Map<number, bigint | Buffer>, n: number): bigint => BigInt.asIntN(64, (m.get(n) as bigint | undefined) ?? 0n);
  const str = (m: Map<number, bigint | Buffer>, n: number): string => ((m.get(n) as Buffer | undefined) ?? Buffer.alloc(0)).toString('utf8');
  switch (type) {
    case PacketType.DIAL_REQ: {
      const m = sub(2);
      return { type, dialRequest: { protocol: str(m, 1), address: str(m, 2), random: int(m, 3) } };
    }
    case PacketType.DIAL_RSP: {
      const m = sub(3);
      return { type, dialResponse: { error: str(m, 1), connectID: int(m, 2), random: int(m, 3) } };
    }
    case PacketType.CLOSE_REQ:
      return { type, closeRequest: { connectID: int(sub(5), 1) } };
    case PacketType.CLOSE_RSP: {
      const m = sub(6);
      return { type, closeResponse: { error: str(m, 1), connectID: int(m, 2) } };
    }
    case PacketType.DATA: {
      const m = sub(4);
      return { type, data: { connectID: int(m, 1), error: str(m, 2), data: Buffer.from((m.get(3) as Buffer | undefined) ?? Buffer.alloc(0)) } };
    }
    case PacketType.DIAL_CLS:
      return { type, closeDial: { random: int(sub(7), 1) } };
    default:
      throw new Error(`unknown packet type ${type}`);
  }
}

// ---- the tunnel --------------------------------------------------------------------------------------------

/** One proxied connection: a Duplex over DATA packets on the Proxy stream. */
class TunnelConnection extends Duplex {
  private closing = false;
  private idle: NodeJS.Timeout | undefined;
  private idleMs = 0;

  constructor(
    private readonly stream: ClientDuplexStream<Buffer, Buffer>,
    readonly connectID: bigint,
    private readonly release: () => void,
  ) {
    super({ allowHalfOpen: false });
  }

  /** A packet for this connection from the proxy server. */
  receive(p: Packet): void {
    this.touch();
    if (p.type === PacketType.DATA && p.data.connectID === this.connectID) {
      if (p.data.error) this.destroy(new Error(p.data.error));
      else if (p.data.data.length > 0) this.push(p.data.data);
    } else if (p.type === PacketType.CLOSE_RSP && p.closeResponse.connectID === this.connectID) {
      this.closing = true;
      this.push(null);
      this.destroy();
    }
  }

  override _read(): void {
    // Packets are pushed as they arrive; gRPC's own flow control bounds them.
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    this.touch();
    const ok = this.stream.write(encodePacket({ type: PacketType.DATA, data: { connectID: this.connectID, error: '', data: chunk } }));
    if (ok) cb();
    else this.stream.once('drain', () => cb());
  }

  override _final(cb: (err?: Error | null) => void): void {
    this.sendClose();
    cb();
  }

  override _destroy(err: Error | null, cb: (err?: Error | null) => void): void {
    if (this.idle) clearTimeout(this.idle);
    this.sendClose();
    this.release();
    cb(err);
  }

  private sendClose(): void {
    if (this.closing) return;
    this.closing = true;
    this.stream.write(encodePacket({ type: PacketType.CLOSE_REQ, closeRequest: { connectID: this.connectID } }));
  }

  /** net.Socket's idle timeout, which Node's http client sets. */
  setTimeout(ms: number, cb?: () => void): this {
    if (cb) this.once('timeout', cb);
    this.idleMs = ms;
    this.touch();
    return this;
  }

  private touch(): void {
    if (this.idle) clearTimeout(this.idle);
    this.idle = this.idleMs > 0 ? setTimeout(() => this.emit('timeout'), this.idleMs).unref() : undefined;
  }

  setNoDelay(): this {
    return this;
  }
  setKeepAlive(): this {
    return this;
  }
  ref(): this {
    return this;
  }
  unref(): this {
    return this;
  }
}

/**
 * A Dialer over the konnectivity protocol to the proxy server on the Unix socket `socketPath` (the only
 * transport 1.23 allows for GRPC): one gRPC connection and Proxy stream per dial.
 */
export function konnectivityDialer(socketPath: string): Dialer {
  return async (host, port) => {
    const grpc = await import('@grpc/grpc-js');
    const client = new grpc.Client(`unix:${socketPath}`, grpc.credentials.createInsecure());
    const address = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
    const stream = client.makeBidiStreamRequest(
      PROXY_METHOD,
      (b: Buffer) => b,
      (b: Buffer) => b,
    );
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      // The server ends the stream after CLOSE_RSP; without it, give up after konnectivity's close timeout.
      const timer = setTimeout(() => {
        stream.cancel();
        client.close();
      }, CLOSE_TIMEOUT_MS).unref();
      stream.once('close', () => {
        clearTimeout(timer);
        client.close();
      });
      stream.end();
    };
    const random = BigInt.asIntN(64, randomBytes(8).readBigUInt64BE()) & 0x7fffffffffffffffn;
    return new Promise<Duplex>((resolve, reject) => {
      let conn: TunnelConnection | undefined;
      // Until the proxy server answers, a failure is reaching it; after, its refusal of the dial.
      let answered = false;
      const fail = (err: Error): void => {
        clearTimeout(timer);
        if (conn) conn.destroy(err);
        else {
          stream.cancel();
          client.close();
          reject(new DialError(`dial ${address} through the konnectivity server ${socketPath}: ${err.message}`, answered ? 'proxy' : 'connect'));
        }
      };
      const timer = setTimeout(() => {
        stream.write(encodePacket({ type: PacketType.DIAL_CLS, closeDial: { random } }));
        fail(new Error('dial timeout'));
      }, DIAL_TIMEOUT_MS);
      stream.on('data', (raw: Buffer) => {
        answered = true;
        let p: Packet;
        try {
          p = decodePacket(raw);
        } catch (err) {
          fail(err as Error);
          return;
        }
        if (conn) {
          conn.receive(p);
          return;
        }
        if (p.type === PacketType.DIAL_RSP && p.dialResponse.random === random) {
          clearTimeout(timer);
          if (p.dialResponse.error) {
            fail(new Error(p.dialResponse.error));
            return;
          }
          conn = new TunnelConnection(stream, p.dialResponse.connectID, release);
          resolve(conn);
        } else if (p.type === PacketType.DIAL_CLS && p.closeDial.random === random) {
          fail(new Error('the proxy server closed the dial'));
        }
      });
      stream.on('error', (err: Error) => fail(err));
      stream.on('end', () => {
        if (conn) {
          conn.push(null);
          conn.destroy();
        } else fail(new Error('the proxy server ended the stream'));
      });
      stream.write(encodePacket({ type: PacketType.DIAL_REQ, dialRequest: { protocol: 'tcp', address, random } }));
    });
  };
}
