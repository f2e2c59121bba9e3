/**
 * A throwaway containerd with its CRI plugin, for tests and for users without an image registry
 * (scripts/containerd-harness.mjs wraps it).
 *
 * startContainerd():
 *   - makes a temporary directory (under /dev/shm when writable) holding containerd's root, state,
 *     socket, configuration and CNI configuration;
 *   - creates a Linux bridge with `ip link` and writes a bridge + host-local + portmap conflist for it
 *     (a free 10.x.y.0/24), before containerd starts (containerd does not reliably notice later changes);
 *     no loopback in the chain: the CRI plugin sets up each pod's lo with its own loopback network;
 *   - writes a containerd configuration: its own socket, the CRI plugin with restrict_oom_score_adj
 *     (root here lacks CAP_SYS_RESOURCE), the local pause image as sandbox image, runc with the
 *     cgroupfs driver, the CNI binaries of the containernetworking-plugins package;
 *   - starts containerd, builds OCI image layouts of a busybox image (busybox-static plus applet
 *     symlinks) and of a pause image from the same layer, imports both with
 *     `ctr -n k8s.io images import`, and waits until the CRI answers.
 * stop() tears everything down: every sandbox (stopped and removed through the CRI, so networks and
 * network namespaces go), containerd by its PID, stray shims and container processes, mounts under
 * the directory, the bridge, the cgroup directories under `cgroupRoot`, and what containerd left
 * under /run/containerd for its containers.
 *
 * Needs root, containerd, ctr, runc, busybox, ip, tar and the CNI plugins; missingPrograms() says
 * which are absent (tests skip locally and fail under CI=true, see binaries.ts).
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmdirSync, rmSync, accessSync, constants } from 'node:fs';
import { chmod, copyFile, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { CriClient } from '../../src/agent/runtime/cri/client.js';
import { findBinary, requireBinary } from './binaries.js';

export const BUSYBOX_IMAGE = 'orch.local/busybox:1.35';
export const PAUSE_IMAGE = 'orch.local/pause:3.6';
/** A third image, used by nothing (image garbage collection tests): the busybox layer with its own config. */
export const SPARE_IMAGE = 'orch.local/spare:1';
/** A reference no registry answers for, without leaving the machine (nothing listens on port 1). */
export const UNREACHABLE_IMAGE = '127.0.0.1:1/none:1';

export interface ContainerdHarness {
  /** Temporary directory holding everything of this instance. */
  dir: string;
  /** containerd's gRPC socket (path). */
  socket: string;
  /** The CRI endpoint, unix://<socket>. */
  endpoint: string;
  /** containerd's PID (a new one after restart()). */
  readonly pid: number;
  /** The CNI bridge, its subnet and gateway (the bridge's own address). */
  bridge: string;
  subnet: string;
  gateway: string;
  /** A cgroup (cgroupfs path) for the pods of this instance; removed with it. */
  cgroupRoot: string;
  images: { busybox: string; pause: string; spare: string };
  /** containerd's output so far (for failure messages). */
  log(): string;
  /** Kills containerd (SIGKILL; its shims and containers go on running), as a crash would. */
  kill(): Promise<void>;
  /** Starts containerd again on the same socket and state after kill(); resolves once the CRI answers. */
  restart(): Promise<void>;
  /** Tears everything down (idempotent). */
  stop(): Promise<void>;
}

const PROGRAMS = ['containerd', 'ctr', 'runc', 'busybox', 'ip', 'tar', 'containerd-shim-runc-v2'] as const;

/** The CNI plugin directory of the containernetworking-plugins package (dpkg -L), else a usual place. */
export function cniBinDir(): string | null {
  const r = spawnSync('dpkg', ['-L', 'containernetworking-plugins'], { encoding: 'utf8' });
  const candidates: string[] = [];
  if (r.status === 0) {
    for (const line of r.stdout.split('\n')) if (line.endsWith('/bridge')) candidates.push(line.slice(0, -'/bridge'.length));
  }
  candidates.push('/usr/lib/cni', '/opt/cni/bin');
  for (const dir of candidates) {
    if (['bridge', 'host-local', 'loopback', 'portmap'].every((p) => existsSync(join(dir, p)))) return dir;
  }
  return null;
}

