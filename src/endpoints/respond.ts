/**
 * Writing answers: content negotiation (JSON, YAML, and the meta.k8s.io Table and PartialObjectMetadata
 * conversions), pretty printing, Warning headers, and errors as Status objects.
 */
import { yaml } from '../util/yaml.js';
import { StatusError, apiErrors } from '../registry/errors.js';
import { encodeKubernetesProtobuf } from '../registry/protobuf.js';
import { getAuditRecorder, type ApiResponse } from './http.js';

export type MediaType = 'application/json' | 'application/yaml' | 'application/vnd.kubernetes.protobuf' | 'application/vnd.orch.protobuf';
export const PROTOBUF: MediaType = 'application/vnd.kubernetes.protobuf';
/** The spec's spelling of Kubernetes' protobuf media type: the same bytes; an answer carries the spelling the client accepted. */
export const ORCH_PROTOBUF: MediaType = 'application/vnd.orch.protobuf';

export function isProtobuf(mediaType: string): boolean {
  return mediaType === PROTOBUF || mediaType === ORCH_PROTOBUF;
}
export type Conversion = 'Table' | 'PartialObjectMetadata' | 'PartialObjectMetadataList';

export interface Output {
  mediaType: MediaType;
  /** A meta.k8s.io conversion the client asked for (`;as=Table;g=meta.k8s.io;v=v1`). */
  as?: Conversion;
  /** Version of the conversion: v1 or v1beta1. */
  asVersion?: string;
  pretty: boolean;
}

export const SUPPORTED_MEDIA_TYPES = ['application/json', 'application/yaml', 'application/vnd.kubernetes.protobuf'];

interface AcceptEntry {
  type: string;
  params: Record<string, string>;
  q: number;
}

function parseAccept(header: string): AcceptEntry[] {
  const out: AcceptEntry[] = [];
  for (const part of header.split(',')) {
    const [type, ...rest] = part.split(';').map((s) => s.trim());
    if (!type) continue;
    const params: Record<string, string> = {};
    for (const p of rest) {
      const eq = p.indexOf('=');
      if (eq > 0) params[p.slice(0, eq).trim().toLowerCase()] = p.slice(eq + 1).trim().replace(/^"|"$/g, '');
    }
    const q = params.q !== undefined ? Number(params.q) : 1;
    out.push({ type: type.toLowerCase(), params, q: Number.isFinite(q) ? q : 0 });
  }
  return out.filter((e) => e.q > 0).sort((a, b) => b.q - a.q);
}

/**
 * Chooses the answer's form from the Accept header. `conversions` lists the meta.k8s.io forms this endpoint
 * can produce; an Accept that asks only for forms we cannot produce is a 406.
 */
export function negotiate(accept: string | undefined, pretty: boolean, conversions: readonly Conversion[] = []): Output {
  if (!accept || accept.trim() === '') return { mediaType: 'application/json', pretty };
  for (const e of parseAccept(accept)) {
    let mediaType: MediaType | undefined;
    if (e.type === 'application/json' || e.type === 'application/*' || e.type === '*/*') mediaType = 'application/json';
    else if (e.type === 'application/yaml') mediaType = 'application/yaml';
    if (!mediaType) continue;
    const as = e.params.as;
    if (as === undefined) {
      if (e.params.g !== undefined || e.params.v !== undefined) continue;
      return { mediaType, pretty };
    }
    if (e.params.g !== 'meta.k8s.io' || (e.params.v !== 'v1' && e.params.v !== 'v1beta1')) continue;
    if ((conversions as readonly string[]).includes(as)) return { mediaType, as: as as Conversion, asVersion: e.params.v, pretty };
  }
  throw apiErrors.notAcceptable(`only the following media types are accepted: ${SUPPORTED_MEDIA_TYPES.join(', ')}`);
}

/** Encodes a value for the chosen media type, as Kubernetes' serializers do (JSON ends with a newline). */
export function encode(value: unknown, out: Pick<Output, 'mediaType' | 'pretty'>): string | Buffer {
  if (isProtobuf(out.mediaType)) return encodeKubernetesProtobuf(value as object);
  if (out.mediaType === 'application/yaml') return yaml().stringify(value, { lineWidth: 0 });
  // Go's json.MarshalIndent output (pretty) has no final newline; the compact encoder's has one.
  return out.pretty ? JSON.stringify(value, null, 2) : JSON.stringify(value) + '\n';
}

export function setWarnings(res: ApiResponse, warnings: readonly string[]): void {
  if (warnings.length === 0 || res.headersSent) return;
  const unique = [...new Set(warnings)];
  const values = unique.map((w) => `299 - ${JSON.stringify(w.replace(/[\r\n]+/g, ' '))}`);
  (res as { setHeader(name: string, value: string | readonly string[]): unknown }).setHeader('Warning', values);
}

export function writeBody(res: ApiResponse, code: number, value: unknown, out: Pick<Output, 'mediaType' | 'pretty'>, method = 'GET'): void {
  getAuditRecorder(res)?.logResponseObject(value);
  if (out.mediaType === 'application/json' && !out.pretty) {
    const text: unknown = JSON.stringify(value);
    if (typeof text === 'string') return writeEncoded(res, code, compactJSONBytes(text), out.mediaType, method);
  }
  writeEncoded(res, code, encode(value, out), out.mediaType, method);
}

/**
 * The bytes of compact JSON text and its final newline, written straight into one buffer: `text + '\n'`
 * would be a second string, flattened (copied) before it is encoded.
 */
function compactJSONBytes(text: string): Buffer {
  const n = Buffer.byteLength(text);
  const bytes = Buffer.allocUnsafe(n + 1);
  bytes.write(text, 0, n, 'utf8');
  bytes[n] = 0x0a;
  return bytes;
}

/** Answers with a body already encoded for `mediaType`. */
export function writeEncoded(res: ApiResponse, code: number, body: string | Buffer, mediaType: MediaType, method = 'GET'): void {
  // Text is encoded once: its length and its bytes from one buffer.
  const bytes = typeof body === 'string' ? Buffer.from(body) : body;
  res.statusCode = code;
  res.setHeader('Content-Type', mediaType);
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Content-Length', bytes.length);
  if (method === 'HEAD') res.end();
  else res.end(bytes);
}

/** Answers an error: a StatusError as its Status; anything else as a 500 that shows no internals. */
export function writeError(res: ApiResponse, err: unknown, out: Pick<Output, 'mediaType' | 'pretty'>, log?: (m: string) => void): void {
  let status: StatusError;
  if (err instanceof StatusError) status = err;
  else {
    log?.(`internal error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    status = apiErrors.internal();
  }
  if (res.headersSent) {
    res.end();
    return;
  }
  if (status.status.details?.retryAfterSeconds) res.setHeader('Retry-After', String(status.status.details.retryAfterSeconds));
  writeBody(res, status.status.code, status.status, out);
}
