/**
 * Spec document 1 through the official JavaScript client, @kubernetes/client-node (1.x), used unchanged:
 * namespaces and persistent volume claims through CoreV1Api, a Watch and an Informer, against a server this
 * test starts in-process, once on the embedded store and once on etcd. Each scenario works in a namespace of
 * its own.
 *
 * Expected answers are Kubernetes' own. A scenario that fails because the server answers differently is
 * marked `todo` with the reason, so the suite stays green while the bug stays visible.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  ApiException,
  CoreV1Api,
  KubeConfig,
  PatchStrategy,
  Watch,
  makeInformer,
  setHeaderOptions,
  type V1Namespace,
  type V1PersistentVolumeClaim,
} from '@kubernetes/client-node';
import { requireBinary } from '../helpers/binaries.js';
import { startCluster, type TestCluster } from '../helpers/cluster.js';
import { eventually } from '../helpers/eventually.js';

/** The Content-Type choices of the client's patch calls; without options it sends a JSON patch. */
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const strategicMergePatch = setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch);

function claim(name: string, labels: Record<string, string> = {}, storage = '1Gi'): V1PersistentVolumeClaim {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, labels },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage } } },
  };
}

/** The Status a failed call carries: the client throws an ApiException whose body is the response text. */
async function failure(call: Promise<unknown>): Promise<{ code: number; status: any }> {
  try {
    await call;
  } catch (err) {
    if (!(err instanceof ApiException)) throw err;
    const e = err as ApiException<unknown>;
    return { code: e.code, status: typeof e.body === 'string' ? JSON.parse(e.body) : e.body };
  }
  return assert.fail('the call was expected to fail');
}


const names = (list: { items: { metadata?: { name?: string } }[] }) => list.items.map((i) => i.metadata?.name ?? '');

