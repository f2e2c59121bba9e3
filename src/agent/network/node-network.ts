/**
 * The agent's part in the host's networking (kubelet 1.23's initNetworkUtil and updatePodCIDR):
 * - the iptables utility chains, when --make-iptables-util-chains (iptables-util.ts);
 * - the pod CIDR given to the runtime: --pod-cidr at start, then the Node's spec.podCIDRs in API-server mode
 *   (podcidr.ts), checked as often as the node's status is synced.
 * --hairpin-mode acts per sandbox inside the CRI runtime (hairpin.ts).
 *
 * Called by: Agent.start (after the runtime's first relist) and Agent.stop.
 */
import type { Exec, IPFamily } from './iptables.js';
import { startNetworkUtil } from './iptables-util.js';
import { PodCIDRManager, type PodCIDRTarget } from './podcidr.js';

export interface NodeNetworkConfig {
  /** --make-iptables-util-chains with its bits; unset when false. */
  iptablesUtil?: {
    masqueradeBit: number;
    dropBit: number;
    /** For tests: the canary check period (kubelet: 1 min), the families, the program runner. */
    monitorIntervalMs?: number;
    families?: IPFamily[];
    exec?: Exec;
  };
  /** --pod-cidr ('' or unset: none). */
  podCIDR?: string;
  /** How often the Node's spec.podCIDRs is looked at in API-server mode (default 10 s). */
  nodeSpecPeriodMs?: number;
}

export interface NodeNetworkDeps {
  /** The runtime, when it takes a pod CIDR (CRI UpdateRuntimeConfig); else the CIDR is only recorded. */
  runtime: Partial<PodCIDRTarget>;
  /** The Node's spec as last read from the server (API-server mode); unset standalone. */
  nodeSpec?: () => Record<string, unknown> | undefined;
  log: (level: 'info' | 'error', message: string) => void;
}

export class NodeNetwork {
  readonly podCIDR: PodCIDRManager;
  private stopUtil: (() => void) | undefined;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  /** The families whose utility chains are set up (once iptablesReady resolved). */
  iptablesFamilies: IPFamily[] = [];
  iptablesReady: Promise<void> = Promise.resolve();

  constructor(
    private readonly config: NodeNetworkConfig,
    private readonly deps: NodeNetworkDeps,
  ) {
    const runtime = deps.runtime;
    this.podCIDR = new PodCIDRManager({ updatePodCIDR: (cidr) => runtime.updatePodCIDR?.(cidr) ?? Promise.resolve() }, deps.log);
  }

  /**
   * Gives the runtime --pod-cidr (awaited, as kubelet does before it runs) and starts the iptables utility
   * chains in the background (a few dozen iptables runs: pods need not wait for them); iptablesReady resolves
   * once each family was set up or given up.
   */
  async start(): Promise<void> {
    await this.podCIDR.update(this.config.podCIDR ?? '');
    const nodeSpec = this.deps.nodeSpec;
    if (nodeSpec) {
      this.timer = setInterval(() => void this.podCIDR.updateFromNodeSpec(nodeSpec()), this.config.nodeSpecPeriodMs ?? 10_000);
      this.timer.unref();
    }
    const util = this.config.iptablesUtil;
    if (util) {
      this.iptablesReady = startNetworkUtil({ ...util, log: this.deps.log }).then((r) => {
        this.iptablesFamilies = r.families;
        if (this.stopped) r.stop();
        else this.stopUtil = r.stop;
      });
    }
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.timer);
    this.stopUtil?.();
  }
}
