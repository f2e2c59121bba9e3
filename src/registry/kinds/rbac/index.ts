/**
 * Role, ClusterRole, RoleBinding and ClusterRoleBinding (rbac.authorization.k8s.io/v1), as Kubernetes 1.23:
 *   - strategies: pkg/registry/rbac/{role,clusterrole,rolebinding,clusterrolebinding}/strategy.go (create on
 *     update and unconditional updates allowed; nothing dropped)
 *   - defaults: rbac/v1 SetDefaults_*: roleRef.apiGroup and User/Group subjects' apiGroup default to the group
 *   - validation: pkg/apis/rbac/validation (ValidateRole, ValidateClusterRole, ValidateRoleBinding,
 *     ValidateClusterRoleBinding; names are path segments; roleRef cannot change)
 *   - tables: roles as the default table (NAME, CREATED AT); bindings ROLE, AGE and wide USERS, GROUPS,
 *     SERVICEACCOUNTS (pkg/printers/internalversion/printers.go)
 * Escalation prevention lives in escalation.ts (an admission step the control plane installs).
 */
import type { KObject, KindDecl, Strategy, TableColumn } from '../../kind.js';
import {
  GoLiteral,
  goQuote,
  invalid,
  nameIsDNSSubdomain,
  notSupported,
  required,
  root,
  type FieldError,
  type FieldPath,
  type NameValidator,
} from '../../../util/validation.js';
import { AGE_COLUMN, isObject } from '../configmap.js';
import { validateLabelSelector } from '../pvc.js';
import { RBAC_DEFINITIONS, RBAC_NAMES } from './definitions.js';
import { RBAC_GROUP } from './resolver.js';

type Json = Record<string, any>;

/** ValidateRBACName: path.IsValidPathSegmentName. */
export const rbacNameValidator: NameValidator = (name) => {
  if (name === '.' || name === '..') return [`may not be '${name}'`];
  const errs: string[] = [];
  for (const bad of ['/', '%']) if (name.includes(bad)) errs.push(`may not contain '${bad}'`);
  return errs;
};

const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const str = (v: unknown): string => (typeof v === 'string' ? v : '');

/** ValidatePolicyRule. */
function validatePolicyRule(rule: Json, namespaced: boolean, path: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  if (list(rule['verbs']).length === 0) errs.push(required(path.child('verbs'), 'verbs must contain at least one value'));
  const urls = list(rule['nonResourceURLs']);
  if (urls.length > 0) {
    const value = new GoLiteral(`[]string{${urls.map((u) => goQuote(str(u))).join(', ')}}`);
    if (namespaced) errs.push(invalid(path.child('nonResourceURLs'), value, 'namespaced rules cannot apply to non-resource URLs'));
    if (list(rule['apiGroups']).length > 0 || list(rule['resources']).length > 0 || list(rule['resourceNames']).length > 0) {
      errs.push(invalid(path.child('nonResourceURLs'), value, 'rules cannot apply to both regular resources and non-resource URLs'));
    }
    return errs;
  }
  if (list(rule['apiGroups']).length === 0) errs.push(required(path.child('apiGroups'), 'resource rules must supply at least one api group'));
  if (list(rule['resources']).length === 0) errs.push(required(path.child('resources'), 'resource rules must supply at least one resource'));
  return errs;
}

function validateRules(obj: KObject, namespaced: boolean): FieldError[] {
  return list(obj['rules']).flatMap((r, i) => validatePolicyRule(isObject(r) ? r : {}, namespaced, root('rules').index(i)));
}

/** ValidateClusterRole's aggregationRule part. */
function validateAggregationRule(obj: KObject): FieldError[] {
  const rule = obj['aggregationRule'];
  if (!isObject(rule)) return [];
  const path = root('aggregationRule', 'clusterRoleSelectors');
  const selectors = list(rule['clusterRoleSelectors']);
  const errs: FieldError[] = [];
  if (selectors.length === 0) errs.push(required(path, 'at least one clusterRoleSelector required if aggregationRule is non-nil'));
  selectors.forEach((s, i) => errs.push(...validateLabelSelector(s, path.index(i))));
  return errs;
}

