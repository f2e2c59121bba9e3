// --egress-selector-config-file, the proxied modes beyond HTTPConnect over TCP (egress-selector.test.ts):
//  - GRPC: a konnectivity-style proxy server this test runs on a Unix socket (grpc-js with the ProxyService of
//    src/server/egress/konnectivity.proto, decoded with protobufjs), recording every address it dials; also over
//    TCP with mutual TLS;
//  - OIDC discovery and keys fetched through a controlplane dialer;
//  - HTTPConnect over a Unix socket: an HTTP CONNECT proxy on a socket in a temporary directory.
// One cluster sends the cluster type through the konnectivity server (kubectl logs and exec reach a real
// orchlet only through it, as do an admission webhook and an aggregated API server) and the controlplane type
// through the Unix-socket CONNECT proxy (the token and audit webhooks); another keeps its state in a real etcd
// reached only through the konnectivity server (the etcd type).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import protobuf from 'protobufjs';
import { stringify } from 'yaml';
import { makeCA, makeServingCert } from '../../src/server/certs.js';
import { loadEgressSelectorConfig } from '../../src/server/egress.js';
import { oidcAuthenticator } from '../../src/filters/authn/oidc.js';
import { startCluster, type TestCluster } from '../helpers/cluster.js';
import { startAgent, type TestAgent } from '../helpers/agent.js';
import { requireBinary } from '../helpers/binaries.js';
import { startEtcd } from '../helpers/etcd.js';
import { waitFor } from '../agent/runtime-contract.js';

const PROTO = join(dirname(fileURLToPath(import.meta.url)), '../../../src/server/egress/konnectivity.proto');

interface KonnectivityServer {
  /** The bound TCP port (0 on a Unix socket). */
  port: number;
  /** host:port of every DIAL_REQ, in order. */
  dials: string[];
  /** Connections whose CLOSE_RSP was sent. */
  closed: number;
  close(): void;
}

/** A konnectivity proxy server (a Unix socket path, or a TCP address): dials what DIAL_REQ asks and relays DATA both ways. */
async function startKonnectivity(address: string, credentials = grpc.ServerCredentials.createInsecure()): Promise<KonnectivityServer> {
  const Packet = protobuf.loadSync(PROTO).lookupType('Packet');
  const encode = (p: object): Buffer => Buffer.from(Packet.encode(Packet.fromObject(p)).finish());
  const state: KonnectivityServer = { port: 0, dials: [], closed: 0, close: () => server.forceShutdown() };
  let nextID = 1;
  const server = new grpc.Server();
  const identity = (b: Buffer): Buffer => b;
  server.addService(
    { Proxy: { path: '/ProxyService/Proxy', requestStream: true, responseStream: true, requestSerialize: identity, requestDeserialize: identity, responseSerialize: identity, responseDeserialize: identity } },
    {
      Proxy: (call: grpc.ServerDuplexStream<Buffer, Buffer>) => {
        const conns = new Map<string, Socket>();
        const send = (p: object): void => {
          if (!call.writableEnded) call.write(encode(p));
        };
        call.on('data', (raw: Buffer) => {
          const p = Packet.toObject(Packet.decode(raw), { longs: String, defaults: true }) as any;
          if (p.type === 0) {
            const { address, random } = p.dialRequest;
            state.dials.push(address);
            const i = address.lastIndexOf(':');
            const sock = connect(Number(address.slice(i + 1)), address.slice(0, i).replace(/^\[|\]$/g, ''));
            sock.once('error', (err) => {
              if (![...conns.values()].includes(sock)) send({ type: 1, dialResponse: { random, error: err.message } });
              sock.destroy();
            });
            sock.once('connect', () => {
              const id = String(nextID++);
              conns.set(id, sock);
              send({ type: 1, dialResponse: { random, connectID: id } });
              sock.on('data', (d: Buffer) => send({ type: 4, data: { connectID: id, data: d } }));
              sock.once('close', () => {
                conns.delete(id);
                state.closed++;
                send({ type: 3, closeResponse: { connectID: id } });
              });
            });
          } else if (p.type === 4) {
            conns.get(p.data.connectID)?.write(Buffer.from(p.data.data));
          } else if (p.type === 2) {
            conns.get(p.closeRequest.connectID)?.end();
          }
        });
        call.on('end', () => {
          for (const s of conns.values()) s.destroy();
          call.end();
        });
        call.on('error', () => {
          for (const s of conns.values()) s.destroy();
        });
      },
    },
  );
  const target = address.startsWith('/') ? `unix:${address}` : address;
  state.port = await new Promise<number>((resolve, reject) => server.bindAsync(target, credentials, (err, port) => (err ? reject(err) : resolve(port))));
  return state;
}

