/**
 * The storage conformance suite: one set of scenarios every KV backend must pass unchanged
 * (the embedded store in memory and in a file, and etcd).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { KV, Watch, WatchEvent } from '../../src/storage/interface.js';
import { StorageError } from '../../src/storage/errors.js';

export interface Backend {
  kv: KV;
  cleanup(): Promise<void>;
}

const enc = (s: string) => Buffer.from(s);
const dec = (b: Uint8Array) => Buffer.from(b).toString();

/** Rejects with the storage error code the call failed with, or fails when it succeeds. */
async function code(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof StorageError, `expected a StorageError, got ${String(err)}`);
    return err.code;
  }
  assert.fail('expected the call to fail');
}

/** Reads `n` events from a watch, failing after `ms`. */
export async function take(w: Watch, n: number, ms = 10_000): Promise<WatchEvent[]> {
  const out: WatchEvent[] = [];
  const it = w[Symbol.asyncIterator]();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, rej) => {
    timer = setTimeout(() => rej(new Error(`timed out after ${out.length} of ${n} events`)), ms);
  });
  try {
    while (out.length < n) {
      const r = await Promise.race([it.next(), timeout]);
      if (r.done) break;
      out.push(r.value);
    }
  } finally {
    clearTimeout(timer);
  }
  return out;
}

