/**
 * The garbage collector, as Kubernetes' (in a simple form that scans instead of keeping a graph):
 *  - an owner deleted with propagationPolicy=Orphan ('orphan' finalizer): its dependents lose their
 *    ownerReference to it, then the finalizer goes;
 *  - an owner deleted with propagationPolicy=Foreground ('foregroundDeletion' finalizer): its dependents are
 *    deleted, and once none with blockOwnerDeletion remains, the finalizer goes;
 *  - an object whose owners are all gone (Background, the default) is deleted; a reference to one owner that
 *    is gone, while others remain, is removed.
 * Ownership is looked up by uid across every kind the registry serves.
 */
import { isStatusError } from '../../registry/errors.js';
import type { KObject } from '../../registry/kind.js';
import type { Registry } from '../../registry/registry.js';
import type { ResourceStore } from '../../registry/store.js';
import { removeFinalizer, runController, subscribe, type Controller } from './runner.js';

const SYSTEM = { name: 'system:serviceaccount:kube-system:generic-garbage-collector', groups: ['system:serviceaccounts'] };
const ORPHAN = 'orphan';
const FOREGROUND = 'foregroundDeletion';

interface OwnerRef {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  blockOwnerDeletion?: boolean;
}

function refs(obj: KObject): OwnerRef[] {
  return (obj.metadata?.ownerReferences ?? []) as OwnerRef[];
}

function groupOf(apiVersion: string): string {
  const slash = apiVersion.indexOf('/');
  return slash < 0 ? '' : apiVersion.slice(0, slash);
}

/** Every object of every kind that names `uid` as an owner. */
async function dependentsOf(registry: Registry, uid: string): Promise<{ store: ResourceStore; obj: KObject }[]> {
  const out: { store: ResourceStore; obj: KObject }[] = [];
  for (const store of registry.all()) {
    const list = await store.list({ namespace: '' }, {});
    for (const obj of list.items as KObject[]) if (refs(obj).some((r) => r.uid === uid)) out.push({ store, obj });
  }
  return out;
}

/** Whether the owner a reference names still exists (same uid), looked up in the dependent's namespace. */
async function ownerExists(registry: Registry, ref: OwnerRef, namespace: string): Promise<boolean> {
  const store = registry.storeOfKind(groupOf(ref.apiVersion), ref.kind);
  if (!store) return true; // a kind we do not serve: leave it alone
  try {
    const owner = await store.get({ namespace: store.decl.namespaced ? namespace : '' }, ref.name);
    return owner.metadata?.uid === ref.uid;
  } catch (err) {
    if (isStatusError(err, 'NotFound')) return false;
    throw err;
  }
}

async function dropOwnerRef(store: ResourceStore, obj: KObject, uid: string): Promise<void> {
  const scope = { namespace: obj.metadata?.namespace ?? '', user: SYSTEM };
  await store.update(scope, obj.metadata!.name!, (cur) => {
    const next = structuredClone(cur!);
    const kept = refs(next).filter((r) => r.uid !== uid);
    if (kept.length > 0) next.metadata!.ownerReferences = kept;
    else delete next.metadata!.ownerReferences;
    return next;
  });
}

/** One pass over one object: its duties as an owner being deleted, then as a dependent. */
async function syncObject(registry: Registry, store: ResourceStore, namespace: string, name: string): Promise<number | null> {
  let obj: KObject;
  try {
    obj = await store.get({ namespace }, name);
  } catch (err) {
    if (isStatusError(err, 'NotFound')) return null;
    throw err;
  }
  const meta = obj.metadata!;
  const finalizers = meta.finalizers ?? [];
  if (meta.deletionTimestamp && finalizers.includes(ORPHAN)) {
    for (const d of await dependentsOf(registry, meta.uid!)) await dropOwnerRef(d.store, d.obj, meta.uid!);
    await removeFinalizer(store, obj.metadata?.namespace ?? '', obj.metadata!.name!, ORPHAN, SYSTEM);
    return null;
  }
  if (meta.deletionTimestamp && finalizers.includes(FOREGROUND)) {
    const deps = await dependentsOf(registry, meta.uid!);
    let blocking = 0;
    for (const d of deps) {
      const blocks = refs(d.obj).some((r) => r.uid === meta.uid && r.blockOwnerDeletion);
      if (blocks) blocking++;
      if (!d.obj.metadata?.deletionTimestamp) {
        try {
          await d.store.delete({ namespace: d.obj.metadata?.namespace ?? '', user: SYSTEM }, d.obj.metadata!.name!, { propagationPolicy: 'Foreground' });
        } catch (err) {
          if (!isStatusError(err, 'NotFound')) throw err;
        }
      }
    }
    if (blocking > 0) return 500;
    await removeFinalizer(store, obj.metadata?.namespace ?? '', obj.metadata!.name!, FOREGROUND, SYSTEM);
    return null;
  }
  const owners = refs(obj);
  if (owners.length === 0) return null;
  const gone: OwnerRef[] = [];
  for (const r of owners) if (!(await ownerExists(registry, r, namespace))) gone.push(r);
  if (gone.length === 0) return null;
  if (gone.length === owners.length) {
    try {
      await store.delete({ namespace, user: SYSTEM }, name, { propagationPolicy: 'Background' });
    } catch (err) {
      if (!isStatusError(err, 'NotFound')) throw err;
    }
    return null;
  }
  for (const r of gone) await dropOwnerRef(store, obj, r.uid);
  return null;
}

/**
 * Starts one collector loop per kind. Deletions of owners are noticed through their dependents: when any
 * object is deleted, every object that named it is synced.
 */
export function startGarbageCollector(registry: Registry, log?: (m: string) => void): Controller {
  const loops: Controller[] = [];
  for (const store of registry.all()) {
    loops.push(
      runController({
        name: `garbage collector (${store.decl.resource})`,
        store,
        wants: (obj) => {
          const f = obj.metadata?.finalizers ?? [];
          return (!!obj.metadata?.deletionTimestamp && (f.includes(ORPHAN) || f.includes(FOREGROUND))) || refs(obj).length > 0;
        },
        sync: (namespace, name) => syncObject(registry, store, namespace, name),
        ...(log ? { log } : {}),
      }),
    );
  }
  // An owner that disappears: sync the objects that referred to it, one deleted owner of a kind after the other.
  let stopped = false;
  const ownerGone = async (uid: string): Promise<void> => {
    if (stopped) return;
    for (const d of await dependentsOf(registry, uid)) {
      await syncObject(registry, d.store, d.obj.metadata?.namespace ?? '', d.obj.metadata!.name!).catch((err: unknown) =>
        log?.(`garbage collector: ${(err as Error).message}`),
      );
    }
  };
  const unsubscribes = registry.all().map((store) => {
    let pending: Promise<void> = Promise.resolve();
    return subscribe(store, {
      event(ev) {
        const uid = ev.type === 'DELETED' ? ev.object.metadata?.uid : undefined;
        if (!uid) return;
        pending = pending.then(() => ownerGone(uid)).catch((err: unknown) => log?.(`garbage collector: ${(err as Error).message}`));
      },
      ended(err) {
        if (err !== undefined) log?.(`garbage collector: watch ended: ${(err as Error).message}`);
      },
    });
  });
  return {
    stop() {
      stopped = true;
      for (const l of loops) l.stop();
      for (const u of unsubscribes) u();
    },
  };
}
