import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import protobuf from 'protobufjs';
import YAML from 'yaml';
import {
  OPENAPI_V2_PROTOBUF_ACCEPT,
  OPENAPI_V2_PROTOBUF_CONTENT_TYPE,
  buildOpenAPIV2,
  convertSchemaV3,
  danglingReferences,
  groupVersionNaming,
  openAPIDocuments,
  serveOpenAPI,
  toValidOperationID,
  v3GroupVersionKey,
} from '../../src/endpoints/openapi.js';
import { ALL_DEFINITIONS, BUILTIN_KINDS } from '../../src/registry/kinds/index.js';
import { TEST_DEFINITIONS, TEST_KINDS } from './testkinds.js';
import { kubectlBinaries, runKubectl, startFakeServer, type FakeServer } from './fakeserver.js';

type Json = Record<string, any>;

const V3_PREFIX = '#/components/schemas/';

function operations(doc: Json): Map<string, { path: string; method: string; op: Json }> {
  const out = new Map<string, { path: string; method: string; op: Json }>();
  for (const [path, item] of Object.entries(doc.paths as Json)) {
    for (const [method, op] of Object.entries(item as Json)) {
      if (method === 'parameters') continue;
      out.set((op as Json).operationId as string, { path, method, op: op as Json });
    }
  }
  return out;
}

const paramNames = (params: Json[] | undefined) => (params ?? []).map((p) => p.name as string);

describe('operation naming', () => {
  it('follows apiserver ToValidOperationID and the group-version infix', () => {
    assert.equal(toValidOperationID('rbac.authorization', true), 'RbacAuthorization');
    assert.equal(toValidOperationID('v1beta1', true), 'V1beta1');
    assert.equal(toValidOperationID('example.com', false), 'exampleCom');
    assert.equal(toValidOperationID('9lives', true), 'Lives');
    assert.deepEqual(groupVersionNaming('', 'v1'), { infix: 'CoreV1', tag: 'core_v1' });
    assert.deepEqual(groupVersionNaming('storage.k8s.io', 'v1'), { infix: 'StorageV1', tag: 'storage_v1' });
    assert.deepEqual(groupVersionNaming('admissionregistration.k8s.io', 'v1alpha1'), { infix: 'AdmissionregistrationV1alpha1', tag: 'admissionregistration_v1alpha1' });
    assert.deepEqual(groupVersionNaming('example.com', 'v1'), { infix: 'ExampleComV1', tag: 'exampleCom_v1' });
  });
});

