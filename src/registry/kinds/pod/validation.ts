/**
 * Pod validation as Kubernetes 1.23 does it (pkg/apis/core/validation/validation.go): ValidatePodCreate,
 * ValidatePodSpec and its parts (volumes, containers, init containers, ports, env, mounts, resources,
 * security contexts, DNS, tolerations, host aliases, readiness gates, topology spread constraints),
 * ValidatePodUpdate (what may change) and ValidatePodStatusUpdate, with Kubernetes' field paths and
 * messages. Object metadata is validated by the generic store.
 *
 * Deliberately not checked (rarely met, or checked by components orch does not have): affinity terms,
 * the fields of the in-tree cloud volume sources beyond their presence, Windows options, sysctl names
 * beyond their syntax, seccomp localhost profiles' paths.
 */
import { isIP } from 'node:net';
import type { KObject, StrategyContext } from '../../kind.js';
import { isConfigMapKey } from '../configmap.js';
import { tryParseQuantity, type Quantity } from '../../../util/quantity.js';
import {
  compareBytes,
  duplicate,
  forbidden,
  GoLiteral,
  invalid,
  isDNS1123Label,
  isDNS1123Subdomain,
  isQualifiedName,
  isValidLabelValue,
  notFound,
  notSupported,
  required,
  root,
  validateLabels,
  type FieldError,
  type FieldPath,
} from '../../../util/validation.js';
import { VOLUME_SOURCE_NAMES } from './defaults.js';

type Json = Record<string, any>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const objects = (v: unknown): Json[] => list(v).map((x) => (isObject(x) ? x : {}));
const s = (v: unknown): string => (typeof v === 'string' ? v : '');
const n = (v: unknown): number => (typeof v === 'number' ? v : 0);
const has = (v: unknown): boolean => v !== undefined && v !== null;

const MAX_INT32 = 2147483647;
const inclusiveRange = (lo: number, hi: number) => `must be between ${lo} and ${hi}, inclusive`;

export const POD_UPDATE_FORBIDDEN_MSG =
  'pod updates may not change fields other than `spec.containers[*].image`, `spec.initContainers[*].image`, `spec.activeDeadlineSeconds`, `spec.tolerations` (only additions to existing tolerations) or `spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)';

// ---------------------------------------------------------------------------------------------------
// Small validators of apimachinery's util/validation
// ---------------------------------------------------------------------------------------------------

const dnsLabel = (value: string, path: FieldPath): FieldError[] => isDNS1123Label(value).map((m) => invalid(path, value, m));
const dnsSubdomain = (value: string, path: FieldPath): FieldError[] => isDNS1123Subdomain(value).map((m) => invalid(path, value, m));
const qualifiedName = (value: string, path: FieldPath): FieldError[] => isQualifiedName(value).map((m) => invalid(path, value, m));

/** IsValidPortNum */
function isValidPortNum(port: number): string[] {
  return port >= 1 && port <= 65535 ? [] : [inclusiveRange(1, 65535)];
}

/** IsValidPortName (IANA_SVC_NAME) */
export function isValidPortName(port: string): string[] {
  const errs: string[] = [];
  if (port.length > 15) errs.push('must be no more than 15 characters');
  if (!/^[-a-z0-9]+$/.test(port)) errs.push('must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)');
  if (!/[a-z]/.test(port)) errs.push('must contain at least one letter (a-z)');
  if (port.includes('--')) errs.push('must not contain consecutive hyphens');
  if (port.length > 0 && (port.startsWith('-') || port.endsWith('-'))) errs.push('must not begin or end with a hyphen');
  return errs;
}

/** IsEnvVarName */
export function isEnvVarName(value: string): string[] {
  const errs: string[] = [];
  if (!/^[-._a-zA-Z][-._a-zA-Z0-9]*$/.test(value)) {
    errs.push(
      "a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and must not start with a digit (e.g. 'my.env-name',  or 'MY_ENV.NAME',  or 'MyEnvName1', regex used for validation is '[-._a-zA-Z][-._a-zA-Z0-9]*')",
    );
  }
  if (value === '.') errs.push("must not be '.'");
  else if (value === '..') errs.push("must not be '..'");
  else if (value.startsWith('..')) errs.push("must not start with '..'");
  return errs;
}

/** IsValidUserID / IsValidGroupID */
const idErrors = (id: number): string[] => (id >= 0 && id <= MAX_INT32 ? [] : [inclusiveRange(0, MAX_INT32)]);

function qty(v: unknown): Quantity | null {
  if (typeof v === 'number') return tryParseQuantity(String(v));
  return typeof v === 'string' ? tryParseQuantity(v) : null;
}

// ---------------------------------------------------------------------------------------------------
// Volumes
// ---------------------------------------------------------------------------------------------------

/** validateLocalDescendingPath: relative, without '..' elements. */
function validateLocalDescendingPath(target: string, path: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  if (target.startsWith('/')) errs.push(invalid(path, target, 'must be a relative path'));
  errs.push(...validatePathNoBacksteps(target, path));
  return errs;
}

function validatePathNoBacksteps(target: string, path: FieldPath): FieldError[] {
  return target.split('/').includes('..') ? [invalid(path, target, "must not contain '..'")] : [];
}

function validateMode(mode: unknown, path: FieldPath): FieldError[] {
  if (!has(mode)) return [];
  const m = n(mode);
  return m < 0 || m > 0o777 ? [invalid(path, m, 'must be a number between 0 and 0777 (octal), both inclusive')] : [];
}

function validateKeyToPaths(items: unknown, path: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  objects(items).forEach((kp, i) => {
    const p = path.index(i);
    if (s(kp['key']) === '') errs.push(required(p.child('key'), ''));
    if (s(kp['path']) === '') errs.push(required(p.child('path'), ''));
    errs.push(...validateLocalNonReservedPath(s(kp['path']), p.child('path')));
    errs.push(...validateMode(kp['mode'], p.child('mode')));
  });
  return errs;
}

function validateLocalNonReservedPath(target: string, path: FieldPath): FieldError[] {
  const errs = validateLocalDescendingPath(target, path);
  if (target.startsWith('..')) errs.push(invalid(path, target, "must not start with '..'"));
  return errs;
}

const ENV_FIELD_PATHS = ['metadata.annotations', 'metadata.labels', 'metadata.name', 'metadata.namespace', 'metadata.uid', 'spec.nodeName', 'spec.serviceAccountName', 'status.hostIP', 'status.podIP', 'status.podIPs'];
const VOLUME_FIELD_PATHS = ['metadata.annotations', 'metadata.labels', 'metadata.name', 'metadata.namespace', 'metadata.uid'];
const RESOURCE_FIELD_PATHS = ['limits.cpu', 'limits.ephemeral-storage', 'limits.memory', 'requests.cpu', 'requests.ephemeral-storage', 'requests.memory'];

/** validateObjectFieldSelector */
function validateObjectFieldSelector(ref: Json, allowed: string[], path: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  if (s(ref['apiVersion']) === '') {
    errs.push(required(path.child('apiVersion'), ''));
    return errs;
  }
  if (s(ref['fieldPath']) === '') {
    errs.push(required(path.child('fieldPath'), ''));
    return errs;
  }
  const fp = s(ref['fieldPath']);
  const m = /^(metadata\.(?:annotations|labels))\['(.*)'\]$/.exec(fp);
  if (m) {
    const [, base, key] = m;
    if (!allowed.includes(base!)) errs.push(notSupported(path.child('fieldPath'), fp, allowed));
    else errs.push(...qualifiedName(base === 'metadata.annotations' ? key!.toLowerCase() : key!, path.child('fieldPath')));
  } else if (!allowed.includes(fp) || fp === 'metadata.annotations' || fp === 'metadata.labels') {
    if (!allowed.includes(fp)) errs.push(notSupported(path.child('fieldPath'), fp, allowed));
  }
  return errs;
}

