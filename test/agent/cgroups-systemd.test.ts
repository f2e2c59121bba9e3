// --cgroup-driver=systemd (src/agent/cgroups/systemd*.ts) without the host's systemd: a private
// dbus-daemon with a configuration of this test, a fake org.freedesktop.systemd1 exported on it from
// this process (dbus-next) that records StartTransientUnit / SetUnitProperties / StopUnit /
// ResetFailedUnit and makes or removes the slice's directories under a cgroup root unique to the
// test, as systemd would; bin/orchlet runs in a mount namespace where /run/systemd/system exists,
// with DBUS_SYSTEM_BUS_ADDRESS on the private bus and a small recording CRI runtime. Checked: the
// unit names and properties systemd receives, the values in the cgroup files, the cgroup parent
// the runtime is given, and the slices stopped and removed when pods go.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import * as dbus from 'dbus-next';
import { CgroupFs } from '../../src/agent/cgroups/fs.js';
import { NodeCgroups } from '../../src/agent/cgroups/manager.js';
import { SystemdCgroups } from '../../src/agent/cgroups/systemd.js';
import { SystemdBus } from '../../src/agent/cgroups/systemd-dbus.js';
import { cgroupNameToSystemd, expandSlice, parseSystemdName, systemdPathOf } from '../../src/agent/cgroups/systemd-names.js';
import { requireBinary } from '../helpers/binaries.js';
import { eventually } from '../helpers/eventually.js';

const ORCHLET = fileURLToPath(new URL('../../../bin/orchlet', import.meta.url));
const PROTO = fileURLToPath(new URL('../../../src/agent/runtime/cri/api.proto', import.meta.url));
const Mi = 1024 * 1024;
const linuxRoot = process.platform === 'linux' && process.getuid?.() === 0 && existsSync('/sys/fs/cgroup/cpu/cpu.shares');
const daemon = requireBinary(undefined, 'dbus-daemon');
const unshare = requireBinary(undefined, 'unshare');
const skip = !linuxRoot ? 'needs root and cgroup v1' : daemon === null ? 'dbus-daemon not installed (Debian package dbus-daemon)' : unshare === null ? 'unshare not installed' : false;

/** The cgroup root of this test: /<root>.slice in every hierarchy. */
const root = `orchsd${randomBytes(4).toString('hex')}`;

/** An error answer to `msg` (dbus-next's typings declare the message parameter as a string). */
const failure = (msg: dbus.Message, name: string, text: string): dbus.Message => dbus.Message.newError(msg as never, name, text);

interface Call {
  member: string;
  unit: string;
  props: Record<string, unknown>;
}

/** The fake systemd: the calls it was given, the units it holds. */
class FakeSystemd {
  readonly calls: Call[] = [];
  readonly units = new Set<string>();
  private job = 0;
  constructor(
    private readonly bus: dbus.MessageBus,
    private readonly fs: CgroupFs,
  ) {}

  handle(msg: dbus.Message): boolean {
    if (msg.destination !== 'org.freedesktop.systemd1') return false;
    if (msg.interface === 'org.freedesktop.DBus.Properties' && msg.member === 'Get') {
      this.bus.send(dbus.Message.newMethodReturn(msg, 'v', [new dbus.Variant('s', '252.19-1~deb12u1')]));
      return true;
    }
    if (msg.interface !== 'org.freedesktop.systemd1.Manager') return false;
    void this.answer(msg).catch((err: unknown) => this.bus.send(failure(msg, 'org.freedesktop.DBus.Error.Failed', String(err))));
    return true;
  }

