import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  CREATION_TIMESTAMP_DESCRIPTION,
  NAME_COLUMN_DESCRIPTION,
  humanDuration,
  negotiateOutput,
  tableColumnDefinitions,
  toPartialObjectMetadataList,
  toTable,
  transformObject,
  translateTimestampSince,
  watchEventTransformer,
} from '../../src/endpoints/table.js';
import { isStatusError } from '../../src/registry/errors.js';
import type { KObject } from '../../src/registry/kind.js';
import { ALL_DEFINITIONS, BUILTIN_KINDS, namespaceKind, pvcKind } from '../../src/registry/kinds/index.js';
import { bookKind, shelfKind } from './testkinds.js';
import { kubectlBinaries, runKubectl, startFakeServer, type FakeServer } from './fakeserver.js';

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

const KUBECTL_TABLE_ACCEPT = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json';

describe('humanDuration', () => {
  it('formats as apimachinery duration.HumanDuration', () => {
    const cases: [number, string][] = [
      [SECOND, '1s'],
      [70 * SECOND, '70s'],
      [119 * SECOND, '119s'],
      [120 * SECOND, '2m'],
      [190 * SECOND, '3m10s'],
      [70 * MINUTE, '70m'],
      [179 * MINUTE, '179m'],
      [3 * HOUR, '3h'],
      [5 * HOUR + 10 * MINUTE, '5h10m'],
      [8 * HOUR + 30 * MINUTE, '8h'],
      [47 * HOUR, '47h'],
      [49 * HOUR, '2d1h'],
      [72 * HOUR, '3d'],
      [(8 * 24 + 2) * HOUR, '8d'],
      [367 * 24 * HOUR, '367d'],
      [(365 * 2 * 24 + 25) * HOUR, '2y1d'],
      [365 * 3 * 24 * HOUR, '3y'],
      [(365 * 8 * 24 + 2) * HOUR, '8y'],
      [0, '0s'],
      [999, '0s'],
      [-1.5 * SECOND, '0s'],
      [-2 * SECOND, '<invalid>'],
    ];
    for (const [ms, want] of cases) assert.equal(humanDuration(ms), want, `${ms}ms`);
  });

  it('translateTimestampSince: <unknown> without a timestamp', () => {
    const now = Date.parse('2024-05-01T12:00:00Z');
    assert.equal(translateTimestampSince('2024-05-01T11:55:00Z', now), '5m');
    assert.equal(translateTimestampSince(null, now), '<unknown>');
    assert.equal(translateTimestampSince(undefined, now), '<unknown>');
    assert.equal(translateTimestampSince('', now), '<unknown>');
  });
});

const NOW = Date.parse('2024-05-01T12:00:00Z');

function shelf(name: string, created: string, extra: KObject = {}): KObject {
  return { metadata: { name, uid: `uid-${name}`, resourceVersion: '10', creationTimestamp: created, labels: { a: 'b' } }, spec: { size: 3, mode: 'A' }, ...extra };
}

