/**
 * Unknown protobuf fields survive a round trip: a message carrying field numbers the codec does not know (as a
 * newer Kubernetes would write) decodes to the usual JSON form, and encoding that same object again writes the
 * unknown fields back, after the known ones, byte for byte.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { UNKNOWN_FIELDS, decodeObject, encodeObject, unknownFields } from '../../src/util/protobuf.js';
import { decodeKubernetesProtobuf, encodeKubernetesProtobuf } from '../../src/registry/protobuf.js';

/** Appends `extra` to the object message (runtime.Unknown raw, field 2) of an enveloped body. */
function appendToRaw(body: Buffer, extra: Buffer): Buffer {
  // Re-encode the envelope with the object's message (field 2 of runtime.Unknown) grown by `extra`.
  const obj = decodeObject(body);
  const raw = body.subarray(4);
  // runtime.Unknown: 0a <typeMeta> 12 <raw> 1a 00 22 00; lengths here are below 128 + a 2-byte varint at most.
  let p = 0;
  assert.equal(raw[p++], 0x0a);
  const tmLen = raw[p++]!;
  p += tmLen;
  assert.equal(raw[p++], 0x12);
  let len = 0;
  let shift = 0;
  let b: number;
  do {
    b = raw[p++]!;
    len |= (b & 0x7f) << shift;
    shift += 7;
  } while (b & 0x80);
  const message = raw.subarray(p, p + len);
  const rest = raw.subarray(p + len);
  const grown = Buffer.concat([message, extra]);
  const varint = (n: number) => {
    const out: number[] = [];
    while (n >= 0x80) {
      out.push((n & 0x7f) | 0x80);
      n >>>= 7;
    }
    out.push(n);
    return Buffer.from(out);
  };
  assert.ok(obj);
  return Buffer.concat([body.subarray(0, 4), raw.subarray(0, 2 + tmLen), Buffer.from([0x12]), varint(grown.length), grown, rest]);
}

describe('protobuf: unknown fields', () => {
  const cm = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'u', namespace: 'default' }, data: { a: 'b' } };
  // field 99 (varint 7) and field 100 (bytes "hi"): numbers ConfigMap does not have
  const extra = Buffer.from([0x98, 0x06, 0x07, 0xa2, 0x06, 0x02, 0x68, 0x69]);

  it('are kept on the decoded object, out of its JSON, and written back when it is encoded again', () => {
    const body = appendToRaw(encodeObject(cm), extra);
    for (const decode of [decodeObject, decodeKubernetesProtobuf]) {
      const obj = decode(body);
      assert.deepEqual(JSON.parse(JSON.stringify(obj)), JSON.parse(JSON.stringify(decodeObject(encodeObject(cm)))));
      assert.ok(!Object.keys(obj).includes(String(UNKNOWN_FIELDS)));
      assert.deepEqual(unknownFields(obj), extra);
      assert.equal(encodeObject(obj).toString('hex'), body.toString('hex'));
      assert.equal(encodeKubernetesProtobuf(obj).toString('hex'), body.toString('hex'));
    }
  });

  it('in a nested message (ObjectMeta) too', () => {
    const plain = encodeObject(cm);
    const obj = decodeObject(plain);
    const meta = obj['metadata'] as object;
    Object.defineProperty(meta, UNKNOWN_FIELDS, { value: Buffer.from([0xa0, 0x06, 0x01]), enumerable: false });
    const withExtra = encodeObject(obj);
    assert.equal(withExtra.length, plain.length + 3);
    const again = decodeObject(withExtra);
    assert.deepEqual(unknownFields(again['metadata'] as object), Buffer.from([0xa0, 0x06, 0x01]));
    assert.equal(encodeObject(again).toString('hex'), withExtra.toString('hex'));
    assert.equal(unknownFields(decodeObject(plain)), undefined);
  });
});
