/**
 * The resource managers' parts (src/agent/cm): cpusets, the state files' format and checksums (checked
 * against checksums kubelet's own tests carry), the machine topology from a sysfs tree, CPU picking,
 * the topology manager's policies, the static CPU policy's allocations and state, the memory
 * manager's reservation rules, and the checks made from orchlet's options.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CPUSet } from '../../src/agent/cm/cpuset.js';
import { cpuChecksum, decodeCPUCheckpoint, encodeCPUCheckpoint, memoryChecksum } from '../../src/agent/cm/checkpoint.js';
import { CPUTopology, readMachineTopology, type MachineTopology } from '../../src/agent/cm/machine.js';
import { CPUManager, guaranteedCPUs, staticPolicyOptions, takeByTopology } from '../../src/agent/cm/cpumanager.js';
import { mergeHints, maskOf } from '../../src/agent/cm/topologymanager.js';
import { parseReservedMemory, validateReservedMemory } from '../../src/agent/cm/memorymanager.js';
import { ResourceManagers, resourceManagersFromOptions, type ResourceManagersConfig } from '../../src/agent/cm/index.js';
import { parseAgentOptions } from '../../src/agent/options.js';
import type { Pod } from '../../src/agent/types.js';

const pod = (uid: string, resources: Record<string, unknown>[], init: Record<string, unknown>[] = []): Pod =>
  ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: `p-${uid}`, namespace: 'default', uid },
    spec: {
      containers: resources.map((r, i) => ({ name: `c${i}`, image: 'x', resources: r })),
      ...(init.length > 0 ? { initContainers: init.map((r, i) => ({ name: `i${i}`, image: 'x', resources: r })) } : {}),
    },
  }) as unknown as Pod;

const guaranteed = (cpu: string, memory = '64Mi') => ({ limits: { cpu, memory }, requests: { cpu, memory } });

/** 2 sockets × 2 cores × 2 threads, one NUMA node per socket: cpus 0-3 on socket 0 (cores 0,1 = {0,2},{1,3}), 4-7 on socket 1. */
const BIG: MachineTopology = {
  cpus: [0, 1, 2, 3, 4, 5, 6, 7].map((id) => ({ id, core: (id % 2) + (id >= 4 ? 2 : 0), socket: id >= 4 ? 1 : 0, numa: id >= 4 ? 1 : 0 })),
  numaMemory: new Map([
    [0, 4 * 2 ** 30],
    [1, 4 * 2 ** 30],
  ]),
  numaHugepages: new Map(),
};
/** This machine type: 2 CPUs, one core each, one NUMA node. */
const SMALL: MachineTopology = {
  cpus: [
    { id: 0, core: 0, socket: 0, numa: 0 },
    { id: 1, core: 1, socket: 0, numa: 0 },
  ],
  numaMemory: new Map([[0, 8 * 2 ** 30]]),
  numaHugepages: new Map([[0, new Map([['hugepages-2Mi', 0]])]]),
};

void describe('cpusets', () => {
  void it('parse and print the Linux list format', () => {
    assert.equal(CPUSet.parse('0-2,7,12-14').toString(), '0-2,7,12-14');
    assert.equal(new CPUSet([5, 1, 2, 3]).toString(), '1-3,5');
    assert.equal(CPUSet.parse('').toString(), '');
    assert.throws(() => CPUSet.parse('1.3'), /strconv.Atoi: parsing "1.3": invalid syntax/);
    assert.equal(CPUSet.parse('0-3').difference(CPUSet.parse('1')).toString(), '0,2-3');
  });
});

