// Partial reads of API answers (RequestOptions.answer): the agent's pod status PATCH needs only the
// answer's resourceVersion and status, so a protobuf answer is not decoded whole (its spec and
// managedFields are most of it): the Pod message's fields are walked for metadata (only
// resourceVersion is read from it) and status, which is decoded when it is first asked for.
import { decodeEnvelope, decodeMessage, decodeObject } from '../../util/protobuf.js';
import type { Json } from './client.js';

export interface StatusAnswer {
  resourceVersion: string | undefined;
  /** Whether the answer has a status. */
  hasStatus: boolean;
  /** The answer's status (as the full decode gives it), decoded on the first call; undefined when the answer has none. */
  status: () => Json | undefined;
}

const POD_METADATA = 1;
const POD_STATUS = 3;
const META_RESOURCE_VERSION = 6;

/** An answer's resourceVersion and status (RequestOptions.answer for a PATCH of pods/<name>/status). */
export function readStatusAnswer(body: Buffer, protobuf: boolean): StatusAnswer {
  if (protobuf) {
    const env = decodeEnvelope(body);
    if (env.contentEncoding === '' && env.apiVersion === 'v1' && env.kind === 'Pod') return podAnswer(env.raw);
  }
  const pod = (protobuf ? decodeObject(body) : body.length === 0 ? {} : JSON.parse(body.toString('utf8'))) as Json;
  const meta = pod.metadata as Json | undefined;
  const rv = meta?.resourceVersion;
  const status = typeof pod.status === 'object' && pod.status !== null ? (pod.status as Json) : undefined;
  return { resourceVersion: typeof rv === 'string' ? rv : undefined, hasStatus: status !== undefined, status: () => status };
}

function podAnswer(raw: Uint8Array): StatusAnswer {
  let resourceVersion: string | undefined;
  let statusBytes: Uint8Array | undefined;
  const r = new FieldReader(raw, 0, raw.length);
  for (let f = r.next(); f !== undefined; f = r.next()) {
    if (f === POD_METADATA && r.wire === 2) {
      const m = new FieldReader(raw, r.start, r.end);
      for (let g = m.next(); g !== undefined; g = m.next()) {
        // an empty string is no resourceVersion (the encoder writes every string; the decoder leaves empty ones out)
        if (g === META_RESOURCE_VERSION && m.wire === 2 && m.end > m.start) resourceVersion = Buffer.from(raw.buffer, raw.byteOffset + m.start, m.end - m.start).toString('utf8');
      }
    } else if (f === POD_STATUS && r.wire === 2) statusBytes = raw.subarray(r.start, r.end);
  }
  let status: Json | undefined;
  let decoded = false;
  return {
    resourceVersion,
    hasStatus: statusBytes !== undefined,
    status: () => {
      if (!decoded) {
        decoded = true;
        if (statusBytes !== undefined) status = decodeMessage('core.v1.PodStatus', statusBytes);
      }
      return status;
    },
  };
}

/** Walks the fields of one protobuf message: next() gives a field's number, its wire type and (length-delimited) payload span. */
class FieldReader {
  wire = 0;
  start = 0;
  end = 0;
  constructor(
    private readonly buf: Uint8Array,
    private pos: number,
    private readonly limit: number,
  ) {}

  next(): number | undefined {
    if (this.pos >= this.limit) return undefined;
    const key = this.varint();
    this.wire = key & 7;
    if (this.wire === 0) this.varint();
    else if (this.wire === 1) this.pos += 8;
    else if (this.wire === 5) this.pos += 4;
    else if (this.wire === 2) {
      const n = this.varint();
      this.start = this.pos;
      this.end = this.pos + n;
      this.pos = this.end;
    } else throw new Error(`protobuf wire type ${this.wire} is not supported in an answer`);
    if (this.pos > this.limit) throw new Error('truncated protobuf answer');
    return Math.floor(key / 8);
  }

  private varint(): number {
    let v = 0;
    let mul = 1;
    for (;;) {
      if (this.pos >= this.limit) throw new Error('truncated protobuf answer');
      const b = this.buf[this.pos++]!;
      v += (b & 0x7f) * mul;
      if (b < 0x80) return v;
      mul *= 128;
      if (mul > 2 ** 63) throw new Error('malformed protobuf varint in an answer');
    }
  }
}
