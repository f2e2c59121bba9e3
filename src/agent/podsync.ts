// Runs one pod on a Runtime (kubelet's kuberuntime_manager SyncPod / KillPod, reduced to what a
// standalone agent needs). Called only by the pod workers, one call at a time per pod UID.
//
// A sync pass: make sure the pod has a sandbox, read the state of its containers, then start what
// should run: init containers one after the other until each has succeeded, then every regular
// container that has never run or that exited and may restart under the pod's restartPolicy
// (crash-loop back-off applies). It ends by writing the pod status to the status manager.
// Per container name the runtime keeps the newest instance and the one before it (for lastState);
// older instances are removed.
//
// Before containers start, the pod's volumes are set up (volumes.ts; a failure is a FailedMount
// event and the pass is retried) and each container's environment is resolved (env.ts; a missing
// ConfigMap/Secret or key is CreateContainerConfigError). A running container that failed its
// liveness or startup probe (prober.ts) is killed and restarted as its restart policy says. A pod
// with a verdict (rejected at admission, or evicted) is stopped and reports that verdict.
// The first pass of a pod this agent has no record of adopts a ready sandbox of the runtime that
// carries the pod's uid label, with its containers (an agent restarted on a runtime whose
// containers survived it).
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger as StructuredLogger } from '../util/log.js';
import { containerEnv, expandVars, podObjectRefs, type EnvContext } from './env.js';
import { NO_OBJECTS, type ObjectSource } from './objects.js';
import type { ServiceEnvSource } from './servicelinks.js';
import type { DockerKeyring } from './credentialprovider/keyring.js';
import type { FlexVolumes } from './flexvolume.js';
import { ProbeManager } from './prober.js';
import { containerMounts, processMountView, setUpVolumes, tearDownVolumes, unmountOrphans, type TmpfsState } from './volumes.js';
import { Backoff, backoffMessage, KUBELET_BACKOFF, type BackoffOptions } from './backoff.js';
import { NO_EVENTS, type EventSink, type EventType, type ObjectReference } from './events.js';
import { ImagePuller } from './images.js';
import { containerResources, imageSecurityContext, MISSING_CLUSTER_DNS_MESSAGE, missingClusterDNS, podDNSConfig, podPortMappings, podSandboxLinux, type PodConfigOptions } from './podconfig.js';
import { effectiveSecurityContext, resolveIdentity } from './runtime/identity.js';
import { RuntimeError, type ContainerConfig, type PodSandboxConfig, type Runtime } from './runtime/runtime.js';
import type * as rt from './runtime/runtime.js';
import { rfc3339 } from './time.js';
import { buildPodStatus, isTerminal, type ContainerInstances, type WaitingReason } from './status.js';
import type { StatusManager } from './status-manager.js';
import type { Container, Pod, PodPhase, PodStatus } from './types.js';
import { gracePeriodOf, restartPolicyOf } from './types.js';

export interface SyncResult {
  /** The pod reached Succeeded or Failed: nothing will run again. */
  terminal: boolean;
  /** Sync again after this many ms (a back-off ends), if set. */
  requeueAfterMs?: number;
}

/** What the pod workers drive; implemented by PodSyncer, faked in tests. */
export interface PodLifecycle {
  syncPod(pod: Pod): Promise<SyncResult>;
  /** Stops every container of the pod, each with `gracePeriodSeconds` between SIGTERM and SIGKILL. */
  terminatePod(pod: Pod, gracePeriodSeconds: number): Promise<void>;
  /** Removes what is left of a terminated pod (containers, logs, its directory, its status). */
  cleanupPod(pod: Pod): Promise<void>;
  /** Tears down the volumes of a pod that reached Succeeded or Failed (kubelet unmounts them). */
  releaseVolumes?(pod: Pod): Promise<void>;
}

