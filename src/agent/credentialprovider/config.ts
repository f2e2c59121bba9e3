// --image-credential-provider-config: the CredentialProviderConfig file (kubelet.config.k8s.io
// v1alpha1 in 1.23; v1beta1 and v1 are accepted too, same fields), read and validated as kubelet's
// pkg/credentialprovider/plugin/config.go does. JSON or YAML; unknown fields are errors (strict decoding).
import { readFileSync } from 'node:fs';
import { parse as parseYAML } from 'yaml';
import { parseDuration } from '../../util/flags.js';
import { parseSchemelessURL } from './keyring.js';

export const CONFIG_GROUP = 'kubelet.config.k8s.io';
export const CONFIG_VERSIONS = ['v1alpha1', 'v1beta1', 'v1'];
/** The apiVersions of CredentialProviderRequest/Response a provider may name. */
export const PLUGIN_API_VERSIONS = ['credentialprovider.kubelet.k8s.io/v1alpha1', 'credentialprovider.kubelet.k8s.io/v1beta1', 'credentialprovider.kubelet.k8s.io/v1'];

export interface CredentialProvider {
  name: string;
  matchImages: string[];
  /** ms */
  defaultCacheDuration: number;
  apiVersion: string;
  args: string[];
  env: { name: string; value: string }[];
}

type Json = Record<string, unknown>;

const PROVIDER_FIELDS = new Set(['name', 'matchImages', 'defaultCacheDuration', 'apiVersion', 'args', 'env']);

function strictFields(obj: Json, allowed: Set<string>, where: string): void {
  for (const k of Object.keys(obj)) if (!allowed.has(k)) throw new Error(`strict decoding error: unknown field "${where}${k}"`);
}

/** A scalar as text (YAML may give numbers or booleans); objects and lists as ''. */
const str = (v: unknown): string => (typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? String(v) : '');

const strings = (v: unknown, field: string): string[] => {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) throw new Error(`${field}: expected a list of strings`);
  return v as string[];
};

/** Decodes the file's object (the UniversalDecoder step): kind, group and fields. */
function decode(obj: unknown): { providers: (Omit<CredentialProvider, 'defaultCacheDuration'> & { defaultCacheDuration?: number })[] } {
  if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) throw new Error("Object 'Kind' is missing");
  const o = obj as Json;
  if (typeof o.kind !== 'string' || o.kind === '') throw new Error("Object 'Kind' is missing");
  const apiVersion = typeof o.apiVersion === 'string' ? o.apiVersion : '';
  const [group, version] = apiVersion.includes('/') ? apiVersion.split('/', 2) : ['', apiVersion];
  if (group === CONFIG_GROUP && !CONFIG_VERSIONS.includes(version!)) {
    throw new Error(`no kind "${o.kind}" is registered for version "${apiVersion}"`);
  }
  if (o.kind !== 'CredentialProviderConfig') throw new Error(`failed to decode "${o.kind}" (wrong Kind)`);
  if (group !== CONFIG_GROUP) throw new Error(`failed to decode CredentialProviderConfig, unexpected Group: ${group}`);
  strictFields(o, new Set(['kind', 'apiVersion', 'providers']), '');
  const raw = o.providers ?? [];
  if (!Array.isArray(raw)) throw new Error('providers: expected a list');
  return {
    providers: raw.map((p: unknown, i) => {
      if (typeof p !== 'object' || p === null) throw new Error(`providers[${i}]: expected an object`);
      const x = p as Json;
      strictFields(x, PROVIDER_FIELDS, `providers[${i}].`);
      const env = (x.env ?? []) as unknown;
      if (!Array.isArray(env)) throw new Error(`providers[${i}].env: expected a list`);
      const out: Omit<CredentialProvider, 'defaultCacheDuration'> & { defaultCacheDuration?: number } = {
        name: typeof x.name === 'string' ? x.name : '',
        matchImages: strings(x.matchImages, `providers[${i}].matchImages`),
        apiVersion: typeof x.apiVersion === 'string' ? x.apiVersion : '',
        args: strings(x.args, `providers[${i}].args`),
        env: env.map((e: unknown, j) => {
          const v = (e ?? {}) as Json;
          strictFields(v, new Set(['name', 'value']), `providers[${i}].env[${j}].`);
          return { name: str(v.name), value: str(v.value) };
        }),
      };
      if (x.defaultCacheDuration !== undefined && x.defaultCacheDuration !== null) {
        out.defaultCacheDuration = parseDuration(str(x.defaultCacheDuration));
      }
      return out;
    }),
  };
}

/** validateCredentialProviderConfig: every problem, as field errors. */
export function validateProviders(providers: ReturnType<typeof decode>['providers']): string[] {
  const errs: string[] = [];
  if (providers.length === 0) errs.push('providers: Required value: at least 1 item in plugins is required');
  for (const p of providers) {
    const bad = (msg: string) => errs.push(`providers.name: Invalid value: ${JSON.stringify(p.name)}: ${msg}`);
    if (p.name.includes('/')) bad("provider name cannot contain '/'");
    if (p.name.includes(' ')) bad('provider name cannot contain spaces');
    if (p.name === '.') bad("provider name cannot be '.'");
    if (p.name === '..') bad("provider name cannot be '..'");
    if (p.apiVersion === '') errs.push('providers.apiVersion: Required value: apiVersion is required');
    else if (!PLUGIN_API_VERSIONS.includes(p.apiVersion)) {
      errs.push(`providers.apiVersion: Unsupported value: ${JSON.stringify(p.apiVersion)}: supported values: ${PLUGIN_API_VERSIONS.map((v) => JSON.stringify(v)).join(', ')}`);
    }
    if (p.matchImages.length === 0) errs.push('providers.matchImages: Required value: at least 1 item in matchImages is required');
    for (const m of p.matchImages) {
      if (!parseSchemelessURL(m)) errs.push(`providers.matchImages: Invalid value: ${JSON.stringify(m)}: match image is invalid`);
    }
    if (p.defaultCacheDuration === undefined) errs.push('providers.defaultCacheDuration: Required value: defaultCacheDuration is required');
    else if (p.defaultCacheDuration < 0) errs.push(`providers.defaultCacheDuration: Invalid value: ${p.defaultCacheDuration}: must be greater than or equal to 0`);
  }
  return errs;
}

/** Reads, decodes and validates the file; throws with kubelet's wording. */
export function readCredentialProviderConfig(path: string): CredentialProvider[] {
  if (path === '') throw new Error('credential provider config path is empty');
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new Error(`unable to read external registry credential provider configuration from ${JSON.stringify(path)}: ${(err as Error).message}`, { cause: err });
  }
  let decoded: ReturnType<typeof decode>;
  try {
    decoded = decode(parseYAML(text));
  } catch (err) {
    throw new Error(`error decoding config ${path}: ${(err as Error).message}`, { cause: err });
  }
  const errs = validateProviders(decoded.providers);
  if (errs.length > 0) throw new Error(`failed to validate credential provider config: ${errs.length === 1 ? errs[0]! : `[${errs.join(', ')}]`}`);
  return decoded.providers as CredentialProvider[];
}
