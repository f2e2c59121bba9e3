/**
 * The audit filters, as Kubernetes' WithAuditID, WithAudit and WithFailedAuthenticationAudit:
 *
 * - withAuditID (outermost): every request gets an audit ID, the client's Audit-ID header when it sent one,
 *   echoed in the Audit-ID response header, and its received timestamp;
 * - withAudit (inside authentication): the policy decides the request's level; above None the event goes
 *   to the backend at RequestReceived, ResponseStarted (long-running requests, when the headers go out),
 *   ResponseComplete (when the handler ends the response: the response is held until the backend has the
 *   event, which is what the blocking modes promise) and Panic (the handler threw). A blocking-strict
 *   backend that cannot take the RequestReceived event fails the request with 500.
 * - withFailedAuthenticationAudit (around authentication): a 401 is audited as a ResponseStarted event.
 *
 * Handlers add request and response objects and annotations through the AuditRecorder the filter attaches
 * to the request (getAuditRecorder), which does nothing costly unless the level asks for it.
 */
import { randomUUID } from 'node:crypto';
import { isIP } from 'node:net';
import { yaml } from '../../util/yaml.js';
import { getUser, setAuditRecorder, type ApiRequest, type ApiResponse, type AuditRecorder, type Handler, type UserInfo } from '../../endpoints/http.js';
import { writeHttpError } from '../httperror.js';
import { getRequestInfo, type LongRunningCheck, type RequestInfo } from '../requestinfo.js';
import type { Backend } from './backend.js';
import type { AuditMetrics } from './metrics.js';
import type { PolicyEvaluator, RequestAuditConfig } from './policy.js';
import { levelAtLeast, objectReference, snapshot, type AuditEvent, type Level, type ResponseStatus } from './types.js';

export const AUDIT_ID_HEADER = 'Audit-ID';
const MAX_USER_AGENT_LENGTH = 1024;

// ---- audit ID ------------------------------------------------------------------------------------------

interface Received {
  auditID: string;
  /** Microseconds since the epoch. */
  at: number;
}

/** On the request under a symbol (cheaper than a WeakMap entry per request). */
const RECEIVED = Symbol('orch.auditReceived');

function nowMicros(): number {
  return Math.floor((performance.timeOrigin + performance.now()) * 1000);
}

function header(req: ApiRequest, name: string): string {
  const v = req.headers[name];
  return (Array.isArray(v) ? v[0] : v) ?? '';
}

/** The request's audit ID (set by withAuditID; made up on first use for requests that bypassed it). */
export function getAuditID(req: ApiRequest): string {
  return receivedOf(req).auditID;
}

function receivedOf(req: ApiRequest): Received {
  let r = (req as { [RECEIVED]?: Received })[RECEIVED];
  if (!r) {
    r = { auditID: header(req, 'audit-id') || randomUUID(), at: nowMicros() };
    (req as { [RECEIVED]?: Received })[RECEIVED] = r;
  }
  return r;
}

/** Outermost filter: the audit ID (the client's Audit-ID header as is, else a new UUID), echoed in the response. */
export function withAuditID(next: Handler): Handler {
  return (req, res) => {
    const r = receivedOf(req);
    if (!res.hasHeader(AUDIT_ID_HEADER)) res.setHeader(AUDIT_ID_HEADER, r.auditID);
    return next(req, res);
  };
}

// ---- the event -----------------------------------------------------------------------------------------

function normalizeIP(text: string): string | undefined {
  const t = text.trim().replace(/^\[|\]$/g, '');
  if (isIP(t) === 0) return undefined;
  return t.startsWith('::ffff:') && isIP(t.slice(7)) === 4 ? t.slice(7) : t.toLowerCase();
}

/** The peer's address as SourceIPs has it (an IPv4-mapped IPv6 address as IPv4). */
function peerIP(req: ApiRequest): string | undefined {
  const remote = (req.socket as { remoteAddress?: string } | undefined)?.remoteAddress;
  if (remote === undefined || remote === '') return undefined;
  // Node's socket addresses are valid IPs already: only the plain common case skips normalizing.
  if (remote === '127.0.0.1' || remote === '::1') return remote;
  return normalizeIP(remote);
}

