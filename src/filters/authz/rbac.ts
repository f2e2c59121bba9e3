/**
 * --authorization-mode=RBAC, as Kubernetes' RBACAuthorizer: allowed when a rule the user holds (through the
 * bindings) allows the request; otherwise no opinion, with `RBAC: <resolution errors>` as the reason when
 * a binding references a missing role.
 */
import type { AccessAttributes, AccessAuthorizer, AccessUser, AuthorizationResult, RulesResult } from '../../registry/kinds/authorization/attributes.js';
import { aggregateErrors, type RuleResolver } from '../../registry/kinds/rbac/resolver.js';
import { ruleAllows } from '../../registry/kinds/rbac/rules.js';

export function rbacAuthorizer(resolver: RuleResolver): AccessAuthorizer {
  const decide = (user: AccessUser | undefined, attrs: AccessAttributes): AuthorizationResult => {
    if (!user) return { decision: 'noOpinion', reason: '' };
    let allowedBy: string | undefined;
    const errors: string[] = [];
    resolver.visitRulesFor(user, attrs.namespace, (source, rule, err) => {
      if (rule && ruleAllows(attrs, rule)) {
        allowedBy = source;
        return false;
      }
      if (err) errors.push(err);
      return true;
    });
    if (allowedBy !== undefined) return { decision: 'allow', reason: `RBAC: allowed by ${allowedBy}` };
    return { decision: 'noOpinion', reason: errors.length > 0 ? `RBAC: ${aggregateErrors(errors)}` : '' };
  };
  return {
    authorize(user, attrs) {
      // The caches answer synchronously once loaded; only the first requests wait for the initial lists.
      if (resolver.isReady) return decide(user, attrs);
      return resolver.ready().then(() => decide(user, attrs));
    },
    async rulesFor(user, namespace): Promise<RulesResult> {
      await resolver.ready();
      const { rules, errors } = resolver.rulesFor(user, namespace);
      const out: RulesResult = { resourceRules: [], nonResourceRules: [], incomplete: false };
      for (const r of rules) {
        if ((r.resources ?? []).length > 0) {
          out.resourceRules.push({ verbs: r.verbs, apiGroups: r.apiGroups ?? [], resources: r.resources ?? [], resourceNames: r.resourceNames ?? [] });
        }
        if ((r.nonResourceURLs ?? []).length > 0) out.nonResourceRules.push({ verbs: r.verbs, nonResourceURLs: r.nonResourceURLs ?? [] });
      }
      const error = aggregateErrors(errors);
      return error ? { ...out, error } : out;
    },
  };
}
