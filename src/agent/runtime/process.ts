// The built-in process runtime: every container is a host process started by the launcher's plan
// (by the spawner's small helper processes, so spawn's fork neither stalls the agent's event loop nor
// costs it a copy of its page tables; spawner.ts), as the user identity.ts resolves; exec probes
// (execSync) too. Exec sessions still spawn from the agent. A sandbox is only a record and a log
// directory (no namespaces, no cgroups: containers share the host's network, PID space and filesystem).
//
// The image field is ignored: it is required by validation, but this runtime runs the host's own
// binaries (`command` + `args`), and reports the image name back unchanged with an empty imageID.
//
// State lives in memory: if the agent dies without shutdown(), its containers' processes (each the
// leader of its own process group) keep running unsupervised and are not adopted by the next agent.
import { randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, rm } from 'node:fs/promises';
import { constants as osConstants } from 'node:os';
import { dirname, isAbsolute, join } from 'node:path';
import { CriLogWriter } from './crilog.js';
import { resolveIdentity, type ProcessIdentity } from './identity.js';
import { signalGroup } from './launcher.js';
import { Spawner, type RemoteProcess } from './spawner.js';
import { pinNewGroup, setGroupAffinity } from '../cm/affinity.js';
import { attachToOutputs, dialHostPort, startExecSession } from './process-streaming.js';
import type { Duplex } from 'node:stream';
import {
  RuntimeError,
  type ContainerConfig,
  type ContainerEvent,
  type ContainerFilter,
  type ContainerStatus,
  type ContainerStats,
  type ContainerSummary,
  type AttachSession,
  type ExecSession,
  type StreamOptions,
  type ExecSyncResult,
  type LinuxContainerResources,
  type PodSandbox,
  type PodSandboxConfig,
  type Runtime,
  type RuntimeVersion,
  type SandboxFilter,
} from './runtime.js';

export const PROCESS_RUNTIME_NAME = 'orch';

export interface ProcessRuntimeOptions {
  /** Whether privileged containers (and with them root) may run; default false. */
  allowPrivileged?: boolean;
}

interface SandboxRecord {
  sandbox: PodSandbox;
  config: PodSandboxConfig;
}

interface ContainerRecord {
  status: ContainerStatus;
  log?: CriLogWriter;
  config: ContainerConfig;
  sandboxConfig: PodSandboxConfig;
  identity: ProcessIdentity;
  child?: RemoteProcess;
  /** Resolves when the process has exited and its log is closed. */
  exited?: Promise<void>;
}

/** Random 64-hex ids for sandboxes and containers, cut from a pool of random bytes (one random draw per 64 ids). */
class IdSource {
  private pool = Buffer.alloc(0);
  private at = 0;
  next(): string {
    if (this.at + 32 > this.pool.length) {
      this.pool = randomBytes(32 * 64);
      this.at = 0;
    }
    this.at += 32;
    return this.pool.toString('hex', this.at - 32, this.at);
  }
}

/** A copy of a container's status (each sync reads two per container: a field-wise copy, not structuredClone's). */
function copyStatus(s: ContainerStatus): ContainerStatus {
  const c: ContainerStatus = { ...s, metadata: { ...s.metadata }, createdAt: new Date(s.createdAt), labels: { ...s.labels }, annotations: { ...s.annotations } };
  if (s.startedAt) c.startedAt = new Date(s.startedAt);
  if (s.finishedAt) c.finishedAt = new Date(s.finishedAt);
  return c;
}

export class ProcessRuntime implements Runtime {
  private readonly sandboxes = new Map<string, SandboxRecord>();
  private readonly containers = new Map<string, ContainerRecord>();
  private readonly listeners = new Set<(e: ContainerEvent) => void>();
  private closed = false;
  /** Starts containers' processes outside the agent (small helper processes). */
  private readonly spawner = new Spawner();
  private readonly ids = new IdSource();

  constructor(private readonly options: ProcessRuntimeOptions = {}) {}

