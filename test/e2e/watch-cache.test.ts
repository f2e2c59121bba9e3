/**
 * The watch cache (--watch-cache, --default-watch-cache-size, --watch-cache-sizes) through real clients, on
 * the embedded store and on etcd: `kubectl get -w` is served by the cache, an Informer of
 * @kubernetes/client-node catches up after the server ends its watch, lists with resourceVersion=0 come
 * from memory, and a too-old resourceVersion is 410 Gone.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { CoreV1Api, KubeConfig, makeInformer, PatchStrategy, setHeaderOptions, type V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { requireBinary } from '../helpers/binaries.js';
import { kubectlPath, startCluster, type TestCluster } from '../helpers/cluster.js';
import { eventually } from '../helpers/eventually.js';

const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

function claim(name: string): V1PersistentVolumeClaim {
  return { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } };
}

for (const backend of ['embedded', 'etcd'] as const) {
  describe(`watch cache (${backend} store)`, { skip: backend === 'etcd' && requireBinary(undefined, 'etcd') === null && 'etcd not installed' }, () => {
    let cluster: TestCluster;
    let api: CoreV1Api;
    let kc: KubeConfig;
    const pvcCache = () => cluster.cp.registry.watchCaches.get('persistentvolumeclaims')!;

    before(async () => {
      cluster = await startCluster(['--watch-cache-sizes=persistentvolumeclaims#5,configmaps#0'], { etcd: backend === 'etcd' });
      kc = new KubeConfig();
      kc.loadFromFile(cluster.kubeconfig);
      api = kc.makeApiClient(CoreV1Api);
    });
    after(async () => cluster?.stop());

    it('has a cache per resource as the options say', async () => {
      const caches = cluster.cp.registry.watchCaches;
      assert.equal(pvcCache().capacity, 5);
      assert.equal(caches.get('namespaces')?.capacity, 100, '--default-watch-cache-size');
      assert.equal(caches.has('configmaps'), false, 'size 0 turns the cache off');
      assert.equal(caches.has('events'), false, 'Events are not cached by default');
      assert.equal(pvcCache().ready, true);
      const metrics = await cluster.request('GET', '/metrics');
      assert.match(metrics.text, /^watch_cache_capacity\{resource="\*core\.PersistentVolumeClaim"\} 5$/m);
      assert.match(metrics.text, /^watch_cache_capacity\{resource="\*rbac\.ClusterRole"\} 100$/m);
    });

    it('serves kubectl get -w from the cache', async () => {
      await api.createNamespace({ body: { metadata: { name: 'wc-kubectl' } } });
      await api.createNamespacedPersistentVolumeClaim({ namespace: 'wc-kubectl', body: claim('k1') });
      const bin = kubectlPath();
      assert.ok(bin, 'kubectl is installed');
      const child = spawn(bin, [
        '--kubeconfig', cluster.kubeconfig, 'get', 'pvc', '-n', 'wc-kubectl', '-w', '--output-watch-events',
        '-o', 'custom-columns=TYPE:.type,NAME:.object.metadata.name,V:.object.metadata.labels.v', '--no-headers',
      ], { env: { ...process.env, HOME: cluster.dir } });
      let out = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr.on('data', (d: Buffer) => (out += d.toString()));
      try {
        const lines = () => out.split('\n').map((l) => l.trim().split(/\s+/).join(' ')).filter((l) => l !== '');
        await eventually(() => `the listed claim (output ${JSON.stringify(out)})`, () => lines().includes('ADDED k1 <none>'));
        await eventually('kubectl to watch through the cache', () => pvcCache().watchers > 0);
        await api.createNamespacedPersistentVolumeClaim({ namespace: 'wc-kubectl', body: claim('k2') });
        await api.patchNamespacedPersistentVolumeClaim({ namespace: 'wc-kubectl', name: 'k1', body: { metadata: { labels: { v: 'two' } } } }, mergePatch);
        await api.deleteNamespacedPersistentVolumeClaim({ namespace: 'wc-kubectl', name: 'k2' });
        await eventually(() => `the watched changes (output ${JSON.stringify(out)})`, () =>
          ['ADDED k2 <none>', 'MODIFIED k1 two'].every((l) => lines().includes(l)) && lines().some((l) => l.startsWith('MODIFIED k2') || l.startsWith('DELETED k2')),
        );
      } finally {
        child.kill();
      }
    });

    it('lists with resourceVersion=0 from memory and answers 410 for a version older than the window', async () => {
      await api.createNamespace({ body: { metadata: { name: 'wc-window' } } });
      const first = await api.createNamespacedPersistentVolumeClaim({ namespace: 'wc-window', body: claim('w0') });
      for (let i = 1; i <= 6; i++) await api.createNamespacedPersistentVolumeClaim({ namespace: 'wc-window', body: claim(`w${i}`) });
      const list = await cluster.request('GET', '/api/v1/namespaces/wc-window/persistentvolumeclaims?resourceVersion=0&limit=2');
      assert.equal(list.status, 200);
      assert.equal(list.json.items.length, 7, 'a list from the cache ignores the limit');
      const old = await cluster.request('GET', `/api/v1/namespaces/wc-window/persistentvolumeclaims?watch=1&resourceVersion=${first.metadata!.resourceVersion!}&timeoutSeconds=5`);
      const ev = JSON.parse(old.text.split('\n')[0]!);
      assert.equal(ev.type, 'ERROR');
      assert.equal(ev.object.code, 410);
      assert.match(ev.object.message, /^too old resource version: \d+ \(\d+\)$/);
      const future = Number(list.json.metadata.resourceVersion) + 1000;
      const tooLarge = await cluster.request('GET', `/api/v1/namespaces/wc-window/persistentvolumeclaims?resourceVersion=${future}&resourceVersionMatch=NotOlderThan`);
      assert.equal(tooLarge.status, 504);
      assert.equal(tooLarge.json.details.causes[0].reason, 'ResourceVersionTooLarge');
    });

    it('answers lists without a resourceVersion from memory, seeing every write before them, and pages them', async () => {
      const ns = 'wc-consistent';
      const path = `/api/v1/namespaces/${ns}/persistentvolumeclaims`;
      await api.createNamespace({ body: { metadata: { name: ns } } });
      const served = pvcCache().consistentLists;
      const names = (items: { metadata: { name: string } }[]) => items.map((o) => o.metadata.name).join(',');
      const expected: string[] = [];
      for (let i = 0; i < 10; i++) {
        const created = await api.createNamespacedPersistentVolumeClaim({ namespace: ns, body: claim(`c${i}`) });
        expected.push(`c${i}`);
        // Read-your-writes: the list right after the write holds it, at a version no older than the write's.
        const list = await cluster.request('GET', path);
        assert.equal(list.status, 200);
        assert.equal(names(list.json.items), expected.join(','));
        assert.ok(Number(list.json.metadata.resourceVersion) >= Number(created.metadata!.resourceVersion), 'list version not older than the write');
      }
      await api.patchNamespacedPersistentVolumeClaim({ namespace: ns, name: 'c3', body: { metadata: { labels: { tier: 'gold' } } } }, mergePatch);
      const gold = await cluster.request('GET', `${path}?labelSelector=tier%3Dgold`);
      assert.equal(names(gold.json.items), 'c3', 'a label set just before is seen by the selector');
      await api.deleteNamespacedPersistentVolumeClaim({ namespace: ns, name: 'c9' });
      expected.pop();
      // The claim's protection finalizer may keep it a moment: gone, or marked for deletion.
      const afterDelete = await cluster.request('GET', path);
      const c9 = (afterDelete.json.items as { metadata: { name: string; deletionTimestamp?: string } }[]).find((o) => o.metadata.name === 'c9');
      assert.ok(!c9 || c9.metadata.deletionTimestamp, 'a claim deleted just before is gone or being deleted');
      await eventually('c9 to be gone', async () => !names((await cluster.request('GET', path)).json.items).split(',').includes('c9'));
      assert.ok(pvcCache().consistentLists >= served + 12, `the lists came from the cache (${pvcCache().consistentLists - served} of at least 12)`);

      // Paging: the first page from memory, the next ones from storage at the first page's version.
      const first = await cluster.request('GET', `${path}?limit=4`);
      assert.equal(first.status, 200);
      assert.equal(names(first.json.items), 'c0,c1,c2,c3');
      assert.equal(first.json.metadata.remainingItemCount, 5);
      await api.createNamespacedPersistentVolumeClaim({ namespace: ns, body: claim('c10') });
      const paged: string[] = first.json.items.map((o: { metadata: { name: string } }) => o.metadata.name);
      let cont: string | undefined = first.json.metadata.continue;
      while (cont) {
        const page = await cluster.request('GET', `${path}?limit=4&continue=${encodeURIComponent(cont)}`);
        assert.equal(page.status, 200);
        assert.equal(page.json.metadata.resourceVersion, first.json.metadata.resourceVersion, 'every page at the first page\'s version');
        paged.push(...page.json.items.map((o: { metadata: { name: string } }) => o.metadata.name));
        cont = page.json.metadata.continue;
      }
      assert.equal(paged.join(','), expected.join(','), 'the pages hold the claims as of the first page (not c10)');
      const exact = await cluster.request('GET', `${path}?limit=10`);
      assert.equal(exact.json.items.length, 10, 'c0…c8 and c10');
      assert.equal(exact.json.metadata.continue, undefined, 'no continue token when no key follows');
      const filtered = await cluster.request('GET', `${path}?limit=1&labelSelector=tier%3Dgold`);
      assert.equal(names(filtered.json.items), 'c3');
      assert.ok(filtered.json.metadata.continue, 'keys follow c3: a continue token, as storage gives');
      assert.equal(filtered.json.metadata.remainingItemCount, undefined, 'no count with a selector');
      const rest = await cluster.request('GET', `${path}?limit=1&labelSelector=tier%3Dgold&continue=${encodeURIComponent(filtered.json.metadata.continue)}`);
      assert.equal(rest.json.items.length, 0);
      // kubectl pages with limit=500.
      const out = (await cluster.kubectl(['get', 'pvc', '-n', ns, '-o', 'name'])).stdout;
      assert.equal(out.trim().split('\n').join(','), [...expected, 'c10'].map((n) => `persistentvolumeclaim/${n}`).sort().join(','));
    });

    it('an Informer catches up after the server ends its watch', async () => {
      await api.createNamespace({ body: { metadata: { name: 'wc-informer' } } });
      await api.createNamespacedPersistentVolumeClaim({ namespace: 'wc-informer', body: claim('i1') });
      const informer = makeInformer<V1PersistentVolumeClaim>(kc, '/api/v1/namespaces/wc-informer/persistentvolumeclaims', () =>
        api.listNamespacedPersistentVolumeClaim({ namespace: 'wc-informer' }),
      );
      const log: string[] = [];
      let stopped = false;
      informer.on('add', (o) => log.push(`add ${o.metadata?.name}`));
      informer.on('delete', (o) => log.push(`delete ${o.metadata?.name}`));
      // client-node stops on a failed watch; a real client starts again, as this one does.
      informer.on('error', () => {
        if (!stopped) setTimeout(() => void informer.start().catch(() => undefined), 100);
      });
      const seen = (entry: string) => eventually(() => `informer event "${entry}" (log ${JSON.stringify(log)})`, () => log.includes(entry), { timeoutMs: 20_000 });
      await informer.start();
      try {
        await seen('add i1');
        await eventually('the informer to watch through the cache', () => pvcCache().watchers > 0);
        // The cache lists again: it ends every watch (as for a slow watcher) and starts a new window.
        pvcCache().restart();
        for (let i = 2; i <= 8; i++) await api.createNamespacedPersistentVolumeClaim({ namespace: 'wc-informer', body: claim(`i${i}`) });
        await api.deleteNamespacedPersistentVolumeClaim({ namespace: 'wc-informer', name: 'i1' });
        for (let i = 2; i <= 8; i++) await seen(`add i${i}`);
        await seen('delete i1');
        await eventually('the informer to hold the current claims', () =>
          informer.list('wc-informer').map((o) => o.metadata?.name).sort().join(',') === 'i2,i3,i4,i5,i6,i7,i8',
        );
      } finally {
        stopped = true;
        await informer.stop();
      }
    });
  });
}

describe('--watch-cache=false', () => {
  let cluster: TestCluster;
  before(async () => {
    cluster = await startCluster(['--watch-cache=false']);
  });
  after(async () => cluster?.stop());

  it('reads storage for every list and watch', async () => {
    assert.equal(cluster.cp.registry.watchCaches.size, 0);
    const list = await cluster.request('GET', '/api/v1/namespaces?resourceVersion=0');
    assert.equal(list.status, 200);
    const r = await cluster.kubectl(['get', 'namespaces', '-o', 'name']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /namespace\/default/);
  });
});
