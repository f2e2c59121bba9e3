// The node side of an orchlet on containerd, through kubectl against a server this file starts:
//   - host ports: an httpd pod with hostPort answers on 127.0.0.1:<hostPort> and on the bridge's
//     address (the portmap CNI plugin the harness chains after the bridge);
//   - node status lists the runtime's images, at most --node-status-max-images;
//   - garbage collection: an agent restarted with --maximum-dead-containers=0 removes the dead
//     container of a finished pod (whose status stays), and with the image filesystem above
//     --image-gc-high-threshold removes the unused image but neither the images in use nor the
//     pinned --pod-infra-container-image, with a FreeDiskSpaceFailed event when it cannot free enough;
//   - the runtime going down: killing containerd turns the node NotReady (KubeletNotReady,
//     "container runtime is down", then PLEG not healthy too, a NodeNotReady event); containerd started again on the same
//     socket makes it Ready again (NodeReady), and the pod's container ran on throughout.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import type { AgentConfig } from '../../src/agent/agent.js';
import { CriRuntime } from '../../src/agent/runtime/cri.js';
import { CriClient } from '../../src/agent/runtime/cri/client.js';
import { startCluster, type TestCluster } from '../helpers/cluster.js';
import { BUSYBOX_IMAGE, stopHarness, containerdTestPrerequisites, PAUSE_IMAGE, SPARE_IMAGE, startContainerd, type ContainerdHarness } from '../helpers/containerd.js';
import { freePort, startAgent, type TestAgent } from '../helpers/agent.js';
import { waitFor } from '../agent/runtime-contract.js';

type Json = Record<string, any>;

const missing = containerdTestPrerequisites(['iptables']);

async function httpText(url: string): Promise<string | undefined> {
  try {
    const r = await fetch(url, { signal: AbortSignal.timeout(3000) });
    return r.ok ? await r.text() : undefined;
  } catch {
    return undefined;
  }
}

