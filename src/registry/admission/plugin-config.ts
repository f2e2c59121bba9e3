/**
 * The configuration one admission plugin is given by --admission-control-config-file (Kubernetes'
 * admission.ConfigProvider.ConfigFor). Plugin factories that take configuration receive a
 * `PluginConfigReader` and call it with their own name, e.g. in controlplane.ts:
 *
 *   podSecurity({ ..., config: pluginConfig('PodSecurity') })
 *
 * It returns undefined when the file names no entry for the plugin (or there is no file, or the entry has
 * neither `configuration` nor `path`): the plugin then uses its defaults, as in Kubernetes. Otherwise
 * `data` is the text the plugin decodes (the inline `configuration` as JSON, or the file at `path` as read)
 * and `object` that text already parsed as YAML/JSON (a plugin that wants its own error wording may parse
 * `data` itself); `source` names where it came from for error messages. The plugin checks apiVersion and
 * kind itself (e.g. PodSecurityConfiguration, pod-security.admission.config.k8s.io/v1beta1).
 */
export interface PluginConfig {
  /** The plugin's configuration text: inline configuration serialised as JSON, or the contents of `path`. */
  data: string;
  /** `data` parsed (YAML or JSON): usually an object with apiVersion and kind. */
  object: unknown;
  /** The admission configuration file (inline) or the plugin's own file (path). */
  source: string;
}

/** The configuration of the named plugin, or undefined when none is given. Never throws. */
export type PluginConfigReader = (pluginName: string) => PluginConfig | undefined;

/** A reader that knows no configuration (no --admission-control-config-file). */
export const noPluginConfig: PluginConfigReader = () => undefined;
