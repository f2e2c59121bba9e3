// The node's cgroups, as kubelet 1.23's container manager keeps them (pkg/kubelet/cm, cgroupfs
// driver):
//   - the pods' top-level cgroup <cgroup-root>/kubepods, created at start with node allocatable
//     (capacity minus --system-reserved and --orch-reserved; hard eviction thresholds are not
//     subtracted) as cpu.shares, memory.limit_in_bytes and pids.max when --enforce-node-allocatable
//     has 'pods', else with the whole capacity; the update is retried every minute until it holds
//     (memory already used above a new limit makes the write fail);
//   - with 'system-reserved' / 'kube-reserved' (also 'orch-reserved'), the limits of those
//     reservations written into --system-reserved-cgroup / --orch-reserved-cgroup, which must exist:
//     otherwise the agent does not start;
//   - the QoS tiers kubepods/burstable (cpu.shares of its pods' requests) and kubepods/besteffort
//     (2 shares), recomputed every minute, before a pod's cgroup is created and when pods stop; with
//     --qos-reserved=memory=N% (gate QOSReserved) their memory limits keep N% of the Guaranteed
//     (and, for besteffort, Burstable) pods' memory requests out of reach;
//   - each pod's cgroup kubepods[/burstable|/besteffort]/pod<uid>, created before its sandbox with
//     ResourceConfigForPod and pids.max of --pod-max-pids (when > 0): the CRI runtime puts the
//     sandbox and containers under it (the cgroup parent) and removes it with the sandbox;
//   - --system-cgroups, --orchlet-cgroups and --runtime-cgroups: processes moved in, checked every
//     minute (procs.ts).
// With --cgroup-driver=systemd the same cgroups are slice units made through systemd (systemd.ts);
// the process cgroups stay cgroupfs paths, as kubelet's are.
// Only runtimes that isolate containers put pods in cgroups: with the built-in process runtime
// (pods are host processes) the pods, QoS and pod cgroups are not made; the reserved cgroups and the
// process cgroups are.
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { podCgroupParent } from '../podconfig.js';
import type { Pod } from '../types.js';
import { CgroupFs, type ResourceConfig } from './fs.js';
import { ensureProcessInCgroup, ensureSystemCgroups, SYSTEM_OOM_SCORE_ADJ } from './procs.js';
import { cgroupConfigOf, nodeAllocatableAbsolute, nodeCgroupConfig, qosCPUShares, qosMemoryLimits, resourceConfigForPod, type NodeResources } from './resources.js';
import { formatDuration } from '../../util/flags.js';

export interface NodeCgroupsConfig {
  /** --cgroup-root ('' means '/'). */
  cgroupRoot: string;
  /** --cgroups-per-qos. */
  cgroupsPerQOS: boolean;
  /** Whether the runtime puts pods in cgroups (CRI runtimes); the pods' hierarchy is made only then. */
  podCgroups: boolean;
  /** --enforce-node-allocatable ('orch-reserved' counts as 'kube-reserved'). */
  enforce: readonly string[];
  /** Node capacity: cpu millicores, memory bytes, kernel.pid_max. */
  capacity: NodeResources;
  systemReserved: Record<string, string>;
  kubeReserved: Record<string, string>;
  systemReservedCgroup: string;
  kubeReservedCgroup: string;
  /** --qos-reserved memory percentage, only with the QOSReserved gate. */
  qosReservedMemory?: number;
  /** --pod-max-pids; > 0 sets pids.max of each pod's cgroup. */
  podPidsLimit: number;
  /** --cpu-cfs-quota and --cpu-cfs-quota-period (µs) for pod cgroups. */
  cpuCFSQuota: boolean;
  cpuPeriodUs: number;
  /** --system-cgroups, --orchlet-cgroups, --runtime-cgroups ('' or unset: none). */
  systemCgroups?: string;
  agentCgroups?: string;
  runtimeCgroups?: string;
  /** The container runtime's processes (for --runtime-cgroups). */
  runtimePids?: () => Promise<number[]>;
  /** How often the QoS tiers, the process cgroups and a failed allocatable update are redone (kubelet: 1 min). */
  periodMs?: number;
  /** A pod cgroup younger than this is never an orphan (it may be about to get its sandbox); default 1 min. */
  orphanMinAgeMs?: number;
  fs?: CgroupFs;
  /** How the pods' and reserved cgroups are made (--cgroup-driver); default cgroupfs on `fs`. */
  driver?: CgroupDriver;
  log: (level: 'info' | 'error', message: string) => void;
  /** Node events (NodeAllocatableEnforced, FailedNodeAllocatableEnforcement). */
  event?: (type: 'Normal' | 'Warning', reason: string, message: string) => void;
}

