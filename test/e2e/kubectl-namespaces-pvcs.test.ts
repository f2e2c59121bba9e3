/**
 * Spec document 1 through real kubectl (the oldest and newest versions on the machine): namespaces and
 * persistent volume claims against a server this test starts.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { requireBinary } from '../helpers/binaries.js';
import { kubectlPath, startCluster, type TestCluster } from '../helpers/cluster.js';

const MANIFEST = (ns: string) => `
apiVersion: v1
kind: Namespace
metadata:
  name: ${ns}
  labels: {team: storage}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: ${ns}, labels: {tier: db}}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1.5Gi}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: logs, namespace: ${ns}, labels: {tier: web}}
spec:
  accessModes: [ReadWriteMany]
  resources: {requests: {storage: 1Gi}}
`;

const haveKubectl = requireBinary(undefined, 'kubectl') !== null;

const haveEtcd = requireBinary(undefined, 'etcd') !== null;

// The oldest and newest kubectl on the embedded store, and the newest on etcd.
for (const [version, backend] of [['1.27', 'embedded'], ['1.33', 'embedded'], ['1.33', 'etcd']] as const) {
  describe(`kubectl ${version} (${backend} store): namespaces and persistent volume claims`, () => {
    let c: TestCluster;
    const present = haveKubectl && kubectlPath(version) !== null && (backend !== 'etcd' || haveEtcd);
    if (!present && process.env.CI === 'true') throw new Error(`kubectl.${version} is required under CI=true`);
    const k = async (args: string[], input?: string, more: { env?: Record<string, string>; timeoutMs?: number } = {}) => {
      const r = await c.kubectl(args, { version, ...(input !== undefined ? { input } : {}), ...more });
      return r;
    };
    before(async () => {
      if (present) c = await startCluster([], { etcd: backend === 'etcd' });
    });
    after(async () => c?.stop());

    it('lists the namespaces every cluster starts with', { skip: !present && `kubectl.${version} not installed` }, async () => {
      const r = await k(['get', 'namespaces', '-o', 'name']);
      assert.equal(r.code, 0, r.stderr);
      assert.deepEqual(r.stdout.trim().split('\n').sort(), [
        'namespace/default',
        'namespace/kube-node-lease',
        'namespace/kube-public',
        'namespace/kube-system',
      ]);
      const table = await k(['get', 'ns', 'default']);
      assert.match(table.stdout, /^NAME\s+STATUS\s+AGE\ndefault\s+Active\s+\S+\n$/);
    });

    it('applies a namespace and claims, stores canonical quantities and defaults', { skip: !present }, async () => {
      const r = await k(['apply', '-f', '-'], MANIFEST('app'));
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /namespace\/app created/);
      const pvc = JSON.parse((await k(['get', 'pvc', 'data', '-n', 'app', '-o', 'json'])).stdout);
      assert.equal(pvc.spec.resources.requests.storage, '1536Mi');
      assert.equal(pvc.spec.volumeMode, 'Filesystem');
      assert.equal(pvc.status.phase, 'Pending');
      assert.match(pvc.metadata.uid, /^[0-9a-f-]{36}$/);
      assert.deepEqual(pvc.metadata.finalizers, ['kubernetes.io/pvc-protection']);
      const again = await k(['apply', '-f', '-'], MANIFEST('app'));
      // 1Gi is already canonical; 1.5Gi is stored as 1536Mi, so kubectl's three-way patch re-sends it and
      // reports 'configured', as against Kubernetes.
      assert.match(again.stdout, /namespace\/app unchanged/);
      assert.match(again.stdout, /persistentvolumeclaim\/logs unchanged/);
      const wide = await k(['get', 'pvc', '-n', 'app', '-o', 'wide']);
      assert.match(wide.stdout, /^NAME\s+STATUS\s+VOLUME\s+CAPACITY\s+ACCESS MODES\s+STORAGECLASS\s+(VOLUMEATTRIBUTESCLASS\s+)?AGE\s+VOLUMEMODE/);
      assert.match(wide.stdout, /\ndata\s+Pending\s+/);
      const byLabel = await k(['get', 'pvc', '-n', 'app', '-l', 'tier in (web)', '-o', 'name']);
      assert.equal(byLabel.stdout.trim(), 'persistentvolumeclaim/logs');
    });

    it('refuses invalid claims with the field causes', { skip: !present }, async () => {
      const r = await k(['create', '-n', 'app', '-f', '-'], '{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"bad"},"spec":{"resources":{"requests":{"storage":"1Gi"}}}}');
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, /is invalid: spec.accessModes: Required value: at least 1 access mode is required/);
    });

    // kubectl parses the file before sending it, so only unknown fields reach the server (duplicates are covered
    // through raw requests in api-errors.test.ts).
    it('validates fields on the server: Strict refuses unknown fields, warn reports them', { skip: !present }, async () => {
      const body = '{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"typo"},"spec":{"accessModez":["ReadWriteOnce"],"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}';
      const strict = await k(['create', '-n', 'app', '-f', '-'], body);
      assert.notEqual(strict.code, 0);
      assert.match(strict.stderr, /PersistentVolumeClaim in version "v1" cannot be handled as a PersistentVolumeClaim: strict decoding error: unknown field "spec.accessModez"/);
      const warn = await k(['create', '-n', 'app', '--validate=warn', '-f', '-'], body);
      assert.equal(warn.code, 0, warn.stderr);
      assert.match(warn.stderr, /Warning: unknown field "spec.accessModez"/);
      const stored = JSON.parse((await k(['get', 'pvc', 'typo', '-n', 'app', '-o', 'json'])).stdout);
      assert.equal(stored.spec.accessModez, undefined);
      await k(['delete', 'pvc', 'typo', '-n', 'app', '--wait=true']);
    });

    it('patches the status subresource and the object', { skip: !present }, async () => {
      let r = await k(['patch', 'pvc', 'data', '-n', 'app', '--subresource=status', '--type=merge', '-p', '{"status":{"phase":"Bound"}}']);
      assert.equal(r.code, 0, r.stderr);
      r = await k(['patch', 'pvc', 'data', '-n', 'app', '-p', '{"metadata":{"labels":{"patched":"yes"}},"status":{"phase":"Lost"}}']);
      assert.equal(r.code, 0, r.stderr);
      const pvc = JSON.parse((await k(['get', 'pvc', 'data', '-n', 'app', '-o', 'json'])).stdout);
      assert.equal(pvc.status.phase, 'Bound');
      assert.equal(pvc.metadata.labels.patched, 'yes');
    });

    it('replaces, edits, waits and watches', { skip: !present }, async () => {
      const cur = JSON.parse((await k(['get', 'pvc', 'logs', '-n', 'app', '-o', 'json'])).stdout);
      cur.metadata.annotations = { ...(cur.metadata.annotations ?? {}), replaced: 'yes' };
      const rep = await k(['replace', '-f', '-'], JSON.stringify(cur));
      assert.equal(rep.code, 0, rep.stderr);
      assert.match(rep.stdout, /persistentvolumeclaim\/logs replaced/);
      const stale = await k(['replace', '-f', '-'], JSON.stringify(cur));
      assert.notEqual(stale.code, 0);
      assert.match(stale.stderr, /the object has been modified; please apply your changes to the latest version and try again/);
      const edit = await k(['edit', 'pvc', 'logs', '-n', 'app'], undefined, { env: { KUBE_EDITOR: "sed -i -e 's/replaced: \"yes\"/replaced: edited/'" } });
      assert.equal(edit.code, 0, edit.stderr);
      const edited = JSON.parse((await k(['get', 'pvc', 'logs', '-n', 'app', '-o', 'json'])).stdout);
      assert.equal(edited.metadata.annotations.replaced, 'edited');
      const waited = k(['wait', '--for=jsonpath={.status.phase}=Bound', 'pvc/logs', '-n', 'app', '--timeout=20s']);
      await new Promise((r) => setTimeout(r, 300));
      await k(['patch', 'pvc', 'logs', '-n', 'app', '--subresource=status', '--type=merge', '-p', '{"status":{"phase":"Bound"}}']);
      const w = await waited;
      assert.equal(w.code, 0, w.stderr);
      assert.match(w.stdout, /persistentvolumeclaim\/logs condition met/);
      const watching = k(['get', 'pvc', '-n', 'app', '-w', '--output-watch-events'], undefined, { timeoutMs: 3000 });
      await new Promise((r) => setTimeout(r, 800));
      await k(['label', 'pvc', 'logs', '-n', 'app', 'watched=yes']);
      const out = (await watching).stdout;
      assert.match(out, /^EVENT\s+NAME\s+STATUS/m);
      assert.match(out, /ADDED\s+data\s+/);
      assert.match(out, /MODIFIED\s+logs\s+Bound/);
    });

    it('deletes a claim once the pvc-protection finalizer is released, and waits for it', { skip: !present }, async () => {
      await k(['apply', '-f', '-'], MANIFEST('app').split('---')[2]!.replace('name: logs', 'name: scratch'));
      const del = await k(['delete', 'pvc', 'scratch', '-n', 'app', '--wait=true', '--timeout=20s']);
      assert.equal(del.code, 0, del.stderr);
      assert.match(del.stdout, /persistentvolumeclaim "scratch" deleted/);
      const gone = await k(['get', 'pvc', 'scratch', '-n', 'app']);
      assert.match(gone.stderr, /persistentvolumeclaims "scratch" not found/);
      // kubectl wait --for=delete on a claim held by a finalizer that a patch releases later.
      await k(['apply', '-f', '-'], MANIFEST('app').split('---')[2]!.replace('name: logs', 'name: held'));
      assert.equal((await k(['patch', 'pvc', 'held', '-n', 'app', '--type=merge', '-p', '{"metadata":{"finalizers":["example.com/hold"]}}'])).code, 0);
      assert.equal((await k(['delete', 'pvc', 'held', '-n', 'app', '--wait=false'])).code, 0);
      const waiting = k(['wait', '--for=delete', 'pvc/held', '-n', 'app', '--timeout=20s']);
      await new Promise((r) => setTimeout(r, 500));
      const terminating = JSON.parse((await k(['get', 'pvc', 'held', '-n', 'app', '-o', 'json'])).stdout);
      assert.ok(terminating.metadata.deletionTimestamp, 'the claim is terminating while its finalizer holds it');
      assert.equal((await k(['patch', 'pvc', 'held', '-n', 'app', '--type=json', '-p', '[{"op":"remove","path":"/metadata/finalizers"}]'])).code, 0);
      const w = await waiting;
      assert.equal(w.code, 0, w.stderr);
      assert.match(w.stdout, /persistentvolumeclaim\/held condition met/);
    });

    it('keeps the system namespaces, deletes a namespace with its content, and refuses content in a missing one', { skip: !present }, async () => {
      const d = await k(['delete', 'namespace', 'default']);
      assert.notEqual(d.code, 0);
      assert.match(d.stderr, /namespaces "default" is forbidden: this namespace may not be deleted/);
      const del = await k(['delete', 'namespace', 'app', '--wait=true', '--timeout=30s']);
      assert.equal(del.code, 0, del.stderr);
      assert.match(del.stdout, /namespace "app" deleted/);
      const gone = await k(['get', 'namespace', 'app']);
      assert.notEqual(gone.code, 0);
      assert.match(gone.stderr, /namespaces "app" not found/);
      const pvcs = await k(['get', 'pvc', '-A', '-o', 'name']);
      assert.equal(pvcs.stdout.trim(), '');
      const orphan = await k(['apply', '-f', '-'], MANIFEST('app').split('---')[2]);
      assert.notEqual(orphan.code, 0);
      assert.match(orphan.stderr, /namespaces "app" not found/);
    });

    it('pages lists and reports unsupported field selectors', { skip: !present }, async () => {
      for (const n of ['p1', 'p2', 'p3']) assert.equal((await k(['create', 'namespace', n, '--dry-run=client', '-o', 'json'])).code, 0);
      await k(['apply', '-f', '-'], ['p1', 'p2', 'p3'].map((n) => `apiVersion: v1\nkind: Namespace\nmetadata: {name: ${n}}\n`).join('---\n'));
      const page = JSON.parse((await k(['get', '--raw', '/api/v1/namespaces?limit=3'])).stdout);
      assert.equal(page.items.length, 3);
      assert.equal(page.metadata.remainingItemCount, 4);
      const next = JSON.parse((await k(['get', '--raw', `/api/v1/namespaces?limit=3&continue=${encodeURIComponent(page.metadata.continue)}`])).stdout);
      assert.equal(next.items.length, 3);
      const all = await k(['get', 'ns', '--chunk-size=2', '-o', 'name']);
      assert.equal(all.stdout.trim().split('\n').length, 7);
      const bad = await k(['get', 'ns', '--field-selector', 'spec.foo=bar']);
      assert.notEqual(bad.code, 0);
      assert.match(bad.stderr, /field label not supported: spec.foo/);
      const phase = await k(['get', 'ns', '--field-selector', 'status.phase=Active', '-o', 'name']);
      assert.equal(phase.stdout.trim().split('\n').length, 7);
    });
  });
}
