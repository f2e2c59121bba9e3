/**
 * Calling one admission webhook, as Kubernetes' webhook client does (apiserver/pkg/admission/plugin/webhook
 * and util/webhook): an AdmissionReview of the version the webhook accepts first (admission.k8s.io v1 or
 * v1beta1) POSTed over HTTPS to its URL, or to its Service as the server's service resolver finds it, with
 * `?timeout=<n>s`, trusting the configuration's caBundle (else the system roots); the answer is checked as
 * VerifyAdmissionResponse checks it. Failures to call are `CallError`s ("failed calling webhook ..."),
 * which the failure policy may ignore.
 */
import { request as httpsRequest } from 'node:https';
import { randomUUID } from 'node:crypto';
import { isIP } from 'node:net';
import { checkServerIdentity } from '../../util/node-tls.js';
import type { KObject } from '../kind.js';
import { resolveServiceReference, type ServiceResolverDeps } from '../service-resolver.js';
import { outgoingTraceparent, runInSpanContext } from '../../util/tracecontext.js';
import { childSpan, errorStatus, SpanKind, type Tracer } from '../../util/tracing.js';
import { dialOptions, type Dialer } from '../../util/dial.js';

export const ADMISSION_REVIEW_VERSIONS = ['v1', 'v1beta1'];

/** webhookutil.ErrCallingWebhook: the webhook could not be called or answered nonsense. */
export class CallError extends Error {
  override readonly name = 'CallError';
  constructor(
    readonly webhookName: string,
    readonly reason: string,
    /** The status code 1.23 gives the failure (the metrics' code): the webhook's own, else 503, 400 or 500. */
    readonly code = 503,
  ) {
    super(`failed calling webhook "${webhookName}": ${reason}`);
  }
}

export interface GVK {
  group: string;
  version: string;
  kind: string;
}
export interface GVR {
  group: string;
  version: string;
  resource: string;
}

/** The request part of an AdmissionReview (the same in v1 and v1beta1). */
export interface ReviewRequest {
  kind: GVK;
  resource: GVR;
  subResource?: string;
  requestKind: GVK;
  requestResource: GVR;
  requestSubResource?: string;
  name?: string;
  namespace?: string;
  operation: string;
  userInfo: { username?: string; uid?: string; groups?: string[] };
  object: KObject | null;
  oldObject: KObject | null;
  dryRun: boolean;
  options: KObject | null;
}

export interface ReviewResponse {
  uid?: string;
  allowed?: boolean;
  status?: Record<string, any>;
  patch?: string;
  patchType?: string;
  auditAnnotations?: Record<string, string>;
  warnings?: string[];
}

/** How the server authenticates to a webhook (a kubeconfig user): a bearer token, basic auth, a client certificate. */
export interface WebhookAuth {
  token?: string;
  /** base64 of user:password */
  basic?: string;
  cert?: string;
  key?: string;
}
/** The credentials for a webhook's host:port (a Service: <name>.<namespace>.svc:<port>); undefined: anonymous. */
export type WebhookAuthResolver = (hostPort: string) => WebhookAuth | undefined;

export interface ClientConfig {
  url?: string;
  service?: { namespace?: string; name?: string; path?: string; port?: number };
  caBundle?: string;
}

/** Where a webhook is reached: the URL to POST to and the name its certificate must carry. */
interface Target {
  url: URL;
  serverName: string;
  /** The name credentials are looked up by: the URL's host:port, or <service>.<namespace>.svc:<port>. */
  authName: string;
}

/** A Service reference through the server's service resolver (loopback, cluster IP or endpoints). */
async function resolveService(resolver: ServiceResolverDeps, svc: NonNullable<ClientConfig['service']>): Promise<Target> {
  const namespace = svc.namespace ?? '';
  const name = svc.name ?? '';
  const port = svc.port ?? 443;
  const path = svc.path ?? '';
  const address = await resolveServiceReference(resolver, namespace, name, port);
  const hostPort = isIP(address.host) === 6 ? `[${address.host}]:${address.port}` : `${address.host}:${address.port}`;
  return { url: new URL(`https://${hostPort}${path}`), serverName: `${name}.${namespace}.svc`, authName: `${name}.${namespace}.svc:${port}` };
}