/** The programs (and CNI plugins) this harness needs that are missing; empty when all are there. */
/**
 * What the containerd tests lack on this machine (empty when everything is there). Under CI=true a missing
 * program fails the test file (requireBinary names it) instead of skipping; locally the caller skips with the list.
 */
export function containerdTestPrerequisites(extraPrograms: readonly string[] = []): string[] {
  const missing = missingPrograms();
  if (missing.length > 0) {
    for (const p of ['containerd', 'ctr', 'runc', 'busybox', 'ip', ...extraPrograms]) requireBinary(undefined, p);
    if (process.env.CI === 'true') throw new Error(`containerd tests need: ${missing.join(', ')}`);
  }
  return missing;
}

export function missingPrograms(): string[] {
  const missing: string[] = PROGRAMS.filter((p) => findBinary(p) === null);
  if (cniBinDir() === null) missing.push('CNI plugins bridge, host-local, loopback and portmap (containernetworking-plugins)');
  if (findBinary('iptables') === null) missing.push('iptables (the portmap CNI plugin)');
  if (process.getuid?.() !== 0) missing.push('root');
  return missing;
}

function tempBase(): string {
  try {
    accessSync('/dev/shm', constants.W_OK);
    return '/dev/shm';
  } catch {
    return tmpdir();
  }
}

function run(cmd: string, args: string[], options: { allowFail?: boolean; input?: string } = {}): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8', input: options.input, timeout: 60_000 });
  if (r.status !== 0 && !options.allowFail) {
    throw new Error(`${cmd} ${args.join(' ')} failed (${r.status ?? r.signal}): ${r.stderr || r.stdout}`);
  }
  return r.stdout;
}

function goArch(): string {
  return process.arch === 'x64' ? 'amd64' : process.arch === 'ia32' ? '386' : process.arch;
}

// ---------------------------------------------------------------------------------------------
// Images

const sha256 = (b: Buffer | string): string => createHash('sha256').update(b).digest('hex');

/** The pause container: sleeps until told to stop, reaping whatever it inherits. */
const PAUSE_SCRIPT = "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done";

