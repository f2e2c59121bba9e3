/**
 * The three patch formats of a PATCH request, applied as the Kubernetes apiserver (1.23 era) applies them:
 *
 *  - application/json-patch+json: RFC 6902, with the semantics of github.com/evanphx/json-patch v4 (which
 *    the apiserver uses), quirks included: `replace` of a missing object member adds it, `copy` from a
 *    missing member copies null, negative array indices count from the end, "01" and "+1" are indices.
 *  - application/merge-patch+json: RFC 7386 as evanphx/json-patch's MergePatch does it: nulls are pruned
 *    from values that are added (arrays included), a patch that is not an object is refused.
 *  - application/strategic-merge-patch+json: k8s.io/apimachinery's strategicpatch, driven by the kind's
 *    schema (x-kubernetes-patch-strategy / x-kubernetes-patch-merge-key) instead of Go struct tags,
 *    including Go's element ordering (its stable sort and slice aliasing) so lists come out in the order
 *    Kubernetes gives. Fields the schema does not know are merged like a JSON merge patch.
 *
 * Errors are the Status the apiserver answers with: 400 for undecodable bodies (Go's encoding/json
 * messages), 422 "the server rejected our request due to an error in our request" for a JSON patch that
 * does not apply, 413 for more than 10000 operations, 400/422/500 for strategic merge patch errors as
 * handlers/patch.go's interpretStrategicMergePatchError sorts them, and 422 Invalid when the patched
 * document is not an object (the decode error of the patched JSON).
 *
 * Results are plain JSON. Like Go's output before typed decoding they may hold nulls (e.g. under a
 * `$patch: replace` map); the caller's decode step treats them as Go's typed decoding would.
 */
import { apiErrors, StatusError } from './errors.js';
import { resolveSchema, type Definitions, type Schema } from './schema.js';
import { compareBytes, goFloat, goQuote, invalid, root } from '../util/validation.js';

export type JsonObject = Record<string, unknown>;
/** A request body: raw bytes, or text. */
export type PatchBody = Uint8Array | string;

/** The patch media types, in the order Kubernetes lists them in its 415 answer. */
export const PATCH_TYPES = [
  'application/json-patch+json',
  'application/merge-patch+json',
  'application/strategic-merge-patch+json',
  'application/apply-patch+yaml',
] as const;
export type PatchType = (typeof PATCH_TYPES)[number];

/** The most operations a JSON patch may hold (handlers/patch.go maxJSONPatchOperations). */
export const MAX_JSON_PATCH_OPERATIONS = 10000;
/** The limit on what `copy` operations may add to a document (apiserver JSONPatchMaxCopyBytes). */
export const JSON_PATCH_MAX_COPY_BYTES = 3 * 1024 * 1024;

/** The 415 for a PATCH whose Content-Type is not one of `accepted` (negotiation.NewUnsupportedMediaTypeError). */
export function unsupportedPatchType(_contentType: string, accepted: readonly string[] = PATCH_TYPES): StatusError {
  return apiErrors.unsupportedMediaType(
    `the body of the request was in an unknown format - accepted media types include: ${accepted.join(', ')}`,
  );
}

/**
 * The patch type of a Content-Type header, as PatchResource reads it (anything from a ';' on is dropped,
 * the rest must match exactly), or the 415 thrown.
 */
export function parsePatchType(contentType: string | undefined, accepted: readonly string[] = PATCH_TYPES): PatchType {
  let ct = contentType ?? '';
  const idx = ct.indexOf(';');
  if (idx > 0) ct = ct.slice(0, idx);
  if (!accepted.includes(ct)) throw unsupportedPatchType(ct, accepted);
  return ct as PatchType;
}

// ---------------------------------------------------------------------------
// Plain JSON helpers (own properties only: a "__proto__" member is data, never a prototype)
// ---------------------------------------------------------------------------

function hasOwn(o: object, k: string): boolean {
  return Object.prototype.hasOwnProperty.call(o, k);
}

function getOwn(o: JsonObject, k: string): unknown {
  return hasOwn(o, k) ? o[k] : undefined;
}

function setOwn(o: JsonObject, k: string, v: unknown): void {
  if (k === '__proto__') Object.defineProperty(o, k, { value: v, writable: true, enumerable: true, configurable: true });
  else o[k] = v;
}

function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function clone<T>(v: T): T {
  if (Array.isArray(v)) return v.map((e: unknown) => clone(e)) as T;
  if (isObject(v)) {
    const out: JsonObject = {};
    for (const k of Object.keys(v)) setOwn(out, k, clone(v[k]));
    return out as T;
  }
  return v;
}

/** The JSON kind encoding/json names in an UnmarshalTypeError. */
function jsonKind(v: unknown): string {
  if (Array.isArray(v)) return 'array';
  if (v === null) return 'null';
  switch (typeof v) {
    case 'object':
      return 'object';
    case 'string':
      return 'string';
    case 'boolean':
      return 'bool';
    default:
      return 'number';
  }
}

// ---------------------------------------------------------------------------
// Go's encoding/json: syntax errors worded as its scanner words them, and its encoder
// ---------------------------------------------------------------------------

const MAX_NESTING_DEPTH = 10000;

function quoteChar(c: number): string {
  if (c === 0x27) return `'\\''`;
  if (c === 0x22) return `'"'`;
  const q = goQuote(String.fromCharCode(c));
  return `'${q.slice(1, -1)}'`;
}

/**
 * The error encoding/json reports for `data` that is not valid JSON (its scanner's SyntaxError text,
 * e.g. "invalid character '}' looking for beginning of object key string" or "unexpected end of JSON
 * input"), or null when it is valid.
 */
