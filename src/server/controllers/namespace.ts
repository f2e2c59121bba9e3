/**
 * The namespace controller, as Kubernetes' namespace deleter: for a namespace being deleted, deletes every
 * namespaced object in it, reports progress in the namespace's conditions, and once nothing remains removes
 * the 'kubernetes' finalizer through the finalize subresource, after which the namespace disappears.
 * In-process: it works on the registry directly, and keeps at most one pass per namespace at a time.
 */
import { isStatusError } from '../../registry/errors.js';
import type { KObject } from '../../registry/kind.js';
import {
  FINALIZER_KUBERNETES,
  NAMESPACE_CONDITION_FAILED_REASONS,
  NAMESPACE_CONDITION_OK,
  NAMESPACE_CONDITION_TYPES,
  contentDeletionFailedMessage,
  someFinalizersRemainMessage,
  someResourcesRemainMessage,
  type NamespaceConditionType,
} from '../../registry/kinds/namespace.js';
import type { Registry } from '../../registry/registry.js';
import type { ResourceStore } from '../../registry/store.js';
import { runController, type Controller } from './runner.js';

const SYSTEM: { name: string; groups: string[] } = { name: 'system:serviceaccount:kube-system:namespace-controller', groups: ['system:serviceaccounts'] };

export function startNamespaceController(registry: Registry, log: (m: string) => void = () => {}): Controller {
  const namespaces = registry.store('', 'v1', 'namespaces')!;
  return runController({
    name: 'namespace controller',
    store: namespaces,
    wants: (ns) => !!ns.metadata?.deletionTimestamp,
    sync: (_ns, name) => syncNamespace(registry, namespaces, name),
    log,
  });
}

function setCondition(ns: KObject, type: NamespaceConditionType, failed: string | null): void {
  const status = (ns.status ??= {});
  const conditions: KObject[] = (status.conditions ??= []);
  const ok = NAMESPACE_CONDITION_OK[type];
  const want = failed === null
    ? { type, status: 'False', reason: ok.reason, message: ok.message }
    : { type, status: 'True', reason: NAMESPACE_CONDITION_FAILED_REASONS[type], message: failed };
  const existing = conditions.find((c) => c.type === type);
  if (existing && existing.status === want.status && existing.reason === want.reason && existing.message === want.message) return;
  const next = { ...want, lastTransitionTime: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z') };
  if (existing) Object.assign(existing, next);
  else conditions.push(next);
  conditions.sort((a, b) => NAMESPACE_CONDITION_TYPES.indexOf(a.type) - NAMESPACE_CONDITION_TYPES.indexOf(b.type));
}

/** One pass over a namespace being deleted; returns when to look again (ms), or null when done. */
async function syncNamespace(registry: Registry, namespaces: ResourceStore, name: string): Promise<number | null> {
  let ns: KObject;
  try {
    ns = await namespaces.get({ namespace: '' }, name);
  } catch (err) {
    if (isStatusError(err, 'NotFound')) return null;
    throw err;
  }
  if (!ns.metadata?.deletionTimestamp) return null;
  const finalizers: string[] = ns.spec?.finalizers ?? [];
  if (!finalizers.includes(FINALIZER_KUBERNETES)) {
    // Nothing for us to do but finish the delete once other spec finalizers are gone.
    return finalizers.length > 0 ? null : (await deleteNamespace(namespaces, name), null);
  }
  const scope = { namespace: name, user: SYSTEM };
  const failures: string[] = [];
  const remaining: { resource: string; group: string; count: number }[] = [];
  const finalizerCounts = new Map<string, number>();
  for (const store of registry.all()) {
    if (!store.decl.namespaced) continue;
    try {
      await store.deleteCollection(scope, {}, {});
      const left = (await store.list(scope, {})).items as KObject[];
      if (left.length > 0) {
        remaining.push({ resource: store.decl.resource, group: store.decl.group, count: left.length });
        for (const item of left) {
          for (const f of item.metadata?.finalizers ?? []) finalizerCounts.set(f, (finalizerCounts.get(f) ?? 0) + 1);
        }
      }
    } catch (err) {
      failures.push(`${store.decl.resource}.${store.decl.group}: ${(err as Error).message}`);
    }
  }
  const updated = structuredClone(ns);
  setCondition(updated, 'NamespaceDeletionDiscoveryFailure', null);
  setCondition(updated, 'NamespaceDeletionGroupVersionParsingFailure', null);
  setCondition(updated, 'NamespaceDeletionContentFailure', failures.length ? contentDeletionFailedMessage(failures) : null);
  setCondition(updated, 'NamespaceContentRemaining', remaining.length ? someResourcesRemainMessage(remaining) : null);
  setCondition(
    updated,
    'NamespaceFinalizersRemaining',
    finalizerCounts.size ? someFinalizersRemainMessage([...finalizerCounts].map(([finalizer, count]) => ({ finalizer, count }))) : null,
  );
  try {
    await namespaces.update({ namespace: '', user: SYSTEM }, name, () => updated, { subresource: 'status' });
  } catch (err) {
    if (isStatusError(err, 'NotFound')) return null;
    if (!isStatusError(err, 'Conflict')) throw err;
    return 100;
  }
  // Kubernetes waits its estimate (15 s while finalizers remain); looking again each second ends sooner.
  if (failures.length > 0 || remaining.length > 0) return 1000;
  // Everything is gone: remove our finalizer; the update deletes the namespace when no finalizer is left.
  await namespaces.update(
    { namespace: '', user: SYSTEM },
    name,
    (cur) => {
      const next = structuredClone(cur!);
      next.spec = { ...(next.spec ?? {}), finalizers: (next.spec?.finalizers ?? []).filter((f: string) => f !== FINALIZER_KUBERNETES) };
      return next;
    },
    { subresource: 'finalize' },
  );
  await deleteNamespace(namespaces, name);
  return null;
}

async function deleteNamespace(namespaces: ResourceStore, name: string): Promise<void> {
  try {
    await namespaces.delete({ namespace: '', user: SYSTEM }, name);
  } catch (err) {
    if (!isStatusError(err, 'NotFound')) throw err;
  }
}
