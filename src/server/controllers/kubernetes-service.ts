/**
 * The cluster plumbing of Kubernetes 1.23's bootstrap controller (pkg/controlplane/controller.go and
 * pkg/controlplane/reconcilers):
 *   - the Service network of the server (--service-cluster-ip-range, --service-node-port-range) and its
 *     repair: at start, before serving, and every 3 minutes, the allocators' bitmaps are rebuilt from the
 *     stored Services (addresses held by no Service stay taken for 3 repairs, in case their Service is
 *     still being written);
 *   - the `kubernetes` Service in --master-service-namespace (default `default`): port 443 named https to
 *     --secure-port, cluster IP the first address of the primary range, type NodePort with
 *     --orchestrator-service-node-port when it is set; created at start and whenever it is missing (checked
 *     every 10 s and at once when it is deleted); its ports and type are corrected at start;
 *   - its Endpoints, kept by --endpoint-reconciler-type: `lease` (every server renews a 15 s storage lease
 *     under <prefix>/masterleases/<ip> every 10 s and the Endpoints list the servers holding one),
 *     `master-count` (each server adds itself and keeps at most --apiserver-count addresses), `none`.
 *     A stopping server takes itself out.
 */
import { storageEncoding } from '../../registry/storagecodec.js';
import { readFileSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import { isStatusError } from '../../registry/errors.js';
import type { KObject } from '../../registry/kind.js';
import type { Registry } from '../../registry/registry.js';
import type { ResourceStore } from '../../registry/store.js';
import { CIDR, familyOf } from '../../registry/allocators/ip.js';
import { DEFAULT_SERVICE_IP_CIDR, ServiceNetwork } from '../../registry/allocators/service-network.js';
import type { Storage } from '../../storage/factory.js';
import type { KV } from '../../storage/interface.js';
import { subscribe } from './runner.js';

export const KUBERNETES_SERVICE_NAME = 'kubernetes';
/** DefaultEndpointReconcilerInterval and DefaultEndpointReconcilerTTL. */
export const ENDPOINT_INTERVAL_MS = 10_000;
export const MASTER_LEASE_TTL_SECONDS = 15;
/** How often the allocators are repaired from the stored Services (Kubernetes' repair interval). */
export const REPAIR_INTERVAL_MS = 3 * 60_000;
const SKIP_MIRROR_LABEL = 'endpointslice.kubernetes.io/skip-mirror';
const SYSTEM = { name: 'system:apiserver', groups: ['system:masters'] };

export type EndpointReconcilerType = 'lease' | 'master-count' | 'none';

// ---- the advertised address -------------------------------------------------------------------------------

/** The interface of the IPv4 default route, from /proc/net/route (Linux); undefined elsewhere. */
function defaultRouteInterface(): string | undefined {
  try {
    for (const line of readFileSync('/proc/net/route', 'utf8').split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length > 2 && f[1] === '00000000') return f[0];
    }
  } catch {
    // not Linux
  }
  return undefined;
}

/**
 * Kubernetes' choice of the address the server advertises: --advertise-address, else --bind-address when
 * it is neither unspecified nor loopback, else the host's default interface (the IPv4 address of the
 * default route's interface, as ChooseHostInterface), else any global address, else the bind address.
 */
export function chooseAdvertiseAddress(advertise: string | undefined, bindAddress: string): string {
  if (advertise && advertise !== '0.0.0.0' && advertise !== '::') return advertise;
  const unspecified = bindAddress === '' || bindAddress === '0.0.0.0' || bindAddress === '::';
  const loopback = bindAddress.startsWith('127.') || bindAddress === '::1';
  if (!unspecified && !loopback) return bindAddress;
  const ifaces = networkInterfaces();
  const global = (a: { internal: boolean; address: string }) => !a.internal && !a.address.startsWith('fe80:') && !a.address.startsWith('169.254.');
  const route = defaultRouteInterface();
  const onRoute = route ? (ifaces[route] ?? []).filter((a) => a.family === 'IPv4' && global(a)) : [];
  if (onRoute[0]) return onRoute[0].address;
  const all = Object.values(ifaces).flatMap((l) => l ?? []).filter(global);
  const pick = all.find((a) => a.family === 'IPv4') ?? all[0];
  if (pick) return pick.address;
  return unspecified ? '127.0.0.1' : bindAddress;
}

// ---- the service network and its repair --------------------------------------------------------------------

