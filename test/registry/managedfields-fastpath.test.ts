import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  diffOwnedChanged,
  diffOwnedChangedSlow,
  FieldSet,
  pe,
  refSchema,
  trackUpdate,
  trackUpdateSlow,
  type Comparison,
  type JsonObject,
  type UpdateTracking,
} from '../../src/registry/managedfields.js';
import { ALL_DEFINITIONS, BUILTIN_KINDS } from '../../src/registry/kinds/index.js';
import { REF_PREFIX } from '../../src/registry/schema.js';
import { hasZeroValue, zeroValueOf } from '../../src/registry/fieldmanager.js';

import { DEFS, POD } from './fixtures/pod-schema.js';

const opts: UpdateTracking = { manager: 'kubectl', subresource: '', apiVersion: 'v1', time: '2024-01-01T00:00:00Z', schema: POD, defs: DEFS };

const pods: JsonObject[] = [
  { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'default' } },
  {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'p', namespace: 'default', uid: 'u', labels: { b: '1', a: '2', 'é': '3', '\u{1F600}': '4', '\uffff': '5' }, annotations: {} },
    spec: {
      containers: [
        { name: 'b', image: 'x', args: ['1', '2'], ports: [{ containerPort: 80 }, { containerPort: 80, protocol: 'UDP' }, { containerPort: 80 }] },
        { name: 'a', ports: [] },
        { name: 'b', image: 'duplicate' },
        { image: 'no key' },
      ],
      replicas: 3,
      paused: false,
      nodeSelector: { zone: 'z', disk: 'ssd' },
      selector: { app: 'x' },
      tags: ['y', 'x', 'y'],
      unknown: { deep: { x: 1 } },
    },
    status: { phase: 'Running' },
  },
  { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', managedFields: [] }, spec: {} },
  { apiVersion: 'v1', kind: 'Pod', metadata: { managedFields: [{ manager: 'bad' }] }, spec: { replicas: 'not a number', nodeSelector: 'x' } },
  { metadata: 'not an object', spec: [1, 2] },
  { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', labels: { a: undefined } }, spec: { containers: undefined, tags: [] } },
  {},
];

void describe('trackUpdate create fast path', () => {
  it('gives the managedFields of the general path', () => {
    const variants: Partial<UpdateTracking>[] = [
      {},
      { ignored: FieldSet.of([pe.field('status')]) },
      { ignored: FieldSet.of([pe.field('spec')]), subresource: 'status' },
      { ignored: FieldSet.of([pe.field('spec'), pe.field('nodeSelector')], [pe.field('metadata'), pe.field('labels')]) },
      { manager: '' },
      { emptyObject: {} },
      { emptyObject: { metadata: { creationTimestamp: null }, spec: { containers: null, nodeSelector: {} }, status: {} } },
      { emptyObject: { spec: { replicas: 0, paused: false, tags: null, unknown: {} } }, ignored: FieldSet.of([pe.field('status')]) },
    ];
    for (const obj of pods) {
      for (const v of variants) {
        const o = { ...opts, ...v };
        const fast = trackUpdate(null, structuredClone(obj), o);
        const slow = trackUpdateSlow(null, structuredClone(obj), o);
        assert.equal(JSON.stringify(fast), JSON.stringify(slow), JSON.stringify({ obj, v }));
      }
    }
  });

  it('gives the managedFields of the general path for the built-in kinds', () => {
    const pvc = BUILTIN_KINDS.find((k) => k.kind === 'PersistentVolumeClaim');
    assert.ok(pvc);
    const obj: JsonObject = {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'c', namespace: 'n', uid: 'u', labels: { app: 'bench', tier: 'db' }, annotations: { 'bench.orch.io/owner': 'api-bench' } },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, storageClassName: 'standard', volumeMode: 'Filesystem' },
      status: { phase: 'Pending' },
    };
    const o: UpdateTracking = { ...opts, schema: { $ref: REF_PREFIX + pvc.definition }, defs: ALL_DEFINITIONS, ignored: FieldSet.of([pe.field('status')]) };
    const fast = trackUpdate(null, structuredClone(obj), o);
    assert.ok(fast && fast.length === 1);
    assert.equal(JSON.stringify(fast), JSON.stringify(trackUpdateSlow(null, structuredClone(obj), o)));
  });

  it("agrees with the general path against every built-in kind's zero value", () => {
    const objects = (kind: string, apiVersion: string): JsonObject[] => [
      { apiVersion, kind, metadata: { name: 'x', namespace: 'n', labels: { a: '1' } } },
      { apiVersion, kind, metadata: { name: 'x' }, spec: {}, status: {} },
      { apiVersion, kind, metadata: { name: 'x' }, spec: { containers: [{ name: 'c', image: 'i' }], resources: { requests: { storage: '1Gi' } }, type: 'Limited', limits: [] } },
      { apiVersion, kind, metadata: { name: 'x' }, spec: { priorityLevelConfiguration: { name: 'p' }, request: 'Zm9v', signerName: '' } },
      { apiVersion, kind, metadata: { name: 'x' }, involvedObject: { kind: 'Pod' }, source: {}, reportingComponent: '', eventTime: null, regarding: {} },
      { apiVersion, kind, metadata: { name: 'x' }, value: 0, provisioner: 'p', rules: [], roleRef: { apiGroup: '', kind: 'Role', name: 'r' } },
      { apiVersion, kind, metadata: { name: 'x' }, spec: 'not an object', rules: {}, value: {} },
    ];
    for (const decl of BUILTIN_KINDS) {
      if (decl.compute) continue;
      const apiVersion = decl.group ? `${decl.group}/${decl.version}` : decl.version;
      for (const obj of objects(decl.kind, apiVersion)) {
        for (const ignored of [FieldSet.of([pe.field('status')]), FieldSet.of([pe.field('spec')])]) {
          const o: UpdateTracking = { ...opts, apiVersion, schema: { $ref: REF_PREFIX + decl.definition }, defs: ALL_DEFINITIONS, ignored, emptyObject: zeroValueOf(decl) };
          const fast = trackUpdate(null, structuredClone(obj), o);
          const slow = trackUpdateSlow(null, structuredClone(obj), o);
          assert.equal(JSON.stringify(fast), JSON.stringify(slow), JSON.stringify({ kind: decl.kind, obj }));
        }
      }
    }
  });

  it('knows the Go zero value of every stored kind', () => {
    for (const decl of BUILTIN_KINDS) {
      if (decl.compute) continue;
      assert.ok(hasZeroValue(decl.definition), `declare the Go zero value of ${decl.definition} in src/registry/fieldmanager.ts`);
    }
  });
});

