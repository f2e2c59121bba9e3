// The node agent, wired: sources → merge → pod workers → pod sync → runtime, with the status manager
// on the side. Standalone mode only so far: pods come from --pod-manifest-path.
//
//   FileSource ──SET──▶ PodMerge ──ADD/UPDATE/DELETE──▶ PodWorkers ──▶ PodSyncer ──▶ Runtime
//                                                          ▲                         │
//                                     runtime events, back-off ends, resync ◀────────┘
import { mkdir } from 'node:fs/promises';
import { hostname } from 'node:os';
import { resolve } from 'node:path';
import type { BackoffOptions } from './backoff.js';
import { PodSyncer } from './podsync.js';
import { ProcessRuntime } from './runtime/process.js';
import type { Runtime } from './runtime/runtime.js';
import { FileSource } from './sources/file.js';
import { PodMerge, type PodSnapshot, type PodUpdate } from './sources/merge.js';
import { StatusManager } from './status-manager.js';
import { podFullName } from './types.js';
import { PodWorkers } from './workers.js';

export interface AgentConfig {
  nodeName: string;
  rootDir: string;
  /** --pod-manifest-path; no file source when unset. */
  podManifestPath?: string;
  /** --file-check-frequency in ms. */
  fileCheckFrequencyMs: number;
  /** --sync-frequency in ms: every pod is synced at least this often. */
  syncFrequencyMs: number;
  /** Whether privileged containers (the only way to run as root) are allowed; default false. */
  allowPrivileged?: boolean;
  /** Defaults to the built-in process runtime. */
  runtime?: Runtime;
  backoff?: BackoffOptions;
  log?: (level: 'info' | 'error', message: string) => void;
}

/** The node name kubelet uses: --hostname-override, else the host name, lower-cased. */
export function nodeNameOf(hostnameOverride: string | undefined): string {
  const n = hostnameOverride !== undefined && hostnameOverride.trim() !== '' ? hostnameOverride.trim() : hostname();
  return n.toLowerCase();
}

export class Agent {
  readonly statusManager = new StatusManager();
  readonly runtime: Runtime;
  readonly syncer: PodSyncer;
  readonly workers: PodWorkers;
  private readonly merge = new PodMerge({
    onDuplicate: (pod, source) => this.log('error', `pod ${podFullName(pod)} from source ${source} is a duplicate; ignored`),
  });
  private fileSource: FileSource | undefined;
  private resyncTimer: NodeJS.Timeout | undefined;
  private unsubscribe: (() => void) | undefined;
  private stopped = false;

  constructor(private readonly config: AgentConfig) {
    this.runtime = config.runtime ?? new ProcessRuntime({ allowPrivileged: config.allowPrivileged === true });
    this.syncer = new PodSyncer({
      runtime: this.runtime,
      statusManager: this.statusManager,
      rootDir: resolve(config.rootDir),
      allowPrivileged: config.allowPrivileged === true,
      ...(config.backoff ? { backoff: config.backoff } : {}),
    });
    this.workers = new PodWorkers(this.syncer, {
      onError: (pod, err) => this.log('error', `sync of pod ${podFullName(pod)} failed: ${err instanceof Error ? err.message : String(err)}`),
      onStateChange: (pod, state) => this.log('info', `pod ${podFullName(pod)} (${pod.metadata.uid}): ${state}`),
    });
  }

  /** Starts the runtime event feed, the periodic resync and the sources; resolves after the first read of each source. */
  async start(): Promise<void> {
    await mkdir(resolve(this.config.rootDir, 'pods'), { recursive: true, mode: 0o750 });
    this.unsubscribe = this.runtime.onContainerEvent((e) => {
      const uid = this.syncer.uidOfSandbox(e.podSandboxId);
      if (uid !== undefined) this.workers.sync(uid);
    });
    // Kept referenced: this timer is what keeps a standalone agent alive with no pods.
    this.resyncTimer = setInterval(() => this.workers.syncAll(), Math.max(1000, this.config.syncFrequencyMs || 60_000));
    if (this.config.podManifestPath !== undefined && this.config.podManifestPath !== '') {
      this.fileSource = new FileSource({
        path: resolve(this.config.podManifestPath),
        nodeName: this.config.nodeName,
        periodMs: this.config.fileCheckFrequencyMs,
        onSnapshot: (s) => this.onSnapshot(s),
        onError: (path, err) => this.log('error', `static pod manifest ${path} skipped: ${err.message}`),
      });
      await this.fileSource.start();
    }
  }

  /** Feeds one snapshot through the merge to the workers (sources call this; tests may too). */
  onSnapshot(snapshot: PodSnapshot): void {
    if (this.stopped) return;
    for (const u of this.merge.apply(snapshot)) this.dispatch(u);
  }

  /** Stops the sources, terminates every pod gracefully, then shuts the runtime down. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.fileSource?.stop();
    clearInterval(this.resyncTimer);
    await this.workers.terminateAll();
    this.unsubscribe?.();
    await this.runtime.shutdown(0);
  }

  private dispatch(u: PodUpdate): void {
    for (const pod of u.pods) {
      this.log('info', `${u.op} pod ${podFullName(pod)} (${pod.metadata.uid}) from source ${u.source}`);
      this.workers.update(u.op, pod);
    }
  }

  private log(level: 'info' | 'error', message: string): void {
    this.config.log?.(level, message);
  }
}
