// --kernel-memcg-notification (and the deprecated --experimental-kernel-memcg-notification).
//
// kubelet, on cgroup v1, registers a threshold on the root memory cgroup's memory.usage_in_bytes
// (cgroup.event_control with an eventfd) for each memory.available eviction threshold, and runs the
// eviction manager's synchronize when the kernel signals that usage crossed it; the threshold is
// capacity − eviction threshold + inactive_file (usage at which the working set reaches the
// threshold), renewed every 10 s. Node.js cannot create an eventfd, so orchlet polls the same
// usage against the same threshold every pollMs (default 1 s, ten times faster than the 10 s
// eviction monitoring) and, on a crossing in either direction (eventfd thresholds fire both ways),
// runs the eviction pass at once. Without the option the eviction manager polls every 10 s only.
// allocatableMemory.available thresholds are watched the same way on the pods' cgroup (kubepods),
// whose memory limit is their capacity.
import { readFile } from 'node:fs/promises';
import type { Threshold } from '../eviction.js';
import type { CgroupFs } from './fs.js';

export interface MemcgNotifierOptions {
  fs: CgroupFs;
  /** The memory.available and allocatableMemory.available eviction thresholds (hard and soft). */
  thresholds: readonly Threshold[];
  /** The pods' cgroup (for allocatableMemory.available); those thresholds are not watched without it. */
  podsCgroup?: string;
  /** The eviction manager's synchronize. */
  onCrossing: (message: string) => void;
  pollMs?: number;
  /** How often the threshold is worked out again (kubelet: 10 s). */
  refreshMs?: number;
  log?: (level: 'info' | 'error', message: string) => void;
}

interface Watch {
  threshold: Threshold;
  /** The memory cgroup watched: '/' (the node) or the pods' cgroup. */
  cgroup: string;
  /** The usage_in_bytes value that means the threshold is reached. */
  usageLimit?: number;
  above?: boolean;
}

async function memTotal(): Promise<number | undefined> {
  const text = await readFile('/proc/meminfo', 'utf8').catch(() => '');
  const m = /^MemTotal:\s+(\d+) kB/m.exec(text);
  return m ? Number(m[1]) * 1024 : undefined;
}

export class MemcgNotifier {
  private readonly watches: Watch[];
  private pollTimer: NodeJS.Timeout | undefined;
  private refreshTimer: NodeJS.Timeout | undefined;
  private busy = false;

  constructor(private readonly o: MemcgNotifierOptions) {
    this.watches = [];
    for (const threshold of o.thresholds) {
      if (threshold.signal === 'memory.available') this.watches.push({ threshold, cgroup: '/' });
      if (threshold.signal === 'allocatableMemory.available' && o.podsCgroup !== undefined) this.watches.push({ threshold, cgroup: o.podsCgroup });
    }
  }

  get active(): boolean {
    return this.watches.length > 0;
  }

  async start(): Promise<void> {
    if (!this.active) return;
    await this.refresh();
    // the side of each threshold usage is on when it is registered (the kernel's eventfd notification then
    // fires on the next crossing): without this, usage that crossed before the first poll went unnoticed
    await this.poll();
    this.o.log?.('info', `memory threshold notification: polling the root memory cgroup's usage every ${this.o.pollMs ?? 1000} ms (no eventfd in Node.js)`);
    this.pollTimer = setInterval(() => void this.poll(), this.o.pollMs ?? 1000);
    this.pollTimer.unref();
    this.refreshTimer = setInterval(() => void this.refresh(), this.o.refreshMs ?? 10_000);
    this.refreshTimer.unref();
  }

  stop(): void {
    clearInterval(this.pollTimer);
    clearInterval(this.refreshTimer);
  }

  /**
   * A cgroup's usage, inactive file pages and capacity: the root's (v1; on v2 the node's, from
   * /proc/meminfo) against MemTotal, the pods' cgroup's against its limit.
   */
  private async usage(cgroup: string): Promise<{ usage: number; inactiveFile: number; capacity: number } | undefined> {
    if (cgroup !== '/') {
      const [capacity, usage, inactiveFile] = await Promise.all([this.o.fs.memoryLimit(cgroup), this.o.fs.memoryUsage(cgroup), this.o.fs.memoryStat(cgroup, 'total_inactive_file')]);
      return capacity !== undefined && usage !== undefined ? { usage, inactiveFile: inactiveFile ?? 0, capacity } : undefined;
    }
    const capacity = await memTotal();
    if (capacity === undefined) return undefined;
    if (!this.o.fs.unified) {
      const usage = await this.o.fs.memoryUsage('/');
      const inactiveFile = await this.o.fs.memoryStat('/', 'total_inactive_file');
      if (usage !== undefined) return { usage, inactiveFile: inactiveFile ?? 0, capacity };
    }
    const text = await readFile('/proc/meminfo', 'utf8').catch(() => '');
    const kb = (k: string): number => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0) * 1024;
    return { usage: capacity - kb('MemFree'), inactiveFile: kb('Inactive\\(file\\)'), capacity };
  }

  /** UpdateThreshold: usage limit = capacity − threshold + inactive_file. */
  private async refresh(): Promise<void> {
    for (const w of this.watches) {
      const u = await this.usage(w.cgroup);
      if (!u) continue;
      const t = w.threshold;
      const amount = t.quantity ?? Math.round((t.percent ?? 0) * u.capacity);
      w.usageLimit = u.capacity - amount + u.inactiveFile;
    }
  }

  private async poll(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      for (const w of this.watches) {
        if (w.usageLimit === undefined) continue;
        const u = await this.usage(w.cgroup);
        if (!u) continue;
        const above = u.usage >= w.usageLimit;
        const crossed = w.above !== undefined && above !== w.above;
        w.above = above;
        if (crossed) {
          const where = w.cgroup === '/' ? 'memory usage' : `memory usage of ${w.cgroup}`;
          this.o.onCrossing(`eviction manager: ${where} ${u.usage} crossed ${w.usageLimit} (${w.threshold.signal}<${w.threshold.text}); synchronizing`);
        }
      }
    } finally {
      this.busy = false;
    }
  }
}

/**
 * addAllocatableThresholds: with 'pods' in --enforce-node-allocatable, each hard memory.available
 * threshold gets an allocatableMemory.available twin (same value and minimum reclaim), met when the
 * pods' cgroup runs short of memory under its limit.
 */
export function addAllocatableThresholds(thresholds: readonly Threshold[], enforce: readonly string[]): Threshold[] {
  if (!enforce.includes('pods')) return [...thresholds];
  const twins = thresholds.filter((t) => t.signal === 'memory.available' && t.hard).map((t): Threshold => ({ ...t, signal: 'allocatableMemory.available' }));
  return [...thresholds, ...twins];
}
