/**
 * The verbs on resources: one generic handler for every kind, driven by the kind's declaration and the
 * generic store. Query parameters, bodies and answers follow Kubernetes; spec document 1's rules on
 * delete answers come from the declaration's `responses`.
 */
import { yaml } from '../util/yaml.js';
import { StatusError, apiErrors } from '../registry/errors.js';
import type { KObject, KindDecl, WriteSubresource } from '../registry/kind.js';
import { apiVersionOf } from '../registry/kind.js';
import type { Registry } from '../registry/registry.js';
import type { DeleteOptions, ListOptions, RequestScope, ResourceStore, WatchOptions } from '../registry/store.js';
import { tryParseSelector } from '../util/fields.js';
import { tryParse as tryParseLabels } from '../util/labels.js';
import { forbidden, notSupported, required, root, validateFieldManager, type FieldError } from '../util/validation.js';
import { applyObject } from '../registry/apply.js';
import { PATCH_TYPES } from '../registry/patch.js';
import { bodyFormat, contentType, readBody } from './body.js';
import { getAuditRecorder, getUser, type ApiRequest, type ApiResponse } from './http.js';
import { parseBoolParam, type RequestInfo } from './requestinfo.js';
import { ORCH_PROTOBUF, PROTOBUF, isProtobuf, setWarnings, writeBody, writeEncoded, writeError, type MediaType, type Output } from './respond.js';
import { serveWatch } from './watchstream.js';
import { withSelfLink } from './selflink.js';
import { negotiateOutput, transformObject, watchEventTransformer, type OutputNegotiation } from './table.js';
import { applyPatch } from './patching.js';
import { applyFieldValidation, cannotBeHandledMessage, checkFields, fieldValidationDirective, parseBody, unrecognizedObjectMessage } from '../registry/decode.js';
import type { Definitions } from '../registry/schema.js';
import { refSchema } from '../registry/managedfields.js';
import { canEncodeProtobuf, decodeKubernetesProtobuf } from '../registry/protobuf.js';
import { DEFAULT_VERBS, type SubresourceContext } from '../registry/kind.js';
import { decodeActionBody, serveConnector, type AgentTransport } from './connect.js';
import { serveProxy } from './proxy.js';

export interface ResourceDeps {
  registry: Registry;
  /** Ends long-running requests (watches) when the server stops. */
  signal?: AbortSignal;
  /** --min-request-timeout in seconds: watches without timeoutSeconds last between it and twice it. */
  minRequestTimeoutSeconds?: number;
  log?: (message: string) => void;
  /** How connectors (pods/log) reach node agents. */
  agentTransport?: AgentTransport;
  /** Feature gate RemoveSelfLink off: answers carry metadata.selfLink (src/endpoints/selflink.ts). */
  selfLink?: boolean;
}

/**
 * Serves a resource request (info.isResourceRequest) for a group/version the registry knows. `found`: the
 * registry's store of the request's resource when the caller looked it up already.
 */
