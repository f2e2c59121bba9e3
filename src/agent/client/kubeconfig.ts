// Reading a kubeconfig file (--orchconfig, alias --kubeconfig) into what the API client needs: the
// server URL and how to trust it and authenticate to it. Follows client-go's clientcmd for the
// fields orchlet uses: the current context (or the only one), its cluster (server,
// certificate-authority / -data, insecure-skip-tls-verify, tls-server-name) and user (token,
// tokenFile, client-certificate / -data, client-key / -data). Relative file paths are relative to
// the kubeconfig's own directory, as clientcmd resolves them.
import { readFile } from 'node:fs/promises';
import { dirname, isAbsolute, join } from 'node:path';
import { parse as parseYAML } from 'yaml';

export interface ClientConfig {
  /** https://host:port, without a trailing slash. */
  server: string;
  /** PEM of the authorities that may sign the server's certificate; undefined: the system's. */
  ca?: string;
  insecureSkipTLSVerify?: boolean;
  tlsServerName?: string;
  token?: string;
  /** PEM client certificate and key. */
  cert?: string;
  key?: string;
  /** --orch-api-content-type: application/json, or protobuf (either spelling); default JSON. */
  contentType?: string;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

function named(list: unknown, name: string | undefined, what: string, inner: string): Obj {
  const items = Array.isArray(list) ? list.filter(isObj) : [];
  const found = name !== undefined ? items.find((i) => i.name === name) : items.length === 1 ? items[0] : undefined;
  if (!found) throw new Error(name !== undefined ? `${what} "${name}" not found` : `no ${what} chosen (set current-context)`);
  const body = found[inner];
  return isObj(body) ? body : {};
}

/** Reads and resolves a kubeconfig; errors name the file and what is wrong. */
export async function loadKubeconfig(path: string): Promise<ClientConfig> {
  let doc: unknown;
  try {
    doc = parseYAML(await readFile(path, 'utf8'));
  } catch (err) {
    throw new Error(`kubeconfig ${path}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
  try {
    return await resolveKubeconfig(doc, dirname(path));
  } catch (err) {
    throw new Error(`kubeconfig ${path}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
}

/** Resolves a parsed kubeconfig; `baseDir` anchors relative file paths. */
export async function resolveKubeconfig(doc: unknown, baseDir: string): Promise<ClientConfig> {
  if (!isObj(doc)) throw new Error('not a kubeconfig (expected a YAML or JSON object)');
  const contexts = Array.isArray(doc.contexts) ? doc.contexts.filter(isObj) : [];
  const ctxName = str(doc['current-context']) ?? (contexts.length === 1 ? str(contexts[0]!.name) : undefined);
  const ctx = named(doc.contexts, ctxName, 'context', 'context');
  const cluster = named(doc.clusters, str(ctx.cluster), 'cluster', 'cluster');
  const users = Array.isArray(doc.users) ? doc.users : [];
  const user = str(ctx.user) !== undefined || users.length > 0 ? named(users, str(ctx.user), 'user', 'user') : {};
  const file = async (p: unknown): Promise<string | undefined> => {
    const s = str(p);
    if (s === undefined) return undefined;
    return readFile(isAbsolute(s) ? s : join(baseDir, s), 'utf8');
  };
  const data = (v: unknown): string | undefined => {
    const s = str(v);
    return s === undefined ? undefined : Buffer.from(s, 'base64').toString('utf8');
  };
  const server = str(cluster.server);
  if (server === undefined) throw new Error('the cluster has no server');
  const out: ClientConfig = { server: server.replace(/\/+$/, '') };
  const ca = data(cluster['certificate-authority-data']) ?? (await file(cluster['certificate-authority']));
  if (ca !== undefined) out.ca = ca;
  if (cluster['insecure-skip-tls-verify'] === true) out.insecureSkipTLSVerify = true;
  const sni = str(cluster['tls-server-name']);
  if (sni !== undefined) out.tlsServerName = sni;
  const token = str(user.token) ?? (await file(user.tokenFile))?.trim();
  if (token !== undefined) out.token = token;
  const cert = data(user['client-certificate-data']) ?? (await file(user['client-certificate']));
  const key = data(user['client-key-data']) ?? (await file(user['client-key']));
  if ((cert === undefined) !== (key === undefined)) throw new Error('a client certificate needs both the certificate and the key');
  if (cert !== undefined && key !== undefined) {
    out.cert = cert;
    out.key = key;
  }
  return out;
}
