/**
 * The pod table as Kubernetes 1.23's printPod (pkg/printers/internalversion/printers.go) makes it:
 * NAME READY STATUS RESTARTS AGE, and with -o wide IP NODE NOMINATED NODE READINESS GATES. STATUS is the
 * pod's aggregate state: its reason or phase, an init container's progress or failure ("Init:0/1",
 * "Init:Error"), a container's waiting or terminated reason ("CrashLoopBackOff", "Completed"),
 * "Terminating" once deleted. RESTARTS carries the age of the last restart ("2 (5m ago)").
 */
import type { KObject, TableColumn } from '../../kind.js';
import { humanDuration } from '../../printing.js';
import { AGE_COLUMN } from '../configmap.js';

type Json = Record<string, any>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const objects = (v: unknown): Json[] => (Array.isArray(v) ? v.map((x) => (isObject(x) ? x : {})) : []);
const s = (v: unknown): string => (typeof v === 'string' ? v : '');
const n = (v: unknown): number => (typeof v === 'number' ? v : 0);

/** The reason Kubernetes' node lifecycle controller gives pods of an unreachable node. */
const NODE_UNREACHABLE_POD_REASON = 'NodeLost';

export interface PodSummary {
  ready: string;
  status: string;
  restarts: string;
}

const state = (c: Json, which: string): Json | undefined => (isObject(c['state']) && isObject(c['state'][which]) ? c['state'][which] : undefined);

function lastTerminated(c: Json): string | undefined {
  const last = isObject(c['lastState']) && isObject(c['lastState']['terminated']) ? c['lastState']['terminated'] : undefined;
  return last ? s(last['finishedAt']) || undefined : undefined;
}

/** printPod's READY, STATUS and RESTARTS cells at time `now`. */
export function summarizePod(pod: KObject, now: number = Date.now()): PodSummary {
  const spec: Json = isObject(pod.spec) ? pod.spec : {};
  const status: Json = isObject(pod.status) ? pod.status : {};
  let restarts = 0;
  let readyContainers = 0;
  let lastRestart = 0;
  const noteRestart = (c: Json) => {
    const t = lastTerminated(c);
    const ms = t ? Date.parse(t) : NaN;
    if (!Number.isNaN(ms) && ms > lastRestart) lastRestart = ms;
  };
  let reason = s(status['reason']) || s(status['phase']);
  let initializing = false;
  const initStatuses = objects(status['initContainerStatuses']);
  for (let i = 0; i < initStatuses.length; i++) {
    const c = initStatuses[i]!;
    restarts += n(c['restartCount']);
    noteRestart(c);
    const term = state(c, 'terminated');
    const wait = state(c, 'waiting');
    if (term && n(term['exitCode']) === 0) continue;
    if (term) {
      if (s(term['reason']) === '') reason = n(term['signal']) !== 0 ? `Init:Signal:${n(term['signal'])}` : `Init:ExitCode:${n(term['exitCode'])}`;
      else reason = `Init:${s(term['reason'])}`;
    } else if (wait && s(wait['reason']) !== '' && s(wait['reason']) !== 'PodInitializing') {
      reason = `Init:${s(wait['reason'])}`;
    } else {
      reason = `Init:${i}/${objects(spec['initContainers']).length}`;
    }
    initializing = true;
    break;
  }
  if (!initializing) {
    restarts = 0;
    let hasRunning = false;
    const statuses = objects(status['containerStatuses']);
    for (let i = statuses.length - 1; i >= 0; i--) {
      const c = statuses[i]!;
      restarts += n(c['restartCount']);
      noteRestart(c);
      const wait = state(c, 'waiting');
      const term = state(c, 'terminated');
      if (wait && s(wait['reason']) !== '') reason = s(wait['reason']);
      else if (term && s(term['reason']) !== '') reason = s(term['reason']);
      else if (term) reason = n(term['signal']) !== 0 ? `Signal:${n(term['signal'])}` : `ExitCode:${n(term['exitCode'])}`;
      else if (c['ready'] === true && state(c, 'running')) {
        hasRunning = true;
        readyContainers++;
      }
    }
    if (reason === 'Completed' && hasRunning) {
      const ready = objects(status['conditions']).some((c) => s(c['type']) === 'Ready' && s(c['status']) === 'True');
      reason = ready ? 'Running' : 'NotReady';
    }
  }
  if (pod.metadata?.deletionTimestamp) reason = s(status['reason']) === NODE_UNREACHABLE_POD_REASON ? 'Unknown' : 'Terminating';
  const restartsText = lastRestart > 0 ? `${restarts} (${humanDuration(now - lastRestart)} ago)` : String(restarts);
  return { ready: `${readyContainers}/${objects(spec['containers']).length}`, status: reason, restarts: restartsText };
}

function readinessGates(pod: KObject): string {
  const gates = objects(isObject(pod.spec) ? pod.spec['readinessGates'] : undefined);
  if (gates.length === 0) return '<none>';
  const conditions = objects(isObject(pod.status) ? pod.status['conditions'] : undefined);
  let ok = 0;
  for (const g of gates) {
    const c = conditions.find((x) => s(x['type']) === s(g['conditionType']));
    if (c && s(c['status']) === 'True') ok++;
  }
  return `${ok}/${gates.length}`;
}

const podIP = (pod: KObject): string => {
  const ips = objects(isObject(pod.status) ? pod.status['podIPs'] : undefined);
  return s(ips[0]?.['ip']) || '<none>';
};

export const POD_COLUMNS: TableColumn[] = [
  { name: 'Ready', type: 'string', description: 'The aggregate readiness state of this pod for accepting traffic.', priority: 0, cell: (o, now) => summarizePod(o, now).ready },
  { name: 'Status', type: 'string', description: 'The aggregate status of the containers in this pod.', priority: 0, cell: (o, now) => summarizePod(o, now).status },
  {
    name: 'Restarts',
    type: 'string',
    description: 'The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.',
    priority: 0,
    cell: (o, now) => summarizePod(o, now).restarts,
  },
  AGE_COLUMN,
  {
    name: 'IP',
    type: 'string',
    description: 'IP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.',
    priority: 1,
    cell: podIP,
  },
  {
    name: 'Node',
    type: 'string',
    description:
      'NodeName is a request to schedule this pod onto a specific node. If it is non-empty, the scheduler simply schedules this pod onto that node, assuming that it fits resource requirements.',
    priority: 1,
    cell: (o) => (isObject(o.spec) ? s(o.spec['nodeName']) : '') || '<none>',
  },
  {
    name: 'Nominated Node',
    type: 'string',
    description:
      'nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot be scheduled right away as preemption victims receive their graceful termination periods. This field does not guarantee that the pod will be scheduled on this node. Scheduler may decide to place the pod elsewhere if other nodes become available sooner. Scheduler may also decide to give the resources on this node to a higher priority pod that is created after preemption. As a result, this field may be different than PodSpec.nodeName when the pod is scheduled.',
    priority: 1,
    cell: (o) => (isObject(o.status) ? s(o.status['nominatedNodeName']) : '') || '<none>',
  },
  {
    name: 'Readiness Gates',
    type: 'string',
    description:
      'If specified, all readiness gates will be evaluated for pod readiness. A pod is ready when all its containers are ready AND all conditions specified in the readiness gates have status equal to "True" More info: https://git.k8s.io/enhancements/keps/sig-network/580-pod-readiness-gates',
    priority: 1,
    cell: readinessGates,
  },
];
