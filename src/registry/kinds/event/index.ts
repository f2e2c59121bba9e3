/**
 * Event, as Kubernetes 1.23 serves it: core/v1 Event and events.k8s.io/v1 Event are one storage (core
 * Events, pkg/registry/core/event) seen through two API versions; events.k8s.io/v1 is converted to and from
 * the stored form (pkg/apis/events/v1/conversion.go: regarding ↔ involvedObject, note ↔ message,
 * reportingController ↔ reportingComponent, deprecated* ↔ source, firstTimestamp, lastTimestamp, count).
 *   - strategy: create-on-update and unconditional updates allowed; objects expire after --event-ttl;
 *   - validation: ValidateEventCreate / ValidateEventUpdate with the request's version (legacy rules for
 *     core/v1, the strict ones for events.k8s.io/v1);
 *   - field selectors: the event's ToSelectableFields (involvedObject.*, reason, reportingComponent,
 *     source, type), and for events.k8s.io/v1 also their regarding.* and reportingController names;
 *   - table: printEvent (LAST SEEN TYPE REASON OBJECT MESSAGE; wide adds SUBOBJECT SOURCE FIRST SEEN
 *     COUNT NAME), the same for both versions.
 */
import type { KObject, KindDecl, StrategyContext, TableColumn } from '../../kind.js';
import { humanDuration } from '../../printing.js';
import {
  invalid,
  isDNS1123Subdomain,
  isQualifiedName,
  required,
  root,
  type FieldError,
} from '../../../util/validation.js';
import { EVENT_DEFINITIONS } from './definitions.js';

type Json = Record<string, any>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const s = (v: unknown): string => (typeof v === 'string' ? v : '');
const has = (v: unknown): boolean => v !== undefined && v !== null && v !== '';

const DEFAULT_EVENT_TTL_SECONDS = 3600;
const LIMIT_128 = 128;
const NOTE_LIMIT = 1024;

// ---------------------------------------------------------------------------------------------------
// Conversion between the stored form (core/v1) and events.k8s.io/v1
// ---------------------------------------------------------------------------------------------------

const MOVED: [string, string][] = [
  ['involvedObject', 'regarding'],
  ['message', 'note'],
  ['reportingComponent', 'reportingController'],
  ['source', 'deprecatedSource'],
  ['firstTimestamp', 'deprecatedFirstTimestamp'],
  ['lastTimestamp', 'deprecatedLastTimestamp'],
  ['count', 'deprecatedCount'],
];

/** events.k8s.io/v1 → core/v1 (the stored form). */
export function eventToCore(obj: KObject): KObject {
  const out: KObject = { ...obj, apiVersion: 'v1', kind: 'Event' };
  for (const [core, ev] of MOVED) {
    delete out[ev];
    if (obj[ev] !== undefined) out[core] = obj[ev];
  }
  if (out['involvedObject'] === undefined) out['involvedObject'] = {};
  return out;
}

/** core/v1 → events.k8s.io/v1. */
export function eventFromCore(obj: KObject): KObject {
  const out: KObject = { ...obj, apiVersion: 'events.k8s.io/v1', kind: 'Event' };
  for (const [core, ev] of MOVED) {
    delete out[core];
    if (obj[core] !== undefined) out[ev] = obj[core];
  }
  if (isObject(out['deprecatedSource']) && Object.keys(out['deprecatedSource']).length === 0) delete out['deprecatedSource'];
  if (out['deprecatedCount'] === 0) delete out['deprecatedCount'];
  if (isObject(out['regarding']) && Object.keys(out['regarding']).length === 0) delete out['regarding'];
  return out;
}

const asCore = (obj: KObject): KObject => (obj.apiVersion === 'events.k8s.io/v1' ? eventToCore(obj) : obj);

// ---------------------------------------------------------------------------------------------------
// Validation (core form, with the request's version)
// ---------------------------------------------------------------------------------------------------

type Version = 'v1' | 'events.k8s.io/v1';

const zeroTime = (v: unknown) => !has(v) || v === '0001-01-01T00:00:00Z';