void describe('state files', () => {
  void it("CPU manager checksums are kubelet's (fixtures of kubelet 1.23's state tests)", () => {
    assert.equal(cpuChecksum({ policyName: 'none', defaultCpuSet: '4-6', entries: {} }), 354655845);
    assert.equal(cpuChecksum({ policyName: 'none', defaultCpuSet: '1-3', entries: { pod: { container1: '4-6', container2: '1-3' } } }), 3610638499);
    const text = '{"policyName":"none","defaultCPUSet":"1-3","entries":{"pod":{"container1":"4-6","container2":"1-3"}},"checksum":3610638499}';
    assert.deepEqual(decodeCPUCheckpoint(text).entries, { pod: { container1: '4-6', container2: '1-3' } });
    assert.throws(() => decodeCPUCheckpoint(text.replace('3610638499', '1337')), /checkpoint is corrupted/);
    assert.equal(encodeCPUCheckpoint({ policyName: 'none', defaultCpuSet: '', entries: {} }), `{"policyName":"none","defaultCpuSet":"","checksum":${cpuChecksum({ policyName: 'none', defaultCpuSet: '', entries: {} })}}`);
  });

  void it("memory manager checksum is kubelet's", () => {
    const sum = memoryChecksum({
      policyName: 'static',
      machineState: { '0': { numberOfAssignments: 0, memoryMap: { memory: { total: 2048, systemReserved: 512, allocatable: 1536, reserved: 512, free: 1024 } }, cells: [] } },
      entries: { pod: { container1: [{ numaAffinity: [0], type: 'memory', size: 512 }] } },
    });
    assert.equal(sum, 4215593881);
  });
});

