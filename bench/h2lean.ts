/**
 * A lean HTTP/2 client for the API bench: its own framing over one TLS connection (ALPN h2), as Go's client
 * (client-go) has its own, instead of node:http2's client, whose per-request machinery (an AsyncResource and a
 * bound function per request, header objects validated and copied, a Duplex per stream) costs the client about as
 * much CPU per GET as the server spends serving it. Client and server share the machine's two cores, so the
 * client's own CPU lowers the figures.
 *
 * It still sends whole requests (HEADERS with HPACK, DATA, flow control) and reads whole responses (every DATA
 * byte, the :status of each response), and it keeps to the protocol: settings acknowledged, PINGs answered, both
 * flow-control windows respected when sending and replenished when receiving.
 *
 * What it leaves out: HPACK decoding beyond :status. It announces SETTINGS_HEADER_TABLE_SIZE 0, so the server's
 * header blocks never refer to a dynamic table (RFC 7541 4.2), and reads the first field of each block, which
 * RFC 9113 8.3 requires to be a pseudo-header; :status is always that one in a response.
 */
import { connect as tlsConnect, type TLSSocket } from 'node:tls';

const FRAME_DATA = 0x0;
const FRAME_HEADERS = 0x1;
const FRAME_RST_STREAM = 0x3;
const FRAME_SETTINGS = 0x4;
const FRAME_PING = 0x6;
const FRAME_GOAWAY = 0x7;
const FRAME_WINDOW_UPDATE = 0x8;
const FRAME_CONTINUATION = 0x9;

const FLAG_END_STREAM = 0x1;
const FLAG_ACK = 0x1;
const FLAG_END_HEADERS = 0x4;
const FLAG_PADDED = 0x8;
const FLAG_PRIORITY = 0x20;

const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');
const DEFAULT_WINDOW = 65_535;
/** Receive windows, as client-go's transport sets them: 4 MiB per stream, 1 GiB for the connection. */
const STREAM_RECV_WINDOW = 4 << 20;
const CONN_RECV_WINDOW = 1 << 30;

/** Huffman codes of the ten digits (RFC 7541 appendix B): code, length in bits. */
const HUFFMAN_DIGITS: readonly (readonly [number, number])[] = [
  [0x0, 5], [0x1, 5], [0x2, 5], [0x19, 6], [0x1a, 6], [0x1b, 6], [0x1c, 6], [0x1d, 6], [0x1e, 6], [0x1f, 6],
];
/** The static table's :status entries (RFC 7541 appendix A). */
const STATIC_STATUS: Readonly<Record<number, number>> = { 8: 200, 9: 204, 10: 206, 11: 304, 12: 400, 13: 404, 14: 500 };

export interface LeanResponse {
  status: number;
  /** Bytes of the response body. */
  bytes: number;
  /** The body, when the request asked to keep it. */
  body?: Buffer;
}

export interface LeanRequestOptions {
  /** Keep the body's chunks and answer them (otherwise only counted). */
  keepBody?: boolean;
  /** The response's status, as soon as its headers arrive (for watches). */
  onStatus?: (status: number) => void;
  /** Each DATA payload as it arrives (for watches). */
  onData?: (chunk: Buffer) => void;
  /** Called with a function that cancels the stream (RST_STREAM CANCEL), once it is open. */
  onOpen?: (cancel: () => void) => void;
}

interface Stream {
  id: number;
  status: number;
  bytes: number;
  chunks: Buffer[] | null;
  onData: ((chunk: Buffer) => void) | undefined;
  onStatus: ((status: number) => void) | undefined;
  /** Bytes received since this stream's window was last replenished. */
  unacked: number;
  /** The send window the server gives this stream. */
  sendWindow: number;
  /** Request body not yet sent (flow control). */
  pending: Buffer | null;
  /** END_STREAM seen on a HEADERS frame whose header block continues. */
  endAfterHeaders: boolean;
  resolve(r: LeanResponse): void;
  reject(e: Error): void;
}

