/**
 * The API server as a value: createApiServer(config) loads certificates and credentials, builds the handler
 * chain and an HTTP/2 + HTTP/1.1 TLS listener; start() listens, stop() shuts down as kube-apiserver does
 * (readyz fails at once, the listener closes after the shutdown delay, in-flight requests drain). Later
 * layers add routes through `mux` and health checks through addHealthCheck.
 */
import { X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createSecureServer, type Http2SecureServer, type SecureServerOptions, type ServerHttp2Session } from 'node:http2';
import { isIPv6, type AddressInfo, type ListenOptions, type Socket } from 'node:net';
import { ServerResponse, type IncomingMessage } from 'node:http';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import type { TLSSocket } from 'node:tls';
import {
  clientCertAuthenticator,
  loadTokenFile,
  unionAuthenticator,
  withAuthentication,
  type ApiRequest,
  type ApiResponse,
  type Authenticator,
  type Handler,
} from '../filters/authn.js';
import { requestHeaderAuthenticator, type RequestHeaderConfig } from '../filters/authn/requestheader.js';
import { webSocketProtocolAuthenticator } from '../filters/authn/websocket.js';
import { audienceAgnostic, bearerTokenAuthenticator, tokenReviewer, tokenTableAuthenticator, tokenUnion, type TokenAuthenticator } from '../filters/authn/token.js';
import type { TokenReviewer } from '../registry/kinds/authentication/tokenreview.js';
import { withCORS, compileCorsOrigins } from '../filters/cors.js';
import { withProbabilisticGoaway } from '../filters/goaway.js';
import { validateHSTSDirectives, withHSTS } from '../filters/hsts.js';
import { withMaxInFlightLimit } from '../filters/maxinflight.js';
import { FlowControl, withPriorityAndFairness } from '../filters/apf/index.js';
import { bindFlowControlMetrics } from './apf-bootstrap.js';
import { isLongRunning, withRequestInfo, type LongRunningCheck } from '../filters/requestinfo.js';
import { RequestWaitGroup, withRetryAfter, withWaitGroup } from '../filters/shutdown.js';
import { withRequestDeadline, withTimeoutForNonLongRunningRequests } from '../filters/timeout.js';
import { alwaysAllow, withAuthorization, type Authorizer } from '../filters/authorization.js';
import { withImpersonation } from '../filters/impersonation.js';
import { withAudit, withAuditID, withFailedAuthenticationAudit, type AuditConfig, type AuditDeps } from '../filters/audit/index.js';
import { buildAudit, type ServerAudit } from './audit.js';
import { getAuditRecorder } from '../endpoints/http.js';
import { registerUpgrade } from '../endpoints/streaming.js';
import { recordTermination, withRequestMetrics, type RequestMetricsSink } from '../filters/metrics.js';
import { withCompression, withConnectionThrottle } from '../filters/throttle.js';
import { withHTTPLogging } from '../filters/httplog.js';
import { withTracing, type RequestTracer } from '../filters/tracing.js';
import { createTracer, loadTracingConfig, type ServerTracer } from './tracing.js';
import type { Tracer } from '../util/tracing.js';
import { createLogger, loggerFromFunction, type Logger } from '../util/log.js';
import { COMPAT_MAJOR, COMPAT_MINOR } from '../util/version.js';
import { ServerMetrics, type MetricsConfig } from './metrics.js';
import { installDebugFlags, installProfiling } from './profiling.js';
import { ensureServingCert, splitPemCertificates } from './certs.js';
import { loadSniCertificates, sniCallback, tlsCiphers, tlsMinVersion } from './tls.js';

