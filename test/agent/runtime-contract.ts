// The contract every orchlet Runtime must pass: the built-in process runtime (real commands from
// the host: sh, id, sleep) and the CRI runtime (the same commands from a busybox image). Where the
// two differ by design (the default user, root without privilege, PID namespaces) the runtime's
// ContractFeatures say which behaviour to expect.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rename, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseLog } from '../../src/agent/runtime/crilog.js';
import { RuntimeError, type ContainerConfig, type ContainerEvent, type PodSandboxConfig, type Runtime } from '../../src/agent/runtime/runtime.js';

export interface RuntimeFactoryOptions {
  allowPrivileged?: boolean;
}

export type RuntimeFactory = (options: RuntimeFactoryOptions) => Promise<Runtime>;

/** What a runtime does where runtimes legitimately differ. */
export interface ContractFeatures {
  /** The image of the test containers (it must have sh, id, sleep, pwd, printf). */
  image: string;
  /** The user a container runs as without runAsUser (process runtime: 65534; images: their user, root for busybox). */
  defaultUid: number;
  defaultGid: number;
  /** Whether runAsUser/runAsGroup 0 need privileged (the process runtime's host-user policy). */
  rootNeedsPrivilege: boolean;
  /** Whether the main process is PID 1 of its own PID namespace (it then cannot kill itself with a signal). */
  ownPidNamespace: boolean;
}

export const PROCESS_RUNTIME_FEATURES: ContractFeatures = {
  image: 'ignored:latest',
  defaultUid: 65534,
  defaultGid: 65534,
  rootNeedsPrivilege: true,
  ownPidNamespace: false,
};

export async function waitFor<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const isRoot = process.getuid?.() === 0;

