/**
 * The resource managers on the real orchlet binary with the built-in process runtime (standalone,
 * pods from a manifest directory, seen through the read-only port): --cpu-manager-policy=static
 * with --reserved-cpus gives a Guaranteed pod with cpu: 1 a CPU of its own (its process's
 * Cpus_allowed_list) while other pods keep the rest; the state files hold kubelet's format;
 * --topology-manager-policy=restricted refuses a pod it cannot place (TopologyAffinityError, phase
 * Failed); a restart under another policy is refused; startup refusals say why.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { decodeCPUCheckpoint, decodeMemoryCheckpoint } from '../../src/agent/cm/checkpoint.js';
import { eventually } from '../helpers/eventually.js';
import { freePort } from '../helpers/ports.js';
import { requireBinary } from '../helpers/binaries.js';
import type { Pod } from '../../src/agent/types.js';
import { getJSON } from '../helpers/http.js';

const ORCHLET = fileURLToPath(new URL('../../../bin/orchlet', import.meta.url));
const NODE = 'cm-node';
const dirs: string[] = [];
after(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

/** The pid of the process whose command line is exactly `argv`. */
function pidOf(argv: string[]): number | undefined {
  const want = argv.join('\0') + '\0';
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      if (readFileSync(`/proc/${e}/cmdline`, 'utf8') === want) return Number(e);
    } catch {
      // gone
    }
  }
  return undefined;
}

const allowedCPUs = (pid: number): string => /Cpus_allowed_list:\s*(\S+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? '';

const manifest = (name: string, command: string[], resources?: Record<string, unknown>) =>
  JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { containers: [{ name: 'c', image: 'none', command, ...(resources ? { resources } : {}) }] } });

const run = (args: string[]) => spawnSync(process.execPath, [ORCHLET, ...args], { encoding: 'utf8', timeout: 30_000 });

