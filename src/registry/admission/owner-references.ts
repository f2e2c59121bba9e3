/**
 * OwnerReferencesPermissionEnforcement admission, as Kubernetes 1.23's (plugin/pkg/admission/gc): a create or
 * update that changes metadata.ownerReferences needs the 'delete' verb on the object itself; one that adds a
 * reference with blockOwnerDeletion=true also needs 'update' on the owner's finalizers subresource (the
 * owner's resource found from its apiVersion and kind). Updates of pods/status are exempt. Refusals are 403.
 */
import { isDeepStrictEqual } from 'node:util';
import { apiErrors } from '../errors.js';
import type { KindDecl } from '../kind.js';
import type { AccessAuthorizer } from '../kinds/authorization/attributes.js';
import { resourceAttributes } from '../kinds/authorization/attributes.js';
import type { Admission, AdmissionAttributes } from '../store.js';
import { listOf, type Json } from './pod-helpers.js';

const refsOf = (o: Json | undefined): Json[] => listOf(o?.['metadata']?.ownerReferences);
const refKey = (r: Json): string => JSON.stringify([r['apiVersion'], r['kind'], r['name'], r['uid']]);

/** References with blockOwnerDeletion=true that the old object did not block with. */
function newBlockingRefs(obj: Json | undefined, old: Json | undefined): Json[] {
  const blocking = (o: Json | undefined) => refsOf(o).filter((r) => r['blockOwnerDeletion'] === true);
  const before = new Set(blocking(old).map(refKey));
  return blocking(obj).filter((r) => !before.has(refKey(r)));
}

export function ownerReferencesPermissionEnforcement(deps: { authorizer: () => AccessAuthorizer | undefined; kinds: () => readonly KindDecl[] }): Admission {
  const refuse = (a: AdmissionAttributes, message: string) => apiErrors.forbidden({ group: a.decl.group, resource: a.decl.resource }, a.name, message);
  return {
    async validate(a) {
      if (a.operation !== 'CREATE' && a.operation !== 'UPDATE') return;
      if (a.decl.group === '' && a.decl.resource === 'pods' && a.subresource === 'status') return;
      const changing = a.operation === 'CREATE' ? refsOf(a.object).length > 0 : !isDeepStrictEqual(refsOf(a.object), refsOf(a.oldObject));
      if (!changing) return;
      const authz = deps.authorizer();
      if (!authz) return;
      const del = await authz.authorize(
        a.user,
        resourceAttributes({
          verb: 'delete',
          namespace: a.namespace,
          apiGroup: a.decl.group,
          apiVersion: a.decl.version,
          resource: a.decl.resource,
          subresource: a.subresource,
          name: a.name,
        }),
      );
      if (del.decision !== 'allow') throw refuse(a, `cannot set an ownerRef on a resource you can't delete: ${del.reason}, ${del.error ?? '<nil>'}`);
      for (const ref of newBlockingRefs(a.object, a.oldObject)) {
        const apiVersion = typeof ref['apiVersion'] === 'string' ? ref['apiVersion'] : '';
        const group = apiVersion.includes('/') ? apiVersion.slice(0, apiVersion.indexOf('/')) : '';
        const version = apiVersion.includes('/') ? apiVersion.slice(apiVersion.indexOf('/') + 1) : apiVersion;
        const matches = deps.kinds().filter((k) => k.group === group && k.version === version && k.kind === ref['kind']);
        if (matches.length === 0) {
          throw refuse(
            a,
            `cannot set blockOwnerDeletion in this case because cannot find RESTMapping for APIVersion ${apiVersion} Kind ${String(ref['kind'] ?? '')}: no matches for kind "${String(ref['kind'] ?? '')}" in version "${apiVersion}"`,
          );
        }
        for (const k of matches) {
          const r = await authz.authorize(
            a.user,
            resourceAttributes({
              verb: 'update',
              namespace: k.namespaced ? a.namespace : '',
              apiGroup: k.group,
              apiVersion: k.version,
              resource: k.resource,
              subresource: 'finalizers',
              name: typeof ref['name'] === 'string' ? ref['name'] : '',
            }),
          );
          if (r.decision !== 'allow') {
            throw refuse(a, `cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on: ${r.reason}, ${r.error ?? '<nil>'}`);
          }
        }
      }
    },
  };
}
