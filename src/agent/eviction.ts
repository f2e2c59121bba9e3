// Node-pressure eviction (kubelet's pkg/kubelet/eviction), measured on this host every monitoring
// interval (kubelet: 10 s):
//   memory.available   MemAvailable of /proc/meminfo (capacity MemTotal)
//   nodefs.available / nodefs.inodesFree   the --root-dir filesystem
//   imagefs.available  the runtime's image filesystem (runtimes with images; none for the process runtime)
//   pid.available      kernel.pid_max minus the processes running
// A threshold (`signal<quantity` or `signal<percent%`) is met while the signal is below it; once met,
// it stays met until the signal is back above threshold + --eviction-minimum-reclaim. Hard thresholds
// act at once, soft ones once met for their --eviction-soft-grace-period. Node conditions
// (MemoryPressure, DiskPressure, PIDPressure) are True while a threshold of theirs is met (grace or
// not) and for --eviction-pressure-transition-period after. When thresholds act, the one of highest
// priority (memory first) picks the resource to reclaim and one pod is evicted per interval, in
// kubelet's order: memory: pods using more than their request first, then lower priority, then
// usage above request; disk: the same with ephemeral-storage; pids: lower priority, then more
// processes. Critical pods (static pods, priority >= 2000000000) are never evicted. An evicted pod
// gets phase Failed, reason Evicted and kubelet's message, with grace 0 for a hard threshold and
// --eviction-max-pod-grace-period for a soft one (negative: the pod's own). Before a pod is chosen
// for a disk signal the node's own resources are reclaimed (the caller's reclaimNodeLevel: dead
// containers and unused images past their minimum ages); no pod goes when that is enough.
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { tryParseQuantity } from '../util/quantity.js';
import { fsSize } from './node/hostinfo.js';
import { qosClass } from './status.js';
import type { Pod } from './types.js';

export type Signal =
  | 'memory.available'
  | 'allocatableMemory.available'
  | 'nodefs.available'
  | 'nodefs.inodesFree'
  | 'imagefs.available'
  | 'imagefs.inodesFree'
  | 'pid.available';
export type PressureCondition = 'MemoryPressure' | 'DiskPressure' | 'PIDPressure';
export type Resource = 'memory' | 'ephemeral-storage' | 'pids';

const SIGNALS: Record<Signal, { condition: PressureCondition; resource: Resource }> = {
  'memory.available': { condition: 'MemoryPressure', resource: 'memory' },
  // the pods' cgroup: its memory limit less its working set (cgroups/manager.ts; with --enforce-node-allocatable=pods)
  'allocatableMemory.available': { condition: 'MemoryPressure', resource: 'memory' },
  'nodefs.available': { condition: 'DiskPressure', resource: 'ephemeral-storage' },
  'nodefs.inodesFree': { condition: 'DiskPressure', resource: 'ephemeral-storage' },
  'imagefs.available': { condition: 'DiskPressure', resource: 'ephemeral-storage' },
  'imagefs.inodesFree': { condition: 'DiskPressure', resource: 'ephemeral-storage' },
  'pid.available': { condition: 'PIDPressure', resource: 'pids' },
};

export interface Threshold {
  signal: Signal;
  /** Absolute quantity, or a fraction of capacity when `percent` is set. */
  quantity?: number;
  percent?: number;
  /** The threshold as written (for messages). */
  text: string;
  hard: boolean;
  gracePeriodMs: number;
  minReclaim?: { quantity?: number; percent?: number };
}

function parseAmount(text: string, what: string): { quantity?: number; percent?: number } {
  const t = text.trim();
  if (t.endsWith('%')) {
    const p = Number(t.slice(0, -1));
    if (!Number.isFinite(p) || p < 0 || p > 100) throw new Error(`${what}: invalid percentage ${t}`);
    return { percent: p / 100 };
  }
  const q = tryParseQuantity(t);
  if (!q) throw new Error(`${what}: invalid quantity ${t}`);
  return { quantity: Number(q.value()) };
}

