#!/usr/bin/env node
// Generates the OpenAPI definitions of the Pod, Event, Service, PriorityClass, LimitRange and StorageClass kinds
// (src/registry/kinds/<kind>/definitions.ts) from the models of @kubernetes/client-node (a dev dependency):
// names, types, formats, required fields and descriptions come from its generated classes; what those
// classes do not carry is added here as Kubernetes 1.23's types.go declares it: patch strategies and merge
// keys, list types, atomic structs, Quantity and IntOrString fields. Fields added after 1.23 are dropped.
//
// Run: node scripts/gen-definitions.mjs   (then review the diff; the output is committed)
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);
const MODELS = join(dirname(require.resolve('@kubernetes/client-node/package.json')), 'dist', 'gen', 'models');

const CORE = 'io.k8s.api.core.v1.';
const META = 'io.k8s.apimachinery.pkg.apis.meta.v1.';
const QUANTITY = 'io.k8s.apimachinery.pkg.api.resource.Quantity';
const INT_OR_STRING = 'io.k8s.apimachinery.pkg.util.intstr.IntOrString';

/** Classes whose definitions live elsewhere (meta types, or kinds already declared). */
const EXTERNAL = {
  V1ObjectMeta: `${META}ObjectMeta`,
  V1ListMeta: `${META}ListMeta`,
  V1LabelSelector: `${META}LabelSelector`,
  V1DeleteOptions: `${META}DeleteOptions`,
  V1MicroTime: `${META}MicroTime`,
  V1ObjectReference: `${CORE}ObjectReference`,
  V1LocalObjectReference: `${CORE}LocalObjectReference`,
  V1ResourceRequirements: `${CORE}ResourceRequirements`,
  V1PersistentVolumeClaimSpec: `${CORE}PersistentVolumeClaimSpec`,
  V1TypedLocalObjectReference: `${CORE}TypedLocalObjectReference`,
  // Kubernetes 1.23's Ingress status holds the core LoadBalancerStatus (Service's).
  V1IngressLoadBalancerStatus: `${CORE}LoadBalancerStatus`,
};

/** Fields of the client's (newer) models that Kubernetes 1.23 does not have. */
const AFTER_1_23 = {
  V1PodSpec: ['hostUsers', 'hostnameOverride', 'resourceClaims', 'resources', 'schedulingGates'],
  V1Container: ['resizePolicy', 'restartPolicy', 'restartPolicyRules'],
  V1EphemeralContainer: ['resizePolicy', 'restartPolicy', 'restartPolicyRules'],
  V1Lifecycle: ['stopSignal'],
  V1LifecycleHandler: ['sleep'],
  V1SecurityContext: ['appArmorProfile'],
  V1PodSecurityContext: ['appArmorProfile', 'seLinuxChangePolicy', 'supplementalGroupsPolicy'],
  V1VolumeMount: ['recursiveReadOnly'],
  V1Volume: ['image'],
  V1VolumeProjection: ['clusterTrustBundle', 'podCertificate'],
  V1PodStatus: ['hostIPs', 'resize', 'resourceClaimStatuses', 'observedGeneration', 'extendedResourceClaimStatus'],
  V1ContainerStatus: ['allocatedResources', 'allocatedResourcesStatus', 'resources', 'user', 'volumeMounts', 'stopSignal'],
  V1PodCondition: ['observedGeneration'],
  V1TopologySpreadConstraint: ['minDomains', 'matchLabelKeys', 'nodeAffinityPolicy', 'nodeTaintsPolicy'],
  V1PodAffinityTerm: ['matchLabelKeys', 'mismatchLabelKeys'],
  V1EnvVarSource: ['fileKeyRef'],
  V1ServiceSpec: ['trafficDistribution'],
  V1LoadBalancerIngress: ['ipMode'],
  V1MutatingWebhook: ['matchConditions'],
  V1ValidatingWebhook: ['matchConditions'],
};

