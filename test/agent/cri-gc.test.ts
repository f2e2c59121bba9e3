// The garbage collection policies of src/agent/gc.ts (kubelet's container and image GC) on an
// in-memory runtime, where every case can be set up exactly: per-container and global caps, the
// minimum age, pods that are gone, sandboxes, least-recently-used image order, pinned and young
// images, thresholds; the node status images list; the runtime state behind the Ready condition.
// test/e2e/orchlet-node-containerd.test.ts shows the same on containerd.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ContainerGC, DELETOR_BUFFER_LIMIT, ImageGC, nodeImages, PodContainerDeletor, type ContainerGCPolicy, type ImageGCPolicy } from '../../src/agent/gc.js';
import { RuntimeState } from '../../src/agent/node/runtimestate.js';
import { aggregateMessage } from '../../src/agent/node/nodestatus.js';
import { goDuration } from '../../src/agent/runtime/cri.js';
import type { ContainerSummary, ImageInfo, ImageService, PodSandbox, Runtime } from '../../src/agent/runtime/runtime.js';

const T0 = 1_700_000_000_000;

function container(id: string, uid: string, name: string, createdSec: number, state: ContainerSummary['state'] = 'CONTAINER_EXITED', sandbox = `sb-${uid}`, image = 'img'): ContainerSummary {
  return {
    id,
    podSandboxId: sandbox,
    metadata: { name, attempt: 0 },
    image,
    state,
    createdAt: new Date(T0 + createdSec * 1000),
    labels: { 'io.kubernetes.pod.uid': uid, 'io.kubernetes.container.name': name },
    annotations: {},
  };
}

function sandbox(id: string, uid: string, createdSec: number, state: PodSandbox['state'] = 'SANDBOX_NOTREADY'): PodSandbox {
  return { id, metadata: { name: uid, uid, namespace: 'default', attempt: 0 }, state, createdAt: new Date(T0 + createdSec * 1000), labels: { 'io.kubernetes.pod.uid': uid }, annotations: {} };
}

/** Only what the collectors call. */
function fakeRuntime(containers: ContainerSummary[], sandboxes: PodSandbox[] = []): Runtime {
  const rt = {
    listContainers: async () => [...containers],
    listPodSandbox: async () => [...sandboxes],
    removeContainer: async (id: string) => {
      const i = containers.findIndex((c) => c.id === id);
      if (i >= 0) containers.splice(i, 1);
    },
    removePodSandbox: async (id: string) => {
      const i = sandboxes.findIndex((s) => s.id === id);
      if (i >= 0) sandboxes.splice(i, 1);
    },
  };
  return rt as unknown as Runtime;
}

const policy = (p: Partial<ContainerGCPolicy>): ContainerGCPolicy => ({ minAgeMs: 0, maxPerPodContainer: 1, maxContainers: -1, ...p });

