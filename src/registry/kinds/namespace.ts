/**
 * Namespace (core/v1), as Kubernetes 1.23 serves it:
 *   - strategy: pkg/registry/core/namespace/strategy.go (status Active and the 'kubernetes' finalizer on
 *     create; spec.finalizers and status kept on update; the kubernetes.io/metadata.name label)
 *   - validation: ValidateNamespace, ValidateNamespaceStatusUpdate, ValidateNamespaceFinalizeUpdate
 *     (pkg/apis/core/validation/validation.go)
 *   - defaults: SetDefaults_Namespace, SetDefaults_NamespaceStatus (pkg/apis/core/v1/defaults.go)
 *   - deletion: pkg/registry/core/namespace/storage/storage.go (the first delete only marks the
 *     namespace Terminating; it goes away once spec.finalizers is empty)
 *   - table: pkg/printers/internalversion/printers.go (NAME STATUS AGE)
 *   - field selectors: metadata.name and status.phase (AddFieldLabelConversionsForNamespace)
 * The conditions and messages the namespace controller writes (pkg/controller/namespace/deletion) are
 * exported for the controller.
 */
import type { KObject, KindDecl, StrategyContext, SubresourceStrategy, TableColumn } from '../kind.js';
import { ref, type Definitions } from '../schema.js';
import { API_VERSION_PROPERTY, KIND_PROPERTY, LIST_META_REF, META_NAMES, OBJECT_META_REF } from '../definitions/meta.js';
import {
  FINALIZER_DELETE_DEPENDENTS,
  FINALIZER_ORPHAN_DEPENDENTS,
  invalid,
  root,
  validateFinalizerName,
  validateNamespaceName,
  type FieldError,
  type FieldPath,
  type NameValidator,
} from '../../util/validation.js';

// ---------------------------------------------------------------------------------------------------
// Constants
// ---------------------------------------------------------------------------------------------------

/** core.FinalizerKubernetes: the spec finalizer the namespace controller removes once the namespace is empty. */
export const FINALIZER_KUBERNETES = 'kubernetes';
/** helper.IsStandardFinalizerName: finalizer names that need no domain prefix. */
export const STANDARD_FINALIZERS: readonly string[] = [FINALIZER_KUBERNETES, FINALIZER_ORPHAN_DEPENDENTS, FINALIZER_DELETE_DEPENDENTS];

export const NAMESPACE_ACTIVE = 'Active';
export const NAMESPACE_TERMINATING = 'Terminating';
export const NAMESPACE_PHASES: readonly string[] = [NAMESPACE_ACTIVE, NAMESPACE_TERMINATING];

/** v1.LabelMetadataName: every namespace carries its own name in this label. */
export const LABEL_METADATA_NAME = 'kubernetes.io/metadata.name';

/** ValidateNamespaceName: a namespace name is a DNS-1123 label. */
export const namespaceNameValidator: NameValidator = validateNamespaceName;

/** Namespace condition types, in the order the namespace controller maintains them (conditionTypes). */
export const NAMESPACE_CONDITION_TYPES = [
  'NamespaceDeletionDiscoveryFailure',
  'NamespaceDeletionGroupVersionParsingFailure',
  'NamespaceDeletionContentFailure',
  'NamespaceContentRemaining',
  'NamespaceFinalizersRemaining',
] as const;
export type NamespaceConditionType = (typeof NAMESPACE_CONDITION_TYPES)[number];

/** The "ok" variant of each condition (status False): okReasons and okMessages. */
export const NAMESPACE_CONDITION_OK: Readonly<Record<NamespaceConditionType, { reason: string; message: string }>> = {
  NamespaceDeletionDiscoveryFailure: { reason: 'ResourcesDiscovered', message: 'All resources successfully discovered' },
  NamespaceDeletionGroupVersionParsingFailure: { reason: 'ParsedGroupVersions', message: 'All legacy kube types successfully parsed' },
  NamespaceDeletionContentFailure: { reason: 'ContentDeleted', message: 'All content successfully deleted, may be waiting on finalization' },
  NamespaceContentRemaining: { reason: 'ContentRemoved', message: 'All content successfully removed' },
  NamespaceFinalizersRemaining: { reason: 'ContentRemoved', message: 'All content successfully removed' },
};

/** The reason of each condition when it is True (the failing variant). */
export const NAMESPACE_CONDITION_FAILED_REASONS: Readonly<Record<NamespaceConditionType, string>> = {
  NamespaceDeletionDiscoveryFailure: 'DiscoveryFailed',
  NamespaceDeletionGroupVersionParsingFailure: 'GroupVersionParsingFailed',
  NamespaceDeletionContentFailure: 'ContentDeletionFailed',
  NamespaceContentRemaining: 'SomeResourcesRemain',
  // sic: Kubernetes writes the singular form
  NamespaceFinalizersRemaining: 'SomeFinalizerRemain',
};

