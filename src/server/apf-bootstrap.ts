/**
 * API Priority and Fairness in the control plane, as kube-apiserver 1.23's post-start hooks do it:
 *   - the producer (priority-and-fairness-config-producer): Kubernetes' bootstrap FlowSchemas and
 *     PriorityLevelConfigurations (apiserver/pkg/apis/flowcontrol/bootstrap/default.go) are created when
 *     missing and re-ensured every minute. Mandatory objects (exempt, catch-all) always get the bootstrap
 *     spec back; suggested ones only while apf.kubernetes.io/autoupdate-spec is true (or, without a valid
 *     value, while their generation is 1); the annotation is set to what was decided.
 *   - the consumer (priority-and-fairness-config-consumer): the stored objects are digested into the
 *     filter's FlowControl on every change, and each FlowSchema's Dangling condition is kept.
 */
import { isStatusError } from '../registry/errors.js';
import type { KObject } from '../registry/kind.js';
import { FLOWCONTROL_GROUP, STORAGE_VERSION } from '../registry/kinds/flowcontrol/index.js';
import type { Registry } from '../registry/registry.js';
import type { ResourceStore } from '../registry/store.js';
import type { FlowControl } from '../filters/apf/index.js';
import { subscribe, type Controller } from './controllers/runner.js';
import type { ServerMetrics } from './metrics.js';
import { BOOTSTRAP_USER } from './bootstrap-policy.js';

export const AUTOUPDATE_SPEC_ANNOTATION = 'apf.kubernetes.io/autoupdate-spec';
const API_VERSION = `${FLOWCONTROL_GROUP}/${STORAGE_VERSION}`;
const SCOPE = { namespace: '', user: BOOTSTRAP_USER };
const ENSURE_PERIOD_MS = 60_000;

// ---- the bootstrap configuration ------------------------------------------------------------------------

type Json = Record<string, any>;
const ALL_RESOURCES = { verbs: ['*'], apiGroups: ['*'], resources: ['*'], clusterScope: true, namespaces: ['*'] };
const ALL_NON_RESOURCES = { verbs: ['*'], nonResourceURLs: ['*'] };
const group = (name: string) => ({ kind: 'Group', group: { name } });
const user = (name: string) => ({ kind: 'User', user: { name } });
const kubeSystemSA = (name: string) => ({ kind: 'ServiceAccount', serviceAccount: { namespace: 'kube-system', name } });
const meta = (name: string) => ({ name, annotations: { [AUTOUPDATE_SPEC_ANNOTATION]: 'true' } });

function level(name: string, shares?: number, queuing?: [number, number, number]): KObject {
  const spec: Json =
    shares === undefined
      ? { type: 'Exempt' }
      : {
          type: 'Limited',
          limited: {
            assuredConcurrencyShares: shares,
            limitResponse: queuing ? { type: 'Queue', queuing: { queues: queuing[0], handSize: queuing[1], queueLengthLimit: queuing[2] } } : { type: 'Reject' },
          },
        };
  return { apiVersion: API_VERSION, kind: 'PriorityLevelConfiguration', metadata: meta(name), spec };
}

function schema(name: string, pl: string, precedence: number, distinguisher: string, rules: Json[]): KObject {
  const spec: Json = { priorityLevelConfiguration: { name: pl }, matchingPrecedence: precedence };
  if (distinguisher) spec['distinguisherMethod'] = { type: distinguisher };
  spec['rules'] = rules;
  return { apiVersion: API_VERSION, kind: 'FlowSchema', metadata: meta(name), spec };
}

const everything = (subjects: Json[]) => [{ subjects, resourceRules: [ALL_RESOURCES], nonResourceRules: [ALL_NON_RESOURCES] }];
const resourceRule = (verbs: string[], apiGroups: string[], resources: string[], namespaces: string[], clusterScope = false) => ({
  verbs,
  apiGroups,
  resources,
  ...(clusterScope ? { clusterScope } : {}),
  namespaces,
});
const leaderElectionRules = (configMapNamespace: string) => [
  resourceRule(['get', 'create', 'update'], [''], ['endpoints', 'configmaps'], [configMapNamespace]),
  resourceRule(['get', 'create', 'update'], ['coordination.k8s.io'], ['leases'], ['*']),
];

