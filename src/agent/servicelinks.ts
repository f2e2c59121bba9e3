// Service links: the environment variables kubelet gives every container for Services
// (pkg/kubelet/envvars FromServices and kubelet_pods.go getServiceEnvVarMap, 1.23).
//
// Which Services: those of the pod's namespace when pod.spec.enableServiceLinks (default true), and
// always the `kubernetes` Service of --master-service-namespace (default "default"). Services without
// a cluster IP (headless, "None", or none yet) give nothing. For each, with NAME its name upper-cased
// and '-' turned into '_':
//   NAME_SERVICE_HOST=<clusterIP>, NAME_SERVICE_PORT=<first port>, NAME_SERVICE_PORT_<PORTNAME>=<port>
//   for each named port, and Docker's link variables: NAME_PORT=<proto>://<ip>:<first port>, and per
//   port NAME_PORT_<port>_<PROTO>=<proto>://<ip>:<port> with _PROTO, _PORT and _ADDR beside it.
// The variables come after the container's own env and never replace one of them (env.ts).
//
// In API-server mode the Services come from one list+watch of /api/v1/services (all namespaces, as
// kubelet's informer). Until its first list, a pod from the API server cannot get its environment:
// the error below (kubelet's) fails that sync and it is retried; static pods go on with what is known.
import { isStatic } from './apimode.js';
import type { ApiClient, Json } from './client/client.js';
import { Reflector } from './client/reflector.js';
import type { Pod } from './types.js';

/** Service names whose variables come from --master-service-namespace whatever the pod's namespace. */
const MASTER_SERVICES = new Set(['kubernetes']);

export const SERVICES_NOT_SYNCED = 'services have not yet been read at least once, cannot construct envvars';

/** What env.ts asks for: the service variables of a pod (may throw SERVICES_NOT_SYNCED). */
export interface ServiceEnvSource {
  envFor(pod: Pod): Map<string, string>;
}

const envName = (s: string): string => s.replace(/-/g, '_').toUpperCase();

/** Has a cluster IP that is not "None" (v1helper.IsServiceIPSet). */
function hasClusterIP(svc: Json): boolean {
  const ip = (svc.spec as Json | undefined)?.clusterIP;
  return typeof ip === 'string' && ip !== '' && ip !== 'None';
}

/** net.JoinHostPort: IPv6 addresses in brackets. */
const joinHostPort = (host: string, port: number): string => (host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`);

/** The variables of these Services (envvars.FromServices), in kubelet's order. */
export function serviceEnvVars(services: readonly Json[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const svc of services) {
    if (!hasClusterIP(svc)) continue;
    const spec = svc.spec as Json;
    const ip = String(spec.clusterIP);
    const ports = (Array.isArray(spec.ports) ? spec.ports : []) as Json[];
    const prefix = envName(String((svc.metadata as Json).name));
    out.set(`${prefix}_SERVICE_HOST`, ip);
    const first = ports[0];
    if (first === undefined) continue; // validation requires a port for a Service with a cluster IP
    out.set(`${prefix}_SERVICE_PORT`, String(first.port));
    for (const p of ports) if (typeof p.name === 'string' && p.name !== '') out.set(`${prefix}_SERVICE_PORT_${envName(p.name)}`, String(p.port));
    ports.forEach((p, i) => {
      const protocol = typeof p.protocol === 'string' && p.protocol !== '' ? p.protocol : 'TCP';
      const proto = protocol.toLowerCase();
      const port = Number(p.port);
      const url = `${proto}://${joinHostPort(ip, port)}`;
      if (i === 0) out.set(`${prefix}_PORT`, url);
      const pp = `${prefix}_PORT_${port}_${protocol.toUpperCase()}`;
      out.set(pp, url);
      out.set(`${pp}_PROTO`, proto);
      out.set(`${pp}_PORT`, String(port));
      out.set(`${pp}_ADDR`, ip);
    });
  }
  return out;
}

/**
 * The Services that give a pod of `namespace` its variables (getServiceEnvVarMap): master services of
 * `masterNamespace` first, then, with service links, every Service of `namespace` (one per name).
 */
export function servicesForPod(all: readonly Json[], namespace: string, enableServiceLinks: boolean, masterNamespace: string): Json[] {
  const byName = new Map<string, Json>();
  for (const svc of all) {
    if (!hasClusterIP(svc)) continue;
    const meta = svc.metadata as Json;
    const name = String(meta.name);
    if (meta.namespace === masterNamespace && MASTER_SERVICES.has(name)) {
      if (!byName.has(name)) byName.set(name, svc);
    } else if (meta.namespace === namespace && enableServiceLinks) {
      byName.set(name, svc);
    }
  }
  return [...byName.values()];
}

/** Services read from the API server (one list+watch of all namespaces). */
export class ApiServiceEnv implements ServiceEnvSource {
  private readonly reflector: Reflector<Json>;
  private synced = false;

  constructor(
    client: ApiClient,
    private readonly masterNamespace: string,
    onError?: (err: unknown) => void,
  ) {
    this.reflector = new Reflector<Json>(client, {
      path: '/api/v1/services',
      onChange: () => {},
      ...(onError ? { onError } : {}),
    });
  }

  start(): void {
    void this.reflector.start().then(() => (this.synced = true));
  }

  stop(): void {
    this.reflector.stop();
  }

  envFor(pod: Pod): Map<string, string> {
    if (!this.synced && !isStatic(pod)) throw new Error(SERVICES_NOT_SYNCED);
    const links = (pod.spec as { enableServiceLinks?: boolean }).enableServiceLinks !== false;
    return serviceEnvVars(servicesForPod(this.reflector.items(), pod.metadata.namespace, links, this.masterNamespace));
  }
}
