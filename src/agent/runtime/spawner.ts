// Starts container processes off the agent's main thread. child_process.spawn forks and waits
// for the child's exec before it returns (milliseconds per process on a busy host, during which
// the event loop stands still); the spawner hands that to one worker thread (spawner-worker.ts),
// which spawns exactly as launcher.ts's launch() would (same plan: uid/gid or setpriv, new process
// group, the container's environment, stdin closed) and relays the child's stdout/stderr chunks,
// exit and close back as messages. The main thread sees a RemoteProcess shaped like the parts of
// a ChildProcess the runtime uses: pid, stdout and stderr as Readables, 'exit' and 'close'.
// Signals need no relay: the caller sends them to the process group by pid (signalGroup).
//
// The worker is started with the spawner (a worker thread takes hundreds of milliseconds to load on a
// busy host, which on first use delayed the first container of a burst of new pods by as much), and
// again on the next use after it ended; it does not keep the agent alive (unref); close() ends it.
// Each runtime owns its spawner (no process-wide state).
import { EventEmitter } from 'node:events';
import { Readable } from 'node:stream';
import { Worker } from 'node:worker_threads';
import { DEFAULT_PATH, type LaunchSpec } from './launcher.js';
import type { ProcessIdentity } from './identity.js';

export type SpawnerRequest =
  | { t: 'spawn'; id: number; argv: string[]; env: Record<string, string>; cwd: string; identity: ProcessIdentity }
  | { t: 'destroy'; id: number };

export type SpawnerReply =
  | { t: 'spawned'; id: number; pid: number }
  | { t: 'error'; id: number; message: string; code?: string; errno?: number; syscall?: string; path?: string }
  | { t: 'data'; id: number; fd: 1 | 2; chunk: Uint8Array }
  | { t: 'exit' | 'close'; id: number; code: number | null; signal: NodeJS.Signals | null };

/** A process the spawner's worker started: 'exit' and 'close' carry (code, signal) as ChildProcess's do. */
export class RemoteProcess extends EventEmitter {
  readonly stdout: Readable;
  readonly stderr: Readable;
  constructor(
    readonly pid: number,
    onDestroy: () => void,
  ) {
    super();
    let destroyed = false;
    const stream = (): Readable =>
      new Readable({
        read() {},
        destroy(err, cb) {
          if (!destroyed) {
            destroyed = true;
            onDestroy();
          }
          cb(err);
        },
      });
    this.stdout = stream();
    this.stderr = stream();
  }
}

interface Pending {
  resolve: (p: RemoteProcess) => void;
  reject: (e: Error) => void;
  proc?: RemoteProcess;
}

export class Spawner {
  private worker: Worker | undefined;
  private nextId = 1;
  private readonly entries = new Map<number, Pending>();

  constructor() {
    this.ensureWorker();
  }

  /** Starts the process; resolves once it runs, rejects with spawn's error (ENOENT, EACCES, EPERM). */
  launch(spec: LaunchSpec): Promise<RemoteProcess> {
    const worker = this.ensureWorker();
    const id = this.nextId++;
    const env = { PATH: DEFAULT_PATH, ...spec.env };
    return new Promise((resolve, reject) => {
      this.entries.set(id, { resolve, reject });
      const msg: SpawnerRequest = { t: 'spawn', id, argv: spec.argv, env, cwd: spec.cwd, identity: spec.identity };
      worker.postMessage(msg);
    });
  }

  /** Ends the worker; processes it started keep running (they are their own process groups). */
  async close(): Promise<void> {
    const w = this.worker;
    this.worker = undefined;
    if (w) await w.terminate();
  }

  private ensureWorker(): Worker {
    if (this.worker) return this.worker;
    const w = new Worker(new URL('./spawner-worker.js', import.meta.url));
    w.unref();
    w.on('message', (m: SpawnerReply) => this.onReply(m));
    const fail = (err: Error): void => {
      if (this.worker === w) this.worker = undefined;
      for (const [id, e] of this.entries) {
        if (e.proc) {
          // Its exit can no longer be seen: report it as killed so the runtime does not wait forever.
          e.proc.stdout.push(null);
          e.proc.stderr.push(null);
          e.proc.emit('exit', null, 'SIGKILL');
          e.proc.emit('close', null, 'SIGKILL');
        } else e.reject(err);
        this.entries.delete(id);
      }
    };
    w.on('error', fail);
    w.on('exit', () => fail(new Error('the spawner worker exited')));
    this.worker = w;
    return w;
  }

  private onReply(m: SpawnerReply): void {
    const e = this.entries.get(m.id);
    if (!e) return;
    switch (m.t) {
      case 'spawned': {
        const id = m.id;
        e.proc = new RemoteProcess(m.pid, () => this.worker?.postMessage({ t: 'destroy', id } satisfies SpawnerRequest));
        e.resolve(e.proc);
        return;
      }
      case 'error':
        this.entries.delete(m.id);
        e.reject(
          Object.assign(new Error(m.message), {
            ...(m.code !== undefined ? { code: m.code } : {}),
            ...(m.errno !== undefined ? { errno: m.errno } : {}),
            ...(m.syscall !== undefined ? { syscall: m.syscall } : {}),
            ...(m.path !== undefined ? { path: m.path } : {}),
          }),
        );
        return;
      case 'data': {
        const s = m.fd === 1 ? e.proc?.stdout : e.proc?.stderr;
        if (s && !s.destroyed) s.push(Buffer.from(m.chunk.buffer, m.chunk.byteOffset, m.chunk.byteLength));
        return;
      }
      case 'exit':
        e.proc?.emit('exit', m.code, m.signal);
        return;
      case 'close': {
        this.entries.delete(m.id);
        const p = e.proc;
        if (!p) return;
        if (!p.stdout.destroyed) p.stdout.push(null);
        if (!p.stderr.destroyed) p.stderr.push(null);
        // Output already pushed reaches 'data' listeners (next ticks) before 'close' is seen.
        setImmediate(() => p.emit('close', m.code, m.signal));
        return;
      }
    }
  }
}