/**
 * A cgroup driver (kubelet's cgroup manager per --cgroup-driver): names are given in cgroupfs form
 * ("/kubepods/burstable"); `name` is where the driver keeps one in the cgroup filesystem.
 */
export interface CgroupDriver {
  name(cgroup: string): string;
  exists(cgroup: string): boolean;
  create(cgroup: string, r?: ResourceConfig): Promise<void>;
  update(cgroup: string, r: ResourceConfig): Promise<void>;
  remove(cgroup: string): Promise<void>;
  /** The cgroup name part of a child directory's entry (the pod cgroups found by housekeeping). */
  childName(entry: string): string;
  /** The children of `parent` this driver made and still holds (cgroup name part -> when made, ms). */
  made?(parent: string): Map<string, number>;
  close?(): void;
}

/** The cgroupfs driver: names are the paths themselves. */
export function cgroupfsDriver(fs: CgroupFs): CgroupDriver {
  return {
    name: (c) => c,
    exists: (c) => fs.exists(c),
    create: (c, r) => fs.create(c, r),
    update: (c, r) => fs.update(c, r),
    remove: (c) => fs.remove(c),
    childName: (e) => e,
  };
}

/** kubelet's CgroupName formatting in messages: the path's parts, quoted. */
function cgroupNameText(name: string): string {
  return `[${name
    .split('/')
    .filter((p) => p !== '')
    .map((p) => JSON.stringify(p))
    .join(' ')}]`;
}

export class NodeCgroups {
  readonly fs: CgroupFs;
  readonly driver: CgroupDriver;
  private readonly timers: NodeJS.Timeout[] = [];
  private activePods: () => Pod[] = () => [];
  private qosPending: NodeJS.Timeout | undefined;
  private readonly lastErrors = new Map<string, string>();
  private stopped = false;

  constructor(private readonly c: NodeCgroupsConfig) {
    this.fs = c.fs ?? new CgroupFs();
    this.driver = c.driver ?? cgroupfsDriver(this.fs);
  }

  /** <cgroup-root>/kubepods: the pods' top-level cgroup. */
  get podsCgroup(): string {
    return join(this.c.cgroupRoot === '' ? '/' : this.c.cgroupRoot, 'kubepods');
  }

  private get hierarchy(): boolean {
    return this.c.cgroupsPerQOS && this.c.podCgroups && this.fs.available;
  }

  /** Node allocatable as the pods' cgroup gets it (capacity when 'pods' is not enforced). */
  podsCgroupConfig(): ResourceConfig {
    const r = this.c.enforce.includes('pods') ? nodeAllocatableAbsolute(this.c.capacity, [this.c.systemReserved, this.c.kubeReserved]) : this.c.capacity;
    return nodeCgroupConfig(r);
  }

