/**
 * A kind is a declaration: what it is called, where it lives, its schema, and a few strategy hooks. The
 * generic store (store.ts) and the endpoints do everything else, in Kubernetes' order:
 *
 *   create: prepareForCreate → default → validate (+ object meta) → warnings → canonicalize → store
 *   update: prepareForUpdate → default → validateUpdate (+ object meta) → warnings → canonicalize → store
 *
 * Hooks receive plain JSON objects (`KObject`) and may mutate the object they are given (never `old`).
 * Validation hooks return field errors, all at once; they never throw.
 */
import type { FieldError, NameValidator } from '../util/validation.js';
import type { AccessAuthorizer } from './kinds/authorization/attributes.js';
import type { ServiceAccountTokenSettings } from './kinds/authentication/tokens.js';
import type { TokenReviewer } from './kinds/authentication/tokenreview.js';
import type { Definitions } from './schema.js';
import type { ServiceNetwork } from './allocators/service-network.js';
import type { RequestScope, ResourceStore } from './store.js';

/** A Kubernetes object as JSON. */
export type KObject = Record<string, any> & {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
};

export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string | null;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: Record<string, any>[];
  finalizers?: string[];
  managedFields?: Record<string, any>[];
  selfLink?: string;
  [k: string]: unknown;
}

/** Who asks, and under which switches: what a strategy hook may look at. */
export interface StrategyContext {
  /** Feature gates in effect (--feature-gates). */
  featureGates: Readonly<Record<string, boolean>>;
  /** The request's namespace ('' for cluster-scoped kinds). */
  namespace: string;
  /** The subresource being written ('' for the main resource, 'status', 'finalize'). */
  subresource: string;
  user?: { name: string; uid?: string; groups: string[] };
  /** Server-wide settings some kinds follow (from the server's options). */
  settings?: Readonly<KindSettings>;
  /** The request is a dry run: nothing it takes or writes may last. */
  dryRun?: boolean;
}

/** Server options that kinds' strategies read; every field has Kubernetes' default when absent. */
export interface KindSettings {
  /** --allow-privileged: whether containers may ask for privileged mode (default false). */
  allowPrivileged?: boolean;
  /** --event-ttl in seconds (default 3600). */
  eventTTLSeconds?: number;
  /** --orchlet-preferred-address-types: the node address types the server reaches agents at, in order. */
  agentAddressTypes?: readonly string[];
  /**
   * Whether the proxy subresources may reach loopback addresses (Kubernetes never lets them): only when the server
   * serves on a loopback address alone (--bind-address), so that every client is on this machine and can reach its
   * loopback anyway; a single-machine cluster's pods and nodes are there.
   */
  proxyToLoopback?: boolean;
  /** The server's authorizer chain (--authorization-mode), for the access reviews. */
  authorizer?: AccessAuthorizer;
  /** The server's Service cluster IP and node port allocators (--service-cluster-ip-range, --service-node-port-range). */
  serviceNetwork?: ServiceNetwork;
  /** Another kind's store, by group and resource (set by the registry). */
  lookup?(group: string, resource: string): ResourceStore | undefined;
  /** The server's token authenticators, for TokenReview. */
  tokenReviewer?: TokenReviewer;
  /** Issuing service-account tokens (serviceaccounts/token); absent without a signing key and issuer. */
  serviceAccountTokens?: ServiceAccountTokenSettings;
}

export interface Strategy {
  /** Before create: clear what users may not set (e.g. status), set initial values (phase). */
  prepareForCreate?(obj: KObject, ctx: StrategyContext): void;
  /** Before update: keep what this endpoint may not change (e.g. status on the main resource) from `old`. */
  prepareForUpdate?(obj: KObject, old: KObject, ctx: StrategyContext): void;
  /** Defaulting, as the kind's defaulting functions (runs on create and update, and on decode). */
  default?(obj: KObject, ctx: StrategyContext): void;
  /** Kind-specific validation on create (object metadata is validated by the store). */
  validate(obj: KObject, ctx: StrategyContext): FieldError[];
  /** Kind-specific validation on update (metadata immutability is validated by the store). */
  validateUpdate(obj: KObject, old: KObject, ctx: StrategyContext): FieldError[];
  warningsOnCreate?(obj: KObject, ctx: StrategyContext): string[];
  warningsOnUpdate?(obj: KObject, old: KObject, ctx: StrategyContext): string[];
  /** Normalizes the object just before it is stored (e.g. canonical quantities). */
  canonicalize?(obj: KObject): void;
  /** Whether PUT of a missing object creates it. */
  allowCreateOnUpdate?: boolean;
  /** Whether PUT without metadata.resourceVersion is allowed (last write wins). */
  allowUnconditionalUpdate?: boolean;
  /**
   * Graceful deletion (Kubernetes' RESTGracefulDeleteStrategy.CheckGracefulDelete): the grace period in
   * seconds a delete of `obj` waits, given the gracePeriodSeconds the request asked for (undefined when it
   * did not). 0 deletes at once. Kinds without this hook are deleted at once whatever the request says.
   */
  checkGracefulDelete?(obj: KObject, requested: number | undefined): number;
}

