/**
 * RuntimeClass (node.k8s.io/v1), as Kubernetes 1.23 serves it (pkg/registry/node/runtimeclass):
 *   - cluster-scoped; handler (a DNS label) is immutable; overhead.podFixed is validated as resource limits
 *     and stored in canonical form; scheduling.nodeSelector as labels and scheduling.tolerations as a pod's
 *   - table: printRuntimeClass: NAME HANDLER AGE
 * The RuntimeClass admission plugin (registry/admission/runtimeclass.ts) applies a class to the pods naming it.
 */
import type { KObject, KindDecl, TableColumn } from '../../kind.js';
import { AGE_COLUMN, isObject } from '../configmap.js';
import { FIELD_IMMUTABLE_ERROR_MSG, invalid, isDNS1123Label, nameIsDNSSubdomain, root, validateLabels, type FieldError } from '../../../util/validation.js';
import { tryParseQuantity } from '../../../util/quantity.js';
import { validateResourceRequirements, validateTolerations } from '../pod/validation.js';
import { RUNTIME_CLASS_DEFINITIONS } from './definitions.js';

export const NODE_GROUP = 'node.k8s.io';
const DEF = 'io.k8s.api.node.v1.RuntimeClass';

function validateRuntimeClass(obj: KObject): FieldError[] {
  const errs: FieldError[] = [];
  const handler = typeof obj['handler'] === 'string' ? obj['handler'] : '';
  for (const m of isDNS1123Label(handler)) errs.push(invalid(root('handler'), handler, m));
  const overhead: unknown = obj['overhead'];
  if (isObject(overhead) && overhead['podFixed'] !== undefined) errs.push(...validateResourceRequirements({ limits: overhead['podFixed'] }, root('overhead')));
  const scheduling: unknown = obj['scheduling'];
  if (isObject(scheduling)) {
    if (scheduling['nodeSelector'] !== undefined) errs.push(...validateLabels(scheduling['nodeSelector'], root('scheduling', 'nodeSelector')));
    errs.push(...validateTolerations(scheduling['tolerations'] ?? [], root('scheduling', 'tolerations')));
  }
  return errs;
}

function canonicalize(obj: KObject): void {
  const fixed: unknown = isObject(obj['overhead']) ? obj['overhead']['podFixed'] : undefined;
  if (!isObject(fixed)) return;
  for (const [k, v] of Object.entries(fixed)) {
    const q = typeof v === 'string' || typeof v === 'number' ? tryParseQuantity(String(v)) : null;
    if (q) fixed[k] = q.canonical();
  }
}

const columns: TableColumn[] = [
  {
    name: 'Handler',
    type: 'string',
    description: RUNTIME_CLASS_DEFINITIONS[DEF]!.properties!['handler']!.description!,
    priority: 0,
    cell: (obj) => (typeof obj['handler'] === 'string' ? obj['handler'] : ''),
  },
  AGE_COLUMN,
];

export const runtimeClassKind: KindDecl = {
  group: NODE_GROUP,
  version: 'v1',
  kind: 'RuntimeClass',
  listKind: 'RuntimeClassList',
  resource: 'runtimeclasses',
  singular: 'runtimeclass',
  namespaced: false,
  nameValidator: nameIsDNSSubdomain,
  definition: DEF,
  listDefinition: 'io.k8s.api.node.v1.RuntimeClassList',
  definitions: RUNTIME_CLASS_DEFINITIONS,
  tracksGeneration: false,
  columns,
  strategy: {
    validate: (obj) => validateRuntimeClass(obj),
    validateUpdate: (obj, old) => {
      const errs = validateRuntimeClass(obj);
      if (obj['handler'] !== old['handler']) errs.push(invalid(root('handler'), obj['handler'] ?? '', FIELD_IMMUTABLE_ERROR_MSG));
      return errs;
    },
    canonicalize,
  },
};
