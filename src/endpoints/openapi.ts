/**
 * OpenAPI documents generated from kind declarations, as kube-apiserver serves them:
 *
 *  - /openapi/v2: a Swagger 2.0 document (paths for every kind and verb with Kubernetes' operation IDs,
 *    parameters, x-kubernetes-action and x-kubernetes-group-version-kind; definitions = the schemas), in JSON
 *    or in the protobuf encoding of gnostic's openapi_v2.Document. client-go's discovery client
 *    (OpenAPISchema: kubectl's client-side validation, explain --output plaintext-openapiv2, the fieldValidation
 *    check of older kubectl) asks only for `application/com.github.proto-openapi.spec.v2@v1.0+protobuf` and
 *    proto-unmarshals whatever comes back: a JSON answer would fail, so the protobuf form is required.
 *  - /openapi/v3: the index `{"paths": {"api/v1": {"serverRelativeURL": "/openapi/v3/api/v1?hash=<HASH>"}, ...}}`
 *    and one OpenAPI 3.0 document per group version (`api`, `api/v1`, `apis`, `apis/<g>`, `apis/<g>/<v>`), with
 *    components.schemas converted from the v2 definitions (refs to #/components/schemas/, refs with siblings
 *    wrapped in allOf, IntOrString and Quantity as oneOf) — what kubectl explain, apply and the fieldValidation
 *    check (kubectl 1.27+) read.
 *
 * ETags are the upper-case hex SHA-512 of the JSON document (the same for its protobuf form), quoted; a
 * matching If-None-Match answers 304. A v3 document fetched with a stale `hash` is redirected (301) to the
 * current one; with the right hash it is cacheable forever (Cache-Control: public, immutable).
 *
 * Documents are generated once per (kinds, definitions) pair and cached.
 */
import { createHash } from 'node:crypto';
import type { KindDecl } from '../registry/kind.js';
import { REF_PREFIX, type Definitions, type Schema } from '../registry/schema.js';
import { versionInfo } from '../util/version.js';
import { clauseMatches, kindSubresources, kindVerbs, parseAccept } from './discovery.js';

type Json = Record<string, any>;

// ---------------------------------------------------------------------------------------------------------
// Names
// ---------------------------------------------------------------------------------------------------------

const V3_REF_PREFIX = '#/components/schemas/';
const META = 'io.k8s.apimachinery.pkg.apis.meta.v1.';
export const STATUS_DEF = META + 'Status';
export const DELETE_OPTIONS_DEF = META + 'DeleteOptions';
export const PATCH_DEF = META + 'Patch';
export const WATCH_EVENT_DEF = META + 'WatchEvent';
const API_VERSIONS_DEF = META + 'APIVersions';
const API_RESOURCE_LIST_DEF = META + 'APIResourceList';
const API_GROUP_LIST_DEF = META + 'APIGroupList';
const API_GROUP_DEF = META + 'APIGroup';
const QUANTITY_DEF = 'io.k8s.apimachinery.pkg.api.resource.Quantity';

/** apiserver's ToValidOperationID: keeps letters, '_' and non-leading digits, capitalizing after dropped characters. */
export function toValidOperationID(s: string, capitalizeFirstLetter: boolean): string {
  let out = '';
  let capitalize = capitalizeFirstLetter;
  let i = 0;
  for (const ch of s) {
    if (/\p{L}/u.test(ch) || ch === '_' || (i !== 0 && /\p{Nd}/u.test(ch))) {
      out += capitalize ? ch.toUpperCase() : ch;
      capitalize = false;
    } else {
      capitalize = true;
    }
    i += ch.length;
  }
  return out;
}

/** The operation-ID infix and the tag of a group version: ('', 'v1') → CoreV1, core_v1; ('storage.k8s.io', 'v1') → StorageV1, storage_v1. */
export function groupVersionNaming(group: string, version?: string): { infix: string; tag: string } {
  const trimmed = group === '' ? 'core' : group.replace(/\.k8s\.io$/, '');
  let infix = toValidOperationID(trimmed, true);
  let tag = toValidOperationID(trimmed, false);
  if (version !== undefined) {
    infix += toValidOperationID(version, true);
    tag += '_' + toValidOperationID(version, false);
  }
  return { infix, tag };
}

/** The URL prefix of a group version: /api/v1 or /apis/<group>/<version>. */
export function groupVersionPrefix(group: string, version: string): string {
  return group === '' ? `/api/${version}` : `/apis/${group}/${version}`;
}

function articleFor(noun: string): string {
  if (!noun.endsWith('ss') && noun.endsWith('s')) return ' ';
  return /^[aeiou]/i.test(noun) ? ' an ' : ' a ';
}

const capitalize = (s: string) => (s ? s[0]!.toUpperCase() + s.slice(1) : s);

// ---------------------------------------------------------------------------------------------------------
// Parameters (Swagger 2.0 form)
// ---------------------------------------------------------------------------------------------------------

interface Param {
  name: string;
  in: 'query' | 'path' | 'body';
  description?: string;
  required?: boolean;
  type?: string;
  uniqueItems?: boolean;
  schema?: Schema;
}

const query = (name: string, type: string, description: string): Param => ({ description, in: 'query', name, type, uniqueItems: true });

