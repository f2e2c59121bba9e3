/**
 * The server's logger, as Kubernetes' klog and component-base/logs: -v levels, --vmodule, the text format
 * (klog lines `I1122 04:35:12.345678   12345 file.ts:123] message`) and the JSON format
 * (`{"ts":1700000000123.456,"caller":"file.ts:123","msg":"message","v":0}`, ts in milliseconds), buffered output flushed at least
 * every --log-flush-frequency, and --experimental-logging-sanitization.
 *
 * A Logger is a value handed down to whoever logs (never a global); it is also callable, `log(message)`
 * being `log.info(message)`, so code written against `(message: string) => void` keeps working.
 */
import { writeSync } from 'node:fs';
import { basename } from 'node:path';

export type LogFormat = 'text' | 'json';

export interface LoggerOptions {
  /** -v: messages of this level and below are written (default 0). */
  verbosity?: number;
  /** --vmodule 'pattern=N,...': per-file levels (text format only, as klog). */
  vmodule?: string;
  /** --logging-format; default 'text'. */
  format?: LogFormat;
  /** --log-flush-frequency in ms; default 5000. */
  flushFrequencyMs?: number;
  /** --experimental-logging-sanitization: values of sensitive keys are replaced by a notice. */
  sanitization?: boolean;
  /** Receives the formatted text (whole lines); default: standard error, buffered. */
  sink?: (text: string) => void;
  /** For tests: the clock and the process id shown in lines. */
  now?: () => number;
  pid?: number;
}

export interface VerboseLogger {
  /** True when this level is enabled at this call site. */
  readonly enabled: boolean;
  info(message: string, ...keysAndValues: unknown[]): void;
}

export interface Logger {
  /** Same as info(message). */
  (message: string): void;
  /** Level 0 information; keysAndValues are alternating keys and values, as klog's InfoS. */
  info(message: string, ...keysAndValues: unknown[]): void;
  warning(message: string, ...keysAndValues: unknown[]): void;
  /** An error; an 'err' key/value pair carries the error itself (ErrorS). */
  error(message: string, ...keysAndValues: unknown[]): void;
  /** klog.V(level): a logger whose info() writes only when `level` is enabled for the caller. */
  v(level: number): VerboseLogger;
  /**
   * The caller's file, resolved once against --vmodule: `site.v(level)` then costs no stack capture. For code
   * that checks a level on every request (klog caches this per call site).
   */
  site(): { v(level: number): VerboseLogger };
  /** The -v level; settable at runtime (/debug/flags/v). */
  verbosity: number;
  readonly format: LogFormat;
  /** Writes buffered lines now. */
  flush(): void;
  /** Flushes and stops the periodic flush; later lines are written at once. */
  stop(): void;
}

/** What klog prints in place of a sanitized value (component-base/logs/sanitization). */
export const DATAPOLICY_MESSAGE = (key: string, types: string[]) => `Key ${key} contains [${types.join(' ')}] data`;

const SENSITIVE_KEYS: [RegExp, string][] = [
  [/pass(word|wd)?$/i, 'password'],
  [/token$/i, 'token'],
  [/(secret|private[-_]?key|client[-_]?key|key[-_]?data|cert[-_]?key)$/i, 'security-key'],
];

/** The data policies a key or the fields of an object value fall under (our stand-in for datapolicy tags). */
function datapolicies(key: string, value: unknown, depth = 0): string[] {
  const found = new Set<string>();
  for (const [re, type] of SENSITIVE_KEYS) if (re.test(key)) found.add(type);
  if (depth < 3 && value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) for (const t of datapolicies(k, v, depth + 1)) found.add(t);
  }
  return [...found].sort();
}

interface VmoduleRule {
  pattern: RegExp;
  /** Matched against the full path (the pattern has a '/') or the file name without its extension. */
  fullPath: boolean;
  level: number;
}

/** Parses klog's --vmodule ('pattern=N,...'; '*' and '?' are wildcards); throws on a malformed entry. */
export function parseVmodule(text: string | undefined): VmoduleRule[] {
  const rules: VmoduleRule[] = [];
  for (const part of (text ?? '').split(',')) {
    const p = part.trim();
    if (p === '') continue;
    const m = /^([^=]+)=(\d+)$/.exec(p);
    if (!m) throw new Error(`--vmodule: "${p}" is not of the form pattern=N`);
    const glob = m[1]!.trim().replace(/\.(go|ts|js)$/, '');
    const re = glob.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.');
    rules.push({ pattern: new RegExp(`^${re}$`), fullPath: glob.includes('/'), level: Number(m[2]) });
  }
  return rules;
}