  /**
   * kubelet's setupNode for cgroups: the pods' and QoS cgroups, allocatable enforcement, the process
   * cgroups; then the periodic passes. Throws (the agent must not start) when a reserved cgroup
   * cannot be enforced.
   */
  async start(activePods: () => Pod[]): Promise<void> {
    this.activePods = activePods;
    if (!this.fs.available) {
      if (this.c.enforce.length > 0 || this.c.systemCgroups || this.c.agentCgroups || this.c.runtimeCgroups) {
        this.c.log('error', 'no cgroup filesystem is mounted: node allocatable and the process cgroups are not enforced');
      }
      return;
    }
    if (this.hierarchy) {
      if (!this.driver.exists(this.podsCgroup)) await this.driver.create(this.podsCgroup, this.podsCgroupConfig());
      await this.startQoS();
      this.enforcePodsCgroup();
    }
    await this.enforceReserved('system-reserved', 'System', this.c.systemReservedCgroup, this.c.systemReserved, '--system-reserved-cgroup');
    await this.enforceReserved('kube-reserved', 'Kube', this.c.kubeReservedCgroup, this.c.kubeReserved, '--orch-reserved-cgroup');
    if (this.c.systemCgroups === '/') throw new Error('system container cannot be root ("/") (--system-cgroups)');
    await this.ensureProcessCgroups();
    this.every(() => this.ensureProcessCgroups());
    if (this.hierarchy) this.every(() => this.updateQoS());
  }

  /** Where node events go (the agent's recorder, API-server mode). */
  onEvent(fn: NonNullable<NodeCgroupsConfig['event']>): void {
    this.c.event = fn;
  }

  stop(): void {
    this.stopped = true;
    for (const t of this.timers) clearInterval(t);
    clearTimeout(this.qosPending);
    this.driver.close?.();
  }

  private every(pass: () => Promise<void>): void {
    const t = setInterval(() => {
      if (!this.stopped) void pass().catch((err: unknown) => this.c.log('error', String(err)));
    }, this.c.periodMs ?? 60_000);
    t.unref();
    this.timers.push(t);
  }

  /** enforceNodeAllocatableCgroups for the pods' cgroup: updated now, retried every minute until it holds. */
  private enforcePodsCgroup(): void {
    const config = this.podsCgroupConfig();
    const attempt = async (): Promise<boolean> => {
      try {
        await this.driver.update(this.podsCgroup, config);
        this.c.event?.('Normal', 'NodeAllocatableEnforced', 'Updated Node Allocatable limit across pods');
        this.c.log('info', `node allocatable enforced on ${this.podsCgroup}: ${describe(config)}`);
        return true;
      } catch (err) {
        const message = `Failed to update Node Allocatable Limits ${cgroupNameText(this.podsCgroup)}: ${String(err)}`;
        this.c.event?.('Warning', 'FailedNodeAllocatableEnforcement', message);
        this.c.log('error', message);
        return false;
      }
    };
    void attempt().then((ok) => {
      if (ok || this.stopped) return;
      const t = setInterval(() => {
        if (this.stopped) return clearInterval(t);
        void attempt().then((done) => done && clearInterval(t));
      }, this.c.periodMs ?? 60_000);
      t.unref();
      this.timers.push(t);
    });
  }

  /** enforceExistingCgroup for a reservation listed in --enforce-node-allocatable. */
  private async enforceReserved(key: string, who: string, name: string, reserved: Record<string, string>, flag: string): Promise<void> {
    const listed = this.c.enforce.includes(key) || (key === 'kube-reserved' && this.c.enforce.includes('orch-reserved'));
    if (!listed) return;
    const config = cgroupConfigOf(reserved);
    try {
      if (!this.driver.exists(name)) throw new Error(`${cgroupNameText(name)} cgroup does not exist`);
      await this.driver.update(name, config);
    } catch (err) {
      const message = `Failed to enforce ${who} Reserved Cgroup Limits on ${JSON.stringify(name)}: ${err instanceof Error ? err.message : String(err)}`;
      this.c.event?.('Warning', 'FailedNodeAllocatableEnforcement', message);
      throw new Error(`${message} (${flag})`, { cause: err });
    }
    const lower = who.toLowerCase();
    this.c.event?.('Normal', 'NodeAllocatableEnforced', `Updated limits on ${lower} reserved cgroup ${name}`);
    this.c.log('info', `${lower} reserved enforced on ${name}: ${describe(config)}`);
  }

