import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ALL_DEFINITIONS, BUILTIN_KINDS, namespaceKind, pvcKind } from '../../src/registry/kinds/index.js';
import { META_DEFINITIONS, OBJECT_META_REF } from '../../src/registry/definitions/meta.js';
import {
  FINALIZER_KUBERNETES,
  LABEL_METADATA_NAME,
  NAMESPACE_CONDITION_FAILED_REASONS,
  NAMESPACE_CONDITION_OK,
  NAMESPACE_CONDITION_TYPES,
  contentDeletionFailedMessage,
  someFinalizersRemainMessage,
  someResourcesRemainMessage,
} from '../../src/registry/kinds/namespace.js';
import { PVC_PROTECTION_FINALIZER, accessModesAsString } from '../../src/registry/kinds/pvc.js';
import { REF_PREFIX, type Schema } from '../../src/registry/schema.js';
import type { KObject, StrategyContext, SubresourceStrategy } from '../../src/registry/kind.js';
import type { FieldError } from '../../src/util/validation.js';

const gates = (g: Record<string, boolean> = {}): StrategyContext => ({ featureGates: g, namespace: 'default', subresource: '' });
const OFF = gates();
const DATA_SOURCE_ON = gates({ AnyVolumeDataSource: true });

const msgs = (errs: FieldError[]) => errs.map((e) => e.toString());

function claim(spec: Record<string, unknown> = {}): KObject {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name: 'data', namespace: 'default' },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, ...spec },
  };
}

/** Runs the create hooks as the store does (prepareForCreate → default → validate → canonicalize). */
function create(obj: KObject, ctx = OFF, kind = pvcKind): { obj: KObject; errs: string[] } {
  kind.strategy.prepareForCreate?.(obj, ctx);
  kind.strategy.default?.(obj, ctx);
  const errs = msgs(kind.strategy.validate(obj, ctx));
  if (errs.length === 0) kind.strategy.canonicalize?.(obj);
  return { obj, errs };
}

/** A stored claim: created, with metadata the store adds. */
function stored(spec: Record<string, unknown> = {}, status?: Record<string, unknown>, ctx = OFF): KObject {
  const { obj, errs } = create(claim(spec), ctx);
  assert.deepEqual(errs, []);
  obj.metadata = { ...obj.metadata, uid: 'u1', resourceVersion: '5', creationTimestamp: '2024-01-01T00:00:00Z' };
  if (status) obj.status = { ...obj.status, ...status };
  return obj;
}

/** Runs the update hooks (prepareForUpdate → default → validateUpdate → canonicalize). */
function update(obj: KObject, old: KObject, ctx = OFF): { obj: KObject; errs: string[] } {
  pvcKind.strategy.prepareForUpdate?.(obj, old, ctx);
  pvcKind.strategy.default?.(obj, ctx);
  const errs = msgs(pvcKind.strategy.validateUpdate(obj, old, ctx));
  if (errs.length === 0) pvcKind.strategy.canonicalize?.(obj);
  return { obj, errs };
}

function subUpdate(sub: SubresourceStrategy, obj: KObject, old: KObject, ctx: StrategyContext, kind = pvcKind) {
  sub.prepareForUpdate(obj, old, ctx);
  kind.strategy.default?.(obj, ctx);
  return { obj, errs: msgs(sub.validateUpdate(obj, old, ctx)) };
}

describe('PersistentVolumeClaim: declaration', () => {
  it('names, scope and responses', () => {
    assert.equal(pvcKind.resource, 'persistentvolumeclaims');
    assert.equal(pvcKind.singular, 'persistentvolumeclaim');
    assert.deepEqual(pvcKind.shortNames, ['pvc']);
    assert.equal(pvcKind.namespaced, true);
    assert.equal(pvcKind.listKind, 'PersistentVolumeClaimList');
    assert.deepEqual(pvcKind.responses, { deleteCollection: 'Status' });
    assert.equal(pvcKind.tracksGeneration, false);
    assert.deepEqual(Object.keys(pvcKind.fieldSelectors ?? {}), []);
    assert.equal(PVC_PROTECTION_FINALIZER, 'kubernetes.io/pvc-protection');
    assert.deepEqual(pvcKind.nameValidator?.('My_Claim', false).length, 1);
    assert.deepEqual(pvcKind.nameValidator?.('a.b-c', false), []);
  });
});

