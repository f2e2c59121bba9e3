// End to end: bin/orchlet joins a cluster with only a bootstrap token (TLS bootstrapping), as a kubeadm node
// does: the token secret and kubeadm's RBAC bindings for system:bootstrappers are made here; the agent's
// client CSR is approved by the server's csrapproving controller and signed with the CA beside
// --client-ca-file; the node turns Ready; with --rotate-certificates and short-lived certificates (the
// signing duration of this test's server) the client certificate is renewed; with
// --rotate-server-certificates its serving CSR waits for `kubectl certificate approve`, after which the
// server reaches the agent verifying it with --orchlet-certificate-authority. The agent authenticates
// callers by TokenReview and client certificates and authorizes them by SubjectAccessReview: kubectl logs
// works once the server's --orchlet-client-certificate user may use nodes/proxy, and is 403 before.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, readlink, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { fileURLToPath } from 'node:url';
import { parse, stringify } from 'yaml';
import { startCluster, type TestCluster } from '../helpers/cluster.js';
import { eventually } from '../helpers/eventually.js';
import { freePort } from '../helpers/ports.js';
import { makeCA, makeClientCert, type CertAndKey } from '../../src/server/certs.js';

const ORCHLET = fileURLToPath(new URL('../../../bin/orchlet', import.meta.url));
const NODE = 'bootnode';
const TOKEN_ID = 'abcdef';
const TOKEN = `${TOKEN_ID}.0123456789abcdef`;
const BOOTSTRAP_GROUP = 'system:bootstrappers:kubeadm:default-node-token';

type Json = Record<string, any>;

/** GET on the agent's HTTPS port (its certificate is not checked here) with a bearer token. */
function agentGet(port: number, path: string, token?: string): Promise<{ code: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path, rejectUnauthorized: false, headers: token ? { authorization: `Bearer ${token}` } : {} },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ code: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** The certificate the agent's HTTPS port presents. */
function servingCert(port: number): Promise<X509Certificate> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => {
      const raw = s.getPeerX509Certificate();
      s.end();
      if (raw) resolve(raw);
      else reject(new Error('no certificate'));
    });
    s.on('error', reject);
  });
}

