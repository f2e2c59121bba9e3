/**
 * MutatingAdmissionWebhook and ValidatingAdmissionWebhook, as Kubernetes 1.23 dispatches them
 * (apiserver/pkg/admission/plugin/webhook):
 *   - the webhooks of every configuration, configurations sorted by name, webhooks in their listed order;
 *     requests on the webhook configurations themselves are never sent to webhooks
 *   - a webhook is called when one of its rules matches (operation, group, version, resource with
 *     subresource and wildcards, scope), else, with matchPolicy Equivalent, when a rule matches another
 *     version of the same stored resource (the object is then sent converted to that version); then its
 *     namespaceSelector (namespaced requests and Namespaces themselves) and objectSelector (new or old object)
 *   - a dry run refuses a webhook whose sideEffects is not None/NoneOnDryRun (400, whatever the failure policy)
 *   - a webhook that cannot be called fails the request (500 "failed calling webhook") under failurePolicy
 *     Fail and is skipped under Ignore (audit annotation failed-open.*)
 *   - a denial is the webhook's Status, code at least 400, message 'admission webhook "<name>" denied the
 *     request: <message>'; warnings go to the client, audit annotations are recorded as "<webhook>/<key>"
 *   - mutating webhooks run one after another in the mutating phase, their JSONPatch applied and the result
 *     defaulted; one with reinvocationPolicy IfNeeded is called once more when a later webhook changed the
 *     object; validating webhooks run together in the validating phase
 */
import type { KObject, KindDecl, KindSettings } from '../kind.js';
import type { Admission, AdmissionAttributes, ResourceStore } from '../store.js';
import { ObjectCache } from '../kinds/rbac/cache.js';
import { apiErrors, isStatusError, StatusError, type Status } from '../errors.js';
import { labelSelectorAsSelector, type LabelSelector } from '../../util/labels.js';
import { applyJsonPatch } from '../patch.js';
import { ADMISSION_REGISTRATION_GROUP } from '../kinds/admissionregistration/index.js';
import type { Dialer } from '../../util/dial.js';
import type { Tracer } from '../../util/tracing.js';
import type { AdmissionMetricsSink } from './metrics.js';
import type { ServiceAddress, ServiceResolverDeps } from '../service-resolver.js';
import { CallError, callWebhook, type ClientConfig, type GVK, type GVR, type ReviewRequest, type ReviewResponse, type WebhookAuthResolver } from './webhook-call.js';

type Json = Record<string, any>;

interface Rule {
  operations: string[];
  apiGroups: string[];
  apiVersions: string[];
  resources: string[];
  scope: string;
}

/** One webhook of one configuration, with its selectors parsed. */
interface Hook {
  configuration: string;
  name: string;
  /** Unique within the server: configuration and position, for reinvocation bookkeeping. */
  key: string;
  rules: Rule[];
  failurePolicy: string;
  matchPolicy: string;
  sideEffects: string;
  timeoutSeconds: number;
  reviewVersions: string[];
  reinvocationPolicy: string;
  clientConfig: ClientConfig;
  namespaceSelector: LabelSelector | Error;
  objectSelector: LabelSelector | Error;
}

/** Where a matched webhook is called: the version it is called in, which may differ from the request's. */
interface Invocation {
  hook: Hook;
  decl: KindDecl;
}

