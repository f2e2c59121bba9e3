// Mirror pods (kubelet's pkg/kubelet/pod/mirror_client.go and the mirror handling of syncPod): every
// static pod (from a file, a URL or the agent's manifest endpoint) gets a mirror pod on the server with
// the same namespace and name, the annotation kubernetes.io/config.mirror set to its config hash, and
// the Node as controlling owner. The reconciler keeps the two sets in step:
//   static pod without a mirror            create it (once the Node is registered)
//   mirror with another hash, or deleted   delete it (grace 0, uid precondition), then create it again
//   mirror without a static pod            delete it
// Deleting a mirror pod does not touch the static pod: the watch shows the mirror gone and the
// reconciler creates it again. It runs after every change of either set, and every 10 s.
import type { ApiClient, Json } from './client/client.js';
import { isAlreadyExists, isConflict, isNotFound } from './client/client.js';
import { CONFIG_HASH_ANNOTATION, CONFIG_MIRROR_ANNOTATION } from './sources/manifest.js';
import type { Pod } from './types.js';

export interface MirrorManagerOptions {
  client: ApiClient;
  nodeName: string;
  nodeUID: () => string | undefined;
  /** Called when the mirror of a static pod (by namespace/name) appeared or changed. */
  onMirror?: (key: string) => void;
  log: (level: 'info' | 'error', message: string) => void;
  periodMs?: number;
}

const key = (ns: unknown, name: unknown): string => `${String(ns)}/${String(name)}`;
const metaOf = (o: Json): Json => (o.metadata ?? {}) as Json;
const annotationsOf = (o: Json): Record<string, string> => (metaOf(o).annotations ?? {}) as Record<string, string>;

/** The mirror pod body for a static pod (kubelet's CreateMirrorPod). */
export function mirrorPodOf(pod: Pod, nodeName: string, nodeUID: string): Json {
  const hash = pod.metadata.annotations?.[CONFIG_HASH_ANNOTATION] ?? pod.metadata.uid;
  const meta: Json = { name: pod.metadata.name, namespace: pod.metadata.namespace };
  if (pod.metadata.labels) meta.labels = { ...pod.metadata.labels };
  meta.annotations = { ...(pod.metadata.annotations ?? {}), [CONFIG_MIRROR_ANNOTATION]: hash };
  meta.ownerReferences = [{ apiVersion: 'v1', kind: 'Node', name: nodeName, uid: nodeUID, controller: true }];
  return { apiVersion: 'v1', kind: 'Pod', metadata: meta, spec: structuredClone(pod.spec) };
}

export class MirrorManager {
  private statics = new Map<string, Pod>();
  private mirrors: ReadonlyMap<string, Json> = new Map();
  private running: Promise<void> | undefined;
  private again = false;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(private readonly o: MirrorManagerOptions) {}

  start(): void {
    this.timer = setInterval(() => this.reconcile(), this.o.periodMs ?? 10_000);
    this.timer.unref();
    this.reconcile();
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.timer);
  }

  /** The static pods configured now (all non-API sources). */
  setStatic(pods: Pod[]): void {
    this.statics = new Map(pods.map((p) => [key(p.metadata.namespace, p.metadata.name), p]));
    this.reconcile();
  }

  setMirrors(mirrors: ReadonlyMap<string, Json>): void {
    const before = this.mirrors;
    this.mirrors = mirrors;
    for (const [k, m] of mirrors) if (metaOf(before.get(k) ?? {}).uid !== metaOf(m).uid) this.o.onMirror?.(k);
    this.reconcile();
  }

  /** The mirror pod of a static pod, if the server has a current one. */
  mirrorOf(pod: Pod): Json | undefined {
    const m = this.mirrors.get(key(pod.metadata.namespace, pod.metadata.name));
    if (!m || metaOf(m).deletionTimestamp !== undefined) return undefined;
    return annotationsOf(m)[CONFIG_MIRROR_ANNOTATION] === (pod.metadata.annotations?.[CONFIG_HASH_ANNOTATION] ?? pod.metadata.uid) ? m : undefined;
  }

  /** Runs one pass now (or one more after the current one). */
  reconcile(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.pass()
      .catch((err: unknown) => this.o.log('error', `mirror pods: ${err instanceof Error ? err.message : String(err)}`))
      .finally(() => {
        this.running = undefined;
        if (this.again) {
          this.again = false;
          this.reconcile();
        }
      });
  }

  /** Resolves when no pass runs. */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  private async pass(): Promise<void> {
    const nodeUID = this.o.nodeUID();
    for (const [k, m] of this.mirrors) {
      const pod = this.statics.get(k);
      if (pod && this.mirrorOf(pod) === m) continue;
      await this.deleteMirror(m);
    }
    if (nodeUID === undefined) return;
    for (const [k, pod] of this.statics) {
      const m = this.mirrors.get(k);
      if (m && this.mirrorOf(pod) === m) continue;
      if (this.stopped) return;
      try {
        await this.o.client.create(`/api/v1/namespaces/${pod.metadata.namespace}/pods`, mirrorPodOf(pod, this.o.nodeName, nodeUID));
        this.o.log('info', `mirror pod ${k} created`);
      } catch (err) {
        if (!isAlreadyExists(err)) this.o.log('error', `creating mirror pod ${k}: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
  }

  private async deleteMirror(m: Json): Promise<void> {
    const meta = metaOf(m);
    try {
      await this.o.client.delete(`/api/v1/namespaces/${String(meta.namespace)}/pods/${String(meta.name)}`, {
        gracePeriodSeconds: 0,
        preconditions: { uid: meta.uid },
      });
      this.o.log('info', `mirror pod ${key(meta.namespace, meta.name)} deleted`);
    } catch (err) {
      if (!isNotFound(err) && !isConflict(err)) throw err;
    }
  }
}
