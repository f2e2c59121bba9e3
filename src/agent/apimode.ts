// API-server mode, wired (orchlet with --orchconfig): three clients on one connection pool, each
// with its own rate limiter as kubelet has them (the main one at --orch-api-qps/--orch-api-burst,
// events at --event-qps/--event-burst, heartbeats unlimited); the Node and its Lease; the pods
// bound to the node as a source; mirror pods for static pods; pod statuses posted back; and pods
// deleted on the server once their containers stopped.
import { ApiClient, isConflict, isNotFound, type Json } from './client/client.js';
import { RestClientMetrics } from './client/metrics.js';
import type { ClientConfig } from './client/kubeconfig.js';
import { EventRecorder } from './events.js';
import { MirrorManager } from './mirror.js';
import type { ConditionInput, HostFacts, NodeSettings } from './node/nodestatus.js';
import { ApiObjectSource, type ObjectRef } from './objects.js';
import { NodeManager } from './node/registrar.js';
import { ApiSource } from './sources/api.js';
import type { PodSnapshot } from './sources/merge.js';
import type { StatusManager } from './status-manager.js';
import { StatusSync, type StatusTarget } from './status-sync.js';
import type { Pod } from './types.js';

export interface ApiModeConfig {
  client: ClientConfig;
  qps: number;
  burst: number;
  eventQPS: number;
  eventBurst: number;
  /** The Node as registered, except the port (the bound --port is filled in at start). */
  node: Omit<NodeSettings, 'port'>;
  host: HostFacts;
  registerNode: boolean;
  statusUpdateFrequencyMs: number;
  statusReportFrequencyMs?: number;
  leaseDurationSeconds: number;
}

export interface ApiModeDeps {
  rootDir: string;
  statusManager: StatusManager;
  onSnapshot: (s: PodSnapshot) => void;
  log: (level: 'info' | 'error', message: string) => void;
  /** The node's conditions now (eviction pressure); default: ready, no pressure. */
  conditions?: () => ConditionInput;
  /** The node status images list; none when unset. */
  images?: () => Promise<Json[]>;
  /** A ConfigMap or Secret a pod uses changed. */
  onObjectChange?: (ref: ObjectRef, users: string[]) => void;
}

export class ApiMode {
  readonly client: ApiClient;
  readonly events: EventRecorder;
  /** client-go's rest_client_* metrics of the three clients (/metrics). */
  readonly restMetrics = new RestClientMetrics();
  private readonly heartbeat: ApiClient;
  private nodeManager: NodeManager | undefined;
  private readonly source: ApiSource;
  readonly mirrors: MirrorManager;
  readonly statusSync: StatusSync;
  /** ConfigMaps, Secrets and service account tokens of the pods. */
  readonly objects: ApiObjectSource;
  /** Resolves once the pods bound to the node were listed (the API source is ready). */
  readonly sourceReady: Promise<void>;
  private markSourceReady!: () => void;

  constructor(
    private readonly c: ApiModeConfig,
    private readonly d: ApiModeDeps,
  ) {
    const ua = `orchlet/${c.node.kubeletVersion} (${process.platform}/${process.arch})`;
    // client-go's globalThrottledLogger at level 0: one throttling message every 10 s at most
    let throttleLogged = -Infinity;
    const onThrottle = (message: string): void => {
      if (performance.now() - throttleLogged < 10_000) return;
      throttleLogged = performance.now();
      d.log('info', message);
    };
    this.client = new ApiClient(c.client, { userAgent: ua, qps: c.qps, burst: c.burst, metrics: this.restMetrics, onThrottle });
    this.heartbeat = this.client.withLimiter(0, 0);
    const eventClient = this.client.withLimiter(c.eventQPS, c.eventBurst);
    this.events = new EventRecorder(eventClient, c.node.nodeName, (m) => d.log('error', m));
    this.source = new ApiSource(this.client, {
      nodeName: c.node.nodeName,
      onSnapshot: d.onSnapshot,
      onMirrors: (m) => this.mirrors.setMirrors(m),
      onError: (err) => d.log('error', `watching pods: ${err instanceof Error ? err.message : String(err)}`),
    });
    this.mirrors = new MirrorManager({
      client: this.client,
      nodeName: c.node.nodeName,
      nodeUID: () => this.nodeManager?.nodeUID,
      onMirror: () => {
        for (const uid of d.statusManager.uids()) this.statusSync.mark(uid);
      },
      log: d.log,
    });
    this.statusSync = new StatusSync({ client: this.client, statusManager: d.statusManager, target: (p) => this.target(p), log: d.log });
    this.objects = new ApiObjectSource(this.client, (ref) => d.onObjectChange?.(ref, this.objects.usersOf(ref)), d.log);
    this.sourceReady = new Promise((r) => (this.markSourceReady = r));
  }