function validateResourceFieldSelector(ref: Json, path: FieldPath, volume: boolean): FieldError[] {
  const errs: FieldError[] = [];
  if (volume && s(ref['containerName']) === '') errs.push(required(path.child('containerName'), ''));
  const resource = s(ref['resource']);
  if (resource === '') errs.push(required(path.child('resource'), ''));
  else if (!RESOURCE_FIELD_PATHS.includes(resource) && !resource.startsWith('limits.hugepages-') && !resource.startsWith('requests.hugepages-')) {
    errs.push(notSupported(path.child('resource'), resource, RESOURCE_FIELD_PATHS));
  }
  return errs;
}

function validateDownwardAPIFiles(items: unknown, path: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  objects(items).forEach((f, i) => {
    const p = path.index(i);
    if (s(f['path']) === '') errs.push(required(p.child('path'), ''));
    errs.push(...validateLocalNonReservedPath(s(f['path']), p.child('path')));
    errs.push(...validateMode(f['mode'], p.child('mode')));
    const hasField = isObject(f['fieldRef']);
    const hasResource = isObject(f['resourceFieldRef']);
    if (hasField) errs.push(...validateObjectFieldSelector(f['fieldRef'], VOLUME_FIELD_PATHS, p.child('fieldRef')));
    if (hasResource) errs.push(...validateResourceFieldSelector(f['resourceFieldRef'], p.child('resourceFieldRef'), true));
    if (hasField && hasResource) errs.push(invalid(p, 'resource', 'fieldRef and resourceFieldRef can not be specified simultaneously'));
    else if (!hasField && !hasResource) errs.push(required(p, 'one of fieldRef and resourceFieldRef is required'));
  });
  return errs;
}

/** validateVolumeSource: exactly one source, and the checks of the common ones. */
function validateVolumeSource(v: Json, path: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  const present = VOLUME_SOURCE_NAMES.filter((k) => has(v[k]));
  if (present.length === 0) return [required(path, 'must specify a volume type')];
  for (const extra of present.slice(1)) errs.push(forbidden(path.child(extra), 'may not specify more than 1 volume type'));
  const kind = present[0]!;
  const src: Json = isObject(v[kind]) ? v[kind] : {};
  const p = path.child(kind);
  switch (kind) {
    case 'hostPath': {
      const hp = s(src['path']);
      if (hp === '') errs.push(required(p.child('path'), ''));
      else errs.push(...validatePathNoBacksteps(hp, p.child('path')));
      const types = ['', 'DirectoryOrCreate', 'Directory', 'FileOrCreate', 'File', 'Socket', 'CharDevice', 'BlockDevice'];
      if (has(src['type']) && !types.includes(s(src['type']))) errs.push(notSupported(p.child('type'), s(src['type']), types));
      break;
    }
    case 'emptyDir': {
      const media = ['', 'Memory', 'HugePages'];
      if (has(src['medium']) && !media.includes(s(src['medium'])) && !s(src['medium']).startsWith('HugePages-')) {
        errs.push(notSupported(p.child('medium'), s(src['medium']), media));
      }
      if (has(src['sizeLimit'])) {
        const q = qty(src['sizeLimit']);
        if (q && q.sign() < 0) errs.push(forbidden(p.child('sizeLimit'), 'SizeLimit field must be a valid resource quantity'));
      }
      break;
    }
    case 'secret':
      if (s(src['secretName']) === '') errs.push(required(p.child('secretName'), ''));
      errs.push(...validateMode(src['defaultMode'], p.child('defaultMode')));
      errs.push(...validateKeyToPaths(src['items'], p.child('items')));
      break;
    case 'configMap':
      if (s(src['name']) === '') errs.push(required(p.child('name'), ''));
      errs.push(...validateMode(src['defaultMode'], p.child('defaultMode')));
      errs.push(...validateKeyToPaths(src['items'], p.child('items')));
      break;
    case 'persistentVolumeClaim':
      if (s(src['claimName']) === '') errs.push(required(p.child('claimName'), ''));
      break;
    case 'downwardAPI':
      errs.push(...validateMode(src['defaultMode'], p.child('defaultMode')));
      errs.push(...validateDownwardAPIFiles(src['items'], p.child('items')));
      break;
    case 'projected':
      errs.push(...validateMode(src['defaultMode'], p.child('defaultMode')));
      objects(src['sources']).forEach((proj, i) => {
        const pp = p.child('sources').index(i);
        const kinds = ['secret', 'configMap', 'downwardAPI', 'serviceAccountToken'].filter((k) => has(proj[k]));
        if (kinds.length > 1) for (const k of kinds.slice(1)) errs.push(forbidden(pp.child(k), 'may not specify more than 1 volume type'));
        if (isObject(proj['secret'])) errs.push(...validateKeyToPaths(proj['secret']['items'], pp.child('secret', 'items')));
        if (isObject(proj['configMap'])) errs.push(...validateKeyToPaths(proj['configMap']['items'], pp.child('configMap', 'items')));
        if (isObject(proj['downwardAPI'])) errs.push(...validateDownwardAPIFiles(proj['downwardAPI']['items'], pp.child('downwardAPI', 'items')));
        if (isObject(proj['serviceAccountToken'])) {
          const t = proj['serviceAccountToken'];
          const tp = pp.child('serviceAccountToken');
          if (n(t['expirationSeconds']) < 600) errs.push(invalid(tp.child('expirationSeconds'), n(t['expirationSeconds']), 'may not specify a duration less than 10 minutes'));
          else if (n(t['expirationSeconds']) > 2 ** 32) errs.push(invalid(tp.child('expirationSeconds'), n(t['expirationSeconds']), 'may not specify a duration larger than 2^32 seconds'));
          if (s(t['path']) === '') errs.push(required(tp.child('path'), ''));
        }
      });
      break;
    case 'nfs':
      if (s(src['server']) === '') errs.push(required(p.child('server'), ''));
      if (s(src['path']) === '') errs.push(required(p.child('path'), ''));
      else if (!s(src['path']).startsWith('/')) errs.push(invalid(p.child('path'), s(src['path']), 'must be an absolute path'));
      break;
    case 'csi':
      if (s(src['driver']) === '') errs.push(required(p.child('driver'), ''));
      break;
    case 'ephemeral':
      if (!isObject(src['volumeClaimTemplate'])) errs.push(required(p.child('volumeClaimTemplate'), ''));
      break;
    default:
      break;
  }
  return errs;
}

/** ValidateVolumes: the names of the valid volumes, and the errors. */
export function validateVolumes(volumes: unknown, path: FieldPath): { names: Map<string, Json>; errs: FieldError[] } {
  const errs: FieldError[] = [];
  const names = new Map<string, Json>();
  objects(volumes).forEach((v, i) => {
    const p = path.index(i);
    const el = validateVolumeSource(v, p);
    const name = s(v['name']);
    if (name === '') el.push(required(p.child('name'), ''));
    else el.push(...dnsLabel(name, p.child('name')));
    if (names.has(name)) el.push(duplicate(p.child('name'), name));
    if (el.length === 0) names.set(name, v);
    else errs.push(...el);
  });
  return { names, errs };
}

// ---------------------------------------------------------------------------------------------------
// Containers
// ---------------------------------------------------------------------------------------------------

