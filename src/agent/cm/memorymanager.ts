// kubelet's memory manager (pkg/kubelet/cm/memorymanager, 1.23) with its two policies:
//   - None: nothing is tracked beyond the policy name in the state file;
//   - Static: containers of Guaranteed pods get their memory (and hugepages) requests reserved on a
//     set of NUMA nodes, chosen with the topology manager's hint; the runtime confines them there
//     (cpuset.mems).
// --reserved-memory gives each NUMA node's reservation; its per-type totals must equal what node
// allocatable reserves (--orch-reserved + --system-reserved + the hard eviction threshold), and the
// Static policy needs some memory reserved. State lives in `memory_manager_state` under --root-dir
// (checkpoint.ts); a file of another policy, or whose machine state no longer matches this machine
// and its reservations, stops the agent from starting, as kubelet does.
import { join } from 'node:path';
import { parseQuantity, tryParseQuantity } from '../../util/quantity.js';
import { qosClass } from '../status.js';
import type { Container, Pod } from '../types.js';
import { decodeMemoryCheckpoint, readCheckpointFile, writeMemoryCheckpoint, type MemoryBlock, type MemoryTable, type NUMANodeState } from './checkpoint.js';
import { bitCount, bitsOf, maskOf, subsetsOf, type HintProvider, type ResourceHints, type TopologyHint } from './topologymanager.js';

export const MEMORY_MANAGER_STATE_FILE = 'memory_manager_state';

/** NUMA node → resource (memory, hugepages-<size>) → bytes. */
export type ReservedMemory = Map<number, Map<string, bigint>>;

const isMemoryType = (r: string): boolean => r === 'memory' || r.startsWith('hugepages-');

/** Parses --reserved-memory: '<numa>:<type>=<quantity>[,<type>=<quantity>...]', nodes separated by ';'. */
export function parseReservedMemory(text: string): ReservedMemory {
  const out: ReservedMemory = new Map();
  for (const part of text.split(';').map((s) => s.trim()).filter((s) => s !== '')) {
    const m = /^(\d+):(.+)$/.exec(part);
    if (!m) throw new Error(`the reserved memory has incorrect format, expected numaNodeID:type=quantity[,type=quantity...], got ${part}`);
    const node = Number(m[1]);
    const limits = out.get(node) ?? new Map<string, bigint>();
    for (const kv of m[2]!.split(',')) {
      const [name, value] = kv.split('=').map((s) => s.trim());
      if (!name || value === undefined) throw new Error(`the reserved memory has incorrect format, expected numaNodeID:type=quantity[,type=quantity...], got ${part}`);
      if (!isMemoryType(name)) throw new Error(`invalid configuration: the reserved memory for NUMA node ${node} has an unsupported resource type ${JSON.stringify(name)}`);
      const q = tryParseQuantity(value);
      if (!q || q.value() < 0n) throw new Error(`invalid configuration: the limits for the NUMA node ${node} and the resource ${JSON.stringify(name)} must be a non-negative quantity, got ${JSON.stringify(value)}`);
      if (limits.has(name)) throw new Error(`invalid configuration: the reserved memory has a duplicate value for NUMA node ${node} and resource ${JSON.stringify(name)}`);
      limits.set(name, q.value());
    }
    out.set(node, limits);
  }
  return out;
}

/** A byte count as Kubernetes prints a quantity (binary suffix when exact, else plain). */
function quantityText(n: bigint): string {
  const units: [string, bigint][] = [
    ['Ei', 1n << 60n],
    ['Pi', 1n << 50n],
    ['Ti', 1n << 40n],
    ['Gi', 1n << 30n],
    ['Mi', 1n << 20n],
    ['Ki', 1n << 10n],
  ];
  for (const [s, u] of units) if (n !== 0n && n % u === 0n) return `${n / u}${s}`;
  return String(n);
}

/**
 * kubelet's validateReservedMemory: every node named exists, and per memory type the reservations
 * add up to node allocatable's reservation (`allocatableReservation`: type → bytes).
 */
