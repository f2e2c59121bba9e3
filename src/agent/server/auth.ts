// Authentication and authorization on the agent's main server, as kubelet's (pkg/kubelet/server/auth.go,
// cmd/kubelet/app/auth.go):
//   authentication, first success wins:
//     - a client certificate verified by --client-ca-file: user = CN, groups = O;
//     - a bearer token, with --authentication-token-webhook: a TokenReview to the API server (answers
//       cached for --authentication-token-webhook-cache-ttl); a token that does not authenticate is a 401;
//     - else, with --anonymous-auth, system:anonymous in group system:unauthenticated; else 401.
//   authorization (--authorization-mode):
//     - AlwaysAllow;
//     - Webhook: a SubjectAccessReview to the API server for the resource nodes/<subresource> named after
//       the node, with the verb of the method (GET/HEAD get, POST create, PUT update, PATCH patch, DELETE
//       delete) and the subresource of the path (/stats → stats, /metrics → metrics, /logs → log, /spec →
//       spec, anything else proxy); allowed answers cached for --authorization-webhook-cache-authorized-ttl,
//       denied ones for --authorization-webhook-cache-unauthorized-ttl. A denial is 403
//       "Forbidden (user=..., verb=..., resource=nodes, subresource=...)".
import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { ApiClient, Json } from '../client/client.js';

export interface AgentUser {
  name: string;
  uid?: string;
  groups: string[];
  extra?: Record<string, string[]>;
}

export interface AgentAuthOptions {
  anonymousAuth: boolean;
  /** --client-ca-file given: client certificates are verified by it (the TLS server asks for them). */
  clientCA?: string;
  /** --authentication-token-webhook: TokenReview answers cached this long (ms). */
  tokenWebhookCacheTTLMs?: number;
  authorizationMode?: 'AlwaysAllow' | 'Webhook';
  authorizedTTLMs?: number;
  unauthorizedTTLMs?: number;
}

export interface AuthDecision {
  code: 401 | 403 | 500;
  message: string;
}

class TTLCache<V> {
  private readonly m = new Map<string, { v: V; until: number }>();
  get(k: string): V | undefined {
    const e = this.m.get(k);
    if (!e) return undefined;
    if (e.until <= Date.now()) {
      this.m.delete(k);
      return undefined;
    }
    return e.v;
  }
  set(k: string, v: V, ttlMs: number): void {
    if (ttlMs <= 0) return;
    if (this.m.size > 10_000) this.m.clear();
    this.m.set(k, { v, until: Date.now() + ttlMs });
  }
}

const VERBS: Record<string, string> = { GET: 'get', HEAD: 'get', POST: 'create', PUT: 'update', PATCH: 'patch', DELETE: 'delete' };

/** kubelet's GetRequestAttributes: the subresource of nodes a path is authorized as. */
export function nodeSubresource(path: string): string {
  const under = (p: string) => path === p || path.startsWith(`${p}/`);
  if (under('/stats')) return 'stats';
  if (under('/metrics')) return 'metrics';
  if (under('/logs')) return 'log';
  if (under('/spec')) return 'spec';
  return 'proxy';
}

export class AgentAuth {
  private readonly tokens = new TTLCache<AgentUser | null>();
  private readonly decisions = new TTLCache<boolean>();

  constructor(
    private readonly o: AgentAuthOptions,
    private readonly nodeName: string,
    private readonly client: () => ApiClient | undefined,
  ) {}

  /** The request's user; null for 401. */
  async authenticate(req: IncomingMessage): Promise<AgentUser | null> {
    const sock = req.socket as TLSSocket;
    if (this.o.clientCA !== undefined && sock.authorized === true && typeof sock.getPeerCertificate === 'function') {
      const peer = sock.getPeerCertificate();
      const cn = peer?.subject?.CN;
      if (cn) {
        const o = peer.subject.O;
        return { name: Array.isArray(cn) ? cn[0]! : cn, groups: [...(o === undefined ? [] : Array.isArray(o) ? o : [o]), 'system:authenticated'] };
      }
    }
    const auth = req.headers.authorization;
    const bearer = auth !== undefined ? /^Bearer\s+(\S+)\s*$/i.exec(auth)?.[1] : undefined;
    if (bearer !== undefined && this.o.tokenWebhookCacheTTLMs !== undefined) return this.reviewToken(bearer);
    if (this.o.anonymousAuth) return { name: 'system:anonymous', groups: ['system:unauthenticated'] };
    return null;
  }

