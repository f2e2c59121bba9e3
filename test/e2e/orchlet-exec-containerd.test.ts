// End to end: kubectl exec, attach and port-forward through the server to bin/orchlet with
// --container-runtime=remote on a containerd of its own (test/helpers/containerd.ts): the agent asks
// the CRI for a streaming URL and proxies the upgraded connection to containerd's streaming server,
// which speaks SPDY/3.1 and the WebSocket channel protocols up to v4. kubectl 1.30 and later offer
// only v5.channel.k8s.io over WebSocket, which containerd 1.6 refuses, and fall back to SPDY, as they
// do against a Kubernetes 1.23 cluster.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { kubectlPath, startCluster, type TestCluster } from '../helpers/cluster.js';
import { BUSYBOX_IMAGE, stopHarness, containerdTestPrerequisites, startContainerd, type ContainerdHarness } from '../helpers/containerd.js';
import { freePort } from '../helpers/ports.js';
import { criRuntimeArgs, loopbackAgentArgs } from '../helpers/orchlet-process.js';
import { waitFor } from '../agent/runtime-contract.js';
import { httpGet, withPortForward } from '../helpers/portforward.js';

type Json = Record<string, any>;

const ORCHLET = fileURLToPath(new URL('../../../bin/orchlet', import.meta.url));
const NODE = 'exec-cri-node';
const VERSIONS = ['1.27', '1.33'].filter((v) => kubectlPath(v) !== null);

const missing = containerdTestPrerequisites();

void describe('kubectl exec, attach and port-forward on containerd', { skip: missing.length > 0 ? `missing: ${missing.join(', ')}` : false }, () => {
  let c: TestCluster;
  let h: ContainerdHarness;
  let orchlet: ChildProcess | undefined;
  let exited: Promise<number | null> | undefined;
  let dir: string;
  let stderr = '';
  const pod = (name: string, script: string, spec: Json = {}): Json => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default' },
    spec: {
      nodeName: NODE,
      terminationGracePeriodSeconds: 1,
      automountServiceAccountToken: false,
      ...spec,
      containers: [{ name: 'main', image: BUSYBOX_IMAGE, command: ['sh', '-c', script] }],
    },
  });
  const create = async (obj: Json): Promise<void> => {
    const r = await c.kubectl(['create', '-f', '-'], { input: JSON.stringify(obj) });
    assert.equal(r.code, 0, r.stderr);
  };
  const waitRunning = (name: string) =>
    waitFor(`pod ${name} Running`, async () => {
      const r = await c.kubectl(['get', 'pod', name, '-o', 'json']);
      const p = r.code === 0 ? (JSON.parse(r.stdout) as Json) : undefined;
      return p?.status?.containerStatuses?.[0]?.state?.running ? p : undefined;
    }, 30_000).catch((err: unknown) => {
      throw new Error(`${String(err)}\norchlet stderr:\n${stderr.slice(-4000)}`);
    });

  before(async () => {
    c = await startCluster();
    h = await startContainerd();
    dir = await mkdtemp(join(tmpdir(), 'orch-exec-cri-'));
    orchlet = spawn(
      process.execPath,
      [
        ORCHLET,
        '--make-iptables-util-chains=false',
        `--orchconfig=${c.kubeconfig}`,
        ...criRuntimeArgs(h),
        ...loopbackAgentArgs({ node: NODE, dir, port: await freePort() }),
        '--streaming-connection-idle-timeout=5m',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    orchlet.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    exited = new Promise((resolve) => orchlet!.once('exit', (code) => resolve(code)));
    await create(pod('shell', 'echo ready; exec sleep 600'));
    await create(pod('web', 'mkdir -p /www && echo "hello from containerd" > /www/index.html && exec httpd -f -p 8080 -h /www'));
    await waitRunning('shell');
    await waitRunning('web');
  });
  after(async () => {
    if (orchlet && exited) {
      orchlet.kill('SIGTERM');
      const killer = setTimeout(() => orchlet!.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(killer);
    }
    await c?.stop();
    await stopHarness(h);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  for (const version of VERSIONS) {
    void it(`kubectl ${version} exec: output, error output and the exit code`, async () => {
      const r = await c.kubectl(['exec', 'shell', '--', 'sh', '-c', 'echo out; echo err >&2; exit 3'], { version });
      assert.equal(r.code, 3, r.stderr);
      assert.equal(r.stdout, 'out\n');
      assert.match(r.stderr, /^err$/m);
      const host = await c.kubectl(['exec', 'shell', '--', 'hostname'], { version });
      assert.equal(host.code, 0, host.stderr);
      assert.equal(host.stdout, 'shell\n', 'the command runs in the pod');
    });

    void it(`kubectl ${version} exec -i: stdin reaches the command`, async () => {
      const r = await c.kubectl(['exec', '-i', 'shell', '--', 'sh', '-c', 'while read l; do echo "got $l"; done; echo done'], { version, input: 'one\ntwo\n' });
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, 'got one\ngot two\ndone\n');
    });

    void it(`kubectl ${version} port-forward reaches httpd in the pod`, async () => {
      const answer = await withPortForward(c, version, 'pod/web', 8080, (local) => httpGet(local, '/index.html'));
      assert.equal(answer.code, 200);
      assert.equal(answer.body, 'hello from containerd\n');
    });
  }

  void it('kubectl attach shows what the container prints while attached', async () => {
    await create(pod('talker', 'sleep 1; i=0; while [ $i -lt 30 ]; do echo "tick $i"; i=$((i+1)); sleep 0.1; done', { restartPolicy: 'Never' }));
    await waitRunning('talker');
    const r = await c.kubectl(['attach', 'talker']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /tick 29\n$/);
  });
});
