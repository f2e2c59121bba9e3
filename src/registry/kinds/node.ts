/**
 * Node (core/v1, cluster-scoped), as Kubernetes 1.23 serves it:
 *   - strategy: pkg/registry/core/node/strategy.go (all fields, status included, may be set on create; the
 *     main resource keeps the old status on update, the status subresource keeps the old spec;
 *     spec.configSource and status.config are dropped unless DynamicKubeletConfig is on or they are in use)
 *   - conversion: Convert_v1_NodeSpec_To_core_NodeSpec and back (podCIDR is podCIDRs[0]; a lone podCIDR
 *     fills podCIDRs)
 *   - validation: ValidateNode, ValidateNodeUpdate, validateNodeTaints, ValidateNodeResources,
 *     validateNodeConfigSourceSpec/Status (pkg/apis/core/validation/validation.go). ValidateNode passes
 *     the taints the path `metadata.taints`, as Kubernetes does. The preferAvoidPods annotation is not
 *     checked.
 *   - table: printNode (pkg/printers/internalversion/printers.go): NAME STATUS ROLES AGE VERSION, wide:
 *     INTERNAL-IP EXTERNAL-IP OS-IMAGE KERNEL-VERSION CONTAINER-RUNTIME
 *   - field selectors: metadata.name and spec.unschedulable (NodeToSelectableFields)
 *
 * Feature gate (1.23 default false): DynamicKubeletConfig.
 */
import type { KObject, KindDecl, StrategyContext, SubresourceStrategy, TableColumn } from '../kind.js';
import { ref, type Definitions, type Schema } from '../schema.js';
import { API_VERSION_PROPERTY, KIND_PROPERTY, LIST_META_REF, META_NAMES, OBJECT_META_REF } from '../definitions/meta.js';
import { AGE_COLUMN, isConfigMapKey, isObject } from './configmap.js';
import { quantityFromJSON, QuantityParseError, type Quantity } from '../../util/quantity.js';
import { isCIDR } from '../../util/flags.js';
import {
  compareBytes,
  duplicate,
  ErrorType,
  FieldError,
  forbidden,
  GoLiteral,
  goQuote,
  internalError,
  invalid,
  isValidLabelValue,
  nameIsDNSSubdomain,
  notSupported,
  required,
  root,
  validateLabelName,
  validateNamespaceName,
  type FieldPath,
  type NameValidator,
  IS_NEGATIVE_ERROR_MSG,
} from '../../util/validation.js';
import { isIP } from 'node:net';
import { nodeProxyConnector } from './proxy.js';

type Json = Record<string, any>;

// ---------------------------------------------------------------------------------------------------
// Constants
// ---------------------------------------------------------------------------------------------------

export const FEATURE_DYNAMIC_KUBELET_CONFIG = 'DynamicKubeletConfig';

export const TAINT_EFFECT_NO_SCHEDULE = 'NoSchedule';
export const TAINT_EFFECT_PREFER_NO_SCHEDULE = 'PreferNoSchedule';
export const TAINT_EFFECT_NO_EXECUTE = 'NoExecute';
const TAINT_EFFECTS: readonly string[] = [TAINT_EFFECT_NO_SCHEDULE, TAINT_EFFECT_PREFER_NO_SCHEDULE, TAINT_EFFECT_NO_EXECUTE];

/** node-role.kubernetes.io/<role>: a role label (printers.go labelNodeRolePrefix). */
export const LABEL_NODE_ROLE_PREFIX = 'node-role.kubernetes.io/';
/** kubernetes.io/role: the older role label, whose value is the role (printers.go nodeLabelRole). */
export const NODE_LABEL_ROLE = 'kubernetes.io/role';

const IS_NOT_INTEGER_ERROR_MSG = 'must be an integer';
const POD_CIDR_UPDATE_MSG = 'node updates may not change podCIDR except from "" to valid';

/** ValidateNodeName: a DNS-1123 subdomain. */
export const nodeNameValidator: NameValidator = nameIsDNSSubdomain;

// ---------------------------------------------------------------------------------------------------
// Schemas (api/openapi-spec/swagger.json, 1.23)
// ---------------------------------------------------------------------------------------------------

const CORE = 'io.k8s.api.core.v1.';
const NODE = `${CORE}Node`;
const NODE_LIST = `${CORE}NodeList`;
const NODE_SPEC = `${CORE}NodeSpec`;
const NODE_STATUS = `${CORE}NodeStatus`;
const NODE_CONDITION = `${CORE}NodeCondition`;
const NODE_ADDRESS = `${CORE}NodeAddress`;
const NODE_DAEMON_ENDPOINTS = `${CORE}NodeDaemonEndpoints`;
const DAEMON_ENDPOINT = `${CORE}DaemonEndpoint`;
const NODE_SYSTEM_INFO = `${CORE}NodeSystemInfo`;
const CONTAINER_IMAGE = `${CORE}ContainerImage`;
const TAINT = `${CORE}Taint`;
const ATTACHED_VOLUME = `${CORE}AttachedVolume`;
const NODE_CONFIG_SOURCE = `${CORE}NodeConfigSource`;
const NODE_CONFIG_STATUS = `${CORE}NodeConfigStatus`;
const CONFIG_MAP_NODE_CONFIG_SOURCE = `${CORE}ConfigMapNodeConfigSource`;

