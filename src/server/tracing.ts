/**
 * --tracing-config-file (APIServerTracing): the TracingConfiguration file (apiserver.config.k8s.io/v1alpha1:
 * endpoint, default localhost:4317; samplingRatePerMillion, default 0) and the tracer behind the request
 * filter: a parent-based sampler over a trace-ID ratio (never sampling when the rate is 0 or unset, as
 * kube-apiserver 1.23), a batch processor (OTEL_BSP_SCHEDULE_DELAY, default 5000 ms; 512 spans a batch;
 * 2048 queued) and an OTLP/gRPC exporter (insecure, as kube-apiserver's) with the service name "apiserver".
 * gRPC is loaded only when the option is given.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import type { SpanContext } from '../util/tracecontext.js';
import type { AttributeValue, Span, Tracer } from '../util/tracing.js';
import { yaml } from '../util/yaml.js';

export const TRACING_CONFIG_API_VERSION = 'apiserver.config.k8s.io/v1alpha1';
export const DEFAULT_TRACING_ENDPOINT = 'localhost:4317';
const MAX_SAMPLING_RATE = 1_000_000;

export interface TracingConfiguration {
  endpoint: string;
  samplingRatePerMillion: number;
}

/** Reads and validates the file; errors read as kube-apiserver's. */
export function loadTracingConfig(path: string): TracingConfiguration {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new Error(`failed to read tracing configuration from "${path}": ${(err as Error).message}`, { cause: err });
  }
  let doc: unknown;
  try {
    doc = yaml().parse(text);
  } catch (err) {
    throw new Error(`failed to decode tracing configuration from "${path}": ${(err as Error).message}`, { cause: err });
  }
  const obj = (doc && typeof doc === 'object' && !Array.isArray(doc) ? doc : {}) as Record<string, unknown>;
  const str = (v: unknown): string => (typeof v === 'string' ? v : v === undefined || v === null ? '' : JSON.stringify(v));
  if (obj.apiVersion !== TRACING_CONFIG_API_VERSION || obj.kind !== 'TracingConfiguration') {
    throw new Error(
      `failed to decode tracing configuration from "${path}": no kind "${str(obj.kind)}" is registered for version "${str(obj.apiVersion)}"`,
    );
  }
  const errs: string[] = [];
  let endpoint = DEFAULT_TRACING_ENDPOINT;
  if (obj.endpoint !== undefined && obj.endpoint !== null) {
    if (typeof obj.endpoint !== 'string') errs.push(`endpoint: Invalid value: ${JSON.stringify(obj.endpoint)}: must be a string`);
    else {
      endpoint = obj.endpoint;
      try {
        new URL(endpoint.includes('//') ? endpoint : `dns://${endpoint}`);
      } catch (e) {
        errs.push(`endpoint: Invalid value: "${endpoint}": encountered error parsing endpoint: ${(e as Error).message}`);
      }
    }
  }
  let rate = 0;
  if (obj.samplingRatePerMillion !== undefined && obj.samplingRatePerMillion !== null) {
    const r = obj.samplingRatePerMillion;
    if (typeof r !== 'number' || !Number.isInteger(r)) errs.push(`samplingRatePerMillion: Invalid value: ${JSON.stringify(r)}: must be an integer`);
    else if (r < 0) errs.push(`samplingRatePerMillion: Invalid value: ${r}: sampling rate must be positive`);
    else if (r > MAX_SAMPLING_RATE) errs.push(`samplingRatePerMillion: Invalid value: ${r}: sampling rate per million must be less than or equal to one million`);
    else rate = r;
  }
  if (errs.length > 0) throw new Error(`invalid tracing configuration in "${path}": [${errs.join(', ')}]`);
  return { endpoint, samplingRatePerMillion: rate };
}

// ---- the OTLP ExportTraceServiceRequest, encoded by hand (opentelemetry/proto/trace/v1) ---------------------

