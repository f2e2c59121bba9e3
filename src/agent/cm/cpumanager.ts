// kubelet's CPU manager (pkg/kubelet/cm/cpumanager, 1.23) with its two policies:
//   - none: nothing is pinned; the state file only records the policy;
//   - static: containers of Guaranteed pods with an integer CPU request get CPUs of their own; every
//     other container runs on the shared pool (defaultCpuSet: all CPUs not given out, including the
//     reserved ones, which are never given out).
// State lives in `cpu_manager_state` under --root-dir (checkpoint.ts); a file written under another
// policy, or inconsistent with this machine, stops the agent from starting, as kubelet does.
// Allocation happens at admission (through the topology manager, with NUMA hints); the cpuset goes
// to the runtime when the container is created; the reconcile loop (--cpu-manager-reconcile-period)
// pushes each running container's current cpuset (the shared pool shrinks and grows as exclusive
// CPUs are given out and returned) through the runtime's UpdateContainerResources; CPUs of pods no
// longer active go back to the shared pool there too.
import { join } from 'node:path';
import { tryParseQuantity } from '../../util/quantity.js';
import { qosClass } from '../status.js';
import type { Container, Pod, PodStatus } from '../types.js';
import { decodeCPUCheckpoint, readCheckpointFile, writeCPUCheckpoint } from './checkpoint.js';
import { CPUSet } from './cpuset.js';
import type { CPUTopology } from './machine.js';
import { AdmissionError, bitCount, bitsOf, subsetsOf, type HintProvider, type ResourceHints, type TopologyHint } from './topologymanager.js';

export const CPU_MANAGER_STATE_FILE = 'cpu_manager_state';
export const FULL_PCPUS_ONLY = 'full-pcpus-only';

/** The options of the static policy (--cpu-manager-policy-options), checked as kubelet 1.23 does. */
export function staticPolicyOptions(options: Record<string, string>, gates: Record<string, boolean>): { fullPCPUsOnly: boolean } {
  const out = { fullPCPUsOnly: false };
  for (const [name, value] of Object.entries(options)) {
    if (name !== FULL_PCPUS_ONLY) throw new Error(`unknown CPU Manager Policy option: ${JSON.stringify(name)}`);
    if (gates.CPUManagerPolicyBetaOptions === false) throw new Error(`CPU Manager Policy Beta-level Options not enabled, but option ${JSON.stringify(name)} provided`);
    const v = parseGoBool(value);
    if (v === undefined) throw new Error(`bad value for option ${JSON.stringify(name)}: strconv.ParseBool: parsing ${JSON.stringify(value)}: invalid syntax`);
    out.fullPCPUsOnly = v;
  }
  return out;
}

function parseGoBool(s: string): boolean | undefined {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(s)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(s)) return false;
  return undefined;
}

/** CPUs a container gets for itself: its integer CPU request in a Guaranteed pod, else 0. */
export function guaranteedCPUs(pod: Pod, c: Container): number {
  if (qosClass(pod) !== 'Guaranteed') return 0;
  // requests default to limits (API defaulting; pods from files may carry limits only)
  const r = c.resources as { requests?: Record<string, unknown>; limits?: Record<string, unknown> } | undefined;
  const raw = r?.requests?.cpu ?? r?.limits?.cpu;
  const q = typeof raw === 'string' || typeof raw === 'number' ? tryParseQuantity(String(raw)) : undefined;
  if (!q) return 0;
  const milli = q.milliValue();
  return milli % 1000n === 0n ? Number(milli / 1000n) : 0;
}

/**
 * kubelet's takeByTopology (topology-aware best fit): whole sockets when the request needs one,
 * then whole cores, then single CPUs, packing onto the sockets and cores with the fewest free CPUs.
 */
