/**
 * Service defaulting and the strategy's field fix-ups, as Kubernetes 1.23 does them:
 *   - SetDefaults_Service (pkg/apis/core/v1/defaults.go): sessionAffinity None, type ClusterIP, port
 *     protocol TCP, targetPort = port, externalTrafficPolicy Cluster for NodePort/LoadBalancer,
 *     internalTrafficPolicy Cluster, allocateLoadBalancerNodePorts true for LoadBalancer; ClientIP
 *     affinity gets the 10800 s timeout. (ipFamilyPolicy and ipFamilies depend on the cluster's ranges:
 *     the allocator sets them, see alloc.ts.)
 *   - NormalizeClusterIPs (pkg/api/service/util): keeps clusterIP and clusterIPs in step
 *   - patchAllocatedValues (pkg/registry/core/service/storage): an update that omits allocated values
 *     keeps them
 *   - dropTypeDependentFields (pkg/registry/core/service/strategy.go): a type change wipes the values
 *     the old type allocated, unless the user changed them
 */
import type { KObject } from '../../kind.js';
import { CLUSTER_IP_NONE, needsHealthCheck } from './validation.js';

type Json = Record<string, any>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const strings = (v: unknown): string[] => (Array.isArray(v) ? (v as unknown[]).map(String) : []);
const sameList = (a: unknown, b: unknown) => JSON.stringify(strings(a)) === JSON.stringify(strings(b));

export const DEFAULT_CLIENT_IP_AFFINITY_SECONDS = 10800;

export function setDefaultsService(obj: KObject): void {
  const spec: Json = isObject(obj.spec) ? obj.spec : (obj.spec = {});
  if (!spec.sessionAffinity) spec.sessionAffinity = 'None';
  if (spec.sessionAffinity === 'ClientIP' && !(typeof spec.sessionAffinityConfig?.clientIP?.timeoutSeconds === 'number')) {
    spec.sessionAffinityConfig = { clientIP: { timeoutSeconds: DEFAULT_CLIENT_IP_AFFINITY_SECONDS } };
  }
  if (!spec.type) spec.type = 'ClusterIP';
  if (Array.isArray(spec.ports)) {
    for (const p of spec.ports as unknown[]) {
      if (!isObject(p)) continue;
      if (!p.protocol) p.protocol = 'TCP';
      if (p.targetPort === undefined || p.targetPort === null || p.targetPort === 0 || p.targetPort === '') p.targetPort = p.port;
    }
  }
  if ((spec.type === 'NodePort' || spec.type === 'LoadBalancer') && !spec.externalTrafficPolicy) spec.externalTrafficPolicy = 'Cluster';
  if (spec.internalTrafficPolicy === undefined || spec.internalTrafficPolicy === null) spec.internalTrafficPolicy = 'Cluster';
  if (spec.type === 'LoadBalancer' && (spec.allocateLoadBalancerNodePorts === undefined || spec.allocateLoadBalancerNodePorts === null)) {
    spec.allocateLoadBalancerNodePorts = true;
  }
}

/** NormalizeClusterIPs(old, new): fills clusterIPs from clusterIP where the user set only the singular. */
export function normalizeClusterIPs(old: KObject | null, svc: KObject): void {
  const spec: Json = (svc.spec ??= {});
  const ip = typeof spec.clusterIP === 'string' ? spec.clusterIP : '';
  const ips = strings(spec.clusterIPs);
  if (!old) {
    if (ip !== '' && ips.length === 0) spec.clusterIPs = [ip];
    return;
  }
  const oldIP = typeof old.spec?.clusterIP === 'string' ? old.spec.clusterIP : '';
  const oldIPs = strings(old.spec?.clusterIPs);
  if (oldIPs.length > 0 && ips.length === 0 && oldIP === ip) spec.clusterIPs = oldIPs;
  if (oldIP !== ip) {
    if (oldIP !== '' && ip === '' && sameList(oldIPs, spec.clusterIPs)) delete spec.clusterIPs;
    if (sameList(oldIPs, spec.clusterIPs)) spec.clusterIPs = [ip];
  }
}

const needsClusterIP = (svc: KObject) => svc.spec?.type !== 'ExternalName';
const needsNodePort = (svc: KObject) => svc.spec?.type === 'NodePort' || svc.spec?.type === 'LoadBalancer';

