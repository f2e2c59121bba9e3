// Field validation errors, name validators and object-metadata validation, worded
// exactly as Kubernetes (k8s.io/apimachinery, 1.23 era) words them:
//   - util/validation/field: Path, Error, ErrorList.ToAggregate
//   - util/validation: IsDNS1123Subdomain, IsDNS1123Label, IsDNS1035Label,
//     IsQualifiedName, IsValidLabelValue
//   - api/validation: ValidateObjectMeta, ValidateObjectMetaUpdate and helpers
//
// Objects are plain JSON. Validators return arrays of FieldError and never throw.

// ---------------------------------------------------------------------------
// Go value formatting (what fmt's %q, %v and %#v print), needed for bad values
// ---------------------------------------------------------------------------

/**
 * A value that prints verbatim in an error (a Go value whose String() or %#v form is
 * known), e.g. a time as Go prints it, or a struct literal.
 */
export class GoLiteral {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

const PRINTABLE = /^[\p{L}\p{M}\p{N}\p{P}\p{S}]$/u;

function hex(n: number, width: number): string {
  return n.toString(16).padStart(width, '0');
}

/** strconv.Quote: a double-quoted Go string literal. */
export function goQuote(s: string): string {
  let out = '"';
  for (const ch of s) {
    const r = ch.codePointAt(0) as number;
    if (ch === '"' || ch === '\\') {
      out += '\\' + ch;
    } else if (r === 0x20 || (r > 0x20 && r < 0x7f)) {
      out += ch;
    } else if (r >= 0xd800 && r <= 0xdfff) {
      out += '\ufffd'; // a lone surrogate: Go would hold the replacement character
    } else if (r > 0x7f && PRINTABLE.test(ch)) {
      out += ch;
    } else {
      switch (r) {
        case 0x07:
          out += '\\a';
          break;
        case 0x08:
          out += '\\b';
          break;
        case 0x0c:
          out += '\\f';
          break;
        case 0x0a:
          out += '\\n';
          break;
        case 0x0d:
          out += '\\r';
          break;
        case 0x09:
          out += '\\t';
          break;
        case 0x0b:
          out += '\\v';
          break;
        default:
          if (r < 0x20 || r === 0x7f) out += '\\x' + hex(r, 2);
          else if (r < 0x10000) out += '\\u' + hex(r, 4);
          else out += '\\U' + hex(r, 8);
      }
    }
  }
  return out + '"';
}

/** Go's %v of a float64 (strconv 'g' with the shortest precision). */
export function goFloat(n: number): string {
  if (Number.isNaN(n)) return 'NaN';
  if (!Number.isFinite(n)) return n > 0 ? '+Inf' : '-Inf';
  if (n === 0) return Object.is(n, -0) ? '-0' : '0';
  const [mant, expStr] = n.toExponential().split('e') as [string, string];
  const exp = Number(expStr);
  // shortest-precision %g switches to exponent form outside [1e-4, 1e6)
  if (exp < -4 || exp >= 6) {
    const sign = exp < 0 ? '-' : '+';
    const e = Math.abs(exp);
    return `${mant}e${sign}${e < 10 ? '0' + e : e}`;
  }
  return String(n);
}

function goTypeOf(v: unknown): string {
  if (typeof v === 'string') return 'string';
  if (typeof v === 'boolean') return 'bool';
  if (typeof v === 'bigint') return 'int64';
  if (typeof v === 'number') return Number.isInteger(v) ? 'int64' : 'float64';
  return 'interface {}';
}

function uniformType(values: unknown[]): string {
  if (values.length === 0) return 'string';
  const t = goTypeOf(values[0]);
  return values.every((v) => goTypeOf(v) === t) ? t : 'interface {}';
}

/** Go's %#v of a JSON-ish value. */
export function goSyntax(v: unknown): string {
  if (v instanceof GoLiteral) return v.text;
  if (v === null || v === undefined) return '<nil>';
  if (typeof v === 'string') return goQuote(v);
  if (typeof v === 'number') return Number.isInteger(v) ? String(v) : goFloat(v);
  if (typeof v === 'bigint' || typeof v === 'boolean') return String(v);
  if (Array.isArray(v)) {
    const t = uniformType(v);
    return `[]${t}{${v.map((e) => goSyntax(e)).join(', ')}}`;
  }
  if (typeof v === 'object') {
    const obj = v as Record<string, unknown>;
    const keys = Object.keys(obj).sort(compareBytes);
    const t = uniformType(keys.map((k) => obj[k]));
    return `map[string]${t}{${keys.map((k) => `${goQuote(k)}:${goSyntax(obj[k])}`).join(', ')}}`;
  }
  return typeof v === 'symbol' ? v.toString() : 'func';
}

/** Compares strings by their UTF-8 bytes, as Go's string comparison does. */
export function compareBytes(a: string, b: string): number {
  if (a === b) return 0;
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

function byteLength(s: string): number {
  return Buffer.byteLength(s, 'utf8');
}

// ---------------------------------------------------------------------------
// field.Path
// ---------------------------------------------------------------------------

/** The path from some root to a particular field (field.Path). */
export class FieldPath {
  private constructor(
    private readonly name: string,
    private readonly subscript: string,
    private readonly parent: FieldPath | null,
  ) {}

  /** NewPath: a root path, optionally with more child names. */
  static root(name: string, ...moreNames: string[]): FieldPath {
    let p = new FieldPath(name, '', null);
    for (const n of moreNames) p = new FieldPath(n, '', p);
    return p;
  }

  /** Child: a field of this path. */
  child(name: string, ...moreNames: string[]): FieldPath {
    let p = new FieldPath(name, '', this);
    for (const n of moreNames) p = new FieldPath(n, '', p);
    return p;
  }

  /** Index: this path subscripted by a list index. */
  index(i: number): FieldPath {
    return new FieldPath('', String(i), this);
  }

  /** Key: this path subscripted by a map key. */
  key(k: string): FieldPath {
    return new FieldPath('', k, this);
  }

  toString(): string {
    const elems: FieldPath[] = [this];
    for (let p = this.parent; p !== null; p = p.parent) elems.push(p);
    let out = '';
    for (let i = elems.length - 1; i >= 0; i--) {
      const p = elems[i]!;
      if (p.name.length > 0) {
        if (p.parent !== null) out += '.';
        out += p.name;
      } else {
        out += `[${p.subscript}]`;
      }
    }
    return out;
  }
}

/** NewPath */
export function root(name: string, ...moreNames: string[]): FieldPath {
  return FieldPath.root(name, ...moreNames);
}

/** A path that may be absent; Kubernetes prints a nil path as "<nil>". */
export type MaybePath = FieldPath | null | undefined;

function pathString(p: MaybePath): string {
  return p ? p.toString() : '<nil>';
}

/** Child of a possibly-absent path (a nil path's child is a root). */
export function childOf(p: MaybePath, name: string, ...moreNames: string[]): FieldPath {
  return p ? p.child(name, ...moreNames) : FieldPath.root(name, ...moreNames);
}

// ---------------------------------------------------------------------------
// field.Error
// ---------------------------------------------------------------------------

export const ErrorType = {
  NotFound: 'FieldValueNotFound',
  Required: 'FieldValueRequired',
  Duplicate: 'FieldValueDuplicate',
  Invalid: 'FieldValueInvalid',
  NotSupported: 'FieldValueNotSupported',
  Forbidden: 'FieldValueForbidden',
  TooLong: 'FieldValueTooLong',
  TooMany: 'FieldValueTooMany',
  Internal: 'InternalError',
} as const;
export type ErrorType = (typeof ErrorType)[keyof typeof ErrorType];

const ERROR_TYPE_TEXT: Record<ErrorType, string> = {
  FieldValueNotFound: 'Not found',
  FieldValueRequired: 'Required value',
  FieldValueDuplicate: 'Duplicate value',
  FieldValueInvalid: 'Invalid value',
  FieldValueNotSupported: 'Unsupported value',
  FieldValueForbidden: 'Forbidden',
  FieldValueTooLong: 'Too long',
  FieldValueTooMany: 'Too many',
  InternalError: 'Internal error',
};

/** The human text of an error type, e.g. "Required value". */
export function errorTypeText(t: ErrorType): string {
  return ERROR_TYPE_TEXT[t];
}

/** Formats a bad value as field.Error.ErrorBody does. */
export function formatBadValue(value: unknown): string {
  if (value === null || value === undefined) return goQuote('null');
  if (value instanceof GoLiteral) return value.text;
  if (typeof value === 'string') return goQuote(value);
  if (typeof value === 'number') return Number.isInteger(value) ? String(value) : goFloat(value);
  if (typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  if (value instanceof Error) return value.message;
  return goSyntax(value);
}

/** A field-level validation error (field.Error). */
export class FieldError {
  constructor(
    readonly type: ErrorType,
    /** the field path as a string */
    readonly field: string,
    readonly badValue: unknown,
    readonly detail: string,
  ) {}

  /** The message without the field name (ErrorBody). */
  errorBody(): string {
    let s: string;
    switch (this.type) {
      case ErrorType.Required:
      case ErrorType.Forbidden:
      case ErrorType.TooLong:
      case ErrorType.Internal:
        s = ERROR_TYPE_TEXT[this.type];
        break;
      default:
        s = `${ERROR_TYPE_TEXT[this.type]}: ${formatBadValue(this.badValue)}`;
    }
    if (this.detail.length !== 0) s += `: ${this.detail}`;
    return s;
  }

  /** The full message (Error()): "<field>: <body>". */
  toString(): string {
    return `${this.field}: ${this.errorBody()}`;
  }

  get message(): string {
    return this.toString();
  }

  /** The StatusCause Kubernetes reports for this error. */
  toCause(): { reason: ErrorType; message: string; field: string } {
    return { reason: this.type, message: this.errorBody(), field: this.field };
  }
}

/** field.NotFound */
export function notFound(path: MaybePath, value: unknown): FieldError {
  return new FieldError(ErrorType.NotFound, pathString(path), value, '');
}

/** field.Required */
export function required(path: MaybePath, detail = ''): FieldError {
  return new FieldError(ErrorType.Required, pathString(path), '', detail);
}

/** field.Duplicate */
export function duplicate(path: MaybePath, value: unknown): FieldError {
  return new FieldError(ErrorType.Duplicate, pathString(path), value, '');
}

/** field.Invalid */
export function invalid(path: MaybePath, value: unknown, detail: string): FieldError {
  return new FieldError(ErrorType.Invalid, pathString(path), value, detail);
}

/** field.NotSupported: lists the supported values, each Go-quoted. */
export function notSupported(path: MaybePath, value: unknown, validValues: readonly string[]): FieldError {
  const detail = validValues.length > 0 ? 'supported values: ' + validValues.map((v) => goQuote(v)).join(', ') : '';
  return new FieldError(ErrorType.NotSupported, pathString(path), value, detail);
}

/** field.Forbidden */
export function forbidden(path: MaybePath, detail: string): FieldError {
  return new FieldError(ErrorType.Forbidden, pathString(path), '', detail);
}

/** field.TooLong */
export function tooLong(path: MaybePath, value: unknown, maxLength: number): FieldError {
  const detail = maxLength >= 0 ? `must have at most ${maxLength} bytes` : 'value is too long';
  return new FieldError(ErrorType.TooLong, pathString(path), value, detail);
}

/** field.TooMany */
export function tooMany(path: MaybePath, actualQuantity: number, maxQuantity: number): FieldError {
  return new FieldError(ErrorType.TooMany, pathString(path), actualQuantity, `must have at most ${maxQuantity} items`);
}

/** field.InternalError */
export function internalError(path: MaybePath, err: Error | string): FieldError {
  const message = typeof err === 'string' ? err : err.message;
  return new FieldError(ErrorType.Internal, pathString(path), null, message);
}

/**
 * The message of ErrorList.ToAggregate(): "" for no errors, the single message for one,
 * otherwise the de-duplicated messages joined by ", " inside brackets.
 */
export function aggregateMessage(errors: readonly (FieldError | Error | string)[]): string {
  const seen = new Set<string>();
  const msgs: string[] = [];
  for (const e of errors) {
    const m = typeof e === 'string' ? e : e instanceof FieldError ? e.toString() : e.message;
    if (seen.has(m)) continue;
    seen.add(m);
    msgs.push(m);
  }
  if (msgs.length === 0) return '';
  if (msgs.length === 1) return msgs[0]!;
  return `[${msgs.join(', ')}]`;
}

// ---------------------------------------------------------------------------
// util/validation: string validators returning lists of messages
// ---------------------------------------------------------------------------

/** EmptyError */
export function emptyError(): string {
  return 'must be non-empty';
}

/** MaxLenError */
export function maxLenError(length: number): string {
  return `must be no more than ${length} characters`;
}

/** RegexError: the message, the examples and the regex used. */
export function regexError(msg: string, fmt: string, ...examples: string[]): string {
  if (examples.length === 0) return `${msg} (regex used for validation is '${fmt}')`;
  let out = msg + ' (e.g. ';
  examples.forEach((ex, i) => {
    if (i > 0) out += ' or ';
    out += `'${ex}', `;
  });
  return out + `regex used for validation is '${fmt}')`;
}

const QNAME_CHAR_FMT = '[A-Za-z0-9]';
const QNAME_EXT_CHAR_FMT = '[-A-Za-z0-9_.]';
const QUALIFIED_NAME_FMT = `(${QNAME_CHAR_FMT}${QNAME_EXT_CHAR_FMT}*)?${QNAME_CHAR_FMT}`;
const QUALIFIED_NAME_ERR_MSG = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
export const QUALIFIED_NAME_MAX_LENGTH = 63;
const QUALIFIED_NAME_RE = new RegExp(`^${QUALIFIED_NAME_FMT}$`);

const LABEL_VALUE_FMT = `(${QUALIFIED_NAME_FMT})?`;
const LABEL_VALUE_ERR_MSG =
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
export const LABEL_VALUE_MAX_LENGTH = 63;
const LABEL_VALUE_RE = new RegExp(`^${LABEL_VALUE_FMT}$`);

const DNS1123_LABEL_FMT = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const DNS1123_LABEL_ERR_MSG =
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
export const DNS1123_LABEL_MAX_LENGTH = 63;
const DNS1123_LABEL_RE = new RegExp(`^${DNS1123_LABEL_FMT}$`);

const DNS1123_SUBDOMAIN_FMT = `${DNS1123_LABEL_FMT}(\\.${DNS1123_LABEL_FMT})*`;
const DNS1123_SUBDOMAIN_ERR_MSG =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
export const DNS1123_SUBDOMAIN_MAX_LENGTH = 253;
const DNS1123_SUBDOMAIN_RE = new RegExp(`^${DNS1123_SUBDOMAIN_FMT}$`);

const DNS1035_LABEL_FMT = '[a-z]([-a-z0-9]*[a-z0-9])?';
const DNS1035_LABEL_ERR_MSG =
  "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
export const DNS1035_LABEL_MAX_LENGTH = 63;
const DNS1035_LABEL_RE = new RegExp(`^${DNS1035_LABEL_FMT}$`);

/** IsQualifiedName: an optional DNS-1123 subdomain prefix and '/', then a name of at most 63 characters. */
export function isQualifiedName(value: string): string[] {
  const errs: string[] = [];
  const parts = value.split('/');
  let name: string;
  if (parts.length === 1) {
    name = parts[0]!;
  } else if (parts.length === 2) {
    const prefix = parts[0]!;
    name = parts[1]!;
    if (prefix.length === 0) {
      errs.push('prefix part ' + emptyError());
    } else {
      for (const msg of isDNS1123Subdomain(prefix)) errs.push('prefix part ' + msg);
    }
  } else {
    errs.push(
      'a qualified name ' +
        regexError(QUALIFIED_NAME_ERR_MSG, QUALIFIED_NAME_FMT, 'MyName', 'my.name', '123-abc') +
        " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
    );
    return errs;
  }
  if (name.length === 0) {
    errs.push('name part ' + emptyError());
  } else if (byteLength(name) > QUALIFIED_NAME_MAX_LENGTH) {
    errs.push('name part ' + maxLenError(QUALIFIED_NAME_MAX_LENGTH));
  }
  if (!QUALIFIED_NAME_RE.test(name)) {
    errs.push('name part ' + regexError(QUALIFIED_NAME_ERR_MSG, QUALIFIED_NAME_FMT, 'MyName', 'my.name', '123-abc'));
  }
  return errs;
}

/** IsValidLabelValue: empty, or a qualified-name-like string of at most 63 characters. */
export function isValidLabelValue(value: string): string[] {
  const errs: string[] = [];
  if (byteLength(value) > LABEL_VALUE_MAX_LENGTH) errs.push(maxLenError(LABEL_VALUE_MAX_LENGTH));
  if (!LABEL_VALUE_RE.test(value)) errs.push(regexError(LABEL_VALUE_ERR_MSG, LABEL_VALUE_FMT, 'MyValue', 'my_value', '12345'));
  return errs;
}

/** IsDNS1123Label */
export function isDNS1123Label(value: string): string[] {
  const errs: string[] = [];
  if (byteLength(value) > DNS1123_LABEL_MAX_LENGTH) errs.push(maxLenError(DNS1123_LABEL_MAX_LENGTH));
  if (!DNS1123_LABEL_RE.test(value)) errs.push(regexError(DNS1123_LABEL_ERR_MSG, DNS1123_LABEL_FMT, 'my-name', '123-abc'));
  return errs;
}

/** IsDNS1123Subdomain */
export function isDNS1123Subdomain(value: string): string[] {
  const errs: string[] = [];
  if (byteLength(value) > DNS1123_SUBDOMAIN_MAX_LENGTH) errs.push(maxLenError(DNS1123_SUBDOMAIN_MAX_LENGTH));
  if (!DNS1123_SUBDOMAIN_RE.test(value)) errs.push(regexError(DNS1123_SUBDOMAIN_ERR_MSG, DNS1123_SUBDOMAIN_FMT, 'example.com'));
  return errs;
}

/** IsDNS1035Label */
export function isDNS1035Label(value: string): string[] {
  const errs: string[] = [];
  if (byteLength(value) > DNS1035_LABEL_MAX_LENGTH) errs.push(maxLenError(DNS1035_LABEL_MAX_LENGTH));
  if (!DNS1035_LABEL_RE.test(value)) errs.push(regexError(DNS1035_LABEL_ERR_MSG, DNS1035_LABEL_FMT, 'my-name', 'abc-123'));
  return errs;
}

// ---------------------------------------------------------------------------
// api/validation: name validators
// ---------------------------------------------------------------------------

/**
 * Validates a resource name; prefix is true when validating a generateName (a suffix
 * will be appended). Returns the problems found (ValidateNameFunc).
 */
export type NameValidator = (name: string, prefix: boolean) => string[];

/**
 * Replaces a trailing dash so a generateName prefix can be validated as a name.
 * Kubernetes drops the last two characters and appends "a"; this is reproduced as is.
 */
export function maskTrailingDash(name: string): string {
  if (name.length > 1 && name.endsWith('-')) return name.slice(0, name.length - 2) + 'a';
  return name;
}

/** NameIsDNSSubdomain */
export const nameIsDNSSubdomain: NameValidator = (name, prefix) => isDNS1123Subdomain(prefix ? maskTrailingDash(name) : name);
/** NameIsDNSLabel */
export const nameIsDNSLabel: NameValidator = (name, prefix) => isDNS1123Label(prefix ? maskTrailingDash(name) : name);
/** NameIsDNS1035Label */
export const nameIsDNS1035Label: NameValidator = (name, prefix) => isDNS1035Label(prefix ? maskTrailingDash(name) : name);
/** ValidateNamespaceName */
export const validateNamespaceName: NameValidator = nameIsDNSLabel;
/** ValidateClusterName */
export const validateClusterName: NameValidator = nameIsDNS1035Label;

// ---------------------------------------------------------------------------
// api/validation: object metadata
// ---------------------------------------------------------------------------

export const FIELD_IMMUTABLE_ERROR_MSG = 'field is immutable';
export const IS_NEGATIVE_ERROR_MSG = 'must be greater than or equal to 0';
export const TOTAL_ANNOTATION_SIZE_LIMIT_B = 256 * (1 << 10);
export const FIELD_MANAGER_MAX_LENGTH = 128;
export const MAX_SUBRESOURCE_NAME_LENGTH = 256;
export const FINALIZER_ORPHAN_DEPENDENTS = 'orphan';
export const FINALIZER_DELETE_DEPENDENTS = 'foregroundDeletion';

/** Group/version/kind that may not own other objects. */
const BANNED_OWNERS = new Set(['/v1, Kind=Event']);

type Json = Record<string, unknown>;

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function str(v: unknown): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return String(v);
  return ''; // not a string in JSON: Kubernetes' decoder would have rejected it already
}

function int(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) ? v : 0;
}

function stringMap(v: unknown): [string, string][] {
  if (!isObject(v)) return [];
  return Object.entries(v).map(([k, val]) => [k, str(val)]);
}

function stringList(v: unknown): string[] {
  return Array.isArray(v) ? v.map(str) : [];
}

/** ValidateNonnegativeField */
export function validateNonnegativeField(value: number, path: FieldPath): FieldError[] {
  return value < 0 ? [invalid(path, value, IS_NEGATIVE_ERROR_MSG)] : [];
}

/** ValidateLabelName: a label key must be a qualified name. */
export function validateLabelName(labelName: string, path: FieldPath): FieldError[] {
  return isQualifiedName(labelName).map((msg) => invalid(path, labelName, msg));
}

/** ValidateLabels (metav1 validation): errors are reported at the map's path, not per key. */
export function validateLabels(labels: unknown, path: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  if (!isObject(labels)) return errs;
  for (const k in labels) {
    if (!Object.prototype.hasOwnProperty.call(labels, k)) continue;
    const v = str(labels[k]);
    errs.push(...validateLabelName(k, path));
    for (const msg of isValidLabelValue(v)) errs.push(invalid(path, v, msg));
  }
  return errs;
}

/** ValidateAnnotations: keys are qualified names (checked lower-cased); total size at most 256 KiB. */
export function validateAnnotations(annotations: unknown, path: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  let totalSize = 0;
  for (const [k, v] of stringMap(annotations)) {
    for (const msg of isQualifiedName(k.toLowerCase())) errs.push(invalid(path, k, msg));
    totalSize += byteLength(k) + byteLength(v);
  }
  if (totalSize > TOTAL_ANNOTATION_SIZE_LIMIT_B) errs.push(tooLong(path, '', TOTAL_ANNOTATION_SIZE_LIMIT_B));
  return errs;
}

/** schema.ParseGroupVersion, or null when malformed */
function parseGroupVersion(gv: string): { group: string; version: string } | null {
  if (gv.length === 0 || gv === '/') return { group: '', version: '' };
  const slashes = gv.split('/').length - 1;
  if (slashes === 0) return { group: '', version: gv };
  if (slashes === 1) {
    const i = gv.indexOf('/');
    return { group: gv.slice(0, i), version: gv.slice(i + 1) };
  }
  return null;
}

function goBoolPtr(v: unknown): string {
  // Go prints a pointer as its address, which cannot be reproduced; print a stable stand-in.
  return typeof v === 'boolean' ? '(*bool)(0xc000000001)' : '(*bool)(nil)';
}

/** %#v of a metav1.OwnerReference */
function ownerReferenceLiteral(ref: Json): string {
  return (
    `v1.OwnerReference{APIVersion:${goQuote(str(ref['apiVersion']))}, Kind:${goQuote(str(ref['kind']))}, ` +
    `Name:${goQuote(str(ref['name']))}, UID:${goQuote(str(ref['uid']))}, ` +
    `Controller:${goBoolPtr(ref['controller'])}, BlockOwnerDeletion:${goBoolPtr(ref['blockOwnerDeletion'])}}`
  );
}

function validateOwnerReference(ref: Json, path: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  const apiVersion = str(ref['apiVersion']);
  const kind = str(ref['kind']);
  const gv = parseGroupVersion(apiVersion) ?? { group: '', version: '' };
  if (gv.version.length === 0) errs.push(invalid(path.child('apiVersion'), apiVersion, 'version must not be empty'));
  if (kind.length === 0) errs.push(invalid(path.child('kind'), kind, 'kind must not be empty'));
  const name = str(ref['name']);
  if (name.length === 0) errs.push(invalid(path.child('name'), name, 'name must not be empty'));
  const uid = str(ref['uid']);
  if (uid.length === 0) errs.push(invalid(path.child('uid'), uid, 'uid must not be empty'));
  const gvk = `${gv.group}/${gv.version}, Kind=${kind}`;
  if (BANNED_OWNERS.has(gvk)) {
    errs.push(invalid(path, new GoLiteral(ownerReferenceLiteral(ref)), `${gvk} is disallowed from being an owner`));
  }
  return errs;
}

/** ValidateOwnerReferences: each reference's fields, and at most one controller. */
export function validateOwnerReferences(ownerReferences: unknown, path: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  if (!Array.isArray(ownerReferences)) return errs;
  const refs = ownerReferences.map((r) => (isObject(r) ? r : {}));
  let controllerName = '';
  for (const ref of refs) {
    errs.push(...validateOwnerReference(ref, path));
    if (ref['controller'] === true) {
      if (controllerName !== '') {
        const literal = new GoLiteral(`[]v1.OwnerReference{${refs.map(ownerReferenceLiteral).join(', ')}}`);
        errs.push(
          invalid(
            path,
            literal,
            `Only one reference can have Controller set to true. Found "true" in references for ${controllerName} and ${str(ref['name'])}`,
          ),
        );
      } else {
        controllerName = str(ref['name']);
      }
    }
  }
  return errs;
}

/** ValidateFinalizerName: a finalizer must be a qualified name. */
export function validateFinalizerName(name: string, path: FieldPath): FieldError[] {
  return isQualifiedName(name).map((msg) => invalid(path, name, msg));
}

/** ValidateFinalizers: names, and orphan/foregroundDeletion may not both be set. */
export function validateFinalizers(finalizers: unknown, path: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  const list = stringList(finalizers);
  let orphan = false;
  let foreground = false;
  for (const f of list) {
    errs.push(...validateFinalizerName(f, path));
    if (f === FINALIZER_ORPHAN_DEPENDENTS) orphan = true;
    if (f === FINALIZER_DELETE_DEPENDENTS) foreground = true;
  }
  if (orphan && foreground) {
    errs.push(invalid(path, list, `finalizer ${FINALIZER_ORPHAN_DEPENDENTS} and ${FINALIZER_DELETE_DEPENDENTS} cannot be both set`));
  }
  return errs;
}

/** ValidateNoNewFinalizers: used while an object is being deleted. */
export function validateNoNewFinalizers(newFinalizers: unknown, oldFinalizers: unknown, path: FieldPath): FieldError[] {
  const old = new Set(stringList(oldFinalizers));
  const extra = [...new Set(stringList(newFinalizers).filter((f) => !old.has(f)))].sort(compareBytes);
  if (extra.length === 0) return [];
  return [forbidden(path, `no new finalizers can be added if the object is being deleted, found new finalizers ${goSyntax(extra)}`)];
}

/** ValidateFieldManager: at most 128 bytes, printable characters only. */
export function validateFieldManager(fieldManager: string, path: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  if (byteLength(fieldManager) > FIELD_MANAGER_MAX_LENGTH) errs.push(tooLong(path, fieldManager, FIELD_MANAGER_MAX_LENGTH));
  // the index Kubernetes reports is the byte offset of the rune
  let offset = 0;
  for (const ch of fieldManager) {
    if (!(ch === ' ' || PRINTABLE.test(ch))) errs.push(invalid(path.index(offset), fieldManager, 'all characters must be printable'));
    offset += byteLength(ch);
  }
  return errs;
}

/** ValidateManagedFields */
export function validateManagedFields(managedFields: unknown, path: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  if (!Array.isArray(managedFields)) return errs;
  managedFields.forEach((entry, i) => {
    const e = isObject(entry) ? entry : {};
    const p = path.index(i);
    const operation = str(e['operation']);
    if (operation !== 'Apply' && operation !== 'Update') {
      errs.push(invalid(p.child('operation'), operation, 'must be `Apply` or `Update`'));
    }
    const fieldsType = str(e['fieldsType']);
    if (fieldsType.length > 0 && fieldsType !== 'FieldsV1') {
      errs.push(invalid(p.child('fieldsType'), fieldsType, 'must be `FieldsV1`'));
    }
    errs.push(...validateFieldManager(str(e['manager']), p.child('manager')));
    const subresource = str(e['subresource']);
    if (byteLength(subresource) > MAX_SUBRESOURCE_NAME_LENGTH) {
      errs.push(tooLong(p.child('subresource'), subresource, MAX_SUBRESOURCE_NAME_LENGTH));
    }
  });
  return errs;
}

/**
 * ValidateObjectMeta: validates an object's metadata on creation (after name generation).
 * `meta` is the object's `metadata` (plain JSON); `requiresNamespace` says whether the
 * resource is namespaced; `nameFn` validates name and generateName; `path` is usually
 * root('metadata').
 */
export function validateObjectMeta(meta: unknown, requiresNamespace: boolean, nameFn: NameValidator, path: FieldPath): FieldError[] {
  const m = isObject(meta) ? meta : {};
  const errs: FieldError[] = [];

  const generateName = str(m['generateName']);
  if (generateName.length !== 0) {
    for (const msg of nameFn(generateName, true)) errs.push(invalid(path.child('generateName'), generateName, msg));
  }
  const name = str(m['name']);
  if (name.length === 0) {
    errs.push(required(path.child('name'), 'name or generateName is required'));
  } else {
    for (const msg of nameFn(name, false)) errs.push(invalid(path.child('name'), name, msg));
  }
  const namespace = str(m['namespace']);
  if (requiresNamespace) {
    if (namespace.length === 0) {
      errs.push(required(path.child('namespace'), ''));
    } else {
      for (const msg of validateNamespaceName(namespace, false)) errs.push(invalid(path.child('namespace'), namespace, msg));
    }
  } else if (namespace.length !== 0) {
    errs.push(forbidden(path.child('namespace'), 'not allowed on this type'));
  }
  const clusterName = str(m['clusterName']);
  if (clusterName.length !== 0) {
    for (const msg of validateClusterName(clusterName, false)) errs.push(invalid(path.child('clusterName'), clusterName, msg));
  }
  // A field that is absent has nothing to check: no paths or lists are built for it.
  if (m['managedFields'] !== undefined) {
    errs.push(...managersOf(m).flatMap((mgr) => validateFieldManager(mgr, path.child('fieldManager'))));
  }
  if (m['generation'] !== undefined) errs.push(...validateNonnegativeField(int(m['generation']), path.child('generation')));
  if (m['labels'] !== undefined) errs.push(...validateLabels(m['labels'], path.child('labels')));
  if (m['annotations'] !== undefined) errs.push(...validateAnnotations(m['annotations'], path.child('annotations')));
  if (m['ownerReferences'] !== undefined) errs.push(...validateOwnerReferences(m['ownerReferences'], path.child('ownerReferences')));
  if (m['finalizers'] !== undefined) errs.push(...validateFinalizers(m['finalizers'], path.child('finalizers')));
  if (m['managedFields'] !== undefined) errs.push(...validateManagedFields(m['managedFields'], path.child('managedFields')));
  return errs;
}

function managersOf(m: Json): string[] {
  const mf = m['managedFields'];
  if (!Array.isArray(mf)) return [];
  return mf.map((e) => (isObject(e) ? str(e['manager']) : ''));
}

const GO_ZERO_TIME = '0001-01-01 00:00:00 +0000 UTC';

/** Go's time.Time.String() of an RFC 3339 timestamp, in UTC; the zero time when absent. */
export function goTimeString(ts: unknown): string {
  if (typeof ts !== 'string' || ts === '') return GO_ZERO_TIME;
  const ms = Date.parse(ts);
  if (Number.isNaN(ms)) return ts;
  const d = new Date(ms);
  const pad = (n: number, w = 2): string => String(n).padStart(w, '0');
  const frac = /\.(\d+)/.exec(ts)?.[1]?.replace(/0+$/, '') ?? '';
  return (
    `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ` +
    `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}${frac ? '.' + frac : ''} +0000 UTC`
  );
}

function sameInstant(a: unknown, b: unknown): boolean {
  const empty = (v: unknown): boolean => v === undefined || v === null || v === '';
  if (empty(a) || empty(b)) return empty(a) && empty(b);
  if (typeof a === 'string' && typeof b === 'string') {
    const x = Date.parse(a);
    const y = Date.parse(b);
    if (!Number.isNaN(x) && !Number.isNaN(y)) return x === y;
  }
  return a === b;
}

/** ValidateImmutableField: Invalid with 'field is immutable' when the values differ. */
export function validateImmutableField(newVal: unknown, oldVal: unknown, path: FieldPath): FieldError[] {
  return deepEqual(newVal, oldVal) ? [] : [invalid(path, newVal, FIELD_IMMUTABLE_ERROR_MSG)];
}

function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((v, i) => deepEqual(v, b[i]));
  if (isObject(a) && isObject(b)) {
    const ka = Object.keys(a);
    const kb = Object.keys(b);
    return ka.length === kb.length && ka.every((k) => Object.hasOwn(b, k) && deepEqual(a[k], b[k]));
  }
  return false;
}

