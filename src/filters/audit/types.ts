/**
 * The audit vocabulary of Kubernetes' audit.k8s.io group: levels, stages and the event as the filter
 * builds it. Events handed to a backend are snapshots: the filter never changes one after handing it
 * over, so backends may keep them (batch buffers) without copying.
 */
import type { UserInfo } from '../../endpoints/http.js';

export type Level = 'None' | 'Metadata' | 'Request' | 'RequestResponse';
export type Stage = 'RequestReceived' | 'ResponseStarted' | 'ResponseComplete' | 'Panic';

export const LEVELS: readonly Level[] = ['None', 'Metadata', 'Request', 'RequestResponse'];
export const STAGES: readonly Stage[] = ['RequestReceived', 'ResponseStarted', 'ResponseComplete', 'Panic'];

const ORDER: Record<Level, number> = { None: 0, Metadata: 1, Request: 2, RequestResponse: 3 };

/** Whether `level` is `min` or above (None < Metadata < Request < RequestResponse). */
export function levelAtLeast(level: Level, min: Level): boolean {
  return ORDER[level] >= ORDER[min];
}

export interface ObjectReference {
  resource?: string;
  namespace?: string;
  name?: string;
  uid?: string;
  apiGroup?: string;
  apiVersion?: string;
  resourceVersion?: string;
  subresource?: string;
}

/** metav1.Status as kept in responseStatus: only the bounded fields. */
export interface ResponseStatus {
  status?: string;
  message?: string;
  reason?: string;
  details?: unknown;
  code?: number;
}

export interface AuditEvent {
  level: Level;
  auditID: string;
  stage: Stage;
  requestURI: string;
  verb: string;
  user: UserInfo | undefined;
  impersonatedUser?: UserInfo;
  sourceIPs: string[];
  userAgent: string;
  objectRef?: ObjectReference;
  responseStatus?: ResponseStatus;
  /** Serialized JSON (already encoded when recorded, because handlers go on to change the object). */
  requestObject?: string;
  responseObject?: string;
  /** Microseconds since the epoch. */
  requestReceivedTimestamp: number;
  stageTimestamp: number;
  annotations?: Record<string, string>;
  /**
   * Encodings kept with the event, not part of it. `memo` is shared by all the events of one request and
   * holds the JSON of the fields that stay the same through its stages; `encoded` is this event's own JSON
   * once made, so that truncation, a webhook and the log encode it once.
   */
  memo?: EventMemo;
  /**
   * The event's JSON with kind and apiVersion once made, the version it is in, and the event it was made
   * for (a copy made by spreading carries the fields but is not that event, so it encodes itself anew).
   */
  encoded?: string;
  encodedVersion?: EventVersion;
  encodedFor?: AuditEvent;
}

/** Per-request encodings shared by the request's events (see AuditEvent.memo). */
export interface EventMemo {
  /** "requestURI", "verb" and "user". */
  head?: string;
  /** "sourceIPs" and "userAgent". */
  client?: string;
}

/** The group versions events and policies may be written in. audit.orch.io is the documents' spelling. */
export const AUDIT_GROUP = 'audit.k8s.io';
export const AUDIT_GROUP_ALIAS = 'audit.orch.io';
export type EventVersion = 'v1' | 'v1beta1';

/**
 * Parses --audit-log-version / --audit-webhook-version: audit.k8s.io/v1 or /v1beta1 (audit.orch.io too).
 * Throws with kube-apiserver's message for anything else.
 */
export function parseEventVersion(text: string): EventVersion {
  const slash = text.indexOf('/');
  const group = slash < 0 ? '' : text.slice(0, slash);
  const version = slash < 0 ? text : text.slice(slash + 1);
  if ((group === AUDIT_GROUP || group === AUDIT_GROUP_ALIAS) && (version === 'v1' || version === 'v1beta1')) return version;
  throw new Error(`invalid group version, allowed versions are "[${AUDIT_GROUP}/v1 ${AUDIT_GROUP}/v1beta1]"`);
}

/**
 * A copy of `ev` with every field present (undefined when unset) in one order, without its own cached
 * encoding: events made this way share one shape, which keeps copying and encoding them fast.
 */
export function withoutEncoding(ev: AuditEvent): AuditEvent {
  return {
    level: ev.level,
    auditID: ev.auditID,
    stage: ev.stage,
    requestURI: ev.requestURI,
    verb: ev.verb,
    user: ev.user,
    impersonatedUser: ev.impersonatedUser,
    sourceIPs: ev.sourceIPs,
    userAgent: ev.userAgent,
    objectRef: ev.objectRef,
    responseStatus: ev.responseStatus,
    requestObject: ev.requestObject,
    responseObject: ev.responseObject,
    requestReceivedTimestamp: ev.requestReceivedTimestamp,
    stageTimestamp: ev.stageTimestamp,
    annotations: ev.annotations,
    memo: ev.memo,
    encoded: undefined,
    encodedVersion: undefined,
    encodedFor: undefined,
  };
}

/** An object reference with every field present (see withoutEncoding). */
export function objectReference(ref: ObjectReference): ObjectReference {
  return {
    resource: ref.resource,
    namespace: ref.namespace,
    name: ref.name,
    uid: ref.uid,
    apiGroup: ref.apiGroup,
    apiVersion: ref.apiVersion,
    resourceVersion: ref.resourceVersion,
    subresource: ref.subresource,
  };
}

/**
 * A copy of `ev` for a backend (which may keep it in a buffer, as Kubernetes' buffered backend keeps a deep
 * copy): the parts the filter changes in place later (annotations, objectRef, responseStatus) are copied.
 */
export function snapshot(ev: AuditEvent): AuditEvent {
  const copy = withoutEncoding(ev);
  if (ev.annotations) copy.annotations = { ...ev.annotations };
  if (ev.objectRef) copy.objectRef = objectReference(ev.objectRef);
  if (ev.responseStatus) copy.responseStatus = { ...ev.responseStatus };
  return copy;
}