/** The thresholds of --eviction-hard, --eviction-soft (+ grace periods) and --eviction-minimum-reclaim; throws with a clear message. */
export function parseThresholds(
  hard: Record<string, string>,
  soft: Record<string, string>,
  softGrace: Record<string, string>,
  minReclaim: Record<string, string>,
  parseDurationMs: (s: string) => number,
): Threshold[] {
  const out: Threshold[] = [];
  const add = (signal: string, value: string, isHard: boolean): void => {
    if (!(signal in SIGNALS)) throw new Error(`unsupported eviction signal ${signal}`);
    const amount = parseAmount(value, `eviction threshold ${signal}`);
    const t: Threshold = { signal: signal as Signal, text: value, hard: isHard, gracePeriodMs: 0, ...amount };
    if (!isHard) {
      const g = softGrace[signal];
      if (g === undefined) throw new Error(`--eviction-soft ${signal}: a grace period must be given in --eviction-soft-grace-period`);
      t.gracePeriodMs = parseDurationMs(g);
    }
    const r = minReclaim[signal];
    if (r !== undefined) t.minReclaim = parseAmount(r, `--eviction-minimum-reclaim ${signal}`);
    out.push(t);
  };
  for (const [k, v] of Object.entries(hard)) add(k, v, true);
  for (const [k, v] of Object.entries(soft)) add(k, v, false);
  for (const k of Object.keys(softGrace)) if (soft[k] === undefined) throw new Error(`--eviction-soft-grace-period ${k}: no soft threshold for that signal`);
  return out;
}

export interface Observation {
  available: number;
  capacity: number;
}

export type Observations = Partial<Record<Signal, Observation>>;

async function meminfo(): Promise<Observation | undefined> {
  const text = await readFile('/proc/meminfo', 'utf8').catch(() => '');
  const kb = (k: string): number | undefined => {
    const m = new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(text);
    return m ? Number(m[1]) * 1024 : undefined;
  };
  const total = kb('MemTotal');
  const available = kb('MemAvailable');
  return total !== undefined && available !== undefined ? { available, capacity: total } : undefined;
}

async function pids(): Promise<Observation | undefined> {
  const max = Number((await readFile('/proc/sys/kernel/pid_max', 'utf8').catch(() => '')).trim());
  if (!Number.isFinite(max) || max <= 0) return undefined;
  const running = (await readdir('/proc').catch((): string[] => [])).filter((e) => /^\d+$/.test(e)).length;
  return { available: max - running, capacity: max };
}

/** Measures the signals on this host (imagefs only when `imageFsDir` is given). */
export async function observe(rootDir: string, imageFsDir?: string): Promise<Observations> {
  const out: Observations = {};
  const mem = await meminfo();
  if (mem) out['memory.available'] = mem;
  const fs = await fsSize(rootDir);
  if (fs.capacity > 0) {
    out['nodefs.available'] = { available: fs.available, capacity: fs.capacity };
    out['nodefs.inodesFree'] = { available: fs.inodesFree, capacity: fs.inodes };
  }
  if (imageFsDir !== undefined) {
    const ifs = await fsSize(imageFsDir);
    if (ifs.capacity > 0) {
      out['imagefs.available'] = { available: ifs.available, capacity: ifs.capacity };
      out['imagefs.inodesFree'] = { available: ifs.inodesFree, capacity: ifs.inodes };
    }
  }
  const p = await pids();
  if (p) out['pid.available'] = p;
  return out;
}

function amountOf(a: { quantity?: number; percent?: number }, capacity: number): number {
  return a.quantity ?? Math.round((a.percent ?? 0) * capacity);
}

/** Whether `t` is met by the observation; with `withReclaim`, whether it is still unresolved. */
export function isMet(t: Threshold, obs: Observations, withReclaim: boolean): boolean {
  const o = obs[t.signal];
  if (!o) return false;
  let limit = amountOf(t, o.capacity);
  if (withReclaim && t.minReclaim) limit += amountOf(t.minReclaim, o.capacity);
  return o.available < limit;
}

/** What the eviction manager needs to know about one active pod. */
export interface PodUsage {
  pod: Pod;
  /** Bytes of memory, bytes of disk (logs, emptyDirs), processes; undefined when unknown. */
  memory?: number;
  disk?: number;
  processes?: number;
}

