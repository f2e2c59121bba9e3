/**
 * PodSecurityPolicy admission, as Kubernetes 1.23's (plugin/pkg/admission/security/podsecuritypolicy), for
 * pod creates and updates (not subresources):
 *   - every policy is tried in name order; one admits the pod only when the requesting user, or the pod's
 *     service account, may `use` it (verb use on podsecuritypolicies.policy, in the pod's namespace);
 *   - for each, the pod is defaulted by the policy (fsGroup, supplementalGroups and SELinux options at pod
 *     level; runAsUser, runAsGroup, runAsNonRoot, SELinux, capabilities, readOnlyRootFilesystem and
 *     allowPrivilegeEscalation per container) and then validated against it;
 *   - the first policy that admits the pod unchanged wins; else, on create, the first that admits it with
 *     its defaults. The pod is annotated kubernetes.io/psp with the policy's name (and the audit event with
 *     podsecuritypolicy.admission.k8s.io/admit-policy); updates may not change the pod through defaults.
 *   - Admit (creates) may default the pod; Validate (creates and updates, after the mutating webhooks) runs
 *     the same without allowing any change, the kubernetes.io/psp policy first;
 *   - when none admits it: 403 '... is forbidden: unable to validate against any pod security policy: [<the
 *     errors of the policies the user or service account may use, as Go prints a field.ErrorList>]'; with no
 *     policy at all: 403 '... is forbidden: no providers available to validate pod request'.
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
import { forbidden as forbiddenErr, GoLiteral, goQuote, invalid, required, root, type FieldError, type FieldPath } from '../../util/validation.js';
import { isObj, listOf, objOf, type Json } from './pod-helpers.js';

export const PSP_ANNOTATION = 'kubernetes.io/psp';
const AUDIT_PREFIX = 'podsecuritypolicy.admission.k8s.io';
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

/** Defaults the seccomp and AppArmor profiles by the policy's annotations. */
function profileDefaults(pod: Json, policy: KObject): void {
  const meta = (pod['metadata'] ??= {}) as Json;
  const ann = (meta['annotations'] ??= {}) as Record<string, string>;
  const ps = objOf(pod['spec']);
  const seccomp = profiles(policy, SECCOMP_DEFAULT, SECCOMP_ALLOWED);
  const apparmor = profiles(policy, APPARMOR_DEFAULT, APPARMOR_ALLOWED);
  if (seccomp.dflt !== undefined && ann[SECCOMP_POD] === undefined && objOf(ps['securityContext'])['seccompProfile'] === undefined) ann[SECCOMP_POD] = seccomp.dflt;
  for (const c of [...listOf(ps['initContainers']), ...listOf(ps['containers'])]) {
    const key = APPARMOR_CONTAINER + String(c['name'] ?? '');
    if (apparmor.dflt !== undefined && ann[key] === undefined) ann[key] = apparmor.dflt;
  }
  if (Object.keys(ann).length === 0) delete meta['annotations'];
}