const P = {
  pretty: query(
    'pretty',
    'string',
    "If 'true', then the output is pretty printed. Defaults to 'false' unless the user-agent indicates a browser or command-line HTTP tool (curl and wget).",
  ),
  namespace: { description: 'object name and auth scope, such as for teams and projects', in: 'path', name: 'namespace', required: true, type: 'string', uniqueItems: true } as Param,
  allowWatchBookmarks: query(
    'allowWatchBookmarks',
    'boolean',
    'allowWatchBookmarks requests watch events with type "BOOKMARK". Servers that do not implement bookmarks may ignore this flag and bookmarks are sent at the server\'s discretion. Clients should not assume bookmarks are returned at any specific interval, nor may they assume the server will send any BOOKMARK event during a session. If this is not a watch, this field is ignored.',
  ),
  continue: query(
    'continue',
    'string',
    'The continue option should be set when retrieving more results from the server. Since this value is server defined, clients may only use the continue value from a previous query result with identical query parameters (except for the value of continue) and the server may reject a continue value it does not recognize. If the specified continue value is no longer valid whether due to expiration (generally five to fifteen minutes) or a configuration change on the server, the server will respond with a 410 ResourceExpired error together with a continue token. If the client needs a consistent list, it must restart their list without the continue field. Otherwise, the client may send another list request with the token received with the 410 error, the server will respond with a list starting from the next key, but from the latest snapshot, which is inconsistent from the previous list results - objects that are created, modified, or deleted after the first list request will be included in the response, as long as their keys are after the "next key".\n\nThis field is not supported when watch is true. Clients may start a watch from the last resourceVersion value returned by the server and not miss any modifications.',
  ),
  fieldSelector: query('fieldSelector', 'string', 'A selector to restrict the list of returned objects by their fields. Defaults to everything.'),
  labelSelector: query('labelSelector', 'string', 'A selector to restrict the list of returned objects by their labels. Defaults to everything.'),
  limit: query(
    'limit',
    'integer',
    'limit is a maximum number of responses to return for a list call. If more items exist, the server will set the `continue` field on the list metadata to a value that can be used with the same initial query to retrieve the next set of results. Setting a limit may return fewer than the requested amount of items (up to zero items) in the event all requested objects are filtered out and clients should only use the presence of the continue field to determine whether more results are available. Servers may choose not to support the limit argument and will return all of the available results. If limit is specified and the continue field is empty, clients may assume that no more results are available. This field is not supported if watch is true.\n\nThe server guarantees that the objects returned when using continue will be identical to issuing a single list call without a limit - that is, no objects created, modified, or deleted after the first request is issued will be included in any subsequent continued requests. This is sometimes referred to as a consistent snapshot, and ensures that a client that is using limit to receive smaller chunks of a very large result can ensure they see all possible objects. If objects are updated during a chunked list the version of the object that was present at the time the first list result was calculated is returned.',
  ),
  resourceVersion: query(
    'resourceVersion',
    'string',
    'resourceVersion sets a constraint on what resource versions a request may be served from. See https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for details.\n\nDefaults to unset',
  ),
  resourceVersionMatch: query(
    'resourceVersionMatch',
    'string',
    'resourceVersionMatch determines how resourceVersion is applied to list calls. It is highly recommended that resourceVersionMatch be set for list calls where resourceVersion is set See https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for details.\n\nDefaults to unset',
  ),
  timeoutSeconds: query('timeoutSeconds', 'integer', 'Timeout for the list/watch call. This limits the duration of the call, regardless of any activity or inactivity.'),
  watch: query(
    'watch',
    'boolean',
    'Watch for changes to the described resources and return them as a stream of add, update, and remove notifications. Specify resourceVersion.',
  ),
  dryRun: query(
    'dryRun',
    'string',
    'When present, indicates that modifications should not be persisted. An invalid or unrecognized dryRun directive will result in an error response and no further processing of the request. Valid values are: - All: all dry run stages will be processed',
  ),
  fieldManager: query(
    'fieldManager',
    'string',
    'fieldManager is a name associated with the actor or entity that is making these changes. The value must be less than or 128 characters long, and only contain printable characters, as defined by https://golang.org/pkg/unicode/#IsPrint.',
  ),
  fieldManagerPatch: query(
    'fieldManager',
    'string',
    'fieldManager is a name associated with the actor or entity that is making these changes. The value must be less than or 128 characters long, and only contain printable characters, as defined by https://golang.org/pkg/unicode/#IsPrint. This field is required for apply requests (application/apply-patch) but optional for non-apply patch types (JsonPatch, MergePatch, StrategicMergePatch).',
  ),
  fieldValidation: query(
    'fieldValidation',
    'string',
    'fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore: This will ignore any unknown fields that are silently dropped from the object, and will ignore all but the last duplicate field that the decoder encounters. This is the default behavior prior to v1.23. - Warn: This will send a warning via the standard warning response header for each unknown field that is dropped from the object, and for each duplicate field that is encountered. The request will still succeed if there are no other errors, and will only persist the last of any duplicate fields. This is the default in v1.23+ - Strict: This will fail the request with a BadRequest error if any unknown fields would be dropped from the object, or if any duplicate fields are present. The error returned from the server will contain all unknown and duplicate fields encountered.',
  ),
  force: query(
    'force',
    'boolean',
    'Force is going to "force" Apply requests. It means user will re-acquire conflicting fields owned by other people. Force flag must be unset for non-apply patch requests.',
  ),
  gracePeriodSeconds: query(
    'gracePeriodSeconds',
    'integer',
    'The duration in seconds before the object should be deleted. Value must be non-negative integer. The value zero indicates delete immediately. If this value is nil, the default grace period for the specified type will be used. Defaults to a per object value if not specified. zero means delete immediately.',
  ),
  orphanDependents: query(
    'orphanDependents',
    'boolean',
    'Deprecated: please use the PropagationPolicy, this field will be deprecated in 1.7. Should the dependent objects be orphaned. If true/false, the "orphan" finalizer will be added to/removed from the object\'s finalizers list. Either this field or PropagationPolicy may be set, but not both.',
  ),
  propagationPolicy: query(
    'propagationPolicy',
    'string',
    "Whether and how garbage collection will be performed. Either this field or OrphanDependents may be set, but not both. The default policy is decided by the existing finalizer set in the metadata.finalizers and the resource-specific default policy. Acceptable values are: 'Orphan' - orphan the dependents; 'Background' - allow the garbage collector to delete the dependents in the background; 'Foreground' - a cascading policy that deletes all dependents in the foreground.",
  ),
  deleteBody: { in: 'body', name: 'body', schema: { $ref: REF_PREFIX + DELETE_OPTIONS_DEF } } as Param,
  patchBody: { in: 'body', name: 'body', required: true, schema: { $ref: REF_PREFIX + PATCH_DEF } } as Param,
};

const nameParam = (kind: string): Param => ({ description: `name of the ${kind}`, in: 'path', name: 'name', required: true, type: 'string', uniqueItems: true });
/** The options of a connector's GET (PodLogOptions, the only connector so far). */
const CONNECT_PARAMS: Param[] = [
  query('container', 'string', 'The container for which to stream logs. Defaults to only container if there is one container in the pod.'),
  query('follow', 'boolean', 'Follow the log stream of the pod. Defaults to false.'),
  query('insecureSkipTLSVerifyBackend', 'boolean', "insecureSkipTLSVerifyBackend indicates that the apiserver should not confirm the validity of the serving certificate of the backend it is connecting to.  This will make the HTTPS connection between the apiserver and the backend insecure. This means the apiserver cannot verify the log data it is receiving came from the real kubelet.  If the kubelet is configured to verify the apiserver's TLS credentials, it does not mean the connection to the real kubelet is vulnerable to a man in the middle attack (e.g. an attacker could not intercept the actual log data coming from the real kubelet)."),
  query('limitBytes', 'integer', 'If set, the number of bytes to read from the server before terminating the log output. This may not display a complete final line of logging, and may return slightly more or slightly less than the specified limit.'),
  query('previous', 'boolean', 'Return previous terminated container logs. Defaults to false.'),
  query('sinceSeconds', 'integer', 'A relative time in seconds before the current time from which to show logs. If this value precedes the time a pod was started, only logs since the pod start will be returned. If this value is in the future, no logs will be returned. Only one of sinceSeconds or sinceTime may be specified.'),
  query('tailLines', 'integer', 'If set, the number of lines from the end of the logs to show. If not specified, logs are shown from the creation of the container or sinceSeconds or sinceTime'),
  query('timestamps', 'boolean', 'If true, add an RFC3339 or RFC3339Nano timestamp at the beginning of every line of log output. Defaults to false.'),
];

const objectBody = (def: string): Param => ({ in: 'body', name: 'body', required: true, schema: { $ref: REF_PREFIX + def } });

const LIST_PARAMS = [P.allowWatchBookmarks, P.continue, P.fieldSelector, P.labelSelector, P.limit, P.resourceVersion, P.resourceVersionMatch, P.timeoutSeconds, P.watch];

const MEDIA_TYPES = ['application/json', 'application/yaml', 'application/vnd.kubernetes.protobuf'];
const STREAM_MEDIA_TYPES = [...MEDIA_TYPES, 'application/json;stream=watch', 'application/vnd.kubernetes.protobuf;stream=watch'];
const PATCH_TYPES = ['application/json-patch+json', 'application/merge-patch+json', 'application/strategic-merge-patch+json', 'application/apply-patch+yaml'];

// ---------------------------------------------------------------------------------------------------------
// Routes
// ---------------------------------------------------------------------------------------------------------

type Method = 'get' | 'put' | 'post' | 'delete' | 'options' | 'head' | 'patch';
/** The order of a path item's operations (go-openapi's PathItemProps). */
const METHOD_ORDER: Method[] = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch'];

interface Route {
  path: string;
  method: Method;
  action?: string;
  operationId: string;
  description: string;
  consumes: string[];
  produces: string[];
  params: Param[];
  /** [status code, description, definition or undefined] */
  responses: [string, string, string | undefined][];
  gvk?: { group: string; kind: string; version: string };
  tags: string[];
}

