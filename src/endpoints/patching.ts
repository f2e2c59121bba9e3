/**
 * PATCH bodies: the patch type from the Content-Type, applied to the current object with the kind's schema
 * (strategic merge keys come from the declaration). Server-side apply is not built yet: it answers 415.
 */
import { apiErrors } from '../registry/errors.js';
import { apiVersionOf, type KObject, type KindDecl } from '../registry/kind.js';
import { applyJsonPatch, applyMergePatch, applyStrategicMergePatch, parsePatchType } from '../registry/patch.js';
import type { Definitions } from '../registry/schema.js';
import { refSchema } from '../registry/managedfields.js';
import { applyFieldValidation, cannotBeHandledMessage, checkFields, type FieldValidation } from '../registry/decode.js';

/**
 * The patched object; `current` is the caller's own copy (a strategic merge patch changes it in place).
 * `kept`: top-level fields the subresource's update takes from the stored object whatever is sent
 * (SubresourceStrategy.keeps); one the patch cannot reach is the stored value, already decoded, and is not
 * decoded again (pods/status: the spec, most of a pod, on every status patch the node agents send).
 */
export function applyPatch(
  contentType: string,
  current: KObject,
  body: Buffer,
  decl: KindDecl,
  defs: Definitions,
  fieldValidation: FieldValidation = 'Ignore',
  warnings: string[] = [],
  kept?: readonly string[],
): KObject {
  const type = parsePatchType(contentType);
  // The stored managedFields (the patch may change `current` in place): see below.
  const storedManaged: unknown = current.metadata?.managedFields;
  let patched: KObject;
  switch (type) {
    case 'application/json-patch+json':
      patched = applyJsonPatch(current, body) as KObject;
      break;
    case 'application/merge-patch+json':
      patched = applyMergePatch(current, body) as KObject;
      break;
    case 'application/strategic-merge-patch+json':
      // The store gives each attempt its own copy of the current object: patched in place.
      patched = applyStrategicMergePatch(current, body, refSchema(decl.definition), defs, true) as KObject;
      break;
    default:
      throw apiErrors.unsupportedMediaType(
        'the body of the request was in an unknown format - server-side apply (application/apply-patch+yaml) is not implemented yet; accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json',
      );
  }
  if (patched === null || typeof patched !== 'object' || Array.isArray(patched)) {
    throw apiErrors.badRequest('the patched object is not a JSON object');
  }
  const apiVersion = apiVersionOf(decl);
  if ((patched.apiVersion ?? apiVersion) !== apiVersion || (patched.kind ?? decl.kind) !== decl.kind) {
    throw apiErrors.badRequest(`the patch may not change the object's apiVersion or kind (${apiVersion}, ${decl.kind})`);
  }
  // The patched object is decoded like a body: unknown fields dropped (and reported per fieldValidation),
  // but for the stored values of `kept` fields the patch cannot reach, which stand in as empty objects.
  const skipped = kept?.filter((k) => isPlainObject(patched[k]) && !canReach(body, k)) ?? [];
  // Likewise metadata.managedFields when it is still the stored list (the same array, and the patch cannot
  // name the field): a stored value, already decoded. It stands in as [] and is put back in its place.
  const meta = patched.metadata;
  const keptManaged = Array.isArray(storedManaged) && storedManaged.length > 0 && isPlainObject(meta) && meta.managedFields === storedManaged && !canReach(body, 'managedFields');
  let input = patched;
  if (skipped.length > 0 || keptManaged) {
    input = { ...patched };
    for (const k of skipped) input[k] = {};
    if (keptManaged) input.metadata = { ...meta, managedFields: [] };
  }
  const checked = checkFields(input, refSchema(decl.definition), defs);
  const version = apiVersion.split('/').pop()!;
  if (checked.decodeError !== undefined) throw apiErrors.badRequest(cannotBeHandledMessage(decl.kind, version, decl.kind, checked.decodeError));
  applyFieldValidation(fieldValidation, checked.problems, warnings, { bodyKind: decl.kind, bodyVersion: version, kind: decl.kind });
  const out: KObject = { ...(checked.pruned as KObject), apiVersion, kind: decl.kind };
  for (const k of skipped) out[k] = patched[k];
  if (keptManaged) out.metadata = restoreManaged(out.metadata, storedManaged);
  return out;
}

/** The decoded metadata with the stored managedFields back where the [] stand-in is (a copy: it may be the input's). */
function restoreManaged(meta: KObject['metadata'], stored: unknown[]): KObject['metadata'] {
  if (!isPlainObject(meta) || !Object.hasOwn(meta, 'managedFields')) return meta;
  return { ...meta, managedFields: stored as NonNullable<KObject['metadata']>['managedFields'] };
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Whether a patch body may change top-level field `field`: every patch type (JSON patch paths, merge and
 * strategic merge keys, in JSON or YAML) names it, unless an escape spells it; so a body with neither the
 * name nor a backslash cannot.
 */
function canReach(body: Buffer, field: string): boolean {
  return body.includes(field) || body.includes(0x5c);
}
