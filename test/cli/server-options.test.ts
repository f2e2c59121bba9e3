import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FlagError, type FlagSpec } from '../../src/util/flags.js';
import {
  ADMISSION_PLUGINS,
  DEFAULT_ADMISSION_PLUGINS,
  IMPLEMENTED_ADMISSION_PLUGINS,
  DEFAULT_DATA_DIR,
  SERVER_FEATURE_GATES,
  SERVER_FLAGS,
  parseServerOptions,
  serverHelp,
} from '../../src/server/options.js';
import { packageVersion, versionInfo, versionLine } from '../../src/util/version.js';

/** Every option named in document 2 (tables and prose), placeholders replaced by the names we chose. */
const DOCUMENT_2_OPTIONS = [
  'admission-control-config-file', 'advertise-address', 'allow-metric-labels', 'allow-privileged',
  'apiserver-count', 'azure-container-registry-config', 'bind-address', 'cloud-config', 'cloud-provider',
  'cloud-provider-gce-l7lb-src-cidrs', 'contention-profiling', 'cors-allowed-origins',
  'default-not-ready-toleration-seconds', 'default-unreachable-toleration-seconds',
  'disable-admission-plugins', 'enable-admission-plugins', 'disabled-metrics', 'egress-selector-config-file',
  'enable-aggregator-routing', 'enable-garbage-collector', 'enable-priority-and-fairness',
  'encryption-provider-config', 'endpoint-reconciler-type', 'experimental-logging-sanitization',
  'external-hostname', 'identity-lease-duration-seconds', 'identity-lease-renew-interval-seconds',
  'orchlet-preferred-address-types', 'orchestrator-service-node-port', 'lease-reuse-duration-seconds',
  'livez-grace-period', 'log-flush-frequency', 'logging-format', 'master-service-namespace',
  'permit-address-sharing', 'permit-port-sharing', 'profiling', 'secure-port', 'service-cluster-ip-range',
  'service-node-port-range', 'show-hidden-metrics-for-version', 'shutdown-delay-duration', 'storage-backend',
  'storage-media-type', 'tracing-config-file', 'v', 'version', 'vmodule', 'watch-cache', 'help',
  'kvstore-servers', 'kvstore-servers-overrides', 'kvstore-cafile', 'kvstore-certfile', 'kvstore-keyfile',
  'kvstore-prefix', 'kvstore-compaction-interval', 'kvstore-count-metric-poll-period',
  'kvstore-db-metric-poll-interval', 'kvstore-healthcheck-timeout', 'anonymous-auth', 'api-audiences',
  'authentication-token-webhook-config-file', 'authentication-token-webhook-cache-ttl',
  'authentication-token-webhook-version', 'authorization-mode', 'authorization-policy-file',
  'authorization-webhook-config-file', 'authorization-webhook-cache-authorized-ttl',
  'authorization-webhook-cache-unauthorized-ttl', 'authorization-webhook-version', 'client-ca-file',
  'enable-bootstrap-token-auth', 'token-auth-file', 'oidc-issuer-url', 'oidc-client-id', 'oidc-ca-file',
  'oidc-username-claim', 'oidc-username-prefix', 'oidc-groups-claim', 'oidc-groups-prefix',
  'oidc-required-claim', 'oidc-signing-algs', 'service-account-issuer', 'service-account-jwks-uri',
  'service-account-key-file', 'service-account-signing-key-file', 'service-account-lookup',
  'service-account-extend-token-expiration', 'service-account-max-token-expiration',
  'requestheader-client-ca-file', 'requestheader-allowed-names', 'requestheader-username-headers',
  'requestheader-group-headers', 'requestheader-extra-headers-prefix', 'proxy-client-cert-file',
  'proxy-client-key-file', 'orchlet-certificate-authority', 'orchlet-client-certificate',
  'orchlet-client-key', 'cert-dir', 'tls-cert-file', 'tls-private-key-file', 'tls-sni-cert-key',
  'tls-min-version', 'tls-cipher-suites', 'strict-transport-security-directives', 'event-ttl',
  'audit-policy-file', 'audit-log-path', 'audit-log-format', 'audit-log-mode', 'audit-log-version',
  'audit-log-compress', 'audit-log-maxage', 'audit-log-maxbackup', 'audit-log-maxsize',
  'audit-log-batch-buffer-size', 'audit-log-batch-max-size', 'audit-log-batch-max-wait',
  'audit-log-batch-throttle-burst', 'audit-log-batch-throttle-enable', 'audit-log-batch-throttle-qps',
  'audit-log-truncate-enabled', 'audit-log-truncate-max-batch-size', 'audit-log-truncate-max-event-size',
  'audit-webhook-config-file', 'audit-webhook-mode', 'audit-webhook-version',
  'audit-webhook-initial-backoff', 'audit-webhook-batch-buffer-size', 'audit-webhook-batch-max-size',
  'audit-webhook-batch-max-wait', 'audit-webhook-batch-throttle-burst',
  'audit-webhook-batch-throttle-enable', 'audit-webhook-batch-throttle-qps',
  'audit-webhook-truncate-enabled', 'audit-webhook-truncate-max-batch-size',
  'audit-webhook-truncate-max-event-size', 'max-requests-inflight', 'max-mutating-requests-inflight',
  'request-timeout', 'min-request-timeout', 'max-connection-bytes-per-sec',
  'http2-max-streams-per-connection', 'goaway-chance', 'delete-collection-workers',
  'default-watch-cache-size', 'watch-cache-sizes', 'orchlet-timeout', 'shutdown-send-retry-after',
  'runtime-config', 'feature-gates',
];