void describe('orchlet resource managers (process runtime)', () => {
  void it('static CPU policy: exclusive CPU, shared pool, state files, TopologyAffinityError, policy change refused', async (t) => {
    if (process.platform !== 'linux' || cpus().length !== 2) return t.skip('needs a 2-CPU Linux machine');
    if (!requireBinary(t, 'taskset')) return t.skip('taskset (util-linux) is missing');
    const dir = await mkdtemp(join(tmpdir(), 'orchlet-cm-'));
    dirs.push(dir);
    const manifests = join(dir, 'manifests');
    const root = join(dir, 'root');
    await mkdir(manifests);
    const tag = String(process.pid);
    const shared = ['sleep', `3001.${tag}`];
    const exclusive = ['sleep', `3002.${tag}`];
    await writeFile(join(manifests, 'shared.json'), manifest('shared', shared));
    await writeFile(join(manifests, 'excl.json'), manifest('excl', exclusive, { limits: { cpu: '1', memory: '64Mi' } }));
    await writeFile(join(manifests, 'big.json'), manifest('big', ['sleep', `3003.${tag}`], { limits: { cpu: '2', memory: '64Mi' } }));
    const port = await freePort();
    const child = spawn(
      process.execPath,
      [
        ORCHLET,
        `--root-dir=${root}`,
        `--pod-manifest-path=${manifests}`,
        '--file-check-frequency=1s',
        `--hostname-override=${NODE}`,
        '--address=127.0.0.1',
        `--port=${await freePort()}`,
        `--read-only-port=${port}`,
        '--healthz-port=0',
        `--cert-dir=${join(dir, 'pki')}`,
        '--cpu-manager-policy=static',
        '--reserved-cpus=0',
        '--cpu-manager-reconcile-period=1s',
        '--topology-manager-policy=restricted',
        '--memory-manager-policy=Static',
        '--reserved-memory=0:memory=100Mi',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const pods = async (): Promise<Pod[]> => ((await getJSON(port, '/pods').catch(() => ({}))) as { items?: Pod[] }).items ?? [];
    try {
      const withStderr = (err: unknown): never => {
        throw new Error(`${String(err)}\norchlet stderr:\n${stderr}`);
      };
      // both pinned: the exclusive pod on CPU 1, the shared one on what is left (the reserved CPU 0)
      await eventually(
        'the exclusive and the shared container to be pinned',
        () => {
          const e = pidOf(exclusive);
          const s = pidOf(shared);
          return e !== undefined && s !== undefined && allowedCPUs(e) === '1' && allowedCPUs(s) === '0';
        },
        { timeoutMs: 30_000 },
      ).catch(withStderr);
      const big = await eventually(
        'the pod needing 2 CPUs to fail admission',
        async () => (await pods()).find((p) => p.metadata.name === `big-${NODE}` && p.status?.phase === 'Failed'),
        { timeoutMs: 30_000 },
      ).catch(withStderr);
      assert.equal(big.status?.reason, 'TopologyAffinityError');
      assert.equal(big.status?.message, 'Pod Resources cannot be allocated with Topology locality');
      assert.equal(pidOf(['sleep', `3003.${tag}`]), undefined, 'the refused pod never ran');

      const excl = (await pods()).find((p) => p.metadata.name === `excl-${NODE}`)!;
      const cpuState = readFileSync(join(root, 'cpu_manager_state'), 'utf8');
      assert.deepEqual(decodeCPUCheckpoint(cpuState), { policyName: 'static', defaultCpuSet: '0', entries: { [excl.metadata.uid]: { c: '1' } } });
      assert.match(cpuState, /^\{"policyName":"static","defaultCpuSet":"0","entries":\{"[0-9a-f]+":\{"c":"1"\}\},"checksum":\d+\}$/);
      const mem = decodeMemoryCheckpoint(readFileSync(join(root, 'memory_manager_state'), 'utf8'));
      assert.equal(mem.policyName, 'Static');
      assert.deepEqual(mem.entries, { [excl.metadata.uid]: { c: [{ numaAffinity: [0], type: 'memory', size: 64 << 20 }] } });
      assert.equal(mem.machineState['0']?.memoryMap.memory?.systemReserved, 100 << 20);
      assert.equal(mem.machineState['0']?.memoryMap.memory?.reserved, 64 << 20);

      // the exclusive pod goes: its CPU returns to the shared pool, and the shared container gets it back
      await rm(join(manifests, 'excl.json'));
      await eventually(
        'the shared container to run on both CPUs again',
        () => {
          const s = pidOf(shared);
          return s !== undefined && allowedCPUs(s) === '0-1';
        },
        { timeoutMs: 30_000 },
      ).catch(withStderr);
      assert.deepEqual(decodeCPUCheckpoint(readFileSync(join(root, 'cpu_manager_state'), 'utf8')).entries, {});
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
    // another policy over this state file: refused, as kubelet refuses
    const r = run([`--root-dir=${root}`, '--cpu-manager-policy=none', '--enable-server=false', '--memory-manager-policy=Static', '--reserved-memory=0:memory=100Mi']);
    assert.equal(r.status, 1);
    assert.match(
      r.stderr,
      /could not restore state from checkpoint: configured policy "none" differs from state checkpoint policy "static", please drain this node and delete the CPU manager checkpoint file ".*cpu_manager_state"/,
    );
    assert.ok(existsSync(join(root, 'cpu_manager_state')));
  });

  void it('refuses what kubelet 1.23 refuses at startup', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'orchlet-cm-refuse-'));
    dirs.push(dir);
    const base = [`--root-dir=${dir}`, '--enable-server=false'];
    const cases: [string[], RegExp][] = [
      [['--cpu-manager-policy=static'], /the static policy requires systemreserved.cpu \+ kubereserved.cpu to be greater than zero/],
      [['--cpu-manager-policy=static', '--cpu-manager-policy-options=full-pcpus-only=true', '--system-reserved=cpu=1'], /cpuManagerPolicyOptions requires feature gate CPUManagerPolicyOptions/],
      [
        ['--cpu-manager-policy=static', '--cpu-manager-policy-options=bogus=1', '--system-reserved=cpu=1', '--feature-gates=CPUManagerPolicyOptions=true'],
        /unknown CPU Manager Policy option: "bogus"/,
      ],
      [['--reserved-cpus=0-99'], /reserved-cpus: 0-99 is not a subset of online-cpus/],
      [['--memory-manager-policy=Static'], /the total amount "0" of type "memory" is not equal to the value "100Mi" determined by Node Allocatable feature/],
      [['--memory-manager-policy=Static', '--reserved-memory=0:memory=1Gi', '--system-reserved=memory=1Gi'], /the total amount "1Gi" of type "memory" is not equal to the value "1124Mi"/],
      [['--topology-manager-policy=sometimes'], /--topology-manager-policy/],
    ];
    for (const [args, want] of cases) {
      const r = run([...base, ...args]);
      assert.equal(r.status, 1, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, want, args.join(' '));
    }
    // nothing was written by the refused starts
    assert.equal(existsSync(join(dir, 'cpu_manager_state')), false);
  });
});