export function validateReservedMemory(reserved: ReservedMemory, numaNodes: number[], allocatableReservation: Map<string, bigint>): void {
  const totals = new Map<string, bigint>();
  for (const [node, limits] of reserved) {
    if (!numaNodes.includes(node)) throw new Error(`the reserved memory configuration references a NUMA node ${node} that does not exist on this machine`);
    for (const [r, q] of limits) totals.set(r, (totals.get(r) ?? 0n) + q);
  }
  const types = new Set([...totals.keys(), ...[...allocatableReservation.keys()].filter(isMemoryType)]);
  for (const t of [...types].sort()) {
    const want = allocatableReservation.get(t) ?? 0n;
    const got = totals.get(t) ?? 0n;
    if (want !== got) {
      throw new Error(`the total amount "${quantityText(got)}" of type "${t}" is not equal to the value "${quantityText(want)}" determined by Node Allocatable feature`);
    }
  }
}

export interface MemoryManagerOptions {
  policy: 'None' | 'Static';
  /** NUMA node → its memory in bytes, and its hugepages (resource name → bytes). */
  numaMemory: Map<number, number>;
  numaHugepages?: Map<number, Map<string, number>>;
  reserved: ReservedMemory;
  stateDir: string;
  affinity: (podUID: string, container: string) => TopologyHint;
  /** The pods that run or may run (for stale state), once every source was read. */
  activePods?: () => Pod[] | undefined;
  log?: (level: 'info' | 'error', message: string) => void;
}

type Requests = Map<string, number>;

function requestsOf(c: Container): Requests {
  const out: Requests = new Map();
  // requests default to limits (API defaulting; pods from files may carry limits only)
  const r = c.resources as { requests?: Record<string, unknown>; limits?: Record<string, unknown> } | undefined;
  const req = { ...(r?.limits ?? {}), ...(r?.requests ?? {}) };
  for (const [name, raw] of Object.entries(req)) {
    if (!isMemoryType(name)) continue;
    out.set(name, Number(parseQuantity(String(raw)).value()));
  }
  return out;
}

export class MemoryManager implements HintProvider {
  private machine: Record<string, NUMANodeState> = {};
  private entries: Record<string, Record<string, MemoryBlock[]>> = {};
  private readonly path: string;
  private readonly reusable = new Map<string, Map<string, number>>();

  constructor(private readonly o: MemoryManagerOptions) {
    this.path = join(o.stateDir, MEMORY_MANAGER_STATE_FILE);
    if (o.policy === 'Static') {
      let total = 0n;
      for (const limits of o.reserved.values()) total += limits.get('memory') ?? 0n;
      if (total <= 0n) throw new Error('the total amount of memory reserved for the system should be greater than 0');
    }
  }

  get policyName(): string {
    return this.o.policy;
  }

  /** Restores (or creates) the state file; throws kubelet's error when it cannot be used. */
  start(): void {
    try {
      const text = readCheckpointFile(this.path);
      if (text !== undefined) {
        const cp = decodeMemoryCheckpoint(text);
        if (cp.policyName !== this.o.policy) {
          throw new Error(`configured policy ${JSON.stringify(this.o.policy)} differs from state checkpoint policy ${JSON.stringify(cp.policyName)}`);
        }
        this.machine = cp.machineState;
        this.entries = cp.entries;
      }
      if (this.o.policy === 'Static') this.validateState();
    } catch (err) {
      throw new Error(
        `could not restore state from checkpoint: ${err instanceof Error ? err.message : String(err)}, please drain this node and delete the memory manager checkpoint file ${JSON.stringify(this.path)} before restarting the agent`,
        { cause: err },
      );
    }
    this.save();
  }

  private save(): void {
    writeMemoryCheckpoint(this.path, { policyName: this.o.policy, machineState: this.machine, entries: this.entries });
  }

  private reservedOf(node: number, r: string): number {
    return Number(this.o.reserved.get(node)?.get(r) ?? 0n);
  }

