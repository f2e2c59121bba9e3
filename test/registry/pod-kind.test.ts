/**
 * Pod: Kubernetes 1.23's defaulting, QoS classes, validation messages, what updates may change, the status
 * subresource, the printPod cells, and graceful deletion through the generic store.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { openSqlite } from '../../src/storage/sqlite.js';
import type { KV } from '../../src/storage/interface.js';
import { ResourceStore } from '../../src/registry/store.js';
import type { KObject, StrategyContext } from '../../src/registry/kind.js';
import { podKind } from '../../src/registry/kinds/index.js';
import { imageTag } from '../../src/registry/kinds/pod/defaults.js';
import { podGracePeriod, podQOSClass } from '../../src/registry/kinds/pod/index.js';
import { summarizePod } from '../../src/registry/kinds/pod/table.js';
import { isStatusError, type StatusError } from '../../src/registry/errors.js';

const CTX: StrategyContext = { featureGates: {}, namespace: 'default', subresource: '' };

function pod(spec: Record<string, unknown>, extra: KObject = {}): KObject {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'default' }, spec, ...extra };
}

function created(obj: KObject): KObject {
  podKind.strategy.prepareForCreate!(obj, CTX);
  podKind.strategy.default!(obj, CTX);
  return obj;
}

const createErrors = (obj: KObject, ctx = CTX) => podKind.strategy.validate(created(obj), ctx).map((e) => e.toString());

describe('pod defaulting', () => {
  it('fills the pod spec, containers, probes and volumes as SetDefaults_* do', () => {
    const p = created(
      pod({
        containers: [
          {
            name: 'a',
            image: 'nginx',
            ports: [{ containerPort: 80 }],
            livenessProbe: { httpGet: { port: 80 } },
            env: [{ name: 'N', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }],
            resources: { limits: { cpu: '1' }, requests: { memory: '1Gi' } },
          },
        ],
        volumes: [{ name: 'v' }, { name: 's', secret: { secretName: 'x' } }],
      }),
    );
    const spec = p.spec;
    assert.equal(spec.restartPolicy, 'Always');
    assert.equal(spec.dnsPolicy, 'ClusterFirst');
    assert.equal(spec.schedulerName, 'default-scheduler');
    assert.equal(spec.terminationGracePeriodSeconds, 30);
    assert.equal(spec.enableServiceLinks, true);
    // The Priority admission plugin, not the strategy, sets these.
    assert.equal(spec.priority, undefined);
    assert.equal(spec.preemptionPolicy, undefined);
    const c = spec.containers[0];
    assert.equal(c.imagePullPolicy, 'Always');
    assert.deepEqual(c.ports, [{ containerPort: 80, protocol: 'TCP' }]);
    assert.deepEqual(c.livenessProbe, { httpGet: { port: 80, path: '/', scheme: 'HTTP' }, timeoutSeconds: 1, periodSeconds: 10, successThreshold: 1, failureThreshold: 3 });
    assert.equal(c.env[0].valueFrom.fieldRef.apiVersion, 'v1');
    assert.deepEqual(c.resources.requests, { memory: '1Gi', cpu: '1' });
    assert.deepEqual(spec.volumes, [
      { name: 'v', emptyDir: {} },
      { name: 's', secret: { secretName: 'x', defaultMode: 420 } },
    ]);
    assert.deepEqual(p.status, { phase: 'Pending', qosClass: 'Burstable' });
  });

  it('pull policy from the image tag', () => {
    assert.equal(imageTag('nginx'), 'latest');
    assert.equal(imageTag('nginx:latest'), 'latest');
    assert.equal(imageTag('nginx:1.25'), '1.25');
    assert.equal(imageTag('localhost:5000/nginx'), 'latest');
    assert.equal(imageTag('localhost:5000/nginx:2'), '2');
    assert.equal(imageTag('nginx@sha256:abc'), '');
    const p = created(pod({ containers: [{ name: 'a', image: 'nginx:1.25' }] }));
    assert.equal(p.spec.containers[0].imagePullPolicy, 'IfNotPresent');
  });

  it('QoS classes as qos.GetPodQOS computes them', () => {
    const withRes = (resources: unknown) => pod({ containers: [{ name: 'a', image: 'x', resources }] });
    assert.equal(podQOSClass(withRes(undefined)), 'BestEffort');
    assert.equal(podQOSClass(withRes({ limits: { cpu: '1', memory: '1Gi' }, requests: { cpu: '1', memory: '1Gi' } })), 'Guaranteed');
    assert.equal(podQOSClass(withRes({ requests: { cpu: '100m' } })), 'Burstable');
    assert.equal(podQOSClass(withRes({ limits: { cpu: '1', memory: '1Gi' }, requests: { cpu: '500m', memory: '1Gi' } })), 'Burstable');
    // Limits only: requests default to them, so the pod is Guaranteed.
    assert.equal(created(withRes({ limits: { cpu: '1', memory: '1Gi' } })).status.qosClass, 'Guaranteed');
  });
});

describe('pod validation', () => {
  it('reports Kubernetes messages and paths', () => {
    const errs = createErrors(
      pod({
        restartPolicy: 'Sometimes',
        dnsPolicy: 'Nope',
        activeDeadlineSeconds: 0,
        nodeName: 'Bad_Node',
        tolerations: [{ operator: 'Equal', value: 'x' }],
        volumes: [{ name: 'v', emptyDir: {} }, { name: 'v', emptyDir: {} }],
        containers: [
          {
            name: 'Web',
            image: 'x',
            ports: [{ containerPort: 70000, name: 'http' }, { containerPort: 80, name: 'http', protocol: 'ICMP' }],
            env: [{ name: '1abc' }, { name: 'A', value: 'x', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } }],
            volumeMounts: [{ name: 'nope', mountPath: '/a' }],
            resources: { limits: { cpu: '1' }, requests: { cpu: '2', widgets: '1' } },
            securityContext: { privileged: true, runAsUser: -1 },
          },
        ],
      }),
    );
    const expected = [
      'spec.volumes[1].name: Duplicate value: "v"',
      'spec.containers[0].name: Invalid value: "Web": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or \'-\', and must start and end with an alphanumeric character (e.g. \'my-name\',  or \'123-abc\', regex used for validation is \'[a-z0-9]([-a-z0-9]*[a-z0-9])?\')',
      'spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive',
      'spec.containers[0].ports[1].name: Duplicate value: "http"',
      'spec.containers[0].ports[1].protocol: Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"',
      'spec.containers[0].env[0].name: Invalid value: "1abc": a valid environment variable name must consist of alphabetic characters, digits, \'_\', \'-\', or \'.\', and must not start with a digit (e.g. \'my.env-name\',  or \'MY_ENV.NAME\',  or \'MyEnvName1\', regex used for validation is \'[-._a-zA-Z][-._a-zA-Z0-9]*\')',
      'spec.containers[0].env[1].valueFrom: Invalid value: "": may not be specified when `value` is not empty',
      'spec.containers[0].volumeMounts[0].name: Not found: "nope"',
      'spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal to cpu limit',
      'spec.containers[0].resources.requests[widgets]: Invalid value: "widgets": must be a standard resource for containers',
      'spec.containers[0].securityContext.privileged: Forbidden: disallowed by cluster policy',
      'spec.containers[0].securityContext.runAsUser: Invalid value: -1: must be between 0 and 2147483647, inclusive',
      'spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"',
      'spec.dnsPolicy: Unsupported value: "Nope": supported values: "ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"',
      'spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, inclusive',
      'spec.tolerations[0].operator: Invalid value: "Equal": operator must be Exists when `key` is empty, which means "match all values and all keys"',
    ];
    for (const e of expected) assert.ok(errs.includes(e), `missing ${e}\nin:\n${errs.join('\n')}`);
    assert.ok(errs.some((e) => e.startsWith('spec.nodeName: Invalid value: "Bad_Node"')));
  });

  it('needs a container; privileged containers follow --allow-privileged', () => {
    assert.deepEqual(createErrors(pod({ containers: [] })), ['spec.containers: Required value']);
    const priv = () => pod({ containers: [{ name: 'a', image: 'x', securityContext: { privileged: true } }] });
    assert.deepEqual(createErrors(priv(), { ...CTX, settings: { allowPrivileged: true } }), []);
    assert.equal(createErrors(priv()).length, 1);
  });

  it('updates may change images, shorten activeDeadlineSeconds and add tolerations only', () => {
    const old = created(pod({ containers: [{ name: 'a', image: 'x:1' }], activeDeadlineSeconds: 100, tolerations: [{ key: 'k', operator: 'Exists' }] }));
    const next = (f: (p: KObject) => void) => {
      const p = structuredClone(old);
      f(p);
      podKind.strategy.prepareForUpdate!(p, old, CTX);
      podKind.strategy.default!(p, CTX);
      return podKind.strategy.validateUpdate(p, old, CTX).map((e) => e.toString());
    };
    assert.deepEqual(next((p) => (p.spec.containers[0].image = 'x:2')), []);
    assert.deepEqual(next((p) => (p.spec.activeDeadlineSeconds = 50)), []);
    assert.deepEqual(next((p) => p.spec.tolerations.push({ key: 'j', operator: 'Exists' })), []);
    assert.deepEqual(next((p) => (p.spec.activeDeadlineSeconds = 200)), ['spec.activeDeadlineSeconds: Invalid value: 200: must be less than or equal to previous value']);
    assert.deepEqual(next((p) => (p.spec.tolerations = [])), ['spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds']);
    assert.deepEqual(next((p) => p.spec.containers.push({ name: 'b', image: 'y' })), ['spec.containers: Forbidden: pod updates may not add or remove containers']);
    const changed = next((p) => (p.spec.restartPolicy = 'Never'));
    assert.equal(changed.length, 1);
    assert.match(changed[0]!, /^spec: Forbidden: pod updates may not change fields other than `spec\.containers\[\*\]\.image`/);
    assert.match(changed[0]!, /spec\.restartPolicy/);
    // Status is kept by the main resource.
    const p = structuredClone(old);
    p.status = { phase: 'Failed' };
    podKind.strategy.prepareForUpdate!(p, old, CTX);
    assert.equal(p.status.phase, 'Pending');
  });

  it('the status subresource keeps spec and checks transitions', () => {
    const old = created(pod({ nodeName: 'n', restartPolicy: 'Never', containers: [{ name: 'a', image: 'x' }] }));
    old.status.containerStatuses = [{ name: 'a', state: { terminated: { exitCode: 0 } } }];
    const sub = podKind.subresources!.status!;
    const p = structuredClone(old);
    p.spec.nodeName = 'other';
    p.status.containerStatuses = [{ name: 'a', state: { running: {} } }];
    p.status.podIPs = [{ ip: '10.0.0.1' }, { ip: '10.0.0.2' }];
    sub.prepareForUpdate(p, old, { ...CTX, subresource: 'status' });
    assert.equal(p.spec.nodeName, 'n');
    assert.deepEqual(sub.validateUpdate(p, old, CTX).map((e) => e.toString()), [
      'status.containerStatuses[0].state: Forbidden: may not be transitioned to non-terminated state',
      'status.podIPs: Invalid value: []string{"10.0.0.1", "10.0.0.2"}: may specify no more than one IP for each IP family',
    ]);
  });
});

describe('pod table', () => {
  const now = Date.parse('2024-01-01T00:10:00Z');
  it('STATUS as printPod computes it', () => {
    const base = (status: Record<string, unknown>, spec: Record<string, unknown> = {}) =>
      summarizePod(pod({ containers: [{ name: 'a' }], ...spec }, { status }), now);
    assert.deepEqual(base({ phase: 'Pending' }), { ready: '0/1', status: 'Pending', restarts: '0' });
    assert.equal(base({ phase: 'Pending', initContainerStatuses: [{ state: { waiting: { reason: 'PodInitializing' } } }] }, { initContainers: [{ name: 'i' }] }).status, 'Init:0/1');
    assert.equal(base({ phase: 'Pending', initContainerStatuses: [{ state: { terminated: { exitCode: 2 } } }] }, { initContainers: [{ name: 'i' }] }).status, 'Init:ExitCode:2');
    assert.equal(base({ phase: 'Running', containerStatuses: [{ state: { waiting: { reason: 'CrashLoopBackOff' } }, restartCount: 3, lastState: { terminated: { finishedAt: '2024-01-01T00:05:00Z' } } }] }).restarts, '3 (5m ago)');
    assert.equal(base({ phase: 'Running', containerStatuses: [{ state: { waiting: { reason: 'CrashLoopBackOff' } } }] }).status, 'CrashLoopBackOff');
    assert.equal(base({ phase: 'Succeeded', containerStatuses: [{ state: { terminated: { exitCode: 0, reason: 'Completed' } } }] }).status, 'Completed');
    assert.deepEqual(base({ phase: 'Running', containerStatuses: [{ ready: true, state: { running: {} } }] }), { ready: '1/1', status: 'Running', restarts: '0' });
    const deleting = pod({ containers: [{ name: 'a' }] }, { status: { phase: 'Running' } });
    deleting.metadata!.deletionTimestamp = '2024-01-01T00:00:00Z';
    assert.equal(summarizePod(deleting, now).status, 'Terminating');
  });
});

describe('pod graceful deletion', () => {
  let kv: KV;
  let store: ResourceStore;
  let clock = Date.parse('2024-01-01T00:00:00Z');
  const scope = { namespace: 'default' };
  before(async () => {
    kv = await openSqlite({ path: ':memory:' });
    store = new ResourceStore(podKind, { kv, prefix: '/registry', featureGates: {}, now: () => new Date(clock) });
  });
  after(async () => kv.close());

  it('grace periods as CheckGracefulDelete gives them', () => {
    const bound = pod({ nodeName: 'n', terminationGracePeriodSeconds: 45, containers: [] });
    assert.equal(podGracePeriod(bound, undefined), 45);
    assert.equal(podGracePeriod(bound, 5), 5);
    assert.equal(podGracePeriod(bound, -3), 1);
    assert.equal(podGracePeriod(pod({ containers: [] }), 30), 0);
    assert.equal(podGracePeriod({ ...bound, status: { phase: 'Succeeded' } }, 30), 0);
  });

  it('a bound pod stays until a delete with grace 0; a repeated delete may only shorten the period', async () => {
    await store.create(scope, pod({ nodeName: 'n', containers: [{ name: 'a', image: 'x' }] }, { metadata: { name: 'g' } }));
    const first = await store.delete(scope, 'g', {});
    assert.equal(first.deleted, false);
    assert.equal(first.object.metadata!.deletionGracePeriodSeconds, 30);
    assert.equal(first.object.metadata!.deletionTimestamp, '2024-01-01T00:00:30Z');
    clock += 5000;
    const again = await store.delete(scope, 'g', { gracePeriodSeconds: 60 });
    assert.equal(again.deleted, false);
    assert.equal(again.object.metadata!.resourceVersion, first.object.metadata!.resourceVersion, 'nothing written');
    const shorter = await store.delete(scope, 'g', { gracePeriodSeconds: 10 });
    assert.equal(shorter.object.metadata!.deletionGracePeriodSeconds, 10);
    assert.equal(shorter.object.metadata!.deletionTimestamp, '2024-01-01T00:00:10Z');
    // Status updates while terminating keep the deletion marks; removing nothing does not delete it.
    const { object } = await store.update(scope, 'g', (cur) => ({ ...cur!, status: { ...cur!.status, phase: 'Running' } }), { subresource: 'status' });
    assert.equal(object.metadata!.deletionGracePeriodSeconds, 10);
    const last = await store.delete(scope, 'g', { gracePeriodSeconds: 0 });
    assert.equal(last.deleted, true);
    await assert.rejects(store.get(scope, 'g'), (e: StatusError) => isStatusError(e, 'NotFound'));
  });

  it('an unbound pod goes at once; a finalizer holds a pod deleted with grace 0', async () => {
    await store.create(scope, pod({ containers: [{ name: 'a', image: 'x' }] }, { metadata: { name: 'u' } }));
    assert.equal((await store.delete(scope, 'u', {})).deleted, true);
    await store.create(scope, pod({ nodeName: 'n', containers: [{ name: 'a', image: 'x' }] }, { metadata: { name: 'f', finalizers: ['example.com/hold'] } }));
    const held = await store.delete(scope, 'f', { gracePeriodSeconds: 0 });
    assert.equal(held.deleted, false);
    assert.equal(held.object.metadata!.deletionGracePeriodSeconds, 0);
    const { object } = await store.update(scope, 'f', (cur) => ({ ...cur!, metadata: { ...cur!.metadata, finalizers: [] } }));
    assert.ok(object.metadata!.deletionTimestamp);
    await assert.rejects(store.get(scope, 'f'), (e: StatusError) => isStatusError(e, 'NotFound'));
  });
});