/** Kubernetes' utilnet.SourceIPs: X-Forwarded-For entries, X-Real-Ip, then the peer (not repeated). */
export function sourceIPs(req: ApiRequest): string[] {
  const forwarded = header(req, 'x-forwarded-for');
  const realHeader = header(req, 'x-real-ip');
  const remote = peerIP(req);
  if (forwarded === '' && realHeader === '') return remote ? [remote] : [];
  const ips: string[] = [];
  if (forwarded !== '') {
    for (const part of forwarded.split(',')) {
      const ip = normalizeIP(part);
      if (ip) ips.push(ip);
    }
  }
  const real = normalizeIP(realHeader);
  if (real && !ips.includes(real)) ips.push(real);
  if (remote && ips[ips.length - 1] !== remote) ips.push(remote);
  return ips;
}

function userAgent(req: ApiRequest): string {
  const ua = header(req, 'user-agent');
  return ua.length > MAX_USER_AGENT_LENGTH ? ua.slice(0, MAX_USER_AGENT_LENGTH) + '...TRUNCATED' : ua;
}

function newEvent(req: ApiRequest, info: RequestInfo, user: UserInfo | undefined, level: Level): AuditEvent {
  const r = receivedOf(req);
  // Every field present, in withoutEncoding's order: all events share one shape.
  return {
    level,
    auditID: r.auditID,
    stage: 'RequestReceived',
    requestURI: req.url ?? '/',
    verb: info.verb,
    user,
    impersonatedUser: undefined,
    sourceIPs: sourceIPs(req),
    userAgent: userAgent(req),
    objectRef: info.isResourceRequest
      ? {
          resource: info.resource,
          namespace: info.namespace,
          name: info.name,
          uid: undefined,
          apiGroup: info.apiGroup,
          apiVersion: info.apiVersion,
          resourceVersion: undefined,
          subresource: info.subresource,
        }
      : undefined,
    responseStatus: undefined,
    requestObject: undefined,
    responseObject: undefined,
    requestReceivedTimestamp: r.at,
    stageTimestamp: r.at,
    annotations: undefined,
    memo: {},
    encoded: undefined,
    encodedVersion: undefined,
    encodedFor: undefined,
  };
}

// ---- the recorder --------------------------------------------------------------------------------------

type Obj = Record<string, any>;

function isObject(v: unknown): v is Obj {
  return v !== null && typeof v === 'object' && !Array.isArray(v) && !Buffer.isBuffer(v);
}

function stripMeta(o: unknown): unknown {
  if (!isObject(o) || !isObject(o.metadata) || o.metadata.managedFields === undefined) return o;
  const { managedFields: _drop, ...metadata } = o.metadata;
  return { ...o, metadata };
}

/** A copy without metadata.managedFields (of the object, of a list's items, of a Table's row objects). */
function withoutManagedFields(o: Obj): Obj {
  let out = stripMeta(o) as Obj;
  if (Array.isArray(out.items)) out = { ...out, items: out.items.map(stripMeta) };
  if (out.kind === 'Table' && Array.isArray(out.rows)) {
    out = { ...out, rows: out.rows.map((r: unknown) => (isObject(r) && r.object !== undefined ? { ...r, object: stripMeta(r.object) } : r)) };
  }
  return out;
}

class EventRecorder implements AuditRecorder {
  /** Set once the event's last stage is with the backend, which may keep the event itself: no more changes. */
  closed = false;

  constructor(
    private readonly ev: AuditEvent,
    private readonly config: RequestAuditConfig,
  ) {}

  private encode(obj: Obj): string {
    return JSON.stringify(this.config.omitManagedFields ? withoutManagedFields(obj) : obj);
  }

  logRequestObject(obj: unknown): void {
    if (this.closed) return;
    if (!isObject(obj)) return;
    const ref = (this.ev.objectRef ??= objectReference({}));
    const meta = isObject(obj.metadata) ? obj.metadata : undefined;
    if (meta) {
      if (!ref.namespace && typeof meta.namespace === 'string') ref.namespace = meta.namespace;
      if (!ref.name && typeof meta.name === 'string') ref.name = meta.name;
      if (!ref.uid && typeof meta.uid === 'string') ref.uid = meta.uid;
      if (!ref.resourceVersion && typeof meta.resourceVersion === 'string') ref.resourceVersion = meta.resourceVersion;
    }
    if (levelAtLeast(this.ev.level, 'Request')) this.ev.requestObject = this.encode(obj);
  }

