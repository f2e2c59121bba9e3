/**
 * ServiceAccount (core/v1), as Kubernetes 1.23 serves it:
 *   - strategy: pkg/registry/core/serviceaccount/strategy.go (cleanSecretReferences on create and update:
 *     each entry of `secrets` keeps only its name; no create on update; unconditional updates allowed)
 *   - validation: ValidateServiceAccount, ValidateServiceAccountUpdate (object metadata only, the name a
 *     DNS-1123 subdomain)
 *   - table: printServiceAccount (pkg/printers/internalversion/printers.go): NAME SECRETS AGE
 *   - field selectors: metadata.name and metadata.namespace only
 *   - serviceaccounts/token: the TokenRequest subresource (authentication/tokenrequest.ts)
 */
import type { KObject, KindDecl, TableColumn } from '../kind.js';
import { ref, type Definitions } from '../schema.js';
import { API_VERSION_PROPERTY, KIND_PROPERTY, LIST_META_REF, OBJECT_META_REF } from '../definitions/meta.js';
import { AGE_COLUMN, isObject } from './configmap.js';
import { nameIsDNSSubdomain, type FieldError, type NameValidator } from '../../util/validation.js';
import { AUTHENTICATION_DEFINITIONS } from './authentication/definitions.js';
import { tokenRequestAction } from './authentication/tokenrequest.js';

/** ValidateServiceAccountName: a DNS-1123 subdomain. */
export const serviceAccountNameValidator: NameValidator = nameIsDNSSubdomain;

// ---------------------------------------------------------------------------------------------------
// Schemas
// ---------------------------------------------------------------------------------------------------

const CORE = 'io.k8s.api.core.v1.';
const SERVICE_ACCOUNT = `${CORE}ServiceAccount`;
const SERVICE_ACCOUNT_LIST = `${CORE}ServiceAccountList`;
export const OBJECT_REFERENCE = `${CORE}ObjectReference`;
export const LOCAL_OBJECT_REFERENCE = `${CORE}LocalObjectReference`;
const API_CONVENTIONS = 'https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md';
const NAMES_DOC = 'https://kubernetes.io/docs/concepts/overview/working-with-objects/names/#names';

export const SERVICE_ACCOUNT_DEFINITIONS: Definitions = {
  [SERVICE_ACCOUNT]: {
    description:
      'ServiceAccount binds together: * a name, understood by users, and perhaps by peripheral systems, for an identity * a principal that can be authenticated and authorized * a set of secrets',
    properties: {
      apiVersion: API_VERSION_PROPERTY,
      automountServiceAccountToken: {
        description:
          'AutomountServiceAccountToken indicates whether pods running as this service account should have an API token automatically mounted. Can be overridden at the pod level.',
        type: 'boolean',
      },
      imagePullSecrets: {
        description:
          'ImagePullSecrets is a list of references to secrets in the same namespace to use for pulling any images in pods that reference this ServiceAccount. ImagePullSecrets are distinct from Secrets because Secrets can be mounted in the pod, but ImagePullSecrets are only accessed by the kubelet. More info: https://kubernetes.io/docs/concepts/containers/images/#specifying-imagepullsecrets-on-a-pod',
        items: ref(LOCAL_OBJECT_REFERENCE),
        type: 'array',
      },
      kind: KIND_PROPERTY,
      metadata: OBJECT_META_REF,
      secrets: {
        description:
          'Secrets is the list of secrets allowed to be used by pods running using this ServiceAccount. More info: https://kubernetes.io/docs/concepts/configuration/secret',
        items: ref(OBJECT_REFERENCE),
        type: 'array',
        'x-kubernetes-patch-merge-key': 'name',
        'x-kubernetes-patch-strategy': 'merge',
      },
    },
    type: 'object',
    'x-kubernetes-group-version-kind': [{ group: '', kind: 'ServiceAccount', version: 'v1' }],
  },
  [SERVICE_ACCOUNT_LIST]: {
    description: 'ServiceAccountList is a list of ServiceAccount objects',
    properties: {
      apiVersion: API_VERSION_PROPERTY,
      items: {
        description: 'List of ServiceAccounts. More info: https://kubernetes.io/docs/tasks/configure-pod-container/configure-service-account/',
        items: ref(SERVICE_ACCOUNT),
        type: 'array',
      },
      kind: KIND_PROPERTY,
      metadata: LIST_META_REF,
    },
    required: ['items'],
    type: 'object',
    'x-kubernetes-group-version-kind': [{ group: '', kind: 'ServiceAccountList', version: 'v1' }],
  },
  [OBJECT_REFERENCE]: {
    description: 'ObjectReference contains enough information to let you inspect or modify the referred object.',
    properties: {
      apiVersion: { description: 'API version of the referent.', type: 'string' },
      fieldPath: {
        description:
          'If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement, such as desiredState.manifest.containers[2]. For example, if the object reference is to a container within a pod, this would take on a value like: "spec.containers{name}" (where "name" refers to the name of the container that triggered the event) or if no container name is specified "spec.containers[2]" (container with index 2 in this pod). This syntax is chosen only to have some well-defined way of referencing a part of an object.',
        type: 'string',
      },
      kind: { description: `Kind of the referent. More info: ${API_CONVENTIONS}#types-kinds`, type: 'string' },
      name: { description: `Name of the referent. More info: ${NAMES_DOC}`, type: 'string' },
      namespace: {
        description: 'Namespace of the referent. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/namespaces/',
        type: 'string',
      },
      resourceVersion: {
        description: `Specific resourceVersion to which this reference is made, if any. More info: ${API_CONVENTIONS}#concurrency-control-and-consistency`,
        type: 'string',
      },
      uid: { description: 'UID of the referent. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names/#uids', type: 'string' },
    },
    type: 'object',
    'x-kubernetes-map-type': 'atomic',
  },
  [LOCAL_OBJECT_REFERENCE]: {
    description: 'LocalObjectReference contains enough information to let you locate the referenced object inside the same namespace.',
    properties: {
      name: { description: `Name of the referent. More info: ${NAMES_DOC}`, type: 'string' },
    },
    type: 'object',
    'x-kubernetes-map-type': 'atomic',
  },
};

