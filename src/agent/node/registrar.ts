// Registration of the Node and its heartbeats (kubelet's registerWithAPIServer, syncNodeStatus and
// the node lease controller), on the heartbeat client (no client-side rate limit, as kubelet's).
//
//   register   POST the Node (labels, spec, full status); when it exists already, GET it and patch the
//              standard labels back if they differ, and the controller-managed-attach-detach annotation
//              to what --enable-controller-attach-detach says. Retried with a back-off of 100 ms doubling to 7 s.
//   status     every --node-status-update-frequency: GET the Node, compute the status, and PUT
//              nodes/<name>/status when it changed or the report frequency (5 min) passed since the
//              last post (kubelet's nodeStatusReportFrequency with the lease on). A Node that is gone
//              (404) is registered again.
//   lease      kube-node-lease/<node> renewed every leaseDuration/4 (10 s for 40 s), owned by the Node.
import type { ApiClient, Json } from '../client/client.js';
import { isAlreadyExists, isConflict, isNotFound } from '../client/client.js';
import type { EventSink } from '../events.js';
import { fsSize } from './hostinfo.js';
import {
  initialNode,
  nodeConditions,
  nodeLease,
  nodeStatus,
  nodeStatusChanged,
  type ConditionInput,
  type HostFacts,
  type NodeSettings,
} from './nodestatus.js';

export interface NodeManagerOptions {
  client: ApiClient;
  settings: NodeSettings;
  host: HostFacts;
  rootDir: string;
  registerNode: boolean;
  statusUpdateFrequencyMs: number;
  statusReportFrequencyMs?: number;
  leaseDurationSeconds: number;
  conditions: () => ConditionInput;
  /** The node status images list (runtimes with an image service); none when unset. */
  images?: () => Promise<Json[]>;
  events: EventSink;
  log: (level: 'info' | 'error', message: string) => void;
  now?: () => Date;
}

/** --enable-controller-attach-detach: set on the Node when on, removed from an existing Node when off. */
const CMAD_ANNOTATION = 'volumes.kubernetes.io/controller-managed-attach-detach';

const STANDARD_LABELS = ['kubernetes.io/hostname', 'kubernetes.io/os', 'kubernetes.io/arch', 'beta.kubernetes.io/os', 'beta.kubernetes.io/arch'];

export class NodeManager {
  private node: Json | undefined;
  private lease: Json | undefined;
  private lastReport = 0;
  private lastConditions = new Map<string, string>();
  private statusTimer: NodeJS.Timeout | undefined;
  private leaseTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  private registering: Promise<void> | undefined;
  private readonly now: () => Date;
  private readonly listeners = new Set<(node: Json) => void>();

  constructor(private readonly o: NodeManagerOptions) {
    this.now = o.now ?? (() => new Date());
  }

  get nodeName(): string {
    return this.o.settings.nodeName;
  }

  /** The Node as last read or written (undefined before registration). */
  get current(): Json | undefined {
    return this.node;
  }

  get nodeUID(): string | undefined {
    const uid = (this.node?.metadata as Json | undefined)?.uid;
    return typeof uid === 'string' ? uid : undefined;
  }

  /** Called with the Node after each (re-)registration. */
  onRegistered(cb: (node: Json) => void): void {
    this.listeners.add(cb);
  }

