// The parts of the core/v1 Pod that orchlet reads and writes. Field names and meanings are those of
// the Kubernetes API; only the fields the agent uses so far are declared, unknown fields of a
// manifest are carried along untouched (the agent never strips what it does not understand).

export interface ObjectMeta {
  name?: string;
  namespace?: string;
  uid?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  resourceVersion?: string;
  [extra: string]: unknown;
}

export interface EnvVar {
  name: string;
  value?: string;
  [extra: string]: unknown;
}

export interface SecurityContext {
  runAsUser?: number;
  runAsGroup?: number;
  runAsNonRoot?: boolean;
  privileged?: boolean;
  [extra: string]: unknown;
}

export interface Container {
  name: string;
  image: string;
  command?: string[];
  args?: string[];
  workingDir?: string;
  env?: EnvVar[];
  securityContext?: SecurityContext;
  [extra: string]: unknown;
}

/** A container of spec.ephemeralContainers: a container with the name of the one whose namespaces it targets. */
export type EphemeralContainer = Container & { targetContainerName?: string };

export type RestartPolicy = 'Always' | 'OnFailure' | 'Never';

export interface PodSpec {
  containers: Container[];
  initContainers?: Container[];
  /** Added through pods/ephemeralcontainers while the pod runs (kubectl debug); started once, never restarted. */
  ephemeralContainers?: EphemeralContainer[];
  restartPolicy?: RestartPolicy;
  terminationGracePeriodSeconds?: number;
  securityContext?: SecurityContext;
  nodeName?: string;
  hostname?: string;
  tolerations?: Record<string, unknown>[];
  [extra: string]: unknown;
}

export interface ContainerStateWaiting {
  reason?: string;
  message?: string;
}
export interface ContainerStateRunning {
  startedAt?: string;
}
export interface ContainerStateTerminated {
  exitCode: number;
  signal?: number;
  reason?: string;
  message?: string;
  startedAt?: string;
  finishedAt?: string;
  containerID?: string;
}
/** Exactly one member is set. */
export interface ContainerState {
  waiting?: ContainerStateWaiting;
  running?: ContainerStateRunning;
  terminated?: ContainerStateTerminated;
}

export interface ContainerStatus {
  name: string;
  state: ContainerState;
  lastState: ContainerState;
  ready: boolean;
  restartCount: number;
  image: string;
  imageID: string;
  containerID?: string;
  started?: boolean;
}

export type PodPhase = 'Pending' | 'Running' | 'Succeeded' | 'Failed' | 'Unknown';
export type PodConditionType = 'PodScheduled' | 'Initialized' | 'ContainersReady' | 'Ready';

export interface PodCondition {
  type: PodConditionType;
  status: 'True' | 'False' | 'Unknown';
  lastProbeTime: string | null;
  lastTransitionTime: string;
  reason?: string;
  message?: string;
}

export interface PodStatus {
  phase: PodPhase;
  conditions: PodCondition[];
  message?: string;
  reason?: string;
  hostIP?: string;
  podIP?: string;
  podIPs?: { ip: string }[];
  startTime?: string;
  initContainerStatuses?: ContainerStatus[];
  containerStatuses: ContainerStatus[];
  ephemeralContainerStatuses?: ContainerStatus[];
  qosClass?: string;
}

export interface Pod {
  apiVersion: 'v1';
  kind: 'Pod';
  metadata: ObjectMeta & { name: string; namespace: string; uid: string };
  spec: PodSpec;
  status?: Partial<PodStatus>;
}

/** `<namespace>/<name>`: how kubelet names a pod in logs and events. */
export function podFullName(pod: Pod): string {
  return `${pod.metadata.namespace}/${pod.metadata.name}`;
}

/** The pod's restart policy with the API default (Always). */
export function restartPolicyOf(pod: Pod): RestartPolicy {
  return pod.spec.restartPolicy ?? 'Always';
}

/** The pod's termination grace period with the API default (30 s). */
export function gracePeriodOf(pod: Pod): number {
  return pod.spec.terminationGracePeriodSeconds ?? 30;
}