export interface PodSyncerOptions {
  runtime: Runtime;
  /** The structured logger of kubelet's key/value lines (the probes' -v=4 lines). */
  logger?: StructuredLogger;
  statusManager: StatusManager;
  /** --root-dir: pods live in <rootDir>/pods/<uid>, logs in <rootDir>/pods/<uid>/containers/<name>/<attempt>.log. */
  rootDir: string;
  allowPrivileged: boolean;
  backoff?: BackoffOptions;
  hostIP?: string;
  now?: () => Date;
  /** Where Pulled, Created, Started, Killing, BackOff and Failed events go. */
  events?: EventSink;
  /** Node settings for runtimes that run images (cgroups, DNS, CPU quota); see podconfig.ts. */
  podConfig?: PodConfigOptions;
  /** --serialize-image-pulls, --registry-qps, --registry-burst (runtimes with an image service). */
  imagePulls?: { serialize?: boolean; qps?: number; burst?: number };
  /** ConfigMaps, Secrets and tokens (API-server mode); none in standalone mode. */
  objects?: ObjectSource;
  /** Service link variables (API-server mode); none in standalone mode. */
  services?: ServiceEnvSource;
  /** Registry logins of the credential provider plugins (--image-credential-provider-config). */
  credentials?: DockerKeyring;
  /** FlexVolume drivers (--volume-plugin-dir). */
  flexVolumes?: FlexVolumes;
  /** The node's allocatable cpu (cores) and memory (bytes), for resourceFieldRef without limits. */
  allocatable?: { cpu: number; memory: number };
  /** Asks for another pass of a pod (probe results changed). */
  resync?: (uid: string) => void;
  /** ProbeTerminationGracePeriod: a probe's terminationGracePeriodSeconds applies when it kills. */
  probeTerminationGracePeriod?: boolean;
  /** Gate EphemeralContainers (default on): start the pod's ephemeral containers. */
  ephemeralContainers?: boolean;
  /** Memory-backed volumes (secret, downwardAPI, projected, emptyDir medium Memory) on tmpfs; default true. */
  tmpfs?: boolean;
  /** Where the agent's own log lines go. */
  log?: (level: 'info' | 'error', message: string) => void;
  /** --keep-terminated-pod-volumes: volumes of terminated pods stay until the pod is deleted. */
  keepTerminatedPodVolumes?: boolean;
  /** --experimental-mounter-path: the mount binary for tmpfs volumes (default 'mount' on the PATH). */
  mounterPath?: string;
  /**
   * Leave dead instances older than the previous one to the container garbage collector (whose
   * --maximum-dead-containers-per-container keeps more than one); by default they are removed as a
   * new instance is created.
   */
  leaveDeadInstancesToGC?: boolean;
  /** The CPU and memory managers (cm/index.ts): cpusets of new containers. */
  resourceManagers?: {
    containerCpusets(pod: Pod, c: Container): { cpusetCpus?: string; cpusetMems?: string };
    containerCreated(pod: Pod, c: Container, containerId: string): void;
  };
  /** Before a pod's sandbox is made: its cgroup (cgroups/manager.ts ensurePod); a failure fails the pass. */
  beforeSandbox?: (pod: Pod) => Promise<void>;
  /** The node's reference for events about the node (kubelet's nodeRef); none: no such events. */
  nodeRef?: () => ObjectReference | undefined;
}

/** Why a pod must not run (any more): admission refused it, or it was evicted. */
export interface Verdict {
  phase: PodPhase;
  reason: string;
  message: string;
  /** Set for an eviction: the grace period its containers get. */
  killGraceSeconds?: number;
  /** Admission: the pod never ran; its status is only phase, reason and message. */
  rejected?: boolean;
}

interface PodState {
  sandboxId?: string;
  sandboxConfig?: PodSandboxConfig;
  /** Container ids by container name, newest first (at most two). */
  ids: Map<string, string[]>;
  waiting: Map<string, WaitingReason>;
  /** The sandbox's own IP (runtimes with pod networking). */
  podIP?: string;
}

export const LABEL_POD_UID = 'io.kubernetes.pod.uid';
export const LABEL_POD_NAME = 'io.kubernetes.pod.name';
export const LABEL_POD_NAMESPACE = 'io.kubernetes.pod.namespace';
export const LABEL_CONTAINER_NAME = 'io.kubernetes.container.name';

export class PodSyncer implements PodLifecycle {
  private readonly pods = new Map<string, PodState>();
  private readonly backoff: Backoff;
  private readonly now: () => Date;
  private readonly events: EventSink;
  private readonly puller: ImagePuller | undefined;
  private readonly objects: ObjectSource;
  private readonly verdicts = new Map<string, Verdict>();
  readonly prober: ProbeManager;
  /** Whether tmpfs mounts work here (learnt once); undefined when tmpfs is off. */
  private readonly tmpfs: TmpfsState | undefined;
  /** Pods already told that their memory-backed volumes are on disk. */
  private readonly tmpfsWarned = new Set<string>();
  /** Unmounting what an earlier agent left under --root-dir; pods wait for it before their first pass. */
  private readonly orphanSweep: Promise<void>;
  /**
   * The runtime's ready sandboxes as listed for the first pod this agent had no record of: a sandbox
   * this agent did not make can only be from before it started, so one listing serves every pod
   * (not one listing per new pod, which a burst of new pods pays for on the runtime). Listed again
   * after a failure.
   */
  private adoptable: Promise<rt.PodSandbox[]> | undefined;