void describe('container garbage collection', () => {
  const gcOf = (rt: Runtime, p: Partial<ContainerGCPolicy>, exists: (uid: string) => boolean = () => true, ready = true) =>
    new ContainerGC({ runtime: rt, policy: policy(p), podExists: exists, allSourcesReady: () => ready, now: () => T0 + 1000_000 });

  void it('keeps the newest N dead instances per pod container and never a running one', async () => {
    const list = [
      container('a1', 'p', 'a', 1),
      container('a2', 'p', 'a', 2),
      container('a3', 'p', 'a', 3),
      container('a4', 'p', 'a', 4, 'CONTAINER_RUNNING'),
      container('b1', 'p', 'b', 1),
      container('b2', 'p', 'b', 2),
    ];
    const r = await gcOf(fakeRuntime(list), { maxPerPodContainer: 2 }).collect();
    assert.deepEqual(r.containers.sort(), ['a1']);
    assert.deepEqual(list.map((c) => c.id).sort(), ['a2', 'a3', 'a4', 'b1', 'b2']);
    const r0 = await gcOf(fakeRuntime(list), { maxPerPodContainer: 0 }).collect();
    assert.deepEqual(r0.containers.sort(), ['a2', 'a3', 'b1', 'b2']);
  });

  void it('leaves containers younger than the minimum age; a negative per-container limit keeps all', async () => {
    const list = [container('a1', 'p', 'a', 1), container('a2', 'p', 'a', 2), container('a3', 'p', 'a', 999)];
    // now is T0+1000 s: a3 is 1 s old
    const r = await gcOf(fakeRuntime(list), { maxPerPodContainer: 0, minAgeMs: 10_000 }).collect();
    assert.deepEqual(r.containers.sort(), ['a1', 'a2']);
    const none = await gcOf(fakeRuntime(list), { maxPerPodContainer: -1 }).collect();
    assert.deepEqual(none.containers, []);
  });

  void it('enforces the global cap: units cut evenly (at least 1), then the oldest overall', async () => {
    const list = [
      container('a1', 'p', 'a', 1),
      container('a2', 'p', 'a', 5),
      container('a3', 'p', 'a', 6),
      container('b1', 'q', 'b', 2),
      container('b2', 'q', 'b', 3),
      container('c1', 'r', 'c', 4),
    ];
    const r = await gcOf(fakeRuntime(list), { maxPerPodContainer: -1, maxContainers: 2 }).collect();
    // 2 / 3 units → 1 each (a3, b2, c1 stay), then the oldest of those until 2 remain: b2 goes
    assert.deepEqual(list.map((c) => c.id).sort(), ['a3', 'c1']);
    assert.equal(r.containers.length, 4);
  });

  void it('deleteAllUnused (disk pressure): every dead container old enough, whatever the caps', async () => {
    const list = [container('a1', 'p', 'a', 1), container('a2', 'p', 'a', 2), container('b1', 'p', 'b', 3, 'CONTAINER_RUNNING'), container('young', 'p', 'c', 999)];
    const gc = new ContainerGC({ runtime: fakeRuntime(list), policy: policy({ minAgeMs: 10_000, maxPerPodContainer: 5 }), podExists: () => true, allSourcesReady: () => true, now: () => T0 + 1000_000 });
    assert.deepEqual((await gc.deleteAllUnused()).containers.sort(), ['a1', 'a2']);
    assert.deepEqual(list.map((c) => c.id), ['b1', 'young']);
  });

  void it('removes everything dead of pods the agent no longer holds, once the sources are ready', async () => {
    const list = [container('a1', 'gone', 'a', 1), container('a2', 'gone', 'a', 2), container('k1', 'kept', 'k', 1)];
    const exists = (uid: string): boolean => uid === 'kept';
    const early = await gcOf(fakeRuntime(list), {}, exists, false).collect();
    assert.deepEqual(early.containers, ['a1'], 'before every source reported only the per-container limit applies');
    const r = await gcOf(fakeRuntime(list), {}, exists).collect();
    assert.deepEqual(r.containers, ['a2']);
    assert.deepEqual(list.map((c) => c.id), ['k1']);
  });

  void it('removes dead sandboxes: all of gone pods, all but the newest of others, never one that is ready or holds containers', async () => {
    const list = [container('c', 'p', 'a', 1, 'CONTAINER_RUNNING', 'p-old')];
    const sandboxes = [
      sandbox('p-old', 'p', 1),
      sandbox('p-mid', 'p', 2),
      sandbox('p-new', 'p', 3),
      sandbox('g-1', 'gone', 1),
      sandbox('g-2', 'gone', 2),
      sandbox('g-ready', 'gone', 3, 'SANDBOX_READY'),
    ];
    const r = await gcOf(fakeRuntime(list, sandboxes), {}, (uid) => uid === 'p').collect();
    assert.deepEqual(r.sandboxes.sort(), ['g-1', 'g-2', 'p-mid']);
    assert.deepEqual(sandboxes.map((s) => s.id).sort(), ['g-ready', 'p-new', 'p-old']);
  });
});

