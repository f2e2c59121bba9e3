/**
 * EventRateLimit admission, as Kubernetes 1.23's (plugin/pkg/admission/eventratelimit): creates and updates
 * of core Events (not dry runs) take a token from each configured limiter's bucket; an empty bucket refuses
 * the request with 429 'Too many requests: limit reached on type <type> for key <key>'. Limiter types:
 * Server (one bucket), Namespace (per namespace), User (per user name) and SourceAndObject (per event
 * source and involved object); the per-key buckets are kept in a cache of cacheSize entries (least recently
 * used first out; default 4096). A bucket starts full (burst tokens) and refills at qps tokens per second.
 *
 * Configuration: apiVersion eventratelimit.admission.k8s.io/v1alpha1, kind Configuration,
 * limits: [{type, qps, burst, cacheSize}].
 */
import { apiErrors } from '../errors.js';
import type { Admission, AdmissionAttributes } from '../store.js';
import { objOf } from './pod-helpers.js';

export const LIMIT_TYPES = ['Server', 'Namespace', 'User', 'SourceAndObject'] as const;
export type LimitType = (typeof LIMIT_TYPES)[number];
const DEFAULT_CACHE_SIZE = 4096;

export interface EventRateLimit {
  type: LimitType;
  qps: number;
  burst: number;
  cacheSize: number;
}

export function parseEventRateLimitConfig(object: unknown, source: string): EventRateLimit[] {
  const o = objOf(object);
  const apiVersion = typeof o['apiVersion'] === 'string' ? o['apiVersion'] : '';
  if (o['kind'] !== 'Configuration' || apiVersion !== 'eventratelimit.admission.k8s.io/v1alpha1') {
    throw new Error(`${source}: expected kind Configuration of eventratelimit.admission.k8s.io/v1alpha1`);
  }
  const raw: unknown[] = Array.isArray(o['limits']) ? o['limits'] : [];
  const problems: string[] = [];
  if (raw.length === 0) problems.push('limits: Required value: must not be empty');
  const limits = raw.map((l, i): EventRateLimit => {
    const x = objOf(l);
    const type = x['type'] as LimitType;
    if (!LIMIT_TYPES.includes(type)) problems.push(`limits[${i}].type: Unsupported value: ${JSON.stringify(x['type'] ?? '')}: supported values: ${LIMIT_TYPES.map((t) => `"${t}"`).join(', ')}`);
    const num = (field: string): number => (typeof x[field] === 'number' ? x[field] : 0);
    if (num('qps') <= 0) problems.push(`limits[${i}].qps: Invalid value: ${num('qps')}: must be positive`);
    if (num('burst') <= 0) problems.push(`limits[${i}].burst: Invalid value: ${num('burst')}: must be positive`);
    if (num('cacheSize') < 0) problems.push(`limits[${i}].cacheSize: Invalid value: ${num('cacheSize')}: must not be negative`);
    return { type, qps: num('qps'), burst: num('burst'), cacheSize: num('cacheSize') > 0 ? num('cacheSize') : DEFAULT_CACHE_SIZE };
  });
  if (problems.length > 0) throw new Error(`${source}: invalid configuration: ${problems.join('; ')}`);
  return limits;
}

/** A token bucket: `burst` tokens at most, refilled at `qps` per second. */
class TokenBucket {
  private tokens: number;
  private last: number;
  constructor(
    private readonly qps: number,
    private readonly burst: number,
    now: number,
  ) {
    this.tokens = burst;
    this.last = now;
  }
  tryAccept(now: number): boolean {
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.qps);
    this.last = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}

/** One limiter: a bucket per key, the least recently used dropped beyond cacheSize. */
class Limiter {
  private readonly buckets = new Map<string, TokenBucket>();
  constructor(private readonly limit: EventRateLimit) {}
  tryAccept(key: string, now: number): boolean {
    let b = this.buckets.get(key);
    if (b) {
      this.buckets.delete(key);
    } else {
      b = new TokenBucket(this.limit.qps, this.limit.burst, now);
      if (this.buckets.size >= this.limit.cacheSize) this.buckets.delete(this.buckets.keys().next().value!);
    }
    this.buckets.set(key, b);
    return b.tryAccept(now);
  }
}

function keyOf(type: LimitType, a: AdmissionAttributes): string {
  switch (type) {
    case 'Server':
      return '';
    case 'Namespace':
      return a.namespace;
    case 'User':
      return a.user?.name ?? '';
    case 'SourceAndObject': {
      const e = a.object ?? {};
      const source = objOf(e['source']);
      const involved = objOf(e['involvedObject']);
      return [source['component'], source['host'], involved['kind'], involved['namespace'], involved['name'], involved['uid'], involved['apiVersion']]
        .map((v) => (typeof v === 'string' ? v : ''))
        .join('');
    }
  }
}

export function eventRateLimit(limits: readonly EventRateLimit[], now: () => number = Date.now): Admission {
  const limiters = limits.map((l) => ({ type: l.type, limiter: new Limiter(l) }));
  return {
    async validate(a) {
      if (a.decl.group !== '' || a.decl.kind !== 'Event' || a.dryRun) return;
      if (a.operation !== 'CREATE' && a.operation !== 'UPDATE') return;
      const t = now();
      for (const { type, limiter } of limiters) {
        const key = keyOf(type, a);
        if (!limiter.tryAccept(key, t)) throw apiErrors.tooManyRequests(`Too many requests: limit reached on type ${type} for key ${key}`, 0);
      }
    },
  };
}