export interface ServerConfig {
  /** --bind-address; default '0.0.0.0'. */
  bindAddress?: string;
  /** --secure-port; 0 picks a free port. */
  securePort: number;
  /** --advertise-address; added to the self-signed certificate's names. */
  advertiseAddress?: string;
  /** More names or IPs for the self-signed certificate (e.g. the kubernetes service IP). */
  alternateNames?: string[];
  /** --cert-dir. */
  certDir: string;
  tlsCertFile?: string;
  tlsPrivateKeyFile?: string;
  tokenAuthFile?: string;
  /** Bearer-token authenticators after the token file (service-account tokens, ...), in order. */
  tokenAuthenticators?: TokenAuthenticator[];
  /** --api-audiences: the audiences requests' tokens must be meant for (default none: no audience check). */
  apiAudiences?: string[];
  clientCaFile?: string;
  /** --requestheader-*: identity headers of a front proxy, trusted from client certificates of its CA. */
  requestHeader?: Omit<RequestHeaderConfig, 'caCerts'> & { clientCaFile: string };
  /** --anonymous-auth; forced off under AlwaysAllow. */
  anonymousAuth: boolean;
  /** --authorization-mode (validated here; anonymous access is off under AlwaysAllow). */
  authorizationModes: string[];
  /** The chain of authorizationModes (src/filters/authz); default AlwaysAllow. */
  authorizer?: Authorizer;
  /** --shutdown-delay-duration; default 0. */
  shutdownDelayMs?: number;
  /** --livez-grace-period: boot-sequence checks (post-start hooks) pass on /livez for this long after they are added. Default 0. */
  livezGracePeriodMs?: number;
  /** How long stop() lets in-flight requests finish before cutting connections; default 60000. */
  shutdownTimeoutMs?: number;
  /** --tls-min-version (VersionTLS10..VersionTLS13); default TLS 1.2. */
  tlsMinVersion?: string;
  /** --tls-cipher-suites, Go names; empty means Node's defaults. */
  tlsCipherSuites?: string[];
  /** --tls-sni-cert-key values, 'cert,key[:name,...]'. */
  tlsSniCertKeys?: string[];
  /** --strict-transport-security-directives. */
  hstsDirectives?: string[];
  /** --cors-allowed-origins (regular expressions). */
  corsAllowedOrigins?: string[];
  /** --external-hostname: host of externalized URLs; default the advertise address, else the host name. */
  externalHostname?: string;
  /** --permit-port-sharing: SO_REUSEPORT (needs Node >= 22.12 or >= 23.1). */
  permitPortSharing?: boolean;
  /** --permit-address-sharing: SO_REUSEADDR, which libuv always sets on Unix listeners anyway. */
  permitAddressSharing?: boolean;
  /** --http2-max-streams-per-connection; 0 or unset means kube-apiserver's 250. */
  http2MaxStreamsPerConnection?: number;
  /** --goaway-chance, 0..0.02. */
  goawayChance?: number;
  /** --max-requests-inflight; default 400, 0 disables. */
  maxRequestsInflight?: number;
  /** --max-mutating-requests-inflight; default 200, 0 disables. */
  maxMutatingRequestsInflight?: number;
  /** --enable-priority-and-fairness (and the APIPriorityAndFairness gate): the filter queues by priority level, the sum of both limits shared out. */
  enablePriorityAndFairness?: boolean;
  /** --request-timeout; default 60000. */
  requestTimeoutMs?: number;
  /** --shutdown-send-retry-after: after the delay, new requests get 429 until in-flight ones drain. */
  shutdownSendRetryAfter?: boolean;
  /** The /version body. */
  versionInfo: () => object;
  /** Where log lines go: a Logger (src/util/log.ts), or a function given each message; default a text Logger on stderr. */
  logger?: (message: string) => void;
  /** --profiling (default true): /debug/pprof/ and /debug/flags/v. */
  profiling?: boolean;
  /** --contention-profiling (with --profiling): /debug/pprof/block, the event-loop delay histogram. */
  contentionProfiling?: boolean;
  /** --disabled-metrics, --allow-metric-labels, --show-hidden-metrics-for-version. */
  metrics?: Omit<MetricsConfig, 'currentVersion'>;
  /** --max-connection-bytes-per-sec: throttles long-running responses per connection; 0 or unset: off. */
  maxConnectionBytesPerSec?: number;
  /** Feature gate APIResponseCompression (default true): gzip of large non-watch responses. */
  responseCompression?: boolean;
  /** --tracing-config-file (given only with APIServerTracing): request spans exported over OTLP/gRPC. */
  tracingConfigFile?: string;
  /** The --audit-* options; without a policy file nothing is audited (responses still carry Audit-ID). */
  audit?: AuditConfig;
}

// ---- router ------------------------------------------------------------------------------------------

/** Paths to handlers: exact paths win, then the longest matching prefix. Registering a path twice throws. */
export interface Router {
  handle(path: string, handler: Handler): void;
  /** Serves every path that starts with `prefix` (e.g. '/api/'). */
  handlePrefix(prefix: string, handler: Handler): void;
  lookup(path: string): Handler | undefined;
  /** Every registered exact path and prefix, sorted. */
  paths(): string[];
}

export function createRouter(): Router {
  const exact = new Map<string, Handler>();
  const prefixes = new Map<string, Handler>();
  let byLength: string[] = [];
  return {
    handle(path, handler) {
      if (exact.has(path)) throw new Error(`duplicate path registration: ${path}`);
      exact.set(path, handler);
    },
    handlePrefix(prefix, handler) {
      if (prefix === '' || prefixes.has(prefix)) throw new Error(`duplicate or empty prefix registration: "${prefix}"`);
      prefixes.set(prefix, handler);
      byLength = [...prefixes.keys()].sort((a, b) => b.length - a.length);
    },
    lookup(path) {
      const h = exact.get(path);
      if (h) return h;
      const p = byLength.find((prefix) => path.startsWith(prefix));
      return p === undefined ? undefined : prefixes.get(p);
    },
    paths() {
      return [...new Set([...exact.keys(), ...prefixes.keys()])].sort();
    },
  };
}

/** The request's path, without the query. */
export function requestPath(req: ApiRequest): string {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  return q < 0 ? url : url.slice(0, q);
}

function requestQuery(req: ApiRequest): URLSearchParams {
  const url = req.url ?? '';
  const q = url.indexOf('?');
  return new URLSearchParams(q < 0 ? '' : url.slice(q + 1));
}

// ---- responses ---------------------------------------------------------------------------------------

interface StatusFailure {
  code: number;
  reason: string;
  message: string;
  details?: object;
}

/** Writes a Kubernetes Status (status Failure) as JSON. */
export function writeStatus(res: ApiResponse, s: StatusFailure): void {
  const status = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: s.message, reason: s.reason };
  const full = s.details ? { ...status, details: s.details, code: s.code } : { ...status, code: s.code };
  getAuditRecorder(res)?.logResponseObject(full);
  const body = JSON.stringify(full) + '\n';
  res.statusCode = s.code;
  res.setHeader('Content-Type', 'application/json');
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Content-Length', Buffer.byteLength(body));
  res.end(body);
}

export function writeNotFound(res: ApiResponse): void {
  writeStatus(res, { code: 404, reason: 'NotFound', message: 'the server could not find the requested resource', details: {} });
}

function writeText(res: ApiResponse, code: number, text: string): void {
  res.statusCode = code;
  res.setHeader('Content-Type', 'text/plain; charset=utf-8');
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.end(text);
}