function validateContainerPorts(ports: unknown, path: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  const names = new Set<string>();
  objects(ports).forEach((port, i) => {
    const p = path.index(i);
    const name = s(port['name']);
    if (name !== '') {
      const msgs = isValidPortName(name);
      if (msgs.length > 0) for (const m of msgs) errs.push(invalid(p.child('name'), name, m));
      else if (names.has(name)) errs.push(duplicate(p.child('name'), name));
      else names.add(name);
    }
    const cp = n(port['containerPort']);
    if (cp === 0) errs.push(required(p.child('containerPort'), ''));
    else for (const m of isValidPortNum(cp)) errs.push(invalid(p.child('containerPort'), cp, m));
    const hp = n(port['hostPort']);
    if (hp !== 0) for (const m of isValidPortNum(hp)) errs.push(invalid(p.child('hostPort'), hp, m));
    const proto = s(port['protocol']);
    if (proto === '') errs.push(required(p.child('protocol'), ''));
    else if (!['SCTP', 'TCP', 'UDP'].includes(proto)) errs.push(notSupported(p.child('protocol'), proto, ['SCTP', 'TCP', 'UDP']));
  });
  return errs;
}

function validateKeySelector(ref: Json, path: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  const name = s(ref['name']);
  const key = s(ref['key']);
  if (name === '') errs.push(required(path.child('name'), ''));
  if (key === '') errs.push(required(path.child('key'), ''));
  else for (const m of isConfigMapKey(key)) errs.push(invalid(path.child('key'), key, m));
  return errs;
}

function validateEnvVarValueFrom(ev: Json, path: FieldPath): FieldError[] {
  if (!isObject(ev['valueFrom'])) return [];
  const from = ev['valueFrom'];
  const errs: FieldError[] = [];
  let sources = 0;
  if (isObject(from['fieldRef'])) {
    sources++;
    errs.push(...validateObjectFieldSelector(from['fieldRef'], ENV_FIELD_PATHS, path.child('fieldRef')));
  }
  if (isObject(from['resourceFieldRef'])) {
    sources++;
    errs.push(...validateResourceFieldSelector(from['resourceFieldRef'], path.child('resourceFieldRef'), false));
  }
  if (isObject(from['configMapKeyRef'])) {
    sources++;
    errs.push(...validateKeySelector(from['configMapKeyRef'], path.child('configMapKeyRef')));
  }
  if (isObject(from['secretKeyRef'])) {
    sources++;
    errs.push(...validateKeySelector(from['secretKeyRef'], path.child('secretKeyRef')));
  }
  if (sources === 0) errs.push(invalid(path, '', 'must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`'));
  if (s(ev['value']) !== '') {
    if (sources !== 0) errs.push(invalid(path, '', 'may not be specified when `value` is not empty'));
  } else if (sources > 1) {
    errs.push(invalid(path, '', 'may not have more than one field specified at a time'));
  }
  return errs;
}

/** ValidateEnv */
export function validateEnv(env: unknown, path: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  objects(env).forEach((ev, i) => {
    const p = path.index(i);
    const name = s(ev['name']);
    if (name === '') errs.push(required(p.child('name'), ''));
    else for (const m of isEnvVarName(name)) errs.push(invalid(p.child('name'), name, m));
    errs.push(...validateEnvVarValueFrom(ev, p.child('valueFrom')));
  });
  return errs;
}

function validateEnvFrom(envFrom: unknown, path: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  objects(envFrom).forEach((ev, i) => {
    const p = path.index(i);
    const prefix = s(ev['prefix']);
    if (prefix !== '') for (const m of isEnvVarName(prefix)) errs.push(invalid(p.child('prefix'), prefix, m));
    let sources = 0;
    for (const k of ['configMapRef', 'secretRef']) {
      if (!isObject(ev[k])) continue;
      sources++;
      const name = s(ev[k]['name']);
      if (name === '') errs.push(required(p.child(k, 'name'), ''));
      else errs.push(...dnsSubdomain(name, p.child(k, 'name')));
    }
    if (sources === 0) errs.push(invalid(p, '', 'must specify one of: `configMapRef` or `secretRef`'));
    else if (sources > 1) errs.push(invalid(p, '', 'may not have more than one field specified at a time'));
  });
  return errs;
}

function validateVolumeMounts(mounts: unknown, devices: unknown, volumes: Map<string, Json>, path: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  const seen = new Set<string>();
  const deviceNames = new Set(objects(devices).map((d) => s(d['name'])));
  const devicePaths = new Set(objects(devices).map((d) => s(d['devicePath'])));
  objects(mounts).forEach((m, i) => {
    const p = path.index(i);
    const name = s(m['name']);
    const mountPath = s(m['mountPath']);
    if (name === '') errs.push(required(p.child('name'), ''));
    if (!volumes.has(name)) errs.push(notFound(p.child('name'), name));
    if (mountPath === '') errs.push(required(p.child('mountPath'), ''));
    if (seen.has(mountPath)) errs.push(invalid(p.child('mountPath'), mountPath, 'must be unique'));
    seen.add(mountPath);
    if (deviceNames.has(name)) errs.push(invalid(p.child('name'), name, 'must not already exist in volumeDevices'));
    if (devicePaths.has(mountPath)) errs.push(invalid(p.child('mountPath'), mountPath, 'must not already exist as a path in volumeDevices'));
    const subPath = s(m['subPath']);
    const subPathExpr = s(m['subPathExpr']);
    if (subPath !== '') errs.push(...validateLocalDescendingPath(subPath, path.child('subPath')));
    if (subPathExpr !== '') {
      if (subPath !== '') errs.push(invalid(p.child('subPathExpr'), subPathExpr, 'subPathExpr and subPath are mutually exclusive'));
      errs.push(...validateLocalDescendingPath(subPathExpr, path.child('subPathExpr')));
    }
    const prop = m['mountPropagation'];
    if (has(prop)) {
      const modes = ['Bidirectional', 'HostToContainer', 'None'];
      if (!modes.includes(s(prop))) errs.push(notSupported(p.child('mountPropagation'), s(prop), modes));
    }
  });
  return errs;
}

function validateVolumeDevices(devices: unknown, mounts: unknown, volumes: Map<string, Json>, path: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  const names = new Set<string>();
  const paths = new Set<string>();
  const mountNames = new Set(objects(mounts).map((m) => s(m['name'])));
  objects(devices).forEach((d, i) => {
    const p = path.index(i);
    const name = s(d['name']);
    const dp = s(d['devicePath']);
    if (name === '') errs.push(required(p.child('name'), ''));
    if (names.has(name)) errs.push(invalid(p.child('name'), name, 'must be unique'));
    const vol = volumes.get(name);
    if (!vol) errs.push(notFound(p.child('name'), name));
    else if (!has(vol['persistentVolumeClaim']) && !has(vol['ephemeral'])) {
      errs.push(invalid(p.child('name'), name, 'can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode'));
    }
    if (dp === '') errs.push(required(p.child('devicePath'), ''));
    if (paths.has(dp)) errs.push(invalid(p.child('devicePath'), dp, 'must be unique'));
    if (dp !== '' && validatePathNoBacksteps(dp, p.child('devicePath')).length > 0) errs.push(invalid(p.child('devicePath'), dp, 'can not contain backsteps (\'..\')'));
    if (mountNames.has(name)) errs.push(invalid(p.child('name'), name, 'must not already exist in volumeMounts'));
    names.add(name);
    paths.add(dp);
  });
  return errs;
}

const STANDARD_CONTAINER_RESOURCES = ['cpu', 'memory', 'ephemeral-storage'];