/** A subresource that writes part of the object (status, finalize): its own update strategy. */
export interface SubresourceStrategy {
  /** Copies what this subresource may change from `obj` onto a copy of `old`, or resets the rest of `obj`. */
  prepareForUpdate(obj: KObject, old: KObject, ctx: StrategyContext): void;
  validateUpdate(obj: KObject, old: KObject, ctx: StrategyContext): FieldError[];
  warningsOnUpdate?(obj: KObject, old: KObject, ctx: StrategyContext): string[];
  /**
   * Top-level fields prepareForUpdate takes from the stored object whatever the request sent (pods/status:
   * spec). A PATCH that cannot reach one of them leaves the stored value there, already decoded: it is not
   * checked again (patching.ts).
   */
  keeps?: readonly string[];
  /** A feature gate the subresource is served under (pods/ephemeralcontainers: EphemeralContainers); the registry leaves it out when the gate is off. */
  featureGate?: string;
}

/** The subresources that write part of the object, each with its own update strategy (KindDecl.subresources). */
export type WriteSubresource = 'status' | 'finalize' | 'approval' | 'ephemeralcontainers';

export interface TableColumn {
  name: string;
  /** OpenAPI type of the cell: string, integer, number, boolean, date. */
  type: string;
  format?: string;
  description: string;
  /** 0: shown by default; 1 and more: only with -o wide. */
  priority: number;
  /**
   * The cell at time `now` (ms since the epoch); dates as RFC 3339 strings are shown as ages when the type
   * is 'date' or the name 'Age'.
   */
  cell(obj: KObject, now?: number): unknown;
}

/** The kind of a body an action subresource takes. */
export interface BodyKind {
  group: string;
  version: string;
  kind: string;
  /** Its schema, e.g. 'io.k8s.api.core.v1.Binding'. */
  definition: string;
}

/** What an action or connector works with: the parent kind's store, other kinds' stores, the request. */
export interface SubresourceContext {
  store: ResourceStore;
  /** Another kind's store, by group and resource (e.g. '' and 'nodes'). */
  lookup(group: string, resource: string): ResourceStore | undefined;
  scope: RequestScope;
  settings: Readonly<KindSettings>;
}

/**
 * A subresource that only takes a POST of its own body kind (Kubernetes' create-only subresources:
 * pods/binding, pods/eviction). The endpoint decodes and checks the body against `bodyKinds`, then calls
 * `create`, which works through the stores and answers with a status code and an object (often a Status).
 */
export interface ActionSubresource {
  /** The kinds the body may be, the first one listed in discovery; a body without apiVersion is the first. */
  bodyKinds: BodyKind[];
  create(ctx: SubresourceContext, name: string, body: KObject): Promise<{ status: number; body: KObject }>;
}

/** Where a connector sends a request: a URL on another server, and what the answer is. */
export interface ConnectLocation {
  url: URL;
  contentType: string;
  /** A proxy location on a node agent's own server: reached with the agent transport (its CA, the server's client certificate). */
  agent?: boolean;
}

/** A query parameter of a connector's options, as OpenAPI lists it. */
export interface ConnectorParam {
  name: string;
  type: 'string' | 'boolean' | 'integer';
  description: string;
}

/** The options kind of a connector (core/v1 PodExecOptions and friends). */
export interface ConnectorOptions {
  kind: string;
  params: ConnectorParam[];
}

/**
 * A subresource answered by another server (Kubernetes' connecters: pods/log). `location` says where, or
 * null when there is nothing to read (an empty answer); it throws a StatusError for bad requests.
 */
export interface ConnectorSubresource {
  verbs: string[];
  /**
   * The request must ask for a protocol upgrade (SPDY/3.1 or WebSocket: exec, attach, portforward): the
   * upgraded connection is proxied to the location byte for byte, and a request without an Upgrade header
   * is refused with 400 "Upgrade request required" (Kubernetes' UpgradeAwareHandler with UpgradeRequired).
   */
  upgradeRequired?: boolean;
  /**
   * A proxy subresource (nodes/proxy, pods/proxy, services/proxy: Kubernetes' ProxyREST): requests with these HTTP
   * methods, at `<name>/<sub>` and `<name>/<sub>/<path>`, are passed on to `location` (the base: scheme, host and
   * port) joined with the path, with the query, headers and body; the backend's answer comes back as it is. The
   * connect options object ({kind: options.kind, path}) is admitted as a CONNECT first.
   */
  proxy?: { methods: string[] };
  /** The options kind discovery and OpenAPI name (e.g. PodExecOptions) with its query parameters; default the parent kind and PodLogOptions' parameters. */
  options?: ConnectorOptions;
  /** The definition of the options the query carries (discovery's kind is the parent's). */
  location(ctx: SubresourceContext, name: string, query: URLSearchParams): Promise<ConnectLocation | null>;
  /**
   * A Kubernetes Connecter (exec, attach, portforward; not pods/log): its connect options object, decoded from
   * the query as the parameter codec does (throws a 400 for a bad one), goes through admission as a CONNECT
   * and, as admission may have changed it, is turned back into the query `location` reads.
   */
  connectOptions?: {
    decode(query: URLSearchParams): KObject;
    encode(options: KObject): URLSearchParams;
  };
}