void describe('container deletor (kubelet\'s podContainerDeletor, on each ContainerDied)', () => {
  const attempt = (c: ContainerSummary, n: number): ContainerSummary => ({ ...c, metadata: { ...c.metadata, attempt: n } });
  const deletorOf = (list: ContainerSummary[], maxPerPodContainer: number, removeAll: (uid: string) => boolean = () => false, log?: (l: string, m: string) => void) =>
    new PodContainerDeletor({ runtime: fakeRuntime(list), maxPerPodContainer, removeAll, ...(log ? { log } : {}) });

  void it('keeps max(--maximum-dead-containers-per-container, 1) exited instances of the dead container\'s name: highest attempt first, then newest', async () => {
    const list = () => [
      attempt(container('a0', 'p', 'a', 9), 0),
      attempt(container('a1', 'p', 'a', 5), 1),
      attempt(container('a2', 'p', 'a', 1), 2),
      attempt(container('a3', 'p', 'a', 7, 'CONTAINER_RUNNING'), 3),
      container('b0', 'p', 'b', 1),
      container('b1', 'p', 'b', 2),
      container('q0', 'q', 'a', 1),
      container('q1', 'q', 'a', 2),
      container('new', 'p', 'a', 0, 'CONTAINER_CREATED'),
      container('unk', 'p', 'a', 0, 'CONTAINER_UNKNOWN'),
    ];
    for (const [max, kept] of [
      [-1, ['a2']],
      [0, ['a2']],
      [1, ['a2']],
      [2, ['a2', 'a1']],
      [5, ['a2', 'a1', 'a0']],
    ] as const) {
      const l = list();
      const d = deletorOf(l, max);
      assert.equal(d.containersToKeep, Math.max(max, 1));
      d.containerDied('a2');
      await d.idle();
      const left = new Set(l.map((c) => c.id));
      // the attempt orders them, not the creation time (a2 is the oldest created)
      assert.deepEqual(['a0', 'a1', 'a2'].filter((id) => left.has(id)).sort(), [...kept].sort(), `max ${max}`);
      // the running, created and unknown instances, the other name and the other pod are not touched
      for (const id of ['a3', 'b0', 'b1', 'q0', 'q1', 'new', 'unk']) assert.ok(left.has(id), `max ${max}: ${id} stays`);
    }
    const same = [container('x1', 'p', 'a', 1), container('x2', 'p', 'a', 2)];
    assert.deepEqual(PodContainerDeletor.toDelete(same, 'x1', 1, () => false), ['x1'], 'same attempt: the newest created stays');
  });

  void it('removes every exited container of the pod when its content should go (evicted, deleted and terminated); a gone container asks for nothing', async () => {
    const l = [container('a1', 'p', 'a', 1), container('a2', 'p', 'a', 2), container('b1', 'p', 'b', 1), container('r', 'p', 'c', 1, 'CONTAINER_RUNNING'), container('q1', 'q', 'a', 1)];
    const lines: string[] = [];
    const d = deletorOf(l, 3, (uid) => uid === 'p', (_l, m) => lines.push(m));
    d.containerDied('a2');
    await d.idle();
    assert.deepEqual(l.map((c) => c.id), ['r', 'q1']);
    d.containerDied('gone');
    await d.idle();
    assert.deepEqual(lines, ['Container "gone" not found in pod\'s containers']);
    assert.equal(PodContainerDeletor.toDelete(l, 'gone', 1, () => true), undefined);
  });

  void it('asks for at most 50 removals at a time (more are dropped with a warning) and carries on after a failed removal', async () => {
    const many = Array.from({ length: DELETOR_BUFFER_LIMIT + 5 }, (_, i) => container(`c${i}`, 'p', 'a', i));
    const rt = fakeRuntime(many);
    const removed: string[] = [];
    const remove = rt.removeContainer.bind(rt);
    rt.removeContainer = async (id: string) => {
      if (id === 'c10') throw new Error('boom');
      removed.push(id);
      await remove(id);
    };
    const lines: string[] = [];
    const d = new PodContainerDeletor({ runtime: rt, maxPerPodContainer: 1, removeAll: () => false, log: (_l, m) => lines.push(m) });
    d.containerDied(`c${DELETOR_BUFFER_LIMIT + 4}`);
    await d.idle();
    // 54 to remove: 50 asked for (one of which fails), 4 dropped
    assert.equal(removed.length, DELETOR_BUFFER_LIMIT - 1);
    assert.equal(lines.filter((m) => m.startsWith('Failed to issue the request to remove container')).length, 4);
    assert.ok(lines.includes('[pod_container_deletor] DeleteContainer returned error for (id=c10): boom'), lines.join('\n'));
  });
});