function isHugePages(name: string): boolean {
  return name.startsWith('hugepages-');
}

function validateContainerResourceName(name: string, path: FieldPath): FieldError[] {
  const errs = qualifiedName(name, path);
  if (errs.length > 0) return errs;
  if (!name.includes('/')) {
    if (!STANDARD_CONTAINER_RESOURCES.includes(name) && !isHugePages(name)) errs.push(invalid(path, name, 'must be a standard resource for containers'));
  } else if (!name.includes('kubernetes.io/')) {
    if (name.startsWith('requests.') || !/^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/.test(name)) {
      errs.push(invalid(path, name, "doesn't follow extended resource name standard"));
    }
  }
  return errs;
}

/** Resources whose requests may be lower than their limits (cpu, memory, ephemeral-storage and native ones). */
function isOvercommitAllowed(name: string): boolean {
  return (!name.includes('/') || name.includes('kubernetes.io/')) && !isHugePages(name);
}

function validateResourceQuantity(name: string, raw: unknown, path: FieldPath): FieldError[] {
  const q = qty(raw);
  if (!q) return [invalid(path, s(raw), 'quantities must match the regular expression')];
  const errs: FieldError[] = [];
  if (q.sign() < 0) errs.push(invalid(path, q.toString(), 'must be greater than or equal to 0'));
  if ((name.includes('/') && !name.includes('kubernetes.io/')) || name === 'pods') {
    if (q.milliValue() % 1000n !== 0n) errs.push(invalid(path, q.toString(), 'must be an integer'));
  }
  return errs;
}

/** ValidateResourceRequirements (keys in sorted order: Go's map order is random). */
export function validateResourceRequirements(res: unknown, path: FieldPath): FieldError[] {
  const r: Json = isObject(res) ? res : {};
  const limits: Json = isObject(r['limits']) ? r['limits'] : {};
  const requests: Json = isObject(r['requests']) ? r['requests'] : {};
  const limPath = path.child('limits');
  const reqPath = path.child('requests');
  const errs: FieldError[] = [];
  for (const name of Object.keys(limits).sort(compareBytes)) {
    const p = limPath.key(name);
    errs.push(...validateContainerResourceName(name, p), ...validateResourceQuantity(name, limits[name], p));
  }
  for (const name of Object.keys(requests).sort(compareBytes)) {
    const p = reqPath.key(name);
    errs.push(...validateContainerResourceName(name, p), ...validateResourceQuantity(name, requests[name], p));
    const req = qty(requests[name]);
    if (name in limits) {
      const lim = qty(limits[name]);
      if (req && lim) {
        if (req.cmp(lim) !== 0 && !isOvercommitAllowed(name)) errs.push(invalid(reqPath, req.toString(), `must be equal to ${name} limit`));
        else if (req.cmp(lim) > 0) errs.push(invalid(reqPath, req.toString(), `must be less than or equal to ${name} limit`));
      }
    } else if (!isOvercommitAllowed(name)) {
      errs.push(required(limPath, 'Limit must be set for non overcommitable resources'));
    }
  }
  return errs;
}

function validateSeccompProfile(sp: unknown, path: FieldPath): FieldError[] {
  if (!isObject(sp)) return [];
  const type = s(sp['type']);
  const types = ['Localhost', 'RuntimeDefault', 'Unconfined'];
  if (type === '') return [required(path.child('type'), '')];
  if (!types.includes(type)) return [notSupported(path.child('type'), type, types)];
  if (type === 'Localhost' && s(sp['localhostProfile']) === '') return [required(path.child('localhostProfile'), 'must be set when seccomp type is Localhost')];
  if (type !== 'Localhost' && has(sp['localhostProfile'])) return [invalid(path.child('localhostProfile'), s(sp['localhostProfile']), 'can only be set when seccomp type is Localhost')];
  return [];
}

/** ValidateSecurityContext (a container's). */
function validateSecurityContext(sc: unknown, path: FieldPath, ctx: StrategyContext): FieldError[] {
  if (!isObject(sc)) return [];
  const errs: FieldError[] = [];
  if (sc['privileged'] === true && !ctx.settings?.allowPrivileged) errs.push(forbidden(path.child('privileged'), 'disallowed by cluster policy'));
  for (const f of ['runAsUser', 'runAsGroup']) {
    if (has(sc[f])) for (const m of idErrors(n(sc[f]))) errs.push(invalid(path.child(f), n(sc[f]), m));
  }
  if (has(sc['procMount']) && !['Default', 'Unmasked'].includes(s(sc['procMount']))) {
    errs.push(notSupported(path.child('procMount'), s(sc['procMount']), ['Default', 'Unmasked']));
  }
  errs.push(...validateSeccompProfile(sc['seccompProfile'], path.child('seccompProfile')));
  if (sc['allowPrivilegeEscalation'] === false) {
    if (sc['privileged'] === true) errs.push(invalid(path, new GoLiteral('core.SecurityContext'), 'cannot set `allowPrivilegeEscalation` to false and `privileged` to true'));
    const add = isObject(sc['capabilities']) ? list(sc['capabilities']['add']) : [];
    if (add.includes('CAP_SYS_ADMIN')) errs.push(invalid(path, new GoLiteral('core.SecurityContext'), 'cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN'));
  }
  return errs;
}

function validateHandler(h: unknown, path: FieldPath, kinds: string[]): FieldError[] {
  const handler: Json = isObject(h) ? h : {};
  const present = kinds.filter((k) => isObject(handler[k]));
  const errs: FieldError[] = [];
  if (present.length === 0) return [required(path, 'must specify a handler type')];
  for (const k of present.slice(1)) errs.push(forbidden(path.child(k), 'may not specify more than 1 handler type'));
  const k = present[0]!;
  const a: Json = handler[k];
  const p = path.child(k);
  if (k === 'exec' && list(a['command']).length === 0) errs.push(required(p.child('command'), ''));
  if (k === 'httpGet' || k === 'tcpSocket') {
    const port = a['port'];
    if (typeof port === 'number') {
      for (const m of isValidPortNum(port)) errs.push(invalid(p.child('port'), port, m));
    } else if (typeof port === 'string') {
      for (const m of isValidPortName(port)) errs.push(invalid(p.child('port'), port, m));
    } else errs.push(invalid(p.child('port'), 0, inclusiveRange(1, 65535)));
    if (k === 'httpGet') {
      if (s(a['path']) === '') errs.push(required(p.child('path'), ''));
      const schemes = ['HTTP', 'HTTPS'];
      if (!schemes.includes(s(a['scheme']))) errs.push(notSupported(p.child('scheme'), s(a['scheme']), schemes));
    }
  }
  if (k === 'grpc') for (const m of isValidPortNum(n(a['port']))) errs.push(invalid(p.child('port'), n(a['port']), m));
  return errs;
}

function validateProbe(probe: unknown, path: FieldPath): FieldError[] {
  if (!isObject(probe)) return [];
  const errs = validateHandler(probe, path, ['exec', 'httpGet', 'tcpSocket', 'grpc']);
  for (const f of ['initialDelaySeconds', 'timeoutSeconds', 'periodSeconds', 'successThreshold', 'failureThreshold']) {
    if (n(probe[f]) < 0) errs.push(invalid(path.child(f), n(probe[f]), 'must be greater than or equal to 0'));
  }
  if (has(probe['terminationGracePeriodSeconds']) && n(probe['terminationGracePeriodSeconds']) <= 0) {
    errs.push(invalid(path.child('terminationGracePeriodSeconds'), n(probe['terminationGracePeriodSeconds']), 'must be greater than 0'));
  }
  return errs;
}

