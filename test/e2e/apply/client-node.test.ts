/**
 * Server-side apply through @kubernetes/client-node (1.x), as a controller or GitOps tool calls it: the
 * generic KubernetesObjectApi.patch with PatchStrategy.ServerSideApply, and CoreV1Api's typed patch calls
 * with the apply Content-Type, on the object and on /status. Two managers: creation by apply, shared fields,
 * a 409 with one cause per conflicting field, force, and removal of a field the applier stops applying.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  ApiException,
  CoreV1Api,
  KubeConfig,
  KubernetesObjectApi,
  PatchStrategy,
  setHeaderOptions,
  type V1ConfigMap,
  type V1PersistentVolumeClaim,
} from '@kubernetes/client-node';
import { startCluster, type TestCluster } from '../../helpers/cluster.js';

const serverSideApply = setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply);

const configMap = (data: Record<string, string>, labels: Record<string, string> = {}): V1ConfigMap => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: 'cn-ssa', namespace: 'default', labels },
  data,
});

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

describe('server-side apply through @kubernetes/client-node', () => {
  let c: TestCluster;
  let objects: KubernetesObjectApi;
  let core: CoreV1Api;
  before(async () => {
    c = await startCluster();
    const kc = new KubeConfig();
    kc.loadFromFile(c.kubeconfig);
    objects = KubernetesObjectApi.makeApiClient(kc);
    core = kc.makeApiClient(CoreV1Api);
  });
  after(async () => c?.stop());

  const apply = (manager: string, cm: V1ConfigMap, force = false) =>
    objects.patch(cm, undefined, undefined, manager, force, PatchStrategy.ServerSideApply);
  const owners = (cm: V1ConfigMap) =>
    Object.fromEntries((cm.metadata?.managedFields ?? []).map((e) => [`${e.manager}/${e.operation}`, e.fieldsV1 as unknown]));

  it('creates by apply with the generic object API, the applier owning what it applied', async () => {
    const created = await apply('controller', configMap({ a: '1', shared: 's' }, { app: 'web' }));
    assert.deepEqual(created.data, { a: '1', shared: 's' });
    assert.deepEqual(owners(created), {
      'controller/Apply': { 'f:data': { 'f:a': {}, 'f:shared': {} }, 'f:metadata': { 'f:labels': { 'f:app': {} } } },
    });
  });

  it('shares a field applied with the same value, and refuses a different one with one cause per field', async () => {
    const shared = await apply('gitops', configMap({ shared: 's', b: '2' }));
    assert.deepEqual(owners(shared)['gitops/Apply'], { 'f:data': { 'f:b': {}, 'f:shared': {} } });

    const { code, status } = await failure(apply('gitops', configMap({ shared: 'mine', a: 'mine', b: '2' })));
    assert.equal(code, 409);
    assert.equal(status.reason, 'Conflict');
    assert.equal(status.message, 'Apply failed with 2 conflicts: conflicts with "controller":\n- .data.a\n- .data.shared');
    assert.deepEqual(status.details.causes, [
      { reason: 'FieldManagerConflict', message: 'conflict with "controller"', field: '.data.a' },
      { reason: 'FieldManagerConflict', message: 'conflict with "controller"', field: '.data.shared' },
    ]);
  });

  it('takes the fields with force, through CoreV1Api and the apply Content-Type', async () => {
    const forced = await core.patchNamespacedConfigMap(
      { name: 'cn-ssa', namespace: 'default', body: configMap({ shared: 'mine', a: 'mine', b: '2' }), fieldManager: 'gitops', force: true },
      serverSideApply,
    );
    assert.deepEqual(forced.data, { a: 'mine', b: '2', shared: 'mine' });
    assert.deepEqual(owners(forced), {
      'controller/Apply': { 'f:metadata': { 'f:labels': { 'f:app': {} } } },
      'gitops/Apply': { 'f:data': { 'f:a': {}, 'f:b': {}, 'f:shared': {} } },
    });
  });

  it('removes a field the applier stops applying', async () => {
    const r = await apply('gitops', configMap({ shared: 'mine', a: 'mine' }));
    assert.deepEqual(r.data, { a: 'mine', shared: 'mine' });
    assert.deepEqual(r.metadata?.labels, { app: 'web' }, "the other manager's label stays");
  });

  it('applies to the status subresource of a PVC', async () => {
    const pvc: V1PersistentVolumeClaim = {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'cn-ssa', namespace: 'default' },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
    };
    await objects.patch(pvc, undefined, undefined, 'provisioner', false, PatchStrategy.ServerSideApply);
    const status = await core.patchNamespacedPersistentVolumeClaimStatus(
      {
        name: 'cn-ssa',
        namespace: 'default',
        body: { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'cn-ssa' }, status: { phase: 'Bound', capacity: { storage: '1Gi' } } },
        fieldManager: 'binder',
      },
      serverSideApply,
    );
    assert.equal(status.status?.phase, 'Bound');
    const entry = status.metadata?.managedFields?.find((e) => e.manager === 'binder');
    assert.equal(entry?.operation, 'Apply');
    assert.equal(entry?.subresource, 'status');
    assert.deepEqual(entry?.fieldsV1, { 'f:status': { 'f:capacity': { 'f:storage': {} }, 'f:phase': {} } });
  });
});
