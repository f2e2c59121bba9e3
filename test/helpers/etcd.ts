/**
 * A throwaway single-member etcd for tests: Debian's /usr/bin/etcd (3.4) on 127.0.0.1 with free ports, in a
 * temporary directory (under /dev/shm when it is writable, so that etcd's fsyncs are cheap).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, openSync, closeSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { get as httpsGet } from 'node:https';
import { freePort } from './ports.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findBinary } from './binaries.js';

export interface EtcdProcess {
  /** Client URL, e.g. http://127.0.0.1:41234 */
  endpoint: string;
  dataDir: string;
  /** SIGTERM, and wait for the process to exit. */
  stop(): Promise<void>;
  /** Starts etcd again on the same ports and data directory, and waits until it answers. */
  start(): Promise<void>;
  /** SIGKILL, and wait for the process to exit. */
  kill(): Promise<void>;
  /** Kills etcd if it runs and removes the temporary directory. */
  cleanup(): Promise<void>;
}

/** The path of the etcd binary, or null when it is not installed. */
export function etcdAvailable(): string | null {
  return findBinary('etcd');
}


function tempBase(): string {
  try {
    accessSync('/dev/shm', constants.W_OK);
    return '/dev/shm';
  } catch {
    return tmpdir();
  }
}

/** Go's name for this machine's architecture, for etcd's ETCD_UNSUPPORTED_ARCH. */
function goArch(): string {
  switch (process.arch) {
    case 'x64':
      return 'amd64';
    case 'ia32':
      return '386';
    case 'ppc64':
      return 'ppc64le';
    default:
      return process.arch;
  }
}

function etcdEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  // ETCD_* variables in the environment would configure etcd behind the flags' back; drop them.
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('ETCD_')) env[k] = v;
  // etcd 3.4 refuses to start on architectures other than amd64 and ppc64le unless told which one it is
  // (and refuses when the variable names the wrong one, so it is never inherited).
  const arch = goArch();
  if (arch !== 'amd64' && arch !== 'ppc64le') env.ETCD_UNSUPPORTED_ARCH = arch;
  return env;
}

const live = new Set<ChildProcess>();
let exitHookInstalled = false;
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const child of live) {
      try {
        child.kill('SIGKILL');
      } catch {
        // already gone
      }
    }
  });
}

/**
 * When the test process dies without running its exit hooks (killed by the test runner's timeout, SIGKILL),
 * a small shell loop kills etcd and removes its directory, so that no etcd outlives its test.
 */
function watchdog(etcdPid: number, dir: string): void {
  const script =
    'while kill -0 "$1" 2>/dev/null && kill -0 "$2" 2>/dev/null; do sleep 1; done; ' +
    'if ! kill -0 "$1" 2>/dev/null; then kill -9 "$2" 2>/dev/null; sleep 1; rm -rf "$3"; fi';
  const dog = spawn('/bin/sh', ['-c', script, 'orch-etcd-watchdog', String(process.pid), String(etcdPid), dir], {
    stdio: 'ignore',
    detached: true,
  });
  dog.unref();
}

function waitExit(child: ChildProcess, timeoutMs: number): Promise<boolean> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), timeoutMs);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

/** PEM files for an https etcd that requires client certificates. */
export interface EtcdTls {
  certFile: string;
  keyFile: string;
  caFile: string;
  /**
   * A client certificate and key signed by caFile, for the readiness check (etcd then requires one); without
   * them the check presents certFile/keyFile, which then need the clientAuth extended key usage too.
   */
  clientCertFile?: string;
  clientKeyFile?: string;
}

export interface StartEtcdOptions {
  /** Serve clients over https with these files, requiring a client certificate signed by caFile. */
  tls?: EtcdTls;
}