export async function serveResource(
  req: ApiRequest,
  res: ApiResponse,
  info: RequestInfo,
  query: URLSearchParams,
  deps: ResourceDeps,
  found?: ResourceStore,
): Promise<void> {
  const pretty = parseBoolParam(query.get('pretty')) ?? false;
  let out: Output = { mediaType: 'application/json', pretty };
  try {
    const accept = header(req, 'accept');
    const store = found ?? deps.registry.store(info.apiGroup, info.apiVersion, info.resource);
    const neg = negotiated(accept, !store || servesProtobuf(store.decl));
    if (neg.target === 'notAcceptable') throw notAcceptable(accept);
    out = { mediaType: neg.mediaType as MediaType, pretty };
    const includeObject = query.get('includeObject') ?? '';
    if (!store) throw notFoundPath();
    const decl = store.decl;
    const link = deps.selfLink ? (v: KObject): KObject => withSelfLink(v, decl, info.path) : unchanged;
    const scope: RequestScope = { namespace: decl.namespaced ? info.namespace : '', user: getUser(req) };
    const audit = getAuditRecorder(req);
    if (audit) scope.auditAnnotate = (key, value) => audit.addAnnotation(key, value);
    if (decl.namespaced && info.namespace === '' && info.verb !== 'list' && info.verb !== 'watch') throw notFoundPath();
    if (!decl.namespaced && info.parts.length > 0 && info.namespace !== '' && info.resource !== 'namespaces') throw notFoundPath();
    const sub = info.subresource;
    if (sub !== '' && !(decl.subresources && sub in decl.subresources) && !decl.actions?.[sub] && !decl.connectors?.[sub]) throw notFoundPath();
    if (decl.actions?.[sub] || decl.connectors?.[sub]) return await serveSubresourceHandler(req, res, info, query, deps, store, scope, out);
    const warnings: string[] = [];
    scope.fieldManager = query.get('fieldManager') || managerFromUserAgent(header(req, 'user-agent'));
    if (info.subresource === '' && !(decl.verbs ?? DEFAULT_VERBS).includes(info.verb)) throw methodNotAllowed(store, req.method ?? '');
    switch (info.verb) {
      case 'get': {
        const rv = query.get('resourceVersion') ?? undefined;
        if (neg.target === 'object' && out.mediaType === 'application/json' && !pretty && !deps.selfLink) {
          // Plain compact JSON: the stored bytes with the resourceVersion put in, when they allow it.
          const got = await store.getJSON(scope, info.name, rv);
          if (Buffer.isBuffer(got)) {
            getAuditRecorder(req)?.logResponseObject(got);
            return writeEncoded(res, 200, got, out.mediaType, req.method);
          }
          return writeConverted(res, got, decl, neg, includeObject, out, req.method);
        }
        return writeConverted(res, link(await store.get(scope, info.name, rv)), decl, neg, includeObject, out, req.method);
      }
      case 'list':
        return writeConverted(res, link(await store.list(scope, listOptions(query))), decl, neg, includeObject, out, req.method);
      case 'watch': {
        const transform = watchEventTransformer(decl, neg, { includeObject });
        return await serveWatch(req, res, store, scope, watchOptions(query), transform, timeoutSeconds(query, deps), deps.signal, isProtobuf(out.mediaType) ? out.mediaType : undefined);
      }
      case 'create': {
        if (info.name !== '') throw methodNotAllowed(store, 'POST');
        scope.dryRun = dryRun(query, 'CreateOptions');
        checkFieldManager(query, 'CreateOptions');
        const obj = await decodeObject(req, decl, query, warnings, deps.registry.definitions, 'CreateOptions');
        getAuditRecorder(req)?.logRequestObject(obj);
        // The decoded body is ours alone: the store may fill it in rather than copy it.
        const created = decl.compute ? await store.compute(scope, obj) : await store.create(scope, obj, warnings, true);
        setWarnings(res, warnings);
        return writeBody(res, 201, link(created), out);
      }
      case 'update': {
        scope.dryRun = dryRun(query, 'UpdateOptions');
        checkFieldManager(query, 'UpdateOptions');
        const obj = await decodeObject(req, decl, query, warnings, deps.registry.definitions, 'UpdateOptions');
        getAuditRecorder(req)?.logRequestObject(obj);
        const result = await store.update(scope, info.name, () => obj, { subresource: info.subresource }, warnings);
        setWarnings(res, warnings);
        return writeBody(res, result.created ? 201 : 200, link(result.object), out);
      }
      case 'patch': {
        const type = contentType(req);
        if (!PATCH_TYPES.includes(type as (typeof PATCH_TYPES)[number])) throw unsupportedPatchMediaType();
        scope.dryRun = dryRun(query, 'PatchOptions');
        checkFieldManager(query, 'PatchOptions');
        if (type === 'application/apply-patch+yaml' && !query.get('fieldManager')) {
          throw invalidOptions('PatchOptions', [required(root('fieldManager'), 'is required for apply patch')]);
        }
        const force = boolParam(query, 'force');
        if (force !== undefined && type !== 'application/apply-patch+yaml') {
          throw invalidOptions('PatchOptions', [forbidden(root('force'), 'may not be specified for non-apply patch')]);
        }
        const directive = fieldValidationDirective(query.get('fieldValidation') ?? undefined, 'PatchOptions');
        const body = await readBody(req);
        getAuditRecorder(req)?.logRequestPatch(body);
        if (type === 'application/apply-patch+yaml') {
          const result = await serverSideApply(store, scope, info.name, info.subresource, body, force ?? false, deps.registry.definitions, warnings);
          setWarnings(res, warnings);
          return writeBody(res, result.created ? 201 : 200, link(result.object), out);
        }
        const result = await store.update(
          scope,
          info.name,
          (current) => {
            if (!current) throw apiErrors.notFound(store.gr, info.name);
            return applyPatch(type, current, body, decl, deps.registry.definitions, directive, warnings, keptBy(decl, info.subresource));
          },
          // The patched object is made from the store's own copy of the current one (applyPatch).
          { subresource: info.subresource, fresh: true },
          warnings,
        );
        setWarnings(res, warnings);
        return writeBody(res, result.created ? 201 : 200, link(result.object), out);
      }
      case 'delete': {
        if (info.subresource !== '') throw methodNotAllowed(store, 'DELETE');
        const opts = await deleteOptions(req, query, (raw) => auditDeleteOptions(req, raw));
        scope.dryRun = opts.dryRun;
        const { object, deleted } = await store.delete(scope, info.name, opts.options);
        if (decl.responses?.delete === 'Status') return writeBody(res, 200, deleteStatus(decl, object), out);
        return writeBody(res, opts.orphanDependents === false && !deleted ? 202 : 200, link(object), out);
      }
      case 'deletecollection': {
        const opts = await deleteOptions(req, query, (raw) => auditDeleteOptions(req, raw));
        scope.dryRun = opts.dryRun;
        const items = await store.deleteCollection(scope, listOptions(query), opts.options);
        if (decl.responses?.deleteCollection === 'Status') {
          return writeBody(res, 200, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success' }, out);
        }
        return writeBody(res, 200, link({ kind: decl.listKind, apiVersion: apiVersionOf(decl), metadata: {}, items }), out);
      }
      default:
        throw methodNotAllowed(store, req.method ?? '');
    }
  } catch (err) {
    writeError(res, err, out, deps.log);
  }
}

/** A POST to an action subresource (binding, eviction) or a GET of a connector (log). */
async function serveSubresourceHandler(
  req: ApiRequest,
  res: ApiResponse,
  info: RequestInfo,
  query: URLSearchParams,
  deps: ResourceDeps,
  store: ResourceStore,
  scope: RequestScope,
  out: Output,
): Promise<void> {
  const decl = store.decl;
  const ctx: SubresourceContext = {
    store,
    lookup: (group, resource) => deps.registry.storeOfResource(group, resource),
    scope,
    settings: deps.registry.settings,
  };
  const action = decl.actions?.[info.subresource];
  if (action) {
    if (info.verb !== 'create') throw methodNotAllowed(store, req.method ?? '');
    scope.dryRun = dryRun(query, 'CreateOptions');
    const body = await decodeActionBody(req, action, deps.registry.definitions);
    const warnings: string[] = [];
    await store.admitAction(scope, info.name, info.subresource, body, warnings);
    const answer = await action.create(ctx, info.name, body);
    setWarnings(res, warnings);
    return writeBody(res, answer.status, answer.body, out);
  }
  const connector = decl.connectors![info.subresource]!;
  if (connector.proxy) {
    if (!connector.proxy.methods.includes(req.method ?? '')) throw methodNotAllowed(store, req.method ?? '');
    return serveProxy(req, res, connector, ctx, info.name, info.subresource, info.parts.slice(3).join('/'), deps.agentTransport ?? {});
  }
  if (!connector.verbs.includes(info.verb)) throw methodNotAllowed(store, req.method ?? '');
  await serveConnector(req, res, connector, ctx, info.name, info.subresource, query, deps.agentTransport ?? {});
}

const unchanged = (v: KObject): KObject => v;

/**
 * The manager of a write without fieldManager, as Kubernetes' prefixFromUserAgent: the user agent up to its
 * first '/', without non-printable characters, at most 128 bytes of UTF-8.
 */
function managerFromUserAgent(ua: string | undefined): string {
  const text = ua ?? '';
  const slash = text.indexOf('/');
  const prefix = slash < 0 ? text : text.slice(0, slash);
  // Printable ASCII (a space, letters, digits, punctuation and symbols) is kept as it is, one byte each.
  if (prefix.length <= 128 && isPrintableASCII(prefix)) return prefix;
  let out = '';
  let bytes = 0;
  for (const ch of prefix) {
    if (!/^[\p{L}\p{M}\p{N}\p{P}\p{S} ]$/u.test(ch)) continue;
    const n = Buffer.byteLength(ch);
    if (bytes + n > 128) break;
    out += ch;
    bytes += n;
  }
  return out;
}

function isPrintableASCII(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

/** PATCH with application/apply-patch+yaml: the structured merge of the applied configuration. */
async function serverSideApply(
  store: ResourceStore,
  scope: RequestScope,
  name: string,
  subresource: string,
  body: Buffer,
  force: boolean,
  defs: Definitions,
  warnings: string[],
): Promise<{ object: KObject; created: boolean }> {
  const decl = store.decl;
  const parsed = parseBody(body, 'yaml', decl.kind);
  if (parsed.value === null || typeof parsed.value !== 'object' || Array.isArray(parsed.value)) {
    throw apiErrors.badRequest('error decoding YAML: the applied configuration must be an object');
  }
  const applied = parsed.value as KObject;
  if (applied.metadata?.name !== undefined && applied.metadata.name !== name) {
    throw apiErrors.badRequest(`the name of the object (${String(applied.metadata.name)}) does not match the name on the URL (${name})`);
  }
  const manager = scope.fieldManager!;
  return store.update(
    { ...scope, applied: true },
    name,
    (current) => {
      const now = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
      const result = applyObject(
        current,
        applied,
        manager,
        force,
        current?.metadata?.managedFields,
        refSchema(decl.definition),
        defs,
        apiVersionOf(decl),
        subresource,
        now,
        {
          kind: decl.kind,
          ignored: store.ignoredFields(subresource),
          ...(store.fieldManager ? { emptyObject: store.fieldManager.zero, converter: store.fieldManager.converter } : {}),
        },
      );
      const obj = result.object as KObject;
      if (!obj.metadata?.name) (obj.metadata ??= {}).name = name;
      return obj;
    },
    { subresource, forceAllowCreate: subresource === '' },
    warnings,
  );
}

function header(req: ApiRequest, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v.join(',') : v;
}

export function notFoundPath(): StatusError {
  const e = apiErrors.notFound({ group: '', resource: '' }, '');
  e.status.message = 'the server could not find the requested resource';
  e.status.details = {};
  return e;
}

/** The router's 405 for a method no route of the path takes (go-restful's generic answer). */
function methodNotAllowed(_store: ResourceStore, _method: string): StatusError {
  const e = apiErrors.methodNotSupported({ group: '', resource: '' }, '');
  e.status.message = 'the server does not allow this method on the requested resource';
  e.status.details = {};
  return e;
}

const SERVED_MEDIA_TYPES = 'application/json, application/yaml, application/vnd.kubernetes.protobuf';
const WITH_PROTOBUF = ['application/json', 'application/yaml', PROTOBUF, ORCH_PROTOBUF];

/** Whether a kind has protobuf descriptors; kinds without are served as JSON or YAML only, as Kubernetes serves CRDs. */
const protobufKinds = new WeakMap<KindDecl, boolean>();
function servesProtobuf(decl: KindDecl): boolean {
  let can = protobufKinds.get(decl);
  if (can === undefined) protobufKinds.set(decl, (can = canEncodeProtobuf(apiVersionOf(decl), decl.kind)));
  return can;
}

/** Recent negotiations by Accept header (clients send the same few): the answer of negotiate() for it. */
const negotiations = new Map<string, OutputNegotiation>();
const MAX_NEGOTIATIONS = 256;

/** The answer's form for an Accept header; conversions (Table, PartialObjectMetadata) as JSON or YAML only. */
function negotiated(accept: string | undefined, protobuf: boolean): OutputNegotiation {
  const key = `${protobuf ? 'p' : 'j'}${accept ?? ''}`;
  let neg = negotiations.get(key);
  if (neg) return neg;
  neg = negotiateOutput(accept, protobuf ? WITH_PROTOBUF : undefined);
  if (neg.target !== 'object' && neg.target !== 'notAcceptable' && isProtobuf(neg.mediaType)) neg = negotiateOutput(accept);
  if (negotiations.size >= MAX_NEGOTIATIONS) negotiations.clear();
  negotiations.set(key, Object.freeze(neg));
  return neg;
}

/**
 * A 406: the router's own when no clause names a media type we serve at all; the negotiator's, listing what
 * is served, when one does but asks for a form (conversion, version) we cannot produce.
 */
function notAcceptable(accept: string | undefined): StatusError {
  const types = (accept ?? '').split(',').map((c) => c.split(';')[0]!.trim().toLowerCase());
  const served = types.some((t) => ['*/*', 'application/*', 'application/json', 'application/yaml', PROTOBUF, ORCH_PROTOBUF].includes(t));
  if (!served) {
    const e = apiErrors.notAcceptable('406: Not Acceptable');
    e.status.details = {};
    return e;
  }
  return apiErrors.notAcceptable(`only the following media types are accepted: ${SERVED_MEDIA_TYPES}`);
}

/** The router's 415 for a PATCH whose Content-Type no patch route consumes. */
/** The top-level fields a write through `subresource` takes from the stored object (SubresourceStrategy.keeps). */
function keptBy(decl: KindDecl, subresource: string): readonly string[] | undefined {
  return subresource === '' ? undefined : decl.subresources?.[subresource as WriteSubresource]?.keeps;
}

function unsupportedPatchMediaType(): StatusError {
  const e = apiErrors.unsupportedMediaType('415: Unsupported Media Type');
  e.status.details = {};
  return e;
}

function writeConverted(
  res: ApiResponse,
  value: KObject,
  decl: KindDecl,
  neg: OutputNegotiation,
  includeObject: string,
  out: Output,
  method?: string,
): void {
  writeBody(res, 200, transformObject(decl, value, neg, { includeObject }), out, method);
}

/** The Status a delete answers with where the declaration says so (Namespace, per spec document 1). */
function deleteStatus(decl: KindDecl, obj: KObject): KObject {
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Success',
    details: { name: obj.metadata?.name, group: decl.group || undefined, kind: decl.resource, uid: obj.metadata?.uid },
  };
}

function intParam(query: URLSearchParams, name: string): number | undefined {
  const v = query.get(name);
  if (v === null || v === '') return undefined;
  if (!/^[+-]?[0-9]+$/.test(v)) throw apiErrors.badRequest(`strconv.ParseInt: parsing ${JSON.stringify(v)}: invalid syntax`);
  return Number(v);
}

function boolParam(query: URLSearchParams, name: string): boolean | undefined {
  const v = query.get(name);
  if (v === null) return undefined;
  const b = parseBoolParam(v);
  if (b === undefined) throw apiErrors.badRequest(`invalid value for ${name}: ${JSON.stringify(v)}: must be a boolean`);
  return b;
}

export function listOptions(query: URLSearchParams): ListOptions {
  const opts: ListOptions = {};
  const ls = query.get('labelSelector');
  if (ls) {
    const sel = tryParseLabels(ls);
    if (sel instanceof Error) throw apiErrors.badRequest(sel.message);
    opts.labelSelector = sel;
  }
  const fs = query.get('fieldSelector');
  if (fs) {
    const sel = tryParseSelector(fs);
    if (sel instanceof Error) throw apiErrors.badRequest(sel.message);
    opts.fieldSelector = sel;
  }
  const limit = intParam(query, 'limit');
  if (limit !== undefined) opts.limit = limit;
  const cont = query.get('continue');
  if (cont) opts.continue = cont;
  const rv = query.get('resourceVersion');
  if (rv !== null) opts.resourceVersion = rv;
  const match = query.get('resourceVersionMatch');
  if (match) opts.resourceVersionMatch = match;
  return opts;
}

function watchOptions(query: URLSearchParams): WatchOptions {
  const opts: WatchOptions = listOptions(query);
  opts.allowWatchBookmarks = boolParam(query, 'allowWatchBookmarks') ?? false;
  const sie = boolParam(query, 'sendInitialEvents');
  if (sie !== undefined) opts.sendInitialEvents = sie;
  return opts;
}

/** timeoutSeconds, or a random time between --min-request-timeout and twice it, as Kubernetes. */
function timeoutSeconds(query: URLSearchParams, deps: ResourceDeps): number {
  const t = intParam(query, 'timeoutSeconds');
  if (t !== undefined && t > 0) return t;
  const min = deps.minRequestTimeoutSeconds ?? 1800;
  return min + Math.floor(Math.random() * min);
}

function invalidOptions(kind: string, errs: FieldError[]): StatusError {
  return apiErrors.invalid('meta.k8s.io', kind, '', errs);
}

function dryRun(query: URLSearchParams, kind: string): boolean {
  if (!query.has('dryRun')) return false;
  const values = query.getAll('dryRun').flatMap((v) => v.split(','));
  if (values.length === 0) return false;
  for (const v of values) {
    if (v !== 'All') throw invalidOptions(kind, [notSupported(root('dryRun'), v, ['All'])]);
  }
  return true;
}

function checkFieldManager(query: URLSearchParams, kind: string): void {
  const fm = query.get('fieldManager');
  if (fm === null) return;
  const errs = validateFieldManager(fm, root('fieldManager'));
  if (errs.length > 0) throw invalidOptions(kind, errs);
}

/** Decodes an object body of the kind, refusing other kinds and API versions as Kubernetes does. */
/**
 * Decodes an object body of the kind as Kubernetes' create and update handlers do: parse (400), the kind and
 * version the body names (400 for another), the typed decoding against the schema (unknown fields dropped,
 * wrong types a 400), then the fieldValidation directive (Strict 400, Warn headers, Ignore).
 */
async function decodeObject(
  req: ApiRequest,
  decl: KindDecl,
  query: URLSearchParams,
  warnings: string[],
  defs: Definitions,
  optionsKind: 'CreateOptions' | 'UpdateOptions',
): Promise<KObject> {
  const format = bodyFormat(req);
  const directive = fieldValidationDirective(query.get('fieldValidation') ?? undefined, optionsKind);
  const body = await readBody(req);
  const apiVersion = apiVersionOf(decl);
  if (format === 'protobuf') {
    const obj = decodeKubernetesProtobuf(body, { apiVersion, kind: decl.kind }) as KObject;
    return withTypeMeta(obj, apiVersion, decl.kind);
  }
  const parsed = parseBody(body, format, decl.kind);
  if (parsed.value === null || typeof parsed.value !== 'object' || Array.isArray(parsed.value)) {
    throw apiErrors.badRequest(unrecognizedObjectMessage(decl.kind, "couldn't get version/kind; json parse error: json: cannot unmarshal " + (Array.isArray(parsed.value) ? 'array' : typeof parsed.value) + ' into Go value of type struct { APIVersion string "json:\\"apiVersion,omitempty\\""; Kind string "json:\\"kind,omitempty\\"" }', body));
  }
  const raw = parsed.value as KObject;
  const bodyKind = typeof raw.kind === 'string' && raw.kind !== '' ? raw.kind : decl.kind;
  if (raw.apiVersion !== undefined && raw.apiVersion !== '' && raw.apiVersion !== apiVersion) {
    throw apiErrors.badRequest(
      `${bodyKind} in version ${JSON.stringify(raw.apiVersion)} cannot be handled as a ${decl.kind}: no kind ${JSON.stringify(bodyKind)} is registered for version ${JSON.stringify(raw.apiVersion)} in scheme "k8s.io/kubernetes/pkg/api/legacyscheme/scheme.go:30"`,
    );
  }
  const [, version = apiVersion] = apiVersion.split('/');
  if (bodyKind !== decl.kind) {
    throw apiErrors.badRequest(
      `${bodyKind} in version ${JSON.stringify(apiVersion)} cannot be handled as a ${decl.kind}: converting (${version}.${bodyKind}) to (${decl.group === '' ? 'core' : decl.group.split('.')[0]}.${decl.kind}): unknown conversion`,
    );
  }
  // The kind's one schema reference object: the decoder's type cache is keyed by it.
  const checked = checkFields(raw, refSchema(decl.definition), defs, parsed);
  if (checked.decodeError !== undefined) throw apiErrors.badRequest(cannotBeHandledMessage(decl.kind, version, decl.kind, checked.decodeError));
  applyFieldValidation(directive, checked.problems, warnings, { bodyKind: decl.kind, bodyVersion: version, kind: decl.kind });
  return withTypeMeta(checked.pruned as KObject, apiVersion, decl.kind);
}

/**
 * `{ ...obj, apiVersion, kind }`, built by assignment. An object spread at a site that sees many shapes (every
 * kind's bodies come through here) makes V8 give each copy a map of its own, outside any transition tree: then
 * every property the request path adds to the object (status, managedFields...) makes yet another map, and
 * every property access on it misses its inline cache. Built by assignment, the copies of bodies of one shape
 * share their maps.
 */
function withTypeMeta(obj: KObject, apiVersion: string, kind: string): KObject {
  const keys = Object.keys(obj);
  // The usual body (apiVersion, kind, metadata, spec in this order): one literal, the same keys in the same order.
  if (keys.length === 4 && keys[0] === 'apiVersion' && keys[1] === 'kind' && keys[2] === 'metadata' && keys[3] === 'spec') {
    return { apiVersion, kind, metadata: obj.metadata, spec: obj.spec } as KObject;
  }
  const out: Record<string, unknown> = {};
  for (const key of keys) {
    const v = (obj as Record<string, unknown>)[key];
    // An own '__proto__' key (JSON.parse makes one) is copied as a property, as a spread copies it.
    if (key === '__proto__') Object.defineProperty(out, key, { value: v, enumerable: true, writable: true, configurable: true });
    else out[key] = v;
  }
  out['apiVersion'] = apiVersion;
  out['kind'] = kind;
  return out as KObject;
}

/**
 * Audit of a delete's or deletecollection's body, as kube-apiserver 1.23.17 records it (from level Request;
 * options given as query parameters are not recorded): the body is decoded as DeleteOptions whatever group
 * version it names, and encoded back through the meta-internal scheme, where DeleteOptions is an unversioned
 * type: its apiVersion is always meta.k8s.io/__internal, its fields in metav1.DeleteOptions order.
 */
function auditDeleteOptions(req: ApiRequest, raw: Record<string, any>): void {
  const audit = getAuditRecorder(req);
  if (!audit || (raw.kind !== undefined && raw.kind !== 'DeleteOptions')) return;
  const o: Record<string, unknown> = { kind: 'DeleteOptions', apiVersion: 'meta.k8s.io/__internal' };
  if (typeof raw.gracePeriodSeconds === 'number') o.gracePeriodSeconds = raw.gracePeriodSeconds;
  const pre = raw.preconditions as Record<string, unknown> | null | undefined;
  if (pre && typeof pre === 'object') {
    o.preconditions = {
      ...(typeof pre.uid === 'string' ? { uid: pre.uid } : {}),
      ...(typeof pre.resourceVersion === 'string' ? { resourceVersion: pre.resourceVersion } : {}),
    };
  }
  if (typeof raw.orphanDependents === 'boolean') o.orphanDependents = raw.orphanDependents;
  if (typeof raw.propagationPolicy === 'string') o.propagationPolicy = raw.propagationPolicy;
  if (Array.isArray(raw.dryRun) && raw.dryRun.length > 0) o.dryRun = raw.dryRun;
  audit.logRequestObject(o);
}

async function deleteOptions(
  req: ApiRequest,
  query: URLSearchParams,
  onBody?: (raw: Record<string, any>) => void,
): Promise<{ options: DeleteOptions; dryRun: boolean; orphanDependents?: boolean }> {
  const body = await readBody(req);
  let raw: Record<string, any> = {};
  if (body.length > 0) {
    const format = bodyFormat(req);
    try {
      raw = format === 'protobuf'
        ? (decodeKubernetesProtobuf(body, { apiVersion: 'meta.k8s.io/v1', kind: 'DeleteOptions' }) as Record<string, any>)
        : format === 'yaml' ? yaml().parse(body.toString('utf8')) : JSON.parse(body.toString('utf8'));
    } catch (err) {
      throw apiErrors.badRequest(`couldn't get version/kind; json parse error: ${(err as Error).message}`);
    }
    if (raw === null || typeof raw !== 'object') throw apiErrors.badRequest('the body of the request must be a DeleteOptions object');
    onBody?.(raw);
  }
  const options: DeleteOptions = {};
  const grace = intParam(query, 'gracePeriodSeconds') ?? raw.gracePeriodSeconds;
  if (grace !== undefined && grace !== null) options.gracePeriodSeconds = Number(grace);
  const policy = query.get('propagationPolicy') ?? raw.propagationPolicy;
  const errs: FieldError[] = [];
  if (policy !== undefined && policy !== null && policy !== '') {
    if (!['Orphan', 'Background', 'Foreground'].includes(policy)) {
      errs.push(notSupported(root('propagationPolicy'), policy, ['Foreground', 'Background', 'Orphan', 'nil']));
    } else options.propagationPolicy = policy;
  }
  const orphan = boolParam(query, 'orphanDependents') ?? raw.orphanDependents;
  if (orphan !== undefined && options.propagationPolicy !== undefined) {
    errs.push(notSupported(root('propagationPolicy'), policy, ['orphanDependents and propagationPolicy cannot both be set']));
  }
  if (orphan === true && options.propagationPolicy === undefined) options.propagationPolicy = 'Orphan';
  if (raw.preconditions && typeof raw.preconditions === 'object') options.preconditions = raw.preconditions;
  const dryRunValues = [...query.getAll('dryRun').flatMap((v) => v.split(',')), ...((raw.dryRun as string[] | undefined) ?? [])];
  for (const v of dryRunValues) if (v !== 'All') errs.push(notSupported(root('dryRun'), v, ['All']));
  if (errs.length > 0) throw invalidOptions('DeleteOptions', errs);
  return { options, dryRun: dryRunValues.length > 0, ...(orphan !== undefined ? { orphanDependents: orphan } : {}) };
}