describe('PersistentVolumeClaim: create', () => {
  it('clears status, defaults phase and volumeMode', () => {
    const input = claim();
    input.status = { phase: 'Bound', capacity: { storage: '5Gi' } };
    const { obj, errs } = create(input);
    assert.deepEqual(errs, []);
    assert.deepEqual(obj.status, { phase: 'Pending' });
    assert.equal(obj.spec.volumeMode, 'Filesystem');
    // the protection finalizer is admission's business
    assert.equal(obj.metadata?.finalizers, undefined);
  });

  it('requires access modes', () => {
    assert.deepEqual(create(claim({ accessModes: [] })).errs, ['spec.accessModes: Required value: at least 1 access mode is required']);
    assert.deepEqual(create(claim({ accessModes: undefined })).errs, ['spec.accessModes: Required value: at least 1 access mode is required']);
  });

  it('refuses unsupported access modes, listing the supported ones', () => {
    assert.deepEqual(create(claim({ accessModes: ['Foo'] })).errs, [
      'spec.accessModes: Unsupported value: "Foo": supported values: "ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce"',
    ]);
  });

  it('ReadWriteOncePod only under its gate, and alone', () => {
    assert.deepEqual(create(claim({ accessModes: ['ReadWriteOncePod'] })).errs, [
      'spec.accessModes: Unsupported value: "ReadWriteOncePod": supported values: "ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce"',
    ]);
    const on = gates({ ReadWriteOncePod: true });
    assert.deepEqual(create(claim({ accessModes: ['ReadWriteOncePod'] }), on).errs, []);
    assert.deepEqual(create(claim({ accessModes: ['ReadWriteOncePod', 'ReadWriteOnce'] }), on).errs, [
      'spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes',
    ]);
    assert.deepEqual(create(claim({ accessModes: ['Foo'] }), on).errs, [
      'spec.accessModes: Unsupported value: "Foo": supported values: "ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"',
    ]);
  });

  it('requires a positive storage request', () => {
    assert.deepEqual(create(claim({ resources: {} })).errs, ['spec.resources[storage]: Required value']);
    assert.deepEqual(create(claim({ resources: { requests: { cpu: '1' } } })).errs, ['spec.resources[storage]: Required value']);
    assert.deepEqual(create(claim({ resources: { requests: { storage: '0' } } })).errs, [
      'spec.resources[storage]: Invalid value: "0": must be greater than zero',
    ]);
    assert.deepEqual(create(claim({ resources: { requests: { storage: '-1Gi' } } })).errs, [
      'spec.resources[storage]: Invalid value: "-1Gi": must be greater than zero',
    ]);
  });

  it('validates storageClassName, volumeMode and the selector', () => {
    assert.deepEqual(create(claim({ storageClassName: 'Fast_SSD' })).errs, [
      "spec.storageClassName: Invalid value: \"Fast_SSD\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
    ]);
    assert.deepEqual(create(claim({ storageClassName: '' })).errs, []);
    assert.deepEqual(create(claim({ volumeMode: 'Raw' })).errs, ['spec.volumeMode: Unsupported value: "Raw": supported values: "Block", "Filesystem"']);
    assert.deepEqual(
      create(
        claim({
          selector: {
            matchLabels: { app: 'x' },
            matchExpressions: [
              { key: 'tier', operator: 'In', values: [] },
              { key: 'zone', operator: 'Exists', values: ['a'] },
              { key: 'z', operator: 'Near' },
            ],
          },
        }),
      ).errs,
      [
        "spec.selector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
        "spec.selector.matchExpressions[1].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
        'spec.selector.matchExpressions[2].operator: Invalid value: "Near": not a valid selector operator',
      ],
    );
  });

  it('stores quantities in canonical form', () => {
    const { obj, errs } = create(claim({ resources: { requests: { storage: '1.5Gi' }, limits: { storage: 2147483648 } } }));
    assert.deepEqual(errs, []);
    // a JSON number keeps its decimal form, as Kubernetes keeps it
    assert.deepEqual(obj.spec.resources, { requests: { storage: '1536Mi' }, limits: { storage: '2147483648' } });
    const kept = create(claim({ resources: { requests: { storage: '10Gi' } } })).obj;
    assert.equal(kept.spec.resources.requests.storage, '10Gi');
    const milli = create(claim({ resources: { requests: { storage: '0.5' } } })).obj;
    assert.equal(milli.spec.resources.requests.storage, '500m');
  });
});