  /** Registers (retrying until it succeeds or stop()), then starts the status and lease loops. */
  async start(): Promise<void> {
    this.o.events.event(this.nodeRef(), 'Normal', 'Starting', 'Starting kubelet.');
    if (this.o.registerNode) await this.register();
    else await this.syncStatus().catch((err: unknown) => this.o.log('error', `node status: ${msg(err)}`));
    if (this.stopped) return;
    void this.renewLease();
    this.statusTimer = setInterval(() => {
      void this.syncStatus().catch((err: unknown) => this.o.log('error', `updating node status: ${msg(err)}`));
    }, this.o.statusUpdateFrequencyMs);
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.statusTimer);
    clearTimeout(this.leaseTimer);
  }

  /** Posts the status now (e.g. when a condition changed) regardless of the report frequency. */
  async syncStatus(force = false): Promise<void> {
    if (this.stopped) return;
    for (let attempt = 0; attempt < 5; attempt++) {
      let node: Json;
      try {
        node = await this.o.client.get(`/api/v1/nodes/${this.nodeName}`);
      } catch (err) {
        if (isNotFound(err) && this.o.registerNode) {
          this.o.log('info', `node ${this.nodeName} is gone from the server: registering it again`);
          this.node = undefined;
          this.lease = undefined;
          await this.register();
          return;
        }
        throw err;
      }
      this.node = node;
      const status = await this.statusFor(node);
      const due = Date.now() - this.lastReport >= (this.o.statusReportFrequencyMs ?? 300_000);
      if (!force && !due && !nodeStatusChanged(node.status as Json | undefined, status)) return;
      try {
        this.node = await this.o.client.update(`/api/v1/nodes/${this.nodeName}/status`, { ...node, status });
        this.lastReport = Date.now();
        this.conditionEvents(status);
        return;
      } catch (err) {
        if (!isConflict(err)) throw err;
      }
    }
  }

  private async statusFor(node: Json | undefined): Promise<Json> {
    const host = { ...this.o.host, rootFsBytes: (await fsSize(this.o.rootDir)).capacity || this.o.host.rootFsBytes };
    const old = ((node?.status as Json | undefined)?.conditions as Json[] | undefined) ?? undefined;
    const images = this.o.images ? await this.o.images().catch(() => undefined) : undefined;
    return nodeStatus(this.o.settings, host, nodeConditions(this.o.conditions(), old, this.now()), images);
  }

  private register(): Promise<void> {
    this.registering ??= this.registerLoop().finally(() => (this.registering = undefined));
    return this.registering;
  }

  private async registerLoop(): Promise<void> {
    let backoff = 100;
    while (!this.stopped) {
      try {
        await this.tryRegister();
        this.o.log('info', `node ${this.nodeName} registered`);
        for (const l of this.listeners) l(this.node!);
        return;
      } catch (err) {
        this.o.log('error', `registering node ${this.nodeName}: ${msg(err)}`);
        await new Promise((r) => setTimeout(r, backoff));
        backoff = Math.min(7000, backoff * 2);
      }
    }
  }

  private async tryRegister(): Promise<void> {
    const node = initialNode(this.o.settings, this.o.host);
    node.status = await this.statusFor(undefined);
    try {
      this.node = await this.o.client.create('/api/v1/nodes', node);
      this.lastReport = Date.now();
      this.conditionEvents(node.status as Json);
      return;
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
    }
    const existing = await this.o.client.get(`/api/v1/nodes/${this.nodeName}`);
    const want = ((node.metadata as Json).labels ?? {}) as Record<string, string>;
    const have = ((existing.metadata as Json).labels ?? {}) as Record<string, string>;
    const fix: Record<string, string> = {};
    for (const k of STANDARD_LABELS) if (want[k] !== undefined && have[k] !== want[k]) fix[k] = want[k];
    const patch: Json = {};
    if (Object.keys(fix).length > 0) patch.labels = fix;
    // kubelet's reconcileCMADAnnotationWithExistingNode: set the annotation, or remove it when off.
    const cmad = ((node.metadata as Json).annotations as Record<string, string> | undefined)?.[CMAD_ANNOTATION];
    if (cmad !== (((existing.metadata as Json).annotations ?? {}) as Record<string, string>)[CMAD_ANNOTATION]) {
      patch.annotations = { [CMAD_ANNOTATION]: cmad ?? null };
    }
    this.node = Object.keys(patch).length > 0 ? await this.o.client.patch(`/api/v1/nodes/${this.nodeName}`, { metadata: patch }) : existing;
    await this.syncStatus(true);
  }

  private async renewLease(): Promise<void> {
    if (this.stopped) return;
    const interval = (this.o.leaseDurationSeconds * 1000) / 4;
    let next = interval;
    try {
      await this.tryRenew();
    } catch (err) {
      this.lease = undefined;
      next = 200;
      this.o.log('error', `renewing the node lease: ${msg(err)}`);
    }
    if (!this.stopped) this.leaseTimer = setTimeout(() => void this.renewLease(), next);
  }

  private async tryRenew(): Promise<void> {
    const path = `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${this.nodeName}`;
    const uid = this.nodeUID;
    const owner = uid !== undefined ? { name: this.nodeName, uid } : undefined;
    const fresh = nodeLease(this.nodeName, this.o.leaseDurationSeconds, this.now(), owner);
    const lease: Json | null = this.lease ?? (await this.getLease(path));
    if (lease === null) {
      this.lease = await this.o.client.create('/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases', fresh);
      return;
    }
    const meta = { ...(lease.metadata as Json) };
    const owners = (meta.ownerReferences as Json[] | undefined) ?? [];
    if (owner && !owners.some((r) => r.uid === owner.uid)) meta.ownerReferences = (fresh.metadata as Json).ownerReferences;
    try {
      this.lease = await this.o.client.update(path, { ...lease, metadata: meta, spec: fresh.spec });
    } catch (err) {
      this.lease = undefined;
      if (isNotFound(err)) {
        this.lease = await this.o.client.create('/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases', fresh);
        return;
      }
      throw err;
    }
  }

  private async getLease(path: string): Promise<Json | null> {
    try {
      return await this.o.client.get<Json>(path);
    } catch (err) {
      if (isNotFound(err)) return null;
      throw err;
    }
  }

  /** kubelet's recordNodeStatusEvent on condition transitions: NodeHasSufficientMemory, NodeReady, ... */
  private conditionEvents(status: Json): void {
    const names: Record<string, [string, string]> = {
      MemoryPressure: ['NodeHasInsufficientMemory', 'NodeHasSufficientMemory'],
      DiskPressure: ['NodeHasDiskPressure', 'NodeHasNoDiskPressure'],
      PIDPressure: ['NodeHasInsufficientPID', 'NodeHasSufficientPID'],
      Ready: ['NodeReady', 'NodeNotReady'],
    };
    for (const c of (status.conditions as Json[] | undefined) ?? []) {
      const type = String(c.type);
      const value = String(c.status);
      if (this.lastConditions.get(type) === value) continue;
      this.lastConditions.set(type, value);
      const pair = names[type];
      if (!pair) continue;
      const event = value === 'True' ? pair[0] : pair[1];
      this.o.events.event(this.nodeRef(), 'Normal', event, `Node ${this.nodeName} status is now: ${event}`);
    }
  }

  /** kubelet's node reference for events: the UID is the node name. */
  nodeRef(): { kind: string; name: string; uid: string } {
    return { kind: 'Node', name: this.nodeName, uid: this.nodeName };
  }
}

function msg(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
