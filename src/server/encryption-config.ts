/**
 * --encryption-provider-config: reads an EncryptionConfiguration (apiserver.config.k8s.io/v1, YAML or JSON),
 * validates it as Kubernetes 1.23 does, and builds the value transformer of each listed resource.
 *
 * Errors end the server's start with kube-apiserver's wording: 'error opening encryption provider
 * configuration file "<path>": ...' or 'error while parsing encryption provider configuration file "<path>":
 * error while parsing file: <field errors>', field errors as 'resources[0].providers[1].aescbc.keys[0].secret:
 * Invalid value: "REDACTED": secrets must be base64 encoded' (several in brackets, comma-separated).
 *
 * Resources are named as in Kubernetes 1.23: 'secrets' (core group) or 'resource.group'; wildcards do not
 * exist yet in 1.23 (such a name matches no resource). A resource listed in several entries gets the
 * providers of all of them, in order.
 */
import { readFileSync } from 'node:fs';
import { yaml } from '../util/yaml.js';
import { AesCbcTransformer, AesGcmTransformer } from '../storage/transformer/aes.js';
import { EnvelopeTransformer } from '../storage/transformer/envelope.js';
import { GrpcKmsService, KmsProbe } from '../storage/transformer/kms.js';
import { SecretboxTransformer } from '../storage/transformer/secretbox.js';
import {
  PrefixTransformers,
  identityTransformer,
  type PrefixEntry,
  type TransformObserver,
  type ValueTransformer,
} from '../storage/transformer/transformer.js';
import { formatDuration, parseDuration } from '../util/flags.js';
import type { ServerMetrics } from './metrics.js';

export const ENCRYPTION_API_VERSION = 'apiserver.config.k8s.io/v1';
export const ENCRYPTION_KIND = 'EncryptionConfiguration';

interface Key {
  name: string;
  secret: string;
}
interface KMSConfiguration {
  name: string;
  endpoint: string;
  /** Defaulted to 1000; negative disables the cache. */
  cachesize: number;
  /** Defaulted to 3s. */
  timeoutMs: number;
}
interface ProviderConfiguration {
  aesgcm?: { keys: Key[] };
  aescbc?: { keys: Key[] };
  secretbox?: { keys: Key[] };
  identity?: Record<string, never>;
  kms?: KMSConfiguration;
}
interface ResourceConfiguration {
  resources: string[];
  providers: ProviderConfiguration[];
}
export interface EncryptionConfiguration {
  resources: ResourceConfiguration[];
}

export interface EncryptionSetup {
  /** The transformer of each resource, keyed as the storage keys resources: 'secrets', 'deployments.apps'. */
  transformers: Map<string, ValueTransformer>;
  /** One per kms provider, in the file's order: the kms-provider-<n> health checks. */
  probes: KmsProbe[];
  /** Closes the KMS connections (the storage does this when given the transformers). */
  close(): void;
}

/** Reads, validates and builds the file's transformers; throws kube-apiserver's message on any problem. */
export function loadEncryptionConfig(path: string, observer?: TransformObserver): EncryptionSetup {
  let data: string;
  try {
    data = readFileSync(path, 'utf8');
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e.code === 'EISDIR') {
      throw new Error(`error while parsing encryption provider configuration file "${path}": could not read contents: read ${path}: is a directory`, { cause: err });
    }
    throw new Error(`error opening encryption provider configuration file "${path}": open ${path}: ${goErrno(e)}`, { cause: err });
  }
  let config: EncryptionConfiguration;
  try {
    config = parseEncryptionConfiguration(data);
  } catch (err) {
    throw new Error(`error while parsing encryption provider configuration file "${path}": error while parsing file: ${(err as Error).message}`, { cause: err });
  }
  try {
    return buildTransformers(config, observer);
  } catch (err) {
    throw new Error(`error while parsing encryption provider configuration file "${path}": ${(err as Error).message}`, { cause: err });
  }
}

function goErrno(e: NodeJS.ErrnoException): string {
  switch (e.code) {
    case 'ENOENT':
      return 'no such file or directory';
    case 'EACCES':
      return 'permission denied';
    case 'ENOTDIR':
      return 'not a directory';
    default:
      return e.message;
  }
}

// ---- decoding ---------------------------------------------------------------------------------------

