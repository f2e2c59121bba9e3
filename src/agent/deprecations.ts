/**
 * orchlet's deprecated options, as kubelet 1.23 treats them: pflag prints 'Flag --name has been deprecated,
 * <message>' for each one given, then the option does what it did, or is refused where kubelet refuses it.
 *
 * - klog's output flags (src/agent/logging.ts): KEP 2845's message, their effect unchanged.
 * - The options of the built-in Docker adapter (dockershim): 'will be removed along with dockershim.' With
 *   --container-runtime=remote kubelet ignores them, and so do we. Our built-in runtime (the process runtime,
 *   standing for <runtime>) starts pods on the host's network and pulls no images, so it has no network plugin:
 *   --network-plugin naming one is refused; the CNI directories, --network-plugin-mtu, --docker-endpoint and
 *   --image-pull-progress-deadline have nothing to act on and are accepted.
 * - --dynamic-config-dir: refused as kubelet refuses it without the DynamicKubeletConfig gate (a gate our gate
 *   set, document 2's, does not have).
 * - --experimental-allocatable-ignore-eviction: node allocatable is not reduced by the hard eviction thresholds.
 * - --experimental-check-node-capabilities-before-mount: accepted; no volume type of ours needs node
 *   components (mount helpers) to be checked.
 * - --really-crash-for-testing: accepted; an uncaught error already ends the Node.js process.
 * - --non-masquerade-cidr: accepted. In kubelet 1.23 only the dockershim read it, for its kubenet network plugin
 *   (masquerade traffic from pods to addresses outside the range); no runtime of ours has that plugin (the
 *   built-in runtime uses the host's network, a CRI runtime configures its own), so it has no effect, which the
 *   agent logs at start (network/dockershim-options.ts).
 * - --master-service-namespace: its effect unchanged (the `kubernetes` Service of that namespace in every
 *   pod's service links, servicelinks.ts).
 * - The other deprecated KubeletFlags of 1.23 keep their effect: --minimum-container-ttl-duration and the two
 *   --maximum-dead-containers options (container GC), --register-schedulable, --keep-terminated-pod-volumes,
 *   --experimental-mounter-path, --cloud-provider and --cloud-config (util/cloud.ts).
 * - Every option of the KubeletConfiguration (the [cfg] rows of document 3, a configField here) given on the
 *   command line: kubelet 1.23 marks all of them deprecated in favour of the --config file (AddKubeletConfigFlags),
 *   with one message; they keep their effect.
 */
import { KLOG_FLAGS } from './logging.js';
import { AGENT_FLAGS } from './options.js';

const KLOG_DEPRECATION =
  'will be removed in a future release, see https://github.com/kubernetes/enhancements/tree/master/keps/sig-instrumentation/2845-deprecate-klog-specific-flags-in-k8s-components';
const DOCKERSHIM = 'will be removed along with dockershim.';

/** Deprecated flag -> pflag's deprecation message (kubelet 1.23). */
export const DEPRECATED_FLAGS: ReadonlyMap<string, string> = new Map([
  ...KLOG_FLAGS.map((f): [string, string] => [f, KLOG_DEPRECATION]),
  ...['docker-endpoint', 'image-pull-progress-deadline', 'network-plugin', 'network-plugin-mtu', 'cni-conf-dir', 'cni-bin-dir', 'cni-cache-dir'].map(
    (f): [string, string] => [f, DOCKERSHIM],
  ),
  [
    'dynamic-config-dir',
    'Feature DynamicKubeletConfig is deprecated in 1.22 and will not move to GA. It is planned to be removed from Kubernetes in the version 1.23. Please use alternative ways to update kubelet configuration.',
  ],
  ...['minimum-container-ttl-duration', 'maximum-dead-containers-per-container', 'maximum-dead-containers'].map((f): [string, string] => [
    f,
    'Use --eviction-hard or --eviction-soft instead. Will be removed in a future version.',
  ]),
  ['master-service-namespace', 'This flag will be removed in a future version.'],
  ['register-schedulable', 'will be removed in a future version'],
  ['non-masquerade-cidr', 'will be removed in a future version'],
  ['keep-terminated-pod-volumes', 'will be removed in a future version'],
  ['experimental-check-node-capabilities-before-mount', 'will be removed in 1.23. in favor of using CSI.'],
  ['experimental-mounter-path', 'will be removed in 1.23. in favor of using CSI.'],
  ['cloud-provider', 'will be removed in 1.23, in favor of removing cloud provider code from Kubelet.'],
  ['cloud-config', 'will be removed in 1.23, in favor of removing cloud provider code from Kubelet.'],
  ['experimental-allocatable-ignore-eviction', 'will be removed in 1.23.'],
  ['experimental-kernel-memcg-notification', 'Use kernelMemcgNotification configuration, this flag will be removed in 1.23.'],
  ['really-crash-for-testing', 'will be removed in a future version.'],
]);

/** kubelet 1.23's message for every KubeletConfiguration flag given on the command line. */
export const CONFIG_FLAG_DEPRECATION =
  "This parameter should be set via the config file specified by the Kubelet's --config flag. See https://kubernetes.io/docs/tasks/administer-cluster/kubelet-config-file/ for more information.";

const CONFIG_FLAGS: ReadonlySet<string> = new Set(AGENT_FLAGS.filter((f) => f.configField !== undefined).map((f) => f.name));

/** An option's deprecation message, if it has one: its own, or the configuration file's for a [cfg] option. */
export function deprecationOf(flag: string): string | undefined {
  return DEPRECATED_FLAGS.get(flag) ?? (CONFIG_FLAGS.has(flag) ? CONFIG_FLAG_DEPRECATION : undefined);
}

/** pflag's warnings for the deprecated flags given on the command line, in the order they were given. */
export function deprecationWarnings(explicit: ReadonlySet<string>): string[] {
  const out: string[] = [];
  for (const f of explicit) {
    const m = deprecationOf(f);
    if (m !== undefined) out.push(`Flag --${f} has been deprecated, ${m}`);
  }
  return out;
}

export interface DeprecatedOptionValues {
  containerRuntime: string;
  networkPlugin?: string | undefined;
  dynamicConfigDir?: string | undefined;
  explicitFlags: ReadonlySet<string>;
}

/** The refusals: --dynamic-config-dir without its gate, a network plugin for the built-in runtime. */
export function checkDeprecatedOptions(o: DeprecatedOptionValues): void {
  if (o.explicitFlags.has('dynamic-config-dir')) {
    throw new Error('the DynamicKubeletConfig feature gate must be enabled in order to use the --dynamic-config-dir flag');
  }
  if (o.containerRuntime !== 'remote' && (o.networkPlugin ?? '') !== '') {
    throw new Error(
      `--network-plugin=${o.networkPlugin!}: the built-in runtime runs pods on the host's network and has no network plugins (use --container-runtime=remote, whose runtime configures the pod network)`,
    );
  }
}

/** The hard eviction thresholds that reduce node allocatable: none with --experimental-allocatable-ignore-eviction. */
export function allocatableEvictionHard(evictionHard: Record<string, string> | undefined, ignore: boolean): Record<string, string> {
  return ignore ? {} : (evictionHard ?? {});
}
