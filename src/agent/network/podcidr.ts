/**
 * The node's pod CIDR handed to the container runtime, as kubelet 1.23's updatePodCIDR: the runtime is told
 * (CRI UpdateRuntimeConfig, network_config.pod_cidr) only when the value differs from the one it was last
 * given; a failed call is logged ("Pod CIDR update failed") and tried again with the next value seen.
 *
 * Where the value comes from:
 * - at start, --pod-cidr (podCIDR in the config file), whatever the mode; empty is the initial state, so an
 *   empty --pod-cidr sends nothing;
 * - in API-server mode, then, the Node's spec.podCIDRs joined with ',' (dual stack) each time the node's
 *   status is synced, when the list is not empty: the server's value wins over the option, as in kubelet.
 *
 * Called by: the agent (start, then periodically in API-server mode). Only one update runs at a time.
 */
export interface PodCIDRTarget {
  /** Gives the runtime the pod CIDR (comma-separated for dual stack). */
  updatePodCIDR(cidr: string): Promise<void>;
}

export class PodCIDRManager {
  private current = '';
  private chain: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly target: PodCIDRTarget,
    private readonly log: (level: 'info' | 'error', message: string) => void,
  ) {}

  /** The CIDR the runtime was last given successfully ('' before any). */
  get podCIDR(): string {
    return this.current;
  }

  /** Tells the runtime `cidr` unless it has it already; resolves true when the value changed. */
  update(cidr: string): Promise<boolean> {
    const run = this.chain.then(() => this.apply(cidr));
    this.chain = run.catch(() => undefined);
    return run;
  }

  /** The value from the Node object (spec.podCIDRs, else spec.podCIDR): applied when not empty. */
  updateFromNodeSpec(spec: Record<string, unknown> | undefined): Promise<boolean> {
    const list = Array.isArray(spec?.podCIDRs) ? spec.podCIDRs.filter((c): c is string => typeof c === 'string') : [];
    if (list.length === 0 && typeof spec?.podCIDR === 'string' && spec.podCIDR !== '') list.push(spec.podCIDR);
    if (list.length === 0) return Promise.resolve(false);
    return this.update(list.join(','));
  }

  private async apply(cidr: string): Promise<boolean> {
    if (cidr === this.current) return false;
    try {
      await this.target.updatePodCIDR(cidr);
    } catch (err) {
      this.log('error', `Pod CIDR update failed: failed to update pod CIDR: ${err instanceof Error ? err.message : String(err)}`);
      return true;
    }
    this.log('info', `Updating Pod CIDR originalPodCIDR="${this.current}" newPodCIDR="${cidr}"`);
    this.current = cidr;
    return true;
  }
}