export interface WebhookAdmissionDeps {
  /** The v1 store of MutatingWebhookConfiguration or ValidatingWebhookConfiguration. */
  configurations: () => ResourceStore | undefined;
  namespaces: () => ResourceStore | undefined;
  services: () => ResourceStore | undefined;
  /** With --enable-aggregator-routing: services resolve to an address of their Endpoints. */
  endpoints?: () => ResourceStore | undefined;
  /** The server's loopback address: `kubernetes` in `default`, port 443, is the server itself. */
  loopback?: () => ServiceAddress | undefined;
  /** Every declared kind, for matchPolicy Equivalent. */
  kinds: () => readonly KindDecl[];
  featureGates: Readonly<Record<string, boolean>>;
  settings: () => Readonly<KindSettings> | undefined;
  /** Credentials for the webhooks (the plugin's WebhookAdmissionConfiguration kubeConfigFile). */
  auth?: WebhookAuthResolver;
  /** The cluster egress (--egress-selector-config-file) the webhook calls go through. */
  dial?: Dialer;
  /** --tracing-config-file: each call is a client span of the request's span. */
  tracer?: Tracer;
  /** The admission webhook metrics (duration, requests, rejections); absent: not measured. */
  metrics?: AdmissionMetricsSink;
  log?: (message: string) => void;
}

/**
 * The mutating webhooks' part of the request's reinvocation context (Kubernetes' webhookReinvokeContext):
 * the IfNeeded webhooks called since the object last changed, those to call again on the second pass, and
 * the object as the webhooks last left it.
 */
interface ReinvokeState {
  previouslyInvoked: Set<string>;
  reinvoke: Set<string>;
  lastOutput: string | undefined;
}
const REINVOKE_KEY = 'MutatingAdmissionWebhook';

/** RequireReinvokingPreviouslyInvokedPlugins. */
function requireReinvoking(state: ReinvokeState): void {
  for (const k of state.previouslyInvoked) state.reinvoke.add(k);
  state.previouslyInvoked.clear();
}

const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

function parseSelector(spec: unknown): LabelSelector | Error {
  try {
    return labelSelectorAsSelector(isObject(spec) ? (spec) : {});
  } catch (err) {
    return err as Error;
  }
}

function hooksOf(configs: readonly KObject[], mutating: boolean): Hook[] {
  const sorted = [...configs].sort((a, b) => ((a.metadata?.name ?? '') < (b.metadata?.name ?? '') ? -1 : 1));
  const out: Hook[] = [];
  for (const c of sorted) {
    const configuration = c.metadata?.name ?? '';
    const hooks = Array.isArray(c['webhooks']) ? (c['webhooks'] as unknown[]) : [];
    hooks.forEach((h, i) => {
      if (!isObject(h)) return;
      out.push({
        configuration,
        name: String(h['name'] ?? ''),
        key: `${configuration}/${i}`,
        rules: (Array.isArray(h['rules']) ? (h['rules'] as unknown[]) : []).filter(isObject).map((r) => ({
          operations: strings(r['operations']),
          apiGroups: strings(r['apiGroups']),
          apiVersions: strings(r['apiVersions']),
          resources: strings(r['resources']),
          scope: typeof r['scope'] === 'string' ? r['scope'] : '*',
        })),
        failurePolicy: h['failurePolicy'] ?? 'Fail',
        matchPolicy: h['matchPolicy'] ?? 'Equivalent',
        sideEffects: h['sideEffects'] ?? 'Unknown',
        timeoutSeconds: typeof h['timeoutSeconds'] === 'number' ? h['timeoutSeconds'] : 10,
        reviewVersions: strings(h['admissionReviewVersions']),
        reinvocationPolicy: mutating ? (h['reinvocationPolicy'] ?? 'Never') : 'Never',
        clientConfig: isObject(h['clientConfig']) ? (h['clientConfig']) : {},
        namespaceSelector: parseSelector(h['namespaceSelector']),
        objectSelector: parseSelector(h['objectSelector']),
      });
    });
  }
  return out;
}

const isNamespaceResource = (decl: KindDecl) => decl.group === '' && decl.resource === 'namespaces';

