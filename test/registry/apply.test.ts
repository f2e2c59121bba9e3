import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { StatusError } from '../../src/registry/errors.js';
import { LAST_APPLIED_CONFIG_ANNOTATION, applyObject, mergeTyped, validateTyped } from '../../src/registry/apply.js';
import { FieldSet, pe, trackUpdate, type JsonObject } from '../../src/registry/managedfields.js';

import { DEFS, POD } from './fixtures/pod-schema.js';
const T0 = '2024-01-01T00:00:00Z';

function pod(spec: JsonObject = {}, metadata: JsonObject = {}): JsonObject {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'default', ...metadata }, spec };
}

/** A live object and the operations on it, as structured-merge-diff's test cases run them. */
class Cluster {
  live: JsonObject | null = null;
  private tick = 0;

  private now(): string {
    return new Date(Date.parse(T0) + 1000 * this.tick++).toISOString().replace('.000Z', 'Z');
  }

  apply(manager: string, config: JsonObject, force = false): JsonObject {
    const entries = this.live ? (this.live['metadata'] as JsonObject)['managedFields'] : undefined;
    const r = applyObject(this.live, config, manager, force, entries, POD, DEFS, 'v1', '', this.now());
    if (this.live === null) (r.object['metadata'] as JsonObject)['uid'] = 'uid-1';
    this.live = r.object;
    return r.object;
  }

  update(manager: string, change: (o: JsonObject) => void): JsonObject {
    const next = structuredClone(this.live) as JsonObject;
    change(next);
    const managedFields = trackUpdate(this.live, next, { manager, subresource: '', apiVersion: 'v1', time: this.now(), schema: POD, defs: DEFS });
    const meta = next['metadata'] as JsonObject;
    if (managedFields) meta['managedFields'] = managedFields;
    else delete meta['managedFields'];
    this.live = next;
    return next;
  }

  get spec(): JsonObject {
    return (this.live?.['spec'] ?? {}) as JsonObject;
  }

  get meta(): JsonObject {
    return (this.live?.['metadata'] ?? {}) as JsonObject;
  }

  /** manager → its fieldsV1, in managedFields order. */
  get owners(): [string, string, unknown][] {
    const mf = (this.meta['managedFields'] ?? []) as JsonObject[];
    return mf.map((e) => [e['manager'] as string, e['operation'] as string, e['fieldsV1']]);
  }
}

function catchStatus(fn: () => unknown): StatusError {
  try {
    fn();
  } catch (e) {
    if (e instanceof StatusError) return e;
    throw e;
  }
  assert.fail('expected a StatusError');
}

// ---------------------------------------------------------------------------

void describe('applyObject: creating and recording', () => {
  void it('creates the object and records what the applier applied, metadata stripped', () => {
    const c = new Cluster();
    const obj = c.apply('kubectl', pod({ containers: [{ name: 'c', image: 'nginx' }] }, { labels: { app: 'a' } }));
    assert.deepEqual(obj['spec'], { containers: [{ name: 'c', image: 'nginx' }] });
    const mf = c.meta['managedFields'] as JsonObject[];
    assert.equal(mf.length, 1);
    assert.equal(
      JSON.stringify(mf[0]),
      JSON.stringify({
        manager: 'kubectl',
        operation: 'Apply',
        apiVersion: 'v1',
        time: T0,
        fieldsType: 'FieldsV1',
        fieldsV1: {
          'f:metadata': { 'f:labels': { 'f:app': {} } },
          'f:spec': { 'f:containers': { 'k:{"name":"c"}': { 'f:image': {}, 'f:name': {}, '.': {} } } },
        },
      }),
    );
  });

  void it("gives an unmanaged object's fields to before-first-apply", () => {
    const c = new Cluster();
    c.live = pod({ replicas: 1, paused: true }, { uid: 'u' });
    c.apply('applier', pod({ replicas: 1 }));
    assert.deepEqual(c.owners, [
      ['applier', 'Apply', { 'f:spec': { 'f:replicas': {} } }],
      // compared with {} (see emptyObject): spec itself was added
      ['before-first-apply', 'Update', { 'f:spec': { 'f:paused': {}, 'f:replicas': {}, '.': {} } }],
    ]);
  });

  void it('leaves the time of a no-op apply alone', () => {
    const c = new Cluster();
    c.apply('a', pod({ replicas: 1 }));
    const before = c.owners;
    const r = applyObject(c.live, pod({ replicas: 1 }), 'a', false, c.meta['managedFields'], POD, DEFS, 'v1', '', '2030-01-01T00:00:00Z');
    assert.ok(r.noop);
    assert.equal((r.managedFields?.[0] as JsonObject)['time'], T0);
    assert.deepEqual(before, c.owners);
  });
});