export interface ServiceNetworkOptions {
  serviceClusterIpRange?: string;
  serviceNodePortRange: { min: number; max: number };
  /** --storage-media-type: the range allocators' bitmaps are stored in it too. */
  storageMediaType?: string;
}

/** kube-apiserver's maxCIDRBits: a service range holds at most 2^20 addresses (the bitmap is stored whole). */
const MAX_CIDR_BITS = 20;

/**
 * Startup checks of the service options, with Kubernetes' messages: the size of each range, the
 * kubernetes Service's node port inside --service-node-port-range, and (unless the reconciler is none)
 * the advertised address in the family of the primary range. Warns when no range is given.
 */
export function checkServiceNetworkOptions(
  o: ServiceNetworkOptions & { orchestratorServiceNodePort: number; endpointReconcilerType: string },
  publicIP: string,
  log: (m: string) => void,
): void {
  const cidrs = (o.serviceClusterIpRange ?? '').split(',').map((c) => c.trim()).filter((c) => c !== '');
  if (cidrs.length === 0) {
    log(
      `no CIDR for service cluster IPs specified. Default value which was ${DEFAULT_SERVICE_IP_CIDR} is deprecated and will be removed in future releases. Please specify it using --service-cluster-ip-range on orch-apiserver.`,
    );
    cidrs.push(DEFAULT_SERVICE_IP_CIDR);
  }
  for (const [i, text] of cidrs.entries()) {
    const cidr = CIDR.parse(text);
    if (cidr.bits - cidr.prefix > MAX_CIDR_BITS) {
      const flag = i === 0 ? '--service-cluster-ip-range' : 'secondary --service-cluster-ip-range';
      throw new Error(`specified ${flag} is too large; for ${cidr.bits}-bit addresses, the mask must be >= ${cidr.bits - MAX_CIDR_BITS}`);
    }
  }
  const np = o.orchestratorServiceNodePort;
  const range = o.serviceNodePortRange;
  if (np > 0 && (np < range.min || np > range.max)) {
    throw new Error(`kubernetes service node port range ${range.min}-${range.max} doesn't contain ${np}`);
  }
  const primary = CIDR.parse(cidrs[0]!);
  if (o.endpointReconcilerType !== 'none' && familyOf(publicIP) !== primary.family) {
    throw new Error(`service IP family "${primary.toString()}" must match public address family "${publicIP}"`);
  }
}

/** The server's ServiceNetwork over its storage (the keys live under --kvstore-prefix). */
export function serviceNetworkFrom(o: ServiceNetworkOptions, storage: Storage): ServiceNetwork {
  const kv: KV = storage.kvFor('', 'serviceipallocations');
  return new ServiceNetwork(kv, storage.prefix, {
    clusterIPRange: o.serviceClusterIpRange ?? '',
    nodePorts: o.serviceNodePortRange,
    storageEncoding: storageEncoding(o.storageMediaType ?? 'application/json'),
  });
}

const strings = (v: unknown): string[] => (Array.isArray(v) ? (v as unknown[]).map(String) : []);

/**
 * One repair of every allocator (Kubernetes' ipallocator and portallocator repair controllers): what the
 * stored Services hold is taken, what none holds is freed after three repairs. Addresses outside the
 * ranges and addresses or ports held twice are reported, as Kubernetes reports them.
 */
export async function repairServiceNetwork(services: ResourceStore, net: ServiceNetwork, log: (m: string) => void): Promise<void> {
  const list = (await services.list({ namespace: '' }, {})).items as KObject[];
  const ips = new Map<string, number[]>();
  const ports: number[] = [];
  const seenIP = new Set<string>();
  const seenPort = new Set<number>();
  for (const svc of list) {
    const who = `${svc.metadata?.namespace}/${svc.metadata?.name}`;
    if (svc.spec?.type !== 'ExternalName' && strings(svc.spec?.clusterIPs)[0] !== 'None') {
      for (const ip of strings(svc.spec?.clusterIPs)) {
        const alloc = net.ipAllocators.get(familyOf(ip) as 'IPv4' | 'IPv6');
        const off = alloc ? alloc.range.offsetOf(ip) : -1;
        if (!alloc || off < 0) {
          log(`the cluster IP ${ip} for service ${who} is not within the service CIDR; please recreate`);
          continue;
        }
        if (seenIP.has(ip)) log(`the cluster IP ${ip} for service ${who} was assigned to multiple services; please recreate`);
        seenIP.add(ip);
        const l = ips.get(alloc.family) ?? [];
        l.push(off);
        ips.set(alloc.family, l);
      }
    }
    const held = [...((svc.spec?.ports ?? []) as KObject[]).map((p) => p?.nodePort as number), svc.spec?.healthCheckNodePort as number];
    for (const p of held) {
      if (!p) continue;
      if (!net.nodePorts.contains(p)) {
        log(`the node port ${p} for service ${who} is not within the port range ${net.nodePorts.rangeText}; please recreate`);
        continue;
      }
      if (seenPort.has(p)) log(`the node port ${p} for service ${who} was assigned to multiple services; please recreate`);
      seenPort.add(p);
      ports.push(p - net.nodePorts.min);
    }
  }
  for (const [family, alloc] of net.ipAllocators) {
    for (const off of await alloc.store.repair(ips.get(family) ?? [])) log(`the cluster IP ${alloc.range.ipAt(off)} appears to have leaked: cleaning up`);
  }
  for (const off of await net.nodePorts.store.repair(ports)) log(`the node port ${net.nodePorts.min + off} appears to have leaked: cleaning up`);
}