void describe('orchlet node on containerd: host ports, images, garbage collection, runtime down', { skip: missing.length > 0 ? `missing: ${missing.join(', ')}` : false }, () => {
  let h: ContainerdHarness;
  let c: TestCluster;
  let a: TestAgent | undefined;
  let cri: CriClient;
  const roots: string[] = [];
  const node = `cri-node-${process.pid}`;
  let hostPort = 0;
  const kubectlJSON = async (args: string[]): Promise<Json | undefined> => {
    const r = await c.kubectl([...args, '-o', 'json']);
    return r.code === 0 ? (JSON.parse(r.stdout) as Json) : undefined;
  };
  const waitPod = (name: string, what: string, check: (p: Json) => boolean): Promise<Json> =>
    waitFor(`pod ${name}: ${what}`, async () => {
      const p = await kubectlJSON(['get', 'pod', name]);
      return p && check(p) ? p : undefined;
    }, 30_000);
  const readyCondition = async (): Promise<Json | undefined> => {
    const n = await kubectlJSON(['get', 'node', node]);
    return (n?.status?.conditions as Json[] | undefined)?.find((x) => x.type === 'Ready');
  };
  const nodeEvents = async (): Promise<Json[]> =>
    ((await kubectlJSON(['get', 'events', '-A', '--field-selector', `involvedObject.kind=Node,involvedObject.name=${node}`]))?.items as Json[] | undefined) ?? [];
  const criAgent = async (extra: Partial<AgentConfig>, plegThresholdMs?: number): Promise<TestAgent> => {
    const runtime = await CriRuntime.connect({
      runtimeEndpoint: h.endpoint,
      cgroupRoot: h.cgroupRoot,
      eventPollMs: 200,
      requestTimeoutMs: 5_000,
      pinnedImages: [PAUSE_IMAGE],
      ...(plegThresholdMs !== undefined ? { plegThresholdMs } : {}),
    });
    const t = await startAgent(c, { nodeName: node, extra: { runtime, podConfig: { cgroupRoot: h.cgroupRoot }, ...extra } });
    roots.push(t.rootDir);
    return t;
  };
  const imageNames = async (): Promise<string[]> => (await cri.listImages()).flatMap((i) => i.repoTags);

  before(async () => {
    h = await startContainerd();
    c = await startCluster();
    cri = await CriClient.connect({ runtimeEndpoint: h.endpoint });
    a = await criAgent({ nodeStatusMaxImages: 2 });
    hostPort = await freePort();
  });
  after(async () => {
    await a?.agent.stop();
    cri?.close();
    await c?.stop();
    await stopHarness(h);
    for (const r of roots) await rm(r, { recursive: true, force: true });
  });

  void it('serves a hostPort on 127.0.0.1 and on the bridge address', async () => {
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'web', namespace: 'default' },
      spec: {
        nodeName: node,
        terminationGracePeriodSeconds: 1,
        automountServiceAccountToken: false,
        containers: [
          {
            name: 'httpd',
            image: BUSYBOX_IMAGE,
            command: ['sh', '-c', 'mkdir -p /www && echo "hello on a host port" > /www/index.html && exec httpd -f -p 8080 -h /www'],
            ports: [{ containerPort: 8080, hostPort, protocol: 'TCP' }],
          },
        ],
      },
    };
    const r = await c.kubectl(['create', '-f', '-'], { input: JSON.stringify(pod) });
    assert.equal(r.code, 0, r.stderr);
    const p = await waitPod('web', 'Running', (x) => x.status?.containerStatuses?.[0]?.state?.running !== undefined);
    assert.match(String(p.status.podIP), /^10\./);
    for (const host of ['127.0.0.1', h.gateway]) {
      const text = await waitFor(`http://${host}:${hostPort}/`, () => httpText(`http://${host}:${hostPort}/`), 15_000);
      assert.equal(text, 'hello on a host port\n');
    }
  });

  void it('lists the runtime images in node status, at most --node-status-max-images', async () => {
    const images = await waitFor('node status images', async () => {
      const n = await kubectlJSON(['get', 'node', node]);
      const list = n?.status?.images as Json[] | undefined;
      return list && list.length > 0 ? list : undefined;
    }, 20_000);
    assert.equal(images.length, 2, JSON.stringify(images));
    for (const i of images) {
      assert.ok(Array.isArray(i.names) && i.names.length > 0 && i.names.length <= 5, JSON.stringify(i));
      assert.ok(typeof i.sizeBytes === 'number' && i.sizeBytes > 0, JSON.stringify(i));
    }
    const all = await cri.listImages();
    assert.equal(all.length, 3, 'the harness imports busybox, pause and spare');
    assert.ok(images.every((i) => all.some((x) => x.repoTags.some((t) => i.names.includes(t)))), 'every listed image is one of the runtime');
  });

  void it('collects dead containers and unused images per the policies after a restart of the agent', async () => {
    const done = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'done', namespace: 'default' },
      spec: { nodeName: node, restartPolicy: 'Never', automountServiceAccountToken: false, containers: [{ name: 'main', image: BUSYBOX_IMAGE, command: ['sh', '-c', 'echo done'] }] },
    };
    assert.equal((await c.kubectl(['create', '-f', '-'], { input: JSON.stringify(done) })).code, 0);
    await waitPod('done', 'Succeeded', (x) => x.status?.phase === 'Succeeded');
    const deadOf = async (): Promise<number> =>
      (await cri.listContainers()).filter((x) => x.labels['io.kubernetes.pod.name'] === 'done' && x.state === 'CONTAINER_EXITED').length;
    assert.equal(await deadOf(), 1, 'the default policy keeps the last dead instance');
    assert.deepEqual((await imageNames()).sort(), [BUSYBOX_IMAGE, PAUSE_IMAGE, SPARE_IMAGE].sort());

    // The image filesystem (a tmpfs) is never 1% free of use: everything unused goes, and that is not enough.
    await a!.agent.stop();
    a = await criAgent({
      gc: {
        containers: { minAgeMs: 0, maxPerPodContainer: 1, maxContainers: 0 },
        images: { highThresholdPercent: 1, lowThresholdPercent: 0, minAgeMs: 0 },
        containerPeriodMs: 500,
        imagePeriodMs: 1000,
      },
    });
    await waitFor('the dead container of pod done removed', async () => ((await deadOf()) === 0 ? true : undefined), 15_000);
    await waitFor('the unused image removed', async () => (!(await imageNames()).includes(SPARE_IMAGE) ? true : undefined), 15_000);
    assert.deepEqual((await imageNames()).sort(), [BUSYBOX_IMAGE, PAUSE_IMAGE].sort(), 'in use (busybox) and pinned (pause) images stay');
    const failed = await waitFor('a FreeDiskSpaceFailed event', async () => (await nodeEvents()).find((e) => e.reason === 'FreeDiskSpaceFailed'), 15_000);
    assert.equal(failed.type, 'Warning');
    assert.match(String(failed.message), /^failed to garbage collect required amount of images\. Wanted to free \d+ bytes, but freed \d+ bytes$/);
    const p = await kubectlJSON(['get', 'pod', 'done']);
    assert.equal(p?.status?.phase, 'Succeeded', 'the finished pod keeps its status');
    assert.ok((await kubectlJSON(['get', 'pod', 'web']))?.status?.containerStatuses?.[0]?.state?.running, 'the running pod is left alone');
  });

  void it('turns the node NotReady while containerd is down and Ready again when it returns', async () => {
    await a!.agent.stop();
    a = await criAgent({ runtimeHealth: { periodMs: 300, downAfterMs: 2000 } }, 5000);
    await waitFor('node Ready', async () => ((await readyCondition())?.status === 'True' ? true : undefined), 20_000);
    const webBefore = (await kubectlJSON(['get', 'pod', 'web']))?.status?.containerStatuses?.[0]?.containerID as string;
    await h.kill();
    const down = await waitFor('node NotReady', async () => {
      const r = await readyCondition();
      return r?.status === 'False' ? r : undefined;
    }, 20_000);
    assert.equal(down.reason, 'KubeletNotReady');
    assert.equal(down.message, 'container runtime is down');
    // kubelet's PLEG: the relist has failed for longer than its threshold (3 minutes; 5 s here)
    const pleg = await waitFor('PLEG not healthy', async () => {
      const r = await readyCondition();
      return String(r?.message).includes('PLEG') ? r : undefined;
    }, 20_000);
    assert.match(String(pleg.message), /^\[container runtime is down, PLEG is not healthy: pleg was last seen active \d+(\.\d+)?s ago; threshold is 5s\]$/);
    const notReady = await waitFor('a NodeNotReady event', async () => (await nodeEvents()).find((e) => e.reason === 'NodeNotReady'), 15_000);
    assert.equal(await httpText(`http://127.0.0.1:${hostPort}/`), 'hello on a host port\n', 'the container runs on without containerd');

    await h.restart();
    const up = await waitFor('node Ready again', async () => {
      const r = await readyCondition();
      return r?.status === 'True' ? r : undefined;
    }, 30_000);
    assert.equal(up.reason, 'KubeletReady');
    const when = (e: Json): string => String(e.lastTimestamp ?? e.eventTime ?? '');
    await waitFor('a NodeReady event after the NodeNotReady one', async () =>
      (await nodeEvents()).find((e) => e.reason === 'NodeReady' && when(e) >= when(notReady)), 15_000);
    const web = await waitPod('web', 'running', (x) => x.status?.containerStatuses?.[0]?.state?.running !== undefined);
    assert.equal(web.status.containerStatuses[0].containerID, webBefore, 'the same container, never restarted');
    assert.equal(web.status.containerStatuses[0].restartCount, 0);
  });

  void it('keeps --maximum-dead-containers-per-container dead instances of a restarting container', async () => {
    await a!.agent.stop();
    a = await criAgent({ gc: { containers: { minAgeMs: 0, maxPerPodContainer: 3, maxContainers: -1 }, containerPeriodMs: 500 } });
    const crash = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'crash', namespace: 'default' },
      spec: { nodeName: node, terminationGracePeriodSeconds: 1, automountServiceAccountToken: false, containers: [{ name: 'main', image: BUSYBOX_IMAGE, command: ['sh', '-c', 'exit 1'] }] },
    };
    assert.equal((await c.kubectl(['create', '-f', '-'], { input: JSON.stringify(crash) })).code, 0);
    await waitPod('crash', 'restarted 4 times', (x) => (x.status?.containerStatuses?.[0]?.restartCount ?? 0) >= 4);
    const dead = async (): Promise<number> =>
      (await cri.listContainers()).filter((x) => x.labels['io.kubernetes.pod.name'] === 'crash' && x.state === 'CONTAINER_EXITED').length;
    // 5 instances or more ran; the collector (every 0.5 s here) cuts the dead ones back to 3 (the pod syncer alone keeps at most 2)
    await waitFor('three dead instances kept', async () => ((await dead()) === 3 ? true : undefined), 15_000);
    assert.equal((await c.kubectl(['delete', 'pod', 'crash', '--wait=false'])).code, 0);
  });
});
