/**
 * Cluster IPs and node ports of Services, as Kubernetes 1.23's service storage allocates them
 * (pkg/registry/core/service/storage/alloc.go): the IP family fields are initialized from the cluster's
 * ranges (initIPFamilyFields), then addresses and ports are taken from the server's ServiceNetwork before
 * the object is stored, and given back when the write fails (revert), when an update no longer needs them
 * (on commit), and after a delete (releaseAllocated).
 *
 * Every take is written to storage at once (the allocators' bitmaps); a dry run only checks.
 */
import { apiErrors, isStatusError } from '../../errors.js';
import type { KObject, WriteTransaction } from '../../kind.js';
import { familyOf, type IPFamily } from '../../allocators/ip.js';
import { AllocationError } from '../../allocators/range.js';
import type { ServiceNetwork } from '../../allocators/service-network.js';
import { invalid, root, type FieldError } from '../../../util/validation.js';
import { CLUSTER_IP_NONE, needsHealthCheck, validateServiceClusterIPsRelatedFields } from './validation.js';

type Json = Record<string, any>;
const strings = (v: unknown): string[] => (Array.isArray(v) ? (v as unknown[]).map(String) : []);
const ports = (svc: KObject): Json[] => (Array.isArray(svc.spec?.ports) ? (svc.spec.ports as Json[]) : []);

const invalidService = (svc: KObject, errs: FieldError[]) => apiErrors.invalid('', 'Service', svc.metadata?.name ?? '', errs);

/** A list of undo and finish steps; commit and revert never throw (failures are for the repair loop). */
class Txn implements WriteTransaction {
  readonly onCommit: (() => Promise<void>)[] = [];
  readonly onRevert: (() => Promise<void>)[] = [];
  async commit(): Promise<void> {
    for (const f of this.onCommit) await f().catch(() => undefined);
  }
  async revert(): Promise<void> {
    for (const f of this.onRevert.reverse()) await f().catch(() => undefined);
  }
}

const isSingleStack = (svc: KObject) => svc.spec?.ipFamilyPolicy === 'SingleStack';
const sameList = (a: unknown, b: unknown) => JSON.stringify(strings(a)) === JSON.stringify(strings(b));

/** isMatchingPreferDualStackClusterIPFields: a PreferDualStack service that keeps its IPs and families. */
function unchangedPreferDualStack(svc: KObject, old: KObject | null): boolean {
  if (!old || svc.spec?.ipFamilyPolicy === undefined || svc.spec?.ipFamilyPolicy === null) return false;
  if (old.spec?.type !== svc.spec?.type || svc.spec?.type === 'ExternalName') return false;
  if (svc.spec.ipFamilyPolicy !== 'PreferDualStack' || (old.spec?.ipFamilyPolicy ?? 'PreferDualStack') !== 'PreferDualStack') return false;
  return sameList(old.spec?.clusterIPs, svc.spec?.clusterIPs) && sameList(old.spec?.ipFamilies, svc.spec?.ipFamilies);
}

