/**
 * --admission-control-config-file: reads an AdmissionConfiguration as Kubernetes 1.23 does
 * (apiserver.config.k8s.io/v1, or apiserver.k8s.io/v1alpha1; YAML or JSON):
 *
 *   apiVersion: apiserver.config.k8s.io/v1
 *   kind: AdmissionConfiguration
 *   plugins:
 *   - name: ResourceQuota
 *     path: resourcequota.yaml        # relative to this file's directory
 *   - name: EventRateLimit
 *     configuration: {apiVersion: eventratelimit.admission.k8s.io/v1alpha1, kind: Configuration, ...}
 *
 * Each entry gives one plugin its configuration, inline (`configuration`, which wins) or from a file
 * (`path`). A file that is not a versioned AdmissionConfiguration but has a top-level `imagePolicy` or
 * `podNodeSelectorPluginConfig` key is Kubernetes' legacy form: it is then itself the configuration of
 * ImagePolicyWebhook and PodNodeSelector. Plugins read their part through the PluginConfigReader
 * (registry/admission/plugin-config.ts) this returns; the files of enabled plugins are read at start.
 */
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { yaml } from '../util/yaml.js';
import type { PluginConfig, PluginConfigReader } from '../registry/admission/plugin-config.js';
import type { WebhookAuth, WebhookAuthResolver } from '../registry/admission/webhook-call.js';

export const ADMISSION_CONFIG_VERSIONS = ['apiserver.config.k8s.io/v1', 'apiserver.k8s.io/v1alpha1'];
const LEGACY_PLUGINS = ['ImagePolicyWebhook', 'PodNodeSelector'];

interface PluginEntry {
  name: string;
  path?: string;
  configuration?: unknown;
}

/**
 * Loads the file (undefined: no configuration for any plugin). `enabled` are the plugins in effect: the
 * files their entries name are read now, so that a missing one stops the start. Throws Error with
 * kube-apiserver's wording.
 */
export function loadAdmissionConfig(path: string | undefined, enabled: readonly string[]): PluginConfigReader {
  if (!path) return () => undefined;
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new Error(`unable to read admission control configuration from "${path}" [${(err as Error).message}]`, { cause: err });
  }
  let doc: unknown;
  try {
    doc = yaml().parse(text);
  } catch (err) {
    throw new Error(`unable to parse admission control configuration from "${path}": ${(err as Error).message}`, { cause: err });
  }
  const obj = (doc && typeof doc === 'object' && !Array.isArray(doc) ? doc : {}) as Record<string, unknown>;
  const entries: PluginEntry[] = [];
  if (obj.apiVersion === undefined || obj.apiVersion === '' || obj.kind === undefined || obj.kind === '') {
    if (!('imagePolicy' in obj) && !('podNodeSelectorPluginConfig' in obj)) {
      const missing = obj.apiVersion === undefined || obj.apiVersion === '' ? 'Version' : 'Kind';
      throw new Error(`Object '${missing}' is missing in '${text.trim()}'`);
    }
    for (const name of LEGACY_PLUGINS) entries.push({ name, path });
  } else {
    const str = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v));
    const apiVersion = str(obj.apiVersion);
    const kind = str(obj.kind);
    if (!ADMISSION_CONFIG_VERSIONS.includes(apiVersion) || kind !== 'AdmissionConfiguration') {
      throw new Error(`no kind "${kind}" is registered for version "${apiVersion}" in scheme "admission-control-config-file"`);
    }
    const plugins = obj.plugins ?? [];
    if (!Array.isArray(plugins)) throw new Error(`error decoding admission control configuration from "${path}": plugins must be a list`);
    const base = dirname(path);
    for (const p of plugins as unknown[]) {
      if (!p || typeof p !== 'object') continue;
      const e = p as Record<string, unknown>;
      const entry: PluginEntry = { name: typeof e.name === 'string' ? e.name : '' };
      if (typeof e.path === 'string' && e.path !== '') entry.path = isAbsolute(e.path) ? e.path : resolve(base, e.path);
      if (e.configuration !== undefined && e.configuration !== null) entry.configuration = e.configuration;
      entries.push(entry);
    }
  }
  const configs = new Map<string, PluginConfig | undefined>();
  const configOf = (entry: PluginEntry): PluginConfig | undefined => {
    if (entry.configuration !== undefined) {
      return { data: JSON.stringify(entry.configuration), object: entry.configuration, source: path };
    }
    if (entry.path === undefined) return undefined;
    let data: string;
    try {
      data = readFileSync(entry.path, 'utf8');
    } catch (err) {
      throw new Error(`Couldn't open admission plugin configuration ${entry.path}: ${(err as Error).message}`, { cause: err });
    }
    let object: unknown;
    try {
      object = yaml().parse(data);
    } catch (err) {
      throw new Error(`error parsing admission plugin configuration ${entry.path}: ${(err as Error).message}`, { cause: err });
    }
    return { data, object, source: entry.path };
  };
  // As Kubernetes' ConfigFor: the first entry with the plugin's name is its configuration.
  for (const name of enabled) {
    const entry = entries.find((e) => e.name === name);
    if (entry) configs.set(name, configOf(entry));
  }
  return (name) => {
    if (configs.has(name)) return configs.get(name);
    const entry = entries.find((e) => e.name === name);
    if (!entry) return undefined;
    try {
      const c = configOf(entry);
      configs.set(name, c);
      return c;
    } catch {
      return undefined;
    }
  };
}

