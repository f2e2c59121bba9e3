// The container runtime interface of orchlet, shaped like the CRI RuntimeService
// (k8s.io/cri-api runtime/v1): pod sandboxes hold containers; a container is created from a
// ContainerConfig, started, stopped with a timeout, and removed; list and status calls report
// what exists. The agent (workers, sync) talks only to this interface, so the built-in process
// runtime and a future CRI (gRPC) client are interchangeable; test/agent/runtime-contract.ts is
// the suite every implementation must pass.
//
// Conventions: ids are opaque strings; times are Date objects; calls on unknown ids reject with
// RuntimeError code 'NotFound'; stop and remove calls are idempotent.

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
}

export type PodSandboxState = 'SANDBOX_READY' | 'SANDBOX_NOTREADY';

export interface PodSandbox {
  id: string;
  metadata: PodSandboxMetadata;
  state: PodSandboxState;
  createdAt: Date;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

/** The CRI's LinuxContainerSecurityContext, the parts the agent sets. */
export interface LinuxContainerSecurityContext {
  /** Unset: the runtime's default user (the process runtime: 65534, nobody). */
  runAsUser?: number;
  runAsGroup?: number;
  privileged?: boolean;
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
  | 'InvalidState';

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

export interface Runtime {
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
