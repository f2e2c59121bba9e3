// SPDY/3.1 framing of the agent's streaming: the header dictionary, header blocks through one shared
// compression context per direction, frames cut out of arbitrarily split TCP chunks, and a connection
// driven by a hand-made client over a socket pair.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, connect, type Socket } from 'node:net';
import { inflateSync } from 'node:zlib';
import {
  controlFrame,
  dataFrame,
  decodeHeaderBlock,
  DICTIONARY,
  encodeHeaderBlock,
  FLAG_FIN,
  FrameReader,
  FrameType,
  HeaderCodec,
  synStreamPayload,
  type Frame,
  type HeaderBlock,
} from '../../src/agent/server/spdy/framing.js';
import { SpdyConnection, type SpdyStream } from '../../src/agent/server/spdy/connection.js';

/** A codec pair as client and server see each other: a's compressor feeds b's decompressor. */
function pair(): { client: HeaderCodec; server: HeaderCodec } {
  return { client: new HeaderCodec(), server: new HeaderCodec() };
}

void describe('SPDY/3.1 framing', () => {
  void it('has the SPDY/3 dictionary (1423 bytes, zlib dictionary id e3c6a7c2)', async () => {
    assert.equal(DICTIONARY.length, 1423);
    assert.equal(DICTIONARY.subarray(0, 11).toString('latin1'), '\0\0\0\x07options');
    assert.ok(DICTIONARY.toString('latin1').endsWith(',*,enq=0.'));
    const { client } = pair();
    const block = await client.compress({ a: ['b'] });
    assert.equal(block.subarray(2, 6).toString('hex'), 'e3c6a7c2');
    assert.deepEqual(decodeHeaderBlock(inflateSync(block, { dictionary: DICTIONARY, finishFlush: 2 })), { a: ['b'] });
  });

  void it('round-trips header blocks through one shared context per direction', async () => {
    const { client, server } = pair();
    const blocks: HeaderBlock[] = [
      { streamtype: ['error'], port: ['8080'], requestid: ['0'] },
      { streamtype: ['data'], port: ['8080'], requestid: ['0'] },
      { streamtype: ['stdout'], 'x-multi': ['one', 'two'] },
      {},
    ];
    for (const h of blocks) {
      const wire = await client.compress(h);
      assert.deepEqual(await server.decompress(wire), h);
    }
    // The second identical block compresses to less: the context carries over.
    const again = await client.compress(blocks[0]!);
    assert.ok(again.length < (await new HeaderCodec().compress(blocks[0]!)).length);
    assert.deepEqual(await server.decompress(again), blocks[0]);
    assert.deepEqual(decodeHeaderBlock(encodeHeaderBlock({ Name: ['v'] })), { name: ['v'] });
    assert.throws(() => decodeHeaderBlock(Buffer.from([0, 0, 0, 1, 0, 0, 0, 9, 1])), /truncated/);
  });

  void it('cuts frames out of chunks split anywhere', () => {
    const wire = Buffer.concat([
      controlFrame(FrameType.Ping, 0, Buffer.from([0, 0, 0, 7])),
      dataFrame(5, FLAG_FIN, Buffer.from('hello')),
      dataFrame(7, 0, Buffer.alloc(70_000, 1)),
    ]);
    for (const size of [1, 3, 8, 13, 4096, wire.length]) {
      const r = new FrameReader();
      const frames: Frame[] = [];
      for (let at = 0; at < wire.length; at += size) frames.push(...r.push(wire.subarray(at, at + size)));
      assert.equal(frames.length, 3, `chunks of ${size}`);
      const [ping, data, big] = frames;
      assert.ok(ping?.control && ping.type === FrameType.Ping && ping.payload.readUInt32BE(0) === 7);
      assert.ok(data && !data.control && data.streamId === 5 && data.flags === FLAG_FIN && data.payload.toString() === 'hello');
      assert.ok(big && !big.control && big.streamId === 7 && big.payload.length === 70_000);
    }
    assert.throws(() => new FrameReader().push(Buffer.from([0x80, 2, 0, 6, 0, 0, 0, 0])), /unsupported SPDY version 2/);
  });

  void it('serves streams: SYN_REPLY, data both ways with FIN, WINDOW_UPDATE, PING answered', async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const accepted = new Promise<Socket>((resolve) => server.once('connection', resolve));
    const client = connect((server.address() as { port: number }).port, '127.0.0.1');
    const socket = await accepted;
    const opened: SpdyStream[] = [];
    const conn = new SpdyConnection(
      socket,
      (s) => {
        opened.push(s);
        // An echo: what arrives goes back, upper-cased, and the end too.
        const parts: Buffer[] = [];
        s.incoming.on('data', (c: Buffer) => parts.push(c));
        s.incoming.on('end', () => void s.write(Buffer.from(Buffer.concat(parts).toString().toUpperCase())).then(() => s.end()));
      },
      { idleTimeoutMs: 0 },
    );
    const codec = new HeaderCodec();
    const reader = new FrameReader();
    const got: Frame[] = [];
    client.on('data', (c: Buffer) => got.push(...reader.push(c)));
    const syn = controlFrame(FrameType.SynStream, 0, synStreamPayload(1, await codec.compress({ streamtype: ['data'], port: ['80'] })));
    const wire = Buffer.concat([syn, dataFrame(1, 0, Buffer.from('abc')), dataFrame(1, FLAG_FIN, Buffer.from('def')), controlFrame(FrameType.Ping, 0, Buffer.from([0, 0, 0, 1]))]);
    for (const b of wire) client.write(Buffer.from([b])); // one byte at a time
    const deadline = Date.now() + 10_000;
    while (!got.some((f) => !f.control && f.flags & FLAG_FIN) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    assert.equal(opened.length, 1);
    assert.equal(opened[0]!.header('streamType'), 'data');
    const reply = got.find((f) => f.control && f.type === FrameType.SynReply);
    assert.ok(reply && reply.payload.readUInt32BE(0) === 1);
    assert.deepEqual(await codec.decompress(reply.payload.subarray(4)), {});
    assert.ok(got.some((f) => f.control && f.type === FrameType.Ping && f.payload.readUInt32BE(0) === 1));
    const updates = got.filter((f) => f.control && f.type === FrameType.WindowUpdate).map((f) => `${f.payload.readUInt32BE(0)}:${f.payload.readUInt32BE(4)}`);
    assert.deepEqual(updates.sort(), ['0:3', '0:3', '1:3', '1:3']);
    const data = Buffer.concat(got.flatMap((f) => (!f.control && f.streamId === 1 ? [f.payload] : []))).toString();
    assert.equal(data, 'ABCDEF');
    // Both sides are done with stream 1: more data on it is refused with RST_STREAM PROTOCOL_ERROR.
    client.write(dataFrame(1, 0, Buffer.from('late')));
    while (!got.some((f) => f.control && f.type === FrameType.RstStream) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    const rst = got.find((f) => f.control && f.type === FrameType.RstStream);
    assert.ok(rst && rst.payload.readUInt32BE(0) === 1 && rst.payload.readUInt32BE(4) === 1);
    await conn.close();
    const goaway = await new Promise<boolean>((resolve) => client.once('end', () => resolve(got.some((f) => f.control && f.type === FrameType.GoAway))));
    assert.ok(goaway);
    client.destroy();
    await conn.closed;
    server.close();
  });

  void it('closes a connection idle for --streaming-connection-idle-timeout', async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const accepted = new Promise<Socket>((resolve) => server.once('connection', resolve));
    const client = connect((server.address() as { port: number }).port, '127.0.0.1');
    client.on('error', () => {});
    const conn = new SpdyConnection(await accepted, () => {}, { idleTimeoutMs: 200 });
    await conn.closed;
    await new Promise<void>((resolve) => (client.closed ? resolve() : client.once('close', () => resolve())));
    server.close();
  });
  void it("opens a stream's window only once its reader took the data; the session's at once", async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const accepted = new Promise<Socket>((resolve) => server.once('connection', resolve));
    const client = connect((server.address() as { port: number }).port, '127.0.0.1');
    let stream: SpdyStream | undefined;
    const conn = new SpdyConnection(await accepted, (s) => (stream = s), { idleTimeoutMs: 0 });
    const codec = new HeaderCodec();
    const reader = new FrameReader();
    const got: Frame[] = [];
    client.on('data', (c: Buffer) => got.push(...reader.push(c)));
    const updates = (id: number): number =>
      got.filter((f) => f.control && f.type === FrameType.WindowUpdate && f.payload.readUInt32BE(0) === id).reduce((n, f) => n + f.payload.readUInt32BE(4), 0);
    const until = async (what: () => boolean): Promise<void> => {
      const deadline = Date.now() + 10_000;
      while (!what() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      assert.ok(what());
    };
    client.write(controlFrame(FrameType.SynStream, 0, synStreamPayload(1, await codec.compress({ streamtype: ['stdin'] }))));
    for (let i = 0; i < 4; i++) client.write(dataFrame(1, 0, Buffer.alloc(10_000, 7)));
    await until(() => updates(0) === 40_000);
    // Nobody reads the stream yet: the reader's buffer (16 KiB) took the first two frames only.
    assert.ok(updates(1) < 40_000, `stream window opened by ${updates(1)}`);
    let read = 0;
    stream!.incoming.on('data', (c: Buffer) => (read += c.length));
    await until(() => updates(1) === 40_000);
    assert.equal(read, 40_000);
    client.destroy();
    await conn.closed;
    server.close();
  });
});
