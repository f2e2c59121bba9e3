/**
 * Storage and egress options of document 2 on the real bin/orch-apiserver, checked from outside:
 *
 * - two etcds (test/helpers/etcd.ts) read with their own client (etcd3): --kvstore-servers-overrides sends
 *   ConfigMaps to the second, everything else stays in the first; --storage-media-type writes JSON, then, after
 *   a restart with the default, protobuf (the k8s\0 prefix), and both stay readable through kubectl;
 * - --egress-selector-config-file with HTTPConnect proxies the test runs on loopback: the etcd type over a Unix
 *   socket, the cluster type over TCP. The etcds and the admission webhook are named by host names that only
 *   the proxies resolve, so that every connection the server makes to them has to go through a proxy;
 * - with the default etcd stopped, /livez fails on etcd at once whatever --livez-grace-period says (it covers
 *   post-start hooks only);
 * - the watch cache sizes (--watch-cache-sizes, --default-watch-cache-size): a watch from before a resource's
 *   window is 410 Expired naming the window's start, a watch from it gets the window's events; size 0 is no
 *   cache (watches and paged lists from storage);
 * - --audit-log-maxage with --audit-log-maxbackup and --audit-log-maxsize: backups older than maxage days (by
 *   the timestamp lumberjack puts in their names) are removed when the log rotates.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm, utimes, writeFile } from 'node:fs/promises';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Etcd3 } from 'etcd3';
import { stringify } from 'yaml';
import { makeCA, makeServingCert } from '../../src/server/certs.js';
import { backupName } from '../../src/filters/audit/rotate.js';
import { requireBinary } from '../helpers/binaries.js';
import { startBinCluster, type BinCluster } from '../helpers/binserver.js';
import { startEtcd, type EtcdProcess } from '../helpers/etcd.js';
import { eventually } from '../helpers/eventually.js';

type Json = Record<string, any>;

const etcdBin = requireBinary(undefined, 'etcd') !== null;
if (!etcdBin && process.env.CI === 'true') throw new Error('etcd is required under CI=true');

/** Host names under this domain are known only to the test's proxies, which send them to 127.0.0.1. */
const DOMAIN = '.egress.test';

interface ConnectProxy {
  server: HttpServer;
  /** The CONNECT targets asked for, in order. */
  targets: string[];
  close(): Promise<void>;
}