const API_CONVENTIONS = 'https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md';
const str = (description: string): Schema => ({ description, type: 'string' });
const strings = (description: string): Schema => ({ description, items: { type: 'string' }, type: 'array' });
const quantityMap = (description: string): Schema => ({ additionalProperties: ref(META_NAMES.Quantity), description, type: 'object' });

const ADDRESSES_DOC =
  'List of addresses reachable to the node. Queried from cloud provider, if available. More info: https://kubernetes.io/docs/concepts/nodes/node/#addresses Note: This field is defined as mergeable, but the merge key is not sufficiently unique, which can cause data corruption when it is merged. Callers should instead use a full-replacement patch. See https://pr.k8s.io/79391 for an example.';
const KUBELET_VERSION_DOC = 'Kubelet Version reported by the node.';
const OS_IMAGE_DOC = 'OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).';
const KERNEL_VERSION_DOC = "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).";
const CONTAINER_RUNTIME_DOC = 'ContainerRuntime Version reported by the node through runtime remote API (e.g. docker://1.5.0).';

export const NODE_DEFINITIONS: Definitions = {
  [NODE]: {
    description: 'Node is a worker node in Kubernetes. Each node will have a unique identifier in the cache (i.e. in etcd).',
    properties: {
      apiVersion: API_VERSION_PROPERTY,
      kind: KIND_PROPERTY,
      metadata: OBJECT_META_REF,
      spec: ref(NODE_SPEC, `Spec defines the behavior of a node. ${API_CONVENTIONS}#spec-and-status`),
      status: ref(
        NODE_STATUS,
        `Most recently observed status of the node. Populated by the system. Read-only. More info: ${API_CONVENTIONS}#spec-and-status`,
      ),
    },
    type: 'object',
    'x-kubernetes-group-version-kind': [{ group: '', kind: 'Node', version: 'v1' }],
  },
  [NODE_LIST]: {
    description: "NodeList is the whole list of all Nodes which have been registered with master.",
    properties: {
      apiVersion: API_VERSION_PROPERTY,
      items: { description: 'List of nodes', items: ref(NODE), type: 'array' },
      kind: KIND_PROPERTY,
      metadata: LIST_META_REF,
    },
    required: ['items'],
    type: 'object',
    'x-kubernetes-group-version-kind': [{ group: '', kind: 'NodeList', version: 'v1' }],
  },
  [NODE_SPEC]: {
    description: 'NodeSpec describes the attributes that a node is created with.',
    properties: {
      configSource: ref(
        NODE_CONFIG_SOURCE,
        'Deprecated. If specified, the source of the node\'s configuration. The DynamicKubeletConfig feature gate must be enabled for the Kubelet to use this field. This field is deprecated as of 1.22: https://git.k8s.io/enhancements/keps/sig-node/281-dynamic-kubelet-configuration',
      ),
      externalID: str('Deprecated. Not all kubelets will set this field. Remove field after 1.13. see: https://issues.k8s.io/61966'),
      podCIDR: str('PodCIDR represents the pod IP range assigned to the node.'),
      podCIDRs: {
        ...strings(
          'podCIDRs represents the IP ranges assigned to the node for usage by Pods on that node. If this field is specified, the 0th entry must match the podCIDR field. It may contain at most 1 value for each of IPv4 and IPv6.',
        ),
        'x-kubernetes-patch-strategy': 'merge',
      },
      providerID: str('ID of the node assigned by the cloud provider in the format: <ProviderName>://<ProviderSpecificNodeID>'),
      taints: { description: "If specified, the node's taints.", items: ref(TAINT), type: 'array' },
      unschedulable: {
        description:
          'Unschedulable controls node schedulability of new pods. By default, node is schedulable. More info: https://kubernetes.io/docs/concepts/nodes/node/#manual-node-administration',
        type: 'boolean',
      },
    },
    type: 'object',
  },
  [NODE_STATUS]: {
    description: 'NodeStatus is information about the current status of a node.',
    properties: {
      addresses: {
        description: ADDRESSES_DOC,
        items: ref(NODE_ADDRESS),
        type: 'array',
        'x-kubernetes-patch-merge-key': 'type',
        'x-kubernetes-patch-strategy': 'merge',
      },
      allocatable: quantityMap('Allocatable represents the resources of a node that are available for scheduling. Defaults to Capacity.'),
      capacity: quantityMap(
        'Capacity represents the total resources of a node. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#capacity',
      ),
      conditions: {
        description:
          'Conditions is an array of current observed node conditions. More info: https://kubernetes.io/docs/concepts/nodes/node/#condition',
        items: ref(NODE_CONDITION),
        type: 'array',
        'x-kubernetes-patch-merge-key': 'type',
        'x-kubernetes-patch-strategy': 'merge',
      },
      config: ref(NODE_CONFIG_STATUS, 'Status of the config assigned to the node via the dynamic Kubelet config feature.'),
      daemonEndpoints: ref(NODE_DAEMON_ENDPOINTS, 'Endpoints of daemons running on the Node.'),
      images: { description: 'List of container images on this node', items: ref(CONTAINER_IMAGE), type: 'array' },
      nodeInfo: ref(NODE_SYSTEM_INFO, 'Set of ids/uuids to uniquely identify the node. More info: https://kubernetes.io/docs/concepts/nodes/node/#info'),
      phase: {
        description:
          'NodePhase is the recently observed lifecycle phase of the node. More info: https://kubernetes.io/docs/concepts/nodes/node/#phase The field is never populated, and now is deprecated.\n\nPossible enum values:\n - `"Pending"` means the node has been created/added by the system, but not configured.\n - `"Running"` means the node has been configured and has Kubernetes components running.\n - `"Terminated"` means the node has been removed from the cluster.',
        enum: ['Pending', 'Running', 'Terminated'],
        type: 'string',
      },
      volumesAttached: { description: 'List of volumes that are attached to the node.', items: ref(ATTACHED_VOLUME), type: 'array' },
      volumesInUse: strings('List of attachable volumes in use (mounted) by the node.'),
    },
    type: 'object',
  },
  [NODE_CONDITION]: {
    description: 'NodeCondition contains condition information for a node.',
    properties: {
      lastHeartbeatTime: ref(META_NAMES.Time, 'Last time we got an update on a given condition.'),
      lastTransitionTime: ref(META_NAMES.Time, 'Last time the condition transit from one status to another.'),
      message: str('Human readable message indicating details about last transition.'),
      reason: str("(brief) reason for the condition's last transition."),
      status: str('Status of the condition, one of True, False, Unknown.'),
      type: str('Type of node condition.'),
    },
    required: ['type', 'status'],
    type: 'object',
  },
  [NODE_ADDRESS]: {
    description: "NodeAddress contains information for the node's address.",
    properties: {
      address: str('The node address.'),
      type: str('Node address type, one of Hostname, ExternalIP or InternalIP.'),
    },
    required: ['type', 'address'],
    type: 'object',
  },
  [NODE_DAEMON_ENDPOINTS]: {
    description: 'NodeDaemonEndpoints lists ports opened by daemons running on the Node.',
    properties: { kubeletEndpoint: ref(DAEMON_ENDPOINT, 'Endpoint on which Kubelet is listening.') },
    type: 'object',
  },
  [DAEMON_ENDPOINT]: {
    description: 'DaemonEndpoint contains information about a single Daemon endpoint.',
    properties: { Port: { description: 'Port number of the given endpoint.', format: 'int32', type: 'integer' } },
    required: ['Port'],
    type: 'object',
  },
  [NODE_SYSTEM_INFO]: {
    description: 'NodeSystemInfo is a set of ids/uuids to uniquely identify the node.',
    properties: {
      architecture: str('The Architecture reported by the node'),
      bootID: str('Boot ID reported by the node.'),
      containerRuntimeVersion: str(CONTAINER_RUNTIME_DOC),
      kernelVersion: str(KERNEL_VERSION_DOC),
      kubeProxyVersion: str('KubeProxy Version reported by the node.'),
      kubeletVersion: str(KUBELET_VERSION_DOC),
      machineID: str(
        'MachineID reported by the node. For unique machine identification in the cluster this field is preferred. Learn more from man(5) machine-id: http://man7.org/linux/man-pages/man5/machine-id.5.html',
      ),
      operatingSystem: str('The Operating System reported by the node'),
      osImage: str(OS_IMAGE_DOC),
      systemUUID: str(
        'SystemUUID reported by the node. For unique machine identification MachineID is preferred. This field is specific to Red Hat hosts https://access.redhat.com/documentation/en-us/red_hat_subscription_management/1/html/rhsm/uuid',
      ),
    },
    required: [
      'machineID',
      'systemUUID',
      'bootID',
      'kernelVersion',
      'osImage',
      'containerRuntimeVersion',
      'kubeletVersion',
      'kubeProxyVersion',
      'operatingSystem',
      'architecture',
    ],
    type: 'object',
  },
  [CONTAINER_IMAGE]: {
    description: 'Describe a container image',
    properties: {
      names: strings('Names by which this image is known. e.g. ["k8s.gcr.io/hyperkube:v1.0.7", "dockerhub.io/google_containers/hyperkube:v1.0.7"]'),
      sizeBytes: { description: 'The size of the image in bytes.', format: 'int64', type: 'integer' },
    },
    type: 'object',
  },
  [TAINT]: {
    description: 'The node this Taint is attached to has the "effect" on any pod that does not tolerate the Taint.',
    properties: {
      effect: {
        description:
          'Required. The effect of the taint on pods that do not tolerate the taint. Valid effects are NoSchedule, PreferNoSchedule and NoExecute.\n\nPossible enum values:\n - `"NoExecute"` Evict any already-running pods that do not tolerate the taint. Currently enforced by NodeController.\n - `"NoSchedule"` Do not allow new pods to schedule onto the node unless they tolerate the taint, but allow all pods submitted to Kubelet without going through the scheduler to start, and allow all already-running pods to continue running. Enforced by the scheduler.\n - `"PreferNoSchedule"` Like TaintEffectNoSchedule, but the scheduler tries not to schedule new pods onto the node, rather than prohibiting new pods from scheduling onto the node entirely. Enforced by the scheduler.',
        enum: ['NoExecute', 'NoSchedule', 'PreferNoSchedule'],
        type: 'string',
      },
      key: str('Required. The taint key to be applied to a node.'),
      timeAdded: ref(META_NAMES.Time, 'TimeAdded represents the time at which the taint was added. It is only written for NoExecute taints.'),
      value: str('The taint value corresponding to the taint key.'),
    },
    required: ['key', 'effect'],
    type: 'object',
  },
  [ATTACHED_VOLUME]: {
    description: 'AttachedVolume describes a volume attached to a node',
    properties: {
      devicePath: str('DevicePath represents the device path where the volume should be available'),
      name: str('Name of the attached volume'),
    },
    required: ['name', 'devicePath'],
    type: 'object',
  },
  [NODE_CONFIG_SOURCE]: {
    description:
      'NodeConfigSource specifies a source of node configuration. Exactly one subfield (excluding metadata) must be non-nil. This API is deprecated since 1.22',
    properties: { configMap: ref(CONFIG_MAP_NODE_CONFIG_SOURCE, 'ConfigMap is a reference to a Node\'s ConfigMap') },
    type: 'object',
  },
  [CONFIG_MAP_NODE_CONFIG_SOURCE]: {
    description:
      'ConfigMapNodeConfigSource contains the information to reference a ConfigMap as a config source for the Node. This API is deprecated since 1.22: https://git.k8s.io/enhancements/keps/sig-node/281-dynamic-kubelet-configuration',
    properties: {
      kubeletConfigKey: str(
        'KubeletConfigKey declares which key of the referenced ConfigMap corresponds to the KubeletConfiguration structure This field is required in all cases.',
      ),
      name: str('Name is the metadata.name of the referenced ConfigMap. This field is required in all cases.'),
      namespace: str('Namespace is the metadata.namespace of the referenced ConfigMap. This field is required in all cases.'),
      resourceVersion: str(
        'ResourceVersion is the metadata.ResourceVersion of the referenced ConfigMap. This field is forbidden in Node.Spec, and required in Node.Status.',
      ),
      uid: str('UID is the metadata.UID of the referenced ConfigMap. This field is forbidden in Node.Spec, and required in Node.Status.'),
    },
    required: ['namespace', 'name', 'kubeletConfigKey'],
    type: 'object',
  },
  [NODE_CONFIG_STATUS]: {
    description: 'NodeConfigStatus describes the status of the config assigned by Node.Spec.ConfigSource.',
    properties: {
      active: ref(
        NODE_CONFIG_SOURCE,
        'Active reports the checkpointed config the node is actively using. Active will represent either the current version of the Assigned config, or the current LastKnownGood config, depending on whether attempting to use the Assigned config results in an error.',
      ),
      assigned: ref(
        NODE_CONFIG_SOURCE,
        "Assigned reports the checkpointed config the node will try to use. When Node.Spec.ConfigSource is updated, the node checkpoints the associated config payload to local disk, along with a record indicating intended config. The node refers to this record to choose its config checkpoint, and reports this record in Assigned. Assigned only updates in the status after the record has been checkpointed to disk. When the Kubelet is restarted, it tries to make the Assigned config the Active config by loading and validating the checkpointed payload identified by Assigned.",
      ),
      error: str(
        'Error describes any problems reconciling the Spec.ConfigSource to the Active config. Errors may occur, for example, attempting to checkpoint Spec.ConfigSource to the local Assigned record, attempting to checkpoint the payload associated with Spec.ConfigSource, attempting to load or validate the Assigned config, etc. Errors may occur at different points while syncing config. Earlier errors (e.g. download or checkpointing errors) will not result in a rollback to LastKnownGood, and may resolve across Kubelet retries. Later errors (e.g. loading or validating a checkpointed config) will result in a rollback to LastKnownGood. In the latter case, it is usually possible to resolve the error by fixing the config assigned in Spec.ConfigSource. You can find additional information for debugging by searching the error message in the Kubelet log. Error is a human-readable description of the error state; machines can check whether or not Error is empty, but should not rely on the stability of the Error text across Kubelet versions.',
      ),
      lastKnownGood: ref(
        NODE_CONFIG_SOURCE,
        "LastKnownGood reports the checkpointed config the node will fall back to when it encounters an error attempting to use the Assigned config. The Assigned config becomes the LastKnownGood config when the node determines that the Assigned config is stable and correct. This is currently implemented as a 10-minute soak period starting when the local record of Assigned config is updated. If the Assigned config is Active at the end of this period, it becomes the LastKnownGood. Note that if Spec.ConfigSource is reset to nil (use local defaults), the LastKnownGood is also immediately reset to nil, because the local default config is always assumed good. You should not make assumptions about the node's method of determining config stability and correctness, as this may change or become configurable in the future.",
      ),
    },
    type: 'object',
  },
};

