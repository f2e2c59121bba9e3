/**
 * flowcontrol.apiserver.k8s.io FlowSchema and PriorityLevelConfiguration, v1beta2 (stored) and v1beta1
 * (served from the same storage), as Kubernetes 1.23 serves them (pkg/registry/flowcontrol):
 *   - cluster-scoped, with a status subresource; the main resource keeps status, status keeps spec
 *   - defaults (v1beta2/defaults.go): matchingPrecedence 1000, assuredConcurrencyShares 30, queuing
 *     queues 64, handSize 8, queueLengthLimit 50
 *   - validation: pkg/apis/flowcontrol/validation (Kubernetes' wording)
 *   - tables: printFlowSchema and printPriorityLevelConfiguration (pkg/printers/internalversion)
 */
import type { KObject, KindDecl, StrategyContext, SubresourceStrategy, TableColumn } from '../../kind.js';
import { AGE_COLUMN, isObject } from '../configmap.js';
import {
  forbidden,
  invalid,
  nameIsDNSSubdomain,
  notSupported,
  required,
  root,
  validateNamespaceName,
  type FieldError,
  type FieldPath,
} from '../../../util/validation.js';
import { FLOWCONTROL_GROUP, flowcontrolDefinitions, flowcontrolNames } from './definitions.js';

export { FLOWCONTROL_GROUP } from './definitions.js';
export const STORAGE_VERSION = 'v1beta2';
export const FLOW_SCHEMA_MAX_MATCHING_PRECEDENCE = 10000;
const MAX_HASH_BITS = 60;
const MAX_QUEUES = 10_000_000;
const SUPPORTED_VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

type Json = Record<string, any>;
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const str = (v: unknown): string => (typeof v === 'string' ? v : '');

// ---- defaults -------------------------------------------------------------------------------------------

function defaultFlowSchema(obj: KObject): void {
  if (!isObject(obj.spec)) obj.spec = {};
  const spec = obj.spec as Json;
  if (!spec['matchingPrecedence']) spec['matchingPrecedence'] = 1000;
  if (!isObject(spec['priorityLevelConfiguration'])) spec['priorityLevelConfiguration'] = { name: '' };
}

function defaultPriorityLevel(obj: KObject): void {
  if (!isObject(obj.spec)) obj.spec = {};
  const limited = (obj.spec as Json)['limited'];
  if (!isObject(limited)) return;
  if (!limited['assuredConcurrencyShares']) limited['assuredConcurrencyShares'] = 30;
  if (!isObject(limited['limitResponse'])) limited['limitResponse'] = {};
  const queuing = (limited['limitResponse'] as Json)['queuing'];
  if (!isObject(queuing)) return;
  if (!queuing['handSize']) queuing['handSize'] = 8;
  if (!queuing['queues']) queuing['queues'] = 64;
  if (!queuing['queueLengthLimit']) queuing['queueLengthLimit'] = 50;
}

// ---- validation ---------------------------------------------------------------------------------------

/** A required list of which '*' must be the only member; `noun` completes Kubernetes' messages. */
function wildcardList(errs: FieldError[], path: FieldPath, list: unknown, missing: string, noun: string): string[] {
  const values = arr(list).map(str);
  if (values.length === 0) errs.push(required(path, missing));
  else if (values.includes('*') && values.length > 1) errs.push(invalid(path, values, `if '*' is present, must not specify other ${noun}`));
  return values;
}

function validateVerbs(errs: FieldError[], path: FieldPath, list: unknown): void {
  const verbs = wildcardList(errs, path, list, 'verbs must contain at least one value', 'verbs');
  if (verbs.length > 0 && !verbs.includes('*') && !verbs.every((v) => SUPPORTED_VERBS.includes(v))) errs.push(notSupported(path, verbs, SUPPORTED_VERBS));
}

