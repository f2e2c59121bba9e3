/** authentication.k8s.io: TokenReview (a kind), TokenRequest (the serviceaccounts/token subresource) and the service-account JWTs. */
import type { KindDecl } from '../../kind.js';
import { tokenReviewKind } from './tokenreview.js';

export { tokenReviewKind, type TokenReviewer, type TokenReviewResult } from './tokenreview.js';
export { tokenRequestAction } from './tokenrequest.js';
export { AUTHENTICATION_DEFINITIONS, AUTHENTICATION_GROUP } from './definitions.js';

export const AUTHENTICATION_KINDS: KindDecl[] = [tokenReviewKind];
