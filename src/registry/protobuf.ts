/**
 * Kubernetes' protobuf wire format (application/vnd.kubernetes.protobuf) for the kinds orch serves.
 *
 * Kubernetes' Go types are generated into proto2 messages by go-to-protobuf and marshalled by gogo-protobuf.
 * A request or response body is the magic `k8s\0` followed by a runtime.Unknown envelope
 * {typeMeta=1 {apiVersion=1, kind=2}, raw=2, contentEncoding=3, contentType=4} whose `raw` is the object's
 * own message. orch keeps objects as JSON in their v1 wire form, so this module translates between that JSON
 * and the protobuf messages, following how Go would turn the same bytes into JSON:
 *
 *   - gogo writes every non-pointer scalar (even "" / 0 / false) and every non-pointer struct (even empty);
 *     pointer fields only when set. Maps are repeated {key=1, value=2} entries sorted by key; repeated
 *     strings are not packed; int32/int64 negatives are sign-extended 10-byte varints.
 *   - Go's encoding/json omits zero scalars, empty slices and empty maps that are tagged `omitempty`, keeps
 *     set pointers even when they point at a zero value, and never omits a struct (`"spec": {}`).
 *   - metav1.Time / MicroTime are Timestamp {seconds=1, nanos=2}; a zero time is written as an empty message
 *     and shows in JSON as null (`"creationTimestamp": null`). Time is RFC 3339 to the second, MicroTime to
 *     the microsecond, both in UTC.
 *   - resource.Quantity is {string=1}; FieldsV1 is {Raw=1} holding JSON.
 *
 * The descriptors below are transcribed from Kubernetes 1.23's generated.proto files (core/v1,
 * meta/v1, api/resource, runtime); their field order is the Go struct order, which is also the order of the
 * keys in the JSON this module produces.
 */
import { apiErrors } from './errors.js';
import { AUTHORIZATION_PROTOBUF_KINDS, AUTHORIZATION_PROTOBUF_MESSAGES } from './kinds/authorization/protobuf.js';
import { RBAC_PROTOBUF_KINDS, RBAC_PROTOBUF_MESSAGES } from './kinds/rbac/protobuf.js';
import { SERVICE_PROTOBUF_KINDS, SERVICE_PROTOBUF_MESSAGES } from './kinds/service/protobuf.js';
import { AUTHENTICATION_PROTOBUF_KINDS, AUTHENTICATION_PROTOBUF_MESSAGES } from './kinds/authentication/protobuf.js';
import { ADMISSION_KINDS_PROTOBUF_KINDS, ADMISSION_KINDS_PROTOBUF_MESSAGES } from './kinds/priorityclass/protobuf.js';

// ---------------------------------------------------------------------------------------------------------
// Descriptors

/**
 * How the Go field is declared, which decides both what gogo writes and what encoding/json shows:
 *   - `omitempty`: a value (not a pointer) tagged omitempty. Always on the wire; a zero/empty value is left
 *     out of JSON. For a struct (message) Go never omits it, so it shows as `{}` (a zero Time as null).
 *   - `always`: a value without omitempty. Always on the wire; always in JSON (zero value when absent;
 *     `[]` / `{}` for repeated fields and maps).
 *   - `pointer`: a pointer (or a nil-able slice/map payload). On the wire and in JSON only when set; a set
 *     pointer keeps its value even when it is zero.
 */
export type Presence = 'omitempty' | 'always' | 'pointer';

/** Scalar protobuf types used by Kubernetes' messages. */
export type ScalarType = 'string' | 'bool' | 'int32' | 'int64' | 'bytes';

export interface FieldDescriptor {
  /** The protobuf field number. */
  readonly no: number;
  /** The field name, as generated.proto spells it; also the JSON key. */
  readonly json: string;
  /** A ScalarType, or the name of a message in MESSAGES. */
  readonly type: string;
  readonly presence: Presence;
  /** `repeated` (never packed for the types here). */
  readonly repeated?: boolean;
  /** `map<string, type>`: repeated entries {key=1, value=2}. */
  readonly map?: boolean;
  /** Written only when not zero (a field later Kubernetes versions removed, so their clients never write it). */
  readonly writeOnlyIfSet?: boolean;
}

/** Messages whose JSON form is not an object of their fields. */
export type CustomCodec = 'time' | 'microTime' | 'quantity' | 'fieldsV1' | 'intOrString';

export interface MessageDescriptor {
  readonly name: string;
  readonly fields: readonly FieldDescriptor[];
  readonly custom?: CustomCodec;
}

const SCALARS = new Set<string>(['string', 'bool', 'int32', 'int64', 'bytes']);

function field(
  no: number,
  json: string,
  type: string,
  presence: Presence,
  opts: { repeated?: boolean; map?: boolean; writeOnlyIfSet?: boolean } = {},
): FieldDescriptor {
  return { no, json, type, presence, ...opts };
}
const rep = { repeated: true };
const map = { map: true };

const TIME = 'meta.v1.Time';
const MICRO_TIME = 'meta.v1.MicroTime';
const QUANTITY = 'resource.Quantity';

