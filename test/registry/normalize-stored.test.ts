/**
 * normalizeStored (storagecodec.ts) gives what decoding the stored protobuf of an object gives, without the
 * round trip: the same keys in the same order, the same values. Checked on full and thinned-out samples of
 * every served kind with the values the encoder converts (numbers as strings, zeros, nulls, empty lists and
 * maps, odd times and bytes, lone surrogates), and through a store and its watch cache, whose cached JSON
 * must be what a decode of the stored bytes gives.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { openSqlite } from '../../src/storage/sqlite.js';
import { ResourceStore } from '../../src/registry/store.js';
import { WatchCache } from '../../src/registry/cacher/watchcache.js';
import { podKind, pvcKind } from '../../src/registry/kinds/index.js';
import type { KObject } from '../../src/registry/kind.js';
import { decodeStored, encodeStored, normalizeStored } from '../../src/registry/storagecodec.js';
import { UNKNOWN_FIELDS } from '../../src/util/protobuf.js';
import { sampleObject, servedKinds } from './protobuf-samples.js';

/** The reference: a real encode and decode. */
function roundTrip(obj: KObject): KObject {
  return decodeStored(encodeStored(obj, 'protobuf'));
}

/** Same object, same key order (JSON text), same values (deepStrictEqual tells -0, NaN and undefined apart). */
function assertSame(obj: KObject, what: string): void {
  const expected = roundTrip(obj);
  const got = normalizeStored(obj);
  assert.ok(got !== undefined, `${what}: normalized`);
  assert.equal(JSON.stringify(got), JSON.stringify(expected), what);
  assert.deepStrictEqual(got, expected, what);
}

/** A small deterministic generator (mulberry32). */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Odd values the encoder converts rather than refuses, by the sample value's type. */
function oddValue(v: unknown, r: () => number): unknown {
  const pick = <T>(xs: T[]): T => xs[Math.floor(r() * xs.length)]!;
  if (typeof v === 'string') return pick(['', 'x\ud800y', '0', 'héllo ✓', null, '2024-01-02T03:04:05+02:00', 'AAEC', 'not base64 !!']);
  if (typeof v === 'number') return pick([0, -0, -1, 2.5, '42', null, 2147483648, -7]);
  if (typeof v === 'boolean') return pick([false, null, true]);
  if (Array.isArray(v)) return pick([[], null, v.slice(0, 1)]);
  if (v !== null && typeof v === 'object') return pick([{}, null]);
  return v;
}

/** A copy of `v` with fields dropped or replaced at random. */
function thin(v: unknown, r: () => number, depth = 0): unknown {
  if (Array.isArray(v)) return v.map((x) => thin(x, r, depth + 1));
  if (v === null || typeof v !== 'object') return v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) {
    if (depth === 0 && (k === 'apiVersion' || k === 'kind')) {
      out[k] = x;
      continue;
    }
    const roll = r();
    if (roll < 0.2) continue;
    if (roll < 0.35) out[k] = oddValue(x, r);
    else out[k] = thin(x, r, depth + 1);
  }
  return out;
}

const KINDS = servedKinds().filter((k) => !k.kind.endsWith('List'));