function validateNonResourceURL(path: FieldPath, url: string): FieldError | undefined {
  if (url === '') return required(path, 'must not be empty');
  if (url === '/') return undefined;
  if (!url.startsWith('/')) return invalid(path, url, 'must start with slash');
  if (url.endsWith('/')) return invalid(path, url, 'must not end with slash');
  const segments = url.slice(1).split('/');
  for (let i = 0; i < segments.length; i++) {
    const seg = segments[i]!;
    if (seg === '') return invalid(path, url, 'must not have empty segment');
    if (seg.includes('*') && (seg !== '*' || i !== segments.length - 1)) return invalid(path, url, 'must only have at most one wildcard at the tail');
  }
  return undefined;
}

function validateSubject(errs: FieldError[], path: FieldPath, subject: Json): void {
  const kind = str(subject['kind']);
  const members: Record<string, string> = { User: 'user', Group: 'group', ServiceAccount: 'serviceAccount' };
  const field = members[kind];
  if (!field) {
    errs.push(notSupported(path.child('kind'), kind, ['Group', 'ServiceAccount', 'User']));
    return;
  }
  const member = subject[field] as unknown;
  if (!isObject(member)) {
    errs.push(required(path.child(field), `${field} is required when subject kind is '${kind}'`));
  } else if (kind === 'ServiceAccount') {
    const name = str(member['name']);
    if (name === '') errs.push(required(path.child(field, 'name'), ''));
    else if (name !== '*') for (const m of nameIsDNSSubdomain(name, false)) errs.push(invalid(path.child(field, 'name'), name, m));
    const ns = str(member['namespace']);
    if (ns === '') errs.push(required(path.child(field, 'namespace'), 'must specify namespace for service account'));
    else for (const m of validateNamespaceName(ns, false)) errs.push(invalid(path.child(field, 'namespace'), ns, m));
  } else if (str(member['name']) === '') {
    errs.push(required(path.child(field, 'name'), ''));
  }
  for (const [k, f] of Object.entries(members)) {
    if (k !== kind && subject[f] != null) errs.push(forbidden(path.child(f), `${f} is forbidden when subject kind is not '${k}'`));
  }
}

function validateResourceRule(errs: FieldError[], path: FieldPath, rule: Json): void {
  validateVerbs(errs, path.child('verbs'), rule['verbs']);
  wildcardList(errs, path.child('apiGroups'), rule['apiGroups'], 'resource rules must supply at least one api group', 'api groups');
  wildcardList(errs, path.child('resources'), rule['resources'], 'resource rules must supply at least one resource', 'resources');
  const namespaces = arr(rule['namespaces']).map(str);
  if (namespaces.length === 0 && rule['clusterScope'] !== true) {
    errs.push(required(path.child('namespaces'), 'resource rules that are not cluster scoped must supply at least one namespace'));
  } else if (namespaces.includes('*')) {
    if (namespaces.length > 1) errs.push(invalid(path.child('namespaces'), namespaces, "if '*' is present, must not specify other namespaces"));
  } else {
    namespaces.forEach((ns, i) => {
      for (const m of validateNamespaceName(ns, false)) errs.push(invalid(path.child('namespaces').index(i), ns, "each member of this list must be '*' or a DNS-1123 label; " + m));
    });
  }
}

function validateNonResourceRule(errs: FieldError[], path: FieldPath, rule: Json): void {
  validateVerbs(errs, path.child('verbs'), rule['verbs']);
  const urls = wildcardList(errs, path.child('nonResourceURLs'), rule['nonResourceURLs'], 'nonResourceURLs must contain at least one value', 'non-resource URLs');
  if (!urls.includes('*')) {
    urls.forEach((u, i) => {
      const e = validateNonResourceURL(path.child('nonResourceURLs').index(i), u);
      if (e) errs.push(e);
    });
  }
}

