/**
 * API Priority and Fairness, as Kubernetes 1.23's WithPriorityAndFairness and its flow-control
 * controller (apiserver/pkg/server/filters/priority-and-fairness.go, pkg/util/flowcontrol):
 *
 *   - FlowControl holds the digested configuration (FlowSchemas in matchingPrecedence then name order,
 *     one QueueSet per Limited priority level with ACV = ceil(SCL * ACS / ΣACS), SCL being
 *     --max-requests-inflight + --max-mutating-requests-inflight); the mandatory 'exempt' and 'catch-all'
 *     objects stand in until the stored ones arrive, as Kubernetes imagines them.
 *   - the filter classifies each request by the first matching FlowSchema whose priority level exists,
 *     sets X-Kubernetes-PF-FlowSchema-UID and X-Kubernetes-PF-PriorityLevel-UID, runs exempt requests at
 *     once and others when their level gives them a seat; rejected ones get 429, 'Retry-After: 1' and
 *     Go's plain-text body. Long-running requests (watches, exec, ...) are not limited (watches are counted
 *     per resource, for the mutating work estimate).
 *   - each limited request is as wide as its work estimate (./width.ts): lists by the stored object count of
 *     their resource, mutations by the watches to notify.
 */
import { getUser, type ApiRequest, type Handler } from '../authn.js';
import { writeHttpError } from '../httperror.js';
import { TOO_MANY_REQUESTS_MESSAGE } from '../maxinflight.js';
import { getRequestInfo, getRequestQuery, type LongRunningCheck, type RequestInfo } from '../requestinfo.js';
import { formatDuration } from '../../util/flags.js';
import { compileFlowSchemaRules, type RequestMatcher, type RequestUser } from './matching.js';
import { QueueSet, type RejectReason, type QueuingConfig } from './queueset.js';
import { estimateWork, groupResourceOf, maxSeats } from './width.js';

export { dealHand, QueueSet } from './queueset.js';
export type { QueuedRequest, QueueDump, RejectReason, Seat } from './queueset.js';
export { estimateWork, type WorkEstimate } from './width.js';

export const FLOW_SCHEMA_UID_HEADER = 'X-Kubernetes-PF-FlowSchema-UID';
export const PRIORITY_LEVEL_UID_HEADER = 'X-Kubernetes-PF-PriorityLevel-UID';

type Json = Record<string, any>;
const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A FlowSchema or PriorityLevelConfiguration as JSON (only metadata.name/uid, spec are read). */
export interface ConfigObject {
  metadata?: { name?: string; uid?: string };
  spec?: unknown;
}

export interface PriorityLevel {
  readonly name: string;
  readonly uid: string;
  readonly exempt: boolean;
  readonly shares: number;
  /** Limited levels only. */
  readonly queueSet?: QueueSet;
}

export interface FlowSchema {
  readonly name: string;
  readonly uid: string;
  readonly precedence: number;
  readonly distinguisher: '' | 'ByUser' | 'ByNamespace';
  readonly level: PriorityLevel;
  readonly matches: RequestMatcher;
  /** Per-schema metric handles, made on first use. */
  dispatched?: () => void;
}

/** Counters the filter reports to; implemented over the server's metrics registry. */
export interface FlowControlMetrics {
  /** The incrementer of dispatched requests for a schema and level (asked once per schema). */
  dispatchedCounter(flowSchema: string, priorityLevel: string): () => void;
  rejected(flowSchema: string, priorityLevel: string, reason: RejectReason): void;
  /** A limited request's estimated width (apiserver_flowcontrol_work_estimated_seats). */
  estimatedSeats?(flowSchema: string, priorityLevel: string, seats: number): void;
}

