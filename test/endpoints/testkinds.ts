/** Kind declarations of the endpoint tests' own (independent of the built-in kinds). */
import type { KindDecl, Strategy } from '../../src/registry/kind.js';
import { META_DEFINITIONS } from '../../src/registry/definitions/meta.js';
import type { Definitions } from '../../src/registry/schema.js';

const strategy: Strategy = { validate: () => [], validateUpdate: () => [] };
const subresource = { prepareForUpdate: () => undefined, validateUpdate: () => [] };

const META = 'io.k8s.apimachinery.pkg.apis.meta.v1.';
const objectMeta = { $ref: `#/definitions/${META}ObjectMeta`, description: "Standard object's metadata." };
const listMeta = { $ref: `#/definitions/${META}ListMeta`, description: 'Standard list metadata.' };

function defs(prefix: string, kind: string, extra: Definitions = {}): Definitions {
  return {
    [`${prefix}.${kind}`]: {
      description: `${kind} is a test kind.`,
      type: 'object',
      properties: {
        apiVersion: { description: 'APIVersion of the object.', type: 'string' },
        kind: { description: 'Kind of the object.', type: 'string' },
        metadata: objectMeta,
        spec: { $ref: `#/definitions/${prefix}.${kind}Spec`, description: `Spec of the ${kind}.` },
      },
    },
    [`${prefix}.${kind}Spec`]: {
      description: `${kind}Spec is the spec.`,
      type: 'object',
      required: ['size'],
      properties: {
        size: { description: 'Size.', type: 'integer', format: 'int32', default: 1 },
        port: { $ref: '#/definitions/io.k8s.apimachinery.pkg.util.intstr.IntOrString', description: 'Port.' },
        labels: { description: 'Labels.', type: 'object', additionalProperties: { type: 'string' } },
        tags: { description: 'Tags.', type: 'array', items: { type: 'string' }, 'x-kubernetes-list-type': 'set' },
        mode: { description: 'Mode.', type: 'string', enum: ['A', 'B'] },
      },
    },
    [`${prefix}.${kind}List`]: {
      description: `${kind}List is a list of ${kind}.`,
      type: 'object',
      required: ['items'],
      properties: {
        apiVersion: { description: 'APIVersion of the list.', type: 'string' },
        items: { description: 'Items.', type: 'array', items: { $ref: `#/definitions/${prefix}.${kind}` } },
        kind: { description: 'Kind of the list.', type: 'string' },
        metadata: listMeta,
      },
    },
    ...extra,
  };
}

const INT_OR_STRING: Definitions = {
  'io.k8s.apimachinery.pkg.util.intstr.IntOrString': {
    description: 'IntOrString is a type that can hold an int32 or a string.',
    type: 'string',
    format: 'int-or-string',
  },
};

/** Core, cluster-scoped, with status and finalize, a short name, and an Age column. */
export const shelfKind: KindDecl = {
  group: '',
  version: 'v1',
  kind: 'Shelf',
  listKind: 'ShelfList',
  resource: 'shelves',
  singular: 'shelf',
  shortNames: ['sh'],
  namespaced: false,
  definition: 'io.test.core.v1.Shelf',
  listDefinition: 'io.test.core.v1.ShelfList',
  definitions: defs('io.test.core.v1', 'Shelf', INT_OR_STRING),
  strategy,
  subresources: { status: subresource, finalize: subresource },
  columns: [
    { name: 'Size', type: 'integer', description: 'The size', priority: 0, cell: (o) => (o.spec as { size?: number } | undefined)?.size },
    { name: 'Age', type: 'string', description: 'The age', priority: 0, cell: (o) => o.metadata?.creationTimestamp ?? null },
    { name: 'Mode', type: 'string', format: 'mode', description: 'The mode', priority: 1, cell: (o) => (o.spec as { mode?: string } | undefined)?.mode },
  ],
  responses: { delete: 'Status' },
  verbs: ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'],
};

/** Core, namespaced, with status, a category, no columns (Kubernetes' default table). */
export const bookKind: KindDecl = {
  group: '',
  version: 'v1',
  kind: 'Book',
  listKind: 'BookList',
  resource: 'books',
  singular: 'book',
  categories: ['all'],
  namespaced: true,
  definition: 'io.test.core.v1.Book',
  listDefinition: 'io.test.core.v1.BookList',
  definitions: defs('io.test.core.v1', 'Book'),
  strategy,
  subresources: { status: subresource },
};

/** A named group in two versions; v1beta1 read-only. */
export const widgetV1: KindDecl = {
  group: 'example.com',
  version: 'v1',
  kind: 'Widget',
  listKind: 'WidgetList',
  resource: 'widgets',
  singular: 'widget',
  namespaced: true,
  definition: 'com.example.v1.Widget',
  listDefinition: 'com.example.v1.WidgetList',
  definitions: defs('com.example.v1', 'Widget'),
  strategy,
};

export const widgetV1beta1: KindDecl = {
  ...widgetV1,
  version: 'v1beta1',
  definition: 'com.example.v1beta1.Widget',
  listDefinition: 'com.example.v1beta1.WidgetList',
  definitions: defs('com.example.v1beta1', 'Widget'),
  verbs: ['get', 'list'],
};

/** A group with a .k8s.io suffix (trimmed in operation IDs). */
export const gadgetKind: KindDecl = {
  group: 'storage.k8s.io',
  version: 'v1',
  kind: 'Gadget',
  listKind: 'GadgetList',
  resource: 'gadgets',
  singular: 'gadget',
  namespaced: false,
  definition: 'io.test.storage.v1.Gadget',
  listDefinition: 'io.test.storage.v1.GadgetList',
  definitions: defs('io.test.storage.v1', 'Gadget'),
  strategy,
};

export const TEST_KINDS: KindDecl[] = [shelfKind, bookKind, widgetV1, widgetV1beta1, gadgetKind];

/** The shared meta types plus every test kind's definitions. */
export const TEST_DEFINITIONS: Definitions = Object.assign({}, META_DEFINITIONS, ...TEST_KINDS.map((k) => k.definitions)) as Definitions;
