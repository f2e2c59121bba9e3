/**
 * Small pod and service admission plugins of Kubernetes 1.23, each a factory:
 *   - ExtendedResourceToleration (mutate): a pod requesting extended resources (example.com/gpu) tolerates
 *     the NoSchedule taint of each (key = the resource name, operator Exists).
 *   - LimitPodHardAntiAffinityTopology (validate): required pod anti-affinity terms may only use the
 *     kubernetes.io/hostname topology key.
 *   - SecurityContextDeny (validate): pods may not set supplementalGroups, seLinuxOptions, runAsUser or
 *     fsGroup in their security context, nor seLinuxOptions or runAsUser in a container's.
 *   - DenyServiceExternalIPs (validate): services may not add spec.externalIPs (keeping or removing
 *     existing ones is allowed).
 *   - PersistentVolumeLabel: labels persistent volumes with their cloud zone; with no cloud provider (orch
 *     has none) it does nothing, as kube-apiserver's does then.
 */
import { apiErrors } from '../errors.js';
import type { Admission } from '../store.js';
import { isObj, isPodWrite, listOf, objOf, podSpec, type Json } from './pod-helpers.js';

const PODS = { group: '', resource: 'pods' };
const HOSTNAME_LABEL = 'kubernetes.io/hostname';

/** Kubernetes' IsExtendedResourceName: a domain-prefixed name outside kubernetes.io, not a quota "requests." name. */
export function isExtendedResourceName(name: string): boolean {
  if (!name.includes('/') || name.startsWith('requests.')) return false;
  const prefix = name.slice(0, name.indexOf('/'));
  return prefix !== 'kubernetes.io' && !prefix.endsWith('.kubernetes.io');
}

/** Kubernetes' AddOrUpdateTolerationInPod: replaces an equal-keyed toleration, or appends. */
export function addOrUpdateToleration(spec: Json, toleration: Json): void {
  const list = listOf(spec['tolerations']);
  const same = (t: Json) =>
    (t['key'] ?? '') === (toleration['key'] ?? '') &&
    (t['effect'] ?? '') === (toleration['effect'] ?? '') &&
    (t['operator'] ?? '') === (toleration['operator'] ?? '') &&
    (t['value'] ?? '') === (toleration['value'] ?? '');
  const i = list.findIndex(same);
  if (i >= 0) list[i] = toleration;
  else list.push(toleration);
  spec['tolerations'] = list;
}

export function extendedResourceToleration(): Admission {
  return {
    async mutate(a) {
      if (!isPodWrite(a)) return;
      const spec = podSpec(a.object);
      const names = new Set<string>();
      for (const c of [...listOf(spec['initContainers']), ...listOf(spec['containers'])]) {
        for (const name of Object.keys(objOf(objOf(c['resources'])['requests']))) if (isExtendedResourceName(name)) names.add(name);
      }
      for (const name of [...names].sort()) addOrUpdateToleration(spec, { key: name, operator: 'Exists', effect: 'NoSchedule' });
    },
  };
}

export function limitPodHardAntiAffinityTopology(): Admission {
  return {
    async validate(a) {
      if (!isPodWrite(a)) return;
      const terms = listOf(objOf(objOf(objOf(a.object['spec'])['affinity'])['podAntiAffinity'])['requiredDuringSchedulingIgnoredDuringExecution']);
      for (const t of terms) {
        if (t['topologyKey'] !== HOSTNAME_LABEL) {
          throw apiErrors.forbidden(
            PODS,
            a.name,
            `affinity.PodAntiAffinity.RequiredDuringScheduling has TopologyKey ${String(t['topologyKey'] ?? '')} but only key ${HOSTNAME_LABEL} is allowed`,
          );
        }
      }
    },
  };
}

export function securityContextDeny(): Admission {
  return {
    async validate(a) {
      if (!isPodWrite(a)) return;
      const spec = objOf(a.object['spec']);
      const refuse = (what: string) => apiErrors.forbidden(PODS, a.name, `${what} is forbidden`);
      if (isObj(spec['securityContext'])) {
        const sc = spec['securityContext'];
        for (const [field, go] of [
          ['supplementalGroups', 'SupplementalGroups'],
          ['seLinuxOptions', 'SELinuxOptions'],
          ['runAsUser', 'RunAsUser'],
          ['fsGroup', 'FSGroup'],
        ] as const) {
          if (sc[field] !== undefined && sc[field] !== null) throw refuse(`pod.Spec.SecurityContext.${go}`);
        }
      }
      for (const c of [...listOf(spec['initContainers']), ...listOf(spec['containers'])]) {
        const sc = objOf(c['securityContext']);
        if (sc['seLinuxOptions'] !== undefined && sc['seLinuxOptions'] !== null) throw refuse('SecurityContext.SELinuxOptions');
        if (sc['runAsUser'] !== undefined && sc['runAsUser'] !== null) throw refuse('SecurityContext.RunAsUser');
      }
    },
  };
}

export function denyServiceExternalIPs(): Admission {
  return {
    async validate(a) {
      if (a.decl.group !== '' || a.decl.resource !== 'services' || a.subresource !== '' || !a.object) return;
      if (a.operation !== 'CREATE' && a.operation !== 'UPDATE') return;
      const ips = (objOf(a.object['spec'])['externalIPs'] ?? []) as unknown[];
      if (!Array.isArray(ips) || ips.length === 0) return;
      const old = a.oldObject ? ((objOf(a.oldObject['spec'])['externalIPs'] ?? []) as unknown[]) : undefined;
      if (old && Array.isArray(old) && ips.every((ip) => old.includes(ip))) return;
      throw apiErrors.forbidden({ group: '', resource: 'services' }, a.name, 'use of external IPs is denied by admission control');
    },
  };
}

export function persistentVolumeLabel(): Admission {
  return {};
}