function validateFlowSchemaSpec(obj: KObject): FieldError[] {
  const spec = (isObject(obj.spec) ? obj.spec : {});
  const path = root('spec');
  const errs: FieldError[] = [];
  const mp = typeof spec['matchingPrecedence'] === 'number' ? (spec['matchingPrecedence']) : 0;
  if (mp <= 0) errs.push(invalid(path.child('matchingPrecedence'), mp, 'must be a positive value'));
  if (mp > FLOW_SCHEMA_MAX_MATCHING_PRECEDENCE) errs.push(invalid(path.child('matchingPrecedence'), mp, `must not be greater than ${FLOW_SCHEMA_MAX_MATCHING_PRECEDENCE}`));
  if (mp === 1 && obj.metadata?.name !== 'exempt') errs.push(invalid(path.child('matchingPrecedence'), mp, "only the schema named 'exempt' may have matchingPrecedence 1"));
  const dm = spec['distinguisherMethod'] as unknown;
  if (isObject(dm) && !['ByNamespace', 'ByUser'].includes(str(dm['type']))) {
    errs.push(notSupported(path.child('distinguisherMethod', 'type'), str(dm['type']), ['ByNamespace', 'ByUser']));
  }
  const plName = str((spec['priorityLevelConfiguration'] as Json | undefined)?.['name']);
  if (plName === '') errs.push(required(path.child('priorityLevelConfiguration', 'name'), 'must reference a priority level'));
  else for (const m of nameIsDNSSubdomain(plName, false)) errs.push(invalid(path.child('priorityLevelConfiguration', 'name'), plName, m));
  arr(spec['rules']).forEach((r, i) => {
    const rule = (isObject(r) ? r : {});
    const rp = path.child('rules').index(i);
    const subjects = arr(rule['subjects']);
    if (subjects.length === 0) errs.push(required(rp.child('subjects'), 'subjects must contain at least one value'));
    subjects.forEach((s, j) => validateSubject(errs, rp.child('subjects').index(j), (isObject(s) ? s : {})));
    const rr = arr(rule['resourceRules']);
    const nr = arr(rule['nonResourceRules']);
    if (rr.length === 0 && nr.length === 0) errs.push(required(rp, 'at least one of resourceRules and nonResourceRules has to be non-empty'));
    rr.forEach((x, j) => validateResourceRule(errs, rp.child('resourceRules').index(j), (isObject(x) ? x : {})));
    nr.forEach((x, j) => validateNonResourceRule(errs, rp.child('nonResourceRules').index(j), (isObject(x) ? x : {})));
  });
  return errs;
}

function validateQueuing(errs: FieldError[], path: FieldPath, q: Json): void {
  const num = (k: string) => (typeof q[k] === 'number' ? (q[k]) : 0);
  const [qll, queues, hand] = [num('queueLengthLimit'), num('queues'), num('handSize')];
  if (qll <= 0) errs.push(invalid(path.child('queueLengthLimit'), qll, 'must be positive'));
  if (queues <= 0) errs.push(invalid(path.child('queues'), queues, 'must be positive'));
  else if (queues > MAX_QUEUES) errs.push(invalid(path.child('queues'), queues, `must not be greater than ${MAX_QUEUES}`));
  if (hand <= 0) errs.push(invalid(path.child('handSize'), hand, 'must be positive'));
  else if (hand > queues) errs.push(invalid(path.child('handSize'), hand, `should not be greater than queues (${queues})`));
  else if (Math.ceil(hand * Math.log2(queues)) > MAX_HASH_BITS) {
    errs.push(invalid(path.child('handSize'), hand, `required entropy bits of deckSize ${queues} and handSize ${hand} should not be greater than ${MAX_HASH_BITS}`));
  }
}

