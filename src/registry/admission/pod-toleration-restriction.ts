/**
 * PodTolerationRestriction admission, as Kubernetes 1.23's (plugin/pkg/admission/podtolerationrestriction):
 *   - mutate (pod create and update): a created pod gets its namespace's default tolerations (the
 *     scheduler.alpha.kubernetes.io/defaultTolerations annotation, a JSON list; else the configuration's
 *     `default`) merged into its own; a pod that is not BestEffort also tolerates
 *     node.kubernetes.io/memory-pressure:NoSchedule.
 *   - validate: a pod's tolerations must each be covered by the namespace's whitelist (the
 *     scheduler.alpha.kubernetes.io/tolerationsWhitelist annotation; else the configuration's `whitelist`),
 *     when that list is not empty (403 otherwise).
 * Configuration: apiVersion podtolerationrestriction.admission.k8s.io/v1alpha1, kind Configuration,
 * `default` and `whitelist` lists of tolerations.
 */
import { apiErrors, isStatusError } from '../errors.js';
import type { KObject } from '../kind.js';
import type { Admission, AdmissionAttributes, ResourceStore } from '../store.js';
import { isPodWrite, listOf, objOf, podSpec, type Json } from './pod-helpers.js';

export const DEFAULT_TOLERATIONS_ANNOTATION = 'scheduler.alpha.kubernetes.io/defaultTolerations';
export const TOLERATIONS_WHITELIST_ANNOTATION = 'scheduler.alpha.kubernetes.io/tolerationsWhitelist';
const PODS = { group: '', resource: 'pods' };
const MEMORY_PRESSURE = { key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoSchedule' };

export interface PodTolerationRestrictionConfig {
  default: Json[];
  whitelist: Json[];
}

export function parsePodTolerationRestrictionConfig(object: unknown, source: string): PodTolerationRestrictionConfig {
  const o = objOf(object);
  const apiVersion = typeof o['apiVersion'] === 'string' ? o['apiVersion'] : '';
  if (o['kind'] !== 'Configuration' || apiVersion !== 'podtolerationrestriction.admission.k8s.io/v1alpha1') {
    throw new Error(`${source}: expected kind Configuration of podtolerationrestriction.admission.k8s.io/v1alpha1`);
  }
  return { default: listOf(o['default']), whitelist: listOf(o['whitelist']) };
}

const op = (t: Json): string => (typeof t['operator'] === 'string' && t['operator'] !== '' ? t['operator'] : 'Equal');
const str = (v: unknown): string => (typeof v === 'string' ? v : '');

/** Whether toleration `outer` tolerates at least what `t` does (Kubernetes' isSuperset). */
function covers(outer: Json, t: Json): boolean {
  if (str(outer['key']) !== str(t['key'])) return false;
  if (str(outer['effect']) !== '' && str(outer['effect']) !== str(t['effect'])) return false;
  if (op(outer) === 'Equal' && (op(t) !== 'Equal' || str(outer['value']) !== str(t['value']))) return false;
  const os = outer['tolerationSeconds'];
  const ts = t['tolerationSeconds'];
  if (typeof os === 'number') return typeof ts === 'number' && ts <= os;
  return true;
}

/** Kubernetes' MergeTolerations, simplified: the pod's, then each extra one no existing toleration covers. */
function merge(own: Json[], extra: Json[]): Json[] {
  const out = [...own];
  for (const t of extra) if (!out.some((o) => covers(o, t))) out.push(t);
  return out;
}

/** BestEffort: no container sets a cpu or memory request or limit. */
function bestEffort(spec: Json): boolean {
  for (const c of [...listOf(spec['initContainers']), ...listOf(spec['containers'])]) {
    const r = objOf(c['resources']);
    for (const list of [objOf(r['requests']), objOf(r['limits'])]) if ('cpu' in list || 'memory' in list) return false;
  }
  return true;
}

export function podTolerationRestriction(
  namespaces: () => ResourceStore | undefined,
  config: PodTolerationRestrictionConfig = { default: [], whitelist: [] },
): Admission {
  const annotationList = async (a: AdmissionAttributes, key: string): Promise<Json[] | undefined> => {
    const store = namespaces();
    if (!store) return undefined;
    let ns: KObject;
    try {
      ns = await store.get({ namespace: '' }, a.namespace);
    } catch (err) {
      if (isStatusError(err, 'NotFound')) return undefined;
      throw err;
    }
    const text = objOf(ns.metadata?.annotations)[key];
    if (typeof text !== 'string') return undefined;
    try {
      const parsed: unknown = JSON.parse(text);
      if (!Array.isArray(parsed)) throw new Error('not a list');
      return listOf(parsed);
    } catch (err) {
      throw apiErrors.forbidden(PODS, a.name, `error parsing the ${key} annotation of namespace ${a.namespace}: ${(err as Error).message}`);
    }
  };
  return {
    async mutate(a) {
      if (!isPodWrite(a)) return;
      const spec = podSpec(a.object);
      let extra: Json[] = [];
      if (a.operation === 'CREATE') extra = (await annotationList(a, DEFAULT_TOLERATIONS_ANNOTATION)) ?? config.default;
      if (!bestEffort(spec)) extra = [...extra, MEMORY_PRESSURE];
      if (extra.length > 0) spec['tolerations'] = merge(listOf(spec['tolerations']), extra);
    },
    async validate(a) {
      if (!isPodWrite(a)) return;
      const tolerations = listOf(objOf(a.object['spec'])['tolerations']);
      if (tolerations.length === 0) return;
      const whitelist = (await annotationList(a, TOLERATIONS_WHITELIST_ANNOTATION)) ?? config.whitelist;
      if (whitelist.length === 0) return;
      if (!tolerations.every((t) => whitelist.some((w) => covers(w, t)))) {
        throw apiErrors.forbidden(PODS, a.name, 'pod tolerations (possibly merged with namespace default tolerations) conflict with its namespace whitelist');
      }
    },
  };
}