const messageList: MessageDescriptor[] = [
  // --- k8s.io/apimachinery/pkg/runtime
  {
    name: 'runtime.TypeMeta',
    fields: [field(1, 'apiVersion', 'string', 'omitempty'), field(2, 'kind', 'string', 'omitempty')],
  },
  {
    name: 'runtime.Unknown',
    fields: [
      field(1, 'typeMeta', 'runtime.TypeMeta', 'omitempty'),
      field(2, 'raw', 'bytes', 'pointer'),
      field(3, 'contentEncoding', 'string', 'omitempty'),
      field(4, 'contentType', 'string', 'omitempty'),
    ],
  },
  { name: 'runtime.RawExtension', fields: [field(1, 'raw', 'bytes', 'pointer')] },

  // --- k8s.io/apimachinery/pkg/api/resource
  { name: QUANTITY, custom: 'quantity', fields: [field(1, 'string', 'string', 'omitempty')] },
  // intstr.IntOrString {type=1 (0 int, 1 string), intVal=2, strVal=3}: a number or a string in JSON.
  { name: 'intstr.IntOrString', custom: 'intOrString', fields: [] },

  // --- k8s.io/apimachinery/pkg/apis/meta/v1
  {
    name: 'meta.v1.TypeMeta',
    fields: [field(1, 'kind', 'string', 'omitempty'), field(2, 'apiVersion', 'string', 'omitempty')],
  },
  {
    name: TIME,
    custom: 'time',
    fields: [field(1, 'seconds', 'int64', 'omitempty'), field(2, 'nanos', 'int32', 'omitempty')],
  },
  {
    name: MICRO_TIME,
    custom: 'microTime',
    fields: [field(1, 'seconds', 'int64', 'omitempty'), field(2, 'nanos', 'int32', 'omitempty')],
  },
  { name: 'meta.v1.FieldsV1', custom: 'fieldsV1', fields: [field(1, 'Raw', 'bytes', 'pointer')] },
  {
    name: 'meta.v1.ObjectMeta',
    fields: [
      field(1, 'name', 'string', 'omitempty'),
      field(2, 'generateName', 'string', 'omitempty'),
      field(3, 'namespace', 'string', 'omitempty'),
      field(4, 'selfLink', 'string', 'omitempty'),
      field(5, 'uid', 'string', 'omitempty'),
      field(6, 'resourceVersion', 'string', 'omitempty'),
      field(7, 'generation', 'int64', 'omitempty'),
      field(8, 'creationTimestamp', TIME, 'omitempty'),
      field(9, 'deletionTimestamp', TIME, 'pointer'),
      field(10, 'deletionGracePeriodSeconds', 'int64', 'pointer'),
      field(11, 'labels', 'string', 'omitempty', map),
      field(12, 'annotations', 'string', 'omitempty', map),
      field(13, 'ownerReferences', 'meta.v1.OwnerReference', 'omitempty', rep),
      field(14, 'finalizers', 'string', 'omitempty', rep),
      // Removed in 1.25 (kubectl 1.25+ does not write it); written only when set, so both forms are identical.
      field(15, 'clusterName', 'string', 'omitempty', { writeOnlyIfSet: true }),
      field(17, 'managedFields', 'meta.v1.ManagedFieldsEntry', 'omitempty', rep),
    ],
  },
  {
    name: 'meta.v1.ListMeta',
    fields: [
      field(1, 'selfLink', 'string', 'omitempty'),
      field(2, 'resourceVersion', 'string', 'omitempty'),
      field(3, 'continue', 'string', 'omitempty'),
      field(4, 'remainingItemCount', 'int64', 'pointer'),
    ],
  },
  {
    name: 'meta.v1.OwnerReference',
    fields: [
      field(5, 'apiVersion', 'string', 'always'),
      field(1, 'kind', 'string', 'always'),
      field(3, 'name', 'string', 'always'),
      field(4, 'uid', 'string', 'always'),
      field(6, 'controller', 'bool', 'pointer'),
      field(7, 'blockOwnerDeletion', 'bool', 'pointer'),
    ],
  },
  {
    name: 'meta.v1.ManagedFieldsEntry',
    fields: [
      field(1, 'manager', 'string', 'omitempty'),
      field(2, 'operation', 'string', 'omitempty'),
      field(3, 'apiVersion', 'string', 'omitempty'),
      field(4, 'time', TIME, 'pointer'),
      field(6, 'fieldsType', 'string', 'omitempty'),
      field(7, 'fieldsV1', 'meta.v1.FieldsV1', 'pointer'),
      field(8, 'subresource', 'string', 'omitempty'),
    ],
  },
  {
    name: 'meta.v1.LabelSelector',
    fields: [
      field(1, 'matchLabels', 'string', 'omitempty', map),
      field(2, 'matchExpressions', 'meta.v1.LabelSelectorRequirement', 'omitempty', rep),
    ],
  },
  {
    name: 'meta.v1.LabelSelectorRequirement',
    fields: [
      field(1, 'key', 'string', 'always'),
      field(2, 'operator', 'string', 'always'),
      field(3, 'values', 'string', 'omitempty', rep),
    ],
  },
  {
    name: 'meta.v1.Status',
    fields: [
      field(1, 'metadata', 'meta.v1.ListMeta', 'omitempty'),
      field(2, 'status', 'string', 'omitempty'),
      field(3, 'message', 'string', 'omitempty'),
      field(4, 'reason', 'string', 'omitempty'),
      field(5, 'details', 'meta.v1.StatusDetails', 'pointer'),
      field(6, 'code', 'int32', 'omitempty'),
    ],
  },
  {
    name: 'meta.v1.StatusDetails',
    fields: [
      field(1, 'name', 'string', 'omitempty'),
      field(2, 'group', 'string', 'omitempty'),
      field(3, 'kind', 'string', 'omitempty'),
      field(6, 'uid', 'string', 'omitempty'),
      field(4, 'causes', 'meta.v1.StatusCause', 'omitempty', rep),
      field(5, 'retryAfterSeconds', 'int32', 'omitempty'),
    ],
  },
  {
    name: 'meta.v1.StatusCause',
    fields: [
      field(1, 'reason', 'string', 'omitempty'),
      field(2, 'message', 'string', 'omitempty'),
      field(3, 'field', 'string', 'omitempty'),
    ],
  },
  {
    name: 'meta.v1.DeleteOptions',
    fields: [
      field(1, 'gracePeriodSeconds', 'int64', 'pointer'),
      field(2, 'preconditions', 'meta.v1.Preconditions', 'pointer'),
      field(3, 'orphanDependents', 'bool', 'pointer'),
      field(4, 'propagationPolicy', 'string', 'pointer'),
      field(5, 'dryRun', 'string', 'omitempty', rep),
    ],
  },
  {
    name: 'meta.v1.Preconditions',
    fields: [field(1, 'uid', 'string', 'pointer'), field(2, 'resourceVersion', 'string', 'pointer')],
  },
  {
    name: 'meta.v1.WatchEvent',
    fields: [field(1, 'type', 'string', 'always'), field(2, 'object', 'runtime.RawExtension', 'always')],
  },

  // --- k8s.io/api/core/v1
  {
    name: 'core.v1.Namespace',
    fields: [
      field(1, 'metadata', 'meta.v1.ObjectMeta', 'omitempty'),
      field(2, 'spec', 'core.v1.NamespaceSpec', 'omitempty'),
      field(3, 'status', 'core.v1.NamespaceStatus', 'omitempty'),
    ],
  },
  { name: 'core.v1.NamespaceSpec', fields: [field(1, 'finalizers', 'string', 'omitempty', rep)] },
  {
    name: 'core.v1.NamespaceStatus',
    fields: [
      field(1, 'phase', 'string', 'omitempty'),
      field(2, 'conditions', 'core.v1.NamespaceCondition', 'omitempty', rep),
    ],
  },
  {
    name: 'core.v1.NamespaceCondition',
    fields: [
      field(1, 'type', 'string', 'always'),
      field(2, 'status', 'string', 'always'),
      field(4, 'lastTransitionTime', TIME, 'omitempty'),
      field(5, 'reason', 'string', 'omitempty'),
      field(6, 'message', 'string', 'omitempty'),
    ],
  },
  {
    name: 'core.v1.NamespaceList',
    fields: [
      field(1, 'metadata', 'meta.v1.ListMeta', 'omitempty'),
      field(2, 'items', 'core.v1.Namespace', 'always', rep),
    ],
  },
  {
    name: 'core.v1.PersistentVolumeClaim',
    fields: [
      field(1, 'metadata', 'meta.v1.ObjectMeta', 'omitempty'),
      field(2, 'spec', 'core.v1.PersistentVolumeClaimSpec', 'omitempty'),
      field(3, 'status', 'core.v1.PersistentVolumeClaimStatus', 'omitempty'),
    ],
  },
  {
    name: 'core.v1.PersistentVolumeClaimSpec',
    fields: [
      field(1, 'accessModes', 'string', 'omitempty', rep),
      field(4, 'selector', 'meta.v1.LabelSelector', 'pointer'),
      field(2, 'resources', 'core.v1.ResourceRequirements', 'omitempty'),
      field(3, 'volumeName', 'string', 'omitempty'),
      field(5, 'storageClassName', 'string', 'pointer'),
      field(6, 'volumeMode', 'string', 'pointer'),
      field(7, 'dataSource', 'core.v1.TypedLocalObjectReference', 'pointer'),
      // 1.23: TypedLocalObjectReference (1.26 changed it to TypedObjectReference, same numbers 1-3 plus namespace=4).
      field(8, 'dataSourceRef', 'core.v1.TypedLocalObjectReference', 'pointer'),
    ],
  },
  {
    name: 'core.v1.PersistentVolumeClaimStatus',
    fields: [
      field(1, 'phase', 'string', 'omitempty'),
      field(2, 'accessModes', 'string', 'omitempty', rep),
      field(3, 'capacity', QUANTITY, 'omitempty', map),
      field(4, 'conditions', 'core.v1.PersistentVolumeClaimCondition', 'omitempty', rep),
      field(5, 'allocatedResources', QUANTITY, 'omitempty', map),
      field(6, 'resizeStatus', 'string', 'pointer'),
    ],
  },
  {
    name: 'core.v1.PersistentVolumeClaimCondition',
    fields: [
      field(1, 'type', 'string', 'always'),
      field(2, 'status', 'string', 'always'),
      field(3, 'lastProbeTime', TIME, 'omitempty'),
      field(4, 'lastTransitionTime', TIME, 'omitempty'),
      field(5, 'reason', 'string', 'omitempty'),
      field(6, 'message', 'string', 'omitempty'),
    ],
  },
  {
    name: 'core.v1.PersistentVolumeClaimList',
    fields: [
      field(1, 'metadata', 'meta.v1.ListMeta', 'omitempty'),
      field(2, 'items', 'core.v1.PersistentVolumeClaim', 'always', rep),
    ],
  },
  {
    name: 'core.v1.ResourceRequirements',
    fields: [field(1, 'limits', QUANTITY, 'omitempty', map), field(2, 'requests', QUANTITY, 'omitempty', map)],
  },
  {
    // apiGroup is a *string tagged `json:"apiGroup"` (no omitempty): Go writes null when unset; orch leaves it out.
    name: 'core.v1.TypedLocalObjectReference',
    fields: [
      field(1, 'apiGroup', 'string', 'pointer'),
      field(2, 'kind', 'string', 'always'),
      field(3, 'name', 'string', 'always'),
    ],
  },
  {
    name: 'core.v1.ConfigMap',
    fields: [
      field(1, 'metadata', 'meta.v1.ObjectMeta', 'omitempty'),
      field(4, 'immutable', 'bool', 'pointer'),
      field(2, 'data', 'string', 'omitempty', map),
      field(3, 'binaryData', 'bytes', 'omitempty', map),
    ],
  },
  {
    name: 'core.v1.ConfigMapList',
    fields: [
      field(1, 'metadata', 'meta.v1.ListMeta', 'omitempty'),
      field(2, 'items', 'core.v1.ConfigMap', 'always', rep),
    ],
  },
  {
    name: 'core.v1.Secret',
    fields: [
      field(1, 'metadata', 'meta.v1.ObjectMeta', 'omitempty'),
      field(5, 'immutable', 'bool', 'pointer'),
      field(2, 'data', 'bytes', 'omitempty', map),
      field(4, 'stringData', 'string', 'omitempty', map),
      field(3, 'type', 'string', 'omitempty'),
    ],
  },
  {
    name: 'core.v1.SecretList',
    fields: [
      field(1, 'metadata', 'meta.v1.ListMeta', 'omitempty'),
      field(2, 'items', 'core.v1.Secret', 'always', rep),
    ],
  },
  {
    name: 'core.v1.ServiceAccount',
    fields: [
      field(1, 'metadata', 'meta.v1.ObjectMeta', 'omitempty'),
      field(2, 'secrets', 'core.v1.ObjectReference', 'omitempty', rep),
      field(3, 'imagePullSecrets', 'core.v1.LocalObjectReference', 'omitempty', rep),
      field(4, 'automountServiceAccountToken', 'bool', 'pointer'),
    ],
  },
  {
    name: 'core.v1.ServiceAccountList',
    fields: [
      field(1, 'metadata', 'meta.v1.ListMeta', 'omitempty'),
      field(2, 'items', 'core.v1.ServiceAccount', 'always', rep),
    ],
  },
  {
    name: 'core.v1.ObjectReference',
    fields: [
      field(1, 'kind', 'string', 'omitempty'),
      field(2, 'namespace', 'string', 'omitempty'),
      field(3, 'name', 'string', 'omitempty'),
      field(4, 'uid', 'string', 'omitempty'),
      field(5, 'apiVersion', 'string', 'omitempty'),
      field(6, 'resourceVersion', 'string', 'omitempty'),
      field(7, 'fieldPath', 'string', 'omitempty'),
    ],
  },
  { name: 'core.v1.LocalObjectReference', fields: [field(1, 'name', 'string', 'omitempty')] },
  // Node (core/v1): NodeSpec's fields in Go order (podCIDR=1, podCIDRs=7, ..., externalID=2).
  {
    name: 'core.v1.Node',
    fields: [
      field(1, 'metadata', 'meta.v1.ObjectMeta', 'omitempty'),
      field(2, 'spec', 'core.v1.NodeSpec', 'omitempty'),
      field(3, 'status', 'core.v1.NodeStatus', 'omitempty'),
    ],
  },
  {
    name: 'core.v1.NodeList',
    fields: [
      field(1, 'metadata', 'meta.v1.ListMeta', 'omitempty'),
      field(2, 'items', 'core.v1.Node', 'always', rep),
    ],
  },
  {
    name: 'core.v1.NodeSpec',
    fields: [
      field(1, 'podCIDR', 'string', 'omitempty'),
      field(7, 'podCIDRs', 'string', 'omitempty', rep),
      field(3, 'providerID', 'string', 'omitempty'),
      field(4, 'unschedulable', 'bool', 'omitempty'),
      field(5, 'taints', 'core.v1.Taint', 'omitempty', rep),
      field(6, 'configSource', 'core.v1.NodeConfigSource', 'pointer'),
      field(2, 'externalID', 'string', 'omitempty'),
    ],
  },
  {
    name: 'core.v1.Taint',
    fields: [
      field(1, 'key', 'string', 'always'),
      field(2, 'value', 'string', 'omitempty'),
      field(3, 'effect', 'string', 'always'),
      field(4, 'timeAdded', TIME, 'pointer'),
    ],
  },
  // Field 1 (the removed ObjectReference) is reserved.
  { name: 'core.v1.NodeConfigSource', fields: [field(2, 'configMap', 'core.v1.ConfigMapNodeConfigSource', 'pointer')] },
  {
    name: 'core.v1.ConfigMapNodeConfigSource',
    fields: [
      field(1, 'namespace', 'string', 'always'),
      field(2, 'name', 'string', 'always'),
      field(3, 'uid', 'string', 'omitempty'),
      field(4, 'resourceVersion', 'string', 'omitempty'),
      field(5, 'kubeletConfigKey', 'string', 'always'),
    ],
  },
  {
    name: 'core.v1.NodeStatus',
    fields: [
      field(1, 'capacity', QUANTITY, 'omitempty', map),
      field(2, 'allocatable', QUANTITY, 'omitempty', map),
      field(3, 'phase', 'string', 'omitempty'),
      field(4, 'conditions', 'core.v1.NodeCondition', 'omitempty', rep),
      field(5, 'addresses', 'core.v1.NodeAddress', 'omitempty', rep),
      field(6, 'daemonEndpoints', 'core.v1.NodeDaemonEndpoints', 'omitempty'),
      field(7, 'nodeInfo', 'core.v1.NodeSystemInfo', 'omitempty'),
      field(8, 'images', 'core.v1.ContainerImage', 'omitempty', rep),
      field(9, 'volumesInUse', 'string', 'omitempty', rep),
      field(10, 'volumesAttached', 'core.v1.AttachedVolume', 'omitempty', rep),
      field(11, 'config', 'core.v1.NodeConfigStatus', 'pointer'),
    ],
  },
  {
    name: 'core.v1.NodeCondition',
    fields: [
      field(1, 'type', 'string', 'always'),
      field(2, 'status', 'string', 'always'),
      field(3, 'lastHeartbeatTime', TIME, 'omitempty'),
      field(4, 'lastTransitionTime', TIME, 'omitempty'),
      field(5, 'reason', 'string', 'omitempty'),
      field(6, 'message', 'string', 'omitempty'),
    ],
  },
  {
    name: 'core.v1.NodeAddress',
    fields: [field(1, 'type', 'string', 'always'), field(2, 'address', 'string', 'always')],
  },
  { name: 'core.v1.NodeDaemonEndpoints', fields: [field(1, 'kubeletEndpoint', 'core.v1.DaemonEndpoint', 'omitempty')] },
  // DaemonEndpoint's JSON key is "Port" (`json:"Port"`, no omitempty).
  { name: 'core.v1.DaemonEndpoint', fields: [field(1, 'Port', 'int32', 'always')] },
  {
    // Every NodeSystemInfo field is tagged without omitempty.
    name: 'core.v1.NodeSystemInfo',
    fields: [
      field(1, 'machineID', 'string', 'always'),
      field(2, 'systemUUID', 'string', 'always'),
      field(3, 'bootID', 'string', 'always'),
      field(4, 'kernelVersion', 'string', 'always'),
      field(5, 'osImage', 'string', 'always'),
      field(6, 'containerRuntimeVersion', 'string', 'always'),
      field(7, 'kubeletVersion', 'string', 'always'),
      field(8, 'kubeProxyVersion', 'string', 'always'),
      field(9, 'operatingSystem', 'string', 'always'),
      field(10, 'architecture', 'string', 'always'),
    ],
  },
  {
    // names is `json:"names"` (no omitempty); Go writes null for a nil list, orch an empty one.
    name: 'core.v1.ContainerImage',
    fields: [field(1, 'names', 'string', 'always', rep), field(2, 'sizeBytes', 'int64', 'omitempty')],
  },
  {
    name: 'core.v1.AttachedVolume',
    fields: [field(1, 'name', 'string', 'always'), field(2, 'devicePath', 'string', 'always')],
  },
  {
    name: 'core.v1.NodeConfigStatus',
    fields: [
      field(1, 'assigned', 'core.v1.NodeConfigSource', 'pointer'),
      field(2, 'active', 'core.v1.NodeConfigSource', 'pointer'),
      field(3, 'lastKnownGood', 'core.v1.NodeConfigSource', 'pointer'),
      field(4, 'error', 'string', 'omitempty'),
    ],
  },
  // --- k8s.io/api/coordination/v1
  {
    name: 'coordination.v1.Lease',
    fields: [
      field(1, 'metadata', 'meta.v1.ObjectMeta', 'omitempty'),
      field(2, 'spec', 'coordination.v1.LeaseSpec', 'omitempty'),
    ],
  },
  {
    name: 'coordination.v1.LeaseSpec',
    fields: [
      field(1, 'holderIdentity', 'string', 'pointer'),
      field(2, 'leaseDurationSeconds', 'int32', 'pointer'),
      field(3, 'acquireTime', MICRO_TIME, 'pointer'),
      field(4, 'renewTime', MICRO_TIME, 'pointer'),
      field(5, 'leaseTransitions', 'int32', 'pointer'),
    ],
  },
  {
    name: 'coordination.v1.LeaseList',
    fields: [
      field(1, 'metadata', 'meta.v1.ListMeta', 'omitempty'),
      field(2, 'items', 'coordination.v1.Lease', 'always', rep),
    ],
  },
  {
    name: 'core.v1.TypedObjectReference',
    fields: [
      field(1, 'apiGroup', 'string', 'pointer'),
      field(2, 'kind', 'string', 'always'),
      field(3, 'name', 'string', 'always'),
      field(4, 'namespace', 'string', 'pointer'),
    ],
  },
];

