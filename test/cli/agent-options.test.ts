import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FEATURE_GATES, FlagError, type FlagSpec } from '../../src/util/flags.js';
import { AGENT_FEATURE_GATES, AGENT_FLAGS, agentHelp, parseAgentOptions } from '../../src/agent/options.js';

/** Every option named in document 3, placeholders replaced by the names we chose (<runtime> docker, <cloud> azure). */
const DOCUMENT_3_OPTIONS = [
  'add-dir-header', 'address', 'allowed-unsafe-sysctls', 'alsologtostderr',
  'azure-container-registry-config', 'bootstrap-kubeconfig', 'bootstrap-orchconfig', 'cgroup-driver',
  'cgroup-root', 'cgroups-per-qos', 'cloud-config', 'cloud-provider', 'cluster-dns', 'cluster-domain',
  'cni-bin-dir', 'cni-cache-dir', 'cni-conf-dir', 'config', 'container-log-max-files',
  'container-log-max-size', 'container-runtime', 'container-runtime-endpoint', 'contention-profiling',
  'cpu-cfs-quota', 'cpu-cfs-quota-period', 'cpu-manager-policy', 'cpu-manager-policy-options',
  'cpu-manager-reconcile-period', 'docker-endpoint', 'dynamic-config-dir', 'enable-controller-attach-detach',
  'enable-debugging-handlers', 'enable-server', 'enforce-node-allocatable', 'eviction-hard',
  'eviction-max-pod-grace-period', 'eviction-minimum-reclaim', 'eviction-pressure-transition-period',
  'eviction-soft', 'eviction-soft-grace-period', 'exit-on-lock-contention',
  'experimental-allocatable-ignore-eviction', 'experimental-check-node-capabilities-before-mount',
  'experimental-kernel-memcg-notification', 'experimental-log-sanitization', 'experimental-mounter-path',
  'fail-swap-on', 'feature-gates', 'file-check-frequency', 'hairpin-mode', 'healthz-bind-address',
  'healthz-port', 'help', 'hostname-override', 'http-check-frequency', 'image-credential-provider-bin-dir',
  'image-credential-provider-config', 'image-gc-high-threshold', 'image-gc-low-threshold',
  'image-pull-progress-deadline', 'image-service-endpoint', 'iptables-drop-bit', 'iptables-masquerade-bit',
  'keep-terminated-pod-volumes', 'kernel-memcg-notification', 'orch-api-content-type', 'orch-reserved',
  'orch-reserved-cgroup', 'orchconfig', 'orchlet-cgroups', 'lock-file', 'log-backtrace-at', 'log-dir',
  'log-file', 'log-file-max-size', 'log-flush-frequency', 'log-json-info-buffer-size',
  'log-json-split-stream', 'logging-format', 'logtostderr', 'make-iptables-util-chains', 'manifest-url',
  'manifest-url-header', 'master-service-namespace', 'maximum-dead-containers',
  'maximum-dead-containers-per-container', 'memory-manager-policy', 'minimum-container-ttl-duration',
  'minimum-image-ttl-duration', 'network-plugin', 'network-plugin-mtu', 'node-ip', 'node-labels',
  'node-status-max-images', 'node-status-update-frequency', 'non-masquerade-cidr', 'one-output',
  'oom-score-adj', 'pod-cidr', 'pod-infra-container-image', 'pod-manifest-path', 'pod-max-pids',
  'pods-per-core', 'port', 'protect-kernel-defaults', 'provider-id', 'qos-reserved', 'read-only-port',
  'really-crash-for-testing', 'register-node', 'register-schedulable', 'register-with-taints',
  'registry-burst', 'registry-qps', 'reserved-cpus', 'reserved-memory', 'resolv-conf', 'root-dir', 'runonce',
  'runtime-cgroups', 'runtime-request-timeout', 'seccomp-default', 'serialize-image-pulls', 'skip-headers',
  'skip-log-headers', 'stderrthreshold', 'streaming-connection-idle-timeout', 'sync-frequency',
  'system-cgroups', 'system-reserved', 'system-reserved-cgroup', 'topology-manager-policy',
  'topology-manager-scope', 'v', 'version', 'vmodule', 'volume-plugin-dir', 'volume-stats-agg-period',
  'anonymous-auth', 'authentication-token-webhook', 'authentication-token-webhook-cache-ttl',
  'authorization-mode', 'authorization-webhook-cache-authorized-ttl',
  'authorization-webhook-cache-unauthorized-ttl', 'client-ca-file', 'cert-dir', 'tls-cert-file',
  'tls-private-key-file', 'tls-min-version', 'tls-cipher-suites', 'rotate-certificates',
  'rotate-server-certificates', 'event-qps', 'event-burst', 'max-pods', 'max-open-files', 'kube-api-qps',
  'orch-api-qps', 'kube-api-burst', 'orch-api-burst',
];

