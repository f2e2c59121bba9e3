// A declarative command-line flag parser modelled on spf13/pflag, the library behind the
// Kubernetes components' flags.
//
// Options are described by FlagSpec rows (see flag() and flagGroup()); parseFlags() turns argv
// into values keyed by option name and remembers which options were given explicitly;
// formatHelp() prints pflag-style usage grouped by section. Accepted forms:
//   --name=value   --name value (not for bools)   --bool   --bool=true|false
//   -v=4   -v 4   -v4   -h   and '--' ends the flags (anything after it is a positional argument).
// Errors are FlagError, with messages such as
//   invalid value "abc" for --secure-port: must be an integer
//   unknown flag: --foo
//
// The document-2 feature gate table lives here too (at the end of the file) because both the
// server and the node agent use it and util is the only layer they share.
import { isIP } from 'node:net';

// ---------------------------------------------------------------------------------------------
// Types

/**
 * Value types. Each maps to the TypeScript type in FlagTypeMap.
 * - bool, int (safe integer), int32, uint, float, string, ip (IPv4/IPv6 address; '' allowed)
 * - strings: comma-separated list (double quotes protect commas; entries trimmed); repeating the flag
 *   appends, as pflag's StringSlice; with noSplit every occurrence is one entry (StringArray)
 * - duration: Go syntax ('300ms', '1.5h', '2m0s', '-1s'), parsed to milliseconds
 * - stringToString: pflag's stringToString ('a=b,c=d'; with a single '=' the whole text is one pair)
 * - mapStringString: 'k=v,k2=v2' (separator configurable, e.g. '<' for eviction thresholds)
 * - keyValue: 'k=v,k2' pairs where a bare key means value '' (ConfigurationMap); noSplit: one pair per use
 * - mapStringBool: 'name=true,other=false' (feature gates)
 * - multimap: 'name:value,name:value2' into name -> [values] (colon-separated multimap)
 * - cidrs: comma-separated IPv4/IPv6 CIDRs
 * - portRange: 'N1-N2' or 'N', within 1..65535, N1 <= N2
 * - enum: one of spec.values
 * Maps and lists: the first explicit use replaces the default, later uses append or merge.
 */
export type FlagType =
  | 'bool'
  | 'int'
  | 'int32'
  | 'uint'
  | 'float'
  | 'string'
  | 'strings'
  | 'duration'
  | 'stringToString'
  | 'mapStringString'
  | 'keyValue'
  | 'mapStringBool'
  | 'multimap'
  | 'cidrs'
  | 'portRange'
  | 'enum'
  | 'ip';

/** 'later' options parse (so their syntax is checked) but are refused when given: their feature is not built yet. */
export type FlagStatus = 'supported' | 'later';

/** An inclusive port range. */
export interface PortRange {
  min: number;
  max: number;
}

export interface FlagTypeMap {
  bool: boolean;
  int: number;
  int32: number;
  uint: number;
  float: number;
  string: string;
  strings: string[];
  duration: number;
  stringToString: Record<string, string>;
  mapStringString: Record<string, string>;
  keyValue: Record<string, string>;
  mapStringBool: Record<string, boolean>;
  multimap: Record<string, string[]>;
  cidrs: string[];
  portRange: PortRange;
  enum: string;
  ip: string;
}

export type FlagValue = FlagTypeMap[FlagType];

export interface FlagSpec {
  /** Long name without the leading dashes, e.g. 'secure-port'. */
  readonly name: string;
  /** One-letter short name, e.g. 'v'. */
  readonly short?: string;
  /** Other accepted long names (the upstream spellings), shown in help as deprecated spellings. */
  readonly aliases?: readonly string[];
  readonly type: FlagType;
  /** Default in the document's text form ('5m0s', '30000-32767', 'true'); absent means none (zero value). */
  readonly default?: string;
  readonly help: string;
  /** The document section the option belongs to; help is grouped by it. */
  readonly group: string;
  readonly status: FlagStatus;
  /** For node-agent options that may also be set in the --config file: the configuration field. */
  readonly configField?: string;
  /** enum: the allowed values; strings: the allowed entries. */
  readonly values?: readonly string[];
  /** mapStringString / multimap: separator between key and value ('=' / ':' unless given). */
  readonly separator?: string;
  /** strings / mapStringString / keyValue: one entry per use, commas are not separators. */
  readonly noSplit?: boolean;
  /** Type word shown in help instead of the default one. */
  readonly typeName?: string;
  /** Shown in help as the default instead of the default value. */
  readonly defaultText?: string;
  /**
   * Extra check run after each use, given the option's value so far (after this use was applied).
   * Returns an error text completing 'invalid value "<raw>" for --name: ...', or undefined when fine.
   */
  readonly validate?: (value: FlagValue) => string | undefined;
}

export class FlagError extends Error {
  /** The canonical name of the option concerned, when there is one. */
  readonly flag: string | undefined;
  constructor(message: string, flag?: string) {
    super(message);
    this.name = 'FlagError';
    this.flag = flag;
  }
}

