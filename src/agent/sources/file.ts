// The file pod source (kubelet's pkg/kubelet/config/file.go): --pod-manifest-path names one
// manifest file or a directory of them. The source reads it at start, every --file-check-frequency
// and shortly after any fs.watch event, and emits the complete result as a SET snapshot each time.
//
// Directory rules (as kubelet): only regular files directly inside it, in name order; names starting
// with '.' are ignored; a file that cannot be decoded or is not a valid pod is skipped and reported
// through onError (so its pod, if it ran, is deleted by the merge). A path that does not exist yields
// an empty snapshot, so removing the whole directory stops its pods.
import { watch, type FSWatcher } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { Pod } from '../types.js';
import { checkPodManifest, decodeManifest, ManifestError, staticPodFromManifest } from './manifest.js';
import type { PodSet } from './merge.js';

export interface FileSourceOptions {
  path: string;
  nodeName: string;
  /** Period of full re-reads in ms; 0 disables the timer (watch events still trigger reads). */
  periodMs: number;
  onSnapshot: (snapshot: PodSet) => void;
  /** A manifest that was skipped, or a read failure of the path itself. */
  onError?: (path: string, err: Error) => void;
  /** Delay between a watch event and the re-read it triggers, in ms (default 100). */
  watchDebounceMs?: number;
}

/** Reads every pod of a manifest path once (no snapshot, no timers); skipped files go to onError. */
export async function readManifestPath(
  path: string,
  nodeName: string,
  onError: (path: string, err: Error) => void = () => {},
): Promise<Pod[]> {
  let st;
  try {
    st = await stat(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  const files: string[] = [];
  if (st.isDirectory()) {
    const entries = await readdir(path, { withFileTypes: true });
    for (const e of entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
      if (e.name.startsWith('.')) continue;
      if (e.isFile()) files.push(join(path, e.name));
      else if (e.isSymbolicLink()) {
        const target = await stat(join(path, e.name)).catch(() => undefined);
        if (target?.isFile()) files.push(join(path, e.name));
      }
    }
  } else if (!basename(path).startsWith('.')) {
    files.push(path);
  }
  const pods: Pod[] = [];
  for (const file of files) {
    try {
      pods.push(...(await readManifestFile(file, nodeName)));
    } catch (err) {
      onError(file, err instanceof Error ? err : new Error(String(err)));
    }
  }
  return pods;
}

async function readManifestFile(file: string, nodeName: string): Promise<Pod[]> {
  const text = await readFile(file, 'utf8');
  if (text.trim() === '') return [];
  const objects = decodeManifest(text);
  for (const obj of objects) {
    const problems = checkPodManifest(obj);
    if (problems.length > 0) throw new ManifestError(`invalid pod: ${problems.join('; ')}`);
  }
  return objects.map((obj) => staticPodFromManifest(obj, 'file', nodeName, file));
}

export class FileSource {
  private timer: NodeJS.Timeout | undefined;
  private watcher: FSWatcher | undefined;
  private debounce: NodeJS.Timeout | undefined;
  private reading: Promise<void> | undefined;
  private again = false;
  private stopped = false;

  constructor(private readonly options: FileSourceOptions) {}

  /** Reads the path once (the first snapshot is emitted before this resolves), then keeps watching. */
  async start(): Promise<void> {
    await this.refresh();
    if (this.stopped) return;
    if (this.options.periodMs > 0) {
      this.timer = setInterval(() => void this.refresh(), this.options.periodMs);
      this.timer.unref();
    }
    this.startWatch();
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.timer);
    clearTimeout(this.debounce);
    this.watcher?.close();
    this.watcher = undefined;
  }

  /** Re-reads now; concurrent calls are folded into one extra read after the current one. */
  refresh(): Promise<void> {
    if (this.reading) {
      this.again = true;
      return this.reading;
    }
    this.reading = (async () => {
      do {
        this.again = false;
        await this.readOnce();
      } while (this.again && !this.stopped);
    })().finally(() => {
      this.reading = undefined;
    });
    return this.reading;
  }

  private async readOnce(): Promise<void> {
    const onError = this.options.onError ?? (() => {});
    let pods: Pod[];
    try {
      pods = await readManifestPath(this.options.path, this.options.nodeName, onError);
    } catch (err) {
      onError(this.options.path, err instanceof Error ? err : new Error(String(err)));
      return; // an unreadable path keeps the last snapshot rather than deleting every pod
    }
    if (!this.stopped) this.options.onSnapshot({ op: 'SET', source: 'file', pods });
  }

  /** Watches the path (or, while it does not exist, its parent) and re-reads on events. */
  private startWatch(): void {
    if (this.stopped) return;
    const onEvent = (): void => {
      clearTimeout(this.debounce);
      this.debounce = setTimeout(() => {
        void this.refresh();
        // The watched inode may have been replaced (directory recreated, file renamed over).
        this.watcher?.close();
        this.watcher = undefined;
        this.startWatch();
      }, this.options.watchDebounceMs ?? 100);
    };
    for (const target of [this.options.path, dirname(this.options.path)]) {
      try {
        this.watcher = watch(target, { persistent: false }, onEvent);
        this.watcher.on('error', () => {
          this.watcher?.close();
          this.watcher = undefined;
        });
        return;
      } catch {
        // try the parent; if neither can be watched the periodic re-read still works
      }
    }
  }
}
