// Starts container processes outside the agent. child_process.spawn forks and waits for the child's
// exec before it returns (milliseconds per process on a busy host, during which the event loop stands
// still), and a fork from the ~100 MiB agent costs it far more than one from a small process: the copy
// of its page tables, then a copy-on-write fault for every page the agent and its garbage collector
// write next. The spawner therefore hands spawns to small helper processes (spawner-process.ts, each a
// Node process with an IPC channel), which start them with launcher.ts's spawnContainerProcess (uid/gid
// or setpriv, new process group, the container's environment, stdin closed unless the container asks
// for it: then a pipe fed by 'stdin' messages) and relay the child's stdout/stderr
// chunks, exit and close back as messages. The agent sees a RemoteProcess shaped like the parts of a
// ChildProcess the runtime uses: pid, stdout and stderr as Readables, 'exit' and 'close'. Signals need
// no relay: the caller sends them to the process group by pid (signalGroup). The helpers inherit the
// agent's user, rlimits, cgroup and CPU affinity when they start (start() is called by the agent's
// start, after it set its own rlimits), and containers inherit them from the helpers.
//
// A spawn is mostly waiting: for the fork, then for the child to be scheduled and exec (about 5-12 ms
// per process on a busy host). One helper spawning one process after the other made a burst of 100 new
// pods wait ~1 s for its last process; the spawner therefore keeps a small pool (two, or one per core
// up to four) and gives each spawn to the helper with the fewest spawns under way, so the waits overlap.
//
// The helpers are started by start() (or on first use), and again on the next use after one ended; they
// do not keep the agent alive (unref). They end with their IPC channel: close(), or the agent's exit
// (even a SIGKILL), closes it. A helper that dies while the agent runs takes the news of its containers'
// exits with it: those containers are killed (their process groups) and reported as killed, so no
// container runs unsupervised. Each runtime owns its spawner (no process-wide state).
import { EventEmitter } from 'node:events';
import { availableParallelism } from 'node:os';
import { spawn, type ChildProcess } from 'node:child_process';
import { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { DEFAULT_PATH, signalGroup, type LaunchSpec } from './launcher.js';
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
  /** The pool slot of the helper that runs this process, and the helper. */
  slot: number;
  helper: ChildProcess;
  proc?: RemoteProcess;
  /** The process gets a stdin pipe (LaunchSpec.stdin). */
  stdin?: boolean;
  /**
   * Its output, exit and close as they arrived between 'spawned' and the next turn of the event loop:
   * several messages can come in one read of the channel, and whoever awaits launch() must see the
   * process before its exit is emitted.
   */
  backlog?: Extract<SpawnerReply, { t: 'data' | 'exit' | 'close' }>[];
}

/** Helpers in the pool: two (spawns overlap even on one core: most of a spawn is waiting), one per core up to four. */
export const SPAWNER_WORKERS = Math.min(4, Math.max(2, availableParallelism()));

/** The helper's program, and Node's options for it: a small young generation, no V8 worker threads. */
const HELPER = fileURLToPath(new URL('./spawner-process.js', import.meta.url));
const HELPER_NODE_OPTIONS = ['--max-semi-space-size=1', '--single-threaded'];

export class Spawner {
  private readonly helpers: (ChildProcess | undefined)[];
  /** Spawns sent to each helper and not yet answered. */
  private readonly starting: number[];
  private nextId = 1;
  private readonly entries = new Map<number, Pending>();
  private closed = false;

  constructor(size = SPAWNER_WORKERS) {
    this.helpers = new Array<ChildProcess | undefined>(Math.max(1, size)).fill(undefined);
    this.starting = new Array<number>(this.helpers.length).fill(0);
  }

  /** Starts the helpers ahead of the first spawn (a Node process takes a while to load on a busy host). */
  start(): void {
    this.closed = false;
    for (let i = 0; i < this.helpers.length; i++) this.ensureHelper(i);
  }

  /** The helpers' pids (for diagnostics and the benches' CPU accounting). */
  pids(): number[] {
    return this.helpers.flatMap((h) => (h?.pid !== undefined ? [h.pid] : []));
  }

  /** Starts the process; resolves once it runs, rejects with spawn's error (ENOENT, EACCES, EPERM). */
  launch(spec: LaunchSpec): Promise<RemoteProcess> {
    this.closed = false;
    let slot = 0;
    for (let i = 1; i < this.starting.length; i++) if (this.starting[i]! < this.starting[slot]!) slot = i;
    const helper = this.ensureHelper(slot);
    const id = this.nextId++;
    const env = { PATH: DEFAULT_PATH, ...spec.env };
    this.starting[slot]!++;
    return new Promise((resolve, reject) => {
      this.entries.set(id, { resolve, reject, slot, helper, stdin: spec.stdin === true });
      this.refChannel(slot, helper);
      const msg: SpawnerRequest = { t: 'spawn', id, argv: spec.argv, env, cwd: spec.cwd, identity: spec.identity, ...(spec.stdin === true ? { stdin: true } : {}) };
      helper.send(msg);
    });
  }

