/**
 * API discovery, generated from kind declarations, in the forms kube-apiserver serves:
 *
 *  - legacy (unaggregated) documents: /api (APIVersions), /api/v1 and /apis/<g>/<v> (APIResourceList),
 *    /apis (APIGroupList), /apis/<g> (APIGroup), served as `application/json`;
 *  - aggregated documents (APIGroupDiscoveryList, apidiscovery.k8s.io v2 and v2beta1) at /api and /apis,
 *    served when the Accept header asks for them, with `Content-Type: application/json;g=apidiscovery.k8s.io;
 *    v=<v>;as=APIGroupDiscoveryList`, an ETag (quoted SHA-512 of the document), `Vary: Accept` and
 *    `Cache-Control: public`; `If-None-Match` with that ETag answers 304.
 *
 * What clients send: kubectl 1.27-1.29 (client-go) ask /api and /apis with
 *   `application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json`,
 * kubectl 1.30-1.33 with
 *   `application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json`.
 * client-go decides between the two forms by the response Content-Type (g, v and as parameters), so the
 * aggregated form must carry them; the legacy form is plain `application/json`.
 *
 * Everything here is pure: documents are built from `KindDecl[]` and cached per array of kinds.
 */
import { createHash } from 'node:crypto';
import { DEFAULT_VERBS, type KindDecl, type WriteSubresource } from '../registry/kind.js';

// ---------------------------------------------------------------------------------------------------------
// Accept header parsing (shared by the endpoints' content negotiation)
// ---------------------------------------------------------------------------------------------------------

/** One media range of an Accept header, as goautoneg parses it (type and subtype lower-cased). */
export interface AcceptClause {
  type: string;
  subType: string;
  q: number;
  params: Record<string, string>;
}

/**
 * Parses an Accept header into clauses ordered as Kubernetes orders them (munnerz/goautoneg): by q, highest
 * first, then concrete types before wildcards; otherwise in the order given. Malformed ranges are skipped.
 */
export function parseAccept(header: string): AcceptClause[] {
  const out: AcceptClause[] = [];
  for (const rawPart of header.split(',')) {
    const part = rawPart.trim();
    const pieces = part.split(';');
    const range = pieces[0] ?? '';
    const sp = range.split('/');
    const type = (sp[0] ?? '').trim().toLowerCase();
    let subType: string;
    if (sp.length === 1 && type === '*') subType = '*';
    else if (sp.length === 2) subType = (sp[1] ?? '').trim().toLowerCase();
    else continue;
    if (type === '') continue;
    const clause: AcceptClause = { type, subType, q: 1, params: {} };
    for (const param of pieces.slice(1)) {
      const eq = param.indexOf('=');
      if (eq < 0) continue;
      const key = param.slice(0, eq).trim();
      const value = param.slice(eq + 1).trim();
      if (key === 'q') {
        const q = Number.parseFloat(value);
        clause.q = Number.isNaN(q) ? 0 : q;
      } else {
        clause.params[key] = value;
      }
    }
    out.push(clause);
  }
  const rank = (c: AcceptClause) => (c.type === '*' ? 2 : c.subType === '*' ? 1 : 0);
  // Array.prototype.sort is stable: equal clauses keep the order the client gave.
  return out.sort((a, b) => b.q - a.q || rank(a) - rank(b));
}

/** Whether a clause's media range covers `type/subType`. */
export function clauseMatches(clause: AcceptClause, type: string, subType: string): boolean {
  return (
    (clause.type === type && clause.subType === subType) ||
    (clause.type === type && clause.subType === '*') ||
    (clause.type === '*' && clause.subType === '*')
  );
}

/** The conversion a clause asks for with its g, v and as parameters, if any (as apiserver's MediaTypeOptions.Convert). */
export function clauseConvert(clause: AcceptClause): { group: string; version: string; kind: string } | undefined {
  const { g, v, as } = clause.params;
  if (g === undefined && v === undefined && as === undefined) return undefined;
  return { group: g ?? '', version: v ?? '', kind: as ?? '' };
}

// ---------------------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------------------

