/**
 * NodeRestriction admission, as Kubernetes 1.23's (plugin/pkg/admission/noderestriction). It limits what a
 * node (a user system:node:<name> in group system:nodes) may write, beyond what the Node authorizer lets it
 * reach:
 *   - pods: create only mirror pods (kubernetes.io/config.mirror) bound to itself, owned by nothing but its
 *     own Node, referencing no service account, secret, configmap or claim; delete only pods bound to it;
 *     update status only of pods bound to it; evict only pods bound to it.
 *   - nodes: only its own Node; no configSource; no change of taints once registered; no labels under
 *     node-restriction.kubernetes.io/ nor other kubernetes.io / k8s.io labels outside the kubelet's own set.
 *   - persistentvolumeclaims: only status, and only status.capacity and status.conditions.
 *   - serviceaccounts/token: only tokens bound to a pod (by name and uid) scheduled on itself.
 *   - leases: only its own, in kube-node-lease.
 * Forbidden writes are answered with 403 worded as Kubernetes words them. As in Kubernetes, where the plugin is
 * a mutating one, it runs in the mutating phase: before the object's validation.
 */
import { isDeepStrictEqual } from 'node:util';
import { apiErrors } from '../errors.js';
import type { KObject } from '../kind.js';
import type { Admission, AdmissionAttributes, ResourceStore } from '../store.js';
import { isObj, listOf, objOf, type Json } from './pod-helpers.js';

const NODE_USER_PREFIX = 'system:node:';
const NODES_GROUP = 'system:nodes';
const MIRROR_POD_ANNOTATION = 'kubernetes.io/config.mirror';
const NODE_LEASE_NAMESPACE = 'kube-node-lease';

/** The labels a kubelet sets on its own Node (kubeletapis.IsKubeletLabel). */
const KUBELET_LABELS = new Set([
  'kubernetes.io/hostname',
  'topology.kubernetes.io/zone',
  'topology.kubernetes.io/region',
  'failure-domain.beta.kubernetes.io/zone',
  'failure-domain.beta.kubernetes.io/region',
  'beta.kubernetes.io/instance-type',
  'node.kubernetes.io/instance-type',
  'kubernetes.io/os',
  'kubernetes.io/arch',
  'beta.kubernetes.io/os',
  'beta.kubernetes.io/arch',
]);
const KUBELET_LABEL_NAMESPACES = ['kubelet.kubernetes.io', 'node.kubernetes.io'];

/** The node a user is, '' for a node user without a name, undefined for other users. */
function nodeOf(user: AdmissionAttributes['user']): string | undefined {
  if (!user || !user.name.startsWith(NODE_USER_PREFIX) || !user.groups.includes(NODES_GROUP)) return undefined;
  return user.name.slice(NODE_USER_PREFIX.length);
}

const labelNamespace = (label: string): string => (label.includes('/') ? label.slice(0, label.indexOf('/')) : '');
const inNamespace = (ns: string, domain: string): boolean => ns === domain || ns.endsWith(`.${domain}`);

function isKubeletLabel(label: string): boolean {
  if (KUBELET_LABELS.has(label)) return true;
  const ns = labelNamespace(label);
  return KUBELET_LABEL_NAMESPACES.some((d) => inNamespace(ns, d));
}

/** Labels a node may not set or change (getForbiddenLabels). */
function forbiddenLabels(labels: Record<string, unknown>, old: Record<string, unknown>): string[] {
  const modified = new Set<string>();
  for (const k of new Set([...Object.keys(labels), ...Object.keys(old)])) if (labels[k] !== old[k]) modified.add(k);
  const out: string[] = [];
  for (const label of modified) {
    const ns = labelNamespace(label);
    const restricted = inNamespace(ns, 'node-restriction.kubernetes.io');
    const kubernetes = inNamespace(ns, 'kubernetes.io') || inNamespace(ns, 'k8s.io');
    if (restricted || (kubernetes && !isKubeletLabel(label))) out.push(label);
  }
  return out.sort();
}

