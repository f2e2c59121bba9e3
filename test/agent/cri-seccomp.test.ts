/**
 * --seccomp-default under the SeccompDefault gate on containerd (src/agent/seccomp.ts): a container without a
 * profile runs under the runtime's default seccomp filter (Seccomp: 2 in its /proc/self/status), one whose pod
 * asks for Unconfined runs without (Seccomp: 0); the gate is required. Plus the profile choice itself.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BUSYBOX_IMAGE, stopHarness, containerdTestPrerequisites, startContainerd, type ContainerdHarness } from '../helpers/containerd.js';
import { freePort } from '../helpers/ports.js';
import { eventually } from '../helpers/eventually.js';
import { seccompProfileOf } from '../../src/agent/seccomp.js';
import type { Pod } from '../../src/agent/types.js';
import { getJSON } from '../helpers/http.js';
import { criStandaloneArgs, spawnOrchlet } from '../helpers/orchlet-process.js';

const ORCHLET = fileURLToPath(new URL('../../../bin/orchlet', import.meta.url));
const NODE = 'seccomp-node';

const missing = containerdTestPrerequisites();

let harness: ContainerdHarness | undefined;
after(async () => {
  await stopHarness(harness);
});

const podOf = (spec: Record<string, unknown>, annotations: Record<string, string> = {}) =>
  ({ metadata: { name: 'p', annotations }, spec: { containers: [{ name: 'c' }], ...spec } }) as unknown as Pod;

void describe('seccomp profiles', () => {
  void it('container, pod, annotations, then --seccomp-default, else Unconfined', () => {
    const c = { name: 'c' } as Pod['spec']['containers'][0];
    const root = '/r/seccomp';
    assert.deepEqual(seccompProfileOf(podOf({}), c, { profileRoot: root }), { profileType: 'Unconfined' });
    assert.deepEqual(seccompProfileOf(podOf({}), c, { seccompDefault: true, profileRoot: root }), { profileType: 'RuntimeDefault' });
    assert.deepEqual(seccompProfileOf(podOf({ securityContext: { seccompProfile: { type: 'Unconfined' } } }), c, { seccompDefault: true }), {
      profileType: 'Unconfined',
    });
    const local = { ...c, securityContext: { seccompProfile: { type: 'Localhost', localhostProfile: 'p.json' } } } as typeof c;
    assert.deepEqual(seccompProfileOf(podOf({ securityContext: { seccompProfile: { type: 'RuntimeDefault' } } }), local, { profileRoot: root }), {
      profileType: 'Localhost',
      localhostRef: '/r/seccomp/p.json',
    });
    assert.deepEqual(seccompProfileOf(podOf({}, { 'seccomp.security.alpha.kubernetes.io/pod': 'runtime/default' }), c), { profileType: 'RuntimeDefault' });
    assert.deepEqual(seccompProfileOf(podOf({}, { 'container.seccomp.security.alpha.kubernetes.io/c': 'unconfined' }), c, { seccompDefault: true }), {
      profileType: 'Unconfined',
    });
  });

  void it('--seccomp-default requires the SeccompDefault gate', () => {
    const r = spawnSync(process.execPath, [ORCHLET, '--make-iptables-util-chains=false', '--seccomp-default'], { encoding: 'utf8' });
    assert.equal(r.status, 1);
    assert.match(r.stderr, /invalid configuration: seccompDefault true requires feature gate SeccompDefault/);
  });

  void it('on containerd: RuntimeDefault for containers without a profile, Unconfined where the pod asks', async (t) => {
    if (missing.length > 0) return t.skip(`missing: ${missing.join(', ')}`);
    harness = await startContainerd();
    const h = harness;
    const dir = await mkdtemp(join(tmpdir(), 'orchlet-seccomp-'));
    const manifests = join(dir, 'manifests');
    const root = join(dir, 'root');
    await mkdir(manifests);
    const show = { name: 'c', image: BUSYBOX_IMAGE, command: ['sh', '-c', 'grep "^Seccomp:" /proc/self/status'] };
    const manifest = (name: string, spec: Record<string, unknown>) => JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { restartPolicy: 'Never', containers: [show], ...spec } });
    await writeFile(join(manifests, 'dflt.yaml'), manifest('dflt', {}));
    await writeFile(join(manifests, 'unconf.yaml'), manifest('unconf', { securityContext: { seccompProfile: { type: 'Unconfined' } } }));
    const readOnlyPort = await freePort();
    const orchlet = spawnOrchlet([
      ...criStandaloneArgs(h, { node: NODE, manifests, root, certDir: join(dir, 'pki'), port: await freePort(), readOnlyPort }),
      '--feature-gates=SeccompDefault=true',
      '--seccomp-default',
    ]);
    const { child, exited } = orchlet;
    const logOf = async (name: string): Promise<string> => {
      const pod = await eventually(
        `pod ${name} to succeed`,
        async () => {
          const list = (await getJSON(readOnlyPort, '/pods').catch(() => undefined)) as { items?: Pod[] } | undefined;
          const p = list?.items?.find((x) => x.metadata.name === `${name}-${NODE}`);
          return p?.status?.phase === 'Succeeded' ? p : undefined;
        },
        { timeoutMs: 30_000 },
      ).catch((err: unknown) => {
        throw new Error(`${String(err)}\norchlet stderr:\n${orchlet.stderr()}`);
      });
      return readFile(join(root, 'pods', pod.metadata.uid, 'containers', 'c', '0.log'), 'utf8');
    };
    try {
      assert.match(await logOf('dflt'), /stdout F Seccomp:\s+2\n/);
      assert.match(await logOf('unconf'), /stdout F Seccomp:\s+0\n/);
      await unlink(join(manifests, 'dflt.yaml'));
      await unlink(join(manifests, 'unconf.yaml'));
      await eventually('the pods to go', async () => {
        const list = (await getJSON(readOnlyPort, '/pods')) as { items?: Pod[] };
        return (list.items ?? []).length === 0;
      }, { timeoutMs: 30_000 });
      child.kill('SIGTERM');
      assert.equal(await exited, 0, orchlet.stderr());
    } finally {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await exited;
      }
      await rm(dir, { recursive: true, force: true });
    }
  });
});