void describe('image garbage collection', () => {
  const img = (id: string, size: number, pinned = false): ImageInfo => ({ id, repoTags: [`${id}:1`], repoDigests: [], size, pinned });
  function setup(images: ImageInfo[], containers: ContainerSummary[], fs: { capacity: number; available: number }, p: Partial<ImageGCPolicy> = {}) {
    let now = T0;
    const removed: string[] = [];
    const events: string[] = [];
    const service: ImageService = {
      imageStatus: async () => undefined,
      pullImage: async () => '',
      listImages: async () => [...images],
      removeImage: async (id) => {
        removed.push(id);
        const i = images.findIndex((x) => x.id === id);
        if (i >= 0) images.splice(i, 1);
      },
    };
    const gc = new ImageGC({
      images: service,
      containers: async () => containers,
      policy: { highThresholdPercent: 85, lowThresholdPercent: 80, minAgeMs: 120_000, ...p },
      fsStats: async () => fs,
      event: (type, reason, message) => events.push(`${type} ${reason} ${message}`),
      now: () => now,
    });
    return { gc, removed, events, advance: (ms: number) => (now += ms) };
  }

  void it('does nothing below the high threshold', async () => {
    const s = setup([img('a', 100)], [], { capacity: 1000, available: 200 }); // 80% used
    const r = await s.gc.collect();
    assert.equal(r.triggered, false);
    assert.equal(r.usagePercent, 80);
    assert.deepEqual(s.removed, []);
  });

  void it('frees down to the low threshold, least recently used first, skipping used, pinned and young images', async () => {
    const images = [img('old-used', 100), img('in-use', 100), img('never-used', 100), img('pinned', 100, true)];
    const containers = [container('c1', 'p', 'a', 1, 'CONTAINER_EXITED', 'sb', 'old-used:1')];
    const s = setup(images, containers, { capacity: 1000, available: 100 }); // 90% used; 100 bytes to free to reach 80%
    await s.gc.detect(); // first detection: everything counts as seen long ago; old-used is in use now
    containers.splice(0, 1, container('c2', 'p', 'a', 2, 'CONTAINER_RUNNING', 'sb', 'in-use:1'));
    s.advance(1000);
    images.push(img('young', 100)); // seen only now: too young for the 2 min minimum age
    const r = await s.gc.collect();
    assert.equal(r.triggered, true);
    // never-used (lastUsed never) goes before old-used (used a second ago); 100 bytes are enough
    assert.deepEqual(s.removed, ['never-used']);
    assert.deepEqual(s.events, []);
    const more = await s.gc.freeSpace(1000);
    assert.equal(more, 100, 'then old-used; never in-use, pinned or young');
    assert.deepEqual(s.removed, ['never-used', 'old-used']);
  });

  void it('deleteUnused (disk pressure): every unused, unpinned image first seen at least the minimum age ago, whatever the thresholds', async () => {
    const images = [img('old', 100), img('in-use', 100), img('pinned', 100, true)];
    const containers = [container('c1', 'p', 'a', 1, 'CONTAINER_RUNNING', 'sb', 'in-use:1')];
    const s = setup(images, containers, { capacity: 1000, available: 999 }, { minAgeMs: 20_000 });
    await s.gc.detect();
    images.push(img('young', 100));
    s.advance(1000);
    assert.deepEqual((await s.gc.deleteUnused()).removed, ['old'], 'young was first seen just now');
    s.advance(19_000);
    assert.deepEqual((await s.gc.deleteUnused()).removed, [], 'young is 19 s old');
    s.advance(1000);
    assert.deepEqual((await s.gc.deleteUnused()).removed, ['young']);
  });

  void it('warns with FreeDiskSpaceFailed when it cannot free enough; 100 disables collection', async () => {
    const s = setup([img('a', 10)], [], { capacity: 1000, available: 0 }, { minAgeMs: 0 });
    await s.gc.collect();
    assert.deepEqual(s.removed, ['a']);
    assert.deepEqual(s.events, ['Warning FreeDiskSpaceFailed failed to garbage collect required amount of images. Wanted to free 200 bytes, but freed 10 bytes']);
    const off = setup([img('a', 10)], [], { capacity: 1000, available: 0 }, { highThresholdPercent: 100, lowThresholdPercent: 0, minAgeMs: 0 });
    assert.equal((await off.gc.collect()).triggered, false);
    assert.deepEqual(off.removed, []);
  });

  void it('lists node status images largest first, capped, with at most five names each', () => {
    const many = { id: 'm', repoTags: ['t1', 't2', 't3', 't4'], repoDigests: ['d1', 'd2'], size: 5 };
    const list = nodeImages([img('small', 1), many, img('big', 9)], 2);
    assert.deepEqual(list, [
      { names: ['big:1'], sizeBytes: 9 },
      { names: ['d1', 'd2', 't1', 't2', 't3'], sizeBytes: 5 },
    ]);
    assert.equal(nodeImages([img('a', 1), img('b', 2)], -1).length, 2);
    assert.equal(nodeImages([img('a', 1)], 0).length, 0);
  });
});