/** Upstream spellings in the list above, with the option they stand for. */
const UPSTREAM: Record<string, string> = {
  'bootstrap-kubeconfig': 'bootstrap-orchconfig',
  'kube-api-qps': 'orch-api-qps',
  'kube-api-burst': 'orch-api-burst',
};

/** Options marked [cfg] in document 3. */
const CFG = [
  'address', 'allowed-unsafe-sysctls', 'cgroup-driver', 'cgroup-root', 'cgroups-per-qos', 'cluster-dns',
  'cluster-domain', 'container-log-max-files', 'container-log-max-size', 'contention-profiling', 'cpu-cfs-quota',
  'cpu-cfs-quota-period', 'cpu-manager-policy', 'cpu-manager-policy-options', 'cpu-manager-reconcile-period',
  'enable-controller-attach-detach', 'enable-debugging-handlers', 'enable-server', 'enforce-node-allocatable',
  'eviction-hard', 'eviction-max-pod-grace-period', 'eviction-minimum-reclaim', 'eviction-pressure-transition-period',
  'eviction-soft', 'eviction-soft-grace-period', 'experimental-kernel-memcg-notification',
  'experimental-log-sanitization', 'fail-swap-on', 'feature-gates', 'file-check-frequency', 'hairpin-mode',
  'healthz-bind-address', 'healthz-port', 'http-check-frequency', 'image-gc-high-threshold', 'image-gc-low-threshold',
  'iptables-drop-bit', 'iptables-masquerade-bit', 'kernel-memcg-notification', 'orch-api-content-type',
  'orch-reserved', 'orch-reserved-cgroup', 'orchlet-cgroups', 'log-json-info-buffer-size', 'log-json-split-stream',
  'logging-format', 'make-iptables-util-chains', 'manifest-url', 'manifest-url-header', 'memory-manager-policy',
  'minimum-image-ttl-duration', 'node-status-max-images', 'node-status-update-frequency', 'oom-score-adj',
  'pod-cidr', 'pod-manifest-path', 'pod-max-pids', 'pods-per-core', 'port', 'protect-kernel-defaults', 'provider-id',
  'qos-reserved', 'read-only-port', 'register-node', 'register-with-taints', 'registry-burst', 'registry-qps',
  'reserved-cpus', 'reserved-memory', 'resolv-conf', 'runonce', 'runtime-request-timeout', 'serialize-image-pulls',
  'streaming-connection-idle-timeout', 'sync-frequency', 'system-cgroups', 'system-reserved',
  'system-reserved-cgroup', 'topology-manager-policy', 'topology-manager-scope', 'volume-plugin-dir',
  'volume-stats-agg-period', 'anonymous-auth', 'authentication-token-webhook', 'authentication-token-webhook-cache-ttl',
  'authorization-mode', 'authorization-webhook-cache-authorized-ttl', 'authorization-webhook-cache-unauthorized-ttl',
  'client-ca-file', 'tls-cert-file', 'tls-private-key-file', 'tls-min-version', 'tls-cipher-suites',
  'rotate-certificates', 'rotate-server-certificates', 'event-qps', 'event-burst', 'max-pods', 'max-open-files',
  'orch-api-qps', 'orch-api-burst',
];

