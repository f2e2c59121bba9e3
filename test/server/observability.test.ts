/**
 * /metrics and its options (--disabled-metrics, --allow-metric-labels, --show-hidden-metrics-for-version),
 * the storage metric polls, APIServerIdentity's lease, APIResponseCompression, --runtime-config and
 * --delete-collection-workers, checked from outside: kubectl (`get --raw /metrics`, `api-versions`) and an
 * HTTPS client. The options' server is the real bin/orch-apiserver; the others (options off, and the parts
 * that look inside a server value) are in-process control planes.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpsRequest } from 'node:https';
import { gunzipSync } from 'node:zlib';
import { setTimeout as sleep } from 'node:timers/promises';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { requireBinary } from '../helpers/binaries.js';
import { startCluster, type TestCluster } from '../helpers/cluster.js';
import { startBinCluster, type BinCluster } from '../helpers/binserver.js';
import { parseServerOptions } from '../../src/server/options.js';
import { createControlPlane } from '../../src/server/controlplane.js';
import { eventually } from '../helpers/eventually.js';

const present = requireBinary(undefined, 'kubectl') !== null;
if (!present && process.env.CI === 'true') throw new Error('kubectl is required under CI=true');
const skip = !present && 'kubectl not installed';

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

type Cluster = TestCluster | BinCluster;

function call(c: Cluster | (TestCluster & { token: string }), method: string, path: string, opts: { headers?: Record<string, string>; body?: string; signal?: AbortSignal } = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      `${c.url}${path}`,
      {
        method,
        ca: 'caCert' in c ? c.caCert : c.cp.server.caCert,
        agent: false,
        headers: { authorization: `Bearer ${c.token}`, ...(opts.body ? { 'content-type': 'application/json' } : {}), ...opts.headers },
        ...(opts.signal ? { signal: opts.signal } : {}),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (d: Buffer) => chunks.push(d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(opts.body);
  });
}

/** The samples of one metric family in a Prometheus text exposition: labels text -> value. */
function samples(text: string, name: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)$/.exec(line);
    if (m && m[1] === name) out.set(m[2] ?? '', Number(m[3]));
  }
  return out;
}

function help(text: string, name: string): string | undefined {
  return new RegExp(`^# HELP ${name} (.*)$`, 'm').exec(text)?.[1];
}


