/**
 * WithAuthorization, as Kubernetes': the authorizer decides on the request's user and request info, and the
 * decision and its reason become the audit annotations authorization.k8s.io/decision ("allow" or "forbid")
 * and authorization.k8s.io/reason. The modes of --authorization-mode are chained in src/filters/authz/.
 * A denial is Kubernetes' 403: responsewriters.Forbidden's message wrapped by errors.NewForbidden.
 */
import { asRejection, getAuditRecorder, getUser, isPromiseLike, type ApiRequest, type ApiResponse, type Handler, type UserInfo } from '../endpoints/http.js';
import type { AccessAttributes } from '../registry/kinds/authorization/attributes.js';
import { goQuote } from '../util/validation.js';
import { getRequestInfo, type RequestInfo } from './requestinfo.js';

export type Decision = 'allow' | 'deny' | 'noOpinion';

/** An evaluation `error` with a decision other than allow answers 500 (an authorizer could not decide). */
export interface AuthorizationDecision {
  decision: Decision;
  reason: string;
  error?: string;
}

export interface Authorizer {
  authorize(user: UserInfo | undefined, info: RequestInfo): AuthorizationDecision | Promise<AuthorizationDecision>;
}

/** --authorization-mode=AlwaysAllow. */
export const alwaysAllow: Authorizer = { authorize: () => ({ decision: 'allow', reason: '' }) };

export const DECISION_ANNOTATION = 'authorization.k8s.io/decision';
export const REASON_ANNOTATION = 'authorization.k8s.io/reason';

/**
 * The Forbidden message: `<resource>[.<group>] ["<name>"] is forbidden: User "<u>" cannot <verb> resource
 * "<resource>[/<subresource>]" in API group "<group>" (in the namespace "<ns>" | at the cluster scope)`, or
 * `forbidden: User "<u>" cannot <verb> path "<path>"`, then `: <reason>` when the authorizers gave one.
 */
export function forbiddenMessage(user: UserInfo | undefined, info: AccessAttributes, reason: string): string {
  const who = `User ${goQuote(user?.name ?? '')}`;
  let msg: string;
  if (!info.isResourceRequest) {
    msg = `${who} cannot ${info.verb} path ${goQuote(info.path)}`;
  } else {
    const resource = info.subresource ? `${info.resource}/${info.subresource}` : info.resource;
    msg = `${who} cannot ${info.verb} resource ${goQuote(resource)} in API group ${goQuote(info.apiGroup)}`;
    msg += info.namespace ? ` in the namespace ${goQuote(info.namespace)}` : ' at the cluster scope';
  }
  if (reason) msg += `: ${reason}`;
  const gr = info.isResourceRequest ? (info.apiGroup ? `${info.resource}.${info.apiGroup}` : info.resource) : '';
  if (gr === '') return `forbidden: ${msg}`;
  return info.name ? `${gr} ${goQuote(info.name)} is forbidden: ${msg}` : `${gr} is forbidden: ${msg}`;
}

/** Answers 403 with the Forbidden Status for `info` (also used by the impersonation filter). */
export function writeForbidden(req: ApiRequest, res: ApiResponse, user: UserInfo | undefined, info: AccessAttributes, reason: string): void {
  const resourceRequest = info.isResourceRequest;
  const status = {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: forbiddenMessage(user, info, reason),
    reason: 'Forbidden',
    details: {
      ...(resourceRequest && info.name ? { name: info.name } : {}),
      ...(resourceRequest && info.apiGroup ? { group: info.apiGroup } : {}),
      ...(resourceRequest && info.resource ? { kind: info.resource } : {}),
    },
    code: 403,
  };
  getAuditRecorder(req)?.logResponseObject(status);
  const body = JSON.stringify(status) + '\n';
  res.statusCode = 403;
  res.setHeader('Content-Type', 'application/json');
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Content-Length', Buffer.byteLength(body));
  res.end(body);
}

/**
 * responsewriters.InternalError: 500 in plain text, `Internal Server Error: "<request URI>": <error>`, with
 * `&`, `<` and `>` escaped as HTML entities (not a Status).
 */
export function writeInternalError(req: ApiRequest, res: ApiResponse, message: string): void {
  const sanitize = (t: string) => t.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  const body = `Internal Server Error: ${goQuote(sanitize(req.url ?? ''))}: ${message}`;
  res.statusCode = 500;
  res.setHeader('Content-Type', 'text/plain');
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Content-Length', Buffer.byteLength(body));
  res.end(body);
}

export function withAuthorization(next: Handler, deps: { authorizer: Authorizer }): Handler {
  const decide = (req: ApiRequest, res: ApiResponse, user: UserInfo | undefined, info: RequestInfo, d: AuthorizationDecision): void | Promise<void> => {
    const { decision, reason, error } = d;
    const audit = getAuditRecorder(req);
    if (decision === 'allow') {
      audit?.addAnnotation(DECISION_ANNOTATION, 'allow');
      audit?.addAnnotation(REASON_ANNOTATION, reason);
      return next(req, res);
    }
    if (error) {
      audit?.addAnnotation(REASON_ANNOTATION, 'internal error');
      return writeInternalError(req, res, error);
    }
    audit?.addAnnotation(DECISION_ANNOTATION, 'forbid');
    audit?.addAnnotation(REASON_ANNOTATION, reason);
    writeForbidden(req, res, user, info, reason);
  };
  // Not async itself: an authorizer that decides at once (AlwaysAllow) costs no promise; a throw still
  // comes out as a rejection.
  return (req, res) => {
    try {
      const user = getUser(req);
      const info = getRequestInfo(req);
      const d = deps.authorizer.authorize(user, info);
      if (isPromiseLike(d)) return Promise.resolve(d).then((r) => decide(req, res, user, info, r));
      return decide(req, res, user, info, d);
    } catch (e) {
      return asRejection(e);
    }
  };
}
