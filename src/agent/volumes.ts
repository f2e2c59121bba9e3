// A pod's volumes, laid out under --root-dir as kubelet lays them out:
//   <root>/pods/<uid>/volumes/kubernetes.io~empty-dir/<name>/      (mode 0777)
//   <root>/pods/<uid>/volumes/kubernetes.io~configmap/<name>/      (atomic writer: ..data -> ..<ts>)
//   <root>/pods/<uid>/volumes/kubernetes.io~secret/<name>/
//   <root>/pods/<uid>/volumes/kubernetes.io~downward-api/<name>/
//   <root>/pods/<uid>/volumes/kubernetes.io~projected/<name>/      (configMap, secret, downwardAPI, serviceAccountToken)
//   hostPath volumes are the host path itself (created for DirectoryOrCreate / FileOrCreate, checked for the other types).
//   <root>/pods/<uid>/volumes/<vendor>~<driver>/<name>/           (flexVolume: its driver mounts it, flexvolume.ts)
// setUp() is called before each sync pass starts containers: contents follow their ConfigMaps and
// Secrets (a write happens only when the data changed). Errors carry kubelet's wording and stop the
// pod's containers from starting (FailedMount).
//
// Memory-backed volumes, as kubelet wraps them: secret, downwardAPI and projected volumes, and
// emptyDir with medium: Memory, are tmpfs mounts (`mount -t tmpfs -o size=<bytes>`; size: the
// emptyDir's sizeLimit, the pod's memory limit or the node's allocatable memory, the smallest set).
// Where mounting fails (an agent without CAP_SYS_ADMIN), they stay plain directories on disk and
// the pod gets one Warning event TmpfsUnavailable saying so. tearDownVolumes unmounts them when the
// pod is cleaned up; unmountOrphans removes mounts of pods no longer there (agent start).
//
// fsGroup (pod securityContext): the volumes kubelet manages ownership of (emptyDir, configMap,
// secret, downwardAPI, projected; never hostPath) get kubelet's SetVolumeOwnership: every file and
// directory gets group fsGroup, files g+rw (g+r for the read-only configMap, secret, downwardAPI and
// projected volumes) and directories also g+x and setgid, so new files inherit the group. An
// emptyDir gets it once, when it is first set up (kubelet's ready file under
// <pod>/plugins/<plugin>/<name>/ready); the others each time their contents are written.
// fsGroupChangePolicy has no effect on these volume types, as in Kubernetes (kubelet passes no
// policy for them; it applies to persistent volumes, which this agent does not mount).
//
// What containers see: runtimes that run images get each volumeMount as a bind mount (configMap,
// secret, downwardAPI and projected read-only, as kubelet does); the process runtime cannot remap a
// filesystem, so its containers get ORCH_ROOTFS, a directory where each mountPath is a symlink to
// the volume (`$ORCH_ROOTFS/etc/config/key`), and the volumes' host paths are made traversable.
import { execFile } from 'node:child_process';
import { chmod, lchown, lstat, mkdir, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { dirname, join, normalize } from 'node:path';
import { writeAtomic, type FileProjection } from './atomic-writer.js';
import { fieldValue, objectData, resourceValue, type EnvContext } from './env.js';
import { escapeDriverName, type FlexVolumes } from './flexvolume.js';
import { ObjectNotFound, type ObjectKind } from './objects.js';
import type { Mount } from './runtime/runtime.js';
import type { Container, Pod } from './types.js';

type Json = Record<string, any>;

export const PLUGIN_DIRS: Record<string, string> = {
  emptyDir: 'kubernetes.io~empty-dir',
  configMap: 'kubernetes.io~configmap',
  secret: 'kubernetes.io~secret',
  downwardAPI: 'kubernetes.io~downward-api',
  projected: 'kubernetes.io~projected',
};

/** A volume that could not be set up; the message is kubelet's FailedMount text. */
export class VolumeError extends Error {
  override name = 'VolumeError';
}

/** The plugin of a volume source (the first known field), or undefined. */
function pluginOf(v: Json): string | undefined {
  for (const k of [...Object.keys(PLUGIN_DIRS), 'hostPath', 'flexVolume']) if (v[k] !== undefined) return k;
  return undefined;
}

/** Where a volume lives on the host. */
export function volumePath(podDir: string, v: Json): string | undefined {
  const plugin = pluginOf(v);
  if (plugin === 'hostPath') return String(v.hostPath.path);
  if (plugin === 'flexVolume') return join(podDir, 'volumes', escapeDriverName(String(v.flexVolume.driver)), String(v.name));
  if (plugin === undefined) return undefined;
  return join(podDir, 'volumes', PLUGIN_DIRS[plugin]!, String(v.name));
}

async function objectItems(
  ctx: EnvContext,
  kind: ObjectKind,
  src: Json,
  name: string,
  defaultMode: number,
  out: Map<string, FileProjection>,
): Promise<void> {
  let data: Map<string, Buffer>;
  try {
    data = objectData(kind, await ctx.objects.get(kind, ctx.pod.metadata.namespace, name));
  } catch (err) {
    if (err instanceof ObjectNotFound && src.optional === true) return;
    throw err;
  }
  const items = (src.items ?? []) as Json[];
  if (items.length === 0) {
    for (const [k, v] of data) out.set(k, { data: v, mode: defaultMode });
    return;
  }
  for (const it of items) {
    const v = data.get(String(it.key));
    if (v === undefined) {
      if (src.optional === true) continue;
      throw new Error(kind === 'configmaps' ? `configmap references non-existent config key: ${String(it.key)}` : `references non-existent secret key: ${String(it.key)}`);
    }
    out.set(String(it.path), { data: v, mode: typeof it.mode === 'number' ? it.mode : defaultMode });
  }
}

function downwardItems(ctx: EnvContext, items: Json[], defaultMode: number, out: Map<string, FileProjection>): void {
  for (const it of items) {
    const value = it.fieldRef ? fieldValue(ctx, String(it.fieldRef.fieldPath)) : it.resourceFieldRef ? resourceValue(ctx, undefined, it.resourceFieldRef as Json) : '';
    out.set(String(it.path), { data: Buffer.from(value), mode: typeof it.mode === 'number' ? it.mode : defaultMode });
  }
}

async function payloadOf(ctx: EnvContext, plugin: string, v: Json): Promise<Map<string, FileProjection>> {
  const out = new Map<string, FileProjection>();
  const src = v[plugin] as Json;
  const mode = typeof src.defaultMode === 'number' ? src.defaultMode : 0o644;
  if (plugin === 'configMap') await objectItems(ctx, 'configmaps', src, String(src.name), mode, out);
  else if (plugin === 'secret') await objectItems(ctx, 'secrets', src, String(src.secretName), mode, out);
  else if (plugin === 'downwardAPI') downwardItems(ctx, (src.items ?? []) as Json[], mode, out);
  else if (plugin === 'projected') {
    for (const s of (src.sources ?? []) as Json[]) {
      if (s.configMap) await objectItems(ctx, 'configmaps', s.configMap as Json, String(s.configMap.name), mode, out);
      else if (s.secret) await objectItems(ctx, 'secrets', s.secret as Json, String(s.secret.name), mode, out);
      else if (s.downwardAPI) downwardItems(ctx, (s.downwardAPI.items ?? []) as Json[], mode, out);
      else if (s.serviceAccountToken) {
        const t = s.serviceAccountToken as Json;
        const { name, namespace, uid } = ctx.pod.metadata;
        const token = await ctx.objects.serviceAccountToken(
          { name, namespace, uid, serviceAccountName: typeof ctx.pod.spec.serviceAccountName === 'string' ? ctx.pod.spec.serviceAccountName : 'default' },
          typeof t.audience === 'string' && t.audience !== '' ? t.audience : undefined,
          typeof t.expirationSeconds === 'number' ? t.expirationSeconds : 3600,
        );
        out.set(String(t.path), { data: Buffer.from(token), mode });
      }
    }
  }
  return out;
}

async function hostPath(v: Json): Promise<void> {
  const path = String(v.hostPath.path);
  const type = String(v.hostPath.type ?? '');
  const st = await stat(path).catch(() => undefined);
  const fail = (what: string): never => {
    throw new Error(`hostPath type check failed: ${path} is not a ${what}`);
  };
  switch (type) {
    case 'DirectoryOrCreate':
      if (!st) await mkdir(path, { recursive: true, mode: 0o755 });
      else if (!st.isDirectory()) fail('directory');
      return;
    case 'FileOrCreate':
      if (!st) {
        await mkdir(dirname(path), { recursive: true, mode: 0o755 });
        await writeFile(path, '', { mode: 0o644 });
      } else if (st.isDirectory()) fail('file');
      return;
    case 'Directory':
      if (!st?.isDirectory()) fail('directory');
      return;
    case 'File':
      if (!st?.isFile()) fail('file');
      return;
    case 'Socket':
      if (!st?.isSocket()) fail('socket');
      return;
    case 'CharDevice':
      if (!st?.isCharacterDevice()) fail('character device');
      return;
    case 'BlockDevice':
      if (!st?.isBlockDevice()) fail('block device');
      return;
  }
}

/** Whether tmpfs mounts work on this agent: learnt from the first attempt, kept by the caller (one per agent). */
export interface TmpfsState {
  /** undefined: not tried yet. */
  available?: boolean;
  /** Why mounting failed. */
  reason?: string;
}

export interface VolumeSetupOptions {
  /** Mount memory-backed volumes on tmpfs (default true); the state is shared by the agent's pods. */
  tmpfs?: TmpfsState;
  /** A memory-backed volume stays on disk because tmpfs cannot be mounted. */
  onTmpfsFallback?: (volume: string, message: string) => void;
  /** --experimental-mounter-path: the binary that mounts (called as mount(8) is); default 'mount'. */
  mounterPath?: string;
  /** FlexVolume drivers (--volume-plugin-dir, flexvolume.ts); without them a flexVolume matches no plugin. */
  flex?: FlexVolumes;
}

/** Volume plugins kubelet backs with memory (its wrapped emptyDir has medium Memory). */
const MEMORY_PLUGINS = new Set(['secret', 'downwardAPI', 'projected']);

function isMemoryBacked(plugin: string, v: Json): boolean {
  return MEMORY_PLUGINS.has(plugin) || (plugin === 'emptyDir' && v.emptyDir?.medium === 'Memory');
}

/** Whether `dir` is a mount point (its device differs from its parent's). */
export async function isMountPoint(dir: string): Promise<boolean> {
  const [a, b] = await Promise.all([stat(dir).catch(() => undefined), stat(dirname(dir)).catch(() => undefined)]);
  return a !== undefined && b !== undefined && a.dev !== b.dev;
}

function run(cmd: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { timeout: 30_000 }, (err, _out, stderr) => {
      if (err) reject(new Error(String(stderr).trim() || err.message));
      else resolve();
    });
  });
}

