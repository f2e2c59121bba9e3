/**
 * Server-side printing and metadata-only views, as kube-apiserver does them for content negotiation:
 *
 *  - `Accept: application/json;as=Table;v=v1;g=meta.k8s.io` (or v1beta1): the object or list converted to a
 *    meta.k8s.io Table, its rows carrying the object per `includeObject` (None | Metadata (default) | Object);
 *  - `Accept: application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io` and `...;as=PartialObjectMetadataList`:
 *    only the metadata of an object or of a list's items.
 *
 * kubectl get sends `application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json`.
 * The response's Content-Type stays the serializer's (`application/json`): only discovery lists g/v/as in it.
 *
 * Ages are computed here, server-side, as Kubernetes' printers do (translateTimestampSince with
 * apimachinery's duration.HumanDuration): kubectl prints the cells it receives as they are.
 */
import { apiErrors } from '../registry/errors.js';
import { apiVersionOf, type KindDecl, type KObject } from '../registry/kind.js';
import { clauseConvert, clauseMatches, parseAccept } from './discovery.js';
import { humanDuration, translateTimestampSince } from '../registry/printing.js';

export { humanDuration, translateTimestampSince };

/**
 * metav1.ObjectMeta's description of `name`, which the printers use for their Name column: Kubernetes 1.23's
 * text, as in our ObjectMeta definition (1.25 and later end with https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names).
 */
export const NAME_COLUMN_DESCRIPTION =
  'Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: http://kubernetes.io/docs/user-guide/identifiers#names';

/** metav1.ObjectMeta's description of `creationTimestamp` (Created At / Age columns). */
export const CREATION_TIMESTAMP_DESCRIPTION =
  'CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata';

// ---------------------------------------------------------------------------------------------------------
// Durations
// ---------------------------------------------------------------------------------------------------------

const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

