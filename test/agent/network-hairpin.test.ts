/**
 * --hairpin-mode and --non-masquerade-cidr (src/agent/network/dockershim-options.ts, hairpin.ts): kubelet's
 * fallback of promiscuous-bridge to hairpin-veth without kubenet; on containerd with a CNI bridge whose
 * conflist leaves hairpin off, hairpin-veth turns it on for the pod's bridge port and none leaves it off;
 * the built-in runtime has nothing to set and says so; --non-masquerade-cidr prints kubelet's deprecation
 * warning and the agent says it has no effect.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { effectiveHairpinMode, networkOptionNotes } from '../../src/agent/network/dockershim-options.js';
import { hostInterfacesOf, setHairpin } from '../../src/agent/network/hairpin.js';
import { parseAgentOptions } from '../../src/agent/options.js';
import { CriRuntime } from '../../src/agent/runtime/cri.js';
import type { PodSandboxConfig } from '../../src/agent/runtime/runtime.js';
import { stopHarness, missingPrograms, startContainerd, type ContainerdHarness } from '../helpers/containerd.js';
import { requireBinary } from '../helpers/binaries.js';

const ORCHLET = fileURLToPath(new URL('../../../bin/orchlet', import.meta.url));
const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'orch-hairpin-'));
  dirs.push(d);
  return d;
}

void describe('hairpin mode: values', () => {
  void it('promiscuous-bridge needs kubenet: without it, hairpin-veth (kubelet\'s fallback and message)', () => {
    assert.deepEqual(effectiveHairpinMode('promiscuous-bridge', ''), {
      mode: 'hairpin-veth',
      note: 'Hairpin mode is set but kubenet is not enabled, falling back to HairpinVeth hairpinMode="promiscuous-bridge"',
    });
    assert.deepEqual(effectiveHairpinMode('promiscuous-bridge', 'kubenet'), { mode: 'promiscuous-bridge' });
    assert.deepEqual(effectiveHairpinMode('hairpin-veth', ''), { mode: 'hairpin-veth' });
    assert.deepEqual(effectiveHairpinMode('none', ''), { mode: 'none' });
    assert.throws(() => effectiveHairpinMode('sideways', ''), /unknown value: "sideways"/);
    assert.throws(() => parseAgentOptions(['--hairpin-mode=sideways']), /hairpin-mode/);
  });

  void it('notes for the built-in runtime and --non-masquerade-cidr, only when given', () => {
    const notes = (args: string[]) => networkOptionNotes(parseAgentOptions(args));
    assert.deepEqual(notes(['--hairpin-mode=none']), {
      hairpinMode: 'none',
      lines: ["--hairpin-mode=none: the built-in runtime runs pods on the host's network (no bridge, no veth): nothing to set"],
    });
    assert.deepEqual(notes(['--container-runtime=remote', '--hairpin-mode=none']).lines, []);
    const def = notes([]);
    assert.equal(def.hairpinMode, 'hairpin-veth');
    assert.deepEqual(def.lines, ['Hairpin mode is set but kubenet is not enabled, falling back to HairpinVeth hairpinMode="promiscuous-bridge"']);
    assert.match(notes(['--non-masquerade-cidr=0.0.0.0/0', '--hairpin-mode=hairpin-veth', '--container-runtime=remote']).lines.join('\n'), /^--non-masquerade-cidr=0\.0\.0\.0\/0 has no effect: only the kubenet network plugin/);
  });

  void it('finds the host-side interfaces in the CNI result and sets hairpin on the bridge ports only', async () => {
    const info = {
      info: JSON.stringify({
        cniResult: {
          Interfaces: {
            eth0: { Sandbox: '/var/run/netns/cni-1' },
            lo: { Sandbox: '/var/run/netns/cni-1' },
            cni0: { Sandbox: '' },
            veth1234: { Sandbox: '' },
          },
        },
      }),
    };
    assert.deepEqual(hostInterfacesOf(info).sort(), ['cni0', 'veth1234']);
    assert.deepEqual(hostInterfacesOf({ info: 'not json' }), []);
    assert.deepEqual(hostInterfacesOf(undefined), []);
    const sysfs = tempDir();
    mkdirSync(join(sysfs, 'veth1234', 'brport'), { recursive: true });
    writeFileSync(join(sysfs, 'veth1234', 'brport', 'hairpin_mode'), '0');
    mkdirSync(join(sysfs, 'cni0', 'bridge'), { recursive: true });
    assert.deepEqual(await setHairpin(['cni0', 'veth1234', '../x'], sysfs), { ports: ['veth1234'], errors: [] });
    assert.equal(readFileSync(join(sysfs, 'veth1234', 'brport', 'hairpin_mode'), 'utf8'), '1');
  });
});

void describe('hairpin mode and --non-masquerade-cidr: bin/orchlet with the built-in runtime', () => {
  void it('warns as kubelet for --non-masquerade-cidr and says what neither option does here', async () => {
    const dir = tempDir();
    const args = [
      `--root-dir=${join(dir, 'root')}`,
      `--pod-manifest-path=${join(dir, 'm')}`,
      '--enable-server=false',
      '--fail-swap-on=false',
      '--healthz-port=0',
      '--make-iptables-util-chains=false',
      '--non-masquerade-cidr=10.128.0.0/9',
      '--hairpin-mode=hairpin-veth',
    ];
    const stderr = await new Promise<string>((resolve) => {
      const child = spawn(process.execPath, [ORCHLET, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
      let text = '';
      const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      child.stderr.on('data', (d: Buffer) => {
        text += d.toString();
        if (/running standalone/.test(text)) child.kill('SIGTERM');
      });
      child.on('exit', () => {
        clearTimeout(timer);
        resolve(text);
      });
    });
    assert.match(stderr, /^Flag --non-masquerade-cidr has been deprecated, will be removed in a future version$/m);
    assert.match(stderr, /--non-masquerade-cidr=10\.128\.0\.0\/9 has no effect: only the kubenet network plugin of the removed Docker adapter used it/);
    assert.match(stderr, /--hairpin-mode=hairpin-veth: the built-in runtime runs pods on the host's network \(no bridge, no veth\): nothing to set/);
    assert.match(stderr, /running standalone/);
  });
});

const missing = missingPrograms();
void describe('hairpin mode on containerd with a CNI bridge', () => {
  let harness: ContainerdHarness | undefined;
  after(async () => {
    await stopHarness(harness);
  });

  void it('hairpin-veth turns hairpin on for the pod\'s bridge port; none leaves it as the conflist made it', async (t) => {
    if (missing.length > 0) {
      for (const p of missing) requireBinary(t, p);
      if (process.env.CI === 'true') throw new Error(`containerd tests need: ${missing.join(', ')}`);
      t.skip(`missing: ${missing.join(', ')}`);
      return;
    }
    const h = (harness = await startContainerd({ hairpinMode: false }));
    const dir = tempDir();
    const logs: string[] = [];
    const connect = (mode: 'hairpin-veth' | 'none') =>
      CriRuntime.connect({ runtimeEndpoint: h.endpoint, cgroupRoot: h.cgroupRoot, requestTimeoutMs: 30_000, hairpin: { mode, log: (m) => logs.push(m) } });
    const sandbox = (name: string): PodSandboxConfig => ({
      metadata: { name, uid: `uid-${name}`, namespace: 'default', attempt: 0 },
      hostname: name,
      logDirectory: join(dir, name),
      linux: {},
    });
    const brif = join('/sys/class/net', h.bridge, 'brif');
    const hairpinOf = (port: string): string => readFileSync(join(brif, port, 'hairpin_mode'), 'utf8').trim();
    const ports = (): string[] => (existsSync(brif) ? readdirSync(brif) : []);

    const none = await connect('none');
    const before = new Set(ports());
    await none.runPodSandbox(sandbox('plain'));
    const plainPort = ports().filter((p) => !before.has(p));
    assert.equal(plainPort.length, 1, `one new port on ${h.bridge}: ${ports().join(', ')}`);
    assert.equal(hairpinOf(plainPort[0]!), '0', 'none: the conflist\'s hairpinMode false stays');
    await none.detach();

    const veth = await connect('hairpin-veth');
    const seen = new Set(ports());
    await veth.runPodSandbox(sandbox('hairpin'));
    const port = ports().filter((p) => !seen.has(p));
    assert.equal(port.length, 1);
    assert.equal(hairpinOf(port[0]!), '1', 'hairpin-veth: hairpin on for the new port');
    assert.equal(hairpinOf(plainPort[0]!), '0', 'the other pod\'s port is left alone');
    assert.deepEqual(logs, []);
    await veth.detach();
  });
});
