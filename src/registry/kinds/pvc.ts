/**
 * PersistentVolumeClaim (core/v1), as Kubernetes 1.23 serves it:
 *   - strategy: pkg/registry/core/persistentvolumeclaim/strategy.go (status cleared on create and kept on
 *     update; the status subresource keeps spec)
 *   - disabled fields and data sources: pkg/api/persistentvolumeclaim/util.go (DropDisabledFields,
 *     EnforceDataSourceBackwardsCompatibility, NormalizeDataSources, DropDisabledFieldsFromStatus)
 *   - validation: ValidatePersistentVolumeClaim(Spec), ValidatePersistentVolumeClaimUpdate,
 *     ValidatePersistentVolumeClaimStatusUpdate, ValidationOptionsForPersistentVolumeClaim
 *     (pkg/apis/core/validation/validation.go)
 *   - defaults: SetDefaults_PersistentVolumeClaim(Spec) (pkg/apis/core/v1/defaults.go)
 *   - table: printPersistentVolumeClaim (pkg/printers/internalversion/printers.go)
 *   - field selectors: only metadata.name and metadata.namespace (no field label conversion is
 *     registered for PVCs, so the legacy "name" field of PersistentVolumeClaimToSelectableFields is
 *     refused by the conversion)
 *
 * Feature gates (1.23 defaults all false): AnyVolumeDataSource, ReadWriteOncePod,
 * RecoverVolumeExpansionFailure.
 */
import type { KObject, KindDecl, StrategyContext, SubresourceStrategy, TableColumn } from '../kind.js';
import { ref, type Definitions } from '../schema.js';
import { API_VERSION_PROPERTY, KIND_PROPERTY, LIST_META_REF, META_NAMES, OBJECT_META_REF } from '../definitions/meta.js';
import { quantityFromJSON, QuantityParseError, type Quantity } from '../../util/quantity.js';
import {
  FIELD_IMMUTABLE_ERROR_MSG,
  forbidden,
  GoLiteral,
  goQuote,
  invalid,
  nameIsDNSSubdomain,
  notSupported,
  required,
  root,
  validateImmutableField,
  validateLabelName,
  validateLabels,
  type FieldError,
  type FieldPath,
  type NameValidator,
  IS_NEGATIVE_ERROR_MSG,
} from '../../util/validation.js';

// ---------------------------------------------------------------------------------------------------
// Constants
// ---------------------------------------------------------------------------------------------------

/** Added at creation by the StorageObjectInUseProtection admission plugin (not by the strategy). */
export const PVC_PROTECTION_FINALIZER = 'kubernetes.io/pvc-protection';
/** core.BetaStorageClassAnnotation: the storage class before spec.storageClassName existed. */
export const BETA_STORAGE_CLASS_ANNOTATION = 'volume.beta.kubernetes.io/storage-class';

export const FEATURE_ANY_VOLUME_DATA_SOURCE = 'AnyVolumeDataSource';
export const FEATURE_READ_WRITE_ONCE_POD = 'ReadWriteOncePod';
export const FEATURE_RECOVER_VOLUME_EXPANSION_FAILURE = 'RecoverVolumeExpansionFailure';

export const READ_WRITE_ONCE = 'ReadWriteOnce';
export const READ_ONLY_MANY = 'ReadOnlyMany';
export const READ_WRITE_MANY = 'ReadWriteMany';
export const READ_WRITE_ONCE_POD = 'ReadWriteOncePod';

export const CLAIM_PENDING = 'Pending';
export const CLAIM_BOUND = 'Bound';
export const CLAIM_LOST = 'Lost';

export const VOLUME_MODE_FILESYSTEM = 'Filesystem';
export const VOLUME_MODE_BLOCK = 'Block';

/** supportedAccessModes, sorted as sets.String.List() returns them. */
const SUPPORTED_ACCESS_MODES: readonly string[] = [READ_ONLY_MANY, READ_WRITE_MANY, READ_WRITE_ONCE];
/** supportedVolumeModes, sorted. */
const SUPPORTED_VOLUME_MODES: readonly string[] = [VOLUME_MODE_BLOCK, VOLUME_MODE_FILESYSTEM];
/** resizeStatusSet (1.23), sorted; the empty string is PersistentVolumeClaimNoExpansionInProgress. */
export const PVC_RESIZE_STATUSES: readonly string[] = [
  '',
  'ControllerExpansionFailed',
  'ControllerExpansionInProgress',
  'NodeExpansionFailed',
  'NodeExpansionInProgress',
  'NodeExpansionPending',
];

const IS_NOT_POSITIVE_ERROR_MSG = 'must be greater than zero';

/** ValidatePersistentVolumeName: a claim's name is a DNS-1123 subdomain. */
export const pvcNameValidator: NameValidator = nameIsDNSSubdomain;

// ---------------------------------------------------------------------------------------------------
// Schemas
// ---------------------------------------------------------------------------------------------------

const CORE = 'io.k8s.api.core.v1.';
const PVC = `${CORE}PersistentVolumeClaim`;
const PVC_SPEC = `${CORE}PersistentVolumeClaimSpec`;
const PVC_STATUS = `${CORE}PersistentVolumeClaimStatus`;
const PVC_CONDITION = `${CORE}PersistentVolumeClaimCondition`;
const PVC_LIST = `${CORE}PersistentVolumeClaimList`;
const TYPED_LOCAL_OBJECT_REFERENCE = `${CORE}TypedLocalObjectReference`;
const RESOURCE_REQUIREMENTS = `${CORE}ResourceRequirements`;
const PV_DOCS = 'https://kubernetes.io/docs/concepts/storage/persistent-volumes';

const quantityMap = (description: string) => ({ additionalProperties: ref(META_NAMES.Quantity), description, type: 'object' as const });

