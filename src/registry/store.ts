/**
 * The generic store: every verb of every kind, over the storage contract, in Kubernetes' order. A kind only
 * declares itself (kind.ts); this file owns create, get, list, watch, update (with retry on conflict),
 * delete (graceful with finalizers) and delete-collection, and the translation of storage errors.
 */
import { randomUUID, randomInt } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { StorageError } from '../storage/errors.js';
import type { KV, KeyValue } from '../storage/interface.js';
import type { FieldSelector } from '../util/fields.js';
import type { LabelSelector } from '../util/labels.js';
import {
  forbidden,
  nameIsDNSSubdomain,
  notSupported,
  required,
  root,
  validateObjectMeta,
  validateObjectMetaUpdate,
  type FieldError,
} from '../util/validation.js';
import { apiErrors, fromStorageError, isStatusError, type GroupResource } from './errors.js';
import { apiVersionOf, type KObject, type KindDecl, type KindSettings, type StrategyContext, type WriteTransaction, type WriteSubresource } from './kind.js';
import { DEFAULT_BOOKMARK_INTERVAL_MS, openWatch, validateWatchOptions, type ApiWatch } from './watch.js';
import { FieldSet, pe, refSchema, trackUpdate } from './managedfields.js';
import type { KindFieldManager } from './fieldmanager.js';
import type { Definitions } from './schema.js';
import { encodeWithResourceVersion } from './rawjson.js';
import { decodeStored, encodeStored, isStoredJSON, type StorageEncoding } from './storagecodec.js';
import { EXPIRED_CONTINUE_MESSAGE, decodeContinue, encodeContinue, parseResourceVersion } from './versions.js';
import type { WatchCache } from './cacher/watchcache.js';
import { CacheWatch, consistentCacheWatch } from './cacher/cachewatch.js';
import { cacheFresh, cacheServesGet, cacheServesList, cacheServesWatch, getConsistentFromCache, getFromCache, listConsistentFromCache, listFromCache } from './cacher/reads.js';

/** What the caller knows about the request: who, where, and how. */
export interface RequestScope {
  /** The namespace of the path ('' for cluster-scoped kinds and for lists across namespaces). */
  namespace: string;
  user?: { name: string; uid?: string; groups: string[] };
  dryRun?: boolean;
  /**
   * The field manager writes are recorded under in metadata.managedFields (the fieldManager parameter, or
   * the user agent's first word). Absent: managedFields are left as they are.
   */
  fieldManager?: string;
  /** The object already carries the managedFields of a server-side apply: record nothing more. */
  applied?: boolean;
  /** Adds an annotation to the request's audit event (admission plugins' audit annotations); absent: not audited. */
  auditAnnotate?: (key: string, value: string) => void;
}

/** CONNECT: a connector subresource (pods/exec, attach, portforward), its options object as the object. */
export type Operation = 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';

export interface AdmissionAttributes {
  operation: Operation;
  decl: KindDecl;
  namespace: string;
  name: string;
  subresource: string;
  object?: KObject;
  oldObject?: KObject;
  user?: RequestScope['user'];
  dryRun: boolean;
  /** Warnings for the client (the Warning response header); plugins push onto it. */
  warnings: string[];
  /** Adds an annotation to the request's audit event; does nothing when the request is not audited. */
  annotate(key: string, value: string): void;
  /**
   * Kubernetes' ReinvocationContext for the mutating phase, made by the first plugin that needs it: a plugin
   * sets shouldReinvoke, and the chain then runs every mutating plugin once more with isReinvoke set;
   * `values` keeps plugins' own state between the two passes.
   */
  reinvocation?: { isReinvoke: boolean; shouldReinvoke: boolean; values: Map<string, unknown> };
}

/** Admission: may change the object (mutate) and refuse the request by throwing a StatusError (validate). */
export interface Admission {
  /** Kubernetes' plugin name (the name label of the admission controller metrics); unnamed: not measured. */
  name?: string;
  mutate?(attrs: AdmissionAttributes): Promise<void>;
  validate?(attrs: AdmissionAttributes): Promise<void>;
  /** The plugin handles CONNECT (Kubernetes' Handles(admission.Connect)); a chain calls only these for it. */
  handlesConnect?: boolean;
  /**
   * Whether the plugin can act at all on this kind (any subresource) and operation, as Kubernetes' Handles: a
   * chain skips it for the others (worked out once per kind and operation). Absent: every request.
   */
  handles?(decl: KindDecl, operation: Operation): boolean;
}

export interface StoreDeps {
  kv: KV;
  /** --kvstore-prefix, e.g. '/registry'. */
  prefix: string;
  featureGates: Readonly<Record<string, boolean>>;
  admission?: Admission;
  /** The time objects are stamped with; injectable for tests. */
  now?: () => Date;
  /** Every schema (for managedFields tracking); without it managedFields are not recorded. */
  definitions?: Definitions;
  /** Server settings the kinds' strategies read. */
  settings?: Readonly<KindSettings>;
  /** --delete-collection-workers: deletes a delete-collection runs at once (default 1). */
  deleteCollectionWorkers?: number;
  /** The watch cache of the stored resource (cacher/): lists, gets and watches with a resourceVersion read it. */
  watchCache?: WatchCache;
  /** --storage-media-type as an encoding (storagecodec.ts); default json. Values are read in any encoding. */
  storageEncoding?: StorageEncoding;
  /** The kind's zero value and versions, for managedFields (fieldmanager.ts); default: `{}`, one version. */
  fieldManager?: KindFieldManager;
  /** --lease-reuse-duration-seconds: how long one storage lease serves TTL'd writes, at most (default 60). */
  leaseReuseDurationSeconds?: number;
}

/**
 * Told of every write this store makes, just after storage acknowledges it and before the caller hears of
 * it: the object as written (null when it is gone) and the revision of the write. Must not change the object.
 */
export type WriteObserver = (name: string, obj: KObject | null, revision: number) => void;

export interface ListOptions {
  labelSelector?: LabelSelector;
  fieldSelector?: FieldSelector;
  limit?: number;
  continue?: string;
  resourceVersion?: string;
  resourceVersionMatch?: string;
}

