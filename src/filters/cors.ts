/**
 * WithCORS, as Kubernetes' (with its defaults and credentials "true"): a request whose Origin matches one
 * of the --cors-allowed-origins regular expressions gets the Access-Control-Allow-* headers, and an
 * OPTIONS request with such an origin is answered 204 here (before authentication). Other requests pass
 * through untouched. An empty list installs nothing.
 */
import type { Handler } from './authn.js';

export const CORS_ALLOWED_METHODS = ['POST', 'GET', 'OPTIONS', 'PUT', 'DELETE', 'PATCH'];
export const CORS_ALLOWED_HEADERS = [
  'Content-Type',
  'Content-Length',
  'Accept-Encoding',
  'X-CSRF-Token',
  'Authorization',
  'X-Requested-With',
  'If-Modified-Since',
];
export const CORS_EXPOSED_HEADERS = ['Date'];

export interface CorsDeps {
  /** --cors-allowed-origins, as unanchored regular expressions (Go's regexp.MatchString). */
  allowedOrigins: readonly string[];
  allowCredentials?: string;
}

/** Compiles the patterns; throws naming --cors-allowed-origins on an invalid one. */
export function compileCorsOrigins(patterns: readonly string[]): RegExp[] {
  return patterns.map((p) => {
    try {
      return new RegExp(p);
    } catch (e) {
      throw new Error(`--cors-allowed-origins: invalid regular expression "${p}": ${(e as Error).message}`, { cause: e });
    }
  });
}

export function withCORS(next: Handler, deps: CorsDeps): Handler {
  if (deps.allowedOrigins.length === 0) return next;
  const origins = compileCorsOrigins(deps.allowedOrigins);
  const credentials = deps.allowCredentials ?? 'true';
  return (req, res) => {
    const header = req.headers.origin;
    const origin = Array.isArray(header) ? header[0] : header;
    if (origin && origins.some((re) => re.test(origin))) {
      res.setHeader('Access-Control-Allow-Origin', origin);
      res.setHeader('Access-Control-Allow-Methods', CORS_ALLOWED_METHODS.join(', '));
      res.setHeader('Access-Control-Allow-Headers', CORS_ALLOWED_HEADERS.join(', '));
      res.setHeader('Access-Control-Expose-Headers', CORS_EXPOSED_HEADERS.join(', '));
      res.setHeader('Access-Control-Allow-Credentials', credentials);
      if (req.method === 'OPTIONS') {
        res.statusCode = 204;
        res.end();
        return;
      }
    }
    return next(req, res);
  };
}