export const MANDATORY_PRIORITY_LEVELS: readonly KObject[] = [level('exempt'), level('catch-all', 5)];
export const MANDATORY_FLOW_SCHEMAS: readonly KObject[] = [
  schema('exempt', 'exempt', 1, '', everything([group('system:masters')])),
  schema('catch-all', 'catch-all', 10000, 'ByUser', everything([group('system:unauthenticated'), group('system:authenticated')])),
];
export const SUGGESTED_PRIORITY_LEVELS: readonly KObject[] = [
  level('system', 30, [64, 6, 50]),
  level('node-high', 40, [64, 6, 50]),
  level('leader-election', 10, [16, 4, 50]),
  level('workload-high', 40, [128, 6, 50]),
  level('workload-low', 100, [128, 6, 50]),
  level('global-default', 20, [128, 6, 50]),
];
export const SUGGESTED_FLOW_SCHEMAS: readonly KObject[] = [
  schema('system-nodes', 'system', 500, 'ByUser', everything([group('system:nodes')])),
  schema('system-node-high', 'node-high', 400, 'ByUser', [
    {
      subjects: [group('system:nodes')],
      resourceRules: [resourceRule(['*'], [''], ['nodes', 'nodes/status'], ['*'], true), resourceRule(['*'], ['coordination.k8s.io'], ['leases'], ['*'])],
    },
  ]),
  schema('probes', 'exempt', 2, '', [
    { subjects: [group('system:unauthenticated'), group('system:authenticated')], nonResourceRules: [{ verbs: ['get'], nonResourceURLs: ['/healthz', '/readyz', '/livez'] }] },
  ]),
  schema('system-leader-election', 'leader-election', 100, 'ByUser', [
    { subjects: [user('system:kube-controller-manager'), user('system:kube-scheduler'), kubeSystemSA('*')], resourceRules: leaderElectionRules('kube-system') },
  ]),
  schema('endpoint-controller', 'workload-high', 150, 'ByUser', [
    {
      subjects: [user('system:kube-controller-manager'), kubeSystemSA('endpoint-controller'), kubeSystemSA('endpointslicemirroring-controller')],
      resourceRules: [resourceRule(['get', 'create', 'update'], [''], ['endpoints'], ['*'])],
    },
  ]),
  schema('workload-leader-election', 'leader-election', 200, 'ByUser', [{ subjects: [kubeSystemSA('*')], resourceRules: leaderElectionRules('*') }]),
  schema('kube-controller-manager', 'workload-high', 800, 'ByNamespace', everything([user('system:kube-controller-manager')])),
  schema('kube-scheduler', 'workload-high', 800, 'ByNamespace', everything([user('system:kube-scheduler')])),
  schema('kube-system-service-accounts', 'workload-high', 900, 'ByNamespace', everything([kubeSystemSA('*')])),
  schema('service-accounts', 'workload-low', 9000, 'ByUser', everything([group('system:serviceaccounts')])),
  schema('global-default', 'global-default', 9900, 'ByUser', everything([group('system:unauthenticated'), group('system:authenticated')])),
];

// ---- the producer ---------------------------------------------------------------------------------------

/** JSON with sorted keys, for comparing specs whatever order their fields were written in. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object') {
    const o = v as Json;
    return `{${Object.keys(o)
      .filter((k) => o[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v);
}

/** Go's strconv.ParseBool; undefined when the value is not a bool. */
function parseBool(v: string | undefined): boolean | undefined {
  if (v === undefined) return undefined;
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(v)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(v)) return false;
  return undefined;
}

/** Kubernetes' shouldUpdateSpec: the annotation when it parses as a bool, else whether the server made the object (generation 1). */
export function autoUpdateSpec(obj: KObject): boolean {
  return parseBool(obj.metadata?.annotations?.[AUTOUPDATE_SPEC_ANNOTATION]) ?? obj.metadata?.generation === 1;
}

/**
 * The object to write in place of `current`, or undefined when it is as it should be: the annotation says
 * whether the spec is kept up to date (rewritten only when it does not parse as that bool), and the spec
 * is the bootstrap one when it is.
 */
export function ensuredObject(current: KObject, bootstrap: KObject, mandatory: boolean): KObject | undefined {
  const update = mandatory || autoUpdateSpec(current);
  const annotationWrong = parseBool(current.metadata?.annotations?.[AUTOUPDATE_SPEC_ANNOTATION]) !== update;
  const specWrong = update && canonical(current.spec) !== canonical(bootstrap.spec);
  if (!annotationWrong && !specWrong) return undefined;
  const next = structuredClone(current);
  if (annotationWrong) {
    next.metadata = { ...next.metadata, annotations: { ...(next.metadata?.annotations ?? {}), [AUTOUPDATE_SPEC_ANNOTATION]: String(update) } };
  }
  if (specWrong) next.spec = structuredClone(bootstrap.spec);
  return next;
}