describe('OpenAPI v2 of the built-in kinds', () => {
  const doc = buildOpenAPIV2(BUILTIN_KINDS, ALL_DEFINITIONS, { version: 'v1.23.17' });
  const ops = operations(doc);

  it('is a swagger 2.0 document titled Kubernetes, with BearerToken security, and no dangling reference', () => {
    assert.equal(doc.swagger, '2.0');
    assert.deepEqual(doc.info, { title: 'Kubernetes', version: 'v1.23.17' });
    assert.deepEqual(doc.security, [{ BearerToken: [] }]);
    assert.deepEqual(doc.securityDefinitions, { BearerToken: { description: 'Bearer Token authentication', in: 'header', name: 'authorization', type: 'apiKey' } });
    assert.deepEqual(danglingReferences(doc), []);
    assert.deepEqual(Object.keys(doc), ['definitions', 'info', 'paths', 'security', 'securityDefinitions', 'swagger']);
  });

  it('names every operation as Kubernetes does', () => {
    const expected: [string, string, string, string][] = [
      ['listCoreV1Namespace', '/api/v1/namespaces', 'get', 'list'],
      ['createCoreV1Namespace', '/api/v1/namespaces', 'post', 'post'],
      ['readCoreV1Namespace', '/api/v1/namespaces/{name}', 'get', 'get'],
      ['replaceCoreV1Namespace', '/api/v1/namespaces/{name}', 'put', 'put'],
      ['patchCoreV1Namespace', '/api/v1/namespaces/{name}', 'patch', 'patch'],
      ['deleteCoreV1Namespace', '/api/v1/namespaces/{name}', 'delete', 'delete'],
      ['readCoreV1NamespaceStatus', '/api/v1/namespaces/{name}/status', 'get', 'get'],
      ['replaceCoreV1NamespaceStatus', '/api/v1/namespaces/{name}/status', 'put', 'put'],
      ['patchCoreV1NamespaceStatus', '/api/v1/namespaces/{name}/status', 'patch', 'patch'],
      ['replaceCoreV1NamespaceFinalize', '/api/v1/namespaces/{name}/finalize', 'put', 'put'],
      ['watchCoreV1NamespaceList', '/api/v1/watch/namespaces', 'get', 'watchlist'],
      ['watchCoreV1Namespace', '/api/v1/watch/namespaces/{name}', 'get', 'watch'],
      ['listCoreV1NamespacedPersistentVolumeClaim', '/api/v1/namespaces/{namespace}/persistentvolumeclaims', 'get', 'list'],
      ['createCoreV1NamespacedPersistentVolumeClaim', '/api/v1/namespaces/{namespace}/persistentvolumeclaims', 'post', 'post'],
      ['deleteCoreV1CollectionNamespacedPersistentVolumeClaim', '/api/v1/namespaces/{namespace}/persistentvolumeclaims', 'delete', 'deletecollection'],
      ['readCoreV1NamespacedPersistentVolumeClaim', '/api/v1/namespaces/{namespace}/persistentvolumeclaims/{name}', 'get', 'get'],
      ['patchCoreV1NamespacedPersistentVolumeClaimStatus', '/api/v1/namespaces/{namespace}/persistentvolumeclaims/{name}/status', 'patch', 'patch'],
      ['listCoreV1PersistentVolumeClaimForAllNamespaces', '/api/v1/persistentvolumeclaims', 'get', 'list'],
      ['watchCoreV1NamespacedPersistentVolumeClaimList', '/api/v1/watch/namespaces/{namespace}/persistentvolumeclaims', 'get', 'watchlist'],
      ['watchCoreV1NamespacedPersistentVolumeClaim', '/api/v1/watch/namespaces/{namespace}/persistentvolumeclaims/{name}', 'get', 'watch'],
      ['watchCoreV1PersistentVolumeClaimListForAllNamespaces', '/api/v1/watch/persistentvolumeclaims', 'get', 'watchlist'],
    ];
    for (const [id, path, method, action] of expected) {
      const found = ops.get(id);
      assert.ok(found, `missing ${id}`);
      assert.equal(found.path, path, id);
      assert.equal(found.method, method, id);
      assert.equal(found.op['x-kubernetes-action'], action, id);
      const kind = path.includes('persistentvolumeclaims') ? 'PersistentVolumeClaim' : 'Namespace';
      assert.deepEqual(found.op['x-kubernetes-group-version-kind'], { group: '', kind, version: 'v1' }, id);
      assert.deepEqual(found.op.tags, ['core_v1']);
      assert.deepEqual(found.op.schemes, ['https']);
    }
    assert.equal(ops.get('getCoreAPIVersions')?.path, '/api/');
    assert.equal(ops.get('getCoreV1APIResources')?.path, '/api/v1/');
  });

  it('describes patch as Kubernetes does: the four patch types, fieldValidation, dryRun, fieldManager, force', () => {
    const { op } = ops.get('patchCoreV1NamespacedPersistentVolumeClaim')!;
    assert.deepEqual(op.consumes, ['application/json-patch+json', 'application/merge-patch+json', 'application/strategic-merge-patch+json', 'application/apply-patch+yaml']);
    assert.deepEqual(paramNames(op.parameters), ['body', 'dryRun', 'fieldManager', 'fieldValidation', 'force']);
    assert.deepEqual(op.parameters[0], { in: 'body', name: 'body', required: true, schema: { $ref: '#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.Patch' } });
    assert.deepEqual(op.parameters[3], {
      description:
        'fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore: This will ignore any unknown fields that are silently dropped from the object, and will ignore all but the last duplicate field that the decoder encounters. This is the default behavior prior to v1.23. - Warn: This will send a warning via the standard warning response header for each unknown field that is dropped from the object, and for each duplicate field that is encountered. The request will still succeed if there are no other errors, and will only persist the last of any duplicate fields. This is the default in v1.23+ - Strict: This will fail the request with a BadRequest error if any unknown fields would be dropped from the object, or if any duplicate fields are present. The error returned from the server will contain all unknown and duplicate fields encountered.',
      in: 'query',
      name: 'fieldValidation',
      type: 'string',
      uniqueItems: true,
    });
    assert.deepEqual(op.produces, ['application/json', 'application/yaml', 'application/vnd.kubernetes.protobuf']);
    assert.deepEqual(Object.keys(op.responses), ['200', '201', '401']);
    assert.equal(op.description, 'partially update the specified PersistentVolumeClaim');
  });

  it('puts the parameters all operations of a path share on the path, sorted by name', () => {
    const paths = doc.paths as Json;
    assert.deepEqual(paramNames(paths['/api/v1/namespaces/{name}/finalize'].parameters), ['dryRun', 'fieldManager', 'fieldValidation', 'name', 'pretty']);
    assert.deepEqual(paramNames(paths['/api/v1/namespaces/{name}/status'].parameters), ['name', 'pretty']);
    assert.deepEqual(paramNames(paths['/api/v1/namespaces/{namespace}/persistentvolumeclaims'].parameters), ['namespace', 'pretty']);
    assert.deepEqual(paramNames(paths['/api/v1/namespaces/{namespace}/persistentvolumeclaims'].get.parameters), [
      'allowWatchBookmarks',
      'continue',
      'fieldSelector',
      'labelSelector',
      'limit',
      'resourceVersion',
      'resourceVersionMatch',
      'timeoutSeconds',
      'watch',
    ]);
    assert.deepEqual(paramNames(paths['/api/v1/watch/namespaces/{name}'].parameters), [
      'allowWatchBookmarks',
      'continue',
      'fieldSelector',
      'labelSelector',
      'limit',
      'name',
      'pretty',
      'resourceVersion',
      'resourceVersionMatch',
      'timeoutSeconds',
      'watch',
    ]);
    assert.equal(paths['/api/v1/watch/namespaces/{name}'].get.parameters, undefined);
    assert.deepEqual(paths['/api/v1/namespaces/{name}'].parameters[0], {
      description: 'name of the Namespace',
      in: 'path',
      name: 'name',
      required: true,
      type: 'string',
      uniqueItems: true,
    });
  });

  it('answers deletes with the object or a Status, as the kind declares', () => {
    const nsDelete = ops.get('deleteCoreV1Namespace')!.op;
    assert.deepEqual(nsDelete.responses['200'].schema, { $ref: '#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.Status' });
    assert.deepEqual(nsDelete.responses['202'], { description: 'Accepted', schema: { $ref: '#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.Status' } });
    assert.deepEqual(paramNames(nsDelete.parameters), ['body', 'dryRun', 'gracePeriodSeconds', 'orphanDependents', 'propagationPolicy']);
    const pvcDelete = ops.get('deleteCoreV1NamespacedPersistentVolumeClaim')!.op;
    assert.deepEqual(pvcDelete.responses['200'].schema, { $ref: '#/definitions/io.k8s.api.core.v1.PersistentVolumeClaim' });
    const collection = ops.get('deleteCoreV1CollectionNamespacedPersistentVolumeClaim')!.op;
    assert.deepEqual(collection.responses['200'].schema, { $ref: '#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.Status' });
    assert.equal(collection.description, 'delete collection of PersistentVolumeClaim');
  });

  it('tags the kinds’ definitions with their group-version-kind', () => {
    const defs = doc.definitions as Json;
    assert.deepEqual(defs['io.k8s.api.core.v1.Namespace']['x-kubernetes-group-version-kind'], [{ group: '', kind: 'Namespace', version: 'v1' }]);
    assert.deepEqual(defs['io.k8s.api.core.v1.PersistentVolumeClaimList']['x-kubernetes-group-version-kind'], [{ group: '', kind: 'PersistentVolumeClaimList', version: 'v1' }]);
  });
});