export const PVC_DEFINITIONS: Definitions = {
  [PVC]: {
    description: "PersistentVolumeClaim is a user's request for and claim to a persistent volume",
    properties: {
      apiVersion: API_VERSION_PROPERTY,
      kind: KIND_PROPERTY,
      metadata: OBJECT_META_REF,
      spec: ref(PVC_SPEC, `Spec defines the desired characteristics of a volume requested by a pod author. More info: ${PV_DOCS}#persistentvolumeclaims`),
      status: ref(
        PVC_STATUS,
        `Status represents the current information/status of a persistent volume claim. Read-only. More info: ${PV_DOCS}#persistentvolumeclaims`,
      ),
    },
    type: 'object',
    'x-kubernetes-group-version-kind': [{ group: '', kind: 'PersistentVolumeClaim', version: 'v1' }],
  },
  [PVC_SPEC]: {
    description:
      'PersistentVolumeClaimSpec describes the common attributes of storage devices and allows a Source for provider-specific attributes',
    properties: {
      accessModes: {
        description: `AccessModes contains the desired access modes the volume should have. More info: ${PV_DOCS}#access-modes-1`,
        items: { type: 'string' },
        type: 'array',
      },
      dataSource: ref(
        TYPED_LOCAL_OBJECT_REFERENCE,
        'This field can be used to specify either: * An existing VolumeSnapshot object (snapshot.storage.k8s.io/VolumeSnapshot) * An existing PVC (PersistentVolumeClaim) If the provisioner or an external controller can support the specified data source, it will create a new volume based on the contents of the specified data source. If the AnyVolumeDataSource feature gate is enabled, this field will always have the same contents as the DataSourceRef field.',
      ),
      dataSourceRef: ref(
        TYPED_LOCAL_OBJECT_REFERENCE,
        'Specifies the object from which to populate the volume with data, if a non-empty volume is desired. This may be any local object from a non-empty API group (non core object) or a PersistentVolumeClaim object. When this field is specified, volume binding will only succeed if the type of the specified object matches some installed volume populator or dynamic provisioner. This field will replace the functionality of the DataSource field and as such if both fields are non-empty, they must have the same value. For backwards compatibility, both fields (DataSource and DataSourceRef) will be set to the same value automatically if one of them is empty and the other is non-empty. There are two important differences between DataSource and DataSourceRef: * While DataSource only allows two specific types of objects, DataSourceRef\n  allows any non-core object, as well as PersistentVolumeClaim objects.\n* While DataSource ignores disallowed values (dropping them), DataSourceRef\n  preserves all values, and generates an error if a disallowed value is\n  specified.\n(Alpha) Using this field requires the AnyVolumeDataSource feature gate to be enabled.',
      ),
      resources: ref(
        RESOURCE_REQUIREMENTS,
        `Resources represents the minimum resources the volume should have. If RecoverVolumeExpansionFailure feature is enabled users are allowed to specify resource requirements that are lower than previous value but must still be higher than capacity recorded in the status field of the claim. More info: ${PV_DOCS}#resources`,
      ),
      selector: ref(META_NAMES.LabelSelector, 'A label query over volumes to consider for binding.'),
      storageClassName: { description: `Name of the StorageClass required by the claim. More info: ${PV_DOCS}#class-1`, type: 'string' },
      volumeMode: {
        description: 'volumeMode defines what type of volume is required by the claim. Value of Filesystem is implied when not included in claim spec.',
        type: 'string',
      },
      volumeName: { description: 'VolumeName is the binding reference to the PersistentVolume backing this claim.', type: 'string' },
    },
    type: 'object',
  },
  [PVC_STATUS]: {
    description: 'PersistentVolumeClaimStatus is the current status of a persistent volume claim.',
    properties: {
      accessModes: {
        description: `AccessModes contains the actual access modes the volume backing the PVC has. More info: ${PV_DOCS}#access-modes-1`,
        items: { type: 'string' },
        type: 'array',
      },
      allocatedResources: quantityMap(
        'The storage resource within AllocatedResources tracks the capacity allocated to a PVC. It may be larger than the actual capacity when a volume expansion operation is requested. For storage quota, the larger value from allocatedResources and PVC.spec.resources is used. If allocatedResources is not set, PVC.spec.resources alone is used for quota calculation. If a volume expansion capacity request is lowered, allocatedResources is only lowered if there are no expansion operations in progress and if the actual volume capacity is equal or lower than the requested capacity. This is an alpha field and requires enabling RecoverVolumeExpansionFailure feature.',
      ),
      capacity: quantityMap('Represents the actual resources of the underlying volume.'),
      conditions: {
        description:
          "Current Condition of persistent volume claim. If underlying persistent volume is being resized then the Condition will be set to 'ResizeStarted'.",
        items: ref(PVC_CONDITION),
        type: 'array',
        'x-kubernetes-patch-merge-key': 'type',
        'x-kubernetes-patch-strategy': 'merge',
      },
      phase: {
        description:
          'Phase represents the current phase of PersistentVolumeClaim.\n\nPossible enum values:\n - `"Bound"` used for PersistentVolumeClaims that are bound\n - `"Lost"` used for PersistentVolumeClaims that lost their underlying PersistentVolume. The claim was bound to a PersistentVolume and this volume does not exist any longer and all data on it was lost.\n - `"Pending"` used for PersistentVolumeClaims that are not yet bound',
        enum: ['Bound', 'Lost', 'Pending'],
        type: 'string',
      },
      resizeStatus: {
        description:
          'ResizeStatus stores status of resize operation. ResizeStatus is not set by default but when expansion is complete resizeStatus is set to empty string by resize controller or kubelet. This is an alpha field and requires enabling RecoverVolumeExpansionFailure feature.',
        type: 'string',
      },
    },
    type: 'object',
  },
  [PVC_CONDITION]: {
    description: 'PersistentVolumeClaimCondition contails details about state of pvc',
    properties: {
      lastProbeTime: ref(META_NAMES.Time, 'Last time we probed the condition.'),
      lastTransitionTime: ref(META_NAMES.Time, 'Last time the condition transitioned from one status to another.'),
      message: { description: 'Human-readable message indicating details about last transition.', type: 'string' },
      reason: {
        description:
          'Unique, this should be a short, machine understandable string that gives the reason for condition\'s last transition. If it reports "ResizeStarted" that means the underlying persistent volume is being resized.',
        type: 'string',
      },
      status: { type: 'string' },
      type: {
        description:
          '\n\n\nPossible enum values:\n - `"FileSystemResizePending"` - controller resize is finished and a file system resize is pending on node\n - `"Resizing"` - a user trigger resize of pvc has been started',
        enum: ['FileSystemResizePending', 'Resizing'],
        type: 'string',
      },
    },
    required: ['type', 'status'],
    type: 'object',
  },
  [PVC_LIST]: {
    description: 'PersistentVolumeClaimList is a list of PersistentVolumeClaim items.',
    properties: {
      apiVersion: API_VERSION_PROPERTY,
      items: { description: `A list of persistent volume claims. More info: ${PV_DOCS}#persistentvolumeclaims`, items: ref(PVC), type: 'array' },
      kind: KIND_PROPERTY,
      metadata: LIST_META_REF,
    },
    required: ['items'],
    type: 'object',
    'x-kubernetes-group-version-kind': [{ group: '', kind: 'PersistentVolumeClaimList', version: 'v1' }],
  },
  [TYPED_LOCAL_OBJECT_REFERENCE]: {
    description: 'TypedLocalObjectReference contains enough information to let you locate the typed referenced object inside the same namespace.',
    properties: {
      apiGroup: {
        description:
          'APIGroup is the group for the resource being referenced. If APIGroup is not specified, the specified Kind must be in the core API group. For any other third-party types, APIGroup is required.',
        type: 'string',
      },
      kind: { description: 'Kind is the type of resource being referenced', type: 'string' },
      name: { description: 'Name is the name of resource being referenced', type: 'string' },
    },
    required: ['kind', 'name'],
    type: 'object',
    'x-kubernetes-map-type': 'atomic',
  },
  [RESOURCE_REQUIREMENTS]: {
    description: 'ResourceRequirements describes the compute resource requirements.',
    properties: {
      limits: quantityMap(
        'Limits describes the maximum amount of compute resources allowed. More info: https://kubernetes.io/docs/concepts/configuration/manage-resources-containers/',
      ),
      requests: quantityMap(
        'Requests describes the minimum amount of compute resources required. If Requests is omitted for a container, it defaults to Limits if that is explicitly specified, otherwise to an implementation-defined value. More info: https://kubernetes.io/docs/concepts/configuration/manage-resources-containers/',
      ),
    },
    type: 'object',
  },
};

