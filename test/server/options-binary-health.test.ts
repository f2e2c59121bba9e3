/**
 * Health, priority-and-fairness and startup options of document 2 on the real bin/orch-apiserver, checked from
 * outside (HTTPS requests, kubectl, /metrics):
 *
 * - /livez, /readyz and /healthz with their checks in kube-apiserver's order, a path per check, ?exclude=;
 * - --enable-priority-and-fairness (default on) with --max-requests-inflight and --max-mutating-requests-inflight:
 *   the X-Kubernetes-PF-* headers name the stored FlowSchema and priority level, the bootstrap objects through
 *   kubectl, each level's concurrency limit shared out of the two options' sum, and
 *   /debug/api_priority_and_fairness/dump_priority_levels; a one-seat level rejecting alice's second request
 *   while her first holds the seat (held at a validating webhook the test runs, inside the filter); a one-seat
 *   level with queues, where her next request waits: it shows in dump_requests (with ?includeRequestDetails=1 her
 *   user name and the request) and the queues' counters in dump_queues;
 * - --livez-grace-period: while a post-start hook has not finished, /livez reports it ok until the grace period
 *   has passed, then fails on it; /readyz fails on it throughout. The hook is held from outside as it would be in
 *   Kubernetes: the RBAC bootstrap recreates a deleted bootstrap ClusterRole at start, and that create goes
 *   through a validating webhook the test runs and answers only when released. A SIGTERM meanwhile stops the
 *   server as at any other time.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { createServer as createHttpsServer, request as httpsRequest, type Server as HttpsServer } from 'node:https';
import type { ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeCA, makeServingCert } from '../../src/server/certs.js';
import { ADMIN_TOKEN, startBin, startBinCluster, USER_TOKEN, type BinCluster, type BinServer } from '../helpers/binserver.js';
import { eventually } from '../helpers/eventually.js';
import { freePort } from '../helpers/ports.js';
import { passedLines, POST_START_HOOKS } from '../helpers/health.js';



void describe('health checks and priority and fairness on the binary', () => {
  let c: BinCluster;
  before(async () => {
    c = await startBinCluster(['--authorization-mode=RBAC', '--anonymous-auth=true', '--max-requests-inflight=30', '--max-mutating-requests-inflight=10']);
  });
  after(async () => {
    await c?.stop();
  });

  void it('/livez, /readyz and /healthz: every check in kube-apiserver\'s order with ?verbose, a path per check, ?exclude=', async () => {
    const get = (path: string) => c.server.request(path);
    const livez = await get('/livez?verbose');
    assert.equal(livez.status, 200);
    assert.equal(livez.body, passedLines(['ping', 'log', 'etcd', ...POST_START_HOOKS], 'livez check passed'));
    assert.equal((await get('/readyz?verbose')).body, passedLines(['ping', 'log', 'etcd', 'informer-sync', ...POST_START_HOOKS, 'shutdown'], 'readyz check passed'));
    assert.equal((await get('/healthz?verbose')).body, passedLines(['ping', 'log', 'etcd', ...POST_START_HOOKS], 'healthz check passed'));
    for (const e of ['livez', 'readyz', 'healthz']) {
      assert.deepEqual([(await get(`/${e}`)).status, (await get(`/${e}`)).body], [200, 'ok']);
      const one = await get(`/${e}/poststarthook/rbac/bootstrap-roles`);
      assert.deepEqual([one.status, one.body], [200, 'ok']);
      assert.equal((await get(`/${e}/etcd`)).body, 'ok');
    }
    assert.equal((await get('/readyz/shutdown')).status, 200);
    assert.equal((await get('/livez/shutdown')).status, 404, 'shutdown is a readyz check only');
    assert.equal((await get('/livez/informer-sync')).status, 404, 'informer-sync is a readyz check only');
    const excluded = await get('/readyz?verbose&exclude=etcd&exclude=nonesuch');
    assert.equal(excluded.status, 200);
    assert.match(excluded.body, /^\[\+\]etcd excluded: ok$/m);
    assert.match(excluded.body, /^warn: some health checks cannot be excluded: no matches for "nonesuch"$/m);
    // Without credentials: health is readable by system:unauthenticated (system:public-info-viewer).
    assert.equal((await c.server.request('/livez', { token: null })).status, 200);
  });

  void it('--enable-priority-and-fairness: the X-Kubernetes-PF-* headers name the stored FlowSchema and priority level; system:masters is exempt', async () => {
    const uid = async (kind: string, name: string) => {
      const r = await c.kubectl(['get', kind, name, '-o', 'jsonpath={.metadata.uid}']);
      assert.equal(r.code, 0, r.stderr);
      return r.stdout;
    };
    // alice (no RBAC grant) is refused, but classified first: the headers come with the 403.
    const alice = await c.server.request('/api/v1/namespaces/default/configmaps', { token: USER_TOKEN });
    assert.equal(alice.status, 403);
    assert.equal(alice.headers['x-kubernetes-pf-flowschema-uid'], await uid('flowschema', 'global-default'));
    assert.equal(alice.headers['x-kubernetes-pf-prioritylevel-uid'], await uid('prioritylevelconfiguration', 'global-default'));
    const admin = await c.server.request('/api/v1/namespaces/default/configmaps');
    assert.equal(admin.headers['x-kubernetes-pf-flowschema-uid'], await uid('flowschema', 'exempt'));
    assert.equal(admin.headers['x-kubernetes-pf-prioritylevel-uid'], await uid('prioritylevelconfiguration', 'exempt'));
    const listed = await c.kubectl(['get', 'prioritylevelconfigurations']);
    assert.match(listed.stdout, /^workload-low\s+Limited\s+100\s+128\s+6\s+50\s/m);
    assert.match(listed.stdout, /^exempt\s+Exempt\s+<none>\s+<none>\s+<none>\s+<none>\s/m);
  });

  void it('--max-requests-inflight + --max-mutating-requests-inflight (30 + 10) is shared among the levels by their shares', async () => {
    const m = (await c.request('GET', '/metrics')).text;
    // ceil(40 * shares / 245): the 1.23 bootstrap levels' shares add up to 245
    const expected: Record<string, number> = { 'workload-low': 17, 'workload-high': 7, 'node-high': 7, system: 5, 'global-default': 4, 'leader-election': 2, 'catch-all': 1 };
    for (const [level, limit] of Object.entries(expected)) {
      assert.match(m, new RegExp(`^apiserver_flowcontrol_request_concurrency_limit\\{priority_level="${level}"\\} ${limit}$`, 'm'), level);
    }
  });

  void it('/debug/api_priority_and_fairness/dump_priority_levels: a row per level, <none> for exempt, laid out as Go\'s tabwriter', async () => {
    const r = await c.server.request('/debug/api_priority_and_fairness/dump_priority_levels');
    assert.equal(r.status, 200);
    assert.match(String(r.headers['content-type']), /^text\/plain/);
    const rows = r.body.split('\n');
    assert.equal(rows[0], 'PriorityLevelName, ActiveQueues, IsIdle, IsQuiescing, WaitingRequests, ExecutingRequests');
    assert.ok(rows.includes('exempt,            <none>,       <none>, <none>,      <none>,          <none>'), r.body);
    assert.ok(rows.includes('workload-low,      0,            true,   false,       0,               0'), r.body);
    assert.equal(rows.length, 1 + 8 + 1, 'eight levels and the final newline');
    assert.equal((await c.server.request('/debug/api_priority_and_fairness/dump_priority_levels', { token: USER_TOKEN })).status, 403);
  });

  void it('a FlowSchema sending alice to a one-seat level that rejects: with her request holding the seat, the next is 429 with the PF headers; the admin is served', async () => {
    const hook = await holdingWebhook();
    try {
      const { fs, pl, post } = await aliceOnOneSeatLevel(c, hook, {
        suffix: '',
        level: 'one-seat',
        schema: 'alice-one-seat',
        precedence: 100,
        limitResponse: { type: 'Reject' },
        webhook: 'configmaps.apf.test',
        config: 'hold-configmaps',
      });
      const aliceGet = () => c.server.request('/api/v1/namespaces/default/configmaps', { token: USER_TOKEN });
      await eventually('the webhook in use', async () => (await post(`probe-${Date.now()}`)).status === 201 && hook.calls > 0);

      hook.hold = true;
      const held = post('held');
      setTimeout(() => hook.release(), 20_000).unref(); // the held request ends even when an assertion below fails
      await eventually('alice\'s create holding the seat at the webhook', () => hook.held() === 1);
      const refused = await aliceGet();
      assert.equal(refused.status, 429);
      assert.equal(refused.headers['retry-after'], '1');
      assert.equal(refused.body, 'Too many requests, please try again later.\n');
      assert.equal(refused.headers['x-kubernetes-pf-flowschema-uid'], fs.json.metadata.uid);
      assert.equal(refused.headers['x-kubernetes-pf-prioritylevel-uid'], pl.json.metadata.uid);
      assert.equal((await c.server.request('/api/v1/namespaces/default/configmaps')).status, 200, 'system:masters is exempt');
      const dump = (await c.server.request('/debug/api_priority_and_fairness/dump_priority_levels')).body;
      assert.match(dump, /^one-seat,\s+0,\s+false,\s+false,\s+0,\s+1$/m);

      hook.release();
      assert.equal((await held).status, 201);
      assert.equal((await aliceGet()).status, 200);
      const m = (await c.request('GET', '/metrics')).text;
      assert.match(m, /^apiserver_flowcontrol_rejected_requests_total\{flow_schema="alice-one-seat",priority_level="one-seat",reason="concurrency-limit"\} 1$/m);
      assert.match(m, /^apiserver_flowcontrol_request_concurrency_limit\{priority_level="one-seat"\} 1$/m);
    } finally {
      await c.request('DELETE', '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/hold-configmaps');
      await hook.close();
    }
  });

  void it('dump_queues and dump_requests: alice\'s request waiting in a queue of a one-seat queuing level while her create holds the seat', async () => {
    const hook = await holdingWebhook();
    const dump = async (what: string) => {
      const r = await c.server.request(`/debug/api_priority_and_fairness/${what}`);
      assert.equal(r.status, 200, r.body);
      assert.match(String(r.headers['content-type']), /^text\/plain/);
      return r.body;
    };
    const cells = (line: string) => line.split(/,\s*/);
    try {
      for (const what of ['dump_queues', 'dump_requests', 'dump_requests?includeRequestDetails=1']) {
        assert.equal((await c.server.request(`/debug/api_priority_and_fairness/${what}`, { token: USER_TOKEN })).status, 403, what);
      }
      // Idle: a row per queue of each queuing level, <none> for exempt; no requests.
      const idle = (await dump('dump_queues')).split('\n');
      assert.deepEqual(cells(idle[0]!), ['PriorityLevelName', 'Index', 'PendingRequests', 'ExecutingRequests', 'SeatsInUse', 'NextDispatchR', 'InitialSeatsSum', 'MaxSeatsSum', 'TotalWorkSum']);
      assert.ok(idle.includes('exempt,            <none>, <none>,          <none>,            <none>,     <none>,        <none>,          <none>,      <none>'), idle.join('\n'));
      assert.equal(idle.filter((l) => l.startsWith('workload-low,')).length, 128, 'a row per queue of workload-low');
      assert.match(idle.find((l) => l.startsWith('workload-low,'))!, /^workload-low,\s+0,\s+0,\s+\d+,\s+\d+,\s+\d+\.\d{8}ss,\s+0,\s+0,\s+0\.00000000ss$/);
      const emptyRequests = await dump('dump_requests');
      assert.equal(emptyRequests, 'PriorityLevelName, FlowSchemaName, QueueIndex, RequestIndexInQueue, FlowDistingsher, ArriveTime, InitialSeats, FinalSeats, AdditionalLatency\n');

      const { post } = await aliceOnOneSeatLevel(c, hook, {
        suffix: '-queued',
        level: 'one-seat-queued',
        schema: 'alice-queued',
        precedence: 50,
        limitResponse: { type: 'Queue', queuing: { queues: 4, handSize: 2, queueLengthLimit: 10 } },
        webhook: 'configmaps.apf-queued.test',
        config: 'hold-configmaps-queued',
      });
      const aliceList = () => c.server.request('/api/v1/namespaces/default/configmaps', { token: USER_TOKEN });
      const callsBefore = hook.calls;
      await eventually('the webhook in use', async () => (await post(`queued-probe-${Date.now()}`)).status === 201 && hook.calls > callsBefore);

      hook.hold = true;
      const held = post('queued-held');
      setTimeout(() => hook.release(), 20_000).unref(); // the held request ends even when an assertion below fails
      await eventually('alice\'s create holding the seat at the webhook', () => hook.held() === 1);
      const sentAt = Date.now();
      const waiting = aliceList();
      const rowsOf = (text: string) => text.split('\n').filter((l) => l.startsWith('one-seat-queued,'));
      const requests = await eventually('alice\'s list waiting in a queue', async () => {
        const rows = rowsOf(await dump('dump_requests'));
        return rows.length === 1 ? rows[0] : undefined;
      });
      const row = cells(requests);
      assert.deepEqual([row[0], row[1], row[3], row[4], row[6], row[7], row[8]], ['one-seat-queued', 'alice-queued', '0', 'alice', '1', '0', '0s'], requests);
      const queueIndex = Number(row[2]);
      assert.ok(queueIndex >= 0 && queueIndex < 4, requests);
      assert.match(row[5]!, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d*[1-9])?Z$/, 'RFC3339Nano in UTC');
      const arrived = Date.parse(row[5]!);
      assert.ok(arrived >= sentAt - 1000 && arrived <= Date.now(), `${row[5]} is when the list arrived`);

      const detailed = await dump('dump_requests?includeRequestDetails=1');
      const lines = detailed.split('\n');
      assert.deepEqual(cells(lines[0]!), [
        'PriorityLevelName', 'FlowSchemaName', 'QueueIndex', 'RequestIndexInQueue', 'FlowDistingsher', 'ArriveTime', 'InitialSeats', 'FinalSeats', 'AdditionalLatency',
        'UserName', 'Verb', 'APIPath', 'Namespace', 'Name', 'APIVersion', 'Resource', 'SubResource',
      ]);
      const detailRow = rowsOf(detailed);
      assert.equal(detailRow.length, 1, detailed);
      assert.deepEqual(cells(detailRow[0]!).slice(9), ['alice', 'list', '/api/v1/namespaces/default/configmaps', 'default', '', 'v1', 'configmaps', ''], detailRow[0]);
      // Go's tabwriter: each cell but the last padded to its column; every line's cells start at the same offsets.
      const starts = (line: string) => [...line.matchAll(/, */g)].map((m) => m.index + m[0].length);
      assert.deepEqual(starts(detailRow[0]!), starts(lines[0]!), detailed);

      // The queues: alice's list pending in its queue, her create executing (with its seat) in a queue of her hand.
      const queues = rowsOf(await dump('dump_queues')).map(cells);
      assert.equal(queues.length, 4, 'a row per queue');
      assert.deepEqual(queues.map((q) => q[1]), ['0', '1', '2', '3']);
      const sum = (i: number) => queues.reduce((n, q) => n + Number(q[i]), 0);
      assert.deepEqual([sum(2), sum(3), sum(4)], [1, 1, 1], 'one pending, one executing, one seat in use');
      const pending = queues[queueIndex]!;
      assert.deepEqual([pending[2], pending[6], pending[7], pending[8]], ['1', '1', '1', '0.00300000ss'], 'its sums: 1 initial seat, 1 seat at most, 3 ms of one seat');
      for (const q of queues) assert.match(q[5]!, /^\d+\.\d{8}ss$/);
      const levels = await dump('dump_priority_levels');
      assert.match(levels, /^one-seat-queued,\s+1,\s+false,\s+false,\s+1,\s+1$/m);

      hook.release();
      assert.equal((await held).status, 201);
      assert.equal((await waiting).status, 200, 'the waiting list is served once the seat is free');
      assert.deepEqual(rowsOf(await dump('dump_requests')), []);
      const drained = rowsOf(await dump('dump_queues')).map(cells);
      assert.deepEqual([drained.reduce((n, q) => n + Number(q[2]) + Number(q[3]), 0)], [0], 'nothing pending or executing');
    } finally {
      hook.release();
      await c.request('DELETE', '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/hold-configmaps-queued');
      await hook.close();
    }
  });
});

