/**
 * MutatingAdmissionWebhook and ValidatingAdmissionWebhook through kubectl, against webhooks this test serves
 * on loopback over TLS (its own CA in each configuration's caBundle): JSONPatch responses applied with their
 * warnings, a denial worded as Kubernetes words it, failurePolicy Ignore and Fail with a dead webhook,
 * namespace and object selectors, dry runs against sideEffects, AdmissionReview v1beta1, a webhook reached
 * through a Service, reinvocation, the server's credentials for webhooks (WebhookAdmissionConfiguration kubeConfigFile in
 * --admission-control-config-file), and the configurations' own validation and table (v1 only, as 1.23).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:https';
import { createServer as createTcpServer, type AddressInfo } from 'node:net';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { requireBinary } from '../helpers/binaries.js';
import { startCluster, type TestCluster } from '../helpers/cluster.js';
import { eventually } from '../helpers/eventually.js';
import { makeCA, makeServingCert } from '../../src/server/certs.js';

const present = requireBinary(undefined, 'kubectl') !== null;
if (!present && process.env.CI === 'true') throw new Error('kubectl is required under CI=true');
const skip = !present && 'kubectl not installed';

type Review = { apiVersion: string; kind: string; request: Record<string, any> };

/** A port nothing listens on. */
async function deadPort(): Promise<number> {
  const s = createTcpServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const port = (s.address() as AddressInfo).port;
  await new Promise((resolve) => s.close(resolve));
  return port;
}

const b64 = (s: string) => Buffer.from(s).toString('base64');

