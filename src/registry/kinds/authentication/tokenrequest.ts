/**
 * serviceaccounts/token, the TokenRequest subresource, as Kubernetes 1.23 serves it
 * (pkg/registry/core/serviceaccount/storage/token.go, pkg/apis/authentication/validation): a POST of an
 * authentication.k8s.io/v1 TokenRequest answers 201 with the request and status.token, a JWT for the service
 * account, signed as the first issuer, meant for the request's audiences (default: the API audiences), valid
 * for expirationSeconds (default 3600, at least 600, capped by --service-account-max-token-expiration) and
 * optionally bound to a Pod or Secret of the same namespace. Pod-bound tokens asking for exactly 3607 s
 * for the API audiences live a year when --service-account-extend-token-expiration is on (the projected
 * volume's transition). Without a signing key and issuer the subresource answers 404.
 */
import { apiErrors } from '../../errors.js';
import type { ActionSubresource, KObject, SubresourceContext } from '../../kind.js';
import { invalid, root, type FieldError } from '../../../util/validation.js';
import { AUTHENTICATION_GROUP, AUTHN_NAMES } from './definitions.js';
import { boundClaims, EXPIRATION_EXTENSION_SECONDS, WARN_ONLY_BOUND_TOKEN_EXPIRATION_SECONDS, type ServiceAccountTokenSettings } from './tokens.js';

type Json = Record<string, any>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string => (typeof v === 'string' ? v : '');

const DEFAULT_EXPIRATION_SECONDS = 3600;
const MIN_EXPIRATION_SECONDS = 10 * 60;
const MAX_EXPIRATION_SECONDS = 2 ** 32;

/** ValidateTokenRequest. */
function validateTokenRequest(spec: Json): FieldError[] {
  const exp = spec['expirationSeconds'] as number;
  const path = root('spec', 'expirationSeconds');
  if (exp < MIN_EXPIRATION_SECONDS) return [invalid(path, exp, 'may not specify a duration less than 10 minutes')];
  if (exp > MAX_EXPIRATION_SECONDS) return [invalid(path, exp, 'may not specify a duration larger than 2^32 seconds')];
  return [];
}

/** schema.FromAPIVersionAndKind(...).String(): "group/version, Kind=kind". */
function gvkString(apiVersion: string, kind: string): { group: string; text: string } {
  const slash = apiVersion.indexOf('/');
  const group = slash < 0 ? '' : apiVersion.slice(0, slash);
  const version = slash < 0 ? apiVersion : apiVersion.slice(slash + 1);
  return { group, text: `${group}/${version}, Kind=${kind}` };
}

/** The Pod or Secret a token is bound to, checked as TokenREST checks it. */
async function boundObject(ctx: SubresourceContext, saName: string, ref: Json): Promise<{ pod?: KObject; secret?: KObject }> {
  const kind = str(ref['kind']);
  const { group, text } = gvkString(str(ref['apiVersion']), kind);
  const name = str(ref['name']);
  let found: { pod?: KObject; secret?: KObject };
  let obj: KObject;
  if (group === '' && kind === 'Pod') {
    obj = await ctx.lookup('', 'pods')!.get({ namespace: ctx.scope.namespace, user: ctx.scope.user }, name);
    if (str(obj['spec']?.serviceAccountName) !== saName) {
      throw apiErrors.badRequest(`cannot bind token for serviceaccount ${JSON.stringify(saName)} to pod running with different serviceaccount name.`);
    }
    found = { pod: obj };
  } else if (group === '' && kind === 'Secret') {
    obj = await ctx.lookup('', 'secrets')!.get({ namespace: ctx.scope.namespace, user: ctx.scope.user }, name);
    found = { secret: obj };
  } else {
    throw apiErrors.badRequest(`cannot bind token to object of type ${text}`);
  }
  const uid = str(ref['uid']);
  if (uid !== '' && uid !== obj.metadata?.uid) {
    throw apiErrors.conflict(
      { group, resource: kind },
      name,
      `the UID in the bound object reference (${uid}) does not match the UID in record. The object might have been deleted and then recreated`,
    );
  }
  return found;
}

/** The token's lifetime and warn-after (the projected token's transition), as TokenREST decides them. */
function lifetime(spec: Json, pod: KObject | undefined, settings: ServiceAccountTokenSettings): { exp: number; warnAfter: number } {
  let exp = spec['expirationSeconds'] as number;
  if (settings.maxExpirationSeconds > 0 && exp > settings.maxExpirationSeconds) exp = spec['expirationSeconds'] = settings.maxExpirationSeconds;
  const audiences = spec['audiences'] as string[];
  const kubeAudiences = audiences.every((a) => settings.apiAudiences.includes(a));
  if (settings.extendExpiration && pod && exp === WARN_ONLY_BOUND_TOKEN_EXPIRATION_SECONDS && kubeAudiences) {
    return { exp: EXPIRATION_EXTENSION_SECONDS, warnAfter: exp };
  }
  return { exp, warnAfter: 0 };
}

export const tokenRequestAction: ActionSubresource = {
  bodyKinds: [{ group: AUTHENTICATION_GROUP, version: 'v1', kind: 'TokenRequest', definition: AUTHN_NAMES.TokenRequest }],
  async create(ctx, name, body) {
    const settings = ctx.settings.serviceAccountTokens;
    if (!settings) throw apiErrors.notFound({ group: '', resource: 'serviceaccounts/token' }, name);
    const spec: Json = isObject(body['spec']) ? { ...body['spec'] } : {};
    if (typeof spec['expirationSeconds'] !== 'number') spec['expirationSeconds'] = DEFAULT_EXPIRATION_SECONDS;
    const errs = validateTokenRequest(spec);
    if (errs.length > 0) throw apiErrors.invalid(AUTHENTICATION_GROUP, 'TokenRequest', '', errs);
    const serviceAccount = await ctx.store.get(ctx.scope, name);
    const bound = isObject(spec['boundObjectRef']) ? await boundObject(ctx, name, spec['boundObjectRef']) : {};
    const audiences = Array.isArray(spec['audiences']) ? spec['audiences'].filter((a): a is string => typeof a === 'string') : [];
    spec['audiences'] = audiences.length > 0 ? audiences : [...settings.apiAudiences];
    const { exp, warnAfter } = lifetime(spec, bound.pod, settings);
    const nowSeconds = Math.floor(Date.now() / 1000);
    const claims = boundClaims({
      serviceAccount,
      ...bound,
      expirationSeconds: exp,
      warnAfterSeconds: warnAfter,
      audiences: spec['audiences'] as string[],
      nowSeconds,
    });
    const token = await settings.signer.sign(claims);
    const expiration = new Date((nowSeconds + (spec['expirationSeconds'] as number)) * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
    return {
      status: 201,
      body: {
        kind: 'TokenRequest',
        apiVersion: `${AUTHENTICATION_GROUP}/v1`,
        metadata: { ...(isObject(body.metadata) ? body.metadata : {}), creationTimestamp: null },
        spec,
        status: { token, expirationTimestamp: expiration },
      },
    };
  },
};
