// The API server pod source (kubelet's pkg/kubelet/config/apiserver.go): a list+watch of the pods
// bound to this node (fieldSelector spec.nodeName=<node>). Every change emits the complete set as a
// SET snapshot of source 'api'. Mirror pods (kubernetes.io/config.mirror) are not pods to run: they
// go to onMirrors instead. A pod that left the watch with a DELETED event is first emitted once more
// as deleted (its deletionTimestamp set), so the agent terminates it even when the server removed it
// at once (a force delete), then dropped.
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
  private latest: ReadonlyMap<string, Json> = new Map();

  constructor(
    client: ApiClient,
    private readonly o: ApiSourceOptions,
  ) {
    this.reflector = new Reflector<Json>(client, {
      path: '/api/v1/pods',
      fieldSelector: `spec.nodeName=${o.nodeName}`,
      onChange: (items, deleted) => this.changed(items, deleted),
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

  private changed(items: ReadonlyMap<string, Json>, deleted: Json[]): void {
    this.latest = new Map(items);
    const pods: Pod[] = [];
    const mirrors = new Map<string, Json>();
    for (const [key, obj] of items) {
      if (isMirrorPod(obj)) mirrors.set(key, obj);
      else pods.push(obj as unknown as Pod);
    }
    const gone = deleted.filter((d) => !isMirrorPod(d)).map((d) => {
      const p = structuredClone(d) as unknown as Pod;
      p.metadata.deletionTimestamp ??= new Date().toISOString().slice(0, 19) + 'Z';
      p.metadata.deletionGracePeriodSeconds ??= 0;
      return p;
    });
    if (gone.length > 0) this.o.onSnapshot({ op: 'SET', source: 'api', pods: [...pods, ...gone] });
    this.o.onSnapshot({ op: 'SET', source: 'api', pods });
    this.o.onMirrors(mirrors);
  }
}
