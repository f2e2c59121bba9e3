// bin/orchlet's cgroup options on this host's cgroup filesystem, with the built-in runtime (no pods
// cgroup): kubelet's refusals, --system-reserved / --orch-reserved enforced into existing cgroups,
// --orchlet-cgroups moving the agent (with the warning where oom_score_adj cannot be lowered), and
// --kernel-memcg-notification running the eviction pass when memory usage crosses a threshold.
// Every cgroup made lives under /orch-test-<random> (in the memory hierarchy under this process's own
// memory cgroup, so nothing leaves its limits) and is removed afterwards.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CgroupFs, cgroupOf } from '../../src/agent/cgroups/fs.js';
import { NodeCgroups } from '../../src/agent/cgroups/manager.js';
import { eventually } from '../helpers/eventually.js';
import { freePort } from '../helpers/ports.js';

const ORCHLET = fileURLToPath(new URL('../../../bin/orchlet', import.meta.url));
const linuxRoot = process.platform === 'linux' && process.getuid?.() === 0 && existsSync('/sys/fs/cgroup/cpu/cpu.shares');
const fs = linuxRoot ? new CgroupFs() : undefined;
// Under this process's memory cgroup: the same name exists (made by the test) in every hierarchy.
const base = `${((linuxRoot ? cgroupOf('self', 'memory') : undefined) ?? '/').replace(/\/$/, '')}/orch-test-${randomBytes(4).toString('hex')}`;
let dir = '';
/** Directories above `base` this test creates (the memory cgroup's path in the other hierarchies), removed at the end. */
const madeAbove: string[] = [];

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'orchlet-cgroups-'));
  if (!fs) return;
  for (const p of fs.paths(base)) {
    for (let d = dirname(p); !existsSync(d); d = dirname(d)) madeAbove.push(d);
  }
});
after(async () => {
  await fs?.remove(base);
  for (const d of madeAbove.sort((a, b) => b.length - a.length)) if (existsSync(d)) rmdirSync(d, { recursive: false });
  await rm(dir, { recursive: true, force: true });
});

function read(controller: string, name: string, file: string): string {
  return readFileSync(join(fs!.path(controller, name)!, file), 'utf8').trim();
}

function mkcgroup(name: string): void {
  for (const p of fs!.paths(name)) mkdirSync(p, { recursive: true });
}

interface Running {
  child: ChildProcess;
  stderr: () => string;
  stop: () => Promise<number | null>;
}

