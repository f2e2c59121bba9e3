/**
 * kubelet's iptables utility chains (--make-iptables-util-chains, --iptables-masquerade-bit,
 * --iptables-drop-bit; src/agent/network/iptables-util.ts), always inside a network namespace this test makes,
 * never in the host's tables: bin/orchlet run with `ip netns exec` makes the chains with the bits given (on the
 * command line or in the --config file), for iptables and ip6tables; =false makes none; bad bits are refused
 * as kubelet refuses them; after the tables are flushed the canary watch makes everything again.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkIptablesBits, iptablesMark } from '../../src/agent/network/iptables-util.js';
import { parseIptablesVersion, waitFlags } from '../../src/agent/network/iptables.js';
import { NodeNetwork } from '../../src/agent/network/node-network.js';
import { parseAgentOptions } from '../../src/agent/options.js';
import { eventually } from '../helpers/eventually.js';
import { makeNetns, type TestNetns } from '../helpers/netns.js';

const ORCHLET = fileURLToPath(new URL('../../../bin/orchlet', import.meta.url));
const dirs: string[] = [];
const namespaces: TestNetns[] = [];
after(() => {
  for (const n of namespaces) n.remove();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'orch-ipt-'));
  dirs.push(d);
  return d;
}

/** Runs bin/orchlet standalone in the namespace until it says it runs (then SIGTERM); resolves with its stderr. */
function runAgent(ns: TestNetns, extra: string[]): Promise<string> {
  const dir = tempDir();
  const args = [`--root-dir=${join(dir, 'root')}`, `--pod-manifest-path=${join(dir, 'manifests')}`, '--enable-server=false', '--healthz-port=0', '--fail-swap-on=false', ...extra];
  return new Promise((resolve, reject) => {
    const child = spawn('ip', ['netns', 'exec', ns.name, process.execPath, ORCHLET, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
      // stopped once it runs and (unless the chains are off) both families were set up or given up
      const chainsDone = extra.includes('--make-iptables-util-chains=false') || /(Initialized|Failed to initialize) iptables rules[^\n]*protocol=IPv6/.test(stderr);
      if (/running standalone/.test(stderr) && chainsDone) child.kill('SIGTERM');
    });
    child.on('error', reject);
    child.on('exit', () => {
      clearTimeout(timer);
      if (/running standalone/.test(stderr)) resolve(stderr);
      else reject(new Error(`orchlet did not start:\n${stderr}`));
    });
  });
}

const rulesOf = (save: string): string[] => save.split('\n').filter((l) => l.startsWith('-A ') || l.startsWith(':KUBE-'));

void describe('iptables utility chains: values', () => {
  void it('a mark is 1 << bit, written as kubelet writes it', () => {
    assert.equal(iptablesMark(14), '0x00004000');
    assert.equal(iptablesMark(15), '0x00008000');
    assert.equal(iptablesMark(0), '0x00000001');
    assert.equal(iptablesMark(31), '0x80000000');
  });

  void it('checks the bits as kubelet does, only when the chains are made', () => {
    assert.equal(checkIptablesBits(true, 14, 15), undefined);
    assert.equal(checkIptablesBits(true, 5, 5), 'iptables-masquerade-bit and iptables-drop-bit must be different');
    assert.equal(checkIptablesBits(true, 32, 1), 'iptables-masquerade-bit is not valid. Must be within [0, 31]');
    assert.equal(checkIptablesBits(true, 1, -1), 'iptables-drop-bit is not valid. Must be within [0, 31]');
    assert.equal(checkIptablesBits(false, 5, 5), undefined);
    const o = parseAgentOptions([]);
    assert.deepEqual([o.makeIptablesUtilChains, o.iptablesMasqueradeBit, o.iptablesDropBit], [true, 14, 15]);
    assert.throws(() => parseAgentOptions(['--iptables-drop-bit=32']), /iptables-drop-bit/);
    assert.throws(() => parseAgentOptions(['--iptables-masquerade-bit=-1']), /iptables-masquerade-bit/);
  });

  void it('lock flags and --random-fully follow the iptables version', () => {
    assert.deepEqual(parseIptablesVersion('iptables v1.8.9 (nf_tables)'), [1, 8, 9]);
    assert.deepEqual(waitFlags([1, 8, 9]), ['-w', '5', '-W', '100000']);
    assert.deepEqual(waitFlags([1, 6, 0]), ['-w', '5']);
    assert.deepEqual(waitFlags([1, 4, 20]), ['-w']);
    assert.deepEqual(waitFlags([1, 4, 19]), []);
  });

  void it('bin/orchlet refuses the same bit twice, and a bit out of range', () => {
    const same = spawnSync(process.execPath, [ORCHLET, '--iptables-masquerade-bit=5', '--iptables-drop-bit=5'], { encoding: 'utf8' });
    assert.equal(same.status, 1);
    assert.match(same.stderr, /orchlet: iptables-masquerade-bit and iptables-drop-bit must be different/);
    const out = spawnSync(process.execPath, [ORCHLET, '--iptables-drop-bit=40'], { encoding: 'utf8' });
    assert.equal(out.status, 1);
    assert.match(out.stderr, /iptables-drop-bit/);
  });
});

