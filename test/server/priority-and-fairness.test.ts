/**
 * API Priority and Fairness end to end: the bootstrap FlowSchemas and PriorityLevelConfigurations through
 * kubectl, a FlowSchema that sends one user's requests to a level with one seat and a queue of one
 * (requests held by a slowly sent body queue, the next ones get 429 with the PF headers), system:masters
 * exempt, Dangling conditions, the autoupdate-spec annotation, validation, and the max-in-flight fallback
 * with --enable-priority-and-fairness=false. Work estimation: a list as wide as its resource's stored
 * object count waits behind a narrow request at a level with two seats, and holds back the narrow
 * requests behind it; the width estimator and seat accounting (with additional latency) as units.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { request as httpsRequest, type RequestOptions } from 'node:https';
import type { IncomingHttpHeaders } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { startCluster, type TestCluster } from '../helpers/cluster.js';
import { requireBinary } from '../helpers/binaries.js';
import { eventually } from '../helpers/eventually.js';
import { ensureApfBootstrap } from '../../src/server/apf-bootstrap.js';
import { dealHand, estimateWork, QueueSet } from '../../src/filters/apf/index.js';
import { requestInfo } from '../../src/endpoints/requestinfo.js';

const GROUP = '/apis/flowcontrol.apiserver.k8s.io/v1beta2';
const SLOW_TOKEN = 'slow-user-token';
const WIDE_TOKEN = 'wide-user-token';

interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
}

/** A POST whose body is held back until finish() is called: it keeps its seat (or its place in a queue) meanwhile. */
function heldPost(c: TestCluster, token: string, name: string): { reply: Promise<Reply>; finish(): void } {
  const body = Buffer.from(JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name } }));
  const opts: RequestOptions = {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': String(body.length) },
    ca: c.cp.server.caCert,
    agent: false,
  };
  let req!: ReturnType<typeof httpsRequest>;
  const reply = new Promise<Reply>((resolve, reject) => {
    req = httpsRequest(`${c.url}/api/v1/namespaces/default/configmaps`, opts, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.push(d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString() }));
    });
    req.on('error', reject);
  });
  req.write(body.subarray(0, 5));
  return { reply, finish: () => req.end(body.subarray(5)) };
}

function get(c: TestCluster, token: string, path: string): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(`${c.url}${path}`, { headers: { authorization: `Bearer ${token}` }, ca: c.cp.server.caCert, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.push(d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString() }));
    });
    req.on('error', reject);
    req.end();
  });
}

async function tokenFile(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'orch-apf-'));
  const file = join(dir, 'tokens.csv');
  await writeFile(file, `e2e-admin-token,admin,admin,"system:masters"\n${SLOW_TOKEN},slowuser,slowuser,"developers"\n${WIDE_TOKEN},wideuser,wideuser,"developers"\n`);
  return file;
}

