// The CRI runtime: orchlet's Runtime interface on a remote CRI runtime (containerd, CRI-O) through
// the gRPC client of cri/client.ts. Containers run from their images, isolated in the runtime's
// namespaces and cgroups; the runtime writes their logs in the CRI format where the agent asks.
//
// What this adds to the plain CRI calls, so that it behaves as the Runtime contract says:
//   - stopPodSandbox stops each container with the grace period before the CRI's StopPodSandbox
//     (which would kill them at once), as kubelet's KillPod does;
//   - removeContainer refuses a running container and removes its log file; removePodSandbox
//     removes the sandbox's log files and the pod-level cgroup it placed the sandbox in;
//   - container events are found by polling ListContainers (kubelet's PLEG relist); with a runtime
//     that streams them (GetContainerEvents, CRI 1.27+: containerd 1.7, not 1.6, which answers
//     UNIMPLEMENTED) they are also taken from the stream as they happen, the relist staying for what
//     the stream misses; starts and stops the agent asks for are reported at once;
//   - privileged containers are refused unless the agent allows them (allowPrivileged).
// Sandboxes without a cgroup parent are placed under `<cgroupRoot>/pod<uid>` when cgroupRoot is set.
//
// State: only caches (which sandbox a container belongs to, the cgroup parent of each sandbox, each
// container's log file, which sandboxes this agent stopped: removing a pod's sandbox then costs no
// PodSandboxStatus and no ContainerStatus per container); the runtime itself is the truth, so a new
// agent finds running sandboxes and containers again.
import { mkdir, readFile, rm, rmdir } from 'node:fs/promises';
import { isAbsolute, join } from 'node:path';
import { CriClient, CriError, type CriClientOptions } from './cri/client.js';
import { hairpinSandbox } from '../network/hairpin.js';
import type * as cri from './cri/types.js';
import type { AuthConfig } from '../credentialprovider/keyring.js';
import {
  RuntimeError,
  type ContainerConfig,
  type ContainerEvent,
  type ContainerFilter,
  type ContainerState,
  type ContainerStatus,
  type ContainerSummary,
  type ExecSyncResult,
  type StreamOptions,
  type ImageInfo,
  type ImageService,
  type LinuxContainerResources,
  type PodSandbox,
  type PodSandboxConfig,
  type Runtime,
  type RuntimeVersion,
  type SandboxFilter,
} from './runtime.js';

export interface CriRuntimeOptions extends CriClientOptions {
  /** Whether privileged containers may run; default false. */
  allowPrivileged?: boolean;
  /** Parent cgroup for sandboxes whose config names none (each gets `<cgroupRoot>/pod<uid>`); unset: the runtime's default. */
  cgroupRoot?: string;
  /** How often container states are polled for events, in ms (default 1000, kubelet's relist period). */
  eventPollMs?: number;
  /** Images reported as pinned (--pod-infra-container-image): image garbage collection keeps them. */
  pinnedImages?: string[];
  /** How long without a successful relist until the relist (kubelet's PLEG) is unhealthy, in ms (default 3 minutes). */
  /** --hairpin-mode in force (network/dockershim-options.ts): hairpin-veth sets hairpin on each pod sandbox's bridge port. */
  hairpin?: { mode: 'hairpin-veth' | 'none' | 'promiscuous-bridge'; log?: (message: string) => void; sysfs?: string };
  plegThresholdMs?: number;
}

/** A duration as Go prints a time.Duration (3m0s, 2.5s, 1h2m3.004s), for kubelet's messages. */
export function goDuration(ms: number): string {
  if (ms === 0) return '0s';
  if (ms < 1000) return `${ms}ms`;
  const h = Math.floor(ms / 3_600_000);
  const m = Math.floor((ms % 3_600_000) / 60_000);
  const sec = ((ms % 60_000) / 1000).toFixed(3).replace(/\.?0+$/, '');
  return `${h > 0 ? `${h}h` : ''}${h > 0 || m > 0 ? `${m}m` : ''}${sec}s`;
}

