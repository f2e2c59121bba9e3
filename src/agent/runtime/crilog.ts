// Container log files in the CRI log format (what containerd and CRI-O write, and what kubelet
// and `kubectl logs` read): one line per record,
//   <RFC3339Nano timestamp> <stdout|stderr> <F|P> <content>
// F marks the end of a line of output, P a partial line (a line longer than MAX_LINE bytes is cut
// into P records ending with one F record). Output still without a newline when the stream ends is
// written as an F record.
import { createWriteStream, type WriteStream } from 'node:fs';
import { rfc3339Nano } from '../time.js';

export type LogStream = 'stdout' | 'stderr';

/** Longest content of one record (containerd's default max container log line size is 16 KiB). */
export const MAX_LINE = 16 * 1024;

/** The clock of log records: wall time with sub-millisecond digits from the monotonic clock. */
function logTimestamp(): string {
  const ms = performance.timeOrigin + performance.now();
  const whole = Math.floor(ms);
  return rfc3339Nano(new Date(whole), (ms - whole) * 1_000_000);
}

export function formatRecord(time: string, stream: LogStream, partial: boolean, content: string): string {
  return `${time} ${stream} ${partial ? 'P' : 'F'} ${content}\n`;
}

export interface LogRecord {
  time: string;
  stream: LogStream;
  partial: boolean;
  content: string;
}

/** Parses a CRI log file's text into records (malformed lines are skipped). */
export function parseLog(text: string): LogRecord[] {
  const out: LogRecord[] = [];
  for (const line of text.split('\n')) {
    const m = /^(\S+) (stdout|stderr) ([FP]) (.*)$/.exec(line);
    if (m) out.push({ time: m[1]!, stream: m[2] as LogStream, partial: m[3] === 'P', content: m[4]! });
  }
  return out;
}

/** Writes one container's stdout and stderr into one CRI log file (appending). */
export class CriLogWriter {
  private out: WriteStream;
  private readonly pending: Record<LogStream, Buffer> = { stdout: Buffer.alloc(0), stderr: Buffer.alloc(0) };

  constructor(readonly path: string) {
    this.out = CriLogWriter.open(path);
  }

  private static open(path: string): WriteStream {
    const out = createWriteStream(path, { flags: 'a', mode: 0o640 });
    out.on('error', () => {
      // a failing log file must not take the agent down; the records are lost
    });
    return out;
  }

  /** Closes the file and opens `path` again (after log rotation renamed it: CRI ReopenContainerLog). */
  async reopen(): Promise<void> {
    const old = this.out;
    this.out = CriLogWriter.open(this.path);
    await new Promise<void>((resolve) => {
      if (old.closed || old.destroyed) resolve();
      else old.end(() => resolve());
    });
  }

  /** Feeds a chunk of a stream's output; complete lines are written at once. */
  write(stream: LogStream, chunk: Buffer): void {
    let buf = this.pending[stream].length > 0 ? Buffer.concat([this.pending[stream], chunk]) : chunk;
    for (;;) {
      const nl = buf.indexOf(0x0a);
      if (nl >= 0 && nl <= MAX_LINE) {
        this.record(stream, false, buf.subarray(0, nl));
        buf = buf.subarray(nl + 1);
      } else if (buf.length > MAX_LINE) {
        this.record(stream, true, buf.subarray(0, MAX_LINE));
        buf = buf.subarray(MAX_LINE);
      } else break;
    }
    this.pending[stream] = Buffer.from(buf);
  }

  /** Writes what is left of both streams and closes the file; resolves once it is on disk. */
  close(): Promise<void> {
    for (const stream of ['stdout', 'stderr'] as const) {
      if (this.pending[stream].length > 0) this.record(stream, false, this.pending[stream]);
      this.pending[stream] = Buffer.alloc(0);
    }
    return new Promise((resolve) => {
      if (this.out.closed || this.out.destroyed) resolve();
      else this.out.end(() => resolve());
    });
  }

  private record(stream: LogStream, partial: boolean, content: Buffer): void {
    this.out.write(formatRecord(logTimestamp(), stream, partial, content.toString('utf8')));
  }
}
