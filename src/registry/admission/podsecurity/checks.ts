/**
 * The checks of the Pod Security Standards as Kubernetes 1.23 defines them (k8s.io/pod-security-admission
 * policy), in one table. Each check belongs to a level (baseline or restricted; restricted runs the baseline
 * checks too) and has versions: the one used for a policy version is the newest whose minimum version is not
 * above it. A check looks at the pod's metadata and spec (of a pod or of a controller's template) and answers
 * allowed, or a reason and a detail worded as Kubernetes words them.
 */

export type Json = Record<string, any>;
export type Level = 'privileged' | 'baseline' | 'restricted';

/** A policy version: [major, minor]; 'latest' is the newest version this table knows. */
export type Version = readonly [number, number];
export const LATEST: Version = [1, 23];

export interface CheckResult {
  allowed: boolean;
  reason?: string;
  detail?: string;
}

type CheckPod = (meta: Json, spec: Json) => CheckResult;

interface Check {
  id: string;
  level: Exclude<Level, 'privileged'>;
  versions: { min: Version; check: CheckPod }[];
}

const ALLOWED: CheckResult = { allowed: true };
const deny = (reason: string, detail: string): CheckResult => ({ allowed: false, reason, detail });

const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const obj = (v: unknown): Json => (isObj(v) ? v : {});
const arr = (v: unknown): Json[] => (Array.isArray(v) ? v.filter(isObj) : []);
const strs = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);

/** Every container of the spec: init containers, containers, then ephemeral containers. */
function containers(spec: Json): Json[] {
  return [...arr(spec['initContainers']), ...arr(spec['containers']), ...arr(spec['ephemeralContainers'])];
}
const ctx = (c: Json): Json | undefined => (isObj(c['securityContext']) ? c['securityContext'] : undefined);
const podCtx = (spec: Json): Json | undefined => (isObj(spec['securityContext']) ? spec['securityContext'] : undefined);

const pluralize = (one: string, many: string, n: number): string => (n === 1 ? one : many);
const joinQuote = (items: readonly string[]): string => items.map((s) => JSON.stringify(s)).join(', ');
const sorted = (s: Set<string>): string[] => [...s].sort();
/** `container "a"` / `containers "a", "b"`. */
const namedContainers = (names: string[]): string => `${pluralize('container', 'containers', names.length)} ${joinQuote(names)}`;

/** Containers for which `bad` holds, as named in details. */
function badContainers(spec: Json, bad: (c: Json) => boolean): string[] {
  return containers(spec)
    .filter(bad)
    .map((c) => String(c['name'] ?? ''));
}

// --- baseline -----------------------------------------------------------------------------------------------

function hostNamespaces(_meta: Json, spec: Json): CheckResult {
  const set = ['hostNetwork', 'hostPID', 'hostIPC'].filter((f) => spec[f] === true).map((f) => `${f}=true`);
  return set.length > 0 ? deny('host namespaces', set.join(', ')) : ALLOWED;
}

function privileged(_meta: Json, spec: Json): CheckResult {
  const bad = badContainers(spec, (c) => ctx(c)?.['privileged'] === true);
  return bad.length > 0 ? deny('privileged', `${namedContainers(bad)} must not set securityContext.privileged=true`) : ALLOWED;
}

const BASELINE_CAPABILITIES = new Set([
  'AUDIT_WRITE', 'CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'FSETID', 'KILL', 'MKNOD', 'NET_BIND_SERVICE',
  'SETFCAP', 'SETGID', 'SETPCAP', 'SETUID', 'SYS_CHROOT',
]);

function capabilitiesBaseline(_meta: Json, spec: Json): CheckResult {
  const forbidden = new Set<string>();
  const bad = badContainers(spec, (c) => {
    const added = strs(obj(ctx(c)?.['capabilities'])['add']).filter((cap) => !BASELINE_CAPABILITIES.has(cap));
    added.forEach((cap) => forbidden.add(cap));
    return added.length > 0;
  });
  if (bad.length === 0) return ALLOWED;
  return deny('non-default capabilities', `${namedContainers(bad)} must not include ${joinQuote(sorted(forbidden))} in securityContext.capabilities.add`);
}

function hostPathVolumes(_meta: Json, spec: Json): CheckResult {
  const bad = arr(spec['volumes'])
    .filter((v) => v['hostPath'] !== undefined && v['hostPath'] !== null)
    .map((v) => String(v['name'] ?? ''));
  return bad.length > 0 ? deny('hostPath volumes', `${pluralize('volume', 'volumes', bad.length)} ${joinQuote(bad)}`) : ALLOWED;
}