void describe('orchlet TLS bootstrapping, certificate rotation and webhook auth (bin/orchlet)', () => {
  let c: TestCluster;
  let dir: string;
  let ca: CertAndKey;
  let agent: ChildProcess | undefined;
  let agentLog = '';
  let port = 0;
  const kubectl = async (args: string[], input?: string) => {
    const r = await c.kubectl(args, input !== undefined ? { input } : {});
    assert.equal(r.code, 0, `kubectl ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };
  const json = async (args: string[]): Promise<Json> => JSON.parse(await kubectl([...args, '-o', 'json'])) as Json;
  const csrs = async (): Promise<Json[]> => (await json(['get', 'csr'])).items as Json[];

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'orchlet-bootstrap-'));
    ca = await makeCA('orch-test-cluster-ca');
    await writeFile(join(dir, 'ca.crt'), ca.cert);
    await writeFile(join(dir, 'ca.key'), ca.key, { mode: 0o600 });
    // The server's identity towards agents (kubeadm's apiserver-kubelet-client).
    const proxy = await makeClientCert({ caCert: ca.cert, caKey: ca.key, commonName: 'orch-apiserver-kubelet-client', organizations: [] });
    await writeFile(join(dir, 'apiserver-kubelet-client.crt'), proxy.cert);
    await writeFile(join(dir, 'apiserver-kubelet-client.key'), proxy.key, { mode: 0o600 });
    c = await startCluster(
      [
        `--client-ca-file=${join(dir, 'ca.crt')}`,
        '--authorization-mode=Node,RBAC',
        '--enable-bootstrap-token-auth',
        `--orchlet-client-certificate=${join(dir, 'apiserver-kubelet-client.crt')}`,
        `--orchlet-client-key=${join(dir, 'apiserver-kubelet-client.key')}`,
        `--orchlet-certificate-authority=${join(dir, 'ca.crt')}`,
        '--orchlet-preferred-address-types=InternalIP',
      ],
      // Client certificates live 20 s (the start not backdated), so that rotation comes within the test.
      { csrSigning: { durationSeconds: 20, backdateSeconds: 0 } },
    );
    // What `kubeadm token create` and `kubeadm init` make.
    await kubectl(['create', '-f', '-'], JSON.stringify({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: `bootstrap-token-${TOKEN_ID}`, namespace: 'kube-system' },
      type: 'bootstrap.kubernetes.io/token',
      stringData: { 'token-id': TOKEN_ID, 'token-secret': '0123456789abcdef', 'usage-bootstrap-authentication': 'true', 'usage-bootstrap-signing': 'true', 'auth-extra-groups': BOOTSTRAP_GROUP },
    }));
    await kubectl(['create', 'clusterrolebinding', 'kubeadm:kubelet-bootstrap', '--clusterrole=system:node-bootstrapper', `--group=${BOOTSTRAP_GROUP}`]);
    await kubectl(['create', 'clusterrolebinding', 'kubeadm:node-autoapprove-bootstrap', '--clusterrole=system:certificates.k8s.io:certificatesigningrequests:nodeclient', `--group=${BOOTSTRAP_GROUP}`]);
    await kubectl(['create', 'clusterrolebinding', 'kubeadm:node-autoapprove-certificate-rotation', '--clusterrole=system:certificates.k8s.io:certificatesigningrequests:selfnodeclient', '--group=system:nodes']);
    await writeFile(
      join(dir, 'bootstrap.conf'),
      stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'c', cluster: { server: c.url, 'certificate-authority-data': Buffer.from(c.cp.server.caCert).toString('base64') } }],
        users: [{ name: 'tls-bootstrap-token-user', user: { token: TOKEN } }],
        contexts: [{ name: 'c', context: { cluster: 'c', user: 'tls-bootstrap-token-user' } }],
        'current-context': 'c',
      }),
    );
    port = await freePort();
    agent = spawn(
      process.execPath,
      [
        ORCHLET,
        '--make-iptables-util-chains=false',
        `--bootstrap-orchconfig=${join(dir, 'bootstrap.conf')}`,
        `--orchconfig=${join(dir, 'orchlet.conf')}`,
        `--cert-dir=${join(dir, 'pki')}`,
        `--root-dir=${join(dir, 'root')}`,
        `--hostname-override=${NODE}`,
        '--node-ip=127.0.0.1',
        '--address=127.0.0.1',
        `--port=${port}`,
        '--read-only-port=0',
        '--healthz-port=0',
        '--fail-swap-on=false',
        '--node-status-update-frequency=2s',
        '--rotate-certificates',
        '--rotate-server-certificates',
        '--anonymous-auth=false',
        `--client-ca-file=${join(dir, 'ca.crt')}`,
        '--authentication-token-webhook',
        '--authorization-mode=Webhook',
        '--authorization-webhook-cache-unauthorized-ttl=1s',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    agent.stdout?.on('data', (d: Buffer) => (agentLog += d.toString()));
    agent.stderr?.on('data', (d: Buffer) => (agentLog += d.toString()));
  });

  after(async () => {
    if (agent && agent.exitCode === null) {
      const exited = new Promise((r) => agent!.once('exit', r));
      agent.kill('SIGTERM');
      await exited;
    }
    await c?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  void it('joins with the bootstrap token: the client CSR is auto-approved and issued, the orchconfig written, the node Ready', async () => {
    const node = await eventually(
      () => `node ${NODE} Ready (agent log: ${agentLog.slice(-2000)})`,
      async () => {
        const r = await c.kubectl(['get', 'node', NODE, '-o', 'json']);
        if (r.code !== 0) return undefined;
        const n = JSON.parse(r.stdout) as Json;
        return (n.status?.conditions as Json[] | undefined)?.some((x) => x['type'] === 'Ready' && x['status'] === 'True') ? n : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 300 },
    );
    assert.equal(node.metadata.name, NODE);
    const boot = (await csrs()).find((x) => x.spec.username === `system:bootstrap:${TOKEN_ID}`);
    assert.ok(boot, 'a CSR by the bootstrap user');
    assert.match(boot.metadata.name, /^node-csr-/);
    assert.equal(boot.spec.signerName, 'kubernetes.io/kube-apiserver-client-kubelet');
    assert.ok((boot.spec.groups as string[]).includes(BOOTSTRAP_GROUP));
    const approved = (boot.status.conditions as Json[]).find((x) => x['type'] === 'Approved')!;
    assert.equal(approved['reason'], 'AutoApproved');
    assert.equal(approved['message'], 'Auto approving kubelet client certificate after SubjectAccessReview.');

    const conf = parse(await readFile(join(dir, 'orchlet.conf'), 'utf8')) as Json;
    const user = (conf.users as Json[])[0]!.user as Json;
    assert.equal(user['client-certificate'], join(dir, 'pki', 'orchlet-client-current.pem'));
    assert.equal(user['client-key'], join(dir, 'pki', 'orchlet-client-current.pem'));
    const pem = await readFile(join(dir, 'pki', 'orchlet-client-current.pem'), 'utf8');
    const cert = new X509Certificate(pem);
    assert.equal(cert.subject, `O=system:nodes\nCN=system:node:${NODE}`);
    assert.ok(cert.verify(new X509Certificate(ca.cert).publicKey));
    assert.match(pem, /PRIVATE KEY/);
  });

  void it('--rotate-server-certificates: the serving CSR waits for `kubectl certificate approve`, then the agent serves the issued certificate', async () => {
    const serving = await eventually('a kubelet-serving CSR', async () => (await csrs()).find((x) => x.spec.signerName === 'kubernetes.io/kubelet-serving'), {
      timeoutMs: 20_000,
      intervalMs: 300,
    });
    assert.equal(serving.spec.username, `system:node:${NODE}`);
    assert.deepEqual([...(serving.spec.usages as string[])].sort(), ['digital signature', 'key encipherment', 'server auth']);
    // Kubernetes never approves serving certificates by itself.
    await new Promise((r) => setTimeout(r, 1000));
    assert.equal((await json(['get', 'csr', serving.metadata.name])).status?.conditions, undefined);
    await kubectl(['certificate', 'approve', serving.metadata.name]);
    const served = await eventually(
      'the agent serving the issued certificate',
      async () => {
        const cert = await servingCert(port);
        return cert.issuer === 'CN=orch-test-cluster-ca' ? cert : undefined;
      },
      { timeoutMs: 20_000, intervalMs: 300 },
    );
    assert.equal(served.subject, `O=system:nodes\nCN=system:node:${NODE}`);
    assert.ok(served.checkIP('127.0.0.1'));
  });

  void it('authenticates by TokenReview and authorizes by SubjectAccessReview: 401 without credentials, 403 without nodes/proxy', async () => {
    assert.equal((await agentGet(port, '/pods')).code, 401);
    assert.equal((await agentGet(port, '/pods', 'not-a-token')).code, 401);
    const denied = await agentGet(port, '/pods', TOKEN);
    assert.equal(denied.code, 403);
    assert.equal(denied.body, `Forbidden (user=system:bootstrap:${TOKEN_ID}, verb=get, resource=nodes, subresource=proxy)`);
    const stats = await agentGet(port, '/stats/summary', TOKEN);
    assert.equal(stats.body, `Forbidden (user=system:bootstrap:${TOKEN_ID}, verb=get, resource=nodes, subresource=stats)`);
    // The admin (system:masters) may.
    const ok = await agentGet(port, '/pods', c.token);
    assert.equal(ok.code, 200, ok.body);
    assert.equal((JSON.parse(ok.body) as Json).kind, 'PodList');
  });

  void it('kubectl logs through the agent: 403 until the server\'s client certificate user may use nodes/proxy', async () => {
    await kubectl(['create', '-f', '-'], JSON.stringify({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'greeter', namespace: 'default' },
      spec: { nodeName: NODE, terminationGracePeriodSeconds: 1, containers: [{ name: 'main', image: 'busybox', command: ['sh', '-c', 'echo hello from the agent; sleep 3600'] }] },
    }));
    await eventually('pod greeter Running', async () => (await json(['get', 'pod', 'greeter'])).status?.phase === 'Running', { timeoutMs: 30_000, intervalMs: 300 });
    const before = await c.kubectl(['logs', 'greeter']);
    assert.notEqual(before.code, 0);
    assert.match(before.stderr, /Forbidden \(user=orch-apiserver-kubelet-client, verb=get, resource=nodes, subresource=proxy\)/);
    await kubectl(['create', 'clusterrolebinding', 'kube-apiserver-kubelet-client', '--clusterrole=system:kubelet-api-admin', '--user=orch-apiserver-kubelet-client']);
    const logs = await eventually(
      'kubectl logs allowed',
      async () => {
        const r = await c.kubectl(['logs', 'greeter']);
        return r.code === 0 ? r.stdout : undefined;
      },
      { timeoutMs: 15_000, intervalMs: 300 },
    );
    assert.equal(logs, 'hello from the agent\n');
  });

  void it('--rotate-certificates: the client certificate is renewed before it expires (self-approved as selfnodeclient) and the node stays Ready', async () => {
    const first = await readlink(join(dir, 'pki', 'orchlet-client-current.pem'));
    const firstCert = new X509Certificate(await readFile(join(dir, 'pki', 'orchlet-client-current.pem')));
    await eventually(
      () => `the client certificate rotated (agent log: ${agentLog.slice(-1500)})`,
      async () => (await readlink(join(dir, 'pki', 'orchlet-client-current.pem'))) !== first,
      { timeoutMs: 40_000, intervalMs: 500 },
    );
    const renewed = new X509Certificate(await readFile(join(dir, 'pki', 'orchlet-client-current.pem')));
    assert.notEqual(renewed.serialNumber, firstCert.serialNumber);
    assert.equal(renewed.subject, firstCert.subject);
    assert.notEqual(renewed.publicKey.export({ format: 'der', type: 'spki' }).toString('hex'), firstCert.publicKey.export({ format: 'der', type: 'spki' }).toString('hex'), 'a new key');
    // Renewed at 70–84% of the old certificate's life, before it expired.
    assert.ok(Date.parse(renewed.validFrom) < Date.parse(firstCert.validTo));
    const self = (await csrs()).find((x) => x.spec.username === `system:node:${NODE}` && x.spec.signerName === 'kubernetes.io/kube-apiserver-client-kubelet');
    assert.ok(self, 'a rotation CSR by the node itself');
    assert.match(self.metadata.name, /^csr-/);
    assert.equal((self.status.conditions as Json[])[0]!['message'], 'Auto approving self kubelet client certificate after SubjectAccessReview.');
    // The agent keeps talking to the server with the new certificate: its Lease renews after the old one expired.
    const expiry = Date.parse(firstCert.validTo);
    await eventually(
      'the node Lease renewed after the first certificate expired',
      async () => {
        const lease = await json(['get', 'lease', '-n', 'kube-node-lease', NODE]);
        return Date.parse(lease.spec.renewTime as string) > expiry + 1000;
      },
      { timeoutMs: 45_000, intervalMs: 1000 },
    );
  });
});