// ---------------------------------------------------------------------------------------------
// Declaring option tables with their TypeScript types preserved

export interface FlagExtra<T extends FlagType> {
  short?: string;
  aliases?: readonly string[];
  /** Defaults to 'later'. */
  status?: FlagStatus;
  configField?: string;
  values?: readonly string[];
  separator?: string;
  noSplit?: boolean;
  typeName?: string;
  defaultText?: string;
  validate?: (value: FlagTypeMap[T]) => string | undefined;
}

export type TypedFlagSpec<N extends string, T extends FlagType, D extends string | undefined> = FlagSpec & {
  readonly name: N;
  readonly type: T;
  readonly default: D;
};

/**
 * One option row: flag('secure-port', 'int', '6443', 'Port serving HTTPS.', { status: 'supported' }).
 * The default is written in the document's text form and parsed like a command-line value;
 * undefined means the document gives none.
 */
export function flag<const N extends string, const T extends FlagType, const D extends string | undefined>(
  name: N,
  type: T,
  def: D,
  help: string,
  extra: FlagExtra<T> = {},
): TypedFlagSpec<N, T, D> {
  const { validate, status, ...rest } = extra;
  const spec: Record<string, unknown> = { name, type, default: def, help, group: '', status: status ?? 'later' };
  for (const [k, v] of Object.entries(rest)) if (v !== undefined) spec[k] = v;
  if (validate) spec.validate = (v: FlagValue) => validate(v as FlagTypeMap[T]);
  return spec as unknown as TypedFlagSpec<N, T, D>;
}

/** Stamps a section heading on a list of rows: flagGroup('Key-value store options', [flag(...), ...]). */
export function flagGroup<const L extends readonly FlagSpec[]>(group: string, specs: L): L {
  return specs.map((s) => ({ ...s, group })) as unknown as L;
}

/** 'secure-port' -> 'securePort'. */
export type CamelCase<S extends string> = S extends `${infer H}-${infer R}` ? `${H}${Capitalize<CamelCase<R>>}` : S;

export function camelCase(name: string): string {
  return name.replace(/-(.)/g, (_m, c: string) => c.toUpperCase());
}

type MayBeUnset = 'string' | 'enum' | 'ip' | 'portRange';

/** The TypeScript type of a parsed option: string-like options without a default may be undefined. */
export type FlagValueOf<S> = S extends { readonly type: infer T extends FlagType; readonly default: infer D }
  ? T extends MayBeUnset
    ? D extends string
      ? FlagTypeMap[T]
      : FlagTypeMap[T] | undefined
    : FlagTypeMap[T]
  : never;

/** The options object of a table: one camelCase field per option. */
export type OptionsOf<L extends readonly FlagSpec[]> = {
  -readonly [S in L[number] as CamelCase<S['name']>]: FlagValueOf<S>;
};

// ---------------------------------------------------------------------------------------------
// Value syntax

/** Go's strconv.ParseBool. */
export function parseBool(text: string): boolean | undefined {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(text)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(text)) return false;
  return undefined;
}

const NS_PER: Record<string, number> = {
  ns: 1,
  us: 1e3,
  '\u00b5s': 1e3, // U+00B5 micro sign
  '\u03bcs': 1e3, // U+03BC greek mu
  ms: 1e6,
  s: 1e9,
  m: 60e9,
  h: 3600e9,
};
const DURATION_TERM = /^(\d*)(?:\.(\d*))?(ns|us|\u00b5s|\u03bcs|ms|s|m|h)/;
const MAX_DURATION_NS = 2 ** 63; // Go durations are int64 nanoseconds

/**
 * Parses a Go duration ('300ms', '1.5h', '2m0s', '-1s', '0') into milliseconds (fractional below 1ms).
 * Throws FlagError on bad syntax.
 */
export function parseDuration(text: string): number {
  let s = text;
  let sign = 1;
  if (s.startsWith('-') || s.startsWith('+')) {
    if (s.startsWith('-')) sign = -1;
    s = s.slice(1);
  }
  if (s === '0') return 0;
  if (s === '') throw new FlagError(`invalid duration "${text}"`);
  let ns = 0;
  while (s !== '') {
    const m = DURATION_TERM.exec(s);
    if (!m || (m[1] === '' && (m[2] === undefined || m[2] === ''))) throw new FlagError(`invalid duration "${text}"`);
    // Group 3 always matches, and its alternatives are exactly the keys of NS_PER.
    const unit = NS_PER[m[3]!]!;
    ns += Number(m[1] || '0') * unit;
    if (m[2]) ns += Math.round(Number(`0.${m[2]}`) * unit);
    s = s.slice(m[0].length);
  }
  if (ns >= MAX_DURATION_NS) throw new FlagError(`invalid duration "${text}": out of range`);
  const ms = ns / 1e6;
  return ms === 0 ? 0 : sign * ms;
}

