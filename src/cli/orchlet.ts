import { existsSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { Agent, nodeNameOf, type AgentConfig } from '../agent/agent.js';
import { loadKubeconfig } from '../agent/client/kubeconfig.js';
import { bootstrapClientCert } from '../agent/bootstrap.js';
import { parseThresholds } from '../agent/eviction.js';
import { acquireLock, watchLockContention } from '../agent/lockfile.js';
import { setMaxOpenFiles } from '../agent/rlimit.js';
import { tlsCiphers, tlsMinVersion } from '../util/tls.js';
import { agentLogger, checkLoggingOptions } from '../agent/logging.js';
import { applyOomScoreAdj, setupKernelTunables, sysctlAllowlist } from '../agent/sysctl.js';
import type { Logger as AgentLogger } from '../util/log.js';
import { allocatableEvictionHard, checkDeprecatedOptions, deprecationWarnings } from '../agent/deprecations.js';
import { checkIptablesBits } from '../agent/network/iptables-util.js';
import { networkOptionNotes } from '../agent/network/dockershim-options.js';
import { runOnce } from '../agent/runonce.js';
import { resourceManagersFromOptions } from '../agent/cm/index.js';
import { nodeCgroupsFromOptions } from '../agent/cgroups/options.js';
import { checkCgroupOptions } from '../agent/cgroups/manager.js';
import { addAllocatableThresholds } from '../agent/cgroups/memcg.js';
import { credentialProvidersFromOptions } from '../agent/credentialprovider/plugin.js';
import { parseDuration } from '../util/flags.js';
import { parseQuantity } from '../util/quantity.js';
import { defaultNodeIP, readHostFacts } from '../agent/node/hostinfo.js';
import { parseTaints } from '../agent/node/nodestatus.js';
import { agentHelp, parseAgentOptions, type AgentOptions } from '../agent/options.js';
import { CriRuntime } from '../agent/runtime/cri.js';
import { ProcessRuntime } from '../agent/runtime/process.js';
import type { Runtime } from '../agent/runtime/runtime.js';
import { versionInfo, versionLine } from '../util/version.js';
import { fail, stopOnSignals } from './run.js';

const PROGRAM = 'orchlet';

function checkImplemented(o: AgentOptions): void {
  if (o.runonce && o.enableServer && (o.explicitFlags.has('enable-server') || o.configFileFlags.has('enable-server'))) {
    throw new Error('--runonce and --enable-server exclude each other: a run-once agent serves nothing');
  }
  if (o.containerRuntime !== 'remote') {
    for (const name of ['container-runtime-endpoint', 'image-service-endpoint']) {
      if (o.explicitFlags.has(name)) throw new Error(`--${name}: only with --container-runtime=remote`);
    }
  }
  if (o.imageGcLowThreshold >= o.imageGcHighThreshold) {
    throw new Error(
      `invalid configuration: imageGCLowThresholdPercent (--image-gc-low-threshold) ${o.imageGcLowThreshold} must be less than imageGCHighThresholdPercent (--image-gc-high-threshold) ${o.imageGcHighThreshold}`,
    );
  }
  if ((o.bootstrapOrchconfig ?? '') !== '' && (o.orchconfig ?? '') === '') {
    throw new Error('--bootstrap-orchconfig: --orchconfig must name the file the bootstrapped credentials are written to');
  }
  if (o.rotateServerCertificates && o.featureGates.RotateKubeletServerCertificate !== true) {
    throw new Error('--rotate-server-certificates requires the RotateKubeletServerCertificate feature gate');
  }
  const cgroups = checkCgroupOptions(o);
  if (cgroups !== undefined) throw new Error(cgroups);
  const bits = checkIptablesBits(o.makeIptablesUtilChains, o.iptablesMasqueradeBit, o.iptablesDropBit);
  if (bits !== undefined) throw new Error(bits);
  if (o.authorizationMode === 'Webhook' && (o.orchconfig ?? '') === '') throw new Error('--authorization-mode=Webhook needs API-server mode (--orchconfig)');
  if (o.authenticationTokenWebhook && (o.orchconfig ?? '') === '') throw new Error('--authentication-token-webhook needs API-server mode (--orchconfig)');
}

export type Logger = (level: 'info' | 'error', message: string) => void;

/**
 * The container runtime of --container-runtime: the built-in process runtime, or (remote) the CRI
 * runtime at --container-runtime-endpoint, which must answer now.
 */
async function runtimeFromOptions(options: AgentOptions, log: Logger): Promise<Runtime> {
  if (options.containerRuntime !== 'remote') return new ProcessRuntime({ allowPrivileged: false });
  const endpoint = options.containerRuntimeEndpoint;
  try {
    return await CriRuntime.connect({
      runtimeEndpoint: endpoint,
      ...(options.imageServiceEndpoint ? { imageEndpoint: options.imageServiceEndpoint } : {}),
      requestTimeoutMs: options.runtimeRequestTimeout,
      pinnedImages: [options.podInfraContainerImage],
      hairpin: { mode: networkOptionNotes(options).hairpinMode, log: (m) => log('error', m) },
    });
  } catch (err) {
    throw new Error(`--container-runtime-endpoint=${endpoint}: cannot reach the container runtime: ${err instanceof Error ? err.message : String(err)}`, {
      cause: err,
    });
  }
}

/**
 * kubelet's --fail-swap-on check: with swap enabled (a device in /proc/swaps) the agent refuses to
 * start unless --fail-swap-on=false. `swaps` is the text of /proc/swaps.
 */
export function checkSwap(failSwapOn: boolean, swaps: string): void {
  const devices = swaps
    .split('\n')
    .slice(1)
    .map((l) => l.trim())
    .filter((l) => l !== '');
  if (failSwapOn && devices.length > 0) {
    throw new Error(`running with swap on is not supported, please disable swap! or set --fail-swap-on flag to false. /proc/swaps contained: [${devices.join(' ')}]`);
  }
}

/** The node's pod capacity: --max-pods, capped by --pods-per-core times the cores when that is set. */
export function podCapacity(maxPods: number, podsPerCore: number, cores: number): number {
  return podsPerCore > 0 ? Math.min(maxPods, podsPerCore * cores) : maxPods;
}

/** --tls-cipher-suites as the agent's server option (util/tls.ts maps the names as the server does). */
function agentCiphers(suites: readonly string[], log: Logger): { tlsCiphers?: string } {
  const ciphers = tlsCiphers(suites, (m) => log('error', m));
  return ciphers !== undefined ? { tlsCiphers: ciphers } : {};
}

/** --image-credential-provider-config and --image-credential-provider-bin-dir (credentialprovider/plugin.ts). */
function credentialProviders(options: AgentOptions, log: Logger): AgentConfig['credentials'] {
  try {
    return credentialProvidersFromOptions(
      { configPath: options.imageCredentialProviderConfig, binDir: options.imageCredentialProviderBinDir, gateEnabled: options.featureGates.OrchletCredentialProviders === true },
      log,
    );
  } catch (err) {
    throw new Error(`Failed to register CRI auth plugins: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
}

/** The agent's configuration from its parsed options (reads the kubeconfig, the client CA and the host's facts). */
export async function agentConfigFromOptions(options: AgentOptions, log: Logger): Promise<AgentConfig> {
  const nodeName = nodeNameOf(options.hostnameOverride);
  // kubelet: --reserved-cpus replaces the cpu of --orch-reserved and --system-reserved (allocatable too)
  const managers = resourceManagersFromOptions(options, log);
  [options.orchReserved, options.systemReserved] = managers.reserved;
  const maxPods = podCapacity(options.maxPods, options.podsPerCore, cpus().length || 1);
  let thresholds;
  try {
    thresholds = parseThresholds(options.evictionHard, options.evictionSoft, options.evictionSoftGracePeriod, options.evictionMinimumReclaim, parseDuration);
  } catch (err) {
    throw new Error(`eviction thresholds: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
  const nodeIPs = (options.nodeIp ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (nodeIPs.length === 0) nodeIPs.push(defaultNodeIP());
  const runtime = await runtimeFromOptions(options, log);
  const config: AgentConfig = {
    nodeName,
    rootDir: options.rootDir,
    fileCheckFrequencyMs: options.fileCheckFrequency,
    syncFrequencyMs: options.syncFrequency,
    httpCheckFrequencyMs: options.httpCheckFrequency,
    nodeIP: nodeIPs[0]!,
    runtime,
    log,
    maxPods,
    sysctls: sysctlAllowlist(options.allowedUnsafeSysctls ?? []),
    allocatable: { cpu: cpus().length || 1, memory: totalmem() },
    eviction: {
      thresholds,
      pressureTransitionPeriodMs: options.evictionPressureTransitionPeriod,
      maxPodGracePeriodSeconds: options.evictionMaxPodGracePeriod,
    },
    containerLogs: { maxSizeBytes: Number(parseQuantity(options.containerLogMaxSize).value()), maxFiles: options.containerLogMaxFiles },
    featureGates: options.featureGates,
    gc: {
      containers: {
        minAgeMs: options.minimumContainerTtlDuration ?? 0,
        maxPerPodContainer: options.maximumDeadContainersPerContainer,
        maxContainers: options.maximumDeadContainers,
      },
      images: {
        highThresholdPercent: options.imageGcHighThreshold,
        lowThresholdPercent: options.imageGcLowThreshold,
        minAgeMs: options.minimumImageTtlDuration,
      },
    },
    nodeStatusMaxImages: options.nodeStatusMaxImages,
    keepTerminatedPodVolumes: options.keepTerminatedPodVolumes,
    mounterPath: options.experimentalMounterPath,
    volumeStatsAggPeriodMs: options.volumeStatsAggPeriod,
    resourceManagers: managers.config,
    // kubelet's initNetworkUtil (Linux) and updatePodCIDR
    network: {
      ...(options.makeIptablesUtilChains && process.platform === 'linux'
        ? { iptablesUtil: { masqueradeBit: options.iptablesMasqueradeBit, dropBit: options.iptablesDropBit } }
        : {}),
      podCIDR: options.podCidr ?? '',
      nodeSpecPeriodMs: options.nodeStatusUpdateFrequency,
    },
    masterServiceNamespace: options.masterServiceNamespace,
    credentials: credentialProviders(options, log),
    volumePluginDir: options.volumePluginDir,
  };
  for (const line of networkOptionNotes(options).lines) log('info', line);
  if (options.runonce) config.stopPodsOnExit = !runtime.detach;
  Object.assign(config, nodeCgroupsFromOptions(options, runtime, log));
  // kubelet's addAllocatableThresholds: hard memory.available thresholds also watch the pods' cgroup
  if (config.eviction) config.eviction.thresholds = addAllocatableThresholds(config.eviction.thresholds, options.enforceNodeAllocatable);
  if (runtime.runsImages) {
    config.podConfig = {
      cgroupRoot: options.cgroupRoot,
      cgroupsPerQOS: options.cgroupsPerQos,
      cgroupDriver: options.cgroupDriver,
      clusterDNS: options.clusterDns ?? [],
      resolvConf: options.resolvConf,
      cpuCFSQuota: options.cpuCfsQuota,
      cpuCFSQuotaPeriodMs: options.cpuCfsQuotaPeriod,
      memoryCapacity: totalmem(),
      seccomp: { seccompDefault: options.seccompDefault === true, profileRoot: join(options.rootDir, 'seccomp') },
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
    contentionProfiling: options.contentionProfiling,
    anonymousAuth: options.anonymousAuth,
    certDir: options.certDir,
    authorizationMode: options.authorizationMode === 'Webhook' ? 'Webhook' : 'AlwaysAllow',
    authorizedTTLMs: options.authorizationWebhookCacheAuthorizedTtl,
    unauthorizedTTLMs: options.authorizationWebhookCacheUnauthorizedTtl,
    ...(options.authenticationTokenWebhook ? { tokenWebhookCacheTTLMs: options.authenticationTokenWebhookCacheTtl } : {}),
    streamingIdleTimeoutMs: options.streamingConnectionIdleTimeout,
    ...(options.clientCaFile !== undefined ? { clientCA: await readFile(options.clientCaFile, 'utf8') } : {}),
    ...(options.tlsCertFile !== undefined ? { tlsCertFile: options.tlsCertFile } : {}),
    ...(options.tlsPrivateKeyFile !== undefined ? { tlsPrivateKeyFile: options.tlsPrivateKeyFile } : {}),
    ...(options.tlsMinVersion !== undefined && options.tlsMinVersion !== '' ? { tlsMinVersion: tlsMinVersion(options.tlsMinVersion) } : {}),
    ...agentCiphers(options.tlsCipherSuites ?? [], log),
  };
  if (options.runonce) delete config.server; // a run-once agent serves nothing
  if (options.orchconfig !== undefined && options.orchconfig !== '') {
    const rt = await runtime.version();
    if (options.bootstrapOrchconfig !== undefined && options.bootstrapOrchconfig !== '') {
      await bootstrapClientCert({ orchconfig: options.orchconfig, bootstrapOrchconfig: options.bootstrapOrchconfig, certDir: options.certDir, nodeName, log, contentType: options.orchApiContentType });
    }
    if (options.rotateCertificates || options.rotateServerCertificates) {
      config.certificates = { certDir: options.certDir, rotateClient: options.rotateCertificates, rotateServer: options.rotateServerCertificates };
      if (options.bootstrapOrchconfig !== undefined && options.bootstrapOrchconfig !== '') {
        // kubelet's exitAfter: exit so that the next start bootstraps a new client certificate.
        config.certificates.onClientExpired = () => {
          log('error', 'the client certificate expired 5 minutes ago and could not be renewed: exiting to bootstrap again');
          process.exit(1);
        };
      }
    }
    config.api = {
      client: { ...(await loadKubeconfig(options.orchconfig)), contentType: options.orchApiContentType },
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
        maxPods,
        reserved: [options.orchReserved ?? {}, options.systemReserved ?? {}],
        evictionHard: allocatableEvictionHard(options.evictionHard, options.experimentalAllocatableIgnoreEviction),
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

/**
 * --oom-score-adj and --protect-kernel-defaults. kubelet logs a failed oom_score_adj and goes on. Its container
 * manager (setupNode) refuses to start when protected tunables differ; unprotected, it writes the expected values,
 * logging each at -v=2 ('Updating kernel flag'), and a write that fails stops the start as well, except in a user
 * namespace with the OrchletInUserNamespace gate (kubelet's KubeletInUserNamespace), where it is logged and ignored.
 */
function kernelSettings(options: AgentOptions, log: AgentLogger, procSys = '/proc/sys'): void {
  const why = applyOomScoreAdj(options.oomScoreAdj);
  if (why !== undefined) log.warning('Failed to ApplyOOMScoreAdj', 'err', why);
  const inUserNS = runningInUserNS();
  const ignoreFailures = inUserNS && options.featureGates.OrchletInUserNamespace === true;
  const tunables = setupKernelTunables(options.protectKernelDefaults ? 'protect' : 'modify', procSys, (u) => {
    if (u.error === undefined) log.v(2).info('Updating kernel flag', 'flag', u.flag, 'expectedValue', u.expected, 'actualValue', u.actual);
    else if (ignoreFailures) log.v(2).info('Updating kernel flag failed (running in UserNS, ignoring)', 'flag', u.flag, 'err', u.error);
    else if (inUserNS) log.error('Updating kernel flag failed (Hint: enable OrchletInUserNamespace feature flag to ignore the error)', 'flag', u.flag, 'err', u.error);
  });
  const errors = ignoreFailures ? tunables.errors.filter((e) => !e.startsWith('open ')) : tunables.errors;
  if (errors.length > 0) fail(PROGRAM, new Error(`Failed to start ContainerManager: [${errors.join(', ')}]`));
}

/** runc's RunningInUserNS: a uid_map other than the whole range mapped onto itself. */
function runningInUserNS(): boolean {
  try {
    const fields = readFileSync('/proc/self/uid_map', 'utf8').trim().split(/\s+/);
    return !(fields.length === 3 && fields[0] === '0' && fields[1] === '0' && fields[2] === '4294967295');
  } catch {
    return false;
  }
}

/**
 * --cgroup-driver=systemd: where systemd is not running (no /run/systemd/system, sd_booted's test) the error of
 * kubelet's cgroup manager; where it runs, the pods' cgroups are slices made through systemd's D-Bus API
 * (src/agent/cgroups/systemd.ts).
 */
function checkCgroupDriver(driver: string, runDir = '/run/systemd/system'): void {
  if (driver !== 'systemd') return;
  if (!existsSync(runDir)) throw new Error("--cgroup-driver=systemd: systemd not running on this host, can't use systemd as a cgroups manager");
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
  // pflag's deprecation warnings, then the logger of klog's flags (files flushed at exit).
  for (const w of deprecationWarnings(options.explicitFlags)) process.stderr.write(`${w}\n`);
  let logger;
  try {
    checkLoggingOptions(options);
    checkDeprecatedOptions(options);
    checkCgroupDriver(options.cgroupDriver);
    if (options.seccompDefault === true && options.featureGates.SeccompDefault !== true) {
      throw new Error('invalid configuration: seccompDefault true requires feature gate SeccompDefault');
    }
    logger = agentLogger(options, PROGRAM);
  } catch (err) {
    fail(PROGRAM, err);
  }
  const agentLog = logger;
  process.on('exit', () => agentLog.stop());
  if (process.platform === 'linux') kernelSettings(options, agentLog);
  const log: Logger = (level, message) => (level === 'error' ? agentLog.error(message) : agentLog.info(message));
  for (const w of options.configWarnings) log('error', w);
  const agentRef: { current?: Agent } = {};
  let agent: Agent;
  try {
    if (process.platform === 'linux') checkSwap(options.failSwapOn, readFileSync('/proc/swaps', 'utf8'));
    if (options.lockFile !== undefined && options.lockFile !== '') {
      await acquireLock(options.lockFile, (m) => log('info', m));
      if (options.exitOnLockContention) {
        watchLockContention(options.lockFile, () => {
          log('info', `another agent wants the lock file ${options.lockFile}: exiting (--exit-on-lock-contention)`);
          // As on SIGTERM: the process runtime's pods stop with the agent, a CRI runtime's stay for the next one.
          void (agentRef.current?.stop() ?? Promise.resolve()).finally(() => process.exit(0));
        });
      }
    }
    agent = new Agent({ ...(await agentConfigFromOptions(options, log)), logger: agentLog });
    agentRef.current = agent;
    // kubelet's RunKubelet: only logged when it fails (see src/agent/rlimit.ts)
    await setMaxOpenFiles(options.maxOpenFiles).catch((err: unknown) =>
      log('error', `Failed to set rlimit on max file handles: ${err instanceof Error ? err.message : String(err)}`),
    );
  } catch (err) {
    fail(PROGRAM, err);
  }
  stopOnSignals(PROGRAM, () => agent.stop());
  try {
    await agent.start();
  } catch (err) {
    fail(PROGRAM, err);
  }
  if (options.runonce) {
    const result = await runOnce(agent);
    for (const line of result.lines) process.stdout.write(`${line}\n`);
    await agent.stop();
    if (!result.ok) fail(PROGRAM, new Error('runonce failed: not every container runs'));
    log('info', 'started as runonce');
    process.exit(0);
  }
  const servers = agent.servers;
  const where = servers && servers.port > 0 ? `, serving on port ${servers.port}` : '';
  const mode = options.orchconfig ? `registering with the server of ${options.orchconfig}` : 'standalone';
  log('info', `running ${mode} as node ${nodeNameOf(options.hostnameOverride)}, root dir ${options.rootDir}${where}`);
}
