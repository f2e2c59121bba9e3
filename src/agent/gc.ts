// Garbage collection of dead containers, sandboxes and unused images (kubelet's kuberuntime
// container GC and images/image_gc_manager), on any Runtime of runtime.ts.
//
// Containers (every --container-gc period, kubelet: 1 minute):
//   - evictable: not running and created more than --minimum-container-ttl-duration ago, grouped
//     per pod uid and container name (an "evict unit"), newest first;
//   - once every source has reported, all evictable containers of pods the agent no longer holds go;
//   - each unit keeps its newest --maximum-dead-containers-per-container (negative: no limit);
//   - with --maximum-dead-containers >= 0 and more dead containers than that, each unit is cut to
//     max/units (at least 1), then the oldest overall go until the total fits;
//   - sandboxes that are not ready and hold no container: all of a pod the agent no longer holds,
//     else all but the newest.
// Images (every 5 minutes): images are recorded when first seen (those present at the first
// detection count as seen long ago) and marked used whenever a container (of any state) uses
// them. When the image filesystem is at or above --image-gc-high-threshold percent used, unused
// images are removed, least recently used first, skipping those seen less than
// --minimum-image-ttl-duration ago and pinned ones, until usage is at --image-gc-low-threshold;
// freeing too little is a FreeDiskSpaceFailed warning. A high threshold of 100 disables it.
// nodeImages() is the node status images list (largest first, --node-status-max-images).
import { LABEL_CONTAINER_NAME, LABEL_POD_UID } from './podsync.js';
import type { ContainerSummary, ImageInfo, ImageService, PodSandbox, Runtime } from './runtime/runtime.js';

export interface ContainerGCPolicy {
  /** --minimum-container-ttl-duration in ms (default 0). */
  minAgeMs: number;
  /** --maximum-dead-containers-per-container (default 1; negative: no limit). */
  maxPerPodContainer: number;
  /** --maximum-dead-containers (default -1: no limit). */
  maxContainers: number;
}

export const DEFAULT_CONTAINER_GC: ContainerGCPolicy = { minAgeMs: 0, maxPerPodContainer: 1, maxContainers: -1 };

export interface ContainerGCOptions {
  runtime: Runtime;
  policy: ContainerGCPolicy;
  /** Whether the agent still holds the pod (its content must stay). */
  podExists: (uid: string) => boolean;
  /** Whether every pod source has reported (only then are pods the agent does not hold known to be gone). */
  allSourcesReady: () => boolean;
  now?: () => number;
  log?: (level: 'info' | 'error', message: string) => void;
}

export interface ContainerGCResult {
  containers: string[];
  sandboxes: string[];
}

interface DeadContainer {
  id: string;
  createdAt: number;
}

export class ContainerGC {
  private readonly now: () => number;
  private running = false;

  constructor(private readonly o: ContainerGCOptions) {
    this.now = o.now ?? Date.now;
  }

  /** One collection; resolves with what was removed. A pass already under way makes this one do nothing. */
  async collect(): Promise<ContainerGCResult> {
    return this.pass(this.o.policy);
  }

  /**
   * kubelet's DeleteAllUnusedContainers (the eviction manager's reclaim under disk pressure): every
   * dead container old enough per --minimum-container-ttl-duration, whatever the caps.
   */
  async deleteAllUnused(): Promise<ContainerGCResult> {
    return this.pass({ minAgeMs: this.o.policy.minAgeMs, maxPerPodContainer: 0, maxContainers: 0 });
  }

  private async pass(policy: ContainerGCPolicy): Promise<ContainerGCResult> {
    const out: ContainerGCResult = { containers: [], sandboxes: [] };
    if (this.running) return out;
    this.running = true;
    try {
      await this.evictContainers(out, policy);
      await this.evictSandboxes(out);
    } finally {
      this.running = false;
    }
    return out;
  }