describe('PersistentVolumeClaim: data sources', () => {
  const snapshot = { apiGroup: 'snapshot.storage.k8s.io', kind: 'VolumeSnapshot', name: 'snap' };
  const pvcSource = { kind: 'PersistentVolumeClaim', name: 'src' };
  const populator = { apiGroup: 'populator.example.com', kind: 'Sample', name: 'p' };

  it('gate off: dataSourceRef dropped, disallowed dataSource dropped silently', () => {
    let r = create(claim({ dataSourceRef: snapshot }));
    assert.deepEqual(r.errs, []);
    assert.equal(r.obj.spec.dataSourceRef, undefined);
    assert.equal(r.obj.spec.dataSource, undefined);

    r = create(claim({ dataSource: populator }));
    assert.deepEqual(r.errs, []);
    assert.equal(r.obj.spec.dataSource, undefined);

    r = create(claim({ dataSource: { kind: 'Foo', name: 'x' } }));
    assert.deepEqual(r.errs, []);
    assert.equal(r.obj.spec.dataSource, undefined);

    r = create(claim({ dataSource: snapshot }));
    assert.deepEqual(r.errs, []);
    assert.deepEqual(r.obj.spec.dataSource, snapshot);
    assert.equal(r.obj.spec.dataSourceRef, undefined);

    r = create(claim({ dataSource: { kind: 'PersistentVolumeClaim', name: '' } }));
    assert.deepEqual(r.errs, ['spec.dataSource.name: Required value']);
  });

  it('gate on: one field fills the other', () => {
    let r = create(claim({ dataSource: pvcSource }), DATA_SOURCE_ON);
    assert.deepEqual(r.errs, []);
    assert.deepEqual(r.obj.spec.dataSourceRef, pvcSource);

    r = create(claim({ dataSourceRef: populator }), DATA_SOURCE_ON);
    assert.deepEqual(r.errs, []);
    assert.deepEqual(r.obj.spec.dataSource, populator);

    // a disallowed dataSource without dataSourceRef is still dropped, so nothing is mirrored
    r = create(claim({ dataSource: populator }), DATA_SOURCE_ON);
    assert.deepEqual(r.errs, []);
    assert.equal(r.obj.spec.dataSource, undefined);
    assert.equal(r.obj.spec.dataSourceRef, undefined);
  });

  it('gate on: disallowed dataSourceRef values are kept and reported', () => {
    const r = create(claim({ dataSourceRef: { kind: 'Foo', name: 'x' } }), DATA_SOURCE_ON);
    assert.deepEqual(r.errs, ['spec.dataSource: Invalid value: "Foo"', 'spec.dataSourceRef: Invalid value: "Foo"']);
    const missing = create(claim({ dataSourceRef: { apiGroup: 'example.com', kind: '', name: '' } }), DATA_SOURCE_ON);
    assert.deepEqual(missing.errs, [
      'spec.dataSource.name: Required value',
      'spec.dataSource.kind: Required value',
      'spec.dataSourceRef.name: Required value',
      'spec.dataSourceRef.kind: Required value',
    ]);
  });

  it('gate on: both set and different is invalid', () => {
    const r = create(claim({ dataSource: snapshot, dataSourceRef: pvcSource }), DATA_SOURCE_ON);
    assert.equal(r.errs.length, 1);
    assert.match(r.errs[0]!, /^spec: Invalid value: field\.Path\{name:"dataSource", index:"", parent:\(\*field\.Path\)\(0x[0-9a-f]+\)\}: must match dataSourceRef$/);
    assert.deepEqual(create(claim({ dataSource: snapshot, dataSourceRef: snapshot }), DATA_SOURCE_ON).errs, []);
  });

  it('update: a data source in use is kept even when disallowed', () => {
    const old = stored();
    old.spec.dataSource = populator; // saved by an earlier version
    const { obj, errs } = update(structuredClone(old), old);
    assert.deepEqual(errs, []);
    assert.deepEqual(obj.spec.dataSource, populator);
  });
});