const containerLists = {
  ports: {
    'x-kubernetes-list-map-keys': ['containerPort', 'protocol'],
    'x-kubernetes-list-type': 'map',
    'x-kubernetes-patch-merge-key': 'containerPort',
    'x-kubernetes-patch-strategy': 'merge',
  },
  env: { 'x-kubernetes-patch-merge-key': 'name', 'x-kubernetes-patch-strategy': 'merge' },
  volumeMounts: { 'x-kubernetes-patch-merge-key': 'mountPath', 'x-kubernetes-patch-strategy': 'merge' },
  volumeDevices: { 'x-kubernetes-patch-merge-key': 'devicePath', 'x-kubernetes-patch-strategy': 'merge' },
};
const byName = { 'x-kubernetes-patch-merge-key': 'name', 'x-kubernetes-patch-strategy': 'merge' };

/** Extensions of fields, as 1.23's types.go tags them (patchStrategy, patchMergeKey, listType, listMapKey). */
const FIELD_EXTENSIONS = {
  // Kubernetes 1.23's +default="TCP" on list-map key fields: server-side apply keys ports on them.
  V1ContainerPort: { protocol: { default: 'TCP' } },
  V1ServicePort: { protocol: { default: 'TCP' } },
  V1StorageClass: { allowedTopologies: { 'x-kubernetes-list-type': 'atomic' } },
  V1Scheduling: { nodeSelector: { 'x-kubernetes-map-type': 'atomic' }, tolerations: { 'x-kubernetes-list-type': 'atomic' } },
  V1IngressSpec: { tls: { 'x-kubernetes-list-type': 'atomic' }, rules: { 'x-kubernetes-list-type': 'atomic' } },
  V1HTTPIngressRuleValue: { paths: { 'x-kubernetes-list-type': 'atomic' } },
  V1IngressTLS: { hosts: { 'x-kubernetes-list-type': 'atomic' } },
  V1MutatingWebhookConfiguration: { webhooks: byName },
  V1ValidatingWebhookConfiguration: { webhooks: byName },
  V1Container: containerLists,
  V1EphemeralContainer: containerLists,
  V1PodSpec: {
    volumes: { 'x-kubernetes-patch-merge-key': 'name', 'x-kubernetes-patch-strategy': 'merge,retainKeys' },
    initContainers: byName,
    containers: byName,
    ephemeralContainers: byName,
    imagePullSecrets: byName,
    hostAliases: { 'x-kubernetes-patch-merge-key': 'ip', 'x-kubernetes-patch-strategy': 'merge' },
    topologySpreadConstraints: {
      'x-kubernetes-list-map-keys': ['topologyKey', 'whenUnsatisfiable'],
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-patch-merge-key': 'topologyKey',
      'x-kubernetes-patch-strategy': 'merge',
    },
  },
  V1PodStatus: {
    conditions: { 'x-kubernetes-patch-merge-key': 'type', 'x-kubernetes-patch-strategy': 'merge' },
    podIPs: { 'x-kubernetes-patch-merge-key': 'ip', 'x-kubernetes-patch-strategy': 'merge' },
  },
  V1NodeSelectorTerm: {},
  V1ServiceSpec: {
    ports: {
      'x-kubernetes-list-map-keys': ['port', 'protocol'],
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-patch-merge-key': 'port',
      'x-kubernetes-patch-strategy': 'merge',
    },
    clusterIPs: { 'x-kubernetes-list-type': 'atomic' },
    ipFamilies: { 'x-kubernetes-list-type': 'atomic' },
    selector: { 'x-kubernetes-map-type': 'atomic' },
  },
  V1ServiceStatus: {
    conditions: {
      'x-kubernetes-list-map-keys': ['type'],
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-patch-merge-key': 'type',
      'x-kubernetes-patch-strategy': 'merge',
    },
  },
  V1LoadBalancerIngress: { ports: { 'x-kubernetes-list-type': 'atomic' } },
};

