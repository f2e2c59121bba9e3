/**
 * RuntimeClass admission, as Kubernetes 1.23's (plugin/pkg/admission/runtimeclass), for pod creates naming
 * spec.runtimeClassName:
 *   - mutate: an unknown class is refused (403 'pod rejected: RuntimeClass "x" not found'); the class's
 *     overhead.podFixed becomes the pod's spec.overhead (a different one given is refused); its
 *     scheduling.nodeSelector is merged into the pod's (a conflicting value is refused) and its tolerations
 *     are added.
 *   - validate: the pod's overhead must be the class's; a pod without a class (or whose class has none)
 *     may not set an overhead.
 */
import { apiErrors, isStatusError } from '../errors.js';
import type { KObject } from '../kind.js';
import type { Admission, AdmissionAttributes, ResourceStore } from '../store.js';
import { tryParseQuantity } from '../../util/quantity.js';
import { isObj, listOf, objOf, podSpec, type Json } from './pod-helpers.js';
import { addOrUpdateToleration } from './pod-restrictions.js';

const PODS = { group: '', resource: 'pods' };

const applies = (a: AdmissionAttributes): boolean =>
  a.decl.group === '' && a.decl.resource === 'pods' && a.subresource === '' && a.operation === 'CREATE' && isObj(a.object);

/** Resource lists equal as quantities (Kubernetes' semantic equality). */
function sameResources(x: unknown, y: unknown): boolean {
  const canon = (v: unknown): string | undefined => {
    if (!isObj(v)) return undefined;
    const out: Record<string, string> = {};
    for (const [k, q] of Object.entries(v)) out[k] = tryParseQuantity(String(q))?.canonical() ?? String(q);
    return JSON.stringify(Object.entries(out).sort(([a], [b]) => (a < b ? -1 : 1)));
  };
  return canon(x) === canon(y);
}

export function runtimeClassAdmission(classes: () => ResourceStore | undefined): Admission {
  const forbidden = (a: AdmissionAttributes, message: string) => apiErrors.forbidden(PODS, a.name, message);

  const classOf = async (a: AdmissionAttributes, spec: Json): Promise<KObject | undefined> => {
    const name = spec['runtimeClassName'];
    if (typeof name !== 'string' || name === '') return undefined;
    const store = classes();
    if (!store) return undefined;
    try {
      return await store.get({ namespace: '' }, name);
    } catch (err) {
      if (isStatusError(err, 'NotFound')) throw forbidden(a, `pod rejected: RuntimeClass ${JSON.stringify(name)} not found`);
      throw err;
    }
  };

  return {
    handles: (d, op) => op === 'CREATE' && d.group === '' && d.resource === 'pods',
    async mutate(a) {
      if (!applies(a)) return;
      const spec = podSpec(a.object!);
      const rc = await classOf(a, spec);
      if (!rc) return;
      const overhead = objOf(rc['overhead'])['podFixed'];
      if (isObj(overhead)) {
        if (spec['overhead'] !== undefined && spec['overhead'] !== null && !sameResources(overhead, spec['overhead'])) {
          throw forbidden(a, "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead");
        }
        spec['overhead'] = structuredClone(overhead);
      }
      const scheduling = rc['scheduling'];
      if (!isObj(scheduling)) return;
      const selector = objOf(scheduling['nodeSelector']) as Record<string, string>;
      const podSelector = objOf(spec['nodeSelector']) as Record<string, string>;
      for (const [k, v] of Object.entries(selector)) {
        if (k in podSelector && podSelector[k] !== v) {
          throw forbidden(a, `conflict: runtimeClass.scheduling.nodeSelector[${k}] = ${v}; pod.spec.nodeSelector[${k}] = ${podSelector[k]}`);
        }
      }
      if (Object.keys(selector).length > 0) spec['nodeSelector'] = { ...podSelector, ...selector };
      for (const t of listOf(scheduling['tolerations'])) addOrUpdateToleration(spec, structuredClone(t));
    },
    async validate(a) {
      if (!applies(a)) return;
      const spec = objOf(a.object!['spec']);
      const rc = await classOf(a, spec);
      const overhead = rc ? objOf(rc['overhead'])['podFixed'] : undefined;
      if (isObj(overhead)) {
        if (!sameResources(overhead, spec['overhead'])) throw forbidden(a, "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead");
      } else if (spec['overhead'] !== undefined && spec['overhead'] !== null) {
        throw forbidden(a, 'pod rejected: Overhead set without corresponding RuntimeClass defined Overhead');
      }
    },
  };
}
