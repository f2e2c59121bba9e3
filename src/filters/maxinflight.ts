/**
 * WithMaxInFlightLimit, as Kubernetes': at most `nonMutatingLimit` get/list/watch requests and at most
 * `mutatingLimit` other requests are served at once; a request over its limit is answered at once with
 * 429, 'Retry-After: 1' and Go's plain-text body, unless its user is in system:masters. Long-running
 * requests are neither counted nor limited. A limit of 0 disables that limit.
 *
 * With --enable-priority-and-fairness, kube-apiserver queues by priority level with the sum of both
 * limits as its total concurrency; orch has no queuing yet and applies that sum as one shared limit
 * (see `sharedLimit`).
 */
import { getUser, type ApiRequest, type Handler } from './authn.js';
import { writeHttpError } from './httperror.js';
import { getRequestInfo, type LongRunningCheck } from './requestinfo.js';

export const TOO_MANY_REQUESTS_MESSAGE = 'Too many requests, please try again later.';
const SYSTEM_PRIVILEGED_GROUP = 'system:masters';
const NON_MUTATING_VERBS = new Set(['get', 'list', 'watch']);

export interface MaxInFlightDeps {
  nonMutatingLimit: number;
  mutatingLimit: number;
  /** When set, one limit for every request (the priority-and-fairness stand-in); the other two are ignored. */
  sharedLimit?: number;
  longRunning: LongRunningCheck;
  /** Told of each request refused with 429 (for apiserver_dropped_requests_total and the request metrics). */
  onReject?: (req: ApiRequest, mutating: boolean) => void;
}

interface Slot {
  limit: number;
  used: number;
}

export function withMaxInFlightLimit(next: Handler, deps: MaxInFlightDeps): Handler {
  const shared = deps.sharedLimit !== undefined ? { limit: deps.sharedLimit, used: 0 } : undefined;
  const nonMutating: Slot = shared ?? { limit: deps.nonMutatingLimit, used: 0 };
  const mutating: Slot = shared ?? { limit: deps.mutatingLimit, used: 0 };
  if (nonMutating.limit === 0 && mutating.limit === 0) return next;
  return async (req, res) => {
    const info = getRequestInfo(req);
    if (deps.longRunning(req, info)) return next(req, res);
    const slot = NON_MUTATING_VERBS.has(info.verb) ? nonMutating : mutating;
    if (slot.limit === 0) return next(req, res);
    if (slot.used >= slot.limit) {
      if (getUser(req)?.groups.includes(SYSTEM_PRIVILEGED_GROUP)) return next(req, res);
      deps.onReject?.(req, !NON_MUTATING_VERBS.has(info.verb));
      res.setHeader('Retry-After', '1');
      return writeHttpError(res, 429, TOO_MANY_REQUESTS_MESSAGE);
    }
    slot.used++;
    try {
      await next(req, res);
    } finally {
      slot.used--;
    }
  };
}