// ---------------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------------

const s = (v: unknown): string =>
  typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint' ? String(v) : v == null ? '' : JSON.stringify(v);
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const gate = (ctx: StrategyContext, name: string) => ctx.featureGates[name] === true;
const clone = <T>(v: T): T => structuredClone(v);

function specOf(obj: KObject): Json {
  if (!isObject(obj.spec)) obj.spec = {};
  return obj.spec as Json;
}
function statusOf(obj: KObject): Json {
  if (!isObject(obj.status)) obj.status = {};
  return obj.status as Json;
}

function parseQty(v: unknown): Quantity | null {
  try {
    return quantityFromJSON(v === null ? '0' : v);
  } catch (e) {
    if (e instanceof QuantityParseError) return null;
    throw e;
  }
}

// ---------------------------------------------------------------------------------------------------
// Conversion and disabled fields
// ---------------------------------------------------------------------------------------------------

/**
 * The v1 ↔ internal round trip of NodeSpec: a podCIDR without podCIDRs becomes podCIDRs; podCIDR is then
 * podCIDRs[0] (or absent when there are none).
 */
export function normalizePodCIDRs(spec: Json): void {
  const cidrs = spec['podCIDRs'];
  if ((cidrs === undefined || cidrs === null) && s(spec['podCIDR']) !== '') spec['podCIDRs'] = [s(spec['podCIDR'])];
  const after = list(spec['podCIDRs']);
  if (after.length > 0) spec['podCIDR'] = s(after[0]);
  else {
    delete spec['podCIDR'];
    delete spec['podCIDRs'];
  }
}

