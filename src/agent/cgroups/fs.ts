// The cgroupfs cgroup manager (kubelet's cgroupManagerImpl with the cgroupfs driver, over
// libcontainer's fs managers): cgroups are named by absolute paths ("/kubepods/burstable"), the
// same path in every hierarchy. On cgroup v1 (also "hybrid", where /sys/fs/cgroup is a tmpfs of
// per-controller mounts) a cgroup is a directory in each mounted hierarchy; on v2 (/sys/fs/cgroup
// is cgroup2) one directory of the unified tree.
//
// Who calls: the node container manager (manager.ts) and the process mover (procs.ts). Every
// method touches the host's cgroup filesystem; nothing is cached except the mount table.
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readFile, readdir, rmdir, writeFile } from 'node:fs/promises';
import { dirname, join, posix } from 'node:path';

/** kubelet's ResourceConfig: what a cgroup is given (unset: left as it is). */
export interface ResourceConfig {
  /** cpu.shares (v2: cpu.weight converted). */
  cpuShares?: number;
  /** CFS quota in µs (-1 unlimited) and period in µs. */
  cpuQuota?: number;
  cpuPeriod?: number;
  /** memory.limit_in_bytes (v2 memory.max); -1 unlimited. */
  memory?: number;
  /** pids.max; -1 'max'. */
  pidsLimit?: number;
}

/** The controllers whose directories decide whether a v1 cgroup exists (kubelet's Exists; hugetlb when mounted). */
const EXISTS_CONTROLLERS = ['cpu', 'cpuacct', 'cpuset', 'memory', 'systemd', 'pids', 'hugetlb'];

interface Hierarchy {
  /** Controllers of the mount ('systemd' for name=systemd), or ['unified'] for cgroup2. */
  controllers: string[];
  mountPoint: string;
}

/** The cgroup hierarchies mounted here, from a mountinfo text. */
export function parseCgroupMounts(mountinfo: string): Hierarchy[] {
  const out: Hierarchy[] = [];
  for (const line of mountinfo.split('\n')) {
    const parts = line.split(' ');
    const sep = parts.indexOf('-');
    if (sep < 0) continue;
    const fstype = parts[sep + 1];
    const mountPoint = parts[4];
    if (mountPoint === undefined) continue;
    if (fstype === 'cgroup2') out.push({ controllers: ['unified'], mountPoint });
    if (fstype !== 'cgroup') continue;
    const opts = (parts[sep + 3] ?? '').split(',');
    const controllers = opts.filter((o) => !['rw', 'ro', 'relatime', 'noatime', 'nosuid', 'nodev', 'noexec', 'clone_children', 'xattr'].includes(o) && !o.startsWith('release_agent'));
    out.push({ controllers: controllers.map((c) => (c.startsWith('name=') ? c.slice(5) : c)), mountPoint });
  }
  return out;
}

/** MilliCPUToShares: 1024 shares per core, at least 2. */
export function milliCPUToShares(milli: number): number {
  if (milli === 0) return 2;
  const shares = Math.floor((milli * 1024) / 1000);
  return Math.max(2, shares);
}

/** v1 cpu.shares to v2 cpu.weight (runc's conversion). */
export function sharesToWeight(shares: number): number {
  return shares === 0 ? 0 : 1 + Math.floor(((shares - 2) * 9999) / 262142);
}

export class CgroupFs {
  readonly unified: boolean;
  private readonly hierarchies: Hierarchy[];

  constructor(mountinfo = readFileSync('/proc/self/mountinfo', 'utf8')) {
    const all = parseCgroupMounts(mountinfo);
    const root = all.find((h) => h.controllers[0] === 'unified' && h.mountPoint === '/sys/fs/cgroup');
    this.unified = root !== undefined;
    // hybrid: the v1 controllers; the empty unified mount beside them is ignored, as kubelet does
    this.hierarchies = root ? [root] : all.filter((h) => h.controllers[0] !== 'unified');
  }

  /** Whether any cgroup hierarchy is mounted (none: cgroups cannot be managed here). */
  get available(): boolean {
    return this.hierarchies.length > 0;
  }

  /** The directory of `name` in the hierarchy of `controller` (v2: the one tree), or undefined when not mounted. */
  path(controller: string, name: string): string | undefined {
    const h = this.unified ? this.hierarchies[0] : this.hierarchies.find((x) => x.controllers.includes(controller));
    return h ? join(h.mountPoint, name) : undefined;
  }