/** Descriptions of fields that reference another definition (the client's models drop them), as 1.23 words them. */
const SPEC_STATUS = 'https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#spec-and-status';
const REF_DESCRIPTIONS = {
  V1Pod: {
    spec: `Specification of the desired behavior of the pod. More info: ${SPEC_STATUS}`,
    status: `Most recently observed status of the pod. This data may not be up to date. Populated by the system. Read-only. More info: ${SPEC_STATUS}`,
  },
  V1Binding: { target: 'The target object that you want to bind to the standard object.' },
  CoreV1Event: {
    involvedObject: 'The object that this event is about.',
    related: 'Optional secondary object for more complex actions.',
    series: 'Data about the Event series this event represents or nil if it\'s a singleton Event.',
    source: 'The component reporting this event. Should be a short machine understandable string.',
  },
  EventsV1Event: {
    regarding:
      "regarding contains the object this Event is about. In most cases it's an Object reporting controller implements, e.g. ReplicaSetController implements ReplicaSets and this event is emitted because it acts on some changes in a ReplicaSet object.",
    related: 'related is the optional secondary object for more complex actions. E.g. when regarding object triggers a creation or deletion of related object.',
    series: "series is data about the Event series this event represents or nil if it's a singleton Event.",
    deprecatedSource: 'deprecatedSource is the deprecated field assuring backward compatibility with core.v1 Event type.',
  },
  V1Container: {
    resources: 'Compute Resources required by this container. Cannot be updated. More info: https://kubernetes.io/docs/concepts/configuration/manage-resources-containers/',
    securityContext:
      'SecurityContext defines the security options the container should be run with. If set, the fields of SecurityContext override the equivalent fields of PodSecurityContext. More info: https://kubernetes.io/docs/tasks/configure-pod-container/security-context/',
    livenessProbe:
      'Periodic probe of container liveness. Container will be restarted if the probe fails. Cannot be updated. More info: https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle#container-probes',
    readinessProbe:
      'Periodic probe of container service readiness. Container will be removed from service endpoints if the probe fails. Cannot be updated. More info: https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle#container-probes',
    lifecycle: 'Actions that the management system should take in response to container lifecycle events. Cannot be updated.',
  },
  V1Service: {
    spec: `Spec defines the behavior of a service. ${SPEC_STATUS}`,
    status: `Most recently observed status of the service. Populated by the system. Read-only. More info: ${SPEC_STATUS}`,
  },
  V1ServiceSpec: { sessionAffinityConfig: 'sessionAffinityConfig contains the configurations of session affinity.' },
  V1ServiceStatus: { loadBalancer: 'LoadBalancer contains the current status of the load-balancer, if one is present.' },
  V1SessionAffinityConfig: { clientIP: 'clientIP contains the configurations of Client IP based session affinity.' },
  V1EndpointAddress: { targetRef: 'Reference to object providing the endpoint.' },
  V1PodSpec: {
    securityContext: 'SecurityContext holds pod-level security attributes and common container settings. Optional: Defaults to empty.  See type description for default values of each field.',
    affinity: "If specified, the pod's scheduling constraints",
    dnsConfig: 'Specifies the DNS parameters of a pod. Parameters specified here will be merged to the generated DNS configuration based on DNSPolicy.',
  },
};

/** Fields whose client type is a plain string or string map but whose Kubernetes type is a Quantity. */
const QUANTITY_FIELDS = {
  V1PodSpec: ['overhead'],
  V1EmptyDirVolumeSource: ['sizeLimit'],
  V1ResourceFieldSelector: ['divisor'],
  V1LimitRangeItem: ['default', 'defaultRequest', 'max', 'maxLimitRequestRatio', 'min'],
  V1ResourceQuotaSpec: ['hard'],
  V1ResourceQuotaStatus: ['hard', 'used'],
};

