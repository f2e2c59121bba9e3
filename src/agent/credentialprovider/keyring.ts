// Registry credentials for image pulls, as kubelet 1.23 looks them up (pkg/credentialprovider
// keyring.go, secrets/secrets.go, and the pull loop of kuberuntime_image.go):
//
//   - an image is looked up by its repository, normalized as Docker does (busybox:1 ->
//     docker.io/library/busybox; tag and digest dropped);
//   - a keyring holds DockerConfig entries keyed by registry location (a host, optionally with a
//     path; a scheme and a /v1/ or /v2/ path prefix are ignored). An entry matches an image when the
//     host has as many dot-separated parts, each part glob-matches (Go's filepath.Match: *, ?, [..]),
//     the ports are equal and the entry's path is a prefix of the image's path. Entries are tried most
//     specific first (the keys reverse-sorted); with no match, the entry of index.docker.io serves
//     images of Docker Hub;
//   - the pod's imagePullSecrets (kubernetes.io/dockerconfigjson and kubernetes.io/dockercfg) come
//     first, then the agent's own providers (the exec plugins of plugin.ts);
//   - with no credentials the image is pulled anonymously; otherwise each in turn until one works.

/** One registry login (DockerConfigEntry; `auth` in JSON is base64 "user:password"). */
export interface DockerConfigEntry {
  username: string;
  password: string;
  email?: string;
}

/** Registry location -> login. */
export type DockerConfig = Record<string, DockerConfigEntry>;

/** What goes to the runtime's PullImage (CRI AuthConfig). */
export interface AuthConfig {
  username: string;
  password: string;
  auth?: string;
  serverAddress?: string;
  identityToken?: string;
  registryToken?: string;
}

/** Anything that answers credentials for an image's repository. */
export interface DockerKeyring {
  lookup(repo: string): AuthConfig[] | Promise<AuthConfig[]>;
}

const DEFAULT_REGISTRY_HOST = 'index.docker.io';

/**
 * The repository of an image reference, fully qualified (Docker's ParseNormalizedNamed then Name()):
 * 'busybox:1' -> 'docker.io/library/busybox', 'reg:5000/a/b@sha256:..' -> 'reg:5000/a/b'.
 */
export function repositoryOf(image: string): string {
  let name = image;
  const at = name.indexOf('@');
  if (at >= 0) name = name.slice(0, at);
  const colon = name.lastIndexOf(':');
  if (colon > name.lastIndexOf('/')) name = name.slice(0, colon);
  const slash = name.indexOf('/');
  const first = slash < 0 ? '' : name.slice(0, slash);
  if (slash < 0 || (!first.includes('.') && !first.includes(':') && first !== 'localhost')) {
    const path = slash < 0 ? `library/${name}` : name;
    return `docker.io/${path}`;
  }
  if (first === 'index.docker.io') return `docker.io/${name.slice(slash + 1)}`;
  return name;
}

/** Go's filepath.Match on one host part: '*' (not '/'), '?', character classes with '^' or '!'. */
export function globMatch(pattern: string, name: string): boolean {
  let re = '^';
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i]!;
    if (ch === '*') re += '[^/]*';
    else if (ch === '?') re += '[^/]';
    else if (ch === '[') {
      const end = pattern.indexOf(']', i + 2);
      if (end < 0) return false; // ErrBadPattern: no match
      let body = pattern.slice(i + 1, end);
      if (body.startsWith('^')) body = `^${body.slice(1)}`;
      re += `[${body.replace(/\\/g, '\\\\')}]`;
      i = end;
    } else if (ch === '\\' && i + 1 < pattern.length) {
      re += pattern[++i]!.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    } else re += ch.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  }
  try {
    return new RegExp(`${re}$`).test(name);
  } catch {
    return false;
  }
}

interface SchemelessURL {
  host: string;
  port: string;
  path: string;
}

/** ParseSchemelessURL: host[:port][/path], undefined when it does not parse. */
export function parseSchemelessURL(s: string): SchemelessURL | undefined {
  let u: URL;
  try {
    // a placeholder scheme: WHATWG's https parser would refuse glob characters in the host
    u = new URL(`orch-cred://${s}`);
  } catch {
    return undefined;
  }
  return { host: decodeURIComponent(u.hostname), port: u.port, path: decodeURIComponent(u.pathname) };
}

/** URLsMatchStr: does the target (an image repository) match the glob (a key or a matchImages entry)? */
export function urlsMatch(glob: string, target: string): boolean {
  const g = parseSchemelessURL(glob);
  const t = parseSchemelessURL(target);
  if (!g || !t) return false;
  if (g.port !== t.port) return false;
  const gp = g.host.split('.');
  const tp = t.host.split('.');
  if (gp.length !== tp.length) return false;
  if (!t.path.startsWith(g.path)) return false;
  return gp.every((part, i) => globMatch(part, tp[i]!));
}