  private async remove(id: string, out: ContainerGCResult): Promise<void> {
    try {
      await this.o.runtime.removeContainer(id);
      out.containers.push(id);
    } catch (err) {
      this.o.log?.('error', `container garbage collection: removing container ${id}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  /** Removes the oldest `n` of a unit (sorted newest first); returns what is left. */
  private async removeOldest(unit: DeadContainer[], n: number, out: ContainerGCResult): Promise<DeadContainer[]> {
    const keep = Math.max(0, unit.length - n);
    for (const c of unit.slice(keep)) await this.remove(c.id, out);
    return unit.slice(0, keep);
  }

  private async evictContainers(out: ContainerGCResult, p: ContainerGCPolicy): Promise<void> {
    const newest = this.now() - p.minAgeMs;
    const all = await this.o.runtime.listContainers();
    const units = new Map<string, DeadContainer[]>();
    const uidOf = new Map<string, string>();
    for (const c of all) {
      if (c.state === 'CONTAINER_RUNNING') continue;
      if (c.createdAt.getTime() > newest) continue;
      const uid = c.labels[LABEL_POD_UID] ?? '';
      const key = `${uid}/${containerName(c)}`;
      uidOf.set(key, uid);
      units.set(key, [...(units.get(key) ?? []), { id: c.id, createdAt: c.createdAt.getTime() }]);
    }
    for (const unit of units.values()) unit.sort((a, b) => b.createdAt - a.createdAt);
    if (this.o.allSourcesReady()) {
      for (const [key, unit] of units) {
        if (this.o.podExists(uidOf.get(key)!)) continue;
        await this.removeOldest(unit, unit.length, out);
        units.delete(key);
      }
    }
    const perUnit = async (max: number): Promise<void> => {
      for (const [key, unit] of units) units.set(key, await this.removeOldest(unit, unit.length - max, out));
    };
    if (p.maxPerPodContainer >= 0) await perUnit(p.maxPerPodContainer);
    if (p.maxContainers >= 0) {
      const total = (): number => [...units.values()].reduce((n, u) => n + u.length, 0);
      if (total() > p.maxContainers && units.size > 0) {
        await perUnit(Math.max(1, Math.floor(p.maxContainers / units.size)));
        const left = [...units.values()].flat().sort((a, b) => b.createdAt - a.createdAt);
        if (left.length > p.maxContainers) await this.removeOldest(left, left.length - p.maxContainers, out);
      }
    }
  }

  private async evictSandboxes(out: ContainerGCResult): Promise<void> {
    const sandboxes = await this.o.runtime.listPodSandbox();
    const withContainers = new Set((await this.o.runtime.listContainers()).map((c) => c.podSandboxId));
    const byPod = new Map<string, PodSandbox[]>();
    for (const s of sandboxes) {
      const uid = s.metadata.uid !== '' ? s.metadata.uid : (s.labels[LABEL_POD_UID] ?? '');
      byPod.set(uid, [...(byPod.get(uid) ?? []), s]);
    }
    const ready = this.o.allSourcesReady();
    for (const [uid, list] of byPod) {
      list.sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime());
      const keep = ready && !this.o.podExists(uid) ? 0 : 1;
      for (const s of list.slice(keep)) {
        if (s.state === 'SANDBOX_READY' || withContainers.has(s.id)) continue;
        try {
          await this.o.runtime.removePodSandbox(s.id);
          out.sandboxes.push(s.id);
        } catch (err) {
          this.o.log?.('error', `container garbage collection: removing sandbox ${s.id}: ${err instanceof Error ? err.message : String(err)}`);
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The container deletor (kubelet's podContainerDeletor): dead containers removed as they die

/** kubelet's containerDeletorBufferLimit: removals waiting beyond this many are dropped (the periodic GC gets them). */
export const DELETOR_BUFFER_LIMIT = 50;
/** kubelet's minDeadContainerInPod: the deletor keeps at least this many dead instances per container. */
export const MIN_DEAD_CONTAINER_IN_POD = 1;

export interface ContainerDeletorOptions {
  runtime: Runtime;
  /** --maximum-dead-containers-per-container: the deletor keeps max(this, 1) per container. */
  maxPerPodContainer: number;
  /**
   * kubelet's ShouldPodContentBeRemoved: whether every dead container of the pod goes (it was
   * evicted, or deleted and terminated, or the agent does not hold it once its sources are ready).
   */
  removeAll: (uid: string) => boolean;
  log?: (level: 'info' | 'error', message: string) => void;
}

/**
 * kubelet's podContainerDeletor, fed by the ContainerDied events of its PLEG (cleanUpContainersInPod):
 * when a container dies, the exited containers of the same pod and container name beyond the newest
 * max(--maximum-dead-containers-per-container, 1) are removed (newest: highest attempt, then latest
 * created); when the pod's content should go, every exited container of the pod. Containers that are
 * created and never started, or of unknown state, are not the deletor's. Removals run one at a time,
 * in order; at most 50 wait (more are dropped with a warning, left to the periodic collection).
 */
export class PodContainerDeletor {
  readonly containersToKeep: number;
  /** Deaths waiting to be looked at, in order. */
  private chain: Promise<void> = Promise.resolve();
  /** Removals asked for and not yet done (kubelet's buffered channel), and the loop working on them. */
  private readonly queue: string[] = [];
  private working: Promise<void> | undefined;

  constructor(private readonly o: ContainerDeletorOptions) {
    this.containersToKeep = Math.max(o.maxPerPodContainer, MIN_DEAD_CONTAINER_IN_POD);
  }

  /** A ContainerDied event of container `id`. */
  containerDied(id: string): void {
    this.chain = this.chain
      .then(() => this.cleanUp(id))
      .catch((err: unknown) => this.o.log?.('error', `[pod_container_deletor] ${err instanceof Error ? err.message : String(err)}`));
  }

  /** Resolves when every death reported so far was looked at and the removals it asked for are done. */
  async idle(): Promise<void> {
    await this.chain;
    while (this.working) await this.working;
  }

  /**
   * The containers to remove after container `id` died, from the runtime's containers now (kubelet's
   * getContainersToDeleteInPod); undefined when `id` is not among them.
   */
  static toDelete(all: readonly ContainerSummary[], id: string, keep: number, removeAll: (uid: string) => boolean): string[] | undefined {
    const died = all.find((c) => c.id === id);
    if (!died) return undefined;
    const uid = died.labels[LABEL_POD_UID] ?? '';
    const everything = removeAll(uid);
    const name = containerName(died);
    const candidates = all.filter(
      (c) => c.state === 'CONTAINER_EXITED' && (c.labels[LABEL_POD_UID] ?? '') === uid && (everything || containerName(c) === name),
    );
    const n = everything ? 0 : keep;
    if (candidates.length <= n) return [];
    candidates.sort((a, b) => b.metadata.attempt - a.metadata.attempt || b.createdAt.getTime() - a.createdAt.getTime());
    return candidates.slice(n).map((c) => c.id);
  }

  private async cleanUp(id: string): Promise<void> {
    const ids = PodContainerDeletor.toDelete(await this.o.runtime.listContainers(), id, this.containersToKeep, this.o.removeAll);
    if (ids === undefined) {
      this.o.log?.('info', `Container "${id}" not found in pod's containers`);
      return;
    }
    for (const victim of ids) {
      if (this.queue.length >= DELETOR_BUFFER_LIMIT) {
        this.o.log?.('error', `Failed to issue the request to remove container ${victim}`);
        continue;
      }
      this.queue.push(victim);
    }
    if (this.queue.length > 0 && this.working === undefined) this.working = this.work();
  }

  private async work(): Promise<void> {
    await Promise.resolve(); // this.working is set before the loop can end
    try {
      for (let id = this.queue.shift(); id !== undefined; id = this.queue.shift()) {
        try {
          await this.o.runtime.removeContainer(id);
        } catch (err) {
          this.o.log?.('error', `[pod_container_deletor] DeleteContainer returned error for (id=${id}): ${err instanceof Error ? err.message : String(err)}`);
        }
      }
    } finally {
      this.working = undefined;
    }
  }
}

function containerName(c: ContainerSummary): string {
  return c.labels[LABEL_CONTAINER_NAME] ?? c.metadata.name;
}

// ---------------------------------------------------------------------------------------------
// Images

export interface ImageGCPolicy {
  /** --image-gc-high-threshold (percent; 100 disables collection). */
  highThresholdPercent: number;
  /** --image-gc-low-threshold (percent). */
  lowThresholdPercent: number;
  /** --minimum-image-ttl-duration in ms. */
  minAgeMs: number;
}

export const DEFAULT_IMAGE_GC: ImageGCPolicy = { highThresholdPercent: 85, lowThresholdPercent: 80, minAgeMs: 120_000 };

/** Capacity and available bytes of the filesystem holding the images. */
export interface FsStats {
  capacity: number;
  available: number;
}

export interface ImageGCOptions {
  images: ImageService;
  /** The containers of every state (their images are in use). */
  containers: () => Promise<ContainerSummary[]>;
  policy: ImageGCPolicy;
  /** The image filesystem's size now; undefined when it cannot be told. */
  fsStats: () => Promise<FsStats | undefined>;
  /** kubelet's node events (FreeDiskSpaceFailed, InvalidDiskCapacity). */
  event?: (type: 'Normal' | 'Warning', reason: string, message: string) => void;
  now?: () => number;
  log?: (level: 'info' | 'error', message: string) => void;
}

interface ImageRecord {
  firstDetected: number;
  lastUsed: number;
  size: number;
  pinned: boolean;
}

export interface ImageGCResult {
  /** Whether the usage was at or above the high threshold. */
  triggered: boolean;
  usagePercent?: number;
  removed: string[];
  freedBytes: number;
}

/** Whether image `i` is what container image reference `ref` names (its id, a tag or a digest). */
function imageMatches(i: ImageInfo, ref: string): boolean {
  return i.id === ref || i.repoTags.includes(ref) || i.repoDigests.includes(ref);
}

export class ImageGC {
  private readonly records = new Map<string, ImageRecord>();
  private initialized = false;
  private readonly now: () => number;
  private running = false;