void describe('diffOwnedChanged', () => {
  const show = (c: Comparison) => `added ${c.added.toString()} modified ${c.modified.toString()} removed ${c.removed.toString()}`;
  const t = '2024-01-01T00:00:01Z';
  const spec = { nodeName: 'n', containers: [{ name: 'main', image: 'busybox', command: ['sleep', '3600'] }], restartPolicy: 'Always' };
  const live: JsonObject = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'n', uid: 'u', labels: { a: '1' } }, spec, status: { phase: 'Pending', qosClass: 'BestEffort' } };
  const running: JsonObject = {
    ...live,
    metadata: { name: 'p', namespace: 'n', uid: 'u', labels: { a: '2', b: '1' } },
    status: {
      phase: 'Running',
      conditions: [
        { type: 'Initialized', status: 'True', lastProbeTime: null, lastTransitionTime: t },
        { type: 'Ready', status: 'True', lastProbeTime: null, lastTransitionTime: t },
        { type: 'PodScheduled', status: 'True', lastProbeTime: null, lastTransitionTime: t },
      ],
      podIPs: [{ ip: '127.0.0.1' }],
      containerStatuses: [{ name: 'main', state: { running: { startedAt: t } }, lastState: {}, ready: true, restartCount: 0, started: true }],
      qosClass: 'BestEffort',
    },
  };
  const reordered: JsonObject = {
    ...running,
    status: {
      phase: 'Running',
      conditions: [
        { type: 'PodScheduled', status: 'False', lastTransitionTime: t },
        { type: 'Initialized', status: 'True', lastProbeTime: null, lastTransitionTime: t },
        { type: 'ContainersReady', status: 'True' },
        { status: 'no key' },
        { type: 'Ready', status: 'True', lastProbeTime: null, lastTransitionTime: t },
        { type: 'Ready', status: 'duplicate' },
      ],
      podIPs: [],
      containerStatuses: [{ name: 'main', state: { terminated: { exitCode: 1 } }, lastState: 'not an object', ready: 'yes', restartCount: 1.5 }],
    },
  };

  it('gives the sets of the generic walker', () => {
    const all = [...pods, live, running, reordered];
    for (const [schema, defs] of [
      [POD, DEFS],
      [refSchema('io.k8s.api.core.v1.Pod'), ALL_DEFINITIONS],
    ] as const) {
      for (const a of all) {
        for (const b of all) {
          const fast = diffOwnedChanged(a, b, schema, defs);
          const slow = diffOwnedChangedSlow(a, b, schema, defs);
          assert.equal(show(fast), show(slow), JSON.stringify({ a, b }));
        }
      }
    }
    // the status patch of a starting pod: the status is added, the changed label modified, the spec skipped
    const c = diffOwnedChanged(live, running, refSchema('io.k8s.api.core.v1.Pod'), ALL_DEFINITIONS);
    assert.ok(c.added.has([pe.field('status'), pe.field('conditions')]));
    assert.ok(c.modified.has([pe.field('metadata'), pe.field('labels'), pe.field('a')]));
    assert.ok(c.modified.has([pe.field('status'), pe.field('phase')]));
    assert.ok(!c.modified.has([pe.field('spec'), pe.field('nodeName')]));
  });
});
