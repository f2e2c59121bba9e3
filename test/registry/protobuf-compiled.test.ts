/**
 * The protobuf codec writes and reads messages with code compiled per message (util/protobuf.ts, compileFields and
 * compileDecoder); the generic writers and readers, which follow the message table field by field, stay as the
 * reference (and the writers as the path that names the field in errors). Both must write the same bytes and read
 * the same objects (keys in the same order, unknown fields kept alike) for every kind, and fail alike.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  decodeEnvelope,
  decodeMessage,
  decodeMessageGeneric,
  decodeObject,
  decodeObjectGeneric,
  encodeMessage,
  encodeObject,
  encodeObjectGeneric,
  encodeWatchEvent,
  unknownFields,
} from '../../src/util/protobuf.js';
import { sampleObject, servedKinds } from './protobuf-samples.js';

function errorOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    return (err as Error).message;
  }
  return 'no error';
}

/** `v` with every optional part dropped in turn: each object key, and lists emptied. */
function* thinned(v: Record<string, unknown>): Generator<Record<string, unknown>> {
  for (const k of Object.keys(v)) {
    if (k === 'apiVersion' || k === 'kind') continue;
    const copy = { ...v };
    delete copy[k];
    yield copy;
    const inner = v[k];
    if (inner && typeof inner === 'object' && !Array.isArray(inner)) {
      for (const ik of Object.keys(inner)) {
        const innerCopy = { ...(inner as Record<string, unknown>) };
        innerCopy[ik] = Array.isArray(innerCopy[ik]) ? [] : null;
        yield { ...v, [k]: innerCopy };
      }
    }
  }
}

/** For every served kind: a full sample object, an empty one and each thinned() copy of the full one. */
function* samples(): Generator<{ what: string; obj: Record<string, unknown> }> {
  for (const k of servedKinds()) {
    const full = sampleObject(k.apiVersion, k.kind, k.definition);
    for (const obj of [full, { apiVersion: k.apiVersion, kind: k.kind }, ...thinned(full)]) yield { what: `${k.apiVersion}/${k.kind}`, obj };
  }
}

describe('protobuf: compiled writers against the generic ones', () => {
  const kinds = servedKinds();

  it('write the same bytes for a full object of every served kind, and for objects missing parts', () => {
    let checked = 0;
    for (const { what, obj } of samples()) {
      const generic = encodeObjectGeneric(obj);
      assert.ok(encodeObject(obj).equals(generic), `${what}: ${JSON.stringify(obj).slice(0, 200)}`);
      checked++;
    }
    assert.ok(checked > 1000, `${checked} objects`);
  });

  it('write the same bytes for objects as decoded from protobuf (unknown fields kept) and for watch frames', () => {
    for (const k of kinds) {
      const decoded = decodeObject(encodeObject(sampleObject(k.apiVersion, k.kind, k.definition)));
      assert.ok(encodeObject(decoded).equals(encodeObjectGeneric(decoded)), `${k.apiVersion}/${k.kind}`);
    }
    const pvc = {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'c', labels: { b: '2', a: '1', '10': 'x', é: 'ü"\n' }, annotations: { z: '' } },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, volumeMode: 'Filesystem' },
      status: { phase: 'Pending', capacity: { storage: '1Gi' } },
    };
    assert.ok(encodeObject(pvc).equals(encodeObjectGeneric(pvc)));
    const frame = encodeWatchEvent('ADDED', pvc);
    const generic = encodeObjectGeneric(pvc);
    assert.ok(frame.subarray(frame.length - generic.length).equals(generic));
    const { apiVersion: _a, kind: _k, ...message } = pvc;
    assert.ok(encodeMessage('core.v1.PersistentVolumeClaim', message).equals(decodeEnvelope(generic).raw));
  });

  it('takes values of other JSON types as the generic writers do (numbers as strings, strings as numbers)', () => {
    const odd = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 7, generation: '3', labels: { a: 1, b: true } },
      spec: { containers: [{ name: 'c', ports: [{ containerPort: '80' }] }], terminationGracePeriodSeconds: 30.7, priority: -5 },
    };
    assert.ok(encodeObject(odd).equals(encodeObjectGeneric(odd)));
  });

  it('write a FieldsV1 (JSON written into the message by hand) as the bytes of JSON.stringify', () => {
    const odd: unknown[] = [
      {},
      { 'f:metadata': { 'f:labels': { 'f:app': {}, '.': {} } }, 'f:spec': { 'f:containers': { 'k:{"name":"c"}': { '.': {} } } } },
      { 'f:é\u2028"\\\n\u0001': { '𝔘': {} }, '10': {}, '2': { 'x': {} }, 'back\\slash': {}, 'quote"d': {}, 'tab\t': { 'del\u007f': {} } },
      { a: 1.5e300, b: -0, c: null, d: [1, 'two', { three: 3 }], e: true, f: 'text\twith\ttabs', g: undefined },
      { when: new Date(0), boxed: new String('s'), nested: Object.assign(Object.create(null) as object, { k: {} }) },
      { withToJSON: { toJSON: () => 'replaced' } },
      null,
    ];
    for (const fieldsV1 of odd) {
      const obj = {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'm', managedFields: [{ manager: 'm', operation: 'Update', fieldsType: 'FieldsV1', fieldsV1 }] },
      };
      assert.ok(encodeObject(obj).equals(encodeObjectGeneric(obj)), JSON.stringify(fieldsV1));
    }
  });

  it('fail with the generic writers\' message, naming the field', () => {
    const bad: Record<string, unknown>[] = [
      { apiVersion: 'v1', kind: 'Namespace', metadata: { labels: ['x'] } },
      { apiVersion: 'v1', kind: 'Pod', spec: { containers: { a: 1 } } },
      { apiVersion: 'v1', kind: 'Pod', spec: { containers: ['x'] } },
      { apiVersion: 'v1', kind: 'Pod', metadata: { creationTimestamp: 'yesterday' } },
      { apiVersion: 'v1', kind: 'Pod', metadata: { generation: 'many' } },
      { apiVersion: 'v1', kind: 'Pod', metadata: { labels: { a: { b: 1 } } } },
    ];
    for (const obj of bad) {
      const expected = errorOf(() => encodeObjectGeneric(obj));
      assert.notEqual(expected, 'no error', JSON.stringify(obj));
      assert.match(expected, /^core\.v1\.|not an RFC 3339 time/);
      assert.equal(errorOf(() => encodeObject(obj)), expected);
      assert.equal(errorOf(() => encodeWatchEvent('ADDED', obj)), expected);
    }
  });
});