/** The options the brief marks as supported for now. */
const SUPPORTED = [
  'azure-container-registry-config', 'cloud-config', 'cloud-provider', 'cloud-provider-gce-l7lb-src-cidrs',
  'enable-aggregator-routing', 'tracing-config-file', 'egress-selector-config-file',
  'admission-control-config-file', 'advertise-address', 'allow-metric-labels', 'allow-privileged', 'apiserver-count', 'bind-address',
  'contention-profiling', 'cors-allowed-origins', 'disable-admission-plugins', 'enable-admission-plugins', 'enable-garbage-collector', 'disabled-metrics',
  'enable-priority-and-fairness', 'encryption-provider-config', 'endpoint-reconciler-type',
  'experimental-logging-sanitization', 'external-hostname', 'identity-lease-duration-seconds',
  'identity-lease-renew-interval-seconds', 'orchlet-preferred-address-types', 'orchestrator-service-node-port',
  'lease-reuse-duration-seconds', 'livez-grace-period', 'log-flush-frequency', 'logging-format',
  'master-service-namespace', 'permit-address-sharing', 'permit-port-sharing', 'profiling', 'secure-port',
  'service-cluster-ip-range', 'service-node-port-range', 'show-hidden-metrics-for-version',
  'shutdown-delay-duration', 'storage-backend', 'storage-media-type', 'v', 'version', 'vmodule', 'watch-cache',
  'help', 'kvstore-servers', 'kvstore-servers-overrides', 'kvstore-cafile', 'kvstore-certfile', 'kvstore-keyfile',
  'kvstore-prefix', 'kvstore-compaction-interval', 'kvstore-count-metric-poll-period',
  'kvstore-db-metric-poll-interval', 'kvstore-healthcheck-timeout', 'data-dir', 'anonymous-auth', 'api-audiences',
  'authorization-mode', 'authorization-policy-file', 'authorization-webhook-config-file',
  'authorization-webhook-cache-authorized-ttl', 'authorization-webhook-cache-unauthorized-ttl',
  'authorization-webhook-version', 'client-ca-file', 'token-auth-file', 'service-account-issuer',
  'service-account-jwks-uri', 'service-account-key-file', 'service-account-signing-key-file',
  'service-account-lookup', 'service-account-extend-token-expiration', 'service-account-max-token-expiration',
  'orchlet-certificate-authority', 'orchlet-client-certificate', 'orchlet-client-key', 'cert-dir', 'tls-cert-file',
  'tls-private-key-file', 'tls-sni-cert-key', 'tls-min-version', 'tls-cipher-suites',
  'strict-transport-security-directives', 'event-ttl', 'audit-policy-file', 'audit-log-path', 'audit-log-format',
  'audit-log-mode', 'audit-log-version', 'audit-log-compress', 'audit-log-maxage', 'audit-log-maxbackup',
  'audit-log-maxsize', 'audit-log-batch-buffer-size', 'audit-log-batch-max-size', 'audit-log-batch-max-wait',
  'audit-log-batch-throttle-burst', 'audit-log-batch-throttle-enable', 'audit-log-batch-throttle-qps',
  'audit-log-truncate-enabled', 'audit-log-truncate-max-batch-size', 'audit-log-truncate-max-event-size',
  'audit-webhook-config-file', 'audit-webhook-mode', 'audit-webhook-version', 'audit-webhook-initial-backoff',
  'audit-webhook-batch-buffer-size', 'audit-webhook-batch-max-size', 'audit-webhook-batch-max-wait',
  'audit-webhook-batch-throttle-burst', 'audit-webhook-batch-throttle-enable', 'audit-webhook-batch-throttle-qps',
  'audit-webhook-truncate-enabled', 'audit-webhook-truncate-max-batch-size', 'audit-webhook-truncate-max-event-size',
  'shutdown-send-retry-after', 'max-requests-inflight', 'max-mutating-requests-inflight', 'request-timeout',
  'min-request-timeout', 'max-connection-bytes-per-sec', 'http2-max-streams-per-connection', 'goaway-chance',
  'delete-collection-workers', 'default-watch-cache-size', 'watch-cache-sizes', 'orchlet-timeout', 'runtime-config',
  'feature-gates',
  'authentication-token-webhook-config-file', 'authentication-token-webhook-cache-ttl',
  'authentication-token-webhook-version', 'enable-bootstrap-token-auth', 'oidc-issuer-url', 'oidc-client-id',
  'oidc-ca-file', 'oidc-username-claim', 'oidc-username-prefix', 'oidc-groups-claim', 'oidc-groups-prefix',
  'oidc-required-claim', 'oidc-signing-algs', 'requestheader-client-ca-file', 'requestheader-allowed-names',
  'requestheader-username-headers', 'requestheader-group-headers', 'requestheader-extra-headers-prefix',
  'proxy-client-cert-file', 'proxy-client-key-file',
  'default-not-ready-toleration-seconds', 'default-unreachable-toleration-seconds',
];