function validatePullPolicy(policy: unknown, path: FieldPath): FieldError[] {
  const p = s(policy);
  if (['Always', 'IfNotPresent', 'Never'].includes(p)) return [];
  if (p === '') return [required(path, '')];
  return [notSupported(path, p, ['Always', 'IfNotPresent', 'Never'])];
}

/** The checks every container (regular, init, ephemeral) gets: validateContainerCommon. */
function validateContainer(c: Json, p: FieldPath, volumes: Map<string, Json>, ctx: StrategyContext): FieldError[] {
  const errs: FieldError[] = [];
  if (s(c['image']) === '') errs.push(required(p.child('image'), ''));
  if (isObject(c['lifecycle'])) {
    for (const h of ['postStart', 'preStop']) {
      if (has(c['lifecycle'][h])) errs.push(...validateHandler(c['lifecycle'][h], p.child('lifecycle', h), ['exec', 'httpGet', 'tcpSocket']));
    }
  }
  errs.push(...validateProbe(c['livenessProbe'], p.child('livenessProbe')));
  if (isObject(c['readinessProbe']) && has(c['readinessProbe']['terminationGracePeriodSeconds'])) {
    errs.push(invalid(p.child('readinessProbe', 'terminationGracePeriodSeconds'), c['readinessProbe']['terminationGracePeriodSeconds'], 'must not be set for readinessProbes'));
  }
  errs.push(...validateProbe(c['readinessProbe'], p.child('readinessProbe')));
  if (isObject(c['livenessProbe']) && n(c['livenessProbe']['successThreshold']) !== 1) {
    errs.push(invalid(p.child('livenessProbe', 'successThreshold'), n(c['livenessProbe']['successThreshold']), 'must be 1'));
  }
  errs.push(...validateProbe(c['startupProbe'], p.child('startupProbe')));
  if (isObject(c['startupProbe']) && n(c['startupProbe']['successThreshold']) !== 1) {
    errs.push(invalid(p.child('startupProbe', 'successThreshold'), n(c['startupProbe']['successThreshold']), 'must be 1'));
  }
  const tmp = s(c['terminationMessagePolicy']);
  if (tmp === '') errs.push(required(p.child('terminationMessagePolicy'), "must be 'File' or 'FallbackToLogsOnError'"));
  else if (tmp !== 'File' && tmp !== 'FallbackToLogsOnError') errs.push(invalid(p.child('terminationMessagePolicy'), tmp, "must be 'File' or 'FallbackToLogsOnError'"));
  errs.push(...validateContainerPorts(c['ports'], p.child('ports')));
  errs.push(...validateEnv(c['env'], p.child('env')));
  errs.push(...validateEnvFrom(c['envFrom'], p.child('envFrom')));
  errs.push(...validateVolumeMounts(c['volumeMounts'], c['volumeDevices'], volumes, p.child('volumeMounts')));
  errs.push(...validateVolumeDevices(c['volumeDevices'], c['volumeMounts'], volumes, p.child('volumeDevices')));
  errs.push(...validatePullPolicy(c['imagePullPolicy'], p.child('imagePullPolicy')));
  errs.push(...validateResourceRequirements(c['resources'], p.child('resources')));
  errs.push(...validateSecurityContext(c['securityContext'], p.child('securityContext'), ctx));
  return errs;
}

/** checkHostPortConflicts: protocol/hostIP/hostPort unique across the given containers. */
function checkHostPortConflicts(containers: Json[], path: FieldPath, offsets: number[]): FieldError[] {
  const errs: FieldError[] = [];
  const seen = new Set<string>();
  containers.forEach((c, ci) => {
    objects(c['ports']).forEach((port, pi) => {
      const hp = n(port['hostPort']);
      if (hp === 0) return;
      const key = `${s(port['protocol'])}/${s(port['hostIP'])}/${hp}`;
      if (seen.has(key)) errs.push(duplicate(path.index(offsets[ci] ?? ci).child('ports').index(pi).child('hostPort'), key));
      else seen.add(key);
    });
  });
  return errs;
}

/** validateContainers (regular containers). */
function validateContainers(containers: unknown, volumes: Map<string, Json>, path: FieldPath, ctx: StrategyContext): FieldError[] {
  const cs = objects(containers);
  if (cs.length === 0) return [required(path, '')];
  const errs: FieldError[] = [];
  const names = new Set<string>();
  cs.forEach((c, i) => {
    const p = path.index(i);
    const name = s(c['name']);
    if (name === '') errs.push(required(p.child('name'), ''));
    else errs.push(...dnsLabel(name, p.child('name')));
    if (names.has(name)) errs.push(duplicate(p.child('name'), name));
    else names.add(name);
    errs.push(...validateContainer(c, p, volumes, ctx));
  });
  errs.push(...checkHostPortConflicts(cs, path, cs.map((_, i) => i)));
  return errs;
}

/** validateInitContainers: as containers, names unique across both lists, no lifecycle or probes. */
function validateInitContainers(init: unknown, containers: unknown, volumes: Map<string, Json>, path: FieldPath, ctx: StrategyContext): FieldError[] {
  const cs = objects(init);
  if (cs.length === 0) return [];
  const errs: FieldError[] = [];
  const names = new Set(objects(containers).map((c) => s(c['name'])));
  const own = new Set<string>();
  cs.forEach((c, i) => {
    const p = path.index(i);
    const name = s(c['name']);
    if (name === '') errs.push(required(p.child('name'), ''));
    else errs.push(...dnsLabel(name, p.child('name')));
    if (own.has(name)) errs.push(duplicate(p.child('name'), name));
    own.add(name);
    errs.push(...validateContainer(c, p, volumes, ctx));
    if (names.has(name)) errs.push(duplicate(p.child('name'), name));
    else if (name !== '') names.add(name);
    for (const f of ['lifecycle', 'livenessProbe', 'readinessProbe', 'startupProbe']) {
      if (has(c[f])) errs.push(forbidden(p.child(f), 'must not be set for init containers'));
    }
  });
  cs.forEach((c, i) => errs.push(...checkHostPortConflicts([c], path, [i])));
  return errs;
}

/** The EphemeralContainerCommon fields an ephemeral container may not set (1.23's allowedEphemeralContainerFields), in field order. */
const EPHEMERAL_FORBIDDEN_FIELDS = ['ports', 'resources', 'livenessProbe', 'readinessProbe', 'startupProbe', 'lifecycle'];

/** A Go zero value: absent, null, false, 0, '', or an empty list or object (nil maps and slices). */
const isZero = (v: unknown): boolean =>
  v === undefined || v === null || v === false || v === 0 || v === '' || (Array.isArray(v) && v.length === 0) || (isObject(v) && Object.values(v).every(isZero));

/**
 * validateEphemeralContainers (1.23): each is checked as a one-container list (so its paths carry a second
 * index, as 1.23's do), names are unique across every container list, targetContainerName names a container
 * listed before it, and ports, resources, probes and lifecycle are forbidden.
 */
