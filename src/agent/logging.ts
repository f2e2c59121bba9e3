/**
 * orchlet's logging options, as kubelet 1.23 treats them: klog's flags (--log-dir, --log-file, --logtostderr, ...)
 * choose where text lines go; component-base's (--logging-format, -v, --vmodule, --log-flush-frequency,
 * --log-json-*) how they look. The Logger itself is src/util/log.ts, shared with the server.
 */
import { writeSync } from 'node:fs';
import { createLogger, parseTraceLocation, type LogFormat, type Logger } from '../util/log.js';
import { tryParseQuantity } from '../util/quantity.js';

/** The option values this module reads (a subset of AgentOptions, so tests can pass plain objects). */
export interface AgentLoggingOptions {
  v?: number | undefined;
  vmodule?: string | undefined;
  loggingFormat: string;
  logFlushFrequency: number;
  experimentalLogSanitization?: boolean | undefined;
  logDir?: string | undefined;
  logFile?: string | undefined;
  logFileMaxSize: number;
  logtostderr: boolean;
  alsologtostderr: boolean;
  stderrthreshold: number;
  oneOutput: boolean;
  skipHeaders: boolean;
  skipLogHeaders: boolean;
  addDirHeader: boolean;
  logBacktraceAt: string;
  logJsonSplitStream: boolean;
  logJsonInfoBufferSize: string;
}

/** klog's flags, deprecated in 1.23 (KEP 2845); with a format other than text, component-base refuses them. */
export const KLOG_FLAGS: readonly string[] = [
  'add-dir-header',
  'alsologtostderr',
  'log-backtrace-at',
  'log-dir',
  'log-file',
  'log-file-max-size',
  'logtostderr',
  'one-output',
  'skip-headers',
  'skip-log-headers',
  'stderrthreshold',
];

/** --log-json-info-buffer-size in bytes: plain bytes or a quantity such as 64Ki. */
export function infoBufferBytes(text: string): number {
  const q = tryParseQuantity(text.trim());
  const n = q ? Number(q.value()) : NaN;
  if (!Number.isFinite(n) || n < 0) throw new Error(`--log-json-info-buffer-size: "${text}" is not a size in bytes such as 0, 65536 or 64Ki`);
  return n;
}

/**
 * component-base 1.23's ValidateLoggingConfiguration: a non-text format does not honour klog's flags, so any of
 * them set to a non-default value is an error ('Non-default format doesn't honor flag: log-dir'); the split
 * stream options apply to JSON only, and --log-backtrace-at must be file:line.
 */
export function checkLoggingOptions(o: AgentLoggingOptions): void {
  const defaults: Record<string, unknown> = {
    'add-dir-header': false,
    alsologtostderr: false,
    'log-backtrace-at': ':0',
    'log-dir': undefined,
    'log-file': undefined,
    'log-file-max-size': 1800,
    logtostderr: true,
    'one-output': false,
    'skip-headers': false,
    'skip-log-headers': false,
    stderrthreshold: 2,
  };
  const values: Record<string, unknown> = {
    'add-dir-header': o.addDirHeader,
    alsologtostderr: o.alsologtostderr,
    'log-backtrace-at': o.logBacktraceAt,
    'log-dir': o.logDir === '' ? undefined : o.logDir,
    'log-file': o.logFile === '' ? undefined : o.logFile,
    'log-file-max-size': o.logFileMaxSize,
    logtostderr: o.logtostderr,
    'one-output': o.oneOutput,
    'skip-headers': o.skipHeaders,
    'skip-log-headers': o.skipLogHeaders,
    stderrthreshold: o.stderrthreshold,
  };
  if (o.loggingFormat !== 'text') {
    for (const f of KLOG_FLAGS) {
      if (values[f] !== defaults[f]) throw new Error(`logging.format: Invalid value: "${o.loggingFormat}": Non-default format doesn't honor flag: ${f}`);
    }
  }
  parseTraceLocation(o.logBacktraceAt);
  infoBufferBytes(o.logJsonInfoBufferSize);
}

/** The agent's Logger from its options. */
export function agentLogger(o: AgentLoggingOptions, program: string, extra: { sink?: (text: string) => void; stdoutSink?: (text: string) => void } = {}): Logger {
  return createLogger({
    verbosity: o.v ?? 0,
    vmodule: o.vmodule,
    format: o.loggingFormat as LogFormat,
    flushFrequencyMs: o.logFlushFrequency,
    sanitization: o.experimentalLogSanitization ?? false,
    skipHeaders: o.skipHeaders,
    addDirHeader: o.addDirHeader,
    backtraceAt: o.logBacktraceAt,
    jsonSplitStream: o.logJsonSplitStream,
    jsonInfoBufferSize: infoBufferBytes(o.logJsonInfoBufferSize),
    files: {
      logtostderr: o.logtostderr,
      alsologtostderr: o.alsologtostderr,
      stderrthreshold: o.stderrthreshold,
      ...(o.logDir ? { logDir: o.logDir } : {}),
      ...(o.logFile ? { logFile: o.logFile } : {}),
      logFileMaxSizeMB: o.logFileMaxSize,
      oneOutput: o.oneOutput,
      skipLogHeaders: o.skipLogHeaders,
      program,
    },
    // Standard error is written at once (lines of a long-running agent are watched live); files are flushed
    // every --log-flush-frequency.
    sink: (text: string) => {
      try {
        writeSync(2, text);
      } catch {
        // standard error is gone
      }
    },
    ...extra,
  });
}
