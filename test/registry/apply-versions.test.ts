/**
 * Field ownership across the versions of a kind: managers keep the apiVersion they used, and a change made
 * through another version is converted to theirs before conflicts and removals are worked out (structured-
 * merge-diff's Converter, Kubernetes' versionConverter). Events are the case where the versions differ in
 * shape: core/v1 `message` is events.k8s.io/v1 `note`.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { StatusError } from '../../src/registry/errors.js';
import { applyObject } from '../../src/registry/apply.js';
import { kindFieldManager } from '../../src/registry/fieldmanager.js';
import { refSchema, trackUpdate, type JsonObject } from '../../src/registry/managedfields.js';
import { ALL_DEFINITIONS, eventKind, eventsV1Kind } from '../../src/registry/kinds/index.js';
import type { KindDecl } from '../../src/registry/kind.js';

const KINDS = [eventKind, eventsV1Kind];
const DEFS = ALL_DEFINITIONS;
const CORE = 'v1';
const EVENTS = 'events.k8s.io/v1';
const declOf = (v: string): KindDecl => (v === CORE ? eventKind : eventsV1Kind);
const T = (i: number) => `2024-01-01T00:00:0${i}Z`;

/** The stored object (core form) and writes through either version, converted as the registry does. */
class Events {
  stored: JsonObject | null = null;
  private tick = 0;

  /** The object as `version` shows it. */
  view(version: string): JsonObject | null {
    if (this.stored === null) return null;
    const d = declOf(version);
    return d.storedAs ? (d.storedAs.fromStored(structuredClone(this.stored) as never) as JsonObject) : structuredClone(this.stored);
  }

  private store(version: string, obj: JsonObject): void {
    const d = declOf(version);
    this.stored = d.storedAs ? (d.storedAs.toStored(obj as never) as JsonObject) : obj;
  }

  apply(version: string, manager: string, config: JsonObject, force = false): JsonObject {
    const live = this.view(version);
    const d = declOf(version);
    const fm = kindFieldManager(d, KINDS);
    const entries = live ? (live['metadata'] as JsonObject)['managedFields'] : undefined;
    const r = applyObject(live, config, manager, force, entries, refSchema(d.definition), DEFS, version, '', T(this.tick++), {
      emptyObject: fm.zero,
      converter: fm.converter,
    });
    if (live === null) (r.object['metadata'] as JsonObject)['uid'] = 'uid-1';
    this.store(version, r.object);
    return r.object;
  }

  update(version: string, manager: string, change: (o: JsonObject) => void): JsonObject {
    const live = this.view(version) as JsonObject;
    const next = structuredClone(live);
    change(next);
    const d = declOf(version);
    const fm = kindFieldManager(d, KINDS);
    const mf = trackUpdate(live, next, {
      manager,
      subresource: '',
      apiVersion: version,
      time: T(this.tick++),
      schema: refSchema(d.definition),
      defs: DEFS,
      emptyObject: fm.zero,
      converter: fm.converter,
    });
    const meta = next['metadata'] as JsonObject;
    if (mf) meta['managedFields'] = mf;
    else delete meta['managedFields'];
    this.store(version, next);
    return next;
  }

  /** manager/operation/apiVersion → fieldsV1. */
  owners(): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    const mf = ((this.stored?.['metadata'] as JsonObject | undefined)?.['managedFields'] ?? []) as JsonObject[];
    for (const e of mf) out[`${String(e['manager'])}/${String(e['operation'])}/${String(e['apiVersion'])}`] = e['fieldsV1'];
    return out;
  }
}

const core = (fields: JsonObject): JsonObject => ({ apiVersion: CORE, kind: 'Event', metadata: { name: 'e', namespace: 'default' }, ...fields });
const ev = (fields: JsonObject): JsonObject => ({ apiVersion: EVENTS, kind: 'Event', metadata: { name: 'e', namespace: 'default' }, ...fields });

function catchStatus(fn: () => unknown): StatusError {
  try {
    fn();
  } catch (e) {
    if (e instanceof StatusError) return e;
    throw e;
  }
  assert.fail('expected a StatusError');
}

