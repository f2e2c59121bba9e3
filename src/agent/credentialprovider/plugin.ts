// Exec credential provider plugins (kubelet 1.23 pkg/credentialprovider/plugin), under the
// KubeletCredentialProviders gate (OrchletCredentialProviders here):
//
//   - at start (registerCredentialProviders) the bin directory must exist, the config must be valid
//     and each provider's executable <bin-dir>/<name> must exist, or the agent refuses to start;
//   - for an image (its normalized repository) whose host and path match one of a provider's
//     matchImages, the plugin runs as `<bin-dir>/<name> <args...>` with the agent's environment plus
//     the provider's env, a CredentialProviderRequest {image} on stdin, at most one minute; it
//     answers a CredentialProviderResponse on stdout of the provider's apiVersion: cacheKeyType
//     (Image, Registry or Global), an optional cacheDuration and auth (location -> username,
//     password). Concurrent requests for one image share one run;
//   - the answer is cached under the image, its registry (the part before the first '/') or one
//     global key, for cacheDuration (0: not cached), or defaultCacheDuration when the plugin gives
//     none; lookups try image, then registry, then global;
//   - a failing plugin, an answer that does not decode or a bad cacheKeyType is logged and gives no
//     credentials (the pull then goes on with what else there is);
//   - the auth entries are matched against the image like any keyring's (keyring.ts).
import { spawn } from 'node:child_process';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { formatDuration, parseDuration } from '../../util/flags.js';
import { readCredentialProviderConfig, type CredentialProvider } from './config.js';
import { BasicKeyring, urlsMatch, type AuthConfig, type DockerConfig, type DockerKeyring } from './keyring.js';

const EXEC_TIMEOUT_MS = 60_000;
const GLOBAL_CACHE_KEY = 'global';

export type CacheKeyType = 'Image' | 'Registry' | 'Global';

export interface PluginResponse {
  cacheKeyType: CacheKeyType;
  /** ms; undefined: the provider's default. */
  cacheDuration?: number;
  auth: DockerConfig;
}

type Log = (level: 'info' | 'error', message: string) => void;

/** Runs the plugin executable once for `image`; rejects with kubelet's messages. */
export function execPlugin(binDir: string, p: CredentialProvider, image: string): Promise<PluginResponse> {
  const request = JSON.stringify({ kind: 'CredentialProviderRequest', apiVersion: p.apiVersion, image });
  return new Promise((resolve, reject) => {
    const child = spawn(join(binDir, p.name), p.args, {
      env: { ...process.env, ...Object.fromEntries(p.env.map((e) => [e.name, e.value])) },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, EXEC_TIMEOUT_MS);
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => err.push(c));
    child.stdin.on('error', () => undefined);
    child.stdin.end(request);
    const fail = (why: string): void => reject(new Error(`error execing credential provider plugin ${p.name} for image ${image}: ${why}: ${Buffer.concat(err).toString()}`));
    child.once('error', (e) => {
      clearTimeout(timer);
      fail(e.message);
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      if (timedOut) return fail('context deadline exceeded');
      if (code !== 0) return fail(signal ? `signal: ${signal}` : `exit status ${code}`);
      try {
        resolve(decodeResponse(Buffer.concat(out).toString('utf8'), p.apiVersion));
      } catch (e) {
        reject(e instanceof Error ? e : new Error(String(e)));
      }
    });
  });
}

const RESPONSE_FIELDS = new Set(['kind', 'apiVersion', 'cacheKeyType', 'cacheDuration', 'auth']);

/** Decodes a CredentialProviderResponse (strictly); the apiVersion must be the provider's. */
export function decodeResponse(text: string, apiVersion: string): PluginResponse {
  let obj: Record<string, unknown>;
  try {
    obj = JSON.parse(text) as Record<string, unknown>;
  } catch (err) {
    throw new Error(`error reading GVK from response: ${(err as Error).message}`, { cause: err });
  }
  if (typeof obj !== 'object' || obj === null) throw new Error('error reading GVK from response: not an object');
  const got = typeof obj.apiVersion === 'string' ? obj.apiVersion : '';
  if (got !== apiVersion) {
    throw new Error(`apiVersion from credential plugin response did not match expected apiVersion:${apiVersion}, actual apiVersion:${got}`);
  }
  // The decoding error is not detailed: the answer may hold credentials.
  const undecodable = new Error('error decoding credential provider plugin response from stdout');
  if (obj.kind !== 'CredentialProviderResponse' || Object.keys(obj).some((k) => !RESPONSE_FIELDS.has(k))) throw undecodable;
  const str = (v: unknown): string => (typeof v === 'string' ? v : '');
  const res: PluginResponse = { cacheKeyType: str(obj.cacheKeyType) as CacheKeyType, auth: {} };
  try {
    if (obj.cacheDuration !== undefined && obj.cacheDuration !== null) res.cacheDuration = parseDuration(str(obj.cacheDuration));
    for (const [k, v] of Object.entries((obj.auth ?? {}) as Record<string, unknown>)) {
      const a = (v ?? {}) as Record<string, unknown>;
      if (Object.keys(a).some((f) => f !== 'username' && f !== 'password')) throw undecodable;
      res.auth[k] = { username: str(a.username), password: str(a.password) };
    }
  } catch {
    throw undecodable;
  }
  return res;
}