/** Integer part and trimmed decimal fraction of v / unit, e.g. (1500n, 1000n) -> '1.5'. */
function fixed(v: bigint, unit: bigint, digits: number): string {
  const whole = v / unit;
  const frac = (v % unit).toString().padStart(digits, '0').replace(/0+$/, '');
  return frac === '' ? `${whole}` : `${whole}.${frac}`;
}

/** Prints milliseconds the way Go's time.Duration.String() does: '0s', '100ms', '30s', '2m0s', '1h0m0s', '1m30.5s'. */
export function formatDuration(ms: number): string {
  let ns = BigInt(Math.round(ms * 1e6));
  const neg = ns < 0n;
  if (neg) ns = -ns;
  let out: string;
  if (ns === 0n) return '0s';
  if (ns < 1000n) out = `${ns}ns`;
  else if (ns < 1_000_000n) out = `${fixed(ns, 1000n, 3)}\u00b5s`;
  else if (ns < 1_000_000_000n) out = `${fixed(ns, 1_000_000n, 6)}ms`;
  else {
    const hours = ns / 3_600_000_000_000n;
    const minutes = (ns / 60_000_000_000n) % 60n;
    const seconds = `${fixed(ns % 60_000_000_000n, 1_000_000_000n, 9)}s`;
    if (hours > 0n) out = `${hours}h${minutes}m${seconds}`;
    else if (minutes > 0n) out = `${minutes}m${seconds}`;
    else out = seconds;
  }
  return neg ? `-${out}` : out;
}

/** True for 'a.b.c.d/n' (n <= 32) and IPv6 'addr/n' (n <= 128). Host bits may be set, as in Go's ParseCIDR. */
export function isCIDR(text: string): boolean {
  const parts = text.split('/');
  if (parts.length !== 2 || !/^\d{1,3}$/.test(parts[1]!)) return false;
  const family = isIP(parts[0]!);
  const bits = Number(parts[1]);
  return (family === 4 && bits <= 32) || (family === 6 && bits <= 128);
}

/** Splits on commas outside double quotes; quotes are removed and entries trimmed; '' gives []. */
export function splitList(text: string): string[] {
  if (text.trim() === '') return [];
  const out: string[] = [];
  let cur = '';
  let quoted = false;
  for (const ch of text) {
    if (ch === '"') quoted = !quoted;
    else if (ch === ',' && !quoted) {
      out.push(cur.trim());
      cur = '';
    } else cur += ch;
  }
  out.push(cur.trim());
  return out;
}

class ValueError extends Error {}

function fail(message: string): never {
  throw new ValueError(message);
}

function parseInteger(raw: string, min: number, max: number, what: string): number {
  const t = raw.trim();
  if (!/^[+-]?\d+$/.test(t)) fail(`must be ${what}`);
  const n = Number(t);
  if (!Number.isSafeInteger(n) || n < min || n > max) fail(`must be ${what}`);
  return n;
}

function durationValue(raw: string): number {
  try {
    return parseDuration(raw.trim());
  } catch {
    return fail("must be a duration such as '300ms', '1.5h' or '2m0s'");
  }
}

function splitPairs(spec: FlagSpec, raw: string): string[] {
  if (spec.noSplit) return raw.trim() === '' ? [] : [raw];
  return raw
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '');
}