describe('PersistentVolumeClaim: update', () => {
  it('keeps status from the old object', () => {
    const old = stored({}, { phase: 'Bound', capacity: { storage: '1Gi' } });
    const obj = structuredClone(old);
    obj.status = { phase: 'Lost' };
    assert.deepEqual(update(obj, old).obj.status, { phase: 'Bound', capacity: { storage: '1Gi' } });
  });

  it('a bound claim may grow its storage request', () => {
    const old = stored({ volumeName: 'pv-1' }, { phase: 'Bound', capacity: { storage: '1Gi' } });
    const obj = structuredClone(old);
    obj.spec.resources.requests.storage = '2Gi';
    assert.deepEqual(update(obj, old).errs, []);
  });

  it('no claim may shrink its storage request', () => {
    const old = stored({ volumeName: 'pv-1' }, { phase: 'Bound', capacity: { storage: '2Gi' } });
    const obj = structuredClone(old);
    obj.spec.resources.requests.storage = '512Mi';
    assert.deepEqual(update(obj, old).errs, ['spec.resources.requests.storage: Forbidden: field can not be less than previous value']);
  });

  it('RecoverVolumeExpansionFailure: shrinking allowed down to (not including) status.capacity', () => {
    const on = gates({ RecoverVolumeExpansionFailure: true });
    const old = stored({ volumeName: 'pv-1', resources: { requests: { storage: '10Gi' } } }, { phase: 'Bound', capacity: { storage: '2Gi' } });
    const obj = structuredClone(old);
    obj.spec.resources.requests.storage = '5Gi';
    assert.deepEqual(update(obj, old, on).errs, []);
    const obj2 = structuredClone(old);
    obj2.spec.resources.requests.storage = '2Gi';
    assert.deepEqual(update(obj2, old, on).errs, ['spec.resources.requests.storage: Forbidden: field can not be less than status.capacity']);
  });

  it('an unbound claim may not change its request; the message carries a diff', () => {
    const old = stored();
    const obj = structuredClone(old);
    obj.spec.resources.requests.storage = '2Gi';
    const { errs } = update(obj, old);
    assert.equal(errs.length, 1);
    assert.ok(errs[0]!.startsWith('spec: Forbidden: spec is immutable after creation except resources.requests for bound claims\n'));
  });

  it('the diff reads like go-cmp', () => {
    const old = stored({ resources: { requests: { storage: '2Gi' } } });
    const obj = structuredClone(old);
    obj.spec.storageClassName = 'my-nfs';
    assert.deepEqual(update(obj, old).errs, [
      'spec: Forbidden: spec is immutable after creation except resources.requests for bound claims\n' +
        '  core.PersistentVolumeClaimSpec{\n' +
        '  \t... // 2 identical fields\n' +
        '  \tResources:        {Requests: {s"storage": {i: {...}, s: "2Gi", Format: "BinarySI"}}},\n' +
        '  \tVolumeName:       "",\n' +
        '- \tStorageClassName: nil,\n' +
        '+ \tStorageClassName: &"my-nfs",\n' +
        '  \tVolumeMode:       &"Filesystem",\n' +
        '  \tDataSource:       nil,\n' +
        '  \tDataSourceRef:    nil,\n' +
        '  }\n',
    ]);
  });

  it('volumeName may be set once', () => {
    const old = stored();
    const bind = structuredClone(old);
    bind.spec.volumeName = 'pv-1';
    assert.deepEqual(update(bind, old).errs, []);
    const bound = stored({ volumeName: 'pv-1' });
    const rebind = structuredClone(bound);
    rebind.spec.volumeName = 'pv-2';
    const { errs } = update(rebind, bound);
    assert.equal(errs.length, 1);
    assert.match(errs[0]!, /^spec: Forbidden: spec is immutable/);
    assert.match(errs[0]!, /- \tVolumeName: +"pv-1",\n\+ \tVolumeName: +"pv-2",/);
  });

  it('volumeMode is immutable', () => {
    const old = stored();
    const obj = structuredClone(old);
    obj.spec.volumeMode = 'Block';
    const { errs } = update(obj, old);
    assert.equal(errs.length, 2);
    assert.match(errs[0]!, /^spec: Forbidden: spec is immutable/);
    assert.equal(errs[1], 'volumeMode: Invalid value: "Block": field is immutable');
  });

  it('the beta storage-class annotation is immutable, but may become spec.storageClassName', () => {
    const old = stored();
    old.metadata!.annotations = { 'volume.beta.kubernetes.io/storage-class': 'gold' };
    const upgrade = structuredClone(old);
    upgrade.spec.storageClassName = 'gold';
    assert.deepEqual(update(upgrade, old).errs, []);
    const changed = structuredClone(old);
    changed.metadata!.annotations = { 'volume.beta.kubernetes.io/storage-class': 'silver' };
    assert.deepEqual(update(changed, old).errs, [
      'metadata.annotations.volume.beta.kubernetes.io/storage-class: Invalid value: "silver": field is immutable',
    ]);
  });

  it('spec errors are reported twice, as 1.23 does', () => {
    const old = stored({ accessModes: ['ReadWriteOnce'] });
    const obj = structuredClone(old);
    obj.spec.volumeName = 'pv';
    obj.spec.selector = { matchExpressions: [{ key: 'a', operator: 'Bad' }] };
    const { errs } = update(obj, old);
    const first = 'spec.selector.matchExpressions[0].operator: Invalid value: "Bad": not a valid selector operator';
    assert.deepEqual(errs.slice(0, 2), [first, first]);
  });

  it('a claim using ReadWriteOncePod keeps it when the gate is off', () => {
    const old = stored({ accessModes: ['ReadWriteOncePod'] }, undefined, gates({ ReadWriteOncePod: true }));
    const obj = structuredClone(old);
    obj.metadata!.labels = { a: 'b' };
    assert.deepEqual(update(obj, old).errs, []);
  });
});

