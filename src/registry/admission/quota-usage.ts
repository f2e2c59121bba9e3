/**
 * What objects consume of a ResourceQuota, as Kubernetes 1.23's quota evaluators count it
 * (pkg/quota/v1/evaluator/core and the generic object-count evaluator), shared by the ResourceQuota admission
 * plugin and the quota controller:
 *   - pods: pods, cpu/memory/ephemeral-storage (= requests.*), limits.*, hugepages and extended resources
 *     (requests.<name>), the sum over containers raised to the largest init container, plus overhead; a pod
 *     in a terminal phase, or past its deletion grace period, counts only as count/pods; scopes Terminating,
 *     NotTerminating, BestEffort, NotBestEffort, PriorityClass (scopeSelector operators)
 *   - services: services, services.nodeports, services.loadbalancers
 *   - persistentvolumeclaims: persistentvolumeclaims and requests.storage, also per storage class
 *     (<class>.storageclass.storage.k8s.io/...)
 *   - every resource: count/<resource>[.<group>], and the legacy names configmaps, secrets,
 *     replicationcontrollers and resourcequotas
 * Amounts are kept in milli-units with the format of the first quantity added, and printed as Kubernetes
 * prints quantities.
 */
import type { KObject } from '../kind.js';
import { newMilliQuantity, newQuantity, tryParseQuantity, type QuantityFormat } from '../../util/quantity.js';

type Json = Record<string, any>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const objects = (v: unknown): Json[] => (Array.isArray(v) ? v.filter(isObject) : []);

/** One amount of a resource: milli-units, and the format it prints in. */
export interface Amount {
  milli: bigint;
  format: QuantityFormat;
}
export type Usage = Map<string, Amount>;

export function amountOf(v: unknown): Amount | undefined {
  const q = tryParseQuantity(typeof v === 'number' ? String(v) : typeof v === 'string' ? v : '');
  return q ? { milli: q.milliValue(), format: q.format } : undefined;
}

const one = (): Amount => ({ milli: 1000n, format: 'DecimalSI' });
const count = (n: number): Amount => ({ milli: BigInt(n) * 1000n, format: 'DecimalSI' });

/** Quantity.String() of an amount. */
export function formatAmount(a: Amount): string {
  return (a.milli % 1000n === 0n ? newQuantity(a.milli / 1000n, a.format) : newMilliQuantity(a.milli, a.format)).toString();
}

/** A resource list as Kubernetes' quota prettyPrint writes it: "name=value" sorted by name, comma-separated. */
export function prettyPrint(u: Usage): string {
  return [...u.keys()]
    .sort()
    .map((k) => `${k}=${formatAmount(u.get(k)!)}`)
    .join(',');
}

export function addUsage(a: Usage, b: Usage): Usage {
  const out: Usage = new Map(a);
  for (const [k, v] of b) {
    const have = out.get(k);
    // Quantity.Add: a zero takes the other's format.
    out.set(k, have ? { milli: have.milli + v.milli, format: have.milli === 0n ? v.format : have.format } : v);
  }
  return out;
}

export function subtractUsage(a: Usage, b: Usage): Usage {
  const out: Usage = new Map(a);
  for (const [k, v] of b) {
    const have = out.get(k);
    out.set(k, { milli: (have?.milli ?? 0n) - v.milli, format: have && have.milli !== 0n ? have.format : v.format });
  }
  return out;
}

function maxUsage(a: Usage, b: Usage): Usage {
  const out: Usage = new Map(a);
  for (const [k, v] of b) {
    const have = out.get(k);
    if (!have || v.milli > have.milli) out.set(k, v);
  }
  return out;
}

export function maskUsage(u: Usage, names: Iterable<string>): Usage {
  const out: Usage = new Map();
  for (const n of names) {
    const v = u.get(n);
    if (v) out.set(n, v);
  }
  return out;
}

/** A resource list (requests, limits, hard) of an object. */
export function usageOf(list: unknown): Usage {
  const out: Usage = new Map();
  if (!isObject(list)) return out;
  for (const [k, v] of Object.entries(list)) {
    const a = amountOf(v);
    if (a) out.set(k, a);
  }
  return out;
}

/** A usage as a resource list of quantity strings (status.used). */
export function usageToList(u: Usage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k of [...u.keys()].sort()) out[k] = formatAmount(u.get(k)!);
  return out;
}

/** A quota scope as a selector requirement (scopes become Exists requirements). */
export interface ScopeSelector {
  scopeName: string;
  operator: string;
  values: string[];
}