/** initIPFamilyFields: ipFamilyPolicy and ipFamilies from the cluster's ranges; refuses what it cannot serve. */
export function initIPFamilyFields(net: ServiceNetwork, svc: KObject, old: KObject | null): void {
  const spec: Json = (svc.spec ??= {});
  if (spec.type === 'ExternalName' || unchangedPreferDualStack(svc, old)) return;
  const headlessSelectorless = spec.clusterIP === CLUSTER_IP_NONE && Object.keys(spec.selector ?? {}).length === 0;
  if (spec.ipFamilyPolicy === undefined || spec.ipFamilyPolicy === null) {
    if (old?.spec?.ipFamilyPolicy) spec.ipFamilyPolicy = old.spec.ipFamilyPolicy;
    else spec.ipFamilyPolicy = headlessSelectorless ? 'RequireDualStack' : 'SingleStack';
  }
  const pre = validateServiceClusterIPsRelatedFields(svc);
  if (pre.length > 0) throw invalidService(svc, pre);
  const errs: FieldError[] = [];
  const policyPath = root('spec', 'ipFamilyPolicy');
  if (old) {
    if (isSingleStack(svc)) {
      if (sameList(old.spec?.clusterIPs, spec.clusterIPs) && strings(spec.clusterIPs).length > 1) spec.clusterIPs = strings(spec.clusterIPs).slice(0, 1);
      if (sameList(old.spec?.ipFamilies, spec.ipFamilies) && strings(spec.ipFamilies).length > 1) spec.ipFamilies = strings(spec.ipFamilies).slice(0, 1);
    } else {
      const reduced = (f: string) => strings(spec[f]).length > 0 && strings(spec[f]).length < strings(old.spec?.[f]).length;
      if (reduced('clusterIPs')) errs.push(invalid(policyPath, spec.ipFamilyPolicy, "must be 'SingleStack' to release the secondary cluster IP"));
      if (reduced('ipFamilies')) errs.push(invalid(policyPath, spec.ipFamilyPolicy, "must be 'SingleStack' to release the secondary IP family"));
    }
  }
  if (isSingleStack(svc)) {
    if (strings(spec.clusterIPs).length === 2) errs.push(invalid(policyPath, spec.ipFamilyPolicy, "must be 'RequireDualStack' or 'PreferDualStack' when multiple cluster IPs are specified"));
    if (strings(spec.ipFamilies).length === 2) errs.push(invalid(policyPath, spec.ipFamilyPolicy, "must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified"));
  }
  const families = strings(spec.ipFamilies);
  strings(spec.clusterIPs).some((ip, i) => {
    if (ip === CLUSTER_IP_NONE) return true;
    const fam = familyOf(ip) as IPFamily;
    if (i >= families.length) {
      if (!net.ipAllocators.has(fam)) errs.push(invalid(root('spec', 'clusterIPs').index(i), strings(spec.clusterIPs), `${fam} is not configured on this cluster`));
      else families.push(fam);
    }
    return false;
  });
  if (families.length > 0) spec.ipFamilies = families;
  if (errs.length > 0) throw invalidService(svc, errs);
  if (headlessSelectorless) {
    if (families.length === 0) families.push(net.defaultFamily);
    if (families.length < 2 && spec.ipFamilyPolicy !== 'SingleStack') families.push(families[0] === 'IPv4' ? 'IPv6' : 'IPv4');
    spec.ipFamilies = families;
    return;
  }
  if (spec.ipFamilyPolicy === 'RequireDualStack' && !net.dualStack) {
    errs.push(invalid(policyPath, spec.ipFamilyPolicy, 'this cluster is not configured for dual-stack services'));
  }
  families.forEach((f, i) => {
    if (!net.ipAllocators.has(f as IPFamily)) errs.push(invalid(root('spec', 'ipFamilies').index(i), f, 'not configured on this cluster'));
  });
  if (errs.length > 0) throw invalidService(svc, errs);
  if (families.length === 0) families.push(net.defaultFamily);
  if (spec.ipFamilyPolicy !== 'SingleStack' && families.length === 1 && net.dualStack) families.push(families[0] === 'IPv4' ? 'IPv6' : 'IPv4');
  spec.ipFamilies = families;
}

/** allocIPs: takes the named addresses, or the next free one where none is named; records the undo. */
async function allocIPs(net: ServiceNetwork, svc: KObject, want: Map<IPFamily, string>, dryRun: boolean, txn: Txn): Promise<Map<IPFamily, string>> {
  const got = new Map<IPFamily, string>();
  for (const [family, ip] of want) {
    const alloc = net.ipAllocators.get(family)!;
    if (ip === '') {
      try {
        got.set(family, await alloc.allocateNext(dryRun));
      } catch (err) {
        throw apiErrors.internal(`failed to allocate a serviceIP: ${(err as Error).message}`);
      }
    } else {
      try {
        await alloc.allocate(ip, dryRun);
      } catch (err) {
        if (!(err instanceof AllocationError)) throw err;
        const msg = `failed to allocate IP ${ip}: ${err.message}`;
        throw invalidService(svc, [invalid(root('spec', 'clusterIPs'), strings(svc.spec?.clusterIPs), msg)]);
      }
      got.set(family, ip);
    }
    if (!dryRun) txn.onRevert.push(() => alloc.release(got.get(family)!));
  }
  return got;
}

/** allocClusterIPs: an address for each of the service's families (none for ExternalName and headless). */
async function allocClusterIPs(net: ServiceNetwork, svc: KObject, dryRun: boolean, txn: Txn): Promise<void> {
  const spec: Json = svc.spec;
  if (spec.type === 'ExternalName' || strings(spec.clusterIPs)[0] === CLUSTER_IP_NONE) return;
  const ips = strings(spec.clusterIPs);
  const families = strings(spec.ipFamilies) as IPFamily[];
  const want = new Map<IPFamily, string>();
  families.forEach((f, i) => {
    if (i >= ips.length) ips.push('');
    want.set(f, ips[i]!);
  });
  const got = await allocIPs(net, svc, want, dryRun, txn);
  families.forEach((f, i) => {
    if (got.has(f)) ips[i] = got.get(f)!;
  });
  spec.clusterIPs = ips;
  if (ips[0]) spec.clusterIP = ips[0];
}