  constructor(private readonly o: ImageGCOptions) {
    this.now = o.now ?? Date.now;
  }

  /** Records the images now present and marks those in use; returns the ids in use. */
  async detect(): Promise<Set<string>> {
    const now = this.now();
    // Images present at the first detection count as detected long ago (kubelet's zero time).
    const detectedAt = this.initialized ? now : 0;
    const [images, containers] = await Promise.all([this.o.images.listImages(), this.o.containers()]);
    const refs = new Set(containers.map((c) => c.image));
    const inUse = new Set<string>();
    for (const i of images) {
      if ([...refs].some((r) => imageMatches(i, r))) inUse.add(i.id);
    }
    const present = new Set<string>();
    for (const i of images) {
      present.add(i.id);
      let r = this.records.get(i.id);
      if (!r) {
        r = { firstDetected: detectedAt, lastUsed: 0, size: i.size, pinned: i.pinned === true };
        this.records.set(i.id, r);
      }
      if (inUse.has(i.id)) r.lastUsed = now;
      r.size = i.size;
      r.pinned = i.pinned === true;
    }
    for (const id of [...this.records.keys()]) if (!present.has(id)) this.records.delete(id);
    this.initialized = true;
    return inUse;
  }

  /** One collection per the policy. */
  async collect(): Promise<ImageGCResult> {
    const result: ImageGCResult = { triggered: false, removed: [], freedBytes: 0 };
    const p = this.o.policy;
    if (p.highThresholdPercent >= 100 || this.running) return result;
    this.running = true;
    try {
      const fs = await this.o.fsStats();
      if (!fs) return result;
      if (fs.capacity <= 0) {
        this.o.event?.('Warning', 'InvalidDiskCapacity', 'invalid capacity 0 on image filesystem');
        return result;
      }
      const available = Math.min(fs.available, fs.capacity);
      const usagePercent = 100 - Math.floor((available * 100) / fs.capacity);
      result.usagePercent = usagePercent;
      if (usagePercent < p.highThresholdPercent) return result;
      result.triggered = true;
      const toFree = Math.floor((fs.capacity * (100 - p.lowThresholdPercent)) / 100) - available;
      this.o.log?.('info', `image filesystem usage is ${usagePercent}%, at or above the high threshold ${p.highThresholdPercent}%: freeing ${toFree} bytes down to the low threshold ${p.lowThresholdPercent}%`);
      const freed = await this.freeSpace(toFree, result);
      if (freed < toFree) {
        const message = `failed to garbage collect required amount of images. Wanted to free ${toFree} bytes, but freed ${freed} bytes`;
        this.o.event?.('Warning', 'FreeDiskSpaceFailed', message);
        this.o.log?.('error', `image garbage collection: ${message}`);
      }
      return result;
    } finally {
      this.running = false;
    }
  }