void describe('iptables utility chains in a network namespace (bin/orchlet)', () => {
  void it('makes the chains and rules with the given bits, for IPv4 and IPv6', async (t) => {
    const ns = makeNetns(t);
    if (!ns) return;
    namespaces.push(ns);
    const stderr = await runAgent(ns, ['--iptables-masquerade-bit=3', '--iptables-drop-bit=7']);
    assert.match(stderr, /Initialized iptables rules\. protocol=IPv4/);
    assert.match(stderr, /Initialized iptables rules\. protocol=IPv6/);
    const nat = rulesOf(ns.save('nat'));
    for (const line of [
      ':KUBE-MARK-DROP - [0:0]',
      ':KUBE-MARK-MASQ - [0:0]',
      ':KUBE-POSTROUTING - [0:0]',
      ':KUBE-KUBELET-CANARY - [0:0]',
      '-A POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING',
      '-A KUBE-MARK-DROP -j MARK --set-xmark 0x80/0x80',
      '-A KUBE-MARK-MASQ -j MARK --set-xmark 0x8/0x8',
      '-A KUBE-POSTROUTING -m mark ! --mark 0x8/0x8 -j RETURN',
      '-A KUBE-POSTROUTING -j MARK --set-xmark 0x8/0x0',
    ]) {
      assert.ok(nat.includes(line), `nat has ${line}:\n${nat.join('\n')}`);
    }
    assert.ok(
      nat.some((l) => /^-A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE( --random-fully)?$/.test(l)),
      nat.join('\n'),
    );
    const filter = rulesOf(ns.save('filter'));
    assert.deepEqual(
      filter.filter((l) => l.startsWith('-A')),
      [
        '-A INPUT -j KUBE-FIREWALL',
        '-A OUTPUT -j KUBE-FIREWALL',
        '-A KUBE-FIREWALL -m comment --comment "kubernetes firewall for dropping marked packets" -m mark --mark 0x80/0x80 -j DROP',
        '-A KUBE-FIREWALL ! -s 127.0.0.0/8 -d 127.0.0.0/8 -m comment --comment "block incoming localnet connections" -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP',
      ],
    );
    assert.ok(filter.includes(':KUBE-KUBELET-CANARY - [0:0]'));
    const mangle = rulesOf(ns.save('mangle'));
    assert.deepEqual(mangle.sort(), [':KUBE-IPTABLES-HINT - [0:0]', ':KUBE-KUBELET-CANARY - [0:0]']);
    // IPv6: the same, without the 127.0.0.0/8 rule
    const filter6 = rulesOf(ns.save('filter', true)).filter((l) => l.startsWith('-A'));
    assert.deepEqual(filter6, [
      '-A INPUT -j KUBE-FIREWALL',
      '-A OUTPUT -j KUBE-FIREWALL',
      '-A KUBE-FIREWALL -m comment --comment "kubernetes firewall for dropping marked packets" -m mark --mark 0x80/0x80 -j DROP',
    ]);
    assert.ok(rulesOf(ns.save('nat', true)).includes('-A KUBE-MARK-MASQ -j MARK --set-xmark 0x8/0x8'));

    // A second start finds everything in place and adds nothing twice.
    await runAgent(ns, ['--iptables-masquerade-bit=3', '--iptables-drop-bit=7']);
    assert.deepEqual(rulesOf(ns.save('nat')), nat);
    assert.deepEqual(rulesOf(ns.save('filter')), filter);
  });

  void it('takes the bits from the --config file; the command line wins', async (t) => {
    const ns = makeNetns(t);
    if (!ns) return;
    namespaces.push(ns);
    const config = join(tempDir(), 'config.yaml');
    writeFileSync(config, ['apiVersion: kubelet.config.k8s.io/v1beta1', 'kind: KubeletConfiguration', 'iptablesMasqueradeBit: 1', 'iptablesDropBit: 2'].join('\n'));
    await runAgent(ns, [`--config=${config}`, '--iptables-drop-bit=20']);
    const nat = rulesOf(ns.save('nat'));
    assert.ok(nat.includes('-A KUBE-MARK-MASQ -j MARK --set-xmark 0x2/0x2'), nat.join('\n'));
    assert.ok(nat.includes('-A KUBE-MARK-DROP -j MARK --set-xmark 0x100000/0x100000'), nat.join('\n'));
  });

  void it('--make-iptables-util-chains=false makes nothing', async (t) => {
    const ns = makeNetns(t);
    if (!ns) return;
    namespaces.push(ns);
    const stderr = await runAgent(ns, ['--make-iptables-util-chains=false']);
    assert.doesNotMatch(stderr, /iptables rules/);
    for (const table of ['nat', 'filter', 'mangle'] as const) {
      assert.deepEqual(rulesOf(ns.save(table)), [], table);
      assert.deepEqual(rulesOf(ns.save(table, true)), [], `${table} (IPv6)`);
    }
  });
});