const ok = (def: string): [string, string, string][] => [['200', 'OK', def]];
const UNAUTHORIZED: [string, string, undefined] = ['401', 'Unauthorized', undefined];

/** The routes Kubernetes installs for a kind, per its verbs and subresources. */
function kindRoutes(kind: KindDecl): Route[] {
  const verbs = new Set(kindVerbs(kind));
  const { infix, tag } = groupVersionNaming(kind.group, kind.version);
  const prefix = groupVersionPrefix(kind.group, kind.version);
  const K = kind.kind;
  const gvk = { group: kind.group, kind: K, version: kind.version };
  const ns = kind.namespaced ? 'Namespaced' : '';
  const nsPath = kind.namespaced ? `/namespaces/{namespace}` : '';
  const nsParams = kind.namespaced ? [P.namespace] : [];
  const collection = `${prefix}${nsPath}/${kind.resource}`;
  const item = `${collection}/{name}`;
  const deleteType = kind.responses?.delete === 'Status' ? STATUS_DEF : kind.definition;
  const routes: Route[] = [];
  const route = (r: Omit<Route, 'tags' | 'gvk' | 'consumes'> & { consumes?: string[] }) =>
    routes.push({ consumes: ['*/*'], ...r, params: [...r.params, P.pretty], tags: [tag], gvk });
  const opId = (verb: string, rest: string) => verb + infix + capitalize(rest);
  const listDescription = verbs.has('watch') ? `list or watch objects of kind ${K}` : `list objects of kind ${K}`;

  if (verbs.has('list')) {
    route({ path: collection, method: 'get', action: 'list', operationId: opId('list', ns + K), description: listDescription, produces: STREAM_MEDIA_TYPES, params: [...nsParams, ...LIST_PARAMS], responses: [...ok(kind.listDefinition), UNAUTHORIZED] });
  }
  if (verbs.has('create')) {
    route({
      path: collection,
      method: 'post',
      action: 'post',
      operationId: opId('create', ns + K),
      description: `create${articleFor(K)}${K}`,
      produces: MEDIA_TYPES,
      params: [...nsParams, objectBody(kind.definition), P.dryRun, P.fieldManager, P.fieldValidation],
      responses: [...ok(kind.definition), ['201', 'Created', kind.definition], ['202', 'Accepted', kind.definition], UNAUTHORIZED],
    });
  }
  if (verbs.has('deletecollection')) {
    route({
      path: collection,
      method: 'delete',
      action: 'deletecollection',
      operationId: opId('delete', 'collection' + ns + K),
      description: `delete collection of ${K}`,
      produces: MEDIA_TYPES,
      params: [...nsParams, P.deleteBody, P.continue, P.dryRun, P.fieldSelector, P.gracePeriodSeconds, P.labelSelector, P.limit, P.orphanDependents, P.propagationPolicy, P.resourceVersion, P.resourceVersionMatch, P.timeoutSeconds],
      responses: [...ok(STATUS_DEF), UNAUTHORIZED],
    });
  }
  const itemParams = [...nsParams, nameParam(K)];
  if (verbs.has('get')) {
    route({ path: item, method: 'get', action: 'get', operationId: opId('read', ns + K), description: `read the specified ${K}`, produces: MEDIA_TYPES, params: itemParams, responses: [...ok(kind.definition), UNAUTHORIZED] });
  }
  if (verbs.has('update')) {
    route({
      path: item,
      method: 'put',
      action: 'put',
      operationId: opId('replace', ns + K),
      description: `replace the specified ${K}`,
      produces: MEDIA_TYPES,
      params: [...itemParams, objectBody(kind.definition), P.dryRun, P.fieldManager, P.fieldValidation],
      responses: [...ok(kind.definition), ['201', 'Created', kind.definition], UNAUTHORIZED],
    });
  }
  if (verbs.has('patch')) {
    route({
      path: item,
      method: 'patch',
      action: 'patch',
      operationId: opId('patch', ns + K),
      description: `partially update the specified ${K}`,
      consumes: PATCH_TYPES,
      produces: MEDIA_TYPES,
      params: [...itemParams, P.patchBody, P.dryRun, P.fieldManagerPatch, P.fieldValidation, P.force],
      responses: [...ok(kind.definition), ['201', 'Created', kind.definition], UNAUTHORIZED],
    });
  }
  if (verbs.has('delete')) {
    route({
      path: item,
      method: 'delete',
      action: 'delete',
      operationId: opId('delete', ns + K),
      description: `delete${articleFor(K)}${K}`,
      produces: MEDIA_TYPES,
      params: [...itemParams, P.deleteBody, P.dryRun, P.gracePeriodSeconds, P.orphanDependents, P.propagationPolicy],
      responses: [...ok(deleteType), ['202', 'Accepted', deleteType], UNAUTHORIZED],
    });
  }
  for (const sub of kindSubresources(kind)) {
    const subPath = `${item}/${sub.name}`;
    const Sub = capitalize(sub.name);
    const subVerbs = new Set(sub.verbs);
    if (sub.type === 'action' && sub.kind) {
      const body = sub.kind.definition;
      route({
        path: subPath,
        method: 'post',
        action: 'post',
        operationId: opId('create', ns + K + Sub),
        description: `create ${sub.name} of${articleFor(K)}${K}`,
        produces: MEDIA_TYPES,
        params: [...itemParams, objectBody(body), P.dryRun, P.fieldManager, P.fieldValidation],
        responses: [...ok(body), ['201', 'Created', body], ['202', 'Accepted', body], UNAUTHORIZED],
      });
      continue;
    }
    const options = sub.type === 'connect' ? kind.connectors?.[sub.name]?.options : undefined;
    const proxy = sub.type === 'connect' ? kind.connectors?.[sub.name]?.proxy : undefined;
    if (proxy && options) {
      // Proxy connecters: one connect operation per method, at <name>/proxy and at <name>/proxy/{path}.
      const queryParams = options.params.map((o) => query(o.name, o.type, o.description));
      const pathParam: Param = { description: 'path to the resource', in: 'path', name: 'path', required: true, type: 'string', uniqueItems: true };
      for (const withPath of [false, true]) {
        for (const m of proxy.methods) {
          const method = m.toLowerCase() as Method;
          routes.push({
            path: withPath ? `${subPath}/{path}` : subPath,
            method,
            action: 'connect',
            operationId: `connect${infix}${capitalize(method)}${capitalize(ns + K + Sub)}${withPath ? 'WithPath' : ''}`,
            description: `connect ${m} requests to ${sub.name} of ${K}`,
            consumes: ['*/*'],
            produces: ['*/*'],
            params: [...itemParams, ...(withPath ? [pathParam] : []), ...queryParams],
            responses: [['200', 'OK', undefined], UNAUTHORIZED],
            tags: [tag],
            gvk: { group: kind.group, kind: options.kind, version: kind.version },
          });
        }
      }
      continue;
    }
    if (options) {
      // Connecters with an options kind (exec, attach, portforward): one connect operation per method.
      const params = [...itemParams, ...options.params.map((o) => query(o.name, o.type, o.description))];
      for (const method of (['get', 'post'] as const).filter((m) => subVerbs.has(m === 'get' ? 'get' : 'create'))) {
        const M = method === 'get' ? 'Get' : 'Post';
        routes.push({
          path: subPath,
          method,
          action: 'connect',
          operationId: `connect${infix}${M}${capitalize(ns + K + Sub)}`,
          description: `connect ${method.toUpperCase()} requests to ${sub.name} of ${K}`,
          consumes: ['*/*'],
          produces: ['*/*'],
          params,
          responses: [['200', 'OK', undefined], UNAUTHORIZED],
          tags: [tag],
          gvk: { group: kind.group, kind: options.kind, version: kind.version },
        });
      }
      continue;
    }
    if (sub.type === 'connect') {
      route({
        path: subPath,
        method: 'get',
        action: 'connect',
        operationId: opId('read', ns + K + Sub),
        description: `read ${sub.name} of the specified ${K}`,
        produces: ['text/plain', ...MEDIA_TYPES],
        params: [...itemParams, ...CONNECT_PARAMS],
        responses: [['200', 'OK', undefined], UNAUTHORIZED],
      });
      continue;
    }
    if (subVerbs.has('get')) {
      route({ path: subPath, method: 'get', action: 'get', operationId: opId('read', ns + K + Sub), description: `read ${sub.name} of the specified ${K}`, produces: MEDIA_TYPES, params: itemParams, responses: [...ok(kind.definition), UNAUTHORIZED] });
    }
    if (subVerbs.has('update')) {
      route({
        path: subPath,
        method: 'put',
        action: 'put',
        operationId: opId('replace', ns + K + Sub),
        description: `replace ${sub.name} of the specified ${K}`,
        produces: MEDIA_TYPES,
        params: [...itemParams, objectBody(kind.definition), P.dryRun, P.fieldManager, P.fieldValidation],
        responses: [...ok(kind.definition), ['201', 'Created', kind.definition], UNAUTHORIZED],
      });
    }
    if (subVerbs.has('patch')) {
      route({
        path: subPath,
        method: 'patch',
        action: 'patch',
        operationId: opId('patch', ns + K + Sub),
        description: `partially update ${sub.name} of the specified ${K}`,
        consumes: PATCH_TYPES,
        produces: MEDIA_TYPES,
        params: [...itemParams, P.patchBody, P.dryRun, P.fieldManagerPatch, P.fieldValidation, P.force],
        responses: [...ok(kind.definition), ['201', 'Created', kind.definition], UNAUTHORIZED],
      });
    }
  }
  if (kind.namespaced && verbs.has('list')) {
    route({
      path: `${prefix}/${kind.resource}`,
      method: 'get',
      action: 'list',
      operationId: opId('list', K + 'ForAllNamespaces'),
      description: listDescription,
      produces: STREAM_MEDIA_TYPES,
      params: LIST_PARAMS,
      responses: [...ok(kind.listDefinition), UNAUTHORIZED],
    });
  }
  if (verbs.has('watch')) {
    const watchResponses: Route['responses'] = [...ok(WATCH_EVENT_DEF), UNAUTHORIZED];
    const listDeprecated = '. deprecated: use the \'watch\' parameter with a list operation instead.';
    route({
      path: `${prefix}/watch${nsPath}/${kind.resource}`,
      method: 'get',
      action: 'watchlist',
      operationId: opId('watch', ns + K + 'List'),
      description: `watch individual changes to a list of ${K}${listDeprecated}`,
      produces: STREAM_MEDIA_TYPES,
      params: [...nsParams, ...LIST_PARAMS],
      responses: watchResponses,
    });
    route({
      path: `${prefix}/watch${nsPath}/${kind.resource}/{name}`,
      method: 'get',
      action: 'watch',
      operationId: opId('watch', ns + K),
      description: `watch changes to an object of kind ${K}. deprecated: use the 'watch' parameter with a list operation instead, filtered to a single item with the 'fieldSelector' parameter.`,
      produces: STREAM_MEDIA_TYPES,
      params: [...itemParams, ...LIST_PARAMS],
      responses: watchResponses,
    });
    if (kind.namespaced) {
      route({
        path: `${prefix}/watch/${kind.resource}`,
        method: 'get',
        action: 'watchlist',
        operationId: opId('watch', K + 'ListForAllNamespaces'),
        description: `watch individual changes to a list of ${K}${listDeprecated}`,
        produces: STREAM_MEDIA_TYPES,
        params: LIST_PARAMS,
        responses: watchResponses,
      });
    }
  }
  return routes;
}