/** dropDisabledFields: configSource and status.config only under DynamicKubeletConfig, or when already in use. */
function dropDisabledFields(obj: KObject, old: KObject | undefined, ctx: StrategyContext): void {
  if (gate(ctx, FEATURE_DYNAMIC_KUBELET_CONFIG)) return;
  const inUse = old !== undefined && isObject(old.spec) && isObject(old.spec['configSource']);
  if (inUse) return;
  if (isObject(obj.spec)) delete obj.spec['configSource'];
  if (isObject(obj.status)) delete obj.status['config'];
}

// ---------------------------------------------------------------------------------------------------
// Validation
// ---------------------------------------------------------------------------------------------------

/** %#v of a core.Taint. */
function taintLiteral(t: Json): GoLiteral {
  const added = t['timeAdded'] ? '(*v1.Time)(0xc000000001)' : '(*v1.Time)(nil)';
  return new GoLiteral(
    `core.Taint{Key:${goQuote(s(t['key']))}, Value:${goQuote(s(t['value']))}, Effect:${goQuote(s(t['effect']))}, TimeAdded:${added}}`,
  );
}

/** validateTaintEffect (empty not allowed). */
function validateTaintEffect(effect: string, path: FieldPath): FieldError[] {
  if (effect === '') return [required(path, '')];
  return TAINT_EFFECTS.includes(effect) ? [] : [notSupported(path, effect, TAINT_EFFECTS)];
}