/** Decodes and validates the file's text; throws the decoder's or the validation's message. */
export function parseEncryptionConfiguration(text: string): EncryptionConfiguration {
  let doc: unknown;
  try {
    doc = yaml().parse(text);
  } catch (err) {
    throw new Error(`error converting YAML to JSON: yaml: ${(err as Error).message.split('\n')[0]}`, { cause: err });
  }
  const obj = (doc ?? {}) as Record<string, unknown>;
  if (typeof obj !== 'object' || Array.isArray(obj)) throw new Error(`couldn't get version/kind; json parse error: json: cannot unmarshal ${jsonType(obj)} into Go value of type struct { APIVersion string "json:\\"apiVersion,omitempty\\""; Kind string "json:\\"kind,omitempty\\"" }`);
  const kind = typeof obj.kind === 'string' ? obj.kind : '';
  const apiVersion = typeof obj.apiVersion === 'string' ? obj.apiVersion : '';
  if (kind === '') throw new Error(`Object 'Kind' is missing in '${JSON.stringify(obj)}'`);
  if (apiVersion !== ENCRYPTION_API_VERSION || kind !== ENCRYPTION_KIND) {
    throw new Error(`no kind "${kind}" is registered for version "${apiVersion}" in scheme "pkg/runtime/scheme.go:100"`);
  }
  const config = decodeConfig(obj);
  const errs = validateEncryptionConfiguration(config);
  if (errs.length > 0) throw new Error(aggregate(errs));
  return config;
}

function jsonType(v: unknown): string {
  if (Array.isArray(v)) return 'array';
  if (v === null) return 'null';
  if (typeof v === 'object') return 'object';
  return typeof v === 'boolean' ? 'bool' : typeof v;
}

/** Go's json error for a value of the wrong type at `field` (a dotted path from the top struct). */
function typeError(v: unknown, field: string, goType: string): Error {
  return new Error(`json: cannot unmarshal ${jsonType(v)} into Go struct field ${field} of type ${goType}`);
}

function list(v: unknown, field: string, goType: string): unknown[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw typeError(v, field, goType);
  return v;
}

function struct(v: unknown, field: string, goType: string): Record<string, unknown> | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'object' || Array.isArray(v)) throw typeError(v, field, goType);
  return v as Record<string, unknown>;
}

function str(v: unknown, field: string): string {
  if (v === undefined || v === null) return '';
  if (typeof v !== 'string') throw typeError(v, field, 'string');
  return v;
}

function decodeConfig(obj: Record<string, unknown>): EncryptionConfiguration {
  const F = 'EncryptionConfiguration.resources';
  return {
    resources: list(obj.resources, F, '[]v1.ResourceConfiguration').map((r) => {
      const rc = struct(r, F, 'v1.ResourceConfiguration') ?? {};
      return {
        resources: list(rc.resources, `${F}.resources`, '[]string').map((s) => str(s, `${F}.resources`)),
        providers: list(rc.providers, `${F}.providers`, '[]v1.ProviderConfiguration').map((p) =>
          decodeProvider(struct(p, `${F}.providers`, 'v1.ProviderConfiguration') ?? {}, `${F}.providers`),
        ),
      };
    }),
  };
}

function decodeKeys(v: Record<string, unknown> | undefined, field: string): { keys: Key[] } | undefined {
  if (!v) return undefined;
  return {
    keys: list(v.keys, `${field}.keys`, '[]v1.Key').map((k) => {
      const key = struct(k, `${field}.keys`, 'v1.Key') ?? {};
      return { name: str(key.name, `${field}.keys.name`), secret: str(key.secret, `${field}.keys.secret`) };
    }),
  };
}

function decodeProvider(p: Record<string, unknown>, field: string): ProviderConfiguration {
  const out: ProviderConfiguration = {};
  const aesgcm = decodeKeys(struct(p.aesgcm, `${field}.aesgcm`, 'v1.AESConfiguration'), `${field}.aesgcm`);
  const aescbc = decodeKeys(struct(p.aescbc, `${field}.aescbc`, 'v1.AESConfiguration'), `${field}.aescbc`);
  const secretbox = decodeKeys(struct(p.secretbox, `${field}.secretbox`, 'v1.SecretboxConfiguration'), `${field}.secretbox`);
  if (aesgcm) out.aesgcm = aesgcm;
  if (aescbc) out.aescbc = aescbc;
  if (secretbox) out.secretbox = secretbox;
  if (struct(p.identity, `${field}.identity`, 'v1.IdentityConfiguration')) out.identity = {};
  const kms = struct(p.kms, `${field}.kms`, 'v1.KMSConfiguration');
  if (kms) out.kms = decodeKms(kms, `${field}.kms`);
  return out;
}

