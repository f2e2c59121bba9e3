// End to end: bin/orchlet standalone with --container-runtime=remote on a containerd of its own
// (test/helpers/containerd.ts), running static pods from a manifest directory as real containers.
// Pod status is read from the read-only port's /pods; the runtime's state through the CRI.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CriClient } from '../../src/agent/runtime/cri/client.js';
import { parseLog } from '../../src/agent/runtime/crilog.js';
import type { Pod } from '../../src/agent/types.js';
import { BUSYBOX_IMAGE, stopHarness, containerdTestPrerequisites, startContainerd, UNREACHABLE_IMAGE, type ContainerdHarness } from '../helpers/containerd.js';
import { freePort } from '../helpers/ports.js';
import { waitFor } from './runtime-contract.js';
import { getJSON } from '../helpers/http.js';
import { criStandaloneArgs, spawnOrchlet } from '../helpers/orchlet-process.js';

const ORCHLET = fileURLToPath(new URL('../../../bin/orchlet', import.meta.url));
const NODE = 'cri-node';

const missing = containerdTestPrerequisites();

let harness: ContainerdHarness | undefined;
after(async () => {
  await stopHarness(harness);
});

const pod = (name: string, spec: Record<string, unknown>) => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec });

void describe('orchlet on containerd (--container-runtime=remote)', () => {
  void it('runs static pods as containers: logs, pod IP, OOMKilled, image pull back-off, deletion', async (t) => {
    if (missing.length > 0) return t.skip(`missing: ${missing.join(', ')}`);
    harness = await startContainerd();
    const h = harness;
    const dir = await mkdtemp(join(tmpdir(), 'orchlet-cri-'));
    const manifests = join(dir, 'manifests');
    const root = join(dir, 'root');
    await mkdir(manifests);
    await writeFile(
      join(manifests, 'web.yaml'),
      JSON.stringify(
        pod('web', {
          terminationGracePeriodSeconds: 2,
          containers: [{ name: 'app', image: BUSYBOX_IMAGE, command: ['sh', '-c', 'echo "hello from $(hostname) as $(id -u)"; exec sleep 600'] }],
        }),
      ),
    );
    await writeFile(
      join(manifests, 'oom.yaml'),
      JSON.stringify(
        pod('oom', {
          restartPolicy: 'Never',
          containers: [
            {
              name: 'hog',
              image: BUSYBOX_IMAGE,
              command: ['sh', '-c', 'x=$(head -c 67108864 /dev/zero | tr "\\0" a); echo survived'],
              resources: { limits: { memory: '16Mi' } },
            },
          ],
        }),
      ),
    );
    // --cgroup-root with the QoS hierarchy (--cgroups-per-qos) and CFS quota per --cpu-cfs-quota-period, seen from inside.
    await writeFile(
      join(manifests, 'limits.yaml'),
      JSON.stringify(
        pod('limits', {
          restartPolicy: 'Never',
          containers: [
            {
              name: 'c',
              image: BUSYBOX_IMAGE,
              command: ['sh', '-c', 'grep -E ":cpu[,:]" /proc/self/cgroup; cd /sys/fs/cgroup/cpu,cpuacct 2>/dev/null || cd /sys/fs/cgroup/cpu; echo "period $(cat cpu.cfs_period_us) quota $(cat cpu.cfs_quota_us) shares $(cat cpu.shares)"'],
              resources: { requests: { cpu: '100m', memory: '16Mi' }, limits: { cpu: '250m', memory: '32Mi' } },
            },
          ],
        }),
      ),
    );
    await writeFile(join(manifests, 'pull.yaml'), JSON.stringify(pod('pull', { containers: [{ name: 'c', image: UNREACHABLE_IMAGE }] })));

    const [port, readOnlyPort] = [await freePort(), await freePort()];
    const orchlet = spawnOrchlet([
      ...criStandaloneArgs(h, { node: NODE, manifests, root, certDir: join(dir, 'pki'), port, readOnlyPort }),
      '--cpu-cfs-quota-period=50ms',
      '--feature-gates=CustomCPUCFSQuotaPeriod=true',
      `--image-service-endpoint=${h.endpoint}`,
      '--runtime-request-timeout=30s',
      '--serialize-image-pulls=false',
      '--registry-qps=0',
    ], { stdout: 'pipe' });
    const { child, exited } = orchlet;
    const cri = await CriClient.connect({ runtimeEndpoint: h.endpoint });
    const podStatus = async (name: string): Promise<Pod['status'] | undefined> => {
      const list = (await getJSON(readOnlyPort, '/pods').catch(() => undefined)) as { items?: Pod[] } | undefined;
      return list?.items?.find((p) => p.metadata.name === `${name}-${NODE}`)?.status;
    };
    const sandboxesOf = async (name: string) => (await cri.listPodSandbox({ labelSelector: { 'io.kubernetes.pod.name': `${name}-${NODE}` } })).length;
    // Watched from the start: ErrImagePull lasts only until the next sync shows the back-off.
    const pulls = new Set<string>();
    let pullMessage = '';
    const pullWatch = waitFor('ImagePullBackOff', async () => {
      const w = (await podStatus('pull'))?.containerStatuses?.[0]?.state.waiting;
      if (w?.reason) pulls.add(w.reason);
      if (w?.reason === 'ErrImagePull') pullMessage = w.message ?? '';
      return w?.reason === 'ImagePullBackOff' ? w : undefined;
    }, 30_000);
    pullWatch.catch(() => undefined);
    try {
      // The busybox pod runs, with its own IP on the bridge, and logs in the CRI format.
      const web = await waitFor(
        'web to run',
        async () => {
          const s = await podStatus('web');
          return s?.phase === 'Running' ? s : undefined;
        },
        20_000,
      ).catch((err: unknown) => {
        throw new Error(`${String(err)}\norchlet stderr:\n${orchlet.stderr()}\ncontainerd:\n${h.log()}`);
      });
      const prefix = h.subnet.slice(0, h.subnet.lastIndexOf('.') + 1);
      assert.ok(web.podIP?.startsWith(prefix), `podIP ${web.podIP} in ${h.subnet}`);
      const app = web.containerStatuses?.[0];
      assert.ok(app?.state.running, JSON.stringify(app));
      assert.match(app.imageID, /^sha256:[0-9a-f]{64}$/);
      const uid = (await getJSON(readOnlyPort, '/pods').then((l) => (l as { items: Pod[] }).items.find((p) => p.metadata.name === `web-${NODE}`)))!.metadata.uid;
      const logFile = join(root, 'pods', uid, 'containers', 'app', '0.log');
      const text = await waitFor('the app log', async () => {
        const t = await readFile(logFile, 'utf8').catch(() => '');
        return t.includes('hello') ? t : undefined;
      });
      assert.match(text.split('\n')[0]!, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z stdout F hello from web-cri-node as 0$/);
      assert.deepEqual(parseLog(text).map((r) => r.content), [`hello from web-${NODE} as 0`]);

      // Over its memory limit: OOMKilled, and with restartPolicy Never the pod fails.
      const oom = await waitFor('oom to fail', async () => {
        const s = await podStatus('oom');
        return s?.phase === 'Failed' ? s : undefined;
      }, 20_000);
      const hog = oom.containerStatuses?.[0]?.state.terminated;
      assert.equal(hog?.reason, 'OOMKilled', JSON.stringify(oom.containerStatuses));
      assert.equal(hog?.exitCode, 137);

      // The pod's cgroups: <cgroup-root>/kubepods/burstable/pod<uid>/<container>, quota 250m of a 50 ms period, shares of 100m.
      const limits = await waitFor('limits to finish', async () => {
        const s = await podStatus('limits');
        return s?.phase === 'Succeeded' || s?.phase === 'Failed' ? s : undefined;
      }, 20_000);
      assert.equal(limits.phase, 'Succeeded', JSON.stringify(limits.containerStatuses));
      const limitsUid = (await getJSON(readOnlyPort, '/pods').then((l) => (l as { items: Pod[] }).items.find((p) => p.metadata.name === `limits-${NODE}`)))!.metadata.uid;
      const limitsLog = parseLog(await readFile(join(root, 'pods', limitsUid, 'containers', 'c', '0.log'), 'utf8')).map((r) => r.content);
      assert.match(limitsLog[0] ?? '', new RegExp(`:cpu[^:]*:${h.cgroupRoot}/kubepods/burstable/pod${limitsUid}/[0-9a-f]{64}$`), limitsLog.join('\n'));
      assert.equal(limitsLog[1], 'period 50000 quota 12500 shares 102');

      // An image no registry serves: ErrImagePull with the runtime's reason, then ImagePullBackOff.
      const backoff = await pullWatch;
      assert.equal(backoff.message, `Back-off pulling image "${UNREACHABLE_IMAGE}"`);
      assert.ok(pulls.has('ErrImagePull'), `reasons seen: ${[...pulls].join(', ')}`);
      assert.match(pullMessage, /failed to pull .*127\.0\.0\.1:1.*connection refused/);

      // Deleting the manifest stops and removes the pod's containers and sandbox.
      assert.equal(await sandboxesOf('web'), 1);
      await unlink(join(manifests, 'web.yaml'));
      await waitFor('the web sandbox to go', async () => ((await sandboxesOf('web')) === 0 ? true : undefined), 20_000);
      const left = await cri.listContainers({ labelSelector: { 'io.kubernetes.pod.name': `web-${NODE}` } });
      assert.deepEqual(left, []);
      assert.equal(await podStatus('web'), undefined);

      child.kill('SIGTERM');
      assert.equal(await exited, 0, orchlet.stderr());
      // SIGTERM leaves a CRI runtime's containers to the next agent (test/agent/cri-pods.test.ts); none runs here
      assert.deepEqual(await cri.listContainers({ state: { state: 'CONTAINER_RUNNING' } }), []);
    } finally {
      cri.close();
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        const killer = setTimeout(() => child.kill('SIGKILL'), 15_000);
        await exited;
        clearTimeout(killer);
      }
      await rm(dir, { recursive: true, force: true });
    }
  });

  void it('refuses --container-runtime-endpoint without --container-runtime=remote, and an endpoint nothing answers on', async () => {
    const run = async (args: string[]): Promise<{ code: number | null; stderr: string }> => {
      const child = spawn(process.execPath, [ORCHLET, '--make-iptables-util-chains=false', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
      return { code, stderr };
    };
    const a = await run(['--container-runtime-endpoint=unix:///nonexistent.sock']);
    assert.equal(a.code, 1);
    assert.match(a.stderr, /--container-runtime-endpoint: only with --container-runtime=remote/);
    const gc = await run(['--image-gc-high-threshold=80', '--image-gc-low-threshold=80']);
    assert.equal(gc.code, 1);
    assert.match(gc.stderr, /invalid configuration: imageGCLowThresholdPercent \(--image-gc-low-threshold\) 80 must be less than imageGCHighThresholdPercent \(--image-gc-high-threshold\) 80/);
    const dir = await mkdtemp(join(tmpdir(), 'orchlet-cri-'));
    try {
      const b = await run(['--container-runtime=remote', `--container-runtime-endpoint=unix://${join(dir, 'none.sock')}`, '--runtime-request-timeout=2s', `--root-dir=${dir}`]);
      assert.equal(b.code, 1);
      assert.match(b.stderr, /cannot reach the container runtime/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
