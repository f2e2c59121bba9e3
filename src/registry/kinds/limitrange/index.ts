/**
 * LimitRange (core/v1, namespaced), as Kubernetes 1.23 serves it (pkg/registry/core/limitrange):
 *   - short name limits; defaults (SetDefaults_LimitRangeItem): for type Container, default falls back to
 *     max and defaultRequest to default, then to min
 *   - validation: ValidateLimitRange (pkg/apis/core/validation), with Kubernetes' wording: one item per
 *     type, no default/defaultRequest for type Pod, storage min or max for PersistentVolumeClaim, and the
 *     order min <= defaultRequest <= default <= max, ratio >= 1 and <= max/min
 *   - quantities are stored in canonical form; table: Kubernetes' default (NAME, CREATED AT)
 */
import type { KObject, KindDecl } from '../../kind.js';
import { isObject } from '../configmap.js';
import { tryParseQuantity, type Quantity } from '../../../util/quantity.js';
import { duplicate, forbidden, invalid, isQualifiedName, nameIsDNSSubdomain, required, root, type FieldError } from '../../../util/validation.js';
import { LIMIT_RANGE_DEFINITIONS } from './definitions.js';

type Json = Record<string, any>;
const LIMIT_FIELDS = ['max', 'min', 'default', 'defaultRequest', 'maxLimitRequestRatio'] as const;
/** Resources whose limit may exceed their request (helper.IsOvercommitAllowed): native ones but hugepages. */
const overcommitAllowed = (name: string): boolean => (!name.includes('/') || name.includes('kubernetes.io/')) && !name.startsWith('hugepages-');

export const limitItems = (obj: KObject): Json[] =>
  isObject(obj.spec) && Array.isArray(obj.spec['limits']) ? (obj.spec['limits'] as unknown[]).filter(isObject) : [];

/** SetDefaults_LimitRangeItem. */
function defaultLimitRange(obj: KObject): void {
  for (const item of limitItems(obj)) {
    if (item['type'] !== 'Container') continue;
    const dflt: Json = isObject(item['default']) ? item['default'] : {};
    const request: Json = isObject(item['defaultRequest']) ? item['defaultRequest'] : {};
    for (const [k, v] of Object.entries(isObject(item['max']) ? item['max'] : {})) if (!(k in dflt)) dflt[k] = v;
    for (const [k, v] of Object.entries(dflt)) if (!(k in request)) request[k] = v;
    for (const [k, v] of Object.entries(isObject(item['min']) ? item['min'] : {})) if (!(k in request)) request[k] = v;
    if (Object.keys(dflt).length > 0) item['default'] = dflt;
    if (Object.keys(request).length > 0) item['defaultRequest'] = request;
  }
}

function quantities(list: unknown): Map<string, Quantity> {
  const out = new Map<string, Quantity>();
  if (!isObject(list)) return out;
  for (const [k, v] of Object.entries(list)) {
    const q = typeof v === 'string' || typeof v === 'number' ? tryParseQuantity(String(v)) : null;
    if (q) out.set(k, q);
  }
  return out;
}

/** Comparisons of one resource of one item (the loop over `keys` of ValidateLimitRange). */
function validateResource(errs: FieldError[], path: ReturnType<typeof root>, k: string, q: Record<(typeof LIMIT_FIELDS)[number], Quantity | undefined>): void {
  const { min, max, default: dflt, defaultRequest: req, maxLimitRequestRatio: ratio } = q;
  const s = (x: Quantity) => x.toString();
  if (min && max && min.cmp(max) > 0) errs.push(invalid(path.child('min').key(k), s(min), `min value ${s(min)} is greater than max value ${s(max)}`));
  if (req && min && min.cmp(req) > 0) errs.push(invalid(path.child('defaultRequest').key(k), s(req), `min value ${s(min)} is greater than default request value ${s(req)}`));
  if (req && max && req.cmp(max) > 0) errs.push(invalid(path.child('defaultRequest').key(k), s(req), `default request value ${s(req)} is greater than max value ${s(max)}`));
  if (req && dflt && req.cmp(dflt) > 0) {
    errs.push(invalid(path.child('defaultRequest').key(k), s(req), `default request value ${s(req)} is greater than default limit value ${s(dflt)}`));
  }
  if (dflt && min && min.cmp(dflt) > 0) errs.push(invalid(path.child('default').key(k), s(min), `min value ${s(min)} is greater than default value ${s(dflt)}`));
  if (dflt && max && dflt.cmp(max) > 0) errs.push(invalid(path.child('default').key(k), s(max), `default value ${s(dflt)} is greater than max value ${s(max)}`));
  if (ratio && ratio.cmpInt(1) < 0) errs.push(invalid(path.child('maxLimitRequestRatio').key(k), s(ratio), `ratio ${s(ratio)} is less than 1`));
  if (ratio && min && max && !min.isZero()) {
    const limit = Number(max.milliValue()) / Number(min.milliValue());
    if (Number(ratio.milliValue()) / 1000 > limit) {
      errs.push(invalid(path.child('maxLimitRequestRatio').key(k), s(ratio), `ratio ${s(ratio)} is greater than max/min = ${limit.toFixed(6)}`));
    }
  }
  if (!overcommitAllowed(k) && dflt && req && dflt.cmp(req) !== 0) {
    errs.push(invalid(path.child('default').key(k), s(dflt), `default value ${s(dflt)} must equal to defaultRequest value ${s(req)} in ${k}`));
  }
}