// ---- the kubernetes Service and its Endpoints -----------------------------------------------------------------

export interface KubernetesServiceConfig {
  net: ServiceNetwork;
  /** --master-service-namespace. */
  namespace: string;
  /** The advertised address (chooseAdvertiseAddress). */
  publicIP: string;
  /** The bound secure port (known once the server listens). */
  securePort(): number;
  /** --orchestrator-service-node-port (0: ClusterIP). */
  nodePort: number;
  reconciler: EndpointReconcilerType;
  /** --apiserver-count. */
  apiserverCount: number;
  /** The storage the master leases live in, and --kvstore-prefix. */
  kv: KV;
  prefix: string;
  log: (m: string) => void;
}

type Json = Record<string, any>;

function servicePorts(cfg: KubernetesServiceConfig): Json[] {
  const port: Json = { name: 'https', protocol: 'TCP', port: 443, targetPort: cfg.securePort() };
  if (cfg.nodePort > 0) port.nodePort = cfg.nodePort;
  return [port];
}

const endpointPorts = (cfg: KubernetesServiceConfig): Json[] => [{ name: 'https', port: cfg.securePort(), protocol: 'TCP' }];

/** checkServiceFormat: the ports (as created) and type are what the options say. */
function serviceFormatCorrect(svc: KObject, ports: Json[], type: string): boolean {
  if (svc.spec?.type !== type) return false;
  const have = (svc.spec?.ports ?? []) as Json[];
  return (
    have.length === ports.length &&
    ports.every((p, i) => {
      const h = have[i] ?? {};
      return h.name === p.name && h.protocol === p.protocol && h.port === p.port && h.targetPort === p.targetPort && (h.nodePort ?? 0) === (p.nodePort ?? 0);
    })
  );
}

/** The addresses an Endpoints object should list, and how to read and write the master leases. */
class MasterLeases {
  constructor(
    private readonly kv: KV,
    private readonly root: string,
  ) {}

  async update(ip: string): Promise<void> {
    const key = this.root + ip;
    const value = Buffer.from(JSON.stringify({ kind: 'Endpoints', apiVersion: 'v1', metadata: { name: ip, creationTimestamp: null } }));
    const lease = await this.kv.grantLease(MASTER_LEASE_TTL_SECONDS);
    const { kv } = await this.kv.get(key);
    if (kv) await this.kv.update(key, value, kv.modRevision, { lease });
    else await this.kv.create(key, value, { lease });
  }

  async remove(ip: string): Promise<void> {
    await this.kv.delete(this.root + ip).catch(() => undefined);
  }

  async list(): Promise<string[]> {
    return (await this.kv.list(this.root)).kvs.map((kv) => kv.key.slice(this.root.length));
  }
}

const compareIPs = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** One sync of the kubernetes Service and its Endpoints; `reconcile` also corrects the Service's ports and type. */
export class KubernetesServiceController {
  private readonly services: ResourceStore;
  private readonly endpoints: ResourceStore;
  private readonly namespaces: ResourceStore;
  private readonly leases: MasterLeases;
  private timer: NodeJS.Timeout | undefined;
  private repairTimer: NodeJS.Timeout | undefined;
  private unsubscribe: (() => void)[] = [];
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = false;