  /** The machine state of a node with nothing allocated (kubelet's getDefaultMachineState). */
  private defaultMachineState(): Record<string, NUMANodeState> {
    const out: Record<string, NUMANodeState> = {};
    for (const [node, memory] of this.o.numaMemory) {
      const map: Record<string, MemoryTable> = {};
      let hugeTotal = 0;
      for (const [r, size] of this.o.numaHugepages?.get(node) ?? new Map<string, number>()) {
        const sr = this.reservedOf(node, r);
        map[r] = { total: size, systemReserved: sr, allocatable: size - sr, reserved: 0, free: size - sr };
        hugeTotal += size;
      }
      const sr = this.reservedOf(node, 'memory');
      const allocatable = memory - sr - hugeTotal;
      map.memory = { total: memory, systemReserved: sr, allocatable, reserved: 0, free: allocatable };
      out[String(node)] = { numberOfAssignments: 0, memoryMap: map, cells: [node] };
    }
    return out;
  }

  private validateState(): void {
    if (Object.keys(this.machine).length === 0) {
      if (Object.keys(this.entries).length > 0) throw new Error('[memorymanager] machine state can not be empty when it has memory assignments');
      this.machine = this.defaultMachineState();
      return;
    }
    const expected = this.defaultMachineState();
    for (const [pod, containers] of Object.entries(this.entries)) {
      for (const [name, blocks] of Object.entries(containers)) {
        for (const b of blocks) {
          for (const id of b.numaAffinity) {
            const n = expected[String(id)];
            if (!n) throw new Error(`[memorymanager] (pod: ${pod}, container: ${name}) the memory assignment uses the NUMA that does not exist`);
            if (!n.memoryMap[b.type]) throw new Error(`[memorymanager] (pod: ${pod}, container: ${name}) the memory assignment uses memory resource that does not exist`);
          }
          reserve(expected, b.numaAffinity, b.type, b.size);
        }
      }
    }
    if (JSON.stringify(normalize(expected)) !== JSON.stringify(normalize(this.machine))) {
      throw new Error('[memorymanager] the expected machine state is different from the real one');
    }
  }

  /** The NUMA nodes a container's memory is on (cpuset.mems), empty when it has no assignment. */
  numaNodesOf(podUID: string, container: string): number[] {
    const blocks = this.entries[podUID]?.[container] ?? [];
    return [...new Set(blocks.flatMap((b) => b.numaAffinity))].sort((a, b) => a - b);
  }

  /** The pod under admission (kubelet's pendingAdmissionPod): its state is not stale while its containers are allocated one by one (until endAdmission). */
  private pendingAdmission: Pod | undefined;

  /** The admission of the pending pod ended (admitted or refused). */
  endAdmission(): void {
    this.pendingAdmission = undefined;
  }

  private removeStaleState(): void {
    const activePods = this.o.activePods?.();
    if (!activePods) return;
    const pods = this.pendingAdmission ? [...activePods, this.pendingAdmission] : activePods;
    const active = new Map(pods.map((p) => [p.metadata.uid, new Set([...(p.spec.initContainers ?? []), ...p.spec.containers].map((c) => c.name))]));
    let changed = false;
    for (const [pod, containers] of Object.entries(this.entries)) {
      for (const name of Object.keys(containers)) {
        if (active.get(pod)?.has(name)) continue;
        this.release(pod, name);
        changed = true;
      }
    }
    if (changed) this.save();
  }

  private release(pod: string, name: string): void {
    const blocks = this.entries[pod]?.[name];
    if (!blocks) return;
    delete this.entries[pod]![name];
    if (Object.keys(this.entries[pod]!).length === 0) delete this.entries[pod];
    for (const b of blocks) {
      let size = b.size;
      for (const id of b.numaAffinity) {
        const n = this.machine[String(id)];
        if (!n) continue;
        n.numberOfAssignments--;
        if (n.numberOfAssignments === 0) n.cells = [id];
        const t = n.memoryMap[b.type];
        if (size === 0 || !t || t.reserved === 0) continue;
        const back = Math.min(size, t.reserved);
        t.reserved -= back;
        t.free += back;
        size -= back;
      }
    }
  }

