// SPDY/3.1 framing (draft-mbelshe-httpbis-spdy, version 3 with 3.1's session flow control), the part
// Kubernetes' streaming (moby/spdystream) uses:
//   control frame  |1|version 15|type 16|  |flags 8|length 24|  payload
//   data frame     |0|stream-id 31|        |flags 8|length 24|  payload
// Name/value header blocks (SYN_STREAM, SYN_REPLY, HEADERS) are
//   |count 32| then per pair |name length 32|name|value length 32|value|
// compressed with zlib seeded by the SPDY/3 dictionary, one compression context per direction for the
// whole connection, each block ended with a sync flush.
import { constants, createDeflate, createInflate, type Deflate, type Inflate } from 'node:zlib';

export const VERSION = 3;
export const FLAG_FIN = 0x01;

export const FrameType = {
  SynStream: 1,
  SynReply: 2,
  RstStream: 3,
  Settings: 4,
  Ping: 6,
  GoAway: 7,
  Headers: 8,
  WindowUpdate: 9,
} as const;

/** RST_STREAM status codes. */
export const RST_PROTOCOL_ERROR = 1;
export const RST_CANCEL = 5;

// The dictionary of SPDY/3 (section 2.6.10.1): these words, each after its 32-bit length, then the tail.
const DICTIONARY_WORDS =
  'options head post put delete trace accept accept-charset accept-encoding accept-language accept-ranges age allow authorization cache-control connection content-base content-encoding content-language content-length content-location content-md5 content-range content-type date etag expect expires from host if-match if-modified-since if-none-match if-range if-unmodified-since last-modified location max-forwards pragma proxy-authenticate proxy-authorization range referer retry-after server te trailer transfer-encoding upgrade user-agent vary via warning www-authenticate method get status 200_OK version HTTP/1.1 url public set-cookie keep-alive origin';
const DICTIONARY_TAIL =
  '100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505' +
  '203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request401 Unauthorized403 Forbidden404 Not Found' +
  '500 Internal Server Error501 Not Implemented503 Service Unavailable' +
  'Jan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMT' +
  'chunked,text/html,image/png,image/jpg,image/gif,application/xml,application/xhtml+xml,text/plain,text/javascript,' +
  'publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0.';

export const DICTIONARY: Buffer = Buffer.concat([
  ...DICTIONARY_WORDS.split(' ')
    .map((w) => w.replace('_', ' '))
    .map((w) => {
      const len = Buffer.alloc(4);
      len.writeUInt32BE(w.length);
      return Buffer.concat([len, Buffer.from(w, 'latin1')]);
    }),
  Buffer.from(DICTIONARY_TAIL, 'latin1'),
]);

/** Header names and their values (a name may carry several, joined by NUL on the wire). */
export type HeaderBlock = Record<string, string[]>;

export function encodeHeaderBlock(h: HeaderBlock): Buffer {
  const parts: Buffer[] = [u32(Object.keys(h).length)];
  for (const [name, values] of Object.entries(h)) {
    const n = Buffer.from(name.toLowerCase(), 'utf8');
    const v = Buffer.from(values.join('\0'), 'utf8');
    parts.push(u32(n.length), n, u32(v.length), v);
  }
  return Buffer.concat(parts);
}

export function decodeHeaderBlock(b: Buffer): HeaderBlock {
  const h: HeaderBlock = {};
  let at = 0;
  const take = (): Buffer => {
    if (at + 4 > b.length) throw new Error('truncated header block');
    const len = b.readUInt32BE(at);
    at += 4;
    if (at + len > b.length) throw new Error('truncated header block');
    const s = b.subarray(at, at + len);
    at += len;
    return s;
  };
  if (b.length < 4) throw new Error('truncated header block');
  const count = b.readUInt32BE(0);
  at = 4;
  for (let i = 0; i < count; i++) {
    const name = take().toString('utf8').toLowerCase();
    const value = take().toString('utf8');
    (h[name] ??= []).push(...value.split('\0'));
  }
  return h;
}

