/**
 * --authentication-token-webhook-config-file, as Kubernetes 1.23's webhook token authenticator
 * (plugin/pkg/authenticator/token/webhook with the token cache): each bearer token becomes a TokenReview
 * (authentication.k8s.io/v1beta1 by default, or v1: --authentication-token-webhook-version) POSTed to the
 * server of the kubeconfig-format file; the user is the review's status.user. Answers, authenticated or
 * not, are cached by token and audiences for --authentication-token-webhook-cache-ttl; errors are not
 * cached. A failing webhook is retried with backoff (500 ms, ×1.5, 5 attempts), then the error is reported.
 */
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { UserInfo } from '../../endpoints/http.js';
import type { WebhookTarget } from '../audit/webhook.js';
import { loadWebhookFor, postJSON, WebhookCallError } from '../webhookclient.js';
import type { Dialer } from '../../util/dial.js';
import { intersectAudiences, type TokenAuthenticator, type TokenResult } from './token.js';

export interface TokenWebhookConfig {
  configFile: string;
  /** 'v1beta1' (default) or 'v1'. */
  version: string;
  cacheTTLMs: number;
  /** The API audiences, implied when the webhook's answer names none. */
  apiAudiences: readonly string[];
  /** First retry delay; default 500 ms (tests shorten it). */
  initialBackoffMs?: number;
  requestTimeoutMs?: number;
  /** The controlplane egress (--egress-selector-config-file) the calls go through. */
  dial?: Dialer;
}

type Json = Record<string, unknown>;
const ATTEMPTS = 5;
const MAX_CACHE = 10_000;


/** Reads the webhook's kubeconfig; errors name the option. */
export function loadTokenWebhook(path: string): WebhookTarget {
  return loadWebhookFor('--authentication-token-webhook-config-file', path);
}


const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);

function userOf(u: Json): UserInfo {
  const user: UserInfo = { name: typeof u['username'] === 'string' ? u['username'] : '', groups: strings(u['groups']) };
  if (typeof u['uid'] === 'string' && u['uid'] !== '') user.uid = u['uid'];
  const extra = u['extra'];
  if (extra && typeof extra === 'object') {
    const e: Record<string, string[]> = {};
    for (const [k, v] of Object.entries(extra as Json)) e[k] = strings(v);
    if (Object.keys(e).length > 0) user.extra = e;
  }
  return user;
}

export function webhookTokenAuthenticator(cfg: TokenWebhookConfig, loaded = loadTokenWebhook(cfg.configFile)): TokenAuthenticator {
  const target = cfg.dial ? { ...loaded, dial: cfg.dial } : loaded;
  const apiVersion = `authentication.k8s.io/${cfg.version === 'v1' ? 'v1' : 'v1beta1'}`;
  const cache = new Map<string, { result: TokenResult; expires: number }>();

  const review = async (token: string, audiences: readonly string[] | undefined): Promise<Json> => {
    const spec: Json = { token, ...(audiences && audiences.length > 0 ? { audiences } : {}) };
    const body = JSON.stringify({ apiVersion, kind: 'TokenReview', metadata: { creationTimestamp: null }, spec, status: { user: {} } });
    let delay = cfg.initialBackoffMs ?? 500;
    for (let attempt = 1; ; attempt++) {
      try {
        const answer = await postJSON(target, body, cfg.requestTimeoutMs ?? 30_000);
        return (answer['status'] ?? {}) as Json;
      } catch (e) {
        if ((e instanceof WebhookCallError && !e.retriable) || attempt >= ATTEMPTS) throw e;
        await sleep(delay);
        delay *= 1.5;
      }
    }
  };

  const ask = async (token: string, audiences: readonly string[] | undefined): Promise<TokenResult> => {
    let status: Json;
    try {
      status = await review(token, audiences);
    } catch (e) {
      return { status: 'failed', reason: (e as Error).message };
    }
    // As Kubernetes: audiences first (the answer's, else the API audiences), a mismatch leaving the token to others.
    let auds: string[] | undefined;
    if (audiences && audiences.length > 0) {
      const answered = strings(status['audiences']);
      auds = intersectAudiences(audiences, answered.length > 0 ? answered : cfg.apiAudiences);
      if (auds.length === 0) return { status: 'unknown' };
    }
    if (status['authenticated'] !== true) {
      const error = typeof status['error'] === 'string' ? status['error'] : '';
      return error !== '' ? { status: 'failed', reason: error } : { status: 'unknown' };
    }
    const user = userOf((status['user'] ?? {}) as Json);
    return auds ? { status: 'authenticated', user, audiences: auds } : { status: 'authenticated', user };
  };

  return {
    async authenticateToken(token, audiences) {
      const key = createHash('sha256').update(JSON.stringify([token, audiences ?? null])).digest('hex');
      const now = Date.now();
      const hit = cache.get(key);
      if (hit && hit.expires > now) return hit.result;
      cache.delete(key);
      const result = await ask(token, audiences);
      if (result.status !== 'failed' && cfg.cacheTTLMs > 0) {
        cache.set(key, { result, expires: now + cfg.cacheTTLMs });
        if (cache.size > MAX_CACHE) cache.delete(cache.keys().next().value!);
      }
      return result;
    },
  };
}
