// The node agent, wired: sources → merge → pod workers → pod sync → runtime, with the status manager
// on the side, the agent's servers in front, and in API-server mode (config.api) the Node, its
// Lease, the API pod source, mirror pods and status posting (apimode.ts).
//
//   FileSource ─┐
//   UrlSource  ─┼─SET─▶ PodMerge ──ADD/UPDATE/DELETE──▶ PodWorkers ──▶ PodSyncer ──▶ Runtime
//   PushSource ─┤                                          ▲                         │
//   ApiSource  ─┘                     runtime events, back-off ends, resync ◀────────┘
import { mkdir, stat } from 'node:fs/promises';
import { kObjs, type Logger as StructuredLogger } from '../util/log.js';
import { freemem, hostname, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { ApiMode, isStatic, type ApiModeConfig } from './apimode.js';
import { startCertificateRotation, type CertificateRotation, type CertificateRotationConfig } from './certificate-rotation.js';
import type { ApiClient } from './client/client.js';
import type { BackoffOptions } from './backoff.js';
import type { Json } from './client/client.js';
import { NO_EVENTS } from './events.js';
import { ContainerGC, DEFAULT_CONTAINER_GC, DEFAULT_IMAGE_GC, ImageGC, nodeImages, PodContainerDeletor, type ContainerGCPolicy, type ImageGCPolicy } from './gc.js';
import type { SysctlAllowlist } from './sysctl.js';
import { admitUnderPressure, dirUsage, EvictionManager, observe, type Observations, type PodUsage, type Signal, type Threshold } from './eviction.js';
import { ContainerLogManager } from './logrotate.js';
import { NodeNetwork, type NodeNetworkConfig } from './network/node-network.js';
import { CgroupFs } from './cgroups/fs.js';
import type { NodeCgroups } from './cgroups/manager.js';
import { MemcgNotifier } from './cgroups/memcg.js';
import { unmountOrphans, volumePath, volumeUsage } from './volumes.js';
import { fsSize } from './node/hostinfo.js';
import { RuntimeState, type RuntimeConditionLike } from './node/runtimestate.js';
import { LABEL_POD_UID } from './podsync.js';
import type { PodConfigOptions } from './podconfig.js';
import { PodSyncer } from './podsync.js';
import { ApiServiceEnv } from './servicelinks.js';
import type { DockerKeyring } from './credentialprovider/keyring.js';
import { FlexVolumes } from './flexvolume.js';
import { ProcessRuntime } from './runtime/process.js';
import type { Runtime } from './runtime/runtime.js';
import { agentServingCert } from './server/certs.js';
import { logContainerID } from './server/logs.js';
import { AgentServers, type AgentServerOptions, type LogTarget, type ServerHost } from './server/server.js';
import { FileSource } from './sources/file.js';
import { PodMerge, type PodSnapshot, type PodUpdate } from './sources/merge.js';
import { PushSource } from './sources/push.js';
import { UrlSource } from './sources/url.js';
import { isTerminal } from './status.js';
import { StatusManager } from './status-manager.js';
import { rfc3339 } from './time.js';
import type { Pod } from './types.js';
import { podFullName } from './types.js';
import { PodWorkers } from './workers.js';
import { ResourceManagers, type ResourceManagersConfig } from './cm/index.js';

export interface AgentServerConfig extends Omit<AgentServerOptions, 'cert' | 'key'> {
  certDir: string;
  tlsCertFile?: string;
  tlsPrivateKeyFile?: string;
}

export interface AgentConfig {
  nodeName: string;
  rootDir: string;
  /** --pod-manifest-path; no file source when unset. */
  podManifestPath?: string;
  /** --file-check-frequency in ms. */
  fileCheckFrequencyMs: number;
  /** --manifest-url and --manifest-url-header; no URL source when unset. */
  manifestURL?: string;
  manifestURLHeaders?: Record<string, string[]>;
  /** --http-check-frequency in ms. */
  httpCheckFrequencyMs?: number;
  /** --sync-frequency in ms: every pod is synced at least this often. */
  syncFrequencyMs: number;
  /** The node's IP: hostIP and podIP of every pod (the process runtime shares the host's network). */
  nodeIP?: string;
  /** Whether privileged containers (the only way to run as root) are allowed; default false. */
  allowPrivileged?: boolean;
  /** Defaults to the built-in process runtime. */
  runtime?: Runtime;
  /** Node settings for runtimes that run images: cgroups, DNS, CPU quota (podconfig.ts). */
  podConfig?: PodConfigOptions;
  /** --serialize-image-pulls, --registry-qps, --registry-burst (runtimes with an image service). */
  imagePulls?: { serialize?: boolean; qps?: number; burst?: number };
  backoff?: BackoffOptions;
  /** The agent's servers; none when unset. The manifest endpoint source comes with them. */
  server?: AgentServerConfig;
  /** API-server mode; standalone when unset. */
  api?: ApiModeConfig;
  /** --rotate-certificates and --rotate-server-certificates (API-server mode): certificate-rotation.ts. */
  certificates?: CertificateRotationConfig;
  /** Pods the node admits at once (--max-pods, capped by --pods-per-core); default 110. Others fail with OutOfpods. */
  maxPods?: number;
  /** Pod sysctl admission (--allowed-unsafe-sysctls): refused pods fail with SysctlForbidden; unset admits all. */
  sysctls?: SysctlAllowlist;
  /** The node's allocatable cpu (cores) and memory (bytes), for resourceFieldRef without limits. */
  allocatable?: { cpu: number; memory: number };
  /** Node-pressure eviction; none when unset. */
  eviction?: {
    thresholds: Threshold[];
    pressureTransitionPeriodMs: number;
    maxPodGracePeriodSeconds: number;
    /** kubelet: 10 s. */
    monitoringPeriodMs?: number;
    /** For tests only: the first pass waits this long instead of running at start (kubelet: at once). */
    firstPassDelayMs?: number;
  };
  /** --container-log-max-size (bytes) and --container-log-max-files; no rotation when unset. */
  containerLogs?: { maxSizeBytes: number; maxFiles: number; periodMs?: number };
  /**
   * Garbage collection of dead containers (every containerPeriodMs, kubelet: 1 min) and unused
   * images (every imagePeriodMs, kubelet: 5 min; runtimes with an image service); kubelet's default
   * policies when unset.
   */
  gc?: { containers?: ContainerGCPolicy; images?: ImageGCPolicy; containerPeriodMs?: number; imagePeriodMs?: number };
  /** --node-status-max-images (default 50; negative: all). */
  nodeStatusMaxImages?: number;
  /** How often the runtime's status is checked (kubelet: 5 s) and after how long without an answer it is down (30 s). */
  runtimeHealth?: { periodMs?: number; downAfterMs?: number };
  /** Feature gates the agent consults (ProbeTerminationGracePeriod). */
  featureGates?: Record<string, boolean>;
  /**
   * Whether stop() terminates the pods. Default: only when the runtime cannot keep them (no
   * detach): on a CRI runtime the containers outlive the agent and the next one adopts them.
   */
  stopPodsOnExit?: boolean;
  /** --keep-terminated-pod-volumes: volumes of Succeeded/Failed pods stay until the pod is deleted. */
  keepTerminatedPodVolumes?: boolean;
  /** --experimental-mounter-path: the binary that mounts tmpfs volumes (default 'mount'). */
  mounterPath?: string;
  /**
   * --volume-stats-agg-period in ms: how often each pod's volume usage is measured for
   * /stats/summary (kubelet: 1 min); 0 or unset: no volume stats.
   */
  volumeStatsAggPeriodMs?: number;
  /** The CPU, memory and topology managers (cm/index.ts); none when unset. */
  resourceManagers?: ResourceManagersConfig;
  /** Host networking: the iptables utility chains and the pod CIDR given to the runtime (network/node-network.ts); none when unset. */
  network?: NodeNetworkConfig;
  /** --master-service-namespace (API-server mode): whose `kubernetes` Service every pod's service links include; default "default". */
  masterServiceNamespace?: string;
  /** Registry logins of the credential provider plugins (credentialprovider/plugin.ts); none when unset. */
  credentials?: DockerKeyring | undefined;
  /** --volume-plugin-dir: where FlexVolume drivers are found (flexvolume.ts); no FlexVolumes when unset. */
  volumePluginDir?: string;
  /** The node's cgroups: pods' hierarchy, allocatable enforcement, process cgroups (cgroups/manager.ts); none when unset. */
  cgroups?: NodeCgroups;
  /** --kernel-memcg-notification: memory.available thresholds watched every pollMs (cgroups/memcg.ts). */
  memcgNotification?: { pollMs?: number };
  log?: (level: 'info' | 'error', message: string) => void;
  /** The structured logger (-v levels, sanitization) for kubelet's key/value log lines. */
  logger?: StructuredLogger;
}

/** The node name kubelet uses: --hostname-override, else the host name, lower-cased. */
export function nodeNameOf(hostnameOverride: string | undefined): string {
  const n = hostnameOverride !== undefined && hostnameOverride.trim() !== '' ? hostnameOverride.trim() : hostname();
  return n.toLowerCase();
}

export class Agent implements ServerHost {
  readonly statusManager = new StatusManager();
  readonly runtime: Runtime;
  readonly syncer: PodSyncer;
  readonly workers: PodWorkers;
  readonly api: ApiMode | undefined;
  /** Services for the pods' service link variables (API-server mode). */
  private readonly services: ApiServiceEnv | undefined;
  /** FlexVolume drivers of --volume-plugin-dir. */
  private readonly flexVolumes: FlexVolumes | undefined;
  servers: AgentServers | undefined;
  manifests: PushSource | undefined;
  private readonly merge = new PodMerge({
    onDuplicate: (pod, source) => this.log('error', `pod ${podFullName(pod)} from source ${source} is a duplicate; ignored`),
  });
  private fileSource: FileSource | undefined;
  private urlSource: UrlSource | undefined;
  private resyncTimer: NodeJS.Timeout | undefined;
  private evictionTimer: NodeJS.Timeout | undefined;
  private housekeepingTimer: NodeJS.Timeout | undefined;
  private volumeStatsTimer: NodeJS.Timeout | undefined;
  /** Each pod's volume usage, measured every --volume-stats-agg-period (uid → VolumeStats of /stats/summary). */
  private readonly volumeStats = new Map<string, Json[]>();
  private readonly evictionManager: EvictionManager | undefined;
  private readonly logManager: ContainerLogManager | undefined;
  private unsubscribe: (() => void) | undefined;
  readonly containerGC: ContainerGC;
  /** kubelet's container deletor (dead containers removed as they die); a runtime of images only. */
  readonly containerDeletor: PodContainerDeletor | undefined;
  readonly imageGC: ImageGC | undefined;
  readonly runtimeState: RuntimeState;
  readonly resourceManagers: ResourceManagers | undefined;
  private gcTimers: NodeJS.Timeout[] = [];
  private sourcesReady = false;
  private stopped = false;
  private readonly startedAt = new Date();
  private certRotation: CertificateRotation | undefined;
  private network: NodeNetwork | undefined;
  private memcg: MemcgNotifier | undefined;

  get nodeName(): string {
    return this.config.nodeName;
  }

  /** The API client (API-server mode), for the servers' webhook authentication and authorization. */
  apiClient(): ApiClient | undefined {
    return this.api?.client;
  }

  constructor(private readonly config: AgentConfig) {
    this.runtime = config.runtime ?? new ProcessRuntime({ allowPrivileged: config.allowPrivileged === true });
    this.api = config.api
      ? new ApiMode(config.api, {
          rootDir: resolve(config.rootDir),
          statusManager: this.statusManager,
          onSnapshot: (s) => this.onSnapshot(s),
          log: (level, m) => this.log(level, m),
          conditions: () => {
            const p = this.evictionManager?.pressure() ?? new Set();
            const notReady = this.runtimeState.errors();
            return {
              ready: notReady.length === 0,
              notReadyReasons: notReady,
              memoryPressure: p.has('MemoryPressure'),
              diskPressure: p.has('DiskPressure'),
              pidPressure: p.has('PIDPressure'),
            };
          },
          ...(this.runtime.images ? { images: async () => nodeImages(await this.runtime.images!.listImages(), this.config.nodeStatusMaxImages ?? 50) } : {}),
          onObjectChange: (_ref, users) => {
            for (const uid of users) this.workers.sync(uid);
          },
        })
      : undefined;
    if (config.volumePluginDir !== undefined && config.volumePluginDir !== '') {
      this.flexVolumes = new FlexVolumes({ pluginDir: config.volumePluginDir, log: (l, m) => this.log(l, m) });
    }
    if (this.api) {
      this.services = new ApiServiceEnv(this.api.client, config.masterServiceNamespace ?? 'default', (err) =>
        this.log('error', `watching services: ${err instanceof Error ? err.message : String(err)}`),
      );
    }
    config.cgroups?.onEvent((type, reason, message) => {
      const node = this.api?.node;
      if (node) this.api?.events.event(node.nodeRef(), type, reason, message);
    });
    const pleg = (this.runtime as Runtime & { plegHealth?: () => string | undefined }).plegHealth?.bind(this.runtime);
    this.runtimeState = new RuntimeState({
      status: () => this.runtimeStatus(),
      ...(pleg ? { healthChecks: [{ name: 'PLEG', check: pleg }] } : {}),
      ...(config.runtimeHealth?.periodMs !== undefined ? { periodMs: config.runtimeHealth.periodMs } : {}),
      ...(config.runtimeHealth?.downAfterMs !== undefined ? { downAfterMs: config.runtimeHealth.downAfterMs } : {}),
      onChange: () => void this.api?.node?.syncStatus(true).catch((err: unknown) => this.log('error', `updating node status: ${String(err)}`)),
      log: (l, m) => this.log(l, m),
    });
    this.containerGC = new ContainerGC({
      runtime: this.runtime,
      policy: config.gc?.containers ?? DEFAULT_CONTAINER_GC,
      // a pod a source still holds keeps its dead containers (within the caps), as one that finished before this agent started
      podExists: (uid) => this.workers.state(uid) !== undefined || this.merge.has(uid),
      allSourcesReady: () => this.sourcesReady,
      log: (l, m) => this.log(l, m),
    });
    if (this.runtime.runsImages === true) {
      this.containerDeletor = new PodContainerDeletor({
        runtime: this.runtime,
        maxPerPodContainer: (config.gc?.containers ?? DEFAULT_CONTAINER_GC).maxPerPodContainer,
        // kubelet's ShouldPodContentBeRemoved: evicted, or deleted and terminated; a pod no worker holds once the sources are ready
        removeAll: (uid) => {
          if (this.workers.state(uid) === undefined && !this.merge.has(uid)) return this.sourcesReady;
          const verdict = this.syncer.verdictOf(uid);
          return (verdict !== undefined && verdict.rejected !== true) || (this.workers.deleted(uid) && this.workers.state(uid) === 'terminated');
        },
        log: (l, m) => this.log(l, m),
      });
    }
    if (this.runtime.images) {
      const images = this.runtime.images;
      this.imageGC = new ImageGC({
        images,
        containers: () => this.runtime.listContainers(),
        policy: config.gc?.images ?? DEFAULT_IMAGE_GC,
        fsStats: async () => {
          const dir = images.imageFsDir ? await images.imageFsDir().catch(() => undefined) : undefined;
          return dir !== undefined ? fsSize(dir) : undefined;
        },
        event: (type, reason, message) => {
          const node = this.api?.node;
          if (node) this.api?.events.event(node.nodeRef(), type, reason, message);
        },
        log: (l, m) => this.log(l, m),
      });
    }
    this.resourceManagers = config.resourceManagers ? new ResourceManagers(config.resourceManagers) : undefined;
    if (config.eviction && config.eviction.thresholds.length > 0) {
      this.evictionManager = new EvictionManager({ ...config.eviction, reclaimNodeLevel: (signal) => this.reclaimNodeLevel(signal) });
    }
    if (config.containerLogs) this.logManager = new ContainerLogManager({ runtime: this.runtime, ...config.containerLogs, log: (l, m) => this.log(l, m) });
    this.syncer = new PodSyncer({
      runtime: this.runtime,
      statusManager: this.statusManager,
      rootDir: resolve(config.rootDir),
      allowPrivileged: config.allowPrivileged === true,
      events: this.api?.events ?? NO_EVENTS,
      ...(config.nodeIP !== undefined ? { hostIP: config.nodeIP } : {}),
      ...(config.backoff ? { backoff: config.backoff } : {}),
      ...(config.podConfig ? { podConfig: config.podConfig } : {}),
      ...(config.imagePulls ? { imagePulls: config.imagePulls } : {}),
      ...(this.api ? { objects: this.api.objects } : {}),
      ...(this.services ? { services: this.services } : {}),
      ...(config.credentials ? { credentials: config.credentials } : {}),
      ...(this.flexVolumes ? { flexVolumes: this.flexVolumes } : {}),
      ...(config.allocatable ? { allocatable: config.allocatable } : {}),
      ...(this.resourceManagers ? { resourceManagers: this.resourceManagers } : {}),
      resync: (uid) => this.workers.sync(uid),
      probeTerminationGracePeriod: config.featureGates?.ProbeTerminationGracePeriod === true,
      ephemeralContainers: config.featureGates?.EphemeralContainers !== false,
      keepTerminatedPodVolumes: config.keepTerminatedPodVolumes === true,
      ...(config.mounterPath !== undefined ? { mounterPath: config.mounterPath } : {}),
      log: (l, m) => this.log(l, m),
      ...(config.logger ? { logger: config.logger } : {}),
      // the syncer keeps one dead instance per container; a policy keeping more needs it to leave them (kubelet's
      // container deletor keeps max(--maximum-dead-containers-per-container, 1): -1 keeps one as well)
      leaveDeadInstancesToGC: (config.gc?.containers?.maxPerPodContainer ?? 1) > 1,
      ...(config.cgroups ? { beforeSandbox: (pod: Pod) => config.cgroups!.ensurePod(pod) } : {}),
      nodeRef: () => this.api?.node?.nodeRef(),
    });
    this.workers = new PodWorkers(this.syncer, {
      onError: (pod, err) => this.log('error', `sync of pod ${podFullName(pod)} failed: ${err instanceof Error ? err.message : String(err)}`),
      onStateChange: (pod, state) => {
        this.log('info', `pod ${podFullName(pod)} (${pod.metadata.uid}): ${state}`);
        this.config.cgroups?.podsChanged();
      },
      ...(this.api ? { beforeCleanup: (pod: Pod) => this.api!.podTerminated(pod) } : {}),
    });
  }

  /**
   * Starts the runtime event feed, the periodic resync, the servers, API mode and the sources;
   * resolves after the first read of each local source (API registration goes on in the background).
   */
  async start(): Promise<void> {
    const root = resolve(this.config.rootDir);
    await mkdir(join(root, 'pods'), { recursive: true, mode: 0o750 });
    this.unsubscribe = this.runtime.onContainerEvent((e) => {
      // A container only starts through a pass of its pod's worker, which reads the container's state
      // after the start and writes the pod's status from it: a start needs no pass of its own.
      if (e.type === 'CONTAINER_STARTED_EVENT') return;
      // kubelet's ContainerDied: the pod's dead containers beyond the deletor's count go (cleanUpContainersInPod)
      if (e.type === 'CONTAINER_STOPPED_EVENT') this.containerDeletor?.containerDied(e.containerId);
      const uid = this.syncer.uidOfSandbox(e.podSandboxId);
      if (uid !== undefined) this.workers.sync(uid);
    });
    // A CRI runtime's first relist (the PLEG) before the node's first state
    await (this.runtime as Runtime & { relistNow?: () => Promise<void> }).relistNow?.();
    await this.runtimeState.start();
    // the resource managers' state files (a mismatch stops the agent) and the CPU reconcile loop
    this.resourceManagers?.start({
      activePods: () => this.activePods(),
      podStatus: (uid) => this.statusManager.getPodStatus(uid),
      sourcesReady: () => this.sourcesReady,
      updateContainerCpuset: async (id, cpus) => {
        if (!this.runtime.updateContainerResources) throw new Error('the runtime cannot update container resources');
        await this.runtime.updateContainerResources(id, { cpusetCpus: cpus });
      },
    });
    if (this.config.network) {
      const api = this.api;
      this.network = new NodeNetwork(this.config.network, {
        runtime: this.runtime,
        ...(api ? { nodeSpec: () => api.node?.current?.spec as Json | undefined } : {}),
        log: (l, m) => this.log(l, m),
      });
      await this.network.start();
    }
    // kubelet's container manager: the pods' cgroups and node allocatable before any pod runs
    await this.config.cgroups?.start(() => this.activePods().filter((p) => !isTerminal(this.statusManager.getPodStatus(p.metadata.uid)?.phase ?? 'Pending')));
    // The runtime's own processes (the process runtime's spawner helpers) start from the agent as it now is,
    // in its cgroup (--orchlet-cgroups), with its rlimits and oom_score_adj, which the containers they start
    // inherit as they did from the agent itself; no pod has reached the runtime yet.
    await this.runtime.start?.();
    const drivers = (await this.flexVolumes?.probeAll()) ?? [];
    if (drivers.length > 0) this.log('info', `FlexVolume drivers: ${drivers.join(', ')}`);
    this.startGarbageCollection();
    // Kept referenced: this timer is what keeps a standalone agent alive with no pods.
    this.resyncTimer = setInterval(() => this.workers.syncAll(), Math.max(1000, this.config.syncFrequencyMs || 60_000));
    if (this.config.server) await this.startServers(this.config.server);
    this.api?.start(this.servers?.port ?? this.config.server?.port ?? 0);
    this.services?.start();
    const api = this.api;
    const apiConfig = this.config.api;
    if (this.config.certificates && api && apiConfig) {
      this.certRotation = await startCertificateRotation(this.config.certificates, {
        nodeName: this.config.nodeName,
        hosts: () => [apiConfig.host.hostname, ...apiConfig.node.nodeIPs],
        client: () => api.client,
        ...(this.servers ? { setServingPair: (p: { cert: string; key: string }) => this.servers?.setCertificate(p.cert, p.key) } : {}),
        log: (level, m) => this.log(level, m),
      });
    }
    if (this.evictionManager) {
      const period = this.config.eviction?.monitoringPeriodMs ?? 10_000;
      const start = (): void => {
        if (this.stopped) return;
        this.evictionTimer = setInterval(() => void this.evictionPass(), period);
        this.evictionTimer.unref();
      };
      const delay = this.config.eviction?.firstPassDelayMs ?? 0;
      if (delay > 0) setTimeout(start, delay).unref();
      else start();
      if (!this.config.eviction?.firstPassDelayMs) await this.evictionPass();
      if (this.config.memcgNotification && this.config.eviction) {
        this.memcg = new MemcgNotifier({
          fs: this.config.cgroups?.fs ?? new CgroupFs(),
          thresholds: this.config.eviction.thresholds,
          ...(this.config.cgroups?.allocatableCgroup !== undefined ? { podsCgroup: this.config.cgroups.allocatableCgroup } : {}),
          onCrossing: (m) => {
            this.log('info', m);
            void this.evictionPass();
          },
          ...(this.config.memcgNotification.pollMs !== undefined ? { pollMs: this.config.memcgNotification.pollMs } : {}),
          log: (l, m) => this.log(l, m),
        });
        await this.memcg.start();
      }
    }
    this.logManager?.start();
    const statsPeriod = this.config.volumeStatsAggPeriodMs ?? 0;
    if (statsPeriod > 0) {
      void this.measureVolumes();
      this.volumeStatsTimer = setInterval(() => void this.measureVolumes(), statsPeriod);
      this.volumeStatsTimer.unref();
    }
    if (this.config.podManifestPath !== undefined && this.config.podManifestPath !== '') {
      this.fileSource = new FileSource({
        path: resolve(this.config.podManifestPath),
        nodeName: this.config.nodeName,
        periodMs: this.config.fileCheckFrequencyMs,
        onSnapshot: (s) => this.onSnapshot(s),
        onError: (path, err) => this.log('error', `static pod manifest ${path} skipped: ${err.message}`),
      });
      await this.fileSource.start();
    }
    if (this.config.manifestURL !== undefined && this.config.manifestURL !== '') {
      this.urlSource = new UrlSource({
        url: this.config.manifestURL,
        headers: this.config.manifestURLHeaders ?? {},
        nodeName: this.config.nodeName,
        periodMs: this.config.httpCheckFrequencyMs ?? 20_000,
        onSnapshot: (s) => this.onSnapshot(s),
        onError: (err) => this.log('error', `manifest URL: ${err.message}`),
      });
      await this.urlSource.start();
    }
    // Housekeeping (kubelet's HandlePodCleanups): once every source has said what exists, sandboxes
    // of pods no source knows (left by an earlier agent) are removed.
    void (this.api?.sourceReady ?? Promise.resolve()).then(() => {
      this.sourcesReady = true;
      if (this.stopped) return;
      void this.housekeeping();
      this.housekeepingTimer = setInterval(() => void this.housekeeping(), 10_000);
      this.housekeepingTimer.unref();
    });
  }

  /** The runtime's conditions (RuntimeReady, NetworkReady); a runtime without them is ready when it answers its version. */
  private async runtimeStatus(): Promise<RuntimeConditionLike[]> {
    const r = this.runtime as Runtime & { runtimeConditions?: () => Promise<RuntimeConditionLike[]> };
    if (r.runtimeConditions) return r.runtimeConditions();
    await this.runtime.version();
    return [
      { type: 'RuntimeReady', status: true },
      { type: 'NetworkReady', status: true },
    ];
  }

  /** kubelet's StartGarbageCollection: dead containers every minute, images every 5 minutes, the first passes at once. */
  private startGarbageCollection(): void {
    const every = (ms: number, pass: () => Promise<void>): void => {
      void pass();
      const t = setInterval(() => void pass(), ms);
      t.unref();
      this.gcTimers.push(t);
    };
    every(this.config.gc?.containerPeriodMs ?? 60_000, async () => {
      if (this.stopped) return;
      const r = await this.containerGC.collect().catch((err: unknown) => {
        this.log('error', `container garbage collection failed: ${err instanceof Error ? err.message : String(err)}`);
        return undefined;
      });
      if (r && r.containers.length + r.sandboxes.length > 0) {
        this.log('info', `container garbage collection removed ${r.containers.length} containers and ${r.sandboxes.length} sandboxes`);
      }
    });
    const imageGC = this.imageGC;
    if (imageGC) {
      every(this.config.gc?.imagePeriodMs ?? 300_000, async () => {
        if (this.stopped) return;
        try {
          await imageGC.detect();
          const r = await imageGC.collect();
          if (r.removed.length > 0) this.log('info', `image garbage collection removed ${r.removed.length} images (${r.freedBytes} bytes)`);
        } catch (err) {
          this.log('error', `image garbage collection failed: ${err instanceof Error ? err.message : String(err)}`);
        }
      });
    }
  }

  /**
   * Removes the runtime's sandboxes of pods that no source holds (orphans of an earlier agent), and
   * unmounts the tmpfs volumes left under --root-dir by pods no worker holds (on a runtime that
   * adopts pods the syncer's start-up sweep keeps them all: those of pods deleted meanwhile go here).
   */
  async housekeeping(): Promise<void> {
    const known = new Set(this.workers.uids());
    const sandboxes = await this.runtime.listPodSandbox().catch(() => []);
    for (const s of sandboxes) {
      const uid = s.labels[LABEL_POD_UID];
      // a pod that finished before this agent started has no worker, but its source still holds it (kubelet keeps its containers for the GC)
      if (uid === undefined || known.has(uid) || this.merge.has(uid) || this.stopped) continue;
      this.log('info', `removing sandbox ${s.id} of pod ${s.metadata.namespace}/${s.metadata.name} (${uid}): no source holds the pod`);
      await this.runtime.stopPodSandbox(s.id, 0).catch(() => undefined);
      await this.runtime.removePodSandbox(s.id).catch((err: unknown) => this.log('error', `removing sandbox ${s.id}: ${String(err)}`));
    }
    if (this.stopped) return;
    const stillKnown = new Set([...known, ...this.workers.uids()]);
    const gone = await unmountOrphans(resolve(this.config.rootDir), stillKnown).catch(() => []);
    for (const m of gone) this.log('info', `unmounted ${m}: no source holds its pod`);
    const cgroups = (await this.config.cgroups?.cleanupOrphans((uid) => this.workers.state(uid) !== undefined).catch(() => [])) ?? [];
    for (const c of cgroups) this.log('info', `removed the cgroup ${c}: no source holds its pod`);
  }

  /** One measurement of every pod's volumes (--volume-stats-agg-period), as kubelet's volume stats cache. */
  private async measureVolumes(): Promise<void> {
    const seen = new Set<string>();
    for (const { pod } of [...this.statusManager.all().values()]) {
      if (this.stopped) return;
      const uid = pod.metadata.uid;
      seen.add(uid);
      const podDir = this.syncer.podDir(uid);
      const stats: Json[] = [];
      for (const v of (pod.spec.volumes ?? []) as Json[]) {
        const dir = volumePath(podDir, v);
        if (dir === undefined || v.hostPath !== undefined) continue; // kubelet measures no hostPath volume
        const [usage, fs] = await Promise.all([volumeUsage(dir), fsSize(dir).catch(() => undefined)]);
        stats.push({
          time: rfc3339(new Date()),
          ...(fs ? { availableBytes: fs.available, capacityBytes: fs.capacity } : {}),
          usedBytes: usage.bytes,
          ...(fs ? { inodesFree: fs.inodesFree, inodes: fs.inodes } : {}),
          inodesUsed: usage.inodes,
          name: String(v.name),
        });
      }
      this.volumeStats.set(uid, stats);
    }
    for (const uid of this.volumeStats.keys()) if (!seen.has(uid)) this.volumeStats.delete(uid);
  }

  /** The UIDs of the pods that run or may run (admitted, not finished, not being deleted): kubelet's active pods. */
  private activeUids(): string[] {
    return this.workers.uids().filter((uid) => this.workers.state(uid) === 'syncing' && this.syncer.verdictOf(uid) === undefined);
  }

  /** kubelet's active pods, as the merge holds them: read-only for every caller. */
  private activePods(): Pod[] {
    return this.merge.peekPods(new Set(this.activeUids()));
  }

  /**
   * kubelet's pod admission: under node pressure only what eviction admits; beyond the node's pod
   * capacity (--max-pods, --pods-per-core) nothing. A refused pod fails with reason Evicted or
   * OutOfpods (a Warning event with the same reason) and never runs.
   */
  private admit(pod: Pod): boolean {
    const pressure = this.evictionManager?.pressure() ?? new Set();
    const refusal = admitUnderPressure(pod, pressure);
    let reason = 'Evicted';
    let message = refusal;
    const sysctl = message === undefined ? this.config.sysctls?.check(pod) : undefined;
    if (sysctl !== undefined) {
      reason = 'SysctlForbidden';
      message = `forbidden sysctl: ${sysctl}`;
    }
    if (message === undefined) {
      const capacity = this.config.maxPods ?? 110;
      const used = this.activeUids().filter((uid) => uid !== pod.metadata.uid).length;
      if (used + 1 > capacity) {
        reason = 'OutOfpods';
        message = `Node didn't have enough resource: pods, requested: 1, used: ${used}, capacity: ${capacity}`;
      }
    }
    if (message === undefined) {
      // kubelet's resource-allocating admit handler (topology, CPU and memory managers)
      const refused = this.resourceManagers?.admit(pod);
      if (refused) ({ reason, message } = refused);
    }
    if (message === undefined) return true;
    const { namespace, name, uid } = pod.metadata;
    this.log('info', `pod ${podFullName(pod)} (${uid}) refused: ${reason}: ${message}`);
    this.api?.events.event({ kind: 'Pod', apiVersion: 'v1', namespace, name, uid }, 'Warning', reason, message);
    this.syncer.setVerdict(uid, { phase: 'Failed', reason, message: `Pod ${message}`, rejected: true });
    return false;
  }

  /** One pass of the eviction manager: measure, report pressure, evict at most one pod. */
  private async evictionPass(): Promise<void> {
    const em = this.evictionManager;
    if (!em || this.stopped) return;
    try {
      const decision = await em.synchronize(await this.observeNode(), () => this.podUsages());
      if (!decision.evict) return;
      const { pod, graceSeconds, message } = decision.evict;
      const { namespace, name, uid } = pod.metadata;
      this.log('info', `evicting pod ${podFullName(pod)} (${uid}): ${message}`);
      this.api?.events.event({ kind: 'Pod', apiVersion: 'v1', namespace, name, uid }, 'Warning', 'Evicted', message);
      this.syncer.setVerdict(uid, { phase: 'Failed', reason: 'Evicted', message, killGraceSeconds: graceSeconds });
      this.workers.sync(uid);
    } catch (err) {
      this.log('error', `eviction manager: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  /** The eviction signals of this host now. */
  private async observeNode(): Promise<Observations> {
    const imageFs = this.runtime.images?.imageFsDir ? await this.runtime.images.imageFsDir().catch(() => undefined) : undefined;
    const obs = await observe(resolve(this.config.rootDir), imageFs);
    const allocatable = await this.config.cgroups?.allocatableMemory();
    if (allocatable) obs['allocatableMemory.available'] = allocatable;
    return obs;
  }

  /**
   * kubelet's reclaimNodeLevelResources: under pressure on the image filesystem (or on the node's,
   * when the images live on it too) dead containers and then unused images go, each past its
   * minimum age (--minimum-container-ttl-duration, --minimum-image-ttl-duration); answers the
   * observations afterwards, or undefined when nothing can be reclaimed for `signal`.
   */
  private async reclaimNodeLevel(signal: Signal): Promise<Observations | undefined> {
    if (!signal.startsWith('imagefs.') && !signal.startsWith('nodefs.')) return undefined;
    const images = this.runtime.images;
    const imageFs = images?.imageFsDir ? await images.imageFsDir().catch(() => undefined) : undefined;
    if (!this.imageGC || imageFs === undefined) return undefined;
    const [a, b] = await Promise.all([stat(imageFs), stat(resolve(this.config.rootDir))]);
    const dedicated = a.dev !== b.dev;
    if (!(signal.startsWith('imagefs.') ? dedicated : signal.startsWith('nodefs.') && !dedicated)) return undefined;
    this.log('info', 'eviction manager: attempting to reclaim ephemeral-storage');
    const c = await this.containerGC.deleteAllUnused().catch((err: unknown) => {
      this.log('error', `eviction manager: deleting unused containers: ${err instanceof Error ? err.message : String(err)}`);
      return undefined;
    });
    const i = await this.imageGC.deleteUnused().catch((err: unknown) => {
      this.log('error', `eviction manager: deleting unused images: ${err instanceof Error ? err.message : String(err)}`);
      return undefined;
    });
    this.log('info', `eviction manager: reclaimed ${c?.containers.length ?? 0} dead containers and ${i?.removed.length ?? 0} images (${i?.freedBytes ?? 0} bytes)`);
    return this.observeNode();
  }

  /** What each active pod uses now (eviction ranking). */
  private async podUsages(): Promise<PodUsage[]> {
    const out: PodUsage[] = [];
    const running = await this.runtime.listContainers({ state: 'CONTAINER_RUNNING' }).catch(() => []);
    for (const pod of this.activePods()) {
      const u: PodUsage = { pod, disk: await dirUsage(this.syncer.podDir(pod.metadata.uid)) };
      if (this.runtime.containerStats) {
        let memory = 0;
        let processes = 0;
        for (const c of running.filter((x) => x.labels[LABEL_POD_UID] === pod.metadata.uid)) {
          const st = await this.runtime.containerStats(c.id).catch(() => undefined);
          memory += st?.memoryBytes ?? 0;
          processes += st?.processes ?? 0;
        }
        u.memory = memory;
        u.processes = processes;
      }
      out.push(u);
    }
    return out;
  }

  private async startServers(s: AgentServerConfig): Promise<void> {
    if (s.enableServer) {
      this.manifests = new PushSource(join(resolve(this.config.rootDir), 'manifests'), this.config.nodeName, (snap) => this.onSnapshot(snap), (name, err) =>
        this.log('error', `submitted manifest ${name} skipped: ${err.message}`),
      );
      await this.manifests.start();
    }
    const pair = s.enableServer
      ? await agentServingCert({
          certDir: s.certDir,
          ...(s.tlsCertFile !== undefined ? { certFile: s.tlsCertFile } : {}),
          ...(s.tlsPrivateKeyFile !== undefined ? { keyFile: s.tlsPrivateKeyFile } : {}),
          hostname: this.config.api?.host.hostname ?? hostname().toLowerCase(),
          ips: this.config.nodeIP !== undefined ? [this.config.nodeIP] : [],
        })
      : { cert: '', key: '' };
    this.servers = new AgentServers(this, { ...s, ...pair });
    await this.servers.start();
  }

  /** Feeds one snapshot through the merge to the workers (sources call this; tests may too). */
  onSnapshot(snapshot: PodSnapshot): void {
    if (this.stopped) return;
    for (const u of this.merge.apply(snapshot)) this.dispatch(u);
    if (snapshot.source !== 'api') this.api?.mirrors.setStatic(this.merge.pods().filter(isStatic));
  }

  /**
   * Stops the sources, then either terminates every pod gracefully and shuts the runtime down, or
   * (a runtime whose containers outlive the agent, unless stopPodsOnExit) leaves them running for
   * the next agent to adopt; then the servers.
   */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.fileSource?.stop();
    this.urlSource?.stop();
    this.certRotation?.stop();
    this.network?.stop();
    this.api?.stop();
    this.services?.stop();
    clearInterval(this.resyncTimer);
    clearInterval(this.evictionTimer);
    clearInterval(this.housekeepingTimer);
    clearInterval(this.volumeStatsTimer);
    for (const t of this.gcTimers) clearInterval(t);
    this.runtimeState.stop();
    this.resourceManagers?.stop();
    this.logManager?.stop();
    this.memcg?.stop();
    this.config.cgroups?.stop();
    this.syncer.prober.stopAll();
    const detach = this.runtime.detach && this.config.stopPodsOnExit !== true;
    if (detach) {
      await this.workers.idle();
      this.unsubscribe?.();
      await this.runtime.detach!();
    } else {
      await this.workers.terminateAll();
      this.unsubscribe?.();
      await this.runtime.shutdown(0);
    }
    await this.servers?.stop();
    this.api?.close();
  }

  private dispatch(u: PodUpdate): void {
    // kubelet's syncLoopIteration: one -v=2 line per update (REMOVE is our DELETE: the pods left their source)
    const v2 = this.config.logger?.v(2);
    if (v2?.enabled) v2.info(`SyncLoop ${u.op === 'DELETE' ? 'REMOVE' : u.op}`, 'source', u.source, 'pods', kObjs(u.pods));
    for (const pod of u.pods) {
      const uid = pod.metadata.uid;
      if (u.op !== 'DELETE' && pod.metadata.deletionTimestamp !== undefined) {
        if (this.workers.state(uid) === undefined) {
          // Never run here (or already done): nothing to stop, only the deletion to finish.
          if (u.source === 'api') void this.api?.deletePod(pod).catch((err: unknown) => this.log('error', `deleting pod ${podFullName(pod)}: ${String(err)}`));
          continue;
        }
        this.log('info', `pod ${podFullName(pod)} (${uid}) is being deleted, grace period ${pod.metadata.deletionGracePeriodSeconds ?? 'default'}`);
        this.workers.update('DELETE', pod, pod.metadata.deletionGracePeriodSeconds);
        continue;
      }
      if (u.op === 'ADD' && u.source === 'api' && isTerminal(pod.status?.phase ?? 'Pending')) continue; // finished before this agent saw it
      if (u.op === 'ADD' && this.workers.state(uid) === undefined) this.admit(pod);
      this.workers.update(u.op, pod);
    }
  }

  private log(level: 'info' | 'error', message: string): void {
    this.config.log?.(level, message);
  }

  // ---- ServerHost: what the agent's servers show ----

  /** /metrics: client-go's rest_client_* metrics of the API clients (none in standalone mode). */
  metrics(): string {
    return this.api?.restMetrics.render() ?? '';
  }

  pods(): Pod[] {
    return this.merge.pods().map((p) => {
      const status = this.statusManager.getPodStatus(p.metadata.uid);
      return status ? { ...p, status } : p;
    });
  }

  podByName(namespace: string, name: string): Pod | undefined {
    return this.pods().find((p) => p.metadata.namespace === namespace && p.metadata.name === name);
  }

  async logTarget(pod: Pod, container: string, previous: boolean): Promise<LogTarget | string> {
    const found = logContainerID(this.statusManager.getPodStatus(pod.metadata.uid) ?? pod.status, pod.metadata.name, container, previous);
    if ('error' in found) return found.error;
    const id = found.id.replace(/^[a-z]+:\/\//, '');
    const st = await this.runtime.containerStatus(id).catch(() => undefined);
    if (!st) return `container "${container}" in pod "${pod.metadata.name}" is not available`;
    return {
      path: st.logPath,
      running: async () => (await this.runtime.containerStatus(id).catch(() => undefined))?.state === 'CONTAINER_RUNNING',
    };
  }

  async runningPods(): Promise<Json[]> {
    const sandboxes = await this.runtime.listPodSandbox({ state: 'SANDBOX_READY' });
    const containers = await this.runtime.listContainers({ state: 'CONTAINER_RUNNING' });
    return sandboxes
      .map((s) => ({
        metadata: { name: s.metadata.name, namespace: s.metadata.namespace, uid: s.metadata.uid, creationTimestamp: null },
        spec: { containers: containers.filter((c) => c.podSandboxId === s.id).map((c) => ({ name: c.metadata.name, image: c.image, resources: {} })) },
        status: {},
      }))
      .filter((p) => p.spec.containers.length > 0);
  }

  /** A basic /stats/summary: node memory and filesystem, and the pods with their containers. */
  async statsSummary(): Promise<Json> {
    const now = rfc3339(new Date());
    const fs = await fsSize(resolve(this.config.rootDir));
    const mem = { time: now, availableBytes: freemem(), usageBytes: totalmem() - freemem(), workingSetBytes: totalmem() - freemem() };
    const fsStats = { time: now, availableBytes: fs.available, capacityBytes: fs.capacity, usedBytes: fs.capacity - fs.available, inodesFree: fs.inodesFree, inodes: fs.inodes, inodesUsed: fs.inodes - fs.inodesFree };
    const pods = [...this.statusManager.all().values()].map(({ pod, status }) => ({
      podRef: { name: pod.metadata.name, namespace: pod.metadata.namespace, uid: pod.metadata.uid },
      startTime: status.startTime,
      containers: status.containerStatuses.filter((c) => c.state.running).map((c) => ({ name: c.name, startTime: c.state.running?.startedAt })),
      ...(this.volumeStats.has(pod.metadata.uid) ? { volume: this.volumeStats.get(pod.metadata.uid) } : {}),
    }));
    return {
      node: { nodeName: this.config.nodeName, systemContainers: [], startTime: rfc3339(this.startedAt), memory: mem, fs: fsStats, runtime: { imageFs: fsStats } },
      pods,
    };
  }
}