function refused(argv: string[], message: string | RegExp): void {
  assert.throws(
    () => parseServerOptions(argv),
    (e: unknown) => {
      assert.ok(e instanceof FlagError, `expected FlagError, got ${String(e)}`);
      if (typeof message === 'string') assert.equal(e.message, message);
      else assert.match(e.message, message);
      return true;
    },
    argv.join(' '),
  );
}

/** A valid value for an option, to check 'later' options are refused for being unimplemented only. */
function sampleArg(s: FlagSpec): string {
  const special: Record<string, string> = {
    'service-cluster-ip-range': '10.0.0.0/24',
    'show-hidden-metrics-for-version': '1.22',
    'tls-sni-cert-key': 'a.crt,a.key',
    'goaway-chance': '0.001',
  };
  if (special[s.name]) return `--${s.name}=${special[s.name]}`;
  if (s.type === 'bool') return `--${s.name}`;
  if (s.values && s.values.length > 0) return `--${s.name}=${s.values[0]}`;
  if (s.default !== undefined && s.default !== '') return `--${s.name}=${s.default}`;
  const byType: Record<string, string> = {
    string: 'x',
    strings: 'x',
    int: '1',
    float: '1',
    duration: '1s',
    stringToString: 'a=b',
    keyValue: 'a=b',
    mapStringBool: 'a=true',
  };
  return `--${s.name}=${byType[s.type] ?? 'x'}`;
}

void describe('server options: table', () => {
  void it('declares every option of document 2, plus --data-dir', () => {
    const names = new Set<string>(SERVER_FLAGS.map((s) => s.name));
    for (const n of DOCUMENT_2_OPTIONS) assert.ok(names.has(n), `--${n} missing`);
    assert.deepEqual(
      [...names].filter((n) => !DOCUMENT_2_OPTIONS.includes(n)),
      ['data-dir'],
    );
  });

  void it('marks exactly the agreed options as supported', () => {
    const supported = SERVER_FLAGS.filter((s) => s.status === 'supported').map((s) => s.name);
    assert.deepEqual([...supported].sort(), [...SUPPORTED].sort());
  });

  void it('uses the document sections as groups, in order', () => {
    const groups = [...new Set(SERVER_FLAGS.map((s) => s.group))];
    assert.deepEqual(groups, [
      'Serving and general options',
      'Key-value store options',
      'Authentication and authorization options',
      'Transport security options',
      'Events',
      'Errors',
      'Limits',
      'Versioning',
    ]);
  });
});