export interface KindDecl {
  group: string;
  version: string;
  kind: string;
  listKind: string;
  /** Plural lowercase resource name, as in the URL. */
  resource: string;
  singular: string;
  shortNames?: string[];
  categories?: string[];
  namespaced: boolean;
  /** Validates metadata.name (and generateName); default: a DNS-1123 subdomain. */
  nameValidator?: NameValidator;
  /**
   * Called when a delete finds the object and no finalizer holds it: returns the object to store instead of
   * deleting it (graceful deletion, as Namespace's `spec.finalizers` do), or null to delete now.
   */
  beforeDelete?(obj: KObject, ctx: StrategyContext, now: string): KObject | null;
  /** The definition of the kind, e.g. 'io.k8s.api.core.v1.Namespace' (and of its list: `listDefinition`). */
  definition: string;
  listDefinition: string;
  /** Schemas the kind contributes (its own types); shared meta types come from the registry's base set. */
  definitions: Definitions;
  strategy: Strategy;
  /** Subresources that write part of the object, with their strategies. */
  subresources?: {
    status?: SubresourceStrategy;
    finalize?: SubresourceStrategy;
    /** certificatesigningrequests/approval: the Approved and Denied conditions. */
    approval?: SubresourceStrategy;
    /** pods/ephemeralcontainers: spec.ephemeralContainers only. */
    ephemeralcontainers?: SubresourceStrategy;
  };
  /** Create-only subresources taking a body of another kind (binding, eviction). */
  actions?: Record<string, ActionSubresource>;
  /** Subresources answered by another server (log). */
  connectors?: Record<string, ConnectorSubresource>;
  /**
   * Kinds that are never stored (access reviews): a create hands the decoded object to this hook, which
   * validates it and returns the answer (201); nothing is written. Such kinds serve only `create`.
   */
  compute?(obj: KObject, ctx: StrategyContext): Promise<KObject>;
  /** Whether a spec change bumps metadata.generation (compares `spec`); true for most kinds. */
  tracksGeneration?: boolean;
  /** Extra field selectors beyond metadata.name and metadata.namespace, as Kubernetes supports them. */
  fieldSelectors?: Record<string, (obj: KObject) => string>;
  /** Table columns after 'Name' (kubectl get); Name is always first. */
  columns?: TableColumn[];
  /**
   * Where Kubernetes (or spec document 1) answers a delete with a Status rather than the object:
   * `delete: 'Status'` for Namespace; `deleteCollection: 'Status'` for PVC. Defaults: the object, the list.
   */
  responses?: { delete?: 'Status' | 'Object'; deleteCollection?: 'Status' | 'List' };
  /**
   * Served from another kind's storage (events.k8s.io/v1 Events are stored as core/v1 Events): that
   * storage's group and resource, and the conversions to and from its stored form. Reads, lists and
   * watches see every stored object in this kind's form; writes store the stored form.
   */
  storedAs?: { group: string; resource: string; toStored(obj: KObject): KObject; fromStored(obj: KObject): KObject };
  /** Objects expire this many seconds after their latest write (a storage lease); undefined: never. */
  ttlSeconds?(obj: KObject, ctx: StrategyContext): number | undefined;
  /** The table has no leading Name column: the kind's columns say where the name goes (Events). */
  noNameColumn?: boolean;
  /** Verbs served on the main resource; default DEFAULT_VERBS. */
  verbs?: string[];
  /**
   * Kubernetes' BeginCreate and BeginUpdate (main resource only): called once the object is defaulted and
   * mutated by admission, before validation. May change the object (values it allocates) and take things
   * outside it (cluster IPs, node ports); the transaction is committed once the write is stored (or the
   * dry run succeeded) and reverted when anything after the hook fails or nothing is written. Throws a
   * StatusError to refuse the write.
   */
  beginCreate?(obj: KObject, ctx: StrategyContext): Promise<WriteTransaction>;
  beginUpdate?(obj: KObject, old: KObject, ctx: StrategyContext): Promise<WriteTransaction>;
  /** Kubernetes' AfterDelete: the object is gone from storage (never called for dry runs); must not throw. */
  afterDelete?(obj: KObject, ctx: StrategyContext): Promise<void>;
}

/** What a write took outside the object, settled once the write is known to be stored or not. Never throws. */
export interface WriteTransaction {
  commit(): Promise<void>;
  revert(): Promise<void>;
}

export const DEFAULT_VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

export const apiVersionOf = (k: { group: string; version: string }) => (k.group ? `${k.group}/${k.version}` : k.version);
