/**
 * NamespaceExists and NamespaceAutoProvision admission, as Kubernetes 1.23's
 * (plugin/pkg/admission/namespace/exists, autoprovision):
 *   - NamespaceExists (validate): a create, update or delete of a namespaced object in a namespace that does
 *     not exist is refused with 404 NotFound naming the namespace.
 *   - NamespaceAutoProvision (mutate): a create of a namespaced object in a namespace that does not exist
 *     creates the namespace first (not for dry-run requests).
 */
import { apiErrors, isStatusError } from '../errors.js';
import type { Admission, AdmissionAttributes, ResourceStore } from '../store.js';

const NAMESPACES = { group: '', resource: 'namespaces' };

const applies = (a: AdmissionAttributes): boolean => a.decl.namespaced && a.namespace !== '' && !(a.decl.group === '' && a.decl.resource === 'namespaces');

async function exists(store: ResourceStore, name: string): Promise<boolean> {
  try {
    await store.get({ namespace: '' }, name);
    return true;
  } catch (err) {
    if (isStatusError(err, 'NotFound')) return false;
    throw err;
  }
}

export function namespaceExists(namespaces: () => ResourceStore | undefined): Admission {
  return {
    async validate(a) {
      if (!applies(a)) return;
      const store = namespaces();
      if (store && !(await exists(store, a.namespace))) throw apiErrors.notFound(NAMESPACES, a.namespace);
    },
  };
}

export function namespaceAutoProvision(namespaces: () => ResourceStore | undefined): Admission {
  return {
    async mutate(a) {
      if (a.operation !== 'CREATE' || !applies(a) || a.dryRun) return;
      const store = namespaces();
      if (!store || (await exists(store, a.namespace))) return;
      try {
        await store.create({ namespace: '', ...(a.user ? { user: a.user } : {}) }, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: a.namespace } });
      } catch (err) {
        if (!isStatusError(err, 'AlreadyExists')) throw err;
      }
    },
  };
}
