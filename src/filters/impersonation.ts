/**
 * WithImpersonation, as Kubernetes': Impersonate-User (a service-account user name becomes a ServiceAccount
 * request), Impersonate-Group (repeatable), Impersonate-Uid and Impersonate-Extra-<key> headers each need the
 * `impersonate` verb on users, groups, serviceaccounts, uids or userextras/<key>; then the request continues as
 * the impersonated user (with system:authenticated, or system:unauthenticated for system:anonymous), the
 * audit event records it, and the headers are removed. Runs after authentication and audit, before
 * max-in-flight and authorization.
 */
import { ALL_AUTHENTICATED, ALL_UNAUTHENTICATED, ANONYMOUS_USER, asRejection, getAuditRecorder, getUser, setUser, type Handler, type UserInfo } from '../endpoints/http.js';
import type { AccessAttributes, AccessAuthorizer } from '../registry/kinds/authorization/attributes.js';
import { writeForbidden, writeInternalError } from './authorization.js';

const USER_HEADER = 'impersonate-user';
const GROUP_HEADER = 'impersonate-group';
const UID_HEADER = 'impersonate-uid';
const EXTRA_PREFIX = 'impersonate-extra-';
const SA_PREFIX = 'system:serviceaccount:';

interface ImpersonationRequest {
  kind: 'User' | 'ServiceAccount' | 'Group' | 'UserExtra' | 'UID';
  namespace: string;
  name: string;
  apiVersion: string;
  /** The extra key (UserExtra). */
  fieldPath: string;
}

/** serviceaccount.SplitUsername: system:serviceaccount:<ns>:<name> with both parts valid. */
function splitServiceAccount(username: string): { namespace: string; name: string } | undefined {
  if (!username.startsWith(SA_PREFIX)) return undefined;
  const parts = username.slice(SA_PREFIX.length).split(':');
  if (parts.length !== 2 || parts[0] === '' || parts[1] === '') return undefined;
  return { namespace: parts[0]!, name: parts[1]! };
}

const headerValues = (v: string | string[] | undefined): string[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

function unescapeExtraKey(key: string): string {
  try {
    return decodeURIComponent(key);
  } catch {
    return key;
  }
}

/** Go's %v of a v1.ObjectReference. */
function refString(r: ImpersonationRequest): string {
  return `{${r.kind} ${r.namespace} ${r.name}  ${r.apiVersion}  ${r.fieldPath}}`;
}

/** Every header line by lowercased name, each value as sent (Node joins repeated headers with commas). */
function distinctHeaders(raw: readonly string[]): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (let i = 0; i + 1 < raw.length; i += 2) (out[raw[i]!.toLowerCase()] ??= []).push(raw[i + 1]!);
  return out;
}

/** buildImpersonationRequests: the requests in header order; throws when groups, extras or a uid come without a user. */
export function impersonationRequests(headers: Record<string, string[] | undefined>): ImpersonationRequest[] {
  const out: ImpersonationRequest[] = [];
  const userName = headerValues(headers[USER_HEADER])[0] ?? '';
  const base = { namespace: '', apiVersion: '', fieldPath: '' };
  if (userName !== '') {
    const sa = splitServiceAccount(userName);
    out.push(sa ? { ...base, kind: 'ServiceAccount', ...sa } : { ...base, kind: 'User', name: userName });
  }
  const groups = headerValues(headers[GROUP_HEADER]);
  for (const g of groups) out.push({ ...base, kind: 'Group', name: g });
  let hasExtra = false;
  for (const [name, value] of Object.entries(headers)) {
    if (!name.startsWith(EXTRA_PREFIX)) continue;
    hasExtra = true;
    const key = unescapeExtraKey(name.slice(EXTRA_PREFIX.length).toLowerCase());
    for (const v of headerValues(value)) out.push({ kind: 'UserExtra', namespace: '', name: v, apiVersion: 'authentication.k8s.io/v1', fieldPath: key });
  }
  const uid = headerValues(headers[UID_HEADER])[0] ?? '';
  if (uid !== '') out.push({ kind: 'UID', namespace: '', name: uid, apiVersion: 'authentication.k8s.io/v1', fieldPath: '' });
  if ((groups.length > 0 || hasExtra || uid !== '') && userName === '') {
    throw new Error(`requested [${out.map(refString).join(' ')}] without impersonating a user`);
  }
  return out;
}