/** The kinds among the classes, with the group-version-kind 1.23's OpenAPI tags them with. */
const GVK = {
  V1Pod: ['', 'Pod', 'v1'],
  V1PodList: ['', 'PodList', 'v1'],
  V1Binding: ['', 'Binding', 'v1'],
  V1Eviction: ['policy', 'Eviction', 'v1'],
  CoreV1Event: ['', 'Event', 'v1'],
  CoreV1EventList: ['', 'EventList', 'v1'],
  EventsV1Event: ['events.k8s.io', 'Event', 'v1'],
  EventsV1EventList: ['events.k8s.io', 'EventList', 'v1'],
  V1Service: ['', 'Service', 'v1'],
  V1ServiceList: ['', 'ServiceList', 'v1'],
  V1Endpoints: ['', 'Endpoints', 'v1'],
  V1EndpointsList: ['', 'EndpointsList', 'v1'],
  V1PriorityClass: ['scheduling.k8s.io', 'PriorityClass', 'v1'],
  V1PriorityClassList: ['scheduling.k8s.io', 'PriorityClassList', 'v1'],
  V1LimitRange: ['', 'LimitRange', 'v1'],
  V1LimitRangeList: ['', 'LimitRangeList', 'v1'],
  V1StorageClass: ['storage.k8s.io', 'StorageClass', 'v1'],
  V1StorageClassList: ['storage.k8s.io', 'StorageClassList', 'v1'],
  V1RuntimeClass: ['node.k8s.io', 'RuntimeClass', 'v1'],
  V1RuntimeClassList: ['node.k8s.io', 'RuntimeClassList', 'v1'],
  V1IngressClass: ['networking.k8s.io', 'IngressClass', 'v1'],
  V1IngressClassList: ['networking.k8s.io', 'IngressClassList', 'v1'],
  V1Ingress: ['networking.k8s.io', 'Ingress', 'v1'],
  V1IngressList: ['networking.k8s.io', 'IngressList', 'v1'],
  V1MutatingWebhookConfiguration: ['admissionregistration.k8s.io', 'MutatingWebhookConfiguration', 'v1'],
  V1MutatingWebhookConfigurationList: ['admissionregistration.k8s.io', 'MutatingWebhookConfigurationList', 'v1'],
  V1ValidatingWebhookConfiguration: ['admissionregistration.k8s.io', 'ValidatingWebhookConfiguration', 'v1'],
  V1ValidatingWebhookConfigurationList: ['admissionregistration.k8s.io', 'ValidatingWebhookConfigurationList', 'v1'],
  V1ResourceQuota: ['', 'ResourceQuota', 'v1'],
  V1ResourceQuotaList: ['', 'ResourceQuotaList', 'v1'],
};

/** Structs Kubernetes 1.23 marks +structType=atomic. */
const ATOMIC_STRUCTS = new Set(['V1TopologySelectorTerm', 'CoreV1EndpointPort', 'V1ConfigMapKeySelector', 'V1SecretKeySelector', 'V1ObjectFieldSelector', 'V1ResourceFieldSelector', 'V1NodeSelector', 'V1NodeSelectorTerm']);

