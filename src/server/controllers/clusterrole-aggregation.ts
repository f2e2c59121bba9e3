/**
 * The clusterrole-aggregation controller, as kube-controller-manager's: a ClusterRole with an aggregationRule
 * gets as rules the union (first occurrence kept, roles in name order) of the rules of every other ClusterRole
 * its selectors match; it is rewritten only when that differs from its rules.
 */
import type { KObject } from '../../registry/kind.js';
import type { Registry } from '../../registry/registry.js';
import type { ObjectCache } from '../../registry/kinds/rbac/cache.js';
import { RBAC_GROUP } from '../../registry/kinds/rbac/resolver.js';
import { labelSelectorAsSelector, matches, type LabelSelectorSpec } from '../../util/labels.js';
import type { Controller } from './runner.js';

const USER = { name: 'system:serviceaccount:kube-system:clusterrole-aggregation-controller', groups: ['system:masters', 'system:authenticated'] };

/** The rules an aggregated role should hold, from the roles in the cache. */
export function aggregatedRules(owner: KObject, roles: readonly KObject[]): unknown[] {
  const selectors = ((owner['aggregationRule']?.clusterRoleSelectors as LabelSelectorSpec[] | undefined) ?? []).flatMap((s) => {
    try {
      return [labelSelectorAsSelector(s)];
    } catch {
      return [];
    }
  });
  const out: unknown[] = [];
  const seen = new Set<string>();
  const sorted = [...roles].sort((a, b) => ((a.metadata?.name ?? '') < (b.metadata?.name ?? '') ? -1 : 1));
  for (const role of sorted) {
    if (role.metadata?.name === owner.metadata?.name) continue;
    if (!selectors.some((sel) => matches(sel, role.metadata?.labels))) continue;
    for (const rule of (role['rules'] as unknown[] | undefined) ?? []) {
      const key = JSON.stringify(rule);
      if (seen.has(key)) continue;
      seen.add(key);
      out.push(structuredClone(rule));
    }
  }
  return out;
}

export function startClusterRoleAggregation(registry: Registry, cache: ObjectCache, log: (m: string) => void): Controller {
  const store = registry.store(RBAC_GROUP, 'v1', 'clusterroles');
  let scheduled = false;
  let stopped = false;
  let running: Promise<void> = Promise.resolve();

  const sync = async (): Promise<void> => {
    if (!store) return;
    const roles = cache.list();
    for (const owner of roles) {
      if (!owner['aggregationRule']) continue;
      const want = aggregatedRules(owner, roles);
      if (JSON.stringify(want) === JSON.stringify(owner['rules'] ?? [])) continue;
      try {
        await store.update({ namespace: '', user: USER }, owner.metadata!.name!, (current) => {
          if (!current) throw new Error('gone');
          return { ...structuredClone(current), rules: aggregatedRules(current, cache.list()) };
        });
      } catch (err) {
        if (!stopped) log(`clusterrole-aggregation: ${owner.metadata?.name ?? ''}: ${(err as Error).message}`);
      }
    }
  };
  const schedule = (): void => {
    if (scheduled || stopped) return;
    scheduled = true;
    setImmediate(() => {
      scheduled = false;
      running = running.then(sync, sync);
    });
  };
  const unsubscribe = cache.onChange(schedule);
  void cache.ready().then(schedule, (err: Error) => log(`clusterrole-aggregation: ${err.message}`));
  return {
    stop() {
      stopped = true;
      unsubscribe();
    },
  };
}
