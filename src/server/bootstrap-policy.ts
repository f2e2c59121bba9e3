/**
 * Reconciles Kubernetes' bootstrap RBAC policy at start, as kube-apiserver's rbac/bootstrap-roles post-start
 * hook: missing roles and bindings are created; existing ones not annotated
 * rbac.authorization.kubernetes.io/autoupdate=false gain the rules, aggregation selectors, subjects, labels
 * and annotations they lack (nothing is removed); a binding whose roleRef differs is recreated.
 */
import { isStatusError } from '../registry/errors.js';
import type { KObject } from '../registry/kind.js';
import type { Registry } from '../registry/registry.js';
import type { ResourceStore } from '../registry/store.js';
import {
  AUTOUPDATE_ANNOTATION,
  bootstrapClusterRoleBindings,
  bootstrapClusterRoles,
  bootstrapNamespaceRoleBindings,
  bootstrapNamespaceRoles,
} from '../registry/kinds/rbac/policy.js';
import { RBAC_GROUP, type Subject } from '../registry/kinds/rbac/resolver.js';
import { covers, type PolicyRule } from '../registry/kinds/rbac/rules.js';

/** The identity the server writes its own policy as. */
export const BOOTSTRAP_USER = { name: 'system:apiserver', groups: ['system:masters', 'system:authenticated'] };

const scopeOf = (obj: KObject) => ({ namespace: obj.metadata?.namespace ?? '', user: BOOTSTRAP_USER });

/** Later maps win: existing labels and annotations keep their values. */
const merge = (...maps: (Record<string, string> | undefined)[]) => Object.assign({}, ...maps.filter(Boolean)) as Record<string, string>;

function sameMap(a: Record<string, string>, b: Record<string, string> | undefined): boolean {
  const bb = b ?? {};
  return Object.keys(a).length === Object.keys(bb).length && Object.entries(a).every(([k, v]) => bb[k] === v);
}

/** Adds the expected labels and annotations an object lacks; says whether it changed. */
function mergeMetadata(expected: KObject, next: KObject): boolean {
  const meta = next.metadata!;
  const labels = merge(expected.metadata?.labels, meta.labels);
  const annotations = merge(expected.metadata?.annotations, meta.annotations);
  let changed = false;
  if (!sameMap(labels, meta.labels)) {
    meta.labels = labels;
    changed = true;
  }
  if (!sameMap(annotations, meta.annotations)) {
    meta.annotations = annotations;
    changed = true;
  }
  return changed;
}

function reconcileRole(expected: KObject, existing: KObject): KObject | undefined {
  const next = structuredClone(existing);
  let changed = false;
  if (mergeMetadata(expected, next)) changed = true;
  const { missing } = covers((existing['rules'] as PolicyRule[] | undefined) ?? [], (expected['rules'] as PolicyRule[] | undefined) ?? []);
  if (missing.length > 0) {
    next['rules'] = [...((existing['rules'] as PolicyRule[] | undefined) ?? []), ...missing];
    changed = true;
  }
  const want = expected['aggregationRule']?.clusterRoleSelectors as unknown[] | undefined;
  if (want) {
    const have = (next['aggregationRule']?.clusterRoleSelectors as unknown[] | undefined) ?? [];
    const add = want.filter((w) => !have.some((h) => JSON.stringify(h) === JSON.stringify(w)));
    if (add.length > 0) {
      next['aggregationRule'] = { clusterRoleSelectors: [...have, ...add] };
      changed = true;
    }
  }
  return changed ? next : undefined;
}

function sameSubject(a: Subject, b: Subject): boolean {
  return a.kind === b.kind && a.name === b.name && (a.namespace ?? '') === (b.namespace ?? '') && (a.apiGroup ?? '') === (b.apiGroup ?? '');
}

function reconcileBinding(expected: KObject, existing: KObject): KObject | undefined {
  const next = structuredClone(existing);
  let changed = false;
  if (mergeMetadata(expected, next)) changed = true;
  const have = (existing['subjects'] as Subject[] | undefined) ?? [];
  const add = ((expected['subjects'] as Subject[] | undefined) ?? []).filter((w) => !have.some((h) => sameSubject(h, w)));
  if (add.length > 0) {
    next['subjects'] = [...have, ...add];
    changed = true;
  }
  return changed ? next : undefined;
}

async function reconcileOne(store: ResourceStore, expected: KObject, reconcile: (e: KObject, x: KObject) => KObject | undefined): Promise<void> {
  const name = expected.metadata!.name!;
  const scope = scopeOf(expected);
  let existing: KObject;
  try {
    existing = await store.get(scope, name);
  } catch (err) {
    if (!isStatusError(err, 'NotFound')) throw err;
    try {
      await store.create(scope, structuredClone(expected));
    } catch (e) {
      if (!isStatusError(e, 'AlreadyExists')) throw e;
    }
    return;
  }
  if (existing.metadata?.annotations?.[AUTOUPDATE_ANNOTATION] === 'false') return;
  if (expected['roleRef'] && JSON.stringify(expected['roleRef']) !== JSON.stringify(existing['roleRef'])) {
    // roleRef cannot change: the binding is recreated with the expected subjects added to its own.
    const subjects = [...((existing['subjects'] as Subject[] | undefined) ?? [])];
    for (const s of (expected['subjects'] as Subject[] | undefined) ?? []) if (!subjects.some((h) => sameSubject(h, s))) subjects.push(s);
    await store.delete(scope, name, {});
    await store.create(scope, { ...structuredClone(expected), ...(subjects.length ? { subjects } : {}) });
    return;
  }
  if (!reconcile(expected, existing)) return;
  await store.update(scope, name, (current) => {
    if (!current) throw new Error(`${name} disappeared during reconciliation`);
    return reconcile(expected, current) ?? current;
  });
}

/** Creates or updates every bootstrap role and binding (the namespaces kube-system and kube-public exist). */
export async function reconcileBootstrapPolicy(registry: Registry): Promise<void> {
  const store = (resource: string) => registry.store(RBAC_GROUP, 'v1', resource);
  const [roles, bindings, nsRoles, nsBindings] = [store('clusterroles'), store('clusterrolebindings'), store('roles'), store('rolebindings')];
  if (!roles || !bindings || !nsRoles || !nsBindings) return;
  // Each object is independent of the others: they are reconciled concurrently (one storage commit per turn).
  await Promise.all([
    ...bootstrapClusterRoles().map((r) => reconcileOne(roles, r, reconcileRole)),
    ...bootstrapClusterRoleBindings().map((b) => reconcileOne(bindings, b, reconcileBinding)),
    ...bootstrapNamespaceRoles().map((r) => reconcileOne(nsRoles, r, reconcileRole)),
    ...bootstrapNamespaceRoleBindings().map((b) => reconcileOne(nsBindings, b, reconcileBinding)),
  ]);
}
