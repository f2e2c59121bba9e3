/**
 * A small iptables runner, shaped like kubelet's pkg/util/iptables: it runs the `iptables` (IPv4) or
 * `ip6tables` (IPv6) program of the network namespace orchlet runs in.
 *
 * - The version (`iptables --version`) decides the lock flags (-w, -w 5, or -w 5 -W 100000 from 1.6.1),
 *   whether rules can be checked with -C (from 1.4.11; older versions are refused: none is still shipped)
 *   and whether MASQUERADE takes --random-fully (from 1.6.2).
 * - ensureChain (-N) reports whether the chain was there (exit 1: it exists); ensureRule checks with -C and
 *   adds (-A, or -I at the top) only when missing.
 * - monitor() is kubelet's canary watch: it keeps a canary chain in each table and, when the first table's
 *   canary is gone (something flushed the tables), waits up to 5 s for the others to go too, then calls
 *   reload and puts the canaries back.
 *
 * Contract: each call runs one program and resolves with its outcome; calls may run concurrently (iptables
 * serialises them itself with its lock, which the wait flags wait for).
 */
import { execFile } from 'node:child_process';

export type IPFamily = 'IPv4' | 'IPv6';
export type Table = 'nat' | 'filter' | 'mangle';
export type RulePosition = 'append' | 'prepend';

/** What a program run gives back: the exit code (or -1 when it could not start) and stdout+stderr. */
export interface ExecResult {
  code: number;
  output: string;
}

/** Runs a program with arguments; tests substitute it. */
export type Exec = (program: string, args: string[]) => Promise<ExecResult>;

export const execProgram: Exec = (program, args) =>
  new Promise((resolve) => {
    execFile(program, args, { encoding: 'utf8', timeout: 60_000 }, (err, stdout, stderr) => {
      const output = `${stdout}${stderr}`;
      if (err === null) return resolve({ code: 0, output });
      const code = (err as NodeJS.ErrnoException & { code?: unknown }).code;
      resolve({ code: typeof code === 'number' ? code : -1, output: output !== '' ? output : err.message });
    });
  });

/** iptables exits 4 on a "resource problem", e.g. when it timed out waiting for its lock. */
const RESOURCE_PROBLEM = 4;

export class IptablesError extends Error {
  constructor(
    message: string,
    readonly code: number,
  ) {
    super(message);
    this.name = 'IptablesError';
  }
}

/** [major, minor, patch] of 'vX.Y.Z' in the output of `iptables --version`, or undefined. */
export function parseIptablesVersion(text: string): number[] | undefined {
  const m = /v(\d+(?:\.\d+)+)/.exec(text);
  return m ? m[1]!.split('.').map(Number) : undefined;
}

function atLeast(v: readonly number[], min: readonly number[]): boolean {
  for (let i = 0; i < min.length; i++) {
    const a = v[i] ?? 0;
    if (a !== min[i]) return a > min[i]!;
  }
  return true;
}

/** The lock flags of this iptables version (kubelet's getIPTablesWaitFlag). */
export function waitFlags(v: readonly number[]): string[] {
  if (atLeast(v, [1, 6, 1])) return ['-w', '5', '-W', '100000'];
  if (atLeast(v, [1, 4, 22])) return ['-w', '5'];
  if (atLeast(v, [1, 4, 20])) return ['-w'];
  return [];
}

export class Iptables {
  private constructor(
    readonly family: IPFamily,
    private readonly program: string,
    private readonly exec: Exec,
    private readonly wait: string[],
    /** MASQUERADE --random-fully is understood (iptables 1.6.2 and later). */
    readonly hasRandomFully: boolean,
    readonly version: string,
  ) {}

  /**
   * The runner for `family`: asks the program for its version. Rejects when the program cannot run (not
   * installed, or the kernel lacks the family) or is older than 1.4.11.
   */
  static async create(family: IPFamily, exec: Exec = execProgram, program = family === 'IPv4' ? 'iptables' : 'ip6tables'): Promise<Iptables> {
    const r = await exec(program, ['--version']);
    const v = r.code === 0 ? parseIptablesVersion(r.output) : undefined;
    if (v === undefined) throw new IptablesError(`${program} --version: ${r.output.trim() || `exit code ${r.code}`}`, r.code);
    if (!atLeast(v, [1, 4, 11])) throw new IptablesError(`${program} ${v.join('.')} cannot check rules (-C needs 1.4.11 or later)`, 1);
    return new Iptables(family, program, exec, waitFlags(v), atLeast(v, [1, 6, 2]), v.join('.'));
  }

