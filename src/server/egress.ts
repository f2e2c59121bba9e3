/**
 * --egress-selector-config-file: the EgressSelectorConfiguration (apiserver.k8s.io/v1beta1, or v1alpha1
 * where `master` names the control plane) choosing how the server dials out, per egress type:
 *   - `cluster`: node agents (logs, exec/attach/port-forward, proxy), admission webhooks, aggregated API servers;
 *   - `controlplane`: the authentication, authorization and audit webhooks and OIDC discovery;
 *   - `etcd`: the storage's etcd client.
 * Direct dials as without the file. HTTPConnect opens a tunnel with an HTTP CONNECT to the proxy, over TCP
 * (TLS to the proxy when its URL is https, with the file's CA and client certificate) or over a Unix socket
 * (uds.udsName). GRPC speaks konnectivity's proxy protocol (egress/konnectivity.ts) over a Unix socket only,
 * as 1.23 validates it. Each dial opens its own connection to the proxy, as kube-apiserver 1.23.
 */
import { readFileSync } from 'node:fs';
import { connect as netConnect, type Socket } from 'node:net';
import { connect as tlsConnect } from '../util/node-tls.js';
import type { Dialer } from '../util/dial.js';
import { yaml } from '../util/yaml.js';
import { konnectivityDialer } from './egress/konnectivity.js';
import { DialError, EgressMetrics } from './egress/metrics.js';

export const EGRESS_API_VERSIONS = ['apiserver.k8s.io/v1beta1', 'apiserver.k8s.io/v1alpha1', 'apiserver.config.k8s.io/v1alpha1'];

/** Opens a TCP connection to host:port the way the egress type says. */
export type EgressDialer = Dialer;

export interface EgressSelection {
  cluster?: EgressDialer;
  controlplane?: EgressDialer;
  etcd?: EgressDialer;
}

interface TlsFiles {
  ca?: string;
  cert?: string;
  key?: string;
}

/** Where the proxy listens: a TCP URL (http or https) or a Unix socket. */
type ProxyAddress = { url: URL; tls: TlsFiles } | { uds: string };

function text(v: unknown): string {
  return typeof v === 'string' ? v : v === undefined || v === null ? '' : JSON.stringify(v);
}

function readPem(path: unknown, field: string, errs: string[]): string | undefined {
  if (path === undefined || path === null || path === '') return undefined;
  if (typeof path !== 'string') {
    errs.push(`${field}: Invalid value: ${JSON.stringify(path)}: must be a file path`);
    return undefined;
  }
  try {
    return readFileSync(path, 'utf8');
  } catch (e) {
    errs.push(`${field}: Invalid value: "${path}": ${(e as Error).message}`);
    return undefined;
  }
}

/**
 * Reads and validates the file (kube-apiserver's checks and wording); returns a dialer per proxied type,
 * measured into `metrics` (bind it to the server's registry once there is one).
 */
export function loadEgressSelectorConfig(path: string, metrics = new EgressMetrics()): EgressSelection {
  let doc: unknown;
  try {
    doc = yaml().parse(readFileSync(path, 'utf8'));
  } catch (e) {
    throw new Error(`failed to read egress selector config from "${path}": ${(e as Error).message}`, { cause: e });
  }
  const obj = (doc && typeof doc === 'object' && !Array.isArray(doc) ? doc : {}) as Record<string, unknown>;
  const apiVersion = typeof obj.apiVersion === 'string' ? obj.apiVersion : '';
  if (!EGRESS_API_VERSIONS.includes(apiVersion) || obj.kind !== 'EgressSelectorConfiguration') {
    throw new Error(`failed to read egress selector config from "${path}": no kind "${typeof obj.kind === 'string' ? obj.kind : ''}" is registered for version "${apiVersion}"`);
  }
  const list = obj.egressSelections ?? [];
  if (!Array.isArray(list)) throw new Error(`failed to read egress selector config from "${path}": egressSelections must be a list`);
  const errs: string[] = [];
  const seen = new Set<string>();
  const out: EgressSelection = {};
  list.forEach((raw: unknown, i: number) => {
    const base = `egressSelections[${i}]`;
    const sel = (raw && typeof raw === 'object' ? raw : {}) as Record<string, unknown>;
    let name = typeof sel.name === 'string' ? sel.name : '';
    if (name === 'master') name = 'controlplane';
    if (name !== 'cluster' && name !== 'controlplane' && name !== 'etcd') {
      errs.push(`${base}.name: Unsupported value: "${text(sel.name)}": supported values: "cluster", "controlplane", "etcd", "master"`);
      return;
    }
    if (seen.has(name)) {
      errs.push(`${base}.name: Duplicate value: "${name}"`);
      return;
    }
    seen.add(name);
    const conn = (sel.connection && typeof sel.connection === 'object' ? sel.connection : {}) as Record<string, unknown>;
    const protocol = conn.proxyProtocol;
    const transport = conn.transport && typeof conn.transport === 'object' ? (conn.transport as Record<string, unknown>) : undefined;
    if (protocol === 'Direct') {
      if (transport) errs.push(`${base}.connection.transport: Invalid value: "": transport config should be absent for direct connect`);
      return;
    }
    if (protocol !== 'HTTPConnect' && protocol !== 'GRPC') {
      errs.push(`${base}.connection.proxyProtocol: Unsupported value: "${text(protocol)}": supported values: "Direct", "GRPC", "HTTPConnect"`);
      return;
    }
    if (!transport) {
      errs.push(`${base}.connection.transport: Required value: transport must be set for HTTPConnect and GRPC`);
      return;
    }
    if (transport.tcp && transport.uds) {
      errs.push(`${base}.connection.transport: Invalid value: "": tcp and uds cannot both be set`);
      return;
    }
    if (protocol === 'GRPC' && !transport.uds) {
      // kube-apiserver 1.23 dials the konnectivity server only over a Unix socket
      errs.push(`${base}.connection.uds: Required value: UDS must be set with GRPC`);
      return;
    }
    const address = proxyAddress(transport, `${base}.connection.transport`, errs);
    if (!address) return;
    const transportLabel = 'uds' in address ? 'uds' : 'tcp';
    out[name] =
      protocol === 'GRPC' && 'uds' in address ? metrics.measure(konnectivityDialer(address.uds), 'grpc', transportLabel) : metrics.measure(httpConnectDialer(address), 'http_connect', transportLabel);
  });
  if (errs.length > 0) throw new Error(`invalid egress selector config in "${path}": [${errs.join(', ')}]`);
  return out;
}

