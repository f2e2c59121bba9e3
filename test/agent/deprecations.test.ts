/**
 * Deprecated orchlet options as kubelet 1.23 treats them (src/agent/deprecations.ts): pflag's warning for each
 * one given, the refusals (--dynamic-config-dir without its gate, a network plugin for the built-in runtime) and
 * --experimental-allocatable-ignore-eviction's effect on node allocatable; the binary prints the warnings and
 * runs with the accepted ones (test/agent/logging.test.ts starts it with some of them).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { allocatableEvictionHard, checkDeprecatedOptions, deprecationWarnings } from '../../src/agent/deprecations.js';
import { allocatableOf } from '../../src/agent/node/nodestatus.js';
import { parseAgentOptions } from '../../src/agent/options.js';

const ORCHLET = fileURLToPath(new URL('../../../bin/orchlet', import.meta.url));

void describe('deprecated agent options', () => {
  void it('warns as pflag does, for the flags given only, in the order given; [cfg] options with the config-file message', () => {
    const o = parseAgentOptions(['--cni-bin-dir=/x', '--log-dir=/tmp', '--really-crash-for-testing', '--max-pods=10', '--v=2', '--hostname-override=n']);
    assert.deepEqual(deprecationWarnings(o.explicitFlags), [
      'Flag --cni-bin-dir has been deprecated, will be removed along with dockershim.',
      'Flag --log-dir has been deprecated, will be removed in a future release, see https://github.com/kubernetes/enhancements/tree/master/keps/sig-instrumentation/2845-deprecate-klog-specific-flags-in-k8s-components',
      'Flag --really-crash-for-testing has been deprecated, will be removed in a future version.',
      "Flag --max-pods has been deprecated, This parameter should be set via the config file specified by the Kubelet's --config flag. See https://kubernetes.io/docs/tasks/administer-cluster/kubelet-config-file/ for more information.",
    ]);
    assert.deepEqual(deprecationWarnings(parseAgentOptions([]).explicitFlags), []);
    assert.deepEqual(
      deprecationWarnings(parseAgentOptions(['--register-schedulable=false', '--maximum-dead-containers=3', '--cloud-provider=external', '--experimental-allocatable-ignore-eviction']).explicitFlags),
      [
        'Flag --register-schedulable has been deprecated, will be removed in a future version',
        'Flag --maximum-dead-containers has been deprecated, Use --eviction-hard or --eviction-soft instead. Will be removed in a future version.',
        'Flag --cloud-provider has been deprecated, will be removed in 1.23, in favor of removing cloud provider code from Kubelet.',
        'Flag --experimental-allocatable-ignore-eviction has been deprecated, will be removed in 1.23.',
      ],
    );
  });

  void it('refuses --dynamic-config-dir and a network plugin for the built-in runtime; remote ignores the dockershim options', () => {
    assert.throws(() => checkDeprecatedOptions(parseAgentOptions(['--dynamic-config-dir=/d'])), /DynamicKubeletConfig feature gate must be enabled/);
    assert.throws(() => checkDeprecatedOptions(parseAgentOptions(['--network-plugin=cni'])), /--network-plugin=cni: the built-in runtime/);
    checkDeprecatedOptions(parseAgentOptions(['--container-runtime=remote', '--network-plugin=cni', '--cni-conf-dir=/c', '--network-plugin-mtu=1400']));
    checkDeprecatedOptions(parseAgentOptions(['--cni-bin-dir=/b', '--docker-endpoint=unix:///d.sock', '--image-pull-progress-deadline=5m']));
  });

  void it('--experimental-allocatable-ignore-eviction: allocatable not reduced by the hard thresholds', () => {
    const host = { cpus: 2, memoryBytes: 1000 * 1024 * 1024, rootFsBytes: 10_000 * 1024 * 1024 } as Parameters<typeof allocatableOf>[1];
    const settings = (ignore: boolean) =>
      ({ maxPods: 110, reserved: [], evictionHard: allocatableEvictionHard({ 'memory.available': '100Mi', 'nodefs.available': '10%' }, ignore) }) as unknown as Parameters<
        typeof allocatableOf
      >[0];
    assert.equal(allocatableOf(settings(false), host).memory, `${900 * 1024}Ki`);
    assert.equal(allocatableOf(settings(true), host).memory, `${1000 * 1024}Ki`);
  });

  void it('bin/orchlet prints the warning before refusing', () => {
    const r = spawnSync(process.execPath, [ORCHLET, '--dynamic-config-dir=/tmp/none'], { encoding: 'utf8' });
    assert.equal(r.status, 1);
    assert.match(r.stderr, /^Flag --dynamic-config-dir has been deprecated, Feature DynamicKubeletConfig is deprecated in 1\.22/);
    assert.match(r.stderr, /orchlet: the DynamicKubeletConfig feature gate must be enabled in order to use the --dynamic-config-dir flag/);
    const n = spawnSync(process.execPath, [ORCHLET, '--network-plugin=kubenet'], { encoding: 'utf8' });
    assert.equal(n.status, 1);
    assert.match(n.stderr, /Flag --network-plugin has been deprecated, will be removed along with dockershim\.\n.*--network-plugin=kubenet: the built-in runtime runs pods on the host's network/);
  });

  void it('bin/orchlet: --cgroup-driver=systemd refused with kubelet\'s error where systemd is not running', { skip: existsSync('/run/systemd/system') && 'systemd runs here (the driver itself: cgroups-systemd.test.ts)' }, () => {
    const r = spawnSync(process.execPath, [ORCHLET, '--cgroup-driver=systemd'], { encoding: 'utf8' });
    assert.equal(r.status, 1);
    assert.match(r.stderr, /orchlet: --cgroup-driver=systemd: systemd not running on this host, can't use systemd as a cgroups manager/);
  });
});
