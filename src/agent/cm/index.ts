// The node agent's resource managers (kubelet's container manager parts under pkg/kubelet/cm): the
// CPU manager, the memory manager and the topology manager that joins them at pod admission.
//
// Built from the agent's options (resourceManagersFromOptions, which refuses what kubelet 1.23
// refuses at startup), started once the agent runs (state files restored: a mismatch stops the
// agent), consulted by the agent's admission (TopologyAffinityError and the other refusals), by
// the pod sync when it creates a container (cpuset.cpus, cpuset.mems) and by the CPU manager's
// reconcile loop (cpusets of running containers through the runtime).
import type { AgentOptions } from '../options.js';
import { allocatableEvictionHard } from '../deprecations.js';
import { tryParseQuantity } from '../../util/quantity.js';
import type { Container, Pod, PodStatus } from '../types.js';
import { CPUManager, staticPolicyOptions } from './cpumanager.js';
import { CPUSet } from './cpuset.js';
import { CPUTopology, readMachineTopology, type MachineTopology } from './machine.js';
import { MemoryManager, parseReservedMemory, validateReservedMemory } from './memorymanager.js';
import { TopologyManager, type TopologyPolicy, type TopologyScope } from './topologymanager.js';

export interface ResourceManagersConfig {
  rootDir: string;
  cpuPolicy: 'none' | 'static';
  cpuPolicyOptions: Record<string, string>;
  cpuReconcilePeriodMs: number;
  /** --reserved-cpus, parsed. */
  reservedCPUs?: CPUSet;
  /** CPUs reserved through --orch-reserved/--system-reserved (or --reserved-cpus), in millicores. */
  reservedCPUMilli: number;
  memoryPolicy: 'None' | 'Static';
  reservedMemory: string;
  /** Node allocatable's reservation of memory types (bytes): reserved flags plus the hard eviction threshold. */
  memoryReservation: Map<string, bigint>;
  topologyPolicy: TopologyPolicy;
  topologyScope: TopologyScope;
  featureGates: Record<string, boolean>;
  /** The machine (tests give a fake one); read from /sys when unset. */
  machine?: MachineTopology;
  log?: (level: 'info' | 'error', message: string) => void;
}

function quantityOf(text: string | undefined): bigint {
  if (text === undefined) return 0n;
  return tryParseQuantity(text)?.value() ?? 0n;
}

function milliOf(text: string | undefined): number {
  if (text === undefined) return 0;
  return Number(tryParseQuantity(text)?.milliValue() ?? 0n);
}

/**
 * The resource managers' configuration from orchlet's options, with kubelet 1.23's startup checks:
 * --reserved-cpus parses, lies within the online CPUs and excludes the reserved cgroups;
 * --cpu-manager-policy-options needs the CPUManagerPolicyOptions gate. Also returns the reserved
 * maps the node's allocatable uses (--reserved-cpus replaces the cpu of --orch-reserved and
 * --system-reserved with its CPU count, as kubelet does).
 */