function definitionName(cls) {
  if (EXTERNAL[cls]) return EXTERNAL[cls];
  let m;
  if ((m = /^CoreV1(.+)$/.exec(cls))) return CORE + m[1];
  if ((m = /^EventsV1(.+)$/.exec(cls))) return `io.k8s.api.events.v1.${m[1]}`;
  if (cls === 'V1Eviction') return 'io.k8s.api.policy.v1.Eviction';
  if ((m = /^V1(PriorityClass(List)?)$/.exec(cls))) return `io.k8s.api.scheduling.v1.${m[1]}`;
  if ((m = /^V1(StorageClass(List)?)$/.exec(cls))) return `io.k8s.api.storage.v1.${m[1]}`;
  if ((m = /^V1(RuntimeClass(List)?|Overhead|Scheduling)$/.exec(cls))) return `io.k8s.api.node.v1.${m[1]}`;
  if ((m = /^V1(IngressClass(List|Spec|ParametersReference)?|Ingress(List|Spec|Rule|Backend|ServiceBackend|TLS|Status)?|HTTPIngress(RuleValue|Path)|ServiceBackendPort)$/.exec(cls))) {
    return `io.k8s.api.networking.v1.${m[1]}`;
  }
  if ((m = /^AdmissionregistrationV1(.+)$/.exec(cls))) return `io.k8s.api.admissionregistration.v1.${m[1]}`;
  if ((m = /^V1((Mutating|Validating)Webhook.*|RuleWithOperations)$/.exec(cls))) return `io.k8s.api.admissionregistration.v1.${m[1]}`;
  if (cls === 'V1Condition') return `${META}Condition`;
  if ((m = /^V1(.+)$/.exec(cls))) return CORE + m[1];
  throw new Error(`no definition name for ${cls}`);
}

