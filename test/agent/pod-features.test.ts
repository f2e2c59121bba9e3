// Units of the pod features: the atomic writer, the downward API values, probe defaults, the
// eviction manager's thresholds (soft grace, minimum reclaim, transition period) and ranking;
// volume ownership for fsGroup, tmpfs sizes, the fallback to disk and the unmounting of orphans.
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { lstat, mkdir, mkdtemp, readdir, readFile, readlink, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeAtomic } from '../../src/agent/atomic-writer.js';
import { fieldValue, formatMap, resourceValue } from '../../src/agent/env.js';
import { admitUnderPressure, EvictionManager, parseThresholds, rankForEviction, type Observations, type PodUsage } from '../../src/agent/eviction.js';
import { probeSpec } from '../../src/agent/probes.js';
import type { Pod } from '../../src/agent/types.js';
import { parseDuration } from '../../src/util/flags.js';
import { NO_OBJECTS } from '../../src/agent/objects.js';
import { PodSyncer } from '../../src/agent/podsync.js';
import { ProcessRuntime } from '../../src/agent/runtime/process.js';
import { StatusManager } from '../../src/agent/status-manager.js';
import { isMountPoint, mountsUnder, setUpVolumes, setVolumeOwnership, tmpfsSizeBytes, unmountOrphans, type TmpfsState } from '../../src/agent/volumes.js';

const pod = (name: string, extra: Partial<Pod['spec']> = {}, meta: Partial<Pod['metadata']> = {}): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'ns', uid: `uid-${name}`, ...meta },
  spec: { containers: [{ name: 'c', image: 'x', command: ['sleep'] }], ...extra },
});

