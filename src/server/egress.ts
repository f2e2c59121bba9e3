/**
 * --egress-selector-config-file: the EgressSelectorConfiguration (apiserver.k8s.io/v1beta1, or v1alpha1
 * where `master` names the control plane) choosing how the server dials out, per egress type: `cluster`
 * (node agents), `controlplane` and `etcd`. Direct dials as without the file; HTTPConnect over TCP opens a
 * tunnel with an HTTP CONNECT to the proxy (TLS to the proxy when its URL is https, with the file's CA and
 * client certificate). Built so far: HTTPConnect over TCP for the cluster type (node-agent calls such as
 * `kubectl logs`); the Unix-socket transport, the GRPC protocol, and a proxy for the controlplane and etcd
 * types are refused at startup as not implemented yet.
 */
import { readFileSync } from 'node:fs';
import { connect as netConnect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { yaml } from '../util/yaml.js';

export const EGRESS_API_VERSIONS = ['apiserver.k8s.io/v1beta1', 'apiserver.k8s.io/v1alpha1', 'apiserver.config.k8s.io/v1alpha1'];

/** Opens a TCP connection to host:port the way the egress type says. */
export type EgressDialer = (host: string, port: number) => Promise<Socket>;

export interface EgressSelection {
  cluster?: EgressDialer;
  controlplane?: EgressDialer;
  etcd?: EgressDialer;
}

interface TcpTransport {
  url: URL;
  ca?: string;
  cert?: string;
  key?: string;
}

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

/** Reads and validates the file (kube-apiserver's checks and wording); returns a dialer per proxied type. */
export function loadEgressSelectorConfig(path: string): EgressSelection {
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
    if (transport.uds) throw new Error(`--egress-selector-config-file: ${base}: the uds transport is not implemented yet`);
    if (protocol === 'GRPC') throw new Error(`--egress-selector-config-file: ${base}: the GRPC proxy protocol is not implemented yet`);
    const tcp = (transport.tcp && typeof transport.tcp === 'object' ? transport.tcp : undefined) as Record<string, unknown> | undefined;
    if (!tcp) {
      errs.push(`${base}.connection.transport: Required value: tcp or uds must be set`);
      return;
    }
    const urlText = typeof tcp.url === 'string' ? tcp.url : '';
    let url: URL;
    try {
      url = new URL(urlText);
      if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('scheme');
    } catch {
      errs.push(`${base}.connection.transport.tcp.url: Invalid value: "${urlText}": supported connection protocols are http:// and https://`);
      return;
    }
    const tls = (tcp.tlsConfig && typeof tcp.tlsConfig === 'object' ? tcp.tlsConfig : {}) as Record<string, unknown>;
    if (url.protocol === 'http:' && Object.keys(tls).length > 0) {
      errs.push(`${base}.connection.transport.tcp.tlsConfig: Invalid value: "": tlsConfig should not be present when using HTTP`);
      return;
    }
    const t: TcpTransport = { url };
    const ca = readPem(tls.caBundle, `${base}.connection.transport.tcp.tlsConfig.caBundle`, errs);
    const cert = readPem(tls.clientCert, `${base}.connection.transport.tcp.tlsConfig.clientCert`, errs);
    const key = readPem(tls.clientKey, `${base}.connection.transport.tcp.tlsConfig.clientKey`, errs);
    if (ca) t.ca = ca;
    if (cert) t.cert = cert;
    if (key) t.key = key;
    if (name !== 'cluster') throw new Error(`--egress-selector-config-file: ${base}: HTTPConnect for the ${name} egress type is not implemented yet`);
    out.cluster = httpConnectDialer(t);
  });
  if (errs.length > 0) throw new Error(`invalid egress selector config in "${path}": [${errs.join(', ')}]`);
  return out;
}

/** Dials the proxy (TLS when its URL is https) and asks it to CONNECT to host:port; resolves with the tunnel. */
function httpConnectDialer(t: TcpTransport): EgressDialer {
  const port = Number(t.url.port || (t.url.protocol === 'https:' ? 443 : 80));
  const proxyHost = t.url.hostname.replace(/^\[|\]$/g, '');
  return (host, targetPort) =>
    new Promise<Socket>((resolve, reject) => {
      const socket: Socket =
        t.url.protocol === 'https:'
          ? tlsConnect({ host: proxyHost, port, servername: proxyHost, ...(t.ca ? { ca: t.ca } : {}), ...(t.cert ? { cert: t.cert } : {}), ...(t.key ? { key: t.key } : {}) })
          : netConnect({ host: proxyHost, port });
      const target = host.includes(':') ? `[${host}]:${targetPort}` : `${host}:${targetPort}`;
      const fail = (e: Error): void => {
        socket.destroy();
        reject(new Error(`dial ${target} through the egress proxy ${t.url.host}: ${e.message}`));
      };
      socket.once('error', fail);
      socket.once(t.url.protocol === 'https:' ? 'secureConnect' : 'connect', () => {
        socket.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`);
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
