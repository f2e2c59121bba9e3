// bin/orchlet as a child process of a test: spawned with the host's iptables left alone, its stderr
// collected, and the options of a standalone agent on the containerd harness in one place.
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PAUSE_IMAGE, type ContainerdHarness } from './containerd.js';

export const ORCHLET_BIN = fileURLToPath(new URL('../../../bin/orchlet', import.meta.url));

export interface OrchletProcess {
  child: ChildProcess;
  /** What the agent has written on stderr so far. */
  stderr(): string;
  /** Its exit code (null after a signal), once it exits. */
  exited: Promise<number | null>;
}

/** Starts bin/orchlet with `args` (and --make-iptables-util-chains=false: tests never touch the host's tables). */
export function spawnOrchlet(args: readonly string[], options: { stdout?: 'ignore' | 'pipe' } = {}): OrchletProcess {
  const child = spawn(process.execPath, [ORCHLET_BIN, '--make-iptables-util-chains=false', ...args], { stdio: ['ignore', options.stdout ?? 'ignore', 'pipe'] });
  let err = '';
  child.stderr!.on('data', (c: Buffer) => (err += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, stderr: () => err, exited };
}

/**
 * The options every test agent on loopback shares: its node name, --root-dir and --cert-dir under `dir`,
 * 127.0.0.1 (or nodeIp) as node IP, 127.0.0.1 as address, the HTTPS port given, no read-only port (unless given) and no healthz port.
 */
export function loopbackAgentArgs(o: { node: string; dir: string; port: number; readOnlyPort?: number; nodeIp?: string }): string[] {
  return [
    `--root-dir=${join(o.dir, 'root')}`,
    `--cert-dir=${join(o.dir, 'pki')}`,
    `--hostname-override=${o.node}`,
    `--node-ip=${o.nodeIp ?? '127.0.0.1'}`,
    '--address=127.0.0.1',
    `--port=${o.port}`,
    `--read-only-port=${o.readOnlyPort ?? 0}`,
    '--healthz-port=0',
  ];
}

/** The options that put an agent on the harness's containerd (its socket and cgroup root). */
export function criRuntimeArgs(h: Pick<ContainerdHarness, 'endpoint' | 'cgroupRoot'>): string[] {
  return ['--container-runtime=remote', `--container-runtime-endpoint=${h.endpoint}`, `--cgroup-root=${h.cgroupRoot}`];
}

export interface CriStandaloneOptions {
  /** --hostname-override */
  node: string;
  /** --pod-manifest-path (re-read every second) */
  manifests: string;
  /** --root-dir */
  root: string;
  /** --cert-dir */
  certDir: string;
  /** --port (HTTPS) and --read-only-port, on 127.0.0.1 */
  port: number;
  readOnlyPort: number;
}

/** The options of a standalone orchlet running static pods on the harness's containerd. */
export function criStandaloneArgs(h: Pick<ContainerdHarness, 'endpoint' | 'cgroupRoot'>, o: CriStandaloneOptions): string[] {
  return [
    ...criRuntimeArgs(h),
    `--pod-infra-container-image=${PAUSE_IMAGE}`,
    `--pod-manifest-path=${o.manifests}`,
    '--file-check-frequency=1s',
    `--root-dir=${o.root}`,
    `--cert-dir=${o.certDir}`,
    `--hostname-override=${o.node}`,
    '--address=127.0.0.1',
    `--port=${o.port}`,
    `--read-only-port=${o.readOnlyPort}`,
    '--healthz-port=0',
  ];
}
