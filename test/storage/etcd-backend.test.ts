/**
 * The etcd backend against a real etcd (Debian's /usr/bin/etcd), one etcd for the whole file.
 * Skipped when etcd is not installed, except under CI=true where that is a failure.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { openEtcd } from '../../src/storage/etcd.js';
import { isStorageError, type StorageError, type StorageErrorCode } from '../../src/storage/errors.js';
import type { KV, Watch, WatchEvent } from '../../src/storage/interface.js';
import { requireBinary } from '../helpers/binaries.js';
import { startEtcd, type EtcdProcess } from '../helpers/etcd.js';
import { eventually } from '../helpers/eventually.js';

const etcdBin = requireBinary(undefined, 'etcd');

const enc = (s: string): Uint8Array => Buffer.from(s);
const dec = (v: Uint8Array): string => Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('utf8');
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

async function expectCode(p: Promise<unknown>, code: StorageErrorCode): Promise<StorageError> {
  let result: unknown;
  try {
    result = await p;
  } catch (err) {
    assert.ok(isStorageError(err), `expected a StorageError ${code}, got ${String(err)}`);
    assert.equal(err.code, code, err.message);
    return err;
  }
  assert.fail(`expected StorageError ${code}, got result ${JSON.stringify(result)}`);
}

/** The next `n` events of a watch, failing when they do not come within `timeoutMs`. */
async function takeAll(it: AsyncIterator<WatchEvent>, n: number, timeoutMs = 10_000): Promise<WatchEvent[]> {
  const out: WatchEvent[] = [];
  const deadline = Date.now() + timeoutMs;
  while (out.length < n) {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'timeout'>((r) => (timer = setTimeout(() => r('timeout'), Math.max(0, deadline - Date.now()))));
    const r = await Promise.race([it.next(), timeout]);
    clearTimeout(timer);
    if (r === 'timeout') assert.fail(`only ${out.length} of ${n} events within ${timeoutMs} ms`);
    if (r.done) assert.fail(`watch ended after ${out.length} of ${n} events`);
    out.push(r.value);
  }
  return out;
}

type Events<N extends number, R extends WatchEvent[] = []> = R['length'] extends N ? R : Events<N, [...R, WatchEvent]>;

/** Like takeAll, for a few events, typed as a tuple. */
async function take<N extends 1 | 2 | 3 | 4>(it: AsyncIterator<WatchEvent>, n: N, timeoutMs = 10_000): Promise<Events<N>> {
  return (await takeAll(it, n, timeoutMs)) as Events<N>;
}

/** Asserts that no event arrives within `ms`; returns the pending next() (wrapped: an async function would await it). */
async function expectQuiet(
  it: AsyncIterator<WatchEvent>,
  ms: number,
): Promise<{ pending: Promise<IteratorResult<WatchEvent>> }> {
  const pending = it.next();
  const r = await Promise.race([pending, sleep(ms).then(() => 'quiet' as const)]);
  if (r !== 'quiet') assert.fail(`unexpected event ${JSON.stringify(r)}`);
  return { pending };
}


