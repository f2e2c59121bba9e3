// The launcher of the process runtime: how a container's process is started (spawnPlan,
// spawnContainerProcess), used by the spawner's helper processes (spawner.ts, spawner-process.ts), which
// start containers' processes and exec probes' commands, and by exec sessions (process-streaming.ts).
//
// It takes an already resolved identity (identity.ts) and starts `command[0]` with the rest of
// command + args through child_process.spawn's uid/gid options: libuv calls setgroups(0) (dropping
// the agent's supplementary groups), setgid and setuid in the child before exec, so the container
// never runs a single instruction with the agent's rights. libuv cannot set supplementary groups,
// so an identity with groups (fsGroup, supplementalGroups) is started through util-linux's setpriv
// (`setpriv --reuid U --regid G --groups A,B -- command args`), which sets groups, gid and uid and
// then execs the command; the command is looked up in the container's PATH first so a missing one
// fails as spawn's ENOENT would. The process leads a new process group
// (detached), so a stop signal reaches everything it spawned. The environment is exactly the
// container's (plus PATH and HOSTNAME defaults), never the agent's. stdin is closed unless the container
// asks for it; stdout and stderr are pipes the caller turns into the log.
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { accessSync, constants as fsConstants, statSync } from 'node:fs';
import { delimiter, isAbsolute, join, resolve as resolvePath } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import type { ProcessIdentity } from './identity.js';

/** The PATH a container gets when it sets none (the usual image default). */
export const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

export interface LaunchSpec {
  argv: string[];
  env: Record<string, string>;
  /** Working directory; '/' when the container sets none. */
  cwd: string;
  identity: ProcessIdentity;
  /** Give the process a pipe for stdin (spec.containers[].stdin) instead of /dev/null (spawner only). */
  stdin?: boolean;
}

/** A container's process: stdin a pipe only when its spec asks for one (LaunchSpec.stdin). */
export type ContainerProcess = ChildProcessByStdio<Writable | null, Readable, Readable>;

/** Where setpriv is looked for (util-linux, in every Debian base system). */
const SETPRIV_PATHS = ['/usr/bin/setpriv', '/bin/setpriv', '/usr/sbin/setpriv', '/sbin/setpriv'];

function executable(path: string): boolean {
  try {
    accessSync(path, fsConstants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** An Error shaped like the one spawn gives for a command it cannot find. */
function notFound(file: string): Error {
  return Object.assign(new Error(`spawn ${file} ENOENT`), { code: 'ENOENT', errno: -2, syscall: `spawn ${file}`, path: file });
}

export interface SpawnPlan {
  file: string;
  args: string[];
  /** The uid/gid options of spawn (unset: the program itself switches, setpriv). */
  uid?: number;
  gid?: number;
}

/**
 * How to start `argv` as `identity`: spawn's uid/gid when there are no supplementary groups, else
 * through setpriv. Throws spawn's ENOENT error when a setpriv start would not find the command.
 */
export function spawnPlan(argv: string[], identity: ProcessIdentity, env: Record<string, string>, cwd: string): SpawnPlan {
  const [file, ...rest] = argv;
  if (file === undefined || file === '') throw new Error('no command given (command and args are both empty)');
  const groups = identity.groups ?? [];
  if (groups.length === 0) return { file, args: rest, uid: identity.uid, gid: identity.gid };
  const found = file.includes('/')
    ? executable(isAbsolute(file) ? file : resolvePath(cwd, file))
    : (env.PATH ?? DEFAULT_PATH).split(delimiter).some((d) => d !== '' && executable(join(d, file)));
  if (!found) throw notFound(file);
  const setpriv = SETPRIV_PATHS.find(executable);
  if (setpriv === undefined) throw new Error('supplementary groups (fsGroup, supplementalGroups) need setpriv (util-linux), which this host does not have');
  return {
    file: setpriv,
    args: [`--reuid=${identity.uid}`, `--regid=${identity.gid}`, `--groups=${groups.join(',')}`, '--', file, ...rest],
  };
}

/**
 * Spawns the process as spawnPlan says (the spawner's helper processes call this): its environment is exactly
 * `spec.env` (the caller adds the PATH default), it leads a new process group, stdin is a pipe when the spec asks
 * for one and closed otherwise, stdout and stderr are pipes. Throws what spawnPlan or spawn throw at once; a
 * start that fails later (ENOENT, EACCES, EPERM when the agent may not switch to the identity) comes as the
 * child's 'error' instead of 'spawn'.
 */
export function spawnContainerProcess(spec: LaunchSpec): ContainerProcess {
  const plan = spawnPlan(spec.argv, spec.identity, spec.env, spec.cwd);
  return spawn(plan.file, plan.args, {
    cwd: spec.cwd,
    env: spec.env,
    ...(plan.uid !== undefined ? { uid: plan.uid } : {}),
    ...(plan.gid !== undefined ? { gid: plan.gid } : {}),
    detached: true,
    stdio: [spec.stdin === true ? 'pipe' : 'ignore', 'pipe', 'pipe'],
  }) as ContainerProcess;
}

/** Sends a signal to the process group of a launched process; false when it is already gone. */
export function signalGroup(pid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pid, signal);
    return true;
  } catch {
    try {
      process.kill(pid, signal);
      return true;
    } catch {
      return false;
    }
  }
}
