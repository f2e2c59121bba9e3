// CPU affinity for the process runtime, which has no cgroups of its own: a container's cpuset is
// applied with util-linux's `taskset -a -p -c <cpus> <pid>` to every process of the container's
// process group (all their threads). Best effort: the group is pinned right after the main process
// is spawned and twice more shortly after, so a process forked in between could run a moment on
// other CPUs, and one forked after the last pass by a process not yet pinned would keep the agent's
// affinity; without taskset nothing is pinned (the error says so).
import { execFile } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';

let tasksetMissing = false;

function taskset(cpus: string, pid: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    execFile('taskset', ['-a', '-p', '-c', cpus, String(pid)], (err, _out, stderr) => {
      if (!err) return resolve(undefined);
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
        tasksetMissing = true;
        return resolve('taskset is not installed (util-linux): container CPU affinity is not applied');
      }
      resolve(stderr.trim() || err.message);
    });
  });
}

/** The pids of a process group (Linux /proc). */
async function groupMembers(pgid: number): Promise<number[]> {
  const out: number[] = [];
  for (const e of await readdir('/proc').catch((): string[] => [])) {
    if (!/^\d+$/.test(e)) continue;
    const stat = await readFile(`/proc/${e}/stat`, 'utf8').catch(() => '');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(fields[2]) === pgid) out.push(Number(e));
  }
  return out.includes(pgid) ? out : [pgid, ...out];
}

/**
 * Pins every process of group `pgid` to `cpus` (list format). Resolves with the first error text, if
 * any (a process that exited meanwhile is not an error); never rejects.
 */
export async function setGroupAffinity(pgid: number, cpus: string): Promise<string | undefined> {
  if (tasksetMissing) return 'taskset is not installed (util-linux): container CPU affinity is not applied';
  let first: string | undefined;
  for (const pid of await groupMembers(pgid)) {
    const err = await taskset(cpus, pid);
    if (err !== undefined && first === undefined && !/No such process|failed to get pid/i.test(err)) first = err;
    if (tasksetMissing) break;
  }
  return first;
}

/**
 * Pins a just-started container's process group now and twice more shortly after (250 ms, 2 s), so
 * processes it forked before the first pass are pinned too; later children inherit the affinity.
 */
export function pinNewGroup(pgid: number, cpus: string): void {
  void setGroupAffinity(pgid, cpus);
  for (const ms of [250, 2000]) setTimeout(() => void setGroupAffinity(pgid, cpus), ms).unref();
}
