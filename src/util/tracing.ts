/**
 * The span API shared by every layer (--tracing-config-file): a Tracer starts spans; the span a request
 * runs in is the current span context (tracecontext.ts), and child spans of it are started with
 * childSpan()/inChildSpan(). The server builds the one Tracer (src/server/tracing.ts: sampling and OTLP
 * export) and hands it to the parts that trace; without --tracing-config-file there is no Tracer, those
 * parts are not wrapped at all, and tracing costs nothing.
 */
import { currentSpanContext, runInSpanContext, type SpanContext } from './tracecontext.js';

export type AttributeValue = string | number | boolean;
export type Attributes = Record<string, AttributeValue>;

/** OTLP SpanKind values. */
export const SpanKind = { INTERNAL: 1, SERVER: 2, CLIENT: 3 } as const;

export interface Span {
  readonly context: SpanContext;
  setAttributes(attrs: Attributes): void;
  /** Ends the span with OpenTelemetry's status: Unset, or Error with a message. Later calls do nothing. */
  end(status?: { error: string }): void;
}

export interface SpanOptions {
  /** SpanKind; INTERNAL when absent. */
  kind?: number;
  /** The parent; a root span (sampled by the tracer's ratio) when absent. */
  parent?: SpanContext | undefined;
  attributes?: Attributes;
  /** The instrumentation scope the span is exported under (OpenTelemetry's tracer name). */
  scope?: string;
}

export interface Tracer {
  /** Starts a span (sampled or not: an unsampled span still propagates its context). */
  startSpan(name: string, opts: SpanOptions): Span;
}

/**
 * A child of the current span when that span is sampled; undefined otherwise (no current span, or one
 * that is not sampled: nothing to record, and callers skip all span work).
 */
export function childSpan(tracer: Tracer, name: string, opts: Omit<SpanOptions, 'parent'>): Span | undefined {
  const parent = currentSpanContext();
  if (!parent?.sampled) return undefined;
  return tracer.startSpan(name, { ...opts, parent });
}

/** The error status of a span that ended in err. */
export function errorStatus(err: unknown): { error: string } {
  return { error: err instanceof Error ? err.message : String(err) };
}

/**
 * Runs fn in a child span of the current sampled span (fn sees the child as current), ending it when fn
 * settles; with no sampled current span, just runs fn.
 */
export async function inChildSpan<T>(tracer: Tracer, name: string, opts: Omit<SpanOptions, 'parent'>, fn: (span: Span | undefined) => Promise<T>): Promise<T> {
  const span = childSpan(tracer, name, opts);
  if (!span) return fn(undefined);
  try {
    const out = await runInSpanContext(span.context, () => fn(span));
    span.end();
    return out;
  } catch (err) {
    span.end(errorStatus(err));
    throw err;
  }
}