  get isIPv6(): boolean {
    return this.family === 'IPv6';
  }

  private run(op: string, table: Table, chain: string, args: readonly string[] = []): Promise<ExecResult> {
    return this.exec(this.program, [...this.wait, op, chain, '-t', table, ...args]);
  }

  private fail(what: string, r: ExecResult): never {
    throw new IptablesError(`${what}: ${this.program} exited with ${r.code}: ${r.output.trim()}`, r.code);
  }

  /** Creates the chain unless it exists; resolves true when it existed. */
  async ensureChain(table: Table, chain: string): Promise<boolean> {
    const r = await this.run('-N', table, chain);
    if (r.code === 0) return false;
    if (r.code === 1) return true;
    return this.fail(`error creating chain "${chain}"`, r);
  }

  /** Adds the rule (at the end, or at the top for 'prepend') unless an identical one exists; resolves true when it existed. */
  async ensureRule(position: RulePosition, table: Table, chain: string, args: readonly string[]): Promise<boolean> {
    const check = await this.run('-C', table, chain, args);
    if (check.code === 0) return true;
    if (check.code !== 1) return this.fail('error checking rule', check);
    const r = await this.run(position === 'append' ? '-A' : '-I', table, chain, args);
    if (r.code !== 0) this.fail('error appending rule', r);
    return false;
  }

  /** Whether the chain exists (-S); rejects with code 4 when iptables could not tell (its lock). */
  async chainExists(table: Table, chain: string): Promise<boolean> {
    const r = await this.run('-S', table, chain);
    if (r.code === 0) return true;
    if (r.code === RESOURCE_PROBLEM) this.fail(`checking chain "${chain}"`, r);
    return false;
  }

  async deleteChain(table: Table, chain: string): Promise<void> {
    const r = await this.run('-X', table, chain);
    if (r.code !== 0) this.fail(`error deleting chain "${chain}"`, r);
  }

  /**
   * kubelet's Monitor: keeps `canary` in each of `tables` (the first one is polled every `intervalMs`) and
   * calls `reload` after they were flushed. Returns the function that stops watching (the canaries stay, as
   * kubelet leaves them).
   */
  monitor(canary: string, tables: readonly Table[], reload: () => Promise<void>, intervalMs: number, log: MonitorLog): () => void {
    let stopped = false;
    let timer: NodeJS.Timeout | undefined;
    const sleep = (ms: number): Promise<void> =>
      new Promise((resolve) => {
        timer = setTimeout(resolve, ms);
        timer.unref();
      });
    const placeCanaries = async (): Promise<boolean> => {
      for (const t of tables) {
        try {
          await this.ensureChain(t, canary);
        } catch (err) {
          log('error', `Could not set up iptables canary (table ${t}, chain ${canary}): ${msg(err)}`);
          return false;
        }
      }
      return true;
    };
    const flushed = async (): Promise<boolean> => {
      try {
        if (await this.chainExists(tables[0]!, canary)) return false;
      } catch (err) {
        log('error', `Could not check for iptables canary (table ${tables[0]!}, chain ${canary}): ${msg(err)}`);
        return false;
      }
      log('info', `iptables canary ${tables[0]!}/${canary} deleted`);
      // The other tables' canaries should be gone too before reloading (a flush of every table takes a moment).
      const deadline = Date.now() + 5000;
      for (;;) {
        let others = false;
        for (const t of tables.slice(1)) {
          if (await this.chainExists(t, canary).catch(() => true)) others = true;
        }
        if (!others) break;
        if (Date.now() >= deadline || stopped) {
          log('info', 'Inconsistent iptables state detected.');
          break;
        }
        await sleep(100);
      }
      return true;
    };
    const loop = async (): Promise<void> => {
      while (!stopped) {
        while (!stopped && !(await placeCanaries())) await sleep(intervalMs);
        for (;;) {
          if (stopped) return;
          await sleep(intervalMs);
          if (stopped) return;
          if (await flushed()) break;
        }
        if (stopped) return;
        log('info', 'Reloading after iptables flush');
        await reload().catch((err: unknown) => log('error', `reload after iptables flush: ${msg(err)}`));
      }
    };
    void loop();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }
}

export type MonitorLog = (level: 'info' | 'error', message: string) => void;

function msg(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