/** An HTTP CONNECT proxy listening on `where` (a port, 0 for any, or a Unix socket path). */
async function connectProxy(where: number | string): Promise<ConnectProxy> {
  const targets: string[] = [];
  const sockets = new Set<Socket>();
  const server = createHttpServer((_req, res) => {
    res.statusCode = 405;
    res.end();
  });
  server.on('connect', (req, client: Socket, head: Buffer) => {
    const target = req.url ?? '';
    targets.push(target);
    sockets.add(client);
    const i = target.lastIndexOf(':');
    const host = target.slice(0, i);
    if (!host.endsWith(DOMAIN) && host !== '127.0.0.1') {
      client.end('HTTP/1.1 502 Bad Gateway\r\n\r\n');
      return;
    }
    const upstream = connect(Number(target.slice(i + 1)), '127.0.0.1', () => {
      client.write('HTTP/1.1 200 Connection established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    sockets.add(upstream);
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    client.on('close', () => upstream.destroy());
  });
  await new Promise<void>((resolve) => (typeof where === 'string' ? server.listen(where, resolve) : server.listen(where, '127.0.0.1', resolve)));
  return {
    server,
    targets,
    async close() {
      for (const s of sockets) s.destroy();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

const kindOf = (v: Buffer) => (v.subarray(0, 4).toString('latin1') === 'k8s\0' ? 'protobuf' : v.toString('utf8')[0] === '{' ? 'json' : 'other');

void describe('storage options on the binary: two etcds through an egress proxy', { skip: !etcdBin && 'etcd not installed' }, () => {
  let dir = '';
  let etcdA: EtcdProcess;
  let etcdB: EtcdProcess;
  let a: Etcd3;
  let b: Etcd3;
  let etcdProxy: ConnectProxy;
  let clusterProxy: ConnectProxy;
  let hook: HttpsServer;
  const admitted: string[] = [];
  let hookCA = '';
  let c: BinCluster | undefined;
  let args: string[] = [];
  const portOf = (e: EtcdProcess) => new URL(e.endpoint).port;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'orch-optbin-storage-'));
    [etcdA, etcdB] = await Promise.all([startEtcd(), startEtcd()]);
    a = new Etcd3({ hosts: etcdA.endpoint });
    b = new Etcd3({ hosts: etcdB.endpoint });
    etcdProxy = await connectProxy(join(dir, 'etcd-proxy.sock'));
    clusterProxy = await connectProxy(0);
    const ca = await makeCA('egress-hook-ca');
    hookCA = ca.cert;
    const serving = await makeServingCert(ca.cert, ca.key, 'hook', [`hook${DOMAIN}`]);
    hook = createHttpsServer({ cert: serving.cert, key: serving.key }, (req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (d: string) => (body += d));
      req.on('end', () => {
        const review = JSON.parse(body) as Json;
        admitted.push(review.request.name as string);
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid: review.request.uid, allowed: true } }));
      });
    });
    await new Promise<void>((resolve) => hook.listen(0, '127.0.0.1', resolve));
    const egress = join(dir, 'egress.yaml');
    await writeFile(
      egress,
      stringify({
        apiVersion: 'apiserver.k8s.io/v1beta1',
        kind: 'EgressSelectorConfiguration',
        egressSelections: [
          { name: 'etcd', connection: { proxyProtocol: 'HTTPConnect', transport: { uds: { udsName: join(dir, 'etcd-proxy.sock') } } } },
          { name: 'cluster', connection: { proxyProtocol: 'HTTPConnect', transport: { tcp: { url: `http://127.0.0.1:${(clusterProxy.server.address() as AddressInfo).port}` } } } },
        ],
      }),
    );
    args = [
      `--kvstore-servers=http://etcd-a${DOMAIN}:${portOf(etcdA)}`,
      `--kvstore-servers-overrides=/configmaps#http://etcd-b${DOMAIN}:${portOf(etcdB)}`,
      `--egress-selector-config-file=${egress}`,
      // long enough to cover the whole file: only post-start hooks have a grace period, etcd's check has none
      '--livez-grace-period=1h',
    ];
    c = await startBinCluster([...args, '--storage-media-type=application/json']);
  });
  after(async () => {
    await c?.stop();
    a?.close();
    b?.close();
    await etcdProxy?.close();
    await clusterProxy?.close();
    hook?.closeAllConnections();
    if (hook) await new Promise((resolve) => hook.close(resolve));
    await Promise.allSettled([etcdA?.cleanup(), etcdB?.cleanup()]);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const ok = async (argv: string[]) => {
    const r = await c!.kubectl(argv);
    assert.equal(r.code, 0, `kubectl ${argv.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };

  void it('--egress-selector-config-file, etcd type over a Unix socket: the etcd client reaches both etcds (named only for the proxy) through it; /readyz/etcd', async () => {
    assert.ok(etcdProxy.targets.includes(`etcd-a${DOMAIN}:${portOf(etcdA)}`), etcdProxy.targets.join(', '));
    assert.ok(etcdProxy.targets.includes(`etcd-b${DOMAIN}:${portOf(etcdB)}`), etcdProxy.targets.join(', '));
    assert.deepEqual(clusterProxy.targets, [], 'no etcd connection through the cluster proxy');
    const ready = await c!.request('GET', '/readyz/etcd');
    assert.equal(ready.status, 200, ready.text);
    const m = (await c!.request('GET', '/metrics')).text;
    assert.match(m, /^apiserver_egress_dialer_dial_duration_seconds_count\{protocol="http_connect",transport="uds"\} [1-9]\d*$/m);
  });

  void it('--kvstore-servers-overrides=/configmaps#<etcd B>: ConfigMaps are in the second etcd only, everything else in the first', async () => {
    await ok(['create', 'namespace', 'split']);
    await ok(['create', 'configmap', 'cm1', '-n', 'split', '--from-literal=k=v']);
    await ok(['create', 'secret', 'generic', 's1', '-n', 'split', '--from-literal=k=v']);
    const keysA = (await a.getAll().prefix('/registry/').keys()).sort();
    const keysB = (await b.getAll().prefix('/registry/').keys()).sort();
    assert.ok(keysB.includes('/registry/configmaps/split/cm1'), keysB.join('\n'));
    assert.deepEqual(
      keysB.filter((k) => !k.startsWith('/registry/configmaps/')),
      [],
      'only ConfigMaps in the override etcd',
    );
    assert.deepEqual(keysA.filter((k) => k.startsWith('/registry/configmaps/')), [], 'no ConfigMap in the default etcd');
    assert.ok(keysA.includes('/registry/secrets/split/s1'), 'the Secret in the default etcd');
    assert.ok(keysA.includes('/registry/namespaces/split'), 'the Namespace in the default etcd');
    assert.equal(await ok(['get', 'configmap', 'cm1', '-n', 'split', '-o', 'jsonpath={.data.k}']), 'v');
  });

  void it('--egress-selector-config-file, cluster type over TCP: an admission webhook named only for the proxy is called through it', async () => {
    const before = clusterProxy.targets.length;
    const created = await c!.request('POST', '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations', {
      body: {
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'ValidatingWebhookConfiguration',
        metadata: { name: 'through-the-proxy' },
        webhooks: [
          {
            name: 'secrets.egress.test',
            clientConfig: { url: `https://hook${DOMAIN}:${(hook.address() as AddressInfo).port}/validate`, caBundle: Buffer.from(hookCA).toString('base64') },
            rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['secrets'] }],
            namespaceSelector: { matchLabels: { hooked: 'yes' } },
            failurePolicy: 'Fail',
            sideEffects: 'None',
            admissionReviewVersions: ['v1'],
          },
        ],
      },
    });
    assert.equal(created.status, 201, created.text);
    await ok(['create', 'namespace', 'hooked']);
    await ok(['label', 'namespace', 'hooked', 'hooked=yes']);
    await eventually(
      'the webhook in use',
      async () => {
        const name = `s-${admitted.length}-${Date.now()}`;
        const r = await c!.kubectl(['create', 'secret', 'generic', name, '-n', 'hooked']);
        return r.code === 0 && admitted.includes(name) ? true : undefined;
      },
      { timeoutMs: 15_000 },
    );
    assert.ok(clusterProxy.targets.slice(before).includes(`hook${DOMAIN}:${(hook.address() as AddressInfo).port}`), clusterProxy.targets.join(', '));
    const m = (await c!.request('GET', '/metrics')).text;
    assert.match(m, /^apiserver_egress_dialer_dial_duration_seconds_count\{protocol="http_connect",transport="tcp"\} [1-9]\d*$/m);
  });

  void it('--storage-media-type: application/json stores JSON; after a restart with the default, new objects are protobuf (k8s\\0) and the JSON ones still read', async () => {
    await ok(['create', 'configmap', 'as-json', '-n', 'split', '--from-literal=enc=json']);
    await ok(['create', 'secret', 'generic', 'as-json', '-n', 'split', '--from-literal=enc=json']);
    assert.equal(kindOf((await b.get('/registry/configmaps/split/as-json').buffer())!), 'json');
    const secret = (await a.get('/registry/secrets/split/as-json').buffer())!;
    assert.equal(kindOf(secret), 'json');
    assert.equal(JSON.parse(secret.toString('utf8')).kind, 'Secret');

    await c!.stop();
    c = undefined;
    c = await startBinCluster(args);
    await ok(['create', 'configmap', 'as-protobuf', '-n', 'split', '--from-literal=enc=protobuf']);
    await ok(['create', 'secret', 'generic', 'as-protobuf', '-n', 'split', '--from-literal=enc=protobuf']);
    const cm = (await b.get('/registry/configmaps/split/as-protobuf').buffer())!;
    assert.equal(kindOf(cm), 'protobuf');
    assert.ok(cm.includes(Buffer.from('ConfigMap')), 'the protobuf Unknown envelope names the kind');
    assert.equal(kindOf((await a.get('/registry/secrets/split/as-protobuf').buffer())!), 'protobuf');
    for (const name of ['as-json', 'as-protobuf']) {
      assert.equal(await ok(['get', 'configmap', name, '-n', 'split', '-o', 'jsonpath={.data.enc}']), name.slice(3));
      assert.equal(Buffer.from(await ok(['get', 'secret', name, '-n', 'split', '-o', 'jsonpath={.data.enc}']), 'base64').toString('utf8'), name.slice(3));
    }
    // An update rewrites the JSON value in the encoding now in effect.
    await ok(['label', 'configmap', 'as-json', '-n', 'split', 'rewritten=yes']);
    assert.equal(kindOf((await b.get('/registry/configmaps/split/as-json').buffer())!), 'protobuf');
  });

  void it('--livez-grace-period covers post-start hooks only: with the default etcd stopped, /livez fails on etcd at once', async () => {
    await etcdA.stop();
    try {
      const r = await eventually('/livez failing on etcd', async () => {
        const got = await c!.request('GET', '/livez?verbose');
        return got.status === 500 ? got : undefined;
      }, { timeoutMs: 20_000 });
      assert.match(r.text, /^\[-\]etcd failed: reason withheld$/m);
      assert.match(r.text, /^\[\+\]poststarthook\/rbac\/bootstrap-roles ok$/m);
      const one = await c!.request('GET', '/livez/etcd');
      assert.equal(one.status, 500);
      assert.match(one.text, /^internal server error: /);
    } finally {
      await etcdA.start();
    }
    await eventually('/livez passing again', async () => (await c!.request('GET', '/livez')).status === 200, { timeoutMs: 30_000 });
  });
});

