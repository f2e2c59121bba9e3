/**
 * The node lifecycle controller (kube-controller-manager's nodelifecycle, 1.23, the parts that follow node
 * health): every monitor period (5 s) it looks at each Node's Ready heartbeat and its Lease in
 * kube-node-lease. When neither changed for the grace period (--node-monitor-grace-period, 40 s), measured
 * on this controller's own clock from the moment it last saw a change, the Node's Ready, MemoryPressure,
 * DiskPressure and PIDPressure conditions become Unknown with reason NodeStatusUnknown ("Kubelet stopped
 * posting node status."; a condition the agent never posted: NodeStatusNeverUpdated). A Node whose Ready is
 * Unknown gets the node.kubernetes.io/unreachable taints, one whose Ready is False the
 * node.kubernetes.io/not-ready taints, each with effects NoSchedule and NoExecute (the NoExecute one with
 * timeAdded); they are removed when the agent posts Ready True again. Pods are not evicted (no taint manager).
 */
import { isStatusError } from '../../registry/errors.js';
import type { KObject } from '../../registry/kind.js';
import type { Registry } from '../../registry/registry.js';
import type { Controller } from './runner.js';

const SYSTEM = { name: 'system:serviceaccount:kube-system:node-controller', groups: ['system:serviceaccounts'] };
const CONDITIONS = ['Ready', 'MemoryPressure', 'DiskPressure', 'PIDPressure'];
export const TAINT_UNREACHABLE = 'node.kubernetes.io/unreachable';
export const TAINT_NOT_READY = 'node.kubernetes.io/not-ready';

export interface NodeLifecycleOptions {
  /** --node-monitor-grace-period (40 s). */
  gracePeriodMs?: number;
  /** --node-monitor-period (5 s). */
  monitorPeriodMs?: number;
  log?: (message: string) => void;
}

interface Health {
  /** When this controller last saw the heartbeat or the lease change (ms, its own clock). */
  probe: number;
  heartbeat: string;
  renew: string;
}

const rfc3339 = (ms: number): string => new Date(ms).toISOString().slice(0, 19) + 'Z';

/** The node's conditions with the four kubelet conditions set to Unknown (those not Unknown already). */
export function unknownConditions(node: KObject, now: number): KObject[] | null {
  const conds: KObject[] = structuredClone(node.status?.conditions ?? []);
  let changed = false;
  for (const type of CONDITIONS) {
    const c = conds.find((x) => x.type === type);
    if (!c) {
      conds.push({
        type,
        status: 'Unknown',
        lastHeartbeatTime: node.metadata?.creationTimestamp,
        lastTransitionTime: rfc3339(now),
        reason: 'NodeStatusNeverUpdated',
        message: 'Kubelet never posted node status.',
      });
      changed = true;
    } else if (c.status !== 'Unknown') {
      Object.assign(c, { status: 'Unknown', lastTransitionTime: rfc3339(now), reason: 'NodeStatusUnknown', message: 'Kubelet stopped posting node status.' });
      changed = true;
    }
  }
  return changed ? conds : null;
}

/** The node's taints with the controller's not-ready/unreachable taints as its Ready condition asks; null when unchanged. */
export function reconcileTaints(node: KObject, now: number): KObject[] | null {
  const ready = (node.status?.conditions ?? []).find((c: KObject) => c.type === 'Ready');
  const want = ready?.status === 'Unknown' ? TAINT_UNREACHABLE : ready?.status === 'False' ? TAINT_NOT_READY : undefined;
  const taints: KObject[] = node.spec?.taints ?? [];
  const ours = (t: KObject): boolean => t.key === TAINT_UNREACHABLE || t.key === TAINT_NOT_READY;
  const have = taints.filter(ours);
  const ok = want === undefined ? have.length === 0 : have.length === 2 && have.every((t) => t.key === want) && new Set(have.map((t) => t.effect)).size === 2;
  if (ok) return null;
  const next = taints.filter((t) => !ours(t));
  if (want !== undefined) next.push({ key: want, effect: 'NoSchedule' }, { key: want, effect: 'NoExecute', timeAdded: rfc3339(now) });
  return next;
}

export function startNodeLifecycleController(registry: Registry, opts: NodeLifecycleOptions = {}): Controller {
  const nodes = registry.store('', 'v1', 'nodes');
  const leases = registry.store('coordination.k8s.io', 'v1', 'leases');
  if (!nodes || !leases) return { stop: () => {} };
  const grace = opts.gracePeriodMs ?? 40_000;
  const health = new Map<string, Health>();
  let running = false;
  let stopped = false;

  const pass = async (): Promise<void> => {
    const now = Date.now();
    const nodeList = (await nodes.list({ namespace: '' }, {})).items as KObject[];
    const leaseList = (await leases.list({ namespace: 'kube-node-lease' }, {})).items as KObject[];
    const renewOf = new Map(leaseList.map((l) => [String(l.metadata?.name), String(l.spec?.renewTime ?? '')]));
    const seen = new Set<string>();
    for (const node of nodeList) {
      const name = String(node.metadata?.name);
      seen.add(name);
      const heartbeat = String((node.status?.conditions ?? []).find((c: KObject) => c.type === 'Ready')?.lastHeartbeatTime ?? '');
      const renew = renewOf.get(name) ?? '';
      const h = health.get(name);
      if (!h) health.set(name, { probe: now, heartbeat, renew });
      else if (h.heartbeat !== heartbeat || h.renew !== renew) Object.assign(h, { probe: now, heartbeat, renew });
      let current = node;
      if (now - health.get(name)!.probe > grace && unknownConditions(node, now)) {
        current = await update(name, 'status', (n) => {
          const conditions = unknownConditions(n, now);
          return conditions ? { ...n, status: { ...(n.status ?? {}), conditions } } : n;
        });
        opts.log?.(`node lifecycle controller: node ${name} stopped posting status: conditions Unknown`);
      }
      if (reconcileTaints(current, now)) {
        await update(name, '', (n) => {
          const taints = reconcileTaints(n, now);
          if (!taints) return n;
          const spec = { ...(n.spec ?? {}) };
          if (taints.length > 0) spec.taints = taints;
          else delete spec.taints;
          return { ...n, spec };
        });
      }
    }
    for (const name of [...health.keys()]) if (!seen.has(name)) health.delete(name);
  };

  const update = async (name: string, subresource: string, build: (n: KObject) => KObject): Promise<KObject> => {
    try {
      const r = await nodes.update({ namespace: '', user: SYSTEM, fieldManager: 'node-controller' }, name, (cur) => {
        if (!cur) throw new Error('gone');
        return build(structuredClone(cur));
      }, { subresource });
      return r.object;
    } catch (err) {
      if (isStatusError(err, 'NotFound') || (err as Error).message === 'gone') return {};
      throw err;
    }
  };

  const timer = setInterval(() => {
    if (running || stopped) return;
    running = true;
    pass()
      .catch((err: unknown) => opts.log?.(`node lifecycle controller: ${(err as Error).message}`))
      .finally(() => (running = false));
  }, opts.monitorPeriodMs ?? 5000);
  timer.unref();
  return {
    stop() {
      stopped = true;
      clearInterval(timer);
    },
  };
}
