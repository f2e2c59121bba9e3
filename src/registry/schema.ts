/**
 * Schemas of kinds, in the shape of OpenAPI v2 definitions with Kubernetes' extensions. One schema drives
 * validation of types and unknown fields, OpenAPI v2/v3, strategic-merge keys and server-side apply.
 * Definition names are Kubernetes' own (e.g. 'io.k8s.api.core.v1.PersistentVolumeClaim'), and references
 * use '#/definitions/<name>', so /openapi/v2 is the definitions map as it is.
 */

export interface GroupVersionKind {
  group: string;
  version: string;
  kind: string;
}

export interface Schema {
  type?: 'object' | 'array' | 'string' | 'integer' | 'number' | 'boolean';
  /** int32, int64, double, date-time, byte, int-or-string. */
  format?: string;
  description?: string;
  properties?: Record<string, Schema>;
  /** A map: the schema of every value. */
  additionalProperties?: Schema;
  items?: Schema;
  required?: string[];
  enum?: string[];
  /** '#/definitions/<name>'. A schema with $ref has no other keys but description. */
  $ref?: string;
  default?: unknown;
  'x-kubernetes-list-type'?: 'atomic' | 'set' | 'map';
  'x-kubernetes-list-map-keys'?: string[];
  'x-kubernetes-map-type'?: 'atomic' | 'granular';
  /** Strategic merge patch: 'merge', 'retainKeys' or 'merge,retainKeys'. */
  'x-kubernetes-patch-strategy'?: string;
  'x-kubernetes-patch-merge-key'?: string;
  'x-kubernetes-int-or-string'?: boolean;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  'x-kubernetes-embedded-resource'?: boolean;
  'x-kubernetes-group-version-kind'?: GroupVersionKind[];
  /** Marks a field as 'unions' in Kubernetes' OpenAPI; informational. */
  'x-kubernetes-unions'?: unknown[];
}

export type Definitions = Record<string, Schema>;

export const REF_PREFIX = '#/definitions/';

export function ref(name: string, description?: string): Schema {
  return description === undefined ? { $ref: REF_PREFIX + name } : { $ref: REF_PREFIX + name, description };
}

/** The definition a schema points to (following $ref chains), or the schema itself. */
export function resolveSchema(defs: Definitions, schema: Schema): Schema {
  let s = schema;
  for (let i = 0; s.$ref !== undefined && i < 32; i++) {
    const target = defs[s.$ref.slice(REF_PREFIX.length)];
    if (!target) throw new Error(`unknown schema reference ${s.$ref}`);
    s = target;
  }
  return s;
}
