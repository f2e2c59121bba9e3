/**
 * The server's logger, as Kubernetes' klog and component-base/logs: -v levels, --vmodule, the text format
 * (klog lines `I1122 04:35:12.345678   12345 file.ts:123] message`) and the JSON format
 * (`{"ts":1700000000123.456,"caller":"file.ts:123","msg":"message","v":0}`, ts in milliseconds), buffered output flushed at least
 * every --log-flush-frequency, and --experimental-logging-sanitization.
 *
 * A Logger is a value handed down to whoever logs (never a global); it is also callable, `log(message)`
 * being `log.info(message)`, so code written against `(message: string) => void` keeps working.
 */
import { closeSync, openSync, symlinkSync, unlinkSync, writeSync } from 'node:fs';
import { hostname, tmpdir, userInfo } from 'node:os';
import { basename, dirname, join } from 'node:path';

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
  /** --experimental-logging-sanitization: a call with a value of a sensitive type is replaced by a notice. */
  sanitization?: boolean;
  /** Receives the formatted text (whole lines); default: standard error, buffered. */
  sink?: (text: string) => void;
  /** For tests: the clock and the process id shown in lines. */
  now?: () => number;
  pid?: number;
  /** klog's --skip-headers: lines without the header prefix (text format). */
  skipHeaders?: boolean;
  /** klog's --add-dir-header: the header names the file with its directory ('agent/agent.ts:12'). */
  addDirHeader?: boolean;
  /** klog's --log-backtrace-at 'file:line': a line logged there is followed by the stack of the call. */
  backtraceAt?: string;
  /** klog's file outputs (--logtostderr=false with --log-dir or --log-file). Absent: standard error only. */
  files?: KlogFileOptions;
  /** JSON format, --log-json-split-stream: info lines to standard output, errors to standard error. */
  jsonSplitStream?: boolean;
  /** --log-json-info-buffer-size in bytes: standard output buffered up to this size (0: written at once). */
  jsonInfoBufferSize?: number;
  /** Receives split-stream info text (default: standard output). */
  stdoutSink?: (text: string) => void;
}

/** klog's output choices (klog 2.30, as kubelet 1.23 registers them). */
export interface KlogFileOptions {
  /** --logtostderr (default true): standard error only, files off. */
  logtostderr?: boolean;
  /** --alsologtostderr: files and standard error. */
  alsologtostderr?: boolean;
  /** --stderrthreshold (default 2 = ERROR): with files, this severity and above also go to standard error. */
  stderrthreshold?: number;
  /** --log-dir: directory of the per-severity files (default: the temporary directory). */
  logDir?: string;
  /** --log-file: one file for every severity, instead of --log-dir's files. */
  logFile?: string;
  /** --log-file-max-size in megabytes (default 1800; 0: unlimited). */
  logFileMaxSizeMB?: number;
  /** --one-output: a line goes to the file of its own severity only, not also to the lower ones. */
  oneOutput?: boolean;
  /** --skip-log-headers: no 'Log file created at' header in new files. */
  skipLogHeaders?: boolean;
  /** Names in --log-dir file names: program.host.user.log.SEVERITY.yyyymmdd-hhmmss.pid. */
  program?: string;
  host?: string;
  user?: string;
}

const SEVERITY_NAMES = ['INFO', 'WARNING', 'ERROR'] as const;
const SEVERITY_INDEX: Record<'I' | 'W' | 'E', number> = { I: 0, W: 1, E: 2 };

interface OpenLogFile {
  fd: number;
  bytes: number;
  pending: string[];
}

/**
 * klog's file output: per-severity files in a directory (each line also in every lower severity's file unless
 * oneOutput), each named program.host.user.log.SEVERITY.yyyymmdd-hhmmss.pid with a program.SEVERITY symlink to the
 * newest, a new file when the size limit would be reached; or a single --log-file, created afresh at the first
 * line and started again (truncated) when it would pass the limit. Files are opened at their first line.
 */
