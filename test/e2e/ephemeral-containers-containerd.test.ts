// End to end: kubectl debug on bin/orchlet with --container-runtime=remote on a containerd of its own
// (test/helpers/containerd.ts): the ephemeral container is created in the running pod's sandbox (its network
// and UTS namespaces: the pod's hostname), in a PID namespace of its own, or with --target in the target
// container's (CRI's NamespaceMode TARGET, as kubelet 1.23 asks for it).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { kubectlPath, startCluster, type TestCluster } from '../helpers/cluster.js';
import { BUSYBOX_IMAGE, stopHarness, containerdTestPrerequisites, startContainerd, type ContainerdHarness } from '../helpers/containerd.js';
import { eventually } from '../helpers/eventually.js';
import { freePort } from '../helpers/ports.js';
import { criRuntimeArgs, loopbackAgentArgs, spawnOrchlet, type OrchletProcess } from '../helpers/orchlet-process.js';

type Json = Record<string, any>;

const NODE = 'eph-cri-node';
const NS = '/api/v1/namespaces/default/pods';
const VERSIONS = ['1.27', '1.33'].filter((v) => kubectlPath(v) !== null);
const missing = containerdTestPrerequisites();

void describe('kubectl debug on containerd', { skip: missing.length > 0 ? `missing: ${missing.join(', ')}` : false }, () => {
  let c: TestCluster;
  let h: ContainerdHarness;
  let agent: OrchletProcess | undefined;
  let dir: string;
  const get = async (name: string): Promise<Json> => {
    const r = await c.request('GET', `${NS}/${name}`);
    assert.equal(r.status, 200, r.text);
    return r.json as Json;
  };
  const ephemeralStatus = (pod: Json, name: string): Json | undefined => ((pod.status?.ephemeralContainerStatuses ?? []) as Json[]).find((s) => s.name === name);
  const terminated = (name: string) =>
    eventually(
      () => `ephemeral container ${name} terminated (agent: ${agent?.stderr().slice(-3000) ?? ''})`,
      async () => {
        const p = await get('target');
        return ephemeralStatus(p, name)?.state?.terminated ? p : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 250 },
    );

  before(async () => {
    c = await startCluster();
    h = await startContainerd();
    dir = await mkdtemp(join(tmpdir(), 'orch-eph-cri-'));
    agent = spawnOrchlet([
      `--orchconfig=${c.kubeconfig}`,
      ...criRuntimeArgs(h),
      ...loopbackAgentArgs({ node: NODE, dir, port: await freePort() }),
    ]);
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'target', namespace: 'default' },
      spec: { nodeName: NODE, terminationGracePeriodSeconds: 1, automountServiceAccountToken: false, containers: [{ name: 'main', image: BUSYBOX_IMAGE, command: ['sleep', '3600'] }] },
    };
    const r = await c.request('POST', NS, { body: pod });
    assert.equal(r.status, 201, r.text);
    await eventually(
      () => `pod target running (agent: ${agent?.stderr().slice(-3000) ?? ''})`,
      async () => (await get('target')).status?.containerStatuses?.[0]?.state?.running !== undefined,
      { timeoutMs: 60_000, intervalMs: 250 },
    );
  });
  after(async () => {
    if (agent) {
      if (agent.child.exitCode === null && agent.child.signalCode === null) agent.child.kill('SIGTERM');
      const killer = setTimeout(() => agent!.child.kill('SIGKILL'), 15_000);
      await agent.exited;
      clearTimeout(killer);
    }
    await c?.stop();
    await stopHarness(h);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const script = 'hostname; ps -o args';
  for (const version of VERSIONS) {
    const tag = version.replace('.', '');
    void it(`kubectl ${version} debug: in the pod's sandbox (its hostname), its own PID namespace; kubectl logs -c shows it`, async () => {
      const r = await c.kubectl(['debug', 'target', `--image=${BUSYBOX_IMAGE}`, `--container=own${tag}`, '--', 'sh', '-c', script], { version });
      assert.equal(r.code, 0, r.stderr);
      const pod = await terminated(`own${tag}`);
      const st = ephemeralStatus(pod, `own${tag}`)!;
      assert.equal(st.state.terminated.exitCode, 0);
      assert.match(st.containerID as string, /^[a-z]+:\/\/./);
      const logs = await c.kubectl(['logs', 'target', '-c', `own${tag}`], { version });
      assert.equal(logs.code, 0, logs.stderr);
      assert.match(logs.stdout, /^target$/m);
      assert.doesNotMatch(logs.stdout, /sleep 3600/);
    });

    void it(`kubectl ${version} debug --target=main: in the target container's PID namespace`, async () => {
      const r = await c.kubectl(['debug', 'target', `--image=${BUSYBOX_IMAGE}`, `--container=tgt${tag}`, '--target=main', '--', 'sh', '-c', script], { version });
      assert.equal(r.code, 0, r.stderr);
      const pod = await terminated(`tgt${tag}`);
      assert.equal((pod.spec.ephemeralContainers as Json[]).find((e) => e.name === `tgt${tag}`)?.targetContainerName, 'main');
      const logs = await c.kubectl(['logs', 'target', '-c', `tgt${tag}`], { version });
      assert.equal(logs.code, 0, logs.stderr);
      assert.match(logs.stdout, /^target$/m);
      assert.match(logs.stdout, /^sleep 3600$/m);
      assert.equal(pod.status.containerStatuses[0].restartCount, 0);
    });
  }
});