  private async answer(msg: dbus.Message): Promise<void> {
    const unit = String(msg.body[0]);
    // StartTransientUnit(s name, s mode, a(sv) properties, ...), SetUnitProperties(s name, b runtime, a(sv) properties)
    const props = msg.member === 'StartTransientUnit' || msg.member === 'SetUnitProperties' ? (msg.body[2] as [string, dbus.Variant][]) : [];
    this.calls.push({ member: msg.member, unit, props: Object.fromEntries(props.map(([k, v]) => [k, v.value])) });
    const path = expandSlice(unit);
    if (msg.member === 'StartTransientUnit') {
      if (this.units.has(unit)) return this.bus.send(failure(msg, 'org.freedesktop.systemd1.UnitExists', `Unit ${unit} already exists.`));
      await this.fs.create(path);
      this.units.add(unit);
      return this.finishJob(msg, unit);
    }
    if (msg.member === 'StopUnit') {
      if (!this.units.delete(unit)) return this.bus.send(failure(msg, 'org.freedesktop.systemd1.NoSuchUnit', `Unit ${unit} not loaded.`));
      await this.fs.remove(path);
      return this.finishJob(msg, unit);
    }
    if (msg.member === 'SetUnitProperties' || msg.member === 'ResetFailedUnit') return this.bus.send(dbus.Message.newMethodReturn(msg));
    this.bus.send(failure(msg, 'org.freedesktop.DBus.Error.UnknownMethod', msg.member));
  }

  /** The job's object path answered, then its JobRemoved signal (result "done"). */
  private finishJob(msg: dbus.Message, unit: string): void {
    const id = ++this.job;
    const job = `/org/freedesktop/systemd1/job/${id}`;
    this.bus.send(dbus.Message.newMethodReturn(msg, 'o', [job]));
    setImmediate(() => this.bus.send(dbus.Message.newSignal('/org/freedesktop/systemd1', 'org.freedesktop.systemd1.Manager', 'JobRemoved', 'uoss', [id, job, unit, 'done'])));
  }

  started(unit: string): Record<string, unknown> | undefined {
    return this.calls.find((c) => c.member === 'StartTransientUnit' && c.unit === unit)?.props;
  }
}

/** A CRI runtime that answers every call (empty) and records the cgroup parent of each RunPodSandbox. */
async function recordingRuntime(socket: string, parents: string[]): Promise<grpc.Server> {
  const def = protoLoader.loadSync(PROTO, { keepCase: false, longs: String, enums: String, defaults: true });
  const server = new grpc.Server();
  let sandboxes = 0;
  const answers: Record<string, (req: Record<string, unknown>) => object> = {
    Version: () => ({ version: '0.1.0', runtimeName: 'recorder', runtimeVersion: '1.0', runtimeApiVersion: 'v1' }),
    Status: () => ({ status: { conditions: [{ type: 'RuntimeReady', status: true }, { type: 'NetworkReady', status: true }] } }),
    RunPodSandbox: (req) => {
      parents.push((req.config as { linux?: { cgroupParent?: string } }).linux?.cgroupParent ?? '');
      return { podSandboxId: `sandbox-${++sandboxes}` };
    },
  };
  for (const service of ['RuntimeService', 'ImageService']) {
    const methods = def[`runtime.v1.${service}`] as unknown as grpc.ServiceDefinition;
    const impl: grpc.UntypedServiceImplementation = {};
    for (const name of Object.keys(methods)) {
      impl[name] = (call: grpc.ServerUnaryCall<Record<string, unknown>, object>, cb: grpc.sendUnaryData<object>) => cb(null, answers[name]?.(call.request) ?? {});
    }
    server.addService(methods, impl);
  }
  await new Promise<void>((resolve, reject) => server.bindAsync(`unix://${socket}`, grpc.ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())));
  return server;
}

