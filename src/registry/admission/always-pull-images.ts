/**
 * AlwaysPullImages admission, as Kubernetes 1.23's (plugin/pkg/admission/alwayspullimages): every container
 * of a created pod, or of an updated pod whose images changed, gets imagePullPolicy Always (mutate), and a
 * container whose policy is still another one is refused (validate, 403), so that a pod cannot use an image
 * pulled by another pod with credentials it lacks.
 */
import { apiErrors } from '../errors.js';
import type { Admission, AdmissionAttributes } from '../store.js';
import { containersWithPath, isPodWrite, objOf, type Json } from './pod-helpers.js';

/** An update that adds no image the old pod did not have. */
function noNewImages(a: AdmissionAttributes & { object: Json }): boolean {
  if (a.operation !== 'UPDATE' || !a.oldObject) return false;
  const old = new Set(containersWithPath(objOf(a.oldObject['spec'])).map(({ container }) => container['image'] as unknown));
  return containersWithPath(objOf(a.object['spec'])).every(({ container }) => old.has(container['image']));
}

export function alwaysPullImages(): Admission {
  return {
    async mutate(a) {
      if (!isPodWrite(a) || noNewImages(a)) return;
      for (const { container } of containersWithPath(objOf(a.object['spec']))) container['imagePullPolicy'] = 'Always';
    },
    async validate(a) {
      if (!isPodWrite(a) || noNewImages(a)) return;
      for (const { container, path } of containersWithPath(objOf(a.object['spec']))) {
        if (container['imagePullPolicy'] !== 'Always') {
          throw apiErrors.forbidden(
            { group: '', resource: 'pods' },
            a.name,
            `${path}.imagePullPolicy: Unsupported value: ${JSON.stringify(container['imagePullPolicy'] ?? '')}: supported values: "Always"`,
          );
        }
      }
    },
  };
}
