/** The figures a benchmark prints and returns: one row per metric. */
export interface BenchRow {
  metric: string;
  value: number;
  unit: string;
}

/** Returns `add(metric, value, unit)`, which rounds the value to two decimals, keeps the row and prints it. */
export function rowRecorder(rows: BenchRow[]): (metric: string, v: number, unit: string) => void {
  return (metric, v, unit) => {
    const value = Math.round(v * 100) / 100;
    rows.push({ metric, value, unit });
    console.log(`  ${metric.padEnd(58)} ${value.toLocaleString('en').padStart(10)} ${unit}`);
  };
}

/** The median of some figures (the mean of the middle two for an even count). */
export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** One server configuration of a comparison bench. */
export interface CompareSetup {
  key: string;
  label: string;
}

/** What one run of a setup measured. */
export interface CompareResult {
  opsPerSec: number;
  serverCpuUsPerOp: number | null;
}

/**
 * Runs every setup once per round, in an order rotated each round (so no setup always runs first on a
 * machine that warms up or gets busier), prints each round, then records the medians: creates/s and
 * server CPU per create for each setup, and for the others their cost against the baseline setup.
 */
export async function compareSetups<S extends CompareSetup>(opts: {
  setups: readonly S[];
  baseline: string;
  baselineLabel: string;
  rounds: number;
  measure: (setup: S) => Promise<CompareResult>;
  add: (metric: string, v: number, unit: string) => void;
}): Promise<void> {
  const { setups, baseline, rounds, add } = opts;
  const results = new Map<string, CompareResult[]>(setups.map((s) => [s.key, []]));
  for (let round = 0; round < rounds; round++) {
    const order = setups.map((_, i) => setups[(i + round) % setups.length]!);
    const line: string[] = [];
    for (const setup of order) {
      const r = await opts.measure(setup);
      results.get(setup.key)!.push(r);
      line.push(`${setup.key} ${Math.round(r.opsPerSec)}/s ${r.serverCpuUsPerOp === null ? '?' : Math.round(r.serverCpuUsPerOp)}us`);
    }
    console.log(`  (round ${round + 1}: ${line.join(', ')})`);
  }
  const ops = (key: string): number => median(results.get(key)!.map((r) => r.opsPerSec));
  const cpus = (key: string): number[] => results.get(key)!.flatMap((r) => (r.serverCpuUsPerOp === null ? [] : [r.serverCpuUsPerOp]));
  const baseOps = ops(baseline);
  const baseCpu = cpus(baseline).length > 0 ? median(cpus(baseline)) : undefined;
  for (const setup of setups) {
    add(`PVC creates/s, ${setup.label}`, ops(setup.key), 'ops/s');
    const c = cpus(setup.key);
    const cpu = c.length > 0 ? median(c) : undefined;
    if (cpu !== undefined) add(`  server CPU per create`, cpu, 'us');
    if (setup.key === baseline) continue;
    add(`  throughput cost against ${opts.baselineLabel}`, (1 - ops(setup.key) / baseOps) * 100, '%');
    if (cpu !== undefined && baseCpu !== undefined) add(`  server CPU cost against ${opts.baselineLabel}`, (cpu / baseCpu - 1) * 100, '%');
  }
}
