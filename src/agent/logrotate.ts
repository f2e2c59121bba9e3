// Container log rotation (kubelet's pkg/kubelet/logs container_log_manager.go), every 10 s for each
// running container whose log is over --container-log-max-size: leftovers of an interrupted pass
// are removed; rotated files beyond --container-log-max-files - 2 are deleted, oldest first; the
// rotated files left are gzip-compressed (`.gz`); then the log is renamed to
// `<log>.<YYYYMMDD-hhmmss>` and the runtime reopens it (CRI ReopenContainerLog). A failed reopen
// renames the file back. Total files per container: at most --container-log-max-files.
import { createReadStream, createWriteStream } from 'node:fs';
import { readdir, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import type { Runtime } from './runtime/runtime.js';

export interface LogRotationOptions {
  runtime: Runtime;
  maxSizeBytes: number;
  /** At least 2. */
  maxFiles: number;
  periodMs?: number;
  log?: (level: 'info' | 'error', message: string) => void;
}

function timestamp(d: Date): string {
  const p = (n: number): string => String(n).padStart(2, '0');
  return `${d.getUTCFullYear()}${p(d.getUTCMonth() + 1)}${p(d.getUTCDate())}-${p(d.getUTCHours())}${p(d.getUTCMinutes())}${p(d.getUTCSeconds())}`;
}

/** The rotated files of a log, oldest first (names sort by their timestamps). */
async function rotated(path: string): Promise<string[]> {
  const dir = dirname(path);
  const base = basename(path);
  const names = await readdir(dir).catch((): string[] => []);
  return names
    .filter((n) => n.startsWith(`${base}.`) && !n.endsWith('.tmp'))
    .sort()
    .map((n) => join(dir, n));
}

export class ContainerLogManager {
  private timer: NodeJS.Timeout | undefined;
  private running = false;

  constructor(private readonly o: LogRotationOptions) {}

  start(): void {
    if (!this.o.runtime.reopenContainerLog) return;
    this.timer = setInterval(() => void this.rotateAll(), this.o.periodMs ?? 10_000);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** One pass over every running container. */
  async rotateAll(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      const containers = await this.o.runtime.listContainers({ state: 'CONTAINER_RUNNING' }).catch(() => []);
      for (const c of containers) {
        const s = await this.o.runtime.containerStatus(c.id).catch(() => undefined);
        if (!s?.logPath) continue;
        await this.rotateOne(c.id, s.logPath).catch((err: unknown) =>
          this.o.log?.('error', `rotating the log of container ${c.id}: ${err instanceof Error ? err.message : String(err)}`),
        );
      }
    } finally {
      this.running = false;
    }
  }

  private async rotateOne(id: string, path: string): Promise<void> {
    const st = await stat(path).catch(() => undefined);
    if (!st || st.size < this.o.maxSizeBytes) return;
    const dir = dirname(path);
    for (const n of await readdir(dir)) if (n.startsWith(`${basename(path)}.`) && n.endsWith('.tmp')) await rm(join(dir, n), { force: true });
    const old = await rotated(path);
    const keep = Math.max(0, this.o.maxFiles - 2);
    while (old.length > keep) await rm(old.shift()!, { force: true });
    for (const f of old) if (!f.endsWith('.gz')) await compress(f);
    const target = `${path}.${timestamp(new Date())}`;
    if (await stat(target).catch(() => undefined)) return; // rotated this second already: the next pass does it
    await rename(path, target);
    try {
      await this.o.runtime.reopenContainerLog!(id);
    } catch (err) {
      await rename(target, path).catch(() => undefined);
      throw err;
    }
  }
}

async function compress(file: string): Promise<void> {
  const tmp = `${file}.gz.tmp`;
  await pipeline(createReadStream(file), createGzip(), createWriteStream(tmp));
  await rename(tmp, `${file}.gz`);
  await rm(file, { force: true });
}
