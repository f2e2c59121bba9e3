/**
 * resourceVersion and continue-token handling, as apimachinery does it: a resourceVersion is the decimal
 * storage revision; a continue token is base64 of {"v":"meta.k8s.io/v1","rv":<revision>,"start":"<key suffix>"}.
 */
import { apiErrors } from './errors.js';

/** Parses a resourceVersion parameter; '' and undefined give 0 (none). */
export function parseResourceVersion(rv: string | undefined, what = 'resource version'): number {
  if (rv === undefined || rv === '') return 0;
  if (!/^[0-9]+$/.test(rv)) throw apiErrors.badRequest(`invalid ${what}: ${JSON.stringify(rv)}`);
  const n = Number(rv);
  if (!Number.isSafeInteger(n)) throw apiErrors.badRequest(`invalid ${what}: ${JSON.stringify(rv)}`);
  return n;
}

export interface ContinueToken {
  /** Revision the first page was read at. */
  rv: number;
  /** Key suffix (below the list prefix) to start from, inclusive. */
  start: string;
}

export function encodeContinue(token: ContinueToken): string {
  return Buffer.from(JSON.stringify({ v: 'meta.k8s.io/v1', rv: token.rv, start: token.start })).toString('base64');
}

/** Decodes a continue token, refusing malformed ones and keys that would leave the listed prefix. */
export function decodeContinue(value: string): ContinueToken {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(value, 'base64').toString('utf8'));
  } catch {
    throw apiErrors.badRequest('continue key is not valid: illegal base64 data or json');
  }
  const t = parsed as { v?: unknown; rv?: unknown; start?: unknown };
  if (t === null || typeof t !== 'object' || t.v !== 'meta.k8s.io/v1') {
    throw apiErrors.badRequest('continue key is not valid: server does not recognize this encoded key');
  }
  if (typeof t.rv !== 'number' || !Number.isSafeInteger(t.rv) || t.rv <= 0 || typeof t.start !== 'string') {
    throw apiErrors.badRequest('continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)');
  }
  if (t.start === '' || t.start.includes('..') || t.start.startsWith('/')) {
    throw apiErrors.badRequest('continue key is not valid: key is invalid');
  }
  return { rv: t.rv, start: t.start };
}

export const EXPIRED_CONTINUE_MESSAGE =
  'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.';