describe('OpenAPI v2 of groups and verb subsets', () => {
  const doc = buildOpenAPIV2(TEST_KINDS, TEST_DEFINITIONS, { version: 'test' });
  const ops = operations(doc);
  it('uses the group infix and tag, and only the verbs a kind serves', () => {
    assert.equal(ops.get('listExampleComV1NamespacedWidget')?.path, '/apis/example.com/v1/namespaces/{namespace}/widgets');
    assert.deepEqual(ops.get('listExampleComV1NamespacedWidget')?.op.tags, ['exampleCom_v1']);
    assert.equal(ops.get('readExampleComV1beta1NamespacedWidget')?.path, '/apis/example.com/v1beta1/namespaces/{namespace}/widgets/{name}');
    assert.equal(ops.get('listExampleComV1beta1NamespacedWidget')?.op.description, 'list objects of kind Widget');
    assert.equal(ops.get('createExampleComV1beta1NamespacedWidget'), undefined);
    assert.equal(ops.get('watchExampleComV1beta1NamespacedWidget'), undefined);
    assert.equal(ops.get('readStorageV1Gadget')?.path, '/apis/storage.k8s.io/v1/gadgets/{name}');
    assert.equal(ops.get('getStorageAPIGroup')?.path, '/apis/storage.k8s.io/');
    assert.equal(ops.get('getStorageV1APIResources')?.path, '/apis/storage.k8s.io/v1/');
    assert.equal(ops.get('getAPIVersions')?.path, '/apis/');
    // Shelf declares no deletecollection.
    assert.equal(ops.get('deleteCoreV1CollectionShelf'), undefined);
    assert.equal(ops.get('createCoreV1Shelf')?.op.description, 'create a Shelf');
    assert.equal(ops.get('deleteCoreV1Shelf')?.op.description, 'delete a Shelf');
    assert.deepEqual(danglingReferences(doc), []);
  });
});