describe('admission webhooks through kubectl', { skip }, () => {
  let c: TestCluster;
  let hook: Server;
  let port = 0;
  let caBundle = '';
  let dead = 0;
  /** Reviews received, by path. */
  const seen = new Map<string, Review[]>();
  const reviewsAt = (path: string) => seen.get(path) ?? [];
  /** The Authorization header of the latest review, by path. */
  const authorization = new Map<string, string | undefined>();
  let dir = '';

  const ok = async (args: string[], input?: string) => {
    const r = await c.kubectl(args, input === undefined ? {} : { input });
    assert.equal(r.code, 0, `kubectl ${args.join(' ')}: ${r.stderr}`);
    return r;
  };
  const refused = async (args: string[], input?: string) => {
    const r = await c.kubectl(args, input === undefined ? {} : { input });
    assert.notEqual(r.code, 0, `kubectl ${args.join(' ')} should have failed: ${r.stdout}`);
    return r.stderr.trim();
  };
  const json = async (args: string[]) => JSON.parse((await ok([...args, '-o', 'json'])).stdout);

  /** The answer of each path to a review. */
  function answer(path: string, review: Review): Record<string, unknown> {
    const req = review.request;
    const obj = (req['object'] ?? {}) as Record<string, any>;
    switch (path) {
      case '/label': {
        const patch = [{ op: 'add', path: '/metadata/labels', value: { ...(obj['metadata']?.labels ?? {}), mutated: 'yes' } }];
        return {
          allowed: true,
          patchType: 'JSONPatch',
          patch: b64(JSON.stringify(patch)),
          warnings: ['labelled by the test webhook'],
          auditAnnotations: { labelled: 'true' },
        };
      }
      case '/nodelete':
        return { allowed: false, status: { message: 'keep it' } };
      case '/deny':
        if (obj['data']?.forbidden !== undefined) return { allowed: false, status: { code: 403, reason: 'Forbidden', message: 'no forbidden keys' } };
        return { allowed: true };
      case '/count': {
        // Counts its calls on the object in an annotation (reinvocation).
        const n = Number(obj['metadata']?.annotations?.['count'] ?? '0') + 1;
        const annotations = { ...(obj['metadata']?.annotations ?? {}), count: String(n) };
        return { allowed: true, patchType: 'JSONPatch', patch: b64(JSON.stringify([{ op: 'add', path: '/metadata/annotations', value: annotations }])) };
      }
      case '/sidecar': {
        // Adds a container without resources (LimitRanger defaults it on the reinvocation pass).
        if ((obj['spec']?.containers ?? []).some((c: { name?: string }) => c.name === 'sidecar')) return { allowed: true };
        const patch = [{ op: 'add', path: '/spec/containers/-', value: { name: 'sidecar', image: 'busybox' } }];
        return { allowed: true, patchType: 'JSONPatch', patch: b64(JSON.stringify(patch)) };
      }
      case '/badpatch':
        return { allowed: true, patchType: 'JSONPatch', patch: b64('{"op":"add"}') };
      case '/late': {
        const annotations = { ...(obj['metadata']?.annotations ?? {}), late: 'set' };
        return { allowed: true, patchType: 'JSONPatch', patch: b64(JSON.stringify([{ op: 'add', path: '/metadata/annotations', value: annotations }])) };
      }
      default:
        return { allowed: true };
    }
  }

  const mutating = (name: string, webhooks: Record<string, unknown>[]) => JSON.stringify({
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingWebhookConfiguration',
    metadata: { name },
    webhooks,
  });
  const validating = (name: string, webhooks: Record<string, unknown>[], version = 'v1') => JSON.stringify({
    apiVersion: `admissionregistration.k8s.io/${version}`,
    kind: 'ValidatingWebhookConfiguration',
    metadata: { name },
    webhooks,
  });
  const rule = (resources: string[], operations = ['CREATE', 'UPDATE']) => [{ operations, apiGroups: [''], apiVersions: ['v1'], resources }];
  const webhook = (name: string, path: string, resources: string[], extra: Record<string, unknown> = {}) => ({
    name,
    clientConfig: { url: `https://127.0.0.1:${port}${path}`, caBundle },
    rules: rule(resources),
    sideEffects: 'None',
    admissionReviewVersions: ['v1'],
    ...extra,
  });

  before(async () => {
    const ca = await makeCA('webhook-ca');
    const serving = await makeServingCert(ca.cert, ca.key, 'webhook', ['127.0.0.1', 'hooks.hooked.svc']);
    caBundle = b64(ca.cert);
    hook = createServer({ cert: serving.cert, key: serving.key }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (d: Buffer) => chunks.push(d));
      req.on('end', () => {
        const url = new URL(req.url ?? '/', 'https://x');
        const review = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Review;
        seen.set(url.pathname, [...reviewsAt(url.pathname), review]);
        authorization.set(url.pathname, req.headers.authorization);
        const response = { uid: review.request['uid'], ...answer(url.pathname, review) };
        res.setHeader('Content-Type', 'application/json');
        const reply = () => res.end(JSON.stringify({ apiVersion: review.apiVersion, kind: 'AdmissionReview', response }));
        if (url.pathname === '/slow') setTimeout(reply, 1500);
        else reply();
      });
    });
    await new Promise<void>((resolve) => hook.listen(0, '127.0.0.1', resolve));
    port = (hook.address() as AddressInfo).port;
    dead = await deadPort();
    // The server authenticates to webhooks with the users of this kubeconfig (by host:port, '*.' suffixes).
    dir = await mkdtemp(join(tmpdir(), 'orch-webhooks-'));
    await writeFile(
      join(dir, 'webhooks.kubeconfig'),
      stringify({
        apiVersion: 'v1',
        kind: 'Config',
        users: [
          { name: `127.0.0.1:${port}`, user: { token: 'url-token' } },
          { name: `*.hooked.svc:${port}`, user: { token: 'service-token' } },
        ],
      }),
    );
    await writeFile(
      join(dir, 'webhook-admission.yaml'),
      stringify({ apiVersion: 'apiserver.config.k8s.io/v1', kind: 'WebhookAdmissionConfiguration', kubeConfigFile: join(dir, 'webhooks.kubeconfig') }),
    );
    await writeFile(
      join(dir, 'admission.yaml'),
      stringify({
        apiVersion: 'apiserver.config.k8s.io/v1',
        kind: 'AdmissionConfiguration',
        plugins: [
          { name: 'ValidatingAdmissionWebhook', path: 'webhook-admission.yaml' },
          { name: 'MutatingAdmissionWebhook', path: 'webhook-admission.yaml' },
        ],
      }),
    );
    await writeFile(join(dir, 'audit-policy.yaml'), 'apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n  resources: [{group: "", resources: [configmaps]}]\n');
    c = await startCluster([
      `--admission-control-config-file=${join(dir, 'admission.yaml')}`,
      `--audit-policy-file=${join(dir, 'audit-policy.yaml')}`,
      `--audit-log-path=${join(dir, 'audit.log')}`,
    ]);
    await ok(['create', 'namespace', 'hooked']);
    await ok(['label', 'namespace', 'hooked', 'webhooks=on']);
    await ok(['create', 'namespace', 'plain']);
  });
  after(async () => {
    await c?.stop();
    await new Promise((resolve) => hook?.close(resolve));
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('validates webhook configurations as Kubernetes and lists them with their webhook count', async () => {
    const bad = mutating('bad', [
      { name: 'short', clientConfig: { url: 'http://127.0.0.1/x' }, rules: rule(['configmaps']), sideEffects: 'Some', admissionReviewVersions: ['v2'] },
    ]);
    const err = await refused(['create', '-f', '-'], bad);
    assert.match(err, /The MutatingWebhookConfiguration "bad" is invalid: \n/);
    assert.match(err, /webhooks\[0\]\.name: Invalid value: "short": should be a domain with at least three segments separated by dots/);
    assert.match(err, /webhooks\[0\]\.sideEffects: Unsupported value: "Some": supported values: "None", "NoneOnDryRun"/);
    assert.match(err, /webhooks\[0\]\.clientConfig\.url: Invalid value: "http": 'https' is the only allowed URL scheme/);
    assert.match(err, /webhooks\[0\]\.admissionReviewVersions: Invalid value: \[\]string\{"v2"\}: must include at least one of v1, v1beta1/);
    const dup = validating('dup', [webhook('a.orch.test', '/x', ['pods']), webhook('a.orch.test', '/x', ['pods'])]);
    assert.match(await refused(['create', '-f', '-'], dup), /webhooks\[1\]\.name: Duplicate value: "a.orch.test"/);

    await ok(['create', '-f', '-'], validating('listed', [webhook('one.orch.test', '/none', ['nothings']), webhook('two.orch.test', '/none', ['nothings'])]));
    const table = (await ok(['get', 'validatingwebhookconfigurations', 'listed'])).stdout;
    assert.match(table, /^NAME\s+WEBHOOKS\s+AGE\n/);
    assert.match(table, /\nlisted\s+2\s+/);
    const got = await json(['get', 'validatingwebhookconfiguration', 'listed']);
    assert.equal(got.webhooks[0].failurePolicy, 'Fail');
    assert.equal(got.webhooks[0].matchPolicy, 'Equivalent');
    assert.equal(got.webhooks[0].timeoutSeconds, 10);
    assert.deepEqual(got.webhooks[0].namespaceSelector, {});
    assert.equal(got.webhooks[0].rules[0].scope, '*');
    // As in 1.23, v1beta1 is no longer served.
    const beta = await c.request('GET', '/apis/admissionregistration.k8s.io/v1beta1/validatingwebhookconfigurations');
    assert.equal(beta.status, 404);
    await ok(['delete', 'validatingwebhookconfiguration', 'listed']);
  });

  it('applies a mutating webhook’s patch in namespaces its namespaceSelector picks, with its warning', async () => {
    await ok(['create', '-f', '-'], mutating('labeller', [webhook('label.orch.test', '/label', ['configmaps'], { namespaceSelector: { matchLabels: { webhooks: 'on' } } })]));
    const r = await ok(['create', 'configmap', 'cm1', '-n', 'hooked', '--from-literal=a=1']);
    assert.match(r.stderr, /Warning: labelled by the test webhook/);
    const cm = await json(['get', 'configmap', 'cm1', '-n', 'hooked']);
    assert.equal(cm.metadata.labels.mutated, 'yes');
    const review = reviewsAt('/label').at(-1)!;
    assert.equal(review.apiVersion, 'admission.k8s.io/v1');
    assert.equal(review.kind, 'AdmissionReview');
    const req = review.request;
    assert.deepEqual(req['kind'], { group: '', version: 'v1', kind: 'ConfigMap' });
    assert.deepEqual(req['resource'], { group: '', version: 'v1', resource: 'configmaps' });
    assert.deepEqual(req['requestKind'], req['kind']);
    assert.equal(req['operation'], 'CREATE');
    assert.equal(req['namespace'], 'hooked');
    assert.equal(req['name'], 'cm1');
    assert.equal(req['userInfo'].username, 'admin');
    assert.equal(req['dryRun'], false);
    assert.equal(req['object'].data.a, '1');
    assert.equal(req['oldObject'], null);
    assert.equal(typeof req['uid'], 'string');
    assert.equal(authorization.get('/label'), 'Bearer url-token', 'the kubeconfig user named by the webhook host:port');
    // The webhook's audit annotation and the mutation annotation are in the request's audit event.
    const audited = await eventually('the audit event of the create', async () => {
      const lines = (await readFile(join(dir, 'audit.log'), 'utf8')).split('\n').filter((l) => l !== '');
      const events = lines.map((l) => JSON.parse(l) as { verb: string; stage: string; objectRef?: { name?: string }; annotations?: Record<string, string> });
      return events.find((e) => e.verb === 'create' && e.stage === 'ResponseComplete' && e.objectRef?.name === 'cm1');
    });
    assert.equal(audited.annotations?.['label.orch.test/labelled'], 'true');
    assert.deepEqual(JSON.parse(audited.annotations?.['mutation.webhook.admission.k8s.io/round_0_index_0'] ?? '{}'), {
      configuration: 'labeller',
      webhook: 'label.orch.test',
      mutated: true,
    });

    const before = reviewsAt('/label').length;
    await ok(['create', 'configmap', 'cm1', '-n', 'plain', '--from-literal=a=1']);
    const plain = await json(['get', 'configmap', 'cm1', '-n', 'plain']);
    assert.equal(plain.metadata.labels?.mutated, undefined, 'the namespace does not match the selector');
    assert.equal(reviewsAt('/label').length, before);
    await ok(['delete', 'mutatingwebhookconfiguration', 'labeller']);
  });

  it('refuses what a validating webhook denies, worded as Kubernetes, for objects its objectSelector picks', async () => {
    await ok(['create', '-f', '-'], validating('denier', [webhook('deny.orch.test', '/deny', ['configmaps'], { objectSelector: { matchLabels: { check: 'yes' } } })]));
    const denied = JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'bad', labels: { check: 'yes' } }, data: { forbidden: 'x' } });
    const err = await refused(['create', '-n', 'plain', '-f', '-'], denied);
    assert.equal(err, 'Error from server (Forbidden): error when creating "STDIN": admission webhook "deny.orch.test" denied the request: no forbidden keys');
    const raw = await c.request('POST', '/api/v1/namespaces/plain/configmaps', { body: JSON.parse(denied) });
    assert.equal(raw.status, 403);
    assert.equal(raw.json.reason, 'Forbidden');
    assert.equal(raw.json.message, 'admission webhook "deny.orch.test" denied the request: no forbidden keys');
    // Not labelled check=yes: not sent to the webhook.
    const calls = reviewsAt('/deny').length;
    await ok(['create', '-n', 'plain', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'unchecked' }, data: { forbidden: 'x' } }));
    assert.equal(reviewsAt('/deny').length, calls);
    // An update is checked against the new object.
    const labelled = await c.kubectl(['label', 'configmap', 'unchecked', '-n', 'plain', 'check=yes', '--overwrite']);
    assert.match(labelled.stderr, /admission webhook "deny.orch.test" denied the request: no forbidden keys/);
    assert.equal(reviewsAt('/deny').at(-1)!.request['operation'], 'UPDATE');
    await ok(['delete', 'validatingwebhookconfiguration', 'denier']);
  });

  it('skips a dead webhook under failurePolicy Ignore and fails the request under Fail', async () => {
    const deadHook = (name: string, failurePolicy: string) => ({
      ...webhook(name, '/dead', ['secrets']),
      clientConfig: { url: `https://127.0.0.1:${dead}/dead`, caBundle },
      failurePolicy,
    });
    await ok(['create', '-f', '-'], validating('dead-ignore', [deadHook('ignore.orch.test', 'Ignore')]));
    await ok(['create', 'secret', 'generic', 's1', '-n', 'plain', '--from-literal=a=1']);
    await ok(['create', '-f', '-'], validating('dead-fail', [deadHook('fail.orch.test', 'Fail')]));
    const err = await refused(['create', 'secret', 'generic', 's2', '-n', 'plain', '--from-literal=a=1']);
    assert.equal(
      err,
      `error: failed to create secret Internal error occurred: failed calling webhook "fail.orch.test": failed to call webhook: Post "https://127.0.0.1:${dead}/dead?timeout=10s": dial tcp 127.0.0.1:${dead}: connect: connection refused`,
    );
    await ok(['delete', 'validatingwebhookconfiguration', 'dead-ignore', 'dead-fail']);
    await ok(['create', 'secret', 'generic', 's2', '-n', 'plain', '--from-literal=a=1']);
  });

  it('sends dry runs only to webhooks without side effects on dry run', async () => {
    const body = (name: string, sideEffects: string) => ({
      ...webhook(name, '/none', ['services']),
      sideEffects,
      admissionReviewVersions: ['v1beta1'],
    });
    // v1 allows only None and NoneOnDryRun: a configuration with Some is one an older server stored (v1beta1).
    const store = c.cp.registry.store('admissionregistration.k8s.io', 'v1', 'validatingwebhookconfigurations')!;
    const old = JSON.parse(validating('sidefx', [body('some.orch.test', 'Some')]));
    old.webhooks[0] = { ...old.webhooks[0], failurePolicy: 'Ignore', matchPolicy: 'Exact', timeoutSeconds: 30, namespaceSelector: {}, objectSelector: {} };
    await c.cp.storage.kvFor('admissionregistration.k8s.io', 'validatingwebhookconfigurations').create(store.key('', 'sidefx'), Buffer.from(JSON.stringify(old)));
    const err = await eventually('the stored configuration in effect', async () => {
      const r = await c.kubectl(['create', 'service', 'clusterip', 'dry', '-n', 'plain', '--tcp=80:80', '--dry-run=server']);
      return r.code !== 0 && r.stderr.trim();
    });
    assert.equal(err, 'error: failed to create ClusterIP service: admission webhook "some.orch.test" does not support dry run');
    await ok(['delete', 'validatingwebhookconfiguration', 'sidefx']);

    await ok(['create', '-f', '-'], validating('nodry', [{ ...body('nodry.orch.test', 'NoneOnDryRun'), clientConfig: { url: `https://127.0.0.1:${port}/nodry`, caBundle } }]));
    await ok(['create', 'service', 'clusterip', 'dry', '-n', 'plain', '--tcp=80:80', '--dry-run=server']);
    const review = reviewsAt('/nodry').at(-1)!;
    assert.equal(review.apiVersion, 'admission.k8s.io/v1beta1', 'the first version the webhook accepts');
    assert.equal(review.request['dryRun'], true);
    assert.deepEqual(review.request['options'].dryRun, ['All']);
    await ok(['delete', 'validatingwebhookconfiguration', 'nodry']);
  });

  it('reaches a webhook through its Service (ExternalName) with the certificate of <service>.<namespace>.svc', async () => {
    await ok(['create', 'service', 'externalname', 'hooks', '-n', 'hooked', '--external-name=127.0.0.1']);
    await ok(['create', '-f', '-'], validating('by-service', [
      { ...webhook('svc.orch.test', '/svc', ['configmaps']), clientConfig: { service: { namespace: 'hooked', name: 'hooks', path: '/svc', port }, caBundle } },
    ]));
    await ok(['create', 'configmap', 'via-service', '-n', 'plain']);
    assert.equal(reviewsAt('/svc').at(-1)?.request['name'], 'via-service');
    assert.equal(authorization.get('/svc'), 'Bearer service-token', 'the kubeconfig user *.hooked.svc:<port>');
    // A Service that does not exist: the webhook cannot be called (failurePolicy Fail).
    await ok(['delete', 'service', 'hooks', '-n', 'hooked']);
    assert.equal(
      await refused(['create', 'configmap', 'no-service', '-n', 'plain']),
      'error: failed to create configmap: Internal error occurred: failed calling webhook "svc.orch.test": failed to call webhook: service "hooks" not found',
    );
    await ok(['delete', 'validatingwebhookconfiguration', 'by-service']);
  });

  it('resolves a webhook Service default/kubernetes on port 443 to the server’s own loopback address', async () => {
    const self = b64(c.cp.server.caCert);
    const loopHook = (port: number) =>
      validating('loop', [{ ...webhook('loop.orch.test', '/x', ['configmaps']), clientConfig: { service: { namespace: 'default', name: 'kubernetes', path: '/loop', port }, caBundle: self } }]);
    await ok(['create', '-f', '-'], loopHook(443));
    // The server itself answers the review, anonymous here (no credentials for kubernetes.default.svc:443):
    // its 401 Status is the webhook's failure, under failurePolicy Fail.
    assert.equal(
      await refused(['create', 'configmap', 'looped', '-n', 'plain']),
      'error: failed to create configmap: Internal error occurred: failed calling webhook "loop.orch.test": failed to call webhook: Unauthorized',
    );
    await ok(['delete', 'validatingwebhookconfiguration', 'loop']);
    // Any other port goes to the Service's cluster IP resolver, which knows only port 443 of it.
    await ok(['create', '-f', '-'], loopHook(444));
    assert.equal(
      await refused(['create', 'configmap', 'looped', '-n', 'plain']),
      'error: failed to create configmap: Internal error occurred: failed calling webhook "loop.orch.test": failed to call webhook: no service port 444 found for service "kubernetes"',
    );
    await ok(['delete', 'validatingwebhookconfiguration', 'loop']);
  });

  it('reinvokes an IfNeeded webhook once a later webhook changed the object', async () => {
    await ok(['create', '-f', '-'], mutating('a-count', [webhook('count.orch.test', '/count', ['configmaps'], { reinvocationPolicy: 'IfNeeded' })]));
    await ok(['create', '-f', '-'], mutating('b-late', [webhook('late.orch.test', '/late', ['configmaps'])]));
    await ok(['create', 'configmap', 'reinvoked', '-n', 'plain']);
    const cm = await json(['get', 'configmap', 'reinvoked', '-n', 'plain']);
    assert.equal(cm.metadata.annotations.late, 'set');
    assert.equal(cm.metadata.annotations.count, '2', 'called, then called again after b-late changed the object');
    await ok(['delete', 'mutatingwebhookconfiguration', 'a-count', 'b-late']);
  });

  it('re-runs the in-tree mutating plugins when a webhook changed the object: LimitRanger defaults the container a webhook added', async () => {
    await ok(['create', '-f', '-'], JSON.stringify({
      apiVersion: 'v1',
      kind: 'LimitRange',
      metadata: { name: 'cpu-defaults', namespace: 'plain' },
      spec: { limits: [{ type: 'Container', defaultRequest: { cpu: '100m' }, default: { cpu: '200m' } }] },
    }));
    await ok(['create', '-f', '-'], mutating('sidecar', [webhook('sidecar.orch.test', '/sidecar', ['pods'], { rules: rule(['pods'], ['CREATE']) })]));
    const before = reviewsAt('/sidecar').length;
    await ok(['run', 'with-sidecar', '-n', 'plain', '--image=busybox', '--restart=Never']);
    const pod = await json(['get', 'pod', 'with-sidecar', '-n', 'plain']);
    const byName = new Map<string, any>(pod.spec.containers.map((c: { name: string }) => [c.name, c]));
    assert.deepEqual(byName.get('with-sidecar')?.resources, { limits: { cpu: '200m' }, requests: { cpu: '100m' } });
    // LimitRanger ran before the webhook added the sidecar; only its second pass can have defaulted it.
    assert.deepEqual(byName.get('sidecar')?.resources, { limits: { cpu: '200m' }, requests: { cpu: '100m' } });
    assert.equal(reviewsAt('/sidecar').length, before + 1, 'a webhook with reinvocationPolicy Never is called once');
    const metrics = (await ok(['get', '--raw', '/metrics'])).stdout;
    const count = (series: string) => Number(new RegExp(`^${series.replace(/[{}]/g, '\\$&')} (\\S+)$`, 'm').exec(metrics)?.[1] ?? 'NaN');
    assert.ok(count('apiserver_admission_controller_admission_duration_seconds_count{name="LimitRanger",operation="CREATE",rejected="false",type="admit"}') >= 2);
    assert.equal(count('apiserver_admission_webhook_admission_duration_seconds_count{name="sidecar.orch.test",operation="CREATE",rejected="false",type="admit"}'), 1);
    assert.equal(count('apiserver_admission_webhook_request_total{code="200",name="sidecar.orch.test",operation="CREATE",rejected="false",type="admit"}'), 1);
    assert.ok(count('apiserver_admission_step_admission_duration_seconds_count{operation="CREATE",rejected="false",type="admit"}') >= 1);
    await ok(['delete', 'mutatingwebhookconfiguration', 'sidecar']);
    await ok(['delete', 'limitrange', 'cpu-defaults', '-n', 'plain']);
    await ok(['delete', 'pod', 'with-sidecar', '-n', 'plain', '--wait=false']);
  });

  it('counts webhook calls and rejections in /metrics as 1.23 names and labels them', async () => {
    await ok(['create', '-f', '-'], validating('metrics', [
      webhook('deny-metrics.orch.test', '/deny', ['configmaps']),
      { ...webhook('dead-metrics.orch.test', '/x', ['configmaps'], { objectSelector: { matchLabels: { dead: 'yes' } } }), clientConfig: { url: `https://127.0.0.1:${dead}/x`, caBundle } },
    ]));
    await refused(['create', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'metered', namespace: 'plain' }, data: { forbidden: 'x' } }));
    await refused(['create', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'metered-dead', namespace: 'plain', labels: { dead: 'yes' } } }));
    const metrics = (await ok(['get', '--raw', '/metrics'])).stdout;
    const lines = metrics.split('\n');
    for (const line of [
      'apiserver_admission_webhook_rejection_count{error_type="no_error",name="deny-metrics.orch.test",operation="CREATE",rejection_code="403",type="validating"} 1',
      'apiserver_admission_webhook_request_total{code="403",name="deny-metrics.orch.test",operation="CREATE",rejected="true",type="validating"} 1',
      'apiserver_admission_webhook_rejection_count{error_type="calling_webhook_error",name="dead-metrics.orch.test",operation="CREATE",rejection_code="503",type="validating"} 1',
      'apiserver_admission_webhook_request_total{code="503",name="dead-metrics.orch.test",operation="CREATE",rejected="true",type="validating"} 1',
      'apiserver_admission_webhook_admission_duration_seconds_count{name="deny-metrics.orch.test",operation="CREATE",rejected="true",type="validating"} 1',
    ]) {
      assert.ok(lines.includes(line), `missing: ${line}`);
    }
    assert.ok(lines.some((l) => l.startsWith('apiserver_admission_controller_admission_duration_seconds_count{name="ValidatingAdmissionWebhook",operation="CREATE",rejected="true",type="validate"} ')));
    assert.ok(lines.includes('# TYPE apiserver_admission_step_admission_duration_seconds histogram'));
    // The step's summary has no quantiles in 1.23 (no objectives): its sum and count.
    assert.ok(lines.includes('# TYPE apiserver_admission_step_admission_duration_seconds_summary summary'));
    assert.ok(lines.some((l) => l.startsWith('apiserver_admission_step_admission_duration_seconds_summary_count{operation="CREATE",rejected="true",type="validate"} ')));
    assert.ok(lines.some((l) => l.startsWith('apiserver_admission_step_admission_duration_seconds_bucket{operation="CREATE",rejected="true",type="validate",le="0.005"}')));
    await ok(['delete', 'validatingwebhookconfiguration', 'metrics']);
  });

  it('treats a patch that is not a JSON patch array as the webhook’s failure, under its failure policy', async () => {
    await ok(['create', '-f', '-'], mutating('badpatch', [webhook('badpatch.orch.test', '/badpatch', ['configmaps'], { failurePolicy: 'Ignore' })]));
    await ok(['create', 'configmap', 'patched-badly', '-n', 'plain']);
    await ok(['delete', 'mutatingwebhookconfiguration', 'badpatch']);
    await ok(['create', '-f', '-'], mutating('badpatch', [webhook('badpatch.orch.test', '/badpatch', ['configmaps'], { failurePolicy: 'Fail' })]));
    const err = await refused(['create', 'configmap', 'patched-badly-2', '-n', 'plain']);
    assert.ok(
      err.startsWith('error: failed to create configmap: Internal error occurred: failed calling webhook "badpatch.orch.test": received undecodable patch in webhook response: '),
      err,
    );
    await ok(['delete', 'mutatingwebhookconfiguration', 'badpatch']);
  });

  it('gives up on a webhook after its timeoutSeconds', async () => {
    await ok(['create', '-f', '-'], validating('slow', [webhook('slow.orch.test', '/slow', ['configmaps'], { timeoutSeconds: 1, namespaceSelector: { matchLabels: { webhooks: 'on' } } })]));
    const err = await refused(['create', 'configmap', 'slowly', '-n', 'hooked']);
    assert.equal(
      err,
      `error: failed to create configmap: Internal error occurred: failed calling webhook "slow.orch.test": failed to call webhook: Post "https://127.0.0.1:${port}/slow?timeout=1s": context deadline exceeded`,
    );
    await ok(['delete', 'validatingwebhookconfiguration', 'slow']);
  });

  it('calls a webhook for another version of the same resource under matchPolicy Equivalent, with the object converted', async () => {
    const eventsRule = [{ operations: ['CREATE'], apiGroups: ['events.k8s.io'], apiVersions: ['v1'], resources: ['events'] }];
    await ok(['create', '-f', '-'], validating('equivalent', [
      webhook('equivalent.orch.test', '/equivalent', [], { rules: eventsRule }),
      webhook('exact.orch.test', '/exact', [], { rules: eventsRule, matchPolicy: 'Exact' }),
    ]));
    const event = { apiVersion: 'v1', kind: 'Event', metadata: { name: 'ev1' }, involvedObject: { kind: 'Pod', name: 'x', namespace: 'plain' }, reason: 'Tested', message: 'hello', type: 'Normal' };
    await ok(['create', '-n', 'plain', '-f', '-'], JSON.stringify(event));
    const req = reviewsAt('/equivalent').at(-1)!.request;
    assert.deepEqual(req['kind'], { group: 'events.k8s.io', version: 'v1', kind: 'Event' });
    assert.deepEqual(req['resource'], { group: 'events.k8s.io', version: 'v1', resource: 'events' });
    assert.deepEqual(req['requestKind'], { group: '', version: 'v1', kind: 'Event' });
    assert.deepEqual(req['requestResource'], { group: '', version: 'v1', resource: 'events' });
    assert.equal(req['object'].apiVersion, 'events.k8s.io/v1');
    assert.equal(req['object'].note, 'hello');
    assert.equal(reviewsAt('/exact').length, 0, 'matchPolicy Exact: only events.k8s.io/v1 requests');
    await ok(['delete', 'validatingwebhookconfiguration', 'equivalent']);
  });

  it('sends deletes to mutating webhooks, which may refuse them (code 400 when the webhook gives none)', async () => {
    await ok(['create', 'configmap', 'kept', '-n', 'plain']);
    await ok(['create', '-f', '-'], mutating('keeper', [webhook('nodelete.orch.test', '/nodelete', [], { rules: rule(['configmaps'], ['DELETE']) })]));
    const raw = await c.request('DELETE', '/api/v1/namespaces/plain/configmaps/kept');
    assert.equal(raw.status, 400);
    assert.equal(raw.json.message, 'admission webhook "nodelete.orch.test" denied the request: keep it');
    const req = reviewsAt('/nodelete').at(-1)!.request;
    assert.equal(req['operation'], 'DELETE');
    assert.equal(req['object'], null);
    assert.equal(req['oldObject'].metadata.name, 'kept');
    assert.equal(req['options'].kind, 'DeleteOptions');
    assert.match(await refused(['delete', 'configmap', 'kept', '-n', 'plain']), /admission webhook "nodelete.orch.test" denied the request: keep it$/);
    await ok(['delete', 'mutatingwebhookconfiguration', 'keeper']);
    await ok(['delete', 'configmap', 'kept', '-n', 'plain']);
  });

  it('sends a subresource’s own body kind (pods/eviction) to a rule naming the subresource', async () => {
    await eventually('the default ServiceAccount of plain', async () => (await c.kubectl(['get', 'serviceaccount', 'default', '-n', 'plain'])).code === 0);
    await ok(['run', 'evicted', '-n', 'plain', '--image=busybox:1.36']);
    await ok(['create', '-f', '-'], validating('evictions', [webhook('eviction.orch.test', '/eviction', ['pods/eviction'])]));
    const r = await c.request('POST', '/api/v1/namespaces/plain/pods/evicted/eviction', {
      body: { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name: 'evicted', namespace: 'plain' } },
    });
    assert.equal(r.status, 201, r.text);
    const req = reviewsAt('/eviction').at(-1)!.request;
    assert.deepEqual(req['kind'], { group: 'policy', version: 'v1', kind: 'Eviction' });
    assert.deepEqual(req['resource'], { group: '', version: 'v1', resource: 'pods' });
    assert.equal(req['subResource'], 'eviction');
    assert.equal(req['name'], 'evicted');
    assert.equal(reviewsAt('/eviction').length, 1, 'not called for the pod itself');
    await ok(['delete', 'validatingwebhookconfiguration', 'evictions']);
  });

  it('refuses answers that break the AdmissionReview v1 contract (a patch from a validating webhook)', async () => {
    await ok(['create', '-f', '-'], validating('patcher', [webhook('patcher.orch.test', '/label', ['configmaps'], { namespaceSelector: { matchLabels: { webhooks: 'on' } } })]));
    assert.equal(
      await refused(['create', 'configmap', 'patched', '-n', 'hooked']),
      'error: failed to create configmap: Internal error occurred: failed calling webhook "patcher.orch.test": received invalid webhook response: validating webhook may not return response.patch',
    );
    await ok(['delete', 'validatingwebhookconfiguration', 'patcher']);
  });
});
