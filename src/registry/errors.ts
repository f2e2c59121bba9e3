/**
 * API errors: a StatusError carries the Kubernetes Status body the client receives. Registry code raises
 * them with the constructors below (as apimachinery's `errors.NewNotFound` and friends); storage errors are
 * translated here, once, by `fromStorageError`.
 */
import { StorageError } from '../storage/errors.js';
import type { FieldError } from '../util/validation.js';

export interface StatusCause {
  reason?: string;
  message?: string;
  field?: string;
}

export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  uid?: string;
  causes?: StatusCause[];
  retryAfterSeconds?: number;
}

/** A metav1.Status object. */
export interface Status {
  kind: 'Status';
  apiVersion: 'v1';
  metadata: { resourceVersion?: string; continue?: string; selfLink?: string; remainingItemCount?: number };
  status: 'Success' | 'Failure';
  message?: string;
  reason?: string;
  details?: StatusDetails;
  code: number;
}

export type StatusReason =
  | 'BadRequest'
  | 'Unauthorized'
  | 'Forbidden'
  | 'NotFound'
  | 'AlreadyExists'
  | 'Conflict'
  | 'Gone'
  | 'Expired'
  | 'Invalid'
  | 'MethodNotAllowed'
  | 'NotAcceptable'
  | 'RequestEntityTooLarge'
  | 'UnsupportedMediaType'
  | 'TooManyRequests'
  | 'InternalError'
  | 'Timeout'
  | 'ServerTimeout'
  | 'ServiceUnavailable'
  | '';

/** The group and plural resource an error is about, as apimachinery's GroupResource. */
export interface GroupResource {
  group: string;
  resource: string;
}

const grString = (gr: GroupResource) => (gr.group ? `${gr.resource}.${gr.group}` : gr.resource);

export class StatusError extends Error {
  override readonly name = 'StatusError';
  constructor(readonly status: Status) {
    super(status.message ?? status.reason ?? `status ${status.code}`);
  }
  get code(): number {
    return this.status.code;
  }
  get reason(): string {
    return this.status.reason ?? '';
  }
}

export function isStatusError(err: unknown, reason?: StatusReason): err is StatusError {
  return err instanceof StatusError && (reason === undefined || err.status.reason === reason);
}

/** Status details as Go serializes them: empty strings and absent values are left out (omitempty). */
function compact(details: StatusDetails): StatusDetails {
  const out: StatusDetails = {};
  for (const [k, v] of Object.entries(details) as [keyof StatusDetails, unknown][]) {
    if (v !== undefined && v !== '') (out as Record<string, unknown>)[k] = v;
  }
  return out;
}

function failure(code: number, reason: StatusReason, message: string, details?: StatusDetails): StatusError {
  const status: Status = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, code };
  if (reason !== '') status.reason = reason;
  if (details !== undefined) status.details = compact(details);
  return new StatusError(status);
}

export const apiErrors = {
  notFound: (gr: GroupResource, name: string) =>
    failure(404, 'NotFound', `${grString(gr)} "${name}" not found`, { name, group: gr.group, kind: gr.resource }),
  alreadyExists: (gr: GroupResource, name: string) =>
    failure(409, 'AlreadyExists', `${grString(gr)} "${name}" already exists`, { name, group: gr.group, kind: gr.resource }),
  /** A conflicting write (stale resourceVersion, failed precondition). */
  conflict: (gr: GroupResource, name: string, reason: string) =>
    failure(409, 'Conflict', `Operation cannot be fulfilled on ${grString(gr)} "${name}": ${reason}`, {
      name,
      group: gr.group,
      kind: gr.resource,
    }),
  /** 422 with one cause per field error, as apimachinery's NewInvalid. */
  invalid: (group: string, kind: string, name: string, errs: readonly FieldError[]) => {
    const causes = errs.map((e) => ({ reason: e.type, message: e.errorBody(), field: e.field }));
    const aggregate =
      errs.length === 1 ? errs[0]!.toString() : `[${errs.map((e) => e.toString()).join(', ')}]`;
    return failure(422, 'Invalid', `${kind}${group ? '.' + group : ''} "${name}" is invalid: ${aggregate}`, {
      name,
      group,
      kind,
      causes,
    });
  },
  badRequest: (message: string) => failure(400, 'BadRequest', message),
  forbidden: (gr: GroupResource, name: string, message: string) =>
    failure(
      403,
      'Forbidden',
      name ? `${grString(gr)} "${name}" is forbidden: ${message}` : `${grString(gr)} is forbidden: ${message}`,
      { name: name || undefined, group: gr.group, kind: gr.resource },
    ),
  methodNotSupported: (gr: GroupResource, action: string) =>
    failure(405, 'MethodNotAllowed', `${action} is not supported on resources of kind "${grString(gr)}"`, {
      group: gr.group,
      kind: gr.resource,
    }),
  notAcceptable: (message: string) => failure(406, 'NotAcceptable', message),
  unsupportedMediaType: (message: string) => failure(415, 'UnsupportedMediaType', message),
  requestEntityTooLarge: (message: string) => failure(413, 'RequestEntityTooLarge', `Request entity too large: ${message}`),
  /** 410 Expired: a continue token or list resourceVersion older than the compacted history. */
  expired: (message: string) => failure(410, 'Expired', message),
  /** 410 Gone: a watch from a resourceVersion older than the compacted history. */
  gone: (message: string) => failure(410, 'Gone', message),
  tooManyRequests: (message: string, retryAfterSeconds: number) =>
    failure(429, 'TooManyRequests', message, { retryAfterSeconds }),
  timeout: (message: string, retryAfterSeconds = 0) =>
    failure(504, 'Timeout', message, retryAfterSeconds ? { retryAfterSeconds } : {}),
  serviceUnavailable: (message: string) => failure(503, 'ServiceUnavailable', message),
  /** 500 without internals: the message is the generic one unless a safe one is given. */
  internal: (message = 'an error on the server has prevented the request from succeeding') =>
    failure(500, 'InternalError', `Internal error occurred: ${message}`, { causes: [{ message }] }),
};

/** Translates a storage failure into the Status a client gets; other errors pass through unchanged. */
export function fromStorageError(err: unknown, gr: GroupResource, name: string): unknown {
  if (!(err instanceof StorageError)) return err;
  switch (err.code) {
    case 'NotFound':
      return apiErrors.notFound(gr, name);
    case 'KeyExists':
      return apiErrors.alreadyExists(gr, name);
    case 'Conflict':
      return apiErrors.conflict(gr, name, 'the object has been modified; please apply your changes to the latest version and try again');
    case 'Compacted':
      return apiErrors.expired(`The resourceVersion for the provided list is too old.`);
    case 'FutureRevision':
      return apiErrors.timeout(`Too large resource version: ${err.message}`, 1);
    case 'Unavailable':
      return apiErrors.serviceUnavailable(`storage is unavailable: please retry`);
    case 'Internal':
      return apiErrors.internal(err.message);
    default:
      return apiErrors.internal();
  }
}
