/**
 * Pod (core/v1, namespaced), as Kubernetes 1.23 serves it (pkg/registry/core/pod/strategy.go):
 *   - create: status is reset to phase Pending with the pod's QoS class (priority and preemptionPolicy
 *     come from the Priority admission plugin);
 *   - update: the main resource keeps status, the status subresource keeps spec and ownerReferences;
 *   - defaulting, validation and what an update may change: defaults.ts and validation.ts;
 *   - graceful deletion (CheckGracefulDelete): the requested grace period, else the pod's
 *     terminationGracePeriodSeconds; 0 for a pod not bound to a node or already terminal;
 *   - field selectors: ToSelectableFields; table: printPod (table.ts);
 *   - pods/ephemeralcontainers: only spec.ephemeralContainers changes (gate EphemeralContainers);
 *   - pods/binding and pods/eviction (actions.ts), pods/log (log.ts), pods/exec, pods/attach and
 *     pods/portforward (streaming.ts).
 */
import type { KObject, KindDecl, StrategyContext, SubresourceStrategy } from '../../kind.js';
import { tryParseQuantity } from '../../../util/quantity.js';
import { defaultPod } from './defaults.js';
import { POD_DEFINITIONS } from './definitions.js';
import { POD_COLUMNS } from './table.js';
import { bindingAction, evictionAction } from './actions.js';
import { logConnector } from './log.js';
import { attachConnector, execConnector, portForwardConnector } from './streaming.js';
import { podProxyConnector } from '../proxy.js';
import { validatePodCreate, validatePodEphemeralContainersUpdate, validatePodStatusUpdate, validatePodUpdate } from './validation.js';
import type { FieldError } from '../../../util/validation.js';

type Json = Record<string, any>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const objects = (v: unknown): Json[] => (Array.isArray(v) ? v.filter(isObject) : []);
const s = (v: unknown): string => (typeof v === 'string' ? v : '');

export const POD = 'io.k8s.api.core.v1.Pod';
export const POD_LIST = 'io.k8s.api.core.v1.PodList';

const millis = (v: unknown): bigint | null => {
  const q = typeof v === 'string' || typeof v === 'number' ? tryParseQuantity(String(v)) : null;
  return q ? q.milliValue() : null;
};

/** Whether a container list names neither cpu nor memory in any container's requests or limits. */
function namesNoComputeResources(containers: unknown): boolean {
  if (!Array.isArray(containers)) return true;
  for (const c of containers) {
    const res: unknown = isObject(c) ? c['resources'] : undefined;
    if (!isObject(res)) continue;
    const req: unknown = res['requests'];
    const lim: unknown = res['limits'];
    if (isObject(req) && (req['cpu'] !== undefined || req['memory'] !== undefined)) return false;
    if (isObject(lim) && (lim['cpu'] !== undefined || lim['memory'] !== undefined)) return false;
  }
  return true;
}

/** qos.GetPodQOS: Guaranteed, Burstable or BestEffort from the cpu and memory of every container. */
export function podQOSClass(pod: KObject): 'Guaranteed' | 'Burstable' | 'BestEffort' {
  const spec: Json = isObject(pod.spec) ? pod.spec : {};
  // No cpu or memory anywhere: nothing is counted below, so BestEffort (most pods of a bench or a test).
  if (namesNoComputeResources(spec['containers']) && namesNoComputeResources(spec['initContainers'])) return 'BestEffort';
  const requests = new Map<string, bigint>();
  const limits = new Map<string, bigint>();
  let guaranteed = true;
  const add = (m: Map<string, bigint>, k: string, v: bigint) => m.set(k, (m.get(k) ?? 0n) + v);
  for (const c of [...objects(spec['containers']), ...objects(spec['initContainers'])]) {
    const res: Json = isObject(c['resources']) ? c['resources'] : {};
    const req: Json = isObject(res['requests']) ? res['requests'] : {};
    const lim: Json = isObject(res['limits']) ? res['limits'] : {};
    for (const name of ['cpu', 'memory']) {
      const r = millis(req[name]);
      if (r !== null && r > 0n) add(requests, name, r);
    }
    const found = new Set<string>();
    for (const name of ['cpu', 'memory']) {
      const l = millis(lim[name]);
      if (l !== null && l > 0n) {
        found.add(name);
        add(limits, name, l);
      }
    }
    if (!(found.has('cpu') && found.has('memory'))) guaranteed = false;
  }
  if (requests.size === 0 && limits.size === 0) return 'BestEffort';
  if (guaranteed) {
    for (const [name, r] of requests) {
      if (limits.get(name) !== r) {
        guaranteed = false;
        break;
      }
    }
  }
  return guaranteed && requests.size === limits.size ? 'Guaranteed' : 'Burstable';
}

