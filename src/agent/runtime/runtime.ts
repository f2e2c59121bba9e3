// The container runtime interface of orchlet, shaped like the CRI RuntimeService
// (k8s.io/cri-api runtime/v1): pod sandboxes hold containers; a container is created from a
// ContainerConfig, started, stopped with a timeout, and removed; list and status calls report
// what exists. The agent (workers, sync) talks only to this interface, so the built-in process
// runtime and a future CRI (gRPC) client are interchangeable; test/agent/runtime-contract.ts is
// the suite every implementation must pass.
//
// Conventions: ids are opaque strings; times are Date objects; calls on unknown ids reject with
// RuntimeError code 'NotFound'; stop and remove calls are idempotent.

import type { Duplex, Readable, Writable } from 'node:stream';
import type { AuthConfig } from '../credentialprovider/keyring.js';

export interface KeyValue {
  key: string;
  value: string;
}

export interface PodSandboxMetadata {
  name: string;
  uid: string;
  namespace: string;
  attempt: number;
}

export interface PodSandboxConfig {
  metadata: PodSandboxMetadata;
  hostname?: string;
  /** Directory for the logs of the sandbox's containers (ContainerConfig.logPath is relative to it). */
  logDirectory: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  /** DNS of the sandbox (runtimes that give pods their own resolv.conf). */
  dnsConfig?: DNSConfig;
  /** Host ports forwarded to the sandbox (runtimes with pod networking). */
  portMappings?: PortMapping[];
  /** Linux settings for runtimes that isolate pods (ignored by the process runtime). */
  linux?: LinuxPodSandboxConfig;
}

export interface DNSConfig {
  servers: string[];
  searches: string[];
  options: string[];
}

export interface PortMapping {
  protocol: 'TCP' | 'UDP' | 'SCTP';
  containerPort: number;
  hostPort?: number;
  hostIp?: string;
}

export interface LinuxPodSandboxConfig {
  /** The cgroup (cgroupfs syntax) the sandbox's containers go under. */
  cgroupParent?: string;
  /** Share the node's network namespace (hostNetwork: the hostname must then be empty). */
  hostNetwork?: boolean;
  hostPID?: boolean;
  hostIPC?: boolean;
  /** Whether any container of the pod is privileged. */
  privileged?: boolean;
  sysctls?: Record<string, string>;
}

export type PodSandboxState = 'SANDBOX_READY' | 'SANDBOX_NOTREADY';

export interface PodSandbox {
  id: string;
  metadata: PodSandboxMetadata;
  state: PodSandboxState;
  createdAt: Date;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  /** The pod's own addresses, for runtimes with pod networking (podSandboxStatus only). */
  network?: { ip: string; additionalIps: string[] };
}

/** The CRI's LinuxContainerSecurityContext, the parts the agent sets. */
export interface LinuxContainerSecurityContext {
  /** Unset: the runtime's default user (the process runtime: 65534, nobody; image runtimes: the image's user). */
  runAsUser?: number;
  runAsGroup?: number;
  privileged?: boolean;
  /** The fields below apply to runtimes that run images (runsImages). */
  readonlyRootfs?: boolean;
  capabilities?: { add: string[]; drop: string[] };
  supplementalGroups?: number[];
  noNewPrivs?: boolean;
  /** The seccomp profile (seccomp.ts); image runtimes only, the process runtime has no seccomp filter. */
  seccomp?: { profileType: 'RuntimeDefault' | 'Unconfined' | 'Localhost'; localhostRef?: string };
}

/** A host path mounted into a container (runtimes that run images). */
export interface Mount {
  containerPath: string;
  hostPath: string;
  readonly?: boolean;
  propagation?: 'PROPAGATION_PRIVATE' | 'PROPAGATION_HOST_TO_CONTAINER' | 'PROPAGATION_BIDIRECTIONAL';
}

/** The CRI's LinuxContainerResources: cgroup limits of a container (0 or unset: none). */
export interface LinuxContainerResources {
  cpuPeriod?: number;
  cpuQuota?: number;
  cpuShares?: number;
  memoryLimitInBytes?: number;
  oomScoreAdj?: number;
  /** CPUs and memory NUMA nodes (list format, e.g. "0-1,3") the container may use (the resource managers). */
  cpusetCpus?: string;
  cpusetMems?: string;
}

export interface ContainerMetadata {
  name: string;
  /** How many times this container of the pod was created before (restartCount). */
  attempt: number;
}

