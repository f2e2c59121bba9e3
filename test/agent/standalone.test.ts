// End to end: bin/orchlet in a child process, standalone, with a temporary manifest directory.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseLog } from '../../src/agent/runtime/crilog.js';
import { waitFor } from './runtime-contract.js';
import { freePort } from '../helpers/agent.js';

const ORCHLET = fileURLToPath(new URL('../../../bin/orchlet', import.meta.url));

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The records of the first log file of `container` found under <root>/pods/<any uid>/containers/. */
async function findLog(root: string, container: string): Promise<string[] | undefined> {
  const pods = await readdir(join(root, 'pods')).catch((): string[] => []);
  for (const uid of pods) {
    const text = await readFile(join(root, 'pods', uid, 'containers', container, '0.log'), 'utf8').catch(() => undefined);
    if (text !== undefined) return parseLog(text).map((r) => r.content);
  }
  return undefined;
}

void describe('orchlet standalone (bin/orchlet)', () => {
  void it('runs static pods from --pod-manifest-path, stops them when the manifest goes, exits on SIGTERM', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'orchlet-e2e-'));
    const manifests = join(dir, 'manifests');
    const root = join(dir, 'root');
    await mkdir(manifests);
    const pod = (name: string, container: string) => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name },
      spec: {
        terminationGracePeriodSeconds: 5,
        // '$$$$' reaches the shell as '$$': Kubernetes variable expansion turns '$$' into '$'.
        containers: [{ name: container, image: 'busybox', command: ['sh', '-c', 'echo "pid $$$$ uid $(id -u)"; exec sleep 600'] }],
      },
    });
    await writeFile(join(manifests, 'web.yaml'), JSON.stringify(pod('web', 'app')));
    const port = await freePort();
    const serverArgs = ['--port', String(port), '--read-only-port', '0', '--healthz-port', '0', '--cert-dir', join(dir, 'pki'), '--address', '127.0.0.1'];
    const child = spawn(process.execPath, [ORCHLET, '--make-iptables-util-chains=false', '--v=2', '--pod-manifest-path', manifests, '--root-dir', root, '--file-check-frequency', '1s', '--hostname-override', 'e2e-node', ...serverArgs], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      const lines = await waitFor('the app log', async () => {
        const l = await findLog(root, 'app');
        return l && l.length > 0 ? l : undefined;
      }, 15_000).catch((err: unknown) => {
        throw new Error(`${String(err)}\norchlet stderr:\n${stderr}`);
      });
      const m = /^pid (\d+) uid (\d+)$/.exec(lines[0]!);
      assert.ok(m, `log line: ${lines[0]}`);
      const pid = Number(m[1]);
      if (process.getuid?.() === 0) assert.equal(m[2], '65534');
      assert.ok(alive(pid), 'container process runs');
      // kubelet's -v=2 line for pods that arrive from a source
      assert.match(stderr, /\] "SyncLoop ADD" source="file" pods=\[default\/web-e2e-node\]\n/);

      // A second manifest added later is picked up too.
      await writeFile(join(manifests, 'db.yaml'), JSON.stringify(pod('db', 'db')));
      const dbLines = await waitFor('the db log', async () => {
        const l = await findLog(root, 'db');
        return l && l.length > 0 ? l : undefined;
      }, 15_000);
      const dbPid = Number(/^pid (\d+)/.exec(dbLines[0]!)?.[1]);

      await unlink(join(manifests, 'web.yaml'));
      await waitFor('the web container to stop', () => (alive(pid) ? undefined : true), 15_000);
      assert.ok(alive(dbPid), 'the other pod still runs');

      child.kill('SIGTERM');
      assert.equal(await exited, 0);
      assert.ok(!alive(dbPid), 'SIGTERM stopped every pod');
    } finally {
      if (child.exitCode === null) {
        // On failure, let the agent stop its containers (SIGKILL would leave them running).
        child.kill('SIGTERM');
        const killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
        await exited;
        clearTimeout(killer);
      }
      await rm(dir, { recursive: true, force: true });
    }
  });

  void it('refuses webhook authorization without a server to ask, and a kubeconfig it cannot read', async () => {
    const run = async (args: string[]): Promise<{ code: number | null; stderr: string }> => {
      const child = spawn(process.execPath, [ORCHLET, '--make-iptables-util-chains=false', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
      return { code, stderr };
    };
    const webhook = await run(['--authorization-mode', 'Webhook']);
    assert.equal(webhook.code, 1);
    assert.match(webhook.stderr, /--authorization-mode=Webhook needs API-server mode \(--orchconfig\)/);
    const missing = await run(['--orchconfig', '/nonexistent/kubeconfig']);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /kubeconfig \/nonexistent\/kubeconfig: ENOENT/);
  });
});
