/**
 * The Service allocators over real storage (the embedded store in memory): two allocators on one key stand
 * for two API servers sharing a store, so compare-and-swap must keep them from handing out one offset twice;
 * the repair keeps unheld offsets for three rounds; the bitmap is stored as Kubernetes' RangeAllocation.
 * Then the lease endpoint reconciler with two servers' controllers on one store.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { openStorage, type Storage } from '../../src/storage/factory.js';
import { RangeAllocator, REPAIRS_BEFORE_LEAK_CLEANUP, AllocationError } from '../../src/registry/allocators/range.js';
import { CIDR, ServiceIPRange, formatIP, parseIP } from '../../src/registry/allocators/ip.js';
import { ServiceNetwork } from '../../src/registry/allocators/service-network.js';
import { Registry } from '../../src/registry/registry.js';
import { BUILTIN_KINDS } from '../../src/registry/kinds/index.js';
import { KubernetesServiceController } from '../../src/server/controllers/kubernetes-service.js';

async function memoryStorage(): Promise<Storage> {
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

describe('service allocators', () => {
  let storage: Storage;
  before(async () => {
    storage = await memoryStorage();
  });
  after(async () => storage?.close());

  it('IP ranges: Kubernetes offsets, Go formatting', () => {
    const r = new ServiceIPRange(CIDR.parse('10.0.0.0/24'));
    assert.equal(r.size, 254);
    assert.equal(r.ipAt(0), '10.0.0.1');
    assert.equal(r.ipAt(253), '10.0.0.254');
    assert.equal(r.offsetOf('10.0.0.0'), -1);
    assert.equal(r.offsetOf('10.0.0.255'), -1);
    assert.equal(r.offsetOf('10.0.1.1'), -1);
    const v6 = new ServiceIPRange(CIDR.parse('fd00:1::/64'));
    assert.equal(v6.size, 65535);
    assert.equal(v6.ipAt(0), 'fd00:1::1');
    assert.equal(formatIP('IPv6', parseIP('2001:db8:0:0:1:0:0:1')!.value), '2001:db8::1:0:0:1');
    assert.equal(parseIP('::ffff:10.1.2.3')?.family, 'IPv4');
    assert.equal(CIDR.parse('10.1.2.3/16').toString(), '10.1.0.0/16');
  });

  it('two allocators on one key never hand out an offset twice', async () => {
    const kv = storage.kvFor('', 'serviceipallocations');
    const a = new RangeAllocator(kv, '/registry/ranges/test-a', 64, 'test');
    const b = new RangeAllocator(kv, '/registry/ranges/test-a', 64, 'test');
    const got = await Promise.all(Array.from({ length: 64 }, (_, i) => (i % 2 ? a : b).allocateNext()));
    assert.equal(new Set(got).size, 64);
    await assert.rejects(a.allocateNext(), (e: unknown) => e instanceof AllocationError && e.kind === 'full' && e.message === 'range is full');
    await b.release(got[0]!);
    await assert.rejects(b.allocate(got[1]!, 'provided IP is already allocated'), /provided IP is already allocated/);
    await a.allocate(got[0]!, 'taken');
    // The stored value is a RangeAllocation whose data is the bitmap as a big-endian integer.
    const stored = JSON.parse(Buffer.from((await kv.get('/registry/ranges/test-a')).kv!.value).toString());
    assert.equal(stored.kind, 'RangeAllocation');
    assert.equal(stored.range, 'test');
    assert.equal(Buffer.from(stored.data, 'base64').toString('hex'), 'ffffffffffffffff');
  });

  it('repair: held offsets kept, unheld ones freed after three repairs', async () => {
    const kv = storage.kvFor('', 'serviceipallocations');
    const r = new RangeAllocator(kv, '/registry/ranges/test-b', 16, 'test');
    await r.allocate(3, 'x');
    await r.allocate(5, 'x');
    for (let i = 1; i < REPAIRS_BEFORE_LEAK_CLEANUP; i++) {
      assert.deepEqual(await r.repair([3, 9]), []);
      assert.equal(await r.has(5), true, `still held after repair ${i}`);
    }
    assert.deepEqual(await r.repair([3, 9]), [5]);
    assert.equal(await r.has(5), false);
    assert.equal(await r.has(9), true);
    assert.equal(await r.has(3), true);
  });

  it('the first address of the primary range is only given by name', async () => {
    const net = new ServiceNetwork(storage.kvFor('', 'serviceipallocations'), '/registry/tiny', { clusterIPRange: '10.5.0.0/30', nodePorts: { min: 30000, max: 30001 } });
    assert.equal(net.apiServerServiceIP, '10.5.0.1');
    const ip = net.ipAllocators.get('IPv4')!;
    assert.equal(await ip.allocateNext(), '10.5.0.2');
    await assert.rejects(ip.allocateNext(), /range is full/);
    await ip.allocate('10.5.0.1');
    await assert.rejects(ip.allocate('10.5.0.3'), /provided IP is not in the valid range\. The range of valid IPs is 10\.5\.0\.0\/30/);
    await assert.rejects(net.nodePorts.allocate(30005), /provided port is not in the valid range\. The range of valid ports is 30000-30001/);
  });
});

describe('lease endpoint reconciler: two servers on one store', () => {
  let storage: Storage;
  before(async () => {
    storage = await memoryStorage();
  });
  after(async () => storage?.close());

  it('the Endpoints list every server holding a lease; a stopping server takes itself out', async () => {
    const net = new ServiceNetwork(storage.kvFor('', 'serviceipallocations'), storage.prefix, { clusterIPRange: '10.0.0.0/24', nodePorts: { min: 30000, max: 32767 } });
    const registry = new Registry({ storage, kinds: BUILTIN_KINDS, featureGates: {}, settings: { serviceNetwork: net } });
    await registry.store('', 'v1', 'namespaces')!.create({ namespace: '' }, { metadata: { name: 'default' } });
    const controller = (ip: string) =>
      new KubernetesServiceController(registry, {
        net,
        namespace: 'default',
        publicIP: ip,
        securePort: () => 6443,
        nodePort: 0,
        reconciler: 'lease',
        apiserverCount: 1,
        kv: storage.kvFor('', 'apiServerIPInfo'),
        prefix: storage.prefix,
        log: () => {},
      });
    const one = controller('192.0.2.21');
    const two = controller('192.0.2.22');
    const endpoints = async () => {
      const ep = await registry.store('', 'v1', 'endpoints')!.get({ namespace: 'default' }, 'kubernetes');
      return ((ep.subsets?.[0]?.addresses ?? []) as { ip: string }[]).map((a) => a.ip);
    };
    try {
      await one.start();
      assert.deepEqual(await endpoints(), ['192.0.2.21']);
      await two.start();
      assert.deepEqual(await endpoints(), ['192.0.2.21', '192.0.2.22']);
      const svc = await registry.store('', 'v1', 'services')!.get({ namespace: 'default' }, 'kubernetes');
      assert.equal(svc.spec.clusterIP, '10.0.0.1');
      const leases = await storage.kvFor('', 'apiServerIPInfo').list('/registry/masterleases/');
      assert.deepEqual(leases.kvs.map((kv) => kv.key), ['/registry/masterleases/192.0.2.21', '/registry/masterleases/192.0.2.22']);
      assert.ok(leases.kvs.every((kv) => kv.lease !== 0), 'leases expire');
      await two.stop();
      assert.deepEqual(await endpoints(), ['192.0.2.21']);
    } finally {
      await one.stop();
      await two.stop();
    }
    assert.deepEqual(await endpoints(), []);
  });
});