/** The discovery routes (/api/, /api/<v>/, /apis/, /apis/<g>/, /apis/<g>/<v>/) whose schemas are defined. */
function discoveryRoutes(kinds: readonly KindDecl[], defs: Definitions): Route[] {
  const routes: Route[] = [];
  const add = (path: string, operationId: string, description: string, def: string, tag: string) => {
    if (!defs[def]) return;
    routes.push({ path, method: 'get', operationId, description, consumes: MEDIA_TYPES, produces: MEDIA_TYPES, params: [], responses: [...ok(def), UNAUTHORIZED], tags: [tag] });
  };
  const groups = new Map<string, Set<string>>();
  for (const k of kinds) {
    let g = groups.get(k.group);
    if (!g) groups.set(k.group, (g = new Set()));
    g.add(k.version);
  }
  add('/api/', 'getCoreAPIVersions', 'get available API versions', API_VERSIONS_DEF, 'core');
  add('/apis/', 'getAPIVersions', 'get available API versions', API_GROUP_LIST_DEF, 'apis');
  for (const [group, versions] of groups) {
    if (group !== '') {
      const { infix, tag } = groupVersionNaming(group);
      add(`/apis/${group}/`, `get${infix}APIGroup`, 'get information of a group', API_GROUP_DEF, tag);
    }
    for (const v of versions) {
      const { infix, tag } = groupVersionNaming(group, v);
      add(`${groupVersionPrefix(group, v)}/`, `get${infix}APIResources`, 'get available resources', API_RESOURCE_LIST_DEF, tag);
    }
  }
  return routes;
}

const paramKey = (p: Param) => `${p.name}\u0000${p.in}`;
const byName = (a: Param, b: Param) => (a.name < b.name ? -1 : a.name > b.name ? 1 : a.in < b.in ? -1 : a.in > b.in ? 1 : 0);

interface PathGroup {
  common: Param[];
  ops: { route: Route; params: Param[] }[];
}

/** Routes grouped by path, with the parameters all operations of a path share moved to the path (kube-openapi). */
function groupRoutes(routes: Route[]): Map<string, PathGroup> {
  const byPath = new Map<string, Route[]>();
  for (const r of routes) {
    const list = byPath.get(r.path);
    if (list) list.push(r);
    else byPath.set(r.path, [r]);
  }
  const out = new Map<string, PathGroup>();
  for (const path of [...byPath.keys()].sort()) {
    const rs = byPath.get(path)!;
    const counts = new Map<string, number>();
    const last = new Map<string, Param>();
    for (const r of rs) {
      for (const p of r.params) {
        counts.set(paramKey(p), (counts.get(paramKey(p)) ?? 0) + 1);
        last.set(paramKey(p), p);
      }
    }
    const commonKeys = new Set([...counts].filter(([k, n]) => n === rs.length && last.get(k)!.in !== 'body').map(([k]) => k));
    const common = [...commonKeys].map((k) => last.get(k)!).sort(byName);
    const ops = rs
      .sort((a, b) => METHOD_ORDER.indexOf(a.method) - METHOD_ORDER.indexOf(b.method))
      .map((route) => ({ route, params: route.params.filter((p) => !commonKeys.has(paramKey(p))).sort(byName) }));
    out.set(path, { common, ops });
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------
// Definitions
// ---------------------------------------------------------------------------------------------------------

/** The definitions with the kinds' own merged in, and each kind's (list) definition tagged with its GVK. */
function mergedDefinitions(kinds: readonly KindDecl[], base: Definitions): Definitions {
  const defs: Definitions = { ...base };
  for (const k of kinds) Object.assign(defs, k.definitions);
  for (const k of kinds) {
    for (const [name, kindName] of [
      [k.definition, k.kind],
      [k.listDefinition, k.listKind],
    ] as const) {
      const d = defs[name];
      if (d && !d['x-kubernetes-group-version-kind']) {
        defs[name] = { ...d, 'x-kubernetes-group-version-kind': [{ group: k.group, kind: kindName, version: k.version }] };
      }
    }
  }
  return defs;
}

function collectRefs(value: unknown, prefix: string, out: Set<string>): void {
  if (Array.isArray(value)) {
    for (const v of value) collectRefs(v, prefix, out);
  } else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      if (k === '$ref' && typeof v === 'string' && v.startsWith(prefix)) out.add(v.slice(prefix.length));
      else if (!k.startsWith('x-')) collectRefs(v, prefix, out);
    }
  }
}