function hostPorts(_meta: Json, spec: Json): CheckResult {
  const ports = new Set<string>();
  const bad = badContainers(spec, (c) => {
    const used = arr(c['ports'])
      .map((p) => p['hostPort'])
      .filter((p): p is number => typeof p === 'number' && p !== 0);
    used.forEach((p) => ports.add(String(p)));
    return used.length > 0;
  });
  if (bad.length === 0) return ALLOWED;
  const list = [...ports];
  return deny('hostPort', `${namedContainers(bad)} ${pluralize('uses', 'use', bad.length)} ${pluralize('hostPort', 'hostPorts', list.length)} ${list.join(', ')}`);
}

const APPARMOR_PREFIX = 'container.apparmor.security.beta.kubernetes.io/';

function appArmorProfile(meta: Json): CheckResult {
  const bad: string[] = [];
  for (const [k, v] of Object.entries(obj(meta['annotations']))) {
    if (!k.startsWith(APPARMOR_PREFIX) || typeof v !== 'string') continue;
    if (v !== 'runtime/default' && !v.startsWith('localhost/')) bad.push(`${k}=${JSON.stringify(v)}`);
  }
  if (bad.length === 0) return ALLOWED;
  bad.sort();
  return deny(pluralize('forbidden AppArmor profile', 'forbidden AppArmor profiles', bad.length), bad.join(', '));
}

const SELINUX_TYPES = new Set(['', 'container_t', 'container_init_t', 'container_kvm_t']);

function seLinuxOptions(_meta: Json, spec: Json): CheckResult {
  const types = new Set<string>();
  let user = false;
  let role = false;
  const valid = (o: Json): boolean => {
    let ok = true;
    const type = typeof o['type'] === 'string' ? o['type'] : '';
    if (!SELINUX_TYPES.has(type)) {
      ok = false;
      types.add(type);
    }
    if (typeof o['user'] === 'string' && o['user'] !== '') {
      ok = false;
      user = true;
    }
    if (typeof o['role'] === 'string' && o['role'] !== '') {
      ok = false;
      role = true;
    }
    return ok;
  };
  const setters: string[] = [];
  const podOpts = podCtx(spec)?.['seLinuxOptions'];
  if (isObj(podOpts) && !valid(podOpts)) setters.push('pod');
  const bad = badContainers(spec, (c) => {
    const o = ctx(c)?.['seLinuxOptions'];
    return isObj(o) && !valid(o);
  });
  if (bad.length > 0) setters.push(namedContainers(bad));
  if (setters.length === 0) return ALLOWED;
  const data: string[] = [];
  if (types.size > 0) {
    data.push(`${pluralize('type', 'types', types.size)} ${joinQuote(sorted(types))}`);
    if (user) data.push('user may not be set');
    if (role) data.push('role may not be set');
  }
  return deny('seLinuxOptions', `${setters.join(' and ')} set forbidden securityContext.seLinuxOptions: ${data.join('; ')}`);
}

function procMount(_meta: Json, spec: Json): CheckResult {
  const values = new Set<string>();
  const bad = badContainers(spec, (c) => {
    const pm = ctx(c)?.['procMount'];
    if (typeof pm !== 'string' || pm === 'Default') return false;
    values.add(pm);
    return true;
  });
  if (bad.length === 0) return ALLOWED;
  return deny('procMount', `${namedContainers(bad)} must not set securityContext.procMount to ${joinQuote(sorted(values))}`);
}

const SECCOMP_POD_ANNOTATION = 'seccomp.security.alpha.kubernetes.io/pod';
const SECCOMP_CONTAINER_PREFIX = 'container.seccomp.security.alpha.kubernetes.io/';

/** Baseline before 1.19: the seccomp annotations may not say unconfined. */
function seccompBaselineAnnotations(meta: Json, spec: Json): CheckResult {
  const ann = obj(meta['annotations']);
  const bad: string[] = [];
  if (ann[SECCOMP_POD_ANNOTATION] === 'unconfined') bad.push(`${SECCOMP_POD_ANNOTATION}="unconfined"`);
  for (const c of containers(spec)) {
    const key = SECCOMP_CONTAINER_PREFIX + String(c['name'] ?? '');
    if (ann[key] === 'unconfined') bad.push(`${key}="unconfined"`);
  }
  return bad.length > 0 ? deny('seccompProfile', `forbidden ${pluralize('annotation', 'annotations', bad.length)} ${bad.join(', ')}`) : ALLOWED;
}