/** A timestamp as Go's time.RFC3339 in UTC (whole seconds), as the default table convertor prints it. */
function rfc3339UTC(timestamp: string | null | undefined): string {
  const t = timestamp ? Date.parse(timestamp) : NaN;
  if (Number.isNaN(t)) return '0001-01-01T00:00:00Z';
  return new Date(t).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

// ---------------------------------------------------------------------------------------------------------
// Tables
// ---------------------------------------------------------------------------------------------------------

export type MetaGroupVersion = 'meta.k8s.io/v1' | 'meta.k8s.io/v1beta1';
export type IncludeObjectPolicy = 'None' | 'Metadata' | 'Object';

export interface TableColumnDefinition {
  name: string;
  type: string;
  format: string;
  description: string;
  priority: number;
}

export interface TableRow {
  cells: unknown[];
  /** Per includeObject: a PartialObjectMetadata (Metadata), the object (Object), or null (None). */
  object: unknown;
}

export interface ListMeta {
  resourceVersion?: string;
  continue?: string;
  remainingItemCount?: number;
}

export interface Table {
  kind: 'Table';
  apiVersion: MetaGroupVersion;
  metadata: ListMeta;
  columnDefinitions: TableColumnDefinition[];
  rows: TableRow[];
}

export interface PartialObjectMetadata {
  kind: 'PartialObjectMetadata';
  apiVersion: MetaGroupVersion;
  metadata: Record<string, unknown>;
}

export interface PartialObjectMetadataList {
  kind: 'PartialObjectMetadataList';
  apiVersion: MetaGroupVersion;
  metadata: ListMeta;
  items: PartialObjectMetadata[];
}

export interface TableOptions {
  /** meta.k8s.io/v1 (default) or meta.k8s.io/v1beta1, as negotiated. */
  groupVersion?: MetaGroupVersion;
  /** The `includeObject` query parameter: None, Metadata (default, also for '') or Object. */
  includeObject?: string;
  /** Leave out the column definitions (TableOptions.noHeaders; watch events after the first). */
  noHeaders?: boolean;
  /** The time ages are computed against (ms since the epoch); default now. */
  now?: number;
}

/** Whether a JSON object is a list (has an `items` array). */
export function isList(obj: KObject): boolean {
  return Array.isArray((obj as { items?: unknown }).items);
}

/** The columns of a kind's table: Name, then the kind's own columns, or Kubernetes' default Name + Created At. */
export function tableColumnDefinitions(kind: KindDecl): TableColumnDefinition[] {
  const name: TableColumnDefinition = { name: 'Name', type: 'string', format: 'name', description: NAME_COLUMN_DESCRIPTION, priority: 0 };
  if (!kind.columns?.length) {
    return [name, { name: 'Created At', type: 'date', format: '', description: CREATION_TIMESTAMP_DESCRIPTION, priority: 0 }];
  }
  const columns = kind.columns.map((c) => ({ name: c.name, type: c.type, format: c.format ?? '', description: c.description, priority: c.priority }));
  return kind.noNameColumn ? columns : [name, ...columns];
}

function metadataOf(obj: KObject): Record<string, unknown> {
  const m = obj.metadata;
  return m && typeof m === 'object' ? m : {};
}

/** The cells of one object's row, ages computed at `now`. */
export function tableCells(kind: KindDecl, obj: KObject, now: number = Date.now()): unknown[] {
  const meta = metadataOf(obj);
  const name = typeof meta.name === 'string' ? meta.name : '';
  if (!kind.columns?.length) return [name, rfc3339UTC(meta.creationTimestamp as string | undefined)];
  const cells: unknown[] = kind.noNameColumn ? [] : [name];
  for (const col of kind.columns) {
    let v: unknown;
    try {
      v = col.cell(obj, now);
    } catch {
      v = undefined;
    }
    if (col.name === 'Age' || col.type === 'date') {
      // Kubernetes' printers and the CRD convertor send ages, not timestamps.
      if (v === undefined || v === null || v === '') v = col.name === 'Age' ? '<unknown>' : null;
      else if (typeof v === 'string' && RFC3339.test(v)) v = translateTimestampSince(v, now);
    }
    cells.push(v === undefined ? null : v);
  }
  return cells;
}

function withTypeMeta(kind: KindDecl, obj: KObject): KObject {
  const { apiVersion: _a, kind: _k, ...rest } = obj;
  return { apiVersion: apiVersionOf(kind), kind: kind.kind, ...rest };
}

/** A PartialObjectMetadata of an object (all of its metadata), as meta.AsPartialObjectMetadata. */
export function toPartialObjectMetadata(obj: KObject, groupVersion: MetaGroupVersion = 'meta.k8s.io/v1'): PartialObjectMetadata {
  return { kind: 'PartialObjectMetadata', apiVersion: groupVersion, metadata: { ...metadataOf(obj) } };
}

function listMetaOf(list: KObject, full: boolean): ListMeta {
  const m = metadataOf(list);
  const out: ListMeta = {};
  if (typeof m.resourceVersion === 'string' && m.resourceVersion !== '') out.resourceVersion = m.resourceVersion;
  if (full && typeof m.continue === 'string' && m.continue !== '') out.continue = m.continue;
  if (full && typeof m.remainingItemCount === 'number') out.remainingItemCount = m.remainingItemCount;
  return out;
}

/** A PartialObjectMetadataList of a list (v1 keeps remainingItemCount; v1beta1 has no such field). */
export function toPartialObjectMetadataList(list: KObject, groupVersion: MetaGroupVersion = 'meta.k8s.io/v1'): PartialObjectMetadataList {
  const items = ((list as { items?: KObject[] }).items ?? []).map((o) => toPartialObjectMetadata(o, groupVersion));
  const metadata = listMetaOf(list, true);
  if (groupVersion === 'meta.k8s.io/v1beta1') delete metadata.remainingItemCount;
  return { kind: 'PartialObjectMetadataList', apiVersion: groupVersion, metadata, items };
}

/**
 * Converts an object, or a list (an object with `items`), of `kind` to a Table, as the apiserver's asTable
 * does: rows from the kind's columns, each row's `object` per includeObject (Metadata: a PartialObjectMetadata
 * in the table's group version; Object: the whole object with its apiVersion and kind; None: null), and the
 * list's resourceVersion, continue and remainingItemCount (an object's resourceVersion) as metadata.
 * Throws a 400 StatusError for an unrecognized includeObject.
 */
export function toTable(kind: KindDecl, obj: KObject, opts: TableOptions = {}): Table {
  const groupVersion = opts.groupVersion ?? 'meta.k8s.io/v1';
  const include = opts.includeObject ?? '';
  if (include !== '' && include !== 'None' && include !== 'Metadata' && include !== 'Object') {
    throw apiErrors.badRequest(`unrecognized includeObject value: "${include}"`);
  }
  const now = opts.now ?? Date.now();
  const list = isList(obj);
  const items: KObject[] = list ? ((obj as { items: KObject[] }).items ?? []) : [obj];
  const rows: TableRow[] = items.map((item) => {
    const cells = tableCells(kind, item, now);
    let object: unknown;
    if (include === 'Object') object = withTypeMeta(kind, item);
    else if (include === 'None') object = null;
    else object = toPartialObjectMetadata(item, groupVersion);
    return { cells, object };
  });
  return {
    kind: 'Table',
    apiVersion: groupVersion,
    metadata: listMetaOf(obj, list),
    columnDefinitions: opts.noHeaders ? [] : tableColumnDefinitions(kind),
    rows,
  };
}

// ---------------------------------------------------------------------------------------------------------
// Content negotiation
// ---------------------------------------------------------------------------------------------------------

export type ObjectOutputTarget = 'Table' | 'PartialObjectMetadata' | 'PartialObjectMetadataList';

export type OutputNegotiation =
  | { target: 'object'; mediaType: string; stream?: string }
  | { target: ObjectOutputTarget; groupVersion: MetaGroupVersion; mediaType: string; stream?: string }
  | { target: 'notAcceptable'; message: string };

/** The media types a resource endpoint can encode, in preference order (the first one answers a missing Accept). */
export const DEFAULT_OBJECT_MEDIA_TYPES: readonly string[] = ['application/json', 'application/yaml'];

/**
 * Decides what a read (get, list, watch) answers for an Accept header, as the apiserver's
 * NegotiateOutputMediaType with a resource endpoint's restrictions: clauses in goautoneg order; the first
 * clause that matches a supported media type and whose conversion is allowed wins. Allowed conversions are
 * none (the object itself), and g=meta.k8s.io, v=v1|v1beta1 with as=Table (JSON and YAML only),
 * as=PartialObjectMetadata or as=PartialObjectMetadataList. `stream` may only be 'watch'.
 * No acceptable clause: 406 (`notAcceptable`, with the apiserver's message).
 */
export function negotiateOutput(acceptHeader: string | undefined, mediaTypes: readonly string[] = DEFAULT_OBJECT_MEDIA_TYPES): OutputNegotiation {
  if (!acceptHeader) return { target: 'object', mediaType: mediaTypes[0] ?? 'application/json' };
  for (const clause of parseAccept(acceptHeader)) {
    for (const mt of mediaTypes) {
      const [type = '', subType = ''] = mt.split('/');
      if (!clauseMatches(clause, type, subType)) continue;
      const stream = clause.params.stream;
      if (stream !== undefined && stream !== '' && stream !== 'watch') continue;
      const extra = stream ? { stream } : {};
      const convert = clauseConvert(clause);
      if (!convert) return { target: 'object', mediaType: mt, ...extra };
      if (convert.group !== 'meta.k8s.io' || (convert.version !== 'v1' && convert.version !== 'v1beta1')) continue;
      const groupVersion: MetaGroupVersion = `meta.k8s.io/${convert.version}`;
      if (convert.kind === 'Table') {
        if (type !== 'application' || (subType !== 'json' && subType !== 'yaml')) continue;
        return { target: 'Table', groupVersion, mediaType: mt, ...extra };
      }
      if (convert.kind === 'PartialObjectMetadata' || convert.kind === 'PartialObjectMetadataList') {
        return { target: convert.kind, groupVersion, mediaType: mt, ...extra };
      }
    }
  }
  return { target: 'notAcceptable', message: `only the following media types are accepted: ${mediaTypes.join(', ')}` };
}

/** The Go type name Kubernetes' errors show for an internal object or list of a kind, e.g. '*core.PodList'. */
function internalTypeName(kind: KindDecl, list: boolean): string {
  const pkg = kind.group === '' ? 'core' : (kind.group.split('.')[0] ?? kind.group);
  return `*${pkg}.${list ? kind.listKind : kind.kind}`;
}

/**
 * Applies a negotiated conversion to a response object (an object or a list of `kind`), as the apiserver's
 * transformResponseObject: Table, PartialObjectMetadata (not for lists) or PartialObjectMetadataList (lists
 * only); the object unchanged when no conversion was asked. Throws StatusErrors (406, 400) as Kubernetes does.
 */
export function transformObject(kind: KindDecl, obj: KObject, neg: OutputNegotiation, opts: Omit<TableOptions, 'groupVersion'> = {}): unknown {
  switch (neg.target) {
    case 'object':
      return obj;
    case 'notAcceptable':
      throw apiErrors.notAcceptable(neg.message);
    case 'Table':
      return toTable(kind, obj, { ...opts, groupVersion: neg.groupVersion });
    case 'PartialObjectMetadata':
      if (isList(obj)) {
        throw apiErrors.notAcceptable(`you requested PartialObjectMetadata, but the requested object is a list (${internalTypeName(kind, true)})`);
      }
      return toPartialObjectMetadata(obj, neg.groupVersion);
    case 'PartialObjectMetadataList':
      if (!isList(obj)) {
        throw apiErrors.notAcceptable(
          `you requested PartialObjectMetadataList, but the requested object is not a list (${internalTypeName(kind, false)})`,
        );
      }
      return toPartialObjectMetadataList(obj, neg.groupVersion);
  }
}

/**
 * For watch streams: converts each event's object as negotiated. Tables carry their column definitions on
 * the first event only (the apiserver's watchEmbeddedEncoder sets noHeaders after the first table).
 */
export function watchEventTransformer(kind: KindDecl, neg: OutputNegotiation, opts: Omit<TableOptions, 'groupVersion'> = {}): (obj: KObject) => unknown {
  let first = true;
  return (obj) => {
    if (neg.target === 'PartialObjectMetadataList' || neg.target === 'PartialObjectMetadata') {
      // Watch events carry single objects: both conversions give a PartialObjectMetadata per event.
      return toPartialObjectMetadata(obj, neg.groupVersion);
    }
    if (neg.target !== 'Table') return transformObject(kind, obj, neg, opts);
    const noHeaders = opts.noHeaders === true || !first;
    first = false;
    return toTable(kind, obj, { ...opts, noHeaders, groupVersion: neg.groupVersion });
  };
}
