/**
 * The audit webhook backend against a receiver this test runs on 127.0.0.1 over TLS (its own CA, a client
 * certificate required): EventList batches, retries while the receiver fails or is down until every
 * buffered event is delivered, the log and webhook backends together, blocking mode, and the flush of the
 * batch buffer at shutdown.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { stringify } from 'yaml';
import { makeCA, makeClientCert, makeServingCert, type CertAndKey } from '../../src/server/certs.js';
import { startCluster, type TestCluster } from '../helpers/cluster.js';
import { eventually } from '../helpers/eventually.js';

const POLICY = `
apiVersion: audit.orch.io/v1
kind: Policy
rules:
- level: Metadata
  resources: [{group: ""}]
`;

interface Received {
  path: string;
  contentType: string;
  body: { kind: string; apiVersion: string; metadata: object; items: { auditID: string; stage: string; kind?: string }[] };
}

/** An HTTPS audit receiver; `failures` POSTs are answered 500 before it accepts. */
class Receiver {
  server: Server | undefined;
  port = 0;
  failures = 0;
  refused = 0;
  readonly lists: Received[] = [];

  constructor(private readonly tls: { ca: string; cert: string; key: string }) {}

  async listen(port = 0): Promise<void> {
    const server = createServer({ ...this.tls, requestCert: true, rejectUnauthorized: true }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        if (this.failures > 0) {
          this.failures--;
          this.refused++;
          res.writeHead(500).end('try later');
          return;
        }
        this.lists.push({
          path: req.url ?? '',
          contentType: String(req.headers['content-type']),
          body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Received['body'],
        });
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    this.server = server;
    this.port = (server.address() as AddressInfo).port;
  }

  async close(): Promise<void> {
    const s = this.server;
    this.server = undefined;
    if (!s) return;
    s.closeAllConnections();
    await new Promise((resolve) => s.close(resolve));
  }

  keys(): string[] {
    return this.lists.flatMap((l) => l.body.items.map((e) => `${e.auditID}/${e.stage}`)).sort();
  }
}

let dir: string;
let ca: CertAndKey;
let serving: CertAndKey;
let client: CertAndKey;
const clusters: TestCluster[] = [];
const receivers: Receiver[] = [];

async function receiver(): Promise<Receiver> {
  const r = new Receiver({ ca: ca.cert, cert: serving.cert, key: serving.key });
  await r.listen();
  receivers.push(r);
  return r;
}

function kubeconfig(name: string, port: number): string {
  const file = join(dir, `${name}.kubeconfig`);
  writeFileSync(
    file,
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'audit', cluster: { server: `https://127.0.0.1:${port}/audit/events`, 'certificate-authority-data': Buffer.from(ca.cert).toString('base64') } }],
      users: [{ name: 'apiserver', user: { 'client-certificate-data': Buffer.from(client.cert).toString('base64'), 'client-key-data': Buffer.from(client.key).toString('base64') } }],
      contexts: [{ name: 'audit', context: { cluster: 'audit', user: 'apiserver' } }],
      'current-context': 'audit',
    }),
  );
  return file;
}

async function cluster(name: string, port: number, args: string[]): Promise<TestCluster> {
  const policy = join(dir, 'policy.yaml');
  writeFileSync(policy, POLICY);
  const c = await startCluster([`--audit-policy-file=${policy}`, `--audit-webhook-config-file=${kubeconfig(name, port)}`, ...args]);
  clusters.push(c);
  return c;
}


before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'orch-audit-webhook-'));
  ca = await makeCA('audit-receiver-ca');
  serving = await makeServingCert(ca.cert, ca.key, 'localhost', ['127.0.0.1']);
  client = await makeClientCert({ caCert: ca.cert, caKey: ca.key, commonName: 'kube-apiserver' });
});

after(async () => {
  for (const c of clusters) await c.stop();
  for (const r of receivers) await r.close();
  await rm(dir, { recursive: true, force: true });
});