export function goJsonSyntaxError(data: Uint8Array): string | null {
  const PARSE_KEY = 0;
  const PARSE_VALUE = 1;
  const PARSE_ARRAY = 2;
  const stack: number[] = [];
  let err: string | null = null;
  let endTop = false;

  const isSpace = (c: number) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
  const isDigit = (c: number) => c >= 0x30 && c <= 0x39;
  const isHex = (c: number) => isDigit(c) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46);
  const fail = (c: number, context: string) => {
    err = `invalid character ${quoteChar(c)} ${context}`;
    step = () => undefined;
  };
  const push = (c: number, state: number) => {
    stack.push(state);
    if (stack.length > MAX_NESTING_DEPTH) fail(c, 'exceeded max depth');
  };

  const endTopState = (c: number) => {
    if (!isSpace(c)) fail(c, 'after top-level value');
  };
  const pop = () => {
    stack.pop();
    if (stack.length === 0) {
      step = endTopState;
      endTop = true;
    } else {
      step = endValue;
    }
  };
  const endValue = (c: number): void => {
    const n = stack.length;
    if (n === 0) {
      step = endTopState;
      endTop = true;
      endTopState(c);
      return;
    }
    if (isSpace(c)) {
      step = endValue;
      return;
    }
    switch (stack[n - 1]) {
      case PARSE_KEY:
        if (c === 0x3a) {
          stack[n - 1] = PARSE_VALUE;
          step = beginValue;
          return;
        }
        fail(c, 'after object key');
        return;
      case PARSE_VALUE:
        if (c === 0x2c) {
          stack[n - 1] = PARSE_KEY;
          step = beginString;
          return;
        }
        if (c === 0x7d) {
          pop();
          return;
        }
        fail(c, 'after object key:value pair');
        return;
      default:
        if (c === 0x2c) {
          step = beginValue;
          return;
        }
        if (c === 0x5d) {
          pop();
          return;
        }
        fail(c, 'after array element');
    }
  };
  const literal = (word: string, i: number): ((c: number) => void) => {
    return (c: number) => {
      if (c === word.charCodeAt(i)) {
        step = i + 1 === word.length ? endValue : literal(word, i + 1);
        return;
      }
      fail(c, `in literal ${word} (expecting '${word[i]}')`);
    };
  };
  const e0 = (c: number) => {
    if (!isDigit(c)) endValue(c);
  };
  const eSign = (c: number) => {
    if (isDigit(c)) step = e0;
    else fail(c, 'in exponent of numeric literal');
  };
  const exp = (c: number) => {
    if (c === 0x2b || c === 0x2d) step = eSign;
    else eSign(c);
  };
  const dot0 = (c: number) => {
    if (isDigit(c)) return;
    if (c === 0x65 || c === 0x45) step = exp;
    else endValue(c);
  };
  const dot = (c: number) => {
    if (isDigit(c)) step = dot0;
    else fail(c, 'after decimal point in numeric literal');
  };
  const zero = (c: number) => {
    if (c === 0x2e) step = dot;
    else if (c === 0x65 || c === 0x45) step = exp;
    else endValue(c);
  };
  const one = (c: number) => {
    if (isDigit(c)) step = one;
    else zero(c);
  };
  const neg = (c: number) => {
    if (c === 0x30) step = zero;
    else if (c >= 0x31 && c <= 0x39) step = one;
    else fail(c, 'in numeric literal');
  };
  const inString = (c: number): void => {
    if (c === 0x22) step = endValue;
    else if (c === 0x5c) step = inStringEsc;
    else if (c < 0x20) fail(c, 'in string literal');
  };
  const escU = (left: number): ((c: number) => void) => {
    return (c: number) => {
      if (!isHex(c)) fail(c, 'in \\u hexadecimal character escape');
      else step = left === 1 ? inString : escU(left - 1);
    };
  };
  const inStringEsc = (c: number) => {
    if ([0x62, 0x66, 0x6e, 0x72, 0x74, 0x5c, 0x2f, 0x22].includes(c)) step = inString;
    else if (c === 0x75) step = escU(4);
    else fail(c, 'in string escape code');
  };
  const beginValue = (c: number): void => {
    if (isSpace(c)) return;
    switch (c) {
      case 0x7b:
        step = beginStringOrEmpty;
        push(c, PARSE_KEY);
        return;
      case 0x5b:
        step = beginValueOrEmpty;
        push(c, PARSE_ARRAY);
        return;
      case 0x22:
        step = inString;
        return;
      case 0x2d:
        step = neg;
        return;
      case 0x30:
        step = zero;
        return;
      case 0x74:
        step = literal('true', 1);
        return;
      case 0x66:
        step = literal('false', 1);
        return;
      case 0x6e:
        step = literal('null', 1);
        return;
    }
    if (c >= 0x31 && c <= 0x39) step = one;
    else fail(c, 'looking for beginning of value');
  };
  const beginValueOrEmpty = (c: number): void => {
    if (isSpace(c)) return;
    if (c === 0x5d) endValue(c);
    else beginValue(c);
  };
  const beginString = (c: number): void => {
    if (isSpace(c)) return;
    if (c === 0x22) step = inString;
    else fail(c, 'looking for beginning of object key string');
  };
  const beginStringOrEmpty = (c: number): void => {
    if (isSpace(c)) return;
    if (c === 0x7d) {
      stack[stack.length - 1] = PARSE_VALUE;
      endValue(c);
    } else {
      beginString(c);
    }
  };

  let step: (c: number) => void = beginValue;
  for (const c of data) {
    step(c);
    if (err !== null) return err;
  }
  if (endTop) return null;
  step(0x20);
  if (err !== null) return err;
  if (endTop) return null;
  return 'unexpected end of JSON input';
}

type Parsed = { ok: true; value: unknown } | { ok: false; message: string };

const UTF8 = new TextDecoder('utf-8');

/**
 * Decodes a body as encoding/json would: the value, or Go's syntax error text. JSON.parse accepts what
 * Go's scanner accepts except nesting beyond MAX_NESTING_DEPTH, which takes more than twice as many
 * characters: shorter bodies that parse skip the scanner, which then only runs for its error text.
 */
function parseGoJson(body: PatchBody): Parsed {
  const text = typeof body === 'string' ? body : UTF8.decode(body);
  let value: unknown;
  let parsed = false;
  try {
    value = JSON.parse(text) as unknown;
    parsed = true;
  } catch {
    // Go's message below
  }
  if (parsed && text.length <= 2 * MAX_NESTING_DEPTH) return { ok: true, value };
  const message = goJsonSyntaxError(typeof body === 'string' ? Buffer.from(body, 'utf8') : body);
  if (message !== null) return { ok: false, message };
  return { ok: true, value: parsed ? value : (JSON.parse(text) as unknown) };
}

const HEX = '0123456789abcdef';

/** A string as encoding/json writes it (HTML-safe escapes included). */
function goJsonString(s: string): string {
  let out = '"';
  for (const ch of s) {
    const r = ch.codePointAt(0) as number;
    if (ch === '"' || ch === '\\') out += '\\' + ch;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (r < 0x20 || ch === '<' || ch === '>' || ch === '&') out += '\\u00' + HEX[r >> 4] + HEX[r & 0xf];
    else if (r === 0x2028 || r === 0x2029) out += '\\u' + r.toString(16);
    else if (r >= 0xd800 && r <= 0xdfff) out += '\\ufffd';
    else out += ch;
  }
  return out + '"';
}

function goInt(n: number): string {
  return Math.abs(n) < 2 ** 63 ? BigInt(n).toString() : goFloat(n);
}

/** json.Marshal of a JSON value: compact, map keys sorted. */
function goMarshal(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'string') return goJsonString(v);
  if (typeof v === 'number') return Number.isInteger(v) && Math.abs(v) < 2 ** 63 ? BigInt(v).toString() : String(v);
  if (typeof v === 'boolean') return String(v);
  if (Array.isArray(v)) return `[${v.map((e) => goMarshal(e)).join(',')}]`;
  if (isObject(v)) {
    const keys = Object.keys(v).sort(compareBytes);
    return `{${keys.map((k) => `${goJsonString(k)}:${goMarshal(v[k])}`).join(',')}}`;
  }
  return 'null';
}

/** The decoder's answer when a patched document is not an object (SimpleMetaFactory.Interpret fails). */
const GVK_STRUCT = 'struct { APIVersion string "json:\\"apiVersion,omitempty\\""; Kind string "json:\\"kind,omitempty\\"" }';

function notAnObject(patched: unknown): StatusError {
  const detail = `couldn't get version/kind; json parse error: json: cannot unmarshal ${jsonKind(patched)} into Go value of type ${GVK_STRUCT}`;
  return apiErrors.invalid('', '', '', [invalid(root('patch'), goMarshal(patched), detail)]);
}

// ---------------------------------------------------------------------------
// Status shapes the apiserver produces for patch failures
// ---------------------------------------------------------------------------

/** errors.NewGenericServerResponse(422, ...): the server message is dropped, the generic one stays. */
function unprocessable(): StatusError {
  return new StatusError({
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: 'the server rejected our request due to an error in our request',
    reason: 'Invalid',
    details: {},
    code: 422,
  });
}

/** A plain Go error reaching the handler: ErrorToAPIStatus makes it a 500 with no reason. */
function serverError(message: string): StatusError {
  return new StatusError({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, code: 500 });
}

// ---------------------------------------------------------------------------
// JSON Patch (RFC 6902, as evanphx/json-patch v4 applies it)
// ---------------------------------------------------------------------------

class PatchFailed extends Error {}

/**
 * A scalar of the patch document with its text as sent. evanphx/json-patch keeps values as raw JSON and
 * `test` compares scalars by text: the current object's text is Go's encoding (e.g. "<" as "\u003c"),
 * an operation's value is its text as sent, so "1.0" does not test equal to 1.
 */
