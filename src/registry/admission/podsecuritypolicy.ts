/**
 * PodSecurityPolicy admission, as Kubernetes 1.23's (plugin/pkg/admission/security/podsecuritypolicy), for
 * pod creates and updates (not subresources):
 *   - the policies considered are those the requesting user, or the pod's service account, may `use`
 *     (verb use on podsecuritypolicies.policy, in the pod's namespace), in name order (on update the policy
 *     named by the pod's kubernetes.io/psp annotation first);
 *   - for each, the pod is defaulted by the policy (fsGroup, supplementalGroups and SELinux options at pod
 *     level; runAsUser, runAsGroup, runAsNonRoot, SELinux, capabilities, readOnlyRootFilesystem and
 *     allowPrivilegeEscalation per container) and then validated against it;
 *   - the first policy that admits the pod unchanged wins; else, on create, the first that admits it with
 *     its defaults. The pod is annotated kubernetes.io/psp with the policy's name (and the audit event with
 *     podsecuritypolicy.admission.k8s.io/admit-policy); updates may not change the pod through defaults.
 *   - when none admits it: 403 'PodSecurityPolicy: unable to admit pod: [<every policy's errors>]'; with no
 *     policy usable: 403 'PodSecurityPolicy: no providers available to validate pod request'.
 * What the policy checks: privileged, host namespaces and ports, volume types (hostPath prefixes and
 * read-only mounts, flexVolume drivers, inline CSI drivers), the user, group, fsGroup and supplemental group
 * strategies, SELinux, capabilities, read-only root filesystem, privilege escalation, proc mount types,
 * sysctls, runtime classes, and the seccomp and AppArmor profiles the policy's annotations allow
 * (seccomp.security.alpha.kubernetes.io/{defaultProfileName,allowedProfileNames},
 * apparmor.security.beta.kubernetes.io/{defaultProfileName,allowedProfileNames}).
 */
import { isDeepStrictEqual } from 'node:util';
import { apiErrors } from '../errors.js';
import type { KObject } from '../kind.js';
import type { AccessAuthorizer } from '../kinds/authorization/attributes.js';
import { resourceAttributes } from '../kinds/authorization/attributes.js';
import type { Admission, AdmissionAttributes, ResourceStore } from '../store.js';
import { forbidden as forbiddenErr, invalid, required, root, type FieldError, type FieldPath } from '../../util/validation.js';
import { isObj, listOf, objOf, type Json } from './pod-helpers.js';

export const PSP_ANNOTATION = 'kubernetes.io/psp';
const AUDIT_KEY = 'podsecuritypolicy.admission.k8s.io/admit-policy';
const PODS = { group: '', resource: 'pods' };

const strs = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);
const ranges = (s: Json): { min: number; max: number }[] => listOf(s['ranges']).map((r) => ({ min: Number(r['min']), max: Number(r['max']) }));
const inRanges = (v: number, rs: { min: number; max: number }[]): boolean => rs.some((r) => v >= r.min && v <= r.max);
const rangesText = (rs: { min: number; max: number }[]): string => `[${rs.map((r) => `{${r.min} ${r.max}}`).join(' ')}]`;
const sc = (o: Json): Json => {
  if (!isObj(o['securityContext'])) o['securityContext'] = {};
  return o['securityContext'] as Json;
};

/** The volume source field of a pod volume, as the policy's FSType names it. */
function volumeType(v: Json): string {
  for (const k of Object.keys(v)) if (k !== 'name' && v[k] !== null && v[k] !== undefined) return k === 'cephfs' ? 'cephFS' : k;
  return 'none';
}

const SECCOMP_DEFAULT = 'seccomp.security.alpha.kubernetes.io/defaultProfileName';
const SECCOMP_ALLOWED = 'seccomp.security.alpha.kubernetes.io/allowedProfileNames';
const SECCOMP_POD = 'seccomp.security.alpha.kubernetes.io/pod';
const SECCOMP_CONTAINER = 'container.seccomp.security.alpha.kubernetes.io/';
const APPARMOR_DEFAULT = 'apparmor.security.beta.kubernetes.io/defaultProfileName';
const APPARMOR_ALLOWED = 'apparmor.security.beta.kubernetes.io/allowedProfileNames';
const APPARMOR_CONTAINER = 'container.apparmor.security.beta.kubernetes.io/';