void describe('watch cache options on the binary', () => {
  let c: BinCluster;
  before(async () => {
    c = await startBinCluster(['--default-watch-cache-size=6', '--watch-cache-sizes=limitranges#4,runtimeclasses.node.k8s.io#0']);
  });
  after(async () => {
    await c?.stop();
  });

  /** Creates objects at `path` named `${prefix}0..`; their resourceVersions. */
  const create = async (path: string, n: number, body: (name: string) => Json): Promise<number[]> => {
    const rvs: number[] = [];
    for (let i = 0; i < n; i++) {
      const r = await c.request('POST', path, { body: body(`w${i}`) });
      assert.equal(r.status, 201, r.text);
      rvs.push(Number(r.json.metadata.resourceVersion));
    }
    return rvs;
  };
  /** A watch from `rv` that ends after a second: its events. */
  const watchFrom = async (path: string, rv: number): Promise<Json[]> => {
    const r = await c.request('GET', `${path}?watch=1&resourceVersion=${rv}&timeoutSeconds=1`);
    assert.equal(r.status, 200, r.text);
    return r.text.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Json);
  };
  const tooOld = (events: Json[], rv: number, floor: number) => {
    assert.equal(events.length, 1, JSON.stringify(events));
    assert.equal(events[0]!.type, 'ERROR');
    assert.deepEqual(
      { code: events[0]!.object.code, reason: events[0]!.object.reason, message: events[0]!.object.message },
      { code: 410, reason: 'Expired', message: `too old resource version: ${rv} (${floor})` },
    );
  };
  const names = (events: Json[]) => events.map((e) => `${e.type as string} ${e.object.metadata.name as string}`);

  void it('--watch-cache-sizes=limitranges#4: a watch from before the last 4 events is 410 Expired naming the window; from its start, the 4 events', async () => {
    assert.equal((await c.kubectl(['create', 'namespace', 'wc'])).code, 0);
    const path = '/api/v1/namespaces/wc/limitranges';
    const rvs = await create(path, 7, (name) => ({ apiVersion: 'v1', kind: 'LimitRange', metadata: { name }, spec: { limits: [{ type: 'Container', max: { cpu: '1' } }] } }));
    // The window holds w3..w6: a watch resumes from just before w3.
    tooOld(await watchFrom(path, rvs[0]!), rvs[0]!, rvs[3]! - 1);
    if (rvs[2]! < rvs[3]! - 1) tooOld(await watchFrom(path, rvs[2]!), rvs[2]!, rvs[3]! - 1);
    assert.deepEqual(names(await watchFrom(path, rvs[3]! - 1)), ['ADDED w3', 'ADDED w4', 'ADDED w5', 'ADDED w6']);
    // A list at resourceVersion=0 comes from the cache, which does not page.
    const list = await c.request('GET', `${path}?resourceVersion=0&limit=2`);
    assert.equal(list.json.items.length, 7);
    assert.equal(list.json.metadata.continue, undefined);
    assert.match((await c.request('GET', '/metrics')).text, /^watch_cache_capacity\{resource="\*core\.LimitRange"\} 4$/m);
  });

  void it('--default-watch-cache-size=6: the window of a resource not named (IngressClasses) is 6 events', async () => {
    const path = '/apis/networking.k8s.io/v1/ingressclasses';
    const rvs = await create(path, 8, (name) => ({ apiVersion: 'networking.k8s.io/v1', kind: 'IngressClass', metadata: { name }, spec: { controller: 'example.com/ingress' } }));
    tooOld(await watchFrom(path, rvs[0]!), rvs[0]!, rvs[2]! - 1);
    // w1's revision is outside the window unless w2 came right after it.
    if (rvs[1]! < rvs[2]! - 1) tooOld(await watchFrom(path, rvs[1]!), rvs[1]!, rvs[2]! - 1);
    assert.deepEqual(names(await watchFrom(path, rvs[2]! - 1)), ['w2', 'w3', 'w4', 'w5', 'w6', 'w7'].map((n) => `ADDED ${n}`));
    assert.match((await c.request('GET', '/metrics')).text, /^watch_cache_capacity\{resource="\*networking\.IngressClass"\} 6$/m);
  });

  void it('--watch-cache-sizes=runtimeclasses.node.k8s.io#0: no cache; watches from any kept revision and paged lists come from storage', async () => {
    const path = '/apis/node.k8s.io/v1/runtimeclasses';
    const rvs = await create(path, 8, (name) => ({ apiVersion: 'node.k8s.io/v1', kind: 'RuntimeClass', metadata: { name }, handler: 'runc' }));
    assert.deepEqual(names(await watchFrom(path, rvs[0]!)), ['w1', 'w2', 'w3', 'w4', 'w5', 'w6', 'w7'].map((n) => `ADDED ${n}`));
    const list = await c.request('GET', `${path}?resourceVersion=0&limit=3`);
    assert.equal(list.json.items.length, 3);
    assert.ok(list.json.metadata.continue, 'storage pages the list');
    assert.doesNotMatch((await c.request('GET', '/metrics')).text, /^watch_cache_capacity\{resource="\*node\.RuntimeClass"\}/m);
  });
});

