/**
 * The generic store's semantics, on a small kind declared here: metadata, conflicts, paging, selectors,
 * graceful deletion with finalizers, and watch events.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { openSqlite } from '../../src/storage/sqlite.js';
import type { KV } from '../../src/storage/interface.js';
import { ResourceStore, type WatchEvent } from '../../src/registry/store.js';
import { StatusError } from '../../src/registry/errors.js';
import type { KObject, KindDecl } from '../../src/registry/kind.js';
import { parse as parseLabels } from '../../src/util/labels.js';
import { parseSelector } from '../../src/util/fields.js';
import { invalid, root } from '../../src/util/validation.js';

const widgetKind: KindDecl = {
  group: 'example.com',
  version: 'v1',
  kind: 'Widget',
  listKind: 'WidgetList',
  resource: 'widgets',
  singular: 'widget',
  namespaced: true,
  definition: 'com.example.v1.Widget',
  listDefinition: 'com.example.v1.WidgetList',
  definitions: {},
  tracksGeneration: true,
  strategy: {
    prepareForCreate(obj) {
      obj.status = { phase: 'New' };
    },
    prepareForUpdate(obj, old) {
      obj.status = old.status;
    },
    validate(obj) {
      return typeof obj.spec?.size === 'number' && obj.spec.size < 0 ? [invalid(root('spec', 'size'), obj.spec.size, 'must be non-negative')] : [];
    },
    validateUpdate() {
      return [];
    },
  },
  subresources: {
    status: {
      prepareForUpdate(obj, old) {
        obj.spec = old.spec;
      },
      validateUpdate: () => [],
    },
  },
  fieldSelectors: { 'status.phase': (o) => o.status?.phase ?? '' },
};

async function code(p: Promise<unknown>): Promise<number> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof StatusError, String(err));
    return err.code;
  }
  assert.fail('expected a StatusError');
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

describe('generic store', () => {
  let kv: KV;
  let store: ResourceStore;
  const scope = { namespace: 'ns1' };
  before(async () => {
    kv = await openSqlite({ path: ':memory:' });
    store = new ResourceStore(widgetKind, { kv, prefix: '/registry', featureGates: {} });
  });
  after(async () => kv.close());

  it('creates with system metadata, and refuses duplicates, bad names and invalid objects', async () => {
    const w = await store.create(scope, { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'a' }, spec: { size: 1 } });
    assert.match(w.metadata!.uid!, /^[0-9a-f-]{36}$/);
    assert.match(w.metadata!.creationTimestamp!, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.equal(w.metadata!.namespace, 'ns1');
    assert.equal(w.metadata!.generation, 1);
    assert.equal(w.status.phase, 'New');
    assert.ok(Number(w.metadata!.resourceVersion) > 0);
    assert.equal(await code(store.create(scope, { metadata: { name: 'a' }, spec: {} })), 409);
    assert.equal(await code(store.create(scope, { metadata: { name: 'Bad_Name' }, spec: {} })), 422);
    assert.equal(await code(store.create(scope, { metadata: { name: 'neg' }, spec: { size: -1 } })), 422);
    assert.equal(await code(store.create(scope, { metadata: { name: 'x', namespace: 'other' }, spec: {} })), 400);
    const got = await store.get(scope, 'a');
    assert.deepEqual(got, w);
  });

  it('generates names, dry-runs without writing', async () => {
    const g = await store.create(scope, { metadata: { generateName: 'gen-' }, spec: {} });
    assert.match(g.metadata!.name!, /^gen-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
    const d = await store.create({ ...scope, dryRun: true }, { metadata: { name: 'dry' }, spec: {} });
    assert.equal(d.metadata!.resourceVersion, undefined);
    assert.equal(await code(store.get(scope, 'dry')), 404);
  });

  it('updates with optimistic concurrency, bumps generation on spec changes only, and keeps status', async () => {
    const w = await store.create(scope, { metadata: { name: 'u' }, spec: { size: 1 } });
    const u1 = await store.update(scope, 'u', (cur) => ({ ...cur!, spec: { size: 2 }, status: { phase: 'Hacked' } }));
    assert.equal(u1.object.metadata!.generation, 2);
    assert.equal(u1.object.status.phase, 'New');
    assert.equal(await code(store.update(scope, 'u', () => ({ ...w, spec: { size: 3 } }))), 409);
    const labelled = await store.update(scope, 'u', (cur) => ({ ...cur!, metadata: { ...cur!.metadata, labels: { a: 'b' } } }));
    assert.equal(labelled.object.metadata!.generation, 2);
    const st = await store.update(scope, 'u', (cur) => ({ ...cur!, spec: { size: 100 }, status: { phase: 'Ready' } }), { subresource: 'status' });
    assert.equal(st.object.status.phase, 'Ready');
    assert.equal(st.object.spec.size, 2);
    // An update that changes nothing keeps the resourceVersion.
    const same = await store.update(scope, 'u', (cur) => cur!);
    assert.equal(same.object.metadata!.resourceVersion, st.object.metadata!.resourceVersion);
    assert.equal(await code(store.update(scope, 'missing', (cur) => cur ?? { metadata: { name: 'missing' } })), 404);
    const noRV = { metadata: { name: 'u' }, spec: { size: 9 } } as KObject;
    assert.equal(await code(store.update(scope, 'u', () => noRV)), 422);
  });

  it('pages lists consistently with continue tokens and remainingItemCount, and filters by selectors', async () => {
    const ns = { namespace: 'paging' };
    for (let i = 0; i < 7; i++) {
      await store.create(ns, { metadata: { name: `w${i}`, labels: { parity: i % 2 ? 'odd' : 'even' } }, spec: {} });
    }
    const p1 = await store.list(ns, { limit: 3 });
    assert.deepEqual(p1.items.map((o: KObject) => o.metadata!.name), ['w0', 'w1', 'w2']);
    assert.equal(p1.metadata!.remainingItemCount, 4);
    await store.create(ns, { metadata: { name: 'w10' }, spec: {} });
    const p2 = await store.list(ns, { limit: 3, continue: p1.metadata!.continue as string });
    assert.deepEqual(p2.items.map((o: KObject) => o.metadata!.name), ['w3', 'w4', 'w5']);
    assert.equal(p2.metadata!.resourceVersion, p1.metadata!.resourceVersion);
    const p3 = await store.list(ns, { limit: 3, continue: p2.metadata!.continue as string });
    assert.deepEqual(p3.items.map((o: KObject) => o.metadata!.name), ['w6']);
    assert.equal(p3.metadata!.continue, undefined);
    const odd = await store.list(ns, { labelSelector: parseLabels('parity=odd') });
    assert.deepEqual(odd.items.map((o: KObject) => o.metadata!.name), ['w1', 'w3', 'w5']);
    const oddPage = await store.list(ns, { labelSelector: parseLabels('parity in (odd)'), limit: 2 });
    assert.equal(oddPage.items.length, 2);
    assert.ok(oddPage.metadata!.continue);
    assert.equal(oddPage.metadata!.remainingItemCount, undefined);
    const byName = await store.list(ns, { fieldSelector: parseSelector('metadata.name=w4') });
    assert.deepEqual(byName.items.map((o: KObject) => o.metadata!.name), ['w4']);
    assert.equal(await code(store.list(ns, { fieldSelector: parseSelector('spec.size=1') })), 400);
    assert.equal(await code(store.list(ns, { resourceVersionMatch: 'Exact' })), 422);
    const all = await store.list({ namespace: '' }, {});
    assert.ok(all.items.length >= 11);
    assert.ok(all.items.some((o: KObject) => o.metadata!.namespace === "ns1") && all.items.some((o: KObject) => o.metadata!.namespace === "paging"));
    const exact = await store.list(ns, { resourceVersion: p1.metadata!.resourceVersion, resourceVersionMatch: 'Exact' });
    assert.equal(exact.items.length, 7);
  });

  it('deletes gracefully while finalizers remain, and for good when the last one goes', async () => {
    await store.create(scope, { metadata: { name: 'f', finalizers: ['example.com/hold'] }, spec: {} });
    const marked = await store.delete(scope, 'f');
    assert.equal(marked.deleted, false);
    assert.ok(marked.object.metadata!.deletionTimestamp);
    assert.equal(marked.object.metadata!.deletionGracePeriodSeconds, 0);
    assert.equal((await store.get(scope, 'f')).metadata!.finalizers![0], 'example.com/hold');
    // New finalizers cannot be added to an object being deleted.
    assert.equal(await code(store.update(scope, 'f', (c) => ({ ...c!, metadata: { ...c!.metadata, finalizers: ['example.com/hold', 'x.io/more'] } }))), 422);
    await store.update(scope, 'f', (c) => ({ ...c!, metadata: { ...c!.metadata, finalizers: [] } }));
    assert.equal(await code(store.get(scope, 'f')), 404);
    await store.create(scope, { metadata: { name: 'p' }, spec: {} });
    const cur = await store.get(scope, 'p');
    assert.equal(await code(store.delete(scope, 'p', { preconditions: { uid: 'nope' } })), 409);
    const gone = await store.delete(scope, 'p', { preconditions: { uid: cur.metadata!.uid!, resourceVersion: cur.metadata!.resourceVersion! } });
    assert.equal(gone.deleted, true);
    assert.equal(gone.object.metadata!.name, 'p');
  });

  it('watches: initial ADDED events, then changes, with selector transitions and bookmarks', async () => {
    const ns = { namespace: 'watching' };
    await store.create(ns, { metadata: { name: 'pre', labels: { app: 'x' } }, spec: {} });
    const w = store.watch(ns, { labelSelector: parseLabels('app=x'), allowWatchBookmarks: true }, 200);
    const it = w[Symbol.asyncIterator]();
    const [first] = await take(it, 1);
    assert.equal(first!.type, 'ADDED');
    assert.equal(first!.object.metadata!.name, 'pre');
    await store.create(ns, { metadata: { name: 'other', labels: { app: 'y' } }, spec: {} });
    await store.update(ns, 'other', (c) => ({ ...c!, metadata: { ...c!.metadata, labels: { app: 'x' } } }));
    await store.update(ns, 'pre', (c) => ({ ...c!, metadata: { ...c!.metadata, labels: { app: 'z' } } }));
    await store.delete(ns, 'other');
    const evs = await take(it, 3);
    assert.deepEqual(evs.map((e) => [e.type, e.object.metadata!.name]), [
      ['ADDED', 'other'],
      ['DELETED', 'pre'],
      ['DELETED', 'other'],
    ]);
    const [bm] = await take(it, 1);
    assert.equal(bm!.type, 'BOOKMARK');
    assert.equal(bm!.object.metadata!.resourceVersion, evs[2]!.object.metadata!.resourceVersion);
    w.close();
    assert.equal((await it.next()).done, true);
  });

  it('sends initial events ending with the initial-events-end bookmark, and ERROR 410 from a compacted version', async () => {
    const ns = { namespace: 'initial' };
    const a = await store.create(ns, { metadata: { name: 'a' }, spec: {} });
    const w = store.watch(ns, { sendInitialEvents: true, allowWatchBookmarks: true, resourceVersionMatch: 'NotOlderThan', resourceVersion: '' });
    const it = w[Symbol.asyncIterator]();
    const evs = await take(it, 2);
    assert.equal(evs[0]!.type, 'ADDED');
    assert.equal(evs[1]!.type, 'BOOKMARK');
    assert.equal(evs[1]!.object.metadata!.annotations!['k8s.io/initial-events-end'], 'true');
    w.close();
    await store.create(ns, { metadata: { name: 'b' }, spec: {} });
    await kv.compact(await kv.currentRevision());
    const old = store.watch(ns, { resourceVersion: a.metadata!.resourceVersion });
    const [err] = await take(old[Symbol.asyncIterator](), 1);
    assert.equal(err!.type, 'ERROR');
    assert.equal(err!.object.code, 410);
    assert.equal(err!.object.reason, 'Expired');
    old.close();
  });
});
