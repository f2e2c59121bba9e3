/**
 * What an authorizer decides on, as Kubernetes' authorizer.Attributes, and the authorizer contract shared by
 * the authorization filter, the impersonation filter, the access reviews and RBAC's escalation checks. The
 * filters' RequestInfo is a superset of AccessAttributes, so a request's info can be passed as it is.
 */

export interface AccessUser {
  name: string;
  uid?: string;
  groups: string[];
  extra?: Record<string, string[]>;
}

export interface AccessAttributes {
  isResourceRequest: boolean;
  /** The URL path (non-resource requests). */
  path: string;
  verb: string;
  apiGroup: string;
  apiVersion: string;
  namespace: string;
  resource: string;
  subresource: string;
  name: string;
}

export type Decision = 'allow' | 'deny' | 'noOpinion';

export interface AuthorizationResult {
  decision: Decision;
  /** Why; shown after the forbidden message and in the authorization.k8s.io/reason audit annotation. */
  reason: string;
  /** An evaluation error (SubjectAccessReview status.evaluationError); the decision still stands. */
  error?: string;
}

export interface ResourceRuleInfo {
  verbs: string[];
  apiGroups: string[];
  resources: string[];
  resourceNames: string[];
}

export interface NonResourceRuleInfo {
  verbs: string[];
  nonResourceURLs: string[];
}

/** What a user may do in a namespace, as Kubernetes' RuleResolver.RulesFor answers. */
export interface RulesResult {
  resourceRules: ResourceRuleInfo[];
  nonResourceRules: NonResourceRuleInfo[];
  /** The lists are not everything the user may do (an authorizer that cannot enumerate, or an error). */
  incomplete: boolean;
  error?: string;
}

/** An authorizer: must not throw for an ordinary denial; `rulesFor` is for SelfSubjectRulesReview. */
export interface AccessAuthorizer {
  authorize(user: AccessUser | undefined, attrs: AccessAttributes): AuthorizationResult | Promise<AuthorizationResult>;
  rulesFor?(user: AccessUser, namespace: string): RulesResult | Promise<RulesResult>;
}

/** Attributes of a resource request made up by the server (escalation and impersonation checks). */
export function resourceAttributes(a: Partial<AccessAttributes> & { verb: string; resource: string }): AccessAttributes {
  return {
    isResourceRequest: true,
    path: '',
    apiGroup: '',
    apiVersion: '*',
    namespace: '',
    subresource: '',
    name: '',
    ...a,
  };
}
