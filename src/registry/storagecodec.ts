/**
 * The encoding of stored objects (--storage-media-type), as kube-apiserver's storage codec:
 *   - application/vnd.kubernetes.protobuf (and the orch spelling application/vnd.orch.protobuf), the default: the
 *     bytes kube-apiserver writes, `k8s\0` + runtime.Unknown around the object's message. A kind without a message
 *     is stored as JSON, as Kubernetes stores custom resources.
 *   - application/json: compact JSON (JSON.stringify's form, which reads can answer without decoding: rawjson.ts).
 *   - application/yaml: YAML with sorted keys, as sigs.k8s.io/yaml writes it.
 *
 * A value is read whatever encoding it was written in (the `k8s\0` magic, a `{`, else YAML), so changing the
 * option on an existing store works: old values keep their encoding until they are written again. Encryption at
 * rest (storage/transformer) wraps whatever bytes this produced.
 */
import {
  decodeMessage,
  decodeObject,
  encodeMessage,
  encodeObject,
  hasProtobufMagic,
  kindMessage,
  messageDescriptor,
  ProtobufDecodeError,
  unknownFields,
  type FieldDescriptor,
  type MessageDescriptor,
} from '../util/protobuf.js';
import { yaml } from '../util/yaml.js';
import type { KObject } from './kind.js';

export type StorageEncoding = 'protobuf' | 'json' | 'yaml';

/** The encoding a --storage-media-type value names. */
export function storageEncoding(mediaType: string | undefined): StorageEncoding {
  switch (mediaType) {
    case 'application/json':
      return 'json';
    case 'application/yaml':
      return 'yaml';
    case undefined:
    case 'application/vnd.kubernetes.protobuf':
    case 'application/vnd.orch.protobuf':
      return 'protobuf';
    default:
      throw new Error(`unsupported storage media type ${mediaType}`);
  }
}

/** Encodes a stored object (with apiVersion and kind) in `encoding`. */
export function encodeStored(obj: KObject, encoding: StorageEncoding): Buffer {
  if (encoding === 'protobuf' && typeof obj.apiVersion === 'string' && typeof obj.kind === 'string' && kindMessage(obj.apiVersion, obj.kind)) {
    return encodeObject(obj);
  }
  if (encoding === 'yaml') return Buffer.from(yaml().stringify(sortKeys(obj), { lineWidth: 0 }));
  return Buffer.from(JSON.stringify(obj));
}

function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v === null || typeof v !== 'object') return v;
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(v).sort()) out[k] = sortKeys((v as Record<string, unknown>)[k]);
  return out;
}

const LBRACE = 0x7b;

/** Whether a stored value is JSON (its first byte past whitespace is `{`). */
export function isStoredJSON(value: Uint8Array): boolean {
  for (let i = 0; i < value.length; i++) {
    const c = value[i]!;
    if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) continue;
    return c === LBRACE;
  }
  return false;
}

/** Decodes a stored value written in any of the encodings. */
export function decodeStored(value: Uint8Array): KObject {
  if (hasProtobufMagic(value)) {
    try {
      return decodeObject(value) as KObject;
    } catch (err) {
      if (err instanceof ProtobufDecodeError) throw new Error(`stored object is not valid protobuf: ${err.message}`, { cause: err });
      throw err;
    }
  }
  const text = Buffer.isBuffer(value) ? value.toString('utf8') : Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('utf8');
  if (isStoredJSON(value)) return JSON.parse(text) as KObject;
  return yaml().parse(text) as KObject;
}

// ---------------------------------------------------------------------------------------------------------
// The stored object without the round trip

/**
 * What `decodeStored(encodeStored(obj, 'protobuf'))` gives, built from `obj` without encoding and decoding:
 * keys in Go struct order, structs present when absent, zero scalars of omitempty fields dropped, values
 * converted as the encoder converts them (numbers as strings, times and durations reformatted, bytes
 * re-encoded). The watch cache takes it for a value the store has just written instead of decoding that
 * value. Undefined whenever it cannot be sure to give the same object (a kind stored as JSON, unknown fields
 * kept from a protobuf request, integers past 2^53, a value the encoder would refuse): the caller decodes.
 * Strings are shared with `obj`, containers are new; the result must not be changed.
 */
