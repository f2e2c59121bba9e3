/**
 * WithAuthorization, as Kubernetes': the authorizer decides on the request's user and request info, and the
 * decision and its reason become the audit annotations authorization.k8s.io/decision ("allow" or "forbid")
 * and authorization.k8s.io/reason. Only AlwaysAllow exists so far; other modes plug in as Authorizers.
 */
import { getAuditRecorder, getUser, type Handler, type UserInfo } from '../endpoints/http.js';
import { getRequestInfo, type RequestInfo } from './requestinfo.js';

export type Decision = 'allow' | 'deny' | 'noOpinion';

export interface Authorizer {
  authorize(user: UserInfo | undefined, info: RequestInfo): { decision: Decision; reason: string } | Promise<{ decision: Decision; reason: string }>;
}

/** --authorization-mode=AlwaysAllow. */
export const alwaysAllow: Authorizer = { authorize: () => ({ decision: 'allow', reason: '' }) };

export const DECISION_ANNOTATION = 'authorization.k8s.io/decision';
export const REASON_ANNOTATION = 'authorization.k8s.io/reason';

function forbiddenMessage(user: UserInfo | undefined, info: RequestInfo, reason: string): string {
  const who = `User ${JSON.stringify(user?.name ?? '')}`;
  let msg: string;
  if (!info.isResourceRequest) {
    msg = `forbidden: ${who} cannot ${info.verb} path ${JSON.stringify(info.path)}`;
  } else {
    const resource = info.subresource ? `${info.resource}/${info.subresource}` : info.resource;
    const subject = info.name ? `${resource} ${JSON.stringify(info.name)}` : resource;
    msg = `${subject} is forbidden: ${who} cannot ${info.verb} resource ${JSON.stringify(resource)} in API group ${JSON.stringify(info.apiGroup)}`;
    msg += info.namespace ? ` in the namespace ${JSON.stringify(info.namespace)}` : ' at the cluster scope';
  }
  return reason ? `${msg}: ${reason}` : msg;
}

export function withAuthorization(next: Handler, deps: { authorizer: Authorizer }): Handler {
  return async (req, res) => {
    const user = getUser(req);
    const info = getRequestInfo(req);
    const { decision, reason } = await deps.authorizer.authorize(user, info);
    const audit = getAuditRecorder(req);
    if (decision === 'allow') {
      audit?.addAnnotation(DECISION_ANNOTATION, 'allow');
      audit?.addAnnotation(REASON_ANNOTATION, reason);
      return next(req, res);
    }
    audit?.addAnnotation(DECISION_ANNOTATION, 'forbid');
    audit?.addAnnotation(REASON_ANNOTATION, reason);
    const status = {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: forbiddenMessage(user, info, reason),
      reason: 'Forbidden',
      details: { ...(info.name ? { name: info.name } : {}), ...(info.apiGroup ? { group: info.apiGroup } : {}), ...(info.resource ? { kind: info.resource } : {}) },
      code: 403,
    };
    audit?.logResponseObject(status);
    const body = JSON.stringify(status) + '\n';
    res.statusCode = 403;
    res.setHeader('Content-Type', 'application/json');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Content-Length', Buffer.byteLength(body));
    res.end(body);
  };
}