describe('PersistentVolumeClaim: status subresource', () => {
  const status = pvcKind.subresources!.status!;

  it('changes status only', () => {
    const old = stored();
    const obj = structuredClone(old);
    obj.spec.volumeName = 'hijack';
    obj.status = { phase: 'Bound', accessModes: ['ReadWriteOnce'], capacity: { storage: '1Gi' } };
    const r = subUpdate(status, obj, old, OFF);
    assert.deepEqual(r.errs, []);
    assert.equal(r.obj.spec.volumeName, undefined);
    assert.deepEqual(r.obj.status, { phase: 'Bound', accessModes: ['ReadWriteOnce'], capacity: { storage: '1Gi' } });
  });

  it('validates capacity quantities', () => {
    const old = stored();
    const obj = structuredClone(old);
    obj.status = { phase: 'Bound', capacity: { storage: '-1Gi' } };
    assert.deepEqual(subUpdate(status, obj, old, OFF).errs, ['status.capacity[storage]: Invalid value: -1073741824: must be a valid resource quantity']);
  });

  it('allocatedResources and resizeStatus only under RecoverVolumeExpansionFailure', () => {
    const old = stored();
    const obj = structuredClone(old);
    obj.status = { phase: 'Bound', allocatedResources: { storage: '2Gi' }, resizeStatus: 'NodeExpansionPending' };
    const off = subUpdate(status, structuredClone(obj), old, OFF);
    assert.deepEqual(off.errs, []);
    assert.equal(off.obj.status.allocatedResources, undefined);
    assert.equal(off.obj.status.resizeStatus, undefined);

    const on = gates({ RecoverVolumeExpansionFailure: true });
    const kept = subUpdate(status, structuredClone(obj), old, on);
    assert.deepEqual(kept.errs, []);
    assert.deepEqual(kept.obj.status.allocatedResources, { storage: '2Gi' });

    const bad = structuredClone(obj);
    bad.status.resizeStatus = 'Shrinking';
    bad.status.allocatedResources = { cpu: '1', storage: '1Gi' };
    assert.deepEqual(subUpdate(status, bad, old, on).errs, [
      'status.resizeStatus: Unsupported value: "Shrinking": supported values: "", "ControllerExpansionFailed", "ControllerExpansionInProgress", "NodeExpansionFailed", "NodeExpansionInProgress", "NodeExpansionPending"',
      'status.allocatedResources: Unsupported value: "cpu": supported values: "storage"',
    ]);

    // in use in the old object: kept with the gate off
    const inUse = structuredClone(old);
    inUse.status.allocatedResources = { storage: '1Gi' };
    const again = subUpdate(status, structuredClone(obj), inUse, OFF);
    assert.deepEqual(again.obj.status.allocatedResources, { storage: '2Gi' });
    assert.equal(again.obj.status.resizeStatus, undefined);
  });

  it('canonicalizes status quantities', () => {
    const obj = stored();
    obj.status = { phase: 'Bound', capacity: { storage: '1.5Gi' }, allocatedResources: { storage: '1073741824' } };
    pvcKind.strategy.canonicalize?.(obj);
    assert.deepEqual(obj.status, { phase: 'Bound', capacity: { storage: '1536Mi' }, allocatedResources: { storage: '1073741824' } });
  });
});