/** bin/orchlet standalone with its own root dir and ports, plus `args`. */
async function startOrchlet(name: string, args: string[]): Promise<Running> {
  const root = join(dir, name);
  const child = spawn(
    process.execPath,
    [ORCHLET, '--make-iptables-util-chains=false', `--root-dir=${root}`, `--cert-dir=${join(root, 'pki')}`, '--address=127.0.0.1', `--port=${await freePort()}`, '--read-only-port=0', '--healthz-port=0', ...args],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let err = '';
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    child,
    stderr: () => err,
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}

function refused(args: string[]): string {
  const r = spawnSync(process.execPath, [ORCHLET, '--make-iptables-util-chains=false', `--root-dir=${join(dir, 'refused')}`, ...args], { encoding: 'utf8', timeout: 30_000 });
  assert.equal(r.status, 1, `expected a refusal of ${args.join(' ')}: ${r.stderr}`);
  return r.stderr;
}

void describe('orchlet cgroup options (bin/orchlet, built-in runtime)', () => {
  void it("refuses what kubelet's validation refuses, naming the options", () => {
    assert.match(
      refused(['--enforce-node-allocatable=pods,system-reserved']),
      /invalid configuration: systemReservedCgroup \(--system-reserved-cgroup\) must be specified when "system-reserved" contained in enforceNodeAllocatable \(--enforce-node-allocatable\)/,
    );
    assert.match(
      refused(['--enforce-node-allocatable=kube-reserved']),
      /invalid configuration: kubeReservedCgroup \(--orch-reserved-cgroup\) must be specified when "kube-reserved" contained in enforceNodeAllocatable/,
    );
    assert.match(
      refused(['--cgroups-per-qos=false']),
      /enforceNodeAllocatable \(--enforce-node-allocatable\) is not supported unless cgroupsPerQOS \(--cgroups-per-qos\) feature is turned on/,
    );
    assert.match(refused(['--system-cgroups=/system']), /systemCgroups \(--system-cgroups\) was specified and cgroupRoot \(--cgroup-root\) was not specified/);
    assert.match(refused(['--enforce-node-allocatable=none,pods']), /'none' must not be combined with other values/);
    assert.match(refused(['--qos-reserved=cpu=50%']), /--qos-reserved.*cannot reserve "cpu" resource/);
    assert.match(refused(['--qos-reserved=memory=50']), /percentage expected, got '50'/);
    assert.match(refused(['--qos-reserved=memory=150%']), /percentage must be between 0 and 100/);
    // kubelet's validateNodeAllocatable: reservations beyond capacity stop the agent
    assert.match(
      refused(['--system-reserved=cpu=1000', '--make-iptables-util-chains=false']),
      /Failed to start ContainerManager: invalid Node Allocatable configuration\. Resource "cpu" has an allocatable of 1000000m, capacity of -\d+m/,
    );
  });

  void it('refuses to start when a reserved cgroup to enforce does not exist, or --system-cgroups is the root', { skip: !linuxRoot && 'needs root and cgroup v1' }, () => {
    const missing = `${base}/missing`;
    assert.match(
      refused(['--enforce-node-allocatable=pods,system-reserved', `--system-reserved-cgroup=${missing}`, '--system-reserved=memory=100Mi']),
      new RegExp(`Failed to enforce System Reserved Cgroup Limits on "${missing}": .*cgroup does not exist \\(--system-reserved-cgroup\\)`),
    );
    assert.match(refused(['--system-cgroups=/', '--cgroup-root=/']), /system container cannot be root \("\/"\) \(--system-cgroups\)/);
  });

  void it('--system-reserved and --orch-reserved limits go into their cgroups; --orchlet-cgroups moves the agent', { skip: !linuxRoot && 'needs root and cgroup v1' }, async () => {
    const sys = `${base}/system-reserved`;
    const orch = `${base}/orch-reserved`;
    const agentCg = `${base}/orchlet`;
    mkcgroup(sys);
    mkcgroup(orch);
    const o = await startOrchlet('reserved', [
      '--enforce-node-allocatable=pods,system-reserved,orch-reserved',
      '--system-reserved=cpu=500m,memory=256Mi,pid=1000',
      `--system-reserved-cgroup=${sys}`,
      '--kube-reserved=cpu=250m,memory=128Mi',
      `--kube-reserved-cgroup=${orch}`,
      `--orchlet-cgroups=${agentCg}`,
    ]);
    try {
      const pid = o.child.pid!;
      const hierarchies = ['cpu', 'memory', 'pids', 'cpuset', 'systemd'];
      // the agent's process, in every hierarchy
      await eventually(() => `the agent in ${agentCg}\n${o.stderr()}`, () => hierarchies.every((c) => cgroupOf(pid, c) === agentCg), { timeoutMs: 20_000 });
      // the process runtime's spawner helpers, whose children the containers are, start there too
      const helpers = (): number[] =>
        readdirSync(`/proc/${pid}/task`)
          .flatMap((t) => readFileSync(`/proc/${pid}/task/${t}/children`, 'utf8').split(' ').filter(Boolean))
          .filter((c) => readFileSync(`/proc/${c}/comm`, 'utf8').trim() === 'orchlet-spawner')
          .map(Number);
      const started = await eventually('the spawner helpers', () => (helpers().length >= 2 ? helpers() : undefined));
      for (const h of started) for (const c of hierarchies) assert.equal(cgroupOf(h, c), agentCg, `helper ${h} in ${c}`);
      assert.equal(read('cpu', sys, 'cpu.shares'), '512');
      assert.equal(read('memory', sys, 'memory.limit_in_bytes'), String(256 * 1024 * 1024));
      assert.equal(read('pids', sys, 'pids.max'), '1000');
      assert.equal(read('cpu', orch, 'cpu.shares'), '256');
      assert.equal(read('memory', orch, 'memory.limit_in_bytes'), String(128 * 1024 * 1024));
      assert.equal(read('pids', orch, 'pids.max'), 'max', 'no pid reservation given: left alone');
      // lowering its own oom_score_adj needs CAP_SYS_RESOURCE: a clear warning where it is missing
      const capEff = BigInt(`0x${/^CapEff:\s+([0-9a-f]+)$/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? '0'}`);
      const canLower = (capEff & (1n << 24n)) !== 0n; // CAP_SYS_RESOURCE
      if (!canLower) {
        await eventually('the oom_score_adj warning', () => /Failed to ensure state of orchlet cgroup .*--orchlet-cgroups.*failed to apply oom_score_adj -999 for pid \d+: EACCES/.test(o.stderr()));
      }
      assert.match(o.stderr(), /the built-in runtime runs pods as host processes outside cgroups/);
    } finally {
      assert.equal(await o.stop(), 0, o.stderr());
    }
  });

  void it('--system-cgroups moves the processes of the root cgroup (a cgroup namespace of the test) into the system cgroup', { skip: !linuxRoot && 'needs root and cgroup v1' }, async () => {
    // A cgroup namespace rooted at <base>/ns, with the v1 hierarchies mounted again in a private mount namespace:
    // there the root cgroup holds only this test's processes, never the host's.
    const ns = `${base}/ns`;
    mkcgroup(ns);
    await fs!.create(ns); // cpuset cpus and mems, so that processes may join
    const controllers = fs!.paths('/').map((p) => p.replace(/\/$/, '').split('/').pop()!);
    const root = join(dir, 'system');
    const script = join(dir, 'system.sh');
    writeFileSync(
      script,
      [
        'set -e',
        ...fs!.paths(ns).map((p) => `echo $$ > ${p}/cgroup.procs`),
        `exec unshare --cgroup --mount --propagation private sh -c '`,
        '  mount -t tmpfs tmpfs /sys/fs/cgroup',
        ...controllers.map((c) => `  mkdir /sys/fs/cgroup/${c}; mount -t cgroup -o ${c === 'systemd' ? 'none,name=systemd' : c} cgroup /sys/fs/cgroup/${c}`),
        `  sleep 600 & echo $! > ${join(dir, 'sleeper.pid')}`,
        `  exec ${process.execPath} ${ORCHLET} --make-iptables-util-chains=false --root-dir=${root} --cert-dir=${root}/pki --address=127.0.0.1 --port=${await freePort()} --read-only-port=0 --healthz-port=0 --cgroup-root=/ --system-cgroups=/system`,
        `'`,
      ].join('\n'),
    );
    const child = spawn('bash', [script], { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    let sleeper = 0;
    try {
      sleeper = await eventually(() => `the sleeper\n${err}`, () => Number(readFileSync(join(dir, 'sleeper.pid'), 'utf8').trim()) || undefined, { retryErrors: true, timeoutMs: 20_000 });
      // seen from the host: <base>/ns/system in every hierarchy, for the other process and for the agent itself
      for (const pid of [sleeper, child.pid!]) {
        await eventually(() => `pid ${pid} in ${ns}/system\n${err}`, () => ['cpu', 'memory', 'pids', 'devices', 'freezer'].every((c) => cgroupOf(pid, c) === `${ns}/system`), { timeoutMs: 20_000 });
      }
    } finally {
      if (child.exitCode === null) child.kill('SIGTERM');
      assert.equal(await exited, 0, err);
      if (sleeper > 0) process.kill(sleeper, 'SIGKILL');
      await eventually('the sleeper gone', () => !existsSync(`/proc/${sleeper}`));
    }
  });

  void it('pod cgroups no pod holds are removed by housekeeping once empty (NodeCgroups.cleanupOrphans); allocatableMemory.available',  { skip: !linuxRoot && 'needs root and cgroup v1' }, async () => {
    const root = `${base}/orphans`;
    const logs: string[] = [];
    const m = new NodeCgroups({
      cgroupRoot: root,
      cgroupsPerQOS: true,
      podCgroups: true,
      enforce: ['pods'],
      capacity: { cpu: 1000, memory: 1024 * 1048576 },
      systemReserved: {},
      kubeReserved: {},
      systemReservedCgroup: '',
      kubeReservedCgroup: '',
      podPidsLimit: -1,
      cpuCFSQuota: true,
      cpuPeriodUs: 100000,
      orphanMinAgeMs: 0,
      log: (_l, msg) => logs.push(msg),
    });
    await m.start(() => []);
    const kubepods = `${root}/kubepods`;
    try {
      assert.equal(read('cpu', kubepods, 'cpu.shares'), '1024');
      assert.equal(read('memory', kubepods, 'memory.limit_in_bytes'), String(1024 * 1048576));
      // the signal: the pods cgroup's limit less its working set (usage less inactive file pages)
      const obs = await m.allocatableMemory();
      const usage = Number(read('memory', kubepods, 'memory.usage_in_bytes'));
      const inactive = Number(/^total_inactive_file (\d+)$/m.exec(read('memory', kubepods, 'memory.stat'))?.[1]);
      assert.deepEqual(obs, { capacity: 1024 * 1048576, available: 1024 * 1048576 - (usage - inactive) });
      for (const name of ['poda', 'burstable/podb', 'burstable/podb/c1', 'besteffort/podc', 'besteffort/podd']) await fs!.create(`${kubepods}/${name}`);
      // a process still in pod d's cgroup keeps it until the process is gone
      const sleeper = spawn('sleep', ['600'], { stdio: 'ignore' });
      await fs!.movePid(`${kubepods}/besteffort/podd`, sleeper.pid!);
      const removed = await m.cleanupOrphans((uid) => uid === 'a');
      assert.deepEqual(removed.sort(), [`${kubepods}/besteffort/podc`, `${kubepods}/burstable/podb`]);
      assert.ok(fs!.exists(`${kubepods}/poda`));
      assert.ok(fs!.exists(`${kubepods}/besteffort/podd`));
      assert.ok(!existsSync(fs!.path('cpu', `${kubepods}/burstable/podb`)!));
      sleeper.kill('SIGKILL');
      await new Promise((resolve) => sleeper.on('exit', resolve));
      await eventually('pod d removed', async () => (await m.cleanupOrphans((uid) => uid === 'a')).includes(`${kubepods}/besteffort/podd`));
    } finally {
      m.stop();
      await fs!.remove(root);
    }
  });

  void it('--kernel-memcg-notification: a crossing of the memory threshold runs the eviction pass at once', { skip: !linuxRoot && 'needs root and cgroup v1' }, async () => {
    // the root memory cgroup's working set now; the threshold sits 1 GiB below what is available (room for what the
    // rest of the machine does meanwhile), and a child then touches 2 GiB
    const usage = Number(readFileSync('/sys/fs/cgroup/memory/memory.usage_in_bytes', 'utf8'));
    const inactive = Number(/^total_inactive_file (\d+)$/m.exec(readFileSync('/sys/fs/cgroup/memory/memory.stat', 'utf8'))?.[1] ?? 0);
    const total = Number(/^MemTotal:\s+(\d+) kB/m.exec(readFileSync('/proc/meminfo', 'utf8'))?.[1] ?? 0) * 1024;
    const thresholdMi = Math.floor((total - (usage - inactive)) / 1048576) - 1024;
    const o = await startOrchlet('memcg', ['--experimental-kernel-memcg-notification', `--eviction-hard=memory.available<${thresholdMi}Mi`]);
    let hog: ChildProcess | undefined;
    try {
      await eventually(() => `polling announced\n${o.stderr()}`, () => /memory threshold notification: polling the root memory cgroup's usage every 1000 ms/.test(o.stderr()), { timeoutMs: 20_000 });
      assert.match(o.stderr(), /Flag --experimental-kernel-memcg-notification has been deprecated, Use kernelMemcgNotification configuration/);
      hog = spawn(process.execPath, ['-e', 'const b = [1, 2].map(() => Buffer.alloc(1024 * 1048576, 1)); console.log("ready"); setInterval(() => b[0][0]++, 1000);'], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      let ready = false;
      hog.stdout!.on('data', () => (ready = true));
      await eventually('the 2 GiB child', () => ready, { timeoutMs: 60_000 });
      await eventually(
        () => `a crossing (root memcg usage now ${readFileSync('/sys/fs/cgroup/memory/memory.usage_in_bytes', 'utf8').trim()}, was ${usage}; threshold ${thresholdMi}Mi)\n${o.stderr()}`,
        () => new RegExp(`eviction manager: memory usage \\d+ crossed \\d+ \\(memory.available<${thresholdMi}Mi\\); synchronizing`).test(o.stderr()),
        { timeoutMs: 20_000 },
      );
    } finally {
      hog?.kill('SIGKILL');
      assert.equal(await o.stop(), 0, o.stderr());
    }
  });
});
