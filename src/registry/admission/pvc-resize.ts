/**
 * PersistentVolumeClaimResize admission, as Kubernetes 1.23's (plugin/pkg/admission/storage/persistentvolume/resize):
 * an update growing a claim's spec.resources.requests.storage is refused (403) unless the claim is Bound
 * and its StorageClass (spec.storageClassName, else the beta annotation) has allowVolumeExpansion: true.
 */
import { apiErrors, isStatusError } from '../errors.js';
import type { KObject } from '../kind.js';
import type { Admission, AdmissionAttributes, ResourceStore } from '../store.js';
import { tryParseQuantity } from '../../util/quantity.js';
import { BETA_STORAGE_CLASS_ANNOTATION } from './default-storage-class.js';

type Json = Record<string, any>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

function storageOf(pvc: KObject | undefined): bigint {
  const spec: Json = isObject(pvc?.['spec']) ? pvc['spec'] : {};
  const v: unknown = isObject(spec['resources']) && isObject(spec['resources']['requests']) ? spec['resources']['requests']['storage'] : undefined;
  const q = typeof v === 'string' || typeof v === 'number' ? tryParseQuantity(String(v)) : null;
  return q ? q.milliValue() : 0n;
}

/** GetPersistentVolumeClaimClass: the beta annotation wins over spec.storageClassName. */
function claimClass(pvc: KObject): string {
  const beta = pvc.metadata?.annotations?.[BETA_STORAGE_CLASS_ANNOTATION];
  if (beta !== undefined) return beta;
  const spec: Json = isObject(pvc['spec']) ? pvc['spec'] : {};
  return typeof spec['storageClassName'] === 'string' ? spec['storageClassName'] : '';
}

async function allowResize(old: KObject, classes: ResourceStore | undefined): Promise<boolean> {
  const name = claimClass(old);
  if (name === '' || !classes) return false;
  try {
    const sc = await classes.get({ namespace: '' }, name);
    return sc['allowVolumeExpansion'] === true;
  } catch (err) {
    if (isStatusError(err, 'NotFound')) return false;
    throw err;
  }
}

export function pvcResize(storageClasses: () => ResourceStore | undefined): Admission {
  return {
    handles: (d, op) => op === 'UPDATE' && d.group === '' && d.resource === 'persistentvolumeclaims',
    async validate(a: AdmissionAttributes) {
      if (a.operation !== 'UPDATE' || a.decl.group !== '' || a.decl.resource !== 'persistentvolumeclaims' || a.subresource !== '') return;
      if (!a.object || !a.oldObject || storageOf(a.object) <= storageOf(a.oldObject)) return;
      const gr = { group: '', resource: 'persistentvolumeclaims' };
      if (a.oldObject['status']?.['phase'] !== 'Bound') throw apiErrors.forbidden(gr, a.name, 'Only bound persistent volume claims can be expanded');
      if (!(await allowResize(a.oldObject, storageClasses()))) {
        throw apiErrors.forbidden(gr, a.name, 'only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize');
      }
    },
  };
}