describe('PersistentVolumeClaim: table', () => {
  const cells = (obj: KObject) => Object.fromEntries((pvcKind.columns ?? []).map((c) => [c.name, c.cell(obj)]));

  it('columns as kubectl 1.23 prints them', () => {
    assert.deepEqual(
      (pvcKind.columns ?? []).map((c) => [c.name, c.priority]),
      [
        ['Status', 0],
        ['Volume', 0],
        ['Capacity', 0],
        ['Access Modes', 0],
        ['StorageClass', 0],
        ['Age', 0],
        ['VolumeMode', 1],
      ],
    );
  });

  it('a pending claim', () => {
    const obj = stored({ storageClassName: 'standard' });
    assert.deepEqual(cells(obj), {
      Status: 'Pending',
      Volume: '',
      Capacity: '',
      'Access Modes': '',
      StorageClass: 'standard',
      Age: '2024-01-01T00:00:00Z',
      VolumeMode: 'Filesystem',
    });
  });

  it('a bound, terminating claim', () => {
    const obj = stored({ volumeName: 'pv-1' }, { phase: 'Bound', capacity: { storage: '5Gi' }, accessModes: ['ReadWriteOncePod', 'ReadOnlyMany', 'ReadWriteOnce', 'ReadWriteOnce'] });
    obj.metadata!.deletionTimestamp = '2024-01-02T00:00:00Z';
    obj.metadata!.annotations = { 'volume.beta.kubernetes.io/storage-class': 'legacy' };
    delete obj.spec.volumeMode;
    const c = cells(obj);
    assert.equal(c['Status'], 'Terminating');
    assert.equal(c['Volume'], 'pv-1');
    assert.equal(c['Capacity'], '5Gi');
    assert.equal(c['Access Modes'], 'RWO,ROX,RWOP');
    assert.equal(c['StorageClass'], 'legacy');
    assert.equal(c['VolumeMode'], '<unset>');
    delete obj.status.capacity;
    assert.equal(cells(obj)['Capacity'], '0');
  });

  it('access modes', () => {
    assert.equal(accessModesAsString(['ReadWriteMany', 'ReadWriteOnce']), 'RWO,RWX');
    assert.equal(accessModesAsString(undefined), '');
  });
});

