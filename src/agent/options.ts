// Command-line options of orchlet, the node agent: every option of document 3, one flag() row
// each, grouped by the document's sections and in its order (an option listed in several
// sections appears once, in the first).
//
// Each row carries its status: 'supported' options are honoured; 'later' options parse but are
// refused with '--name: not implemented yet' when given. Options marked [cfg] in the document
// carry configField, the KubeletConfiguration field (dotted for nested ones, e.g.
// 'authentication.anonymous.enabled') that the --config file may set instead.
//
// Placeholders: <runtime> is docker (--container-runtime docker|remote, --docker-endpoint),
// <shim> is dockershim, <cloud> is azure (--azure-container-registry-config). Renamed options
// accept the upstream spelling: --kubeconfig, --bootstrap-kubeconfig, --kube-reserved,
// --kube-reserved-cgroup, --kubelet-cgroups, --kube-api-content-type, --kube-api-qps, --kube-api-burst.
import { isIP } from 'node:net';
import {
  FEATURE_GATES,
  FlagError,
  TLS_INSECURE_CIPHER_SUITES,
  TLS_PREFERRED_CIPHER_SUITES,
  TLS_VERSIONS,
  changeFeatureGates,
  checkVmodule,
  featureGateHelp,
  flag,
  flagGroup,
  formatHelp,
  inRange,
  isCIDR,
  isHttpUrl,
  nonNegative,
  parseFlags,
  positive,
  refuseLaterOptions,
  resolveFeatureGates,
  toOptions,
  unknownFeatureGate,
  type FeatureGateSpec,
  type OptionsOf,
} from '../util/flags.js';
import { tryParseQuantity } from '../util/quantity.js';
import { isQualifiedName, isValidLabelValue } from '../util/validation.js';
import { checkCloudOptions } from '../util/cloud.js';
import { ConfigFileError, readConfigFile } from './config-file.js';
import { parseQOSReserved } from './cgroups/resources.js';

export const AGENT_PROGRAM = 'orchlet';

/**
 * The node agent's gates (document 3, section 9): document 2's set with CPUManagerPolicyOptions
 * alpha (off), CSIMigrationAWS (<cloud1>) beta but off, TopologyAwareHints beta and on, and
 * without ServerSideFieldValidation.
 */
export const AGENT_FEATURE_GATES: readonly FeatureGateSpec[] = changeFeatureGates(FEATURE_GATES, {
  CPUManagerPolicyOptions: { stage: 'alpha', default: false },
  CSIMigrationAWS: { stage: 'beta', default: false },
  TopologyAwareHints: { stage: 'beta', default: true },
  ServerSideFieldValidation: null,
});

const AGENT_INSECURE_CIPHER_SUITES = TLS_INSECURE_CIPHER_SUITES.filter((c) => !c.includes('3DES'));

/** On Linux the default hard eviction thresholds also include nodefs.inodesFree<5% (document 3). */
const EVICTION_HARD_DEFAULT =
  'imagefs.available<15%,memory.available<100Mi,nodefs.available<10%' +
  (process.platform === 'linux' ? ',nodefs.inodesFree<5%' : '');

// ---------------------------------------------------------------------------------------------
// Value checks

function checkNodeIP(text: string): string | undefined {
  const list = text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (list.length > 2) return 'at most two addresses (one IPv4, one IPv6) may be given';
  for (const a of list) if (isIP(a) === 0) return `"${a}" is not an IPv4 or IPv6 address`;
  if (list.length === 2 && isIP(list[0]!) === isIP(list[1]!)) return 'two addresses must be dual-stack: one IPv4 and one IPv6';
  return undefined;
}

/** --pod-cidr: empty, a CIDR, or an IPv4 and an IPv6 CIDR separated by a comma (dual stack). */
function checkPodCIDR(text: string): string | undefined {
  if (text === '') return undefined;
  const list = text.split(',').map((s) => s.trim());
  if (list.length > 2 || list.some((c) => !isCIDR(c))) return 'must be a CIDR such as 10.244.1.0/24, or an IPv4 and an IPv6 CIDR separated by a comma';
  if (list.length === 2 && list[0]!.includes(':') === list[1]!.includes(':')) return 'two CIDRs must be dual-stack: one IPv4 and one IPv6';
  return undefined;
}

function checkIPList(list: string[]): string | undefined {
  for (const a of list) if (isIP(a) === 0) return `"${a}" is not an IPv4 or IPv6 address`;
  return undefined;
}

/** Label domains reserved for the product; 'orch.io' is ours, the other two the upstream ones. */
const RESERVED_LABEL_DOMAINS = ['kubernetes.io', 'k8s.io', 'orch.io'];
const ALLOWED_LABEL_DOMAINS = ['kubelet.kubernetes.io', 'node.kubernetes.io', 'orchlet.orch.io', 'node.orch.io'];
const ALLOWED_RESERVED_LABELS = new Set(
  ['kubernetes.io', 'orch.io'].flatMap((d) => [
    `beta.${d}/arch`,
    `beta.${d}/instance-type`,
    `beta.${d}/os`,
    `failure-domain.beta.${d}/region`,
    `failure-domain.beta.${d}/zone`,
    `topology.${d}/region`,
    `topology.${d}/zone`,
    `${d}/arch`,
    `${d}/hostname`,
    `${d}/os`,
    `node.${d}/instance-type`,
  ]),
);

const inDomain = (domain: string, of: string): boolean => domain === of || domain.endsWith(`.${of}`);