  /** Every directory of `name`, one per hierarchy. */
  paths(name: string): string[] {
    return this.hierarchies.map((h) => join(h.mountPoint, name));
  }

  /** kubelet's Exists: the cgroup's directory is there in each hierarchy it cares about. */
  exists(name: string): boolean {
    if (this.unified) return existsSync(join(this.hierarchies[0]!.mountPoint, name));
    const wanted = this.hierarchies.filter((h) => h.controllers.some((c) => EXISTS_CONTROLLERS.includes(c)));
    return wanted.length > 0 && wanted.every((h) => existsSync(join(h.mountPoint, name)));
  }

  /** Creates the cgroup (and its parents) in every hierarchy, then applies `r`. */
  async create(name: string, r: ResourceConfig = {}): Promise<void> {
    for (const h of this.hierarchies) {
      const dir = join(h.mountPoint, name);
      if (h.controllers.includes('cpuset')) await this.mkdirCpuset(h.mountPoint, name);
      else await mkdir(dir, { recursive: true });
    }
    if (this.unified) await this.enableControllers(name);
    await this.update(name, r);
  }

  /** A cpuset cgroup inherits nothing: each level of the path with none gets its parent's cpus and mems, or no task could join it. */
  private async mkdirCpuset(mount: string, name: string): Promise<void> {
    let dir = mount;
    for (const part of name.split('/').filter((p) => p !== '')) {
      const parent = dir;
      dir = join(dir, part);
      if (!existsSync(dir)) {
        await mkdir(dir).catch((err: NodeJS.ErrnoException) => {
          if (err.code !== 'EEXIST') throw err;
        });
      }
      for (const f of ['cpuset.cpus', 'cpuset.mems']) {
        const mine = (await readFile(join(dir, f), 'utf8').catch(() => '')).trim();
        if (mine !== '') continue;
        const theirs = (await readFile(join(parent, f), 'utf8').catch(() => '')).trim();
        if (theirs !== '') await writeFile(join(dir, f), theirs);
      }
    }
  }

  /** v2: the controllers of the root enabled down to the cgroup's parent (subtree_control). */
  private async enableControllers(name: string): Promise<void> {
    const mount = this.hierarchies[0]!.mountPoint;
    const available = (await readFile(join(mount, 'cgroup.controllers'), 'utf8').catch(() => '')).trim().split(/\s+/);
    const wanted = ['cpu', 'memory', 'pids', 'cpuset'].filter((c) => available.includes(c));
    let dir = mount;
    for (const part of dirname(posix.normalize(name)).split('/').filter((p) => p !== '')) {
      dir = join(dir, part);
      for (const c of wanted) await writeFile(join(dir, 'cgroup.subtree_control'), `+${c}`).catch(() => undefined);
    }
  }

  /** kubelet's Update: writes the set values into the existing cgroup; throws on the first failure. */
  async update(name: string, r: ResourceConfig): Promise<void> {
    const write = async (controller: string, file: string, value: string | number): Promise<void> => {
      const dir = this.path(controller, name);
      if (dir === undefined) return;
      await writeFile(join(dir, file), String(value));
    };
    if (this.unified) {
      if (r.cpuShares !== undefined && r.cpuShares > 0) await write('cpu', 'cpu.weight', sharesToWeight(r.cpuShares));
      if (r.cpuQuota !== undefined || r.cpuPeriod !== undefined) {
        const quota = r.cpuQuota === undefined || r.cpuQuota <= 0 ? 'max' : String(r.cpuQuota);
        await write('cpu', 'cpu.max', `${quota} ${r.cpuPeriod ?? 100000}`);
      }
      if (r.memory !== undefined && r.memory !== 0) await write('memory', 'memory.max', r.memory < 0 ? 'max' : r.memory);
    } else {
      if (r.cpuShares !== undefined && r.cpuShares > 0) await write('cpu', 'cpu.shares', r.cpuShares);
      if (r.cpuPeriod !== undefined && r.cpuPeriod > 0) await write('cpu', 'cpu.cfs_period_us', r.cpuPeriod);
      if (r.cpuQuota !== undefined && r.cpuQuota !== 0) await write('cpu', 'cpu.cfs_quota_us', r.cpuQuota);
      if (r.memory !== undefined && r.memory !== 0) await write('memory', 'memory.limit_in_bytes', r.memory);
    }
    if (r.pidsLimit !== undefined && r.pidsLimit !== 0) await write('pids', 'pids.max', r.pidsLimit < 0 ? 'max' : r.pidsLimit);
  }

