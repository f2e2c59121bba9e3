/**
 * The control plane as one value: the storage the options name and the API server on top of it.
 * `orch-apiserver` builds one from its command line; tests build as many as they like (port 0, memory store).
 */
import { installApi } from '../endpoints/api.js';
import { chainAdmission, IMMORTAL_NAMESPACES, namespaceLifecycle } from '../registry/admission/namespace-lifecycle.js';
import { isStatusError } from '../registry/errors.js';
import { BUILTIN_KINDS } from '../registry/kinds/index.js';
import { Registry } from '../registry/registry.js';
import { watchCacheSizes } from '../registry/cacher/sizes.js';
import type { Admission } from '../registry/store.js';
import { openStorage, type Storage, type StorageConfig } from '../storage/factory.js';
import { loadEncryptionConfig, TransformationMetrics } from './encryption-config.js';
import { loadAdmissionConfig, webhookAuthFrom } from './admission-config.js';
import type { PluginConfigReader } from '../registry/admission/plugin-config.js';
import { versionInfo } from '../util/version.js';
import { startNamespaceController } from './controllers/namespace.js';
import { startPvcProtectionController } from './controllers/pvc-protection.js';
import { startNodeLifecycleController } from './controllers/node-lifecycle.js';
import { startGarbageCollector } from './controllers/gc.js';
import { storageObjectInUseProtection } from '../registry/admission/storage-object-in-use.js';
import type { Controller } from './controllers/runner.js';
import type { ServerOptions } from './options.js';
import { createApiServer, type ApiServer, type ServerConfig } from './server.js';
import { agentTransportFrom, kindSettingsFrom } from './kindsettings.js';
import { loadEgressSelectorConfig } from './egress.js';
import { EgressMetrics } from './egress/metrics.js';
import type { Dialer } from '../util/dial.js';
import type { Tracer } from '../util/tracing.js';
import { createLogger, type LogFormat, type Logger } from '../util/log.js';
import { instrumentStorage, registerStorageMetrics } from './storage-metrics.js';
import { traceStorage } from '../storage/tracing.js';
import { servedKinds } from './runtimeconfig.js';
import { startIdentityLease } from './identity.js';
import { auditConfigFrom } from './audit.js';
import { buildAuthorizerChain, lateAuthorizer, validateAuthorizationConfig, type AuthorizerChain } from '../filters/authz/index.js';
import { RuleResolver } from '../registry/kinds/rbac/resolver.js';
import { rbacEscalationAdmission } from '../registry/kinds/rbac/escalation.js';
import { reconcileBootstrapPolicy } from './bootstrap-policy.js';
import { ensureApfBootstrap, startApfBootstrapMaintainer, startApfConfigController } from './apf-bootstrap.js';
import { startClusterRoleAggregation } from './controllers/clusterrole-aggregation.js';
import { apiAudiencesFrom, lateTokenAuthenticator, setupServiceAccounts, type ServiceAccountSetup } from './serviceaccounts.js';
import { serviceAccountAdmission } from '../registry/admission/serviceaccount.js';
import { authenticationInfoFrom, extraTokenAuthenticators, loadProxyClient, publishAuthenticationInfo, requestHeaderFrom } from './authenticators.js';
import { Aggregator } from './aggregator/index.js';
import { registerLocalAPIServices } from './controllers/apiservice-autoregister.js';
import { startAPIServiceAvailability } from './controllers/apiservice-available.js';
import { defaultTolerationSeconds } from '../registry/admission/default-toleration-seconds.js';
import { priorityAdmission } from '../registry/admission/priority.js';
import { limitRanger } from '../registry/admission/limitranger.js';
import { defaultStorageClass } from '../registry/admission/default-storage-class.js';
import { pvcResize } from '../registry/admission/pvc-resize.js';
import { taintNodesByCondition } from '../registry/admission/taint-nodes.js';
import { runtimeClassAdmission } from '../registry/admission/runtimeclass.js';
import { defaultIngressClass } from '../registry/admission/default-ingress-class.js';
import { loadWebhookFor, postJSON } from '../filters/webhookclient.js';
import { mutatingWebhookAdmission, validatingWebhookAdmission, type WebhookAdmissionDeps } from '../registry/admission/webhook.js';
import type { AdmissionMetricsSink } from '../registry/admission/metrics.js';
import type { ServiceAddress } from '../registry/service-resolver.js';
import { resourceQuotaAdmission, parseQuotaConfig } from '../registry/admission/quota.js';
import { startResourceQuotaController } from './controllers/resourcequota.js';
import { certificateApproval, certificateSigning, certificateSubjectRestriction } from '../registry/admission/certificates.js';
import { clusterSigningCA, startCsrSigningController, startCsrSigningUnavailable } from './controllers/csr-signing.js';
import { startCsrApprovingController } from './controllers/csr-approving.js';
import { startCsrCleaner } from './controllers/csr-cleaner.js';
import { parsePodSecurityConfig, podSecurity } from '../registry/admission/podsecurity/index.js';
import { ensureSystemPriorityClasses } from '../registry/kinds/priorityclass/index.js';
import {
  chooseAdvertiseAddress,
  checkServiceNetworkOptions,
  KubernetesServiceController,
  repairServiceNetwork,
  serviceNetworkFrom,
} from './controllers/kubernetes-service.js';