/** kubelet's calculateEmptyDirMemorySize: the node's allocatable memory, lowered to the pod's memory limit and the emptyDir's sizeLimit. */
export function tmpfsSizeBytes(pod: Pod, v: Json, allocatableMemory: number): number | undefined {
  let size = allocatableMemory > 0 ? allocatableMemory : undefined;
  const lower = (n: number): void => {
    if (Number.isFinite(n) && n > 0 && (size === undefined || n < size)) size = n;
  };
  const limitOf = (c: Container): number => {
    const q = (c.resources as Json | undefined)?.limits?.memory;
    return q === undefined ? 0 : quantityBytes(String(q));
  };
  const sum = pod.spec.containers.reduce((a, c) => a + limitOf(c), 0);
  const podLimit = Math.max(sum, ...(pod.spec.initContainers ?? []).map(limitOf));
  lower(podLimit);
  if (v.emptyDir?.sizeLimit !== undefined) lower(quantityBytes(String(v.emptyDir.sizeLimit)));
  return size === undefined ? undefined : Math.ceil(size);
}

const UNITS: Record<string, number> = { '': 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18, m: 1e-3, Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60 };

function quantityBytes(q: string): number {
  const m = /^([+-]?\d+(?:\.\d+)?)(?:[eE]([+-]?\d+))?([a-zA-Z]*)$/.exec(q.trim());
  const unit = m ? UNITS[m[3]!] : undefined;
  if (!m || unit === undefined) return NaN;
  return Number(m[1]) * 10 ** Number(m[2] ?? 0) * unit;
}