export interface WatchOptions extends ListOptions {
  allowWatchBookmarks?: boolean;
  sendInitialEvents?: boolean;
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
export interface WatchEvent {
  type: WatchEventType;
  object: KObject;
}

export interface DeleteOptions {
  gracePeriodSeconds?: number;
  preconditions?: { uid?: string; resourceVersion?: string };
  propagationPolicy?: 'Orphan' | 'Background' | 'Foreground';
}

/** Builds the object an update writes from the current one (null when absent); may throw a StatusError. */
export type UpdateFn = (current: KObject | null) => KObject | Promise<KObject>;

export interface UpdateOptions {
  /** '' for the main resource, 'status', 'finalize'. */
  subresource?: string;
  /** Create when absent even if the kind does not allow create-on-update (server-side apply). */
  forceAllowCreate?: boolean;
  /**
   * Write what `build` makes as storage's GuaranteedUpdate does, without the kind's strategy, validation or
   * admission: for subresources whose own handler changes the object (pods/binding). Metadata rules stay.
   */
  unchecked?: boolean;
  /**
   * What `build` returns is its own (made from the copy it is given, e.g. a patch of it) and shares nothing
   * with the caller or another attempt's build: it is not copied again.
   */
  fresh?: boolean;
}

const GENERATE_CHARS = 'bcdfghjklmnpqrstvwxz2456789';
const GENERATE_SUFFIX = 5;
const MAX_GENERATE_ATTEMPTS = 8;
const MAX_UPDATE_ATTEMPTS = 16;
/** How long a read that asks for a resourceVersion newer than the store's waits for it (as the watch cache). */
const FRESHNESS_WAIT_MS = 3000;

/** The audit annotator of a request scope (a no-op when the request is not audited). */
function auditAnnotator(scope: RequestScope): (key: string, value: string) => void {
  return scope.auditAnnotate ?? noAnnotation;
}

const noAnnotation = (): void => {};

/** A set built once and shared: frozen, so that a change made through a shared reference throws. */
function frozenSet(set: FieldSet): FieldSet {
  Object.freeze(set.members);
  Object.freeze(set.children);
  Object.freeze(set);
  return set;
}

/** The ignored fields of writes to the main resource (status) and to a subresource (spec). */
const IGNORED_MAIN = frozenSet(FieldSet.of([pe.field('status')]));
const IGNORED_SUBRESOURCE = frozenSet(FieldSet.of([pe.field('spec')]));

export function generateName(base: string): string {
  let s = '';
  for (let i = 0; i < GENERATE_SUFFIX; i++) s += GENERATE_CHARS[randomInt(GENERATE_CHARS.length)];
  // A generated name never exceeds the 63-character label limit, as apimachinery's SimpleNameGenerator.
  const max = 63 - GENERATE_SUFFIX;
  return (base.length > max ? base.slice(0, max) : base) + s;
}

export class ResourceStore {
  readonly gr: GroupResource;
  private readonly root: string;
  private readonly observers = new Set<WriteObserver>();
  /**
   * Encodings of watch event objects, by object, then by event type and content type: the watch cache hands
   * every watcher of an event the same (never changed) object, so watchers with the same output share one
   * encoding per event (endpoints/watchstream.ts). Weak: an entry lives as long as its event object.
   */
  readonly watchEncodings = new WeakMap<object, Map<string, string | Buffer>>();
  /** now() as text, kept for the second it names. */
  private nowSecond = NaN;
  private nowText = '';

  constructor(
    readonly decl: KindDecl,
    private readonly deps: StoreDeps,
  ) {
    this.gr = { group: decl.group, resource: decl.resource };
    this.root = `${deps.prefix}/${decl.storedAs?.resource ?? decl.resource}/`;
  }

  // ---- keys and encoding ------------------------------------------------------------------------------

  /** The key prefix of a list: the namespace's objects, or all objects of the kind. */
  listPrefix(namespace: string): string {
    return this.decl.namespaced && namespace ? `${this.root}${namespace}/` : this.root;
  }

  key(namespace: string, name: string): string {
    return this.decl.namespaced ? `${this.root}${namespace}/${name}` : `${this.root}${name}`;
  }

  private encode(input: KObject): Buffer {
    const obj = this.decl.storedAs ? this.decl.storedAs.toStored(input) : input;
    const meta = obj.metadata ?? {};
    const { resourceVersion: _rv, selfLink: _sl, ...rest } = meta;
    return encodeStored({ ...obj, metadata: rest }, this.deps.storageEncoding ?? 'json');
  }

  /**
   * The object a stored value holds, with its resourceVersion. `decoded` is that value already decoded (by the
   * watch cache, which decodes each written value once): it is taken over, not copied.
   */
  decode(kv: KeyValue, revision = kv.modRevision, decoded?: KObject): KObject {
    const parsed = decoded ?? decodeStored(kv.value);
    const obj = this.decl.storedAs ? this.decl.storedAs.fromStored(parsed) : parsed;
    // Stored objects carry no resourceVersion (encode drops it), so it lands last in metadata, as before.
    const meta = obj.metadata;
    if (meta && typeof meta === 'object' && !Array.isArray(meta) && !Object.hasOwn(meta, 'resourceVersion')) {
      meta.resourceVersion = String(revision);
    } else {
      obj.metadata = { ...(meta ?? {}), resourceVersion: String(revision) };
    }
    return obj;
  }

  /**
   * A value read from storage, as JSON when that is free: stored JSON as it is; a protobuf or YAML value that the
   * watch cache holds (as JSON, cacher/watchcache.ts) at the same revision, the cache's copy. A key's modRevision
   * names one value, so both are the same object; reads then cost what they cost with JSON storage.
   */
  private readable(kv: KeyValue): KeyValue {
    if (isStoredJSON(kv.value)) return kv;
    const cached = this.deps.watchCache?.get(kv.key);
    return cached && cached.modRevision === kv.modRevision && isStoredJSON(cached.value) ? cached : kv;
  }

  /** A lease granted for a TTL, reused by writes for a while so that not every write grants one. */
  private lease: { id: number; ttl: number; grantedAt: number } | undefined;