/** A seccompProfile field in the annotation's words (runtime/default, localhost/<file>, unconfined). */
function seccompOf(annotation: unknown, field: unknown): string | undefined {
  if (typeof annotation === 'string') return annotation;
  const f = objOf(field);
  if (f['type'] === 'RuntimeDefault') return 'runtime/default';
  if (f['type'] === 'Unconfined') return 'unconfined';
  if (f['type'] === 'Localhost') return `localhost/${String(f['localhostProfile'] ?? '')}`;
  return undefined;
}

/** The policy's profiles annotations: the default and the allowed list ('*' for any). */
function profiles(policy: KObject, defaultKey: string, allowedKey: string): { dflt?: string; allowed: string[] } {
  const ann = objOf(policy.metadata?.annotations);
  const allowed = typeof ann[allowedKey] === 'string' ? (ann[allowedKey]).split(',').map((x) => x.trim()).filter((x) => x !== '') : [];
  return { ...(typeof ann[defaultKey] === 'string' ? { dflt: ann[defaultKey] } : {}), allowed };
}

/** Defaults and checks the seccomp and AppArmor profiles by the policy's annotations. */
function profileDefaultsAndErrors(pod: Json, policy: KObject, errs?: FieldError[]): void {
  const meta = (pod['metadata'] ??= {}) as Json;
  const ann = (meta['annotations'] ??= {}) as Record<string, string>;
  const ps = objOf(pod['spec']);
  const seccomp = profiles(policy, SECCOMP_DEFAULT, SECCOMP_ALLOWED);
  const apparmor = profiles(policy, APPARMOR_DEFAULT, APPARMOR_ALLOWED);
  const annPath = root('metadata', 'annotations');
  const checkSeccomp = (key: string, profile: string | undefined) => {
    if (!errs || profile === undefined) return;
    if (seccomp.allowed.length === 0) errs.push(forbiddenErr(annPath.key(key), 'seccomp may not be set'));
    else if (!seccomp.allowed.includes('*') && !seccomp.allowed.includes(profile)) {
      errs.push(forbiddenErr(annPath.key(key), `${profile} is not an allowed seccomp profile. Valid values are ${seccomp.allowed.join(',')}`));
    }
  };
  if (!errs && seccomp.dflt !== undefined && ann[SECCOMP_POD] === undefined && objOf(ps['securityContext'])['seccompProfile'] === undefined) ann[SECCOMP_POD] = seccomp.dflt;
  checkSeccomp(SECCOMP_POD, seccompOf(ann[SECCOMP_POD], objOf(ps['securityContext'])['seccompProfile']));
  for (const c of [...listOf(ps['initContainers']), ...listOf(ps['containers'])]) {
    const name = String(c['name'] ?? '');
    checkSeccomp(SECCOMP_CONTAINER + name, seccompOf(ann[SECCOMP_CONTAINER + name], objOf(c['securityContext'])['seccompProfile']));
    const key = APPARMOR_CONTAINER + name;
    if (!errs && apparmor.dflt !== undefined && ann[key] === undefined) ann[key] = apparmor.dflt;
    if (errs && apparmor.allowed.length > 0 && ann[key] !== undefined && !apparmor.allowed.includes(ann[key])) {
      errs.push(forbiddenErr(annPath.key(key), `${ann[key]} is not an allowed profile. Allowed values: ${apparmor.allowed.map((x) => JSON.stringify(x)).join(',')}`));
    }
  }
  if (Object.keys(ann).length === 0) delete meta['annotations'];
}