void describe('applyObject: merge semantics', () => {
  void it('lets two appliers share a map list, each owning its items', () => {
    const c = new Cluster();
    c.apply('a', pod({ containers: [{ name: 'x', image: 'x1' }] }));
    c.apply('b', pod({ containers: [{ name: 'y', image: 'y1' }] }));
    assert.deepEqual(c.spec['containers'], [{ name: 'x', image: 'x1' }, { name: 'y', image: 'y1' }]);
    // a stops applying its container: it goes, b's stays
    c.apply('a', pod({ replicas: 1 }));
    assert.deepEqual(c.spec, { containers: [{ name: 'y', image: 'y1' }], replicas: 1 });
  });

  void it('merges map list items field by field and keys ports on containerPort and the defaulted protocol', () => {
    const c = new Cluster();
    c.apply('a', pod({ containers: [{ name: 'x', image: 'i', ports: [{ containerPort: 80 }] }] }));
    c.apply('b', pod({ containers: [{ name: 'x', ports: [{ containerPort: 80, protocol: 'UDP', name: 'dns' }] }] }));
    assert.deepEqual(c.spec['containers'], [{ name: 'x', image: 'i', ports: [{ containerPort: 80 }, { containerPort: 80, protocol: 'UDP', name: 'dns' }] }]);
    // the same port with the default protocol spelled out is the same item; b's UDP port goes
    c.apply('b', pod({ containers: [{ name: 'x', ports: [{ containerPort: 80, protocol: 'TCP', name: 'web' }] }] }));
    assert.deepEqual(c.spec['containers'], [{ name: 'x', image: 'i', ports: [{ containerPort: 80, protocol: 'TCP', name: 'web' }] }]);
  });

  void it('unions sets and removes only the values an applier stops applying', () => {
    const c = new Cluster();
    c.apply('a', pod({}, { finalizers: ['x', 'shared'] }));
    c.apply('b', pod({}, { finalizers: ['y', 'shared'] }));
    // live items first; the applied ones where the configuration puts them around the shared ones
    assert.deepEqual(c.meta['finalizers'], ['x', 'y', 'shared']);
    c.apply('a', pod({}, { finalizers: [] }));
    assert.deepEqual(c.meta['finalizers'], ['y', 'shared']);
  });

  void it('replaces atomic lists and maps as a whole', () => {
    const c = new Cluster();
    c.apply('a', pod({ selector: { app: 'a', tier: 't' }, containers: [{ name: 'x', args: ['1', '2'] }] }));
    c.apply('a', pod({ selector: { app: 'b' }, containers: [{ name: 'x', args: ['3'] }] }));
    assert.deepEqual(c.spec, { selector: { app: 'b' }, containers: [{ name: 'x', args: ['3'] }] });
    assert.deepEqual(c.owners[0]?.[2], {
      'f:spec': { 'f:containers': { 'k:{"name":"x"}': { 'f:args': {}, 'f:name': {}, '.': {} } }, 'f:selector': {} },
    });
  });

  void it('merges granular maps key by key', () => {
    const c = new Cluster();
    c.apply('a', pod({}, { labels: { app: 'a' } }));
    c.apply('b', pod({}, { labels: { tier: 't' } }));
    assert.deepEqual(c.meta['labels'], { app: 'a', tier: 't' });
    c.apply('a', pod({}));
    assert.deepEqual(c.meta['labels'], { tier: 't' });
  });

  void it('keeps a field one applier stops applying while another still owns it', () => {
    const c = new Cluster();
    c.apply('a', pod({ replicas: 3, paused: true }));
    c.apply('b', pod({ replicas: 3 }));
    c.apply('a', pod({}));
    assert.deepEqual(c.spec, { replicas: 3 });
    assert.deepEqual(c.owners.map((o) => o[0]), ['b']);
  });

  void it('keeps a field an updater owns when the applier stops applying it', () => {
    const c = new Cluster();
    c.apply('a', pod({ replicas: 3, paused: true }));
    c.update('editor', (o) => {
      (o['spec'] as JsonObject)['paused'] = false;
    });
    c.apply('a', pod({}));
    assert.deepEqual(c.spec, { paused: false });
    assert.deepEqual(c.owners.map((o) => o[0]), ['editor']);
  });

  void it('orders merged list items as structured-merge-diff does', () => {
    const merged = mergeTyped(
      { spec: { tags: ['a', 'b', 'c'] } },
      { spec: { tags: ['c', 'a', 'd'] } },
      POD,
      DEFS,
    );
    assert.deepEqual(merged.value, { spec: { tags: ['b', 'c', 'a', 'd'] } });
  });
});

