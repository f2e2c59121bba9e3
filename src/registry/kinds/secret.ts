/**
 * Secret (core/v1), as Kubernetes 1.23 serves it:
 *   - conversion: Convert_v1_Secret_To_core_Secret (pkg/apis/core/v1/conversion.go) merges stringData into
 *     data (overwriting) when the body is decoded; the internal type has no stringData, so it is never
 *     stored or answered
 *   - defaults: SetDefaults_Secret (type Opaque when empty), applied when the body is decoded
 *   - strategy: pkg/registry/core/secret/strategy.go (an update without a type keeps the old one; no
 *     create on update; unconditional updates allowed)
 *   - validation: ValidateSecret, ValidateSecretUpdate (pkg/apis/core/validation/validation.go): data keys
 *     (IsConfigMapKey), the total size, the type-specific keys, the type and (once immutable) data and
 *     immutable themselves cannot change
 *   - table: printSecret (pkg/printers/internalversion/printers.go): NAME TYPE DATA AGE
 *   - field selectors: metadata.name, metadata.namespace and type (SelectableFields)
 *
 * Data values are []byte: base64 in JSON (an invalid value fails the decoding, as the schema's format
 * `byte` makes the decoder do) and raw bytes in protobuf. Bootstrap tokens
 * (bootstrap.kubernetes.io/token) get no validation of their own from the API server.
 */
import type { KObject, KindDecl, TableColumn } from '../kind.js';
import { ref, type Definitions } from '../schema.js';
import { API_VERSION_PROPERTY, KIND_PROPERTY, LIST_META_REF, OBJECT_META_REF } from '../definitions/meta.js';
import { goJSONSyntaxError } from '../decode.js';
import {
  AGE_COLUMN,
  base64Length,
  dropEmptyMaps,
  IMMUTABLE_WHEN_SET_MSG,
  isConfigMapKey,
  isObject,
  isTrue,
  mapsDeepEqual,
  MAX_SECRET_SIZE,
  sortedKeys,
} from './configmap.js';
import {
  forbidden,
  invalid,
  nameIsDNSSubdomain,
  required,
  root,
  tooLong,
  validateImmutableField,
  type FieldError,
  type NameValidator,
} from '../../util/validation.js';

// ---------------------------------------------------------------------------------------------------
// Constants
// ---------------------------------------------------------------------------------------------------

export const SECRET_TYPE_OPAQUE = 'Opaque';
export const SECRET_TYPE_SERVICE_ACCOUNT_TOKEN = 'kubernetes.io/service-account-token';
export const SECRET_TYPE_DOCKERCFG = 'kubernetes.io/dockercfg';
export const SECRET_TYPE_DOCKER_CONFIG_JSON = 'kubernetes.io/dockerconfigjson';
export const SECRET_TYPE_BASIC_AUTH = 'kubernetes.io/basic-auth';
export const SECRET_TYPE_SSH_AUTH = 'kubernetes.io/ssh-auth';
export const SECRET_TYPE_TLS = 'kubernetes.io/tls';
export const SECRET_TYPE_BOOTSTRAP_TOKEN = 'bootstrap.kubernetes.io/token';

/** core.ServiceAccountNameKey / ServiceAccountUIDKey: the annotations of a service account token secret. */
export const SERVICE_ACCOUNT_NAME_KEY = 'kubernetes.io/service-account.name';
export const SERVICE_ACCOUNT_UID_KEY = 'kubernetes.io/service-account.uid';
/** The data keys each type requires. */
export const DOCKER_CONFIG_KEY = '.dockercfg';
export const DOCKER_CONFIG_JSON_KEY = '.dockerconfigjson';
export const BASIC_AUTH_USERNAME_KEY = 'username';
export const BASIC_AUTH_PASSWORD_KEY = 'password';
export const SSH_AUTH_PRIVATE_KEY = 'ssh-privatekey';
export const TLS_CERT_KEY = 'tls.crt';
export const TLS_PRIVATE_KEY_KEY = 'tls.key';

/** ValidateSecretName: a DNS-1123 subdomain. */
export const secretNameValidator: NameValidator = nameIsDNSSubdomain;

// ---------------------------------------------------------------------------------------------------
// Schemas
// ---------------------------------------------------------------------------------------------------

const CORE = 'io.k8s.api.core.v1.';
const SECRET = `${CORE}Secret`;
const SECRET_LIST = `${CORE}SecretList`;