/** Runs one zlib stream (deflate or inflate) block by block, each ended with a sync flush. */
class ZlibContext {
  private chain: Promise<unknown> = Promise.resolve();
  constructor(private readonly z: Deflate | Inflate) {
    z.on('error', () => {});
  }
  run(input: Buffer): Promise<Buffer> {
    const next = this.chain.then(
      () =>
        new Promise<Buffer>((resolve, reject) => {
          const fail = (err: Error): void => reject(err);
          this.z.once('error', fail);
          this.z.write(input);
          this.z.flush(constants.Z_SYNC_FLUSH, () => {
            this.z.off('error', fail);
            const out: Buffer[] = [];
            for (let c = this.z.read() as Buffer | null; c !== null; c = this.z.read() as Buffer | null) out.push(c);
            resolve(Buffer.concat(out));
          });
        }),
    );
    this.chain = next.catch(() => undefined);
    return next;
  }
  close(): void {
    this.z.destroy();
  }
}

/** The header compression of one connection: its own blocks deflated, the peer's inflated. */
export class HeaderCodec {
  private readonly out = new ZlibContext(createDeflate({ dictionary: DICTIONARY }));
  private readonly in = new ZlibContext(createInflate({ dictionary: DICTIONARY }));
  compress(h: HeaderBlock): Promise<Buffer> {
    return this.out.run(encodeHeaderBlock(h));
  }
  async decompress(b: Buffer): Promise<HeaderBlock> {
    return decodeHeaderBlock(await this.in.run(b));
  }
  close(): void {
    this.out.close();
    this.in.close();
  }
}

export type Frame =
  | { control: true; type: number; flags: number; payload: Buffer }
  | { control: false; streamId: number; flags: number; payload: Buffer };

/** Cuts frames out of the bytes of a connection, however they were split into chunks. */
export class FrameReader {
  private buf: Buffer = Buffer.alloc(0);
  push(chunk: Buffer): Frame[] {
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
    const frames: Frame[] = [];
    while (this.buf.length >= 8) {
      const len = this.buf.readUInt32BE(4) & 0xffffff;
      if (this.buf.length < 8 + len) break;
      const flags = this.buf[4]!;
      const payload = this.buf.subarray(8, 8 + len);
      const first = this.buf.readUInt32BE(0);
      if (first & 0x80000000) {
        const version = (first >>> 16) & 0x7fff;
        if (version !== VERSION) throw new Error(`unsupported SPDY version ${version}`);
        frames.push({ control: true, type: first & 0xffff, flags, payload });
      } else frames.push({ control: false, streamId: first, flags, payload });
      this.buf = this.buf.subarray(8 + len);
    }
    return frames;
  }
}

function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n >>> 0);
  return b;
}

export function controlFrame(type: number, flags: number, payload: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE((0x80000000 | (VERSION << 16) | type) >>> 0, 0);
  head.writeUInt32BE(((flags << 24) | payload.length) >>> 0, 4);
  return Buffer.concat([head, payload]);
}

export function dataFrame(streamId: number, flags: number, data: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(streamId & 0x7fffffff, 0);
  head.writeUInt32BE(((flags << 24) | data.length) >>> 0, 4);
  return Buffer.concat([head, data]);
}

export const synStreamPayload = (streamId: number, block: Buffer): Buffer => Buffer.concat([u32(streamId), u32(0), Buffer.from([0, 0]), block]);
export const synReplyPayload = (streamId: number, block: Buffer): Buffer => Buffer.concat([u32(streamId), block]);
export const rstStreamPayload = (streamId: number, status: number): Buffer => Buffer.concat([u32(streamId), u32(status)]);
export const windowUpdatePayload = (streamId: number, delta: number): Buffer => Buffer.concat([u32(streamId), u32(delta & 0x7fffffff)]);
export const goAwayPayload = (lastStreamId: number, status: number): Buffer => Buffer.concat([u32(lastStreamId), u32(status)]);