  logRequestPatch(patch: Buffer): void {
    if (this.closed) return;
    if (!levelAtLeast(this.ev.level, 'Request')) return;
    const text = patch.toString('utf8');
    try {
      this.ev.requestObject = JSON.stringify(JSON.parse(text));
    } catch {
      // An apply patch in YAML: recorded as the JSON it stands for.
      try {
        this.ev.requestObject = JSON.stringify(yaml().parse(text));
      } catch {
        this.ev.requestObject = JSON.stringify(text);
      }
    }
  }

  logResponseObject(obj: unknown): void {
    if (this.closed) return;
    if (Buffer.isBuffer(obj)) {
      if (!levelAtLeast(this.ev.level, 'RequestResponse')) return;
      const text = obj.toString('utf8').trim();
      this.ev.responseObject = this.config.omitManagedFields ? this.encode(JSON.parse(text) as Obj) : text;
      return;
    }
    if (!isObject(obj)) return;
    if (obj.kind === 'Status' && (obj.apiVersion === 'v1' || obj.apiVersion === undefined)) {
      const s: ResponseStatus = {};
      if (obj.status) s.status = obj.status;
      if (obj.message) s.message = obj.message;
      if (obj.reason) s.reason = obj.reason;
      if (obj.details !== undefined) s.details = obj.details;
      if (obj.code) s.code = obj.code;
      this.ev.responseStatus = s;
    }
    if (levelAtLeast(this.ev.level, 'RequestResponse')) this.ev.responseObject = this.encode(obj);
  }

  logImpersonatedUser(user: UserInfo): void {
    if (this.closed) return;
    this.ev.impersonatedUser = { ...user, groups: [...user.groups] };
  }

  addAnnotation(key: string, value: string): void {
    if (this.closed) return;
    const a = (this.ev.annotations ??= {});
    // As Kubernetes: the first value set wins.
    if (!(key in a)) a[key] = value;
  }
}

// ---- the filter ----------------------------------------------------------------------------------------

export interface AuditDeps {
  policy: PolicyEvaluator;
  backend: Backend;
  metrics: AuditMetrics;
  longRunning: LongRunningCheck;
}

const FAILED_TO_STORE = 'failed to store audit event';

/**
 * Hands the event at its current stage to the backend unless the stage is omitted; true/false/Promise as the
 * backend answers. Earlier stages hand a copy (the event goes on changing); the last stage (`last`) hands the
 * event itself, which its recorder no longer changes.
 */
function processEvent(ev: AuditEvent, omit: readonly string[], deps: Pick<AuditDeps, 'backend' | 'metrics'>, last = false): boolean | Promise<boolean> {
  if (omit.length > 0 && omit.includes(ev.stage)) return true;
  ev.stageTimestamp = ev.stage === 'RequestReceived' ? ev.requestReceivedTimestamp : nowMicros();
  deps.metrics.event();
  try {
    return deps.backend.processEvents([last ? ev : snapshot(ev)]);
  } catch {
    return false;
  }
}

type End = (...args: unknown[]) => unknown;
type WriteHead = (...args: unknown[]) => unknown;

/**
 * Watches the response: its end, which is held until the ResponseComplete event is with the backend, and
 * (only when `onStart` is given: long-running requests) the status code when the headers go out.
 */
function watchResponse(res: ApiResponse, onStart: ((code: number) => void) | undefined, onEnd: () => boolean | Promise<boolean> | undefined): void {
  const r = res as unknown as { end: End; writeHead: WriteHead };
  const end = r.end;
  let ended = false;
  if (onStart) {
    const writeHead = r.writeHead;
    r.writeHead = function (this: unknown, ...args: unknown[]) {
      onStart(typeof args[0] === 'number' ? args[0] : res.statusCode);
      return writeHead.apply(this, args);
    };
  }
  r.end = function (this: unknown, ...args: unknown[]) {
    if (ended) return end.apply(this, args);
    ended = true;
    const pending = onEnd();
    if (pending instanceof Promise) {
      void pending.then(() => end.apply(res, args));
      return res;
    }
    return end.apply(this, args);
  };
}

