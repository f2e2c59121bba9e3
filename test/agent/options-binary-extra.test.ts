// More options of bin/orchlet tested on the binary (issue 10): --cpu-cfs-quota=false on the containerd harness.
// The agent runs in a private mount namespace where kubelet's kernel tunables under /proc/sys are bind mounts of
// temporary files, so that it never writes the host's kernel settings (see test/agent/sysctl.test.ts).
import { after, describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseLog } from '../../src/agent/runtime/crilog.js';
import { KERNEL_TUNABLES } from '../../src/agent/sysctl.js';
import type { Pod } from '../../src/agent/types.js';
import { BUSYBOX_IMAGE, stopHarness, containerdTestPrerequisites, startContainerd, type ContainerdHarness } from '../helpers/containerd.js';
import { freePort } from '../helpers/ports.js';
import { getJSON } from '../helpers/http.js';
import { requireBinary } from '../helpers/binaries.js';
import { criStandaloneArgs, ORCHLET_BIN } from '../helpers/orchlet-process.js';
import { waitFor } from './runtime-contract.js';

const NODE = 'extra-node';
const missing = containerdTestPrerequisites();

let harness: ContainerdHarness | undefined;
after(async () => {
  await stopHarness(harness);
});

/** A bash script running bin/orchlet with `args` in a mount namespace over temporary /proc/sys tunables (exec all the way: its pid is the agent's). */
async function namespacedOrchlet(t: TestContext, dir: string, args: readonly string[]): Promise<string | undefined> {
  const unshare = requireBinary(t, 'unshare');
  const mount = requireBinary(t, 'mount');
  if (!unshare || !mount) return undefined;
  const files = join(dir, 'proc-sys');
  await mkdir(files);
  const file = (flag: string) => join(files, flag.replace(/\//g, '.'));
  for (const [flag] of KERNEL_TUNABLES) await writeFile(file(flag), await readFile(`/proc/sys/${flag}`, 'utf8'));
  const script = join(dir, 'orchlet.sh');
  await writeFile(
    script,
    [
      'set -e',
      `exec ${unshare} --mount --propagation private sh -c '`,
      '  set -e',
      ...KERNEL_TUNABLES.map(([flag]) => `  ${mount} --bind ${file(flag)} /proc/sys/${flag}`),
      `  exec ${process.execPath} ${ORCHLET_BIN} --make-iptables-util-chains=false ${args.join(' ')}`,
      `'`,
    ].join('\n'),
  );
  return script;
}

void describe('orchlet options on the binary (more)', () => {
  void it('--cpu-cfs-quota=false: a container with a CPU limit gets no CFS quota (-1), its shares kept', async (t) => {
    if (missing.length > 0) return t.skip(`missing: ${missing.join(', ')}`);
    if (process.getuid?.() !== 0) return t.skip('needs root');
    harness = await startContainerd();
    const h = harness;
    const dir = await mkdtemp(join(tmpdir(), 'orchlet-extra-'));
    const manifests = join(dir, 'manifests');
    const root = join(dir, 'root');
    await mkdir(manifests);
    await writeFile(
      join(manifests, 'limits.yaml'),
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'limits' },
        spec: {
          restartPolicy: 'Never',
          containers: [
            {
              name: 'c',
              image: BUSYBOX_IMAGE,
              command: ['sh', '-c', 'cd /sys/fs/cgroup/cpu,cpuacct 2>/dev/null || cd /sys/fs/cgroup/cpu; echo "quota $(cat cpu.cfs_quota_us) shares $(cat cpu.shares)"'],
              resources: { requests: { cpu: '100m', memory: '16Mi' }, limits: { cpu: '250m', memory: '32Mi' } },
            },
          ],
        },
      }),
    );
    const [port, readOnlyPort] = [await freePort(), await freePort()];
    const script = await namespacedOrchlet(t, dir, [
      ...criStandaloneArgs(h, { node: NODE, manifests, root, certDir: join(dir, 'pki'), port, readOnlyPort }),
      `--image-service-endpoint=${h.endpoint}`,
      '--cpu-cfs-quota=false',
    ]);
    if (!script) return;
    const child = spawn('bash', [script], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      const podOf = async (): Promise<Pod | undefined> => {
        const list = (await getJSON(readOnlyPort, '/pods').catch(() => undefined)) as { items?: Pod[] } | undefined;
        return list?.items?.find((p) => p.metadata.name === `limits-${NODE}`);
      };
      const done = await waitFor('limits to finish', async () => {
        const p = await podOf();
        return p?.status?.phase === 'Succeeded' || p?.status?.phase === 'Failed' ? p : undefined;
      }, 30_000);
      assert.equal(done.status?.phase, 'Succeeded', `${JSON.stringify(done.status?.containerStatuses)}\n${stderr}`);
      const log = parseLog(await readFile(join(root, 'pods', done.metadata.uid, 'containers', 'c', '0.log'), 'utf8')).map((r) => r.content);
      assert.deepEqual(log, ['quota -1 shares 102']);
      // and the pod's own cgroup, seen from the host
      const cpuRoot = ['/sys/fs/cgroup/cpu,cpuacct', '/sys/fs/cgroup/cpu'];
      let podQuota: string | undefined;
      for (const r of cpuRoot) {
        podQuota = await readFile(join(r, h.cgroupRoot, 'kubepods', 'burstable', `pod${done.metadata.uid}`, 'cpu.cfs_quota_us'), 'utf8').catch(() => undefined);
        if (podQuota !== undefined) break;
      }
      assert.equal(podQuota?.trim(), '-1');
      child.kill('SIGTERM');
      assert.equal(await exited, 0, stderr);
    } finally {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        const killer = setTimeout(() => child.kill('SIGKILL'), 15_000);
        await exited;
        clearTimeout(killer);
      }
      await rm(dir, { recursive: true, force: true });
    }
  });
});