describe('toTable', () => {
  it('builds Name + the kind columns, ages computed server-side, PartialObjectMetadata rows by default', () => {
    const list: KObject = {
      apiVersion: 'v1',
      kind: 'ShelfList',
      metadata: { resourceVersion: '99', continue: 'tok', remainingItemCount: 4 },
      items: [shelf('a', '2024-05-01T11:00:00Z'), shelf('b', '2024-04-29T12:00:00Z')],
    };
    const table = toTable(shelfKind, list, { now: NOW });
    assert.deepEqual(table, {
      kind: 'Table',
      apiVersion: 'meta.k8s.io/v1',
      metadata: { resourceVersion: '99', continue: 'tok', remainingItemCount: 4 },
      columnDefinitions: [
        { name: 'Name', type: 'string', format: 'name', description: NAME_COLUMN_DESCRIPTION, priority: 0 },
        { name: 'Size', type: 'integer', format: '', description: 'The size', priority: 0 },
        { name: 'Age', type: 'string', format: '', description: 'The age', priority: 0 },
        { name: 'Mode', type: 'string', format: 'mode', description: 'The mode', priority: 1 },
      ],
      rows: [
        {
          cells: ['a', 3, '60m', 'A'],
          object: {
            kind: 'PartialObjectMetadata',
            apiVersion: 'meta.k8s.io/v1',
            metadata: { name: 'a', uid: 'uid-a', resourceVersion: '10', creationTimestamp: '2024-05-01T11:00:00Z', labels: { a: 'b' } },
          },
        },
        {
          cells: ['b', 3, '2d', 'A'],
          object: {
            kind: 'PartialObjectMetadata',
            apiVersion: 'meta.k8s.io/v1',
            metadata: { name: 'b', uid: 'uid-b', resourceVersion: '10', creationTimestamp: '2024-04-29T12:00:00Z', labels: { a: 'b' } },
          },
        },
      ],
    });
    // Go's field order: kind, apiVersion, metadata, columnDefinitions, rows.
    assert.deepEqual(Object.keys(table), ['kind', 'apiVersion', 'metadata', 'columnDefinitions', 'rows']);
    assert.deepEqual(Object.keys(table.columnDefinitions[0]!), ['name', 'type', 'format', 'description', 'priority']);
  });

  it('includeObject=Object carries the whole object with apiVersion and kind; None carries null', () => {
    const obj = shelf('a', '2024-05-01T11:00:00Z');
    const full = toTable(shelfKind, obj, { includeObject: 'Object', now: NOW });
    assert.deepEqual(full.rows[0]!.object, { apiVersion: 'v1', kind: 'Shelf', ...obj });
    assert.deepEqual(full.metadata, { resourceVersion: '10' });
    const none = toTable(shelfKind, obj, { includeObject: 'None', now: NOW });
    assert.equal(none.rows[0]!.object, null);
    assert.deepEqual(toTable(shelfKind, obj, { includeObject: 'Metadata', now: NOW }), toTable(shelfKind, obj, { now: NOW }));
  });

  it('rejects an unknown includeObject with 400', () => {
    assert.throws(
      () => toTable(shelfKind, shelf('a', '2024-05-01T11:00:00Z'), { includeObject: 'Everything' }),
      (e: unknown) => isStatusError(e, 'BadRequest') && e.status.message === 'unrecognized includeObject value: "Everything"',
    );
  });

  it("uses Kubernetes' default convertor (Name, Created At as RFC 3339) for kinds without columns", () => {
    const table = toTable(bookKind, { metadata: { resourceVersion: '5' }, items: [{ metadata: { name: 'x', namespace: 'ns', creationTimestamp: '2024-05-01T11:00:00.123Z' } }] }, { now: NOW });
    assert.deepEqual(table.columnDefinitions, [
      { name: 'Name', type: 'string', format: 'name', description: NAME_COLUMN_DESCRIPTION, priority: 0 },
      { name: 'Created At', type: 'date', format: '', description: CREATION_TIMESTAMP_DESCRIPTION, priority: 0 },
    ]);
    assert.deepEqual(table.rows[0]!.cells, ['x', '2024-05-01T11:00:00Z']);
  });

  it('meta.k8s.io/v1beta1 tables and metadata, noHeaders, and empty lists', () => {
    const beta = toTable(shelfKind, { metadata: {}, items: [shelf('a', '2024-05-01T11:00:00Z')] }, { groupVersion: 'meta.k8s.io/v1beta1', now: NOW });
    assert.equal(beta.apiVersion, 'meta.k8s.io/v1beta1');
    assert.equal((beta.rows[0]!.object as { apiVersion: string }).apiVersion, 'meta.k8s.io/v1beta1');
    assert.deepEqual(beta.metadata, {});
    assert.deepEqual(toTable(shelfKind, shelf('a', '2024-05-01T11:00:00Z'), { noHeaders: true }).columnDefinitions, []);
    assert.deepEqual(toTable(shelfKind, { metadata: { resourceVersion: '7' }, items: [] }).rows, []);
  });

  it('prints the built-in Namespace and PersistentVolumeClaim columns', () => {
    const ns = { metadata: { name: 'default', creationTimestamp: '2024-05-01T11:00:00Z' }, status: { phase: 'Active' } };
    assert.deepEqual(
      tableColumnDefinitions(namespaceKind).map((c) => c.name),
      ['Name', 'Status', 'Age'],
    );
    assert.deepEqual(toTable(namespaceKind, ns, { now: NOW }).rows[0]!.cells, ['default', 'Active', '60m']);
    assert.equal(tableColumnDefinitions(pvcKind)[0]!.name, 'Name');
    assert.equal(toTable(pvcKind, { metadata: { name: 'data', namespace: 'x' }, spec: {} }, { now: NOW }).rows[0]!.cells[0], 'data');
  });
});

