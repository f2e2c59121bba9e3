/**
 * MutatingWebhookConfiguration and ValidatingWebhookConfiguration (admissionregistration.k8s.io/v1), as
 * Kubernetes 1.23 serves them (pkg/registry/admissionregistration; 1.22 stopped serving v1beta1):
 *   - cluster-scoped, category api-extensions; metadata.generation bumps when the webhooks change
 *   - defaults: failurePolicy Fail, matchPolicy Equivalent, timeoutSeconds 10, empty namespace and object
 *     selectors, rule scope '*', service port 443, reinvocationPolicy Never
 *   - validation as pkg/apis/admissionregistration/validation with its wording: unique webhook names,
 *     sideEffects None or NoneOnDryRun and a known admissionReviewVersion, except that an update keeps what the
 *     old object already had (objects written by older servers with v1beta1's Some or Unknown)
 *   - table: NAME WEBHOOKS AGE
 */
import type { KObject, KindDecl, StrategyContext, TableColumn } from '../../kind.js';
import { AGE_COLUMN } from '../configmap.js';
import { validateLabelSelector } from '../pvc.js';
import {
  duplicate,
  invalid,
  isDNS1035Label,
  isDNS1123Subdomain,
  notSupported,
  required,
  root,
  type FieldError,
  type FieldPath,
} from '../../../util/validation.js';
import { ADMISSION_REGISTRATION_DEFINITIONS } from './definitions.js';

export const ADMISSION_REGISTRATION_GROUP = 'admissionregistration.k8s.io';
export const ACCEPTED_ADMISSION_REVIEW_VERSIONS = ['v1', 'v1beta1'];
const OPERATIONS = ['*', 'CONNECT', 'CREATE', 'DELETE', 'UPDATE'];
const SCOPES = ['*', 'Cluster', 'Namespaced'];
const FAILURE_POLICIES = ['Fail', 'Ignore'];
const MATCH_POLICIES = ['Equivalent', 'Exact'];
const REINVOCATION_POLICIES = ['IfNeeded', 'Never'];
const NO_SIDE_EFFECTS = ['None', 'NoneOnDryRun'];
const ALL_SIDE_EFFECTS = ['None', 'NoneOnDryRun', 'Some', 'Unknown'];

type Json = Record<string, any>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const strings = (v: unknown): string[] => list(v).map((x) => (typeof x === 'string' ? x : ''));

function defaultWebhooks(obj: KObject, mutating: boolean): void {
  for (const hook of list(obj['webhooks'])) {
    if (!isObject(hook)) continue;
    hook['failurePolicy'] ??= 'Fail';
    hook['matchPolicy'] ??= 'Equivalent';
    hook['namespaceSelector'] ??= {};
    hook['objectSelector'] ??= {};
    hook['timeoutSeconds'] ??= 10;
    if (mutating) hook['reinvocationPolicy'] ??= 'Never';
    for (const rule of list(hook['rules'])) if (isObject(rule)) rule['scope'] ??= '*';
    const service = isObject(hook['clientConfig']) ? hook['clientConfig']['service'] : undefined;
    if (isObject(service)) service['port'] ??= 443;
  }
}

interface ValidationOptions {
  uniqueNames: boolean;
  noSideEffects: boolean;
  recognizedReviewVersion: boolean;
}

/** Kubernetes' validationOptions: strict, unless the old object already breaks the rule. */
function optionsFor(old: KObject | undefined): ValidationOptions {
  const hooks = list(old?.['webhooks']).filter(isObject);
  const names = hooks.map((h) => h['name']);
  return {
    uniqueNames: new Set(names).size === names.length,
    noSideEffects: hooks.every((h) => NO_SIDE_EFFECTS.includes(h['sideEffects'])),
    recognizedReviewVersion: hooks.every((h) => strings(h['admissionReviewVersions']).some((v) => ACCEPTED_ADMISSION_REVIEW_VERSIONS.includes(v))),
  };
}

