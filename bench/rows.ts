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
