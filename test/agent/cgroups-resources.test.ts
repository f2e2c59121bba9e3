// The container manager's arithmetic (src/agent/cgroups/resources.ts, fs.ts), checked against values
// kubelet 1.23 computes: node allocatable for the pods' cgroup, a pod's cgroup resources, the QoS
// tiers' shares and --qos-reserved limits, the option's parsing, and the mount table.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { milliCPUToShares, parseCgroupMounts, sharesToWeight } from '../../src/agent/cgroups/fs.js';
import { checkCgroupOptions } from '../../src/agent/cgroups/manager.js';
import {
  cgroupConfigOf,
  checkNodeAllocatable,
  nodeAllocatableAbsolute,
  parseQOSReserved,
  podRequestsAndLimits,
  qosCPUShares,
  qosMemoryLimits,
  resourceConfigForPod,
} from '../../src/agent/cgroups/resources.js';
import { addAllocatableThresholds } from '../../src/agent/cgroups/memcg.js';
import type { Threshold } from '../../src/agent/eviction.js';
import type { Pod } from '../../src/agent/types.js';

const Mi = 1024 * 1024;

function pod(uid: string, containers: Record<string, unknown>[], extra: Record<string, unknown> = {}): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: uid, namespace: 'default', uid },
    spec: { containers: containers.map((r, i) => ({ name: `c${i}`, image: 'x', resources: r })), ...extra },
  } as unknown as Pod;
}

const guaranteed = pod('g', [{ limits: { cpu: '200m', memory: '64Mi' } }]);
const burstable = pod('b', [{ requests: { cpu: '100m', memory: '32Mi' } }, { requests: { cpu: '250m' }, limits: { cpu: '500m' } }]);
const besteffort = pod('e', [{}]);