/** The seccomp and AppArmor strategies' checks: the pod's (ValidatePod) and a container's (ValidateContainer). */
function profileChecks(pod: Json, policy: KObject): { pod: () => FieldError[]; container: (c: Json) => FieldError[] } {
  const ann = objOf(objOf(pod['metadata'])['annotations']) as Record<string, string>;
  const ps = objOf(pod['spec']);
  const seccomp = profiles(policy, SECCOMP_DEFAULT, SECCOMP_ALLOWED);
  const apparmor = profiles(policy, APPARMOR_DEFAULT, APPARMOR_ALLOWED);
  const annPath = root('pod', 'metadata', 'annotations');
  const allowedText = String(objOf(policy.metadata?.annotations)[SECCOMP_ALLOWED] ?? '');
  const anyProfile = seccomp.allowed.includes('*');
  const checkSeccomp = (key: string, profile: string): FieldError[] => {
    if (!anyProfile && seccomp.allowed.length === 0 && profile !== '') return [forbiddenErr(annPath.key(key), 'seccomp may not be set')];
    // An unset profile is allowed only to a policy without an allowed list (the runtime's default).
    if ((seccomp.allowed.length === 0 && profile === '') || anyProfile || seccomp.allowed.includes(profile)) return [];
    return [forbiddenErr(annPath.key(key), `${profile} is not an allowed seccomp profile. Valid values are ${allowedText}`)];
  };
  const podProfile = seccompOf(ann[SECCOMP_POD], objOf(ps['securityContext'])['seccompProfile']) ?? '';
  return {
    pod: () => checkSeccomp(SECCOMP_POD, podProfile),
    container: (c) => {
      const errs: FieldError[] = [];
      const name = String(c['name'] ?? '');
      const key = APPARMOR_CONTAINER + name;
      if (apparmor.allowed.length > 0) {
        const profile = ann[key] ?? '';
        if (profile === '') errs.push(forbiddenErr(annPath.key(key), 'AppArmor profile must be set'));
        else if (!apparmor.allowed.includes(profile)) {
          errs.push(forbiddenErr(annPath.key(key), `${profile} is not an allowed profile. Allowed values: [${apparmor.allowed.map((x) => goQuote(x)).join(' ')}]`));
        }
      }
      errs.push(...checkSeccomp(SECCOMP_CONTAINER + name, seccompOf(ann[SECCOMP_CONTAINER + name], objOf(c['securityContext'])['seccompProfile']) ?? podProfile));
      return errs;
    },
  };
}

/** Defaults the pod (a copy) by the policy: pod level, then every container. */
function applyDefaults(pod: Json, spec: Json): void {
  const ps = objOf(pod['spec']);
  const hadPodContext = isObj(ps['securityContext']);
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
  if (!hadPodContext && Object.keys(psc).length === 0) delete ps['securityContext'];
  for (const field of ['initContainers', 'containers']) {
    for (const c of listOf(ps[field])) {
      const hadContext = isObj(c['securityContext']);
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
      if (!hadContext && Object.keys(csc).length === 0) delete c['securityContext'];
    }
  }
}

/** A Go []int64 as %#v prints it (a group list in an error). */
const int64s = (v: readonly number[] | undefined): GoLiteral => new GoLiteral(v === undefined ? '[]int64(nil)' : `[]int64{${v.join(', ')}}`);

/** The user strategies (MustRunAs, MustRunAsNonRoot, RunAsAny) on a container's effective runAsUser. */
function userErrors(s: Json, scp: FieldPath, runAsNonRoot: unknown, runAsUser: unknown): FieldError[] {
  if (s['rule'] === 'MustRunAsNonRoot') {
    if (runAsNonRoot === undefined && runAsUser === undefined) return [required(scp.child('runAsNonRoot'), 'must be true')];
    if (runAsNonRoot === false) return [invalid(scp.child('runAsNonRoot'), false, 'must be true')];
    if (runAsUser === 0) return [invalid(scp.child('runAsUser'), 0, 'running with the root UID is forbidden')];
    return [];
  }
  if (s['rule'] === 'MustRunAs') {
    if (typeof runAsUser !== 'number') return [required(scp.child('runAsUser'), '')];
    if (!inRanges(runAsUser, ranges(s))) return [invalid(scp.child('runAsUser'), runAsUser, `must be in the ranges: ${rangesText(ranges(s))}`)];
  }
  return [];
}

/** The group strategies (MustRunAs, MayRunAs, RunAsAny) on a list of groups, reported at `path`. */
function groupErrors(s: Json, path: FieldPath, groups: number[] | undefined): FieldError[] {
  const errs: FieldError[] = [];
  const rs = ranges(s);
  if (s['rule'] !== 'MustRunAs' && s['rule'] !== 'MayRunAs') return errs;
  if (s['rule'] === 'MustRunAs' && (groups ?? []).length === 0 && rs.length > 0) {
    errs.push(invalid(path, int64s(groups), 'unable to validate empty groups against required ranges'));
  }
  for (const g of groups ?? []) {
    if (!inRanges(g, rs)) errs.push(invalid(path, int64s(groups), `group ${g} must be in the ranges: ${rangesText(rs)}`));
  }
  return errs;
}