/** ValidateRoleBindingSubject. */
function validateSubject(s: Json, namespaced: boolean, path: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  const name = str(s['name']);
  const apiGroup = str(s['apiGroup']);
  if (name === '') errs.push(required(path.child('name'), ''));
  switch (s['kind']) {
    case 'ServiceAccount':
      if (name !== '') for (const msg of nameIsDNSSubdomain(name, false)) errs.push(invalid(path.child('name'), name, msg));
      if (apiGroup !== '') errs.push(notSupported(path.child('apiGroup'), apiGroup, ['']));
      if (!namespaced && str(s['namespace']) === '') errs.push(required(path.child('namespace'), ''));
      break;
    case 'User':
    case 'Group':
      if (apiGroup !== RBAC_GROUP) errs.push(notSupported(path.child('apiGroup'), apiGroup, [RBAC_GROUP]));
      break;
    default:
      errs.push(notSupported(path.child('kind'), str(s['kind']), ['ServiceAccount', 'User', 'Group']));
  }
  return errs;
}

/** ValidateRoleBinding / ValidateClusterRoleBinding (without the object metadata). */
function validateBinding(obj: KObject, namespaced: boolean): FieldError[] {
  const errs: FieldError[] = [];
  const ref: Json = isObject(obj['roleRef']) ? obj['roleRef'] : {};
  const apiGroup = str(ref['apiGroup']);
  if (apiGroup !== RBAC_GROUP) errs.push(notSupported(root('roleRef', 'apiGroup'), apiGroup, [RBAC_GROUP]));
  const kinds = namespaced ? ['Role', 'ClusterRole'] : ['ClusterRole'];
  if (!kinds.includes(str(ref['kind']))) errs.push(notSupported(root('roleRef', 'kind'), str(ref['kind']), kinds));
  const name = str(ref['name']);
  if (name === '') errs.push(required(root('roleRef', 'name'), ''));
  else for (const msg of rbacNameValidator(name, false)) errs.push(invalid(root('roleRef', 'name'), name, msg));
  list(obj['subjects']).forEach((s, i) => errs.push(...validateSubject(isObject(s) ? s : {}, namespaced, root('subjects').index(i))));
  return errs;
}

/** The roleRef of a binding as Go prints the internal struct (%#v). */
function roleRefLiteral(ref: unknown): GoLiteral {
  const r: Json = isObject(ref) ? ref : {};
  return new GoLiteral(`rbac.RoleRef{APIGroup:${goQuote(str(r['apiGroup']))}, Kind:${goQuote(str(r['kind']))}, Name:${goQuote(str(r['name']))}}`);
}

function validateBindingUpdate(obj: KObject, old: KObject, namespaced: boolean): FieldError[] {
  const errs = validateBinding(obj, namespaced);
  const a: Json = isObject(obj['roleRef']) ? obj['roleRef'] : {};
  const b: Json = isObject(old['roleRef']) ? old['roleRef'] : {};
  if (str(a['apiGroup']) !== str(b['apiGroup']) || str(a['kind']) !== str(b['kind']) || str(a['name']) !== str(b['name'])) {
    errs.push(invalid(root('roleRef'), roleRefLiteral(obj['roleRef']), 'cannot change roleRef'));
  }
  return errs;
}

/** SetDefaults_RoleBinding / _ClusterRoleBinding / _Subject. */
function defaultBinding(obj: KObject): void {
  if (isObject(obj['roleRef']) && !obj['roleRef']['apiGroup']) obj['roleRef']['apiGroup'] = RBAC_GROUP;
  for (const s of list(obj['subjects'])) {
    if (!isObject(s) || s['apiGroup']) continue;
    if (s['kind'] === 'User' || s['kind'] === 'Group') s['apiGroup'] = RBAC_GROUP;
  }
}

// ---- tables --------------------------------------------------------------------------------------------