export function storageConformance(name: string, open: () => Promise<Backend>): void {
  describe(`storage conformance: ${name}`, () => {
    let backend: Backend;
    let kv: KV;
    let p: string;
    let n = 0;
    before(async () => {
      backend = await open();
      kv = backend.kv;
    });
    after(async () => {
      await backend?.cleanup();
    });
    // Each scenario works under a prefix of its own, so scenarios do not see each other's keys.
    const fresh = () => {
      p = `/conformance/${randomBytes(4).toString('hex')}-${n++}/`;
      return p;
    };

    it('moves one global revision forward by one per write, in order', async () => {
      fresh();
      const r0 = await kv.currentRevision();
      const a = await kv.create(p + 'a', enc('1'));
      assert.equal(a.modRevision, r0 + 1);
      assert.equal(a.createRevision, a.modRevision);
      assert.equal(a.version, 1);
      const b = await kv.create(p + 'b', enc('1'));
      assert.equal(b.modRevision, r0 + 2);
      const a2 = await kv.update(p + 'a', enc('2'), a.modRevision);
      assert.equal(a2.modRevision, r0 + 3);
      assert.equal(a2.createRevision, a.createRevision);
      assert.equal(a2.version, 2);
      const del = await kv.delete(p + 'b');
      assert.equal(del.revision, r0 + 4);
      assert.equal(await kv.currentRevision(), r0 + 4);
      const got = await kv.get(p + 'a');
      assert.equal(dec(got.kv!.value), '2');
      assert.equal(got.kv!.modRevision, r0 + 3);
      assert.ok(got.revision >= r0 + 4);
    });

    it('creates only when absent, and reads old revisions', async () => {
      fresh();
      const a = await kv.create(p + 'k', enc('v1'));
      assert.equal(await code(kv.create(p + 'k', enc('v2'))), 'KeyExists');
      const a2 = await kv.update(p + 'k', enc('v2'), a.modRevision);
      const old = await kv.get(p + 'k', { revision: a.modRevision });
      assert.equal(dec(old.kv!.value), 'v1');
      assert.equal(old.revision, a.modRevision);
      assert.equal(dec((await kv.get(p + 'k', { revision: a2.modRevision })).kv!.value), 'v2');
      assert.equal((await kv.get(p + 'missing')).kv, null);
      // A deleted key can be created again, as a new incarnation.
      await kv.delete(p + 'k');
      assert.equal((await kv.get(p + 'k')).kv, null);
      const again = await kv.create(p + 'k', enc('v3'));
      assert.equal(again.version, 1);
      assert.equal(again.createRevision, again.modRevision);
    });

    it('refuses creates of present keys among writes made together, changing nothing and taking no revision', async () => {
      fresh();
      const a = await kv.create(p + 'a', enc('1'));
      const w = kv.watch(p, { prefix: true, afterRevision: a.modRevision });
      try {
        // Called in one turn, so that the embedded store commits them together.
        const [b, dup, dupGoneLease, c] = await Promise.allSettled([
          kv.create(p + 'b', enc('2')),
          kv.create(p + 'a', enc('x')),
          // A present key is a KeyExists even with a lease that does not exist (etcd compares before its put).
          kv.create(p + 'a', enc('y'), { lease: 987654321 }),
          kv.create(p + 'c', enc('3')),
        ]);
        assert.equal(b.status, 'fulfilled');
        assert.equal(c.status, 'fulfilled');
        assert.equal(await code(dup.status === 'rejected' ? Promise.reject(dup.reason as Error) : Promise.resolve()), 'KeyExists');
        assert.equal(await code(dupGoneLease.status === 'rejected' ? Promise.reject(dupGoneLease.reason as Error) : Promise.resolve()), 'KeyExists');
        // Exactly the two new keys (etcd may order concurrent calls either way).
        const evs = await take(w, 2);
        assert.deepEqual(evs.map((e) => [e.type, e.kv.key, dec(e.kv.value)]).sort(), [
          ['put', p + 'b', '2'],
          ['put', p + 'c', '3'],
        ]);
        const made = [b, c].map((r) => (r.status === 'fulfilled' ? r.value.modRevision : 0));
        assert.equal(await kv.currentRevision(), Math.max(...made));
        assert.equal(Math.min(...made), a.modRevision + 1);
        const now = (await kv.get(p + 'a')).kv!;
        assert.equal(dec(now.value), '1');
        assert.equal(now.modRevision, a.modRevision);
        assert.equal(now.version, 1);
        assert.equal(await code(kv.create(p + 'd', enc('4'), { lease: 987654321 })), 'LeaseNotFound');
        assert.equal((await kv.get(p + 'd')).kv, null);
      } finally {
        w.close();
      }
    });

    it('refuses updates and deletes on a stale revision, reporting the current value', async () => {
      fresh();
      const a = await kv.create(p + 'k', enc('v1'));
      const a2 = await kv.update(p + 'k', enc('v2'), a.modRevision);
      try {
        await kv.update(p + 'k', enc('v3'), a.modRevision);
        assert.fail('stale update succeeded');
      } catch (err) {
        assert.ok(err instanceof StorageError);
        assert.equal(err.code, 'Conflict');
        assert.equal(err.details.current?.modRevision, a2.modRevision);
        assert.equal(dec(err.details.current.value), 'v2');
      }
      assert.equal(await code(kv.delete(p + 'k', a.modRevision)), 'Conflict');
      assert.equal(await code(kv.update(p + 'nope', enc('x'), 1)), 'NotFound');
      assert.equal(await code(kv.delete(p + 'nope')), 'NotFound');
      const d = await kv.delete(p + 'k', a2.modRevision);
      assert.equal(dec(d.prevKv.value), 'v2');
      assert.equal(d.prevKv.modRevision, a2.modRevision);
    });

    it('lists a prefix in key order, by pages consistent at one revision while writes continue', async () => {
      fresh();
      for (let i = 0; i < 25; i++) await kv.create(`${p}item-${String(i).padStart(3, '0')}`, enc(`v${i}`));
      await kv.create(p.slice(0, -1) + 'x/outside', enc('no')); // a sibling prefix must not leak in
      assert.equal(await kv.count(p), 25);
      const first = await kv.list(p, { limit: 10 });
      assert.equal(first.kvs.length, 10);
      assert.equal(first.more, true);
      assert.equal(first.remaining, 15);
      const rev = first.revision;
      // Writes after the first page must not show in later pages read at the first page's revision.
      await kv.update(`${p}item-015`, enc('changed'), (await kv.get(`${p}item-015`)).kv!.modRevision);
      await kv.delete(`${p}item-020`);
      await kv.create(`${p}item-0105`, enc('new'));
      const seen = first.kvs.map((x) => x.key);
      let last = first;
      while (last.more) {
        const startKey = last.kvs[last.kvs.length - 1]!.key + '\0';
        last = await kv.list(p, { limit: 10, startKey, revision: rev });
        assert.equal(last.revision, rev);
        seen.push(...last.kvs.map((x) => x.key));
        if (last.kvs.some((x) => x.key === `${p}item-015`)) {
          assert.equal(dec(last.kvs.find((x) => x.key === `${p}item-015`)!.value), 'v15');
        }
      }
      assert.deepEqual(seen, Array.from({ length: 25 }, (_, i) => `${p}item-${String(i).padStart(3, '0')}`));
      assert.equal(last.remaining, 0);
      const now = await kv.list(p);
      assert.equal(now.kvs.length, 25);
      assert.equal(now.more, false);
      assert.ok(now.kvs.some((x) => x.key === `${p}item-0105`));
      assert.ok(!now.kvs.some((x) => x.key === `${p}item-020`));
      const keys = now.kvs.map((x) => x.key);
      assert.deepEqual(keys, [...keys].sort());
    });

    it('watches from an old revision: every event in order, then live events, with previous values', async () => {
      fresh();
      const start = await kv.currentRevision();
      const a = await kv.create(p + 'a', enc('1'));
      const a2 = await kv.update(p + 'a', enc('2'), a.modRevision);
      await kv.create(p + 'b', enc('b1'));
      await kv.delete(p + 'a', a2.modRevision);
      await kv.create(p.slice(0, -1) + 'other/x', enc('not mine'));
      const w = kv.watch(p, { prefix: true, afterRevision: start });
      try {
        const hist = await take(w, 4);
        assert.deepEqual(
          hist.map((e) => [e.type, e.kv.key.slice(p.length), dec(e.kv.value), e.prevKv ? dec(e.prevKv.value) : null]),
          [
            ['put', 'a', '1', null],
            ['put', 'a', '2', '1'],
            ['put', 'b', 'b1', null],
            ['delete', 'a', '', '2'],
          ],
        );
        const revs = hist.map((e) => e.kv.modRevision);
        assert.deepEqual(revs, [...revs].sort((x, y) => x - y));
        assert.equal(hist[3]!.prevKv!.modRevision, a2.modRevision);
        const c = await kv.create(p + 'c', enc('live'));
        const [live] = await take(w, 1);
        assert.equal(live!.type, 'put');
        assert.equal(live!.kv.key, p + 'c');
        assert.equal(live!.kv.modRevision, c.modRevision);
      } finally {
        w.close();
      }
    });

    it('wakes waiting watches of every depth (a wider prefix, a prefix without its slash, a sub-prefix, one key) by their own events only', async () => {
      fresh();
      const watches = {
        wide: kv.watch(p, { prefix: true }),
        noSlash: kv.watch(p.slice(0, -1), { prefix: true }),
        sub: kv.watch(p + 'sub/', { prefix: true }),
        one: kv.watch(p + 'sub/k'),
        deep: kv.watch(p + 'sub/deeper/', { prefix: true }),
      };
      const keys = async (w: Watch, n: number) => (await take(w, n)).map((e) => e.kv.key.slice(p.length - 1));
      try {
        // Every watch is reading (waiting, caught up) before the writes come, one at a time.
        const got = {
          wide: keys(watches.wide, 3),
          noSlash: keys(watches.noSlash, 4),
          sub: keys(watches.sub, 2),
          one: keys(watches.one, 1),
          deep: keys(watches.deep, 1),
        };
        for (const [key, value] of [['sub/k', '1'], ['other', '2'], ['sub/deeper/x', '3']] as const) {
          await new Promise((r) => setTimeout(r, 20));
          await kv.create(p + key, enc(value));
        }
        await new Promise((r) => setTimeout(r, 20));
        await kv.create(p.slice(0, -1) + '-sibling/y', enc('4'));
        assert.deepEqual(await got.wide, ['/sub/k', '/other', '/sub/deeper/x']);
        assert.deepEqual(await got.noSlash, ['/sub/k', '/other', '/sub/deeper/x', '-sibling/y']);
        assert.deepEqual(await got.sub, ['/sub/k', '/sub/deeper/x']);
        assert.deepEqual(await got.one, ['/sub/k']);
        assert.deepEqual(await got.deep, ['/sub/deeper/x']);
      } finally {
        for (const w of Object.values(watches)) w.close();
      }
    });

    it('watches one key without seeing its siblings, and from now when no revision is given', async () => {
      fresh();
      await kv.create(p + 'before', enc('x'));
      const w = kv.watch(p + 'k');
      try {
        await kv.create(p + 'k2', enc('sibling'));
        const k = await kv.create(p + 'k', enc('1'));
        await kv.update(p + 'k', enc('2'), k.modRevision);
        const evs = await take(w, 2);
        assert.deepEqual(evs.map((e) => [e.kv.key, dec(e.kv.value)]), [
          [p + 'k', '1'],
          [p + 'k', '2'],
        ]);
      } finally {
        w.close();
      }
    });

    it('delivers every event exactly once, in order, to a consumer that did not read for a while', async () => {
      fresh();
      const w = kv.watch(p, { prefix: true });
      try {
        const total = 3000;
        const keys = 50;
        const revs = new Map<string, number>();
        for (let i = 0; i < total; i++) {
          const key = `${p}k${i % keys}`;
          const r = revs.get(key);
          const put = r === undefined ? await kv.create(key, enc(String(i))) : await kv.update(key, enc(String(i)), r);
          revs.set(key, put.modRevision);
        }
        const evs = await take(w, total, 30_000);
        assert.equal(evs.length, total);
        evs.forEach((e, i) => assert.equal(dec(e.kv.value), String(i)));
        for (let i = 1; i < evs.length; i++) assert.ok(evs[i]!.kv.modRevision > evs[i - 1]!.kv.modRevision);
      } finally {
        w.close();
      }
    });

    it('fails reads and watches before the compacted revision, and reads after the newest', async () => {
      fresh();
      const a = await kv.create(p + 'k', enc('1'));
      const a2 = await kv.update(p + 'k', enc('2'), a.modRevision);
      const a3 = await kv.update(p + 'k', enc('3'), a2.modRevision);
      await kv.compact(a3.modRevision);
      assert.equal(await code(kv.get(p + 'k', { revision: a.modRevision })), 'Compacted');
      assert.equal(await code(kv.list(p, { revision: a2.modRevision })), 'Compacted');
      // The compacted revision itself stays readable.
      assert.equal(dec((await kv.get(p + 'k', { revision: a3.modRevision })).kv!.value), '3');
      const w = kv.watch(p, { prefix: true, afterRevision: a.modRevision });
      try {
        await assert.rejects(take(w, 1), (err: unknown) => err instanceof StorageError && err.code === 'Compacted');
      } finally {
        w.close();
      }
      // Watching from the compacted revision delivers what came after it.
      const w2 = kv.watch(p, { prefix: true, afterRevision: a3.modRevision });
      try {
        await kv.update(p + 'k', enc('4'), a3.modRevision);
        const [e] = await take(w2, 1);
        assert.equal(dec(e!.kv.value), '4');
        assert.equal(dec(e!.prevKv!.value), '3');
      } finally {
        w2.close();
      }
      const now = await kv.currentRevision();
      assert.equal(await code(kv.get(p + 'k', { revision: now + 1000 })), 'FutureRevision');
      assert.equal(await code(kv.list(p, { revision: now + 1000 })), 'FutureRevision');
      assert.equal(dec((await kv.get(p + 'k')).kv!.value), '4');
    });

    it('deletes keys whose lease expired, with a delete event', async () => {
      fresh();
      const lease = await kv.grantLease(1);
      const w = kv.watch(p, { prefix: true });
      try {
        await kv.create(p + 'event', enc('short-lived'), { lease });
        const kept = await kv.create(p + 'kept', enc('no lease'));
        assert.equal((await kv.get(p + 'event')).kv!.lease, lease);
        const evs = await take(w, 3, 15_000);
        assert.deepEqual(evs.map((e) => [e.type, e.kv.key]), [
          ['put', p + 'event'],
          ['put', p + 'kept'],
          ['delete', p + 'event'],
        ]);
        assert.equal(dec(evs[2]!.prevKv!.value), 'short-lived');
        assert.equal((await kv.get(p + 'event')).kv, null);
        assert.equal((await kv.get(p + 'kept')).kv!.modRevision, kept.modRevision);
      } finally {
        w.close();
      }
    });

    it('loses nothing with 16 concurrent writers', async () => {
      fresh();
      await kv.create(p + 'counter', enc('0'));
      const perWriter = 25;
      let conflicts = 0;
      const writer = async (id: number) => {
        for (let i = 0; i < perWriter; i++) {
          await kv.create(`${p}w${id}/${i}`, enc('x'));
          for (;;) {
            const cur = (await kv.get(p + 'counter')).kv!;
            try {
              await kv.update(p + 'counter', enc(String(Number(dec(cur.value)) + 1)), cur.modRevision);
              break;
            } catch (err) {
              if (err instanceof StorageError && err.code === 'Conflict') conflicts++;
              else throw err;
            }
          }
        }
      };
      await Promise.all(Array.from({ length: 16 }, (_, i) => writer(i)));
      assert.equal(dec((await kv.get(p + 'counter')).kv!.value), String(16 * perWriter));
      assert.equal(await kv.count(p), 16 * perWriter + 1);
      assert.ok(conflicts >= 0);
    });

    it('ends a watch when it is closed', async () => {
      fresh();
      const w = kv.watch(p, { prefix: true });
      const it = w[Symbol.asyncIterator]();
      const pending = it.next();
      w.close();
      const r = await pending;
      assert.equal(r.done, true);
    });
  });
}