/** The names of definitions referenced from `roots`, transitively, that exist in `defs` (sorted). */
function referencedClosure(roots: unknown, defs: Definitions): string[] {
  const seen = new Set<string>();
  const queue: string[] = [];
  const first = new Set<string>();
  collectRefs(roots, REF_PREFIX, first);
  queue.push(...first);
  while (queue.length) {
    const name = queue.pop()!;
    if (seen.has(name) || !defs[name]) continue;
    seen.add(name);
    const next = new Set<string>();
    collectRefs(defs[name], REF_PREFIX, next);
    queue.push(...next);
  }
  return [...seen].sort();
}

/** Definition names referenced by a document that it does not define (should be empty). */
export function danglingReferences(doc: Json, prefix: string = REF_PREFIX): string[] {
  const refs = new Set<string>();
  collectRefs(doc, prefix, refs);
  const defined = prefix === REF_PREFIX ? (doc.definitions ?? {}) : (doc.components?.schemas ?? {});
  return [...refs].filter((r) => !(r in defined)).sort();
}

/** A deep copy of a JSON value with object keys sorted (Go marshals maps in key order). */
function sortKeys<T>(value: T): T {
  if (Array.isArray(value)) return value.map(sortKeys) as T;
  if (value && typeof value === 'object') {
    const out: Json = {};
    for (const k of Object.keys(value).sort()) out[k] = sortKeys((value as Json)[k]);
    return out as T;
  }
  return value;
}

// ---------------------------------------------------------------------------------------------------------
// OpenAPI v2
// ---------------------------------------------------------------------------------------------------------

export interface OpenAPIOptions {
  /** info.version; default the server's gitVersion. */
  version?: string;
}

function v2Operation(route: Route, params: Param[]): Json {
  const op: Json = {
    consumes: route.consumes,
    description: route.description,
    operationId: route.operationId,
    produces: route.produces,
    responses: Object.fromEntries(
      route.responses.map(([code, description, def]) => [code, def ? { description, schema: { $ref: REF_PREFIX + def } } : { description }]),
    ),
    schemes: ['https'],
    tags: route.tags,
  };
  if (params.length) op.parameters = params;
  if (route.action) op['x-kubernetes-action'] = route.action;
  if (route.gvk) op['x-kubernetes-group-version-kind'] = route.gvk;
  return op;
}

/** The Swagger 2.0 document of /openapi/v2 (keys sorted, as Kubernetes serves it). */
export function buildOpenAPIV2(kinds: readonly KindDecl[], definitions: Definitions, opts: OpenAPIOptions = {}): Json {
  const defs = mergedDefinitions(kinds, definitions);
  const routes = [...discoveryRoutes(kinds, defs), ...kinds.flatMap(kindRoutes)];
  const paths: Json = {};
  for (const [path, group] of groupRoutes(routes)) {
    const item: Json = {};
    if (group.common.length) item.parameters = group.common;
    for (const { route, params } of group.ops) item[route.method] = v2Operation(route, params);
    paths[path] = item;
  }
  return sortKeys({
    definitions: defs,
    info: { title: 'Kubernetes', version: opts.version ?? versionInfo().gitVersion },
    paths,
    security: [{ BearerToken: [] }],
    securityDefinitions: { BearerToken: { description: 'Bearer Token authentication', in: 'header', name: 'authorization', type: 'apiKey' } },
    swagger: '2.0',
  });
}

// ---------------------------------------------------------------------------------------------------------
// OpenAPI v3
// ---------------------------------------------------------------------------------------------------------

/** Converts a v2 schema to OpenAPI v3 as Kubernetes publishes it: refs to components, refs with siblings in allOf. */
export function convertSchemaV3(schema: Schema, name?: string): Json {
  const s: Json = { ...schema };
  if (typeof s.$ref === 'string' && s.$ref.startsWith(REF_PREFIX)) s.$ref = V3_REF_PREFIX + s.$ref.slice(REF_PREFIX.length);
  if (s.properties) s.properties = Object.fromEntries(Object.entries(s.properties as Record<string, Schema>).map(([k, v]) => [k, convertSchemaV3(v)]));
  if (s.items) s.items = Array.isArray(s.items) ? s.items.map((i: Schema) => convertSchemaV3(i)) : convertSchemaV3(s.items as Schema);
  if (s.additionalProperties && typeof s.additionalProperties === 'object') s.additionalProperties = convertSchemaV3(s.additionalProperties as Schema);
  if (Array.isArray(s.allOf)) s.allOf = s.allOf.map((i: Schema) => convertSchemaV3(i));
  if (s.format === 'int-or-string' && s.type === 'string') {
    // builder3's IntOrString: "format": "int-or-string", "oneOf": [integer, string]
    delete s.type;
    s.oneOf = [{ type: 'integer' }, { type: 'string' }];
  }
  if (name === QUANTITY_DEF && s.type === 'string') {
    delete s.type;
    delete s.format;
    s.oneOf = [{ type: 'string' }, { type: 'number' }];
  }
  if (typeof s.$ref === 'string' && Object.keys(s).length > 1) {
    const { $ref, ...rest } = s;
    return { allOf: [{ $ref }], ...rest };
  }
  return s;
}

function v3Parameter(p: Param): Json {
  const out: Json = { name: p.name, in: p.in };
  if (p.description) out.description = p.description;
  if (p.required) out.required = true;
  out.schema = { type: p.type, uniqueItems: true };
  return out;
}

const v3Ref = (def: string) => ({ $ref: V3_REF_PREFIX + def });

function v3Operation(route: Route, params: Param[]): Json {
  const op: Json = { description: route.description, operationId: route.operationId };
  const nonBody = params.filter((p) => p.in !== 'body');
  if (nonBody.length) op.parameters = nonBody.map(v3Parameter);
  const body = params.find((p) => p.in === 'body');
  if (body?.schema?.$ref) {
    const def = body.schema.$ref.slice(REF_PREFIX.length);
    op.requestBody = { content: Object.fromEntries(route.consumes.map((c) => [c, { schema: v3Ref(def) }])) };
    if (body.required) op.requestBody.required = true;
  }
  op.responses = Object.fromEntries(
    route.responses.map(([code, description, def]) => [
      code,
      def ? { content: Object.fromEntries(route.produces.map((m) => [m, { schema: v3Ref(def) }])), description } : { description },
    ]),
  );
  op.tags = route.tags;
  if (route.action) op['x-kubernetes-action'] = route.action;
  if (route.gvk) op['x-kubernetes-group-version-kind'] = route.gvk;
  return op;
}

/** The /openapi/v3 key of a path: '/api/' → 'api', '/api/v1/namespaces' → 'api/v1', '/apis/g/v/x' → 'apis/g/v'. */
export function v3GroupVersionKey(path: string): string {
  const parts = path.split('/').filter((p) => p !== '');
  if (parts[0] === 'api') return parts.slice(0, 2).join('/');
  if (parts[0] === 'apis') return parts.slice(0, 3).join('/');
  return parts[0] ?? '';
}