/** Whether a pod spec references secrets, configmaps or claims (the kinds a node may not make pods use). */
function podReferences(spec: Json): { secrets: boolean; configmaps: boolean; claims: boolean } {
  let secrets = listOf(spec['imagePullSecrets']).length > 0;
  let configmaps = false;
  let claims = false;
  for (const c of [...listOf(spec['initContainers']), ...listOf(spec['containers']), ...listOf(spec['ephemeralContainers'])]) {
    for (const e of listOf(c['env'])) {
      const from = objOf(e['valueFrom']);
      if (isObj(from['secretKeyRef'])) secrets = true;
      if (isObj(from['configMapKeyRef'])) configmaps = true;
    }
    for (const e of listOf(c['envFrom'])) {
      if (isObj(e['secretRef'])) secrets = true;
      if (isObj(e['configMapRef'])) configmaps = true;
    }
  }
  for (const v of listOf(spec['volumes'])) {
    if (isObj(v['secret'])) secrets = true;
    if (isObj(v['configMap'])) configmaps = true;
    if (isObj(v['persistentVolumeClaim']) || isObj(v['ephemeral'])) claims = true;
    for (const key of ['cephfs', 'cinder', 'flexVolume', 'rbd', 'scaleIO', 'storageos', 'iscsi', 'azureFile']) {
      if (isObj(objOf(v[key])['secretRef']) || typeof objOf(v[key])['secretName'] === 'string') secrets = true;
    }
    if (isObj(objOf(v['csi'])['nodePublishSecretRef'])) secrets = true;
    for (const src of listOf(objOf(v['projected'])['sources'])) {
      if (isObj(src['secret'])) secrets = true;
      if (isObj(src['configMap'])) configmaps = true;
    }
  }
  return { secrets, configmaps, claims };
}

