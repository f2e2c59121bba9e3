/**
 * RBAC's rule resolution, as Kubernetes' DefaultRuleResolver: the rules a user holds in a namespace come from
 * the ClusterRoleBindings (everywhere) and the namespace's RoleBindings whose subjects include the user,
 * through the Role or ClusterRole each binding references. Reads in-memory caches of the four kinds.
 */
import type { KObject } from '../../kind.js';
import type { Registry } from '../../registry.js';
import type { AccessUser } from '../authorization/attributes.js';
import { ObjectCache } from './cache.js';
import type { PolicyRule } from './rules.js';

export const RBAC_GROUP = 'rbac.authorization.k8s.io';

export interface RoleRef {
  apiGroup?: string;
  kind: string;
  name: string;
}

export interface Subject {
  kind: string;
  apiGroup?: string;
  name: string;
  namespace?: string;
}

/** Visits one rule (with the binding that grants it) or one resolution error; returns false to stop. */
export type RuleVisitor = (source: string | undefined, rule: PolicyRule | undefined, err: string | undefined) => boolean;

/**
 * How a missing role is worded: the authorizer reads listers (`clusterrole.rbac.authorization.k8s.io "x" not
 * found`), the escalation checks read the registry (`clusterroles.rbac.authorization.k8s.io "x" not found`).
 */
export type NotFoundStyle = 'lister' | 'registry';

export class RoleNotFoundError extends Error {
  constructor(
    readonly resource: 'roles' | 'clusterroles',
    readonly roleName: string,
    style: NotFoundStyle,
  ) {
    const r = style === 'lister' ? resource.slice(0, -1) : resource;
    super(`${r}.${RBAC_GROUP} "${roleName}" not found`);
  }
}

export function serviceAccountUsername(namespace: string, name: string): string {
  return `system:serviceaccount:${namespace}:${name}`;
}

/** appliesTo: the index of the first subject that is the user, or -1. */
export function subjectIndexFor(user: AccessUser, subjects: readonly Subject[] | undefined, namespace: string): number {
  const list = subjects ?? [];
  for (let i = 0; i < list.length; i++) {
    const s = list[i]!;
    switch (s.kind) {
      case 'User':
        if (user.name === s.name) return i;
        break;
      case 'Group':
        if (user.groups.includes(s.name)) return i;
        break;
      case 'ServiceAccount': {
        const ns = s.namespace || namespace;
        if (ns !== '' && user.name === serviceAccountUsername(ns, s.name)) return i;
        break;
      }
    }
  }
  return -1;
}

function describeSubject(s: Subject, bindingNamespace: string): string {
  if (s.kind === 'ServiceAccount') return `${s.kind} ${JSON.stringify(`${s.name}/${s.namespace || bindingNamespace}`)}`;
  return `${s.kind} ${JSON.stringify(s.name)}`;
}

function describeBinding(b: KObject, subject: Subject): string {
  const ref = b['roleRef'] as RoleRef;
  const ns = b.metadata?.namespace ?? '';
  if (ns === '') {
    return `ClusterRoleBinding ${JSON.stringify(b.metadata?.name ?? '')} of ${ref.kind} ${JSON.stringify(ref.name)} to ${describeSubject(subject, '')}`;
  }
  return `RoleBinding ${JSON.stringify(`${b.metadata?.name ?? ''}/${ns}`)} of ${ref.kind} ${JSON.stringify(ref.name)} to ${describeSubject(subject, ns)}`;
}

export class RuleResolver {
  readonly roles: ObjectCache;
  readonly roleBindings: ObjectCache;
  readonly clusterRoles: ObjectCache;
  readonly clusterRoleBindings: ObjectCache;
  private readyPromise: Promise<void> | undefined;

