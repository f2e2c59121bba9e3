// End to end: nodes/proxy, pods/proxy and services/proxy through the server, as kubectl reaches them
// (`kubectl get --raw`, `kubectl proxy`), against a real bin/orchlet on the built-in process runtime and a pod
// serving HTTP on its IP (the host's loopback, as every pod of the process runtime).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { connect } from 'node:net';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { kubectlPath, startCluster, type TestCluster } from '../helpers/cluster.js';
import { eventually } from '../helpers/eventually.js';
import { freePort } from '../helpers/ports.js';
import { httpGet } from '../helpers/portforward.js';
import { loopbackAgentArgs, spawnOrchlet, type OrchletProcess } from '../helpers/orchlet-process.js';

type Json = Record<string, any>;
const NODE = 'proxy-node';

// The pod's server answers with what it received; /redirect answers a 302 to /moved on its own host, /cors sets a CORS header.
const ECHO = `require('http').createServer((q, s) => { let b = ''; q.on('data', (d) => (b += d)); q.on('end', () => {
  if (q.url === '/redirect') { s.writeHead(302, { location: '/moved?x=1' }); return s.end(); }
  s.setHeader('access-control-allow-origin', '*'); s.setHeader('x-echo', 'yes');
  s.end(JSON.stringify({ method: q.method, url: q.url, body: b, fwdUri: q.headers['x-forwarded-uri'] ?? null, auth: q.headers['authorization'] ?? null }));
}); }).listen(Number(process.argv[1]), '127.0.0.1')`;

/** Runs `kubectl proxy` on a free port until it says where it listens, calls `use` with that port, then stops it. */
async function withKubectlProxy(kubeconfig: string, use: (port: number) => Promise<void>): Promise<void> {
  const kp: ChildProcess = spawn(kubectlPath()!, ['proxy', '--port=0', `--kubeconfig=${kubeconfig}`], { stdio: ['ignore', 'pipe', 'pipe'] });
  try {
    const port = await new Promise<number>((resolve, reject) => {
      let out = '';
      kp.stdout!.on('data', (d: Buffer) => {
        out += d.toString();
        const m = /127\.0\.0\.1:(\d+)/.exec(out);
        if (m) resolve(Number(m[1]));
      });
      kp.once('exit', (code) => reject(new Error(`kubectl proxy exited ${code}`)));
    });
    await use(port);
  } finally {
    kp.kill('SIGTERM');
  }
}

