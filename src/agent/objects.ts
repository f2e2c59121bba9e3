// ConfigMaps, Secrets and service account tokens for pods (kubelet's configmap/secret managers with
// the Watch change-detection strategy, and its token manager).
//
// In API-server mode every object a pod refers to gets its own list+watch (fieldSelector
// metadata.name=<name> in its namespace: what the Node authorizer allows a node), started on first
// use and stopped when no pod refers to it any more; a change of a watched object calls onChange
// (the agent resyncs the pods that use it, so their volumes follow). A read waits for the first list.
// Without a server (standalone mode) every lookup fails: static pods cannot use them.
import type { ApiClient, Json } from './client/client.js';
import { Reflector } from './client/reflector.js';

export type ObjectKind = 'configmaps' | 'secrets';

/** A missing object or key; its message is what kubelet reports (`configmap "x" not found`). */
export class ObjectNotFound extends Error {
  override name = 'ObjectNotFound';
}

export interface ObjectSource {
  /** The object, or throws ObjectNotFound (or another error when it cannot be read). */
  get(kind: ObjectKind, namespace: string, name: string): Promise<Json>;
  /** A token for the pod's service account (TokenRequest bound to the pod). */
  serviceAccountToken(pod: { namespace: string; name: string; uid: string; serviceAccountName: string }, audience: string | undefined, expirationSeconds: number): Promise<string>;
  /** The objects a pod uses now (replaces what it used before); [] when the pod is gone. */
  setPodRefs(uid: string, refs: ObjectRef[]): void;
}

export interface ObjectRef {
  kind: ObjectKind;
  namespace: string;
  name: string;
}

const singular: Record<ObjectKind, string> = { configmaps: 'configmap', secrets: 'secret' };

export function notFound(kind: ObjectKind, name: string): ObjectNotFound {
  return new ObjectNotFound(`${singular[kind]} "${name}" not found`);
}

/** Standalone mode: there is no server to read objects from. */
export const NO_OBJECTS: ObjectSource = {
  get: (kind, _ns, name) => Promise.reject(new ObjectNotFound(`${singular[kind]} "${name}" not found: the agent runs without an API server`)),
  serviceAccountToken: () => Promise.reject(new Error('service account tokens need an API server (the agent runs standalone)')),
  setPodRefs: () => {},
};

interface Watched {
  reflector: Reflector<Json>;
  synced: Promise<void>;
  users: Set<string>;
}

const refKey = (r: ObjectRef): string => `${r.kind}/${r.namespace}/${r.name}`;

export class ApiObjectSource implements ObjectSource {
  private readonly watched = new Map<string, Watched>();
  private readonly podRefs = new Map<string, string[]>();
  private readonly tokens = new Map<string, { token: string; renewAt: number }>();

  constructor(
    private readonly client: ApiClient,
    private readonly onChange: (ref: ObjectRef) => void,
    private readonly log: (level: 'info' | 'error', message: string) => void,
  ) {}

  async get(kind: ObjectKind, namespace: string, name: string): Promise<Json> {
    const w = this.watch({ kind, namespace, name });
    await Promise.race([w.synced, new Promise((_r, reject) => setTimeout(() => reject(new Error(`timed out reading ${singular[kind]} "${name}"`)), 30_000).unref())]);
    const obj = w.reflector.items()[0];
    if (!obj) throw notFound(kind, name);
    return obj;
  }

  setPodRefs(uid: string, refs: ObjectRef[]): void {
    const keys = refs.map(refKey);
    for (const k of keys) {
      const r = refs[keys.indexOf(k)]!;
      this.watch(r).users.add(uid);
    }
    for (const old of this.podRefs.get(uid) ?? []) {
      if (keys.includes(old)) continue;
      const w = this.watched.get(old);
      w?.users.delete(uid);
      if (w && w.users.size === 0) {
        w.reflector.stop();
        this.watched.delete(old);
      }
    }
    if (keys.length === 0) this.podRefs.delete(uid);
    else this.podRefs.set(uid, keys);
    if (keys.length === 0) for (const k of [...this.tokens.keys()]) if (k.startsWith(`${uid}/`)) this.tokens.delete(k);
  }

  async serviceAccountToken(pod: { namespace: string; name: string; uid: string; serviceAccountName: string }, audience: string | undefined, expirationSeconds: number): Promise<string> {
    const key = `${pod.uid}/${audience ?? ''}/${expirationSeconds}`;
    const cached = this.tokens.get(key);
    if (cached && Date.now() < cached.renewAt) return cached.token;
    const body = {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: {
        audiences: audience ? [audience] : [],
        expirationSeconds,
        boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: pod.name, uid: pod.uid },
      },
    };
    const r = await this.client.create<Json>(`/api/v1/namespaces/${pod.namespace}/serviceaccounts/${pod.serviceAccountName}/token`, body);
    const raw = (r.status as Json | undefined)?.token;
    const token = typeof raw === 'string' ? raw : '';
    if (token === '') throw new Error(`the server returned no token for service account ${pod.namespace}/${pod.serviceAccountName}`);
    // kubelet's token manager renews at 80% of the lifetime
    this.tokens.set(key, { token, renewAt: Date.now() + expirationSeconds * 800 });
    return token;
  }

  stop(): void {
    for (const w of this.watched.values()) w.reflector.stop();
    this.watched.clear();
  }

  private watch(ref: ObjectRef): Watched {
    const key = refKey(ref);
    let w = this.watched.get(key);
    if (w) return w;
    let first = true;
    const reflector = new Reflector<Json>(this.client, {
      path: `/api/v1/namespaces/${ref.namespace}/${ref.kind}`,
      fieldSelector: `metadata.name=${ref.name}`,
      onChange: () => {
        if (first) first = false;
        else this.onChange(ref);
      },
      onError: (err) => this.log('error', `watching ${singular[ref.kind]} ${ref.namespace}/${ref.name}: ${err instanceof Error ? err.message : String(err)}`),
    });
    w = { reflector, synced: reflector.start(), users: new Set() };
    this.watched.set(key, w);
    return w;
  }

  /** Pods that use an object (to resync them when it changes). */
  usersOf(ref: ObjectRef): string[] {
    return [...(this.watched.get(refKey(ref))?.users ?? [])];
  }
}