const SUPPORTED = [
  // resource managers (src/agent/cm)
  'cpu-manager-policy', 'cpu-manager-policy-options', 'cpu-manager-reconcile-period', 'reserved-cpus', 'memory-manager-policy',
  'reserved-memory', 'topology-manager-policy', 'topology-manager-scope',
  'azure-container-registry-config', 'cloud-config', 'cloud-provider',
  'orchconfig', 'hostname-override', 'node-ip', 'config', 'root-dir', 'pod-manifest-path', 'container-runtime',
  'container-runtime-endpoint', 'v', 'help', 'version', 'feature-gates', 'port', 'address', 'read-only-port',
  'node-labels', 'register-node', 'max-pods', 'sync-frequency', 'file-check-frequency', 'http-check-frequency',
  'manifest-url', 'manifest-url-header', 'node-status-update-frequency', 'cluster-dns', 'cluster-domain',
  // API-server mode and the agent's servers
  'healthz-bind-address', 'healthz-port', 'enable-server', 'enable-debugging-handlers', 'orch-api-content-type',
  'orch-reserved', 'system-reserved', 'node-lease-duration-seconds', 'pod-infra-container-image', 'provider-id',
  'register-schedulable', 'register-with-taints', 'anonymous-auth', 'authorization-mode', 'client-ca-file', 'cert-dir',
  // TLS bootstrapping, certificate rotation, webhook authentication and authorization
  'bootstrap-orchconfig', 'rotate-certificates', 'rotate-server-certificates', 'authentication-token-webhook',
  'authentication-token-webhook-cache-ttl', 'authorization-webhook-cache-authorized-ttl',
  'authorization-webhook-cache-unauthorized-ttl',
  'tls-cert-file', 'tls-private-key-file', 'event-qps', 'event-burst', 'orch-api-qps', 'orch-api-burst',
  // the CRI runtime and streaming
  'image-service-endpoint', 'runtime-request-timeout', 'cgroup-root', 'cgroups-per-qos',
  'cpu-cfs-quota', 'cpu-cfs-quota-period', 'serialize-image-pulls', 'registry-qps', 'registry-burst', 'resolv-conf',
  'streaming-connection-idle-timeout',
  // limits, eviction, logs, housekeeping, run-once
  'pods-per-core', 'eviction-hard', 'eviction-soft', 'eviction-soft-grace-period', 'eviction-pressure-transition-period',
  'eviction-minimum-reclaim', 'eviction-max-pod-grace-period', 'container-log-max-size', 'container-log-max-files',
  'fail-swap-on', 'lock-file', 'exit-on-lock-contention', 'runonce',
  // garbage collection and node status images
  'maximum-dead-containers', 'maximum-dead-containers-per-container', 'minimum-container-ttl-duration',
  'image-gc-high-threshold', 'image-gc-low-threshold', 'minimum-image-ttl-duration', 'node-status-max-images',
  // TLS of the agent's servers, volumes, the process's file limit
  'tls-min-version', 'tls-cipher-suites', 'keep-terminated-pod-volumes', 'experimental-mounter-path',
  'volume-stats-agg-period', 'max-open-files',
  // logging: klog's output flags and component-base's format options
  'add-dir-header', 'alsologtostderr', 'log-backtrace-at', 'log-dir', 'log-file', 'log-file-max-size',
  'log-flush-frequency', 'log-json-info-buffer-size', 'log-json-split-stream', 'logging-format', 'logtostderr',
  'one-output', 'skip-headers', 'skip-log-headers', 'stderrthreshold', 'vmodule', 'experimental-log-sanitization',
  // deprecated options (src/agent/deprecations.ts)
  'cni-bin-dir', 'cni-cache-dir', 'cni-conf-dir', 'docker-endpoint', 'dynamic-config-dir', 'image-pull-progress-deadline',
  'network-plugin', 'network-plugin-mtu', 'experimental-allocatable-ignore-eviction',
  'experimental-check-node-capabilities-before-mount', 'really-crash-for-testing',
  // node allocatable, QoS and process cgroups, memcg notification (src/agent/cgroups)
  'enforce-node-allocatable', 'system-reserved-cgroup', 'orch-reserved-cgroup', 'orchlet-cgroups', 'runtime-cgroups',
  'system-cgroups', 'pod-max-pids', 'qos-reserved', 'kernel-memcg-notification', 'experimental-kernel-memcg-notification',
  // host networking (src/agent/network)
  'make-iptables-util-chains', 'iptables-masquerade-bit', 'iptables-drop-bit', 'hairpin-mode', 'non-masquerade-cidr', 'pod-cidr',
  // kernel settings (src/agent/sysctl.ts)
  'allowed-unsafe-sysctls', 'oom-score-adj', 'protect-kernel-defaults', 'seccomp-default', 'cgroup-driver',
  // service links, attach/detach and credential providers (issue 10)
  'master-service-namespace', 'enable-controller-attach-detach', 'image-credential-provider-config',
  'image-credential-provider-bin-dir', 'volume-plugin-dir', 'contention-profiling',
];

/** Options beyond document 3: upstream KubeletConfiguration fields exposed as flags. */
const EXTRA = ['node-lease-duration-seconds'];