export function takeByTopology(topo: CPUTopology, available: CPUSet, count: number): CPUSet {
  let free = available;
  let result = new CPUSet();
  const need = (): number => count - result.size;
  const take = (s: CPUSet): void => {
    result = result.union(s);
    free = free.difference(s);
  };
  if (count === 0) return result;
  if (available.size < count) throw new Error('not enough cpus available to satisfy request');
  const freeIn = (s: CPUSet): number => s.intersection(free).size;
  // 1. whole sockets
  for (const socket of topo.sockets()) {
    const cpus = topo.cpusInSockets(socket);
    if (freeIn(cpus) === cpus.size && cpus.size <= need()) take(cpus);
  }
  if (need() === 0) return result;
  // 2. whole cores, on the sockets with the fewest free CPUs first
  const socketOrder = (): number[] =>
    topo.sockets().sort((a, b) => freeIn(topo.cpusInSockets(a)) - freeIn(topo.cpusInSockets(b)) || a - b);
  for (const socket of socketOrder()) {
    for (const core of topo.cores()) {
      const cpus = topo.cpusInCores(core);
      if (!cpus.isSubsetOf(topo.cpusInSockets(socket))) continue;
      if (freeIn(cpus) === cpus.size && cpus.size <= need()) take(cpus);
    }
  }
  if (need() === 0) return result;
  // 3. single CPUs, filling partly used cores first
  const cpus = free.toArray().sort((a, b) => {
    const da = topo.details.get(a)!;
    const db = topo.details.get(b)!;
    const sa = socketOrder().indexOf(da.socket);
    const sb = socketOrder().indexOf(db.socket);
    return sa - sb || freeIn(topo.cpusInCores(da.core)) - freeIn(topo.cpusInCores(db.core)) || da.core - db.core || a - b;
  });
  for (const id of cpus) {
    if (need() === 0) break;
    take(new CPUSet([id]));
  }
  if (need() !== 0) throw new Error('failed to allocate cpus');
  return result;
}

export interface CPUManagerOptions {
  policy: 'none' | 'static';
  topology: CPUTopology;
  /** CPUs reserved for the system: their count (ceil of the cpu reservation) and, from --reserved-cpus, which. */
  reservedCount: number;
  reservedCPUs?: CPUSet;
  fullPCPUsOnly?: boolean;
  stateDir: string;
  reconcilePeriodMs: number;
  /** The chosen NUMA hint of a container (the topology manager's store). */
  affinity: (podUID: string, container: string) => TopologyHint;
  log?: (level: 'info' | 'error', message: string) => void;
}

/** What the reconcile loop needs from the agent. */
export interface CPUReconcileHost {
  activePods(): Pod[];
  podStatus(uid: string): PodStatus | undefined;
  /** Sets a running container's cpuset through the runtime. */
  updateContainerCpuset(containerId: string, cpus: string): Promise<void>;
  sourcesReady(): boolean;
}

export class CPUManager implements HintProvider {
  private defaultSet = new CPUSet();
  /** The pod under admission (kubelet's pendingAdmissionPod): its state is not stale while its containers are allocated one by one (until endAdmission). */
  private pendingAdmission: Pod | undefined;

  /** The admission of the pending pod ended (admitted or refused). */
  endAdmission(): void {
    this.pendingAdmission = undefined;
  }

  /** pod uid → container → exclusive CPUs */
  private assignments = new Map<string, Map<string, CPUSet>>();
  /** What each running container was last given through the runtime. */
  private readonly lastUpdate = new Map<string, CPUSet>();
  private readonly reserved: CPUSet;
  private cpusToReuse = new Map<string, CPUSet>();
  private timer: NodeJS.Timeout | undefined;
  private host: CPUReconcileHost | undefined;
  private readonly path: string;

  constructor(private readonly o: CPUManagerOptions) {
    this.path = join(o.stateDir, CPU_MANAGER_STATE_FILE);
    if (o.policy === 'static') {
      if (o.reservedCount <= 0) throw new Error('[cpumanager] the static policy requires systemreserved.cpu + kubereserved.cpu to be greater than zero');
      const all = o.topology.cpus();
      let reserved = o.reservedCPUs && !o.reservedCPUs.isEmpty() ? o.reservedCPUs : takeByTopology(o.topology, all, Math.min(o.reservedCount, all.size));
      if (!reserved.isSubsetOf(all)) reserved = reserved.intersection(all);
      if (reserved.size !== o.reservedCount) {
        throw new Error(`[cpumanager] unable to reserve the required amount of CPUs (size of ${reserved.toString()} did not equal ${o.reservedCount})`);
      }
      this.reserved = reserved;
      o.log?.('info', `cpu manager: static policy, reserved CPUs ${reserved.toString()}`);
    } else {
      this.reserved = new CPUSet();
    }
  }

