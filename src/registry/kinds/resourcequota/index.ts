/**
 * ResourceQuota (core/v1), as Kubernetes 1.23 serves it (pkg/registry/core/resourcequota):
 *   - namespaced, short name quota; the status subresource (status.hard and status.used, kept by the quota
 *     controller and charged by the ResourceQuota admission plugin); the main resource keeps status, the
 *     status subresource keeps spec
 *   - validation as ValidateResourceQuota with its wording: standard quota resource names or qualified names
 *     (count/..., requests.<extended>), non-negative quantities, integers for object counts and extended
 *     resources, known scopes that fit the resources, no conflicting scopes, scopeSelector operators
 *   - quantities are stored in canonical form; table: NAME AGE REQUEST LIMIT (status.used/status.hard pairs)
 */
import type { KObject, KindDecl, SubresourceStrategy, TableColumn } from '../../kind.js';
import { AGE_COLUMN } from '../configmap.js';
import { tryParseQuantity } from '../../../util/quantity.js';
import { GoLiteral, goQuote, invalid, isQualifiedName, notSupported, required, root, forbidden, type FieldError, type FieldPath } from '../../../util/validation.js';
import { RESOURCE_QUOTA_DEFINITIONS } from './definitions.js';

type Json = Record<string, any>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

const STANDARD_RESOURCES = [
  'cpu',
  'memory',
  'ephemeral-storage',
  'requests.cpu',
  'requests.memory',
  'requests.ephemeral-storage',
  'limits.cpu',
  'limits.memory',
  'limits.ephemeral-storage',
  'pods',
  'resourcequotas',
  'services',
  'replicationcontrollers',
  'secrets',
  'configmaps',
  'persistentvolumeclaims',
  'storage',
  'requests.storage',
  'services.nodeports',
  'services.loadbalancers',
];
const STANDARD_QUOTA_RESOURCES = STANDARD_RESOURCES.filter((r) => r !== 'storage');
/** Resources a pod-scoped quota may track (podObjectCountQuotaResources and podComputeQuotaResources). */
const POD_SCOPE_RESOURCES = ['pods', 'cpu', 'memory', 'limits.cpu', 'limits.memory', 'requests.cpu', 'requests.memory'];
const SCOPES = ['Terminating', 'NotTerminating', 'BestEffort', 'NotBestEffort', 'PriorityClass', 'CrossNamespacePodAffinity'];
const SCOPE_OPERATORS = ['In', 'NotIn', 'Exists', 'DoesNotExist'];
const INTEGER_RESOURCES = ['pods', 'services', 'replicationcontrollers', 'resourcequotas', 'secrets', 'configmaps', 'persistentvolumeclaims', 'services.nodeports', 'services.loadbalancers'];

const isHugePages = (n: string) => n.startsWith('hugepages-') || n.startsWith('requests.hugepages-');

/** validateResourceName then ValidateResourceQuotaResourceName. */
function validateQuotaResourceName(name: string, path: FieldPath): FieldError[] {
  const errs = isQualifiedName(name).map((m) => invalid(path, name, m));
  if (errs.length > 0) return errs;
  if (!name.includes('/')) {
    if (!STANDARD_RESOURCES.includes(name) && !isHugePages(name)) return [invalid(path, name, 'must be a standard resource type or fully qualified')];
    if (!STANDARD_QUOTA_RESOURCES.includes(name) && !isHugePages(name)) return [invalid(path, name, 'must be a standard resource for quota')];
  }
  return [];
}

/** validateResourceQuantityValue: non-negative, and whole for integer resources. */
function validateQuantityValue(name: string, raw: unknown, path: FieldPath): FieldError[] {
  const q = tryParseQuantity(typeof raw === 'number' ? String(raw) : typeof raw === 'string' ? raw : '');
  if (!q) return [invalid(path, raw, 'quantities must match the regular expression')];
  const errs: FieldError[] = [];
  if (q.sign() < 0) errs.push(invalid(path, q.toString(), 'must be greater than or equal to 0'));
  const integer = INTEGER_RESOURCES.includes(name) || name.startsWith('count/') || (name.includes('/') && !name.includes('kubernetes.io/'));
  if (integer && q.milliValue() % 1000n !== 0n) errs.push(invalid(path, q.toString(), 'must be an integer'));
  return errs;
}

