/**
 * --hairpin-mode and --non-masquerade-cidr. In kubelet 1.23 both were network plugin settings of the dockershim
 * (runDockershim's NetworkPluginSettings); with --container-runtime=remote kubelet passed neither anywhere,
 * the CRI having no field for them.
 *
 * --hairpin-mode (dockershim's effectiveHairpinMode): promiscuous-bridge only works with the kubenet plugin;
 * with any other plugin kubelet logs "Hairpin mode is set but kubenet is not enabled, falling back to
 * HairpinVeth" and uses hairpin-veth. No runtime of ours has kubenet, so the effective mode is hairpin-veth or
 * none. What it does here:
 * - built-in (process) runtime: pods use the host's network, there is no bridge and no veth: nothing to do
 *   (logged when the option is given);
 * - CRI runtime: after each pod sandbox is up, hairpin-veth turns hairpin on for the sandbox's port on the CNI
 *   bridge (the host-side interface of the CNI result the runtime reports, /sys/class/net/<if>/brport), so a
 *   pod can reach itself through a Service address; none leaves the port as the runtime's CNI configuration
 *   made it (hairpin.ts).
 *
 * --non-masquerade-cidr: kubenet masqueraded traffic from pods to addresses outside the range. Without kubenet
 * it has no effect, in kubelet 1.23 as here; besides pflag's deprecation warning the agent says so once.
 */
export type HairpinMode = 'promiscuous-bridge' | 'hairpin-veth' | 'none';

/** The mode in force and kubelet's log line when it differs from the one asked for. */
export function effectiveHairpinMode(mode: string, networkPlugin: string): { mode: HairpinMode; note?: string } {
  if (mode === 'promiscuous-bridge' && networkPlugin !== 'kubenet') {
    return { mode: 'hairpin-veth', note: `Hairpin mode is set but kubenet is not enabled, falling back to HairpinVeth hairpinMode="${mode}"` };
  }
  if (mode !== 'promiscuous-bridge' && mode !== 'hairpin-veth' && mode !== 'none') throw new Error(`unknown value: "${mode}"`);
  return { mode };
}

export interface NetworkOptionValues {
  containerRuntime: string;
  hairpinMode: string;
  nonMasqueradeCidr: string;
  explicitFlags: ReadonlySet<string>;
  configFileFlags: ReadonlySet<string>;
}

/**
 * The effective hairpin mode for the runtime, and the lines the agent logs at start about these two options.
 * Throws for a mode kubelet does not know.
 */
export function networkOptionNotes(o: NetworkOptionValues): { hairpinMode: HairpinMode; lines: string[] } {
  const given = (f: string): boolean => o.explicitFlags.has(f) || o.configFileFlags.has(f);
  const lines: string[] = [];
  const eff = effectiveHairpinMode(o.hairpinMode, '');
  if (eff.note !== undefined) lines.push(eff.note);
  if (o.containerRuntime !== 'remote' && given('hairpin-mode')) {
    lines.push(`--hairpin-mode=${o.hairpinMode}: the built-in runtime runs pods on the host's network (no bridge, no veth): nothing to set`);
  }
  if (given('non-masquerade-cidr')) {
    lines.push(
      `--non-masquerade-cidr=${o.nonMasqueradeCidr} has no effect: only the kubenet network plugin of the removed Docker adapter used it (no runtime of this agent has it)`,
    );
  }
  return { hairpinMode: eff.mode, lines };
}
