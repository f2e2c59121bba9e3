// The state files of the CPU and memory managers (`cpu_manager_state`, `memory_manager_state` in
// --root-dir), in kubelet's checkpoint format: Go's JSON of the checkpoint struct with a checksum
// that kubelet computes as FNV-32a over go-spew's "%#v" rendering of the struct (checksum field 0).
// The renderings below reproduce that for exactly these two structs, so files move between kubelet
// and orchlet both ways (tested against checksums kubelet's own tests carry). Files are written to
// a temporary name and renamed, as kubelet's file store does.
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** FNV-1a, 32 bits. */
export function fnv32a(text: string): number {
  let h = 0x811c9dc5;
  for (const b of Buffer.from(text, 'utf8')) {
    h ^= b;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

const byteOrder = (a: string, b: string): number => (Buffer.from(a) < Buffer.from(b) ? -1 : Buffer.from(a) > Buffer.from(b) ? 1 : 0);
const sortedKeys = (o: object): string[] => Object.keys(o).sort(byteOrder);

/** Go's json.Marshal key order (maps sorted by key); `undefined` fields dropped (omitempty). */
function goJSON(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(goJSON).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const o = value as Record<string, unknown>;
    return `{${Object.keys(o)
      .filter((k) => o[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${goJSON(o[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

function sortMap<T>(m: Record<string, T>, numeric = false): Record<string, T> {
  const keys = numeric ? Object.keys(m).sort((a, b) => Number(a) - Number(b)) : sortedKeys(m);
  return Object.fromEntries(keys.map((k) => [k, m[k]!]));
}

function writeFileAtomic(path: string, text: string): void {
  mkdirSync(dirname(path), { recursive: true });
  const tmp = join(dirname(path), `.${Date.now()}.${process.pid}.tmp`);
  writeFileSync(tmp, text, { mode: 0o644 });
  renameSync(tmp, path);
}

/** Reads a checkpoint file; undefined when it does not exist. */
export function readCheckpointFile(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

// ---- CPU manager ----------------------------------------------------------------------------

export interface CPUCheckpoint {
  policyName: string;
  defaultCpuSet: string;
  /** pod uid → container name → cpuset */
  entries: Record<string, Record<string, string>>;
}

function cpuSpew(c: CPUCheckpoint): string {
  const entries = sortedKeys(c.entries)
    .map((pod) => {
      const inner = c.entries[pod]!;
      return `${pod}:map[${sortedKeys(inner)
        .map((name) => `${name}:${inner[name]!}`)
        .join(' ')}]`;
    })
    .join(' ');
  return (
    `(*state.CPUManagerCheckpoint){PolicyName:(string)${c.policyName} DefaultCPUSet:(string)${c.defaultCpuSet} ` +
    `Entries:(map[string]map[string]string)map[${entries}] Checksum:(checksum.Checksum)0}`
  );
}

export function cpuChecksum(c: CPUCheckpoint): number {
  return fnv32a(cpuSpew(c));
}

export function encodeCPUCheckpoint(c: CPUCheckpoint): string {
  const entries = Object.keys(c.entries).length > 0 ? sortMap(Object.fromEntries(Object.entries(c.entries).map(([k, v]) => [k, sortMap(v)]))) : undefined;
  return goJSON({ policyName: c.policyName, defaultCpuSet: c.defaultCpuSet, entries, checksum: cpuChecksum(c) });
}

const stringField = (v: unknown): string => (typeof v === 'string' ? v : '');

/** Parses and verifies a CPU manager checkpoint; throws 'checkpoint is corrupted' on a bad checksum. */
export function decodeCPUCheckpoint(text: string): CPUCheckpoint {
  const raw = JSON.parse(text) as Record<string, unknown>;
  // Go's decoder matches field names case-insensitively
  const field = (name: string): unknown => raw[Object.keys(raw).find((k) => k.toLowerCase() === name.toLowerCase()) ?? name];
  const entries = (field('entries') ?? {}) as Record<string, unknown>;
  for (const [pod, v] of Object.entries(entries)) {
    if (v === null || typeof v !== 'object') throw new Error(`json: cannot unmarshal string into Go struct field CPUManagerCheckpoint.entries of type map[string]string (pod ${pod})`);
  }
  const c: CPUCheckpoint = {
    policyName: stringField(field('policyName')),
    defaultCpuSet: stringField(field('defaultCpuSet')),
    entries: entries as Record<string, Record<string, string>>,
  };
  const sum = Number(field('checksum') ?? 0);
  if (sum !== 0 && sum !== cpuChecksum(c)) throw new Error('checkpoint is corrupted');
  return c;
}

export function writeCPUCheckpoint(path: string, c: CPUCheckpoint): void {
  writeFileAtomic(path, encodeCPUCheckpoint(c));
}

// ---- memory manager -------------------------------------------------------------------------

export interface MemoryTable {
  total: number;
  systemReserved: number;
  allocatable: number;
  reserved: number;
  free: number;
}

export interface NUMANodeState {
  numberOfAssignments: number;
  /** resource name (memory, hugepages-<size>) → table */
  memoryMap: Record<string, MemoryTable>;
  cells: number[];
}

export interface MemoryBlock {
  numaAffinity: number[];
  type: string;
  size: number;
}

export interface MemoryCheckpoint {
  policyName: string;
  /** NUMA node id → state */
  machineState: Record<string, NUMANodeState>;
  /** pod uid → container name → blocks */
  entries: Record<string, Record<string, MemoryBlock[]>>;
}

const ints = (l: number[] | null): string => (l === null ? '<nil>' : `[${l.join(' ')}]`);

function memorySpew(c: MemoryCheckpoint): string {
  const nodes = Object.keys(c.machineState)
    .sort((a, b) => Number(a) - Number(b))
    .map((id) => {
      const n = c.machineState[id]!;
      const tables = sortedKeys(n.memoryMap)
        .map((r) => {
          const t = n.memoryMap[r]!;
          return (
            `${r}:<*>{TotalMemSize:(uint64)${t.total} SystemReserved:(uint64)${t.systemReserved} Allocatable:(uint64)${t.allocatable} ` +
            `Reserved:(uint64)${t.reserved} Free:(uint64)${t.free}}`
          );
        })
        .join(' ');
      return `${id}:<*>{NumberOfAssignments:(int)${n.numberOfAssignments} MemoryMap:(map[v1.ResourceName]*state.MemoryTable)map[${tables}] Cells:([]int)${ints(n.cells)}}`;
    })
    .join(' ');
  const entries = sortedKeys(c.entries)
    .map((pod) => {
      const inner = c.entries[pod]!;
      const containers = sortedKeys(inner)
        .map((name) => {
          const blocks = inner[name]!.map((b) => `{NUMAAffinity:([]int)${ints(b.numaAffinity)} Type:(v1.ResourceName)${b.type} Size:(uint64)${b.size}}`);
          return `${name}:[${blocks.join(' ')}]`;
        })
        .join(' ');
      return `${pod}:map[${containers}]`;
    })
    .join(' ');
  return (
    `(*state.MemoryManagerCheckpoint){PolicyName:(string)${c.policyName} MachineState:(state.NUMANodeMap)map[${nodes}] ` +
    `Entries:(state.ContainerMemoryAssignments)map[${entries}] Checksum:(checksum.Checksum)0}`
  );
}

export function memoryChecksum(c: MemoryCheckpoint): number {
  return fnv32a(memorySpew(c));
}

export function encodeMemoryCheckpoint(c: MemoryCheckpoint): string {
  const machineState = sortMap(
    Object.fromEntries(
      Object.entries(c.machineState).map(([id, n]) => [
        id,
        { numberOfAssignments: n.numberOfAssignments, memoryMap: sortMap(n.memoryMap), cells: n.cells },
      ]),
    ),
    true,
  );
  const entries = Object.keys(c.entries).length > 0 ? sortMap(Object.fromEntries(Object.entries(c.entries).map(([k, v]) => [k, sortMap(v)]))) : undefined;
  return goJSON({ policyName: c.policyName, machineState, entries, checksum: memoryChecksum(c) });
}

export function decodeMemoryCheckpoint(text: string): MemoryCheckpoint {
  const raw = JSON.parse(text) as {
    policyName?: string;
    machineState?: Record<string, Partial<NUMANodeState>> | null;
    entries?: MemoryCheckpoint['entries'] | null;
    checksum?: number;
  };
  const machineState: Record<string, NUMANodeState> = {};
  for (const [id, n] of Object.entries(raw.machineState ?? {})) {
    machineState[id] = { numberOfAssignments: n.numberOfAssignments ?? 0, memoryMap: n.memoryMap ?? {}, cells: n.cells ?? [] };
  }
  const c: MemoryCheckpoint = { policyName: raw.policyName ?? '', machineState, entries: raw.entries ?? {} };
  const sum = raw.checksum ?? 0;
  if (sum !== 0 && sum !== memoryChecksum(c)) throw new Error('checkpoint is corrupted');
  return c;
}

export function writeMemoryCheckpoint(path: string, c: MemoryCheckpoint): void {
  writeFileAtomic(path, encodeMemoryCheckpoint(c));
}