/** utilvalidation.IsFullyQualifiedName */
function validateFullyQualifiedName(name: string, path: FieldPath): FieldError[] {
  if (name === '') return [required(path, '')];
  const errs = isDNS1123Subdomain(name);
  if (errs.length > 0) return [invalid(path, name, errs.join(','))];
  if (name.split('.').length < 3) return [invalid(path, name, 'should be a domain with at least three segments separated by dots')];
  return [];
}

const hasWildcard = (v: string[]) => v.includes('*');

function validateResources(resources: string[], path: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  if (resources.length === 0) errs.push(required(path, ''));
  const withWildcardSub = new Set<string>();
  const subWithWildcardRes = new Set<string>();
  let doubleWildcard = false;
  let singleWildcard = false;
  let withoutSub = false;
  resources.forEach((resSub, i) => {
    if (resSub === '') {
      errs.push(required(path.index(i), ''));
      return;
    }
    if (resSub === '*/*') doubleWildcard = true;
    if (resSub === '*') singleWildcard = true;
    const slash = resSub.indexOf('/');
    if (slash < 0) {
      withoutSub = resSub !== '*';
      return;
    }
    const res = resSub.slice(0, slash);
    const sub = resSub.slice(slash + 1);
    if (withWildcardSub.has(res)) errs.push(invalid(path.index(i), resSub, `if '${res}/*' is present, must not specify ${resSub}`));
    if (subWithWildcardRes.has(sub)) errs.push(invalid(path.index(i), resSub, `if '*/${sub}' is present, must not specify ${resSub}`));
    if (sub === '*') withWildcardSub.add(res);
    if (res === '*') subWithWildcardRes.add(sub);
  });
  if (resources.length > 1 && doubleWildcard) errs.push(invalid(path, resources, "if '*/*' is present, must not specify other resources"));
  if (singleWildcard && withoutSub) errs.push(invalid(path, resources, "if '*' is present, must not specify other resources without subresources"));
  return errs;
}

function validateRuleWithOperations(rule: Json, path: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  const ops = strings(rule['operations']);
  if (ops.length === 0) errs.push(required(path.child('operations'), ''));
  if (ops.length > 1 && hasWildcard(ops)) errs.push(invalid(path.child('operations'), ops, "if '*' is present, must not specify other operations"));
  ops.forEach((op, i) => {
    if (!OPERATIONS.includes(op)) errs.push(notSupported(path.child('operations').index(i), op, OPERATIONS));
  });
  const groups = strings(rule['apiGroups']);
  if (groups.length === 0) errs.push(required(path.child('apiGroups'), ''));
  if (groups.length > 1 && hasWildcard(groups)) errs.push(invalid(path.child('apiGroups'), groups, "if '*' is present, must not specify other API groups"));
  const versions = strings(rule['apiVersions']);
  if (versions.length === 0) errs.push(required(path.child('apiVersions'), ''));
  if (versions.length > 1 && hasWildcard(versions)) errs.push(invalid(path.child('apiVersions'), versions, "if '*' is present, must not specify other API versions"));
  versions.forEach((v, i) => {
    if (v === '') errs.push(required(path.child('apiVersions').index(i), ''));
  });
  errs.push(...validateResources(strings(rule['resources']), path.child('resources')));
  const scope = rule['scope'];
  if (scope !== undefined && scope !== null && !SCOPES.includes(scope)) errs.push(notSupported(path.child('scope'), scope, SCOPES));
  return errs;
}

