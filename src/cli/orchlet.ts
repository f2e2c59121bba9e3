import { readFile } from 'node:fs/promises';
import { totalmem } from 'node:os';
import { Agent, nodeNameOf, type AgentConfig } from '../agent/agent.js';
import { loadKubeconfig } from '../agent/client/kubeconfig.js';
import { defaultNodeIP, readHostFacts } from '../agent/node/hostinfo.js';
import { parseTaints } from '../agent/node/nodestatus.js';
import { agentHelp, parseAgentOptions, type AgentOptions } from '../agent/options.js';
import { CriRuntime } from '../agent/runtime/cri.js';
import { ProcessRuntime } from '../agent/runtime/process.js';
import type { Runtime } from '../agent/runtime/runtime.js';
import { versionInfo, versionLine } from '../util/version.js';
import { fail, stopOnSignals } from './run.js';

const PROGRAM = 'orchlet';

/**
 * Options the option table accepts (status 'supported') whose behaviour is not built yet: refused
 * with a clear message rather than silently ignored.
 */
const NOT_YET: Record<string, string> = {
  config: 'configuration files are not implemented yet',
};

function checkImplemented(o: AgentOptions): void {
  for (const [name, why] of Object.entries(NOT_YET)) {
    if (o.explicitFlags.has(name)) throw new Error(`--${name}: ${why}`);
  }
  if (o.containerRuntime !== 'remote') {
    for (const name of ['container-runtime-endpoint', 'image-service-endpoint']) {
      if (o.explicitFlags.has(name)) throw new Error(`--${name}: only with --container-runtime=remote`);
    }
  }
  if (o.authorizationMode === 'Webhook') throw new Error('--authorization-mode: Webhook is not implemented yet (AlwaysAllow is)');
}

export type Logger = (level: 'info' | 'error', message: string) => void;

/**
 * The container runtime of --container-runtime: the built-in process runtime, or (remote) the CRI
 * runtime at --container-runtime-endpoint, which must answer now.
 */
async function runtimeFromOptions(options: AgentOptions): Promise<Runtime> {
  if (options.containerRuntime !== 'remote') return new ProcessRuntime({ allowPrivileged: false });
  const endpoint = options.containerRuntimeEndpoint;
  try {
    return await CriRuntime.connect({
      runtimeEndpoint: endpoint,
      ...(options.imageServiceEndpoint ? { imageEndpoint: options.imageServiceEndpoint } : {}),
      requestTimeoutMs: options.runtimeRequestTimeout,
      pinnedImages: [options.podInfraContainerImage],
    });
  } catch (err) {
    throw new Error(`--container-runtime-endpoint=${endpoint}: cannot reach the container runtime: ${err instanceof Error ? err.message : String(err)}`, {
      cause: err,
    });
  }
}

