/**
 * metadata.selfLink, set in answers only when the RemoveSelfLink feature gate is off (it is on by default
 * from Kubernetes 1.20, and locked on from 1.24): an object's link is its path
 * (/api/v1/namespaces/<ns>/<resource>/<name>, /apis/<group>/<version>/...), a list's the request's path,
 * and each item of a list gets its own. The objects are copied, never changed in place.
 */
import type { KObject, KindDecl } from '../registry/kind.js';

/** The path of one object of the kind. */
export function objectLink(decl: KindDecl, namespace: string, name: string): string {
  const prefix = decl.group === '' ? `/api/${decl.version}` : `/apis/${decl.group}/${decl.version}`;
  const ns = decl.namespaced && namespace !== '' ? `/namespaces/${namespace}` : '';
  return `${prefix}${ns}/${decl.resource}/${name}`;
}

function linked(obj: KObject, selfLink: string): KObject {
  return { ...obj, metadata: { ...obj.metadata, selfLink } };
}

/** The value with selfLinks: a list (items array) gets `listPath` and its items their own; an object its own. */
export function withSelfLink(value: KObject, decl: KindDecl, listPath: string): KObject {
  if (Array.isArray(value.items)) {
    const items = (value.items as KObject[]).map((item) =>
      item.metadata?.name ? linked(item, objectLink(decl, String(item.metadata.namespace ?? ''), String(item.metadata.name))) : item,
    );
    return { ...linked(value, listPath), items };
  }
  if (!value.metadata?.name || value.kind === 'Status') return value;
  return linked(value, objectLink(decl, String(value.metadata.namespace ?? ''), String(value.metadata.name)));
}