/**
 * Mounts a tmpfs on `dir` unless one is there; false when tmpfs is unavailable (the caller keeps
 * the directory on disk). The first failure marks tmpfs unavailable for the whole agent.
 */
async function ensureTmpfs(dir: string, sizeBytes: number | undefined, state: TmpfsState, mounter = 'mount'): Promise<boolean> {
  if (state.available === false) return false;
  if (await isMountPoint(dir)) return true;
  try {
    await run(mounter === '' ? 'mount' : mounter, ['-t', 'tmpfs', ...(sizeBytes !== undefined ? ['-o', `size=${sizeBytes}`] : []), 'tmpfs', dir]);
    state.available = true;
    return true;
  } catch (err) {
    if (state.available === true) throw err; // tmpfs works here: this mount's failure is the volume's
    state.available = false;
    state.reason = err instanceof Error ? err.message : String(err);
    return false;
  }
}

/** kubelet's SetVolumeOwnership: group fsGroup on everything under `dir`, g+rw (g+r when read-only), directories g+x and setgid. */
export async function setVolumeOwnership(dir: string, fsGroup: number, readOnly: boolean): Promise<void> {
  const change = async (path: string): Promise<void> => {
    const st = await lstat(path);
    await lchown(path, -1, fsGroup);
    if (st.isSymbolicLink()) return; // chmod would change the link's target
    let mask = readOnly ? 0o440 : 0o660;
    if (st.isDirectory()) mask |= 0o2000 | 0o110;
    await chmod(path, (st.mode & 0o7777) | mask);
    if (st.isDirectory()) for (const e of await readdir(path)) await change(join(path, e));
  };
  await change(dir);
}

