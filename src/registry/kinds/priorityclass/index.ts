/**
 * PriorityClass (scheduling.k8s.io/v1), as Kubernetes 1.23 serves it (pkg/registry/scheduling/priorityclass):
 *   - cluster-scoped, short name pc; preemptionPolicy defaults to PreemptLowerPriority
 *   - validation: ValidatePriorityClass / ValidatePriorityClassUpdate (pkg/apis/scheduling/validation), with
 *     Kubernetes' wording: names starting with 'system-' are reserved for the system classes, user classes
 *     may not exceed 1000000000, value and preemptionPolicy are immutable
 *   - the system classes (system-cluster-critical, system-node-critical) are made at start
 *     (ensureSystemPriorityClasses) and cannot be deleted
 *   - table: printPriorityClass: NAME VALUE GLOBAL-DEFAULT AGE
 */
import type { KObject, KindDecl, TableColumn } from '../../kind.js';
import { apiErrors, isStatusError } from '../../errors.js';
import type { ResourceStore } from '../../store.js';
import { AGE_COLUMN } from '../configmap.js';
import { FIELD_IMMUTABLE_ERROR_MSG, forbidden, invalid, nameIsDNSSubdomain, notSupported, root, type FieldError } from '../../../util/validation.js';
import { PRIORITY_CLASS_DEFINITIONS } from './definitions.js';

export const SCHEDULING_GROUP = 'scheduling.k8s.io';
const DEF = 'io.k8s.api.scheduling.v1.PriorityClass';
const SYSTEM_PREFIX = 'system-';
/** The highest value a user-defined class may have. */
export const HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000;
export const PREEMPTION_POLICIES = ['Never', 'PreemptLowerPriority'];

/** The classes every cluster has (pkg/apis/scheduling/v1 SystemPriorityClasses). */
export const SYSTEM_PRIORITY_CLASSES: readonly { name: string; value: number; description: string }[] = [
  { name: 'system-node-critical', value: 2_000_001_000, description: 'Used for system critical pods that must not be moved from their current node.' },
  {
    name: 'system-cluster-critical',
    value: 2_000_000_000,
    description: 'Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.',
  },
];

/** IsKnownSystemPriorityClass: undefined when it is one, else Kubernetes' reason. */
function systemClassError(name: string, value: unknown, globalDefault: boolean): string | undefined {
  const known = SYSTEM_PRIORITY_CLASSES.find((c) => c.name === name);
  if (!known) return `name ${name} is not a known system priority class`;
  if (value !== known.value) return `value of ${name} PriorityClass must be ${known.value}`;
  if (globalDefault) return `globalDefault of ${name} PriorityClass must be false`;
  return undefined;
}

export function validatePreemptionPolicy(value: unknown, path: ReturnType<typeof root>): FieldError[] {
  if (value === undefined || value === null) return [];
  return PREEMPTION_POLICIES.includes(value as string) ? [] : [notSupported(path, value, PREEMPTION_POLICIES)];
}

function validatePriorityClass(obj: KObject): FieldError[] {
  const errs: FieldError[] = [];
  const name = obj.metadata?.name ?? '';
  const value: unknown = obj['value'] ?? 0;
  if (name.startsWith(SYSTEM_PREFIX)) {
    const reason = systemClassError(name, value, obj['globalDefault'] === true);
    if (reason) {
      errs.push(forbidden(root('metadata', 'name'), `priority class names with '${SYSTEM_PREFIX}' prefix are reserved for system use only. error: ${reason}`));
    }
  } else if (typeof value === 'number' && value > HIGHEST_USER_DEFINABLE_PRIORITY) {
    errs.push(forbidden(root('value'), `maximum allowed value of a user defined priority is ${HIGHEST_USER_DEFINABLE_PRIORITY}`));
  }
  errs.push(...validatePreemptionPolicy(obj['preemptionPolicy'], root('preemptionPolicy')));
  return errs;
}

function validatePriorityClassUpdate(obj: KObject, old: KObject): FieldError[] {
  const errs: FieldError[] = [];
  if ((obj['value'] ?? 0) !== (old['value'] ?? 0)) errs.push(forbidden(root('value'), 'may not be changed in an update.'));
  if ((obj['preemptionPolicy'] ?? null) !== (old['preemptionPolicy'] ?? null)) {
    errs.push(invalid(root('preemptionPolicy'), obj['preemptionPolicy'] ?? null, FIELD_IMMUTABLE_ERROR_MSG));
  }
  return errs;
}

const props = PRIORITY_CLASS_DEFINITIONS[DEF]!.properties!;
const columns: TableColumn[] = [
  { name: 'Value', type: 'integer', description: props['value']!.description!, priority: 0, cell: (obj) => obj['value'] ?? 0 },
  { name: 'Global-Default', type: 'boolean', description: props['globalDefault']!.description!, priority: 0, cell: (obj) => obj['globalDefault'] === true },
  AGE_COLUMN,
];

export const priorityClassKind: KindDecl = {
  group: SCHEDULING_GROUP,
  version: 'v1',
  kind: 'PriorityClass',
  listKind: 'PriorityClassList',
  resource: 'priorityclasses',
  singular: 'priorityclass',
  shortNames: ['pc'],
  namespaced: false,
  nameValidator: nameIsDNSSubdomain,
  definition: DEF,
  listDefinition: 'io.k8s.api.scheduling.v1.PriorityClassList',
  definitions: PRIORITY_CLASS_DEFINITIONS,
  tracksGeneration: false,
  columns,
  strategy: {
    default(obj: KObject): void {
      if (obj['preemptionPolicy'] === undefined || obj['preemptionPolicy'] === null) obj['preemptionPolicy'] = 'PreemptLowerPriority';
    },
    validate: (obj) => validatePriorityClass(obj),
    validateUpdate: (obj, old) => [...validatePriorityClass(obj), ...validatePriorityClassUpdate(obj, old)],
  },
  /** The system classes cannot be deleted (Kubernetes' REST Delete refuses them). */
  beforeDelete(obj: KObject): KObject | null {
    const name = obj.metadata?.name ?? '';
    if (SYSTEM_PRIORITY_CLASSES.some((c) => c.name === name)) {
      throw apiErrors.forbidden({ group: SCHEDULING_GROUP, resource: 'priorityclasses' }, name, 'this is a system priority class and cannot be deleted');
    }
    return null;
  },
};

/** Creates the system priority classes that do not exist (the scheduling post-start hook); none when not served. */
export async function ensureSystemPriorityClasses(store: ResourceStore | undefined): Promise<void> {
  if (!store) return;
  for (const c of SYSTEM_PRIORITY_CLASSES) {
    try {
      await store.create(
        { namespace: '' },
        { apiVersion: `${SCHEDULING_GROUP}/v1`, kind: 'PriorityClass', metadata: { name: c.name }, value: c.value, description: c.description },
      );
    } catch (err) {
      if (!isStatusError(err, 'AlreadyExists')) throw err;
    }
  }
}