// ---------------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------------

type Json = Record<string, any>;

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function clone<T>(v: T): T {
  return v === undefined ? v : structuredClone(v);
}

function specOf(obj: KObject): Json {
  if (!isObject(obj.spec)) obj.spec = {};
  return obj.spec as Json;
}

function statusOf(obj: KObject): Json {
  if (!isObject(obj.status)) obj.status = {};
  return obj.status as Json;
}

function str(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

/** A Go pointer field: absent and null are nil. */
function isSet(v: unknown): boolean {
  return v !== undefined && v !== null;
}

function gate(ctx: StrategyContext, name: string): boolean {
  return ctx.featureGates[name] === true;
}

function stringList(v: unknown): string[] {
  return Array.isArray(v) ? v.map((e) => (typeof e === 'string' ? e : String(e))) : [];
}

/** A quantity from its JSON form (null is Go's zero Quantity); null when it does not parse. */
function parseQty(v: unknown): Quantity | null {
  try {
    return quantityFromJSON(v === null ? '0' : v);
  } catch (e) {
    if (e instanceof QuantityParseError) return null;
    throw e;
  }
}

const ZERO = quantityFromJSON('0');

/** map[key] of a ResourceList as a Quantity: Go's zero Quantity when absent or unparseable. */
function qtyAt(map: unknown, key: string): Quantity {
  if (!isObject(map) || !Object.hasOwn(map, key)) return ZERO;
  return parseQty(map[key]) ?? ZERO;
}

/** The quantity's serialized form (Quantity.String()). */
function qtyString(v: unknown): string {
  return parseQty(v)?.toString() ?? str(v);
}

function byBytes(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/** Drops null pointer fields, as decoding into Go structs does. */
function dropNulls(spec: Json): void {
  for (const f of ['selector', 'storageClassName', 'volumeMode', 'dataSource', 'dataSourceRef']) {
    if (spec[f] === null) delete spec[f];
  }
}

// ---------------------------------------------------------------------------------------------------
// Disabled fields and data sources (pkg/api/persistentvolumeclaim)
// ---------------------------------------------------------------------------------------------------

/** DropDisabledFields: dataSourceRef exists only under AnyVolumeDataSource. */
function dropDisabledFields(spec: Json, ctx: StrategyContext): void {
  if (!gate(ctx, FEATURE_ANY_VOLUME_DATA_SOURCE)) delete spec['dataSourceRef'];
}

/** Only PVCs (core group) and VolumeSnapshots may be given in dataSource. */
function dataSourceIsPvcOrSnapshot(ds: unknown): boolean {
  if (!isObject(ds)) return false;
  const apiGroup = str(ds['apiGroup']);
  const kind = str(ds['kind']);
  if (kind === 'PersistentVolumeClaim' && apiGroup === '') return true;
  return kind === 'VolumeSnapshot' && apiGroup === 'snapshot.storage.k8s.io';
}

/**
 * EnforceDataSourceBackwardsCompatibility: without dataSourceRef, on create (or an update of a claim
 * that had no data source), a dataSource that is neither a PVC nor a VolumeSnapshot is dropped silently.
 */
function enforceDataSourceBackwardsCompatibility(spec: Json, oldSpec: Json | undefined): void {
  if (oldSpec && (isSet(oldSpec['dataSource']) || isSet(oldSpec['dataSourceRef']))) return;
  if (isSet(spec['dataSourceRef'])) return;
  if (!dataSourceIsPvcOrSnapshot(spec['dataSource'])) delete spec['dataSource'];
}

/** NormalizeDataSources: under AnyVolumeDataSource, one of dataSource/dataSourceRef fills the other. */
function normalizeDataSources(spec: Json, ctx: StrategyContext): void {
  if (!gate(ctx, FEATURE_ANY_VOLUME_DATA_SOURCE)) return;
  const ds = spec['dataSource'];
  const dsRef = spec['dataSourceRef'];
  if (isSet(ds) && !isSet(dsRef)) spec['dataSourceRef'] = clone(ds);
  else if (isSet(dsRef) && !isSet(ds)) spec['dataSource'] = clone(dsRef);
}

/** DropDisabledFieldsFromStatus: allocatedResources and resizeStatus only under RecoverVolumeExpansionFailure, unless in use. */
function dropDisabledStatusFields(status: Json, oldStatus: Json | undefined, ctx: StrategyContext): void {
  if (gate(ctx, FEATURE_RECOVER_VOLUME_EXPANSION_FAILURE)) return;
  if (!oldStatus || !isSet(oldStatus['allocatedResources'])) delete status['allocatedResources'];
  if (!oldStatus || !isSet(oldStatus['resizeStatus'])) delete status['resizeStatus'];
}

// ---------------------------------------------------------------------------------------------------
// Validation (pkg/apis/core/validation)
// ---------------------------------------------------------------------------------------------------

interface ValidationOptions {
  allowReadWriteOncePod: boolean;
  enableRecoverFromExpansionFailure: boolean;
}

/** ValidationOptionsForPersistentVolumeClaim */
function validationOptions(ctx: StrategyContext, old?: KObject): ValidationOptions {
  const opts: ValidationOptions = {
    allowReadWriteOncePod: gate(ctx, FEATURE_READ_WRITE_ONCE_POD),
    enableRecoverFromExpansionFailure: gate(ctx, FEATURE_RECOVER_VOLUME_EXPANSION_FAILURE),
  };
  // A claim that already uses ReadWriteOncePod may keep it.
  if (old && isObject(old.spec) && stringList(old.spec['accessModes']).includes(READ_WRITE_ONCE_POD)) opts.allowReadWriteOncePod = true;
  return opts;
}

/** metav1 validation.ValidateLabelSelector */
export function validateLabelSelector(sel: unknown, path: FieldPath): FieldError[] {
  if (!isObject(sel)) return [];
  const errs = validateLabels(sel['matchLabels'], path.child('matchLabels'));
  const exprs: unknown[] = Array.isArray(sel['matchExpressions']) ? sel['matchExpressions'] : [];
  exprs.forEach((e, i) => {
    const expr = isObject(e) ? e : {};
    const p = path.child('matchExpressions').index(i);
    const operator = str(expr['operator']);
    const values = stringList(expr['values']);
    switch (operator) {
      case 'In':
      case 'NotIn':
        if (values.length === 0) errs.push(required(p.child('values'), "must be specified when `operator` is 'In' or 'NotIn'"));
        break;
      case 'Exists':
      case 'DoesNotExist':
        if (values.length > 0) errs.push(forbidden(p.child('values'), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"));
        break;
      default:
        errs.push(invalid(p.child('operator'), operator, 'not a valid selector operator'));
    }
    errs.push(...validateLabelName(str(expr['key']), p.child('key')));
  });
  return errs;
}

/** validateDataSource (1.23 uses it for dataSource and dataSourceRef alike). */
function validateDataSource(ds: Json, path: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  const kind = str(ds['kind']);
  if (str(ds['name']) === '') errs.push(required(path.child('name'), ''));
  if (kind === '') errs.push(required(path.child('kind'), ''));
  if (str(ds['apiGroup']) === '' && kind !== 'PersistentVolumeClaim') errs.push(invalid(path, kind, ''));
  return errs;
}

/** apiequality.Semantic.DeepEqual of two *TypedLocalObjectReference. */
function sameReference(a: Json, b: Json): boolean {
  const group = (r: Json) => (isSet(r['apiGroup']) ? str(r['apiGroup']) : null);
  return group(a) === group(b) && str(a['kind']) === str(b['kind']) && str(a['name']) === str(b['name']);
}

/**
 * %#v of the dereferenced *field.Path Kubernetes passes as the bad value of "must match dataSourceRef".
 * Go prints the parent pointer's address, which cannot be reproduced; a stable stand-in is printed.
 */
function fieldPathLiteral(name: string): GoLiteral {
  return new GoLiteral(`field.Path{name:${goQuote(name)}, index:"", parent:(*field.Path)(0xc000000001)}`);
}

/** A quantity-valued field: an unparseable value (which Kubernetes refuses when decoding) is reported as invalid. */
function quantityOrError(v: unknown, path: FieldPath, errs: FieldError[]): Quantity | null {
  const q = parseQty(v);
  if (q === null) {
    let message = 'quantities must be strings or numbers';
    try {
      quantityFromJSON(v);
    } catch (e) {
      if (e instanceof Error) message = e.message;
    }
    errs.push(invalid(path, typeof v === 'string' ? v : JSON.stringify(v) ?? '', message));
  }
  return q;
}

/** ValidatePersistentVolumeClaimSpec */
function validateSpec(specIn: unknown, path: FieldPath, opts: ValidationOptions): FieldError[] {
  const spec = isObject(specIn) ? specIn : {};
  const errs: FieldError[] = [];
  const accessModes = stringList(spec['accessModes']);
  if (accessModes.length === 0) errs.push(required(path.child('accessModes'), 'at least 1 access mode is required'));
  if (isSet(spec['selector'])) errs.push(...validateLabelSelector(spec['selector'], path.child('selector')));

  const supported = opts.allowReadWriteOncePod ? [...SUPPORTED_ACCESS_MODES, READ_WRITE_ONCE_POD].sort(byBytes) : SUPPORTED_ACCESS_MODES;
  let foundRWOP = false;
  let foundOther = false;
  for (const mode of accessModes) {
    if (!supported.includes(mode)) errs.push(notSupported(path.child('accessModes'), mode, supported));
    if (mode === READ_WRITE_ONCE_POD) foundRWOP = true;
    else if (SUPPORTED_ACCESS_MODES.includes(mode)) foundOther = true;
  }
  if (foundRWOP && foundOther) errs.push(forbidden(path.child('accessModes'), 'may not use ReadWriteOncePod with other access modes'));

  const storagePath = path.child('resources').key('storage');
  const requests = isObject(spec['resources']) ? spec['resources']['requests'] : undefined;
  if (!isObject(requests) || !Object.hasOwn(requests, 'storage')) {
    errs.push(required(storagePath, ''));
  } else {
    const q = quantityOrError(requests['storage'], storagePath, errs);
    if (q !== null) {
      // ValidatePositiveQuantityValue; ValidateResourceQuantityValue then finds nothing more for storage.
      if (q.sign() <= 0) errs.push(invalid(storagePath, q.toString(), IS_NOT_POSITIVE_ERROR_MSG));
    }
  }

  const storageClassName = spec['storageClassName'];
  if (typeof storageClassName === 'string' && storageClassName.length > 0) {
    for (const msg of nameIsDNSSubdomain(storageClassName, false)) errs.push(invalid(path.child('storageClassName'), storageClassName, msg));
  }
  const volumeMode = spec['volumeMode'];
  if (isSet(volumeMode) && !SUPPORTED_VOLUME_MODES.includes(str(volumeMode))) {
    errs.push(notSupported(path.child('volumeMode'), str(volumeMode), SUPPORTED_VOLUME_MODES));
  }

  const ds = spec['dataSource'];
  const dsRef = spec['dataSourceRef'];
  if (isObject(ds)) errs.push(...validateDataSource(ds, path.child('dataSource')));
  if (isObject(dsRef)) errs.push(...validateDataSource(dsRef, path.child('dataSourceRef')));
  if (isObject(ds) && isObject(dsRef) && !sameReference(ds, dsRef)) {
    errs.push(invalid(path, fieldPathLiteral('dataSource'), 'must match dataSourceRef'));
  }
  return errs;
}

/**
 * Provides an upgrade path from the beta storage-class annotation to spec.storageClassName
 * (validateStorageClassUpgrade).
 */
function storageClassUpgrade(oldAnn: Json, newAnn: Json, oldSc: unknown, newSc: unknown): boolean {
  if (!Object.hasOwn(oldAnn, BETA_STORAGE_CLASS_ANNOTATION)) return false;
  const oldValue = str(oldAnn[BETA_STORAGE_CLASS_ANNOTATION]);
  if (isSet(oldSc)) return false;
  if (!(isSet(newSc) && str(newSc) === oldValue)) return false;
  return !Object.hasOwn(newAnn, BETA_STORAGE_CLASS_ANNOTATION) || str(newAnn[BETA_STORAGE_CLASS_ANNOTATION]) === oldValue;
}

/** The update checks of ValidatePersistentVolumeClaimUpdate (`old` with normalized data sources). */
function validateClaimUpdate(obj: KObject, old: KObject, opts: ValidationOptions): FieldError[] {
  const errs: FieldError[] = [];
  const newSpec: Json = isObject(obj.spec) ? obj.spec : {};
  const oldSpec: Json = isObject(old.spec) ? old.spec : {};
  const newClone: Json = clone(newSpec);
  const oldClone: Json = clone(oldSpec);

  // The persistent volume controller sets volumeName once.
  if (str(oldSpec['volumeName']) === '') {
    if (newClone['volumeName'] === undefined) delete oldClone['volumeName'];
    else oldClone['volumeName'] = newClone['volumeName'];
  }

  const newAnn: Json = isObject(obj.metadata?.annotations) ? obj.metadata.annotations : {};
  const oldAnn: Json = isObject(old.metadata?.annotations) ? old.metadata.annotations : {};
  if (!storageClassUpgrade(oldAnn, newAnn, oldClone['storageClassName'], newClone['storageClassName'])) {
    // The storage class annotation is immutable after creation.
    const newValue = str(newAnn[BETA_STORAGE_CLASS_ANNOTATION]);
    if (newValue !== str(oldAnn[BETA_STORAGE_CLASS_ANNOTATION])) {
      errs.push(invalid(root('metadata').child('annotations', BETA_STORAGE_CLASS_ANNOTATION), newValue, FIELD_IMMUTABLE_ERROR_MSG));
    }
  } else {
    delete newClone['storageClassName'];
  }

  // A bound claim may change its storage request (checked below); the rest of spec is immutable.
  const phase = isObject(obj.status) ? str(obj.status['phase']) : '';
  const cloneRequests = isObject(newClone['resources']) ? newClone['resources']['requests'] : undefined;
  if (phase === CLAIM_BOUND && isObject(cloneRequests)) {
    const oldRequests = isObject(oldSpec['resources']) ? oldSpec['resources']['requests'] : undefined;
    cloneRequests['storage'] = isObject(oldRequests) && Object.hasOwn(oldRequests, 'storage') ? clone(oldRequests['storage']) : '0';
  }

  const oldSize = qtyAt(isObject(oldSpec['resources']) ? oldSpec['resources']['requests'] : undefined, 'storage');
  const newSize = qtyAt(isObject(newSpec['resources']) ? newSpec['resources']['requests'] : undefined, 'storage');
  const statusSize = qtyAt(isObject(old.status) ? old.status['capacity'] : undefined, 'storage');

  const newModel = specModel(newClone);
  const oldModel = specModel(oldClone);
  if (!goEqual(newModel, oldModel)) {
    errs.push(
      forbidden(root('spec'), `spec is immutable after creation except resources.requests for bound claims\n${cmpDiff(oldModel, newModel)}`),
    );
  }
  if (newSize.cmp(oldSize) < 0) {
    const storage = root('spec', 'resources', 'requests', 'storage');
    if (!opts.enableRecoverFromExpansionFailure) {
      errs.push(forbidden(storage, 'field can not be less than previous value'));
    } else if (newSize.cmp(statusSize) <= 0) {
      // Lowering the request is allowed down to (not including) the capacity in status.
      errs.push(forbidden(storage, 'field can not be less than status.capacity'));
    }
  }
  errs.push(...validateImmutableField(newSpec['volumeMode'] ?? null, oldSpec['volumeMode'] ?? null, root('volumeMode')));
  return errs;
}

/** validateBasicResource: quantity.Value() must not be negative. */
function validateBasicResource(v: unknown, path: FieldPath, errs: FieldError[]): boolean {
  const q = quantityOrError(v, path, errs);
  if (q === null) return false;
  const value = q.value();
  if (value < 0n) {
    errs.push(invalid(path, Number(value), 'must be a valid resource quantity'));
    return false;
  }
  return true;
}

/** ValidatePersistentVolumeClaimStatusUpdate, without the object metadata (validated by the store). */
function validateStatusUpdate(obj: KObject, opts: ValidationOptions): FieldError[] {
  const errs: FieldError[] = [];
  if (str(obj.metadata?.resourceVersion) === '') errs.push(required(root('resourceVersion'), ''));
  if (stringList(isObject(obj.spec) ? obj.spec['accessModes'] : undefined).length === 0) errs.push(required(root('Spec', 'accessModes'), ''));
  const status: Json = isObject(obj.status) ? obj.status : {};
  const capPath = root('status', 'capacity');
  if (isObject(status['capacity'])) {
    for (const r of Object.keys(status['capacity']).sort(byBytes)) validateBasicResource(status['capacity'][r], capPath.key(r), errs);
  }
  if (opts.enableRecoverFromExpansionFailure) {
    const resizeStatus = status['resizeStatus'];
    if (isSet(resizeStatus) && !PVC_RESIZE_STATUSES.includes(str(resizeStatus))) {
      errs.push(notSupported(root('status', 'resizeStatus'), str(resizeStatus), PVC_RESIZE_STATUSES));
    }
    const allocPath = root('status', 'allocatedResources');
    const alloc = status['allocatedResources'];
    if (isObject(alloc)) {
      for (const r of Object.keys(alloc).sort(byBytes)) {
        if (r !== 'storage') {
          errs.push(notSupported(allocPath, r, ['storage']));
          continue;
        }
        // ValidateResourceQuantityValue: nonnegative (already implied), storage is no integer resource.
        if (validateBasicResource(alloc[r], allocPath.key(r), errs)) {
          const q = parseQty(alloc[r]);
          if (q && q.sign() < 0) errs.push(invalid(allocPath.key(r), q.toString(), IS_NEGATIVE_ERROR_MSG));
        }
      }
    }
  }
  return errs;
}

// ---------------------------------------------------------------------------------------------------
// The spec as Go values: semantic equality (apiequality.Semantic) and go-cmp's report (cmp.Diff)
// ---------------------------------------------------------------------------------------------------

/** A Go value of the internal core.PersistentVolumeClaimSpec, enough to compare and to print it. */
type GoValue =
  | { k: 'nil' }
  | { k: 'string'; v: string; stringer?: boolean }
  | { k: 'ptr'; to: GoValue }
  | { k: 'slice'; items: GoValue[] }
  | { k: 'map'; entries: [GoValue & { k: 'string' }, GoValue][] }
  | { k: 'struct'; fields: [string, GoValue][] }
  | { k: 'quantity'; raw: unknown; q: Quantity | null };

const NIL: GoValue = { k: 'nil' };

function goString(v: unknown, stringer = false): GoValue & { k: 'string' } {
  return stringer ? { k: 'string', v: str(v), stringer } : { k: 'string', v: str(v) };
}

function goPtr(v: unknown, of: (v: unknown) => GoValue): GoValue {
  return isSet(v) ? { k: 'ptr', to: of(v) } : NIL;
}

function goSlice(v: unknown, of: (v: unknown) => GoValue): GoValue {
  return Array.isArray(v) ? { k: 'slice', items: v.map(of) } : NIL;
}

function goMap(v: unknown, of: (v: unknown) => GoValue, stringerKeys = false): GoValue {
  if (!isObject(v)) return NIL;
  return {
    k: 'map',
    entries: Object.keys(v)
      .sort(byBytes)
      .map((key) => [goString(key, stringerKeys), of(v[key])] as [GoValue & { k: 'string' }, GoValue]),
  };
}

function goQuantity(v: unknown): GoValue {
  return { k: 'quantity', raw: v, q: parseQty(v) };
}

function goReference(v: unknown): GoValue {
  const r = isObject(v) ? v : {};
  return {
    k: 'struct',
    fields: [
      ['APIGroup', goPtr(r['apiGroup'], (g) => goString(g))],
      ['Kind', goString(r['kind'])],
      ['Name', goString(r['name'])],
    ],
  };
}

function goLabelSelector(v: unknown): GoValue {
  const s = isObject(v) ? v : {};
  return {
    k: 'struct',
    fields: [
      ['MatchLabels', goMap(s['matchLabels'], (x) => goString(x))],
      [
        'MatchExpressions',
        goSlice(s['matchExpressions'], (e) => {
          const r = isObject(e) ? e : {};
          return {
            k: 'struct',
            fields: [
              ['Key', goString(r['key'])],
              ['Operator', goString(r['operator'])],
              ['Values', goSlice(r['values'], (x) => goString(x))],
            ],
          };
        }),
      ],
    ],
  };
}

/** The fields of core.PersistentVolumeClaimSpec, in Go's order. */
function specModel(spec: Json): GoValue & { k: 'struct' } {
  const resources = isObject(spec['resources']) ? spec['resources'] : {};
  return {
    k: 'struct',
    fields: [
      ['AccessModes', goSlice(spec['accessModes'], (m) => goString(m))],
      ['Selector', goPtr(spec['selector'], goLabelSelector)],
      [
        'Resources',
        {
          k: 'struct',
          fields: [
            ['Limits', goMap(resources['limits'], goQuantity, true)],
            ['Requests', goMap(resources['requests'], goQuantity, true)],
          ],
        },
      ],
      ['VolumeName', goString(spec['volumeName'])],
      ['StorageClassName', goPtr(spec['storageClassName'], (s) => goString(s))],
      ['VolumeMode', goPtr(spec['volumeMode'], (s) => goString(s))],
      ['DataSource', goPtr(spec['dataSource'], goReference)],
      ['DataSourceRef', goPtr(spec['dataSourceRef'], goReference)],
    ],
  };
}

/** Semantic equality: empty and nil slices and maps are equal, quantities compare by value. */
function goEqual(a: GoValue, b: GoValue): boolean {
  const empty = (v: GoValue) => v.k === 'nil' || (v.k === 'slice' && v.items.length === 0) || (v.k === 'map' && v.entries.length === 0);
  if ((a.k === 'slice' || a.k === 'map' || b.k === 'slice' || b.k === 'map') && empty(a) && empty(b)) return true;
  switch (a.k) {
    case 'nil':
      return b.k === 'nil';
    case 'string':
      return b.k === 'string' && a.v === b.v;
    case 'ptr':
      return b.k === 'ptr' && goEqual(a.to, b.to);
    case 'slice':
      return b.k === 'slice' && a.items.length === b.items.length && a.items.every((x, i) => goEqual(x, b.items[i]!));
    case 'map': {
      if (b.k !== 'map' || a.entries.length !== b.entries.length) return false;
      const other = new Map(b.entries.map(([k, v]) => [k.v, v]));
      return a.entries.every(([k, v]) => other.has(k.v) && goEqual(v, other.get(k.v)!));
    }
    case 'struct':
      return b.k === 'struct' && a.fields.length === b.fields.length && a.fields.every(([, v], i) => goEqual(v, b.fields[i]![1]));
    case 'quantity':
      if (b.k !== 'quantity') return false;
      if (a.q && b.q) return a.q.cmp(b.q) === 0;
      return JSON.stringify(a.raw) === JSON.stringify(b.raw);
  }
}

function isZeroValue(v: GoValue): boolean {
  switch (v.k) {
    case 'nil':
      return true;
    case 'string':
      return v.v === '';
    case 'struct':
      return v.fields.every(([, f]) => isZeroValue(f));
    case 'quantity':
      return v.q !== null && v.q.isZero() && v.raw === null;
    default:
      return false;
  }
}

/** go-cmp's compact form of a value whose type the context already names (types elided). */
function formatGo(v: GoValue): string {
  switch (v.k) {
    case 'nil':
      return 'nil';
    case 'string':
      return (v.stringer ? 's' : '') + goQuote(v.v);
    case 'ptr':
      return '&' + formatGo(v.to);
    case 'slice':
      return `{${v.items.map(formatGo).join(', ')}}`;
    case 'map':
      return `{${v.entries.map(([k, val]) => `${formatGo(k)}: ${formatGo(val)}`).join(', ')}}`;
    case 'struct':
      return `{${v.fields
        .filter(([, f]) => !isZeroValue(f))
        .map(([name, f]) => `${name}: ${formatGo(f)}`)
        .join(', ')}}`;
    case 'quantity':
      return formatQuantity(v);
  }
}

/**
 * A resource.Quantity as go-cmp prints the struct: its amount (elided), the string it keeps from
 * parsing, and its format. Which strings Kubernetes keeps is the parser's business (quantity.ts).
 */
function formatQuantity(v: GoValue & { k: 'quantity' }): string {
  if (!v.q) return goQuote(str(v.raw));
  const internals = v.q as unknown as { cached?: string; dec?: boolean };
  const parts: string[] = [];
  if (!v.q.isZero()) parts.push(internals.dec ? 'd: {...}' : 'i: {...}');
  if (internals.cached) parts.push(`s: ${goQuote(internals.cached)}`);
  parts.push(`Format: ${goQuote(v.q.format)}`);
  return `{${parts.join(', ')}}`;
}

/**
 * cmp.Diff(x, y) of two specs, in go-cmp's report format: "-" lines are x, "+" lines are y; runs of equal
 * fields keep two fields of context and are otherwise elided; keys are aligned. go-cmp's output is
 * deliberately unstable (it randomly uses non-breaking spaces) and nests into differing structs; this
 * prints whole differing fields, with plain spaces.
 */
function cmpDiff(x: GoValue & { k: 'struct' }, y: GoValue & { k: 'struct' }): string {
  interface Rec {
    mark: '  ' | '- ' | '+ ';
    key: string;
    value: string;
    comment?: string;
  }
  const recs: Rec[] = [];
  const fields = x.fields.map(([name, vx], i) => ({ name, vx, vy: y.fields[i]![1], same: goEqual(vx, y.fields[i]![1]) }));
  // group consecutive equal and unequal fields
  const groups: { same: boolean; items: typeof fields }[] = [];
  for (const f of fields) {
    const last = groups[groups.length - 1];
    if (last && last.same === f.same) last.items.push(f);
    else groups.push({ same: f.same, items: [f] });
  }
  const CONTEXT = 2;
  groups.forEach((g, gi) => {
    if (!g.same) {
      for (const f of g.items) {
        recs.push({ mark: '- ', key: f.name, value: formatGo(f.vx) });
        recs.push({ mark: '+ ', key: f.name, value: formatGo(f.vy) });
      }
      return;
    }
    const n = g.items.length;
    let lo = 0;
    let hi = 0;
    while (lo < CONTEXT && lo + hi < n && gi !== 0) lo++;
    while (hi < CONTEXT && lo + hi < n && gi !== groups.length - 1) hi++;
    if (n - (lo + hi) === 1) hi++;
    for (const f of g.items.slice(0, lo)) recs.push({ mark: '  ', key: f.name, value: formatGo(f.vx) });
    if (n > lo + hi) recs.push({ mark: '  ', key: '', value: '...', comment: `${n - lo - hi} identical fields` });
    for (const f of g.items.slice(n - hi)) recs.push({ mark: '  ', key: f.name, value: formatGo(f.vx) });
  });
  // align keys over runs of keyed records
  const pad: number[] = recs.map(() => 0);
  let start = 0;
  const flush = (end: number) => {
    const max = Math.max(0, ...recs.slice(start, end).map((r) => r.key.length));
    for (let j = start; j < end; j++) pad[j] = max - recs[j]!.key.length;
  };
  recs.forEach((r, i) => {
    if (r.key === '') {
      flush(i);
      start = i + 1;
    }
  });
  flush(recs.length);
  const lines = ['  core.PersistentVolumeClaimSpec{'];
  recs.forEach((r, i) => {
    if (r.key === '') lines.push(`${r.mark}\t${r.value} // ${r.comment ?? ''}`);
    else lines.push(`${r.mark}\t${r.key}: ${' '.repeat(pad[i]!)}${r.value},`);
  });
  lines.push('  }');
  return lines.join('\n') + '\n';
}

// ---------------------------------------------------------------------------------------------------
// Table (printPersistentVolumeClaim)
// ---------------------------------------------------------------------------------------------------

/** helper.GetAccessModesAsString: RWO, ROX, RWX, RWOP in that order, each once. */
export function accessModesAsString(modes: unknown): string {
  const set = new Set(stringList(modes));
  const out: string[] = [];
  if (set.has(READ_WRITE_ONCE)) out.push('RWO');
  if (set.has(READ_ONLY_MANY)) out.push('ROX');
  if (set.has(READ_WRITE_MANY)) out.push('RWX');
  if (set.has(READ_WRITE_ONCE_POD)) out.push('RWOP');
  return out.join(',');
}

/** helper.GetPersistentVolumeClaimClass: the beta annotation first, then spec.storageClassName. */
export function claimClass(obj: KObject): string {
  const ann = obj.metadata?.annotations;
  if (isObject(ann) && Object.hasOwn(ann, BETA_STORAGE_CLASS_ANNOTATION)) return str(ann[BETA_STORAGE_CLASS_ANNOTATION]);
  return isObject(obj.spec) && isSet(obj.spec['storageClassName']) ? str(obj.spec['storageClassName']) : '';
}

const CREATION_TIMESTAMP_DOC =
  'CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata';

const volumeName = (obj: KObject) => (isObject(obj.spec) ? str(obj.spec['volumeName']) : '');

const columns: TableColumn[] = [
  {
    name: 'Status',
    type: 'string',
    description: 'Phase represents the current phase of PersistentVolumeClaim.',
    priority: 0,
    cell: (obj) => (obj.metadata?.deletionTimestamp ? 'Terminating' : isObject(obj.status) ? str(obj.status['phase']) : ''),
  },
  {
    name: 'Volume',
    type: 'string',
    description: 'VolumeName is the binding reference to the PersistentVolume backing this claim.',
    priority: 0,
    cell: volumeName,
  },
  {
    name: 'Capacity',
    type: 'string',
    description: 'Represents the actual resources of the underlying volume.',
    priority: 0,
    cell: (obj) => {
      if (volumeName(obj) === '') return '';
      const capacity = isObject(obj.status) ? obj.status['capacity'] : undefined;
      return isObject(capacity) && Object.hasOwn(capacity, 'storage') ? qtyString(capacity['storage']) : '0';
    },
  },
  {
    name: 'Access Modes',
    type: 'string',
    description: `AccessModes contains the actual access modes the volume backing the PVC has. More info: ${PV_DOCS}#access-modes-1`,
    priority: 0,
    cell: (obj) => (volumeName(obj) === '' ? '' : accessModesAsString(isObject(obj.status) ? obj.status['accessModes'] : undefined)),
  },
  { name: 'StorageClass', type: 'string', description: 'StorageClass of the pvc', priority: 0, cell: claimClass },
  { name: 'Age', type: 'string', description: CREATION_TIMESTAMP_DOC, priority: 0, cell: (obj) => obj.metadata?.creationTimestamp ?? null },
  {
    name: 'VolumeMode',
    type: 'string',
    description: 'volumeMode defines what type of volume is required by the claim. Value of Filesystem is implied when not included in claim spec.',
    priority: 1,
    cell: (obj) => (isObject(obj.spec) && isSet(obj.spec['volumeMode']) ? str(obj.spec['volumeMode']) : '<unset>'),
  },
];

// ---------------------------------------------------------------------------------------------------
// Canonical quantities
// ---------------------------------------------------------------------------------------------------

/** Rewrites every quantity of a ResourceList in its serialized form ('1.5Gi' is stored as '1536Mi'). */
function canonicalizeResourceList(list: unknown): void {
  if (!isObject(list)) return;
  for (const key of Object.keys(list)) {
    const q = parseQty(list[key]);
    if (q !== null) list[key] = q.toString();
  }
}

// ---------------------------------------------------------------------------------------------------
// The kind
// ---------------------------------------------------------------------------------------------------

const statusStrategy: SubresourceStrategy = {
  /** The status subresource keeps spec; disabled status fields are dropped unless already in use. */
  prepareForUpdate(obj: KObject, old: KObject, ctx: StrategyContext): void {
    if (old.spec !== undefined) obj.spec = clone(old.spec);
    else delete obj.spec;
    dropDisabledStatusFields(statusOf(obj), isObject(old.status) ? old.status : undefined, ctx);
  },
  validateUpdate(obj: KObject, old: KObject, ctx: StrategyContext): FieldError[] {
    return validateStatusUpdate(obj, validationOptions(ctx, old));
  },
};

export const pvcKind: KindDecl = {
  group: '',
  version: 'v1',
  kind: 'PersistentVolumeClaim',
  listKind: 'PersistentVolumeClaimList',
  resource: 'persistentvolumeclaims',
  singular: 'persistentvolumeclaim',
  shortNames: ['pvc'],
  namespaced: true,
  nameValidator: pvcNameValidator,
  definition: PVC,
  listDefinition: PVC_LIST,
  definitions: PVC_DEFINITIONS,
  // Kubernetes never sets metadata.generation on claims.
  tracksGeneration: false,
  columns,
  responses: { deleteCollection: 'Status' },
  strategy: {
    allowCreateOnUpdate: false,
    allowUnconditionalUpdate: true,
    /** Status is cleared (defaulting makes it Pending); disabled fields and data sources as Kubernetes. */
    prepareForCreate(obj: KObject, ctx: StrategyContext): void {
      obj.status = { phase: CLAIM_PENDING };
      const spec = specOf(obj);
      dropNulls(spec);
      dropDisabledFields(spec, ctx);
      enforceDataSourceBackwardsCompatibility(spec, undefined);
      normalizeDataSources(spec, ctx);
    },
    /** The main resource keeps status; data sources as on create, with the old claim's in use kept. */
    prepareForUpdate(obj: KObject, old: KObject, ctx: StrategyContext): void {
      if (old.status !== undefined) obj.status = clone(old.status);
      else delete obj.status;
      const spec = specOf(obj);
      dropNulls(spec);
      dropDisabledFields(spec, ctx);
      enforceDataSourceBackwardsCompatibility(spec, isObject(old.spec) ? old.spec : undefined);
      normalizeDataSources(spec, ctx);
    },
    /** SetDefaults_PersistentVolumeClaim(Spec): volumeMode Filesystem, phase Pending. */
    default(obj: KObject): void {
      const spec = specOf(obj);
      if (!isObject(spec['resources'])) spec['resources'] = {};
      if (!isSet(spec['volumeMode'])) spec['volumeMode'] = VOLUME_MODE_FILESYSTEM;
      const status = statusOf(obj);
      if (str(status['phase']) === '') status['phase'] = CLAIM_PENDING;
    },
    validate(obj: KObject, ctx: StrategyContext): FieldError[] {
      return validateSpec(obj.spec, root('spec'), validationOptions(ctx));
    },
    /**
     * ValidatePersistentVolumeClaim + ValidatePersistentVolumeClaimUpdate. Kubernetes' update validation
     * runs the spec validation twice (once directly, once inside the update validation), so its causes
     * hold each spec error twice; they are reported the same way (the message de-duplicates them).
     */
    validateUpdate(obj: KObject, old: KObject, ctx: StrategyContext): FieldError[] {
      const opts = validationOptions(ctx, old);
      // The old claim's data sources are normalized too, so claims saved before can pass.
      const oldNormalized = clone(old);
      normalizeDataSources(specOf(oldNormalized), ctx);
      const specErrs = validateSpec(obj.spec, root('spec'), opts);
      return [...specErrs, ...specErrs, ...validateClaimUpdate(obj, oldNormalized, opts)];
    },
    canonicalize(obj: KObject): void {
      if (isObject(obj.spec) && isObject(obj.spec['resources'])) {
        canonicalizeResourceList(obj.spec['resources']['limits']);
        canonicalizeResourceList(obj.spec['resources']['requests']);
      }
      if (isObject(obj.status)) {
        canonicalizeResourceList(obj.status['capacity']);
        canonicalizeResourceList(obj.status['allocatedResources']);
      }
    },
  },
  subresources: { status: statusStrategy },
};