export function validateLimitRange(obj: KObject): FieldError[] {
  const errs: FieldError[] = [];
  const types = new Set<string>();
  limitItems(obj).forEach((item, i) => {
    const path = root('spec', 'limits').index(i);
    const type = typeof item['type'] === 'string' ? item['type'] : '';
    for (const m of isQualifiedName(type)) errs.push(invalid(path.child('type'), type, m));
    if (types.has(type)) errs.push(duplicate(path.child('type'), type));
    types.add(type);
    if (type === 'Pod') {
      if (isObject(item['default']) && Object.keys(item['default']).length > 0) errs.push(forbidden(path.child('default'), "may not be specified when `type` is 'Pod'"));
      if (isObject(item['defaultRequest']) && Object.keys(item['defaultRequest']).length > 0) {
        errs.push(forbidden(path.child('defaultRequest'), "may not be specified when `type` is 'Pod'"));
      }
    }
    if (type === 'PersistentVolumeClaim' && !quantities(item['min']).has('storage') && !quantities(item['max']).has('storage')) {
      errs.push(required(path.child('limits'), 'either minimum or maximum storage value is required, but neither was provided'));
    }
    const lists = Object.fromEntries(LIMIT_FIELDS.map((f) => [f, type === 'Pod' && (f === 'default' || f === 'defaultRequest') ? new Map() : quantities(item[f])])) as Record<
      (typeof LIMIT_FIELDS)[number],
      Map<string, Quantity>
    >;
    const keys = new Set(LIMIT_FIELDS.flatMap((f) => [...lists[f].keys()]));
    for (const k of [...keys].sort()) {
      validateResource(errs, path, k, {
        max: lists.max.get(k),
        min: lists.min.get(k),
        default: lists.default.get(k),
        defaultRequest: lists.defaultRequest.get(k),
        maxLimitRequestRatio: lists.maxLimitRequestRatio.get(k),
      });
    }
  });
  return errs;
}

function canonicalizeLimitRange(obj: KObject): void {
  for (const item of limitItems(obj)) {
    for (const f of LIMIT_FIELDS) {
      const list: unknown = item[f];
      if (!isObject(list)) continue;
      for (const [k, v] of Object.entries(list)) {
        const q = typeof v === 'string' || typeof v === 'number' ? tryParseQuantity(String(v)) : null;
        if (q) list[k] = q.canonical();
      }
    }
  }
}

export const limitRangeKind: KindDecl = {
  group: '',
  version: 'v1',
  kind: 'LimitRange',
  listKind: 'LimitRangeList',
  resource: 'limitranges',
  singular: 'limitrange',
  shortNames: ['limits'],
  namespaced: true,
  nameValidator: nameIsDNSSubdomain,
  definition: 'io.k8s.api.core.v1.LimitRange',
  listDefinition: 'io.k8s.api.core.v1.LimitRangeList',
  definitions: LIMIT_RANGE_DEFINITIONS,
  tracksGeneration: false,
  strategy: {
    default: (obj) => defaultLimitRange(obj),
    validate: (obj) => validateLimitRange(obj),
    validateUpdate: (obj) => validateLimitRange(obj),
    canonicalize: canonicalizeLimitRange,
  },
};