void describe('etcd backend', { skip: etcdBin ? false : 'etcd not installed' }, () => {
  let etcd: EtcdProcess;
  let kv: KV;
  const watches: Watch[] = [];
  const watch = (key: string, opts?: Parameters<KV['watch']>[1], store: KV = kv): Watch => {
    const w = store.watch(key, opts);
    watches.push(w);
    return w;
  };

  before(async () => {
    etcd = await startEtcd();
    kv = await openEtcd({ endpoints: [etcd.endpoint] });
  });

  after(async () => {
    for (const w of watches) w.close();
    await kv?.close();
    await etcd?.cleanup();
  });

  void it('opens, reports its revision and size', async () => {
    assert.equal(kv.backend, 'etcd');
    const rev = await kv.currentRevision();
    assert.ok(Number.isSafeInteger(rev) && rev >= 1);
    const stats = await kv.stats();
    assert.ok(stats.dbSizeBytes > 0);
  });

  void it('fails to open with Unavailable when etcd is not there', async () => {
    const t0 = Date.now();
    await expectCode(openEtcd({ endpoints: ['http://127.0.0.1:1'], healthcheckTimeoutMs: 500 }), 'Unavailable');
    assert.ok(Date.now() - t0 < 2500);
  });

  void it('works with several endpoints when one of them is down', async () => {
    const store = await openEtcd({ endpoints: ['http://127.0.0.1:1', etcd.endpoint], healthcheckTimeoutMs: 2000 });
    try {
      for (let i = 0; i < 20; i++) {
        const c = await store.create(`/multi/k${i}`, enc('x'));
        assert.equal((await store.get(`/multi/k${i}`)).kv?.modRevision, c.modRevision);
      }
      assert.equal(await store.count('/multi/'), 20);
    } finally {
      await store.close();
    }
  });

  void it('create stores a new key and fails with KeyExists when it is present', async () => {
    const before = await kv.currentRevision();
    const created = await kv.create('/create/a', enc('v1'));
    assert.equal(created.key, '/create/a');
    assert.equal(dec(created.value), 'v1');
    assert.equal(created.modRevision, before + 1);
    assert.equal(created.createRevision, created.modRevision);
    assert.equal(created.version, 1);
    assert.equal(created.lease, 0);
    const err = await expectCode(kv.create('/create/a', enc('v2')), 'KeyExists');
    assert.equal(err.details.key, '/create/a');
    const got = await kv.get('/create/a');
    assert.deepEqual({ ...got.kv!, value: dec(got.kv!.value) }, { ...created, value: 'v1' });
    assert.equal(got.revision, created.modRevision);
    assert.deepEqual(await kv.get('/create/missing'), { kv: null, revision: created.modRevision });
    await expectCode(kv.create('', enc('x')), 'InvalidArgument');
  });

  void it('update is guarded by modRevision: Conflict carries the current value, NotFound when absent', async () => {
    const a = await kv.create('/update/a', enc('v1'));
    const b = await kv.update('/update/a', enc('v2'), a.modRevision);
    assert.equal(b.createRevision, a.createRevision);
    assert.ok(b.modRevision > a.modRevision);
    assert.equal(b.version, 2);
    assert.equal(dec(b.value), 'v2');
    const err = await expectCode(kv.update('/update/a', enc('v3'), a.modRevision), 'Conflict');
    assert.ok(err.details.current);
    assert.equal(err.details.current.modRevision, b.modRevision);
    assert.equal(err.details.current.version, 2);
    assert.equal(dec(err.details.current.value), 'v2');
    await expectCode(kv.update('/update/missing', enc('x'), 5), 'NotFound');
    // A missing key must not be created by an update expecting revision 0.
    await expectCode(kv.update('/update/missing', enc('x'), 0), 'NotFound');
    assert.equal((await kv.get('/update/missing')).kv, null);
    const got = await kv.get('/update/a');
    assert.equal(dec(got.kv!.value), 'v2');
  });

  void it('delete returns prevKv and its revision; guarded deletes fail with Conflict; NotFound when absent', async () => {
    const a = await kv.create('/delete/a', enc('v1'));
    const b = await kv.update('/delete/a', enc('v2'), a.modRevision);
    const err = await expectCode(kv.delete('/delete/a', a.modRevision), 'Conflict');
    assert.equal(err.details.current?.modRevision, b.modRevision);
    const res = await kv.delete('/delete/a', b.modRevision);
    assert.equal(res.prevKv.key, '/delete/a');
    assert.equal(dec(res.prevKv.value), 'v2');
    assert.equal(res.prevKv.modRevision, b.modRevision);
    assert.equal(res.prevKv.version, 2);
    assert.equal(res.revision, b.modRevision + 1);
    assert.equal(await kv.currentRevision(), res.revision);
    await expectCode(kv.delete('/delete/a'), 'NotFound');
    await expectCode(kv.delete('/delete/a', res.revision), 'NotFound');
    const c = await kv.create('/delete/c', enc('x'));
    const unguarded = await kv.delete('/delete/c');
    assert.equal(unguarded.prevKv.modRevision, c.modRevision);
  });

  void it('lists in pages with startKey at one revision while writes continue', async () => {
    const keys = Array.from({ length: 25 }, (_, i) => `/list/k${String(i).padStart(2, '0')}`);
    for (const k of keys) await kv.create(k, enc(`${k}=1`));
    await kv.create('/listx', enc('outside the prefix'));

    const p1 = await kv.list('/list/', { limit: 10 });
    assert.deepEqual(p1.kvs.map((x) => x.key), keys.slice(0, 10));
    assert.equal(p1.more, true);
    assert.equal(p1.remaining, 15);
    const rev = p1.revision;
    assert.equal(rev, await kv.currentRevision());

    // Writes between pages: none of them may show in the later pages read at `rev`.
    await kv.delete('/list/k15');
    const k20 = (await kv.get('/list/k20')).kv!;
    await kv.update('/list/k20', enc('changed'), k20.modRevision);
    await kv.create('/list/k10a', enc('new'));
    await kv.create('/list/k99', enc('new'));

    const p2 = await kv.list('/list/', { limit: 10, startKey: p1.kvs.at(-1)!.key + '\0', revision: rev });
    assert.equal(p2.revision, rev);
    assert.deepEqual(p2.kvs.map((x) => x.key), keys.slice(10, 20));
    assert.equal(p2.more, true);
    assert.equal(p2.remaining, 5);
    const p3 = await kv.list('/list/', { limit: 10, startKey: p2.kvs.at(-1)!.key + '\0', revision: rev });
    assert.deepEqual(p3.kvs.map((x) => x.key), keys.slice(20));
    assert.equal(p3.more, false);
    assert.equal(p3.remaining, 0);
    assert.equal(dec(p3.kvs.find((x) => x.key === '/list/k20')?.value ?? enc('')), '/list/k20=1');

    const now = await kv.list('/list/');
    assert.equal(now.kvs.length, 26);
    assert.equal(now.more, false);
    assert.equal(now.remaining, 0);
    assert.ok(now.revision > rev);
    assert.ok(now.kvs.some((x) => x.key === '/list/k10a'));
    assert.ok(!now.kvs.some((x) => x.key === '/list/k15'));
    assert.equal(await kv.count('/list/'), 26);
    assert.equal(await kv.count('/list'), 27);
    await expectCode(kv.list('/list/', { startKey: '/other' }), 'InvalidArgument');
  });

  void it('reads at a compacted revision fail with Compacted, at a future one with FutureRevision', async () => {
    const a = await kv.create('/compact/a', enc('v1'));
    const b = await kv.update('/compact/a', enc('v2'), a.modRevision);
    await kv.compact(b.modRevision);

    const err = await expectCode(kv.get('/compact/a', { revision: a.modRevision }), 'Compacted');
    assert.equal(err.details.compactedRevision, b.modRevision);
    assert.ok((err.details.currentRevision ?? 0) >= b.modRevision);
    await expectCode(kv.list('/compact/', { revision: a.modRevision }), 'Compacted');
    await expectCode(kv.compact(a.modRevision), 'Compacted');
    // The compaction revision itself is still readable.
    const at = await kv.get('/compact/a', { revision: b.modRevision });
    assert.equal(dec(at.kv!.value), 'v2');
    assert.equal(at.revision, b.modRevision);

    const current = await kv.currentRevision();
    const future = await expectCode(kv.get('/compact/a', { revision: current + 1000 }), 'FutureRevision');
    assert.equal(future.details.currentRevision, current);
    await expectCode(kv.list('/compact/', { revision: current + 1000 }), 'FutureRevision');
    await expectCode(kv.compact(current + 1000), 'FutureRevision');
  });

  void it('watch from an old revision delivers every event in order, then live events', async () => {
    const start = await kv.currentRevision();
    const a1 = await kv.create('/watch/a', enc('a1'));
    const a2 = await kv.update('/watch/a', enc('a2'), a1.modRevision);
    const b1 = await kv.create('/watch/b', enc('b1'));
    const del = await kv.delete('/watch/a');
    await kv.create('/watchx', enc('not under /watch/'));

    const w = watch('/watch/', { prefix: true, afterRevision: start });
    const it = w[Symbol.asyncIterator]();
    const [e1, e2, e3, e4] = await take(it, 4);
    assert.equal(e1.type, 'put');
    assert.equal(e1.kv.modRevision, a1.modRevision);
    assert.equal(e1.prevKv, null);
    assert.equal(e2.type, 'put');
    assert.equal(dec(e2.kv.value), 'a2');
    assert.equal(e2.kv.version, 2);
    assert.equal(e2.kv.modRevision, a2.modRevision);
    assert.equal(dec(e2.prevKv!.value), 'a1');
    assert.equal(e2.prevKv!.modRevision, a1.modRevision);
    assert.equal(e3.kv.key, '/watch/b');
    assert.equal(e3.kv.modRevision, b1.modRevision);
    assert.equal(e4.type, 'delete');
    assert.equal(e4.kv.key, '/watch/a');
    assert.equal(e4.kv.modRevision, del.revision);
    assert.equal(e4.kv.value.byteLength, 0);
    assert.equal(e4.kv.version, 0);
    assert.equal(dec(e4.prevKv.value), 'a2');
    assert.equal(e4.prevKv.modRevision, a2.modRevision);

    const live = await kv.create('/watch/c', enc('c1'));
    const [e5] = await take(it, 1);
    assert.equal(e5.kv.key, '/watch/c');
    assert.equal(e5.kv.modRevision, live.modRevision);

    // A single-key watch sees only its key.
    const single = watch('/watch/b', { afterRevision: start });
    const sit = single[Symbol.asyncIterator]();
    const [s1] = await take(sit, 1);
    assert.equal(s1.kv.modRevision, b1.modRevision);
    await kv.update('/watch/c', enc('c2'), live.modRevision);
    const b2 = await kv.update('/watch/b', enc('b2'), b1.modRevision);
    const [s2] = await take(sit, 1);
    assert.equal(s2.kv.modRevision, b2.modRevision);

    w.close();
    assert.deepEqual(await it.next(), { value: undefined, done: true });
    single.close();
  });

  void it('watch from now delivers a write made right after the call', async () => {
    for (let i = 0; i < 5; i++) {
      const w = watch(`/now/k${i}`);
      const it = w[Symbol.asyncIterator]();
      const created = await kv.create(`/now/k${i}`, enc('x'));
      const [ev] = await take(it, 1);
      assert.equal(ev.kv.modRevision, created.modRevision);
      w.close();
    }
    // A `for await` loop that breaks closes the watch.
    const w = kv.watch('/now/loop', { prefix: true });
    await kv.create('/now/loop/1', enc('x'));
    for await (const ev of w) {
      assert.equal(ev.kv.key, '/now/loop/1');
      break;
    }
    assert.deepEqual(await w[Symbol.asyncIterator]().next(), { value: undefined, done: true });
  });

  void it('watch from a compacted revision fails with Compacted', async () => {
    const a = await kv.create('/wc/a', enc('v1'));
    const b = await kv.update('/wc/a', enc('v2'), a.modRevision);
    await kv.compact(b.modRevision);

    const old = watch('/wc/', { prefix: true, afterRevision: a.modRevision - 1 });
    const err = await expectCode(old[Symbol.asyncIterator]().next(), 'Compacted');
    assert.equal(err.details.compactedRevision, b.modRevision);

    // "After b-1" needs the event of b-1 + 1 = b... but history before b is gone: b-1 is older than the compaction.
    const boundary = watch('/wc/', { prefix: true, afterRevision: b.modRevision - 1 });
    await expectCode(boundary[Symbol.asyncIterator]().next(), 'Compacted');

    // After the compaction revision itself is fine.
    const ok = watch('/wc/', { prefix: true, afterRevision: b.modRevision });
    const it = ok[Symbol.asyncIterator]();
    const c = await kv.update('/wc/a', enc('v3'), b.modRevision);
    const [ev] = await take(it, 1);
    assert.equal(ev.kv.modRevision, c.modRevision);
    assert.equal(ev.prevKv?.modRevision, b.modRevision);
    ok.close();
  });

  void it('a slow consumer gets every one of 5,000 events exactly once, in order, with a bounded buffer', async () => {
    const N = 5000;
    const w = watch('/slow/', { prefix: true });
    const it = w[Symbol.asyncIterator]();
    // Write without reading: concurrent batches, so etcd batches its fsyncs.
    const keys = Array.from({ length: N }, (_, i) => `/slow/k${String(i).padStart(5, '0')}`);
    for (let i = 0; i < N; i += 100) {
      await Promise.all(keys.slice(i, i + 100).map((k) => kv.create(k, enc(k))));
    }
    await sleep(300);
    const stats = w as unknown as { highWater: number; pauses: number };
    assert.ok(stats.pauses > 0, 'the watch should have stopped its etcd watch while the consumer did not read');
    const events = await takeAll(it, N, 30_000);
    let prev = 0;
    const seen = new Set<string>();
    for (const ev of events) {
      assert.equal(ev.type, 'put');
      assert.ok(ev.kv.modRevision > prev, `revision ${ev.kv.modRevision} after ${prev}`);
      prev = ev.kv.modRevision;
      assert.ok(!seen.has(ev.kv.key), `duplicate ${ev.kv.key}`);
      seen.add(ev.kv.key);
      assert.equal(dec(ev.kv.value), ev.kv.key);
    }
    assert.equal(seen.size, N);
    assert.ok(stats.highWater <= 1000 + 1, `held ${stats.highWater} undelivered events`);
    // Nothing more, and live events still flow.
    const { pending } = await expectQuiet(it, 200);
    const after = await kv.create('/slow/after', enc('x'));
    const r = await pending;
    assert.equal(r.done, false);
    assert.equal(r.value.kv.modRevision, after.modRevision);
    w.close();
  });

  void it('a key put with a lease is deleted when the lease expires, with a delete event', async () => {
    await expectCode(kv.create('/lease/bad', enc('x'), { lease: 123456789 }), 'LeaseNotFound');
    await expectCode(kv.grantLease(0), 'InvalidArgument');
    const lease = await kv.grantLease(1);
    assert.ok(Number.isSafeInteger(lease) && lease > 0, `lease id ${lease}`);
    const w = watch('/lease/', { prefix: true });
    const it = w[Symbol.asyncIterator]();
    const created = await kv.create('/lease/k', enc('x'), { lease });
    assert.equal(created.lease, lease);
    assert.equal((await kv.get('/lease/k')).kv?.lease, lease);
    const [put, del] = await take(it, 2, 15_000);
    assert.equal(put.type, 'put');
    assert.equal(put.kv.lease, lease);
    assert.equal(del.type, 'delete');
    assert.equal(del.kv.key, '/lease/k');
    assert.equal(del.prevKv.lease, lease);
    assert.equal(del.prevKv.modRevision, created.modRevision);
    assert.equal((await kv.get('/lease/k')).kv, null);
    // The lease is gone with its keys.
    await expectCode(kv.create('/lease/k2', enc('x'), { lease }), 'LeaseNotFound');
    w.close();
  });

  void it('close fails open watches and later calls with Closed', async () => {
    const other = await openEtcd({ endpoints: [etcd.endpoint] });
    const w = watch('/closing/', { prefix: true }, other);
    const pending = w[Symbol.asyncIterator]().next();
    await other.close();
    await expectCode(pending, 'Closed');
    await expectCode(other.get('/closing/x'), 'Closed');
    await expectCode(other.create('/closing/x', enc('x')), 'Closed');
    await expectCode(other.watch('/closing/')[Symbol.asyncIterator]().next(), 'Closed');
  });

  void it('survives an etcd outage: Unavailable within the deadline, then recovers; open watches resume', async () => {
    const timeout = 1000;
    const store = await openEtcd({ endpoints: [etcd.endpoint], healthcheckTimeoutMs: timeout });
    try {
      const w = watch('/outage/', { prefix: true }, store);
      const it = w[Symbol.asyncIterator]();
      const first = await store.create('/outage/before', enc('x'));
      const [e0] = await take(it, 1);
      assert.equal(e0.kv.modRevision, first.modRevision);

      await etcd.stop();
      const calls: [string, () => Promise<unknown>][] = [
        ['get', () => store.get('/outage/before')],
        ['list', () => store.list('/outage/')],
        ['create', () => store.create('/outage/during', enc('x'))],
        ['update', () => store.update('/outage/before', enc('y'), first.modRevision)],
        ['currentRevision', () => store.currentRevision()],
      ];
      for (const [name, call] of calls) {
        const t0 = Date.now();
        await expectCode(call(), 'Unavailable');
        const took = Date.now() - t0;
        assert.ok(took <= timeout + 1000, `${name} took ${took} ms to fail`);
      }
      await sleep(500); // let the watch retry against the dead endpoint for a while

      await etcd.start();
      const t0 = Date.now();
      await eventually('a read after the outage', () => store.get('/outage/before'), { retryErrors: true, intervalMs: 100 });
      const recovery = Date.now() - t0;
      assert.ok(recovery < 5000, `recovered after ${recovery} ms`);
      const updated = await store.update('/outage/before', enc('y'), first.modRevision);
      const made = await store.create('/outage/after', enc('z'));
      const [e1, e2] = await take(it, 2, 10_000);
      assert.equal(e1.kv.modRevision, updated.modRevision);
      assert.equal(e2.kv.modRevision, made.modRevision);
      // The file's main store recovers too.
      await eventually('a read after the restart', () => kv.get('/outage/after'), { retryErrors: true, intervalMs: 100 });

      // A write made by another client while this watch's stream is down is not lost either.
      await etcd.kill();
      await sleep(300);
      await etcd.start();
      const again = await eventually('a create after the kill', () => kv.create('/outage/after-kill', enc('k')), { retryErrors: true, intervalMs: 100 });
      const [e3] = await take(it, 1, 10_000);
      assert.equal(e3.kv.modRevision, again.modRevision);
      w.close();
    } finally {
      await store.close();
    }
  });
});
