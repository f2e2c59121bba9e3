/**
 * The CPU and memory managers on containerd (bin/orchlet --container-runtime=remote, standalone): with
 * --cpu-manager-policy=static and --reserved-cpus=0 a Guaranteed pod with cpu: 1 gets CPU 1 for
 * its container (the container's cgroup cpuset.cpus, set at CreateContainer), and a container that
 * was already running on both CPUs loses it (UpdateContainerResources from the reconcile loop), then
 * gets it back when the Guaranteed pod goes; --memory-manager-policy=Static confines the Guaranteed
 * container's memory to NUMA node 0 (cpuset.mems).
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, unlink, writeFile } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { BUSYBOX_IMAGE, stopHarness, containerdTestPrerequisites, startContainerd, type ContainerdHarness } from '../helpers/containerd.js';
import { freePort } from '../helpers/ports.js';
import { eventually } from '../helpers/eventually.js';
import type { Pod } from '../../src/agent/types.js';
import { getJSON } from '../helpers/http.js';
import { criStandaloneArgs, spawnOrchlet } from '../helpers/orchlet-process.js';

const NODE = 'cm-cri-node';
const CPUSET_ROOT = '/sys/fs/cgroup/cpuset';

const missing = containerdTestPrerequisites();

let harness: ContainerdHarness | undefined;
after(async () => {
  await stopHarness(harness);
});

/** The cpuset cgroup directory of a container (named by its id) under `root`. */
function cgroupDirOf(root: string, id: string): string | undefined {
  if (!existsSync(root)) return undefined;
  for (const e of readdirSync(root, { withFileTypes: true })) {
    if (!e.isDirectory()) continue;
    const p = join(root, e.name);
    if (e.name === id) return p;
    const found = cgroupDirOf(p, id);
    if (found) return found;
  }
  return undefined;
}

const read = (dir: string, file: string): string => readFileSync(join(dir, file), 'utf8').trim();

void describe('resource managers on containerd', () => {
  void it('exclusive CPU and NUMA memory through CRI; the shared pool shrinks and grows', async (t) => {
    if (missing.length > 0) return t.skip(`missing: ${missing.join(', ')}`);
    if (cpus().length !== 2 || !existsSync(join(CPUSET_ROOT, 'cpuset.cpus'))) return t.skip('needs 2 CPUs and the cgroup v1 cpuset hierarchy');
    harness = await startContainerd();
    const h = harness;
    const dir = await mkdtemp(join(tmpdir(), 'orchlet-cm-cri-'));
    const manifests = join(dir, 'manifests');
    const root = join(dir, 'root');
    await mkdir(manifests);
    const pod = (name: string, resources?: Record<string, unknown>) =>
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name },
        spec: { containers: [{ name: 'c', image: BUSYBOX_IMAGE, command: ['sleep', '3600'], ...(resources ? { resources } : {}) }] },
      });
    await writeFile(join(manifests, 'shared.json'), pod('shared'));
    const readOnlyPort = await freePort();
    const orchlet = spawnOrchlet([
      ...criStandaloneArgs(h, { node: NODE, manifests, root, certDir: join(dir, 'pki'), port: await freePort(), readOnlyPort }),
      '--cpu-manager-policy=static',
      '--reserved-cpus=0',
      '--cpu-manager-reconcile-period=1s',
      '--memory-manager-policy=Static',
      '--reserved-memory=0:memory=100Mi',
      '--topology-manager-policy=single-numa-node',
    ]);
    const { child, exited } = orchlet;
    const cgroupBase = join(CPUSET_ROOT, h.cgroupRoot);
    /** The cpuset cgroup of the running container of pod `name`. */
    const containerCgroup = async (name: string): Promise<string> =>
      eventually(
        `pod ${name} to run`,
        async () => {
          const list = (await getJSON(readOnlyPort, '/pods').catch(() => undefined)) as { items?: Pod[] } | undefined;
          const p = list?.items?.find((x) => x.metadata.name === `${name}-${NODE}`);
          const st = p?.status?.containerStatuses?.[0];
          if (!st?.state?.running || !st.containerID) return undefined;
          return cgroupDirOf(cgroupBase, st.containerID.replace(/^[a-z]+:\/\//, ''));
        },
        { timeoutMs: 60_000 },
      ).catch((err: unknown) => {
        throw new Error(`${String(err)}\norchlet stderr:\n${orchlet.stderr()}`);
      });
    const cpusetOf = (cg: string) => read(cg, 'cpuset.cpus');
    try {
      const shared = await containerCgroup('shared');
      await eventually('the shared container on both CPUs', () => cpusetOf(shared) === '0-1', { timeoutMs: 20_000 });
      await writeFile(join(manifests, 'excl.json'), pod('excl', { limits: { cpu: '1', memory: '64Mi' } }));
      const excl = await containerCgroup('excl');
      assert.equal(cpusetOf(excl), '1', 'the Guaranteed container has CPU 1 from its creation');
      assert.equal(read(excl, 'cpuset.mems'), '0', 'and its memory on NUMA node 0');
      // the container's process sees it too
      const pid = read(excl, 'cgroup.procs').split('\n')[0]!;
      assert.match(readFileSync(`/proc/${pid}/status`, 'utf8'), /Cpus_allowed_list:\s*1\n/);
      await eventually('the shared container to lose CPU 1', () => cpusetOf(shared) === '0', { timeoutMs: 20_000 });
      // the Guaranteed pod goes: CPU 1 returns to the shared pool
      await unlink(join(manifests, 'excl.json'));
      await eventually('the shared container to get CPU 1 back', () => cpusetOf(shared) === '0-1', { timeoutMs: 30_000 });
      await unlink(join(manifests, 'shared.json'));
      await eventually(
        'the pods to go',
        async () => (((await getJSON(readOnlyPort, '/pods')) as { items?: Pod[] }).items ?? []).length === 0,
        { timeoutMs: 30_000 },
      );
      child.kill('SIGTERM');
      assert.equal(await exited, 0, orchlet.stderr());
    } finally {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await exited;
      }
      await rm(dir, { recursive: true, force: true });
    }
  });
});