/**
 * The MutatingAdmissionWebhook/ValidatingAdmissionWebhook configuration (WebhookAdmissionConfiguration,
 * apiserver.config.k8s.io/v1, or WebhookAdmission, apiserver.config.k8s.io/v1alpha1): `kubeConfigFile`, an
 * absolute path to a kubeconfig whose users say how the server authenticates to each webhook, found by the
 * webhook's host:port (a Service as <name>.<namespace>.svc:<port>) as Kubernetes' AuthenticationInfoResolver
 * looks it up: exact name, then '*.'-prefixed suffixes, then both again without a :443 port, then '*', then
 * the current context's user; none: anonymous. Returns undefined without configuration.
 */
export function webhookAuthFrom(cfg: PluginConfig | undefined): WebhookAuthResolver | undefined {
  if (!cfg) return undefined;
  const o = (cfg.object ?? {}) as Record<string, unknown>;
  const known =
    (o.apiVersion === 'apiserver.config.k8s.io/v1' && o.kind === 'WebhookAdmissionConfiguration') ||
    (o.apiVersion === 'apiserver.config.k8s.io/v1alpha1' && o.kind === 'WebhookAdmission');
  if (!known) throw new Error(`unable to decode webhook admission configuration from ${cfg.source}: expected WebhookAdmissionConfiguration (apiserver.config.k8s.io/v1)`);
  const file = typeof o.kubeConfigFile === 'string' ? o.kubeConfigFile : '';
  if (file === '') return undefined;
  if (!isAbsolute(file)) throw new Error(`kubeConfigFile: Invalid value: "${file}": must be an absolute file path`);
  let kc: Record<string, any>;
  try {
    kc = (yaml().parse(readFileSync(file, 'utf8')) ?? {}) as Record<string, any>;
  } catch (err) {
    throw new Error(`unable to read webhook admission kubeconfig ${file}: ${(err as Error).message}`, { cause: err });
  }
  const base = dirname(file);
  const readPath = (p: unknown) => (typeof p === 'string' && p !== '' ? readFileSync(isAbsolute(p) ? p : resolve(base, p), 'utf8') : undefined);
  const users = new Map<string, WebhookAuth>();
  for (const u of Array.isArray(kc['users']) ? (kc['users'] as Record<string, any>[]) : []) {
    const user = (u['user'] ?? {}) as Record<string, any>;
    const auth: WebhookAuth = {};
    const token = typeof user['token'] === 'string' ? user['token'] : readPath(user['tokenFile'])?.trim();
    if (token) auth.token = token;
    if (typeof user['username'] === 'string') auth.basic = Buffer.from(`${user['username']}:${String(user['password'] ?? '')}`).toString('base64');
    const cert = typeof user['client-certificate-data'] === 'string' ? Buffer.from(user['client-certificate-data'], 'base64').toString('utf8') : readPath(user['client-certificate']);
    const key = typeof user['client-key-data'] === 'string' ? Buffer.from(user['client-key-data'], 'base64').toString('utf8') : readPath(user['client-key']);
    if (cert) auth.cert = cert;
    if (key) auth.key = key;
    users.set(String(u['name'] ?? ''), auth);
  }
  const contexts = Array.isArray(kc['contexts']) ? (kc['contexts'] as Record<string, any>[]) : [];
  const current = contexts.find((c) => c['name'] === kc['current-context']);
  const currentUser = typeof current?.['context']?.user === 'string' ? (current['context'].user as string) : undefined;
  const starMatch = (host: string) => {
    const steps = host.split('.');
    for (let i = 1; i < steps.length; i++) {
      const auth = users.get(`*.${steps.slice(i).join('.')}`);
      if (auth) return auth;
    }
    return undefined;
  };
  return (hostPort) => {
    const exact = users.get(hostPort) ?? starMatch(hostPort);
    if (exact) return exact;
    const m = /^(.*):443$/.exec(hostPort);
    if (m) {
      const found = users.get(m[1]!) ?? starMatch(m[1]!);
      if (found) return found;
    }
    return users.get('*') ?? (currentUser !== undefined ? users.get(currentUser) : undefined);
  };
}
