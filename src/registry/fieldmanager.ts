/**
 * What the field manager (managedfields.ts, apply.ts) needs to know of a kind beyond its schema, taken from
 * the kind declarations:
 *
 *   - its served versions and the conversions between them (Kubernetes' versionConverter: to the hub and
 *     on to the target version), so that a manager's fields are compared in the version it used;
 *   - its Go zero value (runtime.Scheme New, as the unstructured converter writes it), the object a create
 *     is compared against and the base of an apply to an object nobody manages. Struct-valued fields are
 *     always written (omitempty does not drop structs), times as null, fields without omitempty as their
 *     zero; so a create does not own the containers the zero value already has (`spec` of a Pod, the
 *     `resources` of a PVC's spec), only what it put in them.
 */
import { apiVersionOf, type KindDecl, type KObject } from './kind.js';
import { refSchema, type JsonObject, type VersionConverter } from './managedfields.js';
import type { Schema } from './schema.js';

const META = (): JsonObject => ({ creationTimestamp: null });

/** The Go zero values of the kinds whose zero value is more than metadata, by definition name. */
const ZERO_VALUES: Record<string, () => JsonObject> = {
  'io.k8s.api.core.v1.Namespace': () => ({ spec: {}, status: {} }),
  'io.k8s.api.core.v1.PersistentVolumeClaim': () => ({ spec: { resources: {} }, status: {} }),
  'io.k8s.api.core.v1.Pod': () => ({ spec: { containers: null }, status: {} }),
  'io.k8s.api.core.v1.Node': () => ({
    spec: {},
    status: {
      daemonEndpoints: { kubeletEndpoint: { Port: 0 } },
      nodeInfo: {
        machineID: '',
        systemUUID: '',
        bootID: '',
        kernelVersion: '',
        osImage: '',
        containerRuntimeVersion: '',
        kubeletVersion: '',
        kubeProxyVersion: '',
        operatingSystem: '',
        architecture: '',
      },
    },
  }),
  'io.k8s.api.core.v1.Service': () => ({ spec: {}, status: { loadBalancer: {} } }),
  'io.k8s.api.core.v1.LimitRange': () => ({ spec: { limits: null } }),
  'io.k8s.api.core.v1.Event': () => ({
    involvedObject: {},
    source: {},
    firstTimestamp: null,
    lastTimestamp: null,
    eventTime: null,
    reportingComponent: '',
    reportingInstance: '',
  }),
  'io.k8s.api.events.v1.Event': () => ({
    eventTime: null,
    regarding: {},
    deprecatedSource: {},
    deprecatedFirstTimestamp: null,
    deprecatedLastTimestamp: null,
  }),
  'io.k8s.api.coordination.v1.Lease': () => ({ spec: {} }),
  'io.k8s.api.scheduling.v1.PriorityClass': () => ({ value: 0 }),
  'io.k8s.api.storage.v1.StorageClass': () => ({ provisioner: '' }),
  'io.k8s.api.rbac.v1.Role': () => ({ rules: null }),
  'io.k8s.api.rbac.v1.ClusterRole': () => ({ rules: null }),
  'io.k8s.api.rbac.v1.RoleBinding': () => ({ roleRef: { apiGroup: '', kind: '', name: '' } }),
  'io.k8s.api.rbac.v1.ClusterRoleBinding': () => ({ roleRef: { apiGroup: '', kind: '', name: '' } }),
  'io.k8s.api.flowcontrol.v1beta1.FlowSchema': () => ({ spec: { priorityLevelConfiguration: { name: '' } }, status: {} }),
  'io.k8s.api.flowcontrol.v1beta2.FlowSchema': () => ({ spec: { priorityLevelConfiguration: { name: '' } }, status: {} }),
  'io.k8s.api.flowcontrol.v1beta1.PriorityLevelConfiguration': () => ({ spec: { type: '' }, status: {} }),
  'io.k8s.api.flowcontrol.v1beta2.PriorityLevelConfiguration': () => ({ spec: { type: '' }, status: {} }),
  'io.k8s.api.certificates.v1.CertificateSigningRequest': () => ({ spec: { request: null, signerName: '' }, status: {} }),
  'io.k8s.api.core.v1.ResourceQuota': () => ({ spec: {}, status: {} }),
  'io.k8s.api.networking.v1.Ingress': () => ({ spec: {}, status: { loadBalancer: {} } }),
  'io.k8s.api.networking.v1.IngressClass': () => ({ spec: {} }),
  'io.k8s.api.node.v1.RuntimeClass': () => ({ handler: '' }),
  'io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIService': () => ({ spec: { groupPriorityMinimum: 0, versionPriority: 0 }, status: {} }),
  'io.k8s.api.policy.v1beta1.PodSecurityPolicy': () => ({ spec: { seLinux: { rule: '' }, runAsUser: { rule: '' }, supplementalGroups: {}, fsGroup: {} } }),
};

