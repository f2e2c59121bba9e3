/**
 * Schemas of the shared meta types (k8s.io/apimachinery), as Kubernetes 1.23 publishes them in
 * /openapi/v2: ObjectMeta, ListMeta, Status, DeleteOptions, the discovery types, Quantity, ...
 *
 * List and patch extensions are exactly the 1.23 ones: ObjectMeta.ownerReferences merges on 'uid',
 * ObjectMeta.finalizers carries only `x-kubernetes-patch-strategy: merge` (1.23 publishes no list-type
 * for it; a merge strategy without a key on a list of scalars is a set, for strategic merge patch and
 * for server-side apply alike), OwnerReference and LabelSelector are atomic.
 */
import { ref, type Definitions, type Schema } from '../schema.js';

const META = 'io.k8s.apimachinery.pkg.apis.meta.v1.';

/** Definition names of the shared types. */
export const META_NAMES = {
  ObjectMeta: `${META}ObjectMeta`,
  ListMeta: `${META}ListMeta`,
  Time: `${META}Time`,
  MicroTime: `${META}MicroTime`,
  OwnerReference: `${META}OwnerReference`,
  ManagedFieldsEntry: `${META}ManagedFieldsEntry`,
  FieldsV1: `${META}FieldsV1`,
  Status: `${META}Status`,
  StatusDetails: `${META}StatusDetails`,
  StatusCause: `${META}StatusCause`,
  DeleteOptions: `${META}DeleteOptions`,
  Preconditions: `${META}Preconditions`,
  WatchEvent: `${META}WatchEvent`,
  APIResourceList: `${META}APIResourceList`,
  APIResource: `${META}APIResource`,
  APIGroup: `${META}APIGroup`,
  APIGroupList: `${META}APIGroupList`,
  APIVersions: `${META}APIVersions`,
  GroupVersionForDiscovery: `${META}GroupVersionForDiscovery`,
  ServerAddressByClientCIDR: `${META}ServerAddressByClientCIDR`,
  Patch: `${META}Patch`,
  LabelSelector: `${META}LabelSelector`,
  LabelSelectorRequirement: `${META}LabelSelectorRequirement`,
  Quantity: 'io.k8s.apimachinery.pkg.api.resource.Quantity',
  RawExtension: 'io.k8s.apimachinery.pkg.runtime.RawExtension',
  Info: 'io.k8s.apimachinery.pkg.version.Info',
} as const;

const API_CONVENTIONS = 'https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md';

/** The descriptions every top-level kind repeats for apiVersion, kind and metadata. */
export const API_VERSION_DESCRIPTION =
  'APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: ' +
  `${API_CONVENTIONS}#resources`;
export const KIND_DESCRIPTION =
  'Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: ' +
  `${API_CONVENTIONS}#types-kinds`;

/** `metadata` of a top-level object: a reference to ObjectMeta with Kubernetes' description. */
export const OBJECT_META_REF: Schema = ref(META_NAMES.ObjectMeta, `Standard object's metadata. More info: ${API_CONVENTIONS}#metadata`);
/** `metadata` of a list: a reference to ListMeta with Kubernetes' description. */
export const LIST_META_REF: Schema = ref(META_NAMES.ListMeta, `Standard list metadata. More info: ${API_CONVENTIONS}#types-kinds`);

/** The apiVersion property, as every kind publishes it. */
export const API_VERSION_PROPERTY: Schema = { description: API_VERSION_DESCRIPTION, type: 'string' };
/** The kind property, as every kind publishes it. */
export const KIND_PROPERTY: Schema = { description: KIND_DESCRIPTION, type: 'string' };

const str = (description: string): Schema => ({ description, type: 'string' });
const strings = (description: string, extra: Partial<Schema> = {}): Schema => ({ description, items: { type: 'string' }, type: 'array', ...extra });
const gvk = (kind: string) => [{ group: '', kind, version: 'v1' }];

const SERVER_ADDRESS_BY_CLIENT_CIDRS_DESCRIPTION =
  'a map of client CIDR to server address that is serving this group. This is to help clients reach servers in the most network-efficient way possible. Clients can use the appropriate server address as per the CIDR that they match. In case of multiple matches, clients should use the longest matching CIDR. The server returns only those CIDRs that it thinks that the client can match. For example: the master will return an internal IP CIDR only, if the client reaches the server using an internal IP. Server looks at X-Forwarded-For header or X-Real-Ip header or request.RemoteAddr (in that order) to get the client IP.';