/** Go's wording for the usual transport failures. */
function transportError(err: NodeJS.ErrnoException, url: URL): string {
  const hostPort = url.port ? url.host : `${url.host}:443`;
  switch (err.code) {
    case 'ECONNREFUSED':
      return `dial tcp ${hostPort}: connect: connection refused`;
    case 'ENOTFOUND':
      return `dial tcp: lookup ${url.hostname}: no such host`;
    case 'UNABLE_TO_VERIFY_LEAF_SIGNATURE':
    case 'SELF_SIGNED_CERT_IN_CHAIN':
    case 'DEPTH_ZERO_SELF_SIGNED_CERT':
    case 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY':
      return 'x509: certificate signed by unknown authority';
    case 'CERT_HAS_EXPIRED':
      return 'x509: certificate has expired or is not yet valid';
    case 'ERR_TLS_CERT_ALTNAME_INVALID':
      return `x509: ${err.message}`;
    default:
      return err.message;
  }
}

/** The W3C traceparent of the request being served, when --tracing-config-file traces it. */
function traceHeaders(): Record<string, string> {
  const tp = outgoingTraceparent();
  return tp ? { traceparent: tp } : {};
}

/**
 * The call in an otelhttp client span 'HTTP POST' (1.23 wraps the webhook client's transport under
 * APIServerTracing), run as the current span so that the traceparent sent names it.
 */
async function traced(tracer: Tracer, url: URL, send: () => Promise<{ status: number; body: string }>): Promise<{ status: number; body: string }> {
  const span = childSpan(tracer, 'HTTP POST', {
    kind: SpanKind.CLIENT,
    scope: 'go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp',
    attributes: { 'http.method': 'POST', 'http.url': url.toString(), 'http.flavor': '1.1' },
  });
  if (!span) return send();
  try {
    const answer = await runInSpanContext(span.context, send);
    span.setAttributes({ 'http.status_code': answer.status });
    span.end(answer.status >= 400 ? { error: '' } : undefined);
    return answer;
  } catch (err) {
    span.end(errorStatus(err));
    throw err;
  }
}

/** POSTs the body; resolves with the status and body, rejects with Go-worded transport errors. */
function post(target: Target, ca: string | undefined, auth: WebhookAuth | undefined, body: string, timeoutMs: number, dial?: Dialer): Promise<{ status: number; body: string }> {
  const shown = `Post "${target.url.toString()}"`;
  return new Promise((resolve, reject) => {
    const host = target.url.hostname.replace(/^\[|\]$/g, '');
    const req = httpsRequest(
      {
        method: 'POST',
        host,
        port: target.url.port || 443,
        path: `${target.url.pathname}${target.url.search}`,
        headers: {
          'Content-Type': 'application/json',
          Accept: 'application/json, */*',
          'Content-Length': Buffer.byteLength(body),
          ...(auth?.token ? { Authorization: `Bearer ${auth.token}` } : auth?.basic ? { Authorization: `Basic ${auth.basic}` } : {}),
          ...traceHeaders(),
        },
        ...(auth?.cert && auth.key ? { cert: auth.cert, key: auth.key } : {}),
        servername: isIP(target.serverName) ? '' : target.serverName,
        // As Go: the certificate must name the host asked for (the service's DNS name, or the URL's host).
        checkServerIdentity: (_host, cert) => checkServerIdentity(target.serverName, cert),
        ...(ca ? { ca } : {}),
        ...(dial ? dialOptions(dial, true) : { agent: false }),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          clearTimeout(timer);
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') });
        });
        res.on('error', (err) => {
          clearTimeout(timer);
          reject(new Error(`${shown}: ${err.message}`));
        });
      },
    );
    const timer = setTimeout(() => {
      req.destroy(new Error('timeout'));
    }, timeoutMs);
    req.on('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      if (err.message === 'timeout') reject(new Error(`${shown}: context deadline exceeded`));
      else reject(new Error(`${shown}: ${transportError(err, target.url)}`));
    });
    req.end(body);
  });
}

/**
 * Sends the review to the webhook and returns its checked response. Throws CallError for anything that went
 * wrong on the way (unreachable, timeout, bad status or body, a response that fails verification).
 */