/** The SELinux MustRunAs strategy: each of level, role, type and user must be the policy's. */
function seLinuxErrors(se: Json, path: FieldPath, options: unknown): FieldError[] {
  if (se['rule'] !== 'MustRunAs') return [];
  if (!isObj(options)) return [required(path, '')];
  const want = objOf(se['seLinuxOptions']);
  const errs: FieldError[] = [];
  for (const k of ['level', 'role', 'type', 'user']) {
    const have = String(options[k] ?? '');
    const need = String(want[k] ?? '');
    if (have !== need) errs.push(invalid(path.child(k), have, `must be ${need}`));
  }
  return errs;
}

/** Validates a defaulted pod against the policy (the provider's ValidatePod, containers included). */
function validate(pod: Json, policy: KObject): FieldError[] {
  const spec = objOf(policy['spec']);
  const profileErrs = profileChecks(pod, policy);
  const errs: FieldError[] = [];
  const ps = objOf(pod['spec']);
  const psc = objOf(ps['securityContext']);
  const sp = root('spec');
  const scp = sp.child('securityContext');
  errs.push(...groupErrors(objOf(spec['fsGroup']), scp.child('fsGroup'), typeof psc['fsGroup'] === 'number' ? [psc['fsGroup']] : undefined));
  errs.push(...groupErrors(objOf(spec['supplementalGroups']), scp.child('supplementalGroups'), Array.isArray(psc['supplementalGroups']) ? (psc['supplementalGroups'] as number[]) : undefined));
  errs.push(...profileErrs.pod());
  errs.push(...seLinuxErrors(objOf(spec['seLinux']), scp.child('seLinuxOptions'), psc['seLinuxOptions']));
  if (ps['hostNetwork'] === true && spec['hostNetwork'] !== true) errs.push(invalid(scp.child('hostNetwork'), true, 'Host network is not allowed to be used'));
  if (ps['hostPID'] === true && spec['hostPID'] !== true) errs.push(invalid(scp.child('hostPID'), true, 'Host PID is not allowed to be used'));
  if (ps['hostIPC'] === true && spec['hostIPC'] !== true) errs.push(invalid(scp.child('hostIPC'), true, 'Host IPC is not allowed to be used'));
  // Sysctls (the mustMatchPatterns strategy): forbidden ones, and unsafe ones not allowed.
  const forbidden = strs(spec['forbiddenSysctls']);
  const allowedUnsafe = strs(spec['allowedUnsafeSysctls']);
  const matches = (patterns: string[], name: string) => patterns.some((p) => p === name || (p.endsWith('*') && name.startsWith(p.slice(0, -1))));
  const sysctlPath = root('pod', 'spec', 'securityContext', 'sysctls');
  listOf(psc['sysctls']).forEach((s, i) => {
    const name = String(s['name'] ?? '');
    if (matches(forbidden, name)) errs.push(forbiddenErr(sysctlPath.index(i), `sysctl ${goQuote(name)} is not allowed`));
    else if (!SAFE_SYSCTLS.includes(name) && !matches(allowedUnsafe, name)) errs.push(forbiddenErr(sysctlPath.index(i), `unsafe sysctl ${goQuote(name)} is not allowed`));
  });
  errs.push(...volumeErrors(ps, spec));
  const rc = spec['runtimeClass'];
  if (isObj(rc)) {
    const allowed = strs(rc['allowedRuntimeClassNames']);
    const name = ps['runtimeClassName'];
    if (allowed.length > 0 && allowed[0] !== '*' && !(typeof name === 'string' && allowed.includes(name))) {
      errs.push(invalid(sp.child('runtimeClassName'), typeof name === 'string' ? name : null, `must be one of [${allowed.join(' ')}]`));
    }
  }
  for (const field of ['initContainers', 'containers']) {
    listOf(ps[field]).forEach((c, i) => errs.push(...validateContainer(c, psc, spec, sp.child(field).index(i), profileErrs.container)));
  }
  return errs;
}

