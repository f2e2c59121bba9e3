/**
 * ResourceQuota through kubectl against one server (the default admission plugins, and an
 * --admission-control-config-file whose ResourceQuota configuration limits PVC storage to namespaces with a
 * covering quota): the quota controller fills status.hard and status.used and gives back what deleted
 * objects used; the admission plugin refuses an object over the quota with Kubernetes' wording, asks pods
 * for the requests a quota limits, honours scopes, does not charge dry runs; the kind's validation and table.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { requireBinary } from '../helpers/binaries.js';
import { startCluster, type TestCluster } from '../helpers/cluster.js';
import { eventually } from '../helpers/eventually.js';

const present = requireBinary(undefined, 'kubectl') !== null;
if (!present && process.env.CI === 'true') throw new Error('kubectl is required under CI=true');
const skip = !present && 'kubectl not installed';

const pod = (name: string, resources = '', extra = '') => `apiVersion: v1
kind: Pod
metadata:
  name: ${name}
spec:
${extra}  containers:
  - name: app
    image: busybox:1.36
${resources}`;

describe('ResourceQuota through kubectl', { skip }, () => {
  let c: TestCluster;
  let dir = '';
  const ok = async (args: string[], input?: string) => {
    const r = await c.kubectl(args, input === undefined ? {} : { input });
    assert.equal(r.code, 0, `kubectl ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };
  const refused = async (args: string[], input?: string) => {
    const r = await c.kubectl(args, input === undefined ? {} : { input });
    assert.notEqual(r.code, 0, `kubectl ${args.join(' ')} should have failed: ${r.stdout}`);
    return r.stderr.trim();
  };
  const json = async (args: string[]) => JSON.parse(await ok([...args, '-o', 'json']));
  /** A namespace whose default ServiceAccount exists (pods need it). */
  const namespace = async (name: string) => {
    await ok(['create', 'namespace', name]);
    await eventually(`the default ServiceAccount of ${name}`, async () => (await c.kubectl(['get', 'serviceaccount', 'default', '-n', name])).code === 0);
  };
  /** The quota's status once the controller has counted it (status.hard equal to spec.hard). */
  const counted = (ns: string, name: string, check: (used: Record<string, string>) => boolean = () => true) =>
    eventually(`quota ${ns}/${name} counted`, async () => {
      const q = await json(['get', 'resourcequota', name, '-n', ns]);
      const ready = JSON.stringify(q.status?.hard) === JSON.stringify(q.spec.hard) && check(q.status?.used ?? {});
      return ready && (q.status.used as Record<string, string>);
    });

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'orch-quota-'));
    await writeFile(
      join(dir, 'quota.yaml'),
      'apiVersion: apiserver.config.k8s.io/v1\nkind: ResourceQuotaConfiguration\nlimitedResources:\n- resource: persistentvolumeclaims\n  matchContains: [requests.storage]\n',
    );
    await writeFile(
      join(dir, 'admission.yaml'),
      'apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: ResourceQuota\n  path: quota.yaml\n',
    );
    c = await startCluster([`--admission-control-config-file=${join(dir, 'admission.yaml')}`]);
  });
  after(async () => {
    await c?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('refuses the pod over a count quota with Kubernetes’ message, keeps status.used and gives back what a deleted pod used', async () => {
    await namespace('qa');
    await ok(['create', 'quota', 'objects', '-n', 'qa', '--hard=pods=1,count/secrets=1']);
    assert.deepEqual(await counted('qa', 'objects'), { 'count/secrets': '0', pods: '0' });
    await ok(['apply', '-n', 'qa', '-f', '-'], pod('p1'));
    const err = await refused(['apply', '-n', 'qa', '-f', '-'], pod('p2'));
    assert.equal(
      err,
      'Error from server (Forbidden): error when creating "STDIN": pods "p2" is forbidden: exceeded quota: objects, requested: pods=1, used: pods=1, limited: pods=1',
    );
    const q = await json(['get', 'quota', 'objects', '-n', 'qa']);
    assert.deepEqual(q.status.used, { 'count/secrets': '0', pods: '1' });
    const table = await ok(['get', 'quota', 'objects', '-n', 'qa']);
    assert.match(table, /^NAME\s+AGE\s+REQUEST\s+LIMIT\n/);
    assert.match(table, /\nobjects\s+\S+\s+count\/secrets: 0\/1, pods: 1\/1\s*\n/);

    await ok(['create', 'secret', 'generic', 's1', '-n', 'qa']);
    assert.match(
      await refused(['create', 'secret', 'generic', 's2', '-n', 'qa']),
      /secrets "s2" is forbidden: exceeded quota: objects, requested: count\/secrets=1, used: count\/secrets=1, limited: count\/secrets=1$/,
    );
    // Deleting gives the usage back (the controller's replenishment), and the next pod fits.
    await ok(['delete', 'pod', 'p1', '-n', 'qa', '--grace-period=0', '--force']);
    await counted('qa', 'objects', (used) => used['pods'] === '0');
    await ok(['apply', '-n', 'qa', '-f', '-'], pod('p2'));
    // A dry run is checked but not charged.
    assert.match(await refused(['apply', '-n', 'qa', '--dry-run=server', '-f', '-'], pod('p3')), /exceeded quota: objects, requested: pods=1, used: pods=1, limited: pods=1/);
    await ok(['delete', 'pod', 'p2', '-n', 'qa', '--grace-period=0', '--force']);
    await counted('qa', 'objects', (used) => used['pods'] === '0');
    await ok(['apply', '-n', 'qa', '--dry-run=server', '-f', '-'], pod('p3'));
    assert.equal((await json(['get', 'quota', 'objects', '-n', 'qa'])).status.used.pods, '0');
  });

  it('asks pods for the requests and limits a compute quota limits, and sums them', async () => {
    await namespace('qc');
    await ok(['create', 'quota', 'compute', '-n', 'qc', '--hard=requests.cpu=1,limits.memory=1Gi']);
    await counted('qc', 'compute');
    assert.equal(
      await refused(['apply', '-n', 'qc', '-f', '-'], pod('bare')),
      'Error from server (Forbidden): error when creating "STDIN": pods "bare" is forbidden: failed quota: compute: must specify limits.memory for: app; requests.cpu for: app',
    );
    const sized = '    resources:\n      requests: {cpu: 600m}\n      limits: {memory: 512Mi}\n';
    await ok(['apply', '-n', 'qc', '-f', '-'], pod('sized1', sized));
    assert.deepEqual((await json(['get', 'quota', 'compute', '-n', 'qc'])).status.used, { 'limits.memory': '512Mi', 'requests.cpu': '600m' });
    assert.match(
      await refused(['apply', '-n', 'qc', '-f', '-'], pod('sized2', sized)),
      /pods "sized2" is forbidden: exceeded quota: compute, requested: requests.cpu=600m, used: requests.cpu=600m, limited: requests.cpu=1$/,
    );
    const table = await ok(['get', 'quota', 'compute', '-n', 'qc']);
    assert.match(table, /\ncompute\s+\S+\s+requests.cpu: 600m\/1\s+limits.memory: 512Mi\/1Gi\s*\n/);
  });

  it('counts only the pods in a quota’s scopes', async () => {
    await namespace('qs');
    await ok(['create', 'quota', 'besteffort', '-n', 'qs', '--hard=pods=1', '--scopes=BestEffort']);
    await counted('qs', 'besteffort');
    await ok(['apply', '-n', 'qs', '-f', '-'], pod('be1'));
    assert.match(await refused(['apply', '-n', 'qs', '-f', '-'], pod('be2')), /exceeded quota: besteffort, requested: pods=1, used: pods=1, limited: pods=1$/);
    // Not best effort: outside the quota's scope.
    await ok(['apply', '-n', 'qs', '-f', '-'], pod('burstable', '    resources:\n      requests: {cpu: 10m}\n'));
    assert.equal((await json(['get', 'quota', 'besteffort', '-n', 'qs'])).status.used.pods, '1');
    // A scopeSelector: no pod may use cross-namespace pod affinity.
    const crossNs = JSON.stringify({
      apiVersion: 'v1',
      kind: 'ResourceQuota',
      metadata: { name: 'no-cross' },
      spec: { hard: { pods: '0' }, scopeSelector: { matchExpressions: [{ scopeName: 'CrossNamespacePodAffinity', operator: 'Exists' }] } },
    });
    await ok(['apply', '-n', 'qs', '-f', '-'], crossNs);
    await counted('qs', 'no-cross');
    const affinity = '  affinity:\n    podAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n      - topologyKey: kubernetes.io/hostname\n        namespaces: [other]\n        labelSelector: {matchLabels: {a: b}}\n';
    const resources = '    resources:\n      requests: {cpu: 10m}\n';
    assert.match(await refused(['apply', '-n', 'qs', '-f', '-'], pod('cross', resources, affinity)), /exceeded quota: no-cross, requested: pods=1, used: pods=0, limited: pods=0$/);
    await ok(['apply', '-n', 'qs', '-f', '-'], pod('local', resources));
  });

  it('counts services by type and claims by storage, and the configuration limits storage to namespaces with a quota', async () => {
    await namespace('qv');
    const claim = (name: string, size: string) =>
      JSON.stringify({ apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: size } } } });
    assert.match(
      await refused(['apply', '-n', 'qv', '-f', '-'], claim('c0', '1Gi')),
      /persistentvolumeclaims "c0" is forbidden: insufficient quota to consume: requests.storage$/,
    );
    await ok(['create', 'quota', 'storage', '-n', 'qv', '--hard=requests.storage=3Gi,persistentvolumeclaims=5,services.nodeports=0']);
    await counted('qv', 'storage');
    await ok(['apply', '-n', 'qv', '-f', '-'], claim('c1', '2Gi'));
    assert.match(
      await refused(['apply', '-n', 'qv', '-f', '-'], claim('c2', '2Gi')),
      /exceeded quota: storage, requested: requests.storage=2Gi, used: requests.storage=2Gi, limited: requests.storage=3Gi$/,
    );
    assert.deepEqual((await json(['get', 'quota', 'storage', '-n', 'qv'])).status.used, { persistentvolumeclaims: '1', 'requests.storage': '2Gi', 'services.nodeports': '0' });
    await ok(['create', 'service', 'clusterip', 'inside', '-n', 'qv', '--tcp=80:80']);
    assert.match(
      await refused(['create', 'service', 'nodeport', 'outside', '-n', 'qv', '--tcp=80:80']),
      /exceeded quota: storage, requested: services.nodeports=1, used: services.nodeports=0, limited: services.nodeports=0$/,
    );
  });

  it('counts objects of any kind by count/<resource>.<group>, and kubectl describe shows the quota', async () => {
    await namespace('ql');
    await ok(['create', 'quota', 'leases', '-n', 'ql', '--hard=count/leases.coordination.k8s.io=1']);
    await counted('ql', 'leases');
    const lease = (name: string) => JSON.stringify({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name }, spec: { holderIdentity: 'x' } });
    await ok(['apply', '-n', 'ql', '-f', '-'], lease('l1'));
    assert.match(
      await refused(['apply', '-n', 'ql', '-f', '-'], lease('l2')),
      /leases.coordination.k8s.io "l2" is forbidden: exceeded quota: leases, requested: count\/leases.coordination.k8s.io=1, used: count\/leases.coordination.k8s.io=1, limited: count\/leases.coordination.k8s.io=1$/,
    );
    const described = await ok(['describe', 'quota', 'leases', '-n', 'ql']);
    assert.match(described, /Resource\s+Used\s+Hard\n\s*--------\s+----\s+----\n\s*count\/leases.coordination.k8s.io\s+1\s+1/);
    // Deleting the lease gives its count back (the controller watches what its quotas count).
    await ok(['delete', 'lease', 'l1', '-n', 'ql']);
    await counted('ql', 'leases', (used) => used['count/leases.coordination.k8s.io'] === '0');
    await ok(['apply', '-n', 'ql', '-f', '-'], lease('l2'));
  });

  it('validates quotas as Kubernetes', async () => {
    const err = await refused(['create', 'quota', 'bad', '-n', 'default', '--hard=foo=1,pods=-1,count/things=0.5']);
    assert.match(err, /spec.hard\[foo\]: Invalid value: "foo": must be a standard resource type or fully qualified/);
    assert.match(err, /spec.hard\[pods\]: Invalid value: "-1": must be greater than or equal to 0/);
    assert.match(err, /spec.hard\[count\/things\]: Invalid value: "500m": must be an integer/);
    const scoped = await refused(['create', 'quota', 'bad', '-n', 'default', '--hard=services=1', '--scopes=BestEffort']);
    assert.match(scoped, /spec.scopes: Invalid value: \[\]core.ResourceQuotaScope\{"BestEffort"\}: unsupported scope applied to resource/);
  });
});
