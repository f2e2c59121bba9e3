/**
 * --authorization-mode=Node, as Kubernetes' NodeAuthorizer: a user system:node:<name> in group system:nodes
 * may read the secrets, configmaps, persistent volume claims and service-account tokens of pods bound to
 * its node (a graph kept from a watch of the pods), its own Lease in kube-node-lease, and what the static
 * node rules allow; anything else gets no opinion, with Kubernetes' reasons. As in kube-apiserver, it is no
 * rule resolver: SelfSubjectRulesReview does not ask it.
 */
import type { KObject } from '../../registry/kind.js';
import type { Registry } from '../../registry/registry.js';
import type { AccessAttributes, AccessAuthorizer, AccessUser, AuthorizationResult } from '../../registry/kinds/authorization/attributes.js';
import { ObjectCache } from '../../registry/kinds/rbac/cache.js';
import { NODE_RULES } from '../../registry/kinds/rbac/policy.js';
import { rulesAllow } from '../../registry/kinds/rbac/rules.js';

const NODE_USER_PREFIX = 'system:node:';
const NODES_GROUP = 'system:nodes';
const NODE_LEASE_NAMESPACE = 'kube-node-lease';

type VertexType = 'secret' | 'configmap' | 'pvc' | 'serviceaccount';

/** NodeIdentity: the node name of a node user, or undefined for other users. */
export function nodeIdentity(user: AccessUser | undefined): string | undefined {
  if (!user || !user.name.startsWith(NODE_USER_PREFIX) || !user.groups.includes(NODES_GROUP)) return undefined;
  return user.name.slice(NODE_USER_PREFIX.length);
}

type Json = Record<string, any>;
const arr = (v: unknown): Json[] => (Array.isArray(v) ? v.filter((x): x is Json => typeof x === 'object' && x !== null) : []);
const nameOf = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/** The objects a pod references, by vertex type (podutil.VisitPodSecretNames / VisitPodConfigmapNames and claims). */
export function podReferences(pod: KObject): { type: VertexType; name: string }[] {
  const spec: Json = pod['spec'] ?? {};
  const out: { type: VertexType; name: string }[] = [];
  const add = (type: VertexType, name: unknown) => {
    const n = nameOf(name);
    if (n) out.push({ type, name: n });
  };
  for (const s of arr(spec['imagePullSecrets'])) add('secret', s['name']);
  for (const c of [...arr(spec['initContainers']), ...arr(spec['containers']), ...arr(spec['ephemeralContainers'])]) {
    for (const e of arr(c['envFrom'])) {
      add('secret', e['secretRef']?.name);
      add('configmap', e['configMapRef']?.name);
    }
    for (const e of arr(c['env'])) {
      add('secret', e['valueFrom']?.secretKeyRef?.name);
      add('configmap', e['valueFrom']?.configMapKeyRef?.name);
    }
  }
  for (const v of arr(spec['volumes'])) {
    add('secret', v['secret']?.secretName);
    add('configmap', v['configMap']?.name);
    for (const src of arr(v['projected']?.sources)) {
      add('secret', src['secret']?.name);
      add('configmap', src['configMap']?.name);
    }
    add('secret', v['azureFile']?.secretName);
    for (const plugin of ['cephfs', 'cinder', 'flexVolume', 'iscsi', 'rbd', 'scaleIO', 'storageos']) add('secret', v[plugin]?.secretRef?.name);
    add('secret', v['csi']?.nodePublishSecretRef?.name);
    add('pvc', v['persistentVolumeClaim']?.claimName);
    if (v['ephemeral'] && nameOf(v['name'])) add('pvc', `${pod.metadata?.name ?? ''}-${v['name'] as string}`);
  }
  add('serviceaccount', spec['serviceAccountName']);
  return out;
}

/** Which nodes reach which objects through the pods bound to them. */
export class NodeGraph {
  private readonly refs = new Map<string, Map<string, number>>();
  private readonly pods = new Map<string, { node: string; keys: string[] }>();