class PbWriter {
  private readonly parts: Buffer[] = [];
  private varint(n: number | bigint): void {
    let v = BigInt(n);
    if (v < 0n) v &= 0xffffffffffffffffn;
    const bytes: number[] = [];
    while (v >= 0x80n) {
      bytes.push(Number(v & 0x7fn) | 0x80);
      v >>= 7n;
    }
    bytes.push(Number(v));
    this.parts.push(Buffer.from(bytes));
  }
  private tag(field: number, wire: number): void {
    this.varint((field << 3) | wire);
  }
  uint(field: number, n: number | bigint): this {
    this.tag(field, 0);
    this.varint(n);
    return this;
  }
  bytes(field: number, b: Buffer): this {
    this.tag(field, 2);
    this.varint(b.length);
    this.parts.push(b);
    return this;
  }
  string(field: number, s: string): this {
    return this.bytes(field, Buffer.from(s, 'utf8'));
  }
  message(field: number, w: PbWriter): this {
    return this.bytes(field, w.finish());
  }
  fixed64(field: number, n: bigint): this {
    this.tag(field, 1);
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(n);
    this.parts.push(b);
    return this;
  }
  double(field: number, n: number): this {
    this.tag(field, 1);
    const b = Buffer.alloc(8);
    b.writeDoubleLE(n);
    this.parts.push(b);
    return this;
  }
  finish(): Buffer {
    return Buffer.concat(this.parts);
  }
}

function keyValue(key: string, value: AttributeValue): PbWriter {
  const any = new PbWriter();
  if (typeof value === 'string') any.string(1, value);
  else if (typeof value === 'boolean') any.uint(2, value ? 1 : 0);
  else if (Number.isInteger(value)) any.uint(3, value);
  else any.double(4, value);
  return new PbWriter().string(1, key).message(2, any);
}

export interface FinishedSpan {
  /** The instrumentation scope (OpenTelemetry's tracer name). */
  scope: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  /** OTLP SpanKind: 1 INTERNAL, 2 SERVER, 3 CLIENT. */
  kind: number;
  startNs: bigint;
  endNs: bigint;
  attributes: Record<string, AttributeValue>;
  /** OTLP StatusCode: 0 unset, 2 error. */
  status: { code: number; message: string };
}

/** One ResourceSpans with a ScopeSpans per instrumentation scope, in the order scopes first appear. */
export function encodeExportRequest(resource: Record<string, AttributeValue>, spans: readonly FinishedSpan[]): Buffer {
  const res = new PbWriter();
  for (const [k, v] of Object.entries(resource)) res.message(1, keyValue(k, v));
  const byScope = new Map<string, PbWriter>();
  for (const s of spans) {
    let scopeSpans = byScope.get(s.scope);
    if (!scopeSpans) byScope.set(s.scope, (scopeSpans = new PbWriter().message(1, new PbWriter().string(1, s.scope))));
    const w = new PbWriter().bytes(1, Buffer.from(s.traceId, 'hex')).bytes(2, Buffer.from(s.spanId, 'hex'));
    if (s.parentSpanId) w.bytes(4, Buffer.from(s.parentSpanId, 'hex'));
    w.string(5, s.name).uint(6, s.kind).fixed64(7, s.startNs).fixed64(8, s.endNs);
    for (const [k, v] of Object.entries(s.attributes)) w.message(9, keyValue(k, v));
    const status = new PbWriter();
    if (s.status.message) status.string(2, s.status.message);
    if (s.status.code) status.uint(3, s.status.code);
    w.message(15, status);
    scopeSpans.message(2, w);
  }
  const rs = new PbWriter().message(1, res);
  for (const scopeSpans of byScope.values()) rs.message(2, scopeSpans);
  return new PbWriter().message(1, rs).finish();
}

// ---- the tracer ------------------------------------------------------------------------------------------

export interface ServerTracer extends Tracer {
  /** Exports what is queued and closes the connection. */
  shutdown(): Promise<void>;
}

