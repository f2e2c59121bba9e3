/**
 * Builds the audit pipeline from the --audit-* options, as kube-apiserver's AuditOptions.ApplyTo:
 * the policy; the log backend (--audit-log-path) wrapped for its mode and then in truncation; the webhook
 * backend likewise; both in a union when both are configured. Without a policy file no events are made
 * (the backends are not even built), as in Kubernetes.
 */
import { unionBackend, ignoreErrors, truncateBackend, BufferedBackend, type Backend, type BatchConfig, type PluginContext, type TruncateConfig } from './backend.js';
import { fileWriter, logBackend, stdoutWriter, type LogFormat } from './log.js';
import { loadPolicyFile, policyEvaluator, type PolicyEvaluator } from './policy.js';
import { parseEventVersion, type EventVersion } from './types.js';
import { loadWebhookConfig, WebhookBackend } from './webhook.js';
import type { Dialer } from '../../util/dial.js';
import type { AuditMetrics } from './metrics.js';

export type AuditMode = 'batch' | 'blocking' | 'blocking-strict';
export const AUDIT_MODES: readonly AuditMode[] = ['batch', 'blocking', 'blocking-strict'];

export interface BatchOptions {
  bufferSize: number;
  maxSize: number;
  maxWaitMs: number;
  throttleEnable: boolean;
  throttleQps: number;
  throttleBurst: number;
}

export interface TruncateOptions {
  enabled: boolean;
  maxEventSize: number;
  maxBatchSize: number;
}

export interface AuditConfig {
  policyFile?: string;
  log?: {
    path: string;
    format: string;
    mode: string;
    version: string;
    maxAge: number;
    maxBackup: number;
    maxSize: number;
    compress: boolean;
    batch: BatchOptions;
    truncate: TruncateOptions;
  };
  webhook?: {
    configFile: string;
    mode: string;
    version: string;
    initialBackoffMs: number;
    batch: BatchOptions;
    truncate: TruncateOptions;
    /** The controlplane egress (--egress-selector-config-file) the calls go through. */
    dial?: Dialer;
  };
  /** How long shutdown waits for a failing webhook; default 30 s. */
  flushTimeoutMs?: number;
}

export interface AuditPipeline {
  policy: PolicyEvaluator;
  backend: Backend;
}

function checkMode(plugin: string, mode: string): AuditMode {
  if (!(AUDIT_MODES as readonly string[]).includes(mode)) {
    throw new Error(`invalid audit ${plugin} mode ${mode}, allowed modes are "${AUDIT_MODES.join(',')}"`);
  }
  return mode as AuditMode;
}

/** kube-apiserver's validateBackendBatchOptions and truncate Validate, with its messages. */
function checkBatchAndTruncate(plugin: string, mode: AuditMode, b: BatchOptions, t: TruncateOptions): void {
  if (mode === 'batch') {
    if (b.bufferSize <= 0) throw new Error(`invalid audit batch ${plugin} buffer size ${b.bufferSize}, must be a positive number`);
    if (b.maxSize <= 0) throw new Error(`invalid audit batch ${plugin} max batch size ${b.maxSize}, must be a positive number`);
    if (b.throttleEnable) {
      if (b.throttleQps <= 0) throw new Error(`invalid audit batch ${plugin} throttle QPS ${b.throttleQps}, must be a positive number`);
      if (b.throttleBurst <= 0) throw new Error(`invalid audit batch ${plugin} throttle burst ${b.throttleBurst}, must be a positive number`);
    }
  }
  if (t.maxEventSize <= 0) throw new Error(`invalid audit truncate ${plugin} max event size ${t.maxEventSize}, must be a positive number`);
  if (t.maxBatchSize < t.maxEventSize) {
    throw new Error(`invalid audit truncate ${plugin} max batch size ${t.maxBatchSize}, must be greater than max event size (${t.maxEventSize})`);
  }
}

function checkVersion(plugin: string, text: string): EventVersion {
  try {
    return parseEventVersion(text);
  } catch (e) {
    throw new Error(`--audit-${plugin}-version: ${(e as Error).message}`, { cause: e });
  }
}