function checkNodeLabels(labels: Record<string, string>): string | undefined {
  for (const [key, value] of Object.entries(labels)) {
    const keyErrors = isQualifiedName(key);
    if (keyErrors.length > 0) return `"${key}" is not a valid label key: ${keyErrors.join('; ')}`;
    const valueErrors = isValidLabelValue(value);
    if (valueErrors.length > 0) return `"${value}" is not a valid label value (label ${key}): ${valueErrors.join('; ')}`;
    const slash = key.indexOf('/');
    const domain = slash < 0 ? '' : key.slice(0, slash);
    if (
      RESERVED_LABEL_DOMAINS.some((r) => inDomain(domain, r)) &&
      !ALLOWED_LABEL_DOMAINS.some((a) => inDomain(domain, a)) &&
      !ALLOWED_RESERVED_LABELS.has(key)
    ) {
      return (
        `label ${key} is in a reserved domain (${RESERVED_LABEL_DOMAINS.join(', ')}); such labels must be under ` +
        `${ALLOWED_LABEL_DOMAINS.join(', ')} or be a well-known arch, hostname, os, instance-type, region or zone label`
      );
    }
  }
  return undefined;
}

function checkTaints(taints: Record<string, string>): string | undefined {
  for (const [key, rest] of Object.entries(taints)) {
    const keyErrors = isQualifiedName(key);
    if (keyErrors.length > 0) return `"${key}" is not a valid taint key: ${keyErrors.join('; ')}`;
    const i = rest.lastIndexOf(':');
    const effect = i < 0 ? '' : rest.slice(i + 1);
    if (!['NoSchedule', 'PreferNoSchedule', 'NoExecute'].includes(effect)) {
      return `taint "${key}=${rest}": the effect must be one of NoSchedule, PreferNoSchedule, NoExecute (key=value:effect)`;
    }
    const value = i < 0 ? rest : rest.slice(0, i);
    const valueErrors = isValidLabelValue(value);
    if (valueErrors.length > 0) return `taint "${key}=${rest}": invalid value: ${valueErrors.join('; ')}`;
  }
  return undefined;
}

