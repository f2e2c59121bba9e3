/**
 * The OpenAPI definitions of PodSecurityPolicy (policy/v1beta1) as Kubernetes 1.23 publishes them: field
 * names, types, required fields and list types of pkg/apis/policy/v1beta1 types.go. Written out here (the
 * client models scripts/gen-definitions.mjs reads no longer carry the kind, removed in 1.25); descriptions
 * are the first sentence of Kubernetes'.
 */
import type { Definitions, Schema } from '../../schema.js';

const P = 'io.k8s.api.policy.v1beta1.';
const ref = (name: string, description: string): Schema => ({ $ref: `#/definitions/${name}`, description });
const str = (description: string): Schema => ({ type: 'string', description });
const bool = (description: string): Schema => ({ type: 'boolean', description });
const int = (description: string, format: 'int32' | 'int64'): Schema => ({ type: 'integer', format, description });
const list = (items: Schema, description: string, atomic = true): Schema => ({
  type: 'array',
  items,
  description,
  ...(atomic ? { 'x-kubernetes-list-type': 'atomic' as const } : {}),
});
const item = (name: string): Schema => ({ $ref: `#/definitions/${name}` });
const STRING_ITEM: Schema = { type: 'string' };
const ranges = (description: string): Schema => list(item(`${P}IDRange`), description);
const strategy = (name: string, description: string, rule: string): [string, Schema] => [
  P + name,
  {
    description,
    type: 'object',
    properties: { rule: str(rule), ranges: ranges('ranges are the allowed ranges of ids. If you would like to force a single id then supply a single range with the same start and end.') },
    ...(name.startsWith('RunAs') ? { required: ['rule'] } : {}),
  },
];
const gvk = (kind: string) => [{ group: 'policy', kind, version: 'v1beta1' }];