describe('observability and versioning options', () => {
  /** The binary with the options. */
  let c: BinCluster;
  /** In-process, the options off. */
  let plain: TestCluster;
  /** In-process, every default. */
  let inproc: TestCluster;
  const ok = async (cluster: Cluster, args: string[], input?: string) => {
    const r = await cluster.kubectl(args, input !== undefined ? { input } : {});
    assert.equal(r.code, 0, `kubectl ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };
  const metrics = (cluster: Cluster) => ok(cluster, ['get', '--raw', '/metrics']);

  before(async () => {
    c = await startBinCluster([
      '--disabled-metrics=apiserver_longrunning_gauge',
      '--allow-metric-labels=apiserver_request_total,verb=GET,LIST',
      '--show-hidden-metrics-for-version=1.22',
      '--kvstore-count-metric-poll-period=200ms',
      '--kvstore-db-metric-poll-interval=200ms',
      '--feature-gates=APIServerIdentity=true',
      '--identity-lease-duration-seconds=2',
      '--identity-lease-renew-interval-seconds=1',
      '--delete-collection-workers=4',
    ]);
    plain = await startCluster(['--runtime-config=coordination.k8s.io/v1=false', '--feature-gates=APIResponseCompression=false,RemoveSelfLink=false,EfficientWatchResumption=false']);
    inproc = await startCluster();
  });
  after(async () => {
    await c?.stop();
    await plain?.stop();
    await inproc?.stop();
  });

  it('serves the apiserver request metrics in Prometheus text format', { skip }, async () => {
    await ok(c, ['get', 'namespaces']);
    await ok(c, ['create', 'namespace', 'metrics-ns']);
    await ok(c, ['get', 'namespace', 'default']);
    // A get is answered from the watch cache once it is current; an update reads storage (a timed "get").
    await ok(c, ['label', 'namespace', 'metrics-ns', 'metrics=read']);
    const r = await call(c, 'GET', '/metrics');
    assert.equal(r.status, 200);
    assert.equal(r.headers['content-type'], 'text/plain; version=0.0.4; charset=utf-8');
    const text = await metrics(c);
    assert.equal(help(text, 'apiserver_request_total'), '[STABLE] Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.');
    assert.match(text, /^# TYPE apiserver_request_total counter$/m);
    const total = samples(text, 'apiserver_request_total');
    // kubectl get namespaces is a LIST (as a Table); get of one namespace a GET with scope "resource".
    assert.ok((total.get('{code="200",component="apiserver",dry_run="",group="",resource="namespaces",scope="cluster",subresource="",verb="LIST",version="v1"}') ?? 0) >= 1, text);
    assert.ok((total.get('{code="200",component="apiserver",dry_run="",group="",resource="namespaces",scope="resource",subresource="",verb="GET",version="v1"}') ?? 0) >= 1);
    // --allow-metric-labels: POST is not in verb's allow-list.
    assert.ok((total.get('{code="201",component="apiserver",dry_run="",group="",resource="namespaces",scope="resource",subresource="",verb="unexpected",version="v1"}') ?? 0) >= 1, text);
    assert.ok(![...total.keys()].some((k) => k.includes('verb="POST"')));
    // The duration histogram with Kubernetes 1.23's buckets, le last.
    assert.match(text, /^# TYPE apiserver_request_duration_seconds histogram$/m);
    const buckets = samples(text, 'apiserver_request_duration_seconds_bucket');
    const listSeries = [...buckets.keys()].filter((k) => k.includes('resource="namespaces",scope="cluster"') && k.includes('verb="LIST"'));
    assert.deepEqual(
      listSeries.map((k) => /le="([^"]+)"\}$/.exec(k)?.[1]),
      ['0.05', '0.1', '0.2', '0.4', '0.6', '0.8', '1', '1.25', '1.5', '2', '3', '4', '5', '6', '8', '10', '15', '20', '30', '45', '60', '+Inf'],
    );
    assert.equal(samples(text, 'apiserver_current_inflight_requests').size, 2);
    // Response sizes of GETs and LISTs, and the storage's latency per operation and type.
    const sizes = samples(text, 'apiserver_response_sizes_count');
    assert.ok((sizes.get('{component="apiserver",group="",resource="namespaces",scope="resource",subresource="",verb="GET",version="v1"}') ?? 0) >= 1, text);
    const etcd = samples(text, 'etcd_request_duration_seconds_count');
    assert.ok((etcd.get('{operation="create",type="*core.Namespace"}') ?? 0) >= 1, [...etcd.keys()].join('\n'));
    assert.ok((etcd.get('{operation="list",type="*core.NamespaceList"}') ?? 0) >= 1);
    assert.ok((etcd.get('{operation="get",type="*core.Namespace"}') ?? 0) >= 1);
    // Health checks are instrumented with their path as subresource; paths without a route are not recorded.
    await call(c, 'GET', '/readyz');
    assert.equal((await call(c, 'GET', '/readyz/no-such-check')).status, 404);
    assert.equal((await call(c, 'GET', '/api/v1/namespaces/default/no-such-subresource')).status, 404);
    assert.equal((await call(c, 'GET', '/api/v1/namespaces/default/status')).status, 200);
    const after = samples(await metrics(c), 'apiserver_request_total');
    assert.ok((after.get('{code="200",component="apiserver",dry_run="",group="",resource="",scope="",subresource="/readyz",verb="GET",version=""}') ?? 0) >= 1);
    assert.ok(![...after.keys()].some((k) => k.includes('no-such')), [...after.keys()].join('\n'));
    assert.ok((after.get('{code="200",component="apiserver",dry_run="",group="",resource="namespaces",scope="resource",subresource="status",verb="GET",version="v1"}') ?? 0) >= 1);
  });

  it('counts watches and long-running requests while they last', { skip }, async () => {
    const ac = new AbortController();
    const watching = call(c, 'GET', '/api/v1/namespaces?watch=true', { signal: ac.signal }).catch(() => undefined);
    const text = await eventually('a registered watcher', async () => {
      const t = await metrics(c);
      return samples(t, 'apiserver_registered_watchers').get('{group="",kind="Namespace",version="v1"}') === 1 ? t : undefined;
    });
    assert.equal(samples(text, 'apiserver_longrunning_requests').get('{component="apiserver",group="",resource="namespaces",scope="cluster",subresource="",verb="WATCH",version="v1"}'), 1);
    ac.abort();
    await watching;
    await eventually('the watcher to go', async () => {
      const t = await metrics(c);
      return samples(t, 'apiserver_registered_watchers').get('{group="",kind="Namespace",version="v1"}') === 0 ? true : undefined;
    });
  });

  it('--disabled-metrics and --show-hidden-metrics-for-version', { skip }, async () => {
    const text = await metrics(c);
    assert.doesNotMatch(text, /apiserver_longrunning_gauge/);
    assert.equal(samples(text, 'disabled_metric_total').get(''), 1);
    // etcd_object_counts was deprecated in 1.22: hidden in 1.23 unless 1.22's hidden metrics are shown.
    await eventually('object counts', async () => {
      const t = await metrics(c);
      return (samples(t, 'etcd_object_counts').get('{resource="namespaces"}') ?? 0) >= 4 ? true : undefined;
    });
    assert.equal(help(text, 'etcd_object_counts'), '[ALPHA] (Deprecated since 1.22.0) Number of stored objects at the time of last check split by kind.');

    // A vector family shows once it has a series: one watch makes the long-running gauges appear.
    await call(plain, 'GET', '/api/v1/namespaces?watch=true&timeoutSeconds=1');
    const other = await metrics(plain);
    assert.doesNotMatch(other, /etcd_object_counts/);
    assert.equal(samples(other, 'hidden_metric_total').get(''), 1);
    assert.equal(
      help(other, 'apiserver_longrunning_gauge'),
      '[ALPHA] (Deprecated since 1.23.0) Gauge of all active long-running apiserver requests broken out by verb, group, version, resource, scope and component. Not all requests are tracked this way.',
    );
  });

  it('reports stored objects, the store size and the process', { skip }, async () => {
    const text = await eventually('storage metrics', async () => {
      const t = await metrics(c);
      const objects = samples(t, 'apiserver_storage_objects');
      return (objects.get('{resource="namespaces"}') ?? 0) >= 4 && samples(t, 'apiserver_storage_db_total_size_in_bytes').size > 0 ? t : undefined;
    });
    assert.ok((samples(text, 'apiserver_storage_db_total_size_in_bytes').get('{endpoint="memory"}') ?? 0) > 0);
    assert.ok((samples(text, 'etcd_db_total_size_in_bytes').get('{endpoint="memory"}') ?? 0) > 0);
    assert.ok((samples(text, 'process_resident_memory_bytes').get('') ?? 0) > 10 * 1024 * 1024);
    assert.ok((samples(text, 'process_cpu_seconds_total').get('') ?? 0) > 0);
    const start = samples(text, 'process_start_time_seconds').get('') ?? 0;
    assert.ok(start > Date.now() / 1000 - 3600 && start <= Date.now() / 1000, String(start));
    assert.ok((samples(text, 'process_open_fds').get('') ?? 0) > 0);
    assert.ok((samples(text, 'nodejs_heap_size_used_bytes').get('') ?? 0) > 0);
  });

  it('each server value has its own registry, open to other parts of the server', async () => {
    const counter = inproc.cp.server.metrics.counter({ name: 'orch_test_events_total', help: 'Test events.', labelNames: ['kind'] });
    counter.inc({ kind: 'a' }, 2);
    const text = await inproc.cp.server.metrics.render();
    assert.match(text, /^# HELP orch_test_events_total \[ALPHA\] Test events\.$/m);
    assert.equal(samples(text, 'orch_test_events_total').get('{kind="a"}'), 2);
    assert.doesNotMatch(await plain.cp.server.metrics.render(), /orch_test_events_total/);
  });

  it('APIServerIdentity: a renewed identity lease in kube-system, expired ones collected', { skip }, async () => {
    const leases = async () =>
      JSON.parse(await ok(c, ['get', 'leases', '-n', 'kube-system', '-l', 'k8s.io/component=kube-apiserver', '-o', 'json'])).items as {
        metadata: { name: string; labels: Record<string, string> };
        spec: { holderIdentity: string; leaseDurationSeconds: number; renewTime: string };
      }[];
    const first = await eventually('the identity lease', async () => ((await leases()).length === 1 ? (await leases())[0] : undefined));
    assert.match(first.metadata.name, /^kube-apiserver-[0-9a-f-]{36}$/);
    assert.equal(first.spec.holderIdentity, first.metadata.name);
    assert.equal(first.spec.leaseDurationSeconds, 2);
    assert.match(first.spec.renewTime, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    await eventually('a renewal', async () => ((await leases())[0]!.spec.renewTime > first.spec.renewTime ? true : undefined));

    const stale = {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: 'kube-apiserver-stale', namespace: 'kube-system', labels: { 'k8s.io/component': 'kube-apiserver' } },
      spec: { holderIdentity: 'kube-apiserver-stale', leaseDurationSeconds: 1, renewTime: '2020-01-01T00:00:00.000000Z' },
    };
    await ok(c, ['create', '-f', '-'], JSON.stringify(stale));
    await eventually('the stale lease to be collected', async () => ((await leases()).some((l) => l.metadata.name === 'kube-apiserver-stale') ? undefined : true));
    assert.deepEqual((await leases()).map((l) => l.metadata.name), [first.metadata.name]);
  });

  it('APIResponseCompression: gzips large lists for clients that accept gzip, not watches', { skip }, async () => {
    await ok(c, ['create', 'namespace', 'big']);
    await ok(plain, ['create', 'namespace', 'big']);
    const big = 'x'.repeat(100 * 1024);
    for (const cluster of [c, plain]) {
      for (const name of ['a', 'b']) {
        const r = await call(cluster, 'POST', '/api/v1/namespaces/big/configmaps', {
          body: JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { big } }),
        });
        assert.equal(r.status, 201);
      }
    }
    const list = await call(c, 'GET', '/api/v1/namespaces/big/configmaps', { headers: { 'accept-encoding': 'gzip' } });
    assert.equal(list.headers['content-encoding'], 'gzip');
    assert.equal(list.headers.vary, 'Accept-Encoding');
    const names = (body: Buffer) => (JSON.parse(body.toString()) as { items: { metadata: { name: string } }[] }).items.map((i) => i.metadata.name).filter((n) => n !== 'kube-root-ca.crt');
    assert.deepEqual(names(gunzipSync(list.body)), ['a', 'b']);
    // One object is under 128 KiB: sent as is.
    const one = await call(c, 'GET', '/api/v1/namespaces/big/configmaps/a', { headers: { 'accept-encoding': 'gzip' } });
    assert.equal(one.headers['content-encoding'], undefined);
    // Without Accept-Encoding: gzip, or with the gate off: plain.
    assert.equal((await call(c, 'GET', '/api/v1/namespaces/big/configmaps')).headers['content-encoding'], undefined);
    const off = await call(plain, 'GET', '/api/v1/namespaces/big/configmaps', { headers: { 'accept-encoding': 'gzip' } });
    assert.equal(off.headers['content-encoding'], undefined);
    assert.deepEqual(names(off.body), ['a', 'b']);
    // A watch is never compressed.
    const watch = await call(c, 'GET', '/api/v1/namespaces/big/configmaps?watch=true&timeoutSeconds=1', { headers: { 'accept-encoding': 'gzip' } });
    assert.equal(watch.headers['content-encoding'], undefined);
    assert.ok(watch.body.toString().trim().split('\n').length >= 2);
    // kubectl (Go's transport asks for gzip) reads the compressed list.
    assert.match(await ok(c, ['get', 'configmaps', '-n', 'big', '-o', 'name']), /configmap\/a\nconfigmap\/b\n/);
  });

  it('RemoveSelfLink: no selfLink by default (1.23); with the gate off, objects, lists and items carry theirs', { skip }, async () => {
    const get = async (cluster: Cluster, path: string) => JSON.parse((await call(cluster, 'GET', path)).body.toString());
    assert.equal((await get(c, '/api/v1/namespaces/default')).metadata.selfLink, undefined);
    assert.equal((await get(c, '/api/v1/namespaces')).metadata.selfLink, undefined);
    assert.equal((await get(plain, '/api/v1/namespaces/default')).metadata.selfLink, '/api/v1/namespaces/default');
    await ok(plain, ['create', 'namespace', 'links']);
    const created = await call(plain, 'POST', '/api/v1/namespaces/links/configmaps', {
      body: JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'one' } }),
    });
    assert.equal(JSON.parse(created.body.toString()).metadata.selfLink, '/api/v1/namespaces/links/configmaps/one');
    const list = await get(plain, '/api/v1/namespaces/links/configmaps');
    assert.equal(list.metadata.selfLink, '/api/v1/namespaces/links/configmaps');
    const one = list.items.find((i: { metadata: { name: string } }) => i.metadata.name === 'one');
    assert.equal(one.metadata.selfLink, '/api/v1/namespaces/links/configmaps/one');
    for (const i of list.items as { metadata: { name: string; selfLink: string } }[]) assert.equal(i.metadata.selfLink, `/api/v1/namespaces/links/configmaps/${i.metadata.name}`);
    const all = await get(plain, '/api/v1/configmaps');
    assert.equal(all.metadata.selfLink, '/api/v1/configmaps');
    // kubectl still reads such answers.
    assert.equal(await ok(plain, ['get', 'configmap', 'one', '-n', 'links', '-o', 'jsonpath={.metadata.selfLink}']), '/api/v1/namespaces/links/configmaps/one');
  });

  it('EfficientWatchResumption: bookmarks carry the storage progress, not only the kind\'s last event', async () => {
    const bookmarkAfterOtherWrites = async (cluster: TestCluster, ns: string) => {
      // Claims: no controller writes them (configmaps would move on with kube-root-ca.crt in the new namespace).
      const configmaps = cluster.cp.registry.store('', 'v1', 'persistentvolumeclaims')!;
      const namespaces = cluster.cp.registry.store('', 'v1', 'namespaces')!;
      const user = { name: 'test', groups: ['system:masters'] };
      const start = Number((await configmaps.list({ namespace: ns, user }, {})).metadata!.resourceVersion);
      const watch = configmaps.watch({ namespace: ns, user }, { allowWatchBookmarks: true, resourceVersion: String(start) }, 300);
      const it = watch[Symbol.asyncIterator]();
      const first = it.next();
      // Writes of another kind move the store's revision on; no claim event happens.
      const written = await namespaces.create({ namespace: '', user }, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: `${ns}-other` } });
      const ev = (await first).value as { type: string; object: { metadata: { resourceVersion: string } } };
      watch.close();
      return { type: ev.type, rv: Number(ev.object.metadata.resourceVersion), start, written: Number(written.metadata!.resourceVersion) };
    };
    const on = await bookmarkAfterOtherWrites(inproc, 'default');
    assert.equal(on.type, 'BOOKMARK');
    assert.ok(on.rv >= on.written && on.written > on.start, JSON.stringify(on));
    const off = await bookmarkAfterOtherWrites(plain, 'default');
    assert.equal(off.type, 'BOOKMARK');
    assert.equal(off.rv, off.start);
  });

  it('--runtime-config turns a group version off in discovery and routing', { skip }, async () => {
    assert.match(await ok(c, ['api-versions']), /^coordination\.k8s\.io\/v1$/m);
    const versions = await ok(plain, ['api-versions']);
    assert.doesNotMatch(versions, /coordination\.k8s\.io/);
    assert.match(versions, /^v1$/m);
    const r = await plain.kubectl(['get', 'leases', '-A']);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /the server doesn't have a resource type "leases"/);
    for (const path of ['/apis/coordination.k8s.io', '/apis/coordination.k8s.io/v1', '/apis/coordination.k8s.io/v1/namespaces/kube-system/leases']) {
      const res = await call(plain, 'GET', path);
      assert.equal(res.status, 404, path);
      assert.equal(JSON.parse(res.body.toString()).reason, 'NotFound');
    }
    assert.equal((await call(plain, 'GET', '/api/v1/namespaces/default')).status, 200);
  });

  it('requests refused by the in-flight limits (429) and timed out (504) are counted as terminations', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'orch-terminations-'));
    const tokens = join(dir, 'tokens.csv');
    await writeFile(tokens, 'e2e-admin-token,admin,admin,"system:masters"\nuser-token,alice,alice\n');
    const t = await startCluster(['--max-mutating-requests-inflight=1', '--enable-priority-and-fairness=false', '--request-timeout=1s', `--token-auth-file=${tokens}`]);
    try {
      // A create whose body never comes holds the one mutating slot until its deadline.
      const held = new Promise<number>((resolve, reject) => {
        const req = httpsRequest(`${t.url}/api/v1/namespaces/default/configmaps`, {
          method: 'POST',
          ca: t.cp.server.caCert,
          agent: false,
          headers: { authorization: 'Bearer user-token', 'content-type': 'application/json', 'content-length': '100' },
        }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        req.on('error', reject);
        req.write('{');
      });
      await sleep(200);
      const body = JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } });
      const refused = await call({ ...t, token: 'user-token' }, 'POST', '/api/v1/namespaces/default/configmaps', { body });
      assert.equal(refused.status, 429);
      assert.equal(await held, 504);
      const text = await t.cp.server.metrics.render();
      const labels = (code: number) => `{code="${code}",component="apiserver",group="",resource="configmaps",scope="resource",subresource="",verb="POST",version="v1"}`;
      const terminations = samples(text, 'apiserver_request_terminations_total');
      assert.equal(terminations.get(labels(429)), 1, text);
      assert.equal(terminations.get(labels(504)), 1);
      assert.equal(samples(text, 'apiserver_dropped_requests_total').get('{request_kind="mutating"}'), 1);
      assert.equal(
        samples(text, 'apiserver_request_total').get('{code="429",component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="POST",version="v1"}'),
        1,
      );
    } finally {
      await t.stop();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('--runtime-config: matchers, core v1, and the startup errors of kube-apiserver', async () => {
    const refused = async (value: string, message: RegExp) => {
      const o = parseServerOptions(['--data-dir=:memory:', '--cert-dir=/nonexistent', `--runtime-config=${value}`]);
      await assert.rejects(createControlPlane(o, { securePort: 0, logger: () => {} }), message);
    };
    await refused('api/all=false', /--runtime-config: invalid key with only api\/all=false/);
    await refused('apps/v1=true', /--runtime-config: unknown api groups apps/);
    await refused('coordination.k8s.io/v1beta1=true', /--runtime-config: group version coordination.k8s.io\/v1beta1 that has not been registered/);
    const { servedKinds } = await import('../../src/server/runtimeconfig.js');
    const { BUILTIN_KINDS } = await import('../../src/registry/kinds/index.js');
    const gvs = (rc: Record<string, boolean>) => [...new Set(servedKinds(BUILTIN_KINDS, rc).map((k) => `${k.group}/${k.version}`))].sort();
    assert.deepEqual(gvs({ 'api/all': false, v1: true }), ['/v1']);
    // api/ga=false turns the GA versions off; the beta ones (flowcontrol's, on by default in 1.23) stay.
    assert.deepEqual(gvs({ 'api/ga': false, 'coordination.k8s.io/v1': true }), [
      'coordination.k8s.io/v1',
      'flowcontrol.apiserver.k8s.io/v1beta1',
      'flowcontrol.apiserver.k8s.io/v1beta2',
      'policy/v1beta1',
    ]);
    assert.deepEqual(gvs({ 'api/v1': false, 'api/legacy': false }), gvs({}).filter((g) => g !== '/v1'));
    assert.ok(gvs({}).includes('/v1') && gvs({}).includes('coordination.k8s.io/v1'));
  });

  it('--delete-collection-workers: a deletecollection removes every selected object', { skip }, async () => {
    await ok(c, ['create', 'namespace', 'dc']);
    const create = async (name: string, labels: Record<string, string>) => {
      const r = await call(c, 'POST', '/api/v1/namespaces/dc/configmaps', {
        body: JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, labels }, data: { k: 'v' } }),
      });
      assert.equal(r.status, 201);
    };
    for (let i = 0; i < 12; i++) await create(`cm-${String(i).padStart(2, '0')}`, { dc: 'yes' });
    await create('keep', { dc: 'no' });
    const r = await call(c, 'DELETE', '/api/v1/namespaces/dc/configmaps?labelSelector=dc%3Dyes');
    assert.equal(r.status, 200);
    const deleted = JSON.parse(r.body.toString()).items.map((i: { metadata: { name: string } }) => i.metadata.name);
    assert.deepEqual(deleted, Array.from({ length: 12 }, (_, i) => `cm-${String(i).padStart(2, '0')}`));
    assert.equal(await ok(c, ['get', 'configmaps', '-n', 'dc', '-l', 'dc', '-o', 'name']), 'configmap/keep\n');
  });
});