/** Kubernetes' storage version hash: base64 of the first 8 bytes of sha256('<group>/<version>/<Kind>'). */
export function storageVersionHash(group: string, version: string, kind: string): string {
  return createHash('sha256').update(`${group}/${version}/${kind}`).digest().subarray(0, 8).toString('base64');
}

const KUBE_VERSION = /^v(\d+)(?:(alpha|beta)(\d+))?$/;

/**
 * apimachinery's CompareKubeAwareVersionStrings: > 0 when `a` sorts before `b`. GA before beta before alpha,
 * then higher major, then higher minor; versions not of the kube form (v<major>[alpha|beta<minor>]) after
 * all others, in lexicographic order.
 */
export function compareKubeAwareVersions(a: string, b: string): number {
  if (a === b) return 0;
  const ma = KUBE_VERSION.exec(a);
  const mb = KUBE_VERSION.exec(b);
  if (!ma && !mb) return a < b ? 1 : -1;
  if (!ma) return -1;
  if (!mb) return 1;
  const typeRank = (m: RegExpExecArray) => (m[2] === 'alpha' ? 0 : m[2] === 'beta' ? 1 : 2);
  if (typeRank(ma) !== typeRank(mb)) return typeRank(ma) - typeRank(mb);
  const majA = Number(ma[1]);
  const majB = Number(mb[1]);
  if (majA !== majB) return majA - majB;
  return Number(ma[3] ?? 0) - Number(mb[3] ?? 0);
}

function sortVersions(versions: Iterable<string>): string[] {
  return [...new Set(versions)].sort((a, b) => compareKubeAwareVersions(b, a));
}

/** The kube verbs of a kind's main resource, sorted as the apiserver lists them. */
export function kindVerbs(kind: KindDecl): string[] {
  return [...new Set(kind.verbs ?? DEFAULT_VERBS)].sort();
}

const SUBRESOURCE_VERBS: Record<WriteSubresource, string[]> = {
  status: ['get', 'patch', 'update'],
  ephemeralcontainers: ['get', 'patch', 'update'],
  finalize: ['update'],
  approval: ['get', 'patch', 'update'],
};

/** A subresource as discovery and OpenAPI list it. */
export interface SubresourceInfo {
  name: string;
  verbs: string[];
  /** 'write': status, finalize; 'action': a POST of `body` (binding, eviction); 'connect': log. */
  type: 'write' | 'action' | 'connect';
  /** The kind discovery names when it is not the parent's (group and version only when they differ). */
  kind?: { group?: string; version?: string; kind: string; definition: string };
}