void describe('atomic writer', () => {
  let dir: string;
  after(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  void it('swaps ..data to a new timestamped directory on change, drops stale keys, and does nothing without a change', async () => {
    dir = await mkdtemp(join(tmpdir(), 'orchlet-aw-'));
    const v = join(dir, 'vol');
    const f = (s: string, mode = 0o644) => ({ data: Buffer.from(s), mode });
    assert.equal(await writeAtomic(v, new Map([['a', f('1')], ['sub/b', f('2')]])), true);
    const first = await readlink(join(v, '..data'));
    assert.equal(await readFile(join(v, 'sub', 'b'), 'utf8'), '2');
    assert.equal(await writeAtomic(v, new Map([['a', f('1')], ['sub/b', f('2')]])), false, 'unchanged');
    assert.equal(await writeAtomic(v, new Map([['a', f('3')]])), true);
    const second = await readlink(join(v, '..data'));
    assert.notEqual(second, first);
    assert.deepEqual((await readdir(v)).sort(), ['..data', second, 'a'].sort(), 'old directory and stale link gone');
    assert.equal(await readFile(join(v, 'a'), 'utf8'), '3');
    await assert.rejects(writeAtomic(v, new Map([['../x', f('x')]])), /must not contain '\.\.'/);
  });
});

void describe('downward API values', () => {
  void it('formats labels as kubelet does and resolves fields and resources', () => {
    const p = pod('web', { nodeName: 'n1', serviceAccountName: 'sa', containers: [{ name: 'c', image: 'x', resources: { limits: { cpu: '1500m', memory: '128Mi' }, requests: { memory: '64Mi' } } }] }, { labels: { b: '2', a: 'x"y' } });
    assert.equal(formatMap(p.metadata.labels!), 'a="x\\"y"\nb="2"');
    const ctx = { pod: p, hostIP: '10.0.0.1', podIP: '10.1.0.5', allocatable: { cpu: 4, memory: 8 * 2 ** 30 } };
    assert.equal(fieldValue(ctx, "metadata.labels['b']"), '2');
    assert.equal(fieldValue(ctx, 'spec.serviceAccountName'), 'sa');
    assert.equal(fieldValue(ctx, 'status.podIP'), '10.1.0.5');
    assert.equal(fieldValue(ctx, 'status.hostIP'), '10.0.0.1');
    assert.throws(() => fieldValue(ctx, 'spec.nope'), /unsupported fieldPath/);
    assert.equal(resourceValue(ctx, 'c', { resource: 'limits.cpu' }), '2', 'cpu rounds up to whole cores');
    assert.equal(resourceValue(ctx, 'c', { resource: 'limits.cpu', divisor: '1m' }), '1500');
    assert.equal(resourceValue(ctx, 'c', { resource: 'requests.memory', divisor: '1Mi' }), '64');
    const noLimits = { ...ctx, pod: pod('bare') };
    assert.equal(resourceValue(noLimits, 'c', { resource: 'limits.memory', divisor: '1Gi' }), '8', 'no limit: node allocatable');
  });
});

void describe('probe defaults', () => {
  void it('applies the API defaults and keeps liveness successThreshold at 1', () => {
    const c = { name: 'c', image: 'x', livenessProbe: { exec: { command: ['true'] }, successThreshold: 3 }, readinessProbe: { tcpSocket: { port: 80 }, successThreshold: 2, terminationGracePeriodSeconds: 5 } };
    const live = probeSpec(c, 'liveness')!;
    assert.deepEqual([live.initialDelaySeconds, live.periodSeconds, live.timeoutSeconds, live.successThreshold, live.failureThreshold], [0, 10, 1, 1, 3]);
    const ready = probeSpec(c, 'readiness')!;
    assert.equal(ready.successThreshold, 2);
    assert.equal(ready.terminationGracePeriodSeconds, 5);
    assert.equal(probeSpec(c, 'startup'), undefined);
  });
});

void describe('eviction manager', () => {
  const obs = (memAvailable: number): Observations => ({ 'memory.available': { available: memAvailable, capacity: 16 * 2 ** 30 } });
  const Gi = 2 ** 30;

  void it('parses thresholds and refuses unknown signals and soft thresholds without a grace period', () => {
    const t = parseThresholds({ 'memory.available': '1Gi', 'nodefs.available': '10%' }, { 'memory.available': '2Gi' }, { 'memory.available': '30s' }, { 'memory.available': '500Mi' }, parseDuration);
    assert.equal(t.length, 3);
    assert.equal(t.find((x) => x.signal === 'nodefs.available')?.percent, 0.1);
    assert.equal(t.find((x) => !x.hard)?.gracePeriodMs, 30_000);
    assert.throws(() => parseThresholds({ 'cpu.available': '1' }, {}, {}, {}, parseDuration), /unsupported eviction signal cpu\.available/);
    assert.throws(() => parseThresholds({}, { 'memory.available': '1Gi' }, {}, {}, parseDuration), /grace period must be given/);
  });

  void it('acts on soft thresholds after their grace, holds until the minimum reclaim, keeps pressure for the transition period', async () => {
    let now = 0;
    const m = new EvictionManager({
      thresholds: parseThresholds({}, { 'memory.available': '1Gi' }, { 'memory.available': '10s' }, { 'memory.available': '1Gi' }, parseDuration),
      pressureTransitionPeriodMs: 60_000,
      maxPodGracePeriodSeconds: 7,
      now: () => now,
    });
    const victims: PodUsage[] = [{ pod: pod('a', { priority: 5 }) }];
    let d = await m.synchronize(obs(0.5 * Gi), async () => victims);
    assert.ok(d.conditions.has('MemoryPressure'), 'pressure as soon as the threshold is met');
    assert.equal(d.evict, undefined, 'within the grace period');
    now = 10_000;
    d = await m.synchronize(obs(0.5 * Gi), async () => victims);
    assert.equal(d.evict?.pod.metadata.name, 'a');
    assert.equal(d.evict?.graceSeconds, 7, '--eviction-max-pod-grace-period for a soft threshold');
    now = 11_000;
    d = await m.synchronize(obs(1.5 * Gi), async () => victims);
    assert.equal(d.evict?.pod.metadata.name, 'a', 'above the threshold but not by the minimum reclaim: still acting');
    now = 12_000;
    d = await m.synchronize(obs(3 * Gi), async () => victims);
    assert.equal(d.evict, undefined);
    assert.ok(d.conditions.has('MemoryPressure'), 'within the transition period');
    now = 80_000;
    d = await m.synchronize(obs(3 * Gi), async () => victims);
    assert.equal(d.conditions.size, 0);
  });

  void it('reclaims node-level resources before evicting for a disk signal, and evicts only when that is not enough', async () => {
    const disk = (available: number): Observations => ({ 'imagefs.available': { available, capacity: 100 * Gi } });
    let after = disk(20 * Gi);
    const reclaimed: string[] = [];
    const m = new EvictionManager({
      thresholds: parseThresholds({ 'imagefs.available': '10Gi' }, {}, {}, {}, parseDuration),
      pressureTransitionPeriodMs: 0,
      maxPodGracePeriodSeconds: 0,
      reclaimNodeLevel: async (signal, resource) => {
        reclaimed.push(`${signal} ${resource}`);
        return after;
      },
    });
    const victims: PodUsage[] = [{ pod: pod('a'), disk: 1 }];
    const freed = await m.synchronize(disk(5 * Gi), async () => victims);
    assert.deepEqual(reclaimed, ['imagefs.available ephemeral-storage']);
    assert.equal(freed.evict, undefined, 'reclaiming brought the signal back above the threshold');
    assert.ok(freed.conditions.has('DiskPressure'));
    after = disk(6 * Gi);
    assert.equal((await m.synchronize(disk(5 * Gi), async () => victims)).evict?.pod.metadata.name, 'a', 'not enough: a pod goes');
  });

  void it('ranks pods as kubelet does and never picks critical pods', async () => {
    const hard = new EvictionManager({ thresholds: parseThresholds({ 'memory.available': '100Ti' }, {}, {}, {}, parseDuration), pressureTransitionPeriodMs: 0, maxPodGracePeriodSeconds: 0 });
    const critical = [{ pod: pod('static', {}, { annotations: { 'kubernetes.io/config.source': 'file' } }) }, { pod: pod('system', { priority: 2_000_000_000 }) }];
    assert.equal((await hard.synchronize(obs(Gi), async () => critical)).evict, undefined);
    assert.equal((await hard.synchronize(obs(Gi), async () => [...critical, { pod: pod('plain') }])).evict?.graceSeconds, 0, 'grace 0 for a hard threshold');
    const req = (r: string) => ({ containers: [{ name: 'c', image: 'x', resources: { requests: { memory: r } } }] });
    const u = (name: string, spec: Partial<Pod['spec']>, memory: number, meta: Partial<Pod['metadata']> = {}): PodUsage => ({ pod: pod(name, spec, meta), memory });
    const ranked = rankForEviction(
      [u('within-low', { ...req('1Gi'), priority: 0 }, 100), u('within-high', { ...req('1Gi'), priority: 10 }, 100), u('over-high', { ...req('1Ki'), priority: 10 }, 5000), u('over-more', { ...req('1Ki'), priority: 10 }, 9000)],
      'memory',
    ).map((x) => x.pod.metadata.name);
    assert.deepEqual(ranked, ['over-more', 'over-high', 'within-low', 'within-high']);
    const pids = rankForEviction([{ pod: pod('few'), processes: 1 }, { pod: pod('many'), processes: 9 }, { pod: pod('prio', { priority: -1 }), processes: 1 }], 'pids').map((x) => x.pod.metadata.name);
    assert.deepEqual(pids, ['prio', 'many', 'few']);
  });

  void it('admits under pressure as kubelet does', () => {
    const burstable = pod('b', { containers: [{ name: 'c', image: 'x', resources: { requests: { memory: '1Mi' } } }] });
    const besteffort = pod('be');
    const tolerating = pod('t', { tolerations: [{ key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoSchedule' }] });
    const staticPod = pod('s', {}, { annotations: { 'kubernetes.io/config.source': 'file' } });
    const mem = new Set(['MemoryPressure'] as const);
    assert.equal(admitUnderPressure(burstable, mem), undefined);
    assert.equal(admitUnderPressure(besteffort, mem), 'The node had condition: [MemoryPressure]. ');
    assert.equal(admitUnderPressure(tolerating, mem), undefined);
    assert.equal(admitUnderPressure(staticPod, new Set(['DiskPressure'] as const)), undefined);
    assert.equal(admitUnderPressure(burstable, new Set(['MemoryPressure', 'DiskPressure'] as const)), 'The node had condition: [MemoryPressure, DiskPressure]. ');
  });
});

void describe('volumes: fsGroup ownership, tmpfs', () => {
  const dirs: string[] = [];
  const isRoot = process.getuid?.() === 0;
  after(async () => {
    for (const d of dirs) {
      for (const m of await mountsUnder(d)) execFileSync('umount', ['-l', m]);
      await rm(d, { recursive: true, force: true });
    }
  });
  const tmp = async (): Promise<string> => {
    const d = await mkdtemp(join(tmpdir(), 'orchlet-vol-'));
    dirs.push(d);
    return d;
  };

  void it('sets group ownership as SetVolumeOwnership does: g+rw (g+r read-only), directories g+x and setgid, links untouched', async (t) => {
    if (!isRoot) return t.skip('needs root to change groups');
    const d = await tmp();
    await mkdir(join(d, 'sub'), { mode: 0o700 });
    await writeFile(join(d, 'sub', 'f'), 'x', { mode: 0o600 });
    await writeFile(join(d, 'target'), 'y', { mode: 0o400 });
    await symlink('target', join(d, 'link'));
    await setVolumeOwnership(d, 4321, false);
    const mode = async (p: string): Promise<[number, number]> => {
      const st = await lstat(join(d, p));
      return [st.gid, st.mode & 0o7777];
    };
    assert.deepEqual(await mode('sub'), [4321, 0o2770]);
    assert.deepEqual(await mode('sub/f'), [4321, 0o660]);
    assert.deepEqual(await mode('target'), [4321, 0o660]);
    assert.equal((await lstat(join(d, 'link'))).gid, 4321);
    await writeFile(join(d, 'ro'), 'z', { mode: 0o400 });
    await setVolumeOwnership(d, 4321, true);
    assert.deepEqual(await mode('ro'), [4321, 0o440]);
  });

  void it('sizes a tmpfs as kubelet does: allocatable memory, lowered by the pod memory limit and sizeLimit', () => {
    const p = pod('m', { containers: [{ name: 'a', image: 'x', resources: { limits: { memory: '64Mi' } } }, { name: 'b', image: 'x', resources: { limits: { memory: '32Mi' } } }] });
    assert.equal(tmpfsSizeBytes(p, { secret: {} }, 2 ** 30), 96 * 2 ** 20);
    assert.equal(tmpfsSizeBytes(p, { emptyDir: { medium: 'Memory', sizeLimit: '1M' } }, 2 ** 30), 1e6);
    assert.equal(tmpfsSizeBytes(pod('n'), { secret: {} }, 2 ** 30), 2 ** 30);
    assert.equal(tmpfsSizeBytes(pod('n'), { secret: {} }, 0), undefined);
  });

  void it('keeps memory-backed volumes on disk when tmpfs cannot be mounted, and says so once per volume set-up', async () => {
    const d = await tmp();
    const state: TmpfsState = { available: false, reason: 'mount: permission denied' };
    const p = pod('fallback', { volumes: [{ name: 'mem', emptyDir: { medium: 'Memory' } }, { name: 'api', downwardAPI: { items: [{ path: 'n', fieldRef: { fieldPath: 'metadata.name' } }] } }] });
    const said: string[] = [];
    await setUpVolumes({ pod: p, objects: NO_OBJECTS, allocatable: { cpu: 1, memory: 2 ** 30 } }, d, { tmpfs: state, onTmpfsFallback: (v, m) => said.push(`${v}: ${m}`) });
    assert.deepEqual(said, [
      'mem: volume "mem" is on disk, not tmpfs: mounting tmpfs failed on this node (mount: permission denied)',
      'api: volume "api" is on disk, not tmpfs: mounting tmpfs failed on this node (mount: permission denied)',
    ]);
    const mem = join(d, 'volumes', 'kubernetes.io~empty-dir', 'mem');
    assert.equal(await isMountPoint(mem), false);
    assert.equal((await stat(mem)).mode & 0o777, 0o777);
    assert.equal(await readFile(join(d, 'volumes', 'kubernetes.io~downward-api', 'api', 'n'), 'utf8'), 'fallback');
    // The emptyDir is ready now: a second pass does not report it again.
    said.length = 0;
    await setUpVolumes({ pod: p, objects: NO_OBJECTS, allocatable: { cpu: 1, memory: 2 ** 30 } }, d, { tmpfs: state, onTmpfsFallback: (v) => said.push(v) });
    assert.deepEqual(said, ['api']);
  });

  void it('mounts tmpfs once, and unmounts the volumes of pods it is not told to keep', async (t) => {
    if (!isRoot) return t.skip('needs root to mount');
    const root = await tmp();
    const state: TmpfsState = {};
    const mk = (uid: string): Pod => ({ ...pod(uid, { volumes: [{ name: 'mem', emptyDir: { medium: 'Memory', sizeLimit: '2Mi' } }] }), metadata: { name: uid, namespace: 'ns', uid } });
    for (const uid of ['keep', 'gone']) {
      const podDir = join(root, 'pods', uid);
      await setUpVolumes({ pod: mk(uid), objects: NO_OBJECTS, allocatable: { cpu: 1, memory: 2 ** 30 } }, podDir, { tmpfs: state });
      await setUpVolumes({ pod: mk(uid), objects: NO_OBJECTS, allocatable: { cpu: 1, memory: 2 ** 30 } }, podDir, { tmpfs: state });
    }
    assert.equal(state.available, true);
    const mem = (uid: string): string => join(root, 'pods', uid, 'volumes', 'kubernetes.io~empty-dir', 'mem');
    assert.deepEqual((await mountsUnder(root)).sort(), [mem('keep'), mem('gone')].sort(), 'one mount per volume, however many passes');
    assert.deepEqual(await unmountOrphans(root, new Set(['keep'])), [mem('gone')]);
    assert.deepEqual(await mountsUnder(root), [mem('keep')]);
  });

  void it('on the process runtime, unmounts what an earlier agent left before the first pod starts, then mounts the pod afresh', async (t) => {
    if (!isRoot) return t.skip('needs root to mount');
    const root = await tmp();
    const stale = join(root, 'pods', 'old-pod', 'volumes', 'kubernetes.io~secret', 's');
    await mkdir(stale, { recursive: true });
    execFileSync('mount', ['-t', 'tmpfs', 'tmpfs', stale]);
    const runtime = new ProcessRuntime();
    const logs: string[] = [];
    const syncer = new PodSyncer({ runtime, statusManager: new StatusManager(), rootDir: root, allowPrivileged: false, log: (_l, m) => logs.push(m) });
    const p: Pod = {
      ...pod('fresh', {
        restartPolicy: 'Never',
        volumes: [{ name: 'mem', emptyDir: { medium: 'Memory' } }],
        containers: [{ name: 'c', image: 'x', command: ['true'] }],
      }),
      metadata: { name: 'fresh', namespace: 'ns', uid: 'fresh-uid' },
    };
    try {
      await syncer.syncPod(p);
      assert.deepEqual(await mountsUnder(join(root, 'pods')), [join(root, 'pods', 'fresh-uid', 'volumes', 'kubernetes.io~empty-dir', 'mem')]);
      assert.deepEqual(logs, [`unmounted 1 tmpfs volume(s) an earlier agent left under ${join(root, 'pods')}`]);
      await syncer.terminatePod(p, 0);
      await syncer.cleanupPod(p);
      assert.deepEqual(await mountsUnder(join(root, 'pods')), [], 'cleanup unmounts');
      assert.equal(await stat(join(root, 'pods', 'fresh-uid')).catch(() => undefined), undefined);
    } finally {
      await runtime.shutdown(0);
    }
  });
});