/** The keyring key of a DockerConfig location (BasicDockerKeyring.Add), undefined when it does not parse. */
export function keyOf(location: string): string | undefined {
  let value = location;
  if (!value.startsWith('https://') && !value.startsWith('http://')) value = `https://${value}`;
  let u: URL;
  try {
    u = new URL(value.replace(/^https?:\/\//, 'orch-cred://'));
  } catch {
    return undefined;
  }
  const host = u.port !== '' ? `${u.hostname}:${u.port}` : u.hostname;
  let path = decodeURIComponent(u.pathname);
  if (path.startsWith('/v2/') || path.startsWith('/v1/')) path = path.slice(3);
  return path !== '' && path !== '/' ? host + path : host;
}

/** A keyring of DockerConfig entries (BasicDockerKeyring). */
export class BasicKeyring implements DockerKeyring {
  private index: string[] = [];
  private readonly creds = new Map<string, AuthConfig[]>();

  add(cfg: DockerConfig): void {
    for (const [location, entry] of Object.entries(cfg)) {
      const key = keyOf(location);
      if (key === undefined) continue;
      const list = this.creds.get(key) ?? [];
      list.push({ username: entry.username, password: entry.password });
      this.creds.set(key, list);
      this.index.push(key);
    }
    this.index = [...new Set(this.index)].sort().reverse();
  }

  lookup(repo: string): AuthConfig[] {
    const out: AuthConfig[] = [];
    for (const k of this.index) if (urlsMatch(k, repo)) out.push(...this.creds.get(k)!);
    if (out.length > 0) return out;
    if (isDefaultRegistryMatch(repo)) return this.creds.get(DEFAULT_REGISTRY_HOST) ?? [];
    return [];
  }
}

/** Does the image come from Docker Hub? */
function isDefaultRegistryMatch(image: string): boolean {
  const slash = image.indexOf('/');
  const first = slash < 0 ? image : image.slice(0, slash);
  if (first === '') return false;
  if (slash < 0) return true;
  if (first === 'docker.io' || first === 'index.docker.io') return true;
  return !first.includes('.') && !first.includes(':');
}

/** Several keyrings in order, their answers concatenated (unionDockerKeyring). */
export function unionKeyring(...rings: (DockerKeyring | undefined)[]): { lookup(repo: string): Promise<AuthConfig[]> } {
  return {
    lookup: async (repo) => {
      const out: AuthConfig[] = [];
      for (const r of rings) if (r) out.push(...(await r.lookup(repo)));
      return out;
    },
  };
}

type Json = Record<string, unknown>;

/** DockerConfigEntry from JSON: username/password, or `auth` (base64 "user:password") which wins. */
function entryOf(raw: unknown): DockerConfigEntry {
  const e = (typeof raw === 'object' && raw !== null ? raw : {}) as Json;
  const out: DockerConfigEntry = { username: typeof e.username === 'string' ? e.username : '', password: typeof e.password === 'string' ? e.password : '' };
  if (typeof e.email === 'string') out.email = e.email;
  if (typeof e.auth === 'string' && e.auth !== '') {
    const decoded = Buffer.from(e.auth, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) throw new Error('unable to parse auth field, must be formatted as base64(username:password)');
    out.username = decoded.slice(0, colon);
    out.password = decoded.slice(colon + 1);
  }
  return out;
}

/** Parses a DockerConfig object (the value of .dockercfg, or the `auths` of .dockerconfigjson). */
export function parseDockerConfig(obj: unknown): DockerConfig {
  const out: DockerConfig = {};
  if (typeof obj !== 'object' || obj === null) return out;
  for (const [k, v] of Object.entries(obj as Json)) out[k] = entryOf(v);
  return out;
}

/**
 * The keyring of a pod's pull secrets (MakeDockerKeyring): each Secret of type
 * kubernetes.io/dockerconfigjson (its .dockerconfigjson's `auths`) or kubernetes.io/dockercfg (its
 * .dockercfg); other Secrets give nothing. Throws when a Secret's JSON is malformed. Undefined when none
 * carried credentials.
 */
export function secretsKeyring(secrets: readonly Json[]): BasicKeyring | undefined {
  const configs: DockerConfig[] = [];
  for (const s of secrets) {
    const data = (s.data ?? {}) as Record<string, string>;
    const read = (key: string): string | undefined => (typeof data[key] === 'string' && data[key] !== '' ? Buffer.from(data[key], 'base64').toString('utf8') : undefined);
    if (s.type === 'kubernetes.io/dockerconfigjson') {
      const text = read('.dockerconfigjson');
      if (text !== undefined) configs.push(parseDockerConfig((JSON.parse(text) as Json).auths));
    } else if (s.type === 'kubernetes.io/dockercfg') {
      const text = read('.dockercfg');
      if (text !== undefined) configs.push(parseDockerConfig(JSON.parse(text)));
    }
  }
  if (configs.length === 0) return undefined;
  const ring = new BasicKeyring();
  for (const c of configs) ring.add(c);
  return ring;
}
