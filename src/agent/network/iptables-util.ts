/**
 * kubelet 1.23's iptables utility chains (--make-iptables-util-chains, --iptables-masquerade-bit,
 * --iptables-drop-bit; pkg/kubelet/kubelet_network_linux.go), in the network namespace orchlet runs in:
 *
 *   nat     KUBE-MARK-DROP    -j MARK --or-mark <drop mark>
 *   filter  KUBE-FIREWALL     drop packets with the drop mark; (IPv4) drop packets to 127.0.0.0/8 from
 *                             elsewhere that are not part of a related, established or DNATed connection
 *                             (with route_localnet such packets would reach local services)
 *   filter  INPUT, OUTPUT     -j KUBE-FIREWALL, at the top
 *   nat     KUBE-MARK-MASQ    -j MARK --or-mark <masquerade mark>
 *   nat     POSTROUTING       -j KUBE-POSTROUTING, at the top
 *   nat     KUBE-POSTROUTING  RETURN unless marked; clear the mark (--xor-mark); MASQUERADE (--random-fully
 *                             where iptables has it)
 *   mangle  KUBE-IPTABLES-HINT (empty: tells other components which iptables backend is in use)
 *
 * A mark is 1 << bit. Each family (iptables and ip6tables) is set up on its own; one that cannot be (no
 * program, no kernel support) is logged and left out, as kubelet does. After a successful setup, a
 * KUBE-KUBELET-CANARY chain in mangle, nat and filter is watched (every minute, as kubelet): when the tables
 * are flushed, the rules are made again.
 */
import { Iptables, type Exec, type IPFamily, type MonitorLog } from './iptables.js';

export const KUBE_MARK_DROP = 'KUBE-MARK-DROP';
export const KUBE_MARK_MASQ = 'KUBE-MARK-MASQ';
export const KUBE_POSTROUTING = 'KUBE-POSTROUTING';
export const KUBE_FIREWALL = 'KUBE-FIREWALL';
export const KUBE_IPTABLES_HINT = 'KUBE-IPTABLES-HINT';
export const KUBELET_CANARY = 'KUBE-KUBELET-CANARY';

/** The fwmark of a bit, as kubelet writes it (Go's %#08x: 0x and eight hex digits). */
export function iptablesMark(bit: number): string {
  return `0x${(2 ** bit).toString(16).padStart(8, '0')}`;
}

/**
 * kubelet's checks of the two bits when --make-iptables-util-chains is on (NewMainKubelet): each within
 * [0, 31], and not the same bit. Returns the error message, or undefined.
 */
export function checkIptablesBits(makeChains: boolean, masqueradeBit: number, dropBit: number): string | undefined {
  if (!makeChains) return undefined;
  if (!Number.isInteger(masqueradeBit) || masqueradeBit < 0 || masqueradeBit > 31) return 'iptables-masquerade-bit is not valid. Must be within [0, 31]';
  if (!Number.isInteger(dropBit) || dropBit < 0 || dropBit > 31) return 'iptables-drop-bit is not valid. Must be within [0, 31]';
  if (dropBit === masqueradeBit) return 'iptables-masquerade-bit and iptables-drop-bit must be different';
  return undefined;
}

export interface UtilChainBits {
  masqueradeBit: number;
  dropBit: number;
}

/**
 * Makes sure the chains and rules above exist for one family (kubelet's syncNetworkUtil). Rejects with the
 * step that failed; what was made before it stays.
 */