async function ensureOne(store: ResourceStore, bootstrap: KObject, mandatory: boolean): Promise<void> {
  const name = bootstrap.metadata!.name!;
  let current: KObject;
  try {
    current = await store.get(SCOPE, name);
  } catch (err) {
    if (!isStatusError(err, 'NotFound')) throw err;
    try {
      await store.create(SCOPE, structuredClone(bootstrap));
    } catch (e) {
      if (!isStatusError(e, 'AlreadyExists')) throw e;
    }
    return;
  }
  if (!ensuredObject(current, bootstrap, mandatory)) return;
  await store.update(SCOPE, name, (now) => {
    if (!now) throw new Error(`${name} disappeared`);
    return ensuredObject(now, bootstrap, mandatory) ?? now;
  });
}

function flowcontrolStores(registry: Registry): { fs: ResourceStore; pl: ResourceStore } | undefined {
  const fs = registry.store(FLOWCONTROL_GROUP, STORAGE_VERSION, 'flowschemas');
  const pl = registry.store(FLOWCONTROL_GROUP, STORAGE_VERSION, 'prioritylevelconfigurations');
  return fs && pl ? { fs, pl } : undefined;
}

/** Creates or re-ensures every bootstrap object (priority levels first), concurrently. */
export async function ensureApfBootstrap(registry: Registry): Promise<void> {
  const stores = flowcontrolStores(registry);
  if (!stores) return;
  await Promise.all([
    ...MANDATORY_PRIORITY_LEVELS.map((o) => ensureOne(stores.pl, o, true)),
    ...SUGGESTED_PRIORITY_LEVELS.map((o) => ensureOne(stores.pl, o, false)),
  ]);
  await Promise.all([...MANDATORY_FLOW_SCHEMAS.map((o) => ensureOne(stores.fs, o, true)), ...SUGGESTED_FLOW_SCHEMAS.map((o) => ensureOne(stores.fs, o, false))]);
}

/** Re-ensures the bootstrap configuration every minute (the first pass is the caller's). */
export function startApfBootstrapMaintainer(registry: Registry, log: (m: string) => void): Controller {
  const timer = setInterval(() => {
    ensureApfBootstrap(registry).catch((err: Error) => log(`priority-and-fairness-config-producer: ${err.message}`));
  }, ENSURE_PERIOD_MS);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}

// ---- the consumer ---------------------------------------------------------------------------------------

function danglingCondition(plName: string, dangling: boolean, now: string): Json {
  return {
    type: 'Dangling',
    status: dangling ? 'True' : 'False',
    lastTransitionTime: now,
    reason: dangling ? 'NotFound' : 'Found',
    message: dangling
      ? `This FlowSchema references the PriorityLevelConfiguration object named "${plName}" but there is no such object`
      : `This FlowSchema references the PriorityLevelConfiguration object named "${plName}" and it exists`,
  };
}

function withDangling(fs: KObject, dangling: boolean): KObject | undefined {
  const plName = String((fs.spec as Json | undefined)?.['priorityLevelConfiguration']?.['name'] ?? '');
  const conditions = ((fs.status as Json | undefined)?.['conditions'] as Json[] | undefined) ?? [];
  const want = danglingCondition(plName, dangling, new Date().toISOString().replace(/\.\d+Z$/, 'Z'));
  const have = conditions.find((c) => c['type'] === 'Dangling');
  if (have && have['status'] === want['status'] && have['reason'] === want['reason'] && have['message'] === want['message']) return undefined;
  if (have && have['status'] === want['status']) want['lastTransitionTime'] = have['lastTransitionTime'];
  const next = structuredClone(fs);
  next.status = { ...(next.status ?? {}), conditions: [...conditions.filter((c) => c['type'] !== 'Dangling'), want] };
  return next;
}

/**
 * Feeds the stored configuration to `flowControl` now and on every change, and keeps the FlowSchemas'
 * Dangling conditions. Resolves once the first configuration is digested.
 */