export function scopeSelectorsOf(quota: KObject): ScopeSelector[] {
  const spec: Json = isObject(quota['spec']) ? quota['spec'] : {};
  const out: ScopeSelector[] = [];
  for (const s of Array.isArray(spec['scopes']) ? (spec['scopes'] as unknown[]) : []) {
    if (typeof s === 'string') out.push({ scopeName: s, operator: 'Exists', values: [] });
  }
  const sel = isObject(spec['scopeSelector']) ? spec['scopeSelector'] : {};
  for (const e of objects(sel['matchExpressions'])) {
    out.push({
      scopeName: String(e['scopeName'] ?? ''),
      operator: String(e['operator'] ?? ''),
      values: Array.isArray(e['values']) ? (e['values'] as unknown[]).map(String) : [],
    });
  }
  return out;
}

/** The resource names a quota's evaluator for one kind counts. */
export interface Evaluator {
  group: string;
  resource: string;
  /** Whether an operation is charged (object counts: create only). */
  handles(operation: string): boolean;
  /** The names among `names` this evaluator counts. */
  matchingResources(names: readonly string[]): string[];
  usage(obj: KObject, now: number): Usage;
  /** Whether the object is in the scope; evaluators without scopes match none. */
  matchesScope(s: ScopeSelector, obj: KObject): boolean;
  /** For pods: an error when a container does not state what the quota requires ("must specify ..."). */
  constraints?(required: readonly string[], obj: KObject): string | undefined;
}

const countName = (group: string, resource: string) => (group === '' ? `count/${resource}` : `count/${resource}.${group}`);

/** The legacy names of core object counts. */
const LEGACY_COUNTS: Record<string, string> = {
  configmaps: 'configmaps',
  secrets: 'secrets',
  replicationcontrollers: 'replicationcontrollers',
  resourcequotas: 'resourcequotas',
};

function objectCountEvaluator(group: string, resource: string): Evaluator {
  const names = [countName(group, resource)];
  const legacy = group === '' ? LEGACY_COUNTS[resource] : undefined;
  if (legacy) names.push(legacy);
  return {
    group,
    resource,
    handles: (op) => op === 'CREATE',
    matchingResources: (hard) => hard.filter((n) => names.includes(n)),
    usage: () => new Map(names.map((n) => [n, one()])),
    matchesScope: () => false,
  };
}

// ---- pods ----------------------------------------------------------------------------------------------

const POD_RESOURCES = [
  'count/pods',
  'pods',
  'cpu',
  'memory',
  'ephemeral-storage',
  'requests.cpu',
  'requests.memory',
  'requests.ephemeral-storage',
  'limits.cpu',
  'limits.memory',
  'limits.ephemeral-storage',
];
/** Resources the pod evaluator requires every container to state (validationSet). */
const VALIDATION_SET = ['cpu', 'memory', 'requests.cpu', 'requests.memory', 'limits.cpu', 'limits.memory'];
const NATIVE_PREFIX = 'kubernetes.io/';

/** helper.IsExtendedResourceName: a qualified name outside kubernetes.io/ and not requests.-prefixed. */
function isExtendedResourceName(name: string): boolean {
  if (name.startsWith('requests.')) return false;
  const slash = name.indexOf('/');
  if (slash < 0) return false;
  const domain = name.slice(0, slash);
  return !(domain === 'kubernetes.io' || domain.endsWith('.kubernetes.io') || name.startsWith(NATIVE_PREFIX));
}

function podComputeUsage(requests: Usage, limits: Usage): Usage {
  const out: Usage = new Map([['pods', one()]]);
  for (const r of ['cpu', 'memory', 'ephemeral-storage']) {
    const req = requests.get(r);
    if (req) {
      out.set(r, req);
      out.set(`requests.${r}`, req);
    }
    const lim = limits.get(r);
    if (lim) out.set(`limits.${r}`, lim);
  }
  for (const [k, v] of requests) {
    if (k.startsWith('hugepages-')) {
      out.set(k, v);
      out.set(`requests.${k}`, v);
    }
    if (isExtendedResourceName(k)) out.set(`requests.${k}`, v);
  }
  return out;
}

/** QuotaV1Pod: whether a pod still counts against compute quota. */
function podCounts(pod: KObject, now: number): boolean {
  const phase = pod['status']?.phase;
  if (phase === 'Failed' || phase === 'Succeeded') return false;
  const meta = pod.metadata ?? {};
  if (meta.deletionTimestamp && meta.deletionGracePeriodSeconds !== undefined) {
    const end = Date.parse(meta.deletionTimestamp) + meta.deletionGracePeriodSeconds * 1000;
    if (now > end) return false;
  }
  return true;
}

const containerResources = (c: Json, field: 'requests' | 'limits'): Usage => usageOf(isObject(c['resources']) ? c['resources'][field] : undefined);