/** ProcessDiscoverResourcesErr for an ErrGroupDiscoveryFailed: "Discovery failed for some groups, N failing: <err>". */
export function discoveryFailedMessage(failingGroups: number, err: string): string {
  return `Discovery failed for some groups, ${failingGroups} failing: ${err}`;
}

/** makeDeleteContentCondition: the error messages are sorted, as Kubernetes sorts them. */
export function contentDeletionFailedMessage(errors: readonly string[]): string {
  const msgs = [...errors].sort(byBytes);
  return `Failed to delete all resource types, ${msgs.length} remaining: ${msgs.join(', ')}`;
}

/** ProcessContentTotals: "Some resources are remaining: pods. has 2 resource instances, ..." (sorted, zero counts skipped). */
export function someResourcesRemainMessage(remaining: readonly { resource: string; group: string; count: number }[]): string {
  const parts = remaining.filter((r) => r.count !== 0).map((r) => `${r.resource}.${r.group} has ${r.count} resource instances`);
  return `Some resources are remaining: ${parts.sort(byBytes).join(', ')}`;
}

/** ProcessContentTotals: "Some finalizers are remaining: example.com/f in 2 resource instances, ..." */
export function someFinalizersRemainMessage(remaining: readonly { finalizer: string; count: number }[]): string {
  const parts = remaining.filter((r) => r.count !== 0).map((r) => `${r.finalizer} in ${r.count} resource instances`);
  return `Some finalizers are remaining: ${parts.sort(byBytes).join(', ')}`;
}

/** ResourcesRemainingError.Error() */
export function resourcesRemainingMessage(estimateSeconds: number): string {
  return `some content remains in the namespace, estimate ${estimateSeconds} seconds before it is removed`;
}

/** The error deleteAllContentForGroupVersionResource returns when items remain after a delete. */
export function itemsStillRemainMessage(namespace: string, gvr: string): string {
  return `unexpected items still remain in namespace: ${namespace} for gvr: ${gvr}`;
}

/** The estimate the deleter uses when remaining items carry finalizers (finalizerEstimateSeconds). */
export const FINALIZER_ESTIMATE_SECONDS = 15;