/** Parses one use of an option (without merging into earlier uses). Throws ValueError. */
function parseOne(spec: FlagSpec, raw: string): FlagValue {
  switch (spec.type) {
    case 'bool': {
      const b = parseBool(raw);
      if (b === undefined) fail('must be true or false');
      return b;
    }
    case 'int':
      return parseInteger(raw, Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER, 'an integer');
    case 'int32':
      return parseInteger(raw, -2147483648, 2147483647, 'a 32-bit integer');
    case 'uint':
      return parseInteger(raw, 0, Number.MAX_SAFE_INTEGER, 'a non-negative integer');
    case 'float': {
      const t = raw.trim();
      if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(t)) fail('must be a number');
      return Number(t);
    }
    case 'string':
      return raw;
    case 'strings':
      if (spec.noSplit) return [raw];
      return splitList(raw);
    case 'duration':
      return durationValue(raw);
    case 'stringToString': {
      const n = (raw.match(/=/g) ?? []).length;
      if (n === 0) fail('must be formatted as key=value');
      const pairs = n === 1 ? [raw.replace(/^"|"$/g, '')] : splitList(raw);
      const out: Record<string, string> = {};
      for (const p of pairs) {
        const i = p.indexOf('=');
        if (i < 0) fail(`"${p}" must be formatted as key=value`);
        out[p.slice(0, i)] = p.slice(i + 1);
      }
      return out;
    }
    case 'mapStringString': {
      const sep = spec.separator ?? '=';
      const out: Record<string, string> = {};
      for (const p of splitPairs(spec, raw)) {
        const i = p.indexOf(sep);
        if (i <= 0) fail(`must be key${sep}value pairs separated by commas`);
        out[p.slice(0, i).trim()] = p.slice(i + sep.length).trim();
      }
      return out;
    }
    case 'keyValue': {
      const out: Record<string, string> = {};
      for (const p of splitPairs(spec, raw)) {
        const i = p.indexOf('=');
        const key = (i < 0 ? p : p.slice(0, i)).trim();
        if (key === '') fail('must be key=value pairs separated by commas');
        out[key] = i < 0 ? '' : p.slice(i + 1).trim();
      }
      return out;
    }
    case 'mapStringBool': {
      const out: Record<string, boolean> = {};
      for (const p of splitPairs(spec, raw)) {
        const i = p.indexOf('=');
        const b = i > 0 ? parseBool(p.slice(i + 1).trim()) : undefined;
        if (b === undefined) fail('must be name=true|false pairs separated by commas');
        out[p.slice(0, i).trim()] = b;
      }
      return out;
    }
    case 'multimap': {
      const sep = spec.separator ?? ':';
      const out: Record<string, string[]> = {};
      for (const p of splitPairs(spec, raw)) {
        const i = p.indexOf(sep);
        if (i <= 0) fail(`must be name${sep}value pairs separated by commas`);
        const key = p.slice(0, i).trim();
        (out[key] ??= []).push(p.slice(i + sep.length).trim());
      }
      return out;
    }
    case 'cidrs': {
      const list = splitList(raw);
      for (const c of list) if (!isCIDR(c)) fail(`"${c}" is not a CIDR; must be a comma-separated list of IPv4 or IPv6 CIDRs such as 10.0.0.0/8`);
      return list;
    }
    case 'portRange': {
      const m = /^\s*(\d+)(?:\s*-\s*(\d+))?\s*$/.exec(raw);
      const msg = "must be a port range 'N1-N2' or a single port 'N', with ports in 1-65535 and N1 <= N2";
      if (!m) fail(msg);
      const min = Number(m[1]);
      const max = m[2] === undefined ? min : Number(m[2]);
      if (min < 1 || max > 65535 || min > max) fail(msg);
      return { min, max };
    }
    case 'enum': {
      const values = spec.values ?? [];
      if (!values.includes(raw)) fail(`must be one of ${values.join(', ')}`);
      return raw;
    }
    case 'ip':
      if (raw !== '' && isIP(raw.trim()) === 0) fail('must be an IPv4 or IPv6 address');
      return raw.trim();
  }
}

/** Checks list entries against spec.values. */
function checkEntries(spec: FlagSpec, v: FlagValue): void {
  if (spec.type !== 'strings' || !spec.values || !Array.isArray(v)) return;
  for (const e of v) if (!spec.values.includes(e)) fail(`"${e}" is not allowed; entries must be among ${spec.values.join(', ')}`);
}

function zeroValue(type: FlagType): FlagValue | undefined {
  switch (type) {
    case 'bool':
      return false;
    case 'int':
    case 'int32':
    case 'uint':
    case 'float':
    case 'duration':
      return 0;
    case 'strings':
    case 'cidrs':
      return [];
    case 'stringToString':
    case 'mapStringString':
    case 'keyValue':
    case 'mapStringBool':
    case 'multimap':
      return {};
    case 'string':
    case 'enum':
    case 'ip':
    case 'portRange':
      return undefined;
  }
}

/** The parsed default of an option (a fresh copy each call). Throws if the table's default is malformed. */
export function defaultValue(spec: FlagSpec): FlagValue | undefined {
  if (spec.default === undefined) return zeroValue(spec.type);
  try {
    return parseOne(spec, spec.default);
  } catch (e) {
    throw new Error(`option table error: default "${spec.default}" of --${spec.name}: ${(e as Error).message}`, { cause: e });
  }
}

function merge(spec: FlagSpec, prev: FlagValue | undefined, next: FlagValue, first: boolean): FlagValue {
  if (first || prev === undefined) return next;
  switch (spec.type) {
    case 'strings':
    case 'cidrs':
      return [...(prev as string[]), ...(next as string[])];
    case 'stringToString':
    case 'mapStringString':
    case 'keyValue':
    case 'mapStringBool':
      return { ...(prev as Record<string, unknown>), ...(next as Record<string, unknown>) } as FlagValue;
    case 'multimap': {
      const out: Record<string, string[]> = {};
      for (const [k, v] of Object.entries(prev as Record<string, string[]>)) out[k] = [...v];
      for (const [k, v] of Object.entries(next as Record<string, string[]>)) (out[k] ??= []).push(...v);
      return out;
    }
    default:
      return next;
  }
}

// ---------------------------------------------------------------------------------------------
// Parsing

export interface ParseOptions {
  /** Program name used in messages about positional arguments. */
  program?: string;
  /** Collect positional arguments instead of refusing them. */
  allowPositional?: boolean;
}

export interface ParsedFlags {
  /** Every option's value (defaults included), keyed by canonical name. */
  values: Record<string, FlagValue | undefined>;
  /** Canonical names of the options given on the command line, in order of first use. */
  explicit: Set<string>;
  /** For each explicit option, the spelling last used ('--etcd-servers', '-v'). */
  spelling: Map<string, string>;
  /** Positional arguments (only when allowPositional). */
  args: string[];
}

