/**
 * Kernel settings of the node agent, as kubelet 1.23:
 * - --protect-kernel-defaults: the tunables kubelet expects (setupKernelTunables); with protection on, a
 *   difference refuses the start ('invalid kernel flag: ...'), otherwise kubelet writes the expected values.
 * - --oom-score-adj: written to the agent's own /proc/self/oom_score_adj; failure is logged, not fatal.
 * - --allowed-unsafe-sysctls: the pod sysctl admission (pkg/kubelet/sysctl): the safe set plus the allowed
 *   unsafe names and prefix* patterns, each known to be namespaced; other sysctls, and network or IPC sysctls of
 *   pods sharing the host's network or IPC namespace, are refused with reason SysctlForbidden.
 *
 * The /proc roots are parameters so that tests work on temporary directories, never on the host's kernel.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** kubelet's expected kernel tunables (/proc/sys paths). */
export const KERNEL_TUNABLES: readonly (readonly [string, number])[] = [
  ['vm/overcommit_memory', 1],
  ['vm/panic_on_oom', 0],
  ['kernel/panic', 10],
  ['kernel/panic_on_oops', 1],
  ['kernel/keys/root_maxkeys', 1000000],
  ['kernel/keys/root_maxbytes', 25000000],
];

export interface TunableResult {
  /** Tunables written (modify mode) or that would be (report mode): 'flag: actual -> expected'. */
  changed: string[];
  /** Errors: differences under protection, unreadable tunables, or failed writes. */
  errors: string[];
}

/** One differing tunable, as kubelet logs it ('Updating kernel flag' flag expectedValue actualValue). */
export interface TunableUpdate {
  flag: string;
  expected: number;
  actual: number;
  /** Set when the write failed. */
  error?: string;
}

/**
 * kubelet's setupKernelTunables: 'protect' makes every differing tunable an error ('invalid kernel flag:
 * vm/overcommit_memory, expected value: 1, actual value: 0'); 'modify' writes the expected values, calling
 * onUpdate before each write and again with `error` set when it failed (a failed write is also an error, as
 * kubelet's); 'report' only lists, in `changed`, what 'modify' would write.
 */
export function setupKernelTunables(
  mode: 'protect' | 'modify' | 'report',
  procSys = '/proc/sys',
  onUpdate: (u: TunableUpdate) => void = () => {},
): TunableResult {
  const result: TunableResult = { changed: [], errors: [] };
  for (const [flag, expected] of KERNEL_TUNABLES) {
    const path = join(procSys, flag);
    let actual: number;
    try {
      actual = Number(readFileSync(path, 'utf8').trim());
    } catch (err) {
      result.errors.push(`failed to read ${flag}: ${err instanceof Error ? err.message : String(err)}`);
      continue;
    }
    if (actual === expected) continue;
    if (mode === 'protect') {
      result.errors.push(`invalid kernel flag: ${flag}, expected value: ${expected}, actual value: ${actual}`);
      continue;
    }
    if (mode === 'report') {
      result.changed.push(`${flag}: ${actual} -> ${expected}`);
      continue;
    }
    onUpdate({ flag, expected, actual });
    try {
      writeFileSync(path, `${expected}`);
      result.changed.push(`${flag}: ${actual} -> ${expected}`);
    } catch (err) {
      const error = `open ${path}: ${err instanceof Error ? err.message : String(err)}`;
      onUpdate({ flag, expected, actual, error });
      result.errors.push(error);
    }
  }
  return result;
}

/**
 * Writes the agent's oom_score_adj (kubelet's ApplyOOMScoreAdj on itself). Returns undefined when done, or the
 * reason it could not: lowering the value needs CAP_SYS_RESOURCE.
 */
export function applyOomScoreAdj(value: number, procSelf = '/proc/self'): string | undefined {
  const path = join(procSelf, 'oom_score_adj');
  try {
    writeFileSync(path, `${value}`);
    const now = Number(readFileSync(path, 'utf8').trim());
    return now === value ? undefined : `oom_score_adj is ${now} after writing ${value}`;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === 'EACCES' || code === 'EPERM' ? ' (lowering it needs CAP_SYS_RESOURCE, which this process lacks)' : '';
    return `failed to set ${path} to ${value}: ${err instanceof Error ? err.message : String(err)}${why}`;
  }
}

// ---------------------------------------------------------------------------------------------
// Pod sysctls

/** 1.23's safe sysctls (SafeSysctlAllowlist). */
export const SAFE_SYSCTLS: readonly string[] = [
  'kernel.shm_rmid_forced',
  'net.ipv4.ip_local_port_range',
  'net.ipv4.tcp_syncookies',
  'net.ipv4.ping_group_range',
  'net.ipv4.ip_unprivileged_port_start',
];

type SysctlNamespace = 'ipc' | 'net' | undefined;

/** The namespace a sysctl (or a prefix) belongs to, kubelet's NamespacedBy. */
export function namespacedBy(name: string): SysctlNamespace {
  if (name === 'kernel.sem') return 'ipc';
  for (const [prefix, ns] of [
    ['kernel.shm', 'ipc'],
    ['kernel.msg', 'ipc'],
    ['fs.mqueue.', 'ipc'],
    ['net.', 'net'],
  ] as const) {
    if (name.startsWith(prefix)) return ns;
  }
  return undefined;
}

export interface SysctlAllowlist {
  /** Why the pod may not run (the message after 'forbidden sysctl: '), or undefined. */
  check(pod: { spec?: unknown }): string | undefined;
}

/** kubelet's patternAllowlist over the safe set and --allowed-unsafe-sysctls; throws on a non-namespaced entry. */
export function sysctlAllowlist(allowedUnsafe: readonly string[] = []): SysctlAllowlist {
  const names = new Map<string, SysctlNamespace>();
  const prefixes = new Map<string, SysctlNamespace>();
  for (const s of [...SAFE_SYSCTLS, ...allowedUnsafe]) {
    if (s.endsWith('*')) {
      const prefix = s.slice(0, -1);
      const ns = namespacedBy(prefix);
      if (ns === undefined) throw new Error(`--allowed-unsafe-sysctls: the sysctls "${s}" are not known to be namespaced`);
      prefixes.set(prefix, ns);
    } else {
      const ns = namespacedBy(s);
      if (ns === undefined) throw new Error(`--allowed-unsafe-sysctls: the sysctl "${s}" is not known to be namespaced`);
      names.set(s, ns);
    }
  }
  const validate = (name: string, hostNet: boolean, hostIPC: boolean): string | undefined => {
    let ns: SysctlNamespace | null = names.has(name) ? names.get(name) : null;
    if (ns === null) for (const [p, n] of prefixes) if (name.startsWith(p)) ns = n;
    if (ns === null) return `"${name}" not allowlisted`;
    if (ns === 'ipc' && hostIPC) return `"${name}" not allowed with host ipc enabled`;
    if (ns === 'net' && hostNet) return `"${name}" not allowed with host net enabled`;
    return undefined;
  };
  return {
    check(pod) {
      const spec = (pod.spec ?? {}) as { hostNetwork?: boolean; hostIPC?: boolean; securityContext?: { sysctls?: { name: string }[] } };
      for (const s of spec.securityContext?.sysctls ?? []) {
        const err = validate(s.name, spec.hostNetwork === true, spec.hostIPC === true);
        if (err !== undefined) return err;
      }
      return undefined;
    },
  };
}