/** The RuntimeError for a failed CRI call. */
export function runtimeErrorOf(err: unknown): RuntimeError {
  if (err instanceof RuntimeError) return err;
  if (err instanceof CriError) {
    if (err.notFound) return new RuntimeError('NotFound', err.message);
    if (err.unavailable) return new RuntimeError('Unavailable', `container runtime unavailable: ${err.message}`);
    return new RuntimeError('Failed', err.message);
  }
  return new RuntimeError('Failed', err instanceof Error ? err.message : String(err));
}

async function criCall<T>(call: Promise<T>): Promise<T> {
  try {
    return await call;
  } catch (err) {
    throw runtimeErrorOf(err);
  }
}

/** A CRI timestamp (nanoseconds since the epoch, as a number or a decimal string) as a Date; 0 as undefined. */
export function dateOfNanos(ns: string | number | undefined): Date | undefined {
  if (ns === undefined || ns === '' || ns === '0' || ns === 0) return undefined;
  return new Date(typeof ns === 'number' ? Math.floor(ns / 1_000_000) : Number(BigInt(ns) / 1_000_000n));
}

const copy = (m: Record<string, string> | undefined): Record<string, string> => ({ ...(m ?? {}) });

/** The cgroup hierarchies mounted on this host (v1 controllers, or the v2 root). */
async function cgroupMounts(): Promise<string[]> {
  const text = await readFile('/proc/self/mountinfo', 'utf8').catch(() => '');
  const out: string[] = [];
  for (const line of text.split('\n')) {
    const parts = line.split(' ');
    const sep = parts.indexOf('-');
    if (sep > 0 && (parts[sep + 1] === 'cgroup' || parts[sep + 1] === 'cgroup2')) out.push(parts[4]!);
  }
  return out;
}

export class CriRuntime implements Runtime {
  readonly runsImages = true;
  readonly images: ImageService;
  private readonly sandboxOf = new Map<string, string>();
  private readonly cgroupParents = new Map<string, string>();
  private readonly listeners = new Set<(e: ContainerEvent) => void>();
  /** The last state reported per container id (events are emitted on changes). */
  private readonly reported = new Map<string, ContainerState>();
  /**
   * The verbose status a new sandbox's hairpin setup just read, kept for the sandbox status the pod's
   * sync asks for next (its IP), so one new sandbox costs one PodSandboxStatus, not two; used once, and
   * only within a second of being read.
   */
  private readonly freshStatus = new Map<string, { at: number; status: cri.PodSandboxStatus }>();
  /** Log file of each container this agent created or asked the status of (removal deletes it without asking again). */
  private readonly logPaths = new Map<string, string>();
  /** Sandboxes this agent stopped (a stopped sandbox never runs again): their removal needs no status first. */
  private readonly stoppedSandboxes = new Set<string>();
  /** The host's cgroup hierarchies, read from mountinfo once (it grows by a few mounts with every pod). */
  private cgroupHierarchies: Promise<string[]> | undefined;
  private pollTimer: NodeJS.Timeout | undefined;
  /** Cancels the GetContainerEvents stream, while one is open. */
  private cancelEvents: (() => void) | undefined;
  /** The runtime answered GetContainerEvents with UNIMPLEMENTED: not asked again. */
  private noEventStream = false;
  private polling = false;
  private closed = false;
  /** When the last relist succeeded (ms; 0: never). */
  private lastRelist = 0;

  private constructor(
    readonly client: CriClient,
    private readonly options: CriRuntimeOptions,
  ) {
    this.images = new CriImages(client, options.pinnedImages ?? []);
  }

  /** Connects to the runtime (negotiating runtime.v1 or v1alpha2); rejects when it cannot be reached. */
  static async connect(options: CriRuntimeOptions): Promise<CriRuntime> {
    const client = await criCall(CriClient.connect(options));
    return new CriRuntime(client, options);
  }

  async version(): Promise<RuntimeVersion> {
    const v = await criCall(this.client.version());
    return { runtimeName: v.runtimeName, runtimeVersion: v.runtimeVersion, runtimeApiVersion: v.runtimeApiVersion };
  }

  /** The runtime's own conditions (RuntimeReady, NetworkReady). */
  async runtimeConditions(): Promise<cri.RuntimeCondition[]> {
    const s = await criCall(this.client.status());
    return s.status?.conditions ?? [];
  }