describe('OpenAPI v3', () => {
  const docs = openAPIDocuments(BUILTIN_KINDS, ALL_DEFINITIONS, { version: 'v1.23.17' });

  it('indexes one document per group version, with the hash in serverRelativeURL', () => {
    const index = JSON.parse(docs.v3Index) as { paths: Record<string, { serverRelativeURL: string }> };
    assert.deepEqual(Object.keys(index.paths), [
      'api',
      'api/v1',
      'apis',
      'apis/admissionregistration.k8s.io',
      'apis/admissionregistration.k8s.io/v1',
      'apis/apiregistration.k8s.io',
      'apis/apiregistration.k8s.io/v1',
      'apis/authentication.k8s.io',
      'apis/authentication.k8s.io/v1',
      'apis/authorization.k8s.io',
      'apis/authorization.k8s.io/v1',
      'apis/certificates.k8s.io',
      'apis/certificates.k8s.io/v1',
      'apis/coordination.k8s.io',
      'apis/coordination.k8s.io/v1',
      'apis/events.k8s.io',
      'apis/events.k8s.io/v1',
      'apis/flowcontrol.apiserver.k8s.io',
      'apis/flowcontrol.apiserver.k8s.io/v1beta1',
      'apis/flowcontrol.apiserver.k8s.io/v1beta2',
      'apis/networking.k8s.io',
      'apis/networking.k8s.io/v1',
      'apis/node.k8s.io',
      'apis/node.k8s.io/v1',
      'apis/policy',
      'apis/policy/v1beta1',
      'apis/rbac.authorization.k8s.io',
      'apis/rbac.authorization.k8s.io/v1',
      'apis/scheduling.k8s.io',
      'apis/scheduling.k8s.io/v1',
      'apis/storage.k8s.io',
      'apis/storage.k8s.io/v1',
    ]);
    assert.match(index.paths['api/v1']!.serverRelativeURL, /^\/openapi\/v3\/api\/v1\?hash=[0-9A-F]{128}$/);
    assert.equal(v3GroupVersionKey('/apis/example.com/v1/namespaces/{namespace}/widgets'), 'apis/example.com/v1');
    assert.equal(v3GroupVersionKey('/apis/example.com/'), 'apis/example.com');
  });

  it('converts operations: query parameters with schemas, request bodies per consumed type, responses per produced type', () => {
    const doc = docs.v3Document('api/v1')!;
    assert.equal(doc.openapi, '3.0.0');
    assert.deepEqual(danglingReferences(doc, V3_PREFIX), []);
    const patch = doc.paths['/api/v1/namespaces/{name}/status'].patch as Json;
    assert.equal(patch.operationId, 'patchCoreV1NamespaceStatus');
    assert.deepEqual(paramNames(patch.parameters), ['dryRun', 'fieldManager', 'fieldValidation', 'force']);
    assert.deepEqual(patch.parameters[2].schema, { type: 'string', uniqueItems: true });
    assert.deepEqual(Object.keys(patch.requestBody.content), ['application/apply-patch+yaml', 'application/json-patch+json', 'application/merge-patch+json', 'application/strategic-merge-patch+json']);
    assert.equal(patch.requestBody.required, true);
    assert.deepEqual(patch.responses['200'].content['application/json'].schema, { $ref: '#/components/schemas/io.k8s.api.core.v1.Namespace' });
    assert.deepEqual(patch.responses['401'], { description: 'Unauthorized' });
    assert.deepEqual(patch['x-kubernetes-group-version-kind'], { group: '', kind: 'Namespace', version: 'v1' });
    assert.equal(patch.consumes, undefined);
    const put = doc.paths['/api/v1/namespaces/{name}/finalize'].put as Json;
    assert.deepEqual(Object.keys(put.requestBody.content), ['*/*']);
    assert.deepEqual(paramNames(doc.paths['/api/v1/namespaces/{name}/finalize'].parameters), ['dryRun', 'fieldManager', 'fieldValidation', 'name', 'pretty']);
    assert.equal(doc.paths['/api/v1/namespaces/{name}/finalize'].parameters[3].required, true);
    const del = doc.paths['/api/v1/namespaces/{name}'].delete as Json;
    assert.deepEqual(del.requestBody, { content: { '*/*': { schema: { $ref: '#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions' } } } });
    assert.ok(doc.components.schemas['io.k8s.api.core.v1.PersistentVolumeClaim']);
    assert.ok(doc.components.schemas['io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta']);
  });

  it('wraps refs that have siblings in allOf, as Kubernetes publishes v3 schemas', () => {
    const doc = docs.v3Document('api/v1')!;
    const ns = doc.components.schemas['io.k8s.api.core.v1.Namespace'] as Json;
    assert.deepEqual(ns.properties.metadata.allOf, [{ $ref: '#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta' }]);
    assert.equal(ns.properties.metadata.$ref, undefined);
    assert.equal(typeof ns.properties.metadata.description, 'string');
    assert.deepEqual(convertSchemaV3({ items: { $ref: '#/definitions/x.Y' }, type: 'array' }), { items: { $ref: '#/components/schemas/x.Y' }, type: 'array' });
    assert.deepEqual(convertSchemaV3({ $ref: '#/definitions/x.Y', description: 'd' }), { allOf: [{ $ref: '#/components/schemas/x.Y' }], description: 'd' });
    assert.deepEqual(convertSchemaV3({ type: 'string', format: 'int-or-string', description: 'i' }), { format: 'int-or-string', description: 'i', oneOf: [{ type: 'integer' }, { type: 'string' }] });
    assert.deepEqual(convertSchemaV3({ type: 'string', description: 'q' }, 'io.k8s.apimachinery.pkg.api.resource.Quantity'), { description: 'q', oneOf: [{ type: 'string' }, { type: 'number' }] });
  });

  it('has the discovery documents of /api and /apis', () => {
    assert.deepEqual(Object.keys(docs.v3Document('api')!.paths), ['/api/']);
    assert.deepEqual(Object.keys(docs.v3Document('apis')!.paths), ['/apis/']);
    assert.equal(docs.v3Document('api')!.paths['/api/'].get.operationId, 'getCoreAPIVersions');
  });

  it('has one document per named group and version', () => {
    const testDocs = openAPIDocuments(TEST_KINDS, TEST_DEFINITIONS);
    assert.deepEqual([...testDocs.v3.keys()], ['api', 'api/v1', 'apis', 'apis/example.com', 'apis/example.com/v1', 'apis/example.com/v1beta1', 'apis/storage.k8s.io', 'apis/storage.k8s.io/v1']);
    const widgets = testDocs.v3Document('apis/example.com/v1')!;
    assert.ok(Object.keys(widgets.paths).every((p) => p.startsWith('/apis/example.com/v1/')));
    const spec = widgets.components.schemas['com.example.v1.WidgetSpec'] as Json;
    assert.deepEqual(spec.properties.port, { allOf: [{ $ref: '#/components/schemas/io.k8s.apimachinery.pkg.util.intstr.IntOrString' }], description: 'Port.' });
    assert.deepEqual(widgets.components.schemas['io.k8s.apimachinery.pkg.util.intstr.IntOrString'].oneOf, [{ type: 'integer' }, { type: 'string' }]);
    assert.equal(widgets.components.schemas['com.example.v1beta1.Widget'], undefined);
    for (const key of testDocs.v3.keys()) assert.deepEqual(danglingReferences(testDocs.v3Document(key)!, V3_PREFIX), [], key);
  });
});

