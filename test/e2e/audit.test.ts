/**
 * Audit end to end on one server: a policy exercising every rule field and level, checked on the JSON log
 * file the server writes in blocking mode (so each request's events are in the file when its response
 * arrives), the Audit-ID header, watches (ResponseStarted), failed authentication, the authorization
 * annotations, the metrics, DeleteOptions recorded for deletes, and kubectl's `create namespace` and `delete`.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { kubectlPath, startCluster, type TestCluster } from '../helpers/cluster.js';

const POLICY = `
apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: None
  users: [quiet]
- level: RequestResponse
  userGroups: [rr-group]
  resources: [{group: "", resources: [configmaps]}]
- level: Request
  verbs: [delete, deletecollection]
  resources: [{group: "", resources: [configmaps]}]
- level: Request
  verbs: [create]
  namespaces: [req-ns]
- level: Metadata
  resources: [{group: "", resources: [namespaces/status]}]
- level: None
  resources: [{group: coordination.k8s.io}]
- level: Request
  resources: [{group: "", resources: [secrets], resourceNames: [named]}]
- level: Metadata
  omitStages: [RequestReceived]
  resources: [{group: "", resources: ["*/finalize", persistentvolumeclaims]}]
- level: RequestResponse
  omitManagedFields: true
  resources: [{group: "", resources: [serviceaccounts]}]
- level: Metadata
  nonResourceURLs: [/version, "/healthz*"]
- level: None
  nonResourceURLs: ["*"]
- level: RequestResponse
  verbs: [create, get, watch]
  resources: [{group: "", resources: [namespaces]}]