/** Every message descriptor, by name ('meta.v1.ObjectMeta', 'core.v1.Namespace', ...). */
export const MESSAGES: Readonly<Record<string, MessageDescriptor>> = Object.freeze(
  Object.fromEntries([...messageList, ...RBAC_PROTOBUF_MESSAGES, ...AUTHORIZATION_PROTOBUF_MESSAGES, ...AUTHENTICATION_PROTOBUF_MESSAGES, ...SERVICE_PROTOBUF_MESSAGES, ...ADMISSION_KINDS_PROTOBUF_MESSAGES].map((m) => [m.name, m])),
);

/** The top-level kinds a body may carry: kind → message and accepted apiVersions (null: any). */
export const PROTOBUF_KINDS: Readonly<Record<string, { message: string; apiVersions: readonly string[] | null }>> =
  Object.freeze({
    Namespace: { message: 'core.v1.Namespace', apiVersions: ['v1'] },
    NamespaceList: { message: 'core.v1.NamespaceList', apiVersions: ['v1'] },
    PersistentVolumeClaim: { message: 'core.v1.PersistentVolumeClaim', apiVersions: ['v1'] },
    PersistentVolumeClaimList: { message: 'core.v1.PersistentVolumeClaimList', apiVersions: ['v1'] },
    ConfigMap: { message: 'core.v1.ConfigMap', apiVersions: ['v1'] },
    ConfigMapList: { message: 'core.v1.ConfigMapList', apiVersions: ['v1'] },
    Secret: { message: 'core.v1.Secret', apiVersions: ['v1'] },
    SecretList: { message: 'core.v1.SecretList', apiVersions: ['v1'] },
    ServiceAccount: { message: 'core.v1.ServiceAccount', apiVersions: ['v1'] },
    ServiceAccountList: { message: 'core.v1.ServiceAccountList', apiVersions: ['v1'] },
    Node: { message: 'core.v1.Node', apiVersions: ['v1'] },
    NodeList: { message: 'core.v1.NodeList', apiVersions: ['v1'] },
    Lease: { message: 'coordination.v1.Lease', apiVersions: ['coordination.k8s.io/v1'] },
    LeaseList: { message: 'coordination.v1.LeaseList', apiVersions: ['coordination.k8s.io/v1'] },
    // DeleteOptions and Status are registered in every group version (metav1.AddToGroupVersion) and in meta.k8s.io/v1.
    DeleteOptions: { message: 'meta.v1.DeleteOptions', apiVersions: null },
    Status: { message: 'meta.v1.Status', apiVersions: null },
    ...RBAC_PROTOBUF_KINDS,
    ...AUTHORIZATION_PROTOBUF_KINDS,
    ...AUTHENTICATION_PROTOBUF_KINDS,
    ...SERVICE_PROTOBUF_KINDS,
    ...ADMISSION_KINDS_PROTOBUF_KINDS,
  });