/** The OpenAPI v3 documents, by group-version key ('api', 'api/v1', 'apis', 'apis/<g>', 'apis/<g>/<v>'). */
export function buildOpenAPIV3(kinds: readonly KindDecl[], definitions: Definitions, opts: OpenAPIOptions = {}): Map<string, Json> {
  const defs = mergedDefinitions(kinds, definitions);
  const routes = [...discoveryRoutes(kinds, defs), ...kinds.flatMap(kindRoutes)];
  const byKey = new Map<string, Route[]>();
  for (const r of routes) {
    const key = v3GroupVersionKey(r.path);
    const list = byKey.get(key);
    if (list) list.push(r);
    else byKey.set(key, [r]);
  }
  const info = { title: 'Kubernetes', version: opts.version ?? versionInfo().gitVersion };
  const docs = new Map<string, Json>();
  for (const key of [...byKey.keys()].sort()) {
    const groups = groupRoutes(byKey.get(key)!);
    const paths: Json = {};
    for (const [path, group] of groups) {
      const item: Json = {};
      if (group.common.length) item.parameters = group.common.map(v3Parameter);
      for (const { route, params } of group.ops) item[route.method] = v3Operation(route, params);
      paths[path] = item;
    }
    const schemas: Json = {};
    for (const name of referencedClosure(byKey.get(key)!.map((r) => [r.params, r.responses.map(([, , d]) => (d ? { $ref: REF_PREFIX + d } : null))]), defs)) {
      schemas[name] = convertSchemaV3(defs[name]!, name);
    }
    docs.set(key, sortKeys({ components: { schemas }, info, openapi: '3.0.0', paths }));
  }
  return docs;
}

// ---------------------------------------------------------------------------------------------------------
// Protobuf encoding of gnostic's openapi_v2.Document
// ---------------------------------------------------------------------------------------------------------

/** A minimal protobuf writer: fields are appended in the order written (callers write them by field number). */
class PB {
  private readonly chunks: Buffer[] = [];

  private varint(n: bigint): void {
    const bytes: number[] = [];
    let v = BigInt.asUintN(64, n);
    while (v >= 0x80n) {
      bytes.push(Number(v & 0x7fn) | 0x80);
      v >>= 7n;
    }
    bytes.push(Number(v));
    this.chunks.push(Buffer.from(bytes));
  }

  private key(field: number, wire: number): void {
    this.varint(BigInt((field << 3) | wire));
  }

  /** A length-delimited field (string bytes or an embedded message), written even when empty. */
  bytes(field: number, data: Buffer): this {
    this.key(field, 2);
    this.varint(BigInt(data.length));
    this.chunks.push(data);
    return this;
  }

  /** A proto3 string: skipped when empty. */
  string(field: number, s: unknown): this {
    if (typeof s === 'string' && s !== '') this.bytes(field, Buffer.from(s, 'utf8'));
    return this;
  }

  /** repeated string: every element written. */
  strings(field: number, list: unknown): this {
    if (Array.isArray(list)) for (const s of list) this.bytes(field, Buffer.from(String(s), 'utf8'));
    return this;
  }

  /** A proto3 bool: skipped when false, unless `always` (a oneof member). */
  bool(field: number, b: unknown, always = false): this {
    if (b === true || (always && b === false)) {
      this.key(field, 0);
      this.varint(b ? 1n : 0n);
    }
    return this;
  }

  int64(field: number, n: unknown): this {
    if (typeof n === 'number' && n !== 0 && Number.isFinite(n)) {
      this.key(field, 0);
      this.varint(BigInt(Math.trunc(n)));
    }
    return this;
  }

  double(field: number, n: unknown): this {
    if (typeof n === 'number' && n !== 0) {
      this.key(field, 1);
      const b = Buffer.alloc(8);
      b.writeDoubleLE(n);
      this.chunks.push(b);
    }
    return this;
  }

  /** An embedded message (written even when empty, as Go does for a set message field). */
  msg(field: number, m: PB | undefined): this {
    if (m) this.bytes(field, m.finish());
    return this;
  }

  finish(): Buffer {
    return Buffer.concat(this.chunks);
  }
}

/** Any{yaml}: gnostic keeps a value it does not model as YAML text; JSON is YAML, and what gnostic emits for JSON input. */
function pbAny(value: unknown): PB {
  return new PB().string(2, JSON.stringify(value) + '\n');
}

function pbNamedAny(name: string, value: unknown): PB {
  return new PB().string(1, name).msg(2, pbAny(value));
}

/** Vendor extensions (x-* keys) as repeated NamedAny, in key order. */
function pbExtensions(pb: PB, field: number, obj: Json): void {
  for (const k of Object.keys(obj).sort()) if (k.startsWith('x-')) pb.msg(field, pbNamedAny(k, obj[k]));
}

function pbSchema(s: Json): PB {
  const pb = new PB()
    .string(1, s.$ref)
    .string(2, s.format)
    .string(3, s.title)
    .string(4, s.description);
  if ('default' in s) pb.msg(5, pbAny(s.default));
  pb.double(6, s.multipleOf)
    .double(7, s.maximum)
    .bool(8, s.exclusiveMaximum)
    .double(9, s.minimum)
    .bool(10, s.exclusiveMinimum)
    .int64(11, s.maxLength)
    .int64(12, s.minLength)
    .string(13, s.pattern)
    .int64(14, s.maxItems)
    .int64(15, s.minItems)
    .bool(16, s.uniqueItems)
    .int64(17, s.maxProperties)
    .int64(18, s.minProperties)
    .strings(19, s.required);
  if (Array.isArray(s.enum)) for (const e of s.enum) pb.msg(20, pbAny(e));
  if (s.additionalProperties !== undefined) {
    const ap = s.additionalProperties;
    pb.msg(21, typeof ap === 'boolean' ? new PB().bool(2, ap, true) : new PB().msg(1, pbSchema(ap as Json)));
  }
  if (s.type !== undefined) pb.msg(22, new PB().strings(1, Array.isArray(s.type) ? s.type : [s.type]));
  if (s.items !== undefined) {
    const items = new PB();
    for (const i of Array.isArray(s.items) ? s.items : [s.items]) items.msg(1, pbSchema(i as Json));
    pb.msg(23, items);
  }
  if (Array.isArray(s.allOf)) for (const a of s.allOf) pb.msg(24, pbSchema(a as Json));
  if (s.properties !== undefined) {
    const props = new PB();
    for (const [k, v] of Object.entries(s.properties as Json)) props.msg(1, new PB().string(1, k).msg(2, pbSchema(v as Json)));
    pb.msg(25, props);
  }
  pb.string(26, s.discriminator).bool(27, s.readOnly);
  if ('example' in s) pb.msg(30, pbAny(s.example));
  pbExtensions(pb, 31, s);
  return pb;
}

function pbParameter(p: Json): PB {
  if (p.in === 'body') {
    const body = new PB().string(1, p.description).string(2, p.name).string(3, p.in).bool(4, p.required);
    if (p.schema) body.msg(5, pbSchema(p.schema as Json));
    pbExtensions(body, 6, p);
    return new PB().msg(1, body);
  }
  // Query and form-data sub-schemas have allowEmptyValue at 5; header and path ones do not.
  const withEmpty = p.in === 'query' || p.in === 'formData';
  const o = withEmpty ? 1 : 0;
  const sub = new PB().bool(1, p.required).string(2, p.in).string(3, p.description).string(4, p.name);
  if (withEmpty) sub.bool(5, p.allowEmptyValue);
  sub.string(5 + o, p.type).string(6 + o, p.format);
  sub.string(8 + o, p.collectionFormat);
  if ('default' in p) sub.msg(9 + o, pbAny(p.default));
  sub
    .double(10 + o, p.maximum)
    .bool(11 + o, p.exclusiveMaximum)
    .double(12 + o, p.minimum)
    .bool(13 + o, p.exclusiveMinimum)
    .int64(14 + o, p.maxLength)
    .int64(15 + o, p.minLength)
    .string(16 + o, p.pattern)
    .int64(17 + o, p.maxItems)
    .int64(18 + o, p.minItems)
    .bool(19 + o, p.uniqueItems);
  if (Array.isArray(p.enum)) for (const e of p.enum) sub.msg(20 + o, pbAny(e));
  sub.double(21 + o, p.multipleOf);
  pbExtensions(sub, 22 + o, p);
  const which = { header: 1, formData: 2, query: 3, path: 4 }[p.in as string] ?? 3;
  return new PB().msg(2, new PB().msg(which, sub));
}