export const SECRET_DEFINITIONS: Definitions = {
  [SECRET]: {
    description:
      'Secret holds secret data of a certain type. The total bytes of the values in the Data field must be less than MaxSecretSize bytes.',
    properties: {
      apiVersion: API_VERSION_PROPERTY,
      data: {
        additionalProperties: { format: 'byte', type: 'string' },
        description:
          "Data contains the secret data. Each key must consist of alphanumeric characters, '-', '_' or '.'. The serialized form of the secret data is a base64 encoded string, representing the arbitrary (possibly non-string) data value here. Described in https://tools.ietf.org/html/rfc4648#section-4",
        type: 'object',
      },
      immutable: {
        description:
          'Immutable, if set to true, ensures that data stored in the Secret cannot be updated (only object metadata can be modified). If not set to true, the field can be modified at any time. Defaulted to nil.',
        type: 'boolean',
      },
      kind: KIND_PROPERTY,
      metadata: OBJECT_META_REF,
      stringData: {
        additionalProperties: { type: 'string' },
        description:
          'stringData allows specifying non-binary secret data in string form. It is provided as a write-only input field for convenience. All keys and values are merged into the data field on write, overwriting any existing values. The stringData field is never output when reading from the API.',
        type: 'object',
      },
      type: {
        description: 'Used to facilitate programmatic handling of secret data. More info: https://kubernetes.io/docs/concepts/configuration/secret/#secret-types',
        type: 'string',
      },
    },
    type: 'object',
    'x-kubernetes-group-version-kind': [{ group: '', kind: 'Secret', version: 'v1' }],
  },
  [SECRET_LIST]: {
    description: 'SecretList is a list of Secret.',
    properties: {
      apiVersion: API_VERSION_PROPERTY,
      items: {
        description: 'Items is a list of secret objects. More info: https://kubernetes.io/docs/concepts/configuration/secret',
        items: ref(SECRET),
        type: 'array',
      },
      kind: KIND_PROPERTY,
      metadata: LIST_META_REF,
    },
    required: ['items'],
    type: 'object',
    'x-kubernetes-group-version-kind': [{ group: '', kind: 'SecretList', version: 'v1' }],
  },
};

// ---------------------------------------------------------------------------------------------------
// Conversion and validation
// ---------------------------------------------------------------------------------------------------

type Json = Record<string, any>;

function typeOf(obj: KObject): string {
  return typeof obj['type'] === 'string' ? obj['type'] : '';
}

/** What decoding does: stringData merged into data (overwriting), and the type defaulted. */
function convertFromV1(obj: KObject): void {
  const stringData: unknown = obj['stringData'];
  if (isObject(stringData)) {
    const data: Json = isObject(obj['data']) ? obj['data'] : {};
    for (const key of Object.keys(stringData)) {
      const v: unknown = stringData[key];
      data[key] = Buffer.from(typeof v === 'string' ? v : '', 'utf8').toString('base64');
    }
    obj['data'] = data;
  }
  delete obj['stringData'];
}

/** json.Unmarshal(b, &map[string]interface{}{}): its error, or null. */
function jsonObjectError(b64: unknown): string | null {
  const bytes = Buffer.from(typeof b64 === 'string' ? b64 : '', 'base64');
  if (bytes.length === 0) return 'unexpected end of JSON input';
  const syntax = goJSONSyntaxError(bytes);
  if (syntax !== null) return syntax;
  let v: unknown;
  try {
    v = JSON.parse(bytes.toString('utf8'));
  } catch {
    return 'unexpected end of JSON input';
  }
  if (v === null || isObject(v)) return null;
  const what = Array.isArray(v) ? 'array' : typeof v === 'boolean' ? 'bool' : typeof v === 'number' ? 'number' : 'string';
  return `json: cannot unmarshal ${what} into Go value of type map[string]interface {}`;
}

