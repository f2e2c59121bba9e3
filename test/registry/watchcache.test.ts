/**
 * The watch cache (src/registry/cacher) under the generic store, on the embedded store: one storage watch
 * fanned out, the window and 410 for versions older than it, lists and gets from memory that wait for a
 * requested version, selectors, bookmarks, slow watchers ended, and a fresh list after the storage watch fails.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { openSqlite } from '../../src/storage/sqlite.js';
import { configMapKind } from '../../src/registry/kinds/configmap.js';
import { errors } from '../../src/storage/errors.js';
import type { KV, Watch, WatchEvent as StorageEvent } from '../../src/storage/interface.js';
import { ResourceStore, type WatchEvent } from '../../src/registry/store.js';
import { StatusError } from '../../src/registry/errors.js';
import type { KindDecl } from '../../src/registry/kind.js';
import { WatchCache } from '../../src/registry/cacher/watchcache.js';
import { CacheWatch } from '../../src/registry/cacher/cachewatch.js';
import { watchCacheSizes } from '../../src/registry/cacher/sizes.js';
import { parse as parseLabels } from '../../src/util/labels.js';
import { parseSelector } from '../../src/util/fields.js';
import { eventually } from '../helpers/eventually.js';

const gadgetKind: KindDecl = {
  group: 'example.com',
  version: 'v1',
  kind: 'Gadget',
  listKind: 'GadgetList',
  resource: 'gadgets',
  singular: 'gadget',
  namespaced: true,
  definition: 'com.example.v1.Gadget',
  listDefinition: 'com.example.v1.GadgetList',
  definitions: {},
  strategy: { allowUnconditionalUpdate: true, validate: () => [], validateUpdate: () => [] },
  fieldSelectors: { 'spec.color': (o) => String(o.spec?.color ?? '') },
};

/** A KV that counts lists and watches of the cache's prefix, and can break the running watches. */
class CountingKV {
  lists = 0;
  watches = 0;
  gets = 0;
  private readonly live = new Set<{ fail: (err: Error) => void }>();
  constructor(readonly kv: KV) {}
  list(...args: Parameters<KV['list']>): ReturnType<KV['list']> {
    this.lists++;
    return this.kv.list(...args);
  }
  watch(key: string, opts?: Parameters<KV['watch']>[1]): Watch {
    this.watches++;
    const inner = this.kv.watch(key, opts);
    const it = inner[Symbol.asyncIterator]();
    let failWith: ((err: Error) => void) | null = null;
    const broken = new Promise<never>((_, reject) => (failWith = reject));
    broken.catch(() => undefined);
    const handle = { fail: (err: Error) => failWith!(err) };
    this.live.add(handle);
    const live = this.live;
    return {
      [Symbol.asyncIterator]: () => ({
        next: () => Promise.race<IteratorResult<StorageEvent>>([it.next(), broken]),
        return: async () => {
          inner.close();
          return { value: undefined, done: true };
        },
      }),
      close: () => {
        live.delete(handle);
        inner.close();
      },
      progress: () => inner.progress?.(),
    };
  }
  /** This KV as the store's KV: list and watch counted, the rest straight to the backend. */
  asKV(): KV {
    return new Proxy(this.kv, {
      get: (target, p, receiver) => {
        if (p === 'list') return this.list.bind(this);
        if (p === 'watch') return this.watch.bind(this);
        if (p === 'get') {
          return (...args: Parameters<KV['get']>) => {
            this.gets++;
            return this.kv.get(...args);
          };
        }
        const v: unknown = Reflect.get(target, p, receiver);
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
  }
  /** Fails every running watch as a compaction does. */
  breakWatches(): void {
    for (const h of this.live) h.fail(errors.compacted(1, 2, 3));
  }
}

async function take(it: AsyncIterator<WatchEvent>, n: number): Promise<WatchEvent[]> {
  const out: WatchEvent[] = [];
  while (out.length < n) {
    const r = await it.next();
    if (r.done) break;
    out.push(r.value);
  }
  return out;
}

function names(evs: WatchEvent[]): string[] {
  return evs.map((e) => `${e.type} ${e.object.metadata?.name ?? e.object.metadata?.resourceVersion}`);
}

async function statusCode(p: Promise<unknown>): Promise<number> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof StatusError, String(err));
    return err.code;
  }
  return assert.fail('expected a StatusError');
}