function refused(argv: string[], message: string | RegExp): void {
  assert.throws(
    () => parseAgentOptions(argv),
    (e: unknown) => {
      assert.ok(e instanceof FlagError, `expected FlagError, got ${String(e)}`);
      if (typeof message === 'string') assert.equal(e.message, message);
      else assert.match(e.message, message);
      return true;
    },
    argv.join(' '),
  );
}

function sampleArg(s: FlagSpec): string {
  if (s.name === 'vmodule') return '--vmodule=file*=2';
  if (s.type === 'bool') return `--${s.name}`;
  if (s.values && s.values.length > 0) return `--${s.name}=${s.values[0]}`;
  if (s.default !== undefined && s.default !== '') return `--${s.name}=${s.default}`;
  const byType: Record<string, string> = {
    string: 'x',
    strings: 'x',
    int: '1',
    int32: '1',
    uint: '1',
    duration: '1s',
    mapStringString: s.separator === '<' ? 'memory.available<1Gi' : 'a=b',
  };
  return `--${s.name}=${byType[s.type] ?? 'x'}`;
}

void describe('agent options: table', () => {
  void it('declares every option of document 3', () => {
    const names = new Set(AGENT_FLAGS.flatMap((s) => [s.name, ...(s.aliases ?? [])]));
    for (const n of DOCUMENT_3_OPTIONS) assert.ok(names.has(n), `--${n} missing`);
    const canonical = AGENT_FLAGS.map((s) => s.name);
    assert.deepEqual(
      canonical.filter((n) => !DOCUMENT_3_OPTIONS.includes(n)),
      EXTRA,
    );
    for (const [up, ours] of Object.entries(UPSTREAM)) {
      assert.ok(AGENT_FLAGS.find((s) => s.name === ours)?.aliases?.includes(up), up);
    }
  });

  void it('marks exactly the agreed options as supported', () => {
    const supported = AGENT_FLAGS.filter((s) => s.status === 'supported').map((s) => s.name);
    assert.deepEqual([...supported].sort(), [...SUPPORTED].sort());
  });

  void it('gives [cfg] options their configuration field, and only them', () => {
    const withField = AGENT_FLAGS.filter((s) => s.configField !== undefined).map((s) => s.name);
    assert.deepEqual([...withField].sort(), [...CFG, ...EXTRA].sort());
    const field = (n: string) => AGENT_FLAGS.find((s) => s.name === n)?.configField;
    assert.equal(field('max-pods'), 'maxPods');
    assert.equal(field('eviction-hard'), 'evictionHard');
    assert.equal(field('pod-manifest-path'), 'staticPodPath');
    assert.equal(field('manifest-url'), 'staticPodURL');
    assert.equal(field('registry-qps'), 'registryPullQPS');
    assert.equal(field('orch-api-qps'), 'kubeAPIQPS');
    assert.equal(field('anonymous-auth'), 'authentication.anonymous.enabled');
  });
});

