/**
 * StorageClass (storage.k8s.io/v1), as Kubernetes 1.23 serves it (pkg/registry/storage/storageclass):
 *   - cluster-scoped, short name sc; defaults: reclaimPolicy Delete, volumeBindingMode Immediate
 *   - validation: ValidateStorageClass / ValidateStorageClassUpdate (pkg/apis/storage/validation), with
 *     Kubernetes' wording; provisioner, parameters and reclaimPolicy cannot change, volumeBindingMode is
 *     immutable
 *   - table: printStorageClass: NAME (with ' (default)' for the default class) PROVISIONER RECLAIMPOLICY
 *     VOLUMEBINDINGMODE ALLOWVOLUMEEXPANSION AGE
 */
import type { KObject, KindDecl, TableColumn } from '../../kind.js';
import { AGE_COLUMN, isObject } from '../configmap.js';
import {
  FIELD_IMMUTABLE_ERROR_MSG,
  forbidden,
  invalid,
  isQualifiedName,
  nameIsDNSSubdomain,
  notSupported,
  required,
  root,
  tooLong,
  type FieldError,
} from '../../../util/validation.js';
import { STORAGE_CLASS_DEFINITIONS } from './definitions.js';

export const STORAGE_GROUP = 'storage.k8s.io';
const DEF = 'io.k8s.api.storage.v1.StorageClass';
export const DEFAULT_CLASS_ANNOTATION = 'storageclass.kubernetes.io/is-default-class';
export const BETA_DEFAULT_CLASS_ANNOTATION = 'storageclass.beta.kubernetes.io/is-default-class';
const RECLAIM_POLICIES = ['Delete', 'Retain'];
const BINDING_MODES = ['Immediate', 'WaitForFirstConsumer'];
const MAX_PARAMETERS = 512;
const MAX_PARAMETERS_SIZE = 256 * (1 << 10);

/** storageutil.IsDefaultAnnotation: the class is marked default (GA or beta annotation). */
export function isDefaultClass(obj: KObject): boolean {
  const a = obj.metadata?.annotations ?? {};
  return a[DEFAULT_CLASS_ANNOTATION] === 'true' || a[BETA_DEFAULT_CLASS_ANNOTATION] === 'true';
}

function validateStorageClass(obj: KObject): FieldError[] {
  const errs: FieldError[] = [];
  const provisioner = typeof obj['provisioner'] === 'string' ? obj['provisioner'] : '';
  if (provisioner === '') errs.push(required(root('provisioner'), provisioner));
  else for (const m of isQualifiedName(provisioner.toLowerCase())) errs.push(invalid(root('provisioner'), provisioner.toLowerCase(), m));
  const params: Record<string, unknown> = isObject(obj['parameters']) ? obj['parameters'] : {};
  if (Object.keys(params).length > MAX_PARAMETERS) errs.push(tooLong(root('parameters'), 'Provisioner Parameters exceeded max allowed', MAX_PARAMETERS));
  let size = 0;
  for (const [k, v] of Object.entries(params)) {
    if (k === '') errs.push(invalid(root('parameters'), k, 'field can not be empty.'));
    size += k.length + String(v).length;
  }
  if (size > MAX_PARAMETERS_SIZE) errs.push(tooLong(root('parameters'), '', MAX_PARAMETERS_SIZE));
  const policy: unknown = obj['reclaimPolicy'];
  if (typeof policy === 'string' && policy !== '' && !RECLAIM_POLICIES.includes(policy)) errs.push(notSupported(root('reclaimPolicy'), policy, RECLAIM_POLICIES));
  const mode: unknown = obj['volumeBindingMode'];
  if (mode === undefined || mode === null) errs.push(required(root('volumeBindingMode'), ''));
  else if (!BINDING_MODES.includes(mode as string)) errs.push(notSupported(root('volumeBindingMode'), mode, BINDING_MODES));
  const topologies: unknown[] = Array.isArray(obj['allowedTopologies']) ? obj['allowedTopologies'] : [];
  topologies.forEach((term, i) => {
    const exprs: unknown[] = isObject(term) && Array.isArray(term['matchLabelExpressions']) ? term['matchLabelExpressions'] : [];
    if (exprs.length === 0) errs.push(required(root('allowedTopologies').index(i).child('matchLabelExpressions'), 'must have at least one label key-value pair'));
  });
  return errs;
}

function validateStorageClassUpdate(obj: KObject, old: KObject): FieldError[] {
  const errs: FieldError[] = [];
  if (JSON.stringify(obj['parameters'] ?? {}) !== JSON.stringify(old['parameters'] ?? {})) errs.push(forbidden(root('parameters'), 'updates to parameters are forbidden.'));
  if (obj['provisioner'] !== old['provisioner']) errs.push(forbidden(root('provisioner'), 'updates to provisioner are forbidden.'));
  if (obj['reclaimPolicy'] !== old['reclaimPolicy']) errs.push(forbidden(root('reclaimPolicy'), 'updates to reclaimPolicy are forbidden.'));
  if (obj['volumeBindingMode'] !== old['volumeBindingMode']) errs.push(invalid(root('volumeBindingMode'), obj['volumeBindingMode'] ?? null, FIELD_IMMUTABLE_ERROR_MSG));
  return errs;
}

const props = STORAGE_CLASS_DEFINITIONS[DEF]!.properties!;
const text = (field: string, dflt: string) => (obj: KObject) => (typeof obj[field] === 'string' && obj[field] !== '' ? obj[field] : dflt);
const columns: TableColumn[] = [
  {
    name: 'Name',
    type: 'string',
    format: 'name',
    description:
      'Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: http://kubernetes.io/docs/user-guide/identifiers#names',
    priority: 0,
    cell: (obj) => `${obj.metadata?.name ?? ''}${isDefaultClass(obj) ? ' (default)' : ''}`,
  },
  { name: 'Provisioner', type: 'string', description: props['provisioner']!.description!, priority: 0, cell: text('provisioner', '') },
  { name: 'ReclaimPolicy', type: 'string', description: props['reclaimPolicy']!.description!, priority: 0, cell: text('reclaimPolicy', 'Delete') },
  { name: 'VolumeBindingMode', type: 'string', description: props['volumeBindingMode']!.description!, priority: 0, cell: text('volumeBindingMode', 'Immediate') },
  { name: 'AllowVolumeExpansion', type: 'string', description: props['allowVolumeExpansion']!.description!, priority: 0, cell: (obj) => obj['allowVolumeExpansion'] === true },
  AGE_COLUMN,
];

export const storageClassKind: KindDecl = {
  group: STORAGE_GROUP,
  version: 'v1',
  kind: 'StorageClass',
  listKind: 'StorageClassList',
  resource: 'storageclasses',
  singular: 'storageclass',
  shortNames: ['sc'],
  namespaced: false,
  nameValidator: nameIsDNSSubdomain,
  definition: DEF,
  listDefinition: 'io.k8s.api.storage.v1.StorageClassList',
  definitions: STORAGE_CLASS_DEFINITIONS,
  tracksGeneration: false,
  noNameColumn: true,
  columns,
  strategy: {
    default(obj: KObject): void {
      if (obj['reclaimPolicy'] === undefined || obj['reclaimPolicy'] === null) obj['reclaimPolicy'] = 'Delete';
      if (obj['volumeBindingMode'] === undefined || obj['volumeBindingMode'] === null) obj['volumeBindingMode'] = 'Immediate';
    },
    validate: (obj) => validateStorageClass(obj),
    validateUpdate: (obj, old) => [...validateStorageClass(obj), ...validateStorageClassUpdate(obj, old)],
  },
};