class RawScalar {
  constructor(
    readonly raw: string,
    readonly value: string | number | boolean,
  ) {}
}

type Container = JsonObject | unknown[];

function isContainer(v: unknown): v is Container {
  return typeof v === 'object' && v !== null && !(v instanceof RawScalar);
}

function isPatchObject(v: unknown): v is JsonObject {
  return isContainer(v) && !Array.isArray(v);
}

function plain(v: unknown): unknown {
  return v instanceof RawScalar ? v.value : v;
}

/**
 * Parses text already validated by goJsonSyntaxError, keeping scalars as RawScalar (null stays null, as
 * Go keeps no node for it). Iterative, as nesting may reach 10000 levels.
 */
function parseKeepingText(text: string): unknown {
  type Frame = { obj: JsonObject; key: string } | { arr: unknown[] };
  const stack: Frame[] = [];
  let result: unknown = null;
  let i = 0;
  const skipSpace = () => {
    while (i < text.length && (text[i] === ' ' || text[i] === '\t' || text[i] === '\n' || text[i] === '\r')) i++;
  };
  const scalarEnd = (): number => {
    let j = i;
    if (text[j] === '"') {
      for (j++; text[j] !== '"'; j++) if (text[j] === '\\') j++;
      return j + 1;
    }
    while (j < text.length && !',]} \t\n\r'.includes(text[j] as string)) j++;
    return j;
  };
  const readKey = (): string => {
    skipSpace();
    const end = scalarEnd();
    const key = JSON.parse(text.slice(i, end)) as string;
    i = end;
    skipSpace();
    i++; // ':'
    return key;
  };
  const place = (v: unknown) => {
    const top = stack[stack.length - 1];
    if (top === undefined) result = v;
    else if ('arr' in top) top.arr.push(v);
    else setOwn(top.obj, top.key, v);
  };
  for (;;) {
    skipSpace();
    const ch = text[i];
    if (ch === '{') {
      const obj: JsonObject = {};
      place(obj);
      i++;
      skipSpace();
      if (text[i] === '}') i++;
      else {
        stack.push({ obj, key: readKey() });
        continue;
      }
    } else if (ch === '[') {
      const arr: unknown[] = [];
      place(arr);
      i++;
      skipSpace();
      if (text[i] === ']') i++;
      else {
        stack.push({ arr });
        continue;
      }
    } else {
      const end = scalarEnd();
      const token = text.slice(i, end);
      i = end;
      place(token === 'null' ? null : new RawScalar(token, JSON.parse(token) as string | number | boolean));
    }
    for (;;) {
      skipSpace();
      const top = stack[stack.length - 1];
      if (top === undefined) return result;
      if (text[i] === ',') {
        i++;
        if ('obj' in top) top.key = readKey();
        break;
      }
      i++; // '}' or ']'
      stack.pop();
    }
  }
}

/** encoding/json's compact with HTML escaping, as json.Marshal writes a raw value. */
function htmlEscape(raw: string): string {
  return raw.replace(/[<>&\u2028\u2029]/g, (c) => '\\u' + (c.codePointAt(0) as number).toString(16).padStart(4, '0'));
}

/** The text of a value as json.Marshal writes it. */
function marshalNode(v: unknown): string {
  if (v instanceof RawScalar) return htmlEscape(v.raw);
  if (Array.isArray(v)) return `[${v.map((e) => marshalNode(e)).join(',')}]`;
  if (isPatchObject(v)) {
    const keys = Object.keys(v).sort(compareBytes);
    return `{${keys.map((k) => `${goJsonString(k)}:${marshalNode(v[k])}`).join(',')}}`;
  }
  return goMarshal(v);
}

/** deepCopy: a copy is re-marshaled, so its raw scalars come out HTML-escaped. */
function copyNode(v: unknown): unknown {
  if (v instanceof RawScalar) return new RawScalar(htmlEscape(v.raw), v.value);
  if (Array.isArray(v)) return v.map((e) => copyNode(e));
  if (isPatchObject(v)) {
    const out: JsonObject = {};
    for (const k of Object.keys(v)) setOwn(out, k, copyNode(v[k]));
    return out;
  }
  return v;
}

/** Replaces the RawScalars of a patched document by their values. */
function unwrap(v: unknown): unknown {
  if (v instanceof RawScalar) return v.value;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) v[i] = unwrap(v[i]);
  } else if (isPatchObject(v)) {
    for (const k of Object.keys(v)) setOwn(v, k, unwrap(v[k]));
  }
  return v;
}

function decodePatchKey(k: string): string {
  return k.replace(/~[01]/g, (m) => (m === '~1' ? '/' : '~'));
}

/** strconv.Atoi: optional sign, decimal digits (leading zeros allowed), within int64. */
function atoi(s: string): number {
  if (!/^[+-]?[0-9]+$/.test(s)) throw new PatchFailed(`value was not a proper array index: '${s}'`);
  const n = Number(s);
  if (!Number.isSafeInteger(n)) throw new PatchFailed(`value out of range: '${s}'`);
  return n;
}

function containerGet(c: Container, key: string): unknown {
  if (!Array.isArray(c)) return hasOwn(c, key) ? c[key] : null;
  let idx = atoi(key);
  if (idx < 0) {
    if (idx < -c.length) throw new PatchFailed(`Unable to access invalid index: ${idx}`);
    idx += c.length;
  }
  if (idx >= c.length) throw new PatchFailed(`Unable to access invalid index: ${idx}`);
  return c[idx];
}

function containerAdd(c: Container, key: string, val: unknown): void {
  if (!Array.isArray(c)) {
    setOwn(c, key, val);
    return;
  }
  if (key === '-') {
    c.push(val);
    return;
  }
  let idx = atoi(key);
  const size = c.length + 1;
  if (idx >= size) throw new PatchFailed(`Unable to access invalid index: ${idx}`);
  if (idx < 0) {
    if (idx < -size) throw new PatchFailed(`Unable to access invalid index: ${idx}`);
    idx += size;
  }
  c.splice(idx, 0, val);
}

function containerSet(c: Container, key: string, val: unknown): void {
  if (!Array.isArray(c)) {
    setOwn(c, key, val);
    return;
  }
  let idx = atoi(key);
  if (idx < 0) {
    if (idx < -c.length) throw new PatchFailed(`Unable to access invalid index: ${idx}`);
    idx += c.length;
  }
  c[idx] = val;
}

function containerRemove(c: Container, key: string): void {
  if (!Array.isArray(c)) {
    if (!hasOwn(c, key)) throw new PatchFailed(`Unable to remove nonexistent key: ${key}`);
    delete c[key];
    return;
  }
  let idx = atoi(key);
  if (idx >= c.length) throw new PatchFailed(`Unable to access invalid index: ${idx}`);
  if (idx < 0) {
    if (idx < -c.length) throw new PatchFailed(`Unable to access invalid index: ${idx}`);
    idx += c.length;
  }
  c.splice(idx, 1);
}

/** findObject: the container holding the path's last token, and that token (the first token is ignored). */
function findObject(doc: Container, path: string): [Container, string] {
  const split = path.split('/');
  if (split.length < 2) throw new PatchFailed(`doc is missing path: ${path}`);
  let cur: Container = doc;
  for (const part of split.slice(1, -1)) {
    let next: unknown;
    try {
      next = containerGet(cur, decodePatchKey(part));
    } catch {
      throw new PatchFailed(`doc is missing path: ${path}`);
    }
    if (!isContainer(next)) throw new PatchFailed(`doc is missing path: ${path}`);
    cur = next;
  }
  return [cur, decodePatchKey(split[split.length - 1] as string)];
}

/**
 * lazyNode.equal of a node of the document (n) and the operation's value (o): containers structurally,
 * scalars by their JSON text.
 */