function isTerminating(pod: KObject): boolean {
  const ads = pod['spec']?.activeDeadlineSeconds;
  return typeof ads === 'number' && ads >= 0;
}

/** QoS BestEffort: no container asks for or limits cpu or memory. */
function isBestEffort(pod: KObject): boolean {
  const spec: Json = isObject(pod['spec']) ? pod['spec'] : {};
  for (const c of [...objects(spec['containers']), ...objects(spec['initContainers'])]) {
    for (const field of ['requests', 'limits'] as const) {
      const u = containerResources(c, field);
      for (const r of ['cpu', 'memory']) if ((u.get(r)?.milli ?? 0n) !== 0n) return false;
    }
  }
  return true;
}

/** Pod (anti-)affinity terms that reach other namespaces (namespaces or a namespaceSelector given). */
function usesCrossNamespacePodAffinity(pod: KObject): boolean {
  const affinity: Json = isObject(pod['spec']?.affinity) ? pod['spec'].affinity : {};
  for (const kind of ['podAffinity', 'podAntiAffinity']) {
    const a: Json = isObject(affinity[kind]) ? affinity[kind] : {};
    const terms = [
      ...objects(a['requiredDuringSchedulingIgnoredDuringExecution']),
      ...objects(a['preferredDuringSchedulingIgnoredDuringExecution']).map((w) => (isObject(w['podAffinityTerm']) ? w['podAffinityTerm'] : {})),
    ];
    for (const t of terms) {
      if ((Array.isArray(t['namespaces']) && t['namespaces'].length > 0) || isObject(t['namespaceSelector'])) return true;
    }
  }
  return false;
}

const podEvaluator: Evaluator = {
  group: '',
  resource: 'pods',
  handles: (op) => op === 'CREATE',
  matchingResources: (hard) =>
    hard.filter((n) => POD_RESOURCES.includes(n) || n.startsWith('hugepages-') || n.startsWith('requests.hugepages-') || (n.startsWith('requests.') && n.includes('/'))),
  usage(pod, now) {
    const out: Usage = new Map([['count/pods', one()]]);
    if (!podCounts(pod, now)) return out;
    const spec: Json = isObject(pod['spec']) ? pod['spec'] : {};
    let requests: Usage = new Map();
    let limits: Usage = new Map();
    for (const c of objects(spec['containers'])) {
      requests = addUsage(requests, containerResources(c, 'requests'));
      limits = addUsage(limits, containerResources(c, 'limits'));
    }
    for (const c of objects(spec['initContainers'])) {
      requests = maxUsage(requests, containerResources(c, 'requests'));
      limits = maxUsage(limits, containerResources(c, 'limits'));
    }
    const overhead = usageOf(spec['overhead']);
    requests = addUsage(requests, overhead);
    limits = addUsage(limits, overhead);
    return addUsage(out, podComputeUsage(requests, limits));
  },
  matchesScope(s, pod) {
    switch (s.scopeName) {
      case 'Terminating':
        return isTerminating(pod);
      case 'NotTerminating':
        return !isTerminating(pod);
      case 'BestEffort':
        return isBestEffort(pod);
      case 'NotBestEffort':
        return !isBestEffort(pod);
      case 'PriorityClass': {
        const pc = String(pod['spec']?.priorityClassName ?? '');
        switch (s.operator) {
          case 'Exists':
            return pc !== '';
          case 'DoesNotExist':
            return false;
          case 'In':
            return s.values.includes(pc);
          case 'NotIn':
            return !s.values.includes(pc);
          default:
            return false;
        }
      }
      case 'CrossNamespacePodAffinity':
        return usesCrossNamespacePodAffinity(pod);
      default:
        return false;
    }
  },
  constraints(required, pod) {
    const req = new Set(required.filter((r) => VALIDATION_SET.includes(r)));
    if (req.size === 0) return undefined;
    const spec: Json = isObject(pod['spec']) ? pod['spec'] : {};
    const missing = new Map<string, Set<string>>();
    for (const c of [...objects(spec['containers']), ...objects(spec['initContainers'])]) {
      const have = podComputeUsage(containerResources(c, 'requests'), containerResources(c, 'limits'));
      for (const r of req) {
        if (!have.has(r)) {
          const names = missing.get(r) ?? new Set<string>();
          names.add(String(c['name'] ?? ''));
          missing.set(r, names);
        }
      }
    }
    if (missing.size === 0) return undefined;
    const parts = [...missing.keys()].sort().map((r) => `${r} for: ${[...missing.get(r)!].sort().join(',')}`);
    return `must specify ${parts.join('; ')}`;
  },
};

// ---- services -------------------------------------------------------------------------------------------