function validatePriorityLevelSpec(obj: KObject): FieldError[] {
  const spec = (isObject(obj.spec) ? obj.spec : {});
  const path = root('spec');
  const errs: FieldError[] = [];
  const type = str(spec['type']);
  if ((obj.metadata?.name === 'exempt') !== (type === 'Exempt')) errs.push(invalid(path.child('type'), type, "type must be 'Exempt' if and only if name is 'exempt'"));
  const limited = spec['limited'] as unknown;
  if (type === 'Exempt') {
    if (limited != null) errs.push(forbidden(path.child('limited'), 'must be nil if the type is not Limited'));
  } else if (type === 'Limited') {
    if (!isObject(limited)) {
      errs.push(required(path.child('limited'), 'must not be empty when type is Limited'));
    } else {
      const lp = path.child('limited');
      const acs = typeof limited['assuredConcurrencyShares'] === 'number' ? (limited['assuredConcurrencyShares']) : 0;
      if (acs <= 0) errs.push(invalid(lp.child('assuredConcurrencyShares'), acs, 'must be positive'));
      const lr = (isObject(limited['limitResponse']) ? limited['limitResponse'] : {});
      const rp = lp.child('limitResponse');
      const lrType = str(lr['type']);
      if (lrType === 'Reject') {
        if (lr['queuing'] != null) errs.push(forbidden(rp.child('queuing'), 'must be nil if limited.limitResponse.type is not Limited'));
      } else if (lrType === 'Queue') {
        if (!isObject(lr['queuing'])) errs.push(required(rp.child('queuing'), 'must not be empty if limited.limitResponse.type is Limited'));
        else validateQueuing(errs, rp.child('queuing'), lr['queuing']);
      } else {
        errs.push(notSupported(rp.child('type'), lrType, ['Queue', 'Reject']));
      }
    }
  } else {
    errs.push(notSupported(path.child('type'), type, ['Exempt', 'Limited']));
  }
  return errs;
}

function validateConditions(obj: KObject): FieldError[] {
  const errs: FieldError[] = [];
  arr((obj.status as Json | undefined)?.['conditions']).forEach((c, i) => {
    if (!isObject(c) || str(c['type']) === '') errs.push(required(root('status', 'conditions').index(i).child('type'), 'must not be empty'));
  });
  return errs;
}

// ---- strategies and tables ------------------------------------------------------------------------------

const keepStatus = (obj: KObject, old: KObject) => {
  if (old.status !== undefined) obj.status = structuredClone(old.status);
  else delete obj.status;
};

const statusStrategy: SubresourceStrategy = {
  prepareForUpdate(obj: KObject, old: KObject): void {
    obj.spec = structuredClone(old.spec);
    if (old.metadata?.annotations) obj.metadata = { ...obj.metadata, annotations: structuredClone(old.metadata.annotations) };
  },
  validateUpdate: (obj) => validateConditions(obj),
};

const spec = (obj: KObject): Json => (isObject(obj.spec) ? (obj.spec) : {});

const flowSchemaColumns: TableColumn[] = [
  {
    name: 'PriorityLevel',
    type: 'string',
    description: '`name` is the name of the priority level configuration being referenced Required.',
    priority: 0,
    cell: (o) => str((spec(o)['priorityLevelConfiguration'] as Json | undefined)?.['name']),
  },
  {
    name: 'MatchingPrecedence',
    type: 'string',
    description: '`matchingPrecedence` is used to choose among the FlowSchemas that match a given request.',
    priority: 0,
    cell: (o) => (spec(o)['matchingPrecedence'] as number | undefined) ?? 0,
  },
  {
    name: 'DistinguisherMethod',
    type: 'string',
    description: '`distinguisherMethod` defines how to compute the flow distinguisher for requests that match this schema.',
    priority: 0,
    cell: (o) => (isObject(spec(o)['distinguisherMethod']) ? str((spec(o)['distinguisherMethod'] as Json)['type']) : '<none>'),
  },
  AGE_COLUMN,
  {
    name: 'MissingPL',
    type: 'string',
    description: 'references a broken or non-existent PriorityLevelConfiguration',
    priority: 0,
    cell: (o) => {
      const c = arr((o.status as Json | undefined)?.['conditions']).find((x) => isObject(x) && x['type'] === 'Dangling') as Json | undefined;
      return c ? str(c['status']) : '?';
    },
  },
];

