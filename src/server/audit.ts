/**
 * Audit wiring of the server: the pipeline the --audit-* options describe, and its metrics counted in the
 * server's registry (served at /metrics) once the server has one.
 */
import {
  AUDIT_METRICS,
  buildAuditPipeline,
  type AuditConfig,
  type AuditDeps,
  type AuditMetrics,
} from '../filters/audit/index.js';
import type { ServerOptions } from './options.js';
import type { ServerMetrics } from './metrics.js';

export interface ServerAudit {
  deps: Omit<AuditDeps, 'longRunning'>;
  /** Counts into the server's registry from now on. */
  bindMetrics(metrics: ServerMetrics): void;
}

/** Audit metrics that go nowhere until bound to a registry (the pipeline is built before the registry). */
class BoundMetrics implements AuditMetrics {
  private target: AuditMetrics | undefined;
  bind(m: AuditMetrics): void {
    this.target = m;
  }
  event(): void {
    this.target?.event();
  }
  error(plugin: string, count: number): void {
    this.target?.error(plugin, count);
  }
  level(level: Parameters<AuditMetrics['level']>[0]): void {
    this.target?.level(level);
  }
  rejected(): void {
    this.target?.rejected();
  }
}

/** The audit counters of kube-apiserver 1.23 in the server's registry (all ALPHA). */
export function serverAuditMetrics(metrics: ServerMetrics): AuditMetrics {
  const event = metrics.counter({ name: AUDIT_METRICS.event.name, help: AUDIT_METRICS.event.help, stability: 'ALPHA' });
  const error = metrics.counter({ name: AUDIT_METRICS.error.name, help: AUDIT_METRICS.error.help, labelNames: ['plugin'], stability: 'ALPHA' });
  const level = metrics.counter({ name: AUDIT_METRICS.level.name, help: AUDIT_METRICS.level.help, labelNames: ['level'], stability: 'ALPHA' });
  const rejected = metrics.counter({ name: AUDIT_METRICS.rejected.name, help: AUDIT_METRICS.rejected.help, stability: 'ALPHA' });
  return {
    event: () => event.inc(),
    error: (plugin, count) => error.inc({ plugin }, count),
    level: (l) => level.inc({ level: l }),
    rejected: () => rejected.inc(),
  };
}

/** Builds the pipeline (loading the policy and opening the log); undefined when nothing is audited. */
export async function buildAudit(config: AuditConfig, logger: (m: string) => void): Promise<ServerAudit | undefined> {
  const metrics = new BoundMetrics();
  const pipeline = await buildAuditPipeline(config, { metrics, logger });
  if (!pipeline) return undefined;
  return {
    deps: { ...pipeline, metrics },
    bindMetrics: (m) => metrics.bind(serverAuditMetrics(m)),
  };
}

/** The --audit-* options as the server's audit config. */
export function auditConfigFrom(o: ServerOptions): AuditConfig {
  return {
    ...(o.auditPolicyFile ? { policyFile: o.auditPolicyFile } : {}),
    log: {
      path: o.auditLogPath ?? '',
      format: o.auditLogFormat,
      mode: o.auditLogMode,
      version: o.auditLogVersion,
      maxAge: o.auditLogMaxage,
      maxBackup: o.auditLogMaxbackup,
      maxSize: o.auditLogMaxsize,
      compress: o.auditLogCompress,
      batch: {
        bufferSize: o.auditLogBatchBufferSize,
        maxSize: o.auditLogBatchMaxSize,
        maxWaitMs: o.auditLogBatchMaxWait,
        throttleEnable: o.auditLogBatchThrottleEnable,
        throttleQps: o.auditLogBatchThrottleQps,
        throttleBurst: o.auditLogBatchThrottleBurst,
      },
      truncate: {
        enabled: o.auditLogTruncateEnabled,
        maxEventSize: o.auditLogTruncateMaxEventSize,
        maxBatchSize: o.auditLogTruncateMaxBatchSize,
      },
    },
    webhook: {
      configFile: o.auditWebhookConfigFile ?? '',
      mode: o.auditWebhookMode,
      version: o.auditWebhookVersion,
      initialBackoffMs: o.auditWebhookInitialBackoff,
      batch: {
        bufferSize: o.auditWebhookBatchBufferSize,
        maxSize: o.auditWebhookBatchMaxSize,
        maxWaitMs: o.auditWebhookBatchMaxWait,
        throttleEnable: o.auditWebhookBatchThrottleEnable,
        throttleQps: o.auditWebhookBatchThrottleQps,
        throttleBurst: o.auditWebhookBatchThrottleBurst,
      },
      truncate: {
        enabled: o.auditWebhookTruncateEnabled,
        maxEventSize: o.auditWebhookTruncateMaxEventSize,
        maxBatchSize: o.auditWebhookTruncateMaxBatchSize,
      },
    },
  };
}
