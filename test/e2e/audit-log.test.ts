/**
 * The audit log backend's options, each on a server of its own: the legacy format with batch mode and
 * the flush at shutdown; v1beta1 events with truncation; rotation by size with gzip, maxage (by the
 * timestamp in backup names) and maxbackup; blocking-strict and blocking on a log that cannot be written.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { startCluster, type TestCluster } from '../helpers/cluster.js';
import { backupTimestamp } from '../../src/filters/audit/rotate.js';
import { eventually } from '../helpers/eventually.js';

const RR_CONFIGMAPS = `
apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: RequestResponse
  resources: [{group: "", resources: [configmaps]}]
- level: Metadata
  resources: [{group: ""}]
`;

let dir: string;
const clusters: TestCluster[] = [];

async function cluster(name: string, policy: string, args: string[]): Promise<{ c: TestCluster; log: string }> {
  const d = join(dir, name);
  const log = join(d, 'audit.log');
  const policyFile = join(dir, `${name}-policy.yaml`);
  writeFileSync(policyFile, policy);
  const c = await startCluster([`--audit-policy-file=${policyFile}`, `--audit-log-path=${log}`, ...args]);
  clusters.push(c);
  assert.equal((await c.request('POST', '/api/v1/namespaces', { body: { metadata: { name: 'logs' } } })).status, 201);
  return { c, log };
}

async function createConfigMap(c: TestCluster, name: string, bytes: number): Promise<void> {
  const r = await c.request('POST', '/api/v1/namespaces/logs/configmaps', { body: { metadata: { name }, data: { blob: 'x'.repeat(bytes) } } });
  assert.equal(r.status, 201, r.text);
}

function lines(path: string): string[] {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l !== '');
}

/** Waits (without asserting on time) until `check` holds, for background work such as compression. */

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'orch-audit-log-'));
});

after(async () => {
  for (const c of clusters) await c.stop();
  await rm(dir, { recursive: true, force: true });
});

void describe('--audit-log-format=legacy with --audit-log-mode=batch', () => {
  void it('buffers events and writes them as legacy lines when the server stops', async () => {
    const { c, log } = await cluster('legacy', RR_CONFIGMAPS, [
      '--audit-log-format=legacy',
      '--audit-log-mode=batch',
      '--audit-log-batch-max-size=1000',
      '--audit-log-batch-max-wait=1h',
    ]);
    const r = await c.request('POST', '/api/v1/namespaces/logs/configmaps', {
      body: { metadata: { name: 'one' } },
      headers: { 'user-agent': 'legacy "quoted" agent' },
    });
    assert.equal(r.status, 201);
    assert.equal(readFileSync(log, 'utf8'), '', 'a batch of fewer than max-size events waits for max-wait');
    await c.stop();
    const id = r.headers['audit-id'] as string;
    const mine = lines(log).filter((l) => l.includes(`id="${id}"`));
    assert.equal(mine.length, 2, 'the batch was flushed at shutdown');
    const ts = String.raw`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?(Z|[+-]\d\d:\d\d)`;
    const rest =
      String.raw` ip="127\.0\.0\.1" method="create" user="admin" groups="\\"system:masters\\",\\"system:authenticated\\"" as="<self>" asgroups="<lookup>" ` +
      String.raw`user-agent="legacy \\"quoted\\" agent" namespace="logs" uri="/api/v1/namespaces/logs/configmaps"`;
    assert.match(mine[0]!, new RegExp(`^${ts} AUDIT: id="${id}" stage="RequestReceived"${rest} response="<deferred>"$`));
    assert.match(mine[1]!, new RegExp(`^${ts} AUDIT: id="${id}" stage="ResponseComplete"${rest} response="201"$`));
  });
});