function indexSpecs(specs: readonly FlagSpec[]): { long: Map<string, FlagSpec>; short: Map<string, FlagSpec> } {
  const long = new Map<string, FlagSpec>();
  const short = new Map<string, FlagSpec>();
  const add = (m: Map<string, FlagSpec>, key: string, s: FlagSpec) => {
    if (m.has(key)) throw new Error(`option table error: --${key} is declared twice`);
    m.set(key, s);
  };
  for (const s of specs) {
    add(long, s.name, s);
    for (const a of s.aliases ?? []) add(long, a, s);
    if (s.short) add(short, s.short, s);
  }
  return { long, short };
}

/** Parses argv (without the node and script entries) against a table. Throws FlagError. */
export function parseFlags(argv: readonly string[], specs: readonly FlagSpec[], opts: ParseOptions = {}): ParsedFlags {
  const { long, short } = indexSpecs(specs);
  const values: Record<string, FlagValue | undefined> = {};
  for (const s of specs) values[s.name] = defaultValue(s);
  const explicit = new Set<string>();
  const spelling = new Map<string, string>();
  const args: string[] = [];

  const apply = (spec: FlagSpec, used: string, raw: string): void => {
    try {
      const one = parseOne(spec, raw);
      const merged = merge(spec, values[spec.name], one, !explicit.has(spec.name));
      checkEntries(spec, merged);
      const problem = spec.validate?.(merged);
      if (problem !== undefined) fail(problem);
      values[spec.name] = merged;
    } catch (e) {
      if (e instanceof ValueError) throw new FlagError(`invalid value "${raw}" for ${used}: ${e.message}`, spec.name);
      throw e;
    }
    explicit.add(spec.name);
    spelling.set(spec.name, used);
  };

  let i = 0;
  const takeNext = (used: string, spec: FlagSpec): string => {
    if (i + 1 >= argv.length) throw new FlagError(`flag needs an argument: ${used}`, spec.name);
    i += 1;
    return argv[i]!;
  };

  for (; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--') {
      args.push(...argv.slice(i + 1));
      break;
    }
    if (!arg.startsWith('-') || arg === '-') {
      args.push(arg);
      continue;
    }
    if (arg.startsWith('--')) {
      const body = arg.slice(2);
      const eq = body.indexOf('=');
      const name = eq < 0 ? body : body.slice(0, eq);
      if (name === '' || name.startsWith('-')) throw new FlagError(`bad flag syntax: ${arg}`);
      const spec = long.get(name);
      const used = `--${name}`;
      if (!spec) throw new FlagError(`unknown flag: ${used}`);
      let raw: string;
      if (eq >= 0) raw = body.slice(eq + 1);
      else if (spec.type === 'bool') raw = 'true';
      else raw = takeNext(used, spec);
      apply(spec, used, raw);
      continue;
    }
    // Short form(s): -v=4, -v 4, -v4, -h, and bundled booleans such as -hx.
    const body = arg.slice(1);
    for (let j = 0; j < body.length; j++) {
      const c = body[j]!;
      const spec = short.get(c);
      if (!spec) throw new FlagError(`unknown shorthand flag: '${c}' in ${arg}`);
      const used = `-${c}`;
      const rest = body.slice(j + 1);
      if (rest.startsWith('=')) {
        apply(spec, used, rest.slice(1));
        break;
      }
      if (spec.type === 'bool') {
        apply(spec, used, 'true');
        continue;
      }
      apply(spec, used, rest !== '' ? rest : takeNext(used, spec));
      break;
    }
  }

  if (args.length > 0 && !opts.allowPositional) {
    const program = opts.program ?? 'this command';
    throw new FlagError(`unexpected argument "${args[0]}": ${program} takes no positional arguments`);
  }
  return { values, explicit, spelling, args };
}

/** Converts parsed values keyed by option name into an object keyed by camelCase field name. */
export function toOptions<L extends readonly FlagSpec[]>(specs: L, parsed: ParsedFlags): OptionsOf<L> {
  const out: Record<string, unknown> = {};
  for (const s of specs) out[camelCase(s.name)] = parsed.values[s.name];
  return out as OptionsOf<L>;
}

/** The FlagError for an option whose feature (or this value of it) is not built yet. */
export function notImplemented(option: string, what?: string): FlagError {
  const name = option.replace(/^-+/, '');
  return new FlagError(`--${name}: ${what ? `${what} ` : ''}not implemented yet`, name);
}