function descriptor(name: string): MessageDescriptor {
  const d = MESSAGES[name];
  if (!d) throw new Error(`protobuf: no descriptor for message ${name}`);
  return d;
}

// ---------------------------------------------------------------------------------------------------------
// Wire reader and writer

const WIRE_VARINT = 0;
const WIRE_FIXED64 = 1;
const WIRE_BYTES = 2;
const WIRE_FIXED32 = 5;

class ProtobufDecodeError extends Error {}

class Reader {
  pos: number;
  constructor(
    readonly buf: Uint8Array,
    start = 0,
    readonly end = buf.length,
  ) {
    this.pos = start;
  }

  done(): boolean {
    return this.pos >= this.end;
  }

  /** A varint as a 64-bit two's-complement BigInt (unsigned). */
  varintBig(): bigint {
    let result = 0n;
    let shift = 0n;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) throw new ProtobufDecodeError('unexpected end of data in varint');
      const b = this.buf[this.pos++]!;
      result |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return BigInt.asUintN(64, result);
      shift += 7n;
    }
    throw new ProtobufDecodeError('varint overflows 64 bits');
  }

  /** A varint used as a tag or length: must fit in a safe non-negative number. */
  varint(): number {
    let result = 0;
    let mul = 1;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) throw new ProtobufDecodeError('unexpected end of data in varint');
      const b = this.buf[this.pos++]!;
      result += (b & 0x7f) * mul;
      if ((b & 0x80) === 0) {
        if (!Number.isSafeInteger(result)) throw new ProtobufDecodeError('length or tag out of range');
        return result;
      }
      mul *= 128;
    }
    throw new ProtobufDecodeError('varint overflows 64 bits');
  }

  bytes(): Uint8Array {
    const len = this.varint();
    if (len > this.end - this.pos) throw new ProtobufDecodeError('length-delimited field runs past the end of its message');
    const out = this.buf.subarray(this.pos, this.pos + len);
    this.pos += len;
    return out;
  }

  skip(wire: number): void {
    switch (wire) {
      case WIRE_VARINT:
        this.varintBig();
        return;
      case WIRE_FIXED64:
        this.advance(8);
        return;
      case WIRE_BYTES:
        this.bytes();
        return;
      case WIRE_FIXED32:
        this.advance(4);
        return;
      default:
        throw new ProtobufDecodeError(`unsupported wire type ${wire}`);
    }
  }

  private advance(n: number): void {
    if (n > this.end - this.pos) throw new ProtobufDecodeError('unexpected end of data');
    this.pos += n;
  }
}