function pbParametersItem(p: Json): PB {
  if (typeof p.$ref === 'string') return new PB().msg(2, new PB().string(1, p.$ref).string(2, p.description));
  return new PB().msg(1, pbParameter(p));
}

function pbOperation(op: Json): PB {
  const pb = new PB().strings(1, op.tags).string(2, op.summary).string(3, op.description).string(5, op.operationId).strings(6, op.produces).strings(7, op.consumes);
  if (Array.isArray(op.parameters)) for (const p of op.parameters) pb.msg(8, pbParametersItem(p as Json));
  if (op.responses) {
    const rs = new PB();
    for (const code of Object.keys(op.responses as Json)) {
      if (code.startsWith('x-')) continue;
      const r = (op.responses as Json)[code] as Json;
      const resp = new PB().string(1, r.description);
      if (r.schema) resp.msg(2, new PB().msg(1, pbSchema(r.schema as Json)));
      pbExtensions(resp, 5, r);
      rs.msg(1, new PB().string(1, code).msg(2, new PB().msg(1, resp)));
    }
    pbExtensions(rs, 2, op.responses as Json);
    pb.msg(9, rs);
  }
  pb.strings(10, op.schemes).bool(11, op.deprecated);
  pbExtensions(pb, 13, op);
  return pb;
}

const PATH_ITEM_FIELDS: Record<string, number> = { get: 2, put: 3, post: 4, delete: 5, options: 6, head: 7, patch: 8 };

function pbPathItem(item: Json): PB {
  const pb = new PB().string(1, item.$ref);
  for (const [method, field] of Object.entries(PATH_ITEM_FIELDS)) if (item[method]) pb.msg(field, pbOperation(item[method] as Json));
  if (Array.isArray(item.parameters)) for (const p of item.parameters) pb.msg(9, pbParametersItem(p as Json));
  pbExtensions(pb, 10, item);
  return pb;
}

/**
 * Encodes a Swagger 2.0 JSON document as gnostic's openapi_v2.Document protobuf message (what kube-apiserver
 * answers for application/com.github.proto-openapi.spec.v2@v1.0+protobuf): fields in field-number order,
 * maps as repeated Named* pairs in document order, unmodelled values (defaults, enums, examples, vendor
 * extensions) as Any{yaml}.
 */
export function encodeOpenAPIV2Protobuf(doc: Json): Buffer {
  const pb = new PB().string(1, doc.swagger);
  if (doc.info) {
    const info = new PB().string(1, doc.info.title).string(2, doc.info.version).string(3, doc.info.description).string(4, doc.info.termsOfService);
    pbExtensions(info, 7, doc.info as Json);
    pb.msg(2, info);
  }
  pb.string(3, doc.host).string(4, doc.basePath).strings(5, doc.schemes).strings(6, doc.consumes).strings(7, doc.produces);
  if (doc.paths) {
    const paths = new PB();
    pbExtensions(paths, 1, doc.paths as Json);
    for (const [path, item] of Object.entries(doc.paths as Json)) if (path.startsWith('/')) paths.msg(2, new PB().string(1, path).msg(2, pbPathItem(item as Json)));
    pb.msg(8, paths);
  }
  if (doc.definitions) {
    const defs = new PB();
    for (const [name, schema] of Object.entries(doc.definitions as Json)) defs.msg(1, new PB().string(1, name).msg(2, pbSchema(schema as Json)));
    pb.msg(9, defs);
  }
  if (doc.parameters) {
    const params = new PB();
    for (const [name, p] of Object.entries(doc.parameters as Json)) params.msg(1, new PB().string(1, name).msg(2, pbParameter(p as Json)));
    pb.msg(10, params);
  }
  if (Array.isArray(doc.security)) {
    for (const req of doc.security as Json[]) {
      const r = new PB();
      for (const [name, scopes] of Object.entries(req)) r.msg(1, new PB().string(1, name).msg(2, new PB().strings(1, scopes)));
      pb.msg(12, r);
    }
  }
  if (doc.securityDefinitions) {
    const sd = new PB();
    for (const [name, def] of Object.entries(doc.securityDefinitions as Json)) {
      const d = def as Json;
      let item: PB | undefined;
      if (d.type === 'apiKey') {
        const s = new PB().string(1, d.type).string(2, d.name).string(3, d.in).string(4, d.description);
        pbExtensions(s, 5, d);
        item = new PB().msg(2, s);
      } else if (d.type === 'basic') {
        const s = new PB().string(1, d.type).string(2, d.description);
        pbExtensions(s, 3, d);
        item = new PB().msg(1, s);
      }
      if (item) sd.msg(1, new PB().string(1, name).msg(2, item));
    }
    pb.msg(13, sd);
  }
  pbExtensions(pb, 16, doc);
  return pb.finish();
}

// ---------------------------------------------------------------------------------------------------------
// Serving
// ---------------------------------------------------------------------------------------------------------

/** What client-go asks /openapi/v2 for. */
export const OPENAPI_V2_PROTOBUF_ACCEPT = 'application/com.github.proto-openapi.spec.v2@v1.0+protobuf';
/** The Content-Type kube-apiserver answers protobuf with (whichever of the two protobuf subtypes was asked). */
export const OPENAPI_V2_PROTOBUF_CONTENT_TYPE = 'application/com.github.proto-openapi.spec.v2.v1.0+protobuf';

function sha512Hex(data: string | Buffer): string {
  return createHash('sha512').update(data).digest('hex').toUpperCase();
}

/** The documents and their encodings, built once per (kinds, definitions). */
export class OpenAPIDocuments {
  readonly v2: Json;
  readonly v2Json: string;
  /** Unquoted ETag of /openapi/v2 (JSON and protobuf alike). */
  readonly v2Hash: string;
  private v2Pb: Buffer | undefined;
  readonly v3: Map<string, { json: string; hash: string }>;
  readonly v3Index: string;

  constructor(kinds: readonly KindDecl[], definitions: Definitions, opts: OpenAPIOptions = {}) {
    this.v2 = buildOpenAPIV2(kinds, definitions, opts);
    this.v2Json = JSON.stringify(this.v2);
    this.v2Hash = sha512Hex(this.v2Json);
    this.v3 = new Map();
    for (const [key, doc] of buildOpenAPIV3(kinds, definitions, opts)) {
      const json = JSON.stringify(doc);
      this.v3.set(key, { json, hash: sha512Hex(json) });
    }
    const paths: Json = {};
    for (const [key, { hash }] of this.v3) paths[key] = { serverRelativeURL: v3URL(key, hash) };
    this.v3Index = JSON.stringify({ paths });
  }

  /** The protobuf encoding of /openapi/v2 (encoded on first use). */
  get v2Protobuf(): Buffer {
    return (this.v2Pb ??= encodeOpenAPIV2Protobuf(this.v2));
  }