/** patchAllocatedValues: clusterIP(s), node ports (by port name) and the health-check port an update left out. */
export function patchAllocatedValues(svc: KObject, old: KObject): void {
  const spec: Json = (svc.spec ??= {});
  if (needsClusterIP(old) && needsClusterIP(svc)) {
    if (!spec.clusterIP && old.spec?.clusterIP) spec.clusterIP = old.spec.clusterIP;
    if (strings(spec.clusterIPs).length === 0 && strings(old.spec?.clusterIPs).length > 0) spec.clusterIPs = [...strings(old.spec.clusterIPs)];
  }
  if (needsNodePort(old) && needsNodePort(svc)) {
    const used = (s: KObject) => new Set(((s.spec?.ports ?? []) as Json[]).map((p) => p?.nodePort).filter((n) => n));
    const newUsed = used(svc);
    const taken = new Set([...used(old)].filter((n) => newUsed.has(n)));
    const byName = new Map<string, number>();
    for (const p of (old.spec?.ports ?? []) as Json[]) if (isObject(p)) byName.set(p.name ?? '', p.nodePort ?? 0);
    for (const p of (spec.ports ?? []) as Json[]) {
      if (!isObject(p) || p.nodePort) continue;
      const v = byName.get(p.name ?? '');
      if (v && !taken.has(v)) p.nodePort = v;
    }
  }
  if (needsHealthCheck(old) && needsHealthCheck(svc) && !spec.healthCheckNodePort && old.spec?.healthCheckNodePort) {
    spec.healthCheckNodePort = old.spec.healthCheckNodePort;
  }
}

/** dropTypeDependentFields: values a type change makes meaningless, when the user left them as they were. */
export function dropTypeDependentFields(svc: KObject, old: KObject): void {
  const spec: Json = (svc.spec ??= {});
  const oldSpec: Json = isObject(old.spec) ? old.spec : {};
  if (needsClusterIP(old) && !needsClusterIP(svc)) {
    if (sameList(oldSpec.clusterIPs, spec.clusterIPs) && (oldSpec.clusterIP ?? '') === (spec.clusterIP ?? '')) {
      delete spec.clusterIP;
      delete spec.clusterIPs;
    }
    if (sameList(oldSpec.ipFamilies, spec.ipFamilies)) delete spec.ipFamilies;
    if ((oldSpec.ipFamilyPolicy ?? null) === (spec.ipFamilyPolicy ?? null)) delete spec.ipFamilyPolicy;
  }
  const nodePorts = (s: Json) => JSON.stringify(((s.ports ?? []) as Json[]).map((p) => p?.nodePort ?? 0));
  if (needsNodePort(old) && !needsNodePort(svc) && nodePorts(oldSpec) === nodePorts(spec)) {
    for (const p of (spec.ports ?? []) as Json[]) if (isObject(p)) delete p.nodePort;
  }
  if (needsHealthCheck(old) && !needsHealthCheck(svc) && (oldSpec.healthCheckNodePort ?? 0) === (spec.healthCheckNodePort ?? 0)) {
    delete spec.healthCheckNodePort;
  }
  if (oldSpec.type === 'LoadBalancer' && spec.type !== 'LoadBalancer') {
    if (spec.allocateLoadBalancerNodePorts !== undefined && spec.allocateLoadBalancerNodePorts === oldSpec.allocateLoadBalancerNodePorts) {
      delete spec.allocateLoadBalancerNodePorts;
    }
    if ((spec.loadBalancerClass ?? null) === (oldSpec.loadBalancerClass ?? null)) delete spec.loadBalancerClass;
  }
  if (needsNodePort(old) && !needsNodePort(svc) && (spec.externalTrafficPolicy ?? '') === (oldSpec.externalTrafficPolicy ?? '')) {
    delete spec.externalTrafficPolicy;
  }
  if (spec.type !== 'LoadBalancer' && isObject(svc.status)) svc.status.loadBalancer = {};
}

/** Whether the service is headless: its only cluster IP is 'None'. */
export function headlessSpec(spec: Json): boolean {
  const ips = strings(spec.clusterIPs);
  return ips.length > 0 && ips[0] === CLUSTER_IP_NONE;
}