class Writer {
  private buf = new Uint8Array(256);
  private len = 0;

  private ensure(n: number): void {
    if (this.len + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.len + n) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.buf.subarray(0, this.len));
    this.buf = next;
  }

  /** A non-negative number below 2^53 as a varint. */
  varint(n: number): void {
    this.ensure(10);
    while (n >= 0x80) {
      this.buf[this.len++] = (n % 128) | 0x80;
      n = Math.floor(n / 128);
    }
    this.buf[this.len++] = n;
  }

  /** Any 64-bit value (negative: two's complement, 10 bytes). */
  varintBig(v: bigint): void {
    let u = BigInt.asUintN(64, v);
    this.ensure(10);
    while (u >= 0x80n) {
      this.buf[this.len++] = Number(u & 0x7fn) | 0x80;
      u >>= 7n;
    }
    this.buf[this.len++] = Number(u);
  }

  tag(no: number, wire: number): void {
    this.varint(no * 8 + wire);
  }

  bytes(no: number, data: Uint8Array): void {
    this.tag(no, WIRE_BYTES);
    this.varint(data.length);
    this.ensure(data.length);
    this.buf.set(data, this.len);
    this.len += data.length;
  }

  finish(): Buffer {
    return Buffer.from(this.buf.buffer, this.buf.byteOffset, this.len);
  }
}

// ---------------------------------------------------------------------------------------------------------
// Time

/** Seconds of 0001-01-01T00:00:00Z, Go's zero time.Time. */
const GO_ZERO_TIME_SECONDS = -62135596800n;

function pad(n: number, width: number): string {
  return String(n).padStart(width, '0');
}

/** Go's metav1.Time JSON: null for the zero time (an empty message, or 0001-01-01T00:00:00Z). */
function formatTime(seconds: bigint, nanos: number, micro: boolean): string | null {
  if (seconds === GO_ZERO_TIME_SECONDS && nanos === 0) return null;
  const d = new Date(Number(seconds) * 1000);
  if (Number.isNaN(d.getTime())) throw new ProtobufDecodeError(`time out of range: ${seconds}s`);
  const base =
    `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1, 2)}-${pad(d.getUTCDate(), 2)}` +
    `T${pad(d.getUTCHours(), 2)}:${pad(d.getUTCMinutes(), 2)}:${pad(d.getUTCSeconds(), 2)}`;
  return micro ? `${base}.${pad(Math.floor(nanos / 1000), 6)}Z` : `${base}Z`;
}