void describe('--audit-log-version=audit.k8s.io/v1beta1 with truncation', () => {
  let c: TestCluster;
  let log: string;
  before(async () => {
    ({ c, log } = await cluster('truncate', RR_CONFIGMAPS, [
      '--audit-log-version=audit.k8s.io/v1beta1',
      '--audit-log-truncate-enabled',
      '--audit-log-truncate-max-event-size=5000',
      '--audit-log-truncate-max-batch-size=5000',
    ]));
  });

  void it('writes v1beta1 events with metadata.creationTimestamp and timestamp', async () => {
    const r = await c.request('GET', '/api/v1/namespaces/logs');
    const evs = lines(log)
      .map((l) => JSON.parse(l))
      .filter((e) => e.auditID === r.headers['audit-id']);
    assert.equal(evs.length, 2);
    for (const e of evs) {
      assert.equal(e.apiVersion, 'audit.k8s.io/v1beta1');
      assert.match(e.metadata.creationTimestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
      assert.match(e.timestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
      assert.equal(Object.keys(e).slice(0, 5).join(','), 'kind,apiVersion,metadata,level,timestamp');
    }
  });

  void it('drops the objects of a large event and marks it audit.k8s.io/truncated', async () => {
    const small = await c.request('POST', '/api/v1/namespaces/logs/configmaps', { body: { metadata: { name: 'small' }, data: { a: 'b' } } });
    const big = await c.request('POST', '/api/v1/namespaces/logs/configmaps', { body: { metadata: { name: 'big' }, data: { a: 'x'.repeat(20_000) } } });
    const all = lines(log).map((l) => JSON.parse(l));
    const smallDone = all.find((e) => e.auditID === small.headers['audit-id'] && e.stage === 'ResponseComplete');
    assert.equal(smallDone.requestObject.data.a, 'b');
    assert.equal(smallDone.annotations['audit.k8s.io/truncated'], undefined);
    const bigDone = all.find((e) => e.auditID === big.headers['audit-id'] && e.stage === 'ResponseComplete');
    assert.ok(bigDone, 'the truncated event is still written');
    assert.equal(bigDone.requestObject, undefined);
    assert.equal(bigDone.responseObject, undefined);
    assert.equal(bigDone.annotations['audit.k8s.io/truncated'], 'true');
    assert.equal(bigDone.objectRef.name, 'big');
    for (const l of lines(log)) assert.ok(Buffer.byteLength(l) + 1 <= 5000);
  });

  void it('drops an event still too large without its objects, and counts the error', async () => {
    const r = await c.request('GET', `/api/v1/namespaces/logs/configmaps?padding=${'a'.repeat(6000)}`);
    assert.equal(r.status, 200);
    assert.equal(lines(log).filter((l) => l.includes(r.headers['audit-id'] as string)).length, 0);
    const metrics = await c.request('GET', '/metrics');
    assert.match(metrics.text, /^apiserver_audit_error_total\{plugin="truncate"\} 2$/m);
  });
});

function backups(d: string): string[] {
  return readdirSync(d)
    .filter((f) => f !== 'audit.log')
    .sort();
}

void describe('rotation (--audit-log-maxsize, -maxage, -maxbackup, -compress)', () => {
  void it('rotates by size into timestamped gzip backups and removes backups older than maxage', async () => {
    const d = join(dir, 'rotate');
    const now = Date.now();
    const old = `audit-${backupTimestamp(now - 3 * 86_400_000)}.log`;
    const recent = `audit-${backupTimestamp(now - 3_600_000)}.log`;
    const { mkdirSync } = await import('node:fs');
    mkdirSync(d, { recursive: true });
    writeFileSync(join(d, old), 'old\n');
    writeFileSync(join(d, recent), 'recent\n');
    const { c, log } = await cluster('rotate', RR_CONFIGMAPS, ['--audit-log-maxsize=1', '--audit-log-maxage=1', '--audit-log-compress']);
    for (let i = 0; i < 6; i++) await createConfigMap(c, `cm${i}`, 250_000);
    await eventually('old backup removed, the rest compressed', () => !existsSync(join(d, old)) && backups(d).every((f) => f.endsWith('.gz')), { intervalMs: 25 });
    const names = backups(d);
    assert.ok(names.includes(`${recent}.gz`), `the recent backup is kept and compressed: ${names.join(' ')}`);
    const rotated = names.filter((n) => n !== `${recent}.gz`);
    assert.ok(rotated.length >= 2, `at least two rotations: ${names.join(' ')}`);
    for (const n of rotated) {
      const m = /^audit-(\d{4})-(\d\d)-(\d\d)T(\d\d)-(\d\d)-(\d\d)\.(\d{3})\.log\.gz$/.exec(n);
      assert.ok(m, n);
      // The timestamp is in UTC, as kube-apiserver's lumberjack (LocalTime unset) writes it.
      const t = Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!, +m[7]!);
      assert.ok(Math.abs(t - Date.now()) < 10 * 60_000, n);
      const text = gunzipSync(readFileSync(join(d, n))).toString('utf8');
      const evs = text.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l));
      assert.ok(evs.length > 0);
      assert.ok(text.length <= 1024 * 1024);
      for (const e of evs) assert.equal(e.kind, 'Event');
    }
    assert.ok(statSync(log).size <= 1024 * 1024);
    assert.equal(statSync(log).mode & 0o777, 0o600);
  });

  void it('keeps at most maxbackup backups', async () => {
    const { c } = await cluster('maxbackup', RR_CONFIGMAPS, ['--audit-log-maxsize=1', '--audit-log-maxbackup=2']);
    const d = join(dir, 'maxbackup');
    for (let i = 0; i < 9; i++) await createConfigMap(c, `cm${i}`, 250_000);
    await eventually('two backups left', () => backups(d).length === 2, { intervalMs: 25 });
    for (const n of backups(d)) assert.match(n, /^audit-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d{3}\.log$/);
  });
});