/** The registry of an image: what comes before the first '/'. */
const registryOf = (image: string): string => image.split('/')[0]!;

/** One configured provider: matching, its cache and the runs of its plugin. */
export class PluginProvider {
  private readonly cache = new Map<string, { credentials: DockerConfig; expiresAt: number }>();
  private readonly inflight = new Map<string, Promise<PluginResponse>>();
  private lastPurge: number;

  constructor(
    readonly provider: CredentialProvider,
    binDir: string,
    private readonly log: Log,
    private readonly now: () => number = Date.now,
    private readonly exec: (image: string) => Promise<PluginResponse> = (image) => execPlugin(binDir, provider, image),
  ) {
    this.lastPurge = now();
  }

  isImageAllowed(image: string): boolean {
    return this.provider.matchImages.some((m) => urlsMatch(m, image));
  }

  /** The credentials for `image` (a normalized repository), from the cache or a run of the plugin. */
  async provide(image: string): Promise<DockerConfig> {
    if (!this.isImageAllowed(image)) return {};
    const cached = this.cached(image);
    if (cached) return cached;
    let run = this.inflight.get(image);
    if (!run) {
      run = this.exec(image).finally(() => this.inflight.delete(image));
      this.inflight.set(image, run);
    }
    let res: PluginResponse;
    try {
      res = await run;
    } catch (err) {
      this.log('error', `Failed getting credential from external registry credential provider: ${(err as Error).message}`);
      return {};
    }
    const key = res.cacheKeyType === 'Image' ? image : res.cacheKeyType === 'Registry' ? registryOf(image) : res.cacheKeyType === 'Global' ? GLOBAL_CACHE_KEY : undefined;
    if (key === undefined) {
      this.log('error', `credential provider plugin did not return a valid cacheKeyType: ${JSON.stringify(res.cacheKeyType)}`);
      return {};
    }
    const duration = res.cacheDuration ?? this.provider.defaultCacheDuration;
    if (duration > 0) this.cache.set(key, { credentials: res.auth, expiresAt: this.now() + duration });
    return res.auth;
  }

  private cached(image: string): DockerConfig | undefined {
    const t = this.now();
    if (t - this.lastPurge > 15 * 60_000) {
      for (const [k, e] of this.cache) if (t > e.expiresAt) this.cache.delete(k);
      this.lastPurge = t;
    }
    for (const key of [image, registryOf(image), GLOBAL_CACHE_KEY]) {
      const e = this.cache.get(key);
      if (!e) continue;
      if (t > e.expiresAt) this.cache.delete(key);
      else return e.credentials;
    }
    return undefined;
  }
}

/** The keyring of the registered providers: each provider's answer for the image, matched as a keyring. */
export class ProvidersKeyring implements DockerKeyring {
  constructor(readonly providers: readonly PluginProvider[]) {}

  async lookup(repo: string): Promise<AuthConfig[]> {
    const ring = new BasicKeyring();
    for (const p of this.providers) ring.add(await p.provide(repo));
    return ring.lookup(repo);
  }
}

/**
 * RegisterCredentialProviderPlugins: checks the bin directory, reads and validates the config, checks
 * each provider's executable. Throws with kubelet's messages (the agent then refuses to start).
 */
export function registerCredentialProviders(configPath: string, binDir: string, log: Log, now?: () => number): ProvidersKeyring {
  try {
    statSync(binDir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new Error(`plugin binary directory ${binDir} did not exist`, { cause: err });
    throw new Error(`error inspecting binary directory ${binDir}: ${(err as Error).message}`, { cause: err });
  }
  const providers = readCredentialProviderConfig(configPath);
  const out: PluginProvider[] = [];
  for (const p of providers) {
    const bin = join(binDir, p.name);
    try {
      statSync(bin);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new Error(`plugin binary executable ${bin} did not exist`, { cause: err });
      throw new Error(`error inspecting binary executable ${bin}: ${(err as Error).message}`, { cause: err });
    }
    out.push(new PluginProvider(p, binDir, log, now));
    log('info', `credential provider ${p.name} registered (matchImages ${p.matchImages.join(', ')}; defaultCacheDuration ${formatDuration(p.defaultCacheDuration)})`);
  }
  return new ProvidersKeyring(out);
}

/**
 * The credential options at start, as kubelet 1.23's kuberuntime manager treats them: with the gate
 * off they are ignored with a log line; with it on (and either option set) the providers are registered.
 */
export function credentialProvidersFromOptions(
  o: { configPath?: string | undefined; binDir?: string | undefined; gateEnabled: boolean },
  log: Log,
): ProvidersKeyring | undefined {
  const set = (o.configPath ?? '') !== '' || (o.binDir ?? '') !== '';
  if (!set) return undefined;
  if (!o.gateEnabled) {
    log(
      'info',
      'Flags --image-credential-provider-config or --image-credential-provider-bin-dir were set but the feature gate was disabled, these flags will be ignored (featureGate=KubeletCredentialProviders)',
    );
    return undefined;
  }
  return registerCredentialProviders(o.configPath ?? '', o.binDir ?? '', log);
}