export function normalizeStored(obj: KObject): KObject | undefined {
  const apiVersion = obj.apiVersion;
  const kind = obj.kind;
  if (typeof apiVersion !== 'string' || typeof kind !== 'string' || apiVersion === '' || kind === '') return undefined;
  const message = kindMessage(apiVersion, kind);
  const d = message === undefined ? undefined : messageDescriptor(message);
  if (d === undefined || d.custom) return undefined;
  try {
    return { apiVersion, kind, ...normFields(d, obj as Record<string, unknown>) } as KObject;
  } catch (err) {
    if (err === CANNOT) return undefined;
    throw err;
  }
}

/** Thrown inside normalizeStored when only a real round trip gives the answer. */
const CANNOT = new Error('normalizeStored: not handled');

type NormObject = Record<string, unknown>;

function messageOf(f: FieldDescriptor): MessageDescriptor {
  const d = (f.resolved ??= messageDescriptor(f.type));
  if (d === undefined) throw CANNOT;
  return d;
}

function normFields(d: MessageDescriptor, obj: NormObject): NormObject {
  if (unknownFields(obj) !== undefined) throw CANNOT;
  const out: NormObject = {};
  for (const f of d.fields) {
    if (f.inline) {
      Object.assign(out, normValue(messageOf(f), obj));
      continue;
    }
    normField(out, f, obj[f.json]);
  }
  return out;
}

/** Sets the field `f` (not inline) of `out` from its JSON value `v` as encoding and decoding would. */
function normField(out: NormObject, f: FieldDescriptor, v: unknown): void {
  if (f.map) {
    let m: NormObject | undefined;
    if (v !== undefined && v !== null) {
      if (typeof v !== 'object' || Array.isArray(v)) throw CANNOT;
      const src = v as NormObject;
      const keys = Object.keys(src);
      if (keys.length > 0) {
        keys.sort(compareKeys);
        m = {};
        for (const k of keys) m[wellFormed(k)] = f.scalar ? normScalar(f.type, src[k]) : normValue(messageOf(f), src[k]);
      }
    }
    if (m !== undefined) out[f.json] = m;
    else if (f.presence === 'always') out[f.json] = {};
    return;
  }
  if (f.repeated) {
    let list: unknown[] | undefined;
    if (v !== undefined && v !== null) {
      if (!Array.isArray(v)) throw CANNOT;
      if (v.length > 0) {
        list = new Array<unknown>(v.length);
        for (let i = 0; i < v.length; i++) list[i] = f.scalar ? normScalar(f.type, v[i]) : normValue(messageOf(f), v[i]);
      }
    }
    if (list !== undefined) out[f.json] = list;
    else if (f.presence === 'always') out[f.json] = [];
    return;
  }
  if (f.presence === 'pointer' && (v === undefined || v === null)) return;
  if (f.scalar) {
    const s = normScalar(f.type, v);
    if (f.presence !== 'omitempty' || !(s === '' || s === 0 || s === false)) out[f.json] = s;
    return;
  }
  out[f.json] = normValue(messageOf(f), v);
}

function normValue(d: MessageDescriptor, v: unknown): unknown {
  if (d.custom) return normCustom(d, v);
  if (v !== undefined && v !== null && (typeof v !== 'object' || Array.isArray(v))) throw CANNOT;
  return normFields(d, (v ?? {}) as NormObject);
}