const ENTRIES: [string, Schema][] = [
  [
    `${P}AllowedCSIDriver`,
    { description: 'AllowedCSIDriver represents a single inline CSI Driver that is allowed to be used.', type: 'object', properties: { name: str('Name is the registered name of the CSI driver') }, required: ['name'] },
  ],
  [
    `${P}AllowedFlexVolume`,
    { description: 'AllowedFlexVolume represents a single Flexvolume that is allowed to be used.', type: 'object', properties: { driver: str('driver is the name of the Flexvolume driver.') }, required: ['driver'] },
  ],
  [
    `${P}AllowedHostPath`,
    {
      description: 'AllowedHostPath defines the host volume conditions that will be enabled by a policy for pods to use.',
      type: 'object',
      properties: {
        pathPrefix: str('pathPrefix is the path prefix that the host volume must match.'),
        readOnly: bool('when set to true, will allow host volumes matching the pathPrefix only if all volume mounts are readOnly.'),
      },
    },
  ],
  strategy('FSGroupStrategyOptions', 'FSGroupStrategyOptions defines the strategy type and options used to create the strategy.', 'rule is the strategy that will dictate what FSGroup is used in the SecurityContext.'),
  [
    `${P}HostPortRange`,
    {
      description: 'HostPortRange defines a range of host ports that will be enabled by a policy for pods to use.',
      type: 'object',
      properties: { min: int('min is the start of the range, inclusive.', 'int32'), max: int('max is the end of the range, inclusive.', 'int32') },
      required: ['min', 'max'],
    },
  ],
  [
    `${P}IDRange`,
    {
      description: 'IDRange provides a min/max of an allowed range of IDs.',
      type: 'object',
      properties: { min: int('min is the start of the range, inclusive.', 'int64'), max: int('max is the end of the range, inclusive.', 'int64') },
      required: ['min', 'max'],
    },
  ],
  [
    `${P}PodSecurityPolicy`,
    {
      description: 'PodSecurityPolicy governs the ability to make requests that affect the Security Context that will be applied to a pod and container. Deprecated in 1.21.',
      type: 'object',
      properties: {
        apiVersion: str('APIVersion defines the versioned schema of this representation of an object.'),
        kind: str('Kind is a string value representing the REST resource this object represents.'),
        metadata: ref('io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta', "Standard object's metadata."),
        spec: ref(`${P}PodSecurityPolicySpec`, 'spec defines the policy enforced.'),
      },
      'x-kubernetes-group-version-kind': gvk('PodSecurityPolicy'),
    },
  ],
  [
    `${P}PodSecurityPolicyList`,
    {
      description: 'PodSecurityPolicyList is a list of PodSecurityPolicy objects.',
      type: 'object',
      properties: {
        apiVersion: str('APIVersion defines the versioned schema of this representation of an object.'),
        items: list(item(`${P}PodSecurityPolicy`), 'items is a list of schema objects.', false),
        kind: str('Kind is a string value representing the REST resource this object represents.'),
        metadata: ref('io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta', 'Standard list metadata.'),
      },
      required: ['items'],
      'x-kubernetes-group-version-kind': gvk('PodSecurityPolicyList'),
    },
  ],
  [
    `${P}PodSecurityPolicySpec`,
    {
      description: 'PodSecurityPolicySpec defines the policy enforced.',
      type: 'object',
      properties: {
        allowPrivilegeEscalation: bool('allowPrivilegeEscalation determines if a pod can request to allow privilege escalation. If unspecified, defaults to true.'),
        allowedCSIDrivers: list(item(`${P}AllowedCSIDriver`), 'AllowedCSIDrivers is an allowlist of inline CSI drivers that must be explicitly set to be embedded within a pod spec.'),
        allowedCapabilities: list(STRING_ITEM, 'allowedCapabilities is a list of capabilities that can be requested to add to the container.'),
        allowedFlexVolumes: list(item(`${P}AllowedFlexVolume`), 'allowedFlexVolumes is an allowlist of Flexvolumes.'),
        allowedHostPaths: list(item(`${P}AllowedHostPath`), 'allowedHostPaths is an allowlist of host paths. Empty indicates that all host paths may be used.'),
        allowedProcMountTypes: list(STRING_ITEM, 'AllowedProcMountTypes is an allowlist of allowed ProcMountTypes.'),
        allowedUnsafeSysctls: list(STRING_ITEM, 'allowedUnsafeSysctls is a list of explicitly allowed unsafe sysctls, defaults to none.'),
        defaultAddCapabilities: list(STRING_ITEM, 'defaultAddCapabilities is the default set of capabilities that will be added to the container unless the pod spec specifically drops the capability.'),
        defaultAllowPrivilegeEscalation: bool('defaultAllowPrivilegeEscalation controls the default setting for whether a process can gain more privileges than its parent process.'),
        forbiddenSysctls: list(STRING_ITEM, 'forbiddenSysctls is a list of explicitly forbidden sysctls, defaults to none.'),
        fsGroup: ref(`${P}FSGroupStrategyOptions`, 'fsGroup is the strategy that will dictate what fs group is used by the SecurityContext.'),
        hostIPC: bool('hostIPC determines if the policy allows the use of HostIPC in the pod spec.'),
        hostNetwork: bool('hostNetwork determines if the policy allows the use of HostNetwork in the pod spec.'),
        hostPID: bool('hostPID determines if the policy allows the use of HostPID in the pod spec.'),
        hostPorts: list(item(`${P}HostPortRange`), 'hostPorts determines which host port ranges are allowed to be exposed.'),
        privileged: bool('privileged determines if a pod can request to be run as privileged.'),
        readOnlyRootFilesystem: bool('readOnlyRootFilesystem when set to true will force containers to run with a read only root file system.'),
        requiredDropCapabilities: list(STRING_ITEM, 'requiredDropCapabilities are the capabilities that will be dropped from the container.'),
        runAsGroup: ref(`${P}RunAsGroupStrategyOptions`, 'RunAsGroup is the strategy that will dictate the allowable RunAsGroup values that may be set.'),
        runAsUser: ref(`${P}RunAsUserStrategyOptions`, 'runAsUser is the strategy that will dictate the allowable RunAsUser values that may be set.'),
        runtimeClass: ref(`${P}RuntimeClassStrategyOptions`, 'runtimeClass is the strategy that will dictate the allowable RuntimeClasses for a pod.'),
        seLinux: ref(`${P}SELinuxStrategyOptions`, 'seLinux is the strategy that will dictate the allowable labels that may be set.'),
        supplementalGroups: ref(`${P}SupplementalGroupsStrategyOptions`, 'supplementalGroups is the strategy that will dictate what supplemental groups are used by the SecurityContext.'),
        volumes: list(STRING_ITEM, "volumes is an allowlist of volume plugins. Empty indicates that no volumes may be used. To allow all volumes you may use '*'."),
      },
      required: ['seLinux', 'runAsUser', 'supplementalGroups', 'fsGroup'],
    },
  ],
  strategy('RunAsGroupStrategyOptions', 'RunAsGroupStrategyOptions defines the strategy type and any options used to create the strategy.', 'rule is the strategy that will dictate the allowable RunAsGroup values that may be set.'),
  strategy('RunAsUserStrategyOptions', 'RunAsUserStrategyOptions defines the strategy type and any options used to create the strategy.', 'rule is the strategy that will dictate the allowable RunAsUser values that may be set.'),
  [
    `${P}RuntimeClassStrategyOptions`,
    {
      description: 'RuntimeClassStrategyOptions define the strategy that will dictate the allowable RuntimeClasses for a pod.',
      type: 'object',
      properties: {
        allowedRuntimeClassNames: list(STRING_ITEM, 'allowedRuntimeClassNames is an allowlist of RuntimeClass names that may be specified on a pod.'),
        defaultRuntimeClassName: str('defaultRuntimeClassName is the default RuntimeClassName to set on the pod.'),
      },
      required: ['allowedRuntimeClassNames'],
    },
  ],
  [
    `${P}SELinuxStrategyOptions`,
    {
      description: 'SELinuxStrategyOptions defines the strategy type and any options used to create the strategy.',
      type: 'object',
      properties: {
        rule: str('rule is the strategy that will dictate the allowable labels that may be set.'),
        seLinuxOptions: ref('io.k8s.api.core.v1.SELinuxOptions', 'seLinuxOptions required to run as; required for MustRunAs.'),
      },
      required: ['rule'],
    },
  ],
  strategy('SupplementalGroupsStrategyOptions', 'SupplementalGroupsStrategyOptions defines the strategy type and options used to create the strategy.', 'rule is the strategy that will dictate what supplemental groups is used in the SecurityContext.'),
];

export const PSP_DEFINITIONS: Definitions = Object.fromEntries(ENTRIES);