// ---- health checks -----------------------------------------------------------------------------------

/** Throws or rejects when unhealthy; the message shows only on the check's own path (/readyz/<name>). */
export type HealthCheck = () => void | Promise<void>;

export interface HealthCheckOptions {
  /** Part of /livez (default true). Checks in both /livez and /readyz are also part of /healthz. */
  livez?: boolean;
  /** Part of /readyz (default true). */
  readyz?: boolean;
  /**
   * A boot-sequence check (a post-start hook, kube-apiserver's AddBootSequenceHealthChecks): /livez reports it
   * ok until --livez-grace-period has passed since it was added. Other checks (etcd, KMS) have no grace period.
   */
  bootSequence?: boolean;
}

type Endpoint = 'healthz' | 'livez' | 'readyz';
const ENDPOINTS: Endpoint[] = ['healthz', 'livez', 'readyz'];

interface HealthRegistry {
  add(name: string, check: HealthCheck, opts?: HealthCheckOptions): void;
  checks(endpoint: Endpoint): { name: string; check: HealthCheck }[];
}

/** ping and log first, registered checks in order, readyz's `shutdown` last (kube-apiserver's order). */
function createHealthRegistry(shutdownCheck: HealthCheck, livezGracePeriodMs: number): HealthRegistry {
  const ok: HealthCheck = () => {};
  const lists: Record<Endpoint, { name: string; check: HealthCheck }[]> = {
    healthz: [{ name: 'ping', check: ok }, { name: 'log', check: ok }],
    livez: [{ name: 'ping', check: ok }, { name: 'log', check: ok }],
    readyz: [{ name: 'ping', check: ok }, { name: 'log', check: ok }],
  };
  return {
    add(name, check, opts = {}) {
      const livez = opts.livez ?? true;
      const readyz = opts.readyz ?? true;
      const targets = ENDPOINTS.filter((e) => (e === 'livez' ? livez : e === 'readyz' ? readyz : livez && readyz));
      for (const e of targets) {
        if (name === 'shutdown' || lists[e].some((c) => c.name === name)) throw new Error(`health check "${name}" already exists in /${e}`);
      }
      const graceEnds = Date.now() + livezGracePeriodMs;
      const graced: HealthCheck = () => (Date.now() <= graceEnds ? undefined : check());
      const delayed = opts.bootSequence === true && livezGracePeriodMs > 0;
      for (const e of targets) lists[e].push({ name, check: e === 'livez' && delayed ? graced : check });
    },
    checks(endpoint) {
      return endpoint === 'readyz' ? [...lists.readyz, { name: 'shutdown', check: shutdownCheck }] : [...lists[endpoint]];
    },
  };
}

async function runCheck(check: HealthCheck): Promise<Error | undefined> {
  try {
    await check();
    return undefined;
  } catch (e) {
    return e instanceof Error ? e : new Error(String(e));
  }
}

/** /livez etc.: 'ok', or with ?verbose one line per check; any failure answers 500 with every line. */
function healthRootHandler(endpoint: Endpoint, registry: HealthRegistry): Handler {
  return async (req, res) => {
    const query = requestQuery(req);
    const excluded = new Set(query.getAll('exclude'));
    let out = '';
    let failed = false;
    for (const { name, check } of registry.checks(endpoint)) {
      if (excluded.delete(name)) {
        out += `[+]${name} excluded: ok\n`;
      } else if (await runCheck(check)) {
        out += `[-]${name} failed: reason withheld\n`;
        failed = true;
      } else {
        out += `[+]${name} ok\n`;
      }
    }
    if (excluded.size > 0) {
      const names = [...excluded].sort().map((n) => JSON.stringify(n));
      out += `warn: some health checks cannot be excluded: no matches for ${names.join(',')}\n`;
    }
    if (failed) return writeText(res, 500, `${out}${endpoint} check failed\n`);
    writeText(res, 200, query.has('verbose') ? `${out}${endpoint} check passed\n` : 'ok');
  };
}

/** /livez/<name> etc.: 'ok', or 500 with the check's error. */
function healthCheckHandler(endpoint: Endpoint, registry: HealthRegistry): Handler {
  return async (req, res) => {
    const name = requestPath(req).slice(endpoint.length + 2);
    const found = registry.checks(endpoint).find((c) => c.name === name);
    if (!found) return writeNotFound(res);
    const err = await runCheck(found.check);
    if (err) return writeText(res, 500, `internal server error: ${err.message}\n`);
    writeText(res, 200, 'ok');
  };
}

/** /metrics: the registry in Prometheus text format (GET only, as kube-apiserver's). */
function metricsHandler(metrics: ServerMetrics): Handler {
  return async (req, res) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      return writeText(res, 405, 'Method Not Allowed\n');
    }
    const body = await metrics.render();
    res.statusCode = 200;
    res.setHeader('Content-Type', metrics.contentType);
    res.setHeader('Content-Length', Buffer.byteLength(body));
    if (req.method === 'HEAD') res.end();
    else res.end(body);
  };
}

function versionHandler(versionInfo: () => object): Handler {
  return (req, res) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      return writeStatus(res, {
        code: 405,
        reason: 'MethodNotAllowed',
        message: `${req.method ?? ''} is not supported on /version`,
        details: {},
      });
    }
    const body = JSON.stringify(versionInfo(), null, 2);
    res.statusCode = 200;
    res.setHeader('Content-Type', 'application/json');
    res.setHeader('Content-Length', Buffer.byteLength(body));
    res.end(body);
  };
}

