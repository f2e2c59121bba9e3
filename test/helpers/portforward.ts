/** kubectl port-forward for tests: started, used, and stopped again; plain HTTP GETs on loopback. */
import { spawn } from 'node:child_process';
import { get } from 'node:http';
import { join } from 'node:path';
import { waitFor } from '../agent/runtime-contract.js';
import { freePort } from './ports.js';
import { kubectlPath, type TestCluster } from './cluster.js';

/** GET http://127.0.0.1:<port>/<path>, the body as text. */
export function httpGet(port: number, path: string): Promise<{ code: number; body: string }> {
  return new Promise((resolve, reject) => {
    get({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ code: res.statusCode ?? 0, body }));
    }).on('error', reject);
  });
}

/**
 * Runs `kubectl port-forward` until it says it is forwarding, calls `use` with the local port, then stops
 * it (SIGTERM) and waits for it to exit.
 */
export async function withPortForward<T>(c: TestCluster, version: string | undefined, target: string, remotePort: number, use: (port: number) => Promise<T>): Promise<T> {
  const bin = kubectlPath(version);
  if (!bin) throw new Error(`kubectl ${version ?? ''} is not installed`);
  const local = await freePort();
  const child = spawn(bin, ['--kubeconfig', c.kubeconfig, 'port-forward', target, `${local}:${remotePort}`], {
    env: { ...process.env, HOME: c.dir, KUBECACHEDIR: join(c.dir, 'cache') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  try {
    await waitFor(`kubectl ${version ?? ''} port-forward to listen`, async () => (out.includes('Forwarding from') ? true : undefined), 20_000).catch((err: unknown) => {
      throw new Error(`${String(err)}\nkubectl said: ${out}`);
    });
    return await use(local);
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
}

