/**
 * ResourceQuota admission, as Kubernetes 1.23's (plugin/pkg/admission/resourcequota and its evaluator): a
 * create (or, for services and claims, an update) in a namespace is checked against every ResourceQuota of
 * the namespace that counts it (one of its status.hard resources, and all its scopes):
 *   - "failed quota: <name>: must specify ..." when a pod's container does not state a cpu or memory the
 *     quota limits;
 *   - "status unknown for quota: <name>, resources: ..." while the quota controller has not counted it yet;
 *   - "exceeded quota: <name>, requested: ..., used: ..., limited: ..." when used plus the request (the
 *     change, for updates) would pass hard;
 *   - "insufficient quota to consume: ..." when the configuration (ResourceQuotaConfiguration
 *     limitedResources) says a resource may only be consumed under a quota and none covers it.
 * All as 403 Forbidden on the object. An admitted request is charged at once to status.used of each quota
 * (not for dry runs; the used value is rechecked on the fresh quota), so that the next request sees it before
 * the quota controller recounts.
 */
import type { KObject } from '../kind.js';
import type { Admission, AdmissionAttributes, ResourceStore } from '../store.js';
import { apiErrors, isStatusError } from '../errors.js';
import { ObjectCache } from '../kinds/rbac/cache.js';
import {
  addUsage,
  evaluatorFor,
  maskUsage,
  prettyPrint,
  quotaMatches,
  scopeSelectorsOf,
  subtractUsage,
  usageOf,
  usageToList,
  type Evaluator,
  type Usage,
} from './quota-usage.js';
import type { PluginConfig } from './plugin-config.js';

export interface LimitedResource {
  apiGroup: string;
  resource: string;
  matchContains: string[];
  matchScopes: { scopeName: string; operator: string; values: string[] }[];
}

/** ResourceQuotaConfiguration (apiserver.config.k8s.io/v1, resourcequota.admission.k8s.io/v1beta1 and v1alpha1). */
export interface QuotaConfiguration {
  limitedResources: LimitedResource[];
}

const CONFIG_VERSIONS = ['apiserver.config.k8s.io/v1', 'resourcequota.admission.k8s.io/v1beta1', 'resourcequota.admission.k8s.io/v1alpha1'];

/** Reads the plugin's configuration; throws Error with Kubernetes' wording when it is not one. */
export function parseQuotaConfig(cfg: PluginConfig | undefined): QuotaConfiguration {
  if (!cfg) return { limitedResources: [] };
  const o = cfg.object as Record<string, any> | null;
  if (!o || typeof o !== 'object' || o['kind'] !== 'ResourceQuotaConfiguration' || !CONFIG_VERSIONS.includes(o['apiVersion'])) {
    throw new Error(`unable to decode ResourceQuota configuration from ${cfg.source}: expected kind ResourceQuotaConfiguration of ${CONFIG_VERSIONS.join(', ')}`);
  }
  const limited = Array.isArray(o['limitedResources']) ? (o['limitedResources'] as Record<string, any>[]) : [];
  return {
    limitedResources: limited.map((l) => ({
      apiGroup: String(l['apiGroup'] ?? ''),
      resource: String(l['resource'] ?? ''),
      matchContains: Array.isArray(l['matchContains']) ? (l['matchContains'] as unknown[]).map(String) : [],
      matchScopes: (Array.isArray(l['matchScopes']) ? (l['matchScopes'] as Record<string, any>[]) : []).map((s) => ({
        scopeName: String(s['scopeName'] ?? ''),
        operator: String(s['operator'] ?? ''),
        values: Array.isArray(s['values']) ? (s['values'] as unknown[]).map(String) : [],
      })),
    })),
  };
}

const SYSTEM_USER = { name: 'system:apiserver', groups: ['system:masters'] };

function forbidden(a: AdmissionAttributes, message: string) {
  return apiErrors.forbidden({ group: a.decl.group, resource: a.decl.resource }, a.name, message);
}

const positive = (u: Usage) => new Map([...u].filter(([, v]) => v.milli !== 0n));

/** LessThanOrEqual: the resources of `a` over `hard`. */
function exceeded(a: Usage, hard: Usage): string[] {
  const out: string[] = [];
  for (const [k, v] of a) {
    const h = hard.get(k);
    if (h && v.milli > h.milli) out.push(k);
  }
  return out;
}