function fsGroupOf(pod: Pod): number | undefined {
  const g = pod.spec.securityContext?.fsGroup;
  return typeof g === 'number' && Number.isInteger(g) && g >= 0 ? g : undefined;
}

/**
 * Sets up every volume of the pod (idempotent). Throws VolumeError naming the first volume that
 * failed, as kubelet's FailedMount event words it.
 */
export async function setUpVolumes(ctx: EnvContext, podDir: string, o: VolumeSetupOptions = {}): Promise<void> {
  const fsGroup = fsGroupOf(ctx.pod);
  const tmpfs = o.tmpfs;
  for (const v of (ctx.pod.spec.volumes ?? []) as Json[]) {
    const plugin = pluginOf(v);
    if (plugin === undefined) continue; // volume types this agent does not provide (persistentVolumeClaim, ...)
    const name = String(v.name);
    try {
      if (plugin === 'hostPath') {
        await hostPath(v);
        continue;
      }
      if (plugin === 'flexVolume') {
        if (!o.flex) throw new Error(`failed to get Plugin from volumeSpec for volume "${name}" err=no volume plugin matched`);
        await o.flex.setUp(ctx, v, volumePath(podDir, v)!, { fsGroup, isMountPoint, setOwnership: (dir, gid) => setVolumeOwnership(dir, gid, false) });
        continue;
      }
      const dir = volumePath(podDir, v)!;
      const memory = tmpfs !== undefined && isMemoryBacked(plugin, v);
      const ready = join(podDir, 'plugins', PLUGIN_DIRS[plugin]!, name, 'ready');
      if (plugin === 'emptyDir' && (await exists(ready)) && (await exists(dir)) && (!memory || tmpfs.available === false || (await isMountPoint(dir)))) continue;
      await mkdir(dir, { recursive: true });
      let onTmpfs = false;
      if (memory) {
        onTmpfs = await ensureTmpfs(dir, tmpfsSizeBytes(ctx.pod, v, ctx.allocatable.memory), tmpfs, o.mounterPath);
        if (!onTmpfs) o.onTmpfsFallback?.(name, `volume "${name}" is on disk, not tmpfs: mounting tmpfs failed on this node (${tmpfs.reason ?? 'unknown'})`);
      }
      // a fresh tmpfs keeps its own root mode (1777), as kubelet's does
      if (!onTmpfs) await chmod(dir, 0o777);
      if (plugin === 'emptyDir') {
        if (fsGroup !== undefined) await setVolumeOwnership(dir, fsGroup, false);
        await mkdir(dirname(ready), { recursive: true });
        await writeFile(ready, '');
        continue;
      }
      const changed = await writeAtomic(dir, await payloadOf(ctx, plugin, v));
      if (fsGroup !== undefined && (changed || (await stat(dir)).gid !== fsGroup)) await setVolumeOwnership(dir, fsGroup, true);
    } catch (err) {
      throw new VolumeError(`MountVolume.SetUp failed for volume "${name}" : ${err instanceof Error ? err.message : String(err)}`);
    }
  }
}

async function exists(path: string): Promise<boolean> {
  return (await stat(path).catch(() => undefined)) !== undefined;
}

/** The mount points under `dir` (from /proc/self/mountinfo), deepest first. */
export async function mountsUnder(dir: string): Promise<string[]> {
  const text = await readFile('/proc/self/mountinfo', 'utf8').catch(() => '');
  const prefix = dir.endsWith('/') ? dir : `${dir}/`;
  const out: string[] = [];
  for (const line of text.split('\n')) {
    const mp = line.split(' ')[4];
    if (mp === undefined) continue;
    const path = mp.replace(/\\([0-7]{3})/g, (_m, o: string) => String.fromCharCode(parseInt(o, 8)));
    if (path.startsWith(prefix)) out.push(path);
  }
  return out.sort((a, b) => b.length - a.length);
}

async function unmount(path: string): Promise<void> {
  try {
    await run('umount', [path]);
  } catch {
    await run('umount', ['-l', path]); // busy: detach now, freed when the last user goes
  }
}

