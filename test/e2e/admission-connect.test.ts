/**
 * CONNECT admission through kubectl exec: pods/exec, pods/attach and pods/portforward go through the admission
 * chain as Kubernetes' ConnectResource sends them (operation CONNECT, the connect options object —
 * PodExecOptions, PodAttachOptions, PodPortForwardOptions — as the object, no operation options): a validating
 * webhook with a CONNECT rule refuses an exec, a mutating one rewrites an exec's command (the admitted options
 * are the ones used), a webhook without CONNECT in its rules is not called, pods/log is not a connect, and
 * AlwaysDeny refuses connects with Kubernetes' wording.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { requireBinary } from '../helpers/binaries.js';
import { startCluster, type TestCluster } from '../helpers/cluster.js';
import { startAgent, type TestAgent } from '../helpers/agent.js';
import { waitFor } from '../agent/runtime-contract.js';
import { makeCA, makeServingCert } from '../../src/server/certs.js';

const present = requireBinary(undefined, 'kubectl') !== null;
if (!present && process.env.CI === 'true') throw new Error('kubectl is required under CI=true');
const skip = !present && 'kubectl not installed';

type Json = Record<string, any>;
type Review = { apiVersion: string; kind: string; request: Json };
const b64 = (s: string) => Buffer.from(s).toString('base64');
const upgrade = { connection: 'Upgrade', upgrade: 'SPDY/3.1' };

void describe('CONNECT admission through kubectl exec', { skip }, () => {
  let c: TestCluster;
  let a: TestAgent;
  let hook: Server;
  let caBundle = '';
  let port = 0;
  const seen = new Map<string, Review[]>();
  const reviewsAt = (path: string) => seen.get(path) ?? [];

  function answer(path: string, req: Json): Json {
    const obj = (req['object'] ?? {}) as Json;
    const command = Array.isArray(obj['command']) ? (obj['command'] as string[]) : [];
    switch (path) {
      case '/deny-connect':
        if (command.some((c) => c.includes('forbidden'))) return { allowed: false, status: { code: 403, reason: 'Forbidden', message: 'no forbidden commands' } };
        if (obj['kind'] === 'PodPortForwardOptions') return { allowed: false, status: { message: 'no port forwarding' } };
        return { allowed: true };
      case '/rewrite':
        if (command[0] === 'rewrite-me') {
          return { allowed: true, patchType: 'JSONPatch', patch: b64(JSON.stringify([{ op: 'replace', path: '/command', value: ['echo', 'rewritten'] }])) };
        }
        return { allowed: true };
      default:
        return { allowed: true };
    }
  }

  const webhook = (name: string, path: string, resources: string[], operations: string[]) => ({
    name,
    clientConfig: { url: `https://127.0.0.1:${port}${path}`, caBundle },
    rules: [{ operations, apiGroups: [''], apiVersions: ['v1'], resources }],
    sideEffects: 'None',
    admissionReviewVersions: ['v1'],
    failurePolicy: 'Fail',
  });
  const ok = async (args: string[], input?: string) => {
    const r = await c.kubectl(args, input === undefined ? {} : { input });
    assert.equal(r.code, 0, `kubectl ${args.join(' ')}: ${r.stderr}`);
    return r;
  };

  before(async () => {
    const ca = await makeCA('webhook-ca');
    const serving = await makeServingCert(ca.cert, ca.key, 'webhook', ['127.0.0.1']);
    caBundle = b64(ca.cert);
    hook = createServer({ cert: serving.cert, key: serving.key }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (d: Buffer) => chunks.push(d));
      req.on('end', () => {
        const path = new URL(req.url ?? '/', 'https://x').pathname;
        const review = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Review;
        seen.set(path, [...reviewsAt(path), review]);
        res.setHeader('Content-Type', 'application/json');
        res.end(JSON.stringify({ apiVersion: review.apiVersion, kind: 'AdmissionReview', response: { uid: review.request['uid'], ...answer(path, review.request) } }));
      });
    });
    await new Promise<void>((resolve) => hook.listen(0, '127.0.0.1', resolve));
    port = (hook.address() as AddressInfo).port;
    c = await startCluster();
    a = await startAgent(c);
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'shell', namespace: 'default' },
      spec: {
        nodeName: a.nodeName,
        terminationGracePeriodSeconds: 1,
        automountServiceAccountToken: false,
        containers: [{ name: 'main', image: 'busybox', command: ['sh', '-c', 'echo ready; exec sleep 600'] }],
      },
    };
    await ok(['create', '-f', '-'], JSON.stringify(pod));
    await waitFor('pod shell Running', async () => {
      const r = await c.kubectl(['get', 'pod', 'shell', '-o', 'json']);
      const p = r.code === 0 ? (JSON.parse(r.stdout) as Json) : undefined;
      return p?.status?.containerStatuses?.[0]?.state?.running ? p : undefined;
    }, 20_000);
    await ok(['create', '-f', '-'], JSON.stringify({
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      metadata: { name: 'connect-guard' },
      webhooks: [
        webhook('deny-connect.orch.test', '/deny-connect', ['pods/exec', 'pods/attach', 'pods/portforward'], ['CONNECT']),
        // Not a CONNECT rule: never called for exec.
        webhook('create-only.orch.test', '/create-only', ['pods/*'], ['CREATE']),
      ],
    }));
    await ok(['create', '-f', '-'], JSON.stringify({
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'MutatingWebhookConfiguration',
      metadata: { name: 'connect-rewrite' },
      webhooks: [webhook('rewrite.orch.test', '/rewrite', ['pods/exec'], ['*'])],
    }));
  });
  after(async () => {
    await a?.stop();
    await c?.stop();
    await new Promise((resolve) => hook?.close(resolve));
  });

  void it('sends an exec to CONNECT webhooks as Kubernetes does, with PodExecOptions as the object', async () => {
    const before = reviewsAt('/deny-connect').length;
    const r = await ok(['exec', 'shell', '--', 'echo', 'allowed']);
    assert.equal(r.stdout, 'allowed\n');
    const review = reviewsAt('/deny-connect').slice(before).at(-1);
    assert.ok(review, 'the validating webhook was called');
    const q = review.request;
    assert.equal(q['operation'], 'CONNECT');
    assert.deepEqual(q['kind'], { group: '', version: 'v1', kind: 'PodExecOptions' });
    assert.deepEqual(q['requestKind'], { group: '', version: 'v1', kind: 'PodExecOptions' });
    assert.deepEqual(q['resource'], { group: '', version: 'v1', resource: 'pods' });
    assert.equal(q['subResource'], 'exec');
    assert.equal(q['name'], 'shell');
    assert.equal(q['namespace'], 'default');
    assert.equal(q['userInfo']?.username, 'admin');
    assert.equal(q['dryRun'], false);
    assert.equal(q['options'], null);
    assert.equal(q['oldObject'], null);
    assert.deepEqual(q['object'], { kind: 'PodExecOptions', apiVersion: 'v1', stdout: true, stderr: true, container: 'main', command: ['echo', 'allowed'] });
    assert.equal(reviewsAt('/create-only').length, 0, 'a webhook without CONNECT in its rules is not called for exec');
  });

  void it('refuses an exec a validating webhook denies, with the webhook\'s message', async () => {
    const r = await c.kubectl(['exec', 'shell', '--', 'sh', '-c', 'echo forbidden']);
    assert.notEqual(r.code, 0, r.stdout);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, /admission webhook "deny-connect.orch.test" denied the request: no forbidden commands/);
  });

  void it('runs the options a mutating webhook changed', async () => {
    const r = await ok(['exec', 'shell', '--', 'rewrite-me']);
    assert.equal(r.stdout, 'rewritten\n');
    const q = reviewsAt('/rewrite').at(-1)?.request;
    assert.equal(q?.['operation'], 'CONNECT');
    assert.deepEqual(q?.['object']?.command, ['rewrite-me']);
    // The validating webhook, later, saw the rewritten command.
    assert.deepEqual(reviewsAt('/deny-connect').at(-1)?.request['object']?.command, ['echo', 'rewritten']);
  });

  void it('admits attach and port-forward with their own options kinds; pods/log is not a connect', async () => {
    const pf = await c.request('POST', '/api/v1/namespaces/default/pods/shell/portforward?ports=8080&ports=%2B9090', { headers: upgrade });
    assert.equal(pf.status, 400, pf.text);
    assert.equal(pf.json?.message, 'admission webhook "deny-connect.orch.test" denied the request: no port forwarding');
    assert.deepEqual(reviewsAt('/deny-connect').at(-1)?.request['object'], { kind: 'PodPortForwardOptions', apiVersion: 'v1', ports: [8080, 9090] });
    const bad = await c.request('POST', '/api/v1/namespaces/default/pods/shell/portforward?ports=x', { headers: upgrade });
    assert.equal(bad.status, 400);
    assert.match(String(bad.json?.message), /strconv.ParseInt: parsing "x": invalid syntax/);

    const before = reviewsAt('/deny-connect').length;
    // Not an upgrade: admitted first (as Kubernetes), then refused by the connector.
    const attach = await c.request('POST', '/api/v1/namespaces/default/pods/shell/attach?stdin=1&tty=true&container=main');
    assert.equal(attach.status, 400);
    assert.equal(attach.json?.message, 'Upgrade request required');
    assert.deepEqual(reviewsAt('/deny-connect').at(-1)?.request['object'], {
      kind: 'PodAttachOptions',
      apiVersion: 'v1',
      stdin: true,
      stdout: true,
      stderr: true,
      tty: true,
      container: 'main',
    });
    const logs = await ok(['logs', 'shell']);
    assert.match(logs.stdout, /ready/);
    assert.equal(reviewsAt('/deny-connect').length, before + 1, 'pods/log went through no CONNECT admission');
  });
});

void describe('AlwaysDeny refuses connects', { skip }, () => {
  let c: TestCluster;
  before(async () => {
    c = await startCluster(['--enable-admission-plugins=AlwaysDeny']);
  });
  after(async () => {
    await c?.stop();
  });

  void it('answers an exec with 403 "admission control is denying all modifications", before looking up the pod', async () => {
    const r = await c.request('POST', '/api/v1/namespaces/default/pods/anything/exec?command=true&stdout=1', { headers: upgrade });
    assert.equal(r.status, 403, r.text);
    assert.equal(r.json?.reason, 'Forbidden');
    assert.equal(r.json?.message, 'pods "anything" is forbidden: admission control is denying all modifications');
  });
});
