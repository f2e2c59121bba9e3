// The runtime contract suite against the built-in process runtime.
// Then what only the process runtime does: supplementary groups (fsGroup, supplementalGroups) through setpriv.
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseLog } from '../../src/agent/runtime/crilog.js';
import { effectiveSecurityContext, resolveIdentity } from '../../src/agent/runtime/identity.js';
import { RuntimeError, type ContainerConfig, type ContainerStatus, type LinuxContainerSecurityContext } from '../../src/agent/runtime/runtime.js';
import { ProcessRuntime } from '../../src/agent/runtime/process.js';
import { runtimeContract, waitFor } from './runtime-contract.js';

runtimeContract('process runtime', async (options) => new ProcessRuntime({ allowPrivileged: options.allowPrivileged === true }));

/**
 * A process runtime for one describe block, removed after it: create() makes a pod sandbox of its own (under a
 * temporary directory) and a container in it running `command`.
 */
function runtimeFixture(prefix: string) {
  const rt = new ProcessRuntime();
  let dir = '';
  let seq = 0;
  after(async () => {
    await rt.shutdown(0);
    if (dir) await rm(dir, { recursive: true, force: true });
  });
  /** The block's temporary directory, made on first use. */
  const workDir = async (): Promise<string> => (dir ||= await mkdtemp(join(tmpdir(), prefix)));
  const create = async (command: string[], securityContext?: LinuxContainerSecurityContext): Promise<string> => {
    await workDir();
    seq++;
    const sb = { metadata: { name: `p${seq}`, uid: `u${seq}`, namespace: 'default', attempt: 0 }, logDirectory: join(dir, `p${seq}`) };
    const config: ContainerConfig = { metadata: { name: 'c', attempt: 0 }, image: 'busybox', command, args: [], envs: [], logPath: 'c/0.log', ...(securityContext ? { securityContext } : {}) };
    return rt.createContainer(await rt.runPodSandbox(sb), config, sb);
  };
  return { rt, create, workDir };
}

void describe('process runtime: supplementary groups', () => {
  const isRoot = process.getuid?.() === 0;
  const { rt, create } = runtimeFixture('orchlet-groups-');
  const run = async (command: string[], securityContext: LinuxContainerSecurityContext): Promise<ContainerStatus> => {
    const id = await create(command, securityContext);
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
    const id = await create(['sleep', '60'], { supplementalGroups: [0] }).catch((e: unknown) => e);
    assert.ok(id instanceof RuntimeError && id.code === 'ConfigRefused');
  });
});


// The spawner's helper processes (spawner.ts): containers are their children; they end with the agent.
void describe('process runtime: spawner helper processes', () => {
  const isRoot = process.getuid?.() === 0;
  const { rt, create, workDir } = runtimeFixture('orchlet-spawner-');
  /** A process's state letter from /proc (Z: a zombie), or undefined when it is gone. */
  const stateOf = async (pid: number): Promise<string | undefined> => {
    const s = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
    return s?.slice(s.lastIndexOf(')') + 2).split(' ')[0];
  };
  const parentOf = async (pid: number): Promise<number> => {
    const s = await readFile(`/proc/${pid}/stat`, 'utf8');
    return Number(s.slice(s.lastIndexOf(')') + 2).split(' ')[1]);
  };
  const gone = (pid: number) => waitFor(`process ${pid} to end`, async () => ((await stateOf(pid)) ?? 'Z') === 'Z' || undefined);
  const startSleep = async (): Promise<string> => {
    const id = await create(['sleep', '60']);
    await rt.startContainer(id);
    return id;
  };

  void it('starts containers as children of its helpers, which ignore the signals a terminal or a stop sends the agent', async (t) => {
    if (!isRoot) return t.skip('needs root to start containers as another user');
    await rt.start();
    const helpers = rt.helperPids();
    assert.ok(helpers.length >= 2, `helpers: ${helpers.join(', ')}`);
    for (const h of helpers) {
      assert.equal(await parentOf(h), process.pid);
      await waitFor('the helper named orchlet-spawner', async () => ((await readFile(`/proc/${h}/comm`, 'utf8')).trim() === 'orchlet-spawner' ? true : undefined));
      process.kill(h, 'SIGINT');
      process.kill(h, 'SIGTERM');
      process.kill(h, 'SIGHUP');
    }
    const ids = await Promise.all(helpers.map(() => startSleep()));
    const parents = await Promise.all(ids.map((id) => parentOf(rt.pidOf(id)!)));
    for (const p of parents) assert.ok(helpers.includes(p), `container parent ${p}, helpers ${helpers.join(', ')}`);
    assert.deepEqual(rt.helperPids(), helpers, 'the same helpers, still running');
    for (const id of ids) await rt.stopContainer(id, 0);
  });

  void it('a container whose helper dies is killed and reported as killed; later starts go to a live helper', async (t) => {
    if (!isRoot) return t.skip('needs root to start containers as another user');
    const id = await startSleep();
    const pid = rt.pidOf(id)!;
    const helper = await parentOf(pid);
    process.kill(helper, 'SIGKILL');
    const s = await waitFor('the container reported exited', async () => {
      const st = await rt.containerStatus(id);
      return st.state === 'CONTAINER_EXITED' ? st : undefined;
    });
    assert.equal(s.exitCode, 137);
    await gone(pid);
    const next = await startSleep();
    assert.ok(!rt.helperPids().includes(helper));
    assert.ok(rt.helperPids().includes(await parentOf(rt.pidOf(next)!)));
    await rt.stopContainer(next, 0);
  });

  void it('the helpers end with the agent, even when it is killed (its containers keep running, as before)', async (t) => {
    if (!isRoot) return t.skip('needs root to start containers as another user');
    const processJs = new URL('../../src/agent/runtime/process.js', import.meta.url).href;
    const dir = await workDir();
    const script = `
      import { ProcessRuntime } from ${JSON.stringify(processJs)};
      const rt = new ProcessRuntime();
      await rt.start();
      const sb = { metadata: { name: 'k', uid: 'k', namespace: 'default', attempt: 0 }, logDirectory: ${JSON.stringify(join(dir, 'killed'))} };
      const id = await rt.createContainer(await rt.runPodSandbox(sb), { metadata: { name: 'c', attempt: 0 }, image: 'b', command: ['sleep', '60'], args: [], envs: [], logPath: 'c/0.log' }, sb);
      await rt.startContainer(id);
      process.stdout.write(JSON.stringify({ helpers: rt.helperPids(), pid: rt.pidOf(id) }) + '\\n');
      setInterval(() => undefined, 1000);
    `;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    const line = await new Promise<string>((resolve, reject) => {
      let out = '';
      child.stdout.setEncoding('utf8').on('data', (c: string) => {
        out += c;
        if (out.includes('\n')) resolve(out.slice(0, out.indexOf('\n')));
      });
      child.once('exit', (code) => reject(new Error(`the agent exited with ${code}`)));
    });
    const { helpers, pid } = JSON.parse(line) as { helpers: number[]; pid: number };
    assert.ok(helpers.length >= 2);
    child.kill('SIGKILL');
    for (const h of helpers) await gone(h);
    assert.notEqual((await stateOf(pid)) ?? 'Z', 'Z', 'the container still runs');
    process.kill(-pid, 'SIGKILL');
  });
});
