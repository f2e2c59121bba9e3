/**
 * Priority admission, as Kubernetes 1.23's (plugin/pkg/admission/priority):
 *   - mutate, pods (main resource): on create, spec.priority (and preemptionPolicy) from the class named
 *     in priorityClassName, or from the global default class (whose name is then set), or 0 and
 *     PreemptLowerPriority when there is none; an unknown class, or a priority or preemptionPolicy given
 *     that differs from the class's, is refused (403). On update, a priority or preemptionPolicy dropped
 *     from the object is kept from the old one.
 *   - validate, priorityclasses: only one class may be the global default.
 * The classes are read from an in-memory copy (informer.ts), as Kubernetes' plugin reads its lister.
 */
import { lister, type Lister } from './informer.js';
import { apiErrors, isStatusError } from '../errors.js';
import type { KObject } from '../kind.js';
import type { Admission, AdmissionAttributes, ResourceStore } from '../store.js';

type Json = Record<string, any>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The global default class: of those marked globalDefault, the one with the lowest value. */
async function defaultClass(classes: Lister): Promise<KObject | undefined> {
  let best: KObject | undefined;
  for (const pc of await classes.list('')) {
    if (pc['globalDefault'] === true && (best === undefined || (pc['value'] ?? 0) < (best['value'] ?? 0))) best = pc;
  }
  return best;
}

function forbidden(a: AdmissionAttributes, message: string): Error {
  return apiErrors.forbidden({ group: a.decl.group, resource: a.decl.resource }, a.name, message);
}

async function admitPodCreate(a: AdmissionAttributes, spec: Json, classes: Lister): Promise<void> {
  let priority = 0;
  let policy: string | undefined = 'PreemptLowerPriority';
  const named = typeof spec['priorityClassName'] === 'string' ? spec['priorityClassName'] : '';
  if (named === '') {
    const dpc = await defaultClass(classes);
    if (dpc) {
      spec['priorityClassName'] = dpc.metadata?.name ?? '';
      priority = (dpc['value'] as number | undefined) ?? 0;
      policy = dpc['preemptionPolicy'] as string | undefined;
    }
  } else {
    let pc: KObject;
    try {
      pc = await classes.get('', named);
    } catch (err) {
      if (isStatusError(err, 'NotFound')) throw forbidden(a, `no PriorityClass with name ${named} was found`);
      throw err;
    }
    priority = (pc['value'] as number | undefined) ?? 0;
    policy = pc['preemptionPolicy'] as string | undefined;
  }
  if (typeof spec['priority'] === 'number' && spec['priority'] !== priority) {
    throw forbidden(
      a,
      `the integer value of priority (${spec['priority']}) must not be provided in pod spec; priority admission controller computed ${priority} from the given PriorityClass name`,
    );
  }
  spec['priority'] = priority;
  if (policy !== undefined) {
    if (typeof spec['preemptionPolicy'] === 'string' && spec['preemptionPolicy'] !== policy) {
      throw forbidden(
        a,
        `the string value of PreemptionPolicy (${spec['preemptionPolicy']}) must not be provided in pod spec; priority admission controller computed ${policy} from the given PriorityClass name`,
      );
    }
    spec['preemptionPolicy'] = policy;
  }
}

export function priorityAdmission(priorityClasses: () => ResourceStore | undefined): Admission {
  const cached = lister(priorityClasses);
  return {
    handles: (d) => (d.group === '' && d.resource === 'pods') || (d.group === 'scheduling.k8s.io' && d.resource === 'priorityclasses'),
    async mutate(a) {
      if (a.decl.group !== '' || a.decl.resource !== 'pods' || a.subresource !== '' || !a.object || !isObject(a.object['spec'])) return;
      const spec = a.object['spec'];
      if (a.operation === 'UPDATE') {
        const old = isObject(a.oldObject?.['spec']) ? a.oldObject['spec'] : {};
        if (spec['priority'] === undefined && old['priority'] !== undefined) spec['priority'] = old['priority'];
        if (spec['preemptionPolicy'] === undefined && old['preemptionPolicy'] !== undefined) spec['preemptionPolicy'] = old['preemptionPolicy'];
        return;
      }
      if (a.operation === 'CREATE' && cached.served()) await admitPodCreate(a, spec, cached);
    },
    async validate(a) {
      if (a.decl.group !== 'scheduling.k8s.io' || a.decl.resource !== 'priorityclasses' || a.subresource !== '' || !a.object) return;
      if (a.operation !== 'CREATE' && a.operation !== 'UPDATE') return;
      if (a.object['globalDefault'] !== true || !cached.served()) return;
      const dpc = await defaultClass(cached);
      if (dpc && (a.operation === 'CREATE' || dpc.metadata?.name !== a.name)) {
        throw forbidden(a, `PriorityClass ${dpc.metadata?.name ?? ''} is already marked as default. Only one default can exist`);
      }
    },
  };
}