  constructor(private readonly o: PodSyncerOptions) {
    this.backoff = new Backoff(o.backoff ?? KUBELET_BACKOFF);
    this.now = o.now ?? (() => new Date());
    this.events = o.events ?? NO_EVENTS;
    this.objects = o.objects ?? NO_OBJECTS;
    if (o.runtime.images) {
      this.puller = new ImagePuller({
        images: o.runtime.images,
        ...(o.imagePulls ?? {}),
        ...(o.credentials ? { keyring: o.credentials } : {}),
        pullSecrets: (pod) => this.pullSecrets(pod),
      });
    }
    this.prober = new ProbeManager({ runtime: o.runtime, events: this.events, onChange: (uid) => o.resync?.(uid), ...(o.logger ? { logger: o.logger } : {}) });
    this.tmpfs = o.tmpfs === false ? undefined : {};
    // A runtime whose containers outlive the agent keeps them (adoption needs their mounts); on the
    // others every pod starts again, so tmpfs mounts left by an earlier agent are stale.
    this.orphanSweep = o.runtime.detach
      ? Promise.resolve()
      : unmountOrphans(o.rootDir, new Set()).then(
          (gone) => {
            if (gone.length > 0) o.log?.('info', `unmounted ${gone.length} tmpfs volume(s) an earlier agent left under ${join(o.rootDir, 'pods')}`);
          },
          () => undefined,
        );
  }

  /** Gives a pod a verdict (admission refusal or eviction); its next pass stops it and reports it. */
  setVerdict(uid: string, verdict: Verdict): void {
    this.verdicts.set(uid, verdict);
  }

  verdictOf(uid: string): Verdict | undefined {
    return this.verdicts.get(uid);
  }

  /** An event about the pod itself (no container). */
  private podEvent(pod: Pod, type: EventType, reason: string, message: string): void {
    const { namespace, name, uid } = pod.metadata;
    this.events.event({ kind: 'Pod', apiVersion: 'v1', namespace, name, uid }, type, reason, message);
  }

  /**
   * kubelet 1.23's MissingClusterDNS warnings (network/dns GetPodDNS, each time it makes the pod's sandbox
   * config): the pod asks for the cluster's DNS and the agent has no --cluster-dns, so it gets the node's
   * (Default). One event about the node, one about the pod; each also logged as kubelet's event
   * broadcaster does at -v=3.
   */
  private missingClusterDNS(pod: Pod): void {
    const { name, namespace, uid } = pod.metadata;
    const node = this.o.nodeRef?.();
    const logEvent = (object: string, kind: string, message: string): void =>
      this.o.logger?.v(3).info('Event occurred', 'object', object, 'kind', kind, 'apiVersion', kind === 'Pod' ? 'v1' : '', 'type', 'Warning', 'reason', 'MissingClusterDNS', 'message', message);
    if (node) {
      this.events.event(node, 'Warning', 'MissingClusterDNS', MISSING_CLUSTER_DNS_MESSAGE);
      logEvent(node.name, 'Node', MISSING_CLUSTER_DNS_MESSAGE);
    }
    const message = `pod: "${name}_${namespace}(${uid})". ${MISSING_CLUSTER_DNS_MESSAGE}`;
    this.podEvent(pod, 'Warning', 'MissingClusterDNS', message);
    logEvent(`${namespace}/${name}`, 'Pod', message);
  }

  /** An event about container `c` of `pod` (kubelet's reference with fieldPath spec.containers{name}). */
  private containerEvent(pod: Pod, c: Container, type: EventType, reason: string, message: string): void {
    const init = (pod.spec.initContainers ?? []).some((x) => x.name === c.name);
    const ephemeral = !init && (pod.spec.ephemeralContainers ?? []).some((x) => x.name === c.name);
    const ref = {
      kind: 'Pod',
      apiVersion: 'v1',
      namespace: pod.metadata.namespace,
      name: pod.metadata.name,
      uid: pod.metadata.uid,
      fieldPath: `spec.${init ? 'initContainers' : ephemeral ? 'ephemeralContainers' : 'containers'}{${c.name}}`,
      ...(typeof pod.metadata.resourceVersion === 'string' ? { resourceVersion: pod.metadata.resourceVersion } : {}),
    };
    this.events.event(ref, type, reason, message);
  }

  /** The pod UID a sandbox belongs to (to route runtime events to workers). */
  uidOfSandbox(sandboxId: string): string | undefined {
    for (const [uid, s] of this.pods) if (s.sandboxId === sandboxId) return uid;
    return undefined;
  }

  podDir(uid: string): string {
    return join(this.o.rootDir, 'pods', uid);
  }