/** rbac.SubjectsStrings: users, groups and service accounts (namespace/name) of a binding. */
export function subjectsStrings(obj: KObject): { users: string[]; groups: string[]; serviceAccounts: string[] } {
  const out = { users: [] as string[], groups: [] as string[], serviceAccounts: [] as string[] };
  for (const s of list(obj['subjects'])) {
    if (!isObject(s)) continue;
    if (s['kind'] === 'User') out.users.push(str(s['name']));
    else if (s['kind'] === 'Group') out.groups.push(str(s['name']));
    else if (s['kind'] === 'ServiceAccount') out.serviceAccounts.push(`${str(s['namespace'])}/${str(s['name'])}`);
  }
  return out;
}

function bindingColumns(kind: 'roleBinding' | 'clusterRoleBinding', roleRefDoc: string): TableColumn[] {
  return [
    {
      name: 'Role',
      type: 'string',
      description: roleRefDoc,
      priority: 0,
      cell: (o) => `${str(o['roleRef']?.kind)}/${str(o['roleRef']?.name)}`,
    },
    AGE_COLUMN,
    { name: 'Users', type: 'string', description: `Users in the ${kind}`, priority: 1, cell: (o) => subjectsStrings(o).users.join(', ') },
    { name: 'Groups', type: 'string', description: `Groups in the ${kind}`, priority: 1, cell: (o) => subjectsStrings(o).groups.join(', ') },
    {
      name: 'ServiceAccounts',
      type: 'string',
      description: `ServiceAccounts in the ${kind}`,
      priority: 1,
      cell: (o) => subjectsStrings(o).serviceAccounts.join(', '),
    },
  ];
}

// ---- the kinds -----------------------------------------------------------------------------------------

const common = { allowCreateOnUpdate: true, allowUnconditionalUpdate: true } satisfies Partial<Strategy>;

function decl(kind: string, resource: string, namespaced: boolean, strategy: Strategy, columns?: TableColumn[]): KindDecl {
  const k = kind as keyof typeof RBAC_NAMES;
  return {
    group: RBAC_GROUP,
    version: 'v1',
    kind,
    listKind: `${kind}List`,
    resource,
    singular: kind.toLowerCase(),
    namespaced,
    nameValidator: rbacNameValidator,
    definition: RBAC_NAMES[k],
    listDefinition: RBAC_NAMES[`${kind}List` as keyof typeof RBAC_NAMES],
    definitions: RBAC_DEFINITIONS,
    tracksGeneration: false,
    ...(columns ? { columns } : {}),
    strategy,
  };
}

const ROLE_REF_DOC = (RBAC_DEFINITIONS[RBAC_NAMES.RoleBinding]!.properties!['roleRef']!.description ?? '');
const CLUSTER_ROLE_REF_DOC = (RBAC_DEFINITIONS[RBAC_NAMES.ClusterRoleBinding]!.properties!['roleRef']!.description ?? '');

export const roleKind: KindDecl = decl('Role', 'roles', true, {
  ...common,
  validate: (obj) => validateRules(obj, true),
  validateUpdate: (obj) => validateRules(obj, true),
});

export const clusterRoleKind: KindDecl = decl('ClusterRole', 'clusterroles', false, {
  ...common,
  validate: (obj) => [...validateRules(obj, false), ...validateAggregationRule(obj)],
  validateUpdate: (obj) => [...validateRules(obj, false), ...validateAggregationRule(obj)],
});

export const roleBindingKind: KindDecl = decl(
  'RoleBinding',
  'rolebindings',
  true,
  {
    ...common,
    default: defaultBinding,
    validate: (obj) => validateBinding(obj, true),
    validateUpdate: (obj, old) => validateBindingUpdate(obj, old, true),
  },
  bindingColumns('roleBinding', ROLE_REF_DOC),
);

export const clusterRoleBindingKind: KindDecl = decl(
  'ClusterRoleBinding',
  'clusterrolebindings',
  false,
  {
    ...common,
    default: defaultBinding,
    validate: (obj) => validateBinding(obj, false),
    validateUpdate: (obj, old) => validateBindingUpdate(obj, old, false),
  },
  bindingColumns('clusterRoleBinding', CLUSTER_ROLE_REF_DOC),
);

export const RBAC_KINDS: KindDecl[] = [roleKind, clusterRoleKind, roleBindingKind, clusterRoleBindingKind];