  /**
   * The put options of a write of `obj`: a storage lease when the kind's objects expire (ttlSeconds). As
   * Kubernetes' lease manager, a lease is reused for 5% of the TTL (at most --lease-reuse-duration-seconds)
   * and granted that much longer, so an object lives at least its TTL.
   */
  private async leaseFor(obj: KObject, ctx: StrategyContext): Promise<{ lease?: number }> {
    const ttl = this.decl.ttlSeconds?.(obj, ctx);
    if (ttl === undefined || ttl <= 0) return {};
    const reuse = Math.min(this.deps.leaseReuseDurationSeconds ?? 60, Math.floor(ttl * 0.05));
    const now = Date.now();
    const l = this.lease;
    if (l && l.ttl === ttl && now - l.grantedAt < reuse * 1000) return { lease: l.id };
    const id = await this.deps.kv.grantLease(ttl + reuse);
    this.lease = { id, ttl, grantedAt: now };
    return { lease: id };
  }

  /** Registers a WriteObserver; returns the function that removes it. */
  observeWrites(observer: WriteObserver): () => void {
    this.observers.add(observer);
    return () => this.observers.delete(observer);
  }

  private written(name: string, obj: KObject | null, revision: number): void {
    for (const o of this.observers) o(name, obj, revision);
  }

  private ctx(scope: RequestScope, subresource = ''): StrategyContext {
    const ctx: StrategyContext = { featureGates: this.deps.featureGates, namespace: scope.namespace, subresource, settings: this.deps.settings ?? {} };
    if (scope.user) ctx.user = scope.user;
    if (scope.dryRun) ctx.dryRun = true;
    return ctx;
  }

