/**
 * The log backend (--audit-log-path): one line per event, JSON of the chosen version or the legacy text
 * line, to a rotated file or to standard output ('-').
 *
 * Lines are written with synchronous writes, as kube-apiserver's lumberjack writes them: a write of a few
 * kilobytes to the page cache costs a few microseconds, where handing it to libuv's thread pool costs tens
 * (thread hand-offs and wake-ups on both sides). In the blocking modes an event is in the file when
 * processEvents returns (false when the write failed: an error of plugin 'log', which fails the request in
 * blocking-strict mode). Behind a batch buffer, events are encoded and written off the request path, those
 * handed over within a few milliseconds together.
 */
import { closeSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import { handlePluginError, type Backend, type PluginContext } from './backend.js';
import { eventJSON, eventString } from './encode.js';
import { RotatingFile, type RotateConfig } from './rotate.js';
import type { AuditEvent, EventVersion } from './types.js';

export type LogFormat = 'json' | 'legacy';

export interface LogWriter {
  /**
   * Writes whole lines now, in order; throws when they cannot be written. A writer whose failures arrive
   * later (standard output) reports them to `onLateError`.
   */
  writeLines(lines: readonly string[], onLateError: (e: Error) => void): void;
  close(): Promise<void>;
}

/** Standard output ('-'): synchronous for files and pipes on Linux, errors reported by the stream. */
export function stdoutWriter(): LogWriter {
  return {
    writeLines: (lines, onLateError) => {
      process.stdout.write(lines.join(''), (e) => {
        if (e) onLateError(e);
      });
    },
    close: async () => {},
  };
}

/**
 * The rotated file, created at startup as kube-apiserver's ensureLogFile does (directory 0700, file 0600),
 * so that an unusable path fails the start rather than every request.
 */
export function fileWriter(config: RotateConfig): LogWriter {
  try {
    mkdirSync(dirname(config.filename), { recursive: true, mode: 0o700 });
    closeSync(openSync(config.filename, 'a', 0o600));
  } catch (e) {
    throw new Error(`--audit-log-path: ensureLogFile: ${(e as Error).message}`, { cause: e });
  }
  const file = new RotatingFile(config);
  return {
    writeLines: (lines) => file.writeLines(lines),
    close: () => file.close(),
  };
}

/**
 * Behind a batch buffer, how long lines wait to share a write with the next ones: one write system call
 * per few milliseconds instead of one per event (the batch mode promises no time at all; shutdown writes
 * what is waiting).
 */
const FLUSH_DELAY_MS = 5;

export function logLine(ev: AuditEvent, format: LogFormat, version: EventVersion): string {
  return (format === 'legacy' ? eventString(ev) : eventJSON(ev, version, true)) + '\n';
}

export function logBackend(writer: LogWriter, format: LogFormat, version: EventVersion, ctx: PluginContext, opts: { batch: boolean }): Backend {
  /** Writes `events`; false (an error of plugin 'log') when they could not be written. */
  const write = (events: readonly AuditEvent[]): boolean => {
    try {
      const lines: string[] = [];
      for (const ev of events) lines.push(logLine(ev, format, version));
      writer.writeLines(lines, (e) => handlePluginError(ctx, 'log', e, events));
      return true;
    } catch (e) {
      handlePluginError(ctx, 'log', e, events);
      return false;
    }
  };
  if (!opts.batch) {
    return { name: 'log', processEvents: write, shutdown: () => writer.close() };
  }
  // Behind the batch buffer: what is handed over within FLUSH_DELAY_MS is written together.
  let pending: AuditEvent[] = [];
  let timer: NodeJS.Timeout | undefined;
  const flush = (): void => {
    if (timer) clearTimeout(timer);
    timer = undefined;
    const events = pending;
    pending = [];
    if (events.length > 0) write(events);
  };
  return {
    name: 'log',
    processEvents(events) {
      for (const ev of events) pending.push(ev);
      timer ??= setTimeout(flush, FLUSH_DELAY_MS).unref();
      return true;
    },
    shutdown: () => {
      flush();
      return writer.close();
    },
  };
}