void describe('iptables utility chains: the canary watch', () => {
  void it('makes the rules again after the tables are flushed', async (t) => {
    const ns = makeNetns(t);
    if (!ns) return;
    namespaces.push(ns);
    const logs: string[] = [];
    const net = new NodeNetwork(
      { iptablesUtil: { masqueradeBit: 14, dropBit: 15, monitorIntervalMs: 100, exec: ns.exec } },
      { runtime: {}, log: (l, m) => logs.push(`${l} ${m}`) },
    );
    await net.start();
    await net.iptablesReady;
    try {
      assert.deepEqual(net.iptablesFamilies, ['IPv4', 'IPv6']);
      const before = { nat: rulesOf(ns.save('nat')), filter: rulesOf(ns.save('filter')), mangle: rulesOf(ns.save('mangle')) };
      assert.ok(before.nat.includes('-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000'), before.nat.join('\n'));
      assert.ok(before.nat.includes('-A KUBE-MARK-DROP -j MARK --set-xmark 0x8000/0x8000'), before.nat.join('\n'));
      // Flush every table and delete every chain, as `iptables -F; iptables -X` per table would.
      ns.run('sh', ['-c', 'for t in mangle nat filter; do iptables -t $t -F && iptables -t $t -X; done']);
      assert.deepEqual(rulesOf(ns.save('nat')), []);
      await eventually('the rules are back after the flush', () => {
        const now = { nat: rulesOf(ns.save('nat')), filter: rulesOf(ns.save('filter')), mangle: rulesOf(ns.save('mangle')) };
        return JSON.stringify(now) === JSON.stringify(before);
      }, { timeoutMs: 15_000, intervalMs: 100 });
      assert.ok(logs.some((l) => /Reloading after iptables flush/.test(l)), logs.join('\n'));
      // ip6tables has its own watch
      ns.run('sh', ['-c', 'for t in mangle nat filter; do ip6tables -t $t -F && ip6tables -t $t -X; done']);
      await eventually('the IPv6 rules are back', () => rulesOf(ns.save('filter', true)).includes('-A INPUT -j KUBE-FIREWALL'), { timeoutMs: 15_000, intervalMs: 100 });
    } finally {
      net.stop();
    }
  });

  void it('a family whose program fails is logged and left out', async () => {
    const logs: string[] = [];
    const net = new NodeNetwork(
      { iptablesUtil: { masqueradeBit: 14, dropBit: 15, exec: (p) => Promise.resolve(p === 'ip6tables' ? { code: -1, output: 'spawn ip6tables ENOENT' } : { code: 2, output: 'iptables: permission denied' }) } },
      { runtime: {}, log: (l, m) => logs.push(`${l} ${m}`) },
    );
    await net.start();
    await net.iptablesReady;
    net.stop();
    assert.deepEqual(net.iptablesFamilies, []);
    assert.equal(logs.filter((l) => /^error Failed to initialize iptables rules; some functionality may be missing\. protocol=IPv[46]/.test(l)).length, 2, logs.join('\n'));
  });
});