const requestOf = (pod: Pod, resource: 'memory' | 'ephemeral-storage'): number => {
  let sum = 0;
  for (const c of pod.spec.containers) {
    const r = (c.resources as { requests?: Record<string, unknown> } | undefined)?.requests?.[resource];
    const q = typeof r === 'string' || typeof r === 'number' ? tryParseQuantity(String(r)) : null;
    if (q) sum += Number(q.value());
  }
  return sum;
};

const priorityOf = (pod: Pod): number => (typeof pod.spec.priority === 'number' ? pod.spec.priority : 0);

/** Static, mirror and system-critical pods (kubelet's IsCriticalPod). */
export function isCriticalPod(pod: Pod): boolean {
  const src = pod.metadata.annotations?.['kubernetes.io/config.source'];
  if (src !== undefined && src !== 'api') return true;
  if (pod.metadata.annotations?.['kubernetes.io/config.mirror'] !== undefined) return true;
  return priorityOf(pod) >= 2_000_000_000;
}

/** Pods in the order kubelet evicts them for a resource (first = evicted first). */
export function rankForEviction(pods: PodUsage[], resource: Resource): PodUsage[] {
  const cmp = (a: PodUsage, b: PodUsage): number => {
    if (resource === 'pids') return priorityOf(a.pod) - priorityOf(b.pod) || (b.processes ?? 0) - (a.processes ?? 0);
    const use = (u: PodUsage): number => (resource === 'memory' ? u.memory : u.disk) ?? 0;
    const over = (u: PodUsage): number => use(u) - requestOf(u.pod, resource);
    const exceedsA = over(a) > 0 ? 1 : 0;
    const exceedsB = over(b) > 0 ? 1 : 0;
    return exceedsB - exceedsA || priorityOf(a.pod) - priorityOf(b.pod) || over(b) - over(a);
  };
  return [...pods].sort(cmp);
}

/** kubelet's Quantity.String for a byte count (BinarySI): 1024 -> 1Ki. */
function bytesText(n: number): string {
  for (const [suffix, size] of [['Ei', 2 ** 60], ['Pi', 2 ** 50], ['Ti', 2 ** 40], ['Gi', 2 ** 30], ['Mi', 2 ** 20], ['Ki', 1024]] as const) {
    if (n >= size && n % size === 0) return `${n / size}${suffix}`;
  }
  if (n >= 1024) return `${Math.ceil(n / 1024)}Ki`;
  return String(n);
}

/** kubelet's eviction message (1.23 evictionMessage). */
export function evictionMessage(resource: Resource, u: PodUsage): string {
  let msg = `The node was low on resource: ${resource}. `;
  if (resource === 'memory' && u.memory !== undefined && u.pod.spec.containers.length === 1) {
    const c = u.pod.spec.containers[0]!;
    const request = requestOf(u.pod, 'memory');
    if (u.memory > request) msg += `Container ${c.name} was using ${bytesText(u.memory)}, which exceeds its request of ${request === 0 ? '0' : bytesText(request)}. `;
  }
  return msg;
}

export interface EvictionDecision {
  /** Conditions to report True. */
  conditions: Set<PressureCondition>;
  /** The pod to evict now, if any, with its grace period and message. */
  evict?: { pod: Pod; graceSeconds: number; message: string };
}

export interface EvictionManagerOptions {
  thresholds: Threshold[];
  pressureTransitionPeriodMs: number;
  /** --eviction-max-pod-grace-period (soft thresholds); negative: the pod's own grace period. */
  maxPodGracePeriodSeconds: number;
  /**
   * kubelet's reclaimNodeLevelResources: frees what the node itself holds for a signal (dead
   * containers and unused images under disk pressure) and answers the observations afterwards;
   * undefined when nothing can be reclaimed for that signal.
   */
  reclaimNodeLevel?: (signal: Signal, resource: Resource) => Promise<Observations | undefined>;
  now?: () => number;
}

