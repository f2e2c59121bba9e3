/**
 * WithProbabilisticGoaway, as Kubernetes': an HTTP/2 request is, with probability `chance`, the last one
 * of its connection: the server sends GOAWAY as it answers (Go does so when it writes the headers), the
 * request completes normally, and the client's next requests open a new connection (and may land on
 * another server behind the load balancer). Other streams in flight are not affected. HTTP/1.1 requests are never affected, as in Kubernetes.
 */
import type { Handler } from './authn.js';
import { closeConnectionAfterResponse, isHttp2 } from './httperror.js';

export interface GoawayDeps {
  /** --goaway-chance, 0 to 0.02. */
  chance: number;
  /** A number in [0, 1); Math.random by default. Tests inject their own. */
  random?: () => number;
}

export function withProbabilisticGoaway(next: Handler, deps: GoawayDeps): Handler {
  if (deps.chance <= 0) return next;
  const random = deps.random ?? Math.random;
  return (req, res) => {
    if (isHttp2(req) && random() < deps.chance) closeConnectionAfterResponse(res);
    return next(req, res);
  };
}