/** The mandatory objects of 1.23's bootstrap configuration, used while the stored ones are missing. */
const MANDATORY_EXEMPT_LEVEL = { metadata: { name: 'exempt', uid: '' }, spec: { type: 'Exempt' } };
const MANDATORY_CATCH_ALL_LEVEL = {
  metadata: { name: 'catch-all', uid: '' },
  spec: { type: 'Limited', limited: { assuredConcurrencyShares: 5, limitResponse: { type: 'Reject' } } },
};
const everything = (groups: string[]) => [
  {
    subjects: groups.map((name) => ({ kind: 'Group', group: { name } })),
    resourceRules: [{ verbs: ['*'], apiGroups: ['*'], resources: ['*'], clusterScope: true, namespaces: ['*'] }],
    nonResourceRules: [{ verbs: ['*'], nonResourceURLs: ['*'] }],
  },
];
const MANDATORY_EXEMPT_SCHEMA = {
  metadata: { name: 'exempt', uid: '' },
  spec: { priorityLevelConfiguration: { name: 'exempt' }, matchingPrecedence: 1, rules: everything(['system:masters']) },
};
const MANDATORY_CATCH_ALL_SCHEMA = {
  metadata: { name: 'catch-all', uid: '' },
  spec: {
    priorityLevelConfiguration: { name: 'catch-all' },
    matchingPrecedence: 10000,
    distinguisherMethod: { type: 'ByUser' },
    rules: everything(['system:unauthenticated', 'system:authenticated']),
  },
};

const nameOf = (o: ConfigObject) => o.metadata?.name ?? '';

function queuingOf(spec: Json): QueuingConfig | undefined {
  const lr = isObj(spec['limited']) && isObj(spec['limited']['limitResponse']) ? spec['limited']['limitResponse'] : undefined;
  if (!lr || lr['type'] !== 'Queue' || !isObj(lr['queuing'])) return undefined;
  const q = lr['queuing'];
  const n = (v: unknown, d: number) => (typeof v === 'number' && v > 0 ? v : d);
  return { queues: n(q['queues'], 64), handSize: n(q['handSize'], 8), queueLengthLimit: n(q['queueLengthLimit'], 50) };
}

/** A 53-bit hash of a flow (FNV-1a, twice with different offsets), for shuffle sharding. */
export function flowHash(flowSchema: string, distinguisher: string): number {
  const s = `${flowSchema},${distinguisher}`;
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ 0x5bd1e995;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193) >>> 0;
    b = Math.imul(b ^ c, 0x01000193) >>> 0;
  }
  return a * 0x200000 + (b & 0x1fffff);
}

export interface FlowControlConfig {
  /** --max-requests-inflight + --max-mutating-requests-inflight. */
  serverConcurrencyLimit: number;
  /** How long a request may wait in a queue (Kubernetes: a quarter of --request-timeout). */
  requestWaitLimitMs: number;
  metrics?: FlowControlMetrics;
}

export class FlowControl {
  private schemas: FlowSchema[] = [];
  private levels = new Map<string, PriorityLevel>();
  /** Names of the stored FlowSchemas whose priority level does not exist. */
  private dangling = new Set<string>();

  /** Where dispatches and rejections are counted; set once the server's metrics exist. */
  metrics: FlowControlMetrics | undefined;
  /** The stored object count of a resource ('pods', 'leases.coordination.k8s.io'); set once the storage exists. */
  objectCount: (groupResource: string) => number | undefined = () => undefined;
  /** Open watches per resource, counted by the filter. */
  readonly watches = new Map<string, number>();
  /** Seats in use per priority level and FlowSchema ('level\0schema'), for apiserver_flowcontrol_request_concurrency_in_use. */
  readonly seatsInUse = new Map<string, number>();

  constructor(readonly config: FlowControlConfig) {
    this.metrics = config.metrics;
    this.update([], []);
  }