  get policyName(): string {
    return this.o.policy;
  }

  /** Restores (or creates) the state file and checks it; throws kubelet's error when it cannot be used. */
  start(host: CPUReconcileHost): void {
    this.host = host;
    try {
      this.restore();
      if (this.o.policy === 'static') this.validateStatic();
    } catch (err) {
      throw new Error(
        `could not restore state from checkpoint: ${err instanceof Error ? err.message : String(err)}, please drain this node and delete the CPU manager checkpoint file ${JSON.stringify(this.path)} before restarting the agent`,
        { cause: err },
      );
    }
    this.save();
    if (this.o.policy === 'none') return;
    this.timer = setInterval(() => void this.reconcile(), Math.max(100, this.o.reconcilePeriodMs));
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private restore(): void {
    const text = readCheckpointFile(this.path);
    if (text === undefined) return;
    const cp = decodeCPUCheckpoint(text);
    if (cp.policyName !== this.o.policy) throw new Error(`configured policy ${JSON.stringify(this.o.policy)} differs from state checkpoint policy ${JSON.stringify(cp.policyName)}`);
    try {
      this.defaultSet = CPUSet.parse(cp.defaultCpuSet);
    } catch (err) {
      throw new Error(`could not parse default cpu set ${JSON.stringify(cp.defaultCpuSet)}: ${(err as Error).message}`, { cause: err });
    }
    for (const [pod, containers] of Object.entries(cp.entries)) {
      for (const [name, text2] of Object.entries(containers)) {
        try {
          this.setAssignment(pod, name, CPUSet.parse(text2));
        } catch (err) {
          throw new Error(`could not parse cpuset ${JSON.stringify(text2)} for container ${JSON.stringify(name)} in pod ${JSON.stringify(pod)}: ${(err as Error).message}`, { cause: err });
        }
      }
    }
  }

  /** kubelet's static policy validateState. */
  private validateStatic(): void {
    const all = this.o.topology.cpus();
    if (this.defaultSet.isEmpty()) {
      if (this.assignments.size > 0) throw new Error('default cpuset cannot be empty');
      this.defaultSet = all;
      return;
    }
    if (!this.reserved.isSubsetOf(this.defaultSet)) {
      throw new Error(`not all reserved cpus: "${this.reserved.toString()}" are present in defaultCpuSet: "${this.defaultSet.toString()}"`);
    }
    let known = this.defaultSet;
    for (const [pod, m] of this.assignments) {
      for (const [name, set] of m) {
        if (!set.intersection(this.defaultSet).isEmpty()) {
          throw new Error(`pod: ${pod}, container: ${name} cpuset: "${set.toString()}" overlaps with default cpuset "${this.defaultSet.toString()}"`);
        }
        known = known.union(set);
      }
    }
    if (!known.equals(all)) throw new Error(`current set of available CPUs "${all.toString()}" doesn't match with CPUs in state "${known.toString()}"`);
  }

  private save(): void {
    const entries: Record<string, Record<string, string>> = {};
    for (const [pod, m] of this.assignments) entries[pod] = Object.fromEntries([...m].map(([n, s]) => [n, s.toString()]));
    writeCPUCheckpoint(this.path, { policyName: this.o.policy, defaultCpuSet: this.defaultSet.toString(), entries });
  }

  private setAssignment(pod: string, name: string, set: CPUSet): void {
    let m = this.assignments.get(pod);
    if (!m) this.assignments.set(pod, (m = new Map()));
    m.set(name, set);
  }

  private assignment(pod: string, name: string): CPUSet | undefined {
    return this.assignments.get(pod)?.get(name);
  }

  /** The shared pool less the reserved CPUs: what exclusive allocations may take. */
  availableCPUs(): CPUSet {
    return this.defaultSet.difference(this.reserved);
  }

  /** The cpuset a container runs on: its own CPUs, else the shared pool (empty under policy none). */
  cpusetOf(podUID: string, container: string): CPUSet {
    return this.assignment(podUID, container) ?? this.defaultSet;
  }

  /** The CPU manager's part of admission (called by the topology manager). */
  allocate(pod: Pod, c: Container): void {
    if (this.o.policy !== 'static') return;
    this.pendingAdmission = pod;
    this.removeStaleState();
    const n = guaranteedCPUs(pod, c);
    if (n === 0) return;
    const perCore = this.o.topology.cpusPerCore();
    if (this.o.fullPCPUsOnly && n % perCore !== 0) {
      throw new AdmissionError('SMTAlignmentError', `SMT Alignment Error: requested ${n} cpus not multiple cpus per core = ${perCore}`);
    }
    const uid = pod.metadata.uid;
    const existing = this.assignment(uid, c.name);
    if (existing) {
      this.updateReuse(pod, c, existing);
      return;
    }
    const hint = this.o.affinity(uid, c.name);
    const set = this.allocateCPUs(n, hint.affinity, this.cpusToReuse.get(uid) ?? new CPUSet());
    this.setAssignment(uid, c.name, set);
    this.updateReuse(pod, c, set);
    this.save();
    this.o.log?.('info', `cpu manager: pod ${pod.metadata.namespace}/${pod.metadata.name} container ${c.name} gets CPUs ${set.toString()}`);
  }

  private allocateCPUs(n: number, affinity: number | null, reusable: CPUSet): CPUSet {
    const allocatable = this.availableCPUs().union(reusable);
    let result = new CPUSet();
    const topo = this.o.topology;
    if (affinity !== null) {
      const aligned = allocatable.intersection(topo.cpusInNUMANodes(...bitsOf(affinity)));
      result = takeByTopology(topo, aligned, Math.min(n, aligned.size));
    }
    result = result.union(takeByTopology(topo, allocatable.difference(result), n - result.size));
    this.defaultSet = this.defaultSet.difference(result);
    return result;
  }

  private updateReuse(pod: Pod, c: Container, set: CPUSet): void {
    const uid = pod.metadata.uid;
    for (const k of [...this.cpusToReuse.keys()]) if (k !== uid) this.cpusToReuse.delete(k);
    const cur = this.cpusToReuse.get(uid) ?? new CPUSet();
    const init = (pod.spec.initContainers ?? []).some((x) => x.name === c.name);
    this.cpusToReuse.set(uid, init ? cur.union(set) : cur.difference(set));
  }

  /** Returns a container's CPUs to the shared pool. */
  private release(pod: string, name: string): void {
    const set = this.assignment(pod, name);
    if (!set) return;
    this.assignments.get(pod)!.delete(name);
    if (this.assignments.get(pod)!.size === 0) this.assignments.delete(pod);
    this.defaultSet = this.defaultSet.union(set);
  }

  /** Assignments of containers no active pod has go back to the shared pool (once every source has been read). */
  removeStaleState(): void {
    const host = this.host;
    if (!host?.sourcesReady()) return;
    const active = new Map<string, Set<string>>();
    const pending = this.pendingAdmission !== undefined ? [this.pendingAdmission] : [];
    for (const p of [...host.activePods(), ...pending]) active.set(p.metadata.uid, new Set([...(p.spec.initContainers ?? []), ...p.spec.containers].map((c) => c.name)));
    let changed = false;
    for (const [pod, m] of [...this.assignments]) {
      for (const name of [...m.keys()]) {
        if (active.get(pod)?.has(name)) continue;
        this.o.log?.('info', `cpu manager: removing stale state of pod ${pod} container ${name}`);
        this.release(pod, name);
        changed = true;
      }
    }
    if (changed) this.save();
  }

  /**
   * Records an exclusive cpuset a new container was created with (kubelet's AddContainer); shared
   * ones are not recorded, so the next reconcile pushes the shared pool to them once more.
   */
  containerCreated(podUID: string, container: string, containerId: string): void {
    const set = this.assignment(podUID, container);
    if (set) this.lastUpdate.set(containerId, set);
  }

  /** One pass of kubelet's reconcileState: pushes each running container's cpuset when it changed. */
  async reconcile(): Promise<void> {
    const host = this.host;
    if (!host) return;
    this.removeStaleState();
    const seen = new Set<string>();
    for (const pod of host.activePods()) {
      const status = host.podStatus(pod.metadata.uid);
      if (!status) continue;
      const statuses = [...(status.initContainerStatuses ?? []), ...status.containerStatuses];
      for (const c of [...(pod.spec.initContainers ?? []), ...pod.spec.containers]) {
        const st = statuses.find((s) => s.name === c.name);
        if (!st?.containerID || !st.state.running) continue;
        const id = st.containerID.replace(/^[a-z]+:\/\//, '');
        seen.add(id);
        const set = this.cpusetOf(pod.metadata.uid, c.name);
        if (set.isEmpty() || this.lastUpdate.get(id)?.equals(set)) continue;
        try {
          await host.updateContainerCpuset(id, set.toString());
          this.lastUpdate.set(id, set);
          this.o.log?.('info', `cpu manager: container ${c.name} of pod ${pod.metadata.namespace}/${pod.metadata.name} now on CPUs ${set.toString()}`);
        } catch (err) {
          this.o.log?.('error', `cpu manager: updating the cpuset of container ${id}: ${err instanceof Error ? err.message : String(err)}`);
        }
      }
    }
    for (const id of [...this.lastUpdate.keys()]) if (!seen.has(id)) this.lastUpdate.delete(id);
  }

  // ---- hints ----

  getTopologyHints(pod: Pod, c: Container): ResourceHints {
    if (this.o.policy !== 'static') return null;
    const n = guaranteedCPUs(pod, c);
    if (n === 0) return null;
    this.pendingAdmission = pod;
    this.removeStaleState();
    const uid = pod.metadata.uid;
    const allocated = this.assignment(uid, c.name);
    if (allocated) {
      if (allocated.size !== n) return { cpu: [] };
      return { cpu: this.hintsFor(allocated, new CPUSet(), n) };
    }
    return { cpu: this.hintsFor(this.availableCPUs(), this.cpusToReuse.get(uid) ?? new CPUSet(), n) };
  }

  getPodTopologyHints(pod: Pod): ResourceHints {
    if (this.o.policy !== 'static' || qosClass(pod) !== 'Guaranteed') return null;
    const init = Math.max(0, ...(pod.spec.initContainers ?? []).map((c) => guaranteedCPUs(pod, c)));
    const app = pod.spec.containers.reduce((s, c) => s + guaranteedCPUs(pod, c), 0);
    const n = Math.max(init, app);
    if (n === 0) return null;
    this.pendingAdmission = pod;
    this.removeStaleState();
    const uid = pod.metadata.uid;
    let assigned = new CPUSet();
    for (const c of [...(pod.spec.initContainers ?? []), ...pod.spec.containers]) {
      const a = this.assignment(uid, c.name);
      if (a) assigned = assigned.union(a);
    }
    if (!assigned.isEmpty()) {
      if (assigned.size !== n) return { cpu: [] };
      return { cpu: this.hintsFor(assigned, new CPUSet(), n) };
    }
    return { cpu: this.hintsFor(this.availableCPUs(), this.cpusToReuse.get(uid) ?? new CPUSet(), n) };
  }

  /** kubelet's generateCPUTopologyHints: every NUMA node set that can hold the request; the narrowest preferred. */
  private hintsFor(available: CPUSet, reusable: CPUSet, request: number): TopologyHint[] {
    const topo = this.o.topology;
    const nodes = topo.numaNodes();
    let minSize = nodes.length;
    const hints: TopologyHint[] = [];
    for (const mask of subsetsOf(nodes)) {
      const inMask = topo.cpusInNUMANodes(...bitsOf(mask));
      if (inMask.size >= request && bitCount(mask) < minSize) minSize = bitCount(mask);
      if (!reusable.isSubsetOf(inMask)) continue;
      if (reusable.size + available.intersection(inMask).size < request) continue;
      hints.push({ affinity: mask, preferred: false });
    }
    for (const h of hints) h.preferred = bitCount(h.affinity!) === minSize;
    return hints;
  }
}
