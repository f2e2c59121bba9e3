/**
 * DefaultStorageClass admission, as Kubernetes 1.23's (plugin/pkg/admission/storage/storageclass/setdefault):
 * a new PersistentVolumeClaim that names no class (neither spec.storageClassName nor the beta annotation
 * volume.beta.kubernetes.io/storage-class) gets the default StorageClass, the one annotated
 * storageclass.kubernetes.io/is-default-class=true. More than one default class refuses the claim (403,
 * as 1.23 does). The classes are read from an in-memory copy (informer.ts), as Kubernetes' lister.
 */
import { lister } from './informer.js';
import { apiErrors } from '../errors.js';
import type { Admission, ResourceStore } from '../store.js';
import { isDefaultClass } from '../kinds/storageclass/index.js';

export const BETA_STORAGE_CLASS_ANNOTATION = 'volume.beta.kubernetes.io/storage-class';

export function defaultStorageClass(storageClasses: () => ResourceStore | undefined): Admission {
  const classes = lister(storageClasses);
  return {
    handles: (d, op) => op === 'CREATE' && d.group === '' && d.resource === 'persistentvolumeclaims',
    async mutate(a) {
      if (a.operation !== 'CREATE' || a.decl.group !== '' || a.decl.resource !== 'persistentvolumeclaims' || a.subresource !== '' || !a.object) return;
      const spec = a.object['spec'];
      if (typeof spec !== 'object' || spec === null || Array.isArray(spec)) return;
      const s = spec as Record<string, unknown>;
      if ((s['storageClassName'] !== undefined && s['storageClassName'] !== null) || a.object.metadata?.annotations?.[BETA_STORAGE_CLASS_ANNOTATION] !== undefined) return;
      if (!classes.served()) return;
      const defaults = (await classes.list('')).filter(isDefaultClass);
      if (defaults.length > 1) {
        // Kubernetes wraps the internal error getDefaultClass returns in a Forbidden.
        throw apiErrors.forbidden({ group: '', resource: 'persistentvolumeclaims' }, a.name, `Internal error occurred: ${defaults.length} default StorageClasses were found`);
      }
      if (defaults.length === 1) s['storageClassName'] = defaults[0]!.metadata?.name ?? '';
    },
  };
}