/** Baseline from 1.19: securityContext.seccompProfile.type may not be Unconfined. */
function seccompBaseline(_meta: Json, spec: Json): CheckResult {
  const setters: string[] = [];
  if (obj(podCtx(spec)?.['seccompProfile'])['type'] === 'Unconfined') setters.push('pod');
  const bad = badContainers(spec, (c) => obj(ctx(c)?.['seccompProfile'])['type'] === 'Unconfined');
  if (bad.length > 0) setters.push(namedContainers(bad));
  return setters.length > 0 ? deny('seccompProfile', `${setters.join(' and ')} must not set securityContext.seccompProfile.type to "Unconfined"`) : ALLOWED;
}

const SAFE_SYSCTLS = new Set([
  'kernel.shm_rmid_forced',
  'net.ipv4.ip_local_port_range',
  'net.ipv4.tcp_syncookies',
  'net.ipv4.ping_group_range',
  'net.ipv4.ip_unprivileged_port_start',
]);

function sysctls(_meta: Json, spec: Json): CheckResult {
  const bad = arr(podCtx(spec)?.['sysctls'])
    .map((s) => String(s['name'] ?? ''))
    .filter((n) => !SAFE_SYSCTLS.has(n));
  return bad.length > 0 ? deny('forbidden sysctls', bad.join(', ')) : ALLOWED;
}

function windowsHostProcess(_meta: Json, spec: Json): CheckResult {
  const hostProcess = (c: Json | undefined): boolean => obj(c?.['windowsOptions'])['hostProcess'] === true;
  const setters: string[] = [];
  if (hostProcess(podCtx(spec))) setters.push('pod');
  const bad = badContainers(spec, (c) => hostProcess(ctx(c)));
  if (bad.length > 0) setters.push(namedContainers(bad));
  return setters.length > 0 ? deny('hostProcess', `${setters.join(' and ')} must not set securityContext.windowsOptions.hostProcess=true`) : ALLOWED;
}

// --- restricted ---------------------------------------------------------------------------------------------

const RESTRICTED_VOLUME_SOURCES = new Set(['configMap', 'csi', 'downwardAPI', 'emptyDir', 'ephemeral', 'persistentVolumeClaim', 'projected', 'secret']);

function restrictedVolumes(_meta: Json, spec: Json): CheckResult {
  const names: string[] = [];
  const types = new Set<string>();
  for (const v of arr(spec['volumes'])) {
    const sources = Object.keys(v).filter((k) => k !== 'name' && v[k] !== null && v[k] !== undefined);
    const bad = sources.filter((k) => !RESTRICTED_VOLUME_SOURCES.has(k));
    if (bad.length === 0) continue;
    names.push(String(v['name'] ?? ''));
    bad.forEach((k) => types.add(k));
  }
  if (names.length === 0) return ALLOWED;
  return deny(
    'restricted volume types',
    `${pluralize('volume', 'volumes', names.length)} ${joinQuote(names)} ${pluralize('uses', 'use', names.length)} ${pluralize('restricted volume type', 'restricted volume types', types.size)} ${joinQuote(sorted(types))}`,
  );
}

function allowPrivilegeEscalation(_meta: Json, spec: Json): CheckResult {
  const bad = badContainers(spec, (c) => ctx(c)?.['allowPrivilegeEscalation'] !== false);
  return bad.length > 0 ? deny('allowPrivilegeEscalation != false', `${namedContainers(bad)} must set securityContext.allowPrivilegeEscalation=false`) : ALLOWED;
}

/** runAsNonRoot must be true on the pod or on every container, and false nowhere. */
function runAsNonRoot(_meta: Json, spec: Json): CheckResult {
  const setters: string[] = [];
  const podValue = podCtx(spec)?.['runAsNonRoot'];
  if (podValue === false) setters.push('pod');
  const podTrue = podValue === true;
  const explicit: string[] = [];
  const implicit: string[] = [];
  for (const c of containers(spec)) {
    const v = ctx(c)?.['runAsNonRoot'];
    if (typeof v === 'boolean') {
      if (!v) explicit.push(String(c['name'] ?? ''));
    } else if (!podTrue) {
      implicit.push(String(c['name'] ?? ''));
    }
  }
  if (explicit.length > 0) setters.push(namedContainers(explicit));
  if (setters.length > 0) return deny('runAsNonRoot != true', `${setters.join(' and ')} must not set securityContext.runAsNonRoot=false`);
  if (implicit.length > 0) return deny('runAsNonRoot != true', `pod or ${namedContainers(implicit)} must set securityContext.runAsNonRoot=true`);
  return ALLOWED;
}

