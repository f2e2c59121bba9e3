// --lock-file and --exit-on-lock-contention (kubelet's flock.Acquire and watchForLockfileContention).
//
// The lock is an exclusive flock(2) on the file, held for the agent's lifetime by a small helper
// process (util-linux `flock <file> cat`, its stdin a pipe from the agent): when the agent dies, the
// pipe closes, the helper exits and the kernel releases the lock. Acquiring waits while another
// agent holds it, as kubelet's does.
//
// Contention: kubelet watches the file with inotify for IN_OPEN and exits when another process
// opens it. Node's watcher does not report opens, so an agent that is about to wait for the lock
// first touches the file's times; a holder started with --exit-on-lock-contention watches the file
// and exits on that change, handing the lock over.
import { spawn, type ChildProcess } from 'node:child_process';
import { watch, type FSWatcher } from 'node:fs';
import { mkdir, open, utimes } from 'node:fs/promises';
import { dirname } from 'node:path';

export interface HeldLock {
  /** Releases the lock (ends the helper). */
  release(): void;
}

/**
 * Takes the lock, waiting while another process holds it. Rejects when the file cannot be opened
 * or `flock` is missing.
 */
export async function acquireLock(path: string, log?: (message: string) => void): Promise<HeldLock> {
  await mkdir(dirname(path), { recursive: true });
  const fh = await open(path, 'a', 0o600);
  await fh.close();
  // Announce the contention (see the file comment) before waiting.
  const now = new Date();
  await utimes(path, now, now).catch(() => undefined);
  log?.(`acquiring file lock on ${path}`);
  const child: ChildProcess = spawn('flock', ['--exclusive', path, 'sh', '-c', 'echo locked; exec cat'], { stdio: ['pipe', 'pipe', 'pipe'] });
  await new Promise<void>((resolve, reject) => {
    let err = '';
    child.stderr?.on('data', (c: Buffer) => (err += c.toString()));
    child.once('error', (e) => reject(new Error(`cannot take the lock on ${path}: ${e.message} (the util-linux flock program is needed)`)));
    child.once('exit', (code) => reject(new Error(`cannot take the lock on ${path}: flock exited with ${code}${err ? `: ${err.trim()}` : ''}`)));
    child.stdout?.once('data', () => resolve());
  });
  child.removeAllListeners('exit');
  child.unref();
  (child.stdin as NodeJS.WritableStream & { unref?: () => void } | null)?.unref?.();
  (child.stdout as NodeJS.ReadableStream & { unref?: () => void } | null)?.unref?.();
  (child.stderr as NodeJS.ReadableStream & { unref?: () => void } | null)?.unref?.();
  return {
    release: () => {
      child.stdin?.end();
      child.kill('SIGTERM');
    },
  };
}

/**
 * Calls `onContention` once when another process announces it wants the lock (touches the file);
 * returns the watcher (close it to stop watching).
 */
export function watchLockContention(path: string, onContention: () => void): FSWatcher {
  let fired = false;
  const w = watch(path, { persistent: false }, () => {
    if (fired) return;
    fired = true;
    onContention();
  });
  return w;
}
