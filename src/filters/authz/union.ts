/**
 * The authorizer chain of --authorization-mode, as Kubernetes' union authorizer: each authorizer in order,
 * the first allow or deny wins; when all have no opinion, their non-empty reasons are joined by newlines.
 * RulesFor (SelfSubjectRulesReview) is the union of every authorizer's rules.
 */
import type { AccessAuthorizer, AuthorizationResult, RulesResult } from '../../registry/kinds/authorization/attributes.js';
import { aggregateErrors } from '../../registry/kinds/rbac/resolver.js';

export function unionAuthorizer(authorizers: readonly AccessAuthorizer[]): AccessAuthorizer {
  return {
    async authorize(user, attrs): Promise<AuthorizationResult> {
      const reasons: string[] = [];
      const errors: string[] = [];
      for (const a of authorizers) {
        const r = await a.authorize(user, attrs);
        if (r.error) errors.push(r.error);
        if (r.reason) reasons.push(r.reason);
        if (r.decision !== 'noOpinion') return r;
      }
      const error = aggregateErrors(errors);
      return { decision: 'noOpinion', reason: reasons.join('\n'), ...(error ? { error } : {}) };
    },
    async rulesFor(user, namespace): Promise<RulesResult> {
      const out: RulesResult = { resourceRules: [], nonResourceRules: [], incomplete: false };
      const errors: string[] = [];
      for (const a of authorizers) {
        if (!a.rulesFor) continue;
        const r = await a.rulesFor(user, namespace);
        out.resourceRules.push(...r.resourceRules);
        out.nonResourceRules.push(...r.nonResourceRules);
        if (r.incomplete) out.incomplete = true;
        if (r.error) errors.push(r.error);
      }
      const error = aggregateErrors(errors);
      return error ? { ...out, error } : out;
    },
  };
}

/** --authorization-mode=AlwaysAllow. */
export const alwaysAllowAuthorizer: AccessAuthorizer = {
  authorize: () => ({ decision: 'allow', reason: '' }),
  rulesFor: () => ({
    resourceRules: [{ verbs: ['*'], apiGroups: ['*'], resources: ['*'], resourceNames: [] }],
    nonResourceRules: [{ verbs: ['*'], nonResourceURLs: ['*'] }],
    incomplete: false,
  }),
};

/** --authorization-mode=AlwaysDeny: no opinion, with Kubernetes' reason. */
export const alwaysDenyAuthorizer: AccessAuthorizer = {
  authorize: () => ({ decision: 'noOpinion', reason: 'Everything is forbidden.' }),
  rulesFor: () => ({ resourceRules: [], nonResourceRules: [], incomplete: false }),
};