function runAsUser(_meta: Json, spec: Json): CheckResult {
  const setters: string[] = [];
  if (podCtx(spec)?.['runAsUser'] === 0) setters.push('pod');
  const bad = badContainers(spec, (c) => ctx(c)?.['runAsUser'] === 0);
  if (bad.length > 0) setters.push(namedContainers(bad));
  return setters.length > 0 ? deny('runAsUser=0', `${setters.join(' and ')} must not set runAsUser=0`) : ALLOWED;
}

/** Restricted before 1.19: the seccomp annotations must name runtime/default, docker/default or a localhost profile. */
function seccompRestrictedAnnotations(meta: Json, spec: Json): CheckResult {
  const ann = obj(meta['annotations']);
  const ok = (v: unknown): boolean => v === 'runtime/default' || v === 'docker/default' || (typeof v === 'string' && v.startsWith('localhost/'));
  const podValue = ann[SECCOMP_POD_ANNOTATION];
  const bad: string[] = [];
  if (podValue !== undefined && !ok(podValue)) bad.push(`${SECCOMP_POD_ANNOTATION}=${JSON.stringify(podValue)}`);
  const unset: string[] = [];
  for (const c of containers(spec)) {
    const name = String(c['name'] ?? '');
    const v = ann[SECCOMP_CONTAINER_PREFIX + name];
    if (v !== undefined) {
      if (!ok(v)) bad.push(`${SECCOMP_CONTAINER_PREFIX + name}=${JSON.stringify(v)}`);
    } else if (podValue === undefined || !ok(podValue)) {
      unset.push(name);
    }
  }
  if (bad.length > 0) return deny('seccompProfile', `forbidden ${pluralize('annotation', 'annotations', bad.length)} ${bad.join(', ')}`);
  if (unset.length > 0) return deny('seccompProfile', `pod or ${namedContainers(unset)} must set seccomp annotations to "runtime/default", "docker/default" or "localhost/..."`);
  return ALLOWED;
}

/** Restricted from 1.19: seccompProfile.type RuntimeDefault or Localhost on the pod or on every container. */
function seccompRestricted(_meta: Json, spec: Json): CheckResult {
  const valid = (t: unknown): boolean => t === 'RuntimeDefault' || t === 'Localhost';
  const setters: string[] = [];
  const values = new Set<string>();
  let podSet = false;
  const podProfile = podCtx(spec)?.['seccompProfile'];
  if (isObj(podProfile)) {
    if (!valid(podProfile['type'])) {
      setters.push('pod');
      values.add(String(podProfile['type'] ?? ''));
    } else {
      podSet = true;
    }
  }
  const explicit: string[] = [];
  const implicit: string[] = [];
  for (const c of containers(spec)) {
    const profile = ctx(c)?.['seccompProfile'];
    if (isObj(profile)) {
      if (!valid(profile['type'])) {
        explicit.push(String(c['name'] ?? ''));
        values.add(String(profile['type'] ?? ''));
      }
    } else if (!podSet) {
      implicit.push(String(c['name'] ?? ''));
    }
  }
  if (explicit.length > 0) setters.push(namedContainers(explicit));
  if (setters.length > 0) return deny('seccompProfile', `${setters.join(' and ')} must not set securityContext.seccompProfile.type to ${joinQuote(sorted(values))}`);
  if (implicit.length > 0) {
    return deny('seccompProfile', `pod or ${namedContainers(implicit)} must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"`);
  }
  return ALLOWED;
}

function capabilitiesRestricted(_meta: Json, spec: Json): CheckResult {
  const missingDrop: string[] = [];
  const adding: string[] = [];
  const forbidden = new Set<string>();
  for (const c of containers(spec)) {
    const name = String(c['name'] ?? '');
    const caps = ctx(c)?.['capabilities'];
    if (!isObj(caps)) {
      missingDrop.push(name);
      continue;
    }
    if (!strs(caps['drop']).includes('ALL')) missingDrop.push(name);
    const bad = strs(caps['add']).filter((cap) => cap !== 'NET_BIND_SERVICE');
    bad.forEach((cap) => forbidden.add(cap));
    if (bad.length > 0) adding.push(name);
  }
  const details: string[] = [];
  if (missingDrop.length > 0) details.push(`${namedContainers(missingDrop)} must set securityContext.capabilities.drop=["ALL"]`);
  if (adding.length > 0) details.push(`${namedContainers(adding)} must not include ${joinQuote(sorted(forbidden))} in securityContext.capabilities.add`);
  return details.length > 0 ? deny('unrestricted capabilities', details.join('; ')) : ALLOWED;
}

