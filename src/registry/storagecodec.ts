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
import { decodeObject, encodeObject, hasProtobufMagic, kindMessage, ProtobufDecodeError } from '../util/protobuf.js';
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