/** ValidateSecret, without the object metadata (validated by the store). */
export function validateSecret(obj: KObject): FieldError[] {
  const errs: FieldError[] = [];
  const dataPath = root('data');
  const data: Json = isObject(obj['data']) ? obj['data'] : {};
  let totalSize = 0;
  for (const key of sortedKeys(data)) {
    for (const msg of isConfigMapKey(key)) errs.push(invalid(dataPath.key(key), key, msg));
    totalSize += base64Length(data[key]);
  }
  if (totalSize > MAX_SECRET_SIZE) errs.push(tooLong(dataPath, '', MAX_SECRET_SIZE));

  const has = (key: string) => Object.hasOwn(data, key);
  switch (typeOf(obj)) {
    case SECRET_TYPE_SERVICE_ACCOUNT_TOKEN: {
      // Only the service account's name is required; the uid and the token come from the controller.
      const ann = obj.metadata?.annotations;
      const name = isObject(ann) && typeof ann[SERVICE_ACCOUNT_NAME_KEY] === 'string' ? ann[SERVICE_ACCOUNT_NAME_KEY] : '';
      if (name.length === 0) errs.push(required(root('metadata', 'annotations').key(SERVICE_ACCOUNT_NAME_KEY), ''));
      break;
    }
    case SECRET_TYPE_OPAQUE:
    case '':
      break;
    case SECRET_TYPE_DOCKERCFG:
    case SECRET_TYPE_DOCKER_CONFIG_JSON: {
      const key = typeOf(obj) === SECRET_TYPE_DOCKERCFG ? DOCKER_CONFIG_KEY : DOCKER_CONFIG_JSON_KEY;
      if (!has(key)) {
        errs.push(required(dataPath.key(key), ''));
        break;
      }
      const err = jsonObjectError(data[key]);
      if (err !== null) errs.push(invalid(dataPath.key(key), '<secret contents redacted>', err));
      break;
    }
    case SECRET_TYPE_BASIC_AUTH:
      // Either may be empty, but one of them must be present. (Kubernetes builds these paths from the
      // literal "data[%s]".)
      if (!has(BASIC_AUTH_USERNAME_KEY) && !has(BASIC_AUTH_PASSWORD_KEY)) {
        errs.push(required(root('data[%s]').key(BASIC_AUTH_USERNAME_KEY), ''));
        errs.push(required(root('data[%s]').key(BASIC_AUTH_PASSWORD_KEY), ''));
      }
      break;
    case SECRET_TYPE_SSH_AUTH:
      if (base64Length(data[SSH_AUTH_PRIVATE_KEY]) === 0) errs.push(required(root('data[%s]').key(SSH_AUTH_PRIVATE_KEY), ''));
      break;
    case SECRET_TYPE_TLS:
      if (!has(TLS_CERT_KEY)) errs.push(required(dataPath.key(TLS_CERT_KEY), ''));
      if (!has(TLS_PRIVATE_KEY_KEY)) errs.push(required(dataPath.key(TLS_PRIVATE_KEY_KEY), ''));
      break;
    default:
      // bootstrap.kubernetes.io/token and any other type: nothing more.
      break;
  }
  return errs;
}

/** ValidateSecretUpdate, without the object metadata. */
export function validateSecretUpdate(obj: KObject, old: KObject): FieldError[] {
  const errs: FieldError[] = [...validateImmutableField(typeOf(obj), typeOf(old), root('type'))];
  if (isTrue(old['immutable'])) {
    if (!isTrue(obj['immutable'])) errs.push(forbidden(root('immutable'), IMMUTABLE_WHEN_SET_MSG));
    // stringData was merged into data before validation.
    if (!mapsDeepEqual(obj['data'], old['data'])) errs.push(forbidden(root('data'), IMMUTABLE_WHEN_SET_MSG));
  }
  errs.push(...validateSecret(obj));
  return errs;
}

// ---------------------------------------------------------------------------------------------------
// Table and the kind
// ---------------------------------------------------------------------------------------------------

const columns: TableColumn[] = [
  {
    name: 'Type',
    type: 'string',
    description: SECRET_DEFINITIONS[SECRET]!.properties!['type']!.description!,
    priority: 0,
    cell: (obj) => typeOf(obj),
  },
  {
    name: 'Data',
    type: 'string',
    description: SECRET_DEFINITIONS[SECRET]!.properties!['data']!.description!,
    priority: 0,
    cell: (obj) => sortedKeys(obj['data']).length,
  },
  AGE_COLUMN,
];

export const secretKind: KindDecl = {
  group: '',
  version: 'v1',
  kind: 'Secret',
  listKind: 'SecretList',
  resource: 'secrets',
  singular: 'secret',
  namespaced: true,
  nameValidator: secretNameValidator,
  definition: SECRET,
  listDefinition: SECRET_LIST,
  definitions: SECRET_DEFINITIONS,
  tracksGeneration: false,
  fieldSelectors: { type: (obj) => typeOf(obj) },
  columns,
  strategy: {
    allowCreateOnUpdate: false,
    allowUnconditionalUpdate: true,
    prepareForCreate(obj: KObject): void {
      convertFromV1(obj);
    },
    /**
     * Decoding defaults an empty type to Opaque before the strategy runs, so the strategy's "an empty
     * type keeps the old one" never applies to a body; a type left out of a replacement is Opaque.
     */
    prepareForUpdate(obj: KObject): void {
      convertFromV1(obj);
      if (typeOf(obj) === '') obj['type'] = SECRET_TYPE_OPAQUE;
    },
    /** SetDefaults_Secret */
    default(obj: KObject): void {
      if (typeOf(obj) === '') obj['type'] = SECRET_TYPE_OPAQUE;
    },
    validate(obj: KObject): FieldError[] {
      return validateSecret(obj);
    },
    validateUpdate(obj: KObject, old: KObject): FieldError[] {
      return validateSecretUpdate(obj, old);
    },
    canonicalize(obj: KObject): void {
      delete obj['stringData'];
      dropEmptyMaps(obj, 'data');
    },
  },
};
