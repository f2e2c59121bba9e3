/**
 * The range allocators' bitmaps (core/v1 RangeAllocation) are stored in --storage-media-type: protobuf by
 * default, as kube-apiserver stores them, and read back whatever encoding wrote them.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { openStorage, type Storage } from '../../src/storage/factory.js';
import { RangeAllocator } from '../../src/registry/allocators/range.js';
import { ServiceNetwork } from '../../src/registry/allocators/service-network.js';
import { decodeObject, hasProtobufMagic } from '../../src/util/protobuf.js';

function memoryStorage(): Promise<Storage> {
  return openStorage({
    servers: [],
    serversOverrides: [],
    prefix: '/registry',
    healthcheckTimeoutMs: 2000,
    compactionIntervalMs: 0,
    countMetricPollPeriodMs: 0,
    dbMetricPollIntervalMs: 0,
    dataDir: ':memory:',
    log: () => {},
  });
}

describe('range allocators: stored encoding', () => {
  it('protobuf: a k8s\\0 RangeAllocation with range and the bitmap as bytes; JSON and protobuf readers agree', async () => {
    const storage = await memoryStorage();
    try {
      const kv = storage.kvFor('', 'serviceipallocations');
      const key = '/registry/ranges/servicenodeports';
      const pb = new RangeAllocator(kv, key, 16, '30000-30015', 'protobuf');
      await pb.allocate(3, 'taken');
      await pb.allocate(9, 'taken');
      const stored = (await kv.get(key)).kv!.value;
      assert.ok(hasProtobufMagic(stored));
      const obj = decodeObject(stored);
      assert.equal(obj['kind'], 'RangeAllocation');
      assert.equal(obj['apiVersion'], 'v1');
      assert.equal(obj['range'], '30000-30015');
      // offsets 3 and 9 of a big-endian bitmap (Kubernetes' big.Int bytes): 0x0208
      assert.equal(Buffer.from(obj['data'] as string, 'base64').toString('hex'), '0208');

      // A JSON-configured allocator reads the protobuf bitmap, and its write is JSON that the protobuf one reads.
      const json = new RangeAllocator(kv, key, 16, '30000-30015', 'json');
      assert.equal(await json.has(3), true);
      assert.equal(await json.has(9), true);
      await json.allocate(4, 'taken');
      const rewritten = (await kv.get(key)).kv!.value;
      assert.equal(hasProtobufMagic(rewritten), false);
      assert.equal(JSON.parse(Buffer.from(rewritten).toString('utf8')).kind, 'RangeAllocation');
      pb.forget();
      assert.equal(await pb.has(4), true);
      assert.equal(await pb.has(3), true);
    } finally {
      await storage.close();
    }
  });

  it('ServiceNetwork passes the encoding to its cluster IP and node port allocators', async () => {
    const storage = await memoryStorage();
    try {
      const kv = storage.kvFor('', 'serviceipallocations');
      const net = new ServiceNetwork(kv, '/registry', { clusterIPRange: '10.7.0.0/28', nodePorts: { min: 30000, max: 30003 }, storageEncoding: 'protobuf' });
      await net.nodePorts.store.allocate(1, 'taken');
      await net.ipAllocators.get(net.defaultFamily)!.store.allocate(2, 'taken');
      for (const key of ['/registry/ranges/servicenodeports', '/registry/ranges/serviceips']) {
        const value = (await kv.get(key)).kv!.value;
        assert.ok(hasProtobufMagic(value), key);
        assert.equal(decodeObject(value)['kind'], 'RangeAllocation');
      }
    } finally {
      await storage.close();
    }
  });
});
