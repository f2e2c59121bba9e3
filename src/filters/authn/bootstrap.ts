/**
 * --enable-bootstrap-token-auth, as Kubernetes 1.23's bootstrap token authenticator
 * (plugin/pkg/auth/authenticator/token/bootstrap): a bearer token `<id>.<secret>` (6 and 16 characters of
 * [a-z0-9]) names the Secret `bootstrap-token-<id>` in kube-system, which must be of type
 * bootstrap.kubernetes.io/token, not being deleted, hold the same token-id and token-secret, allow
 * authentication (usage-bootstrap-authentication=true) and not be past its `expiration` (RFC 3339). The user
 * is system:bootstrap:<id> in system:bootstrappers plus the secret's auth-extra-groups (each
 * system:bootstrappers:..., the list sorted). Any mismatch leaves the token to other authenticators
 * (Kubernetes only logs it).
 */
import { timingSafeEqual } from 'node:crypto';
import type { KObject } from '../../registry/kind.js';
import type { TokenAuthenticator, TokenResult } from './token.js';

export const BOOTSTRAP_TOKEN_SECRET_TYPE = 'bootstrap.kubernetes.io/token';
export const BOOTSTRAP_NAMESPACE = 'kube-system';
const TOKEN = /^([a-z0-9]{6})\.([a-z0-9]{16})$/;
const EXTRA_GROUP = /^system:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]$/;

/** Reads kube-system's Secret of that name; undefined when absent. */
export type SecretGetter = (name: string) => Promise<KObject | undefined>;

function dataOf(secret: KObject, key: string): string | undefined {
  const data = (secret as { data?: Record<string, unknown> }).data;
  const v = data?.[key];
  return typeof v === 'string' ? Buffer.from(v, 'base64').toString('utf8') : undefined;
}

function sameString(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

export function bootstrapTokenAuthenticator(getSecret: SecretGetter, now: () => number = Date.now): TokenAuthenticator {
  return {
    async authenticateToken(token): Promise<TokenResult> {
      const m = TOKEN.exec(token);
      if (!m) return { status: 'unknown' };
      const [, id, secretPart] = m as unknown as [string, string, string];
      const secret = await getSecret(`bootstrap-token-${id}`);
      if (!secret || secret.metadata?.deletionTimestamp) return { status: 'unknown' };
      if ((secret as { type?: unknown }).type !== BOOTSTRAP_TOKEN_SECRET_TYPE) return { status: 'unknown' };
      if (!sameString(dataOf(secret, 'token-secret') ?? '', secretPart)) return { status: 'unknown' };
      if (dataOf(secret, 'token-id') !== id) return { status: 'unknown' };
      const expiration = dataOf(secret, 'expiration');
      if (expiration !== undefined && expiration !== '') {
        const at = Date.parse(expiration);
        if (Number.isNaN(at) || at < now()) return { status: 'unknown' };
      }
      if (dataOf(secret, 'usage-bootstrap-authentication') !== 'true') return { status: 'unknown' };
      // As Kubernetes' GetGroups: every listed group valid, deduplicated with the default one, sorted.
      const listed = dataOf(secret, 'auth-extra-groups') ?? '';
      const extra = listed === '' ? [] : listed.split(',');
      if (extra.some((g) => !EXTRA_GROUP.test(g))) return { status: 'unknown' };
      const groups = [...new Set(['system:bootstrappers', ...extra])].sort();
      return { status: 'authenticated', user: { name: `system:bootstrap:${id}`, groups } };
    },
  };
}