  /** A pod (key namespace/name) was added, changed (obj) or removed (null). */
  podChanged(key: string, pod: KObject | null): void {
    const old = this.pods.get(key);
    if (old) {
      for (const k of old.keys) {
        const nodes = this.refs.get(k)!;
        const n = (nodes.get(old.node) ?? 1) - 1;
        if (n > 0) nodes.set(old.node, n);
        else nodes.delete(old.node);
        if (nodes.size === 0) this.refs.delete(k);
      }
      this.pods.delete(key);
    }
    const node = nameOf(pod?.['spec']?.nodeName);
    if (!pod || !node) return;
    const ns = pod.metadata?.namespace ?? '';
    const keys = [...new Set(podReferences(pod).map((r) => `${r.type}/${ns}/${r.name}`))];
    for (const k of keys) {
      let nodes = this.refs.get(k);
      if (!nodes) this.refs.set(k, (nodes = new Map()));
      nodes.set(node, (nodes.get(node) ?? 0) + 1);
    }
    this.pods.set(key, { node, keys });
  }

  hasPathFrom(node: string, type: VertexType, namespace: string, name: string): boolean {
    return this.refs.get(`${type}/${namespace}/${name}`)?.has(node) ?? false;
  }
}

const noOpinion = (reason: string): AuthorizationResult => ({ decision: 'noOpinion', reason });
const ALLOW: AuthorizationResult = { decision: 'allow', reason: '' };

export interface NodeAuthorizer extends AccessAuthorizer {
  stop(): void;
}

export function nodeAuthorizer(registry: Registry): NodeAuthorizer {
  const graph = new NodeGraph();
  const podStore = registry.store('', 'v1', 'pods');
  const pods = podStore ? new ObjectCache(podStore) : undefined;
  pods?.onChange((key, obj) => graph.podChanged(key, obj));

  const related = (node: string, type: VertexType, a: AccessAttributes): AuthorizationResult => {
    if (a.name === '') return noOpinion('No Object name found');
    if (!graph.hasPathFrom(node, type, a.namespace, a.name)) return noOpinion(`no relationship found between node '${node}' and this object`);
    return ALLOW;
  };

  const decide = (node: string, a: AccessAttributes): AuthorizationResult => {
    if (a.isResourceRequest && a.apiGroup === '') {
      switch (a.resource) {
        case 'secrets':
        case 'configmaps': {
          if (!['get', 'list', 'watch'].includes(a.verb)) return noOpinion('can only read resources of this type');
          if (a.subresource !== '') return noOpinion('cannot read subresource');
          if (a.namespace === '') return noOpinion('can only read namespaced object of this type');
          return related(node, a.resource === 'secrets' ? 'secret' : 'configmap', a);
        }
        case 'persistentvolumeclaims':
          if (a.subresource === 'status') {
            if (!['update', 'patch'].includes(a.verb)) return noOpinion('can only get/update/patch this type');
            return related(node, 'pvc', a);
          }
          if (a.verb !== 'get') return noOpinion('can only get individual resources of this type');
          if (a.subresource !== '') return noOpinion('cannot get subresource');
          return related(node, 'pvc', a);
        case 'serviceaccounts':
          if (a.verb !== 'create' || a.name === '') return noOpinion('can only create tokens for individual service accounts');
          if (a.subresource !== 'token') return noOpinion('can only create token subresource of serviceaccount');
          return related(node, 'serviceaccount', a);
      }
    }
    if (a.isResourceRequest && a.apiGroup === 'coordination.k8s.io' && a.resource === 'leases') {
      if (!['get', 'create', 'update', 'patch', 'delete'].includes(a.verb)) return noOpinion('can only get, create, update, patch, or delete a node lease');
      if (a.namespace !== NODE_LEASE_NAMESPACE) return noOpinion(`can only access leases in the "${NODE_LEASE_NAMESPACE}" system namespace`);
      if (a.verb !== 'create' && a.name !== node) return noOpinion('can only access node lease with the same name as the requesting node');
      return ALLOW;
    }
    return rulesAllow(a, NODE_RULES) ? ALLOW : noOpinion('');
  };

  return {
    authorize(user, attrs) {
      if (!user || !user.name.startsWith(NODE_USER_PREFIX) || !user.groups.includes(NODES_GROUP)) return noOpinion('');
      const node = nodeIdentity(user)!;
      if (node === '') return noOpinion(`unknown node for user ${JSON.stringify(user.name)}`);
      if (!pods || pods.isReady) return decide(node, attrs);
      return pods.ready().then(() => decide(node, attrs));
    },
    stop: () => pods?.stop(),
  };
}
