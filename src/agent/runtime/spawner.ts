// Starts container processes off the agent's main thread. child_process.spawn forks and waits
// for the child's exec before it returns (milliseconds per process on a busy host, during which
// the event loop stands still); the spawner hands that to one worker thread (spawner-worker.ts),
// which spawns exactly as launcher.ts's launch() would (same plan: uid/gid or setpriv, new process
// group, the container's environment, stdin closed unless the container asks for it: then a pipe fed
// by 'stdin' messages) and relays the child's stdout/stderr chunks,
// exit and close back as messages. The main thread sees a RemoteProcess shaped like the parts of
// a ChildProcess the runtime uses: pid, stdout and stderr as Readables, 'exit' and 'close'.
// Signals need no relay: the caller sends them to the process group by pid (signalGroup).
//
// A spawn is mostly waiting: for the fork, then for the child to be scheduled and exec (about 5-12 ms
// per process on a busy host, of which ~1.4 ms is CPU). One worker spawning one process after the
// other made a burst of 100 new pods wait ~1 s for its last process; the spawner therefore keeps a
// small pool of workers (two, or one per core up to four) and gives each spawn to the worker with the
// fewest spawns under way, so the waits overlap.
//
// The workers are started with the spawner (a worker thread takes hundreds of milliseconds to load on a
// busy host, which on first use delayed the first container of a burst of new pods by as much), and
// again on the next use after one ended; they do not keep the agent alive (unref); close() ends them.
// Each runtime owns its spawner (no process-wide state).
import { EventEmitter } from 'node:events';
import { availableParallelism } from 'node:os';
import { Readable, Writable } from 'node:stream';
import { Worker } from 'node:worker_threads';
import { DEFAULT_PATH, type LaunchSpec } from './launcher.js';
import type { ProcessIdentity } from './identity.js';

export type SpawnerRequest =
  | { t: 'spawn'; id: number; argv: string[]; env: Record<string, string>; cwd: string; identity: ProcessIdentity; stdin?: boolean }
  | { t: 'stdin'; id: number; chunk: Uint8Array }
  | { t: 'stdinEnd'; id: number }
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
  /** The process's stdin when it was started with one (LaunchSpec.stdin): writes go to its pipe, end() closes it. */
  readonly stdin: Writable | null;
  constructor(
    readonly pid: number,
    onDestroy: () => void,
    stdin?: { write: (chunk: Buffer) => void; end: () => void },
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
    this.stdin = stdin
      ? new Writable({
          write(chunk: Buffer, _enc, done) {
            stdin.write(chunk);
            done();
          },
          final(done) {
            stdin.end();
            done();
          },
        })
      : null;
  }
}

interface Pending {
  resolve: (p: RemoteProcess) => void;
  reject: (e: Error) => void;
  /** The pool slot of the worker that runs this process. */
  slot: number;
  proc?: RemoteProcess;
  /** The process gets a stdin pipe (LaunchSpec.stdin). */
  stdin?: boolean;
}

/** Workers in the pool: two (spawns overlap even on one core: most of a spawn is waiting), one per core up to four. */
export const SPAWNER_WORKERS = Math.min(4, Math.max(2, availableParallelism()));

export class Spawner {
  private readonly workers: (Worker | undefined)[];
  /** Spawns sent to each worker and not yet answered. */
  private readonly starting: number[];
  private nextId = 1;
  private readonly entries = new Map<number, Pending>();

  constructor(size = SPAWNER_WORKERS) {
    this.workers = new Array<Worker | undefined>(Math.max(1, size)).fill(undefined);
    this.starting = new Array<number>(this.workers.length).fill(0);
    for (let i = 0; i < this.workers.length; i++) this.ensureWorker(i);
  }

  /** Starts the process; resolves once it runs, rejects with spawn's error (ENOENT, EACCES, EPERM). */
  launch(spec: LaunchSpec): Promise<RemoteProcess> {
    let slot = 0;
    for (let i = 1; i < this.starting.length; i++) if (this.starting[i]! < this.starting[slot]!) slot = i;
    const worker = this.ensureWorker(slot);
    const id = this.nextId++;
    const env = { PATH: DEFAULT_PATH, ...spec.env };
    this.starting[slot]!++;
    return new Promise((resolve, reject) => {
      this.entries.set(id, { resolve, reject, slot, stdin: spec.stdin === true });
      const msg: SpawnerRequest = { t: 'spawn', id, argv: spec.argv, env, cwd: spec.cwd, identity: spec.identity, ...(spec.stdin === true ? { stdin: true } : {}) };
      worker.postMessage(msg);
    });
  }

  /** Ends the workers; processes they started keep running (they are their own process groups). */
  async close(): Promise<void> {
    const ws = this.workers.filter((w): w is Worker => w !== undefined);
    this.workers.fill(undefined);
    await Promise.all(ws.map((w) => w.terminate()));
  }

  private ensureWorker(slot: number): Worker {
    const existing = this.workers[slot];
    if (existing) return existing;
    const w = new Worker(new URL('./spawner-worker.js', import.meta.url));
    w.unref();
    w.on('message', (m: SpawnerReply) => this.onReply(slot, m));
    const fail = (err: Error): void => {
      if (this.workers[slot] === w) this.workers[slot] = undefined;
      for (const [id, e] of this.entries) {
        if (e.slot !== slot) continue;
        if (e.proc) {
          // Its exit can no longer be seen: report it as killed so the runtime does not wait forever.
          e.proc.stdout.push(null);
          e.proc.stderr.push(null);
          e.proc.emit('exit', null, 'SIGKILL');
          e.proc.emit('close', null, 'SIGKILL');
        } else e.reject(err);
        this.entries.delete(id);
      }
      this.starting[slot] = 0;
    };
    w.on('error', fail);
    w.on('exit', () => fail(new Error('the spawner worker exited')));
    this.workers[slot] = w;
    return w;
  }

  private onReply(slot: number, m: SpawnerReply): void {
    const e = this.entries.get(m.id);
    if (!e) return;
    switch (m.t) {
      case 'spawned': {
        this.starting[slot] = Math.max(0, this.starting[slot]! - 1);
        const id = m.id;
        const post = (r: SpawnerRequest, transfer?: ArrayBuffer[]): void => this.workers[slot]?.postMessage(r, transfer);
        const stdin = e.stdin
          ? {
              write: (chunk: Buffer) => {
                const copy = new Uint8Array(chunk);
                post({ t: 'stdin', id, chunk: copy }, [copy.buffer]);
              },
              end: () => post({ t: 'stdinEnd', id }),
            }
          : undefined;
        e.proc = new RemoteProcess(m.pid, () => post({ t: 'destroy', id }), stdin);
        e.resolve(e.proc);
        return;
      }
      case 'error':
        this.starting[slot] = Math.max(0, this.starting[slot]! - 1);
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
