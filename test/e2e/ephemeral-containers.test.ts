// End to end: kubectl debug (ephemeral containers) as Kubernetes 1.23 serves it with the EphemeralContainers
// gate (beta, on by default): the pods/ephemeralcontainers subresource (GET, PUT, strategic merge PATCH on
// name) with 1.23's validation, spec.ephemeralContainers refused on create and on an ordinary update,
// discovery, and the gate turned off; then kubectl debug against a real bin/orchlet with the built-in process
// runtime, which starts each ephemeral container once in the running pod and reports ephemeralContainerStatuses.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { kubectlPath, startCluster, type TestCluster } from '../helpers/cluster.js';
import { eventually } from '../helpers/eventually.js';
import { freePort } from '../helpers/ports.js';
import { loopbackAgentArgs, spawnOrchlet, type OrchletProcess } from '../helpers/orchlet-process.js';

type Json = Record<string, any>;

/** kubectl versions to drive `kubectl debug` with (1.27 and 1.33 where installed, else the one on PATH). */
const VERSIONS = ['1.27', '1.33'].filter((v) => kubectlPath(v) !== null);
const NS = '/api/v1/namespaces/default/pods';

const podObj = (name: string, spec: Json = {}): Json => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'default' },
  spec: { nodeName: 'nowhere', terminationGracePeriodSeconds: 1, automountServiceAccountToken: false, containers: [{ name: 'main', image: 'busybox', command: ['sleep', '600'] }], ...spec },
});

const causes = (body: Json): string[] => ((body?.details?.causes ?? []) as Json[]).map((c) => `${c.field}: ${c.reason}`);