  allocate(pod: Pod, c: Container): void {
    if (this.o.policy !== 'Static' || qosClass(pod) !== 'Guaranteed') return;
    this.pendingAdmission = pod;
    this.removeStaleState();
    const uid = pod.metadata.uid;
    if (this.entries[uid]?.[c.name]) return;
    const requests = requestsOf(c);
    if (requests.size === 0) return;
    const hint = this.o.affinity(uid, c.name);
    let best: TopologyHint = hint;
    if (hint.affinity === null) {
      const hints = this.calculateHints(pod, requests).memory ?? [];
      if (hints.length === 0) throw new Error('[memorymanager] failed to get the default NUMA affinity, no NUMA nodes with enough memory is available');
      const def = bestOf(hints);
      if (!def.preferred && hint.preferred) throw new Error('[memorymanager] failed to find the default preferred hint');
      best = def;
    }
    if (!this.satisfies(best.affinity!, requests)) {
      const wider = (this.calculateHints(pod, requests).memory ?? []).filter((h) => ((h.affinity ?? 0) & best.affinity!) === best.affinity);
      if (wider.length === 0) throw new Error('[memorymanager] failed to find NUMA nodes to extend the current topology hint');
      const ext = bestOf(wider);
      if (!ext.preferred && best.preferred) throw new Error('[memorymanager] failed to find the extended preferred hint');
      best = ext;
    }
    const nodes = bitsOf(best.affinity!);
    const blocks: MemoryBlock[] = [];
    for (const [r, size] of requests) {
      blocks.push({ numaAffinity: nodes, type: r, size });
      const reuse = this.reusable.get(uid)?.get(r) ?? 0;
      reserve(this.machine, nodes, r, Math.max(0, size - reuse));
    }
    this.updateReusable(pod, c, blocks);
    (this.entries[uid] ??= {})[c.name] = blocks;
    this.save();
    this.o.log?.('info', `memory manager: pod ${pod.metadata.namespace}/${pod.metadata.name} container ${c.name} gets memory on NUMA node(s) ${nodes.join(',')}`);
  }

  private updateReusable(pod: Pod, c: Container, blocks: MemoryBlock[]): void {
    const uid = pod.metadata.uid;
    for (const k of [...this.reusable.keys()]) if (k !== uid) this.reusable.delete(k);
    const cur = this.reusable.get(uid) ?? new Map<string, number>();
    const init = (pod.spec.initContainers ?? []).some((x) => x.name === c.name);
    for (const b of blocks) {
      const v = cur.get(b.type) ?? 0;
      cur.set(b.type, init ? Math.max(v, b.size) : Math.max(0, v - b.size));
    }
    this.reusable.set(uid, cur);
  }

  private satisfies(mask: number, requests: Requests): boolean {
    for (const [r, size] of requests) {
      const free = bitsOf(mask).reduce((s, id) => s + (this.machine[String(id)]?.memoryMap[r]?.free ?? 0), 0);
      if (free < size) return false;
    }
    return true;
  }

  /** kubelet's calculateHints: NUMA node sets with enough allocatable and free memory of every requested type. */
  private calculateHints(pod: Pod, requests: Requests): Record<string, TopologyHint[]> {
    const nodes = Object.keys(this.machine).map(Number).sort((a, b) => a - b);
    let minSize = nodes.length;
    const hints: Record<string, TopologyHint[]> = {};
    const reuse = this.reusable.get(pod.metadata.uid);
    for (const mask of subsetsOf(nodes)) {
      const bits = bitsOf(mask);
      const single = bits.length === 1;
      const sum = (r: string, f: keyof MemoryTable): number => bits.reduce((s, id) => s + (this.machine[String(id)]?.memoryMap[r]?.[f] ?? 0), 0);
      if ([...requests].some(([r, size]) => sum(r, 'allocatable') < size)) continue;
      if (bitCount(mask) < minSize) minSize = bitCount(mask);
      if (single && (this.machine[String(bits[0])]?.cells.length ?? 1) > 1) continue;
      const clash = bits.some((id) => {
        const n = this.machine[String(id)]!;
        if (single || n.numberOfAssignments === 0) return false;
        return n.cells.length === 1 || maskOf(n.cells) !== mask;
      });
      if (clash) continue;
      if ([...requests].some(([r, size]) => sum(r, 'free') + (reuse?.get(r) ?? 0) < size)) continue;
      for (const r of requests.keys()) (hints[r] ??= []).push({ affinity: mask, preferred: false });
    }
    for (const list of Object.values(hints)) for (const h of list) h.preferred = bitCount(h.affinity!) === minSize;
    return hints;
  }