/** rules.Matcher.Matches for a request on `decl` (the request's own version or an equivalent one). */
function ruleMatches(rule: Rule, a: AdmissionAttributes, decl: KindDecl): boolean {
  const nsObject = isNamespaceResource(decl);
  if (rule.scope === 'Namespaced' && (nsObject || a.namespace === '')) return false;
  if (rule.scope === 'Cluster' && !(nsObject || a.namespace === '')) return false;
  if (rule.scope !== '*' && rule.scope !== 'Namespaced' && rule.scope !== 'Cluster') return false;
  if (!rule.operations.some((op) => op === '*' || op === a.operation)) return false;
  if (!rule.apiGroups.some((g) => g === '*' || g === decl.group)) return false;
  if (!rule.apiVersions.some((v) => v === '*' || v === decl.version)) return false;
  return rule.resources.some((r) => {
    const slash = r.indexOf('/');
    const res = slash < 0 ? r : r.slice(0, slash);
    const sub = slash < 0 ? '' : r.slice(slash + 1);
    return (res === '*' || res === decl.resource) && (sub === '*' || sub === a.subresource);
  });
}

const storedAt = (d: KindDecl) => `${d.storedAs?.group ?? d.group}/${d.storedAs?.resource ?? d.resource}`;

/** The other versions of the request's resource (EquivalentResourcesFor): kinds stored in the same place. */
function equivalents(decl: KindDecl, kinds: readonly KindDecl[], subresource: string): KindDecl[] {
  const at = storedAt(decl);
  return kinds.filter((k) => {
    if (k === decl || storedAt(k) !== at || k.compute) return false;
    return subresource === '' || !!k.subresources?.[subresource as 'status' | 'finalize'];
  });
}

/** The object as the `to` version serves it (through the stored form). */
function convert(obj: KObject, from: KindDecl, to: KindDecl): KObject {
  if (from === to) return obj;
  const stored = from.storedAs ? from.storedAs.toStored(obj) : { ...obj, apiVersion: from.group ? `${from.group}/${from.version}` : from.version };
  const out = to.storedAs ? to.storedAs.fromStored(stored) : stored;
  return { ...out, apiVersion: to.group ? `${to.group}/${to.version}` : to.version, kind: to.kind };
}

const gvk = (d: KindDecl): GVK => ({ group: d.group, version: d.version, kind: d.kind });
function bodyKind(obj: KObject): GVK {
  const apiVersion = String(obj.apiVersion ?? '');
  const slash = apiVersion.indexOf('/');
  return { group: slash < 0 ? '' : apiVersion.slice(0, slash), version: slash < 0 ? apiVersion : apiVersion.slice(slash + 1), kind: String(obj.kind ?? '') };
}
const gvr = (d: KindDecl): GVR => ({ group: d.group, version: d.version, resource: d.resource });

/** A webhook's refusal (ErrWebhookRejection), told apart from other failures for the metrics. */
class Denial extends StatusError {}

/** ToStatusErr: the webhook's refusal as the client sees it. */
function denial(webhookName: string, status: Json | undefined): StatusError {
  const s: Status = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', code: 400 };
  if (isObject(status)) {
    if (typeof status['code'] === 'number' && status['code'] >= 400) s.code = status['code'];
    if (typeof status['reason'] === 'string' && status['reason'] !== '') s.reason = status['reason'];
    if (isObject(status['details'])) s.details = status['details'];
    if (isObject(status['metadata'])) s.metadata = status['metadata'];
  }
  const deniedBy = `admission webhook "${webhookName}" denied the request`;
  const message = isObject(status) && typeof status['message'] === 'string' ? status['message'] : '';
  if (message !== '') s.message = `${deniedBy}: ${message}`;
  else if (s.reason) s.message = `${deniedBy}: ${s.reason}`;
  else s.message = `${deniedBy} without explanation`;
  return new Denial(s);
}

/** Go's json.Marshal of a value (for annotations). */
const annotationJSON = (v: unknown) => JSON.stringify(v);

class WebhookDispatcher {
  private cache: ObjectCache | undefined;
  private nsCache: ObjectCache | undefined;
  private hooks: Hook[] | undefined;

  private readonly resolver: ServiceResolverDeps;