export function resourceManagersFromOptions(
  o: AgentOptions,
  log?: (level: 'info' | 'error', message: string) => void,
  machine: MachineTopology = readMachineTopology(),
): { config: ResourceManagersConfig; reserved: [Record<string, string>, Record<string, string>] } {
  let orchReserved = { ...(o.orchReserved ?? {}) };
  let systemReserved = { ...(o.systemReserved ?? {}) };
  let reservedCPUs: CPUSet | undefined;
  if (o.reservedCpus !== undefined && o.reservedCpus !== '') {
    if ((o.systemReservedCgroup ?? '') !== '' || (o.orchReservedCgroup ?? '') !== '') {
      throw new Error(
        "invalid configuration: can't use reservedSystemCPUs (--reserved-cpus) with systemReservedCgroup (--system-reserved-cgroup) or kubeReservedCgroup (--kube-reserved-cgroup)",
      );
    }
    try {
      reservedCPUs = CPUSet.parse(o.reservedCpus);
    } catch (err) {
      throw new Error(`invalid configuration: unable to parse reservedSystemCPUs (--reserved-cpus) ${o.reservedCpus}, error: ${(err as Error).message}`, { cause: err });
    }
    const all = new CPUTopology(machine.cpus).cpus();
    if (!reservedCPUs.isSubsetOf(all)) throw new Error(`reserved-cpus: ${o.reservedCpus} is not a subset of online-cpus: ${all.toString()}`);
    if (reservedCPUs.size > 0) {
      log?.('info', `--reserved-cpus is specified: it overrides the cpu of --orch-reserved and --system-reserved (system-reserved cpu=${reservedCPUs.size})`);
      const { cpu: _dropped, ...rest } = orchReserved;
      orchReserved = rest;
      systemReserved = { ...systemReserved, cpu: String(reservedCPUs.size) };
    }
  }
  const optionsGiven = o.explicitFlags.has('cpu-manager-policy-options') || o.configFileFlags.has('cpu-manager-policy-options');
  if (optionsGiven && o.featureGates.CPUManagerPolicyOptions !== true) {
    throw new Error('invalid configuration: cpuManagerPolicyOptions requires feature gate CPUManagerPolicyOptions');
  }
  if (o.featureGates.TopologyManager === false) {
    if (o.topologyManagerPolicy !== 'none') throw new Error(`invalid configuration: topologyManagerPolicy ${o.topologyManagerPolicy} requires feature gate TopologyManager`);
    if (o.topologyManagerScope !== 'container') throw new Error(`invalid configuration: topologyManagerScope ${o.topologyManagerScope} requires feature gate TopologyManager`);
  }
  const memoryReservation = new Map<string, bigint>();
  for (const m of [orchReserved, systemReserved]) {
    for (const [r, q] of Object.entries(m)) {
      if (r === 'memory' || r.startsWith('hugepages-')) memoryReservation.set(r, (memoryReservation.get(r) ?? 0n) + quantityOf(q));
    }
  }
  const hard = allocatableEvictionHard(o.evictionHard, o.experimentalAllocatableIgnoreEviction)['memory.available'];
  if (hard !== undefined) {
    const total = [...machine.numaMemory.values()].reduce((s, v) => s + v, 0);
    const bytes = hard.endsWith('%') ? BigInt(Math.floor((Number(hard.slice(0, -1)) / 100) * total)) : quantityOf(hard);
    memoryReservation.set('memory', (memoryReservation.get('memory') ?? 0n) + bytes);
  }
  const config: ResourceManagersConfig = {
    rootDir: o.rootDir,
    cpuPolicy: o.cpuManagerPolicy === 'static' ? 'static' : 'none',
    cpuPolicyOptions: o.cpuManagerPolicyOptions ?? {},
    cpuReconcilePeriodMs: o.cpuManagerReconcilePeriod,
    reservedCPUMilli: milliOf(orchReserved.cpu) + milliOf(systemReserved.cpu),
    memoryPolicy: o.memoryManagerPolicy === 'Static' ? 'Static' : 'None',
    reservedMemory: o.reservedMemory ?? '',
    memoryReservation,
    topologyPolicy: o.topologyManagerPolicy as TopologyPolicy,
    topologyScope: o.topologyManagerScope === 'pod' ? 'pod' : 'container',
    featureGates: o.featureGates,
    machine,
    ...(reservedCPUs ? { reservedCPUs } : {}),
    ...(log ? { log } : {}),
  };
  return { config, reserved: [orchReserved, systemReserved] };
}

/** What the managers need from the running agent. */
export interface ResourceManagersHost {
  activePods(): Pod[];
  podStatus(uid: string): PodStatus | undefined;
  sourcesReady(): boolean;
  /** Sets a running container's cpuset through the runtime; rejects when the runtime cannot. */
  updateContainerCpuset(containerId: string, cpus: string): Promise<void>;
}

export class ResourceManagers {
  readonly cpu: CPUManager | undefined;
  readonly memory: MemoryManager | undefined;
  readonly topology: TopologyManager;
  private host: ResourceManagersHost | undefined;

