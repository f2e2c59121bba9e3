/**
 * The resource managers in API-server mode, through kubectl: bin/orchlet (process runtime) with
 * --cpu-manager-policy=static, --reserved-cpus=0 and --topology-manager-policy=restricted. The Node's
 * allocatable cpu counts the reserved CPU (--reserved-cpus replaces --system-reserved's cpu, as kubelet
 * does); a Guaranteed pod with cpu: 2 cannot be placed and fails with TopologyAffinityError (phase
 * Failed, the Warning event); a Guaranteed pod with cpu: 1 runs pinned to CPU 1.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startCluster, type TestCluster } from '../helpers/cluster.js';
import { eventually } from '../helpers/eventually.js';
import { freePort } from '../helpers/ports.js';
import { loopbackAgentArgs } from '../helpers/orchlet-process.js';
import { requireBinary } from '../helpers/binaries.js';

const ORCHLET = fileURLToPath(new URL('../../../bin/orchlet', import.meta.url));
const NODE = 'cm-e2e-node';
type Json = Record<string, any>;

const usable = process.platform === 'linux' && cpus().length === 2 && requireBinary(undefined, 'taskset') !== null;

void describe('resource managers through kubectl (bin/orchlet, API-server mode)', { skip: usable ? false : 'needs a 2-CPU Linux machine with taskset' }, () => {
  let c: TestCluster;
  let dir = '';
  let orchlet: ChildProcess | undefined;
  let exited: Promise<number | null> | undefined;
  let stderr = '';
  const tag = String(process.pid);

  const podJSON = (name: string, cpu: string, arg: string) =>
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name },
      spec: {
        nodeName: NODE,
        restartPolicy: 'Never',
        containers: [{ name: 'c', image: 'busybox', command: ['sleep', arg], resources: { limits: { cpu, memory: '64Mi' } } }],
      },
    });
  const getJSON = async (args: string[]): Promise<Json | undefined> => {
    const r = await c.kubectl([...args, '-o', 'json']);
    return r.code === 0 ? (JSON.parse(r.stdout) as Json) : undefined;
  };

  before(async () => {
    c = await startCluster();
    dir = await mkdtemp(join(tmpdir(), 'orch-cm-e2e-'));
    orchlet = spawn(
      process.execPath,
      [
        ORCHLET,
        '--make-iptables-util-chains=false',
        `--orchconfig=${c.kubeconfig}`,
        ...loopbackAgentArgs({ node: NODE, dir, port: await freePort() }),
        '--node-status-update-frequency=1s',
        '--cpu-manager-policy=static',
        '--reserved-cpus=0',
        '--system-reserved=cpu=500m',
        '--topology-manager-policy=restricted',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    orchlet.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    exited = new Promise((resolve) => orchlet!.once('exit', (code) => resolve(code)));
    await eventually('the node to register', async () => (await getJSON(['get', 'node', NODE])) !== undefined, { timeoutMs: 30_000 }).catch((err: unknown) => {
      throw new Error(`${String(err)}\norchlet stderr:\n${stderr}`);
    });
  });
  after(async () => {
    if (orchlet && exited) {
      orchlet.kill('SIGTERM');
      await exited;
    }
    await c?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  void it("the Node's allocatable cpu leaves out the CPUs of --reserved-cpus", async () => {
    const node = await getJSON(['get', 'node', NODE]);
    assert.equal(node?.status?.capacity?.cpu, '2');
    assert.equal(node?.status?.allocatable?.cpu, '1', 'system-reserved cpu=500m replaced by the one CPU of --reserved-cpus');
  });

  void it('a pod the topology policy cannot place fails with TopologyAffinityError', async () => {
    const r = await c.kubectl(['create', '-f', '-'], { input: podJSON('big', '2', `3603.${tag}`) });
    assert.equal(r.code, 0, r.stderr);
    const pod = await eventually('pod big to fail', async () => {
      const p = await getJSON(['get', 'pod', 'big']);
      return p?.status?.phase === 'Failed' ? p : undefined;
    }, { timeoutMs: 30_000 }).catch((err: unknown) => {
      throw new Error(`${String(err)}\norchlet stderr:\n${stderr}`);
    });
    assert.equal(pod.status.reason, 'TopologyAffinityError');
    assert.equal(pod.status.message, 'Pod Resources cannot be allocated with Topology locality');
    const events = await eventually('the TopologyAffinityError event', async () => {
      const list = await getJSON(['get', 'events', '--field-selector', 'involvedObject.name=big']);
      return (list?.items as Json[] | undefined)?.find((e) => e.reason === 'TopologyAffinityError');
    }, { timeoutMs: 30_000 });
    assert.equal(events.type, 'Warning');
    assert.equal(events.message, 'Resources cannot be allocated with Topology locality');
  });

  void it('a Guaranteed pod with cpu: 1 runs on a CPU of its own', async () => {
    const arg = `3604.${tag}`;
    const r = await c.kubectl(['create', '-f', '-'], { input: podJSON('one', '1', arg) });
    assert.equal(r.code, 0, r.stderr);
    await eventually('pod one to run pinned to CPU 1', async () => {
      const p = await getJSON(['get', 'pod', 'one']);
      if (p?.status?.phase !== 'Running') return false;
      const want = `sleep\0${arg}\0`;
      const pid = readdirSync('/proc').find((e) => /^\d+$/.test(e) && readFileSync(`/proc/${e}/cmdline`, 'utf8') === want);
      return pid !== undefined && /Cpus_allowed_list:\s*1\n/.test(readFileSync(`/proc/${pid}/status`, 'utf8'));
    }, { timeoutMs: 30_000 }).catch((err: unknown) => {
      throw new Error(`${String(err)}\norchlet stderr:\n${stderr}`);
    });
  });
});
