// A pod's volumes, laid out under --root-dir as kubelet lays them out:
//   <root>/pods/<uid>/volumes/kubernetes.io~empty-dir/<name>/      (mode 0777)
//   <root>/pods/<uid>/volumes/kubernetes.io~configmap/<name>/      (atomic writer: ..data -> ..<ts>)
//   <root>/pods/<uid>/volumes/kubernetes.io~secret/<name>/
//   <root>/pods/<uid>/volumes/kubernetes.io~downward-api/<name>/
//   <root>/pods/<uid>/volumes/kubernetes.io~projected/<name>/      (configMap, secret, downwardAPI, serviceAccountToken)
//   hostPath volumes are the host path itself (created for DirectoryOrCreate / FileOrCreate, checked for the other types).
// setUp() is called before each sync pass starts containers: contents follow their ConfigMaps and
// Secrets (a write happens only when the data changed). Errors carry kubelet's wording and stop the
// pod's containers from starting (FailedMount).
//
// What containers see: runtimes that run images get each volumeMount as a bind mount (configMap,
// secret, downwardAPI and projected read-only, as kubelet does); the process runtime cannot remap a
// filesystem, so its containers get ORCH_ROOTFS, a directory where each mountPath is a symlink to
// the volume (`$ORCH_ROOTFS/etc/config/key`), and the volumes' host paths are made traversable.
import { chmod, mkdir, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { dirname, join, normalize } from 'node:path';
import { writeAtomic, type FileProjection } from './atomic-writer.js';
import { fieldValue, objectData, resourceValue, type EnvContext } from './env.js';
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
  for (const k of [...Object.keys(PLUGIN_DIRS), 'hostPath']) if (v[k] !== undefined) return k;
  return undefined;
}

/** Where a volume lives on the host. */
export function volumePath(podDir: string, v: Json): string | undefined {
  const plugin = pluginOf(v);
  if (plugin === 'hostPath') return String(v.hostPath.path);
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

/**
 * Sets up every volume of the pod (idempotent). Throws VolumeError naming the first volume that
 * failed, as kubelet's FailedMount event words it.
 */
export async function setUpVolumes(ctx: EnvContext, podDir: string): Promise<void> {
  for (const v of (ctx.pod.spec.volumes ?? []) as Json[]) {
    const plugin = pluginOf(v);
    if (plugin === undefined) continue; // volume types this agent does not provide (persistentVolumeClaim, ...)
    try {
      if (plugin === 'hostPath') {
        await hostPath(v);
        continue;
      }
      const dir = volumePath(podDir, v)!;
      await mkdir(dir, { recursive: true });
      await chmod(dir, 0o777);
      if (plugin !== 'emptyDir') await writeAtomic(dir, await payloadOf(ctx, plugin, v));
    } catch (err) {
      throw new VolumeError(`MountVolume.SetUp failed for volume "${String(v.name)}" : ${err instanceof Error ? err.message : String(err)}`);
    }
  }
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
    if (m.readOnly === true || READ_ONLY_PLUGINS.has(plugin)) mount.readonly = true;
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