/** validateNodeTaints: key a label name, value a label value, a known effect, unique by key and effect. */
export function validateNodeTaints(taints: unknown, path: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  const unique = new Map<string, Set<string>>();
  list(taints).forEach((t0, i) => {
    const t = isObject(t0) ? t0 : {};
    const p = path.index(i);
    const key = s(t['key']);
    const value = s(t['value']);
    const effect = s(t['effect']);
    errs.push(...validateLabelName(key, p.child('key')));
    const valueErrs = isValidLabelValue(value);
    if (valueErrs.length > 0) errs.push(invalid(p.child('value'), value, valueErrs.join(';')));
    errs.push(...validateTaintEffect(effect, p.child('effect')));
    const keys = unique.get(effect);
    if (keys?.has(key)) {
      errs.push(new FieldError(ErrorType.Duplicate, p.toString(), taintLiteral(t), 'taints must be unique by key and effect pair'));
      return;
    }
    if (keys) keys.add(key);
    else unique.set(effect, new Set([key]));
  });
  return errs;
}

/** IsNativeResource: no domain, or a kubernetes.io domain. */
function isNativeResource(name: string): boolean {
  return !name.includes('/') || name.includes('kubernetes.io/');
}

const INTEGER_RESOURCES = new Set([
  'pods',
  'services',
  'replicationcontrollers',
  'resourcequotas',
  'secrets',
  'configmaps',
  'persistentvolumeclaims',
  'services.nodeports',
  'services.loadbalancers',
]);