/** The subresources a kind serves, in name order, with their verbs. */
export function kindSubresources(kind: KindDecl): SubresourceInfo[] {
  const out: SubresourceInfo[] = [];
  for (const name of ['approval', 'ephemeralcontainers', 'finalize', 'status'] as const) {
    if (kind.subresources?.[name]) out.push({ name, verbs: SUBRESOURCE_VERBS[name], type: 'write' });
  }
  for (const [name, a] of Object.entries(kind.actions ?? {})) {
    const b = a.bodyKinds[0]!;
    const other = b.group !== kind.group || b.version !== kind.version;
    out.push({ name, verbs: ['create'], type: 'action', kind: { ...(other ? { group: b.group, version: b.version } : {}), kind: b.kind, definition: b.definition } });
  }
  for (const [name, c] of Object.entries(kind.connectors ?? {})) {
    const options = c.options ? { kind: { kind: c.options.kind, definition: '' } } : {};
    out.push({ name, verbs: [...c.verbs], type: 'connect', ...options });
  }
  return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

function sha512Hex(text: string): string {
  return createHash('sha512').update(text).digest('hex').toUpperCase();
}

// ---------------------------------------------------------------------------------------------------------
// Legacy (unaggregated) documents
// ---------------------------------------------------------------------------------------------------------

export interface APIResource {
  name: string;
  singularName: string;
  namespaced: boolean;
  group?: string;
  version?: string;
  kind: string;
  verbs: string[];
  shortNames?: string[];
  categories?: string[];
  storageVersionHash?: string;
}

export interface APIResourceList {
  kind: 'APIResourceList';
  apiVersion?: 'v1';
  groupVersion: string;
  resources: APIResource[];
}

export interface GroupVersionForDiscovery {
  groupVersion: string;
  version: string;
}

export interface APIGroup {
  kind?: 'APIGroup';
  apiVersion?: 'v1';
  name: string;
  versions: GroupVersionForDiscovery[];
  preferredVersion: GroupVersionForDiscovery;
}

export interface APIGroupList {
  kind: 'APIGroupList';
  apiVersion: 'v1';
  groups: APIGroup[];
}

export interface APIVersions {
  kind: 'APIVersions';
  versions: string[];
  serverAddressByClientCIDRs: { clientCIDR: string; serverAddress: string }[];
}

/** The APIResource entries of one group version: main resources and subresources, sorted by path. */
export function apiResources(kinds: readonly KindDecl[], group: string, version: string): APIResource[] {
  const entries: APIResource[] = [];
  for (const k of kinds) {
    if (k.group !== group || k.version !== version) continue;
    const main: APIResource = {
      name: k.resource,
      singularName: k.singular,
      namespaced: k.namespaced,
      kind: k.kind,
      verbs: kindVerbs(k),
    };
    if (k.shortNames?.length) main.shortNames = [...k.shortNames];
    if (k.categories?.length) main.categories = [...k.categories];
    main.storageVersionHash = storageVersionHash(k.group, k.version, k.kind);
    entries.push(main);
    for (const sub of kindSubresources(k)) {
      entries.push({
        name: `${k.resource}/${sub.name}`,
        singularName: '',
        namespaced: k.namespaced,
        ...(sub.kind?.group !== undefined ? { group: sub.kind.group } : {}),
        ...(sub.kind?.version !== undefined ? { version: sub.kind.version } : {}),
        kind: sub.kind?.kind ?? k.kind,
        verbs: [...sub.verbs],
      });
    }
  }
  return entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** /api/v1 (group '') or /apis/<group>/<version>; undefined when no kind lives there. */
export function apiResourceList(kinds: readonly KindDecl[], group: string, version: string): APIResourceList | undefined {
  if (!kinds.some((k) => k.group === group && k.version === version)) return undefined;
  const resources = apiResources(kinds, group, version);
  // kube-apiserver omits apiVersion on /api/v1 (the legacy group) and sets it on /apis/<group>/<version>.
  return group === ''
    ? { kind: 'APIResourceList', groupVersion: version, resources }
    : { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: `${group}/${version}`, resources };
}

/** The versions of the core (legacy) group that kinds use, preferred first; ['v1'] when there is none. */
export function coreVersions(kinds: readonly KindDecl[]): string[] {
  const versions = sortVersions(kinds.filter((k) => k.group === '').map((k) => k.version));
  return versions.length ? versions : ['v1'];
}

/** /api. `serverAddress` is the host:port clients should use (the advertised address and secure port). */
export function apiVersions(kinds: readonly KindDecl[], serverAddress: string): APIVersions {
  return {
    kind: 'APIVersions',
    versions: coreVersions(kinds),
    serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }],
  };
}

/** The named groups of the kinds (not the core group), in the order discovery lists them (by name). */
export function apiGroupNames(kinds: readonly KindDecl[]): string[] {
  return [...new Set(kinds.filter((k) => k.group !== '').map((k) => k.group))].sort();
}

function groupEntry(kinds: readonly KindDecl[], group: string): APIGroup {
  const versions = sortVersions(kinds.filter((k) => k.group === group).map((k) => k.version)).map((v) => ({
    groupVersion: `${group}/${v}`,
    version: v,
  }));
  return { name: group, versions, preferredVersion: versions[0]! };
}

/** /apis/<group>; undefined for a group no kind lives in. */
export function apiGroup(kinds: readonly KindDecl[], group: string): APIGroup | undefined {
  if (group === '' || !kinds.some((k) => k.group === group)) return undefined;
  return { kind: 'APIGroup', apiVersion: 'v1', ...groupEntry(kinds, group) };
}