function validateEphemeralContainers(spec: Json, volumes: Map<string, Json>, path: FieldPath, ctx: StrategyContext): FieldError[] {
  const ecs = objects(spec['ephemeralContainers']);
  const errs: FieldError[] = [];
  if (ecs.length === 0) return errs;
  const names = new Set([...objects(spec['containers']), ...objects(spec['initContainers'])].map((c) => s(c['name'])));
  ecs.forEach((ec, i) => {
    const p = path.index(i);
    const target = s(ec['targetContainerName']);
    if (target !== '' && !names.has(target)) errs.push(notFound(p.child('targetContainerName'), target));
    const name = s(ec['name']);
    if (name === '') {
      errs.push(required(p, 'ephemeralContainer requires a name'));
      return;
    }
    const common: Json = { ...ec };
    delete common['targetContainerName'];
    errs.push(...validateContainers([common], volumes, p, ctx));
    const image = s(ec['image']);
    if (image.trim() !== image) errs.push(invalid(p.index(0).child('image'), image, 'must not have leading or trailing whitespace'));
    if (names.has(name)) errs.push(duplicate(p.child('name'), name));
    else names.add(name);
    for (const f of EPHEMERAL_FORBIDDEN_FIELDS) if (!isZero(ec[f])) errs.push(forbidden(p.child(f), 'cannot be set for an Ephemeral Container'));
  });
  return errs;
}

/**
 * ValidatePodEphemeralContainersUpdate (pods/ephemeralcontainers, 1.23): the new list is valid, and every
 * existing ephemeral container is still there, unchanged (matched by name: a patch may reorder them).
 */
export function validatePodEphemeralContainersUpdate(obj: KObject, old: KObject, ctx: StrategyContext): FieldError[] {
  const spec: Json = isObject(obj.spec) ? obj.spec : {};
  const oldSpec: Json = isObject(old.spec) ? old.spec : {};
  const path = root('spec', 'ephemeralContainers');
  const { names: volumes } = validateVolumes(spec['volumes'], root('spec', 'volumes'));
  const errs = validateEphemeralContainers(spec, volumes, path, ctx);
  const byName = new Map(objects(spec['ephemeralContainers']).map((c) => [s(c['name']), c]));
  for (const prev of objects(oldSpec['ephemeralContainers'])) {
    const name = s(prev['name']);
    const next = byName.get(name);
    if (!next) errs.push(forbidden(path, `existing ephemeral containers ${JSON.stringify(name)} may not be removed\n`));
    else if (!deepEqual(prev, next)) {
      errs.push(forbidden(path.child(name), `existing ephemeral containers ${JSON.stringify(name)} may not be changed\n${specDiff(next, prev, name).join('\n')}`));
    }
  }
  return errs;
}

// ---------------------------------------------------------------------------------------------------
// The pod spec
// ---------------------------------------------------------------------------------------------------

function validateRestartPolicy(v: unknown, path: FieldPath): FieldError[] {
  const p = s(v);
  const valid = ['Always', 'OnFailure', 'Never'];
  if (valid.includes(p)) return [];
  if (p === '') return [required(path, '')];
  return [notSupported(path, p, valid)];
}

function validateDNSPolicy(v: unknown, path: FieldPath): FieldError[] {
  const p = s(v);
  const valid = ['ClusterFirstWithHostNet', 'ClusterFirst', 'Default', 'None'];
  if (valid.includes(p)) return [];
  if (p === '') return [required(path, '')];
  return [notSupported(path, p, valid)];
}

function validatePodDNSConfig(cfg: unknown, policy: string, path: FieldPath): FieldError[] {
  if (policy === 'None' && !isObject(cfg)) return [required(path, 'must provide `dnsConfig` when `dnsPolicy` is None')];
  if (!isObject(cfg)) return [];
  const errs: FieldError[] = [];
  const ns = list(cfg['nameservers']).map(s);
  if (policy === 'None' && ns.length === 0) errs.push(required(path.child('nameservers'), 'must provide at least one DNS nameserver when `dnsPolicy` is None'));
  if (ns.length > 3) errs.push(invalid(path.child('nameservers'), ns, 'must not have more than 3 nameservers'));
  ns.forEach((ip, i) => {
    if (isIP(ip) === 0) errs.push(invalid(path.child('nameservers').index(i), ip, 'must be valid IP address'));
  });
  const searches = list(cfg['searches']).map(s);
  if (searches.length > 6) errs.push(invalid(path.child('searches'), searches, 'must not have more than 6 search paths'));
  searches.forEach((d, i) => errs.push(...dnsSubdomain(d.endsWith('.') ? d.slice(0, -1) : d, path.child('searches').index(i))));
  objects(cfg['options']).forEach((o, i) => {
    if (s(o['name']) === '') errs.push(required(path.child('options').index(i), 'Option.Name must not be empty'));
  });
  return errs;
}

/** ValidatePodSecurityContext */
function validatePodSecurityContext(spec: Json, path: FieldPath): FieldError[] {
  const sc: Json = isObject(spec['securityContext']) ? spec['securityContext'] : {};
  const errs: FieldError[] = [];
  for (const f of ['fsGroup', 'runAsUser', 'runAsGroup']) {
    if (has(sc[f])) for (const m of idErrors(n(sc[f]))) errs.push(invalid(path.child(f), n(sc[f]), m));
  }
  list(sc['supplementalGroups']).forEach((g, i) => {
    for (const m of idErrors(n(g))) errs.push(invalid(path.child('supplementalGroups').index(i), n(g), m));
  });
  if (spec['hostPID'] === true && spec['shareProcessNamespace'] === true) {
    errs.push(invalid(path.child('shareProcessNamespace'), true, 'ShareProcessNamespace and HostPID cannot both be enabled'));
  }
  objects(sc['sysctls']).forEach((sysctl, i) => {
    const p = path.child('sysctls').index(i);
    const name = s(sysctl['name']);
    if (name === '') errs.push(required(p.child('name'), ''));
    else if (!/^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$/.test(name) || name.length > 253) {
      errs.push(invalid(p.child('name'), name, "must have at most 253 characters and match regex ^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$"));
    }
  });
  if (has(sc['fsGroupChangePolicy']) && !['OnRootMismatch', 'Always'].includes(s(sc['fsGroupChangePolicy']))) {
    errs.push(notSupported(path.child('fsGroupChangePolicy'), s(sc['fsGroupChangePolicy']), ['OnRootMismatch', 'Always']));
  }
  errs.push(...validateSeccompProfile(sc['seccompProfile'], path.child('seccompProfile')));
  return errs;
}

/** validateHostNetwork: with hostNetwork, every containerPort equals its hostPort. */
function validateHostNetwork(spec: Json, path: FieldPath): FieldError[] {
  if (spec['hostNetwork'] !== true) return [];
  const errs: FieldError[] = [];
  objects(spec['containers']).forEach((c, ci) => {
    objects(c['ports']).forEach((port, pi) => {
      if (n(port['hostPort']) !== n(port['containerPort'])) {
        errs.push(invalid(path.index(ci).child('ports').index(pi).child('containerPort'), n(port['containerPort']), 'must match `hostPort` when `hostNetwork` is true'));
      }
    });
  });
  return errs;
}

