import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { readStatusAnswer } from '../../src/agent/client/answers.js';
import { decodeObject, encodeObject } from '../../src/util/protobuf.js';

const t = '2026-11-22T16:00:00Z';
const base = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: {
    name: 'p',
    namespace: 'ns',
    uid: 'a1b2c3d4-0000-1111-2222-333344445555',
    resourceVersion: '123456789012',
    creationTimestamp: t,
    labels: { app: 'é' },
    managedFields: [{ manager: 'orchlet', operation: 'Update', apiVersion: 'v1', time: t, fieldsType: 'FieldsV1', subresource: 'status', fieldsV1: { 'f:status': { 'f:phase': {} } } }],
  },
  spec: {
    nodeName: 'n',
    terminationGracePeriodSeconds: 30,
    containers: [{ name: 'main', image: 'busybox', command: ['sleep', '3600'] }],
    tolerations: [{ key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 }],
  },
  status: {
    phase: 'Running',
    hostIP: '127.0.0.1',
    podIPs: [{ ip: '127.0.0.1' }],
    startTime: t,
    conditions: [{ type: 'Ready', status: 'True', lastProbeTime: null, lastTransitionTime: t }],
    containerStatuses: [{ name: 'main', ready: true, restartCount: 2, image: 'busybox', imageID: '', containerID: 'orch://x', started: true, state: { running: { startedAt: t } }, lastState: { terminated: { exitCode: 137, reason: 'Error', startedAt: t, finishedAt: t } } }],
  },
};

/** What the status sync read from a fully decoded answer before (the resourceVersion, and the status if there is one). */
function full(pod: Record<string, unknown>): { resourceVersion: unknown; status: unknown } {
  const meta = pod.metadata as Record<string, unknown> | undefined;
  return { resourceVersion: meta?.resourceVersion, status: typeof pod.status === 'object' && pod.status !== null ? pod.status : undefined };
}

void describe('the status PATCH answer read in part', () => {
  const shapes: [string, Record<string, unknown>][] = [
    ['a running pod', base],
    ['an empty status', { ...base, status: {} }],
    ['no status', { apiVersion: 'v1', kind: 'Pod', metadata: base.metadata, spec: base.spec }],
    ['no resourceVersion', { ...base, metadata: { ...base.metadata, resourceVersion: undefined } }],
    ['no metadata', { apiVersion: 'v1', kind: 'Pod', status: base.status }],
  ];
  for (const [name, pod] of shapes) {
    void it(`gives what the full decode gives: ${name} (protobuf and JSON)`, () => {
      const pb = encodeObject(JSON.parse(JSON.stringify(pod)) as object);
      const want = full(decodeObject(pb));
      const got = readStatusAnswer(pb, true);
      assert.equal(got.resourceVersion, want.resourceVersion);
      assert.equal(got.hasStatus, want.status !== undefined);
      assert.deepEqual(got.status(), want.status);
      assert.equal(got.status(), got.status(), 'decoded once');
      const json = Buffer.from(JSON.stringify(pod));
      const wantJ = full(JSON.parse(json.toString()) as Record<string, unknown>);
      const gotJ = readStatusAnswer(json, false);
      assert.equal(gotJ.resourceVersion, wantJ.resourceVersion);
      assert.equal(gotJ.hasStatus, wantJ.status !== undefined);
      assert.deepEqual(gotJ.status(), wantJ.status);
    });
  }

  void it('refuses a truncated protobuf answer', () => {
    const pb = encodeObject(JSON.parse(JSON.stringify(base)) as object);
    assert.throws(() => readStatusAnswer(pb.subarray(0, pb.length - 5), true));
  });
});
