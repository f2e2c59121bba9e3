// The agent's options of document 3 wired through the Agent: TLS of the main server (--tls-min-version,
// --tls-cipher-suites), volume usage in /stats/summary (--volume-stats-agg-period),
// --keep-terminated-pod-volumes, --experimental-mounter-path, --max-open-files (rlimit.ts), and the
// FailedSync event of a sync pass that cannot determine a pod's status.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmod, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, type TLSSocket } from 'node:tls';
import { Agent } from '../../src/agent/agent.js';
import type { EventSink } from '../../src/agent/events.js';
import { PodSyncer } from '../../src/agent/podsync.js';
import { maxOpenFilesOf, setMaxOpenFiles } from '../../src/agent/rlimit.js';
import { ProcessRuntime } from '../../src/agent/runtime/process.js';
import { RuntimeError } from '../../src/agent/runtime/runtime.js';
import { staticPodFromManifest } from '../../src/agent/sources/manifest.js';
import { StatusManager } from '../../src/agent/status-manager.js';
import type { Pod } from '../../src/agent/types.js';
import { tlsCiphers, tlsMinVersion } from '../../src/util/tls.js';
import { waitFor } from './runtime-contract.js';

const isRoot = process.getuid?.() === 0;

interface VolumeStats {
  name: string;
  time: string;
  usedBytes: number;
  inodesUsed: number;
  capacityBytes: number;
  availableBytes: number;
  inodes: number;
  inodesFree: number;
}
interface Summary {
  pods: { podRef: { uid: string }; volume?: VolumeStats[] }[];
}

function pod(name: string, spec: Record<string, unknown>): Pod {
  return staticPodFromManifest({ apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec }, 'file', 'node1', `/m/${name}.yaml`);
}

/** A TLS handshake with the agent's main server: the negotiated protocol and cipher, or the error. */
function handshake(port: number, o: { maxVersion?: 'TLSv1.2' | 'TLSv1.3'; minVersion?: 'TLSv1' | 'TLSv1.1' | 'TLSv1.2' | 'TLSv1.3'; ciphers?: string }): Promise<{ protocol: string; cipher: string } | Error> {
  return new Promise((resolve) => {
    const s: TLSSocket = connect({ host: '127.0.0.1', port, rejectUnauthorized: false, ...o }, () => {
      const r = { protocol: s.getProtocol() ?? '', cipher: s.getCipher().standardName };
      s.end();
      resolve(r);
    });
    s.on('error', (err) => resolve(err));
  });
}

