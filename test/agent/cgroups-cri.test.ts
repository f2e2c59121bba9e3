// bin/orchlet on containerd (test/helpers/containerd.ts) with node allocatable enforced: the values
// kubelet 1.23 writes, read from /sys/fs/cgroup under the harness's own cgroup root —
// <root>/kubepods with allocatable, the QoS tiers' shares and --qos-reserved memory limits as pods
// come and go, each pod's cgroup with its resources and --pod-max-pids, and containerd moved into
// --runtime-cgroups.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, unlink, writeFile } from 'node:fs/promises';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { CgroupFs, cgroupOf } from '../../src/agent/cgroups/fs.js';
import type { Pod } from '../../src/agent/types.js';
import { BUSYBOX_IMAGE, stopHarness, containerdTestPrerequisites, startContainerd, type ContainerdHarness } from '../helpers/containerd.js';
import { freePort } from '../helpers/ports.js';
import { waitFor } from './runtime-contract.js';
import { getJSON } from '../helpers/http.js';
import { criStandaloneArgs, spawnOrchlet } from '../helpers/orchlet-process.js';

const NODE = 'cg-node';
const Mi = 1024 * 1024;

const missing = containerdTestPrerequisites();
const v1 = existsSync('/sys/fs/cgroup/cpu/cpu.shares');

let harness: ContainerdHarness | undefined;
after(async () => {
  await stopHarness(harness);
});

const sleeper = (name: string, resources?: Record<string, unknown>) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name },
  spec: { terminationGracePeriodSeconds: 1, containers: [{ name: 'c', image: BUSYBOX_IMAGE, command: ['sleep', '600'], ...(resources ? { resources } : {}) }] },
});