/** validatePodVolumes: volume types, hostPath prefixes (and read-only mounts), flexVolume and inline CSI drivers. */
function volumeErrors(ps: Json, spec: Json): FieldError[] {
  const errs: FieldError[] = [];
  const allowedVolumes = strs(spec['volumes']);
  const hostPaths = listOf(spec['allowedHostPaths']);
  const flex = listOf(spec['allowedFlexVolumes']).map((f) => f['driver']);
  const csi = listOf(spec['allowedCSIDrivers']).map((d) => d['name']);
  const vp = root('spec', 'volumes');
  listOf(ps['volumes']).forEach((v, i) => {
    const type = volumeType(v);
    if (!allowedVolumes.includes('*') && !allowedVolumes.includes(type)) {
      errs.push(invalid(vp.index(i), type, `${type} volumes are not allowed to be used`));
      return;
    }
    if (type === 'hostPath' && hostPaths.length > 0) {
      const path = String(objOf(v['hostPath'])['path'] ?? '');
      // AllowsHostVolumePath: a writable matching prefix wins over read-only ones.
      const matching = hostPaths.filter((h) => hasPathPrefix(path, String(h['pathPrefix'] ?? '')));
      if (matching.length === 0) errs.push(invalid(vp.index(i).child('hostPath', 'pathPrefix'), path, 'is not allowed to be used'));
      else if (matching.every((h) => h['readOnly'] === true)) {
        for (const field of ['initContainers', 'containers']) {
          listOf(ps[field]).forEach((c, ci) => {
            listOf(c['volumeMounts']).forEach((m, mi) => {
              if (m['name'] === v['name'] && m['readOnly'] !== true) {
                errs.push(invalid(root('spec', field).index(ci).child('volumeMounts').index(mi).child('readOnly'), false, 'must be read-only'));
              }
            });
          });
        }
      }
    }
    if (type === 'flexVolume' && flex.length > 0 && !flex.includes(objOf(v['flexVolume'])['driver'])) {
      errs.push(invalid(vp.index(i).child('driver'), String(objOf(v['flexVolume'])['driver'] ?? ''), 'Flexvolume driver is not allowed to be used'));
    }
    if (type === 'csi' && !csi.includes(objOf(v['csi'])['driver'])) {
      errs.push(invalid(vp.index(i).child('csi', 'driver'), String(objOf(v['csi'])['driver'] ?? ''), 'Inline CSI driver is not allowed to be used'));
    }
  });
  return errs;
}

const SAFE_SYSCTLS = ['kernel.shm_rmid_forced', 'net.ipv4.ip_local_port_range', 'net.ipv4.tcp_syncookies', 'net.ipv4.ping_group_range', 'net.ipv4.ip_unprivileged_port_start'];

function hasPathPrefix(path: string, prefix: string): boolean {
  const clean = (p: string) => p.replace(/\/+$/, '');
  const p = clean(path);
  const pre = clean(prefix);
  return pre === '' || p === pre || p.startsWith(`${pre}/`);
}

/** A Go []core.Capability as %#v prints it. */
const capabilityList = (v: unknown): GoLiteral =>
  new GoLiteral(Array.isArray(v) ? `[]core.Capability{${strs(v).map((x) => goQuote(x)).join(', ')}}` : '[]core.Capability(nil)');