void describe('applyObject: conflicts', () => {
  void it('fails with one cause per conflicting field, in Kubernetes words', () => {
    const c = new Cluster();
    c.apply('creator', pod({ paused: true }));
    c.update('kubectl-client-side-apply', (o) => {
      (o['spec'] as JsonObject)['replicas'] = 1;
    });
    const one = catchStatus(() => c.apply('me', pod({ replicas: 2 })));
    assert.equal(one.code, 409);
    assert.equal(one.reason, 'Conflict');
    assert.equal(one.message, 'Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using v1: .spec.replicas');
    assert.deepEqual(one.status.details, {
      causes: [{ reason: 'FieldManagerConflict', message: 'conflict with "kubectl-client-side-apply" using v1', field: '.spec.replicas' }],
    });

    const two = catchStatus(() => c.apply('me', pod({ replicas: 2, paused: false }, { labels: { x: 'y' } })));
    assert.equal(
      two.message,
      'Apply failed with 2 conflicts: conflicts with "creator":\n- .spec.paused\nconflicts with "kubectl-client-side-apply" using v1:\n- .spec.replicas',
    );
    assert.deepEqual(two.status.details?.causes?.map((x) => x.message), ['conflict with "creator"', 'conflict with "kubectl-client-side-apply" using v1']);
  });

  void it('does not conflict when the value is the same: ownership is shared', () => {
    const c = new Cluster();
    c.apply('a', pod({ replicas: 1 }));
    c.apply('b', pod({ replicas: 1 }));
    // b's apply changed nothing, so its entry has no time and sorts first
    const mf = c.meta['managedFields'] as JsonObject[];
    assert.deepEqual(mf.map((e) => [e['manager'], e['time'], e['fieldsV1']]), [
      ['b', undefined, { 'f:spec': { 'f:replicas': {} } }],
      ['a', T0, { 'f:spec': { 'f:replicas': {} } }],
    ]);
  });

  void it('takes ownership with force', () => {
    const c = new Cluster();
    c.apply('a', pod({ replicas: 1, paused: true }));
    c.apply('b', pod({ replicas: 2 }), true);
    assert.equal(c.spec['replicas'], 2);
    assert.deepEqual(c.owners, [
      ['a', 'Apply', { 'f:spec': { 'f:paused': {} } }],
      ['b', 'Apply', { 'f:spec': { 'f:replicas': {} } }],
    ]);
  });

  void it('reports conflicts on atomic lists and map list items', () => {
    const c = new Cluster();
    c.apply('a', pod({ containers: [{ name: 'x', image: 'i', args: ['1'] }] }));
    const e = catchStatus(() => c.apply('b', pod({ containers: [{ name: 'x', image: 'j', args: ['2'] }] })));
    assert.deepEqual(e.status.details?.causes?.map((x) => x.field), ['.spec.containers[name="x"].args', '.spec.containers[name="x"].image']);
  });

  void it('never conflicts on updates, which take what they change', () => {
    const c = new Cluster();
    c.apply('a', pod({ replicas: 1, paused: true }));
    c.update('editor', (o) => {
      (o['spec'] as JsonObject)['replicas'] = 5;
    });
    assert.deepEqual(c.owners, [
      ['a', 'Apply', { 'f:spec': { 'f:paused': {} } }],
      ['editor', 'Update', { 'f:spec': { 'f:replicas': {} } }],
    ]);
    const e = catchStatus(() => c.apply('a', pod({ replicas: 1, paused: true })));
    assert.equal(e.message, 'Apply failed with 1 conflict: conflict with "editor" using v1: .spec.replicas');
  });
});