const QUANTITY_DESCRIPTION = `Quantity is a fixed-point representation of a number. It provides convenient marshaling/unmarshaling in JSON and YAML, in addition to String() and AsInt64() accessors.

The serialization format is:

<quantity>        ::= <signedNumber><suffix>
  (Note that <suffix> may be empty, from the "" case in <decimalSI>.)
<digit>           ::= 0 | 1 | ... | 9 <digits>          ::= <digit> | <digit><digits> <number>          ::= <digits> | <digits>.<digits> | <digits>. | .<digits> <sign>            ::= "+" | "-" <signedNumber>    ::= <number> | <sign><number> <suffix>          ::= <binarySI> | <decimalExponent> | <decimalSI> <binarySI>        ::= Ki | Mi | Gi | Ti | Pi | Ei
  (International System of units; See: http://physics.nist.gov/cuu/Units/binary.html)
<decimalSI>       ::= m | "" | k | M | G | T | P | E
  (Note that 1024 = 1Ki but 1000 = 1k; I didn't choose the capitalization.)
<decimalExponent> ::= "e" <signedNumber> | "E" <signedNumber>

No matter which of the three exponent forms is used, no quantity may represent a number greater than 2^63-1 in magnitude, nor may it have more than 3 decimal places. Numbers larger or more precise will be capped or rounded up. (E.g.: 0.1m will rounded up to 1m.) This may be extended in the future if we require larger or smaller quantities.

When a Quantity is parsed from a string, it will remember the type of suffix it had, and will use the same type again when it is serialized.

Before serializing, Quantity will be put in "canonical form". This means that Exponent/suffix will be adjusted up or down (with a corresponding increase or decrease in Mantissa) such that:
  a. No precision is lost
  b. No fractional digits will be emitted
  c. The exponent (or suffix) is as large as possible.
The sign will be omitted unless the number is negative.

Examples:
  1.5 will be serialized as "1500m"
  1.5Gi will be serialized as "1536Mi"

Note that the quantity will NEVER be internally represented by a floating point number. That is the whole point of this exercise.

Non-canonical values will still parse as long as they are well formed, but will be re-emitted in their canonical form. (So always use canonical form, or don't diff.)

This format is intended to make it difficult to use these numbers without writing some sort of special handling code in the hopes that that will cause implementors to also use a fixed point implementation.`;

const RAW_EXTENSION_DESCRIPTION = `RawExtension is used to hold extensions in external versions.

To use this, make a field which has RawExtension as its type in your external, versioned struct, and Object in your internal struct. You also need to register your various plugin types.

// Internal package: type MyAPIObject struct {
	runtime.TypeMeta \`json:",inline"\`
	MyPlugin runtime.Object \`json:"myPlugin"\`
} type PluginA struct {
	AOption string \`json:"aOption"\`
}

// External package: type MyAPIObject struct {
	runtime.TypeMeta \`json:",inline"\`
	MyPlugin runtime.RawExtension \`json:"myPlugin"\`
} type PluginA struct {
	AOption string \`json:"aOption"\`
}

// On the wire, the JSON will look something like this: {
	"kind":"MyAPIObject",
	"apiVersion":"v1",
	"myPlugin": {
		"kind":"PluginA",
		"aOption":"foo",
	},
}

So what happens? Decode first uses json or yaml to unmarshal the serialized data into your external MyAPIObject. That causes the raw JSON to be stored, but not unpacked. The next step is to copy (using pkg/conversion) into the internal struct. The runtime package's DefaultScheme has conversion functions installed which will unpack the JSON stored in RawExtension, turning it into the correct object type, and storing it in the Object. (TODO: In the case where the object is of an unknown type, a runtime.Unknown object will be created and stored.)`;

const FIELDS_V1_DESCRIPTION = `FieldsV1 stores a set of fields in a data structure like a Trie, in JSON format.

Each key is either a '.' representing the field itself, and will always map to an empty set, or a string representing a sub-field or item. The string will follow one of these four formats: 'f:<name>', where <name> is the name of a field in a struct, or key in a map 'v:<value>', where <value> is the exact json formatted value of a list item 'i:<index>', where <index> is position of a item in a list 'k:<keys>', where <keys> is a map of  a list item's key fields to their unique values If a key maps to an empty Fields value, the field that key represents is part of the set.

The exact format is defined in sigs.k8s.io/structured-merge-diff`;