// ---- handler chain -----------------------------------------------------------------------------------

/**
 * The router as a handler. Unmatched API paths (/api, /apis and below) get the NotFound Status; any other
 * path gets Go's plain-text '404 page not found', as kube-apiserver's final handler answers.
 */
export function routerHandler(router: Router): Handler {
  return (req, res) => {
    const path = requestPath(req);
    const h = router.lookup(path);
    if (h) return h(req, res);
    if (/^\/apis?(\/|$)/.test(path)) return writeNotFound(res);
    writeText(res, 404, '404 page not found\n');
  };
}

/** Outermost filter: an exception becomes a 500 InternalError Status, or a reset stream once headers are out. */
export function withPanicRecovery(next: Handler, deps: { logger: (m: string) => void }): Handler {
  return async (req, res) => {
    try {
      await next(req, res);
    } catch (e) {
      const message = e instanceof Error ? e.message : String(e);
      deps.logger(`panic serving ${req.method ?? ''} ${req.url ?? ''}: ${e instanceof Error ? (e.stack ?? message) : message}`);
      if (res.headersSent) {
        if ('stream' in res) res.stream.destroy();
        else res.destroy();
        return;
      }
      writeStatus(res, {
        code: 500,
        reason: 'InternalError',
        message: `Internal error occurred: ${message}`,
        details: { causes: [{ message }] },
      });
    }
  };
}

export interface HandlerChainDeps {
  authenticator: Authenticator;
  anonymous: boolean;
  logger: (m: string) => void;
  /** Default: kube-apiserver's (watch, proxy, exec, attach, log, portforward). */
  longRunning?: LongRunningCheck;
  /** Default 400 / 200; `sharedLimit` replaces both. */
  maxInFlight?: { nonMutatingLimit: number; mutatingLimit: number; sharedLimit?: number };
  /** When given, the priority-and-fairness filter stands where the max-in-flight filter would. */
  priorityAndFairness?: FlowControl;
  /** Default 60000. */
  requestTimeoutMs?: number;
  corsAllowedOrigins?: readonly string[];
  hstsDirectives?: readonly string[];
  /** Installed when above 0. */
  goawayChance?: number;
  /** Random numbers for the GOAWAY decision; tests inject them. */
  random?: () => number;
  /** Counts in-flight non-long-running requests for shutdown. */
  waitGroup?: RequestWaitGroup;
  /** When given, withRetryAfter is installed and answers 429 while it returns true. */
  notAcceptingNewRequests?: () => boolean;
  /** When given, requests are counted and timed (innermost: what passed authentication and the limits). */
  metrics?: RequestMetricsSink;
  /** When above 0, long-running responses are throttled to this many bytes per second per connection. */
  maxConnectionBytesPerSec?: number;
  /** When true, large non-watch responses are gzipped for clients that accept it (APIResponseCompression). */
  compression?: boolean;
  /** When given, requests are logged at verbosity 3 (httplog), just inside the request-info filter. */
  httpLog?: Logger;
  /** Default AlwaysAllow. */
  authorizer?: Authorizer;
  /** When given, requests are audited (withAudit inside authentication, failed authentications around it). */
  audit?: Omit<AuditDeps, 'longRunning'>;
  /** When given, each request runs in a server span (withTracing, just inside the request-info filter). */
  tracer?: RequestTracer;
}

/**
 * Every filter, in kube-apiserver's DefaultBuildHandlerChain order. Outermost first: audit ID → panic
 * recovery → request info → retry-after (shutdown) → HSTS → probabilistic GOAWAY → wait group → request
 * deadline → timeout → CORS → (failed-authentication audit) → authentication → (audit) → impersonation →
 * max-in-flight → authorization → the API handler. `trace` receives each installed filter's name, innermost first (for the order test).
 */