function nodeEqual(n: unknown, o: unknown): boolean {
  if (Array.isArray(n)) {
    return Array.isArray(o) && n.length === o.length && n.every((e, i) => (e === null || o[i] === null ? e === o[i] : nodeEqual(e, o[i])));
  }
  if (isPatchObject(n)) {
    if (!isPatchObject(o)) return false;
    const keys = Object.keys(n);
    if (keys.length !== Object.keys(o).length) return false;
    return keys.every((k) => {
      if (!hasOwn(o, k)) return false;
      const v = n[k];
      const ov = o[k];
      if (v === null || ov === null) return v === ov;
      return nodeEqual(v, ov);
    });
  }
  if (isContainer(o) || o === null || o === undefined) return false;
  const text = (v: unknown) => (v instanceof RawScalar ? v.raw : goMarshal(v));
  return text(n) === text(o);
}

function opString(op: JsonObject, field: string): string {
  const v = getOwn(op, field);
  if (v === undefined || v === null) throw new PatchFailed(`operation missing ${field} field`);
  const s = plain(v);
  if (typeof s !== 'string') throw new PatchFailed(`operation ${field} is not a string`);
  return s;
}

function applyOperations(start: Container, ops: readonly unknown[]): unknown {
  let doc: Container = start;
  let copied = 0;
  for (const raw of ops) {
    const op: JsonObject = isPatchObject(raw) ? raw : {};
    const kindValue = plain(getOwn(op, 'op'));
    const kind = typeof kindValue === 'string' ? kindValue : 'unknown';
    const hasValue = hasOwn(op, 'value');
    const value = hasValue ? op.value : null;
    switch (kind) {
      case 'add': {
        const [c, key] = findObject(doc, opString(op, 'path'));
        containerAdd(c, key, value);
        break;
      }
      case 'remove': {
        const [c, key] = findObject(doc, opString(op, 'path'));
        containerRemove(c, key);
        break;
      }
      case 'replace': {
        const path = opString(op, 'path');
        if (path === '') {
          if (!hasValue || !isContainer(value)) throw new PatchFailed('replace operation value must be object or array');
          doc = value;
          break;
        }
        const [c, key] = findObject(doc, path);
        containerGet(c, key);
        containerSet(c, key, value);
        break;
      }
      case 'move': {
        const [from, fromKey] = findObject(doc, opString(op, 'from'));
        const v = containerGet(from, fromKey);
        containerRemove(from, fromKey);
        const [c, key] = findObject(doc, opString(op, 'path'));
        containerAdd(c, key, v);
        break;
      }
      case 'copy': {
        const [from, fromKey] = findObject(doc, opString(op, 'from'));
        const v = containerGet(from, fromKey);
        const [c, key] = findObject(doc, opString(op, 'path'));
        if (v !== null && v !== undefined) copied += Buffer.byteLength(marshalNode(v), 'utf8');
        if (copied > JSON_PATCH_MAX_COPY_BYTES) {
          throw new PatchFailed(
            `Unable to complete the copy, the accumulated size increase of copy is ${copied}, exceeding the limit ${JSON_PATCH_MAX_COPY_BYTES}`,
          );
        }
        containerAdd(c, key, copyNode(v ?? null));
        break;
      }
      case 'test': {
        const path = opString(op, 'path');
        if (path === '') {
          if (!hasValue || !nodeEqual(doc, value)) throw new PatchFailed(`testing value ${path} failed`);
          break;
        }
        const [c, key] = findObject(doc, path);
        const v = containerGet(c, key);
        const equal = v === null || v === undefined ? hasValue && value === null : hasValue && nodeEqual(v, value);
        if (!equal) throw new PatchFailed(`testing value ${path} failed`);
        break;
      }
      default:
        throw new PatchFailed(`Unexpected kind: ${kind}`);
    }
  }
  return doc;
}

/**
 * Applies an RFC 6902 JSON patch to a copy of `doc`. Throws the Status the apiserver answers with:
 * 400 when the body does not decode as a patch, 413 beyond 10000 operations, 422 when an operation does
 * not apply (a failed `test` included), 422 Invalid when the result is not an object.
 */
export function applyJsonPatch(doc: JsonObject, patchBytes: PatchBody): JsonObject {
  const bytes = typeof patchBytes === 'string' ? Buffer.from(patchBytes, 'utf8') : patchBytes;
  const syntaxError = goJsonSyntaxError(bytes);
  if (syntaxError !== null) throw apiErrors.badRequest(syntaxError);
  const text = typeof patchBytes === 'string' ? patchBytes : new TextDecoder('utf-8').decode(patchBytes);
  const ops = parseKeepingText(text);
  if (ops !== null && !Array.isArray(ops)) {
    throw apiErrors.badRequest(`json: cannot unmarshal ${jsonKind(plain(ops))} into Go value of type jsonpatch.Patch`);
  }
  const list: unknown[] = ops ?? [];
  const bad = list.find((o) => o !== null && !isPatchObject(o));
  if (bad !== undefined) {
    throw apiErrors.badRequest(`json: cannot unmarshal ${jsonKind(plain(bad))} into Go value of type jsonpatch.Operation`);
  }
  if (list.length > MAX_JSON_PATCH_OPERATIONS) {
    throw apiErrors.requestEntityTooLarge(
      `The allowed maximum operations in a JSON patch is ${MAX_JSON_PATCH_OPERATIONS}, got ${list.length}`,
    );
  }
  let result: unknown;
  try {
    result = unwrap(applyOperations(clone(doc), list));
  } catch (e) {
    if (e instanceof PatchFailed) throw unprocessable();
    throw e;
  }
  if (!isObject(result)) throw notAnObject(result);
  return result;
}

// ---------------------------------------------------------------------------
// JSON Merge Patch (RFC 7386, as evanphx/json-patch v4 MergePatch applies it)
// ---------------------------------------------------------------------------

/** pruneNulls: drops null members and null array elements, recursively. */
function pruneNulls(v: unknown): unknown {
  if (Array.isArray(v)) return v.filter((e) => e !== null).map((e) => pruneNulls(e));
  if (isObject(v)) {
    for (const k of Object.keys(v)) {
      if (v[k] === null) delete v[k];
      else setOwn(v, k, pruneNulls(v[k]));
    }
  }
  return v;
}

function mergeValue(cur: unknown, patch: unknown): unknown {
  if (!isObject(cur)) return pruneNulls(patch);
  if (!isObject(patch)) return patch;
  mergeDocs(cur, patch);
  return cur;
}

function mergeDocs(doc: JsonObject, patch: JsonObject): void {
  for (const k of Object.keys(patch)) {
    const v = patch[k];
    if (v === null) delete doc[k];
    else if (!hasOwn(doc, k) || doc[k] === null) setOwn(doc, k, pruneNulls(v));
    else setOwn(doc, k, mergeValue(doc[k], v));
  }
}

/**
 * Applies an RFC 7386 merge patch to a copy of `doc`. A body that is not JSON, or is JSON null or a
 * scalar, is a 400 "Invalid JSON Patch"; an array patch replaces the document and so fails to decode (422).
 */
export function applyMergePatch(doc: JsonObject, patchBytes: PatchBody): JsonObject {
  const parsed = parseGoJson(patchBytes);
  if (!parsed.ok) throw apiErrors.badRequest('Invalid JSON Patch');
  const patch = parsed.value;
  if (Array.isArray(patch)) throw notAnObject(pruneNulls(patch));
  if (!isObject(patch)) throw apiErrors.badRequest('Invalid JSON Patch');
  const result = clone(doc);
  mergeDocs(result, patch);
  return result;
}

// ---------------------------------------------------------------------------
// Go value formatting for strategic merge patch error texts (fmt's %v and %s)
// ---------------------------------------------------------------------------