for (const backend of ['embedded', 'etcd'] as const) {
  describe(`@kubernetes/client-node (${backend} store): namespaces and persistent volume claims`, { skip: backend === 'etcd' && requireBinary(undefined, 'etcd') === null && 'etcd not installed' }, () => {
    let cluster: TestCluster;
    let api: CoreV1Api;
    let kc: KubeConfig;

    /** Resolves once the object is gone (404), as after a delete the controllers finish. */
    const gone = (what: string, read: () => Promise<unknown>) =>
      eventually(`${what} to be gone`, async () => {
        try {
          await read();
          return undefined;
        } catch (err) {
          if (err instanceof ApiException && err.code === 404) return true;
          throw err;
        }
      });

    const newNamespace = async (name: string, labels: Record<string, string> = {}) =>
      api.createNamespace({ body: { metadata: { name, labels } } });

    before(async () => {
      cluster = await startCluster([], { etcd: backend === 'etcd' });
      kc = new KubeConfig();
      kc.loadFromFile(cluster.kubeconfig);
      api = kc.makeApiClient(CoreV1Api);
    });
    after(async () => cluster?.stop());

    it('creates, reads, lists, replaces, patches and deletes a namespace', async () => {
      const created = await newNamespace('cn-ns', { suite: 'client-node' });
      assert.equal(created.kind, 'Namespace');
      assert.equal(created.apiVersion, 'v1');
      assert.match(created.metadata?.uid ?? '', /^[0-9a-f-]{36}$/);
      assert.ok(created.metadata?.creationTimestamp instanceof Date, 'the client parses timestamps into Dates');
      assert.deepEqual(created.spec?.finalizers, ['kubernetes']);
      assert.equal(created.status?.phase, 'Active');

      const read = await api.readNamespace({ name: 'cn-ns' });
      assert.equal(read.metadata?.resourceVersion, created.metadata?.resourceVersion);
      assert.equal((await api.readNamespaceStatus({ name: 'cn-ns' })).status?.phase, 'Active');

      const listed = await api.listNamespace({ labelSelector: 'suite=client-node' });
      assert.equal(listed.kind, 'NamespaceList');
      assert.deepEqual(names(listed), ['cn-ns']);
      assert.ok(listed.metadata?.resourceVersion);
      const all = await api.listNamespace();
      for (const ns of ['cn-ns', 'default', 'kube-node-lease', 'kube-public', 'kube-system']) assert.ok(names(all).includes(ns), ns);

      // Replace sends back what was read (timestamps re-serialized with milliseconds by the client).
      read.metadata!.labels = { ...read.metadata!.labels, tier: 'gold' };
      const replaced = await api.replaceNamespace({ name: 'cn-ns', body: read });
      assert.equal(replaced.metadata?.labels?.tier, 'gold');
      assert.notEqual(replaced.metadata?.resourceVersion, read.metadata?.resourceVersion);
      assert.equal(replaced.metadata?.creationTimestamp?.getTime(), created.metadata?.creationTimestamp?.getTime());

      // The client's default patch type is a JSON patch.
      const jsonPatched = await api.patchNamespace({ name: 'cn-ns', body: [{ op: 'add', path: '/metadata/labels/json', value: 'yes' }] });
      assert.equal(jsonPatched.metadata?.labels?.json, 'yes');
      const merged = await api.patchNamespace({ name: 'cn-ns', body: { metadata: { labels: { tier: null, owner: 'alice' } } } }, mergePatch);
      assert.deepEqual(merged.metadata?.labels, { 'kubernetes.io/metadata.name': 'cn-ns', suite: 'client-node', json: 'yes', owner: 'alice' });
      const strategic = await api.patchNamespace({ name: 'cn-ns', body: { metadata: { annotations: { note: 'strategic' } } } }, strategicMergePatch);
      assert.equal(strategic.metadata?.annotations?.note, 'strategic');
      assert.equal(strategic.metadata?.labels?.owner, 'alice');

      await api.deleteNamespace({ name: 'cn-ns' });
      await gone('namespace cn-ns', () => api.readNamespace({ name: 'cn-ns' }));
    });

    it('answers a namespace delete with a Status (spec document 1, section 4, rule 1), the namespace Terminating', async () => {
      const created = await newNamespace('cn-del');
      // Kubernetes' own server answers with the Namespace; document 1 prescribes a Status, and orch follows it.
      const deleted: any = await api.deleteNamespace({ name: 'cn-del' });
      assert.equal(deleted.kind, 'Status');
      assert.equal(deleted.status, 'Success');
      assert.equal(deleted.details?.name, 'cn-del');
      assert.equal(deleted.details?.kind, 'namespaces');
      assert.equal(deleted.details?.uid, created.metadata?.uid);
      const ns = await api.readNamespace({ name: 'cn-del' }).catch(() => undefined);
      if (ns) {
        assert.ok(ns.metadata?.deletionTimestamp);
        assert.equal(ns.status?.phase, 'Terminating');
      }
    });

    it('keeps spec.finalizers out of replace, and finishes a held delete through replaceNamespaceFinalize', async () => {
      const created = await api.createNamespace({ body: { metadata: { name: 'cn-fin' }, spec: { finalizers: ['example.com/hold'] } } });
      assert.deepEqual(created.spec?.finalizers, ['example.com/hold', 'kubernetes']);

      const noFinalizers: V1Namespace = { ...created, spec: { finalizers: [] } };
      const replaced = await api.replaceNamespace({ name: 'cn-fin', body: noFinalizers });
      assert.deepEqual(replaced.spec?.finalizers, ['example.com/hold', 'kubernetes'], 'a plain replace leaves spec.finalizers alone');

      await api.createNamespacedPersistentVolumeClaim({ namespace: 'cn-fin', body: claim('content') });
      await api.deleteNamespace({ name: 'cn-fin' });
      // The namespace controller removes the content and its own finalizer; ours holds the namespace.
      const held = await eventually('the namespace controller to finish', async () => {
        const ns = await api.readNamespace({ name: 'cn-fin' });
        return ns.spec?.finalizers?.length === 1 ? ns : undefined;
      });
      assert.deepEqual(held.spec?.finalizers, ['example.com/hold']);
      assert.equal(held.status?.phase, 'Terminating');
      assert.deepEqual(names(await api.listNamespacedPersistentVolumeClaim({ namespace: 'cn-fin' })), []);

      const late = await failure(api.createNamespacedPersistentVolumeClaim({ namespace: 'cn-fin', body: claim('late') }));
      assert.equal(late.code, 403);
      assert.equal(late.status.reason, 'Forbidden');
      assert.equal(late.status.message, 'persistentvolumeclaims "late" is forbidden: unable to create new content in namespace cn-fin because it is being terminated');
      assert.deepEqual(late.status.details?.causes, [
        { reason: 'NamespaceTerminating', message: 'namespace cn-fin is being terminated', field: 'metadata.namespace' },
      ]);

      const finalized = await api.replaceNamespaceFinalize({ name: 'cn-fin', body: { ...held, spec: { finalizers: [] } } });
      assert.equal(finalized.metadata?.name, 'cn-fin');
      assert.deepEqual(finalized.spec?.finalizers ?? [], []);
      await gone('namespace cn-fin', () => api.readNamespace({ name: 'cn-fin' }));
    });

    it('creates, reads, lists, replaces, patches and deletes a claim', async () => {
      await newNamespace('cn-pvc');
      const created = await api.createNamespacedPersistentVolumeClaim({ namespace: 'cn-pvc', body: claim('data', { tier: 'db' }, '1.5Gi') });
      assert.equal(created.kind, 'PersistentVolumeClaim');
      assert.equal(created.metadata?.namespace, 'cn-pvc');
      assert.equal(created.spec?.resources?.requests?.storage, '1536Mi', 'quantities come back canonical');
      assert.equal(created.spec?.volumeMode, 'Filesystem');
      assert.equal(created.status?.phase, 'Pending');

      const read = await api.readNamespacedPersistentVolumeClaim({ namespace: 'cn-pvc', name: 'data' });
      assert.equal(read.metadata?.uid, created.metadata?.uid);
      const list = await api.listNamespacedPersistentVolumeClaim({ namespace: 'cn-pvc' });
      assert.equal(list.kind, 'PersistentVolumeClaimList');
      assert.deepEqual(names(list), ['data']);
      const everywhere = await api.listPersistentVolumeClaimForAllNamespaces({ labelSelector: 'tier=db' });
      assert.deepEqual(everywhere.items.map((p) => `${p.metadata?.namespace}/${p.metadata?.name}`), ['cn-pvc/data']);

      // Replace applies metadata and keeps the status: status only changes through its subresource.
      read.metadata!.annotations = { replaced: 'yes' };
      read.status = { phase: 'Lost' };
      const replaced = await api.replaceNamespacedPersistentVolumeClaim({ namespace: 'cn-pvc', name: 'data', body: read });
      assert.equal(replaced.metadata?.annotations?.replaced, 'yes');
      assert.equal(replaced.status?.phase, 'Pending');

      // Merge patch replaces lists; strategic merge patch merges metadata.finalizers (patchStrategy merge).
      const merged = await api.patchNamespacedPersistentVolumeClaim(
        { namespace: 'cn-pvc', name: 'data', body: { metadata: { finalizers: ['example.com/a'], labels: { tier: null, merged: 'yes' } } } },
        mergePatch,
      );
      assert.deepEqual(merged.metadata?.finalizers, ['example.com/a']);
      assert.deepEqual(merged.metadata?.labels, { merged: 'yes' });
      const strategic = await api.patchNamespacedPersistentVolumeClaim(
        { namespace: 'cn-pvc', name: 'data', body: { metadata: { finalizers: ['example.com/b'] } } },
        strategicMergePatch,
      );
      assert.deepEqual([...(strategic.metadata?.finalizers ?? [])].sort(), ['example.com/a', 'example.com/b']);
      const cleared = await api.patchNamespacedPersistentVolumeClaim(
        { namespace: 'cn-pvc', name: 'data', body: { metadata: { finalizers: null } } },
        mergePatch,
      );
      assert.equal(cleared.metadata?.finalizers, undefined);

      // A claim's delete answers the claim itself.
      const deleted = await api.deleteNamespacedPersistentVolumeClaim({ namespace: 'cn-pvc', name: 'data' });
      assert.equal(deleted.kind, 'PersistentVolumeClaim');
      assert.equal(deleted.metadata?.name, 'data');
      assert.equal(deleted.metadata?.uid, created.metadata?.uid);
      await gone('claim cn-pvc/data', () => api.readNamespacedPersistentVolumeClaim({ namespace: 'cn-pvc', name: 'data' }));
    });

    it('reads and replaces the status subresource of a claim', async () => {
      await newNamespace('cn-status');
      await api.createNamespacedPersistentVolumeClaim({ namespace: 'cn-status', body: claim('vol') });
      const before = await api.readNamespacedPersistentVolumeClaimStatus({ namespace: 'cn-status', name: 'vol' });
      assert.equal(before.kind, 'PersistentVolumeClaim');
      assert.equal(before.status?.phase, 'Pending');

      before.status = {
        phase: 'Bound',
        accessModes: ['ReadWriteOnce'],
        capacity: { storage: '2Gi' },
        conditions: [{ type: 'Resizing', status: 'True', lastTransitionTime: new Date('2024-05-01T10:00:00Z') }],
      };
      before.spec!.resources = { requests: { storage: '5Gi' } };
      const updated = await api.replaceNamespacedPersistentVolumeClaimStatus({ namespace: 'cn-status', name: 'vol', body: before });
      assert.equal(updated.status?.phase, 'Bound');
      assert.deepEqual(updated.status?.capacity, { storage: '2Gi' });
      assert.equal(updated.status?.conditions?.[0]?.type, 'Resizing');
      assert.equal(updated.status?.conditions?.[0]?.lastTransitionTime?.getTime(), Date.parse('2024-05-01T10:00:00Z'));
      assert.equal(updated.spec?.resources?.requests?.storage, '1Gi', 'the status subresource ignores spec');

      const after = await api.readNamespacedPersistentVolumeClaimStatus({ namespace: 'cn-status', name: 'vol' });
      assert.equal(after.status?.phase, 'Bound');
      assert.equal(after.metadata?.resourceVersion, updated.metadata?.resourceVersion);
    });

    it(
      'stores the Dates the client sends (with milliseconds) as Kubernetes Time: whole seconds',
      async () => {
        await newNamespace('cn-time');
        const pvc = await api.createNamespacedPersistentVolumeClaim({ namespace: 'cn-time', body: claim('t') });
        pvc.status = { phase: 'Pending', conditions: [{ type: 'Resizing', status: 'True', lastTransitionTime: new Date('2024-05-01T10:00:00.250Z') }] };
        const updated = await api.replaceNamespacedPersistentVolumeClaimStatus({ namespace: 'cn-time', name: 't', body: pvc });
        assert.equal(updated.status?.conditions?.[0]?.lastTransitionTime?.toISOString(), '2024-05-01T10:00:00.000Z');
      },
    );

    it('lists claims by label and field selectors, and in pages with limit and _continue', async () => {
      await newNamespace('cn-list');
      const tiers = { p1: 'web', p2: 'web', p3: 'db', p4: 'db', p5: 'cache' };
      for (const [name, tier] of Object.entries(tiers)) {
        await api.createNamespacedPersistentVolumeClaim({ namespace: 'cn-list', body: claim(name, { app: 'shop', tier }) });
      }
      const list = (opts: Omit<Parameters<CoreV1Api['listNamespacedPersistentVolumeClaim']>[0], 'namespace'>) =>
        api.listNamespacedPersistentVolumeClaim({ namespace: 'cn-list', ...opts });

      assert.deepEqual(names(await list({ labelSelector: 'tier=web' })), ['p1', 'p2']);
      assert.deepEqual(names(await list({ labelSelector: 'app=shop,tier in (db,cache)' })), ['p3', 'p4', 'p5']);
      assert.deepEqual(names(await list({ labelSelector: 'tier notin (web),tier!=db' })), ['p5']);
      assert.deepEqual(names(await list({ labelSelector: 'missing' })), []);
      assert.deepEqual(names(await list({ fieldSelector: 'metadata.name=p2' })), ['p2']);
      assert.deepEqual(names(await list({ fieldSelector: 'metadata.name!=p2,metadata.namespace=cn-list', labelSelector: 'tier=web' })), ['p1']);
      assert.deepEqual(names(await api.listNamespace({ fieldSelector: 'metadata.name=cn-list' })), ['cn-list']);

      const first = await list({ limit: 2 });
      assert.deepEqual(names(first), ['p1', 'p2']);
      assert.ok(first.metadata?._continue, 'a continue token');
      assert.equal(first.metadata?.remainingItemCount, 3);
      const seen = names(first);
      let token: string | undefined = first.metadata?._continue;
      while (token) {
        const page = await list({ limit: 2, _continue: token });
        assert.ok(page.items.length <= 2);
        assert.equal(page.metadata?.resourceVersion, first.metadata?.resourceVersion, 'pages come from one snapshot');
        seen.push(...names(page));
        token = page.metadata?._continue;
      }
      assert.deepEqual(seen, ['p1', 'p2', 'p3', 'p4', 'p5']);

      const badField = await failure(list({ fieldSelector: 'spec.foo=bar' }));
      assert.equal(badField.code, 400);
      assert.equal(badField.status.reason, 'BadRequest');
    });

    it('deletes a collection of claims by label selector', async () => {
      await newNamespace('cn-coll');
      for (const [name, tier] of [['a', 'tmp'], ['b', 'tmp'], ['c', 'keep']] as const) {
        await api.createNamespacedPersistentVolumeClaim({ namespace: 'cn-coll', body: claim(name, { tier }) });
      }
      await api.deleteCollectionNamespacedPersistentVolumeClaim({ namespace: 'cn-coll', labelSelector: 'tier=tmp' });
      await eventually('the collection to go', async () => {
        const left = names(await api.listNamespacedPersistentVolumeClaim({ namespace: 'cn-coll' }));
        return left.length === 1 ? left : undefined;
      });
      assert.deepEqual(names(await api.listNamespacedPersistentVolumeClaim({ namespace: 'cn-coll' })), ['c']);
    });

    it('answers a claim delete-collection with a Status (spec document 1, section 4, rule 1)', async () => {
      await newNamespace('cn-coll2');
      for (const name of ['a', 'b']) await api.createNamespacedPersistentVolumeClaim({ namespace: 'cn-coll2', body: claim(name) });
      // Kubernetes' own server answers with the list it deleted; document 1 prescribes a Status.
      const answer: any = await api.deleteCollectionNamespacedPersistentVolumeClaim({ namespace: 'cn-coll2' });
      assert.equal(answer.kind, 'Status');
      assert.equal(answer.apiVersion, 'v1');
      assert.equal(answer.status, 'Success');
    });

    it('surfaces 404 NotFound as an ApiException with the Status body', async () => {
      const missing = await failure(api.readNamespacedPersistentVolumeClaim({ namespace: 'default', name: 'nope' }));
      assert.equal(missing.code, 404);
      assert.equal(missing.status.kind, 'Status');
      assert.equal(missing.status.apiVersion, 'v1');
      assert.equal(missing.status.status, 'Failure');
      assert.equal(missing.status.code, 404);
      assert.equal(missing.status.reason, 'NotFound');
      assert.equal(missing.status.message, 'persistentvolumeclaims "nope" not found');
      assert.equal(missing.status.details?.name, 'nope');
      assert.equal(missing.status.details?.kind, 'persistentvolumeclaims');
      const ns = await failure(api.deleteNamespace({ name: 'no-such-namespace' }));
      assert.equal(ns.code, 404);
      assert.equal(ns.status.message, 'namespaces "no-such-namespace" not found');
      assert.equal(ns.status.details?.kind, 'namespaces');
      const orphan = await failure(api.createNamespacedPersistentVolumeClaim({ namespace: 'no-such-namespace', body: claim('x') }));
      assert.equal(orphan.code, 404);
      assert.equal(orphan.status.reason, 'NotFound');
      assert.equal(orphan.status.message, 'namespaces "no-such-namespace" not found');
    });

    it('surfaces 409 AlreadyExists and Conflict', async () => {
      await newNamespace('cn-conflict');
      const again = await failure(newNamespace('cn-conflict'));
      assert.equal(again.code, 409);
      assert.equal(again.status.kind, 'Status');
      assert.equal(again.status.code, 409);
      assert.equal(again.status.reason, 'AlreadyExists');
      assert.equal(again.status.message, 'namespaces "cn-conflict" already exists');
      assert.equal(again.status.details?.name, 'cn-conflict');
      assert.equal(again.status.details?.kind, 'namespaces');
      const first = await api.createNamespacedPersistentVolumeClaim({ namespace: 'cn-conflict', body: claim('data') });
      const dup = await failure(api.createNamespacedPersistentVolumeClaim({ namespace: 'cn-conflict', body: claim('data') }));
      assert.equal(dup.code, 409);
      assert.equal(dup.status.reason, 'AlreadyExists');
      assert.equal(dup.status.message, 'persistentvolumeclaims "data" already exists');

      await api.patchNamespacedPersistentVolumeClaim({ namespace: 'cn-conflict', name: 'data', body: { metadata: { labels: { v: '2' } } } }, mergePatch);
      const stale = await failure(api.replaceNamespacedPersistentVolumeClaim({ namespace: 'cn-conflict', name: 'data', body: first }));
      assert.equal(stale.code, 409);
      assert.equal(stale.status.reason, 'Conflict');
      assert.equal(
        stale.status.message,
        'Operation cannot be fulfilled on persistentvolumeclaims "data": the object has been modified; please apply your changes to the latest version and try again',
      );
      assert.equal(stale.status.details?.name, 'data');
      assert.equal(stale.status.details?.kind, 'persistentvolumeclaims');
    });

    it('surfaces 422 Invalid with the field causes', async () => {
      await newNamespace('cn-invalid');
      const bad = await failure(api.createNamespacedPersistentVolumeClaim({ namespace: 'cn-invalid', body: { metadata: { name: 'bad' }, spec: {} } }));
      assert.equal(bad.code, 422);
      assert.equal(bad.status.kind, 'Status');
      assert.equal(bad.status.status, 'Failure');
      assert.equal(bad.status.reason, 'Invalid');
      assert.equal(
        bad.status.message,
        'PersistentVolumeClaim "bad" is invalid: [spec.accessModes: Required value: at least 1 access mode is required, spec.resources[storage]: Required value]',
      );
      assert.equal(bad.status.details?.name, 'bad');
      assert.equal(bad.status.details?.kind, 'PersistentVolumeClaim');
      assert.deepEqual(bad.status.details?.causes, [
        { reason: 'FieldValueRequired', message: 'Required value: at least 1 access mode is required', field: 'spec.accessModes' },
        { reason: 'FieldValueRequired', message: 'Required value', field: 'spec.resources[storage]' },
      ]);

      const badName = await failure(newNamespace('Not_A_Label'));
      assert.equal(badName.code, 422);
      assert.equal(badName.status.reason, 'Invalid');
      assert.match(badName.status.message, /^Namespace "Not_A_Label" is invalid: metadata\.name: Invalid value: "Not_A_Label": a lowercase RFC 1123 label must consist of/);
      assert.equal(badName.status.details?.causes?.[0]?.field, 'metadata.name');
      assert.equal(badName.status.details?.causes?.[0]?.reason, 'FieldValueInvalid');

      // The spec of a claim that is not bound is immutable.
      const pvc = await api.createNamespacedPersistentVolumeClaim({ namespace: 'cn-invalid', body: claim('fixed') });
      pvc.spec!.accessModes = ['ReadWriteMany'];
      const immutable = await failure(api.replaceNamespacedPersistentVolumeClaim({ namespace: 'cn-invalid', name: 'fixed', body: pvc }));
      assert.equal(immutable.code, 422);
      assert.equal(immutable.status.reason, 'Invalid');
      assert.equal(immutable.status.details?.causes?.[0]?.field, 'spec');
      assert.equal(immutable.status.details?.causes?.[0]?.reason, 'FieldValueForbidden');
      assert.match(immutable.status.details?.causes?.[0]?.message, /^Forbidden: spec is immutable after creation except resources\.requests/);
    });

    it(
      'sends error Status bodies exactly as Kubernetes does',
      async () => {
        const missing = await failure(api.readNamespacedPersistentVolumeClaim({ namespace: 'default', name: 'nope' }));
        assert.deepEqual(missing.status, {
          kind: 'Status',
          apiVersion: 'v1',
          metadata: {},
          status: 'Failure',
          message: 'persistentvolumeclaims "nope" not found',
          reason: 'NotFound',
          details: { name: 'nope', kind: 'persistentvolumeclaims' },
          code: 404,
        });
        const exists = await failure(newNamespace('default'));
        assert.deepEqual(exists.status, {
          kind: 'Status',
          apiVersion: 'v1',
          metadata: {},
          status: 'Failure',
          message: 'namespaces "default" already exists',
          reason: 'AlreadyExists',
          details: { name: 'default', kind: 'namespaces' },
          code: 409,
        });
        const invalid = await failure(api.createNamespacedPersistentVolumeClaim({ namespace: 'default', body: { metadata: { name: 'bad' }, spec: {} } }));
        assert.deepEqual(invalid.status.details, {
          name: 'bad',
          kind: 'PersistentVolumeClaim',
          causes: [
            { reason: 'FieldValueRequired', message: 'Required value: at least 1 access mode is required', field: 'spec.accessModes' },
            { reason: 'FieldValueRequired', message: 'Required value', field: 'spec.resources[storage]' },
          ],
        });
      },
    );

    it('watches claims in a namespace: ADDED, MODIFIED, DELETED', async () => {
      await newNamespace('cn-watch');
      const rv = (await api.listNamespacedPersistentVolumeClaim({ namespace: 'cn-watch' })).metadata?.resourceVersion;
      const events: { type: string; name: string; labels: Record<string, string> }[] = [];
      let ended: unknown = 'still open';
      let sawDeleted = false;
      const watch = await new Watch(kc).watch(
        '/api/v1/namespaces/cn-watch/persistentvolumeclaims',
        { resourceVersion: rv, allowWatchBookmarks: true },
        (type, obj: V1PersistentVolumeClaim) => {
          if (type === 'BOOKMARK') return;
          events.push({ type, name: obj.metadata?.name ?? '', labels: obj.metadata?.labels ?? {} });
          if (type === 'DELETED') sawDeleted = true;
        },
        (err) => {
          ended = err;
        },
      );
      try {
        await api.createNamespacedPersistentVolumeClaim({ namespace: 'cn-watch', body: claim('w1') });
        await api.patchNamespacedPersistentVolumeClaim({ namespace: 'cn-watch', name: 'w1', body: { metadata: { labels: { seen: 'yes' } } } }, mergePatch);
        await api.deleteNamespacedPersistentVolumeClaim({ namespace: 'cn-watch', name: 'w1' });
        await eventually(
          () => `a DELETED event (saw ${JSON.stringify(events)}, watch ended: ${String(ended)})`,
          async () => (sawDeleted ? true : undefined),
        );
      } finally {
        watch.abort();
      }

      assert.ok(events.every((e) => e.name === 'w1'), JSON.stringify(events));
      assert.equal(events[0]?.type, 'ADDED');
      assert.equal(events.at(-1)?.type, 'DELETED');
      assert.ok(events.some((e) => e.type === 'MODIFIED' && e.labels.seen === 'yes'), JSON.stringify(events));
      assert.deepEqual(new Set(events.map((e) => e.type)), new Set(['ADDED', 'MODIFIED', 'DELETED']));
    });

    it('syncs an Informer (ListWatch) from a list, then sees later adds, updates and deletes', async () => {
      await newNamespace('cn-informer');
      for (const name of ['i1', 'i2']) await api.createNamespacedPersistentVolumeClaim({ namespace: 'cn-informer', body: claim(name) });

      const informer = makeInformer<V1PersistentVolumeClaim>(kc, '/api/v1/namespaces/cn-informer/persistentvolumeclaims', () =>
        api.listNamespacedPersistentVolumeClaim({ namespace: 'cn-informer' }),
      );
      const log: string[] = [];
      const errors: unknown[] = [];
      let stopped = false;
      informer.on('add', (o) => log.push(`add ${o.metadata?.name}`));
      informer.on('update', (o) => log.push(`update ${o.metadata?.name} ${o.metadata?.labels?.v ?? ''}`));
      informer.on('delete', (o) => log.push(`delete ${o.metadata?.name}`));
      informer.on('error', (err) => {
        if (!stopped) errors.push(err);
      });
      const seen = (entry: string) =>
        eventually(
          () => `informer event "${entry}" (log ${JSON.stringify(log)}, errors ${errors.map(String).join('; ')})`,
          async () => (log.includes(entry) ? true : undefined),
        );

      await informer.start();
      try {
        await seen('add i1');
        await seen('add i2');
        assert.deepEqual(informer.list('cn-informer').map((o) => o.metadata?.name).sort(), ['i1', 'i2']);

        await api.createNamespacedPersistentVolumeClaim({ namespace: 'cn-informer', body: claim('i3') });
        await seen('add i3');
        assert.equal(informer.get('i3', 'cn-informer')?.metadata?.name, 'i3');

        await api.patchNamespacedPersistentVolumeClaim({ namespace: 'cn-informer', name: 'i1', body: { metadata: { labels: { v: '2' } } } }, mergePatch);
        await seen('update i1 2');
        assert.equal(informer.get('i1', 'cn-informer')?.metadata?.labels?.v, '2');

        await api.deleteNamespacedPersistentVolumeClaim({ namespace: 'cn-informer', name: 'i2' });
        await seen('delete i2');
        assert.deepEqual(informer.list('cn-informer').map((o) => o.metadata?.name).sort(), ['i1', 'i3']);
        assert.deepEqual(errors, []);
      } finally {
        stopped = true;
        await informer.stop();
      }
    });
  });
}