  /** The v3 document of a group-version key as parsed JSON. */
  v3Document(key: string): Json | undefined {
    const d = this.v3.get(key);
    return d ? (JSON.parse(d.json) as Json) : undefined;
  }
}

/** /openapi/v2 with other servers' documents merged in (the aggregation layer): their paths and definitions added, ours kept. */
interface MergedV2 {
  v2Json: string;
  v2Hash: string;
  readonly v2Protobuf: Buffer;
}

const mergedCache = new WeakMap<readonly Json[], WeakMap<OpenAPIDocuments, MergedV2>>();

function mergedV2(docs: OpenAPIDocuments, extra: readonly Json[]): MergedV2 {
  let byDocs = mergedCache.get(extra);
  if (!byDocs) mergedCache.set(extra, (byDocs = new WeakMap()));
  let m = byDocs.get(docs);
  if (!m) {
    const doc: Json = { ...docs.v2, paths: { ...(docs.v2['paths'] ?? {}) }, definitions: { ...(docs.v2['definitions'] ?? {}) } };
    for (const other of extra) {
      for (const [k, v] of Object.entries((other['paths'] ?? {}) as Json)) if (!(k in doc['paths'])) doc['paths'][k] = v;
      for (const [k, v] of Object.entries((other['definitions'] ?? {}) as Json)) if (!(k in doc['definitions'])) doc['definitions'][k] = v;
    }
    doc['paths'] = Object.fromEntries(Object.entries(doc['paths'] as Json).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
    doc['definitions'] = Object.fromEntries(Object.entries(doc['definitions'] as Json).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
    const v2Json = JSON.stringify(doc);
    let pb: Buffer | undefined;
    m = {
      v2Json,
      v2Hash: sha512Hex(v2Json),
      get v2Protobuf() {
        return (pb ??= encodeOpenAPIV2Protobuf(doc));
      },
    };
    byDocs.set(docs, m);
  }
  return m;
}

const v3URL = (key: string, hash: string) => `/openapi/v3/${key}?hash=${hash}`;

const documentCache = new WeakMap<readonly KindDecl[], WeakMap<Definitions, Map<string, OpenAPIDocuments>>>();

/** The cached documents of a set of kinds and definitions (one build per pair of objects and version). */
export function openAPIDocuments(kinds: readonly KindDecl[], definitions: Definitions, opts: OpenAPIOptions = {}): OpenAPIDocuments {
  let byDefs = documentCache.get(kinds);
  if (!byDefs) documentCache.set(kinds, (byDefs = new WeakMap()));
  let byVersion = byDefs.get(definitions);
  if (!byVersion) byDefs.set(definitions, (byVersion = new Map()));
  const key = opts.version ?? '';
  let docs = byVersion.get(key);
  if (!docs) byVersion.set(key, (docs = new OpenAPIDocuments(kinds, definitions, opts)));
  return docs;
}

export interface OpenAPIRequest {
  /** URL path without query: /openapi/v2, /openapi/v3, /openapi/v3/<key>. */
  path: string;
  /** The query string (without '?') or parsed parameters; only `hash` is read. */
  query?: string | URLSearchParams;
  accept?: string;
  ifNoneMatch?: string;
}

export interface OpenAPIResponse {
  /** 200, 304 (If-None-Match), 301 (stale v3 hash: see Location), 404 (unknown document), 406 (no acceptable type). */
  status: 200 | 301 | 304 | 404 | 406;
  body: Buffer | string;
  /** The Content-Type of a 200 answer. */
  contentType?: string;
  /** The quoted ETag. */
  etag?: string;
  /** Every header to send, Content-Type included. */
  headers: Record<string, string>;
}

/** http.ServeContent's If-None-Match check: '*' or any listed (weakly compared) ETag. */
function noneMatch(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  const strip = (t: string) => t.trim().replace(/^W\//, '');
  return header.split(',').some((t) => t.trim() === '*' || strip(t) === strip(etag));
}

function answer(body: Buffer | string, contentType: string, hash: string, ifNoneMatch: string | undefined, extra: Record<string, string> = {}): OpenAPIResponse {
  const etag = JSON.stringify(hash);
  const headers: Record<string, string> = { ...extra, ETag: etag };
  if (noneMatch(ifNoneMatch, etag)) return { status: 304, body: '', etag, headers };
  return { status: 200, body, contentType, etag, headers: { ...headers, 'Content-Type': contentType } };
}

const notAcceptable = (extra: Record<string, string> = {}): OpenAPIResponse => ({ status: 406, body: '', headers: extra });
const notFound = (): OpenAPIResponse => ({ status: 404, body: '404 page not found\n', headers: { 'Content-Type': 'text/plain; charset=utf-8' } });

/**
 * Answers a GET under /openapi/ as kube-apiserver (kube-openapi's handlers) does; undefined for other paths.
 *
 * /openapi/v2: Accept negotiated among application/json and the two protobuf subtypes (first acceptable
 * clause in goautoneg order; no Accept means any); `Vary: Accept`. /openapi/v3: the JSON index.
 * /openapi/v3/<key>: JSON only (kubectl and client-go ask for JSON; the v3 protobuf form is not served and
 * counts as not acceptable); `?hash=` checked against the document's hash.
 */
export function serveOpenAPI(
  kinds: readonly KindDecl[],
  definitions: Definitions,
  req: OpenAPIRequest,
  opts: OpenAPIOptions = {},
  extraV2?: readonly Json[],
): OpenAPIResponse | undefined {
  const path = req.path.replace(/\/+$/, '');
  if (path !== '/openapi/v2' && path !== '/openapi/v3' && !path.startsWith('/openapi/v3/')) return undefined;
  const docs = openAPIDocuments(kinds, definitions, opts);
  const clauses = parseAccept(req.accept || '*/*');

  if (path === '/openapi/v2') {
    const v2 = extraV2?.length ? mergedV2(docs, extraV2) : docs;
    const vary = { Vary: 'Accept' };
    for (const clause of clauses) {
      if (clauseMatches(clause, 'application', 'json')) return answer(v2.v2Json, 'application/json', v2.v2Hash, req.ifNoneMatch, vary);
      if (clauseMatches(clause, 'application', 'com.github.proto-openapi.spec.v2@v1.0+protobuf') || clauseMatches(clause, 'application', 'com.github.proto-openapi.spec.v2.v1.0+protobuf')) {
        return answer(v2.v2Protobuf, OPENAPI_V2_PROTOBUF_CONTENT_TYPE, v2.v2Hash, req.ifNoneMatch, vary);
      }
    }
    return notAcceptable(vary);
  }

  if (path === '/openapi/v3') return answer(docs.v3Index, 'application/json', sha512Hex(docs.v3Index), req.ifNoneMatch);

  const key = path.slice('/openapi/v3/'.length);
  const doc = docs.v3.get(key);
  if (!doc) return notFound();
  if (!clauses.some((c) => clauseMatches(c, 'application', 'json'))) return notAcceptable({ Vary: 'Accept' });
  const params = typeof req.query === 'string' ? new URLSearchParams(req.query) : (req.query ?? new URLSearchParams());
  const hash = params.get('hash');
  const extra: Record<string, string> = { Vary: 'Accept' };
  if (hash) {
    if (hash !== doc.hash) {
      const location = v3URL(key, doc.hash);
      return { status: 301, body: `<a href="${location}">Moved Permanently</a>.\n\n`, headers: { Location: location, 'Content-Type': 'text/html; charset=utf-8' } };
    }
    extra['Cache-Control'] = 'public, immutable';
    extra.Expires = new Date(Date.now() + 365 * 24 * 3600 * 1000).toUTCString();
  }
  return answer(doc.json, 'application/json', doc.hash, req.ifNoneMatch, extra);
}
