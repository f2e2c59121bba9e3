/**
 * PodTolerationRestriction admission, as Kubernetes 1.23's (plugin/pkg/admission/podtolerationrestriction
 * with pkg/util/tolerations), for pods themselves (not subresources), on create and update:
 *   - mutate: the extra tolerations are, on create, the namespace's defaults (the
 *     scheduler.alpha.kubernetes.io/defaultTolerations annotation, a JSON list; an empty value means none;
 *     no annotation: the configuration's `default`), and for a pod that is not BestEffort
 *     node.kubernetes.io/memory-pressure:NoSchedule (Exists); they are merged after the pod's own with
 *     MergeTolerations (a toleration another one tolerates a superset of is dropped; of equal ones the
 *     first stays); then the whitelist is checked as below;
 *   - validate: each of the pod's tolerations must be tolerated by one of the whitelist's (the
 *     scheduler.alpha.kubernetes.io/tolerationsWhitelist annotation, same rules; no annotation: the
 *     configuration's `whitelist`, the cluster whitelist) when that list is not empty.
 * Its refusals are plain errors in Kubernetes, so the client gets a 500 Status with the message alone
 * (no reason): 'pod tolerations (possibly merged with namespace default tolerations) conflict with its
 * namespace whitelist' ('cluster whitelist' for the configuration's).
 * Configuration: apiVersion podtolerationrestriction.admission.k8s.io/v1alpha1, kind Configuration,
 * `default` and `whitelist` lists of tolerations.
 */
import { StatusError, isStatusError } from '../errors.js';
import type { KObject } from '../kind.js';
import type { Admission, AdmissionAttributes, ResourceStore } from '../store.js';
import { isPodWrite, listOf, objOf, podSpec, type Json } from './pod-helpers.js';

