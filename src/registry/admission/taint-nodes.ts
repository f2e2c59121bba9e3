/**
 * TaintNodesByCondition admission, as Kubernetes 1.23's (plugin/pkg/admission/nodetaint): a new Node gets
 * the node.kubernetes.io/not-ready:NoSchedule taint (unless it has it), so that nothing is scheduled to it
 * before it reports Ready; the node lifecycle controller removes the taint once the node is Ready.
 */
import type { Admission } from '../store.js';

export const TAINT_NODE_NOT_READY = 'node.kubernetes.io/not-ready';

export function taintNodesByCondition(): Admission {
  return {
    handles: (d, op) => op === 'CREATE' && d.group === '' && d.resource === 'nodes',
    async mutate(a) {
      if (a.operation !== 'CREATE' || a.decl.group !== '' || a.decl.resource !== 'nodes' || a.subresource !== '' || !a.object) return;
      const spec = (a.object['spec'] ??= {}) as Record<string, unknown>;
      const taints = (Array.isArray(spec['taints']) ? spec['taints'] : []) as Record<string, unknown>[];
      if (taints.some((t) => t['key'] === TAINT_NODE_NOT_READY && t['effect'] === 'NoSchedule')) return;
      spec['taints'] = [...taints, { key: TAINT_NODE_NOT_READY, effect: 'NoSchedule' }];
    },
  };
}