// ---------------------------------------------------------------------------------------------------
// Strategy, table and the kind
// ---------------------------------------------------------------------------------------------------

/** cleanSecretReferences: each secret reference keeps its name only. */
function cleanSecretReferences(obj: KObject): void {
  const secrets: unknown = obj['secrets'];
  if (!Array.isArray(secrets)) return;
  obj['secrets'] = secrets.map((s: unknown) => (isObject(s) && typeof s['name'] === 'string' && s['name'] !== '' ? { name: s['name'] } : {}));
}

const columns: TableColumn[] = [
  {
    name: 'Secrets',
    type: 'string',
    description: SERVICE_ACCOUNT_DEFINITIONS[SERVICE_ACCOUNT]!.properties!['secrets']!.description!,
    priority: 0,
    cell: (obj) => (Array.isArray(obj['secrets']) ? obj['secrets'].length : 0),
  },
  AGE_COLUMN,
];

export const serviceAccountKind: KindDecl = {
  group: '',
  version: 'v1',
  kind: 'ServiceAccount',
  listKind: 'ServiceAccountList',
  resource: 'serviceaccounts',
  singular: 'serviceaccount',
  shortNames: ['sa'],
  namespaced: true,
  nameValidator: serviceAccountNameValidator,
  definition: SERVICE_ACCOUNT,
  listDefinition: SERVICE_ACCOUNT_LIST,
  definitions: { ...SERVICE_ACCOUNT_DEFINITIONS, ...AUTHENTICATION_DEFINITIONS },
  tracksGeneration: false,
  actions: { token: tokenRequestAction },
  columns,
  strategy: {
    allowCreateOnUpdate: false,
    allowUnconditionalUpdate: true,
    prepareForCreate(obj: KObject): void {
      cleanSecretReferences(obj);
    },
    prepareForUpdate(obj: KObject): void {
      cleanSecretReferences(obj);
    },
    /** ValidateServiceAccount checks the object metadata only (the store's). */
    validate(): FieldError[] {
      return [];
    },
    validateUpdate(): FieldError[] {
      return [];
    },
    canonicalize(obj: KObject): void {
      for (const f of ['secrets', 'imagePullSecrets']) {
        if (obj[f] === null || (Array.isArray(obj[f]) && obj[f].length === 0)) delete obj[f];
      }
    },
  },
};