  constructor(
    private readonly deps: WebhookAdmissionDeps,
    private readonly mutating: boolean,
  ) {
    this.resolver = {
      services: deps.services,
      ...(deps.endpoints ? { endpoints: deps.endpoints } : {}),
      ...(deps.loopback ? { loopback: deps.loopback } : {}),
    };
  }

  /** The webhooks in effect, from a cache of the configurations kept by a watch. */
  private async currentHooks(): Promise<Hook[]> {
    if (!this.cache) {
      const store = this.deps.configurations();
      if (!store) return [];
      const cache = new ObjectCache(store);
      cache.onChange(() => {
        this.hooks = undefined;
      });
      this.cache = cache;
    }
    // Once loaded, no await: a server without webhook configurations pays a property read per request.
    if (!this.cache.isReady) await this.cache.ready();
    this.hooks ??= hooksOf(this.cache.list(), this.mutating);
    return this.hooks;
  }

  private async namespaceLabels(a: AdmissionAttributes): Promise<Record<string, string>> {
    if (isNamespaceResource(a.decl) && a.subresource === '' && (a.operation === 'CREATE' || a.operation === 'UPDATE')) {
      return a.object?.metadata?.labels ?? {};
    }
    const name = isNamespaceResource(a.decl) ? a.name : a.namespace;
    const store = this.deps.namespaces();
    if (!store) return {};
    if (!this.nsCache) this.nsCache = new ObjectCache(store);
    try {
      await this.nsCache.ready();
    } catch {
      // fall through to storage
    }
    const cached = this.nsCache.get('', name);
    if (cached) return cached.metadata?.labels ?? {};
    // In case the cache is behind, storage says whether it truly exists (a NotFound goes to the client).
    const ns = await store.get({ namespace: '' }, name);
    return ns.metadata?.labels ?? {};
  }

  /** ShouldCallHook: the version to call the webhook in, or undefined when it does not apply. */
  private async invocationFor(hook: Hook, a: AdmissionAttributes): Promise<Invocation | undefined> {
    let decl: KindDecl | undefined = hook.rules.some((r) => ruleMatches(r, a, a.decl)) ? a.decl : undefined;
    if (!decl && hook.matchPolicy === 'Equivalent') {
      const others = equivalents(a.decl, this.deps.kinds(), a.subresource);
      outer: for (const r of hook.rules) {
        for (const other of others) {
          if (ruleMatches(r, a, other)) {
            decl = other;
            break outer;
          }
        }
      }
    }
    if (!decl) return undefined;
    if (a.namespace !== '' || isNamespaceResource(a.decl)) {
      const sel = hook.namespaceSelector;
      if (sel instanceof Error) throw apiErrors.internal(sel.message);
      if (!sel.empty()) {
        let labels: Record<string, string>;
        try {
          labels = await this.namespaceLabels(a);
        } catch (err) {
          if (isStatusError(err)) throw err;
          throw apiErrors.internal((err as Error).message);
        }
        if (!sel.matches(labels)) return undefined;
      }
    }
    const osel = hook.objectSelector;
    if (osel instanceof Error) throw apiErrors.internal(osel.message);
    if (!osel.empty()) {
      const matches = (o: KObject | undefined) => !!o && osel.matches(o.metadata?.labels ?? {});
      if (!matches(a.object) && !matches(a.oldObject)) return undefined;
    }
    return { hook, decl };
  }