export async function callWebhook(opts: {
  webhookName: string;
  clientConfig: ClientConfig;
  reviewVersions: readonly string[];
  timeoutSeconds: number;
  request: ReviewRequest;
  /** How a clientConfig.service is resolved. */
  resolver: ServiceResolverDeps;
  auth?: WebhookAuthResolver;
  /** The cluster egress (--egress-selector-config-file): opens the connection to the webhook. */
  dial?: Dialer;
  /** --tracing-config-file: the call is a client span of the request's span, and its traceparent is sent. */
  tracer?: Tracer;
  /** A mutating webhook (may answer a patch); a validating one may not. */
  mutating: boolean;
}): Promise<ReviewResponse> {
  const { webhookName: name, clientConfig: cc } = opts;
  const version = opts.reviewVersions.find((v) => ADMISSION_REVIEW_VERSIONS.includes(v));
  if (!version) {
    throw new CallError(name, `webhook does not accept known AdmissionReview versions (${ADMISSION_REVIEW_VERSIONS.join(', ')})`, 400);
  }
  let target: Target;
  try {
    if (cc.url !== undefined) {
      const url = new URL(cc.url);
      target = { url, serverName: url.hostname.replace(/^\[|\]$/g, ''), authName: url.host };
    } else if (cc.service) {
      target = await resolveService(opts.resolver, cc.service);
    } else {
      throw new Error('no url or service');
    }
  } catch (err) {
    throw new CallError(name, `failed to call webhook: ${(err as Error).message}`, 500);
  }
  target.url.search = `?timeout=${opts.timeoutSeconds}s`;
  const uid = randomUUID();
  const apiVersion = `admission.k8s.io/${version}`;
  const review = { kind: 'AdmissionReview', apiVersion, request: { uid, ...opts.request } };
  const ca = cc.caBundle ? Buffer.from(cc.caBundle, 'base64').toString('utf8') : undefined;
  let answer: { status: number; body: string };
  try {
    const send = () => post(target, ca, opts.auth?.(target.authName), JSON.stringify(review), opts.timeoutSeconds * 1000, opts.dial);
    answer = opts.tracer ? await traced(opts.tracer, target.url, send) : await send();
  } catch (err) {
    throw new CallError(name, `failed to call webhook: ${(err as Error).message}`);
  }
  if (answer.status < 200 || answer.status > 299) {
    let message = `the server responded with the status code ${answer.status} but did not return more information`;
    try {
      const s = JSON.parse(answer.body) as Record<string, unknown>;
      if (s['kind'] === 'Status' && typeof s['message'] === 'string') message = s['message'];
    } catch {
      // not a Status
    }
    throw new CallError(name, `failed to call webhook: ${message}`, answer.status);
  }
  let parsed: Record<string, any>;
  try {
    parsed = JSON.parse(answer.body) as Record<string, any>;
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not an object');
  } catch (err) {
    throw new CallError(name, `failed to call webhook: ${(err as Error).message}`);
  }
  const invalid = (why: string) => new CallError(name, `received invalid webhook response: ${why}`);
  const response = parsed['response'] as ReviewResponse | undefined | null;
  if (version === 'v1') {
    if (parsed['apiVersion'] !== apiVersion || parsed['kind'] !== 'AdmissionReview') {
      throw invalid(`expected webhook response of ${apiVersion}, Kind=AdmissionReview, got ${String(parsed['apiVersion'] ?? '')}, Kind=${String(parsed['kind'] ?? '')}`);
    }
    if (!response || typeof response !== 'object') throw invalid('webhook response was absent');
    if (response.uid !== uid) throw invalid(`expected response.uid="${uid}", got "${response.uid ?? ''}"`);
    if (opts.mutating) {
      if (response.patch && !response.patchType) throw invalid('webhook returned response.patch but not response.patchType');
      if (!response.patch && response.patchType) throw invalid('webhook returned response.patchType but not response.patch');
      if (response.patchType && response.patchType !== 'JSONPatch') throw invalid(`webhook returned invalid response.patchType of "${response.patchType}"`);
    } else {
      if (response.patch) throw invalid('validating webhook may not return response.patch');
      if (response.patchType) throw invalid('validating webhook may not return response.patchType');
    }
  } else {
    if (!response || typeof response !== 'object') throw invalid('webhook response was absent');
    if (response.patchType && response.patchType !== 'JSONPatch') throw invalid(`webhook returned invalid response.patchType of "${response.patchType}"`);
  }
  return response;
}