/** helper.IsIntegerResourceName: the counted resources, and extended resources. */
function isIntegerResourceName(name: string): boolean {
  if (INTEGER_RESOURCES.has(name)) return true;
  // IsExtendedResourceName
  if (isNativeResource(name) || name.startsWith('requests.')) return false;
  return /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/.test(`requests.${name}`);
}

/** ValidateResourceQuantityValue of every entry of a ResourceList (in key order: Go's map order is random). */
function validateResourceList(rl: unknown, path: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  if (!isObject(rl)) return errs;
  for (const k of Object.keys(rl).sort(compareBytes)) {
    const p = path.key(k);
    const q = parseQty(rl[k]);
    if (q === null) {
      errs.push(invalid(p, s(rl[k]), 'quantities must match the regular expression'));
      continue;
    }
    if (q.sign() < 0) errs.push(invalid(p, q.toString(), IS_NEGATIVE_ERROR_MSG));
    if (isIntegerResourceName(k) && q.milliValue() % 1000n !== 0n) errs.push(invalid(p, q.toString(), IS_NOT_INTEGER_ERROR_MSG));
  }
  return errs;
}

/** ValidateNodeResources */
function validateNodeResources(obj: KObject): FieldError[] {
  const status = isObject(obj.status) ? obj.status : {};
  return [...validateResourceList(status['capacity'], root('status', 'capacity')), ...validateResourceList(status['allocatable'], root('status', 'allocatable'))];
}

/** netutils.IsDualStackCIDRStrings: exactly one IPv4 and at least one IPv6 among them (two here at most). */
function isDualStack(cidrs: string[]): boolean {
  const families = new Set(cidrs.map((c) => isIP(c.split('/')[0] ?? '')));
  return families.has(4) && families.has(6);
}

/** ValidateNode, without the object metadata (validated by the store). */
export function validateNode(obj: KObject): FieldError[] {
  const errs: FieldError[] = [];
  const spec = isObject(obj.spec) ? obj.spec : {};
  // Kubernetes passes metadata's path to the taints check.
  if (list(spec['taints']).length > 0) errs.push(...validateNodeTaints(spec['taints'], root('metadata').child('taints')));
  errs.push(...validateNodeResources(obj));
  const cidrs = list(spec['podCIDRs']).map(s);
  if (cidrs.length > 0) {
    const path = root('spec', 'podCIDRs');
    cidrs.forEach((c, i) => {
      if (!isCIDR(c)) errs.push(invalid(path.index(i), cidrs, 'must be valid CIDR'));
    });
    if (cidrs.length > 1) {
      if (!cidrs.every(isCIDR)) {
        errs.push(internalError(path, `invalid PodCIDRs. failed to check with dual stack with error:invalid CIDR address: ${cidrs.find((c) => !isCIDR(c)) ?? ''}`));
      }
      if (!isDualStack(cidrs) || cidrs.length > 2) errs.push(invalid(path, cidrs, 'may specify no more than one CIDR for each IP family'));
      const seen = new Set<string>();
      cidrs.forEach((c, i) => {
        if (seen.has(c)) errs.push(duplicate(path.index(i), c));
        seen.add(c);
      });
    }
  }
  return errs;
}

/** validateConfigMapNodeConfigSource: the reference's namespace, name and key. */
function validateConfigMapNodeConfigSource(cm: Json, path: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  const ns = s(cm['namespace']);
  if (ns === '') errs.push(required(path.child('namespace'), 'namespace must be set'));
  else for (const msg of validateNamespaceName(ns, false)) errs.push(invalid(path.child('namespace'), ns, msg));
  const name = s(cm['name']);
  if (name === '') errs.push(required(path.child('name'), 'name must be set'));
  else for (const msg of nameIsDNSSubdomain(name, false)) errs.push(invalid(path.child('name'), name, msg));
  const key = s(cm['kubeletConfigKey']);
  if (key === '') errs.push(required(path.child('kubeletConfigKey'), 'kubeletConfigKey must be set'));
  else for (const msg of isConfigMapKey(key)) errs.push(invalid(path.child('kubeletConfigKey'), key, msg));
  return errs;
}

/** validateNodeConfigSourceSpec (inSpec) and validateNodeConfigSourceStatus (!inSpec). */
function validateNodeConfigSource(source: Json, path: FieldPath, inSpec: boolean): FieldError[] {
  const errs: FieldError[] = [];
  let count = 0;
  if (isObject(source['configMap'])) {
    count++;
    const cm = source['configMap'];
    const p = path.child('configMap');
    if (inSpec) {
      if (s(cm['uid']) !== '') errs.push(forbidden(p.child('uid'), 'uid must not be set in spec'));
      if (s(cm['resourceVersion']) !== '') errs.push(forbidden(p.child('resourceVersion'), 'resourceVersion must not be set in spec'));
    } else {
      if (s(cm['uid']) === '') errs.push(required(p.child('uid'), 'uid must be set in status'));
      if (s(cm['resourceVersion']) === '') errs.push(required(p.child('resourceVersion'), 'resourceVersion must be set in status'));
    }
    errs.push(...validateConfigMapNodeConfigSource(cm, p));
  }
  if (count !== 1) {
    const literal = new GoLiteral('&core.NodeConfigSource{ConfigMap:(*core.ConfigMapNodeConfigSource)(nil)}');
    errs.push(invalid(path, literal, 'exactly one reference subfield must be non-nil'));
  }
  return errs;
}