export function buildHandlerChain(apiHandler: Handler, deps: HandlerChainDeps, trace?: (filter: string) => void): Handler {
  const longRunning = deps.longRunning ?? isLongRunning;
  let h = apiHandler;
  const use = (name: string, wrap: (next: Handler) => Handler): void => {
    trace?.(name);
    h = wrap(h);
  };
  const sink = deps.metrics;
  if (sink) use('requestMetrics', (n) => withRequestMetrics(n, { sink, longRunning }));
  if (deps.compression) use('compression', (n) => withCompression(n, { longRunning }));
  const rate = deps.maxConnectionBytesPerSec ?? 0;
  if (rate > 0) use('connectionThrottle', (n) => withConnectionThrottle(n, { longRunning, bytesPerSecond: rate }));
  const inflight = deps.maxInFlight ?? { nonMutatingLimit: 400, mutatingLimit: 200 };
  use('authorization', (n) => withAuthorization(n, { authorizer: deps.authorizer ?? alwaysAllow }));
  const onReject = sink ? (req: ApiRequest, mutating: boolean) => recordTermination(sink, req, 429, mutating ? 'mutating' : 'readOnly') : undefined;
  const apf = deps.priorityAndFairness;
  if (apf) use('priorityAndFairness', (n) => withPriorityAndFairness(n, { flowControl: apf, longRunning, ...(onReject ? { onReject } : {}) }));
  else use('maxInFlightLimit', (n) => withMaxInFlightLimit(n, { ...inflight, longRunning, ...(onReject ? { onReject } : {}) }));
  use('impersonation', (n) => withImpersonation(n, { authorizer: deps.authorizer ?? alwaysAllow }));
  const audit = deps.audit;
  if (audit) use('audit', (n) => withAudit(n, { ...audit, longRunning }));
  use('authentication', (n) => withAuthentication(n, { authenticator: deps.authenticator, anonymous: deps.anonymous }));
  if (audit) use('failedAuthenticationAudit', (n) => withFailedAuthenticationAudit(n, audit));
  use('cors', (n) => withCORS(n, { allowedOrigins: deps.corsAllowedOrigins ?? [] }));
  const onTimeout = sink ? (req: ApiRequest) => recordTermination(sink, req, 504) : undefined;
  use('timeoutForNonLongRunningRequests', (n) => withTimeoutForNonLongRunningRequests(n, { longRunning, ...(onTimeout ? { onTimeout } : {}) }));
  use('requestDeadline', (n) => withRequestDeadline(n, { longRunning, requestTimeoutMs: deps.requestTimeoutMs ?? 60_000 }));
  const group = deps.waitGroup;
  if (group) use('waitGroup', (n) => withWaitGroup(n, { longRunning, group }));
  const chance = deps.goawayChance ?? 0;
  if (chance > 0) use('probabilisticGoaway', (n) => withProbabilisticGoaway(n, { chance, ...(deps.random ? { random: deps.random } : {}) }));
  use('hsts', (n) => withHSTS(n, { directives: deps.hstsDirectives ?? [] }));
  const notAccepting = deps.notAcceptingNewRequests;
  if (notAccepting) use('retryAfter', (n) => withRetryAfter(n, { notAcceptingNewRequests: notAccepting }));
  const httpLog = deps.httpLog;
  if (httpLog) use('httpLogging', (n) => withHTTPLogging(n, { logger: httpLog }));
  const tracer = deps.tracer;
  if (tracer) use('tracing', (n) => withTracing(n, { tracer }));
  use('requestInfo', (n) => withRequestInfo(n));
  use('panicRecovery', (n) => withPanicRecovery(n, { logger: deps.logger }));
  use('auditID', (n) => withAuditID(n));
  return h;
}

// ---- the server --------------------------------------------------------------------------------------

export interface ApiServer {
  /** https://host:port; the port is the bound one after start(). */
  readonly url: string;
  readonly port: number;
  /** PEM of the CA that signed the serving certificate, for clients and kubeconfigs. */
  readonly caCert: string;
  /** host:port for externalized URLs (discovery, API docs): --external-hostname, else the advertise address, else the host name. */
  readonly externalAddress: string;
  /** Where later layers register API routes. */
  readonly mux: Router;
  /** The server's metrics: its prom-client registry (served at /metrics) and the request metrics. */
  readonly metrics: ServerMetrics;
  /** The logger every part of the server writes to. */
  readonly logger: Logger;
  /** Aborted when the listener starts closing; long-running handlers (watches) end their responses on it. */
  readonly signal: AbortSignal;
  addHealthCheck(name: string, check: HealthCheck, opts?: HealthCheckOptions): void;
  /** The whole handler chain, for in-process requests. */
  readonly handle: Handler;
  /** The bearer-token authenticators, for the TokenReview API. */
  readonly tokenReviewer: TokenReviewer;
  /** Priority and fairness (when enabled): the control plane feeds it the stored configuration. */
  readonly flowControl?: FlowControl;
  /** --tracing-config-file: the tracer of request spans, for the parts that start child spans (storage, proxies). */
  readonly tracer?: Tracer;
  /** Listens; resolves once listening. Calling it again returns the same promise. */
  start(): Promise<void>;
  /** Shuts down (readyz fails, the delay passes, the listener closes, connections drain); idempotent. */
  stop(): Promise<void>;
}

const AUTHORIZATION_MODES = new Set(['AlwaysAllow', 'AlwaysDeny', 'ABAC', 'Webhook', 'RBAC', 'Node']);
const KUBERNETES_SERVICE_NAMES = ['kubernetes', 'kubernetes.default', 'kubernetes.default.svc', 'kubernetes.default.svc.cluster.local'];
/** The stream limit kube-apiserver offers when --http2-max-streams-per-connection is 0 (secure_serving.go). */
const HTTP2_DEFAULT_MAX_STREAMS = 250;

/** Throws with kube-apiserver's messages on an invalid --authorization-mode list. */
export function validateAuthorizationModes(modes: string[]): void {
  if (modes.length === 0) throw new Error('at least one authorization-mode must be passed');
  const seen = new Set<string>();
  for (const m of modes) {
    if (!AUTHORIZATION_MODES.has(m)) throw new Error(`authorization-mode "${m}" is not a valid mode`);
    if (seen.has(m)) throw new Error(`authorization-mode "${m}" has mode specified more than once`);
    seen.add(m);
  }
}

function isUnspecified(address: string): boolean {
  return address === '0.0.0.0' || address === '::' || address === '';
}

async function readClientCA(path: string, option = '--client-ca-file'): Promise<string> {
  const pem = await readFile(path, 'utf8').catch((e: Error) => {
    throw new Error(`${option} ${path}: cannot be read: ${e.message}`);
  });
  const certs = splitPemCertificates(pem);
  try {
    if (certs.length === 0) throw new Error('no PEM certificate found');
    for (const c of certs) new X509Certificate(c);
  } catch (e) {
    throw new Error(`${option} ${path}: ${(e as Error).message}`, { cause: e });
  }
  return pem;
}

/**
 * The front proxy's headers, client certificates, then bearer tokens (the token file, then
 * config.tokenAuthenticators), as kube-apiserver orders them. `cas`: the PEM bundles read at startup.
 */
