// Command-line options of orch-apiserver: every option of document 2 (control-plane server
// options), one flag() row each, grouped by the document's sections and in its order.
//
// Each row carries its status: 'supported' options are honoured; 'later' options parse (so a
// typo is still reported as such) but are refused with '--name: not implemented yet' when given.
// To support an option, add `status: 'supported'` to its row.
//
// Renamed options accept the upstream Kubernetes spelling as an alias (--etcd-servers for
// --kvstore-servers, --kubelet-* for --orchlet-*, --kubernetes-service-node-port for
// --orchestrator-service-node-port). Cloud placeholders use the upstream names:
// --azure-container-registry-config and --cloud-provider-gce-l7lb-src-cidrs.
import { isIP } from 'node:net';
import { homedir } from 'node:os';
import { join } from 'node:path';
import {
  FEATURE_GATES,
  FlagError,
  TLS_INSECURE_CIPHER_SUITES,
  TLS_PREFERRED_CIPHER_SUITES,
  TLS_VERSIONS,
  checkVmodule,
  featureGateHelp,
  flag,
  flagGroup,
  formatHelp,
  inRange,
  isCIDR,
  isHttpUrl,
  nonNegative,
  notImplemented,
  parseBool,
  parseFlags,
  positive,
  refuseLaterOptions,
  resolveFeatureGates,
  toOptions,
  unknownFeatureGate,
  type FeatureGateSpec,
  type OptionsOf,
} from '../util/flags.js';
import { COMPAT_MAJOR, COMPAT_MINOR } from '../util/version.js';
import { checkCloudOptions } from '../util/cloud.js';

export const SERVER_PROGRAM = 'orch-apiserver';

/** The feature gates of document 2, section 9 (see FEATURE_GATES for the provider-name mapping). */
export const SERVER_FEATURE_GATES: readonly FeatureGateSpec[] = FEATURE_GATES;

/**
 * The admission plugins that work so far. The others of the default-enabled list are not run yet (the README
 * says so); naming one in --enable-admission-plugins is refused as not implemented.
 */
export const IMPLEMENTED_ADMISSION_PLUGINS: readonly string[] = ['NamespaceLifecycle', 'ServiceAccount', 'StorageObjectInUseProtection', 'DefaultTolerationSeconds', 'Priority', 'LimitRanger', 'DefaultStorageClass', 'PersistentVolumeClaimResize', 'TaintNodesByCondition', 'PodSecurity', 'AlwaysAdmit', 'AlwaysDeny', 'NamespaceExists', 'NamespaceAutoProvision', 'AlwaysPullImages', 'DenyServiceExternalIPs', 'ExtendedResourceToleration', 'LimitPodHardAntiAffinityTopology', 'PodNodeSelector', 'PodTolerationRestriction', 'SecurityContextDeny', 'NodeRestriction', 'PersistentVolumeLabel', 'RuntimeClass', 'DefaultIngressClass', 'EventRateLimit', 'OwnerReferencesPermissionEnforcement', 'ImagePolicyWebhook', 'PodSecurityPolicy', 'CertificateApproval', 'CertificateSigning', 'CertificateSubjectRestriction', 'MutatingAdmissionWebhook', 'ValidatingAdmissionWebhook', 'ResourceQuota'];

export const DEFAULT_ADMISSION_PLUGINS: readonly string[] = [
  'NamespaceLifecycle',
  'LimitRanger',
  'ServiceAccount',
  'TaintNodesByCondition',
  'PodSecurity',
  'Priority',
  'DefaultTolerationSeconds',
  'DefaultStorageClass',
  'StorageObjectInUseProtection',
  'PersistentVolumeClaimResize',
  'RuntimeClass',
  'CertificateApproval',
  'CertificateSigning',
  'CertificateSubjectRestriction',
  'DefaultIngressClass',
  'MutatingAdmissionWebhook',
  'ValidatingAdmissionWebhook',
  'ResourceQuota',
];

export const ADMISSION_PLUGINS: readonly string[] = [
  'AlwaysAdmit',
  'AlwaysDeny',
  'AlwaysPullImages',
  'CertificateApproval',
  'CertificateSigning',
  'CertificateSubjectRestriction',
  'DefaultIngressClass',
  'DefaultStorageClass',
  'DefaultTolerationSeconds',
  'DenyServiceExternalIPs',
  'EventRateLimit',
  'ExtendedResourceToleration',
  'ImagePolicyWebhook',
  'LimitPodHardAntiAffinityTopology',
  'LimitRanger',
  'MutatingAdmissionWebhook',
  'NamespaceAutoProvision',
  'NamespaceExists',
  'NamespaceLifecycle',
  'NodeRestriction',
  'OwnerReferencesPermissionEnforcement',
  'PersistentVolumeClaimResize',
  'PersistentVolumeLabel',
  'PodNodeSelector',
  'PodSecurity',
  'PodSecurityPolicy',
  'PodTolerationRestriction',
  'Priority',
  'ResourceQuota',
  'RuntimeClass',
  'SecurityContextDeny',
  'ServiceAccount',
  'StorageObjectInUseProtection',
  'TaintNodesByCondition',
  'ValidatingAdmissionWebhook',
];

export const AUTHORIZATION_MODES: readonly string[] = ['AlwaysAllow', 'AlwaysDeny', 'ABAC', 'Webhook', 'RBAC', 'Node'];
/** Authorization modes the server implements so far. */
export const IMPLEMENTED_AUTHORIZATION_MODES: readonly string[] = ['AlwaysAllow', 'AlwaysDeny', 'ABAC', 'Webhook', 'RBAC', 'Node'];

export const STORAGE_MEDIA_TYPES: readonly string[] = [
  'application/json',
  'application/yaml',
  'application/vnd.orch.protobuf',
  'application/vnd.kubernetes.protobuf',
];

