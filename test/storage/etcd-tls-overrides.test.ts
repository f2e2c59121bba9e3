/**
 * openStorage against real etcd processes (Debian's /usr/bin/etcd): TLS with client certificates
 * (--kvstore-cafile/certfile/keyfile), also through an egress dialer, and --kvstore-servers-overrides sending
 * one resource to another etcd.
 * Skipped when etcd is not installed, except under CI=true where that is a failure.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect as netConnect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { makeCA, makeClientCert, makeServingCert } from '../../src/server/certs.js';
import { openEtcd } from '../../src/storage/etcd.js';
import { isStorageError } from '../../src/storage/errors.js';
import { openStorage, type Storage, type StorageConfig } from '../../src/storage/factory.js';
import type { KV } from '../../src/storage/interface.js';
import { requireBinary } from '../helpers/binaries.js';
import { startEtcd, type EtcdProcess } from '../helpers/etcd.js';

const etcdBin = requireBinary(undefined, 'etcd');

const enc = (s: string): Uint8Array => Buffer.from(s);
const dec = (v: Uint8Array): string => Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('utf8');

const HEALTHCHECK_TIMEOUT_MS = 2000;

function config(servers: string[], extra: Partial<StorageConfig> = {}): StorageConfig {
  return {
    servers,
    serversOverrides: [],
    prefix: '/registry',
    healthcheckTimeoutMs: HEALTHCHECK_TIMEOUT_MS,
    compactionIntervalMs: 0,
    countMetricPollPeriodMs: 0,
    dbMetricPollIntervalMs: 0,
    dataDir: ':memory:',
    ...extra,
  };
}

describe('etcd storage over TLS', { skip: etcdBin === null ? 'etcd not installed' : false }, () => {
  let dir = '';
  let etcd: EtcdProcess | undefined;
  const files = { caFile: '', serverCert: '', serverKey: '', certFile: '', keyFile: '' };
  const open: Storage[] = [];

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'orch-etcd-tls-'));
    const ca = await makeCA('orch-test-etcd-ca');
    const server = await makeServingCert(ca.cert, ca.key, 'etcd', ['127.0.0.1', 'localhost']);
    const client = await makeClientCert({ caCert: ca.cert, caKey: ca.key, commonName: 'orch-apiserver' });
    files.caFile = join(dir, 'ca.crt');
    files.serverCert = join(dir, 'server.crt');
    files.serverKey = join(dir, 'server.key');
    files.certFile = join(dir, 'client.crt');
    files.keyFile = join(dir, 'client.key');
    await writeFile(files.caFile, ca.cert);
    await writeFile(files.serverCert, server.cert);
    await writeFile(files.serverKey, server.key, { mode: 0o600 });
    await writeFile(files.certFile, client.cert);
    await writeFile(files.keyFile, client.key, { mode: 0o600 });
    etcd = await startEtcd({
      tls: {
        certFile: files.serverCert,
        keyFile: files.serverKey,
        caFile: files.caFile,
        clientCertFile: files.certFile,
        clientKeyFile: files.keyFile,
      },
    });
  });

  after(async () => {
    await Promise.allSettled(open.map((s) => s.close()));
    await etcd?.cleanup();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('creates and reads back a key with the client certificate', async () => {
    assert.ok(etcd);
    assert.match(etcd.endpoint, /^https:\/\/127\.0\.0\.1:\d+$/);
    const storage = await openStorage(
      config([etcd.endpoint], { caFile: files.caFile, certFile: files.certFile, keyFile: files.keyFile }),
    );
    open.push(storage);
    const kv = storage.kvFor('', 'pods');
    const created = await kv.create('/registry/pods/default/tls', enc('over-tls'));
    const got = await kv.get('/registry/pods/default/tls');
    assert.ok(got.kv);
    assert.equal(dec(got.kv.value), 'over-tls');
    assert.equal(got.kv.modRevision, created.modRevision);
  });

  it('reaches etcd only through an egress dialer (--egress-selector-config-file etcd), TLS checking the endpoint name', async () => {
    assert.ok(etcd);
    const port = Number(new URL(etcd.endpoint).port);
    const dialled: string[] = [];
    const sockets: Socket[] = [];
    // The egress: every connection to etcd is opened here (etcd listens on 127.0.0.1 whatever the name).
    const dial = (host: string, p: number): Promise<Socket> =>
      new Promise((resolve, reject) => {
        dialled.push(`${host}:${p}`);
        const s = netConnect(p, '127.0.0.1', () => resolve(s));
        sockets.push(s);
        s.once('error', reject);
      });
    const storage = await openStorage(
      config([`https://localhost:${port}`], { caFile: files.caFile, certFile: files.certFile, keyFile: files.keyFile, dial }),
    );
    open.push(storage);
    const kv = storage.kvFor('', 'pods');
    const watch = kv.watch('/registry/pods/default/egress');
    await kv.create('/registry/pods/default/egress', enc('through-the-egress'));
    const got = await kv.get('/registry/pods/default/egress');
    assert.equal(dec(got.kv!.value), 'through-the-egress');
    for await (const ev of watch) {
      assert.equal(ev.type, 'put');
      assert.equal(dec(ev.kv.value), 'through-the-egress');
      break;
    }
    watch.close();
    assert.ok(dialled.length > 0);
    assert.deepEqual([...new Set(dialled)], [`localhost:${port}`]);
    await storage.close();
    open.splice(open.indexOf(storage), 1);
    assert.ok(sockets.every((s) => s.destroyed), 'closing the storage ends the forwarded connections');
  });

  it('fails with Unavailable without the client certificate', async () => {
    assert.ok(etcd);
    const started = Date.now();
    await assert.rejects(
      openStorage(config([etcd.endpoint], { caFile: files.caFile })),
      (err: unknown) => {
        assert.ok(isStorageError(err), `expected a StorageError, got ${String(err)}`);
        assert.equal(err.code, 'Unavailable', err.message);
        return true;
      },
    );
    // Within the health-check timeout, with some slack for process scheduling.
    assert.ok(Date.now() - started < HEALTHCHECK_TIMEOUT_MS + 3000, `took ${Date.now() - started} ms`);
  });
});

describe('--kvstore-servers-overrides', { skip: etcdBin === null ? 'etcd not installed' : false }, () => {
  let etcdA: EtcdProcess | undefined;
  let etcdB: EtcdProcess | undefined;
  let storage: Storage | undefined;
  const direct: KV[] = [];

  before(async () => {
    [etcdA, etcdB] = await Promise.all([startEtcd(), startEtcd()]);
  });

  after(async () => {
    await storage?.close();
    await Promise.allSettled(direct.map((kv) => kv.close()));
    await Promise.allSettled([etcdA?.cleanup(), etcdB?.cleanup()]);
  });

  it('sends core events to the override etcd and everything else to the default one', async () => {
    assert.ok(etcdA && etcdB);
    storage = await openStorage(config([etcdA.endpoint], { serversOverrides: [`/events#${etcdB.endpoint}`] }));
    await storage.kvFor('', 'events').create('/registry/events/default/e1', enc('event'));
    await storage.kvFor('', 'pods').create('/registry/pods/default/p1', enc('pod'));

    const a = await openEtcd({ endpoints: [etcdA.endpoint], healthcheckTimeoutMs: HEALTHCHECK_TIMEOUT_MS });
    direct.push(a);
    const b = await openEtcd({ endpoints: [etcdB.endpoint], healthcheckTimeoutMs: HEALTHCHECK_TIMEOUT_MS });
    direct.push(b);

    const eventInB = (await b.get('/registry/events/default/e1')).kv;
    assert.ok(eventInB, 'event missing from the override etcd');
    assert.equal(dec(eventInB.value), 'event');
    assert.equal((await a.get('/registry/events/default/e1')).kv, null, 'event also in the default etcd');

    const podInA = (await a.get('/registry/pods/default/p1')).kv;
    assert.ok(podInA, 'pod missing from the default etcd');
    assert.equal(dec(podInA.value), 'pod');
    assert.equal((await b.get('/registry/pods/default/p1')).kv, null, 'pod also in the override etcd');

    // A group-qualified resource of the same name is not overridden.
    assert.equal(storage.kvFor('events.k8s.io', 'events'), storage.kvFor('', 'pods'));
    assert.notEqual(storage.kvFor('', 'events'), storage.kvFor('', 'pods'));
  });
});