/** Defaults the pod (a copy) by the policy: pod level, then every container. */
function applyDefaults(pod: Json, spec: Json): void {
  const ps = objOf(pod['spec']);
  const psc = sc(ps);
  const fs = objOf(spec['fsGroup']);
  if (psc['fsGroup'] === undefined && fs['rule'] === 'MustRunAs' && ranges(fs).length > 0) psc['fsGroup'] = ranges(fs)[0]!.min;
  const sg = objOf(spec['supplementalGroups']);
  if (strs(psc['supplementalGroups']).length === 0 && !Array.isArray(psc['supplementalGroups']) && sg['rule'] === 'MustRunAs' && ranges(sg).length > 0) {
    psc['supplementalGroups'] = [ranges(sg)[0]!.min];
  }
  const se = objOf(spec['seLinux']);
  if (psc['seLinuxOptions'] === undefined && se['rule'] === 'MustRunAs' && isObj(se['seLinuxOptions'])) psc['seLinuxOptions'] = structuredClone(se['seLinuxOptions']);
  const rc = objOf(spec['runtimeClass']);
  if ((ps['runtimeClassName'] === undefined || ps['runtimeClassName'] === null) && typeof rc['defaultRuntimeClassName'] === 'string') ps['runtimeClassName'] = rc['defaultRuntimeClassName'];
  if (Object.keys(psc).length === 0) delete ps['securityContext'];
  for (const field of ['initContainers', 'containers']) {
    for (const c of listOf(ps[field])) {
      const csc = sc(c);
      const ru = objOf(spec['runAsUser']);
      if (csc['runAsUser'] === undefined && psc['runAsUser'] === undefined) {
        if (ru['rule'] === 'MustRunAs' && ranges(ru).length > 0) csc['runAsUser'] = ranges(ru)[0]!.min;
        else if (ru['rule'] === 'MustRunAsNonRoot' && csc['runAsNonRoot'] === undefined && psc['runAsNonRoot'] === undefined) csc['runAsNonRoot'] = true;
      }
      const rg = objOf(spec['runAsGroup']);
      if (csc['runAsGroup'] === undefined && psc['runAsGroup'] === undefined && rg['rule'] === 'MustRunAs' && ranges(rg).length > 0) csc['runAsGroup'] = ranges(rg)[0]!.min;
      if (csc['seLinuxOptions'] === undefined && psc['seLinuxOptions'] === undefined && se['rule'] === 'MustRunAs' && isObj(se['seLinuxOptions'])) {
        csc['seLinuxOptions'] = structuredClone(se['seLinuxOptions']);
      }
      const add = strs(spec['defaultAddCapabilities']);
      const drop = strs(spec['requiredDropCapabilities']);
      if (add.length > 0 || drop.length > 0) {
        const caps = objOf(csc['capabilities']);
        const dropped = strs(caps['drop']);
        const added = strs(caps['add']);
        const newAdd = [...added, ...add.filter((x) => !added.includes(x) && !dropped.includes(x))];
        const newDrop = [...dropped, ...drop.filter((x) => !dropped.includes(x))];
        csc['capabilities'] = { ...caps, ...(newAdd.length > 0 ? { add: newAdd } : {}), ...(newDrop.length > 0 ? { drop: newDrop } : {}) };
      }
      if (spec['readOnlyRootFilesystem'] === true && csc['readOnlyRootFilesystem'] === undefined) csc['readOnlyRootFilesystem'] = true;
      if (csc['allowPrivilegeEscalation'] === undefined) {
        if (typeof spec['defaultAllowPrivilegeEscalation'] === 'boolean') csc['allowPrivilegeEscalation'] = spec['defaultAllowPrivilegeEscalation'];
        else if (spec['allowPrivilegeEscalation'] === false) csc['allowPrivilegeEscalation'] = false;
      }
      if (Object.keys(csc).length === 0) delete c['securityContext'];
    }
  }
}

function checkIDStrategy(errs: FieldError[], s: Json, value: unknown, path: FieldPath, what: string): void {
  const rule = s['rule'];
  const rs = ranges(s);
  if (rule === 'MustRunAs') {
    if (typeof value !== 'number') errs.push(required(path, ''));
    else if (!inRanges(value, rs)) errs.push(invalid(path, value, `must be in the ranges: ${rangesText(rs)}`));
  } else if (rule === 'MayRunAs' && typeof value === 'number' && rs.length > 0 && !inRanges(value, rs)) {
    errs.push(invalid(path, value, `must be in the ranges: ${rangesText(rs)}`));
  }
  void what;
}

