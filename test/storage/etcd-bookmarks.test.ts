/**
 * EfficientWatchResumption on etcd: a watch with allowWatchBookmarks on a quiet resource gets bookmarks
 * that move on with writes to other resources, from the etcd watch's progress (progress requests answered
 * by etcd), not only the resource's last event. With the gate off, bookmarks stay at the last event.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { requireBinary } from '../helpers/binaries.js';
import { startCluster, type TestCluster } from '../helpers/cluster.js';

const skip = requireBinary(undefined, 'etcd') === null ? 'etcd not installed' : false;

interface Seen {
  start: number;
  written: number;
  bookmarks: number[];
}

/** Bookmarks (every 200 ms) of a claims watch in `ns` while a namespace is created, until one reaches it (at most 10). */
async function bookmarksAfterOtherWrites(c: TestCluster, ns: string): Promise<Seen> {
  const claims = c.cp.registry.store('', 'v1', 'persistentvolumeclaims')!;
  const namespaces = c.cp.registry.store('', 'v1', 'namespaces')!;
  const user = { name: 'test', groups: ['system:masters'] };
  const start = Number((await claims.list({ namespace: ns, user }, {})).metadata!.resourceVersion);
  const watch = claims.watch({ namespace: ns, user }, { allowWatchBookmarks: true, resourceVersion: String(start) }, 200);
  const it = watch[Symbol.asyncIterator]();
  const written = Number((await namespaces.create({ namespace: '', user }, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: `${ns}-other` } })).metadata!.resourceVersion);
  const bookmarks: number[] = [];
  try {
    while (bookmarks.length < 10) {
      const ev = (await it.next()).value as { type: string; object: { metadata: { resourceVersion: string } } };
      assert.equal(ev.type, 'BOOKMARK');
      const rv = Number(ev.object.metadata.resourceVersion);
      bookmarks.push(rv);
      if (rv >= written) break;
    }
  } finally {
    watch.close();
  }
  return { start, written, bookmarks };
}

void describe('etcd watch progress bookmarks', { skip }, () => {
  void it('bookmarks carry the revision etcd reports for the watch, past other resources\' writes', async () => {
    const c = await startCluster([], { etcd: true });
    try {
      const seen = await bookmarksAfterOtherWrites(c, 'default');
      assert.ok(seen.written > seen.start, JSON.stringify(seen));
      assert.ok(seen.bookmarks.some((rv) => rv >= seen.written), JSON.stringify(seen));
      // Each bookmark's version is at least the one before.
      assert.deepEqual([...seen.bookmarks].sort((a, b) => a - b), seen.bookmarks);
    } finally {
      await c.stop();
    }
  });

  void it('with EfficientWatchResumption off, bookmarks stay at the resource\'s last event', async () => {
    const c = await startCluster(['--feature-gates=EfficientWatchResumption=false'], { etcd: true });
    try {
      const seen = await bookmarksAfterOtherWrites(c, 'default');
      assert.equal(seen.bookmarks.length, 10);
      assert.ok(seen.bookmarks.every((rv) => rv === seen.start), JSON.stringify(seen));
    } finally {
      await c.stop();
    }
  });
});
