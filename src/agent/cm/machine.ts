// The machine's CPU and NUMA topology, as cAdvisor's MachineInfo gives it to kubelet's resource
// managers: each online logical CPU with its core, socket and NUMA node, and each NUMA node's
// memory. Read from sysfs (/sys/devices/system/cpu and /sys/devices/system/node); `sysRoot` lets
// tests point at a fake tree. A machine without node directories is one NUMA node 0 holding every
// CPU and all memory.
import { readdirSync, readFileSync } from 'node:fs';
import { totalmem } from 'node:os';
import { join } from 'node:path';
import { CPUSet } from './cpuset.js';

export interface CPUInfo {
  id: number;
  core: number;
  socket: number;
  numa: number;
}

export interface MachineTopology {
  cpus: CPUInfo[];
  /** NUMA node id → its memory in bytes. */
  numaMemory: Map<number, number>;
  /** NUMA node id → hugepages resource name (hugepages-2Mi, hugepages-1Gi) → bytes of pages set aside. */
  numaHugepages: Map<number, Map<string, number>>;
}

/** The resource name of a hugepage size in kB: hugepages-2Mi, hugepages-1Gi. */
export function hugepageResource(kb: number): string {
  if (kb % (1024 * 1024) === 0) return `hugepages-${kb / (1024 * 1024)}Gi`;
  if (kb % 1024 === 0) return `hugepages-${kb / 1024}Mi`;
  return `hugepages-${kb}Ki`;
}

function read(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    return undefined;
  }
}

function listDir(path: string): string[] {
  try {
    return readdirSync(path);
  } catch {
    return [];
  }
}

/** Reads the topology of this machine (or of the sysfs tree under `sysRoot`). */
export function readMachineTopology(sysRoot = '/sys'): MachineTopology {
  const cpuDir = join(sysRoot, 'devices/system/cpu');
  const nodeDir = join(sysRoot, 'devices/system/node');
  const online = CPUSet.parse(read(join(cpuDir, 'online')) ?? '0');
  const numaOf = new Map<number, number>();
  const numaMemory = new Map<number, number>();
  const numaHugepages = new Map<number, Map<string, number>>();
  const nodes = listDir(nodeDir).filter((n) => /^node\d+$/.test(n));
  for (const n of nodes) {
    const id = Number(n.slice(4));
    const cpus = CPUSet.parse(read(join(nodeDir, n, 'cpulist')) ?? '');
    for (const c of cpus.toArray()) numaOf.set(c, id);
    const meminfo = read(join(nodeDir, n, 'meminfo')) ?? '';
    const kb = /MemTotal:\s+(\d+)\s*kB/.exec(meminfo)?.[1];
    numaMemory.set(id, kb !== undefined ? Number(kb) * 1024 : 0);
    const pages = new Map<string, number>();
    for (const dir of listDir(join(nodeDir, n, 'hugepages'))) {
      const size = /^hugepages-(\d+)kB$/.exec(dir)?.[1];
      if (size === undefined) continue;
      const count = Number(read(join(nodeDir, n, 'hugepages', dir, 'nr_hugepages')) ?? 0);
      pages.set(hugepageResource(Number(size)), count * Number(size) * 1024);
    }
    numaHugepages.set(id, pages);
  }
  if (numaMemory.size === 0) numaMemory.set(0, totalmem());
  const cpus: CPUInfo[] = online.toArray().map((id) => {
    const topo = join(cpuDir, `cpu${id}`, 'topology');
    const core = Number(read(join(topo, 'core_id')) ?? id);
    const socket = Number(read(join(topo, 'physical_package_id')) ?? 0);
    return { id, core, socket, numa: numaOf.get(id) ?? 0 };
  });
  return { cpus, numaMemory, numaHugepages };
}

/**
 * The CPU topology the CPU manager works with (kubelet's topology.CPUTopology): cores are
 * identified by (socket, core id) since core ids repeat across sockets; each gets a unique number.
 */
export class CPUTopology {
  readonly details: Map<number, { core: number; socket: number; numa: number }>;

  constructor(cpus: CPUInfo[]) {
    this.details = new Map();
    const coreKeys = new Map<string, number>();
    for (const c of [...cpus].sort((a, b) => a.id - b.id)) {
      const key = `${c.socket}/${c.core}`;
      // kubelet numbers a core by its lowest CPU id
      if (!coreKeys.has(key)) coreKeys.set(key, c.id);
      this.details.set(c.id, { core: coreKeys.get(key)!, socket: c.socket, numa: c.numa });
    }
  }

  get numCPUs(): number {
    return this.details.size;
  }

  cpus(): CPUSet {
    return new CPUSet(this.details.keys());
  }

  cores(): number[] {
    return [...new Set([...this.details.values()].map((d) => d.core))].sort((a, b) => a - b);
  }

  sockets(): number[] {
    return [...new Set([...this.details.values()].map((d) => d.socket))].sort((a, b) => a - b);
  }

  numaNodes(): number[] {
    return [...new Set([...this.details.values()].map((d) => d.numa))].sort((a, b) => a - b);
  }

  cpusPerCore(): number {
    const cores = this.cores().length;
    return cores === 0 ? 0 : this.numCPUs / cores;
  }

  cpusWhere(pred: (d: { core: number; socket: number; numa: number }) => boolean): CPUSet {
    return new CPUSet([...this.details].filter(([, d]) => pred(d)).map(([id]) => id));
  }

  cpusInCores(...cores: number[]): CPUSet {
    return this.cpusWhere((d) => cores.includes(d.core));
  }

  cpusInSockets(...sockets: number[]): CPUSet {
    return this.cpusWhere((d) => sockets.includes(d.socket));
  }

  cpusInNUMANodes(...nodes: number[]): CPUSet {
    return this.cpusWhere((d) => nodes.includes(d.numa));
  }
}
