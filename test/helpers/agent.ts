/**
 * An orchlet in API-server mode for end-to-end tests, in-process: the built-in process runtime, a
 * temporary root directory, its servers on free ports (port 0), registered with a cluster that
 * startCluster() started. Fast heartbeats by default (lease of 4 s, status every 1 s) so tests
 * need not wait kubelet's 10 s.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, type AgentConfig } from '../../src/agent/agent.js';
import { ProcessRuntime } from '../../src/agent/runtime/process.js';
import { versionInfo } from '../../src/util/version.js';
import { readHostFacts } from '../../src/agent/node/hostinfo.js';
import type { TestCluster } from './cluster.js';

export interface TestAgent {
  agent: Agent;
  nodeName: string;
  rootDir: string;
  /** https://127.0.0.1:<port> of the agent's main server. */
  url: string;
  logs: string[];
  stop(): Promise<void>;
}

export interface StartAgentOptions {
  nodeName?: string;
  podManifestPath?: string;
  manifestURL?: string;
  leaseDurationSeconds?: number;
  statusUpdateFrequencyMs?: number;
  qps?: number;
  burst?: number;
  /** Crash-loop back-off (default 300 ms doubling to 1.2 s, for fast tests). */
  backoff?: { initialMs: number; maxMs: number };
  /** --enable-controller-attach-detach (default true). */
  controllerManagedAttachDetach?: boolean;
  extra?: Partial<AgentConfig>;
}

let counter = 0;

export async function startAgent(cluster: TestCluster, o: StartAgentOptions = {}): Promise<TestAgent> {
  const rootDir = await mkdtemp(join(tmpdir(), 'orchlet-api-'));
  const nodeName = o.nodeName ?? `node-${process.pid}-${++counter}`;
  const logs: string[] = [];
  // a runtime given in `extra` is used as it is (a built-in one made here would keep its spawner helpers alive)
  const runtime = o.extra?.runtime ?? new ProcessRuntime();
  const rt = await runtime.version();
  const agent = new Agent({
    nodeName,
    rootDir,
    fileCheckFrequencyMs: 1000,
    httpCheckFrequencyMs: 1000,
    syncFrequencyMs: 60_000,
    nodeIP: '127.0.0.1',
    runtime,
    backoff: o.backoff ?? { initialMs: 300, maxMs: 1200 },
    ...(o.podManifestPath !== undefined ? { podManifestPath: o.podManifestPath } : {}),
    ...(o.manifestURL !== undefined ? { manifestURL: o.manifestURL } : {}),
    server: {
      address: '127.0.0.1',
      port: 0,
      readOnlyPort: 0,
      healthzAddress: '127.0.0.1',
      healthzPort: 0,
      enableServer: true,
      enableDebuggingHandlers: true,
      anonymousAuth: true,
      certDir: join(rootDir, 'pki'),
    },
    api: {
      client: { server: cluster.url, ca: cluster.cp.server.caCert, token: cluster.token },
      qps: o.qps ?? 50,
      burst: o.burst ?? 100,
      eventQPS: 50,
      eventBurst: 100,
      node: {
        nodeName,
        nodeIPs: ['127.0.0.1'],
        labels: {},
        taints: [],
        registerSchedulable: true,
        maxPods: 110,
        reserved: [],
        evictionHard: { 'memory.available': '100Mi', 'nodefs.available': '10%' },
        containerRuntimeVersion: `${rt.runtimeName}://${rt.runtimeVersion}`,
        kubeletVersion: versionInfo().gitVersion,
        controllerManagedAttachDetach: o.controllerManagedAttachDetach ?? true,
      },
      host: await readHostFacts(rootDir, nodeName),
      registerNode: true,
      statusUpdateFrequencyMs: o.statusUpdateFrequencyMs ?? 1000,
      leaseDurationSeconds: o.leaseDurationSeconds ?? 4,
    },
    log: (level, m) => logs.push(`${level} ${m}`),
    ...(o.extra ?? {}),
  });
  await agent.start();
  return {
    agent,
    nodeName,
    rootDir,
    url: `https://127.0.0.1:${agent.servers?.port ?? 0}`,
    logs,
    async stop() {
      await agent.stop();
      await rm(rootDir, { recursive: true, force: true });
    },
  };
}

/** A TCP port on 127.0.0.1 that was free a moment ago (for programs that refuse port 0). */
export async function freePort(): Promise<number> {
  const { createServer } = await import('node:net');
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}