  // --- sandboxes ------------------------------------------------------------------------------

  private cgroupParentOf(config: PodSandboxConfig): string | undefined {
    if (config.linux?.cgroupParent) return config.linux.cgroupParent;
    if (this.options.cgroupRoot === undefined || this.options.cgroupRoot === '') return undefined;
    return join(this.options.cgroupRoot, `pod${config.metadata.uid}`);
  }

  /** The CRI PodSandboxConfig of a sandbox config (also sent again with every CreateContainer). */
  criSandboxConfig(config: PodSandboxConfig): cri.PodSandboxConfig {
    const l = config.linux ?? {};
    const cgroupParent = this.cgroupParentOf(config);
    const out: cri.PodSandboxConfig = {
      metadata: { ...config.metadata },
      // A sandbox in the node's network namespace must not set a hostname.
      hostname: l.hostNetwork ? '' : (config.hostname ?? config.metadata.name),
      logDirectory: config.logDirectory,
      labels: copy(config.labels),
      annotations: copy(config.annotations),
      linux: {
        ...(cgroupParent !== undefined ? { cgroupParent } : {}),
        securityContext: {
          namespaceOptions: { network: l.hostNetwork ? 'NODE' : 'POD', pid: l.hostPID ? 'NODE' : 'CONTAINER', ipc: l.hostIPC ? 'NODE' : 'POD' },
          privileged: l.privileged === true,
        },
        sysctls: copy(l.sysctls),
      },
    };
    if (config.dnsConfig) out.dnsConfig = { ...config.dnsConfig };
    if (config.portMappings) {
      out.portMappings = config.portMappings.map((p) => ({
        protocol: p.protocol,
        containerPort: p.containerPort,
        ...(p.hostPort !== undefined ? { hostPort: p.hostPort } : {}),
        ...(p.hostIp !== undefined ? { hostIp: p.hostIp } : {}),
      }));
    }
    return out;
  }

  async runPodSandbox(config: PodSandboxConfig): Promise<string> {
    this.checkOpen();
    if (!isAbsolute(config.logDirectory)) throw new RuntimeError('InvalidState', `logDirectory must be absolute: ${config.logDirectory}`);
    if (config.linux?.privileged && this.options.allowPrivileged !== true) {
      throw new RuntimeError('ConfigRefused', 'privileged pods are not allowed on this node (the agent does not allow privileged pods)');
    }
    await mkdir(config.logDirectory, { recursive: true, mode: 0o750 });
    const criConfig = this.criSandboxConfig(config);
    const id = await criCall(this.client.runPodSandbox(criConfig));
    if (criConfig.linux?.cgroupParent) this.cgroupParents.set(id, criConfig.linux.cgroupParent);
    const hp = this.options.hairpin;
    if (hp?.mode === 'hairpin-veth' && !config.linux?.hostNetwork) {
      const keep = {
        podSandboxStatus: async (sid: string, verbose: boolean): Promise<cri.PodSandboxStatusResponse> => {
          const r = await this.client.podSandboxStatus(sid, verbose);
          if (r.status) this.freshStatus.set(sid, { at: Date.now(), status: r.status });
          return r;
        },
      };
      const r = await hairpinSandbox(keep, id, hp.sysfs);
      for (const e of r.errors) hp.log?.(`hairpin mode of pod sandbox ${id}: ${e}`);
    }
    return id;
  }

  async stopPodSandbox(id: string, gracePeriodSeconds = 0): Promise<void> {
    this.freshStatus.delete(id);
    const containers = await criCall(this.client.listContainers({ podSandboxId: id }));
    await Promise.all(
      containers
        .filter((c) => c.state === 'CONTAINER_RUNNING' || c.state === 'CONTAINER_UNKNOWN')
        .map((c) => this.stopContainer(c.id, gracePeriodSeconds).catch((err: unknown) => {
          if (!(runtimeErrorOf(err).code === 'NotFound')) throw err;
        })),
    );
    try {
      await this.client.stopPodSandbox(id);
    } catch (err) {
      throw runtimeErrorOf(err);
    }
    this.stoppedSandboxes.add(id);
  }