void describe('agent wiring: TLS options, volume stats, terminated pod volumes', () => {
  let root: string;
  let agent: Agent;
  const warnings: string[] = [];
  const setPods = (pods: Pod[]): void => agent.onSnapshot({ op: 'SET', source: 'file', pods });

  before(async () => {
    root = await mkdtemp(join(tmpdir(), 'orchlet-wiring-'));
    await chmod(root, 0o755); // containers run as nobody: the directory above --root-dir must be traversable
    // A mounter that records its calls, then mounts (--experimental-mounter-path)
    const mounter = join(root, 'mounter.sh');
    await writeFile(mounter, `#!/bin/sh\necho "$@" >> ${join(root, 'mounter.log')}\nexec mount "$@"\n`);
    await chmod(mounter, 0o755);
    const ciphers = tlsCiphers(['TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384', 'TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256'], (m) => warnings.push(m));
    agent = new Agent({
      nodeName: 'node1',
      rootDir: join(root, 'agent'),
      fileCheckFrequencyMs: 0,
      syncFrequencyMs: 60_000,
      keepTerminatedPodVolumes: true,
      mounterPath: mounter,
      volumeStatsAggPeriodMs: 200,
      server: {
        address: '127.0.0.1',
        port: 0,
        readOnlyPort: 0,
        healthzAddress: '127.0.0.1',
        healthzPort: 0,
        enableServer: true,
        enableDebuggingHandlers: true,
        anonymousAuth: true,
        certDir: join(root, 'pki'),
        tlsMinVersion: tlsMinVersion('VersionTLS12'),
        ...(ciphers !== undefined ? { tlsCiphers: ciphers } : {}),
      },
    });
    await agent.start();
  });
  after(async () => {
    await agent.stop();
    await rm(root, { recursive: true, force: true });
  });

  void it('--tls-min-version and --tls-cipher-suites: older protocols and other TLS 1.2 suites are refused', async () => {
    assert.deepEqual(warnings, ["Use of insecure cipher 'TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256' detected."]);
    const port = agent.servers!.port;
    assert.ok((await handshake(port, { minVersion: 'TLSv1.1', maxVersion: 'TLSv1.1' as 'TLSv1.2' })) instanceof Error, 'TLS 1.1 refused');
    const other = await handshake(port, { maxVersion: 'TLSv1.2', ciphers: 'ECDHE-ECDSA-AES128-GCM-SHA256' });
    assert.ok(other instanceof Error, 'a suite outside --tls-cipher-suites is refused');
    assert.deepEqual(await handshake(port, { maxVersion: 'TLSv1.2', ciphers: 'ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-ECDSA-AES128-GCM-SHA256' }), {
      protocol: 'TLSv1.2',
      cipher: 'TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384',
    });
    // Go enables every TLS 1.3 suite whatever the list says
    const v13 = await handshake(port, {});
    assert.ok(!(v13 instanceof Error) && v13.protocol === 'TLSv1.3', JSON.stringify(v13));
  });

  void it('--volume-stats-agg-period: /stats/summary carries each volume\'s usage, measured per period (no hostPath)', async () => {
    const p = pod('writer', {
      volumes: [
        { name: 'data', emptyDir: {} },
        { name: 'host', hostPath: { path: root } },
      ],
      containers: [
        {
          name: 'c',
          image: 'busybox',
          // the process runtime's view of the mounts: $ORCH_ROOTFS/<mountPath> links to the volume
          command: ['sh', '-c', 'head -c 200000 /dev/zero > "$ORCH_ROOTFS/data/f"; mkdir "$ORCH_ROOTFS/data/sub"; exec sleep 60'],
          volumeMounts: [{ name: 'data', mountPath: '/data' }],
        },
      ],
    });
    setPods([p]);
    const volume = await waitFor('volume stats with the written file', async () => {
      const summary = (await agent.statsSummary()) as unknown as Summary;
      const entry = summary.pods.find((x) => x.podRef.uid === p.metadata.uid);
      const v = entry?.volume?.find((x) => x.name === 'data');
      return v !== undefined && v.usedBytes >= 200_000 ? entry!.volume : undefined;
    }, 15_000);
    assert.deepEqual(volume.map((v) => v.name), ['data']);
    const v = volume[0]!;
    assert.equal(v.inodesUsed, 3, 'the directory, the file and the subdirectory');
    assert.ok(v.capacityBytes > 0 && v.availableBytes > 0 && v.inodes > 0 && v.inodesFree > 0 && typeof v.time === 'string');
  });

  void it('--keep-terminated-pod-volumes: a Succeeded pod keeps its volumes until deleted; --experimental-mounter-path mounts its tmpfs', async (t) => {
    const p = pod('done', {
      restartPolicy: 'Never',
      volumes: [
        { name: 'data', emptyDir: {} },
        { name: 'mem', emptyDir: { medium: 'Memory' } },
      ],
      containers: [{ name: 'c', image: 'busybox', command: ['sh', '-c', 'true'] }],
    });
    const vol = (name: string): string => join(root, 'agent', 'pods', p.metadata.uid, 'volumes', 'kubernetes.io~empty-dir', name);
    setPods([p]);
    await waitFor('Succeeded', () => (agent.statusManager.getPodStatus(p.metadata.uid)?.phase === 'Succeeded' ? true : undefined), 15_000);
    await agent.workers.idle();
    assert.ok((await stat(vol('data'))).isDirectory(), 'the volume stays');
    if (!isRoot) return t.skip('needs root to mount tmpfs');
    const calls = await readFile(join(root, 'mounter.log'), 'utf8');
    assert.match(calls, new RegExp(`-t tmpfs tmpfs ${vol('mem').replace(/[.~]/g, '\\$&')}`));
    assert.ok((await readFile('/proc/self/mounts', 'utf8')).includes(` ${vol('mem')} tmpfs `), 'the tmpfs stays mounted');
    setPods([]);
    await waitFor('volumes gone after deletion', async () => ((await readFile('/proc/self/mounts', 'utf8')).includes(vol('mem')) ? undefined : true), 15_000);
  });
});

void describe('agent wiring: FailedSync', () => {
  void it('a pass that cannot read a container\'s status records FailedSync "error determining status" and fails', async () => {
    const root = await mkdtemp(join(tmpdir(), 'orchlet-failedsync-'));
    const runtime = new ProcessRuntime();
    const events: string[] = [];
    const sink: EventSink = { event: (ref, type, reason, message) => events.push(`${ref.name} ${type} ${reason} ${message}`) };
    const syncer = new PodSyncer({ runtime, statusManager: new StatusManager(), rootDir: root, allowPrivileged: false, events: sink });
    const p = pod('broken', { containers: [{ name: 'c', image: 'busybox', command: ['sleep', '30'] }] });
    try {
      await syncer.syncPod(p);
      assert.deepEqual(events.filter((e) => e.includes('FailedSync')), []);
      const real = runtime.containerStatus.bind(runtime);
      runtime.containerStatus = () => Promise.reject(new RuntimeError('Unavailable', 'runtime is down'));
      await assert.rejects(syncer.syncPod(p), /runtime is down/);
      assert.deepEqual(events.filter((e) => e.includes('FailedSync')), ['broken-node1 Warning FailedSync error determining status: runtime is down']);
      // a gone instance is no error
      runtime.containerStatus = () => Promise.reject(new RuntimeError('NotFound', 'gone'));
      await syncer.syncPod(p);
      assert.equal(events.filter((e) => e.includes('FailedSync')).length, 1);
      runtime.containerStatus = real;
      await syncer.terminatePod(p, 0);
      await syncer.cleanupPod(p);
    } finally {
      await runtime.shutdown(0);
      await rm(root, { recursive: true, force: true });
    }
  });
});

void describe('agent wiring: --max-open-files', () => {
  void it('sets RLIMIT_NOFILE (soft and hard) of a process with prlimit', async () => {
    const child = spawn('sleep', ['30'], { stdio: 'ignore' });
    try {
      await setMaxOpenFiles(512, child.pid);
      assert.deepEqual(await maxOpenFilesOf(child.pid), { soft: 512, hard: 512 });
      await assert.rejects(setMaxOpenFiles(-1, child.pid));
    } finally {
      child.kill('SIGKILL');
    }
  });
});
