/**
 * The HTTP vocabulary shared by the endpoints, the filters and the server: requests and responses over
 * HTTP/1.1 or HTTP/2, handlers, and the per-request context filters fill in (the user) and handlers read.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';

/** A request as served over HTTP/1.1 or HTTP/2 (the compatibility API), or in-process. */
export type ApiRequest = IncomingMessage | Http2ServerRequest;
export type ApiResponse = ServerResponse | Http2ServerResponse;
/** A handler or a filter's result; a filter is `withX(next, deps): Handler`. */
export type Handler = (req: ApiRequest, res: ApiResponse) => void | Promise<void>;

/**
 * The rejection an async handler would give for a throw: handlers that are not async themselves (to make no
 * promise when they answer at once) catch what they throw and return this.
 */
export function asRejection(e: unknown): Promise<never> {
  return Promise.reject(e instanceof Error ? e : new Error(String(e)));
}

/** Whether an answer is to come later (a promise or another thenable). */
export function isPromiseLike<T>(v: T | PromiseLike<T>): v is PromiseLike<T> {
  return typeof (v as Partial<PromiseLike<T>> | null)?.then === 'function';
}

export interface UserInfo {
  name: string;
  uid?: string;
  groups: string[];
  extra?: Record<string, string[]>;
}

export const ANONYMOUS_USER = 'system:anonymous';
export const ALL_AUTHENTICATED = 'system:authenticated';
export const ALL_UNAUTHENTICATED = 'system:unauthenticated';

// ---- request context -------------------------------------------------------------------------------

/** Per-request values set by filters and read by later filters and handlers. Never shared between requests. */
export interface RequestContext {
  /** Set by withAuthentication before `next` runs. */
  user?: UserInfo;
  /** Set by the audit filter when the request's audit level is above None. */
  audit?: AuditRecorder;
}

/**
 * What handlers and later filters tell the request's audit event (Kubernetes' audit.LogRequestObject and
 * friends). Present only when the policy audits the request; each call is cheap when the level does not
 * need what it is given. Objects are read at once and may be changed by the caller afterwards.
 */
export interface AuditRecorder {
  /** The decoded body of a create or update: fills in the objectRef, and is recorded from level Request. */
  logRequestObject(obj: unknown): void;
  /** The body of a patch, recorded as is from level Request. */
  logRequestPatch(patch: Buffer): void;
  /** The object answered (a JSON Buffer is accepted): a Status becomes responseStatus; recorded at RequestResponse. */
  logResponseObject(obj: unknown): void;
  /** The user a request impersonates (impersonatedUser). */
  logImpersonatedUser(user: UserInfo): void;
  /** An annotation of the event (authorization decision, admission plugins). */
  addAnnotation(key: string, value: string): void;
}

/** The context is a property of the request under this symbol (cheaper than a WeakMap entry per request). */
const CONTEXT = Symbol('orch.requestContext');
type WithContext = { [CONTEXT]?: RequestContext };

/** The request's context, created empty on first use. */
export function requestContext(req: ApiRequest): RequestContext {
  let ctx = (req as WithContext)[CONTEXT];
  if (!ctx) {
    ctx = {};
    (req as WithContext)[CONTEXT] = ctx;
  }
  return ctx;
}

/** The authenticated user; undefined only outside (before) the authentication filter. */
export function getUser(req: ApiRequest): UserInfo | undefined {
  return (req as WithContext)[CONTEXT]?.user;
}

/** Records the request's user; for the authentication filter and for tests that bypass it. */
export function setUser(req: ApiRequest, user: UserInfo): void {
  requestContext(req).user = user;
}


const RESPONSE_AUDIT = Symbol('orch.responseAudit');
type WithAudit = { [RESPONSE_AUDIT]?: AuditRecorder };

/** Attaches the request's audit recorder to it and to its response; for the audit filter. */
export function setAuditRecorder(req: ApiRequest, res: ApiResponse, recorder: AuditRecorder): void {
  requestContext(req).audit = recorder;
  (res as WithAudit)[RESPONSE_AUDIT] = recorder;
}

/** The audit recorder of a request or of its response; undefined when the request is not audited. */
export function getAuditRecorder(r: ApiRequest | ApiResponse): AuditRecorder | undefined {
  return (r as WithAudit)[RESPONSE_AUDIT] ?? (r as WithContext)[CONTEXT]?.audit;
}
