/**
 * Server-side apply of a configuration to a live object, as Kubernetes' field manager does it
 * (k8s.io/apiserver fieldmanager: fieldmanager.go, versioncheck.go, lastappliedupdater.go,
 * skipnonapplied.go, buildmanagerinfo.go, managedfieldsupdater.go, stripmeta.go, structuredmerge.go,
 * conflict.go) on top of structured-merge-diff (merge/update.go Apply, typed/merge.go, typed/remove.go,
 * typed/validate.go, merge/conflict.go):
 *
 *   - the configuration is validated against the kind's schema (types, undeclared fields, list keys);
 *   - it is merged into the live object: its values win, map lists merge item by item on their keys,
 *     sets are unioned, atomic lists and maps are replaced, granular maps and structs merge key by key;
 *   - fields the manager applied last time and applies no more are removed, unless another manager
 *     (applier or updater) owns them;
 *   - fields it changes that another manager owns are conflicts (409) unless forced, in which case the
 *     others lose them; the applier then owns exactly what it applied.
 *
 * Pure: the caller decodes the request, stores the result and runs defaulting, validation and admission.
 */
import { StatusError, apiErrors, type StatusCause } from './errors.js';
import {
  FieldSet,
  atomOf,
  comparisonsByVersion,
  decodeManagedFields,
  deduceAtom,
  diffOwnedChanged,
  emptyManaged,
  encodeManagedFields,
  ensureNamedFieldsAreMembers,
  equalValues,
  excludeFields,
  fieldSetOf,
  goJson,
  goValueV,
  isJsonObject,
  listItemToPathElement,
  managerIdentifier,
  mapFieldType,
  pathElementString,
  pathString,
  printManager,
  recordUpdate,
  sameVersions,
  scalarError,
  serializePathElement,
  stripMeta,
  takeOwnership,
  UNTYPED_ATOMIC,
  walk2,
  type JsonObject,
  type Managed,
  type Path,
  type PathElement,
  type VersionConverter,
  type VersionedSet,
  type WalkError,
} from './managedfields.js';
import type { Definitions, Schema } from './schema.js';

export const LAST_APPLIED_CONFIG_ANNOTATION = 'kubectl.kubernetes.io/last-applied-configuration';
const TOTAL_ANNOTATION_SIZE_LIMIT_B = 256 * 1024;

// ---------------------------------------------------------------------------
// Validation of the applied configuration (typed/validate.go)
// ---------------------------------------------------------------------------

/** One error of typed validation: a path as Kubernetes prints it and a message. */
export interface TypeError {
  field: string;
  message: string;
}

/**
 * The type errors of a configuration, in structured-merge-diff's words: `expected numeric (int or float),
 * got string`, `expected string, got &value.valueUnstructured{Value:5}`, `field not declared in schema`,
 * `duplicate entries for key [name="c"]`, `element 0: associative list with keys has an element that omits
 * key field "name" ...`. Only the first undeclared field of an object is reported.
 */
export function validateTyped(obj: unknown, schema: Schema, defs: Definitions, allowDuplicates = false): TypeError[] {
  const errs: TypeError[] = [];
  validateValue(obj, schema, '', errs, defs, allowDuplicates);
  return errs;
}