const RFC3339_RE = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

/** Parses an RFC 3339 time into Timestamp {seconds, nanos}. */
function parseTime(value: string): { seconds: bigint; nanos: number } {
  const m = RFC3339_RE.exec(value);
  if (!m) throw new Error(`protobuf: not an RFC 3339 time: ${JSON.stringify(value)}`);
  const [, y, mo, d, h, mi, s, frac, zone] = m;
  let ms = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s));
  if (Number(y) < 100) {
    const date = new Date(ms);
    date.setUTCFullYear(Number(y));
    ms = date.getTime();
  }
  if (zone && zone !== 'Z' && zone !== 'z') {
    const sign = zone.startsWith('-') ? -1 : 1;
    ms -= sign * (Number(zone.slice(1, 3)) * 60 + Number(zone.slice(4, 6))) * 60_000;
  }
  const nanos = frac ? Number(frac.slice(1, 10).padEnd(9, '0')) : 0;
  return { seconds: BigInt(ms / 1000), nanos };
}

// ---------------------------------------------------------------------------------------------------------
// Decoding

type Json = unknown;
type JsonObject = Record<string, Json>;

function zeroScalar(type: string): Json {
  switch (type) {
    case 'string':
      return '';
    case 'bool':
      return false;
    case 'int32':
    case 'int64':
      return 0;
    default:
      return '';
  }
}

function isZeroScalar(v: Json): boolean {
  return v === '' || v === 0 || v === false;
}

function decodeScalar(type: string, wire: number, r: Reader): Json {
  const expectWire = type === 'string' || type === 'bytes' ? WIRE_BYTES : WIRE_VARINT;
  if (wire !== expectWire) throw new ProtobufDecodeError(`wire type ${wire} for a field of type ${type}`);
  switch (type) {
    case 'string':
      return Buffer.from(r.bytes()).toString('utf8');
    case 'bytes':
      return Buffer.from(r.bytes()).toString('base64');
    case 'bool':
      return r.varintBig() !== 0n;
    case 'int32':
      return Number(BigInt.asIntN(32, r.varintBig()));
    case 'int64':
      return Number(BigInt.asIntN(64, r.varintBig()));
    default:
      throw new ProtobufDecodeError(`unknown scalar type ${type}`);
  }
}

function decodeCustom(codec: CustomCodec, data: Uint8Array): Json {
  const r = new Reader(data);
  switch (codec) {
    case 'time':
    case 'microTime': {
      if (data.length === 0) return null;
      let seconds = 0n;
      let nanos = 0;
      while (!r.done()) {
        const key = r.varint();
        const no = Math.floor(key / 8);
        const wire = key % 8;
        if (no === 1 && wire === WIRE_VARINT) seconds = BigInt.asIntN(64, r.varintBig());
        else if (no === 2 && wire === WIRE_VARINT) nanos = Number(BigInt.asIntN(32, r.varintBig()));
        else r.skip(wire);
      }
      return formatTime(seconds, nanos, codec === 'microTime');
    }
    case 'quantity': {
      let s = '';
      while (!r.done()) {
        const key = r.varint();
        if (key === (1 << 3) + WIRE_BYTES) s = Buffer.from(r.bytes()).toString('utf8');
        else r.skip(key % 8);
      }
      // A zero Quantity{} marshals to "0" in JSON.
      return s === '' ? '0' : s;
    }
    case 'intOrString': {
      let type = 0n;
      let intVal = 0;
      let strVal = '';
      while (!r.done()) {
        const key = r.varint();
        if (key === (1 << 3) + WIRE_VARINT) type = r.varintBig();
        else if (key === (2 << 3) + WIRE_VARINT) intVal = Number(BigInt.asIntN(32, r.varintBig()));
        else if (key === (3 << 3) + WIRE_BYTES) strVal = Buffer.from(r.bytes()).toString('utf8');
        else r.skip(key % 8);
      }
      return type === 1n ? strVal : intVal;
    }
    case 'fieldsV1': {
      let raw: Uint8Array | undefined;
      while (!r.done()) {
        const key = r.varint();
        if (key === (1 << 3) + WIRE_BYTES) raw = r.bytes();
        else r.skip(key % 8);
      }
      if (!raw || raw.length === 0) return {};
      try {
        return JSON.parse(Buffer.from(raw).toString('utf8')) as Json;
      } catch (err) {
        throw new ProtobufDecodeError(`fieldsV1 is not JSON: ${(err as Error).message}`);
      }
    }
  }
}

function decodeMessageValue(typeName: string, data: Uint8Array): Json {
  const d = descriptor(typeName);
  if (d.custom) return decodeCustom(d.custom, data);
  return decodeFields(d, data);
}

function decodeMapEntry(f: FieldDescriptor, data: Uint8Array): [string, Json] {
  const r = new Reader(data);
  let key = '';
  let value: Json;
  while (!r.done()) {
    const tag = r.varint();
    const no = Math.floor(tag / 8);
    const wire = tag % 8;
    if (no === 1) key = decodeScalar('string', wire, r) as string;
    else if (no === 2) {
      if (SCALARS.has(f.type)) value = decodeScalar(f.type, wire, r);
      else {
        if (wire !== WIRE_BYTES) throw new ProtobufDecodeError(`wire type ${wire} for map value ${f.json}`);
        value = decodeMessageValue(f.type, r.bytes());
      }
    } else r.skip(wire);
  }
  if (value === undefined) value = SCALARS.has(f.type) ? zeroScalar(f.type) : decodeMessageValue(f.type, new Uint8Array());
  return [key, value];
}

