/**
 * PodSecurityPolicy (policy/v1beta1), as Kubernetes 1.23 serves it (pkg/registry/policy/podsecuritypolicy;
 * deprecated since 1.21, removed in 1.25):
 *   - cluster-scoped, short name psp; allowPrivilegeEscalation defaults to true
 *   - validation (pkg/apis/policy/validation, the parts orch enforces): the strategy rules (seLinux,
 *     runAsUser, runAsGroup, fsGroup, supplementalGroups) and their ID ranges, volume types, host port
 *     ranges, proc mount types, capabilities not both added and required-dropped, and
 *     defaultAllowPrivilegeEscalation only with allowPrivilegeEscalation
 *   - table: printPodSecurityPolicy: NAME PRIV CAPS SELINUX RUNASUSER FSGROUP SUPGROUP READONLYROOTFS VOLUMES
 * The PodSecurityPolicy admission plugin (registry/admission/podsecuritypolicy.ts) applies the policies.
 */
import type { KObject, KindDecl, TableColumn } from '../../kind.js';
import { isObject } from '../configmap.js';
import { invalid, nameIsDNSSubdomain, notSupported, required, root, type FieldError, type FieldPath } from '../../../util/validation.js';
import { PSP_DEFINITIONS } from './definitions.js';

export const POLICY_GROUP = 'policy';
const DEF = 'io.k8s.api.policy.v1beta1.PodSecurityPolicy';

/** The volume types a policy may allow (policy.FSType), '*' for all. */
export const FS_TYPES = [
  'azureFile', 'flocker', 'flexVolume', 'hostPath', 'emptyDir', 'gcePersistentDisk', 'awsElasticBlockStore', 'gitRepo', 'secret', 'nfs',
  'iscsi', 'glusterfs', 'persistentVolumeClaim', 'rbd', 'cinder', 'cephFS', 'downwardAPI', 'fc', 'configMap', 'vsphereVolume', 'quobyte',
  'azureDisk', 'photonPersistentDisk', 'storageos', 'projected', 'portworxVolume', 'scaleIO', 'csi', 'ephemeral', '*',
];

type Json = Record<string, any>;
const obj = (v: unknown): Json => (isObject(v) ? v : {});
const strs = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);

function validateRanges(ranges: unknown, path: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  (Array.isArray(ranges) ? ranges : []).forEach((r: unknown, i) => {
    const min = obj(r)['min'] as number;
    const max = obj(r)['max'] as number;
    const p = path.index(i);
    if (min > max) errs.push(invalid(p.child('min'), min, 'min cannot be greater than max'));
    if (min < 0) errs.push(invalid(p.child('min'), min, 'min cannot be negative'));
    if (max < 0) errs.push(invalid(p.child('max'), max, 'max cannot be negative'));
  });
  return errs;
}

function validateStrategy(s: unknown, path: FieldPath, rules: string[], needsRanges: string[]): FieldError[] {
  const rule = obj(s)['rule'];
  const errs: FieldError[] = [];
  if (!rules.includes(rule as string)) errs.push(notSupported(path.child('rule'), rule ?? '', rules));
  const ranges = obj(s)['ranges'];
  if (needsRanges.includes(rule as string) && (!Array.isArray(ranges) || ranges.length === 0)) errs.push(required(path.child('ranges'), 'must provide at least one range'));
  errs.push(...validateRanges(ranges, path.child('ranges')));
  return errs;
}