void describe('--enable-priority-and-fairness=false on the binary', () => {
  let c: BinCluster;
  before(async () => {
    c = await startBinCluster(['--enable-priority-and-fairness=false']);
  });
  after(async () => {
    await c?.stop();
  });

  void it('no PF headers, no dump; the bootstrap configuration is still written (the producer hook) and served', async () => {
    const r = await c.server.request('/api/v1/namespaces/default/configmaps');
    assert.equal(r.status, 200);
    assert.equal(r.headers['x-kubernetes-pf-flowschema-uid'], undefined);
    assert.equal(r.headers['x-kubernetes-pf-prioritylevel-uid'], undefined);
    for (const what of ['dump_priority_levels', 'dump_queues', 'dump_requests']) {
      assert.equal((await c.server.request(`/debug/api_priority_and_fairness/${what}`)).status, 404, what);
    }
    const livez = await c.server.request('/livez?verbose');
    const off = new Set(['poststarthook/priority-and-fairness-config-consumer', 'poststarthook/priority-and-fairness-filter']);
    assert.equal(livez.body, passedLines(['ping', 'log', 'etcd', ...POST_START_HOOKS.filter((h) => !off.has(h))], 'livez check passed'));
    const fs = await c.kubectl(['get', 'flowschemas', '-o', 'name']);
    assert.match(fs.stdout, /^flowschema\.flowcontrol\.apiserver\.k8s\.io\/global-default$/m);
  });
});