  private request(a: AdmissionAttributes, inv: Invocation): ReviewRequest {
    const optionsKind = a.operation === 'CREATE' ? 'CreateOptions' : a.operation === 'UPDATE' ? 'UpdateOptions' : 'DeleteOptions';
    // A create-only subresource (pods/eviction, pods/binding) sends its own body kind; a connect its options' kind.
    const body = a.subresource !== '' && a.object && a.object.kind !== a.decl.kind ? bodyKind(a.object) : undefined;
    const req: ReviewRequest = {
      kind: body ?? gvk(inv.decl),
      resource: gvr(inv.decl),
      requestKind: body ?? gvk(a.decl),
      requestResource: gvr(a.decl),
      operation: a.operation,
      userInfo: {
        ...(a.user?.name ? { username: a.user.name } : {}),
        ...(a.user?.uid ? { uid: a.user.uid } : {}),
        ...(a.user?.groups.length ? { groups: a.user.groups } : {}),
      },
      object: a.object ? convert(a.object, a.decl, inv.decl) : null,
      oldObject: a.oldObject ? convert(a.oldObject, a.decl, inv.decl) : null,
      dryRun: a.dryRun,
      // A connect has no operation options (its options object is the object).
      options: a.operation === 'CONNECT' ? null : { kind: optionsKind, apiVersion: 'meta.k8s.io/v1', ...(a.dryRun ? { dryRun: ['All'] } : {}) },
    };
    if (a.subresource) {
      req.subResource = a.subresource;
      req.requestSubResource = a.subresource;
    }
    if (a.name) req.name = a.name;
    if (a.namespace) req.namespace = a.namespace;
    return req;
  }

  /** Calls one webhook; CallError when it cannot be called, a StatusError for a dry run it cannot take. */
  private async call(a: AdmissionAttributes, inv: Invocation): Promise<ReviewResponse> {
    const hook = inv.hook;
    if (a.dryRun && hook.sideEffects !== 'None' && hook.sideEffects !== 'NoneOnDryRun') {
      throw apiErrors.badRequest(`admission webhook "${hook.name}" does not support dry run`);
    }
    const response = await callWebhook({
      webhookName: hook.name,
      clientConfig: hook.clientConfig,
      reviewVersions: hook.reviewVersions,
      timeoutSeconds: hook.timeoutSeconds,
      request: this.request(a, inv),
      resolver: this.resolver,
      mutating: this.mutating,
      ...(this.deps.auth ? { auth: this.deps.auth } : {}),
      ...(this.deps.dial ? { dial: this.deps.dial } : {}),
      ...(this.deps.tracer ? { tracer: this.deps.tracer } : {}),
    });
    for (const [k, v] of Object.entries(response.auditAnnotations ?? {})) {
      if (typeof v === 'string') a.annotate(`${hook.name}/${k}`, v);
    }
    for (const w of response.warnings ?? []) if (typeof w === 'string' && w.trim() !== '') a.warnings.push(w);
    return response;
  }

  /** A call error under the hook's failure policy: ignored (with an annotation) or a 500. */
  private failed(err: unknown, hook: Hook, a: AdmissionAttributes, annotationKey: string): void {
    if (!(err instanceof CallError)) throw err;
    if (hook.failurePolicy === 'Ignore') {
      this.deps.log?.(`Failed calling webhook, failing open ${hook.name}: ${err.message}`);
      a.annotate(annotationKey, hook.name);
      return;
    }
    this.deps.log?.(`Failed calling webhook, failing closed ${hook.name}: ${err.message}`);
    throw apiErrors.internal(err.message);
  }

