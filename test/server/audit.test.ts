/**
 * Audit pieces without a server: policy loading and validation messages, the exact event encodings, the
 * batch buffer dropping (and counting) what does not fit, option validation, and the filter order.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { BufferedBackend, type Backend } from '../../src/filters/audit/backend.js';
import { validateAuditConfig, type AuditConfig } from '../../src/filters/audit/config.js';
import { eventJSON, eventString } from '../../src/filters/audit/encode.js';
import { AuditCounters } from '../../src/filters/audit/metrics.js';
import { parsePolicy, policyEvaluator } from '../../src/filters/audit/policy.js';
import { snapshot, withoutEncoding, type AuditEvent } from '../../src/filters/audit/types.js';
import { requestInfo } from '../../src/endpoints/requestinfo.js';
import { parseServerOptions } from '../../src/server/options.js';
import { buildHandlerChain } from '../../src/server/server.js';
import { unionAuthenticator } from '../../src/filters/authn.js';

const policy = (rules: string, head = 'apiVersion: audit.k8s.io/v1\nkind: Policy') => `${head}\nrules:\n${rules}`;

void describe('audit policy files', () => {
  void it('accepts audit.k8s.io v1 and v1beta1 and the audit.orch.io spelling', () => {
    for (const v of ['audit.k8s.io/v1', 'audit.k8s.io/v1beta1', 'audit.orch.io/v1']) {
      assert.equal(parsePolicy(policy('- level: Metadata', `apiVersion: ${v}\nkind: Policy`)).rules.length, 1);
    }
  });

  void it("refuses what Kubernetes refuses, with its messages", () => {
    assert.throws(() => parsePolicy('apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: []'), /^Error: loaded illegal policy with 0 rules$/);
    assert.throws(() => parsePolicy(policy('- level: Everything')), /rules\[0\]\.level: Unsupported value: "Everything": supported values: "None", "Metadata", "Request", "RequestResponse"/);
    assert.throws(() => parsePolicy(policy('- users: [a]')), /rules\[0\]\.level: Required value/);
    assert.throws(
      () => parsePolicy(policy('- level: None\n  nonResourceURLs: [/x]\n  namespaces: [a]')),
      /rules cannot apply to both regular resources and non-resource URLs/,
    );
    assert.throws(() => parsePolicy(policy('- level: None\n  nonResourceURLs: ["/a*b"]')), /wildcards '\*' must be the final character/);
    assert.throws(() => parsePolicy(policy('- level: None\n  omitStages: [Sometimes]')), /rules\[0\]\.omitStages\[0\]: Invalid value: "Sometimes": allowed stages are RequestReceived,ResponseStarted,ResponseComplete,Panic/);
    assert.throws(() => parsePolicy(policy('- level: None', 'apiVersion: audit.k8s.io/v2\nkind: Policy')), /no kind "Policy" is registered for version "audit.k8s.io\/v2"/);
  });

  void it('joins policy and rule omitStages; a rule omitManagedFields overrides the policy default', () => {
    const p = parsePolicy(
      'apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nomitManagedFields: true\nrules:\n' +
        '- level: Request\n  verbs: [get]\n  omitStages: [ResponseStarted]\n  omitManagedFields: false\n- level: Metadata\n',
    );
    const evaluate = policyEvaluator(p);
    const get = evaluate({ user: { name: 'u', groups: [] }, info: requestInfo('GET', '/api/v1/namespaces/a', new URLSearchParams()) });
    assert.deepEqual([get.level, [...get.omitStages].sort(), get.omitManagedFields], ['Request', ['RequestReceived', 'ResponseStarted'], false]);
    const list = evaluate({ user: undefined, info: requestInfo('GET', '/api/v1/namespaces', new URLSearchParams()) });
    assert.deepEqual([list.level, list.omitStages, list.omitManagedFields], ['Metadata', ['RequestReceived'], true]);
  });
});

const EVENT: AuditEvent = {
  level: 'Metadata',
  auditID: 'a1b2',
  stage: 'ResponseComplete',
  requestURI: '/api/v1/namespaces?labelSelector=a<b&x=1',
  verb: 'list',
  user: { name: 'alice', groups: ['g1', 'system:authenticated'] },
  sourceIPs: ['127.0.0.1'],
  userAgent: 'ua',
  objectRef: { resource: 'namespaces', apiVersion: 'v1' },
  responseStatus: { code: 200 },
  requestReceivedTimestamp: Date.UTC(2024, 0, 2, 3, 4, 5, 6) * 1000 + 7,
  stageTimestamp: Date.UTC(2024, 0, 2, 3, 4, 5, 100) * 1000,
  annotations: { 'z.io/b': '2', 'authorization.k8s.io/decision': 'allow' },
};

void describe('audit event encodings', () => {
  void it('writes audit.k8s.io/v1 JSON in Go field order, with MicroTime and HTML escaping', () => {
    assert.equal(
      eventJSON(EVENT, 'v1', true),
      '{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"a1b2","stage":"ResponseComplete",' +
        '"requestURI":"/api/v1/namespaces?labelSelector=a\\u003cb\\u0026x=1","verb":"list","user":{"username":"alice","groups":["g1","system:authenticated"]},' +
        '"sourceIPs":["127.0.0.1"],"userAgent":"ua","objectRef":{"resource":"namespaces","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200},' +
        '"requestReceivedTimestamp":"2024-01-02T03:04:05.006007Z","stageTimestamp":"2024-01-02T03:04:05.100000Z",' +
        '"annotations":{"authorization.k8s.io/decision":"allow","z.io/b":"2"}}',
    );
  });

  void it('keeps its JSON with the event, and copies made for backends neither share it nor later changes', () => {
    // A spread copy of an encoded event (EVENT is encoded above) encodes itself anew.
    const live: AuditEvent = { ...EVENT, objectRef: { ...EVENT.objectRef }, responseStatus: { code: 200 }, annotations: { a: '1' } };
    const withKind = eventJSON(live, 'v1', true);
    assert.match(withKind, /"annotations":\{"a":"1"\}\}$/);
    assert.equal(eventJSON(live, 'v1', true), withKind);
    assert.equal(eventJSON(live, 'v1', false), '{' + withKind.slice('{"kind":"Event","apiVersion":"audit.k8s.io/v1",'.length));
    const copy = snapshot(live);
    live.objectRef!.name = 'later';
    live.responseStatus!.code = 500;
    live.annotations!.b = '2';
    const changed = withoutEncoding(live);
    changed.stage = 'Panic';
    assert.match(eventJSON(changed, 'v1', true), /"stage":"Panic"/);
    const copyJSON = eventJSON(copy, 'v1', true);
    assert.doesNotMatch(copyJSON, /later|"code":500|"b":"2"/);
    assert.equal(copyJSON, withKind);
  });

  void it('writes the legacy line as EventString', () => {
    assert.match(
      eventString(EVENT),
      /^2024-01-0\dT\d\d:04:05\.006007(Z|[+-]\d\d:\d\d) AUDIT: id="a1b2" stage="ResponseComplete" ip="127\.0\.0\.1" method="list" user="alice" groups="\\"g1\\",\\"system:authenticated\\"" as="<self>" asgroups="<lookup>" user-agent="ua" namespace="<none>" uri="\/api\/v1\/namespaces\?labelSelector=a<b&x=1" response="200"$/,
    );
  });
});

void describe('audit batch buffer', () => {
  void it('drops what does not fit, counts it, and never blocks the caller', async () => {
    const counters = new AuditCounters();
    const delivered: string[] = [];
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    const slow: Backend = {
      name: 'slow',
      processEvents: async (events) => {
        await gate;
        delivered.push(...events.map((e) => e.auditID));
        return true;
      },
      shutdown: async () => {},
    };
    const logged: string[] = [];
    const b = new BufferedBackend(slow, { bufferSize: 3, maxBatchSize: 1, maxBatchWaitMs: 0 }, { metrics: counters, logger: (m) => logged.push(m) });
    // Four deliveries may be in flight at once; the buffer holds three more; the rest is dropped.
    for (let i = 0; i < 12; i++) {
      assert.equal(b.processEvents([{ ...EVENT, auditID: `e${i}` }]), true);
      await new Promise((resolve) => setImmediate(resolve));
    }
    assert.equal(counters.errors.get('buffered'), 5);
    assert.match(logged[0]!, /^Error in audit plugin 'buffered' affecting 1 audit events: audit buffer queue blocked\nImpacted events:\n.* AUDIT: id="e7"/);
    release();
    await b.shutdown();
    assert.deepEqual(delivered.sort(), ['e0', 'e1', 'e2', 'e3', 'e4', 'e5', 'e6']);
  });
});

void describe('audit options', () => {
  void it('are supported (no longer refused as not implemented)', () => {
    const o = parseServerOptions(['--audit-policy-file=/p', '--audit-log-path=-', '--audit-log-mode=batch', '--audit-webhook-config-file=/w', '--audit-log-maxbackup=3']);
    assert.equal(o.auditLogMode, 'batch');
    assert.equal(o.auditWebhookBatchMaxSize, 400);
    assert.equal(o.auditWebhookInitialBackoff, 10_000);
  });

  void it('are validated at startup with kube-apiserver messages', () => {
    const base: AuditConfig = {
      log: {
        path: '/tmp/x.log',
        format: 'json',
        mode: 'batch',
        version: 'audit.k8s.io/v1',
        maxAge: 0,
        maxBackup: 0,
        maxSize: 0,
        compress: false,
        batch: { bufferSize: 10, maxSize: 1, maxWaitMs: 0, throttleEnable: false, throttleQps: 0, throttleBurst: 0 },
        truncate: { enabled: false, maxEventSize: 100, maxBatchSize: 1000 },
      },
    };
    const log = base.log!;
    assert.throws(() => validateAuditConfig({ log: { ...log, version: 'audit.k8s.io/v2' } }), /--audit-log-version: invalid group version/);
    assert.throws(() => validateAuditConfig({ log: { ...log, maxAge: -1 } }), /--audit-log-maxage -1 can't be a negative number/);
    assert.throws(() => validateAuditConfig({ log: { ...log, batch: { ...log.batch, bufferSize: 0 } } }), /invalid audit batch log buffer size 0, must be a positive number/);
    assert.throws(
      () => validateAuditConfig({ log: { ...log, truncate: { enabled: true, maxEventSize: 100, maxBatchSize: 10 } } }),
      /invalid audit truncate log max batch size 10, must be greater than max event size \(100\)/,
    );
    validateAuditConfig({ log: { ...log, version: 'audit.orch.io/v1' } });
  });

  void it('place the audit filters as kube-apiserver does', () => {
    const names: string[] = [];
    buildHandlerChain(
      () => {},
      {
        authenticator: unionAuthenticator([]),
        anonymous: false,
        logger: () => {},
        audit: { policy: () => ({ level: 'None', omitStages: [], omitManagedFields: false }), backend: { name: 'x', processEvents: () => true, shutdown: async () => {} }, metrics: new AuditCounters() },
      },
      (n) => names.push(n),
    );
    const order = names.reverse();
    const at = (n: string) => order.indexOf(n);
    assert.equal(order[0], 'auditID');
    assert.ok(at('failedAuthenticationAudit') === at('authentication') - 1);
    assert.ok(at('authentication') < at('audit') && at('audit') < at('maxInFlightLimit') && at('maxInFlightLimit') < at('authorization'));
  });
});
