// Container log files in the CRI log format (what containerd and CRI-O write, and what kubelet
// and `kubectl logs` read): one line per record,
//   <RFC3339Nano timestamp> <stdout|stderr> <F|P> <content>
// F marks the end of a line of output, P a partial line (a line longer than MAX_LINE bytes is cut
// into P records ending with one F record). Output still without a newline when the stream ends is
// written as an F record.
import { close, open, write } from 'node:fs';
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

/**
 * Writes one container's stdout and stderr into one CRI log file (appending). A file descriptor and a
 * chain of writes rather than a fs.WriteStream (a stream's machinery per container for what is mostly
 * an empty file): the records of one turn of the event loop go out in one write, in order, and a
 * reopen or close comes after every record written before it. A failing log file must not take the
 * agent down: its records are lost.
 */
export class CriLogWriter {
  /** The file being written (undefined: it could not be opened, or it was closed). */
  private fd: Promise<number | undefined>;
  /** The last write, reopen or close queued (never rejects). */
  private tail: Promise<void> = Promise.resolve();
  /** Records not written yet, in the write queued last (more records of the same turn join it). */
  private batch: string[] | undefined;
  private readonly pending: Record<LogStream, Buffer> = { stdout: Buffer.alloc(0), stderr: Buffer.alloc(0) };

  constructor(readonly path: string) {
    this.fd = openLog(path);
  }

  /** Closes the file and opens `path` again (after log rotation renamed it: CRI ReopenContainerLog); resolves once the old file is closed. */
  async reopen(): Promise<void> {
    this.batch = undefined;
    const old = this.fd;
    this.fd = openLog(this.path);
    await this.enqueue(() => closeLog(old));
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
    this.batch = undefined;
    const fd = this.fd;
    this.fd = Promise.resolve(undefined);
    return this.enqueue(() => closeLog(fd));
  }

  private record(stream: LogStream, partial: boolean, content: Buffer): void {
    const line = formatRecord(logTimestamp(), stream, partial, content.toString('utf8'));
    if (this.batch !== undefined) {
      this.batch.push(line);
      return;
    }
    const batch = [line];
    this.batch = batch;
    const fd = this.fd;
    void this.enqueue(async () => {
      if (this.batch === batch) this.batch = undefined;
      const f = await fd;
      if (f !== undefined) await writeAll(f, Buffer.from(batch.length === 1 ? batch[0]! : batch.join(''), 'utf8'));
    });
  }

  private enqueue(op: () => Promise<void>): Promise<void> {
    this.tail = this.tail.then(op).catch(() => undefined);
    return this.tail;
  }
}

function openLog(path: string): Promise<number | undefined> {
  return new Promise((resolve) => open(path, 'a', 0o640, (err, fd) => resolve(err ? undefined : fd)));
}

async function closeLog(fd: Promise<number | undefined>): Promise<void> {
  const f = await fd;
  if (f !== undefined) await new Promise<void>((resolve) => close(f, () => resolve()));
}

async function writeAll(fd: number, data: Buffer): Promise<void> {
  for (let off = 0; off < data.length; ) {
    const n = await new Promise<number>((resolve, reject) => write(fd, data, off, data.length - off, null, (err, written) => (err ? reject(err) : resolve(written))));
    if (n <= 0) return;
    off += n;
  }
}
