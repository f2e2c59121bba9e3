/**
 * ConfigMap (core/v1), as Kubernetes 1.23 serves it:
 *   - strategy: pkg/registry/core/configmap/strategy.go (no status; nothing dropped or kept on create or
 *     update; unconditional updates allowed; no create on update)
 *   - validation: ValidateConfigMap, ValidateConfigMapUpdate (pkg/apis/core/validation/validation.go) with
 *     IsConfigMapKey (k8s.io/apimachinery/pkg/util/validation)
 *   - table: printConfigMap (pkg/printers/internalversion/printers.go): NAME DATA AGE
 *   - field selectors: metadata.name and metadata.namespace only
 *
 * Go iterates maps in random order; errors about data keys are reported here in key order.
 */
import type { KObject, KindDecl, TableColumn } from '../kind.js';
import { ref, type Definitions } from '../schema.js';
import { API_VERSION_PROPERTY, KIND_PROPERTY, META_NAMES, OBJECT_META_REF } from '../definitions/meta.js';
import {
  compareBytes,
  DNS1123_SUBDOMAIN_MAX_LENGTH,
  forbidden,
  invalid,
  maxLenError,
  nameIsDNSSubdomain,
  regexError,
  root,
  tooLong,
  type FieldError,
  type NameValidator,
} from '../../util/validation.js';

// ---------------------------------------------------------------------------------------------------
// Constants and shared validation (Secret uses them too)
// ---------------------------------------------------------------------------------------------------

/** core.MaxSecretSize: the total size of a ConfigMap's or a Secret's values. */
export const MAX_SECRET_SIZE = 1 * 1024 * 1024;

/** The message of the immutable checks of ValidateConfigMapUpdate and ValidateSecretUpdate. */
export const IMMUTABLE_WHEN_SET_MSG = 'field is immutable when `immutable` is set';

/** ValidateConfigMapName: a DNS-1123 subdomain. */
export const configMapNameValidator: NameValidator = nameIsDNSSubdomain;

const CONFIG_MAP_KEY_FMT = '[-._a-zA-Z0-9]+';
const CONFIG_MAP_KEY_ERR_MSG = "a valid config key must consist of alphanumeric characters, '-', '_' or '.'";
const CONFIG_MAP_KEY_RE = new RegExp(`^${CONFIG_MAP_KEY_FMT}$`);

/** IsConfigMapKey: at most 253 characters of [-._a-zA-Z0-9], and not '.', '..' or '..'-prefixed. */
export function isConfigMapKey(value: string): string[] {
  const errs: string[] = [];
  if (Buffer.byteLength(value, 'utf8') > DNS1123_SUBDOMAIN_MAX_LENGTH) errs.push(maxLenError(DNS1123_SUBDOMAIN_MAX_LENGTH));
  if (!CONFIG_MAP_KEY_RE.test(value)) errs.push(regexError(CONFIG_MAP_KEY_ERR_MSG, CONFIG_MAP_KEY_FMT, 'key.name', 'KEY_NAME', 'key-name'));
  // hasChDirPrefix
  if (value === '.') errs.push("must not be '.'");
  else if (value === '..') errs.push("must not be '..'");
  else if (value.startsWith('..')) errs.push("must not start with '..'");
  return errs;
}

type Json = Record<string, any>;

export function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The keys of a JSON map in Go's byte order. */
export function sortedKeys(m: unknown): string[] {
  return isObject(m) ? Object.keys(m).sort(compareBytes) : [];
}

/** len() of a []byte value held as base64. */
export function base64Length(v: unknown): number {
  return typeof v === 'string' ? Buffer.from(v, 'base64').length : 0;
}

/** A *bool that is set and true. */
export function isTrue(v: unknown): boolean {
  return v === true;
}

/**
 * reflect.DeepEqual of two maps as decoded from JSON: a nil map (absent) differs from an empty one, and
 * values compare exactly.
 */
export function mapsDeepEqual(a: unknown, b: unknown): boolean {
  const na = !isObject(a);
  const nb = !isObject(b);
  if (na || nb) return na && nb;
  const ka = Object.keys(a);
  if (ka.length !== Object.keys(b).length) return false;
  return ka.every((k) => Object.hasOwn(b, k) && a[k] === b[k]);
}

/** Drops empty maps, as Go's `omitempty` does when the object is encoded for storage and answers. */
export function dropEmptyMaps(obj: Json, ...fields: string[]): void {
  for (const f of fields) {
    if (obj[f] === null || (isObject(obj[f]) && Object.keys(obj[f]).length === 0)) delete obj[f];
  }
}

// ---------------------------------------------------------------------------------------------------
// Schemas
// ---------------------------------------------------------------------------------------------------

const CORE = 'io.k8s.api.core.v1.';
const CONFIG_MAP = `${CORE}ConfigMap`;
const CONFIG_MAP_LIST = `${CORE}ConfigMapList`;