/** /apis. */
export function apiGroupList(kinds: readonly KindDecl[]): APIGroupList {
  return { kind: 'APIGroupList', apiVersion: 'v1', groups: apiGroupNames(kinds).map((g) => groupEntry(kinds, g)) };
}

// ---------------------------------------------------------------------------------------------------------
// Aggregated documents (apidiscovery.k8s.io)
// ---------------------------------------------------------------------------------------------------------

export type AggregatedVersion = 'v2' | 'v2beta1';

export interface GroupVersionKindRef {
  group: string;
  version: string;
  kind: string;
}

export interface APISubresourceDiscovery {
  subresource: string;
  responseKind: GroupVersionKindRef;
  verbs: string[];
}

export interface APIResourceDiscovery {
  resource: string;
  responseKind: GroupVersionKindRef;
  scope: 'Cluster' | 'Namespaced';
  singularResource: string;
  verbs: string[];
  shortNames?: string[];
  categories?: string[];
  subresources?: APISubresourceDiscovery[];
}

export interface APIVersionDiscovery {
  version: string;
  resources: APIResourceDiscovery[];
  freshness: 'Current' | 'Stale';
}

export interface APIGroupDiscovery {
  metadata: { name?: string; creationTimestamp: null };
  versions: APIVersionDiscovery[];
}

export interface APIGroupDiscoveryList {
  kind: 'APIGroupDiscoveryList';
  apiVersion: `apidiscovery.k8s.io/${AggregatedVersion}`;
  metadata: Record<string, never>;
  items: APIGroupDiscovery[];
}

/** The resources of one group version in aggregated form (apiserver's ConvertGroupVersionIntoToDiscovery). */
export function aggregatedResources(kinds: readonly KindDecl[], group: string, version: string): APIResourceDiscovery[] {
  const out: APIResourceDiscovery[] = [];
  const byName = new Map<string, APIResourceDiscovery>();
  const legacy = apiResources(kinds, group, version);
  for (const r of legacy) {
    if (r.name.includes('/')) continue;
    const d: APIResourceDiscovery = {
      resource: r.name,
      responseKind: { group: r.group ?? '', version: r.version ?? '', kind: r.kind },
      scope: r.namespaced ? 'Namespaced' : 'Cluster',
      singularResource: r.singularName,
      verbs: r.verbs,
    };
    if (r.shortNames) d.shortNames = r.shortNames;
    if (r.categories) d.categories = r.categories;
    out.push(d);
    byName.set(r.name, d);
  }
  for (const r of legacy) {
    const slash = r.name.indexOf('/');
    if (slash < 0) continue;
    const parent = byName.get(r.name.slice(0, slash));
    if (!parent) continue;
    (parent.subresources ??= []).push({
      subresource: r.name.slice(slash + 1),
      responseKind: { group: r.group ?? '', version: r.version ?? '', kind: r.kind },
      verbs: r.verbs,
    });
  }
  return out;
}

function groupDiscovery(kinds: readonly KindDecl[], group: string): APIGroupDiscovery {
  const versions = group === '' ? coreVersions(kinds) : sortVersions(kinds.filter((k) => k.group === group).map((k) => k.version));
  return {
    metadata: group === '' ? { creationTimestamp: null } : { name: group, creationTimestamp: null },
    versions: versions.map((v) => ({ version: v, resources: aggregatedResources(kinds, group, v), freshness: 'Current' })),
  };
}

/**
 * The aggregated discovery document of /api (`root: 'api'`, the core group) or /apis (`root: 'apis'`, the
 * named groups), in apidiscovery.k8s.io/`version` (v2 and v2beta1 have the same shape).
 */
export function aggregatedDiscovery(kinds: readonly KindDecl[], root: 'api' | 'apis', version: AggregatedVersion = 'v2'): APIGroupDiscoveryList {
  const items = root === 'api' ? [groupDiscovery(kinds, '')] : apiGroupNames(kinds).map((g) => groupDiscovery(kinds, g));
  return { kind: 'APIGroupDiscoveryList', apiVersion: `apidiscovery.k8s.io/${version}`, metadata: {}, items };
}

