/**
 * The resource quota controller, as Kubernetes' controller-manager runs it (pkg/controller/resourcequota):
 * keeps each ResourceQuota's status.hard equal to spec.hard and recounts status.used from the objects of
 * its namespace (quota-usage.ts): when a quota is new or its spec changed (status.hard differs or a used
 * value is missing), when an object it may count goes (deleted, a pod finished, a service or claim changed:
 * Kubernetes' replenishment), and for every quota once per resync period (the controller-manager's
 * --resource-quota-sync-period, 5 minutes).
 */
import { isDeepStrictEqual } from 'node:util';
import { isStatusError } from '../../registry/errors.js';
import type { KObject, KindDecl } from '../../registry/kind.js';
import type { Registry } from '../../registry/registry.js';
import type { ResourceStore } from '../../registry/store.js';
import { evaluatorFor, usageFor, usageOf, usageToList, type Usage } from '../../registry/admission/quota-usage.js';
import { runController, subscribe, type Controller } from './runner.js';

const SYSTEM = { name: 'system:serviceaccount:kube-system:resourcequota-controller', groups: ['system:serviceaccounts'] };
export const DEFAULT_QUOTA_RESYNC_MS = 5 * 60 * 1000;
/** Core kinds watched from the start for replenishment; others once a quota counts them (Kubernetes' quota monitors). */
const REPLENISHED = ['pods', 'services', 'persistentvolumeclaims', 'configmaps', 'secrets', 'replicationcontrollers', 'resourcequotas'];

/** The namespaced, stored kinds a quota may count: one declaration per stored resource, the preferred first. */
function countedKinds(registry: Registry): KindDecl[] {
  const seen = new Set<string>();
  const out: KindDecl[] = [];
  for (const k of registry.kinds) {
    if (!k.namespaced || k.compute || k.storedAs) continue;
    const key = `${k.group}/${k.resource}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(k);
  }
  return out;
}

/** status.hard and status.used as the quota should have them now. */
async function desiredStatus(registry: Registry, quota: KObject, now: number, counting: (decl: KindDecl) => void): Promise<{ hard: Record<string, unknown>; used: Record<string, string> }> {
  const hard = (quota['spec']?.hard ?? {}) as Record<string, unknown>;
  const names = Object.keys(hard);
  const namespace = quota.metadata?.namespace ?? '';
  let used: Usage = new Map([...usageOf(quota['status']?.used)].filter(([k]) => names.includes(k)));
  for (const decl of countedKinds(registry)) {
    const ev = evaluatorFor(decl.group, decl.resource);
    if (ev.matchingResources(names).length === 0) continue;
    counting(decl);
    const store = registry.store(decl.group, decl.version, decl.resource);
    if (!store) continue;
    const list = await store.list({ namespace }, {});
    const counted = usageFor(quota, ev, list.items as KObject[], names, now);
    used = new Map([...used, ...counted]);
  }
  return { hard, used: usageToList(used) };
}

export interface QuotaControllerOptions {
  resyncMs?: number;
  log?: (message: string) => void;
}

export function startResourceQuotaController(registry: Registry, opts: QuotaControllerOptions = {}): Controller {
  const quotas: ResourceStore | undefined = registry.store('', 'v1', 'resourcequotas');
  if (!quotas) return { stop() {} };
  const needsSync = (q: KObject): boolean => {
    const hard = q['spec']?.hard ?? {};
    if (!isDeepStrictEqual(q['status']?.hard ?? {}, hard)) return true;
    const used = q['status']?.used ?? {};
    return Object.keys(hard).some((k) => !(k in used));
  };
  /** Recounts one quota and writes its status when it changed; returns when to try again (ms), or null. */
  const syncQuota = async (namespace: string, name: string): Promise<number | null> => {
    let quota: KObject;
    try {
      quota = await quotas.get({ namespace }, name);
    } catch (err) {
      if (isStatusError(err, 'NotFound')) return null;
      throw err;
    }
    const want = await desiredStatus(registry, quota, Date.now(), monitor);
    if (isDeepStrictEqual(quota['status']?.hard ?? {}, want.hard) && isDeepStrictEqual(quota['status']?.used ?? {}, want.used)) return null;
    try {
      // Written over the version read (a conflict means someone charged or changed it meanwhile: count again).
      await quotas.update({ namespace, user: SYSTEM }, name, () => ({ ...quota, status: { hard: want.hard, used: want.used } }), { subresource: 'status' });
    } catch (err) {
      if (isStatusError(err, 'NotFound')) return null;
      if (isStatusError(err, 'Conflict')) return 50;
      throw err;
    }
    return null;
  };
  const controller = runController({
    name: 'resourcequota controller',
    store: quotas,
    wants: needsSync,
    sync: syncQuota,
    ...(opts.log ? { log: opts.log } : {}),
  });
  // Replenishment and resync: one recount at a time per quota, again if asked meanwhile.
  const busy = new Set<string>();
  const again = new Set<string>();
  const recountOne = (namespace: string, name: string): void => {
    const key = `${namespace}/${name}`;
    if (busy.has(key)) {
      again.add(key);
      return;
    }
    busy.add(key);
    void (async () => {
      try {
        for (let attempt = 0; attempt < 10; attempt++) {
          const retry = await syncQuota(namespace, name);
          if (retry === null) break;
          await new Promise((r) => setTimeout(r, retry));
        }
      } catch (err) {
        opts.log?.(`resourcequota controller: ${key}: ${(err as Error).message}`);
      } finally {
        busy.delete(key);
        if (again.delete(key)) recountOne(namespace, name);
      }
    })();
  };
  const recount = (namespace: string): void => {
    void quotas
      .list({ namespace }, {})
      .then((list) => {
        for (const q of list.items as KObject[]) recountOne(namespace, q.metadata?.name ?? '');
      })
      .catch(() => {});
  };
  // Replenishment: a deletion (or a change that may free usage) recounts the quotas of its namespace.
  const unsubscribes: (() => void)[] = [];
  const monitored = new Set<string>();
  function monitor(decl: KindDecl): void {
    const key = `${decl.group}/${decl.resource}`;
    if (monitored.has(key)) return;
    monitored.add(key);
    const store = registry.store(decl.group, decl.version, decl.resource);
    if (!store) return;
    const resource = decl.group === '' ? decl.resource : '';
    unsubscribes.push(
      subscribe(store, {
        event(ev) {
          const ns = ev.object.metadata?.namespace ?? '';
          if (!ns || (resource === 'resourcequotas' && ev.type !== 'DELETED')) return;
          if (ev.type === 'DELETED') recount(ns);
          else if (ev.type === 'MODIFIED') {
            if (resource === 'services' || resource === 'persistentvolumeclaims') recount(ns);
            else if (resource === 'pods') {
              const phase = ev.object['status']?.phase;
              if (phase === 'Succeeded' || phase === 'Failed' || ev.object.metadata?.deletionTimestamp) recount(ns);
            }
          }
        },
      }),
    );
  }
  for (const resource of REPLENISHED) {
    const decl = registry.store('', 'v1', resource)?.decl;
    if (decl) monitor(decl);
  }
  const timer = setInterval(() => {
    void quotas
      .list({ namespace: '' }, {})
      .then((list) => {
        for (const q of list.items as KObject[]) recountOne(q.metadata?.namespace ?? '', q.metadata?.name ?? '');
      })
      .catch(() => {});
  }, opts.resyncMs ?? DEFAULT_QUOTA_RESYNC_MS);
  timer.unref();
  return {
    stop() {
      controller.stop();
      clearInterval(timer);
      for (const u of unsubscribes) u();
    },
  };
}