/** The transport's proxy address, checked as kube-apiserver checks it; undefined after an error. */
function proxyAddress(transport: Record<string, unknown>, field: string, errs: string[]): ProxyAddress | undefined {
  if (transport.uds) {
    const uds = (typeof transport.uds === 'object' ? transport.uds : {}) as Record<string, unknown>;
    const udsName = typeof uds.udsName === 'string' ? uds.udsName : '';
    if (udsName === '') {
      errs.push(`${field}.uds.udsName: Invalid value: "nil": UDSName should be present for UDS connections`);
      return undefined;
    }
    return { uds: udsName };
  }
  const tcp = (transport.tcp && typeof transport.tcp === 'object' ? transport.tcp : undefined) as Record<string, unknown> | undefined;
  if (!tcp) {
    errs.push(`${field}: Required value: tcp or uds must be set`);
    return undefined;
  }
  const urlText = typeof tcp.url === 'string' ? tcp.url : '';
  let url: URL;
  try {
    url = new URL(urlText);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('scheme');
  } catch {
    errs.push(`${field}.tcp.url: Invalid value: "${urlText}": supported connection protocols are http:// and https://`);
    return undefined;
  }
  const tls = (tcp.tlsConfig && typeof tcp.tlsConfig === 'object' ? tcp.tlsConfig : {}) as Record<string, unknown>;
  if (url.protocol === 'http:' && Object.keys(tls).length > 0) {
    errs.push(`${field}.tcp.tlsConfig: Invalid value: "": tlsConfig should not be present when using HTTP`);
    return undefined;
  }
  const files: TlsFiles = {};
  const ca = readPem(tls.caBundle, `${field}.tcp.tlsConfig.caBundle`, errs);
  const cert = readPem(tls.clientCert, `${field}.tcp.tlsConfig.clientCert`, errs);
  const key = readPem(tls.clientKey, `${field}.tcp.tlsConfig.clientKey`, errs);
  if (ca) files.ca = ca;
  if (cert) files.cert = cert;
  if (key) files.key = key;
  return { url, tls: files };
}

/**
 * Dials the proxy (a Unix socket, TCP, or TLS when its URL is https) and asks it to CONNECT to host:port;
 * resolves with the tunnel. The request's Host is 127.0.0.1, as kube-apiserver sends it.
 */
function httpConnectDialer(address: ProxyAddress): Dialer {
  const display = 'uds' in address ? address.uds : address.url.host;
  const open = (): { socket: Socket; ready: string } => {
    if ('uds' in address) return { socket: netConnect({ path: address.uds }), ready: 'connect' };
    const { url, tls } = address;
    const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (url.protocol !== 'https:') return { socket: netConnect({ host, port }), ready: 'connect' };
    const socket = tlsConnect({ host, port, servername: host, ...(tls.ca ? { ca: tls.ca } : {}), ...(tls.cert ? { cert: tls.cert } : {}), ...(tls.key ? { key: tls.key } : {}) });
    return { socket, ready: 'secureConnect' };
  };
  return (host, targetPort) =>
    new Promise<Socket>((resolve, reject) => {
      const { socket, ready } = open();
      const target = host.includes(':') ? `[${host}]:${targetPort}` : `${host}:${targetPort}`;
      let connected = false;
      const fail = (e: Error): void => {
        socket.destroy();
        reject(new DialError(`dial ${target} through the egress proxy ${display}: ${e.message}`, connected ? 'proxy' : 'connect'));
      };
      socket.once('error', fail);
      socket.once(ready, () => {
        connected = true;
        socket.write(`CONNECT ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
      });
      let head = Buffer.alloc(0);
      const onData = (chunk: Buffer): void => {
        head = Buffer.concat([head, chunk]);
        const end = head.indexOf('\r\n\r\n');
        if (end < 0) {
          if (head.length > 16_384) fail(new Error('the proxy answer is too long'));
          return;
        }
        socket.off('data', onData);
        socket.off('error', fail);
        const status = /^HTTP\/1\.[01] (\d{3})/.exec(head.subarray(0, end).toString('latin1'));
        if (!status || status[1] !== '200') {
          fail(new Error(`the proxy answered ${head.subarray(0, head.indexOf('\r\n')).toString('latin1')}`));
          return;
        }
        socket.pause();
        const rest = head.subarray(end + 4);
        if (rest.length > 0) socket.unshift(rest);
        resolve(socket);
      };
      socket.on('data', onData);
    });
}