  /** Builds the managers; throws kubelet's startup errors (policy prerequisites, reservations). */
  constructor(c: ResourceManagersConfig) {
    const machine = c.machine ?? readMachineTopology();
    const topo = new CPUTopology(machine.cpus);
    const gates = c.featureGates;
    const numaNodes = [...machine.numaMemory.keys()].sort((a, b) => a - b);
    // kubelet without the TopologyManager gate: no hints (policy none)
    this.topology = new TopologyManager({
      policy: gates.TopologyManager === false ? 'none' : c.topologyPolicy,
      scope: c.topologyScope,
      numaNodes,
      ...(c.log ? { log: c.log } : {}),
    });
    const affinity = (uid: string, name: string) => this.topology.getAffinity(uid, name);
    if (gates.CPUManager !== false) {
      const opts = c.cpuPolicy === 'static' ? staticPolicyOptions(c.cpuPolicyOptions, gates) : { fullPCPUsOnly: false };
      this.cpu = new CPUManager({
        policy: c.cpuPolicy,
        topology: topo,
        reservedCount: Math.ceil(c.reservedCPUMilli / 1000),
        ...(c.reservedCPUs ? { reservedCPUs: c.reservedCPUs } : {}),
        fullPCPUsOnly: opts.fullPCPUsOnly,
        stateDir: c.rootDir,
        reconcilePeriodMs: c.cpuReconcilePeriodMs,
        affinity,
        ...(c.log ? { log: c.log } : {}),
      });
      this.topology.addHintProvider(this.cpu);
    }
    if (gates.MemoryManager !== false) {
      const reserved = parseReservedMemory(c.reservedMemory);
      if (c.memoryPolicy === 'None' && reserved.size > 0) {
        c.log?.('error', '--reserved-memory is ignored: it applies to --memory-manager-policy=Static only');
      }
      if (c.memoryPolicy === 'Static') validateReservedMemory(reserved, numaNodes, c.memoryReservation);
      this.memory = new MemoryManager({
        policy: c.memoryPolicy,
        numaMemory: machine.numaMemory,
        numaHugepages: machine.numaHugepages,
        reserved,
        stateDir: c.rootDir,
        affinity,
        activePods: () => (this.host?.sourcesReady() ? this.host.activePods() : undefined),
        ...(c.log ? { log: c.log } : {}),
      });
      this.topology.addHintProvider(this.memory);
    }
  }

  /** Restores the state files (throws when they cannot be used) and starts the CPU reconcile loop. */
  start(host: ResourceManagersHost): void {
    this.host = host;
    this.cpu?.start(host);
    this.memory?.start();
  }

  stop(): void {
    this.cpu?.stop();
  }

  /** kubelet's resource-allocating admit handler: undefined when admitted, else the refusal. */
  admit(pod: Pod): { reason: string; message: string } | undefined {
    // the active pods are listed only when there are hints to forget (none under the default policy: a scan per
    // admission made a burst of n new pods cost n² under it)
    const host = this.host;
    if (host?.sourcesReady() && this.topology.holdsHints()) this.topology.keepOnly(new Set(host.activePods().map((p) => p.metadata.uid)));
    try {
      return this.topology.admit(pod);
    } finally {
      // the pod is active now, or refused: its state is no longer kept as the pod under admission
      this.cpu?.endAdmission();
      this.memory?.endAdmission();
    }
  }

  /** The cpuset.cpus and cpuset.mems a new container gets (kubelet's PreCreateContainer). */
  containerCpusets(pod: Pod, c: Container): { cpusetCpus?: string; cpusetMems?: string } {
    const out: { cpusetCpus?: string; cpusetMems?: string } = {};
    const cpus = this.cpu?.cpusetOf(pod.metadata.uid, c.name);
    if (cpus && !cpus.isEmpty()) out.cpusetCpus = cpus.toString();
    const mems = this.memory?.numaNodesOf(pod.metadata.uid, c.name) ?? [];
    if (mems.length > 0) out.cpusetMems = mems.join(',');
    return out;
  }

  /** A container was created with what containerCpusets gave (kubelet's AddContainer). */
  containerCreated(pod: Pod, c: Container, containerId: string): void {
    this.cpu?.containerCreated(pod.metadata.uid, c.name, containerId);
  }
}