describe('serveOpenAPI', () => {
  const kinds = BUILTIN_KINDS;
  const defs = ALL_DEFINITIONS;

  it('/openapi/v2: JSON or protobuf per Accept, one ETag for both, 304 on If-None-Match, 406 otherwise', () => {
    const json = serveOpenAPI(kinds, defs, { path: '/openapi/v2', accept: 'application/json' })!;
    assert.equal(json.status, 200);
    assert.equal(json.contentType, 'application/json');
    assert.equal(json.headers.Vary, 'Accept');
    assert.match(json.etag!, /^"[0-9A-F]{128}"$/);
    assert.equal((JSON.parse(json.body as string) as Json).swagger, '2.0');

    const pb = serveOpenAPI(kinds, defs, { path: '/openapi/v2', accept: OPENAPI_V2_PROTOBUF_ACCEPT })!;
    assert.equal(pb.status, 200);
    assert.equal(pb.contentType, OPENAPI_V2_PROTOBUF_CONTENT_TYPE);
    assert.equal(pb.headers['Content-Type'], 'application/com.github.proto-openapi.spec.v2.v1.0+protobuf');
    assert.ok(Buffer.isBuffer(pb.body));
    assert.equal(pb.etag, json.etag);
    assert.equal(serveOpenAPI(kinds, defs, { path: '/openapi/v2', accept: 'application/com.github.proto-openapi.spec.v2.v1.0+protobuf' })!.contentType, OPENAPI_V2_PROTOBUF_CONTENT_TYPE);
    assert.equal(serveOpenAPI(kinds, defs, { path: '/openapi/v2' })!.contentType, 'application/json');

    const cached = serveOpenAPI(kinds, defs, { path: '/openapi/v2', accept: OPENAPI_V2_PROTOBUF_ACCEPT, ifNoneMatch: pb.etag })!;
    assert.equal(cached.status, 304);
    assert.equal(cached.body, '');
    assert.equal(serveOpenAPI(kinds, defs, { path: '/openapi/v2', accept: 'application/json', ifNoneMatch: `"x", W/${json.etag}` })!.status, 304);
    assert.equal(serveOpenAPI(kinds, defs, { path: '/openapi/v2', accept: 'text/html' })!.status, 406);
    assert.equal(serveOpenAPI(kinds, defs, { path: '/api/v1' }), undefined);
  });

  it('/openapi/v3 and its documents: hash checks, redirects, immutable caching, 404', () => {
    const index = serveOpenAPI(kinds, defs, { path: '/openapi/v3', accept: 'application/json' })!;
    assert.equal(index.status, 200);
    assert.equal(index.contentType, 'application/json');
    const url = (JSON.parse(index.body as string) as { paths: Record<string, { serverRelativeURL: string }> }).paths['api/v1']!.serverRelativeURL;
    const [path, query] = url.split('?') as [string, string];
    const doc = serveOpenAPI(kinds, defs, { path, query, accept: 'application/json' })!;
    assert.equal(doc.status, 200);
    assert.equal(doc.headers['Cache-Control'], 'public, immutable');
    assert.ok(doc.headers.Expires);
    assert.equal(doc.etag, `"${new URLSearchParams(query).get('hash')}"`);
    assert.equal(serveOpenAPI(kinds, defs, { path, accept: 'application/json', ifNoneMatch: doc.etag })!.status, 304);
    assert.equal(serveOpenAPI(kinds, defs, { path, query: '', accept: 'application/json' })!.headers['Cache-Control'], undefined);

    const stale = serveOpenAPI(kinds, defs, { path, query: 'hash=ABC', accept: 'application/json' })!;
    assert.equal(stale.status, 301);
    assert.equal(stale.headers.Location, url);

    assert.equal(serveOpenAPI(kinds, defs, { path: '/openapi/v3/apis/nope/v1', accept: 'application/json' })!.status, 404);
    assert.equal(serveOpenAPI(kinds, defs, { path, accept: 'application/com.github.proto-openapi.spec.v3.v1.0+protobuf' })!.status, 406);
  });

  it('caches the documents per set of kinds and definitions', () => {
    assert.equal(openAPIDocuments(kinds, defs), openAPIDocuments(kinds, defs));
    assert.notEqual(openAPIDocuments(kinds, defs), openAPIDocuments(TEST_KINDS, TEST_DEFINITIONS));
  });
});

// ---------------------------------------------------------------------------------------------------------
// The protobuf form, decoded with protobufjs against gnostic's message definitions
// ---------------------------------------------------------------------------------------------------------