  /** Starts the spawner's helpers (the agent's start, after it set its own rlimits, which they and the containers inherit). */
  async start(): Promise<void> {
    this.checkOpen();
    this.spawner.start();
  }

  /** The pids of the spawner's helper processes (diagnostics, the benches' CPU accounting). */
  helperPids(): number[] {
    return this.spawner.pids();
  }

  async version(): Promise<RuntimeVersion> {
    return { runtimeName: PROCESS_RUNTIME_NAME, runtimeVersion: '0.1.0', runtimeApiVersion: 'v1' };
  }

  async runPodSandbox(config: PodSandboxConfig): Promise<string> {
    this.checkOpen();
    if (!isAbsolute(config.logDirectory)) throw new RuntimeError('InvalidState', `logDirectory must be absolute: ${config.logDirectory}`);
    await mkdir(config.logDirectory, { recursive: true, mode: 0o750 });
    const id = this.ids.next();
    this.sandboxes.set(id, {
      config: structuredClone(config),
      sandbox: {
        id,
        metadata: { ...config.metadata },
        state: 'SANDBOX_READY',
        createdAt: new Date(),
        labels: { ...(config.labels ?? {}) },
        annotations: { ...(config.annotations ?? {}) },
      },
    });
    return id;
  }

  async stopPodSandbox(id: string, gracePeriodSeconds = 0): Promise<void> {
    const rec = this.sandboxRecord(id);
    const running = [...this.containers.values()].filter((c) => c.status.podSandboxId === id);
    await Promise.all(running.map((c) => this.stopContainer(c.status.id, gracePeriodSeconds)));
    rec.sandbox.state = 'SANDBOX_NOTREADY';
  }

  async removePodSandbox(id: string): Promise<void> {
    const rec = this.sandboxes.get(id);
    if (!rec) return;
    await this.stopPodSandbox(id, 0);
    for (const c of [...this.containers.values()]) if (c.status.podSandboxId === id) await this.removeContainer(c.status.id);
    this.sandboxes.delete(id);
  }

  async podSandboxStatus(id: string): Promise<PodSandbox> {
    return structuredClone(this.sandboxRecord(id).sandbox);
  }

  async listPodSandbox(filter: SandboxFilter = {}): Promise<PodSandbox[]> {
    return [...this.sandboxes.values()]
      .map((r) => r.sandbox)
      .filter((s) => (filter.id === undefined || s.id === filter.id) && (filter.state === undefined || s.state === filter.state))
      .map((s) => structuredClone(s));
  }

  async createContainer(podSandboxId: string, config: ContainerConfig, sandboxConfig: PodSandboxConfig): Promise<string> {
    this.checkOpen();
    const sandbox = this.sandboxRecord(podSandboxId);
    if (sandbox.sandbox.state !== 'SANDBOX_READY') throw new RuntimeError('InvalidState', `sandbox ${podSandboxId} is not ready`);
    const who = resolveIdentity(config.securityContext, this.options.allowPrivileged === true);
    if (!who.ok) throw new RuntimeError('ConfigRefused', who.message);
    if (config.command.length + config.args.length === 0) {
      throw new RuntimeError('ConfigRefused', 'no command given: the process runtime ignores images, so command (or args) is required');
    }
    const logPath = join(sandboxConfig.logDirectory, config.logPath);
    await mkdir(dirname(logPath), { recursive: true, mode: 0o750 });
    const id = this.ids.next();
    this.containers.set(id, {
      config: structuredClone(config),
      sandboxConfig: structuredClone(sandboxConfig),
      identity: who.identity,
      status: {
        id,
        podSandboxId,
        metadata: { ...config.metadata },
        image: config.image,
        state: 'CONTAINER_CREATED',
        createdAt: new Date(),
        labels: { ...(config.labels ?? {}) },
        annotations: { ...(config.annotations ?? {}) },
        logPath,
      },
    });
    return id;
  }