function validateValue(v: unknown, type: Schema, path: string, errs: TypeError[], defs: Definitions, allowDup: boolean): void {
  const a = deduceAtom(atomOf(type, defs), v);
  if (a.map) {
    if (v === null || v === undefined) return;
    if (!isJsonObject(v)) {
      errs.push({ field: path, message: `expected map, got ${goValueV(v)}` });
      return;
    }
    for (const [key, val] of Object.entries(v)) {
      if (val === undefined) continue;
      const t = mapFieldType(a.map, key);
      const p = path + pathElementString({ field: key });
      if (t === undefined) {
        errs.push({ field: p, message: 'field not declared in schema' });
        return;
      }
      validateValue(val, t, p, errs, defs, allowDup);
    }
    return;
  }
  if (a.scalar) {
    const e = scalarError(a.scalar, v);
    if (e !== null) errs.push({ field: path, message: e });
    return;
  }
  if (a.list) {
    if (v === null || v === undefined) return;
    if (!Array.isArray(v)) {
      errs.push({ field: path, message: `expected list, got ${goValueV(v)}` });
      return;
    }
    const seen = new Set<string>();
    for (let i = 0; i < v.length; i++) {
      let e: PathElement;
      try {
        e = listItemToPathElement(a.list, i, v[i], defs);
      } catch (err) {
        errs.push({ field: path, message: `element ${i}: ${(err as Error).message}` });
        return;
      }
      if (!a.list.atomic) {
        const id = serializePathElement(e);
        if (seen.has(id) && !allowDup) errs.push({ field: path, message: `duplicate entries for key ${pathElementString(e)}` });
        seen.add(id);
      }
      validateValue(v[i], a.list.elem, path + pathElementString(e), errs, defs, allowDup);
    }
  }
}

/** ValidationErrors.Error(): one error as `path: message`, several under `errors:`. */
export function typeErrorsMessage(errs: readonly TypeError[]): string {
  const one = (e: TypeError) => (e.field === '' ? e.message : `${e.field}: ${e.message}`);
  if (errs.length === 1) return one(errs[0] as TypeError);
  return ['errors:', ...errs.map((e) => '  ' + one(e))].join('\n');
}

// ---------------------------------------------------------------------------
// Merge and removal (typed/merge.go, typed/remove.go)
// ---------------------------------------------------------------------------

/**
 * typed.Merge: `config` merged into `live`. Leaves (scalars, atomic lists and maps) take the
 * configuration's value; granular maps and structs merge key by key; map lists and sets item by item,
 * live items first in their order, with the configuration's items where it places them.
 */
export function mergeTyped(live: unknown, config: unknown, schema: Schema, defs: Definitions): { value: unknown; errors: WalkError[] } {
  const errors: WalkError[] = [];
  const value = walk2(structuredClone(live), structuredClone(config), schema, [], {
    defs,
    strictScalars: true,
    errors,
    leaf: (w) => (w.rhs !== undefined ? w.rhs : w.lhs),
  });
  return { value, errors };
}

/**
 * typed.RemoveItems: the value without the fields, list items and map keys of `toRemove` (and what is
 * under them). A container left with nothing is dropped (structured-merge-diff leaves a null there).
 */
export function removeItems(v: unknown, toRemove: FieldSet, type: Schema, defs: Definitions): unknown {
  const a = deduceAtom(atomOf(type, defs), v);
  if (a.map) {
    if (!isJsonObject(v) || Object.keys(v).length === 0 || a.map.atomic) return undefined;
    const out: JsonObject = {};
    for (const [k, val] of Object.entries(v)) {
      if (val === undefined) continue;
      const e: PathElement = { field: k };
      if (toRemove.hasMember(e)) continue;
      const sub = toRemove.withPrefix(e);
      const nv = sub.empty() ? val : removeItems(val, sub, mapFieldType(a.map, k) ?? UNTYPED_ATOMIC, defs);
      if (nv !== undefined) out[k] = nv;
    }
    return Object.keys(out).length > 0 ? out : undefined;
  }
  if (a.scalar) return v;
  if (a.list) {
    if (!Array.isArray(v) || v.length === 0 || a.list.atomic) return undefined;
    const out: unknown[] = [];
    v.forEach((item, i) => {
      let e: PathElement | undefined;
      try {
        e = listItemToPathElement(a.list!, i, item, defs);
      } catch {
        e = undefined;
      }
      if (e === undefined) {
        out.push(item);
        return;
      }
      if (toRemove.hasMember(e)) return;
      const sub = toRemove.withPrefix(e);
      const nv = sub.empty() ? item : removeItems(item, sub, a.list!.elem, defs);
      if (nv !== undefined) out.push(nv);
    });
    return out.length > 0 ? out : undefined;
  }
  return v;
}