/** The provider's ValidateContainer, in its order. */
function validateContainer(c: Json, psc: Json, spec: Json, path: FieldPath, profiles: (c: Json) => FieldError[]): FieldError[] {
  const errs: FieldError[] = [];
  const csc = objOf(c['securityContext']);
  const scp = path.child('securityContext');
  const eff = (k: string): unknown => (csc[k] !== undefined ? csc[k] : psc[k]);
  errs.push(...userErrors(objOf(spec['runAsUser']), scp, eff('runAsNonRoot'), eff('runAsUser')));
  if (isObj(spec['runAsGroup'])) {
    const g = eff('runAsGroup');
    errs.push(...groupErrors(spec['runAsGroup'], scp, typeof g === 'number' ? [g] : undefined));
  }
  errs.push(...seLinuxErrors(objOf(spec['seLinux']), scp.child('seLinuxOptions'), eff('seLinuxOptions')));
  errs.push(...profiles(c));
  if (csc['privileged'] === true && spec['privileged'] !== true) errs.push(invalid(scp.child('privileged'), true, 'Privileged containers are not allowed'));
  const pm = typeof csc['procMount'] === 'string' ? csc['procMount'] : 'Default';
  const allowedProcMounts = strs(spec['allowedProcMountTypes']);
  if (!(allowedProcMounts.length > 0 ? allowedProcMounts : ['Default']).includes(pm)) errs.push(invalid(scp.child('procMount'), pm, 'ProcMountType is not allowed.'));
  errs.push(...capabilityErrors(spec, scp.child('capabilities'), csc['capabilities']));
  const hostPorts = listOf(spec['hostPorts']).map((r) => ({ min: Number(r['min']), max: Number(r['max']) }));
  for (const p of listOf(c['ports'])) {
    const hp = p['hostPort'];
    if (typeof hp === 'number' && hp > 0 && !inRanges(hp, hostPorts)) {
      errs.push(invalid(path.child('hostPort'), hp, `Host port ${hp} is not allowed to be used. Allowed ports: ${rangesText(hostPorts)}`));
    }
  }
  if (spec['readOnlyRootFilesystem'] === true) {
    const ro = csc['readOnlyRootFilesystem'];
    if (ro === undefined) errs.push(invalid(scp.child('readOnlyRootFilesystem'), null, 'ReadOnlyRootFilesystem may not be nil and must be set to true'));
    else if (ro !== true) errs.push(invalid(scp.child('readOnlyRootFilesystem'), false, 'ReadOnlyRootFilesystem must be set to true'));
  }
  const escalation = csc['allowPrivilegeEscalation'];
  if (spec['allowPrivilegeEscalation'] === false && escalation !== false) {
    errs.push(invalid(scp.child('allowPrivilegeEscalation'), escalation === undefined ? null : escalation, 'Allowing privilege escalation for containers is not allowed'));
  }
  return errs;
}

/** The capabilities strategy's Validate. */
function capabilityErrors(spec: Json, path: FieldPath, capabilities: unknown): FieldError[] {
  const defaultAdd = strs(spec['defaultAddCapabilities']);
  const requiredDrop = strs(spec['requiredDropCapabilities']);
  if (!isObj(capabilities)) {
    if (defaultAdd.length === 0 && requiredDrop.length === 0) return [];
    return [invalid(path, null, 'required capabilities are not set on the securityContext')];
  }
  const allowed = strs(spec['allowedCapabilities']);
  if (allowed.includes('*')) return [];
  const errs: FieldError[] = [];
  for (const cap of strs(capabilities['add'])) {
    if (!defaultAdd.includes(cap) && !allowed.includes(cap)) errs.push(invalid(path.child('add'), cap, 'capability may not be added'));
  }
  const drops = strs(capabilities['drop']);
  for (const cap of requiredDrop) {
    if (!drops.includes(cap)) errs.push(invalid(path.child('drop'), capabilityList(capabilities['drop']), `${cap} is required to be dropped but was not found`));
  }
  return errs;
}

export interface PodSecurityPolicyDeps {
  policies: () => ResourceStore | undefined;
  authorizer: () => AccessAuthorizer | undefined;
}

/** The name admission.NewForbidden puts in its message: the request's, else the object's name or generateName. */
function forbiddenName(a: AdmissionAttributes): string {
  if (a.name) return a.name;
  const meta = objOf(a.object?.metadata);
  if (typeof meta['name'] === 'string' && meta['name'] !== '') return meta['name'];
  if (typeof meta['generateName'] === 'string' && meta['generateName'] !== '') return meta['generateName'];
  return 'Unknown';
}

/** field.ErrorList as Go's %v prints it. */
const errorList = (errs: readonly FieldError[]): string => `[${errs.map((e) => e.toString()).join(' ')}]`;

