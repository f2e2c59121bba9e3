// The spawner's helper process (see spawner.ts): a small Node process, started by the agent with an
// IPC channel, that starts the agent's containers (launcher.ts's spawnContainerProcess: uid/gid or
// setpriv, new process group, the container's environment, stdin closed unless the container asks
// for it) and relays each child's output, exit and close back as messages. Signals are sent by the
// agent itself (to the process group by pid), so they need no message.
//
// Why a process of its own: fork copies the page tables of the process that forks and write-protects
// its memory, so every fork from the ~100 MiB agent cost it milliseconds (the copy, then a copy-on-write
// fault for each page the agent and its garbage collector wrote next); forking from this small process
// costs a fraction of that, and the agent's memory is never write-protected.
//
// It lives as long as its channel: when the agent exits (even killed) the channel closes and so does
// this process. The signals a terminal sends to its foreground group (Ctrl-C, hang-up) and a SIGTERM are
// ignored: the agent decides when its containers stop, and this process must report their exits until then.
import { spawnContainerProcess, type ContainerProcess } from './launcher.js';
import type { SpawnerReply, SpawnerRequest } from './spawner.js';

if (process.send === undefined) throw new Error('spawner-process.js runs only as the agent spawner\'s child (with an IPC channel)');
process.title = 'orchlet-spawner';
for (const s of ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT'] as const) process.on(s, () => undefined);
process.on('disconnect', () => process.exit(0));

const children = new Map<number, ContainerProcess>();

function post(m: SpawnerReply): void {
  if (process.connected) process.send!(m);
}

function errorReply(id: number, err: unknown): SpawnerReply {
  const e = err instanceof Error ? (err as NodeJS.ErrnoException) : new Error(String(err));
  const errno = e as NodeJS.ErrnoException;
  return { t: 'error', id, message: e.message, code: errno.code, errno: errno.errno, syscall: errno.syscall, path: errno.path };
}

function start(m: Extract<SpawnerRequest, { t: 'spawn' }>): void {
  const { id } = m;
  let child: ContainerProcess;
  try {
    child = spawnContainerProcess(m);
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
    child.stdout.on('data', (chunk: Buffer) => post({ t: 'data', id, fd: 1, chunk }));
    child.stderr.on('data', (chunk: Buffer) => post({ t: 'data', id, fd: 2, chunk }));
    child.once('exit', (code, signal) => post({ t: 'exit', id, code, signal }));
    child.once('close', (code, signal) => {
      children.delete(id);
      post({ t: 'close', id, code, signal });
    });
  });
}

process.on('message', (m: SpawnerRequest) => {
  if (m.t === 'spawn') start(m);
  else if (m.t === 'stdin') children.get(m.id)?.stdin?.write(m.chunk);
  else if (m.t === 'stdinEnd') children.get(m.id)?.stdin?.end();
  else if (m.t === 'destroy') {
    const child = children.get(m.id);
    child?.stdout.destroy();
    child?.stderr.destroy();
  }
});
