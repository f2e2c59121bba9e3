// The Node object orchlet registers and the status it posts, as pure functions of what the host
// looks like (kubelet's initialNode and the node status setters of pkg/kubelet/nodestatus, 1.23):
// standard labels, spec (unschedulable, taints, providerID), capacity and allocatable, addresses,
// the four conditions with kubelet's reasons and messages, nodeInfo and daemonEndpoints.
import type { Json } from '../client/client.js';
import { microTime } from '../time.js';

/** Go's GOARCH for Node's process.arch. */
export function goArch(arch: string = process.arch): string {
  return ({ x64: 'amd64', ia32: '386', arm64: 'arm64', arm: 'arm', ppc64: 'ppc64le', s390x: 's390x', riscv64: 'riscv64' } as Record<string, string>)[arch] ?? arch;
}

export interface HostFacts {
  hostname: string;
  cpus: number;
  memoryBytes: number;
  /** Size of the filesystem holding --root-dir. */
  rootFsBytes: number;
  machineID: string;
  systemUUID: string;
  bootID: string;
  kernelVersion: string;
  osImage: string;
}

export interface Taint {
  key: string;
  value?: string;
  effect: string;
}

export interface NodeSettings {
  nodeName: string;
  /** --node-ip, as given (one, or two for dual stack). */
  nodeIPs: string[];
  labels: Record<string, string>;
  taints: Taint[];
  registerSchedulable: boolean;
  providerID?: string;
  maxPods: number;
  /** --orch-reserved and --system-reserved: resource -> quantity. */
  reserved: Record<string, string>[];
  /** --eviction-hard: signal -> threshold ('100Mi' or '10%'). */
  evictionHard: Record<string, string>;
  /** The agent's --port. */
  port: number;
  /** e.g. orch://0.1.0 */
  containerRuntimeVersion: string;
  /** e.g. v1.23.17 */
  kubeletVersion: string;
  controllerManagedAttachDetach: boolean;
}

export const TAINT_UNSCHEDULABLE = 'node.kubernetes.io/unschedulable';

/** --register-with-taints entries ("key=value:effect", parsed as key -> "value:effect") as taints. */
export function parseTaints(map: Record<string, string> | undefined): Taint[] {
  return Object.entries(map ?? {}).map(([key, rest]) => {
    const i = rest.lastIndexOf(':');
    const value = i < 0 ? rest : rest.slice(0, i);
    const effect = i < 0 ? '' : rest.slice(i + 1);
    return value === '' ? { key, effect } : { key, value, effect };
  });
}

/** The Node orchlet creates: metadata and spec (kubelet's initialNode); the status comes from nodeStatus. */
export function initialNode(s: NodeSettings, host: HostFacts): Json {
  const os = process.platform;
  const arch = goArch();
  const labels: Record<string, string> = {
    'beta.kubernetes.io/arch': arch,
    'beta.kubernetes.io/os': os,
    'kubernetes.io/arch': arch,
    'kubernetes.io/hostname': host.hostname,
    'kubernetes.io/os': os,
    ...s.labels,
  };
  const taints: Json[] = s.taints.map((t) => ({ ...t }));
  if (!s.registerSchedulable && !taints.some((t) => t.key === TAINT_UNSCHEDULABLE && t.effect === 'NoSchedule')) {
    taints.push({ key: TAINT_UNSCHEDULABLE, effect: 'NoSchedule' });
  }
  const spec: Json = {};
  if (!s.registerSchedulable) spec.unschedulable = true;
  if (taints.length > 0) spec.taints = taints;
  if (s.providerID !== undefined && s.providerID !== '') spec.providerID = s.providerID;
  const metadata: Json = { name: s.nodeName, labels };
  if (s.controllerManagedAttachDetach) metadata.annotations = { 'volumes.kubernetes.io/controller-managed-attach-detach': 'true' };
  return { apiVersion: 'v1', kind: 'Node', metadata, spec };
}

