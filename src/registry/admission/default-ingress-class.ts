/**
 * DefaultIngressClass admission, as Kubernetes 1.23's (plugin/pkg/admission/network/defaultingressclass): an
 * Ingress created without spec.ingressClassName and without the kubernetes.io/ingress.class annotation gets
 * the name of the IngressClass annotated ingressclass.kubernetes.io/is-default-class=true. With several
 * default classes the Ingress is refused (403); with none it is left alone.
 */
import { lister } from './informer.js';
import { apiErrors } from '../errors.js';
import type { Admission, ResourceStore } from '../store.js';
import { objOf, podSpec } from './pod-helpers.js';

const DEFAULT_ANNOTATION = 'ingressclass.kubernetes.io/is-default-class';
const CLASS_ANNOTATION = 'kubernetes.io/ingress.class';

export function defaultIngressClass(classes: () => ResourceStore | undefined): Admission {
  const cached = lister(classes);
  return {
    handles: (d, op) => op === 'CREATE' && d.group === 'networking.k8s.io' && d.resource === 'ingresses',
    async mutate(a) {
      if (a.operation !== 'CREATE' || a.decl.group !== 'networking.k8s.io' || a.decl.resource !== 'ingresses' || a.subresource !== '' || !a.object) return;
      const spec = podSpec(a.object);
      if (spec['ingressClassName'] !== undefined && spec['ingressClassName'] !== null) return;
      if (CLASS_ANNOTATION in objOf(a.object.metadata?.annotations)) return;
      if (!cached.served()) return;
      const defaults = (await cached.list('')).filter((c) => objOf(c.metadata?.annotations)[DEFAULT_ANNOTATION] === 'true');
      if (defaults.length === 0) return;
      if (defaults.length > 1) {
        throw apiErrors.forbidden(
          { group: a.decl.group, resource: a.decl.resource },
          a.name,
          `Internal error occurred: ${defaults.length} default IngressClasses were found, only 1 allowed`,
        );
      }
      spec['ingressClassName'] = defaults[0]!.metadata?.name ?? '';
    },
  };
}
