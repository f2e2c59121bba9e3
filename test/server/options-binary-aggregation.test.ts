/**
 * The aggregation layer and tracing on the real bin/orch-apiserver, checked from outside.
 *
 * Aggregation (one binary with --enable-aggregator-routing=false, one with =true): --proxy-client-cert-file /
 * --proxy-client-key-file with the --requestheader-* options, and an extension API server this test runs on
 * 127.0.0.1 (group wardle.example.com/v1alpha1). The extension server trusts the binary the way a real one
 * does: it reads kube-system/extension-apiserver-authentication from the binary and accepts the identity
 * headers named there only from a client certificate signed by requestheader-client-ca-file whose name is in
 * requestheader-allowed-names. It is registered by an APIService whose ClusterIP Service (port 443, named
 * https) has Endpoints at 10.244.1.7:8443.
 *
 * Reaching it honestly: cluster IPs and pod IPs are not routable on this machine, and Endpoints may not hold
 * loopback addresses. The binary reaches the cluster network as a real control plane without a route to it
 * does, through the cluster egress (--egress-selector-config-file, HTTPConnect): the test's CONNECT proxy
 * plays the cluster network. It records the address the binary asks for (the cluster IP and Service port
 * without routing, the endpoint IP and port with it) and connects every such tunnel to the extension server
 * on loopback. Nothing in the server maps addresses; the mapping is only this proxy's.
 *
 * Checked: discovery merged (kubectl 1.27, 1.32 and 1.33 api-resources list flunders), requests proxied with
 * the front-proxy client certificate and the user in X-Remote-User/-Group/-Extra (a token user, and a user
 * that a front proxy in front of the binary asserted through the request-header options; spoofed identity
 * headers and an unlisted certificate name are not believed), Available True (Passed), False with
 * MissingEndpoints when the Endpoints have no ready address, and False with FailedDiscoveryCheck when the
 * extension server is down (requests then answered 503). The binary without routing is also traced: an
 * incoming traceparent reaches the extension server through the client span of the proxied call.
 *
 * Tracing (--tracing-config-file with the APIServerTracing gate; refused without it or with an invalid
 * file): an OTLP receiver on loopback and a validating admission webhook on loopback.
 * samplingRatePerMillion 1000000: spans for requests (kubectl's) and storage calls under them, an incoming
 * traceparent continued, and the webhook called with the traceparent of its client span.
 * samplingRatePerMillion 0: no span of the server's own choosing, while a sampled incoming parent is still
 * followed and unsampled contexts still propagate to the webhook.
 */
import { after, before, describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer as createHttpsServer, request as httpsRequest, type Server as HttpsServer } from 'node:https';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { stringify } from 'yaml';
import { makeCA, makeClientCert, makeServingCert, type CertAndKey } from '../../src/server/certs.js';
import { runBin, startBinCluster, type BinCluster } from '../helpers/binserver.js';
import { freePort } from '../helpers/ports.js';
import { kubectlPath } from '../helpers/cluster.js';
import { requireBinary } from '../helpers/binaries.js';
import { eventually } from '../helpers/eventually.js';
import { startOtlpReceiver, type OtlpReceiver } from '../helpers/otlp.js';

type Json = Record<string, any>;

const GROUP = 'wardle.example.com';
const VERSION = 'v1alpha1';
const APISERVICE = `${VERSION}.${GROUP}`;
const FLUNDERS = `/apis/${GROUP}/${VERSION}/namespaces/default/flunders`;
const ENDPOINT_IP = '10.244.1.7';
const ENDPOINT_PORT = 8443;

/** kubectl of a given minor version; null (skip) when missing locally, a failure under CI=true. */
function kubectlVersion(t: TestContext, version: string | undefined): boolean {
  if (!requireBinary(t, 'kubectl')) return false;
  if (version === undefined || kubectlPath(version)) return true;
  if (process.env.CI === 'true') throw new Error(`kubectl.${version} is not installed (CI=true: not skipping)`);
  t.diagnostic(`kubectl.${version} is not installed`);
  return false;
}

