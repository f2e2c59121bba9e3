/**
 * Bearer-token authentication as Kubernetes composes it (k8s.io/apiserver authentication/token/union,
 * request/bearertoken, authenticator.WrapAudienceAgnosticToken): token authenticators are asked in order
 * (the token file, service-account tokens, ...), the first that recognizes the token wins, and their errors
 * are joined when none does. A request's target audiences are the API audiences (--api-audiences); a
 * TokenReview may name others.
 */
import type { TokenReviewer, TokenReviewResult } from '../../registry/kinds/authentication/tokenreview.js';
import { isPromiseLike, type ApiRequest, type UserInfo } from '../../endpoints/http.js';
import { firstAnswer, type AuthenticationResult, type Authenticator } from '../authn.js';

/** What a token authenticator answers: a user (and the audiences it was accepted for), not mine, or an error. */
export type TokenResult =
  | { status: 'authenticated'; user: UserInfo; audiences?: string[] }
  /** Not a token this authenticator knows (another one may). */
  | { status: 'unknown' }
  /** A token of this kind that is not valid (expired, revoked, wrong audience). */
  | { status: 'failed'; reason: string };

export interface TokenAuthenticator {
  /** `audiences`: the audiences the token must be meant for; undefined means no audience check. */
  authenticateToken(token: string, audiences: readonly string[] | undefined): TokenResult | Promise<TokenResult>;
}

/** The audiences in both lists, in the order of `a`. */
export function intersectAudiences(a: readonly string[], b: readonly string[]): string[] {
  return a.filter((x) => b.includes(x));
}

/** Asks each in order: the first success wins; errors are joined as Kubernetes' aggregate error shows them. */
export function tokenUnion(authenticators: readonly TokenAuthenticator[]): TokenAuthenticator {
  const finish = (errors: string[]): TokenResult => {
    if (errors.length === 0) return { status: 'unknown' };
    return { status: 'failed', reason: errors.length === 1 ? errors[0]! : `[${errors.join(', ')}]` };
  };
  const step = (r: TokenResult, errors: string[]): TokenResult | undefined => {
    if (r.status === 'authenticated') return r;
    if (r.status === 'failed') errors.push(r.reason);
    return undefined;
  };
  return {
    // Answers at once while every authenticator asked does (the token file): no promise.
    authenticateToken: (token, audiences) => firstAnswer(authenticators, (a) => a.authenticateToken(token, audiences), step, finish),
  };
}

/**
 * An authenticator that knows nothing of audiences (the token file), made audience-aware as Kubernetes'
 * WrapAudienceAgnosticToken: with API audiences configured, it answers only when the target audiences meet
 * them, and reports that intersection as the token's audiences.
 */
export function audienceAgnostic(apiAudiences: readonly string[], delegate: TokenAuthenticator): TokenAuthenticator {
  if (apiAudiences.length === 0) return delegate;
  const withAudiences = (r: TokenResult, auds: string[]): TokenResult => (r.status === 'authenticated' ? { ...r, audiences: auds } : r);
  return {
    // Answers at once when the delegate does (the token file): no promise.
    authenticateToken(token, audiences) {
      if (audiences === undefined) return delegate.authenticateToken(token, audiences);
      const auds = intersectAudiences(apiAudiences, audiences);
      if (auds.length === 0) return { status: 'unknown' };
      const r = delegate.authenticateToken(token, audiences);
      return isPromiseLike(r) ? Promise.resolve(r).then((v) => withAudiences(v, auds)) : withAudiences(r, auds);
    },
  };
}

/** Tokens of a --token-auth-file table. */
export function tokenTableAuthenticator(tokens: ReadonlyMap<string, UserInfo>): TokenAuthenticator {
  return {
    authenticateToken(token) {
      const user = tokens.get(token);
      return user ? { status: 'authenticated', user: { ...user, groups: [...user.groups] } } : { status: 'unknown' };
    },
  };
}

/** Kubernetes' bearertoken authenticator: a token nobody recognizes is "invalid bearer token". */
export function bearerTokenAuthenticator(tokens: TokenAuthenticator, apiAudiences: readonly string[]): Authenticator {
  const answer = (req: ApiRequest, r: TokenResult): AuthenticationResult => {
    if (r.status === 'unknown') return { status: 'failed', reason: 'invalid bearer token' };
    if (r.status === 'failed') return r;
    // Kubernetes drops the credential once used, so it is never proxied further.
    delete req.headers.authorization;
    return { status: 'authenticated', user: r.user };
  };
  return {
    // Answers at once when the token authenticators do (the token file): no promise.
    authenticate(req: ApiRequest): AuthenticationResult | Promise<AuthenticationResult> {
      const token = bearerTokenOf(req);
      if (token === undefined) return { status: 'absent' };
      const r = tokens.authenticateToken(token, apiAudiences.length > 0 ? apiAudiences : undefined);
      return isPromiseLike(r) ? Promise.resolve(r).then((v) => answer(req, v)) : answer(req, r);
    },
  };
}

function bearerTokenOf(req: ApiRequest): string | undefined {
  const header = req.headers.authorization;
  const auth = (Array.isArray(header) ? header[0] : header)?.trim() ?? '';
  const parts = auth.split(' ');
  if (parts.length < 2 || parts[0]!.toLowerCase() !== 'bearer') return undefined;
  return parts[1] === '' ? undefined : parts[1];
}

/**
 * The TokenReview side of the same authenticators (pkg/registry/authentication/tokenreview): the review's
 * audiences, else the API audiences, are the target; system:authenticated is added as for requests.
 */
export function tokenReviewer(tokens: TokenAuthenticator, apiAudiences: readonly string[]): TokenReviewer {
  return {
    async review(token, specAudiences): Promise<TokenReviewResult> {
      const auds = specAudiences.length > 0 ? specAudiences : apiAudiences;
      const r = await tokens.authenticateToken(token, auds.length > 0 ? auds : undefined);
      if (r.status === 'unknown') return { authenticated: false, error: 'invalid bearer token' };
      if (r.status === 'failed') return { authenticated: false, error: r.reason };
      if (auds.length > 0 && intersectAudiences(auds, r.audiences ?? []).length === 0) {
        return { authenticated: false, audienceMismatch: true };
      }
      const groups = r.user.groups.includes('system:authenticated') ? r.user.groups : [...r.user.groups, 'system:authenticated'];
      return { authenticated: true, user: { ...r.user, groups }, ...(r.audiences ? { audiences: r.audiences } : {}) };
    },
  };
}