/** Throws kube-apiserver's message for the first invalid audit option. */
export function validateAuditConfig(c: AuditConfig): void {
  if (c.log && c.log.path !== '') {
    const mode = checkMode('log', c.log.mode);
    checkBatchAndTruncate('log', mode, c.log.batch, c.log.truncate);
    checkVersion('log', c.log.version);
    if (c.log.format !== 'json' && c.log.format !== 'legacy') throw new Error(`invalid audit log format ${c.log.format}, allowed formats are "legacy,json"`);
    if (c.log.maxAge < 0) throw new Error(`--audit-log-maxage ${c.log.maxAge} can't be a negative number`);
    if (c.log.maxBackup < 0) throw new Error(`--audit-log-maxbackup ${c.log.maxBackup} can't be a negative number`);
    if (c.log.maxSize < 0) throw new Error(`--audit-log-maxsize ${c.log.maxSize} can't be a negative number`);
  }
  if (c.webhook && c.webhook.configFile !== '') {
    const mode = checkMode('webhook', c.webhook.mode);
    checkBatchAndTruncate('webhook', mode, c.webhook.batch, c.webhook.truncate);
    checkVersion('webhook', c.webhook.version);
  }
}

function batchConfig(b: BatchOptions): BatchConfig {
  return {
    bufferSize: b.bufferSize,
    maxBatchSize: b.maxSize,
    maxBatchWaitMs: b.maxWaitMs,
    ...(b.throttleEnable ? { throttle: { qps: b.throttleQps, burst: b.throttleBurst } } : {}),
  };
}

/** The mode's wrapper (kube-apiserver's wrapBackend), then truncation when enabled. */
function wrap(delegate: Backend, mode: AuditMode, batch: BatchOptions, truncate: TruncateOptions, version: EventVersion, ctx: PluginContext): Backend {
  let b = delegate;
  if (mode === 'blocking') b = ignoreErrors(b);
  else if (mode === 'batch') b = new BufferedBackend(b, batchConfig(batch), ctx);
  if (truncate.enabled) {
    const t: TruncateConfig = { maxEventSize: truncate.maxEventSize, maxBatchSize: truncate.maxBatchSize };
    b = truncateBackend(b, t, version, ctx);
  }
  return b;
}

/** Loads the policy and builds the backends; undefined when nothing is to be audited. Throws on bad options. */
export async function buildAuditPipeline(c: AuditConfig, deps: { metrics: AuditMetrics; logger: (m: string) => void }): Promise<AuditPipeline | undefined> {
  validateAuditConfig(c);
  const ctx: PluginContext = { metrics: deps.metrics, logger: deps.logger };
  const logOn = !!c.log && c.log.path !== '';
  const webhookOn = !!c.webhook && c.webhook.configFile !== '';
  if (!c.policyFile) {
    if (logOn || webhookOn) deps.logger('No audit policy file provided, no events will be recorded');
    return undefined;
  }
  const policy = policyEvaluator(await loadPolicyFile(c.policyFile));
  const backends: Backend[] = [];
  if (c.log && logOn) {
    const l = c.log;
    const version = parseEventVersion(l.version);
    const mode = checkMode('log', l.mode);
    const writer =
      l.path === '-'
        ? stdoutWriter()
        : fileWriter({
            filename: l.path,
            maxSize: l.maxSize,
            maxBackups: l.maxBackup,
            maxAge: l.maxAge,
            compress: l.compress,
            onError: (e) => deps.logger(`audit log rotation: ${e.message}`),
          });
    const log = logBackend(writer, l.format as LogFormat, version, ctx, { batch: mode === 'batch' });
    backends.push(wrap(log, mode, l.batch, l.truncate, version, ctx));
  }
  if (c.webhook && webhookOn) {
    const w = c.webhook;
    const version = parseEventVersion(w.version);
    const mode = checkMode('webhook', w.mode);
    const webhook = new WebhookBackend(
      w.dial ? { ...loadWebhookConfig(w.configFile), dial: w.dial } : loadWebhookConfig(w.configFile),
      { version, initialBackoffMs: w.initialBackoffMs, persistent: mode === 'batch', ...(c.flushTimeoutMs !== undefined ? { flushTimeoutMs: c.flushTimeoutMs } : {}) },
      ctx,
    );
    backends.push(wrap(webhook, mode, w.batch, w.truncate, version, ctx));
  }
  if (backends.length === 0) return undefined;
  return { policy, backend: unionBackend(backends) };
}
