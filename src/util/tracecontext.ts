/**
 * W3C trace context for --tracing-config-file: the span a request runs in, kept in an AsyncLocalStorage so
 * that outgoing calls made while serving it (admission, authentication and authorization webhooks) carry a
 * `traceparent` header naming it. Nothing is stored unless tracing is configured: without it a request
 * never enters run() and traceparent() returns undefined.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

export interface SpanContext {
  /** 32 lowercase hex digits. */
  traceId: string;
  /** 16 lowercase hex digits. */
  spanId: string;
  sampled: boolean;
}

// Holds no data itself: each value lives only for the asynchronous scope of one request's run().
const current = new AsyncLocalStorage<SpanContext>();

/** Runs fn with ctx as the current span context. */
export function runInSpanContext<T>(ctx: SpanContext, fn: () => T): T {
  return current.run(ctx, fn);
}

export function currentSpanContext(): SpanContext | undefined {
  return current.getStore();
}

export function formatTraceparent(ctx: SpanContext): string {
  return `00-${ctx.traceId}-${ctx.spanId}-${ctx.sampled ? '01' : '00'}`;
}

/** The traceparent header for an outgoing call made in the current span, if any. */
export function outgoingTraceparent(): string | undefined {
  const ctx = current.getStore();
  return ctx ? formatTraceparent(ctx) : undefined;
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/** Parses a W3C traceparent header (as OpenTelemetry's propagator: all-zero ids and version ff are invalid). */
export function parseTraceparent(header: string | string[] | undefined): SpanContext | undefined {
  const h = Array.isArray(header) ? header[0] : header;
  if (!h) return undefined;
  const m = TRACEPARENT.exec(h.trim());
  if (!m) return undefined;
  const [, version, traceId, spanId, flags, rest] = m as unknown as [string, string, string, string, string, string | undefined];
  if (version === 'ff' || (version === '00' && rest !== undefined)) return undefined;
  if (/^0+$/.test(traceId) || /^0+$/.test(spanId)) return undefined;
  return { traceId, spanId, sampled: (parseInt(flags, 16) & 1) === 1 };
}