void describe('server options: defaults', () => {
  const o = parseServerOptions([]);

  void it('has the document defaults', () => {
    assert.equal(o.securePort, 6443);
    assert.equal(o.bindAddress, '0.0.0.0');
    assert.equal(o.advertiseAddress, undefined);
    assert.equal(o.certDir, '/var/run/orch');
    assert.equal(o.anonymousAuth, true);
    assert.deepEqual(o.authorizationMode, ['AlwaysAllow']);
    assert.deepEqual(o.kvstoreServers, []);
    assert.equal(o.kvstorePrefix, '/registry');
    assert.equal(o.kvstoreCompactionInterval, 5 * 60_000);
    assert.equal(o.kvstoreCountMetricPollPeriod, 60_000);
    assert.equal(o.kvstoreDbMetricPollInterval, 30_000);
    assert.equal(o.kvstoreHealthcheckTimeout, 2000);
    assert.equal(o.storageBackend, 'kvstore3');
    assert.equal(o.storageMediaType, 'application/vnd.orch.protobuf');
    assert.equal(o.dataDir, DEFAULT_DATA_DIR);
    assert.equal(o.endpointReconcilerType, 'lease');
    assert.equal(o.apiserverCount, 1);
    assert.deepEqual(o.serviceNodePortRange, { min: 30000, max: 32767 });
    assert.deepEqual(o.cloudProviderGceL7lbSrcCidrs, ['130.211.0.0/22', '35.191.0.0/16']);
    assert.deepEqual(o.orchletPreferredAddressTypes, ['Hostname', 'InternalDNS', 'InternalIP', 'ExternalDNS', 'ExternalIP']);
    assert.equal(o.orchestratorServiceNodePort, 0);
    assert.equal(o.logFlushFrequency, 5000);
    assert.equal(o.loggingFormat, 'text');
    assert.equal(o.v, 0);
    assert.equal(o.help, false);
    assert.equal(o.version, false);
    assert.equal(o.shutdownDelayDuration, 0);
    assert.equal(o.livezGracePeriod, 0);
    assert.equal(o.requestTimeout, 60_000);
    assert.equal(o.minRequestTimeout, 1800);
    assert.equal(o.maxRequestsInflight, 400);
    assert.equal(o.maxMutatingRequestsInflight, 200);
    assert.equal(o.profiling, true);
    assert.equal(o.watchCache, true);
    assert.equal(o.defaultWatchCacheSize, 100);
    assert.equal(o.enablePriorityAndFairness, true);
    assert.equal(o.eventTtl, 3_600_000);
    assert.equal(o.leaseReuseDurationSeconds, 60);
    assert.equal(o.auditLogVersion, 'audit.orch.io/v1');
    assert.equal(o.auditWebhookBatchThrottleQps, 10);
    assert.equal(o.auditWebhookInitialBackoff, 10_000);
    assert.equal(o.orchletTimeout, 5000);
    assert.equal(o.oidcUsernameClaim, 'sub');
    assert.deepEqual(o.oidcSigningAlgs, ['RS256']);
    assert.equal(o.shutdownSendRetryAfter, false);
    assert.deepEqual(o.runtimeConfig, {});
    assert.deepEqual(o.admissionPlugins, DEFAULT_ADMISSION_PLUGINS);
    assert.equal(o.explicitFlags.size, 0);
  });

  void it('resolves every feature gate to its default', () => {
    assert.equal(Object.keys(o.featureGates).length, SERVER_FEATURE_GATES.length);
    assert.equal(o.featureGates.APIPriorityAndFairness, true);
    assert.equal(o.featureGates.APIServerIdentity, false);
    assert.equal(o.featureGates.CSIMigrationAWS, true);
    assert.equal(o.featureGates.TopologyAwareHints, false);
    assert.equal(o.featureGates.ServerSideFieldValidation, false);
  });

  void it('defaults --data-dir by user', () => {
    const root = typeof process.getuid === 'function' && process.getuid() === 0;
    assert.ok(root ? DEFAULT_DATA_DIR === '/var/lib/orch' : DEFAULT_DATA_DIR.endsWith('/.orch/data'));
  });
});

