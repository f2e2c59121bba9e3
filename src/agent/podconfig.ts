// What a pod asks of a runtime that isolates it (the CRI runtime), as pure functions of the pod and
// the node's settings: kubelet's generatePodSandboxConfig (hostname, DNS, port mappings, cgroup
// parent, namespaces) and the Linux part of generateContainerConfig (cgroup limits from resources,
// security context). The process runtime ignores all of it. Called by the pod sync only.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { tryParseQuantity } from '../util/quantity.js';
import type { DNSConfig, LinuxContainerResources, LinuxContainerSecurityContext, LinuxPodSandboxConfig, PortMapping } from './runtime/runtime.js';
import { qosClass } from './status.js';
import type { Container, Pod } from './types.js';
import { seccompProfileOf, type SeccompOptions } from './seccomp.js';
import { systemdPathOf } from './cgroups/systemd-names.js';

export interface PodConfigOptions {
  /** --cgroup-root: the cgroup all pods go under ('' or '/': the root). */
  cgroupRoot?: string;
  /** --cgroups-per-qos: pods under kubepods[/burstable|/besteffort]/pod<uid>; default true. */
  cgroupsPerQOS?: boolean;
  /** --cgroup-driver: with systemd the parent is given as the slice's path (/kubepods.slice/kubepods-burstable.slice/...). */
  cgroupDriver?: string;
  /** --cluster-dns, --cluster-domain, --resolv-conf ('' disables the host's resolver). */
  clusterDNS?: string[];
  clusterDomain?: string;
  resolvConf?: string;
  /** --cpu-cfs-quota (default true) and --cpu-cfs-quota-period in ms (default 100). */
  cpuCFSQuota?: boolean;
  cpuCFSQuotaPeriodMs?: number;
  /** The node's memory in bytes (for the oom_score_adj of burstable containers). */
  memoryCapacity?: number;
  /** --seccomp-default (with the SeccompDefault gate) and <root-dir>/seccomp: seccomp.ts. */
  seccomp?: SeccompOptions;
}

/** kubelet's cgroup parent of a pod: <root>/kubepods[/burstable|/besteffort]/pod<uid>; undefined without --cgroups-per-qos. */
export function podCgroupParent(pod: Pod, o: PodConfigOptions): string | undefined {
  const name = cgroupfsParent(pod, o);
  return name !== undefined && o.cgroupDriver === 'systemd' ? systemdPathOf(name) : name;
}

function cgroupfsParent(pod: Pod, o: PodConfigOptions): string | undefined {
  if (o.cgroupsPerQOS === false) return o.cgroupRoot ? o.cgroupRoot : undefined;
  const qos = qosClass(pod);
  const parts = [o.cgroupRoot && o.cgroupRoot !== '' ? o.cgroupRoot : '/', 'kubepods'];
  if (qos === 'Burstable') parts.push('burstable');
  else if (qos === 'BestEffort') parts.push('besteffort');
  parts.push(`pod${pod.metadata.uid}`);
  return join(...parts);
}

interface ResolvConf {
  servers: string[];
  searches: string[];
  options: string[];
}

