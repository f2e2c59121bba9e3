/**
 * Audit backends and the wrappers kube-apiserver composes them with: union (several backends), the
 * blocking modes (errors ignored, or reported so the request fails: blocking-strict), truncation, and the
 * batch buffer. A backend is handed immutable event snapshots.
 */
import { eventJSON, eventString } from './encode.js';
import type { AuditMetrics } from './metrics.js';
import { levelAtLeast, withoutEncoding, type AuditEvent, type EventVersion } from './types.js';

export interface Backend {
  readonly name: string;
  /**
   * Takes events; true when every one was accepted. Synchronous backends answer at once; a Promise means
   * delivery is in progress (a blocking webhook). Must not throw.
   */
  processEvents(events: readonly AuditEvent[]): boolean | Promise<boolean>;
  /** Flushes what is buffered and releases resources; resolves when done. Events arriving later are dropped. */
  shutdown(): Promise<void>;
  /** Says that shutdown has begun and a flush follows (a webhook then bounds its retries). */
  beginShutdown?(): void;
}

/** Where plugins report trouble: the error counter and a log line listing the impacted events. */
export interface PluginContext {
  metrics: AuditMetrics;
  logger: (message: string) => void;
}

/** Kubernetes' audit.HandlePluginError. */
export function handlePluginError(ctx: PluginContext, plugin: string, err: unknown, events: readonly AuditEvent[]): void {
  ctx.metrics.error(plugin, events.length);
  const message = err instanceof Error ? err.message : String(err);
  const lines = events.map((e) => eventString(e)).join('\n');
  ctx.logger(`Error in audit plugin '${plugin}' affecting ${events.length} audit events: ${message}\nImpacted events:\n${lines}`);
}

function all(results: (boolean | Promise<boolean>)[]): boolean | Promise<boolean> {
  if (results.some((r) => typeof r !== 'boolean')) return Promise.all(results.map((r) => Promise.resolve(r))).then((rs) => rs.every(Boolean));
  return results.every(Boolean);
}

/** Every backend receives every event; success only when all succeed. */
export function unionBackend(backends: Backend[]): Backend {
  if (backends.length === 1) return backends[0]!;
  return {
    name: `union[${backends.map((b) => b.name).join(',')}]`,
    processEvents: (events) => all(backends.map((b) => b.processEvents(events))),
    shutdown: async () => {
      await Promise.all(backends.map((b) => b.shutdown()));
    },
    beginShutdown: () => backends.forEach((b) => b.beginShutdown?.()),
  };
}

/** Mode blocking: the request waits for the delegate but never fails because of it. */
export function ignoreErrors(delegate: Backend): Backend {
  return {
    name: `ignoreErrors<${delegate.name}>`,
    processEvents(events) {
      const r = delegate.processEvents(events);
      return typeof r === 'boolean' ? true : r.then(() => true);
    },
    shutdown: () => delegate.shutdown(),
    beginShutdown: () => delegate.beginShutdown?.(),
  };
}

// ---- truncate ----------------------------------------------------------------------------------------

export interface TruncateConfig {
  maxEventSize: number;
  maxBatchSize: number;
}

const TRUNCATED_ANNOTATION = 'audit.k8s.io/truncated';

/**
 * Kubernetes' truncate plugin: an event over maxEventSize (as serialized in `version`) loses its request and
 * response objects (annotated audit.k8s.io/truncated=true); if still too large it is dropped (an error of
 * plugin 'truncate'). Batches are split so that none exceeds maxBatchSize bytes.
 */
export function truncateBackend(delegate: Backend, config: TruncateConfig, version: EventVersion, ctx: PluginContext): Backend {
  const size = (e: AuditEvent) => Buffer.byteLength(eventJSON(e, version, true)) + 1;
  return {
    name: `truncate<${delegate.name}>`,
    processEvents(events) {
      const results: (boolean | Promise<boolean>)[] = [];
      const dropped: AuditEvent[] = [];
      let batch: AuditEvent[] = [];
      let batchSize = 0;
      for (let event of events) {
        let n = size(event);
        if (n > config.maxEventSize && levelAtLeast(event.level, 'Request')) {
          const annotations = { ...(event.annotations ?? {}), [TRUNCATED_ANNOTATION]: 'true' };
          event = { ...withoutEncoding(event), requestObject: undefined, responseObject: undefined, annotations };
          n = size(event);
        }
        if (n > config.maxEventSize) {
          dropped.push(event);
          continue;
        }
        if (batch.length > 0 && batchSize + n > config.maxBatchSize) {
          results.push(delegate.processEvents(batch));
          batch = [];
          batchSize = 0;
        }
        batchSize += n;
        batch.push(event);
      }
      if (batch.length > 0) results.push(delegate.processEvents(batch));
      if (dropped.length > 0) handlePluginError(ctx, 'truncate', new Error('event is too large even after truncating'), dropped);
      return all(results);
    },
    shutdown: () => delegate.shutdown(),
    beginShutdown: () => delegate.beginShutdown?.(),
  };
}

// ---- batch buffer --------------------------------------------------------------------------------------

export interface BatchConfig {
  bufferSize: number;
  maxBatchSize: number;
  /** Longest wait before an incomplete batch is sent; 0 sends whatever is there at once. */
  maxBatchWaitMs: number;
  /** Batches per second and burst; undefined disables throttling. */
  throttle?: { qps: number; burst: number };
}

/** At most this many batches are being delivered at once (a failing webhook holds its batches here). */
const MAX_BATCHES_IN_FLIGHT = 4;

