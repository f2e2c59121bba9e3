// The CRI messages of api.proto as the client exchanges them: field names in lowerCamelCase (as
// @grpc/proto-loader converts them), enums as their names, 64-bit integers as numbers in answers
// (numbers or decimal strings in requests), bytes as Buffers. Only the fields orchlet reads
// or writes are declared; requests may leave any field out (proto3 zero value).

export type Int64 = string | number;

export interface KeyValue {
  key: string;
  value: string;
}

export type Protocol = 'TCP' | 'UDP' | 'SCTP';
export type NamespaceMode = 'POD' | 'CONTAINER' | 'NODE' | 'TARGET';
export type MountPropagation = 'PROPAGATION_PRIVATE' | 'PROPAGATION_HOST_TO_CONTAINER' | 'PROPAGATION_BIDIRECTIONAL';
export type PodSandboxState = 'SANDBOX_READY' | 'SANDBOX_NOTREADY';
export type ContainerState = 'CONTAINER_CREATED' | 'CONTAINER_RUNNING' | 'CONTAINER_EXITED' | 'CONTAINER_UNKNOWN';

export interface VersionResponse {
  version: string;
  runtimeName: string;
  runtimeVersion: string;
  runtimeApiVersion: string;
}

export interface RuntimeCondition {
  type: string;
  status: boolean;
  reason: string;
  message: string;
}

export interface StatusResponse {
  status?: { conditions: RuntimeCondition[] };
  info: Record<string, string>;
}

export interface DNSConfig {
  servers?: string[];
  searches?: string[];
  options?: string[];
}

export interface PortMapping {
  protocol?: Protocol;
  containerPort?: number;
  hostPort?: number;
  hostIp?: string;
}

export interface Mount {
  containerPath: string;
  hostPath: string;
  readonly?: boolean;
  selinuxRelabel?: boolean;
  propagation?: MountPropagation;
}

export interface NamespaceOption {
  network?: NamespaceMode;
  pid?: NamespaceMode;
  ipc?: NamespaceMode;
  targetId?: string;
}

export interface Int64Value {
  value: Int64;
}

export interface ImageSpec {
  image: string;
  annotations?: Record<string, string>;
}

export interface LinuxContainerResources {
  cpuPeriod?: Int64;
  cpuQuota?: Int64;
  cpuShares?: Int64;
  memoryLimitInBytes?: Int64;
  oomScoreAdj?: Int64;
  cpusetCpus?: string;
  cpusetMems?: string;
  unified?: Record<string, string>;
  memorySwapLimitInBytes?: Int64;
}

export interface LinuxSandboxSecurityContext {
  namespaceOptions?: NamespaceOption;
  runAsUser?: Int64Value;
  runAsGroup?: Int64Value;
  readonlyRootfs?: boolean;
  supplementalGroups?: Int64[];
  privileged?: boolean;
}

export interface LinuxPodSandboxConfig {
  cgroupParent?: string;
  securityContext?: LinuxSandboxSecurityContext;
  sysctls?: Record<string, string>;
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
  logDirectory?: string;
  dnsConfig?: DNSConfig;
  portMappings?: PortMapping[];
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  linux?: LinuxPodSandboxConfig;
}

export interface PodSandboxStatus {
  id: string;
  metadata?: PodSandboxMetadata;
  state: PodSandboxState;
  createdAt: number;
  network?: { ip: string; additionalIps: { ip: string }[] };
  linux?: { namespaces?: { options?: NamespaceOption } };
  labels: Record<string, string>;
  annotations: Record<string, string>;
  runtimeHandler: string;
}

export interface PodSandboxStatusResponse {
  status?: PodSandboxStatus;
  info: Record<string, string>;
}

export interface PodSandboxFilter {
  id?: string;
  state?: { state: PodSandboxState };
  labelSelector?: Record<string, string>;
}

export interface PodSandbox {
  id: string;
  metadata?: PodSandboxMetadata;
  state: PodSandboxState;
  createdAt: number;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  runtimeHandler: string;
}

export interface Capability {
  addCapabilities?: string[];
  dropCapabilities?: string[];
}

export interface LinuxContainerSecurityContext {
  capabilities?: Capability;
  privileged?: boolean;
  namespaceOptions?: NamespaceOption;
  runAsUser?: Int64Value;
  runAsUsername?: string;
  readonlyRootfs?: boolean;
  supplementalGroups?: Int64[];
  noNewPrivs?: boolean;
  runAsGroup?: Int64Value;
  maskedPaths?: string[];
  readonlyPaths?: string[];
  seccompProfilePath?: string;
  seccomp?: SecurityProfile;
}

export interface SecurityProfile {
  profileType?: 'RuntimeDefault' | 'Unconfined' | 'Localhost';
  localhostRef?: string;
}

export interface ContainerMetadata {
  name: string;
  attempt: number;
}

export interface ContainerConfig {
  metadata: ContainerMetadata;
  image: ImageSpec;
  command?: string[];
  args?: string[];
  workingDir?: string;
  envs?: KeyValue[];
  mounts?: Mount[];
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  logPath?: string;
  stdin?: boolean;
  stdinOnce?: boolean;
  tty?: boolean;
  linux?: { resources?: LinuxContainerResources; securityContext?: LinuxContainerSecurityContext };
}

export interface ContainerFilter {
  id?: string;
  state?: { state: ContainerState };
  podSandboxId?: string;
  labelSelector?: Record<string, string>;
}

export interface Container {
  id: string;
  podSandboxId: string;
  metadata?: ContainerMetadata;
  image?: ImageSpec;
  imageRef: string;
  state: ContainerState;
  createdAt: number;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

export interface ContainerStatus {
  id: string;
  metadata?: ContainerMetadata;
  state: ContainerState;
  createdAt: number;
  startedAt: number;
  finishedAt: number;
  exitCode: number;
  image?: ImageSpec;
  imageRef: string;
  reason: string;
  message: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  mounts: Mount[];
  logPath: string;
}

export interface ContainerStatusResponse {
  status?: ContainerStatus;
  info: Record<string, string>;
}

export interface ExecSyncResponse {
  stdout: Buffer;
  stderr: Buffer;
  exitCode: number;
}

export interface Image {
  id: string;
  repoTags: string[];
  repoDigests: string[];
  size: number;
  uid?: { value: number };
  username: string;
  spec?: ImageSpec;
  pinned: boolean;
}

export interface AuthConfig {
  username?: string;
  password?: string;
  auth?: string;
  serverAddress?: string;
  identityToken?: string;
  registryToken?: string;
}

export interface FilesystemUsage {
  timestamp: number;
  fsId?: { mountpoint: string };
  usedBytes?: { value: number };
  inodesUsed?: { value: number };
}

/** One event of GetContainerEvents (CRI 1.27+). */
export interface ContainerEventResponse {
  containerId: string;
  containerEventType: 'CONTAINER_CREATED_EVENT' | 'CONTAINER_STARTED_EVENT' | 'CONTAINER_STOPPED_EVENT' | 'CONTAINER_DELETED_EVENT';
  createdAt: number;
  podSandboxStatus?: PodSandboxStatus | null;
}