  constructor(
    registry: Registry,
    private readonly cfg: KubernetesServiceConfig,
  ) {
    this.services = registry.store('', 'v1', 'services')!;
    this.endpoints = registry.store('', 'v1', 'endpoints')!;
    this.namespaces = registry.store('', 'v1', 'namespaces')!;
    this.leases = new MasterLeases(cfg.kv, `${cfg.prefix}/masterleases/`);
  }

  /** The first sync (reconciling the Service), then one every 10 s and on deletions; repairs every 3 minutes. */
  async start(): Promise<void> {
    await this.sync(true).catch((err: unknown) => this.cfg.log(`unable to sync kubernetes service: ${(err as Error).message}`));
    const ns = this.cfg.namespace;
    const onDelete = (name: string) => ({
      event: (ev: { type: string; object: KObject }) => {
        if (ev.type === 'DELETED' && ev.object.metadata?.namespace === ns && ev.object.metadata?.name === name) this.kick();
      },
    });
    this.unsubscribe = [subscribe(this.services, onDelete(KUBERNETES_SERVICE_NAME)), subscribe(this.endpoints, onDelete(KUBERNETES_SERVICE_NAME))];
    this.timer = setInterval(() => this.kick(), ENDPOINT_INTERVAL_MS);
    this.timer.unref();
    this.repairTimer = setInterval(() => {
      void repairServiceNetwork(this.services, this.cfg.net, this.cfg.log).catch((err: unknown) =>
        this.cfg.log(`unable to repair the service allocations: ${(err as Error).message}`),
      );
    }, REPAIR_INTERVAL_MS);
    this.repairTimer.unref();
  }

  /** Runs a sync now, or once more after the one running. */
  private kick(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.sync(false)
      .catch((err: unknown) => {
        if (!this.stopped) this.cfg.log(`unable to sync kubernetes service: ${(err as Error).message}`);
      })
      .finally(() => {
        this.running = undefined;
        if (this.again) {
          this.again = false;
          this.kick();
        }
      });
  }

  /** Stops the loops and takes this server out of the Endpoints (PreShutdownHook). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    clearInterval(this.repairTimer);
    for (const u of this.unsubscribe) u();
    await this.running;
    if (this.cfg.reconciler === 'none') return;
    try {
      if (this.cfg.reconciler === 'lease') {
        await this.leases.remove(this.cfg.publicIP);
        await this.reconcileLease(false);
      } else {
        await this.removeMasterCount();
      }
    } catch (err) {
      this.cfg.log(`unable to remove endpoints from kubernetes service: ${(err as Error).message}`);
    }
  }

  /** UpdateKubernetesService. */
  async sync(reconcile: boolean): Promise<void> {
    await this.ensureNamespace();
    await this.ensureService(reconcile);
    if (this.cfg.reconciler === 'lease') {
      await this.leases.update(this.cfg.publicIP);
      await this.reconcileLease(reconcile);
    } else if (this.cfg.reconciler === 'master-count') {
      await this.reconcileMasterCount(reconcile);
    }
  }