async function buildRootfs(root: string): Promise<void> {
  for (const d of ['bin', 'dev', 'etc', 'home', 'proc', 'root', 'sys', 'tmp', 'usr/bin', 'var/tmp']) await mkdir(join(root, d), { recursive: true });
  await chmod(join(root, 'tmp'), 0o1777);
  await chmod(join(root, 'var/tmp'), 0o1777);
  await copyFile(findBinary('busybox')!, join(root, 'bin/busybox'));
  await chmod(join(root, 'bin/busybox'), 0o755);
  const applets = run(findBinary('busybox')!, ['--list'])
    .split('\n')
    .map((s) => s.trim())
    .filter((s) => s !== '' && s !== 'busybox' && !s.includes('/'));
  for (const a of applets) await symlink('busybox', join(root, 'bin', a));
  await symlink('/bin/busybox', join(root, 'usr/bin/env'));
  await writeFile(join(root, 'etc/passwd'), 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/home:/bin/false\n');
  await writeFile(join(root, 'etc/group'), 'root:x:0:\nnogroup:x:65534:\n');
}

interface Blob {
  digest: string;
  size: number;
  mediaType: string;
}

async function writeBlob(layout: string, data: Buffer, mediaType: string): Promise<Blob> {
  const hex = sha256(data);
  await writeFile(join(layout, 'blobs/sha256', hex), data);
  return { digest: `sha256:${hex}`, size: data.length, mediaType };
}

/**
 * Builds one OCI image layout archive holding the busybox and pause images (one shared layer) and
 * returns its path.
 */
async function buildImages(dir: string): Promise<string> {
  const layout = await buildImageLayout(dir);
  const archive = join(dir, 'images.tar');
  run('tar', ['--numeric-owner', '--owner=0', '--group=0', '-C', layout, '-cf', archive, '.']);
  await rm(layout, { recursive: true, force: true });
  return archive;
}

/**
 * Builds the OCI image layout (directory `<dir>/image-layout`) of the busybox, pause and spare images
 * and returns its path; each manifest in index.json carries its tag as org.opencontainers.image.ref.name
 * (a test registry can serve it: registry.ts).
 */
export async function buildImageLayout(dir: string): Promise<string> {
  const rootfs = join(dir, 'image-rootfs');
  const layout = join(dir, 'image-layout');
  await buildRootfs(rootfs);
  await mkdir(join(layout, 'blobs/sha256'), { recursive: true });
  const layerTar = join(dir, 'layer.tar');
  run('tar', ['--numeric-owner', '--owner=0', '--group=0', '--sort=name', '--mtime=@0', '-C', rootfs, '-cf', layerTar, '.']);
  const tarBytes = await readFile(layerTar);
  const diffId = `sha256:${sha256(tarBytes)}`;
  const layer = await writeBlob(layout, gzipSync(tarBytes), 'application/vnd.oci.image.layer.v1.tar+gzip');
  await rm(layerTar);
  await rm(rootfs, { recursive: true, force: true });
  const env = ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'];
  const images = [
    { name: BUSYBOX_IMAGE, config: { Env: env, Cmd: ['sh'], WorkingDir: '/' } },
    { name: PAUSE_IMAGE, config: { Env: env, Entrypoint: ['/bin/sh', '-c', PAUSE_SCRIPT], WorkingDir: '/' } },
    { name: SPARE_IMAGE, config: { Env: env, Cmd: ['sh'], WorkingDir: '/', Labels: { 'orch.test/spare': 'true' } } },
  ];
  const manifests: object[] = [];
  for (const img of images) {
    const config = await writeBlob(
      layout,
      Buffer.from(
        JSON.stringify({
          created: '2024-01-01T00:00:00Z',
          architecture: goArch(),
          os: 'linux',
          config: img.config,
          rootfs: { type: 'layers', diff_ids: [diffId] },
          history: [{ created: '2024-01-01T00:00:00Z', created_by: 'orch test/helpers/containerd.ts' }],
        }),
      ),
      'application/vnd.oci.image.config.v1+json',
    );
    const manifest = await writeBlob(
      layout,
      Buffer.from(JSON.stringify({ schemaVersion: 2, mediaType: 'application/vnd.oci.image.manifest.v1+json', config, layers: [layer] })),
      'application/vnd.oci.image.manifest.v1+json',
    );
    manifests.push({
      ...manifest,
      platform: { architecture: goArch(), os: 'linux' },
      annotations: { 'io.containerd.image.name': img.name, 'org.opencontainers.image.ref.name': img.name.slice(img.name.lastIndexOf(':') + 1) },
    });
  }
  await writeFile(join(layout, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
  await writeFile(join(layout, 'index.json'), JSON.stringify({ schemaVersion: 2, manifests }));
  return layout;
}

// ---------------------------------------------------------------------------------------------
// Network

/** A 10.x.y.0/24 no route of this host touches. */
function freeSubnet(): { subnet: string; gateway: string } {
  const routes = run('ip', ['-4', 'route', 'show', 'table', 'all'], { allowFail: true });
  for (let i = 0; i < 50; i++) {
    const x = 200 + (randomBytes(1)[0]! % 50);
    const y = randomBytes(1)[0]!;
    const prefix = `10.${x}.${y}.`;
    if (!routes.includes(prefix) && !routes.includes(`10.${x}.0.0`)) return { subnet: `${prefix}0/24`, gateway: `${prefix}1` };
  }
  throw new Error('no free 10.x.y.0/24 found for the CNI bridge');
}

function configToml(o: { dir: string; socket: string; cniConf: string; cniBin: string; registryMirrors?: Record<string, string[]> }): string {
  const q = (s: string): string => JSON.stringify(s);
  const mirrors = Object.entries(o.registryMirrors ?? {})
    .map(([host, endpoints]) => `\n    [plugins."io.containerd.grpc.v1.cri".registry.mirrors.${q(host)}]\n      endpoint = [${endpoints.map(q).join(', ')}]\n`)
    .join('');
  return `version = 2
root = ${q(join(o.dir, 'root'))}
state = ${q(join(o.dir, 'state'))}
oom_score = 0
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs", "io.containerd.internal.v1.tracing", "io.containerd.tracing.processor.v1.otlp"]

[grpc]
  address = ${q(o.socket)}

[ttrpc]
  address = ${q(`${o.socket}.ttrpc`)}

[debug]
  address = ""

[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = ${q(join(o.dir, 'opt'))}

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = ${q(PAUSE_IMAGE)}
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  disable_apparmor = true
  max_container_log_line_size = 16384

  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    disable_snapshot_annotations = true

    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"

      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false

  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = ${q(o.cniBin)}
    conf_dir = ${q(o.cniConf)}
    max_conf_num = 1
${mirrors === '' ? '' : `\n  [plugins."io.containerd.grpc.v1.cri".registry]\n${mirrors}`}`;
}

// ---------------------------------------------------------------------------------------------
// Teardown helpers

const live = new Set<ChildProcess>();
let exitHookInstalled = false;
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const child of live) {
      try {
        child.kill('SIGKILL');
      } catch {
        // already gone
      }
    }
  });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function waitGone(pid: number, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (alive(pid)) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 25));
  }
  return true;
}