function goV(v: unknown): string {
  if (v === null || v === undefined) return '<nil>';
  if (typeof v === 'string') return v;
  if (typeof v === 'number') return Number.isInteger(v) ? goInt(v) : goFloat(v);
  if (typeof v === 'boolean') return String(v);
  if (Array.isArray(v)) return `[${v.map((e) => goV(e)).join(' ')}]`;
  if (isObject(v)) {
    const keys = Object.keys(v).sort(compareBytes);
    return `map[${keys.map((k) => `${k}:${goV(v[k])}`).join(' ')}]`;
  }
  return '';
}

function goS(v: unknown): string {
  if (v === null || v === undefined) return '%!s(<nil>)';
  if (typeof v === 'string') return v;
  if (typeof v === 'number') return `%!s(${goKind(v)}=${goV(v)})`;
  if (typeof v === 'boolean') return `%!s(bool=${v})`;
  if (Array.isArray(v)) return `[${v.map((e) => goS(e)).join(' ')}]`;
  if (isObject(v)) {
    const keys = Object.keys(v).sort(compareBytes);
    return `map[${keys.map((k) => `${k}:${goS(v[k])}`).join(' ')}]`;
  }
  return '';
}

/** reflect.Kind of a decoded JSON value (integers decode as int64, as the apiserver decodes patches). */
type GoKind = 'map' | 'slice' | 'string' | 'int64' | 'float64' | 'bool' | 'nil';

function goKind(v: unknown): GoKind {
  if (v === null || v === undefined) return 'nil';
  if (Array.isArray(v)) return 'slice';
  if (typeof v === 'string') return 'string';
  if (typeof v === 'boolean') return 'bool';
  if (typeof v === 'number') return Number.isInteger(v) && Math.abs(v) < 2 ** 63 ? 'int64' : 'float64';
  return 'map';
}

/** reflect.TypeOf(v) printed with %s. */
function goTypeName(v: unknown): string {
  switch (goKind(v)) {
    case 'map':
      return 'map[string]interface {}';
    case 'slice':
      return '[]interface {}';
    case 'nil':
      return '%!s(<nil>)';
    default:
      return goKind(v);
  }
}

/** Go's == on two interface{} values (comparing maps or slices panics in Go; here they never match). */
function goEq(a: unknown, b: unknown): boolean {
  const ka = goKind(a);
  if (ka !== goKind(b)) return false;
  if (ka === 'nil') return true;
  if (ka === 'map' || ka === 'slice') return false;
  return a === b;
}

// ---------------------------------------------------------------------------
// Strategic merge patch (k8s.io/apimachinery/pkg/util/strategicpatch, apply half)
// ---------------------------------------------------------------------------

const DIRECTIVE = '$patch';
const DELETE_DIRECTIVE = 'delete';
const REPLACE_DIRECTIVE = 'replace';
const MERGE_DIRECTIVE = 'merge';
const RETAIN_KEYS_STRATEGY = 'retainKeys';
const RETAIN_KEYS_DIRECTIVE = '$retainKeys';
const DELETE_FROM_PRIMITIVE_LIST_PREFIX = '$deleteFromPrimitiveList';
const SET_ELEMENT_ORDER_PREFIX = '$setElementOrder';

/** How the apiserver answers a strategic merge patch error: 400, the generic 422, or a 500 with the text. */
class SmpError extends Error {
  constructor(
    readonly answer: 'badRequest' | 'unprocessable' | 'internal',
    message: string,
  ) {
    super(message);
  }
}

const errBadPatchFormatForPrimitiveList = () => new SmpError('badRequest', 'invalid patch format of primitive list');
const errBadPatchFormatForRetainKeys = () => new SmpError('badRequest', 'invalid patch format of retainKeys');
const errBadPatchFormatForSetElementOrderList = () => new SmpError('badRequest', 'invalid patch format of setElementOrder list');
const errNoListOfLists = () => new SmpError('unprocessable', 'lists of lists are not supported');
const errInternal = (message: string) => new SmpError('internal', message);
const errNoMergeKey = (m: JsonObject, k: string) => errInternal(`map: ${goV(m)} does not contain declared merge key: ${k}`);
const errBadArgType = (expected: string, actual: unknown) =>
  errInternal(`expected a ${expected}, but received a ${goTypeName(actual)}`);
const errBadPatchType = (t: unknown, m: JsonObject) => errInternal(`unknown patch type: ${goS(t)} in map: ${goV(m)}`);

const MAP_TYPE = 'map[string]interface {}';
const SLICE_TYPE = '[]interface {}';

interface PatchMeta {
  /** The schema of the value (of the list's items, for a list), resolved; null when unknown. */
  sub: Schema | null;
  strategy: string;
  mergeKey: string;
}

const NO_META: PatchMeta = { sub: null, strategy: '', mergeKey: '' };

/** extractRetainKeysPatchStrategy: the strategy other than retainKeys. */
function patchStrategy(tag: string | undefined): string {
  if (tag === undefined) return '';
  const strategies = tag.split(',');
  if (strategies.length === 1) return strategies[0] === RETAIN_KEYS_STRATEGY ? '' : (strategies[0] as string);
  if (strategies.length === 2) {
    if (strategies[0] === RETAIN_KEYS_STRATEGY) return strategies[1] as string;
    if (strategies[1] === RETAIN_KEYS_STRATEGY) return strategies[0] as string;
  }
  throw errInternal(`unexpected patch strategy: [${strategies.join(' ')}]`);
}

interface Ctx {
  defs: Definitions;
}

/**
 * LookupPatchMetadataForStruct / ForSlice: the patch metadata of field `key` of a value whose schema is
 * `schema`. A map's values carry no metadata; a field the schema does not know has none either.
 */
function lookupPatchMeta(c: Ctx, schema: Schema | null, key: string, forSlice: boolean): PatchMeta {
  if (schema === null) return NO_META;
  let field: Schema | undefined;
  let mapValue = false;
  if (schema.properties && hasOwn(schema.properties, key)) field = schema.properties[key];
  else if (schema.additionalProperties) {
    field = schema.additionalProperties;
    mapValue = true;
  }
  if (field === undefined) return NO_META;
  const resolved = resolveSchema(c.defs, field);
  let strategy = '';
  let mergeKey = '';
  if (!mapValue) {
    strategy = patchStrategy(field['x-kubernetes-patch-strategy'] ?? resolved['x-kubernetes-patch-strategy']);
    mergeKey = field['x-kubernetes-patch-merge-key'] ?? resolved['x-kubernetes-patch-merge-key'] ?? '';
  }
  let sub: Schema | null = resolved;
  if (forSlice) sub = resolved.items ? resolveSchema(c.defs, resolved.items) : null;
  return { sub, strategy, mergeKey };
}

/** PatchMetaFromStruct.Name(): the Go kind of the list's elements. */
function schemaName(schema: Schema | null): string {
  if (schema === null) return 'interface';
  if (schema.properties) return 'struct';
  switch (schema.type) {
    case 'object':
      return schema.additionalProperties ? 'map' : 'struct';
    case 'array':
      return 'slice';
    case 'integer':
      return schema.format === 'int32' ? 'int32' : 'int64';
    case 'number':
      return 'float64';
    case 'boolean':
      return 'bool';
    case 'string':
      return 'string';
    default:
      return 'interface';
  }
}

/** A Go slice header over a shared backing array: Go's in-place deletes and appends are observable. */
interface GoSlice {
  arr: unknown[];
  len: number;
}

function view(s: GoSlice): unknown[] {
  return s.arr.slice(0, s.len);
}

function goAppend(s: GoSlice, v: unknown): GoSlice {
  if (s.len < s.arr.length) {
    s.arr[s.len] = v;
    return { arr: s.arr, len: s.len + 1 };
  }
  const arr = s.arr.slice(0, s.len);
  arr.push(v);
  return { arr, len: s.len + 1 };
}