  async syncPod(pod: Pod): Promise<SyncResult> {
    const verdict = this.verdicts.get(pod.metadata.uid);
    if (verdict) return this.syncVerdict(pod, verdict);
    const st = this.stateOf(pod);
    await this.orphanSweep;
    st.waiting.clear();
    if (st.sandboxId === undefined) await this.adopt(pod, st);
    const sandboxId = await this.ensureSandbox(pod, st);
    // kubelet's SyncPod makes the sandbox config again before it starts containers (its step 5): the
    // DNS warning of every pass of a pod that still runs
    if (this.o.runtime.runsImages && missingClusterDNS(pod, this.o.podConfig ?? {}) && !isTerminal(this.o.statusManager.peek(pod.metadata.uid)?.status?.phase ?? 'Pending')) {
      this.missingClusterDNS(pod);
    }
    this.objects.setPodRefs(pod.metadata.uid, podObjectRefs(pod));
    let instances = await this.instances(st, pod);
    let requeue: number | undefined;
    const wantRequeue = (ms: number | undefined): void => {
      if (ms !== undefined) requeue = requeue === undefined ? ms : Math.min(requeue, ms);
    };
    const volumesReady = await this.volumes(pod, st);
    if (!volumesReady) wantRequeue(2000);
    const policy = restartPolicyOf(pod);
    // kubelet's SyncPod starts ephemeral containers before init containers: each once, never restarted
    if (volumesReady && this.o.ephemeralContainers !== false) {
      for (const ec of pod.spec.ephemeralContainers ?? []) {
        const { targetContainerName, ...c } = ec;
        const target = targetContainerName ? instances.get(targetContainerName)?.latest?.id : undefined;
        if (instances.get(c.name)?.latest === undefined) wantRequeue(await this.startOrBackoff(pod, st, sandboxId, c, undefined, target));
      }
    }
    let initComplete = true;
    for (const c of pod.spec.initContainers ?? []) {
      const latest = instances.get(c.name)?.latest;
      if (latest?.state === 'CONTAINER_EXITED' && latest.exitCode === 0) continue;
      initComplete = false;
      if (volumesReady && (latest === undefined || (latest.state === 'CONTAINER_EXITED' && policy !== 'Never'))) {
        wantRequeue(await this.startOrBackoff(pod, st, sandboxId, c, latest));
      }
      break;
    }
    if (initComplete && volumesReady) {
      for (const c of pod.spec.containers) {
        let latest = instances.get(c.name)?.latest;
        if (latest?.state === 'CONTAINER_RUNNING') latest = await this.killIfUnhealthy(pod, c, latest);
        const mayRestart =
          latest?.state === 'CONTAINER_EXITED' && (policy === 'Always' || (policy === 'OnFailure' && latest.exitCode !== 0));
        if (latest === undefined || mayRestart) wantRequeue(await this.startOrBackoff(pod, st, sandboxId, c, latest));
      }
    }
    instances = await this.instances(st);
    const status = this.writeStatus(pod, st, instances);
    const running = [...instances]
      .filter(([, i]) => i.latest?.state === 'CONTAINER_RUNNING')
      .map(([name, i]) => ({ name, id: i.latest!.id, startedAt: i.latest!.startedAt ?? this.now() }));
    this.prober.update(pod, running, st.podIP ?? this.o.hostIP ?? '127.0.0.1');
    return requeue === undefined ? { terminal: isTerminal(status.phase) } : { terminal: isTerminal(status.phase), requeueAfterMs: requeue };
  }

  /** A pod with a verdict: its containers are stopped (an eviction) and its status says why. */
  private async syncVerdict(pod: Pod, verdict: Verdict): Promise<SyncResult> {
    this.prober.removePod(pod.metadata.uid);
    if (verdict.rejected) {
      const old = this.o.statusManager.getPodStatus(pod.metadata.uid);
      this.o.statusManager.setPodStatus(pod, {
        phase: verdict.phase,
        reason: verdict.reason,
        message: verdict.message,
        conditions: [],
        containerStatuses: [],
        startTime: old?.startTime ?? rfc3339(this.now()),
      });
      return { terminal: true };
    }
    const st = this.stateOf(pod);
    st.waiting.clear();
    if (st.sandboxId !== undefined) await this.terminatePod(pod, verdict.killGraceSeconds ?? 0);
    this.writeStatus(pod, st, await this.instances(st));
    return { terminal: true };
  }

  /** Kills a running container that failed its liveness or startup probe; returns its exited status. */
  private async killIfUnhealthy(pod: Pod, c: Container, latest: rt.ContainerStatus): Promise<rt.ContainerStatus> {
    const failed = this.prober.failed(latest.id);
    if (!failed) return latest;
    const policy = restartPolicyOf(pod);
    let grace = gracePeriodOf(pod);
    const probeGrace = this.prober.probeGrace(pod.metadata.uid, c.name, failed);
    if (this.o.probeTerminationGracePeriod && probeGrace !== undefined) grace = probeGrace;
    const restart = policy !== 'Never';
    this.containerEvent(pod, c, 'Normal', 'Killing', `Container ${c.name} failed ${failed} probe${restart ? ', will be restarted' : ''}`);
    await this.o.runtime.stopContainer(latest.id, grace);
    return (await this.o.runtime.containerStatus(latest.id).catch(() => undefined)) ?? latest;
  }