interface Seen {
  path: string;
  /** The client certificate was signed by the requestheader CA. */
  authorized: boolean;
  clientCN: string | undefined;
  user: string | undefined;
  groups: string[];
  extra: Record<string, string[]>;
  authorization: boolean;
  traceparent: string | undefined;
}

/** What an extension API server reads from extension-apiserver-authentication to trust a front proxy. */
interface FrontProxyTrust {
  ca: string;
  allowedNames: string[];
  usernameHeaders: string[];
  groupHeaders: string[];
  extraPrefixes: string[];
}

/**
 * The extension API server: identity from the request-header settings it was given (as k8s.io/apiserver's
 * RequestHeader authenticator in a real one), 401 for anyone else.
 */
function extensionServer(serving: CertAndKey, trust: FrontProxyTrust, seen: Seen[]): HttpsServer {
  return createHttpsServer({ cert: serving.cert, key: serving.key, ca: trust.ca, requestCert: true, rejectUnauthorized: false }, (req, res) => {
    const socket = req.socket as TLSSocket;
    const cn = socket.getPeerCertificate()?.subject?.CN as string | undefined;
    const header = (names: string[]): string[] => names.flatMap((n) => req.headersDistinct[n.toLowerCase()] ?? []);
    const extra: Record<string, string[]> = {};
    for (const [k, v] of Object.entries(req.headersDistinct)) {
      const prefix = trust.extraPrefixes.find((p) => k.startsWith(p.toLowerCase()));
      if (prefix && v) extra[decodeURIComponent(k.slice(prefix.length))] = v;
    }
    const entry: Seen = {
      path: req.url ?? '',
      authorized: socket.authorized,
      clientCN: cn,
      user: header(trust.usernameHeaders)[0],
      groups: header(trust.groupHeaders),
      extra,
      authorization: req.headers.authorization !== undefined,
      traceparent: req.headers.traceparent as string | undefined,
    };
    seen.push(entry);
    const json = (code: number, body: object) => {
      res.writeHead(code, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    const trusted = socket.authorized && cn !== undefined && (trust.allowedNames.length === 0 || trust.allowedNames.includes(cn));
    if (!trusted || !entry.user) return json(401, { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'Unauthorized', code: 401, message: 'Unauthorized' });
    const path = (req.url ?? '').split('?')[0];
    if (path === `/apis/${GROUP}/${VERSION}`) {
      return json(200, {
        kind: 'APIResourceList',
        apiVersion: 'v1',
        groupVersion: `${GROUP}/${VERSION}`,
        resources: [{ name: 'flunders', singularName: 'flunder', namespaced: true, kind: 'Flunder', verbs: ['get', 'list'], shortNames: ['fl'] }],
      });
    }
    if (path === FLUNDERS) {
      const metadata = { name: 'my-flunder', namespace: 'default', creationTimestamp: '2024-01-01T00:00:00Z', annotations: { 'seen-by': entry.user } };
      return json(200, { kind: 'FlunderList', apiVersion: `${GROUP}/${VERSION}`, metadata: {}, items: [{ apiVersion: `${GROUP}/${VERSION}`, kind: 'Flunder', metadata }] });
    }
    json(404, { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotFound', code: 404, message: 'not found' });
  });
}

/**
 * The cluster network as the binary's HTTPConnect egress reaches it: records each CONNECT target and joins
 * the tunnel to `backend()` on loopback (502 when that refuses).
 */
function clusterNetwork(backend: () => number, connects: string[]): { server: HttpServer; destroy(): void } {
  const sockets = new Set<Socket>();
  const server = createHttpServer((_req, res) => {
    res.statusCode = 405;
    res.end();
  });
  server.on('connect', (req, client: Socket, head: Buffer) => {
    connects.push(req.url ?? '');
    sockets.add(client);
    const upstream = connect(backend(), '127.0.0.1', () => {
      client.write('HTTP/1.1 200 Connection established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    sockets.add(upstream);
    upstream.on('error', () => {
      if (client.writable) client.end('HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n');
    });
    client.on('error', () => upstream.destroy());
    client.on('close', () => upstream.destroy());
  });
  return {
    server,
    destroy: () => {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}

/** One HTTPS request to the binary as a client with a certificate (a front proxy), no token. */
function certRequest(c: BinCluster, path: string, client: CertAndKey, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(c.url + path, { ca: c.caCert, cert: client.cert, key: client.key, agent: false, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

const available = async (c: BinCluster): Promise<Json | undefined> => {
  const r = await c.request('GET', `/apis/apiregistration.k8s.io/v1/apiservices/${APISERVICE}`);
  return (r.json?.status?.conditions ?? []).find((x: Json) => x.type === 'Available');
};

for (const routing of [false, true]) {
  void describe(`aggregation on the binary, --enable-aggregator-routing=${routing}`, () => {
    let dir = '';
    let c: BinCluster;
    let ext: HttpsServer | undefined;
    let net: ReturnType<typeof clusterNetwork>;
    let frontProxyClient: CertAndKey;
    let intruder: CertAndKey;
    let servingCA = '';
    let serving: CertAndKey;
    let clusterIP = '';
    const seen: Seen[] = [];
    const connects: string[] = [];
    let traces: OtlpReceiver | undefined;
    /** The address the binary must ask the cluster network for. */
    const target = () => (routing ? `${ENDPOINT_IP}:${ENDPOINT_PORT}` : `${clusterIP}:443`);

    before(async () => {
      dir = await mkdtemp(join(tmpdir(), 'orch-optbin-agg-'));
      const frontProxyCA = await makeCA('front-proxy-ca');
      frontProxyClient = await makeClientCert({ caCert: frontProxyCA.cert, caKey: frontProxyCA.key, commonName: 'front-proxy-client' });
      intruder = await makeClientCert({ caCert: frontProxyCA.cert, caKey: frontProxyCA.key, commonName: 'intruder' });
      const extCA = await makeCA('wardle-ca');
      servingCA = extCA.cert;
      serving = await makeServingCert(extCA.cert, extCA.key, 'ext-api.default.svc', ['ext-api.default.svc']);
      await writeFile(join(dir, 'front-proxy-ca.crt'), frontProxyCA.cert);
      await writeFile(join(dir, 'proxy.crt'), frontProxyClient.cert);
      await writeFile(join(dir, 'proxy.key'), frontProxyClient.key);
      net = clusterNetwork(() => (ext?.listening ? (ext.address() as AddressInfo).port : 1), connects);
      await new Promise<void>((resolve) => net.server.listen(0, '127.0.0.1', resolve));
      const egress = join(dir, 'egress.yaml');
      await writeFile(
        egress,
        stringify({
          apiVersion: 'apiserver.k8s.io/v1beta1',
          kind: 'EgressSelectorConfiguration',
          egressSelections: [
            { name: 'cluster', connection: { proxyProtocol: 'HTTPConnect', transport: { tcp: { url: `http://127.0.0.1:${(net.server.address() as AddressInfo).port}` } } } },
            { name: 'controlplane', connection: { proxyProtocol: 'Direct' } },
          ],
        }),
      );
      traces = routing ? undefined : await startOtlpReceiver();
      const tracing = join(dir, 'tracing.yaml');
      if (traces) {
        await writeFile(tracing, stringify({ apiVersion: 'apiserver.config.k8s.io/v1alpha1', kind: 'TracingConfiguration', endpoint: traces.endpoint, samplingRatePerMillion: 1_000_000 }));
      }
      c = await startBinCluster([
        `--enable-aggregator-routing=${routing}`,
        `--egress-selector-config-file=${egress}`,
        `--proxy-client-cert-file=${join(dir, 'proxy.crt')}`,
        `--proxy-client-key-file=${join(dir, 'proxy.key')}`,
        `--requestheader-client-ca-file=${join(dir, 'front-proxy-ca.crt')}`,
        '--requestheader-allowed-names=front-proxy-client',
        '--requestheader-username-headers=X-Remote-User',
        '--requestheader-group-headers=X-Remote-Group',
        '--requestheader-extra-headers-prefix=X-Remote-Extra-',
        // Without routing, also traced: the trace goes on to the extension server.
        ...(traces ? ['--feature-gates=APIServerTracing=true', `--tracing-config-file=${tracing}`] : []),
      ], traces ? { env: { OTEL_BSP_SCHEDULE_DELAY: '50' } } : {});
      // The extension server is configured from what the binary publishes, as a real one is.
      const cm = await c.request('GET', '/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication');
      assert.equal(cm.status, 200, cm.text);
      const data = cm.json.data as Record<string, string>;
      const trust: FrontProxyTrust = {
        ca: data['requestheader-client-ca-file'] ?? '',
        allowedNames: JSON.parse(data['requestheader-allowed-names'] ?? '[]') as string[],
        usernameHeaders: JSON.parse(data['requestheader-username-headers'] ?? '[]') as string[],
        groupHeaders: JSON.parse(data['requestheader-group-headers'] ?? '[]') as string[],
        extraPrefixes: JSON.parse(data['requestheader-extra-headers-prefix'] ?? '[]') as string[],
      };
      assert.equal(trust.ca.trim(), frontProxyCA.cert.trim());
      assert.deepEqual([trust.allowedNames, trust.usernameHeaders, trust.groupHeaders, trust.extraPrefixes], [['front-proxy-client'], ['X-Remote-User'], ['X-Remote-Group'], ['X-Remote-Extra-']]);
      ext = extensionServer(serving, trust, seen);
      await new Promise<void>((resolve) => ext!.listen(0, '127.0.0.1', resolve));
    });

    after(async () => {
      await c?.stop();
      ext?.closeAllConnections();
      ext?.close();
      net?.destroy();
      traces?.close();
      if (dir) await rm(dir, { recursive: true, force: true });
    });

    void it('registers the extension server and finds it Available at the address routing chooses', async (t) => {
      if (!kubectlVersion(t, undefined)) return t.skip('kubectl not installed');
      const svc = await c.request('POST', '/api/v1/namespaces/default/services', {
        body: { apiVersion: 'v1', kind: 'Service', metadata: { name: 'ext-api' }, spec: { ports: [{ name: 'https', port: 443, targetPort: ENDPOINT_PORT }] } },
      });
      assert.equal(svc.status, 201, svc.text);
      clusterIP = String(svc.json.spec.clusterIP);
      assert.match(clusterIP, /^\d+\.\d+\.\d+\.\d+$/);
      const ep = await c.request('POST', '/api/v1/namespaces/default/endpoints', {
        body: { apiVersion: 'v1', kind: 'Endpoints', metadata: { name: 'ext-api' }, subsets: [{ addresses: [{ ip: ENDPOINT_IP }], ports: [{ name: 'https', port: ENDPOINT_PORT }] }] },
      });
      assert.equal(ep.status, 201, ep.text);
      const apiService = {
        apiVersion: 'apiregistration.k8s.io/v1',
        kind: 'APIService',
        metadata: { name: APISERVICE },
        spec: { group: GROUP, version: VERSION, groupPriorityMinimum: 1000, versionPriority: 15, caBundle: Buffer.from(servingCA).toString('base64'), service: { namespace: 'default', name: 'ext-api', port: 443 } },
      };
      const applied = await c.kubectl(['apply', '-f', '-'], { input: JSON.stringify(apiService) });
      assert.equal(applied.code, 0, applied.stderr);
      const cond = await eventually('Available=True', async () => {
        const a = await available(c);
        return a?.status === 'True' ? a : undefined;
      });
      assert.deepEqual([cond.reason, cond.message], ['Passed', 'all checks passed']);
      const table = await c.kubectl(['get', 'apiservice', APISERVICE]);
      assert.match(table.stdout, new RegExp(`${APISERVICE.replace(/\./g, '\\.')}\\s+default/ext-api\\s+True\\s`));
      // The discovery check went to the routed address, as the aggregator, with the front-proxy certificate.
      assert.ok(connects.length > 0);
      assert.deepEqual([...new Set(connects)], [target()]);
      const check = seen.find((s) => s.path === `/apis/${GROUP}/${VERSION}`);
      assert.deepEqual([check?.user, check?.groups, check?.clientCN, check?.authorized], ['system:kube-aggregator', ['system:masters'], 'front-proxy-client', true]);
    });

    for (const version of routing ? [undefined] : ['1.27', undefined, '1.33']) {
      void it(`merges discovery: kubectl ${version ?? '(PATH)'} api-resources lists the group, get by its short name`, async (t) => {
        if (!kubectlVersion(t, version)) return t.skip(`kubectl ${version ?? ''} not installed`);
        const r = await c.kubectl(['api-resources', `--api-group=${GROUP}`, '--no-headers'], version ? { version } : {});
        assert.equal(r.code, 0, r.stderr);
        assert.match(r.stdout, new RegExp(`^flunders\\s+fl\\s+${GROUP.replace(/\./g, '\\.')}/${VERSION}\\s+true\\s+Flunder\\n$`));
        // The short name from that discovery, and the request proxied.
        const got = await c.kubectl(['get', 'fl', '-n', 'default', '-o', 'name'], version ? { version } : {});
        assert.equal(got.code, 0, got.stderr);
        assert.equal(got.stdout, `flunder.${GROUP}/my-flunder\n`);
      });
    }

    void it('proxies a kubectl request with the front-proxy identity and the user in the request headers', async (t) => {
      if (!kubectlVersion(t, undefined)) return t.skip('kubectl not installed');
      const before = seen.length;
      connects.length = 0;
      const r = await c.kubectl(['get', 'flunders', '-n', 'default', '-o', 'jsonpath={.items[0].metadata.annotations.seen-by}']);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, 'admin');
      const mine = seen.slice(before).find((s) => s.path.startsWith(FLUNDERS));
      assert.ok(mine, JSON.stringify(seen.slice(before)));
      assert.equal(mine.clientCN, 'front-proxy-client');
      assert.equal(mine.authorized, true);
      assert.equal(mine.user, 'admin');
      assert.deepEqual([...mine.groups].sort(), ['system:authenticated', 'system:masters']);
      assert.equal(mine.authorization, false, 'the bearer token is not passed on');
      assert.deepEqual([...new Set(connects)], [target()]);

      // Identity headers a token client sends are not passed on as its identity.
      const spoofed = await c.request('GET', FLUNDERS, { headers: { 'x-remote-user': 'mallory', 'x-remote-group': 'system:masters' } });
      assert.equal(spoofed.status, 200, spoofed.text);
      assert.equal(spoofed.json.items[0].metadata.annotations['seen-by'], 'admin');
      assert.equal(seen.filter((s) => s.user === 'mallory').length, 0);
    });

    void it('passes on the user a front proxy asserted through the request-header options', async () => {
      // Extra keys are lower-cased and percent-decoded by the binary, and percent-encoded again where a header
      // name may not hold the character (client-go's headerKeyEscape).
      const r = await certRequest(c, FLUNDERS, frontProxyClient, {
        'X-Remote-User': 'bob',
        'X-Remote-Group': 'wardle-admins',
        'X-Remote-Extra-Scopes': 'read',
        'X-Remote-Extra-Example.com%2FReason%28s%29': 'audit',
      });
      assert.equal(r.status, 200, r.body);
      const mine = seen.findLast((s) => s.path.startsWith(FLUNDERS));
      assert.equal(mine?.user, 'bob');
      assert.deepEqual([...(mine?.groups ?? [])].sort(), ['system:authenticated', 'wardle-admins']);
      assert.deepEqual(mine?.extra, { scopes: ['read'], 'example.com/reason(s)': ['audit'] });
      assert.equal(mine?.clientCN, 'front-proxy-client', 'the binary calls with its own proxy client certificate');
      // A certificate of the same CA whose name is not in --requestheader-allowed-names is not a front proxy.
      const count = seen.length;
      const refused = await certRequest(c, FLUNDERS, intruder, { 'X-Remote-User': 'mallory' });
      assert.equal(refused.status, 401, refused.body);
      assert.equal(seen.length, count, 'the extension server was not called');
    });

    if (!routing) {
      void it('continues an incoming trace to the extension server through a client span of the proxied call', async () => {
        assert.ok(traces);
        const traceId = randomBytes(16).toString('hex');
        const parentId = randomBytes(8).toString('hex');
        const r = await c.request('GET', FLUNDERS, { headers: { traceparent: `00-${traceId}-${parentId}-01` } });
        assert.equal(r.status, 200, r.text);
        const [version, extTrace, extParent, flags] = (seen.findLast((s) => s.path.startsWith(FLUNDERS))?.traceparent ?? '').split('-');
        assert.deepEqual([version, extTrace, flags], ['00', traceId, '01']);
        const client = await eventually('the proxy client span', () => traces!.spans.find((s) => s.spanId === extParent));
        assert.deepEqual([client.name, client.kind, client.traceId, client.attributes['http.status_code']], ['HTTP GET', 3, traceId, 200]);
        assert.equal(client.attributes['http.url'], `https://${target()}${FLUNDERS}`);
        const request = await eventually('the request span', () => traces!.spans.find((s) => s.spanId === client.parentSpanId));
        assert.deepEqual([request.name, request.parentSpanId, request.attributes['http.target']], ['KubernetesAPI', parentId, FLUNDERS]);
      });
    }

    void it('reports MissingEndpoints without a ready address, and FailedDiscoveryCheck when the server is down', async (t) => {
      if (!kubectlVersion(t, undefined)) return t.skip('kubectl not installed');
      const notReady = await c.request('PUT', '/api/v1/namespaces/default/endpoints/ext-api', {
        body: { apiVersion: 'v1', kind: 'Endpoints', metadata: { name: 'ext-api' }, subsets: [{ notReadyAddresses: [{ ip: ENDPOINT_IP }], ports: [{ name: 'https', port: ENDPOINT_PORT }] }] },
      });
      assert.equal(notReady.status, 200, notReady.text);
      const missing = await eventually('MissingEndpoints', async () => {
        const a = await available(c);
        return a?.reason === 'MissingEndpoints' ? a : undefined;
      });
      assert.deepEqual([missing.status, missing.message], ['False', 'endpoints for service/ext-api in "default" have no addresses with port name "https"']);
      const unavailable = await c.request('GET', FLUNDERS);
      assert.equal(unavailable.status, 503);
      const ready = await c.request('PUT', '/api/v1/namespaces/default/endpoints/ext-api', {
        body: { apiVersion: 'v1', kind: 'Endpoints', metadata: { name: 'ext-api' }, subsets: [{ addresses: [{ ip: ENDPOINT_IP }], ports: [{ name: 'https', port: ENDPOINT_PORT }] }] },
      });
      assert.equal(ready.status, 200, ready.text);
      await eventually('Available=True again', async () => (await available(c))?.status === 'True');

      await new Promise<void>((resolve) => {
        ext!.close(() => resolve());
        ext!.closeAllConnections();
      });
      const failed = await eventually(
        'FailedDiscoveryCheck',
        async () => {
          await c.request('GET', FLUNDERS); // a failed proxied request makes the controller look again
          const a = await available(c);
          return a?.status === 'False' ? a : undefined;
        },
        { timeoutMs: 30_000, intervalMs: 200 },
      );
      assert.equal(failed.reason, 'FailedDiscoveryCheck');
      assert.ok(failed.message.startsWith(`failing or missing response from https://${target()}/apis/${GROUP}/${VERSION}: `), failed.message);
      const table = await c.kubectl(['get', 'apiservices', APISERVICE]);
      assert.match(table.stdout, /default\/ext-api\s+False \(FailedDiscoveryCheck\)/);
      const down = await c.kubectl(['get', 'flunders', '-n', 'default']);
      assert.notEqual(down.code, 0);
      assert.match(down.stderr, /the server is currently unable to handle the request/);
    });
  });
}

void describe('--tracing-config-file on the binary', () => {
  let dir = '';
  let receiver: OtlpReceiver;
  const receivers: OtlpReceiver[] = [];
  let hook: HttpsServer;
  let hookCA = '';
  const hookTraceparents: (string | undefined)[] = [];

  /** A binary tracing at `rate`, exporting to a receiver of its own (so no late span of another binary counts). */
  const startTraced = async (rate: number): Promise<BinCluster> => {
    receiver = await startOtlpReceiver();
    receivers.push(receiver);
    const file = join(dir, `tracing-${rate}.yaml`);
    await writeFile(file, stringify({ apiVersion: 'apiserver.config.k8s.io/v1alpha1', kind: 'TracingConfiguration', endpoint: receiver.endpoint, samplingRatePerMillion: rate }));
    // A short batch delay (OpenTelemetry's OTEL_BSP_SCHEDULE_DELAY) so spans arrive while the test waits.
    return startBinCluster(['--feature-gates=APIServerTracing=true', `--tracing-config-file=${file}`], { env: { OTEL_BSP_SCHEDULE_DELAY: '50' } });
  };

  /** Registers the webhook for configmap creation and waits until a creation reaches it. */
  const registerHook = async (c: BinCluster): Promise<void> => {
    const port = (hook.address() as AddressInfo).port;
    const r = await c.request('POST', '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations', {
      body: {
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'ValidatingWebhookConfiguration',
        metadata: { name: 'traced' },
        webhooks: [
          {
            name: 'cm.example.com',
            clientConfig: { url: `https://127.0.0.1:${port}/validate`, caBundle: Buffer.from(hookCA).toString('base64') },
            rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
            sideEffects: 'None',
            admissionReviewVersions: ['v1'],
          },
        ],
      },
    });
    assert.equal(r.status, 201, r.text);
    let n = 0;
    await eventually('the webhook configuration in effect', async () => {
      const cm = await c.request('POST', '/api/v1/namespaces/default/configmaps', { body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `warm-up-${n++}` } } });
      assert.equal(cm.status, 201, cm.text);
      return hookTraceparents.length > 0;
    });
    hookTraceparents.length = 0;
  };

  const createConfigMap = (c: BinCluster, name: string, traceparent?: string) =>
    c.request('POST', '/api/v1/namespaces/default/configmaps', {
      body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { a: 'b' } },
      ...(traceparent ? { headers: { traceparent } } : {}),
    });

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'orch-optbin-trace-'));
    const ca = await makeCA('hook-ca');
    hookCA = ca.cert;
    const serving = await makeServingCert(ca.cert, ca.key, 'hook', ['127.0.0.1']);
    hook = createHttpsServer({ cert: serving.cert, key: serving.key }, (req, res) => {
      hookTraceparents.push(req.headers.traceparent as string | undefined);
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        const uid = (JSON.parse(body) as { request: { uid: string } }).request.uid;
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid, allowed: true } }));
      });
    });
    await new Promise<void>((resolve) => hook.listen(0, '127.0.0.1', resolve));
  });

  after(async () => {
    for (const r of receivers) r.close();
    hook?.closeAllConnections();
    hook?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  void it('is refused without the APIServerTracing gate, and with an invalid file', async () => {
    const file = join(dir, 'too-high.yaml');
    await writeFile(file, stringify({ apiVersion: 'apiserver.config.k8s.io/v1alpha1', kind: 'TracingConfiguration', samplingRatePerMillion: 2_000_000 }));
    const common = ['--bind-address=127.0.0.1', `--secure-port=${await freePort()}`, '--data-dir=:memory:', `--cert-dir=${join(dir, 'refused-certs')}`];
    const [noGate, invalid] = await Promise.all([
      runBin([...common, `--tracing-config-file=${file}`]),
      runBin([...common, '--feature-gates=APIServerTracing=true', `--tracing-config-file=${file}`]),
    ]);
    assert.notEqual(noGate.code, 0);
    assert.match(noGate.stderr, /--tracing-config-file requires the APIServerTracing feature gate to be enabled/);
    assert.notEqual(invalid.code, 0);
    assert.match(invalid.stderr, /samplingRatePerMillion: Invalid value: 2000000: sampling rate per million must be less than or equal to one million/);
  });

  void it('samplingRatePerMillion 1000000: request and storage spans, an incoming trace continued, the webhook called within it', async (t) => {
    if (!kubectlVersion(t, undefined)) return t.skip('kubectl not installed');
    const c = await startTraced(1_000_000);
    try {
      const got = await c.kubectl(['get', 'namespace', 'kube-system', '-o', 'name']);
      assert.equal(got.code, 0, got.stderr);
      const kubectlSpan = await eventually('the span of kubectl\'s request', () =>
        receiver.spans.find((s) => s.attributes['http.target'] === '/api/v1/namespaces/kube-system' && String(s.attributes['http.user_agent']).startsWith('kubectl')),
      );
      assert.deepEqual([kubectlSpan.name, kubectlSpan.kind, kubectlSpan.parentSpanId, kubectlSpan.resource['service.name']], ['KubernetesAPI', 2, '', 'apiserver']);
      assert.equal(kubectlSpan.attributes['http.status_code'], 200);

      await registerHook(c);
      const traceId = randomBytes(16).toString('hex');
      const parentId = randomBytes(8).toString('hex');
      const created = await createConfigMap(c, 'traced', `00-${traceId}-${parentId}-01`);
      assert.equal(created.status, 201, created.text);
      const request = await eventually('the continued request span', () => receiver.spans.find((s) => s.traceId === traceId && s.name === 'KubernetesAPI'));
      assert.equal(request.parentSpanId, parentId);
      assert.equal(request.attributes['http.method'], 'POST');
      const storage = await eventually('the storage create span', () => receiver.spans.find((s) => s.traceId === traceId && s.attributes['storage.operation'] === 'create'));
      assert.equal(storage.parentSpanId, request.spanId);
      assert.equal(storage.name, 'etcdserverpb.KV/Txn');
      assert.match(String(storage.attributes['key']), /\/configmaps\/default\/traced$/);
      // The webhook got the trace, parented by the client span of its call, itself under the request span.
      assert.equal(hookTraceparents.length, 1);
      const [version, hookTrace, hookParent, flags] = (hookTraceparents[0] ?? '').split('-');
      assert.deepEqual([version, hookTrace, flags], ['00', traceId, '01']);
      const client = await eventually('the webhook client span', () => receiver.spans.find((s) => s.spanId === hookParent));
      assert.deepEqual([client.name, client.kind, client.parentSpanId, client.attributes['http.status_code']], ['HTTP POST', 3, request.spanId, 200]);
    } finally {
      await c.stop();
    }
  });

  void it('samplingRatePerMillion 0: no spans of its own, a sampled parent still followed, contexts still propagated', async () => {
    const c = await startTraced(0);
    try {
      await registerHook(c);
      const unsampled = await createConfigMap(c, 'untraced');
      assert.equal(unsampled.status, 201, unsampled.text);
      assert.equal(hookTraceparents.length, 1);
      assert.match(hookTraceparents[0] ?? '', /^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/, 'an unsampled context is still sent');
      const listed = await c.request('GET', '/api/v1/namespaces');
      assert.equal(listed.status, 200);
      // A sampled parent is followed; its spans end after every request above, so any span of those would
      // have been exported before or with them.
      const traceId = randomBytes(16).toString('hex');
      const sampled = await createConfigMap(c, 'traced-by-parent', `00-${traceId}-${randomBytes(8).toString('hex')}-01`);
      assert.equal(sampled.status, 201, sampled.text);
      await eventually('the sampled parent\'s webhook span', () => receiver.spans.find((s) => s.traceId === traceId && s.name === 'HTTP POST'));
      await eventually('the sampled parent\'s request span', () => receiver.spans.find((s) => s.traceId === traceId && s.name === 'KubernetesAPI'));
      assert.deepEqual([...new Set(receiver.spans.map((s) => s.traceId))], [traceId]);
      assert.equal(receiver.spans.filter((s) => s.name === 'KubernetesAPI').length, 1);
    } finally {
      await c.stop();
    }
  });
});
