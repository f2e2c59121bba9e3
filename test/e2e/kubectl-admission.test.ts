/**
 * The default admission plugins that change or refuse objects, through kubectl against one server this test
 * starts (with --default-unreachable-toleration-seconds=200): DefaultTolerationSeconds, Priority
 * (PriorityClass), LimitRanger (LimitRange), DefaultStorageClass and PersistentVolumeClaimResize
 * (StorageClass) and TaintNodesByCondition.
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
  /** kubectl apply that must fail; returns stderr. */
  const refused = async (args: string[], input?: string) => {
    const r = await k(args, input);
    assert.notEqual(r.code, 0, `kubectl ${args.join(' ')} should have failed: ${r.stdout}`);
    return r.stderr;
  };


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

  describe('Priority', () => {
    it('serves the system PriorityClasses, made at start, in the table kubectl prints', async () => {
      const out = await ok(['get', 'priorityclasses']);
      const lines = out.trim().split('\n').map((l) => l.split(/\s+/));
      assert.deepEqual(lines[0], ['NAME', 'VALUE', 'GLOBAL-DEFAULT', 'AGE']);
      assert.deepEqual(lines.slice(1).map((l) => l.slice(0, 3)), [
        ['system-cluster-critical', '2000000000', 'false'],
        ['system-node-critical', '2000001000', 'false'],
      ]);
      assert.match(await ok(['describe', 'pc', 'system-node-critical']), /Value:\s+2000001000/);
      const pc = await json(['get', 'pc', 'system-node-critical']);
      assert.equal(pc.preemptionPolicy, 'PreemptLowerPriority');
      assert.equal(pc.description, 'Used for system critical pods that must not be moved from their current node.');
    });
    it('refuses to delete a system class and reserves the system- prefix', async () => {
      let err = await refused(['delete', 'pc', 'system-node-critical']);
      assert.match(err, /priorityclasses.scheduling.k8s.io "system-node-critical" is forbidden: this is a system priority class and cannot be deleted/);
      err = await refused(['create', 'priorityclass', 'system-mine', '--value=5']);
      assert.match(
        err,
        /PriorityClass.scheduling.k8s.io "system-mine" is invalid: metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: name system-mine is not a known system priority class/,
      );
      err = await refused(['create', 'priorityclass', 'too-high', '--value=1000000001']);
      assert.match(err, /value: Forbidden: maximum allowed value of a user defined priority is 1000000000/);
    });
    it('gives a pod without a class priority 0 when no class is the global default', async () => {
      await ok(['apply', '-f', '-'], pod('prio-none'));
      const p = await json(['get', 'pod', 'prio-none']);
      assert.equal(p.spec.priority, 0);
      assert.equal(p.spec.preemptionPolicy, 'PreemptLowerPriority');
      assert.equal(p.spec.priorityClassName, undefined);
    });
    it("takes the priority and preemption policy of the pod's class", async () => {
      await ok(['create', 'priorityclass', 'high', '--value=1000', '--preemption-policy=Never', '--description=important']);
      const table = await ok(['get', 'pc', 'high', '--no-headers']);
      assert.match(table, /^high\s+1000\s+false\s+/);
      await ok(['apply', '-f', '-'], pod('prio-high', '  priorityClassName: high\n'));
      const p = await json(['get', 'pod', 'prio-high']);
      assert.equal(p.spec.priority, 1000);
      assert.equal(p.spec.preemptionPolicy, 'Never');
      await ok(['apply', '-f', '-'], pod('prio-critical', '  priorityClassName: system-cluster-critical\n'));
      assert.equal((await json(['get', 'pod', 'prio-critical'])).spec.priority, 2000000000);
    });
    it('refuses a pod naming an unknown class, or a priority that differs from its class', async () => {
      let err = await refused(['apply', '-f', '-'], pod('prio-unknown', '  priorityClassName: nope\n'));
      assert.match(err, /pods "prio-unknown" is forbidden: no PriorityClass with name nope was found/);
      err = await refused(['apply', '-f', '-'], pod('prio-wrong', '  priorityClassName: high\n  priority: 7\n'));
      assert.match(
        err,
        /pods "prio-wrong" is forbidden: the integer value of priority \(7\) must not be provided in pod spec; priority admission controller computed 1000 from the given PriorityClass name/,
      );
    });
    it('uses the global default class for pods without one, and allows only one default', async () => {
      await ok(['create', 'priorityclass', 'everyone', '--value=10', '--global-default']);
      const err = await refused(['create', 'priorityclass', 'another', '--value=20', '--global-default']);
      assert.match(err, /priorityclasses.scheduling.k8s.io "another" is forbidden: PriorityClass everyone is already marked as default. Only one default can exist/);
      await ok(['apply', '-f', '-'], pod('prio-default'));
      const p = await json(['get', 'pod', 'prio-default']);
      assert.equal(p.spec.priorityClassName, 'everyone');
      assert.equal(p.spec.priority, 10);
      const err2 = await refused(['patch', 'pc', 'everyone', '--type=merge', '-p', '{"value":11}']);
      assert.match(err2, /value: Forbidden: may not be changed in an update./);
      await ok(['delete', 'pc', 'everyone']);
    });
  });

  describe('LimitRanger', () => {
    const LIMITS = `apiVersion: v1
kind: LimitRange
metadata: {name: defaults, namespace: limited}
spec:
  limits:
  - type: Container
    default: {cpu: 500m, memory: 128Mi}
    defaultRequest: {cpu: 100m}
    max: {cpu: "1"}
  - type: PersistentVolumeClaim
    max: {storage: 2Gi}
`;
    before(async () => {
      if (!present) return;
      await ok(['create', 'namespace', 'limited']);
      await ok(['apply', '-f', '-'], LIMITS);
    });

    it('serves LimitRanges (short name limits) with their defaults and the default table', async () => {
      const lr = await json(['get', 'limits', 'defaults', '-n', 'limited']);
      assert.deepEqual(lr.spec.limits[0], { type: 'Container', default: { cpu: '500m', memory: '128Mi' }, defaultRequest: { cpu: '100m', memory: '128Mi' }, max: { cpu: '1' } });
      const described = await ok(['describe', 'limits', 'defaults', '-n', 'limited']);
      assert.match(described, /Container\s+cpu\s+-\s+1\s+100m\s+500m\s+-/);
      const table = await ok(['get', 'limitranges', '-n', 'limited']);
      assert.match(table, /^NAME\s+CREATED AT\ndefaults\s+\d{4}-\d\d-\d\dT/);
      const err = await refused(['apply', '-f', '-'], 'apiVersion: v1\nkind: LimitRange\nmetadata: {name: bad, namespace: limited}\nspec:\n  limits:\n  - {type: Container, min: {cpu: "2"}, max: {cpu: "1"}}\n');
      assert.match(err, /LimitRange "bad" is invalid/);
      assert.match(err, /spec.limits\[0\].min\[cpu\]: Invalid value: "2": min value 2 is greater than max value 1/);
      // The default (from max) and the default request (from the default) are below min too.
      assert.match(err, /spec.limits\[0\].default\[cpu\]: Invalid value: "2": min value 2 is greater than default value 1/);
    });
    it('gives containers the default limits and requests they lack, and says so in an annotation', async () => {
      await ok(['apply', '-n', 'limited', '-f', '-'], pod('lr-defaults', '', '    resources:\n      requests: {memory: 64Mi}\n'));
      const p = await json(['get', 'pod', 'lr-defaults', '-n', 'limited']);
      assert.deepEqual(p.spec.containers[0].resources, { limits: { cpu: '500m', memory: '128Mi' }, requests: { cpu: '100m', memory: '64Mi' } });
      assert.equal(p.metadata.annotations['kubernetes.io/limit-ranger'], 'LimitRanger plugin set: cpu request for container app; cpu, memory limit for container app');
      assert.equal(p.status.qosClass, 'Burstable');
    });
    it('refuses a container over the max, and a claim over the storage max', async () => {
      let err = await refused(['apply', '-n', 'limited', '-f', '-'], pod('lr-big', '', '    resources:\n      limits: {cpu: "2"}\n'));
      assert.match(err, /pods "lr-big" is forbidden: maximum cpu usage per Container is 1, but limit is 2/);
      const pvc = (size: string) =>
        `apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: lr-claim}\nspec:\n  accessModes: [ReadWriteOnce]\n  resources: {requests: {storage: ${size}}}\n`;
      err = await refused(['apply', '-n', 'limited', '-f', '-'], pvc('5Gi'));
      assert.match(err, /persistentvolumeclaims "lr-claim" is forbidden: maximum storage usage per PersistentVolumeClaim is 2Gi, but request is 5Gi/);
      await ok(['apply', '-n', 'limited', '-f', '-'], pvc('1Gi'));
      // Pods elsewhere are not limited.
      await ok(['apply', '-f', '-'], pod('lr-elsewhere', '', '    resources:\n      limits: {cpu: "2"}\n'));
    });
  });

  describe('DefaultStorageClass and PersistentVolumeClaimResize', () => {
    const claim = (name: string, size: string, extra = '') =>
      `apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: ${name}}\nspec:\n${extra}  accessModes: [ReadWriteOnce]\n  resources: {requests: {storage: ${size}}}\n`;
    const klass = (name: string, extra = '', annotations = '') =>
      `apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata:\n  name: ${name}\n${annotations}provisioner: example.com/disk\n${extra}`;

    it('serves StorageClasses with their defaults and the table kubectl prints', async () => {
      await ok(['apply', '-f', '-'], klass('standard', '', '  annotations: {storageclass.kubernetes.io/is-default-class: "true"}\n'));
      await ok(['apply', '-f', '-'], klass('expandable', 'allowVolumeExpansion: true\nreclaimPolicy: Retain\nvolumeBindingMode: WaitForFirstConsumer\n'));
      const sc = await json(['get', 'sc', 'standard']);
      assert.equal(sc.reclaimPolicy, 'Delete');
      assert.equal(sc.volumeBindingMode, 'Immediate');
      const lines = (await ok(['get', 'storageclasses'])).trim().split('\n').map((l) => l.split(/\s{2,}/));
      assert.deepEqual(lines[0], ['NAME', 'PROVISIONER', 'RECLAIMPOLICY', 'VOLUMEBINDINGMODE', 'ALLOWVOLUMEEXPANSION', 'AGE']);
      assert.deepEqual(lines.slice(1).map((l) => l.slice(0, 5)), [
        ['expandable', 'example.com/disk', 'Retain', 'WaitForFirstConsumer', 'true'],
        ['standard (default)', 'example.com/disk', 'Delete', 'Immediate', 'false'],
      ]);
      // kubectl describe reads through its typed (protobuf) client.
      const described = await ok(['describe', 'sc', 'standard']);
      assert.match(described, /IsDefaultClass:\s+Yes/);
      assert.match(described, /Provisioner:\s+example.com\/disk/);
      const err = await refused(['patch', 'sc', 'standard', '--type=merge', '-p', '{"provisioner":"other.io/x"}']);
      assert.match(err, /provisioner: Forbidden: updates to provisioner are forbidden./);
    });
    it('gives a claim without a class the default class, and leaves an explicit one (even empty) alone', async () => {
      await ok(['apply', '-f', '-'], claim('sc-none', '1Gi'));
      assert.equal((await json(['get', 'pvc', 'sc-none'])).spec.storageClassName, 'standard');
      await ok(['apply', '-f', '-'], claim('sc-empty', '1Gi', '  storageClassName: ""\n'));
      assert.equal((await json(['get', 'pvc', 'sc-empty'])).spec.storageClassName, '');
      await ok(['apply', '-f', '-'], claim('sc-expandable', '1Gi', '  storageClassName: expandable\n'));
      assert.equal((await json(['get', 'pvc', 'sc-expandable'])).spec.storageClassName, 'expandable');
    });
    it('lets a bound claim grow only when its class allows volume expansion', async () => {
      const grow = (name: string) => k(['patch', 'pvc', name, '--type=merge', '-p', '{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}']);
      let r = await grow('sc-none');
      assert.notEqual(r.code, 0);
      // Validation (before validating admission) refuses it first for an unbound claim.
      assert.match(r.stderr, /PersistentVolumeClaim "sc-none" is invalid: spec: Forbidden: spec is immutable after creation except resources.requests for bound claims/);
      for (const name of ['sc-none', 'sc-expandable']) {
        await ok(['patch', 'pvc', name, '--subresource=status', '--type=merge', '-p', '{"status":{"phase":"Bound"}}']);
      }
      r = await grow('sc-none');
      assert.notEqual(r.code, 0);
      assert.match(
        r.stderr,
        /persistentvolumeclaims "sc-none" is forbidden: only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize/,
      );
      r = await grow('sc-expandable');
      assert.equal(r.code, 0, r.stderr);
      assert.equal((await json(['get', 'pvc', 'sc-expandable'])).spec.resources.requests.storage, '2Gi');
    });
  });

  describe('TaintNodesByCondition', () => {
    it('gives a new node the not-ready NoSchedule taint, once', async () => {
      // The create's answer is the node as admitted (the node lifecycle controller may lift the taint later).
      const created = JSON.parse(await ok(['create', '-o', 'json', '-f', '-'], 'apiVersion: v1\nkind: Node\nmetadata: {name: tainted-1}\n'));
      assert.deepEqual(created.spec.taints, [{ key: 'node.kubernetes.io/not-ready', effect: 'NoSchedule' }]);
      const own = 'apiVersion: v1\nkind: Node\nmetadata: {name: tainted-2}\nspec:\n  taints:\n  - {key: dedicated, value: gpu, effect: NoSchedule}\n  - {key: node.kubernetes.io/not-ready, effect: NoSchedule}\n';
      const second = JSON.parse(await ok(['create', '-o', 'json', '-f', '-'], own));
      assert.deepEqual(second.spec.taints, [
        { key: 'dedicated', value: 'gpu', effect: 'NoSchedule' },
        { key: 'node.kubernetes.io/not-ready', effect: 'NoSchedule' },
      ]);
    });
  });
});