function attributesFor(r: ImpersonationRequest): AccessAttributes {
  const a: AccessAttributes = {
    isResourceRequest: true,
    path: '',
    verb: 'impersonate',
    apiGroup: '',
    apiVersion: 'v1',
    namespace: r.namespace,
    resource: '',
    subresource: '',
    name: r.name,
  };
  switch (r.kind) {
    case 'ServiceAccount':
      return { ...a, resource: 'serviceaccounts' };
    case 'User':
      return { ...a, resource: 'users' };
    case 'Group':
      return { ...a, resource: 'groups' };
    case 'UserExtra':
      return { ...a, apiGroup: 'authentication.k8s.io', resource: 'userextras', subresource: r.fieldPath };
    case 'UID':
      return { ...a, apiGroup: 'authentication.k8s.io', resource: 'uids' };
  }
}

/** Whether the request has an Impersonate-Extra-<key> header. */
function hasExtraHeader(h: Record<string, unknown>): boolean {
  for (const k in h) if (k.startsWith(EXTRA_PREFIX)) return true;
  return false;
}

export function withImpersonation(next: Handler, deps: { authorizer: AccessAuthorizer }): Handler {
  const impersonating = impersonate(next, deps);
  // Not async itself: a request without impersonation headers costs these checks and no promise.
  return (req, res) => {
    const h = req.headers;
    if (h[USER_HEADER] === undefined && h[GROUP_HEADER] === undefined && h[UID_HEADER] === undefined && !hasExtraHeader(h)) {
      try {
        return next(req, res);
      } catch (e) {
        return asRejection(e);
      }
    }
    return impersonating(req, res);
  };
}

function impersonate(next: Handler, deps: { authorizer: AccessAuthorizer }): Handler {
  return async (req, res) => {
    const h = req.headers;
    // In-process requests may come without raw headers: then each joined header is one value.
    const distinct = Array.isArray(req.rawHeaders) ? distinctHeaders(req.rawHeaders) : Object.fromEntries(Object.entries(h).map(([k, v]) => [k, headerValues(v)]));
    let requests: ImpersonationRequest[];
    try {
      requests = impersonationRequests(distinct);
    } catch (err) {
      return writeInternalError(req, res, (err as Error).message);
    }
    if (requests.length === 0) return next(req, res);
    const requestor = getUser(req);
    if (!requestor) return writeInternalError(req, res, 'no user found for request');
    const groupsSpecified = headerValues(distinct[GROUP_HEADER]).length > 0;
    let username = '';
    let uid = '';
    const groups: string[] = [];
    const extra: Record<string, string[]> = {};
    for (const r of requests) {
      const attrs = attributesFor(r);
      if (r.kind === 'ServiceAccount') {
        username = `${SA_PREFIX}${r.namespace}:${r.name}`;
        if (!groupsSpecified) groups.push('system:serviceaccounts', `system:serviceaccounts:${r.namespace}`);
      } else if (r.kind === 'User') username = r.name;
      else if (r.kind === 'Group') groups.push(r.name);
      else if (r.kind === 'UserExtra') (extra[r.fieldPath] ??= []).push(r.name);
      else uid = r.name;
      const { decision, reason } = await deps.authorizer.authorize(requestor, attrs);
      if (decision !== 'allow') return writeForbidden(req, res, requestor, attrs, reason);
    }
    if (username !== ANONYMOUS_USER) {
      if (!groups.includes(ALL_AUTHENTICATED) && !groups.includes(ALL_UNAUTHENTICATED)) groups.push(ALL_AUTHENTICATED);
    } else if (!groups.includes(ALL_UNAUTHENTICATED)) {
      groups.push(ALL_UNAUTHENTICATED);
    }
    const user: UserInfo = { name: username, groups, extra, ...(uid ? { uid } : {}) };
    setUser(req, user);
    getAuditRecorder(req)?.logImpersonatedUser(user);
    for (const k of Object.keys(h)) if (k === USER_HEADER || k === GROUP_HEADER || k === UID_HEADER || k.startsWith(EXTRA_PREFIX)) delete h[k];
    return next(req, res);
  };
}
