// The --config file of orchlet: a KubeletConfiguration (kind KubeletConfiguration, apiVersion
// kubelet.config.k8s.io/v1beta1) in YAML or JSON, as Kubernetes writes it. Every option marked
// [cfg] has its field (FlagSpec.configField, dotted for nested fields such as
// authentication.anonymous.enabled); a field's value is turned into the option's command-line text
// and parsed by the same table, so the same checks apply. Command-line flags override the file
// (maps and lists too: a flag replaces the file's value, it does not merge into it).
//
// Relative paths in the file (staticPodPath, tlsCertFile, tlsPrivateKeyFile,
// authentication.x509.clientCAFile, resolvConf) are relative to the file's directory, as kubelet
// resolves them. Fields the table does not know are reported back as warnings, not errors (a
// KubeletConfiguration may hold fields of features this agent does not have).
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { parse as parseYAML } from 'yaml';
import type { FlagSpec } from '../util/flags.js';

export const CONFIG_API_VERSION = 'kubelet.config.k8s.io/v1beta1';
export const CONFIG_KIND = 'KubeletConfiguration';

const PATH_FIELDS = new Set(['staticPodPath', 'tlsCertFile', 'tlsPrivateKeyFile', 'authentication.x509.clientCAFile', 'resolvConf']);

export class ConfigFileError extends Error {
  override name = 'ConfigFileError';
}