function decodeKms(k: Record<string, unknown>, field: string): KMSConfiguration {
  let cachesize = 1000;
  if (k.cachesize !== undefined && k.cachesize !== null) {
    if (typeof k.cachesize !== 'number') throw typeError(k.cachesize, `${field}.cachesize`, 'int32');
    if (!Number.isInteger(k.cachesize) || Math.abs(k.cachesize) > 2 ** 31) {
      throw new Error(`json: cannot unmarshal number ${k.cachesize} into Go struct field ${field}.cachesize of type int32`);
    }
    cachesize = k.cachesize;
  }
  let timeoutMs = 3000;
  if (k.timeout !== undefined && k.timeout !== null) {
    if (typeof k.timeout !== 'string') throw typeError(k.timeout, `${field}.timeout`, 'string');
    try {
      timeoutMs = parseDuration(k.timeout);
    } catch (err) {
      throw new Error(`time: invalid duration "${k.timeout}"`, { cause: err });
    }
  }
  return { name: str(k.name, `${field}.name`), endpoint: str(k.endpoint, `${field}.endpoint`), cachesize, timeoutMs };
}

// ---- validation (k8s.io/apiserver/pkg/apis/config/validation, 1.23) -----------------------------------

const AES_KEY_SIZES = [16, 24, 32];
const SECRETBOX_KEY_SIZES = [32];

const required = (path: string, detail: string) => `${path}: Required value: ${detail}`;
const invalid = (path: string, value: string, detail: string) => `${path}: Invalid value: ${value}: ${detail}`;
const quote = (s: string) => JSON.stringify(s);

/** The field errors of a configuration, in Kubernetes' order and words. */
export function validateEncryptionConfiguration(c: EncryptionConfiguration): string[] {
  const errs: string[] = [];
  if (c.resources.length === 0) return [required('resources', 'at least one resources is required')];
  c.resources.forEach((conf, i) => {
    const r = `resources[${i}].resources`;
    const p = `resources[${i}].providers`;
    if (conf.resources.length === 0) errs.push(required(r, `at least one ${r} is required`));
    if (conf.providers.length === 0) errs.push(required(p, `at least one ${p} is required`));
    conf.providers.forEach((provider, j) => {
      const path = `${p}[${j}]`;
      errs.push(...validateSingleProvider(provider, path));
      if (provider.kms) errs.push(...validateKms(provider.kms, `${path}.kms`));
      else if (provider.aesgcm) errs.push(...validateKeys(provider.aesgcm.keys, `${path}.aesgcm.keys`, AES_KEY_SIZES));
      else if (provider.aescbc) errs.push(...validateKeys(provider.aescbc.keys, `${path}.aescbc.keys`, AES_KEY_SIZES));
      else if (provider.secretbox) errs.push(...validateKeys(provider.secretbox.keys, `${path}.secretbox.keys`, SECRETBOX_KEY_SIZES));
    });
  });
  return errs;
}

/** Go's %#v of the internal ProviderConfiguration (the value Kubernetes prints for a provider error). */
function providerRepr(p: ProviderConfiguration): string {
  const ptr = (type: string, set: boolean) => `(*config.${type})(${set ? '0xc000000000' : 'nil'})`;
  return (
    `config.ProviderConfiguration{AESGCM:${ptr('AESConfiguration', !!p.aesgcm)}, AESCBC:${ptr('AESConfiguration', !!p.aescbc)}, ` +
    `Secretbox:${ptr('SecretboxConfiguration', !!p.secretbox)}, Identity:${ptr('IdentityConfiguration', !!p.identity)}, KMS:${ptr('KMSConfiguration', !!p.kms)}}`
  );
}

function validateSingleProvider(p: ProviderConfiguration, path: string): string[] {
  const found = [p.kms, p.aesgcm, p.aescbc, p.secretbox, p.identity].filter((x) => x !== undefined).length;
  if (found === 0) {
    return [invalid(path, providerRepr(p), 'provider does not contain any of the expected providers: KMS, AESGCM, AESCBC, Secretbox, Identity')];
  }
  if (found > 1) return [invalid(path, providerRepr(p), 'more than one provider specified in a single element, should split into different list elements')];
  return [];
}