/** ValidateNodeUpdate, without the object metadata (validated by the store). */
export function validateNodeUpdate(obj: KObject, old: KObject): FieldError[] {
  const errs: FieldError[] = [];
  const spec: Json = isObject(obj.spec) ? obj.spec : {};
  const oldSpec: Json = isObject(old.spec) ? old.spec : {};
  const status: Json = isObject(obj.status) ? obj.status : {};
  errs.push(...validateNodeResources(obj));

  const seen = new Set<string>();
  list(status['addresses']).forEach((a0, i) => {
    const a = isObject(a0) ? a0 : {};
    const key = JSON.stringify([s(a['type']), s(a['address'])]);
    if (seen.has(key)) {
      const literal = new GoLiteral(`core.NodeAddress{Type:${goQuote(s(a['type']))}, Address:${goQuote(s(a['address']))}}`);
      errs.push(duplicate(root('status', 'addresses').index(i), literal));
    }
    seen.add(key);
  });

  const oldCIDRs = list(oldSpec['podCIDRs']).map(s);
  const newCIDRs = list(spec['podCIDRs']).map(s);
  if (oldCIDRs.length > 0) {
    if (oldCIDRs.length !== newCIDRs.length) errs.push(forbidden(root('spec', 'podCIDRs'), POD_CIDR_UPDATE_MSG));
    else oldCIDRs.forEach((c, i) => c !== newCIDRs[i] && errs.push(forbidden(root('spec', 'podCIDRs'), POD_CIDR_UPDATE_MSG)));
  }
  const oldProvider = s(oldSpec['providerID']);
  if (oldProvider !== '' && oldProvider !== s(spec['providerID'])) {
    errs.push(forbidden(root('spec', 'providerID'), 'node updates may not change providerID except from "" to valid'));
  }
  if (isObject(spec['configSource'])) errs.push(...validateNodeConfigSource(spec['configSource'], root('spec', 'configSource'), true));
  if (isObject(status['config'])) {
    const cfg = status['config'];
    const p = root('status', 'config');
    for (const f of ['assigned', 'active', 'lastKnownGood']) {
      if (isObject(cfg[f])) errs.push(...validateNodeConfigSource(cfg[f], p.child(f), false));
    }
  }
  if (list(spec['taints']).length > 0) errs.push(...validateNodeTaints(spec['taints'], root('metadata').child('taints')));
  if (s(spec['externalID']) !== s(oldSpec['externalID'])) errs.push(forbidden(root('spec', 'externalID'), 'may not be updated'));
  return errs;
}

// ---------------------------------------------------------------------------------------------------
// Table (printNode)
// ---------------------------------------------------------------------------------------------------

/** The STATUS cell: Ready / NotReady from the Ready condition (Unknown without one), then SchedulingDisabled. */
export function nodeStatus(obj: KObject): string {
  const status = isObject(obj.status) ? obj.status : {};
  let ready: Json | undefined;
  for (const c of list(status['conditions'])) if (isObject(c) && s(c['type']) === 'Ready') ready = c; // the last one wins, as Go's map does
  const out: string[] = [];
  if (ready) out.push(s(ready['status']) === 'True' ? 'Ready' : 'NotReady');
  if (out.length === 0) out.push('Unknown');
  if (isObject(obj.spec) && obj.spec['unschedulable'] === true) out.push('SchedulingDisabled');
  return out.join(',');
}

/** findNodeRoles: node-role.kubernetes.io/<role> labels and the kubernetes.io/role label's value, sorted. */
export function nodeRoles(obj: KObject): string[] {
  const roles = new Set<string>();
  const labels = obj.metadata?.labels;
  if (isObject(labels)) {
    for (const [k, v] of Object.entries(labels)) {
      if (k.startsWith(LABEL_NODE_ROLE_PREFIX)) {
        const role = k.slice(LABEL_NODE_ROLE_PREFIX.length);
        if (role.length > 0) roles.add(role);
      } else if (k === NODE_LABEL_ROLE && s(v) !== '') roles.add(s(v));
    }
  }
  return [...roles].sort(compareBytes);
}

function nodeAddress(obj: KObject, type: string): string {
  const status = isObject(obj.status) ? obj.status : {};
  for (const a of list(status['addresses'])) if (isObject(a) && s(a['type']) === type) return s(a['address']);
  return '<none>';
}