void describe('field ownership across versions', () => {
  void it('conflicts on a field owned through another version, named in that version', () => {
    const c = new Events();
    c.apply(CORE, 'recorder', core({ message: 'hello', reason: 'Started' }));
    const err = catchStatus(() => c.apply(EVENTS, 'tool', ev({ note: 'changed' })));
    assert.equal(err.status.code, 409);
    assert.equal(err.status.message, 'Apply failed with 1 conflict: conflict with "recorder": .message');
    assert.deepEqual(err.status.details?.causes, [{ reason: 'FieldManagerConflict', message: 'conflict with "recorder"', field: '.message' }]);
    // The same value through the other version is shared ownership, no conflict.
    c.apply(EVENTS, 'tool', ev({ note: 'hello' }));
    assert.deepEqual(c.owners(), {
      'recorder/Apply/v1': { 'f:message': {}, 'f:reason': {} },
      'tool/Apply/events.k8s.io/v1': { 'f:note': {} },
    });
  });

  void it('names an Update manager with the version it used', () => {
    const c = new Events();
    c.apply(CORE, 'recorder', core({ reason: 'Started' }));
    c.update(CORE, 'kubectl-edit', (o) => {
      o['message'] = 'edited';
    });
    const err = catchStatus(() => c.apply(EVENTS, 'tool', ev({ note: 'mine' })));
    assert.equal(err.status.message, 'Apply failed with 1 conflict: conflict with "kubectl-edit" using v1: .message');
  });

  void it('takes the field from the other version with force, and updates through one version take it from the other', () => {
    const c = new Events();
    c.apply(CORE, 'recorder', core({ message: 'hello', reason: 'Started' }));
    c.apply(EVENTS, 'tool', ev({ note: 'forced' }), true);
    assert.equal(c.stored?.['message'], 'forced');
    assert.deepEqual(c.owners(), {
      'recorder/Apply/v1': { 'f:reason': {} },
      'tool/Apply/events.k8s.io/v1': { 'f:note': {} },
    });
    // An update (never a conflict) through core/v1 takes note, seen as message, from the events.k8s.io applier.
    c.update(CORE, 'kubectl-patch', (o) => {
      o['message'] = 'patched';
    });
    assert.deepEqual(c.owners(), {
      'recorder/Apply/v1': { 'f:reason': {} },
      'kubectl-patch/Update/v1': { 'f:message': {} },
    });
  });

  void it('removes what an applier stops applying when it moves to another version', () => {
    const c = new Events();
    c.apply(CORE, 'tool', core({ message: 'hello', reason: 'Started', type: 'Normal' }));
    // The same manager, now through events.k8s.io/v1, applies reason and type but no note: message goes.
    c.apply(EVENTS, 'tool', ev({ reason: 'Started', type: 'Normal' }));
    assert.equal(c.stored?.['message'], undefined);
    assert.equal(c.stored?.['reason'], 'Started');
    assert.deepEqual(c.owners(), { 'tool/Apply/events.k8s.io/v1': { 'f:reason': {}, 'f:type': {} } });
  });

  void it('keeps a field another version still owns when the applier stops applying it', () => {
    const c = new Events();
    c.apply(EVENTS, 'tool', ev({ note: 'hello', reason: 'Started' }));
    c.apply(CORE, 'other', core({ message: 'hello' }));
    c.apply(EVENTS, 'tool', ev({ reason: 'Started' }));
    assert.equal(c.stored?.['message'], 'hello');
  });

  void it('drops the managers of a version the kind is not served at when the object changes', () => {
    const c = new Events();
    c.apply(CORE, 'recorder', core({ reason: 'Started' }));
    const meta = c.stored?.['metadata'] as JsonObject;
    meta['managedFields'] = [
      ...(meta['managedFields'] as JsonObject[]),
      { manager: 'old', operation: 'Update', apiVersion: 'v0', time: T(9), fieldsType: 'FieldsV1', fieldsV1: { 'f:reason': {} } },
    ];
    c.update(CORE, 'kubectl-edit', (o) => {
      o['type'] = 'Warning';
    });
    assert.deepEqual(Object.keys(c.owners()).sort(), ['kubectl-edit/Update/v1', 'recorder/Apply/v1']);
  });
});

void describe('the zero value a create is compared against', () => {
  void it('does not own the containers the zero value has, only what the create put in them', () => {
    const c = new Events();
    c.stored = null;
    const fm = kindFieldManager(eventKind, KINDS);
    const obj = core({ involvedObject: { kind: 'Pod', name: 'p' }, source: { component: 'x' }, message: 'hi', reportingComponent: '' });
    const mf = trackUpdate(null, obj, {
      manager: 'm',
      subresource: '',
      apiVersion: CORE,
      time: T(0),
      schema: refSchema(eventKind.definition),
      defs: DEFS,
      emptyObject: fm.zero,
      converter: fm.converter,
    });
    // source exists in Event{} (no '.'), reportingComponent "" equals its zero value; involvedObject is an
    // atomic struct, a leaf that changed.
    assert.deepEqual(mf?.[0]?.['fieldsV1'], {
      'f:involvedObject': {},
      'f:message': {},
      'f:source': { 'f:component': {} },
    });
  });
});