const NODE_ADDRESS_TYPES = ['Hostname', 'InternalDNS', 'InternalIP', 'ExternalDNS', 'ExternalIP'];
const OIDC_SIGNING_ALGS = ['RS256', 'RS384', 'RS512', 'ES256', 'ES384', 'ES512', 'PS256', 'PS384', 'PS512'];
const AUDIT_MODES = ['batch', 'blocking', 'blocking-strict'];
const REVIEW_VERSIONS = ['v1', 'v1beta1'];

/**
 * Directory of the embedded store when no --kvstore-servers is given:
 * /var/lib/orch when running as root, $HOME/.orch/data otherwise.
 */
export const DEFAULT_DATA_DIR =
  typeof process.getuid === 'function' && process.getuid() === 0 ? '/var/lib/orch' : join(homedir(), '.orch', 'data');

// ---------------------------------------------------------------------------------------------
// Value checks

function noDuplicates(list: string[]): string | undefined {
  const seen = new Set<string>();
  for (const e of list) {
    if (seen.has(e)) return `"${e}" is given twice`;
    seen.add(e);
  }
  return undefined;
}

function checkKvstoreServers(list: string[]): string | undefined {
  for (const s of list) if (!isHttpUrl(s)) return `"${s}" is not a URL of the form http(s)://host:port`;
  return undefined;
}

function checkKvstoreOverrides(list: string[]): string | undefined {
  const form = "entries must be 'group/resource#url;url' (group empty for the core group)";
  for (const entry of list) {
    const parts = entry.split('#');
    if (parts.length !== 2) return `"${entry}": ${form}`;
    const gr = parts[0]!.split('/');
    if (gr.length !== 2 || gr[1] === '') return `"${entry}": ${form}`;
    const urls = parts[1]!.split(';');
    for (const u of urls) if (!isHttpUrl(u)) return `"${entry}": "${u}" is not a URL of the form http(s)://host:port`;
  }
  return undefined;
}

function checkServiceClusterIPRange(text: string): string | undefined {
  const list = text
    .split(',')
    .map((c) => c.trim())
    .filter((c) => c !== '');
  if (list.length > 2) return 'at most two CIDRs (one IPv4, one IPv6) may be given';
  for (const c of list) if (!isCIDR(c)) return `"${c}" is not a CIDR such as 10.0.0.0/24`;
  if (list.length === 2 && isIP(list[0]!.split('/')[0]!) === isIP(list[1]!.split('/')[0]!)) {
    return 'two CIDRs must be dual-stack: one IPv4 and one IPv6';
  }
  return undefined;
}

function checkWatchCacheSizes(list: string[]): string | undefined {
  for (const e of list) {
    const m = /^([a-z0-9-]+(?:\.[a-z0-9.-]+)?)#(\d+)$/.exec(e);
    if (!m) return `"${e}" is not of the form resource[.group]#size (size a non-negative integer)`;
  }
  return undefined;
}

/** --allow-metric-labels keys are '<MetricName>,<LabelName>'. */
function checkAllowMetricLabels(m: Record<string, string>): string | undefined {
  for (const key of Object.keys(m)) {
    const parts = key.split(',');
    if (parts.length !== 2 || parts.some((p) => !/^[a-zA-Z_:][a-zA-Z0-9_:]*$/.test(p.trim()))) {
      return `"${key}" is not of the form <MetricName>,<LabelName>`;
    }
  }
  return undefined;
}

function checkHiddenMetricsVersion(text: string): string | undefined {
  if (text === '') return undefined;
  const previous = `${COMPAT_MAJOR}.${Number(COMPAT_MINOR) - 1}`;
  if (text !== previous) return `must be '${previous}': only the previous minor version is accepted`;
  return undefined;
}

const API_GROUP = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const API_VERSION = /^v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?$/;
const RUNTIME_CONFIG_KEYS = ['api/all', 'api/ga', 'api/beta', 'api/alpha', 'api/legacy', 'v1'];

function checkRuntimeConfig(m: Record<string, string>): string | undefined {
  for (const [key, value] of Object.entries(m)) {
    if (value !== '' && parseBool(value) === undefined) return `the value of ${key} must be true or false (empty means true)`;
    if (RUNTIME_CONFIG_KEYS.includes(key)) continue;
    const parts = key.split('/');
    if (parts.length === 2 && API_GROUP.test(parts[0]!) && API_VERSION.test(parts[1]!)) continue;
    return `unknown key "${key}": keys are ${RUNTIME_CONFIG_KEYS.join(', ')} or <group>/<version>`;
  }
  return undefined;
}

/** Kubernetes' check of --strict-transport-security-directives. */
function checkHSTSDirectives(list: string[]): string | undefined {
  for (const d of list) {
    if (d.trim() === '') return 'empty value in strict-transport-security-directives';
    if (d === 'includeSubDomains' || d === 'preload') continue;
    const parts = d.split('=');
    if (parts.length !== 2 || parts[0] !== 'max-age') {
      return `"${d}": allowed values: max-age=expireTime, includeSubDomains, preload. see https://tools.ietf.org/html/rfc6797#section-6.1 for more information`;
    }
  }
  return undefined;
}

