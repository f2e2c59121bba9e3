// The one merge of pod sources (kubelet's pkg/kubelet/config PodConfig/podStorage).
//
// Every source (file now; URL, HTTP and API server later) pushes whole snapshots of the pods it
// currently holds: {op: 'SET', source, pods}. The merge keeps the last snapshot per source and
// turns each new one into the changes since: ADD for a UID it had not seen, UPDATE for a UID whose
// pod changed (spec, labels, annotations other than config.seen, deletionTimestamp), DELETE for a
// UID that left the snapshot. A source therefore never computes differences itself.
//
// A source hands over a pod object and never changes it afterwards: the same object in a later
// snapshot is taken as unchanged without being copied or compared (the API source's store keeps
// unchanged pods as the same objects, so a 100-pod watch does not cost 100 copies per event).
//
// Pods whose full name (namespace/name) repeats within a source are dropped after the first, as
// kubelet does ("duplicate pod name"). The first time a UID is seen it is stamped with
// kubernetes.io/config.seen; later snapshots keep that stamp.
import type { Pod } from '../types.js';
import { podFullName } from '../types.js';
import { rfc3339Nano } from '../time.js';
import { canonicalJSON, CONFIG_SEEN_ANNOTATION, type SourceName } from './manifest.js';

/** What a source emits: the complete set of pods it holds now. */
export interface PodSnapshot {
  op: 'SET';
  source: SourceName;
  pods: Pod[];
}

export type PodOp = 'ADD' | 'UPDATE' | 'DELETE';

/** What the merge emits; `pods` is never empty. */
export interface PodUpdate {
  op: PodOp;
  source: SourceName;
  pods: Pod[];
}

export interface MergeOptions {
  /** Clock for config.seen; tests pass a fixed one. */
  now?: () => Date;
  /** Called for every pod dropped as a duplicate. */
  onDuplicate?: (pod: Pod, source: SourceName) => void;
}

export class PodMerge {
  private readonly bySource = new Map<SourceName, Map<string, Pod>>();
  /** Per source, the object each UID arrived as last time: the same object again is unchanged (no copy, no compare). */
  private readonly lastIncoming = new Map<SourceName, Map<string, Pod>>();
  private readonly now: () => Date;

  constructor(private readonly options: MergeOptions = {}) {
    this.now = options.now ?? (() => new Date());
  }

  /**
   * Applies one snapshot and returns the resulting updates, in the order DELETE, ADD, UPDATE
   * (deleting first lets a renamed pod's old instance stop before its replacement starts).
   * Does not mutate the snapshot's pods; returned pods are copies owned by the caller.
   */
  apply(snapshot: PodSnapshot): PodUpdate[] {
    const previous = this.bySource.get(snapshot.source) ?? new Map<string, Pod>();
    const next = new Map<string, Pod>();
    const names = new Set<string>();
    const added: Pod[] = [];
    const updated: Pod[] = [];
    const lastIncoming = this.lastIncoming.get(snapshot.source) ?? new Map<string, Pod>();
    const incomingNow = new Map<string, Pod>();
    for (const incoming of snapshot.pods) {
      const full = podFullName(incoming);
      if (names.has(full) || next.has(incoming.metadata.uid)) {
        this.options.onDuplicate?.(incoming, snapshot.source);
        continue;
      }
      names.add(full);
      incomingNow.set(incoming.metadata.uid, incoming);
      const kept = previous.get(incoming.metadata.uid);
      if (kept !== undefined && lastIncoming.get(incoming.metadata.uid) === incoming) {
        next.set(incoming.metadata.uid, kept);
        continue;
      }
      const pod = structuredClone(incoming);
      const old = previous.get(pod.metadata.uid);
      const seen = old?.metadata.annotations?.[CONFIG_SEEN_ANNOTATION] ?? rfc3339Nano(this.now());
      pod.metadata.annotations = { ...(pod.metadata.annotations ?? {}), [CONFIG_SEEN_ANNOTATION]: seen };
      next.set(pod.metadata.uid, pod);
      if (old === undefined) added.push(pod);
      else if (podChanged(old, pod)) updated.push(pod);
      else next.set(pod.metadata.uid, old);
    }
    const deleted = [...previous.values()].filter((p) => !next.has(p.metadata.uid));
    this.bySource.set(snapshot.source, next);
    this.lastIncoming.set(snapshot.source, incomingNow);
    const out: PodUpdate[] = [];
    const push = (op: PodOp, pods: Pod[]): void => {
      if (pods.length > 0) out.push({ op, source: snapshot.source, pods: pods.map((p) => structuredClone(p)) });
    };
    push('DELETE', deleted);
    push('ADD', added);
    push('UPDATE', updated);
    return out;
  }

  /** Every pod currently known, from all sources. */
  pods(): Pod[] {
    return [...this.bySource.values()].flatMap((m) => [...m.values()].map((p) => structuredClone(p)));
  }
}

/** Whether a pod changed in a way its worker must see (kubelet's checkAndUpdatePod). */
function podChanged(old: Pod, pod: Pod): boolean {
  const view = (p: Pod): string =>
    canonicalJSON({
      spec: p.spec,
      labels: p.metadata.labels,
      annotations: p.metadata.annotations,
      deletionTimestamp: p.metadata.deletionTimestamp,
    });
  return view(old) !== view(pod);
}