/**
 * Updater.prune: removes what the applier applied last time (`lastSet`, in the version it used then) and
 * no longer applies, unless another manager (each seen in its version), or the applier's new
 * configuration, owns it (addBackOwnedItems, addBackDanglingItems). `merged` is of version `apiVersion`
 * and so is the result. A version that is no longer served skips the step that needs it.
 */
function prune(
  merged: unknown,
  managed: Managed,
  lastSet: VersionedSet | undefined,
  apiVersion: string,
  versions: VersionConverter,
  defs: Definitions,
): unknown {
  if (!lastSet || lastSet.set.empty()) return merged;
  const version = lastSet.apiVersion;
  const schemaAt = versions.schema(version);
  const mergedAtLast = versions.convert(merged, apiVersion, version);
  if (schemaAt === undefined || mergedAtLast === undefined) return merged;
  const named = (s: FieldSet, schema: Schema) => ensureNamedFieldsAreMembers(s, schema, defs);
  const setOf = (v: unknown, schema: Schema) => named(fieldSetOf(v, schema, defs), schema);
  let pruned: { value: unknown; version: string } = {
    value: removeItems(mergedAtLast, named(lastSet.set, schemaAt), schemaAt, defs),
    version,
  };
  // addBackOwnedItems: every manager's fields, per version, the pruned object's version first.
  const owned = new Map<string, FieldSet>();
  for (const vs of managed.fields.values()) owned.set(vs.apiVersion, (owned.get(vs.apiVersion) ?? new FieldSet()).union(vs.set));
  const order = [...owned.keys()].sort((x, y) => (x === version ? -1 : y === version ? 1 : 0));
  let current: { value: unknown; version: string } = { value: mergedAtLast, version };
  for (const v of order) {
    const schema = versions.schema(v);
    const m = versions.convert(current.value, current.version, v);
    const p = versions.convert(pruned.value, pruned.version, v);
    if (schema === undefined || m === undefined || p === undefined) continue;
    current = { value: m, version: v };
    const mergedSet = setOf(m, schema);
    const keep = setOf(p, schema).union(named(owned.get(v) as FieldSet, schema));
    pruned = { value: removeItems(m, mergedSet.difference(keep), schema, defs), version: v };
  }
  // addBackDanglingItems: only what the applier owned may go.
  const prunedAtLast = versions.convert(pruned.value, pruned.version, version);
  let result: unknown = mergedAtLast;
  if (prunedAtLast !== undefined) {
    const gone = setOf(mergedAtLast, schemaAt).difference(setOf(prunedAtLast, schemaAt)).intersection(named(lastSet.set, schemaAt));
    result = removeItems(mergedAtLast, gone, schemaAt, defs);
  }
  return versions.convert(result, version, apiVersion) ?? merged;
}

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

/** A conflict: a field the applier changes that another manager (identifier) owns. */
export interface Conflict {
  manager: string;
  path: Path;
}

/** getConflictMessage: `Apply failed with 1 conflict: conflict with "m" using v1: .spec.replicas`, or grouped per manager. */
export function conflictMessage(conflicts: readonly Conflict[]): string {
  if (conflicts.length === 1) {
    const c = conflicts[0] as Conflict;
    return `Apply failed with 1 conflict: conflict with ${printManager(c.manager)}: ${pathString(c.path)}`;
  }
  const byManager = new Map<string, Path[]>();
  for (const c of conflicts) byManager.set(c.manager, [...(byManager.get(c.manager) ?? []), c.path]);
  const messages: string[] = [];
  for (const m of [...byManager.keys()].sort()) {
    messages.push(`conflicts with ${printManager(m)}:`);
    for (const p of byManager.get(m) ?? []) messages.push(`- ${pathString(p)}`);
  }
  return `Apply failed with ${conflicts.length} conflicts: ${messages.join('\n')}`;
}