export interface ControlPlane {
  readonly server: ApiServer;
  readonly storage: Storage;
  readonly registry: Registry;
  /** Listens; resolves once serving. */
  start(): Promise<void>;
  /** Stops serving (after the shutdown delay), then closes the storage. Safe to call twice. */
  stop(): Promise<void>;
}

export function storageConfigFrom(o: ServerOptions): StorageConfig {
  return {
    servers: o.kvstoreServers,
    serversOverrides: o.kvstoreServersOverrides,
    prefix: o.kvstorePrefix,
    caFile: o.kvstoreCafile,
    certFile: o.kvstoreCertfile,
    keyFile: o.kvstoreKeyfile,
    healthcheckTimeoutMs: o.kvstoreHealthcheckTimeout,
    compactionIntervalMs: o.kvstoreCompactionInterval,
    countMetricPollPeriodMs: o.kvstoreCountMetricPollPeriod,
    dbMetricPollIntervalMs: o.kvstoreDbMetricPollInterval,
    dataDir: o.dataDir,
  };
}

/** The logger of -v, --vmodule, --logging-format, --log-flush-frequency and --experimental-logging-sanitization. */
export function loggerFrom(o: ServerOptions): Logger {
  return createLogger({
    verbosity: o.v,
    vmodule: o.vmodule,
    format: o.loggingFormat as LogFormat,
    flushFrequencyMs: o.logFlushFrequency,
    sanitization: o.experimentalLoggingSanitization,
  });
}

export function serverConfigFrom(o: ServerOptions, logger?: (message: string) => void): ServerConfig {
  return {
    bindAddress: o.bindAddress,
    securePort: o.securePort,
    advertiseAddress: o.advertiseAddress,
    certDir: o.certDir,
    tlsCertFile: o.tlsCertFile,
    tlsPrivateKeyFile: o.tlsPrivateKeyFile,
    tokenAuthFile: o.tokenAuthFile,
    clientCaFile: o.clientCaFile,
    anonymousAuth: o.anonymousAuth,
    authorizationModes: o.authorizationMode,
    shutdownDelayMs: o.shutdownDelayDuration,
    livezGracePeriodMs: o.livezGracePeriod,
    // kube-apiserver's ShutdownTimeout is its request timeout.
    shutdownTimeoutMs: o.requestTimeout,
    tlsMinVersion: o.tlsMinVersion,
    tlsCipherSuites: o.tlsCipherSuites,
    tlsSniCertKeys: o.tlsSniCertKey,
    hstsDirectives: o.strictTransportSecurityDirectives,
    corsAllowedOrigins: o.corsAllowedOrigins,
    externalHostname: o.externalHostname,
    permitPortSharing: o.permitPortSharing,
    permitAddressSharing: o.permitAddressSharing,
    http2MaxStreamsPerConnection: o.http2MaxStreamsPerConnection,
    goawayChance: o.goawayChance,
    maxRequestsInflight: o.maxRequestsInflight,
    maxMutatingRequestsInflight: o.maxMutatingRequestsInflight,
    enablePriorityAndFairness: o.enablePriorityAndFairness && o.featureGates.APIPriorityAndFairness === true,
    requestTimeoutMs: o.requestTimeout,
    shutdownSendRetryAfter: o.shutdownSendRetryAfter,
    audit: auditConfigFrom(o),
    profiling: o.profiling,
    contentionProfiling: o.contentionProfiling,
    metrics: {
      disabledMetrics: o.disabledMetrics,
      allowMetricLabels: o.allowMetricLabels,
      showHiddenMetricsForVersion: o.showHiddenMetricsForVersion,
    },
    maxConnectionBytesPerSec: o.maxConnectionBytesPerSec,
    responseCompression: o.featureGates.APIResponseCompression === true,
    ...(o.tracingConfigFile !== undefined && o.featureGates.APIServerTracing ? { tracingConfigFile: o.tracingConfigFile } : {}),
    versionInfo,
    ...(logger ? { logger } : {}),
  };
}

