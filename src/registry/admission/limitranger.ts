/**
 * LimitRanger admission, as Kubernetes 1.23's (plugin/pkg/admission/limitranger), for each LimitRange of
 * the object's namespace that has limits:
 *   - mutate, pod creates: containers and init containers get the Container items' default limits and
 *     default requests they lack; the pod is annotated kubernetes.io/limit-ranger with what was set
 *   - validate, pod creates and PVC creates and updates: the Container, Pod and PersistentVolumeClaim
 *     items' min, max and maxLimitRequestRatio, refused (403) with Kubernetes' messages
 * Pod updates, subresources and objects being deleted are left alone. The LimitRanges are read from storage.
 * Our store runs admission after the pod strategy's PrepareForCreate (Kubernetes runs it before), so the
 * pod's status.qosClass is computed again once defaults are set.
 */
import { lister } from './informer.js';
import { apiErrors } from '../errors.js';
import type { KObject } from '../kind.js';
import type { Admission, AdmissionAttributes, ResourceStore } from '../store.js';
import { limitItems } from '../kinds/limitrange/index.js';
import { podQOSClass } from '../kinds/pod/index.js';
import { tryParseQuantity, type Quantity } from '../../util/quantity.js';

type Json = Record<string, any>;
type Resources = Map<string, Quantity>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const objects = (v: unknown): Json[] => (Array.isArray(v) ? v.filter(isObject) : []);
export const LIMIT_RANGER_ANNOTATION = 'kubernetes.io/limit-ranger';

function resources(list: unknown): Resources {
  const out: Resources = new Map();
  if (!isObject(list)) return out;
  for (const [k, v] of Object.entries(list)) {
    const q = typeof v === 'string' || typeof v === 'number' ? tryParseQuantity(String(v)) : null;
    if (q) out.set(k, q);
  }
  return out;
}

function applies(a: AdmissionAttributes): 'pod' | 'pvc' | undefined {
  if (a.decl.group !== '' || a.subresource !== '' || !a.object || a.oldObject?.metadata?.deletionTimestamp) return undefined;
  if (a.decl.resource === 'pods' && a.operation === 'CREATE') return 'pod';
  if (a.decl.resource === 'persistentvolumeclaims' && (a.operation === 'CREATE' || a.operation === 'UPDATE')) return 'pvc';
  return undefined;
}

/** mergeContainerResources: sets what the container lacks; returns the annotation's parts. */
function mergeContainer(c: Json, limits: Json, requests: Json, prefix: string): string[] {
  const res: Json = isObject(c['resources']) ? c['resources'] : (c['resources'] = {});
  const set = (field: 'limits' | 'requests', defaults: Json): string[] => {
    const have: Json = isObject(res[field]) ? res[field] : {};
    const added = Object.keys(defaults).filter((k) => !(k in have));
    for (const k of added) have[k] = defaults[k];
    if (Object.keys(have).length > 0) res[field] = have;
    return added.sort();
  };
  const setLimits = set('limits', limits);
  const setRequests = set('requests', requests);
  const notes: string[] = [];
  if (setRequests.length > 0) notes.push(`${setRequests.join(', ')} request for ${prefix} ${String(c['name'] ?? '')}`);
  if (setLimits.length > 0) notes.push(`${setLimits.join(', ')} limit for ${prefix} ${String(c['name'] ?? '')}`);
  return notes;
}

function defaultPod(pod: KObject, range: KObject): void {
  const limits: Json = {};
  const requests: Json = {};
  for (const item of limitItems(range)) {
    if (item['type'] !== 'Container') continue;
    if (isObject(item['default'])) Object.assign(limits, item['default']);
    if (isObject(item['defaultRequest'])) Object.assign(requests, item['defaultRequest']);
  }
  const spec: Json = isObject(pod['spec']) ? pod['spec'] : {};
  const notes = [
    ...objects(spec['containers']).flatMap((c) => mergeContainer(c, limits, requests, 'container')),
    ...objects(spec['initContainers']).flatMap((c) => mergeContainer(c, limits, requests, 'init container')),
  ];
  if (notes.length === 0) return;
  const meta = (pod.metadata ??= {});
  meta.annotations = { ...(meta.annotations ?? {}), [LIMIT_RANGER_ANNOTATION]: `LimitRanger plugin set: ${notes.join('; ')}` };
}

function minConstraint(type: string, k: string, enforced: Quantity, requests: Resources, limits: Resources, errs: string[]): void {
  const req = requests.get(k);
  const lim = limits.get(k);
  const e = enforced.toString();
  if (!req) errs.push(`minimum ${k} usage per ${type} is ${e}.  No request is specified`);
  else if (req.milliValue() < enforced.milliValue()) errs.push(`minimum ${k} usage per ${type} is ${e}, but request is ${req.toString()}`);
  else if (lim && lim.milliValue() < enforced.milliValue()) errs.push(`minimum ${k} usage per ${type} is ${e}, but limit is ${lim.toString()}`);
}

function maxConstraint(type: string, k: string, enforced: Quantity, requests: Resources, limits: Resources, errs: string[]): void {
  const req = requests.get(k);
  const lim = limits.get(k);
  const e = enforced.toString();
  if (!lim) errs.push(`maximum ${k} usage per ${type} is ${e}.  No limit is specified`);
  else if (lim.milliValue() > enforced.milliValue()) errs.push(`maximum ${k} usage per ${type} is ${e}, but limit is ${lim.toString()}`);
  else if (req && req.milliValue() > enforced.milliValue()) errs.push(`maximum ${k} usage per ${type} is ${e}, but request is ${req.toString()}`);
}