function decodeFields(d: MessageDescriptor, data: Uint8Array): JsonObject {
  const byNo = new Map<number, FieldDescriptor>();
  for (const f of d.fields) byNo.set(f.no, f);
  const seen = new Map<string, Json>();
  const r = new Reader(data);
  while (!r.done()) {
    const key = r.varint();
    const no = Math.floor(key / 8);
    const wire = key % 8;
    const f = byNo.get(no);
    if (!f) {
      r.skip(wire); // unknown fields are ignored, as gogo does
      continue;
    }
    if (f.map) {
      if (wire !== WIRE_BYTES) throw new ProtobufDecodeError(`wire type ${wire} for map field ${f.json}`);
      const [k, v] = decodeMapEntry(f, r.bytes());
      const m = (seen.get(f.json) as JsonObject | undefined) ?? {};
      m[k] = v;
      seen.set(f.json, m);
      continue;
    }
    let value: Json;
    if (SCALARS.has(f.type)) value = decodeScalar(f.type, wire, r);
    else {
      if (wire !== WIRE_BYTES) throw new ProtobufDecodeError(`wire type ${wire} for message field ${f.json}`);
      value = decodeMessageValue(f.type, r.bytes());
    }
    if (f.repeated) {
      const list = (seen.get(f.json) as Json[] | undefined) ?? [];
      list.push(value);
      seen.set(f.json, list);
    } else seen.set(f.json, value);
  }

  // Build the object in Go struct order, applying encoding/json's rules.
  const out: JsonObject = {};
  for (const f of d.fields) {
    const has = seen.has(f.json);
    const v = seen.get(f.json);
    if (f.map || f.repeated) {
      const empty = !has || (f.map ? Object.keys(v as JsonObject).length === 0 : (v as Json[]).length === 0);
      if (!empty) out[f.json] = v;
      else if (f.presence === 'always') out[f.json] = f.map ? {} : [];
      continue;
    }
    if (SCALARS.has(f.type)) {
      if (f.presence === 'pointer') {
        if (has) out[f.json] = v;
      } else if (f.presence === 'always') out[f.json] = has ? v : zeroScalar(f.type);
      else if (has && !isZeroScalar(v)) out[f.json] = v;
      continue;
    }
    // A message: pointers only when set; structs always (a zero time as null).
    if (has) out[f.json] = v;
    else if (f.presence !== 'pointer') out[f.json] = decodeMessageValue(f.type, new Uint8Array());
  }
  return out;
}

/** Decodes one message (not enveloped) into its JSON form. Throws a BadRequest StatusError when malformed. */
export function decodeMessage(typeName: string, data: Uint8Array): JsonObject {
  const d = descriptor(typeName);
  try {
    const v = d.custom ? decodeCustom(d.custom, data) : decodeFields(d, data);
    return v as JsonObject;
  } catch (err) {
    if (err instanceof ProtobufDecodeError) throw apiErrors.badRequest(`unable to decode protobuf ${typeName}: ${err.message}`);
    throw err;
  }
}

/** The 4 bytes that start every Kubernetes protobuf body. */
export const PROTOBUF_MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00]);

export interface ProtobufEnvelope {
  apiVersion: string;
  kind: string;
  raw: Uint8Array;
  contentEncoding: string;
  contentType: string;
}

/** Reads `k8s\0` + runtime.Unknown. */
export function decodeEnvelope(body: Uint8Array): ProtobufEnvelope {
  if (body.length < 4 || !PROTOBUF_MAGIC.equals(Buffer.from(body.subarray(0, 4)))) {
    throw apiErrors.badRequest('provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]');
  }
  const env: ProtobufEnvelope = { apiVersion: '', kind: '', raw: new Uint8Array(), contentEncoding: '', contentType: '' };
  try {
    const r = new Reader(body, 4);
    while (!r.done()) {
      const key = r.varint();
      const no = Math.floor(key / 8);
      const wire = key % 8;
      if (wire !== WIRE_BYTES || no < 1 || no > 4) {
        r.skip(wire);
        continue;
      }
      const data = r.bytes();
      if (no === 1) {
        const tr = new Reader(data);
        while (!tr.done()) {
          const k = tr.varint();
          if (k === (1 << 3) + WIRE_BYTES) env.apiVersion = Buffer.from(tr.bytes()).toString('utf8');
          else if (k === (2 << 3) + WIRE_BYTES) env.kind = Buffer.from(tr.bytes()).toString('utf8');
          else tr.skip(k % 8);
        }
      } else if (no === 2) env.raw = data;
      else if (no === 3) env.contentEncoding = Buffer.from(data).toString('utf8');
      else env.contentType = Buffer.from(data).toString('utf8');
    }
  } catch (err) {
    if (err instanceof ProtobufDecodeError) throw apiErrors.badRequest(`unable to decode protobuf envelope: ${err.message}`);
    throw err;
  }
  return env;
}

/**
 * Decodes a Kubernetes protobuf body (`k8s\0` + runtime.Unknown) into the object's JSON form, with apiVersion
 * and kind set. `expect` fills in an envelope without a type, and a body of another version is refused.
 */
export function decodeKubernetesProtobuf(
  body: Uint8Array,
  expect?: { apiVersion: string; kind: string },
): Record<string, unknown> {
  const env = decodeEnvelope(body);
  if (env.contentEncoding !== '') {
    throw apiErrors.badRequest(`unsupported protobuf contentEncoding ${JSON.stringify(env.contentEncoding)}`);
  }
  const apiVersion = env.apiVersion || expect?.apiVersion || '';
  const kind = env.kind || expect?.kind || '';
  if (kind === '') throw apiErrors.badRequest("Object 'Kind' is missing in protobuf body");
  if (apiVersion === '') throw apiErrors.badRequest("Object 'apiVersion' is missing in protobuf body");
  const known = PROTOBUF_KINDS[kind];
  if (!known || (known.apiVersions !== null && !known.apiVersions.includes(apiVersion))) {
    throw apiErrors.badRequest(
      `no kind "${kind}" is registered for version "${apiVersion}" in scheme "k8s.io/kubernetes/pkg/api/legacyscheme/scheme.go:30"`,
    );
  }
  if (expect && expect.apiVersion !== apiVersion && kind !== 'DeleteOptions') {
    throw apiErrors.badRequest(
      `the API version in the data (${apiVersion}) does not match the expected API version (${expect.apiVersion})`,
    );
  }
  if (expect && expect.kind !== kind) {
    throw apiErrors.badRequest(`the object provided is unrecognized (must be of type ${expect.kind}): ${kind}`);
  }
  return { apiVersion, kind, ...decodeMessage(known.message, env.raw) };
}

// ---------------------------------------------------------------------------------------------------------
// Encoding

function toBigInt(v: Json, what: string): bigint {
  if (typeof v === 'number' && Number.isFinite(v)) return BigInt(Math.trunc(v));
  if (typeof v === 'bigint') return v;
  if (typeof v === 'string' && /^-?\d+$/.test(v)) return BigInt(v);
  throw new Error(`protobuf: ${what} is not an integer: ${JSON.stringify(v)}`);
}

function scalarString(v: Json, what: string, zero: string): string {
  if (v === undefined || v === null) return zero;
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return String(v);
  throw new Error(`protobuf: ${what} is not a string: ${JSON.stringify(v)}`);
}

