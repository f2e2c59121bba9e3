/**
 * WithHTTPLogging, as Kubernetes' httplog: at verbosity 3 every request is logged when its handler is
 * done, as `"HTTP" verb="LIST" URI="/api/v1/namespaces" latency="1.2ms" userAgent="kubectl/..."
 * audit-ID="..." srcIP="127.0.0.1:50000" resp=200`. Below verbosity 3 (and without a --vmodule rule
 * enabling it for this file) a request costs one level check.
 */
import { formatDuration } from '../util/flags.js';
import type { Logger, VerboseLogger } from '../util/log.js';
import type { ApiRequest, ApiResponse, Handler } from './authn.js';
import { reportedVerb } from './metrics.js';
import { getRequestInfo } from './requestinfo.js';

export const HTTP_LOG_LEVEL = 3;

function srcIP(req: ApiRequest): string {
  const s = req.socket;
  const addr = s?.remoteAddress ?? '';
  return addr.includes(':') ? `[${addr}]:${s?.remotePort ?? 0}` : `${addr}:${s?.remotePort ?? 0}`;
}

export function withHTTPLogging(next: Handler, deps: { logger: Logger }): Handler {
  // Not async itself: below the level a request costs one check and no promise.
  const site = deps.logger.site();
  return (req, res) => {
    const v = site.v(HTTP_LOG_LEVEL);
    return v.enabled ? logged(next, v, req, res) : next(req, res);
  };
}

async function logged(next: Handler, v: VerboseLogger, req: ApiRequest, res: ApiResponse): Promise<void> {
  const started = performance.now();
  try {
    await next(req, res);
  } finally {
    const auditID = res.getHeader('audit-id');
    v.info(
      'HTTP',
      'verb',
      reportedVerb(req, getRequestInfo(req)),
      'URI',
      req.url ?? '',
      'latency',
      formatDuration(performance.now() - started),
      'userAgent',
      req.headers['user-agent'] ?? '',
      'audit-ID',
      typeof auditID === 'string' ? auditID : '',
      'srcIP',
      srcIP(req),
      'resp',
      res.statusCode,
    );
  }
}