async function buildAuthenticator(
  config: ServerConfig,
  cas: { client?: string; requestHeader?: string },
): Promise<{ request: Authenticator; reviewer: TokenReviewer }> {
  const list: Authenticator[] = [];
  if (config.requestHeader && cas.requestHeader) {
    list.push(requestHeaderAuthenticator({ ...config.requestHeader, caCerts: splitPemCertificates(cas.requestHeader) }));
  }
  if (cas.client) list.push(clientCertAuthenticator(cas.requestHeader ? splitPemCertificates(cas.client) : undefined));
  const audiences = config.apiAudiences ?? [];
  const tokens: TokenAuthenticator[] = [];
  if (config.tokenAuthFile) tokens.push(audienceAgnostic(audiences, tokenTableAuthenticator(await loadTokenFile(config.tokenAuthFile))));
  tokens.push(...(config.tokenAuthenticators ?? []));
  const union = tokenUnion(tokens);
  if (tokens.length > 0) list.push(bearerTokenAuthenticator(union, audiences), webSocketProtocolAuthenticator(union, audiences));
  return { request: unionAuthenticator(list), reviewer: tokenReviewer(union, audiences) };
}

/** Under AlwaysAllow kube-apiserver turns anonymous access off, with this warning. */
function effectiveAnonymousAuth(config: ServerConfig, logger: (m: string) => void): boolean {
  if (config.anonymousAuth && config.authorizationModes.includes('AlwaysAllow')) {
    logger('AnonymousAuth is not allowed with the AlwaysAllow authorizer. Resetting AnonymousAuth to false.');
    return false;
  }
  return config.anonymousAuth;
}

/** Names for the self-signed certificate beyond localhost, loopback and the host name. */
function servingCertHosts(config: ServerConfig, bindAddress: string): string[] {
  return [
    ...(config.advertiseAddress ? [config.advertiseAddress] : []),
    ...(isUnspecified(bindAddress) ? [] : [bindAddress]),
    ...KUBERNETES_SERVICE_NAMES,
    ...(config.alternateNames ?? []),
  ];
}

/** Whether this Node.js can bind with SO_REUSEPORT (`reusePort` listen option: 22.12+, 23.1+). */
export function nodeSupportsReusePort(version = process.versions.node): boolean {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  return major > 23 || (major === 23 && minor >= 1) || (major === 22 && minor >= 12);
}

/** Startup checks of the serving and limit options, each message naming its option. */
function validateServingConfig(config: ServerConfig): void {
  const hsts = validateHSTSDirectives(config.hstsDirectives ?? []);
  if (hsts) throw new Error(hsts);
  compileCorsOrigins(config.corsAllowedOrigins ?? []);
  const chance = config.goawayChance ?? 0;
  if (!(chance >= 0 && chance <= 0.02)) throw new Error('--goaway-chance can not be less than 0 or greater than 0.02');
  if ((config.http2MaxStreamsPerConnection ?? 0) < 0) throw new Error('--http2-max-streams-per-connection can not be negative value');
  if ((config.maxRequestsInflight ?? 0) < 0) throw new Error('--max-requests-inflight can not be negative value');
  if ((config.maxMutatingRequestsInflight ?? 0) < 0) throw new Error('--max-mutating-requests-inflight can not be negative value');
  if ((config.requestTimeoutMs ?? 0) < 0) throw new Error('--request-timeout can not be negative value');
  if (config.permitPortSharing && !nodeSupportsReusePort()) {
    throw new Error(
      `--permit-port-sharing: SO_REUSEPORT needs Node.js 22.12+ or 23.1+ (the listen option reusePort); this is Node.js ${process.versions.node}`,
    );
  }
}

function maxInFlightFrom(config: ServerConfig): NonNullable<HandlerChainDeps['maxInFlight']> {
  return { nonMutatingLimit: config.maxRequestsInflight ?? 400, mutatingLimit: config.maxMutatingRequestsInflight ?? 200 };
}

/** Priority and fairness with the sum of both limits as the server's concurrency limit; waits up to a quarter of the request timeout. */
function flowControlFrom(config: ServerConfig): FlowControl | undefined {
  if (!config.enablePriorityAndFairness) return undefined;
  return new FlowControl({
    serverConcurrencyLimit: (config.maxRequestsInflight ?? 400) + (config.maxMutatingRequestsInflight ?? 200),
    requestWaitLimitMs: (config.requestTimeoutMs ?? 60_000) / 4,
  });
}