void describe('machine topology', () => {
  void it('is read from sysfs: CPUs with core, socket and NUMA node; node memory and hugepages', async () => {
    const root = await mkdtemp(join(tmpdir(), 'cm-sysfs-'));
    try {
      await mkdir(join(root, 'devices/system/cpu'), { recursive: true });
      await writeFile(join(root, 'devices/system/cpu/online'), '0-3\n');
      for (const id of [0, 1, 2, 3]) {
        const t = join(root, `devices/system/cpu/cpu${id}/topology`);
        await mkdir(t, { recursive: true });
        await writeFile(join(t, 'core_id'), `${id % 2}\n`);
        await writeFile(join(t, 'physical_package_id'), `${id >= 2 ? 1 : 0}\n`);
      }
      for (const n of [0, 1]) {
        const d = join(root, `devices/system/node/node${n}`);
        await mkdir(join(d, 'hugepages/hugepages-2048kB'), { recursive: true });
        await writeFile(join(d, 'cpulist'), n === 0 ? '0-1\n' : '2-3\n');
        await writeFile(join(d, 'meminfo'), `Node ${n} MemTotal:        1024 kB\n`);
        await writeFile(join(d, 'hugepages/hugepages-2048kB/nr_hugepages'), '2\n');
      }
      const m = readMachineTopology(root);
      assert.deepEqual(m.cpus, [
        { id: 0, core: 0, socket: 0, numa: 0 },
        { id: 1, core: 1, socket: 0, numa: 0 },
        { id: 2, core: 0, socket: 1, numa: 1 },
        { id: 3, core: 1, socket: 1, numa: 1 },
      ]);
      assert.deepEqual([...m.numaMemory], [
        [0, 1024 * 1024],
        [1, 1024 * 1024],
      ]);
      assert.equal(m.numaHugepages.get(1)?.get('hugepages-2Mi'), 2 * 2048 * 1024);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  void it('this machine: every online CPU is on a NUMA node', () => {
    const m = readMachineTopology();
    assert.ok(m.cpus.length >= 1);
    assert.ok(m.cpus.every((c) => m.numaMemory.has(c.numa)));
  });
});

void describe('CPU picking (takeByTopology)', () => {
  const topo = new CPUTopology(BIG.cpus);
  void it('takes whole sockets, then whole cores, then single CPUs', () => {
    assert.equal(takeByTopology(topo, topo.cpus(), 4).toString(), '0-3');
    assert.equal(takeByTopology(topo, topo.cpus(), 2).toString(), '0,2');
    // a partly used socket is filled first
    assert.equal(takeByTopology(topo, CPUSet.parse('1-7'), 1).toString(), '2');
    assert.throws(() => takeByTopology(topo, CPUSet.parse('0-1'), 3), /not enough cpus available to satisfy request/);
  });
});

void describe('topology manager policies', () => {
  const nodes = [0, 1];
  const both = maskOf([0, 1]);
  const cpuHints = { cpu: [{ affinity: maskOf([0]), preferred: true }, { affinity: both, preferred: false }] };
  void it('best-effort always admits; restricted needs a preferred merge', () => {
    const impossible = { cpu: [] };
    assert.equal(mergeHints('best-effort', nodes, [impossible]).admit, true);
    assert.equal(mergeHints('restricted', nodes, [impossible]).admit, false);
    const r = mergeHints('restricted', nodes, [cpuHints, null]);
    assert.deepEqual(r, { hint: { affinity: maskOf([0]), preferred: true }, admit: true });
  });
  void it('single-numa-node keeps single-node hints only', () => {
    const wide = { cpu: [{ affinity: both, preferred: true }] };
    assert.equal(mergeHints('single-numa-node', nodes, [wide]).admit, false);
    assert.equal(mergeHints('single-numa-node', nodes, [cpuHints]).admit, true);
    // providers without a preference: the any-node hint, shown as nil
    assert.deepEqual(mergeHints('single-numa-node', nodes, [null]).hint, { affinity: null, preferred: true });
  });
  void it('disjoint preferences of two providers are not preferred', () => {
    const mem = { memory: [{ affinity: maskOf([1]), preferred: true }] };
    const cpu = { cpu: [{ affinity: maskOf([0]), preferred: true }] };
    assert.equal(mergeHints('restricted', nodes, [cpu, mem]).admit, false);
  });
});

void describe('static CPU policy', () => {
  void it('gives integer requests of Guaranteed pods CPUs of their own and keeps the state file', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cm-state-'));
    try {
      const topo = new CPUTopology(SMALL.cpus);
      const mk = () =>
        new CPUManager({ policy: 'static', topology: topo, reservedCount: 1, stateDir: dir, reconcilePeriodMs: 10_000, affinity: () => ({ affinity: null, preferred: false }) });
      let active: Pod[] = [];
      const updates: string[] = [];
      const host = { activePods: () => active, podStatus: () => undefined, sourcesReady: () => true, updateContainerCpuset: async (id: string, c: string) => void updates.push(`${id}=${c}`) };
      const m = mk();
      m.start(host);
      assert.equal(m.cpusetOf('x', 'c').toString(), '0-1');
      const g = pod('g', [guaranteed('1')]);
      const b = pod('b', [{ requests: { cpu: '500m' } }]);
      const f = pod('f', [guaranteed('1500m')]);
      assert.equal(guaranteedCPUs(f, f.spec.containers[0]!), 0);
      active = [g, b, f];
      for (const p of active) m.allocate(p, p.spec.containers[0]!);
      assert.equal(m.cpusetOf('g', 'c0').toString(), '1');
      assert.equal(m.cpusetOf('b', 'c0').toString(), '0');
      const state = JSON.parse(await readFile(join(dir, 'cpu_manager_state'), 'utf8')) as Record<string, unknown>;
      assert.deepEqual({ ...state, checksum: undefined }, { policyName: 'static', defaultCpuSet: '0', entries: { g: { c0: '1' } }, checksum: undefined });
      // no CPU left beyond the reserved one
      const g2 = pod('g2', [guaranteed('1')]);
      assert.throws(() => m.allocate(g2, g2.spec.containers[0]!), /not enough cpus available to satisfy request/);
      // a restart restores it; the pod's end returns its CPU
      m.stop();
      const m2 = mk();
      m2.start(host);
      assert.equal(m2.cpusetOf('g', 'c0').toString(), '1');
      active = [b];
      m2.removeStaleState();
      assert.equal(m2.cpusetOf('b', 'c0').toString(), '0-1');
      m2.stop();
      // a file of another policy is refused
      const none = new CPUManager({ policy: 'none', topology: topo, reservedCount: 0, stateDir: dir, reconcilePeriodMs: 10_000, affinity: () => ({ affinity: null, preferred: false }) });
      assert.throws(() => none.start(host), /configured policy "none" differs from state checkpoint policy "static", please drain this node/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  void it("an init container's CPUs are reused by the app containers that follow it", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cm-init-'));
    try {
      const m = new CPUManager({ policy: 'static', topology: new CPUTopology(SMALL.cpus), reservedCount: 1, stateDir: dir, reconcilePeriodMs: 10_000, affinity: () => ({ affinity: null, preferred: false }) });
      const p = pod('w', [guaranteed('1')], [guaranteed('1')]);
      m.start({ activePods: () => [p], podStatus: () => undefined, sourcesReady: () => true, updateContainerCpuset: async () => undefined });
      m.allocate(p, p.spec.initContainers![0]!);
      m.allocate(p, p.spec.containers[0]!);
      assert.equal(m.cpusetOf('w', 'i0').toString(), '1');
      assert.equal(m.cpusetOf('w', 'c0').toString(), '1');
      assert.equal(m.cpusetOf('other', 'x').toString(), '0');
      m.stop();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  void it('needs reserved CPUs; full-pcpus-only refuses odd requests on SMT machines', () => {
    const topo = new CPUTopology(BIG.cpus);
    const base = { policy: 'static' as const, topology: topo, stateDir: '/nonexistent', reconcilePeriodMs: 1000, affinity: () => ({ affinity: null, preferred: false }) };
    assert.throws(() => new CPUManager({ ...base, reservedCount: 0 }), /the static policy requires systemreserved.cpu \+ kubereserved.cpu to be greater than zero/);
    assert.throws(() => new CPUManager({ ...base, reservedCount: 2, reservedCPUs: CPUSet.parse('0') }), /unable to reserve the required amount of CPUs/);
    const m = new CPUManager({ ...base, reservedCount: 1, fullPCPUsOnly: true });
    const p = pod('odd', [guaranteed('1')]);
    assert.throws(() => m.allocate(p, p.spec.containers[0]!), /SMT Alignment Error: requested 1 cpus not multiple cpus per core = 2/);
    assert.throws(() => staticPolicyOptions({ bogus: 'true' }, {}), /unknown CPU Manager Policy option: "bogus"/);
    assert.throws(() => staticPolicyOptions({ 'full-pcpus-only': 'yes' }, {}), /bad value for option "full-pcpus-only"/);
    assert.throws(() => staticPolicyOptions({ 'full-pcpus-only': 'true' }, { CPUManagerPolicyBetaOptions: false }), /Beta-level Options not enabled/);
  });
});

void describe('memory manager and the whole', () => {
  void it('--reserved-memory must add up to what node allocatable reserves', () => {
    const r = parseReservedMemory('0:memory=1Gi,hugepages-2Mi=0;1:memory=100Mi');
    assert.equal(r.get(0)?.get('memory'), 1n << 30n);
    assert.throws(() => parseReservedMemory('memory=1Gi'), /incorrect format/);
    const want = new Map([['memory', (1n << 30n) + 100n * (1n << 20n)]]);
    validateReservedMemory(r, [0, 1], want);
    assert.throws(() => validateReservedMemory(parseReservedMemory('0:memory=1Gi'), [0, 1], want), /the total amount "1Gi" of type "memory" is not equal to the value "1124Mi" determined by Node Allocatable feature/);
    assert.throws(() => validateReservedMemory(parseReservedMemory('2:memory=1Gi'), [0, 1], want), /references a NUMA node 2 that does not exist/);
  });

  void it('options: static needs reserved CPUs; policy options need their gate; --reserved-cpus rules', () => {
    const cfg = (args: string[]) => resourceManagersFromOptions(parseAgentOptions(args), undefined, SMALL);
    assert.throws(() => new ResourceManagers({ ...cfg(['--cpu-manager-policy=static']).config, machine: SMALL }), /requires systemreserved.cpu \+ kubereserved.cpu/);
    assert.throws(() => cfg(['--cpu-manager-policy-options=full-pcpus-only=true']), /cpuManagerPolicyOptions requires feature gate CPUManagerPolicyOptions/);
    assert.throws(() => cfg(['--reserved-cpus=0-4']), /reserved-cpus: 0-4 is not a subset of online-cpus: 0-1/);
    assert.throws(() => cfg(['--topology-manager-policy=restricted', '--feature-gates=TopologyManager=false']), /topologyManagerPolicy restricted requires feature gate TopologyManager/);
    assert.throws(() => cfg(['--reserved-cpus=a']), /unable to parse reservedSystemCPUs \(--reserved-cpus\) a/);
    assert.throws(() => cfg(['--reserved-cpus=0', '--system-reserved-cgroup=/sys']), /can't use reservedSystemCPUs/);
    const r = cfg(['--reserved-cpus=1', '--system-reserved=cpu=2,memory=1Gi', '--orch-reserved=cpu=1']);
    assert.deepEqual(r.reserved, [{}, { cpu: '1', memory: '1Gi' }]);
    assert.equal(r.config.reservedCPUMilli, 1000);
    // the hard eviction threshold (100Mi by default) is part of the memory reservation
    assert.equal(r.config.memoryReservation.get('memory'), (1n << 30n) + 100n * (1n << 20n));
    assert.throws(() => new ResourceManagers(cfg(['--memory-manager-policy=Static']).config), /the total amount "0" of type "memory" is not equal to the value "100Mi"/);
  });

  void it('static memory policy: Guaranteed containers get NUMA nodes; the state file records them', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cm-mem-'));
    try {
      const { config } = resourceManagersFromOptions(
        parseAgentOptions(['--memory-manager-policy=Static', '--reserved-memory=0:memory=100Mi', `--root-dir=${dir}`, '--topology-manager-policy=single-numa-node']),
        undefined,
        SMALL,
      );
      const rm2 = new ResourceManagers({ ...config, machine: SMALL } satisfies ResourceManagersConfig);
      const g = pod('g', [guaranteed('500m', '128Mi')]);
      rm2.start({ activePods: () => [g], podStatus: () => undefined, sourcesReady: () => true, updateContainerCpuset: async () => undefined });
      assert.equal(rm2.admit(g), undefined);
      assert.deepEqual(rm2.containerCpusets(g, g.spec.containers[0]!), { cpusetMems: '0' });
      const huge = pod('huge', [guaranteed('1', '64Gi')]);
      assert.deepEqual(rm2.admit(huge)?.reason, 'UnexpectedAdmissionError');
      const state = JSON.parse(await readFile(join(dir, 'memory_manager_state'), 'utf8')) as { policyName: string; machineState: Record<string, { memoryMap: Record<string, { reserved: number }> }>; entries: unknown };
      assert.equal(state.policyName, 'Static');
      assert.equal(state.machineState['0']?.memoryMap.memory?.reserved, 128 << 20);
      assert.deepEqual(state.entries, { g: { c0: [{ numaAffinity: [0], type: 'memory', size: 128 << 20 }] } });
      rm2.stop();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

void describe('topology manager scopes', () => {
  void it('pod scope: one hint for the whole pod; restricted refuses a pod whose containers together do not fit', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cm-scope-'));
    try {
      const mk = (scope: string, root: string) => {
        const { config } = resourceManagersFromOptions(
          parseAgentOptions(['--cpu-manager-policy=static', '--reserved-cpus=0', `--root-dir=${root}`, '--topology-manager-policy=restricted', `--topology-manager-scope=${scope}`]),
          undefined,
          BIG,
        );
        const m = new ResourceManagers(config);
        m.start({ activePods: () => [], podStatus: () => undefined, sourcesReady: () => false, updateContainerCpuset: async () => undefined });
        return m;
      };
      // 7 free CPUs: 4 on NUMA node 1, 3 on node 0 (CPU 0 is reserved)
      const two = pod('two', [guaranteed('2'), guaranteed('2')]);
      const podScope = mk('pod', join(dir, 'a'));
      assert.equal(podScope.admit(two), undefined);
      const sets = two.spec.containers.map((c) => podScope.containerCpusets(two, c).cpusetCpus);
      // both containers on the NUMA node that holds all four CPUs
      assert.deepEqual(sets, ['4,6', '5,7']);
      const tooBig = pod('big', [guaranteed('4'), guaranteed('4')]);
      assert.deepEqual(mk('pod', join(dir, 'b')).admit(tooBig), { reason: 'TopologyAffinityError', message: 'Resources cannot be allocated with Topology locality' });
      // container scope: each container is placed on its own
      const containerScope = mk('container', join(dir, 'c'));
      assert.equal(containerScope.admit(two), undefined);
      podScope.stop();
      containerScope.stop();
      // Container scope, every source read: the first container's CPUs are not stale while the second is
      // admitted (kubelet's pendingAdmissionPod), so two containers of 4 CPUs do not fit in 7.
      const { config } = resourceManagersFromOptions(
        parseAgentOptions(['--cpu-manager-policy=static', '--reserved-cpus=0', `--root-dir=${join(dir, 'd')}`, '--topology-manager-policy=restricted', '--topology-manager-scope=container']),
        undefined,
        BIG,
      );
      const ready = new ResourceManagers(config);
      ready.start({ activePods: () => [], podStatus: () => undefined, sourcesReady: () => true, updateContainerCpuset: async () => undefined });
      assert.deepEqual(ready.admit(pod('pair', [guaranteed('4'), guaranteed('4')])), { reason: 'TopologyAffinityError', message: 'Resources cannot be allocated with Topology locality' });
      // once that admission is over, what the refused pod's first container took is stale: the next pod gets it
      assert.equal(ready.admit(pod('four', [guaranteed('4')])), undefined);
      ready.stop();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