/** legacyValidateEvent */
function legacyValidateEvent(e: KObject, version: Version): FieldError[] {
  const errs: FieldError[] = [];
  const ns = s(e.metadata?.namespace);
  const inv: Json = isObject(e['involvedObject']) ? e['involvedObject'] : {};
  const invNs = s(inv['namespace']);
  const controllerField = version === 'v1' ? 'reportingComponent' : 'reportingController';
  if (zeroTime(e['eventTime'])) {
    if (invNs === '') {
      if (ns !== '' && ns !== 'default') errs.push(invalid(root('involvedObject', 'namespace'), invNs, 'does not match event.namespace'));
    } else if (ns !== invNs) {
      errs.push(invalid(root('involvedObject', 'namespace'), invNs, 'does not match event.namespace'));
    }
  } else {
    if (invNs === '' && ns !== 'default' && ns !== 'kube-system') errs.push(invalid(root('involvedObject', 'namespace'), invNs, 'does not match event.namespace'));
    const controller = s(e['reportingComponent']);
    if (controller === '') errs.push(required(root(controllerField), ''));
    for (const m of isQualifiedName(controller)) errs.push(invalid(root(controllerField), controller, m));
    const instance = s(e['reportingInstance']);
    if (instance === '') errs.push(required(root('reportingInstance'), ''));
    if (instance.length > LIMIT_128) errs.push(invalid(root('reportingInstance'), '', `can have at most ${LIMIT_128} characters`));
    const action = s(e['action']);
    if (action === '') errs.push(required(root('action'), ''));
    if (action.length > LIMIT_128) errs.push(invalid(root('action'), '', `can have at most ${LIMIT_128} characters`));
    const reason = s(e['reason']);
    if (reason === '') errs.push(required(root('reason'), ''));
    if (reason.length > LIMIT_128) errs.push(invalid(root('reason'), '', `can have at most ${LIMIT_128} characters`));
    if (s(e['message']).length > NOTE_LIMIT) errs.push(invalid(root('message'), '', `can have at most ${NOTE_LIMIT} characters`));
  }
  for (const m of isDNS1123Subdomain(ns)) errs.push(invalid(root('namespace'), ns, m));
  return errs;
}

/** ValidateEventCreate */
export function validateEventCreate(e: KObject, version: Version): FieldError[] {
  const errs = legacyValidateEvent(e, version);
  if (version === 'v1') return errs;
  const series = e['series'];
  if (isObject(series)) {
    if (typeof series['count'] !== 'number' || series['count'] < 2) errs.push(invalid(root('series', 'count'), '', 'should be at least 2'));
    if (zeroTime(series['lastObservedTime'])) errs.push(required(root('series', 'lastObservedTime'), ''));
  }
  if (zeroTime(e['eventTime'])) errs.push(required(root('eventTime'), ''));
  const type = s(e['type']);
  if (type !== 'Normal' && type !== 'Warning') errs.push(invalid(root('type'), '', `has invalid value: ${type}`));
  if (!zeroTime(e['firstTimestamp'])) errs.push(invalid(root('deprecatedFirstTimestamp'), '', 'needs to be unset'));
  if (!zeroTime(e['lastTimestamp'])) errs.push(invalid(root('deprecatedLastTimestamp'), '', 'needs to be unset'));
  if (typeof e['count'] === 'number' && e['count'] !== 0) errs.push(invalid(root('deprecatedCount'), '', 'needs to be unset'));
  const src: Json = isObject(e['source']) ? e['source'] : {};
  if (s(src['component']) !== '' || s(src['host']) !== '') errs.push(invalid(root('deprecatedSource'), '', 'needs to be unset'));
  return errs;
}

/** ValidateEventUpdate: events.k8s.io/v1 may change only the series (and metadata). */
export function validateEventUpdate(e: KObject, old: KObject, version: Version): FieldError[] {
  const errs = legacyValidateEvent(e, version);
  if (version === 'v1') return errs;
  const same = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
  for (const f of ['involvedObject', 'reason', 'message', 'source', 'firstTimestamp', 'lastTimestamp', 'count', 'type', 'eventTime', 'action', 'related', 'reportingComponent', 'reportingInstance']) {
    if (!same(e[f], old[f])) errs.push(invalid(root(f), e[f] ?? '', 'field is immutable'));
  }
  return errs;
}