  async startContainer(id: string): Promise<void> {
    this.checkOpen();
    const rec = this.containerRecord(id);
    if (rec.status.state !== 'CONTAINER_CREATED') throw new RuntimeError('InvalidState', `container ${id} is ${rec.status.state}, not created`);
    const log = new CriLogWriter(rec.status.logPath);
    const { config } = rec;
    let child: RemoteProcess;
    try {
      child = await this.spawner.launch({
        argv: [...config.command, ...config.args],
        env: this.envOf(rec),
        cwd: config.workingDir ?? '/',
        identity: rec.identity,
        ...(config.stdin === true ? { stdin: true } : {}),
      });
    } catch (err) {
      await log.close();
      const now = new Date();
      const message = err instanceof Error ? err.message : String(err);
      Object.assign(rec.status, { state: 'CONTAINER_EXITED', startedAt: now, finishedAt: now, exitCode: 128, reason: 'StartError', message });
      this.emit('CONTAINER_STOPPED_EVENT', rec);
      throw new RuntimeError('StartFailed', message);
    }
    rec.child = child;
    rec.log = log;
    rec.status.state = 'CONTAINER_RUNNING';
    rec.status.startedAt = new Date();
    // cpuset.cpus as CPU affinity (best effort, cm/affinity.ts)
    const cpus = config.resources?.cpusetCpus;
    if (cpus !== undefined && child.pid !== undefined) pinNewGroup(child.pid, cpus);
    child.stdout.on('data', (chunk: Buffer) => log.write('stdout', chunk));
    child.stderr.on('data', (chunk: Buffer) => log.write('stderr', chunk));
    rec.exited = new Promise<void>((resolve) => {
      child.once('exit', (code: number | null, signal: NodeJS.Signals | null) => {
        // As when a PID namespace's init exits: whatever the main process left in its group dies too.
        if (child.pid !== undefined) signalGroup(child.pid, 'SIGKILL');
        let done = false;
        const finish = (): void => {
          if (done) return;
          done = true;
          clearTimeout(drainTimer);
          child.stdout.destroy();
          child.stderr.destroy();
          rec.log = undefined;
          void log.close().then(() => {
            const exitCode = code ?? 128 + (signal ? (osConstants.signals[signal] ?? 0) : 0);
            Object.assign(rec.status, {
              state: 'CONTAINER_EXITED',
              finishedAt: new Date(),
              exitCode,
              reason: exitCode === 0 ? 'Completed' : 'Error',
            });
            rec.child = undefined;
            this.emit('CONTAINER_STOPPED_EVENT', rec);
            resolve();
          });
        };
        // Output still in the pipes is drained; a descendant that escaped the group cannot hold the exit back.
        const drainTimer = setTimeout(finish, 2000);
        child.once('close', finish);
      });
    });
    this.emit('CONTAINER_STARTED_EVENT', rec);
  }

