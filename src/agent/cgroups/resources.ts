// Pure arithmetic of kubelet's container manager: node allocatable (node_container_manager_linux.go),
// a pod's cgroup resources (helpers_linux.go ResourceConfigForPod), the QoS tiers' CPU shares and
// --qos-reserved memory limits (qos_container_manager_linux.go), and --qos-reserved parsing.
import { tryParseQuantity } from '../../util/quantity.js';
import { qosClass } from '../status.js';
import type { Container, Pod } from '../types.js';
import { milliCPUToShares, type ResourceConfig } from './fs.js';

/** Node resources in base units: cpu in millicores, memory in bytes, pid in processes. */
export interface NodeResources {
  cpu: number;
  memory: number;
  pid?: number;
}

/** A quantity map ('500m', '1Gi') entry in base units (cpu: millicores); 0 when absent or unparsable. */
function amount(map: Record<string, unknown> | undefined, name: string): number {
  const raw = map?.[name];
  if (typeof raw !== 'string' && typeof raw !== 'number') return 0;
  const q = tryParseQuantity(String(raw));
  if (!q) return 0;
  return name === 'cpu' ? Number(q.milliValue()) : Number(q.value());
}

/**
 * getNodeAllocatableAbsolute: capacity minus --system-reserved and --orch-reserved, per resource,
 * never below 0. Hard eviction thresholds are not subtracted: they count in the node's allocatable
 * (scheduling) but not in the cgroup limit.
 */
export function nodeAllocatableAbsolute(capacity: NodeResources, reserved: Record<string, string>[]): NodeResources {
  const minus = (name: string, v: number): number => Math.max(0, v - reserved.reduce((s, m) => s + amount(m, name), 0));
  const out: NodeResources = { cpu: minus('cpu', capacity.cpu), memory: minus('memory', capacity.memory) };
  if (capacity.pid !== undefined) out.pid = minus('pid', capacity.pid);
  return out;
}

/**
 * validateNodeAllocatable: the reservations (both reserved maps, plus the hard memory.available
 * threshold for memory) must not exceed capacity; kubelet refuses to start otherwise.
 */
export function checkNodeAllocatable(capacity: NodeResources, reserved: Record<string, string>[], evictionMemory: number): string | undefined {
  const errors: string[] = [];
  const check = (name: 'cpu' | 'memory' | 'pid', cap: number | undefined, extra = 0): void => {
    if (cap === undefined) return;
    const r = reserved.reduce((sum, m) => sum + amount(m, name), 0) + extra;
    if (r > 0 && cap - r < 0) {
      const show = (n: number): string => (name === 'cpu' ? `${n}m` : String(n));
      errors.push(`Resource "${name}" has an allocatable of ${show(r)}, capacity of ${show(cap - r)}`);
    }
  };
  check('cpu', capacity.cpu);
  check('memory', capacity.memory, evictionMemory);
  check('pid', capacity.pid);
  return errors.length > 0 ? `invalid Node Allocatable configuration. ${errors.join(' ')}` : undefined;
}

/** getCgroupConfig of a resource list: cpu shares, memory bytes and pids of what the list names. */
export function cgroupConfigOf(list: Record<string, string>, cpuMilli?: number): ResourceConfig {
  const out: ResourceConfig = {};
  if (list.memory !== undefined) out.memory = amount(list, 'memory');
  if (list.cpu !== undefined || cpuMilli !== undefined) out.cpuShares = milliCPUToShares(cpuMilli ?? amount(list, 'cpu'));
  if (list.pid !== undefined) out.pidsLimit = amount(list, 'pid');
  return out;
}

/** The top-level pods cgroup's resources from a NodeResources (shares of the cores, bytes, processes). */
export function nodeCgroupConfig(r: NodeResources): ResourceConfig {
  const out: ResourceConfig = { cpuShares: milliCPUToShares(r.cpu), memory: r.memory };
  if (r.pid !== undefined) out.pidsLimit = r.pid;
  return out;
}

type Resources = { requests?: Record<string, unknown>; limits?: Record<string, unknown> };

function resourcesOf(c: Container): Resources {
  return (c.resources ?? {});
}

/**
 * PodRequestsAndLimits for cpu (millicores) and memory (bytes): the sum over containers, raised to
 * any init container's value, plus spec.overhead (on limits only where a limit is set). A request
 * left out defaults to the limit, as the API server's defaulting does.
 */
