/**
 * The tokens controller of kube-controller-manager 1.23 (pkg/controller/serviceaccount/tokens_controller.go):
 *   - every ServiceAccount references a secret of type kubernetes.io/service-account-token named
 *     <account>-token-<5 random>, annotated with the account's name and uid and holding a legacy token
 *     (iss kubernetes/serviceaccount), ca.crt and the namespace; one is created when none is referenced;
 *   - a token secret without a token (made by a user, annotated with an account's name) is filled in, and
 *     ca.crt and namespace kept right;
 *   - a token secret whose account is gone is deleted, as are an account's token secrets when it is deleted;
 *     a deleted token secret is dropped from its account's list (so a new one is made).
 * kube-controller-manager signs with --service-account-private-key-file; orch runs it in-process with the
 * server's --service-account-signing-key-file, so the server only needs that key among its verifying keys.
 */
import { isStatusError } from '../../registry/errors.js';
import type { KObject } from '../../registry/kind.js';
import { legacyClaims, LEGACY_ISSUER, TokenSigner } from '../../registry/kinds/authentication/tokens.js';
import { SECRET_TYPE_SERVICE_ACCOUNT_TOKEN, SERVICE_ACCOUNT_NAME_KEY, SERVICE_ACCOUNT_UID_KEY } from '../../registry/kinds/secret.js';
import type { Registry } from '../../registry/registry.js';
import { generateName, type ResourceStore } from '../../registry/store.js';
import { keyedQueue, watchAll } from './serviceaccounts.js';
import type { Controller } from './runner.js';
import type { KeyObject } from 'node:crypto';

const USER = { name: 'system:serviceaccount:kube-system:tokens-controller', groups: ['system:serviceaccounts', 'system:serviceaccounts:kube-system'] };
const MAX_CREATE_ATTEMPTS = 8;

type Json = Record<string, any>;
const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');
const unb64 = (v: unknown) => (typeof v === 'string' ? Buffer.from(v, 'base64').toString('utf8') : '');

/** serviceaccount.IsServiceAccountToken: a token secret of this account (by name, and uid when annotated). */
export function isTokenOf(secret: KObject, sa: KObject): boolean {
  if (secret['type'] !== SECRET_TYPE_SERVICE_ACCOUNT_TOKEN) return false;
  const a = secret.metadata?.annotations ?? {};
  if (a[SERVICE_ACCOUNT_NAME_KEY] !== sa.metadata?.name) return false;
  const uid = a[SERVICE_ACCOUNT_UID_KEY];
  return uid === undefined || uid === '' || uid === sa.metadata?.uid;
}

async function getOrUndefined(store: ResourceStore, namespace: string, name: string): Promise<KObject | undefined> {
  try {
    return await store.get({ namespace }, name);
  } catch (err) {
    if (isStatusError(err, 'NotFound')) return undefined;
    throw err;
  }
}

async function deleteQuietly(store: ResourceStore, namespace: string, name: string, uid?: string): Promise<void> {
  try {
    await store.delete({ namespace, user: USER }, name, uid ? { preconditions: { uid } } : {});
  } catch (err) {
    if (!isStatusError(err, 'NotFound') && !isStatusError(err, 'Conflict')) throw err;
  }
}