  async removePodSandbox(id: string): Promise<void> {
    this.freshStatus.delete(id);
    let containers: cri.Container[];
    let ready: boolean;
    try {
      ready = this.stoppedSandboxes.has(id) ? false : (await this.client.podSandboxStatus(id)).status?.state === 'SANDBOX_READY';
      containers = await this.client.listContainers({ podSandboxId: id });
    } catch (err) {
      const e = runtimeErrorOf(err);
      if (e.code === 'NotFound') return;
      throw e;
    }
    // A sandbox the agent stopped already (the usual case: terminated, then removed) is not stopped
    // again, unless the runtime refuses to remove it (say its network is still set up).
    const stopped = !ready && !containers.some((c) => c.state === 'CONTAINER_RUNNING' || c.state === 'CONTAINER_UNKNOWN');
    if (!stopped) await this.stopPodSandbox(id, 0);
    const logs = await Promise.all(
      containers.map(async (c) => this.logPaths.get(c.id) ?? this.client.containerStatus(c.id).then((s) => s.status?.logPath, () => undefined)),
    );
    try {
      await this.client.removePodSandbox(id);
    } catch (err) {
      if (!stopped || runtimeErrorOf(err).code === 'NotFound') throw runtimeErrorOf(err);
      await this.stopPodSandbox(id, 0);
      await criCall(this.client.removePodSandbox(id));
    }
    for (const c of containers) this.forget(c.id, c.podSandboxId);
    this.stoppedSandboxes.delete(id);
    await Promise.all(logs.filter((p): p is string => !!p).map((p) => rm(p, { force: true })));
    const parent = this.cgroupParents.get(id);
    this.cgroupParents.delete(id);
    if (parent !== undefined) await this.removeCgroup(parent);
  }

  /** Removes a pod-level cgroup directory the runtime's containers left (empty once they are removed). */
  private async removeCgroup(parent: string): Promise<void> {
    const mounts = await (this.cgroupHierarchies ??= cgroupMounts());
    if (mounts.length === 0) this.cgroupHierarchies = undefined; // not read (yet): asked again next time
    for (const mount of mounts) await rmdir(join(mount, parent)).catch(() => undefined);
  }

  async podSandboxStatus(id: string): Promise<PodSandbox> {
    const fresh = this.freshStatus.get(id);
    this.freshStatus.delete(id);
    const s = fresh !== undefined && Date.now() - fresh.at < 1000 ? fresh.status : (await criCall(this.client.podSandboxStatus(id))).status;
    if (!s) throw new RuntimeError('NotFound', `pod sandbox ${id} not found`);
    const out = this.sandboxOfCri(s);
    if (s.network && s.network.ip !== '') out.network = { ip: s.network.ip, additionalIps: (s.network.additionalIps ?? []).map((a) => a.ip) };
    return out;
  }

  async listPodSandbox(filter: SandboxFilter = {}): Promise<PodSandbox[]> {
    const f: cri.PodSandboxFilter = {};
    if (filter.id !== undefined) f.id = filter.id;
    if (filter.state !== undefined) f.state = { state: filter.state };
    const items = await criCall(this.client.listPodSandbox(f));
    return items.map((s) => this.sandboxOfCri(s));
  }

  private sandboxOfCri(s: cri.PodSandbox | cri.PodSandboxStatus): PodSandbox {
    return {
      id: s.id,
      metadata: s.metadata ? { ...s.metadata } : { name: '', uid: '', namespace: '', attempt: 0 },
      state: s.state,
      createdAt: dateOfNanos(s.createdAt) ?? new Date(0),
      labels: copy(s.labels),
      annotations: copy(s.annotations),
    };
  }

  // --- containers -----------------------------------------------------------------------------

