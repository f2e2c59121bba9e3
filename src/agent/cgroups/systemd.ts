// The systemd cgroup driver (kubelet's cgroup manager with --cgroup-driver=systemd, over
// libcontainer's systemd manager): each cgroup of the pods' hierarchy is a slice unit
// (kubepods.slice, kubepods-burstable.slice, kubepods-burstable-pod<uid>.slice; systemd-names.ts),
// made as a transient unit through systemd's D-Bus API and stopped when removed; the resource
// values go to systemd as unit properties and are also written through cgroupfs, as libcontainer's
// Set does (systemd has no property for some, and its cgroup is the same directory).
//
// Who calls: NodeCgroups (manager.ts) through the CgroupDriver interface, with names in cgroupfs
// form; the process cgroups (--orchlet-cgroups, ...) stay plain cgroupfs paths, as in kubelet.
import { posix } from 'node:path';
import type { CgroupFs, ResourceConfig } from './fs.js';
import { sharesToWeight } from './fs.js';
import type { CgroupDriver } from './manager.js';
import type { SystemdBus, UnitProperty } from './systemd-dbus.js';
import { parseSystemdName, sliceUnitOf, systemdPathOf } from './systemd-names.js';

/** USEC_INFINITY / "no limit" for systemd's uint64 properties. */
const INFINITY = 2n ** 64n - 1n;
/** The kernel's default CFS period (µs). */
const DEFAULT_PERIOD = 100_000;

const prop = (name: string, signature: string, value: unknown): UnitProperty => ({ name, signature, value });

/**
 * libcontainer's addCpuQuota: CPUQuotaPeriodUSec where systemd has it (v242+), and the quota as
 * CPUQuotaPerSecUSec rounded up to whole percent (10 ms per second), infinity without a quota.
 */
function cpuQuotaProperties(quota: number | undefined, period: number | undefined, version: number): UnitProperty[] {
  const out: UnitProperty[] = [];
  const p = period ?? 0;
  const q = quota ?? 0;
  if (p !== 0 && version >= 242) out.push(prop('CPUQuotaPeriodUSec', 't', BigInt(p)));
  if (q !== 0 || p !== 0) {
    let perSec = INFINITY;
    if (q > 0) {
      let v = BigInt(Math.floor((q * 1_000_000) / (p || DEFAULT_PERIOD)));
      if (v % 10_000n !== 0n) v = (v / 10_000n + 1n) * 10_000n;
      perSec = v;
    }
    out.push(prop('CPUQuotaPerSecUSec', 't', perSec));
  }
  return out;
}

/** genV1ResourcesProperties / genV2ResourcesProperties of kubelet's resources. */
export function resourceProperties(r: ResourceConfig, unified: boolean, version: number): UnitProperty[] {
  const out: UnitProperty[] = [];
  const bytes = (n: number): bigint => (n < 0 ? INFINITY : BigInt(n));
  if (r.memory !== undefined && r.memory !== 0) out.push(prop(unified ? 'MemoryMax' : 'MemoryLimit', 't', bytes(r.memory)));
  if (r.cpuShares !== undefined && r.cpuShares !== 0) {
    out.push(unified ? prop('CPUWeight', 't', BigInt(sharesToWeight(r.cpuShares))) : prop('CPUShares', 't', BigInt(r.cpuShares)));
  }
  out.push(...cpuQuotaProperties(r.cpuQuota, r.cpuPeriod, version));
  if (r.pidsLimit !== undefined && (r.pidsLimit > 0 || r.pidsLimit === -1)) out.push(prop('TasksMax', 't', bytes(r.pidsLimit)));
  return out;
}

/** What libcontainer's Apply gives a slice it makes: description, parent, accounting, no default dependencies. */
export function sliceProperties(unit: string, parent: string, unified: boolean): UnitProperty[] {
  return [
    prop('Description', 's', `libcontainer container ${unit}`),
    prop('Wants', 'as', [parent]),
    prop('MemoryAccounting', 'b', true),
    prop('CPUAccounting', 'b', true),
    prop(unified ? 'IOAccounting' : 'BlockIOAccounting', 'b', true),
    prop('TasksAccounting', 'b', true),
    prop('DefaultDependencies', 'b', false),
  ];
}

export class SystemdCgroups implements CgroupDriver {
  /** The slices this driver started and has not stopped, by cgroup name, with when they were made. */
  private readonly units = new Map<string, number>();

  constructor(
    private readonly fs: CgroupFs,
    private readonly bus: SystemdBus,
  ) {}

  name(cgroup: string): string {
    return systemdPathOf(cgroup);
  }

  exists(cgroup: string): boolean {
    return this.fs.exists(this.name(cgroup));
  }

  /**
   * Apply(-1) then Set: the slice started as a transient unit with its properties (one that
   * exists already gets them with SetUnitProperties), then its directories made in every
   * hierarchy and the values written through cgroupfs.
   */
  async create(cgroup: string, r: ResourceConfig = {}): Promise<void> {
    const path = this.name(cgroup);
    const { unit, parent } = sliceUnitOf(path);
    const resources = resourceProperties(r, this.fs.unified, await this.bus.systemdVersion());
    const started = await this.bus.startTransientUnit(unit, [...sliceProperties(unit, parent, this.fs.unified), ...resources]);
    if (!started && resources.length > 0) await this.bus.setUnitProperties(unit, resources);
    if (!this.units.has(posix.normalize(cgroup))) this.units.set(posix.normalize(cgroup), Date.now());
    await this.fs.create(path, r);
  }

  /** Set: the unit's properties (runtime), then the values through cgroupfs. */
  async update(cgroup: string, r: ResourceConfig): Promise<void> {
    const path = this.name(cgroup);
    const resources = resourceProperties(r, this.fs.unified, await this.bus.systemdVersion());
    if (resources.length > 0) await this.bus.setUnitProperties(sliceUnitOf(path).unit, resources);
    await this.fs.update(path, r);
  }

  /** Destroy: the unit stopped, then whatever directories are left removed (both tried). */
  async remove(cgroup: string): Promise<void> {
    const path = this.name(cgroup);
    const stopped = await this.bus.stopUnit(sliceUnitOf(path).unit).then(
      () => undefined,
      (err: unknown) => (err instanceof Error ? err : new Error(JSON.stringify(err))),
    );
    await this.fs.remove(path);
    if (stopped) throw stopped;
    this.units.delete(posix.normalize(cgroup));
  }

  made(parent: string): Map<string, number> {
    const out = new Map<string, number>();
    for (const [name, since] of this.units) if (posix.dirname(name) === posix.normalize(parent)) out.set(posix.basename(name), since);
    return out;
  }

  childName(entry: string): string {
    return parseSystemdName(entry).pop() ?? entry;
  }

  close(): void {
    this.bus.close();
  }
}
