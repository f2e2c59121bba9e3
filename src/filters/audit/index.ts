/** The audit subsystem: policy, events, backends and filters (see each module). */
export { buildAuditPipeline, validateAuditConfig, AUDIT_MODES, type AuditConfig, type AuditPipeline, type BatchOptions, type TruncateOptions } from './config.js';
export { withAudit, withAuditID, withFailedAuthenticationAudit, getAuditID, sourceIPs, AUDIT_ID_HEADER, type AuditDeps } from './filter.js';
export { AuditCounters, promAuditMetrics, teeMetrics, AUDIT_METRICS, type AuditMetrics, type CounterFactory } from './metrics.js';
export { parsePolicy, loadPolicyFile, policyEvaluator, type Policy, type PolicyEvaluator, type RequestAuditConfig } from './policy.js';
export type { Backend } from './backend.js';
export type { AuditEvent, Level, Stage } from './types.js';
