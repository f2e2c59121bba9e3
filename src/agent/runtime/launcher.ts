// The launcher of the process runtime: the only place that starts a container's process.
//
// It takes an already resolved identity (identity.ts) and starts `command[0]` with the rest of
// command + args through child_process.spawn's uid/gid options: libuv calls setgroups(0) (dropping
// the agent's supplementary groups), setgid and setuid in the child before exec, so the container
// never runs a single instruction with the agent's rights. The process leads a new process group
// (detached), so a stop signal reaches everything it spawned. The environment is exactly the
// container's (plus PATH and HOSTNAME defaults), never the agent's. stdin is closed; stdout and
// stderr are pipes the caller turns into the log.
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import type { Readable } from 'node:stream';
import type { ProcessIdentity } from './identity.js';

/** The PATH a container gets when it sets none (the usual image default). */
export const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

export interface LaunchSpec {
  argv: string[];
  env: Record<string, string>;
  /** Working directory; '/' when the container sets none. */
  cwd: string;
  identity: ProcessIdentity;
}

export type ContainerProcess = ChildProcessByStdio<null, Readable, Readable>;

/**
 * Spawns the process. Resolves once it runs; rejects with the spawn error (ENOENT, EACCES, EPERM
 * when the agent may not switch to the identity) after which no process exists.
 */
export function launch(spec: LaunchSpec): Promise<ContainerProcess> {
  const [file, ...rest] = spec.argv;
  if (file === undefined || file === '') return Promise.reject(new Error('no command given (command and args are both empty)'));
  const env = { PATH: DEFAULT_PATH, ...spec.env };
  return new Promise((resolve, reject) => {
    let child: ContainerProcess;
    try {
      child = spawn(file, rest, {
        cwd: spec.cwd,
        env,
        uid: spec.identity.uid,
        gid: spec.identity.gid,
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
    } catch (err) {
      reject(err instanceof Error ? err : new Error(String(err)));
      return;
    }
    const onError = (err: Error): void => {
      child.off('spawn', onSpawn);
      reject(err);
    };
    const onSpawn = (): void => {
      child.off('error', onError);
      resolve(child);
    };
    child.once('error', onError);
    child.once('spawn', onSpawn);
  });
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