void describe('audit webhook (batch mode) with the log backend too', () => {
  let r: Receiver;
  let c: TestCluster;
  let log: string;
  const logKeys = () =>
    readFileSync(log, 'utf8')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as { auditID: string; stage: string })
      .map((e) => `${e.auditID}/${e.stage}`)
      .sort();

  before(async () => {
    r = await receiver();
    log = join(dir, 'union', 'audit.log');
    c = await cluster('union', r.port, [
      `--audit-log-path=${log}`,
      '--audit-webhook-batch-max-size=5',
      '--audit-webhook-batch-max-wait=100ms',
      '--audit-webhook-initial-backoff=50ms',
    ]);
  });

  void it('posts EventList batches that hold every event the log holds', async () => {
    for (let i = 0; i < 6; i++) assert.equal((await c.request('GET', '/api/v1/namespaces')).status, 200);
    await eventually('the webhook has every logged event', () => r.keys().length === logKeys().length);
    assert.deepEqual(r.keys(), logKeys());
    assert.equal(logKeys().length, 12);
    for (const l of r.lists) {
      assert.equal(l.path, '/audit/events');
      assert.equal(l.contentType, 'application/json');
      assert.equal(l.body.kind, 'EventList');
      assert.equal(l.body.apiVersion, 'audit.k8s.io/v1');
      assert.deepEqual(l.body.metadata, {});
      assert.ok(l.body.items.length >= 1 && l.body.items.length <= 5, `batches of at most 5: ${l.body.items.length}`);
      for (const e of l.body.items) assert.equal(e.kind, undefined, 'list items carry no kind');
    }
  });

  void it('retries with backoff while the receiver answers 500, and loses nothing', async () => {
    r.failures = 3;
    for (let i = 0; i < 4; i++) assert.equal((await c.request('GET', '/api/v1/namespaces/default')).status, 200);
    await eventually('every event delivered after the failures', () => r.keys().length === logKeys().length);
    assert.equal(r.refused, 3);
    assert.deepEqual(r.keys(), logKeys());
  });

  void it('keeps buffered events while the receiver is down and delivers them when it is back', async () => {
    const port = r.port;
    await r.close();
    for (let i = 0; i < 5; i++) assert.equal((await c.request('GET', '/api/v1/namespaces/kube-system')).status, 200);
    await sleep(300);
    await r.listen(port);
    await eventually('every event delivered once the receiver is back', () => r.keys().length === logKeys().length);
    assert.deepEqual(r.keys(), logKeys());
    const metrics = await c.request('GET', '/metrics');
    assert.doesNotMatch(metrics.text, /apiserver_audit_error_total\{plugin="(webhook|buffered)"\}/);
  });
});

void describe('audit webhook in blocking mode', () => {
  void it('delivers the events before the response is sent', async () => {
    const r = await receiver();
    const c = await cluster('blocking', r.port, ['--audit-webhook-mode=blocking', '--audit-webhook-version=audit.k8s.io/v1beta1']);
    const res = await c.request('GET', '/api/v1/namespaces');
    assert.equal(res.status, 200);
    const id = res.headers['audit-id'] as string;
    assert.deepEqual(
      r.keys().filter((k) => k.startsWith(id)),
      [`${id}/RequestReceived`, `${id}/ResponseComplete`],
    );
    assert.ok(r.lists.every((l) => l.body.apiVersion === 'audit.k8s.io/v1beta1' && l.body.items.length === 1));
  });
});

void describe('audit webhook batch buffer at shutdown', () => {
  void it('flushes buffered events when the server stops', async () => {
    const r = await receiver();
    const c = await cluster('flush', r.port, ['--audit-webhook-batch-max-size=1000', '--audit-webhook-batch-max-wait=1h']);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await c.request('GET', '/api/v1/namespaces')).headers['audit-id'] as string);
    await sleep(100);
    assert.equal(r.lists.length, 0, 'nothing is sent before a batch is full or max-wait passes');
    await c.stop();
    assert.deepEqual(
      r.keys(),
      ids.flatMap((id) => [`${id}/RequestReceived`, `${id}/ResponseComplete`]).sort(),
    );
  });
});
