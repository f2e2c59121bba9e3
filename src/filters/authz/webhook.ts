/**
 * --authorization-mode=Webhook, as Kubernetes' WebhookAuthorizer: each request becomes a SubjectAccessReview
 * (authorization.k8s.io/v1beta1 by default, or v1: --authorization-webhook-version) POSTed to the server of
 * the kubeconfig-format --authorization-webhook-config-file. Answers are cached by the review's spec for
 * --authorization-webhook-cache-authorized-ttl / -unauthorized-ttl; a failing webhook is retried with
 * backoff (500 ms, ×1.5, 5 attempts), then has no opinion and reports the error (a 500 unless a later
 * authorizer allows). The webhook cannot enumerate rules: SelfSubjectRulesReview is marked incomplete.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { AccessAttributes, AccessAuthorizer, AccessUser, AuthorizationResult } from '../../registry/kinds/authorization/attributes.js';
import type { WebhookTarget } from '../audit/webhook.js';
import { loadWebhookFor, postJSON, WebhookCallError } from '../webhookclient.js';
import type { Dialer } from '../../util/dial.js';

export interface WebhookAuthorizerConfig {
  configFile: string;
  /** 'v1beta1' (default) or 'v1'. */
  version: string;
  authorizedTTLMs: number;
  unauthorizedTTLMs: number;
  /** Per request; default 30 s. */
  requestTimeoutMs?: number;
  /** First retry delay; default 500 ms (tests shorten it). */
  initialBackoffMs?: number;
  /** The controlplane egress (--egress-selector-config-file) the calls go through. */
  dial?: Dialer;
}

type Json = Record<string, any>;

const MAX_CONTROLLED_ATTR_CACHE_SIZE = 10_000;
const ATTEMPTS = 5;
const BACKOFF_FACTOR = 1.5;

/** Reads the webhook's kubeconfig; errors name the option. */
export function loadAuthorizationWebhook(path: string): WebhookTarget {
  return loadWebhookFor('--authorization-webhook-config-file', path);
}

/** The review's spec, in the requested version's field names (v1beta1 calls the groups `group`). */
export function reviewSpec(user: AccessUser | undefined, a: AccessAttributes, version: string): Json {
  const spec: Json = {};
  if (a.isResourceRequest) {
    const r: Json = {};
    for (const [k, v] of [
      ['namespace', a.namespace],
      ['verb', a.verb],
      ['group', a.apiGroup],
      ['version', a.apiVersion],
      ['resource', a.resource],
      ['subresource', a.subresource],
      ['name', a.name],
    ] as const) {
      if (v) r[k] = v;
    }
    spec['resourceAttributes'] = r;
  } else {
    spec['nonResourceAttributes'] = { ...(a.path ? { path: a.path } : {}), ...(a.verb ? { verb: a.verb } : {}) };
  }
  if (user) {
    if (user.name) spec['user'] = user.name;
    if (user.groups.length > 0) spec[version === 'v1' ? 'groups' : 'group'] = user.groups;
    if (user.extra && Object.keys(user.extra).length > 0) spec['extra'] = user.extra;
    if (user.uid) spec['uid'] = user.uid;
  }
  return spec;
}

/** shouldCache: requests whose caller-controlled attributes are huge are not cached. */
function shouldCache(a: AccessAttributes): boolean {
  const size = a.namespace.length + a.verb.length + a.apiGroup.length + a.apiVersion.length + a.resource.length + a.subresource.length + a.name.length + a.path.length;
  return size < MAX_CONTROLLED_ATTR_CACHE_SIZE;
}



export function webhookAuthorizer(cfg: WebhookAuthorizerConfig, loaded = loadAuthorizationWebhook(cfg.configFile)): AccessAuthorizer {
  const target = cfg.dial ? { ...loaded, dial: cfg.dial } : loaded;
  const version = cfg.version === 'v1' ? 'v1' : 'v1beta1';
  const apiVersion = `authorization.k8s.io/${version}`;
  const cache = new Map<string, { status: Json; expires: number }>();

  const review = async (spec: Json): Promise<Json> => {
    const body = JSON.stringify({ apiVersion, kind: 'SubjectAccessReview', metadata: { creationTimestamp: null }, spec, status: { allowed: false } });
    let delay = cfg.initialBackoffMs ?? 500;
    for (let attempt = 1; ; attempt++) {
      try {
        const answer = await postJSON(target, body, cfg.requestTimeoutMs ?? 30_000);
        return (answer['status'] ?? {}) as Json;
      } catch (e) {
        const retriable = e instanceof WebhookCallError ? e.retriable : true;
        if (!retriable || attempt >= ATTEMPTS) throw e;
        await sleep(delay);
        delay *= BACKOFF_FACTOR;
      }
    }
  };

  return {
    async authorize(user, attrs): Promise<AuthorizationResult> {
      const spec = reviewSpec(user, attrs, version);
      const key = JSON.stringify(spec);
      const now = Date.now();
      let status = cache.get(key);
      if (!status || status.expires <= now) {
        cache.delete(key);
        let answer: Json;
        try {
          answer = await review(spec);
        } catch (e) {
          return { decision: 'noOpinion', reason: '', error: (e as Error).message };
        }
        status = { status: answer, expires: now + (answer['allowed'] === true ? cfg.authorizedTTLMs : cfg.unauthorizedTTLMs) };
        if (shouldCache(attrs)) {
          cache.set(key, status);
          if (cache.size > 10_000) cache.delete(cache.keys().next().value!);
        }
      }
      const s = status.status;
      const reason = typeof s['reason'] === 'string' ? s['reason'] : '';
      if (s['denied'] === true && s['allowed'] === true) {
        return { decision: 'deny', reason, error: 'webhook subject access review returned both allow and deny response' };
      }
      if (s['denied'] === true) return { decision: 'deny', reason };
      if (s['allowed'] === true) return { decision: 'allow', reason };
      return { decision: 'noOpinion', reason };
    },
    rulesFor: () => ({ resourceRules: [], nonResourceRules: [], incomplete: true, error: 'webhook authorizer does not support user rule resolution' }),
  };
}