export async function startApfConfigController(registry: Registry, flowControl: FlowControl, log: (m: string) => void): Promise<Controller> {
  const stores = flowcontrolStores(registry);
  if (!stores) return { stop: () => {} };
  let stopped = false;
  let scheduled = false;
  let running: Promise<void> = Promise.resolve();
  const sync = async (): Promise<void> => {
    const [fsList, plList] = await Promise.all([stores.fs.list(SCOPE, {}), stores.pl.list(SCOPE, {})]);
    const schemas = (fsList['items'] as KObject[] | undefined) ?? [];
    const dangling = flowControl.update(schemas, (plList['items'] as KObject[] | undefined) ?? []);
    for (const fs of schemas) {
      const name = fs.metadata?.name ?? '';
      if (!withDangling(fs, dangling.get(name) ?? false)) continue;
      try {
        await stores.fs.update(SCOPE, name, (now) => (now ? (withDangling(now, dangling.get(name) ?? false) ?? now) : now!), { subresource: 'status' });
      } catch (err) {
        if (!stopped && !isStatusError(err, 'NotFound')) log(`priority-and-fairness-config-consumer: ${name}: ${(err as Error).message}`);
      }
    }
  };
  const schedule = (): void => {
    if (scheduled || stopped) return;
    scheduled = true;
    setImmediate(() => {
      scheduled = false;
      running = running.then(sync, sync).catch((err: Error) => {
        if (!stopped) log(`priority-and-fairness-config-consumer: ${err.message}`);
      });
    });
  };
  await sync();
  const subscriber = { event: schedule };
  const unsubscribe = [subscribe(stores.fs, subscriber), subscribe(stores.pl, subscriber)];
  return {
    stop: () => {
      stopped = true;
      for (const u of unsubscribe) u();
    },
  };
}

// ---- metrics --------------------------------------------------------------------------------------------

/** apiserver_flowcontrol_* metrics of the filter: dispatches and rejections counted, queue state read at scrape time. */
export function bindFlowControlMetrics(metrics: ServerMetrics, flowControl: FlowControl): void {
  const dispatched = metrics.counter({
    name: 'apiserver_flowcontrol_dispatched_requests_total',
    help: 'Number of requests executed by API Priority and Fairness subsystem',
    labelNames: ['flow_schema', 'priority_level'],
  });
  const rejected = metrics.counter({
    name: 'apiserver_flowcontrol_rejected_requests_total',
    help: 'Number of requests rejected by API Priority and Fairness subsystem',
    labelNames: ['flow_schema', 'priority_level', 'reason'],
  });
  const perLevel = (name: string, help: string, read: (l: ReturnType<FlowControl['priorityLevels']>[number]) => number | undefined) =>
    metrics.gauge({
      name,
      help,
      labelNames: ['priority_level'],
      collect() {
        this.reset();
        for (const l of flowControl.priorityLevels()) {
          const v = read(l);
          if (v !== undefined) this.set({ priority_level: l.name }, v);
        }
      },
    });
  perLevel('apiserver_flowcontrol_request_concurrency_limit', 'Shared concurrency limit in the API Priority and Fairness subsystem', (l) => l.queueSet?.limit);
  perLevel('apiserver_flowcontrol_current_inqueue_requests', 'Number of requests currently pending in queues of the API Priority and Fairness subsystem', (l) => l.queueSet?.waiting);
  perLevel('apiserver_flowcontrol_current_executing_requests', 'Number of requests in initial (for a WATCH) or any (for a non-WATCH) execution stage in the API Priority and Fairness subsystem', (l) => l.queueSet?.executing);
  metrics.gauge({
    name: 'apiserver_flowcontrol_request_concurrency_in_use',
    help: 'Concurrency (number of seats) occupied by the currently executing (initial stage for a WATCH, any stage otherwise) requests in the API Priority and Fairness subsystem',
    labelNames: ['priority_level', 'flow_schema'],
    collect() {
      this.reset();
      for (const [key, seats] of flowControl.seatsInUse) {
        const [priority_level = '', flow_schema = ''] = key.split('\0');
        this.set({ priority_level, flow_schema }, seats);
      }
    },
  });
  const estimated = metrics.histogram({
    name: 'apiserver_flowcontrol_work_estimated_seats',
    help: 'Number of estimated seats (maximum of initial and final seats) associated with requests in API Priority and Fairness',
    labelNames: ['priority_level', 'flow_schema'],
    buckets: [1, 2, 4, 10],
  });
  flowControl.metrics = {
    estimatedSeats: (fs, pl, seats) => estimated.observe({ priority_level: pl, flow_schema: fs }, seats),
    dispatchedCounter: (fs, pl) => {
      const child = dispatched.labels(fs, pl);
      return () => child.inc();
    },
    rejected: (fs, pl, reason) => rejected.inc({ flow_schema: fs, priority_level: pl, reason }),
  };
}
