/**
 * DefaultTolerationSeconds admission, as Kubernetes 1.23's (plugin/pkg/admission/defaulttolerationseconds):
 * a pod (create or update of the main resource) that does not tolerate the node.kubernetes.io/not-ready
 * or node.kubernetes.io/unreachable NoExecute taint gets a toleration for it (operator Exists) lasting
 * --default-not-ready-toleration-seconds / --default-unreachable-toleration-seconds. A toleration with an
 * empty key or an empty effect counts as tolerating the taint.
 */
import type { Admission } from '../store.js';

export const TAINT_NODE_NOT_READY = 'node.kubernetes.io/not-ready';
export const TAINT_NODE_UNREACHABLE = 'node.kubernetes.io/unreachable';

export interface DefaultTolerationSecondsOptions {
  notReadySeconds: number;
  unreachableSeconds: number;
}

type Toleration = Record<string, unknown>;

/** Whether one of `tolerations` tolerates the NoExecute taint `key`, as the plugin judges it. */
function tolerates(tolerations: Toleration[], key: string): boolean {
  return tolerations.some((t) => (t['key'] === key || !t['key']) && (t['effect'] === 'NoExecute' || !t['effect']));
}

export function defaultTolerationSeconds(opts: DefaultTolerationSecondsOptions): Admission {
  return {
    handles: (d, op) => (op === 'CREATE' || op === 'UPDATE') && d.group === '' && d.resource === 'pods',
    async mutate(a) {
      if (a.decl.group !== '' || a.decl.resource !== 'pods' || a.subresource !== '' || !a.object) return;
      if (a.operation !== 'CREATE' && a.operation !== 'UPDATE') return;
      const spec = a.object['spec'];
      if (spec === null || typeof spec !== 'object' || Array.isArray(spec)) return;
      const s = spec as Record<string, unknown>;
      const tolerations = (Array.isArray(s['tolerations']) ? s['tolerations'] : []) as Toleration[];
      const added: Toleration[] = [];
      for (const [key, seconds] of [
        [TAINT_NODE_NOT_READY, opts.notReadySeconds],
        [TAINT_NODE_UNREACHABLE, opts.unreachableSeconds],
      ] as const) {
        if (!tolerates(tolerations, key)) added.push({ key, operator: 'Exists', effect: 'NoExecute', tolerationSeconds: seconds });
      }
      if (added.length > 0) s['tolerations'] = [...tolerations, ...added];
    },
  };
}