/** CheckGracefulDelete of the pod strategy. */
export function podGracePeriod(pod: KObject, requested: number | undefined): number {
  const spec: Json = isObject(pod.spec) ? pod.spec : {};
  const phase = isObject(pod.status) ? s(pod.status['phase']) : '';
  let period = requested ?? (typeof spec['terminationGracePeriodSeconds'] === 'number' ? spec['terminationGracePeriodSeconds'] : 0);
  if (s(spec['nodeName']) === '') period = 0;
  if (phase === 'Succeeded' || phase === 'Failed') period = 0;
  // A negative grace period (allowed by older validation) counts as 1 second.
  if (period < 0) period = 1;
  return period;
}

/** Canonical quantities in the container resources and the overhead, as stored by Kubernetes. */
function canonicalizePod(obj: KObject): void {
  const spec: Json = isObject(obj.spec) ? obj.spec : {};
  const canon = (rl: unknown) => {
    if (!isObject(rl)) return;
    for (const k of Object.keys(rl)) {
      const q = typeof rl[k] === 'string' || typeof rl[k] === 'number' ? tryParseQuantity(String(rl[k])) : null;
      if (q) rl[k] = q.toString();
    }
  };
  for (const c of [...objects(spec['containers']), ...objects(spec['initContainers']), ...objects(spec['ephemeralContainers'])]) {
    if (isObject(c['resources'])) {
      canon(c['resources']['limits']);
      canon(c['resources']['requests']);
    }
  }
  canon(spec['overhead']);
  for (const v of objects(spec['volumes'])) {
    if (isObject(v['emptyDir']) && v['emptyDir']['sizeLimit'] !== undefined) {
      const q = tryParseQuantity(String(v['emptyDir']['sizeLimit']));
      if (q) v['emptyDir']['sizeLimit'] = q.toString();
    }
  }
}

const podField = (part: 'spec' | 'status', field: string) => (obj: KObject) => {
  const p = obj[part];
  return isObject(p) ? s(p[field]) : '';
};

const statusStrategy: SubresourceStrategy = {
  /**
   * pods/status keeps spec and ownerReferences (old kubelets corrupted them). The spec is the live one
   * itself, as Kubernetes' `newPod.Spec = oldPod.Spec` shares its slices and maps: nothing after this
   * changes a stored (already defaulted, canonical) spec, and the field manager's comparison skips it.
   */
  prepareForUpdate(obj: KObject, old: KObject): void {
    if (old.spec !== undefined) obj.spec = old.spec;
    else delete obj.spec;
    const meta = (obj.metadata ??= {});
    if (old.metadata?.ownerReferences !== undefined) meta.ownerReferences = structuredClone(old.metadata.ownerReferences);
    else delete meta.ownerReferences;
  },
  validateUpdate(obj: KObject, old: KObject): FieldError[] {
    return validatePodStatusUpdate(obj, old);
  },
  keeps: ['spec'],
};

const gateOff = (ctx: StrategyContext): boolean => ctx.featureGates['EphemeralContainers'] === false;
const hasEphemeral = (obj: KObject): boolean => isObject(obj.spec) && objects(obj.spec['ephemeralContainers']).length > 0;

/** DropDisabledPodFields for EphemeralContainers: with the gate off, a pod that did not have them gets none. */
function dropDisabledEphemeral(obj: KObject, old: KObject | undefined, ctx: StrategyContext): void {
  if (!gateOff(ctx) || (old && hasEphemeral(old)) || !isObject(obj.spec)) return;
  delete obj.spec['ephemeralContainers'];
  if (isObject(obj.status)) delete obj.status['ephemeralContainerStatuses'];
}

