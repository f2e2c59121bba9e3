/**
 * The log backend (--audit-log-path): one line per event, JSON of the chosen version or the legacy text
 * line, to a rotated file or to standard output ('-'). A write failure is an error of plugin 'log' and makes
 * processEvents answer false (which fails the request in blocking-strict mode).
 */
import { closeSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import { handlePluginError, type Backend, type PluginContext } from './backend.js';
import { eventJSON, eventString } from './encode.js';
import { RotatingFile, type RotateConfig } from './rotate.js';
import type { AuditEvent, EventVersion } from './types.js';

export type LogFormat = 'json' | 'legacy';

export interface LogWriter {
  /** Writes synchronously; throws on failure. */
  write(text: string): void;
  close(): Promise<void>;
}

/** Standard output ('-'). */
export function stdoutWriter(): LogWriter {
  return {
    write: (text) => void process.stdout.write(text),
    close: async () => {},
  };
}

/**
 * The rotated file, created at startup as kube-apiserver's ensureLogFile does (directory 0700, file 0600),
 * so that an unusable path fails the start rather than every request.
 */
export function fileWriter(config: RotateConfig): LogWriter & { file: RotatingFile } {
  try {
    mkdirSync(dirname(config.filename), { recursive: true, mode: 0o700 });
    closeSync(openSync(config.filename, 'a', 0o600));
  } catch (e) {
    throw new Error(`--audit-log-path: ensureLogFile: ${(e as Error).message}`, { cause: e });
  }
  const file = new RotatingFile(config);
  return { file, write: (text) => file.write(text), close: () => file.close() };
}

export function logLine(ev: AuditEvent, format: LogFormat, version: EventVersion): string {
  return (format === 'legacy' ? eventString(ev) : eventJSON(ev, version, true)) + '\n';
}

export function logBackend(writer: LogWriter, format: LogFormat, version: EventVersion, ctx: PluginContext): Backend {
  return {
    name: 'log',
    processEvents(events) {
      let text = '';
      for (const ev of events) text += logLine(ev, format, version);
      try {
        writer.write(text);
        return true;
      } catch (e) {
        handlePluginError(ctx, 'log', e, events);
        return false;
      }
    },
    shutdown: () => writer.close(),
  };
}
