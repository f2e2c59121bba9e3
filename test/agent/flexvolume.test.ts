// FlexVolume (src/agent/flexvolume.ts, --volume-plugin-dir): the drivers' answers, and through kubectl a
// pod on the built-in runtime whose flexVolume a shell driver mounts (it writes files into the volume
// directory): init at probe, mount with kubelet's options (the secretRef Secret's keys included),
// unmount when the pod goes; a driver whose init fails matches no volume (FailedMount).
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startCluster, type TestCluster } from '../helpers/cluster.js';
import { startAgent, type TestAgent } from '../helpers/agent.js';
import { waitFor } from './runtime-contract.js';
import { FlexVolumes, NOT_SUPPORTED, parseDriverStatus } from '../../src/agent/flexvolume.js';

type Json = Record<string, any>;

void describe('FlexVolume driver answers', () => {
  void it('Success with capabilities (defaults for the rest), Failure with its reason, Not supported', () => {
    assert.deepEqual(parseDriverStatus('init', '{"status":"Success","capabilities":{"attach":false}}').capabilities, {
      attach: false,
      selinuxRelabel: true,
      supportsMetrics: false,
      fsGroup: true,
      requiresFSResize: true,
    });
    assert.equal(parseDriverStatus('init', '{"status":"Success"}').capabilities.attach, true);
    assert.throws(() => parseDriverStatus('mount', '{"status":"Failure","message":"no disk"}'), /^Error: mount command failed, status: Failure, reason: no disk$/);
    assert.throws(() => parseDriverStatus('unmount', '{"status":"Not supported"}'), (e: Error) => e.message === NOT_SUPPORTED);
    assert.throws(() => parseDriverStatus('mount', 'oops'), /failed to unmarshal output for command: mount/);
  });
});

const DRIVER = 'example.com/echo';

/** A driver that records its calls and "mounts" by writing files into the directory. */
function driverScript(log: string, initAnswer: string): string {
  return `#!/bin/sh
echo "$1 $2" >> ${log}
case "$1" in
  init) echo '${initAnswer}' ;;
  mount)
    mkdir -p "$2"; chmod 755 "$2"
    echo "hello from flex" > "$2/hello"
    printf '%s' "$3" > "$2/options.json"
    chmod 644 "$2/hello" "$2/options.json"
    echo '{"status":"Success"}' ;;
  unmount) rm -f "$2/hello" "$2/options.json"; echo '{"status":"Success"}' ;;
  *) echo '{"status":"Not supported"}' ;;
esac
`;
}