const limitedOf = (o: KObject): Json | undefined => (isObject(spec(o)['limited']) ? (spec(o)['limited'] as Json) : undefined);
const queuingOf = (o: KObject): Json | undefined => {
  const lr = limitedOf(o)?.['limitResponse'] as unknown;
  return isObject(lr) && isObject(lr['queuing']) ? (lr['queuing']) : undefined;
};
const queuingCell = (name: string, field: string): TableColumn => ({
  name,
  type: 'string',
  description: `\`${field}\` of the priority level's queuing configuration.`,
  priority: 0,
  cell: (o) => queuingOf(o)?.[field] ?? '<none>',
});

const priorityLevelColumns: TableColumn[] = [
  { name: 'Type', type: 'string', description: '`type` indicates whether this priority level is subject to limitation on request execution.', priority: 0, cell: (o) => str(spec(o)['type']) },
  {
    name: 'AssuredConcurrencyShares',
    type: 'string',
    description: '`assuredConcurrencyShares` (ACS) configures the execution limit.',
    priority: 0,
    cell: (o) => limitedOf(o)?.['assuredConcurrencyShares'] ?? '<none>',
  },
  queuingCell('Queues', 'queues'),
  queuingCell('HandSize', 'handSize'),
  queuingCell('QueueLengthLimit', 'queueLengthLimit'),
  AGE_COLUMN,
];

function kindDecl(version: string, kind: 'FlowSchema' | 'PriorityLevelConfiguration'): KindDecl {
  const N = flowcontrolNames(version);
  const isFS = kind === 'FlowSchema';
  const resource = isFS ? 'flowschemas' : 'prioritylevelconfigurations';
  const validate = isFS ? validateFlowSchemaSpec : validatePriorityLevelSpec;
  const decl: KindDecl = {
    group: FLOWCONTROL_GROUP,
    version,
    kind,
    listKind: `${kind}List`,
    resource,
    singular: kind.toLowerCase(),
    namespaced: false,
    nameValidator: nameIsDNSSubdomain,
    definition: isFS ? N.FlowSchema : N.PriorityLevelConfiguration,
    listDefinition: isFS ? N.FlowSchemaList : N.PriorityLevelConfigurationList,
    definitions: isFS ? flowcontrolDefinitions(version) : {},
    columns: isFS ? flowSchemaColumns : priorityLevelColumns,
    strategy: {
      prepareForCreate(obj: KObject): void {
        delete obj.status;
      },
      prepareForUpdate: keepStatus,
      default: isFS ? defaultFlowSchema : defaultPriorityLevel,
      validate: (obj: KObject, _ctx: StrategyContext) => validate(obj),
      validateUpdate: (obj: KObject) => validate(obj),
    },
    subresources: { status: statusStrategy },
  };
  if (version !== STORAGE_VERSION) {
    const setVersion = (v: string) => (o: KObject): KObject => ({ ...o, apiVersion: `${FLOWCONTROL_GROUP}/${v}` });
    decl.storedAs = { group: FLOWCONTROL_GROUP, resource, toStored: setVersion(STORAGE_VERSION), fromStored: setVersion(version) };
  }
  return decl;
}

export const flowSchemaKind = kindDecl('v1beta2', 'FlowSchema');
export const priorityLevelConfigurationKind = kindDecl('v1beta2', 'PriorityLevelConfiguration');

/** v1beta2 first (the preferred and storage version), then v1beta1. */
export const FLOWCONTROL_KINDS: KindDecl[] = [
  flowSchemaKind,
  priorityLevelConfigurationKind,
  kindDecl('v1beta1', 'FlowSchema'),
  kindDecl('v1beta1', 'PriorityLevelConfiguration'),
];