void describe('a log that cannot be written (/dev/full, which fails for root too)', () => {
  const POLICY = `
apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: Metadata
  resources: [{group: ""}]
`;

  void it('blocking-strict fails requests with 500 and counts them', async () => {
    const policyFile = join(dir, 'strict-policy.yaml');
    writeFileSync(policyFile, POLICY);
    const c = await startCluster([`--audit-policy-file=${policyFile}`, '--audit-log-path=/dev/full', '--audit-log-mode=blocking-strict']);
    clusters.push(c);
    const r = await c.request('GET', '/api/v1/namespaces');
    assert.equal(r.status, 500);
    assert.equal(r.text, 'Internal Server Error: "/api/v1/namespaces": failed to store audit event\n');
    assert.ok(r.headers['audit-id']);
    const metrics = await c.request('GET', '/metrics');
    assert.equal(metrics.status, 200, 'non-resource requests are not audited by this policy');
    assert.match(metrics.text, /^apiserver_audit_requests_rejected_total 1$/m);
    assert.match(metrics.text, /^apiserver_audit_error_total\{plugin="log"\} 1$/m);
  });

  void it('blocking serves requests anyway and counts the errors', async () => {
    const policyFile = join(dir, 'blocking-policy.yaml');
    writeFileSync(policyFile, POLICY);
    const c = await startCluster([`--audit-policy-file=${policyFile}`, '--audit-log-path=/dev/full', '--audit-log-mode=blocking']);
    clusters.push(c);
    const r = await c.request('GET', '/api/v1/namespaces');
    assert.equal(r.status, 200);
    const metrics = await c.request('GET', '/metrics');
    assert.match(metrics.text, /^apiserver_audit_error_total\{plugin="log"\} 2$/m);
    assert.doesNotMatch(metrics.text, /^apiserver_audit_requests_rejected_total [1-9]/m);
  });

  void it('refuses to start when the log path cannot be created', async () => {
    const policyFile = join(dir, 'strict-policy.yaml');
    const file = join(dir, 'a-file');
    writeFileSync(file, '');
    await assert.rejects(startCluster([`--audit-policy-file=${policyFile}`, `--audit-log-path=${join(file, 'audit.log')}`]), /--audit-log-path: ensureLogFile: /);
  });
});
