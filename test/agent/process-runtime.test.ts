// The runtime contract suite against the built-in process runtime.
// Then what only the process runtime does: supplementary groups (fsGroup, supplementalGroups) through setpriv.
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseLog } from '../../src/agent/runtime/crilog.js';
import { effectiveSecurityContext, resolveIdentity } from '../../src/agent/runtime/identity.js';
import { RuntimeError, type ContainerConfig, type ContainerStatus, type LinuxContainerSecurityContext } from '../../src/agent/runtime/runtime.js';
import { ProcessRuntime } from '../../src/agent/runtime/process.js';
import { runtimeContract, waitFor } from './runtime-contract.js';

runtimeContract('process runtime', async (options) => new ProcessRuntime({ allowPrivileged: options.allowPrivileged === true }));

void describe('process runtime: supplementary groups', () => {
  const isRoot = process.getuid?.() === 0;
  const rt = new ProcessRuntime();
  let dir = '';
  let seq = 0;
  after(async () => {
    await rt.shutdown(0);
    if (dir) await rm(dir, { recursive: true, force: true });
  });
  const run = async (command: string[], securityContext: LinuxContainerSecurityContext): Promise<ContainerStatus> => {
    dir ||= await mkdtemp(join(tmpdir(), 'orchlet-groups-'));
    seq++;
    const sb = { metadata: { name: `p${seq}`, uid: `u${seq}`, namespace: 'default', attempt: 0 }, logDirectory: join(dir, `p${seq}`) };
    const sandbox = await rt.runPodSandbox(sb);
    const config: ContainerConfig = { metadata: { name: 'c', attempt: 0 }, image: 'busybox', command, args: [], envs: [], logPath: 'c/0.log', securityContext };
    const id = await rt.createContainer(sandbox, config, sb);
    await rt.startContainer(id).catch(() => undefined);
    return waitFor('exit', async () => {
      const s = await rt.containerStatus(id);
      return s.state === 'CONTAINER_EXITED' ? s : undefined;
    });
  };
  const out = async (s: ContainerStatus): Promise<string[]> => parseLog(await readFile(s.logPath, 'utf8')).map((r) => `${r.stream} ${r.content}`);

  void it('puts fsGroup first, then supplementalGroups, into the security context', () => {
    assert.deepEqual(effectiveSecurityContext({ fsGroup: 2000, supplementalGroups: [3000, 2000, 4000] }, { runAsUser: 1000 }), { runAsUser: 1000, supplementalGroups: [2000, 3000, 4000] });
    assert.deepEqual(effectiveSecurityContext({ runAsUser: 5 }, undefined), { runAsUser: 5 });
  });

  void it('refuses group 0 among the supplementary groups unless privileged', () => {
    const r = resolveIdentity({ runAsUser: 1000, supplementalGroups: [0] }, false);
    assert.equal(r.ok, false);
    const p = resolveIdentity({ runAsUser: 1000, privileged: true, supplementalGroups: [0, 7] }, true);
    assert.deepEqual(p, { ok: true, identity: { uid: 1000, gid: 65534, groups: [0, 7] } });
  });

  void it('runs the process with exactly the supplementary groups asked for', async (t) => {
    if (!isRoot) return t.skip('needs root to switch users');
    const s = await run(['sh', '-c', 'id -u; id -g; id -G'], { runAsUser: 1000, runAsGroup: 1500, supplementalGroups: [2000, 3000] });
    assert.equal(s.exitCode, 0);
    assert.deepEqual(await out(s), ['stdout 1000', 'stdout 1500', 'stdout 1500 2000 3000']);
    const plain = await run(['sh', '-c', 'id -G'], { runAsUser: 1000 });
    assert.deepEqual(await out(plain), ['stdout 65534']);
  });

  void it('reports a missing command with groups as StartError, as spawn does without them', async (t) => {
    if (!isRoot) return t.skip('needs root to switch users');
    const s = await run(['no-such-command-h6'], { runAsUser: 1000, supplementalGroups: [2000] });
    assert.equal(s.reason, 'StartError');
    assert.equal(s.exitCode, 128);
    assert.equal(s.message, 'spawn no-such-command-h6 ENOENT');
    const sb = { metadata: { name: 'x', uid: 'x', namespace: 'default', attempt: 0 }, logDirectory: join(dir, 'x') };
    const id = await rt.createContainer(await rt.runPodSandbox(sb), { metadata: { name: 'c', attempt: 0 }, image: 'b', command: ['sleep', '60'], args: [], envs: [], logPath: 'c/0.log', securityContext: { supplementalGroups: [0] } }, sb).catch((e: unknown) => e);
    assert.ok(id instanceof RuntimeError && id.code === 'ConfigRefused');
  });
});

