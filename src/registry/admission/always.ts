/**
 * AlwaysAdmit and AlwaysDeny admission, as Kubernetes 1.23's (plugin/pkg/admission/admit, deny): the first
 * admits everything (it exists for compatibility); the second refuses every create, update, delete and connect (exec, attach, port-forward) with
 * 403 'admission control is denying all modifications' (it exists for testing). Unlike kube-apiserver, whose
 * own bootstrap writes are then refused and retried forever, the server's own writes (made without a user:
 * its bootstrap namespaces and in-process controllers, or as system:apiserver: the bootstrap RBAC policy) are
 * let through, so that the server starts.
 */
import { apiErrors } from '../errors.js';
import type { Admission } from '../store.js';

export function alwaysAdmit(): Admission {
  return { handlesConnect: true };
}

export function alwaysDeny(): Admission {
  return {
    async validate(a) {
      if (!a.user || a.user.name === 'system:apiserver') return;
      throw apiErrors.forbidden({ group: a.decl.group, resource: a.decl.resource }, a.name, 'admission control is denying all modifications');
    },
    handlesConnect: true,
  };
}