void describe('runtime state (the Ready condition)', () => {
  void it('is down after the threshold without a good answer, and names unready runtime and network conditions', async () => {
    let now = T0;
    let answer: () => Promise<{ type: string; status: boolean; reason?: string; message?: string }[]> = async () => [
      { type: 'RuntimeReady', status: true },
      { type: 'NetworkReady', status: true },
    ];
    let changes = 0;
    const s = new RuntimeState({ status: () => answer(), downAfterMs: 30_000, now: () => now, onChange: () => changes++ });
    assert.deepEqual(s.errors(), ['container runtime status check may not have completed yet']);
    await s.check();
    assert.deepEqual(s.errors(), []);
    answer = () => Promise.reject(new Error('connection refused'));
    now += 29_000;
    await s.check();
    assert.deepEqual(s.errors(), [], 'not down before 30 s');
    now += 1_000;
    await s.check();
    assert.deepEqual(s.errors(), ['container runtime is down']);
    answer = async () => [
      { type: 'RuntimeReady', status: true },
      { type: 'NetworkReady', status: false, reason: 'NetworkPluginNotReady', message: 'Network plugin returns error: cni plugin not initialized' },
    ];
    await s.check();
    assert.deepEqual(s.errors(), ['container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized']);
    assert.equal(changes, 2);
    assert.equal(aggregateMessage(['container runtime is down']), 'container runtime is down');
    assert.equal(aggregateMessage(['a', 'b', 'a']), '[a, b]');
  });

  void it('adds failing health checks (the PLEG) after the runtime errors, in Go duration words', async () => {
    let pleg: string | undefined = 'pleg has yet to be successful';
    const s = new RuntimeState({ status: async () => [{ type: 'RuntimeReady', status: true }, { type: 'NetworkReady', status: true }], healthChecks: [{ name: 'PLEG', check: () => pleg }] });
    await s.check();
    assert.deepEqual(s.errors(), ['PLEG is not healthy: pleg has yet to be successful']);
    pleg = undefined;
    assert.deepEqual(s.errors(), []);
    assert.deepEqual([goDuration(180_000), goDuration(185_123), goDuration(2_500), goDuration(3_723_004), goDuration(250), goDuration(60_000)], ['3m0s', '3m5.123s', '2.5s', '1h2m3.004s', '250ms', '1m0s']);
  });
});
