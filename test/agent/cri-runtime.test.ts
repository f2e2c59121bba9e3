// The runtime contract suite, and what only a CRI runtime does (images, pod networking, cgroup
// limits, exec), against a real containerd started by test/helpers/containerd.ts (one per file).
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CriRuntime } from '../../src/agent/runtime/cri.js';
import { parseLog } from '../../src/agent/runtime/crilog.js';
import { RuntimeError, type ContainerConfig, type PodSandboxConfig } from '../../src/agent/runtime/runtime.js';
import { BUSYBOX_IMAGE, stopHarness, containerdTestPrerequisites, startContainerd, UNREACHABLE_IMAGE, type ContainerdHarness } from '../helpers/containerd.js';
import { runtimeContract, waitFor } from './runtime-contract.js';

// Under CI=true a missing program fails here; locally the file skips.
const missing = containerdTestPrerequisites();

let harness: Promise<ContainerdHarness> | undefined;
const started = (): Promise<ContainerdHarness> => (harness ??= startContainerd());
after(async () => {
  if (!harness) return;
  const h = await harness;
  await stopHarness(h);
});

async function connect(allowPrivileged = false): Promise<CriRuntime> {
  const h = await started();
  return CriRuntime.connect({ runtimeEndpoint: h.endpoint, allowPrivileged, cgroupRoot: h.cgroupRoot, eventPollMs: 200, requestTimeoutMs: 30_000 });
}

