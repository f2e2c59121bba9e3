/**
 * An in-process control plane for end-to-end tests: the server on 127.0.0.1 with a free port, the
 * embedded store in memory (or on etcd), an admin token, and a kubeconfig for real clients.
 */
import { execFile } from 'node:child_process';
import type { IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { realpathSync } from 'node:fs';
import { stringify } from 'yaml';
import { parseServerOptions } from '../../src/server/options.js';
import { createControlPlane, type ControlPlane } from '../../src/server/controlplane.js';
import { findBinary } from './binaries.js';
import { startEtcd } from './etcd.js';

export interface TestCluster {
  cp: ControlPlane;
  url: string;
  token: string;
  dir: string;
  kubeconfig: string;
  /** Runs kubectl (the one on PATH, or kubectl.1.NN beside it) with this cluster's kubeconfig. */
  kubectl(args: string[], opts?: { version?: string; input?: string; env?: Record<string, string>; timeoutMs?: number }): Promise<{ code: number; stdout: string; stderr: string }>;
  /** One HTTPS request as the admin (HTTP/1.1, the cluster's CA); the body as text and, when it parses, as JSON. */
  request(method: string, path: string, opts?: RequestOptions): Promise<RawReply>;
  stop(): Promise<void>;
}

export interface RequestOptions {
  /** An object is sent as JSON; a string or Buffer as it is. */
  body?: unknown;
  contentType?: string;
  headers?: Record<string, string>;
}

export interface RawReply {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  /** The body parsed as JSON, or undefined when it is not JSON. */
  json: any;
  /** The body's bytes (protobuf answers). */
  body: Buffer;
}

/** The kubectl binaries on this machine: 'default' and every kubectl.1.NN beside the real binary. */
export function kubectlPath(version?: string): string | null {
  const onPath = findBinary('kubectl');
  if (!onPath || !version) return onPath;
  const p = join(dirname(realpathSync(onPath)), `kubectl.${version}`);
  try {
    realpathSync(p);
    return p;
  } catch {
    return null;
  }
}

export interface StartClusterOptions {
  /** Keeps the embedded store in a file under the cluster's directory (removed by stop()) instead of in memory. */
  fileStore?: boolean;
  /** Keeps the state in a real etcd this helper starts and stops. */
  etcd?: boolean;
  /** The csrsigning controller's certificate duration and backdate (short-lived certificates for rotation tests). */
  csrSigning?: { durationSeconds?: number; backdateSeconds?: number };
}

/** Writes `${dir}/kubeconfig`: the cluster at `url` with its CA, as a user with `token`. */
export async function writeKubeconfig(dir: string, url: string, caCert: string, token: string): Promise<string> {
  const kubeconfig = join(dir, 'kubeconfig');
  await writeFile(
    kubeconfig,
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'e2e', cluster: { server: url, 'certificate-authority-data': Buffer.from(caCert).toString('base64') } }],
      users: [{ name: 'admin', user: { token } }],
      contexts: [{ name: 'e2e', context: { cluster: 'e2e', user: 'admin' } }],
      'current-context': 'e2e',
    }),
  );
  return kubeconfig;
}

/** TestCluster.kubectl for a kubeconfig (HOME and the discovery cache in `dir`). */
export function kubectlWith(kubeconfig: string, dir: string): TestCluster['kubectl'] {
  return (args, opts = {}) => {
    const bin = kubectlPath(opts.version);
    if (!bin) throw new Error(`kubectl ${opts.version ?? ''} is not installed`);
    return new Promise((resolve) => {
      const child = execFile(
        bin,
        ['--kubeconfig', kubeconfig, ...args],
        { env: { ...process.env, HOME: dir, KUBECACHEDIR: join(dir, 'cache'), ...(opts.env ?? {}) }, timeout: opts.timeoutMs ?? 60_000 },
        (err, stdout, stderr) => {
          const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0;
          resolve({ code, stdout, stderr });
        },
      );
      if (opts.input !== undefined) child.stdin?.end(opts.input);
    });
  };
}

export async function startCluster(extraArgs: string[] = [], opts: StartClusterOptions = {}): Promise<TestCluster> {
  const dir = await mkdtemp(join(tmpdir(), 'orch-e2e-'));
  const etcd = opts.etcd ? await startEtcd() : undefined;
  const token = 'e2e-admin-token';
  await writeFile(join(dir, 'tokens.csv'), `${token},admin,admin,"system:masters"\n`);
  const options = parseServerOptions([
    '--bind-address=127.0.0.1',
    ...(etcd ? [`--kvstore-servers=${etcd.endpoint}`] : [`--data-dir=${opts.fileStore ? join(dir, 'data') : ':memory:'}`]),
    `--cert-dir=${join(dir, 'certs')}`,
    `--token-auth-file=${join(dir, 'tokens.csv')}`,
    ...extraArgs,
  ]);
  const cp = await createControlPlane(options, { securePort: 0, logger: () => {}, ...(opts.csrSigning ? { csrSigning: opts.csrSigning } : {}) });
  await cp.start();
  const url = `https://127.0.0.1:${cp.server.port}`;
  const kubeconfig = await writeKubeconfig(dir, url, cp.server.caCert, token);
  return {
    cp,
    url,
    token,
    dir,
    kubeconfig,
    kubectl: kubectlWith(kubeconfig, dir),
    request(method, path, opts = {}) {
      const headers: Record<string, string> = { authorization: `Bearer ${token}`, ...(opts.headers ?? {}) };
      let body: Buffer | undefined;
      if (opts.body !== undefined) {
        body = Buffer.isBuffer(opts.body) ? opts.body : Buffer.from(typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body));
        headers['content-type'] = opts.contentType ?? 'application/json';
        headers['content-length'] = String(body.length);
      }
      return new Promise((resolve, reject) => {
        const req = httpsRequest(url + path, { method, headers, ca: cp.server.caCert, agent: false }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (d: Buffer) => chunks.push(d));
          res.on('end', () => {
            const raw = Buffer.concat(chunks);
            const text = raw.toString('utf8');
            let json: unknown;
            try {
              json = JSON.parse(text);
            } catch {
              json = undefined;
            }
            resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json, body: raw });
          });
          res.on('error', reject);
        });
        req.on('error', reject);
        req.end(body);
      });
    },
    async stop() {
      await cp.stop();
      await etcd?.cleanup();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