  /**
   * Digests the stored FlowSchemas and PriorityLevelConfigurations (the mandatory ones are added when
   * missing). Levels keep their queue sets (and waiting requests) across updates. Returns, for each
   * given FlowSchema, whether it is dangling (its priority level does not exist).
   */
  update(flowSchemas: readonly ConfigObject[], priorityLevels: readonly ConfigObject[]): Map<string, boolean> {
    const plObjs = [...priorityLevels];
    for (const m of [MANDATORY_EXEMPT_LEVEL, MANDATORY_CATCH_ALL_LEVEL]) if (!plObjs.some((p) => nameOf(p) === m.metadata.name)) plObjs.push(m);
    const fsObjs = [...flowSchemas];
    for (const m of [MANDATORY_EXEMPT_SCHEMA, MANDATORY_CATCH_ALL_SCHEMA]) if (!fsObjs.some((f) => nameOf(f) === m.metadata.name)) fsObjs.push(m);

    const shares = (spec: Json) => (isObj(spec['limited']) && typeof spec['limited']['assuredConcurrencyShares'] === 'number' ? (spec['limited']['assuredConcurrencyShares']) : 30);
    const specs = plObjs.map((p) => ({ obj: p, spec: (isObj(p.spec) ? p.spec : {}) }));
    const total = specs.reduce((sum, { spec }) => (spec['type'] === 'Exempt' ? sum : sum + shares(spec)), 0);
    const levels = new Map<string, PriorityLevel>();
    for (const { obj, spec } of specs) {
      const name = nameOf(obj);
      const uid = obj.metadata?.uid ?? '';
      if (spec['type'] === 'Exempt') {
        levels.set(name, { name, uid, exempt: true, shares: 0 });
        continue;
      }
      const acs = shares(spec);
      const limit = Math.ceil((this.config.serverConcurrencyLimit * acs) / total);
      const queuing = queuingOf(spec);
      const previous = this.levels.get(name)?.queueSet;
      if (previous) previous.configure(limit, queuing);
      levels.set(name, { name, uid, exempt: false, shares: acs, queueSet: previous ?? new QueueSet(limit, queuing, this.config.requestWaitLimitMs) });
    }
    // Levels that went away: their queue sets drain on their own (requests hold them).
    const schemas: FlowSchema[] = [];
    const dangling = new Map<string, boolean>();
    for (const f of fsObjs) {
      const spec = (isObj(f.spec) ? f.spec : {});
      const plName = isObj(spec['priorityLevelConfiguration']) ? String(spec['priorityLevelConfiguration']['name']) : '';
      const level = levels.get(plName);
      dangling.set(nameOf(f), !level);
      if (!level) continue;
      const dm = isObj(spec['distinguisherMethod']) ? spec['distinguisherMethod']['type'] : '';
      schemas.push({
        name: nameOf(f),
        uid: f.metadata?.uid ?? '',
        precedence: typeof spec['matchingPrecedence'] === 'number' ? spec['matchingPrecedence'] : 1000,
        distinguisher: dm === 'ByUser' || dm === 'ByNamespace' ? dm : '',
        level,
        matches: compileFlowSchemaRules(spec['rules']),
      });
    }
    schemas.sort((a, b) => a.precedence - b.precedence || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    this.schemas = schemas;
    this.levels = levels;
    this.dangling = new Set([...dangling].filter(([, d]) => d).map(([n]) => n));
    return dangling;
  }

  /** The FlowSchema a request falls under (catch-all always matches authenticated and anonymous users). */
  classify(user: RequestUser, info: RequestInfo): FlowSchema | undefined {
    for (const fs of this.schemas) if (fs.matches(user, info)) return fs;
    return undefined;
  }

  priorityLevels(): PriorityLevel[] {
    return [...this.levels.values()];
  }

  isDangling(flowSchema: string): boolean {
    return this.dangling.has(flowSchema);
  }

  /**
   * /debug/api_priority_and_fairness/dump_priority_levels: a row per priority level (by name; Kubernetes
   * walks a map), '<none>' for exempt ones, in the comma-and-tab table Go's tabwriter lays out.
   */
  dumpPriorityLevels(): string {
    const rows = [['PriorityLevelName', 'ActiveQueues', 'IsIdle', 'IsQuiescing', 'WaitingRequests', 'ExecutingRequests']];
    for (const l of this.sortedLevels()) {
      const q = l.queueSet;
      rows.push(
        q
          ? [l.name, String(q.activeQueues()), String(q.waiting === 0 && q.executing === 0), 'false', String(q.waiting), String(q.executing)]
          : [l.name, '<none>', '<none>', '<none>', '<none>', '<none>'],
      );
    }
    return tabulate(rows);
  }

  /**
   * /debug/api_priority_and_fairness/dump_queues: a row per queue of each priority level (none for a level
   * that rejects instead of queuing, '<none>' cells for exempt ones), as 1.23's dumpQueues.
   */
  dumpQueues(): string {
    const rows = [['PriorityLevelName', 'Index', 'PendingRequests', 'ExecutingRequests', 'SeatsInUse', 'NextDispatchR', 'InitialSeatsSum', 'MaxSeatsSum', 'TotalWorkSum']];
    for (const l of this.sortedLevels()) {
      if (!l.queueSet) {
        rows.push([l.name, ...Array<string>(8).fill('<none>')]);
        continue;
      }
      l.queueSet.dumpQueues().forEach((q, i) => {
        const initial = q.waiting.reduce((n, r) => n + r.initialSeats, 0);
        const max = q.waiting.reduce((n, r) => n + Math.max(r.initialSeats, r.finalSeats), 0);
        const work = q.waiting.reduce((n, r) => n + r.initialSeats * SERVICE_TIME_SS + r.finalSeats * r.additionalLatencyMs * SS_PER_MS, 0);
        rows.push([l.name, String(i), String(q.waiting.length), String(q.executing), String(q.seatsInUse), seatSeconds(q.virtualStart * SERVICE_TIME_SS), String(initial), String(max), seatSeconds(work)]);
      });
    }
    return tabulate(rows);
  }

  /**
   * /debug/api_priority_and_fairness/dump_requests: a row per request waiting in a queue (executing ones are
   * not listed, as in 1.23); with `details` (a non-empty includeRequestDetails) the user and request info too.
   */
  dumpRequests(details: boolean): string {
    const header = ['PriorityLevelName', 'FlowSchemaName', 'QueueIndex', 'RequestIndexInQueue', 'FlowDistingsher', 'ArriveTime', 'InitialSeats', 'FinalSeats', 'AdditionalLatency'];
    if (details) header.push('UserName', 'Verb', 'APIPath', 'Namespace', 'Name', 'APIVersion', 'Resource', 'SubResource');
    const rows = [header];
    for (const l of this.sortedLevels()) {
      l.queueSet?.dumpQueues().forEach((q, qi) => {
        q.waiting.forEach((r, ri) => {
          const row = [l.name, r.flowSchema, String(qi), String(ri), r.distinguisher, goTimeRFC3339Nano(r.arrivedMs), String(r.initialSeats), String(r.finalSeats), formatDuration(r.additionalLatencyMs)];
          if (details) {
            const gv = r.apiGroup === '' ? r.apiVersion : `${r.apiGroup}/${r.apiVersion}`;
            row.push(r.userName, r.verb, r.path, r.namespace, r.name, gv, r.resource, r.subresource);
          }
          rows.push(row);
        });
      });
    }
    return tabulate(rows);
  }

  private sortedLevels(): PriorityLevel[] {
    return [...this.levels.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }
}

/** Kubernetes' SeatSeconds are counted in units of 1e-8 seat-second; its estimated service time is 3 ms. */
const SS_SCALE = 1e8;
const SERVICE_TIME_SS = 0.003 * SS_SCALE;
const SS_PER_MS = SS_SCALE / 1000;

/** A SeatSeconds value (in 1e-8 seat-seconds) as Go's SeatSeconds.String(): '0.00300000ss'. */
function seatSeconds(units: number): string {
  const u = Math.round(units);
  return `${Math.floor(u / SS_SCALE)}.${String(u % SS_SCALE).padStart(8, '0')}ss`;
}

/** Go's time.RFC3339Nano in UTC (trailing zeros of the fraction dropped): '2021-11-22T13:59:05.12Z'. */
function goTimeRFC3339Nano(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d*?)0*Z$/, (_m, f: string) => (f === '' ? 'Z' : `.${f}Z`));
}