export function podRequestsAndLimits(pod: Pod): { requests: { cpu: number; memory: number }; limits: { cpu: number; memory: number } } {
  const requests = { cpu: 0, memory: 0 };
  const limits = { cpu: 0, memory: 0 };
  const req = (r: Resources, n: 'cpu' | 'memory'): number => (r.requests?.[n] !== undefined ? amount(r.requests, n) : amount(r.limits, n));
  for (const c of pod.spec.containers) {
    const r = resourcesOf(c);
    for (const n of ['cpu', 'memory'] as const) {
      requests[n] += req(r, n);
      limits[n] += amount(r.limits, n);
    }
  }
  for (const c of pod.spec.initContainers ?? []) {
    const r = resourcesOf(c);
    for (const n of ['cpu', 'memory'] as const) {
      requests[n] = Math.max(requests[n], req(r, n));
      limits[n] = Math.max(limits[n], amount(r.limits, n));
    }
  }
  const overhead = (pod.spec as { overhead?: Record<string, unknown> }).overhead;
  if (overhead) {
    for (const n of ['cpu', 'memory'] as const) {
      requests[n] += amount(overhead, n);
      if (limits[n] > 0) limits[n] += amount(overhead, n);
    }
  }
  return { requests, limits };
}

/** MilliCPUToQuota: the CFS quota (µs) of a cpu limit in a period; 0 without a limit; at least 1000 µs. */
export function milliCPUToQuota(milli: number, periodUs: number): number {
  if (milli === 0) return 0;
  return Math.max(1000, Math.floor((milli * periodUs) / 1000));
}

/**
 * ResourceConfigForPod: a Guaranteed pod's cgroup gets shares, quota and memory; a Burstable one
 * shares, and quota or memory when every container declares that limit; a BestEffort one 2
 * shares. Without CFS quota (--cpu-cfs-quota=false) the quota is -1.
 */
export function resourceConfigForPod(pod: Pod, o: { cpuCFSQuota: boolean; cpuPeriodUs: number }): ResourceConfig {
  const { requests, limits } = podRequestsAndLimits(pod);
  const cpuShares = milliCPUToShares(requests.cpu);
  const cpuQuota = o.cpuCFSQuota ? milliCPUToQuota(limits.cpu, o.cpuPeriodUs) : -1;
  const qos = qosClass(pod);
  if (qos === 'BestEffort') return { cpuShares: 2 };
  const all = pod.spec.containers.map(resourcesOf);
  const cpuDeclared = all.every((r) => amount(r.limits, 'cpu') !== 0);
  const memDeclared = all.every((r) => amount(r.limits, 'memory') !== 0);
  const out: ResourceConfig = { cpuShares };
  if (qos === 'Guaranteed' || cpuDeclared) {
    out.cpuQuota = cpuQuota;
    out.cpuPeriod = o.cpuPeriodUs;
  }
  if (qos === 'Guaranteed' || memDeclared) out.memory = limits.memory;
  return out;
}

/** setCPUCgroupConfig: BestEffort gets 2 shares, Burstable the shares of its pods' cpu requests. */
export function qosCPUShares(pods: readonly Pod[]): { burstable: number; besteffort: number } {
  let milli = 0;
  for (const p of pods) if (qosClass(p) === 'Burstable') milli += podRequestsAndLimits(p).requests.cpu;
  return { burstable: milliCPUToShares(milli), besteffort: 2 };
}

/**
 * setMemoryReserve: of the allocatable memory, the Burstable tier may use what Guaranteed pods
 * have not reserved (percent of their requests), and BestEffort what Burstable pods have not
 * reserved of that. Undefined when allocatable memory is 0 (kubelet leaves the limits).
 */
export function qosMemoryLimits(pods: readonly Pod[], allocatableMemory: number, percent: number): { burstable: number; besteffort: number } | undefined {
  if (allocatableMemory <= 0) return undefined;
  const sums: Record<string, number> = { Guaranteed: 0, Burstable: 0, BestEffort: 0 };
  for (const p of pods) sums[qosClass(p)] = (sums[qosClass(p)] ?? 0) + podRequestsAndLimits(p).requests.memory;
  const burstable = allocatableMemory - Math.floor(((sums.Guaranteed ?? 0) * percent) / 100);
  const besteffort = burstable - Math.floor(((sums.Burstable ?? 0) * percent) / 100);
  return { burstable, besteffort };
}

/** ParseQOSReserved: only memory, as a percentage 0–100 ('memory=50%'); throws kubelet's messages. */
export function parseQOSReserved(m: Record<string, string>): { memory?: number } {
  const out: { memory?: number } = {};
  for (const [k, v] of Object.entries(m)) {
    if (k !== 'memory') throw new Error(`cannot reserve "${k}" resource`);
    if (!v.endsWith('%')) throw new Error(`percentage expected, got '${v}'`);
    const n = v.slice(0, -1);
    if (!/^[+-]?\d+$/.test(n)) throw new Error(`invalid number in percentage '${v}'`);
    const p = Number(n);
    if (p < 0 || p > 100) throw new Error('percentage must be between 0 and 100');
    out.memory = p;
  }
  return out;
}