void describe('orchlet FlexVolume (kubectl, built-in runtime)', () => {
  let c: TestCluster;
  let a: TestAgent;
  let dir: string;
  let pluginDir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'orch-flex-'));
    pluginDir = join(dir, 'plugins');
    for (const [name, init] of [
      ['example.com~echo', '{"status":"Success","capabilities":{"attach":false}}'],
      ['example.com~broken', '{"status":"Failure","message":"cannot start"}'],
    ] as const) {
      const d = join(pluginDir, name);
      await mkdir(d, { recursive: true });
      const exe = join(d, name.split('~')[1]!);
      await writeFile(exe, driverScript(join(dir, `${name}.log`), init));
      await chmod(exe, 0o755);
    }
    c = await startCluster();
    a = await startAgent(c, { extra: { volumePluginDir: pluginDir } });
  });
  after(async () => {
    await a?.stop();
    await c?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  const kubectlOK = async (args: string[], input?: string): Promise<string> => {
    const r = await c.kubectl(args, input !== undefined ? { input } : {});
    assert.equal(r.code, 0, `kubectl ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };
  const create = async (obj: Json) =>
    waitFor('the object to be admitted', async () => ((await c.kubectl(['create', '-f', '-'], { input: JSON.stringify(obj) })).code === 0 ? true : undefined));

  void it('mounts the volume through the driver with kubelet\'s options; the container sees it; unmount when the pod goes', async () => {
    assert.match(a.logs.join('\n'), /FlexVolume drivers: example\.com\/echo/);
    assert.doesNotMatch(a.logs.join('\n'), /FlexVolume drivers: .*broken/);
    await create({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'flex-creds', namespace: 'default' }, type: DRIVER, stringData: { user: 'admin', pass: 's3cret' } });
    await create({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'flex', namespace: 'default' },
      spec: {
        nodeName: a.nodeName,
        restartPolicy: 'Never',
        automountServiceAccountToken: false,
        volumes: [{ name: 'data', flexVolume: { driver: DRIVER, fsType: 'ext4', secretRef: { name: 'flex-creds' }, options: { size: '1Gi' } } }],
        containers: [{ name: 'main', image: 'busybox', command: ['sh', '-c', 'cat $ORCH_ROOTFS/data/hello; cat $ORCH_ROOTFS/data/options.json'], volumeMounts: [{ name: 'data', mountPath: '/data' }] }],
      },
    });
    const p = await waitFor('flex to finish', async () => {
      const r = await c.kubectl(['get', 'pod', 'flex', '-o', 'json']);
      const x = r.code === 0 ? (JSON.parse(r.stdout) as Json) : undefined;
      return x?.status?.phase === 'Succeeded' || x?.status?.phase === 'Failed' ? x : undefined;
    }, 30_000);
    assert.equal(p.status.phase, 'Succeeded', JSON.stringify(p.status));
    const [hello, options] = (await kubectlOK(['logs', 'flex'])).split('\n');
    assert.equal(hello, 'hello from flex');
    const b64 = (s: string) => Buffer.from(s).toString('base64');
    assert.deepEqual(JSON.parse(options!), {
      'kubernetes.io/fsType': 'ext4',
      'kubernetes.io/readwrite': 'rw',
      'kubernetes.io/pvOrVolumeName': 'data',
      'kubernetes.io/pod.name': 'flex',
      'kubernetes.io/pod.namespace': 'default',
      'kubernetes.io/pod.uid': p.metadata.uid,
      'kubernetes.io/serviceAccount.name': 'default',
      'kubernetes.io/secret/user': b64('admin'),
      'kubernetes.io/secret/pass': b64('s3cret'),
      size: '1Gi',
    });
    const volDir = join(a.rootDir, 'pods', p.metadata.uid, 'volumes', 'example.com~echo', 'data');
    const calls = () => readFile(join(dir, 'example.com~echo.log'), 'utf8');
    // the volumes of a terminated pod are torn down (kubelet does so unless --keep-terminated-pod-volumes)
    await waitFor('the driver\'s unmount', async () => ((await calls()).includes(`unmount ${volDir}`) ? true : undefined), 20_000);
    await waitFor('the volume directory to go', () => (existsSync(volDir) ? undefined : true), 20_000);
    assert.deepEqual((await calls()).trim().split('\n'), ['init ', `mount ${volDir}`, `unmount ${volDir}`], 'init once at probe, mount once, unmount once');
    await kubectlOK(['delete', 'pod', 'flex', '--grace-period=0', '--force']);
  });

  void it('a driver whose init failed matches no volume: FailedMount', async () => {
    await create({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'flex-broken', namespace: 'default' },
      spec: {
        nodeName: a.nodeName,
        automountServiceAccountToken: false,
        volumes: [{ name: 'v', flexVolume: { driver: 'example.com/broken' } }],
        containers: [{ name: 'main', image: 'busybox', command: ['sleep', '60'], volumeMounts: [{ name: 'v', mountPath: '/v' }] }],
      },
    });
    const msg = await waitFor('a FailedMount event', async () => {
      const r = await c.kubectl(['get', 'events', '--field-selector', 'involvedObject.name=flex-broken,reason=FailedMount', '-o', 'json']);
      const items = r.code === 0 ? ((JSON.parse(r.stdout) as Json).items as Json[]) : [];
      return items[0]?.message as string | undefined;
    }, 20_000);
    assert.equal(msg, 'MountVolume.SetUp failed for volume "v" : failed to get Plugin from volumeSpec for volume "v" err=no volume plugin matched');
    assert.match(a.logs.join('\n'), /error creating Flexvolume plugin from directory example\.com~broken, skipping\. Error: init command failed, status: Failure, reason: cannot start/);
  });

  void it('probes again for a driver installed later', async () => {
    const flex = new FlexVolumes({ pluginDir });
    assert.deepEqual((await flex.probeAll()).sort(), ['example.com/echo']);
    const d = join(pluginDir, 'late~drv');
    await mkdir(d);
    await writeFile(join(d, 'drv'), driverScript(join(dir, 'late.log'), '{"status":"Success","capabilities":{"attach":false}}'));
    await chmod(join(d, 'drv'), 0o755);
    assert.equal((await flex.driver('late/drv'))?.capabilities.attach, false);
    assert.equal(await flex.driver('late/none'), undefined);
  });
});