  constructor(registry: Registry) {
    const store = (resource: string) => {
      const s = registry.store(RBAC_GROUP, 'v1', resource);
      if (!s) throw new Error(`RBAC needs the ${resource}.${RBAC_GROUP} kind`);
      return s;
    };
    this.roles = new ObjectCache(store('roles'));
    this.roleBindings = new ObjectCache(store('rolebindings'));
    this.clusterRoles = new ObjectCache(store('clusterroles'));
    this.clusterRoleBindings = new ObjectCache(store('clusterrolebindings'));
  }

  private get caches(): ObjectCache[] {
    return [this.roles, this.roleBindings, this.clusterRoles, this.clusterRoleBindings];
  }

  /** Resolves once every cache has its first list (started on first call). */
  ready(): Promise<void> {
    this.readyPromise ??= Promise.all(this.caches.map((c) => c.ready())).then(
      () => undefined,
      (err: unknown) => {
        this.readyPromise = undefined;
        throw err;
      },
    );
    return this.readyPromise;
  }

  get isReady(): boolean {
    return this.caches.every((c) => c.isReady);
  }

  stop(): void {
    for (const c of this.caches) c.stop();
  }

  /** GetRoleReferenceRules: the rules of the role a binding in `bindingNamespace` references; throws when missing. */
  roleReferenceRules(ref: RoleRef, bindingNamespace: string, style: NotFoundStyle = 'lister'): PolicyRule[] {
    if (ref.kind === 'Role') {
      const role = this.roles.get(bindingNamespace, ref.name);
      if (!role) throw new RoleNotFoundError('roles', ref.name, style);
      return (role['rules'] as PolicyRule[] | undefined) ?? [];
    }
    if (ref.kind === 'ClusterRole') {
      const role = this.clusterRoles.get('', ref.name);
      if (!role) throw new RoleNotFoundError('clusterroles', ref.name, style);
      return (role['rules'] as PolicyRule[] | undefined) ?? [];
    }
    throw new Error(`unsupported role reference kind: ${JSON.stringify(ref.kind)}`);
  }

  /** VisitRulesFor: cluster-wide bindings first, then the namespace's (when one is given). Caches must be ready. */
  visitRulesFor(user: AccessUser, namespace: string, visit: RuleVisitor, style: NotFoundStyle = 'lister'): void {
    const bindings = namespace === '' ? [this.clusterRoleBindings.list()] : [this.clusterRoleBindings.list(), this.roleBindings.list(namespace)];
    for (const [i, list] of bindings.entries()) {
      const scope = i === 0 ? '' : namespace;
      for (const b of list) {
        const subjects = b['subjects'] as Subject[] | undefined;
        const idx = subjectIndexFor(user, subjects, scope);
        if (idx < 0) continue;
        let rules: PolicyRule[];
        try {
          rules = this.roleReferenceRules(b['roleRef'] as RoleRef, scope, style);
        } catch (err) {
          if (!visit(undefined, undefined, (err as Error).message)) return;
          continue;
        }
        const source = describeBinding(b, subjects![idx]!);
        for (const r of rules) if (!visit(source, r, undefined)) return;
      }
    }
  }

  /** RulesFor: every rule the user holds in the namespace, and the resolution errors met. */
  rulesFor(user: AccessUser, namespace: string, style: NotFoundStyle = 'lister'): { rules: PolicyRule[]; errors: string[] } {
    const rules: PolicyRule[] = [];
    const errors: string[] = [];
    this.visitRulesFor(
      user,
      namespace,
      (_s, rule, err) => {
        if (rule) rules.push(rule);
        if (err) errors.push(err);
        return true;
      },
      style,
    );
    return { rules, errors };
  }
}

/** utilerrors.NewAggregate(...).Error(): one message as is, several (deduplicated) in brackets. */
export function aggregateErrors(messages: readonly string[]): string {
  const unique = [...new Set(messages)];
  if (unique.length === 0) return '';
  return unique.length === 1 ? unique[0]! : `[${unique.join(', ')}]`;
}