void describe('proxy subresources: nodes/proxy, pods/proxy, services/proxy', () => {
  let c: TestCluster;
  let dir = '';
  let orchlet: OrchletProcess | undefined;
  let webPort = 0;
  let podIP = '';

  const kubectl = async (args: string[], input?: string): Promise<string> => {
    const r = await c.kubectl(args, input === undefined ? {} : { input });
    assert.equal(r.code, 0, r.stderr);
    return r.stdout;
  };
  const getJSON = async (args: string[]): Promise<Json | undefined> => {
    const r = await c.kubectl([...args, '-o', 'json']);
    return r.code === 0 ? (JSON.parse(r.stdout) as Json) : undefined;
  };

  before(async () => {
    c = await startCluster(['--authorization-mode=Node,RBAC']);
    dir = await mkdtemp(join(tmpdir(), 'orch-proxy-e2e-'));
    orchlet = spawnOrchlet([`--orchconfig=${c.kubeconfig}`, ...loopbackAgentArgs({ node: NODE, dir, port: await freePort() }), '--node-status-update-frequency=1s']);
    const fail = (err: unknown): never => {
      throw new Error(`${String(err)}\norchlet stderr:\n${orchlet?.stderr() ?? ''}`);
    };
    webPort = await freePort();
    await kubectl(['create', '-f', '-'], JSON.stringify({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'web', namespace: 'default', labels: { app: 'web' } },
      spec: {
        nodeName: NODE,
        terminationGracePeriodSeconds: 1,
        automountServiceAccountToken: false,
        containers: [{ name: 'main', image: 'busybox', command: [process.execPath, '-e', ECHO, String(webPort)], ports: [{ containerPort: webPort }] }],
      },
    }));
    const pod = await eventually('pod web Running', async () => {
      const p = await getJSON(['get', 'pod', 'web']);
      return p?.status?.containerStatuses?.[0]?.state?.running && p.status.podIP ? p : undefined;
    }, { timeoutMs: 30_000 }).catch(fail);
    podIP = pod.status.podIP as string;
    // The server is up once it answers through the proxy.
    await eventually('the pod to serve', async () => (await c.request('GET', '/api/v1/namespaces/default/pods/web/proxy/ping')).status === 200, { timeoutMs: 15_000 });
    await kubectl(['create', '-f', '-'], JSON.stringify({
      apiVersion: 'v1',
      kind: 'List',
      items: [
        { apiVersion: 'v1', kind: 'Service', metadata: { name: 'web' }, spec: { selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: webPort }] } },
        { apiVersion: 'v1', kind: 'Service', metadata: { name: 'lonely' }, spec: { ports: [{ port: 80 }] } },
        { apiVersion: 'v1', kind: 'Endpoints', metadata: { name: 'lonely' } },
        { apiVersion: 'v1', kind: 'Service', metadata: { name: 'stray' }, spec: { ports: [{ name: 'http', port: 80 }] } },
        // An address whose targetRef names no pod with that IP is skipped, as Kubernetes' isValidAddress does.
        { apiVersion: 'v1', kind: 'Endpoints', metadata: { name: 'stray' }, subsets: [{ addresses: [{ ip: '192.0.2.1' }], ports: [{ name: 'http', port: webPort }] }] },
      ],
    }));
  });
  after(async () => {
    if (orchlet) {
      orchlet.child.kill('SIGTERM');
      await orchlet.exited;
    }
    await c?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  void it('kubectl get --raw reaches the node agent through nodes/proxy: stats/summary, healthz, pods', async () => {
    const summary = JSON.parse(await kubectl(['get', '--raw', `/api/v1/nodes/${NODE}/proxy/stats/summary`])) as Json;
    assert.equal(summary.node?.nodeName, NODE);
    assert.equal(await kubectl(['get', '--raw', `/api/v1/nodes/${NODE}/proxy/healthz`]), 'ok');
    const pods = JSON.parse(await kubectl(['get', '--raw', `/api/v1/nodes/${NODE}/proxy/pods`])) as Json;
    assert.equal(pods.kind, 'PodList');
    assert.ok((pods.items as Json[]).some((p) => p.metadata?.name === 'web'));
    // The agent's own port named explicitly is the same connection; an unknown node is a 404.
    const port = (await getJSON(['get', 'node', NODE]))?.status?.daemonEndpoints?.kubeletEndpoint?.Port as number;
    assert.equal(await kubectl(['get', '--raw', `/api/v1/nodes/${NODE}:${port}/proxy/healthz`]), 'ok');
    const missing = await c.request('GET', '/api/v1/nodes/nope/proxy/healthz');
    assert.equal(missing.status, 404);
    assert.equal(missing.json?.message, 'nodes "nope" not found');
  });

  void it('pods/proxy passes every method, the path, query and body on, and the answer back', async () => {
    const got = JSON.parse(await kubectl(['get', '--raw', '/api/v1/namespaces/default/pods/web/proxy/some/path?a=1&b=two'])) as Json;
    assert.deepEqual(got, { method: 'GET', url: '/some/path?a=1&b=two', body: '', fwdUri: '/api/v1/namespaces/default/pods/web/proxy/some/path', auth: null });
    const viaPort = JSON.parse(await kubectl(['get', '--raw', `/api/v1/namespaces/default/pods/http:web:${webPort}/proxy/x/`])) as Json;
    assert.equal(viaPort.url, '/x/');
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
      const r = await c.request(method, '/api/v1/namespaces/default/pods/web/proxy/write', { body: `a ${method} body`, contentType: 'text/plain' });
      assert.equal(r.status, 200, r.text);
      assert.deepEqual({ method: r.json?.method, url: r.json?.url, body: r.json?.body }, { method, url: '/write', body: `a ${method} body` });
    }
    const head = await c.request('HEAD', '/api/v1/namespaces/default/pods/web/proxy/h');
    assert.equal(head.status, 200);
    assert.equal(head.headers['x-echo'], 'yes');
    assert.equal(head.text, '');
    const options = await c.request('OPTIONS', '/api/v1/namespaces/default/pods/web/proxy/o');
    assert.equal(options.json?.method, 'OPTIONS');
    // Backend headers come back, less CORS ones.
    assert.equal(options.headers['x-echo'], 'yes');
    assert.equal(options.headers['access-control-allow-origin'], undefined);
  });

  void it('answers as Kubernetes does: redirects, bad names, unreachable backends', async () => {
    const noPath = await c.request('GET', '/api/v1/namespaces/default/pods/web/proxy?q=1');
    assert.equal(noPath.status, 301);
    assert.equal(noPath.headers.location, '/api/v1/namespaces/default/pods/web/proxy/?q=1');
    const redirect = await c.request('GET', '/api/v1/namespaces/default/pods/web/proxy/redirect');
    assert.equal(redirect.status, 302);
    assert.equal(redirect.headers.location, '/api/v1/namespaces/default/pods/web/proxy/moved?x=1');
    const invalid = await c.request('GET', '/api/v1/namespaces/default/pods/ftp:web:80/proxy/');
    assert.equal(invalid.status, 400);
    assert.equal(invalid.json?.message, 'invalid pod request "ftp:web:80"');
    const closed = await freePort();
    const refused = await c.request('GET', `/api/v1/namespaces/default/pods/web:${closed}/proxy/`);
    assert.equal(refused.status, 503);
    assert.equal(refused.json?.reason, 'ServiceUnavailable');
    assert.equal(refused.json?.message, `error trying to reach service: dial tcp ${podIP}:${closed}: connect: connection refused`);
    const missing = await c.request('GET', '/api/v1/namespaces/default/pods/gone/proxy/');
    assert.equal(missing.status, 404);
    assert.equal(missing.json?.message, 'pods "gone" not found');
    // kubectl shows the Status of a failed raw request.
    const r = await c.kubectl(['get', '--raw', '/api/v1/namespaces/default/services/lonely/proxy/']);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /no endpoints available for service \\?"lonely\\?"/);
  });

  void it('services/proxy: the port number named, then the endpoints; 503s when there is none', async () => {
    const cases: [string, number, string][] = [
      ['web:81', 503, 'no service port 81 found for service "web"'],
      ['web:80', 404, 'endpoints "web" not found'],
      ['lonely', 503, 'no endpoints available for service "lonely"'],
      ['stray:http', 503, 'no endpoints available for service "stray:http"'],
      ['nothere', 404, 'endpoints "nothere" not found'],
      ['a:b:c:d', 400, 'invalid service request "a:b:c:d"'],
    ];
    for (const [name, code, message] of cases) {
      const r = await c.request('GET', `/api/v1/namespaces/default/services/${name}/proxy/`);
      assert.equal(r.status, code, `${name}: ${r.text}`);
      assert.equal(r.json?.message, message, name);
    }
  });

  void it('kubectl proxy reaches pods/proxy, nodes/proxy and services/proxy', async () => {
    await withKubectlProxy(c.kubeconfig, async (port) => {
      const pod = await httpGet(port, '/api/v1/namespaces/default/pods/web/proxy/through/kubectl?q=1');
      assert.equal(pod.code, 200, pod.body);
      assert.equal((JSON.parse(pod.body) as Json).url, '/through/kubectl?q=1');
      const svc = await httpGet(port, '/api/v1/namespaces/default/services/lonely/proxy/');
      assert.equal(svc.code, 503, svc.body);
      const node = await httpGet(port, `/api/v1/nodes/${NODE}/proxy/healthz`);
      assert.equal(node.body, 'ok');
    });
  });

  void it('authorizes as Kubernetes does: the verb from the method, resource pods/proxy, the name with its port', async () => {
    await kubectl(['create', 'role', 'proxy-post', '--verb=create', '--resource=pods/proxy']);
    await kubectl(['create', 'rolebinding', 'proxy-post', '--role=proxy-post', '--user=alice']);
    const as = { headers: { 'impersonate-user': 'alice' } };
    const denied = await c.request('GET', '/api/v1/namespaces/default/pods/web/proxy/x', as);
    assert.equal(denied.status, 403);
    assert.equal(denied.json?.message, 'pods "web" is forbidden: User "alice" cannot get resource "pods/proxy" in API group "" in the namespace "default"');
    const withPort = await c.request('GET', `/api/v1/namespaces/default/pods/web:${webPort}/proxy/x`, as);
    assert.equal(withPort.json?.message, `pods "web:${webPort}" is forbidden: User "alice" cannot get resource "pods/proxy" in API group "" in the namespace "default"`);
    const allowed = await eventually('the role to apply', async () => {
      const r = await c.request('POST', '/api/v1/namespaces/default/pods/web/proxy/x', { ...as, body: 'hi', contentType: 'text/plain' });
      return r.status === 200 ? r : undefined;
    }, { timeoutMs: 10_000 });
    assert.equal(allowed.json?.method, 'POST');
    assert.equal(allowed.json?.auth, null, 'the credentials stay with the server');
  });

  void it('discovery lists the proxy subresources with their options kinds and verbs', async () => {
    const list = JSON.parse(await kubectl(['get', '--raw', '/api/v1'])) as Json;
    for (const [name, kind, namespaced] of [
      ['nodes/proxy', 'NodeProxyOptions', false],
      ['pods/proxy', 'PodProxyOptions', true],
      ['services/proxy', 'ServiceProxyOptions', true],
    ] as const) {
      const r = (list.resources as Json[]).find((x) => x.name === name);
      assert.deepEqual(r, { name, singularName: '', namespaced, kind, verbs: ['create', 'delete', 'get', 'patch', 'update'] });
    }
    // OpenAPI: a connect operation per method, at <name>/proxy (path as a query parameter) and at <name>/proxy/{path}.
    const doc = (await c.request('GET', '/openapi/v2', { headers: { accept: 'application/json' } })).json as Json;
    const item = doc.paths['/api/v1/namespaces/{namespace}/pods/{name}/proxy/{path}'] as Json;
    assert.deepEqual(Object.keys(item).filter((k) => k !== 'parameters').sort(), ['delete', 'get', 'head', 'options', 'patch', 'post', 'put']);
    assert.equal(item.head.operationId, 'connectCoreV1HeadNamespacedPodProxyWithPath');
    assert.deepEqual(item['x-kubernetes-group-version-kind'] ?? item.get['x-kubernetes-group-version-kind'], { group: '', kind: 'PodProxyOptions', version: 'v1' });
    assert.deepEqual((item.parameters as Json[]).map((p) => `${p.in}:${p.name}`), ['path:name', 'path:namespace', 'path:path', 'query:path']);
    const nodeItem = doc.paths['/api/v1/nodes/{name}/proxy'] as Json;
    assert.equal(nodeItem.options.operationId, 'connectCoreV1OptionsNodeProxy');
    assert.equal((nodeItem.parameters as Json[]).find((p) => p.name === 'path')?.description, 'Path is the URL path to use for the current proxy request to node.');
  });
});