describe('Namespace', () => {
  const ns = (spec?: Record<string, unknown>): KObject => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team' }, ...(spec ? { spec } : {}) });

  it('declaration', () => {
    assert.equal(namespaceKind.resource, 'namespaces');
    assert.deepEqual(namespaceKind.shortNames, ['ns']);
    assert.equal(namespaceKind.namespaced, false);
    assert.deepEqual(namespaceKind.responses, { delete: 'Status' });
    assert.equal(namespaceKind.tracksGeneration, false);
    assert.deepEqual(Object.keys(namespaceKind.fieldSelectors ?? {}), ['status.phase']);
    assert.deepEqual(namespaceKind.nameValidator?.('team.a', false), [
      "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
    ]);
  });

  it('create: Active, the kubernetes finalizer and the name label', () => {
    const input = ns({ finalizers: ['example.com/keep'] });
    input.status = { phase: 'Terminating' };
    const { obj, errs } = create(input, OFF, namespaceKind);
    assert.deepEqual(errs, []);
    assert.deepEqual(obj.spec, { finalizers: ['example.com/keep', FINALIZER_KUBERNETES] });
    assert.deepEqual(obj.status, { phase: 'Active' });
    assert.deepEqual(obj.metadata?.labels, { [LABEL_METADATA_NAME]: 'team' });

    const plain = create(ns(), OFF, namespaceKind).obj;
    assert.deepEqual(plain.spec, { finalizers: ['kubernetes'] });
  });

  it('the name label follows a generated name (canonicalize)', () => {
    const obj: KObject = { metadata: { generateName: 'gen-', labels: { [LABEL_METADATA_NAME]: 'forged' } } };
    namespaceKind.strategy.prepareForCreate?.(obj, OFF);
    namespaceKind.strategy.default?.(obj, OFF);
    obj.metadata!.name = 'gen-abcde';
    namespaceKind.strategy.canonicalize?.(obj);
    assert.equal(obj.metadata!.labels![LABEL_METADATA_NAME], 'gen-abcde');
  });

  it('validates finalizer names', () => {
    assert.deepEqual(create(ns({ finalizers: ['foo', 'a/b/c'] }), OFF, namespaceKind).errs, [
      'spec.finalizers: Invalid value: "foo": name is neither a standard finalizer name nor is it fully qualified',
      "spec.finalizers: Invalid value: \"a/b/c\": a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
    ]);
    assert.deepEqual(create(ns({ finalizers: ['orphan', 'foregroundDeletion'] }), OFF, namespaceKind).errs, []);
  });

  it('update keeps spec.finalizers and status', () => {
    const old = create(ns(), OFF, namespaceKind).obj;
    const obj = structuredClone(old);
    obj.spec.finalizers = [];
    obj.status = { phase: 'Terminating' };
    obj.metadata!.labels = { team: 'a', [LABEL_METADATA_NAME]: 'other' };
    namespaceKind.strategy.prepareForUpdate?.(obj, old, OFF);
    namespaceKind.strategy.default?.(obj, OFF);
    assert.deepEqual(msgs(namespaceKind.strategy.validateUpdate(obj, old, OFF)), []);
    namespaceKind.strategy.canonicalize?.(obj);
    assert.deepEqual(obj.spec, { finalizers: ['kubernetes'] });
    assert.deepEqual(obj.status, { phase: 'Active' });
    assert.deepEqual(obj.metadata!.labels, { team: 'a', [LABEL_METADATA_NAME]: 'team' });
  });

  it('finalize changes spec.finalizers only', () => {
    const fin = namespaceKind.subresources!.finalize!;
    const old = create(ns(), OFF, namespaceKind).obj;
    const obj = structuredClone(old);
    obj.spec.finalizers = [];
    obj.status = { phase: 'Terminating' };
    const r = subUpdate(fin, obj, old, OFF, namespaceKind);
    assert.deepEqual(r.errs, []);
    assert.deepEqual(r.obj.spec, { finalizers: [] });
    assert.deepEqual(r.obj.status, { phase: 'Active' });

    const bad = structuredClone(old);
    bad.spec.finalizers = ['kubernetes', 'custom'];
    assert.deepEqual(subUpdate(fin, bad, old, OFF, namespaceKind).errs, [
      'spec.finalizers[1]: Invalid value: "custom": name is neither a standard finalizer name nor is it fully qualified',
    ]);
  });

  it('status changes status only, with the phase rules', () => {
    const st = namespaceKind.subresources!.status!;
    const old = create(ns(), OFF, namespaceKind).obj;
    const obj = structuredClone(old);
    obj.spec.finalizers = [];
    obj.status = { phase: 'Terminating' };
    const r = subUpdate(st, obj, old, OFF, namespaceKind);
    assert.deepEqual(r.errs, ['status.Phase: Invalid value: "Terminating": may only be \'Active\' if `deletionTimestamp` is empty']);
    assert.deepEqual(r.obj.spec, { finalizers: ['kubernetes'] });

    const deleting = structuredClone(old);
    deleting.metadata!.deletionTimestamp = '2024-01-01T00:00:00Z';
    const active = structuredClone(deleting);
    assert.deepEqual(subUpdate(st, active, deleting, OFF, namespaceKind).errs, [
      'status.Phase: Invalid value: "Active": may only be \'Terminating\' if `deletionTimestamp` is not empty',
    ]);
    const term = structuredClone(deleting);
    term.status = {
      phase: 'Terminating',
      conditions: [{ type: 'NamespaceContentRemaining', status: 'True', reason: NAMESPACE_CONDITION_FAILED_REASONS.NamespaceContentRemaining }],
    };
    assert.deepEqual(subUpdate(st, term, deleting, OFF, namespaceKind).errs, []);
  });

  it('delete marks the namespace Terminating and keeps it while spec.finalizers remain', () => {
    const obj = create(ns(), OFF, namespaceKind).obj;
    const first = namespaceKind.beforeDelete!(structuredClone(obj), OFF, '2024-01-02T00:00:00Z');
    assert.ok(first);
    assert.equal(first.metadata?.deletionTimestamp, '2024-01-02T00:00:00Z');
    assert.equal(first.status.phase, 'Terminating');
    const second = namespaceKind.beforeDelete!(structuredClone(first), OFF, '2024-01-03T00:00:00Z');
    assert.deepEqual(second, first);
    const finalized = structuredClone(first);
    finalized.spec.finalizers = [];
    assert.equal(namespaceKind.beforeDelete!(finalized, OFF, '2024-01-03T00:00:00Z'), null);
  });

  it('table and field selectors', () => {
    const obj = create(ns(), OFF, namespaceKind).obj;
    obj.metadata!.creationTimestamp = '2024-01-01T00:00:00Z';
    assert.deepEqual(
      (namespaceKind.columns ?? []).map((c) => [c.name, c.priority, c.cell(obj)]),
      [
        ['Status', 0, 'Active'],
        ['Age', 0, '2024-01-01T00:00:00Z'],
      ],
    );
    assert.equal(namespaceKind.fieldSelectors!['status.phase']!(obj), 'Active');
  });

  it('controller conditions and messages', () => {
    assert.deepEqual([...NAMESPACE_CONDITION_TYPES].sort(), [
      'NamespaceContentRemaining',
      'NamespaceDeletionContentFailure',
      'NamespaceDeletionDiscoveryFailure',
      'NamespaceDeletionGroupVersionParsingFailure',
      'NamespaceFinalizersRemaining',
    ]);
    assert.deepEqual(NAMESPACE_CONDITION_OK.NamespaceContentRemaining, { reason: 'ContentRemoved', message: 'All content successfully removed' });
    assert.equal(NAMESPACE_CONDITION_FAILED_REASONS.NamespaceFinalizersRemaining, 'SomeFinalizerRemain');
    assert.equal(
      someResourcesRemainMessage([
        { resource: 'persistentvolumeclaims', group: '', count: 2 },
        { resource: 'configmaps', group: '', count: 1 },
        { resource: 'pods', group: '', count: 0 },
      ]),
      'Some resources are remaining: configmaps. has 1 resource instances, persistentvolumeclaims. has 2 resource instances',
    );
    assert.equal(
      someFinalizersRemainMessage([{ finalizer: 'kubernetes.io/pvc-protection', count: 2 }]),
      'Some finalizers are remaining: kubernetes.io/pvc-protection in 2 resource instances',
    );
    assert.equal(contentDeletionFailedMessage(['b', 'a']), 'Failed to delete all resource types, 2 remaining: a, b');
  });
});