// --- the table ----------------------------------------------------------------------------------------------

const v = (major: number, minor: number): Version => [major, minor];

/** Every check as of policy version 1.23, in Kubernetes' order: baseline, then restricted, each sorted by id. */
export const CHECKS: readonly Check[] = [
  { id: 'appArmorProfile', level: 'baseline', versions: [{ min: v(1, 0), check: appArmorProfile }] },
  { id: 'capabilities_baseline', level: 'baseline', versions: [{ min: v(1, 0), check: capabilitiesBaseline }] },
  { id: 'hostNamespaces', level: 'baseline', versions: [{ min: v(1, 0), check: hostNamespaces }] },
  { id: 'hostPathVolumes', level: 'baseline', versions: [{ min: v(1, 0), check: hostPathVolumes }] },
  { id: 'hostPorts', level: 'baseline', versions: [{ min: v(1, 0), check: hostPorts }] },
  { id: 'privileged', level: 'baseline', versions: [{ min: v(1, 0), check: privileged }] },
  { id: 'procMount', level: 'baseline', versions: [{ min: v(1, 0), check: procMount }] },
  { id: 'seLinuxOptions', level: 'baseline', versions: [{ min: v(1, 0), check: seLinuxOptions }] },
  {
    id: 'seccompProfile_baseline',
    level: 'baseline',
    versions: [
      { min: v(1, 0), check: seccompBaselineAnnotations },
      { min: v(1, 19), check: seccompBaseline },
    ],
  },
  { id: 'sysctls', level: 'baseline', versions: [{ min: v(1, 0), check: sysctls }] },
  { id: 'windowsHostProcess', level: 'baseline', versions: [{ min: v(1, 0), check: windowsHostProcess }] },
  { id: 'allowPrivilegeEscalation', level: 'restricted', versions: [{ min: v(1, 8), check: allowPrivilegeEscalation }] },
  { id: 'capabilities_restricted', level: 'restricted', versions: [{ min: v(1, 22), check: capabilitiesRestricted }] },
  { id: 'restrictedVolumes', level: 'restricted', versions: [{ min: v(1, 0), check: restrictedVolumes }] },
  { id: 'runAsNonRoot', level: 'restricted', versions: [{ min: v(1, 0), check: runAsNonRoot }] },
  { id: 'runAsUser', level: 'restricted', versions: [{ min: v(1, 23), check: runAsUser }] },
  {
    id: 'seccompProfile_restricted',
    level: 'restricted',
    versions: [
      { min: v(1, 0), check: seccompRestrictedAnnotations },
      { min: v(1, 19), check: seccompRestricted },
    ],
  },
];

const compare = (a: Version, b: Version): number => a[0] - b[0] || a[1] - b[1];

/**
 * Evaluates a pod (metadata and spec) against a level at a version. Answers the failed checks' reasons and
 * details, in table order; empty when the pod is allowed.
 */
export function evaluate(level: Level, version: Version, meta: Json, spec: Json): CheckResult[] {
  if (level === 'privileged') return [];
  const failed: CheckResult[] = [];
  for (const c of CHECKS) {
    if (c.level === 'restricted' && level !== 'restricted') continue;
    let chosen: CheckPod | undefined;
    for (const ver of c.versions) if (compare(ver.min, version) <= 0) chosen = ver.check;
    if (!chosen) continue;
    const r = chosen(meta, spec);
    if (!r.allowed) failed.push(r);
  }
  return failed;
}

/** Kubernetes' AggregateCheckResult.ForbiddenDetail: `reason (detail), reason (detail)`. */
export function forbiddenDetail(failed: readonly CheckResult[]): string {
  return failed.map((r) => (r.detail ? `${r.reason ?? ''} (${r.detail})` : (r.reason ?? ''))).join(', ');
}

/** Kubernetes' AggregateCheckResult.ForbiddenReason: the reasons alone, joined. */
export function forbiddenReason(failed: readonly CheckResult[]): string {
  return failed.map((r) => r.reason ?? '').join(', ');
}
