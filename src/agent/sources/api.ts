// The API server pod source (kubelet's pkg/kubelet/config/apiserver.go): a list+watch of the pods
// bound to this node (fieldSelector spec.nodeName=<node>). A list emits the complete set as a SET
// snapshot of source 'api'; a batch of watch events emits only what it changed, as a DELTA, so the
// cost of an event does not grow with the pods on the node. Mirror pods (kubernetes.io/config.mirror)
// are not pods to run: they go to onMirrors instead (after a batch only when one of them changed). A
// pod that left the watch with a DELETED event is first emitted once more as deleted (its
// deletionTimestamp set), so the agent terminates it even when the server removed it at once (a force
// delete), then removed.
import type { ApiClient, Json } from '../client/client.js';
import { Reflector } from '../client/reflector.js';
import type { Pod } from '../types.js';
import { CONFIG_MIRROR_ANNOTATION } from './manifest.js';
import type { PodSnapshot } from './merge.js';

export interface ApiSourceOptions {
  nodeName: string;
  onSnapshot: (snapshot: PodSnapshot) => void;
  /** Mirror pods on the server by namespace/name, after every change. */
  onMirrors: (mirrors: ReadonlyMap<string, Json>) => void;
  onError?: (err: unknown) => void;
}

export const isMirrorPod = (p: Json): boolean => {
  const ann = (p.metadata as Json | undefined)?.annotations as Record<string, string> | undefined;
  return ann?.[CONFIG_MIRROR_ANNOTATION] !== undefined;
};

export class ApiSource {
  private readonly reflector: Reflector<Json>;
  /** The reflector's live store: the pods as the server last showed them, by namespace/name. */
  private latest: ReadonlyMap<string, Json> = new Map();
  private readonly mirrors = new Map<string, Json>();

  constructor(
    client: ApiClient,
    private readonly o: ApiSourceOptions,
  ) {
    this.reflector = new Reflector<Json>(client, {
      path: '/api/v1/pods',
      fieldSelector: `spec.nodeName=${o.nodeName}`,
      onChange: (items, deleted, changed) => this.changed(items, deleted, changed),
      ...(o.onError ? { onError: o.onError } : {}),
    });
  }

  /** Resolves after the first list. */
  start(): Promise<void> {
    return this.reflector.start();
  }

  stop(): void {
    this.reflector.stop();
  }

  /** The pod as the server last showed it (namespace/name). */
  get(namespace: string, name: string): Json | undefined {
    return this.latest.get(`${namespace}/${name}`);
  }

  private changed(items: ReadonlyMap<string, Json>, deleted: Json[], changed: Json[] | undefined): void {
    this.latest = items;
    const keyOf = (o: Json): string => {
      const m = o.metadata as Json;
      return `${String(m.namespace)}/${String(m.name)}`;
    };
    let mirrorsChanged = false;
    const pods: Pod[] = [];
    if (changed === undefined) {
      // after a list: everything
      this.mirrors.clear();
      for (const [key, obj] of items) {
        if (isMirrorPod(obj)) this.mirrors.set(key, obj);
        else pods.push(obj as unknown as Pod);
      }
      mirrorsChanged = true;
    } else {
      for (const obj of changed) {
        if (isMirrorPod(obj)) {
          this.mirrors.set(keyOf(obj), obj);
          mirrorsChanged = true;
        } else pods.push(obj as unknown as Pod);
      }
    }
    const gone: Pod[] = [];
    for (const d of deleted) {
      if (isMirrorPod(d)) {
        const k = keyOf(d);
        if ((this.mirrors.get(k)?.metadata as Json | undefined)?.uid === (d.metadata as Json).uid) this.mirrors.delete(k);
        mirrorsChanged = true;
        continue;
      }
      const p = structuredClone(d) as unknown as Pod;
      p.metadata.deletionTimestamp ??= new Date().toISOString().slice(0, 19) + 'Z';
      p.metadata.deletionGracePeriodSeconds ??= 0;
      gone.push(p);
    }
    if (gone.length > 0) this.o.onSnapshot({ op: 'DELTA', source: 'api', removed: [], set: gone });
    if (changed === undefined) this.o.onSnapshot({ op: 'SET', source: 'api', pods });
    else this.o.onSnapshot({ op: 'DELTA', source: 'api', removed: gone, set: pods });
    if (mirrorsChanged) this.o.onMirrors(new Map(this.mirrors));
  }
}