  /**
   * kubelet's DeleteUnusedImages (the eviction manager's reclaim under disk pressure): every unused
   * image that is not pinned and was first seen at least --minimum-image-ttl-duration ago.
   */
  async deleteUnused(): Promise<ImageGCResult> {
    const result: ImageGCResult = { triggered: true, removed: [], freedBytes: 0 };
    await this.freeSpace(Number.MAX_SAFE_INTEGER, result);
    return result;
  }

  /** Removes unused images, least recently used first, until `bytes` are freed; returns the bytes freed. */
  async freeSpace(bytes: number, result: ImageGCResult = { triggered: true, removed: [], freedBytes: 0 }): Promise<number> {
    const inUse = await this.detect();
    const freeTime = this.now();
    const candidates = [...this.records.entries()]
      .filter(([id]) => !inUse.has(id))
      .sort(([, a], [, b]) => (a.lastUsed !== b.lastUsed ? a.lastUsed - b.lastUsed : a.firstDetected - b.firstDetected));
    for (const [id, r] of candidates) {
      if (result.freedBytes >= bytes) break;
      if (r.lastUsed >= freeTime) continue;
      if (freeTime - r.firstDetected < this.o.policy.minAgeMs) continue;
      if (r.pinned) continue;
      try {
        await this.o.images.removeImage(id);
      } catch (err) {
        this.o.log?.('error', `image garbage collection: removing image ${id}: ${err instanceof Error ? err.message : String(err)}`);
        continue;
      }
      this.records.delete(id);
      result.removed.push(id);
      result.freedBytes += r.size;
    }
    return result.freedBytes;
  }
}

/** Most names kubelet lists per image in node status (MaxNamesPerImageInNodeStatus). */
export const MAX_NAMES_PER_IMAGE = 5;

/** The node status `images` list: largest first, at most `maxImages` (negative: all), each with at most 5 names (digests, then tags). */
export function nodeImages(images: ImageInfo[], maxImages: number): { names: string[]; sizeBytes: number }[] {
  const sorted = [...images].sort((a, b) => b.size - a.size);
  const chosen = maxImages >= 0 ? sorted.slice(0, maxImages) : sorted;
  return chosen.map((i) => ({ names: [...i.repoDigests, ...i.repoTags].slice(0, MAX_NAMES_PER_IMAGE), sizeBytes: i.size }));
}