/** Opens the storage and builds the server; nothing listens until start(). */
export async function createControlPlane(
  options: ServerOptions,
  overrides: {
    securePort?: number;
    logger?: (message: string) => void;
    /** The csrsigning controller's duration and backdate (controller-manager options document 2 lacks): for tests. */
    csrSigning?: { durationSeconds?: number; backdateSeconds?: number };
  } = {},
): Promise<ControlPlane> {
  servedKinds(BUILTIN_KINDS, options.runtimeConfig); // validates --runtime-config before anything opens
  const logger = overrides.logger ?? loggerFrom(options);
  // The address the kubernetes Service's Endpoints publish; its family must be the service range's.
  const publicIP = chooseAdvertiseAddress(options.advertiseAddress, options.bindAddress);
  checkServiceNetworkOptions(options, publicIP, logger);
  // --encryption-provider-config: read before the storage opens; its transformers encrypt values at rest.
  const transformMetrics = new TransformationMetrics();
  // --admission-control-config-file: read before anything is opened, so that a bad file stops the start.
  const pluginConfig = loadAdmissionConfig(options.admissionControlConfigFile, options.admissionPlugins);
  // --egress-selector-config-file: read before anything opens; a dialer per proxied egress type (cluster,
  // controlplane, etcd), handed to the parts that dial out.
  const egressMetrics = new EgressMetrics();
  const egress = options.egressSelectorConfigFile ? loadEgressSelectorConfig(options.egressSelectorConfigFile, egressMetrics) : undefined;
  const encryption = options.encryptionProviderConfig ? loadEncryptionConfig(options.encryptionProviderConfig, transformMetrics) : undefined;
  let storage: Storage;
  try {
    storage = await openStorage({
      ...storageConfigFrom(options),
      log: logger,
      ...(encryption ? { transformers: encryption.transformers } : {}),
      ...(egress?.etcd ? { dial: egress.etcd } : {}),
    });
  } catch (err) {
    encryption?.close();
    throw err;
  }
  let server: ApiServer;
  // The authorizer chain reads the registry, made below; no request reaches it before start().
  const authz = lateAuthorizer();
  // Service-account tokens are checked against the registry, made below, with keys read once the server is.
  const serviceAccountTokens = lateTokenAuthenticator();
  let serviceAccounts: ServiceAccountSetup;
  let authenticationInfo: Record<string, string> | undefined;
  try {
    validateAuthorizationConfig(options.authorizationMode, options.authorizationPolicyFile, options.authorizationWebhookConfigFile);
    const cfg = serverConfigFrom(options, logger);
    cfg.authorizer = authz;
    if (overrides.securePort !== undefined) cfg.securePort = overrides.securePort;
    cfg.apiAudiences = apiAudiencesFrom(options);
    cfg.tokenAuthenticators = [serviceAccountTokens, ...extraTokenAuthenticators(options, () => registry, cfg.apiAudiences, egress?.controlplane)];
    if (egress?.controlplane && cfg.audit?.webhook) cfg.audit.webhook.dial = egress.controlplane;
    const requestHeader = requestHeaderFrom(options);
    if (requestHeader) cfg.requestHeader = requestHeader;
    loadProxyClient(options);
    authenticationInfo = authenticationInfoFrom(options);
    server = await createApiServer(cfg);
    serviceAccounts = await setupServiceAccounts(options, server, serviceAccountTokens, () => registry);
  } catch (err) {
    await storage.close();
    throw err;
  }
  transformMetrics.bind(server.metrics);
  if (egress) egressMetrics.bind(server.metrics);
  encryption?.probes.forEach((probe, i) => server.addHealthCheck(`kms-provider-${i}`, () => probe.check()));
  // kube-apiserver's storage check: reads the store within the health-check timeout.
  const timeout = options.kvstoreHealthcheckTimeout;
  server.addHealthCheck('etcd', async () => {
    const kv = storage.kvFor('', 'namespaces');
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        kv.currentRevision(),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error('storage health check timed out')), timeout);
        }),
      ]);
    } finally {
      clearTimeout(timer);
    }
  });
  const hooks = postStartHooks(server, !!server.flowControl);
  const serviceNetwork = serviceNetworkFrom(options, storage);
  serviceNetwork.log = logger;
  // kube-apiserver's loopback service resolver: the `kubernetes` Service on 443 is this server (webhooks, APIServices).
  const loopback = (): ServiceAddress | undefined => {
    if (!server.port) return undefined;
    const url = new URL(server.url);
    return { host: url.hostname.replace(/^\[|\]$/g, ''), port: server.port };
  };
  // Admission webhook calls go through the cluster egress, as client spans when tracing.
  const outbound = { ...(egress?.cluster ? { cluster: egress.cluster } : {}), ...(server.tracer ? { tracer: server.tracer } : {}) };
  const registry: Registry = new Registry({
    storage: server.tracer ? traceStorage(instrumentStorage(storage, server.metrics, BUILTIN_KINDS), server.tracer) : instrumentStorage(storage, server.metrics, BUILTIN_KINDS),
    kinds: BUILTIN_KINDS,
    featureGates: options.featureGates,
    admission: chainAdmission(
      [
        ...(await admissionPlugins(options, () => registry.store('', 'v1', 'namespaces'), () => registry, pluginConfig, outbound, server.metrics.admission, loopback)),
        rbacEscalationAdmission({ resolver: () => resolver, authorizer: () => authz }),
      ],
      { metrics: server.metrics.admission },
    ),
    settings: { ...kindSettingsFrom(options), authorizer: authz, serviceNetwork, ...serviceAccounts.settings },
    deleteCollectionWorkers: options.deleteCollectionWorkers,
    storageMediaType: options.storageMediaType,
    leaseReuseDurationSeconds: options.leaseReuseDurationSeconds,
    // --watch-cache, --default-watch-cache-size, --watch-cache-sizes.
    watchCacheSize: watchCacheSizes({ enabled: options.watchCache, defaultSize: options.defaultWatchCacheSize, sizes: options.watchCacheSizes }),
    log: (message) => logger(message),
  });
  const resolver = new RuleResolver(registry);
  let authorizers: AuthorizerChain;
  try {
    authorizers = await buildAuthorizerChain({
      modes: options.authorizationMode,
      policyFile: options.authorizationPolicyFile,
      webhook: {
        configFile: options.authorizationWebhookConfigFile,
        version: options.authorizationWebhookVersion,
        authorizedTTLMs: options.authorizationWebhookCacheAuthorizedTtl,
        unauthorizedTTLMs: options.authorizationWebhookCacheUnauthorizedTtl,
        ...(egress?.controlplane ? { dial: egress.controlplane } : {}),
      },
      registry,
      resolver,
    });
  } catch (err) {
    await storage.close();
    throw err;
  }
  authz.set(authorizers.authorizer);
  const served = servedKinds(registry.kinds, options.runtimeConfig);
  const servedSet = new Set(served);
  server.metrics.resourceKind = (group, version, resource, subresource = '') => {
    const decl = registry.store(group, version, resource)?.decl;
    if (!decl || !servedSet.has(decl)) return undefined;
    const routed = subresource === '' || !!(decl.subresources && subresource in decl.subresources) || !!decl.actions?.[subresource] || !!decl.connectors?.[subresource];
    return routed ? decl.kind : undefined;
  };
  registerStorageMetrics(server.metrics, storage, storageConfigFrom(options));
  // Priority and fairness estimates a list's width from the same object counts.
  if (server.flowControl) server.flowControl.objectCount = (gr) => storage.metrics.objectCounts.get(gr);
  // Labelled as Kubernetes labels it, by the cached object type ('*core.PersistentVolumeClaim').
  const cachedTypes = () => new Map([...registry.watchCaches.values()].map((c) => [c.objectType, c.capacity]));
  server.metrics.gaugeFromMap({ name: 'watch_cache_capacity', help: 'Total capacity of watch cache broken by resource type.' }, 'resource', cachedTypes);
  // The aggregation layer: APIServices, requests proxied to extension API servers (--enable-aggregator-routing).
  const aggregator = new Aggregator({
    registry,
    servedKinds: served,
    proxyClient: loadProxyClient(options),
    enableAggregatorRouting: options.enableAggregatorRouting,
    loopback,
    ...(server.tracer ? { tracer: server.tracer } : {}),
    ...(egress?.cluster ? { dial: egress.cluster } : {}),
    log: server.logger,
  });
  installApi(server.mux, {
    registry,
    aggregator,
    agentTransport: { ...agentTransportFrom(options), ...(egress?.cluster ? { dial: egress.cluster } : {}) },
    servedKinds: served,
    signal: server.signal,
    minRequestTimeoutSeconds: options.minRequestTimeout,
    selfLink: options.featureGates.RemoveSelfLink === false,
    serverAddress: () => `${options.advertiseAddress ?? '127.0.0.1'}:${server.port}`,
    version: versionInfo().gitVersion,
    log: server.logger,
  });
  let controllers: Controller[] = [];
  let kubernetesService: KubernetesServiceController | undefined;
  let stopped: Promise<void> | undefined;
  return {
    server,
    storage,
    registry,
    start: async () => {
      hooks.done('start-kube-apiserver-admission-initializer', 'priority-and-fairness-filter');
      await registry.startWatchCaches();
      hooks.done('generic-apiserver-start-informers', 'informer-sync');
      const log = server.logger;
      // The allocators are made consistent with the stored Services before any request can allocate.
      await repairServiceNetwork(registry.store('', 'v1', 'services')!, serviceNetwork, log);
      // As kube-apiserver, the server serves before the post-start hooks below have run: until they have,
      // /readyz fails on them, and /livez does once --livez-grace-period has passed.
      await server.start();
      await bootstrapNamespaces(registry);
      await Promise.all([
        reconcileBootstrapPolicy(registry).then(() => hooks.done('rbac/bootstrap-roles')),
        ensureApfBootstrap(registry).then(() => hooks.done('priority-and-fairness-config-producer')),
        (authenticationInfo ? publishAuthenticationInfo(registry, authenticationInfo) : Promise.resolve()).then(() =>
          hooks.done('start-cluster-authentication-info-controller'),
        ),
        ensureSystemPriorityClasses(registry.store('scheduling.k8s.io', 'v1', 'priorityclasses')).then(() =>
          hooks.done('scheduling/bootstrap-system-priority-classes'),
        ),
      ]);
      controllers = [startNamespaceController(registry, log), startPvcProtectionController(registry, log), ...serviceAccounts.startControllers(registry, log)];
      controllers.push(startClusterRoleAggregation(registry, resolver.clusterRoles, log), {
        stop: () => {
          authorizers.stop();
          resolver.stop();
        },
      });
      controllers.push(startApfBootstrapMaintainer(registry, log));
      if (server.flowControl) controllers.push(await startApfConfigController(registry, server.flowControl, log));
      hooks.done('priority-and-fairness-config-consumer');
      if (options.enableGarbageCollector) controllers.push(startGarbageCollector(registry, log));
      controllers.push(startNodeLifecycleController(registry, { log }));
      await registerLocalAPIServices(registry, served, log);
      controllers.push(startAPIServiceAvailability(aggregator, { log }), { stop: () => aggregator.stop() });
      controllers.push(startResourceQuotaController(registry, { log }));
      controllers.push(startCsrApprovingController(registry, () => authz, log), startCsrCleaner(registry, log));
      const signingCA = clusterSigningCA(options.clientCaFile);
      if ('problem' in signingCA) controllers.push(startCsrSigningUnavailable(registry, signingCA.problem, log));
      else controllers.push(startCsrSigningController(registry, { ...signingCA, ...overrides.csrSigning }, log));
      if (options.featureGates.APIServerIdentity) {
        controllers.push(
          startIdentityLease(registry, {
            durationSeconds: options.identityLeaseDurationSeconds,
            renewIntervalSeconds: options.identityLeaseRenewIntervalSeconds,
            log,
          }),
        );
      }
      kubernetesService = new KubernetesServiceController(registry, {
        net: serviceNetwork,
        namespace: options.masterServiceNamespace,
        publicIP,
        securePort: () => server.port,
        nodePort: options.orchestratorServiceNodePort,
        reconciler: options.endpointReconcilerType as 'lease' | 'master-count' | 'none',
        apiserverCount: options.apiserverCount,
        kv: storage.kvFor('', 'apiServerIPInfo'),
        prefix: storage.prefix,
        log,
      });
      await kubernetesService.start();
      hooks.done('bootstrap-controller');
    },
    stop: () =>
      (stopped ??= (async () => {
        try {
          for (const c of controllers) c.stop();
          await kubernetesService?.stop();
          await server.stop();
          await registry.stopWatchCaches();
        } finally {
          await storage.close();
          server.logger.stop();
        }
      })()),
  };
}