const SERVICE_RESOURCES = ['count/services', 'services', 'services.nodeports', 'services.loadbalancers'];

const serviceEvaluator: Evaluator = {
  group: '',
  resource: 'services',
  handles: (op) => op === 'CREATE' || op === 'UPDATE',
  matchingResources: (hard) => hard.filter((n) => SERVICE_RESOURCES.includes(n)),
  usage(svc) {
    const out: Usage = new Map([
      ['count/services', one()],
      ['services', one()],
    ]);
    const spec: Json = isObject(svc['spec']) ? svc['spec'] : {};
    const ports = objects(spec['ports']);
    if (spec['type'] === 'NodePort') out.set('services.nodeports', count(ports.length));
    if (spec['type'] === 'LoadBalancer') {
      const explicit = spec['allocateLoadBalancerNodePorts'] === false;
      out.set('services.nodeports', count(explicit ? ports.filter((p) => typeof p['nodePort'] === 'number' && p['nodePort'] !== 0).length : ports.length));
      out.set('services.loadbalancers', one());
    }
    return out;
  },
  matchesScope: () => false,
};

// ---- persistentvolumeclaims ---------------------------------------------------------------------------

const SC_SUFFIX = '.storageclass.storage.k8s.io/';

const pvcEvaluator: Evaluator = {
  group: '',
  resource: 'persistentvolumeclaims',
  handles: (op) => op === 'CREATE' || op === 'UPDATE',
  matchingResources: (hard) =>
    hard.filter(
      (n) =>
        n === 'count/persistentvolumeclaims' ||
        n === 'persistentvolumeclaims' ||
        n === 'requests.storage' ||
        (n.includes(SC_SUFFIX) && (n.endsWith('/persistentvolumeclaims') || n.endsWith('/requests.storage'))),
    ),
  usage(pvc) {
    const out: Usage = new Map([
      ['count/persistentvolumeclaims', one()],
      ['persistentvolumeclaims', one()],
    ]);
    const spec: Json = isObject(pvc['spec']) ? pvc['spec'] : {};
    const sc = typeof spec['storageClassName'] === 'string' ? spec['storageClassName'] : String(pvc.metadata?.annotations?.['volume.beta.kubernetes.io/storage-class'] ?? '');
    if (sc) out.set(`${sc}${SC_SUFFIX}persistentvolumeclaims`, one());
    const storage = amountOf(spec['resources']?.requests?.storage);
    if (storage && storage.milli !== 0n) {
      // Rounded up to whole bytes.
      const rounded = { milli: ((storage.milli + 999n) / 1000n) * 1000n, format: storage.format };
      out.set('requests.storage', rounded);
      if (sc) out.set(`${sc}${SC_SUFFIX}requests.storage`, rounded);
    }
    return out;
  },
  matchesScope: () => false,
};

/** The evaluator of a resource: the specific ones, else an object count. */
export function evaluatorFor(group: string, resource: string): Evaluator {
  if (group === '') {
    if (resource === 'pods') return podEvaluator;
    if (resource === 'services') return serviceEvaluator;
    if (resource === 'persistentvolumeclaims') return pvcEvaluator;
  }
  return objectCountEvaluator(group, resource);
}

/** The resources a quota's hard names that some evaluator of `kinds` counts, as [group, resource] pairs. */
export function resourcesCountedBy(hard: readonly string[], kinds: readonly { group: string; resource: string }[]): { group: string; resource: string }[] {
  return kinds.filter((k) => evaluatorFor(k.group, k.resource).matchingResources(hard).length > 0);
}

/** quota.Matches: the quota counts the object (one of its resources, and every scope). */
export function quotaMatches(quota: KObject, ev: Evaluator, obj: KObject): boolean {
  const hard = Object.keys(quota['status']?.hard ?? {});
  if (ev.matchingResources(hard).length === 0) return false;
  return scopeSelectorsOf(quota).every((s) => ev.matchesScope(s, obj));
}

/** The usage a quota records for one kind's objects: the sum over those in its scopes, of the resources it names. */
export function usageFor(quota: KObject, ev: Evaluator, items: readonly KObject[], hardNames: readonly string[], now: number): Usage {
  const names = ev.matchingResources(hardNames);
  const total: Usage = new Map(names.map((n) => [n, { milli: 0n, format: 'DecimalSI' }]));
  const selectors = scopeSelectorsOf(quota);
  for (const item of items) {
    if (!selectors.every((s) => ev.matchesScope(s, item))) continue;
    const u = maskUsage(ev.usage(item, now), names);
    for (const [k, v] of u) {
      const have = total.get(k)!;
      total.set(k, { milli: have.milli + v.milli, format: have.milli === 0n ? v.format : have.format });
    }
  }
  return total;
}
