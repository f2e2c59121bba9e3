// Streaming sessions of the built-in process runtime (kubectl exec, attach, port-forward), whose
// containers are host processes on the host's network: the agent speaks the streaming protocols
// itself (src/agent/server/streaming*.ts) and uses these for the container side.
//
//   exec         a new process with the container's user, environment and working directory, in a
//                process group of its own; stdin, stdout and stderr are pipes. There is no terminal:
//                under a tty the command still gets pipes, with stderr merged into stdout.
//   attach       the running container's stdout and stderr as they are written (not what the log
//                already holds); the process runtime never opens a container's stdin.
//   port-forward a TCP connection to 127.0.0.1:<port> (the pod shares the host's network).
import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import { constants as osConstants } from 'node:os';
import { PassThrough, Writable, type Duplex, type Readable } from 'node:stream';
import { DEFAULT_PATH, signalGroup, spawnPlan, type SpawnPlan } from './launcher.js';
import { RuntimeError, type AttachSession, type ExecSession, type StreamOptions } from './runtime.js';

export interface SessionProcessSpec {
  argv: string[];
  env: Record<string, string>;
  cwd: string;
  uid: number;
  gid: number;
  /** Supplementary groups (the container's fsGroup and supplementalGroups). */
  groups?: number[];
}

const exitCodeOf = (code: number | null, signal: NodeJS.Signals | null): number => code ?? 128 + (signal ? (osConstants.signals[signal] ?? 0) : 0);

/** Starts the command of an exec session; rejects (StartFailed) when it cannot start, as a runtime's exec would. */
export function startExecSession(spec: SessionProcessSpec, o: StreamOptions): Promise<ExecSession> {
  const [file, ...rest] = spec.argv;
  if (file === undefined || file === '') return Promise.reject(new RuntimeError('StartFailed', 'no command given'));
  return new Promise((resolve, reject) => {
    const env = { PATH: DEFAULT_PATH, ...spec.env };
    let plan: SpawnPlan;
    try {
      plan = spawnPlan([file, ...rest], { uid: spec.uid, gid: spec.gid, groups: spec.groups ?? [] }, env, spec.cwd);
    } catch (e) {
      reject(new RuntimeError('StartFailed', `exec failed: ${e instanceof Error ? e.message : String(e)}`));
      return;
    }
    const child = spawn(plan.file, plan.args, {
      cwd: spec.cwd,
      env,
      ...(plan.uid !== undefined ? { uid: plan.uid } : {}),
      ...(plan.gid !== undefined ? { gid: plan.gid } : {}),
      detached: true,
      stdio: [o.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise<number>((done) => child.once('close', (code, signal) => done(exitCodeOf(code, signal))));
    const out = child.stdout!;
    const err = child.stderr!;
    let stdout: Readable | null = out;
    let stderr: Readable | null = err;
    if (o.tty) {
      // No terminal: both outputs go to the one stream a tty would have.
      const merged = new PassThrough();
      let open = 2;
      const end = (): void => {
        if (--open === 0) merged.end();
      };
      for (const s of [out, err]) {
        s.on('data', (c: Buffer) => merged.write(c));
        s.once('end', end);
      }
      stdout = merged;
      stderr = null;
    }
    if (!o.stdout && !o.tty) out.resume();
    if (!o.stderr && !o.tty) err.resume();
    child.stdin?.on('error', () => {});
    child.once('error', (e) => reject(new RuntimeError('StartFailed', `exec failed: ${e.message}`)));
    child.once('spawn', () =>
      resolve({
        stdin: child.stdin,
        stdout: o.stdout || o.tty ? stdout : null,
        stderr: o.stderr && !o.tty ? stderr : null,
        exited,
        kill: () => {
          if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) signalGroup(child.pid, 'SIGKILL');
        },
      }),
    );
  });
}

/** Joins a running container's outputs; `exited` resolves with its exit code once it has exited. */
export function attachToOutputs(outputs: { stdout: Readable; stderr: Readable; stdin?: Writable | null; stdinOnce?: boolean }, exited: Promise<number>, o: StreamOptions): AttachSession {
  const stdout = new PassThrough();
  const stderr = o.tty ? stdout : new PassThrough();
  const onOut = (c: Buffer): void => void stdout.write(c);
  const onErr = (c: Buffer): void => void stderr.write(c);
  if (o.stdout || o.tty) outputs.stdout.on('data', onOut);
  if (o.stderr || o.tty) outputs.stderr.on('data', onErr);
  let ended = false;
  const end = (): void => {
    if (ended) return;
    ended = true;
    outputs.stdout.off('data', onOut);
    outputs.stderr.off('data', onErr);
    stdout.end();
    if (stderr !== stdout) stderr.end();
  };
  void exited.then(end);
  // The session's stdin feeds the container's; its end closes the container's stdin only under stdinOnce.
  const target = outputs.stdin;
  const stdin = target
    ? new Writable({
        write(chunk: Buffer, _enc, done) {
          if (!ended && target.writable) target.write(chunk);
          done();
        },
        final(done) {
          if (outputs.stdinOnce === true && target.writable) target.end();
          done();
        },
      })
    : null;
  return {
    stdin,
    stdout: o.stdout || o.tty ? stdout : null,
    stderr: o.stderr && !o.tty ? stderr : null,
    exited,
    detach: () => {
      end();
      // A client that goes away ends a stdinOnce container's stdin as well.
      if (stdin && outputs.stdinOnce === true && target?.writable) target.end();
    },
  };
}

/** A connection to a port of a pod on the host's network. */
export function dialHostPort(port: number): Promise<Duplex> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.off('error', reject);
      resolve(socket);
    });
    socket.once('error', reject);
  });
}