const EXPORT_METHOD = '/opentelemetry.proto.collector.trace.v1.TraceService/Export';
const MAX_BATCH = 512;
const MAX_QUEUE = 2048;
const DEFAULT_SCOPE = 'k8s.io/apiserver';

/** Wall-clock nanoseconds that never go backwards within one tracer: the monotonic clock from a wall-clock origin. */
function clock(): () => bigint {
  const origin = BigInt(Date.now()) * 1_000_000n - process.hrtime.bigint();
  return () => origin + process.hrtime.bigint();
}

/** TraceIDRatioBased: the trace ID's low 8 bytes, shifted right once, below rate * 2^63. */
function ratioSampled(traceId: string, ratePerMillion: number): boolean {
  if (ratePerMillion >= MAX_SAMPLING_RATE) return true;
  if (ratePerMillion <= 0) return false;
  const bound = (BigInt(ratePerMillion) * (1n << 63n)) / BigInt(MAX_SAMPLING_RATE);
  return BigInt(`0x${traceId.slice(16)}`) >> 1n < bound;
}

export async function createTracer(config: TracingConfiguration, log: (m: string) => void): Promise<ServerTracer> {
  const grpc = await import('@grpc/grpc-js');
  const client = new grpc.Client(config.endpoint, grpc.credentials.createInsecure());
  const resource: Record<string, AttributeValue> = { 'service.name': 'apiserver', 'host.name': hostname() };
  const nowNs = clock();
  const delayMs = Number(process.env['OTEL_BSP_SCHEDULE_DELAY'] ?? '') || 5000;
  let queue: FinishedSpan[] = [];
  let timer: NodeJS.Timeout | undefined;
  let inflight: Promise<void> = Promise.resolve();
  let closed = false;
  let dropped = 0;

  const send = (batch: FinishedSpan[]): Promise<void> =>
    new Promise((resolve) => {
      const body = encodeExportRequest(resource, batch);
      client.makeUnaryRequest(
        EXPORT_METHOD,
        (b: Buffer) => b,
        (b: Buffer) => b,
        body,
        { deadline: Date.now() + 10_000 },
        (err) => {
          if (err) log(`traces export: ${err.message}`);
          resolve();
        },
      );
    });
  const flush = (): Promise<void> => {
    timer = undefined;
    while (queue.length > 0) {
      const batch = queue.slice(0, MAX_BATCH);
      queue = queue.slice(MAX_BATCH);
      inflight = inflight.then(() => send(batch));
    }
    return inflight;
  };
  const enqueue = (s: FinishedSpan): void => {
    if (closed) return;
    if (queue.length >= MAX_QUEUE) {
      if (dropped++ === 0) log('traces export: the span queue is full; dropping spans');
      return;
    }
    queue.push(s);
    if (queue.length >= MAX_BATCH) void flush();
    else timer ??= setTimeout(() => void flush(), delayMs).unref();
  };

  return {
    startSpan(name, { kind = 1, parent, attributes, scope = DEFAULT_SCOPE }): Span {
      const traceId = parent?.traceId ?? randomBytes(16).toString('hex');
      const spanId = randomBytes(8).toString('hex');
      const sampled = parent ? parent.sampled : ratioSampled(traceId, config.samplingRatePerMillion);
      const context: SpanContext = { traceId, spanId, sampled };
      const startNs = nowNs();
      const attrs = { ...attributes };
      let ended = false;
      return {
        context,
        setAttributes(more) {
          Object.assign(attrs, more);
        },
        end(status) {
          if (ended || !sampled) return;
          ended = true;
          enqueue({
            traceId,
            spanId,
            ...(parent ? { parentSpanId: parent.spanId } : {}),
            scope,
            name,
            kind,
            startNs,
            endNs: nowNs(),
            attributes: attrs,
            status: status ? { code: 2, message: status.error } : { code: 0, message: '' },
          });
        },
      };
    },
    async shutdown() {
      if (timer) clearTimeout(timer);
      await flush();
      closed = true;
      client.close();
    },
  };
}