export function nodeRestriction(pods: () => ResourceStore | undefined): Admission {
  const getPod = async (namespace: string, name: string): Promise<KObject> => {
    const store = pods();
    if (!store) throw apiErrors.notFound({ group: '', resource: 'pods' }, name);
    return store.get({ namespace }, name);
  };

  const admitPod = async (a: AdmissionAttributes, node: string, refuse: (m: string) => Error): Promise<void> => {
    switch (a.subresource) {
      case '':
        if (a.operation === 'CREATE') {
          const pod = a.object ?? {};
          if (!(MIRROR_POD_ANNOTATION in objOf(pod.metadata?.annotations))) {
            throw refuse(`pod does not have "${MIRROR_POD_ANNOTATION}" annotation, node "${node}" can only create mirror pods`);
          }
          const spec = objOf(pod['spec']);
          if (spec['nodeName'] !== node) throw refuse(`node "${node}" can only create pods with spec.nodeName set to itself`);
          const owners = listOf(pod.metadata?.ownerReferences);
          if (owners.length > 1) throw refuse(`node "${node}" can only create pods with a single owner reference set to itself`);
          const owner = owners[0];
          if (owner && (owner['apiVersion'] !== 'v1' || owner['kind'] !== 'Node' || owner['name'] !== node)) {
            throw refuse(`node "${node}" can only create pods with an owner reference set to itself`);
          }
          if (typeof spec['serviceAccountName'] === 'string' && spec['serviceAccountName'] !== '') {
            throw refuse(`node "${node}" can not create pods that reference a service account`);
          }
          const refs = podReferences(spec);
          if (refs.secrets) throw refuse(`node "${node}" can not create pods that reference secrets`);
          if (refs.configmaps) throw refuse(`node "${node}" can not create pods that reference configmaps`);
          if (refs.claims) throw refuse(`node "${node}" can not create pods that reference persistentvolumeclaims`);
          return;
        }
        if (a.operation === 'DELETE') {
          if (objOf(a.oldObject?.['spec'])['nodeName'] !== node) throw refuse(`node "${node}" can only delete pods with spec.nodeName set to itself`);
          return;
        }
        throw refuse(`unexpected operation "${a.operation}", node "${node}" can only create and delete mirror pods`);
      case 'status':
        if (a.operation !== 'UPDATE') throw refuse(`unexpected operation "${a.operation}"`);
        if (objOf(a.oldObject?.['spec'])['nodeName'] !== node) throw refuse(`node "${node}" can only update pod status for pods with spec.nodeName set to itself`);
        return;
      case 'eviction': {
        if (a.operation !== 'CREATE') throw refuse(`unexpected operation ${a.operation}`);
        const name = a.name || String(a.object?.metadata?.name ?? '');
        if (name === '') throw apiErrors.badRequest('could not determine pod from request data');
        const pod = await getPod(a.namespace, name);
        if (objOf(pod['spec'])['nodeName'] !== node) throw refuse(`node ${node} can only evict pods with spec.nodeName set to itself`);
        return;
      }
      default:
        throw refuse(`unexpected subresource "${a.subresource}", node "${node}" can only create and delete mirror pods, update pod status and evict pods`);
    }
  };

  const admitNode = (a: AdmissionAttributes, node: string, refuse: (m: string) => Error): void => {
    const requested = a.name || String(a.object?.metadata?.name ?? '');
    if (requested !== node) throw refuse(`node "${node}" is not allowed to modify node "${requested}"`);
    const spec = objOf(a.object?.['spec']);
    const labels = objOf(a.object?.metadata?.labels);
    if (a.operation === 'CREATE') {
      if (spec['configSource'] !== undefined && spec['configSource'] !== null) throw refuse(`node "${node}" is not allowed to create pods with a non-nil configSource`);
      const bad = forbiddenLabels(labels, {});
      if (bad.length > 0) throw refuse(`node "${node}" is not allowed to set the following labels: ${bad.join(', ')}`);
    }
    if (a.operation === 'UPDATE' && a.oldObject) {
      const oldSpec = objOf(a.oldObject['spec']);
      if (spec['configSource'] !== undefined && spec['configSource'] !== null && !isDeepStrictEqual(spec['configSource'], oldSpec['configSource'])) {
        throw refuse(`node "${node}" is not allowed to update configSource to a new non-nil configSource`);
      }
      if (!isDeepStrictEqual(spec['taints'] ?? [], oldSpec['taints'] ?? [])) throw refuse(`node "${node}" is not allowed to modify taints`);
      const bad = forbiddenLabels(labels, objOf(a.oldObject.metadata?.labels));
      if (bad.length > 0) throw refuse(`is not allowed to modify labels: ${bad.join(', ')}`);
    }
  };

  const admitPVC = (a: AdmissionAttributes, node: string, refuse: (m: string) => Error): void => {
    if (a.subresource !== 'status') throw refuse('may only update PVC status');
    if (a.operation !== 'UPDATE') throw refuse(`unexpected operation "${a.operation}"`);
    const strip = (o: KObject | undefined): Json => {
      const c = structuredClone(o ?? {}) as Json;
      if (isObj(c['metadata'])) {
        delete c['metadata']['resourceVersion'];
        delete c['metadata']['managedFields'];
      }
      if (isObj(c['status'])) {
        delete c['status']['capacity'];
        delete c['status']['conditions'];
      }
      return c;
    };
    if (!isDeepStrictEqual(strip(a.object), strip(a.oldObject))) {
      throw refuse(`node "${node}" is not allowed to update fields other than status.capacity and status.conditions`);
    }
  };

  const admitToken = async (a: AdmissionAttributes, refuse: (m: string) => Error): Promise<void> => {
    if (a.operation !== 'CREATE' || a.subresource !== 'token') return;
    const ref = objOf(objOf(a.object?.['spec'])['boundObjectRef']);
    if (ref['apiVersion'] !== 'v1' || ref['kind'] !== 'Pod' || typeof ref['name'] !== 'string' || ref['name'] === '') {
      throw refuse('node requested token not bound to a pod');
    }
    if (typeof ref['uid'] !== 'string' || ref['uid'] === '') throw refuse('node requested token with a pod binding without a uid');
    const pod = await getPod(a.namespace, ref['name']);
    if (pod.metadata?.uid !== ref['uid']) {
      throw refuse(
        `the UID in the bound object reference (${ref['uid']}) does not match the UID in record. The object might have been deleted and then recreated`,
      );
    }
    if (objOf(pod['spec'])['nodeName'] !== nodeOf(a.user)) throw refuse('node requested token bound to a pod scheduled on a different node');
  };

  const admitLease = (a: AdmissionAttributes, node: string, refuse: (m: string) => Error): void => {
    if (a.namespace !== NODE_LEASE_NAMESPACE) throw refuse(`can only access leases in the "${NODE_LEASE_NAMESPACE}" system namespace`);
    const name = a.operation === 'CREATE' ? String(a.object?.metadata?.name ?? '') : a.name;
    if (name !== node) throw refuse('can only access node lease with the same name as the requesting node');
  };

  const admit = async (a: AdmissionAttributes): Promise<void> => {
    const node = nodeOf(a.user);
    if (node === undefined) return;
    const refuse = (message: string) => apiErrors.forbidden({ group: a.decl.group, resource: a.decl.resource }, a.name, message);
    if (node === '') throw refuse(`could not determine node from user "${a.user?.name ?? ''}"`);
    const gr = `${a.decl.group}/${a.decl.resource}`;
    switch (gr) {
      case '/pods':
        return await admitPod(a, node, refuse);
      case '/nodes':
        return admitNode(a, node, refuse);
      case '/persistentvolumeclaims':
        return admitPVC(a, node, refuse);
      case '/serviceaccounts':
        return await admitToken(a, refuse);
      case 'coordination.k8s.io/leases':
        return admitLease(a, node, refuse);
      case 'storage.k8s.io/csinodes':
        if ((a.name || String(a.object?.metadata?.name ?? '')) !== node) throw refuse(`node "${node}" is not allowed to modify object "${a.name}"`);
        return;
      default:
        return;
    }
  };
  return {
    async mutate(a) {
      if (a.operation !== 'DELETE') await admit(a);
    },
    async validate(a) {
      // Deletes reach only the validating phase here.
      if (a.operation === 'DELETE') await admit(a);
    },
  };
}
