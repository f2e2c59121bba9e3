import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  ANCIENT_CHANGES,
  FieldSet,
  capUpdateManagers,
  decodeFieldsV1,
  decodeManagedFields,
  diffOwnedChanged,
  encodeFieldsV1,
  encodeManagedFields,
  fieldSetOf,
  managerIdentifier,
  managedForUpdate,
  pathString,
  pe,
  printManager,
  trackUpdate,
  updateManagedFields,
  type Comparison,
  type JsonObject,
  type Managed,
  type Path,
} from '../../src/registry/managedfields.js';

import { DEFS, POD } from './fixtures/pod-schema.js';

const F = (...names: string[]): Path => names.map((n) => pe.field(n));
const json = (v: unknown) => JSON.stringify(v);

function pod(spec: JsonObject = {}, metadata: JsonObject = {}): JsonObject {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'default', ...metadata }, spec };
}

// ---------------------------------------------------------------------------
// FieldsV1
// ---------------------------------------------------------------------------

void describe('FieldsV1', () => {
  // fieldpath/serialize_test.go TestSerializeV1GoldenData
  const GOLDEN = [
    `{"f:aaa":{},"f:aab":{},"f:aac":{},"f:aad":{},"f:aae":{},"f:aaf":{},"k:{\\"name\\":\\"first\\"}":{},"k:{\\"name\\":\\"second\\"}":{},"k:{\\"port\\":443,\\"protocol\\":\\"tcp\\"}":{},"k:{\\"port\\":443,\\"protocol\\":\\"udp\\"}":{},"v:1":{},"v:2":{},"v:3":{},"v:\\"aa\\"":{},"v:\\"ab\\"":{},"v:true":{},"i:1":{},"i:2":{},"i:3":{},"i:4":{}}`,
    `{"f:aaa":{"k:{\\"name\\":\\"second\\"}":{"v:3":{"f:aab":{}}},"v:3":{},"v:true":{}},"f:aab":{"f:aaa":{},"f:aaf":{"k:{\\"port\\":443,\\"protocol\\":\\"udp\\"}":{"k:{\\"port\\":443,\\"protocol\\":\\"tcp\\"}":{}}},"k:{\\"name\\":\\"first\\"}":{}},"v:true":{"k:{\\"name\\":\\"second\\"}":{"f:aaa":{}},"i:2":{"k:{\\"port\\":443,\\"protocol\\":\\"tcp\\"}":{}}},"i:1":{"i:3":{"f:aaf":{}}}}`,
  ];

  void it('round-trips the golden data of structured-merge-diff byte for byte', () => {
    for (const g of GOLDEN) assert.equal(json(encodeFieldsV1(decodeFieldsV1(JSON.parse(g)))), g);
  });

  void it('sorts elements as structured-merge-diff does whatever the input order', () => {
    const shuffled = { 'i:0': {}, 'v:"b"': {}, 'v:2': {}, 'k:{"name":"x"}': {}, 'f:b': {}, 'f:a': {}, 'v:false': {} };
    assert.equal(json(encodeFieldsV1(decodeFieldsV1(shuffled))), '{"f:a":{},"f:b":{},"k:{\\"name\\":\\"x\\"}":{},"v:2":{},"v:\\"b\\"":{},"v:false":{},"i:0":{}}');
  });

  void it("marks a path that is a member and has children with '.' after its children", () => {
    const s = FieldSet.of(
      [...F('spec', 'containers'), pe.key({ name: 'c' })],
      [...F('spec', 'containers'), pe.key({ name: 'c' }), pe.field('image')],
    );
    assert.equal(json(encodeFieldsV1(s)), '{"f:spec":{"f:containers":{"k:{\\"name\\":\\"c\\"}":{"f:image":{},".":{}}}}}');
    assert.ok(decodeFieldsV1(encodeFieldsV1(s)).equals(s));
    // '.' first (as kubectl prints it, keys sorted) decodes the same
    assert.ok(decodeFieldsV1({ 'f:spec': { 'f:containers': { 'k:{"name":"c"}': { '.': {}, 'f:image': {} } } } }).equals(s));
    // two keys naming one element (key fields in another order): their subsets are merged
    const merged = decodeFieldsV1({ 'k:{"a":1,"b":2}': { 'f:x': {}, 'f:z': { 'f:p': {} } }, 'k:{"b":2,"a":1}': { 'f:y': {}, 'f:z': { 'f:q': {} } } });
    assert.equal(json(encodeFieldsV1(merged)), '{"k:{\\"a\\":1,\\"b\\":2}":{"f:x":{},"f:y":{},"f:z":{"f:p":{},"f:q":{}}}}');
  });

  void it('writes key fields sorted by name and values as Go writes JSON', () => {
    const s = FieldSet.of([pe.key({ protocol: 'TCP', containerPort: 80 })], [pe.value('<a&b>')]);
    assert.deepEqual(Object.keys(encodeFieldsV1(s)), ['k:{"containerPort":80,"protocol":"TCP"}', 'v:"\\u003ca\\u0026b\\u003e"']);
  });

  void it('drops unknown element types and rejects malformed keys', () => {
    assert.equal(json(encodeFieldsV1(decodeFieldsV1({ 'f:aaa': {}, 'r:aab': {} }))), '{"f:aaa":{}}');
    assert.throws(() => decodeFieldsV1({ 'fx': {} }), /missing colon/);
    assert.throws(() => decodeFieldsV1({ 'i:x': {} }), /invalid syntax/);
    assert.throws(() => decodeFieldsV1({ 'k:[1]': {} }), /parsing key/);
    assert.throws(() => decodeFieldsV1({ 'f:a': 1 }), /expect \{/);
  });
});

// ---------------------------------------------------------------------------
// Paths and sets
// ---------------------------------------------------------------------------

void describe('paths and sets', () => {
  void it('prints paths as Kubernetes does', () => {
    assert.equal(pathString([...F('spec', 'containers'), pe.key({ name: 'c' }), pe.field('image')]), '.spec.containers[name="c"].image');
    assert.equal(pathString([...F('metadata', 'finalizers'), pe.value('x')]), '.metadata.finalizers[="x"]');
    assert.equal(pathString([...F('spec', 'args'), pe.index(0)]), '.spec.args[0]');
    assert.equal(pathString([pe.key({ protocol: 'TCP', containerPort: 80 })]), '[containerPort=80,protocol="TCP"]');
  });

  const a = FieldSet.of(F('a'), F('b', 'c'), F('b', 'd'), F('e', 'f'));
  const b = FieldSet.of(F('a'), F('b', 'c'), F('e'));

  void it('union, intersection and difference work on leaves', () => {
    assert.equal(a.union(b).toString(), ['.a', '.e', '.b.c', '.b.d', '.e.f'].join('\n'));
    assert.equal(a.intersection(b).toString(), ['.a', '.b.c'].join('\n'));
    assert.equal(a.difference(b).toString(), ['.b.d', '.e.f'].join('\n'));
    assert.equal(b.difference(a).toString(), '.e');
  });

  void it('recursive difference also removes what is under a removed member', () => {
    assert.equal(a.recursiveDifference(b).toString(), '.b.d');
  });

  void it('operations leave their operands alone', () => {
    const before = a.toString();
    a.union(b).insert(F('b', 'z'));
    assert.equal(a.toString(), before);
  });

  void it('knows its members and leaves', () => {
    const s = FieldSet.of(F('x'), F('x', 'y'));
    assert.ok(s.has(F('x')) && s.has(F('x', 'y')) && !s.has(F('y')));
    assert.equal(s.leaves().toString(), '.x.y');
    assert.equal(s.size(), 2);
    assert.ok(new FieldSet().empty());
  });
});

// ---------------------------------------------------------------------------
// ToFieldSet and Compare
// ---------------------------------------------------------------------------

void describe('fieldSetOf', () => {
  void it('records leaves, map keys and list items, not struct fields', () => {
    const obj = pod(
      {
        containers: [{ name: 'c', image: 'i', args: ['a', 'b'], ports: [{ containerPort: 80 }, { containerPort: 53, protocol: 'UDP' }] }],
        nodeSelector: { disk: 'ssd' },
        selector: { app: 'a' },
        tags: ['x'],
      },
      { labels: { app: 'a' }, finalizers: ['f'] },
    );
    assert.deepEqual(encodeFieldsV1(fieldSetOf(obj, POD, DEFS)), {
      'f:apiVersion': {},
      'f:kind': {},
      'f:metadata': { 'f:finalizers': { 'v:"f"': {} }, 'f:labels': { 'f:app': {} }, 'f:name': {}, 'f:namespace': {} },
      'f:spec': {
        'f:containers': {
          'k:{"name":"c"}': {
            'f:args': {},
            'f:image': {},
            'f:name': {},
            'f:ports': {
              'k:{"containerPort":53,"protocol":"UDP"}': { 'f:containerPort': {}, 'f:protocol': {}, '.': {} },
              'k:{"containerPort":80,"protocol":"TCP"}': { 'f:containerPort': {}, '.': {} },
            },
            '.': {},
          },
        },
        'f:nodeSelector': { 'f:disk': {} },
        'f:selector': {},
        'f:tags': { 'v:"x"': {} },
      },
    });
  });
});

void describe('diffOwnedChanged', () => {
  void it('reports added, modified and removed fields, containers included', () => {
    const before = pod({ replicas: 1, containers: [{ name: 'a', image: 'x' }], tags: ['t'] });
    const after = pod({ replicas: 2, containers: [{ name: 'b', image: 'y' }] }, { labels: { app: 'a' } });
    const c = diffOwnedChanged(before, after, POD, DEFS);
    const kb = pe.key({ name: 'b' });
    const ka = pe.key({ name: 'a' });
    assert.equal(c.modified.toString(), '.spec.replicas');
    assert.ok(c.added.equals(FieldSet.of(F('metadata', 'labels'), F('metadata', 'labels', 'app'), [...F('spec', 'containers'), kb], [...F('spec', 'containers'), kb, pe.field('name')], [...F('spec', 'containers'), kb, pe.field('image')])));
    assert.ok(c.removed.equals(FieldSet.of([...F('spec', 'containers'), ka], [...F('spec', 'containers'), ka, pe.field('name')], [...F('spec', 'containers'), ka, pe.field('image')], F('spec', 'tags'), [...F('spec', 'tags'), pe.value('t')])));
  });

  void it('treats an atomic list or map as one leaf', () => {
    const c = diffOwnedChanged(pod({ selector: { a: '1' }, containers: [{ name: 'c', args: ['1'] }] }), pod({ selector: { a: '2' }, containers: [{ name: 'c', args: ['1', '2'] }] }), POD, DEFS);
    assert.equal(c.modified.toString(), ['.spec.selector', '.spec.containers[name="c"].args'].join('\n'));
    assert.ok(c.added.empty() && c.removed.empty());
  });
});

// ---------------------------------------------------------------------------
// managedFields entries
// ---------------------------------------------------------------------------

const entry = (manager: string, operation: string, fieldsV1: JsonObject, extra: JsonObject = {}): JsonObject => ({
  manager,
  operation,
  apiVersion: 'v1',
  time: '2024-01-01T00:00:00Z',
  fieldsType: 'FieldsV1',
  fieldsV1,
  ...extra,
});

void describe('decodeManagedFields', () => {
  void it('keys Apply managers by name and subresource, Update managers also by apiVersion', () => {
    assert.equal(managerIdentifier({ manager: 'm', operation: 'Apply', apiVersion: 'v1' }), '{"manager":"m","operation":"Apply"}');
    assert.equal(managerIdentifier({ manager: 'm', operation: 'Update', apiVersion: 'v1', subresource: 'status' }), '{"manager":"m","operation":"Update","apiVersion":"v1","subresource":"status"}');
    assert.equal(printManager(managerIdentifier({ manager: 'm', operation: 'Update', apiVersion: 'apps/v1' })), '"m" using apps/v1');
    assert.equal(printManager(managerIdentifier({ manager: 'm', operation: 'Apply', subresource: 'status' })), '"m" with subresource "status"');
  });

  void it('rejects entries as Kubernetes does', () => {
    const bad = (e: JsonObject) => {
      const r = decodeManagedFields([e]);
      return r.ok ? '' : r.error;
    };
    assert.equal(bad(entry('m', 'Patch', {})), 'operation must be `Apply` or `Update`');
    assert.equal(bad(entry('m', 'Apply', {}, { apiVersion: '' })), 'apiVersion must not be empty');
    assert.equal(bad(entry('m', 'Apply', {}, { fieldsType: '' })), 'missing fieldsType in managed fields entry 0');
    assert.equal(bad(entry('m', 'Apply', {}, { fieldsType: 'FieldsV2' })), 'invalid fieldsType "FieldsV2" in managed fields entry 0');
    assert.match(bad(entry('m', 'Apply', { 'i:x': {} })), /^error decoding versioned set from /);
    const ok = decodeManagedFields([entry('m', 'Apply', { 'f:spec': { 'f:replicas': {} } })]);
    assert.ok(ok.ok && ok.managed.fields.get('{"manager":"m","operation":"Apply"}')?.set.has(F('spec', 'replicas')));
  });

  void it('encodes entries in Kubernetes order: operation, time, manager, apiVersion, subresource', () => {
    const r = decodeManagedFields([
      entry('z', 'Update', { 'f:a': {} }, { time: '2024-01-01T00:00:05Z' }),
      entry('b', 'Update', { 'f:b': {} }),
      entry('a', 'Update', { 'f:c': {} }, { subresource: 'status' }),
      entry('y', 'Apply', { 'f:d': {} }, { time: '2025-01-01T00:00:00Z' }),
    ]);
    assert.ok(r.ok);
    const out = encodeManagedFields(r.managed) ?? [];
    assert.deepEqual(out.map((e) => e['manager']), ['y', 'a', 'b', 'z']);
    assert.deepEqual(Object.keys(out[1] ?? {}), ['manager', 'operation', 'apiVersion', 'time', 'fieldsType', 'fieldsV1', 'subresource']);
    assert.equal(encodeManagedFields({ fields: new Map(), times: new Map() }), undefined);
  });

  void it('takes managedFields from the request unless they reset, are empty or invalid', () => {
    const live = [entry('live', 'Update', { 'f:a': {} })];
    const mine = [entry('mine', 'Update', { 'f:b': {} })];
    const managers = (m: Managed) => [...m.fields.keys()].map((id) => JSON.parse(id).manager as string);
    assert.deepEqual(managers(managedForUpdate(live, mine, false)), ['mine']);
    assert.deepEqual(managers(managedForUpdate(live, undefined, false)), ['live']);
    assert.deepEqual(managers(managedForUpdate(live, [entry('x', 'Bogus', {})], false)), ['live']);
    assert.deepEqual(managers(managedForUpdate(live, [], false)), []);
    assert.deepEqual(managers(managedForUpdate(live, [{}], false)), []);
    assert.deepEqual(managers(managedForUpdate(live, mine, true)), ['live']);
    assert.deepEqual(managers(managedForUpdate([entry('x', 'Bogus', {})], undefined, false)), []);
  });
});

void describe('updateManagedFields', () => {
  const change = (added: Path[], modified: Path[] = [], removed: Path[] = []): Comparison => ({
    added: FieldSet.of(...added),
    modified: FieldSet.of(...modified),
    removed: FieldSet.of(...removed),
  });

  void it('gives the manager what changed and takes it from every other manager', () => {
    const entries = [entry('applier', 'Apply', { 'f:spec': { 'f:replicas': {}, 'f:paused': {} } })];
    const out = updateManagedFields(entries, 'editor', 'Update', '', 'v1', '2024-02-02T00:00:00Z', change([], [F('spec', 'replicas')])) ?? [];
    assert.deepEqual(out, [
      entry('applier', 'Apply', { 'f:spec': { 'f:paused': {} } }),
      entry('editor', 'Update', { 'f:spec': { 'f:replicas': {} } }, { time: '2024-02-02T00:00:00Z' }),
    ]);
  });

  void it('merges into the same manager, apiVersion and subresource, and drops managers left empty', () => {
    let entries: unknown = [entry('editor', 'Update', { 'f:a': {} }), entry('other', 'Update', { 'f:b': {} })];
    entries = updateManagedFields(entries, 'editor', 'Update', '', 'v1', '2024-03-03T00:00:00Z', change([F('b')]));
    assert.deepEqual(entries, [entry('editor', 'Update', { 'f:a': {}, 'f:b': {} }, { time: '2024-03-03T00:00:00Z' })]);
    entries = updateManagedFields(entries, 'editor', 'Update', '', 'v2', '2024-04-04T00:00:00Z', change([F('c')]));
    assert.deepEqual((entries as JsonObject[]).map((e) => [e['apiVersion'], e['fieldsV1']]), [
      ['v1', { 'f:a': {}, 'f:b': {} }],
      ['v2', { 'f:c': {} }],
    ]);
  });

  void it('never records metadata the server owns, and keeps the time when nothing is recorded', () => {
    const entries = [entry('editor', 'Update', { 'f:a': {} })];
    const out = updateManagedFields(entries, 'editor', 'Update', '', 'v1', '2030-01-01T00:00:00Z', change([], [F('metadata', 'resourceVersion'), F('metadata', 'generation')]));
    assert.deepEqual(out, entries);
  });

  void it('keeps at most ten Update managers, merging the oldest into ancient-changes', () => {
    const fields = new Map();
    const times = new Map<string, string | undefined>();
    for (let i = 0; i < 12; i++) {
      const id = managerIdentifier({ manager: `m${String(i).padStart(2, '0')}`, operation: 'Update', apiVersion: 'v1' });
      fields.set(id, { set: FieldSet.of(F(`f${i}`)), apiVersion: 'v1', applied: false });
      times.set(id, `2024-01-01T00:00:${String(i).padStart(2, '0')}Z`);
    }
    const managed: Managed = { fields, times };
    capUpdateManagers(managed);
    const out = encodeManagedFields(managed) ?? [];
    assert.equal(out.length, 10);
    const ancient = out.find((e) => e['manager'] === ANCIENT_CHANGES);
    assert.deepEqual(ancient?.['fieldsV1'], { 'f:f0': {}, 'f:f1': {}, 'f:f2': {} });
    assert.equal(ancient?.['time'], '2024-01-01T00:00:02Z');
  });
});

void describe('trackUpdate', () => {
  const opts = { manager: 'kubectl-create', subresource: '', apiVersion: 'v1', time: '2024-05-05T00:00:00Z', schema: POD, defs: DEFS };

  void it("records a create, with '.' on containers the operation created", () => {
    const created = pod({ containers: [{ name: 'c', image: 'i' }] }, { labels: { app: 'a' }, uid: 'u', resourceVersion: '1' });
    const out = trackUpdate(null, created, { ...opts, emptyObject: { metadata: {}, spec: {} } });
    assert.deepEqual(out, [
      entry('kubectl-create', 'Update', {
        'f:metadata': { 'f:labels': { 'f:app': {}, '.': {} } },
        'f:spec': { 'f:containers': { 'k:{"name":"c"}': { 'f:image': {}, 'f:name': {}, '.': {} }, '.': {} } },
      }, { time: '2024-05-05T00:00:00Z' }),
    ]);
  });

  void it('records nothing on an existing object without managers, and resets on []', () => {
    const live = pod({ replicas: 1 }, { uid: 'u' });
    assert.equal(trackUpdate(live, pod({ replicas: 2 }, { uid: 'u' }), opts), undefined);
    const managedLive = { ...live, metadata: { ...(live['metadata'] as JsonObject), managedFields: [entry('a', 'Apply', { 'f:spec': { 'f:replicas': {} } })] } };
    assert.equal(trackUpdate(managedLive, pod({ replicas: 2 }, { uid: 'u', managedFields: [] }), opts), undefined);
    const kept = trackUpdate(managedLive, pod({ replicas: 1, paused: true }, { uid: 'u', managedFields: [{ manager: 'x', operation: 'Nope' }] }), opts);
    assert.deepEqual(kept?.map((e) => e['manager']), ['a', 'kubectl-create']);
  });
});