void describe('pods/ephemeralcontainers on the server', () => {
  let c: TestCluster;
  before(async () => {
    c = await startCluster();
  });
  after(async () => {
    await c?.stop();
  });

  const create = async (obj: Json): Promise<Json> => {
    const r = await c.request('POST', NS, { body: obj });
    assert.equal(r.status, 201, r.text);
    return r.json as Json;
  };
  const ephemeral = (name: string, extra: Json = {}): Json => ({ name, image: 'busybox', command: ['sh', '-c', 'echo hi'], ...extra });
  /** A strategic merge patch of pods/ephemeralcontainers adding `ecs`. */
  const addEphemeral = (pod: string, ...ecs: Json[]) =>
    c.request('PATCH', `${NS}/${pod}/ephemeralcontainers`, { body: { spec: { ephemeralContainers: ecs } }, contentType: 'application/strategic-merge-patch+json' });

  void it('discovery lists pods/ephemeralcontainers (get, patch, update; kind Pod) and OpenAPI its routes', async () => {
    const r = await c.request('GET', '/api/v1');
    const res = (r.json.resources as Json[]).find((x) => x.name === 'pods/ephemeralcontainers');
    assert.deepEqual(res, { name: 'pods/ephemeralcontainers', singularName: '', namespaced: true, kind: 'Pod', verbs: ['get', 'patch', 'update'] });
    const api = await c.request('GET', '/openapi/v2');
    const path = (api.json.paths as Json)['/api/v1/namespaces/{namespace}/pods/{name}/ephemeralcontainers'] as Json;
    assert.equal(path.get.operationId, 'readCoreV1NamespacedPodEphemeralcontainers');
    assert.equal(path.put.operationId, 'replaceCoreV1NamespacedPodEphemeralcontainers');
    assert.equal(path.patch.operationId, 'patchCoreV1NamespacedPodEphemeralcontainers');
  });

  void it('spec.ephemeralContainers is refused on create and may not change through an ordinary update', async () => {
    const r = await c.request('POST', NS, { body: podObj('eph-create', { ephemeralContainers: [ephemeral('dbg')] }) });
    assert.equal(r.status, 422, r.text);
    assert.deepEqual(causes(r.json as Json), ['spec.ephemeralContainers: FieldValueForbidden']);
    assert.match(r.json.message as string, /spec\.ephemeralContainers: Forbidden: cannot be set on create/);
    const pod = await create(podObj('eph-update'));
    pod.spec.ephemeralContainers = [{ ...ephemeral('dbg'), imagePullPolicy: 'Always', terminationMessagePath: '/dev/termination-log', terminationMessagePolicy: 'File' }];
    const u = await c.request('PUT', `${NS}/eph-update`, { body: pod });
    assert.equal(u.status, 422, u.text);
    assert.match(u.json.message as string, /spec: Forbidden: pod updates may not change fields other than/);
  });

  void it('GET answers the pod; a strategic merge PATCH adds a defaulted ephemeral container and keeps the rest of the pod', async () => {
    await create(podObj('eph-get', { initContainers: [{ name: 'init', image: 'busybox', command: ['true'] }] }));
    const g = await c.request('GET', `${NS}/eph-get/ephemeralcontainers`);
    assert.equal(g.status, 200, g.text);
    assert.equal(g.json.kind, 'Pod');
    assert.equal(g.json.metadata.name, 'eph-get');
    const p = await addEphemeral('eph-get', { ...ephemeral('dbg', { targetContainerName: 'main' }) });
    assert.equal(p.status, 200, p.text);
    const ec = (p.json.spec.ephemeralContainers as Json[])[0]!;
    assert.equal(ec.name, 'dbg');
    assert.equal(ec.targetContainerName, 'main');
    assert.equal(ec.terminationMessagePolicy, 'File');
    assert.equal(ec.imagePullPolicy, 'Always');
    // A second one merges in by name: the first is kept (after it, as Kubernetes' merge puts patch-only items
    // first); labels sent through the subresource are not taken.
    const second = await c.request('PATCH', `${NS}/eph-get/ephemeralcontainers`, {
      body: { metadata: { labels: { taken: 'no' } }, spec: { ephemeralContainers: [ephemeral('dbg2')] } },
      contentType: 'application/strategic-merge-patch+json',
    });
    assert.equal(second.status, 200, second.text);
    assert.deepEqual((second.json.spec.ephemeralContainers as Json[]).map((x) => x.name), ['dbg2', 'dbg']);
    assert.equal(second.json.metadata.labels?.taken, undefined);
    // PUT of the whole pod: other spec changes are not taken either.
    const put = structuredClone(second.json as Json);
    put.spec.activeDeadlineSeconds = 5;
    put.spec.ephemeralContainers.push({ ...ephemeral('dbg3'), imagePullPolicy: 'IfNotPresent', terminationMessagePolicy: 'File' });
    const u = await c.request('PUT', `${NS}/eph-get/ephemeralcontainers`, { body: put });
    assert.equal(u.status, 200, u.text);
    assert.deepEqual((u.json.spec.ephemeralContainers as Json[]).map((x) => x.name), ['dbg2', 'dbg', 'dbg3']);
    assert.equal(u.json.spec.activeDeadlineSeconds, undefined);
  });

  void it('1.23 validation: no ports, probes, resources or lifecycle; unique names; an existing target; no removal or change', async () => {
    await create(podObj('eph-valid', { initContainers: [{ name: 'init', image: 'busybox', command: ['true'] }] }));
    const bad = await addEphemeral('eph-valid', {
      ...ephemeral('dbg'),
      ports: [{ containerPort: 80 }],
      resources: { limits: { cpu: '1' } },
      readinessProbe: { exec: { command: ['true'] } },
      lifecycle: { preStop: { exec: { command: ['true'] } } },
    });
    assert.equal(bad.status, 422, bad.text);
    assert.deepEqual(causes(bad.json as Json), [
      'spec.ephemeralContainers[0].ports: FieldValueForbidden',
      'spec.ephemeralContainers[0].resources: FieldValueForbidden',
      'spec.ephemeralContainers[0].readinessProbe: FieldValueForbidden',
      'spec.ephemeralContainers[0].lifecycle: FieldValueForbidden',
    ]);
    assert.match(bad.json.message as string, /spec\.ephemeralContainers\[0\]\.ports: Forbidden: cannot be set for an Ephemeral Container/);
    for (const taken of ['main', 'init']) {
      const dup = await addEphemeral('eph-valid', ephemeral(taken));
      assert.equal(dup.status, 422, dup.text);
      assert.deepEqual(causes(dup.json as Json), ['spec.ephemeralContainers[0].name: FieldValueDuplicate']);
    }
    const target = await addEphemeral('eph-valid', ephemeral('dbg', { targetContainerName: 'missing' }));
    assert.equal(target.status, 422, target.text);
    assert.deepEqual(causes(target.json as Json), ['spec.ephemeralContainers[0].targetContainerName: FieldValueNotFound']);
    const noImage = await addEphemeral('eph-valid', { name: 'dbg' });
    assert.equal(noImage.status, 422, noImage.text);
    assert.deepEqual(causes(noImage.json as Json), ['spec.ephemeralContainers[0][0].image: FieldValueRequired']);
    assert.equal((await addEphemeral('eph-valid', ephemeral('dbg'))).status, 200);
    // Existing ones: a change is forbidden, and so is a removal (a PUT without it).
    const changed = await addEphemeral('eph-valid', ephemeral('dbg', { command: ['sh', '-c', 'echo changed'] }));
    assert.equal(changed.status, 422, changed.text);
    assert.deepEqual(causes(changed.json as Json), ['spec.ephemeralContainers.dbg: FieldValueForbidden']);
    assert.match(changed.json.message as string, /existing ephemeral containers "dbg" may not be changed/);
    const got = (await c.request('GET', `${NS}/eph-valid/ephemeralcontainers`)).json as Json;
    got.spec.ephemeralContainers = [];
    const removed = await c.request('PUT', `${NS}/eph-valid/ephemeralcontainers`, { body: got });
    assert.equal(removed.status, 422, removed.text);
    assert.match(removed.json.message as string, /spec\.ephemeralContainers: Forbidden: existing ephemeral containers "dbg" may not be removed/);
  });

  void it('PodSecurity checks what pods/ephemeralcontainers adds: kubectl debug in a restricted namespace is refused', async () => {
    const ns = await c.request('POST', '/api/v1/namespaces', { body: { metadata: { name: 'restricted', labels: { 'pod-security.kubernetes.io/enforce': 'restricted' } } } });
    assert.equal(ns.status, 201, ns.text);
    const secure = {
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
    };
    const pod = podObj('locked', {
      securityContext: { runAsNonRoot: true, runAsUser: 1000, seccompProfile: { type: 'RuntimeDefault' } },
      containers: [{ name: 'main', image: 'busybox', command: ['sleep', '600'], securityContext: secure }],
    });
    pod.metadata.namespace = 'restricted';
    const created = await c.request('POST', '/api/v1/namespaces/restricted/pods', { body: pod });
    assert.equal(created.status, 201, created.text);
    const r = await c.kubectl(['debug', '-n', 'restricted', 'locked', '--image=busybox', '--container=dbg', '--', 'true']);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false \(container "dbg"/);
    const compliant = await c.request('PATCH', '/api/v1/namespaces/restricted/pods/locked/ephemeralcontainers', {
      body: { spec: { ephemeralContainers: [{ name: 'ok', image: 'busybox', securityContext: secure }] } },
      contentType: 'application/strategic-merge-patch+json',
    });
    assert.equal(compliant.status, 200, compliant.text);
  });

  for (const version of VERSIONS) {
    void it(`kubectl ${version} debug adds an ephemeral container`, async () => {
      const name = `eph-kubectl-${version.replace('.', '')}`;
      await create(podObj(name));
      const r = await c.kubectl(['debug', name, '--image=busybox', '--container=debugger', '--', 'sh', '-c', 'echo hi'], { version });
      assert.equal(r.code, 0, r.stderr);
      const pod = JSON.parse((await c.kubectl(['get', 'pod', name, '-o', 'json'])).stdout) as Json;
      const ec = (pod.spec.ephemeralContainers as Json[])[0]!;
      assert.equal(ec.name, 'debugger');
      assert.deepEqual(ec.command, ['sh', '-c', 'echo hi']);
    });
  }
});