export const META_DEFINITIONS: Definitions = {
  [META_NAMES.ObjectMeta]: {
    description: 'ObjectMeta is metadata that all persisted resources must have, which includes all objects users must create.',
    properties: {
      annotations: {
        additionalProperties: { type: 'string' },
        description:
          'Annotations is an unstructured key value map stored with a resource that may be set by external tools to store and retrieve arbitrary metadata. They are not queryable and should be preserved when modifying objects. More info: http://kubernetes.io/docs/user-guide/annotations',
        type: 'object',
      },
      clusterName: str(
        'The name of the cluster which the object belongs to. This is used to distinguish resources with same name and namespace in different clusters. This field is not set anywhere right now and apiserver is going to ignore it if set in create or update request.',
      ),
      creationTimestamp: ref(
        META_NAMES.Time,
        `CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: ${API_CONVENTIONS}#metadata`,
      ),
      deletionGracePeriodSeconds: {
        description:
          'Number of seconds allowed for this object to gracefully terminate before it will be removed from the system. Only set when deletionTimestamp is also set. May only be shortened. Read-only.',
        format: 'int64',
        type: 'integer',
      },
      deletionTimestamp: ref(
        META_NAMES.Time,
        `DeletionTimestamp is RFC 3339 date and time at which this resource will be deleted. This field is set by the server when a graceful deletion is requested by the user, and is not directly settable by a client. The resource is expected to be deleted (no longer visible from resource lists, and not reachable by name) after the time in this field, once the finalizers list is empty. As long as the finalizers list contains items, deletion is blocked. Once the deletionTimestamp is set, this value may not be unset or be set further into the future, although it may be shortened or the resource may be deleted prior to this time. For example, a user may request that a pod is deleted in 30 seconds. The Kubelet will react by sending a graceful termination signal to the containers in the pod. After that 30 seconds, the Kubelet will send a hard termination signal (SIGKILL) to the container and after cleanup, remove the pod from the API. In the presence of network partitions, this object may still exist after this timestamp, until an administrator or automated process can determine the resource is fully terminated. If not set, graceful deletion of the object has not been requested.\n\nPopulated by the system when a graceful deletion is requested. Read-only. More info: ${API_CONVENTIONS}#metadata`,
      ),
      finalizers: strings(
        'Must be empty before the object is deleted from the registry. Each entry is an identifier for the responsible component that will remove the entry from the list. If the deletionTimestamp of the object is non-nil, entries in this list can only be removed. Finalizers may be processed and removed in any order.  Order is NOT enforced because it introduces significant risk of stuck finalizers. finalizers is a shared field, any actor with permission can reorder it. If the finalizer list is processed in order, then this can lead to a situation in which the component responsible for the first finalizer in the list is waiting for a signal (field value, external system, or other) produced by a component responsible for a finalizer later in the list, resulting in a deadlock. Without enforced ordering finalizers are free to order amongst themselves and are not vulnerable to ordering changes in the list.',
        { 'x-kubernetes-patch-strategy': 'merge' },
      ),
      generateName: str(
        `GenerateName is an optional prefix, used by the server, to generate a unique name ONLY IF the Name field has not been provided. If this field is used, the name returned to the client will be different than the name passed. This value will also be combined with a unique suffix. The provided value has the same validation rules as the Name field, and may be truncated by the length of the suffix required to make the value unique on the server.\n\nIf this field is specified and the generated name exists, the server will NOT return a 409 - instead, it will either return 201 Created or 500 with Reason ServerTimeout indicating a unique name could not be found in the time allotted, and the client should retry (optionally after the time indicated in the Retry-After header).\n\nApplied only if Name is not specified. More info: ${API_CONVENTIONS}#idempotency`,
      ),
      generation: {
        description: 'A sequence number representing a specific generation of the desired state. Populated by the system. Read-only.',
        format: 'int64',
        type: 'integer',
      },
      labels: {
        additionalProperties: { type: 'string' },
        description:
          'Map of string keys and values that can be used to organize and categorize (scope and select) objects. May match selectors of replication controllers and services. More info: http://kubernetes.io/docs/user-guide/labels',
        type: 'object',
      },
      managedFields: {
        description:
          'ManagedFields maps workflow-id and version to the set of fields that are managed by that workflow. This is mostly for internal housekeeping, and users typically shouldn\'t need to set or understand this field. A workflow can be the user\'s name, a controller\'s name, or the name of a specific apply path like "ci-cd". The set of fields is always in the version that the workflow used when modifying the object.',
        items: ref(META_NAMES.ManagedFieldsEntry),
        type: 'array',
      },
      name: str(
        'Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: http://kubernetes.io/docs/user-guide/identifiers#names',
      ),
      namespace: str(
        'Namespace defines the space within which each name must be unique. An empty namespace is equivalent to the "default" namespace, but "default" is the canonical representation. Not all objects are required to be scoped to a namespace - the value of this field for those objects will be empty.\n\nMust be a DNS_LABEL. Cannot be updated. More info: http://kubernetes.io/docs/user-guide/namespaces',
      ),
      ownerReferences: {
        description:
          'List of objects depended by this object. If ALL objects in the list have been deleted, this object will be garbage collected. If this object is managed by a controller, then an entry in this list will point to this controller, with the controller field set to true. There cannot be more than one managing controller.',
        items: ref(META_NAMES.OwnerReference),
        type: 'array',
        'x-kubernetes-patch-merge-key': 'uid',
        'x-kubernetes-patch-strategy': 'merge',
      },
      resourceVersion: str(
        `An opaque value that represents the internal version of this object that can be used by clients to determine when objects have changed. May be used for optimistic concurrency, change detection, and the watch operation on a resource or set of resources. Clients must treat these values as opaque and passed unmodified back to the server. They may only be valid for a particular resource or set of resources.\n\nPopulated by the system. Read-only. Value must be treated as opaque by clients and . More info: ${API_CONVENTIONS}#concurrency-control-and-consistency`,
      ),
      selfLink: str(
        'SelfLink is a URL representing this object. Populated by the system. Read-only.\n\nDEPRECATED Kubernetes will stop propagating this field in 1.20 release and the field is planned to be removed in 1.21 release.',
      ),
      uid: str(
        'UID is the unique in time and space value for this object. It is typically generated by the server on successful creation of a resource and is not allowed to change on PUT operations.\n\nPopulated by the system. Read-only. More info: http://kubernetes.io/docs/user-guide/identifiers#uids',
      ),
    },
    type: 'object',
  },

  [META_NAMES.ListMeta]: {
    description:
      'ListMeta describes metadata that synthetic resources must have, including lists and various status objects. A resource may have only one of {ObjectMeta, ListMeta}.',
    properties: {
      continue: str(
        'continue may be set if the user set a limit on the number of items returned, and indicates that the server has more data available. The value is opaque and may be used to issue another request to the endpoint that served this list to retrieve the next set of available objects. Continuing a consistent list may not be possible if the server configuration has changed or more than a few minutes have passed. The resourceVersion field returned when using this continue value will be identical to the value in the first response, unless you have received this token from an error message.',
      ),
      remainingItemCount: {
        description:
          'remainingItemCount is the number of subsequent items in the list which are not included in this list response. If the list request contained label or field selectors, then the number of remaining items is unknown and the field will be left unset and omitted during serialization. If the list is complete (either because it is not chunking or because this is the last chunk), then there are no more remaining items and this field will be left unset and omitted during serialization. Servers older than v1.15 do not set this field. The intended use of the remainingItemCount is *estimating* the size of a collection. Clients should not rely on the remainingItemCount to be set or to be exact.',
        format: 'int64',
        type: 'integer',
      },
      resourceVersion: str(
        `String that identifies the server's internal version of this object that can be used by clients to determine when objects have changed. Value must be treated as opaque by clients and passed unmodified back to the server. Populated by the system. Read-only. More info: ${API_CONVENTIONS}#concurrency-control-and-consistency`,
      ),
      selfLink: str(
        'selfLink is a URL representing this object. Populated by the system. Read-only.\n\nDEPRECATED Kubernetes will stop propagating this field in 1.20 release and the field is planned to be removed in 1.21 release.',
      ),
    },
    type: 'object',
  },

  [META_NAMES.Time]: {
    description:
      'Time is a wrapper around time.Time which supports correct marshaling to YAML and JSON.  Wrappers are provided for many of the factory methods that the time package offers.',
    format: 'date-time',
    type: 'string',
  },

  [META_NAMES.MicroTime]: {
    description: 'MicroTime is version of Time with microsecond level precision.',
    format: 'date-time',
    type: 'string',
  },

  [META_NAMES.OwnerReference]: {
    description:
      'OwnerReference contains enough information to let you identify an owning object. An owning object must be in the same namespace as the dependent, or be cluster-scoped, so there is no namespace field.',
    properties: {
      apiVersion: str('API version of the referent.'),
      blockOwnerDeletion: {
        description:
          'If true, AND if the owner has the "foregroundDeletion" finalizer, then the owner cannot be deleted from the key-value store until this reference is removed. Defaults to false. To set this field, a user needs "delete" permission of the owner, otherwise 422 (Unprocessable Entity) will be returned.',
        type: 'boolean',
      },
      controller: { description: 'If true, this reference points to the managing controller.', type: 'boolean' },
      kind: str(`Kind of the referent. More info: ${API_CONVENTIONS}#types-kinds`),
      name: str('Name of the referent. More info: http://kubernetes.io/docs/user-guide/identifiers#names'),
      uid: str('UID of the referent. More info: http://kubernetes.io/docs/user-guide/identifiers#uids'),
    },
    required: ['apiVersion', 'kind', 'name', 'uid'],
    type: 'object',
    'x-kubernetes-map-type': 'atomic',
  },

  [META_NAMES.ManagedFieldsEntry]: {
    description: 'ManagedFieldsEntry is a workflow-id, a FieldSet and the group version of the resource that the fieldset applies to.',
    properties: {
      apiVersion: str(
        'APIVersion defines the version of this resource that this field set applies to. The format is "group/version" just like the top-level APIVersion field. It is necessary to track the version of a field set because it cannot be automatically converted.',
      ),
      fieldsType: str('FieldsType is the discriminator for the different fields format and version. There is currently only one possible value: "FieldsV1"'),
      fieldsV1: ref(META_NAMES.FieldsV1, 'FieldsV1 holds the first JSON version format as described in the "FieldsV1" type.'),
      manager: str('Manager is an identifier of the workflow managing these fields.'),
      operation: str(
        "Operation is the type of operation which lead to this ManagedFieldsEntry being created. The only valid values for this field are 'Apply' and 'Update'.",
      ),
      subresource: str(
        'Subresource is the name of the subresource used to update that object, or empty string if the object was updated through the main resource. The value of this field is used to distinguish between managers, even if they share the same name. For example, a status update will be distinct from a regular update using the same manager name. Note that the APIVersion field is not related to the Subresource field and it always corresponds to the version of the main resource.',
      ),
      time: ref(META_NAMES.Time, "Time is timestamp of when these fields were set. It should always be empty if Operation is 'Apply'"),
    },
    type: 'object',
  },

  [META_NAMES.FieldsV1]: {
    description: FIELDS_V1_DESCRIPTION,
    type: 'object',
  },

  [META_NAMES.Status]: {
    description: "Status is a return value for calls that don't return other objects.",
    properties: {
      apiVersion: API_VERSION_PROPERTY,
      code: { description: 'Suggested HTTP return code for this status, 0 if not set.', format: 'int32', type: 'integer' },
      details: ref(
        META_NAMES.StatusDetails,
        'Extended data associated with the reason.  Each reason may define its own extended details. This field is optional and the data returned is not guaranteed to conform to any schema except that defined by the reason type.',
      ),
      kind: KIND_PROPERTY,
      message: str('A human-readable description of the status of this operation.'),
      metadata: LIST_META_REF,
      reason: str(
        'A machine-readable description of why this operation is in the "Failure" status. If this value is empty there is no information available. A Reason clarifies an HTTP status code but does not override it.',
      ),
      status: str(`Status of the operation. One of: "Success" or "Failure". More info: ${API_CONVENTIONS}#spec-and-status`),
    },
    type: 'object',
    'x-kubernetes-group-version-kind': gvk('Status'),
  },

  [META_NAMES.StatusDetails]: {
    description:
      'StatusDetails is a set of additional properties that MAY be set by the server to provide additional information about a response. The Reason field of a Status object defines what attributes will be set. Clients must ignore fields that do not match the defined type of each attribute, and should assume that any attribute may be empty, invalid, or under defined.',
    properties: {
      causes: {
        description: 'The Causes array includes more details associated with the StatusReason failure. Not all StatusReasons may provide detailed causes.',
        items: ref(META_NAMES.StatusCause),
        type: 'array',
      },
      group: str('The group attribute of the resource associated with the status StatusReason.'),
      kind: str(
        `The kind attribute of the resource associated with the status StatusReason. On some operations may differ from the requested resource Kind. More info: ${API_CONVENTIONS}#types-kinds`,
      ),
      name: str('The name attribute of the resource associated with the status StatusReason (when there is a single name which can be described).'),
      retryAfterSeconds: {
        description:
          'If specified, the time in seconds before the operation should be retried. Some errors may indicate the client must take an alternate action - for those errors this field may indicate how long to wait before taking the alternate action.',
        format: 'int32',
        type: 'integer',
      },
      uid: str('UID of the resource. (when there is a single resource which can be described). More info: http://kubernetes.io/docs/user-guide/identifiers#uids'),
    },
    type: 'object',
  },

  [META_NAMES.StatusCause]: {
    description: 'StatusCause provides more information about an api.Status failure, including cases when multiple errors are encountered.',
    properties: {
      field: str(
        'The field of the resource that has caused this error, as named by its JSON serialization. May include dot and postfix notation for nested attributes. Arrays are zero-indexed.  Fields may appear more than once in an array of causes due to fields having multiple errors. Optional.\n\nExamples:\n  "name" - the field "name" on the current resource\n  "items[0].name" - the field "name" on the first array entry in "items"',
      ),
      message: str('A human-readable description of the cause of the error.  This field may be presented as-is to a reader.'),
      reason: str('A machine-readable description of the cause of the error. If this value is empty there is no information available.'),
    },
    type: 'object',
  },

  [META_NAMES.DeleteOptions]: {
    description: 'DeleteOptions may be provided when deleting an API object.',
    properties: {
      apiVersion: API_VERSION_PROPERTY,
      dryRun: strings(
        'When present, indicates that modifications should not be persisted. An invalid or unrecognized dryRun directive will result in an error response and no further processing of the request. Valid values are: - All: all dry run stages will be processed',
      ),
      gracePeriodSeconds: {
        description:
          'The duration in seconds before the object should be deleted. Value must be non-negative integer. The value zero indicates delete immediately. If this value is nil, the default grace period for the specified type will be used. Defaults to a per object value if not specified. zero means delete immediately.',
        format: 'int64',
        type: 'integer',
      },
      kind: KIND_PROPERTY,
      orphanDependents: {
        description:
          'Deprecated: please use the PropagationPolicy, this field will be deprecated in 1.7. Should the dependent objects be orphaned. If true/false, the "orphan" finalizer will be added to/removed from the object\'s finalizers list. Either this field or PropagationPolicy may be set, but not both.',
        type: 'boolean',
      },
      preconditions: ref(META_NAMES.Preconditions, 'Must be fulfilled before a deletion is carried out. If not possible, a 409 Conflict status will be returned.'),
      propagationPolicy: str(
        "Whether and how garbage collection will be performed. Either this field or OrphanDependents may be set, but not both. The default policy is decided by the existing finalizer set in the metadata.finalizers and the resource-specific default policy. Acceptable values are: 'Orphan' - orphan the dependents; 'Background' - allow the garbage collector to delete the dependents in the background; 'Foreground' - a cascading policy that deletes all dependents in the foreground.",
      ),
    },
    type: 'object',
    'x-kubernetes-group-version-kind': gvk('DeleteOptions'),
  },

  [META_NAMES.Preconditions]: {
    description: 'Preconditions must be fulfilled before an operation (update, delete, etc.) is carried out.',
    properties: {
      resourceVersion: str('Specifies the target ResourceVersion'),
      uid: str('Specifies the target UID.'),
    },
    type: 'object',
  },

  [META_NAMES.WatchEvent]: {
    description: 'Event represents a single event to a watched resource.',
    properties: {
      object: ref(
        META_NAMES.RawExtension,
        'Object is:\n * If Type is Added or Modified: the new state of the object.\n * If Type is Deleted: the state of the object immediately before deletion.\n * If Type is Error: *Status is recommended; other types may make sense\n   depending on context.',
      ),
      type: { type: 'string' },
    },
    required: ['type', 'object'],
    type: 'object',
    'x-kubernetes-group-version-kind': gvk('WatchEvent'),
  },

  [META_NAMES.APIResourceList]: {
    description:
      'APIResourceList is a list of APIResource, it is used to expose the name of the resources supported in a specific group and version, and if the resource is namespaced.',
    properties: {
      apiVersion: API_VERSION_PROPERTY,
      groupVersion: str('groupVersion is the group and version this APIResourceList is for.'),
      kind: KIND_PROPERTY,
      resources: {
        description: 'resources contains the name of the resources and if they are namespaced.',
        items: ref(META_NAMES.APIResource),
        type: 'array',
      },
    },
    required: ['groupVersion', 'resources'],
    type: 'object',
    'x-kubernetes-group-version-kind': gvk('APIResourceList'),
  },

  [META_NAMES.APIResource]: {
    description: 'APIResource specifies the name of a resource and whether it is namespaced.',
    properties: {
      categories: strings("categories is a list of the grouped resources this resource belongs to (e.g. 'all')"),
      group: str(
        'group is the preferred group of the resource.  Empty implies the group of the containing resource list. For subresources, this may have a different value, for example: Scale".',
      ),
      kind: str("kind is the kind for the resource (e.g. 'Foo' is the kind for a resource 'foo')"),
      name: str('name is the plural name of the resource.'),
      namespaced: { description: 'namespaced indicates if a resource is namespaced or not.', type: 'boolean' },
      shortNames: strings('shortNames is a list of suggested short names of the resource.'),
      singularName: str(
        'singularName is the singular name of the resource.  This allows clients to handle plural and singular opaquely. The singularName is more correct for reporting status on a single item and both singular and plural are allowed from the kubectl CLI interface.',
      ),
      storageVersionHash: str(
        'The hash value of the storage version, the version this resource is converted to when written to the data store. Value must be treated as opaque by clients. Only equality comparison on the value is valid. This is an alpha feature and may change or be removed in the future. The field is populated by the apiserver only if the StorageVersionHash feature gate is enabled. This field will remain optional even if it graduates.',
      ),
      verbs: strings('verbs is a list of supported kube verbs (this includes get, list, watch, create, update, patch, delete, deletecollection, and proxy)'),
      version: str(
        'version is the preferred version of the resource.  Empty implies the version of the containing resource list For subresources, this may have a different value, for example: v1 (while inside a v1beta1 version of the core resource\'s group)".',
      ),
    },
    required: ['name', 'singularName', 'namespaced', 'kind', 'verbs'],
    type: 'object',
  },

  [META_NAMES.APIGroup]: {
    description: 'APIGroup contains the name, the supported versions, and the preferred version of a group.',
    properties: {
      apiVersion: API_VERSION_PROPERTY,
      kind: KIND_PROPERTY,
      name: str('name is the name of the group.'),
      preferredVersion: ref(
        META_NAMES.GroupVersionForDiscovery,
        'preferredVersion is the version preferred by the API server, which probably is the storage version.',
      ),
      serverAddressByClientCIDRs: {
        description: SERVER_ADDRESS_BY_CLIENT_CIDRS_DESCRIPTION,
        items: ref(META_NAMES.ServerAddressByClientCIDR),
        type: 'array',
      },
      versions: {
        description: 'versions are the versions supported in this group.',
        items: ref(META_NAMES.GroupVersionForDiscovery),
        type: 'array',
      },
    },
    required: ['name', 'versions'],
    type: 'object',
    'x-kubernetes-group-version-kind': gvk('APIGroup'),
  },

  [META_NAMES.APIGroupList]: {
    description: 'APIGroupList is a list of APIGroup, to allow clients to discover the API at /apis.',
    properties: {
      apiVersion: API_VERSION_PROPERTY,
      groups: { description: 'groups is a list of APIGroup.', items: ref(META_NAMES.APIGroup), type: 'array' },
      kind: KIND_PROPERTY,
    },
    required: ['groups'],
    type: 'object',
    'x-kubernetes-group-version-kind': gvk('APIGroupList'),
  },

  [META_NAMES.APIVersions]: {
    description:
      'APIVersions lists the versions that are available, to allow clients to discover the API at /api, which is the root path of the legacy v1 API.',
    properties: {
      apiVersion: API_VERSION_PROPERTY,
      kind: KIND_PROPERTY,
      serverAddressByClientCIDRs: {
        description: SERVER_ADDRESS_BY_CLIENT_CIDRS_DESCRIPTION,
        items: ref(META_NAMES.ServerAddressByClientCIDR),
        type: 'array',
      },
      versions: strings('versions are the api versions that are available.'),
    },
    required: ['versions', 'serverAddressByClientCIDRs'],
    type: 'object',
    'x-kubernetes-group-version-kind': gvk('APIVersions'),
  },

  [META_NAMES.GroupVersionForDiscovery]: {
    description: 'GroupVersion contains the "group/version" and "version" string of a version. It is made a struct to keep extensibility.',
    properties: {
      groupVersion: str('groupVersion specifies the API group and version in the form "group/version"'),
      version: str('version specifies the version in the form of "version". This is to save the clients the trouble of splitting the GroupVersion.'),
    },
    required: ['groupVersion', 'version'],
    type: 'object',
  },

  [META_NAMES.ServerAddressByClientCIDR]: {
    description:
      'ServerAddressByClientCIDR helps the client to determine the server address that they should use, depending on the clientCIDR that they match.',
    properties: {
      clientCIDR: str('The CIDR with which clients can match their IP to figure out the server address that they should use.'),
      serverAddress: str(
        'Address of this server, suitable for a client that matches the above CIDR. This can be a hostname, hostname:port, IP or IP:port.',
      ),
    },
    required: ['clientCIDR', 'serverAddress'],
    type: 'object',
  },

  [META_NAMES.Patch]: {
    description: 'Patch is provided to give a concrete name and type to the Kubernetes PATCH request body.',
    type: 'object',
  },

  [META_NAMES.LabelSelector]: {
    description:
      'A label selector is a label query over a set of resources. The result of matchLabels and matchExpressions are ANDed. An empty label selector matches all objects. A null label selector matches no objects.',
    properties: {
      matchExpressions: {
        description: 'matchExpressions is a list of label selector requirements. The requirements are ANDed.',
        items: ref(META_NAMES.LabelSelectorRequirement),
        type: 'array',
      },
      matchLabels: {
        additionalProperties: { type: 'string' },
        description:
          'matchLabels is a map of {key,value} pairs. A single {key,value} in the matchLabels map is equivalent to an element of matchExpressions, whose key field is "key", the operator is "In", and the values array contains only "value". The requirements are ANDed.',
        type: 'object',
      },
    },
    type: 'object',
    'x-kubernetes-map-type': 'atomic',
  },

  [META_NAMES.LabelSelectorRequirement]: {
    description: 'A label selector requirement is a selector that contains values, a key, and an operator that relates the key and values.',
    properties: {
      key: {
        description: 'key is the label key that the selector applies to.',
        type: 'string',
        'x-kubernetes-patch-merge-key': 'key',
        'x-kubernetes-patch-strategy': 'merge',
      },
      operator: str("operator represents a key's relationship to a set of values. Valid operators are In, NotIn, Exists and DoesNotExist."),
      values: strings(
        'values is an array of string values. If the operator is In or NotIn, the values array must be non-empty. If the operator is Exists or DoesNotExist, the values array must be empty. This array is replaced during a strategic merge patch.',
      ),
    },
    required: ['key', 'operator'],
    type: 'object',
  },

  [META_NAMES.Quantity]: {
    description: QUANTITY_DESCRIPTION,
    type: 'string',
  },

  [META_NAMES.RawExtension]: {
    description: RAW_EXTENSION_DESCRIPTION,
    type: 'object',
  },

  [META_NAMES.Info]: {
    description: "Info contains versioning information. how we'll want to distribute that information.",
    properties: {
      buildDate: { type: 'string' },
      compiler: { type: 'string' },
      gitCommit: { type: 'string' },
      gitTreeState: { type: 'string' },
      gitVersion: { type: 'string' },
      goVersion: { type: 'string' },
      major: { type: 'string' },
      minor: { type: 'string' },
      platform: { type: 'string' },
    },
    required: ['major', 'minor', 'gitVersion', 'gitCommit', 'gitTreeState', 'buildDate', 'goVersion', 'compiler', 'platform'],
    type: 'object',
  },
};
