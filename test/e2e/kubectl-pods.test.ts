/**
 * Pods through kubectl (the one on PATH, 1.27 and 1.33) against a server this test starts: create from YAML,
 * the tables (default and wide), the status subresource, field selectors on spec.nodeName (list and watch),
 * graceful deletion (the pod stays with a deletionTimestamp until a delete with grace period 0, or
 * --force --grace-period=0), binding, eviction, logs from a fake node agent, events in describe and get,
 * and explain.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:https';
import type { TLSSocket } from 'node:tls';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { requireBinary } from '../helpers/binaries.js';
import { kubectlPath, startCluster, type TestCluster } from '../helpers/cluster.js';
import { ensureServingCert, makeCA, makeClientCert } from '../../src/server/certs.js';

type KObjectLike = { metadata: { name: string } };

/** A node agent's log endpoint, as kubelet serves it: records what it was asked, answers with fixed lines. */
interface FakeAgent {
  server: Server;
  port: number;
  caFile: string;
  requests: { path: string; query: URLSearchParams; clientCN: string }[];
}

async function startFakeAgent(dir: string, clientCA: string): Promise<FakeAgent> {
  const serving = await ensureServingCert({ certDir: join(dir, 'agent'), hosts: [] });
  const caFile = join(dir, 'agent-ca.crt');
  await writeFile(caFile, serving.caCert);
  const requests: FakeAgent['requests'] = [];
  const server = createServer({ cert: serving.cert, key: serving.key, ca: clientCA, requestCert: true, rejectUnauthorized: false }, (req, res) => {
    const url = new URL(req.url ?? '/', 'https://agent');
    const peer = (req.socket as TLSSocket).getPeerCertificate();
    requests.push({ path: url.pathname, query: url.searchParams, clientCN: typeof peer?.subject?.CN === 'string' ? peer.subject.CN : '' });
    const m = /^\/containerLogs\/([^/]+)\/([^/]+)\/([^/]+)$/.exec(url.pathname);
    if (!m) {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('404 page not found');
      return;
    }
    if (m[3] === 'gone') {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end(`container "gone" in pod "${m[2]}" is not available`);
      return;
    }
    let lines = ['line 1', 'line 2', `from ${m[1]}/${m[2]}/${m[3]}`];
    const tail = url.searchParams.get('tailLines');
    if (tail !== null) lines = lines.slice(-Number(tail));
    res.writeHead(200, { 'Content-Type': 'text/plain' });
    res.end(lines.map((l) => (url.searchParams.get('timestamps') === 'true' ? `2024-01-01T00:00:00.000000000Z ${l}` : l)).join('\n') + '\n');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as { port: number }).port, caFile, requests };
}

const present = requireBinary(undefined, 'kubectl') !== null;
if (!present && process.env.CI === 'true') throw new Error('kubectl is required under CI=true');
const skip = !present && 'kubectl not installed';

const POD_YAML = (name: string, node?: string) => `apiVersion: v1
kind: Pod
metadata:
  name: ${name}
  labels: {app: web}
spec:
${node ? `  nodeName: ${node}\n` : ''}  containers:
  - name: app
    image: busybox:1.36
    command: [sh, -c, 'echo hello; sleep 3600']
    ports:
    - containerPort: 8080
    resources:
      limits: {cpu: 100m, memory: 64Mi}
`;

