/**
 * What the kinds and their subresources take from the server's options: --allow-privileged, --event-ttl,
 * --orchlet-preferred-address-types, whether proxies may reach loopback (--bind-address on loopback), and how
 * the server reaches node agents (--orchlet-certificate-authority, --orchlet-client-certificate,
 * --orchlet-client-key, --orchlet-timeout).
 */
import { readFileSync } from 'node:fs';
import type { AgentTransport } from '../endpoints/connect.js';
import type { KindSettings } from '../registry/kind.js';
import { isLoopbackIP } from '../registry/kinds/proxy.js';
import type { ServerOptions } from './options.js';

export function kindSettingsFrom(o: ServerOptions): KindSettings {
  return {
    allowPrivileged: o.allowPrivileged,
    eventTTLSeconds: Math.max(1, Math.round(o.eventTtl / 1000)),
    agentAddressTypes: o.orchletPreferredAddressTypes,
    proxyToLoopback: o.bindAddress !== undefined && isLoopbackIP(o.bindAddress),
  };
}

/** The TLS material of agent connections, read once at start (a missing file fails the start). */
export function agentTransportFrom(o: ServerOptions): AgentTransport {
  const read = (path: string | undefined) => (path ? readFileSync(path) : undefined);
  const t: AgentTransport = { timeoutMs: o.orchletTimeout };
  const ca = read(o.orchletCertificateAuthority);
  const cert = read(o.orchletClientCertificate);
  const key = read(o.orchletClientKey);
  if (ca) t.ca = ca;
  if (cert) t.cert = cert;
  if (key) t.key = key;
  return t;
}