export const CONFIG_MAP_DEFINITIONS: Definitions = {
  [CONFIG_MAP]: {
    description: 'ConfigMap holds configuration data for pods to consume.',
    properties: {
      apiVersion: API_VERSION_PROPERTY,
      binaryData: {
        additionalProperties: { format: 'byte', type: 'string' },
        description:
          "BinaryData contains the binary data. Each key must consist of alphanumeric characters, '-', '_' or '.'. BinaryData can contain byte sequences that are not in the UTF-8 range. The keys stored in BinaryData must not overlap with the ones in the Data field, this is enforced during validation process. Using this field will require 1.10+ apiserver and kubelet.",
        type: 'object',
      },
      data: {
        additionalProperties: { type: 'string' },
        description:
          "Data contains the configuration data. Each key must consist of alphanumeric characters, '-', '_' or '.'. Values with non-UTF-8 byte sequences must use the BinaryData field. The keys stored in Data must not overlap with the keys in the BinaryData field, this is enforced during validation process.",
        type: 'object',
      },
      immutable: {
        description:
          'Immutable, if set to true, ensures that data stored in the ConfigMap cannot be updated (only object metadata can be modified). If not set to true, the field can be modified at any time. Defaulted to nil.',
        type: 'boolean',
      },
      kind: KIND_PROPERTY,
      metadata: OBJECT_META_REF,
    },
    type: 'object',
    'x-kubernetes-group-version-kind': [{ group: '', kind: 'ConfigMap', version: 'v1' }],
  },
  [CONFIG_MAP_LIST]: {
    description: 'ConfigMapList is a resource containing a list of ConfigMap objects.',
    properties: {
      apiVersion: API_VERSION_PROPERTY,
      items: { description: 'Items is the list of ConfigMaps.', items: ref(CONFIG_MAP), type: 'array' },
      kind: KIND_PROPERTY,
      metadata: ref(META_NAMES.ListMeta, 'More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata'),
    },
    required: ['items'],
    type: 'object',
    'x-kubernetes-group-version-kind': [{ group: '', kind: 'ConfigMapList', version: 'v1' }],
  },
};

// ---------------------------------------------------------------------------------------------------
// Validation
// ---------------------------------------------------------------------------------------------------

/** ValidateConfigMap, without the object metadata (validated by the store). */
export function validateConfigMap(obj: KObject): FieldError[] {
  const errs: FieldError[] = [];
  const data = obj['data'];
  const binaryData = obj['binaryData'];
  let totalSize = 0;
  for (const key of sortedKeys(data)) {
    const path = root('data').key(key);
    for (const msg of isConfigMapKey(key)) errs.push(invalid(path, key, msg));
    if (isObject(binaryData) && Object.hasOwn(binaryData, key)) errs.push(invalid(path, key, 'duplicate of key present in binaryData'));
    const v: unknown = (data as Json)[key];
    totalSize += typeof v === 'string' ? Buffer.byteLength(v, 'utf8') : 0;
  }
  for (const key of sortedKeys(binaryData)) {
    for (const msg of isConfigMapKey(key)) errs.push(invalid(root('binaryData').key(key), key, msg));
    totalSize += base64Length((binaryData as Json)[key]);
  }
  // The path "" stands for the whole object (Go prints it as "[]").
  if (totalSize > MAX_SECRET_SIZE) errs.push(tooLong(root(''), '', MAX_SECRET_SIZE));
  return errs;
}

/** ValidateConfigMapUpdate, without the object metadata: once immutable, data, binaryData and immutable stay. */
export function validateConfigMapUpdate(obj: KObject, old: KObject): FieldError[] {
  const errs: FieldError[] = [];
  if (isTrue(old['immutable'])) {
    if (!isTrue(obj['immutable'])) errs.push(forbidden(root('immutable'), IMMUTABLE_WHEN_SET_MSG));
    if (!mapsDeepEqual(obj['data'], old['data'])) errs.push(forbidden(root('data'), IMMUTABLE_WHEN_SET_MSG));
    if (!mapsDeepEqual(obj['binaryData'], old['binaryData'])) errs.push(forbidden(root('binaryData'), IMMUTABLE_WHEN_SET_MSG));
  }
  errs.push(...validateConfigMap(obj));
  return errs;
}

// ---------------------------------------------------------------------------------------------------
// Table
// ---------------------------------------------------------------------------------------------------

export const CREATION_TIMESTAMP_DOC =
  'CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata';

/** The Age column every printer ends with (before the wide columns). */
export const AGE_COLUMN: TableColumn = {
  name: 'Age',
  type: 'string',
  description: CREATION_TIMESTAMP_DOC,
  priority: 0,
  cell: (obj) => obj.metadata?.creationTimestamp ?? null,
};

const columns: TableColumn[] = [
  {
    name: 'Data',
    type: 'string',
    description: CONFIG_MAP_DEFINITIONS[CONFIG_MAP]!.properties!['data']!.description!,
    priority: 0,
    cell: (obj) => sortedKeys(obj['data']).length + sortedKeys(obj['binaryData']).length,
  },
  AGE_COLUMN,
];

// ---------------------------------------------------------------------------------------------------
// The kind
// ---------------------------------------------------------------------------------------------------

export const configMapKind: KindDecl = {
  group: '',
  version: 'v1',
  kind: 'ConfigMap',
  listKind: 'ConfigMapList',
  resource: 'configmaps',
  singular: 'configmap',
  shortNames: ['cm'],
  namespaced: true,
  nameValidator: configMapNameValidator,
  definition: CONFIG_MAP,
  listDefinition: CONFIG_MAP_LIST,
  definitions: CONFIG_MAP_DEFINITIONS,
  tracksGeneration: false,
  columns,
  strategy: {
    allowCreateOnUpdate: false,
    allowUnconditionalUpdate: true,
    validate(obj: KObject): FieldError[] {
      return validateConfigMap(obj);
    },
    validateUpdate(obj: KObject, old: KObject): FieldError[] {
      return validateConfigMapUpdate(obj, old);
    },
    canonicalize(obj: KObject): void {
      dropEmptyMaps(obj, 'data', 'binaryData');
    },
  },
};