/** Unmounts the pod's FlexVolumes (their drivers' unmount) and memory-backed volumes (before its directory is removed); errors name the mount. */
export async function tearDownVolumes(podDir: string, flex?: FlexVolumes): Promise<void> {
  await flex?.tearDownPod(podDir, unmount, isMountPoint);
  for (const m of await mountsUnder(podDir)) {
    await unmount(m).catch((err: unknown) => {
      throw new Error(`unmounting ${m}: ${err instanceof Error ? err.message : String(err)}`);
    });
  }
}

/**
 * Unmounts the tmpfs volumes under `<rootDir>/pods/<uid>/` of pods not in `keep` (what an earlier
 * agent left); returns the mount points it unmounted.
 */
export async function unmountOrphans(rootDir: string, keep: ReadonlySet<string>): Promise<string[]> {
  const podsDir = join(rootDir, 'pods');
  const done: string[] = [];
  for (const m of await mountsUnder(podsDir)) {
    const uid = m.slice(podsDir.length + 1).split('/')[0] ?? '';
    if (keep.has(uid)) continue;
    await unmount(m).then(
      () => done.push(m),
      () => undefined,
    );
  }
  return done;
}

const READ_ONLY_PLUGINS = new Set(['configMap', 'secret', 'downwardAPI', 'projected']);

/** The bind mounts of a container (runtimes that run images); throws for a mount of an unknown volume. */
export function containerMounts(pod: Pod, c: Container, podDir: string): Mount[] {
  const volumes = new Map(((pod.spec.volumes ?? []) as Json[]).map((v) => [String(v.name), v]));
  const out: Mount[] = [];
  for (const m of (c.volumeMounts ?? []) as Json[]) {
    const v = volumes.get(String(m.name));
    const base = v ? volumePath(podDir, v) : undefined;
    if (!v || base === undefined) continue;
    const sub = typeof m.subPath === 'string' && m.subPath !== '' ? m.subPath : undefined;
    const plugin = pluginOf(v)!;
    const mount: Mount = { containerPath: String(m.mountPath), hostPath: sub ? join(base, normalize(sub)) : base };
    if (m.readOnly === true || READ_ONLY_PLUGINS.has(plugin) || (plugin === 'flexVolume' && v.flexVolume.readOnly === true)) mount.readonly = true;
    if (m.mountPropagation === 'HostToContainer') mount.propagation = 'PROPAGATION_HOST_TO_CONTAINER';
    else if (m.mountPropagation === 'Bidirectional') mount.propagation = 'PROPAGATION_BIDIRECTIONAL';
    out.push(mount);
  }
  return out;
}

/**
 * The process runtime's view of a container's mounts: `<podDir>/rootfs/<container>` with each
 * mountPath a symlink to its volume; returns that directory (ORCH_ROOTFS). Rebuilt on every call.
 * Directories from `rootDir` down to it get search permission for everyone (never above rootDir).
 */
export async function processMountView(pod: Pod, c: Container, podDir: string, rootDir: string): Promise<string | undefined> {
  const mounts = containerMounts(pod, c, podDir);
  if (mounts.length === 0) return undefined;
  const root = join(podDir, 'rootfs', c.name);
  await rm(root, { recursive: true, force: true });
  await mkdir(root, { recursive: true, mode: 0o755 });
  for (const m of mounts) {
    const link = join(root, normalize(m.containerPath));
    await mkdir(dirname(link), { recursive: true, mode: 0o755 });
    await symlink(m.hostPath, link).catch(() => undefined);
  }
  for (let d = root; d.startsWith(rootDir) && d !== dirname(d); d = dirname(d)) {
    // every directory from --root-dir down must be traversable by the container's (unprivileged) user
    const st = await stat(d).catch(() => undefined);
    if (st && (st.mode & 0o001) === 0) await chmod(d, (st.mode & 0o7777) | 0o111).catch(() => undefined);
  }
  return root;
}

/** What a volume's directory holds: bytes on disk (du's blocks) and inodes (the directory included). */
export async function volumeUsage(dir: string): Promise<{ bytes: number; inodes: number }> {
  const st = await lstat(dir).catch(() => undefined);
  if (!st) return { bytes: 0, inodes: 0 };
  let bytes = st.blocks * 512;
  let inodes = 1;
  if (st.isDirectory()) {
    const entries = await readdir(dir).catch(() => [] as string[]);
    for (const e of entries) {
      const u = await volumeUsage(join(dir, e));
      bytes += u.bytes;
      inodes += u.inodes;
    }
  }
  return { bytes, inodes };
}