export function podSecurityPolicy(deps: PodSecurityPolicyDeps): Admission {
  /** isAuthorizedForPolicy: the user, or the pod's service account, may use the policy in the namespace. */
  const mayUse = async (a: AdmissionAttributes, sa: string, name: string): Promise<boolean> => {
    const authz = deps.authorizer();
    if (!authz) return true;
    const attrs = resourceAttributes({ verb: 'use', apiGroup: 'policy', resource: 'podsecuritypolicies', name, namespace: a.namespace });
    if ((await authz.authorize(a.user, attrs)).decision === 'allow') return true;
    if (sa === '') return false;
    const saUser = { name: `system:serviceaccount:${a.namespace}:${sa}`, groups: ['system:serviceaccounts', `system:serviceaccounts:${a.namespace}`, 'system:authenticated'] };
    return (await authz.authorize(saUser, attrs)).decision === 'allow';
  };

  /**
   * computeSecurityContext: each policy in name order (the hint first when mutation is not allowed) defaults a
   * copy of the pod and validates it; the first usable policy that needs no change wins, else (mutation
   * allowed) the first usable one that changed it. Otherwise the errors of the usable policies.
   */
  const compute = async (a: AdmissionAttributes, pod: KObject, mutationAllowed: boolean, hint: string | undefined): Promise<{ pod: KObject; name: string } | FieldError[]> => {
    const store = deps.policies();
    const policies = store ? (((await store.list({ namespace: '' }, {}))['items'] ?? []) as KObject[]) : [];
    if (policies.length === 0) throw apiErrors.forbidden(PODS, forbiddenName(a), 'no providers available to validate pod request');
    const nameOf = (p: KObject) => p.metadata?.name ?? '';
    policies.sort((x, y) => {
      if (!mutationAllowed && hint !== undefined) {
        if (nameOf(x) === hint) return -1;
        if (nameOf(y) === hint) return 1;
      }
      return nameOf(x) < nameOf(y) ? -1 : nameOf(x) > nameOf(y) ? 1 : 0;
    });
    const sa = typeof objOf(pod['spec'])['serviceAccountName'] === 'string' ? (objOf(pod['spec'])['serviceAccountName'] as string) : '';
    const failed = new Map<string, FieldError[]>();
    let mutated: { pod: KObject; name: string } | undefined;
    for (const policy of policies) {
      const name = nameOf(policy);
      const copy = structuredClone(pod);
      applyDefaults(copy, objOf(policy['spec']));
      profileDefaults(copy, policy);
      const errs = validate(copy, policy);
      if (errs.length > 0) {
        failed.set(name, errs);
        continue;
      }
      const changed = !isDeepStrictEqual(copy, pod);
      if (changed && !mutationAllowed) continue;
      if (!(await mayUse(a, sa, name))) continue;
      if (!changed) return { pod: copy, name };
      mutated ??= { pod: copy, name };
    }
    if (mutated) return mutated;
    const aggregate: FieldError[] = [];
    for (const [name, errs] of failed) if (await mayUse(a, sa, name)) aggregate.push(...errs);
    return aggregate;
  };

  const isPod = (a: AdmissionAttributes): a is AdmissionAttributes & { object: KObject } =>
    a.decl.group === '' && a.decl.resource === 'pods' && a.subresource === '' && !!a.object && (a.operation === 'CREATE' || a.operation === 'UPDATE');
  const refuse = (a: AdmissionAttributes, errs: FieldError[]) =>
    apiErrors.forbidden(PODS, forbiddenName(a), `unable to validate against any pod security policy: ${errorList(errs)}`);

  return {
    /** Admit: creates only; the pod takes the allowing policy's defaults and its name in kubernetes.io/psp. */
    async mutate(a) {
      if (!isPod(a) || a.operation !== 'CREATE') return;
      const result = await compute(a, a.object, true, undefined);
      if (Array.isArray(result)) throw refuse(a, result);
      const pod = a.object;
      for (const k of Object.keys(pod)) delete pod[k];
      Object.assign(pod, result.pod);
      const meta = (pod.metadata ??= {});
      meta.annotations = { ...(meta.annotations ?? {}), [PSP_ANNOTATION]: result.name };
      a.annotate(`${AUDIT_PREFIX}/admit-policy`, result.name);
    },
    /** Validate: creates and updates, no change allowed, the kubernetes.io/psp policy tried first. */
    async validate(a) {
      if (!isPod(a)) return;
      const hint = objOf(a.object.metadata?.annotations)[PSP_ANNOTATION];
      const result = await compute(a, a.object, false, typeof hint === 'string' ? hint : undefined);
      if (Array.isArray(result) || !isDeepStrictEqual(result.pod, a.object)) throw refuse(a, Array.isArray(result) ? result : []);
      a.annotate(`${AUDIT_PREFIX}/validate-policy`, result.name);
    },
    handles: (decl) => decl.group === '' && decl.resource === 'pods',
  };
}