export interface ContainerConfig {
  metadata: ContainerMetadata;
  image: string;
  command: string[];
  args: string[];
  workingDir?: string;
  envs: KeyValue[];
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  /** Relative to the sandbox's logDirectory, e.g. `<name>/<attempt>.log`. */
  logPath: string;
  securityContext?: LinuxContainerSecurityContext;
  /** Volumes and other host paths (runtimes that run images). */
  mounts?: Mount[];
  /** Cgroup limits (runtimes that isolate containers). */
  resources?: LinuxContainerResources;
  stdin?: boolean;
  stdinOnce?: boolean;
  tty?: boolean;
  /** An ephemeral container's targetContainerName: the runtime id of the container whose PID namespace it joins (CRI's TARGET mode). */
  pidTargetId?: string;
}

export type ContainerState = 'CONTAINER_CREATED' | 'CONTAINER_RUNNING' | 'CONTAINER_EXITED' | 'CONTAINER_UNKNOWN';

export interface ContainerSummary {
  id: string;
  podSandboxId: string;
  metadata: ContainerMetadata;
  image: string;
  state: ContainerState;
  createdAt: Date;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

export interface ContainerStatus extends ContainerSummary {
  startedAt?: Date;
  finishedAt?: Date;
  /** Set once exited: the process's exit code, or 128 + signal number when a signal ended it. */
  exitCode?: number;
  /** Completed (exit 0), Error (non-zero), StartError (could not be started), OOMKilled. */
  reason?: string;
  message?: string;
  /** Absolute path of the container's log file (CRI log format). */
  logPath: string;
  /** The image the container runs, as the runtime identifies it (the pod status's imageID); unset by the process runtime. */
  imageRef?: string;
}

export interface ContainerFilter {
  id?: string;
  podSandboxId?: string;
  state?: ContainerState;
}

export interface SandboxFilter {
  id?: string;
  state?: PodSandboxState;
}

/** A change the runtime noticed by itself (CRI GetContainerEvents); lets the agent react to exits at once. */
export interface ContainerEvent {
  type: 'CONTAINER_STARTED_EVENT' | 'CONTAINER_STOPPED_EVENT' | 'CONTAINER_DELETED_EVENT';
  containerId: string;
  podSandboxId: string;
}

export type RuntimeErrorCode =
  | 'NotFound'
  /** The config asks for something this node refuses (e.g. root without privilege): kubelet's CreateContainerConfigError. */
  | 'ConfigRefused'
  /** The process could not be started (binary missing, permission denied): kubelet's RunContainerError. */
  | 'StartFailed'
  | 'InvalidState'
  /** The runtime could not be reached or did not answer in time (a remote runtime). */
  | 'Unavailable'
  /** Anything else a remote runtime reported. */
  | 'Failed';

export class RuntimeError extends Error {
  override name = 'RuntimeError';
  constructor(
    readonly code: RuntimeErrorCode,
    message: string,
  ) {
    super(message);
  }
}

export interface RuntimeVersion {
  runtimeName: string;
  runtimeVersion: string;
  runtimeApiVersion: string;
}

/** An image as an image service reports it (the CRI's Image). */
export interface ImageInfo {
  /** The image ref (what ContainerStatus.imageRef and a pull return). */
  id: string;
  repoTags: string[];
  repoDigests: string[];
  size: number;
  pinned?: boolean;
}

/** The CRI ImageService, for runtimes that run images. */
export interface ImageService {
  /** The image, or undefined when the runtime does not have it. */
  imageStatus(image: string): Promise<ImageInfo | undefined>;
  /**
   * Pulls the image, with a registry login when `auth` is given; resolves with its image ref; rejects
   * with RuntimeError (code Failed or Unavailable) saying why.
   */
  pullImage(image: string, sandboxConfig?: PodSandboxConfig, auth?: AuthConfig): Promise<string>;
  listImages(): Promise<ImageInfo[]>;
  removeImage(image: string): Promise<void>;
  /** A directory on the filesystem that holds the images (imagefs eviction signals), if the service tells. */
  imageFsDir?(): Promise<string | undefined>;
}

/** What a container uses now (eviction ranking); fields a runtime cannot tell are left out. */
export interface ContainerStats {
  /** Working set (the process runtime: resident set) in bytes. */
  memoryBytes?: number;
  processes?: number;
}

export interface ExecSyncResult {
  stdout: Buffer;
  stderr: Buffer;
  exitCode: number;
}

/** The streams of an exec or attach session (kubelet's remotecommand options); stderr is merged into stdout under a tty. */
export interface StreamOptions {
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
  tty: boolean;
}

/** A command started in a running container for an interactive session (runtimes without a streaming server). */
export interface ExecSession {
  stdin: Writable | null;
  stdout: Readable | null;
  /** Null under a tty (merged into stdout) or when not asked for. */
  stderr: Readable | null;
  /** Resolves with the exit code (128 + the signal number when a signal ended it). */
  exited: Promise<number>;
  /** Ends the command (the client went away). */
  kill(): void;
}

/** A running container's own streams, joined for as long as the client stays (attach). */
export interface AttachSession {
  /** Null when the container has no stdin open (spec.containers[].stdin) or it was not asked for. */
  stdin: Writable | null;
  stdout: Readable | null;
  stderr: Readable | null;
  /** Resolves with the container's exit code once it has exited. */
  exited: Promise<number>;
  /** Leaves the container running and ends the session's streams. */
  detach(): void;
}

export interface Runtime {
  /**
   * True for runtimes that run containers from their images in their own namespaces (CRI): the
   * image supplies the default command and user, so the agent neither requires a command nor
   * applies the process runtime's host-user policy. Unset: the process runtime's rules.
   */
  readonly runsImages?: boolean;
  /** The image service of runtimes that run images. */
  readonly images?: ImageService;
  /** Runs a command in a running container (exec probes); runtimes that cannot leave it unset. */
  execSync?(id: string, cmd: string[], timeoutSeconds: number): Promise<ExecSyncResult>;

