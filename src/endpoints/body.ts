/**
 * Reading request bodies: a size limit (413 past 3 MiB, as kube-apiserver) and the body's media type.
 */
import { apiErrors } from '../registry/errors.js';
import type { ApiRequest } from './http.js';

export const MAX_REQUEST_BODY_BYTES = 3 * 1024 * 1024;

export async function readBody(req: ApiRequest, limit = MAX_REQUEST_BODY_BYTES): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) {
    req.resume();
    throw apiErrors.requestEntityTooLarge(`limit is ${limit}`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) {
      req.resume();
      throw apiErrors.requestEntityTooLarge(`limit is ${limit}`);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** The media type of a body without parameters, lowercased ('' when absent). */
export function contentType(req: ApiRequest): string {
  const ct = req.headers['content-type'];
  return (Array.isArray(ct) ? ct[0] : ct)?.split(';')[0]?.trim().toLowerCase() ?? '';
}

/** The serialization of an object body: JSON (the default), YAML or Kubernetes protobuf; else a 415. */
export function bodyFormat(req: ApiRequest): 'json' | 'yaml' | 'protobuf' {
  const ct = contentType(req);
  if (ct === '' || ct === 'application/json' || ct === '*/*') return 'json';
  if (ct === 'application/yaml') return 'yaml';
  // Kubernetes' protobuf, also under the orch spelling of its media type.
  if (ct === 'application/vnd.kubernetes.protobuf' || ct === 'application/vnd.orch.protobuf') return 'protobuf';
  throw apiErrors.unsupportedMediaType(
    `the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf`,
  );
}