void describe('audit log retention on the binary: --audit-log-maxage', () => {
  let dir = '';
  let c: BinCluster | undefined;
  const DAY = 24 * 3600 * 1000;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'orch-optbin-maxage-'));
  });
  after(async () => {
    await c?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  void it('a rotation removes the backups whose name is older than maxage days, keeps the younger ones and files that are not backups', async () => {
    const log = join(dir, 'audit.log');
    const now = Date.now();
    // Backups in lumberjack's name format (audit-2006-01-02T15-04-05.000.log, UTC), with mtimes to match.
    const aged = { old10: now - 10 * DAY, old5: now - 5 * DAY, old4: now - 4 * DAY - 3600_000, young2: now - 2 * DAY, young1: now - DAY + 3600_000 };
    for (const [label, t] of Object.entries(aged)) {
      const file = backupName(log, t);
      await writeFile(file, `${label}\n`);
      await utimes(file, new Date(t), new Date(t));
    }
    // A name lumberjack did not write: never a backup.
    await writeFile(join(dir, 'audit-keep-me.log'), 'not a backup\n');
    await utimes(join(dir, 'audit-keep-me.log'), new Date(now - 30 * DAY), new Date(now - 30 * DAY));
    // The current log, one line short of --audit-log-maxsize=1 (MB): the first event rotates it.
    await writeFile(log, 'x'.repeat(1024 * 1024 - 10) + '\n');
    await writeFile(join(dir, 'policy.yaml'), 'apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n');
    const rotatedBefore = new Set(await readdir(dir));
    c = await startBinCluster([
      `--audit-policy-file=${join(dir, 'policy.yaml')}`,
      `--audit-log-path=${log}`,
      '--audit-log-maxsize=1',
      '--audit-log-maxbackup=10',
      '--audit-log-maxage=3',
    ]);
    assert.equal((await c.kubectl(['get', 'namespaces'])).code, 0);
    const expected = [
      'audit-keep-me.log',
      'audit.log',
      'policy.yaml',
      ...['young2', 'young1'].map((l) => backupName(log, aged[l as keyof typeof aged]).slice(dir.length + 1)),
    ];
    const files = await eventually(
      'the aged backups removed after the rotation',
      async () => {
        const names = await readdir(dir);
        const fresh = names.filter((n) => !rotatedBefore.has(n) && /^audit-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d{3}\.log$/.test(n));
        return fresh.length === 1 && names.length === expected.length + 1 ? names : undefined;
      },
      { timeoutMs: 15_000 },
    ).catch(async () => readdir(dir));
    const fresh = files.filter((n) => !rotatedBefore.has(n));
    assert.equal(fresh.length, 1, `one new backup from the rotation: ${files.join(', ')}`);
    // the tokens file and kubeconfig startBinCluster writes live in another directory: the audit directory has only these
    assert.deepEqual(files.filter((n) => !fresh.includes(n)).sort(), expected.sort());
  });
});