  /** qosContainerManager.Start: both tiers created (or their settings renewed). */
  private async startQoS(): Promise<void> {
    for (const [tier, r] of [
      ['burstable', {}],
      ['besteffort', { cpuShares: 2 }],
    ] as const) {
      const name = join(this.podsCgroup, tier);
      try {
        if (!this.driver.exists(name)) await this.driver.create(name, r);
        else await this.driver.update(name, r);
      } catch (err) {
        throw new Error(`failed to create top level ${tier === 'burstable' ? 'Burstable' : 'BestEffort'} QOS cgroup : ${String(err)}`, { cause: err });
      }
    }
    await this.updateQoS();
  }

  /**
   * UpdateCgroups: the tiers' cpu shares from the active pods, and with --qos-reserved their memory
   * limits; a limit the tier's usage already exceeds is retried at that usage (kubelet's
   * retrySetMemoryReserve).
   */
  async updateQoS(): Promise<void> {
    if (!this.hierarchy || this.stopped) return;
    const pods = this.activePods();
    const shares = qosCPUShares(pods);
    const configs: Record<'burstable' | 'besteffort', ResourceConfig> = {
      burstable: { cpuShares: shares.burstable },
      besteffort: { cpuShares: shares.besteffort },
    };
    const percent = this.c.qosReservedMemory;
    if (percent !== undefined) {
      const allocatable = nodeAllocatableAbsolute(this.c.capacity, [this.c.systemReserved, this.c.kubeReserved]).memory;
      const limits = qosMemoryLimits(pods, allocatable, percent);
      if (limits) {
        configs.burstable.memory = limits.burstable;
        configs.besteffort.memory = limits.besteffort;
      }
      let failed = false;
      for (const [tier, r] of Object.entries(configs)) await this.driver.update(join(this.podsCgroup, tier), r).catch(() => (failed = true));
      if (!failed) return;
      for (const [tier, r] of Object.entries(configs)) {
        const usage = await this.fs.memoryUsage(this.driver.name(join(this.podsCgroup, tier)));
        if (usage !== undefined && r.memory !== undefined && usage > r.memory) r.memory = usage;
      }
    }
    for (const [tier, r] of Object.entries(configs)) {
      await this.driver.update(join(this.podsCgroup, tier), r).catch((err: unknown) => this.c.log('error', `Failed to update QoS cgroup configuration: ${String(err)}`));
    }
  }

  /** The pods' cgroup's path (as the driver keeps it) when this agent keeps it (a CRI runtime with --cgroups-per-qos), for allocatableMemory.available. */
  get allocatableCgroup(): string | undefined {
    return this.hierarchy ? this.driver.name(this.podsCgroup) : undefined;
  }

  /**
   * The allocatableMemory.available signal (kubelet's "pods" system container): the pods' cgroup's
   * memory limit less its working set (usage less inactive file pages), with the limit as capacity;
   * undefined without the pods' cgroup or a limit on it.
   */
  async allocatableMemory(): Promise<{ available: number; capacity: number } | undefined> {
    const name = this.allocatableCgroup;
    if (name === undefined) return undefined;
    const [limit, usage, inactive] = await Promise.all([this.fs.memoryLimit(name), this.fs.memoryUsage(name), this.fs.memoryStat(name, 'total_inactive_file')]);
    if (limit === undefined || usage === undefined) return undefined;
    const workingSet = Math.max(0, usage - (inactive ?? 0));
    return { available: Math.max(0, limit - workingSet), capacity: limit };
  }

  /** A QoS update soon (pods stopped or went); several requests within the same tick make one. */
  podsChanged(): void {
    if (!this.hierarchy || this.stopped || this.qosPending) return;
    this.qosPending = setTimeout(() => {
      this.qosPending = undefined;
      void this.updateQoS().catch((err: unknown) => this.c.log('error', `Failed to update QoS cgroups: ${String(err)}`));
    }, 0);
  }