/**
 * pods/ephemeralcontainers (1.23's podEphemeralContainersStrategy): the stored pod with only
 * spec.ephemeralContainers taken from the request (and its name, namespace, resourceVersion and uid);
 * served while the EphemeralContainers gate is on.
 */
const ephemeralContainersStrategy: SubresourceStrategy = {
  prepareForUpdate(obj: KObject, old: KObject): void {
    const meta = obj.metadata ?? {};
    const next: unknown = isObject(obj.spec) ? obj.spec['ephemeralContainers'] : undefined;
    for (const k of Object.keys(obj)) delete obj[k];
    Object.assign(obj, structuredClone(old));
    const m = (obj.metadata ??= {});
    for (const k of ['name', 'namespace', 'resourceVersion', 'uid'] as const) {
      if (meta[k] !== undefined) m[k] = meta[k];
      else delete m[k];
    }
    const spec = (obj.spec ??= {}) as Json;
    if (next !== undefined && next !== null) spec['ephemeralContainers'] = next;
    else delete spec['ephemeralContainers'];
  },
  validateUpdate(obj: KObject, old: KObject, ctx: StrategyContext): FieldError[] {
    return validatePodEphemeralContainersUpdate(obj, old, ctx);
  },
  keeps: ['status'],
  featureGate: 'EphemeralContainers',
};

export const podKind: KindDecl = {
  group: '',
  version: 'v1',
  kind: 'Pod',
  listKind: 'PodList',
  resource: 'pods',
  singular: 'pod',
  shortNames: ['po'],
  categories: ['all'],
  namespaced: true,
  definition: POD,
  listDefinition: POD_LIST,
  definitions: POD_DEFINITIONS,
  // The pod strategy never sets metadata.generation in 1.23.
  tracksGeneration: false,
  fieldSelectors: {
    'spec.nodeName': podField('spec', 'nodeName'),
    'spec.restartPolicy': podField('spec', 'restartPolicy'),
    'spec.schedulerName': podField('spec', 'schedulerName'),
    'spec.serviceAccountName': podField('spec', 'serviceAccountName'),
    'status.phase': podField('status', 'phase'),
    'status.podIP': (obj) => {
      const ips = objects(isObject(obj.status) ? obj.status['podIPs'] : undefined);
      return s(ips[0]?.['ip']) || (isObject(obj.status) ? s(obj.status['podIP']) : '');
    },
    'status.nominatedNodeName': podField('status', 'nominatedNodeName'),
  },
  columns: POD_COLUMNS,
  strategy: {
    allowCreateOnUpdate: false,
    allowUnconditionalUpdate: true,
    prepareForCreate(obj: KObject, ctx: StrategyContext): void {
      dropDisabledEphemeral(obj, undefined, ctx);
      defaultPod(obj);
      obj.status = { phase: 'Pending', qosClass: podQOSClass(obj) };
    },
    prepareForUpdate(obj: KObject, old: KObject, ctx: StrategyContext): void {
      if (old.status !== undefined) obj.status = structuredClone(old.status);
      else delete obj.status;
      dropDisabledEphemeral(obj, old, ctx);
    },
    default(obj: KObject): void {
      defaultPod(obj);
    },
    validate(obj: KObject, ctx: StrategyContext): FieldError[] {
      return validatePodCreate(obj, ctx);
    },
    validateUpdate(obj: KObject, old: KObject, ctx: StrategyContext): FieldError[] {
      return validatePodUpdate(obj, old, ctx);
    },
    canonicalize: canonicalizePod,
    checkGracefulDelete: podGracePeriod,
  },
  subresources: { status: statusStrategy, ephemeralcontainers: ephemeralContainersStrategy },
  actions: { binding: bindingAction, eviction: evictionAction },
  connectors: { attach: attachConnector, exec: execConnector, log: logConnector, portforward: portForwardConnector, proxy: podProxyConnector },
};