/** NewConflictError: 409 Conflict with one FieldManagerConflict cause per field. */
export function conflictError(conflicts: readonly Conflict[]): StatusError {
  const causes: StatusCause[] = conflicts.map((c) => ({
    reason: 'FieldManagerConflict',
    message: `conflict with ${printManager(c.manager)}`,
    field: pathString(c.path),
  }));
  return new StatusError({
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: conflictMessage(conflicts),
    reason: 'Conflict',
    details: { causes },
    code: 409,
  });
}

/** A plain Go error as the apiserver answers it: 500 without a reason. */
function serverError(message: string): StatusError {
  return new StatusError({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, code: 500 });
}

function splitApiVersion(apiVersion: string): { group: string; version: string } {
  const parts = apiVersion.split('/');
  if (parts.length === 1) return { group: '', version: parts[0] as string };
  if (parts.length === 2) return { group: parts[0] as string, version: parts[1] as string };
  return { group: '', version: '' };
}

/** GroupVersionKind.String(): `apps/v1, Kind=Deployment`, `/v1, Kind=Pod`. */
function gvkString(apiVersion: string, kind: string): string {
  const { group, version } = splitApiVersion(apiVersion);
  return `${group}/${version}, Kind=${kind}`;
}

function metaOf(obj: unknown): JsonObject {
  return isJsonObject(obj) && isJsonObject(obj['metadata']) ? obj['metadata'] : {};
}