void describe('API Priority and Fairness', () => {
  let c: TestCluster;
  let fsUID = '';
  let plUID = '';

  before(async () => {
    // SCL = 2: every Limited level gets ceil(2 * ACS / ΣACS) = 1 seat.
    c = await startCluster([
      `--token-auth-file=${await tokenFile()}`,
      '--max-requests-inflight=1',
      '--max-mutating-requests-inflight=1',
      '--kvstore-count-metric-poll-period=1s',
    ]);
  });
  after(async () => {
    await c?.stop();
  });

  void it('creates the bootstrap configuration, listed by kubectl get as Kubernetes prints it', async (t) => {
    if (!requireBinary(t, 'kubectl')) return;
    const r = await c.kubectl(['get', 'flowschemas,prioritylevelconfigurations']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /NAME\s+PRIORITYLEVEL\s+MATCHINGPRECEDENCE\s+DISTINGUISHERMETHOD\s+AGE\s+MISSINGPL/);
    assert.match(r.stdout, /flowschema\.flowcontrol\.apiserver\.k8s\.io\/exempt\s+exempt\s+1\s+<none>\s+\S+\s+False/);
    assert.match(r.stdout, /flowschema\.flowcontrol\.apiserver\.k8s\.io\/catch-all\s+catch-all\s+10000\s+ByUser\s+\S+\s+False/);
    for (const fs of ['probes', 'system-leader-election', 'endpoint-controller', 'workload-leader-election', 'system-node-high', 'system-nodes', 'kube-controller-manager', 'kube-scheduler', 'kube-system-service-accounts', 'service-accounts', 'global-default']) {
      assert.match(r.stdout, new RegExp(`flowschema\\.flowcontrol\\.apiserver\\.k8s\\.io/${fs}\\s`));
    }
    assert.match(r.stdout, /NAME\s+TYPE\s+ASSUREDCONCURRENCYSHARES\s+QUEUES\s+HANDSIZE\s+QUEUELENGTHLIMIT\s+AGE/);
    assert.match(r.stdout, /prioritylevelconfiguration\.flowcontrol\.apiserver\.k8s\.io\/exempt\s+Exempt\s+<none>\s+<none>\s+<none>\s+<none>/);
    assert.match(r.stdout, /prioritylevelconfiguration\.flowcontrol\.apiserver\.k8s\.io\/catch-all\s+Limited\s+5\s+<none>\s+<none>\s+<none>/);
    assert.match(r.stdout, /prioritylevelconfiguration\.flowcontrol\.apiserver\.k8s\.io\/workload-low\s+Limited\s+100\s+128\s+6\s+50/);
    const v1beta1 = await c.request('GET', '/apis/flowcontrol.apiserver.k8s.io/v1beta1/flowschemas/exempt');
    assert.equal(v1beta1.status, 200);
    assert.equal(v1beta1.json.apiVersion, 'flowcontrol.apiserver.k8s.io/v1beta1');
    assert.equal(v1beta1.json.metadata.annotations['apf.kubernetes.io/autoupdate-spec'], 'true');
  });

  void it('validates priority levels and flow schemas with Kubernetes messages, and defaults them', async () => {
    const bad = await c.request('POST', `${GROUP}/prioritylevelconfigurations`, {
      body: { metadata: { name: 'bad' }, spec: { type: 'Limited', limited: { assuredConcurrencyShares: 1, limitResponse: { type: 'Queue', queuing: { queues: 2, handSize: 3, queueLengthLimit: 1 } } } } },
    });
    assert.equal(bad.status, 422);
    assert.match(bad.json.message, /spec\.limited\.limitResponse\.queuing\.handSize: Invalid value: 3: should not be greater than queues \(2\)/);
    const fs = await c.request('POST', `${GROUP}/flowschemas`, { body: { metadata: { name: 'bad' }, spec: { priorityLevelConfiguration: { name: 'x' }, matchingPrecedence: 1, rules: [{ subjects: [] }] } } });
    assert.equal(fs.status, 422);
    assert.match(fs.json.message, /only the schema named 'exempt' may have matchingPrecedence 1/);
    assert.match(fs.json.message, /spec\.rules\[0\]\.subjects: Required value: subjects must contain at least one value/);
    const defaulted = await c.request('POST', `${GROUP}/prioritylevelconfigurations?dryRun=All`, {
      body: { metadata: { name: 'defaults' }, spec: { type: 'Limited', limited: { limitResponse: { type: 'Queue', queuing: {} } } } },
    });
    assert.equal(defaulted.status, 201, defaulted.text);
    assert.deepEqual(defaulted.json.spec.limited, { assuredConcurrencyShares: 30, limitResponse: { type: 'Queue', queuing: { queues: 64, handSize: 8, queueLengthLimit: 50 } } });
  });

  void it('queues a flow at a level with one seat, then answers 429 with the PF headers; system:masters is exempt', async () => {
    const pl = await c.request('POST', `${GROUP}/prioritylevelconfigurations`, {
      body: { metadata: { name: 'one-seat' }, spec: { type: 'Limited', limited: { assuredConcurrencyShares: 1, limitResponse: { type: 'Queue', queuing: { queues: 1, handSize: 1, queueLengthLimit: 1 } } } } },
    });
    assert.equal(pl.status, 201, pl.text);
    const fs = await c.request('POST', `${GROUP}/flowschemas`, {
      body: {
        metadata: { name: 'slow-user' },
        spec: {
          priorityLevelConfiguration: { name: 'one-seat' },
          matchingPrecedence: 100,
          distinguisherMethod: { type: 'ByUser' },
          rules: [{ subjects: [{ kind: 'User', user: { name: 'slowuser' } }], resourceRules: [{ verbs: ['*'], apiGroups: ['*'], resources: ['*'], namespaces: ['*'], clusterScope: true }] }],
        },
      },
    });
    assert.equal(fs.status, 201, fs.text);
    fsUID = fs.json.metadata.uid as string;
    plUID = pl.json.metadata.uid as string;
    await eventually('the new FlowSchema classifies slowuser', async () => (await get(c, SLOW_TOKEN, '/api/v1/namespaces/default/configmaps')).headers['x-kubernetes-pf-flowschema-uid'] === fsUID);

    const first = heldPost(c, SLOW_TOKEN, 'first');
    await eventually('the first request holds the seat', () => c.cp.server.flowControl!.priorityLevels().find((l) => l.name === 'one-seat')!.queueSet!.executing === 1);
    const second = heldPost(c, SLOW_TOKEN, 'second');
    second.finish();
    await eventually('the second request waits in the queue', () => c.cp.server.flowControl!.priorityLevels().find((l) => l.name === 'one-seat')!.queueSet!.waiting === 1);

    const third = await get(c, SLOW_TOKEN, '/api/v1/namespaces/default/configmaps');
    assert.equal(third.status, 429);
    assert.equal(third.headers['retry-after'], '1');
    assert.equal(third.text, 'Too many requests, please try again later.\n');
    assert.equal(third.headers['x-kubernetes-pf-flowschema-uid'], fsUID);
    assert.equal(third.headers['x-kubernetes-pf-prioritylevel-uid'], plUID);

    // An admin is classified as exempt and served while the level is full.
    const exempt = await c.request('GET', `${GROUP}/flowschemas/exempt`);
    const admin = await c.request('GET', '/api/v1/namespaces/default/configmaps');
    assert.equal(admin.status, 200);
    assert.equal(admin.headers['x-kubernetes-pf-flowschema-uid'], exempt.json.metadata.uid);

    first.finish();
    assert.equal((await first.reply).status, 201);
    assert.equal((await second.reply).status, 201);
    const metrics = await c.request('GET', '/metrics');
    assert.match(metrics.text, /apiserver_flowcontrol_rejected_requests_total\{flow_schema="slow-user",priority_level="one-seat",reason="queue-full"\} 1/);
    assert.match(metrics.text, /apiserver_flowcontrol_request_concurrency_limit\{priority_level="one-seat"\} 1/);
    assert.match(metrics.text, /apiserver_flowcontrol_dispatched_requests_total\{flow_schema="slow-user",priority_level="one-seat"\} [3-9]/);
  });

  void it('makes a list as wide as its object count: it waits for two free seats and holds back narrower requests', async () => {
    // SCL 2: ceil(2 × 100000 / (ΣACS of the others + 100000)) = 2 seats here, 1 for every other level.
    const pl = await c.request('POST', `${GROUP}/prioritylevelconfigurations`, {
      body: { metadata: { name: 'two-seats' }, spec: { type: 'Limited', limited: { assuredConcurrencyShares: 100000, limitResponse: { type: 'Queue', queuing: { queues: 1, handSize: 1, queueLengthLimit: 10 } } } } },
    });
    assert.equal(pl.status, 201, pl.text);
    const fs = await c.request('POST', `${GROUP}/flowschemas`, {
      body: {
        metadata: { name: 'wide-user' },
        spec: {
          priorityLevelConfiguration: { name: 'two-seats' },
          matchingPrecedence: 100,
          rules: [{ subjects: [{ kind: 'User', user: { name: 'wideuser' } }], resourceRules: [{ verbs: ['*'], apiGroups: ['*'], resources: ['*'], namespaces: ['*'], clusterScope: true }] }],
        },
      },
    });
    assert.equal(fs.status, 201, fs.text);
    const level = () => c.cp.server.flowControl!.priorityLevels().find((l) => l.name === 'two-seats')?.queueSet;
    await eventually('the level has two seats', () => level()?.limit === 2);
    await c.request('POST', '/api/v1/namespaces', { body: { metadata: { name: 'wide' } } });
    for (let i = 0; i < 60; i++) {
      const r = await c.request('POST', '/api/v1/namespaces/wide/configmaps', { body: { metadata: { name: `cm-${i}` } } });
      assert.equal(r.status, 201, r.text);
    }
    await eventually('the configmaps are counted', () => (c.cp.server.flowControl!.objectCount('configmaps') ?? 0) >= 60);
    await eventually('the new FlowSchema classifies wideuser', async () => (await get(c, WIDE_TOKEN, '/api/v1/namespaces/wide/configmaps/cm-0')).headers['x-kubernetes-pf-flowschema-uid'] === fs.json.metadata.uid);

    // A narrow list (limit=1: 2 objects) fits next to a held request; a full list from storage (2 × ≥60 objects: 2 seats) does not.
    const held = heldPost(c, WIDE_TOKEN, 'held-wide');
    await eventually('the held request takes one seat', () => level()!.seatsInUse === 1);
    assert.equal((await get(c, WIDE_TOKEN, '/api/v1/namespaces/wide/configmaps?limit=1')).status, 200);
    const metrics = await c.request('GET', '/metrics');
    assert.match(metrics.text, /apiserver_flowcontrol_request_concurrency_in_use\{priority_level="two-seats",flow_schema="wide-user"\} 1\n/);
    const wide = get(c, WIDE_TOKEN, '/api/v1/namespaces/wide/configmaps');
    await eventually('the wide list waits', () => level()!.waiting === 1);
    const narrow = get(c, WIDE_TOKEN, '/api/v1/namespaces/wide/configmaps/cm-1');
    await eventually('the narrow get queues behind it', () => level()!.waiting === 2);
    assert.equal(level()!.seatsInUse, 1);
    held.finish();
    assert.equal((await held.reply).status, 201);
    const [w, n] = await Promise.all([wide, narrow]);
    assert.equal(w.status, 200);
    assert.ok((JSON.parse(w.text) as { items: unknown[] }).items.length >= 60);
    assert.equal(n.status, 200);
    const after = (await c.request('GET', '/metrics')).text;
    assert.match(after, /apiserver_flowcontrol_work_estimated_seats_bucket\{le="1",priority_level="two-seats",flow_schema="wide-user"\} [3-9]/);
    assert.match(after, /apiserver_flowcontrol_work_estimated_seats_bucket\{le="2",priority_level="two-seats",flow_schema="wide-user"\} [4-9]/);
    assert.equal(level()!.seatsInUse, 0);
  });

  void it('estimates work as Kubernetes: lists by object count and where they are served, mutations by watches', () => {
    const info = (method: string, path: string, q = '') => [requestInfo(method, path, new URLSearchParams(q)), new URLSearchParams(q)] as const;
    const deps = (objects: number | undefined, watches = 0) => ({ objectCount: () => objects, watchCount: () => watches });
    const seats = (method: string, path: string, q: string, objects: number | undefined, watches = 0) => estimateWork(...info(method, path, q), deps(objects, watches));
    const pods = '/api/v1/namespaces/a/pods';
    assert.equal(seats('GET', pods, '', 450, 0).initialSeats, 9); // from storage: 2 × 450 / 100
    assert.equal(seats('GET', pods, 'limit=100', 450).initialSeats, 2); // 2 × limit
    assert.equal(seats('GET', pods, 'labelSelector=a%3Db&limit=100', 450).initialSeats, 6); // count + limit
    assert.equal(seats('GET', pods, 'resourceVersion=0&limit=100', 450).initialSeats, 5); // watch cache: the count
    assert.equal(seats('GET', pods, 'resourceVersion=5&limit=100', 450).initialSeats, 2); // a limit goes to storage
    assert.equal(seats('GET', pods, 'resourceVersion=5&resourceVersionMatch=Exact', 450).initialSeats, 9);
    assert.equal(seats('GET', pods, '', 100_000).initialSeats, 10); // at most 10
    assert.equal(seats('GET', pods, '', 0).initialSeats, 1); // at least 1
    assert.equal(seats('GET', pods, '', undefined).initialSeats, 1); // not counted here
    assert.equal(seats('GET', `${pods}/x`, '', 100_000).initialSeats, 1); // get
    assert.deepEqual(seats('POST', pods, '', 0, 9), { initialSeats: 1, finalSeats: 0, additionalLatencyMs: 0 });
    assert.deepEqual(seats('PUT', `${pods}/x`, '', 0, 25), { initialSeats: 1, finalSeats: 3, additionalLatencyMs: 5 });
    assert.equal(seats('DELETE', `${pods}/x`, '', 0, 1000).finalSeats, 10);
  });

  void it('holds a wide request\'s seats, and a finished one\'s during its additional latency', async () => {
    const qs = new QueueSet(3, { queues: 1, handSize: 1, queueLengthLimit: 10 }, 10_000);
    const a = qs.acquire(() => 1, undefined, 2);
    assert.ok(typeof a === 'object' && !(a instanceof Promise));
    assert.equal(qs.seatsInUse, 2);
    const b = qs.acquire(() => 1, undefined, 2); // does not fit: queued
    assert.ok(b instanceof Promise);
    const c1 = qs.acquire(() => 1, undefined, 1); // would fit, but waits behind b
    assert.ok(c1 instanceof Promise);
    a.release(30);
    assert.equal(qs.executing, 0);
    assert.equal(qs.seatsInUse, 2);
    assert.equal(qs.waiting, 2);
    // Once a's seats come back, b (2 seats) and then c (1 seat) start together.
    const gotB = await b;
    assert.ok(typeof gotB === 'object');
    const gotC = await c1;
    assert.ok(typeof gotC === 'object');
    assert.equal(qs.seatsInUse, 3);
    assert.equal(qs.executing, 2);
    // Wider than the whole limit: runs alone once every seat is free.
    const huge = qs.acquire(() => 1, undefined, 10);
    assert.ok(huge instanceof Promise);
    gotB.release();
    gotC.release();
    const gotHuge = await huge;
    assert.ok(typeof gotHuge === 'object');
    assert.equal(qs.seatsInUse, 10);
    gotHuge.release();
    assert.equal(qs.seatsInUse, 0);
  });

  void it('marks a FlowSchema whose priority level is missing as Dangling', async () => {
    const fs = await c.request('POST', `${GROUP}/flowschemas`, {
      body: { metadata: { name: 'orphan' }, spec: { priorityLevelConfiguration: { name: 'nowhere' }, rules: [{ subjects: [{ kind: 'Group', group: { name: 'x' } }], nonResourceRules: [{ verbs: ['get'], nonResourceURLs: ['/x'] }] }] } },
    });
    assert.equal(fs.status, 201, fs.text);
    assert.equal(fs.json.spec.matchingPrecedence, 1000);
    const cond = await eventually('Dangling=True', async () => {
      const r = await c.request('GET', `${GROUP}/flowschemas/orphan`);
      return (r.json.status?.conditions as { type: string; status: string; reason: string; message: string }[] | undefined)?.find((x) => x.type === 'Dangling' && x.status === 'True');
    });
    assert.equal(cond.reason, 'NotFound');
    assert.equal(cond.message, 'This FlowSchema references the PriorityLevelConfiguration object named "nowhere" but there is no such object');
  });

  void it('restores mandatory objects and leaves suggested ones whose autoupdate-spec is false', async () => {
    const patch = (path: string, body: unknown) => c.request('PATCH', path, { body, contentType: 'application/merge-patch+json' });
    assert.equal((await patch(`${GROUP}/prioritylevelconfigurations/catch-all`, { spec: { limited: { assuredConcurrencyShares: 50 } } })).status, 200);
    const low = await patch(`${GROUP}/prioritylevelconfigurations/workload-low`, {
      metadata: { annotations: { 'apf.kubernetes.io/autoupdate-spec': 'false' } },
      spec: { limited: { assuredConcurrencyShares: 7 } },
    });
    assert.equal(low.status, 200, low.text);
    const high = await patch(`${GROUP}/prioritylevelconfigurations/workload-high`, { spec: { limited: { assuredConcurrencyShares: 9 } } });
    assert.equal(high.status, 200);
    await ensureApfBootstrap(c.cp.registry);
    const read = async (n: string) => (await c.request('GET', `${GROUP}/prioritylevelconfigurations/${n}`)).json;
    assert.equal((await read('catch-all')).spec.limited.assuredConcurrencyShares, 5);
    assert.equal((await read('workload-low')).spec.limited.assuredConcurrencyShares, 7);
    // Edited without the annotation changed: generation 2 under 'true' is still kept up to date.
    assert.equal((await read('workload-high')).spec.limited.assuredConcurrencyShares, 40);
    // A deleted suggested object comes back.
    assert.equal((await c.request('DELETE', `${GROUP}/flowschemas/global-default`)).status, 200);
    await ensureApfBootstrap(c.cp.registry);
    assert.equal((await c.request('GET', `${GROUP}/flowschemas/global-default`)).status, 200);
  });

  void it('deals distinct queues from a flow hash', () => {
    for (const hash of [0, 1, 12345, 2 ** 52 + 7]) {
      const hand = dealHand(hash, 8, 4);
      assert.equal(new Set(hand).size, 4);
      assert.ok(hand.every((q) => q >= 0 && q < 8));
    }
  });
});

void describe('--enable-priority-and-fairness=false', () => {
  void it('falls back to the max-in-flight limits (no PF headers) and still serves the configuration', async () => {
    const c = await startCluster([`--token-auth-file=${await tokenFile()}`, '--enable-priority-and-fairness=false', '--max-mutating-requests-inflight=1']);
    try {
      assert.equal(c.cp.server.flowControl, undefined);
      const held = heldPost(c, SLOW_TOKEN, 'held');
      let over: Reply | undefined;
      await eventually('a second mutating request is refused', async () => {
        const r = heldPost(c, SLOW_TOKEN, `probe-${Date.now()}`);
        r.finish();
        over = await r.reply;
        return over.status === 429;
      });
      assert.equal(over!.headers['x-kubernetes-pf-flowschema-uid'], undefined);
      held.finish();
      assert.equal((await held.reply).status, 201);
      const list = await c.request('GET', `${GROUP}/flowschemas`);
      assert.equal(list.status, 200);
      assert.equal(list.headers['x-kubernetes-pf-flowschema-uid'], undefined);
      assert.ok((list.json.items as { metadata: { name: string } }[]).some((i) => i.metadata.name === 'catch-all'));
    } finally {
      await c.stop();
    }
  });
});