/** The file and line of the first stack frame outside `skip` (our caller's caller), e.g. 'server.ts:123'. */
function callSite(skip: (...args: never[]) => unknown): { path: string; file: string; line: string } {
  const holder: { stack?: string } = {};
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 1;
  Error.captureStackTrace(holder, skip);
  Error.stackTraceLimit = limit;
  const frame = holder.stack?.split('\n')[1] ?? '';
  const m = /\(?([^()\s]+):(\d+):\d+\)?\s*$/.exec(frame);
  if (!m) return { path: '???', file: '???', line: '1' };
  const path = m[1]!.replace(/^file:\/\//, '');
  return { path, file: basename(path), line: m[2]! };
}

const pad2 = (n: number) => (n < 10 ? `0${n}` : String(n));

/** klog's header: severity letter, mmdd hh:mm:ss.uuuuuu, the pid right-aligned in 7 columns, file:line. */
function klogHeader(severity: string, nowMs: number, pid: number, site: string): string {
  const d = new Date(Math.floor(nowMs));
  const micros = String(Math.floor((nowMs % 1000) * 1000)).padStart(6, '0');
  return `${severity}${pad2(d.getMonth() + 1)}${pad2(d.getDate())} ${pad2(d.getHours())}:${pad2(d.getMinutes())}:${pad2(d.getSeconds())}.${micros} ${String(pid).padStart(7)} ${site}] `;
}

/** A value as klog's text format shows it: strings quoted, errors by message, others as JSON. */
function textValue(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v);
  if (v instanceof Error) return JSON.stringify(v.message);
  if (typeof v === 'number' || typeof v === 'boolean' || v === null || v === undefined) return String(v);
  try {
    return JSON.stringify(v) ?? '""';
  } catch {
    return '"(unserializable)"';
  }
}

function jsonValue(v: unknown): unknown {
  return v instanceof Error ? v.message : v;
}

/** Buffered standard error: flushed every `everyMs`, when it grows past 64 KiB, and on flush(). */
function bufferedStderr(everyMs: number): { write(text: string): void; flush(): void; stop(): void } {
  let buffer: string[] = [];
  let size = 0;
  let stopped = false;
  const flush = () => {
    if (buffer.length === 0) return;
    const text = buffer.join('');
    buffer = [];
    size = 0;
    try {
      writeSync(2, text);
    } catch {
      // standard error is gone: nothing to do
    }
  };
  const timer = setInterval(flush, everyMs);
  timer.unref();
  return {
    write(text) {
      if (stopped) {
        buffer.push(text);
        return flush();
      }
      buffer.push(text);
      size += text.length;
      if (size > 64 * 1024) flush();
    },
    flush,
    stop() {
      stopped = true;
      clearInterval(timer);
      flush();
    },
  };
}