  private criContainerConfig(config: ContainerConfig, sandboxConfig: PodSandboxConfig): cri.ContainerConfig {
    const sc = config.securityContext ?? {};
    const l = sandboxConfig.linux ?? {};
    const securityContext: cri.LinuxContainerSecurityContext = {
      privileged: sc.privileged === true,
      namespaceOptions: { network: l.hostNetwork ? 'NODE' : 'POD', pid: l.hostPID ? 'NODE' : 'CONTAINER', ipc: l.hostIPC ? 'NODE' : 'POD' },
      readonlyRootfs: sc.readonlyRootfs === true,
      noNewPrivs: sc.noNewPrivs === true,
    };
    // kubelet's generateLinuxContainerConfig: a target container's PID namespace, unless the pod's is shared
    if (config.pidTargetId !== undefined && securityContext.namespaceOptions?.pid === 'CONTAINER') {
      securityContext.namespaceOptions = { ...securityContext.namespaceOptions, pid: 'TARGET', targetId: config.pidTargetId };
    }
    if (sc.runAsUser !== undefined) securityContext.runAsUser = { value: sc.runAsUser };
    if (sc.runAsGroup !== undefined) securityContext.runAsGroup = { value: sc.runAsGroup };
    if (sc.capabilities) securityContext.capabilities = { addCapabilities: sc.capabilities.add, dropCapabilities: sc.capabilities.drop };
    if (sc.supplementalGroups) securityContext.supplementalGroups = sc.supplementalGroups;
    if (sc.seccomp) {
      // Both spellings, as kubelet 1.23: the SecurityProfile and the older profile path.
      securityContext.seccomp = { profileType: sc.seccomp.profileType, localhostRef: sc.seccomp.localhostRef ?? '' };
      securityContext.seccompProfilePath =
        sc.seccomp.profileType === 'RuntimeDefault' ? 'runtime/default' : sc.seccomp.profileType === 'Localhost' ? `localhost/${sc.seccomp.localhostRef ?? ''}` : 'unconfined';
    }
    const out: cri.ContainerConfig = {
      metadata: { ...config.metadata },
      image: { image: config.image },
      command: config.command,
      args: config.args,
      envs: config.envs.map((e) => ({ ...e })),
      mounts: (config.mounts ?? []).map((m) => ({
        containerPath: m.containerPath,
        hostPath: m.hostPath,
        readonly: m.readonly === true,
        propagation: m.propagation ?? 'PROPAGATION_PRIVATE',
      })),
      labels: copy(config.labels),
      annotations: copy(config.annotations),
      logPath: config.logPath,
      stdin: config.stdin === true,
      stdinOnce: config.stdinOnce === true,
      tty: config.tty === true,
      linux: { securityContext },
    };
    if (config.workingDir !== undefined) out.workingDir = config.workingDir;
    if (config.resources) out.linux!.resources = { ...config.resources };
    return out;
  }

  async createContainer(podSandboxId: string, config: ContainerConfig, sandboxConfig: PodSandboxConfig): Promise<string> {
    this.checkOpen();
    if (config.securityContext?.privileged === true && this.options.allowPrivileged !== true) {
      throw new RuntimeError('ConfigRefused', 'privileged containers are not allowed on this node (the agent does not allow privileged pods)');
    }
    const criSandbox = this.criSandboxConfig(sandboxConfig);
    const id = await criCall(this.client.createContainer(podSandboxId, this.criContainerConfig(config, sandboxConfig), criSandbox));
    this.sandboxOf.set(id, podSandboxId);
    // where the runtime writes its log (CRI: the sandbox's log directory joined with the container's log path)
    if (criSandbox.logDirectory && config.logPath) this.logPaths.set(id, join(criSandbox.logDirectory, config.logPath));
    return id;
  }

  async startContainer(id: string): Promise<void> {
    this.checkOpen();
    try {
      await this.client.startContainer(id);
    } catch (err) {
      const e = runtimeErrorOf(err);
      if (e.code === 'NotFound' || e.code === 'Unavailable') throw e;
      await this.report(id, 'CONTAINER_EXITED');
      throw new RuntimeError('StartFailed', e.message);
    }
    await this.report(id, 'CONTAINER_RUNNING');
  }

  /** StopContainer answers once the container has exited (or was not running): its stop is reported at once. */
  async stopContainer(id: string, timeoutSeconds: number): Promise<void> {
    await criCall(this.client.stopContainer(id, timeoutSeconds));
    const before = this.reported.get(id);
    if (before === 'CONTAINER_RUNNING' || before === 'CONTAINER_UNKNOWN') await this.report(id, 'CONTAINER_EXITED');
  }

