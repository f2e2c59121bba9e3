// Running one probe (kubelet's pkg/kubelet/prober/prober.go and pkg/probe/{exec,http,tcp}): exec
// through the runtime's ExecSync, httpGet with kubelet's User-Agent (success: 200-399), tcpSocket
// (a connection opens). Each resolves with success or failure and the output kubelet puts in its
// Unhealthy event; none throws. Timeouts are timeoutSeconds (default 1).
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect } from 'node:net';
import type { Runtime } from './runtime/runtime.js';
import { datapolicyValue, type Logger } from '../util/log.js';
import type { Container } from './types.js';

type Json = Record<string, any>;

export type ProbeType = 'liveness' | 'readiness' | 'startup';

export interface ProbeOutcome {
  ok: boolean;
  output: string;
}

/** The probe fields with the API's defaults. */
export interface ProbeSpec {
  initialDelaySeconds: number;
  periodSeconds: number;
  timeoutSeconds: number;
  successThreshold: number;
  failureThreshold: number;
  terminationGracePeriodSeconds?: number;
  handler: Json;
}

export function probeSpec(c: Container, type: ProbeType): ProbeSpec | undefined {
  const p = c[`${type}Probe`] as Json | undefined;
  if (!p || typeof p !== 'object') return undefined;
  const n = (v: unknown, d: number): number => (typeof v === 'number' && v > 0 ? v : d);
  const spec: ProbeSpec = {
    initialDelaySeconds: typeof p.initialDelaySeconds === 'number' ? p.initialDelaySeconds : 0,
    periodSeconds: n(p.periodSeconds, 10),
    timeoutSeconds: n(p.timeoutSeconds, 1),
    // liveness and startup probes must have successThreshold 1 (validation); readiness may have more
    successThreshold: type === 'readiness' ? n(p.successThreshold, 1) : 1,
    failureThreshold: n(p.failureThreshold, 3),
    handler: p,
  };
  if (typeof p.terminationGracePeriodSeconds === 'number') spec.terminationGracePeriodSeconds = p.terminationGracePeriodSeconds;
  return spec;
}

const MAX_OUTPUT = 10 * 1024;

/** A port of the probe: a number, or the name of one of the container's ports. */
function resolvePort(c: Container, port: unknown): number | undefined {
  if (typeof port === 'number') return port;
  if (typeof port === 'string' && /^\d+$/.test(port)) return Number(port);
  const found = ((c.ports ?? []) as Json[]).find((p) => p.name === port);
  return typeof found?.containerPort === 'number' ? found.containerPort : undefined;
}

/** Go's net error wording for the common socket errors (what kubelet's probe output shows). */
function dialError(host: string, port: number, err: unknown): string {
  const code = (err as { code?: string }).code;
  const addr = `${host.includes(':') ? `[${host}]` : host}:${port}`;
  if (code === 'ECONNREFUSED') return `dial tcp ${addr}: connect: connection refused`;
  if (code === 'ETIMEDOUT' || code === 'PROBE_TIMEOUT') return `dial tcp ${addr}: i/o timeout`;
  if (code === 'EHOSTUNREACH') return `dial tcp ${addr}: connect: no route to host`;
  return err instanceof Error ? err.message : String(err);
}

export interface ProbeTarget {
  runtime: Runtime;
  containerId: string;
  container: Container;
  /** The pod's IP (the default host of httpGet and tcpSocket). */
  podIP: string;
  /** For kubelet's -v=4 lines of an HTTP probe. */
  logger?: Logger;
}

export async function runProbe(spec: ProbeSpec, t: ProbeTarget): Promise<ProbeOutcome> {
  const h = spec.handler;
  try {
    if (h.exec) return await execProbe(spec, t, ((h.exec as Json).command ?? []) as string[]);
    if (h.httpGet) return await httpProbe(spec, t, h.httpGet as Json);
    if (h.tcpSocket) return await tcpProbe(spec, t, h.tcpSocket as Json);
    return { ok: false, output: 'missing probe handler' };
  } catch (err) {
    return { ok: false, output: err instanceof Error ? err.message : String(err) };
  }
}