function sliceOf(arr: unknown[]): GoSlice {
  return { arr, len: arr.length };
}

/** sort.SliceStable: Go's insertion-sorted blocks merged with SymMerge, for Go's exact element order. */
function goStableSort<T>(data: T[], less: (a: T, b: T) => boolean): void {
  const n = data.length;
  const lessAt = (i: number, j: number) => less(data[i] as T, data[j] as T);
  const swap = (i: number, j: number) => {
    const t = data[i] as T;
    data[i] = data[j] as T;
    data[j] = t;
  };
  const insertionSort = (a: number, b: number) => {
    for (let i = a + 1; i < b; i++) {
      for (let j = i; j > a && lessAt(j, j - 1); j--) swap(j, j - 1);
    }
  };
  const swapRange = (a: number, b: number, k: number) => {
    for (let i = 0; i < k; i++) swap(a + i, b + i);
  };
  const rotate = (a: number, m: number, b: number) => {
    let i = m - a;
    let j = b - m;
    while (i !== j) {
      if (i > j) {
        swapRange(m - i, m, j);
        i -= j;
      } else {
        swapRange(m - i, m + j - i, i);
        j -= i;
      }
    }
    swapRange(m - i, m, i);
  };
  const symMerge = (a: number, m: number, b: number): void => {
    if (m - a === 1) {
      let i = m;
      let j = b;
      while (i < j) {
        const h = (i + j) >>> 1;
        if (lessAt(h, a)) i = h + 1;
        else j = h;
      }
      for (let k = a; k < i - 1; k++) swap(k, k + 1);
      return;
    }
    if (b - m === 1) {
      let i = a;
      let j = m;
      while (i < j) {
        const h = (i + j) >>> 1;
        if (!lessAt(m, h)) i = h + 1;
        else j = h;
      }
      for (let k = m; k > i; k--) swap(k, k - 1);
      return;
    }
    const mid = (a + b) >>> 1;
    const nn = mid + m;
    let start: number;
    let r: number;
    if (m > mid) {
      start = nn - b;
      r = mid;
    } else {
      start = a;
      r = m;
    }
    const p = nn - 1;
    while (start < r) {
      const cc = (start + r) >>> 1;
      if (!lessAt(p - cc, cc)) start = cc + 1;
      else r = cc;
    }
    const end = nn - start;
    if (start < m && m < end) rotate(start, m, end);
    if (a < start && start < mid) symMerge(a, start, mid);
    if (mid < end && end < b) symMerge(mid, end, b);
  };

  let blockSize = 20;
  let a = 0;
  let b = blockSize;
  while (b <= n) {
    insertionSort(a, b);
    a = b;
    b += blockSize;
  }
  insertionSort(a, n);
  while (blockSize < n) {
    a = 0;
    b = 2 * blockSize;
    while (b <= n) {
      symMerge(a, a + blockSize, b);
      a = b;
      b += 2 * blockSize;
    }
    const m = a + blockSize;
    if (m < n) symMerge(a, m, n);
    blockSize *= 2;
  }
}

function handleDirectiveInMergeMap(directive: unknown, patch: JsonObject): JsonObject {
  if (directive === REPLACE_DIRECTIVE) {
    delete patch[DIRECTIVE];
    return patch;
  }
  if (directive === DELETE_DIRECTIVE) return {};
  throw errBadPatchType(directive, patch);
}

function containsDirectiveMarker(item: unknown): boolean {
  return isObject(item) && hasOwn(item, DIRECTIVE);
}

function mergeKeyValueEqual(left: unknown, right: unknown, mergeKey: string): boolean {
  if (mergeKey === '') return goEq(left, right);
  if (!isObject(left)) throw errBadArgType(MAP_TYPE, left);
  if (!isObject(right)) throw errBadArgType(MAP_TYPE, right);
  if (!hasOwn(left, mergeKey)) throw errNoMergeKey(left, mergeKey);
  if (!hasOwn(right, mergeKey)) throw errNoMergeKey(right, mergeKey);
  return goEq(left[mergeKey], right[mergeKey]);
}

function extractKey(s: string, prefix: string): string {
  const idx = s.indexOf('/');
  if (idx < 0 || s.slice(0, idx) !== prefix) {
    if (prefix === DELETE_FROM_PRIMITIVE_LIST_PREFIX) throw errBadPatchFormatForPrimitiveList();
    throw errBadPatchFormatForSetElementOrderList();
  }
  return s.slice(idx + 1);
}

/** Splits list items into those without and those with `$patch: delete`. */
function extractToDeleteItems(l: readonly unknown[]): [unknown[], unknown[]] {
  const nonDelete: unknown[] = [];
  const toDelete: unknown[] = [];
  for (const v of l) {
    if (!isObject(v)) throw errBadArgType(MAP_TYPE, v);
    if (hasOwn(v, DIRECTIVE) && v[DIRECTIVE] === DELETE_DIRECTIVE) toDelete.push(v);
    else nonDelete.push(v);
  }
  return [nonDelete, toDelete];
}

/** The patch list must hold its items in the relative order of the $setElementOrder list. */
function validatePatchWithSetOrderList(patchList: readonly unknown[], setOrderList: readonly unknown[], mergeKey: string): void {
  if (setOrderList.length === 0 || patchList.length === 0) return;
  const nonDelete = mergeKey !== '' ? extractToDeleteItems(patchList)[0] : patchList;
  let patchIndex = 0;
  let setOrderIndex = 0;
  while (patchIndex < nonDelete.length && setOrderIndex < setOrderList.length) {
    if (containsDirectiveMarker(nonDelete[patchIndex])) {
      patchIndex++;
      continue;
    }
    if (mergeKeyValueEqual(nonDelete[patchIndex], setOrderList[setOrderIndex], mergeKey)) patchIndex++;
    setOrderIndex++;
  }
  if (patchIndex < nonDelete.length && setOrderIndex >= setOrderList.length) {
    throw errInternal(
      `The order in patch list:\n${goV(patchList)}\n doesn't match ${SET_ELEMENT_ORDER_PREFIX} list:\n${goV(setOrderList)}\n`,
    );
  }
}

function applyRetainKeysDirective(original: JsonObject, patch: JsonObject): void {
  if (!hasOwn(patch, RETAIN_KEYS_DIRECTIVE)) return;
  const retainKeys = patch[RETAIN_KEYS_DIRECTIVE];
  delete patch[RETAIN_KEYS_DIRECTIVE];
  if (!Array.isArray(retainKeys)) throw errBadPatchFormatForRetainKeys();
  const keep = new Set<unknown>(retainKeys);
  for (const k of Object.keys(patch)) {
    if (patch[k] === null || k.startsWith(DELETE_FROM_PRIMITIVE_LIST_PREFIX) || k.startsWith(SET_ELEMENT_ORDER_PREFIX)) continue;
    if (!keep.has(k)) throw errBadPatchFormatForRetainKeys();
  }
  for (const k of Object.keys(original)) {
    if (!keep.has(k)) delete original[k];
  }
}

/** The index of the item in `l` matching `val` (by merge key for maps), or -1. */
function indexOf(l: readonly unknown[], val: unknown, mergeKey: string, kind: GoKind): number {
  const key = (item: unknown): unknown => {
    if (kind !== 'map') return item;
    return isObject(item) ? (getOwn(item, mergeKey) ?? null) : null;
  };
  const want = key(val);
  for (let i = 0; i < l.length; i++) {
    if (goEq(want, key(l[i]))) return i;
  }
  return -1;
}

function findMapInSlice(s: GoSlice, key: string, value: unknown): { map: JsonObject; index: number } | null {
  for (let k = 0; k < s.len; k++) {
    const v = s.arr[k];
    if (!isObject(v)) throw errInternal(`value for key ${k} is not a map.`);
    if (hasOwn(v, key) && goEq(v[key], value)) return { map: v, index: k };
  }
  return null;
}