function hpackInt(out: number[], value: number, prefixBits: number, first: number): void {
  const max = (1 << prefixBits) - 1;
  if (value < max) {
    out.push(first | value);
    return;
  }
  out.push(first | max);
  value -= max;
  while (value >= 128) {
    out.push((value & 0x7f) | 0x80);
    value >>>= 7;
  }
  out.push(value);
}

function hpackString(out: number[], s: string): void {
  const b = Buffer.from(s, 'latin1');
  hpackInt(out, b.length, 7, 0);
  for (const x of b) out.push(x);
}

/** Reads an HPACK integer at `pos` with a prefix of `bits` bits: [value, next position]. */
function readInt(b: Buffer, pos: number, bits: number): [number, number] {
  const max = (1 << bits) - 1;
  let v = b[pos]! & max;
  pos++;
  if (v < max) return [v, pos];
  let shift = 0;
  for (;;) {
    const x = b[pos++]!;
    v += (x & 0x7f) * 2 ** shift;
    shift += 7;
    if ((x & 0x80) === 0) return [v, pos];
  }
}

/** Decodes a Huffman-coded string of digits (a status code). */
function huffmanDigits(b: Buffer, start: number, end: number): number {
  let acc = 0;
  let accBits = 0;
  let value = 0;
  let pos = start;
  for (;;) {
    while (accBits < 6 && pos < end) {
      acc = ((acc << 8) | b[pos++]!) & 0xffffff;
      accBits += 8;
    }
    if (accBits < 5) break;
    let digit = -1;
    const five = (acc >>> (accBits - 5)) & 0x1f;
    if (five <= 2) {
      digit = five;
      accBits -= 5;
    } else if (accBits >= 6) {
      const six = (acc >>> (accBits - 6)) & 0x3f;
      for (let d = 3; d <= 9; d++) {
        if (HUFFMAN_DIGITS[d]![0] === six) digit = d;
      }
      if (digit >= 0) accBits -= 6;
    }
    if (digit < 0) break; // the EOS padding (all ones) or not a digit
    value = value * 10 + digit;
  }
  return value;
}

/** :status from a response header block (its first field; see the file's comment). */
function statusOf(block: Buffer): number {
  let pos = 0;
  while (pos < block.length && (block[pos]! & 0xe0) === 0x20) pos = readInt(block, pos, 5)[1]; // table size updates
  const first = block[pos]!;
  if (first & 0x80) return STATIC_STATUS[readInt(block, pos, 7)[0]] ?? 0;
  // A literal field: 01 (incremental indexing, 6-bit name index), 0000 / 0001 (4-bit name index).
  const [nameIndex, afterName] = readInt(block, pos, first & 0x40 ? 6 : 4);
  if (nameIndex < 8 || nameIndex > 14) return 0;
  pos = afterName;
  const huffman = (block[pos]! & 0x80) !== 0;
  const [len, start] = readInt(block, pos, 7);
  if (huffman) return huffmanDigits(block, start, start + len);
  return Number(block.toString('latin1', start, start + len));
}

export class LeanH2Client {
  private readonly socket: TLSSocket;
  private readonly streams = new Map<number, Stream>();
  private nextStreamId = 1;
  private inbox: Buffer | null = null;
  private out: Buffer[] = [];
  private flushScheduled = false;
  private connSendWindow = DEFAULT_WINDOW;
  private peerInitialWindow = DEFAULT_WINDOW;
  private peerMaxFrame = 16_384;
  /** The server's HPACK decoder table size (SETTINGS_HEADER_TABLE_SIZE). */
  private peerTableSize = 4096;
  private connUnacked = 0;
  /** Header fields added to the server's HPACK dynamic table, in insertion order ("name\0value"). */
  private readonly indexed: string[] = [];
  private indexedSize = 0;
  private failure: Error | null = null;
  private settingsAcked!: () => void;
  private readonly authority: string;