/** Memory and storage as cadvisor reports them: Ki when whole, bytes otherwise. */
export function bytesQuantity(n: number): string {
  const v = Math.max(0, Math.floor(n));
  return v % 1024 === 0 ? `${v / 1024}Ki` : String(v);
}

function milliQuantity(m: number): string {
  const v = Math.max(0, Math.round(m));
  return v % 1000 === 0 ? String(v / 1000) : `${v}m`;
}

const UNITS: Record<string, number> = {
  '': 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18, m: 1e-3,
  Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60,
};

/** A quantity as a number of base units (cores, bytes); NaN when it does not parse. */
export function quantityValue(q: string): number {
  const m = /^([+-]?\d+(?:\.\d+)?)([a-zA-Z]*)$/.exec(q.trim());
  if (!m) return NaN;
  const unit = UNITS[m[2]!];
  return unit === undefined ? NaN : Number(m[1]) * unit;
}

/** Capacity as kubelet reports it (cpu, memory, ephemeral-storage, hugepages, pods). */
export function capacityOf(s: NodeSettings, host: HostFacts): Record<string, string> {
  return {
    cpu: String(host.cpus),
    'ephemeral-storage': bytesQuantity(host.rootFsBytes),
    'hugepages-1Gi': '0',
    'hugepages-2Mi': '0',
    memory: bytesQuantity(host.memoryBytes),
    pods: String(s.maxPods),
  };
}

/** What a hard eviction threshold holds back of a resource (kubelet's hardEvictionReservation). */
function evictionReservation(evictionHard: Record<string, string>, resource: 'memory' | 'ephemeral-storage', capacity: number): number {
  const signal = resource === 'memory' ? 'memory.available' : 'nodefs.available';
  const t = evictionHard[signal];
  if (t === undefined) return 0;
  if (t.endsWith('%')) return (Number(t.slice(0, -1)) / 100) * capacity;
  const v = quantityValue(t);
  return Number.isFinite(v) ? v : 0;
}

/** Allocatable: capacity minus --orch-reserved, --system-reserved and the hard eviction thresholds, never below 0. */
export function allocatableOf(s: NodeSettings, host: HostFacts): Record<string, string> {
  const reserved = (r: string): number => s.reserved.reduce((sum, m) => sum + (m[r] !== undefined ? quantityValue(m[r]) || 0 : 0), 0);
  const cap = capacityOf(s, host);
  const memory = host.memoryBytes - reserved('memory') - evictionReservation(s.evictionHard, 'memory', host.memoryBytes);
  const storage = host.rootFsBytes - reserved('ephemeral-storage') - evictionReservation(s.evictionHard, 'ephemeral-storage', host.rootFsBytes);
  return {
    ...cap,
    cpu: milliQuantity(host.cpus * 1000 - reserved('cpu') * 1000),
    'ephemeral-storage': bytesQuantity(storage),
    memory: bytesQuantity(memory),
  };
}

export interface ConditionInput {
  ready: boolean;
  /** Why the node is not ready (joined into the Ready condition's message). */
  notReadyReasons?: string[];
  memoryPressure?: boolean;
  diskPressure?: boolean;
  pidPressure?: boolean;
}

const CONDITION_TEXT: Record<string, [string, string, string, string]> = {
  // type: [reason False, message False, reason True, message True]
  MemoryPressure: ['KubeletHasSufficientMemory', 'kubelet has sufficient memory available', 'KubeletHasInsufficientMemory', 'kubelet has insufficient memory available'],
  DiskPressure: ['KubeletHasNoDiskPressure', 'kubelet has no disk pressure', 'KubeletHasDiskPressure', 'kubelet has disk pressure'],
  PIDPressure: ['KubeletHasSufficientPID', 'kubelet has sufficient PID available', 'KubeletHasInsufficientPID', 'kubelet has insufficient PID available'],
};

/**
 * The four conditions in kubelet's order, keeping lastTransitionTime from `old` when the status
 * did not change. lastHeartbeatTime is `now`.
 */
