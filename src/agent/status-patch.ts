// The body of a pod status PATCH as kubelet 1.23 builds it (pkg/util/pod PatchPodStatus): a two-way
// strategic merge patch (apimachinery's strategicpatch.CreateTwoWayMergePatch) from the status the
// server holds to the new one, with metadata.uid as a precondition. Only what changed is sent:
// scalar fields that differ, null for fields that are gone, the whole list for the atomic lists
// (containerStatuses, initContainerStatuses, ephemeralContainerStatuses), and for the lists merged
// by key (conditions by type, podIPs by ip) only the changed or new elements (with their key),
// `{"$patch":"delete"}` entries for removed ones and a `$setElementOrder/<list>` directive naming
// every element in the new order. Keys are sorted as Go's encoder sorts a map's keys, so the
// bytes are kubelet's. Before the diff the new status keeps the conditions kubelet does not own
// from the server's status (the status manager's mergePodStatus), and the fields the agent never
// sets (nominatedNodeName, ephemeralContainerStatuses) are left as the server has them.
import type { Json } from './client/client.js';

/** Condition types kubelet owns (kubetypes.PodConditionByKubelet). */
const KUBELET_CONDITIONS = new Set(['PodScheduled', 'Ready', 'Initialized', 'ContainersReady']);
/** PodStatus lists with patchStrategy merge, by their patchMergeKey; the other lists are atomic. */
const MERGE_KEYS: Record<string, string> = { conditions: 'type', podIPs: 'ip' };
/** Fields the agent does not set: never cleared by it. */
const NOT_OURS = ['nominatedNodeName', 'ephemeralContainerStatuses'];

/** The status to send: `next` with the server's conditions kubelet does not own, and the fields the agent does not set. */
export function mergePodStatus(server: Json, next: Json): Json {
  const merged: Json = { ...next };
  const oldConds = Array.isArray(server.conditions) ? (server.conditions as Json[]) : [];
  const newConds = Array.isArray(next.conditions) ? (next.conditions as Json[]) : [];
  const foreign = oldConds.filter((c) => !KUBELET_CONDITIONS.has(String(c.type)));
  if (foreign.length > 0 || newConds.some((c) => !KUBELET_CONDITIONS.has(String(c.type)))) {
    merged.conditions = [...foreign, ...newConds.filter((c) => KUBELET_CONDITIONS.has(String(c.type)))];
  }
  for (const k of NOT_OURS) if (isEmpty(merged[k]) && !isEmpty(server[k])) merged[k] = server[k];
  return merged;
}

/**
 * The PATCH body from the server's status `server` to `next` for the pod `uid` (next is first
 * merged with mergePodStatus), or undefined when nothing changed (kubelet sends no request then).
 */
export function podStatusPatch(uid: string, server: Json, next: Json): Json | undefined {
  const diff = diffObjects(server, mergePodStatus(server, next), true);
  if (diff === undefined) return undefined;
  return { metadata: { uid }, status: diff };
}

/** Go's omitempty (and a zero metav1.Time's null), as far as comparing two statuses goes. */
function isEmpty(v: unknown): boolean {
  if (v === undefined || v === null || v === '') return true;
  if (Array.isArray(v)) return v.length === 0;
  if (typeof v === 'object') {
    for (const k in v as Json) if (!isEmpty((v as Json)[k])) return false;
    return true;
  }
  return false;
}

/** Deep equality with empty values (see isEmpty) the same as absent ones. */
function same(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  const ea = isEmpty(a);
  const eb = isEmpty(b);
  if (ea || eb) return ea && eb;
  if (typeof a !== 'object' || typeof b !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    if (a.length !== bb.length) return false;
    for (let i = 0; i < a.length; i++) if (!same(a[i], bb[i])) return false;
    return true;
  }
  const ao = a as Json;
  const bo = b as Json;
  for (const k in ao) if (!same(ao[k], bo[k])) return false;
  for (const k in bo) if (!(k in ao) && !isEmpty(bo[k])) return false;
  return true;
}

/** A copy of `v` with every object's keys in Go's (sorted) order. */
function sorted(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sorted);
  if (v === null || typeof v !== 'object') return v;
  const o = v as Json;
  const out: Json = {};
  for (const k of Object.keys(o).sort()) if (o[k] !== undefined) out[k] = sorted(o[k]);
  return out;
}

/**
 * diffMaps: the patch from `a` to `b`, undefined when equal. At the top level of the status
 * (`top`) lists named in MERGE_KEYS are merged by key; other values are replaced when they differ.
 */
function diffObjects(a: Json, b: Json, top: boolean): Json | undefined {
  const out: Json = {};
  for (const k in b) {
    const nv = b[k];
    if (isEmpty(nv)) continue;
    const ov = a[k];
    if (isEmpty(ov)) {
      out[k] = sorted(nv);
      continue;
    }
    const mergeKey = top ? MERGE_KEYS[k] : undefined;
    if (mergeKey !== undefined && Array.isArray(ov) && Array.isArray(nv)) {
      diffMergeList(k, mergeKey, ov as Json[], nv as Json[], out);
    } else if (!same(ov, nv)) {
      out[k] = sorted(nv);
    }
  }
  for (const k in a) if (!isEmpty(a[k]) && isEmpty(b[k])) out[k] = null;
  const keys = Object.keys(out);
  if (keys.length === 0) return undefined;
  const res: Json = {};
  for (const k of keys.sort()) res[k] = out[k];
  return res;
}

/** diffListsOfMaps with the set-element-order directive, into `out`. */
function diffMergeList(field: string, key: string, old: Json[], next: Json[], out: Json): void {
  const oldByKey = new Map<string, Json>();
  for (const e of old) oldByKey.set(String(e[key]), e);
  const nextKeys = new Set<string>();
  const patch: unknown[] = [];
  for (const e of next) {
    const k = String(e[key]);
    nextKeys.add(k);
    const o = oldByKey.get(k);
    if (o === undefined) {
      patch.push(sorted(e));
      continue;
    }
    const d = diffObjects(o, e, false);
    if (d !== undefined) {
      d[key] = e[key];
      patch.push(sorted(d));
    }
  }
  // deletions go last, in the order of their keys (the diff walks both lists sorted by key)
  const gone = old.filter((e) => !nextKeys.has(String(e[key]))).sort((x, y) => (String(x[key]) < String(y[key]) ? -1 : String(x[key]) > String(y[key]) ? 1 : 0));
  for (const e of gone) patch.push({ $patch: 'delete', [key]: e[key] });
  const orderSame = old.length === next.length && old.every((e, i) => String(e[key]) === String(next[i]![key]));
  if (patch.length > 0) out[field] = patch;
  if ((patch.length > 0 || !orderSame) && next.length > 0) out[`$setElementOrder/${field}`] = next.map((e) => ({ [key]: e[key] }));
}