// services/proxy through Endpoints needs a pod IP that Endpoints validation accepts (not loopback). The node says its
// IP is 192.0.2.10 (TEST-NET-1), and the server reaches the cluster through its cluster egress: an HTTP CONNECT
// proxy of the test that carries 192.0.2.10 to 127.0.0.1, where the agent and the pod listen, as a tunnel to the
// node network (konnectivity) would.
void describe('services/proxy through the endpoints, over the cluster egress', () => {
  const NODE_IP = '192.0.2.10';
  const NODE2 = 'proxy-egress-node';
  let c: TestCluster;
  let dir = '';
  let orchlet: OrchletProcess | undefined;
  let tunnel: HttpServer | undefined;
  const connects: string[] = [];
  const sockets = new Set<{ destroy(): void }>();
  let webPort = 0;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'orch-proxy-egress-'));
    tunnel = createHttpServer((_q, s) => s.writeHead(405).end());
    tunnel.on('connect', (req, client, head) => {
      connects.push(req.url ?? '');
      sockets.add(client);
      const [host, port] = (req.url ?? '').split(':');
      const upstream = connect(Number(port), host === NODE_IP ? '127.0.0.1' : (host ?? ''), () => {
        client.write('HTTP/1.1 200 Connection established\r\n\r\n');
        if (head.length > 0) upstream.write(head);
        upstream.pipe(client);
        client.pipe(upstream);
      });
      sockets.add(upstream);
      upstream.on('error', () => client.end('HTTP/1.1 503 Service Unavailable\r\n\r\n'));
      client.on('error', () => upstream.destroy());
    });
    await new Promise<void>((resolve) => tunnel!.listen(0, '127.0.0.1', resolve));
    const egress = join(dir, 'egress.yaml');
    const tunnelPort = (tunnel.address() as { port: number }).port;
    await writeFile(egress, JSON.stringify({
      apiVersion: 'apiserver.k8s.io/v1beta1',
      kind: 'EgressSelectorConfiguration',
      egressSelections: [{ name: 'cluster', connection: { proxyProtocol: 'HTTPConnect', transport: { tcp: { url: `http://127.0.0.1:${tunnelPort}` } } } }],
    }));
    c = await startCluster([`--egress-selector-config-file=${egress}`]);
    orchlet = spawnOrchlet([
      `--orchconfig=${c.kubeconfig}`,
      ...loopbackAgentArgs({ node: NODE2, dir, port: await freePort(), nodeIp: NODE_IP }),
      '--node-status-update-frequency=1s',
    ]);
    webPort = await freePort();
    const r = await c.kubectl(['create', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'v1',
        kind: 'List',
        items: [
          {
            apiVersion: 'v1',
            kind: 'Pod',
            metadata: { name: 'web', namespace: 'default', labels: { app: 'web' } },
            spec: {
              nodeName: NODE2,
              terminationGracePeriodSeconds: 1,
              automountServiceAccountToken: false,
              containers: [{ name: 'main', image: 'busybox', command: [process.execPath, '-e', ECHO, String(webPort)] }],
            },
          },
          { apiVersion: 'v1', kind: 'Service', metadata: { name: 'web' }, spec: { selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: webPort }] } },
          {
            apiVersion: 'v1',
            kind: 'Endpoints',
            metadata: { name: 'web' },
            subsets: [{ addresses: [{ ip: NODE_IP, targetRef: { kind: 'Pod', namespace: 'default', name: 'web' } }], ports: [{ name: 'http', port: webPort }] }],
          },
        ],
      }),
    });
    assert.equal(r.code, 0, r.stderr);
    await eventually('pod web Running', async () => {
      const p = await c.kubectl(['get', 'pod', 'web', '-o', 'json']);
      const pod = p.code === 0 ? (JSON.parse(p.stdout) as Json) : undefined;
      return pod?.status?.containerStatuses?.[0]?.state?.running && pod.status.podIP === NODE_IP ? pod : undefined;
    }, { timeoutMs: 30_000 }).catch((err: unknown) => {
      throw new Error(`${String(err)}\norchlet stderr:\n${orchlet?.stderr() ?? ''}`);
    });
    await eventually('the pod to serve', async () => (await c.request('GET', `/api/v1/namespaces/default/pods/web:${webPort}/proxy/ping`)).status === 200, { timeoutMs: 15_000 });
  });
  after(async () => {
    if (orchlet) {
      orchlet.child.kill('SIGTERM');
      await orchlet.exited;
    }
    await c?.stop();
    for (const s of sockets) s.destroy();
    tunnel?.closeAllConnections();
    await new Promise((resolve) => tunnel?.close(resolve) ?? resolve(undefined));
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  void it('kubectl get --raw reaches the service by port name or number, and every method goes through', async () => {
    for (const [i, name] of ['web:http', 'web:80', 'http:web:80'].entries()) {
      const r = await c.kubectl(['get', '--raw', `/api/v1/namespaces/default/services/${name}/proxy/svc?n=${i}`]);
      assert.equal(r.code, 0, r.stderr);
      const got = JSON.parse(r.stdout) as Json;
      assert.equal(got.url, `/svc?n=${i}`);
      assert.equal(got.fwdUri, `/api/v1/namespaces/default/services/${name}/proxy/svc`);
    }
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']) {
      const r = await c.request(method, '/api/v1/namespaces/default/services/web:http/proxy/m', { body: `${method} body`, contentType: 'text/plain' });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.json?.method, method);
      if (method !== 'OPTIONS') assert.equal(r.json?.body, `${method} body`);
    }
    // Through the cluster egress, to the endpoint's address and port.
    assert.ok(connects.includes(`${NODE_IP}:${webPort}`), connects.join(' '));
    // nodes/proxy over the same egress, to the agent at the node's address.
    const healthz = await c.kubectl(['get', '--raw', `/api/v1/nodes/${NODE2}/proxy/healthz`]);
    assert.equal(healthz.stdout, 'ok', healthz.stderr);
  });

  void it('kubectl proxy reaches services/proxy', async () => {
    await withKubectlProxy(c.kubeconfig, async (port) => {
      const r = await httpGet(port, '/api/v1/namespaces/default/services/web:http/proxy/through/kubectl');
      assert.equal((JSON.parse(r.body) as Json).url, '/through/kubectl');
    });
  });
});