void describe('server options: parsing', () => {
  void it('parses supported options', () => {
    const o = parseServerOptions([
      '--secure-port=8443',
      '--bind-address',
      '127.0.0.1',
      '--kvstore-servers=http://127.0.0.1:2379,https://kv:2379',
      '--kvstore-servers-overrides=/events#http://a:1;http://b:2,apps/deployments#https://c:3',
      '--data-dir=:memory:',
      '-v=4',
      '--vmodule=server*=5,store=2',
      '--request-timeout=30s',
      '--watch-cache-sizes=pods#1000,deployments.apps#10',
      '--storage-media-type=application/json',
      '--tls-cert-file=/a.crt',
      '--tls-private-key-file=/a.key',
    ]);
    assert.equal(o.securePort, 8443);
    assert.equal(o.bindAddress, '127.0.0.1');
    assert.deepEqual(o.kvstoreServers, ['http://127.0.0.1:2379', 'https://kv:2379']);
    assert.equal(o.kvstoreServersOverrides.length, 2);
    assert.equal(o.dataDir, ':memory:');
    assert.equal(o.v, 4);
    assert.equal(o.requestTimeout, 30_000);
    assert.deepEqual(o.watchCacheSizes, ['pods#1000', 'deployments.apps#10']);
    assert.equal(o.storageMediaType, 'application/json');
    assert.deepEqual(
      [...o.explicitFlags],
      ['secure-port', 'bind-address', 'kvstore-servers', 'kvstore-servers-overrides', 'data-dir', 'v', 'vmodule', 'request-timeout', 'watch-cache-sizes', 'storage-media-type', 'tls-cert-file', 'tls-private-key-file'],
    );
  });

  void it('accepts the upstream etcd spellings', () => {
    const o = parseServerOptions([
      '--etcd-servers=http://a:2379',
      '--etcd-prefix=/x',
      '--etcd-cafile=ca',
      '--etcd-certfile=c',
      '--etcd-keyfile=k',
      '--etcd-compaction-interval=0',
      '--etcd-count-metric-poll-period=0',
      '--etcd-db-metric-poll-interval=0',
      '--etcd-healthcheck-timeout=1s',
      '--etcd-servers-overrides=/pods#http://b:2379',
    ]);
    assert.deepEqual(o.kvstoreServers, ['http://a:2379']);
    assert.equal(o.kvstorePrefix, '/x');
    assert.equal(o.kvstoreCompactionInterval, 0);
    assert.ok(o.explicitFlags.has('kvstore-servers'));
  });

  void it('accepts etcd3 and kvstore3 as storage backends', () => {
    assert.equal(parseServerOptions(['--storage-backend=etcd3']).storageBackend, 'kvstore3');
    assert.equal(parseServerOptions(['--storage-backend=kvstore3']).storageBackend, 'kvstore3');
    refused(['--storage-backend=etcd2'], 'invalid value "etcd2" for --storage-backend: must be one of kvstore3, etcd3');
  });

  void it('refuses unknown flags and positional arguments', () => {
    refused(['--foo'], 'unknown flag: --foo');
    refused(['serve'], 'unexpected argument "serve": orch-apiserver takes no positional arguments');
  });
});