  /** Ends the helpers; processes they started keep running (they are their own process groups). */
  async close(): Promise<void> {
    this.closed = true;
    const hs = this.helpers.filter((h): h is ChildProcess => h !== undefined);
    this.helpers.fill(undefined);
    await Promise.all(
      hs.map(
        (h) =>
          new Promise<void>((resolve) => {
            if (h.exitCode !== null || h.signalCode !== null) return resolve();
            h.once('exit', () => resolve());
            // waited for: the agent stays until its helpers are gone
            h.ref();
            // the helper exits when its channel closes
            if (h.connected) h.disconnect();
            else h.kill('SIGKILL');
          }),
      ),
    );
  }

  private ensureHelper(slot: number): ChildProcess {
    const existing = this.helpers[slot];
    if (existing) return existing;
    const h = spawn(process.execPath, [...HELPER_NODE_OPTIONS, HELPER], {
      // the helper's own environment: nothing of the agent's (each container gets exactly its own)
      env: {},
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
      serialization: 'advanced',
    });
    h.unref();
    this.refChannel(slot, h);
    h.on('message', (m: SpawnerReply) => this.onReply(slot, h, m));
    let failed = false;
    const fail = (err: Error): void => {
      if (failed) return;
      failed = true;
      if (this.helpers[slot] === h) this.helpers[slot] = undefined;
      for (const [id, e] of this.entries) {
        if (e.slot !== slot) continue;
        if (e.proc) {
          // Its exit can no longer be seen: it is killed (unless the agent is closing the spawner, which
          // happens after the runtime stopped its containers) and reported as killed, so the runtime does not wait forever.
          if (!this.closed) signalGroup(e.proc.pid, 'SIGKILL');
          this.deliver(e, { t: 'exit', id, code: null, signal: 'SIGKILL' });
          this.deliver(e, { t: 'close', id, code: null, signal: 'SIGKILL' });
        } else e.reject(err);
        this.entries.delete(id);
      }
      this.starting[slot] = 0;
    };
    h.on('error', fail);
    h.on('exit', (code, signal) => fail(new Error(`the spawner process exited (${signal ?? `code ${code}`})`)));
    this.helpers[slot] = h;
    return h;
  }

  /**
   * A helper's channel keeps the agent alive while a process it started runs or a spawn is under way (as
   * a ChildProcess would), not when it has none.
   */
  private refChannel(slot: number, h: ChildProcess): void {
    const channel = h.channel as { ref?: () => void; unref?: () => void } | null | undefined;
    let live = false;
    for (const e of this.entries.values()) {
      if (e.slot === slot) {
        live = true;
        break;
      }
    }
    if (live) channel?.ref?.();
    else channel?.unref?.();
  }

  private onReply(slot: number, h: ChildProcess, m: SpawnerReply): void {
    const e = this.entries.get(m.id);
    if (!e) return;
    switch (m.t) {
      case 'spawned': {
        this.starting[slot] = Math.max(0, this.starting[slot]! - 1);
        const id = m.id;
        const post = (r: SpawnerRequest): void => {
          if (h.connected) h.send(r);
        };
        const stdin = e.stdin
          ? {
              write: (chunk: Buffer) => post({ t: 'stdin', id, chunk: new Uint8Array(chunk) }),
              end: () => post({ t: 'stdinEnd', id }),
            }
          : undefined;
        e.proc = new RemoteProcess(m.pid, () => post({ t: 'destroy', id }), stdin);
        e.backlog = [];
        setImmediate(() => {
          const backlog = e.backlog ?? [];
          e.backlog = undefined;
          for (const x of backlog) this.deliver(e, x);
        });
        e.resolve(e.proc);
        return;
      }
      case 'error':
        this.starting[slot] = Math.max(0, this.starting[slot]! - 1);
        this.entries.delete(m.id);
        this.refChannel(slot, h);
        e.reject(
          Object.assign(new Error(m.message), {
            ...(m.code !== undefined ? { code: m.code } : {}),
            ...(m.errno !== undefined ? { errno: m.errno } : {}),
            ...(m.syscall !== undefined ? { syscall: m.syscall } : {}),
            ...(m.path !== undefined ? { path: m.path } : {}),
          }),
        );
        return;
      default:
        this.deliver(e, m);
    }
  }

  /** A started process's output, exit or close, to its RemoteProcess (queued while its launch() is being answered). */
  private deliver(e: Pending, m: Extract<SpawnerReply, { t: 'data' | 'exit' | 'close' }>): void {
    if (e.backlog) {
      e.backlog.push(m);
      return;
    }
    const p = e.proc;
    switch (m.t) {
      case 'data': {
        const s = m.fd === 1 ? p?.stdout : p?.stderr;
        if (s && !s.destroyed) s.push(Buffer.from(m.chunk.buffer, m.chunk.byteOffset, m.chunk.byteLength));
        return;
      }
      case 'exit':
        p?.emit('exit', m.code, m.signal);
        return;
      case 'close': {
        this.entries.delete(m.id);
        this.refChannel(e.slot, e.helper);
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
