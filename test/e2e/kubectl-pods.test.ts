/**
 * Pods through kubectl (the one on PATH, 1.27 and 1.33) against a server this test starts: create from YAML,
 * the tables (default and wide), the status subresource, field selectors on spec.nodeName (list and watch),
 * graceful deletion (the pod stays with a deletionTimestamp until a delete with grace period 0, or
 * --force --grace-period=0), binding, eviction, logs from a fake node agent, events in describe and get,
 * and explain.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { requireBinary } from '../helpers/binaries.js';
import { kubectlPath, startCluster, type TestCluster } from '../helpers/cluster.js';

const present = requireBinary(undefined, 'kubectl') !== null;
if (!present && process.env.CI === 'true') throw new Error('kubectl is required under CI=true');
const skip = !present && 'kubectl not installed';

const POD_YAML = (name: string, node?: string) => `apiVersion: v1
kind: Pod
metadata:
  name: ${name}
  labels: {app: web}
spec:
${node ? `  nodeName: ${node}\n` : ''}  containers:
  - name: app
    image: busybox:1.36
    command: [sh, -c, 'echo hello; sleep 3600']
    ports:
    - containerPort: 8080
    resources:
      limits: {cpu: 100m, memory: 64Mi}
`;

describe('kubectl: pods', () => {
  let c: TestCluster;
  const k = (args: string[], opts: { input?: string; version?: string } = {}) => c.kubectl(args, opts);
  const ok = async (args: string[], opts: { input?: string; version?: string } = {}) => {
    const r = await k(args, opts);
    assert.equal(r.code, 0, `kubectl ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };
  const json = async (args: string[]) => JSON.parse(await ok([...args, '-o', 'json']));

  before(async () => {
    if (present) c = await startCluster();
  });
  after(async () => c?.stop());

  it('create from YAML: defaults, QoS, tables, status subresource', { skip }, async () => {
    assert.match(await ok(['create', '-f', '-'], { input: POD_YAML('web', 'n1') }), /pod\/web created/);
    const pod = await json(['get', 'pod', 'web']);
    assert.equal(pod.status.phase, 'Pending');
    assert.equal(pod.status.qosClass, 'Guaranteed');
    assert.equal(pod.spec.restartPolicy, 'Always');
    assert.equal(pod.spec.dnsPolicy, 'ClusterFirst');
    assert.equal(pod.spec.schedulerName, 'default-scheduler');
    assert.equal(pod.spec.terminationGracePeriodSeconds, 30);
    assert.equal(pod.spec.enableServiceLinks, true);
    assert.equal(pod.spec.priority, 0);
    assert.deepEqual(pod.spec.securityContext, {});
    const ctr = pod.spec.containers[0];
    assert.equal(ctr.imagePullPolicy, 'IfNotPresent');
    assert.equal(ctr.terminationMessagePath, '/dev/termination-log');
    assert.equal(ctr.terminationMessagePolicy, 'File');
    assert.equal(ctr.ports[0].protocol, 'TCP');
    assert.deepEqual(ctr.resources.requests, { cpu: '100m', memory: '64Mi' });

    assert.match(await ok(['get', 'pods']), /^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\nweb\s+0\/1\s+Pending\s+0\s+\S+\n$/);
    assert.match(
      await ok(['get', 'po', '-o', 'wide']),
      /^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\s+IP\s+NODE\s+NOMINATED NODE\s+READINESS GATES\nweb\s+0\/1\s+Pending\s+0\s+\S+\s+<none>\s+n1\s+<none>\s+<none>\n$/,
    );

    const now = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
    const status = {
      status: {
        phase: 'Running',
        podIP: '10.1.2.3',
        hostIP: '127.0.0.1',
        startTime: now,
        conditions: [{ type: 'Ready', status: 'True' }],
        containerStatuses: [
          { name: 'app', ready: true, restartCount: 2, image: 'busybox:1.36', imageID: '', state: { running: { startedAt: now } }, lastState: { terminated: { exitCode: 1, finishedAt: now } } },
        ],
      },
    };
    await ok(['patch', 'pod', 'web', '--subresource=status', '--type=merge', '-p', JSON.stringify(status)]);
    const running = await json(['get', 'pod', 'web']);
    assert.equal(running.status.phase, 'Running');
    assert.deepEqual(running.status.podIPs, [{ ip: '10.1.2.3' }]);
    assert.equal(running.status.qosClass, 'Guaranteed', 'a status patch keeps what it does not name');
    assert.match(await ok(['get', 'pods', '-o', 'wide']), /\nweb\s+1\/1\s+Running\s+2 \(\d+s ago\)\s+\S+\s+10\.1\.2\.3\s+n1\s+<none>\s+<none>\n$/);

    // The main resource keeps status; the status subresource cannot move the pod to another node.
    await ok(['patch', 'pod', 'web', '--type=merge', '-p', '{"status":{"phase":"Failed"}}']);
    assert.equal((await json(['get', 'pod', 'web'])).status.phase, 'Running');
    await ok(['patch', 'pod', 'web', '--subresource=status', '--type=merge', '-p', '{"spec":{"nodeName":"n2"}}']);
    assert.equal((await json(['get', 'pod', 'web'])).spec.nodeName, 'n1');
  });

  it('validation and the update rules', { skip }, async () => {
    const bad = await k(['create', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'bad' },
        spec: {
          restartPolicy: 'Sometimes',
          containers: [
            { name: 'a', image: 'x', volumeMounts: [{ name: 'missing', mountPath: '/data' }] },
            { name: 'a', resources: { requests: { cpu: '2' }, limits: { cpu: '1' } } },
          ],
        },
      }),
    });
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /The Pod "bad" is invalid: /);
    assert.match(bad.stderr, /spec\.containers\[0\]\.volumeMounts\[0\]\.name: Not found: "missing"/);
    assert.match(bad.stderr, /spec\.containers\[1\]\.name: Duplicate value: "a"/);
    assert.match(bad.stderr, /spec\.containers\[1\]\.image: Required value/);
    assert.match(bad.stderr, /spec\.containers\[1\]\.resources\.requests: Invalid value: "2": must be less than or equal to cpu limit/);
    assert.match(bad.stderr, /spec\.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"/);

    await ok(['create', '-f', '-'], { input: POD_YAML('upd') });
    // The image may change; other fields may not.
    await ok(['set', 'image', 'pod/upd', 'app=busybox:1.37']);
    assert.equal((await json(['get', 'pod', 'upd'])).spec.containers[0].image, 'busybox:1.37');
    const forbidden = await k(['patch', 'pod', 'upd', '--type=json', '-p', '[{"op":"replace","path":"/spec/containers/0/command","value":["true"]}]']);
    assert.notEqual(forbidden.code, 0);
    assert.match(forbidden.stderr, /The Pod "upd" is invalid: spec: Forbidden: pod updates may not change fields other than `spec\.containers\[\*\]\.image`, `spec\.initContainers\[\*\]\.image`, `spec\.activeDeadlineSeconds`, `spec\.tolerations` \(only additions to existing tolerations\) or `spec\.terminationGracePeriodSeconds`/);
    await ok(['delete', 'pod', 'upd']);
  });

  it('field selectors on spec.nodeName: list and watch across namespaces', { skip }, async () => {
    await ok(['create', 'namespace', 'other']);
    await ok(['create', '-n', 'other', '-f', '-'], { input: POD_YAML('o1', 'n2') });
    await ok(['create', '-f', '-'], { input: POD_YAML('d2', 'n2') });
    assert.deepEqual(
      (await ok(['get', 'pods', '-A', '--field-selector', 'spec.nodeName=n2', '-o', 'jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name} {end}'])).trim().split(' ').sort(),
      ['default/d2', 'other/o1'],
    );
    assert.equal((await ok(['get', 'pods', '--field-selector', 'spec.nodeName=n1,status.phase=Running', '-o', 'name'])).trim(), 'pod/web');
    const unsupported = await k(['get', 'pods', '--field-selector', 'spec.hostname=x']);
    assert.notEqual(unsupported.code, 0);
    assert.match(unsupported.stderr, /field label not supported: spec\.hostname/);

    // A watch by node sees pods bound to that node only.
    const watch = c.request('GET', '/api/v1/pods?watch=true&timeoutSeconds=2&fieldSelector=' + encodeURIComponent('spec.nodeName=n2'));
    const reply = await watch;
    const names = reply.text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; object: { metadata: { name: string } } })
      .map((e) => `${e.type} ${e.object.metadata.name}`)
      .sort();
    assert.deepEqual(names, ['ADDED d2', 'ADDED o1']);
    await ok(['delete', 'pod', 'd2', '--wait=false']);
    await ok(['delete', 'namespace', 'other', '--wait=false']);
  });

  it('graceful deletion: stays with a deletionTimestamp until grace 0; --force deletes at once', { skip }, async () => {
    await ok(['create', '-f', '-'], { input: POD_YAML('g1', 'n1') });
    assert.match(await ok(['delete', 'pod', 'g1', '--wait=false', '--grace-period=60']), /pod "g1" deleted/);
    const marked = await json(['get', 'pod', 'g1']);
    assert.equal(marked.metadata.deletionGracePeriodSeconds, 60);
    assert.ok(Date.parse(marked.metadata.deletionTimestamp) > Date.now() + 50_000, 'deletionTimestamp is now + grace');
    assert.match(await ok(['get', 'pods', 'g1']), /\ng1\s+0\/1\s+Terminating\s+/);
    // A longer grace period does not extend it; a shorter one shortens it.
    const same = await c.request('DELETE', '/api/v1/namespaces/default/pods/g1', { body: { gracePeriodSeconds: 90 } });
    assert.equal(same.status, 200);
    assert.equal(same.json.metadata.deletionGracePeriodSeconds, 60);
    const shorter = await c.request('DELETE', '/api/v1/namespaces/default/pods/g1', { body: { gracePeriodSeconds: 10 } });
    assert.equal(shorter.json.metadata.deletionGracePeriodSeconds, 10);
    // The agent's final delete.
    const gone = await c.request('DELETE', '/api/v1/namespaces/default/pods/g1', { body: { gracePeriodSeconds: 0, preconditions: { uid: marked.metadata.uid } } });
    assert.equal(gone.status, 200);
    assert.equal((await c.request('GET', '/api/v1/namespaces/default/pods/g1')).status, 404);

    await ok(['create', '-f', '-'], { input: POD_YAML('g2', 'n1') });
    const forced = await k(['delete', 'pod', 'g2', '--force', '--grace-period=0']);
    assert.equal(forced.code, 0, forced.stderr);
    assert.match(forced.stdout, /pod "g2" force deleted/);
    assert.equal((await c.request('GET', '/api/v1/namespaces/default/pods/g2')).status, 404);

    // An unscheduled pod is deleted at once.
    await ok(['create', '-f', '-'], { input: POD_YAML('g3') });
    await ok(['delete', 'pod', 'g3', '--wait=false']);
    assert.equal((await c.request('GET', '/api/v1/namespaces/default/pods/g3')).status, 404);
  });

  for (const version of ['1.27', '1.33']) {
    it(`kubectl ${version}: create, get, describe, delete`, { skip: skip || (kubectlPath(version) === null && `kubectl ${version} not installed`) }, async () => {
      const name = `v${version.replace('.', '-')}`;
      await ok(['create', '-f', '-'], { input: POD_YAML(name), version });
      assert.match(await ok(['get', 'pod', name], { version }), new RegExp(`\\n${name}\\s+0/1\\s+Pending\\s+0\\s+`));
      const described = await ok(['describe', 'pod', name], { version });
      assert.match(described, /Status:\s+Pending/);
      assert.match(described, /QoS Class:\s+Guaranteed/);
      assert.match(described, /Image:\s+busybox:1\.36/);
      await ok(['delete', 'pod', name], { version });
    });
  }
});
