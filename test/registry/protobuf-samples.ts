/**
 * Full sample objects of every served kind, made from the kinds' own OpenAPI schemas: every property set to a
 * value that is not Go's zero value (so Go's JSON would show it), lists of two items, maps of two keys. A field
 * the protobuf messages lack is then lost on a round trip, which the tests see.
 */
import { ALL_DEFINITIONS, BUILTIN_KINDS } from '../../src/registry/kinds/index.js';
import { apiVersionOf, type KindDecl } from '../../src/registry/kind.js';
import { REF_PREFIX, type Schema } from '../../src/registry/schema.js';

const META = 'io.k8s.apimachinery.pkg.apis.meta.v1.';

/** A sample value for `schema` at `path` (used to vary strings); `depth` bounds recursive schemas. */
function sample(schema: Schema, path: string, depth: number, n: number): unknown {
  const refName = schema.$ref?.slice(REF_PREFIX.length);
  if (refName) {
    switch (refName) {
      case `${META}Time`:
        return `2024-0${1 + (n % 9)}-02T03:04:05Z`;
      case `${META}MicroTime`:
        return `2024-0${1 + (n % 9)}-02T03:04:05.${String(123456 + n).padStart(6, '0')}Z`;
      case `${META}FieldsV1`:
        return { 'f:metadata': { 'f:labels': { [`f:${path.length}`]: {} } } };
      case 'io.k8s.apimachinery.pkg.api.resource.Quantity':
        return `${n + 1}Gi`;
      case 'io.k8s.apimachinery.pkg.util.intstr.IntOrString':
        return n % 2 ? `port-${n}` : 8000 + n;
      case 'io.k8s.apimachinery.pkg.runtime.RawExtension':
        return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `raw-${n}` } };
    }
    const def = ALL_DEFINITIONS[refName];
    if (!def) throw new Error(`no definition ${refName}`);
    return sample(def, path, depth, n);
  }
  if (schema['x-kubernetes-int-or-string']) return n % 2 ? `p${n}` : 80 + n;
  switch (schema.type) {
    case 'string':
      if (schema.format === 'byte') return Buffer.from(`bytes ${path} ${n}`).toString('base64');
      if (schema.format === 'date-time') return '2024-05-06T07:08:09Z';
      return `${path.split('.').pop()}-${n}`;
    case 'integer':
      return 3 + n;
    case 'number':
      return 1.5 + n;
    case 'boolean':
      return true;
    case 'array':
      if (depth <= 0) return undefined;
      return [0, 1].map((i) => sample(schema.items!, `${path}[]`, depth - 1, n + i)).filter((v) => v !== undefined);
    case 'object':
    case undefined: {
      if (schema.additionalProperties && typeof schema.additionalProperties === 'object') {
        if (depth <= 0) return undefined;
        const inner = schema.additionalProperties;
        return { [`b-${n}`]: sample(inner, `${path}{}`, depth - 1, n + 1), [`a-${n}`]: sample(inner, `${path}{}`, depth - 1, n) };
      }
      if (!schema.properties || depth <= 0) return schema.properties ? undefined : {};
      const out: Record<string, unknown> = {};
      let i = 0;
      for (const [k, s] of Object.entries(schema.properties)) {
        // TypeMeta of an object (not of a reference) is the envelope's, not the message's.
        if ((k === 'apiVersion' || k === 'kind') && /versioned schema of this representation|REST resource this object represents/.test(s.description ?? '')) continue;
        const v = sample(s, `${path}.${k}`, depth - 1, n + i++);
        if (v !== undefined) out[k] = v;
      }
      return out;
    }
    default:
      return undefined;
  }
}

/** A full object of `kind`: every field of its schema set. */
export function sampleObject(apiVersion: string, kind: string, definition: string): Record<string, unknown> {
  const obj = sample({ $ref: REF_PREFIX + definition }, kind, 14, 0) as Record<string, unknown>;
  return { apiVersion, kind, ...obj };
}

/** Every kind, list kind and subresource body the server serves, with its definition. */
export function servedKinds(): { apiVersion: string; kind: string; definition: string; decl: KindDecl }[] {
  const out: { apiVersion: string; kind: string; definition: string; decl: KindDecl }[] = [];
  for (const decl of BUILTIN_KINDS) {
    const av = apiVersionOf(decl);
    out.push({ apiVersion: av, kind: decl.kind, definition: decl.definition, decl });
    if (decl.listDefinition !== decl.definition) out.push({ apiVersion: av, kind: decl.listKind, definition: decl.listDefinition, decl });
    for (const a of Object.values(decl.actions ?? {})) {
      for (const b of a.bodyKinds) out.push({ apiVersion: apiVersionOf(b), kind: b.kind, definition: b.definition, decl });
    }
  }
  return out;
}