function nodeInfo(obj: KObject, field: string, unknown?: string): string {
  const info = isObject(obj.status) && isObject(obj.status['nodeInfo']) ? obj.status['nodeInfo'] : {};
  const v = s(info[field]);
  return v === '' && unknown !== undefined ? unknown : v;
}

const columns: TableColumn[] = [
  { name: 'Status', type: 'string', description: 'The status of the node', priority: 0, cell: nodeStatus },
  {
    name: 'Roles',
    type: 'string',
    description: 'The roles of the node',
    priority: 0,
    cell: (obj) => nodeRoles(obj).join(',') || '<none>',
  },
  AGE_COLUMN,
  { name: 'Version', type: 'string', description: KUBELET_VERSION_DOC, priority: 0, cell: (obj) => nodeInfo(obj, 'kubeletVersion') },
  { name: 'Internal-IP', type: 'string', description: ADDRESSES_DOC, priority: 1, cell: (obj) => nodeAddress(obj, 'InternalIP') },
  { name: 'External-IP', type: 'string', description: ADDRESSES_DOC, priority: 1, cell: (obj) => nodeAddress(obj, 'ExternalIP') },
  { name: 'OS-Image', type: 'string', description: OS_IMAGE_DOC, priority: 1, cell: (obj) => nodeInfo(obj, 'osImage', '<unknown>') },
  { name: 'Kernel-Version', type: 'string', description: KERNEL_VERSION_DOC, priority: 1, cell: (obj) => nodeInfo(obj, 'kernelVersion', '<unknown>') },
  {
    name: 'Container-Runtime',
    type: 'string',
    description: CONTAINER_RUNTIME_DOC,
    priority: 1,
    cell: (obj) => nodeInfo(obj, 'containerRuntimeVersion', '<unknown>'),
  },
];

// ---------------------------------------------------------------------------------------------------
// The kind
// ---------------------------------------------------------------------------------------------------

function canonicalizeResourceList(rl: unknown): void {
  if (!isObject(rl)) return;
  for (const k of Object.keys(rl)) {
    const q = parseQty(rl[k]);
    if (q !== null) rl[k] = q.toString();
  }
}

const statusStrategy: SubresourceStrategy = {
  /** The status subresource keeps spec; status.config only under DynamicKubeletConfig or when in use. */
  prepareForUpdate(obj: KObject, old: KObject, ctx: StrategyContext): void {
    if (old.spec !== undefined) obj.spec = clone(old.spec);
    else delete obj.spec;
    const inUse = isObject(old.status) && isObject(old.status['config']);
    if (!gate(ctx, FEATURE_DYNAMIC_KUBELET_CONFIG) && !inUse && isObject(obj.status)) delete obj.status['config'];
  },
  validateUpdate(obj: KObject, old: KObject): FieldError[] {
    return validateNodeUpdate(obj, old);
  },
};

export const nodeKind: KindDecl = {
  group: '',
  version: 'v1',
  kind: 'Node',
  listKind: 'NodeList',
  resource: 'nodes',
  singular: 'node',
  shortNames: ['no'],
  namespaced: false,
  nameValidator: nodeNameValidator,
  definition: NODE,
  listDefinition: NODE_LIST,
  definitions: NODE_DEFINITIONS,
  // The node strategy never sets metadata.generation.
  tracksGeneration: false,
  fieldSelectors: { 'spec.unschedulable': (obj) => String(isObject(obj.spec) && obj.spec['unschedulable'] === true) },
  columns,
  strategy: {
    allowCreateOnUpdate: false,
    allowUnconditionalUpdate: true,
    /** Nodes allow all fields, status included, to be set on create; disabled fields are dropped. */
    prepareForCreate(obj: KObject, ctx: StrategyContext): void {
      dropDisabledFields(obj, undefined, ctx);
    },
    /** The main resource keeps status. */
    prepareForUpdate(obj: KObject, old: KObject, ctx: StrategyContext): void {
      if (old.status !== undefined) obj.status = clone(old.status);
      else delete obj.status;
      dropDisabledFields(obj, old, ctx);
    },
    /** The v1 → internal → v1 round trip of NodeSpec (podCIDR and podCIDRs). */
    default(obj: KObject): void {
      normalizePodCIDRs(specOf(obj));
      statusOf(obj);
    },
    validate(obj: KObject): FieldError[] {
      return validateNode(obj);
    },
    /** ValidateNode + ValidateNodeUpdate, as nodeStrategy.ValidateUpdate runs both. */
    validateUpdate(obj: KObject, old: KObject): FieldError[] {
      return [...validateNode(obj), ...validateNodeUpdate(obj, old)];
    },
    canonicalize(obj: KObject): void {
      if (isObject(obj.status)) {
        canonicalizeResourceList(obj.status['capacity']);
        canonicalizeResourceList(obj.status['allocatable']);
      }
    },
  },
  subresources: { status: statusStrategy },
  connectors: { proxy: nodeProxyConnector },
};
