/**
 * Kubernetes' protobuf encoding (application/vnd.kubernetes.protobuf) for the API: the codec of src/util/protobuf.ts
 * with its errors as Kubernetes' API errors. Which kinds have an encoding follows the kind declarations: every
 * served kind, its list kind and its subresources' bodies have a message (scripts/gen-protobuf.mjs generates them
 * from the declarations and Kubernetes' generated.proto), plus DeleteOptions, Status and WatchEvent in every
 * group version. metav1.Table has none (`+protobuf=false` in Kubernetes), so a Table is JSON or YAML only.
 */
import {
  PROTOBUF_MAGIC,
  ProtobufDecodeError,
  ProtobufEncodeError,
  canEncodeObject,
  decodeEnvelope as decodeEnvelopeUtil,
  decodeMessage as decodeMessageUtil,
  encodeMessage as encodeMessageUtil,
  encodeObject,
  encodeWatchEvent,
  kindMessage,
  messageDescriptor,
  messageNames,
  withTypeMeta,
  type MessageDescriptor,
  type ProtobufEnvelope,
} from '../util/protobuf.js';
import { apiErrors } from './errors.js';

/**
 * messageDescriptor(name): a message's descriptor ('meta.v1.ObjectMeta', 'core.v1.Namespace', ...), built on its
 * first use (the table has some 330 messages; a server uses a few dozen). messageNames(): every name.
 */
export { PROTOBUF_MAGIC, messageDescriptor, messageNames, type MessageDescriptor, type ProtobufEnvelope };

function wrapDecode<T>(what: string, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof ProtobufDecodeError) throw apiErrors.badRequest(`unable to decode protobuf ${what}: ${err.message}`);
    throw err;
  }
}

function wrapEncode<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof ProtobufEncodeError && err.unsupportedKind) throw apiErrors.notAcceptable(err.message);
    throw err;
  }
}

/** Decodes one message (not enveloped) into its JSON form. Throws a BadRequest StatusError when malformed. */
export function decodeMessage(typeName: string, data: Uint8Array): Record<string, unknown> {
  return wrapDecode(typeName, () => decodeMessageUtil(typeName, data));
}

/** Reads `k8s\0` + runtime.Unknown; a BadRequest when it is not one. */
export function decodeEnvelope(body: Uint8Array): ProtobufEnvelope {
  try {
    return decodeEnvelopeUtil(body);
  } catch (err) {
    if (err instanceof ProtobufDecodeError) {
      throw apiErrors.badRequest(err.message.startsWith('provided data') ? err.message : `unable to decode protobuf envelope: ${err.message}`);
    }
    throw err;
  }
}

/**
 * Decodes a Kubernetes protobuf body (`k8s\0` + runtime.Unknown) into the object's JSON form, with apiVersion
 * and kind set. `expect` fills in an envelope without a type, and a body of another version is refused.
 */
export function decodeKubernetesProtobuf(body: Uint8Array, expect?: { apiVersion: string; kind: string }): Record<string, unknown> {
  const env = decodeEnvelope(body);
  if (env.contentEncoding !== '') {
    throw apiErrors.badRequest(`unsupported protobuf contentEncoding ${JSON.stringify(env.contentEncoding)}`);
  }
  const apiVersion = env.apiVersion || expect?.apiVersion || '';
  const kind = env.kind || expect?.kind || '';
  if (kind === '') throw apiErrors.badRequest("Object 'Kind' is missing in protobuf body");
  if (apiVersion === '') throw apiErrors.badRequest("Object 'apiVersion' is missing in protobuf body");
  const message = kindMessage(apiVersion, kind);
  if (!message) {
    throw apiErrors.badRequest(
      `no kind "${kind}" is registered for version "${apiVersion}" in scheme "k8s.io/kubernetes/pkg/api/legacyscheme/scheme.go:30"`,
    );
  }
  if (expect && expect.apiVersion !== apiVersion && kind !== 'DeleteOptions') {
    throw apiErrors.badRequest(`the API version in the data (${apiVersion}) does not match the expected API version (${expect.apiVersion})`);
  }
  if (expect && expect.kind !== kind) {
    throw apiErrors.badRequest(`the object provided is unrecognized (must be of type ${expect.kind}): ${kind}`);
  }
  return withTypeMeta(apiVersion, kind, decodeMessage(message, env.raw));
}

/** Encodes one JSON value as the (not enveloped) message `typeName`. */
export function encodeMessage(typeName: string, obj: unknown): Buffer {
  return encodeMessageUtil(typeName, obj);
}

/** Whether `kind` (at `apiVersion`) can be written as protobuf. */
export function canEncodeProtobuf(apiVersion: string, kind: string): boolean {
  return canEncodeObject(apiVersion, kind);
}

/**
 * Encodes a JSON object (with apiVersion and kind) as a Kubernetes protobuf body: `k8s\0` + runtime.Unknown.
 * A kind without a message is a 406 NotAcceptable StatusError.
 */
export function encodeKubernetesProtobuf(obj: object): Buffer {
  return wrapEncode(() => encodeObject(obj));
}

/** One length-prefixed WatchEvent frame of a protobuf watch stream. */
export function encodeWatchEventProtobuf(type: string, obj: object): Buffer {
  return wrapEncode(() => encodeWatchEvent(type, obj));
}