/** What a decode gave, to compare: the JSON text (keys in order), the bytes it encodes back to (unknown fields included), or the error. */
function readOutcome(read: () => Record<string, unknown>): string {
  let obj: Record<string, unknown>;
  try {
    obj = read();
  } catch (err) {
    return `error ${(err as Error).constructor.name}: ${(err as Error).message}`;
  }
  let bytes: string;
  try {
    bytes = encodeObject(obj).toString('hex');
  } catch (err) {
    bytes = `(not encodable: ${(err as Error).message})`;
  }
  return `${JSON.stringify(obj)} ${bytes}`;
}

describe('protobuf: compiled readers against the generic ones', () => {
  const kinds = servedKinds();

  it('read the same object for a full object of every served kind, for an empty one, and for objects missing parts', () => {
    let checked = 0;
    for (const { what, obj } of samples()) {
      const body = encodeObject(obj);
      const generic = readOutcome(() => decodeObjectGeneric(body));
      assert.ok(!generic.startsWith('error'), generic);
      assert.equal(readOutcome(() => decodeObject(body)), generic, what);
      checked++;
    }
    assert.ok(checked > 1000, `${checked} objects`);
  });

  it('keep unknown fields, repeated single fields and odd map entries as the generic readers do', () => {
    const meta = encodeMessage('meta.v1.ObjectMeta', { name: 'a', labels: { x: '1' } });
    const extra = Buffer.concat([
      meta,
      Buffer.from([0x98, 0x06, 0x07]), // field 99 (unknown), varint 7
      Buffer.from([0x0a, 0x01, 0x62]), // name again: 'b' (the last one wins)
      Buffer.from([0x5a, 0x03, 0x0a, 0x01, 0x79]), // a labels entry without a value
      Buffer.from([0x5a, 0x05, 0x12, 0x01, 0x7a, 0x18, 0x01]), // a labels entry without a key, with an unknown field
    ]);
    const generic = decodeMessageGeneric('meta.v1.ObjectMeta', extra);
    const compiled = decodeMessage('meta.v1.ObjectMeta', extra);
    assert.equal(JSON.stringify(compiled), JSON.stringify(generic));
    assert.deepEqual(compiled, { name: 'b', creationTimestamp: null, labels: { x: '1', y: '', '': 'z' } });
    assert.ok(unknownFields(compiled)?.equals(unknownFields(generic)!));
    assert.equal(unknownFields(compiled)?.toString('hex'), '980607');
  });

  it('fail with the same error on truncated and corrupted bodies of every served kind', () => {
    let differentOutcomes = 0;
    for (const k of kinds) {
      const body = encodeObject(sampleObject(k.apiVersion, k.kind, k.definition));
      const variants: Buffer[] = [];
      for (let cut = 8; cut < body.length; cut += Math.max(1, Math.floor(body.length / 7))) variants.push(body.subarray(0, cut));
      for (let at = 12; at < body.length; at += Math.max(1, Math.floor(body.length / 11))) {
        for (const flip of [0x07, 0x80, 0xff]) {
          const bad = Buffer.from(body);
          bad[at] = bad[at]! ^ flip;
          variants.push(bad);
        }
      }
      for (const v of variants) {
        const generic = readOutcome(() => decodeObjectGeneric(v));
        assert.equal(readOutcome(() => decodeObject(v)), generic, `${k.apiVersion}/${k.kind} ${v.toString('hex').slice(0, 80)}`);
        if (generic.startsWith('error')) differentOutcomes++;
      }
    }
    assert.ok(differentOutcomes > 100, `${differentOutcomes} bodies failed to decode`);
  });
});
