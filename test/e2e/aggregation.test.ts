/**
 * The aggregation layer through kubectl: an extension API server the test runs on loopback over TLS (group
 * wardle.example.com/v1alpha1, resource flunders) registered by an APIService whose Service is an ExternalName
 * Service naming 127.0.0.1 (Endpoints may not hold loopback addresses, and cluster IPs are not routable here).
 * Checked: the local APIServices (kubectl get apiservices, Local), /openapi/v2 merged, the Available condition (Passed,
 * ServiceNotFound, FailedDiscoveryCheck when the server stops; EndpointsNotFound and MissingEndpoints with
 * --enable-aggregator-routing), discovery, and kubectl get flunders proxied with the --proxy-client-cert-file identity and the user in X-Remote-User /
 * X-Remote-Group (no Authorization header), after authorization (an impersonated user without rights gets 403
 * from this server, never reaching the extension server).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:https';
import type { TLSSocket } from 'node:tls';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startCluster, type TestCluster } from '../helpers/cluster.js';
import { eventually } from '../helpers/eventually.js';
import { requireBinary } from '../helpers/binaries.js';
import { makeCA, makeClientCert, makeServingCert } from '../../src/server/certs.js';

const GROUP = 'wardle.example.com';
const VERSION = 'v1alpha1';
const APISERVICE = `${VERSION}.${GROUP}`;

interface Seen {
  path: string;
  user: string | undefined;
  groups: string[];
  authorization: boolean;
  clientCN: string | undefined;
}

function extensionServer(cert: string, key: string, frontProxyCA: string, seen: Seen[]): Server {
  return createServer({ cert, key, ca: frontProxyCA, requestCert: true, rejectUnauthorized: true }, (req, res) => {
    const peer = (req.socket as TLSSocket).getPeerCertificate();
    const groups = req.headersDistinct['x-remote-group'];
    const entry: Seen = {
      path: req.url ?? '',
      user: req.headers['x-remote-user'] as string | undefined,
      groups: groups ?? [],
      authorization: req.headers.authorization !== undefined,
      clientCN: peer?.subject?.CN as string | undefined,
    };
    seen.push(entry);
    const json = (code: number, body: object, type = 'application/json') => {
      res.writeHead(code, { 'content-type': type });
      res.end(JSON.stringify(body));
    };
    const path = (req.url ?? '').split('?')[0];
    if (!entry.user) return json(401, { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'Unauthorized', code: 401, message: 'no X-Remote-User' });
    if (path === '/openapi/v2') {
      return json(200, {
        swagger: '2.0',
        info: { title: 'wardle', version: 'v0' },
        paths: { [`/apis/${GROUP}/${VERSION}/namespaces/{namespace}/flunders`]: { get: { operationId: 'listWardleV1alpha1NamespacedFlunder', responses: { '200': { description: 'OK' } } } } },
        definitions: {
          'com.example.wardle.v1alpha1.Flunder': { type: 'object', properties: { spec: { type: 'object' } }, 'x-kubernetes-group-version-kind': [{ group: GROUP, kind: 'Flunder', version: VERSION }] },
          'io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta': { description: 'theirs', type: 'object' },
        },
      });
    }
    if (path === `/apis/${GROUP}/${VERSION}`) {
      return json(200, {
        kind: 'APIResourceList',
        apiVersion: 'v1',
        groupVersion: `${GROUP}/${VERSION}`,
        resources: [{ name: 'flunders', singularName: 'flunder', namespaced: true, kind: 'Flunder', verbs: ['get', 'list'] }],
      });
    }
    if (path === `/apis/${GROUP}/${VERSION}/namespaces/default/flunders`) {
      const item = { apiVersion: `${GROUP}/${VERSION}`, kind: 'Flunder', metadata: { name: 'my-flunder', namespace: 'default', creationTimestamp: '2024-01-01T00:00:00Z' } };
      if (String(req.headers.accept ?? '').includes('as=Table')) {
        return json(200, {
          kind: 'Table',
          apiVersion: 'meta.k8s.io/v1',
          metadata: {},
          columnDefinitions: [
            { name: 'Name', type: 'string', format: 'name', description: 'name', priority: 0 },
            { name: 'Seen-By', type: 'string', format: '', description: 'X-Remote-User', priority: 0 },
          ],
          rows: [{ cells: ['my-flunder', entry.user], object: { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: item.metadata } }],
        });
      }
      return json(200, { kind: 'FlunderList', apiVersion: `${GROUP}/${VERSION}`, metadata: {}, items: [item] });
    }
    json(404, { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotFound', code: 404, message: 'not found' });
  });
}

void describe('aggregation layer (APIService, proxy, availability)', () => {
  let c: TestCluster;
  let ext: Server;
  let extPort = 0;
  let servingCA = '';
  let pki = '';
  const seen: Seen[] = [];

  before(async () => {
    const frontProxy = await makeCA('front-proxy-ca');
    const proxyClient = await makeClientCert({ caCert: frontProxy.cert, caKey: frontProxy.key, commonName: 'front-proxy-client' });
    const ca = await makeCA('wardle-ca');
    servingCA = ca.cert;
    const serving = await makeServingCert(ca.cert, ca.key, 'ext-api.default.svc', ['ext-api.default.svc']);
    ext = extensionServer(serving.cert, serving.key, frontProxy.cert, seen);
    await new Promise<void>((resolve) => ext.listen(0, '127.0.0.1', resolve));
    extPort = (ext.address() as { port: number }).port;

    pki = await mkdtemp(join(tmpdir(), 'orch-aggregation-'));
    await writeFile(join(pki, 'proxy.crt'), proxyClient.cert);
    await writeFile(join(pki, 'proxy.key'), proxyClient.key);
    c = await startCluster([
      '--authorization-mode=RBAC',
      `--proxy-client-cert-file=${join(pki, 'proxy.crt')}`,
      `--proxy-client-key-file=${join(pki, 'proxy.key')}`,
    ]);
  });

  after(async () => {
    await c?.stop();
    ext?.close();
    if (pki) await rm(pki, { recursive: true, force: true });
  });

  void it('lists a local APIService for every built-in group version', async (t) => {
    if (!requireBinary(t, 'kubectl')) return t.skip('kubectl not installed');
    const r = await c.kubectl(['get', 'apiservices']);
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.trim().split('\n');
    assert.match(lines[0]!, /^NAME\s+SERVICE\s+AVAILABLE\s+AGE$/);
    for (const name of ['v1.', 'v1.storage.k8s.io', 'v1.apiregistration.k8s.io', 'v1.rbac.authorization.k8s.io', 'v1.coordination.k8s.io']) {
      const line = lines.find((l) => l.split(/\s+/)[0] === name);
      assert.ok(line, `${name} in:\n${r.stdout}`);
      assert.match(line, /\sLocal\s+True\s/);
    }
    const core = await c.request('GET', '/apis/apiregistration.k8s.io/v1/apiservices/v1.');
    assert.equal(core.status, 200);
    assert.deepEqual(core.json.spec, { version: 'v1', groupPriorityMinimum: 18000, versionPriority: 1 }); // group '' is omitted, as Kubernetes' omitempty
    assert.equal(core.json.metadata.labels['kube-aggregator.kubernetes.io/automanaged'], 'onstart');
    const available = core.json.status.conditions.find((x: { type: string }) => x.type === 'Available');
    assert.deepEqual([available.status, available.reason, available.message], ['True', 'Local', 'Local APIServices are always available']);
  });

  void it('validates APIServices as kube-aggregator does', async () => {
    const r = await c.request('POST', '/apis/apiregistration.k8s.io/v1/apiservices', {
      body: { apiVersion: 'apiregistration.k8s.io/v1', kind: 'APIService', metadata: { name: 'v1.wrong' }, spec: { group: 'other', version: 'v1', groupPriorityMinimum: 0, versionPriority: 15, insecureSkipTLSVerify: true, caBundle: 'eA==', service: { namespace: 'default', name: 'x' } } },
    });
    assert.equal(r.status, 422, r.text);
    assert.match(r.json.message, /metadata.name: Invalid value: "v1.wrong": must be `spec.version\+"."\+spec.group`/);
    assert.match(r.json.message, /spec.groupPriorityMinimum: Invalid value: 0: must be positive and less than 20000/);
    assert.match(r.json.message, /spec.insecureSkipTLSVerify: Forbidden: may not be true if caBundle is present/);
  });

  void it('proxies an extension server reached through its Endpoints, with the front-proxy identity', async (t) => {
    if (!requireBinary(t, 'kubectl')) return t.skip('kubectl not installed');
    // Endpoints may not hold loopback addresses, and cluster IPs are not routable here: an ExternalName Service
    // (which the aggregator resolves to <externalName>:<spec.service.port>, as Kubernetes' ResolveCluster).
    const svc = await c.request('POST', '/api/v1/namespaces/default/services', {
      body: { apiVersion: 'v1', kind: 'Service', metadata: { name: 'ext-api' }, spec: { type: 'ExternalName', externalName: '127.0.0.1' } },
    });
    assert.equal(svc.status, 201, svc.text);
    const apiService = {
      apiVersion: 'apiregistration.k8s.io/v1',
      kind: 'APIService',
      metadata: { name: APISERVICE },
      spec: { group: GROUP, version: VERSION, groupPriorityMinimum: 1000, versionPriority: 15, caBundle: Buffer.from(servingCA).toString('base64'), service: { namespace: 'default', name: 'ext-api', port: extPort } },
    };
    const created = await c.kubectl(['apply', '-f', '-'], { input: JSON.stringify(apiService) });
    assert.equal(created.code, 0, created.stderr);

    const cond = await eventually('Available=True', async () => {
      const r = await c.request('GET', `/apis/apiregistration.k8s.io/v1/apiservices/${APISERVICE}`);
      const a = r.json?.status?.conditions?.find((x: { type: string }) => x.type === 'Available');
      return a?.status === 'True' ? a : undefined;
    });
    assert.deepEqual([cond.reason, cond.message], ['Passed', 'all checks passed']);
    assert.equal(cond.lastTransitionTime !== undefined, true);
    const got = await c.kubectl(['get', 'apiservice', APISERVICE]);
    assert.match(got.stdout, new RegExp(`${APISERVICE.replace(/\./g, '\\.')}\\s+default/ext-api\\s+True\\s`));

    // Discovery: /apis lists the group, /apis/<group> is answered here, the aggregated document has its resources.
    const apis = await c.request('GET', '/apis');
    assert.ok(apis.json.groups.some((g: { name: string }) => g.name === GROUP), apis.text);
    const group = await c.request('GET', `/apis/${GROUP}`);
    assert.deepEqual(group.json, { kind: 'APIGroup', apiVersion: 'v1', name: GROUP, versions: [{ groupVersion: `${GROUP}/${VERSION}`, version: VERSION }], preferredVersion: { groupVersion: `${GROUP}/${VERSION}`, version: VERSION } });
    const agg = await c.request('GET', '/apis', { headers: { accept: 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList' } });
    const wardle = agg.json.items.find((i: { metadata: { name: string } }) => i.metadata.name === GROUP);
    assert.equal(wardle?.versions?.[0]?.resources?.[0]?.resource, 'flunders', agg.text);

    // /openapi/v2: their paths and definitions merged in, ours kept where both have one.
    const openapi = await eventually('merged /openapi/v2', async () => {
      const r = await c.request('GET', '/openapi/v2', { headers: { accept: 'application/json' } });
      return r.json?.definitions?.['com.example.wardle.v1alpha1.Flunder'] ? r.json : undefined;
    });
    assert.ok(openapi.paths[`/apis/${GROUP}/${VERSION}/namespaces/{namespace}/flunders`]);
    assert.ok(openapi.paths['/api/v1/namespaces']);
    assert.notEqual(openapi.definitions['io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta'].description, 'theirs');
    const pb = await c.request('GET', '/openapi/v2', { headers: { accept: 'application/com.github.proto-openapi.spec.v2@v1.0+protobuf' } });
    assert.equal(pb.status, 200);
    assert.ok(pb.text.includes('com.example.wardle.v1alpha1.Flunder'), 'the protobuf form is merged too');

    const seenBefore = seen.length;
    const list = await c.kubectl(['get', 'flunders', '-n', 'default']);
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /^NAME\s+SEEN-BY\n/);
    assert.match(list.stdout, /my-flunder\s+admin/);
    const mine = seen.slice(seenBefore).find((s) => s.path.startsWith(`/apis/${GROUP}/${VERSION}/namespaces/default/flunders`));
    assert.ok(mine, JSON.stringify(seen));
    assert.equal(mine.user, 'admin');
    assert.ok(mine.groups.includes('system:masters') && mine.groups.includes('system:authenticated'), JSON.stringify(mine.groups));
    assert.equal(mine.authorization, false, 'the bearer token is not passed on');
    assert.equal(mine.clientCN, 'front-proxy-client');
    // The availability check calls as the aggregator.
    assert.ok(seen.some((s) => s.user === 'system:kube-aggregator' && s.path === `/apis/${GROUP}/${VERSION}`));

    // Authorization first: a user without rights never reaches the extension server.
    const count = seen.length;
    const denied = await c.kubectl(['get', 'flunders', '-n', 'default', '--as=nobody']);
    assert.notEqual(denied.code, 0);
    assert.match(denied.stderr, /forbidden: User "nobody" cannot list resource "flunders" in API group "wardle.example.com" in the namespace "default"/);
    assert.equal(seen.filter((s) => s.user === 'nobody').length, 0);
    assert.ok(seen.length >= count);
  });

  void it('reports ServiceNotFound, and FailedDiscoveryCheck once the extension server stops', async (t) => {
    if (!requireBinary(t, 'kubectl')) return t.skip('kubectl not installed');
    const missing = await c.request('POST', '/apis/apiregistration.k8s.io/v1/apiservices', {
      body: { apiVersion: 'apiregistration.k8s.io/v1', kind: 'APIService', metadata: { name: 'v1.missing.example.com' }, spec: { group: 'missing.example.com', version: 'v1', groupPriorityMinimum: 1000, versionPriority: 15, insecureSkipTLSVerify: true, service: { namespace: 'default', name: 'nope' } } },
    });
    assert.equal(missing.status, 201, missing.text);
    const nf = await eventually('ServiceNotFound', async () => {
      const r = await c.request('GET', '/apis/apiregistration.k8s.io/v1/apiservices/v1.missing.example.com');
      const a = r.json?.status?.conditions?.find((x: { type: string }) => x.type === 'Available');
      return a?.reason === 'ServiceNotFound' ? a : undefined;
    });
    assert.deepEqual([nf.status, nf.message], ['False', 'service/nope in "default" is not present']);
    const unavailable = await c.request('GET', '/apis/missing.example.com/v1');
    assert.equal(unavailable.status, 503);
    assert.equal(unavailable.text, 'service unavailable\n');

    await new Promise<void>((resolve) => {
      ext.close(() => resolve());
      ext.closeAllConnections();
    });
    const failed = await eventually(
      'FailedDiscoveryCheck',
      async () => {
        await c.kubectl(['get', 'flunders', '-n', 'default']); // a failed proxied request makes the controller look again
        const r = await c.request('GET', `/apis/apiregistration.k8s.io/v1/apiservices/${APISERVICE}`);
        const a = r.json?.status?.conditions?.find((x: { type: string }) => x.type === 'Available');
        return a?.status === 'False' ? a : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 200 },
    );
    assert.equal(failed.reason, 'FailedDiscoveryCheck');
    assert.match(failed.message, new RegExp(`^failing or missing response from https://127\\.0\\.0\\.1:${extPort}/apis/${GROUP.replace(/\./g, '\\.')}/${VERSION}: .*ECONNREFUSED`));
    const table = await c.kubectl(['get', 'apiservices', APISERVICE]);
    assert.match(table.stdout, /default\/ext-api\s+False \(FailedDiscoveryCheck\)/);
    const down = await c.kubectl(['get', 'flunders', '-n', 'default']);
    assert.notEqual(down.code, 0);
    assert.match(down.stderr, /ServiceUnavailable|the server is currently unable to handle the request/);
  });
  void it('reaches an APIService whose service is default/kubernetes on 443 at the server’s own loopback address', async () => {
    const created = await c.request('POST', '/apis/apiregistration.k8s.io/v1/apiservices', {
      body: { apiVersion: 'apiregistration.k8s.io/v1', kind: 'APIService', metadata: { name: 'v1.loop.example.com' }, spec: { group: 'loop.example.com', version: 'v1', groupPriorityMinimum: 1000, versionPriority: 15, insecureSkipTLSVerify: true, service: { namespace: 'default', name: 'kubernetes', port: 443 } } },
    });
    assert.equal(created.status, 201, created.text);
    // The discovery check goes to this very server (its front-proxy certificate is not a client CA's here: 403).
    const port = new URL(c.url).port;
    const cond = await eventually('the loopback discovery check', async () => {
      const r = await c.request('GET', '/apis/apiregistration.k8s.io/v1/apiservices/v1.loop.example.com');
      const a = r.json?.status?.conditions?.find((x: { type: string }) => x.type === 'Available');
      return a?.reason === 'FailedDiscoveryCheck' ? a : undefined;
    });
    assert.equal(cond.message, `failing or missing response from https://127.0.0.1:${port}/apis/loop.example.com/v1: bad status from https://127.0.0.1:${port}/apis/loop.example.com/v1: 403`);
    await c.request('DELETE', '/apis/apiregistration.k8s.io/v1/apiservices/v1.loop.example.com');
  });

  void it('with --enable-aggregator-routing, reads the Service\'s Endpoints (EndpointsNotFound, MissingEndpoints)', async () => {
    const r = await startCluster(['--enable-aggregator-routing']);
    try {
      const svc = await r.request('POST', '/api/v1/namespaces/default/services', {
        body: { apiVersion: 'v1', kind: 'Service', metadata: { name: 'routed' }, spec: { ports: [{ name: 'https', port: 443, targetPort: 8443 }] } },
      });
      assert.equal(svc.status, 201, svc.text);
      const created = await r.request('POST', '/apis/apiregistration.k8s.io/v1/apiservices', {
        body: { apiVersion: 'apiregistration.k8s.io/v1', kind: 'APIService', metadata: { name: 'v1.routed.example.com' }, spec: { group: 'routed.example.com', version: 'v1', groupPriorityMinimum: 1000, versionPriority: 15, insecureSkipTLSVerify: true, service: { namespace: 'default', name: 'routed' } } },
      });
      assert.equal(created.status, 201, created.text);
      const condition = (reason: string) =>
        eventually(reason, async () => {
          const g = await r.request('GET', '/apis/apiregistration.k8s.io/v1/apiservices/v1.routed.example.com');
          const a = g.json?.status?.conditions?.find((x: { type: string }) => x.type === 'Available');
          return a?.reason === reason ? a : undefined;
        });
      const nf = await condition('EndpointsNotFound');
      assert.deepEqual([nf.status, nf.message], ['False', 'cannot find endpoints for service/routed in "default"']);
      const ep = await r.request('POST', '/api/v1/namespaces/default/endpoints', {
        body: { apiVersion: 'v1', kind: 'Endpoints', metadata: { name: 'routed' }, subsets: [{ notReadyAddresses: [{ ip: '10.1.2.3' }], ports: [{ name: 'https', port: 8443 }] }] },
      });
      assert.equal(ep.status, 201, ep.text);
      const missing = await condition('MissingEndpoints');
      assert.deepEqual([missing.status, missing.message], ['False', 'endpoints for service/routed in "default" have no addresses with port name "https"']);
    } finally {
      await r.stop();
    }
  });
});