  /** Removes the cgroup from every hierarchy (its children first); missing directories are fine. */
  async remove(name: string): Promise<void> {
    for (const dir of this.paths(name)) await removeTree(dir);
  }

  /** Moves process `pid` into the cgroup in every hierarchy (creating it); throws on the first failure. */
  async movePid(name: string, pid: number): Promise<void> {
    if (!this.exists(name)) await this.create(name);
    else for (const h of this.hierarchies) if (h.controllers.includes('cpuset')) await this.mkdirCpuset(h.mountPoint, name);
    for (const dir of this.paths(name)) {
      if (!existsSync(dir)) await mkdir(dir, { recursive: true });
      await writeFile(join(dir, 'cgroup.procs'), String(pid));
    }
  }

  /** The processes directly in the cgroup (of the devices hierarchy on v1, as kubelet's GetPids; v2: the tree). */
  async pids(name: string): Promise<number[]> {
    const dir = this.path(this.unified ? 'unified' : 'devices', name) ?? this.paths(name)[0];
    if (dir === undefined) return [];
    const text = await readFile(join(dir, 'cgroup.procs'), 'utf8');
    return text
      .split('\n')
      .filter((l) => l !== '')
      .map(Number);
  }

  /** memory.usage_in_bytes (v2 memory.current) of the cgroup; undefined when unreadable. */
  async memoryUsage(name: string): Promise<number | undefined> {
    const dir = this.path('memory', name);
    if (dir === undefined) return undefined;
    const text = await readFile(join(dir, this.unified ? 'memory.current' : 'memory.usage_in_bytes'), 'utf8').catch(() => undefined);
    const n = Number(text?.trim());
    return text !== undefined && Number.isFinite(n) ? n : undefined;
  }

  /** The cgroup's memory limit in bytes (v1 memory.limit_in_bytes, v2 memory.max); undefined when unlimited or unreadable. */
  async memoryLimit(name: string): Promise<number | undefined> {
    const dir = this.path('memory', name);
    if (dir === undefined) return undefined;
    const text = (await readFile(join(dir, this.unified ? 'memory.max' : 'memory.limit_in_bytes'), 'utf8').catch(() => '')).trim();
    const n = Number(text);
    // v1 shows "unlimited" as the largest page-aligned 63-bit value
    return text === '' || text === 'max' || !Number.isFinite(n) || n >= 2 ** 62 ? undefined : n;
  }

  /** One value of the cgroup's memory.stat (v1 names, e.g. total_inactive_file; v2 inactive_file). */
  async memoryStat(name: string, key: string): Promise<number | undefined> {
    const dir = this.path('memory', name);
    if (dir === undefined) return undefined;
    const text = await readFile(join(dir, 'memory.stat'), 'utf8').catch(() => '');
    const k = this.unified ? key.replace(/^total_/, '') : key;
    const m = new RegExp(`^${k} (\\d+)$`, 'm').exec(text);
    return m ? Number(m[1]) : undefined;
  }
}

/** rmdir of a cgroup directory and its child cgroups, deepest first (cgroup directories hold only control files). */
async function removeTree(dir: string): Promise<void> {
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => undefined);
  if (entries === undefined) return;
  for (const e of entries) if (e.isDirectory()) await removeTree(join(dir, e.name));
  await rmdir(dir).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'ENOENT') throw err;
  });
}

/** The cgroup of process `pid` in the hierarchy of `controller` ('' for v2), from /proc/<pid>/cgroup. */
export function cgroupOf(pid: number | 'self', controller: string): string | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/cgroup`, 'utf8');
  } catch {
    return undefined;
  }
  for (const line of text.split('\n')) {
    const [, ctrls, path] = /^\d+:([^:]*):(.*)$/.exec(line) ?? [];
    if (ctrls === undefined || path === undefined) continue;
    const list = ctrls.split(',').map((c) => c.replace(/^name=/, ''));
    if (controller === '' ? ctrls === '' : list.includes(controller)) return path;
  }
  return undefined;
}