/** Validates the config and loads certificates and credentials (failing with flag names), then assembles. */
export async function createApiServer(config: ServerConfig): Promise<ApiServer> {
  const logger = config.logger ? loggerFromFunction(config.logger) : createLogger();
  const bindAddress = config.bindAddress ?? '0.0.0.0';
  validateAuthorizationModes(config.authorizationModes);
  validateServingConfig(config);
  const anonymous = effectiveAnonymousAuth(config, logger);
  const minVersion = tlsMinVersion(config.tlsMinVersion);
  const ciphers = tlsCiphers(config.tlsCipherSuites ?? [], logger);
  const serving = await ensureServingCert({
    certDir: config.certDir,
    certFile: config.tlsCertFile,
    keyFile: config.tlsPrivateKeyFile,
    hosts: servingCertHosts(config, bindAddress),
  });
  const ownClientCA = config.clientCaFile ? await readClientCA(config.clientCaFile) : undefined;
  const requestHeaderCA = config.requestHeader ? await readClientCA(config.requestHeader.clientCaFile, '--requestheader-client-ca-file') : undefined;
  // The TLS layer asks for certificates of either authority; each authenticator checks its own.
  const clientCA = ownClientCA || requestHeaderCA ? [ownClientCA, requestHeaderCA].filter((p) => p !== undefined).join('\n') : undefined;
  const sni =
    (config.tlsSniCertKeys ?? []).length > 0
      ? await loadSniCertificates(config.tlsSniCertKeys ?? [], { minVersion, ...(ciphers ? { ciphers } : {}), ...(clientCA ? { ca: clientCA } : {}) })
      : undefined;
  const { request: authenticator, reviewer } = await buildAuthenticator(config, {
    ...(ownClientCA ? { client: ownClientCA } : {}),
    ...(requestHeaderCA ? { requestHeader: requestHeaderCA } : {}),
  });
  const maxStreams = config.http2MaxStreamsPerConnection || HTTP2_DEFAULT_MAX_STREAMS;
  const flowControl = flowControlFrom(config);
  const tls: SecureServerOptions = {
    allowHTTP1: true,
    cert: serving.cert,
    key: serving.key,
    minVersion,
    ...(ciphers ? { ciphers } : {}),
    ...(sni ? { SNICallback: sniCallback(sni) } : {}),
    settings: { maxConcurrentStreams: maxStreams },
    ...(clientCA ? { ca: clientCA, requestCert: true, rejectUnauthorized: false } : {}),
  };
  const chain: HandlerChainDeps = {
    authenticator,
    anonymous,
    logger,
    maxInFlight: maxInFlightFrom(config),
    ...(flowControl ? { priorityAndFairness: flowControl } : {}),
    requestTimeoutMs: config.requestTimeoutMs ?? 60_000,
    corsAllowedOrigins: config.corsAllowedOrigins ?? [],
    hstsDirectives: config.hstsDirectives ?? [],
    goawayChance: config.goawayChance ?? 0,
    ...(config.authorizer ? { authorizer: config.authorizer } : {}),
  };
  const audit = config.audit ? await buildAudit(config.audit, logger) : undefined;
  const tracer = config.tracingConfigFile ? await createTracer(loadTracingConfig(config.tracingConfigFile), logger) : undefined;
  return assembleServer(config, { logger, bindAddress, caCert: serving.caCert, tls, chain, reviewer, ...(audit ? { audit } : {}), ...(tracer ? { tracer } : {}) });
}

interface AssembleDeps {
  logger: Logger;
  bindAddress: string;
  caCert: string;
  tls: SecureServerOptions;
  chain: HandlerChainDeps;
  audit?: ServerAudit;
  reviewer: TokenReviewer;
  tracer?: ServerTracer;
}

function assembleServer(config: ServerConfig, deps: AssembleDeps): ApiServer {
  const { logger, bindAddress } = deps;
  let shuttingDown = false;
  let notAcceptingNewRequests = false;
  const waitGroup = new RequestWaitGroup();
  const health = createHealthRegistry(() => {
    if (shuttingDown) throw new Error('process is shutting down');
  }, config.livezGracePeriodMs ?? 0);
  const mux = createRouter();
  for (const e of ENDPOINTS) {
    mux.handle(`/${e}`, healthRootHandler(e, health));
    mux.handlePrefix(`/${e}/`, healthCheckHandler(e, health));
  }
  mux.handle('/version', versionHandler(config.versionInfo));
  const metrics = new ServerMetrics({ ...config.metrics, currentVersion: `${COMPAT_MAJOR}.${COMPAT_MINOR}` });
  mux.handle('/metrics', metricsHandler(metrics));
  const abort = new AbortController();
  if (config.profiling ?? true) {
    installProfiling(mux, { signal: abort.signal, contention: config.contentionProfiling === true });
    installDebugFlags(mux, { logger });
  }
  deps.audit?.bindMetrics(metrics);
  if (deps.chain.priorityAndFairness) {
    const flowControl = deps.chain.priorityAndFairness;
    bindFlowControlMetrics(metrics, flowControl);
    // As 1.23's installAPI: with the filter on (not behind --profiling); authorized as any non-resource URL.
    mux.handle('/debug/api_priority_and_fairness/dump_priority_levels', (_req, res) => writeText(res, 200, flowControl.dumpPriorityLevels()));
    mux.handle('/debug/api_priority_and_fairness/dump_queues', (_req, res) => writeText(res, 200, flowControl.dumpQueues()));
    mux.handle('/debug/api_priority_and_fairness/dump_requests', (req, res) => {
      const details = new URL(req.url ?? '/', 'http://x').searchParams.get('includeRequestDetails') ?? '';
      writeText(res, 200, flowControl.dumpRequests(details !== ''));
    });
  }
  const handle = buildHandlerChain(routerHandler(mux), {
    ...deps.chain,
    ...(deps.audit ? { audit: deps.audit.deps } : {}),
    ...(deps.tracer ? { tracer: deps.tracer } : {}),
    metrics,
    httpLog: logger,
    compression: config.responseCompression ?? true,
    maxConnectionBytesPerSec: config.maxConnectionBytesPerSec ?? 0,
    waitGroup,
    ...(config.shutdownSendRetryAfter ? { notAcceptingNewRequests: () => notAcceptingNewRequests } : {}),
  });
  const listener = new Listener(createSecureServer(deps.tls), handle);
  let starting: Promise<void> | undefined;
  let stopping: Promise<void> | undefined;
  const displayHost = isUnspecified(bindAddress) ? (bindAddress === '::' ? '::1' : '127.0.0.1') : bindAddress;

  const server: ApiServer = {
    get url() {
      return `https://${isIPv6(displayHost) ? `[${displayHost}]` : displayHost}:${server.port}`;
    },
    get port() {
      return listener.port ?? config.securePort;
    },
    caCert: deps.caCert,
    tokenReviewer: deps.reviewer,
    ...(deps.chain.priorityAndFairness ? { flowControl: deps.chain.priorityAndFairness } : {}),
    ...(deps.tracer ? { tracer: deps.tracer } : {}),
    get externalAddress() {
      const host = config.externalHostname || config.advertiseAddress || hostname();
      return `${isIPv6(host) ? `[${host}]` : host}:${server.port}`;
    },
    mux,
    metrics,
    logger,
    signal: abort.signal,
    handle,
    addHealthCheck: (name, check, opts) => health.add(name, check, opts),
    start() {
      if (stopping) return Promise.reject(new Error('the server was stopped; create a new one'));
      starting ??= listener.listen(config.securePort, bindAddress, config.permitPortSharing ?? false).then(() => {
        logger(`Serving securely on ${isIPv6(bindAddress) ? `[${bindAddress}]` : bindAddress}:${server.port}`);
      });
      return starting;
    },
    stop() {
      const serving = async () => {
        shuttingDown = true;
        if (!starting) return;
        await starting.catch(() => undefined);
        if (!listener.listening) return;
        if ((config.shutdownDelayMs ?? 0) > 0) await sleep(config.shutdownDelayMs);
        if (config.shutdownSendRetryAfter) {
          // Keep listening, answering new requests 429, until in-flight non-long-running requests drain.
          notAcceptingNewRequests = true;
          await waitGroup.wait();
        }
        abort.abort();
        await listener.close(config.shutdownTimeoutMs ?? 60_000);
      };
      // Audit batch buffers are flushed once no request can add to them.
      stopping ??= serving().finally(() => Promise.all([deps.audit?.deps.backend.shutdown(), deps.tracer?.shutdown()]));
      return stopping;
    },
  };
  return server;
}