/** The state machine of the eviction manager: feed it observations, it answers what to do. */
export class EvictionManager {
  private met: Threshold[] = [];
  private readonly firstObserved = new Map<Threshold, number>();
  private readonly conditionLastObserved = new Map<PressureCondition, number>();
  private conditions = new Set<PressureCondition>();
  private readonly now: () => number;

  constructor(private readonly o: EvictionManagerOptions) {
    this.now = o.now ?? Date.now;
  }

  /** The conditions as of the last synchronize(). */
  pressure(): Set<PressureCondition> {
    return new Set(this.conditions);
  }

  /** One monitoring pass; `pods()` is called only when a pod must be chosen. */
  async synchronize(obs: Observations, pods: () => Promise<PodUsage[]>): Promise<EvictionDecision> {
    const now = this.now();
    const met = this.o.thresholds.filter((t) => isMet(t, obs, false) || (this.met.includes(t) && isMet(t, obs, true)));
    for (const t of [...this.firstObserved.keys()]) if (!met.includes(t)) this.firstObserved.delete(t);
    for (const t of met) if (!this.firstObserved.has(t)) this.firstObserved.set(t, now);
    for (const t of met) this.conditionLastObserved.set(SIGNALS[t.signal].condition, now);
    this.conditions = new Set(
      [...this.conditionLastObserved].filter(([, at]) => now - at < this.o.pressureTransitionPeriodMs || at === now).map(([c]) => c),
    );
    const acting = met.filter((t) => now - this.firstObserved.get(t)! >= t.gracePeriodMs);
    this.met = acting;
    const decision: EvictionDecision = { conditions: new Set(this.conditions) };
    if (acting.length === 0) return decision;
    const memoryFirst = (t: Threshold): number => (SIGNALS[t.signal].resource === 'memory' ? 0 : 1);
    const chosen = [...acting].sort((a, b) => memoryFirst(a) - memoryFirst(b))[0]!;
    const resource = SIGNALS[chosen.signal].resource;
    // node-level resources first: no pod is evicted when that brings every threshold (with its minimum reclaim) back
    const after = await this.o.reclaimNodeLevel?.(chosen.signal, resource);
    if (after && !this.o.thresholds.some((t) => isMet(t, after, true))) return decision;
    const candidates = rankForEviction((await pods()).filter((u) => !isCriticalPod(u.pod)), resource);
    const victim = candidates[0];
    if (!victim) return decision;
    const podGrace = victim.pod.spec.terminationGracePeriodSeconds ?? 30;
    const graceSeconds = chosen.hard ? 0 : this.o.maxPodGracePeriodSeconds < 0 ? podGrace : this.o.maxPodGracePeriodSeconds;
    decision.evict = { pod: victim.pod, graceSeconds, message: evictionMessage(resource, victim) };
    return decision;
  }
}

/**
 * Whether a new pod may start under the current pressure (kubelet's eviction Admit): anything
 * without pressure; critical pods always; under memory pressure alone, pods that are not BestEffort
 * (or tolerate node.kubernetes.io/memory-pressure); otherwise nothing. Returns the refusal message.
 */
export function admitUnderPressure(pod: Pod, pressure: ReadonlySet<PressureCondition>): string | undefined {
  if (pressure.size === 0 || isCriticalPod(pod)) return undefined;
  if (pressure.size === 1 && pressure.has('MemoryPressure')) {
    if (qosClass(pod) !== 'BestEffort') return undefined;
    const tolerates = (pod.spec.tolerations ?? []).some(
      (t) => (t.key === 'node.kubernetes.io/memory-pressure' || (t.key === undefined && t.operator === 'Exists')) && (t.effect === undefined || t.effect === 'NoSchedule'),
    );
    if (tolerates) return undefined;
  }
  return `The node had condition: [${[...pressure].join(', ')}]. `;
}

/** Bytes a pod's directory holds on the node filesystem (logs, emptyDirs, volumes). */
export async function dirUsage(dir: string): Promise<number> {
  let total = 0;
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  for (const e of entries) {
    const p = join(dir, e.name);
    if (e.isDirectory()) total += await dirUsage(p);
    else if (e.isFile()) total += (await stat(p).catch(() => undefined))?.size ?? 0;
  }
  return total;
}
