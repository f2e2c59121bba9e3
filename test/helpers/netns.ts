/**
 * Network namespaces for tests of the agent's host networking (iptables rules), so that nothing touches the
 * host's own tables: `ip netns add`, programs run in it with `ip netns exec`, removed at the end.
 *
 * Needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN), `ip` and the iptables programs. Where they are missing the tests
 * skip locally (with the reason) and fail under CI=true, as requireBinary does.
 */
import { spawnSync } from 'node:child_process';
import type { TestContext } from 'node:test';
import { requireBinary } from './binaries.js';
import type { Exec } from '../../src/agent/network/iptables.js';
import { execProgram } from '../../src/agent/network/iptables.js';

let counter = 0;

export interface TestNetns {
  name: string;
  /** Runs a program in the namespace; throws with its output when it fails. */
  run(program: string, args: string[]): string;
  /** An Exec (src/agent/network/iptables.ts) that runs its programs in the namespace. */
  exec: Exec;
  /** `iptables-save` (or ip6tables-save) of one table in the namespace. */
  save(table: 'nat' | 'filter' | 'mangle', v6?: boolean): string;
  remove(): void;
}

/** Why network namespaces cannot be made here, or undefined when they can. */
function unavailable(t: TestContext, programs: string[]): string | undefined {
  for (const p of ['ip', ...programs]) if (requireBinary(t, p) === null) return `${p} is not installed`;
  if (process.getuid?.() !== 0) return 'not root: network namespaces and iptables need root';
  return undefined;
}

/**
 * A new network namespace with loopback up, or null when this machine cannot make one (the test is then
 * skipped; under CI=true this throws instead).
 */
export function makeNetns(t: TestContext, programs: string[] = ['iptables', 'iptables-save', 'ip6tables', 'ip6tables-save']): TestNetns | null {
  let why = unavailable(t, programs);
  const name = `orch-t${process.pid}-${++counter}`;
  if (why === undefined) {
    const r = spawnSync('ip', ['netns', 'add', name], { encoding: 'utf8' });
    if (r.status !== 0) why = `ip netns add failed: ${r.stderr.trim()}`;
  }
  if (why !== undefined) {
    if (process.env.CI === 'true') throw new Error(`cannot make a network namespace (CI=true: not skipping): ${why}`);
    t.skip(why);
    return null;
  }
  const run = (program: string, args: string[]): string => {
    const r = spawnSync('ip', ['netns', 'exec', name, program, ...args], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`${program} ${args.join(' ')} in ${name}: exit ${r.status}: ${r.stderr}${r.stdout}`);
    return r.stdout;
  };
  run('ip', ['link', 'set', 'lo', 'up']);
  return {
    name,
    run,
    exec: (program, args) => execProgram('ip', ['netns', 'exec', name, program, ...args]),
    save: (table, v6 = false) => run(v6 ? 'ip6tables-save' : 'iptables-save', ['-t', table]),
    remove: () => void spawnSync('ip', ['netns', 'del', name]),
  };
}