describe('watch cache', () => {
  let base: KV;
  let kv: CountingKV;
  let cache: WatchCache;
  let store: ResourceStore;
  const scope = { namespace: 'ns1' };
  const gadget = (name: string, labels: Record<string, string> = {}, color = 'red') => ({ metadata: { name, labels }, spec: { color } });
  const rvOf = (o: { metadata?: { resourceVersion?: string } }) => o.metadata!.resourceVersion!;

  before(async () => {
    base = await openSqlite({ path: ':memory:' });
    kv = new CountingKV(base);
    cache = new WatchCache(kv.asKV(), { prefix: '/registry/gadgets/', capacity: 5, resource: 'gadgets.example.com', relistBackoffMs: 10 });
    store = new ResourceStore(gadgetKind, { kv: kv.asKV(), prefix: '/registry', featureGates: {}, watchCache: cache });
    await store.create(scope, gadget('before'));
    await cache.start();
  });
  after(async () => {
    await cache.stop();
    await base.close();
  });

  it('fans one storage watch out to every watcher', async () => {
    const watchesBefore = kv.watches;
    const start = rvOf(await store.get(scope, 'before'));
    const a = store.watch(scope, { resourceVersion: start })[Symbol.asyncIterator]();
    const b = store.watch({ namespace: '' }, { resourceVersion: start })[Symbol.asyncIterator]();
    const pa = take(a, 2);
    const pb = take(b, 2);
    await store.create(scope, gadget('fan1'));
    await store.create({ namespace: 'ns2' }, gadget('fan2'));
    await store.create(scope, gadget('fan3'));
    assert.deepEqual(names(await pa), ['ADDED fan1', 'ADDED fan3']);
    assert.deepEqual(names(await pb), ['ADDED fan1', 'ADDED fan2']);
    assert.equal(kv.watches, watchesBefore, 'no storage watch per API watch');
    await a.return!();
    await b.return!();
    assert.equal(cache.watchers, 0);
  });

  it('serves lists and gets with a resourceVersion from memory, and consistent lists once it reached storage\'s revision', async () => {
    const listsBefore = kv.lists;
    const all = await store.list({ namespace: '' }, { resourceVersion: '0', limit: 1 });
    assert.deepEqual((all.items as { metadata: { name: string } }[]).map((i) => i.metadata.name), ['before', 'fan1', 'fan3', 'fan2']);
    assert.equal(all.metadata!.continue, undefined, 'a limit with resourceVersion 0 is ignored, as the cacher does');
    const got = await store.get(scope, 'fan1', '0');
    assert.equal(got.metadata!.name, 'fan1');
    assert.equal(await statusCode(store.get(scope, 'nope', '0')), 404);
    assert.equal(kv.lists, listsBefore, 'answered from memory');
    const consistent = await store.list(scope, {});
    assert.equal((consistent.items as unknown[]).length, 3);
    assert.equal(consistent.metadata!.resourceVersion, String(await base.currentRevision()));
    assert.equal(kv.lists, listsBefore, 'a list without resourceVersion is answered from memory, at storage\'s revision');
    const paged = await store.list(scope, { limit: 1 });
    assert.deepEqual((paged.items as { metadata: { name: string } }[]).map((i) => i.metadata.name), ['before']);
    assert.equal(paged.metadata!.remainingItemCount, 2);
    assert.equal(kv.lists, listsBefore, 'the first page from memory');
    const next = await store.list(scope, { limit: 5, continue: paged.metadata!.continue as string });
    assert.deepEqual((next.items as { metadata: { name: string } }[]).map((i) => i.metadata.name), ['fan1', 'fan3']);
    assert.equal(next.metadata!.resourceVersion, paged.metadata!.resourceVersion);
    assert.equal(kv.lists, listsBefore + 1, 'the next pages from storage, at the first page\'s revision');
    // Read-your-writes: a write and the list right after it, before the cache has seen the write's event.
    const written = await store.create(scope, gadget('ryw'));
    const after = await store.list(scope, {});
    assert.ok((after.items as { metadata: { name: string } }[]).some((i) => i.metadata.name === 'ryw'));
    assert.ok(Number(after.metadata!.resourceVersion) >= Number(rvOf(written)));
    assert.equal(kv.lists, listsBefore + 1, 'from memory');
    await store.delete(scope, 'ryw');
    assert.ok(!((await store.list(scope, {})).items as { metadata: { name: string } }[]).some((i) => i.metadata.name === 'ryw'));
  });

  it('waits for a requested resourceVersion the cache has not reached yet, and answers 504 past 3 s', async () => {
    const current = Number(await base.currentRevision());
    const pending = store.list(scope, { resourceVersion: String(current + 1), resourceVersionMatch: 'NotOlderThan' });
    await new Promise((r) => setTimeout(r, 100));
    await store.create(scope, gadget('fresh'));
    const list = await pending;
    assert.ok(Number(list.metadata!.resourceVersion) >= current + 1);
    assert.ok((list.items as { metadata: { name: string } }[]).some((i) => i.metadata.name === 'fresh'));
    const far = current + 1000;
    try {
      await store.list(scope, { resourceVersion: String(far) });
      assert.fail('expected a timeout');
    } catch (err) {
      assert.ok(err instanceof StatusError);
      assert.equal(err.code, 504);
      assert.match(err.status.message ?? '', new RegExp(`^Too large resource version: ${far}, current: \\d+$`));
      assert.equal(err.status.details?.causes?.[0]?.reason, 'ResourceVersionTooLarge');
    }
  });

  it('replays the window for a watch from a recent version and answers 410 for an older one', async () => {
    const first = await store.create(scope, gadget('w0'));
    const created = [];
    for (let i = 1; i <= 7; i++) created.push(await store.create(scope, gadget(`w${i}`)));
    // Capacity 5: the window holds w3..w7.
    const recent = store.watch(scope, { resourceVersion: rvOf(created[2]!) })[Symbol.asyncIterator]();
    assert.deepEqual(names(await take(recent, 4)), ['ADDED w4', 'ADDED w5', 'ADDED w6', 'ADDED w7']);
    await recent.return!();
    const old = store.watch(scope, { resourceVersion: rvOf(first) })[Symbol.asyncIterator]();
    const [ev] = await take(old, 2);
    assert.equal(ev!.type, 'ERROR');
    assert.equal(ev!.object.code, 410);
    assert.equal(ev!.object.reason, 'Expired');
    assert.match(ev!.object.message, /^too old resource version: \d+ \(\d+\)$/);
    assert.equal((await old.next()).done, true);
  });

  it('sends the cached state for resourceVersion 0, applies selectors in memory, and sends bookmarks', async () => {
    const w = store.watch(
      scope,
      { resourceVersion: '0', labelSelector: parseLabels('tier=web'), fieldSelector: parseSelector('spec.color=blue'), allowWatchBookmarks: true },
      50,
    );
    const it = w[Symbol.asyncIterator]();
    await store.create(scope, gadget('sel', { tier: 'web' }, 'blue'));
    const sel = await store.get(scope, 'sel');
    assert.deepEqual(names(await take(it, 1)), ['ADDED sel']);
    await store.update(scope, 'sel', (cur) => ({ ...cur!, spec: { color: 'green' } }));
    await store.update(scope, 'sel', (cur) => ({ ...cur!, metadata: { ...cur!.metadata, labels: { tier: 'web', x: 'y' } } }));
    await store.update(scope, 'sel', (cur) => ({ ...cur!, spec: { color: 'blue' } }));
    await store.create(scope, gadget('other', { tier: 'db' }, 'blue'));
    const evs = await take(it, 3);
    assert.deepEqual(names(evs.filter((e) => e.type !== 'BOOKMARK')).slice(0, 2), ['DELETED sel', 'ADDED sel']);
    const deleted = evs.find((e) => e.type === 'DELETED')!;
    assert.equal(deleted.object.spec.color, 'blue', 'a DELETED for a selector change carries the old object');
    assert.ok(Number(rvOf(deleted.object)) > Number(rvOf(sel)));
    const bookmark = await eventually('a bookmark', async () => {
      const r = await it.next();
      return !r.done && r.value.type === 'BOOKMARK' ? r.value : undefined;
    });
    assert.equal(bookmark.object.kind, 'Gadget');
    assert.ok(Number(rvOf(bookmark.object)) >= Number(rvOf(deleted.object)));
    w.close();
    assert.equal(await statusCode(Promise.resolve().then(() => store.watch(scope, { resourceVersion: '0', fieldSelector: parseSelector('spec.size=1') }))), 400);
  });

  it('ends a watcher that does not take its events, and keeps serving the others', async () => {
    const start = String(cache.currentRevision());
    const slow = new CacheWatch(cache, store, scope, { resourceVersion: start }, 60_000, false, 2);
    const fast = store.watch(scope, { resourceVersion: start })[Symbol.asyncIterator]();
    const firstSlow = slow.next();
    const fastEvents = take(fast, 12);
    for (let i = 0; i < 12; i++) await store.create(scope, gadget(`slow${i}`));
    assert.equal((await fastEvents).length, 12);
    assert.deepEqual(names([(await firstSlow).value as WatchEvent]), ['ADDED slow0']);
    const rest = [];
    for (;;) {
      const r = await slow.next();
      if (r.done) break;
      rest.push(r.value);
    }
    assert.ok(rest.length < 11, `the slow watcher was ended early (got ${rest.length} more events)`);
    assert.ok(cache.terminatedSlow >= 1);
    await fast.return!();
  });

  it('lists again when the storage watch fails, ending the watchers of the old window', async () => {
    const listsBefore = kv.lists;
    const w = store.watch(scope, { resourceVersion: String(cache.currentRevision()) })[Symbol.asyncIterator]();
    const ended = w.next();
    kv.breakWatches();
    assert.equal((await ended).done, true, 'watchers of the old window end');
    await eventually('the cache to list again', () => kv.lists > listsBefore && cache.ready);
    await store.create(scope, gadget('after-relist'));
    const list = await eventually('the new object in the cache', async () => {
      const l = await store.list(scope, { resourceVersion: '0' });
      return (l.items as { metadata: { name: string } }[]).some((i) => i.metadata.name === 'after-relist') ? l : undefined;
    });
    assert.ok(Number(list.metadata!.resourceVersion) > 0);
  });

  it('answers gets and watches without resourceVersion from memory once it reached storage\'s revision; such a watch carries on from storage when the cache lists again', async () => {
    const getsBefore = kv.gets;
    const watchesBefore = kv.watches;
    const written = await store.create(scope, gadget('consistent'));
    // Read-your-writes, whether the cache has seen the write yet (storage then answers) or not.
    assert.equal(rvOf(await store.get(scope, 'consistent')), rvOf(written));
    await eventually('the cache to reach the write', () => cache.currentRevision() >= Number(rvOf(written)));
    const gets = kv.gets;
    assert.equal(rvOf(await store.get(scope, 'consistent')), rvOf(written));
    assert.equal(await statusCode(store.get(scope, 'absent')), 404);
    assert.equal(kv.gets, gets, 'answered from memory');
    assert.ok(kv.gets - getsBefore <= 1);

    const w = store.watch(scope, {})[Symbol.asyncIterator]();
    const initial = await take(w, 1);
    assert.equal(initial[0]!.type, 'ADDED');
    assert.equal(kv.watches, watchesBefore, 'no storage watch');
    const current = ((await store.list(scope, {})).items as unknown[]).length;
    const rest = await take(w, current - 1);
    assert.ok(names([...initial, ...rest]).includes('ADDED consistent'), 'initial events: the current state');
    await store.create(scope, gadget('live1'));
    assert.deepEqual(names(await take(w, 1)), ['ADDED live1']);
    // The cache lists again and ends its watchers: this watch goes on from storage, without a gap or a repeat.
    kv.breakWatches();
    await store.create(scope, gadget('live2'));
    await store.delete(scope, 'live1');
    assert.deepEqual(names(await take(w, 2)), ['ADDED live2', 'DELETED live1']);
    assert.ok(kv.watches > watchesBefore);
    await w.return!();
    await eventually('the cache to list again', () => cache.ready);
  });

  it('sizes: --watch-cache-sizes per resource, the default, Events off by default, and --watch-cache=false', () => {
    const size = watchCacheSizes({ enabled: true, defaultSize: 100, sizes: ['pods#1000', 'deployments.apps#0', 'events#50'] });
    assert.equal(size('', 'pods'), 1000);
    assert.equal(size('apps', 'deployments'), 0);
    assert.equal(size('', 'events'), 50);
    assert.equal(size('events.k8s.io', 'events'), 0);
    assert.equal(size('', 'persistentvolumeclaims'), 100);
    assert.equal(watchCacheSizes({ enabled: false, defaultSize: 100, sizes: ['pods#10'] })('', 'pods'), 0);
    assert.equal(watchCacheSizes({ enabled: true, defaultSize: 0, sizes: [] })('', 'namespaces'), 0);
  });
});

