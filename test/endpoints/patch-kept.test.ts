/**
 * PATCH of a subresource whose update takes some top-level fields from the stored object (pods/status keeps
 * the spec): when the patch body cannot reach such a field, the stored value is not decoded again; the
 * patched object, its errors and its warnings are what a full decode gives.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { applyPatch } from '../../src/endpoints/patching.js';
import { META_DEFINITIONS } from '../../src/registry/definitions/meta.js';
import type { KObject } from '../../src/registry/kind.js';
import { BUILTIN_KINDS, podKind } from '../../src/registry/kinds/index.js';
import type { Definitions } from '../../src/registry/schema.js';

const defs = Object.assign({}, META_DEFINITIONS, ...BUILTIN_KINDS.map((k) => k.definitions)) as Definitions;
const SMP = 'application/strategic-merge-patch+json';
const kept = podKind.subresources?.status?.keeps;

function stored(): KObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'p', namespace: 'default', uid: 'u1', resourceVersion: '5' },
    spec: { nodeName: 'n1', containers: [{ name: 'main', image: 'busybox', command: ['sleep', '3600'], resources: {} }], restartPolicy: 'Always' },
    status: { phase: 'Pending', qosClass: 'BestEffort' },
  };
}

/** The patch applied with the status subresource's kept fields and without (a full decode), each on its own copy. */
function both(body: string, current: KObject = stored()): [KObject | Error, KObject | Error] {
  const run = (k: readonly string[] | undefined): KObject | Error => {
    const warnings: string[] = [];
    try {
      const out = applyPatch(SMP, structuredClone(current), Buffer.from(body), podKind, defs, 'Warn', warnings, k);
      return { ...out, warnings } as KObject;
    } catch (err) {
      return err as Error;
    }
  };
  return [run(kept), run(undefined)];
}

const runningStatus = {
  phase: 'Running',
  conditions: [{ type: 'Ready', status: 'True', lastProbeTime: null, lastTransitionTime: '2026-11-22T10:00:00Z' }],
  hostIP: '127.0.0.1',
  containerStatuses: [{ name: 'main', state: { running: { startedAt: '2026-11-22T10:00:00Z' } }, lastState: {}, ready: true, restartCount: 0, image: 'busybox', imageID: '', started: true }],
};

describe('PATCH pods/status: the kept spec', () => {
  it('pods/status declares the spec as kept', () => {
    assert.deepEqual(kept, ['spec']);
  });

  it("an agent's status patch gives the same object, the stored spec itself", () => {
    const current = stored();
    const [fast, full] = both(JSON.stringify({ metadata: { uid: 'u1' }, status: runningStatus }), current);
    assert.ok(!(fast instanceof Error) && !(full instanceof Error));
    assert.deepEqual(fast, full);
    assert.deepEqual(Object.keys(fast), Object.keys(full), 'same key order');
    assert.equal((fast.status as KObject).phase, 'Running');
  });

  it('a patch that names the spec is decoded whole: type errors and unknown fields as before', () => {
    const [fast, full] = both(JSON.stringify({ spec: { containers: 5 }, status: runningStatus }));
    assert.ok(fast instanceof Error && full instanceof Error);
    assert.equal(fast.message, full.message);
    const [f2, u2] = both(JSON.stringify({ spec: { bogus: 1 }, status: { phase: 'Running' } }));
    assert.ok(!(f2 instanceof Error) && !(u2 instanceof Error));
    assert.deepEqual(f2, u2);
    assert.ok(((f2 as { warnings: string[] }).warnings).some((w) => w.includes('bogus')), 'the unknown spec field is reported');
  });

  it('a body with a backslash (an escape could spell "spec") is decoded whole', () => {
    const body = '{"\\u0073pec":{"containers":5},"status":{"phase":"Running"}}';
    const [fast, full] = both(body);
    assert.ok(fast instanceof Error && full instanceof Error);
    assert.equal(fast.message, full.message);
  });

  it('a status patch that does not name the spec leaves the stored spec undecoded', () => {
    // What a full decode would drop: only there to show which path ran (a stored spec was decoded when written).
    const current = stored();
    (current.spec as KObject).notAField = true;
    const [fast, full] = both(JSON.stringify({ status: { phase: 'Running' } }), current);
    assert.ok(!(fast instanceof Error) && !(full instanceof Error));
    assert.equal((fast.spec as KObject).notAField, true);
    assert.equal((full.spec as KObject).notAField, undefined);
    assert.deepEqual(fast.status, full.status);
  });
});