/** Kubernetes' PortAllocationOperation: ports taken now, releases deferred to commit. */
class PortOp {
  constructor(
    private readonly net: ServiceNetwork,
    private readonly dryRun: boolean,
    private readonly txn: Txn,
  ) {}
  async allocate(port: number): Promise<void> {
    await this.net.nodePorts.allocate(port, this.dryRun);
    if (!this.dryRun) this.txn.onRevert.push(() => this.net.nodePorts.release(port));
  }
  async allocateNext(): Promise<number> {
    const port = await this.net.nodePorts.allocateNext(this.dryRun);
    if (!this.dryRun) this.txn.onRevert.push(() => this.net.nodePorts.release(port));
    return port;
  }
  releaseDeferred(port: number): void {
    if (!this.dryRun) this.txn.onCommit.push(() => this.net.nodePorts.release(port));
  }
}

const shouldAllocateNodePorts = (svc: KObject) =>
  svc.spec?.type === 'NodePort' || (svc.spec?.type === 'LoadBalancer' && svc.spec?.allocateLoadBalancerNodePorts !== false);

function nodePortInvalid(svc: KObject, i: number, port: number, err: unknown) {
  if (!(err instanceof AllocationError)) return err;
  return invalidService(svc, [invalid(root('spec', 'ports').index(i).child('nodePort'), port, err.message)]);
}

async function nextNodePort(op: PortOp): Promise<number> {
  try {
    return await op.allocateNext();
  } catch (err) {
    if (err instanceof AllocationError) throw apiErrors.internal(`failed to allocate a nodePort: ${err.message}`);
    throw err;
  }
}

/** initNodePorts: ports named by the user are taken; the others get one each (one per service port number). */
async function initNodePorts(svc: KObject, op: PortOp): Promise<void> {
  const byPort = new Map<number, number>();
  const list = ports(svc);
  for (let i = 0; i < list.length; i++) {
    const sp = list[i]!;
    if (!sp.nodePort && !shouldAllocateNodePorts(svc)) continue;
    const allocated = byPort.get(sp.port) ?? 0;
    if (allocated === 0) {
      const requested = list.find((p) => p.port === sp.port && p.nodePort)?.nodePort ?? 0;
      if (requested) {
        await op.allocate(requested).catch((err: unknown) => {
          throw nodePortInvalid(svc, i, requested, err);
        });
        sp.nodePort = requested;
      } else {
        sp.nodePort = await nextNodePort(op);
      }
      byPort.set(sp.port, sp.nodePort);
    } else if (sp.nodePort !== allocated) {
      if (!sp.nodePort) sp.nodePort = allocated;
      else {
        const np: number = sp.nodePort;
        await op.allocate(np).catch((err: unknown) => {
          throw nodePortInvalid(svc, i, np, err);
        });
      }
    }
  }
}

async function allocHealthCheckNodePort(svc: KObject, op: PortOp): Promise<void> {
  const hc = svc.spec?.healthCheckNodePort ?? 0;
  try {
    if (hc) await op.allocate(hc);
    else svc.spec.healthCheckNodePort = await op.allocateNext();
  } catch (err) {
    if (err instanceof AllocationError) {
      throw apiErrors.internal(hc ? `failed to allocate requested HealthCheck NodePort ${hc}: ${err.message}` : `failed to allocate a HealthCheck NodePort ${hc}: ${err.message}`);
    }
    throw err;
  }
}

async function guarded(txn: Txn, work: () => Promise<void>): Promise<WriteTransaction> {
  try {
    await work();
    return txn;
  } catch (err) {
    await txn.revert();
    if (isStatusError(err)) throw err;
    throw apiErrors.internal((err as Error).message);
  }
}

/** allocateCreate: the family fields, cluster IPs and node ports of a new service. */
export function allocateCreate(net: ServiceNetwork, svc: KObject, dryRun: boolean): Promise<WriteTransaction> {
  const txn = new Txn();
  return guarded(txn, async () => {
    initIPFamilyFields(net, svc, null);
    await allocClusterIPs(net, svc, dryRun, txn);
    const op = new PortOp(net, dryRun, txn);
    if (svc.spec?.type === 'NodePort' || svc.spec?.type === 'LoadBalancer') await initNodePorts(svc, op);
    if (needsHealthCheck(svc)) await allocHealthCheckNodePort(svc, op);
  });
}