/** Validates a defaulted pod against the policy (Kubernetes' provider ValidatePod and ValidateContainer). */
function validate(pod: Json, spec: Json): FieldError[] {
  const errs: FieldError[] = [];
  const ps = objOf(pod['spec']);
  const psc = objOf(ps['securityContext']);
  const sp = root('spec');
  const scp = sp.child('securityContext');
  // fsGroup and supplemental groups.
  const fs = objOf(spec['fsGroup']);
  if (fs['rule'] === 'MustRunAs' || fs['rule'] === 'MayRunAs') {
    const g = psc['fsGroup'];
    if (typeof g === 'number' && !inRanges(g, ranges(fs))) errs.push(invalid(scp.child('fsGroup'), [g], `group ${g} must be in the ranges: ${rangesText(ranges(fs))}`));
    else if (g === undefined && fs['rule'] === 'MustRunAs') errs.push(invalid(scp.child('fsGroup'), [], 'unable to validate empty groups against required ranges'));
  }
  const sg = objOf(spec['supplementalGroups']);
  if (sg['rule'] === 'MustRunAs' || sg['rule'] === 'MayRunAs') {
    const gs = Array.isArray(psc['supplementalGroups']) ? (psc['supplementalGroups'] as number[]) : [];
    if (gs.length === 0 && sg['rule'] === 'MustRunAs') errs.push(invalid(scp.child('supplementalGroups'), gs, 'unable to validate empty groups against required ranges'));
    for (const g of gs) if (!inRanges(g, ranges(sg))) errs.push(invalid(scp.child('supplementalGroups'), gs, `group ${g} must be in the ranges: ${rangesText(ranges(sg))}`));
  }
  if (ps['hostNetwork'] === true && spec['hostNetwork'] !== true) errs.push(invalid(sp.child('securityContext', 'hostNetwork'), true, 'Host network is not allowed to be used'));
  if (ps['hostPID'] === true && spec['hostPID'] !== true) errs.push(invalid(sp.child('securityContext', 'hostPID'), true, 'Host PID is not allowed to be used'));
  if (ps['hostIPC'] === true && spec['hostIPC'] !== true) errs.push(invalid(sp.child('securityContext', 'hostIPC'), true, 'Host IPC is not allowed to be used'));
  // Sysctls: forbidden ones, and unsafe ones not allowed.
  const forbidden = strs(spec['forbiddenSysctls']);
  const allowedUnsafe = strs(spec['allowedUnsafeSysctls']);
  const matches = (patterns: string[], name: string) => patterns.some((p) => p === name || (p.endsWith('*') && name.startsWith(p.slice(0, -1))));
  listOf(psc['sysctls']).forEach((s, i) => {
    const name = String(s['name'] ?? '');
    if (matches(forbidden, name)) errs.push(invalid(scp.child('sysctls').index(i).child('name'), name, 'sysctl is not allowed to be used'));
    else if (!SAFE_SYSCTLS.includes(name) && !matches(allowedUnsafe, name)) errs.push(invalid(scp.child('sysctls').index(i).child('name'), name, 'unsafe sysctl is not allowed to be used'));
  });
  const rc = spec['runtimeClass'];
  if (isObj(rc)) {
    const allowed = strs(rc['allowedRuntimeClassNames']);
    const name = ps['runtimeClassName'];
    if (typeof name === 'string' && !allowed.includes('*') && !allowed.includes(name)) errs.push(invalid(sp.child('runtimeClassName'), name, `must be one of [${allowed.join(' ')}]`));
  }
  // Volumes.
  const allowedVolumes = strs(spec['volumes']);
  const hostPaths = listOf(spec['allowedHostPaths']);
  const flex = listOf(spec['allowedFlexVolumes']).map((f) => f['driver']);
  const csi = listOf(spec['allowedCSIDrivers']).map((d) => d['name']);
  const readOnlyHostPaths = new Set<string>();
  listOf(ps['volumes']).forEach((v, i) => {
    const type = volumeType(v);
    const vp = sp.child('volumes').index(i);
    if (!allowedVolumes.includes('*') && !allowedVolumes.includes(type)) {
      errs.push(invalid(vp, type, `${type} volumes are not allowed to be used`));
      return;
    }
    if (type === 'hostPath' && hostPaths.length > 0) {
      const path = String(objOf(v['hostPath'])['path'] ?? '');
      const match = hostPaths.find((h) => hasPathPrefix(path, String(h['pathPrefix'] ?? '')));
      if (!match) errs.push(invalid(vp.child('hostPath', 'pathPrefix'), path, `is not allowed to be used`));
      else if (match['readOnly'] === true) readOnlyHostPaths.add(String(v['name'] ?? ''));
    }
    if (type === 'flexVolume' && flex.length > 0 && !flex.includes(objOf(v['flexVolume'])['driver'])) {
      errs.push(invalid(vp.child('driver'), objOf(v['flexVolume'])['driver'], 'Flexvolume driver is not allowed to be used'));
    }
    if (type === 'csi' && !csi.includes(objOf(v['csi'])['driver'])) {
      errs.push(invalid(vp.child('csi', 'driver'), objOf(v['csi'])['driver'], 'Inline CSI driver is not allowed to be used'));
    }
  });
  for (const field of ['initContainers', 'containers']) {
    listOf(ps[field]).forEach((c, i) => errs.push(...validateContainer(c, psc, spec, sp.child(field).index(i), readOnlyHostPaths)));
  }
  return errs;
}

