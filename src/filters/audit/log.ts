/**
 * The log backend (--audit-log-path): one line per event, JSON of the chosen version or the legacy text
 * line, to a rotated file or to standard output ('-'). Lines are written off the event loop, everything
 * queued in one write. In the blocking modes processEvents answers once the lines are written (false when
 * the write failed: an error of plugin 'log', which fails the request in blocking-strict mode); behind a
 * batch buffer it answers at once unless writes fall more than a few megabytes behind.
 */
import { closeSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import { handlePluginError, type Backend, type PluginContext } from './backend.js';
import { eventJSON, eventString } from './encode.js';
import { RotatingFile, type RotateConfig } from './rotate.js';
import type { AuditEvent, EventVersion } from './types.js';

export type LogFormat = 'json' | 'legacy';

export interface LogWriter {
  /** Resolves once `text` is written (after everything queued before it); rejects on failure. */
  writeAsync(text: string): Promise<void>;
  /** Bytes queued and not written yet. */
  readonly queuedBytes: number;
  close(): Promise<void>;
}

/** Standard output ('-'). */
export function stdoutWriter(): LogWriter {
  return {
    writeAsync: (text) => new Promise((resolve, reject) => process.stdout.write(text, (e) => (e ? reject(e) : resolve()))),
    get queuedBytes() {
      return process.stdout.writableLength;
    },
    close: async () => {},
  };
}

/** How far a batch-mode log may fall behind before the batch buffer waits for it (and so fills and drops). */
const MAX_QUEUED_BYTES = 4 * 1024 * 1024;

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
    writeAsync: (text) => file.writeAsync(text),
    get queuedBytes() {
      return file.queuedBytes;
    },
    close: () => file.close(),
  };
}

export function logLine(ev: AuditEvent, format: LogFormat, version: EventVersion): string {
  return (format === 'legacy' ? eventString(ev) : eventJSON(ev, version, true)) + '\n';
}

export function logBackend(writer: LogWriter, format: LogFormat, version: EventVersion, ctx: PluginContext, opts: { batch: boolean }): Backend {
  return {
    name: 'log',
    processEvents(events) {
      let text = '';
      for (const ev of events) text += logLine(ev, format, version);
      const written = writer.writeAsync(text).then(
        () => true,
        (e: unknown) => {
          handlePluginError(ctx, 'log', e, events);
          return false;
        },
      );
      return opts.batch && writer.queuedBytes < MAX_QUEUED_BYTES ? true : written;
    },
    shutdown: () => writer.close(),
  };
}
