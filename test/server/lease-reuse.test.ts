/**
 * --lease-reuse-duration-seconds: Events (which expire after --event-ttl through a storage lease) share one
 * storage lease for 5% of the TTL, at most that many seconds, and the lease is granted that much longer than
 * the TTL, as Kubernetes' lease manager does. Counted in both stores: the embedded store's lease table and
 * etcd's lease list. The servers are the real bin/orch-apiserver; the test reads their stores from outside.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { Etcd3 } from 'etcd3';
import { startBinCluster, type BinCluster } from '../helpers/binserver.js';
import { startEtcd, type EtcdProcess } from '../helpers/etcd.js';
import { requireBinary } from '../helpers/binaries.js';
import { EMBEDDED_DB_FILE } from '../../src/storage/factory.js';

/** The granted TTLs of the store's leases. */
type LeaseCounter = () => Promise<number[]>;

let n = 0;
async function createEvents(c: BinCluster, count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    const name = `lease-reuse-${n++}`;
    const r = await c.request('POST', '/api/v1/namespaces/default/events', {
      body: {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { name },
        involvedObject: { kind: 'Pod', namespace: 'default', name: 'p' },
        reason: 'Test',
        message: 'lease reuse',
        type: 'Normal',
      },
    });
    assert.equal(r.status, 201, r.text);
  }
}

/** Writes events in two bursts more than a second apart; returns the TTLs of the events' leases the store holds. */
async function twoBursts(c: BinCluster, leases: LeaseCounter): Promise<number[]> {
  await createEvents(c, 3);
  await sleep(1200);
  await createEvents(c, 3);
  // The events' leases (the endpoint reconciler's own lease lives seconds).
  return (await leases()).filter((ttl) => ttl >= 3600);
}

const stops: (() => Promise<void>)[] = [];
after(async () => {
  for (const s of stops.reverse()) await s();
});

void describe('--lease-reuse-duration-seconds', () => {
  void it('embedded store: one lease shared for the reuse duration (default 60s), a new one after 1s with 1', async () => {
    // The running server holds the database file exclusively: a copy of the file and its write-ahead log is read.
    let copies = 0;
    const sqliteLeases = (c: BinCluster): LeaseCounter => async () => {
      const copy = join(c.dir, `copy-${copies++}`);
      mkdirSync(copy);
      for (const suffix of ['', '-wal']) {
        const from = join(c.dir, 'data', EMBEDDED_DB_FILE + suffix);
        if (existsSync(from)) copyFileSync(from, join(copy, EMBEDDED_DB_FILE + suffix));
      }
      const db = new Database(join(copy, EMBEDDED_DB_FILE), { fileMustExist: true });
      try {
        return (db.prepare('SELECT ttl FROM lease').all() as { ttl: number }[]).map((r) => r.ttl);
      } finally {
        db.close();
      }
    };
    const byDefault = await startBinCluster([], { fileStore: true });
    stops.push(() => byDefault.stop());
    assert.deepEqual(await twoBursts(byDefault, sqliteLeases(byDefault)), [3660], 'one lease of 3600s + min(60, 5% of 3600)');

    const short = await startBinCluster(['--lease-reuse-duration-seconds=1'], { fileStore: true });
    stops.push(() => short.stop());
    const ttls = await twoBursts(short, sqliteLeases(short));
    assert.ok(ttls.length >= 2, `a new lease after the reuse duration: ${JSON.stringify(ttls)}`);
    assert.ok(ttls.every((t) => t === 3601), `leases granted for 3600s + 1s: ${JSON.stringify(ttls)}`);
  });

  void it('etcd: one lease shared for the reuse duration (default 60s), a new one after 1s with 1', async (t) => {
    if (!requireBinary(t, 'etcd')) return t.skip('etcd not installed');
    const run = async (args: string[]): Promise<number[]> => {
      const etcd: EtcdProcess = await startEtcd();
      stops.push(() => etcd.cleanup());
      const client = new Etcd3({ hosts: etcd.endpoint });
      stops.push(async () => client.close());
      const c = await startBinCluster([`--kvstore-servers=${etcd.endpoint}`, ...args]);
      stops.push(() => c.stop());
      return twoBursts(c, async () => {
        const { leases } = await client.leaseClient.leaseLeases();
        const ttls: number[] = [];
        for (const l of leases) ttls.push(Number((await client.leaseClient.leaseTimeToLive({ ID: l.ID })).grantedTTL));
        return ttls;
      });
    };
    assert.deepEqual(await run([]), [3660], 'one lease of 3600s + min(60, 5% of 3600)');
    const ttls = await run(['--lease-reuse-duration-seconds=1']);
    assert.ok(ttls.length >= 2, `a new lease after the reuse duration: ${JSON.stringify(ttls)}`);
    assert.ok(ttls.every((t) => t === 3601), `leases granted for 3600s + 1s: ${JSON.stringify(ttls)}`);
  });
});