// ---------------------------------------------------------------------------------------------------
// Table (printEvent), over the core form
// ---------------------------------------------------------------------------------------------------

function age(ts: unknown, now: number): string {
  if (!has(ts)) return '<unknown>';
  const t = Date.parse(s(ts));
  return Number.isNaN(t) ? '<unknown>' : humanDuration(now - t);
}

interface EventRow {
  lastSeen: string;
  firstSeen: string;
  count: number;
  object: string;
  source: string;
}

function eventRow(e: KObject, now: number): EventRow {
  const firstSeen = zeroTime(e['firstTimestamp']) ? age(e['eventTime'], now) : age(e['firstTimestamp'], now);
  let lastSeen = zeroTime(e['lastTimestamp']) ? firstSeen : age(e['lastTimestamp'], now);
  let count = typeof e['count'] === 'number' ? e['count'] : 0;
  if (isObject(e['series'])) {
    lastSeen = age(e['series']['lastObservedTime'], now);
    count = typeof e['series']['count'] === 'number' ? e['series']['count'] : 0;
  } else if (count === 0) count = 1;
  const inv: Json = isObject(e['involvedObject']) ? e['involvedObject'] : {};
  const kind = s(inv['kind']).toLowerCase();
  const object = s(inv['name']) !== '' ? `${kind}/${s(inv['name'])}` : kind;
  const src: Json = isObject(e['source']) ? e['source'] : {};
  const component = s(src['component']) || s(e['reportingComponent']);
  const instance = s(src['host']) || s(e['reportingInstance']);
  const source = component === '' ? '<unknown>' : instance !== '' ? `${component}, ${instance}` : component;
  return { lastSeen, firstSeen, count, object, source };
}

// Column descriptions are read on first use (getters): the lazy schemas load then (idle memory).
const doc = (f: string) => EVENT_DEFINITIONS['io.k8s.api.events.v1.Event']?.properties?.[f]?.description ?? '';

/** The columns of both versions; cells read the core form. */
const EVENT_COLUMNS: TableColumn[] = [
  { name: 'Last Seen', type: 'string', get description() { return doc('deprecatedLastTimestamp'); }, priority: 0, cell: (o, now) => eventRow(asCore(o), now ?? Date.now()).lastSeen },
  { name: 'Type', type: 'string', get description() { return doc('type'); }, priority: 0, cell: (o) => s(asCore(o)['type']) },
  { name: 'Reason', type: 'string', get description() { return doc('reason'); }, priority: 0, cell: (o) => s(asCore(o)['reason']) },
  { name: 'Object', type: 'string', get description() { return doc('regarding'); }, priority: 0, cell: (o) => eventRow(asCore(o), 0).object },
  {
    name: 'Subobject',
    type: 'string',
    description:
      'If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement, such as desiredState.manifest.containers[2]. For example, if the object reference is to a container within a pod, this would take on a value like: "spec.containers{name}" (where "name" refers to the name of the container that triggered the event) or if no container name is specified "spec.containers[2]" (container with index 2 in this pod). This syntax is chosen only to have some well-defined way of referencing a part of an object.',
    priority: 1,
    cell: (o) => {
      const inv = asCore(o)['involvedObject'];
      return isObject(inv) ? s(inv['fieldPath']) : '';
    },
  },
  { name: 'Source', type: 'string', get description() { return doc('reportingController'); }, priority: 1, cell: (o) => eventRow(asCore(o), 0).source },
  { name: 'Message', type: 'string', get description() { return doc('note'); }, priority: 0, cell: (o) => s(asCore(o)['message']).trim() },
  { name: 'First Seen', type: 'string', get description() { return doc('deprecatedFirstTimestamp'); }, priority: 1, cell: (o, now) => eventRow(asCore(o), now ?? Date.now()).firstSeen },
  { name: 'Count', type: 'string', get description() { return doc('deprecatedCount'); }, priority: 1, cell: (o) => eventRow(asCore(o), 0).count },
  {
    name: 'Name',
    type: 'string',
    format: 'name',
    description:
      'Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: http://kubernetes.io/docs/user-guide/identifiers#names',
    priority: 1,
    cell: (o) => s(o.metadata?.name),
  },
];

