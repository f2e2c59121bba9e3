/**
 * StorageObjectInUseProtection admission, as Kubernetes': every new PersistentVolumeClaim gets the
 * kubernetes.io/pvc-protection finalizer, so that a claim still used by a pod is not removed under it.
 * The pvc-protection controller removes the finalizer once a deleted claim is no longer in use.
 */
import { PVC_PROTECTION_FINALIZER } from '../kinds/pvc.js';
import type { Admission } from '../store.js';

export function storageObjectInUseProtection(): Admission {
  return {
    handles: (d, op) => op === 'CREATE' && d.group === '' && d.resource === 'persistentvolumeclaims',
    async mutate(a) {
      if (a.operation !== 'CREATE' || a.decl.group !== '' || a.decl.resource !== 'persistentvolumeclaims' || !a.object) return;
      const meta = (a.object.metadata ??= {});
      const finalizers = meta.finalizers ?? [];
      if (!finalizers.includes(PVC_PROTECTION_FINALIZER)) meta.finalizers = [...finalizers, PVC_PROTECTION_FINALIZER];
    },
  };
}
