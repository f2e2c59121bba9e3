/**
 * --hairpin-mode=hairpin-veth on a CRI runtime (see dockershim-options.ts for what each mode means here):
 * hairpin is turned on for a pod sandbox's port on the CNI bridge, so that a packet the pod sends to a
 * Service address and that is DNATed back to the pod itself can leave the bridge through the port it came in.
 *
 * The port is found in the CNI result the runtime reports in its verbose PodSandboxStatus (containerd:
 * info.info, JSON with cniResult.Interfaces; host-side interfaces have no Sandbox path): the host-side
 * interfaces that are bridge ports (/sys/class/net/<name>/brport exists) get brport/hairpin_mode = 1.
 * A runtime that reports no CNI result (or a sandbox on the node's network) gives nothing to set.
 *
 * Called by: CriRuntime.runPodSandbox, once the sandbox runs. Never fails the sandbox: problems are returned
 * for the caller to log.
 */
import { access, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export const SYS_CLASS_NET = '/sys/class/net';

/** The host-side interface names of a CNI result in a verbose PodSandboxStatus info map (containerd's shape). */
export function hostInterfacesOf(info: Record<string, string> | undefined): string[] {
  const text = info?.info;
  if (text === undefined) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return [];
  }
  const result = (parsed as { cniResult?: { Interfaces?: Record<string, { Sandbox?: string } | null> } }).cniResult;
  const ifs = result?.Interfaces ?? {};
  return Object.entries(ifs)
    .filter(([, i]) => (i?.Sandbox ?? '') === '')
    .map(([name]) => name);
}

/**
 * Sets hairpin_mode on each of `interfaces` that is a bridge port under `sysfs`. Resolves with the ports set
 * and the errors met.
 */
export async function setHairpin(interfaces: readonly string[], sysfs = SYS_CLASS_NET): Promise<{ ports: string[]; errors: string[] }> {
  const ports: string[] = [];
  const errors: string[] = [];
  for (const name of interfaces) {
    if (name.includes('/') || name === '.' || name === '..') continue;
    const file = join(sysfs, name, 'brport', 'hairpin_mode');
    try {
      await access(file);
    } catch {
      continue; // not a bridge port (the bridge itself, or another kind of interface)
    }
    try {
      await writeFile(file, '1');
      ports.push(name);
    } catch (err) {
      errors.push(`${file}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  return { ports, errors };
}

export interface SandboxStatusSource {
  podSandboxStatus(id: string, verbose: boolean): Promise<{ info?: Record<string, string> }>;
}

/** Hairpin on the bridge port of sandbox `id`, found through the runtime's verbose status. */
export async function hairpinSandbox(client: SandboxStatusSource, id: string, sysfs = SYS_CLASS_NET): Promise<{ ports: string[]; errors: string[] }> {
  let info: Record<string, string> | undefined;
  try {
    info = (await client.podSandboxStatus(id, true)).info;
  } catch (err) {
    return { ports: [], errors: [`PodSandboxStatus: ${err instanceof Error ? err.message : String(err)}`] };
  }
  return setHairpin(hostInterfacesOf(info), sysfs);
}