  /** Sets up the pod's volumes; false (after a FailedMount event) when one could not be. */
  private async volumes(pod: Pod, st: PodState): Promise<boolean> {
    if (!Array.isArray(pod.spec.volumes) || pod.spec.volumes.length === 0) return true;
    try {
      const uid = pod.metadata.uid;
      await setUpVolumes(this.envContext(pod, st), this.podDir(uid), {
        ...(this.tmpfs ? { tmpfs: this.tmpfs } : {}),
        ...(this.o.mounterPath !== undefined ? { mounterPath: this.o.mounterPath } : {}),
        ...(this.o.flexVolumes ? { flex: this.o.flexVolumes } : {}),
        onTmpfsFallback: (_volume, message) => {
          if (this.tmpfsWarned.has(uid)) return;
          this.tmpfsWarned.add(uid);
          this.podEvent(pod, 'Warning', 'TmpfsUnavailable', message);
          this.o.log?.('error', `pod ${pod.metadata.namespace}/${pod.metadata.name}: ${message}`);
        },
      });
      return true;
    } catch (err) {
      this.podEvent(pod, 'Warning', 'FailedMount', errorText(err));
      return false;
    }
  }

  /** The pod's imagePullSecrets that can be read; the others are logged and left out (kubelet's getPullSecretsForPod). */
  private async pullSecrets(pod: Pod): Promise<Record<string, unknown>[]> {
    const names = ((pod.spec.imagePullSecrets ?? []) as { name?: string }[]).map((r) => r.name).filter((n): n is string => typeof n === 'string' && n !== '');
    const out: Record<string, unknown>[] = [];
    for (const name of names) {
      try {
        out.push(await this.objects.get('secrets', pod.metadata.namespace, name));
      } catch (err) {
        this.o.log?.('info', `Unable to retrieve pull secret, the image pull may not succeed. pod=${pod.metadata.namespace}/${pod.metadata.name} secret=${name} err=${errorText(err)}`);
      }
    }
    return out;
  }

  private envContext(pod: Pod, st: PodState): EnvContext {
    const ctx: EnvContext = {
      pod,
      objects: this.objects,
      allocatable: this.o.allocatable ?? { cpu: 1, memory: 0 },
      onInvalidNames: (m) => this.podEvent(pod, 'Warning', 'InvalidEnvironmentVariableNames', m),
    };
    if (this.o.hostIP !== undefined) ctx.hostIP = this.o.hostIP;
    if (this.o.services) ctx.services = this.o.services;
    const podIP = st.podIP ?? this.o.hostIP;
    if (podIP !== undefined) ctx.podIP = podIP;
    return ctx;
  }