/** ValidateTolerations */
export function validateTolerations(tolerations: unknown, path: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  objects(tolerations).forEach((t, i) => {
    const p = path.index(i);
    const key = s(t['key']);
    const op = s(t['operator']);
    const value = s(t['value']);
    const effect = s(t['effect']);
    if (key !== '') errs.push(...qualifiedName(key, p.child('key')));
    if (key === '' && op !== 'Exists') {
      errs.push(invalid(p.child('operator'), op, 'operator must be Exists when `key` is empty, which means "match all values and all keys"'));
    }
    if (has(t['tolerationSeconds']) && effect !== 'NoExecute') {
      errs.push(invalid(p.child('effect'), effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"));
    }
    if (op === 'Equal' || op === '') {
      const vErrs = isValidLabelValue(value);
      if (vErrs.length > 0) errs.push(invalid(p.child('operator'), value, vErrs.join(';')));
    } else if (op === 'Exists') {
      if (value !== '') errs.push(invalid(p.child('operator'), new GoLiteral('core.Toleration'), "value must be empty when `operator` is 'Exists'"));
    } else {
      errs.push(notSupported(p.child('operator'), op, ['Equal', 'Exists']));
    }
    const effects = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'];
    if (effect !== '' && !effects.includes(effect)) errs.push(notSupported(p.child('effect'), effect, effects));
  });
  return errs;
}

function validateHostAliases(aliases: unknown, path: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  objects(aliases).forEach((a, i) => {
    const ip = s(a['ip']);
    if (isIP(ip) === 0) errs.push(invalid(path.index(i).child('ip'), ip, 'must be valid IP address'));
    list(a['hostnames']).forEach((h, j) => errs.push(...dnsSubdomain(s(h), path.index(i).child('hostnames').index(j))));
  });
  return errs;
}

function validateTopologySpreadConstraints(constraints: unknown, path: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  const seen = new Set<string>();
  objects(constraints).forEach((c, i) => {
    const p = path.index(i);
    if (n(c['maxSkew']) <= 0) errs.push(invalid(p.child('maxSkew'), n(c['maxSkew']), 'must be greater than zero'));
    const key = s(c['topologyKey']);
    if (key === '') errs.push(required(p.child('topologyKey'), 'can not be empty'));
    else errs.push(...qualifiedName(key, p.child('topologyKey')));
    const when = s(c['whenUnsatisfiable']);
    const valid = ['DoNotSchedule', 'ScheduleAnyway'];
    if (!valid.includes(when)) errs.push(notSupported(p.child('whenUnsatisfiable'), when, valid));
    const pair = `${key}/${when}`;
    if (seen.has(pair)) errs.push(duplicate(p.child('{topologyKey, whenUnsatisfiable}'), `{${key}, ${when}}`));
    seen.add(pair);
  });
  return errs;
}

/** ValidatePodSpec */
export function validatePodSpec(spec: Json, path: FieldPath, ctx: StrategyContext): FieldError[] {
  const { names: volumes, errs } = validateVolumes(spec['volumes'], path.child('volumes'));
  errs.push(...validateContainers(spec['containers'], volumes, path.child('containers'), ctx));
  errs.push(...validateInitContainers(spec['initContainers'], spec['containers'], volumes, path.child('initContainers'), ctx));
  errs.push(...validateEphemeralContainers(spec, volumes, path.child('ephemeralContainers'), ctx));
  errs.push(...validateRestartPolicy(spec['restartPolicy'], path.child('restartPolicy')));
  errs.push(...validateDNSPolicy(spec['dnsPolicy'], path.child('dnsPolicy')));
  errs.push(...validateLabels(spec['nodeSelector'], path.child('nodeSelector')));
  errs.push(...validatePodSecurityContext(spec, path.child('securityContext')));
  errs.push(...validateHostNetwork(spec, path.child('containers')));
  objects(spec['imagePullSecrets']).forEach((r, i) => {
    if (s(r['name']) === '') errs.push(required(path.child('imagePullSecrets').index(i).child('name'), ''));
  });
  errs.push(...validatePodDNSConfig(spec['dnsConfig'], s(spec['dnsPolicy']), path.child('dnsConfig')));
  objects(spec['readinessGates']).forEach((g, i) => errs.push(...qualifiedName(s(g['conditionType']), path.child('readinessGates').index(i).child('conditionType'))));
  errs.push(...validateTopologySpreadConstraints(spec['topologySpreadConstraints'], path.child('topologySpreadConstraints')));
  const sa = s(spec['serviceAccountName']);
  if (sa !== '') errs.push(...dnsSubdomain(sa, path.child('serviceAccountName')));
  const node = s(spec['nodeName']);
  if (node !== '') errs.push(...dnsSubdomain(node, path.child('nodeName')));
  if (has(spec['activeDeadlineSeconds'])) {
    const v = n(spec['activeDeadlineSeconds']);
    if (v < 1 || v > MAX_INT32) errs.push(invalid(path.child('activeDeadlineSeconds'), v, inclusiveRange(1, MAX_INT32)));
  }
  if (s(spec['hostname']) !== '') errs.push(...dnsLabel(s(spec['hostname']), path.child('hostname')));
  if (s(spec['subdomain']) !== '') errs.push(...dnsLabel(s(spec['subdomain']), path.child('subdomain')));
  errs.push(...validateTolerations(spec['tolerations'], path.child('tolerations')));
  errs.push(...validateHostAliases(spec['hostAliases'], path.child('hostAliases')));
  const pc = s(spec['priorityClassName']);
  if (pc !== '') errs.push(...dnsSubdomain(pc, path.child('priorityClassName')));
  if (has(spec['runtimeClassName'])) errs.push(...dnsSubdomain(s(spec['runtimeClassName']), path.child('runtimeClassName')));
  if (has(spec['preemptionPolicy'])) {
    const valid = ['Never', 'PreemptLowerPriority'];
    if (!valid.includes(s(spec['preemptionPolicy']))) errs.push(notSupported(path.child('preemptionPolicy'), s(spec['preemptionPolicy']), valid));
  }
  if (isObject(spec['overhead'])) {
    for (const k of Object.keys(spec['overhead']).sort(compareBytes)) errs.push(...validateResourceQuantity(k, spec['overhead'][k], path.child('overhead').key(k)));
  }
  if (isObject(spec['os'])) {
    const valid = ['linux', 'windows'];
    if (s(spec['os']['name']) === '') errs.push(required(path.child('os', 'name'), ''));
    else if (!valid.includes(s(spec['os']['name']))) errs.push(notSupported(path.child('os', 'name'), s(spec['os']['name']), valid));
  }
  return errs;
}

/** validatePodIPs: every IP valid; several are one per family, no duplicates. */
export function validatePodIPs(obj: KObject): FieldError[] {
  const status: Json = isObject(obj.status) ? obj.status : {};
  const ips = objects(status['podIPs']).map((p) => s(p['ip']));
  const path = root('status', 'podIPs');
  const errs: FieldError[] = [];
  ips.forEach((ip, i) => {
    if (isIP(ip) === 0) errs.push(invalid(path.index(i), ip, 'must be a valid IP address'));
  });
  if (ips.length > 1) {
    const families = new Set(ips.map((ip) => isIP(ip)));
    if (ips.length > 2 || families.size !== 2) errs.push(invalid(path, ips, 'may specify no more than one IP for each IP family'));
    const seen = new Set<string>();
    ips.forEach((ip, i) => {
      if (seen.has(ip)) errs.push(duplicate(path.index(i), ip));
      seen.add(ip);
    });
  }
  return errs;
}

/** ValidatePodCreate, without the object metadata. */
export function validatePodCreate(obj: KObject, ctx: StrategyContext): FieldError[] {
  const spec: Json = isObject(obj.spec) ? obj.spec : {};
  const errs = validatePodSpec(spec, root('spec'), ctx);
  if (list(spec['ephemeralContainers']).length > 0) errs.push(forbidden(root('spec', 'ephemeralContainers'), 'cannot be set on create'));
  errs.push(...validatePodIPs(obj));
  return errs;
}

// ---------------------------------------------------------------------------------------------------
// Updates
// ---------------------------------------------------------------------------------------------------

const deepEqual = (a: unknown, b: unknown): boolean => JSON.stringify(canonical(a)) === JSON.stringify(canonical(b));

/** A value with object keys sorted and empty values dropped, for semantic equality (nil and empty alike). */
function canonical(v: unknown): unknown {
  if (Array.isArray(v)) return v.length === 0 ? undefined : v.map(canonical);
  if (isObject(v)) {
    const out: Json = {};
    for (const k of Object.keys(v).sort()) {
      const c = canonical(v[k]);
      if (c !== undefined && c !== null) out[k] = c;
    }
    return Object.keys(out).length === 0 ? undefined : out;
  }
  return v;
}

/** ValidateContainerUpdates: same number of containers, images present and trimmed; stop on a count change. */
function validateContainerUpdates(next: unknown, prev: unknown, path: FieldPath): { errs: FieldError[]; stop: boolean } {
  const a = objects(next);
  const b = objects(prev);
  if (a.length !== b.length) return { errs: [forbidden(path, 'pod updates may not add or remove containers')], stop: true };
  const errs: FieldError[] = [];
  a.forEach((c, i) => {
    const image = s(c['image']);
    if (image === '') errs.push(required(path.index(i).child('image'), ''));
    if (image.trim() !== image) errs.push(invalid(path.index(i).child('image'), image, 'must not have leading or trailing whitespace'));
  });
  return { errs, stop: false };
}

/** validateOnlyAddedTolerations */
function validateOnlyAddedTolerations(next: unknown, prev: unknown, path: FieldPath): FieldError[] {
  const nt = objects(next);
  for (const old of objects(prev)) {
    const found = nt.some((t) => deepEqual({ ...old, tolerationSeconds: t['tolerationSeconds'] }, t));
    if (!found) return [forbidden(path, 'existing toleration can not be modified except its tolerationSeconds')];
  }
  return validateTolerations(next, path);
}

/** A short description of how two specs differ, in the spirit of Kubernetes' cmp diff (paths, then values). */
export function specDiff(a: unknown, b: unknown, path = 'spec'): string[] {
  if (deepEqual(a, b)) return [];
  if (isObject(a) && isObject(b)) {
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
    return keys.flatMap((k) => specDiff(a[k], b[k], `${path}.${k}`));
  }
  if (Array.isArray(a) && Array.isArray(b) && a.length === b.length) return a.flatMap((x, i) => specDiff(x, b[i], `${path}[${i}]`));
  return [`  ${path}:\n  - ${JSON.stringify(b ?? null)}\n  + ${JSON.stringify(a ?? null)}`];
}

/** ValidatePodUpdate, without the object metadata (validated by the store). */
export function validatePodUpdate(obj: KObject, old: KObject, ctx: StrategyContext): FieldError[] {
  const spec: Json = isObject(obj.spec) ? obj.spec : {};
  const oldSpec: Json = isObject(old.spec) ? old.spec : {};
  const errs = validatePodSpec(spec, root('spec'), ctx);
  const specPath = root('spec');
  for (const f of ['containers', 'initContainers']) {
    const r = validateContainerUpdates(spec[f], oldSpec[f], specPath.child(f));
    errs.push(...r.errs);
    if (r.stop) return errs;
  }
  if (has(spec['activeDeadlineSeconds'])) {
    const v = n(spec['activeDeadlineSeconds']);
    if (v < 0 || v > MAX_INT32) {
      errs.push(invalid(specPath.child('activeDeadlineSeconds'), v, inclusiveRange(0, MAX_INT32)));
      return errs;
    }
    if (has(oldSpec['activeDeadlineSeconds']) && n(oldSpec['activeDeadlineSeconds']) < v) {
      errs.push(invalid(specPath.child('activeDeadlineSeconds'), v, 'must be less than or equal to previous value'));
      return errs;
    }
  } else if (has(oldSpec['activeDeadlineSeconds'])) {
    errs.push(invalid(specPath.child('activeDeadlineSeconds'), new GoLiteral('nil'), 'must not update from a positive integer to nil value'));
  }
  errs.push(...validateOnlyAddedTolerations(spec['tolerations'], oldSpec['tolerations'], specPath.child('tolerations')));
  if (deepEqual(spec, oldSpec)) return errs;
  const munged: Json = structuredClone(spec);
  for (const f of ['containers', 'initContainers']) {
    const olds = objects(oldSpec[f]);
    munged[f] = objects(munged[f]).map((c, i) => ({ ...c, image: olds[i]?.['image'] }));
  }
  if (has(oldSpec['activeDeadlineSeconds'])) munged['activeDeadlineSeconds'] = oldSpec['activeDeadlineSeconds'];
  else delete munged['activeDeadlineSeconds'];
  if (has(oldSpec['tolerations'])) munged['tolerations'] = oldSpec['tolerations'];
  else delete munged['tolerations'];
  const oldGrace = oldSpec['terminationGracePeriodSeconds'];
  if (typeof oldGrace === 'number' && oldGrace < 0 && munged['terminationGracePeriodSeconds'] === 1) munged['terminationGracePeriodSeconds'] = oldGrace;
  if (!deepEqual(munged, oldSpec)) {
    errs.push(forbidden(specPath, `${POD_UPDATE_FORBIDDEN_MSG}\n${specDiff(munged, oldSpec).join('\n')}`));
  }
  return errs;
}

/** The condition types the system sets; others must be qualified names. */
const SYSTEM_CONDITIONS = new Set(['PodScheduled', 'Ready', 'Initialized', 'ContainersReady']);

/** ValidateContainerStateTransition: with restartPolicy Never, a terminated container stays terminated. */
function validateContainerStateTransition(next: unknown, prev: unknown, path: FieldPath, restartPolicy: string): FieldError[] {
  if (restartPolicy !== 'Never') return [];
  const errs: FieldError[] = [];
  const olds = new Map(objects(prev).map((c) => [s(c['name']), c]));
  objects(next).forEach((c, i) => {
    const o = olds.get(s(c['name']));
    const wasTerminated = o && isObject(o['state']) && isObject(o['state']['terminated']);
    const isTerminated = isObject(c['state']) && isObject(c['state']['terminated']);
    if (wasTerminated && !isTerminated) errs.push(forbidden(path.index(i).child('state'), 'may not be transitioned to non-terminated state'));
  });
  return errs;
}

/** ValidatePodStatusUpdate, without the object metadata (validated by the store). */
export function validatePodStatusUpdate(obj: KObject, old: KObject): FieldError[] {
  const status: Json = isObject(obj.status) ? obj.status : {};
  const oldSpec: Json = isObject(old.spec) ? old.spec : {};
  const spec: Json = isObject(obj.spec) ? obj.spec : {};
  const errs: FieldError[] = [];
  objects(status['conditions']).forEach((c, i) => {
    const t = s(c['type']);
    if (!SYSTEM_CONDITIONS.has(t)) errs.push(...qualifiedName(t, root('status', 'conditions').index(i).child('Type')));
  });
  const path = root('status');
  if (s(spec['nodeName']) !== s(oldSpec['nodeName'])) errs.push(forbidden(path.child('nodeName'), 'may not be changed directly'));
  const nominated = s(status['nominatedNodeName']);
  const oldNominated = isObject(old.status) ? s(old.status['nominatedNodeName']) : '';
  if (nominated !== oldNominated && nominated !== '') errs.push(...dnsSubdomain(nominated, path.child('nominatedNodeName')));
  const oldStatus: Json = isObject(old.status) ? old.status : {};
  const policy = s(oldSpec['restartPolicy']);
  errs.push(...validateContainerStateTransition(status['containerStatuses'], oldStatus['containerStatuses'], path.child('containerStatuses'), policy));
  errs.push(...validateContainerStateTransition(status['initContainerStatuses'], oldStatus['initContainerStatuses'], path.child('initContainerStatuses'), policy));
  errs.push(...validatePodIPs(obj));
  return errs;
}