  /** Closes and reopens a running container's log file at its path (CRI ReopenContainerLog, for log rotation). */
  reopenContainerLog?(id: string): Promise<void>;
  /** Changes a running container's resources (CRI UpdateContainerResources; unset fields stay); the CPU manager sets cpusets. */
  updateContainerResources?(id: string, resources: LinuxContainerResources): Promise<void>;
  /** Gives the runtime the node's pod CIDR (CRI UpdateRuntimeConfig); runtimes without a pod network leave it unset. */
  updatePodCIDR?(cidr: string): Promise<void>;
  /** Resource usage of a running container, where the runtime can tell. */
  containerStats?(id: string): Promise<ContainerStats | undefined>;
  /**
   * Releases the runtime without stopping anything (runtimes whose containers outlive the agent:
   * a new agent adopts them). Unset: the runtime cannot keep containers without the agent.
   */
  detach?(): Promise<void>;

  /**
   * Streaming (kubectl exec, attach, port-forward). Runtimes with a streaming server of their own (CRI)
   * give the URL the agent proxies the client's upgraded connection to; runtimes without one give the
   * sessions (execStream, attachStream, portForwardDial) and the agent speaks the protocols itself. Unset:
   * the runtime cannot stream. Rejects with NotFound for an unknown id, InvalidState when not running.
   */
  getExecURL?(id: string, cmd: string[], options: StreamOptions): Promise<string>;
  getAttachURL?(id: string, options: StreamOptions): Promise<string>;
  getPortForwardURL?(podSandboxId: string, ports: number[]): Promise<string>;
  execStream?(id: string, cmd: string[], options: StreamOptions): Promise<ExecSession>;
  attachStream?(id: string, options: StreamOptions): Promise<AttachSession>;
  /** A TCP connection to `port` inside the sandbox's network. */
  portForwardDial?(podSandboxId: string, port: number): Promise<Duplex>;

  /** Called once by the agent's start (after it set its own process limits), before any sandbox; runtimes that need nothing leave it unset. */
  start?(): Promise<void>;

  version(): Promise<RuntimeVersion>;

  /** Creates and readies a sandbox; returns its id. */
  runPodSandbox(config: PodSandboxConfig): Promise<string>;
  /** Stops every container of the sandbox (each with `gracePeriodSeconds`), then marks it not ready. */
  stopPodSandbox(id: string, gracePeriodSeconds?: number): Promise<void>;
  /** Removes a stopped sandbox and its containers. */
  removePodSandbox(id: string): Promise<void>;
  podSandboxStatus(id: string): Promise<PodSandbox>;
  listPodSandbox(filter?: SandboxFilter): Promise<PodSandbox[]>;

  /** Creates a container (not started); rejects with ConfigRefused when the node refuses the config. */
  createContainer(podSandboxId: string, config: ContainerConfig, sandboxConfig: PodSandboxConfig): Promise<string>;
  /** Starts a created container; resolves once it runs, rejects with StartFailed (the container is then exited). */
  startContainer(id: string): Promise<void>;
  /** SIGTERM, then SIGKILL after `timeoutSeconds`; resolves when the container has exited. */
  stopContainer(id: string, timeoutSeconds: number): Promise<void>;
  /** Removes a container that is not running (and its log file). */
  removeContainer(id: string): Promise<void>;
  listContainers(filter?: ContainerFilter): Promise<ContainerSummary[]>;
  containerStatus(id: string): Promise<ContainerStatus>;

  /** Subscribes to container events; returns the unsubscribe function. */
  onContainerEvent(listener: (event: ContainerEvent) => void): () => void;

  /** Stops every container (with its grace) and releases the runtime; later calls reject. */
  shutdown(gracePeriodSeconds?: number): Promise<void>;
}
