/**
 * WithHSTS, as Kubernetes': every response carries Strict-Transport-Security with the
 * --strict-transport-security-directives joined by '; ', unless a handler set its own. An empty list
 * installs nothing.
 */
import type { Handler } from './authn.js';

const MAX_AGE_FORM =
  '--strict-transport-security-directives invalid, allowed values: max-age=expireTime, includeSubDomains, preload. see https://tools.ietf.org/html/rfc6797#section-6.1 for more information';

/** Kubernetes' check of the directives; undefined when valid, else the message. */
export function validateHSTSDirectives(directives: readonly string[]): string | undefined {
  const errors: string[] = [];
  for (const d of directives) {
    if (d.trim() === '') {
      errors.push('empty value in strict-transport-security-directives');
      continue;
    }
    if (d === 'includeSubDomains' || d === 'preload') continue;
    const parts = d.split('=');
    if (parts.length !== 2 || parts[0] !== 'max-age') errors.push(MAX_AGE_FORM);
  }
  if (errors.length === 0) return undefined;
  return errors.length === 1 ? errors[0] : `[${errors.join(', ')}]`;
}

export function withHSTS(next: Handler, deps: { directives: readonly string[] }): Handler {
  if (deps.directives.length === 0) return next;
  const value = deps.directives.join('; ');
  return (req, res) => {
    if (!res.hasHeader('Strict-Transport-Security')) res.setHeader('Strict-Transport-Security', value);
    return next(req, res);
  };
}