  private now(): string {
    const ms = this.deps.now ? this.deps.now().getTime() : Date.now();
    const second = Math.floor(ms / 1000);
    if (second !== this.nowSecond) {
      this.nowSecond = second;
      this.nowText = new Date(second * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
    }
    return this.nowText;
  }

  private invalid(name: string, errs: FieldError[]) {
    return apiErrors.invalid(this.decl.group, this.decl.kind, name, errs);
  }

  private translate(err: unknown, name: string): unknown {
    return fromStorageError(err, this.gr, name);
  }

  // ---- create -----------------------------------------------------------------------------------------

  /**
   * Admission of a create-only subresource (binding, eviction, token): the mutating then the validating
   * plugins see the request's body as the object, with the subresource named. The caller then runs the action.
   */
  async admitAction(scope: RequestScope, name: string, subresource: string, body: KObject, warnings: string[] = []): Promise<void> {
    const admission = this.deps.admission;
    if (!admission) return;
    const attrs = (): AdmissionAttributes => ({
      operation: 'CREATE',
      decl: this.decl,
      namespace: scope.namespace,
      name,
      subresource,
      object: body,
      user: scope.user,
      dryRun: !!scope.dryRun,
      warnings,
      annotate: auditAnnotator(scope),
    });
    await admission.mutate?.(attrs());
    await admission.validate?.(attrs());
  }

  /**
   * Admission of a connector (Kubernetes' ConnectResource): the mutating then the validating plugins that
   * handle CONNECT see the connect options object (PodExecOptions, ...), which they may change or refuse.
   */
  async admitConnect(scope: RequestScope, name: string, subresource: string, options: KObject, warnings: string[] = []): Promise<void> {
    const admission = this.deps.admission;
    if (!admission?.handlesConnect) return;
    const attrs = (): AdmissionAttributes => ({
      operation: 'CONNECT',
      decl: this.decl,
      namespace: scope.namespace,
      name,
      subresource,
      object: options,
      user: scope.user,
      dryRun: false,
      warnings,
      annotate: auditAnnotator(scope),
    });
    await admission.mutate?.(attrs());
    await admission.validate?.(attrs());
  }

  /** A create of a kind that is never stored (decl.compute): the hook validates and answers; nothing is written. */
  async compute(scope: RequestScope, input: KObject): Promise<KObject> {
    if (!this.decl.compute) throw apiErrors.internal(`${this.decl.kind} is a stored kind`);
    return this.decl.compute(input, this.ctx(scope));
  }

  /**
   * Creates the object (Kubernetes' BeforeCreate, validation, admission, then the write). The input is
   * copied first unless `owned` says the caller hands it over (it is then changed and returned).
   */
  async create(scope: RequestScope, input: KObject, warnings: string[] = [], owned = false): Promise<KObject> {
    const obj = owned ? input : structuredClone(input);
    const meta = (obj.metadata ??= {});
    this.checkNamespace(scope, obj);
    const ctx = this.ctx(scope);
    delete meta.deletionTimestamp;
    delete meta.deletionGracePeriodSeconds;
    delete meta.selfLink;
    delete meta.resourceVersion;
    // As Kubernetes: the request is defaulted (at decode) and the field manager records it; only then do
    // PrepareForCreate, admission and the REST layer add what the creator did not ask for (a Namespace's
    // finalizer, allocated IPs, injected volumes). Defaulting runs again once the object is prepared.
    this.decl.strategy.default?.(obj, ctx);
    this.trackFields(scope, null, obj, '');
    this.decl.strategy.prepareForCreate?.(obj, ctx);
    meta.uid = randomUUID();
    meta.creationTimestamp = this.now();
    if (this.decl.tracksGeneration) meta.generation = 1;
    else delete meta.generation;
    const generated = !meta.name && !!meta.generateName;
    if (generated) meta.name = generateName(meta.generateName!);
    this.decl.strategy.default?.(obj, ctx);
    const admission = this.deps.admission;
    const attrs = (): AdmissionAttributes => ({
      operation: 'CREATE',
      decl: this.decl,
      namespace: scope.namespace,
      name: meta.name ?? '',
      subresource: '',
      object: obj,
      user: scope.user,
      dryRun: !!scope.dryRun,
      warnings,
      annotate: auditAnnotator(scope),
    });
    await admission?.mutate?.(attrs());
    // Awaited only when there is one (an await of nothing still costs a turn of the microtask queue).
    const txn = this.decl.beginCreate ? await this.decl.beginCreate(obj, ctx) : undefined;
    let stored = false;
    try {
      const metaErrs = validateObjectMeta(meta, this.decl.namespaced, this.decl.nameValidator ?? nameIsDNSSubdomain, root('metadata'));
      const kindErrs = this.decl.strategy.validate(obj, ctx);
      if (metaErrs.length + kindErrs.length > 0) throw this.invalid(meta.name ?? '', [...metaErrs, ...kindErrs]);
      const createWarnings = this.decl.strategy.warningsOnCreate?.(obj, ctx);
      if (createWarnings) warnings.push(...createWarnings);
      this.decl.strategy.canonicalize?.(obj);
      await admission?.validate?.(attrs());
      if (scope.dryRun) {
        stored = true;
        return obj;
      }
      for (let attempt = 1; ; attempt++) {
        try {
          const key = this.key(scope.namespace, meta.name!);
          const value = this.encode(obj);
          const kv = await this.deps.kv.create(key, value, this.decl.ttlSeconds ? await this.leaseFor(obj, ctx) : {});
          meta.resourceVersion = String(kv.modRevision);
          stored = true;
          if (this.observers.size > 0) this.written(meta.name!, obj, kv.modRevision);
          return obj;
        } catch (err) {
          if (generated && err instanceof StorageError && err.code === 'KeyExists' && attempt < MAX_GENERATE_ATTEMPTS) {
            meta.name = generateName(meta.generateName!);
            continue;
          }
          throw this.translate(err, meta.name!);
        }
      }
    } finally {
      if (txn) await (stored ? txn.commit() : txn.revert());
    }
  }

  /** Namespaced objects take the request's namespace; a different one in the body is a 400. */
  private checkNamespace(scope: RequestScope, obj: KObject): void {
    const meta = (obj.metadata ??= {});
    if (this.decl.namespaced) {
      if (!meta.namespace) meta.namespace = scope.namespace;
      else if (meta.namespace !== scope.namespace) {
        throw apiErrors.badRequest('the namespace of the provided object does not match the namespace sent on the request');
      }
    } else {
      delete meta.namespace;
    }
  }

  // ---- get --------------------------------------------------------------------------------------------

  async get(scope: RequestScope, name: string, resourceVersion?: string): Promise<KObject> {
    return this.decode(this.readable(await this.getKV(scope, name, resourceVersion)));
  }

  /**
   * The object as `get` gives it, already encoded as compact JSON (JSON.stringify's bytes and a final
   * newline) when the stored text allows it without decoding; else the decoded object.
   */
  async getJSON(scope: RequestScope, name: string, resourceVersion?: string): Promise<Buffer | KObject> {
    const kv = this.readable(await this.getKV(scope, name, resourceVersion));
    if (this.decl.storedAs || !isStoredJSON(kv.value)) return this.decode(kv);
    return encodeWithResourceVersion(kv.value, String(kv.modRevision)) ?? this.decode(kv);
  }

  private async getKV(scope: RequestScope, name: string, resourceVersion?: string): Promise<KeyValue> {
    const rv = parseResourceVersion(resourceVersion);
    const cache = this.deps.watchCache;
    if (cacheServesGet(cache, resourceVersion) && (await cacheFresh(cache, resourceVersion))) {
      const kv = getFromCache(cache, this.key(scope.namespace, name));
      if (!kv) throw apiErrors.notFound(this.gr, name);
      return kv;
    }
    if (rv > 0) await this.waitForRevision(rv);
    else if (resourceVersion === undefined || resourceVersion === '') {
      const cached = await getConsistentFromCache(cache, this.key(scope.namespace, name), this.deps.kv.backend === 'sqlite');
      if (cached === null) throw apiErrors.notFound(this.gr, name);
      if (cached) return cached;
    }
    try {
      const { kv } = await this.deps.kv.get(this.key(scope.namespace, name));
      if (!kv) throw apiErrors.notFound(this.gr, name);
      return kv;
    } catch (err) {
      throw this.translate(err, name);
    }
  }

  /** Waits (up to 3 s) for the store to reach `rv`, as the watch cache does, else 504 Too large resource version. */
  private async waitForRevision(rv: number): Promise<void> {
    const deadline = Date.now() + FRESHNESS_WAIT_MS;
    for (;;) {
      const current = await this.deps.kv.currentRevision();
      if (current >= rv) return;
      if (Date.now() >= deadline) {
        const e = apiErrors.timeout(`Too large resource version: ${rv}, current: ${current}`, 1);
        e.status.details = { ...e.status.details, causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }] };
        throw e;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  // ---- list -------------------------------------------------------------------------------------------

  /** The fields a field selector can see: metadata.name, metadata.namespace and the kind's own. */
  fieldsOf(obj: KObject): Record<string, string> {
    const f: Record<string, string> = { 'metadata.name': obj.metadata?.name ?? '', 'metadata.namespace': obj.metadata?.namespace ?? '' };
    for (const [k, fn] of Object.entries(this.decl.fieldSelectors ?? {})) f[k] = fn(obj);
    return f;
  }

  /** Refuses field selectors on fields the kind does not support, as Kubernetes 1.23 does (400). */
  checkFieldSelector(sel: FieldSelector | undefined): void {
    if (!sel) return;
    for (const r of sel.requirements) {
      const known = r.field === 'metadata.name' || (r.field === 'metadata.namespace' && this.decl.namespaced);
      if (!known && !this.decl.fieldSelectors?.[r.field]) {
        throw apiErrors.badRequest(`field label not supported: ${r.field}`);
      }
    }
  }

  /** One field of fieldsOf(obj) ('' for a field it does not have), without building the others. */
  private readonly fieldOf = (obj: KObject, field: string): string => {
    const own = this.decl.fieldSelectors;
    if (own !== undefined && Object.hasOwn(own, field)) return own[field]!(obj);
    if (field === 'metadata.name') return obj.metadata?.name ?? '';
    if (field === 'metadata.namespace') return obj.metadata?.namespace ?? '';
    return '';
  };

  /**
   * Whether obj matches the selectors. A field selector reads only the fields it names (what
   * FieldSelector.matches of fieldsOf(obj) gives): every watch event is matched once per filtered watcher.
   */
  matches(obj: KObject, opts: ListOptions): boolean {
    if (opts.labelSelector && !opts.labelSelector.matches(obj.metadata?.labels ?? {})) return false;
    if (opts.fieldSelector && !opts.fieldSelector.matchesBy(obj, this.fieldOf)) return false;
    return true;
  }

  /** The list object, with Kubernetes' resourceVersion, paging (limit/continue) and selector semantics. */
  async list(scope: RequestScope, opts: ListOptions): Promise<KObject> {
    this.checkFieldSelector(opts.fieldSelector);
    const prefix = this.listPrefix(scope.namespace);
    const limit = opts.limit && opts.limit > 0 ? opts.limit : 0;
    let revision = 0;
    let startKey: string | undefined;
    const match = opts.resourceVersionMatch ?? '';
    const listErrs = validateListOptions(opts);
    if (listErrs.length > 0) throw apiErrors.invalid('meta.k8s.io', 'ListOptions', '', listErrs);
    const cache = this.deps.watchCache;
    if (cacheServesList(cache, opts) && (await cacheFresh(cache, opts.resourceVersion))) return listFromCache(this, cache, scope, opts);
    const consistent = await listConsistentFromCache(this, cache, scope, opts);
    if (consistent) return consistent;
    if (opts.continue) {
      if (opts.resourceVersion && opts.resourceVersion !== '0') {
        throw apiErrors.badRequest('specifying resource version is not allowed when using continue');
      }
      const token = decodeContinue(opts.continue);
      revision = token.rv;
      startKey = prefix + token.start;
    } else {
      const rv = parseResourceVersion(opts.resourceVersion);
      if (rv > 0) {
        // Exact, or the legacy meaning of a resourceVersion with a limit: read at that revision.
        if (match === 'Exact' || (match === '' && limit > 0)) revision = rv;
        else await this.waitForRevision(rv);
      }
    }
    const items: KObject[] = [];
    let nextStart: string | undefined;
    let remaining: number | undefined;
    let listRevision = revision;
    const filtered = !!(opts.labelSelector && !opts.labelSelector.empty()) || !!(opts.fieldSelector && !opts.fieldSelector.empty());
    try {
      for (;;) {
        const page = await this.deps.kv.list(prefix, {
          ...(limit ? { limit: filtered ? Math.max(limit, 256) : limit - items.length } : {}),
          ...(startKey ? { startKey } : {}),
          ...(listRevision ? { revision: listRevision } : {}),
        });
        listRevision = page.revision;
        let last: string | undefined;
        for (const kv of page.kvs) {
          last = kv.key;
          const obj = this.decode(this.readable(kv));
          if (!filtered || this.matches(obj, opts)) items.push(obj);
          if (limit && items.length === limit) break;
        }
        const stoppedEarly = last !== undefined && last !== page.kvs[page.kvs.length - 1]?.key;
        if (limit && items.length === limit && (page.more || stoppedEarly)) {
          nextStart = last! + '\0';
          if (!filtered) remaining = page.remaining;
          break;
        }
        if (!page.more) break;
        startKey = page.kvs[page.kvs.length - 1]!.key + '\0';
      }
    } catch (err) {
      if (err instanceof StorageError && err.code === 'Compacted') {
        if (opts.continue) {
          const e = apiErrors.expired(EXPIRED_CONTINUE_MESSAGE);
          const fresh = await this.deps.kv.currentRevision();
          e.status.metadata.continue = encodeContinue({ rv: fresh, start: (startKey ?? prefix).slice(prefix.length) || '\0' });
          throw e;
        }
        throw apiErrors.expired(`The resourceVersion for the provided list is too old.`);
      }
      throw this.translate(err, '');
    }
    const metadata: Record<string, unknown> = { resourceVersion: String(listRevision) };
    if (nextStart !== undefined) {
      metadata.continue = encodeContinue({ rv: listRevision, start: nextStart.slice(prefix.length) });
      if (remaining !== undefined && remaining > 0) metadata.remainingItemCount = remaining;
    }
    return { kind: this.decl.listKind, apiVersion: apiVersionOf(this.decl), metadata, items };
  }

  // ---- watch ------------------------------------------------------------------------------------------

  /** A watch of the kind in the scope's namespace (all namespaces when it is ''). */
  watch(scope: RequestScope, opts: WatchOptions, bookmarkIntervalMs = DEFAULT_BOOKMARK_INTERVAL_MS): ApiWatch {
    const progress = this.deps.featureGates.EfficientWatchResumption === true;
    const cache = this.deps.watchCache;
    if (cacheServesWatch(cache, opts)) {
      const errs = validateWatchOptions(opts);
      if (errs.length > 0) throw apiErrors.invalid('meta.k8s.io', 'ListOptions', '', errs);
      this.checkFieldSelector(opts.fieldSelector);
      return new CacheWatch(cache, this, scope, opts, bookmarkIntervalMs, progress);
    }
    if (cache && (opts.resourceVersion ?? '') === '' && opts.sendInitialEvents === undefined) {
      // Validated now, as openWatch does; served from memory when the cache shows it is consistent.
      const errs = validateWatchOptions(opts);
      if (errs.length > 0) throw apiErrors.invalid('meta.k8s.io', 'ListOptions', '', errs);
      this.checkFieldSelector(opts.fieldSelector);
      const fromStorage = (resourceVersion?: string) =>
        openWatch(this, this.deps.kv, scope, resourceVersion === undefined ? opts : { ...opts, resourceVersion }, bookmarkIntervalMs, progress);
      return consistentCacheWatch(cache, this, scope, opts, bookmarkIntervalMs, progress, fromStorage);
    }
    return openWatch(this, this.deps.kv, scope, opts, bookmarkIntervalMs, progress);
  }

  // ---- update -----------------------------------------------------------------------------------------

  /**
   * Replaces the object with what `build` makes of the current one, retrying on a storage conflict unless
   * the new object names a resourceVersion (then a mismatch is a 409). Creates when the kind allows it.
   */
  async update(
    scope: RequestScope,
    name: string,
    build: UpdateFn,
    opts: UpdateOptions = {},
    warnings: string[] = [],
  ): Promise<{ object: KObject; created: boolean }> {
    const subresource = opts.subresource ?? '';
    const key = this.key(scope.namespace, name);
    for (let attempt = 1; ; attempt++) {
      let current: KeyValue | null;
      try {
        current = (await this.deps.kv.get(key)).kv;
      } catch (err) {
        throw this.translate(err, name);
      }
      // The watch cache's JSON copy of the same revision when it has one: no protobuf decode (see readable).
      const readable = current ? this.readable(current) : null;
      const old = readable ? this.decode(readable) : null;
      // build's own copy: JSON text decoded again costs about half a structuredClone of the decoded object.
      const built = await build(old ? (isStoredJSON(readable!.value) ? this.decode(readable!) : structuredClone(old)) : null);
      const next = opts.fresh ? built : structuredClone(built);
      if (!old) {
        if (subresource !== '' || !(this.decl.strategy.allowCreateOnUpdate || opts.forceAllowCreate)) {
          throw apiErrors.notFound(this.gr, name);
        }
        (next.metadata ??= {}).name ??= name;
        if (next.metadata.name !== name) throw this.nameMismatch(next.metadata.name ?? '', name);
        try {
          return { object: await this.create(scope, next, warnings), created: true };
        } catch (err) {
          if (isStatusError(err, 'AlreadyExists') && attempt < MAX_UPDATE_ATTEMPTS) continue;
          throw err;
        }
      }
      const requested = parseResourceVersion(next.metadata?.resourceVersion, 'resourceVersion');
      if (requested !== 0 && requested !== current!.modRevision) {
        throw apiErrors.conflict(this.gr, name, 'the object has been modified; please apply your changes to the latest version and try again');
      }
      if (requested === 0 && !this.decl.strategy.allowUnconditionalUpdate && subresource === '') {
        throw this.invalid(name, [required(root('metadata', 'resourceVersion'), 'must be specified for an update')]);
      }
      // An unconditional update takes the stored object's resourceVersion (Kubernetes' doUnconditionalUpdate).
      if (requested === 0) (next.metadata ??= {}).resourceVersion = String(current!.modRevision);
      // What the kind's beginUpdate took: committed once the update is written, else given back.
      const txns: WriteTransaction[] = [];
      let written = false;
      try {
        const obj = opts.unchecked ? this.keepSystemFields(name, next, old) : await this.prepareUpdate(scope, name, next, old, subresource, warnings, txns);
        if (scope.dryRun) {
          written = true;
          return { object: obj, created: false };
        }
        // An update that changes nothing is not written (and keeps its resourceVersion), as Kubernetes; unless the
        // stored value is stale (encrypted with an older key), when the write re-encrypts it.
        if (!current!.stale && isDeepStrictEqual(this.stripVersion(obj), this.stripVersion(old))) return { object: old, created: false };
        // A deleted object whose last finalizer went away is removed, unless a grace period is still running
        // (Kubernetes' shouldDeleteDuringUpdate: no finalizers and a deletion grace period of 0).
        if (
          obj.metadata?.deletionTimestamp &&
          !(obj.metadata.finalizers?.length) &&
          !this.heldBySpec(obj) &&
          (old.metadata?.deletionGracePeriodSeconds ?? 0) === 0
        ) {
          try {
            const del = await this.deps.kv.delete(key, current!.modRevision);
            written = true;
            if (this.observers.size > 0) this.written(name, null, del.revision);
            await this.decl.afterDelete?.(obj, this.ctx(scope));
            return { object: this.decode({ ...del.prevKv, value: this.encode(obj) }, del.revision), created: false };
          } catch (err) {
            if (err instanceof StorageError && err.code === 'Conflict' && requested === 0 && attempt < MAX_UPDATE_ATTEMPTS) continue;
            throw this.translate(err, name);
          }
        }
        try {
          const kv = await this.deps.kv.update(key, this.encode(obj), current!.modRevision, await this.leaseFor(obj, this.ctx(scope, subresource)));
          obj.metadata!.resourceVersion = String(kv.modRevision);
          written = true;
          if (this.observers.size > 0) this.written(name, obj, kv.modRevision);
          return { object: obj, created: false };
        } catch (err) {
          if (err instanceof StorageError && err.code === 'Conflict' && requested === 0 && attempt < MAX_UPDATE_ATTEMPTS) continue;
          throw this.translate(err, name);
        }
      } finally {
        for (const t of txns) await (written ? t.commit() : t.revert());
      }
    }
  }

  /** Namespace-like kinds keep a deleted object while their spec finalizers remain. */
  private heldBySpec(obj: KObject): boolean {
    return this.decl.beforeDelete !== undefined && Array.isArray(obj.spec?.finalizers) && obj.spec.finalizers.length > 0;
  }

  private stripVersion(obj: KObject): KObject {
    const { resourceVersion: _rv, ...meta } = obj.metadata ?? {};
    return { ...obj, metadata: meta };
  }

  private nameMismatch(inBody: string, onUrl: string) {
    return apiErrors.badRequest(`the name of the object (${inBody}) does not match the name on the URL (${onUrl})`);
  }

  /** The object an unchecked update writes: its name, uid, creation and deletion marks from `old`. */
  private keepSystemFields(name: string, obj: KObject, old: KObject): KObject {
    const meta = (obj.metadata ??= {});
    const oldMeta = old.metadata ?? {};
    meta.name = name;
    for (const k of ['namespace', 'uid', 'creationTimestamp', 'deletionTimestamp', 'deletionGracePeriodSeconds', 'generation'] as const) {
      if (oldMeta[k] !== undefined) (meta as Record<string, unknown>)[k] = oldMeta[k];
      else delete meta[k];
    }
    return obj;
  }

  /** Kubernetes' BeforeUpdate: system fields from the old object, the strategy, then validation and admission. */
  private async prepareUpdate(
    scope: RequestScope,
    name: string,
    obj: KObject,
    old: KObject,
    subresource: string,
    warnings: string[],
    txns: WriteTransaction[] = [],
  ): Promise<KObject> {
    const meta = (obj.metadata ??= {});
    if (meta.name === undefined || meta.name === '') meta.name = name;
    if (meta.name !== name) throw this.nameMismatch(meta.name, name);
    this.checkNamespace(scope, obj);
    const oldMeta = old.metadata ?? {};
    const ctx = this.ctx(scope, subresource);
    const sub = subresource === '' ? undefined : this.decl.subresources?.[subresource as WriteSubresource];
    if (subresource !== '' && !sub) throw apiErrors.notFound(this.gr, name);
    if (oldMeta.generation !== undefined) meta.generation = oldMeta.generation;
    else delete meta.generation;
    if (oldMeta.deletionTimestamp) meta.deletionTimestamp = oldMeta.deletionTimestamp;
    else delete meta.deletionTimestamp;
    if (oldMeta.deletionGracePeriodSeconds !== undefined) meta.deletionGracePeriodSeconds = oldMeta.deletionGracePeriodSeconds;
    else delete meta.deletionGracePeriodSeconds;
    if (sub) sub.prepareForUpdate(obj, old, ctx);
    else this.decl.strategy.prepareForUpdate?.(obj, old, ctx);
    if (!meta.uid) meta.uid = oldMeta.uid;
    if (oldMeta.creationTimestamp) meta.creationTimestamp = oldMeta.creationTimestamp;
    if (this.decl.tracksGeneration && !isDeepStrictEqual(obj.spec, old.spec)) meta.generation = (oldMeta.generation ?? 0) + 1;
    this.decl.strategy.default?.(obj, ctx);
    // The field manager runs before mutating admission, as in Kubernetes' update handler.
    this.trackFields(scope, old, obj, subresource);
    const attrs = (): AdmissionAttributes => ({
      operation: 'UPDATE',
      decl: this.decl,
      namespace: scope.namespace,
      name,
      subresource,
      object: obj,
      oldObject: old,
      user: scope.user,
      dryRun: !!scope.dryRun,
      warnings,
      annotate: auditAnnotator(scope),
    });
    await this.deps.admission?.mutate?.(attrs());
    if (!sub && this.decl.beginUpdate) txns.push(await this.decl.beginUpdate(obj, old, ctx));
    const errs = [
      ...validateObjectMeta(meta, this.decl.namespaced, this.decl.nameValidator ?? nameIsDNSSubdomain, root('metadata')),
      ...validateObjectMetaUpdate(meta, oldMeta, root('metadata')),
      ...(sub ? sub.validateUpdate(obj, old, ctx) : this.decl.strategy.validateUpdate(obj, old, ctx)),
    ];
    if (errs.length > 0) throw this.invalid(name, errs);
    warnings.push(...((sub ? sub.warningsOnUpdate?.(obj, old, ctx) : this.decl.strategy.warningsOnUpdate?.(obj, old, ctx)) ?? []));
    this.decl.strategy.canonicalize?.(obj);
    await this.deps.admission?.validate?.(attrs());
    return obj;
  }

  /** The kind's zero value and versions, as the field manager sees them (undefined: `{}`, one version). */
  get fieldManager(): KindFieldManager | undefined {
    return this.deps.fieldManager;
  }

  /** Fields a write through this endpoint may not set: never recorded as owned. */
  ignoredFields(subresource: string): FieldSet {
    return subresource === '' ? IGNORED_MAIN : IGNORED_SUBRESOURCE;
  }

  /** Records an Update (create, replace, patch) in metadata.managedFields, as Kubernetes' field manager. */
  private tracksFields(scope: RequestScope): boolean {
    return scope.fieldManager !== undefined && !scope.applied && this.deps.definitions !== undefined;
  }

  private trackFields(scope: RequestScope, old: KObject | null, obj: KObject, subresource: string): void {
    const defs = this.deps.definitions;
    if (!this.tracksFields(scope) || !defs || scope.fieldManager === undefined) return;
    const entries = trackUpdate(old, obj, {
      manager: scope.fieldManager,
      subresource,
      apiVersion: apiVersionOf(this.decl),
      time: this.now(),
      schema: refSchema(this.decl.definition),
      defs,
      ignored: this.ignoredFields(subresource),
      ...(this.deps.fieldManager ? { emptyObject: this.deps.fieldManager.zero, converter: this.deps.fieldManager.converter } : {}),
    });
    const meta = (obj.metadata ??= {});
    if (entries && entries.length > 0) meta.managedFields = entries;
    else delete meta.managedFields;
  }

  // ---- delete -----------------------------------------------------------------------------------------

  /**
   * Deletes the object, or marks it deleted (deletionTimestamp) while finalizers hold it. Returns the
   * object as deleted or as marked, and whether it is gone.
   */
  async delete(scope: RequestScope, name: string, opts: DeleteOptions = {}): Promise<{ object: KObject; deleted: boolean }> {
    const key = this.key(scope.namespace, name);
    for (let attempt = 1; ; attempt++) {
      let current: KeyValue | null;
      try {
        current = (await this.deps.kv.get(key)).kv;
      } catch (err) {
        throw this.translate(err, name);
      }
      if (!current) throw apiErrors.notFound(this.gr, name);
      const obj = this.decode(this.readable(current));
      const meta = obj.metadata!;
      const pre = opts.preconditions;
      if (pre?.uid && pre.uid !== meta.uid) {
        throw apiErrors.conflict(this.gr, name, `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${meta.uid ?? ''}`);
      }
      if (pre?.resourceVersion && pre.resourceVersion !== meta.resourceVersion) {
        throw apiErrors.conflict(
          this.gr,
          name,
          `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in meta: ${meta.resourceVersion ?? ''}`,
        );
      }
      await this.deps.admission?.validate?.({
        operation: 'DELETE',
        decl: this.decl,
        namespace: scope.namespace,
        name,
        subresource: '',
        oldObject: obj,
        user: scope.user,
        dryRun: !!scope.dryRun,
        warnings: [],
        annotate: auditAnnotator(scope),
      });
      const graceful = this.gracefulDeletion(obj, opts);
      if (graceful === 'pending') return { object: obj, deleted: false };
      const marked = this.markForDeletion(scope, graceful ?? obj, opts);
      if (marked) {
        if (scope.dryRun || isDeepStrictEqual(marked, obj)) return { object: marked, deleted: false };
        try {
          const kv = await this.deps.kv.update(key, this.encode(marked), current.modRevision);
          marked.metadata!.resourceVersion = String(kv.modRevision);
          if (this.observers.size > 0) this.written(name, marked, kv.modRevision);
          return { object: marked, deleted: false };
        } catch (err) {
          if (err instanceof StorageError && err.code === 'Conflict' && attempt < MAX_UPDATE_ATTEMPTS) continue;
          throw this.translate(err, name);
        }
      }
      if (scope.dryRun) return { object: obj, deleted: true };
      try {
        const del = await this.deps.kv.delete(key, current.modRevision);
        if (this.observers.size > 0) this.written(name, null, del.revision);
        const gone = this.decode(this.readable(del.prevKv));
        await this.decl.afterDelete?.(gone, this.ctx(scope));
        return { object: gone, deleted: true };
      } catch (err) {
        if (err instanceof StorageError && err.code === 'Conflict' && !pre?.resourceVersion && attempt < MAX_UPDATE_ATTEMPTS) continue;
        throw this.translate(err, name);
      }
    }
  }

  /**
   * Kubernetes' rest.BeforeDelete for kinds with graceful deletion (strategy.checkGracefulDelete): the object
   * marked with deletionTimestamp (now + grace) and deletionGracePeriodSeconds when a grace period applies;
   * 'pending' when it is already being deleted and the request does not shorten the grace period (nothing
   * to write); undefined when the kind has no graceful deletion. A grace period of 0 is marked too: nothing
   * but finalizers then keeps the object.
   */
  private gracefulDeletion(obj: KObject, opts: DeleteOptions): KObject | 'pending' | undefined {
    const strategy = this.decl.strategy;
    if (!strategy.checkGracefulDelete) return undefined;
    const meta = obj.metadata ?? {};
    const nowMs = this.deps.now ? this.deps.now().getTime() : Date.now();
    const stamp = (ms: number) => new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
    let grace: number;
    let deletionMs: number;
    if (meta.deletionTimestamp) {
      // Already being deleted: only a shorter grace period may be set.
      const current = meta.deletionGracePeriodSeconds;
      if (opts.gracePeriodSeconds === undefined) return 'pending';
      if (current !== undefined && opts.gracePeriodSeconds >= current) return 'pending';
      grace = opts.gracePeriodSeconds;
      deletionMs = Date.parse(meta.deletionTimestamp) - (current ?? 0) * 1000 + grace * 1000;
    } else {
      grace = strategy.checkGracefulDelete(obj, opts.gracePeriodSeconds);
      deletionMs = nowMs + grace * 1000;
    }
    const marked = structuredClone(obj);
    marked.metadata!.deletionTimestamp = stamp(deletionMs);
    marked.metadata!.deletionGracePeriodSeconds = grace;
    return marked;
  }

  /** The object to store instead of deleting it (finalizers pending), or null to delete it now. */
  private markForDeletion(scope: RequestScope, obj: KObject, opts: DeleteOptions): KObject | null {
    const marked = structuredClone(obj);
    const meta = marked.metadata!;
    const now = this.now();
    const finalizers = [...(meta.finalizers ?? [])];
    // A graceful deletion in progress keeps the object whatever its finalizers.
    const gracePending = (meta.deletionGracePeriodSeconds ?? 0) > 0;
    if (opts.propagationPolicy === 'Foreground' && !finalizers.includes('foregroundDeletion') && !meta.deletionTimestamp) {
      finalizers.push('foregroundDeletion');
    }
    if (opts.propagationPolicy === 'Orphan' && !finalizers.includes('orphan') && !meta.deletionTimestamp) finalizers.push('orphan');
    const special = this.decl.beforeDelete?.(marked, this.ctx(scope), now) ?? null;
    if (special) {
      const sm = (special.metadata ??= {});
      const merged = [...(sm.finalizers ?? [])];
      for (const f of finalizers) if (!merged.includes(f)) merged.push(f);
      if (merged.length > 0) sm.finalizers = merged;
      return special;
    }
    if (finalizers.length === 0) return gracePending ? marked : null;
    meta.finalizers = finalizers;
    if (!meta.deletionTimestamp) {
      meta.deletionTimestamp = now;
      meta.deletionGracePeriodSeconds = 0;
    }
    return marked;
  }

  /** Deletes every object the list options select; returns the objects as deleted or marked. */
  async deleteCollection(scope: RequestScope, listOpts: ListOptions, opts: DeleteOptions = {}): Promise<KObject[]> {
    const list = await this.list(scope, { ...listOpts, limit: 0, continue: undefined });
    const items = list.items as KObject[];
    const out: (KObject | undefined)[] = new Array<KObject | undefined>(items.length);
    // --delete-collection-workers: that many deletes in flight at once (Kubernetes' DeleteCollection workers).
    let next = 0;
    let failure: Error | undefined;
    const worker = async (): Promise<void> => {
      while (failure === undefined && next < items.length) {
        const i = next++;
        const item = items[i]!;
        try {
          out[i] = (await this.delete({ ...scope, namespace: item.metadata?.namespace ?? scope.namespace }, item.metadata!.name!, opts)).object;
        } catch (err) {
          if (!isStatusError(err, 'NotFound')) failure ??= err instanceof Error ? err : new Error(String(err));
        }
      }
    };
    const workers = Math.max(1, Math.min(this.deps.deleteCollectionWorkers ?? 1, items.length));
    await Promise.all(Array.from({ length: workers }, worker));
    if (failure !== undefined) throw failure;
    return out.filter((o): o is KObject => o !== undefined);
  }
}

/** The text of stored bytes, without copying them first. */

/** apimachinery's ValidateListOptions for resourceVersionMatch. */
export function validateListOptions(opts: ListOptions): FieldError[] {
  const match = opts.resourceVersionMatch ?? '';
  const path = root('resourceVersionMatch');
  if (match === '') return [];
  if (match !== 'NotOlderThan' && match !== 'Exact') return [notSupported(path, match, ['Exact', 'NotOlderThan', ''])];
  const errs: FieldError[] = [];
  if (!opts.resourceVersion) errs.push(forbidden(path, 'resourceVersionMatch is forbidden unless resourceVersion is provided'));
  if (opts.continue) errs.push(forbidden(path, 'resourceVersionMatch is forbidden when continue is provided'));
  if (match === 'Exact' && opts.resourceVersion === '0') {
    errs.push(forbidden(path, 'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'));
  }
  return errs;
}
