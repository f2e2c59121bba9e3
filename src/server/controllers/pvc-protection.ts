/**
 * The pvc-protection controller, as Kubernetes': removes the kubernetes.io/pvc-protection finalizer from a
 * deleted claim once no pod that is not finished uses it, so the claim can go.
 */
import { isStatusError } from '../../registry/errors.js';
import type { KObject } from '../../registry/kind.js';
import { PVC_PROTECTION_FINALIZER } from '../../registry/kinds/pvc.js';
import type { Registry } from '../../registry/registry.js';
import { removeFinalizer, runController, type Controller } from './runner.js';

const SYSTEM = { name: 'system:serviceaccount:kube-system:pvc-protection-controller', groups: ['system:serviceaccounts'] };

/** Whether a pod that has not finished mounts the claim (there are no pods while the Pod kind is not served). */
async function claimInUse(registry: Registry, namespace: string, claim: string): Promise<boolean> {
  const pods = registry.store('', 'v1', 'pods');
  if (!pods) return false;
  const list = await pods.list({ namespace }, {});
  return (list.items as KObject[]).some(
    (pod) =>
      pod.status?.phase !== 'Succeeded' &&
      pod.status?.phase !== 'Failed' &&
      (pod.spec?.volumes ?? []).some((v: KObject) => v.persistentVolumeClaim?.claimName === claim),
  );
}

export function startPvcProtectionController(registry: Registry, log?: (m: string) => void): Controller {
  const claims = registry.store('', 'v1', 'persistentvolumeclaims')!;
  return runController({
    name: 'pvc-protection controller',
    store: claims,
    wants: (pvc) => !!pvc.metadata?.deletionTimestamp && (pvc.metadata.finalizers ?? []).includes(PVC_PROTECTION_FINALIZER),
    async sync(namespace, name) {
      if (await claimInUse(registry, namespace, name)) return 5000;
      try {
        await removeFinalizer(claims, namespace, name, PVC_PROTECTION_FINALIZER, SYSTEM);
      } catch (err) {
        if (isStatusError(err, 'NotFound')) return null;
        if (isStatusError(err, 'Conflict')) return 100;
        throw err;
      }
      return null;
    },
    ...(log ? { log } : {}),
  });
}