describe('kubectl: pods', () => {
  let c: TestCluster;
  const k = (args: string[], opts: { input?: string; version?: string } = {}) => c.kubectl(args, opts);
  const ok = async (args: string[], opts: { input?: string; version?: string } = {}) => {
    const r = await k(args, opts);
    assert.equal(r.code, 0, `kubectl ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };
  const json = async (args: string[]) => JSON.parse(await ok([...args, '-o', 'json']));

  let agent: FakeAgent;
  let dir: string;

  before(async () => {
    if (!present) return;
    dir = await mkdtemp(join(tmpdir(), 'orch-pods-'));
    // The server's client certificate for agents, from a CA the fake agent trusts.
    const ca = await makeCA('agent-client-ca');
    const client = await makeClientCert({ caCert: ca.cert, caKey: ca.key, commonName: 'orch-apiserver-orchlet-client' });
    await writeFile(join(dir, 'client.crt'), client.cert);
    await writeFile(join(dir, 'client.key'), client.key);
    agent = await startFakeAgent(dir, ca.cert);
    c = await startCluster([
      `--orchlet-certificate-authority=${agent.caFile}`,
      `--orchlet-client-certificate=${join(dir, 'client.crt')}`,
      `--orchlet-client-key=${join(dir, 'client.key')}`,
    ]);
  });
  after(async () => {
    await c?.stop();
    agent?.server.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('create from YAML: defaults, QoS, tables, status subresource', { skip }, async () => {
    assert.match(await ok(['create', '-f', '-'], { input: POD_YAML('web', 'n1') }), /pod\/web created/);
    const pod = await json(['get', 'pod', 'web']);
    assert.equal(pod.status.phase, 'Pending');
    assert.equal(pod.status.qosClass, 'Guaranteed');
    assert.equal(pod.spec.restartPolicy, 'Always');
    assert.equal(pod.spec.dnsPolicy, 'ClusterFirst');
    assert.equal(pod.spec.schedulerName, 'default-scheduler');
    assert.equal(pod.spec.terminationGracePeriodSeconds, 30);
    assert.equal(pod.spec.enableServiceLinks, true);
    assert.equal(pod.spec.priority, 0);
    assert.deepEqual(pod.spec.securityContext, {});
    const ctr = pod.spec.containers[0];
    assert.equal(ctr.imagePullPolicy, 'IfNotPresent');
    assert.equal(ctr.terminationMessagePath, '/dev/termination-log');
    assert.equal(ctr.terminationMessagePolicy, 'File');
    assert.equal(ctr.ports[0].protocol, 'TCP');
    assert.deepEqual(ctr.resources.requests, { cpu: '100m', memory: '64Mi' });

    assert.match(await ok(['get', 'pods']), /^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\nweb\s+0\/1\s+Pending\s+0\s+\S+\n$/);
    assert.match(
      await ok(['get', 'po', '-o', 'wide']),
      /^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\s+IP\s+NODE\s+NOMINATED NODE\s+READINESS GATES\nweb\s+0\/1\s+Pending\s+0\s+\S+\s+<none>\s+n1\s+<none>\s+<none>\n$/,
    );

    const now = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
    const status = {
      status: {
        phase: 'Running',
        podIP: '10.1.2.3',
        hostIP: '127.0.0.1',
        startTime: now,
        conditions: [{ type: 'Ready', status: 'True' }],
        containerStatuses: [
          { name: 'app', ready: true, restartCount: 2, image: 'busybox:1.36', imageID: '', state: { running: { startedAt: now } }, lastState: { terminated: { exitCode: 1, finishedAt: now } } },
        ],
      },
    };
    await ok(['patch', 'pod', 'web', '--subresource=status', '--type=merge', '-p', JSON.stringify(status)]);
    const running = await json(['get', 'pod', 'web']);
    assert.equal(running.status.phase, 'Running');
    assert.deepEqual(running.status.podIPs, [{ ip: '10.1.2.3' }]);
    assert.equal(running.status.qosClass, 'Guaranteed', 'a status patch keeps what it does not name');
    assert.match(await ok(['get', 'pods', '-o', 'wide']), /\nweb\s+1\/1\s+Running\s+2 \(\d+s ago\)\s+\S+\s+10\.1\.2\.3\s+n1\s+<none>\s+<none>\n$/);

    // The main resource keeps status; the status subresource cannot move the pod to another node.
    await ok(['patch', 'pod', 'web', '--type=merge', '-p', '{"status":{"phase":"Failed"}}']);
    assert.equal((await json(['get', 'pod', 'web'])).status.phase, 'Running');
    await ok(['patch', 'pod', 'web', '--subresource=status', '--type=merge', '-p', '{"spec":{"nodeName":"n2"}}']);
    assert.equal((await json(['get', 'pod', 'web'])).spec.nodeName, 'n1');
  });

  it('validation and the update rules', { skip }, async () => {
    const bad = await k(['create', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'bad' },
        spec: {
          restartPolicy: 'Sometimes',
          containers: [
            { name: 'a', image: 'x', volumeMounts: [{ name: 'missing', mountPath: '/data' }] },
            { name: 'a', resources: { requests: { cpu: '2' }, limits: { cpu: '1' } } },
          ],
        },
      }),
    });
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /The Pod "bad" is invalid: /);
    assert.match(bad.stderr, /spec\.containers\[0\]\.volumeMounts\[0\]\.name: Not found: "missing"/);
    assert.match(bad.stderr, /spec\.containers\[1\]\.name: Duplicate value: "a"/);
    assert.match(bad.stderr, /spec\.containers\[1\]\.image: Required value/);
    assert.match(bad.stderr, /spec\.containers\[1\]\.resources\.requests: Invalid value: "2": must be less than or equal to cpu limit/);
    assert.match(bad.stderr, /spec\.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"/);

    await ok(['create', '-f', '-'], { input: POD_YAML('upd') });
    // The image may change; other fields may not.
    await ok(['set', 'image', 'pod/upd', 'app=busybox:1.37']);
    assert.equal((await json(['get', 'pod', 'upd'])).spec.containers[0].image, 'busybox:1.37');
    const forbidden = await k(['patch', 'pod', 'upd', '--type=json', '-p', '[{"op":"replace","path":"/spec/containers/0/command","value":["true"]}]']);
    assert.notEqual(forbidden.code, 0);
    assert.match(forbidden.stderr, /The Pod "upd" is invalid: spec: Forbidden: pod updates may not change fields other than `spec\.containers\[\*\]\.image`, `spec\.initContainers\[\*\]\.image`, `spec\.activeDeadlineSeconds`, `spec\.tolerations` \(only additions to existing tolerations\) or `spec\.terminationGracePeriodSeconds`/);
    await ok(['delete', 'pod', 'upd']);
  });

  it('field selectors on spec.nodeName: list and watch across namespaces', { skip }, async () => {
    await ok(['create', 'namespace', 'other']);
    await ok(['create', '-n', 'other', '-f', '-'], { input: POD_YAML('o1', 'n2') });
    await ok(['create', '-f', '-'], { input: POD_YAML('d2', 'n2') });
    assert.deepEqual(
      (await ok(['get', 'pods', '-A', '--field-selector', 'spec.nodeName=n2', '-o', 'jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name} {end}'])).trim().split(' ').sort(),
      ['default/d2', 'other/o1'],
    );
    assert.equal((await ok(['get', 'pods', '--field-selector', 'spec.nodeName=n1,status.phase=Running', '-o', 'name'])).trim(), 'pod/web');
    const unsupported = await k(['get', 'pods', '--field-selector', 'spec.hostname=x']);
    assert.notEqual(unsupported.code, 0);
    assert.match(unsupported.stderr, /field label not supported: spec\.hostname/);

    // A watch by node sees pods bound to that node only.
    const watch = c.request('GET', '/api/v1/pods?watch=true&timeoutSeconds=2&fieldSelector=' + encodeURIComponent('spec.nodeName=n2'));
    const reply = await watch;
    const names = reply.text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; object: { metadata: { name: string } } })
      .map((e) => `${e.type} ${e.object.metadata.name}`)
      .sort();
    assert.deepEqual(names, ['ADDED d2', 'ADDED o1']);
    await ok(['delete', 'pod', 'd2', '--wait=false']);
    await ok(['delete', 'namespace', 'other', '--wait=false']);
  });

  it('graceful deletion: stays with a deletionTimestamp until grace 0; --force deletes at once', { skip }, async () => {
    await ok(['create', '-f', '-'], { input: POD_YAML('g1', 'n1') });
    assert.match(await ok(['delete', 'pod', 'g1', '--wait=false', '--grace-period=60']), /pod "g1" deleted/);
    const marked = await json(['get', 'pod', 'g1']);
    assert.equal(marked.metadata.deletionGracePeriodSeconds, 60);
    assert.ok(Date.parse(marked.metadata.deletionTimestamp) > Date.now() + 50_000, 'deletionTimestamp is now + grace');
    assert.match(await ok(['get', 'pods', 'g1']), /\ng1\s+0\/1\s+Terminating\s+/);
    // A longer grace period does not extend it; a shorter one shortens it.
    const same = await c.request('DELETE', '/api/v1/namespaces/default/pods/g1', { body: { gracePeriodSeconds: 90 } });
    assert.equal(same.status, 200);
    assert.equal(same.json.metadata.deletionGracePeriodSeconds, 60);
    const shorter = await c.request('DELETE', '/api/v1/namespaces/default/pods/g1', { body: { gracePeriodSeconds: 10 } });
    assert.equal(shorter.json.metadata.deletionGracePeriodSeconds, 10);
    // The agent's final delete.
    const gone = await c.request('DELETE', '/api/v1/namespaces/default/pods/g1', { body: { gracePeriodSeconds: 0, preconditions: { uid: marked.metadata.uid } } });
    assert.equal(gone.status, 200);
    assert.equal((await c.request('GET', '/api/v1/namespaces/default/pods/g1')).status, 404);

    await ok(['create', '-f', '-'], { input: POD_YAML('g2', 'n1') });
    const forced = await k(['delete', 'pod', 'g2', '--force', '--grace-period=0']);
    assert.equal(forced.code, 0, forced.stderr);
    assert.match(forced.stdout, /pod "g2" force deleted/);
    assert.equal((await c.request('GET', '/api/v1/namespaces/default/pods/g2')).status, 404);

    // An unscheduled pod is deleted at once.
    await ok(['create', '-f', '-'], { input: POD_YAML('g3') });
    await ok(['delete', 'pod', 'g3', '--wait=false']);
    assert.equal((await c.request('GET', '/api/v1/namespaces/default/pods/g3')).status, 404);
  });

  it('binding: binds an unbound pod once, with the PodScheduled condition', { skip }, async () => {
    await ok(['create', '-f', '-'], { input: POD_YAML('b1') });
    const body = { apiVersion: 'v1', kind: 'Binding', metadata: { name: 'b1', annotations: { 'example.com/by': 'test' } }, target: { kind: 'Node', name: 'n1' } };
    const bound = await c.request('POST', '/api/v1/namespaces/default/pods/b1/binding', { body });
    assert.equal(bound.status, 201, bound.text);
    assert.deepEqual(bound.json, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success' });
    const pod = await json(['get', 'pod', 'b1']);
    assert.equal(pod.spec.nodeName, 'n1');
    assert.equal(pod.metadata.annotations['example.com/by'], 'test');
    const cond = pod.status.conditions.find((x: { type: string }) => x.type === 'PodScheduled');
    assert.equal(cond.status, 'True');
    assert.ok(cond.lastTransitionTime);
    const again = await c.request('POST', '/api/v1/namespaces/default/pods/b1/binding', { body: { ...body, target: { name: 'n2' } } });
    assert.equal(again.status, 409);
    assert.equal(again.json.message, 'Operation cannot be fulfilled on pods/binding "b1": pod b1 is already assigned to node "n1"');
    const mismatch = await c.request('POST', '/api/v1/namespaces/default/pods/b1/binding', { body: { ...body, metadata: { name: 'other' } } });
    assert.equal(mismatch.status, 400);
    assert.equal(mismatch.json.message, 'name in URL does not match name in Binding object');
    assert.equal((await c.request('GET', '/api/v1/namespaces/default/pods/b1/binding')).status, 405);
    await ok(['delete', 'pod', 'b1', '--grace-period=0', '--force']);
  });

  it('eviction: policy/v1 and v1beta1 delete the pod; kubectl drain evicts through discovery', { skip }, async () => {
    await ok(['create', '-f', '-'], { input: POD_YAML('e1', 'n1') });
    const ev = await c.request('POST', '/api/v1/namespaces/default/pods/e1/eviction', {
      body: { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name: 'e1' }, deleteOptions: { gracePeriodSeconds: 0 } },
    });
    assert.equal(ev.status, 201, ev.text);
    assert.equal(ev.json.status, 'Success');
    assert.equal((await c.request('GET', '/api/v1/namespaces/default/pods/e1')).status, 404);
    await ok(['create', '-f', '-'], { input: POD_YAML('e2', 'n1') });
    const beta = await c.request('POST', '/api/v1/namespaces/default/pods/e2/eviction', { body: { apiVersion: 'policy/v1beta1', kind: 'Eviction', metadata: { name: 'e2' } } });
    assert.equal(beta.status, 201, beta.text);
    // Without a grace period in the eviction, the pod's own applies: it is terminating.
    assert.ok((await json(['get', 'pod', 'e2'])).metadata.deletionTimestamp);
    await c.request('DELETE', '/api/v1/namespaces/default/pods/e2', { body: { gracePeriodSeconds: 0 } });

    const discovery = await c.request('GET', '/api/v1');
    const eviction = discovery.json.resources.find((r: { name: string }) => r.name === 'pods/eviction');
    assert.deepEqual(eviction, { name: 'pods/eviction', singularName: '', namespaced: true, group: 'policy', version: 'v1', kind: 'Eviction', verbs: ['create'] });

    await ok(['apply', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'drain-me' } }) });
    await ok(['create', '-f', '-'], { input: POD_YAML('d1', 'drain-me') });
    const drained = await k(['drain', 'drain-me', '--force', '--grace-period=0', '--timeout=30s']);
    assert.equal(drained.code, 0, drained.stderr);
    assert.match(drained.stdout, /pod\/d1 evicted/);
    assert.match(drained.stdout, /node\/drain-me drained/);
    assert.equal((await c.request('GET', '/api/v1/namespaces/default/pods/d1')).status, 404);
  });

  it('logs: from the agent at the node\'s preferred address, with the server\'s client certificate', { skip }, async () => {
    const node = {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: 'agent-node' },
      status: {
        // The Hostname does not resolve, so the next preferred type (InternalIP) is used.
        addresses: [
          { type: 'Hostname', address: 'no-such-host.invalid' },
          { type: 'InternalIP', address: '127.0.0.1' },
        ],
        daemonEndpoints: { kubeletEndpoint: { Port: agent.port } },
      },
    };
    await ok(['create', '-f', '-'], { input: JSON.stringify(node) });
    await ok(['create', '-f', '-'], { input: POD_YAML('logs1', 'agent-node') });
    assert.equal(await ok(['logs', 'logs1']), 'line 1\nline 2\nfrom default/logs1/app\n');
    const last = agent.requests[agent.requests.length - 1]!;
    assert.equal(last.path, '/containerLogs/default/logs1/app');
    assert.equal(last.clientCN, 'orch-apiserver-orchlet-client');
    assert.equal(await ok(['logs', 'logs1', '--tail=1', '--timestamps']), '2024-01-01T00:00:00.000000000Z from default/logs1/app\n');
    const q = agent.requests[agent.requests.length - 1]!.query;
    assert.equal(q.get('tailLines'), '1');
    assert.equal(q.get('timestamps'), 'true');

    // The server's own answers: choosing a container, bad options, and the agent's errors.
    const multi = JSON.stringify({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'multi' },
      spec: { nodeName: 'agent-node', initContainers: [{ name: 'init', image: 'x' }], containers: [{ name: 'a', image: 'x' }, { name: 'gone', image: 'x' }] },
    });
    await ok(['create', '-f', '-'], { input: multi });
    const noContainer = await c.request('GET', '/api/v1/namespaces/default/pods/multi/log');
    assert.equal(noContainer.status, 400);
    assert.equal(noContainer.json.message, 'a container name must be specified for pod multi, choose one of: [a gone] or one of the init containers: [init]');
    const invalidContainer = await c.request('GET', '/api/v1/namespaces/default/pods/multi/log?container=zzz');
    assert.equal(invalidContainer.json.message, 'container zzz is not valid for pod multi');
    const badTail = await c.request('GET', '/api/v1/namespaces/default/pods/multi/log?container=a&tailLines=-1');
    assert.equal(badTail.status, 422);
    assert.match(badTail.json.message, /tailLines: Invalid value: -1: must be greater than or equal to 0/);
    const fromAgent = await c.request('GET', '/api/v1/namespaces/default/pods/multi/log?container=gone');
    assert.equal(fromAgent.status, 404);
    assert.equal(fromAgent.json.message, 'container "gone" in pod "multi" is not available');
    assert.equal(await ok(['logs', 'multi', '-c', 'a']), 'line 1\nline 2\nfrom default/multi/a\n');
    // A pod on no node has no log yet.
    await ok(['create', '-f', '-'], { input: POD_YAML('nolog') });
    const empty = await c.request('GET', '/api/v1/namespaces/default/pods/nolog/log');
    assert.equal(empty.status, 200);
    assert.equal(empty.text, '');
  });

  it('events: core/v1 and events.k8s.io/v1 views of one storage, describe, get events, field selectors', { skip }, async () => {
    const pod = await json(['get', 'pod', 'web']);
    const now = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
    const core = {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: 'web.pulled' },
      involvedObject: { kind: 'Pod', namespace: 'default', name: 'web', uid: pod.metadata.uid, apiVersion: 'v1', fieldPath: 'spec.containers{app}' },
      reason: 'Pulled',
      message: 'Container image "busybox:1.36" already present on machine',
      source: { component: 'orchlet', host: 'n1' },
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
      type: 'Normal',
    };
    const created = await c.request('POST', '/api/v1/namespaces/default/events', { body: core });
    assert.equal(created.status, 201, created.text);
    const other = { ...core, metadata: { name: 'elsewhere' }, involvedObject: { ...core.involvedObject, namespace: 'other' } };
    const mismatch = await c.request('POST', '/api/v1/namespaces/default/events', { body: other });
    assert.equal(mismatch.status, 422);
    assert.match(mismatch.json.message, /involvedObject\.namespace: Invalid value: "other": does not match event\.namespace/);

    // The same event through events.k8s.io/v1.
    const viewed = await c.request('GET', '/apis/events.k8s.io/v1/namespaces/default/events/web.pulled');
    assert.equal(viewed.status, 200, viewed.text);
    assert.equal(viewed.json.apiVersion, 'events.k8s.io/v1');
    assert.equal(viewed.json.note, core.message);
    assert.equal(viewed.json.regarding.name, 'web');
    assert.deepEqual(viewed.json.deprecatedSource, { component: 'orchlet', host: 'n1' });
    assert.equal(viewed.json.message, undefined);

    // events.k8s.io/v1 creates are validated strictly, and seen by core/v1.
    const strict = { apiVersion: 'events.k8s.io/v1', kind: 'Event', metadata: { name: 'web.started' }, regarding: core.involvedObject, note: 'Started container app', reason: 'Started', type: 'Normal' };
    const refused = await c.request('POST', '/apis/events.k8s.io/v1/namespaces/default/events', { body: strict });
    assert.equal(refused.status, 422);
    assert.match(refused.json.message, /eventTime: Required value/);
    const micro = new Date().toISOString().replace('Z', '000Z');
    const accepted = await c.request('POST', '/apis/events.k8s.io/v1/namespaces/default/events', {
      body: { ...strict, eventTime: micro, reportingController: 'orch.io/orchlet', reportingInstance: 'n1', action: 'Started' },
    });
    assert.equal(accepted.status, 201, accepted.text);
    const asCore = await c.request('GET', '/api/v1/namespaces/default/events/web.started');
    assert.equal(asCore.json.message, 'Started container app');
    assert.equal(asCore.json.reportingComponent, 'orch.io/orchlet');
    assert.equal(asCore.json.involvedObject.name, 'web');

    const described = await ok(['describe', 'pod', 'web']);
    assert.match(described, /Events:\n\s+Type\s+Reason\s+Age\s+From\s+Message\n/);
    assert.match(described, /Normal\s+Pulled\s+\S+\s+orchlet\s+Container image "busybox:1\.36" already present on machine/);
    assert.match(described, /Normal\s+Started\s+\S+\s+orch\.io\/orchlet\s+Started container app/);

    const table = await ok(['get', 'events']);
    assert.match(table, /^LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+MESSAGE\n/);
    assert.match(table, /\n\S+\s+Normal\s+Pulled\s+pod\/web\s+Container image "busybox:1\.36" already present on machine\n/);
    const wide = await ok(['get', 'ev', '-o', 'wide', '--field-selector', 'reason=Pulled']);
    assert.match(wide, /^LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+SUBOBJECT\s+SOURCE\s+MESSAGE\s+FIRST SEEN\s+COUNT\s+NAME\n/);
    assert.match(wide, /\n\S+\s+Normal\s+Pulled\s+pod\/web\s+spec\.containers\{app\}\s+orchlet, n1\s+Container image .* machine\s+\S+\s+1\s+web\.pulled\n$/);
    assert.equal((await ok(['get', 'events', '--field-selector', 'involvedObject.name=web,type=Normal', '-o', 'name'])).trim().split('\n').length, 2);
    const viaRegarding = await c.request('GET', '/apis/events.k8s.io/v1/namespaces/default/events?fieldSelector=' + encodeURIComponent('regarding.name=web,reportingController=orch.io/orchlet'));
    assert.deepEqual(viaRegarding.json.items.map((e: KObjectLike) => e.metadata.name), ['web.started']);
    const groups = await c.request('GET', '/apis/events.k8s.io/v1');
    assert.deepEqual(groups.json.resources.map((r: { name: string }) => r.name), ['events']);
  });

  it('explain pod.spec.containers', { skip }, async () => {
    const out = await ok(['explain', 'pod.spec.containers']);
    assert.match(out, /KIND:\s+Pod/);
    assert.match(out, /FIELD:\s+containers/);
    assert.match(out, /image\s+<string>/);
    assert.match(out, /ports\s+<\[\]ContainerPort>/);
  });

  for (const version of ['1.27', '1.33']) {
    it(`kubectl ${version}: create, get, describe, delete`, { skip: skip || (kubectlPath(version) === null && `kubectl ${version} not installed`) }, async () => {
      const name = `v${version.replace('.', '-')}`;
      await ok(['create', '-f', '-'], { input: POD_YAML(name), version });
      assert.match(await ok(['get', 'pod', name], { version }), new RegExp(`\\n${name}\\s+0/1\\s+Pending\\s+0\\s+`));
      const described = await ok(['describe', 'pod', name], { version });
      assert.match(described, /Status:\s+Pending/);
      assert.match(described, /QoS Class:\s+Guaranteed/);
      assert.match(described, /Image:\s+busybox:1\.36/);
      await ok(['delete', 'pod', name], { version });
    });
  }
});