/** Refuses every explicitly given option whose status is 'later', in the order they were given. */
export function refuseLaterOptions(specs: readonly FlagSpec[], parsed: ParsedFlags): void {
  const byName = new Map(specs.map((s) => [s.name, s]));
  for (const name of parsed.explicit) {
    if (byName.get(name)?.status === 'later') {
      throw new FlagError(`${parsed.spelling.get(name) ?? `--${name}`}: not implemented yet`, name);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Help

const TYPE_WORD: Record<FlagType, string> = {
  bool: '',
  int: 'int',
  int32: 'int32',
  uint: 'uint',
  float: 'float',
  string: 'string',
  strings: 'strings',
  duration: 'duration',
  stringToString: 'stringToString',
  mapStringString: 'mapStringString',
  keyValue: 'mapStringString',
  mapStringBool: 'mapStringBool',
  multimap: 'colonSeparatedMultimapStringString',
  cidrs: 'cidrs',
  portRange: 'portRange',
  enum: 'string',
  ip: 'ip',
};

/** The type word --help shows after an option's name ('' for bools), as pflag does. */
export function typeWord(spec: FlagSpec): string {
  return spec.typeName ?? TYPE_WORD[spec.type];
}

/** The default as pflag shows it, or undefined when it is the zero value (pflag then shows nothing). */
export function formatDefault(spec: FlagSpec): string | undefined {
  if (spec.defaultText !== undefined) return spec.defaultText;
  if (spec.default === undefined) return undefined;
  const v = defaultValue(spec);
  switch (spec.type) {
    case 'bool':
      return v === true ? 'true' : undefined;
    case 'int':
    case 'int32':
    case 'uint':
    case 'float':
      return v === 0 ? undefined : (v as number).toString();
    case 'duration':
      return v === 0 ? undefined : formatDuration(v as number);
    case 'string':
    case 'enum':
      return spec.default === '' ? undefined : JSON.stringify(spec.default);
    case 'strings':
    case 'cidrs':
      return (v as string[]).length === 0 ? undefined : `[${(v as string[]).join(',')}]`;
    case 'portRange':
    case 'ip':
      return spec.default === '' ? undefined : spec.default;
    default:
      return Object.keys(v as object).length === 0 ? undefined : spec.default;
  }
}

function wrap(text: string, indent: number, width: number): string {
  const avail = Math.max(40, width - indent);
  const lines: string[] = [];
  for (const para of text.split('\n')) {
    let line = '';
    for (const word of para.split(' ')) {
      if (line !== '' && line.length + 1 + word.length > avail) {
        lines.push(line);
        line = word;
      } else line = line === '' ? word : `${line} ${word}`;
    }
    lines.push(line);
  }
  return lines.join(`\n${' '.repeat(indent)}`);
}

/** The help line for one option: its text plus default, deprecated spellings, config field and status. */
function describe(spec: FlagSpec): string {
  let text = spec.help;
  if (spec.type === 'enum' && spec.values && !spec.values.every((v) => text.includes(v))) {
    text += ` One of: ${spec.values.join(', ')}.`;
  }
  if (spec.configField) {
    text += ` (deprecated: set '${spec.configField}' in the file named by --config instead)`;
  }
  if (spec.aliases && spec.aliases.length > 0) {
    text += ` (deprecated spelling${spec.aliases.length > 1 ? 's' : ''}: ${spec.aliases.map((a) => `--${a}`).join(', ')})`;
  }
  const def = formatDefault(spec);
  if (def !== undefined) text += ` (default ${def})`;
  if (spec.status === 'later') text += ' [not implemented yet]';
  return text;
}

/**
 * pflag-style usage: the description, a usage line, then one block per group in the order the
 * groups first appear in the table, each option as
 *       --secure-port int      Port serving HTTPS ... (default 6443)
 */
export function formatHelp(program: string, description: string, specs: readonly FlagSpec[], width = 120): string {
  const out: string[] = [];
  if (description.trim() !== '') out.push(description.trim(), '');
  out.push('Usage:', `  ${program} [flags]`, '');
  const groups = new Map<string, FlagSpec[]>();
  for (const s of specs) {
    const g = s.group || 'Flags';
    let list = groups.get(g);
    if (!list) groups.set(g, (list = []));
    list.push(s);
  }
  for (const [group, list] of groups) {
    out.push(`${group}:`, '');
    const lefts = list.map((s) => {
      const word = typeWord(s);
      return `${s.short ? `  -${s.short}, ` : '      '}--${s.name}${word ? ` ${word}` : ''}`;
    });
    const col = Math.max(...lefts.map((l) => l.length)) + 3;
    list.forEach((s, k) => out.push(lefts[k]!.padEnd(col) + wrap(describe(s), col, width)));
    out.push('');
  }
  return out.join('\n');
}

// ---------------------------------------------------------------------------------------------
// Value lists and checks shared by the server and the node agent

export const TLS_VERSIONS = ['VersionTLS10', 'VersionTLS11', 'VersionTLS12', 'VersionTLS13'] as const;

/** Document 2, 'Preferred cipher suites'. */
export const TLS_PREFERRED_CIPHER_SUITES: readonly string[] = [
  'TLS_AES_128_GCM_SHA256',
  'TLS_AES_256_GCM_SHA384',
  'TLS_CHACHA20_POLY1305_SHA256',
  'TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA',
  'TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256',
  'TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA',
  'TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384',
  'TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305',
  'TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256',
  'TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA',
  'TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256',
  'TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA',
  'TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384',
  'TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305',
  'TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256',
  'TLS_RSA_WITH_AES_128_CBC_SHA',
  'TLS_RSA_WITH_AES_128_GCM_SHA256',
  'TLS_RSA_WITH_AES_256_CBC_SHA',
  'TLS_RSA_WITH_AES_256_GCM_SHA384',
];

/** Document 2, 'Insecure cipher suites' (document 3 uses this list without the two 3DES suites). */
export const TLS_INSECURE_CIPHER_SUITES: readonly string[] = [
  'TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256',
  'TLS_ECDHE_ECDSA_WITH_RC4_128_SHA',
  'TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA',
  'TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256',
  'TLS_ECDHE_RSA_WITH_RC4_128_SHA',
  'TLS_RSA_WITH_3DES_EDE_CBC_SHA',
  'TLS_RSA_WITH_AES_128_CBC_SHA256',
  'TLS_RSA_WITH_RC4_128_SHA',
];

/** True for an absolute http:// or https:// URL with a host. */
export function isHttpUrl(text: string): boolean {
  try {
    const u = new URL(text);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== '';
  } catch {
    return false;
  }
}

/** Checks klog's --vmodule syntax 'pattern=N,...'; returns an error text or undefined. */
export function checkVmodule(text: string): string | undefined {
  if (text.trim() === '') return undefined;
  for (const part of text.split(',')) {
    const m = /^([^=]+)=(\d+)$/.exec(part.trim());
    if (!m) return `"${part}" is not of the form pattern=N (N a non-negative integer)`;
  }
  return undefined;
}

/** Range check for integer options; returns an error text or undefined. */
export function inRange(min: number, max: number, what = ''): (v: number) => string | undefined {
  return (v) => (v >= min && v <= max ? undefined : `must be between ${min} and ${max} inclusive${what ? `; ${what}` : ''}`);
}

export const positive = (v: number): string | undefined => (v > 0 ? undefined : 'must be positive');
export const nonNegative = (v: number): string | undefined => (v >= 0 ? undefined : 'must not be negative');

// ---------------------------------------------------------------------------------------------
// Feature gates

export type GateStage = 'alpha' | 'beta' | 'ga' | 'deprecated';

export interface FeatureGateSpec {
  readonly name: string;
  readonly stage: GateStage;
  readonly default: boolean;
  /** Upstream spellings also accepted (KubeletPodResources for OrchletPodResources, ...). */
  readonly aliases?: readonly string[];
}

export const ALL_ALPHA_GATE = 'AllAlpha';
export const ALL_BETA_GATE = 'AllBeta';

function gateIndex(table: readonly FeatureGateSpec[]): Map<string, FeatureGateSpec> {
  const m = new Map<string, FeatureGateSpec>();
  for (const g of table) {
    m.set(g.name, g);
    for (const a of g.aliases ?? []) m.set(a, g);
  }
  return m;
}

/** For a validate hook: an error text naming the first unknown gate in a requested map, or undefined. */
export function unknownFeatureGate(table: readonly FeatureGateSpec[], requested: Record<string, boolean>): string | undefined {
  const known = gateIndex(table);
  for (const name of Object.keys(requested)) if (!known.has(name)) return `unrecognized feature gate ${name}`;
  return undefined;
}

/**
 * Every gate's effective value. Explicit requests win; AllAlpha / AllBeta set every alpha / beta gate
 * that was not requested explicitly (as Kubernetes does); the rest keep their defaults.
 * Upstream spellings are accepted and reported under the canonical name. Throws FlagError for unknown gates.
 */
export function resolveFeatureGates(
  table: readonly FeatureGateSpec[],
  requested: Record<string, boolean>,
  option = 'feature-gates',
): Record<string, boolean> {
  const known = gateIndex(table);
  const explicit = new Map<string, boolean>();
  for (const [name, value] of Object.entries(requested)) {
    const g = known.get(name);
    if (!g) throw new FlagError(`invalid value "${name}=${value}" for --${option}: unrecognized feature gate ${name}`, option);
    explicit.set(g.name, value);
  }
  const out: Record<string, boolean> = {};
  for (const g of table) out[g.name] = g.default;
  const fill = (stage: GateStage, value: boolean) => {
    for (const g of table) {
      if (g.stage === stage && g.name !== ALL_ALPHA_GATE && g.name !== ALL_BETA_GATE && !explicit.has(g.name)) out[g.name] = value;
    }
  };
  const allAlpha = explicit.get(ALL_ALPHA_GATE);
  const allBeta = explicit.get(ALL_BETA_GATE);
  if (allAlpha !== undefined) fill('alpha', allAlpha);
  if (allBeta !== undefined) fill('beta', allBeta);
  for (const [name, value] of explicit) out[name] = value;
  return out;
}

/** Help lines listing the gates as Kubernetes does: 'APIListChunking=true|false (BETA - default=true)'. */
export function featureGateHelp(table: readonly FeatureGateSpec[]): string {
  return [...table]
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map((g) => `${g.name}=true|false (${g.stage.toUpperCase()} - default=${g.default})`)
    .join('\n');
}

/** A copy of a gate table with some gates changed or removed (null removes). */
export function changeFeatureGates(
  table: readonly FeatureGateSpec[],
  changes: Record<string, Pick<FeatureGateSpec, 'stage' | 'default'> | null>,
): FeatureGateSpec[] {
  const out: FeatureGateSpec[] = [];
  for (const g of table) {
    const c = changes[g.name];
    if (c === null) continue;
    out.push(c === undefined ? g : { ...g, ...c });
  }
  return out;
}

function gates(stage: GateStage, def: boolean, list: string): FeatureGateSpec[] {
  return list
    .split('|')
    .map((n) => n.trim())
    .filter((n) => n !== '')
    .map((name) => {
      const upstream = name.replace('Orchlet', 'Kubelet');
      return upstream === name ? { name, stage, default: def } : { name, stage, default: def, aliases: [upstream] };
    });
}

/**
 * The feature gates of document 2, section 9, with the provider placeholders replaced by the
 * upstream names: <cloud1> AWS, <cloud2> AzureDisk, <cloud3> AzureFile, <cloud4> GCE,
 * <cloud5> OpenStack, <cloud6> Portworx, <cloud7> vSphere, <cloud8> RBD (hence csiMigrationRBD).
 * Orchlet-prefixed gates also accept their Kubelet-prefixed upstream spellings.
 */
export const FEATURE_GATES: readonly FeatureGateSpec[] = [
  ...gates(
    'beta',
    true,
    `APIListChunking | APIPriorityAndFairness | APIResponseCompression | AppArmor | CPUManager |
     CPUManagerPolicyBetaOptions | CPUManagerPolicyOptions | CSIInlineVolume | CSIMigration | CSIMigrationAWS |
     CSIMigrationAzureDisk | CSIMigrationGCE | CSIMigrationOpenStack | CSIStorageCapacity | CSRDuration |
     ControllerManagerLeaderMigration | DaemonSetUpdateSurge | DefaultPodTopologySpread | DelegateFSGroupToCSIDriver |
     DevicePlugins | DisableAcceleratorUsageMetrics | DownwardAPIHugePages | EfficientWatchResumption |
     EndpointSliceTerminatingCondition | EphemeralContainers | ExpandCSIVolumes | ExpandInUsePersistentVolumes |
     ExpandPersistentVolumes | GracefulNodeShutdown | IndexedJob | JobMutableNodeSchedulingDirectives |
     JobTrackingWithFinalizers | OrchletPodResources | OrchletPodResourcesGetAllocatable | LocalStorageCapacityIsolation |
     LogarithmicScaleDown | MemoryManager | NetworkPolicyEndPort | NonPreemptingPriority | PodAffinityNamespaceSelector |
     PodDeletionCost | PodOverhead | PodSecurity | PreferNominatedNode | RemainingItemCount | RemoveSelfLink |
     RotateKubeletServerCertificate | ServiceInternalTrafficPolicy | ServiceLBNodePortControl | ServiceLoadBalancerClass |
     SizeMemoryBackedVolumes | StatefulSetMinReadySeconds | StorageVersionHash | SuspendJob | TopologyManager |
     WinOverlay | WindowsHostProcessContainers`,
  ),
  ...gates(
    'beta',
    false,
    `AllBeta | CSIMigrationAzureFile | CSIMigrationvSphere | ExperimentalHostUserNamespaceDefaulting |
     ProbeTerminationGracePeriod | TopologyAwareHints`,
  ),
  ...gates(
    'alpha',
    false,
    `APIServerIdentity | APIServerTracing | AllAlpha | AnyVolumeDataSource | CPUManagerPolicyAlphaOptions |
     CSIMigrationPortworx | CSIVolumeHealth | CustomCPUCFSQuotaPeriod | CustomResourceValidationExpressions |
     DisableCloudProviders | DisableOrchletCloudCredentialProviders | ExpandedDNSConfig | GRPCContainerProbe |
     GracefulNodeShutdownBasedOnPodPriority | HPAContainerMetrics | HPAScaleToZero | HonorPVReclaimPolicy | IdentifyPodOS |
     InTreePluginAWSUnregister | InTreePluginAzureDiskUnregister | InTreePluginAzureFileUnregister |
     InTreePluginGCEUnregister | InTreePluginOpenStackUnregister | InTreePluginPortworxUnregister |
     InTreePluginRBDUnregister | InTreePluginvSphereUnregister | JobReadyPods | OrchletCredentialProviders |
     OrchletInUserNamespace | LocalStorageCapacityIsolationFSQuotaMonitoring | MemoryQoS | MixedProtocolLBService |
     NodeSwap | OpenAPIEnums | OpenAPIV3 | PodAndContainerStatsFromCRI | ProcMountType | ProxyTerminatingEndpoints |
     QOSReserved | ReadWriteOncePod | RecoverVolumeExpansionFailure | SeccompDefault | ServerSideFieldValidation |
     StatefulSetAutoDeletePVC | StorageVersionAPI | VolumeCapacityPriority | WinDSR | csiMigrationRBD`,
  ),
];
