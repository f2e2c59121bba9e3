/**
 * The allocators of one API server's Service network (Kubernetes' ipallocator and portallocator over
 * RangeAllocation storage): a cluster IP range per family (--service-cluster-ip-range, the first CIDR's
 * family is the default) and the NodePort range (--service-node-port-range). One value per server.
 *
 * Storage keys, as Kubernetes 1.23's: <prefix>/ranges/serviceips (the primary range),
 * <prefix>/ranges/secondaryserviceips, <prefix>/ranges/servicenodeports.
 */
import type { KV } from '../../storage/interface.js';
import { CIDR, ServiceIPRange, type IPFamily } from './ip.js';
import { AllocationError, RangeAllocator } from './range.js';
import type { StorageEncoding } from '../storagecodec.js';

/** Kubernetes 1.23's range when --service-cluster-ip-range is not given (with a deprecation warning). */
export const DEFAULT_SERVICE_IP_CIDR = '10.0.0.0/24';

export class IPAllocator {
  readonly range: ServiceIPRange;
  readonly store: RangeAllocator;
  /**
   * @param reserveFirst the range's first address is only given when asked for by name (the primary
   *   range's first address belongs to the kubernetes Service)
   */
  constructor(kv: KV, key: string, cidr: CIDR, private readonly reserveFirst = false, encoding?: StorageEncoding) {
    this.range = new ServiceIPRange(cidr);
    this.store = new RangeAllocator(kv, key, this.range.size, cidr.toString(), encoding);
  }

  get family(): IPFamily {
    return this.range.cidr.family;
  }

  private offset(ip: string): number {
    const off = this.range.offsetOf(ip);
    if (off < 0) {
      throw new AllocationError('notInRange', `provided IP is not in the valid range. The range of valid IPs is ${this.range.cidr.toString()}`);
    }
    return off;
  }

  /** Takes `ip`; AllocationError when it is outside the range or taken. */
  async allocate(ip: string, dryRun = false): Promise<void> {
    await this.store.allocate(this.offset(ip), 'provided IP is already allocated', dryRun);
  }

  async allocateNext(dryRun = false): Promise<string> {
    return this.range.ipAt(await this.store.allocateNext(dryRun, this.reserveFirst && this.range.size > 1 ? 1 : 0));
  }

  /** Frees `ip`; addresses outside the range are ignored (as Kubernetes' Release). */
  async release(ip: string): Promise<void> {
    const off = this.range.offsetOf(ip);
    if (off >= 0) await this.store.release(off);
  }
}

export class PortAllocator {
  readonly store: RangeAllocator;
  constructor(
    kv: KV,
    key: string,
    readonly min: number,
    readonly max: number,
    encoding?: StorageEncoding,
  ) {
    this.store = new RangeAllocator(kv, key, max - min + 1, this.rangeText, encoding);
  }

  get rangeText(): string {
    return `${this.min}-${this.max}`;
  }

  contains(port: number): boolean {
    return Number.isInteger(port) && port >= this.min && port <= this.max;
  }

  async allocate(port: number, dryRun = false): Promise<void> {
    if (!this.contains(port)) {
      throw new AllocationError('notInRange', `provided port is not in the valid range. The range of valid ports is ${this.rangeText}`);
    }
    await this.store.allocate(port - this.min, 'provided port is already allocated', dryRun);
  }

  async allocateNext(dryRun = false): Promise<number> {
    return this.min + (await this.store.allocateNext(dryRun));
  }

  async release(port: number): Promise<void> {
    if (this.contains(port)) await this.store.release(port - this.min);
  }
}

export interface ServiceNetworkConfig {
  /** --service-cluster-ip-range as given (one or two CIDRs, comma-separated); empty: DEFAULT_SERVICE_IP_CIDR. */
  clusterIPRange?: string;
  /** --service-node-port-range. */
  nodePorts: { min: number; max: number };
  /** How the allocators' RangeAllocation bitmaps are stored (--storage-media-type); JSON when unset. */
  storageEncoding?: StorageEncoding;
}

export class ServiceNetwork {
  /** The cluster IP allocators by family, the default family first. */
  readonly ipAllocators = new Map<IPFamily, IPAllocator>();
  readonly defaultFamily: IPFamily;
  readonly nodePorts: PortAllocator;
  /** Where failures nobody waits for (releases after a delete) are reported. */
  log: (message: string) => void = () => {};

  constructor(kv: KV, prefix: string, cfg: ServiceNetworkConfig) {
    const cidrs = (cfg.clusterIPRange ?? '')
      .split(',')
      .map((c) => c.trim())
      .filter((c) => c !== '');
    if (cidrs.length === 0) cidrs.push(DEFAULT_SERVICE_IP_CIDR);
    const keys = [`${prefix}/ranges/serviceips`, `${prefix}/ranges/secondaryserviceips`];
    cidrs.slice(0, 2).forEach((text, i) => {
      const cidr = CIDR.parse(text);
      if (this.ipAllocators.has(cidr.family)) throw new Error('--service-cluster-ip-range: two CIDRs must be dual-stack: one IPv4 and one IPv6');
      this.ipAllocators.set(cidr.family, new IPAllocator(kv, keys[i]!, cidr, i === 0, cfg.storageEncoding));
    });
    this.defaultFamily = [...this.ipAllocators.keys()][0]!;
    this.nodePorts = new PortAllocator(kv, `${prefix}/ranges/servicenodeports`, cfg.nodePorts.min, cfg.nodePorts.max, cfg.storageEncoding);
  }

  /** The first address of the primary range: the kubernetes Service's cluster IP. */
  get apiServerServiceIP(): string {
    return this.ipAllocators.get(this.defaultFamily)!.range.ipAt(0);
  }

  get dualStack(): boolean {
    return this.ipAllocators.size === 2;
  }
}