void describe('agent options: defaults', () => {
  const o = parseAgentOptions([]);

  void it('has the document defaults', () => {
    assert.equal(o.orchconfig, undefined);
    assert.equal(o.address, '0.0.0.0');
    assert.equal(o.port, 10250);
    assert.equal(o.readOnlyPort, 10255);
    assert.equal(o.healthzPort, 10248);
    assert.equal(o.healthzBindAddress, '127.0.0.1');
    assert.equal(o.rootDir, '/var/lib/orchlet');
    assert.equal(o.certDir, '/var/lib/orchlet/pki');
    assert.equal(o.containerRuntime, 'docker');
    assert.equal(o.containerRuntimeEndpoint, 'unix:///var/run/dockershim.sock');
    assert.equal(o.dockerEndpoint, 'unix:///var/run/docker.sock');
    assert.equal(o.registerNode, true);
    assert.equal(o.maxPods, 110);
    assert.equal(o.syncFrequency, 60_000);
    assert.equal(o.fileCheckFrequency, 20_000);
    assert.equal(o.httpCheckFrequency, 20_000);
    assert.equal(o.nodeStatusUpdateFrequency, 10_000);
    assert.equal(o.streamingConnectionIdleTimeout, 4 * 3_600_000);
    assert.equal(o.cpuCfsQuotaPeriod, 100);
    assert.deepEqual(o.clusterDns, []);
    assert.equal(o.clusterDomain, undefined);
    assert.deepEqual(o.nodeLabels, {});
    assert.deepEqual(o.manifestUrlHeader, {});
    assert.deepEqual(o.enforceNodeAllocatable, ['pods']);
    assert.equal(o.evictionHard['memory.available'], '100Mi');
    assert.equal(o.evictionHard['imagefs.available'], '15%');
    assert.equal(o.evictionHard['nodefs.available'], '10%');
    assert.equal(o.evictionHard['nodefs.inodesFree'], process.platform === 'linux' ? '5%' : undefined);
    assert.equal(o.oomScoreAdj, -999);
    assert.equal(o.podMaxPids, -1);
    assert.equal(o.maximumDeadContainers, -1);
    assert.equal(o.logFileMaxSize, 1800);
    assert.equal(o.logBacktraceAt, ':0');
    assert.equal(o.memoryManagerPolicy, 'None');
    assert.equal(o.cpuManagerPolicy, 'none');
    assert.equal(o.topologyManagerScope, 'container');
    assert.equal(o.hairpinMode, 'promiscuous-bridge');
    assert.equal(o.orchApiContentType, 'application/vnd.orch.protobuf');
    assert.equal(o.orchApiQps, 5);
    assert.equal(o.orchApiBurst, 10);
    assert.equal(o.registryQps, 5);
    assert.equal(o.registryBurst, 10);
    assert.equal(o.eventQps, 5);
    assert.equal(o.eventBurst, 10);
    assert.equal(o.maxOpenFiles, 1_000_000);
    assert.equal(o.volumePluginDir, '/usr/libexec/orch/orchlet-plugins/volume/exec/');
    assert.equal(o.podInfraContainerImage, 'k8s.gcr.io/pause:3.6');
    assert.equal(o.authorizationMode, 'AlwaysAllow');
    assert.equal(o.v, 0);
    assert.equal(o.explicitFlags.size, 0);
  });

  void it('resolves the node-agent gate table', () => {
    assert.equal(Object.keys(o.featureGates).length, AGENT_FEATURE_GATES.length);
    assert.equal(AGENT_FEATURE_GATES.length, FEATURE_GATES.length - 1);
    assert.equal(o.featureGates.CPUManagerPolicyOptions, false);
    assert.equal(AGENT_FEATURE_GATES.find((g) => g.name === 'CPUManagerPolicyOptions')?.stage, 'alpha');
    assert.equal(o.featureGates.CSIMigrationAWS, false);
    assert.equal(o.featureGates.TopologyAwareHints, true);
    assert.equal(o.featureGates.ServerSideFieldValidation, undefined);
    assert.equal(o.featureGates.GracefulNodeShutdown, true);
  });
});

