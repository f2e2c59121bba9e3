// orchlet's cgroup options turned into the agent's NodeCgroups and memcg settings. Called once by
// the command (src/cli/orchlet.ts) after the runtime is connected.
import { readFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import type { AgentConfig } from '../agent.js';
import type { AgentOptions } from '../options.js';
import type { Runtime } from '../runtime/runtime.js';
import { CgroupFs } from './fs.js';
import { NodeCgroups } from './manager.js';
import { SystemdCgroups } from './systemd.js';
import { SystemdBus } from './systemd-dbus.js';
import { socketOwners } from './procs.js';
import { tryParseQuantity } from '../../util/quantity.js';
import { checkNodeAllocatable, parseQOSReserved } from './resources.js';

/** kernel.pid_max: the node's PID capacity (kubelet's pidlimit.Stats). */
function pidMax(): number | undefined {
  try {
    const n = Number(readFileSync('/proc/sys/kernel/pid_max', 'utf8').trim());
    return Number.isFinite(n) && n > 0 ? n : undefined;
  } catch {
    return undefined;
  }
}

/** How many CPUs a cpuset list ('0-1,4') names; undefined when it does not parse. */
function cpuCount(list: string): number | undefined {
  let n = 0;
  for (const part of list.split(',').map((p) => p.trim()).filter((p) => p !== '')) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part);
    if (!m) return undefined;
    n += m[2] !== undefined ? Number(m[2]) - Number(m[1]) + 1 : 1;
  }
  return n;
}

/**
 * The reservations as kubelet's run() leaves them: with --reserved-cpus, the system reservation's
 * cpu is that many CPUs and the orch reservation's cpu is 0.
 */
function reservations(o: AgentOptions): { system: Record<string, string>; kube: Record<string, string> } {
  const system = { ...(o.systemReserved ?? {}) };
  const kube = { ...(o.orchReserved ?? {}) };
  const count = (o.reservedCpus ?? '') !== '' ? cpuCount(o.reservedCpus!) : undefined;
  if (count !== undefined) {
    system.cpu = String(count);
    kube.cpu = '0';
  }
  return { system, kube };
}

/** The bytes a hard memory.available threshold ('100Mi' or '5%') keeps back. */
function evictionMemory(value: string | undefined, capacity: number): number {
  if (value === undefined) return 0;
  if (value.endsWith('%')) return Math.round((Number(value.slice(0, -1)) / 100) * capacity) || 0;
  const q = tryParseQuantity(value);
  return q ? Number(q.value()) : 0;
}

type Log = (level: 'info' | 'error', message: string) => void;

/** The path of a unix:// endpoint; undefined for other schemes. */
function socketPath(endpoint: string): string | undefined {
  if (endpoint.startsWith('unix://')) return endpoint.slice('unix://'.length);
  return endpoint.startsWith('/') ? endpoint : undefined;
}

/** The part of AgentConfig the cgroup options make: cgroups and memcgNotification (none off Linux). */
export function nodeCgroupsFromOptions(o: AgentOptions, runtime: Runtime, log: Log): Pick<AgentConfig, 'cgroups' | 'memcgNotification'> {
  if (process.platform !== 'linux') return {};
  const out: Pick<AgentConfig, 'cgroups' | 'memcgNotification'> = {};
  if (o.kernelMemcgNotification === true || o.experimentalKernelMemcgNotification === true) out.memcgNotification = {};
  const qos = parseQOSReserved(o.qosReserved ?? {});
  const gated = o.featureGates.QOSReserved === true;
  if (qos.memory !== undefined && !gated) log('error', '--qos-reserved has no effect without the QOSReserved feature gate (kubelet ignores it too)');
  if (!runtime.runsImages) {
    const given = ['enforce-node-allocatable', 'pod-max-pids', 'qos-reserved'].filter((f) => o.explicitFlags.has(f) || o.configFileFlags.has(f));
    if (given.length > 0) {
      log('info', `${given.map((f) => `--${f}`).join(', ')}: the built-in runtime runs pods as host processes outside cgroups, so no pods cgroup is made; reserved cgroups and process cgroups still apply`);
    }
  }
  const endpoint = socketPath(o.containerRuntimeEndpoint ?? '');
  const pid = pidMax();
  const capacity = { cpu: (cpus().length || 1) * 1000, memory: totalmem(), ...(pid !== undefined ? { pid } : {}) };
  const reserved = reservations(o);
  const invalid = checkNodeAllocatable(capacity, [reserved.system, reserved.kube], evictionMemory(o.evictionHard?.['memory.available'], capacity.memory));
  if (invalid !== undefined) throw new Error(`Failed to start ContainerManager: ${invalid} (--system-reserved, --orch-reserved, --eviction-hard)`);
  const fs = new CgroupFs();
  out.cgroups = new NodeCgroups({
    fs,
    // --cgroup-driver=systemd: slices through systemd's D-Bus API (the command checked that systemd runs)
    ...(o.cgroupDriver === 'systemd' ? { driver: new SystemdCgroups(fs, new SystemdBus()) } : {}),
    cgroupRoot: o.cgroupRoot,
    cgroupsPerQOS: o.cgroupsPerQos,
    podCgroups: runtime.runsImages === true,
    enforce: o.enforceNodeAllocatable,
    capacity,
    systemReserved: reserved.system,
    kubeReserved: reserved.kube,
    systemReservedCgroup: o.systemReservedCgroup,
    kubeReservedCgroup: o.orchReservedCgroup,
    ...(qos.memory !== undefined && gated ? { qosReservedMemory: qos.memory } : {}),
    podPidsLimit: o.podMaxPids,
    cpuCFSQuota: o.cpuCfsQuota,
    cpuPeriodUs: Math.round(o.cpuCfsQuotaPeriod * 1000),
    ...(o.systemCgroups ? { systemCgroups: o.systemCgroups } : {}),
    ...(o.orchletCgroups ? { agentCgroups: o.orchletCgroups } : {}),
    ...(o.runtimeCgroups ? { runtimeCgroups: o.runtimeCgroups } : {}),
    runtimePids: async () => (runtime.runsImages && endpoint !== undefined ? socketOwners(endpoint) : []),
    log,
  });
  return out;
}
