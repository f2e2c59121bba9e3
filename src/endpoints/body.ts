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
  if (req.readableEnded) return Buffer.alloc(0);
  // Read through events rather than an async iterator (fewer allocations per request); a stream that closes
  // or fails before its end rejects, as iterating it would.
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        done();
        req.resume();
        reject(apiErrors.requestEntityTooLarge(`limit is ${limit}`));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      done();
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    };
    const onError = (err: Error) => {
      done();
      reject(err);
    };
    const onClose = () => {
      done();
      reject(Object.assign(new Error('Premature close'), { code: 'ERR_STREAM_PREMATURE_CLOSE' }));
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}

/** The media type of a body without parameters, lowercased ('' when absent). */
export function contentType(req: ApiRequest): string {
  const ct = req.headers['content-type'];
  const value = Array.isArray(ct) ? ct[0] : ct;
  if (value === undefined) return '';
  const semi = value.indexOf(';');
  return (semi < 0 ? value : value.slice(0, semi)).trim().toLowerCase();
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
