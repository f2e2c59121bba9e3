/**
 * The other authorization modes from outside: ABAC (--authorization-policy-file, v1beta1 and v0 policies)
 * chained before AlwaysDeny, whose reasons Kubernetes joins with a newline; AlwaysDeny alone (even
 * system:masters is refused); and the startup checks of the mode options.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { requireBinary } from '../helpers/binaries.js';
import { startCluster, type TestCluster } from '../helpers/cluster.js';
import { parseServerOptions } from '../../src/server/options.js';
import { createControlPlane } from '../../src/server/controlplane.js';

const present = requireBinary(undefined, 'kubectl') !== null;
if (!present && process.env.CI === 'true') throw new Error('kubectl is required under CI=true');
const skip = !present && 'kubectl not installed';

const policy = (spec: object) => JSON.stringify({ apiVersion: 'abac.authorization.kubernetes.io/v1beta1', kind: 'Policy', spec });

const POLICIES = [
  '# one policy per line; comments and blank lines are skipped',
  policy({ user: 'admin', namespace: '*', resource: '*', apiGroup: '*', nonResourcePath: '*' }),
  policy({ user: 'bob', namespace: 'proj', resource: 'pods', apiGroup: '', readonly: true }),
  policy({ group: 'system:authenticated', namespace: '*', resource: 'selfsubjectaccessreviews', apiGroup: 'authorization.k8s.io' }),
  policy({ group: 'system:authenticated', namespace: '*', resource: 'selfsubjectrulesreviews', apiGroup: 'authorization.k8s.io' }),
  policy({ group: 'system:authenticated', readonly: true, nonResourcePath: '*' }),
  '',
  '{"user":"carl"}',
].join('\n');

describe('ABAC chained before AlwaysDeny', () => {
  let c: TestCluster;
  let dir: string;
  const as = (user: string, args: string[]) => c.kubectl([`--token=${user}-token`, ...args]);

  before(async () => {
    if (!present) return;
    dir = await mkdtemp(join(tmpdir(), 'orch-abac-'));
    await writeFile(join(dir, 'policy.jsonl'), POLICIES + '\n');
    await writeFile(join(dir, 'tokens.csv'), 'e2e-admin-token,admin,admin,"system:masters"\nbob-token,bob,2\ncarl-token,carl,3\ndave-token,dave,4\n');
    c = await startCluster([
      '--authorization-mode=ABAC,AlwaysDeny',
      `--authorization-policy-file=${join(dir, 'policy.jsonl')}`,
      `--token-auth-file=${join(dir, 'tokens.csv')}`,
    ]);
    const r = await c.kubectl(['create', 'namespace', 'proj']);
    assert.equal(r.code, 0, r.stderr);
  });
  after(async () => {
    await c?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('a readonly policy allows reading one resource in one namespace', { skip }, async () => {
    assert.equal((await as('bob', ['auth', 'can-i', 'list', 'pods', '-n', 'proj'])).stdout.trim(), 'yes');
    assert.equal((await as('bob', ['get', 'pods', '-n', 'proj'])).code, 0);
    assert.equal((await as('bob', ['auth', 'can-i', 'create', 'pods', '-n', 'proj'])).stdout.trim(), 'no - No policy matched.\nEverything is forbidden.');
    const r = await as('bob', ['get', 'pods', '-n', 'default']);
    assert.equal(
      r.stderr.trim(),
      'Error from server (Forbidden): pods is forbidden: User "bob" cannot list resource "pods" in API group "" in the namespace "default": No policy matched.\nEverything is forbidden.',
    );
    const list = (await as('bob', ['auth', 'can-i', '--list', '-n', 'proj'])).stdout;
    assert.match(list, /\npods\s+\[\]\s+\[\]\s+\[get list watch\]\n/);
    assert.match(list, /\nselfsubjectrulesreviews\.authorization\.k8s\.io\s+\[\]\s+\[\]\s+\[\*\]\n/);
  });

  it('non-resource paths follow nonResourcePath policies; v0 policies are converted as Kubernetes converts them', { skip }, async () => {
    assert.equal((await as('dave', ['get', '--raw', '/version'])).code, 0);
    assert.equal((await as('dave', ['get', 'configmaps', '-n', 'proj'])).code, 1);
    const carl = await as('carl', ['create', 'configmap', 'from-carl', '-n', 'proj', '--from-literal=a=b']);
    assert.equal(carl.code, 0, carl.stderr);
    assert.equal((await as('carl', ['auth', 'can-i', 'delete', 'nodes'])).stdout.trim(), 'yes');
  });

  it('AlwaysDeny alone refuses everyone, system:masters included', { skip }, async () => {
    const deny = await startCluster(['--authorization-mode=AlwaysDeny']);
    try {
      const r = await deny.kubectl(['get', '--raw', '/api/v1/namespaces']);
      assert.equal(r.stderr.trim(), 'Error from server (Forbidden): namespaces is forbidden: User "admin" cannot list resource "namespaces" in API group "" at the cluster scope: Everything is forbidden.');
      const v = await deny.request('GET', '/version');
      assert.equal(v.status, 403);
      assert.equal(v.json.message, 'forbidden: User "admin" cannot get path "/version": Everything is forbidden.');
    } finally {
      await deny.stop();
    }
  });

  it('refuses inconsistent mode options and unreadable policies at startup', async () => {
    const certDir = await mkdtemp(join(tmpdir(), 'orch-abac-certs-'));
    const start = (args: string[]) =>
      createControlPlane(parseServerOptions(['--data-dir=:memory:', '--bind-address=127.0.0.1', `--cert-dir=${certDir}`, ...args]), { securePort: 0, logger: () => {} });
    await assert.rejects(start(['--authorization-mode=ABAC']), { message: "authorization-mode ABAC's authorization policy file not passed" });
    await assert.rejects(start(['--authorization-policy-file=/nonexistent']), { message: 'cannot specify --authorization-policy-file without mode ABAC' });
    const bad = join(tmpdir(), `orch-abac-bad-${process.pid}.jsonl`);
    await writeFile(bad, `${policy({ user: 'a' })}\n{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Nope"}\n`);
    try {
      await assert.rejects(start(['--authorization-mode=ABAC', `--authorization-policy-file=${bad}`]), {
        message: `--authorization-policy-file ${bad}, line 2: unexpected kind "Nope", want "Policy"`,
      });
    } finally {
      await rm(bad, { force: true });
      await rm(certDir, { recursive: true, force: true });
    }
  });
});