/**
 * kube-apiserver 1.23's post-start hooks that orch has (not those of the apiextensions and aggregator
 * servers), as health checks in its order: /livez, /readyz and /healthz list
 * `poststarthook/<name>`, failing ('not finished') until start() has done that part; /readyz also has
 * `informer-sync` (the watch caches started).
 */
function postStartHooks(server: ApiServer, priorityAndFairness: boolean): { done(...names: string[]): void } {
  const finished = new Set<string>();
  const check = (name: string) => () => {
    if (!finished.has(name)) throw new Error('not finished');
  };
  server.addHealthCheck('informer-sync', check('informer-sync'), { livez: false });
  const names = [
    'start-kube-apiserver-admission-initializer',
    'generic-apiserver-start-informers',
    ...(priorityAndFairness ? ['priority-and-fairness-config-consumer', 'priority-and-fairness-filter'] : []),
    'bootstrap-controller',
    'rbac/bootstrap-roles',
    'scheduling/bootstrap-system-priority-classes',
    // The flowcontrol API's own hook: the bootstrap configuration is written whether or not the filter is on.
    'priority-and-fairness-config-producer',
    'start-cluster-authentication-info-controller',
  ];
  for (const name of names) server.addHealthCheck(`poststarthook/${name}`, check(name), { bootSequence: true });
  return { done: (...done) => done.forEach((n) => finished.add(n)) };
}

