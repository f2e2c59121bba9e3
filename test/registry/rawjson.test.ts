/**
 * Encoding a stored object with its resourceVersion without decoding it: either exactly the bytes the
 * decoding path gives (JSON.stringify of the decoded object, resourceVersion last in metadata, a newline),
 * or null.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { encodeWithResourceVersion } from '../../src/registry/rawjson.js';

/** What the decoding path answers: parse, resourceVersion added to metadata, stringify. */
function decoded(stored: Buffer, rv: string): string {
  const obj = JSON.parse(stored.toString('utf8'));
  const meta = obj.metadata;
  if (meta && typeof meta === 'object' && !Array.isArray(meta) && !Object.hasOwn(meta, 'resourceVersion')) meta.resourceVersion = rv;
  else obj.metadata = { ...(meta ?? {}), resourceVersion: rv };
  return JSON.stringify(obj) + '\n';
}

function check(stored: Buffer, rv = '42', mustSplice = false): void {
  const got = encodeWithResourceVersion(stored, rv);
  if (got === null) {
    assert.ok(!mustSplice, `expected a splice for ${stored.toString()}`);
    return;
  }
  assert.equal(got.toString('utf8'), decoded(stored, rv), `for ${stored.toString()}`);
}

const pvc = {
  apiVersion: 'v1',
  kind: 'PersistentVolumeClaim',
  metadata: {
    name: 'pvc-000001',
    namespace: 'bench',
    uid: '0f6c7a3e-1d1b-4f7c-9a57-2a9b1d1f2f11',
    creationTimestamp: '2024-01-01T00:00:00Z',
    labels: { app: 'bench', tier: 'db' },
    annotations: { 'bench.orch.io/owner': 'api-bench', note: 'quote " backslash \\ tab \t nl \n ctl \u0001 del \u007f é ✓ 😀 </>&' },
    finalizers: ['kubernetes.io/pvc-protection'],
  },
  spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, volumeMode: 'Filesystem', metadata: { resourceVersion: 'x' } },
  status: { phase: 'Pending', capacity: {}, conditions: [], n: 0, m: -12, big: 123456789012345, t: true, f: false, z: null },
};

describe('encodeWithResourceVersion', () => {
  it('splices into what JSON.stringify wrote, byte for byte as the decoding path', () => {
    check(Buffer.from(JSON.stringify(pvc)), '42', true);
    check(Buffer.from(JSON.stringify({ metadata: {} })), '7', true);
    check(Buffer.from(JSON.stringify({ kind: 'X', metadata: {}, spec: [] })), '123456789', true);
    check(Buffer.from(JSON.stringify({ metadata: { name: 'a' }, items: [[], [{}], [1, [2]]] })), '1', true);
  });

  it('declines text JSON.stringify would not write, or that decoding would reorder', () => {
    const declined = [
      '{"metadata":{"name":"a"}, "spec":{}}', // whitespace
      '{ "metadata":{}}',
      '{"metadata":{"name":"\\u0041"}}', // an escape JSON.stringify does not use
      '{"metadata":{"name":"a\\/b"}}',
      '{"metadata":{"name":"\\ud83d\\ude00"}}', // an escaped surrogate pair
      '{"metadata":{"name":"\\ud800"}}', // a lone surrogate (left to the decoding path)
      '{"metadata":{"name":"\\u001F"}}', // uppercase hex
      '{"metadata":{"name":"\\u0009"}}', // a control character with a short form
      '{"metadata":{},"x":1.0}',
      '{"metadata":{},"x":1e3}',
      '{"metadata":{},"x":-0}',
      '{"metadata":{},"x":01}',
      '{"metadata":{},"x":1234567890123456789}',
      '{"metadata":{"labels":{"b":"1","1":"2"}}}', // an array-index key moves to the front on parse
      '{"metadata":{"resourceVersion":"5"}}',
      '{"metadata":{},"metadata":{}}',
      '{"kind":"X"}', // no metadata: the decoding path adds one at the end
      '{"metadata":null}',
      '{"metadata":[]}',
      '{"metadata":"x"}',
      '[{"metadata":{}}]',
      '{"metadata":{}}\n',
      '{"metadata":{}',
      '{"metadata":{"name":"a}}',
      '{"metadata":{},"x":tru}',
    ];
    for (const text of declined) assert.equal(encodeWithResourceVersion(Buffer.from(text), '1'), null, text);
    // Invalid UTF-8.
    assert.equal(encodeWithResourceVersion(Buffer.from([...Buffer.from('{"metadata":{"name":"'), 0xff, ...Buffer.from('"}}')]), '1'), null);
  });

  it('never differs from the decoding path on random objects', () => {
    let seed = 12345;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    const chars = ['a', 'Z', '0', '9', ' ', '"', '\\', '/', '\n', '\t', '\u0000', '\u001f', '\u007f', 'é', '✓', '😀', '\ud800', '\u2028', '<'];
    const plain = ['a', 'b', 'c', 'x', 'y', '-', '.', '0'];
    const str = () => Array.from({ length: rand(6) }, () => (rand(8) === 0 ? chars[rand(chars.length)] : plain[rand(plain.length)])).join('');
    const value = (depth: number): unknown => {
      switch (rand(depth > 2 ? 6 : 8)) {
        case 0:
          return str();
        case 1:
          return rand(2) === 0 ? rand(1000) - 500 : [0.5, -0, 1e21, 2 ** 60, -1e-7, 123456789012345][rand(6)];
        case 2:
          return [true, false, null][rand(3)];
        case 3:
          return rand(10);
        case 4:
          return str() + 'x';
        case 5:
          return '';
        case 6:
          return Array.from({ length: rand(4) }, () => value(depth + 1));
        default: {
          const o: Record<string, unknown> = {};
          for (let i = rand(5); i > 0; i--) o[rand(5) === 0 ? String(rand(3)) : str()] = value(depth + 1);
          return o;
        }
      }
    };
    let spliced = 0;
    for (let i = 0; i < 3000; i++) {
      const obj: Record<string, unknown> = {};
      for (let k = rand(4); k > 0; k--) obj[str()] = value(1);
      const meta: Record<string, unknown> = {};
      for (let k = rand(4); k > 0; k--) meta[rand(4) === 0 ? str() : `k${rand(100)}`] = value(2);
      obj.metadata = rand(10) === 0 ? value(1) : meta;
      if (rand(3) === 0) obj.spec = value(0);
      const stored = Buffer.from(JSON.stringify(obj));
      const got = encodeWithResourceVersion(stored, String(i));
      if (got !== null) {
        spliced++;
        assert.equal(got.toString('utf8'), decoded(stored, String(i)), stored.toString());
      }
    }
    assert.ok(spliced > 300, `only ${spliced} of 3000 spliced`);
  });
});