function normCustom(d: MessageDescriptor, v: unknown): unknown {
  switch (d.custom) {
    case 'quantity': {
      const s = v === undefined || v === null ? '0' : scalarText(v);
      return s === '' ? '0' : wellFormed(s);
    }
    case 'fieldsV1':
      return jsonCopy(v ?? {});
    case 'rawExtension':
      return v === undefined || v === null ? null : jsonCopy(v);
    case 'intOrString':
      return typeof v === 'string' ? wellFormed(v) : integer(v) | 0;
    case 'time':
    case 'microTime':
    case 'duration': {
      // Their text as the decoder formats it, from a real round trip of the small message; the same few
      // texts (creation and managed fields' times) recur from object to object.
      if (typeof v !== 'string') break;
      const key = d.custom + ' ' + v;
      let text = formattedTexts.get(key);
      if (text === undefined) {
        text = decodeMessage(d.name, encodeMessage(d.name, v)) as unknown as string | null;
        if (formattedTexts.size >= 1024) formattedTexts.clear();
        formattedTexts.set(key, text);
      }
      return text;
    }
    case 'stringList': {
      if (v === undefined || v === null) return [];
      if (!Array.isArray(v)) throw CANNOT;
      return v.map((s) => wellFormed(scalarText(s)));
    }
  }
  return decodeMessage(d.name, encodeMessage(d.name, v));
}

/** Times and durations as the decoder gives them back, by codec and text: a memo of a pure function. */
const formattedTexts = new Map<string, string | null>();

/**
 * What JSON.parse(JSON.stringify(v)) gives (the encoder writes fieldsV1 and raw extensions as JSON text), by
 * copying: plain objects, arrays, strings, booleans, null and finite numbers; anything else through JSON.
 */
function jsonCopy(v: unknown): unknown {
  try {
    return copyPlain(v);
  } catch (err) {
    if (err !== CANNOT) throw err;
    return JSON.parse(JSON.stringify(v)) as unknown;
  }
}

function copyPlain(v: unknown): unknown {
  if (v === null || typeof v === 'string' || typeof v === 'boolean') return v;
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw CANNOT;
    return v === 0 ? 0 : v;
  }
  if (Array.isArray(v)) {
    const out = new Array<unknown>(v.length);
    for (let i = 0; i < v.length; i++) {
      const x: unknown = v[i];
      if (x === undefined) throw CANNOT;
      out[i] = copyPlain(x);
    }
    return out;
  }
  if (typeof v !== 'object' || Object.getPrototypeOf(v) !== Object.prototype || 'toJSON' in v) throw CANNOT;
  const out: NormObject = {};
  for (const k in v) {
    if (!Object.prototype.hasOwnProperty.call(v, k)) continue;
    if (k === '__proto__') throw CANNOT;
    const x = (v as NormObject)[k];
    if (x !== undefined) out[k] = copyPlain(x);
  }
  return out;
}

/** The encoder's string form of a scalar (scalarString). */
function scalarText(v: unknown): string {
  if (typeof v === 'string') return v;
  if (v === undefined || v === null) return '';
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return String(v);
  throw CANNOT;
}

/** The encoder's integer (toInt), refused past 2^53 where the 64-bit round trip may change it. */
function integer(v: unknown): number {
  let n: number;
  if (typeof v === 'number' && Number.isFinite(v)) n = Math.trunc(v);
  else if (typeof v === 'bigint') n = Number(v);
  else if (typeof v === 'string' && /^-?\d+$/.test(v)) n = Number(v);
  else if (v === undefined || v === null) n = 0;
  else throw CANNOT;
  if (!Number.isSafeInteger(n)) throw CANNOT;
  return n === 0 ? 0 : n;
}

function normScalar(type: string, v: unknown): unknown {
  switch (type) {
    case 'string':
      return wellFormed(scalarText(v));
    case 'bool':
      return v === true;
    case 'int32':
      return integer(v) | 0;
    case 'int64':
      return integer(v);
    case 'double':
      return typeof v === 'number' ? v : Number(v ?? 0);
    case 'bytes':
      return (typeof v === 'string' ? Buffer.from(v, 'base64') : v instanceof Uint8Array ? Buffer.from(v) : Buffer.alloc(0)).toString('base64');
    default:
      throw CANNOT;
  }
}

/** A string as UTF-8 gives it back: lone surrogates become U+FFFD. */
function wellFormed(s: string): string {
  return (s as string & { isWellFormed(): boolean }).isWellFormed() ? s : (s as string & { toWellFormed(): string }).toWellFormed();
}

function compareKeys(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