export async function syncNetworkUtil(ipt: Iptables, bits: UtilChainBits): Promise<void> {
  const step = async (what: string, f: () => Promise<unknown>): Promise<void> => {
    try {
      await f();
    } catch (err) {
      throw new Error(`Failed to ensure ${what}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
    }
  };
  const drop = iptablesMark(bits.dropBit);
  await step(`that ${KUBE_MARK_DROP} chain exists`, () => ipt.ensureChain('nat', KUBE_MARK_DROP));
  await step(`that ${KUBE_MARK_DROP} rule exists`, () => ipt.ensureRule('append', 'nat', KUBE_MARK_DROP, ['-j', 'MARK', '--or-mark', drop]));
  await step(`that ${KUBE_FIREWALL} chain exists`, () => ipt.ensureChain('filter', KUBE_FIREWALL));
  await step(`that ${KUBE_FIREWALL} rule exists`, () =>
    ipt.ensureRule('append', 'filter', KUBE_FIREWALL, [
      '-m', 'comment', '--comment', 'kubernetes firewall for dropping marked packets',
      '-m', 'mark', '--mark', `${drop}/${drop}`,
      '-j', 'DROP',
    ]),
  );
  if (!ipt.isIPv6) {
    await step('rule to drop invalid localhost packets exists', () =>
      ipt.ensureRule('append', 'filter', KUBE_FIREWALL, [
        '-m', 'comment', '--comment', 'block incoming localnet connections',
        '--dst', '127.0.0.0/8',
        '!', '--src', '127.0.0.0/8',
        '-m', 'conntrack', '!', '--ctstate', 'RELATED,ESTABLISHED,DNAT',
        '-j', 'DROP',
      ]),
    );
  }
  await step(`that OUTPUT chain jumps to ${KUBE_FIREWALL}`, () => ipt.ensureRule('prepend', 'filter', 'OUTPUT', ['-j', KUBE_FIREWALL]));
  await step(`that INPUT chain jumps to ${KUBE_FIREWALL}`, () => ipt.ensureRule('prepend', 'filter', 'INPUT', ['-j', KUBE_FIREWALL]));

  const masq = iptablesMark(bits.masqueradeBit);
  await step(`that ${KUBE_MARK_MASQ} chain exists`, () => ipt.ensureChain('nat', KUBE_MARK_MASQ));
  await step(`that ${KUBE_POSTROUTING} chain exists`, () => ipt.ensureChain('nat', KUBE_POSTROUTING));
  await step(`that ${KUBE_MARK_MASQ} rule exists`, () => ipt.ensureRule('append', 'nat', KUBE_MARK_MASQ, ['-j', 'MARK', '--or-mark', masq]));
  await step(`that POSTROUTING chain jumps to ${KUBE_POSTROUTING}`, () =>
    ipt.ensureRule('prepend', 'nat', 'POSTROUTING', ['-m', 'comment', '--comment', 'kubernetes postrouting rules', '-j', KUBE_POSTROUTING]),
  );
  // Must match kube-proxy's KUBE-POSTROUTING (iptables and ipvs modes).
  await step('first masquerading rule exists', () =>
    ipt.ensureRule('append', 'nat', KUBE_POSTROUTING, ['-m', 'mark', '!', '--mark', `${masq}/${masq}`, '-j', 'RETURN']),
  );
  // The mark bit is set here, so --xor-mark clears it: a packet going through the stack again is not masqueraded twice.
  await step('second masquerading rule exists', () => ipt.ensureRule('append', 'nat', KUBE_POSTROUTING, ['-j', 'MARK', '--xor-mark', masq]));
  const masqRule = ['-m', 'comment', '--comment', 'kubernetes service traffic requiring SNAT', '-j', 'MASQUERADE'];
  if (ipt.hasRandomFully) masqRule.push('--random-fully');
  await step('third masquerading rule exists', () => ipt.ensureRule('append', 'nat', KUBE_POSTROUTING, masqRule));
  await step('that iptables hint chain exists', () => ipt.ensureChain('mangle', KUBE_IPTABLES_HINT));
}

export interface NetworkUtilOptions extends UtilChainBits {
  log: MonitorLog;
  /** How often the canary is checked (kubelet: 1 min). */
  monitorIntervalMs?: number;
  /** The families to set up (default both). */
  families?: IPFamily[];
  exec?: Exec;
}

/**
 * kubelet's initNetworkUtil: sets up each family and watches its canary. Resolves with the families set up
 * and the function that stops the watches.
 */
export async function startNetworkUtil(o: NetworkUtilOptions): Promise<{ families: IPFamily[]; stop: () => void }> {
  const stops: (() => void)[] = [];
  const done: IPFamily[] = [];
  for (const family of o.families ?? (['IPv4', 'IPv6'] as IPFamily[])) {
    let ipt: Iptables;
    try {
      ipt = await Iptables.create(family, o.exec);
      await syncNetworkUtil(ipt, o);
    } catch (err) {
      o.log('error', `Failed to initialize iptables rules; some functionality may be missing. protocol=${family}: ${err instanceof Error ? err.message : String(err)}`);
      continue;
    }
    o.log('info', `Initialized iptables rules. protocol=${family}`);
    done.push(family);
    const resync = async (): Promise<void> => {
      await syncNetworkUtil(ipt, o).catch((err: unknown) => o.log('error', `${err instanceof Error ? err.message : String(err)} (protocol=${family})`));
    };
    stops.push(ipt.monitor(KUBELET_CANARY, ['mangle', 'nat', 'filter'], resync, o.monitorIntervalMs ?? 60_000, o.log));
  }
  return { families: done, stop: () => stops.forEach((s) => s()) };
}