/** --qos-reserved: kubelet's ParseQOSReserved (memory only, a percentage). */
function checkQOSReserved(m: Record<string, string>): string | undefined {
  try {
    parseQOSReserved(m);
    return undefined;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

function checkEnforceNodeAllocatable(list: string[]): string | undefined {
  if (list.includes('none') && list.length > 1) return "'none' must not be combined with other values";
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// The option table

const S = 'supported' as const;

export const AGENT_FLAGS = [
  ...flagGroup('Options', [
    flag('add-dir-header', 'bool', 'false', 'Add file directory to log message headers (deprecated, logging-flag removal planned).', { status: S }),
    flag('address', 'ip', '0.0.0.0', 'IP to serve on (0.0.0.0 or :: for all interfaces and families).', {
      status: S,
      configField: 'address',
    }),
    flag('allowed-unsafe-sysctls', 'strings', undefined, "Allow-list of unsafe sysctls or patterns ending in '*'.", {
      status: S,
      configField: 'allowedUnsafeSysctls',
    }),
    flag('alsologtostderr', 'bool', 'false', 'Log to standard error as well as files (deprecated).', { status: S }),
    flag('azure-container-registry-config', 'string', undefined, 'Path of a container registry configuration file.', { status: S }),
    flag(
      'bootstrap-orchconfig',
      'string',
      undefined,
      'Config file used to obtain a client certificate: if the --orchconfig file does not exist, the bootstrap file is used to request one from the server; on success an --orchconfig file referencing the generated certificate and key is written; the certificate and key are stored in --cert-dir.',
      { status: S, aliases: ['bootstrap-kubeconfig'] },
    ),
    flag('cgroup-driver', 'enum', 'cgroupfs', 'cgroupfs or systemd.', { status: S, values: ['cgroupfs', 'systemd'], configField: 'cgroupDriver' }),
    flag('cgroup-root', 'string', '', 'Optional root cgroup for pods; empty means runtime default.', { status: S, configField: 'cgroupRoot' }),
    flag('cgroups-per-qos', 'bool', 'true', 'Create the QoS cgroup hierarchy.', { status: S, configField: 'cgroupsPerQOS' }),
    flag('cloud-config', 'string', undefined, 'Cloud provider configuration file (deprecated, removal in 1.23).', { status: S }),
    flag('cloud-provider', 'string', undefined, 'Cloud provider; if set it determines the node name (deprecated, removal in 1.23).', {
      status: S,
    }),
    flag(
      'cluster-dns',
      'strings',
      undefined,
      'DNS server IPs for containers of pods with dnsPolicy=ClusterFirst; all servers must serve the same records.',
      { status: S, configField: 'clusterDNS', validate: checkIPList },
    ),
    flag(
      'cluster-domain',
      'string',
      undefined,
      "If set, containers search this domain in addition to the host's search domains.",
      { status: S, configField: 'clusterDomain' },
    ),
    flag(
      'cni-bin-dir',
      'string',
      '/opt/cni/bin',
      'Directories (comma-separated) searched for network plugin binaries; only with the built-in docker container runtime (deprecated with dockershim).',
      { status: S },
    ),
    flag('cni-cache-dir', 'string', '/var/lib/cni/cache', 'Directory for network plugin cache files; same restriction.', { status: S }),
    flag('cni-conf-dir', 'string', '/etc/cni/net.d', 'Directory searched for network plugin config files (alpha); same restriction.', { status: S }),
    flag(
      'config',
      'string',
      undefined,
      'Initial configuration file; absolute or relative to the working directory; command-line flags override it; omit to use built-in defaults.',
      { status: S },
    ),
    flag(
      'container-log-max-files',
      'int32',
      '5',
      'Maximum log files per container, at least 2 (both runtimes).',
      { status: S, configField: 'containerLogMaxFiles', validate: (v) => (v >= 2 ? undefined : 'must be at least 2') },
    ),
    flag('container-log-max-size', 'string', '10Mi', 'Container log size before rotation (both runtimes).', {
      status: S,
      configField: 'containerLogMaxSize',
      validate: (v) => ((tryParseQuantity(v)?.value() ?? 0n) > 0n ? undefined : 'must be a positive quantity such as 10Mi'),
    }),
    flag('container-runtime', 'enum', 'docker', 'Allowed: docker (built-in adapter), remote.', {
      status: S,
      values: ['docker', 'remote'],
    }),
    flag(
      'container-runtime-endpoint',
      'string',
      'unix:///var/run/dockershim.sock',
      'Endpoint of the remote runtime service (experimental); unix sockets on Linux, npipe and tcp on Windows.',
      { status: S },
    ),
    flag('contention-profiling', 'bool', 'false', 'Lock contention profiling when profiling is enabled.', {
      status: S,
      configField: 'enableContentionProfiling',
    }),
    flag('cpu-cfs-quota', 'bool', 'true', 'Enforce CPU CFS quota for containers with CPU limits.', { status: S, configField: 'cpuCFSQuota' }),
    flag('cpu-cfs-quota-period', 'duration', '100ms', 'CPU CFS quota period.', { status: S, configField: 'cpuCFSQuotaPeriod' }),
    flag('cpu-manager-policy', 'enum', 'none', 'none or static.', { status: S, values: ['none', 'static'], configField: 'cpuManagerPolicy' }),
    flag('cpu-manager-policy-options', 'mapStringString', undefined, 'Options tuning the chosen CPU manager policy (full-pcpus-only; requires gate CPUManagerPolicyOptions).', {
      status: S,
      configField: 'cpuManagerPolicyOptions',
    }),
    flag(
      'cpu-manager-reconcile-period',
      'duration',
      '10s',
      'CPU manager reconciliation period (alpha); if not supplied, the node status update frequency.',
      { status: S, configField: 'cpuManagerReconcilePeriod', validate: positive },
    ),
    flag(
      'docker-endpoint',
      'string',
      'unix:///var/run/docker.sock',
      'Endpoint of the built-in runtime; only with that runtime (deprecated with dockershim).',
      { status: S },
    ),
    flag(
      'dynamic-config-dir',
      'string',
      undefined,
      'Directory for checkpointing downloaded configurations; enables dynamic configuration; requires gate DynamicKubeletConfig (deprecated, removal planned in 1.23).',
      { status: S },
    ),
    flag(
      'enable-controller-attach-detach',
      'bool',
      'true',
      'Attach/detach controller manages volumes; the agent performs no attach or detach.',
      { status: S, configField: 'enableControllerAttachDetach' },
    ),
    flag('enable-debugging-handlers', 'bool', 'true', 'Serve log collection and local command execution endpoints.', {
      status: S,
      configField: 'enableDebuggingHandlers',
    }),
    flag('enable-server', 'bool', 'true', "Enable the agent's server.", { status: S, configField: 'enableServer' }),
    flag(
      'enforce-node-allocatable',
      'strings',
      'pods',
      'Levels enforced: none, pods, system-reserved, kube-reserved (also spelled orch-reserved); the latter two require their cgroup flags; none must stand alone.',
      {
        status: S,
        configField: 'enforceNodeAllocatable',
        values: ['none', 'pods', 'system-reserved', 'kube-reserved', 'orch-reserved'],
        validate: checkEnforceNodeAllocatable,
      },
    ),
    flag(
      'eviction-hard',
      'mapStringString',
      EVICTION_HARD_DEFAULT,
      "Thresholds that trigger pod eviction, 'signal<quantity' pairs; on Linux the default also includes nodefs.inodesFree<5%.",
      { status: S, separator: '<', configField: 'evictionHard' },
    ),
    flag(
      'eviction-max-pod-grace-period',
      'int32',
      undefined,
      "Maximum grace period (s) when evicting for a soft threshold; negative defers to the pod's value.",
      { status: S, configField: 'evictionMaxPodGracePeriod' },
    ),
    flag(
      'eviction-minimum-reclaim',
      'mapStringString',
      undefined,
      'Minimum amount reclaimed per resource under pressure, e.g. imagefs.available=2Gi.',
      { status: S, configField: 'evictionMinimumReclaim' },
    ),
    flag('eviction-pressure-transition-period', 'duration', '5m0s', 'Wait before leaving an eviction pressure condition.', { status: S,
      configField: 'evictionPressureTransitionPeriod',
    }),
    flag(
      'eviction-soft',
      'mapStringString',
      undefined,
      "Thresholds that trigger eviction when met over their grace period, 'signal<quantity' pairs.",
      { status: S, separator: '<', configField: 'evictionSoft' },
    ),
    flag(
      'eviction-soft-grace-period',
      'mapStringString',
      undefined,
      'How long a soft threshold must hold, e.g. memory.available=1m30s.',
      { status: S, configField: 'evictionSoftGracePeriod' },
    ),
    flag('exit-on-lock-contention', 'bool', 'false', 'Exit on lock-file contention.', { status: S }),
    flag(
      'experimental-allocatable-ignore-eviction',
      'bool',
      'false',
      'Ignore hard eviction thresholds when computing node allocatable (removal in 1.23).',
      { status: S },
    ),
    flag(
      'experimental-check-node-capabilities-before-mount',
      'bool',
      undefined,
      'Check the node for required components before mounting (removal in 1.23).',
      { status: S },
    ),
    flag('experimental-kernel-memcg-notification', 'bool', undefined, 'Use kernelMemcgNotification (removal in 1.23).', {
      status: S,
      configField: 'kernelMemcgNotification',
    }),
    flag('experimental-log-sanitization', 'bool', undefined, 'Suppress logging of sensitive fields; may add overhead.', { status: S,
      configField: 'logging.sanitization',
    }),
    flag('experimental-mounter-path', 'string', 'mount', 'Path of the mounter binary (removal in 1.23).', { status: S }),
    flag('fail-swap-on', 'bool', 'true', 'Refuse to start if swap is enabled.', { status: S, configField: 'failSwapOn' }),
    flag(
      'feature-gates',
      'mapStringBool',
      undefined,
      `Comma-separated name=true|false pairs enabling or disabling features. Options are:\n${featureGateHelp(AGENT_FEATURE_GATES)}`,
      {
        status: S,
        typeName: 'mapStringBool',
        configField: 'featureGates',
        validate: (m) => unknownFeatureGate(AGENT_FEATURE_GATES, m),
      },
    ),
    flag('file-check-frequency', 'duration', '20s', 'Period of checking config files for new data.', {
      status: S,
      configField: 'fileCheckFrequency',
      validate: nonNegative,
    }),
    flag('hairpin-mode', 'enum', 'promiscuous-bridge', 'promiscuous-bridge, hairpin-veth, none.', {
      status: S,
      values: ['promiscuous-bridge', 'hairpin-veth', 'none'],
      configField: 'hairpinMode',
    }),
    flag('healthz-bind-address', 'ip', '127.0.0.1', 'Address of the health server.', { status: S, configField: 'healthzBindAddress' }),
    flag('healthz-port', 'int32', '10248', 'Port of the local health endpoint; 0 disables.', {
      status: S,
      configField: 'healthzPort',
      validate: inRange(0, 65535),
    }),
    flag('help', 'bool', undefined, 'Print help.', { status: S, short: 'h' }),
    flag(
      'hostname-override',
      'string',
      undefined,
      'Identification used instead of the real hostname; with a cloud provider, the provider decides.',
      { status: S },
    ),
    flag('http-check-frequency', 'duration', '20s', 'Period of checking the HTTP source for new data.', {
      status: S,
      configField: 'httpCheckFrequency',
      validate: nonNegative,
    }),
    flag('image-credential-provider-bin-dir', 'string', undefined, 'Directory of credential provider plugin binaries.', { status: S }),
    flag('image-credential-provider-config', 'string', undefined, 'Credential provider plugin config file.', { status: S }),
    flag(
      'image-gc-high-threshold',
      'int32',
      '85',
      'Disk usage percent above which image collection always runs; range [0,100]; 100 disables.',
      { status: S, configField: 'imageGCHighThresholdPercent', validate: inRange(0, 100) },
    ),
    flag(
      'image-gc-low-threshold',
      'int32',
      '80',
      'Disk usage percent below which it never runs; range [0,100]; not above the high threshold.',
      { status: S, configField: 'imageGCLowThresholdPercent', validate: inRange(0, 100) },
    ),
    flag(
      'image-pull-progress-deadline',
      'duration',
      '1m0s',
      'Cancel a pull with no progress by then; only with the built-in runtime (deprecated with dockershim).',
      { status: S },
    ),
    flag(
      'image-service-endpoint',
      'string',
      undefined,
      'Endpoint of the remote image service (experimental); defaults to the runtime endpoint.',
      { status: S },
    ),
    flag('iptables-drop-bit', 'int32', '15', 'fwmark bit for dropped packets; range [0,31].', {
      status: S,
      configField: 'iptablesDropBit',
      validate: inRange(0, 31),
    }),
    flag('iptables-masquerade-bit', 'int32', '14', 'fwmark bit for SNAT; range [0,31]; match the proxy component.', {
      status: S,
      configField: 'iptablesMasqueradeBit',
      validate: inRange(0, 31),
    }),
    flag('keep-terminated-pod-volumes', 'bool', 'false', 'Keep volumes of terminated pods mounted (deprecated).', { status: S }),
    flag(
      'kernel-memcg-notification',
      'bool',
      'false',
      'Use kernel memcg notification for memory eviction instead of polling.',
      { status: S, configField: 'kernelMemcgNotification' },
    ),
    flag('orch-api-content-type', 'string', 'application/vnd.orch.protobuf', 'Content type of requests to the server.', {
      status: S,
      aliases: ['kube-api-content-type'],
      configField: 'contentType',
    }),
    flag(
      'orch-reserved',
      'mapStringString',
      undefined,
      "'<resource>=<quantity>' pairs reserved for system components of the orchestrator (cpu, memory, local ephemeral-storage).",
      { status: S, aliases: ['kube-reserved'], configField: 'kubeReserved' },
    ),
    flag('orch-reserved-cgroup', 'string', '', 'Top-level cgroup managing those components, e.g. /orch-reserved.', {
      status: S,
      aliases: ['kube-reserved-cgroup'],
      configField: 'kubeReservedCgroup',
    }),
    flag(
      'orchconfig',
      'string',
      undefined,
      'Config file telling how to connect to the server; enables API-server mode (without it the agent runs standalone).',
      { status: S, aliases: ['kubeconfig'] },
    ),
    flag('orchlet-cgroups', 'string', undefined, 'Absolute cgroup name to run the agent in.', {
      status: S,
      aliases: ['kubelet-cgroups'],
      configField: 'kubeletCgroups',
    }),
    flag('lock-file', 'string', undefined, 'Lock file path (alpha).', { status: S }),
    flag('log-backtrace-at', 'string', ':0', 'Emit a stack trace when logging hits that line (deprecated).', { status: S,
      typeName: 'traceLocation',
      validate: (v) => (/^[^:]*:\d+$/.test(v) ? undefined : 'must be of the form file:line'),
    }),
    flag('log-dir', 'string', undefined, 'Directory for log files (deprecated).', { status: S }),
    flag('log-file', 'string', undefined, 'Log file (deprecated).', { status: S }),
    flag('log-file-max-size', 'uint', '1800', 'Maximum log file size in megabytes; 0 unlimited (deprecated).', { status: S }),
    flag('log-flush-frequency', 'duration', '5s', 'Maximum time between log flushes.', { status: S, validate: positive }),
    flag(
      'log-json-info-buffer-size',
      'string',
      '0',
      'Buffer for info messages in JSON split-stream mode (experimental); 0 disables buffering; accepts plain bytes or suffixed sizes.',
      { status: S, configField: 'logging.options.json.infoBufferSize' },
    ),
    flag('log-json-split-stream', 'bool', 'false', 'JSON format: errors to stderr, info to stdout (experimental).', { status: S,
      configField: 'logging.options.json.splitStream',
    }),
    flag('logging-format', 'enum', 'text', 'text or json; non-default is alpha.', { status: S,
      values: ['text', 'json'],
      configField: 'logging.format',
    }),
    flag('logtostderr', 'bool', 'true', 'Log to standard error instead of files (deprecated).', { status: S }),
    flag('make-iptables-util-chains', 'bool', 'true', 'Ensure iptables utility rules exist on the host.', {
      status: S,
      configField: 'makeIPTablesUtilChains',
    }),
    flag('manifest-url', 'string', undefined, 'URL of additional pod specifications.', {
      status: S,
      configField: 'staticPodURL',
      validate: (v) => (v === '' || isHttpUrl(v) ? undefined : 'must be an http or https URL'),
    }),
    flag(
      'manifest-url-header',
      'multimap',
      undefined,
      "Comma-separated 'name:value' headers for that URL; repeatable; same-name headers are added in order given.",
      { status: S, configField: 'staticPodURLHeader', typeName: 'string' },
    ),
    flag(
      'master-service-namespace',
      'string',
      'default',
      'Namespace from which control-plane services are injected into pods (deprecated).',
      { status: S },
    ),
    flag('maximum-dead-containers', 'int32', '-1', 'Old container instances kept globally; negative disables (deprecated).', { status: S }),
    flag('maximum-dead-containers-per-container', 'int32', '1', 'Old instances kept per container (deprecated).', { status: S }),
    flag('memory-manager-policy', 'enum', 'None', 'None or Static.', {
      status: S,
      values: ['None', 'Static'],
      configField: 'memoryManagerPolicy',
    }),
    flag(
      'minimum-container-ttl-duration',
      'duration',
      undefined,
      'Minimum age of a finished container before collection (deprecated).',
      { status: S, validate: nonNegative },
    ),
    flag('minimum-image-ttl-duration', 'duration', '2m0s', 'Minimum age of an unused image before collection.', {
      status: S,
      configField: 'imageMinimumGCAge',
      validate: nonNegative,
    }),
    flag(
      'network-plugin',
      'string',
      undefined,
      'Network plugin name; only with the built-in runtime (deprecated with dockershim).',
      { status: S },
    ),
    flag('network-plugin-mtu', 'int32', undefined, 'MTU passed to the plugin; 0 uses 1460. Same restriction.', { status: S }),
    flag(
      'node-ip',
      'string',
      undefined,
      "Node IP or comma-separated dual-stack IPs; if unset the default IPv4 address, else IPv6; '::' prefers IPv6.",
      { status: S, validate: checkNodeIP },
    ),
    flag(
      'node-labels',
      'mapStringString',
      undefined,
      "Labels added at registration (alpha), 'key=value' separated by commas. Labels in the reserved domains (kubernetes.io, k8s.io, orch.io) must be under an allowed prefix (kubelet.kubernetes.io, node.kubernetes.io, orchlet.orch.io, node.orch.io) or be one of the allowed arch, hostname, os, instance-type, region and zone labels.",
      { status: S, validate: checkNodeLabels },
    ),
    flag(
      'node-lease-duration-seconds',
      'int32',
      '40',
      "Duration of the node's Lease in kube-node-lease; it is renewed every quarter of it (KubeletConfiguration nodeLeaseDurationSeconds).",
      { status: S, configField: 'nodeLeaseDurationSeconds', validate: positive },
    ),
    flag('node-status-max-images', 'int32', '50', 'Images reported in node status; -1 no cap.', {
      status: S,
      configField: 'nodeStatusMaxImages',
      validate: (v) => (v >= -1 ? undefined : 'must be -1 or greater'),
    }),
    flag(
      'node-status-update-frequency',
      'duration',
      '10s',
      "How often node status is posted; must agree with the node controller's grace period.",
      { status: S, configField: 'nodeStatusUpdateFrequency', validate: positive },
    ),
    flag(
      'non-masquerade-cidr',
      'string',
      '10.0.0.0/8',
      'Traffic to IPs outside the range is masqueraded; 0.0.0.0/0 never masquerades (deprecated).',
      { status: S, validate: (v) => (isCIDR(v) ? undefined : 'must be a CIDR such as 10.0.0.0/8') },
    ),
    flag('one-output', 'bool', 'false', 'Write logs only at their native severity (deprecated).', { status: S }),
    flag('oom-score-adj', 'int32', '-999', 'oom-score-adj of the agent process; range [-1000,1000].', {
      status: S,
      configField: 'oomScoreAdj',
      validate: inRange(-1000, 1000),
    }),
    flag(
      'pod-cidr',
      'string',
      undefined,
      'Pod IP CIDR, standalone mode only (in cluster mode taken from the master); for IPv6 at most 65536 addresses.',
      { status: S, configField: 'podCIDR', validate: checkPodCIDR },
    ),
    flag(
      'pod-infra-container-image',
      'string',
      'k8s.gcr.io/pause:3.6',
      "Image not pruned by image collection; with the built-in runtime all containers of a pod use its network and IPC namespaces.",
      { status: S },
    ),
    flag(
      'pod-manifest-path',
      'string',
      undefined,
      'Directory of static pod files, or one file; names starting with a dot are ignored.',
      { status: S, configField: 'staticPodPath' },
    ),
    flag('pod-max-pids', 'int', '-1', 'Maximum processes per pod; -1 uses node allocatable PID capacity.', {
      status: S,
      configField: 'podPidsLimit',
    }),
    flag('pods-per-core', 'int32', undefined, 'Pods per core; capped by --max-pods; 0 disables.', { status: S, configField: 'podsPerCore' }),
    flag('port', 'int32', '10250', 'Port to serve on.', { status: S, configField: 'port', validate: inRange(1, 65535) }),
    flag('protect-kernel-defaults', 'bool', 'false', 'Error if kernel tunables differ from agent defaults.', {
      status: S,
      configField: 'protectKernelDefaults',
    }),
    flag('provider-id', 'string', undefined, 'Unique identifier of the node in a machine database.', { status: S, configField: 'providerID' }),
    flag(
      'qos-reserved',
      'mapStringString',
      undefined,
      "'<resource>=<percentage>' reservation at QoS level (alpha); only memory; requires gate QOSReserved.",
      { status: S, configField: 'qosReserved', validate: checkQOSReserved },
    ),
    flag('read-only-port', 'int32', '10255', 'Read-only port with no authentication or authorization; 0 disables.', {
      status: S,
      configField: 'readOnlyPort',
      validate: inRange(0, 65535),
    }),
    flag('really-crash-for-testing', 'bool', 'false', 'Crash on panic (testing; deprecated).', { status: S }),
    flag('register-node', 'bool', 'true', 'Register with the server; irrelevant without --orchconfig.', {
      status: S,
      configField: 'registerNode',
    }),
    flag(
      'register-schedulable',
      'bool',
      'true',
      'Register as schedulable; no effect if --register-node is false (deprecated).',
      { status: S },
    ),
    flag(
      'register-with-taints',
      'mapStringString',
      undefined,
      "Taints '<key>=<value>:<effect>', comma-separated; no-op if --register-node is false.",
      { status: S, configField: 'registerWithTaints', validate: checkTaints },
    ),
    flag('registry-burst', 'int32', '10', 'Burst of image pulls; used only if --registry-qps > 0.', {
      status: S,
      configField: 'registryBurst',
      validate: nonNegative,
    }),
    flag('registry-qps', 'int32', '5', 'Pull rate limit; 0 unlimited.', { status: S, configField: 'registryPullQPS', validate: nonNegative }),
    flag('reserved-cpus', 'string', undefined, 'CPUs or ranges reserved for system use; supersedes CPU counts in the reserved flags.', {
      status: S,
      configField: 'reservedSystemCPUs',
    }),
    flag(
      'reserved-memory',
      'string',
      undefined,
      "Memory reservations per NUMA node, e.g. '0:memory=1Gi,hugepages-1M=2Gi'; per-type totals equal the sum of kube-reserved, system-reserved and eviction threshold.",
      { status: S, configField: 'reservedMemory' },
    ),
    flag('resolv-conf', 'string', '/etc/resolv.conf', 'Resolver file that is the basis of container DNS.', {
      status: S,
      configField: 'resolvConf',
    }),
    flag('root-dir', 'string', '/var/lib/orchlet', 'Directory for agent files (volume mounts etc.).', { status: S }),
    flag(
      'runonce',
      'bool',
      'false',
      'Exit after starting pods from local manifests or URLs; exclusive with --enable-server.',
      { status: S, configField: 'runOnce' },
    ),
    flag('runtime-cgroups', 'string', undefined, 'Absolute cgroup name to run the runtime in.', { status: S }),
    flag(
      'runtime-request-timeout',
      'duration',
      '2m0s',
      'Timeout of runtime requests except pull, logs, exec, attach; on timeout the request is cancelled, an error raised and retried later.',
      { status: S, configField: 'runtimeRequestTimeout' },
    ),
    flag(
      'seccomp-default',
      'bool',
      undefined,
      'Use RuntimeDefault as default seccomp profile (alpha; requires gate SeccompDefault).',
      { status: S },
    ),
    flag('serialize-image-pulls', 'bool', 'true', 'Pull images one at a time.', { status: S, configField: 'serializeImagePulls' }),
    flag('skip-headers', 'bool', 'false', 'Avoid header prefixes in log messages (deprecated).', { status: S }),
    flag('skip-log-headers', 'bool', 'false', 'Avoid headers when opening log files (deprecated).', { status: S }),
    flag('stderrthreshold', 'int', '2', 'Logs at or above go to stderr (deprecated).', { status: S }),
    flag(
      'streaming-connection-idle-timeout',
      'duration',
      '4h0m0s',
      'Idle time before a streaming connection closes; 0 none; every connection has a 4-hour maximum duration.',
      { status: S, configField: 'streamingConnectionIdleTimeout', validate: nonNegative },
    ),
    flag('sync-frequency', 'duration', '1m0s', 'Maximum period between syncs of containers and config.', {
      status: S,
      configField: 'syncFrequency',
      validate: nonNegative,
    }),
    flag(
      'system-cgroups',
      'string',
      undefined,
      "Cgroup for all non-kernel processes not in a cgroup under '/'; empty none; rollback requires reboot.",
      { status: S, configField: 'systemCgroups' },
    ),
    flag(
      'system-reserved',
      'mapStringString',
      undefined,
      "'<resource>=<quantity>' reserved for non-orchestrator components (cpu, memory).",
      { status: S, configField: 'systemReserved' },
    ),
    flag('system-reserved-cgroup', 'string', '', 'Top-level cgroup managing them, e.g. /system-reserved.', {
      status: S,
      configField: 'systemReservedCgroup',
    }),
    flag('topology-manager-policy', 'enum', 'none', 'none, best-effort, restricted, single-numa-node.', {
      status: S,
      values: ['none', 'best-effort', 'restricted', 'single-numa-node'],
      configField: 'topologyManagerPolicy',
    }),
    flag('topology-manager-scope', 'enum', 'container', 'container or pod.', {
      status: S,
      values: ['container', 'pod'],
      configField: 'topologyManagerScope',
    }),
    flag('v', 'int', undefined, 'Log verbosity.', { status: S, short: 'v', typeName: 'Level' }),
    flag('version', 'bool', undefined, 'Print version and quit.', { status: S }),
    flag('vmodule', 'string', undefined, 'File-filtered logging.', { status: S, typeName: 'pattern=N,...', validate: checkVmodule }),
    flag(
      'volume-plugin-dir',
      'string',
      '/usr/libexec/orch/orchlet-plugins/volume/exec/',
      'Directory searched for third-party volume plugins.',
      { status: S, configField: 'volumePluginDir' },
    ),
    flag('volume-stats-agg-period', 'duration', '1m0s', 'Interval for computing and caching volume disk usage; 0 disables.', {
      status: S,
      configField: 'volumeStatsAggPeriod',
    }),
  ]),
  ...flagGroup('Authentication', [
    flag(
      'anonymous-auth',
      'bool',
      'true',
      "Anonymous requests to the agent's server get username 'system:anonymous' and group 'system:unauthenticated'.",
      { status: S, configField: 'authentication.anonymous.enabled' },
    ),
    flag('authentication-token-webhook', 'bool', 'false', 'Use the token review API to authenticate bearer tokens.', {
      status: S,
      configField: 'authentication.webhook.enabled',
    }),
    flag('authentication-token-webhook-cache-ttl', 'duration', '2m0s', 'Cache time of webhook responses.', {
      status: S,
      configField: 'authentication.webhook.cacheTTL',
    }),
    flag('authorization-mode', 'enum', 'AlwaysAllow', 'AlwaysAllow or Webhook (access review API).', {
      status: S,
      values: ['AlwaysAllow', 'Webhook'],
      configField: 'authorization.mode',
    }),
    flag('authorization-webhook-cache-authorized-ttl', 'duration', '5m0s', "Cache time of 'authorized' answers.", {
      status: S,
      configField: 'authorization.webhook.cacheAuthorizedTTL',
    }),
    flag('authorization-webhook-cache-unauthorized-ttl', 'duration', '30s', "Cache time of 'unauthorized' answers.", {
      status: S,
      configField: 'authorization.webhook.cacheUnauthorizedTTL',
    }),
    flag(
      'client-ca-file',
      'string',
      undefined,
      'Certificates signed by an authority in this file authenticate as the certificate CommonName.',
      { status: S, configField: 'authentication.x509.clientCAFile' },
    ),
    flag(
      'cert-dir',
      'string',
      '/var/lib/orchlet/pki',
      'Directory of TLS certificates; ignored if certificate and key files are given.',
      { status: S },
    ),
    flag(
      'tls-cert-file',
      'string',
      undefined,
      'Serving x509 certificate (intermediates concatenated after it); if it and the key file are absent a self-signed pair is generated into --cert-dir.',
      { status: S, configField: 'tlsCertFile' },
    ),
    flag('tls-private-key-file', 'string', undefined, 'Key matching the certificate.', { status: S, configField: 'tlsPrivateKeyFile' }),
    flag('tls-min-version', 'enum', undefined, `One of ${TLS_VERSIONS.join(', ')}.`, {
      status: S,
      values: TLS_VERSIONS,
      configField: 'tlsMinVersion',
    }),
    flag(
      'tls-cipher-suites',
      'strings',
      undefined,
      `Cipher suites; omitted means the Go defaults. Preferred: ${TLS_PREFERRED_CIPHER_SUITES.join(', ')}. Insecure: ${AGENT_INSECURE_CIPHER_SUITES.join(', ')}.`,
      { status: S, values: [...TLS_PREFERRED_CIPHER_SUITES, ...AGENT_INSECURE_CIPHER_SUITES], configField: 'tlsCipherSuites' },
    ),
    flag(
      'rotate-certificates',
      'bool',
      'false',
      'Auto-rotate client certificates by requesting new ones as expiry approaches (beta).',
      { status: S, configField: 'rotateCertificates' },
    ),
    flag(
      'rotate-server-certificates',
      'bool',
      'false',
      'Auto-request and rotate serving certificates; requires gate RotateKubeletServerCertificate and approval of the signing requests.',
      { status: S, configField: 'serverTLSBootstrap' },
    ),
  ]),
  ...flagGroup('Events', [
    flag('event-qps', 'int32', '5', 'Rate limit of event creation; at least 0; 0 uses the default 5.', {
      status: S,
      configField: 'eventRecordQPS',
      validate: nonNegative,
    }),
    flag(
      'event-burst',
      'int32',
      '10',
      'Burst size of event records, without exceeding --event-qps; at least 0; 0 uses the default 10.',
      { status: S, configField: 'eventBurst', validate: nonNegative },
    ),
  ]),
  ...flagGroup('Limits', [
    flag('max-pods', 'int32', '110', 'Pods that can run on the node.', { status: S, configField: 'maxPods', validate: nonNegative }),
    flag('max-open-files', 'int', '1000000', 'Files the agent process may open.', { status: S, configField: 'maxOpenFiles' }),
    flag(
      'orch-api-qps',
      'int32',
      '5',
      'Request rate to the server, excluding events and node heartbeats; at least 0; 0 uses 5.',
      { status: S, aliases: ['kube-api-qps'], configField: 'kubeAPIQPS', validate: nonNegative },
    ),
    flag('orch-api-burst', 'int32', '10', 'Burst to the server; at least 0; 0 uses 10.', {
      status: S,
      aliases: ['kube-api-burst'],
      configField: 'kubeAPIBurst',
      validate: nonNegative,
    }),
  ]),
] as const;

type AgentFlagFields = OptionsOf<typeof AGENT_FLAGS>;

/**
 * The parsed options of orchlet: one camelCase field per option (--max-pods -> maxPods,
 * --orchconfig -> orchconfig, --eviction-hard -> evictionHard, -v -> v), durations in
 * milliseconds, options without a default left undefined (strings) or at their zero value.
 */
export type AgentOptions = Omit<AgentFlagFields, 'featureGates'> & {
  /** Every gate of AGENT_FEATURE_GATES, resolved (defaults, AllAlpha/AllBeta, explicit values). */
  featureGates: Record<string, boolean>;
  /** Names (without dashes) of the options given on the command line. */
  explicitFlags: ReadonlySet<string>;
  /** Names of the options the --config file set (and the command line did not override). */
  configFileFlags: ReadonlySet<string>;
  /** Fields of the --config file orchlet does not know (ignored, to be logged). */
  configWarnings: string[];
};

/**
 * Parses orchlet's arguments (process.argv.slice(2)). Throws FlagError for bad syntax or values,
 * unknown flags, positional arguments and options not implemented yet. With --help or --version
 * only the syntax is checked.
 */
export function parseAgentOptions(argv: readonly string[]): AgentOptions {
  const parsed = parseFlags(argv, AGENT_FLAGS, { program: AGENT_PROGRAM });
  const early = parsed.values.help === true || parsed.values.version === true;
  let final = parsed;
  let fromFile: string[] = [];
  let warnings: string[] = [];
  const configPath = parsed.values.config;
  if (!early && typeof configPath === 'string' && configPath !== '') {
    const file = configValues(configPath, parsed.explicit);
    fromFile = file.set;
    warnings = file.warnings;
    // The file's values first, then the command line: flags override the file.
    final = parseFlags([...file.args, ...argv], AGENT_FLAGS, { program: AGENT_PROGRAM });
  }
  const fields = toOptions(AGENT_FLAGS, final);
  const opts: AgentOptions = {
    ...fields,
    featureGates: resolveFeatureGates(AGENT_FEATURE_GATES, early ? {} : fields.featureGates),
    explicitFlags: parsed.explicit,
    configFileFlags: new Set(fromFile),
    configWarnings: warnings,
  };
  if (early) return opts;
  refuseLaterOptions(AGENT_FLAGS, parsed);
  checkCloudOptions(opts);
  return opts;
}

/**
 * The --config file's options that the command line does not set, checked alone first so that an
 * error names the file and field; options not implemented yet are refused when the file gives
 * them a value other than their default.
 */
function configValues(path: string, explicit: ReadonlySet<string>): { args: string[]; set: string[]; warnings: string[] } {
  let file;
  try {
    file = readConfigFile(path, AGENT_FLAGS);
  } catch (err) {
    if (err instanceof ConfigFileError) throw new FlagError(err.message, 'config');
    throw err;
  }
  const keep = file.set.map((name, i) => ({ name, arg: file.args[i]! })).filter((x) => !explicit.has(x.name));
  let alone;
  try {
    alone = parseFlags(
      keep.map((x) => x.arg),
      AGENT_FLAGS,
      { program: AGENT_PROGRAM },
    );
  } catch (err) {
    if (err instanceof FlagError) {
      const spec = AGENT_FLAGS.find((s) => s.name === err.flag);
      throw new FlagError(`configuration file ${path}: field ${spec?.configField ?? err.flag}: ${err.message}`, err.flag);
    }
    throw err;
  }
  const defaults = parseFlags([], AGENT_FLAGS);
  for (const { name } of keep) {
    const spec = AGENT_FLAGS.find((s) => s.name === name)!;
    if (spec.status === 'later' && JSON.stringify(alone.values[name]) !== JSON.stringify(defaults.values[name])) {
      throw new FlagError(`configuration file ${path}: field ${spec.configField}: not implemented yet (--${name})`, name);
    }
  }
  return { args: keep.map((x) => x.arg), set: keep.map((x) => x.name), warnings: file.warnings };
}

/** The --help text of orchlet. */
export function agentHelp(): string {
  return formatHelp(
    AGENT_PROGRAM,
    [
      'The orchlet is the node agent that runs on each node. It registers the node with the control-plane server',
      '(using the hostname, --hostname-override, or cloud-provider logic) and makes sure the containers of the pods',
      'given to it are running and healthy. Besides the server, pods come from a file or directory (--pod-manifest-path,',
      'checked every --file-check-frequency) and from an HTTP endpoint (--manifest-url, checked every --http-check-frequency).',
      'With --orchconfig the agent runs in API-server mode; without it, standalone.',
    ].join('\n'),
    AGENT_FLAGS,
  );
}