  private async ensureNamespace(): Promise<void> {
    try {
      await this.namespaces.create({ namespace: '', user: SYSTEM }, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: this.cfg.namespace } });
    } catch (err) {
      if (!isStatusError(err, 'AlreadyExists')) throw err;
    }
  }

  /** CreateOrUpdateMasterServiceIfNeeded. */
  private async ensureService(reconcile: boolean): Promise<void> {
    const scope = { namespace: this.cfg.namespace, user: SYSTEM };
    const ports = servicePorts(this.cfg);
    const type = this.cfg.nodePort > 0 ? 'NodePort' : 'ClusterIP';
    let current: KObject | undefined;
    try {
      current = await this.services.get(scope, KUBERNETES_SERVICE_NAME);
    } catch (err) {
      if (!isStatusError(err, 'NotFound')) throw err;
    }
    if (current) {
      if (!reconcile || serviceFormatCorrect(current, ports, type)) return;
      this.cfg.log(`resetting master service "${KUBERNETES_SERVICE_NAME}" to type ${type} and port 443 -> ${this.cfg.securePort()}`);
      await this.services.update(scope, KUBERNETES_SERVICE_NAME, (cur) => {
        const next = structuredClone(cur!);
        next.spec = { ...next.spec, ports, type };
        return next;
      });
      return;
    }
    try {
      await this.services.create(scope, {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: KUBERNETES_SERVICE_NAME, namespace: this.cfg.namespace, labels: { provider: 'kubernetes', component: 'apiserver' } },
        spec: { ports, clusterIP: this.cfg.net.apiServerServiceIP, ipFamilyPolicy: 'SingleStack', sessionAffinity: 'None', type },
      });
    } catch (err) {
      if (isStatusError(err, 'AlreadyExists')) return this.ensureService(reconcile);
      throw err;
    }
  }

  private async getEndpoints(): Promise<KObject | null> {
    try {
      return await this.endpoints.get({ namespace: this.cfg.namespace }, KUBERNETES_SERVICE_NAME);
    } catch (err) {
      if (isStatusError(err, 'NotFound')) return null;
      throw err;
    }
  }

  /** Creates or replaces the Endpoints with these addresses (and the skip-mirror label). */
  private async writeEndpoints(current: KObject | null, ips: string[]): Promise<void> {
    const scope = { namespace: this.cfg.namespace, user: SYSTEM };
    const ep: KObject = current
      ? structuredClone(current)
      : { apiVersion: 'v1', kind: 'Endpoints', metadata: { name: KUBERNETES_SERVICE_NAME, namespace: this.cfg.namespace } };
    ep.metadata!.labels = { ...(ep.metadata!.labels ?? {}), [SKIP_MIRROR_LABEL]: 'true' };
    if (ips.length === 0) delete ep.subsets;
    else ep.subsets = [{ addresses: ips.map((ip) => ({ ip })), ports: endpointPorts(this.cfg) }];
    if (current) await this.endpoints.update(scope, KUBERNETES_SERVICE_NAME, () => ep);
    else await this.endpoints.create(scope, ep);
  }

  /** Whether the Endpoints already list exactly these addresses with the expected ports and label. */
  private endpointsCorrect(ep: KObject, ips: string[], reconcilePorts: boolean): boolean {
    const subsets = (ep.subsets ?? []) as Json[];
    if (ep.metadata?.labels?.[SKIP_MIRROR_LABEL] !== 'true') return false;
    if (ips.length === 0) return subsets.length === 0;
    if (subsets.length !== 1) return false;
    const have = ((subsets[0]!.addresses ?? []) as Json[]).map((a) => String(a.ip)).sort(compareIPs);
    if (JSON.stringify(have) !== JSON.stringify([...ips].sort(compareIPs))) return false;
    if (!reconcilePorts) return true;
    const want = endpointPorts(this.cfg);
    const ports = (subsets[0]!.ports ?? []) as Json[];
    return ports.length === want.length && want.every((p, i) => ports[i]?.name === p.name && ports[i]?.port === p.port && ports[i]?.protocol === p.protocol);
  }

  /** The lease reconciler's doReconcile: the Endpoints list every server holding a master lease. */
  private async reconcileLease(reconcilePorts: boolean): Promise<void> {
    const current = await this.getEndpoints();
    const ips = (await this.leases.list()).sort(compareIPs);
    if (current && this.endpointsCorrect(current, ips, reconcilePorts)) return;
    if (!current && ips.length === 0) return;
    await this.writeEndpoints(current, ips);
  }

  /** The master-count reconciler: this server is always listed, at most --apiserver-count addresses. */
  private async reconcileMasterCount(reconcilePorts: boolean): Promise<void> {
    const current = await this.getEndpoints();
    const ip = this.cfg.publicIP;
    const subsets = (current?.subsets ?? []) as Json[];
    const ips = subsets.length === 1 ? ((subsets[0]!.addresses ?? []) as Json[]).map((a) => String(a.ip)) : [];
    const portsOk = !current || this.endpointsCorrect(current, ips, reconcilePorts);
    if (current && ips.includes(ip) && ips.length <= this.cfg.apiserverCount && portsOk) return;
    if (!ips.includes(ip)) ips.push(ip);
    ips.sort(compareIPs);
    // Too many: drop the addresses after ours (wrapping around), as Kubernetes does.
    while (ips.length > this.cfg.apiserverCount) ips.splice((ips.indexOf(ip) + 1) % ips.length, 1);
    await this.writeEndpoints(current, ips);
  }

  private async removeMasterCount(): Promise<void> {
    const current = await this.getEndpoints();
    if (!current) return;
    const subsets = (current.subsets ?? []) as Json[];
    const ips = subsets.length === 1 ? ((subsets[0]!.addresses ?? []) as Json[]).map((a) => String(a.ip)) : [];
    if (!ips.includes(this.cfg.publicIP)) return;
    await this.writeEndpoints(current, ips.filter((a) => a !== this.cfg.publicIP));
  }
}
