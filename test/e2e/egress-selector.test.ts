// --egress-selector-config-file: the cluster egress type through an HTTP CONNECT proxy this test runs on
// loopback; `kubectl logs` reaches the (fake) node agent only through the tunnel. Direct for the other types;
// invalid files stop the start. The other modes: egress-modes.test.ts.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { connect, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { makeCA, makeClientCert, makeServingCert } from '../../src/server/certs.js';
import { loadEgressSelectorConfig } from '../../src/server/egress.js';
import { startCluster, type TestCluster } from '../helpers/cluster.js';

describe('--egress-selector-config-file', () => {
  let dir: string;
  let agent: HttpsServer;
  let proxy: HttpServer;
  const agentPaths: string[] = [];
  const connects: string[] = [];
  // The proxy's tunnels: detached from its HTTP server, so closing it does not end them.
  const tunnels: { destroy(): void }[] = [];
  let c: TestCluster | undefined;

  const egressFile = async (name: string, selections: unknown[]): Promise<string> => {
    const path = join(dir, name);
    await writeFile(path, stringify({ apiVersion: 'apiserver.k8s.io/v1beta1', kind: 'EgressSelectorConfiguration', egressSelections: selections }));
    return path;
  };

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'orch-egress-'));
    const ca = await makeCA('fake-agent-ca');
    const serving = await makeServingCert(ca.cert, ca.key, 'agent', ['127.0.0.1']);
    agent = createHttpsServer({ cert: serving.cert, key: serving.key }, (req, res) => {
      agentPaths.push(req.url ?? '');
      res.setHeader('Content-Type', 'text/plain');
      res.end('hello through the tunnel\n');
    });
    await new Promise<void>((resolve) => agent.listen(0, '127.0.0.1', resolve));
    proxy = createHttpServer((_req, res) => {
      res.statusCode = 405;
      res.end();
    });
    proxy.on('connect', (req, client, head) => {
      connects.push(req.url ?? '');
      tunnels.push(client);
      const [host, port] = (req.url ?? '').split(':');
      const upstream = connect(Number(port), host ?? '127.0.0.1', () => {
        tunnels.push(upstream);
        client.write('HTTP/1.1 200 Connection established\r\n\r\n');
        if (head.length > 0) upstream.write(head);
        upstream.pipe(client);
        client.pipe(upstream);
      });
      upstream.on('error', () => client.destroy());
      client.on('error', () => upstream.destroy());
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  });

  after(async () => {
    await c?.stop();
    for (const s of tunnels) s.destroy();
    agent.closeAllConnections();
    proxy.closeAllConnections();
    await new Promise((resolve) => agent.close(resolve));
    await new Promise((resolve) => proxy.close(resolve));
    await rm(dir, { recursive: true, force: true });
  });

  it('refuses invalid files, with messages', async () => {
    const badName = await egressFile('bad-name.yaml', [{ name: 'nodes', connection: { proxyProtocol: 'Direct' } }]);
    await assert.rejects(startCluster([`--egress-selector-config-file=${badName}`]), /egressSelections\[0\]\.name: Unsupported value: "nodes"/);
    const noTransport = await egressFile('no-transport.yaml', [{ name: 'cluster', connection: { proxyProtocol: 'HTTPConnect' } }]);
    await assert.rejects(startCluster([`--egress-selector-config-file=${noTransport}`]), /transport: Required value/);
    const both = await egressFile('both.yaml', [
      { name: 'cluster', connection: { proxyProtocol: 'HTTPConnect', transport: { uds: { udsName: '/tmp/x.sock' }, tcp: { url: 'http://127.0.0.1:1' } } } },
    ]);
    await assert.rejects(startCluster([`--egress-selector-config-file=${both}`]), /tcp and uds cannot both be set/);
    const plainTls = await egressFile('plain-tls.yaml', [
      { name: 'etcd', connection: { proxyProtocol: 'HTTPConnect', transport: { tcp: { url: 'http://127.0.0.1:1', tlsConfig: { caBundle: '/nonexistent' } } } } },
    ]);
    await assert.rejects(startCluster([`--egress-selector-config-file=${plainTls}`]), /tlsConfig should not be present when using HTTP/);
  });

  it('dials through an https proxy with the file\'s CA and client certificate', async () => {
    const ca = await makeCA('egress-proxy-ca');
    const serving = await makeServingCert(ca.cert, ca.key, 'proxy', ['127.0.0.1']);
    const client = await makeClientCert({ caCert: ca.cert, caKey: ca.key, commonName: 'orch-apiserver' });
    for (const [name, text] of [['proxy-ca.crt', ca.cert], ['client.crt', client.cert], ['client.key', client.key]] as const) await writeFile(join(dir, name), text);
    const seen: { target: string; clientCN: string }[] = [];
    const tlsProxy = createHttpsServer({ cert: serving.cert, key: serving.key, ca: ca.cert, requestCert: true, rejectUnauthorized: true });
    tlsProxy.on('connect', (req, sock, head) => {
      seen.push({ target: req.url ?? '', clientCN: String((sock as TLSSocket).getPeerCertificate().subject?.CN ?? '') });
      const [host, port] = (req.url ?? '').split(':');
      const upstream = connect(Number(port), host ?? '127.0.0.1', () => {
        sock.write('HTTP/1.1 200 Connection established\r\n\r\n');
        if (head.length > 0) upstream.write(head);
        upstream.pipe(sock);
        sock.pipe(upstream);
      });
      tunnels.push(upstream, sock);
    });
    await new Promise<void>((resolve) => tlsProxy.listen(0, '127.0.0.1', resolve));
    try {
      const path = await egressFile('tls.yaml', [
        {
          name: 'cluster',
          connection: {
            proxyProtocol: 'HTTPConnect',
            transport: {
              tcp: {
                url: `https://127.0.0.1:${(tlsProxy.address() as AddressInfo).port}`,
                tlsConfig: { caBundle: join(dir, 'proxy-ca.crt'), clientCert: join(dir, 'client.crt'), clientKey: join(dir, 'client.key') },
              },
            },
          },
        },
      ]);
      const dial = loadEgressSelectorConfig(path).cluster;
      assert.ok(dial);
      const agentPort = (agent.address() as AddressInfo).port;
      const sock = await dial('127.0.0.1', agentPort);
      // TLS to the agent over the tunnel: its certificate proves the tunnel reaches it.
      const tls = tlsConnect({ socket: sock, rejectUnauthorized: false });
      await new Promise<void>((resolve, reject) => {
        tls.once('secureConnect', resolve);
        tls.once('error', reject);
      });
      const cn = tls.getPeerCertificate().subject?.CN;
      tls.destroy();
      assert.equal(cn, 'agent');
      assert.deepEqual(seen, [{ target: `127.0.0.1:${agentPort}`, clientCN: 'orch-apiserver' }]);
    } finally {
      for (const t of tunnels) t.destroy();
      await new Promise((resolve) => tlsProxy.close(resolve));
    }
  });

  it('sends kubectl logs to the node agent through the cluster HTTPConnect proxy', async () => {
    const proxyPort = (proxy.address() as AddressInfo).port;
    const path = await egressFile('egress.yaml', [
      { name: 'cluster', connection: { proxyProtocol: 'HTTPConnect', transport: { tcp: { url: `http://127.0.0.1:${proxyPort}` } } } },
      { name: 'controlplane', connection: { proxyProtocol: 'Direct' } },
      { name: 'etcd', connection: { proxyProtocol: 'Direct' } },
    ]);
    c = await startCluster([`--egress-selector-config-file=${path}`]);
    const agentPort = (agent.address() as AddressInfo).port;
    const node = await c.request('POST', '/api/v1/nodes', { body: { apiVersion: 'v1', kind: 'Node', metadata: { name: 'tunnelled' } } });
    assert.equal(node.status, 201, node.text);
    const withStatus = {
      ...node.json,
      status: { addresses: [{ type: 'InternalIP', address: '127.0.0.1' }], daemonEndpoints: { kubeletEndpoint: { Port: agentPort } } },
    };
    const st = await c.request('PUT', '/api/v1/nodes/tunnelled/status', { body: withStatus });
    assert.equal(st.status, 200, st.text);
    const pod = await c.request('POST', '/api/v1/namespaces/default/pods', {
      body: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'talker' }, spec: { nodeName: 'tunnelled', containers: [{ name: 'main', image: 'busybox' }] } },
    });
    assert.equal(pod.status, 201, pod.text);
    const logs = await c.kubectl(['logs', 'talker']);
    assert.equal(logs.code, 0, logs.stderr);
    assert.equal(logs.stdout, 'hello through the tunnel\n');
    assert.deepEqual(connects, [`127.0.0.1:${agentPort}`]);
    assert.deepEqual(agentPaths, ['/containerLogs/default/talker/main']);
  });
});