// ---------------------------------------------------------------------------------------------------
// Field selectors
// ---------------------------------------------------------------------------------------------------

const inv = (field: string) => (o: KObject) => {
  const r = asCore(o)['involvedObject'];
  return isObject(r) ? String(r[field] ?? '') : '';
};

const CORE_FIELDS: Record<string, (o: KObject) => string> = {
  'involvedObject.kind': inv('kind'),
  'involvedObject.namespace': inv('namespace'),
  'involvedObject.name': inv('name'),
  'involvedObject.uid': inv('uid'),
  'involvedObject.apiVersion': inv('apiVersion'),
  'involvedObject.resourceVersion': inv('resourceVersion'),
  'involvedObject.fieldPath': inv('fieldPath'),
  reason: (o) => s(asCore(o)['reason']),
  reportingComponent: (o) => s(asCore(o)['reportingComponent']),
  source: (o) => {
    const e = asCore(o);
    return (isObject(e['source']) ? s(e['source']['component']) : '') || s(e['reportingComponent']);
  },
  type: (o) => s(asCore(o)['type']),
};

const EVENTS_V1_FIELDS: Record<string, (o: KObject) => string> = {
  ...CORE_FIELDS,
  'regarding.kind': inv('kind'),
  'regarding.namespace': inv('namespace'),
  'regarding.name': inv('name'),
  'regarding.uid': inv('uid'),
  'regarding.apiVersion': inv('apiVersion'),
  'regarding.resourceVersion': inv('resourceVersion'),
  'regarding.fieldPath': inv('fieldPath'),
  reportingController: (o) => s(asCore(o)['reportingComponent']),
};

// ---------------------------------------------------------------------------------------------------
// The kinds
// ---------------------------------------------------------------------------------------------------

const ttlSeconds = (_obj: KObject, ctx: StrategyContext) => ctx.settings?.eventTTLSeconds ?? DEFAULT_EVENT_TTL_SECONDS;

export const eventKind: KindDecl = {
  group: '',
  version: 'v1',
  kind: 'Event',
  listKind: 'EventList',
  resource: 'events',
  singular: 'event',
  shortNames: ['ev'],
  namespaced: true,
  definition: 'io.k8s.api.core.v1.Event',
  listDefinition: 'io.k8s.api.core.v1.EventList',
  definitions: EVENT_DEFINITIONS,
  tracksGeneration: false,
  fieldSelectors: CORE_FIELDS,
  columns: EVENT_COLUMNS,
  noNameColumn: true,
  ttlSeconds,
  strategy: {
    allowCreateOnUpdate: true,
    allowUnconditionalUpdate: true,
    validate: (obj) => validateEventCreate(obj, 'v1'),
    validateUpdate: (obj, old) => validateEventUpdate(obj, old, 'v1'),
  },
};

export const eventsV1Kind: KindDecl = {
  group: 'events.k8s.io',
  version: 'v1',
  kind: 'Event',
  listKind: 'EventList',
  resource: 'events',
  singular: 'event',
  shortNames: ['ev'],
  namespaced: true,
  definition: 'io.k8s.api.events.v1.Event',
  listDefinition: 'io.k8s.api.events.v1.EventList',
  definitions: {},
  tracksGeneration: false,
  fieldSelectors: EVENTS_V1_FIELDS,
  columns: EVENT_COLUMNS,
  noNameColumn: true,
  ttlSeconds,
  storedAs: { group: '', resource: 'events', toStored: eventToCore, fromStored: eventFromCore },
  strategy: {
    allowCreateOnUpdate: true,
    allowUnconditionalUpdate: true,
    validate: (obj) => validateEventCreate(eventToCore(obj), 'events.k8s.io/v1'),
    validateUpdate: (obj, old) => validateEventUpdate(eventToCore(obj), eventToCore(old), 'events.k8s.io/v1'),
  },
};