/** The nameserver, search and options lines of a resolv.conf ('' or unreadable: nothing). */
export function readResolvConf(path: string | undefined): ResolvConf {
  const out: ResolvConf = { servers: [], searches: [], options: [] };
  if (path === undefined || path === '') return out;
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return out;
  }
  for (const raw of text.split('\n')) {
    const line = raw.replace(/[#;].*$/, '').trim();
    const [key, ...rest] = line.split(/\s+/);
    if (key === 'nameserver' && rest[0]) out.servers.push(rest[0]);
    // kubelet reads only the last search line ('domain' is ignored), dropping '.' and trailing dots
    else if (key === 'search') out.searches = rest.filter((s) => s !== '.').map((s) => s.replace(/\.$/, ''));
    else if (key === 'options') out.options.push(...rest);
  }
  return out;
}

interface PodDNSConfig {
  nameservers?: string[];
  searches?: string[];
  options?: { name: string; value?: string }[];
}

/** kubelet 1.23's MissingClusterDNS message (the node's event; the pod's is prefixed with `pod: "<name>_<namespace>(<uid>)". `). */
export const MISSING_CLUSTER_DNS_MESSAGE = 'kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.';

/** Whether the pod's dnsPolicy asks for the cluster's DNS (ClusterFirst off the host network, ClusterFirstWithHostNet) and the agent has none. */
export function missingClusterDNS(pod: Pod, o: PodConfigOptions): boolean {
  const spec = pod.spec as { dnsPolicy?: string; hostNetwork?: boolean };
  const policy = spec.dnsPolicy ?? 'ClusterFirst';
  const cluster = policy === 'ClusterFirstWithHostNet' || (policy === 'ClusterFirst' && spec.hostNetwork !== true);
  return cluster && (o.clusterDNS ?? []).length === 0;
}

/**
 * kubelet's DNS configuration of a pod (pkg/kubelet/network/dns): dnsPolicy, then spec.dnsConfig merged in.
 * `onMissingClusterDNS` is called when the pod's policy asks for the cluster's DNS and the agent has no
 * --cluster-dns (the pod falls back to Default): kubelet's MissingClusterDNS warnings.
 */
export function podDNSConfig(pod: Pod, o: PodConfigOptions, onMissingClusterDNS?: () => void): DNSConfig {
  const spec = pod.spec as { dnsPolicy?: string; hostNetwork?: boolean; dnsConfig?: PodDNSConfig };
  let policy = spec.dnsPolicy ?? 'ClusterFirst';
  const clusterDNS = o.clusterDNS ?? [];
  if (policy === 'ClusterFirst' && spec.hostNetwork) policy = 'Default';
  if (missingClusterDNS(pod, o)) {
    onMissingClusterDNS?.();
    policy = 'Default';
  }
  const host = readResolvConf(o.resolvConf ?? '/etc/resolv.conf');
  let cfg: DNSConfig = { servers: [], searches: [], options: [] };
  if (policy === 'Default') {
    cfg = { servers: host.servers, searches: host.searches, options: host.options };
    // --resolv-conf="": no lookups (the runtime would otherwise copy the host's file): the local resolver, no search
    if (o.resolvConf === '') cfg = { servers: ['127.0.0.1'], searches: ['.'], options: [] };
  } else if (policy === 'ClusterFirst' || policy === 'ClusterFirstWithHostNet') {
    const d = o.clusterDomain;
    const searches = d ? [`${pod.metadata.namespace}.svc.${d}`, `svc.${d}`, d] : [];
    cfg = { servers: [...clusterDNS], searches: [...searches, ...host.searches.filter((s) => !searches.includes(s))], options: ['ndots:5'] };
  }
  const extra = spec.dnsConfig;
  if (extra) {
    for (const s of extra.nameservers ?? []) if (!cfg.servers.includes(s)) cfg.servers.push(s);
    for (const s of extra.searches ?? []) if (!cfg.searches.includes(s)) cfg.searches.push(s);
    for (const opt of extra.options ?? []) {
      const text = opt.value !== undefined ? `${opt.name}:${opt.value}` : opt.name;
      cfg.options = cfg.options.filter((x) => x.split(':')[0] !== opt.name);
      cfg.options.push(text);
    }
  }
  // kubelet's limits (without ExpandedDNSConfig): 3 nameservers, 6 search domains of 256 characters in all
  // (the last ones dropped until the line fits)
  cfg.servers = cfg.servers.slice(0, 3);
  cfg.searches = cfg.searches.slice(0, 6);
  while (cfg.searches.length > 0 && cfg.searches.join(' ').length > 256) cfg.searches.pop();
  return cfg;
}

interface ContainerPort {
  containerPort: number;
  hostPort?: number;
  hostIP?: string;
  protocol?: 'TCP' | 'UDP' | 'SCTP';
}

/** The host ports of the pod's containers (kubelet passes only those with a hostPort). */
export function podPortMappings(pod: Pod): PortMapping[] {
  const out: PortMapping[] = [];
  for (const c of pod.spec.containers) {
    for (const p of (c.ports ?? []) as ContainerPort[]) {
      if (!p.hostPort) continue;
      out.push({ protocol: p.protocol ?? 'TCP', containerPort: p.containerPort, hostPort: p.hostPort, ...(p.hostIP ? { hostIp: p.hostIP } : {}) });
    }
  }
  return out;
}

/** The Linux part of a pod's sandbox config. */
export function podSandboxLinux(pod: Pod, o: PodConfigOptions): LinuxPodSandboxConfig {
  const spec = pod.spec as { hostNetwork?: boolean; hostPID?: boolean; hostIPC?: boolean; securityContext?: { sysctls?: { name: string; value: string }[] } };
  const out: LinuxPodSandboxConfig = {};
  const parent = podCgroupParent(pod, o);
  if (parent !== undefined) out.cgroupParent = parent;
  if (spec.hostNetwork) out.hostNetwork = true;
  if (spec.hostPID) out.hostPID = true;
  if (spec.hostIPC) out.hostIPC = true;
  if ([...(pod.spec.initContainers ?? []), ...pod.spec.containers].some((c) => c.securityContext?.privileged === true)) out.privileged = true;
  const sysctls = spec.securityContext?.sysctls;
  if (sysctls && sysctls.length > 0) out.sysctls = Object.fromEntries(sysctls.map((s) => [s.name, s.value]));
  return out;
}

const MIN_SHARES = 2;
const SHARES_PER_CPU = 1024;
const MIN_QUOTA_PERIOD_US = 1000;

function quantity(resources: Record<string, unknown> | undefined, name: string): { value: bigint; milli: bigint } | undefined {
  const raw = resources?.[name];
  if (typeof raw !== 'string' && typeof raw !== 'number') return undefined;
  const q = tryParseQuantity(String(raw));
  return q ? { value: q.value(), milli: q.milliValue() } : undefined;
}

/** kubelet's cgroup limits of a container (cpu shares and CFS quota, memory limit, oom_score_adj). */
export function containerResources(pod: Pod, c: Container, o: PodConfigOptions): LinuxContainerResources {
  const r = (c.resources ?? {}) as { requests?: Record<string, unknown>; limits?: Record<string, unknown> };
  const cpuRequest = quantity(r.requests, 'cpu') ?? quantity(r.limits, 'cpu');
  const cpuLimit = quantity(r.limits, 'cpu');
  const memLimit = quantity(r.limits, 'memory');
  const memRequest = quantity(r.requests, 'memory') ?? memLimit;
  const out: LinuxContainerResources = {};
  const shares = cpuRequest ? (cpuRequest.milli * BigInt(SHARES_PER_CPU)) / 1000n : 0n;
  out.cpuShares = Number(shares < BigInt(MIN_SHARES) ? BigInt(MIN_SHARES) : shares);
  // kubelet sets the period whenever CFS quota is on (a container without a cpu limit gets quota 0: none)
  if (o.cpuCFSQuota !== false) {
    const period = BigInt(Math.round((o.cpuCFSQuotaPeriodMs ?? 100) * 1000));
    out.cpuPeriod = Number(period);
    if (cpuLimit && cpuLimit.milli > 0n) {
      const quota = (cpuLimit.milli * period) / 1000n;
      out.cpuQuota = Number(quota < BigInt(MIN_QUOTA_PERIOD_US) ? BigInt(MIN_QUOTA_PERIOD_US) : quota);
    }
  }
  if (memLimit) out.memoryLimitInBytes = Number(memLimit.value);
  const qos = qosClass(pod);
  if (qos === 'Guaranteed') out.oomScoreAdj = -997;
  else if (qos === 'BestEffort') out.oomScoreAdj = 1000;
  else {
    const capacity = o.memoryCapacity ?? 0;
    const request = memRequest ? Number(memRequest.value) : 0;
    const adj = capacity > 0 ? 1000 - Math.floor((1000 * request) / capacity) : 999;
    out.oomScoreAdj = Math.min(999, Math.max(2, adj));
  }
  return out;
}

interface FullSecurityContext {
  runAsUser?: number;
  runAsGroup?: number;
  privileged?: boolean;
  readOnlyRootFilesystem?: boolean;
  allowPrivilegeEscalation?: boolean;
  capabilities?: { add?: string[]; drop?: string[] };
  supplementalGroups?: number[];
  fsGroup?: number;
}

/** The container security context of an image runtime: the pod's and the container's, container fields first. */
export function imageSecurityContext(pod: Pod, c: Container, o: PodConfigOptions = {}): LinuxContainerSecurityContext {
  const podSC = (pod.spec.securityContext ?? {}) as FullSecurityContext;
  const sc = (c.securityContext ?? {}) as FullSecurityContext;
  const out: LinuxContainerSecurityContext = {};
  const runAsUser = sc.runAsUser ?? podSC.runAsUser;
  const runAsGroup = sc.runAsGroup ?? podSC.runAsGroup;
  if (runAsUser !== undefined) out.runAsUser = runAsUser;
  if (runAsGroup !== undefined) out.runAsGroup = runAsGroup;
  if (sc.privileged === true) out.privileged = true;
  if (sc.readOnlyRootFilesystem === true) out.readonlyRootfs = true;
  if (sc.allowPrivilegeEscalation === false) out.noNewPrivs = true;
  if (sc.capabilities) out.capabilities = { add: sc.capabilities.add ?? [], drop: sc.capabilities.drop ?? [] };
  const groups = [...(podSC.supplementalGroups ?? []), ...(podSC.fsGroup !== undefined ? [podSC.fsGroup] : [])];
  if (groups.length > 0) out.supplementalGroups = groups;
  out.seccomp = seccompProfileOf(pod, c, o.seccomp);
  return out;
}
