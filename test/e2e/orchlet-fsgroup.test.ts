// End to end through kubectl on the built-in process runtime: fsGroup and supplementalGroups (the
// container's supplementary groups, volume ownership and setgid as kubelet's SetVolumeOwnership)
// and memory-backed volumes on tmpfs (secret, projected, downwardAPI, emptyDir medium: Memory with
// its sizeLimit), unmounted when the pod goes.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { startCluster, type TestCluster } from '../helpers/cluster.js';
import { startAgent, type TestAgent } from '../helpers/agent.js';
import { waitFor } from '../agent/runtime-contract.js';

type Json = Record<string, any>;

/** The mounts under `dir` as [mount point, fs type, super options] from /proc/self/mountinfo. */
async function mountsUnder(dir: string): Promise<[string, string, string][]> {
  const out: [string, string, string][] = [];
  for (const line of (await readFile('/proc/self/mountinfo', 'utf8')).split('\n')) {
    const f = line.split(' ');
    const sep = f.indexOf('-');
    if (sep < 0 || !f[4]!.startsWith(`${dir}/`)) continue;
    out.push([f[4]!, f[sep + 1]!, f[sep + 3] ?? '']);
  }
  return out;
}

void describe('orchlet fsGroup, supplementalGroups and tmpfs volumes (kubectl, process runtime)', () => {
  let c: TestCluster;
  let a: TestAgent;
  const kubectlJSON = async (args: string[]): Promise<Json | undefined> => {
    const r = await c.kubectl([...args, '-o', 'json']);
    return r.code === 0 ? (JSON.parse(r.stdout) as Json) : undefined;
  };
  const create = async (obj: Json): Promise<void> => {
    const r = await c.kubectl(['create', '-f', '-'], { input: JSON.stringify(obj) });
    assert.equal(r.code, 0, r.stderr);
  };
  const finished = async (name: string): Promise<Json> =>
    waitFor(`pod ${name} finished`, async () => {
      const p = await kubectlJSON(['get', 'pod', name]);
      return p?.status?.phase === 'Succeeded' || p?.status?.phase === 'Failed' ? p : undefined;
    });
  const logs = async (name: string): Promise<string> => (await c.kubectl(['logs', name])).stdout;

  before(async () => {
    c = await startCluster();
    a = await startAgent(c);
    assert.equal((await c.kubectl(['create', 'secret', 'generic', 'db', '--from-literal=password=s3cr3t'])).code, 0);
    assert.equal((await c.kubectl(['create', 'configmap', 'settings', '--from-literal=mode=fast'])).code, 0);
  });
  after(async () => {
    await a?.stop();
    await c?.stop();
  });

  const volumes = [
    { name: 'sec', secret: { secretName: 'db', defaultMode: 0o400 } },
    { name: 'cfg', configMap: { name: 'settings', defaultMode: 0o400 } },
    { name: 'proj', projected: { sources: [{ downwardAPI: { items: [{ path: 'name', fieldRef: { fieldPath: 'metadata.name' } }] } }] } },
    { name: 'scratch', emptyDir: {} },
    { name: 'mem', emptyDir: { medium: 'Memory', sizeLimit: '8Mi' } },
  ];
  const mounts = [
    { name: 'sec', mountPath: '/etc/sec' },
    { name: 'cfg', mountPath: '/etc/cfg' },
    { name: 'proj', mountPath: '/etc/proj' },
    { name: 'scratch', mountPath: '/scratch' },
    { name: 'mem', mountPath: '/mem' },
  ];
  const script = [
    'id -G',
    'cat $ORCH_ROOTFS/etc/sec/password 2>/dev/null; echo " rc=$?"',
    'cat $ORCH_ROOTFS/etc/cfg/mode 2>/dev/null; echo " rc=$?"',
    'touch $ORCH_ROOTFS/scratch/made && stat -c "made %g" $ORCH_ROOTFS/scratch/made',
    'touch $ORCH_ROOTFS/mem/made && stat -c "mem %g" $ORCH_ROOTFS/mem/made',
  ].join('; ');

  void it('runs the container with fsGroup and supplementalGroups and gives the volumes group ownership with setgid', async () => {
    await create({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'grouped', namespace: 'default' },
      spec: {
        nodeName: a.nodeName,
        restartPolicy: 'Never',
        terminationGracePeriodSeconds: 1,
        securityContext: { runAsUser: 1000, runAsGroup: 1000, fsGroup: 2000, supplementalGroups: [3000, 3001] },
        volumes,
        // it stays running: a terminated pod's volumes are torn down (the last test)
        containers: [{ name: 'main', image: 'busybox', command: ['sh', '-c', `${script}; exec sleep 600`], volumeMounts: mounts }],
      },
    });
    // The secret and configMap files are mode 0400 owned by root: readable only through the group.
    const out = await waitFor('the output', async () => {
      const text = await logs('grouped');
      return text.includes('mem ') ? text : undefined;
    });
    assert.equal(out, '1000 2000 3000 3001\ns3cr3t rc=0\nfast rc=0\nmade 2000\nmem 2000\n');
    const p = (await kubectlJSON(['get', 'pod', 'grouped']))!;
    assert.equal(p.status.phase, 'Running');

    const vols = join(a.rootDir, 'pods', p.metadata.uid, 'volumes');
    const sec = join(vols, 'kubernetes.io~secret', 'sec');
    const file = await stat(join(sec, 'password'));
    assert.equal(file.gid, 2000);
    assert.equal(file.mode & 0o7777, 0o440, 'secret files get g+r (read-only volume)');
    const dir = await stat(join(vols, 'kubernetes.io~empty-dir', 'scratch'));
    assert.equal(dir.gid, 2000);
    assert.equal(dir.mode & 0o7777, 0o2777, 'emptyDir: group rwx and setgid');
    const cfg = await stat(join(vols, 'kubernetes.io~configmap', 'cfg', 'mode'));
    assert.deepEqual([cfg.gid, cfg.mode & 0o777], [2000, 0o440]);

    // tmpfs: secret, projected and the Memory emptyDir (with its sizeLimit); configMap and a plain emptyDir on disk.
    const m = new Map((await mountsUnder(join(a.rootDir, 'pods', p.metadata.uid))).map(([mp, type, opts]) => [mp, { type, opts }]));
    assert.equal(m.get(sec)?.type, 'tmpfs');
    assert.equal(m.get(join(vols, 'kubernetes.io~projected', 'proj'))?.type, 'tmpfs');
    const mem = m.get(join(vols, 'kubernetes.io~empty-dir', 'mem'));
    assert.equal(mem?.type, 'tmpfs');
    assert.match(mem.opts, /(^|,)size=8192k(,|$)/);
    assert.equal(m.has(join(vols, 'kubernetes.io~configmap', 'cfg')), false);
    assert.equal(m.has(join(vols, 'kubernetes.io~empty-dir', 'scratch')), false);
    assert.equal(m.size, 3);

    // Deleting the pod unmounts its tmpfs volumes and removes its directory.
    assert.equal((await c.kubectl(['delete', 'pod', 'grouped', '--wait=true'])).code, 0);
    await waitFor('the pod directory gone', async () => ((await stat(join(a.rootDir, 'pods', p.metadata.uid)).catch(() => undefined)) === undefined ? true : undefined));
    assert.deepEqual(await mountsUnder(join(a.rootDir, 'pods', p.metadata.uid)), []);
  });

  void it('without fsGroup the same user cannot read the 0400 secret, and files keep their group', async () => {
    await create({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'ungrouped', namespace: 'default' },
      spec: {
        nodeName: a.nodeName,
        restartPolicy: 'Never',
        terminationGracePeriodSeconds: 1,
        securityContext: { runAsUser: 1000, runAsGroup: 1000 },
        volumes,
        containers: [{ name: 'main', image: 'busybox', command: ['sh', '-c', script], volumeMounts: mounts }],
      },
    });
    const p = await finished('ungrouped');
    assert.equal(p.status.phase, 'Succeeded', JSON.stringify(p.status));
    const out = await logs('ungrouped');
    assert.match(out, /^1000\n/);
    assert.match(out, /\n rc=1\n rc=1\nmade 1000\nmem 1000\n$/);
    // A terminated pod keeps its status and logs; its volumes are torn down as kubelet does.
    const podDir = join(a.rootDir, 'pods', p.metadata.uid);
    await waitFor('the volumes torn down', async () => ((await stat(join(podDir, 'volumes')).catch(() => undefined)) === undefined ? true : undefined));
    assert.deepEqual(await mountsUnder(podDir), []);
    assert.ok((await stat(join(podDir, 'containers'))).isDirectory());
  });

  void it('refuses group 0 as fsGroup for an unprivileged container (CreateContainerConfigError)', async () => {
    await create({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'rootgroup', namespace: 'default' },
      spec: {
        nodeName: a.nodeName,
        terminationGracePeriodSeconds: 1,
        securityContext: { runAsUser: 1000, fsGroup: 0 },
        containers: [{ name: 'main', image: 'busybox', command: ['sleep', '600'] }],
      },
    });
    const p = await waitFor('CreateContainerConfigError', async () => {
      const x = await kubectlJSON(['get', 'pod', 'rootgroup']);
      return x?.status?.containerStatuses?.[0]?.state?.waiting?.reason === 'CreateContainerConfigError' ? x : undefined;
    });
    assert.match(p.status.containerStatuses[0].state.waiting.message, /group 0 \(root\) as fsGroup or supplemental group is refused/);
  });
});