export function startTokensController(registry: Registry, opts: { signingKey: KeyObject; rootCA: string; log?: (m: string) => void }): Controller {
  const accounts = registry.store('', 'v1', 'serviceaccounts')!;
  const secrets = registry.store('', 'v1', 'secrets')!;
  const signer = new TokenSigner(LEGACY_ISSUER, opts.signingKey);
  const log = opts.log ?? (() => {});

  /** ensureReferencedToken: the account references a token secret of its own, or gets a new one. */
  const syncAccount = async (namespace: string, name: string): Promise<void> => {
    const sa = await getOrUndefined(accounts, namespace, name);
    if (!sa || sa.metadata?.deletionTimestamp) return;
    for (const ref of (sa['secrets'] ?? []) as Json[]) {
      const secret = typeof ref['name'] === 'string' ? await getOrUndefined(secrets, namespace, ref['name']) : undefined;
      if (secret && isTokenOf(secret, sa)) return;
    }
    const secret = await createTokenSecret(sa);
    try {
      await accounts.update({ namespace, user: USER }, name, (live) => {
        if (!live || live.metadata?.uid !== sa.metadata?.uid) throw new Error('service account changed while its token was made');
        const next = structuredClone(live);
        next['secrets'] = [...((next['secrets'] ?? []) as Json[]), { name: secret.metadata!.name }];
        return next;
      });
    } catch (err) {
      await deleteQuietly(secrets, namespace, secret.metadata!.name!, secret.metadata!.uid);
      throw err;
    }
  };

  const createTokenSecret = async (sa: KObject): Promise<KObject> => {
    const namespace = sa.metadata!.namespace!;
    for (let attempt = 1; ; attempt++) {
      const name = generateName(`${sa.metadata!.name!}-token-`);
      const token = await signer.sign(legacyClaims(sa, name));
      try {
        return await secrets.create(
          { namespace, user: USER },
          {
            apiVersion: 'v1',
            kind: 'Secret',
            metadata: { name, annotations: { [SERVICE_ACCOUNT_NAME_KEY]: sa.metadata!.name!, [SERVICE_ACCOUNT_UID_KEY]: sa.metadata!.uid! } },
            type: SECRET_TYPE_SERVICE_ACCOUNT_TOKEN,
            data: { token: b64(token), 'ca.crt': b64(opts.rootCA), namespace: b64(namespace) },
          },
        );
      } catch (err) {
        if (isStatusError(err, 'AlreadyExists') && attempt < MAX_CREATE_ATTEMPTS) continue;
        throw err;
      }
    }
  };

  /** syncSecret: fill in a token secret, or delete it when its account is gone. */
  const syncSecret = async (namespace: string, name: string): Promise<void> => {
    const secret = await getOrUndefined(secrets, namespace, name);
    if (!secret || secret['type'] !== SECRET_TYPE_SERVICE_ACCOUNT_TOKEN || secret.metadata?.deletionTimestamp) return;
    const saName = secret.metadata?.annotations?.[SERVICE_ACCOUNT_NAME_KEY] ?? '';
    const sa = await getOrUndefined(accounts, namespace, saName);
    if (!sa || !isTokenOf(secret, sa)) {
      await deleteQuietly(secrets, namespace, name, secret.metadata?.uid);
      return;
    }
    const data: Json = secret['data'] ?? {};
    const needsCA = opts.rootCA !== '' && unb64(data['ca.crt']) !== opts.rootCA;
    const needsNamespace = unb64(data['namespace']) !== namespace;
    const needsToken = unb64(data['token']) === '';
    if (!needsCA && !needsNamespace && !needsToken) return;
    const token = needsToken ? await signer.sign(legacyClaims(sa, name)) : '';
    await secrets.update({ namespace, user: USER }, name, (live) => {
      if (!live || live.metadata?.uid !== secret.metadata?.uid) throw new Error('token secret changed while being filled in');
      const next = structuredClone(live);
      const d: Json = (next['data'] ??= {});
      if (needsCA) d['ca.crt'] = b64(opts.rootCA);
      if (needsNamespace) d['namespace'] = b64(namespace);
      if (needsToken && unb64(d['token']) === '') d['token'] = b64(token);
      next.metadata = {
        ...next.metadata,
        annotations: { ...(next.metadata?.annotations ?? {}), [SERVICE_ACCOUNT_NAME_KEY]: sa.metadata!.name!, [SERVICE_ACCOUNT_UID_KEY]: sa.metadata!.uid! },
      };
      return next;
    });
  };

  /** A deleted account's token secrets go too. */
  const deleteTokensOf = async (sa: KObject): Promise<void> => {
    const namespace = sa.metadata!.namespace!;
    const list = await secrets.list({ namespace }, {});
    for (const s of list.items as KObject[]) if (isTokenOf(s, sa)) await deleteQuietly(secrets, namespace, s.metadata!.name!, s.metadata!.uid);
  };

  /** A deleted token secret leaves its account's list. */
  const dropReference = async (secret: KObject): Promise<void> => {
    const namespace = secret.metadata!.namespace!;
    const saName = secret.metadata?.annotations?.[SERVICE_ACCOUNT_NAME_KEY] ?? '';
    const sa = await getOrUndefined(accounts, namespace, saName);
    if (!sa || !((sa['secrets'] ?? []) as Json[]).some((r) => r['name'] === secret.metadata!.name)) return;
    await accounts.update({ namespace, user: USER }, saName, (live) => {
      if (!live) throw new Error('service account went away');
      const next = structuredClone(live);
      next['secrets'] = ((next['secrets'] ?? []) as Json[]).filter((r) => r['name'] !== secret.metadata!.name);
      return next;
    });
  };

  const queue = keyedQueue(
    async (key) => {
      const [kind, namespace, name] = key.split('/') as [string, string, string];
      if (kind === 'sa') await syncAccount(namespace, name);
      else await syncSecret(namespace, name);
    },
    log,
    'tokens-controller',
  );
  const oneOff = (what: string, p: Promise<void>) => void p.catch((err: unknown) => log(`tokens-controller: ${what}: ${(err as Error).message}`));
  return watchAll(
    [
      [
        accounts,
        (ev) => {
          const m = ev.object.metadata ?? {};
          if (ev.type === 'ADDED' || ev.type === 'MODIFIED') queue.add(`sa/${m.namespace ?? ''}/${m.name ?? ''}`);
          else if (ev.type === 'DELETED') oneOff(`delete tokens of ${m.namespace ?? ''}/${m.name ?? ''}`, deleteTokensOf(ev.object));
        },
      ],
      [
        secrets,
        (ev) => {
          if (ev.object['type'] !== SECRET_TYPE_SERVICE_ACCOUNT_TOKEN) return;
          const m = ev.object.metadata ?? {};
          if (ev.type === 'ADDED' || ev.type === 'MODIFIED') queue.add(`secret/${m.namespace ?? ''}/${m.name ?? ''}`);
          else if (ev.type === 'DELETED') oneOff(`drop reference to ${m.namespace ?? ''}/${m.name ?? ''}`, dropReference(ev.object));
        },
      ],
    ],
    () => queue.stop(),
  );
}