/** Go's base64.StdEncoding: padded, no other characters (line breaks are skipped). */
export function decodeStdBase64(s: string): Buffer | undefined {
  const t = s.replace(/[\r\n]/g, '');
  if (t.length % 4 !== 0 || !/^[A-Za-z0-9+/]*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(t)) return undefined;
  return Buffer.from(t, 'base64');
}

function validateKeys(keys: Key[], path: string, sizes: number[]): string[] {
  if (keys.length === 0) return [required(path, 'at least one keys is required')];
  const errs: string[] = [];
  keys.forEach((key, i) => {
    const kp = `${path}[${i}]`;
    if (key.name === '') errs.push(required(`${kp}.name`, 'name is a mandatory field for a key'));
    if (key.secret === '') {
      errs.push(required(`${kp}.secret`, 'secret is a mandatory field for a key'));
      return;
    }
    const secret = decodeStdBase64(key.secret);
    if (!secret) {
      errs.push(invalid(`${kp}.secret`, quote('REDACTED'), 'secrets must be base64 encoded'));
      return;
    }
    if (!sizes.includes(secret.length)) {
      errs.push(invalid(`${kp}.secret`, quote('REDACTED'), `secret is not of the expected length, got ${secret.length}, expected one of [${sizes.join(' ')}]`));
    }
  });
  return errs;
}

function validateKms(c: KMSConfiguration, path: string): string[] {
  const errs: string[] = [];
  if (c.name === '') errs.push(required(`${path}.name`, 'name is a mandatory field for a provider'));
  if (c.timeoutMs <= 0) errs.push(invalid(`${path}.timeout`, formatDuration(c.timeoutMs), 'timeout should be a positive value'));
  if (c.endpoint === '') {
    errs.push(invalid(`${path}.endpoint`, quote(''), 'endpoint is a mandatory field for a kms'));
  } else {
    const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(c.endpoint)?.[1]?.toLowerCase() ?? '';
    if (scheme !== 'unix') {
      errs.push(invalid(`${path}.endpoint`, quote(c.endpoint), `unsupported scheme ${quote(scheme)} for KMS provider, only unix is supported`));
    }
  }
  if (c.cachesize === 0) errs.push(invalid(`${path}.cachesize`, '0', 'cachesize should be a positive value, or negative to disable'));
  return errs;
}

/** utilerrors.NewAggregate(...).Error(): one message alone, several in brackets; duplicates once. */
function aggregate(errs: string[]): string {
  const unique = [...new Set(errs)];
  return unique.length === 1 ? unique[0]! : `[${unique.join(', ')}]`;
}

// ---- transformers -----------------------------------------------------------------------------------

function buildTransformers(config: EncryptionConfiguration, observer?: TransformObserver): EncryptionSetup {
  const byResource = new Map<string, PrefixEntry[]>();
  const probes: KmsProbe[] = [];
  const closers: (() => void)[] = [];
  const close = () => {
    for (const c of closers) c();
  };
  try {
    for (const rc of config.resources) {
      const entries = rc.providers.map((p) => providerEntry(p, observer, probes, closers));
      for (const resource of rc.resources) {
        const key = storageResourceKey(resource);
        byResource.set(key, [...(byResource.get(key) ?? []), ...entries]);
      }
    }
  } catch (err) {
    close();
    throw err;
  }
  const transformers = new Map<string, ValueTransformer>();
  // Closing a resource's transformer closes its KMS connections, which resources of one entry share (and
  // close idempotently).
  for (const [key, entries] of byResource) transformers.set(key, new PrefixTransformers(entries, 'no matching prefix found', observer));
  return { transformers, probes, close };
}

/** schema.ParseGroupResource: 'deployments.apps' is resource deployments of group apps; the storage's key. */
export function storageResourceKey(resource: string): string {
  const dot = resource.indexOf('.');
  if (dot < 0) return resource;
  const group = resource.slice(dot + 1);
  return group === '' ? resource.slice(0, dot) : `${resource.slice(0, dot)}.${group}`;
}

function keyEntries(keys: Key[], make: (secret: Buffer) => ValueTransformer): PrefixEntry[] {
  return keys.map((k) => {
    const secret = decodeStdBase64(k.secret);
    if (!secret) throw new Error(`could not obtain secret for named key ${k.name}: illegal base64 data`);
    return { prefix: `${k.name}:`, transformer: make(secret) };
  });
}