  async stopContainer(id: string, timeoutSeconds: number): Promise<void> {
    const rec = this.containerRecord(id);
    if (rec.status.state === 'CONTAINER_CREATED') {
      const now = new Date();
      Object.assign(rec.status, { state: 'CONTAINER_EXITED', finishedAt: now, exitCode: 0, reason: 'Completed' });
      return;
    }
    const child = rec.child;
    if (!child || child.pid === undefined || rec.exited === undefined) return;
    const pid = child.pid;
    signalGroup(pid, 'SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const killed = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        signalGroup(pid, 'SIGKILL');
        resolve();
      }, Math.max(0, timeoutSeconds) * 1000);
    });
    await Promise.race([rec.exited, killed]);
    clearTimeout(timer);
    await rec.exited;
    // The main process is gone; anything left in its group is killed with it (as a PID namespace would).
    signalGroup(pid, 'SIGKILL');
  }

  async removeContainer(id: string): Promise<void> {
    const rec = this.containers.get(id);
    if (!rec) return;
    if (rec.status.state === 'CONTAINER_RUNNING') throw new RuntimeError('InvalidState', `container ${id} is running; stop it first`);
    this.containers.delete(id);
    await rm(rec.status.logPath, { force: true });
    this.emit('CONTAINER_DELETED_EVENT', rec);
  }

  async listContainers(filter: ContainerFilter = {}): Promise<ContainerSummary[]> {
    return [...this.containers.values()]
      .map((r) => r.status)
      .filter(
        (s) =>
          (filter.id === undefined || s.id === filter.id) &&
          (filter.podSandboxId === undefined || s.podSandboxId === filter.podSandboxId) &&
          (filter.state === undefined || s.state === filter.state),
      )
      .map((s) => ({
        id: s.id,
        podSandboxId: s.podSandboxId,
        metadata: { ...s.metadata },
        image: s.image,
        state: s.state,
        createdAt: s.createdAt,
        labels: { ...s.labels },
        annotations: { ...s.annotations },
      }));
  }

  async containerStatus(id: string): Promise<ContainerStatus> {
    return copyStatus(this.containerRecord(id).status);
  }

  onContainerEvent(listener: (event: ContainerEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async shutdown(gracePeriodSeconds = 30): Promise<void> {
    this.closed = true;
    await Promise.all([...this.containers.keys()].map((id) => this.stopContainer(id, gracePeriodSeconds)));
    for (const rec of this.sandboxes.values()) rec.sandbox.state = 'SANDBOX_NOTREADY';
    await this.spawner.close();
  }

  /**
   * Runs `cmd` beside a running container (exec probes): a new process with the container's user,
   * environment and working directory, in no process group of the container. Rejects when the
   * container is not running, the command cannot start, or it outlives `timeoutSeconds` (it is then
   * killed).
   */
  async execSync(id: string, cmd: string[], timeoutSeconds: number): Promise<ExecSyncResult> {
    const rec = this.containerRecord(id);
    if (rec.status.state !== 'CONTAINER_RUNNING') throw new RuntimeError('InvalidState', `container ${id} is not running`);
    // through the spawner too: periodic probes never fork the agent itself
    const child = await this.spawner.launch({ argv: cmd, env: this.envOf(rec), cwd: rec.config.workingDir ?? '/', identity: rec.identity });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => err.push(c));
    return new Promise((resolve, reject) => {
      const timer =
        timeoutSeconds > 0
          ? setTimeout(() => {
              if (child.pid !== undefined) signalGroup(child.pid, 'SIGKILL');
              reject(new RuntimeError('Failed', `command ${JSON.stringify(cmd.join(' '))} timed out after ${timeoutSeconds}s`));
            }, timeoutSeconds * 1000)
          : undefined;
      child.once('close', (code: number | null, signal: NodeJS.Signals | null) => {
        clearTimeout(timer);
        resolve({ stdout: Buffer.concat(out), stderr: Buffer.concat(err), exitCode: code ?? 128 + (signal ? (osConstants.signals[signal] ?? 0) : 0) });
      });
    });
  }

  /** Closes and reopens a running container's log file (after the log manager renamed it). */
  async reopenContainerLog(id: string): Promise<void> {
    const rec = this.containerRecord(id);
    if (!rec.log) throw new RuntimeError('InvalidState', `container ${id} is not running`);
    await rec.log.reopen();
  }

  /** Memory (RSS) and process count of a running container's process group, from /proc. */
  /** Only cpusetCpus applies: the CPU affinity of the container's processes (taskset, best effort). */
  async updateContainerResources(id: string, resources: LinuxContainerResources): Promise<void> {
    const rec = this.runningRecord(id);
    const pid = rec.child?.pid;
    if (resources.cpusetCpus === undefined || pid === undefined) return;
    rec.config.resources = { ...(rec.config.resources ?? {}), cpusetCpus: resources.cpusetCpus };
    const err = await setGroupAffinity(pid, resources.cpusetCpus);
    if (err !== undefined) throw new RuntimeError('Failed', `setting the CPU affinity of container ${id}: ${err}`);
  }

  async containerStats(id: string): Promise<ContainerStats | undefined> {
    const pid = this.containerRecord(id).child?.pid;
    if (pid === undefined) return undefined;
    return processGroupStats(pid);
  }

  // --- streaming: the agent serves the protocols; these are the container side (process-streaming.ts) ---

  async execStream(id: string, cmd: string[], options: StreamOptions): Promise<ExecSession> {
    const rec = this.runningRecord(id);
    const env: Record<string, string> = { HOSTNAME: rec.sandboxConfig.hostname ?? rec.sandboxConfig.metadata.name };
    for (const kv of rec.config.envs) env[kv.key] = kv.value;
    return startExecSession({ argv: cmd, env, cwd: rec.config.workingDir ?? '/', uid: rec.identity.uid, gid: rec.identity.gid, groups: rec.identity.groups ?? [] }, options);
  }

  async attachStream(id: string, options: StreamOptions): Promise<AttachSession> {
    const rec = this.runningRecord(id);
    const child = rec.child!;
    const exited = rec.exited!.then(() => rec.status.exitCode ?? 0);
    // The container's stdin (spec stdin: true) for a session that asks for it; with stdinOnce the end of
    // the first session's stdin closes the container's, as containerd does.
    const stdin = options.stdin && child.stdin ? child.stdin : null;
    return attachToOutputs({ stdout: child.stdout, stderr: child.stderr, stdin, stdinOnce: rec.config.stdinOnce === true }, exited, options);
  }

  async portForwardDial(podSandboxId: string, port: number): Promise<Duplex> {
    this.sandboxRecord(podSandboxId);
    return dialHostPort(port);
  }

  private runningRecord(id: string): ContainerRecord {
    const rec = this.containerRecord(id);
    if (rec.status.state !== 'CONTAINER_RUNNING' || !rec.child || !rec.exited) throw new RuntimeError('InvalidState', `container ${id} is not running`);
    return rec;
  }

  /** The pid of a running container's main process (for tests and diagnostics). */
  pidOf(id: string): number | undefined {
    return this.containers.get(id)?.child?.pid;
  }

  private envOf(rec: ContainerRecord): Record<string, string> {
    const env: Record<string, string> = { HOSTNAME: rec.sandboxConfig.hostname ?? rec.sandboxConfig.metadata.name };
    for (const kv of rec.config.envs) env[kv.key] = kv.value;
    return env;
  }

  private emit(type: ContainerEvent['type'], rec: ContainerRecord): void {
    const event: ContainerEvent = { type, containerId: rec.status.id, podSandboxId: rec.status.podSandboxId };
    for (const l of this.listeners) {
      try {
        l(event);
      } catch {
        // a listener's failure is its own
      }
    }
  }

  private checkOpen(): void {
    if (this.closed) throw new RuntimeError('InvalidState', 'the runtime is shut down');
  }

  private sandboxRecord(id: string): SandboxRecord {
    const rec = this.sandboxes.get(id);
    if (!rec) throw new RuntimeError('NotFound', `pod sandbox ${id} not found`);
    return rec;
  }

  private containerRecord(id: string): ContainerRecord {
    const rec = this.containers.get(id);
    if (!rec) throw new RuntimeError('NotFound', `container ${id} not found`);
    return rec;
  }
}

/** Sums the resident memory and counts the processes of a process group (Linux /proc). */
export async function processGroupStats(pgid: number): Promise<ContainerStats> {
  let memoryBytes = 0;
  let processes = 0;
  const page = 4096;
  for (const e of await readdir('/proc').catch((): string[] => [])) {
    if (!/^\d+$/.test(e)) continue;
    const stat = await readFile(`/proc/${e}/stat`, 'utf8').catch(() => '');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // fields[2] is the process group, fields[21] the resident set in pages
    if (Number(fields[2]) !== pgid) continue;
    processes++;
    memoryBytes += Number(fields[21] ?? 0) * page;
  }
  return { memoryBytes, processes };
}
