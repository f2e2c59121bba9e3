// kubelet's topology manager (pkg/kubelet/cm/topologymanager, 1.23): at pod admission it asks each
// hint provider (the CPU and memory managers) which NUMA node sets could hold a container (scope
// container) or the whole pod (scope pod), merges the hints under --topology-manager-policy, refuses
// the pod with TopologyAffinityError when the policy cannot be met, stores the chosen hint where the
// providers' allocations read it, then has every provider allocate. Policy none skips the hints and
// only allocates.
//
// NUMA node sets are bitmasks (bit n = node n); kubelet refuses a policy other than none on machines
// with more than 8 NUMA nodes.
import type { Container, Pod } from '../types.js';

export const TOPOLOGY_POLICIES = ['none', 'best-effort', 'restricted', 'single-numa-node'] as const;
export type TopologyPolicy = (typeof TOPOLOGY_POLICIES)[number];
export type TopologyScope = 'container' | 'pod';

const MAX_NUMA_NODES = 8;

/** A NUMA affinity (null: any node, no preference) and whether it is preferred. */
export interface TopologyHint {
  affinity: number | null;
  preferred: boolean;
}

/** Hints per resource name; null (or a null list) means no preference. */
export type ResourceHints = Record<string, TopologyHint[] | null> | null;

/** An admission error with the reason kubelet gives the pod (its Type()). */
export class AdmissionError extends Error {
  constructor(
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}

export interface HintProvider {
  getTopologyHints(pod: Pod, container: Container): ResourceHints;
  getPodTopologyHints(pod: Pod): ResourceHints;
  /** Allocates for the container (reading the stored affinity); throws to refuse the pod. */
  allocate(pod: Pod, container: Container): void;
}

export const bitCount = (mask: number): number => {
  let n = 0;
  for (let m = mask; m !== 0; m &= m - 1) n++;
  return n;
};

export const bitsOf = (mask: number): number[] => {
  const out: number[] = [];
  for (let i = 0; i < 31; i++) if (mask & (1 << i)) out.push(i);
  return out;
};

export const maskOf = (nodes: number[]): number => nodes.reduce((m, n) => m | (1 << n), 0);

/** Every non-empty subset of `nodes`, smaller subsets first (kubelet's IterateBitMasks). */
export function subsetsOf(nodes: number[]): number[] {
  const out: number[] = [];
  const choose = (start: number, size: number, acc: number): void => {
    if (size === 0) {
      out.push(acc);
      return;
    }
    for (let i = start; i < nodes.length; i++) choose(i + 1, size - 1, acc | (1 << nodes[i]!));
  };
  for (let size = 1; size <= nodes.length; size++) choose(0, size, 0);
  return out;
}

const narrower = (a: number, b: number): boolean => (bitCount(a) === bitCount(b) ? a < b : bitCount(a) < bitCount(b));

/** One list of hints per provider resource; no preference becomes [{null, true}], no possible affinity [{null, false}]. */
function filterProvidersHints(providers: ResourceHints[]): TopologyHint[][] {
  const out: TopologyHint[][] = [];
  for (const hints of providers) {
    if (hints === null || Object.keys(hints).length === 0) {
      out.push([{ affinity: null, preferred: true }]);
      continue;
    }
    for (const list of Object.values(hints)) {
      if (list === null) out.push([{ affinity: null, preferred: true }]);
      else if (list.length === 0) out.push([{ affinity: null, preferred: false }]);
      else out.push(list);
    }
  }
  return out;
}

function mergeFilteredHints(numaNodes: number[], filtered: TopologyHint[][]): TopologyHint {
  const all = maskOf(numaNodes);
  let best: TopologyHint = { affinity: all, preferred: false };
  const visit = (i: number, perm: TopologyHint[]): void => {
    if (i < filtered.length) {
      for (const h of filtered[i]!) visit(i + 1, [...perm, h]);
      return;
    }
    let affinity = all;
    let preferred = true;
    for (const h of perm) {
      affinity &= h.affinity ?? all;
      if (!h.preferred) preferred = false;
    }
    if (affinity === 0) return;
    if (preferred && !best.preferred) best = { affinity, preferred };
    else if (!preferred && best.preferred) return;
    else if (narrower(affinity, best.affinity ?? all)) best = { affinity, preferred };
  };
  if (filtered.length > 0) visit(0, []);
  return best;
}

/** The policy's merge: the best hint and whether the pod may be admitted with it. */
export function mergeHints(policy: TopologyPolicy, numaNodes: number[], providers: ResourceHints[]): { hint: TopologyHint; admit: boolean } {
  let filtered = filterProvidersHints(providers);
  if (policy === 'single-numa-node') {
    filtered = filtered.map((list) => list.filter((h) => h.preferred && (h.affinity === null || bitCount(h.affinity) === 1)));
  }
  let hint = mergeFilteredHints(numaNodes, filtered);
  if (policy === 'single-numa-node' && hint.affinity === maskOf(numaNodes)) hint = { affinity: null, preferred: hint.preferred };
  const admit = policy === 'best-effort' || policy === 'none' ? true : hint.preferred;
  return { hint, admit };
}

export interface TopologyManagerOptions {
  policy: TopologyPolicy;
  scope: TopologyScope;
  numaNodes: number[];
  log?: (level: 'info' | 'error', message: string) => void;
}

/** The topology manager: the pod admission of the resource managers and the store of chosen hints. */
export class TopologyManager {
  private readonly providers: HintProvider[] = [];
  /** pod uid → container name → hint */
  private readonly hints = new Map<string, Map<string, TopologyHint>>();

