// End to end: bin/orchlet with a KubeletConfiguration file and --runonce; --lock-file with
// --exit-on-lock-contention between two agents; and the start-up checks (swap, pod capacity).
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkSwap, podCapacity } from '../../src/cli/orchlet.js';
import { waitFor } from '../agent/runtime-contract.js';

const ORCHLET = fileURLToPath(new URL('../../../bin/orchlet', import.meta.url));

interface Run {
  child: ChildProcess;
  out: () => string;
  err: () => string;
  exited: Promise<number | null>;
}

function run(args: string[]): Run {
  const child = spawn(process.execPath, [ORCHLET, '--make-iptables-util-chains=false', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, out: () => out, err: () => err, exited };
}

async function stop(r: Run): Promise<void> {
  if (r.child.exitCode !== null || r.child.signalCode !== null) return;
  r.child.kill('SIGTERM');
  const t = setTimeout(() => r.child.kill('SIGKILL'), 10_000);
  await r.exited;
  clearTimeout(t);
}

void describe('orchlet --config, --runonce, --lock-file (bin/orchlet)', () => {
  let dir: string;
  const started: Run[] = [];
  after(async () => {
    for (const r of started) await stop(r);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  void it('--runonce starts the pods of a --config file\'s staticPodPath, prints their status and exits', async () => {
    dir = await mkdtemp(join(tmpdir(), 'orchlet-runonce-'));
    await mkdir(join(dir, 'manifests'));
    const manifest = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'web' },
      spec: { terminationGracePeriodSeconds: 1, containers: [{ name: 'app', image: 'busybox', command: ['sh', '-c', 'echo up; exec sleep 600'] }] },
    };
    await writeFile(join(dir, 'manifests', 'web.yaml'), JSON.stringify(manifest));
    // staticPodPath is relative to the file; enableServer false as --runonce requires
    await writeFile(
      join(dir, 'config.yaml'),
      ['apiVersion: kubelet.config.k8s.io/v1beta1', 'kind: KubeletConfiguration', 'staticPodPath: manifests', 'enableServer: false', 'healthzPort: 0', 'maxPods: 5'].join('\n'),
    );
    const r = run(['--config', join(dir, 'config.yaml'), '--root-dir', join(dir, 'root'), '--hostname-override', 'ro-node', '--runonce']);
    started.push(r);
    const code = await r.exited;
    assert.equal(code, 0, r.err());
    assert.equal(r.out(), 'pod "default/web-ro-node": Running, containers running: app\n');
    assert.match(r.err(), /started as runonce/);

    // A command-line flag overrides the file: --enable-server=true is refused with --runonce.
    const both = run(['--config', join(dir, 'config.yaml'), '--root-dir', join(dir, 'root'), '--runonce', '--enable-server=true']);
    started.push(both);
    assert.equal(await both.exited, 1);
    assert.match(both.err(), /--runonce and --enable-server exclude each other/);
  });

  void it('--exit-on-lock-contention: the holder of --lock-file exits when another agent wants it, which then runs', async () => {
    const lock = join(dir, 'orchlet.lock');
    const common = ['--root-dir', join(dir, 'lockroot'), '--enable-server=false', '--healthz-port=0', '--lock-file', lock, '--exit-on-lock-contention'];
    const first = run(common);
    started.push(first);
    await waitFor('the first agent to run', () => (/running standalone/.test(first.err()) ? true : undefined), 15_000);
    const second = run(common);
    started.push(second);
    assert.equal(await first.exited, 0, first.err());
    assert.match(first.err(), /another agent wants the lock file .*: exiting/);
    await waitFor('the second agent to run', () => (/running standalone/.test(second.err()) ? true : undefined), 15_000);
    await stop(second);
  });

  void it('checks swap (--fail-swap-on) and caps the pod capacity by --pods-per-core', () => {
    const header = 'Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n';
    assert.doesNotThrow(() => checkSwap(true, header));
    assert.throws(
      () => checkSwap(true, `${header}/swapfile   file   1048572   0   -2\n`),
      /running with swap on is not supported, please disable swap! or set --fail-swap-on flag to false\. \/proc\/swaps contained: \[\/swapfile/,
    );
    assert.doesNotThrow(() => checkSwap(false, `${header}/swapfile   file   1048572   0   -2\n`));
    assert.equal(podCapacity(110, 0, 4), 110);
    assert.equal(podCapacity(110, 10, 4), 40);
    assert.equal(podCapacity(20, 10, 4), 20);
  });
});