void describe('orchlet node allocatable and QoS cgroups on containerd', () => {
  void it('kubepods, QoS tiers with --qos-reserved, pod cgroups with --pod-max-pids, --runtime-cgroups', { skip: !v1 && 'cgroup v1 only' }, async (t) => {
    if (missing.length > 0) return t.skip(`missing: ${missing.join(', ')}`);
    harness = await startContainerd();
    const h = harness;
    const fs = new CgroupFs();
    const read = (controller: string, name: string, file: string): string => readFileSync(join(fs.path(controller, name)!, file), 'utf8').trim();
    const dir = await mkdtemp(join(tmpdir(), 'orchlet-cgcri-'));
    const manifests = join(dir, 'manifests');
    await mkdir(manifests);
    await writeFile(join(manifests, 'guaranteed.yaml'), JSON.stringify(sleeper('guaranteed', { limits: { cpu: '200m', memory: '64Mi' } })));
    await writeFile(join(manifests, 'burstable.yaml'), JSON.stringify(sleeper('burstable', { requests: { cpu: '100m', memory: '32Mi' } })));
    await writeFile(join(manifests, 'besteffort.yaml'), JSON.stringify(sleeper('besteffort')));
    const readOnlyPort = await freePort();
    const runtimeCg = `${h.cgroupRoot}/runtime`;
    const orchlet = spawnOrchlet([
      ...criStandaloneArgs(h, { node: NODE, manifests, root: join(dir, 'root'), certDir: join(dir, 'pki'), port: await freePort(), readOnlyPort }),
      '--enforce-node-allocatable=pods',
      '--system-reserved=cpu=500m,memory=512Mi,pid=100',
      '--orch-reserved=memory=256Mi',
      '--feature-gates=QOSReserved=true',
      '--qos-reserved=memory=50%',
      '--pod-max-pids=64',
      `--runtime-cgroups=${runtimeCg}`,
    ]);
    const { child, exited } = orchlet;
    const pods = async (): Promise<Pod[]> => ((await getJSON(readOnlyPort, '/pods').catch(() => undefined)) as { items?: Pod[] } | undefined)?.items ?? [];
    try {
      const running = await waitFor(
        'the three pods to run',
        async () => {
          const list = await pods();
          return list.length === 3 && list.every((p) => p.status?.phase === 'Running') ? list : undefined;
        },
        60_000,
      ).catch((err: unknown) => {
        throw new Error(`${String(err)}\norchlet stderr:\n${orchlet.stderr()}\ncontainerd:\n${h.log()}`);
      });
      const uid = (name: string): string => running.find((p) => p.metadata.name === `${name}-${NODE}`)!.metadata.uid;

      // <root>/kubepods: allocatable = capacity - system-reserved - orch-reserved (hard eviction thresholds not subtracted)
      const kubepods = `${h.cgroupRoot}/kubepods`;
      const cores = cpus().length;
      const pidMax = Number(readFileSync('/proc/sys/kernel/pid_max', 'utf8'));
      const allocatable = totalmem() - 512 * Mi - 256 * Mi;
      assert.equal(read('cpu', kubepods, 'cpu.shares'), String(Math.floor(((cores * 1000 - 500) * 1024) / 1000)));
      assert.equal(read('memory', kubepods, 'memory.limit_in_bytes'), String(allocatable));
      assert.equal(read('pids', kubepods, 'pids.max'), String(pidMax - 100));

      // the QoS tiers: besteffort 2 shares, burstable the shares of its pods' requests; memory keeps 50% of the
      // Guaranteed requests from burstable, and 50% of the Burstable requests too from besteffort
      assert.equal(read('cpu', `${kubepods}/besteffort`, 'cpu.shares'), '2');
      assert.equal(read('cpu', `${kubepods}/burstable`, 'cpu.shares'), '102');
      assert.equal(read('memory', `${kubepods}/burstable`, 'memory.limit_in_bytes'), String(allocatable - 32 * Mi));
      assert.equal(read('memory', `${kubepods}/besteffort`, 'memory.limit_in_bytes'), String(allocatable - 32 * Mi - 16 * Mi));

      // each pod's cgroup: ResourceConfigForPod and --pod-max-pids; the pod's containers are under it
      const g = `${kubepods}/pod${uid('guaranteed')}`;
      assert.equal(read('cpu', g, 'cpu.shares'), '204');
      assert.equal(read('cpu', g, 'cpu.cfs_quota_us'), '20000');
      assert.equal(read('cpu', g, 'cpu.cfs_period_us'), '100000');
      assert.equal(read('memory', g, 'memory.limit_in_bytes'), String(64 * Mi));
      assert.equal(read('pids', g, 'pids.max'), '64');
      const b = `${kubepods}/burstable/pod${uid('burstable')}`;
      assert.equal(read('cpu', b, 'cpu.shares'), '102');
      assert.equal(read('cpu', b, 'cpu.cfs_quota_us'), '-1', 'no cpu limit: no quota');
      assert.equal(read('pids', b, 'pids.max'), '64');
      const e = `${kubepods}/besteffort/pod${uid('besteffort')}`;
      assert.equal(read('cpu', e, 'cpu.shares'), '2');
      assert.equal(read('pids', e, 'pids.max'), '64');
      const containerPids = read('pids', g, 'pids.current');
      assert.ok(Number(containerPids) >= 2, `the pause and sleep processes count in the pod's pids (${containerPids})`);

      // the Guaranteed pod goes: its reservation is given back to burstable (and besteffort)
      await unlink(join(manifests, 'guaranteed.yaml'));
      await waitFor(
        'burstable memory back to allocatable',
        () => (read('memory', `${kubepods}/burstable`, 'memory.limit_in_bytes') === String(allocatable) ? true : undefined),
        30_000,
      ).catch((err: unknown) => {
        throw new Error(`${String(err)}: ${read('memory', `${kubepods}/burstable`, 'memory.limit_in_bytes')}\n${orchlet.stderr()}`);
      });
      assert.equal(read('memory', `${kubepods}/besteffort`, 'memory.limit_in_bytes'), String(allocatable - 16 * Mi));
      await waitFor('the guaranteed pod cgroup to go', () => (existsSync(fs.path('memory', g)!) ? undefined : true), 30_000);

      // the runtime (the process serving the CRI socket) in --runtime-cgroups
      for (const c of ['cpu', 'memory', 'pids']) assert.equal(cgroupOf(h.pid, c), runtimeCg, c);
      assert.match(orchlet.stderr(), /node allocatable enforced on .*\/kubepods: cpu\.shares=\d+ memory=\d+ pids\.max=\d+/);

      child.kill('SIGTERM');
      assert.equal(await exited, 0, orchlet.stderr());
    } finally {
      if (child.exitCode === null) {
        child.kill('SIGKILL');
        await exited;
      }
      await rm(dir, { recursive: true, force: true });
    }
  });
});