/** updateClusterIPs: allocate on a change from ExternalName or an upgrade to dual-stack; release on the reverse. */
async function updateClusterIPs(net: ServiceNetwork, svc: KObject, old: KObject, dryRun: boolean, txn: Txn): Promise<void> {
  if (unchangedPreferDualStack(svc, old)) return;
  const spec: Json = svc.spec;
  const release = (family: string, ip: string) => {
    const alloc = net.ipAllocators.get(family as IPFamily);
    if (alloc && !dryRun) txn.onCommit.push(() => alloc.release(ip));
  };
  if (old.spec?.type === 'ExternalName' && spec.type !== 'ExternalName') return allocClusterIPs(net, svc, dryRun, txn);
  if (strings(old.spec?.clusterIPs)[0] === CLUSTER_IP_NONE) return;
  const oldIPs = strings(old.spec?.clusterIPs);
  const oldFams = strings(old.spec?.ipFamilies);
  if (old.spec?.type !== 'ExternalName' && spec.type === 'ExternalName') {
    oldFams.forEach((f, i) => oldIPs[i] && release(f, oldIPs[i]));
    return;
  }
  const fams = strings(spec.ipFamilies) as IPFamily[];
  if (oldFams.length === 1 && fams.length === 2) {
    const ips = strings(spec.clusterIPs);
    if (ips.length < 2) ips.push('');
    const got = await allocIPs(net, svc, new Map([[fams[1]!, ips[1]!]]), dryRun, txn);
    ips[1] = got.get(fams[1]!)!;
    spec.clusterIPs = ips;
  } else if (oldFams.length === 2 && fams.length === 1 && oldIPs[1]) {
    release(oldFams[1]!, oldIPs[1]);
  }
}

const nodePortsOf = (svc: KObject): number[] => ports(svc).map((p) => p.nodePort as number).filter((n) => n);

async function updateNodePorts(svc: KObject, old: KObject, op: PortOp): Promise<void> {
  const oldPorts = nodePortsOf(old);
  const taken = new Set<number>();
  const seen = new Set<string>();
  const list = ports(svc);
  for (let i = 0; i < list.length; i++) {
    const sp = list[i]!;
    if (!sp.nodePort && !shouldAllocateNodePorts(svc)) continue;
    if (sp.nodePort) {
      const np: number = sp.nodePort;
      if (!oldPorts.includes(np) && !taken.has(np)) {
        await op.allocate(np).catch((err: unknown) => {
          throw nodePortInvalid(svc, i, np, err);
        });
        taken.add(np);
      }
    } else {
      sp.nodePort = await nextNodePort(op);
    }
    const key = `${sp.protocol}/${sp.nodePort}`;
    if (seen.has(key)) throw apiErrors.internal(`duplicate nodePort: {${sp.protocol} ${sp.nodePort}}`);
    seen.add(key);
  }
  const now = nodePortsOf(svc);
  for (const p of oldPorts) if (!now.includes(p)) op.releaseDeferred(p);
}

/** allocateUpdate: what a changed service needs taken, and what it no longer needs released on commit. */
export function allocateUpdate(net: ServiceNetwork, svc: KObject, old: KObject, dryRun: boolean): Promise<WriteTransaction> {
  const txn = new Txn();
  return guarded(txn, async () => {
    initIPFamilyFields(net, svc, old);
    await updateClusterIPs(net, svc, old, dryRun, txn);
    const op = new PortOp(net, dryRun, txn);
    const wasNodePort = old.spec?.type === 'NodePort' || old.spec?.type === 'LoadBalancer';
    const isNodePort = svc.spec?.type === 'NodePort' || svc.spec?.type === 'LoadBalancer';
    if (wasNodePort && (svc.spec?.type === 'ExternalName' || svc.spec?.type === 'ClusterIP')) for (const p of nodePortsOf(old)) op.releaseDeferred(p);
    if (isNodePort) await updateNodePorts(svc, old, op);
    const needed = needsHealthCheck(old);
    const needs = needsHealthCheck(svc);
    if (!needed && needs) await allocHealthCheckNodePort(svc, op);
    else if (needed && !needs && old.spec?.healthCheckNodePort) op.releaseDeferred(old.spec.healthCheckNodePort);
  });
}

/** releaseAllocatedResources: after a delete, the service's cluster IPs, node ports and health-check port. */
export async function releaseAllocated(net: ServiceNetwork, svc: KObject): Promise<void> {
  const spec: Json = svc.spec ?? {};
  const ignore = () => undefined;
  if (spec.type !== 'ExternalName' && strings(spec.clusterIPs)[0] !== CLUSTER_IP_NONE) {
    for (const ip of strings(spec.clusterIPs)) {
      const fam = familyOf(ip);
      if (fam) await net.ipAllocators.get(fam)?.release(ip).catch(ignore);
    }
  }
  for (const p of nodePortsOf(svc)) await net.nodePorts.release(p).catch(ignore);
  if (needsHealthCheck(svc) && spec.healthCheckNodePort > 0) await net.nodePorts.release(spec.healthCheckNodePort).catch(ignore);
}