describe('the Table of a real kube-apiserver', () => {
  it('matches byte for byte the list a cluster answers kubectl get ns with', () => {
    // The body of a real GET /api/v1/namespaces (Accept: Table), one row kept, with 1.23's Name description.
    const managedFields = [
      {
        manager: 'kube-apiserver',
        operation: 'Update',
        apiVersion: 'v1',
        time: '2024-09-17T11:57:54Z',
        fieldsType: 'FieldsV1',
        fieldsV1: { 'f:metadata': { 'f:labels': { '.': {}, 'f:kubernetes.io/metadata.name': {} } } },
      },
    ];
    const list: KObject = {
      kind: 'NamespaceList',
      apiVersion: 'v1',
      metadata: { resourceVersion: '165263' },
      items: [
        {
          metadata: {
            name: 'default',
            uid: '64ff44b6-7fd6-430a-95db-cbd3e5450be3',
            resourceVersion: '38',
            creationTimestamp: '2024-09-17T11:57:54Z',
            labels: { 'kubernetes.io/metadata.name': 'default' },
            managedFields,
          },
          spec: { finalizers: ['kubernetes'] },
          status: { phase: 'Active' },
        },
      ],
    };
    const now = Date.parse('2024-09-18T09:34:31Z');
    const golden =
      '{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"165263"},"columnDefinitions":[{"name":"Name","type":"string","format":"name","description":"Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: http://kubernetes.io/docs/user-guide/identifiers#names","priority":0},{"name":"Status","type":"string","format":"","description":"The status of the namespace","priority":0},{"name":"Age","type":"string","format":"","description":"CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\\n\\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata","priority":0}],"rows":[{"cells":["default","Active","21h"],"object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"default","uid":"64ff44b6-7fd6-430a-95db-cbd3e5450be3","resourceVersion":"38","creationTimestamp":"2024-09-17T11:57:54Z","labels":{"kubernetes.io/metadata.name":"default"},"managedFields":[{"manager":"kube-apiserver","operation":"Update","apiVersion":"v1","time":"2024-09-17T11:57:54Z","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:labels":{".":{},"f:kubernetes.io/metadata.name":{}}}}}]}}}]}';
    assert.equal(JSON.stringify(toTable(namespaceKind, list, { now })), golden);
  });

  it("uses the ObjectMeta definition's description of name for the Name column", () => {
    const objectMeta = ALL_DEFINITIONS['io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta']!;
    assert.equal(objectMeta.properties?.name?.description, NAME_COLUMN_DESCRIPTION);
    assert.equal(objectMeta.properties?.creationTimestamp?.description, CREATION_TIMESTAMP_DESCRIPTION);
  });
});

