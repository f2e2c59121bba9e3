// The spawner's worker thread (see spawner.ts): it runs child_process.spawn — whose fork and wait
// for exec block the calling thread for milliseconds — so the agent's event loop does not, and
// relays each child's output, exit and close to the main thread. Signals are sent by the main
// thread itself (process.kill on the process group), so they need no message.
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { parentPort } from 'node:worker_threads';
import type { Readable, Writable } from 'node:stream';
import { spawnPlan } from './launcher.js';
import type { SpawnerReply, SpawnerRequest } from './spawner.js';

const port = parentPort;
if (port === null) throw new Error('spawner-worker.js runs only as a worker thread');

const children = new Map<number, ChildProcessByStdio<Writable | null, Readable, Readable>>();
const post = (m: SpawnerReply): void => port.postMessage(m);

/** Sends a chunk of output as an exact-size copy whose memory moves to the main thread (no second copy). */
function relay(id: number, fd: 1 | 2, chunk: Buffer): void {
  const copy = new Uint8Array(chunk);
  const m: SpawnerReply = { t: 'data', id, fd, chunk: copy };
  port?.postMessage(m, [copy.buffer]);
}

function errorReply(id: number, err: unknown): SpawnerReply {
  const e = err instanceof Error ? (err as NodeJS.ErrnoException) : new Error(String(err));
  const errno = e as NodeJS.ErrnoException;
  return { t: 'error', id, message: e.message, code: errno.code, errno: errno.errno, syscall: errno.syscall, path: errno.path };
}

function start(m: Extract<SpawnerRequest, { t: 'spawn' }>): void {
  const { id } = m;
  let child: ChildProcessByStdio<Writable | null, Readable, Readable>;
  try {
    const plan = spawnPlan(m.argv, m.identity, m.env, m.cwd);
    child = spawn(plan.file, plan.args, {
      cwd: m.cwd,
      env: m.env,
      ...(plan.uid !== undefined ? { uid: plan.uid } : {}),
      ...(plan.gid !== undefined ? { gid: plan.gid } : {}),
      detached: true,
      stdio: [m.stdin === true ? 'pipe' : 'ignore', 'pipe', 'pipe'],
    }) as ChildProcessByStdio<Writable | null, Readable, Readable>;
    // A process that exits or closes its stdin while data is on its way: the write fails, nothing else.
    child.stdin?.on('error', () => undefined);
  } catch (err) {
    post(errorReply(id, err));
    return;
  }
  let started = false;
  child.once('error', (err) => {
    if (!started) {
      children.delete(id);
      post(errorReply(id, err));
    }
  });
  child.once('spawn', () => {
    started = true;
    children.set(id, child);
    post({ t: 'spawned', id, pid: child.pid ?? -1 });
    child.stdout.on('data', (chunk: Buffer) => relay(id, 1, chunk));
    child.stderr.on('data', (chunk: Buffer) => relay(id, 2, chunk));
    child.once('exit', (code, signal) => post({ t: 'exit', id, code, signal }));
    child.once('close', (code, signal) => {
      children.delete(id);
      post({ t: 'close', id, code, signal });
    });
  });
}

port.on('message', (m: SpawnerRequest) => {
  if (m.t === 'spawn') start(m);
  else if (m.t === 'stdin') children.get(m.id)?.stdin?.write(m.chunk);
  else if (m.t === 'stdinEnd') children.get(m.id)?.stdin?.end();
  else if (m.t === 'destroy') {
    const child = children.get(m.id);
    child?.stdout.destroy();
    child?.stderr.destroy();
  }
});