void describe('pods/ephemeralcontainers with the EphemeralContainers gate off', () => {
  let c: TestCluster;
  before(async () => {
    c = await startCluster(['--feature-gates=EphemeralContainers=false']);
  });
  after(async () => {
    await c?.stop();
  });

  void it('the subresource is not served, not listed, and spec.ephemeralContainers is dropped on create', async () => {
    const r = await c.request('GET', '/api/v1');
    assert.equal((r.json.resources as Json[]).some((x) => x.name === 'pods/ephemeralcontainers'), false);
    const created = await c.request('POST', NS, { body: podObj('gated', { ephemeralContainers: [{ name: 'dbg', image: 'busybox' }] }) });
    assert.equal(created.status, 201, created.text);
    assert.equal(created.json.spec.ephemeralContainers, undefined);
    const g = await c.request('GET', `${NS}/gated/ephemeralcontainers`);
    assert.equal(g.status, 404, g.text);
    const k = await c.kubectl(['debug', 'gated', '--image=busybox', '--', 'true']);
    assert.notEqual(k.code, 0);
    assert.match(k.stderr, /ephemeral containers are disabled for this cluster/);
  });
});

void describe('kubectl debug on a real orchlet (built-in process runtime)', () => {
  let c: TestCluster;
  let agent: OrchletProcess;
  const node = 'eph-node';
  const get = async (name: string): Promise<Json> => {
    const r = await c.request('GET', `${NS}/${name}`);
    assert.equal(r.status, 200, r.text);
    return r.json as Json;
  };
  const ephemeralStatus = (pod: Json, name: string): Json | undefined => ((pod.status?.ephemeralContainerStatuses ?? []) as Json[]).find((s) => s.name === name);
  const terminated = (pod: string, name: string) =>
    eventually(
      () => `ephemeral container ${name} terminated (agent: ${agent.stderr().slice(-2000)})`,
      async () => {
        const p = await get(pod);
        return ephemeralStatus(p, name)?.state?.terminated ? p : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 200 },
    );

  before(async () => {
    c = await startCluster();
    agent = spawnOrchlet([`--orchconfig=${c.kubeconfig}`, ...loopbackAgentArgs({ node, dir: join(c.dir, 'agent'), port: await freePort() })]);
    const r = await c.request('POST', NS, { body: podObj('target', { nodeName: node, containers: [{ name: 'main', image: 'busybox', command: ['sh', '-c', 'echo ready; exec sleep 600'] }] }) });
    assert.equal(r.status, 201, r.text);
    await eventually(
      () => `pod target running (agent: ${agent.stderr().slice(-2000)})`,
      async () => (await get('target')).status?.containerStatuses?.[0]?.state?.running !== undefined,
      { timeoutMs: 30_000, intervalMs: 200 },
    );
  });
  after(async () => {
    if (agent && agent.child.exitCode === null && agent.child.signalCode === null) agent.child.kill('SIGTERM');
    await agent?.exited;
    await c?.stop();
  });

  for (const version of VERSIONS) {
    const tag = version.replace('.', '');
    void it(`kubectl ${version} debug <pod> -- <cmd>: the agent runs the ephemeral container once in the running pod, kubectl logs -c shows its output`, async () => {
      const before = await get('target');
      const r = await c.kubectl(['debug', 'target', '--image=busybox', `--container=dbg${tag}`, '--', 'sh', '-c', `echo hi from ${version}`], { version });
      assert.equal(r.code, 0, r.stderr);
      const pod = await terminated('target', `dbg${tag}`);
      const st = ephemeralStatus(pod, `dbg${tag}`)!;
      assert.equal(st.state.terminated.exitCode, 0);
      assert.equal(st.state.terminated.reason, 'Completed');
      assert.equal(st.ready, false);
      assert.equal(st.restartCount, 0);
      assert.equal(st.started, undefined);
      assert.match(st.containerID as string, /^[a-z]+:\/\/./);
      // the pod's own container was left alone
      assert.deepEqual(pod.status.containerStatuses[0].containerID, before.status.containerStatuses[0].containerID);
      assert.equal(pod.status.containerStatuses[0].restartCount, 0);
      assert.equal(pod.status.phase, 'Running');
      const logs = await c.kubectl(['logs', 'target', '-c', `dbg${tag}`], { version });
      assert.equal(logs.code, 0, logs.stderr);
      assert.equal(logs.stdout, `hi from ${version}\n`);
      // the agent posts its events on its own: the Started event comes, naming the ephemeral container
      await eventually(`a Started event for spec.ephemeralContainers{dbg${tag}}`, async () => {
        const events = await c.kubectl(['get', 'events', '--field-selector', `involvedObject.fieldPath=spec.ephemeralContainers{dbg${tag}},reason=Started`, '-o', 'json']);
        return (JSON.parse(events.stdout) as Json).items.length === 1;
      }, { timeoutMs: 20_000, intervalMs: 200 });
    });

    void it(`kubectl ${version} debug -it: the output of the ephemeral container comes back`, async () => {
      const r = await c.kubectl(['debug', '-it', 'target', '--image=busybox', `--container=it${tag}`, '--', 'sh', '-c', 'echo hi'], { version, input: '' });
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /^hi\r?$/m);
      await terminated('target', `it${tag}`);
    });
  }

  void it('an exited ephemeral container is never restarted: later passes (another one added) keep its one instance', async () => {
    const r = await c.kubectl(['debug', 'target', '--image=busybox', '--container=once', '--', 'sh', '-c', 'exit 3']);
    assert.equal(r.code, 0, r.stderr);
    const first = ephemeralStatus(await terminated('target', 'once'), 'once')!;
    assert.equal(first.state.terminated.exitCode, 3);
    assert.equal(first.state.terminated.reason, 'Error');
    const again = await c.kubectl(['debug', 'target', '--image=busybox', '--container=later', '--', 'true']);
    assert.equal(again.code, 0, again.stderr);
    const pod = await terminated('target', 'later');
    const still = ephemeralStatus(pod, 'once')!;
    assert.equal(still.restartCount, 0);
    assert.equal(still.containerID, first.containerID);
    assert.deepEqual(still.state, first.state);
  });
});