export function resourceQuotaAdmission(deps: { quotas: () => ResourceStore | undefined; config?: QuotaConfiguration; now?: () => number }): Admission {
  let cache: ObjectCache | undefined;
  const limited = deps.config?.limitedResources ?? [];
  const now = deps.now ?? Date.now;

  async function quotasIn(namespace: string): Promise<{ store: ResourceStore; quotas: readonly KObject[] } | undefined> {
    const store = deps.quotas();
    if (!store) return undefined;
    cache ??= new ObjectCache(store);
    if (!cache.isReady) await cache.ready();
    return { store, quotas: cache.list(namespace) };
  }

  /** The checks of one quota against a request's usage; the usage it charges (may be empty). */
  function check(a: AdmissionAttributes, ev: Evaluator, quota: KObject, delta: Usage): Usage | undefined {
    if (!quotaMatches(quota, ev, a.object!)) return undefined;
    const name = quota.metadata?.name ?? '';
    const hard = usageOf(quota['status']?.hard);
    const used = usageOf(quota['status']?.used);
    const restricted = ev.matchingResources([...hard.keys()]);
    const violated = ev.constraints?.(restricted, a.object!);
    if (violated) throw forbidden(a, `failed quota: ${name}: ${violated}`);
    const unknown = restricted.filter((r) => !used.has(r));
    if (unknown.length > 0) throw forbidden(a, `status unknown for quota: ${name}, resources: ${[...restricted].sort().join(',')}`);
    const requested = maskUsage(delta, hard.keys());
    const newUsed = maskUsage(addUsage(used, requested), requested.keys());
    const over = exceeded(newUsed, hard);
    if (over.length > 0) {
      throw forbidden(
        a,
        `exceeded quota: ${name}, requested: ${prettyPrint(maskUsage(requested, over))}, used: ${prettyPrint(maskUsage(used, over))}, limited: ${prettyPrint(maskUsage(hard, over))}`,
      );
    }
    return requested;
  }

  /** Adds the request to a quota's status.used, rechecking against the quota as it is now. */
  async function charge(a: AdmissionAttributes, ev: Evaluator, store: ResourceStore, quota: KObject, delta: Usage): Promise<void> {
    const name = quota.metadata?.name ?? '';
    await store.update(
      { namespace: a.namespace, user: SYSTEM_USER },
      name,
      (cur) => {
        if (!cur) throw apiErrors.notFound({ group: '', resource: 'resourcequotas' }, name);
        const requested = check(a, ev, cur, delta);
        if (!requested || requested.size === 0) return cur;
        const next = structuredClone(cur);
        const used = addUsage(usageOf(cur['status']?.used), requested);
        next['status'] = { ...(next['status'] ?? {}), used: usageToList(used) };
        return next;
      },
      { subresource: 'status' },
    );
  }

  return {
    async validate(a) {
      if (a.subresource !== '' || a.namespace === '' || !a.object) return;
      if (a.operation !== 'CREATE' && a.operation !== 'UPDATE') return;
      if (a.decl.group === '' && a.decl.resource === 'resourcequotas' && a.operation === 'UPDATE') return;
      const ev = evaluatorFor(a.decl.group, a.decl.resource);
      if (!ev.handles(a.operation)) return;
      const found = await quotasIn(a.namespace);
      if (!found) return;
      const mine = limited.filter((l) => l.apiGroup === a.decl.group && l.resource === a.decl.resource);
      if (found.quotas.length === 0 && mine.length === 0) return;
      const t = now();
      let delta = ev.usage(a.object, t);
      if (a.operation === 'UPDATE' && a.oldObject?.metadata?.resourceVersion) {
        // SubtractWithNonNegativeResult
        delta = new Map([...subtractUsage(delta, ev.usage(a.oldObject, t))].map(([k, v]) => [k, v.milli < 0n ? { ...v, milli: 0n } : v]));
      }
      delta = positive(delta);
      if (delta.size === 0) return;
      const interesting: { quota: KObject; requested: Usage }[] = [];
      const covered = new Set<string>();
      for (const quota of found.quotas) {
        const requested = check(a, ev, quota, delta);
        if (!requested) continue;
        interesting.push({ quota, requested });
        for (const r of ev.matchingResources(Object.keys(quota['status']?.hard ?? {}))) covered.add(r);
      }
      // limitedResources: what may be consumed only under a quota that covers it.
      const limitedNames = new Set<string>();
      for (const l of mine) {
        for (const [k, v] of delta) if (v.milli > 0n && l.matchContains.some((m) => k.includes(m))) limitedNames.add(k);
      }
      const uncovered = [...limitedNames].filter((n) => !covered.has(n)).sort();
      if (uncovered.length > 0) throw forbidden(a, `insufficient quota to consume: ${uncovered.join(',')}`);
      const scopes = mine.flatMap((l) => l.matchScopes).filter((s) => ev.matchesScope(s, a.object!));
      const uncoveredScopes = scopes.filter(
        (s) => !found.quotas.some((q) => scopeSelectorsOf(q).some((qs) => qs.scopeName === s.scopeName && qs.operator === s.operator)),
      );
      if (uncoveredScopes.length > 0) {
        throw forbidden(a, `insufficient quota to match these scopes: [${uncoveredScopes.map((s) => `{${s.scopeName} ${s.operator} [${s.values.join(' ')}]}`).join(' ')}]`);
      }
      if (a.dryRun) return;
      for (const { quota, requested } of interesting) {
        if (requested.size === 0) continue;
        try {
          await charge(a, ev, found.store, quota, delta);
        } catch (err) {
          if (isStatusError(err, 'NotFound')) continue;
          throw err;
        }
      }
    },
  };
}