export function runtimeContract(name: string, factory: RuntimeFactory, features: ContractFeatures = PROCESS_RUNTIME_FEATURES): void {
  void describe(`runtime contract: ${name}`, () => {
    let dir: string;
    let runtime: Runtime;
    let seq = 0;

    before(async () => {
      dir = await mkdtemp(join(tmpdir(), 'orchlet-rt-'));
      runtime = await factory({});
    });
    after(async () => {
      await runtime.shutdown(0);
      await rm(dir, { recursive: true, force: true });
    });

    function sandboxConfig(privileged = false): PodSandboxConfig {
      seq++;
      return {
        metadata: { name: `pod${seq}`, uid: `uid-${seq}`, namespace: 'default', attempt: 0 },
        hostname: `pod${seq}`,
        logDirectory: join(dir, `pod${seq}`, 'containers'),
        ...(privileged ? { linux: { privileged: true } } : {}),
      };
    }

    function containerConfig(script: string, extra: Partial<ContainerConfig> = {}, attempt = 0): ContainerConfig {
      return {
        metadata: { name: 'c', attempt },
        image: features.image,
        command: ['sh', '-c', script],
        args: [],
        envs: [],
        logPath: join('c', `${attempt}.log`),
        ...extra,
      };
    }

    async function run(script: string, extra: Partial<ContainerConfig> = {}, rt = runtime) {
      const sb = sandboxConfig(extra.securityContext?.privileged === true);
      const sandboxId = await rt.runPodSandbox(sb);
      const id = await rt.createContainer(sandboxId, containerConfig(script, extra), sb);
      await rt.startContainer(id);
      return { sb, sandboxId, id };
    }

    async function exited(id: string, rt = runtime) {
      return waitFor(`container ${id} to exit`, async () => {
        const s = await rt.containerStatus(id);
        return s.state === 'CONTAINER_EXITED' ? s : undefined;
      });
    }

    /** The records of a log file; none while the runtime has not created it yet. */
    async function logLines(path: string): Promise<string[]> {
      const text = await readFile(path, 'utf8').catch((err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOENT') return '';
        throw err;
      });
      return parseLog(text).map((r) => `${r.stream} ${r.content}`);
    }

    void it('reports its version', async () => {
      const v = await runtime.version();
      assert.ok(v.runtimeName.length > 0);
      assert.equal(v.runtimeApiVersion, 'v1');
    });

    void it('runs a container and writes stdout and stderr to its log in the CRI format', async () => {
      const { id, sb } = await run('echo out; echo err >&2; printf partial');
      const s = await exited(id);
      assert.equal(s.exitCode, 0);
      assert.equal(s.reason, 'Completed');
      assert.equal(s.logPath, join(sb.logDirectory, 'c', '0.log'));
      const text = await readFile(s.logPath, 'utf8');
      for (const line of text.trimEnd().split('\n')) {
        assert.match(line, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z (stdout|stderr) [FP] /, line);
      }
      const lines = await logLines(s.logPath);
      assert.ok(lines.includes('stdout out'), lines.join('|'));
      assert.ok(lines.includes('stderr err'), lines.join('|'));
      assert.ok(lines.includes('stdout partial'), lines.join('|'));
      assert.ok(s.startedAt && s.finishedAt && s.finishedAt >= s.startedAt);
    });

    void it('reports exit codes, and 128 + signal for a signalled process', async () => {
      const a = await exited((await run('exit 7')).id);
      assert.equal(a.exitCode, 7);
      assert.equal(a.reason, 'Error');
      if (!features.ownPidNamespace) {
        const b = await exited((await run('kill -KILL $$')).id);
        assert.equal(b.exitCode, 137);
      } else {
        // PID 1 of a namespace cannot be killed from inside it: the signal comes from the runtime.
        const { id } = await run('trap "" TERM; while :; do sleep 0.05; done');
        await runtime.stopContainer(id, 0);
        const b = await exited(id);
        assert.equal(b.exitCode, 137);
      }
    });

    void it('passes env, args and workingDir', async () => {
      const { id } = await run('echo "$FOO $0 $1"; pwd', {
        command: ['sh', '-c'],
        args: ['echo "$FOO $0 $1"; pwd', 'zero', 'one'],
        envs: [{ key: 'FOO', value: 'bar' }],
        workingDir: '/tmp',
      });
      const s = await exited(id);
      assert.deepEqual(await logLines(s.logPath), ['stdout bar zero one', 'stdout /tmp']);
    });

    void it('restarts a container as a new instance with its own log file', async () => {
      const sb = sandboxConfig();
      const sandboxId = await runtime.runPodSandbox(sb);
      const first = await runtime.createContainer(sandboxId, containerConfig('echo run; exit 1', {}, 0), sb);
      await runtime.startContainer(first);
      await exited(first);
      const second = await runtime.createContainer(sandboxId, containerConfig('echo run; exit 1', {}, 1), sb);
      assert.notEqual(second, first);
      await runtime.startContainer(second);
      const s = await exited(second);
      assert.equal(s.metadata.attempt, 1);
      assert.equal(s.logPath, join(sb.logDirectory, 'c', '1.log'));
      assert.deepEqual(await logLines(join(sb.logDirectory, 'c', '0.log')), ['stdout run']);
      assert.deepEqual(await logLines(s.logPath), ['stdout run']);
      const list = await runtime.listContainers({ podSandboxId: sandboxId });
      assert.deepEqual(list.map((c) => c.metadata.attempt).sort(), [0, 1]);
    });

    void it('stops a container with SIGTERM when it handles it', async () => {
      const { id } = await run('trap "echo got-term; exit 0" TERM; echo ready; while :; do sleep 0.05; done');
      await waitFor('ready', async () => ((await logLines((await runtime.containerStatus(id)).logPath)).includes('stdout ready') ? true : undefined));
      const t0 = Date.now();
      await runtime.stopContainer(id, 10);
      assert.ok(Date.now() - t0 < 5000, 'stopped well within the grace period');
      const s = await runtime.containerStatus(id);
      assert.equal(s.state, 'CONTAINER_EXITED');
      assert.equal(s.exitCode, 0);
      assert.ok((await logLines(s.logPath)).includes('stdout got-term'));
    });

    void it('kills a container that ignores SIGTERM once the grace period is over', async () => {
      const { id } = await run('trap "" TERM; echo ready; while :; do sleep 0.05; done');
      await waitFor('ready', async () => ((await logLines((await runtime.containerStatus(id)).logPath)).includes('stdout ready') ? true : undefined));
      const t0 = Date.now();
      await runtime.stopContainer(id, 1);
      const took = Date.now() - t0;
      assert.ok(took >= 900 && took < 5000, `took ${took} ms`);
      const s = await runtime.containerStatus(id);
      assert.equal(s.exitCode, 137);
      await runtime.stopContainer(id, 1); // idempotent
    });

    void it('reports a command that cannot start as StartError (exit code 128)', async () => {
      const sb = sandboxConfig();
      const sandboxId = await runtime.runPodSandbox(sb);
      const id = await runtime.createContainer(sandboxId, containerConfig('', { command: ['/nonexistent/binary'] }), sb);
      await assert.rejects(runtime.startContainer(id), (e: unknown) => e instanceof RuntimeError && e.code === 'StartFailed');
      const s = await runtime.containerStatus(id);
      assert.equal(s.state, 'CONTAINER_EXITED');
      assert.equal(s.reason, 'StartError');
      assert.equal(s.exitCode, 128);
    });

    void it('emits started and stopped events', async () => {
      const events: ContainerEvent[] = [];
      const off = runtime.onContainerEvent((e) => events.push(e));
      try {
        const { id } = await run('exit 0');
        await exited(id);
        await waitFor('stopped event', () => (events.some((e) => e.containerId === id && e.type === 'CONTAINER_STOPPED_EVENT') ? true : undefined));
        assert.ok(events.some((e) => e.containerId === id && e.type === 'CONTAINER_STARTED_EVENT'));
      } finally {
        off();
      }
    });

    void it('runs a command in a running container (ExecSync) with its env, and times it out', async () => {
      const { id, sandboxId } = await run('exec sleep 30', { envs: [{ key: 'WHO', value: 'probe' }] });
      assert.equal(typeof runtime.execSync, 'function', 'exec probes need ExecSync');
      const ok = await runtime.execSync!(id, ['sh', '-c', 'echo "hi $WHO"; echo oops >&2; exit 3'], 5);
      assert.equal(ok.exitCode, 3);
      assert.equal(ok.stdout.toString(), 'hi probe\n');
      assert.equal(ok.stderr.toString(), 'oops\n');
      await assert.rejects(runtime.execSync!(id, ['sleep', '10'], 1));
      await runtime.stopPodSandbox(sandboxId, 0);
    });

    void it('reopens a running container\'s log at its path after the file was renamed (log rotation)', async () => {
      const { id, sandboxId } = await run('i=0; while true; do i=$((i+1)); echo "line $i"; sleep 0.05; done');
      assert.equal(typeof runtime.reopenContainerLog, 'function', 'log rotation needs ReopenContainerLog');
      const path = (await runtime.containerStatus(id)).logPath;
      await waitFor('a few lines', async () => ((await logLines(path)).length >= 2 ? true : undefined));
      await rename(path, `${path}.1`);
      await runtime.reopenContainerLog!(id);
      const fresh = await waitFor('lines in the reopened file', async () => {
        const l = await logLines(path);
        return l.length >= 2 ? l : undefined;
      });
      assert.match(fresh[0]!, /^stdout line \d+$/);
      await runtime.stopPodSandbox(sandboxId, 0);
    });

    void it('refuses to remove a running container; removes a stopped one with its log', async () => {
      const { id, sandboxId } = await run('sleep 30');
      await assert.rejects(runtime.removeContainer(id), (e: unknown) => e instanceof RuntimeError && e.code === 'InvalidState');
      const { logPath } = await runtime.containerStatus(id);
      await runtime.stopContainer(id, 0);
      await runtime.removeContainer(id);
      await assert.rejects(runtime.containerStatus(id), (e: unknown) => e instanceof RuntimeError && e.code === 'NotFound');
      await assert.rejects(stat(logPath));
      assert.deepEqual(await runtime.listContainers({ podSandboxId: sandboxId }), []);
      await runtime.removeContainer(id); // idempotent
    });

    void it('stops every container of a sandbox, then removes it', async () => {
      const { sandboxId, sb } = await run('sleep 30');
      const other = await runtime.createContainer(sandboxId, { ...containerConfig('sleep 30'), metadata: { name: 'd', attempt: 0 }, logPath: 'd/0.log' }, sb);
      await runtime.startContainer(other);
      await runtime.stopPodSandbox(sandboxId, 0);
      assert.equal((await runtime.podSandboxStatus(sandboxId)).state, 'SANDBOX_NOTREADY');
      assert.deepEqual(await runtime.listContainers({ podSandboxId: sandboxId, state: 'CONTAINER_RUNNING' }), []);
      await runtime.removePodSandbox(sandboxId);
      assert.deepEqual(await runtime.listPodSandbox({ id: sandboxId }), []);
      assert.deepEqual(await runtime.listContainers({ podSandboxId: sandboxId }), []);
    });

    void describe('user identity', () => {
      void it(`runs a container without runAsUser as ${features.defaultUid}`, async (t) => {
        if (!isRoot) return t.skip('needs root to switch users');
        const s = await exited((await run('id -u; id -g; id -G')).id);
        const [u, g] = [features.defaultUid, features.defaultGid];
        assert.deepEqual(await logLines(s.logPath), [`stdout ${u}`, `stdout ${g}`, `stdout ${g}`]);
      });

      void it('runs a container with runAsUser 1000 as 1000, runAsGroup as given', async (t) => {
        if (!isRoot) return t.skip('needs root to switch users');
        const a = await exited((await run('id -u', { securityContext: { runAsUser: 1000 } })).id);
        assert.deepEqual(await logLines(a.logPath), ['stdout 1000']);
        const b = await exited((await run('id -u; id -g', { securityContext: { runAsUser: 1000, runAsGroup: 2000 } })).id);
        assert.deepEqual(await logLines(b.logPath), ['stdout 1000', 'stdout 2000']);
      });

      void it('refuses runAsUser 0 (and runAsGroup 0) without privileged, where root needs privilege', async () => {
        if (!features.rootNeedsPrivilege) {
          // Root in a container of its own is not the host's root: it runs as asked.
          const a = await exited((await run('id -u; id -g', { securityContext: { runAsUser: 0 } })).id);
          assert.deepEqual(await logLines(a.logPath), ['stdout 0', 'stdout 0']);
          const b = await exited((await run('id -u; id -g', { securityContext: { runAsUser: 1000, runAsGroup: 0 } })).id);
          assert.deepEqual(await logLines(b.logPath), ['stdout 1000', 'stdout 0']);
          return;
        }
        const sb = sandboxConfig();
        const sandboxId = await runtime.runPodSandbox(sb);
        await assert.rejects(
          runtime.createContainer(sandboxId, containerConfig('id -u', { securityContext: { runAsUser: 0 } }), sb),
          (e: unknown) => e instanceof RuntimeError && e.code === 'ConfigRefused' && /runAsUser 0/.test(e.message) && /privileged/.test(e.message),
        );
        await assert.rejects(
          runtime.createContainer(sandboxId, containerConfig('id -g', { securityContext: { runAsUser: 1000, runAsGroup: 0 } }), sb),
          (e: unknown) => e instanceof RuntimeError && e.code === 'ConfigRefused' && /runAsGroup 0/.test(e.message),
        );
        assert.deepEqual(await runtime.listContainers({ podSandboxId: sandboxId }), []);
      });

      void it('refuses privileged containers when the agent does not allow them', async () => {
        const sb = sandboxConfig();
        const sandboxId = await runtime.runPodSandbox(sb);
        await assert.rejects(
          runtime.createContainer(sandboxId, containerConfig('id -u', { securityContext: { privileged: true, runAsUser: 0 } }), sb),
          (e: unknown) => e instanceof RuntimeError && e.code === 'ConfigRefused' && /privileged/.test(e.message),
        );
      });

      void it('runs a privileged container as root when the agent allows privileged pods', async (t) => {
        if (!isRoot) return t.skip('needs root');
        const rt = await factory({ allowPrivileged: true });
        try {
          const a = await exited((await run('id -u', { securityContext: { privileged: true } }, rt)).id, rt);
          assert.deepEqual(await logLines(a.logPath), ['stdout 0']);
          const b = await exited((await run('id -u', { securityContext: { privileged: true, runAsUser: 0 } }, rt)).id, rt);
          assert.deepEqual(await logLines(b.logPath), ['stdout 0']);
          const c = await exited((await run('id -u', { securityContext: { privileged: true, runAsUser: 1000 } }, rt)).id, rt);
          assert.deepEqual(await logLines(c.logPath), ['stdout 1000']);
          if (features.rootNeedsPrivilege) {
            // Allowing privileged pods does not let an unprivileged container ask for root.
            const sb = sandboxConfig();
            const sandboxId = await rt.runPodSandbox(sb);
            await assert.rejects(
              rt.createContainer(sandboxId, containerConfig('id -u', { securityContext: { runAsUser: 0 } }), sb),
              (e: unknown) => e instanceof RuntimeError && e.code === 'ConfigRefused',
            );
          }
        } finally {
          await rt.shutdown(0);
        }
      });
    });
  });
}