/** The agent's configuration from its parsed options (reads the kubeconfig, the client CA and the host's facts). */
export async function agentConfigFromOptions(options: AgentOptions, log: Logger): Promise<AgentConfig> {
  const nodeName = nodeNameOf(options.hostnameOverride);
  const nodeIPs = (options.nodeIp ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (nodeIPs.length === 0) nodeIPs.push(defaultNodeIP());
  const runtime = await runtimeFromOptions(options);
  const config: AgentConfig = {
    nodeName,
    rootDir: options.rootDir,
    fileCheckFrequencyMs: options.fileCheckFrequency,
    syncFrequencyMs: options.syncFrequency,
    httpCheckFrequencyMs: options.httpCheckFrequency,
    nodeIP: nodeIPs[0]!,
    runtime,
    log,
  };
  if (runtime.runsImages) {
    config.podConfig = {
      cgroupRoot: options.cgroupRoot,
      cgroupsPerQOS: options.cgroupsPerQos,
      clusterDNS: options.clusterDns ?? [],
      resolvConf: options.resolvConf,
      cpuCFSQuota: options.cpuCfsQuota,
      cpuCFSQuotaPeriodMs: options.cpuCfsQuotaPeriod,
      memoryCapacity: totalmem(),
      ...(options.clusterDomain !== undefined ? { clusterDomain: options.clusterDomain } : {}),
    };
    config.imagePulls = { serialize: options.serializeImagePulls, qps: options.registryQps, burst: options.registryBurst };
  }
  if (options.podManifestPath !== undefined && options.podManifestPath !== '') config.podManifestPath = options.podManifestPath;
  if (options.manifestUrl !== undefined && options.manifestUrl !== '') {
    config.manifestURL = options.manifestUrl;
    config.manifestURLHeaders = options.manifestUrlHeader;
  }
  config.server = {
    address: options.address,
    port: options.port,
    readOnlyPort: options.readOnlyPort,
    healthzAddress: options.healthzBindAddress,
    healthzPort: options.healthzPort,
    enableServer: options.enableServer,
    enableDebuggingHandlers: options.enableDebuggingHandlers,
    anonymousAuth: options.anonymousAuth,
    certDir: options.certDir,
    streamingIdleTimeoutMs: options.streamingConnectionIdleTimeout,
    ...(options.clientCaFile !== undefined ? { clientCA: await readFile(options.clientCaFile, 'utf8') } : {}),
    ...(options.tlsCertFile !== undefined ? { tlsCertFile: options.tlsCertFile } : {}),
    ...(options.tlsPrivateKeyFile !== undefined ? { tlsPrivateKeyFile: options.tlsPrivateKeyFile } : {}),
  };
  if (options.orchconfig !== undefined && options.orchconfig !== '') {
    const contentType = options.orchApiContentType;
    if (options.explicitFlags.has('orch-api-content-type') && contentType !== 'application/json') {
      log('info', `--orch-api-content-type=${contentType}: orchlet talks JSON to the server (application/json)`);
    }
    const rt = await runtime.version();
    config.api = {
      client: await loadKubeconfig(options.orchconfig),
      qps: options.orchApiQps || 5,
      burst: options.orchApiBurst || 10,
      eventQPS: options.eventQps || 5,
      eventBurst: options.eventBurst || 10,
      node: {
        nodeName,
        nodeIPs,
        labels: options.nodeLabels ?? {},
        taints: options.registerNode ? parseTaints(options.registerWithTaints) : [],
        registerSchedulable: options.registerSchedulable,
        ...(options.providerId !== undefined ? { providerID: options.providerId } : {}),
        maxPods: options.maxPods,
        reserved: [options.orchReserved ?? {}, options.systemReserved ?? {}],
        evictionHard: options.evictionHard ?? {},
        containerRuntimeVersion: `${rt.runtimeName}://${rt.runtimeVersion}`,
        kubeletVersion: versionInfo().gitVersion,
        controllerManagedAttachDetach: options.enableControllerAttachDetach,
      },
      host: await readHostFacts(options.rootDir, nodeName),
      registerNode: options.registerNode,
      statusUpdateFrequencyMs: options.nodeStatusUpdateFrequency,
      leaseDurationSeconds: options.nodeLeaseDurationSeconds,
    };
  }
  return config;
}

export async function main(argv: string[]): Promise<void> {
  let options: AgentOptions;
  try {
    options = parseAgentOptions(argv);
    checkImplemented(options);
  } catch (err) {
    fail(PROGRAM, err);
  }
  if (options.help) {
    process.stdout.write(agentHelp());
    return;
  }
  if (options.version) {
    process.stdout.write(versionLine(PROGRAM) + '\n');
    return;
  }
  const log: Logger = (level, message) => {
    process.stderr.write(`${PROGRAM}: ${level === 'error' ? 'E' : 'I'} ${message}\n`);
  };
  let agent: Agent;
  try {
    agent = new Agent(await agentConfigFromOptions(options, log));
  } catch (err) {
    fail(PROGRAM, err);
  }
  stopOnSignals(PROGRAM, () => agent.stop());
  try {
    await agent.start();
  } catch (err) {
    fail(PROGRAM, err);
  }
  const servers = agent.servers;
  const where = servers && servers.port > 0 ? `, serving on port ${servers.port}` : '';
  const mode = options.orchconfig ? `registering with the server of ${options.orchconfig}` : 'standalone';
  log('info', `running ${mode} as node ${nodeNameOf(options.hostnameOverride)}, root dir ${options.rootDir}${where}`);
}
