// Pod features on the CRI runtime (containerd from test/helpers/containerd.ts) through kubectl
// against a server this file starts: ConfigMap/Secret env and volumes as real bind mounts,
// probes through ExecSync, and an agent restart that adopts the running containers.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { Agent } from '../../src/agent/agent.js';
import { CriRuntime } from '../../src/agent/runtime/cri.js';
import { CriClient } from '../../src/agent/runtime/cri/client.js';
import { startCluster, type TestCluster } from '../helpers/cluster.js';
import { BUSYBOX_IMAGE, stopHarness, containerdTestPrerequisites, startContainerd, unmountUnder, type ContainerdHarness } from '../helpers/containerd.js';
import { startAgent, type TestAgent } from '../helpers/agent.js';
import { waitFor } from './runtime-contract.js';

type Json = Record<string, any>;

const missing = containerdTestPrerequisites();

void describe('orchlet pods on containerd (kubectl)', { skip: missing.length > 0 ? `missing: ${missing.join(', ')}` : false }, () => {
  let h: ContainerdHarness;
  let c: TestCluster;
  let a: TestAgent | undefined;
  const roots: string[] = [];
  const node = `cri-pods-${process.pid}`;
  const kubectlJSON = async (args: string[]): Promise<Json | undefined> => {
    const r = await c.kubectl([...args, '-o', 'json']);
    return r.code === 0 ? (JSON.parse(r.stdout) as Json) : undefined;
  };
  const waitPod = async (name: string, what: string, check: (p: Json) => boolean, timeoutMs = 30_000): Promise<Json> => {
    let last: Json | undefined;
    try {
      return await waitFor(`pod ${name}: ${what}`, async () => {
        last = await kubectlJSON(['get', 'pod', name]);
        return last && check(last) ? last : undefined;
      }, timeoutMs);
    } catch (err) {
      throw new Error(`${String(err)}; last status: ${JSON.stringify(last?.status)}\ncontainerd:\n${h.log().slice(-2000)}`, { cause: err });
    }
  };
  const criAgent = async (rootDir?: string): Promise<TestAgent> => {
    const runtime = await CriRuntime.connect({ runtimeEndpoint: h.endpoint, cgroupRoot: h.cgroupRoot, eventPollMs: 200, requestTimeoutMs: 30_000 });
    const t = await startAgent(c, {
      nodeName: node,
      extra: { runtime, podConfig: { cgroupRoot: h.cgroupRoot }, ...(rootDir ? { rootDir } : {}) },
    });
    roots.push(t.rootDir);
    return t;
  };

  before(async () => {
    h = await startContainerd();
    c = await startCluster();
    a = await criAgent();
  });
  after(async () => {
    await a?.agent.stop();
    await c?.stop();
    await stopHarness(h);
    // The agent left its pods running (as on SIGTERM): their tmpfs volumes are still mounted.
    for (const r of roots) {
      unmountUnder(r);
      await rm(r, { recursive: true, force: true });
    }
  });

  void it('mounts ConfigMap, Secret and downwardAPI volumes into the container and sets env from them', async () => {
    assert.equal((await c.kubectl(['create', 'configmap', 'cri-config', '--from-literal=greeting=hello'])).code, 0);
    assert.equal((await c.kubectl(['create', 'secret', 'generic', 'cri-secret', '--from-literal=password=s3cr3t'])).code, 0);
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'cri-env', namespace: 'default', labels: { tier: 'web' } },
      spec: {
        nodeName: node,
        restartPolicy: 'Never',
        automountServiceAccountToken: false,
        volumes: [
          { name: 'cfg', configMap: { name: 'cri-config' } },
          { name: 'sec', secret: { secretName: 'cri-secret' } },
          { name: 'info', downwardAPI: { items: [{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } }] } },
        ],
        containers: [
          {
            name: 'main',
            image: BUSYBOX_IMAGE,
            command: ['sh', '-c', 'echo "$GREETING $POD"; cat /etc/cfg/greeting; echo; cat /etc/secret/password; echo; cat /etc/info/labels; echo; touch /etc/cfg/x 2>/dev/null || echo read-only'],
            env: [
              { name: 'GREETING', valueFrom: { configMapKeyRef: { name: 'cri-config', key: 'greeting' } } },
              { name: 'POD', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
            ],
            volumeMounts: [
              { name: 'cfg', mountPath: '/etc/cfg' },
              { name: 'sec', mountPath: '/etc/secret' },
              { name: 'info', mountPath: '/etc/info' },
            ],
          },
        ],
      },
    };
    const r = await c.kubectl(['create', '-f', '-'], { input: JSON.stringify(pod) });
    assert.equal(r.code, 0, r.stderr);
    const p = await waitPod('cri-env', 'finished', (x) => x.status?.phase === 'Succeeded' || x.status?.phase === 'Failed');
    assert.equal(p.status.phase, 'Succeeded', JSON.stringify(p.status));
    const logs = await c.kubectl(['logs', 'cri-env']);
    assert.equal(logs.stdout, 'hello cri-env\nhello\ns3cr3t\ntier="web"\nread-only\n');
    // the image filesystem the imagefs eviction signals measure
    const imageFs = await (a!.agent.runtime as CriRuntime).images.imageFsDir!();
    assert.ok(imageFs !== undefined && existsSync(imageFs), `image filesystem ${imageFs}`);
  });

  void it('runs exec probes through the runtime: a failing liveness probe restarts the container', async () => {
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'cri-live', namespace: 'default' },
      spec: {
        nodeName: node,
        automountServiceAccountToken: false,
        terminationGracePeriodSeconds: 1,
        containers: [
          {
            name: 'main',
            image: BUSYBOX_IMAGE,
            command: ['sh', '-c', 'touch /tmp/healthy; sleep 2; rm /tmp/healthy; exec sleep 600'],
            livenessProbe: { exec: { command: ['cat', '/tmp/healthy'] }, periodSeconds: 1, failureThreshold: 1 },
            readinessProbe: { exec: { command: ['cat', '/tmp/healthy'] }, periodSeconds: 1 },
          },
        ],
      },
    };
    const r = await c.kubectl(['create', '-f', '-'], { input: JSON.stringify(pod) });
    assert.equal(r.code, 0, r.stderr);
    await waitPod('cri-live', 'ready', (x) => x.status?.containerStatuses?.[0]?.ready === true);
    const p = await waitPod('cri-live', 'restarted', (x) => (x.status?.containerStatuses?.[0]?.restartCount ?? 0) >= 1);
    assert.ok(p.status.containerStatuses[0].lastState.terminated, JSON.stringify(p.status.containerStatuses[0]));
    const events = (await kubectlJSON(['get', 'events', '--field-selector', 'involvedObject.name=cri-live']))?.items as Json[];
    assert.match(events.find((e) => e.reason === 'Unhealthy')?.message ?? '', /^(Liveness|Readiness) probe failed: cat: can't open '\/tmp\/healthy': No such file or directory/);
    assert.equal(events.find((e) => e.reason === 'Killing')?.message, 'Container main failed liveness probe, will be restarted');
    assert.equal((await c.kubectl(['delete', 'pod', 'cri-live'])).code, 0);
  });

  void it('keeps containers running when the agent stops, and a new agent adopts them (same container, no restart)', async () => {
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'cri-keep', namespace: 'default' },
      spec: { nodeName: node, automountServiceAccountToken: false, terminationGracePeriodSeconds: 1, containers: [{ name: 'main', image: BUSYBOX_IMAGE, command: ['sleep', '600'] }] },
    };
    const r = await c.kubectl(['create', '-f', '-'], { input: JSON.stringify(pod) });
    assert.equal(r.code, 0, r.stderr);
    const before = await waitPod('cri-keep', 'Running', (x) => x.status?.phase === 'Running');
    const id = before.status.containerStatuses[0].containerID as string;
    const first = a!;
    await first.agent.stop();
    a = await criAgent(first.rootDir);
    const second: Agent = a.agent;
    const after = await waitFor('the new agent to report the pod', () => {
      const s = second.statusManager.getPodStatus(before.metadata.uid);
      return s?.containerStatuses[0]?.state.running ? s : undefined;
    }, 30_000);
    assert.equal(after.containerStatuses[0]!.containerID, id, 'the same container');
    assert.equal(after.containerStatuses[0]!.restartCount, 0);
    assert.equal(after.containerStatuses[0]!.state.running?.startedAt, before.status.containerStatuses[0].state.running.startedAt);
    const onServer = await waitPod('cri-keep', 'still Running', (x) => x.status?.phase === 'Running');
    assert.equal(onServer.status.containerStatuses[0].containerID, id);
  });

  void it('removes, at start, the sandboxes of pods deleted while no agent ran', async () => {
    const before = await kubectlJSON(['get', 'pod', 'cri-keep']);
    const uid = before!.metadata.uid as string;
    await a!.agent.stop();
    const del = await c.kubectl(['delete', 'pod', 'cri-keep', '--grace-period=0', '--force']);
    assert.equal(del.code, 0, del.stderr);
    const cri = await CriClient.connect({ runtimeEndpoint: h.endpoint });
    try {
      const sandboxes = async () => cri.listPodSandbox({ labelSelector: { 'io.kubernetes.pod.uid': uid } });
      assert.equal((await sandboxes()).length, 1, 'the sandbox outlived the agent');
      a = await criAgent(a!.rootDir);
      await waitFor('the orphan sandbox to go', async () => ((await sandboxes()).length === 0 ? true : undefined), 30_000);
      assert.ok(a.logs.some((l) => l.includes(`(${uid}): no source holds the pod`)));
    } finally {
      cri.close();
    }
  });
});