/** A token bucket of `qps` tokens per second holding at most `burst`. */
class TokenBucket {
  private tokens: number;
  private last = performance.now();
  constructor(
    private readonly qps: number,
    private readonly burst: number,
  ) {
    this.tokens = burst;
  }
  /** Milliseconds until a token is available (0: take it now). */
  take(): number {
    const now = performance.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.qps);
    this.last = now;
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return 0;
    }
    return Math.ceil(((1 - this.tokens) / this.qps) * 1000);
  }
}

/**
 * Mode batch (Kubernetes' buffered plugin): events are queued (up to bufferSize; beyond that they are dropped
 * and counted as errors of plugin 'buffered', and the request goes on) and handed to the delegate in batches
 * of maxBatchSize, or smaller once maxBatchWait has passed, at most `throttle` batches per second.
 * Batches of one with no wait and no throttle go straight to the delegate while nothing is queued (the
 * delegate must not block: the log batches its writes, a webhook posts in the background).
 * shutdown() delivers everything still queued and waits for the deliveries.
 */
export class BufferedBackend implements Backend {
  readonly name: string;
  private queue: AuditEvent[] = [];
  private head = 0;
  private timer: NodeJS.Timeout | undefined;
  private immediate: NodeJS.Immediate | undefined;
  private waitingForToken = false;
  private partialDue = false;
  private inFlight = new Set<Promise<unknown>>();
  private readonly bucket: TokenBucket | undefined;
  private stopping = false;
  private closed = false;

  constructor(
    private readonly delegate: Backend,
    private readonly config: BatchConfig,
    private readonly ctx: PluginContext,
  ) {
    this.name = `buffered<${delegate.name}>`;
    this.bucket = config.throttle ? new TokenBucket(config.throttle.qps, config.throttle.burst) : undefined;
  }

  private get length(): number {
    return this.queue.length - this.head;
  }

  processEvents(events: readonly AuditEvent[]): boolean {
    // Batches of one sent at once (the log's defaults): with nothing queued or in flight, hand them over
    // now rather than on the next turn of the event loop.
    if (this.length === 0 && this.inFlight.size === 0 && this.config.maxBatchSize === 1 && this.config.maxBatchWaitMs <= 0 && !this.bucket && !this.closed) {
      for (const ev of events) this.deliver([ev]);
      return true;
    }
    for (let i = 0; i < events.length; i++) {
      if (this.closed || this.length >= this.config.bufferSize) {
        const reason = this.closed ? 'audit backend shut down' : 'audit buffer queue blocked';
        handlePluginError(this.ctx, 'buffered', new Error(reason), events.slice(i));
        break;
      }
      this.queue.push(events[i]!);
    }
    this.schedule();
    return true;
  }

  /** Arranges the next dispatch: now for a full batch, after maxBatchWait for a partial one. */
  private schedule(): void {
    if (this.length === 0 || this.immediate || this.waitingForToken) return;
    if (this.length >= this.config.maxBatchSize || this.partialDue || this.stopping || this.config.maxBatchWaitMs <= 0) {
      this.immediate = setImmediate(() => {
        this.immediate = undefined;
        this.dispatch();
      });
    } else if (!this.timer) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.partialDue = true;
        this.schedule();
      }, this.config.maxBatchWaitMs);
      this.timer.unref();
    }
  }

  private dispatch(): void {
    while (this.length > 0 && this.inFlight.size < MAX_BATCHES_IN_FLIGHT) {
      const full = this.length >= this.config.maxBatchSize;
      if (!full && !this.partialDue && !this.stopping && this.config.maxBatchWaitMs > 0) break;
      const wait = this.bucket?.take() ?? 0;
      if (wait > 0) {
        this.waitingForToken = true;
        setTimeout(() => {
          this.waitingForToken = false;
          this.dispatch();
        }, wait).unref();
        return;
      }
      const batch = this.queue.slice(this.head, this.head + this.config.maxBatchSize);
      this.head += batch.length;
      if (this.head > 1024 && this.head * 2 > this.queue.length) {
        this.queue = this.queue.slice(this.head);
        this.head = 0;
      }
      if (this.length < this.config.maxBatchSize) this.partialDue = false;
      this.deliver(batch);
    }
    if (this.length === 0 && this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    this.schedule();
  }

  private deliver(batch: AuditEvent[]): void {
    let r: boolean | Promise<boolean>;
    try {
      r = this.delegate.processEvents(batch);
    } catch (e) {
      handlePluginError(this.ctx, 'buffered', e, batch);
      return;
    }
    if (typeof r === 'boolean') return;
    const p = r.catch(() => false).finally(() => {
      this.inFlight.delete(p);
      this.schedule();
    });
    this.inFlight.add(p);
  }

  async shutdown(): Promise<void> {
    if (this.closed) return;
    this.beginShutdown();
    this.schedule();
    // Deliver everything queued, then wait for the deliveries in progress.
    while (this.length > 0 || this.inFlight.size > 0 || this.immediate || this.waitingForToken) {
      if (this.inFlight.size > 0) await Promise.race(this.inFlight);
      else await new Promise((resolve) => (this.waitingForToken ? setTimeout(resolve, 5) : setImmediate(resolve)));
      if (this.length > 0 && !this.immediate && !this.waitingForToken) this.dispatch();
    }
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    await this.delegate.shutdown();
  }

  beginShutdown(): void {
    this.stopping = true;
    this.delegate.beginShutdown?.();
  }
}