function providerEntry(p: ProviderConfiguration, observer: TransformObserver | undefined, probes: KmsProbe[], closers: (() => void)[]): PrefixEntry {
  if (p.aesgcm) {
    const keys = keyEntries(p.aesgcm.keys, (s) => new AesGcmTransformer(s));
    return { prefix: 'k8s:enc:aesgcm:v1:', transformer: new PrefixTransformers(keys, 'no matching key was found for the provided AES transformer', observer) };
  }
  if (p.aescbc) {
    const keys = keyEntries(p.aescbc.keys, (s) => new AesCbcTransformer(s));
    return { prefix: 'k8s:enc:aescbc:v1:', transformer: new PrefixTransformers(keys, 'no matching key was found for the provided AES transformer', observer) };
  }
  if (p.secretbox) {
    const keys = keyEntries(p.secretbox.keys, (s) => new SecretboxTransformer(s));
    return { prefix: 'k8s:enc:secretbox:v1:', transformer: new PrefixTransformers(keys, 'no matching key was found for the provided Secretbox transformer', observer) };
  }
  if (p.kms) {
    let service: GrpcKmsService;
    try {
      service = new GrpcKmsService(p.kms.endpoint, p.kms.timeoutMs);
    } catch (err) {
      throw new Error(`could not configure KMS plugin "${p.kms.name}", error: ${(err as Error).message}`, { cause: err });
    }
    closers.push(() => service.close());
    probes.push(new KmsProbe(p.kms.name, service));
    return { prefix: `k8s:enc:kms:v1:${p.kms.name}:`, transformer: new EnvelopeTransformer(service, p.kms.cachesize, observer) };
  }
  return { prefix: '', transformer: identityTransformer };
}

// ---- metrics ----------------------------------------------------------------------------------------

/** Kubernetes' buckets of the transformation histograms: prometheus.ExponentialBuckets(5e-6, 2, 14). */
const TRANSFORMATION_BUCKETS = Array.from({ length: 14 }, (_, i) => 5e-6 * 2 ** i);

/**
 * A transform observer for a storage opened before the server's metrics exist: it records nothing until
 * `bind` gives it the server's metrics (apiserver_storage_transformation_* and the envelope's metrics).
 */
export class TransformationMetrics implements TransformObserver {
  private sink: TransformObserver | undefined;

  bind(metrics: ServerMetrics): void {
    const duration = metrics.histogram({
      name: 'apiserver_storage_transformation_duration_seconds',
      help: 'Latencies in seconds of value transformation operations.',
      labelNames: ['transformation_type'],
      buckets: TRANSFORMATION_BUCKETS,
    });
    const operations = metrics.counter({
      name: 'apiserver_storage_transformation_operations_total',
      help: 'Total number of transformations.',
      labelNames: ['status', 'transformation_type', 'transformer_prefix'],
    });
    const misses = metrics.counter({
      name: 'apiserver_storage_envelope_transformation_cache_misses_total',
      help: 'Total number of cache misses while accessing key decryption key(KEK).',
    });
    const dekDuration = metrics.histogram({
      name: 'apiserver_storage_data_key_generation_duration_seconds',
      help: 'Latencies in seconds of data encryption key(DEK) generation operations.',
      buckets: TRANSFORMATION_BUCKETS,
    });
    const dekFailures = metrics.counter({
      name: 'apiserver_storage_data_key_generation_failures_total',
      help: 'Total number of failed data encryption key(DEK) generation operations.',
    });
    this.sink = {
      transformation(type, prefix, status, seconds) {
        duration.observe({ transformation_type: type }, seconds);
        operations.inc({ status, transformation_type: type, transformer_prefix: prefix });
      },
      cacheMiss: () => misses.inc(),
      dataKeyGeneration(seconds, ok) {
        if (ok) dekDuration.observe(seconds);
        else dekFailures.inc();
      },
    };
  }

  transformation(type: 'from_storage' | 'to_storage', prefix: string, status: string, seconds: number): void {
    this.sink?.transformation(type, prefix, status, seconds);
  }

  cacheMiss(): void {
    this.sink?.cacheMiss?.();
  }

  dataKeyGeneration(seconds: number, ok: boolean): void {
    this.sink?.dataKeyGeneration?.(seconds, ok);
  }
}