/** Builds a logger from the logging options (validated: an unknown format or a bad --vmodule throws). */
export function createLogger(opts: LoggerOptions = {}): Logger {
  const format = opts.format ?? 'text';
  if (format !== 'text' && format !== 'json') throw new Error(`--logging-format: unsupported format "${String(format)}"`);
  const rules = parseVmodule(opts.vmodule);
  if (format === 'json' && rules.length > 0) {
    // Kubernetes ignores --vmodule with non-text formats (it is a klog flag); so do we.
    rules.length = 0;
  }
  const now = opts.now ?? (() => performance.timeOrigin + performance.now());
  const pid = opts.pid ?? process.pid;
  const out = opts.sink ? { write: opts.sink, flush: () => {}, stop: () => {} } : bufferedStderr(opts.flushFrequencyMs ?? 5000);
  const sanitize = opts.sanitization ?? false;
  let verbosity = opts.verbosity ?? 0;

  const cleanKV = (kv: unknown[]): unknown[] => {
    if (!sanitize) return kv;
    const copy = kv.slice();
    for (let i = 0; i + 1 < copy.length; i += 2) {
      const key = String(copy[i]);
      const types = datapolicies(key, copy[i + 1]);
      if (types.length > 0) copy[i + 1] = DATAPOLICY_MESSAGE(key, types);
    }
    return copy;
  };

  const emit = (severity: 'I' | 'W' | 'E', level: number, message: string, kv: unknown[], site: { file: string; line: string }) => {
    const pairs = cleanKV(kv);
    if (format === 'json') {
      // ts: milliseconds since the epoch as a float (component-base's epochMillisTimeEncoder).
      const entry: Record<string, unknown> = { ts: Math.round(now() * 1000) / 1000, caller: `${site.file}:${site.line}`, msg: message };
      if (severity !== 'E') entry.v = level;
      for (let i = 0; i + 1 < pairs.length; i += 2) entry[String(pairs[i])] = jsonValue(pairs[i + 1]);
      if (pairs.length % 2 === 1) entry['(MISSING)'] = jsonValue(pairs[pairs.length - 1]);
      out.write(JSON.stringify(entry) + '\n');
    } else {
      let line = klogHeader(severity, now(), pid, `${site.file}:${site.line}`);
      if (pairs.length === 0) line += message;
      else {
        line += JSON.stringify(message);
        for (let i = 0; i < pairs.length; i += 2) line += ` ${String(pairs[i])}=${i + 1 < pairs.length ? textValue(pairs[i + 1]) : '"(MISSING)"'}`;
      }
      out.write(line.endsWith('\n') ? line : line + '\n');
    }
    if (severity !== 'I') out.flush();
  };

  const info = (message: string, ...kv: unknown[]) => emit('I', 0, message, kv, callSite(info));
  const log = ((message: string) => emit('I', 0, message, [], callSite(log))) as Logger;
  const disabled: VerboseLogger = { enabled: false, info: () => {} };
  const byLevel = new Map<number, VerboseLogger>();
  const verboseAt = (level: number): VerboseLogger => {
    let v = byLevel.get(level);
    if (!v) {
      const vinfo = (message: string, ...kv: unknown[]) => emit('I', level, message, kv, callSite(vinfo));
      v = { enabled: true, info: vinfo };
      byLevel.set(level, v);
    }
    return v;
  };
  /** The --vmodule level of a call site, or -1 when no rule names its file. */
  const fileLevel = (site: { path: string; file: string }): number => {
    const name = site.file.replace(/\.(go|ts|js)$/, '');
    const full = site.path.replace(/\.(go|ts|js)$/, '');
    for (const r of rules) if (r.fullPath ? r.pattern.test(full) : r.pattern.test(name)) return r.level;
    return -1;
  };
  const v = (level: number): VerboseLogger => {
    if (level <= verbosity) return verboseAt(level);
    if (rules.length === 0) return disabled;
    return level <= fileLevel(callSite(v)) ? verboseAt(level) : disabled;
  };
  const site = () => {
    const fixed = rules.length === 0 ? -1 : fileLevel(callSite(site));
    return { v: (level: number): VerboseLogger => (level <= verbosity || level <= fixed ? verboseAt(level) : disabled) };
  };
  const warning = (message: string, ...kv: unknown[]) => emit('W', 0, message, kv, callSite(warning));
  const error = (message: string, ...kv: unknown[]) => emit('E', 0, message, kv, callSite(error));
  Object.defineProperties(log, {
    info: { value: info },
    warning: { value: warning },
    error: { value: error },
    v: { value: v },
    site: { value: site },
    format: { value: format },
    flush: { value: () => out.flush() },
    stop: { value: () => out.stop() },
    verbosity: {
      get: () => verbosity,
      set: (n: number) => {
        if (!Number.isInteger(n) || n < 0) throw new Error(`invalid verbosity ${String(n)}`);
        verbosity = n;
      },
    },
  });
  return log;
}

/** Whether a plain `(message) => void` is in fact a Logger. */
export function isLogger(f: ((message: string) => void) | undefined): f is Logger {
  return typeof f === 'function' && typeof (f as Partial<Logger>).warning === 'function';
}

/** A Logger that hands every line's message (without header) to `fn`: wraps plain logging functions. */
export function loggerFromFunction(fn: (message: string) => void): Logger {
  if (isLogger(fn)) return fn;
  return createLogger({ sink: (text) => fn(stripHeader(text)) });
}

/** The message part of a formatted text line (for callers that want bare messages). */
function stripHeader(text: string): string {
  const i = text.indexOf('] ');
  return (i >= 0 ? text.slice(i + 2) : text).replace(/\n$/, '');
}
