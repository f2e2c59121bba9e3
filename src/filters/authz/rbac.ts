/**
 * --authorization-mode=RBAC, as Kubernetes' RBACAuthorizer: allowed when a rule the user holds (through the
 * bindings) allows the request; otherwise no opinion, with `RBAC: <resolution errors>` as the reason when
 * a binding references a missing role. Decisions are cached per user and request until a role or binding changes.
 */
import type { AccessAttributes, AccessAuthorizer, AccessUser, AuthorizationResult, RulesResult } from '../../registry/kinds/authorization/attributes.js';
import { aggregateErrors, type RuleResolver } from '../../registry/kinds/rbac/resolver.js';
import { ruleAllows } from '../../registry/kinds/rbac/rules.js';

/** Decisions kept at most; all are forgotten when full (a cache, not a record). */
const MAX_CACHED_DECISIONS = 10_000;

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
  // Decisions by user and request, forgotten whenever a role or binding changes: a repeated request of the
  // same user costs a map lookup instead of a walk over every cluster binding and the rules they reference.
  const decisions = new Map<string, AuthorizationResult>();
  for (const c of [resolver.roles, resolver.roleBindings, resolver.clusterRoles, resolver.clusterRoleBindings]) c.onChange(() => decisions.clear());
  const cached = (user: AccessUser | undefined, attrs: AccessAttributes): AuthorizationResult => {
    if (!user) return decide(user, attrs);
    const key = `${user.name}\0${user.groups.join('\x01')}\0${attrs.isResourceRequest ? 'r' : 'n'}\0${attrs.verb}\0${attrs.apiGroup}\0${attrs.resource}\0${attrs.subresource}\0${attrs.namespace}\0${attrs.name}\0${attrs.isResourceRequest ? '' : attrs.path}`;
    let result = decisions.get(key);
    if (!result) {
      result = decide(user, attrs);
      if (decisions.size >= MAX_CACHED_DECISIONS) decisions.clear();
      decisions.set(key, result);
    }
    return result;
  };
  return {
    authorize(user, attrs) {
      // The caches answer synchronously once loaded; only the first requests wait for the initial lists.
      if (resolver.isReady) return cached(user, attrs);
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