function byBytes(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

// ---------------------------------------------------------------------------------------------------
// Schemas
// ---------------------------------------------------------------------------------------------------

const CORE = 'io.k8s.api.core.v1.';
const NAMESPACE = `${CORE}Namespace`;
const NAMESPACE_SPEC = `${CORE}NamespaceSpec`;
const NAMESPACE_STATUS = `${CORE}NamespaceStatus`;
const NAMESPACE_CONDITION = `${CORE}NamespaceCondition`;
const NAMESPACE_LIST = `${CORE}NamespaceList`;
const API_CONVENTIONS = 'https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md';

export const NAMESPACE_DEFINITIONS: Definitions = {
  [NAMESPACE]: {
    description: 'Namespace provides a scope for Names. Use of multiple namespaces is optional.',
    properties: {
      apiVersion: API_VERSION_PROPERTY,
      kind: KIND_PROPERTY,
      metadata: OBJECT_META_REF,
      spec: ref(NAMESPACE_SPEC, `Spec defines the behavior of the Namespace. More info: ${API_CONVENTIONS}#spec-and-status`),
      status: ref(NAMESPACE_STATUS, `Status describes the current status of a Namespace. More info: ${API_CONVENTIONS}#spec-and-status`),
    },
    type: 'object',
    'x-kubernetes-group-version-kind': [{ group: '', kind: 'Namespace', version: 'v1' }],
  },
  [NAMESPACE_SPEC]: {
    description: 'NamespaceSpec describes the attributes on a Namespace.',
    properties: {
      finalizers: {
        description:
          'Finalizers is an opaque list of values that must be empty to permanently remove object from storage. More info: https://kubernetes.io/docs/tasks/administer-cluster/namespaces/',
        items: { type: 'string' },
        type: 'array',
      },
    },
    type: 'object',
  },
  [NAMESPACE_STATUS]: {
    description: 'NamespaceStatus is information about the current status of a Namespace.',
    properties: {
      conditions: {
        description: "Represents the latest available observations of a namespace's current state.",
        items: ref(NAMESPACE_CONDITION),
        type: 'array',
        'x-kubernetes-patch-merge-key': 'type',
        'x-kubernetes-patch-strategy': 'merge',
      },
      phase: {
        description:
          'Phase is the current lifecycle phase of the namespace. More info: https://kubernetes.io/docs/tasks/administer-cluster/namespaces/\n\nPossible enum values:\n - `"Active"` means the namespace is available for use in the system\n - `"Terminating"` means the namespace is undergoing graceful termination',
        enum: ['Active', 'Terminating'],
        type: 'string',
      },
    },
    type: 'object',
  },
  [NAMESPACE_CONDITION]: {
    description: 'NamespaceCondition contains details about state of namespace.',
    properties: {
      lastTransitionTime: ref(META_NAMES.Time),
      message: { type: 'string' },
      reason: { type: 'string' },
      status: { description: 'Status of the condition, one of True, False, Unknown.', type: 'string' },
      type: {
        description:
          'Type of namespace controller condition.\n\nPossible enum values:\n - `"NamespaceContentRemaining"` contains information about resources remaining in a namespace.\n - `"NamespaceDeletionContentFailure"` contains information about namespace deleter errors during deletion of resources.\n - `"NamespaceDeletionDiscoveryFailure"` contains information about namespace deleter errors during resource discovery.\n - `"NamespaceDeletionGroupVersionParsingFailure"` contains information about namespace deleter errors parsing GV for legacy types.\n - `"NamespaceFinalizersRemaining"` contains information about which finalizers are on resources remaining in a namespace.',
        enum: [
          'NamespaceContentRemaining',
          'NamespaceDeletionContentFailure',
          'NamespaceDeletionDiscoveryFailure',
          'NamespaceDeletionGroupVersionParsingFailure',
          'NamespaceFinalizersRemaining',
        ],
        type: 'string',
      },
    },
    required: ['type', 'status'],
    type: 'object',
  },
  [NAMESPACE_LIST]: {
    description: 'NamespaceList is a list of Namespaces.',
    properties: {
      apiVersion: API_VERSION_PROPERTY,
      items: {
        description: 'Items is the list of Namespace objects in the list. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/namespaces/',
        items: ref(NAMESPACE),
        type: 'array',
      },
      kind: KIND_PROPERTY,
      metadata: LIST_META_REF,
    },
    required: ['items'],
    type: 'object',
    'x-kubernetes-group-version-kind': [{ group: '', kind: 'NamespaceList', version: 'v1' }],
  },
};

// ---------------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------------

type Json = Record<string, any>;

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** obj.spec as an object, created when absent (Go's struct is never nil). */
function specOf(obj: KObject): Json {
  if (!isObject(obj.spec)) obj.spec = {};
  return obj.spec as Json;
}

function statusOf(obj: KObject): Json {
  if (!isObject(obj.status)) obj.status = {};
  return obj.status as Json;
}

function finalizersOf(spec: unknown): string[] {
  if (!isObject(spec) || !Array.isArray(spec['finalizers'])) return [];
  return (spec['finalizers'] as unknown[]).map((f) => (typeof f === 'string' ? f : String(f)));
}

function clone<T>(v: T): T {
  return v === undefined ? v : structuredClone(v);
}

/** The value of `old`'s field onto `obj` (deleting it when `old` has none). */
function copyField(obj: Json, old: Json | undefined, field: string): void {
  if (old && old[field] !== undefined) obj[field] = clone(old[field]);
  else delete obj[field];
}

/** validateFinalizerName (core): a qualified name, and a standard name unless it has a domain prefix. */
function validateKubeFinalizerName(name: string, path: FieldPath): FieldError[] {
  const errs = validateFinalizerName(name, path);
  if (name.split('/').length === 1 && !STANDARD_FINALIZERS.includes(name)) {
    errs.push(invalid(path, name, 'name is neither a standard finalizer name nor is it fully qualified'));
  }
  return errs;
}

/** ValidateNamespace, without the object metadata (validated by the store). */
function validateNamespace(obj: KObject): FieldError[] {
  const path = root('spec', 'finalizers');
  return finalizersOf(obj.spec).flatMap((f) => validateKubeFinalizerName(f, path));
}

function isZeroTime(ts: unknown): boolean {
  return ts === undefined || ts === null || ts === '' || ts === '0001-01-01T00:00:00Z';
}

/** Sets the kubernetes.io/metadata.name label to the name (defaulting and Canonicalize). */
function setNameLabel(obj: KObject): void {
  const meta = (obj.metadata ??= {});
  if (!isObject(meta.labels)) meta.labels = {};
  meta.labels[LABEL_METADATA_NAME] = meta.name ?? '';
}

// ---------------------------------------------------------------------------------------------------
// Strategies
// ---------------------------------------------------------------------------------------------------

/** The status subresource: changes status (and metadata), never spec. */
const statusStrategy: SubresourceStrategy = {
  prepareForUpdate(obj: KObject, old: KObject): void {
    copyField(obj, old, 'spec');
  },
  /** ValidateNamespaceStatusUpdate (object metadata is the store's). */
  validateUpdate(obj: KObject): FieldError[] {
    const phase = isObject(obj.status) && typeof obj.status['phase'] === 'string' ? obj.status['phase'] : '';
    const path = root('status', 'Phase');
    if (isZeroTime(obj.metadata?.deletionTimestamp)) {
      if (phase !== NAMESPACE_ACTIVE) return [invalid(path, phase, "may only be 'Active' if `deletionTimestamp` is empty")];
    } else if (phase !== NAMESPACE_TERMINATING) {
      return [invalid(path, phase, "may only be 'Terminating' if `deletionTimestamp` is not empty")];
    }
    return [];
  },
};

/** The finalize subresource: changes spec.finalizers (and metadata), never status. */
const finalizeStrategy: SubresourceStrategy = {
  prepareForUpdate(obj: KObject, old: KObject): void {
    copyField(obj, old, 'status');
  },
  /** ValidateNamespaceFinalizeUpdate (object metadata is the store's): each finalizer, by index. */
  validateUpdate(obj: KObject): FieldError[] {
    const path = root('spec', 'finalizers');
    return finalizersOf(obj.spec).flatMap((f, i) => validateKubeFinalizerName(f, path.index(i)));
  },
};

const columns: TableColumn[] = [
  {
    name: 'Status',
    type: 'string',
    description: 'The status of the namespace',
    priority: 0,
    cell: (obj) => (isObject(obj.status) && typeof obj.status['phase'] === 'string' ? obj.status['phase'] : ''),
  },
  {
    name: 'Age',
    type: 'string',
    description:
      'CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata',
    priority: 0,
    cell: (obj) => obj.metadata?.creationTimestamp ?? null,
  },
];

export const namespaceKind: KindDecl = {
  group: '',
  version: 'v1',
  kind: 'Namespace',
  listKind: 'NamespaceList',
  resource: 'namespaces',
  singular: 'namespace',
  shortNames: ['ns'],
  namespaced: false,
  nameValidator: namespaceNameValidator,
  definition: NAMESPACE,
  listDefinition: NAMESPACE_LIST,
  definitions: NAMESPACE_DEFINITIONS,
  // Kubernetes never sets metadata.generation on namespaces.
  tracksGeneration: false,
  fieldSelectors: {
    'status.phase': (obj) => (isObject(obj.status) && typeof obj.status['phase'] === 'string' ? obj.status['phase'] : ''),
  },
  columns,
  responses: { delete: 'Status' },
  strategy: {
    allowCreateOnUpdate: false,
    allowUnconditionalUpdate: true,
    /** Status is Active; the 'kubernetes' finalizer is added to spec.finalizers when absent. */
    prepareForCreate(obj: KObject): void {
      obj.status = { phase: NAMESPACE_ACTIVE };
      const spec = specOf(obj);
      const finalizers = finalizersOf(spec);
      if (!finalizers.includes(FINALIZER_KUBERNETES)) finalizers.push(FINALIZER_KUBERNETES);
      spec['finalizers'] = finalizers;
    },
    /** The main resource can change neither spec.finalizers nor status. */
    prepareForUpdate(obj: KObject, old: KObject): void {
      copyField(specOf(obj), isObject(old.spec) ? old.spec : undefined, 'finalizers');
      copyField(obj, old, 'status');
    },
    /** SetDefaults_Namespace (the name label, when the name is known) and SetDefaults_NamespaceStatus. */
    default(obj: KObject): void {
      specOf(obj);
      const status = statusOf(obj);
      if (typeof status['phase'] !== 'string' || status['phase'] === '') status['phase'] = NAMESPACE_ACTIVE;
      if (obj.metadata?.name) setNameLabel(obj);
    },
    validate(obj: KObject): FieldError[] {
      return validateNamespace(obj);
    },
    /** ValidateNamespace + ValidateNamespaceUpdate (whose only checks are the metadata ones). */
    validateUpdate(obj: KObject): FieldError[] {
      return validateNamespace(obj);
    },
    /** The name label again, for names generated after defaulting (generateName). */
    canonicalize(obj: KObject): void {
      setNameLabel(obj);
    },
  },
  subresources: { status: statusStrategy, finalize: finalizeStrategy },
  /**
   * Namespace deletion (pkg/registry/core/namespace/storage): the first delete marks the namespace
   * (deletionTimestamp, phase Terminating) and keeps it; later deletes keep it while spec.finalizers is
   * not empty; then the ordinary delete (metadata.finalizers) applies.
   */
  verbs: ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'],
  beforeDelete(obj: KObject, _ctx: StrategyContext, now: string): KObject | null {
    const meta = (obj.metadata ??= {});
    if (isZeroTime(meta.deletionTimestamp)) {
      meta.deletionTimestamp = now;
      statusOf(obj)['phase'] = NAMESPACE_TERMINATING;
      return obj;
    }
    if (finalizersOf(obj.spec).length > 0) return obj;
    return null;
  },
};