/** The messages of gnostic's openapiv2/OpenAPIv2.proto that the documents use (same names and field numbers). */
const OPENAPI_V2_PROTO = `
syntax = "proto3";
package openapi.v2;
message AdditionalPropertiesItem { oneof oneof { Schema schema = 1; bool boolean = 2; } }
message Any { google.protobuf.Any value = 1; string yaml = 2; }
message ApiKeySecurity { string type = 1; string name = 2; string in = 3; string description = 4; repeated NamedAny vendor_extension = 5; }
message BasicAuthenticationSecurity { string type = 1; string description = 2; repeated NamedAny vendor_extension = 3; }
message BodyParameter { string description = 1; string name = 2; string in = 3; bool required = 4; Schema schema = 5; repeated NamedAny vendor_extension = 6; }
message Definitions { repeated NamedSchema additional_properties = 1; }
message Document {
  string swagger = 1; Info info = 2; string host = 3; string base_path = 4; repeated string schemes = 5; repeated string consumes = 6;
  repeated string produces = 7; Paths paths = 8; Definitions definitions = 9; ParameterDefinitions parameters = 10;
  repeated SecurityRequirement security = 12; SecurityDefinitions security_definitions = 13; repeated NamedAny vendor_extension = 16;
}
message Info { string title = 1; string version = 2; string description = 3; string terms_of_service = 4; repeated NamedAny vendor_extension = 7; }
message ItemsItem { repeated Schema schema = 1; }
message JsonReference { string _ref = 1; string description = 2; }
message NamedAny { string name = 1; Any value = 2; }
message NamedParameter { string name = 1; Parameter value = 2; }
message NamedPathItem { string name = 1; PathItem value = 2; }
message NamedResponseValue { string name = 1; ResponseValue value = 2; }
message NamedSchema { string name = 1; Schema value = 2; }
message NamedSecurityDefinitionsItem { string name = 1; SecurityDefinitionsItem value = 2; }
message NamedStringArray { string name = 1; StringArray value = 2; }
message NonBodyParameter { oneof oneof { QueryParameterSubSchema query_parameter_sub_schema = 3; PathParameterSubSchema path_parameter_sub_schema = 4; } }
message Operation {
  repeated string tags = 1; string summary = 2; string description = 3; string operation_id = 5; repeated string produces = 6;
  repeated string consumes = 7; repeated ParametersItem parameters = 8; Responses responses = 9; repeated string schemes = 10;
  bool deprecated = 11; repeated NamedAny vendor_extension = 13;
}
message Parameter { oneof oneof { BodyParameter body_parameter = 1; NonBodyParameter non_body_parameter = 2; } }
message ParameterDefinitions { repeated NamedParameter additional_properties = 1; }
message ParametersItem { oneof oneof { Parameter parameter = 1; JsonReference json_reference = 2; } }
message PathItem {
  string _ref = 1; Operation get = 2; Operation put = 3; Operation post = 4; Operation delete = 5; Operation options = 6; Operation head = 7;
  Operation patch = 8; repeated ParametersItem parameters = 9; repeated NamedAny vendor_extension = 10;
}
message PathParameterSubSchema {
  bool required = 1; string in = 2; string description = 3; string name = 4; string type = 5; string format = 6; Any default = 9;
  bool unique_items = 19; repeated Any enum = 20; repeated NamedAny vendor_extension = 22;
}
message Paths { repeated NamedAny vendor_extension = 1; repeated NamedPathItem path = 2; }
message QueryParameterSubSchema {
  bool required = 1; string in = 2; string description = 3; string name = 4; bool allow_empty_value = 5; string type = 6; string format = 7;
  Any default = 10; bool unique_items = 20; repeated Any enum = 21; repeated NamedAny vendor_extension = 23;
}
message Response { string description = 1; SchemaItem schema = 2; repeated NamedAny vendor_extension = 5; }
message ResponseValue { oneof oneof { Response response = 1; JsonReference json_reference = 2; } }
message Responses { repeated NamedResponseValue response_code = 1; repeated NamedAny vendor_extension = 2; }
message Schema {
  string _ref = 1; string format = 2; string title = 3; string description = 4; Any default = 5; double multiple_of = 6; double maximum = 7;
  bool exclusive_maximum = 8; double minimum = 9; bool exclusive_minimum = 10; int64 max_length = 11; int64 min_length = 12; string pattern = 13;
  int64 max_items = 14; int64 min_items = 15; bool unique_items = 16; int64 max_properties = 17; int64 min_properties = 18;
  repeated string required = 19; repeated Any enum = 20; AdditionalPropertiesItem additional_properties = 21; TypeItem type = 22;
  ItemsItem items = 23; repeated Schema all_of = 24; Properties properties = 25; string discriminator = 26; bool read_only = 27;
  Any example = 30; repeated NamedAny vendor_extension = 31;
}
message SchemaItem { oneof oneof { Schema schema = 1; } }
message SecurityDefinitions { repeated NamedSecurityDefinitionsItem additional_properties = 1; }
message SecurityDefinitionsItem { oneof oneof { BasicAuthenticationSecurity basic_authentication_security = 1; ApiKeySecurity api_key_security = 2; } }
message SecurityRequirement { repeated NamedStringArray additional_properties = 1; }
message StringArray { repeated string value = 1; }
message TypeItem { repeated string value = 1; }
message Properties { repeated NamedSchema additional_properties = 1; }
`;