/** An HTTP CONNECT proxy on a Unix socket, recording CONNECT targets. */
async function startConnectProxy(socketPath: string): Promise<{ connects: string[]; server: HttpServer; tunnels: Socket[] }> {
  const connects: string[] = [];
  const tunnels: Socket[] = [];
  const server = createHttpServer((_req, res) => {
    res.statusCode = 405;
    res.end();
  });
  server.on('connect', (req, client: Socket, head: Buffer) => {
    connects.push(req.url ?? '');
    tunnels.push(client);
    const i = (req.url ?? '').lastIndexOf(':');
    const upstream = connect(Number((req.url ?? '').slice(i + 1)), (req.url ?? '').slice(0, i), () => {
      client.write('HTTP/1.1 200 Connection established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    tunnels.push(upstream);
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
  });
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  return { connects, server, tunnels };
}

describe('--egress-selector-config-file: GRPC (konnectivity) and Unix-socket transports', () => {
  let dir: string;
  let konnectivity: KonnectivityServer;
  let connectProxy: Awaited<ReturnType<typeof startConnectProxy>>;
  let tokenHook: HttpServer;
  let auditHook: HttpServer;
  let audited = 0;
  let admissionHook: HttpsServer;
  let admissionCA = '';
  const admitted: string[] = [];
  let c: TestCluster | undefined;
  let a: TestAgent | undefined;

  const egressFile = async (name: string, selections: unknown[]): Promise<string> => {
    const path = join(dir, name);
    await writeFile(path, stringify({ apiVersion: 'apiserver.k8s.io/v1beta1', kind: 'EgressSelectorConfiguration', egressSelections: selections }));
    return path;
  };

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'orch-egress-modes-'));
    konnectivity = await startKonnectivity(join(dir, 'konnectivity.sock'));
    connectProxy = await startConnectProxy(join(dir, 'connect.sock'));
    tokenHook = createHttpServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.setHeader('Content-Type', 'application/json');
        const status = { authenticated: true, user: { username: 'hooked', groups: ['system:masters'] } };
        res.end(JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', status }));
      });
    });
    await new Promise<void>((resolve) => tokenHook.listen(0, '127.0.0.1', resolve));
    auditHook = createHttpServer((req, res) => {
      req.resume();
      req.on('end', () => {
        audited++;
        res.end();
      });
    });
    await new Promise<void>((resolve) => auditHook.listen(0, '127.0.0.1', resolve));
    const ca = await makeCA('admission-hook-ca');
    admissionCA = ca.cert;
    const serving = await makeServingCert(ca.cert, ca.key, '127.0.0.1', ['127.0.0.1']);
    admissionHook = createHttpsServer({ cert: serving.cert, key: serving.key }, (req, res) => {
      // Also an extension API server for wardle.example.com/v1alpha1 (the aggregation layer).
      if (req.url?.startsWith('/apis/wardle.example.com/v1alpha1')) {
        res.setHeader('Content-Type', 'application/json');
        const resources = [{ name: 'flunders', singularName: 'flunder', namespaced: true, kind: 'Flunder', verbs: ['get', 'list'] }];
        if (req.url === '/apis/wardle.example.com/v1alpha1') res.end(JSON.stringify({ kind: 'APIResourceList', apiVersion: 'v1', groupVersion: 'wardle.example.com/v1alpha1', resources }));
        else res.end(JSON.stringify({ kind: 'FlunderList', apiVersion: 'wardle.example.com/v1alpha1', metadata: {}, items: [] }));
        return;
      }
      if (req.method !== 'POST') {
        res.statusCode = 404;
        res.end();
        return;
      }
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        const review = JSON.parse(body) as { request: { uid: string; name?: string } };
        admitted.push(review.request.name ?? '');
        res.setHeader('Content-Type', 'application/json');
        res.end(JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid: review.request.uid, allowed: true } }));
      });
    });
    await new Promise<void>((resolve) => admissionHook.listen(0, '127.0.0.1', resolve));
  });

  after(async () => {
    await a?.stop();
    await c?.stop();
    konnectivity.close();
    for (const t of connectProxy.tunnels) t.destroy();
    connectProxy.server.closeAllConnections();
    await new Promise((resolve) => connectProxy.server.close(resolve));
    tokenHook.closeAllConnections();
    await new Promise((resolve) => tokenHook.close(resolve));
    auditHook.closeAllConnections();
    await new Promise((resolve) => auditHook.close(resolve));
    admissionHook.closeAllConnections();
    await new Promise((resolve) => admissionHook.close(resolve));
    await rm(dir, { recursive: true, force: true });
  });

  it('checks the uds transport as kube-apiserver does', async () => {
    const noName = await egressFile('no-uds-name.yaml', [{ name: 'cluster', connection: { proxyProtocol: 'GRPC', transport: { uds: {} } } }]);
    await assert.rejects(startCluster([`--egress-selector-config-file=${noName}`]), /egressSelections\[0\]\.connection\.transport\.uds\.udsName: Invalid value: "nil": UDSName should be present for UDS connections/);
  });

  it('refuses GRPC over TCP, as kube-apiserver 1.23 does (the konnectivity server only on a Unix socket)', async () => {
    const path = await egressFile('grpc-tcp.yaml', [{ name: 'cluster', connection: { proxyProtocol: 'GRPC', transport: { tcp: { url: 'http://127.0.0.1:1' } } } }]);
    assert.throws(() => loadEgressSelectorConfig(path), /egressSelections\[0\]\.connection\.uds: Required value: UDS must be set with GRPC/);
  });

  it('OIDC discovery and keys through the controlplane egress', async () => {
    const ca = await makeCA('oidc-ca');
    const serving = await makeServingCert(ca.cert, ca.key, 'issuer.example', ['issuer.example']);
    await writeFile(join(dir, 'oidc-ca.crt'), ca.cert);
    const { privateKey, publicKey } = await generateKeyPair('RS256');
    const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
    const fetched: string[] = [];
    const issuerServer = createHttpsServer({ cert: serving.cert, key: serving.key }, (req, res) => {
      fetched.push(req.url ?? '');
      res.setHeader('content-type', 'application/json');
      if (req.url === '/.well-known/openid-configuration') res.end(JSON.stringify({ issuer: 'https://issuer.example', jwks_uri: 'https://issuer.example/keys' }));
      else res.end(JSON.stringify({ keys: [jwk] }));
    });
    await new Promise<void>((resolve) => issuerServer.listen(0, '127.0.0.1', resolve));
    const port = (issuerServer.address() as AddressInfo).port;
    // The egress: the issuer's name exists only here; every connection is opened by it.
    const dialled: string[] = [];
    const dial = (host: string, p: number): Promise<Socket> =>
      new Promise((resolve, reject) => {
        dialled.push(`${host}:${p}`);
        const sock = connect(port, '127.0.0.1', () => resolve(sock));
        sock.once('error', reject);
      });
    try {
      const auth = oidcAuthenticator({ issuerURL: 'https://issuer.example', clientID: 'orch', caFile: join(dir, 'oidc-ca.crt'), usernameClaim: 'sub', requiredClaims: {}, signingAlgs: ['RS256'], dial });
      const now = Math.floor(Date.now() / 1000);
      const token = await new SignJWT({ sub: 'alice' })
        .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
        .setIssuer('https://issuer.example')
        .setAudience('orch')
        .setIssuedAt(now)
        .setExpirationTime(now + 600)
        .sign(privateKey);
      const r = await auth.authenticateToken(token, undefined);
      assert.equal(r.status, 'authenticated', JSON.stringify(r));
      assert.deepEqual(fetched, ['/.well-known/openid-configuration', '/keys']);
      assert.deepEqual(dialled, ['issuer.example:443', 'issuer.example:443']);
    } finally {
      issuerServer.closeAllConnections();
      await new Promise((resolve) => issuerServer.close(resolve));
    }
  });

  it('cluster over GRPC: kubectl logs and exec reach the agent, and an admission webhook is called, only through the konnectivity server; controlplane over a Unix-socket CONNECT proxy: the token and audit webhooks', async (t) => {
    if (!requireBinary(t, 'kubectl')) return;
    const webhookConfig = join(dir, 'token-webhook.kubeconfig');
    const hookAddress = `127.0.0.1:${(tokenHook.address() as AddressInfo).port}`;
    await writeFile(
      webhookConfig,
      stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'hook', cluster: { server: `http://${hookAddress}/review` } }],
        users: [{ name: 'apiserver', user: {} }],
        contexts: [{ name: 'hook', context: { cluster: 'hook', user: 'apiserver' } }],
        'current-context': 'hook',
      }),
    );
    const auditAddress = `127.0.0.1:${(auditHook.address() as AddressInfo).port}`;
    const auditConfig = join(dir, 'audit-webhook.kubeconfig');
    await writeFile(
      auditConfig,
      stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'audit', cluster: { server: `http://${auditAddress}/events` } }],
        users: [{ name: 'apiserver', user: {} }],
        contexts: [{ name: 'audit', context: { cluster: 'audit', user: 'apiserver' } }],
        'current-context': 'audit',
      }),
    );
    const auditPolicy = join(dir, 'audit-policy.yaml');
    await writeFile(auditPolicy, stringify({ apiVersion: 'audit.k8s.io/v1', kind: 'Policy', rules: [{ level: 'Metadata', resources: [{ group: '', resources: ['namespaces'] }] }, { level: 'None' }] }));
    const path = await egressFile('modes.yaml', [
      { name: 'cluster', connection: { proxyProtocol: 'GRPC', transport: { uds: { udsName: join(dir, 'konnectivity.sock') } } } },
      { name: 'controlplane', connection: { proxyProtocol: 'HTTPConnect', transport: { uds: { udsName: join(dir, 'connect.sock') } } } },
    ]);
    c = await startCluster([
      `--egress-selector-config-file=${path}`,
      `--authentication-token-webhook-config-file=${webhookConfig}`,
      `--audit-policy-file=${auditPolicy}`,
      `--audit-webhook-config-file=${auditConfig}`,
      '--audit-webhook-mode=blocking',
    ]);
    a = await startAgent(c);
    const agentAddress = `127.0.0.1:${a.agent.servers?.port ?? 0}`;

    const created = await c.kubectl(['create', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'talker', namespace: 'default' },
        spec: { nodeName: a.nodeName, terminationGracePeriodSeconds: 1, automountServiceAccountToken: false, containers: [{ name: 'main', image: 'busybox', command: ['sh', '-c', 'echo hello from the pod; sleep 600'] }] },
      }),
    });
    assert.equal(created.code, 0, created.stderr);
    await waitFor(
      'talker Running',
      async () => {
        const r = await c!.kubectl(['get', 'pod', 'talker', '-o', 'jsonpath={.status.phase}']);
        return r.stdout === 'Running' ? true : undefined;
      },
      30_000,
    );
    const before = konnectivity.dials.length;
    const logs = await waitFor(
      'the logs',
      async () => {
        const r = await c!.kubectl(['logs', 'talker']);
        return r.code === 0 && r.stdout.includes('hello') ? r : undefined;
      },
      15_000,
    );
    assert.equal(logs.stdout, 'hello from the pod\n');
    assert.ok(konnectivity.dials.slice(before).includes(agentAddress), `${agentAddress} in ${konnectivity.dials.join(', ')}`);

    const execDials = konnectivity.dials.length;
    const exec = await c.kubectl(['exec', 'talker', '--', 'sh', '-c', 'echo out; echo err >&2; exit 3']);
    assert.equal(exec.stdout, 'out\n');
    assert.match(exec.stderr, /err/);
    assert.equal(exec.code, 3);
    const execThrough = konnectivity.dials.slice(execDials);
    assert.ok(execThrough.length >= 1 && execThrough.every((d) => d === agentAddress), execThrough.join(', '));

    // A dial the proxy server refuses (nothing listens there): a failure at the proxy stage.
    const closed = await new Promise<number>((resolve) => {
      const probe = createHttpServer();
      probe.listen(0, '127.0.0.1', () => {
        const port = (probe.address() as AddressInfo).port;
        probe.close(() => resolve(port));
      });
    });
    const ghost = await c.request('POST', '/api/v1/nodes', { body: { apiVersion: 'v1', kind: 'Node', metadata: { name: 'ghost' } } });
    assert.equal(ghost.status, 201, ghost.text);
    const ghostStatus = await c.request('PUT', '/api/v1/nodes/ghost/status', {
      body: { ...ghost.json, status: { addresses: [{ type: 'InternalIP', address: '127.0.0.1' }], daemonEndpoints: { kubeletEndpoint: { Port: closed } } } },
    });
    assert.equal(ghostStatus.status, 200, ghostStatus.text);
    const ghostPod = await c.request('POST', '/api/v1/namespaces/default/pods', {
      body: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'ghost-pod' }, spec: { nodeName: 'ghost', containers: [{ name: 'main', image: 'busybox' }] } },
    });
    assert.equal(ghostPod.status, 201, ghostPod.text);
    const refused = await c.kubectl(['logs', 'ghost-pod']);
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /konnectivity server/);
    const metrics = (await c.request('GET', '/metrics')).text;
    const count = (re: RegExp): number => Number(re.exec(metrics)?.[1] ?? 0);
    assert.ok(count(/^apiserver_egress_dialer_dial_duration_seconds_count\{protocol="grpc",transport="uds"\} (\d+)$/m) >= 2, metrics.split('\n').filter((l) => l.includes('egress')).join('\n'));
    assert.equal(count(/^apiserver_egress_dialer_dial_failure_count\{protocol="grpc",transport="uds",stage="proxy"\} (\d+)$/m), 1);

    // An admission webhook (cluster type) at a URL.
    const hook = await c.request('POST', '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations', {
      body: {
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'ValidatingWebhookConfiguration',
        metadata: { name: 'through-konnectivity' },
        webhooks: [
          {
            name: 'cm.example.com',
            clientConfig: { url: `https://127.0.0.1:${(admissionHook.address() as AddressInfo).port}/validate`, caBundle: Buffer.from(admissionCA).toString('base64') },
            rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
            sideEffects: 'None',
            admissionReviewVersions: ['v1'],
          },
        ],
      },
    });
    assert.equal(hook.status, 201, hook.text);
    const hookDials = konnectivity.dials.length;
    const cm = await waitFor(
      'the webhook configuration in use',
      async () => {
        const r = await c!.kubectl(['create', 'configmap', `admitted-${admitted.length}-${Date.now()}`]);
        return r.code === 0 && admitted.length > 0 ? r : undefined;
      },
      10_000,
    );
    assert.equal(cm.code, 0, cm.stderr);
    assert.ok(konnectivity.dials.slice(hookDials).includes(`127.0.0.1:${(admissionHook.address() as AddressInfo).port}`), konnectivity.dials.join(', '));

    // An aggregated API server (cluster type): the availability check and the proxied request.
    const extDials = konnectivity.dials.length;
    const hookPort = (admissionHook.address() as AddressInfo).port;
    const svc = await c.request('POST', '/api/v1/namespaces/default/services', {
      body: { apiVersion: 'v1', kind: 'Service', metadata: { name: 'ext-api' }, spec: { type: 'ExternalName', externalName: '127.0.0.1' } },
    });
    assert.equal(svc.status, 201, svc.text);
    const apiService = await c.request('POST', '/apis/apiregistration.k8s.io/v1/apiservices', {
      body: {
        apiVersion: 'apiregistration.k8s.io/v1',
        kind: 'APIService',
        metadata: { name: 'v1alpha1.wardle.example.com' },
        spec: { group: 'wardle.example.com', version: 'v1alpha1', groupPriorityMinimum: 1000, versionPriority: 15, insecureSkipTLSVerify: true, service: { namespace: 'default', name: 'ext-api', port: hookPort } },
      },
    });
    assert.equal(apiService.status, 201, apiService.text);
    const flunders = await waitFor(
      'the aggregated API',
      async () => {
        const r = await c!.kubectl(['get', '--raw', '/apis/wardle.example.com/v1alpha1/namespaces/default/flunders']);
        return r.code === 0 ? r : undefined;
      },
      15_000,
    );
    assert.match(flunders.stdout, /FlunderList/);
    assert.ok(konnectivity.dials.slice(extDials).filter((d) => d === `127.0.0.1:${hookPort}`).length >= 2, 'availability check and proxied request');

    // The token webhook, through the controlplane proxy.
    const r = await c.request('GET', '/api/v1/namespaces/default', { headers: { authorization: 'Bearer webhook-token' } });
    assert.equal(r.status, 200, r.text);
    assert.ok(connectProxy.connects.includes(hookAddress), connectProxy.connects.join(', '));
    assert.ok(!connectProxy.connects.includes(agentAddress), 'the controlplane proxy never carries agent calls');
    // The audit webhook (blocking mode: sent while serving), through the controlplane proxy.
    assert.ok(audited > 0, 'audit events were sent');
    assert.ok(connectProxy.connects.includes(auditAddress), connectProxy.connects.join(', '));
    const after = (await c.request('GET', '/metrics')).text;
    assert.match(after, /^apiserver_egress_dialer_dial_duration_seconds_count\{protocol="http_connect",transport="uds"\} [1-9]/m);
    await a.stop();
    a = undefined;
    await c.stop();
    c = undefined;
  });

  it('etcd over GRPC: the storage reaches etcd only through the konnectivity server', async (t) => {
    if (!requireBinary(t, 'etcd')) return;
    const etcd = await startEtcd();
    try {
      const path = await egressFile('etcd.yaml', [{ name: 'etcd', connection: { proxyProtocol: 'GRPC', transport: { uds: { udsName: join(dir, 'konnectivity.sock') } } } }]);
      const from = konnectivity.dials.length;
      c = await startCluster([`--egress-selector-config-file=${path}`, `--kvstore-servers=${etcd.endpoint}`]);
      const etcdAddress = new URL(etcd.endpoint).host;
      const create = await c.request('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'through-konnectivity' } } });
      assert.equal(create.status, 201, create.text);
      const get = await c.request('GET', '/api/v1/namespaces/through-konnectivity');
      assert.equal(get.status, 200, get.text);
      // Lists come from the watch cache, fed by etcd watches over the tunnel.
      const list = await c.kubectl(['get', 'namespaces', '-o', 'name']);
      assert.match(list.stdout, /namespace\/through-konnectivity/);
      const dials = konnectivity.dials.slice(from);
      assert.ok(dials.length > 0, 'the etcd client dialled through the proxy');
      assert.deepEqual([...new Set(dials)], [etcdAddress]);
      await c.stop();
      c = undefined;
    } finally {
      await etcd.cleanup();
    }
  });
});
