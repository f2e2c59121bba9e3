/**
 * RBAC's escalation prevention (pkg/registry/rbac/*\/policybased): a user may write a Role or ClusterRole only
 * with rules they already hold (in the role's namespace), unless they may `escalate` roles; and may write a
 * binding only to a role whose rules they hold, unless they may `bind` that role. Members of system:masters
 * may do anything. Runs as an admission step on the four RBAC kinds (dry runs included).
 */
import { apiErrors } from '../../errors.js';
import type { KObject } from '../../kind.js';
import type { Admission, AdmissionAttributes } from '../../store.js';
import { resourceAttributes, type AccessAuthorizer, type AccessUser } from '../authorization/attributes.js';
import { aggregateErrors, RBAC_GROUP, RoleNotFoundError, type RoleRef, type RuleResolver } from './resolver.js';
import { compactRules, compactString, covers, goQuoteList, type PolicyRule } from './rules.js';

const SYSTEM_MASTERS = 'system:masters';

/** Rules that only cluster-admin holds: what an aggregationRule may gather. */
const FULL_AUTHORITY: PolicyRule[] = [
  { verbs: ['*'], apiGroups: ['*'], resources: ['*'] },
  { verbs: ['*'], nonResourceURLs: ['*'] },
];

const ROLE_RESOURCES = new Set(['roles', 'clusterroles']);
const BINDING_RESOURCES = new Set(['rolebindings', 'clusterrolebindings']);

/** The parts of an object the garbage collector changes (IsOnlyMutatingGCFields): other changes are checked. */
function onlyGCFieldsChanged(obj: KObject, old: KObject): boolean {
  const strip = (o: KObject) => {
    const c = structuredClone(o);
    if (c.metadata) {
      delete c.metadata.ownerReferences;
      delete c.metadata.finalizers;
      delete c.metadata.resourceVersion;
      delete c.metadata.managedFields;
      delete c.metadata.generation;
    }
    return JSON.stringify(c);
  };
  return strip(obj) === strip(old);
}

export interface EscalationDeps {
  /** Called on first use (the resolver is made after the registry the admission step belongs to). */
  resolver: () => RuleResolver;
  /** The server's authorizer chain, asked about the escalate and bind verbs. */
  authorizer: () => AccessAuthorizer;
}

export class EscalationCheck {
  constructor(private readonly deps: EscalationDeps) {}

  /** ConfirmNoEscalation: throws the Forbidden Kubernetes answers when `rules` are not all held by the user. */
  async confirmNoEscalation(user: AccessUser, namespace: string, rules: readonly PolicyRule[], resource: string, name: string, message?: string): Promise<void> {
    await this.deps.resolver().ready();
    const owned = this.deps.resolver().rulesFor(user, namespace, 'registry');
    const { covered, missing } = covers(owned.rules, rules);
    if (covered) return;
    if (message) throw apiErrors.forbidden({ group: RBAC_GROUP, resource }, name, message);
    const descriptions = [...new Set(compactRules(missing).map(compactString))].sort();
    let msg = `user ${JSON.stringify(user.name)} (groups=${goQuoteList(user.groups)}) is attempting to grant RBAC permissions not currently held:\n${descriptions.join('\n')}`;
    if (owned.errors.length > 0) msg += `; resolution errors: [${aggregateErrors(owned.errors)}]`;
    throw apiErrors.forbidden({ group: RBAC_GROUP, resource }, name, msg);
  }

  private async allowed(user: AccessUser, verb: string, resource: string, namespace: string, name: string): Promise<boolean> {
    const attrs = resourceAttributes({ verb, apiGroup: RBAC_GROUP, resource, namespace, name });
    return (await this.deps.authorizer().authorize(user, attrs)).decision === 'allow';
  }

  async checkRole(a: AdmissionAttributes): Promise<void> {
    const user = a.user;
    if (!user || !a.object) return;
    const resource = a.decl.resource;
    if (a.oldObject && onlyGCFieldsChanged(a.object, a.oldObject)) return;
    // RoleEscalationAuthorized asks with the request's name: none on create.
    if (await this.allowed(user, 'escalate', resource, a.namespace, a.operation === 'CREATE' ? '' : a.name)) return;
    const rules = (a.object['rules'] as PolicyRule[] | undefined) ?? [];
    await this.confirmNoEscalation(user, a.namespace, rules, resource, a.name);
    const aggregation = a.object['aggregationRule'];
    if (resource === 'clusterroles' && aggregation) {
      const changed = !a.oldObject || JSON.stringify(aggregation) !== JSON.stringify(a.oldObject['aggregationRule']);
      if (changed) await this.confirmNoEscalation(user, '', FULL_AUTHORITY, resource, a.name, 'must have cluster-admin privileges to use the aggregationRule');
    }
  }

  async checkBinding(a: AdmissionAttributes): Promise<void> {
    const user = a.user;
    if (!user || !a.object) return;
    if (a.oldObject && onlyGCFieldsChanged(a.object, a.oldObject)) return;
    const ref = a.object['roleRef'] as RoleRef | undefined;
    if (!ref) return;
    const refResource = ref.kind === 'Role' ? 'roles' : ref.kind === 'ClusterRole' ? 'clusterroles' : '';
    if (refResource && (await this.allowed(user, 'bind', refResource, a.namespace, ref.name))) return;
    await this.deps.resolver().ready();
    let rules: PolicyRule[];
    try {
      rules = this.deps.resolver().roleReferenceRules(ref, a.namespace, 'registry');
    } catch (err) {
      if (err instanceof RoleNotFoundError) throw apiErrors.notFound({ group: RBAC_GROUP, resource: err.resource }, err.roleName);
      throw err;
    }
    await this.confirmNoEscalation(user, a.namespace, rules, a.decl.resource, a.name);
  }
}

/**
 * The admission step: creates and updates of RBAC objects by anyone outside system:masters are checked. It
 * runs in the mutating phase, last in the chain, because that is where Kubernetes' policy-based storage
 * checks: after mutating admission and before validation (an escalating invalid role is a 403, not a 422).
 */
export function rbacEscalationAdmission(deps: EscalationDeps): Admission {
  const check = new EscalationCheck(deps);
  return {
    async mutate(a) {
      if (a.decl.group !== RBAC_GROUP || (a.operation !== 'CREATE' && a.operation !== 'UPDATE')) return;
      if (!a.user || a.user.groups.includes(SYSTEM_MASTERS)) return;
      if (ROLE_RESOURCES.has(a.decl.resource)) await check.checkRole(a);
      else if (BINDING_RESOURCES.has(a.decl.resource)) await check.checkBinding(a);
    },
  };
}
