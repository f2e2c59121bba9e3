// Runs one pod on a Runtime (kubelet's kuberuntime_manager SyncPod / KillPod, reduced to what a
// standalone agent needs). Called only by the pod workers, one call at a time per pod UID.
//
// A sync pass: make sure the pod has a sandbox, read the state of its containers, then start what
// should run: init containers one after the other until each has succeeded, then every regular
// container that has never run or that exited and may restart under the pod's restartPolicy
// (crash-loop back-off applies). It ends by writing the pod status to the status manager.
// Per container name the runtime keeps the newest instance and the one before it (for lastState);
// older instances are removed.
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Backoff, backoffMessage, KUBELET_BACKOFF, type BackoffOptions } from './backoff.js';
import { NO_EVENTS, type EventSink, type EventType } from './events.js';
import { ImagePuller } from './images.js';
import { containerResources, imageSecurityContext, podDNSConfig, podPortMappings, podSandboxLinux, type PodConfigOptions } from './podconfig.js';
import { effectiveSecurityContext, resolveIdentity } from './runtime/identity.js';
import { RuntimeError, type ContainerConfig, type PodSandboxConfig, type Runtime } from './runtime/runtime.js';
import type * as rt from './runtime/runtime.js';
import { buildPodStatus, isTerminal, type ContainerInstances, type WaitingReason } from './status.js';
import type { StatusManager } from './status-manager.js';
import type { Container, Pod, PodStatus } from './types.js';
import { restartPolicyOf } from './types.js';

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
}

export interface PodSyncerOptions {
  runtime: Runtime;
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

  constructor(private readonly o: PodSyncerOptions) {
    this.backoff = new Backoff(o.backoff ?? KUBELET_BACKOFF);
    this.now = o.now ?? (() => new Date());
    this.events = o.events ?? NO_EVENTS;
    if (o.runtime.images) this.puller = new ImagePuller({ images: o.runtime.images, ...(o.imagePulls ?? {}) });
  }