  constructor(private readonly o: TopologyManagerOptions) {
    if (o.policy !== 'none' && o.numaNodes.length > MAX_NUMA_NODES) {
      throw new Error(`unsupported on machines with more than ${MAX_NUMA_NODES} NUMA Nodes`);
    }
  }

  addHintProvider(p: HintProvider): void {
    this.providers.push(p);
  }

  /** The hint chosen for a container at admission ({null, false} when none was: policy none). */
  getAffinity(podUID: string, container: string): TopologyHint {
    return this.hints.get(podUID)?.get(container) ?? { affinity: null, preferred: false };
  }

  private setHint(podUID: string, container: string, hint: TopologyHint): void {
    let m = this.hints.get(podUID);
    if (!m) this.hints.set(podUID, (m = new Map()));
    m.set(container, hint);
  }

  /** Whether any hint is kept (never under policy none). */
  holdsHints(): boolean {
    return this.hints.size > 0;
  }

  /** Forgets the hints of pods not in `active` (they are gone). */
  keepOnly(active: ReadonlySet<string>): void {
    for (const uid of [...this.hints.keys()]) if (!active.has(uid)) this.hints.delete(uid);
  }

  /**
   * Admits a pod: merges hints, allocates through every provider. Returns undefined when admitted,
   * else kubelet's reason and message (TopologyAffinityError, or the provider's error type, or
   * UnexpectedAdmissionError).
   */
  admit(pod: Pod): { reason: string; message: string } | undefined {
    const containers = [...(pod.spec.initContainers ?? []), ...pod.spec.containers];
    const uid = pod.metadata.uid;
    try {
      if (this.o.policy !== 'none' && this.o.scope === 'pod') {
        const { hint, admit } = mergeHints(this.o.policy, this.o.numaNodes, this.providers.map((p) => p.getPodTopologyHints(pod)));
        this.o.log?.('info', `Best TopologyHint for pod ${pod.metadata.namespace}/${pod.metadata.name}: ${describe(hint)}`);
        if (!admit) return topologyAffinityError();
        for (const c of containers) {
          this.setHint(uid, c.name, hint);
          for (const p of this.providers) p.allocate(pod, c);
        }
        return undefined;
      }
      for (const c of containers) {
        if (this.o.policy !== 'none') {
          const { hint, admit } = mergeHints(this.o.policy, this.o.numaNodes, this.providers.map((p) => p.getTopologyHints(pod, c)));
          this.o.log?.('info', `Best TopologyHint for pod ${pod.metadata.namespace}/${pod.metadata.name} container ${c.name}: ${describe(hint)}`);
          if (!admit) return topologyAffinityError();
          this.setHint(uid, c.name, hint);
        }
        for (const p of this.providers) p.allocate(pod, c);
      }
      return undefined;
    } catch (err) {
      if (err instanceof AdmissionError) return { reason: err.reason, message: err.message };
      const text = err instanceof Error ? err.message : String(err);
      return { reason: 'UnexpectedAdmissionError', message: `Allocate failed due to ${text}, which is unexpected` };
    }
  }
}

function topologyAffinityError(): { reason: string; message: string } {
  return { reason: 'TopologyAffinityError', message: 'Resources cannot be allocated with Topology locality' };
}

function describe(h: TopologyHint): string {
  return `{${h.affinity === null ? '<nil>' : bitsOf(h.affinity).join(',')} ${h.preferred}}`;
}
