// The one merge of pod sources (kubelet's pkg/kubelet/config PodConfig/podStorage).
//
// A source pushes either whole snapshots of the pods it currently holds ({op: 'SET', source, pods}:
// the file, URL and manifest-endpoint sources, and the API source after each list) or, between lists,
// only what changed ({op: 'DELTA', source, removed, set}: the API source per batch of watch events).
// The merge keeps the pods per source and turns either into the changes since: ADD for a UID it had
// not seen, UPDATE for a UID whose pod changed (spec, labels, annotations other than config.seen,
// deletionTimestamp), DELETE for a UID that left the snapshot or was removed. A source therefore never
// computes differences itself, and a DELTA costs the merge the size of the delta, not of the node's
// pods (one watch event on a node with 100 pods is one pod's work, not a hundred's).
//
// A source hands over a pod object and never changes it afterwards: the same object again is taken as
// unchanged without being copied or compared (the API source's store keeps unchanged pods as the same
// objects, so a relist of 100 unchanged pods costs no copies), and the merge's own version of a pod
// (its metadata stamped with config.seen) shares everything but its top level and metadata with it.
//
// Pods whose full name (namespace/name) repeats within a source are dropped, as kubelet does
// ("duplicate pod name"): in a SET, those after the first; in a DELTA, one whose name another UID of
// the source holds. The first time a UID is seen it is stamped with kubernetes.io/config.seen; later
// versions keep that stamp.
import type { Pod } from '../types.js';
import { podFullName } from '../types.js';
import { rfc3339Nano } from '../time.js';
import { CONFIG_SEEN_ANNOTATION, type SourceName } from './manifest.js';

/** The complete set of pods a source holds now. */
export interface PodSet {
  op: 'SET';
  source: SourceName;
  pods: Pod[];
}

/** What changed in a source: `removed` pods (by UID) leave it first, then each of `set` is added or replaces the pod of its UID. */
export interface PodDelta {
  op: 'DELTA';
  source: SourceName;
  removed: Pod[];
  set: Pod[];
}

/** What a source emits. */
export type PodSnapshot = PodSet | PodDelta;

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

/** One source's pods: by UID as merged (stamped copies), the object each UID arrived as last, and UID by full name. */
interface SourceState {
  pods: Map<string, Pod>;
  incoming: Map<string, Pod>;
  names: Map<string, string>;
}

const emptyState = (): SourceState => ({ pods: new Map(), incoming: new Map(), names: new Map() });

export class PodMerge {
  private readonly sources = new Map<SourceName, SourceState>();
  private readonly now: () => Date;

  constructor(private readonly options: MergeOptions = {}) {
    this.now = options.now ?? (() => new Date());
  }

  /**
   * Applies one snapshot or delta and returns the resulting updates, in the order DELETE, ADD, UPDATE
   * (deleting first lets a renamed pod's old instance stop before its replacement starts).
   * Does not mutate the given pods. Returned pods are the merge's own copies, shared with the caller
   * read only: neither side changes a pod once it is returned (a changed pod is a new copy).
   */
  apply(change: PodSnapshot): PodUpdate[] {
    return change.op === 'SET' ? this.applySet(change) : this.applyDelta(change);
  }

  private applySet(snapshot: PodSet): PodUpdate[] {
    const previous = this.sources.get(snapshot.source) ?? emptyState();
    const next = emptyState();
    const added: Pod[] = [];
    const updated: Pod[] = [];
    for (const incoming of snapshot.pods) {
      const full = podFullName(incoming);
      if (next.names.has(full) || next.pods.has(incoming.metadata.uid)) {
        this.options.onDuplicate?.(incoming, snapshot.source);
        continue;
      }
      next.names.set(full, incoming.metadata.uid);
      this.take(previous, next, incoming, added, updated);
    }
    const deleted = [...previous.pods.values()].filter((p) => !next.pods.has(p.metadata.uid));
    this.sources.set(snapshot.source, next);
    return updates(snapshot.source, deleted, added, updated);
  }

