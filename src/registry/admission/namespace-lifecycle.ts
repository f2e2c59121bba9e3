/**
 * NamespaceLifecycle admission, as Kubernetes': objects cannot be created in a namespace that does not
 * exist or is being terminated, and the system namespaces cannot be deleted.
 */
import { apiErrors, isStatusError } from '../errors.js';
import type { Admission, AdmissionAttributes, ResourceStore } from '../store.js';

/** Namespaces that always exist and may not be deleted. */
export const IMMORTAL_NAMESPACES = ['default', 'kube-system', 'kube-public', 'kube-node-lease'];

export function namespaceLifecycle(namespaces: () => ResourceStore | undefined): Admission {
  return {
    async validate(a: AdmissionAttributes): Promise<void> {
      if (a.decl.group === '' && a.decl.resource === 'namespaces') {
        if (a.operation === 'DELETE' && IMMORTAL_NAMESPACES.includes(a.name)) {
          throw apiErrors.forbidden({ group: '', resource: 'namespaces' }, a.name, 'this namespace may not be deleted');
        }
        return;
      }
      if (!a.decl.namespaced || a.operation !== 'CREATE' || a.namespace === '') return;
      const store = namespaces();
      if (!store) return;
      let ns;
      try {
        ns = await store.get({ namespace: '' }, a.namespace);
      } catch (err) {
        if (isStatusError(err, 'NotFound')) throw apiErrors.notFound({ group: '', resource: 'namespaces' }, a.namespace);
        throw err;
      }
      if (ns.status?.phase === 'Terminating') {
        const e = apiErrors.forbidden(
          { group: a.decl.group, resource: a.decl.resource },
          a.name,
          `unable to create new content in namespace ${a.namespace} because it is being terminated`,
        );
        e.status.details = {
          ...e.status.details,
          causes: [
            {
              reason: 'NamespaceTerminating',
              message: `namespace ${a.namespace} is being terminated`,
              field: 'metadata.namespace',
            },
          ],
        };
        throw e;
      }
    },
  };
}

/** Runs several admission plugins in order: every mutation, then every validation. */
export function chainAdmission(plugins: readonly Admission[]): Admission {
  return {
    async mutate(a) {
      for (const p of plugins) await p.mutate?.(a);
    },
    async validate(a) {
      for (const p of plugins) await p.validate?.(a);
    },
  };
}
