/**
 * authentication.k8s.io/v1 TokenReview, as Kubernetes 1.23 serves it (pkg/registry/authentication/tokenreview):
 * create-only and never stored; the token is authenticated by the server's own token authenticators (the
 * reviewer in KindSettings), for the review's audiences or else the API audiences. An unknown or invalid
 * token is a 201 with status.authenticated unset and status.error; an authenticator that answers for none of
 * the asked audiences is a 500 ("error validating audiences").
 */
import { apiErrors } from '../../errors.js';
import type { KObject, KindDecl, StrategyContext } from '../../kind.js';
import { AUTHENTICATION_DEFINITIONS, AUTHENTICATION_GROUP, AUTHN_NAMES } from './definitions.js';

export interface TokenReviewResult {
  authenticated: boolean;
  user?: { name: string; uid?: string; groups: string[]; extra?: Record<string, string[]> };
  audiences?: string[];
  error?: string;
  /** The token was accepted, but for none of the audiences asked for. */
  audienceMismatch?: boolean;
}

/** The server's token authenticators, seen from the TokenReview API. */
export interface TokenReviewer {
  review(token: string, audiences: string[]): Promise<TokenReviewResult>;
}

type Json = Record<string, any>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const strList = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);

async function tokenReview(obj: KObject, ctx: StrategyContext): Promise<KObject> {
  const spec: Json = isObject(obj['spec']) ? obj['spec'] : {};
  const token = typeof spec['token'] === 'string' ? spec['token'] : '';
  if (token === '') throw apiErrors.badRequest('token is required for TokenReview in authentication');
  const status: Json = {};
  const reviewer = ctx.settings?.tokenReviewer;
  if (reviewer) {
    const r = await reviewer.review(token, strList(spec['audiences']));
    if (r.audienceMismatch) throw apiErrors.internal('error validating audiences');
    if (r.authenticated) status['authenticated'] = true;
    status['user'] = {};
    if (r.user) {
      status['user'] = {
        username: r.user.name,
        ...(r.user.uid ? { uid: r.user.uid } : {}),
        groups: r.user.groups,
        ...(r.user.extra && Object.keys(r.user.extra).length > 0 ? { extra: r.user.extra } : {}),
      };
      if (r.audiences && r.audiences.length > 0) status['audiences'] = r.audiences;
    }
    if (r.error) status['error'] = r.error;
  }
  return {
    kind: 'TokenReview',
    apiVersion: `${AUTHENTICATION_GROUP}/v1`,
    metadata: { ...(isObject(obj.metadata) ? obj.metadata : {}), creationTimestamp: null },
    spec,
    status,
  };
}

export const tokenReviewKind: KindDecl = {
  group: AUTHENTICATION_GROUP,
  version: 'v1',
  kind: 'TokenReview',
  listKind: 'TokenReviewList',
  resource: 'tokenreviews',
  singular: 'tokenreview',
  namespaced: false,
  definition: AUTHN_NAMES.TokenReview,
  listDefinition: AUTHN_NAMES.TokenReview,
  definitions: AUTHENTICATION_DEFINITIONS,
  verbs: ['create'],
  tracksGeneration: false,
  compute: tokenReview,
  strategy: { validate: () => [], validateUpdate: () => [] },
};