  get node(): NodeManager | undefined {
    return this.nodeManager;
  }

  /** Starts registration and heartbeats (in the background), the pod watch, mirrors and status posting. */
  start(port: number): void {
    this.nodeManager = new NodeManager({
      client: this.heartbeat,
      settings: { ...this.c.node, port },
      host: this.c.host,
      rootDir: this.d.rootDir,
      registerNode: this.c.registerNode,
      statusUpdateFrequencyMs: this.c.statusUpdateFrequencyMs,
      ...(this.c.statusReportFrequencyMs !== undefined ? { statusReportFrequencyMs: this.c.statusReportFrequencyMs } : {}),
      leaseDurationSeconds: this.c.leaseDurationSeconds,
      conditions: this.d.conditions ?? (() => ({ ready: true })),
      ...(this.d.images ? { images: this.d.images } : {}),
      events: this.events,
      log: this.d.log,
    });
    this.nodeManager.onRegistered(() => this.mirrors.reconcile());
    void this.nodeManager.start();
    void this.source.start().then(() => this.markSourceReady());
    this.mirrors.start();
    this.statusSync.start();
  }

  stop(): void {
    this.nodeManager?.stop();
    this.source.stop();
    this.objects.stop();
    this.mirrors.stop();
    this.statusSync.stop();
  }

  /** Releases the connections (after stop and the last requests). */
  close(): void {
    this.client.close();
  }

  /** Where the status of a pod is posted: itself for API pods, the mirror for static pods. */
  target(pod: Pod): StatusTarget | undefined {
    if (isStatic(pod)) {
      const m = this.mirrors.mirrorOf(pod);
      if (!m) return undefined;
      const meta = m.metadata as Json;
      const rv = meta.resourceVersion;
      return { namespace: String(meta.namespace), name: String(meta.name), uid: String(meta.uid), current: (m.status ?? {}) as Json, ...(typeof rv === 'string' ? { resourceVersion: rv } : {}) };
    }
    const current = this.source.get(pod.metadata.namespace, pod.metadata.name);
    if (current && (current.metadata as Json).uid !== pod.metadata.uid) return undefined;
    const rv = ((current ?? pod).metadata as Json).resourceVersion;
    return {
      namespace: pod.metadata.namespace,
      name: pod.metadata.name,
      uid: pod.metadata.uid,
      current: ((current ?? pod).status ?? {}) as Json,
      ...(typeof rv === 'string' ? { resourceVersion: rv } : {}),
    };
  }

  /** A deleted API pod whose containers stopped: post its final status, then delete it for good. */
  async podTerminated(pod: Pod): Promise<void> {
    if (isStatic(pod) || pod.metadata.deletionTimestamp === undefined) return;
    await this.statusSync.flush(pod.metadata.uid);
    await this.deletePod(pod);
  }

  /** DELETE with grace period 0 and a uid precondition (kubelet's status manager, canBeDeleted). */
  async deletePod(pod: Pod): Promise<void> {
    try {
      await this.client.delete(`/api/v1/namespaces/${pod.metadata.namespace}/pods/${pod.metadata.name}`, {
        gracePeriodSeconds: 0,
        preconditions: { uid: pod.metadata.uid },
      });
    } catch (err) {
      if (!isNotFound(err) && !isConflict(err)) throw err;
    }
  }
}

/** Static pods carry kubernetes.io/config.source of a non-API source. */
export function isStatic(pod: Pod): boolean {
  const s = pod.metadata.annotations?.['kubernetes.io/config.source'];
  return s !== undefined && s !== 'api';
}
