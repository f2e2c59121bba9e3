/**
 * The local APIServices, as kube-apiserver's autoregister controller keeps them (pkg/controlplane/
 * controller/apiserver... aggregator.go): at start, one APIService `<version>.<group>` ('v1.' for the core
 * group) for every group version this server serves, without a service, with Kubernetes' group and version
 * priorities and the label kube-aggregator.kubernetes.io/automanaged=onstart; spec changes are put back, and
 * the on-start APIServices of group versions no longer served (--runtime-config) are deleted.
 */
import { isStatusError } from '../../registry/errors.js';
import type { KObject, KindDecl } from '../../registry/kind.js';
import { APIREGISTRATION_GROUP } from '../../registry/kinds/apiregistration/index.js';
import type { Registry } from '../../registry/registry.js';

export const AUTOMANAGED_LABEL = 'kube-aggregator.kubernetes.io/automanaged';

/** Kubernetes 1.23's priorities of the built-in group versions (group minimum, version). */
const PRIORITIES: Record<string, [number, number]> = {
  '/v1': [18000, 1],
  'apiregistration.k8s.io/v1': [18000, 15],
  'apps/v1': [17800, 15],
  'events.k8s.io/v1': [17750, 15],
  'events.k8s.io/v1beta1': [17750, 5],
  'authentication.k8s.io/v1': [17700, 15],
  'authorization.k8s.io/v1': [17600, 15],
  'autoscaling/v1': [17500, 15],
  'batch/v1': [17400, 15],
  'certificates.k8s.io/v1': [17300, 15],
  'networking.k8s.io/v1': [17200, 15],
  'policy/v1': [17100, 15],
  'policy/v1beta1': [17100, 9],
  'rbac.authorization.k8s.io/v1': [17000, 15],
  'storage.k8s.io/v1': [16800, 15],
  'apiextensions.k8s.io/v1': [16700, 15],
  'admissionregistration.k8s.io/v1': [16700, 15],
  'scheduling.k8s.io/v1': [16600, 15],
  'coordination.k8s.io/v1': [16500, 15],
  'node.k8s.io/v1': [16300, 15],
  'discovery.k8s.io/v1': [16200, 15],
  'flowcontrol.apiserver.k8s.io/v1beta2': [16100, 12],
  'flowcontrol.apiserver.k8s.io/v1beta1': [16100, 9],
  'internal.apiserver.k8s.io/v1alpha1': [30, 9],
};

/** The local APIService of a group version. */
export function localAPIService(group: string, version: string): KObject {
  const [gpm, vp] = PRIORITIES[`${group}/${version}`] ?? [1000, 15];
  return {
    apiVersion: `${APIREGISTRATION_GROUP}/v1`,
    kind: 'APIService',
    metadata: { name: `${version}.${group}`, labels: { [AUTOMANAGED_LABEL]: 'onstart' } },
    spec: { group, version, groupPriorityMinimum: gpm, versionPriority: vp },
  };
}

/** Creates or repairs the local APIServices of `served`, and deletes stale on-start ones. */
export async function registerLocalAPIServices(registry: Registry, served: readonly KindDecl[], log?: (m: string) => void): Promise<void> {
  const store = registry.store(APIREGISTRATION_GROUP, 'v1', 'apiservices');
  if (!store) return;
  const scope = { namespace: '', fieldManager: 'kube-apiserver' };
  const wanted = new Map<string, KObject>();
  for (const k of served) {
    const o = localAPIService(k.group, k.version);
    wanted.set(o.metadata!.name!, o);
  }
  for (const [name, desired] of wanted) {
    try {
      await store.create(scope, structuredClone(desired));
    } catch (err) {
      if (!isStatusError(err, 'AlreadyExists')) throw err;
      const cur = await store.get(scope, name);
      if (JSON.stringify(cur['spec']) === JSON.stringify(desired['spec']) && cur.metadata?.labels?.[AUTOMANAGED_LABEL] === 'onstart') continue;
      await store.update(scope, name, (cur) => {
        const next = structuredClone(cur ?? desired);
        next['spec'] = structuredClone(desired['spec']);
        next.metadata = { ...(next.metadata ?? {}), labels: { ...(next.metadata?.labels ?? {}), [AUTOMANAGED_LABEL]: 'onstart' } };
        return next;
      });
    }
  }
  const list = await store.list({ namespace: '' }, {});
  for (const o of (list['items'] ?? []) as KObject[]) {
    const name = o.metadata?.name ?? '';
    if (o.metadata?.labels?.[AUTOMANAGED_LABEL] !== 'onstart' || wanted.has(name)) continue;
    try {
      await store.delete(scope, name);
      log?.(`autoregister: deleted APIService ${name}: its group version is not served`);
    } catch (err) {
      if (!isStatusError(err, 'NotFound')) throw err;
    }
  }
}