const SAFE_SYSCTLS = ['kernel.shm_rmid_forced', 'net.ipv4.ip_local_port_range', 'net.ipv4.tcp_syncookies', 'net.ipv4.ping_group_range', 'net.ipv4.ip_unprivileged_port_start'];

function hasPathPrefix(path: string, prefix: string): boolean {
  const clean = (p: string) => p.replace(/\/+$/, '');
  const p = clean(path);
  const pre = clean(prefix);
  return pre === '' || p === pre || p.startsWith(`${pre}/`);
}

function validateContainer(c: Json, psc: Json, spec: Json, path: FieldPath, readOnlyHostPaths: Set<string>): FieldError[] {
  const errs: FieldError[] = [];
  const csc = objOf(c['securityContext']);
  const scp = path.child('securityContext');
  const eff = (k: string): unknown => (csc[k] !== undefined ? csc[k] : psc[k]);
  const ru = objOf(spec['runAsUser']);
  if (ru['rule'] === 'MustRunAsNonRoot') {
    const user = eff('runAsUser');
    if (eff('runAsNonRoot') === false) errs.push(invalid(scp.child('runAsNonRoot'), false, 'must be true'));
    else if (user === 0) errs.push(invalid(scp.child('runAsUser'), 0, 'running with the root UID is forbidden'));
    else if (eff('runAsNonRoot') === undefined && user === undefined) errs.push(required(scp.child('runAsNonRoot'), 'must be true'));
  } else {
    checkIDStrategy(errs, ru, eff('runAsUser'), scp.child('runAsUser'), 'user');
  }
  if (isObj(spec['runAsGroup'])) checkIDStrategy(errs, spec['runAsGroup'], eff('runAsGroup'), scp.child('runAsGroup'), 'group');
  const se = objOf(spec['seLinux']);
  if (se['rule'] === 'MustRunAs' && !isDeepStrictEqual(objOf(eff('seLinuxOptions')), objOf(se['seLinuxOptions']))) {
    errs.push(invalid(scp.child('seLinuxOptions'), '', 'does not match required SELinux options'));
  }
  if (csc['privileged'] === true && spec['privileged'] !== true) errs.push(invalid(scp.child('privileged'), true, 'Privileged containers are not allowed'));
  const pm = csc['procMount'];
  if (typeof pm === 'string' && pm !== 'Default' && !strs(spec['allowedProcMountTypes']).includes(pm)) errs.push(invalid(scp.child('procMount'), pm, 'ProcMountType is not allowed'));
  const caps = objOf(csc['capabilities']);
  const allowedCaps = [...strs(spec['allowedCapabilities']), ...strs(spec['defaultAddCapabilities'])];
  for (const cap of strs(caps['add'])) {
    if (!allowedCaps.includes('*') && !allowedCaps.includes(cap)) errs.push(invalid(scp.child('capabilities', 'add'), cap, 'capability may not be added'));
  }
  for (const cap of strs(spec['requiredDropCapabilities'])) {
    if (!strs(caps['drop']).includes(cap)) errs.push(invalid(scp.child('capabilities', 'drop'), strs(caps['drop']), `${cap} is required to be dropped but was not found`));
  }
  const hostPorts = listOf(spec['hostPorts']).map((r) => ({ min: Number(r['min']), max: Number(r['max']) }));
  listOf(c['ports']).forEach((p, i) => {
    const hp = p['hostPort'];
    if (typeof hp === 'number' && hp !== 0 && !inRanges(hp, hostPorts)) {
      errs.push(invalid(path.child('ports').index(i).child('hostPort'), hp, `Host port ${hp} is not allowed to be used. Allowed ports: ${rangesText(hostPorts)}`));
    }
  });
  if (spec['readOnlyRootFilesystem'] === true && csc['readOnlyRootFilesystem'] !== true) {
    errs.push(invalid(scp.child('readOnlyRootFilesystem'), csc['readOnlyRootFilesystem'] ?? false, 'ReadOnlyRootFilesystem must be set to true'));
  }
  if (spec['allowPrivilegeEscalation'] === false && csc['allowPrivilegeEscalation'] !== false) {
    errs.push(invalid(scp.child('allowPrivilegeEscalation'), csc['allowPrivilegeEscalation'] ?? true, 'Allowing privilege escalation for containers is not allowed'));
  }
  listOf(c['volumeMounts']).forEach((m, i) => {
    if (readOnlyHostPaths.has(String(m['name'] ?? '')) && m['readOnly'] !== true) {
      errs.push(invalid(path.child('volumeMounts').index(i).child('readOnly'), false, 'must be read-only'));
    }
  });
  return errs;
}