const GOOGLE_ANY_PROTO = 'syntax = "proto3"; package google.protobuf; message Any { string type_url = 1; bytes value = 2; }';

/** Reads a decoded openapi_v2.Document back into Swagger JSON (independently of the encoder). */
function swaggerFromProto(d: Json): Json {
  const yaml = (a: Json | undefined) => (a?.yaml === undefined ? undefined : (YAML.parse(a.yaml as string) as unknown));
  const ext = (out: Json, list: Json[] | undefined) => {
    for (const n of list ?? []) out[n.name as string] = yaml(n.value as Json);
  };
  const copy = (out: Json, src: Json, fields: [string, string][]) => {
    for (const [from, to] of fields) if (src[from] !== undefined) out[to] = src[from];
  };
  const schema = (s: Json): Json => {
    const out: Json = {};
    copy(out, s, [
      ['_ref', '$ref'],
      ['format', 'format'],
      ['title', 'title'],
      ['description', 'description'],
      ['multiple_of', 'multipleOf'],
      ['maximum', 'maximum'],
      ['exclusive_maximum', 'exclusiveMaximum'],
      ['minimum', 'minimum'],
      ['exclusive_minimum', 'exclusiveMinimum'],
      ['max_length', 'maxLength'],
      ['min_length', 'minLength'],
      ['pattern', 'pattern'],
      ['max_items', 'maxItems'],
      ['min_items', 'minItems'],
      ['unique_items', 'uniqueItems'],
      ['required', 'required'],
      ['discriminator', 'discriminator'],
      ['read_only', 'readOnly'],
    ]);
    if (s.default) out.default = yaml(s.default as Json);
    if (s.enum) out.enum = (s.enum as Json[]).map(yaml);
    if (s.additional_properties) {
      const ap = s.additional_properties as Json;
      out.additionalProperties = ap.schema ? schema(ap.schema as Json) : ap.boolean;
    }
    if (s.type) {
      const v = ((s.type as Json).value ?? []) as string[];
      out.type = v.length === 1 ? v[0] : v;
    }
    if (s.items) {
      const items = ((s.items as Json).schema ?? []) as Json[];
      out.items = items.length === 1 ? schema(items[0]!) : items.map(schema);
    }
    if (s.all_of) out.allOf = (s.all_of as Json[]).map(schema);
    if (s.properties) out.properties = Object.fromEntries(((s.properties as Json).additional_properties as Json[] ?? []).map((n) => [n.name, schema(n.value as Json)]));
    if (s.example) out.example = yaml(s.example as Json);
    ext(out, s.vendor_extension as Json[]);
    return out;
  };
  const parameter = (p: Json): Json => {
    if (p.json_reference) return { $ref: (p.json_reference as Json)._ref };
    const param = p.parameter as Json;
    if (param.body_parameter) {
      const b = param.body_parameter as Json;
      const out: Json = {};
      copy(out, b, [
        ['description', 'description'],
        ['name', 'name'],
        ['in', 'in'],
        ['required', 'required'],
      ]);
      if (b.schema) out.schema = schema(b.schema as Json);
      ext(out, b.vendor_extension as Json[]);
      return out;
    }
    const nb = param.non_body_parameter as Json;
    const sub = (nb.query_parameter_sub_schema ?? nb.path_parameter_sub_schema) as Json;
    const out: Json = {};
    copy(out, sub, [
      ['required', 'required'],
      ['in', 'in'],
      ['description', 'description'],
      ['name', 'name'],
      ['allow_empty_value', 'allowEmptyValue'],
      ['type', 'type'],
      ['format', 'format'],
      ['unique_items', 'uniqueItems'],
    ]);
    ext(out, sub.vendor_extension as Json[]);
    return out;
  };
  const operation = (o: Json): Json => {
    const out: Json = {};
    copy(out, o, [
      ['tags', 'tags'],
      ['summary', 'summary'],
      ['description', 'description'],
      ['operation_id', 'operationId'],
      ['produces', 'produces'],
      ['consumes', 'consumes'],
      ['schemes', 'schemes'],
      ['deprecated', 'deprecated'],
    ]);
    if (o.parameters) out.parameters = (o.parameters as Json[]).map(parameter);
    if (o.responses) {
      out.responses = {};
      for (const rc of ((o.responses as Json).response_code ?? []) as Json[]) {
        const r = (rc.value as Json).response as Json;
        const resp: Json = { description: r.description ?? '' };
        if (r.schema) resp.schema = schema((r.schema as Json).schema as Json);
        out.responses[rc.name as string] = resp;
      }
    }
    ext(out, o.vendor_extension as Json[]);
    return out;
  };
  const paths: Json = {};
  for (const np of ((d.paths as Json).path ?? []) as Json[]) {
    const item = np.value as Json;
    const out: Json = {};
    for (const m of ['get', 'put', 'post', 'delete', 'options', 'head', 'patch']) if (item[m]) out[m] = operation(item[m] as Json);
    if (item.parameters) out.parameters = (item.parameters as Json[]).map(parameter);
    paths[np.name as string] = out;
  }
  const security = ((d.security ?? []) as Json[]).map((r) =>
    Object.fromEntries(((r.additional_properties ?? []) as Json[]).map((n) => [n.name, ((n.value as Json).value ?? []) as string[]])),
  );
  const securityDefinitions = Object.fromEntries(
    ((d.security_definitions as Json).additional_properties as Json[]).map((n) => {
      const k = (n.value as Json).api_key_security as Json;
      return [n.name, { description: k.description, in: k.in, name: k.name, type: k.type }];
    }),
  );
  return {
    definitions: Object.fromEntries(((d.definitions as Json).additional_properties as Json[]).map((n) => [n.name, schema(n.value as Json)])),
    info: { title: (d.info as Json).title, version: (d.info as Json).version },
    paths,
    security,
    securityDefinitions,
    swagger: d.swagger,
  };
}