/** PIDs whose command line contains `needle`. */
function pidsWith(needle: string): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0').join(' ').includes(needle)) out.push(Number(name));
    } catch {
      // gone
    }
  }
  return out;
}

/** The cgroup v1 hierarchies (or the v2 root) mounted under /sys/fs/cgroup. */
function cgroupMounts(): string[] {
  const out: string[] = [];
  for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    const parts = line.split(' ');
    const sep = parts.indexOf('-');
    if (sep < 0) continue;
    const fstype = parts[sep + 1];
    if (fstype === 'cgroup' || fstype === 'cgroup2') out.push(parts[4]!);
  }
  return out;
}

/** Kills every process in the cgroup subtree `rel` and removes its directories, deepest first. */
export function removeCgroupTree(rel: string): void {
  for (const mount of cgroupMounts()) {
    const top = join(mount, rel);
    if (!existsSync(top)) continue;
    const dirs: string[] = [];
    const walk = (d: string): void => {
      dirs.push(d);
      for (const e of readdirSync(d, { withFileTypes: true })) if (e.isDirectory()) walk(join(d, e.name));
    };
    try {
      walk(top);
    } catch {
      continue;
    }
    for (const d of dirs.reverse()) {
      for (let attempt = 0; attempt < 20; attempt++) {
        try {
          for (const pid of readFileSync(join(d, 'cgroup.procs'), 'utf8').split('\n').filter((s) => s !== '')) {
            try {
              process.kill(Number(pid), 'SIGKILL');
            } catch {
              // gone
            }
          }
          rmdirSync(d);
          break;
        } catch {
          spawnSync('sleep', ['0.05']);
        }
      }
    }
  }
}

/** Mount points at or under `prefix`, deepest first. */
function mountsUnder(prefix: string): string[] {
  const out: string[] = [];
  for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    const mp = line.split(' ')[4];
    if (mp !== undefined && (mp === prefix || mp.startsWith(`${prefix}/`))) out.push(mp.replace(/\\040/g, ' '));
  }
  return out.sort((a, b) => b.length - a.length);
}

/** Lazily unmounts every mount at or under `prefix` (volumes an agent left mounted, such as tmpfs secrets of pods it left running). */
export function unmountUnder(prefix: string): void {
  for (const mp of mountsUnder(prefix)) spawnSync('umount', ['-l', mp]);
}

function rmdirIfEmpty(path: string): void {
  try {
    rmdirSync(path);
  } catch {
    // not empty, or gone
  }
}

/** What containerd keeps for one container under /run/containerd whatever its `state` says. */
function removeRunState(socket: string, ids: Iterable<string>): void {
  for (const id of ids) {
    rmSync(join('/run/containerd/runc/k8s.io', id), { recursive: true, force: true });
    // the shim's socket: /run/containerd/s/<sha256(<containerd address>/<namespace>/<id>)>
    rmSync(join('/run/containerd/s', sha256(join(socket, 'k8s.io', id))), { force: true });
  }
}

// ---------------------------------------------------------------------------------------------

export interface StartOptions {
  /** Called with containerd's output lines (default: kept for log() only). */
  onLog?: (line: string) => void;
  /** The bridge plugin's hairpinMode in the conflist (default true). */
  hairpinMode?: boolean;
  /**
   * Registry mirrors of the CRI plugin (registry.mirrors.<host>.endpoint): host (with port) -> endpoint
   * URLs, e.g. a test registry on loopback over plain HTTP: { '127.0.0.1:5000': ['http://127.0.0.1:5000'] }.
   */
  registryMirrors?: Record<string, string[]>;
  /** containerd's --log-level (default warn); 'debug' logs every CRI request with its time. */
  logLevel?: 'trace' | 'debug' | 'info' | 'warn' | 'error';
}

