// Processes into cgroups (kubelet's container manager for --system-cgroups, --orchlet-cgroups and
// the runtime's cgroup): ensureProcessInContainerWithOOMScore and ensureSystemCgroups, plus
// finding the process that serves a CRI socket (the runtime orchlet moves into --runtime-cgroups).
import { readdir, readFile, readlink, writeFile } from 'node:fs/promises';
import { cgroupOf, type CgroupFs } from './fs.js';

/** kubelet's oom_score_adj for itself and for the container runtime's daemons. */
export const SYSTEM_OOM_SCORE_ADJ = -999;

/**
 * Moves `pid` into cgroup `name` unless it is there already (judged on the cpu and memory
 * hierarchies, as kubelet's getContainer), then sets its oom_score_adj. Returns the failures (a
 * lower oom_score_adj needs CAP_SYS_RESOURCE, which root lacks in some sandboxes).
 */
export async function ensureProcessInCgroup(fs: CgroupFs, pid: number, name: string | undefined, oomScoreAdj: number): Promise<string[]> {
  const errors: string[] = [];
  if (name !== undefined) {
    const here = fs.unified ? [cgroupOf(pid, '')] : [cgroupOf(pid, 'cpu'), cgroupOf(pid, 'memory')];
    if (here.some((c) => c !== name)) {
      await fs.movePid(name, pid).catch((err: unknown) => errors.push(`failed to move PID ${pid} into the cgroup "${name}": ${message(err)}`));
    }
  }
  await writeFile(`/proc/${pid}/oom_score_adj`, String(oomScoreAdj)).catch((err: unknown) =>
    errors.push(`failed to apply oom_score_adj ${oomScoreAdj} for pid ${pid}: ${message(err)}`),
  );
  return errors;
}

/** Kernel threads have no executable. */
async function isKernelPid(pid: number): Promise<boolean> {
  return readlink(`/proc/${pid}/exe`).then(
    () => false,
    (err: NodeJS.ErrnoException) => err.code === 'ENOENT',
  );
}

/**
 * ensureSystemCgroups: every non-kernel process left in the root cgroup, except PID 1, moves into
 * the system cgroup (kernel threads stay at the root). Up to 11 rounds while processes appear;
 * returns the last round's failures.
 */
export async function ensureSystemCgroups(fs: CgroupFs, name: string): Promise<string[]> {
  let errors: string[] = [];
  for (let i = 0; i <= 10; i++) {
    errors = [];
    let all: number[];
    try {
      all = await fs.pids('/');
    } catch (err) {
      errors.push(`failed to list PIDs for root: ${message(err)}`);
      continue;
    }
    const pids: number[] = [];
    for (const pid of all) if (pid !== 1 && !(await isKernelPid(pid))) pids.push(pid);
    if (pids.length === 0) return [];
    for (const pid of pids) {
      await fs.movePid(name, pid).catch((err: unknown) => {
        // a process that exited meanwhile is gone, not a failure
        if ((err as NodeJS.ErrnoException).code !== 'ESRCH') errors.push(`failed to move PID ${pid} into the system container "${name}": ${message(err)}`);
      });
    }
  }
  return errors;
}

/** The processes holding the listening Unix socket at `path` (the server of a CRI endpoint). */
export async function socketOwners(path: string): Promise<number[]> {
  const table = await readFile('/proc/net/unix', 'utf8').catch(() => '');
  const inodes = new Set<string>();
  for (const line of table.split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    // Num RefCount Protocol Flags Type St Inode Path; flags 00010000 = listening
    if (f[7] === path && f[3] === '00010000') inodes.add(f[6]!);
  }
  if (inodes.size === 0) return [];
  const out: number[] = [];
  for (const entry of await readdir('/proc').catch((): string[] => [])) {
    if (!/^\d+$/.test(entry)) continue;
    const fds = await readdir(`/proc/${entry}/fd`).catch((): string[] => []);
    for (const fd of fds) {
      const link = await readlink(`/proc/${entry}/fd/${fd}`).catch(() => '');
      const m = /^socket:\[(\d+)\]$/.exec(link);
      if (m && inodes.has(m[1]!)) {
        out.push(Number(entry));
        break;
      }
    }
  }
  return out;
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
