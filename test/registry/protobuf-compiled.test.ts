/**
 * The protobuf encoder writes messages with code compiled per message (util/protobuf.ts, compileFields); the
 * generic writers, which follow the message table field by field, stay as the reference and as the path that
 * names the field in errors. Both must write the same bytes for every kind, and fail with the same message.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { decodeEnvelope, decodeObject, encodeMessage, encodeObject, encodeObjectGeneric, encodeWatchEvent } from '../../src/util/protobuf.js';
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

describe('protobuf: compiled writers against the generic ones', () => {
  const kinds = servedKinds();

  it('write the same bytes for a full object of every served kind, and for objects missing parts', () => {
    let checked = 0;
    for (const k of kinds) {
      const full = sampleObject(k.apiVersion, k.kind, k.definition);
      for (const obj of [full, { apiVersion: k.apiVersion, kind: k.kind }, ...thinned(full)]) {
        const generic = encodeObjectGeneric(obj);
        assert.ok(encodeObject(obj).equals(generic), `${k.apiVersion}/${k.kind}: ${JSON.stringify(obj).slice(0, 200)}`);
        checked++;
      }
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
