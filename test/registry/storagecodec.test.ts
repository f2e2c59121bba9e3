/**
 * --storage-media-type: every served kind round-trips field by field through each stored encoding (protobuf,
 * JSON, YAML); values are read whatever encoding wrote them, so a store written with one setting reads back
 * with another; the watch cache and storage reads agree.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { openSqlite } from '../../src/storage/sqlite.js';
import type { KV } from '../../src/storage/interface.js';
import { ResourceStore } from '../../src/registry/store.js';
import { WatchCache } from '../../src/registry/cacher/watchcache.js';
import { pvcKind, configMapKind, podKind } from '../../src/registry/kinds/index.js';
import { decodeStored, encodeStored, isStoredJSON, storageEncoding, type StorageEncoding } from '../../src/registry/storagecodec.js';
import { sampleObject, servedKinds } from './protobuf-samples.js';
import { jsonDiff } from './protobuf-kinds.test.js';

const ENCODINGS: StorageEncoding[] = ['protobuf', 'json', 'yaml'];

describe('storage codec', () => {
  it('maps the media types, the orch spelling too; protobuf is the default', () => {
    assert.equal(storageEncoding(undefined), 'protobuf');
    assert.equal(storageEncoding('application/vnd.orch.protobuf'), 'protobuf');
    assert.equal(storageEncoding('application/vnd.kubernetes.protobuf'), 'protobuf');
    assert.equal(storageEncoding('application/json'), 'json');
    assert.equal(storageEncoding('application/yaml'), 'yaml');
    assert.throws(() => storageEncoding('text/plain'));
  });

  for (const k of servedKinds().filter((x) => !x.kind.endsWith('List'))) {
    it(`${k.apiVersion} ${k.kind}: a full object round-trips in every encoding`, () => {
      const obj = sampleObject(k.apiVersion, k.kind, k.definition);
      for (const e of ENCODINGS) {
        const bytes = encodeStored(obj, e);
        if (e === 'protobuf') assert.equal(bytes.subarray(0, 4).toString('latin1'), 'k8s\0');
        if (e === 'json') assert.ok(isStoredJSON(bytes));
        if (e === 'yaml') assert.ok(!isStoredJSON(bytes) && /^apiVersion: /m.test(bytes.toString()) && !bytes.toString().startsWith('k8s'));
        assert.deepEqual(jsonDiff(decodeStored(bytes), obj), [], e);
      }
    });
  }

  it('a kind without a protobuf message is stored as JSON', () => {
    const cr = { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w' }, spec: { size: 1 } };
    const bytes = encodeStored(cr, 'protobuf');
    assert.ok(isStoredJSON(bytes));
    assert.deepEqual(decodeStored(bytes), cr);
  });

  it('protobuf is smaller than JSON for a PVC', () => {
    const pvc = sampleObject('v1', 'PersistentVolumeClaim', pvcKind.definition);
    assert.ok(encodeStored(pvc, 'protobuf').length < encodeStored(pvc, 'json').length);
  });
});

describe('a store read back after changing --storage-media-type', () => {
  let kv: KV;
  const scope = { namespace: 'ns1' };
  before(async () => {
    kv = await openSqlite({ path: ':memory:' });
  });
  after(async () => kv.close());
  const storeWith = (e: StorageEncoding, decl = pvcKind, watchCache?: WatchCache) =>
    new ResourceStore(decl, { kv, prefix: '/registry', featureGates: {}, storageEncoding: e, ...(watchCache ? { watchCache } : {}) });
  const pvc = (name: string) => ({
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, labels: { enc: name } },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
  });

  it('writes each encoding, and every setting reads all of them', async () => {
    const written = [];
    for (const e of ENCODINGS) {
      const s = storeWith(e);
      const created = await s.create(scope, pvc(`pvc-${e}`));
      written.push(created);
      const { kv: raw } = await kv.get(`/registry/persistentvolumeclaims/ns1/pvc-${e}`);
      const head = Buffer.from(raw!.value).subarray(0, 4).toString('latin1');
      assert.equal(head === 'k8s\0' ? 'protobuf' : head.startsWith('{') ? 'json' : 'yaml', e);
    }
    for (const e of ENCODINGS) {
      const s = storeWith(e);
      for (const w of written) assert.deepEqual(await s.get(scope, w.metadata!.name!), w, `${e} reads ${w.metadata!.name}`);
      const list = await s.list(scope, {});
      assert.deepEqual((list.items as unknown[]).length, 3);
      assert.deepEqual(list.items, written.slice().sort((a, b) => a.metadata!.name!.localeCompare(b.metadata!.name!)));
      // getJSON answers the same object (as text when the value is JSON).
      for (const w of written) {
        const j = await s.getJSON(scope, w.metadata!.name!);
        assert.deepEqual(Buffer.isBuffer(j) ? JSON.parse(j.toString()) : j, w);
      }
    }
    // An update rewrites the value in the current setting.
    const pb = storeWith('protobuf');
    const { object } = await pb.update(scope, 'pvc-json', (cur) => ({ ...cur!, metadata: { ...cur!.metadata, labels: { enc: 'now-protobuf' } } }));
    const { kv: raw } = await kv.get('/registry/persistentvolumeclaims/ns1/pvc-json');
    assert.equal(Buffer.from(raw!.value).subarray(0, 4).toString('latin1'), 'k8s\0');
    assert.deepEqual(await storeWith('json').get(scope, 'pvc-json'), object);
  });

  it('through the watch cache, protobuf values read as the same objects as from storage', async () => {
    const cache = new WatchCache(kv, { prefix: '/registry/pods/', capacity: 100, resource: 'pods', objectType: '*core.Pod' });
    await cache.start();
    try {
      const s = storeWith('protobuf', podKind, cache);
      const created = await s.create(scope, {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'full', labels: { a: 'b' }, annotations: { note: 'héllo ✓' } },
        spec: {
          containers: [{ name: 'c', image: 'busybox', command: ['sh', '-c', 'sleep 1'], ports: [{ containerPort: 80 }], resources: { limits: { cpu: '100m' } } }],
          volumes: [{ name: 'v', emptyDir: {} }],
          nodeName: 'n1',
        },
      });
      const plain = storeWith('protobuf', podKind);
      const fromStorage = await plain.get(scope, 'full');
      assert.deepEqual(fromStorage, created);
      // Wait until the cache holds it, then every read path agrees.
      for (let i = 0; i < 100 && !cache.get('/registry/pods/ns1/full'); i++) await new Promise((r) => setTimeout(r, 10));
      assert.ok(cache.get('/registry/pods/ns1/full'));
      assert.ok(isStoredJSON(cache.get('/registry/pods/ns1/full')!.value), 'the cache keeps protobuf values as JSON');
      assert.deepEqual(await s.get(scope, 'full'), created);
      assert.deepEqual(await s.get(scope, 'full', '0'), created);
      const j = await s.getJSON(scope, 'full');
      assert.ok(Buffer.isBuffer(j), 'a storage read at the cached revision answers JSON text');
      assert.deepEqual(JSON.parse(j.toString()), created);
      assert.deepEqual((await s.list(scope, { resourceVersion: '0' })).items, [created]);
    } finally {
      await cache.stop();
    }
  });

  it('a configmap written as YAML is read as protobuf and back', async () => {
    const y = storeWith('yaml', configMapKind);
    const cm = await y.create(scope, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data: { 'a.yaml': 'x: 1\n', b: 'two' } });
    assert.deepEqual(await storeWith('protobuf', configMapKind).get(scope, 'c'), cm);
  });
});