/** Starts a containerd as described at the top of this file. */
export async function startContainerd(options: StartOptions = {}): Promise<ContainerdHarness> {
  const missing = missingPrograms();
  if (missing.length > 0) throw new Error(`cannot start containerd: missing ${missing.join(', ')}`);
  const dir = await mkdtemp(join(tempBase(), 'orch-containerd-'));
  const tag = randomBytes(4).toString('hex');
  const bridge = `orch${tag}`;
  const cgroupRoot = `/orch-test-${tag}`;
  const socket = join(dir, 'containerd.sock');
  const cniConf = join(dir, 'cni');
  const { subnet, gateway } = freeSubnet();
  const seenIds = new Set<string>();
  let child: ChildProcess | undefined;
  let output = '';
  let stopped = false;
  let bridgeMade = false;

  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    // 1. Sandboxes (with their containers, networks and network namespaces) through the CRI.
    if (child?.pid !== undefined && alive(child.pid)) {
      let client: CriClient | undefined;
      try {
        client = await CriClient.connect({ runtimeEndpoint: `unix://${socket}`, requestTimeoutMs: 20_000 });
        for (const c of await client.listContainers()) seenIds.add(c.id);
        const sandboxes = await client.listPodSandbox();
        for (const s of sandboxes) seenIds.add(s.id);
        await Promise.all(
          sandboxes.map(async (s) => {
            await client!.stopPodSandbox(s.id).catch(() => undefined);
            await client!.removePodSandbox(s.id).catch(() => undefined);
          }),
        );
      } catch {
        // containerd is unwell: the steps below clean up by force
      } finally {
        client?.close();
      }
    }
    // 2. containerd by its PID, then any shim it started.
    if (child?.pid !== undefined) {
      const pid = child.pid;
      if (alive(pid)) {
        process.kill(pid, 'SIGTERM');
        if (!(await waitGone(pid, 10_000))) {
          process.kill(pid, 'SIGKILL');
          await waitGone(pid, 5_000);
        }
      }
      live.delete(child);
    }
    for (const pid of pidsWith(`-address ${socket}`)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
    // 3. Container processes and cgroups; mounts; the bridge.
    removeCgroupTree(cgroupRoot);
    for (const mp of mountsUnder(dir)) spawnSync('umount', ['-l', mp]);
    if (bridgeMade) run('ip', ['link', 'del', bridge], { allowFail: true });
    // 4. What containerd left under /run/containerd, and the directories containerd, runc and CNI
    //    create on demand once empty (another containerd's are not empty; it recreates them as needed).
    //    Not only those absent at start: with two harnesses at once, the one that ends last must remove them.
    removeRunState(socket, seenIds);
    for (const p of ['/run/containerd/runc/k8s.io', '/run/containerd/runc', '/run/containerd/s', '/run/containerd', '/var/run/netns', '/var/lib/cni/results', '/var/lib/cni']) {
      rmdirIfEmpty(p);
    }
    await rm(dir, { recursive: true, force: true });
  };

  try {
    // Network first: the bridge, then the conflist naming it.
    run('ip', ['link', 'add', 'name', bridge, 'type', 'bridge']);
    bridgeMade = true;
    run('ip', ['link', 'set', bridge, 'up']);
    await mkdir(cniConf, { recursive: true });
    await writeFile(
      join(cniConf, '10-orch.conflist'),
      JSON.stringify(
        {
          cniVersion: '0.4.0',
          name: `orch-${tag}`,
          plugins: [
            {
              type: 'bridge',
              bridge,
              isGateway: true,
              ipMasq: false,
              hairpinMode: options.hairpinMode ?? true,
              ipam: { type: 'host-local', ranges: [[{ subnet, gateway }]], routes: [{ dst: '0.0.0.0/0' }], dataDir: join(dir, 'cni-ipam') },
            },
            // hostPort: DNAT from the host's addresses (and, with snat, from 127.0.0.1) to the pod
            { type: 'portmap', capabilities: { portMappings: true }, snat: true },
            // No `loopback` here: containerd's CRI plugin brings up each pod's lo itself (its own loopback
            // network, run before this one), so a loopback in the chain would only be a second exec of
            // the same plugin on every sandbox's setup and on both teardowns (StopPodSandbox and
            // RemovePodSandbox each run the chain's DEL).
          ],
        },
        null,
        2,
      ),
    );
    const configPath = join(dir, 'config.toml');
    await writeFile(configPath, configToml({ dir, socket, cniConf, cniBin: cniBinDir()!, ...(options.registryMirrors ? { registryMirrors: options.registryMirrors } : {}) }));
    const archive = await buildImages(dir);

    installExitHook();
    const launch = async (): Promise<void> => {
      const proc = spawn(findBinary('containerd')!, ['--config', configPath, '--log-level', options.logLevel ?? 'warn'], { stdio: ['ignore', 'pipe', 'pipe'] });
      child = proc;
      live.add(proc);
      const onData = (c: Buffer): void => {
        const text = c.toString();
        output = (output + text).slice(-64 * 1024);
        if (options.onLog) for (const l of text.split('\n')) if (l !== '') options.onLog(l);
      };
      proc.stdout.on('data', onData);
      proc.stderr.on('data', onData);
      const exited = new Promise<never>((_, reject) => proc.once('exit', (code, sig) => reject(new Error(`containerd exited (${code ?? sig}):\n${output}`))));
      exited.catch(() => undefined);
      // Wait until the socket answers the CRI.
      const deadline = Date.now() + 30_000;
      for (;;) {
        if (existsSync(socket)) {
          const client = await Promise.race([CriClient.connect({ runtimeEndpoint: `unix://${socket}`, requestTimeoutMs: 5_000 }).catch(() => undefined), exited]);
          if (client) {
            client.close();
            break;
          }
        }
        if (Date.now() > deadline) throw new Error(`containerd did not answer within 30 s:\n${output}`);
        await Promise.race([new Promise((r) => setTimeout(r, 50)), exited]);
      }
    };
    await launch();
    run(findBinary('ctr')!, ['--address', socket, '-n', 'k8s.io', 'images', 'import', archive]);
    await rm(archive, { force: true });
    return {
      dir,
      socket,
      endpoint: `unix://${socket}`,
      get pid() {
        return child?.pid ?? 0;
      },
      bridge,
      subnet,
      gateway,
      cgroupRoot,
      images: { busybox: BUSYBOX_IMAGE, pause: PAUSE_IMAGE, spare: SPARE_IMAGE },
      log: () => output,
      async kill() {
        const proc = child;
        if (proc?.pid === undefined || !alive(proc.pid)) return;
        process.kill(proc.pid, 'SIGKILL');
        await waitGone(proc.pid, 5_000);
        live.delete(proc);
      },
      async restart() {
        if (stopped) throw new Error('the harness is stopped');
        if (child?.pid !== undefined && alive(child.pid)) throw new Error('containerd still runs: kill() it first');
        await launch();
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** What a stopped harness left behind (empty after a clean teardown): processes, mounts, the bridge, cgroups, files. */
export function leftovers(h: ContainerdHarness): string[] {
  const out: string[] = [];
  if (alive(h.pid)) out.push(`containerd (pid ${h.pid}) still runs`);
  for (const pid of pidsWith(`-address ${h.socket}`)) out.push(`shim pid ${pid} still runs`);
  for (const mp of mountsUnder(h.dir)) out.push(`mount ${mp}`);
  if (run('ip', ['link', 'show', h.bridge], { allowFail: true }).includes(h.bridge)) out.push(`bridge ${h.bridge}`);
  for (const mount of cgroupMounts()) if (existsSync(join(mount, h.cgroupRoot))) out.push(`cgroup ${join(mount, h.cgroupRoot)}`);
  if (existsSync(h.dir)) out.push(`directory ${h.dir}`);
  return out;
}

/** Stops a harness (if one was started) and asserts that its teardown left nothing behind (see leftovers). */
export async function stopHarness(h: ContainerdHarness | undefined): Promise<void> {
  if (!h) return;
  await h.stop();
  assert.deepEqual(leftovers(h), [], 'the harness left nothing behind');
}