/** The Content-Type of an aggregated discovery response (apiserver's generateMediaTypeWithGVK). */
export function aggregatedContentType(version: AggregatedVersion): string {
  return `application/json;g=apidiscovery.k8s.io;v=${version};as=APIGroupDiscoveryList`;
}

// ---------------------------------------------------------------------------------------------------------
// Negotiation and serving
// ---------------------------------------------------------------------------------------------------------

export type DiscoveryNegotiation =
  | { form: 'aggregated'; version: AggregatedVersion; contentType: string }
  | { form: 'legacy'; contentType: 'application/json' }
  | { form: 'notAcceptable' };

/**
 * Which form of /api or /apis to serve for an Accept header, as kube-apiserver decides: the first clause (in
 * goautoneg order) of type application/json (or a wildcard) whose g/v/as name
 * apidiscovery.k8s.io v2 or v2beta1 APIGroupDiscoveryList selects the aggregated form; otherwise the legacy
 * form if some clause accepts plain JSON (no conversion asked); otherwise not acceptable (406). An absent or
 * empty header means JSON, legacy.
 *
 * For the other discovery paths (/api/v1, /apis/<g>, /apis/<g>/<v>) only the legacy form exists: use
 * `negotiateLegacyDiscovery`.
 */
export function negotiateDiscovery(acceptHeader: string | undefined): DiscoveryNegotiation {
  if (acceptHeader) {
    for (const clause of parseAccept(acceptHeader)) {
      if (!clauseMatches(clause, 'application', 'json')) continue;
      const c = clauseConvert(clause);
      if (c && c.group === 'apidiscovery.k8s.io' && c.kind === 'APIGroupDiscoveryList' && (c.version === 'v2' || c.version === 'v2beta1')) {
        return { form: 'aggregated', version: c.version, contentType: aggregatedContentType(c.version) };
      }
    }
  }
  return negotiateLegacyDiscovery(acceptHeader);
}

/** Legacy discovery documents are JSON only, and refuse conversions (as=...): otherwise 406. */
export function negotiateLegacyDiscovery(acceptHeader: string | undefined): DiscoveryNegotiation {
  if (!acceptHeader) return { form: 'legacy', contentType: 'application/json' };
  for (const clause of parseAccept(acceptHeader)) {
    if (clauseMatches(clause, 'application', 'json') && clauseConvert(clause) === undefined) {
      return { form: 'legacy', contentType: 'application/json' };
    }
  }
  return { form: 'notAcceptable' };
}

export interface DiscoveryRequest {
  /** URL path without query, e.g. '/api', '/apis/apps/v1' (a trailing slash is ignored). */
  path: string;
  accept?: string;
  ifNoneMatch?: string;
  /** host:port for /api's serverAddressByClientCIDRs. */
  serverAddress: string;
}

export interface DiscoveryResponse {
  /** 200, 304 (If-None-Match matched the ETag), 404 (no such group or version) or 406. */
  status: 200 | 304 | 404 | 406;
  /** The JSON text (empty for 304; a Status for 404/406). */
  body: string;
  headers: Record<string, string>;
}

interface CachedAggregated {
  /** The v2 document's JSON, its ETag (unquoted hex) and the v2beta1 JSON. */
  v2: string;
  v2beta1: string;
  etag: string;
}

interface DiscoveryCache {
  aggregated: Record<'api' | 'apis', CachedAggregated>;
  legacy: Map<string, string | undefined>;
}

const caches = new WeakMap<readonly KindDecl[], DiscoveryCache>();

function cacheFor(kinds: readonly KindDecl[]): DiscoveryCache {
  let c = caches.get(kinds);
  if (!c) {
    const agg = (root: 'api' | 'apis'): CachedAggregated => {
      const v2 = JSON.stringify(aggregatedDiscovery(kinds, root, 'v2'));
      return { v2, v2beta1: JSON.stringify(aggregatedDiscovery(kinds, root, 'v2beta1')), etag: sha512Hex(v2) };
    };
    c = { aggregated: { api: agg('api'), apis: agg('apis') }, legacy: new Map() };
    caches.set(kinds, c);
  }
  return c;
}