function validatePSP(o: KObject): FieldError[] {
  const spec = obj(o['spec']);
  const sp = root('spec');
  const errs: FieldError[] = [];
  const seLinuxRule = obj(spec['seLinux'])['rule'];
  if (!['MustRunAs', 'RunAsAny'].includes(seLinuxRule as string)) errs.push(notSupported(sp.child('seLinux', 'rule'), seLinuxRule ?? '', ['MustRunAs', 'RunAsAny']));
  errs.push(...validateStrategy(spec['runAsUser'], sp.child('runAsUser'), ['MustRunAs', 'MustRunAsNonRoot', 'RunAsAny'], ['MustRunAs']));
  if (spec['runAsGroup'] !== undefined && spec['runAsGroup'] !== null) {
    errs.push(...validateStrategy(spec['runAsGroup'], sp.child('runAsGroup'), ['MayRunAs', 'MustRunAs', 'RunAsAny'], ['MustRunAs', 'MayRunAs']));
  }
  errs.push(...validateStrategy(spec['fsGroup'], sp.child('fsGroup'), ['MayRunAs', 'MustRunAs', 'RunAsAny'], []));
  errs.push(...validateStrategy(spec['supplementalGroups'], sp.child('supplementalGroups'), ['MayRunAs', 'MustRunAs', 'RunAsAny'], []));
  strs(spec['volumes']).forEach((v, i) => {
    if (!FS_TYPES.includes(v)) errs.push(notSupported(sp.child('volumes').index(i), v, FS_TYPES));
  });
  (Array.isArray(spec['hostPorts']) ? (spec['hostPorts'] as unknown[]) : []).forEach((r, i) => {
    const { min, max } = obj(r) as { min?: number; max?: number };
    const p = sp.child('hostPorts').index(i);
    for (const [k, v] of [['min', min], ['max', max]] as const) {
      if (typeof v !== 'number' || v < 0 || v > 65535) errs.push(invalid(p.child(k), v ?? 0, 'must be between 0 and 65535, inclusive'));
    }
    if (typeof min === 'number' && typeof max === 'number' && min > max) errs.push(invalid(p.child('min'), min, 'min cannot be greater than max'));
  });
  strs(spec['allowedProcMountTypes']).forEach((t, i) => {
    if (t !== 'Default' && t !== 'Unmasked') errs.push(notSupported(sp.child('allowedProcMountTypes').index(i), t, ['Default', 'Unmasked']));
  });
  const drop = strs(spec['requiredDropCapabilities']);
  for (const field of ['defaultAddCapabilities', 'allowedCapabilities']) {
    strs(spec[field]).forEach((c, i) => {
      if (drop.includes(c)) errs.push(invalid(sp.child(field).index(i), c, `capability is listed in ${field} and requiredDropCapabilities`));
    });
  }
  if (spec['defaultAllowPrivilegeEscalation'] === true && spec['allowPrivilegeEscalation'] === false) {
    errs.push(invalid(sp.child('defaultAllowPrivilegeEscalation'), true, 'Cannot set DefaultAllowPrivilegeEscalation to true without also setting AllowPrivilegeEscalation to true'));
  }
  return errs;
}

const cell = (f: (spec: Json) => unknown) => (o: KObject) => f(obj(o['spec']));
const prop = (name: string) => PSP_DEFINITIONS['io.k8s.api.policy.v1beta1.PodSecurityPolicySpec']!.properties![name]!.description!;
const columns: TableColumn[] = [
  {
    name: 'Name',
    type: 'string',
    format: 'name',
    description: 'Name must be unique within a namespace.',
    priority: 0,
    cell: (o) => o.metadata?.name ?? '',
  },
  { name: 'Priv', type: 'string', description: prop('privileged'), priority: 0, cell: cell((s) => s['privileged'] === true) },
  { name: 'Caps', type: 'string', description: prop('allowedCapabilities'), priority: 0, cell: cell((s) => strs(s['allowedCapabilities']).join(',')) },
  { name: 'SELinux', type: 'string', description: prop('seLinux'), priority: 0, cell: cell((s) => String(obj(s['seLinux'])['rule'] ?? '')) },
  { name: 'RunAsUser', type: 'string', description: prop('runAsUser'), priority: 0, cell: cell((s) => String(obj(s['runAsUser'])['rule'] ?? '')) },
  { name: 'FsGroup', type: 'string', description: prop('fsGroup'), priority: 0, cell: cell((s) => String(obj(s['fsGroup'])['rule'] ?? '')) },
  { name: 'SupGroup', type: 'string', description: prop('supplementalGroups'), priority: 0, cell: cell((s) => String(obj(s['supplementalGroups'])['rule'] ?? '')) },
  { name: 'ReadOnlyRootFs', type: 'string', description: prop('readOnlyRootFilesystem'), priority: 0, cell: cell((s) => s['readOnlyRootFilesystem'] === true) },
  { name: 'Volumes', type: 'string', description: prop('volumes'), priority: 0, cell: cell((s) => strs(s['volumes']).join(',')) },
];

export const podSecurityPolicyKind: KindDecl = {
  group: POLICY_GROUP,
  version: 'v1beta1',
  kind: 'PodSecurityPolicy',
  listKind: 'PodSecurityPolicyList',
  resource: 'podsecuritypolicies',
  singular: 'podsecuritypolicy',
  shortNames: ['psp'],
  namespaced: false,
  nameValidator: nameIsDNSSubdomain,
  definition: DEF,
  listDefinition: 'io.k8s.api.policy.v1beta1.PodSecurityPolicyList',
  definitions: PSP_DEFINITIONS,
  tracksGeneration: false,
  noNameColumn: true,
  columns,
  strategy: {
    default(o) {
      const spec = obj(o['spec']);
      if (isObject(o['spec']) && (spec['allowPrivilegeEscalation'] === undefined || spec['allowPrivilegeEscalation'] === null)) spec['allowPrivilegeEscalation'] = true;
    },
    validate: (o) => validatePSP(o),
    validateUpdate: (o) => validatePSP(o),
  },
};