/** A timed-out exec rejects (the runtime's error text becomes the output, as kubelet's "command timed out"). */
async function execProbe(spec: ProbeSpec, t: ProbeTarget, cmd: string[]): Promise<ProbeOutcome> {
  if (!t.runtime.execSync) return { ok: false, output: 'exec probes are not supported by this container runtime' };
  const r = await t.runtime.execSync(t.containerId, cmd, spec.timeoutSeconds);
  const output = Buffer.concat([r.stdout, r.stderr]).subarray(0, MAX_OUTPUT).toString('utf8');
  return { ok: r.exitCode === 0, output };
}

function httpProbe(spec: ProbeSpec, t: ProbeTarget, g: Json): Promise<ProbeOutcome> {
  const port = resolvePort(t.container, g.port);
  if (port === undefined) return Promise.resolve({ ok: false, output: `couldn't find port: ${JSON.stringify(g.port)} in ${t.container.name}` });
  const host = typeof g.host === 'string' && g.host !== '' ? g.host : t.podIP;
  const scheme = String(g.scheme ?? 'HTTP').toLowerCase();
  let path = typeof g.path === 'string' ? g.path : '/';
  if (!path.startsWith('/')) path = `/${path}`;
  const url = `${scheme}://${host.includes(':') ? `[${host}]` : host}:${port}${path}`;
  const headers: Record<string, string> = { 'user-agent': 'kube-probe/1.23', accept: '*/*' };
  for (const hd of (g.httpHeaders ?? []) as Json[]) headers[String(hd.name).toLowerCase()] = String(hd.value);
  const v4 = t.logger?.v(4);
  if (v4?.enabled) {
    // kubelet 1.23's lines (prober.go); the headers as its buildHeader makes them, an http.Header, which
    // datapol holds for password and token data: --experimental-log-sanitization redacts them
    const header: Record<string, string[]> = {};
    for (const hd of (g.httpHeaders ?? []) as Json[]) (header[String(hd.name)] ??= []).push(String(hd.value));
    v4.info('HTTP-Probe Host', 'scheme', scheme, 'host', host, 'port', port, 'path', path);
    v4.info('HTTP-Probe Headers', 'headers', datapolicyValue(header, ['password', 'token']));
  }
  return new Promise((resolve) => {
    const req = (scheme === 'https' ? httpsRequest : httpRequest)(url, { method: 'GET', headers, rejectUnauthorized: false, timeout: spec.timeoutSeconds * 1000 }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        if (size < MAX_OUTPUT) chunks.push(c);
        size += c.length;
      });
      res.on('end', () => {
        const code = res.statusCode ?? 0;
        const body = Buffer.concat(chunks).subarray(0, MAX_OUTPUT).toString('utf8');
        resolve(code >= 200 && code < 400 ? { ok: true, output: body } : { ok: false, output: `HTTP probe failed with statuscode: ${code}` });
      });
      res.on('error', (err) => resolve({ ok: false, output: err.message }));
    });
    req.on('timeout', () => req.destroy(Object.assign(new Error('timeout'), { code: 'PROBE_TIMEOUT' })));
    req.on('error', (err) => {
      const code = (err as { code?: string }).code;
      const text = code === 'PROBE_TIMEOUT' ? `Get "${url}": context deadline exceeded (Client.Timeout exceeded while awaiting headers)` : `Get "${url}": ${dialError(host, port, err)}`;
      resolve({ ok: false, output: text });
    });
    req.end();
  });
}

function tcpProbe(spec: ProbeSpec, t: ProbeTarget, s: Json): Promise<ProbeOutcome> {
  const port = resolvePort(t.container, s.port);
  if (port === undefined) return Promise.resolve({ ok: false, output: `couldn't find port: ${JSON.stringify(s.port)} in ${t.container.name}` });
  const host = typeof s.host === 'string' && s.host !== '' ? s.host : t.podIP;
  return new Promise((resolve) => {
    const sock = connect({ host, port });
    const timer = setTimeout(() => sock.destroy(Object.assign(new Error('timeout'), { code: 'PROBE_TIMEOUT' })), spec.timeoutSeconds * 1000);
    sock.once('connect', () => {
      clearTimeout(timer);
      sock.destroy();
      resolve({ ok: true, output: '' });
    });
    sock.once('error', (err) => {
      clearTimeout(timer);
      resolve({ ok: false, output: dialError(host, port, err) });
    });
  });
}