/** The pid of the bin/orch-apiserver process (node itself) whose command line has `arg`. */
/**
 * Sends alice (edit in default, through a RoleBinding named alice-edit<suffix>) to a one-seat priority level of
 * its own through a FlowSchema, and has a validating webhook (the holding one) called on her ConfigMap creates;
 * waits until her requests are classified by the new FlowSchema. Gives the FlowSchema and a create as alice.
 */
async function aliceOnOneSeatLevel(
  c: BinCluster,
  hook: Awaited<ReturnType<typeof holdingWebhook>>,
  o: { suffix: string; level: string; schema: string; precedence: number; limitResponse: Record<string, unknown>; webhook: string; config: string },
) {
  const flowcontrol = '/apis/flowcontrol.apiserver.k8s.io/v1beta2';
  assert.equal((await c.kubectl(['create', 'rolebinding', `alice-edit${o.suffix}`, '--clusterrole=edit', '--user=alice', '-n', 'default'])).code, 0);
  const pl = await c.request('POST', `${flowcontrol}/prioritylevelconfigurations`, {
    body: { apiVersion: 'flowcontrol.apiserver.k8s.io/v1beta2', kind: 'PriorityLevelConfiguration', metadata: { name: o.level }, spec: { type: 'Limited', limited: { assuredConcurrencyShares: 1, limitResponse: o.limitResponse } } },
  });
  assert.equal(pl.status, 201, pl.text);
  const fs = await c.request('POST', `${flowcontrol}/flowschemas`, {
    body: {
      apiVersion: 'flowcontrol.apiserver.k8s.io/v1beta2',
      kind: 'FlowSchema',
      metadata: { name: o.schema },
      spec: {
        priorityLevelConfiguration: { name: o.level },
        matchingPrecedence: o.precedence,
        distinguisherMethod: { type: 'ByUser' },
        rules: [{ subjects: [{ kind: 'User', user: { name: 'alice' } }], resourceRules: [{ verbs: ['*'], apiGroups: ['*'], resources: ['*'], namespaces: ['*'], clusterScope: true }] }],
      },
    },
  });
  assert.equal(fs.status, 201, fs.text);
  const hookConfig = await c.request('POST', '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations', {
    body: {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      metadata: { name: o.config },
      webhooks: [
        {
          name: o.webhook,
          clientConfig: { url: `https://127.0.0.1:${(hook.server.address() as AddressInfo).port}/validate`, caBundle: Buffer.from(hook.ca).toString('base64') },
          rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
          failurePolicy: 'Ignore',
          timeoutSeconds: 30,
          sideEffects: 'None',
          admissionReviewVersions: ['v1'],
        },
      ],
    },
  });
  assert.equal(hookConfig.status, 201, hookConfig.text);
  const list = () => c.server.request('/api/v1/namespaces/default/configmaps', { token: USER_TOKEN });
  await eventually('alice classified by the new FlowSchema', async () => (await list()).headers['x-kubernetes-pf-flowschema-uid'] === fs.json.metadata.uid);
  const post = (name: string) =>
    c.server.request('/api/v1/namespaces/default/configmaps', {
      token: USER_TOKEN,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name } }),
    });
  return { fs, pl, post };
}

