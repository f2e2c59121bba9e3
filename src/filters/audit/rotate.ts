/**
 * A size-rotated log file, as the lumberjack logger kube-apiserver writes its audit log through:
 *
 * - the file is rotated before a write that would take it past maxSize megabytes (100 when 0): it is
 *   renamed to `<name>-<timestamp><ext>` (timestamp 2006-01-02T15-04-05.000 in UTC, since kube-apiserver
 *   does not ask lumberjack for local time) and a new file is created with the old one's mode (0600 for a
 *   first file);
 * - after a rotation, in the background: backups beyond maxBackups (0 keeps all) and backups whose name's
 *   timestamp is more than maxAge days old (0 keeps all) are removed, and with `compress` the remaining
 *   plain backups are gzipped to `<backup>.gz` (the plain file removed once the copy is complete).
 *
 * Writes are synchronous system calls, as lumberjack's: an audit line is in the file (the page cache) when
 * write() returns. A few microseconds each, far cheaper than handing each write to libuv's thread pool.
 */
import { closeSync, fstatSync, mkdirSync, openSync, renameSync, statSync, writeSync, type Stats } from 'node:fs';
import { readdir, rm, stat } from 'node:fs/promises';
import { createReadStream, createWriteStream } from 'node:fs';
import { basename, dirname, extname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';

const MEGABYTE = 1024 * 1024;
const DEFAULT_MAX_SIZE_MB = 100;
const DAY_MS = 24 * 60 * 60 * 1000;

export interface RotateConfig {
  filename: string;
  /** Megabytes; 0 means 100. */
  maxSize: number;
  maxBackups: number;
  /** Days. */
  maxAge: number;
  compress: boolean;
  /** Milliseconds since the epoch; tests move it. */
  now?: () => number;
  /** Reports background cleanup failures. */
  onError?: (err: Error) => void;
}

function pad(n: number, width = 2): string {
  return String(n).padStart(width, '0');
}

/** lumberjack's backupTimeFormat in UTC: 2006-01-02T15-04-05.000. */
export function backupTimestamp(ms: number): string {
  const d = new Date(ms);
  return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}T${pad(d.getUTCHours())}-${pad(d.getUTCMinutes())}-${pad(d.getUTCSeconds())}.${pad(d.getUTCMilliseconds(), 3)}`;
}

const TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})T(\d{2})-(\d{2})-(\d{2})\.(\d{3})$/;

function parseBackupTimestamp(text: string): number | undefined {
  const m = TIMESTAMP.exec(text);
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s, ms] = m.map(Number) as [number, number, number, number, number, number, number, number];
  const t = Date.UTC(y, mo - 1, d, h, mi, s, ms);
  return Number.isNaN(t) ? undefined : t;
}

/** The backup name of `filename` rotated at `ms`. */
export function backupName(filename: string, ms: number): string {
  const ext = extname(filename);
  const prefix = basename(filename).slice(0, basename(filename).length - ext.length);
  return join(dirname(filename), `${prefix}-${backupTimestamp(ms)}${ext}`);
}

export class RotatingFile {
  private fd: number | undefined;
  private size = 0;
  private milling: Promise<void> = Promise.resolve();
  private millAgain = false;
  private millRunning = false;
  private readonly now: () => number;

  constructor(private readonly config: RotateConfig) {
    this.now = config.now ?? Date.now;
  }

  private get max(): number {
    return (this.config.maxSize === 0 ? DEFAULT_MAX_SIZE_MB : this.config.maxSize) * MEGABYTE;
  }

  /** Opens or rotates as a write of `len` bytes needs; the descriptor to write to. */
  private prepare(len: number): number {
    if (len > this.max) throw new Error(`write length ${len} exceeds maximum file size ${this.max}`);
    if (this.fd === undefined) this.openExistingOrNew(len);
    else if (this.size + len > this.max) this.rotate();
    return this.fd!;
  }

  /** Appends `text`; throws on failure (the next write tries again). */
  write(text: string | Buffer): void {
    const data = typeof text === 'string' ? Buffer.from(text) : text;
    this.prepare(data.length);
    let off = 0;
    while (off < data.length) {
      const n = writeSync(this.fd!, data, off, data.length - off);
      off += n;
      this.size += n;
    }
  }

  /**
   * Appends whole lines (each ending in a newline) in as few writes as rotation allows: rotation happens only
   * between lines, so lines that would take the file past its maximum size go into the next file.
   */
  writeLines(lines: readonly string[]): void {
    const text = lines.length === 1 ? lines[0]! : lines.join('');
    const len = Buffer.byteLength(text);
    if (lines.length === 1 || (this.fd !== undefined && this.size + len <= this.max)) return this.writeText(text, len);
    let chunk: string[] = [];
    let chunkLen = 0;
    for (const line of lines) {
      const n = Buffer.byteLength(line);
      if (chunkLen > 0 && this.size + chunkLen + n > this.max) {
        this.writeText(chunk.join(''), chunkLen);
        chunk = [];
        chunkLen = 0;
      }
      chunk.push(line);
      chunkLen += n;
    }
    if (chunkLen > 0) this.writeText(chunk.join(''), chunkLen);
  }

  /** Writes `text` of `len` bytes (UTF-8) as one write when the system takes it whole. */
  private writeText(text: string, len: number): void {
    this.prepare(len);
    const n = writeSync(this.fd!, text);
    this.size += n;
    if (n < len) this.write(Buffer.from(text).subarray(n));
  }

  private openExistingOrNew(writeLen: number): void {
    this.mill();
    let info: Stats;
    try {
      info = statSync(this.config.filename);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return this.openNew();
      throw new Error(`error getting log file info: ${(e as Error).message}`, { cause: e });
    }
    if (info.isFile() && info.size + writeLen >= this.max) return this.rotate();
    try {
      this.fd = openSync(this.config.filename, 'a');
      this.size = info.isFile() ? info.size : 0;
    } catch {
      this.openNew();
    }
  }

  private openNew(): void {
    mkdirSync(dirname(this.config.filename), { recursive: true, mode: 0o755 });
    let mode = 0o600;
    try {
      const info = statSync(this.config.filename);
      mode = info.mode & 0o777;
      if (info.isFile()) renameSync(this.config.filename, backupName(this.config.filename, this.now()));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw new Error(`can't rename log file: ${(e as Error).message}`, { cause: e });
    }
    this.fd = openSync(this.config.filename, 'w', mode);
    this.size = 0;
  }

  private rotate(): void {
    this.closeFile();
    this.openNew();
    this.mill();
  }

  private closeFile(): void {
    if (this.fd === undefined) return;
    const fd = this.fd;
    this.fd = undefined;
    try {
      fstatSync(fd);
      closeSync(fd);
    } catch {
      // already gone
    }
  }

  /** Runs the cleanup in the background, one run at a time; a request during a run starts another after it. */
  private mill(): void {
    const { maxBackups, maxAge, compress } = this.config;
    if (maxBackups === 0 && maxAge === 0 && !compress) return;
    if (this.millRunning) {
      this.millAgain = true;
      return;
    }
    this.millRunning = true;
    this.milling = (async () => {
      do {
        this.millAgain = false;
        try {
          await this.millOnce();
        } catch (e) {
          this.config.onError?.(e as Error);
        }
      } while (this.millAgain);
      this.millRunning = false;
    })();
  }

  private async oldLogFiles(): Promise<{ name: string; time: number }[]> {
    const dir = dirname(this.config.filename);
    const ext = extname(this.config.filename);
    const prefix = basename(this.config.filename).slice(0, basename(this.config.filename).length - ext.length) + '-';
    const files: { name: string; time: number }[] = [];
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      if (!entry.isFile() || !entry.name.startsWith(prefix)) continue;
      for (const suffix of [ext, ext + '.gz']) {
        if (!entry.name.endsWith(suffix)) continue;
        const t = parseBackupTimestamp(entry.name.slice(prefix.length, entry.name.length - suffix.length));
        if (t !== undefined) {
          files.push({ name: entry.name, time: t });
          break;
        }
      }
    }
    return files.sort((a, b) => b.time - a.time);
  }

  private async millOnce(): Promise<void> {
    const dir = dirname(this.config.filename);
    const { maxBackups, maxAge, compress } = this.config;
    let files = await this.oldLogFiles();
    const remove: string[] = [];
    if (maxBackups > 0 && maxBackups < files.length) {
      const kept = new Set<string>();
      const remaining: typeof files = [];
      for (const f of files) {
        const plain = f.name.replace(/\.gz$/, '');
        if (kept.has(plain) || kept.size < maxBackups) {
          kept.add(plain);
          remaining.push(f);
        } else {
          remove.push(f.name);
        }
      }
      files = remaining;
    }
    if (maxAge > 0) {
      const cutoff = this.now() - maxAge * DAY_MS;
      const remaining: typeof files = [];
      for (const f of files) {
        if (f.time < cutoff) remove.push(f.name);
        else remaining.push(f);
      }
      files = remaining;
    }
    for (const name of new Set(remove)) await rm(join(dir, name), { force: true });
    if (compress) {
      for (const f of files) {
        if (f.name.endsWith('.gz')) continue;
        await gzipFile(join(dir, f.name));
      }
    }
  }

  /** Waits for background cleanup, then closes the file. */
  async close(): Promise<void> {
    await this.milling;
    this.closeFile();
  }

  /** Resolves when no background cleanup is running (for tests). */
  async idle(): Promise<void> {
    while (this.millRunning) await this.milling;
  }
}

async function gzipFile(src: string): Promise<void> {
  const info = await stat(src);
  const dst = `${src}.gz`;
  await pipeline(createReadStream(src), createGzip(), createWriteStream(dst, { mode: info.mode & 0o777 }));
  await rm(src, { force: true });
}
