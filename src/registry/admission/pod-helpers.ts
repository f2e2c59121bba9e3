/** Small readers of pod objects shared by the pod admission plugins (objects are plain JSON). */
import type { AdmissionAttributes } from '../store.js';

export type Json = Record<string, any>;

export const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
export const objOf = (v: unknown): Json => (isObj(v) ? v : {});
export const listOf = (v: unknown): Json[] => (Array.isArray(v) ? v.filter(isObj) : []);

/** A create or update of a pod itself (not a subresource), with its object. */
export function isPodWrite(a: AdmissionAttributes): a is AdmissionAttributes & { object: Json } {
  return a.decl.group === '' && a.decl.resource === 'pods' && a.subresource === '' && !!a.object && (a.operation === 'CREATE' || a.operation === 'UPDATE');
}

/** The pod's spec, created when absent. */
export function podSpec(pod: Json): Json {
  if (!isObj(pod['spec'])) pod['spec'] = {};
  return pod['spec'] as Json;
}

/** Every container with its field path (initContainers, containers, ephemeralContainers), as Kubernetes' VisitContainersWithPath. */
export function containersWithPath(spec: Json): { container: Json; path: string }[] {
  const out: { container: Json; path: string }[] = [];
  for (const field of ['initContainers', 'containers', 'ephemeralContainers']) {
    listOf(spec[field]).forEach((container, i) => out.push({ container, path: `spec.${field}[${i}]` }));
  }
  return out;
}
