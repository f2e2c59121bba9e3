/**
 * The real bin/orch-apiserver as its own process, for tests that check an option's effect from outside: it is
 * run as a user runs it (the launcher's node options included), on 127.0.0.1 and a free port, with the embedded
 * store in memory, a token file (an admin in system:masters and a plain user) and a self-signed serving pair in
 * its own directory. Requests go over HTTPS (HTTP/1.1 or HTTP/2) with that pair's certificate as the CA.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import type { IncomingHttpHeaders } from 'node:http';
import { connect as h2connect, type ClientHttp2Session } from 'node:http2';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { readFileSync } from 'node:fs';
import { freePort } from './ports.js';
import { kubectlWith, writeKubeconfig, type TestCluster } from './cluster.js';

export const SERVER_BIN = fileURLToPath(new URL('../../../bin/orch-apiserver', import.meta.url));
/** The node options a launcher's first line (`#!/usr/bin/env -S node --flag ...`) gives node. */
export function launcherNodeArgs(launcher: string): string[] {
  const first = readFileSync(launcher, 'utf8').split('\n', 1)[0] ?? '';
  const m = /^#!\S*env\s+-S\s+node\s+(.*)$/.exec(first);
  return m ? m[1]!.split(/\s+/).filter(Boolean) : [];
}

/** In system:masters. */
export const ADMIN_TOKEN = 'bin-admin-token';
/** The user alice, in no group. */
export const USER_TOKEN = 'bin-alice-token';

export interface BinReply {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface BinRequest {
  method?: string;
  /** Default the admin's; null sends none. */
  token?: string | null;
  headers?: Record<string, string>;
  body?: string | Buffer;
}

export interface BinServer {
  url: string;
  port: number;
  dir: string;
  /** The serving certificate (self-signed, so also the CA). */
  ca: string;
  pid: number;
  /** Everything the process wrote to standard error so far. */
  stderr(): string;
  /** One HTTP/1.1 request on a new connection. */
  request(path: string, o?: BinRequest): Promise<BinReply>;
  /** An HTTP/2 session; the caller closes it. */
  h2(): ClientHttp2Session;
  /** Sends a signal; `exited` resolves with the exit code. */
  kill(signal: NodeJS.Signals): void;
  exited: Promise<number | null>;
  stop(): Promise<void>;
}

export interface StartBinOptions {
  /** Extra lines of the token file. */
  tokens?: string[];
  /** The store: ':memory:' (default) or a directory. */
  dataDir?: string;
  /** Keeps the embedded store in `<the server's directory>/data` (as startCluster's fileStore). */
  fileStore?: boolean;
  /** The directory for the serving pair (default one inside the server's directory). */
  certDir?: string;
  /** The CA of the serving certificate, when it is not the self-signed pair of the cert dir (--tls-cert-file). */
  ca?: string;
  /** Environment variables added to the test's own for the process (e.g. OTEL_BSP_SCHEDULE_DELAY). */
  env?: Record<string, string>;
}

/** Writes `${dir}/tokens.csv`: the admin, alice and `extra`. */
async function tokenFile(dir: string, extra: string[] = []): Promise<string> {
  const file = join(dir, 'tokens.csv');
  await writeFile(file, [`${ADMIN_TOKEN},admin,admin,"system:masters"`, `${USER_TOKEN},alice,alice`, ...extra].join('\n') + '\n');
  return file;
}

/** Runs bin/orch-apiserver with `args` until it exits; its exit code and standard error (for refused options). */
export async function runBin(args: string[], timeoutMs = 30_000): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [...launcherNodeArgs(SERVER_BIN), SERVER_BIN, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (d: string) => (err += d));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const code = await new Promise<number | null>((resolve) => child.once('close', (c) => resolve(c)));
  clearTimeout(timer);
  return { code, stderr: err };
}

/** Starts bin/orch-apiserver with `args` (after the defaults, so they win) and resolves once it serves. */
export async function startBin(args: string[] = [], o: StartBinOptions = {}): Promise<BinServer> {
  const dir = await mkdtemp(join(tmpdir(), 'orch-bin-'));
  const port = await freePort();
  const certDir = o.certDir ?? join(dir, 'certs');
  const child: ChildProcess = spawn(
    process.execPath,
    [
      ...launcherNodeArgs(SERVER_BIN),
      SERVER_BIN,
      '--bind-address=127.0.0.1',
      `--secure-port=${port}`,
      `--data-dir=${o.fileStore ? join(dir, 'data') : (o.dataDir ?? ':memory:')}`,
      `--cert-dir=${certDir}`,
      `--token-auth-file=${await tokenFile(dir, o.tokens)}`,
      ...args,
    ],
    { stdio: ['ignore', 'ignore', 'pipe'], ...(o.env ? { env: { ...process.env, ...o.env } } : {}) },
  );
  let err = '';
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (d: string) => (err += d));
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  for (let i = 0; !/serving on https:/.test(err); i++) {
    if (child.exitCode !== null || i > 600) {
      child.kill('SIGKILL');
      await exited;
      await rm(dir, { recursive: true, force: true });
      throw new Error(`orch-apiserver did not start: ${err}`);
    }
    await sleep(50);
  }
  const url = `https://127.0.0.1:${port}`;
  const ca = o.ca ?? (await readFile(join(certDir, 'apiserver.crt'), 'utf8'));
  return {
    url,
    port,
    dir,
    ca,
    pid: child.pid!,
    stderr: () => err,
    exited,
    request(path, r = {}) {
      const token = r.token === undefined ? ADMIN_TOKEN : r.token;
      return new Promise((resolve, reject) => {
        const req = httpsRequest(
          url + path,
          { method: r.method ?? 'GET', ca, agent: false, headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...r.headers } },
          (res) => {
            let body = '';
            res.setEncoding('utf8');
            res.on('data', (c: string) => (body += c));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
            res.on('error', reject);
          },
        );
        req.on('error', reject);
        req.end(r.body);
      });
    },
    h2: () => h2connect(url, { ca }),
    kill: (signal) => {
      if (child.exitCode === null) child.kill(signal);
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** The binary with what TestCluster offers but the in-process control plane: kubectl, a kubeconfig, the CA. */
export interface BinCluster extends Omit<TestCluster, 'cp'> {
  server: BinServer;
  caCert: string;
}

/** startBin, and a kubeconfig for the admin, for tests that drive the binary with kubectl. */
export async function startBinCluster(args: string[] = [], o: StartBinOptions = {}): Promise<BinCluster> {
  const server = await startBin(args, o);
  const kubeconfig = await writeKubeconfig(server.dir, server.url, server.ca, ADMIN_TOKEN);
  return {
    server,
    url: server.url,
    token: ADMIN_TOKEN,
    dir: server.dir,
    kubeconfig,
    caCert: server.ca,
    kubectl: kubectlWith(kubeconfig, server.dir),
    async request(method, path, opts = {}) {
      const headers: Record<string, string> = { ...(opts.headers ?? {}) };
      let body: string | Buffer | undefined;
      if (opts.body !== undefined) {
        body = Buffer.isBuffer(opts.body) || typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
        headers['content-type'] = opts.contentType ?? 'application/json';
        headers['content-length'] = String(Buffer.byteLength(body));
      }
      const r = await server.request(path, { method, headers, ...(body !== undefined ? { body } : {}) });
      let json: unknown;
      try {
        json = JSON.parse(r.body);
      } catch {
        json = undefined;
      }
      // the binary's answers are read as text: body holds their UTF-8 bytes
      return { status: r.status, headers: r.headers, text: r.body, json, body: Buffer.from(r.body) };
    },
    stop: () => server.stop(),
  };
}
