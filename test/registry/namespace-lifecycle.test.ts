/**
 * NamespaceLifecycle admission with its cache of namespace phases: a namespace just created is found, one
 * just marked Terminating or deleted refuses content at once, and changes made by another writer of the
 * same storage (another server) are learned from the watch.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { openSqlite } from '../../src/storage/sqlite.js';
import type { KV } from '../../src/storage/interface.js';
import { ResourceStore } from '../../src/registry/store.js';
import { StatusError } from '../../src/registry/errors.js';
import type { KObject } from '../../src/registry/kind.js';
import { namespaceKind } from '../../src/registry/kinds/namespace.js';
import { pvcKind } from '../../src/registry/kinds/pvc.js';
import { chainAdmission, namespaceLifecycle } from '../../src/registry/admission/namespace-lifecycle.js';
import type { Admission, AdmissionAttributes, Operation } from '../../src/registry/store.js';
import { podKind } from '../../src/registry/kinds/pod/index.js';
import { eventually } from '../helpers/eventually.js';

async function code(p: Promise<unknown>): Promise<number> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof StatusError, String(err));
    return err.code;
  }
  return 0;
}

const claim = (name: string): KObject => ({
  apiVersion: 'v1',
  kind: 'PersistentVolumeClaim',
  metadata: { name },
  spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
});
const namespace = (name: string): KObject => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });


describe('NamespaceLifecycle admission', () => {
  let kv: KV;
  let namespaces: ResourceStore;
  let claims: ResourceStore;
  before(async () => {
    kv = await openSqlite({ path: ':memory:' });
    const admission = namespaceLifecycle(() => namespaces);
    namespaces = new ResourceStore(namespaceKind, { kv, prefix: '/registry', featureGates: {}, admission });
    claims = new ResourceStore(pvcKind, { kv, prefix: '/registry', featureGates: {}, admission });
  });
  after(async () => kv.close());

  it('admits content in a namespace created just before, and refuses it in one that does not exist', async () => {
    assert.equal(await code(claims.create({ namespace: 'nowhere' }, claim('a'))), 404);
    await namespaces.create({ namespace: '' }, namespace('fresh'));
    assert.equal(await code(claims.create({ namespace: 'fresh' }, claim('a'))), 0);
    assert.equal(await code(claims.create({ namespace: 'fresh' }, claim('b'))), 0);
  });

  it('refuses content at once in a namespace just marked Terminating, and in one just deleted', async () => {
    await namespaces.create({ namespace: '' }, namespace('doomed'));
    assert.equal(await code(claims.create({ namespace: 'doomed' }, claim('a'))), 0);
    await namespaces.delete({ namespace: '' }, 'doomed');
    assert.equal(await code(claims.create({ namespace: 'doomed' }, claim('b'))), 403);
    // Without its finalizer the namespace goes on the next delete.
    await namespaces.update({ namespace: '' }, 'doomed', (cur) => ({ ...cur!, spec: { finalizers: [] } }), { subresource: 'finalize' });
    await code(namespaces.delete({ namespace: '' }, 'doomed'));
    assert.equal(await code(namespaces.get({ namespace: '' }, 'doomed')), 404);
    assert.equal(await code(claims.create({ namespace: 'doomed' }, claim('c'))), 404);
    // Created again: found again.
    await namespaces.create({ namespace: '' }, namespace('doomed'));
    assert.equal(await code(claims.create({ namespace: 'doomed' }, claim('d'))), 0);
  });

  it('learns of changes another writer of the storage makes', async () => {
    await namespaces.create({ namespace: '' }, namespace('shared'));
    assert.equal(await code(claims.create({ namespace: 'shared' }, claim('a'))), 0);
    // Another server marks it Terminating, writing to storage directly.
    const key = namespaces.key('', 'shared');
    const { kv: cur } = await kv.get(key);
    const obj = JSON.parse(Buffer.from(cur!.value).toString()) as KObject;
    obj.status = { phase: 'Terminating' };
    await kv.update(key, Buffer.from(JSON.stringify(obj)), cur!.modRevision);
    await eventually('creates refused with 403', async () => (await code(claims.create({ namespace: 'shared' }, claim(`x${Date.now()}`)))) === 403, { timeoutMs: 5000, intervalMs: 10 });
  });
});

describe('admission chain', () => {
  it('calls, in order, only the plugins that handle the kind and operation, and only those that handle CONNECT for it', async () => {
    const calls: string[] = [];
    const plugin = (name: string, handles?: Admission['handles'], handlesConnect = false): Admission => ({
      ...(handles ? { handles } : {}),
      ...(handlesConnect ? { handlesConnect } : {}),
      mutate: async (a) => void calls.push(`${name} mutate ${a.decl.resource} ${a.operation}`),
      validate: async (a) => void calls.push(`${name} validate ${a.decl.resource} ${a.operation}`),
    });
    const chain = chainAdmission([
      plugin('all'),
      plugin('pods', (d) => d.resource === 'pods'),
      plugin('pvc-create', (d, op) => d.resource === 'persistentvolumeclaims' && op === 'CREATE'),
      plugin('exec', undefined, true),
    ]);
    const attrs = (decl: AdmissionAttributes['decl'], operation: Operation): AdmissionAttributes => ({
      operation, decl, namespace: 'ns', name: 'x', subresource: '', object: {}, dryRun: false, warnings: [], annotate: () => {},
    });
    for (const [decl, op] of [[pvcKind, 'CREATE'], [pvcKind, 'UPDATE'], [podKind, 'DELETE'], [pvcKind, 'CREATE'], [podKind, 'CONNECT']] as const) {
      await chain.mutate!(attrs(decl, op));
      await chain.validate!(attrs(decl, op));
    }
    assert.deepEqual(calls, [
      'all mutate persistentvolumeclaims CREATE', 'pvc-create mutate persistentvolumeclaims CREATE', 'exec mutate persistentvolumeclaims CREATE',
      'all validate persistentvolumeclaims CREATE', 'pvc-create validate persistentvolumeclaims CREATE', 'exec validate persistentvolumeclaims CREATE',
      'all mutate persistentvolumeclaims UPDATE', 'exec mutate persistentvolumeclaims UPDATE',
      'all validate persistentvolumeclaims UPDATE', 'exec validate persistentvolumeclaims UPDATE',
      'all mutate pods DELETE', 'pods mutate pods DELETE', 'exec mutate pods DELETE',
      'all validate pods DELETE', 'pods validate pods DELETE', 'exec validate pods DELETE',
      'all mutate persistentvolumeclaims CREATE', 'pvc-create mutate persistentvolumeclaims CREATE', 'exec mutate persistentvolumeclaims CREATE',
      'all validate persistentvolumeclaims CREATE', 'pvc-create validate persistentvolumeclaims CREATE', 'exec validate persistentvolumeclaims CREATE',
      'exec mutate pods CONNECT', 'exec validate pods CONNECT',
    ]);
    assert.equal(chain.handlesConnect, true);
  });
});