  private applyDelta(delta: PodDelta): PodUpdate[] {
    let state = this.sources.get(delta.source);
    if (!state) this.sources.set(delta.source, (state = emptyState()));
    const deleted: Pod[] = [];
    for (const gone of delta.removed) {
      const uid = gone.metadata.uid;
      const kept = state.pods.get(uid);
      if (!kept) continue;
      state.pods.delete(uid);
      state.incoming.delete(uid);
      const full = podFullName(kept);
      if (state.names.get(full) === uid) state.names.delete(full);
      deleted.push(kept);
    }
    const added: Pod[] = [];
    const updated: Pod[] = [];
    for (const incoming of delta.set) {
      const uid = incoming.metadata.uid;
      const full = podFullName(incoming);
      const holder = state.names.get(full);
      if (holder !== undefined && holder !== uid) {
        this.options.onDuplicate?.(incoming, delta.source);
        continue;
      }
      const kept = state.pods.get(uid);
      if (kept) {
        const oldName = podFullName(kept);
        if (oldName !== full && state.names.get(oldName) === uid) state.names.delete(oldName);
      }
      state.names.set(full, uid);
      this.take(state, state, incoming, added, updated);
    }
    return updates(delta.source, deleted, added, updated);
  }

  /**
   * Records `incoming` in `next` (which may be `previous` itself), noting an ADD or UPDATE against `previous`.
   * A new version that differs only where workers do not look (status, resourceVersion: most watch events)
   * is compared in place, without a copy or a serialization.
   */
  private take(previous: SourceState, next: SourceState, incoming: Pod, added: Pod[], updated: Pod[]): void {
    const uid = incoming.metadata.uid;
    const old = previous.pods.get(uid);
    const sameObject = old !== undefined && previous.incoming.get(uid) === incoming;
    next.incoming.set(uid, incoming);
    if (sameObject) {
      next.pods.set(uid, old);
      return;
    }
    const seen = old?.metadata.annotations?.[CONFIG_SEEN_ANNOTATION] ?? rfc3339Nano(this.now());
    const annotations = { ...(incoming.metadata.annotations ?? {}), [CONFIG_SEEN_ANNOTATION]: seen };
    if (old !== undefined && sameForWorker(old, incoming, annotations)) {
      next.pods.set(uid, old);
      return;
    }
    // A new top level and metadata with the stamp; the rest is shared with the source's object, which
    // neither the source nor any reader changes (see above): no deep copy per new or changed pod.
    const pod: Pod = { ...incoming, metadata: { ...incoming.metadata, annotations } };
    next.pods.set(uid, pod);
    (old === undefined ? added : updated).push(pod);
  }

  /**
   * The known pods whose UIDs are in `uids`, in source order, as stored (no copies: the caller must not
   * change them). For the agent's frequent active-pod scans (admission, QoS, resource managers), where a
   * copy of every pod per call made a burst of n pods cost n² copies.
   */
  peekPods(uids: ReadonlySet<string>): Pod[] {
    const out: Pod[] = [];
    for (const s of this.sources.values()) for (const [uid, p] of s.pods) if (uids.has(uid)) out.push(p);
    return out;
  }

  /** Whether a source holds the pod. */
  has(uid: string): boolean {
    for (const s of this.sources.values()) if (s.pods.has(uid)) return true;
    return false;
  }

  /** Every pod currently known, from all sources. */
  pods(): Pod[] {
    return [...this.sources.values()].flatMap((s) => [...s.pods.values()].map((p) => structuredClone(p)));
  }
}

function updates(source: SourceName, deleted: Pod[], added: Pod[], updated: Pod[]): PodUpdate[] {
  const out: PodUpdate[] = [];
  const push = (op: PodOp, pods: Pod[]): void => {
    if (pods.length > 0) out.push({ op, source, pods });
  };
  push('DELETE', deleted);
  push('ADD', added);
  push('UPDATE', updated);
  return out;
}

/**
 * Whether `incoming` (with `annotations`, config.seen stamped) shows the worker of `old` nothing new:
 * the same spec, labels, annotations and deletionTimestamp (kubelet's checkAndUpdatePod).
 */
function sameForWorker(old: Pod, incoming: Pod, annotations: Record<string, string>): boolean {
  return (
    old.metadata.deletionTimestamp === incoming.metadata.deletionTimestamp &&
    deepEqual(old.metadata.labels, incoming.metadata.labels) &&
    deepEqual(old.metadata.annotations, annotations) &&
    deepEqual(old.spec, incoming.spec)
  );
}

/** Deep equality of JSON values, as canonical JSON compares them: key order and keys set to undefined do not count. */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    if (a.length !== bb.length) return false;
    for (let i = 0; i < a.length; i++) if (!deepEqual(a[i], bb[i])) return false;
    return true;
  }
  const ao = a as Record<string, unknown>;
  const bo = b as Record<string, unknown>;
  let n = 0;
  for (const k in ao) {
    if (ao[k] === undefined) continue;
    n++;
    if (!deepEqual(ao[k], bo[k])) return false;
  }
  for (const k in bo) if (bo[k] !== undefined) n--;
  return n === 0;
}