if (missing.length > 0) {
  void describe('CRI runtime (containerd)', () => {
    void it('needs containerd', (t) => t.skip(`missing: ${missing.join(', ')}`));
  });
} else {
  runtimeContract('CRI runtime (containerd)', (o) => connect(o.allowPrivileged === true), {
    image: BUSYBOX_IMAGE,
    defaultUid: 0,
    defaultGid: 0,
    rootNeedsPrivilege: false,
    ownPidNamespace: true,
  });

  void describe('CRI runtime: images, networking, limits', () => {
    let rt: CriRuntime;
    let dir: string;
    let seq = 0;

    const sandbox = (extra: Partial<PodSandboxConfig> = {}): PodSandboxConfig => {
      seq++;
      return {
        metadata: { name: `x${seq}`, uid: `xuid-${seq}`, namespace: 'default', attempt: 0 },
        hostname: `x${seq}`,
        logDirectory: join(dir, `x${seq}`),
        ...extra,
      };
    };
    const container = (command: string[], extra: Partial<ContainerConfig> = {}): ContainerConfig => ({
      metadata: { name: 'c', attempt: 0 },
      image: BUSYBOX_IMAGE,
      command,
      args: [],
      envs: [],
      logPath: 'c/0.log',
      ...extra,
    });
    const logOf = async (path: string): Promise<string[]> => parseLog(await readFile(path, 'utf8')).map((r) => r.content);

    void it('connects over runtime.v1 and reports containerd', async () => {
      dir = await mkdtemp(join(tmpdir(), 'orch-cri-'));
      rt = await connect();
      assert.equal(rt.client.apiVersion, 'v1');
      const v = await rt.version();
      assert.equal(v.runtimeName, 'containerd');
      const conditions = await rt.runtimeConditions();
      assert.ok(conditions.some((c) => c.type === 'RuntimeReady' && c.status), JSON.stringify(conditions));
    });

    void it('knows the local images, and fails to pull from an unreachable registry with the reason', async () => {
      const busybox = await rt.images.imageStatus(BUSYBOX_IMAGE);
      assert.ok(busybox && busybox.id.startsWith('sha256:'), JSON.stringify(busybox));
      assert.ok(busybox.repoTags.includes(BUSYBOX_IMAGE));
      assert.equal(await rt.images.imageStatus(UNREACHABLE_IMAGE), undefined);
      assert.ok((await rt.images.listImages()).some((i) => i.repoTags.includes(BUSYBOX_IMAGE)));
      await assert.rejects(rt.images.pullImage(UNREACHABLE_IMAGE), (e: unknown) => {
        assert.ok(e instanceof RuntimeError, String(e));
        assert.match(e.message, /127\.0\.0\.1:1/);
        assert.match(e.message, /connection refused|dial tcp/);
        return true;
      });
    });

    void it('gives a pod its own IP on the bridge, reachable from the host over HTTP', async () => {
      const sb = sandbox();
      const id = await rt.runPodSandbox(sb);
      const status = await rt.podSandboxStatus(id);
      const h = await started();
      const ip = status.network?.ip ?? '';
      assert.ok(ip.startsWith(h.subnet.slice(0, h.subnet.lastIndexOf('.') + 1)), `pod IP ${ip} in ${h.subnet}`);
      const cid = await rt.createContainer(
        id,
        container(['sh', '-c', 'mkdir -p /www && echo "hello from $(hostname)" > /www/index.html && exec httpd -f -p 8080 -h /www']),
        sb,
      );
      await rt.startContainer(cid);
      const body = await waitFor('the pod to answer HTTP', () =>
        new Promise<string | undefined>((resolve) => {
          const req = request({ host: ip, port: 8080, path: '/index.html', timeout: 1000 }, (res) => {
            let text = '';
            res.on('data', (c: Buffer) => (text += c.toString()));
            res.on('end', () => resolve(text));
          });
          req.on('error', () => resolve(undefined));
          req.on('timeout', () => req.destroy());
          req.end();
        }),
      );
      assert.equal(body.trim(), `hello from ${sb.hostname}`);
      const exec = await rt.execSync(cid, ['sh', '-c', 'echo out; echo err >&2; exit 3'], 10);
      assert.deepEqual([exec.stdout.toString(), exec.stderr.toString(), exec.exitCode], ['out\n', 'err\n', 3]);
      await rt.stopPodSandbox(id, 0);
      await rt.removePodSandbox(id);
      assert.deepEqual(await rt.listPodSandbox({ id }), []);
    });

    void it("reads a new sandbox's status once: the hairpin setup's verbose status gives the pod its IP", async () => {
      const h = await started();
      const hp = await CriRuntime.connect({ runtimeEndpoint: h.endpoint, cgroupRoot: h.cgroupRoot, requestTimeoutMs: 30_000, hairpin: { mode: 'hairpin-veth', sysfs: dir } });
      const asked: boolean[] = [];
      const ask = hp.client.podSandboxStatus.bind(hp.client);
      hp.client.podSandboxStatus = (id, verbose = false) => {
        asked.push(verbose);
        return ask(id, verbose);
      };
      try {
        const id = await hp.runPodSandbox(sandbox());
        const first = await hp.podSandboxStatus(id);
        assert.ok(first.network?.ip.startsWith(h.subnet.slice(0, h.subnet.lastIndexOf('.') + 1)), JSON.stringify(first));
        assert.equal(first.state, 'SANDBOX_READY');
        assert.deepEqual(asked, [true], 'one verbose PodSandboxStatus, for hairpin and IP');
        // later reads ask the runtime again
        await hp.stopPodSandbox(id, 0);
        assert.equal((await hp.podSandboxStatus(id)).state, 'SANDBOX_NOTREADY');
        assert.deepEqual(asked, [true, false]);
        await hp.removePodSandbox(id);
      } finally {
        await hp.detach();
      }
    });

    void it('reports a stop the agent asked for as soon as StopContainer answers, before any relist', async () => {
      const h = await started();
      // a relist period longer than the test: only the calls' own answers can report
      const slow = await CriRuntime.connect({ runtimeEndpoint: h.endpoint, cgroupRoot: h.cgroupRoot, requestTimeoutMs: 30_000, eventPollMs: 600_000 });
      const events: string[] = [];
      const off = slow.onContainerEvent((e) => events.push(`${e.type} ${e.containerId}`));
      try {
        await slow.relistNow();
        const sb = sandbox();
        const id = await slow.runPodSandbox(sb);
        const cid = await slow.createContainer(id, container(['sleep', '60']), sb);
        await slow.startContainer(cid);
        const mine = (): string[] => events.filter((e) => e.endsWith(` ${cid}`));
        assert.deepEqual(mine(), [`CONTAINER_STARTED_EVENT ${cid}`]);
        await slow.stopContainer(cid, 0);
        assert.deepEqual(mine(), [`CONTAINER_STARTED_EVENT ${cid}`, `CONTAINER_STOPPED_EVENT ${cid}`]);
        assert.equal((await slow.containerStatus(cid)).state, 'CONTAINER_EXITED');
        await slow.stopPodSandbox(id, 0);
        await slow.removePodSandbox(id);
      } finally {
        off();
        await slow.detach();
      }
    });

    void it('runs a hostNetwork sandbox in the node network namespace', async () => {
      const sb = sandbox({ linux: { hostNetwork: true } });
      const id = await rt.runPodSandbox(sb);
      const cid = await rt.createContainer(id, container(['sh', '-c', 'ip -o link show eth0 >/dev/null 2>&1 || true; cat /proc/net/dev | wc -l']), sb);
      await rt.startContainer(cid);
      const s = await waitFor('exit', async () => {
        const st = await rt.containerStatus(cid);
        return st.state === 'CONTAINER_EXITED' ? st : undefined;
      });
      const hostLines = (await readFile('/proc/net/dev', 'utf8')).trimEnd().split('\n').length;
      assert.deepEqual(await logOf(s.logPath), [String(hostLines)]);
      await rt.removePodSandbox(id);
    });

    void it('kills a container over its memory limit: exit code 137, reason OOMKilled', async () => {
      const sb = sandbox();
      const id = await rt.runPodSandbox(sb);
      // A 64 MiB string in shell memory against a 16 MiB limit.
      const cid = await rt.createContainer(
        id,
        container(['sh', '-c', 'x=$(head -c 67108864 /dev/zero | tr "\\0" a); echo survived ${#x}'], { resources: { memoryLimitInBytes: 16 * 1024 * 1024 } }),
        sb,
      );
      await rt.startContainer(cid);
      const s = await waitFor('the OOM kill', async () => {
        const st = await rt.containerStatus(cid);
        return st.state === 'CONTAINER_EXITED' ? st : undefined;
      }, 30_000);
      assert.equal(s.exitCode, 137);
      assert.equal(s.reason, 'OOMKilled');
      await rt.removePodSandbox(id);
    });

    void it('places sandboxes under <cgroupRoot>/pod<uid> and removes that cgroup with the sandbox', async () => {
      const h = await started();
      const sb = sandbox();
      const id = await rt.runPodSandbox(sb);
      const cgroupDir = join('/sys/fs/cgroup/memory', h.cgroupRoot, `pod${sb.metadata.uid}`);
      const v1 = existsSync('/sys/fs/cgroup/memory');
      if (v1) assert.ok(existsSync(cgroupDir), `${cgroupDir} exists`);
      const cid = await rt.createContainer(id, container(['sleep', '30']), sb);
      await rt.startContainer(cid);
      if (v1) {
        const cgroup = await rt.execSync(cid, ['cat', '/proc/self/cgroup'], 10);
        assert.match(cgroup.stdout.toString(), new RegExp(`memory:${h.cgroupRoot}/pod${sb.metadata.uid}/`));
      }
      await rt.removePodSandbox(id);
      assert.ok(!existsSync(cgroupDir), `${cgroupDir} removed`);
      await assert.rejects(rt.containerStatus(cid), (e: unknown) => e instanceof RuntimeError && e.code === 'NotFound');
    });

    void it('refuses privileged sandboxes and containers unless allowed', async () => {
      await assert.rejects(rt.runPodSandbox(sandbox({ linux: { privileged: true } })), (e: unknown) => e instanceof RuntimeError && e.code === 'ConfigRefused');
      await rt.shutdown(0);
      await rm(dir, { recursive: true, force: true });
    });
  });
}