  /**
   * The mutating phase (mutatingDispatcher.Dispatch). On the chain's second pass (isReinvoke) only the
   * webhooks marked for reinvocation are called, and all IfNeeded ones called before are marked when the
   * object changed since the webhooks last left it (an in-tree plugin changed it on that pass).
   */
  async mutate(a: AdmissionAttributes): Promise<void> {
    if (a.decl.group === ADMISSION_REGISTRATION_GROUP || !a.object) return;
    const hooks = await this.currentHooks();
    if (hooks.length === 0) return;
    const r = (a.reinvocation ??= { isReinvoke: false, shouldReinvoke: false, values: new Map() });
    let state = r.values.get(REINVOKE_KEY) as ReinvokeState | undefined;
    if (!state) r.values.set(REINVOKE_KEY, (state = { previouslyInvoked: new Set(), reinvoke: new Set(), lastOutput: undefined }));
    if (r.isReinvoke && state.lastOutput !== undefined && JSON.stringify(a.object) !== state.lastOutput) requireReinvoking(state);
    const round = r.isReinvoke ? 1 : 0;
    try {
      for (let i = 0; i < hooks.length; i++) {
        const hook = hooks[i]!;
        const inv = await this.invocationFor(hook, a);
        if (!inv) continue;
        // A webhook not called on the first pass is never called for the first time on the second.
        if (r.isReinvoke && !state.reinvoke.has(hook.key)) continue;
        const start = performance.now();
        let changed = false;
        let failure: unknown;
        try {
          changed = await this.callMutating(a, inv, round, i);
        } catch (err) {
          failure = err;
        }
        this.observe(hook, a, start, failure);
        if (changed) {
          requireReinvoking(state);
          r.shouldReinvoke = true;
        }
        if (hook.reinvocationPolicy === 'IfNeeded') state.previouslyInvoked.add(hook.key);
        if (failure !== undefined) this.failed(failure, hook, a, `failed-open.mutation.webhook.admission.k8s.io/round_${round}_index_${i}`);
      }
    } finally {
      // The object as the webhooks left it matters only to IfNeeded webhooks waiting for a later change.
      state.lastOutput = state.previouslyInvoked.size > 0 ? JSON.stringify(a.object) : undefined;
    }
  }

  /** ObserveWebhook and ObserveWebhookRejection for one call, classified as 1.23's dispatchers classify it. */
  private observe(hook: Hook, a: AdmissionAttributes, start: number, failure: unknown): void {
    const m = this.deps.metrics;
    if (!m) return;
    const type = this.mutating ? 'admit' : 'validating';
    const seconds = (performance.now() - start) / 1000;
    if (failure === undefined) {
      m.webhook(hook.name, type, a.operation, false, 200, seconds);
    } else if (failure instanceof CallError) {
      const rejected = hook.failurePolicy !== 'Ignore';
      if (rejected) m.webhookRejection(hook.name, type, a.operation, 'calling_webhook_error', failure.code);
      m.webhook(hook.name, type, a.operation, rejected, failure.code, seconds);
    } else if (failure instanceof Denial) {
      const code = failure.status.code ?? 400;
      m.webhookRejection(hook.name, type, a.operation, 'no_error', code);
      m.webhook(hook.name, type, a.operation, true, code, seconds);
    } else {
      m.webhookRejection(hook.name, type, a.operation, 'apiserver_internal_error', 0);
      m.webhook(hook.name, type, a.operation, true, 0, seconds);
    }
  }

  /** A delete through the mutating webhooks: each may refuse; there is no object to patch. */
  async mutateDelete(a: AdmissionAttributes): Promise<void> {
    if (a.decl.group === ADMISSION_REGISTRATION_GROUP) return;
    const hooks = await this.currentHooks();
    for (let i = 0; i < hooks.length; i++) {
      const hook = hooks[i]!;
      const inv = await this.invocationFor(hook, a);
      if (!inv) continue;
      await this.callToAdmit(a, inv, `failed-open.mutation.webhook.admission.k8s.io/round_0_index_${i}`);
    }
  }

  /** Calls a webhook that can only allow or refuse (validating, or mutating on a delete), measured. */
  private async callToAdmit(a: AdmissionAttributes, inv: Invocation, failedOpenKey: string): Promise<void> {
    const start = performance.now();
    let failure: unknown;
    try {
      const response = await this.call(a, inv);
      if (response.allowed !== true) failure = denial(inv.hook.name, response.status);
    } catch (err) {
      failure = err;
    }
    this.observe(inv.hook, a, start, failure);
    if (failure !== undefined) this.failed(failure, inv.hook, a, failedOpenKey);
  }