void describe('cgroup arithmetic of kubelet 1.23', () => {
  void it('shares and weights', () => {
    assert.deepEqual([0, 1, 100, 1000, 2500].map(milliCPUToShares), [2, 2, 102, 1024, 2560]);
    assert.deepEqual([2, 1024, 262144].map(sharesToWeight), [1, 39, 10000]);
  });

  void it('node allocatable for the pods cgroup: capacity minus both reservations, never negative; eviction not subtracted', () => {
    const cap = { cpu: 2000, memory: 4096 * Mi, pid: 32768 };
    assert.deepEqual(nodeAllocatableAbsolute(cap, [{ cpu: '500m', memory: '1Gi', pid: '100' }, { memory: '512Mi' }]), { cpu: 1500, memory: 2560 * Mi, pid: 32668 });
    assert.deepEqual(nodeAllocatableAbsolute(cap, [{ cpu: '3' }, {}]), { cpu: 0, memory: 4096 * Mi, pid: 32768 });
    assert.deepEqual(cgroupConfigOf({ cpu: '500m', memory: '256Mi', pid: '1000' }), { cpuShares: 512, memory: 256 * Mi, pidsLimit: 1000 });
    assert.deepEqual(cgroupConfigOf({ 'ephemeral-storage': '1Gi' }), {});
    assert.equal(checkNodeAllocatable(cap, [{ cpu: '1' }, { cpu: '1', memory: '4000Mi' }], 96 * Mi), undefined);
    assert.equal(
      checkNodeAllocatable(cap, [{ cpu: '1500m' }, { cpu: '1', memory: '4000Mi' }], 100 * Mi),
      'invalid Node Allocatable configuration. Resource "cpu" has an allocatable of 2500m, capacity of -500m Resource "memory" has an allocatable of 4299161600, capacity of -4194304',
    );
  });

  void it('pod requests and limits: containers summed, init containers as a floor, overhead added; requests default to limits', () => {
    const p = pod('p', [{ requests: { cpu: '100m' }, limits: { memory: '64Mi' } }, { requests: { cpu: '200m', memory: '16Mi' } }], {
      initContainers: [{ name: 'i', image: 'x', resources: { requests: { cpu: '1' } } }],
      overhead: { cpu: '10m', memory: '1Mi' },
    });
    assert.deepEqual(podRequestsAndLimits(p), { requests: { cpu: 1010, memory: 81 * Mi }, limits: { cpu: 0, memory: 65 * Mi } });
  });

  void it("ResourceConfigForPod per QoS class, with and without CFS quota", () => {
    const o = { cpuCFSQuota: true, cpuPeriodUs: 100000 };
    assert.deepEqual(resourceConfigForPod(guaranteed, o), { cpuShares: 204, cpuQuota: 20000, cpuPeriod: 100000, memory: 64 * Mi });
    // burstable: quota only when every container has a cpu limit, memory only when every one has a memory limit
    assert.deepEqual(resourceConfigForPod(burstable, o), { cpuShares: 358 });
    const both = pod('x', [{ requests: { cpu: '100m' }, limits: { cpu: '1', memory: '10Mi' } }]);
    assert.deepEqual(resourceConfigForPod(both, o), { cpuShares: 102, cpuQuota: 100000, cpuPeriod: 100000, memory: 10 * Mi });
    assert.deepEqual(resourceConfigForPod(both, { cpuCFSQuota: false, cpuPeriodUs: 50000 }), { cpuShares: 102, cpuQuota: -1, cpuPeriod: 50000, memory: 10 * Mi });
    assert.deepEqual(resourceConfigForPod(besteffort, o), { cpuShares: 2 });
  });

  void it('QoS tiers: burstable shares from its requests, besteffort 2; --qos-reserved memory limits', () => {
    assert.deepEqual(qosCPUShares([guaranteed, burstable, besteffort]), { burstable: 358, besteffort: 2 });
    assert.deepEqual(qosCPUShares([]), { burstable: 2, besteffort: 2 });
    assert.deepEqual(qosMemoryLimits([guaranteed, burstable, besteffort], 1000 * Mi, 50), { burstable: 968 * Mi, besteffort: 952 * Mi });
    assert.deepEqual(qosMemoryLimits([guaranteed], 1000 * Mi, 100), { burstable: 936 * Mi, besteffort: 936 * Mi });
    assert.equal(qosMemoryLimits([guaranteed], 0, 50), undefined);
  });

  void it('addAllocatableThresholds: a twin of each hard memory.available threshold when pods are enforced', () => {
    const hard: Threshold = { signal: 'memory.available', quantity: 100 * Mi, text: '100Mi', hard: true, gracePeriodMs: 0, minReclaim: { quantity: Mi } };
    const soft: Threshold = { signal: 'memory.available', quantity: 200 * Mi, text: '200Mi', hard: false, gracePeriodMs: 60_000 };
    const disk: Threshold = { signal: 'nodefs.available', percent: 0.1, text: '10%', hard: true, gracePeriodMs: 0 };
    assert.deepEqual(addAllocatableThresholds([hard, soft, disk], ['pods']), [hard, soft, disk, { ...hard, signal: 'allocatableMemory.available' }]);
    assert.deepEqual(addAllocatableThresholds([hard, soft, disk], ['system-reserved']), [hard, soft, disk]);
  });

  void it('--qos-reserved parsing as ParseQOSReserved', () => {
    assert.deepEqual(parseQOSReserved({ memory: '50%' }), { memory: 50 });
    assert.deepEqual(parseQOSReserved({}), {});
    assert.throws(() => parseQOSReserved({ cpu: '50%' }), /cannot reserve "cpu" resource/);
    assert.throws(() => parseQOSReserved({ memory: '50' }), /percentage expected, got '50'/);
    assert.throws(() => parseQOSReserved({ memory: 'x%' }), /invalid number in percentage 'x%'/);
    assert.throws(() => parseQOSReserved({ memory: '101%' }), /percentage must be between 0 and 100/);
  });

  void it("the options' validation", () => {
    const base = { enforceNodeAllocatable: ['pods'], cgroupsPerQos: true, systemReservedCgroup: '', orchReservedCgroup: '', cgroupRoot: '' };
    assert.equal(checkCgroupOptions(base), undefined);
    assert.equal(checkCgroupOptions({ ...base, cgroupsPerQos: false, enforceNodeAllocatable: [] }), undefined);
    assert.match(checkCgroupOptions({ ...base, cgroupsPerQos: false }) ?? '', /not supported unless cgroupsPerQOS/);
    assert.match(checkCgroupOptions({ ...base, enforceNodeAllocatable: ['orch-reserved'] }) ?? '', /kubeReservedCgroup \(--orch-reserved-cgroup\) must be specified when "orch-reserved"/);
    assert.equal(checkCgroupOptions({ ...base, enforceNodeAllocatable: ['kube-reserved'], orchReservedCgroup: '/k' }), undefined);
    assert.match(checkCgroupOptions({ ...base, systemCgroups: '/system' }) ?? '', /cgroupRoot \(--cgroup-root\) was not specified/);
    assert.equal(checkCgroupOptions({ ...base, systemCgroups: '/system', cgroupRoot: '/' }), undefined);
  });

  void it('reads v1 (hybrid) and v2 mount tables', () => {
    const hybrid = [
      '30 25 0:26 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755',
      '31 30 0:27 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid,nodev,noexec,relatime - cgroup cgroup rw,cpu,cpuacct',
      '32 30 0:28 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,xattr,name=systemd',
      '33 30 0:29 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw',
    ].join('\n');
    assert.deepEqual(parseCgroupMounts(hybrid), [
      { controllers: ['cpu', 'cpuacct'], mountPoint: '/sys/fs/cgroup/cpu,cpuacct' },
      { controllers: ['systemd'], mountPoint: '/sys/fs/cgroup/systemd' },
      { controllers: ['unified'], mountPoint: '/sys/fs/cgroup/unified' },
    ]);
    assert.deepEqual(parseCgroupMounts('40 1 0:30 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate'), [{ controllers: ['unified'], mountPoint: '/sys/fs/cgroup' }]);
  });
});