/** The cached aggregated document's JSON text and its ETag (quoted, as sent). */
export function aggregatedDocument(kinds: readonly KindDecl[], root: 'api' | 'apis', version: AggregatedVersion): { body: string; etag: string } {
  const c = cacheFor(kinds).aggregated[root];
  return { body: version === 'v2' ? c.v2 : c.v2beta1, etag: JSON.stringify(c.etag) };
}

function notFoundStatus(): string {
  return JSON.stringify({
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: 'the server could not find the requested resource',
    reason: 'NotFound',
    details: {},
    code: 404,
  });
}

function notAcceptableStatus(): string {
  return JSON.stringify({
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: 'only the following media types are accepted: application/json',
    reason: 'NotAcceptable',
    code: 406,
  });
}

/** The legacy document of a discovery path, or undefined if there is none; cached per kinds and path. */
export function legacyDocument(kinds: readonly KindDecl[], path: string, serverAddress: string): string | undefined {
  const p = path.length > 1 ? path.replace(/\/+$/, '') : path;
  if (p === '/api') return JSON.stringify(apiVersions(kinds, serverAddress));
  const cache = cacheFor(kinds).legacy;
  if (cache.has(p)) return cache.get(p);
  let doc: object | undefined;
  const parts = p.split('/').filter((s) => s !== '');
  if (parts[0] === 'api' && parts.length === 2) doc = apiResourceList(kinds, '', parts[1]!);
  else if (parts[0] === 'apis' && parts.length === 1) doc = apiGroupList(kinds);
  else if (parts[0] === 'apis' && parts.length === 2) doc = apiGroup(kinds, parts[1]!);
  else if (parts[0] === 'apis' && parts.length === 3) doc = apiResourceList(kinds, parts[1]!, parts[2]!);
  const text = doc === undefined ? undefined : JSON.stringify(doc);
  cache.set(p, text);
  return text;
}

/** Whether a path is one of the discovery paths (/api, /api/<v>, /apis, /apis/<g>, /apis/<g>/<v>). */
export function isDiscoveryPath(path: string): boolean {
  const parts = path.split('/').filter((s) => s !== '');
  if (!path.startsWith('/')) return false;
  return (parts[0] === 'api' && parts.length <= 2) || (parts[0] === 'apis' && parts.length <= 3);
}

/**
 * Answers a GET of a discovery path: negotiates the form, serves the cached document with the headers
 * kube-apiserver sends (aggregated: Content-Type with g/v/as, ETag, Vary: Accept, Cache-Control: public,
 * and 304 on a matching If-None-Match).
 */
export function serveDiscovery(kinds: readonly KindDecl[], req: DiscoveryRequest): DiscoveryResponse {
  const p = req.path.length > 1 ? req.path.replace(/\/+$/, '') : req.path;
  const root = p === '/api' ? 'api' : p === '/apis' ? 'apis' : undefined;
  const neg = root ? negotiateDiscovery(req.accept) : negotiateLegacyDiscovery(req.accept);
  if (neg.form === 'notAcceptable') {
    return { status: 406, body: notAcceptableStatus(), headers: { 'Content-Type': 'application/json' } };
  }
  if (neg.form === 'aggregated' && root) {
    const { body, etag } = aggregatedDocument(kinds, root, neg.version);
    const headers: Record<string, string> = { ETag: etag, Vary: 'Accept', 'Cache-Control': 'public' };
    if (req.ifNoneMatch === etag) return { status: 304, body: '', headers };
    return { status: 200, body, headers: { ...headers, 'Content-Type': neg.contentType } };
  }
  const body = legacyDocument(kinds, p, req.serverAddress);
  if (body === undefined) return { status: 404, body: notFoundStatus(), headers: { 'Content-Type': 'application/json' } };
  return { status: 200, body, headers: { 'Content-Type': 'application/json' } };
}
