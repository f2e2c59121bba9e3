import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStorage, parseServersOverride, type StorageConfig } from '../../src/storage/factory.js';
import { StorageError } from '../../src/storage/errors.js';

const base: StorageConfig = {
  servers: [],
  serversOverrides: [],
  prefix: '/registry',
  healthcheckTimeoutMs: 2000,
  compactionIntervalMs: 0,
  countMetricPollPeriodMs: 0,
  dbMetricPollIntervalMs: 0,
  dataDir: ':memory:',
};

describe('storage factory', () => {
  it('parses --kvstore-servers-overrides entries and names the option on a bad one', () => {
    assert.deepEqual(parseServersOverride('/events#http://127.0.0.1:4002;http://127.0.0.1:4003'), {
      group: '',
      resource: 'events',
      servers: ['http://127.0.0.1:4002', 'http://127.0.0.1:4003'],
    });
    assert.deepEqual(parseServersOverride('coordination.k8s.io/leases#https://10.0.0.1:2379').group, 'coordination.k8s.io');
    for (const bad of ['events#http://x', '/events', '/events#', '/events#ftp://x', 'apps/#http://x']) {
      assert.throws(() => parseServersOverride(bad), (e: unknown) => e instanceof StorageError && /kvstore-servers-overrides/.test(e.message));
    }
  });

  it('opens the embedded store as one file in the data directory', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'orch-factory-'));
    try {
      const s = await openStorage({ ...base, dataDir: join(dir, 'data') });
      await s.kvFor('', 'namespaces').create('/registry/namespaces/default', Buffer.from('{}'));
      await s.close();
      assert.ok((await stat(join(dir, 'data', 'state.db'))).size > 0);
      const again = await openStorage({ ...base, dataDir: join(dir, 'data') });
      assert.ok((await again.kvFor('', 'namespaces').get('/registry/namespaces/default')).kv);
      await again.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('compacts to the revision seen one tick earlier, keeping one interval of history', async () => {
    const s = await openStorage(base);
    try {
      const kv = s.kvFor('', 'pods');
      await kv.create('/registry/pods/default/first', Buffer.from('0'));
      const a = await kv.create('/registry/pods/default/a', Buffer.from('1'));
      await s.compactNow(); // first tick: records the revision
      const b = await kv.update('/registry/pods/default/a', Buffer.from('2'), a.modRevision);
      // History written before the first tick is still readable until the second tick.
      assert.ok((await kv.get('/registry/pods/default/a', { revision: a.modRevision })).kv);
      await s.compactNow(); // second tick: compacts to the revision of the first
      await assert.rejects(kv.get('/registry/pods/default/a', { revision: a.modRevision - 1 }), (e: unknown) => e instanceof StorageError && e.code === 'Compacted');
      assert.equal(Buffer.from((await kv.get('/registry/pods/default/a', { revision: b.modRevision })).kv!.value).toString(), '2');
    } finally {
      await s.close();
    }
  });

  it('polls object counts and sizes for metrics', async () => {
    const s = await openStorage({ ...base, countMetricPollPeriodMs: 20, dbMetricPollIntervalMs: 20 });
    try {
      const kv = s.kvFor('', 'persistentvolumeclaims');
      s.trackCount('', 'persistentvolumeclaims', '/registry/persistentvolumeclaims/');
      for (let i = 0; i < 3; i++) await kv.create(`/registry/persistentvolumeclaims/ns/c${i}`, Buffer.from('{}'));
      await new Promise((r) => setTimeout(r, 100));
      assert.equal(s.metrics.objectCounts.get('persistentvolumeclaims'), 3);
      assert.ok((s.metrics.dbSizeBytes.get('default') ?? 0) > 0);
    } finally {
      await s.close();
    }
  });
});
