// FlexVolume drivers (kubelet 1.23 pkg/volume/flexvolume) under --volume-plugin-dir:
//
//   <plugin-dir>/<vendor>~<driver>/<driver>   an executable serving driver "vendor/driver"
//
// Probing: the directory's subdirectories (names starting with '.' skipped) are drivers; each is
// initialised with `<exe> init`, whose JSON answer {status, message, capabilities} must say
// "Success" (capabilities default to attach, selinuxRelabel, fsGroup and requiresFSResize true, metrics
// false). The directory is probed again when a pod needs a driver not known yet, and a driver whose
// executable changed is initialised again (kubelet watches the directory with fsnotify).
//
// A pod's flexVolume {driver, fsType, secretRef, readOnly, options} is set up once at
// <pod>/volumes/<vendor>~<driver>/<volume> (an existing mount point counts as set up) by
//   <exe> mount <dir> <json>
// where json holds kubernetes.io/fsType, kubernetes.io/readwrite (rw|ro), kubernetes.io/pvOrVolumeName,
// kubernetes.io/pod.name, .namespace, .uid, kubernetes.io/serviceAccount.name,
// kubernetes.io/mounterArgs.FsGroup (with a pod fsGroup), kubernetes.io/secret/<key> (each key of the
// secretRef Secret, base64, the Secret's type must be the driver name) and then the volume's options
// (which win). A driver answering "Not supported" for mount fails the mount (kubelet's default would
// bind the attached device, and only attachable drivers have one); for unmount, the directory is
// unmounted if it is a mount point. Either way the directory is removed after unmount.
// Drivers that need attach (capabilities.attach true) are refused: this agent performs no attach.
// A command a driver answered "Not supported" once is not called again for that driver.
import { execFile } from 'node:child_process';
import { mkdir, readdir, rm, rmdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { EnvContext } from './env.js';
import { ObjectNotFound } from './objects.js';

type Json = Record<string, any>;
type Log = (level: 'info' | 'error', message: string) => void;

export const NOT_SUPPORTED = 'Not supported';

export interface DriverCapabilities {
  attach: boolean;
  selinuxRelabel: boolean;
  supportsMetrics: boolean;
  fsGroup: boolean;
  requiresFSResize: boolean;
}

export interface DriverStatus {
  status: string;
  message?: string;
  capabilities: DriverCapabilities;
}

const DEFAULT_CAPABILITIES: DriverCapabilities = { attach: true, selinuxRelabel: true, supportsMetrics: false, fsGroup: true, requiresFSResize: true };

/** "vendor/driver" -> "vendor~driver" (utilstrings.EscapeQualifiedName). */
export const escapeDriverName = (driver: string): string => driver.replace(/\//g, '~');

/** Parses a driver's answer (handleCmdResponse): throws NOT_SUPPORTED, or kubelet's failure text. */
export function parseDriverStatus(command: string, output: string): DriverStatus {
  let raw: Json;
  try {
    raw = JSON.parse(output) as Json;
  } catch (err) {
    throw new Error(`failed to unmarshal output for command: ${command}, output: ${JSON.stringify(output)}, error: ${(err as Error).message}`, { cause: err });
  }
  const capsRaw = (Object.entries(raw).find(([k]) => k.toLowerCase() === 'capabilities')?.[1] ?? {}) as Json;
  const capabilities = { ...DEFAULT_CAPABILITIES };
  for (const k of Object.keys(capabilities) as (keyof DriverCapabilities)[]) {
    const v = Object.entries(capsRaw).find(([key]) => key.toLowerCase() === k.toLowerCase())?.[1];
    if (typeof v === 'boolean') capabilities[k] = v;
  }
  const status = typeof raw.status === 'string' ? raw.status : '';
  const message = typeof raw.message === 'string' ? raw.message : '';
  if (status === NOT_SUPPORTED) throw new Error(NOT_SUPPORTED);
  if (status !== 'Success') throw new Error(`${command} command failed, status: ${status}, reason: ${message}`);
  return { status, message, capabilities };
}

interface Driver {
  name: string;
  exe: string;
  mtimeMs: number;
  capabilities: DriverCapabilities;
  unsupported: Set<string>;
}

/** What setUp needs of volumes.ts. */
export interface SetUpHost {
  fsGroup: number | undefined;
  isMountPoint(dir: string): Promise<boolean>;
  setOwnership(dir: string, fsGroup: number): Promise<void>;
}

export interface FlexVolumeOptions {
  /** --volume-plugin-dir */
  pluginDir: string;
  log?: Log;
  /** How long a driver call may take (kubelet: no limit for mount; 2 minutes here so a stuck driver cannot hold a pod forever). */
  timeoutMs?: number;
}

/** The FlexVolume plugins of one agent. */
export class FlexVolumes {
  private readonly drivers = new Map<string, Driver>();
  /** Volume directories set up by a driver that mounted nothing there (a mount point needs no record). */
  private readonly setUpDirs = new Set<string>();

  constructor(private readonly o: FlexVolumeOptions) {}

  /** Runs `<exe> <args>`; the answer parsed; a command once answered Not supported is not run again. */
  private async call(d: Driver, args: string[]): Promise<DriverStatus> {
    const command = args[0]!;
    if (d.unsupported.has(command)) throw new Error(NOT_SUPPORTED);
    const { output, failed } = await new Promise<{ output: string; failed?: Error }>((resolve) => {
      execFile(d.exe, args, { timeout: this.o.timeoutMs ?? 120_000, maxBuffer: 4 << 20 }, (err, stdout, stderr) =>
        resolve({ output: `${stdout}${stderr}`, ...(err ? { failed: err } : {}) }),
      );
    });
    try {
      return parseDriverStatus(command, output);
    } catch (err) {
      if ((err as Error).message === NOT_SUPPORTED) d.unsupported.add(command);
      else this.o.log?.('error', `FlexVolume: driver call failed: executable: ${d.exe}, args: [${args.join(' ')}], error: ${failed?.message ?? ''}, output: ${JSON.stringify(output)}`);
      throw err;
    }
  }

  /** The driver named `name` (probing the directory when it is unknown or its executable changed). */
  async driver(name: string): Promise<Driver | undefined> {
    const known = this.drivers.get(name);
    const exe = join(this.o.pluginDir, escapeDriverName(name), name.split('/').pop()!);
    const st = await stat(exe).catch(() => undefined);
    if (known && st && st.mtimeMs === known.mtimeMs) return known;
    if (!st) {
      this.drivers.delete(name);
      return undefined;
    }
    const d: Driver = { name, exe, mtimeMs: st.mtimeMs, capabilities: DEFAULT_CAPABILITIES, unsupported: new Set() };
    try {
      d.capabilities = (await this.call(d, ['init'])).capabilities;
    } catch (err) {
      this.o.log?.('error', `Error dynamically probing plugins: error creating Flexvolume plugin from directory ${escapeDriverName(name)}, skipping. Error: ${(err as Error).message}`);
      this.drivers.delete(name);
      return undefined;
    }
    this.drivers.set(name, d);
    this.o.log?.('info', `FlexVolume driver ${name} initialised (attach ${d.capabilities.attach})`);
    return d;
  }

  /** Probes every driver directory (at start; later probes happen on demand). */
  async probeAll(): Promise<string[]> {
    const entries = await readdir(this.o.pluginDir, { withFileTypes: true }).catch(() => []);
    const names: string[] = [];
    for (const e of entries) {
      if (!e.isDirectory() || e.name.startsWith('.')) continue;
      const name = e.name.replace(/~/g, '/');
      if (await this.driver(name)) names.push(name);
    }
    return names;
  }

  /** Sets up the flexVolume `v` of ctx.pod at `dir` (once). Throws with kubelet's messages. */
  async setUp(ctx: EnvContext, v: Json, dir: string, host: SetUpHost): Promise<void> {
    const fsGroup = host.fsGroup;
    const src = v.flexVolume as Json;
    const name = String(src.driver ?? '');
    const d = await this.driver(name);
    if (!d) throw new Error(`failed to get Plugin from volumeSpec for volume "${String(v.name)}" err=no volume plugin matched`);
    if (d.capabilities.attach) throw new Error(`flexvolume driver ${name} needs attach (its init answered attach: true); this agent performs no attach or detach`);
    if (this.setUpDirs.has(dir) || (await host.isMountPoint(dir))) return;
    await mkdir(dir, { recursive: true });
    const pod = ctx.pod;
    const options: Record<string, string> = {
      'kubernetes.io/fsType': typeof src.fsType === 'string' ? src.fsType : '',
      'kubernetes.io/readwrite': src.readOnly === true ? 'ro' : 'rw',
      'kubernetes.io/pvOrVolumeName': String(v.name),
      'kubernetes.io/pod.name': pod.metadata.name,
      'kubernetes.io/pod.namespace': pod.metadata.namespace,
      'kubernetes.io/pod.uid': pod.metadata.uid,
      'kubernetes.io/serviceAccount.name': typeof pod.spec.serviceAccountName === 'string' ? pod.spec.serviceAccountName : '',
    };
    if (fsGroup !== undefined) options['kubernetes.io/mounterArgs.FsGroup'] = String(fsGroup);
    const secretName = (src.secretRef as Json | undefined)?.name;
    if (typeof secretName === 'string' && secretName !== '') {
      let secret: Json;
      try {
        secret = await ctx.objects.get('secrets', pod.metadata.namespace, secretName);
      } catch (err) {
        const why = err instanceof ObjectNotFound ? `secrets "${secretName}" not found` : (err as Error).message;
        throw new Error(`couldn't get secret ${pod.metadata.namespace}/${secretName} err: ${why}`, { cause: err });
      }
      if (secret.type !== name) throw new Error(`couldn't get secret ${pod.metadata.namespace}/${secretName} err: cannot get secret of type ${name}`);
      for (const [k, b64] of Object.entries((secret.data ?? {}) as Record<string, string>)) options[`kubernetes.io/secret/${k}`] = b64;
    }
    for (const [k, val] of Object.entries((src.options ?? {}) as Record<string, unknown>)) options[k] = String(val);
    try {
      await this.call(d, ['mount', dir, JSON.stringify(options)]);
    } catch (err) {
      await rmdir(dir).catch(() => undefined);
      throw err;
    }
    this.setUpDirs.add(dir);
    // kubelet: the volume's ownership for fsGroup, unless read-only or the driver says it has no fsGroup support
    if (fsGroup !== undefined && src.readOnly !== true && d.capabilities.fsGroup) await host.setOwnership(dir, fsGroup);
  }

  /**
   * Tears down every FlexVolume of a pod (the directories under <podDir>/volumes/ that are not
   * kubernetes.io~ plugins): `unmount <dir>`, a plain unmount where the driver does not support it,
   * then the directory goes. The first failure is thrown after all were tried.
   */
  async tearDownPod(podDir: string, unmount: (dir: string) => Promise<void>, isMountPoint: (dir: string) => Promise<boolean>): Promise<void> {
    const base = join(podDir, 'volumes');
    const plugins = await readdir(base, { withFileTypes: true }).catch(() => []);
    let first: Error | undefined;
    for (const p of plugins) {
      if (!p.isDirectory() || p.name.startsWith('kubernetes.io~')) continue;
      const name = p.name.replace(/~/g, '/');
      for (const vol of await readdir(join(base, p.name)).catch(() => [] as string[])) {
        const dir = join(base, p.name, vol);
        try {
          const d = await this.driver(name);
          if (!d) throw new Error(`no FlexVolume driver ${name} to unmount ${dir}`);
          try {
            await this.call(d, ['unmount', dir]);
          } catch (err) {
            if ((err as Error).message !== NOT_SUPPORTED) throw err;
            if (await isMountPoint(dir)) await unmount(dir);
          }
          this.setUpDirs.delete(dir);
          if (await isMountPoint(dir)) throw new Error(`${dir} is still mounted after unmount`);
          await rm(dir, { recursive: true, force: true });
        } catch (err) {
          first ??= err instanceof Error ? err : new Error(String(err));
        }
      }
      await rmdir(join(base, p.name)).catch(() => undefined);
    }
    if (first) throw first;
  }
}