describe('watch cache over protobuf storage', () => {
  it('decodes each written value once: watchers get the object the cache decoded, as a read decodes it', async () => {
    const kv = await openSqlite({ path: ':memory:' });
    const cache = new WatchCache(kv, { prefix: '/registry/configmaps/', capacity: 10, resource: 'configmaps' });
    const store = new ResourceStore(configMapKind, { kv, prefix: '/registry', featureGates: {}, watchCache: cache, storageEncoding: 'protobuf' });
    try {
      await cache.start();
      const scope = { namespace: 'ns1' };
      const cm = (name: string, data: Record<string, string>) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, labels: { a: 'b' } }, data });
      const zero = await store.create(scope, cm('zero', {}));
      const w = store.watch(scope, { resourceVersion: rvOf(zero) })[Symbol.asyncIterator]();
      await store.create(scope, cm('one', { k: 'v1' }));
      await store.update(scope, 'one', (cur) => ({ ...cur!, data: { k: 'v2' } }));
      await store.delete(scope, 'one');
      const evs = await take(w, 3);
      assert.deepEqual(names(evs), ['ADDED one', 'MODIFIED one', 'DELETED one']);
      assert.equal(evs[0]!.object.data.k, 'v1');
      assert.equal(evs[1]!.object.data.k, 'v2');
      assert.equal(evs[2]!.object.data.k, 'v2');
      assert.equal(rvOf(evs[2]!.object), String(cache.currentRevision()), 'a DELETED object carries the deletion\'s revision');
      await store.create(scope, cm('two', { k: 'v' }));
      const [added] = await take(w, 1);
      assert.deepEqual(added!.object, await store.get(scope, 'two'), 'the watcher\'s object is the one a read decodes');
      assert.equal(Object.keys(added!.object.metadata!).at(-1), 'resourceVersion');
      await w.return!();
    } finally {
      await cache.stop();
      await kv.close();
    }
  });
});

function rvOf(o: { metadata?: { resourceVersion?: string } }): string {
  return o.metadata!.resourceVersion!;
}
