/**
 * Service references (an admission webhook's clientConfig.service, an APIService's spec.service) to an
 * address, as kube-apiserver 1.23's service resolver does (buildServiceResolver in cmd/kube-apiserver):
 *   - the loopback resolver first: `kubernetes` in `default` on port 443 is this server itself, reached at
 *     its loopback address (LoopbackHostPort: 127.0.0.1 or ::1 when bound to every address);
 *   - then, with --enable-aggregator-routing, ResolveEndpoint: a random ready address of the Service's
 *     Endpoints for the port of the same name;
 *   - else ResolveCluster: the Service's cluster IP (an ExternalName Service: its external name) and the
 *     asked port.
 * Errors carry the messages of apiserver/pkg/util/proxy's resolvers.
 */
import type { KObject } from './kind.js';
import type { ResourceStore } from './store.js';
import { isStatusError } from './errors.js';

type Json = Record<string, any>;

export interface ServiceAddress {
  host: string;
  port: number;
}

export interface ServiceResolverDeps {
  services: () => ResourceStore | undefined;
  /** Present with --enable-aggregator-routing: resolve to an Endpoints address instead of the cluster IP. */
  endpoints?: () => ResourceStore | undefined;
  /** This server's loopback address (undefined until it listens). */
  loopback?: () => ServiceAddress | undefined;
}

/** The Service that is this server (the loopback resolver's match). */
export function isLoopbackService(namespace: string, name: string, port: number): boolean {
  return namespace === 'default' && name === 'kubernetes' && port === 443;
}

/** A lister's Get: the object, or the error a lister gives for a missing one ('<resource> "<name>" not found'). */
async function lookup(store: ResourceStore | undefined, resource: string, namespace: string, name: string): Promise<KObject> {
  if (!store) throw new Error(`${resource} "${name}" not found`);
  try {
    return await store.get({ namespace }, name);
  } catch (err) {
    if (isStatusError(err, 'NotFound')) throw new Error(`${resource} "${name}" not found`, { cause: err });
    if (isStatusError(err)) throw new Error(err.status.message ?? `${resource} lookup failed`, { cause: err });
    throw err;
  }
}

function findServicePort(service: KObject, name: string, port: number): Json {
  const spec = (service['spec'] ?? {}) as Json;
  const found = ((spec['ports'] ?? []) as Json[]).find((p) => p['port'] === port);
  if (!found) throw new Error(`no service port ${port} found for service "${name}"`);
  return found;
}

/** ResolveCluster. */
async function resolveCluster(deps: ServiceResolverDeps, namespace: string, name: string, port: number): Promise<ServiceAddress> {
  const service = await lookup(deps.services(), 'service', namespace, name);
  const spec = (service['spec'] ?? {}) as Json;
  const type = (spec['type'] as string | undefined) ?? 'ClusterIP';
  if (type === 'ClusterIP' && spec['clusterIP'] === 'None') throw new Error('cannot route to service with ClusterIP "None"');
  if (type === 'ClusterIP' || type === 'LoadBalancer' || type === 'NodePort') {
    findServicePort(service, name, port);
    return { host: String(spec['clusterIP'] ?? ''), port };
  }
  if (type === 'ExternalName') return { host: String(spec['externalName'] ?? ''), port };
  throw new Error(`unsupported service type "${type}"`);
}

/** ResolveEndpoint. */
async function resolveEndpoint(deps: ServiceResolverDeps, namespace: string, name: string, port: number): Promise<ServiceAddress> {
  const service = await lookup(deps.services(), 'service', namespace, name);
  const type = ((service['spec'] ?? {}) as Json)['type'] ?? 'ClusterIP';
  if (type !== 'ClusterIP' && type !== 'LoadBalancer' && type !== 'NodePort') throw new Error(`unsupported service type "${String(type)}"`);
  const portName = String(findServicePort(service, name, port)['name'] ?? '');
  const endpoints = await lookup(deps.endpoints?.(), 'endpoints', namespace, name);
  for (const subset of (endpoints['subsets'] ?? []) as Json[]) {
    const ep = ((subset['ports'] ?? []) as Json[]).find((p) => String(p['name'] ?? '') === portName);
    const addresses = (subset['addresses'] ?? []) as Json[];
    if (!ep || addresses.length === 0) continue;
    const address = addresses[Math.floor(Math.random() * addresses.length)]!;
    return { host: String(address['ip'] ?? ''), port: Number(ep['port']) };
  }
  throw new Error(`no endpoints available for service "${name}"`);
}

/** The address a service reference reaches; throws an Error worded as Kubernetes' resolvers word it. */
export async function resolveServiceReference(deps: ServiceResolverDeps, namespace: string, name: string, port: number): Promise<ServiceAddress> {
  if (isLoopbackService(namespace, name, port)) {
    const self = deps.loopback?.();
    if (self) return self;
  }
  return deps.endpoints ? resolveEndpoint(deps, namespace, name, port) : resolveCluster(deps, namespace, name, port);
}