  /** Calls a mutating webhook and applies its patch to the request's object; whether the object changed. */
  private async callMutating(a: AdmissionAttributes, inv: Invocation, round: number, index: number): Promise<boolean> {
    const hook = inv.hook;
    const response = await this.call(a, inv);
    const annotateMutation = (mutated: boolean) =>
      a.annotate(
        `mutation.webhook.admission.k8s.io/round_${round}_index_${index}`,
        annotationJSON({ configuration: hook.configuration, webhook: hook.name, mutated }),
      );
    if (response.allowed !== true) {
      annotateMutation(false);
      throw denial(hook.name, response.status);
    }
    if (!response.patch) {
      annotateMutation(false);
      return false;
    }
    const patch = Buffer.from(response.patch, 'base64').toString('utf8');
    // jsonpatch.DecodePatch: a patch that is not a JSON array is the webhook's failure (its failure policy applies);
    // an empty one changes nothing (no defaulting either).
    let operations: unknown;
    try {
      operations = JSON.parse(patch);
      if (!Array.isArray(operations)) throw new Error('a JSON patch is an array of operations');
    } catch (err) {
      annotateMutation(false);
      throw new CallError(hook.name, `received undecodable patch in webhook response: ${(err as Error).message}`);
    }
    if (operations.length === 0) {
      annotateMutation(false);
      return false;
    }
    const sent = convert(a.object!, a.decl, inv.decl);
    let patched: KObject;
    try {
      patched = applyJsonPatch(sent, patch) as KObject;
    } catch (err) {
      if (isStatusError(err)) throw apiErrors.internal(err.status.message ?? 'invalid patch');
      throw err;
    }
    const settings = this.deps.settings();
    // Defaulted as the kind defaults (not a subresource's own body kind).
    if (patched.kind === undefined || patched.kind === inv.decl.kind) inv.decl.strategy.default?.(patched, {
      featureGates: this.deps.featureGates,
      namespace: a.namespace,
      subresource: a.subresource,
      ...(a.user ? { user: a.user } : {}),
      ...(settings ? { settings } : {}),
      dryRun: a.dryRun,
    });
    const back = convert(patched, inv.decl, a.decl);
    const before = JSON.stringify(a.object);
    const obj = a.object!;
    for (const k of Object.keys(obj)) delete obj[k];
    Object.assign(obj, back);
    const changed = JSON.stringify(obj) !== before;
    annotateMutation(changed);
    return changed;
  }

  async validate(a: AdmissionAttributes): Promise<void> {
    if (a.decl.group === ADMISSION_REGISTRATION_GROUP) return;
    const hooks = await this.currentHooks();
    if (hooks.length === 0) return;
    const relevant: Invocation[] = [];
    for (const hook of hooks) {
      const inv = await this.invocationFor(hook, a);
      if (inv) relevant.push(inv);
    }
    if (relevant.length === 0) return;
    const results = await Promise.allSettled(
      relevant.map((inv, i) => this.callToAdmit(a, inv, `failed-open.validating.webhook.admission.k8s.io/round_0_index_${i}`)),
    );
    for (const r of results) if (r.status === 'rejected') throw r.reason;
  }
}

/**
 * The MutatingAdmissionWebhook plugin: the mutating phase; deletes (which the store sends only to the
 * validating phase, there being no object to change) are sent to the mutating webhooks there, which may refuse.
 */
export function mutatingWebhookAdmission(deps: WebhookAdmissionDeps): Admission {
  const d = new WebhookDispatcher(deps, true);
  return { mutate: (a) => d.mutate(a), validate: (a) => (a.operation === 'DELETE' ? d.mutateDelete(a) : Promise.resolve()), handlesConnect: true };
}

/** The ValidatingAdmissionWebhook plugin (the validating phase only). */
export function validatingWebhookAdmission(deps: WebhookAdmissionDeps): Admission {
  const d = new WebhookDispatcher(deps, false);
  return { validate: (a) => d.validate(a), handlesConnect: true };
}