- level: Metadata
`;

interface Event {
  kind: string;
  apiVersion: string;
  level: string;
  auditID: string;
  stage: string;
  requestURI: string;
  verb: string;
  user: { username?: string; groups?: string[] };
  sourceIPs?: string[];
  userAgent?: string;
  objectRef?: Record<string, string>;
  responseStatus?: { code?: number; message?: string; reason?: string; status?: string };
  requestObject?: any;
  responseObject?: any;
  requestReceivedTimestamp: string;
  stageTimestamp: string;
  annotations?: Record<string, string>;
}

let c: TestCluster;
let dir: string;
let logPath: string;

function events(): Event[] {
  return readFileSync(logPath, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Event);
}

function eventsOf(auditID: string | string[] | undefined): Event[] {
  assert.equal(typeof auditID, 'string', 'the response carries an Audit-ID header');
  return events().filter((e) => e.auditID === auditID);
}

const as = (token: string) => ({ headers: { authorization: `Bearer ${token}` } });

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'orch-audit-'));
  logPath = join(dir, 'logs', 'audit.log');
  writeFileSync(join(dir, 'policy.yaml'), POLICY);
  writeFileSync(
    join(dir, 'tokens.csv'),
    ['e2e-admin-token,admin,admin,"system:masters"', 'alice-token,alice,1,"rr-group"', 'quiet-token,quiet,2', ''].join('\n'),
  );
  c = await startCluster([
    `--token-auth-file=${join(dir, 'tokens.csv')}`,
    `--audit-policy-file=${join(dir, 'policy.yaml')}`,
    `--audit-log-path=${logPath}`,
  ]);
  for (const ns of ['req-ns', 'other-ns']) assert.equal((await c.request('POST', '/api/v1/namespaces', { body: { metadata: { name: ns } } })).status, 201);
});

after(async () => {
  await c?.stop();
  await rm(dir, { recursive: true, force: true });
});

void describe('audit policy matrix (json log, blocking mode)', () => {
  void it('writes RequestReceived and ResponseComplete with every field at level RequestResponse (userGroups + resources)', async () => {
    const r = await c.request('POST', '/api/v1/namespaces/other-ns/configmaps', {
      body: { metadata: { name: 'cm1' }, data: { k: 'v' } },
      headers: { authorization: 'Bearer alice-token', 'user-agent': 'audit-test/1.0', 'x-forwarded-for': '10.1.2.3, bogus, 10.4.5.6' },
    });
    assert.equal(r.status, 201);
    const evs = eventsOf(r.headers['audit-id']);
    assert.deepEqual(
      evs.map((e) => e.stage),
      ['RequestReceived', 'ResponseComplete'],
    );
    const [received, complete] = evs as [Event, Event];
    for (const e of evs) {
      assert.equal(e.kind, 'Event');
      assert.equal(e.apiVersion, 'audit.k8s.io/v1');
      assert.equal(e.level, 'RequestResponse');
      assert.equal(e.verb, 'create');
      assert.equal(e.requestURI, '/api/v1/namespaces/other-ns/configmaps');
      assert.deepEqual(e.user, { username: 'alice', uid: '1', groups: ['rr-group', 'system:authenticated'] });
      assert.deepEqual(e.sourceIPs, ['10.1.2.3', '10.4.5.6', '127.0.0.1']);
      assert.equal(e.userAgent, 'audit-test/1.0');
      assert.match(e.requestReceivedTimestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
      assert.match(e.stageTimestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    }
    assert.equal(received.stageTimestamp, received.requestReceivedTimestamp);
    assert.ok(complete.stageTimestamp >= complete.requestReceivedTimestamp);
    assert.equal(received.requestObject, undefined, 'objects come later than RequestReceived');
    assert.equal(received.responseStatus, undefined);
    assert.equal(received.annotations, undefined, 'authorization runs after RequestReceived');
    assert.deepEqual(complete.objectRef, { resource: 'configmaps', namespace: 'other-ns', name: 'cm1', apiVersion: 'v1' });
    assert.deepEqual(complete.responseStatus, { metadata: {}, code: 201 });
    assert.deepEqual(complete.requestObject.data, { k: 'v' });
    assert.equal(complete.responseObject.metadata.name, 'cm1');
    assert.ok(complete.responseObject.metadata.uid);
    assert.ok(Array.isArray(complete.responseObject.metadata.managedFields), 'managedFields kept by default');
    assert.deepEqual(complete.annotations, { 'authorization.k8s.io/decision': 'allow', 'authorization.k8s.io/reason': '' });
  });

  void it('falls through the userGroups rule for other users (catch-all Metadata: no objects)', async () => {
    const r = await c.request('GET', '/api/v1/namespaces/other-ns/configmaps/cm1');
    assert.equal(r.status, 200);
    const complete = eventsOf(r.headers['audit-id']).find((e) => e.stage === 'ResponseComplete')!;
    assert.equal(complete.level, 'Metadata');
    assert.equal(complete.requestObject, undefined);
    assert.equal(complete.responseObject, undefined);
    assert.deepEqual(complete.objectRef, { resource: 'configmaps', namespace: 'other-ns', name: 'cm1', apiVersion: 'v1' });
  });

  void it('level Request (verbs + namespaces): the request object but not the response', async () => {
    const r = await c.request('POST', '/api/v1/namespaces/req-ns/secrets', { body: { metadata: { name: 's1' }, stringData: { a: 'b' } } });
    assert.equal(r.status, 201);
    const complete = eventsOf(r.headers['audit-id']).find((e) => e.stage === 'ResponseComplete')!;
    assert.equal(complete.level, 'Request');
    assert.equal(complete.requestObject.metadata.name, 's1');
    assert.equal(complete.responseObject, undefined);
    // The same verb elsewhere is not matched by the namespaces rule.
    const other = await c.request('POST', '/api/v1/namespaces/other-ns/secrets', { body: { metadata: { name: 's1' } } });
    assert.equal(eventsOf(other.headers['audit-id'])[0]!.level, 'Metadata');
  });

  void it('resourceNames limit a rule to the named objects', async () => {
    await c.request('POST', '/api/v1/namespaces/other-ns/secrets', { body: { metadata: { name: 'named' } } });
    const named = await c.request('GET', '/api/v1/namespaces/other-ns/secrets/named');
    assert.equal(eventsOf(named.headers['audit-id'])[0]!.level, 'Request');
    const other = await c.request('GET', '/api/v1/namespaces/other-ns/secrets/s1');
    assert.equal(eventsOf(other.headers['audit-id'])[0]!.level, 'Metadata');
  });

  void it('matches subresources (namespaces/status, */finalize) and a rule with omitStages', async () => {
    const status = await c.request('GET', '/api/v1/namespaces/other-ns/status');
    assert.equal(status.status, 200);
    const evs = eventsOf(status.headers['audit-id']);
    assert.deepEqual(
      evs.map((e) => [e.stage, e.level]),
      [
        ['RequestReceived', 'Metadata'],
        ['ResponseComplete', 'Metadata'],
      ],
    );
    assert.equal(evs[1]!.objectRef!.subresource, 'status');
    const fin = await c.request('PUT', '/api/v1/namespaces/other-ns/finalize', { body: { metadata: { name: 'other-ns' }, spec: { finalizers: ['kubernetes'] } } });
    assert.deepEqual(
      eventsOf(fin.headers['audit-id']).map((e) => e.stage),
      ['ResponseComplete'],
      'RequestReceived omitted by the rule',
    );
    const pvcs = await c.request('GET', '/api/v1/namespaces/other-ns/persistentvolumeclaims');
    assert.deepEqual(
      eventsOf(pvcs.headers['audit-id']).map((e) => [e.stage, e.verb]),
      [['ResponseComplete', 'list']],
    );
  });

  void it('level None: nothing written (users rule, group rule, nonResourceURLs "*")', async () => {
    const before = events().length;
    const quiet = await c.request('GET', '/api/v1/namespaces', as('quiet-token'));
    assert.equal(quiet.status, 200);
    assert.ok(quiet.headers['audit-id'], 'Audit-ID is sent even when nothing is audited');
    const lease = await c.request('GET', '/apis/coordination.k8s.io/v1/namespaces/default/leases');
    assert.equal(lease.status, 200);
    const readyz = await c.request('GET', '/readyz');
    assert.equal(readyz.status, 200);
    assert.equal(events().length, before);
  });

  void it('nonResourceURLs with an exact path and a trailing wildcard', async () => {
    const version = await c.request('GET', '/version');
    const [e] = eventsOf(version.headers['audit-id']);
    assert.equal(e!.level, 'Metadata');
    assert.equal(e!.verb, 'get');
    assert.equal(e!.objectRef, undefined);
    const ping = await c.request('GET', '/healthz/ping');
    assert.equal(eventsOf(ping.headers['audit-id']).length, 2);
  });

  void it('omitManagedFields drops managedFields from the request and response objects', async () => {
    const r = await c.request('POST', '/api/v1/namespaces/other-ns/serviceaccounts', { body: { metadata: { name: 'sa1' } } });
    assert.equal(r.status, 201);
    const complete = eventsOf(r.headers['audit-id']).find((e) => e.stage === 'ResponseComplete')!;
    assert.equal(complete.level, 'RequestResponse');
    assert.equal(complete.responseObject.metadata.name, 'sa1');
    assert.equal(complete.responseObject.metadata.managedFields, undefined);
    const list = await c.request('GET', '/api/v1/namespaces/other-ns/serviceaccounts');
    const listed = eventsOf(list.headers['audit-id']).find((e) => e.stage === 'ResponseComplete')!;
    assert.ok(listed.responseObject.items.length >= 1);
    for (const item of listed.responseObject.items) assert.equal(item.metadata.managedFields, undefined);
  });

  void it('records an error answer as responseStatus (a Status at level Metadata)', async () => {
    const r = await c.request('GET', '/api/v1/namespaces/other-ns/configmaps/missing');
    assert.equal(r.status, 404);
    const complete = eventsOf(r.headers['audit-id']).find((e) => e.stage === 'ResponseComplete')!;
    assert.deepEqual(complete.responseStatus, {
      metadata: {},
      status: 'Failure',
      message: 'configmaps "missing" not found',
      reason: 'NotFound',
      details: { name: 'missing', kind: 'configmaps' },
      code: 404,
    });
  });
});

void describe('DeleteOptions as the request object of a delete (level Request)', () => {
  const cm = async (name: string) => assert.equal((await c.request('POST', '/api/v1/namespaces/other-ns/configmaps', { body: { metadata: { name } } })).status, 201);
  const completeOf = (r: { headers: Record<string, string | string[] | undefined> }) => eventsOf(r.headers['audit-id']).find((e) => e.stage === 'ResponseComplete')!;

  void it('records the body as meta-internal DeleteOptions, fields in Go order, whatever version it names', async () => {
    await cm('del-body');
    const body = { propagationPolicy: 'Foreground', apiVersion: 'v1', dryRun: [], preconditions: { resourceVersion: null, uid: null }, gracePeriodSeconds: 0, kind: 'DeleteOptions', unknown: 1 };
    const r = await c.request('DELETE', '/api/v1/namespaces/other-ns/configmaps/del-body', { body });
    assert.equal(r.status, 200, r.text);
    const complete = completeOf(r);
    assert.equal(complete.level, 'Request');
    assert.equal(complete.verb, 'delete');
    assert.deepEqual(complete.objectRef, { resource: 'configmaps', namespace: 'other-ns', name: 'del-body', apiVersion: 'v1' });
    assert.equal(complete.responseObject, undefined);
    const line = readFileSync(logPath, 'utf8').split('\n').find((l) => l.includes(complete.auditID) && l.includes('"ResponseComplete"'))!;
    assert.match(line, /"requestObject":\{"kind":"DeleteOptions","apiVersion":"meta.k8s.io\/__internal","gracePeriodSeconds":0,"preconditions":\{\},"propagationPolicy":"Foreground"\}/);
    // A failed delete (a precondition that does not hold) has its options recorded too.
    for (const [name, b, status] of [
      ['del-meta', { apiVersion: 'meta.k8s.io/v1', kind: 'DeleteOptions', orphanDependents: true }, 200],
      ['del-bare', { preconditions: { uid: 'x' }, dryRun: ['All'] }, 409],
    ] as const) {
      await cm(name);
      const d = await c.request('DELETE', `/api/v1/namespaces/other-ns/configmaps/${name}`, { body: b });
      assert.equal(d.status, status, d.text);
      const { kind: _k, apiVersion: _v, ...fields } = b as Record<string, unknown>;
      assert.deepEqual(completeOf(d).requestObject, { kind: 'DeleteOptions', apiVersion: 'meta.k8s.io/__internal', ...fields }, name);
    }
  });

  void it('records nothing for options in the query', async () => {
    await cm('del-query');
    const r = await c.request('DELETE', '/api/v1/namespaces/other-ns/configmaps/del-query?gracePeriodSeconds=0&propagationPolicy=Background');
    assert.equal(r.status, 200, r.text);
    const complete = completeOf(r);
    assert.equal(complete.level, 'Request');
    assert.equal(complete.requestObject, undefined);
    assert.equal(complete.objectRef?.name, 'del-query');
  });

  void it('records a deletecollection body the same way', async () => {
    await cm('del-coll');
    const r = await c.request('DELETE', '/api/v1/namespaces/other-ns/configmaps?fieldSelector=metadata.name%3Ddel-coll', { body: { kind: 'DeleteOptions', apiVersion: 'v1', orphanDependents: false } });
    assert.equal(r.status, 200, r.text);
    const complete = completeOf(r);
    assert.equal(complete.verb, 'deletecollection');
    assert.deepEqual(complete.requestObject, { kind: 'DeleteOptions', apiVersion: 'meta.k8s.io/__internal', orphanDependents: false });
  });

  void it('kubectl delete: its options body is recorded', async (t) => {
    if (!kubectlPath()) return t.skip('kubectl is not installed');
    await cm('del-kubectl');
    const r = await c.kubectl(['delete', 'configmap', 'del-kubectl', '-n', 'other-ns']);
    assert.equal(r.code, 0, r.stderr);
    const complete = events().find((e) => e.verb === 'delete' && e.stage === 'ResponseComplete' && e.objectRef?.name === 'del-kubectl');
    assert.ok(complete, 'the delete is audited');
    assert.match(complete.userAgent ?? '', /^kubectl\//);
    assert.deepEqual(complete.requestObject, { kind: 'DeleteOptions', apiVersion: 'meta.k8s.io/__internal', propagationPolicy: 'Background' });
  });
});

void describe('audit events of the request lifecycle', () => {
  void it('takes the client Audit-ID as the event auditID and echoes it', async () => {
    const r = await c.request('GET', '/api/v1/namespaces/other-ns/configmaps', { headers: { 'audit-id': 'my-own-audit-id' } });
    assert.equal(r.headers['audit-id'], 'my-own-audit-id');
    assert.equal(eventsOf('my-own-audit-id').length, 2);
  });

  void it('a watch gets ResponseStarted when its headers go out, then ResponseComplete', async () => {
    const r = await c.request('GET', '/api/v1/namespaces?watch=1&timeoutSeconds=1');
    assert.equal(r.status, 200);
    const evs = eventsOf(r.headers['audit-id']);
    assert.deepEqual(
      evs.map((e) => e.stage),
      ['RequestReceived', 'ResponseStarted', 'ResponseComplete'],
    );
    assert.equal(evs[1]!.verb, 'watch');
    assert.deepEqual(evs[1]!.responseStatus, { metadata: {}, code: 200 });
    assert.equal(evs[1]!.responseObject, undefined, 'watch events are not response objects');
  });

  void it('audits a failed authentication as ResponseStarted with code 401', async () => {
    const r = await c.request('GET', '/api/v1/namespaces/other-ns/configmaps', as('wrong-token'));
    assert.equal(r.status, 401);
    const evs = eventsOf(r.headers['audit-id']);
    assert.equal(evs.length, 1);
    assert.equal(evs[0]!.stage, 'ResponseStarted');
    assert.deepEqual(evs[0]!.user, {});
    assert.deepEqual(evs[0]!.responseStatus, { metadata: {}, message: 'Authentication failed, attempted: bearer', code: 401 });
  });

  void it('counts events and levels in /metrics', async () => {
    const r = await c.request('GET', '/metrics');
    assert.equal(r.status, 200);
    const value = (re: RegExp) => Number(re.exec(r.text)?.[1] ?? NaN);
    assert.ok(value(/^apiserver_audit_event_total (\d+)/m) >= events().length - 1);
    assert.ok(value(/^apiserver_audit_level_total\{level="None"\} (\d+)/m) >= 3);
    assert.ok(value(/^apiserver_audit_level_total\{level="RequestResponse"\} (\d+)/m) >= 1);
  });

  void it('kubectl create namespace produces the create event with the namespace as request and response', async (t) => {
    if (!kubectlPath()) return t.skip('kubectl is not installed');
    const r = await c.kubectl(['create', 'namespace', 'audited']);
    assert.equal(r.code, 0, r.stderr);
    const done0 = events().find((e) => e.verb === 'create' && e.objectRef?.resource === 'namespaces' && e.objectRef.name === 'audited');
    assert.ok(done0, 'the create is audited, with the name from the request object');
    const creates = eventsOf(done0.auditID);
    assert.equal(creates[0]!.objectRef!.name, undefined, 'at RequestReceived the name is not known yet');
    assert.deepEqual(
      creates.map((e) => e.stage),
      ['RequestReceived', 'ResponseComplete'],
    );
    const done = creates[1]!;
    assert.equal(done.user.username, 'admin');
    assert.match(done.userAgent ?? '', /^kubectl\//);
    assert.equal(done.requestObject.kind, 'Namespace');
    assert.equal(done.requestObject.metadata.name, 'audited');
    assert.equal(done.responseObject.status.phase, 'Active');
    assert.deepEqual(done.responseStatus, { metadata: {}, code: 201 });
    assert.match(done.requestURI, /^\/api\/v1\/namespaces\?/);
  });
});