function ratioConstraint(type: string, k: string, enforced: Quantity, requests: Resources, limits: Resources, errs: string[]): void {
  const req = requests.get(k);
  const lim = limits.get(k);
  const e = enforced.toString();
  if (!req || req.isZero()) errs.push(`${k} max limit to request ratio per ${type} is ${e}, but no request is specified or request is 0`);
  else if (!lim || lim.isZero()) errs.push(`${k} max limit to request ratio per ${type} is ${e}, but no limit is specified or limit is 0`);
  else {
    const observed = Number(lim.milliValue()) / Number(req.milliValue());
    if (observed * 1000 > Number(enforced.milliValue())) {
      errs.push(`${k} max limit to request ratio per ${type} is ${e}, but provided ratio is ${observed.toFixed(6)}`);
    }
  }
}

/** Checks one set of requests and limits against an item's min, max and ratio. */
function check(item: Json, type: string, requests: Resources, limits: Resources, errs: string[]): void {
  for (const [k, q] of resources(item['min'])) minConstraint(type, k, q, requests, limits, errs);
  for (const [k, q] of resources(item['max'])) maxConstraint(type, k, q, requests, limits, errs);
  for (const [k, q] of resources(item['maxLimitRequestRatio'])) ratioConstraint(type, k, q, requests, limits, errs);
}

const containerResources = (c: Json, field: 'requests' | 'limits'): Resources => resources(isObject(c['resources']) ? c['resources'][field] : undefined);

/** The pod's requests or limits: the sum over containers, raised to any init container's. */
function podTotal(spec: Json, field: 'requests' | 'limits'): Resources {
  const total: Resources = new Map();
  for (const c of objects(spec['containers'])) {
    for (const [k, q] of containerResources(c, field)) {
      const have = total.get(k);
      total.set(k, have ? (tryParseQuantity(`${have.milliValue() + q.milliValue()}m`) ?? q) : q);
    }
  }
  for (const c of objects(spec['initContainers'])) {
    for (const [k, q] of containerResources(c, field)) {
      const have = total.get(k);
      if (!have || q.cmp(have) > 0) total.set(k, q);
    }
  }
  return total;
}

function validatePod(pod: KObject, range: KObject, errs: string[]): void {
  const spec: Json = isObject(pod['spec']) ? pod['spec'] : {};
  for (const item of limitItems(range)) {
    if (item['type'] === 'Container') {
      for (const c of [...objects(spec['containers']), ...objects(spec['initContainers'])]) {
        check(item, 'Container', containerResources(c, 'requests'), containerResources(c, 'limits'), errs);
      }
    } else if (item['type'] === 'Pod') {
      check(item, 'Pod', podTotal(spec, 'requests'), podTotal(spec, 'limits'), errs);
    }
  }
}

function validatePVC(pvc: KObject, range: KObject, errs: string[]): void {
  const spec: Json = isObject(pvc['spec']) ? pvc['spec'] : {};
  const requests = resources(isObject(spec['resources']) ? spec['resources']['requests'] : undefined);
  for (const item of limitItems(range)) {
    if (item['type'] !== 'PersistentVolumeClaim') continue;
    for (const [k, q] of resources(item['min'])) minConstraint('PersistentVolumeClaim', k, q, requests, new Map(), errs);
    for (const [k, q] of resources(item['max'])) {
      const req = requests.get(k);
      if (!req) errs.push(`maximum ${k} usage per PersistentVolumeClaim is ${q.toString()}.  No request is specified`);
      else if (req.milliValue() > q.milliValue()) errs.push(`maximum ${k} usage per PersistentVolumeClaim is ${q.toString()}, but request is ${req.toString()}`);
    }
  }
}

export function limitRanger(limitRanges: () => ResourceStore | undefined): Admission {
  const cached = lister(limitRanges);
  const ranges = async (a: AdmissionAttributes): Promise<KObject[]> => (await cached.list(a.namespace)).filter((r) => limitItems(r).length > 0);
  const refuse = (a: AdmissionAttributes, errs: string[]) =>
    apiErrors.forbidden({ group: a.decl.group, resource: a.decl.resource }, a.name, errs.length === 1 ? errs[0]! : `[${errs.join(', ')}]`);
  return {
    handles: (d, op) =>
      d.group === '' && ((d.resource === 'pods' && op === 'CREATE') || (d.resource === 'persistentvolumeclaims' && (op === 'CREATE' || op === 'UPDATE'))),
    async mutate(a) {
      if (applies(a) !== 'pod') return;
      const found = await ranges(a);
      if (found.length === 0) return;
      for (const r of found) defaultPod(a.object!, structuredClone(r));
      if (isObject(a.object!['status'])) a.object!['status']['qosClass'] = podQOSClass(a.object!);
    },
    async validate(a) {
      const what = applies(a);
      if (!what) return;
      for (const r of await ranges(a)) {
        const errs: string[] = [];
        if (what === 'pod') validatePod(a.object!, r, errs);
        else validatePVC(a.object!, r, errs);
        if (errs.length > 0) throw refuse(a, errs);
      }
    },
  };
}