/** webhook.ValidateWebhookURL with forceHttps. */
function validateWebhookURL(raw: string, path: FieldPath): FieldError[] {
  let u: URL;
  try {
    u = new URL(raw);
  } catch (err) {
    return [invalid(path, raw, `url must be a valid URL: ${(err as Error).message}`)];
  }
  const errs: FieldError[] = [];
  const scheme = u.protocol.replace(/:$/, '');
  if (scheme !== 'https') errs.push(invalid(path, scheme, "'https' is the only allowed URL scheme"));
  if (u.host === '') errs.push(invalid(path, u.host, 'host must be specified'));
  if (u.username !== '' || u.password !== '') errs.push(invalid(path, u.password ? `${u.username}:xxxxx` : u.username, 'user information is not permitted in the URL'));
  if (raw.includes('#')) errs.push(invalid(path, u.hash.replace(/^#/, ''), 'fragments are not permitted in the URL'));
  if (raw.includes('?')) errs.push(invalid(path, u.search.replace(/^\?/, ''), 'query parameters are not permitted in the URL'));
  return errs;
}

/** webhook.ValidateWebhookService */
function validateWebhookService(service: Json, path: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  if (!service['name']) errs.push(required(path.child('name'), 'service name is required'));
  if (!service['namespace']) errs.push(required(path.child('namespace'), 'service namespace is required'));
  const port = service['port'];
  if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535) {
    errs.push(invalid(path.child('port'), port, 'port is not valid: must be between 1 and 65535, inclusive'));
  }
  const p = service['path'];
  if (typeof p !== 'string') return errs;
  if (!p.startsWith('/')) {
    errs.push(invalid(path.child('path'), p, "must start with a '/'"));
    return errs;
  }
  if (p === '/') return errs;
  const steps = p.slice(1).split('/');
  steps.forEach((step, i) => {
    if (step === '') {
      errs.push(invalid(path.child('path'), p, `segment[${i}] may not be empty`));
      return;
    }
    const bad = isDNS1123Subdomain(step);
    if (bad.length > 0) errs.push(invalid(path.child('path'), p, `segment[${i}]: ${bad.join(', ')}`));
  });
  return errs;
}

function validateClientConfig(cc: unknown, path: FieldPath): FieldError[] {
  const c = isObject(cc) ? cc : {};
  const hasURL = typeof c['url'] === 'string';
  const hasService = isObject(c['service']);
  if (hasURL === hasService) return [required(path, 'exactly one of url or service is required')];
  return hasURL ? validateWebhookURL(c['url'], path.child('url')) : validateWebhookService(c['service'], path.child('service'));
}

function validateReviewVersions(versions: string[], requireRecognized: boolean, path: FieldPath): FieldError[] {
  if (versions.length === 0) return [required(path, `must specify one of ${ACCEPTED_ADMISSION_REVIEW_VERSIONS.join(', ')}`)];
  const errs: FieldError[] = [];
  const seen = new Set<string>();
  versions.forEach((v, i) => {
    if (seen.has(v)) {
      errs.push(invalid(path.index(i), v, 'duplicate version'));
      return;
    }
    seen.add(v);
    for (const e of isDNS1035Label(v)) errs.push(invalid(path.index(i), v, e));
  });
  if (requireRecognized && !versions.some((v) => ACCEPTED_ADMISSION_REVIEW_VERSIONS.includes(v))) {
    errs.push(invalid(path, versions, `must include at least one of ${ACCEPTED_ADMISSION_REVIEW_VERSIONS.join(', ')}`));
  }
  return errs;
}

function validateWebhook(hook: Json, mutating: boolean, opts: ValidationOptions, path: FieldPath): FieldError[] {
  const errs = validateFullyQualifiedName(typeof hook['name'] === 'string' ? hook['name'] : '', path.child('name'));
  list(hook['rules']).forEach((r, i) => errs.push(...validateRuleWithOperations(isObject(r) ? r : {}, path.child('rules').index(i))));
  const fp = hook['failurePolicy'];
  if (fp !== undefined && fp !== null && !FAILURE_POLICIES.includes(fp)) errs.push(notSupported(path.child('failurePolicy'), fp, FAILURE_POLICIES));
  const mp = hook['matchPolicy'];
  if (mp !== undefined && mp !== null && !MATCH_POLICIES.includes(mp)) errs.push(notSupported(path.child('matchPolicy'), mp, MATCH_POLICIES));
  const allowed = opts.noSideEffects ? NO_SIDE_EFFECTS : ALL_SIDE_EFFECTS;
  const se = hook['sideEffects'];
  if (se === undefined || se === null) errs.push(required(path.child('sideEffects'), `must specify one of ${allowed.join(', ')}`));
  else if (!allowed.includes(se)) errs.push(notSupported(path.child('sideEffects'), se, allowed));
  const timeout = hook['timeoutSeconds'];
  if (typeof timeout === 'number' && (timeout > 30 || timeout < 1)) {
    errs.push(invalid(path.child('timeoutSeconds'), timeout, 'the timeout value must be between 1 and 30 seconds'));
  }
  if (isObject(hook['namespaceSelector'])) errs.push(...validateLabelSelector(hook['namespaceSelector'], path.child('namespaceSelector')));
  if (isObject(hook['objectSelector'])) errs.push(...validateLabelSelector(hook['objectSelector'], path.child('objectSelector')));
  if (mutating) {
    const rp = hook['reinvocationPolicy'];
    if (rp !== undefined && rp !== null && !REINVOCATION_POLICIES.includes(rp)) errs.push(notSupported(path.child('reinvocationPolicy'), rp, REINVOCATION_POLICIES));
  }
  errs.push(...validateClientConfig(hook['clientConfig'], path.child('clientConfig')));
  return errs;
}

function validateConfiguration(obj: KObject, mutating: boolean, opts: ValidationOptions): FieldError[] {
  const errs: FieldError[] = [];
  const names = new Set<string>();
  list(obj['webhooks']).forEach((h, i) => {
    const hook = isObject(h) ? h : {};
    const path = root('webhooks').index(i);
    errs.push(...validateWebhook(hook, mutating, opts, path));
    errs.push(...validateReviewVersions(strings(hook['admissionReviewVersions']), opts.recognizedReviewVersion, path.child('admissionReviewVersions')));
    const name = typeof hook['name'] === 'string' ? hook['name'] : '';
    if (opts.uniqueNames && name !== '') {
      if (names.has(name)) errs.push(duplicate(path.child('name'), name));
      else names.add(name);
    }
  });
  return errs;
}

const columns: TableColumn[] = [
  {
    name: 'Webhooks',
    type: 'integer',
    description: 'Webhooks indicates the number of webhooks in the configuration.',
    priority: 0,
    cell: (obj) => list(obj['webhooks']).length,
  },
  AGE_COLUMN,
];

function kindDecl(mutating: boolean): KindDecl {
  const kind = mutating ? 'MutatingWebhookConfiguration' : 'ValidatingWebhookConfiguration';
  const def = `io.k8s.api.admissionregistration.v1.${kind}`;
  return {
    group: ADMISSION_REGISTRATION_GROUP,
    version: 'v1',
    kind,
    listKind: `${kind}List`,
    resource: `${kind.toLowerCase()}s`,
    singular: kind.toLowerCase(),
    categories: ['api-extensions'],
    namespaced: false,
    definition: def,
    listDefinition: `${def}List`,
    // The definitions of both kinds come with the first.
    definitions: mutating ? ADMISSION_REGISTRATION_DEFINITIONS : {},
    tracksGeneration: true,
    columns,
    strategy: {
      prepareForUpdate(obj: KObject, old: KObject): void {
        if (JSON.stringify(obj['webhooks'] ?? null) !== JSON.stringify(old['webhooks'] ?? null)) {
          obj.metadata!.generation = (old.metadata?.generation ?? 0) + 1;
        }
      },
      default: (obj: KObject, _ctx: StrategyContext) => defaultWebhooks(obj, mutating),
      validate: (obj) => validateConfiguration(obj, mutating, optionsFor(undefined)),
      validateUpdate: (obj, old) => validateConfiguration(obj, mutating, optionsFor(old)),
    },
  };
}

export const mutatingWebhookConfigurationKind = kindDecl(true);
export const validatingWebhookConfigurationKind = kindDecl(false);

export const ADMISSION_REGISTRATION_KINDS: KindDecl[] = [mutatingWebhookConfigurationKind, validatingWebhookConfigurationKind];
