/**
 * Kernel settings of orchlet (src/agent/sysctl.ts): --protect-kernel-defaults on a temporary /proc/sys and, for
 * bin/orchlet, on temporary files bind-mounted over /proc/sys in a private mount namespace (never the host's),
 * --oom-score-adj on a temporary file and on bin/orchlet's own process, and the pod sysctl
 * allowlist of --allowed-unsafe-sysctls.
 */
import { describe, it, after, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { applyOomScoreAdj, KERNEL_TUNABLES, setupKernelTunables, sysctlAllowlist } from '../../src/agent/sysctl.js';
import { eventually } from '../helpers/eventually.js';
import { requireBinary } from '../helpers/binaries.js';

const ORCHLET = fileURLToPath(new URL('../../../bin/orchlet', import.meta.url));
const dirs: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'orch-sysctl-'));
  dirs.push(d);
  return d;
};
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A fake /proc/sys holding the host-like values (overcommit 0, panic 1, panic_on_oops 0). */
function fakeProcSys(): string {
  const root = tempDir();
  const values: Record<string, number> = { 'vm/overcommit_memory': 0, 'kernel/panic': 1, 'kernel/panic_on_oops': 0 };
  for (const [flag, expected] of KERNEL_TUNABLES) {
    mkdirSync(dirname(join(root, flag)), { recursive: true });
    writeFileSync(join(root, flag), `${values[flag] ?? expected}\n`);
  }
  return root;
}