void describe('server options: validation', () => {
  void it('checks --secure-port', () => {
    refused(['--secure-port=abc'], 'invalid value "abc" for --secure-port: must be an integer');
    refused(['--secure-port=0'], /^invalid value "0" for --secure-port: must be between 1 and 65535 inclusive; the secure port cannot be switched off$/);
    refused(['--secure-port=65536'], /^invalid value "65536" for --secure-port: must be between 1 and 65535/);
  });

  void it('checks counts and limits', () => {
    refused(['--apiserver-count=0'], 'invalid value "0" for --apiserver-count: must be positive');
    refused(['--goaway-chance=0.05'], 'invalid value "0.05" for --goaway-chance: must be between 0 and 0.02 inclusive');
    refused(['--goaway-chance=-0.01'], /^invalid value "-0.01" for --goaway-chance/);
    refused(['--max-requests-inflight=-1'], 'invalid value "-1" for --max-requests-inflight: must not be negative');
    refused(['--max-mutating-requests-inflight=-5'], 'invalid value "-5" for --max-mutating-requests-inflight: must not be negative');
    refused(
      ['--max-requests-inflight=0', '--max-mutating-requests-inflight=0'],
      '--max-requests-inflight plus --max-mutating-requests-inflight must be positive when --enable-priority-and-fairness is true',
    );
    const o = parseServerOptions(['--max-requests-inflight=0', '--max-mutating-requests-inflight=0', '--enable-priority-and-fairness=false']);
    assert.equal(o.maxRequestsInflight, 0);
  });

  void it('checks --endpoint-reconciler-type', () => {
    refused(['--endpoint-reconciler-type', 'x'], 'invalid value "x" for --endpoint-reconciler-type: must be one of master-count, lease, none');
  });

  void it('checks the store server URLs and overrides', () => {
    refused(['--kvstore-servers=127.0.0.1:2379'], /^invalid value "127.0.0.1:2379" for --kvstore-servers: "127.0.0.1:2379" is not a URL/);
    refused(['--etcd-servers=unix:///x'], /^invalid value "unix:\/\/\/x" for --etcd-servers:/);
    refused(['--kvstore-servers-overrides=pods#http://a:1'], /^invalid value "pods#http:\/\/a:1" for --kvstore-servers-overrides: .*group\/resource#url;url/);
    refused(['--kvstore-servers-overrides=/pods'], /for --kvstore-servers-overrides/);
    refused(['--kvstore-servers-overrides=/pods#ftp://a'], /"ftp:\/\/a" is not a URL/);
  });

  void it('checks the service ranges', () => {
    assert.doesNotThrow(() => parseServerOptions(['--service-node-port-range=30000']));
    refused(['--service-node-port-range=3-2'], /^invalid value "3-2" for --service-node-port-range: must be a port range/);
    refused(['--service-node-port-range=1-70000'], /must be a port range/);
    refused(['--service-cluster-ip-range=10.0.0.0/24,fd00::/108,10.1.0.0/24'], /at most two CIDRs/);
    refused(['--service-cluster-ip-range=10.0.0.0/24,10.1.0.0/24'], /dual-stack/);
    refused(['--service-cluster-ip-range=10.0.0.300/24'], /is not a CIDR/);
    assert.doesNotThrow(() => parseServerOptions(['--service-cluster-ip-range=10.0.0.0/24,fd00::/108']));
  });

  void it('checks --authorization-mode', () => {
    refused(['--authorization-mode=Foo'], /^invalid value "Foo" for --authorization-mode: "Foo" is not allowed; entries must be among AlwaysAllow, AlwaysDeny, ABAC, Webhook, RBAC, Node$/);
    refused(['--authorization-mode=AlwaysAllow,AlwaysAllow'], /"AlwaysAllow" is given twice/);
    refused(['--authorization-mode=RBAC', '--authorization-mode=RBAC'], /"RBAC" is given twice/);
    assert.deepEqual(parseServerOptions(['--authorization-mode=AlwaysAllow']).authorizationMode, ['AlwaysAllow']);
    assert.deepEqual(parseServerOptions(['--authorization-mode=RBAC,Node']).authorizationMode, ['RBAC', 'Node']);
    assert.deepEqual(parseServerOptions(['--authorization-mode=Node,RBAC,Webhook']).authorizationMode, ['Node', 'RBAC', 'Webhook']);
  });

  void it('checks admission plugins', () => {
    refused(['--enable-admission-plugins=Nope'], /"Nope" is not allowed; entries must be among AlwaysAdmit,/);
    // A plugin that does not work yet is refused when asked for by name, never ignored (a default-enabled one too).
    for (const p of ADMISSION_PLUGINS.filter((name) => !IMPLEMENTED_ADMISSION_PLUGINS.includes(name)).slice(0, 3)) {
      refused([`--enable-admission-plugins=${p}`], `--enable-admission-plugins: plugin ${p} not implemented yet`);
    }
    parseServerOptions([`--enable-admission-plugins=${IMPLEMENTED_ADMISSION_PLUGINS.join(',')}`]);
    refused(
      ['--enable-admission-plugins=LimitRanger', '--disable-admission-plugins=LimitRanger'],
      'LimitRanger is in both --enable-admission-plugins and --disable-admission-plugins',
    );
    // Plugins that run may be named.
    assert.deepEqual(
      parseServerOptions(['--enable-admission-plugins=LimitRanger,Priority,DefaultTolerationSeconds,DefaultStorageClass,PersistentVolumeClaimResize,TaintNodesByCondition'])
        .enableAdmissionPlugins.length,
      6,
    );
    const o = parseServerOptions(['--enable-admission-plugins=NamespaceLifecycle', '--disable-admission-plugins=PodSecurity,ResourceQuota']);
    assert.deepEqual(o.enableAdmissionPlugins, ['NamespaceLifecycle']);
    assert.deepEqual(o.disableAdmissionPlugins, ['PodSecurity', 'ResourceQuota']);
    assert.ok(!o.admissionPlugins.includes('PodSecurity'));
    assert.equal(o.admissionPlugins.length, DEFAULT_ADMISSION_PLUGINS.length - 2);
  });

  void it('checks --storage-media-type', () => {
    refused(['--storage-media-type=text/plain'], /^invalid value "text\/plain" for --storage-media-type: must be one of application\/json, /);
    for (const t of ['application/json', 'application/yaml', 'application/vnd.orch.protobuf', 'application/vnd.kubernetes.protobuf']) {
      assert.equal(parseServerOptions([`--storage-media-type=${t}`]).storageMediaType, t);
    }
  });

  void it('checks other values', () => {
    refused(['--bind-address=localhost'], 'invalid value "localhost" for --bind-address: must be an IPv4 or IPv6 address');
    refused(['--vmodule=abc'], /^invalid value "abc" for --vmodule: "abc" is not of the form pattern=N/);
    refused(['--watch-cache-sizes=pods'], /^invalid value "pods" for --watch-cache-sizes/);
    refused(['--default-watch-cache-size=-1'], /must not be negative/);
    refused(['--logging-format=yaml'], 'invalid value "yaml" for --logging-format: must be one of text, json');
    refused(['--allow-metric-labels=apiserver_request_total=GET'], /"apiserver_request_total" is not of the form <MetricName>,<LabelName>/);
    refused(['--show-hidden-metrics-for-version=1.20'], /must be '1.22'/);
    refused(['--tls-min-version=TLS1.2'], /must be one of VersionTLS10, VersionTLS11, VersionTLS12, VersionTLS13/);
    refused(['--tls-cert-file=/a.crt'], '--tls-cert-file and --tls-private-key-file must be given together');
    refused(['--livez-grace-period=-1s'], /must not be negative/);
    refused(['--shutdown-delay-duration=soon'], /^invalid value "soon" for --shutdown-delay-duration: must be a duration/);
  });
});

void describe('server options: feature gates and runtime config', () => {
  void it('resolves gates with AllAlpha/AllBeta', () => {
    const o = parseServerOptions(['--feature-gates=AllAlpha=true,APIServerIdentity=false']);
    assert.equal(o.featureGates.AllAlpha, true);
    assert.equal(o.featureGates.APIServerIdentity, false);
    assert.equal(o.featureGates.NodeSwap, true);
    assert.equal(o.featureGates.csiMigrationRBD, true);
    assert.equal(o.featureGates.TopologyAwareHints, false);
    const b = parseServerOptions(['--feature-gates=AllBeta=false', '--feature-gates=PodSecurity=true']);
    assert.equal(b.featureGates.APIListChunking, false);
    assert.equal(b.featureGates.PodSecurity, true);
    assert.equal(b.featureGates.NodeSwap, false);
  });

  void it('accepts upstream gate spellings and refuses unknown gates', () => {
    const o = parseServerOptions(['--feature-gates=KubeletPodResources=false']);
    assert.equal(o.featureGates.OrchletPodResources, false);
    assert.equal(o.featureGates.KubeletPodResources, undefined);
    refused(['--feature-gates=Foo=true'], 'invalid value "Foo=true" for --feature-gates: unrecognized feature gate Foo');
    refused(['--feature-gates=CSIMigration<cloud1>=true'], /unrecognized feature gate CSIMigration<cloud1>/);
    refused(['--feature-gates=PodSecurity'], /must be name=true\|false pairs/);
    refused(['--feature-gates=PodSecurity=on'], /must be name=true\|false pairs/);
  });

  void it('lists every gate of the document with upstream provider names', () => {
    const names = new Set(SERVER_FEATURE_GATES.map((g) => g.name));
    for (const cloud of ['AWS', 'AzureDisk', 'AzureFile', 'GCE', 'OpenStack', 'Portworx', 'vSphere']) {
      assert.ok(names.has(`CSIMigration${cloud}`), cloud);
      assert.ok(names.has(`InTreePlugin${cloud}Unregister`), cloud);
    }
    assert.ok(names.has('InTreePluginRBDUnregister'));
    assert.ok(names.has('csiMigrationRBD'));
    assert.equal(SERVER_FEATURE_GATES.filter((g) => g.stage === 'beta' && g.default).length, 57);
    assert.equal(SERVER_FEATURE_GATES.filter((g) => g.stage === 'beta' && !g.default).length, 6);
    assert.equal(SERVER_FEATURE_GATES.filter((g) => g.stage === 'alpha').length, 48);
  });

  void it('parses --runtime-config', () => {
    const o = parseServerOptions(['--runtime-config=api/all=false,v1=true,apps/v1', '--runtime-config=batch/v2alpha1=true,api/legacy=false']);
    assert.deepEqual(o.runtimeConfig, { 'api/all': false, v1: true, 'apps/v1': true, 'batch/v2alpha1': true, 'api/legacy': false });
    const all = parseServerOptions(['--runtime-config=api/ga=true,api/beta=false,api/alpha=true,networking.k8s.io/v1beta1=false']);
    assert.equal(all.runtimeConfig['networking.k8s.io/v1beta1'], false);
    refused(['--runtime-config=api/all=maybe'], 'invalid value "api/all=maybe" for --runtime-config: the value of api/all must be true or false (empty means true)');
    refused(['--runtime-config=apps=true'], /^invalid value "apps=true" for --runtime-config: unknown key "apps"/);
    refused(['--runtime-config=apps/1=true'], /unknown key "apps\/1"/);
  });
});

void describe('server options: not implemented yet', () => {
  void it('refuses --tracing-config-file without the APIServerTracing gate', () => {
    refused(['--tracing-config-file=/etc/tracing.yaml'], '--tracing-config-file requires the APIServerTracing feature gate to be enabled');
  });

  void it('refuses every later option, each with a valid value', () => {
    for (const s of SERVER_FLAGS) {
      if (s.status !== 'later') continue;
      refused([sampleArg(s)], `--${s.name}: not implemented yet`);
    }
  });

  void it('still reports syntax errors first', () => {
    refused(['--audit-log-maxage=x'], 'invalid value "x" for --audit-log-maxage: must be an integer');
  });

  void it('lets --help and --version through whatever else is given', () => {
    const h = parseServerOptions(['--help', '--audit-log-path=x', '--authorization-mode=RBAC']);
    assert.equal(h.help, true);
    assert.equal(parseServerOptions(['-h']).help, true);
    assert.equal(parseServerOptions(['--version', '--max-requests-inflight=0', '--max-mutating-requests-inflight=0']).version, true);
    // Syntax and value errors are still reported, as pflag does.
    refused(['--version', '--secure-port=x'], /must be an integer/);
    refused(['--version', '--feature-gates=Nope=true'], /unrecognized feature gate Nope/);
  });
});

void describe('server options: help', () => {
  const help = serverHelp();
  const flat = help.replace(/\s+/g, ' ');

  void it('mentions every option of document 2', () => {
    for (const n of [...DOCUMENT_2_OPTIONS, 'data-dir']) {
      assert.match(help, new RegExp(`--${n}(?![a-z0-9-])`), `--${n} missing from help`);
    }
  });

  void it('mentions the upstream spellings as deprecated', () => {
    for (const alias of ['etcd-servers', 'etcd-prefix', 'kubelet-timeout', 'kubernetes-service-node-port', 'kubelet-client-key']) {
      assert.match(flat, new RegExp(`deprecated spellings?: [^)]*--${alias}(?![a-z0-9-])`), alias);
    }
  });

  void it('shows pflag-style types and defaults, groups in document order', () => {
    assert.match(help, /\n {6}--secure-port int +Port serving HTTPS/);
    assert.match(flat, /--secure-port int Port serving HTTPS[^(]*\(default 6443\)/);
    assert.match(help, /--kvstore-compaction-interval duration[\s\S]*?\(default 5m0s\)/);
    assert.match(help, /--kvstore-prefix string[\s\S]*?\(default "\/registry"\)/);
    assert.match(help, /\n {2}-v, --v int /);
    assert.match(help, /\n {2}-h, --help /);
    assert.match(help, /APIListChunking=true\|false \(BETA - default=true\)/);
    const order = ['Serving and general options:', 'Key-value store options:', 'Authentication and authorization options:', 'Transport security options:', 'Events:', 'Errors:', 'Limits:', 'Versioning:'];
    const positions = order.map((h) => help.indexOf(`\n${h}\n`));
    assert.ok(positions.every((p, i) => p > 0 && (i === 0 || p > positions[i - 1]!)), JSON.stringify(positions));
    // Every server option is supported now: none is marked.
    assert.doesNotMatch(help, /\[not implemented yet\]/);
    assert.doesNotMatch(help, /--audit-log-path string[^\n]*\[not implemented yet\]/);
  });
});

void describe('version information', () => {
  void it('has the Kubernetes shape with our release in gitVersion', () => {
    const v = versionInfo();
    assert.deepEqual(Object.keys(v), ['major', 'minor', 'gitVersion', 'gitCommit', 'gitTreeState', 'buildDate', 'goVersion', 'compiler', 'platform']);
    assert.equal(v.major, '1');
    assert.equal(v.minor, '23');
    assert.match(packageVersion(), /^\d+\.\d+\.\d+/);
    assert.notEqual(packageVersion(), '0.0.0');
    assert.equal(v.gitVersion, `v1.23.17+orch.${packageVersion()}`);
    assert.equal(v.goVersion, `node ${process.version}`);
    assert.equal(v.compiler, 'tsc');
    assert.match(v.platform, /^[a-z0-9]+\/[a-z0-9]+$/);
    if (!process.env.ORCH_BUILD_DATE) assert.match(v.buildDate, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
    assert.equal(versionLine('orch-apiserver'), `orch-apiserver ${v.gitVersion}`);
  });
});