export function withAudit(next: Handler, deps: AuditDeps): Handler {
  return async (req, res) => {
    const info = getRequestInfo(req);
    const config = deps.policy({ user: getUser(req), info });
    deps.metrics.level(config.level);
    if (config.level === 'None') return next(req, res);
    const ev = newEvent(req, info, getUser(req), config.level);
    const omit = config.omitStages;

    let ok = processEvent(ev, omit, deps);
    if (ok instanceof Promise) ok = await ok;
    if (!ok) {
      deps.metrics.rejected();
      return writeHttpError(res, 500, `Internal Server Error: ${JSON.stringify(req.url ?? '/')}: ${FAILED_TO_STORE}`);
    }

    const recorder = new EventRecorder(ev, config);
    setAuditRecorder(req, res, recorder);
    const longRunning = deps.longRunning(req, info);
    let started = false;
    let finished = false;
    const start = (code: number): void => {
      if (started) return;
      started = true;
      (ev.responseStatus ??= {}).code = code;
      ev.stage = 'ResponseStarted';
      if (longRunning) void processEvent(ev, omit, deps);
    };
    const complete = (): boolean | Promise<boolean> => {
      finished = true;
      recorder.closed = true;
      ev.stage = 'ResponseComplete';
      return processEvent(ev, omit, deps, true);
    };
    watchResponse(
      res,
      longRunning ? start : undefined,
      () => {
        if (finished) return undefined;
        start(res.statusCode);
        return complete();
      },
    );
    try {
      await next(req, res);
    } catch (e) {
      if (!finished) {
        finished = true;
        recorder.closed = true;
        ev.stage = 'Panic';
        ev.responseStatus = { code: 500, status: 'Failure', reason: 'InternalError', message: `APIServer panic'd: ${e instanceof Error ? e.message : String(e)}` };
        void processEvent(ev, omit, deps, true);
      }
      throw e;
    }
    if (!finished) {
      // The handler returned without ending the response (the client went away): as Kubernetes, a faked status.
      const faked: ResponseStatus = { code: 200, status: 'Success', message: 'Connection closed early' };
      if (!ev.responseStatus && longRunning) {
        ev.responseStatus = faked;
        ev.stage = 'ResponseStarted';
        void processEvent(ev, omit, deps);
      }
      ev.responseStatus ??= faked;
      await complete();
    }
  };
}

/** Kubernetes' getAuthMethods: what a request that failed authentication tried. */
function authMethods(req: ApiRequest): string {
  const methods: string[] = [];
  const auth = header(req, 'authorization').trim();
  if (/^basic /i.test(auth)) methods.push('basic');
  const parts = auth.split(' ');
  if (parts.length > 1 && parts[0]!.toLowerCase() === 'bearer') methods.push('bearer');
  const q = (req.url ?? '').indexOf('?');
  if (q >= 0 && (new URLSearchParams((req.url ?? '').slice(q + 1)).get('access_token') ?? '').trim() !== '') methods.push('access_token');
  const socket = req.socket as { getPeerCertificate?: () => object } | undefined;
  if (typeof socket?.getPeerCertificate === 'function' && Object.keys(socket.getPeerCertificate()).length > 0) methods.push('x509');
  return methods.length > 0 ? `Authentication failed, attempted: ${methods.join(', ')}` : 'Authentication failed, no credentials provided';
}

/** Around authentication: a request answered 401 before any user was set is audited (ResponseStarted). */
export function withFailedAuthenticationAudit(next: Handler, deps: Omit<AuditDeps, 'longRunning'>): Handler {
  return (req, res) => {
    watchResponse(
      res,
      undefined,
      () => {
        if (res.statusCode !== 401 || getUser(req) !== undefined) return undefined;
        const info = getRequestInfo(req);
        const config = deps.policy({ user: undefined, info });
        deps.metrics.level(config.level);
        if (config.level === 'None') return undefined;
        const ev = newEvent(req, info, undefined, config.level);
        ev.stage = 'ResponseStarted';
        ev.responseStatus = { message: authMethods(req), code: 401 };
        return processEvent(ev, config.omitStages, deps, true);
      },
    );
    return next(req, res);
  };
}