describe('definitions', () => {
  function walk(schema: Schema, visit: (s: Schema) => void): void {
    visit(schema);
    for (const p of Object.values(schema.properties ?? {})) walk(p, visit);
    if (schema.items) walk(schema.items, visit);
    if (schema.additionalProperties) walk(schema.additionalProperties, visit);
  }

  it('every $ref resolves', () => {
    const refs: string[] = [];
    for (const def of Object.values(ALL_DEFINITIONS)) walk(def, (s) => s.$ref !== undefined && refs.push(s.$ref));
    assert.ok(refs.length > 20);
    for (const r of refs) {
      assert.ok(r.startsWith(REF_PREFIX), r);
      assert.ok(ALL_DEFINITIONS[r.slice(REF_PREFIX.length)], `unresolved ${r}`);
    }
    assert.equal(OBJECT_META_REF.$ref, REF_PREFIX + 'io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta');
  });

  it('holds the kinds, their lists and the shared types', () => {
    for (const k of BUILTIN_KINDS) {
      const def = ALL_DEFINITIONS[k.definition];
      assert.deepEqual(def?.['x-kubernetes-group-version-kind'], [{ group: k.group, kind: k.kind, version: k.version }]);
      // Create-only kinds (access and token reviews) have no list: their listDefinition is the kind's own.
      if (k.verbs && !k.verbs.includes('list')) continue;
      assert.deepEqual(ALL_DEFINITIONS[k.listDefinition]?.['x-kubernetes-group-version-kind'], [{ group: k.group, kind: k.listKind, version: k.version }]);
    }
    for (const name of [
      'ObjectMeta',
      'ListMeta',
      'Time',
      'MicroTime',
      'OwnerReference',
      'ManagedFieldsEntry',
      'FieldsV1',
      'Status',
      'StatusDetails',
      'StatusCause',
      'DeleteOptions',
      'Preconditions',
      'WatchEvent',
      'APIResourceList',
      'APIResource',
      'APIGroup',
      'APIGroupList',
      'APIVersions',
      'GroupVersionForDiscovery',
      'ServerAddressByClientCIDR',
      'Patch',
      'LabelSelector',
      'LabelSelectorRequirement',
    ]) {
      assert.ok(META_DEFINITIONS[`io.k8s.apimachinery.pkg.apis.meta.v1.${name}`], name);
    }
    assert.ok(META_DEFINITIONS['io.k8s.apimachinery.pkg.api.resource.Quantity']);
    assert.ok(META_DEFINITIONS['io.k8s.apimachinery.pkg.runtime.RawExtension']);
    assert.ok(META_DEFINITIONS['io.k8s.apimachinery.pkg.version.Info']);
  });

  it('patch strategies as 1.23 publishes them', () => {
    const om = ALL_DEFINITIONS['io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta']!.properties!;
    assert.equal(om['ownerReferences']!['x-kubernetes-patch-merge-key'], 'uid');
    assert.equal(om['ownerReferences']!['x-kubernetes-patch-strategy'], 'merge');
    assert.equal(om['finalizers']!['x-kubernetes-patch-strategy'], 'merge');
    const nsConditions = ALL_DEFINITIONS['io.k8s.api.core.v1.NamespaceStatus']!.properties!['conditions']!;
    assert.equal(nsConditions['x-kubernetes-patch-merge-key'], 'type');
    assert.equal(nsConditions['x-kubernetes-patch-strategy'], 'merge');
    const pvcConditions = ALL_DEFINITIONS['io.k8s.api.core.v1.PersistentVolumeClaimStatus']!.properties!['conditions']!;
    assert.equal(pvcConditions['x-kubernetes-patch-merge-key'], 'type');
    assert.equal(ALL_DEFINITIONS['io.k8s.api.core.v1.TypedLocalObjectReference']!['x-kubernetes-map-type'], 'atomic');
    assert.equal(ALL_DEFINITIONS['io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector']!['x-kubernetes-map-type'], 'atomic');
  });
});