function healthyTls(endpoint: string, tls: EtcdTls): Promise<boolean> {
  return new Promise((resolve) => {
    let req: ReturnType<typeof httpsGet>;
    try {
      req = httpsGet(
        `${endpoint}/health`,
        {
          ca: readFileSync(tls.caFile),
          cert: readFileSync(tls.clientCertFile ?? tls.certFile),
          key: readFileSync(tls.clientKeyFile ?? tls.keyFile),
          timeout: 1000,
        },
        (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (body += c));
          res.on('end', () => {
            try {
              resolve(res.statusCode === 200 && (JSON.parse(body) as { health?: string }).health === 'true');
            } catch {
              resolve(false);
            }
          });
          res.on('error', () => resolve(false));
        },
      );
    } catch {
      resolve(false);
      return;
    }
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => resolve(false));
  });
}

async function healthy(endpoint: string, tls?: EtcdTls): Promise<boolean> {
  if (tls) return healthyTls(endpoint, tls);
  try {
    const res = await fetch(`${endpoint}/health`, { signal: AbortSignal.timeout(1000) });
    if (!res.ok) return false;
    const body = (await res.json()) as { health?: string };
    return body.health === 'true';
  } catch {
    return false;
  }
}

export async function startEtcd(opts: StartEtcdOptions = {}): Promise<EtcdProcess> {
  const { tls } = opts;
  const bin = etcdAvailable();
  if (bin === null) throw new Error('etcd is not installed');
  installExitHook();
  const root = await mkdtemp(join(tempBase(), 'orch-etcd-'));
  const dataDir = join(root, 'data');
  const logFile = join(root, 'etcd.log');
  const clientPort = await freePort();
  let peerPort = await freePort();
  while (peerPort === clientPort) peerPort = await freePort();
  const endpoint = `${tls ? 'https' : 'http'}://127.0.0.1:${clientPort}`;
  const peer = `http://127.0.0.1:${peerPort}`;
  const args = [
    '--name', 'orch-test',
    '--data-dir', dataDir,
    '--listen-client-urls', endpoint,
    '--advertise-client-urls', endpoint,
    '--listen-peer-urls', peer,
    '--initial-advertise-peer-urls', peer,
    '--initial-cluster', `orch-test=${peer}`,
    '--initial-cluster-state', 'new',
    '--initial-cluster-token', `orch-test-${clientPort}`,
    '--logger', 'zap',
    '--log-outputs', 'stderr',
    '--log-level', 'warn',
  ];
  if (tls) {
    args.push(
      '--cert-file', tls.certFile,
      '--key-file', tls.keyFile,
      '--client-cert-auth',
      '--trusted-ca-file', tls.caFile,
    );
  }

  let child: ChildProcess | null = null;

  const logTail = (): string => {
    try {
      return readFileSync(logFile, 'utf8').split('\n').slice(-20).join('\n');
    } catch {
      return '';
    }
  };

  const start = async (): Promise<void> => {
    if (child && child.exitCode === null && child.signalCode === null) throw new Error('etcd is already running');
    const fd = openSync(logFile, 'a');
    let proc: ChildProcess;
    try {
      proc = spawn(bin, args, { env: etcdEnv(), stdio: ['ignore', fd, fd] });
    } finally {
      closeSync(fd);
    }
    child = proc;
    live.add(proc);
    if (proc.pid !== undefined) watchdog(proc.pid, root);
    proc.once('exit', () => live.delete(proc));
    let exited = false;
    proc.once('exit', () => (exited = true));
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      if (exited) throw new Error(`etcd exited during startup (code ${proc.exitCode}):\n${logTail()}`);
      if (await healthy(endpoint, tls)) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    proc.kill('SIGKILL');
    throw new Error(`etcd did not become healthy within 20s:\n${logTail()}`);
  };

  const signal = async (sig: NodeJS.Signals): Promise<void> => {
    const proc = child;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    proc.kill(sig);
    if (!(await waitExit(proc, 10_000))) {
      proc.kill('SIGKILL');
      await waitExit(proc, 5_000);
    }
  };

  try {
    await start();
  } catch (err) {
    await signal('SIGKILL');
    await rm(root, { recursive: true, force: true });
    throw err;
  }

  return {
    endpoint,
    dataDir,
    start,
    stop: () => signal('SIGTERM'),
    kill: () => signal('SIGKILL'),
    cleanup: async () => {
      await signal('SIGKILL');
      await rm(root, { recursive: true, force: true });
    },
  };
}
