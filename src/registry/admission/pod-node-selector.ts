/**
 * PodNodeSelector admission, as Kubernetes 1.23's (plugin/pkg/admission/podnodeselector). A namespace's
 * node selector is its scheduler.alpha.kubernetes.io/node-selector annotation ("k=v,k2=v2"; may be empty),
 * or else the configuration's clusterDefaultNodeSelector. On pod create the namespace's selector is merged
 * into the pod's nodeSelector (a conflicting value is refused, 403); the result must then fit the namespace's
 * whitelist in the configuration (an entry per namespace name), when there is one.
 *
 * Configuration (--admission-control-config-file, or its legacy form):
 *   podNodeSelectorPluginConfig: {clusterDefaultNodeSelector: "env=prod", team-a: "env=prod,team=a"}
 */
import { apiErrors, isStatusError } from '../errors.js';
import type { KObject } from '../kind.js';
import type { Admission, AdmissionAttributes, ResourceStore } from '../store.js';
import { isObj, objOf, podSpec } from './pod-helpers.js';

export const NODE_SELECTOR_ANNOTATION = 'scheduler.alpha.kubernetes.io/node-selector';
const PODS = { group: '', resource: 'pods' };

/** Kubernetes' labels.ConvertSelectorToLabelsMap: "a=b, c=d" (== also accepted) to a map. */
export function selectorToMap(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  if (text.trim() === '') return out;
  for (const part of text.split(',')) {
    const kv = part.trim();
    const m = /^([^=!\s]+)\s*==?\s*([^=\s]*)$/.exec(kv);
    if (!m) throw new Error(`invalid selector: '${kv}'; can't understand '${kv}'`);
    out[m[1]!] = m[2]!;
  }
  return out;
}

export interface PodNodeSelectorConfig {
  /** Namespace name (or clusterDefaultNodeSelector) to its selector text. */
  selectors: Record<string, string>;
}

/** Reads the plugin's configuration object (with or without the podNodeSelectorPluginConfig key). */
export function parsePodNodeSelectorConfig(object: unknown, source: string): PodNodeSelectorConfig {
  const o = objOf(object);
  const inner = 'podNodeSelectorPluginConfig' in o ? objOf(o['podNodeSelectorPluginConfig']) : {};
  const selectors: Record<string, string> = {};
  for (const [k, v] of Object.entries(inner)) {
    if (typeof v !== 'string') throw new Error(`${source}: podNodeSelectorPluginConfig.${k} must be a string`);
    try {
      selectorToMap(v);
    } catch (err) {
      throw new Error(`${source}: podNodeSelectorPluginConfig.${k}: ${(err as Error).message}`, { cause: err });
    }
    selectors[k] = v;
  }
  return { selectors };
}

export function podNodeSelector(namespaces: () => ResourceStore | undefined, config: PodNodeSelectorConfig = { selectors: {} }): Admission {
  const forbidden = (a: AdmissionAttributes, message: string) => apiErrors.forbidden(PODS, a.name, message);

  const namespaceSelector = async (a: AdmissionAttributes): Promise<Record<string, string> | undefined> => {
    const store = namespaces();
    if (!store) return undefined;
    let ns: KObject;
    try {
      ns = await store.get({ namespace: '' }, a.namespace);
    } catch (err) {
      if (isStatusError(err, 'NotFound')) return undefined;
      throw err;
    }
    const annotations = objOf(ns.metadata?.annotations);
    const text = typeof annotations[NODE_SELECTOR_ANNOTATION] === 'string' ? annotations[NODE_SELECTOR_ANNOTATION] : config.selectors['clusterDefaultNodeSelector'] ?? '';
    try {
      return selectorToMap(text);
    } catch (err) {
      throw forbidden(a, (err as Error).message);
    }
  };
  const conflicts = (x: Record<string, string>, y: Record<string, string>) => Object.entries(x).some(([k, v]) => k in y && y[k] !== v);
  const applies = (a: AdmissionAttributes) => a.decl.group === '' && a.decl.resource === 'pods' && a.subresource === '' && a.operation === 'CREATE' && isObj(a.object);

  return {
    async mutate(a) {
      if (!applies(a)) return;
      const selector = await namespaceSelector(a);
      if (!selector) return;
      const spec = podSpec(a.object!);
      const pod = objOf(spec['nodeSelector']) as Record<string, string>;
      if (conflicts(selector, pod)) throw forbidden(a, 'pod node label selector conflicts with its namespace node label selector');
      if (Object.keys(selector).length > 0) spec['nodeSelector'] = { ...selector, ...pod };
    },
    async validate(a) {
      if (!applies(a)) return;
      const selector = await namespaceSelector(a);
      if (!selector) return;
      const pod = objOf(objOf(a.object!['spec'])['nodeSelector']) as Record<string, string>;
      if (conflicts(selector, pod)) throw forbidden(a, 'pod node label selector conflicts with its namespace node label selector');
      const whitelist = selectorToMap(config.selectors[a.namespace] ?? '');
      if (Object.keys(whitelist).length > 0 && Object.entries(pod).some(([k, v]) => whitelist[k] !== v)) {
        throw forbidden(a, 'pod node label selector labels conflict with its namespace whitelist');
      }
    },
  };
}
