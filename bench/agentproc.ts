/**
 * What the pod benches share: `bin/orchlet` started as its own process against a bench server (a
 * kubeconfig with the server's CA and token written into its directory), ready once it logs that it is
 * registering its node, and stopped with SIGTERM (SIGKILL after a minute); and the percentile of sorted figures.
 */
import { spawn, type ChildProcess, type ChildProcessByStdio } from 'node:child_process';
import type { Readable } from 'node:stream';
import { createWriteStream, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../test/helpers/ports.js';
import { KERNEL_TUNABLES } from '../src/agent/sysctl.js';
import type { BenchServer } from './api.js';

const REPO = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * The command that runs `args` with node: as root (where the agent would write the host's kernel
 * tunables), inside a private mount namespace where each tunable is a bind-mounted copy kept in `dir`,
 * so a bench never changes the host's settings (unshare execs, so the process keeps its pid).
 */
function isolatedFromHostSysctls(dir: string, args: readonly string[]): [string, string[]] {
  const unshare = ['/usr/bin/unshare', '/bin/unshare'].find((p) => existsSync(p));
  if (process.getuid?.() !== 0 || unshare === undefined) return [process.execPath, [...args]];
  const lines: string[] = [];
  // the tunables orchlet writes, as kubelet, without --protect-kernel-defaults
  for (const [t] of KERNEL_TUNABLES) {
    const path = `/proc/sys/${t}`;
    if (!existsSync(path)) continue;
    const copy = join(dir, `sysctl.${t.replaceAll('/', '.')}`);
    writeFileSync(copy, readFileSync(path, 'utf8'));
    lines.push(`mount --bind '${copy}' '${path}' || exit 97`);
  }
  lines.push('exec "$@"');
  return [unshare, ['--mount', '--propagation', 'private', 'sh', '-c', lines.join('\n'), 'sh', process.execPath, ...args]];
}

/** A /proc file's text, or '' when it (or its process) is gone. */
function proc(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

/** CPU ms (user + system, all threads) of a process from /proc, 0 when it is gone. */
function processCpuMs(pid: number | string): number {
  const stat = proc(`/proc/${pid}/stat`);
  if (stat === '') return 0;
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) * 10;
}

/**
 * The agent's CPU ms: its own process and the built-in runtime's spawner helpers (its children named
 * orchlet-spawner, which fork the containers' processes), not the containers.
 */
export function agentCpuMs(pid: number): number {
  let total = processCpuMs(pid);
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return total;
  }
  for (const tid of tasks) {
    for (const c of proc(`/proc/${pid}/task/${tid}/children`).split(' ').filter(Boolean)) {
      if (proc(`/proc/${c}/comm`).trim() === 'orchlet-spawner') total += processCpuMs(c);
    }
  }
  return total;
}

export function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
}

export interface BenchAgent {
  child: ChildProcess;
  stop(): Promise<void>;
}

/**
 * Starts orchlet for `node` under `dir` (root, cert dir and kubeconfig there; the agent's own ports on
 * 127.0.0.1, read-only and healthz ports off) with `extraArgs` after the common ones.
 * BENCH_AGENT_NODE_ARGS (e.g. '--cpu-prof --cpu-prof-dir=/tmp/prof') go to node; with `logFile`, the
 * agent's standard error and output are kept there too (node prints --trace-gc and the like on the output).
 */
export async function startBenchAgent(server: BenchServer, dir: string, node: string, extraArgs: readonly string[], logFile?: string): Promise<BenchAgent> {
  await mkdir(dir, { recursive: true });
  const kubeconfig = join(dir, 'orchlet.kubeconfig');
  await writeFile(
    kubeconfig,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'c', cluster: { server: server.url, 'certificate-authority-data': Buffer.from(server.caCert).toString('base64') } }],
      users: [{ name: 'u', user: { token: server.token } }],
      contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
      'current-context': 'x',
    }),
  );
  const args = [
    ...(process.env.BENCH_AGENT_NODE_ARGS ?? '').split(' ').filter(Boolean),
    join(REPO, 'bin', 'orchlet'),
    // no iptables utility chains in the host's own tables (kubelet's default is on)
    '--make-iptables-util-chains=false',
    `--orchconfig=${kubeconfig}`,
    `--root-dir=${join(dir, 'root')}`,
    `--cert-dir=${join(dir, 'pki')}`,
    `--hostname-override=${node}`,
    '--node-ip=127.0.0.1',
    '--address=127.0.0.1',
    `--port=${await freePort()}`,
    '--read-only-port=0',
    '--healthz-port=0',
    ...extraArgs,
  ];
  const [command, commandArgs] = isolatedFromHostSysctls(dir, args);
  const child = spawn(command, commandArgs, { stdio: ['ignore', logFile ? 'pipe' : 'ignore', 'pipe'] }) as ChildProcessByStdio<null, Readable | null, Readable>;
  if (logFile) {
    // its standard output too (what node prints there for options such as --trace-gc)
    const log = createWriteStream(logFile);
    child.stderr.pipe(log);
    child.stdout?.pipe(log);
  }
  // The last 200,000 characters of its standard error: enough for the readiness line and for an error.
  let err = '';
  child.stderr.setEncoding('utf8');
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  await new Promise<void>((resolve, reject) => {
    const onData = (c: string): void => {
      err = (err + c).slice(-200_000);
      if (/running registering/.test(err)) {
        child.off('exit', onExit);
        resolve();
      }
    };
    const onExit = (code: number | null): void => reject(new Error(`orchlet exited with ${code}: ${err.slice(-2000)}`));
    child.stderr.on('data', onData);
    child.once('exit', onExit);
  });
  return {
    child,
    async stop() {
      if (child.exitCode !== null) return;
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 60_000);
      await exited;
      clearTimeout(t);
    },
  };
}