void describe('applyObject: errors', () => {
  void it('answers type errors with 422 and structured-merge-diff messages', () => {
    const e = catchStatus(() => new Cluster().apply('a', pod({ replicas: 'three' })));
    assert.equal(e.code, 422);
    assert.equal(e.reason, 'Invalid');
    assert.equal(e.message, 'failed to create typed patch object (default/p; /v1, Kind=Pod): .spec.replicas: expected numeric (int or float), got string');
    assert.deepEqual(e.status.details?.causes, [{ reason: 'FieldValueInvalid', message: 'expected numeric (int or float), got string', field: '.spec.replicas' }]);
  });

  void it('words every kind of type error as structured-merge-diff does', () => {
    const errs = validateTyped(
      pod({
        paused: 'yes',
        bogus: 1,
        nodeSelector: { a: 5 },
        containers: [{ name: 'x' }, { name: 'x' }, { image: 'i' }],
        tags: 'a',
      }),
      POD,
      DEFS,
    );
    // an undeclared field ends the object's checks
    assert.deepEqual(errs, [
      { field: '.spec.paused', message: 'expected boolean, got &{yes}' },
      { field: '.spec.bogus', message: 'field not declared in schema' },
    ]);
    const more = validateTyped(pod({ nodeSelector: { a: 5 }, containers: [{ name: 'x' }, { name: 'x' }, { image: 'i' }], tags: 'a' }), POD, DEFS);
    assert.deepEqual(more, [
      { field: '.spec.nodeSelector.a', message: 'expected string, got &value.valueUnstructured{Value:5}' },
      { field: '.spec.containers', message: 'duplicate entries for key [name="x"]' },
      { field: '.spec.containers', message: 'element 2: associative list with keys has an element that omits key field "name" (and doesn\'t have default value)' },
      { field: '.spec.tags', message: 'expected list, got &{a}' },
    ]);
  });

  void it('rejects a configuration of another version or carrying managedFields with 400', () => {
    const other = catchStatus(() => new Cluster().apply('a', { ...pod(), apiVersion: 'v2' }));
    assert.equal(other.code, 400);
    assert.equal(other.message, 'Incorrect version specified in apply patch. Specified patch version: v2, expected: v1');
    const mf = catchStatus(() => new Cluster().apply('a', pod({}, { managedFields: [] })));
    assert.equal(mf.message, 'metadata.managedFields must be nil');
  });

  void it('fails when the live managedFields do not decode', () => {
    const live = pod({}, { uid: 'u', managedFields: [{ manager: 'x', operation: 'Nope' }] });
    const e = catchStatus(() => applyObject(live, pod(), 'a', false, (live['metadata'] as JsonObject)['managedFields'], POD, DEFS, 'v1', '', T0));
    assert.equal(e.code, 500);
    assert.equal(e.message, 'failed to decode managed fields: operation must be `Apply` or `Update`');
  });
});

void describe('applyObject: options', () => {
  void it('neither owns nor conflicts on ignored fields', () => {
    const ignored = FieldSet.of([pe.field('status')]);
    const live = { ...pod({ replicas: 1 }, { uid: 'u' }), status: { phase: 'Running' } };
    const r = applyObject(live, { ...pod({ replicas: 1 }), status: { phase: 'Pending' } }, 'a', false, [], POD, DEFS, 'v1', '', T0, {
      ignored,
      emptyObject: { spec: {}, status: {} },
    });
    assert.deepEqual(r.managedFields?.map((e) => [e['manager'], e['fieldsV1']]), [
      ['a', { 'f:spec': { 'f:replicas': {} } }],
      ['before-first-apply', { 'f:spec': { 'f:replicas': {} } }],
    ]);
  });

  void it("keeps kubectl's last-applied annotation up to date", () => {
    const c = new Cluster();
    c.apply('kubectl', pod({ replicas: 1 }, { annotations: { [LAST_APPLIED_CONFIG_ANNOTATION]: '{}' } }));
    const ann = (c.meta['annotations'] as JsonObject)[LAST_APPLIED_CONFIG_ANNOTATION];
    assert.equal(ann, '{"apiVersion":"v1","kind":"Pod","metadata":{"annotations":{},"name":"p","namespace":"default"},"spec":{"replicas":1}}\n');
  });
});