/** A scope list as Go prints it (%#v of []core.ResourceQuotaScope). */
const scopeList = (scopes: string[]) => new GoLiteral(`[]core.ResourceQuotaScope{${scopes.map(goQuote).join(', ')}}`);

function scopeFitsResource(scope: string, resource: string): boolean {
  switch (scope) {
    case 'Terminating':
    case 'NotTerminating':
    case 'NotBestEffort':
    case 'PriorityClass':
    case 'CrossNamespacePodAffinity':
      return POD_SCOPE_RESOURCES.includes(resource) || resource === 'count/pods';
    case 'BestEffort':
      return resource === 'pods' || resource === 'count/pods';
    default:
      return true;
  }
}

function validateScopes(spec: Json, hard: string[], path: FieldPath): FieldError[] {
  const scopes = Array.isArray(spec['scopes']) ? (spec['scopes'] as unknown[]).map(String) : [];
  if (scopes.length === 0) return [];
  const p = path.child('scopes');
  const shown = scopeList(scopes);
  const errs: FieldError[] = [];
  if (hard.length === 0) errs.push(invalid(p, shown, 'must specify a hard resource limit when using scopes'));
  for (const s of scopes) {
    if (!SCOPES.includes(s)) errs.push(invalid(p, shown, 'unsupported scope'));
    for (const h of hard) if (!scopeFitsResource(s, h)) errs.push(invalid(p, shown, 'unsupported scope applied to resource'));
  }
  const set = new Set(scopes);
  if ((set.has('Terminating') && set.has('NotTerminating')) || (set.has('BestEffort') && set.has('NotBestEffort'))) {
    errs.push(invalid(p, shown, 'conflicting scopes'));
  }
  return errs;
}

function validateScopeSelector(spec: Json, hard: string[], path: FieldPath): FieldError[] {
  if (!isObject(spec['scopeSelector'])) return [];
  const p = path.child('scopeSelector', 'matchExpressions');
  const exprs = Array.isArray(spec['scopeSelector']['matchExpressions']) ? (spec['scopeSelector']['matchExpressions'] as unknown[]) : [];
  const errs: FieldError[] = [];
  const names: string[] = [];
  exprs.forEach((e, i) => {
    const x: Json = isObject(e) ? e : {};
    const ip = p.index(i);
    const scope = String(x['scopeName'] ?? '');
    const op = String(x['operator'] ?? '');
    const values = Array.isArray(x['values']) ? (x['values'] as unknown[]) : [];
    if (!SCOPES.includes(scope)) errs.push(invalid(ip.child('scopeName'), scope, 'unsupported scope'));
    if (!SCOPE_OPERATORS.includes(op)) errs.push(notSupported(ip.child('operator'), op, SCOPE_OPERATORS));
    if ((op === 'In' || op === 'NotIn') && values.length === 0) errs.push(required(ip.child('values'), 'must be at least one value when `operator` is \'In\' or \'NotIn\' for scope selector'));
    if ((op === 'Exists' || op === 'DoesNotExist') && values.length > 0) errs.push(invalid(ip.child('values'), values, 'must be no value when `operator` is \'Exist\' or \'DoesNotExist\' for scope selector'));
    if (scope === 'Terminating' || scope === 'NotTerminating' || scope === 'BestEffort' || scope === 'NotBestEffort') {
      if (op !== 'Exists') errs.push(invalid(ip.child('operator'), op, 'must be \'Exist\' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort or ResourceQuotaScopeNotBestEffort'));
    }
    names.push(scope);
  });
  for (const s of names) {
    for (const h of hard) if (!scopeFitsResource(s, h)) errs.push(invalid(p, scopeList(names), 'unsupported scope applied to resource'));
  }
  const set = new Set(names);
  if ((set.has('Terminating') && set.has('NotTerminating')) || (set.has('BestEffort') && set.has('NotBestEffort'))) {
    errs.push(invalid(p, scopeList(names), 'conflicting scopes'));
  }
  return errs;
}