  /** The cgroup of a pod (its sandbox's cgroup parent). */
  podCgroup(pod: Pod): string | undefined {
    return podCgroupParent(pod, { cgroupRoot: this.c.cgroupRoot, cgroupsPerQOS: this.c.cgroupsPerQOS });
  }

  /**
   * podContainerManager.EnsureExists, called before a pod's sandbox is made: when its cgroup does
   * not exist yet, the QoS tiers are updated with it counted, and the cgroup is created with the
   * pod's resources and --pod-max-pids.
   */
  async ensurePod(pod: Pod): Promise<void> {
    if (!this.hierarchy) return;
    const name = this.podCgroup(pod);
    if (name === undefined || this.driver.exists(name)) return;
    await this.updateQoS().catch((err: unknown) => this.c.log('error', `Failed to update QoS cgroups while syncing pod: ${String(err)}`));
    const r = resourceConfigForPod(pod, { cpuCFSQuota: this.c.cpuCFSQuota, cpuPeriodUs: this.c.cpuPeriodUs });
    if (this.c.podPidsLimit > 0) r.pidsLimit = this.c.podPidsLimit;
    try {
      await this.driver.create(name, r);
    } catch (err) {
      throw new Error(`failed to ensure that the pod: ${pod.metadata.uid} cgroups exist and are correctly applied: failed to create container for ${cgroupNameText(name)} : ${String(err)}`, { cause: err });
    }
  }

  /**
   * kubelet's cleanupOrphanedPodCgroups, from housekeeping: the pod cgroups under the QoS hierarchy
   * whose pod `known` does not hold are removed once empty (a cgroup with processes left is tried
   * again next time). A sandbox's removal takes its cgroup along only in the agent that made it, so
   * pods adopted after a restart, or whose sandbox never started, leave theirs here. A driver that
   * keeps cgroups as units (systemd) also names those it made whose directory went with the sandbox.
   */
  async cleanupOrphans(known: (uid: string) => boolean): Promise<string[]> {
    if (!this.hierarchy || this.stopped) return [];
    const removed: string[] = [];
    const minAge = this.c.orphanMinAgeMs ?? 60_000;
    for (const tier of ['', 'burstable', 'besteffort']) {
      const parent = join(this.podsCgroup, tier);
      const dir = this.fs.path('memory', this.driver.name(parent));
      if (dir === undefined) continue;
      const candidates = new Map<string, number>();
      for (const e of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
        if (!e.isDirectory()) continue;
        candidates.set(this.driver.childName(e.name), (await stat(join(dir, e.name)).catch(() => undefined))?.mtimeMs ?? Date.now());
      }
      for (const [child, since] of this.driver.made?.(parent) ?? []) if (!candidates.has(child)) candidates.set(child, since);
      for (const [child, since] of candidates) {
        const m = /^pod(.+)$/.exec(child);
        if (!m || known(m[1]!) || Date.now() - since < minAge) continue;
        const name = join(parent, child);
        try {
          await this.driver.remove(name);
          removed.push(name);
        } catch (err) {
          this.c.log('info', `orphaned pod cgroup ${name} not removed yet: ${String(err)}`);
        }
      }
    }
    return removed;
  }

  /** The system containers' ensureState: --system-cgroups, --orchlet-cgroups, --runtime-cgroups. */
  private async ensureProcessCgroups(): Promise<void> {
    const report = (what: string, errors: string[]): void => {
      const text = errors.join('; ');
      if (text !== '' && this.lastErrors.get(what) !== text) this.c.log('error', `Failed to ensure state of ${what}: ${text}`);
      this.lastErrors.set(what, text);
    };
    const sys = this.c.systemCgroups;
    if (sys) report(`system cgroup ${sys} (--system-cgroups)`, await ensureSystemCgroups(this.fs, sys));
    const agent = this.c.agentCgroups;
    if (agent) report(`orchlet cgroup ${agent} (--orchlet-cgroups)`, await ensureProcessInCgroup(this.fs, process.pid, agent, SYSTEM_OOM_SCORE_ADJ));
    const rt = this.c.runtimeCgroups;
    if (rt && this.c.runtimePids) {
      const pids = await this.c.runtimePids();
      if (pids.length === 0) report(`runtime cgroup ${rt} (--runtime-cgroups)`, ['no process of the container runtime found']);
      const errors: string[] = [];
      for (const pid of pids) errors.push(...(await ensureProcessInCgroup(this.fs, pid, rt, SYSTEM_OOM_SCORE_ADJ)));
      if (pids.length > 0) report(`runtime cgroup ${rt} (--runtime-cgroups)`, errors);
    }
  }
}