export interface ConfigFileValues {
  /** Command-line style arguments (`--name=text`) for every option the file sets. */
  args: string[];
  /** Option names the file sets. */
  set: string[];
  /** Fields the option table does not know. */
  warnings: string[];
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

function lookup(obj: Json, dotted: string): unknown {
  let cur: unknown = obj;
  for (const part of dotted.split('.')) {
    if (!isObject(cur)) return undefined;
    cur = cur[part];
  }
  return cur;
}

/** Every leaf field path of the file (objects that are map values count as leaves). */
function leafPaths(obj: Json, known: ReadonlySet<string>, prefix = ''): string[] {
  const out: string[] = [];
  for (const [k, v] of Object.entries(obj)) {
    const path = prefix === '' ? k : `${prefix}.${k}`;
    if (prefix === '' && (k === 'kind' || k === 'apiVersion')) continue;
    if (known.has(path)) continue;
    if (isObject(v) && [...known].some((f) => f.startsWith(`${path}.`))) out.push(...leafPaths(v, known, path));
    else out.push(path);
  }
  return out;
}

/** The option's command-line text for a field value; throws ConfigFileError for a wrong type. */
function textOf(spec: FlagSpec, field: string, v: unknown): string {
  const bad = (want: string): never => {
    throw new ConfigFileError(`${field}: expected ${want}, got ${JSON.stringify(v)}`);
  };
  switch (spec.type) {
    case 'bool':
      return typeof v === 'boolean' ? String(v) : bad('a boolean');
    case 'int':
    case 'int32':
    case 'uint':
    case 'float':
      return typeof v === 'number' ? String(v) : bad('a number');
    case 'duration':
      if (typeof v === 'string') return v;
      return bad("a duration string such as '10s'");
    case 'string':
    case 'ip':
    case 'enum':
      if (typeof v === 'string') return v;
      if (typeof v === 'number' && spec.type === 'string') return String(v);
      if (field === 'reservedMemory' && Array.isArray(v)) {
        // [{numaNode: 0, limits: {memory: 1Gi}}] -> 0:memory=1Gi;...
        return v
          .map((r) => (isObject(r) && typeof r.numaNode === 'number' && isObject(r.limits) ? `${r.numaNode}:${Object.entries(r.limits).map(([k, q]) => `${k}=${String(q)}`).join(',')}` : bad('a list of {numaNode, limits}')))
          .join(';');
      }
      return bad('a string');
    case 'strings':
    case 'cidrs':
      if (Array.isArray(v) && v.every((x) => typeof x === 'string')) return v.map((x) => (x.includes(',') ? `"${x}"` : x)).join(',');
      return bad('a list of strings');
    case 'mapStringString':
    case 'keyValue':
    case 'stringToString': {
      if (field === 'registerWithTaints') {
        if (!Array.isArray(v)) return bad('a list of taints');
        return v
          .map((t) => (isObject(t) ? `${String(t.key)}=${typeof t.value === 'string' ? t.value : ''}:${String(t.effect)}` : bad('a list of taints')))
          .join(',');
      }
      if (!isObject(v)) return bad('a map of strings');
      const sep = spec.separator ?? '=';
      return Object.entries(v)
        .map(([k, x]) => `${k}${sep}${typeof x === 'string' || typeof x === 'number' ? String(x) : bad('a map of strings')}`)
        .join(',');
    }
    case 'mapStringBool':
      if (!isObject(v)) return bad('a map of booleans');
      return Object.entries(v)
        .map(([k, x]) => `${k}=${typeof x === 'boolean' ? String(x) : bad('a map of booleans')}`)
        .join(',');
    case 'multimap': {
      if (!isObject(v)) return bad('a map of string lists');
      const sep = spec.separator ?? ':';
      const pairs: string[] = [];
      for (const [k, list] of Object.entries(v)) {
        if (!Array.isArray(list)) bad('a map of string lists');
        for (const x of list as unknown[]) pairs.push(`${k}${sep}${String(x)}`);
      }
      return pairs.join(',');
    }
    case 'portRange':
      return typeof v === 'string' ? v : bad('a port range');
  }
}

/** Reads and converts a config file; throws ConfigFileError naming the file and the field. */
export function readConfigFile(path: string, specs: readonly FlagSpec[]): ConfigFileValues {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigFileError(`failed to read the configuration file ${path}: ${err instanceof Error ? err.message : String(err)}`);
  }
  let doc: unknown;
  try {
    doc = parseYAML(text);
  } catch (err) {
    throw new ConfigFileError(`failed to decode the configuration file ${path}: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (!isObject(doc)) throw new ConfigFileError(`configuration file ${path}: expected a ${CONFIG_KIND} object`);
  if (doc.kind !== CONFIG_KIND || doc.apiVersion !== CONFIG_API_VERSION) {
    throw new ConfigFileError(
      `configuration file ${path}: kind ${JSON.stringify(doc.kind)}, apiVersion ${JSON.stringify(doc.apiVersion)}: expected kind ${CONFIG_KIND} and apiVersion ${CONFIG_API_VERSION}`,
    );
  }
  const base = dirname(resolve(path));
  // An upstream field with two spellings of its flag goes to the current one, not the experimental one.
  const withField = specs
    .filter((s): s is FlagSpec & { configField: string } => s.configField !== undefined)
    .sort((a, b) => Number(a.name.startsWith('experimental-')) - Number(b.name.startsWith('experimental-')));
  const out: ConfigFileValues = { args: [], set: [], warnings: [] };
  const seen = new Set<string>();
  for (const spec of withField) {
    if (seen.has(spec.configField)) continue; // two spellings of one field (experimental-kernel-memcg-notification)
    const v = lookup(doc, spec.configField);
    if (v === undefined || v === null) continue;
    seen.add(spec.configField);
    let text: string;
    try {
      text = textOf(spec, spec.configField, v);
    } catch (err) {
      throw new ConfigFileError(`configuration file ${path}: ${err instanceof Error ? err.message : String(err)}`);
    }
    if (PATH_FIELDS.has(spec.configField) && text !== '' && !isAbsolute(text)) text = resolve(base, text);
    out.args.push(`--${spec.name}=${text}`);
    out.set.push(spec.name);
  }
  out.warnings = leafPaths(doc, new Set(withField.map((s) => s.configField))).map(
    (f) => `configuration file ${path}: field ${f} is not supported by orchlet and was ignored`,
  );
  return out;
}