function validateMergeKeyInLists(mergeKey: string, ...lists: (readonly unknown[])[]): void {
  for (const list of lists) {
    for (const item of list) {
      if (!isObject(item)) throw errBadArgType(MAP_TYPE, item);
      if (!hasOwn(item, mergeKey)) throw errNoMergeKey(item, mergeKey);
    }
  }
}

/** normalizeSliceOrder: sorts `toSort` by its items' order in `order` (deletions go last). */
function normalizeSliceOrder(toSort: unknown[], order: readonly unknown[], mergeKey: string, kind: GoKind): unknown[] {
  let items = toSort;
  let toDelete: unknown[] = [];
  if (kind === 'map') {
    validateMergeKeyInLists(mergeKey, toSort, order);
    [items, toDelete] = extractToDeleteItems(toSort);
  }
  goStableSort(items, (a, b) => {
    const ia = indexOf(order, a, mergeKey, kind);
    if (ia >= 0) {
      const ib = indexOf(order, b, mergeKey, kind);
      if (ib >= 0) return ia < ib;
    }
    return true;
  });
  return [...items, ...toDelete];
}

/** mergeSortedSlice: interleaves server-only items (left) with patch items (right) by the live order. */
function mergeSortedSlice(left: unknown[], right: unknown[], serverOrder: readonly unknown[], mergeKey: string, kind: GoKind): unknown[] {
  const out: unknown[] = [];
  let i = 0;
  let j = 0;
  const size = left.length + right.length;
  for (let k = 0; k < size; k++) {
    if (i >= left.length && j < right.length) out.push(right[j++]);
    else if (j >= right.length && i < left.length) out.push(left[i++]);
    else {
      const li = indexOf(serverOrder, left[i], mergeKey, kind);
      const ri = indexOf(serverOrder, right[j], mergeKey, kind);
      if (li >= 0 && ri >= 0 && li < ri) out.push(left[i++]);
      else out.push(right[j++]);
    }
  }
  return out;
}

function normalizeElementOrder(
  patch: unknown[],
  serverOnly: unknown[],
  patchOrder: readonly unknown[],
  serverOrder: readonly unknown[],
  mergeKey: string,
  kind: GoKind,
): unknown[] {
  const p = normalizeSliceOrder(patch, patchOrder, mergeKey, kind);
  const s = normalizeSliceOrder(serverOnly, serverOrder, mergeKey, kind);
  return mergeSortedSlice(s, p, serverOrder, mergeKey, kind);
}

function partitionPrimitivesByPresentInList(original: readonly unknown[], partitionBy: readonly unknown[]): [unknown[], unknown[]] {
  const inPatch = new Set<unknown>(partitionBy);
  const patch: unknown[] = [];
  const serverOnly: unknown[] = [];
  for (const v of original) (inPatch.has(v) ? patch : serverOnly).push(v);
  return [patch, serverOnly];
}

function partitionMapsByPresentInList(original: readonly unknown[], partitionBy: unknown[], mergeKey: string): [unknown[], unknown[]] {
  const patch: unknown[] = [];
  const serverOnly: unknown[] = [];
  for (const v of original) {
    if (!isObject(v)) throw errBadArgType(MAP_TYPE, v);
    if (!hasOwn(v, mergeKey)) throw errNoMergeKey(v, mergeKey);
    (findMapInSlice(sliceOf(partitionBy), mergeKey, v[mergeKey]) ? patch : serverOnly).push(v);
  }
  return [patch, serverOnly];
}

/** sliceElementType: the one kind of every element of the lists. */
function sliceElementType(...slices: (readonly unknown[])[]): GoKind {
  let prev: GoKind | undefined;
  for (const s of slices) {
    for (const v of s) {
      const cur = goKind(v);
      if (prev === undefined) {
        prev = cur;
        if (prev === 'slice') throw errNoListOfLists();
      } else if (prev !== cur) {
        throw errInternal(`list element types are not identical: ${goV(slices)}`);
      }
    }
  }
  if (prev === undefined) throw errInternal('no elements in any of the given slices');
  return prev;
}

/** The "clever" in-place deduplication of Go, order quirks included. */
function deduplicateScalars(s: unknown[]): unknown[] {
  let length = s.length - 1;
  for (let i = 0; i < length; i++) {
    for (let j = i + 1; j <= length; j++) {
      if (goEq(s[i], s[j])) {
        s[j] = s[length];
        s.length = length;
        length--;
        j--;
      }
    }
  }
  return s;
}

function deleteFromSlice(current: readonly unknown[], toDelete: readonly unknown[]): unknown[] {
  const del = new Set<unknown>(toDelete);
  return current.filter((v) => !del.has(v));
}

function deleteMatchingEntries(s: GoSlice, mergeKey: string, mergeValue: unknown): GoSlice {
  let cur = s;
  for (;;) {
    const found = findMapInSlice(cur, mergeKey, mergeValue);
    if (!found) return cur;
    for (let i = found.index; i < cur.len - 1; i++) cur.arr[i] = cur.arr[i + 1];
    cur = { arr: cur.arr, len: cur.len - 1 };
  }
}

/** Applies `$patch` items of a list of maps: deletions on `original`, or a replacement of it. */
function mergeSliceWithSpecialElements(original: GoSlice, patch: readonly unknown[], mergeKey: string): [GoSlice, unknown[]] {
  const without: unknown[] = [];
  let replace = false;
  let cur = original;
  for (const v of patch) {
    const item = v as JsonObject;
    if (!hasOwn(item, DIRECTIVE)) {
      without.push(v);
      continue;
    }
    const directive = item[DIRECTIVE];
    if (directive === DELETE_DIRECTIVE) {
      if (!hasOwn(item, mergeKey)) throw errNoMergeKey(item, mergeKey);
      cur = deleteMatchingEntries(cur, mergeKey, item[mergeKey]);
    } else if (directive === REPLACE_DIRECTIVE) {
      replace = true;
    } else if (directive === MERGE_DIRECTIVE) {
      throw errInternal('merging lists cannot yet be specified in the patch');
    } else {
      throw errBadPatchType(directive, item);
    }
  }
  if (replace) return [sliceOf(without), []];
  return [cur, without];
}

function mergeSliceWithoutSpecialElements(original: GoSlice, patch: readonly unknown[], mergeKey: string, schema: Schema | null, c: Ctx): GoSlice {
  let cur = original;
  for (const v of patch) {
    const item = v as JsonObject;
    if (!hasOwn(item, mergeKey)) throw errNoMergeKey(item, mergeKey);
    const found = findMapInSlice(cur, mergeKey, item[mergeKey]);
    if (found) cur.arr[found.index] = mergeMap(found.map, item, schema, c);
    else cur = goAppend(cur, v);
  }
  return cur;
}

function mergeSlice(original: unknown[], patch: unknown[], schema: Schema | null, mergeKey: string, isDeleteList: boolean, c: Ctx): unknown[] {
  if (original.length === 0 && patch.length === 0) return original;
  const kind = sliceElementType(original, patch);
  let merged: unknown[];
  let orig: unknown[] = original;
  let pat: unknown[] = patch;
  if (kind !== 'map') {
    if (isDeleteList) return deleteFromSlice(original, patch);
    merged = deduplicateScalars([...original, ...patch]);
  } else {
    if (mergeKey === '') throw errInternal(`cannot merge lists without merge key for ${schemaName(schema)}`);
    const [origSlice, patchItems] = mergeSliceWithSpecialElements(sliceOf(original), patch, mergeKey);
    merged = view(mergeSliceWithoutSpecialElements(origSlice, patchItems, mergeKey, schema, c));
    orig = view(origSlice);
    pat = patchItems;
  }
  const [patchItems, serverOnly] =
    mergeKey === '' ? partitionPrimitivesByPresentInList(merged, pat) : partitionMapsByPresentInList(merged, pat, mergeKey);
  return normalizeElementOrder(patchItems, serverOnly, pat, orig, mergeKey, kind);
}

