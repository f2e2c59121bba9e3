/**
 * The audit metrics of kube-apiserver, behind a small interface so that the server's metrics registry (or a
 * test) decides where they go: apiserver_audit_event_total, apiserver_audit_error_total{plugin},
 * apiserver_audit_level_total{level} and apiserver_audit_requests_rejected_total.
 */
import type { Level } from './types.js';

export interface AuditMetrics {
  /** An event was handed to the backends (apiserver_audit_event_total). */
  event(): void;
  /** `count` events failed in `plugin` (log, webhook, buffered, truncate): apiserver_audit_error_total. */
  error(plugin: string, count: number): void;
  /** A request was evaluated at `level` (apiserver_audit_level_total, once per request). */
  level(level: Level): void;
  /** A request was refused because its event could not be stored (apiserver_audit_requests_rejected_total). */
  rejected(): void;
}

/** Metric names and help texts, as kube-apiserver registers them (all counters). */
export const AUDIT_METRICS = {
  event: { name: 'apiserver_audit_event_total', help: 'Counter of audit events generated and sent to the audit backend.' },
  error: {
    name: 'apiserver_audit_error_total',
    help: 'Counter of audit events that failed to be audited properly. Plugin identifies the plugin affected by the error.',
    label: 'plugin',
  },
  level: { name: 'apiserver_audit_level_total', help: 'Counter of policy levels for audit events (1 per request).', label: 'level' },
  rejected: {
    name: 'apiserver_audit_requests_rejected_total',
    help: 'Counter of apiserver requests rejected due to an error in audit logging backend.',
  },
} as const;

/** In-memory counters: the default when no registry is given, and what tests read. */
export class AuditCounters implements AuditMetrics {
  events = 0;
  rejections = 0;
  readonly errors = new Map<string, number>();
  readonly levels = new Map<Level, number>();

  event(): void {
    this.events++;
  }
  error(plugin: string, count: number): void {
    this.errors.set(plugin, (this.errors.get(plugin) ?? 0) + count);
  }
  level(level: Level): void {
    this.levels.set(level, (this.levels.get(level) ?? 0) + 1);
  }
  rejected(): void {
    this.rejections++;
  }
}

/** The part of prom-client's Counter this module uses. */
interface CounterLike {
  inc(labels?: Record<string, string> | number, value?: number): void;
}

/** The part of prom-client this module uses: `new Counter({name, help, labelNames, registers})`. */
export interface CounterFactory {
  Counter: new (config: { name: string; help: string; labelNames?: string[]; registers?: unknown[] }) => CounterLike;
}

/**
 * The audit metrics as prom-client counters registered in `registry` (a prom-client Registry). Pass the
 * prom-client module itself as `prom` (`import * as prom from 'prom-client'`), so that this layer does not
 * load it unless metrics are wanted.
 */
export function promAuditMetrics(prom: CounterFactory, registry: unknown): AuditMetrics {
  const registers = [registry];
  const event = new prom.Counter({ name: AUDIT_METRICS.event.name, help: AUDIT_METRICS.event.help, registers });
  const error = new prom.Counter({ name: AUDIT_METRICS.error.name, help: AUDIT_METRICS.error.help, labelNames: ['plugin'], registers });
  const level = new prom.Counter({ name: AUDIT_METRICS.level.name, help: AUDIT_METRICS.level.help, labelNames: ['level'], registers });
  const rejected = new prom.Counter({ name: AUDIT_METRICS.rejected.name, help: AUDIT_METRICS.rejected.help, registers });
  return {
    event: () => event.inc(),
    error: (plugin, count) => error.inc({ plugin }, count),
    level: (l) => level.inc({ level: l }),
    rejected: () => rejected.inc(),
  };
}

/** Sends every call to each of `list`. */
export function teeMetrics(...list: AuditMetrics[]): AuditMetrics {
  return {
    event: () => list.forEach((m) => m.event()),
    error: (p, c) => list.forEach((m) => m.error(p, c)),
    level: (l) => list.forEach((m) => m.level(l)),
    rejected: () => list.forEach((m) => m.rejected()),
  };
}