  /**
   * Adopts what the runtime still runs for this pod (found by the pod uid label): the newest ready
   * sandbox and its containers, newest first per name. Does nothing on a runtime that has none.
   */
  private async adopt(pod: Pod, st: PodState): Promise<void> {
    const uid = pod.metadata.uid;
    this.adoptable ??= this.o.runtime.listPodSandbox({ state: 'SANDBOX_READY' });
    const listed = this.adoptable;
    const sandboxes = (
      await listed.catch((): rt.PodSandbox[] => {
        if (this.adoptable === listed) this.adoptable = undefined;
        return [];
      })
    )
      .filter((s) => s.labels[LABEL_POD_UID] === uid)
      .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime());
    const found = sandboxes[0];
    if (!found) return;
    st.sandboxId = found.id;
    st.sandboxConfig = this.sandboxConfig(pod, found.metadata.attempt);
    if (this.o.runtime.runsImages) {
      const s = await this.o.runtime.podSandboxStatus(found.id).catch(() => undefined);
      if (s?.network?.ip) st.podIP = s.network.ip;
    }
    const containers = await this.o.runtime.listContainers({ podSandboxId: found.id }).catch(() => []);
    const byName = new Map<string, rt.ContainerSummary[]>();
    for (const c of containers) {
      const name = c.labels[LABEL_CONTAINER_NAME] ?? c.metadata.name;
      byName.set(name, [...(byName.get(name) ?? []), c]);
    }
    for (const [name, list] of byName) {
      list.sort((a, b) => b.metadata.attempt - a.metadata.attempt || b.createdAt.getTime() - a.createdAt.getTime());
      st.ids.set(name, list.slice(0, 2).map((c) => c.id));
    }
  }

  async terminatePod(pod: Pod, gracePeriodSeconds: number): Promise<void> {
    const st = this.pods.get(pod.metadata.uid);
    if (!st?.sandboxId) return;
    const instances = await this.instances(st);
    for (const c of [...(pod.spec.initContainers ?? []), ...pod.spec.containers]) {
      if (instances.get(c.name)?.latest?.state === 'CONTAINER_RUNNING') this.containerEvent(pod, c, 'Normal', 'Killing', `Stopping container ${c.name}`);
    }
    await this.o.runtime.stopPodSandbox(st.sandboxId, gracePeriodSeconds);
    st.waiting.clear();
    this.writeStatus(pod, st, await this.instances(st));
  }

  /**
   * kubelet's volume manager for a pod that terminated (Succeeded or Failed) and is not deleted:
   * its volumes are torn down (tmpfs unmounted, emptyDir, configMap, secret, downwardAPI and
   * projected directories removed, hostPath untouched); its logs stay. Nothing with
   * keepTerminatedPodVolumes.
   */
  async releaseVolumes(pod: Pod): Promise<void> {
    if (this.o.keepTerminatedPodVolumes === true) return;
    if (!Array.isArray(pod.spec.volumes) || pod.spec.volumes.length === 0) return;
    const podDir = this.podDir(pod.metadata.uid);
    try {
      await tearDownVolumes(podDir, this.o.flexVolumes);
      for (const d of ['volumes', 'plugins', 'rootfs']) await rm(join(podDir, d), { recursive: true, force: true });
    } catch (err) {
      // what is left goes with the pod's directory when the pod is deleted
      this.o.log?.('error', `tearing down the volumes of terminated pod ${pod.metadata.namespace}/${pod.metadata.name}: ${errorText(err)}`);
    }
  }

  async cleanupPod(pod: Pod): Promise<void> {
    const uid = pod.metadata.uid;
    this.prober.removePod(uid);
    this.objects.setPodRefs(uid, []);
    this.verdicts.delete(uid);
    const st = this.pods.get(uid);
    if (st?.sandboxId) await this.o.runtime.removePodSandbox(st.sandboxId);
    this.pods.delete(uid);
    this.backoff.forget((k) => k.startsWith(`${uid}/`));
    this.puller?.forgetPod(uid);
    this.tmpfsWarned.delete(uid);
    try {
      await tearDownVolumes(this.podDir(uid), this.o.flexVolumes).catch((err: unknown) => this.o.log?.('error', `pod ${pod.metadata.namespace}/${pod.metadata.name}: ${errorText(err)}`));
      await rm(this.podDir(uid), { recursive: true, force: true });
    } finally {
      // last: a pod whose status is gone has nothing left on the node (its directory included)
      this.o.statusManager.removePod(uid);
    }
  }

  private stateOf(pod: Pod): PodState {
    let st = this.pods.get(pod.metadata.uid);
    if (!st) {
      st = { ids: new Map(), waiting: new Map() };
      this.pods.set(pod.metadata.uid, st);
    }
    return st;
  }

  private async ensureSandbox(pod: Pod, st: PodState): Promise<string> {
    if (st.sandboxId !== undefined) {
      const s = await this.o.runtime.podSandboxStatus(st.sandboxId).catch(() => undefined);
      if (s?.state === 'SANDBOX_READY') return st.sandboxId;
    }
    const config = this.sandboxConfig(pod, st.sandboxConfig ? st.sandboxConfig.metadata.attempt + 1 : 0, true);
    await this.o.beforeSandbox?.(pod).catch((err: unknown) => {
      this.podEvent(pod, 'Warning', 'FailedToCreatePodContainer', `unable to ensure pod container exists: ${errorText(err)}`);
      throw err;
    });
    st.sandboxId = await this.o.runtime.runPodSandbox(config);
    st.sandboxConfig = config;
    if (this.o.runtime.runsImages && !config.linux?.hostNetwork) {
      const s = await this.o.runtime.podSandboxStatus(st.sandboxId).catch(() => undefined);
      if (s?.network?.ip) st.podIP = s.network.ip;
    }
    return st.sandboxId;
  }

  /** The sandbox config of a pod (kubelet's generatePodSandboxConfig); `creating`: for a new sandbox (its DNS warnings are given). */
  private sandboxConfig(pod: Pod, attempt: number, creating = false): PodSandboxConfig {
    const { name, namespace, uid } = pod.metadata;
    const config: PodSandboxConfig = {
      metadata: { name, namespace, uid, attempt },
      hostname: (pod.spec.hostname ?? name).slice(0, 63),
      logDirectory: join(this.podDir(uid), 'containers'),
      labels: { ...(pod.metadata.labels ?? {}), [LABEL_POD_UID]: uid, [LABEL_POD_NAME]: name, [LABEL_POD_NAMESPACE]: namespace },
      annotations: { ...(pod.metadata.annotations ?? {}) },
    };
    if (this.o.runtime.runsImages) {
      const o = this.o.podConfig ?? {};
      config.linux = podSandboxLinux(pod, o);
      config.dnsConfig = podDNSConfig(pod, o, creating ? () => this.missingClusterDNS(pod) : undefined);
      const ports = podPortMappings(pod);
      if (ports.length > 0) config.portMappings = ports;
    }
    return config;
  }

  /**
   * The latest and previous instance of each container. A gone instance is no instance; any other
   * failure to ask the runtime is kubelet's 'error determining status': a FailedSync event about the
   * pod (when `pod` is given) and the pass fails (the workers retry it).
   */
  private async instances(st: PodState, pod?: Pod): Promise<Map<string, ContainerInstances>> {
    const out = new Map<string, ContainerInstances>();
    const status = (id: string): Promise<rt.ContainerStatus | undefined> =>
      this.o.runtime.containerStatus(id).catch((err: unknown) => {
        if (pod === undefined || (err instanceof RuntimeError && err.code === 'NotFound')) return undefined;
        this.podEvent(pod, 'Warning', 'FailedSync', `error determining status: ${errorText(err)}`);
        throw err;
      });
    for (const [name, ids] of st.ids) {
      const [latest, previous] = await Promise.all(ids.slice(0, 2).map(status));
      const inst: ContainerInstances = {};
      if (latest) inst.latest = latest;
      if (previous) inst.previous = previous;
      out.set(name, inst);
    }
    return out;
  }

  /** Starts a new instance of `c`, unless its crash-loop back-off is still running; returns a requeue delay. */
  private async startOrBackoff(pod: Pod, st: PodState, sandboxId: string, c: Container, latest: rt.ContainerStatus | undefined, pidTargetId?: string): Promise<number | undefined> {
    const { uid, name, namespace } = pod.metadata;
    const key = `${uid}/${c.name}`;
    if (latest?.state === 'CONTAINER_EXITED') {
      const exitedAt = (latest.finishedAt ?? this.now()).getTime();
      const b = this.backoff.inBackoff(key, exitedAt);
      if (b.wait) {
        st.waiting.set(c.name, { reason: 'CrashLoopBackOff', message: backoffMessage(b.backoffMs, c.name, name, namespace, uid) });
        this.containerEvent(pod, c, 'Warning', 'BackOff', 'Back-off restarting failed container');
        return b.remainingMs;
      }
      this.backoff.next(key, exitedAt);
    }
    const attempt = latest === undefined ? 0 : latest.metadata.attempt + 1;
    const built = await this.buildContainerConfig(pod, st, c, attempt);
    if (typeof built === 'string') {
      st.waiting.set(c.name, { reason: 'CreateContainerConfigError', message: built });
      this.containerEvent(pod, c, 'Warning', 'Failed', `Error: ${built}`);
      return undefined;
    }
    if (pidTargetId !== undefined) built.pidTargetId = pidTargetId;
    if (this.puller) {
      const image = await this.puller.ensure(pod, c, st.sandboxConfig, (type, reason, message) => this.containerEvent(pod, c, type, reason, message));
      if (!image.ok) {
        st.waiting.set(c.name, { reason: image.reason, message: image.message });
        return image.retryAfterMs;
      }
    } else {
      // The process runtime has no images: what kubelet says for an image already on the node.
      this.containerEvent(pod, c, 'Normal', 'Pulled', `Container image "${c.image}" already present on machine`);
    }
    let id: string;
    try {
      id = await this.o.runtime.createContainer(sandboxId, built, st.sandboxConfig!);
    } catch (err) {
      const refused = err instanceof RuntimeError && err.code === 'ConfigRefused';
      st.waiting.set(c.name, { reason: refused ? 'CreateContainerConfigError' : 'CreateContainerError', message: errorText(err) });
      this.containerEvent(pod, c, 'Warning', 'Failed', `Error: ${errorText(err)}`);
      return undefined;
    }
    this.containerEvent(pod, c, 'Normal', 'Created', `Created container ${c.name}`);
    this.o.resourceManagers?.containerCreated(pod, c, id);
    await this.remember(st, c.name, id);
    try {
      await this.o.runtime.startContainer(id);
      this.containerEvent(pod, c, 'Normal', 'Started', `Started container ${c.name}`);
    } catch (err) {
      st.waiting.set(c.name, { reason: 'RunContainerError', message: errorText(err) });
      this.containerEvent(pod, c, 'Warning', 'Failed', `Error: ${errorText(err)}`);
    }
    return undefined;
  }

  /** Records a new instance as the newest of its name and removes instances older than the previous one. */
  private async remember(st: PodState, name: string, id: string): Promise<void> {
    const ids = [id, ...(st.ids.get(name) ?? [])];
    st.ids.set(name, ids.slice(0, 2));
    if (this.o.leaveDeadInstancesToGC === true) return;
    for (const old of ids.slice(2)) await this.o.runtime.removeContainer(old).catch(() => undefined);
  }

  /** The container's config with its environment resolved and its volumes mounted (or shown), or why it cannot be made. */
  private async buildContainerConfig(pod: Pod, st: PodState, c: Container, attempt: number): Promise<ContainerConfig | string> {
    let env: Map<string, string>;
    try {
      env = await containerEnv(this.envContext(pod, st), c);
    } catch (err) {
      return errorText(err);
    }
    const podDir = this.podDir(pod.metadata.uid);
    if (!this.o.runtime.runsImages) {
      const view = await processMountView(pod, c, podDir, this.o.rootDir);
      if (view !== undefined) env.set('ORCH_ROOTFS', view);
    }
    const config = this.containerConfig(pod, c, attempt, env);
    if (typeof config !== 'string' && this.o.runtime.runsImages) {
      const mounts = containerMounts(pod, c, podDir);
      if (mounts.length > 0) config.mounts = mounts;
    }
    return config;
  }

  /**
   * The CRI config of a container (kubelet's generateContainerConfig), or why it cannot be made.
   * `env` is the resolved environment (env.ts); without it only plain values are used.
   */
  containerConfig(pod: Pod, c: Container, attempt: number, resolved?: ReadonlyMap<string, string>): ContainerConfig | string {
    const images = this.o.runtime.runsImages === true;
    // An image runtime isolates the container: the image supplies user and command; the runtime refuses privileged.
    const sc = images ? imageSecurityContext(pod, c, this.o.podConfig) : effectiveSecurityContext(pod.spec.securityContext, c.securityContext);
    const who = images ? { ok: true as const } : resolveIdentity(sc, this.o.allowPrivileged);
    if (!who.ok) return who.message;
    if (!images && (c.command?.length ?? 0) + (c.args?.length ?? 0) === 0) {
      return 'container has no command: the orch process runtime ignores images and runs command + args on the host';
    }
    let env = resolved;
    if (!env) {
      const plain = new Map<string, string>();
      for (const e of c.env ?? []) plain.set(e.name, expandVars(e.value ?? '', plain));
      env = plain;
    }
    const { uid, name, namespace } = pod.metadata;
    const config: ContainerConfig = {
      metadata: { name: c.name, attempt },
      image: c.image,
      command: (c.command ?? []).map((s) => expandVars(s, env)),
      args: (c.args ?? []).map((s) => expandVars(s, env)),
      envs: [...env].map(([key, value]) => ({ key, value })),
      labels: { [LABEL_POD_UID]: uid, [LABEL_POD_NAME]: name, [LABEL_POD_NAMESPACE]: namespace, [LABEL_CONTAINER_NAME]: c.name },
      logPath: join(c.name, `${attempt}.log`),
      securityContext: sc,
    };
    if (c.workingDir !== undefined && c.workingDir !== '') config.workingDir = c.workingDir;
    if (images) {
      config.resources = containerResources(pod, c, this.o.podConfig ?? {});
      if (c.tty === true) config.tty = true;
    }
    // Both runtimes keep a container's stdin open for attach when it asks for one.
    if (c.stdin === true) config.stdin = true;
    if (c.stdinOnce === true) config.stdinOnce = true;
    // kubelet's PreCreateContainer: the CPU and memory managers' cpusets (both runtimes)
    const cpusets = this.o.resourceManagers?.containerCpusets(pod, c) ?? {};
    if (Object.keys(cpusets).length > 0) config.resources = { ...(config.resources ?? {}), ...cpusets };
    return config;
  }

  private writeStatus(pod: Pod, st: PodState, instances: Map<string, ContainerInstances>): PodStatus {
    const input = {
      pod,
      instances,
      waiting: st.waiting,
      now: this.now(),
      ...(this.o.hostIP !== undefined ? { hostIP: this.o.hostIP } : {}),
      ...(st.podIP !== undefined ? { podIP: st.podIP } : {}),
      probes: (container: string, id: string) => this.prober.readiness(pod.metadata.uid, container, id),
    };
    const verdict = this.verdicts.get(pod.metadata.uid);
    if (verdict) Object.assign(input, { verdict: { phase: verdict.phase, reason: verdict.reason, message: verdict.message } });
    // read only: buildPodStatus copies what it keeps of the old status
    const old = this.o.statusManager.peek(pod.metadata.uid)?.status;
    const status = buildPodStatus(old ? { ...input, old } : input);
    this.o.statusManager.setPodStatus(pod, status);
    return status;
  }
}

export { expandVars } from './env.js';

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