  /** An event about container `c` of `pod` (kubelet's reference with fieldPath spec.containers{name}). */
  private containerEvent(pod: Pod, c: Container, type: EventType, reason: string, message: string): void {
    const init = (pod.spec.initContainers ?? []).some((x) => x.name === c.name);
    const ref = {
      kind: 'Pod',
      apiVersion: 'v1',
      namespace: pod.metadata.namespace,
      name: pod.metadata.name,
      uid: pod.metadata.uid,
      fieldPath: `spec.${init ? 'initContainers' : 'containers'}{${c.name}}`,
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
    const st = this.stateOf(pod);
    st.waiting.clear();
    const sandboxId = await this.ensureSandbox(pod, st);
    let instances = await this.instances(st);
    let requeue: number | undefined;
    const wantRequeue = (ms: number | undefined): void => {
      if (ms !== undefined) requeue = requeue === undefined ? ms : Math.min(requeue, ms);
    };
    const policy = restartPolicyOf(pod);
    let initComplete = true;
    for (const c of pod.spec.initContainers ?? []) {
      const latest = instances.get(c.name)?.latest;
      if (latest?.state === 'CONTAINER_EXITED' && latest.exitCode === 0) continue;
      initComplete = false;
      if (latest === undefined || (latest.state === 'CONTAINER_EXITED' && policy !== 'Never')) {
        wantRequeue(await this.startOrBackoff(pod, st, sandboxId, c, latest));
      }
      break;
    }
    if (initComplete) {
      for (const c of pod.spec.containers) {
        const latest = instances.get(c.name)?.latest;
        const mayRestart =
          latest?.state === 'CONTAINER_EXITED' && (policy === 'Always' || (policy === 'OnFailure' && latest.exitCode !== 0));
        if (latest === undefined || mayRestart) wantRequeue(await this.startOrBackoff(pod, st, sandboxId, c, latest));
      }
    }
    instances = await this.instances(st);
    const status = this.writeStatus(pod, st, instances);
    return requeue === undefined ? { terminal: isTerminal(status.phase) } : { terminal: isTerminal(status.phase), requeueAfterMs: requeue };
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

  async cleanupPod(pod: Pod): Promise<void> {
    const uid = pod.metadata.uid;
    const st = this.pods.get(uid);
    if (st?.sandboxId) await this.o.runtime.removePodSandbox(st.sandboxId);
    this.pods.delete(uid);
    this.backoff.forget((k) => k.startsWith(`${uid}/`));
    this.puller?.forgetPod(uid);
    this.o.statusManager.removePod(uid);
    await rm(this.podDir(uid), { recursive: true, force: true });
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
    const { name, namespace, uid } = pod.metadata;
    const config: PodSandboxConfig = {
      metadata: { name, namespace, uid, attempt: st.sandboxConfig ? st.sandboxConfig.metadata.attempt + 1 : 0 },
      hostname: (pod.spec.hostname ?? name).slice(0, 63),
      logDirectory: join(this.podDir(uid), 'containers'),
      labels: { ...(pod.metadata.labels ?? {}), [LABEL_POD_UID]: uid, [LABEL_POD_NAME]: name, [LABEL_POD_NAMESPACE]: namespace },
      annotations: { ...(pod.metadata.annotations ?? {}) },
    };
    if (this.o.runtime.runsImages) {
      const o = this.o.podConfig ?? {};
      config.linux = podSandboxLinux(pod, o);
      config.dnsConfig = podDNSConfig(pod, o);
      const ports = podPortMappings(pod);
      if (ports.length > 0) config.portMappings = ports;
    }
    st.sandboxId = await this.o.runtime.runPodSandbox(config);
    st.sandboxConfig = config;
    if (this.o.runtime.runsImages && !config.linux?.hostNetwork) {
      const s = await this.o.runtime.podSandboxStatus(st.sandboxId).catch(() => undefined);
      if (s?.network?.ip) st.podIP = s.network.ip;
    }
    return st.sandboxId;
  }

  private async instances(st: PodState): Promise<Map<string, ContainerInstances>> {
    const out = new Map<string, ContainerInstances>();
    for (const [name, ids] of st.ids) {
      const [latest, previous] = await Promise.all(ids.slice(0, 2).map((id) => this.o.runtime.containerStatus(id).catch(() => undefined)));
      const inst: ContainerInstances = {};
      if (latest) inst.latest = latest;
      if (previous) inst.previous = previous;
      out.set(name, inst);
    }
    return out;
  }

  /** Starts a new instance of `c`, unless its crash-loop back-off is still running; returns a requeue delay. */
  private async startOrBackoff(pod: Pod, st: PodState, sandboxId: string, c: Container, latest: rt.ContainerStatus | undefined): Promise<number | undefined> {
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
    const built = this.containerConfig(pod, c, attempt);
    if (typeof built === 'string') {
      st.waiting.set(c.name, { reason: 'CreateContainerConfigError', message: built });
      this.containerEvent(pod, c, 'Warning', 'Failed', `Error: ${built}`);
      return undefined;
    }
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
    for (const old of ids.slice(2)) await this.o.runtime.removeContainer(old).catch(() => undefined);
  }

  /** The CRI config of a container (kubelet's generateContainerConfig), or why it cannot be made. */
  containerConfig(pod: Pod, c: Container, attempt: number): ContainerConfig | string {
    const images = this.o.runtime.runsImages === true;
    // An image runtime isolates the container: the image supplies user and command; the runtime refuses privileged.
    const sc = images ? imageSecurityContext(pod, c) : effectiveSecurityContext(pod.spec.securityContext, c.securityContext);
    const who = images ? { ok: true as const } : resolveIdentity(sc, this.o.allowPrivileged);
    if (!who.ok) return who.message;
    if (!images && (c.command?.length ?? 0) + (c.args?.length ?? 0) === 0) {
      return 'container has no command: the orch process runtime ignores images and runs command + args on the host';
    }
    const env = new Map<string, string>();
    for (const e of c.env ?? []) env.set(e.name, expandVars(e.value ?? '', env));
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
      if (c.stdin === true) config.stdin = true;
      if (c.stdinOnce === true) config.stdinOnce = true;
    }
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
    };
    const old = this.o.statusManager.getPodStatus(pod.metadata.uid);
    const status = buildPodStatus(old ? { ...input, old } : input);
    this.o.statusManager.setPodStatus(pod, status);
    return status;
  }
}

/**
 * Kubernetes variable references: $(NAME) becomes the value of an earlier env var NAME, an unknown
 * reference stays as written, $$ is an escaped $.
 */
export function expandVars(s: string, env: ReadonlyMap<string, string>): string {
  return s.replace(/\$\$|\$\(([^)]*)\)/g, (m: string, name: string | undefined) => {
    if (m === '$$') return '$';
    return name !== undefined && env.has(name) ? env.get(name)! : m;
  });
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