const tmp = mkdtempSync(join(tmpdir(), 'orchlet-options-'));
after(() => rmSync(tmp, { recursive: true, force: true }));
const EMPTY_CONFIG = join(tmp, 'empty.yaml');
writeFileSync(EMPTY_CONFIG, 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n');

void describe('agent options: parsing', () => {
  void it('parses the supported options', () => {
    const o = parseAgentOptions([
      '--orchconfig=/etc/orch/orchlet.conf',
      '--hostname-override',
      'node-1',
      '--node-ip=10.0.0.5,fd00::5',
      `--config=${EMPTY_CONFIG}`,
      '--root-dir=/tmp/orchlet',
      '--pod-manifest-path=/etc/orch/manifests',
      '--container-runtime=remote',
      '--container-runtime-endpoint=unix:///run/containerd/containerd.sock',
      '-v',
      '3',
      '--port=11250',
      '--address=::',
      '--read-only-port=0',
      '--node-labels=role=worker,node.kubernetes.io/pool=a',
      '--node-labels=topology.kubernetes.io/zone=z1',
      '--register-node=false',
      '--max-pods=20',
      '--sync-frequency=30s',
      '--file-check-frequency=5s',
      '--http-check-frequency=1m0s',
      '--manifest-url=http://example.test/pods.yaml',
      '--manifest-url-header=Authorization:Bearer abc,X-A:1',
      '--manifest-url-header=X-A:2',
      '--node-status-update-frequency=4s',
      '--cluster-dns=10.96.0.10,fd00::a',
      '--cluster-domain=cluster.local',
      '--feature-gates=NodeSwap=true',
    ]);
    assert.equal(o.orchconfig, '/etc/orch/orchlet.conf');
    assert.equal(o.hostnameOverride, 'node-1');
    assert.equal(o.nodeIp, '10.0.0.5,fd00::5');
    assert.equal(o.config, EMPTY_CONFIG);
    assert.equal(o.rootDir, '/tmp/orchlet');
    assert.equal(o.podManifestPath, '/etc/orch/manifests');
    assert.equal(o.containerRuntime, 'remote');
    assert.equal(o.v, 3);
    assert.equal(o.port, 11250);
    assert.equal(o.address, '::');
    assert.equal(o.readOnlyPort, 0);
    assert.deepEqual(o.nodeLabels, { role: 'worker', 'node.kubernetes.io/pool': 'a', 'topology.kubernetes.io/zone': 'z1' });
    assert.equal(o.registerNode, false);
    assert.equal(o.maxPods, 20);
    assert.equal(o.syncFrequency, 30_000);
    assert.equal(o.fileCheckFrequency, 5000);
    assert.equal(o.httpCheckFrequency, 60_000);
    assert.equal(o.manifestUrl, 'http://example.test/pods.yaml');
    assert.deepEqual(o.manifestUrlHeader, { Authorization: ['Bearer abc'], 'X-A': ['1', '2'] });
    assert.equal(o.nodeStatusUpdateFrequency, 4000);
    assert.deepEqual(o.clusterDns, ['10.96.0.10', 'fd00::a']);
    assert.equal(o.clusterDomain, 'cluster.local');
    assert.equal(o.featureGates.NodeSwap, true);
    assert.ok(o.explicitFlags.has('orchconfig'));
  });

  void it('accepts --kubeconfig for --orchconfig', () => {
    const o = parseAgentOptions(['--kubeconfig', '/k.conf']);
    assert.equal(o.orchconfig, '/k.conf');
    assert.ok(o.explicitFlags.has('orchconfig'));
  });

  void it('checks values', () => {
    refused(['--container-runtime=containerd'], 'invalid value "containerd" for --container-runtime: must be one of docker, remote');
    refused(['--port=0'], 'invalid value "0" for --port: must be between 1 and 65535 inclusive');
    refused(['--port=x'], 'invalid value "x" for --port: must be a 32-bit integer');
    refused(['--read-only-port=70000'], /must be between 0 and 65535/);
    refused(['--max-pods=-1'], /must not be negative/);
    refused(['--address=any'], 'invalid value "any" for --address: must be an IPv4 or IPv6 address');
    refused(['--node-ip=10.0.0.1,10.0.0.2'], /dual-stack/);
    refused(['--node-ip=nodeA'], /is not an IPv4 or IPv6 address/);
    refused(['--cluster-dns=dns.local'], /"dns.local" is not an IPv4 or IPv6 address/);
    refused(['--node-labels=a'], 'invalid value "a" for --node-labels: must be key=value pairs separated by commas');
    refused(['--node-labels=-bad=x'], /"-bad" is not a valid label key/);
    refused(['--node-labels=a=b c'], /is not a valid label value/);
    refused(['--node-labels=kubernetes.io/role=master'], /label kubernetes.io\/role is in a reserved domain/);
    refused(['--node-labels=foo.k8s.io/x=y'], /reserved domain/);
    refused(['--node-labels=orch.io/x=y'], /reserved domain/);
    assert.deepEqual(parseAgentOptions(['--node-labels=kubernetes.io/hostname=n1,x.orchlet.orch.io/a=b']).nodeLabels, {
      'kubernetes.io/hostname': 'n1',
      'x.orchlet.orch.io/a': 'b',
    });
    refused(['--manifest-url=ftp://x/y'], 'invalid value "ftp://x/y" for --manifest-url: must be an http or https URL');
    refused(['--manifest-url-header=NoColon'], /must be name:value pairs/);
    refused(['--sync-frequency=-1s'], /must not be negative/);
    refused(['--node-status-update-frequency=0s'], /must be positive/);
    refused(['--feature-gates=ServerSideFieldValidation=true'], /unrecognized feature gate ServerSideFieldValidation/);
    refused(['--eviction-hard=memory.available=1Gi'], /must be key<value pairs/);
    refused(['--enforce-node-allocatable=none,pods'], /'none' must not be combined/);
    refused(['--oom-score-adj=-1001'], /between -1000 and 1000/);
    refused(['--container-log-max-files=1'], /at least 2/);
  });

  void it('resolves feature gates with AllBeta and upstream spellings', () => {
    const o = parseAgentOptions(['--feature-gates=AllBeta=false,KubeletPodResources=true']);
    assert.equal(o.featureGates.GracefulNodeShutdown, false);
    assert.equal(o.featureGates.OrchletPodResources, true);
    assert.equal(o.featureGates.TopologyAwareHints, false);
  });

  void it('refuses positional arguments and unknown flags', () => {
    refused(['run'], 'unexpected argument "run": orchlet takes no positional arguments');
    refused(['--foo'], 'unknown flag: --foo');
  });
});

void describe('agent options: --config (KubeletConfiguration)', () => {
  const write = (name: string, text: string): string => {
    const p = join(tmp, name);
    writeFileSync(p, text);
    return p;
  };

  void it('reads the [cfg] fields from YAML, resolves relative paths against the file, and lets flags override', () => {
    const path = write(
      'kubelet.yaml',
      [
        'apiVersion: kubelet.config.k8s.io/v1beta1',
        'kind: KubeletConfiguration',
        'maxPods: 7',
        'podsPerCore: 2',
        'syncFrequency: 30s',
        'nodeStatusUpdateFrequency: 4s',
        'staticPodPath: manifests',
        'readOnlyPort: 0',
        'evictionHard: {memory.available: 1Gi, nodefs.available: 5%}',
        'evictionSoft: {memory.available: 2Gi}',
        'evictionSoftGracePeriod: {memory.available: 1m30s}',
        'registerWithTaints: [{key: dedicated, value: infra, effect: NoSchedule}]',
        'staticPodURLHeader: {X-Token: [a, b]}',
        'featureGates: {ProbeTerminationGracePeriod: true}',
        'authentication: {anonymous: {enabled: false}}',
        'containerLogMaxSize: 1Mi',
        'shutdownGracePeriod: 30s',
      ].join('\n'),
    );
    const o = parseAgentOptions([`--config=${path}`, '--max-pods=9', '--eviction-hard=pid.available<1000']);
    assert.equal(o.maxPods, 9, 'the flag wins');
    assert.deepEqual(o.evictionHard, { 'pid.available': '1000' }, 'a map flag replaces the file map');
    assert.equal(o.podsPerCore, 2);
    assert.equal(o.syncFrequency, 30_000);
    assert.equal(o.nodeStatusUpdateFrequency, 4000);
    assert.equal(o.podManifestPath, join(tmp, 'manifests'));
    assert.equal(o.readOnlyPort, 0);
    assert.deepEqual(o.evictionSoft, { 'memory.available': '2Gi' });
    assert.deepEqual(o.evictionSoftGracePeriod, { 'memory.available': '1m30s' });
    assert.deepEqual(o.registerWithTaints, { dedicated: 'infra:NoSchedule' });
    assert.deepEqual(o.manifestUrlHeader, { 'X-Token': ['a', 'b'] });
    assert.equal(o.featureGates.ProbeTerminationGracePeriod, true);
    assert.equal(o.anonymousAuth, false);
    assert.equal(o.containerLogMaxSize, '1Mi');
    assert.ok(o.configFileFlags.has('max-pods') === false && o.configFileFlags.has('pods-per-core'));
    assert.ok(!o.explicitFlags.has('pods-per-core'), 'file values are not command-line flags');
    assert.deepEqual(o.configWarnings, [`configuration file ${path}: field shutdownGracePeriod is not supported by orchlet and was ignored`]);
  });

  void it('reads JSON and checks kind, apiVersion, types and values, naming the field', () => {
    const json = write('kubelet.json', JSON.stringify({ apiVersion: 'kubelet.config.k8s.io/v1beta1', kind: 'KubeletConfiguration', port: 11250, enableServer: false }));
    const o = parseAgentOptions([`--config=${json}`]);
    assert.equal(o.port, 11250);
    assert.equal(o.enableServer, false);
    const wrongKind = write('kind.yaml', 'apiVersion: v1\nkind: ConfigMap\n');
    refused([`--config=${wrongKind}`], /expected kind KubeletConfiguration and apiVersion kubelet\.config\.k8s\.io\/v1beta1/);
    const wrongType = write('type.yaml', 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nmaxPods: many\n');
    refused([`--config=${wrongType}`], /maxPods: expected a number, got "many"/);
    const badValue = write('value.yaml', 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nport: 0\n');
    refused([`--config=${badValue}`], /field port: invalid value "0" for --port: must be between 1 and 65535/);
    const managers = write(
      'managers.yaml',
      'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncpuManagerPolicy: static\nreservedMemory:\n- numaNode: 0\n  limits:\n    memory: 1Gi\n- numaNode: 1\n  limits:\n    memory: 100Mi\n    hugepages-2Mi: 2Mi\n',
    );
    const fromFile = parseAgentOptions([`--config=${managers}`]);
    assert.equal(fromFile.cpuManagerPolicy, 'static');
    assert.equal(fromFile.reservedMemory, '0:memory=1Gi;1:memory=100Mi,hugepages-2Mi=2Mi');
    const atDefault = write('default.yaml', 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncpuManagerPolicy: none\n');
    assert.equal(parseAgentOptions([`--config=${atDefault}`]).cpuManagerPolicy, 'none');
    refused([`--config=${join(tmp, 'missing.yaml')}`], /failed to read the configuration file .*missing\.yaml/);
  });
});

void describe('agent options: garbage collection and node status images', () => {
  void it("parses kubelet's GC policies and node status image cap, with their defaults and checks", () => {
    const d = parseAgentOptions([]);
    assert.deepEqual(
      [d.maximumDeadContainers, d.maximumDeadContainersPerContainer, d.minimumContainerTtlDuration ?? 0, d.imageGcHighThreshold, d.imageGcLowThreshold, d.minimumImageTtlDuration, d.nodeStatusMaxImages],
      [-1, 1, 0, 85, 80, 120_000, 50],
    );
    const o = parseAgentOptions([
      '--maximum-dead-containers=10',
      '--maximum-dead-containers-per-container=2',
      '--minimum-container-ttl-duration=30s',
      '--image-gc-high-threshold=90',
      '--image-gc-low-threshold=70',
      '--minimum-image-ttl-duration=5m',
      '--node-status-max-images=-1',
    ]);
    assert.deepEqual(
      [o.maximumDeadContainers, o.maximumDeadContainersPerContainer, o.minimumContainerTtlDuration, o.imageGcHighThreshold, o.imageGcLowThreshold, o.minimumImageTtlDuration, o.nodeStatusMaxImages],
      [10, 2, 30_000, 90, 70, 300_000, -1],
    );
    refused(['--image-gc-high-threshold=101'], /--image-gc-high-threshold/);
    refused(['--node-status-max-images=-2'], /--node-status-max-images.*must be -1 or greater/);
  });
});

void describe('agent options: not implemented yet', () => {
  void it('refuses later options when given, under the spelling used', () => {
    // both spellings of a renamed option reach the same field (once refused under the spelling used)
    assert.equal(parseAgentOptions(['--kube-reserved-cgroup=/k']).orchReservedCgroup, '/k');
    assert.equal(parseAgentOptions(['--orch-reserved-cgroup=/k']).orchReservedCgroup, '/k');
    assert.equal(parseAgentOptions(['--cpu-manager-policy=static']).cpuManagerPolicy, 'static');
  });

  void it('refuses every later option, each with a valid value', () => {
    for (const s of AGENT_FLAGS) {
      if (s.status !== 'later') continue;
      refused([sampleArg(s)], `--${s.name}: not implemented yet`);
    }
  });

  void it('lets --help and --version through', () => {
    assert.equal(parseAgentOptions(['-h', '--kube-reserved-cgroup=/k']).help, true);
    assert.equal(parseAgentOptions(['--version', '--cgroup-driver=systemd']).version, true);
    refused(['--version', '--feature-gates=Nope=true'], /unrecognized feature gate Nope/);
  });
});

void describe('agent options: help', () => {
  const help = agentHelp();
  const flat = help.replace(/\s+/g, ' ');

  void it('mentions every option of document 3', () => {
    for (const n of DOCUMENT_3_OPTIONS) assert.match(help, new RegExp(`--${n}(?![a-z0-9-])`), `--${n} missing from help`);
  });

  void it('shows types, defaults, config fields and upstream spellings', () => {
    assert.match(flat, /--max-pods int32 Pods that can run on the node\. \(deprecated: set 'maxPods' in the file named by --config instead\) \(default 110\)/);
    assert.match(flat, /--orchconfig string [^(]*\(without it the agent runs standalone\)\. \(deprecated spelling: --kubeconfig\)/);
    assert.match(help, /--sync-frequency duration[\s\S]*?\(default 1m0s\)/);
    assert.match(help, /\n {2}-v, --v Level /);
    assert.match(flat, /--eviction-hard mapStringString [^(]*\([^)]*\) \(default imagefs\.available<15%,memory\.available<100Mi,nodefs\.available<10%/);
    assert.match(help, /\nOptions:\n[\s\S]*\nAuthentication:\n[\s\S]*\nEvents:\n[\s\S]*\nLimits:\n/);
  });
});