  private async reviewToken(token: string): Promise<AgentUser | null> {
    const cached = this.tokens.get(token);
    if (cached !== undefined) return cached;
    const client = this.client();
    if (!client) return null;
    const review = await client.create<Json>('/apis/authentication.k8s.io/v1/tokenreviews', {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenReview',
      spec: { token },
    });
    const status = (review['status'] ?? {}) as Json;
    let user: AgentUser | null = null;
    if (status['authenticated'] === true) {
      const u = (status['user'] ?? {}) as Json;
      user = {
        name: typeof u['username'] === 'string' ? u['username'] : '',
        groups: Array.isArray(u['groups']) ? (u['groups'] as string[]) : [],
        ...(typeof u['uid'] === 'string' && u['uid'] !== '' ? { uid: u['uid'] } : {}),
        ...(u['extra'] && typeof u['extra'] === 'object' ? { extra: u['extra'] as Record<string, string[]> } : {}),
      };
    }
    this.tokens.set(token, user, this.o.tokenWebhookCacheTTLMs ?? 0);
    return user;
  }

  /** Whether the user may make this request. */
  async authorize(user: AgentUser, method: string, path: string): Promise<{ allowed: boolean; verb: string; subresource: string }> {
    const verb = VERBS[method.toUpperCase()] ?? '';
    const subresource = nodeSubresource(path);
    if (this.o.authorizationMode !== 'Webhook') return { allowed: true, verb, subresource };
    const key = JSON.stringify([user.name, user.uid ?? '', [...user.groups].sort(), user.extra ?? {}, verb, subresource]);
    const cached = this.decisions.get(key);
    if (cached !== undefined) return { allowed: cached, verb, subresource };
    const client = this.client();
    if (!client) return { allowed: false, verb, subresource };
    const review = await client.create<Json>('/apis/authorization.k8s.io/v1/subjectaccessreviews', {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SubjectAccessReview',
      spec: {
        user: user.name,
        groups: user.groups,
        ...(user.uid !== undefined ? { uid: user.uid } : {}),
        ...(user.extra ? { extra: user.extra } : {}),
        resourceAttributes: { verb, group: '', version: 'v1', resource: 'nodes', subresource, name: this.nodeName },
      },
    });
    const allowed = (review['status'] as Json | undefined)?.['allowed'] === true;
    this.decisions.set(key, allowed, allowed ? (this.o.authorizedTTLMs ?? 300_000) : (this.o.unauthorizedTTLMs ?? 30_000));
    return { allowed, verb, subresource };
  }

  /** kubelet's InstallAuthFilter: null when the request may go on, else the answer to send. */
  async check(req: IncomingMessage): Promise<AuthDecision | null> {
    let user: AgentUser | null;
    try {
      user = await this.authenticate(req);
    } catch {
      return { code: 401, message: 'Unauthorized' };
    }
    if (!user) return { code: 401, message: 'Unauthorized' };
    const path = new URL(req.url ?? '/', 'http://agent').pathname;
    try {
      const d = await this.authorize(user, req.method ?? 'GET', path);
      if (!d.allowed) return { code: 403, message: `Forbidden (user=${user.name}, verb=${d.verb}, resource=nodes, subresource=${d.subresource})` };
    } catch {
      return { code: 500, message: `Authorization error (user=${user.name}, verb=${VERBS[(req.method ?? 'GET').toUpperCase()] ?? ''}, resource=nodes, subresource=${nodeSubresource(path)})` };
    }
    return null;
  }
}
