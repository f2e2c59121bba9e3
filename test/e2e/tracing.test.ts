// --tracing-config-file under APIServerTracing: spans for requests received by an OTLP/gRPC receiver this
// test runs on loopback (test/helpers/otlp.ts); the sampling rate; an incoming traceparent as parent;
// traceparent sent to a token webhook;
// storage calls as child spans of the request span; an extension API server (aggregation layer) the test runs
// on loopback receiving the trace through a client span of the proxied call.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { stringify } from 'yaml';
import { startCluster, type TestCluster } from '../helpers/cluster.js';
import { requireBinary } from '../helpers/binaries.js';
import { startOtlpReceiver, type OtlpReceiver } from '../helpers/otlp.js';
import { parseServerOptions } from '../../src/server/options.js';
import { makeCA, makeServingCert } from '../../src/server/certs.js';

async function waitFor<T>(what: string, probe: () => T | undefined): Promise<T> {
  for (let i = 0; i < 300; i++) {
    const v = probe();
    if (v !== undefined) return v;
    await sleep(50);
  }
  throw new Error(`timed out waiting for ${what}`);
}

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT_ID = '00f067aa0ba902b7';

describe('--tracing-config-file (APIServerTracing)', () => {
  let dir: string;
  let receiver: OtlpReceiver;
  let hook: Server;
  let ext: HttpsServer;
  let extCA = '';
  const admissionTraceparents: (string | undefined)[] = [];
  const extTraceparents = new Map<string, string | undefined>();
  const hookTraceparents: (string | undefined)[] = [];
  let webhookConfig: string;
  let c: TestCluster | undefined;
  const savedDelay = process.env['OTEL_BSP_SCHEDULE_DELAY'];

  const tracingFile = async (name: string, body: Record<string, unknown>): Promise<string> => {
    const path = join(dir, name);
    await writeFile(path, stringify({ apiVersion: 'apiserver.config.k8s.io/v1alpha1', kind: 'TracingConfiguration', ...body }));
    return path;
  };

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'orch-tracing-'));
    receiver = await startOtlpReceiver();
    process.env['OTEL_BSP_SCHEDULE_DELAY'] = '50';
    hook = createServer((req, res) => {
      hookTraceparents.push(req.headers['traceparent'] as string | undefined);
      req.resume();
      req.on('end', () => {
        res.setHeader('Content-Type', 'application/json');
        const status = { authenticated: true, user: { username: 'hooked', groups: ['system:masters'] } };
        res.end(JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', status }));
      });
    });
    await new Promise<void>((resolve) => hook.listen(0, '127.0.0.1', resolve));
    // An extension API server for group wardle.example.com/v1alpha1.
    const ca = await makeCA('wardle-ca');
    const serving = await makeServingCert(ca.cert, ca.key, 'ext-api.default.svc', ['ext-api.default.svc']);
    extCA = ca.cert;
    ext = createHttpsServer({ cert: serving.cert, key: serving.key }, (req, res) => {
      extTraceparents.set(req.url ?? '', req.headers['traceparent'] as string | undefined);
      if (req.url?.startsWith('/validate')) {
        // Also a validating admission webhook.
        admissionTraceparents.push(req.headers['traceparent'] as string | undefined);
        let body = '';
        req.on('data', (d: Buffer) => (body += d.toString()));
        req.on('end', () => {
          const uid = (JSON.parse(body) as { request: { uid: string } }).request.uid;
          res.setHeader('content-type', 'application/json');
          res.end(JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid, allowed: true } }));
        });
        return;
      }
      res.setHeader('content-type', 'application/json');
      if (req.url === '/apis/wardle.example.com/v1alpha1') {
        const resources = [{ name: 'flunders', singularName: 'flunder', namespaced: true, kind: 'Flunder', verbs: ['get', 'list'] }];
        res.end(JSON.stringify({ kind: 'APIResourceList', apiVersion: 'v1', groupVersion: 'wardle.example.com/v1alpha1', resources }));
        return;
      }
      res.end(JSON.stringify({ kind: 'FlunderList', apiVersion: 'wardle.example.com/v1alpha1', metadata: {}, items: [] }));
    });
    await new Promise<void>((resolve) => ext.listen(0, '127.0.0.1', resolve));
    webhookConfig = join(dir, 'token-webhook.kubeconfig');
    await writeFile(
      webhookConfig,
      stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'hook', cluster: { server: `http://127.0.0.1:${(hook.address() as AddressInfo).port}/review` } }],
        users: [{ name: 'apiserver', user: {} }],
        contexts: [{ name: 'hook', context: { cluster: 'hook', user: 'apiserver' } }],
        'current-context': 'hook',
      }),
    );
  });

  after(async () => {
    await c?.stop();
    if (savedDelay === undefined) delete process.env['OTEL_BSP_SCHEDULE_DELAY'];
    else process.env['OTEL_BSP_SCHEDULE_DELAY'] = savedDelay;
    receiver.close();
    await new Promise((resolve) => hook.close(resolve));
    ext.closeAllConnections();
    await new Promise((resolve) => ext.close(resolve));
    await rm(dir, { recursive: true, force: true });
  });

  it('is refused without the APIServerTracing gate, and bad files stop the start', async () => {
    const path = await tracingFile('all.yaml', { samplingRatePerMillion: 1_000_000 });
    assert.throws(() => parseServerOptions([`--tracing-config-file=${path}`]), /--tracing-config-file requires the APIServerTracing feature gate to be enabled/);
    const bad = await tracingFile('bad.yaml', { samplingRatePerMillion: 2_000_000 });
    await assert.rejects(
      startCluster(['--feature-gates=APIServerTracing=true', `--tracing-config-file=${bad}`]),
      /samplingRatePerMillion: Invalid value: 2000000: sampling rate per million must be less than or equal to one million/,
    );
  });

  it('exports a server span for a kubectl request, with otelhttp attributes', async () => {
    const path = await tracingFile('all.yaml', { endpoint: receiver.endpoint, samplingRatePerMillion: 1_000_000 });
    c = await startCluster([
      '--feature-gates=APIServerTracing=true',
      `--tracing-config-file=${path}`,
      `--authentication-token-webhook-config-file=${webhookConfig}`,
    ]);
    const r = await c.kubectl(['get', 'namespaces', 'kube-system', '-o', 'name']);
    assert.equal(r.code, 0, r.stderr);
    const span = await waitFor('the kubectl span', () =>
      receiver.spans.find((s) => s.attributes['http.target'] === '/api/v1/namespaces/kube-system' && String(s.attributes['http.user_agent']).startsWith('kubectl')),
    );
    assert.equal(span.name, 'KubernetesAPI');
    assert.equal(span.kind, 2); // SERVER
    assert.equal(span.resource['service.name'], 'apiserver');
    assert.equal(span.attributes['http.method'], 'GET');
    assert.equal(span.attributes['http.status_code'], 200);
    assert.equal(span.attributes['http.scheme'], 'https');
    assert.equal(span.attributes['http.server_name'], 'KubernetesAPI');
    assert.equal(span.attributes['net.peer.ip'], '127.0.0.1');
    assert.ok(Number(span.attributes['http.wrote_bytes']) > 0);
    assert.match(span.traceId, /^[0-9a-f]{32}$/);
    assert.equal(span.parentSpanId, '');
    assert.equal(span.status.code, 0);
    assert.ok(span.end >= span.start);

    const missing = await c.request('GET', '/api/v1/namespaces/no-such-namespace');
    assert.equal(missing.status, 404);
    const failed = await waitFor('the 404 span', () => receiver.spans.find((s) => s.attributes['http.target'] === '/api/v1/namespaces/no-such-namespace'));
    assert.equal(failed.attributes['http.status_code'], 404);
    assert.equal(failed.status.code, 2); // ERROR, as otelhttp's semconv for 4xx
  });

  it('honours an incoming traceparent as parent and propagates the request span to the token webhook', async () => {
    assert.ok(c);
    hookTraceparents.length = 0;
    const r = await c.request('GET', '/api/v1/namespaces/default', {
      headers: { authorization: 'Bearer hooked-1', traceparent: `00-${TRACE_ID}-${PARENT_ID}-01` },
    });
    assert.equal(r.status, 200, r.text);
    const span = await waitFor('the child span', () => receiver.spans.find((s) => s.traceId === TRACE_ID && s.attributes['http.target'] === '/api/v1/namespaces/default'));
    assert.equal(span.parentSpanId, PARENT_ID);
    assert.deepEqual(hookTraceparents, [`00-${TRACE_ID}-${span.spanId}-01`]);
  });

  it('traces storage calls as child spans of the request span', async () => {
    assert.ok(c);
    const r = await c.kubectl(['create', 'namespace', 'traced-ns']);
    assert.equal(r.code, 0, r.stderr);
    const request = await waitFor('the create span', () =>
      receiver.spans.find((s) => s.name === 'KubernetesAPI' && s.attributes['http.method'] === 'POST' && /^\/api\/v1\/namespaces(\?|$)/.test(String(s.attributes['http.target']))),
    );
    const create = await waitFor('the storage create span', () =>
      receiver.spans.find((s) => s.traceId === request.traceId && s.attributes['storage.operation'] === 'create'),
    );
    assert.equal(create.parentSpanId, request.spanId);
    assert.equal(create.name, 'etcdserverpb.KV/Txn');
    assert.equal(create.kind, 3); // CLIENT
    assert.equal(create.attributes['rpc.system'], 'grpc');
    assert.equal(create.attributes['resource'], 'namespaces');
    assert.match(String(create.attributes['key']), /\/namespaces\/traced-ns$/);
    assert.ok(create.start >= request.start && create.end <= request.end, 'the storage span lies within the request span');
    // An update: kubectl label patches the namespace.
    const label = await c.kubectl(['label', 'namespace', 'traced-ns', 'traced=yes']);
    assert.equal(label.code, 0, label.stderr);
    const patch = await waitFor('the patch span', () =>
      receiver.spans.find((s) => s.name === 'KubernetesAPI' && s.attributes['http.method'] === 'PATCH' && String(s.attributes['http.target']).startsWith('/api/v1/namespaces/traced-ns')),
    );
    const children = await waitFor('the storage update span', () => {
      const found = receiver.spans.filter((s) => s.parentSpanId === patch.spanId);
      return found.some((s) => s.attributes['storage.operation'] === 'update') ? found : undefined;
    });
    assert.ok(children.every((s) => s.traceId === patch.traceId && s.name.startsWith('etcdserverpb.')), JSON.stringify(children.map((s) => s.name)));
  });

  it('sends the trace to an aggregated API server, through a client span of the proxied call', async () => {
    assert.ok(c);
    const port = (ext.address() as AddressInfo).port;
    const svc = await c.request('POST', '/api/v1/namespaces/default/services', {
      body: { apiVersion: 'v1', kind: 'Service', metadata: { name: 'ext-api' }, spec: { type: 'ExternalName', externalName: '127.0.0.1' } },
    });
    assert.equal(svc.status, 201, svc.text);
    const apiService = await c.request('POST', '/apis/apiregistration.k8s.io/v1/apiservices', {
      body: {
        apiVersion: 'apiregistration.k8s.io/v1',
        kind: 'APIService',
        metadata: { name: 'v1alpha1.wardle.example.com' },
        spec: { group: 'wardle.example.com', version: 'v1alpha1', groupPriorityMinimum: 1000, versionPriority: 15, insecureSkipTLSVerify: true, service: { namespace: 'default', name: 'ext-api', port } },
      },
    });
    assert.equal(apiService.status, 201, apiService.text);
    const path = '/apis/wardle.example.com/v1alpha1/namespaces/default/flunders';
    let r = await c.kubectl(['get', '--raw', path]);
    for (let i = 0; i < 100 && r.code !== 0; i++) {
      await sleep(100); // until the availability controller has found the server
      r = await c.kubectl(['get', '--raw', path]);
    }
    assert.equal(r.code, 0, r.stderr);
    const tp = extTraceparents.get(path);
    assert.match(tp ?? '', /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    const [, traceId, parentId] = (tp ?? '').split('-');
    const request = await waitFor('the proxied request span', () =>
      receiver.spans.find((s) => s.name === 'KubernetesAPI' && s.attributes['http.target'] === path && s.traceId === traceId),
    );
    const client = await waitFor('the proxy client span', () => receiver.spans.find((s) => s.spanId === parentId));
    assert.equal(client.traceId, request.traceId);
    assert.equal(client.parentSpanId, request.spanId);
    assert.equal(client.name, 'HTTP GET');
    assert.equal(client.kind, 3); // CLIENT
    assert.equal(client.attributes['http.status_code'], 200);
    assert.equal(client.attributes['http.url'], `https://127.0.0.1:${port}${path}`);
  });

  it('calls an admission webhook in a client span of the request span', async () => {
    assert.ok(c);
    const port = (ext.address() as AddressInfo).port;
    const hook = await c.request('POST', '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations', {
      body: {
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'ValidatingWebhookConfiguration',
        metadata: { name: 'traced' },
        webhooks: [
          {
            name: 'cm.example.com',
            // Served by the extension server's certificate, named ext-api.default.svc: the URL's host must match.
            clientConfig: { service: { namespace: 'default', name: 'ext-api', port, path: '/validate' }, caBundle: Buffer.from(extCA).toString('base64') },
            rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
            sideEffects: 'None',
            admissionReviewVersions: ['v1'],
          },
        ],
      },
    });
    assert.equal(hook.status, 201, hook.text);
    let n = 0;
    for (; n < 100 && admissionTraceparents.length === 0; n++) {
      const r = await c.kubectl(['create', 'configmap', `traced-${n}`]);
      assert.equal(r.code, 0, r.stderr);
      if (admissionTraceparents.length === 0) await sleep(100); // until the configuration reaches the plugin
    }
    const tp = admissionTraceparents.at(-1) ?? '';
    assert.match(tp, /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    const [, traceId, parentId] = tp.split('-');
    const client = await waitFor('the webhook client span', () => receiver.spans.find((s) => s.spanId === parentId));
    assert.equal(client.name, 'HTTP POST');
    assert.equal(client.kind, 3); // CLIENT
    assert.equal(client.traceId, traceId);
    assert.equal(client.attributes['http.status_code'], 200);
    assert.match(String(client.attributes['http.url']), /\/validate\?timeout=10s$/);
    const request = await waitFor('the create span', () => receiver.spans.find((s) => s.spanId === client.parentSpanId));
    assert.equal(request.name, 'KubernetesAPI');
    assert.equal(request.attributes['http.method'], 'POST');
    assert.match(String(request.attributes['http.target']), /^\/api\/v1\/namespaces\/default\/configmaps/);
    const deleted = await c.request('DELETE', '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/traced');
    assert.equal(deleted.status, 200, deleted.text);
  });

  it('samplingRatePerMillion 0 exports nothing of its own, yet follows sampled parents and still propagates', async () => {
    await c?.stop();
    c = undefined;
    const path = await tracingFile('none.yaml', { endpoint: receiver.endpoint, samplingRatePerMillion: 0 });
    c = await startCluster([
      '--feature-gates=APIServerTracing=true',
      `--tracing-config-file=${path}`,
      `--authentication-token-webhook-config-file=${webhookConfig}`,
    ]);
    receiver.spans.length = 0;
    hookTraceparents.length = 0;
    assert.equal((await c.kubectl(['get', 'namespaces'])).code, 0);
    const unsampled = await c.request('GET', '/api/v1/namespaces/default', { headers: { authorization: 'Bearer hooked-2' } });
    assert.equal(unsampled.status, 200);
    const [tp] = hookTraceparents;
    assert.match(tp ?? '', /^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/);
    // A sampled parent is followed; its span ends after every request above, so it is exported with or after them.
    const traceId = 'a'.repeat(32);
    const r = await c.request('GET', '/api/v1/namespaces/kube-public', { headers: { traceparent: `00-${traceId}-${PARENT_ID}-01` } });
    assert.equal(r.status, 200);
    await waitFor('the sampled child span', () => receiver.spans.find((s) => s.traceId === traceId));
    await c.stop();
    c = undefined;
    // Only the sampled parent's trace: its request span and the storage spans under it.
    assert.deepEqual([...new Set(receiver.spans.map((s) => s.traceId))], [traceId]);
    assert.equal(receiver.spans.filter((s) => s.name === 'KubernetesAPI').length, 1);
  });

  it('traces storage calls on etcd the same way', async (t) => {
    if (!requireBinary(t, 'etcd')) return;
    await c?.stop();
    const path = await tracingFile('etcd.yaml', { endpoint: receiver.endpoint, samplingRatePerMillion: 1_000_000 });
    c = await startCluster(['--feature-gates=APIServerTracing=true', `--tracing-config-file=${path}`], { etcd: true });
    const r = await c.kubectl(['create', 'configmap', 'traced-cm', '--from-literal=a=b']);
    assert.equal(r.code, 0, r.stderr);
    const request = await waitFor('the create span', () =>
      receiver.spans.find((s) => s.name === 'KubernetesAPI' && s.attributes['http.method'] === 'POST' && String(s.attributes['http.target']).startsWith('/api/v1/namespaces/default/configmaps')),
    );
    const create = await waitFor('the storage create span', () => receiver.spans.find((s) => s.parentSpanId === request.spanId && s.attributes['storage.operation'] === 'create'));
    assert.equal(create.traceId, request.traceId);
    assert.equal(create.name, 'etcdserverpb.KV/Txn');
    assert.equal(create.attributes['storage.backend'], 'etcd');
    assert.match(String(create.attributes['key']), /\/configmaps\/default\/traced-cm$/);
  });
});