  getTopologyHints(pod: Pod, c: Container): ResourceHints {
    if (this.o.policy !== 'Static' || qosClass(pod) !== 'Guaranteed') return null;
    const requests = requestsOf(c);
    const blocks = this.entries[pod.metadata.uid]?.[c.name];
    if (blocks) return regenerate(blocks, requests);
    this.pendingAdmission = pod;
    this.removeStaleState();
    return this.calculateHints(pod, requests);
  }

  getPodTopologyHints(pod: Pod): ResourceHints {
    if (this.o.policy !== 'Static' || qosClass(pod) !== 'Guaranteed') return null;
    const requests: Requests = new Map();
    for (const c of pod.spec.containers) for (const [r, v] of requestsOf(c)) requests.set(r, (requests.get(r) ?? 0) + v);
    for (const c of pod.spec.initContainers ?? []) for (const [r, v] of requestsOf(c)) requests.set(r, Math.max(requests.get(r) ?? 0, v));
    const uid = pod.metadata.uid;
    const assigned = [...(pod.spec.initContainers ?? []), ...pod.spec.containers].flatMap((c) => this.entries[uid]?.[c.name] ?? []);
    if (assigned.length > 0) return regenerate(assigned, requests);
    this.pendingAdmission = pod;
    this.removeStaleState();
    return this.calculateHints(pod, requests);
  }
}

/** Hints from existing blocks: their NUMA set, preferred, when they match the requests; else none possible. */
function regenerate(blocks: MemoryBlock[], requests: Requests): ResourceHints {
  const out: Record<string, TopologyHint[]> = {};
  const sizes = new Map<string, number>();
  for (const b of blocks) sizes.set(b.type, (sizes.get(b.type) ?? 0) + b.size);
  for (const [r, size] of requests) {
    if (sizes.get(r) !== size) return { [r]: [] };
    const b = blocks.find((x) => x.type === r)!;
    out[r] = [{ affinity: maskOf(b.numaAffinity), preferred: true }];
  }
  return out;
}

function bestOf(hints: TopologyHint[]): TopologyHint {
  let best = hints[0]!;
  for (const h of hints.slice(1)) {
    if (h.preferred && !best.preferred) best = h;
    else if (h.preferred === best.preferred && bitCount(h.affinity!) < bitCount(best.affinity!)) best = h;
  }
  return best;
}

/** Takes `size` bytes of `type` from the nodes in order (kubelet's updateMachineState). */
function reserve(machine: Record<string, NUMANodeState>, nodes: number[], type: string, size: number): void {
  let left = size;
  for (const id of nodes) {
    const n = machine[String(id)];
    if (!n) continue;
    n.numberOfAssignments++;
    n.cells = [...nodes];
    const t = n.memoryMap[type];
    if (left === 0 || !t || t.free <= 0) continue;
    const take = Math.min(left, t.free);
    t.reserved += take;
    t.free -= take;
    left -= take;
  }
}

function normalize(m: Record<string, NUMANodeState>): unknown {
  return Object.keys(m)
    .sort()
    .map((k) => {
      const n = m[k]!;
      return [k, n.numberOfAssignments, [...n.cells].sort(), Object.keys(n.memoryMap).sort().map((r) => [r, n.memoryMap[r]])];
    });
}