/**
 * Rows of cells joined by ',\t' as Go's tabwriter (minwidth 8, padding 1, spaces) lays them out: every cell
 * but a row's last is padded to its column's width (the widest cell plus one, at least 8).
 */
function tabulate(rows: string[][]): string {
  const cells = rows.map((r) => r.map((c, i) => (i < r.length - 1 ? `${c},` : c)));
  const widths: number[] = [];
  for (const r of cells) for (let i = 0; i < r.length - 1; i++) widths[i] = Math.max(widths[i] ?? 0, Math.max(r[i]!.length + 1, 8));
  return cells.map((r) => r.map((c, i) => (i < r.length - 1 ? c.padEnd(widths[i]!) : c)).join('') + '\n').join('');
}

export interface PriorityAndFairnessDeps {
  flowControl: FlowControl;
  longRunning: LongRunningCheck;
  /** Told of each request refused with 429 (apiserver_dropped_requests_total and the request metrics). */
  onReject?: (req: ApiRequest, mutating: boolean) => void;
}

const ANONYMOUS: RequestUser = { name: 'system:anonymous', groups: ['system:unauthenticated'] };
const READ_ONLY_VERBS = new Set(['get', 'list', 'watch']);

function distinguish(fs: FlowSchema, user: RequestUser, info: RequestInfo): string {
  return fs.distinguisher === 'ByUser' ? user.name : fs.distinguisher === 'ByNamespace' ? info.namespace : '';
}