  async removeContainer(id: string): Promise<void> {
    let status: cri.ContainerStatus | undefined;
    try {
      status = (await this.client.containerStatus(id)).status ?? undefined;
    } catch (err) {
      const e = runtimeErrorOf(err);
      if (e.code === 'NotFound') return;
      throw e;
    }
    if (!status) return;
    if (status.state === 'CONTAINER_RUNNING') throw new RuntimeError('InvalidState', `container ${id} is running; stop it first`);
    await criCall(this.client.removeContainer(id));
    if (status.logPath) await rm(status.logPath, { force: true });
    const sandbox = this.sandboxOf.get(id) ?? '';
    this.forget(id, sandbox);
  }

  async listContainers(filter: ContainerFilter = {}): Promise<ContainerSummary[]> {
    const f: cri.ContainerFilter = {};
    if (filter.id !== undefined) f.id = filter.id;
    if (filter.podSandboxId !== undefined) f.podSandboxId = filter.podSandboxId;
    if (filter.state !== undefined) f.state = { state: filter.state };
    const list = await criCall(this.client.listContainers(f));
    return list.map((c) => {
      this.sandboxOf.set(c.id, c.podSandboxId);
      return {
        id: c.id,
        podSandboxId: c.podSandboxId,
        metadata: c.metadata ? { ...c.metadata } : { name: '', attempt: 0 },
        image: c.image?.image ?? '',
        state: c.state,
        createdAt: dateOfNanos(c.createdAt) ?? new Date(0),
        labels: copy(c.labels),
        annotations: copy(c.annotations),
      };
    });
  }

  async containerStatus(id: string): Promise<ContainerStatus> {
    const r = await criCall(this.client.containerStatus(id));
    const s = r.status;
    if (!s) throw new RuntimeError('NotFound', `container ${id} not found`);
    let podSandboxId = this.sandboxOf.get(id);
    if (podSandboxId === undefined) {
      const [c] = await criCall(this.client.listContainers({ id }));
      podSandboxId = c?.podSandboxId ?? '';
      if (c) this.sandboxOf.set(id, podSandboxId);
    }
    if (s.logPath) this.logPaths.set(id, s.logPath);
    const out: ContainerStatus = {
      id: s.id,
      podSandboxId,
      metadata: s.metadata ? { ...s.metadata } : { name: '', attempt: 0 },
      image: s.image?.image ?? '',
      state: s.state,
      createdAt: dateOfNanos(s.createdAt) ?? new Date(0),
      labels: copy(s.labels),
      annotations: copy(s.annotations),
      logPath: s.logPath,
    };
    if (s.imageRef) out.imageRef = s.imageRef;
    const startedAt = dateOfNanos(s.startedAt);
    if (startedAt) out.startedAt = startedAt;
    if (s.state === 'CONTAINER_EXITED') {
      const finishedAt = dateOfNanos(s.finishedAt);
      if (finishedAt) out.finishedAt = finishedAt;
      // containerd records the start after its start call returns: a process quicker than that seems to end first.
      if (finishedAt && out.startedAt && out.startedAt > finishedAt) out.startedAt = finishedAt;
      out.exitCode = s.exitCode;
      out.reason = s.reason !== '' ? s.reason : s.exitCode === 0 ? 'Completed' : 'Error';
      if (s.message !== '') out.message = s.message;
    }
    return out;
  }

  async execSync(id: string, cmd: string[], timeoutSeconds: number): Promise<ExecSyncResult> {
    const r = await criCall(this.client.execSync(id, cmd, timeoutSeconds));
    return { stdout: Buffer.from(r.stdout), stderr: Buffer.from(r.stderr), exitCode: r.exitCode };
  }

  // --- streaming: the runtime's own streaming server serves exec, attach and port-forward ----------

  async getExecURL(id: string, cmd: string[], o: StreamOptions): Promise<string> {
    return criCall(this.client.exec(id, cmd, { tty: o.tty, stdin: o.stdin, stdout: o.stdout, stderr: o.stderr && !o.tty }));
  }