describe('OpenAPI v2 protobuf', () => {
  const root = new protobuf.Root();
  protobuf.parse(GOOGLE_ANY_PROTO, root, { keepCase: true });
  protobuf.parse(OPENAPI_V2_PROTO, root, { keepCase: true });
  root.resolveAll();
  const Document = root.lookupType('openapi.v2.Document');
  const decode = (buf: Buffer) => Document.toObject(Document.decode(buf), { longs: Number, defaults: false, arrays: false, oneofs: false });

  for (const [name, kinds, defs] of [
    ['built-in kinds', BUILTIN_KINDS, ALL_DEFINITIONS],
    ['test kinds', TEST_KINDS, TEST_DEFINITIONS],
  ] as const) {
    it(`decodes (protobufjs, gnostic's field numbers) to exactly the JSON document: ${name}`, () => {
      const docs = openAPIDocuments(kinds, defs);
      const decoded = swaggerFromProto(decode(docs.v2Protobuf));
      assert.deepStrictEqual(decoded, JSON.parse(docs.v2Json));
    });
  }

  it('keeps unmodelled values (defaults, enums, vendor extensions) as YAML in Any', () => {
    const docs = openAPIDocuments(TEST_KINDS, TEST_DEFINITIONS);
    const d = decode(docs.v2Protobuf);
    const spec = ((d.definitions as Json).additional_properties as Json[]).find((n) => n.name === 'com.example.v1.WidgetSpec')!.value as Json;
    const props = Object.fromEntries(((spec.properties as Json).additional_properties as Json[]).map((n) => [n.name, n.value as Json]));
    assert.deepEqual(props.size!.default, { yaml: '1\n' });
    assert.deepEqual((props.mode!.enum as Json[]).map((a) => a.yaml), ['"A"\n', '"B"\n']);
    assert.deepEqual(props.tags!.vendor_extension, [{ name: 'x-kubernetes-list-type', value: { yaml: '"set"\n' } }]);
    assert.deepEqual(props.labels!.additional_properties, { schema: { type: { value: ['string'] } } });
  });
});

// ---------------------------------------------------------------------------------------------------------
// Real clients
// ---------------------------------------------------------------------------------------------------------

const kubectls = kubectlBinaries();

describe('kubectl against the OpenAPI documents', { skip: kubectls.length === 0 ? 'no kubectl.1.xx binaries next to kubectl' : false }, () => {
  let server: FakeServer;
  before(async () => {
    server = await startFakeServer(BUILTIN_KINDS, ALL_DEFINITIONS);
  });
  after(async () => {
    await server.close();
  });

  for (const { version, path } of kubectls) {
    it(`kubectl ${version}: explain (v3), explain --output plaintext-openapiv2 (v2 protobuf), server-side field validation`, async () => {
      server.requests.length = 0;
      const v3 = await runKubectl(path, server.url, ['explain', 'pvc.spec.resources']);
      assert.equal(v3.code, 0, v3.stderr);
      assert.match(v3.stdout, /KIND:\s+PersistentVolumeClaim/);
      assert.match(v3.stdout, /requests\s+<map\[string\]Quantity>/);
      const gv = server.requests.find((q) => q.url.startsWith('/openapi/v3/api/v1?hash='));
      assert.ok(gv, JSON.stringify(server.requests));
      assert.equal(gv.status, 200);

      server.requests.length = 0;
      const v2 = await runKubectl(path, server.url, ['explain', 'namespace.spec', '--output', 'plaintext-openapiv2']);
      assert.equal(v2.code, 0, v2.stderr);
      assert.match(v2.stdout, /KIND:\s+Namespace/);
      assert.match(v2.stdout, /finalizers\s+<\[\]string>/);
      const proto = server.requests.find((q) => q.url.startsWith('/openapi/v2'));
      assert.equal(proto?.accept, OPENAPI_V2_PROTOBUF_ACCEPT);
      assert.equal(proto?.responseContentType, OPENAPI_V2_PROTOBUF_CONTENT_TYPE);

      // kubectl looks for fieldValidation among the PATCH parameters of the kind (v3 for 1.27+, v2 before) and,
      // finding it, validates server-side.
      server.requests.length = 0;
      const manifest = 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: foo\n';
      const create = await runKubectl(path, server.url, ['create', '-f', '-', '--dry-run=server'], { stdin: manifest });
      assert.equal(create.code, 0, create.stderr);
      const post = server.requests.find((q) => q.method === 'POST');
      assert.ok(post?.url.includes('fieldValidation=Strict'), JSON.stringify(server.requests));
    });
  }
});