/**
 * ValidateObjectMetaUpdate: validates metadata on update. name, namespace, uid,
 * creationTimestamp, deletionTimestamp, deletionGracePeriodSeconds and clusterName are
 * immutable; resourceVersion is required; generation may not decrease; no finalizer may
 * be added while the object is being deleted. generateName may change.
 */
export function validateObjectMetaUpdate(newMeta: unknown, oldMeta: unknown, path: FieldPath): FieldError[] {
  const n = isObject(newMeta) ? newMeta : {};
  const o = isObject(oldMeta) ? oldMeta : {};
  const errs: FieldError[] = [];

  const oldDeletion = o['deletionTimestamp'];
  if (oldDeletion !== undefined && oldDeletion !== null) {
    errs.push(...validateNoNewFinalizers(n['finalizers'], o['finalizers'], path.child('finalizers')));
  }
  const resourceVersion = str(n['resourceVersion']);
  if (resourceVersion.length === 0) {
    errs.push(invalid(path.child('resourceVersion'), resourceVersion, 'must be specified for an update'));
  }
  const newGeneration = int(n['generation']);
  if (newGeneration < int(o['generation'])) {
    errs.push(invalid(path.child('generation'), newGeneration, 'must not be decremented'));
  }
  errs.push(...managersOf(n).flatMap((mgr) => validateFieldManager(mgr, path.child('fieldManager'))));
  errs.push(...validateImmutableField(str(n['name']), str(o['name']), path.child('name')));
  errs.push(...validateImmutableField(str(n['namespace']), str(o['namespace']), path.child('namespace')));
  errs.push(...validateImmutableField(str(n['uid']), str(o['uid']), path.child('uid')));
  if (!sameInstant(n['creationTimestamp'], o['creationTimestamp'])) {
    errs.push(invalid(path.child('creationTimestamp'), new GoLiteral(goTimeString(n['creationTimestamp'])), FIELD_IMMUTABLE_ERROR_MSG));
  }
  if (!sameInstant(n['deletionTimestamp'], o['deletionTimestamp'])) {
    const v = n['deletionTimestamp'];
    const shown = v === undefined || v === null ? null : new GoLiteral(goTimeString(v));
    errs.push(invalid(path.child('deletionTimestamp'), shown, FIELD_IMMUTABLE_ERROR_MSG));
  }
  const newGrace = n['deletionGracePeriodSeconds'] ?? null;
  const oldGrace = o['deletionGracePeriodSeconds'] ?? null;
  errs.push(...validateImmutableField(newGrace, oldGrace, path.child('deletionGracePeriodSeconds')));
  errs.push(...validateImmutableField(str(n['clusterName']), str(o['clusterName']), path.child('clusterName')));
  errs.push(...validateLabels(n['labels'], path.child('labels')));
  errs.push(...validateAnnotations(n['annotations'], path.child('annotations')));
  errs.push(...validateOwnerReferences(n['ownerReferences'], path.child('ownerReferences')));
  errs.push(...validateManagedFields(n['managedFields'], path.child('managedFields')));
  return errs;
}