  async getAttachURL(id: string, o: StreamOptions): Promise<string> {
    return criCall(this.client.attach(id, { tty: o.tty, stdin: o.stdin, stdout: o.stdout, stderr: o.stderr && !o.tty }));
  }

  async getPortForwardURL(podSandboxId: string, ports: number[]): Promise<string> {
    return criCall(this.client.portForward(podSandboxId, ports));
  }

  /** UpdateRuntimeConfig with the pod CIDR (network_config.pod_cidr), as kubelet's UpdatePodCIDR. */
  async updatePodCIDR(cidr: string): Promise<void> {
    await criCall(this.client.updateRuntimeConfig(cidr));
  }

  async updateContainerResources(id: string, resources: LinuxContainerResources): Promise<void> {
    this.checkOpen();
    await criCall(this.client.updateContainerResources(id, { ...resources }));
  }

  async reopenContainerLog(id: string): Promise<void> {
    await criCall(this.client.reopenContainerLog(id));
  }

  // --- events ---------------------------------------------------------------------------------

  onContainerEvent(listener: (event: ContainerEvent) => void): () => void {
    this.listeners.add(listener);
    if (!this.pollTimer && !this.closed) {
      void this.relist();
      this.pollTimer = setInterval(() => void this.relist(), Math.max(50, this.options.eventPollMs ?? 1000));
      this.pollTimer.unref();
      this.watchEvents();
    }
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0) this.stopPolling();
    };
  }

  private stopPolling(): void {
    clearInterval(this.pollTimer);
    this.pollTimer = undefined;
    this.cancelEvents?.();
    this.cancelEvents = undefined;
  }

  /** Opens the runtime's event stream (if it has one); a stream that breaks is opened again after a second. */
  private watchEvents(): void {
    if (this.noEventStream || this.closed || this.cancelEvents !== undefined) return;
    this.cancelEvents = this.client.containerEvents(
      (e) => this.onRuntimeEvent(e),
      (err) => {
        this.cancelEvents = undefined;
        if (err?.unimplemented === true) this.noEventStream = true;
        if (this.noEventStream || this.closed || this.pollTimer === undefined) return;
        setTimeout(() => {
          if (this.pollTimer !== undefined) this.watchEvents();
        }, 1000).unref();
      },
    );
  }

  /** One event from the runtime's stream: reported as a change of the container's state. */
  private onRuntimeEvent(e: cri.ContainerEventResponse): void {
    const id = e.containerId;
    // The sandbox this agent knows the container by first (the event's own is its fallback).
    const sandbox = this.sandboxOf.get(id) ?? e.podSandboxStatus?.id ?? '';
    if (sandbox !== '') this.sandboxOf.set(id, sandbox);
    if (e.containerEventType === 'CONTAINER_DELETED_EVENT') this.forget(id, sandbox);
    else if (e.containerEventType === 'CONTAINER_STARTED_EVENT') this.emitChange(id, sandbox, 'CONTAINER_RUNNING');
    else if (e.containerEventType === 'CONTAINER_STOPPED_EVENT') this.emitChange(id, sandbox, 'CONTAINER_EXITED');
    else this.emitChange(id, sandbox, 'CONTAINER_CREATED');
  }

  /** One relist now (the agent makes one before it first reports the node's state); resolves when done. */
  async relistNow(): Promise<void> {
    while (this.polling) await new Promise((r) => setTimeout(r, 10));
    await this.relist();
  }

  /** One relist: emits an event for every container whose state changed since it was last reported. */
  private async relist(): Promise<void> {
    if (this.polling || this.closed) return;
    this.polling = true;
    try {
      const list = await this.client.listContainers();
      const seen = new Set<string>();
      for (const c of list) {
        seen.add(c.id);
        this.sandboxOf.set(c.id, c.podSandboxId);
        this.emitChange(c.id, c.podSandboxId, c.state);
      }
      for (const id of [...this.reported.keys()]) {
        if (!seen.has(id)) this.forget(id, this.sandboxOf.get(id) ?? '');
      }
      this.lastRelist = Date.now();
    } catch {
      // the runtime is unavailable: the next relist tries again
    } finally {
      this.polling = false;
    }
  }

  /**
   * Why the relist (kubelet's PLEG) is unhealthy, in kubelet's words, or undefined when it is
   * healthy: it never succeeded, or not within the threshold (3 minutes).
   */
  plegHealth(now = Date.now()): string | undefined {
    if (this.lastRelist === 0) return 'pleg has yet to be successful';
    const threshold = this.options.plegThresholdMs ?? 180_000;
    const elapsed = now - this.lastRelist;
    return elapsed > threshold ? `pleg was last seen active ${goDuration(elapsed)} ago; threshold is ${goDuration(threshold)}` : undefined;
  }

  private async report(id: string, state: ContainerState): Promise<void> {
    let sandbox = this.sandboxOf.get(id);
    if (sandbox === undefined) {
      const [c] = await this.client.listContainers({ id }).catch((): cri.Container[] => []);
      sandbox = c?.podSandboxId ?? '';
    }
    this.emitChange(id, sandbox, state);
  }

  private emitChange(id: string, podSandboxId: string, state: ContainerState): void {
    const before = this.reported.get(id);
    if (before === state) return;
    this.reported.set(id, state);
    if (state === 'CONTAINER_RUNNING') this.emit({ type: 'CONTAINER_STARTED_EVENT', containerId: id, podSandboxId });
    else if (state === 'CONTAINER_EXITED') this.emit({ type: 'CONTAINER_STOPPED_EVENT', containerId: id, podSandboxId });
  }

  private forget(id: string, podSandboxId: string): void {
    const had = this.reported.delete(id);
    this.sandboxOf.delete(id);
    this.logPaths.delete(id);
    if (had) this.emit({ type: 'CONTAINER_DELETED_EVENT', containerId: id, podSandboxId });
  }

  private emit(event: ContainerEvent): void {
    for (const l of this.listeners) {
      try {
        l(event);
      } catch {
        // a listener's failure is its own
      }
    }
  }

  // --- lifecycle ------------------------------------------------------------------------------

  /**
   * Stops the running containers of every sandbox (each with the grace period) and closes the
   * connection; later calls reject. Sandboxes stay (a new agent finds them).
   */
  async shutdown(gracePeriodSeconds = 30): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.stopPolling();
    try {
      const running = await this.client.listContainers({ state: { state: 'CONTAINER_RUNNING' } });
      await Promise.all(running.map((c) => this.client.stopContainer(c.id, gracePeriodSeconds).catch(() => undefined)));
    } catch {
      // the runtime is gone: nothing to stop
    }
    this.client.close();
  }

  /** Closes the connection and stops polling, leaving every sandbox and container as it is (a new agent adopts them). */
  async detach(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.stopPolling();
    this.client.close();
  }

  private checkOpen(): void {
    if (this.closed) throw new RuntimeError('InvalidState', 'the runtime is shut down');
  }
}