async function listeningPid(arg: string): Promise<number> {
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const cmdline = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
    const argv = cmdline.split('\0');
    if (argv.includes(arg) && argv.some((a) => a.endsWith('bin/orch-apiserver'))) return Number(entry);
  }
  throw new Error(`no orch-apiserver process with ${arg}`);
}

/** A validating webhook answering only while not holding; held reviews are answered on release. */
async function holdingWebhook(): Promise<{ server: HttpsServer; ca: string; held: () => number; hold: boolean; calls: number; release(): void; close(): Promise<void> }> {
  const ca = await makeCA('grace-hook-ca');
  const serving = await makeServingCert(ca.cert, ca.key, 'grace-hook', ['127.0.0.1']);
  const waiting: { res: ServerResponse; uid: string }[] = [];
  const answer = (res: ServerResponse, uid: string) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid, allowed: true } }));
  };
  const state = {
    server: createHttpsServer({ cert: serving.cert, key: serving.key }, (req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (d: string) => (body += d));
      req.on('end', () => {
        const uid = (JSON.parse(body) as { request: { uid: string } }).request.uid;
        state.calls++;
        if (state.hold) waiting.push({ res, uid });
        else answer(res, uid);
      });
    }),
    ca: ca.cert,
    hold: false,
    calls: 0,
    held: () => waiting.length,
    release() {
      state.hold = false;
      for (const w of waiting.splice(0)) if (!w.res.writableEnded) answer(w.res, w.uid);
    },
    async close() {
      state.release();
      state.server.closeAllConnections();
      await new Promise((resolve) => state.server.close(resolve));
    },
  };
  await new Promise<void>((resolve) => state.server.listen(0, '127.0.0.1', resolve));
  return state;
}