export const DEFAULT_TOLERATIONS_ANNOTATION = 'scheduler.alpha.kubernetes.io/defaultTolerations';
export const TOLERATIONS_WHITELIST_ANNOTATION = 'scheduler.alpha.kubernetes.io/tolerationsWhitelist';
const MEMORY_PRESSURE = { key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoSchedule' };

export interface PodTolerationRestrictionConfig {
  /** The cluster default tolerations; undefined: none configured. */
  default?: Json[];
  /** The cluster whitelist; undefined: none configured. */
  whitelist?: Json[];
}

export function parsePodTolerationRestrictionConfig(object: unknown, source: string): PodTolerationRestrictionConfig {
  const o = objOf(object);
  const apiVersion = typeof o['apiVersion'] === 'string' ? o['apiVersion'] : '';
  if (o['kind'] !== 'Configuration' || apiVersion !== 'podtolerationrestriction.admission.k8s.io/v1alpha1') {
    throw new Error(`${source}: expected kind Configuration of podtolerationrestriction.admission.k8s.io/v1alpha1`);
  }
  return {
    ...(Array.isArray(o['default']) ? { default: listOf(o['default']) } : {}),
    ...(Array.isArray(o['whitelist']) ? { whitelist: listOf(o['whitelist']) } : {}),
  };
}

const str = (v: unknown): string => (typeof v === 'string' ? v : '');
const seconds = (t: Json): number | undefined => (typeof t['tolerationSeconds'] === 'number' ? t['tolerationSeconds'] : undefined);

/** apiequality.Semantic.DeepEqual of two tolerations. */
function sameToleration(a: Json, b: Json): boolean {
  return (
    str(a['key']) === str(b['key']) &&
    str(a['operator']) === str(b['operator']) &&
    str(a['value']) === str(b['value']) &&
    str(a['effect']) === str(b['effect']) &&
    seconds(a) === seconds(b)
  );
}

/** isSuperset: whether `ss` tolerates everything `t` does. */
export function isSuperset(ss: Json, t: Json): boolean {
  if (sameToleration(ss, t)) return true;
  // An empty key with Exists matches every key.
  if (str(t['key']) !== str(ss['key']) && (str(ss['key']) !== '' || str(ss['operator']) !== 'Exists')) return false;
  // An empty effect matches every effect.
  if (str(t['effect']) !== str(ss['effect']) && str(ss['effect']) !== '') return false;
  if (str(ss['effect']) === 'NoExecute') {
    const limit = seconds(ss);
    if (limit !== undefined) {
      const own = seconds(t);
      if (own === undefined || own > limit) return false;
    }
  }
  switch (str(ss['operator'])) {
    case 'Equal':
    case '':
      return str(t['operator']) === 'Equal' && str(t['value']) === str(ss['value']);
    case 'Exists':
      return true;
    default:
      return false;
  }
}

/** MergeTolerations: both lists in order, without those another toleration of either list covers. */
export function mergeTolerations(first: readonly Json[], second: readonly Json[]): Json[] {
  const all = [...first, ...second];
  const merged: Json[] = [];
  next: for (let i = 0; i < all.length; i++) {
    const t = all[i]!;
    for (const kept of merged) if (isSuperset(kept, t)) continue next;
    for (let j = i + 1; j < all.length; j++) {
      // Of equal tolerations the first stays.
      if (!sameToleration(t, all[j]!) && isSuperset(all[j]!, t)) continue next;
    }
    merged.push(t);
  }
  return merged;
}

/** VerifyAgainstWhitelist. */
export function verifyAgainstWhitelist(tolerations: readonly Json[], whitelist: readonly Json[]): boolean {
  if (whitelist.length === 0 || tolerations.length === 0) return true;
  return tolerations.every((t) => whitelist.some((w) => isSuperset(w, t)));
}

/** BestEffort QoS: no container sets a cpu or memory request or limit. */
function bestEffort(spec: Json): boolean {
  for (const c of [...listOf(spec['initContainers']), ...listOf(spec['containers'])]) {
    const r = objOf(c['resources']);
    for (const list of [objOf(r['requests']), objOf(r['limits'])]) if ('cpu' in list || 'memory' in list) return false;
  }
  return true;
}

/** A Go error the handler turns into a Status: code 500, no reason, the message alone. */
function plainError(message: string): StatusError {
  return new StatusError({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, code: 500 });
}

export function podTolerationRestriction(namespaces: () => ResourceStore | undefined, config: PodTolerationRestrictionConfig = {}): Admission {
  /** extractNSTolerations: undefined when the namespace has no such annotation, [] when it is empty. */
  const annotationList = async (a: AdmissionAttributes, key: string): Promise<Json[] | undefined> => {
    const store = namespaces();
    if (!store) return undefined;
    let ns: KObject;
    try {
      ns = await store.get({ namespace: '' }, a.namespace);
    } catch (err) {
      if (isStatusError(err)) throw err;
      throw plainError((err as Error).message);
    }
    const text = objOf(ns.metadata?.annotations)[key];
    if (typeof text !== 'string') return undefined;
    if (text === '') return [];
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (err) {
      throw plainError((err as Error).message);
    }
    if (!Array.isArray(parsed)) throw plainError('json: cannot unmarshal into Go value of type []v1.Toleration');
    return listOf(parsed);
  };

  const verify = async (a: AdmissionAttributes & { object: Json }): Promise<void> => {
    const tolerations = listOf(objOf(a.object['spec'])['tolerations']);
    if (tolerations.length === 0) return;
    let whitelist = await annotationList(a, TOLERATIONS_WHITELIST_ANNOTATION);
    let scope = 'namespace';
    if (whitelist === undefined) {
      whitelist = config.whitelist ?? [];
      scope = 'cluster';
    }
    if (!verifyAgainstWhitelist(tolerations, whitelist)) {
      throw plainError(`pod tolerations (possibly merged with namespace default tolerations) conflict with its ${scope} whitelist`);
    }
  };

  return {
    async mutate(a) {
      if (!isPodWrite(a)) return;
      const spec = podSpec(a.object);
      let extra: Json[] = [];
      if (a.operation === 'CREATE') extra = [...((await annotationList(a, DEFAULT_TOLERATIONS_ANNOTATION)) ?? config.default ?? [])];
      if (!bestEffort(spec)) extra.push({ ...MEMORY_PRESSURE });
      if (extra.length > 0) spec['tolerations'] = mergeTolerations(listOf(spec['tolerations']), extra);
      await verify(a);
    },
    async validate(a) {
      if (!isPodWrite(a)) return;
      await verify(a);
    },
    handles: (decl) => decl.group === '' && decl.resource === 'pods',
  };
}