function strOf(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

/** objectGVKNN: `namespace/name; group/version, Kind=Kind`. */
function objectGVKNN(obj: JsonObject): string {
  const m = metaOf(obj);
  return `${strOf(m['namespace'])}/${strOf(m['name'])}; ${gvkString(strOf(obj['apiVersion']), strOf(obj['kind']))}`;
}

/**
 * The type errors of an applied configuration: 422 Invalid (Kubernetes itself answers these with a
 * reasonless 500) with structured-merge-diff's message and one cause per error.
 */
function typeError(applied: JsonObject, errs: readonly TypeError[]): StatusError {
  const m = metaOf(applied);
  const { group } = splitApiVersion(strOf(applied['apiVersion']));
  const details: Record<string, unknown> = {};
  if (strOf(m['name'])) details['name'] = strOf(m['name']);
  if (group) details['group'] = group;
  if (strOf(applied['kind'])) details['kind'] = strOf(applied['kind']);
  details['causes'] = errs.map((e) => ({ reason: 'FieldValueInvalid', message: e.message, field: e.field }));
  return new StatusError({
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: `failed to create typed patch object (${objectGVKNN(applied)}): ${typeErrorsMessage(errs)}`,
    reason: 'Invalid',
    details,
    code: 422,
  });
}

// ---------------------------------------------------------------------------
// Apply
// ---------------------------------------------------------------------------

export interface ApplyOptions {
  /**
   * The object an apply that creates is merged into, and the existing fields of an object without
   * managedFields are compared against: Kubernetes uses the kind's Go zero value (default `{}`).
   */
  emptyObject?: JsonObject;
  /** Fields the endpoint may not set (e.g. status on the main resource): never owned, never conflicting. */
  ignored?: FieldSet;
  /** The kind the endpoint serves; an applied object of another kind is a 400. */
  kind?: string;
  /** The kind's other versions: managers of another version see the apply converted to theirs. */
  converter?: VersionConverter;
}

export interface ApplyResult {
  /** The merged object, with metadata.managedFields set (absent when no manager is left). */
  object: JsonObject;
  managedFields: JsonObject[] | undefined;
  /** Whether the apply changed nothing but managedFields (Kubernetes then leaves the managers' times). */
  noop: boolean;
}

/**
 * Applies `applied` (the decoded apply patch) for `manager` to `live` (null when the apply creates the
 * object), whose managedFields are `entries`. Throws a StatusError: 400 for a configuration of another
 * apiVersion or kind or one carrying managedFields, 422 for type errors, 409 for conflicts unless
 * `force`, 500 when the live managedFields do not decode.
 */
export function applyObject(
  live: JsonObject | null,
  applied: JsonObject,
  manager: string,
  force: boolean,
  entries: unknown,
  schema: Schema,
  defs: Definitions,
  apiVersion: string,
  subresource: string,
  time: string,
  options: ApplyOptions = {},
): ApplyResult {
  // FieldManager.Apply: the live managers must decode; the live object is used without them.
  const decoded = decodeManagedFields(entries);
  if (!decoded.ok) throw serverError(`failed to decode managed fields: ${decoded.error}`);
  let managed: Managed = decoded.ok ? decoded.managed : emptyManaged();
  // An apply that creates merges into an empty object: the zero value's fields would change no
  // ownership (nobody manages them yet), and the strategy's defaulting fills what the kind needs.
  const liveObj = withoutManagedFields(live ?? {});
  const versions = options.converter ?? sameVersions(schema);

  // versionCheckManager
  if (options.kind !== undefined && (strOf(applied['kind']) !== options.kind || strOf(applied['apiVersion']) !== apiVersion)) {
    throw apiErrors.badRequest(`invalid object type: ${gvkString(strOf(applied['apiVersion']), strOf(applied['kind']))}`);
  }

  // skipNonAppliedManager: the fields of an object nobody manages go to 'before-first-apply'.
  if (managed.fields.size === 0) {
    const changed = excludeFields(diffOwnedChanged(withoutManagedFields(options.emptyObject ?? {}), liveObj, schema, defs), options.ignored);
    managed = recordUpdate(managed, 'before-first-apply', 'Update', subresource, apiVersion, time, changed, options.ignored);
  }

  // buildManagerInfoManager
  const id = managerIdentifier({ manager: manager || 'unknown', operation: 'Apply', apiVersion, subresource });

  // structuredMergeManager.Apply
  const patchVersion = strOf(applied['apiVersion']);
  if (patchVersion !== apiVersion) {
    const shown = patchVersion.split('/').length > 2 ? '' : patchVersion;
    throw apiErrors.badRequest(
      `Incorrect version specified in apply patch. Specified patch version: ${shown}, expected: ${apiVersion}`,
    );
  }
  if (Array.isArray(metaOf(applied)['managedFields'])) throw apiErrors.badRequest('metadata.managedFields must be nil');
  const errs = validateTyped(applied, schema, defs);
  if (errs.length > 0) throw typeError(applied, errs);
  const liveErrs = validateTyped(liveObj, schema, defs, true);
  if (liveErrs.length > 0) {
    throw serverError(`failed to create typed live object (${objectGVKNN(liveObj as JsonObject)}): ${typeErrorsMessage(liveErrs)}`);
  }

  // merge.Updater.Apply
  const managers: Managed = { fields: new Map(managed.fields), times: new Map(managed.times) };
  const merged = mergeTyped(liveObj, applied, schema, defs);
  if (merged.errors.length > 0) {
    const msg = typeErrorsMessage(merged.errors.map((e) => ({ field: pathString(e.path), message: e.message })));
    throw serverError(`failed to merge config: ${msg}`);
  }
  const lastSet = managers.fields.get(id);
  let set = fieldSetOf(applied, schema, defs);
  if (options.ignored) set = set.recursiveDifference(options.ignored);
  managers.fields.set(id, { set, apiVersion, applied: true });
  const newObj = prune(merged.value ?? {}, managers, lastSet, apiVersion, versions, defs) ?? {};
  const comparison = excludeFields(diffOwnedChanged(liveObj, newObj, schema, defs), options.ignored);
  const byVersion = comparisonsByVersion(liveObj, newObj, apiVersion, comparison, versions, defs, options.ignored);
  const conflicts = takeOwnership(managers, id, byVersion, force);
  if (conflicts) {
    let list: Conflict[] = [];
    for (const m of [...conflicts.keys()].sort()) {
      for (const path of (conflicts.get(m) as FieldSet).paths()) list.push({ manager: m, path });
    }
    // lastAppliedManager: kubectl's server-side apply may take over the fields its client-side apply
    // (the last-applied annotation) set, as long as their live values are still the applied ones.
    const allowed = manager === 'kubectl' && live !== null ? allowedConflictsFromLastApplied(liveObj as JsonObject, schema, defs) : null;
    if (allowed) list = list.filter((c) => !allowed.has(c.path));
    if (list.length > 0 || !allowed) throw conflictError(list);
    takeOwnership(managers, id, byVersion, true);
  }
  const noop = equalValues(liveObj, newObj);

  // stripMetaManager, then managedFieldsUpdater (the time moves only when the object changed).
  stripMeta(managers, id);
  if (!noop) managers.times.set(id, time);

  let object = (noop ? structuredClone(liveObj) : newObj) as JsonObject;

  // lastAppliedUpdater: kubectl's server-side apply keeps its client-side annotation up to date.
  if (manager === 'kubectl' && hasLastApplied(object)) {
    object = withLastApplied(object, buildLastApplied(applied));
  }

  const managedFields = encodeManagedFields(managers);
  return { object: withManagedFields(object, managedFields), managedFields, noop };
}

/**
 * lastAppliedManager.allowedConflictsFromLastApplied: the fields of the last-applied annotation whose values
 * the live object still has; null when there is no annotation or it does not decode to a valid object.
 */
function allowedConflictsFromLastApplied(live: JsonObject, schema: Schema, defs: Definitions): FieldSet | null {
  const annotations = metaOf(live)['annotations'];
  const raw = isJsonObject(annotations) ? annotations[LAST_APPLIED_CONFIG_ANNOTATION] : undefined;
  if (typeof raw !== 'string' || raw === '') return null;
  let lastApplied: unknown;
  try {
    lastApplied = JSON.parse(raw);
  } catch {
    return null;
  }
  if (!isJsonObject(lastApplied) || validateTyped(lastApplied, schema, defs).length > 0) return null;
  const comparison = diffOwnedChanged(lastApplied, live, schema, defs);
  return fieldSetOf(lastApplied, schema, defs).difference(comparison.modified);
}

function withoutManagedFields(obj: unknown): unknown {
  if (!isJsonObject(obj) || !isJsonObject(obj['metadata']) || !Object.prototype.hasOwnProperty.call(obj['metadata'], 'managedFields')) {
    return obj;
  }
  const metadata = { ...obj['metadata'] };
  delete metadata['managedFields'];
  return { ...obj, metadata };
}

function withManagedFields(obj: JsonObject, managedFields: JsonObject[] | undefined): JsonObject {
  const metadata = { ...metaOf(obj) };
  if (managedFields === undefined) delete metadata['managedFields'];
  else metadata['managedFields'] = managedFields;
  return { ...obj, metadata };
}

function hasLastApplied(obj: JsonObject): boolean {
  const annotations = metaOf(obj)['annotations'];
  return isJsonObject(annotations) && strOf(annotations[LAST_APPLIED_CONFIG_ANNOTATION]) !== '';
}

/** buildLastApplied: the applied configuration without the annotation, as Go's JSON encoder writes it. */
export function buildLastApplied(applied: JsonObject): string {
  const copy = structuredClone(applied);
  const m = metaOf(copy);
  if (isJsonObject(m['annotations'])) delete m['annotations'][LAST_APPLIED_CONFIG_ANNOTATION];
  return goJson(copy) + '\n';
}

/** SetLastApplied: sets the annotation, unless the annotations would then exceed their total size. */
function withLastApplied(obj: JsonObject, value: string): JsonObject {
  const meta = { ...metaOf(obj) };
  const annotations: Record<string, unknown> = { ...(isJsonObject(meta['annotations']) ? meta['annotations'] : {}) };
  annotations[LAST_APPLIED_CONFIG_ANNOTATION] = value;
  let size = 0;
  for (const [k, v] of Object.entries(annotations)) size += Buffer.byteLength(k) + Buffer.byteLength(strOf(v));
  if (size > TOTAL_ANNOTATION_SIZE_LIMIT_B) delete annotations[LAST_APPLIED_CONFIG_ANNOTATION];
  meta['annotations'] = annotations;
  return { ...obj, metadata: meta };
}