void describe('--livez-grace-period on the binary', () => {
  let dir = '';
  let hook: Awaited<ReturnType<typeof holdingWebhook>>;
  const servers: BinServer[] = [];
  let pending: Promise<BinServer> | undefined;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'orch-optbin-grace-'));
    hook = await holdingWebhook();
  });
  after(async () => {
    hook?.release();
    if (pending) servers.push(await pending.catch(() => undefined as never));
    for (const s of servers) if (s) await s.stop();
    await hook?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  void it('an unfinished post-start hook is ok on /livez during the grace period and fails after it; /readyz fails until it finishes', async () => {
    const dataDir = join(dir, 'data');
    const certDir = join(dir, 'certs');
    // First start: a webhook on ClusterRole creates, and a bootstrap ClusterRole deleted.
    const first = await startBinCluster([], { dataDir, certDir });
    servers.push(first.server);
    const created = await first.request('POST', '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations', {
      body: {
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'ValidatingWebhookConfiguration',
        metadata: { name: 'hold-clusterroles' },
        webhooks: [
          {
            name: 'clusterroles.grace.test',
            clientConfig: { url: `https://127.0.0.1:${(hook.server.address() as AddressInfo).port}/validate`, caBundle: Buffer.from(hook.ca).toString('base64') },
            rules: [{ operations: ['CREATE'], apiGroups: ['rbac.authorization.k8s.io'], apiVersions: ['v1'], resources: ['clusterroles'] }],
            failurePolicy: 'Ignore',
            timeoutSeconds: 30,
            sideEffects: 'None',
            admissionReviewVersions: ['v1'],
          },
        ],
      },
    });
    assert.equal(created.status, 201, created.text);
    assert.equal((await first.kubectl(['delete', 'clusterrole', 'system:public-info-viewer'])).code, 0);
    await first.stop();
    servers.pop();

    // Second start, with the webhook holding: the RBAC bootstrap's create of the deleted role waits on it.
    hook.hold = true;
    const port = await freePort();
    pending = startBin(['--livez-grace-period=10s', `--secure-port=${port}`], { dataDir, certDir });
    const ca = await readFile(join(certDir, 'apiserver.crt'), 'utf8');
    const call = (to: number, path: string, method = 'GET') =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = httpsRequest(`https://127.0.0.1:${to}${path}`, { method, ca, agent: false, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }, (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (d: string) => (body += d));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        });
        req.on('error', reject);
        req.end();
      });
    const get = (path: string) => call(port, path);
    await eventually('the server listening, its RBAC bootstrap held at the webhook', async () => (await get('/livez').catch(() => undefined)) !== undefined && hook.held() > 0, { timeoutMs: 30_000 });

    // During the grace period: /livez passes, reporting the unfinished hook ok; /readyz and /healthz fail on it.
    const during = await get('/livez?verbose');
    assert.equal(during.status, 200, during.body);
    assert.match(during.body, /^\[\+\]poststarthook\/rbac\/bootstrap-roles ok$/m);
    assert.match(during.body, /livez check passed\n$/);
    assert.deepEqual(await get('/livez/poststarthook/rbac/bootstrap-roles'), { status: 200, body: 'ok' });
    assert.deepEqual(await get('/livez/poststarthook/rbac/bootstrap-roles?verbose'), { status: 200, body: 'ok' });
    const ready = await get('/readyz?verbose');
    assert.equal(ready.status, 500);
    assert.match(ready.body, /^\[-\]poststarthook\/rbac\/bootstrap-roles failed: reason withheld$/m);
    assert.deepEqual(await get('/readyz/poststarthook/rbac/bootstrap-roles'), { status: 500, body: 'internal server error: not finished\n' });
    assert.equal((await get('/healthz')).status, 500, '/healthz has no grace period');
    // Checks that are not post-start hooks have no grace period either (here they pass).
    assert.deepEqual(await get('/livez/etcd'), { status: 200, body: 'ok' });

    // After the grace period: /livez fails on the hook.
    const afterGrace = await eventually('/livez failing once the grace period is over', async () => {
      const r = await get('/livez?verbose');
      return r.status === 500 ? r : undefined;
    }, { timeoutMs: 20_000 });
    assert.match(afterGrace.body, /^\[-\]poststarthook\/rbac\/bootstrap-roles failed: reason withheld$/m);
    assert.match(afterGrace.body, /^\[\+\]poststarthook\/start-kube-apiserver-admission-initializer ok$/m);
    assert.match(afterGrace.body, /livez check failed\n$/);
    assert.deepEqual(await get('/livez/poststarthook/rbac/bootstrap-roles'), { status: 500, body: 'internal server error: not finished\n' });
    assert.deepEqual(await get('/livez/poststarthook/rbac/bootstrap-roles?verbose'), { status: 500, body: 'internal server error: not finished\n' });

    // Released, the hook finishes: everything passes and the role is back.
    hook.release();
    const s = await pending;
    servers.push(s);
    pending = undefined;
    await eventually('/readyz passing', async () => (await get('/readyz')).status === 200, { timeoutMs: 20_000 });
    assert.deepEqual(await get('/livez'), { status: 200, body: 'ok' });
    assert.equal((await get('/apis/rbac.authorization.k8s.io/v1/clusterroles/system:public-info-viewer')).status, 200);

    // A SIGTERM while a hook is held stops the server as at any other time.
    assert.equal((await call(port, '/apis/rbac.authorization.k8s.io/v1/clusterroles/system:public-info-viewer', 'DELETE')).status, 200);
    await s.stop();
    servers.pop();
    hook.hold = true;
    const port3 = await freePort();
    const third = startBin([`--secure-port=${port3}`], { dataDir, certDir });
    pending = third;
    await eventually('the third start held at the webhook', async () => (await call(port3, '/livez').catch(() => undefined)) !== undefined && hook.held() > 0, { timeoutMs: 30_000 });
    const pid = await listeningPid(`--secure-port=${port3}`);
    process.kill(pid, 'SIGTERM');
    const refused = await third.then(
      () => assert.fail('the server finished starting after SIGTERM'),
      (err: Error) => err.message,
    );
    pending = undefined;
    assert.match(refused, /orch-apiserver: SIGTERM received, shutting down$/m);
    assert.deepEqual(refused.split('\n').filter((l) => l.startsWith('orch-apiserver: ') && !l.includes('SIGTERM received')), [], 'no start error reported');
    hook.release();
  });
});