/** The TLS listener and the connections it holds, so that close() can drain and end them. */
class Listener {
  port: number | undefined;
  listening = false;
  private readonly sockets = new Set<Socket>();
  private readonly sessions = new Set<ServerHttp2Session>();
  private readonly http1 = new Set<TLSSocket>();
  private readonly inFlight = new WeakMap<object, number>();
  private closing = false;

  constructor(
    private readonly server: Http2SecureServer,
    handle: Handler,
  ) {
    server.on('connection', (s: Socket) => {
      this.sockets.add(s);
      s.once('close', () => this.sockets.delete(s));
    });
    server.on('secureConnection', (s: TLSSocket) => {
      if (s.alpnProtocol === 'h2') return;
      this.http1.add(s);
      s.once('close', () => this.http1.delete(s));
    });
    server.on('session', (session: ServerHttp2Session) => {
      this.sessions.add(session);
      session.once('close', () => this.sessions.delete(session));
      if (this.closing) session.close();
    });
    server.on('sessionError', () => {});
    server.on('request', (req: ApiRequest, res: ApiResponse) => {
      if (!('stream' in req)) this.track(req.socket, res);
      void Promise.resolve(handle(req, res)).catch(() => undefined);
    });
    server.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => this.upgrade(req, socket, head, handle));
  }

  /**
   * An HTTP/1.1 request asking for a protocol upgrade (exec, attach, port-forward) goes through the whole
   * chain with a response bound to its socket; a handler may take the socket over (src/endpoints/streaming.ts),
   * any other answer ends the connection once written.
   */
  private upgrade(req: IncomingMessage, socket: Socket, head: Buffer, handle: Handler): void {
    const res = new ServerResponse(req);
    res.shouldKeepAlive = false;
    res.assignSocket(socket);
    const conn = registerUpgrade(req, socket, head);
    socket.on('error', () => socket.destroy());
    res.once('finish', () => {
      if (!conn.hijacked) socket.end();
    });
    void Promise.resolve(handle(req, res)).catch(() => undefined);
  }

  /** Counts an HTTP/1.1 request on its socket, so that a closing listener ends the socket once idle. */
  private track(socket: Socket, res: ApiResponse): void {
    this.inFlight.set(socket, (this.inFlight.get(socket) ?? 0) + 1);
    res.once('close', () => {
      const n = (this.inFlight.get(socket) ?? 1) - 1;
      this.inFlight.set(socket, n);
      if (this.closing && n === 0) socket.destroy();
    });
  }

  /**
   * Binds. libuv sets SO_REUSEADDR on every Unix listener (so --permit-address-sharing needs nothing);
   * `reusePort` (SO_REUSEPORT) exists from Node 22.12 / 23.1 and is checked at startup.
   */
  listen(port: number, host: string, reusePort: boolean): Promise<void> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      const options: ListenOptions & { reusePort?: boolean } = { port, host, ...(reusePort ? { reusePort: true } : {}) };
      this.server.listen(options, () => {
        this.server.off('error', reject);
        this.port = (this.server.address() as AddressInfo).port;
        this.listening = true;
        resolve();
      });
    });
  }

  /** Stops accepting, lets HTTP/2 streams and HTTP/1.1 requests finish, and cuts what remains after `timeoutMs`. */
  close(timeoutMs: number): Promise<void> {
    this.closing = true;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        for (const s of this.sessions) s.destroy();
        for (const s of this.sockets) s.destroy();
      }, timeoutMs);
      this.server.close(() => {
        clearTimeout(timer);
        this.listening = false;
        resolve();
      });
      for (const s of this.sessions) s.close();
      for (const s of this.http1) if ((this.inFlight.get(s) ?? 0) === 0) s.destroy();
    });
  }
}