describe('normalizeStored', () => {
  it('gives the decoded object of full samples of every served kind', () => {
    let n = 0;
    for (const k of KINDS) {
      const obj = sampleObject(k.apiVersion, k.kind, k.definition) as KObject;
      if (normalizeStored(obj) === undefined) continue; // kinds stored as JSON
      assertSame(obj, `${k.apiVersion} ${k.kind}`);
      n++;
    }
    assert.ok(n > 30, `${n} kinds checked`);
  });

  it('gives the decoded object of thinned-out samples with odd values (60 per kind)', () => {
    let checked = 0;
    let declined = 0;
    for (const k of KINDS) {
      const full = sampleObject(k.apiVersion, k.kind, k.definition) as KObject;
      if (normalizeStored(full) === undefined) continue;
      const r = random(k.kind.length * 7919 + k.apiVersion.length);
      for (let i = 0; i < 60; i++) {
        const obj = thin(full, r) as KObject;
        let expected: KObject;
        try {
          expected = roundTrip(obj);
        } catch {
          continue; // the encoder refuses it: a store would never write it
        }
        const got = normalizeStored(obj);
        if (got === undefined) {
          declined++;
          continue;
        }
        assert.equal(JSON.stringify(got), JSON.stringify(expected), `${k.kind} #${i}`);
        assert.deepStrictEqual(got, expected, `${k.kind} #${i}`);
        checked++;
      }
    }
    assert.ok(checked > 1000, `${checked} objects checked, ${declined} declined`);
    assert.ok(declined < checked / 4, `${declined} declined of ${checked + declined}`);
  });

  it('pods and claims as clients send them, with the values the encoder converts', () => {
    const pod: KObject = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: 'p',
        namespace: 'ns',
        uid: 'u-1',
        creationTimestamp: '2024-01-02T03:04:05Z',
        labels: { b: '2', a: '1', 'é': 'x' },
        annotations: {},
        managedFields: [
          { manager: 'kubectl', operation: 'Update', apiVersion: 'v1', time: '2024-01-02T03:04:05.999Z', fieldsType: 'FieldsV1', fieldsV1: { 'f:spec': { 'f:containers': { 'k:{"name":"c"}': { '.': {} } } } } },
          // Not what a client sends, but JSON text on the wire: copied as JSON.stringify and JSON.parse would.
          { manager: 'odd', operation: 'Apply', apiVersion: 'v1', fieldsType: 'FieldsV1', fieldsV1: { a: -0, b: undefined, c: [1, 'x\ud800', null], d: { e: NaN, '1': 2 }, f: new Date(0) } },
        ],
      },
      spec: {
        containers: [{ name: 'c', image: 'busybox', ports: [{ containerPort: '80' as unknown as number, protocol: 'TCP' }], resources: { limits: { cpu: 1 as unknown as string } }, tty: false }],
        terminationGracePeriodSeconds: 30,
        activeDeadlineSeconds: null,
        securityContext: {},
        nodeSelector: {},
        tolerations: [],
        overhead: null,
      },
      status: { phase: 'Pending', conditions: [{ type: 'Ready', status: 'False', lastTransitionTime: null }] },
    };
    assertSame(pod, 'pod');
    const pvc: KObject = {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'c', namespace: 'ns', generateName: '', deletionTimestamp: '2024-01-02T03:04:05+01:00', finalizers: ['kubernetes.io/pvc-protection'] },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1.5Gi' } }, volumeMode: 'Filesystem', storageClassName: '' },
      status: { phase: 'Pending', capacity: {} },
    };
    assertSame(pvc, 'claim');
    assertSame({ apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'bare' } }, 'bare claim');
  });

  it('declines what only a real round trip answers: unknown fields, integers past 2^53, kinds stored as JSON', () => {
    const withUnknown = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'u' } } as KObject;
    Object.defineProperty(withUnknown.metadata!, UNKNOWN_FIELDS, { value: Buffer.from([0xf8, 0x3e, 0x01]), enumerable: false });
    assert.equal(normalizeStored(withUnknown), undefined);
    assert.equal(normalizeStored({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'x', generation: 2 ** 60 } }), undefined);
    assert.equal(normalizeStored({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w' } }), undefined);
  });

  it("a store's writes reach its watch cache as what a decode of the stored bytes gives", async () => {
    const kv = await openSqlite({ path: ':memory:' });
    const caches: WatchCache[] = [];
    try {
      const scope = { namespace: 'ns1' };
      for (const decl of [podKind, pvcKind]) {
        const cache = new WatchCache(kv, { prefix: `/registry/${decl.resource}/`, capacity: 100, resource: decl.resource });
        caches.push(cache);
        await cache.start();
        let handed = 0;
        const expect = cache.expect.bind(cache);
        cache.expect = (value, obj) => {
          handed++;
          expect(value, obj);
        };
        const store = new ResourceStore(decl, { kv, prefix: '/registry', featureGates: {}, storageEncoding: 'protobuf', watchCache: cache });
        const rich =
          decl === podKind
            ? {
                containers: [{ name: 'c', image: 'busybox', command: ['sh', '-c', 'sleep 1'], ports: [{ containerPort: 80 }], resources: { limits: { cpu: '100m' } }, env: [{ name: 'A', value: '1' }] }],
                volumes: [{ name: 'v', emptyDir: {} }],
                nodeName: 'n1',
                tolerations: [{ key: 'k', operator: 'Exists' }],
              }
            : { accessModes: ['ReadWriteOnce', 'ReadOnlyMany'], resources: { requests: { storage: '1.5Gi' }, limits: { storage: '2Gi' } }, storageClassName: 'fast', selector: { matchLabels: { a: 'b' } } };
        const bodies: KObject[] = [
          { apiVersion: 'v1', kind: decl.kind, metadata: { name: 'a', labels: { x: 'y' } }, spec: decl === podKind ? { containers: [{ name: 'c', image: 'i' }] } : { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } },
          { apiVersion: 'v1', kind: decl.kind, metadata: { name: 'b', labels: { z: '1' }, annotations: { note: 'héllo ✓' }, finalizers: ['example.com/f'] }, spec: rich },
        ];
        for (const body of bodies) await store.create(scope, body);
        await store.update(scope, 'a', (cur) => ({ ...cur!, metadata: { ...cur!.metadata, annotations: { n: '1' } } }));
        assert.equal(handed, 3, `${decl.kind}: every write handed to the cache`);
        for (const name of ['a', 'b']) {
          const key = `/registry/${decl.resource}/ns1/${name}`;
          const { kv: stored } = await kv.get(key);
          for (let i = 0; i < 200 && cache.get(key)?.modRevision !== stored!.modRevision; i++) await new Promise((r) => setTimeout(r, 5));
          assert.equal(cache.get(key)!.value.toString(), JSON.stringify(decodeStored(stored!.value)), `${decl.kind} ${name}`);
        }
      }
    } finally {
      for (const c of caches) await c.stop();
      await kv.close();
    }
  });
});