/** The priority-and-fairness filter; replaces the max-in-flight filter where the chain has it. */
export function withPriorityAndFairness(next: Handler, deps: PriorityAndFairnessDeps): Handler {
  const fc = deps.flowControl;
  const estimatorDeps = { objectCount: (gr: string) => fc.objectCount(gr), watchCount: (gr: string) => fc.watches.get(gr) ?? 0 };
  const countSeats = (key: string, delta: number) => {
    const n = (fc.seatsInUse.get(key) ?? 0) + delta;
    if (n === 0) fc.seatsInUse.delete(key);
    else fc.seatsInUse.set(key, n);
  };
  return async (req, res) => {
    const info = getRequestInfo(req);
    if (deps.longRunning(req, info)) {
      if (info.verb === 'watch' && info.isResourceRequest) {
        const gr = groupResourceOf(info);
        fc.watches.set(gr, (fc.watches.get(gr) ?? 0) + 1);
        res.once('close', () => {
          const n = (fc.watches.get(gr) ?? 1) - 1;
          if (n === 0) fc.watches.delete(gr);
          else fc.watches.set(gr, n);
        });
      }
      return next(req, res);
    }
    const user = getUser(req) ?? ANONYMOUS;
    const fs = fc.classify(user, info);
    if (!fs) return next(req, res);
    res.setHeader(PRIORITY_LEVEL_UID_HEADER, fs.level.uid);
    res.setHeader(FLOW_SCHEMA_UID_HEADER, fs.uid);
    const qs = fs.level.queueSet;
    const metrics = fc.metrics;
    if (!qs) {
      if (metrics) (fs.dispatched ??= metrics.dispatchedCounter(fs.name, fs.level.name))();
      return next(req, res);
    }
    // The query parsed once for the request (the estimate reads it for lists only).
    const work = estimateWork(info, getRequestQuery(req), estimatorDeps);
    const seats = maxSeats(work);
    metrics?.estimatedSeats?.(fs.name, fs.level.name, seats);
    // Kubernetes computes the flow distinguisher only for levels with more than one queue.
    const distinguisher = () => (qs.queueCount > 1 ? distinguish(fs, user, info) : '');
    let got = qs.acquire(
      () => flowHash(fs.name, distinguisher()),
      (cancel) => res.once('close', cancel),
      seats,
      () => ({
        flowSchema: fs.name,
        distinguisher: distinguisher(),
        arrivedMs: Date.now(),
        ...work,
        userName: user.name,
        verb: info.verb,
        path: info.path,
        namespace: info.namespace,
        name: info.name,
        apiGroup: info.apiGroup,
        apiVersion: info.apiVersion,
        resource: info.resource,
        subresource: info.subresource,
      }),
    );
    if (got instanceof Promise) got = await got;
    if (typeof got === 'string') {
      metrics?.rejected(fs.name, fs.level.name, got);
      if (got === 'cancelled') return;
      deps.onReject?.(req, !READ_ONLY_VERBS.has(info.verb));
      res.setHeader('Retry-After', '1');
      return writeHttpError(res, 429, TOO_MANY_REQUESTS_MESSAGE);
    }
    if (metrics) (fs.dispatched ??= metrics.dispatchedCounter(fs.name, fs.level.name))();
    const key = `${fs.level.name}\0${fs.name}`;
    countSeats(key, seats);
    try {
      await next(req, res);
    } finally {
      got.release(work.additionalLatencyMs);
      if (work.additionalLatencyMs > 0) setTimeout(() => countSeats(key, -seats), work.additionalLatencyMs).unref();
      else countSeats(key, -seats);
    }
  };
}
