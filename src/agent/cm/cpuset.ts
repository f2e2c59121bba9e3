// A set of logical CPU ids in the Linux list format ("0-2,7,12-14"), as k8s.io/utils/cpuset: the
// value the CPU manager keeps in its state file and hands to runtimes as cpuset.cpus. Immutable.

export class CPUSet {
  private readonly ids: readonly number[];

  constructor(ids: Iterable<number> = []) {
    this.ids = [...new Set(ids)].sort((a, b) => a - b);
  }

  /** Parses the list format; '' is the empty set. Throws with Go's message for a bad element. */
  static parse(text: string): CPUSet {
    const out: number[] = [];
    if (text.trim() === '') return new CPUSet();
    for (const part of text.split(',')) {
      const bounds = part.split('-');
      if (bounds.length > 2) throw new Error(`invalid range "${part}"`);
      const [lo, hi] = bounds.map(atoi) as [number, number | undefined];
      const end = hi ?? lo;
      if (lo > end) throw new Error(`invalid range "${part}" (${lo} > ${end})`);
      for (let i = lo; i <= end; i++) out.push(i);
    }
    return new CPUSet(out);
  }

  get size(): number {
    return this.ids.length;
  }

  isEmpty(): boolean {
    return this.ids.length === 0;
  }

  has(id: number): boolean {
    return this.ids.includes(id);
  }

  toArray(): number[] {
    return [...this.ids];
  }

  union(...others: CPUSet[]): CPUSet {
    return new CPUSet([...this.ids, ...others.flatMap((o) => o.ids)]);
  }

  intersection(other: CPUSet): CPUSet {
    return new CPUSet(this.ids.filter((i) => other.has(i)));
  }

  difference(other: CPUSet): CPUSet {
    return new CPUSet(this.ids.filter((i) => !other.has(i)));
  }

  isSubsetOf(other: CPUSet): boolean {
    return this.ids.every((i) => other.has(i));
  }

  equals(other: CPUSet): boolean {
    return this.size === other.size && this.isSubsetOf(other);
  }

  /** The list format: consecutive ids as ranges. */
  toString(): string {
    const parts: string[] = [];
    let i = 0;
    while (i < this.ids.length) {
      const start = this.ids[i]!;
      let end = start;
      while (i + 1 < this.ids.length && this.ids[i + 1] === end + 1) end = this.ids[++i]!;
      parts.push(start === end ? `${start}` : `${start}-${end}`);
      i++;
    }
    return parts.join(',');
  }
}

/** Go's strconv.Atoi on a cpuset element, with its error text. */
function atoi(s: string): number {
  if (!/^[+-]?\d+$/.test(s)) throw new Error(`strconv.Atoi: parsing ${JSON.stringify(s)}: invalid syntax`);
  return Number(s);
}
