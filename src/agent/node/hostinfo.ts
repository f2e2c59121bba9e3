// What the host looks like, read once at start (and the filesystem size on every status pass):
// the facts kubelet gets from cadvisor and the OS for the Node's capacity and nodeInfo.
import { readFile, statfs } from 'node:fs/promises';
import { cpus, hostname, networkInterfaces, release, totalmem } from 'node:os';
import type { HostFacts } from './nodestatus.js';

async function firstLine(path: string): Promise<string> {
  return (await readFile(path, 'utf8').catch(() => '')).split('\n')[0]!.trim();
}

async function osImage(): Promise<string> {
  const text = await readFile('/etc/os-release', 'utf8').catch(() => '');
  const m = /^PRETTY_NAME=(.*)$/m.exec(text);
  return m ? m[1]!.replace(/^"|"$/g, '') : 'Unknown';
}

/** Bytes of the filesystem holding `dir` (0 when it cannot be read). */
export async function fsSize(dir: string): Promise<{ capacity: number; available: number; inodes: number; inodesFree: number }> {
  try {
    const s = await statfs(dir);
    return { capacity: s.blocks * s.bsize, available: s.bavail * s.bsize, inodes: s.files, inodesFree: s.ffree };
  } catch {
    return { capacity: 0, available: 0, inodes: 0, inodesFree: 0 };
  }
}

export async function readHostFacts(rootDir: string, hostnameValue: string): Promise<HostFacts> {
  return {
    hostname: hostnameValue,
    cpus: cpus().length || 1,
    memoryBytes: totalmem(),
    rootFsBytes: (await fsSize(rootDir)).capacity,
    machineID: await firstLine('/etc/machine-id'),
    systemUUID: (await firstLine('/sys/class/dmi/id/product_uuid')).toUpperCase(),
    bootID: await firstLine('/proc/sys/kernel/random/boot_id'),
    kernelVersion: release(),
    osImage: await osImage(),
  };
}

/** The host's own name, lower-cased, as kubelet's default hostname. */
export function defaultHostname(): string {
  return hostname().toLowerCase();
}

/**
 * The node IP when --node-ip is not given: the first non-internal IPv4 address of the host's
 * interfaces (kubelet looks up the host name, then the default route's interface), else the
 * first IPv6 one, else 127.0.0.1.
 */
export function defaultNodeIP(): string {
  const all = Object.values(networkInterfaces()).flatMap((l) => l ?? []);
  const v4 = all.find((a) => a.family === 'IPv4' && !a.internal);
  const v6 = all.find((a) => a.family === 'IPv6' && !a.internal && !a.address.startsWith('fe80'));
  return v4?.address ?? v6?.address ?? '127.0.0.1';
}