void describe('systemd cgroup names (kubelet ToSystemd / ParseSystemdToCgroupName, libcontainer ExpandSlice)', () => {
  void it('converts cgroupfs names to slices and back', () => {
    assert.equal(cgroupNameToSystemd(['kubepods', 'burstable', 'pod1234-abcd-5678']), '/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234_abcd_5678.slice');
    assert.equal(cgroupNameToSystemd([]), '/');
    assert.equal(systemdPathOf('/'), '/');
    assert.equal(systemdPathOf('/kubepods/besteffort'), '/kubepods.slice/kubepods-besteffort.slice');
    assert.equal(systemdPathOf('/my-root/kubepods'), '/my_root.slice/my_root-kubepods.slice', 'the cgroup root is a slice; its dashes escaped');
    assert.equal(systemdPathOf('system.slice'), '/system.slice', 'a name in systemd form is read as such');
    assert.equal(systemdPathOf('/system.slice/orch-reserved.slice'), '/orch.slice/orch-reserved.slice');
    assert.deepEqual(parseSystemdName('/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod12_ab.slice'), ['kubepods', 'burstable', 'pod12-ab']);
    assert.equal(expandSlice('-.slice'), '/');
    assert.equal(expandSlice('a-b-c.slice'), '/a.slice/a-b.slice/a-b-c.slice');
    assert.throws(() => expandSlice('a--b.slice'), /invalid slice name: a--b\.slice/);
    assert.throws(() => expandSlice('a/b.slice'), /invalid slice name/);
    assert.throws(() => expandSlice('a.scope'), /invalid slice name/);
  });
});