export interface PodSecurityPolicyDeps {
  policies: () => ResourceStore | undefined;
  authorizer: () => AccessAuthorizer | undefined;
}

export function podSecurityPolicy(deps: PodSecurityPolicyDeps): Admission {
  /** Whether the user, or the pod's service account, may use the policy in the namespace. */
  const mayUse = async (a: AdmissionAttributes, sa: string, name: string): Promise<boolean> => {
    const authz = deps.authorizer();
    if (!authz) return true;
    const attrs = resourceAttributes({ verb: 'use', apiGroup: 'policy', resource: 'podsecuritypolicies', name, namespace: a.namespace });
    if ((await authz.authorize(a.user, attrs)).decision === 'allow') return true;
    if (sa === '') return false;
    const saUser = { name: `system:serviceaccount:${a.namespace}:${sa}`, groups: ['system:serviceaccounts', `system:serviceaccounts:${a.namespace}`, 'system:authenticated'] };
    return (await authz.authorize(saUser, attrs)).decision === 'allow';
  };

  return {
    async mutate(a) {
      if (a.decl.group !== '' || a.decl.resource !== 'pods' || a.subresource !== '' || !a.object) return;
      if (a.operation !== 'CREATE' && a.operation !== 'UPDATE') return;
      const store = deps.policies();
      if (!store) return;
      const pod = a.object;
      const refuse = (message: string) => apiErrors.forbidden(PODS, a.name, message);
      const hint = a.operation === 'UPDATE' ? objOf(pod.metadata?.annotations)[PSP_ANNOTATION] : undefined;
      let policies = ((await store.list({ namespace: '' }, {}))['items'] ?? []) as KObject[];
      policies = policies.sort((x, y) => {
        const nx = x.metadata?.name ?? '';
        const ny = y.metadata?.name ?? '';
        if (nx === hint) return -1;
        if (ny === hint) return 1;
        return nx < ny ? -1 : nx > ny ? 1 : 0;
      });
      const sa = typeof objOf(pod['spec'])['serviceAccountName'] === 'string' ? (objOf(pod['spec'])['serviceAccountName'] as string) : '';
      const errors: FieldError[] = [];
      let mutated: { pod: KObject; name: string } | undefined;
      let usable = 0;
      for (const policy of policies) {
        const name = policy.metadata?.name ?? '';
        if (!(await mayUse(a, sa, name))) continue;
        usable++;
        const spec = objOf(policy['spec']);
        const copy = structuredClone(pod);
        applyDefaults(copy, spec);
        profileDefaultsAndErrors(copy, policy);
        const errs: FieldError[] = [];
        profileDefaultsAndErrors(copy, policy, errs);
        errs.push(...validate(copy, spec));
        if (errs.length > 0) {
          errors.push(...errs);
          continue;
        }
        const changed = !isDeepStrictEqual(copy['spec'], pod['spec']) || !isDeepStrictEqual(copy.metadata?.annotations ?? {}, pod.metadata?.annotations ?? {});
        if (!changed) {
          mutated = { pod: copy, name };
          break;
        }
        if (a.operation === 'CREATE' && !mutated) mutated = { pod: copy, name };
      }
      if (!mutated) {
        if (usable === 0) throw refuse('PodSecurityPolicy: no providers available to validate pod request');
        throw refuse(`PodSecurityPolicy: unable to admit pod: [${errors.map((e) => e.toString()).join(' ')}]`);
      }
      pod['spec'] = mutated.pod['spec'];
      const meta = (pod.metadata ??= {});
      meta.annotations = { ...(mutated.pod.metadata?.annotations ?? {}), [PSP_ANNOTATION]: mutated.name };
      a.annotate(AUDIT_KEY, mutated.name);
    },
  };
}
