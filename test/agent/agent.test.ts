// The agent in-process (merge → workers → sync → process runtime → status manager), fed snapshots directly.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent } from '../../src/agent/agent.js';
import { parseLog } from '../../src/agent/runtime/crilog.js';
import { staticPodFromManifest } from '../../src/agent/sources/manifest.js';
import type { Container, Pod, PodStatus } from '../../src/agent/types.js';
import { waitFor } from './runtime-contract.js';

const isRoot = process.getuid?.() === 0;

function pod(name: string, containers: Partial<Container>[], spec: Record<string, unknown> = {}): Pod {
  return staticPodFromManifest(
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name },
      spec: { ...spec, containers: containers.map((c, i) => ({ name: `c${i}`, image: 'busybox', ...c })) },
    },
    'file',
    'node1',
    `/m/${name}.yaml`,
  );
}

const sh = (script: string): Partial<Container> => ({ command: ['sh', '-c', script] });

void describe('agent (in-process, process runtime)', () => {
  let root: string;
  let agent: Agent;
  let current: Pod[] = [];
  const setPods = (pods: Pod[]): void => {
    current = pods;
    agent.onSnapshot({ op: 'SET', source: 'file', pods });
  };
  const add = (p: Pod): void => setPods([...current, p]);
  const remove = (p: Pod): void => setPods(current.filter((q) => q.metadata.uid !== p.metadata.uid));
  const statusOf = (p: Pod, check: (s: PodStatus) => boolean, what: string, timeoutMs = 10_000) =>
    waitFor(what, () => {
      const s = agent.statusManager.getPodStatus(p.metadata.uid);
      return s && check(s) ? s : undefined;
    }, timeoutMs);
  const logOf = async (p: Pod, container: string, attempt: number) =>
    parseLog(await readFile(join(root, 'pods', p.metadata.uid, 'containers', container, `${attempt}.log`), 'utf8')).map((r) => r.content);

  before(async () => {
    root = await mkdtemp(join(tmpdir(), 'orchlet-agent-'));
    agent = new Agent({ nodeName: 'node1', rootDir: root, fileCheckFrequencyMs: 0, syncFrequencyMs: 60_000, backoff: { initialMs: 300, maxMs: 1200 } });
    await agent.start();
  });
  after(async () => {
    await agent.stop();
    await rm(root, { recursive: true, force: true });
  });

  void it('runs a pod: Running, Ready, log under <root>/pods/<uid>/containers/<name>/0.log', async () => {
    const p = pod('web', [sh('echo hello; exec sleep 30')]);
    add(p);
    const s = await statusOf(p, (x) => x.phase === 'Running', 'Running');
    assert.equal(s.conditions.find((c) => c.type === 'Ready')?.status, 'True');
    const cs = s.containerStatuses[0]!;
    assert.match(cs.containerID ?? '', /^orch:\/\/[0-9a-f]{64}$/);
    assert.ok(cs.state.running?.startedAt);
    await waitFor('log', async () => ((await logOf(p, 'c0', 0).catch((): string[] => [])).includes('hello') ? true : undefined));
    remove(p);
    await waitFor('pod gone', () => (agent.statusManager.getPodStatus(p.metadata.uid) === undefined ? true : undefined));
    assert.ok(!(await readdir(join(root, 'pods'))).includes(p.metadata.uid), 'pod directory removed');
  });

  void it('restartPolicy Never: Succeeded / Failed with exit codes, no restarts', async () => {
    const ok = pod('ok', [sh('exit 0')], { restartPolicy: 'Never' });
    const bad = pod('bad', [sh('exit 3'), sh('exit 0')], { restartPolicy: 'Never' });
    add(ok);
    add(bad);
    await statusOf(ok, (s) => s.phase === 'Succeeded', 'Succeeded');
    const s = await statusOf(bad, (x) => x.phase === 'Failed', 'Failed');
    assert.equal(s.containerStatuses[0]!.state.terminated?.exitCode, 3);
    assert.equal(s.containerStatuses[0]!.state.terminated?.reason, 'Error');
    assert.equal(s.containerStatuses[1]!.state.terminated?.reason, 'Completed');
    assert.equal(s.containerStatuses[0]!.restartCount, 0);
    assert.equal(agent.workers.state(bad.metadata.uid), 'terminated');
    remove(ok);
    remove(bad);
  });

  void it('restartPolicy OnFailure restarts a failing container until it succeeds', async () => {
    const failing = pod('failing', [sh('echo try; exit 1')], { restartPolicy: 'OnFailure' });
    add(failing);
    const s = await statusOf(failing, (x) => x.containerStatuses[0]!.restartCount >= 2, 'two restarts');
    assert.equal(s.phase, 'Running');
    const back = await statusOf(failing, (x) => x.containerStatuses[0]!.state.waiting?.reason === 'CrashLoopBackOff', 'CrashLoopBackOff');
    assert.match(back.containerStatuses[0]!.state.waiting?.message ?? '', /^back-off \d+ms restarting failed container=c0 pod=failing-node1_default\(/);
    assert.equal(back.containerStatuses[0]!.lastState.terminated?.exitCode, 1);
    assert.deepEqual(await logOf(failing, 'c0', 1), ['try']);
    remove(failing);
    // Fails on its first run, succeeds on the second (a marker file in /tmp remembers the first run).
    const marker = join(tmpdir(), `orchlet-marker-${process.pid}-${Date.now()}`);
    const once = pod('once', [sh(`if [ -e ${marker} ]; then echo second; exit 0; fi; touch ${marker}; echo first; exit 1`)], {
      restartPolicy: 'OnFailure',
    });
    try {
      add(once);
      const done = await statusOf(once, (x) => x.phase === 'Succeeded', 'Succeeded');
      assert.equal(done.containerStatuses[0]!.restartCount, 1);
      assert.equal(done.containerStatuses[0]!.lastState.terminated?.exitCode, 1);
      assert.deepEqual(await logOf(once, 'c0', 0), ['first']);
      assert.deepEqual(await logOf(once, 'c0', 1), ['second']);
      remove(once);
    } finally {
      await rm(marker, { force: true });
    }
  });

  void it('restartPolicy Always restarts even after success', async () => {
    const p = pod('always', [sh('exit 0')]);
    add(p);
    await statusOf(p, (x) => x.containerStatuses[0]!.restartCount >= 2, 'two restarts');
    remove(p);
  });

  void it('refuses runAsUser 0 without privileged: waiting CreateContainerConfigError, nothing started', async () => {
    const p = pod('root', [{ ...sh('id -u'), securityContext: { runAsUser: 0 } }]);
    add(p);
    const s = await statusOf(p, (x) => x.containerStatuses[0]!.state.waiting?.reason === 'CreateContainerConfigError', 'config error');
    assert.match(s.containerStatuses[0]!.state.waiting?.message ?? '', /runAsUser 0.*privileged/);
    assert.equal(s.phase, 'Pending');
    const priv = pod('priv', [{ ...sh('id -u'), securityContext: { privileged: true } }]);
    add(priv);
    const sp = await statusOf(priv, (x) => x.containerStatuses[0]!.state.waiting?.reason === 'CreateContainerConfigError', 'config error');
    assert.match(sp.containerStatuses[0]!.state.waiting?.message ?? '', /privileged/);
    remove(p);
    remove(priv);
  });

  void it('uses pod-level runAsUser unless the container overrides it', async (t) => {
    if (!isRoot) return t.skip('needs root');
    const p = pod('users', [sh('id -u'), { ...sh('id -u'), securityContext: { runAsUser: 1001 } }], {
      restartPolicy: 'Never',
      securityContext: { runAsUser: 1000 },
    });
    add(p);
    await statusOf(p, (x) => x.phase === 'Succeeded', 'Succeeded');
    assert.deepEqual(await logOf(p, 'c0', 0), ['1000']);
    assert.deepEqual(await logOf(p, 'c1', 0), ['1001']);
    remove(p);
  });

  void it('runs init containers first, in order', async () => {
    const p = pod('init', [sh('echo main')], {
      restartPolicy: 'Never',
      initContainers: [
        { name: 'i1', image: 'x', command: ['sh', '-c', 'echo one'] },
        { name: 'i2', image: 'x', command: ['sh', '-c', 'echo two'] },
      ],
    });
    add(p);
    const s = await statusOf(p, (x) => x.phase === 'Succeeded', 'Succeeded');
    assert.deepEqual(s.initContainerStatuses?.map((c) => c.state.terminated?.exitCode), [0, 0]);
    const started = (n: number | 'main') =>
      Date.parse(n === 'main' ? s.containerStatuses[0]!.state.terminated!.startedAt! : s.initContainerStatuses![n]!.state.terminated!.finishedAt!);
    assert.ok(started('main') >= started(1));
    remove(p);
  });

  void it('deletes a pod with its grace period: SIGTERM first, SIGKILL after terminationGracePeriodSeconds', async () => {
    const p = pod('grace', [sh('trap "" TERM; echo ready; while :; do sleep 0.05; done')], { terminationGracePeriodSeconds: 1 });
    add(p);
    await statusOf(p, (x) => x.phase === 'Running', 'Running');
    const t0 = Date.now();
    remove(p);
    await waitFor('pod gone', () => (agent.statusManager.getPodStatus(p.metadata.uid) === undefined ? true : undefined));
    const took = Date.now() - t0;
    assert.ok(took >= 900 && took < 5000, `took ${took} ms`);
  });
});
