/**
 * WithTracing (--tracing-config-file under APIServerTracing), as Kubernetes' otelhttp handler named
 * "KubernetesAPI": one server span per HTTP request, child of an incoming W3C `traceparent`, with the
 * http.* and net.* attributes otelhttp sets, and the request served inside the span's context so that
 * webhook calls made for it carry its traceparent. The tracer (sampling, export) is the server's.
 */
import { parseTraceparent, runInSpanContext } from '../util/tracecontext.js';
import { SpanKind, type AttributeValue, type Tracer } from '../util/tracing.js';
import type { ApiRequest, ApiResponse, Handler } from './authn.js';

/** The server's tracer, as the request filter uses it. */
export type RequestTracer = Tracer;

/** otelhttp's instrumentation scope, under which request spans are exported. */
export const TRACING_FILTER_SCOPE = 'k8s.io/apiserver/pkg/endpoints/filters';

export const TRACING_SERVER_NAME = 'KubernetesAPI';

function flavor(req: ApiRequest): string {
  return req.httpVersion === '2.0' ? '2' : req.httpVersion;
}

function requestAttributes(req: ApiRequest): Record<string, AttributeValue> {
  const a: Record<string, AttributeValue> = {
    'http.method': req.method ?? 'GET',
    'http.target': req.url ?? '/',
    'http.scheme': 'https',
    'http.flavor': flavor(req),
    'http.server_name': TRACING_SERVER_NAME,
  };
  const host = req.headers[':authority'] ?? req.headers.host;
  if (typeof host === 'string' && host !== '') {
    a['http.host'] = host;
    const i = host.lastIndexOf(':');
    const name = i > 0 && !host.endsWith(']') ? host.slice(0, i) : host;
    a['net.host.name'] = name.replace(/^\[|\]$/g, '');
    if (i > 0 && !host.endsWith(']')) {
      const port = Number(host.slice(i + 1));
      if (Number.isInteger(port)) a['net.host.port'] = port;
    }
  }
  const ua = req.headers['user-agent'];
  if (typeof ua === 'string' && ua !== '') a['http.user_agent'] = ua;
  const xff = req.headers['x-forwarded-for'];
  if (typeof xff === 'string' && xff !== '') a['http.client_ip'] = (xff.split(',')[0] ?? '').trim();
  const s = req.socket;
  if (s?.remoteAddress) a['net.peer.ip'] = s.remoteAddress.replace(/^::ffff:/, '');
  if (s?.remotePort !== undefined) a['net.peer.port'] = s.remotePort;
  const length = Number(req.headers['content-length']);
  if (Number.isInteger(length) && length > 0) a['http.request_content_length'] = length;
  return a;
}

/** OpenTelemetry's server-span status from an HTTP status (semconv of otelhttp 0.20): 4xx and 5xx are errors. */
function statusOf(code: number): { error: string } | undefined {
  if (code < 100 || code >= 600) return { error: `Invalid HTTP status code ${code}` };
  return code >= 400 ? { error: '' } : undefined;
}

export function withTracing(next: Handler, deps: { tracer: RequestTracer }): Handler {
  return (req: ApiRequest, res: ApiResponse) => {
    const parent = parseTraceparent(req.headers['traceparent']);
    const span = deps.tracer.startSpan(TRACING_SERVER_NAME, { kind: SpanKind.SERVER, parent, attributes: requestAttributes(req), scope: TRACING_FILTER_SCOPE });
    let wrote = 0;
    const write = res.write.bind(res) as (...args: unknown[]) => boolean;
    const sized = (chunk: unknown): void => {
      if (typeof chunk === 'string') wrote += Buffer.byteLength(chunk);
      else if (chunk instanceof Uint8Array) wrote += chunk.byteLength;
    };
    res.write = ((...args: unknown[]) => {
      sized(args[0]);
      return write(...args);
    }) as typeof res.write;
    const end = res.end.bind(res) as (...args: unknown[]) => ApiResponse;
    res.end = ((...args: unknown[]) => {
      if (typeof args[0] !== 'function') sized(args[0]);
      return end(...args);
    }) as typeof res.end;
    const finish = (): void => {
      span.setAttributes({ 'http.status_code': res.statusCode, 'http.wrote_bytes': wrote });
      span.end(statusOf(res.statusCode));
    };
    return runInSpanContext(span.context, async () => {
      try {
        await next(req, res);
      } finally {
        finish();
      }
    });
  };
}