/** The image service of a CRI runtime. */
class CriImages implements ImageService {
  constructor(
    private readonly client: CriClient,
    private readonly pinned: string[],
  ) {}

  private info(i: cri.Image): ImageInfo {
    return {
      id: i.id,
      repoTags: [...i.repoTags],
      repoDigests: [...i.repoDigests],
      size: Number(i.size),
      pinned: i.pinned || i.repoTags.some((t) => this.pinned.includes(t)),
    };
  }

  async imageStatus(image: string): Promise<ImageInfo | undefined> {
    const i = await criCall(this.client.imageStatus(image));
    return i ? this.info(i) : undefined;
  }

  async pullImage(image: string, _sandboxConfig?: PodSandboxConfig, auth?: AuthConfig): Promise<string> {
    return criCall(this.client.pullImage(image, auth));
  }

  async listImages(): Promise<ImageInfo[]> {
    return (await criCall(this.client.listImages())).map((i) => this.info(i));
  }

  async removeImage(image: string): Promise<void> {
    await criCall(this.client.removeImage(image));
  }

  async imageFsDir(): Promise<string | undefined> {
    const fs = await criCall(this.client.imageFsInfo());
    return fs.find((f) => f.fsId?.mountpoint)?.fsId?.mountpoint;
  }
}