function klogFileOutput(o: KlogFileOptions, nowMs: () => number, pid: number) {
  const maxBytes = (o.logFileMaxSizeMB ?? 1800) * 1024 * 1024;
  const program = o.program ?? basename(process.argv[1] ?? 'node').replace(/\.(js|ts)$/, '');
  const host = (o.host ?? hostname()).split('.')[0] ?? 'unknownhost';
  let user = o.user;
  if (user === undefined) {
    try {
      user = userInfo().username.replace(/\\/g, '_');
    } catch {
      user = 'unknownuser';
    }
  }
  const files: (OpenLogFile | undefined)[] = [undefined, undefined, undefined];
  let single: OpenLogFile | undefined;
  const header = (t: Date): string =>
    o.skipLogHeaders
      ? ''
      : `Log file created at: ${t.getFullYear()}/${pad2(t.getMonth() + 1)}/${pad2(t.getDate())} ${pad2(t.getHours())}:${pad2(t.getMinutes())}:${pad2(t.getSeconds())}\n` +
        `Running on machine: ${host}\n` +
        `Binary: Built with node ${process.version} for ${process.platform}/${process.arch}\n` +
        'Log line format: [IWEF]mmdd hh:mm:ss.uuuuuu threadid file:line] msg\n';
  const open = (path: string, flags: string): OpenLogFile => {
    const f: OpenLogFile = { fd: openSync(path, flags, 0o666), bytes: 0, pending: [] };
    const h = header(new Date(nowMs()));
    if (h !== '') {
      writeSync(f.fd, h);
      f.bytes += Buffer.byteLength(h);
    }
    return f;
  };
  const createInDir = (sev: number): OpenLogFile => {
    const t = new Date(nowMs());
    const stamp = `${t.getFullYear()}${pad2(t.getMonth() + 1)}${pad2(t.getDate())}-${pad2(t.getHours())}${pad2(t.getMinutes())}${pad2(t.getSeconds())}`;
    const name = `${program}.${host}.${user}.log.${SEVERITY_NAMES[sev]!}.${stamp}.${pid}`;
    let lastErr: unknown;
    for (const dir of o.logDir ? [o.logDir, tmpdir()] : [tmpdir()]) {
      try {
        // 'a': a second file within the same second continues the first rather than erasing it.
        const f = open(join(dir, name), 'a');
        const link = join(dir, `${program}.${SEVERITY_NAMES[sev]!}`);
        try {
          unlinkSync(link);
        } catch {
          // no link yet
        }
        try {
          symlinkSync(name, link);
        } catch {
          // as klog: a missing symlink is not an error
        }
        return f;
      } catch (err) {
        lastErr = err;
      }
    }
    throw new Error(`log: cannot create log: ${lastErr instanceof Error ? lastErr.message : String(lastErr)}`);
  };
  const flushFile = (f: OpenLogFile | undefined) => {
    if (!f || f.pending.length === 0) return;
    const text = f.pending.join('');
    f.pending = [];
    try {
      writeSync(f.fd, text);
    } catch {
      // the disk is full or the file is gone: as klog, keep going
    }
  };
  const append = (f: OpenLogFile, text: string, reopen: () => OpenLogFile): OpenLogFile => {
    const n = Buffer.byteLength(text);
    if (maxBytes > 0 && f.bytes + n >= maxBytes && f.bytes > 0) {
      flushFile(f);
      closeSync(f.fd);
      f = reopen();
    }
    f.pending.push(text);
    f.bytes += n;
    return f;
  };
  const toStderr = (severity: number): boolean => o.alsologtostderr === true || severity >= (o.stderrthreshold ?? 2);
  return {
    toStderr,
    write(severity: number, text: string) {
      try {
        if (o.logFile) {
          single ??= open(o.logFile, 'w');
          single = append(single, text, () => open(o.logFile!, 'w'));
          return;
        }
        const targets = o.oneOutput ? [severity] : Array.from({ length: severity + 1 }, (_, i) => severity - i);
        for (const s of targets) files[s] = append(files[s] ?? createInDir(s), text, () => createInDir(s));
      } catch (err) {
        // klog exits when it cannot create its files; a library must not: say it once on standard error.
        try {
          writeSync(2, `${err instanceof Error ? err.message : String(err)}\n`);
        } catch {
          // nothing left to tell
        }
      }
    },
    flush() {
      flushFile(single);
      for (const f of files) flushFile(f);
    },
    close() {
      this.flush();
      for (const f of [single, ...files]) if (f) closeSync(f.fd);
      single = undefined;
      files.fill(undefined);
    },
  };
}