  private constructor(url: URL, ca: string, readonly token: string) {
    this.authority = url.host;
    this.socket = tlsConnect({ host: url.hostname, port: Number(url.port), ca, ALPNProtocols: ['h2'], servername: url.hostname === '127.0.0.1' ? '' : url.hostname });
    this.socket.setNoDelay(true);
  }

  static async open(server: { url: string; caCert: string; token: string }): Promise<LeanH2Client> {
    const c = new LeanH2Client(new URL(server.url), server.caCert, server.token);
    await new Promise<void>((resolve, reject) => {
      c.settingsAcked = resolve;
      c.socket.once('error', reject);
      c.socket.once('secureConnect', () => {
        if (c.socket.alpnProtocol !== 'h2') {
          reject(new Error(`the server did not negotiate h2 (ALPN ${String(c.socket.alpnProtocol)})`));
          return;
        }
        c.socket.on('data', (chunk: Buffer) => c.onSocketData(chunk));
        c.socket.on('close', () => c.fail(new Error('connection closed')));
        c.socket.on('error', (e) => c.fail(e));
        const settings = Buffer.alloc(18);
        // SETTINGS_HEADER_TABLE_SIZE 0, SETTINGS_ENABLE_PUSH 0, SETTINGS_INITIAL_WINDOW_SIZE 4 MiB.
        settings.writeUInt16BE(0x1, 0);
        settings.writeUInt32BE(0, 2);
        settings.writeUInt16BE(0x2, 6);
        settings.writeUInt32BE(0, 8);
        settings.writeUInt16BE(0x4, 12);
        settings.writeUInt32BE(STREAM_RECV_WINDOW, 14);
        const wu = Buffer.alloc(4);
        wu.writeUInt32BE(CONN_RECV_WINDOW - DEFAULT_WINDOW, 0);
        c.socket.write(Buffer.concat([PREFACE, c.frame(FRAME_SETTINGS, 0, 0, settings), c.frame(FRAME_WINDOW_UPDATE, 0, 0, wu)]));
      });
    });
    return c;
  }

  private frame(type: number, flags: number, streamId: number, payload: Buffer | null): Buffer {
    const len = payload?.length ?? 0;
    const b = Buffer.allocUnsafe(9 + len);
    b.writeUIntBE(len, 0, 3);
    b[3] = type;
    b[4] = flags;
    b.writeUInt32BE(streamId, 5);
    payload?.copy(b, 9);
    return b;
  }