describe('negotiateOutput', () => {
  it('picks the v1 Table for what kubectl get sends', () => {
    assert.deepEqual(negotiateOutput(KUBECTL_TABLE_ACCEPT), { target: 'Table', groupVersion: 'meta.k8s.io/v1', mediaType: 'application/json' });
    assert.deepEqual(negotiateOutput('application/json;as=Table;v=v1beta1;g=meta.k8s.io, application/json'), {
      target: 'Table',
      groupVersion: 'meta.k8s.io/v1beta1',
      mediaType: 'application/json',
    });
  });
  it('picks partial object metadata (any media type the endpoint encodes)', () => {
    assert.deepEqual(
      negotiateOutput('application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json'),
      { target: 'PartialObjectMetadataList', groupVersion: 'meta.k8s.io/v1', mediaType: 'application/json' },
    );
    assert.deepEqual(negotiateOutput('application/yaml;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1'), {
      target: 'PartialObjectMetadata',
      groupVersion: 'meta.k8s.io/v1beta1',
      mediaType: 'application/yaml',
    });
  });
  it('falls back past conversions it cannot do, and keeps stream=watch', () => {
    assert.deepEqual(negotiateOutput('application/json;as=Table;v=v2;g=meta.k8s.io,application/json'), { target: 'object', mediaType: 'application/json' });
    assert.deepEqual(negotiateOutput('application/json;as=Scale;v=v1;g=autoscaling,application/yaml'), { target: 'object', mediaType: 'application/yaml' });
    assert.deepEqual(negotiateOutput('application/json;stream=watch'), { target: 'object', mediaType: 'application/json', stream: 'watch' });
    assert.deepEqual(negotiateOutput(undefined), { target: 'object', mediaType: 'application/json' });
    assert.deepEqual(negotiateOutput('*/*'), { target: 'object', mediaType: 'application/json' });
  });
  it('refuses what it cannot produce with 406', () => {
    const neg = negotiateOutput('application/vnd.kubernetes.protobuf');
    assert.equal(neg.target, 'notAcceptable');
    assert.throws(
      () => transformObject(shelfKind, shelf('a', 'x'), neg),
      (e: unknown) => isStatusError(e, 'NotAcceptable') && e.code === 406 && /only the following media types are accepted: application\/json, application\/yaml/.test(e.message),
    );
    // Tables are JSON or YAML only.
    assert.equal(negotiateOutput('application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io', ['application/json', 'application/vnd.kubernetes.protobuf']).target, 'notAcceptable');
  });
});

describe('transformObject', () => {
  const list: KObject = { kind: 'ShelfList', apiVersion: 'v1', metadata: { resourceVersion: '3', remainingItemCount: 2 }, items: [shelf('a', '2024-05-01T11:00:00Z')] };
  it('converts lists to PartialObjectMetadataList, objects to PartialObjectMetadata', () => {
    assert.deepEqual(transformObject(shelfKind, list, negotiateOutput('application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1')), {
      kind: 'PartialObjectMetadataList',
      apiVersion: 'meta.k8s.io/v1',
      metadata: { resourceVersion: '3', remainingItemCount: 2 },
      items: [{ kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: shelf('a', '2024-05-01T11:00:00Z').metadata }],
    });
    assert.deepEqual(toPartialObjectMetadataList(list, 'meta.k8s.io/v1beta1').metadata, { resourceVersion: '3' });
    assert.deepEqual(transformObject(shelfKind, shelf('a', 'x'), negotiateOutput('application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1')), {
      kind: 'PartialObjectMetadata',
      apiVersion: 'meta.k8s.io/v1',
      metadata: shelf('a', 'x').metadata,
    });
  });
  it('refuses the wrong shape with 406 and the apiserver message', () => {
    assert.throws(
      () => transformObject(shelfKind, list, negotiateOutput('application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1')),
      (e: unknown) => isStatusError(e, 'NotAcceptable') && e.message === 'you requested PartialObjectMetadata, but the requested object is a list (*core.ShelfList)',
    );
    assert.throws(
      () => transformObject(shelfKind, shelf('a', 'x'), negotiateOutput('application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1')),
      (e: unknown) => isStatusError(e, 'NotAcceptable') && e.message === 'you requested PartialObjectMetadataList, but the requested object is not a list (*core.Shelf)',
    );
  });
  it('watch: column definitions on the first table only', () => {
    const next = watchEventTransformer(shelfKind, negotiateOutput(KUBECTL_TABLE_ACCEPT), { now: NOW });
    const first = next(shelf('a', '2024-05-01T11:00:00Z')) as { columnDefinitions: unknown[] };
    const second = next(shelf('b', '2024-05-01T11:00:00Z')) as { columnDefinitions: unknown[]; rows: unknown[] };
    assert.equal(first.columnDefinitions.length, 4);
    assert.deepEqual(second.columnDefinitions, []);
    assert.equal(second.rows.length, 1);
  });
});