/** Descriptions of a class and of its properties, from its .d.ts comments. */
function descriptions(cls) {
  const text = readFileSync(join(MODELS, `${cls}.d.ts`), 'utf8');
  const clean = (c) =>
    c
      .split('\n')
      .map((l) => l.replace(/^\s*\/?\*+\/?\s?/, '').replace(/\s*\*\/\s*$/, ''))
      .join('\n')
      .trim()
      .replace(/\\'/g, "'")
      .replace(/\\"/g, '"')
      .replace(/\\\\/g, '\\');
  const out = { props: {}, required: [] };
  const classDoc = /\/\*\*((?:(?!\*\/)[\s\S])*)\*\/\s*export declare class/.exec(text);
  if (classDoc) out.doc = clean(classDoc[1]);
  const re = /(?:\/\*\*((?:(?!\*\/)[\s\S])*)\*\/\s*)?'([A-Za-z0-9_$]+)'(\??):/g;
  let m;
  while ((m = re.exec(text))) {
    if (m[1] !== undefined) out.props[m[2]] = clean(m[1]);
    if (m[3] !== '?') out.required.push(m[2]);
  }
  return out;
}

async function attributes(cls) {
  const mod = await import(join(MODELS, `${cls}.js`));
  return mod[cls].attributeTypeMap;
}

const refOf = (name, description) => (description ? { $ref: `#/definitions/${name}`, description } : { $ref: `#/definitions/${name}` });

/** The schema of one attribute type; classes met are queued. */
function typeSchema(type, format, queue) {
  let m;
  if ((m = /^Array<(.+)>$/.exec(type))) return { items: typeSchema(m[1], format, queue), type: 'array' };
  if ((m = /^\{ \[key: string\]: (.+); \}$/.exec(type))) return { additionalProperties: typeSchema(m[1], format === 'byte' ? 'byte' : '', queue), type: 'object' };
  if (type === 'string') return format ? { format, type: 'string' } : { type: 'string' };
  if (type === 'number') return format === 'double' ? { format: 'double', type: 'number' } : { format: format || 'int32', type: 'integer' };
  if (type === 'boolean') return { type: 'boolean' };
  if (type === 'Date') return refOf(`${META}Time`);
  if (type === 'IntOrString') return refOf(INT_OR_STRING);
  if (type === 'any' || type === 'object') return { type: 'object' };
  if (/^[A-Z]/.test(type)) {
    queue.push(type);
    return refOf(definitionName(type));
  }
  throw new Error(`unknown type ${type}`);
}

async function generate(roots, skip) {
  const defs = {};
  const queue = [...roots];
  const seen = new Set();
  while (queue.length > 0) {
    const cls = queue.shift();
    if (seen.has(cls) || EXTERNAL[cls]) continue;
    seen.add(cls);
    const name = definitionName(cls);
    const doc = descriptions(cls);
    const dropped = new Set(AFTER_1_23[cls] ?? []);
    const properties = {};
    for (const a of await attributes(cls)) {
      if (dropped.has(a.baseName)) continue;
      let schema;
      if (a.baseName === 'metadata' && a.type === 'V1ObjectMeta') {
        schema = refOf(`${META}ObjectMeta`, "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata");
      } else if (a.baseName === 'metadata' && a.type === 'V1ListMeta') {
        schema = refOf(`${META}ListMeta`, 'Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds');
      } else if (QUANTITY_FIELDS[cls]?.includes(a.baseName)) {
        schema = a.type.startsWith('{') ? { additionalProperties: refOf(QUANTITY), type: 'object' } : refOf(QUANTITY);
      } else {
        schema = typeSchema(a.type, a.format, queue);
      }
      const description = doc.props[a.baseName] ?? REF_DESCRIPTIONS[cls]?.[a.baseName];
      if (description) schema = schema.$ref ? { ...schema, description } : { description, ...schema };
      Object.assign(schema, FIELD_EXTENSIONS[cls]?.[a.baseName] ?? {});
      properties[a.baseName] = sortKeys(schema);
    }
    const def = {};
    if (doc.doc) def.description = doc.doc;
    def.properties = properties;
    const required = doc.required.filter((r) => !dropped.has(r));
    if (required.length > 0) def.required = required;
    def.type = 'object';
    if (ATOMIC_STRUCTS.has(cls)) def['x-kubernetes-map-type'] = 'atomic';
    if (GVK[cls]) def['x-kubernetes-group-version-kind'] = [{ group: GVK[cls][0], kind: GVK[cls][1], version: GVK[cls][2] }];
    if (!skip.has(name)) defs[name] = def;
  }
  return defs;
}

function sortKeys(o) {
  return Object.fromEntries(Object.entries(o).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

function emit(path, constName, header, defs) {
  const sorted = Object.fromEntries(Object.entries(defs).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  const body = JSON.stringify(sorted, null, 2);
  const text = `${header}\nimport type { Definitions } from '../../schema.js';\n\nexport const ${constName}: Definitions = ${body};\n`;
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
  console.log(`${path}: ${Object.keys(defs).length} definitions`);
}

// For kinds whose schemas only requests read: definitions.ts names them and definitions-data.cts holds them, loaded
// on the first read of one (src/registry/lazydefs.ts; idle memory, issue 5).
function emitLazy(path, constName, header, defs) {
  const sorted = Object.fromEntries(Object.entries(defs).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  const dataPath = path.replace(/\.ts$/, '-data.cts');
  const data = `${header}\nimport type { Definitions } from '../../schema.js';\n\nexport const ${constName}: Definitions = ${JSON.stringify(sorted, null, 2)};\n`;
  const names = JSON.stringify(Object.keys(sorted), null, 2).replace(/\n]$/, ',\n]');
  const text = `${header}
// The schemas are in ${basename(dataPath)}, loaded on the first read of one of them (idle memory).
import { createRequire } from 'node:module';
import { lazyDefinitions } from '../../lazydefs.js';
import type { Definitions } from '../../schema.js';

export const ${constName}: Definitions = lazyDefinitions(
  ${names.replace(/\n/g, '\n  ')},
  () => (createRequire(import.meta.url)('./${basename(dataPath).replace(/\.cts$/, '.cjs')}') as { ${constName}: Definitions }).${constName},
);
`;
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(dataPath, data);
  writeFileSync(path, text);
  console.log(`${path}: ${Object.keys(defs).length} definitions (lazy)`);
}

const HEADER = (what) => `// Generated by scripts/gen-definitions.mjs: the OpenAPI definitions of ${what} (Kubernetes 1.23 fields,
// patch strategies and list types; descriptions from @kubernetes/client-node's models). Do not edit by hand.`;

const pod = await generate(['V1Pod', 'V1PodList', 'V1Binding', 'V1Eviction'], new Set());
pod[INT_OR_STRING] = {
  description:
    'IntOrString is a type that can hold an int32 or a string.  When used in JSON or YAML marshalling and unmarshalling, it produces or consumes the inner type.  This allows you to have, for example, a JSON field that can accept a name or number.',
  format: 'int-or-string',
  type: 'string',
};
const eviction = pod['io.k8s.api.policy.v1.Eviction'];
pod['io.k8s.api.policy.v1beta1.Eviction'] = { ...eviction, 'x-kubernetes-group-version-kind': [{ group: 'policy', kind: 'Eviction', version: 'v1beta1' }] };
emitLazy(join(repo, 'src/registry/kinds/pod/definitions.ts'), 'POD_DEFINITIONS', HEADER('Pod, Binding and Eviction'), pod);

const event = await generate(['CoreV1Event', 'CoreV1EventList', 'EventsV1Event', 'EventsV1EventList'], new Set(Object.keys(pod)));
emitLazy(join(repo, 'src/registry/kinds/event/definitions.ts'), 'EVENT_DEFINITIONS', HEADER('core/v1 and events.k8s.io/v1 Event'), event);

const service = await generate(['V1Service', 'V1ServiceList', 'V1Endpoints', 'V1EndpointsList'], new Set([...Object.keys(pod), ...Object.keys(event)]));
emitLazy(join(repo, 'src/registry/kinds/service/definitions.ts'), 'SERVICE_DEFINITIONS', HEADER('Service and Endpoints'), service);

const priorityClass = await generate(['V1PriorityClass', 'V1PriorityClassList'], new Set());
emit(join(repo, 'src/registry/kinds/priorityclass/definitions.ts'), 'PRIORITY_CLASS_DEFINITIONS', HEADER('PriorityClass'), priorityClass);

const limitRange = await generate(['V1LimitRange', 'V1LimitRangeList'], new Set());
emit(join(repo, 'src/registry/kinds/limitrange/definitions.ts'), 'LIMIT_RANGE_DEFINITIONS', HEADER('LimitRange'), limitRange);

const storageClass = await generate(['V1StorageClass', 'V1StorageClassList'], new Set());
emit(join(repo, 'src/registry/kinds/storageclass/definitions.ts'), 'STORAGE_CLASS_DEFINITIONS', HEADER('StorageClass'), storageClass);

const runtimeClass = await generate(['V1RuntimeClass', 'V1RuntimeClassList'], new Set());
emit(join(repo, 'src/registry/kinds/runtimeclass/definitions.ts'), 'RUNTIME_CLASS_DEFINITIONS', HEADER('RuntimeClass'), runtimeClass);

const ingressClass = await generate(['V1IngressClass', 'V1IngressClassList', 'V1Ingress', 'V1IngressList'], new Set());
emitLazy(join(repo, 'src/registry/kinds/ingressclass/definitions.ts'), 'INGRESS_CLASS_DEFINITIONS', HEADER('IngressClass and Ingress'), ingressClass);

// admissionregistration.k8s.io v1 (1.22 stopped serving v1beta1).
const webhooks = await generate(
  ['V1MutatingWebhookConfiguration', 'V1MutatingWebhookConfigurationList', 'V1ValidatingWebhookConfiguration', 'V1ValidatingWebhookConfigurationList'],
  new Set(),
);
emitLazy(join(repo, 'src/registry/kinds/admissionregistration/definitions.ts'), 'ADMISSION_REGISTRATION_DEFINITIONS', HEADER('admissionregistration.k8s.io v1'), webhooks);

const resourceQuota = await generate(['V1ResourceQuota', 'V1ResourceQuotaList'], new Set());
emit(join(repo, 'src/registry/kinds/resourcequota/definitions.ts'), 'RESOURCE_QUOTA_DEFINITIONS', HEADER('ResourceQuota'), resourceQuota);