/** Each --cors-allowed-origins entry must be a valid regular expression. */
function checkCorsOrigins(list: string[]): string | undefined {
  for (const p of list) {
    try {
      new RegExp(p);
    } catch (e) {
      return `"${p}" is not a valid regular expression: ${(e as Error).message}`;
    }
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// The option table

const S = 'supported' as const;

export const SERVER_FLAGS = [
  ...flagGroup('Serving and general options', [
    flag('admission-control-config-file', 'string', undefined, 'File with admission control configuration.', { status: S }),
    flag(
      'advertise-address',
      'ip',
      undefined,
      'IP address advertised to cluster members; must be reachable by them. If blank, --bind-address is used; if that is unspecified, the host\'s default interface is used.',
      { status: S },
    ),
    flag(
      'allow-metric-labels',
      'stringToString',
      undefined,
      "Allow-list of label values per metric. Key form '<MetricName>,<LabelName>'; value is a comma-separated list of allowed values; other values are reported as 'unexpected'.",
      { status: S, validate: checkAllowMetricLabels },
    ),
    flag('allow-privileged', 'bool', 'false', 'Permit privileged containers.', { status: S }),
    flag(
      'apiserver-count',
      'int',
      '1',
      'Number of servers in the cluster; positive. Used only when --endpoint-reconciler-type is master-count.',
      { status: S, validate: positive },
    ),
    flag('azure-container-registry-config', 'string', undefined, 'Path to a container registry configuration file (cloud-specific).', {
      status: S,
    }),
    flag('bind-address', 'ip', '0.0.0.0', 'IP on which --secure-port listens. Blank, 0.0.0.0 or :: means all interfaces.', {
      status: S,
    }),
    flag('cloud-config', 'string', '', 'Cloud provider configuration file path; empty means no file.', { status: S }),
    flag('cloud-provider', 'string', '', 'Cloud provider; empty means none.', { status: S }),
    flag(
      'cloud-provider-gce-l7lb-src-cidrs',
      'cidrs',
      '130.211.0.0/22,35.191.0.0/16',
      'CIDRs opened in the provider firewall for L7 load-balancer proxy and health-check traffic.',
      { status: S },
    ),
    flag('contention-profiling', 'bool', 'false', 'Lock contention profiling, when profiling is enabled: Node.js has no locks, so /debug/pprof/block serves the event-loop delay histogram.', { status: S }),
    flag(
      'cors-allowed-origins',
      'strings',
      undefined,
      'Allowed CORS origins; an entry may be a regular expression for subdomain matching. Empty list disables CORS.',
      { status: S, validate: checkCorsOrigins },
    ),
    flag(
      'default-not-ready-toleration-seconds',
      'int',
      '300',
      'tolerationSeconds of the notReady:NoExecute toleration added to each pod lacking such a toleration.',
      { status: S },
    ),
    flag(
      'default-unreachable-toleration-seconds',
      'int',
      '300',
      'tolerationSeconds of the unreachable:NoExecute toleration added to each pod lacking such a toleration.',
      { status: S },
    ),
    flag(
      'disable-admission-plugins',
      'strings',
      undefined,
      `Plugins to disable even though they are in the default-enabled list (${DEFAULT_ADMISSION_PLUGINS.join(', ')}). Order is irrelevant. Accepted plugins: ${ADMISSION_PLUGINS.join(', ')}.`,
      { status: S, values: ADMISSION_PLUGINS },
    ),
    flag(
      'enable-admission-plugins',
      'strings',
      undefined,
      `Plugins to enable in addition to the default-enabled list. Order is irrelevant. Accepted plugins: as for --disable-admission-plugins; so far only ${IMPLEMENTED_ADMISSION_PLUGINS.join(', ')} are implemented.`,
      { status: S, values: ADMISSION_PLUGINS },
    ),
    flag('disabled-metrics', 'strings', undefined, 'Fully qualified metric names to disable; takes precedence over showing hidden metrics.', {
      status: S,
    }),
    flag('egress-selector-config-file', 'string', undefined, 'Egress selector configuration file.', { status: S }),
    flag('enable-aggregator-routing', 'bool', 'false', 'Route aggregator requests to endpoint IPs rather than the cluster IP.', {
      status: S,
    }),
    flag(
      'enable-garbage-collector',
      'bool',
      'true',
      'Enables the generic garbage collector; must match the corresponding flag of the controller manager.',
      { status: S },
    ),
    flag(
      'enable-priority-and-fairness',
      'bool',
      'true',
      'When true and feature gate APIPriorityAndFairness is enabled, the max-in-flight handler is replaced by one that queues and dispatches with priority and fairness.',
      { status: S },
    ),
    flag('encryption-provider-config', 'string', undefined, 'File configuring encryption providers for secrets in the key-value store.', { status: S }),
    flag('endpoint-reconciler-type', 'enum', 'lease', 'Allowed: master-count, lease, none.', {
      status: S,
      values: ['master-count', 'lease', 'none'],
    }),
    flag(
      'experimental-logging-sanitization',
      'bool',
      'false',
      'Experimental; suppresses logging of fields tagged sensitive (passwords, keys, tokens); may add significant overhead, not for production.',
      { status: S },
    ),
    flag('external-hostname', 'string', undefined, 'Hostname used when generating externalized URLs (API docs, discovery).', {
      status: S,
    }),
    flag(
      'identity-lease-duration-seconds',
      'int',
      '3600',
      'Lease duration of the server identity; positive; used when gate APIServerIdentity is enabled.',
      { status: S, validate: positive },
    ),
    flag(
      'identity-lease-renew-interval-seconds',
      'int',
      '10',
      'Lease renewal interval; positive; used when gate APIServerIdentity is enabled.',
      { status: S, validate: positive },
    ),
    flag(
      'orchlet-preferred-address-types',
      'strings',
      'Hostname,InternalDNS,InternalIP,ExternalDNS,ExternalIP',
      'Preferred node address types for node-agent connections, in order.',
      { aliases: ['kubelet-preferred-address-types'], values: NODE_ADDRESS_TYPES, status: S },
    ),
    flag(
      'orchestrator-service-node-port',
      'int',
      '0',
      'If non-zero, the control-plane service is of type NodePort with this port; if zero, type ClusterIP.',
      { aliases: ['kubernetes-service-node-port'], status: S, validate: inRange(0, 65535) },
    ),
    flag(
      'lease-reuse-duration-seconds',
      'int',
      '60',
      'Time each lease is reused; a too-small value may hurt storage performance.',
      { status: S, validate: positive },
    ),
    flag(
      'livez-grace-period',
      'duration',
      undefined,
      'Maximum startup time; until it elapses /livez assumes unfinished post-start hooks will succeed.',
      { status: S, validate: nonNegative },
    ),
    flag('log-flush-frequency', 'duration', '5s', 'Maximum time between log flushes.', { status: S, validate: positive }),
    flag('logging-format', 'enum', 'text', 'Permitted: text, json. Non-default choices are alpha.', { status: S, values: ['text', 'json'] }),
    flag(
      'master-service-namespace',
      'string',
      'default',
      'Deprecated: namespace from which control-plane services are injected into pods.',
      { status: S },
    ),
    flag(
      'permit-address-sharing',
      'bool',
      'false',
      'Bind with SO_REUSEADDR. (Node.js sets SO_REUSEADDR on every listener on Linux and other Unix systems, so both values behave as true there.)',
      { status: S },
    ),
    flag(
      'permit-port-sharing',
      'bool',
      'false',
      'Bind with SO_REUSEPORT, allowing several instances on one address and port. Needs Node.js 22.12+ or 23.1+; on older versions true is refused at startup.',
      { status: S },
    ),
    flag('profiling', 'bool', 'true', 'Profiling through the web interface at host:port/debug/pprof/.', { status: S }),
    flag(
      'secure-port',
      'int',
      '6443',
      'Port serving HTTPS with authentication and authorization; cannot be switched off with 0.',
      { status: S, validate: inRange(1, 65535, 'the secure port cannot be switched off') },
    ),
    flag(
      'service-cluster-ip-range',
      'string',
      undefined,
      'CIDR from which service cluster IPs are assigned; must not overlap node or pod ranges; at most two dual-stack CIDRs.',
      { status: S, validate: checkServiceClusterIPRange },
    ),
    flag(
      'service-node-port-range',
      'portRange',
      '30000-32767',
      "Ports reserved for NodePort services, 'N1-N2' (or a single port); inclusive at both ends.",
      { status: S },
    ),
    flag(
      'show-hidden-metrics-for-version',
      'string',
      undefined,
      "Previous minor version '<major>.<minor>' for which hidden metrics are shown; only the previous minor version is accepted.",
      { status: S, validate: checkHiddenMetricsVersion },
    ),
    flag(
      'shutdown-delay-duration',
      'duration',
      undefined,
      'Delay before termination; during it the server keeps serving, /healthz and /livez succeed, /readyz fails immediately; graceful termination starts after it.',
      { status: S, validate: nonNegative },
    ),
    flag(
      'storage-backend',
      'enum',
      'kvstore3',
      "Persistence backend; 'kvstore3' (also spelled 'etcd3') is the only option.",
      { status: S, values: ['kvstore3', 'etcd3'] },
    ),
    flag(
      'storage-media-type',
      'enum',
      'application/vnd.orch.protobuf',
      `Media type used to store objects; kinds without a protobuf encoding are stored as JSON. One of ${STORAGE_MEDIA_TYPES.join(', ')}. Stored values are read whatever encoding they were written in.`,
      { status: S, values: STORAGE_MEDIA_TYPES },
    ),
    flag('tracing-config-file', 'string', undefined, 'Tracing configuration file.', { status: S }),
    flag('v', 'int', undefined, 'Log verbosity level.', { status: S, short: 'v' }),
    flag('version', 'bool', undefined, 'Print version and quit.', { status: S }),
    flag('vmodule', 'string', undefined, 'File-filtered logging (text format only).', {
      status: S,
      typeName: 'pattern=N,...',
      validate: checkVmodule,
    }),
    flag('watch-cache', 'bool', 'true', 'Enables watch caching.', { status: S }),
    flag('help', 'bool', undefined, 'Print help.', { status: S, short: 'h' }),
  ]),
  ...flagGroup('Key-value store options', [
    flag('kvstore-servers', 'strings', undefined, "Store servers, each 'scheme://ip:port' (http or https). Without it the embedded store in --data-dir is used.", {
      status: S,
      aliases: ['etcd-servers'],
      validate: checkKvstoreServers,
    }),
    flag(
      'kvstore-servers-overrides',
      'strings',
      undefined,
      "Per-resource overrides 'group/resource#servers' with servers as semicolon-separated URLs; only for resources compiled into the binary.",
      { status: S, aliases: ['etcd-servers-overrides'], validate: checkKvstoreOverrides },
    ),
    flag('kvstore-cafile', 'string', undefined, 'CA file securing store communication.', { status: S, aliases: ['etcd-cafile'] }),
    flag('kvstore-certfile', 'string', undefined, 'Certificate file securing store communication.', {
      status: S,
      aliases: ['etcd-certfile'],
    }),
    flag('kvstore-keyfile', 'string', undefined, 'Key file securing store communication.', { status: S, aliases: ['etcd-keyfile'] }),
    flag('kvstore-prefix', 'string', '/registry', 'Prefix prepended to all resource paths in the store.', {
      status: S,
      aliases: ['etcd-prefix'],
    }),
    flag('kvstore-compaction-interval', 'duration', '5m0s', 'Interval of compaction requests; 0 disables them.', {
      status: S,
      aliases: ['etcd-compaction-interval'],
      validate: nonNegative,
    }),
    flag('kvstore-count-metric-poll-period', 'duration', '1m0s', 'Polling of per-type resource counts; 0 disables.', {
      status: S,
      aliases: ['etcd-count-metric-poll-period'],
      validate: nonNegative,
    }),
    flag('kvstore-db-metric-poll-interval', 'duration', '30s', 'Polling interval of the store size metric; 0 disables.', {
      status: S,
      aliases: ['etcd-db-metric-poll-interval'],
      validate: nonNegative,
    }),
    flag('kvstore-healthcheck-timeout', 'duration', '2s', 'Timeout of store health checks.', {
      status: S,
      aliases: ['etcd-healthcheck-timeout'],
      validate: positive,
    }),
    flag(
      'data-dir',
      'string',
      DEFAULT_DATA_DIR,
      "Directory of the embedded store, used when no --kvstore-servers is given; ':memory:' keeps the store in memory (nothing persists). Defaults to /var/lib/orch when run as root, $HOME/.orch/data otherwise.",
      { status: S },
    ),
  ]),
  ...flagGroup('Authentication and authorization options', [
    flag(
      'anonymous-auth',
      'bool',
      'true',
      "Requests on the secure port not rejected by another method are anonymous, with username 'system:anonymous' and group 'system:unauthenticated'.",
      { status: S },
    ),
    flag(
      'api-audiences',
      'strings',
      undefined,
      'API identifiers; the service-account token authenticator accepts tokens bound to at least one. If --service-account-issuer is set and this is not, defaults to a single element, the issuer URL.',
      { status: S },
    ),
    flag(
      'authentication-token-webhook-config-file',
      'string',
      undefined,
      'Kubeconfig-format file of a webhook that authenticates bearer tokens.',
      { status: S },
    ),
    flag('authentication-token-webhook-cache-ttl', 'duration', '2m0s', 'Cache time of token webhook responses.', { status: S }),
    flag(
      'authentication-token-webhook-version',
      'enum',
      'v1beta1',
      'API version of the token review sent to and expected from the webhook: v1 or v1beta1.',
      { values: REVIEW_VERSIONS, status: S },
    ),
    flag(
      'authorization-mode',
      'strings',
      'AlwaysAllow',
      'Ordered authorizers: AlwaysAllow, AlwaysDeny, ABAC, Webhook, RBAC, Node.',
      { status: S, values: AUTHORIZATION_MODES, validate: noDuplicates },
    ),
    flag('authorization-policy-file', 'string', undefined, 'Policy file, one JSON object per line, used with mode ABAC.', { status: S }),
    flag(
      'authorization-webhook-config-file',
      'string',
      undefined,
      'Kubeconfig-format webhook configuration, used with mode Webhook.',
      { status: S },
    ),
    flag('authorization-webhook-cache-authorized-ttl', 'duration', '5m0s', "Cache time of 'authorized' webhook answers.", { status: S }),
    flag('authorization-webhook-cache-unauthorized-ttl', 'duration', '30s', "Cache time of 'unauthorized' webhook answers.", { status: S }),
    flag(
      'authorization-webhook-version',
      'enum',
      'v1beta1',
      'API version of the access review sent to and expected from the webhook: v1 or v1beta1.',
      { status: S, values: REVIEW_VERSIONS },
    ),
    flag(
      'client-ca-file',
      'string',
      undefined,
      "A request presenting a client certificate signed by an authority in this file is authenticated as the certificate's CommonName.",
      { status: S },
    ),
    flag(
      'enable-bootstrap-token-auth',
      'bool',
      'false',
      "Allow secrets of type 'bootstrap.orch.io/token' in namespace 'orch-system' for TLS bootstrapping authentication.",
      { status: S },
    ),
    flag('token-auth-file', 'string', undefined, 'Token file securing the secure port by token authentication.', { status: S }),
    flag('oidc-issuer-url', 'string', undefined, 'HTTPS URL of the OpenID issuer; used to verify the identity JWT.', { status: S }),
    flag('oidc-client-id', 'string', undefined, 'Client ID; required when the issuer URL is set.', { status: S }),
    flag('oidc-ca-file', 'string', undefined, "CA file verifying the OpenID server's certificate; otherwise host roots.", { status: S }),
    flag(
      'oidc-username-claim',
      'string',
      'sub',
      "Claim used as user name; claims other than 'sub' are not guaranteed unique and immutable (experimental).",
      { status: S },
    ),
    flag(
      'oidc-username-prefix',
      'string',
      undefined,
      "Prefix for user names; if unset, claims other than 'email' are prefixed with the issuer URL; '-' skips prefixing.",
      { status: S },
    ),
    flag('oidc-groups-claim', 'string', undefined, 'Custom claim holding groups (string or array of strings; experimental).', { status: S }),
    flag('oidc-groups-prefix', 'string', undefined, 'Prefix for all groups.', { status: S }),
    flag('oidc-required-claim', 'keyValue', undefined, 'Claim that must be present with this value, key=value; repeat for several.', {
      noSplit: true,
      status: S,
    }),
    flag('oidc-signing-algs', 'strings', 'RS256', `Allowed signing algorithms: ${OIDC_SIGNING_ALGS.join(', ')}.`, {
      values: OIDC_SIGNING_ALGS,
      status: S,
    }),
    flag(
      'service-account-issuer',
      'strings',
      undefined,
      "Issuer identifier placed in the 'iss' claim of issued tokens (string or URI; https URL recommended, able to serve discovery at {issuer}/.well-known/openid-configuration). When given repeatedly the first issues tokens and all are accepted. A non-URI value keeps issuer discovery disabled.",
      { status: S },
    ),
    flag(
      'service-account-jwks-uri',
      'string',
      undefined,
      'Overrides the key-set URI in the discovery document at /.well-known/openid-configuration.',
      { status: S },
    ),
    flag(
      'service-account-key-file',
      'strings',
      undefined,
      'PEM files of RSA or ECDSA keys verifying service-account tokens; repeatable; falls back to --tls-private-key-file; required when --service-account-signing-key-file is given.',
      { status: S },
    ),
    flag('service-account-signing-key-file', 'string', undefined, 'Private key signing issued tokens.', { status: S }),
    flag('service-account-lookup', 'bool', 'true', 'Validate that tokens exist in the key-value store.', { status: S }),
    flag(
      'service-account-extend-token-expiration',
      'bool',
      'true',
      'Extends injected projected tokens up to 1 year during transition, ignoring --service-account-max-token-expiration.',
      { status: S },
    ),
    flag(
      'service-account-max-token-expiration',
      'duration',
      undefined,
      'Maximum token validity; a longer requested validity is capped to this value.',
      { status: S },
    ),
    flag(
      'requestheader-client-ca-file',
      'string',
      undefined,
      'Root bundle verifying client certificates before trusting identity headers.',
      { status: S },
    ),
    flag(
      'requestheader-allowed-names',
      'strings',
      undefined,
      'Client certificate common names allowed to supply identity headers; empty allows any certificate valid under the CA.',
      { status: S },
    ),
    flag('requestheader-username-headers', 'strings', undefined, 'Headers inspected for user names (X-Remote-User is common).', { status: S }),
    flag('requestheader-group-headers', 'strings', undefined, 'Headers inspected for groups (X-Remote-Group suggested).', { status: S }),
    flag(
      'requestheader-extra-headers-prefix',
      'strings',
      undefined,
      'Header prefixes inspected for extras (X-Remote-Extra- suggested).',
      { status: S },
    ),
    flag(
      'proxy-client-cert-file',
      'string',
      undefined,
      "Client certificate proving the server's identity when calling out (aggregated servers, admission webhooks); signed by the CA of --requestheader-client-ca-file.",
      { status: S },
    ),
    flag('proxy-client-key-file', 'string', undefined, 'Private key of that certificate.', { status: S }),
    flag('orchlet-certificate-authority', 'string', undefined, 'CA certificate file for node-agent connections.', {
      aliases: ['kubelet-certificate-authority'],
      status: S,
    }),
    flag('orchlet-client-certificate', 'string', undefined, 'TLS client certificate for node-agent connections.', {
      aliases: ['kubelet-client-certificate'],
      status: S,
    }),
    flag('orchlet-client-key', 'string', undefined, 'TLS client key for node-agent connections.', {
      aliases: ['kubelet-client-key'],
      status: S,
    }),
  ]),
  ...flagGroup('Transport security options', [
    flag(
      'cert-dir',
      'string',
      '/var/run/orch',
      'Directory of TLS certificates; ignored if --tls-cert-file and --tls-private-key-file are given.',
      { status: S },
    ),
    flag(
      'tls-cert-file',
      'string',
      undefined,
      'Default x509 certificate (CA certificate, if any, concatenated after the server certificate). If neither this nor the key file is given, a self-signed pair is generated into --cert-dir.',
      { status: S },
    ),
    flag('tls-private-key-file', 'string', undefined, 'Key matching --tls-cert-file.', { status: S }),
    flag(
      'tls-sni-cert-key',
      'strings',
      undefined,
      "Certificate and key paths 'cert,key', optionally suffixed ':' and domain patterns (wildcard prefixes, IPs allowed); repeatable. Non-wildcard matches beat wildcard ones; explicit patterns beat names extracted from the certificate.",
      {
        status: S,
        noSplit: true,
        typeName: 'string',
        validate: (list) => {
          for (const e of list) if (!/^[^,:]+,[^,:]+(:.+)?$/.test(e)) return `"${e}" is not of the form cert,key[:pattern,...]`;
          return undefined;
        },
      },
    ),
    flag('tls-min-version', 'enum', undefined, `One of ${TLS_VERSIONS.join(', ')}.`, { status: S, values: TLS_VERSIONS }),
    flag(
      'tls-cipher-suites',
      'strings',
      undefined,
      `Cipher suites; omitted means the Go defaults. Preferred: ${TLS_PREFERRED_CIPHER_SUITES.join(', ')}. Insecure: ${TLS_INSECURE_CIPHER_SUITES.join(', ')}.`,
      { status: S, values: [...TLS_PREFERRED_CIPHER_SUITES, ...TLS_INSECURE_CIPHER_SUITES] },
    ),
    flag(
      'strict-transport-security-directives',
      'strings',
      undefined,
      "HSTS directives ('max-age=<seconds>', 'includeSubDomains', 'preload'), joined by '; ' into the Strict-Transport-Security header; empty means none added.",
      { status: S, validate: checkHSTSDirectives },
    ),
  ]),
  ...flagGroup('Events', [
    flag('event-ttl', 'duration', '1h0m0s', 'Retention time of events.', { status: S, validate: positive }),
    flag('audit-policy-file', 'string', undefined, 'Audit policy configuration file.', { status: S }),
    flag('audit-log-path', 'string', undefined, "If set, all requests are logged to this file; '-' means standard output.", { status: S }),
    flag('audit-log-format', 'enum', 'json', "'legacy' (one text line per event) or 'json'.", { status: S, values: ['legacy', 'json'] }),
    flag(
      'audit-log-mode',
      'enum',
      'blocking',
      'batch, blocking, blocking-strict; blocking blocks responses, batch buffers and writes asynchronously.',
      { status: S, values: AUDIT_MODES },
    ),
    flag('audit-log-version', 'string', 'audit.orch.io/v1', 'API group and version used to serialize events written to the log.', { status: S }),
    flag('audit-log-compress', 'bool', 'false', 'Compress rotated log files with gzip.', { status: S }),
    flag('audit-log-maxage', 'int', undefined, 'Days to retain old log files, by timestamp in file name.', { status: S }),
    flag('audit-log-maxbackup', 'int', undefined, 'Old files to retain; 0 means unrestricted.', { status: S }),
    flag('audit-log-maxsize', 'int', undefined, 'Megabytes before rotation.', { status: S }),
    flag('audit-log-batch-buffer-size', 'int', '10000', 'Buffer size before batching (batch mode).', { status: S }),
    flag('audit-log-batch-max-size', 'int', '1', 'Maximum batch size (batch mode).', { status: S }),
    flag('audit-log-batch-max-wait', 'duration', undefined, 'Wait before force-writing an incomplete batch (batch mode).', { status: S }),
    flag('audit-log-batch-throttle-burst', 'int', undefined, 'Maximum simultaneous requests if throttle QPS was unused (batch mode).', { status: S }),
    flag('audit-log-batch-throttle-enable', 'bool', undefined, 'Enable batch throttling (batch mode).', { status: S }),
    flag('audit-log-batch-throttle-qps', 'float', undefined, 'Maximum average batches per second (batch mode).', { status: S }),
    flag('audit-log-truncate-enabled', 'bool', undefined, 'Enable event and batch truncating.', { status: S }),
    flag('audit-log-truncate-max-batch-size', 'int', '10485760', 'Maximum batch size in bytes; larger batches are split.', { status: S }),
    flag(
      'audit-log-truncate-max-event-size',
      'int',
      '102400',
      'Maximum event size in bytes; larger events first lose request and response, and are discarded if still too large.',
      { status: S },
    ),
    flag('audit-webhook-config-file', 'string', undefined, 'Kubeconfig-format file configuring the audit webhook.', { status: S }),
    flag('audit-webhook-mode', 'enum', 'batch', 'batch, blocking, blocking-strict.', { status: S, values: AUDIT_MODES }),
    flag('audit-webhook-version', 'string', 'audit.orch.io/v1', 'API group and version of events sent to the webhook.', { status: S }),
    flag('audit-webhook-initial-backoff', 'duration', '10s', 'Wait before retrying the first failed request.', { status: S }),
    flag('audit-webhook-batch-buffer-size', 'int', '10000', 'Batch-mode buffer size.', { status: S }),
    flag('audit-webhook-batch-max-size', 'int', '400', 'Batch-mode maximum batch size.', { status: S }),
    flag('audit-webhook-batch-max-wait', 'duration', '30s', 'Batch-mode forced write wait.', { status: S }),
    flag('audit-webhook-batch-throttle-burst', 'int', '15', 'Batch-mode burst.', { status: S }),
    flag('audit-webhook-batch-throttle-enable', 'bool', 'true', 'Batch-mode throttling.', { status: S }),
    flag('audit-webhook-batch-throttle-qps', 'float', '10', 'Batch-mode average batches per second.', { status: S }),
    flag('audit-webhook-truncate-enabled', 'bool', undefined, 'Enable event and batch truncating.', { status: S }),
    flag('audit-webhook-truncate-max-batch-size', 'int', '10485760', 'As the log counterpart.', { status: S }),
    flag('audit-webhook-truncate-max-event-size', 'int', '102400', 'As the log counterpart.', { status: S }),
  ]),
  ...flagGroup('Errors', [
    flag(
      'shutdown-send-retry-after',
      'bool',
      'false',
      "When true, the server keeps listening until in-flight non-long-running requests drain; meanwhile every incoming request is rejected with 429, a 'Retry-After' header and 'Connection: close'.",
      { status: S },
    ),
  ]),
  ...flagGroup('Limits', [
    flag(
      'max-requests-inflight',
      'int',
      '400',
      'With priority and fairness on, summed with the mutating limit to give the total concurrency limit (must be positive). Otherwise the maximum of non-mutating requests in flight; 0 disables.',
      { status: S, validate: nonNegative },
    ),
    flag('max-mutating-requests-inflight', 'int', '200', 'As --max-requests-inflight, for mutating requests.', {
      status: S,
      validate: nonNegative,
    }),
    flag(
      'request-timeout',
      'duration',
      '1m0s',
      'Default time a handler keeps a request open before timing out; specific flags may override.',
      { status: S, validate: positive },
    ),
    flag(
      'min-request-timeout',
      'int',
      '1800',
      'Minimum keep-open time in seconds; honored only by watch handlers, which choose a randomized value above it.',
      { status: S, validate: nonNegative },
    ),
    flag(
      'max-connection-bytes-per-sec',
      'int',
      undefined,
      'If non-zero, throttles each user connection to this rate; applies to long-running requests only.',
      { status: S, validate: nonNegative },
    ),
    flag(
      'http2-max-streams-per-connection',
      'int',
      undefined,
      'Stream limit offered to HTTP/2 clients; 0 uses the library default (250, as kube-apiserver).',
      { status: S, validate: nonNegative },
    ),
    flag(
      'goaway-chance',
      'float',
      undefined,
      'Fraction of requests answered with an HTTP/2 GOAWAY; minimum 0 (off), maximum 0.02; 0.001 is a recommended start; do not enable for single-server clusters or without a load balancer.',
      { status: S, validate: (v) => (v >= 0 && v <= 0.02 ? undefined : 'must be between 0 and 0.02 inclusive') },
    ),
    flag('delete-collection-workers', 'int', '1', 'Workers for delete-collection calls (speeds up namespace cleanup).', {
      status: S,
      validate: positive,
    }),
    flag(
      'default-watch-cache-size',
      'int',
      '100',
      'Default watch cache size; 0 disables the cache for resources without a default.',
      { status: S, validate: nonNegative },
    ),
    flag(
      'watch-cache-sizes',
      'strings',
      undefined,
      "Per-resource sizes 'resource[.group]#size' (lowercase plural resource, group omitted for the core group). Some resources have system defaults; others use the default size.",
      { status: S, validate: checkWatchCacheSizes },
    ),
    flag('orchlet-timeout', 'duration', '5s', 'Timeout of node-agent operations.', { aliases: ['kubelet-timeout'], status: S }),
  ]),
  ...flagGroup('Versioning', [
    flag(
      'runtime-config',
      'keyValue',
      undefined,
      "Enables or disables built-in APIs: 'v1=true|false' for the core group; '<group>/<version>=true|false' for a group version; 'api/all', 'api/ga', 'api/beta', 'api/alpha' each true|false; 'api/legacy' is deprecated. An empty value means true.",
      { status: S, validate: checkRuntimeConfig },
    ),
    flag(
      'feature-gates',
      'mapStringBool',
      undefined,
      `Comma-separated name=true|false pairs enabling or disabling features. Options are:\n${featureGateHelp(SERVER_FEATURE_GATES)}`,
      { status: S, validate: (m) => unknownFeatureGate(SERVER_FEATURE_GATES, m) },
    ),
  ]),
] as const;

type ServerFlagFields = OptionsOf<typeof SERVER_FLAGS>;

/**
 * The parsed options of orch-apiserver: one camelCase field per option (--secure-port -> securePort,
 * --kvstore-servers -> kvstoreServers, -v -> v), durations in milliseconds, options without a
 * default left undefined (strings) or at their zero value (numbers 0, bools false, lists [], maps {}).
 */
export type ServerOptions = Omit<ServerFlagFields, 'featureGates' | 'runtimeConfig' | 'storageBackend'> & {
  /** Every gate of SERVER_FEATURE_GATES, resolved (defaults, AllAlpha/AllBeta, explicit values). */
  featureGates: Record<string, boolean>;
  /** --runtime-config with values as booleans (an empty value means true). */
  runtimeConfig: Record<string, boolean>;
  /** 'etcd3' is normalised to 'kvstore3'. */
  storageBackend: 'kvstore3';
  /** Admission plugins in effect: the default-enabled list minus --disable-admission-plugins plus enabled ones. */
  admissionPlugins: string[];
  /** Names (without dashes) of the options given on the command line. */
  explicitFlags: ReadonlySet<string>;
};

/**
 * Parses orch-apiserver's arguments (process.argv.slice(2)). Throws FlagError for bad syntax or
 * values, unknown flags, positional arguments, and options or values not implemented yet.
 * With --help or --version only the syntax is checked, so those always work.
 */
export function parseServerOptions(argv: readonly string[]): ServerOptions {
  const parsed = parseFlags(argv, SERVER_FLAGS, { program: SERVER_PROGRAM });
  const fields = toOptions(SERVER_FLAGS, parsed);
  const early = fields.help || fields.version;

  const runtimeConfig: Record<string, boolean> = {};
  for (const [k, v] of Object.entries(fields.runtimeConfig)) runtimeConfig[k] = v === '' ? true : parseBool(v) === true;

  const disabled = new Set(fields.disableAdmissionPlugins);
  const admissionPlugins = DEFAULT_ADMISSION_PLUGINS.filter((p) => !disabled.has(p));
  for (const p of fields.enableAdmissionPlugins) if (!admissionPlugins.includes(p) && !disabled.has(p)) admissionPlugins.push(p);

  const opts: ServerOptions = {
    ...fields,
    featureGates: resolveFeatureGates(SERVER_FEATURE_GATES, early ? {} : fields.featureGates),
    runtimeConfig,
    storageBackend: 'kvstore3',
    admissionPlugins,
    explicitFlags: parsed.explicit,
  };
  if (early) return opts;

  refuseLaterOptions(SERVER_FLAGS, parsed);
  checkCloudOptions(opts);

  // Checks involving several options.
  for (const p of fields.enableAdmissionPlugins) {
    if (disabled.has(p)) {
      throw new FlagError(`${p} is in both --enable-admission-plugins and --disable-admission-plugins`, 'enable-admission-plugins');
    }
  }
  if (
    opts.enablePriorityAndFairness &&
    opts.featureGates.APIPriorityAndFairness &&
    opts.maxRequestsInflight + opts.maxMutatingRequestsInflight <= 0
  ) {
    throw new FlagError(
      '--max-requests-inflight plus --max-mutating-requests-inflight must be positive when --enable-priority-and-fairness is true',
      'max-requests-inflight',
    );
  }
  if (opts.tracingConfigFile !== undefined && opts.tracingConfigFile !== '' && !opts.featureGates.APIServerTracing) {
    throw new FlagError('--tracing-config-file requires the APIServerTracing feature gate to be enabled', 'tracing-config-file');
  }
  if ((opts.tlsCertFile === undefined) !== (opts.tlsPrivateKeyFile === undefined)) {
    throw new FlagError('--tls-cert-file and --tls-private-key-file must be given together', 'tls-cert-file');
  }

  // Options that are supported only in part.
  for (const mode of opts.authorizationMode) {
    if (!IMPLEMENTED_AUTHORIZATION_MODES.includes(mode)) throw notImplemented('authorization-mode', `mode ${mode}`);
  }
  for (const p of fields.enableAdmissionPlugins) {
    if (!IMPLEMENTED_ADMISSION_PLUGINS.includes(p)) throw notImplemented('enable-admission-plugins', `plugin ${p}`);
  }
  return opts;
}

/** The --help text of orch-apiserver. */
export function serverHelp(): string {
  return formatHelp(
    SERVER_PROGRAM,
    'The orch control-plane server validates and configures data for API objects (pods, services, replication controllers and others) and serves REST operations on them. It is the front end to the shared cluster state through which all other components interact.',
    SERVER_FLAGS,
  );
}