const kubectls = kubectlBinaries();

describe('kubectl get prints the tables', { skip: kubectls.length === 0 ? 'no kubectl.1.xx binaries next to kubectl' : false }, () => {
  let server: FakeServer;
  const created = new Date(Date.now() - 90 * MINUTE).toISOString().replace(/\.\d{3}Z$/, 'Z');
  before(async () => {
    const store = new Map([
      [
        namespaceKind,
        [
          { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default', uid: 'u1', resourceVersion: '5', creationTimestamp: created, labels: { team: 'a' } }, status: { phase: 'Active' } },
          { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'apps', uid: 'u2', resourceVersion: '6', creationTimestamp: created }, status: { phase: 'Terminating' } },
        ],
      ],
      [
        pvcKind,
        [
          {
            apiVersion: 'v1',
            kind: 'PersistentVolumeClaim',
            metadata: { name: 'data', namespace: 'default', uid: 'u3', resourceVersion: '7', creationTimestamp: created },
            spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, volumeMode: 'Filesystem' },
            status: { phase: 'Pending' },
          },
        ],
      ],
    ]);
    server = await startFakeServer(BUILTIN_KINDS, ALL_DEFINITIONS, store);
  });
  after(async () => {
    await server.close();
  });

  for (const { version, path } of kubectls) {
    it(`kubectl ${version} get ns / pvc`, async () => {
      server.requests.length = 0;
      const ns = await runKubectl(path, server.url, ['get', 'namespaces']);
      assert.equal(ns.code, 0, ns.stderr);
      assert.equal(ns.stdout, 'NAME      STATUS        AGE\ndefault   Active        90m\napps      Terminating   90m\n');
      const get = server.requests.find((q) => q.url.startsWith('/api/v1/namespaces'));
      assert.equal(get?.accept, KUBECTL_TABLE_ACCEPT);
      assert.equal(get?.responseContentType, 'application/json');

      const pvc = await runKubectl(path, server.url, ['get', 'pvc', '-A', '-o', 'wide']);
      assert.equal(pvc.code, 0, pvc.stderr);
      const [header, row] = pvc.stdout.trim().split('\n').map((l) => l.trim().split(/\s{2,}/));
      assert.deepEqual(header!.slice(0, 3), ['NAMESPACE', 'NAME', 'STATUS']);
      assert.equal(header![header!.length - 1], 'VOLUMEMODE');
      assert.deepEqual(row!.slice(0, 3), ['default', 'data', 'Pending']);
      assert.ok(row!.includes('90m'), pvc.stdout);
    });
  }

  it('kubectl get --show-labels and --sort-by (includeObject=Object)', async () => {
    const newest = kubectls[kubectls.length - 1]!;
    const labels = await runKubectl(newest.path, server.url, ['get', 'ns', '--show-labels']);
    assert.equal(labels.code, 0, labels.stderr);
    assert.match(labels.stdout, /^default\s+Active\s+90m\s+team=a$/m);
    assert.match(labels.stdout, /^apps\s+Terminating\s+90m\s+<none>$/m);

    server.requests.length = 0;
    const sorted = await runKubectl(newest.path, server.url, ['get', 'ns', '--sort-by=.metadata.name']);
    assert.equal(sorted.code, 0, sorted.stderr);
    assert.equal(sorted.stdout, 'NAME      STATUS        AGE\napps      Terminating   90m\ndefault   Active        90m\n');
    assert.ok(server.requests.some((q) => q.url.includes('includeObject=Object')), JSON.stringify(server.requests));

    const one = await runKubectl(newest.path, server.url, ['get', 'ns', 'default', '-o', 'name']);
    assert.equal(one.stdout, 'namespace/default\n');
  });
});