function mergeSliceHandler(
  original: unknown[],
  patch: unknown[],
  schema: Schema | null,
  strategy: string,
  mergeKey: string,
  isDeleteList: boolean,
  c: Ctx,
): unknown[] {
  // Delete lists apply whatever the field's strategy (kubernetes#110472).
  if (strategy === MERGE_DIRECTIVE || isDeleteList) return mergeSlice(original, patch, schema, mergeKey, isDeleteList, c);
  return patch;
}

/** Processes `$setElementOrder/<field>` directives with their lists (mergePatchIntoOriginal). */
function mergePatchIntoOriginal(original: JsonObject, patch: JsonObject, schema: Schema | null, c: Ctx): void {
  for (const key of Object.keys(patch)) {
    if (!key.startsWith(SET_ELEMENT_ORDER_PREFIX) || !hasOwn(patch, key)) continue;
    const setOrder = patch[key];
    delete patch[key];
    if (!Array.isArray(setOrder)) throw errBadArgType(SLICE_TYPE, setOrder);
    const originalKey = extractKey(key, SET_ELEMENT_ORDER_PREFIX);
    const foundOriginal = hasOwn(original, originalKey);
    const foundPatch = hasOwn(patch, originalKey);
    let originalList: unknown[] = [];
    let patchList: unknown[] = [];
    if (foundOriginal) {
      const v = original[originalKey];
      if (!Array.isArray(v)) throw errBadArgType(SLICE_TYPE, v);
      originalList = v;
    }
    if (foundPatch) {
      const v = patch[originalKey];
      if (!Array.isArray(v)) throw errBadArgType(SLICE_TYPE, v);
      patchList = v;
    }
    const meta = lookupPatchMeta(c, schema, originalKey, true);
    validatePatchWithSetOrderList(patchList, setOrder, meta.mergeKey);

    let merged: unknown[];
    if (foundOriginal && !foundPatch) merged = originalList;
    else if (!foundOriginal && foundPatch) merged = removeDirectives(patchList)[0] as unknown[];
    else if (foundOriginal && foundPatch) {
      merged = mergeSliceHandler(originalList, patchList, meta.sub, meta.strategy, meta.mergeKey, false, c);
    } else continue;

    const [patchItems, serverOnly] =
      meta.mergeKey === ''
        ? partitionPrimitivesByPresentInList(merged, setOrder)
        : partitionMapsByPresentInList(merged, setOrder, meta.mergeKey);
    // originalList is read after the merge on purpose: Go's in-place list edits show through it.
    const kind = sliceElementType(originalList, patchList);
    setOwn(original, originalKey, normalizeElementOrder(patchItems, serverOnly, setOrder, originalList, meta.mergeKey, kind));
    delete patch[originalKey];
  }
}

/** Drops null members from a value taken from the patch (kubernetes#107705). */
function discardNullValuesFromPatch(v: unknown): void {
  if (Array.isArray(v)) {
    for (const e of v) discardNullValuesFromPatch(e);
  } else if (isObject(v)) {
    for (const k of Object.keys(v)) {
      if (v[k] === null) delete v[k];
      else discardNullValuesFromPatch(v[k]);
    }
  }
}

/** Drops maps holding `$patch` from a value taken from the patch (kubernetes#117568); [value, keep]. */
function removeDirectives(v: unknown): [unknown, boolean] {
  if (Array.isArray(v)) {
    const out: unknown[] = [];
    for (const e of v) {
      const [nv, keep] = removeDirectives(e);
      if (keep) out.push(nv);
    }
    return [out, true];
  }
  if (isObject(v)) {
    if (hasOwn(v, DIRECTIVE)) return [null, false];
    for (const k of Object.keys(v)) {
      const [nv, keep] = removeDirectives(v[k]);
      if (keep) setOwn(v, k, nv);
      else delete v[k];
    }
  }
  return [v, true];
}

function mergeMap(original: JsonObject | null, patch: JsonObject, schema: Schema | null, c: Ctx): JsonObject {
  if (hasOwn(patch, DIRECTIVE)) return handleDirectiveInMergeMap(patch[DIRECTIVE], patch);
  const orig = original ?? {};
  applyRetainKeysDirective(orig, patch);
  mergePatchIntoOriginal(orig, patch, schema, c);

  for (const patchKey of Object.keys(patch)) {
    const patchV = patch[patchKey];
    let k = patchKey;
    let isDeleteList = false;
    if (k.startsWith(DELETE_FROM_PRIMITIVE_LIST_PREFIX)) {
      const noPrefixKey = extractKey(k, DELETE_FROM_PRIMITIVE_LIST_PREFIX);
      isDeleteList = true;
      if (noPrefixKey.length > 0) k = noPrefixKey;
    }
    if (patchV === null) {
      delete orig[k];
      continue;
    }
    if (!hasOwn(orig, k) || goKind(orig[k]) !== goKind(patchV)) {
      if (!isDeleteList) {
        discardNullValuesFromPatch(patchV);
        const [v, keep] = removeDirectives(patchV);
        if (keep) setOwn(orig, k, v);
        else delete orig[k];
      }
      continue;
    }
    const current = orig[k];
    if (isObject(current) && isObject(patchV)) {
      const meta = lookupPatchMeta(c, schema, k, false);
      setOwn(orig, k, meta.strategy === REPLACE_DIRECTIVE ? patchV : mergeMap(current, patchV, meta.sub, c));
    } else if (Array.isArray(current) && Array.isArray(patchV)) {
      const meta = lookupPatchMeta(c, schema, k, true);
      setOwn(orig, k, mergeSliceHandler(current, patchV, meta.sub, meta.strategy, meta.mergeKey, isDeleteList, c));
    } else {
      setOwn(orig, k, patchV);
    }
  }
  return orig;
}

/**
 * Applies a strategic merge patch to a copy of `doc`, whose schema is `schema` (its $refs resolved in
 * `defs`). `patch` is the request body (or an already decoded object). Throws the Status the apiserver
 * answers with: 400 for a body that is not a JSON object or a malformed directive, 422 for lists of
 * lists, 500 (with Kubernetes' text) for the errors it does not classify, e.g. a missing merge key.
 * With `owned`, `doc` is the caller's own copy and is patched in place (may be changed even on error).
 */
export function applyStrategicMergePatch(
  doc: JsonObject,
  patch: PatchBody | JsonObject,
  schema: Schema,
  defs: Definitions,
  owned = false,
): JsonObject {
  let patchMap: unknown;
  if (typeof patch === 'string' || patch instanceof Uint8Array) {
    const parsed = parseGoJson(patch);
    if (!parsed.ok) throw apiErrors.badRequest(parsed.message);
    patchMap = parsed.value;
  } else {
    patchMap = clone(patch);
  }
  if (patchMap === null) return owned ? doc : clone(doc);
  if (!isObject(patchMap)) {
    throw apiErrors.badRequest(`json: cannot unmarshal ${jsonKind(patchMap)} into Go value of type map[string]interface {}`);
  }
  const c: Ctx = { defs };
  try {
    return mergeMap(owned ? doc : clone(doc), patchMap, resolveSchema(defs, schema), c);
  } catch (e) {
    if (!(e instanceof SmpError)) throw e;
    switch (e.answer) {
      case 'badRequest':
        throw apiErrors.badRequest(e.message);
      case 'unprocessable':
        throw unprocessable();
      default:
        throw serverError(e.message);
    }
  }
}
