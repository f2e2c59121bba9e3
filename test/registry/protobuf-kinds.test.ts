/**
 * Every kind orch serves has its protobuf encoding (derived from the kind declarations by
 * scripts/gen-protobuf.mjs): a full object of each (every schema field set) survives a protobuf round trip field
 * by field, lists and watch frames included.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  WatchFrameReader,
  canEncodeObject,
  decodeObject,
  encodeObject,
  encodeWatchEvent,
  kindMessage,
  protobufKinds,
} from '../../src/util/protobuf.js';
import { sampleObject, servedKinds } from './protobuf-samples.js';

/** The paths where two JSON values differ ('' when equal). */
export function jsonDiff(a: unknown, b: unknown, path = ''): string[] {
  if (a === b) return [];
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null || Array.isArray(a) !== Array.isArray(b)) {
    return [`${path}: ${JSON.stringify(a)} != ${JSON.stringify(b)}`];
  }
  const out: string[] = [];
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  for (const k of new Set([...ka, ...kb])) out.push(...jsonDiff((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], `${path}.${k}`));
  return out;
}

describe('protobuf: every served kind', () => {
  const kinds = servedKinds();

  it('has a message, from the kind declarations', () => {
    assert.ok(kinds.length > 40);
    const missing = kinds.filter((k) => !canEncodeObject(k.apiVersion, k.kind)).map((k) => `${k.apiVersion}/${k.kind}`);
    assert.deepEqual(missing, [], 'run `node scripts/gen-protobuf.mjs` after adding a kind');
    for (const k of kinds) {
      const expected = k.definition.replace(/^io\.k8s\.(api|kube-aggregator\.pkg\.apis|apimachinery\.pkg\.apis)\./, '');
      assert.equal(kindMessage(k.apiVersion, k.kind), expected, `${k.apiVersion}/${k.kind}`);
    }
    assert.ok(protobufKinds().length >= kinds.length);
  });

  for (const k of kinds) {
    it(`${k.apiVersion} ${k.kind}: a full object round-trips field by field`, () => {
      const obj = sampleObject(k.apiVersion, k.kind, k.definition);
      const bytes = encodeObject(obj);
      assert.deepEqual(bytes.subarray(0, 4), Buffer.from('k8s\0', 'latin1'));
      const back = decodeObject(bytes);
      assert.deepEqual(jsonDiff(back, obj), []);
      // Encoding is stable: the decoded object encodes to the same bytes.
      assert.deepEqual(encodeObject(back), bytes);
    });
  }

  it('watch frames of each kind', () => {
    const reader = new WatchFrameReader();
    const sent = kinds.filter((k) => !k.kind.endsWith('List')).map((k) => sampleObject(k.apiVersion, k.kind, k.definition));
    const stream = Buffer.concat(sent.map((o, i) => encodeWatchEvent(i % 2 ? 'MODIFIED' : 'ADDED', o)));
    // Fed in uneven chunks, as a socket gives them.
    const got = [];
    for (let i = 0; i < stream.length; i += 1000) got.push(...reader.push(stream.subarray(i, i + 1000)));
    assert.equal(got.length, sent.length);
    got.forEach((ev, i) => {
      assert.equal(ev.type, i % 2 ? 'MODIFIED' : 'ADDED');
      assert.deepEqual(jsonDiff(ev.object, sent[i]), []);
    });
  });

  it('Table has no protobuf form, as metav1.Table is +protobuf=false', () => {
    assert.equal(canEncodeObject('meta.k8s.io/v1', 'Table'), false);
    assert.throws(() => encodeObject({ apiVersion: 'meta.k8s.io/v1', kind: 'Table', rows: [] }), /does not implement the protobuf marshalling interface/);
  });
});
