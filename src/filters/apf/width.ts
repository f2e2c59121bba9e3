/**
 * Work estimation for API Priority and Fairness, after Kubernetes' request width estimators
 * (apiserver/pkg/util/flowcontrol/request/{width,list_work_estimator,mutating_work_estimator}.go):
 *
 *   - list: the objects the request will process, from the stored object count of its resource (the count
 *     apiserver_storage_objects reports): all of them when served from the watch cache (resourceVersion
 *     set, no continue, no limit unless resourceVersion=0, not Exact), count + limit with a label or field
 *     selector, otherwise twice the limit (the limit being at most the count); one seat per 100 objects,
 *     between 1 and 10 seats. A resource without a count (not stored here, aggregated) costs 1 seat, as
 *     Kubernetes does since 1.24 (#109106; 1.23 charged the maximum).
 *   - create, update, patch, delete: 1 seat while executing, and with 10 or more watches on the resource
 *     ceil(watches / 10) seats (at most 10) held until 5 ms after it finishes, for the events fanned out to the watchers (Kubernetes'
 *     mutating estimator; its 1.23 build returned 1 seat early, later versions enable it).
 *   - everything else: 1 seat.
 */
import type { RequestInfo } from '../requestinfo.js';

export const MINIMUM_SEATS = 1;
export const MAXIMUM_SEATS = 10;
export const OBJECTS_PER_SEAT = 100;
export const WATCHES_PER_SEAT = 10;
export const EVENT_ADDITIONAL_DURATION_MS = 5;

export interface WorkEstimate {
  /** Seats while the request executes. */
  initialSeats: number;
  /** Seats held for `additionalLatencyMs` after it finishes (0: none). */
  finalSeats: number;
  additionalLatencyMs: number;
}

/** The most seats a request occupies at any time (what it needs to be dispatched). */
export const maxSeats = (w: WorkEstimate): number => Math.max(w.initialSeats, w.finalSeats);

export interface WorkEstimatorDeps {
  /** The stored objects of a resource ('pods', 'deployments.apps'), undefined when not counted. */
  objectCount(groupResource: string): number | undefined;
  /** Watches currently open on a resource. */
  watchCount(groupResource: string): number;
}

const ONE: WorkEstimate = Object.freeze({ initialSeats: MINIMUM_SEATS, finalSeats: 0, additionalLatencyMs: 0 });
const MUTATING = new Set(['create', 'update', 'patch', 'delete']);

export const groupResourceOf = (info: RequestInfo): string => (info.apiGroup ? `${info.resource}.${info.apiGroup}` : info.resource);

/** Kubernetes' shouldListFromStorage: a list the watch cache cannot serve. */
export function listFromStorage(query: URLSearchParams): boolean {
  const rv = query.get('resourceVersion') ?? '';
  const limit = Number(query.get('limit') ?? '0');
  return rv === '' || (query.get('continue') ?? '') !== '' || (limit > 0 && rv !== '0') || query.get('resourceVersionMatch') === 'Exact';
}

function clampSeats(n: number): number {
  return Math.min(MAXIMUM_SEATS, Math.max(MINIMUM_SEATS, n));
}

export function estimateWork(info: RequestInfo, query: URLSearchParams, deps: WorkEstimatorDeps): WorkEstimate {
  if (!info.isResourceRequest) return ONE;
  if (info.verb === 'list') {
    const stored = deps.objectCount(groupResourceOf(info));
    if (stored === undefined) return ONE;
    const requested = Number(query.get('limit') ?? '0');
    const limit = Number.isFinite(requested) && requested > 0 && requested < stored ? requested : stored;
    const selective = (query.get('labelSelector') ?? '') !== '' || (query.get('fieldSelector') ?? '') !== '';
    const objects = !listFromStorage(query) ? stored : selective ? stored + limit : 2 * limit;
    return { initialSeats: clampSeats(Math.ceil(objects / OBJECTS_PER_SEAT)), finalSeats: 0, additionalLatencyMs: 0 };
  }
  if (MUTATING.has(info.verb)) {
    const watches = deps.watchCount(groupResourceOf(info));
    if (watches < WATCHES_PER_SEAT) return ONE;
    return { initialSeats: MINIMUM_SEATS, finalSeats: Math.min(MAXIMUM_SEATS, Math.ceil(watches / WATCHES_PER_SEAT)), additionalLatencyMs: EVENT_ADDITIONAL_DURATION_MS };
  }
  return ONE;
}