function validateResourceList(list: unknown, path: FieldPath): FieldError[] {
  if (!isObject(list)) return [];
  const errs: FieldError[] = [];
  for (const k of Object.keys(list).sort()) {
    const p = path.key(k);
    errs.push(...validateQuotaResourceName(k, p), ...validateQuantityValue(k, list[k], p));
  }
  return errs;
}

function validateResourceQuota(obj: KObject): FieldError[] {
  const spec: Json = isObject(obj['spec']) ? obj['spec'] : {};
  const hard = isObject(spec['hard']) ? Object.keys(spec['hard']) : [];
  const errs = validateResourceList(spec['hard'], root('spec', 'hard'));
  errs.push(...validateScopes(spec, hard, root('spec')), ...validateScopeSelector(spec, hard, root('spec')));
  const status: Json = isObject(obj['status']) ? obj['status'] : {};
  errs.push(...validateResourceList(status['hard'], root('status', 'hard')), ...validateResourceList(status['used'], root('status', 'used')));
  return errs;
}

function validateResourceQuotaUpdate(obj: KObject, old: KObject): FieldError[] {
  const errs = validateResourceQuota(obj);
  // Scopes are immutable (ValidateResourceQuotaUpdate).
  const scopes = (o: KObject) => JSON.stringify([...((o['spec']?.scopes as string[] | undefined) ?? [])].sort());
  if (scopes(obj) !== scopes(old)) errs.push(forbidden(root('spec', 'scopes'), 'field is immutable'));
  return errs;
}

function canonicalize(obj: KObject): void {
  const lists = [obj['spec']?.hard, obj['status']?.hard, obj['status']?.used];
  for (const list of lists) {
    if (!isObject(list)) continue;
    for (const [k, v] of Object.entries(list)) {
      const q = tryParseQuantity(typeof v === 'number' ? String(v) : typeof v === 'string' ? v : '');
      if (q) list[k] = q.canonical();
    }
  }
}

/** printResourceQuota: "resource: used/hard" of status.hard, sorted; limits.* in the Limit column. */
function usedOverHard(obj: KObject, limits: boolean): string {
  const hard: Json = isObject(obj['status']?.hard) ? obj['status'].hard : {};
  const used: Json = isObject(obj['status']?.used) ? obj['status'].used : {};
  const out: string[] = [];
  for (const k of Object.keys(hard).sort()) {
    const pieces = k.split('.');
    if ((pieces.length > 1 && pieces[0] === 'limits') !== limits) continue;
    out.push(`${k}: ${String(used[k] ?? '0')}/${String(hard[k])}`);
  }
  return out.join(', ');
}

const columns: TableColumn[] = [
  AGE_COLUMN,
  {
    name: 'Request',
    type: 'string',
    description: 'Request represents a minimum amount of cpu/memory that a container may consume.',
    priority: 0,
    cell: (obj) => usedOverHard(obj, false),
  },
  {
    name: 'Limit',
    type: 'string',
    description: 'Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node.',
    priority: 0,
    cell: (obj) => usedOverHard(obj, true),
  },
];

const statusStrategy: SubresourceStrategy = {
  prepareForUpdate(obj: KObject, old: KObject): void {
    obj['spec'] = structuredClone(old['spec']);
  },
  validateUpdate: (obj, old) => validateResourceQuotaUpdate(obj, old),
};

export const resourceQuotaKind: KindDecl = {
  group: '',
  version: 'v1',
  kind: 'ResourceQuota',
  listKind: 'ResourceQuotaList',
  resource: 'resourcequotas',
  singular: 'resourcequota',
  shortNames: ['quota'],
  namespaced: true,
  definition: 'io.k8s.api.core.v1.ResourceQuota',
  listDefinition: 'io.k8s.api.core.v1.ResourceQuotaList',
  definitions: RESOURCE_QUOTA_DEFINITIONS,
  tracksGeneration: false,
  columns,
  strategy: {
    prepareForCreate(obj: KObject): void {
      delete obj['status'];
    },
    prepareForUpdate(obj: KObject, old: KObject): void {
      if (old['status'] !== undefined) obj['status'] = structuredClone(old['status']);
      else delete obj['status'];
    },
    validate: (obj) => validateResourceQuota(obj),
    validateUpdate: (obj, old) => validateResourceQuotaUpdate(obj, old),
    canonicalize,
  },
  subresources: { status: statusStrategy },
};