void describe('--cgroup-driver=systemd against a fake systemd on a private bus', { skip }, () => {
  let dir = '';
  let bus: dbus.MessageBus | undefined;
  let busDaemon: ChildProcess | undefined;
  let fake: FakeSystemd;
  let address = '';
  const fs = linuxRoot ? new CgroupFs() : undefined;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'orch-systemd-'));
    const socket = join(dir, 'system_bus_socket');
    const config = join(dir, 'bus.conf');
    writeFileSync(
      config,
      [
        '<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN" "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">',
        '<busconfig>',
        `  <listen>unix:path=${socket}</listen>`,
        '  <auth>EXTERNAL</auth>',
        '  <policy context="default">',
        '    <allow user="*"/>',
        '    <allow own="*"/>',
        '    <allow send_destination="*"/>',
        '    <allow receive_sender="*"/>',
        '  </policy>',
        '</busconfig>',
      ].join('\n'),
    );
    const d = spawn(daemon!, [`--config-file=${config}`, '--nofork', '--nopidfile'], { stdio: ['ignore', 'ignore', 'pipe'] });
    busDaemon = d;
    let err = '';
    d.stderr.on('data', (c: Buffer) => (err += c.toString()));
    await eventually(() => `the private bus at ${socket}: ${err}`, () => existsSync(socket), { timeoutMs: 10_000 });
    address = `unix:path=${socket}`;
    bus = dbus.sessionBus({ busAddress: address });
    fake = new FakeSystemd(bus, fs!);
    bus.addMethodHandler((m: dbus.Message) => fake.handle(m));
    assert.equal(await bus.requestName('org.freedesktop.systemd1', dbus.NameFlag.DO_NOT_QUEUE), dbus.RequestNameReply.PRIMARY_OWNER);
  });

  after(async () => {
    bus?.disconnect();
    if (busDaemon && busDaemon.exitCode === null) {
      const gone = new Promise((resolve) => busDaemon!.once('exit', resolve));
      busDaemon.kill('SIGTERM');
      await gone;
    }
    await fs?.remove(`/${root}.slice`);
    await rm(dir, { recursive: true, force: true });
  });

  const read = (controller: string, path: string, file: string): string => readFileSync(join(fs!.path(controller, path)!, file), 'utf8').trim();

  void it('bin/orchlet makes the pods hierarchy as slices and gives the runtime the pod slice as cgroup parent', async () => {
    const socket = join(dir, 'cri.sock');
    const parents: string[] = [];
    const runtime = await recordingRuntime(socket, parents);
    const manifests = join(dir, 'manifests');
    mkdirSync(manifests);
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'burst' },
      spec: { containers: [{ name: 'c', image: 'busybox', resources: { requests: { cpu: '100m' }, limits: { cpu: '200m' } } }] },
    };
    writeFileSync(join(manifests, 'burst.json'), JSON.stringify(pod));
    const args = [
      ORCHLET,
      '--cgroup-driver=systemd',
      `--cgroup-root=/${root}`,
      '--container-runtime=remote',
      `--container-runtime-endpoint=unix://${socket}`,
      `--root-dir=${join(dir, 'root')}`,
      `--pod-manifest-path=${manifests}`,
      '--file-check-frequency=1s',
      '--enable-server=false',
      '--healthz-port=0',
      '--fail-swap-on=false',
      '--make-iptables-util-chains=false',
      '--enforce-node-allocatable=pods',
      '--system-reserved=cpu=500m,memory=512Mi',
      '--pod-max-pids=64',
    ];
    // a mount namespace where systemd looks booted (sd_booted: /run/systemd/system is a directory)
    const script = `mkdir -p /run/systemd && mount -t tmpfs tmpfs /run/systemd && mkdir /run/systemd/system && exec "$0" "$@"`;
    const child = spawn(unshare!, ['--mount', '--propagation', 'private', 'sh', '-c', script, process.execPath, ...args], {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, DBUS_SYSTEM_BUS_ADDRESS: address },
    });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      const podSlice = await eventually(
        () => `a pod slice started\n${stderr}`,
        () => fake.calls.find((c) => c.member === 'StartTransientUnit' && /-kubepods-burstable-pod.+\.slice$/.test(c.unit))?.unit,
        { timeoutMs: 30_000 },
      );
      const kubepods = `${root}-kubepods.slice`;
      const burstable = `${root}-kubepods-burstable.slice`;
      const uid = parseSystemdName(podSlice).pop()!.slice('pod'.length);
      assert.equal(podSlice, `${root}-kubepods-burstable-pod${uid.replaceAll('-', '_')}.slice`);
      const started = fake.calls.filter((c) => c.member === 'StartTransientUnit').map((c) => c.unit);
      assert.deepEqual(started, [kubepods, burstable, `${root}-kubepods-besteffort.slice`, podSlice]);

      // the top-level slice: node allocatable (capacity less --system-reserved) as systemd properties
      const cores = cpus().length;
      const pidMax = BigInt(readFileSync('/proc/sys/kernel/pid_max', 'utf8').trim());
      const common = { MemoryAccounting: true, CPUAccounting: true, BlockIOAccounting: true, TasksAccounting: true, DefaultDependencies: false };
      assert.deepEqual(fake.started(kubepods), {
        Description: `libcontainer container ${kubepods}`,
        Wants: [`${root}.slice`],
        ...common,
        MemoryLimit: BigInt(totalmem() - 512 * Mi),
        CPUShares: BigInt(Math.floor(((cores * 1000 - 500) * 1024) / 1000)),
        TasksMax: pidMax,
      });
      assert.deepEqual(fake.started(`${root}-kubepods-besteffort.slice`), { Description: `libcontainer container ${root}-kubepods-besteffort.slice`, Wants: [kubepods], ...common, CPUShares: 2n });
      // the pod's slice: its shares, the CFS quota of its 200m limit (period since systemd 242; per second, rounded to 10 ms), --pod-max-pids
      assert.deepEqual(fake.started(podSlice), {
        Description: `libcontainer container ${podSlice}`,
        Wants: [burstable],
        ...common,
        CPUShares: 102n,
        CPUQuotaPeriodUSec: 100000n,
        CPUQuotaPerSecUSec: 200000n,
        TasksMax: 64n,
      });
      // the QoS tier's shares follow its pods through SetUnitProperties
      await eventually(() => `burstable shares updated\n${JSON.stringify(fake.calls.filter((c) => c.member === 'SetUnitProperties'), (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v))}`, () =>
        fake.calls.some((c) => c.member === 'SetUnitProperties' && c.unit === burstable && c.props.CPUShares === 102n),
      );

      // the runtime gets the pod's slice as its cgroup parent, in kubelet's systemd form (the slice is made by then)
      await eventually(() => `a sandbox\n${stderr}`, () => parents.length > 0, { timeoutMs: 20_000 });
      const podPath = `/${root}.slice/${kubepods}/${burstable}/${podSlice}`;
      assert.equal(parents[0], podPath);

      // the values are also in the cgroup files, where systemd keeps the slices
      assert.equal(read('cpu', podPath, 'cpu.shares'), '102');
      assert.equal(read('cpu', podPath, 'cpu.cfs_quota_us'), '20000');
      assert.equal(read('cpu', podPath, 'cpu.cfs_period_us'), '100000');
      assert.equal(read('pids', podPath, 'pids.max'), '64');
      assert.equal(read('memory', `/${root}.slice/${kubepods}`, 'memory.limit_in_bytes'), String(totalmem() - 512 * Mi));
      assert.equal(read('cpu', `/${root}.slice/${kubepods}/${burstable}`, 'cpu.shares'), '102');

    } finally {
      if (child.exitCode === null) child.kill('SIGTERM');
      const code = await exited;
      runtime.forceShutdown();
      assert.equal(code, 0, stderr);
    }
  });

  void it('a pod slice no pod holds is stopped and removed by housekeeping; an existing slice gets its properties set', async () => {
    const driver = new SystemdCgroups(fs!, new SystemdBus(address));
    const m = new NodeCgroups({
      cgroupRoot: `/${root}/orphans`,
      cgroupsPerQOS: true,
      podCgroups: true,
      enforce: [],
      capacity: { cpu: 1000, memory: 1024 * Mi },
      systemReserved: {},
      kubeReserved: {},
      systemReservedCgroup: '',
      kubeReservedCgroup: '',
      podPidsLimit: -1,
      cpuCFSQuota: true,
      cpuPeriodUs: 100000,
      orphanMinAgeMs: 0,
      fs: fs!,
      driver,
      log: () => undefined,
    });
    const kubepods = `/${root}/orphans/kubepods`;
    try {
      await m.start(() => []);
      assert.equal(m.allocatableCgroup, `/${root}.slice/${root}-orphans.slice/${root}-orphans-kubepods.slice`);
      await driver.create(`${kubepods}/besteffort/podaa-1`, { cpuShares: 2 });
      await driver.create(`${kubepods}/podbb-2`, { cpuShares: 1024, memory: 64 * Mi });
      const slice = `${root}-orphans-kubepods-besteffort-podaa_1.slice`;
      assert.ok(fake.units.has(slice));
      // a second create of the same slice: UnitExists, so the properties are set on the unit
      await driver.create(`${kubepods}/besteffort/podaa-1`, { cpuShares: 4 });
      assert.deepEqual(fake.calls.at(-1), { member: 'SetUnitProperties', unit: slice, props: { CPUShares: 4n } });
      const removed = await m.cleanupOrphans((uid) => uid === 'bb-2');
      assert.deepEqual(removed, [`${kubepods}/besteffort/podaa-1`]);
      assert.deepEqual(
        fake.calls.slice(-2).map((c) => `${c.member} ${c.unit}`),
        [`StopUnit ${slice}`, `ResetFailedUnit ${slice}`],
      );
      assert.ok(!fake.units.has(slice));
      for (const c of ['cpu', 'memory', 'pids', 'systemd']) assert.ok(!existsSync(fs!.path(c, systemdPathOf(`${kubepods}/besteffort/podaa-1`))!), c);
      assert.ok(fs!.exists(systemdPathOf(`${kubepods}/podbb-2`)), 'a pod still held keeps its slice');
      // a slice whose directories went with the sandbox (the CRI runtime removes its cgroup parent's directories) is stopped too
      await driver.create(`${kubepods}/burstable/podcc-3`, { cpuShares: 10 });
      await fs!.remove(systemdPathOf(`${kubepods}/burstable/podcc-3`));
      assert.deepEqual(await m.cleanupOrphans((uid) => uid === 'bb-2'), [`${kubepods}/burstable/podcc-3`]);
      assert.ok(!fake.units.has(`${root}-orphans-kubepods-burstable-podcc_3.slice`));
      assert.deepEqual(await m.cleanupOrphans((uid) => uid === 'bb-2'), [], 'stopped once');
      assert.equal(read('memory', systemdPathOf(`${kubepods}/podbb-2`), 'memory.limit_in_bytes'), String(64 * Mi));
    } finally {
      m.stop();
    }
  });
});