export function nodeConditions(input: ConditionInput, old: Json[] | undefined, now: Date): Json[] {
  const ts = rfc3339s(now);
  const make = (type: string, status: boolean, reason: string, message: string): Json => {
    const value = status ? 'True' : 'False';
    const prev = old?.find((c) => c.type === type);
    return {
      type,
      status: value,
      lastHeartbeatTime: ts,
      lastTransitionTime: prev && prev.status === value && typeof prev.lastTransitionTime === 'string' ? prev.lastTransitionTime : ts,
      reason,
      message,
    };
  };
  const pressure = (type: string, on: boolean | undefined): Json => {
    const [rf, mf, rt, mt] = CONDITION_TEXT[type]!;
    return on === true ? make(type, true, rt, mt) : make(type, false, rf, mf);
  };
  return [
    pressure('MemoryPressure', input.memoryPressure),
    pressure('DiskPressure', input.diskPressure),
    pressure('PIDPressure', input.pidPressure),
    input.ready
      ? make('Ready', true, 'KubeletReady', 'kubelet is posting ready status')
      : make('Ready', false, 'KubeletNotReady', aggregateMessage(input.notReadyReasons ?? [])),
  ];
}

/** An aggregate of error messages as Kubernetes prints one: a single message alone, several distinct ones as [a, b]. */
export function aggregateMessage(messages: string[]): string {
  const distinct = [...new Set(messages)];
  return distinct.length === 1 ? distinct[0]! : distinct.length === 0 ? '' : `[${distinct.join(', ')}]`;
}

/** The addresses kubelet reports: InternalIP(s) then Hostname. */
export function nodeAddresses(nodeIPs: string[], hostname: string): Json[] {
  return [...nodeIPs.map((address) => ({ type: 'InternalIP', address })), { type: 'Hostname', address: hostname }];
}

/** The whole status (conditions from nodeConditions; images, when given, as node status lists them). */
export function nodeStatus(s: NodeSettings, host: HostFacts, conditions: Json[], images?: Json[]): Json {
  return {
    ...(images !== undefined ? { images } : {}),
    capacity: capacityOf(s, host),
    allocatable: allocatableOf(s, host),
    conditions,
    addresses: nodeAddresses(s.nodeIPs, host.hostname),
    daemonEndpoints: { kubeletEndpoint: { Port: s.port } },
    nodeInfo: {
      machineID: host.machineID,
      systemUUID: host.systemUUID,
      bootID: host.bootID,
      kernelVersion: host.kernelVersion,
      osImage: host.osImage,
      containerRuntimeVersion: s.containerRuntimeVersion,
      kubeletVersion: s.kubeletVersion,
      kubeProxyVersion: s.kubeletVersion,
      operatingSystem: process.platform,
      architecture: goArch(),
    },
  };
}

/** Whether two statuses differ other than in heartbeat times (kubelet's nodeStatusHasChanged). */
export function nodeStatusChanged(a: Json | undefined, b: Json): boolean {
  const strip = (s: Json | undefined): string =>
    JSON.stringify(s === undefined ? null : { ...s, conditions: ((s.conditions as Json[] | undefined) ?? []).map((c) => ({ ...c, lastHeartbeatTime: undefined })) });
  return strip(a) !== strip(b);
}

function rfc3339s(d: Date): string {
  return d.toISOString().slice(0, 19) + 'Z';
}

/** A coordination.k8s.io/v1 Lease for the node (kubelet's node lease). */
export function nodeLease(nodeName: string, durationSeconds: number, now: Date, owner?: { name: string; uid: string }): Json {
  const metadata: Json = { name: nodeName, namespace: 'kube-node-lease' };
  if (owner) metadata.ownerReferences = [{ apiVersion: 'v1', kind: 'Node', name: owner.name, uid: owner.uid }];
  return {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata,
    spec: { holderIdentity: nodeName, leaseDurationSeconds: durationSeconds, renewTime: microTime(now) },
  };
}