/** klog's --log-backtrace-at value: ['file.ts', line], or undefined when unset (':0' or ''). */
export function parseTraceLocation(text: string | undefined): [string, number] | undefined {
  if (text === undefined || text === '' || text === ':0') return undefined;
  const m = /^([^:]+):(\d+)$/.exec(text);
  if (!m || !m[1]!.includes('.')) throw new Error(`--log-backtrace-at: syntax error: expect file.ts:234, got "${text}"`);
  return [m[1]!, Number(m[2])];
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

/**
 * --experimental-logging-sanitization, as component-base 1.23's sanitization filter over datapol: when any
 * argument of a log call holds data of a sensitive type, the whole message is replaced by a fixed one naming the
 * argument and its types; nothing else of the call is written. Only types count (Go's datapolicy struct tags and
 * the types datapol knows, such as http.Header), never plain strings nor key names: here, values marked with
 * datapolicyValue. Unstructured calls (klog's Filter and FilterF) have no counterpart here: our formatted lines
 * reach the logger as finished strings, which datapol never holds sensitive, so they are written as they are.
 */
export const REDACTED_MESSAGE = 'Log message has been redacted.';

/** The symbol under which a value names its data policies (datapolicyValue). */
const DATAPOLICY: unique symbol = Symbol('datapolicy');

/**
 * Marks `value` as a type datapol knows as sensitive, e.g. Go's http.Header (['password', 'token']),
 * http.Cookie (['token']) or x509.Certificate (['security-key']), or a struct with a datapolicy tag: with
 * sanitization a log call with such a value among its arguments (itself or inside an array, map or object) is
 * redacted, unless the value is empty (as datapol skips zero values). The mark is a non-enumerable symbol: the
 * value shows as before.
 */
export function datapolicyValue<T extends object>(value: T, types: readonly string[]): T {
  Object.defineProperty(value, DATAPOLICY, { value: [...types], enumerable: false, configurable: true });
  return value;
}

/** A list of strings that klog's text format prints as Go's %+v does ('[password token]'), JSON as an array. */
class GoStringList {
  constructor(readonly items: readonly string[]) {}
  toJSON(): readonly string[] {
    return this.items;
  }
}

/**
 * klog.KObjs: objects' references as klog shows them, `namespace/name` (or `name`), a list in Go's %+v
 * form in text ('[default/web default/db]') and an array in JSON.
 */
export function kObjs(objs: readonly { metadata?: { namespace?: string; name?: string } }[]): unknown {
  return new GoStringList(objs.map((o) => (o.metadata?.namespace ? `${o.metadata.namespace}/${o.metadata.name ?? ''}` : (o.metadata?.name ?? ''))));
}

/** Go's reflect IsZero/Len for a marked value: an empty array, map, set or object is not sensitive data. */
function isEmpty(v: object): boolean {
  if (Array.isArray(v)) return v.length === 0;
  if (v instanceof Map || v instanceof Set) return v.size === 0;
  const proto = Object.getPrototypeOf(v) as unknown;
  return (proto === Object.prototype || proto === null) && Object.keys(v).length === 0;
}

/**
 * datapol.Verify: the sensitive types `value` holds, the first found walking it depth first (the value's own
 * mark, then array elements, map keys and values, object fields in order), or [] when none.
 */
function datapolTypes(value: unknown, seen = new Set<object>()): readonly string[] {
  if (value === null || typeof value !== 'object' || seen.has(value)) return [];
  seen.add(value);
  const marked = (value as { [DATAPOLICY]?: string[] })[DATAPOLICY];
  if (marked && marked.length > 0 && !isEmpty(value)) return marked;
  if (ArrayBuffer.isView(value) || value instanceof ArrayBuffer) return [];
  if (Array.isArray(value) || value instanceof Set) {
    for (const x of value) {
      const t = datapolTypes(x, seen);
      if (t.length > 0) return t;
    }
    return [];
  }
  if (value instanceof Map) {
    for (const [k, x] of value) {
      const t = datapolTypes(k, seen);
      if (t.length > 0) return t;
      const u = datapolTypes(x, seen);
      if (u.length > 0) return u;
    }
    return [];
  }
  for (const x of Object.values(value)) {
    const t = datapolTypes(x, seen);
    if (t.length > 0) return t;
  }
  return [];
}

/** Verify that never throws (a getter that throws counts as nothing found, as datapol recovers its panics). */
function verify(value: unknown): readonly string[] {
  try {
    return datapolTypes(value);
  } catch {
    return [];
  }
}

/**
 * The sanitization filter of a structured call (klog's FilterS): at the first sensitive argument, keys
 * included, the message becomes REDACTED_MESSAGE with `key` (the argument's key) or `key_index` (where a key
 * itself is sensitive) and `types`.
 */
function sanitizeStructured(message: string, keysAndValues: unknown[]): { message: string; keysAndValues: unknown[] } {
  for (let i = 0; i < keysAndValues.length; i++) {
    const types = verify(keysAndValues[i]);
    if (types.length === 0) continue;
    const kv = i % 2 === 0 ? ['key_index', i, 'types', new GoStringList(types)] : ['key', keysAndValues[i - 1], 'types', new GoStringList(types)];
    return { message: REDACTED_MESSAGE, keysAndValues: kv };
  }
  return { message, keysAndValues };
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
  if (v instanceof GoStringList) return `[${v.items.join(' ')}]`;
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
  return bufferedFd(2, everyMs, 64 * 1024);
}

/** Text to a file descriptor, flushed every `everyMs`, when it grows past `limit` bytes, and on flush(). */
function bufferedFd(fd: number, everyMs: number, limit: number): { write(text: string): void; flush(): void; stop(): void } {
  let buffer: string[] = [];
  let size = 0;
  let stopped = false;
  const flush = () => {
    if (buffer.length === 0) return;
    const text = buffer.join('');
    buffer = [];
    size = 0;
    try {
      writeSync(fd, text);
    } catch {
      // the stream is gone: nothing to do
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
      if (size > limit) flush();
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
  const flushEvery = opts.flushFrequencyMs ?? 5000;
  const out = opts.sink ? { write: opts.sink, flush: () => {}, stop: () => {} } : bufferedStderr(flushEvery);
  const sanitize = opts.sanitization ?? false;
  let verbosity = opts.verbosity ?? 0;
  const trace = parseTraceLocation(opts.backtraceAt);
  const files = opts.files && opts.files.logtostderr === false ? klogFileOutput(opts.files, now, pid) : undefined;
  // JSON split stream: info to standard output, buffered up to --log-json-info-buffer-size.
  const split = format === 'json' && opts.jsonSplitStream === true;
  const stdout = split
    ? opts.stdoutSink
      ? { write: opts.stdoutSink, flush: () => {}, stop: () => {} }
      : bufferedFd(1, flushEvery, opts.jsonInfoBufferSize ?? 0)
    : undefined;
  let fileTimer: NodeJS.Timeout | undefined;
  if (files) {
    fileTimer = setInterval(() => files.flush(), flushEvery);
    fileTimer.unref();
  }

  /**
   * The sanitization filter over a call's message and pairs. An error's leading 'err' pair is klog ErrorS's
   * err argument, outside the filter: it stays, and the pairs' indexes count from after it.
   */
  const filtered = (severity: 'I' | 'W' | 'E', message: string, kv: unknown[]): { message: string; keysAndValues: unknown[] } => {
    if (!sanitize || kv.length === 0) return { message, keysAndValues: kv };
    if (severity === 'E' && kv[0] === 'err' && kv.length >= 2) {
      const rest = sanitizeStructured(message, kv.slice(2));
      return { message: rest.message, keysAndValues: [kv[0], kv[1], ...rest.keysAndValues] };
    }
    return sanitizeStructured(message, kv);
  };

  const route = (severity: 'I' | 'W' | 'E', text: string) => {
    if (stdout && severity !== 'E') return stdout.write(text);
    if (!files) {
      out.write(text);
      if (severity !== 'I') out.flush();
      return;
    }
    const sev = SEVERITY_INDEX[severity];
    if (files.toStderr(sev)) {
      out.write(text);
      if (severity !== 'I') out.flush();
    }
    files.write(sev, text);
  };

  const emit = (severity: 'I' | 'W' | 'E', level: number, logged: string, kv: unknown[], site: { path: string; file: string; line: string }) => {
    const { message, keysAndValues: pairs } = filtered(severity, logged, kv);
    const shown = opts.addDirHeader ? `${basename(dirname(site.path))}/${site.file}` : site.file;
    let text: string;
    if (format === 'json') {
      // ts: milliseconds since the epoch as a float (component-base's epochMillisTimeEncoder).
      const entry: Record<string, unknown> = { ts: Math.round(now() * 1000) / 1000, caller: `${shown}:${site.line}`, msg: message };
      if (severity !== 'E') entry.v = level;
      for (let i = 0; i + 1 < pairs.length; i += 2) entry[String(pairs[i])] = jsonValue(pairs[i + 1]);
      if (pairs.length % 2 === 1) entry['(MISSING)'] = jsonValue(pairs[pairs.length - 1]);
      text = JSON.stringify(entry) + '\n';
    } else {
      let line = opts.skipHeaders ? '' : klogHeader(severity, now(), pid, `${shown}:${site.line}`);
      if (pairs.length === 0) line += message;
      else {
        line += JSON.stringify(message);
        for (let i = 0; i < pairs.length; i += 2) line += ` ${String(pairs[i])}=${i + 1 < pairs.length ? textValue(pairs[i + 1]) : '"(MISSING)"'}`;
      }
      text = line.endsWith('\n') ? line : line + '\n';
      if (trace && trace[0].replace(/\.(go|ts|js)$/, '') === site.file.replace(/\.(go|ts|js)$/, '') && String(trace[1]) === site.line) text += `${new Error('stack').stack?.split('\n').slice(1).join('\n') ?? ''}\n\n`;
    }
    route(severity, text);
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
    flush: {
      value: () => {
        out.flush();
        stdout?.flush();
        files?.flush();
      },
    },
    stop: {
      value: () => {
        out.stop();
        stdout?.stop();
        if (fileTimer) clearInterval(fileTimer);
        files?.close();
      },
    },
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