  private send(b: Buffer): void {
    this.out.push(b);
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      // Every request started in this turn of the event loop goes out in one write (one TLS record).
      process.nextTick(() => {
        this.flushScheduled = false;
        const out = this.out;
        this.out = [];
        this.socket.write(out.length === 1 ? out[0]! : Buffer.concat(out));
      });
    }
  }

  /** A header field the server's decoder indexes: its index once added, or the literal that adds it. */
  private indexedField(out: number[], staticNameIndex: number, name: string, value: string): void {
    const key = `${name}\0${value}`;
    const at = this.indexed.indexOf(key);
    if (at >= 0) {
      hpackInt(out, 62 + (this.indexed.length - 1 - at), 7, 0x80);
      return;
    }
    const size = name.length + value.length + 32;
    if (this.indexedSize + size > this.peerTableSize) {
      // Would evict an entry: send it without indexing instead.
      hpackInt(out, staticNameIndex, 4, 0x00);
      hpackString(out, value);
      return;
    }
    this.indexed.push(key);
    this.indexedSize += size;
    hpackInt(out, staticNameIndex, 6, 0x40);
    hpackString(out, value);
  }

  request(method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', path: string, body?: string, contentType = 'application/json', options: LeanRequestOptions = {}): Promise<LeanResponse> {
    if (this.failure) return Promise.reject(this.failure);
    const id = this.nextStreamId;
    this.nextStreamId += 2;
    const h: number[] = [];
    if (method === 'GET') h.push(0x82);
    else if (method === 'POST') h.push(0x83);
    else {
      hpackInt(h, 2, 4, 0x00);
      hpackString(h, method);
    }
    h.push(0x87); // :scheme https
    this.indexedField(h, 1, ':authority', this.authority);
    hpackInt(h, 4, 4, 0x00); // :path, without indexing
    hpackString(h, path);
    this.indexedField(h, 23, 'authorization', `Bearer ${this.token}`);
    this.indexedField(h, 19, 'accept', 'application/json');
    const data = body === undefined ? null : Buffer.from(body);
    if (data) {
      this.indexedField(h, 31, 'content-type', contentType);
      hpackInt(h, 28, 4, 0x00); // content-length, without indexing
      hpackString(h, String(data.length));
    }
    return new Promise<LeanResponse>((resolve, reject) => {
      const s: Stream = {
        id,
        status: 0,
        bytes: 0,
        chunks: options.keepBody ? [] : null,
        onData: options.onData,
        onStatus: options.onStatus,
        unacked: 0,
        sendWindow: this.peerInitialWindow,
        pending: null,
        endAfterHeaders: false,
        resolve,
        reject,
      };
      this.streams.set(id, s);
      this.send(this.frame(FRAME_HEADERS, FLAG_END_HEADERS | (data ? 0 : FLAG_END_STREAM), id, Buffer.from(h)));
      if (data) {
        s.pending = data;
        this.sendPending(s);
      }
      options.onOpen?.(() => {
        if (!this.streams.has(id)) return;
        const code = Buffer.alloc(4);
        code.writeUInt32BE(0x8, 0); // CANCEL
        this.send(this.frame(FRAME_RST_STREAM, 0, id, code));
        this.finish(s);
      });
    });
  }

  /** Sends as much of the stream's body as both send windows allow. */
  private sendPending(s: Stream): void {
    while (s.pending) {
      const n = Math.min(s.pending.length, this.connSendWindow, s.sendWindow, this.peerMaxFrame);
      if (n <= 0 && s.pending.length > 0) return;
      const last = n === s.pending.length;
      this.send(this.frame(FRAME_DATA, last ? FLAG_END_STREAM : 0, s.id, s.pending.subarray(0, n)));
      this.connSendWindow -= n;
      s.sendWindow -= n;
      s.pending = last ? null : s.pending.subarray(n);
    }
  }

  private finish(s: Stream): void {
    this.streams.delete(s.id);
    const r: LeanResponse = { status: s.status, bytes: s.bytes };
    if (s.chunks) r.body = s.chunks.length === 1 ? s.chunks[0]! : Buffer.concat(s.chunks);
    s.resolve(r);
  }

  private fail(e: Error): void {
    if (this.failure) return;
    this.failure = e;
    for (const s of this.streams.values()) s.reject(e);
    this.streams.clear();
  }

  private onSocketData(chunk: Buffer): void {
    let b = this.inbox ? Buffer.concat([this.inbox, chunk]) : chunk;
    let pos = 0;
    while (b.length - pos >= 9) {
      const len = (b[pos]! << 16) | (b[pos + 1]! << 8) | b[pos + 2]!;
      if (b.length - pos < 9 + len) break;
      const type = b[pos + 3]!;
      const flags = b[pos + 4]!;
      const id = b.readUInt32BE(pos + 5) & 0x7fffffff;
      this.onFrame(type, flags, id, b, pos + 9, pos + 9 + len);
      pos += 9 + len;
    }
    if (pos === b.length) this.inbox = null;
    else {
      b = b.subarray(pos);
      // Keep a copy only of the partial frame, not the whole chunk it sits in.
      this.inbox = this.inbox ? b : Buffer.from(b);
    }
  }

  private onFrame(type: number, flags: number, id: number, b: Buffer, start: number, end: number): void {
    switch (type) {
      case FRAME_DATA: {
        const s = this.streams.get(id);
        const frameLen = end - start;
        if (flags & FLAG_PADDED) end -= b[start++]!;
        this.connUnacked += frameLen;
        if (this.connUnacked >= CONN_RECV_WINDOW / 2) {
          this.windowUpdate(0, this.connUnacked);
          this.connUnacked = 0;
        }
        if (!s) return;
        const n = end - start;
        s.bytes += n;
        if (s.chunks && n > 0) s.chunks.push(Buffer.from(b.subarray(start, end)));
        if (s.onData && n > 0) s.onData(b.subarray(start, end));
        if (flags & FLAG_END_STREAM) {
          this.finish(s);
          return;
        }
        s.unacked += frameLen;
        if (s.unacked >= STREAM_RECV_WINDOW / 2) {
          this.windowUpdate(id, s.unacked);
          s.unacked = 0;
        }
        return;
      }
      case FRAME_HEADERS: {
        const s = this.streams.get(id);
        if (!s) return;
        if (flags & FLAG_PADDED) end -= b[start++]!;
        if (flags & FLAG_PRIORITY) start += 5;
        if (s.status < 200) {
          s.status = statusOf(b.subarray(start, end));
          s.onStatus?.(s.status);
        }
        if (flags & FLAG_END_STREAM) {
          if (flags & FLAG_END_HEADERS) this.finish(s);
          else s.endAfterHeaders = true;
        }
        return;
      }
      case FRAME_CONTINUATION: {
        const s = this.streams.get(id);
        if (s?.endAfterHeaders && flags & FLAG_END_HEADERS) this.finish(s);
        return;
      }
      case FRAME_RST_STREAM: {
        const s = this.streams.get(id);
        if (!s) return;
        this.streams.delete(id);
        s.reject(new Error(`stream ${id} reset by the server (code ${b.readUInt32BE(start)})`));
        return;
      }
      case FRAME_SETTINGS: {
        if (flags & FLAG_ACK) {
          this.settingsAcked();
          return;
        }
        for (let p = start; p + 6 <= end; p += 6) {
          const key = b.readUInt16BE(p);
          const value = b.readUInt32BE(p + 2);
          if (key === 0x4) {
            const delta = value - this.peerInitialWindow;
            this.peerInitialWindow = value;
            for (const s of this.streams.values()) s.sendWindow += delta;
          } else if (key === 0x5) this.peerMaxFrame = value;
          else if (key === 0x1) this.peerTableSize = Math.min(this.peerTableSize, value);
        }
        this.send(this.frame(FRAME_SETTINGS, FLAG_ACK, 0, null));
        for (const s of this.streams.values()) this.sendPending(s);
        return;
      }
      case FRAME_PING:
        if (!(flags & FLAG_ACK)) this.send(this.frame(FRAME_PING, FLAG_ACK, 0, b.subarray(start, end)));
        return;
      case FRAME_WINDOW_UPDATE: {
        const inc = b.readUInt32BE(start) & 0x7fffffff;
        if (id === 0) {
          this.connSendWindow += inc;
          for (const s of this.streams.values()) this.sendPending(s);
        } else {
          const s = this.streams.get(id);
          if (s) {
            s.sendWindow += inc;
            this.sendPending(s);
          }
        }
        return;
      }
      case FRAME_GOAWAY:
        this.fail(new Error(`GOAWAY from the server (code ${b.readUInt32BE(start + 4)})`));
        return;
      default:
        return; // PRIORITY, unknown frame types: ignored (RFC 9113 4.1)
    }
  }

  private windowUpdate(id: number, n: number): void {
    const p = Buffer.alloc(4);
    p.writeUInt32BE(n, 0);
    this.send(this.frame(FRAME_WINDOW_UPDATE, 0, id, p));
  }

  close(): Promise<void> {
    if (this.socket.destroyed) return Promise.resolve();
    const p = Buffer.alloc(8); // last stream id 0 (the server opens none), NO_ERROR
    return new Promise((resolve) => {
      this.socket.once('close', () => resolve());
      this.socket.end(this.frame(FRAME_GOAWAY, 0, 0, p));
    });
  }
}