function writeScalar(w: Writer, no: number, type: string, v: Json, what: string): void {
  switch (type) {
    case 'string':
      w.bytes(no, Buffer.from(scalarString(v, what, ''), 'utf8'));
      return;
    case 'bytes':
      w.bytes(no, typeof v === 'string' ? Buffer.from(v, 'base64') : v instanceof Uint8Array ? v : new Uint8Array());
      return;
    case 'bool':
      w.tag(no, WIRE_VARINT);
      w.varint(v === true ? 1 : 0);
      return;
    case 'int32':
      w.tag(no, WIRE_VARINT);
      w.varintBig(BigInt.asIntN(32, v === undefined || v === null ? 0n : toBigInt(v, what)));
      return;
    case 'int64':
      w.tag(no, WIRE_VARINT);
      w.varintBig(v === undefined || v === null ? 0n : toBigInt(v, what));
      return;
    default:
      throw new Error(`protobuf: unknown scalar type ${type}`);
  }
}

function encodeCustom(codec: CustomCodec, v: Json, what: string): Buffer {
  const w = new Writer();
  switch (codec) {
    case 'time':
    case 'microTime': {
      if (v === null || v === undefined || v === '') return w.finish(); // zero time: an empty message
      if (typeof v !== 'string') throw new Error(`protobuf: ${what} is not a time string`);
      const t = parseTime(v);
      w.tag(1, WIRE_VARINT);
      w.varintBig(t.seconds);
      w.tag(2, WIRE_VARINT);
      w.varintBig(BigInt(t.nanos));
      return w.finish();
    }
    case 'quantity':
      w.bytes(1, Buffer.from(scalarString(v, what, '0'), 'utf8'));
      return w.finish();
    case 'fieldsV1':
      w.bytes(1, Buffer.from(JSON.stringify(v ?? {}), 'utf8'));
      return w.finish();
    case 'intOrString': {
      const str = typeof v === 'string';
      w.tag(1, WIRE_VARINT);
      w.varintBig(str ? 1n : 0n);
      w.tag(2, WIRE_VARINT);
      w.varintBig(BigInt(str ? 0 : typeof v === 'number' ? Math.trunc(v) : 0));
      w.bytes(3, Buffer.from(str ? v : '', 'utf8'));
      return w.finish();
    }
  }
}

function encodeMessageValue(typeName: string, v: Json, what: string): Buffer {
  const d = descriptor(typeName);
  if (d.custom) return encodeCustom(d.custom, v, what);
  if (v !== undefined && v !== null && (typeof v !== 'object' || Array.isArray(v))) {
    throw new Error(`protobuf: ${what} is not an object`);
  }
  return encodeFields(d, (v ?? {}) as JsonObject, what);
}

function compareKeys(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

function encodeFields(d: MessageDescriptor, obj: JsonObject, path: string): Buffer {
  const w = new Writer();
  const ordered = [...d.fields].sort((a, b) => a.no - b.no);
  for (const f of ordered) {
    const v = obj[f.json];
    const what = `${path}.${f.json}`;
    if (f.map) {
      if (v === undefined || v === null) continue;
      if (typeof v !== 'object' || Array.isArray(v)) throw new Error(`protobuf: ${what} is not a map`);
      const m = v as JsonObject;
      for (const k of Object.keys(m).sort(compareKeys)) {
        const entry = new Writer();
        entry.bytes(1, Buffer.from(k, 'utf8'));
        if (SCALARS.has(f.type)) writeScalar(entry, 2, f.type, m[k], `${what}[${k}]`);
        else entry.bytes(2, encodeMessageValue(f.type, m[k], `${what}[${k}]`));
        w.bytes(f.no, entry.finish());
      }
      continue;
    }
    if (f.repeated) {
      if (v === undefined || v === null) continue;
      if (!Array.isArray(v)) throw new Error(`protobuf: ${what} is not a list`);
      v.forEach((item: Json, i) => {
        if (SCALARS.has(f.type)) writeScalar(w, f.no, f.type, item, `${what}[${i}]`);
        else w.bytes(f.no, encodeMessageValue(f.type, item, `${what}[${i}]`));
      });
      continue;
    }
    if (f.presence === 'pointer' && (v === undefined || v === null)) continue;
    if (f.writeOnlyIfSet && (v === undefined || v === null || isZeroScalar(v))) continue;
    if (SCALARS.has(f.type)) writeScalar(w, f.no, f.type, v, what);
    else w.bytes(f.no, encodeMessageValue(f.type, v, what));
  }
  return w.finish();
}

/** Encodes one JSON value as the (not enveloped) message `typeName`. */
export function encodeMessage(typeName: string, obj: unknown): Buffer {
  return encodeMessageValue(typeName, obj, typeName);
}

function envelope(apiVersion: string, kind: string, raw: Uint8Array): Buffer {
  const typeMeta = new Writer();
  typeMeta.bytes(1, Buffer.from(apiVersion, 'utf8'));
  typeMeta.bytes(2, Buffer.from(kind, 'utf8'));
  const w = new Writer();
  w.bytes(1, typeMeta.finish());
  w.bytes(2, raw);
  w.bytes(3, new Uint8Array()); // contentEncoding
  w.bytes(4, new Uint8Array()); // contentType
  return Buffer.concat([PROTOBUF_MAGIC, w.finish()]);
}

/** Whether `kind` (at `apiVersion`) can be written as protobuf. */
export function canEncodeProtobuf(apiVersion: string, kind: string): boolean {
  const known = PROTOBUF_KINDS[kind];
  return known !== undefined && (known.apiVersions === null || known.apiVersions.includes(apiVersion));
}

/**
 * Encodes a JSON object (with apiVersion and kind) as a Kubernetes protobuf body: `k8s\0` + runtime.Unknown.
 * A kind without a descriptor is a 406 NotAcceptable StatusError.
 */
export function encodeKubernetesProtobuf(obj: object): Buffer {
  const o = obj as JsonObject;
  const apiVersion = typeof o['apiVersion'] === 'string' ? o['apiVersion'] : '';
  const kind = typeof o['kind'] === 'string' ? o['kind'] : '';
  const known = PROTOBUF_KINDS[kind];
  if (!known || !canEncodeProtobuf(apiVersion, kind)) {
    throw apiErrors.notAcceptable(
      `object ${apiVersion}, Kind=${kind} does not implement the protobuf marshalling interface and cannot be encoded to a protobuf message`,
    );
  }
  return envelope(apiVersion, kind, encodeMessage(known.message, o));
}

/**
 * One frame of a protobuf watch stream (`application/vnd.kubernetes.protobuf;stream=watch`): a 4-byte
 * big-endian length, then a bare WatchEvent {type=1, object=2 RawExtension{raw=1}} whose raw is the
 * enveloped object.
 */
export function encodeWatchEventProtobuf(type: string, obj: object): Buffer {
  const raw = new Writer();
  raw.bytes(1, encodeKubernetesProtobuf(obj));
  const ev = new Writer();
  ev.bytes(1, Buffer.from(type, 'utf8'));
  ev.bytes(2, raw.finish());
  const body = ev.finish();
  const len = Buffer.alloc(4);
  len.writeUInt32BE(body.length, 0);
  return Buffer.concat([len, body]);
}