/** The namespaces every cluster has from its first start. */
async function bootstrapNamespaces(registry: Registry): Promise<void> {
  const namespaces = registry.store('', 'v1', 'namespaces')!;
  for (const name of IMMORTAL_NAMESPACES) {
    try {
      await namespaces.create({ namespace: '' }, { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
    } catch (err) {
      if (!isStatusError(err, 'AlreadyExists')) throw err;
    }
  }
}

/** The admission plugins in effect (--enable/--disable-admission-plugins) that are built so far, in order. */
/**
 * `pluginConfig(name)` is the plugin's part of --admission-control-config-file (undefined: none given); pass it to
 * the factories of plugins that take configuration (see registry/admission/plugin-config.ts).
 */
async function admissionPlugins(
  options: ServerOptions,
  namespaces: () => ReturnType<Registry['store']>,
  registry: () => Registry,
  pluginConfig: PluginConfigReader,
  /** Webhook calls: the cluster egress they go through, and the tracer of their client spans. */
  outbound: { cluster?: Dialer; tracer?: Tracer } = {},
  /** The admission webhook metrics. */
  metrics?: AdmissionMetricsSink,
  /** The server's loopback address, for webhooks naming the `kubernetes` Service. */
  loopback?: () => ServiceAddress | undefined,
): Promise<Admission[]> {
  const on = new Set(options.admissionPlugins);
  // The plugins off by default load only when enabled (startup time and memory). A module not loaded is an
  // empty object: each name below is used only under the on.has() test of a plugin that loaded its module.
  const load = <T>(names: string[], importer: () => Promise<T>): Promise<T> => (names.some((n) => on.has(n)) ? importer() : Promise.resolve({} as T));
  const [
    { alwaysAdmit, alwaysDeny },
    { namespaceAutoProvision, namespaceExists },
    { denyServiceExternalIPs, extendedResourceToleration, limitPodHardAntiAffinityTopology, persistentVolumeLabel, securityContextDeny },
    { nodeRestriction },
    { alwaysPullImages },
    { imagePolicyWebhook, parseImagePolicyConfig },
    { podSecurityPolicy },
    { parsePodNodeSelectorConfig, podNodeSelector },
    { parsePodTolerationRestrictionConfig, podTolerationRestriction },
    { eventRateLimit, parseEventRateLimitConfig },
    { ownerReferencesPermissionEnforcement },
  ] = await Promise.all([
    load(['AlwaysAdmit', 'AlwaysDeny'], () => import('../registry/admission/always.js')),
    load(['NamespaceAutoProvision', 'NamespaceExists'], () => import('../registry/admission/namespace-exists.js')),
    load(
      ['DenyServiceExternalIPs', 'ExtendedResourceToleration', 'LimitPodHardAntiAffinityTopology', 'PersistentVolumeLabel', 'SecurityContextDeny'],
      () => import('../registry/admission/pod-restrictions.js'),
    ),
    load(['NodeRestriction'], () => import('../registry/admission/node-restriction.js')),
    load(['AlwaysPullImages'], () => import('../registry/admission/always-pull-images.js')),
    load(['ImagePolicyWebhook'], () => import('../registry/admission/image-policy-webhook.js')),
    load(['PodSecurityPolicy'], () => import('../registry/admission/podsecuritypolicy.js')),
    load(['PodNodeSelector'], () => import('../registry/admission/pod-node-selector.js')),
    load(['PodTolerationRestriction'], () => import('../registry/admission/pod-toleration-restriction.js')),
    load(['EventRateLimit'], () => import('../registry/admission/event-rate-limit.js')),
    load(['OwnerReferencesPermissionEnforcement'], () => import('../registry/admission/owner-references.js')),
  ]);
  const plugins: Admission[] = [];
  const { cluster, tracer } = outbound;
  // Each plugin carries its name (the admission controller metrics' name label).
  const add = (name: string, plugin: Admission) => {
    plugin.name = name;
    plugins.push(plugin);
  };
  const pods = () => registry().store('', 'v1', 'pods');
  if (on.has('AlwaysAdmit')) add('AlwaysAdmit', alwaysAdmit());
  if (on.has('NamespaceAutoProvision')) add('NamespaceAutoProvision', namespaceAutoProvision(namespaces));
  if (on.has('NamespaceLifecycle')) add('NamespaceLifecycle', namespaceLifecycle(namespaces));
  if (on.has('NamespaceExists')) add('NamespaceExists', namespaceExists(namespaces));
  if (on.has('SecurityContextDeny')) add('SecurityContextDeny', securityContextDeny());
  if (on.has('LimitPodHardAntiAffinityTopology')) add('LimitPodHardAntiAffinityTopology', limitPodHardAntiAffinityTopology());
  if (on.has('LimitRanger')) add('LimitRanger', limitRanger(() => registry().store('', 'v1', 'limitranges')));
  if (on.has('ServiceAccount')) {
    const mountToken = () => registry().settings.serviceAccountTokens !== undefined;
    add('ServiceAccount', serviceAccountAdmission({ serviceAccounts: () => registry().store('', 'v1', 'serviceaccounts'), namespaces, mountToken }));
  }
  if (on.has('NodeRestriction')) add('NodeRestriction', nodeRestriction(pods));
  if (on.has('TaintNodesByCondition')) add('TaintNodesByCondition', taintNodesByCondition());
  if (on.has('AlwaysPullImages')) add('AlwaysPullImages', alwaysPullImages());
  if (on.has('ImagePolicyWebhook')) {
    const cfg = pluginConfig('ImagePolicyWebhook');
    if (!cfg) throw new Error('ImagePolicyWebhook: no configuration given (the imagePolicy of --admission-control-config-file)');
    const config = parseImagePolicyConfig(cfg.object, cfg.source);
    const target = loadWebhookFor('ImagePolicyWebhook kubeConfigFile', config.kubeConfigFile);
    const via = cluster ? { ...target, dial: cluster } : target;
    add('ImagePolicyWebhook', imagePolicyWebhook({ config, review: (review) => postJSON(via, JSON.stringify(review), 30_000) }));
  }
  if (on.has('PodSecurity')) {
    const cfg = pluginConfig('PodSecurity');
    const config = cfg ? parsePodSecurityConfig(cfg.object, cfg.source) : undefined;
    add('PodSecurity', podSecurity({ namespaces, pods: () => registry().store('', 'v1', 'pods'), ...(config ? { config } : {}) }));
  }
  if (on.has('PodSecurityPolicy')) {
    add('PodSecurityPolicy', podSecurityPolicy({ policies: () => registry().store('policy', 'v1beta1', 'podsecuritypolicies'), authorizer: () => registry().settings.authorizer }));
  }
  if (on.has('PodNodeSelector')) {
    const cfg = pluginConfig('PodNodeSelector');
    add('PodNodeSelector', podNodeSelector(namespaces, cfg ? parsePodNodeSelectorConfig(cfg.object, cfg.source) : undefined));
  }
  if (on.has('Priority')) add('Priority', priorityAdmission(() => registry().store('scheduling.k8s.io', 'v1', 'priorityclasses')));
  if (on.has('DefaultTolerationSeconds')) {
    add(
      'DefaultTolerationSeconds',
      defaultTolerationSeconds({ notReadySeconds: options.defaultNotReadyTolerationSeconds, unreachableSeconds: options.defaultUnreachableTolerationSeconds }),
    );
  }
  if (on.has('PodTolerationRestriction')) {
    const cfg = pluginConfig('PodTolerationRestriction');
    add('PodTolerationRestriction', podTolerationRestriction(namespaces, cfg ? parsePodTolerationRestrictionConfig(cfg.object, cfg.source) : undefined));
  }
  if (on.has('EventRateLimit')) {
    const cfg = pluginConfig('EventRateLimit');
    add('EventRateLimit', eventRateLimit(parseEventRateLimitConfig(cfg?.object ?? { apiVersion: 'eventratelimit.admission.k8s.io/v1alpha1', kind: 'Configuration' }, cfg?.source ?? 'EventRateLimit')));
  }
  if (on.has('ExtendedResourceToleration')) add('ExtendedResourceToleration', extendedResourceToleration());
  if (on.has('PersistentVolumeLabel')) add('PersistentVolumeLabel', persistentVolumeLabel());
  const storageClasses = () => registry().store('storage.k8s.io', 'v1', 'storageclasses');
  if (on.has('DefaultStorageClass')) add('DefaultStorageClass', defaultStorageClass(storageClasses));
  if (on.has('StorageObjectInUseProtection')) add('StorageObjectInUseProtection', storageObjectInUseProtection());
  if (on.has('OwnerReferencesPermissionEnforcement')) {
    add('OwnerReferencesPermissionEnforcement', ownerReferencesPermissionEnforcement({ authorizer: () => registry().settings.authorizer, kinds: () => registry().kinds }));
  }
  if (on.has('PersistentVolumeClaimResize')) add('PersistentVolumeClaimResize', pvcResize(storageClasses));
  if (on.has('RuntimeClass')) add('RuntimeClass', runtimeClassAdmission(() => registry().store('node.k8s.io', 'v1', 'runtimeclasses')));
  if (on.has('DefaultIngressClass')) add('DefaultIngressClass', defaultIngressClass(() => registry().store('networking.k8s.io', 'v1', 'ingressclasses')));
  if (on.has('DenyServiceExternalIPs')) add('DenyServiceExternalIPs', denyServiceExternalIPs());
  const authorizer = () => registry().settings.authorizer;
  if (on.has('CertificateApproval')) add('CertificateApproval', certificateApproval(authorizer));
  if (on.has('CertificateSigning')) add('CertificateSigning', certificateSigning(authorizer));
  if (on.has('CertificateSubjectRestriction')) add('CertificateSubjectRestriction', certificateSubjectRestriction());
  // Last in Kubernetes' order: the admission webhooks, then ResourceQuota.
  if (on.has('MutatingAdmissionWebhook') || on.has('ValidatingAdmissionWebhook')) {
    const deps = (plugin: string, resource: string): WebhookAdmissionDeps => {
      const auth = webhookAuthFrom(pluginConfig(plugin));
      return {
      configurations: () => registry().store('admissionregistration.k8s.io', 'v1', resource),
      namespaces,
      services: () => registry().store('', 'v1', 'services'),
      kinds: () => registry().kinds,
      featureGates: options.featureGates,
      settings: () => registry().settings,
        ...(auth ? { auth } : {}),
        ...(cluster ? { dial: cluster } : {}),
        ...(tracer ? { tracer } : {}),
        ...(metrics ? { metrics } : {}),
        ...(loopback ? { loopback } : {}),
        ...(options.enableAggregatorRouting ? { endpoints: () => registry().store('', 'v1', 'endpoints') } : {}),
      };
    };
    if (on.has('MutatingAdmissionWebhook')) add('MutatingAdmissionWebhook', mutatingWebhookAdmission(deps('MutatingAdmissionWebhook', 'mutatingwebhookconfigurations')));
    if (on.has('ValidatingAdmissionWebhook')) add('ValidatingAdmissionWebhook', validatingWebhookAdmission(deps('ValidatingAdmissionWebhook', 'validatingwebhookconfigurations')));
  }
  if (on.has('ResourceQuota')) {
    add('ResourceQuota', resourceQuotaAdmission({ quotas: () => registry().store('', 'v1', 'resourcequotas'), config: parseQuotaConfig(pluginConfig('ResourceQuota')) }));
  }
  if (on.has('AlwaysDeny')) add('AlwaysDeny', alwaysDeny());
  return plugins;
}