/** The kinds whose Go zero value is metadata alone (every other field omitempty, a pointer, a map or a list). */
export const METADATA_ONLY_ZERO_VALUES: ReadonlySet<string> = new Set([
  'io.k8s.api.core.v1.ConfigMap',
  'io.k8s.api.core.v1.Secret',
  'io.k8s.api.core.v1.ServiceAccount',
  'io.k8s.api.core.v1.Endpoints',
  'io.k8s.api.admissionregistration.v1.MutatingWebhookConfiguration',
  'io.k8s.api.admissionregistration.v1.ValidatingWebhookConfiguration',
]);

/** Whether the zero value of a kind (by definition name) is declared here. */
export function hasZeroValue(definition: string): boolean {
  return ZERO_VALUES[definition] !== undefined || METADATA_ONLY_ZERO_VALUES.has(definition);
}

/** The kind's Go zero value as JSON (without apiVersion and kind, which the typed comparison never records). */
export function zeroValueOf(decl: KindDecl): JsonObject {
  return { metadata: META(), ...(ZERO_VALUES[decl.definition]?.() ?? {}) };
}

/** Where a declaration's objects are stored: the versions of one kind share it. */
const storageOf = (d: KindDecl) => `${d.storedAs?.group ?? d.group}/${d.storedAs?.resource ?? d.resource}/${d.kind}`;

/**
 * The versions `decl` is served at (every declaration stored where it is, of the same kind) and the
 * conversions between them through the stored form: the declaration's toStored, then the target's
 * fromStored. A version not served has no schema and converts to nothing.
 */
export function versionConverterFor(decl: KindDecl, kinds: readonly KindDecl[]): VersionConverter {
  const versions = new Map<string, KindDecl>();
  for (const k of kinds) if (!k.compute && storageOf(k) === storageOf(decl)) versions.set(apiVersionOf(k), k);
  versions.set(apiVersionOf(decl), decl);
  const schemas = new Map<string, Schema>();
  return {
    schema(apiVersion) {
      const d = versions.get(apiVersion);
      if (d === undefined) return undefined;
      let s = schemas.get(apiVersion);
      if (s === undefined) schemas.set(apiVersion, (s = refSchema(d.definition)));
      return s;
    },
    convert(obj, from, to) {
      if (from === to) return obj;
      const source = versions.get(from);
      const target = versions.get(to);
      if (source === undefined || target === undefined) return undefined;
      if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) return obj;
      const typed = { ...(obj as KObject), apiVersion: from, kind: source.kind };
      const stored = source.storedAs ? source.storedAs.toStored(typed) : typed;
      const converted = target.storedAs ? target.storedAs.fromStored(stored) : stored;
      return { ...converted, apiVersion: to, kind: target.kind };
    },
  };
}

/** The field manager's view of a kind: its zero value and its versions. */
export interface KindFieldManager {
  zero: JsonObject;
  converter: VersionConverter;
}

export function kindFieldManager(decl: KindDecl, kinds: readonly KindDecl[]): KindFieldManager {
  return { zero: zeroValueOf(decl), converter: versionConverterFor(decl, kinds) };
}