void describe('kernel tunables and oom_score_adj', () => {
  void it('protect: each differing tunable is an error; nothing written', () => {
    const root = fakeProcSys();
    const r = setupKernelTunables('protect', root);
    assert.deepEqual(r.errors, [
      'invalid kernel flag: vm/overcommit_memory, expected value: 1, actual value: 0',
      'invalid kernel flag: kernel/panic, expected value: 10, actual value: 1',
      'invalid kernel flag: kernel/panic_on_oops, expected value: 1, actual value: 0',
    ]);
    assert.equal(readFileSync(join(root, 'kernel/panic'), 'utf8'), '1\n');
  });

  void it('modify writes the expected values; report only lists them', () => {
    const root = fakeProcSys();
    assert.deepEqual(setupKernelTunables('report', root), {
      changed: ['vm/overcommit_memory: 0 -> 1', 'kernel/panic: 1 -> 10', 'kernel/panic_on_oops: 0 -> 1'],
      errors: [],
    });
    assert.equal(readFileSync(join(root, 'vm/overcommit_memory'), 'utf8'), '0\n');
    const m = setupKernelTunables('modify', root);
    assert.equal(m.changed.length, 3);
    for (const [flag, expected] of KERNEL_TUNABLES) assert.equal(readFileSync(join(root, flag), 'utf8').trim(), String(expected));
    assert.deepEqual(setupKernelTunables('protect', root).errors, []);
  });

  void it('writes oom_score_adj', () => {
    const self = tempDir();
    writeFileSync(join(self, 'oom_score_adj'), '0\n');
    assert.equal(applyOomScoreAdj(-999, self), undefined);
    assert.equal(readFileSync(join(self, 'oom_score_adj'), 'utf8'), '-999');
  });

  void it('bin/orchlet: --oom-score-adj on its own process, a warning where lowering is not permitted', async (t) => {
    const ns = procSysNamespace(t);
    if (!ns) return;
    const dir = tempDir();
    const capSysResource = (BigInt(`0x${/CapEff:\s*([0-9a-f]+)/.exec(readFileSync('/proc/self/status', 'utf8'))![1]!}`) >> 24n) & 1n;
    const args = [`--root-dir=${join(dir, 'root')}`, `--pod-manifest-path=${join(dir, 'm')}`, '--enable-server=false', '--fail-swap-on=false', '--log-flush-frequency=100ms'];
    // unshare and sh exec, so the child's pid is the agent's
    const child = spawn('bash', [ns.script([...args, '--oom-score-adj=500'])], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    try {
      await eventually(() => `the agent runs\n${stderr}`, () => /running standalone/.test(stderr), { timeoutMs: 20_000 });
      assert.equal(readFileSync(`/proc/${child.pid!}/oom_score_adj`, 'utf8').trim(), '500');
    } finally {
      child.kill('SIGTERM');
    }
    const lowered = spawnSync('bash', [ns.script([...args, '--runonce'])], { encoding: 'utf8' });
    if (capSysResource === 0n) assert.match(lowered.stderr, /"Failed to ApplyOOMScoreAdj" err=".*-999.*CAP_SYS_RESOURCE/);
    else assert.doesNotMatch(lowered.stderr, /Failed to ApplyOOMScoreAdj/);
  });

  void it('bin/orchlet: writes the differing tunables as kubelet, refuses them with --protect-kernel-defaults, stops on a failed write', (t) => {
    const ns = procSysNamespace(t);
    if (!ns) return;
    const dir = tempDir();
    mkdirSync(join(dir, 'm'));
    const args = [`--root-dir=${join(dir, 'root')}`, `--pod-manifest-path=${join(dir, 'm')}`, '--enable-server=false', '--fail-swap-on=false', '--runonce', '-v=2'];
    const differing: Record<string, number> = {
      'vm/overcommit_memory': 0, 'vm/panic_on_oom': 1, 'kernel/panic': 0, 'kernel/panic_on_oops': 0,
      'kernel/keys/root_maxkeys': 200, 'kernel/keys/root_maxbytes': 20000,
    };
    const valueOf = (flag: string) => readFileSync(ns.file(flag), 'utf8').trim();

    // protected: refused, each difference named, nothing written
    ns.reset(differing);
    const refused = spawnSync('bash', [ns.script([...args, '--protect-kernel-defaults'])], { encoding: 'utf8' });
    assert.equal(refused.status, 1, refused.stderr);
    const listed = KERNEL_TUNABLES.map(([flag, expected]) => `invalid kernel flag: ${flag}, expected value: ${expected}, actual value: ${differing[flag]!}`);
    assert.ok(refused.stderr.includes(`orchlet: Failed to start ContainerManager: [${listed.join(', ')}]`), refused.stderr);
    for (const [flag] of KERNEL_TUNABLES) assert.equal(valueOf(flag), String(differing[flag]));

    // unprotected: each written and logged at -v=2
    const written = spawnSync('bash', [ns.script(args)], { encoding: 'utf8' });
    assert.doesNotMatch(written.stderr, /ContainerManager/); // (runonce's own exit status is not this test's)
    for (const [flag, expected] of KERNEL_TUNABLES) {
      assert.equal(valueOf(flag), String(expected), flag);
      assert.match(written.stderr, new RegExp(`"Updating kernel flag" flag="${flag}" expectedValue=${expected} actualValue=${differing[flag]!}`));
    }
    // values already right: nothing to write, nothing logged; protection passes
    const again = spawnSync('bash', [ns.script([...args, '--protect-kernel-defaults'])], { encoding: 'utf8' });
    assert.doesNotMatch(again.stderr, /ContainerManager/);
    assert.doesNotMatch(again.stderr, /kernel flag/);

    // a write that fails (a read-only file) stops the start, as kubelet's container manager; the others are written
    ns.reset(differing);
    const failed = spawnSync('bash', [ns.script(args, ['kernel/panic'])], { encoding: 'utf8' });
    assert.equal(failed.status, 1, failed.stderr);
    assert.match(failed.stderr, /orchlet: Failed to start ContainerManager: \[open \/proc\/sys\/kernel\/panic: .*EROFS/);
    assert.equal(valueOf('kernel/panic'), '0');
    assert.equal(valueOf('vm/overcommit_memory'), '1');
  });
});

/**
 * bin/orchlet in a private mount namespace where each of kubelet's tunables under /proc/sys is a bind mount of a
 * temporary file: the agent reads and writes those files, never the host's kernel settings. Needs root, unshare
 * and mount (skipped locally without them; a failure under CI=true).
 */
function procSysNamespace(t: TestContext) {
  const unshare = requireBinary(t, 'unshare');
  const mount = requireBinary(t, 'mount');
  if (!unshare || !mount) return undefined;
  if (process.getuid?.() !== 0) {
    if (process.env.CI === 'true') throw new Error('bin/orchlet kernel tunables test needs root (bind mounts over /proc/sys)');
    t.skip('needs root (bind mounts over /proc/sys)');
    return undefined;
  }
  const dir = tempDir();
  const file = (flag: string) => join(dir, flag.replace(/\//g, '.'));
  const reset = (values: Record<string, number>) => {
    for (const [flag, expected] of KERNEL_TUNABLES) writeFileSync(file(flag), `${values[flag] ?? expected}\n`);
  };
  // host-like values until a test sets others
  reset({ 'vm/overcommit_memory': 0, 'kernel/panic': 1, 'kernel/panic_on_oops': 0 });
  let n = 0;
  const script = (args: readonly string[], readOnly: readonly string[] = []) => {
    const path = join(dir, `run-${n++}.sh`);
    writeFileSync(
      path,
      [
        'set -e',
        `exec ${unshare} --mount --propagation private sh -c '`,
        '  set -e',
        ...KERNEL_TUNABLES.map(([flag]) => `  ${mount} --bind ${file(flag)} /proc/sys/${flag}`),
        ...readOnly.map((flag) => `  ${mount} -o remount,bind,ro /proc/sys/${flag}`),
        `  exec ${process.execPath} ${ORCHLET} --make-iptables-util-chains=false ${args.join(' ')}`,
        `'`,
      ].join('\n'),
    );
    return path;
  };
  return { script, file, reset };
}

void describe('pod sysctls (--allowed-unsafe-sysctls)', () => {
  const pod = (sysctls: string[], extra: Record<string, unknown> = {}) => ({
    spec: { ...extra, securityContext: { sysctls: sysctls.map((name) => ({ name, value: '1' })) } },
  });

  void it('admits the safe set, refuses unsafe sysctls that are not allowed', () => {
    const w = sysctlAllowlist();
    assert.equal(w.check(pod(['kernel.shm_rmid_forced', 'net.ipv4.ip_local_port_range', 'net.ipv4.ip_unprivileged_port_start'])), undefined);
    assert.equal(w.check(pod(['net.core.somaxconn'])), '"net.core.somaxconn" not allowlisted');
    assert.equal(w.check({ spec: {} }), undefined);
  });

  void it('allows names and prefix* patterns, except network and IPC sysctls of pods on the host namespaces', () => {
    const w = sysctlAllowlist(['net.core.somaxconn', 'kernel.msg*']);
    assert.equal(w.check(pod(['net.core.somaxconn', 'kernel.msgmax'])), undefined);
    assert.equal(w.check(pod(['kernel.sem'])), '"kernel.sem" not allowlisted');
    assert.equal(w.check(pod(['net.core.somaxconn'], { hostNetwork: true })), '"net.core.somaxconn" not allowed with host net enabled');
    assert.equal(w.check(pod(['kernel.msgmax'], { hostIPC: true })), '"kernel.msgmax" not allowed with host ipc enabled');
    assert.equal(w.check(pod(['net.ipv4.tcp_syncookies'], { hostNetwork: true })), '"net.ipv4.tcp_syncookies" not allowed with host net enabled');
  });

  void it('refuses entries not known to be namespaced', () => {
    assert.throws(() => sysctlAllowlist(['vm.swappiness']), /"vm.swappiness" is not known to be namespaced/);
    assert.throws(() => sysctlAllowlist(['kernel.*']), /"kernel.\*" are not known to be namespaced/);
  });
});