function describe(r: ResourceConfig): string {
  const parts: string[] = [];
  if (r.cpuShares !== undefined) parts.push(`cpu.shares=${r.cpuShares}`);
  if (r.memory !== undefined) parts.push(`memory=${r.memory}`);
  if (r.pidsLimit !== undefined) parts.push(`pids.max=${r.pidsLimit}`);
  return parts.join(' ') || 'nothing to set';
}

/**
 * kubelet's validation of the cgroup options (KubeletConfiguration validation and the container
 * manager's checks at start); returns the first problem, naming the options.
 */
export function checkCgroupOptions(o: {
  enforceNodeAllocatable: readonly string[];
  cgroupsPerQos: boolean;
  systemReservedCgroup: string;
  orchReservedCgroup: string;
  systemCgroups?: string | undefined;
  cgroupRoot: string;
  /** --cpu-cfs-quota-period (ms) and the feature gates (CustomCPUCFSQuotaPeriod); unchecked when absent. */
  cpuCfsQuotaPeriod?: number;
  featureGates?: Readonly<Record<string, boolean>>;
}): string | undefined {
  if (o.cpuCfsQuotaPeriod !== undefined) {
    // kubelet 1.23: another period than 100ms needs the alpha gate, and then lies within 1µs..1s
    const period = formatDuration(o.cpuCfsQuotaPeriod);
    if (o.featureGates?.CustomCPUCFSQuotaPeriod !== true && o.cpuCfsQuotaPeriod !== 100) {
      return `invalid configuration: cpuCFSQuotaPeriod (--cpu-cfs-quota-period) ${period} requires feature gate CustomCPUCFSQuotaPeriod`;
    }
    if (o.featureGates?.CustomCPUCFSQuotaPeriod === true && (o.cpuCfsQuotaPeriod < 0.001 || o.cpuCfsQuotaPeriod > 1000)) {
      return `invalid configuration: cpuCFSQuotaPeriod (--cpu-cfs-quota-period) ${period} must be between 1usec and 1sec, inclusive`;
    }
  }
  const enforce = o.enforceNodeAllocatable;
  if (!o.cgroupsPerQos && enforce.length > 0) {
    return 'invalid configuration: enforceNodeAllocatable (--enforce-node-allocatable) is not supported unless cgroupsPerQOS (--cgroups-per-qos) feature is turned on';
  }
  if ((o.systemCgroups ?? '') !== '' && o.cgroupRoot === '') {
    return 'invalid configuration: systemCgroups (--system-cgroups) was specified and cgroupRoot (--cgroup-root) was not specified';
  }
  for (const v of enforce) {
    if (v === 'system-reserved' && o.systemReservedCgroup === '') {
      return 'invalid configuration: systemReservedCgroup (--system-reserved-cgroup) must be specified when "system-reserved" contained in enforceNodeAllocatable (--enforce-node-allocatable)';
    }
    if ((v === 'kube-reserved' || v === 'orch-reserved') && o.orchReservedCgroup === '') {
      return `invalid configuration: kubeReservedCgroup (--orch-reserved-cgroup) must be specified when "${v}" contained in enforceNodeAllocatable (--enforce-node-allocatable)`;
    }
    if (v === 'none' && enforce.length > 1) {
      return 'invalid configuration: enforceNodeAllocatable (--enforce-node-allocatable) may not contain additional enforcements when "none" is specified';
    }
  }
  return undefined;
}
