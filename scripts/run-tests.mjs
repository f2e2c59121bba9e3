#!/usr/bin/env node
// Runs every compiled test file (dist/test/**/*.test.js) with node's own test runner.
// Extra arguments are substrings that select test files: `node scripts/run-tests.mjs storage`.
//
// Run as root (as CI is), the tests start real orchlet binaries, and orchlet, like kubelet, sets the
// kernel tunables it needs (vm.overcommit_memory, kernel.panic, ...) unless --protect-kernel-defaults
// is given. So that a test run never changes the host's kernel settings, the runner then runs the
// tests in a private mount namespace where each of those /proc/sys files is a bind-mounted copy.
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';

// the tunables orchlet writes (kubelet's setupKernelTunables), from the build the tests run against
const { KERNEL_TUNABLES } = await import('../dist/src/agent/sysctl.js');

function walk(dir, out = []) {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p, out);
    else if (p.endsWith('.test.js')) out.push(p);
  }
  return out;
}
const filters = process.argv.slice(2);
const files = walk('dist/test').filter((f) => filters.length === 0 || filters.some((s) => f.includes(s))).sort();
if (files.length === 0) {
  console.error('no test files matched');
  process.exit(1);
}
const testCommand = [process.execPath, '--test', '--test-concurrency=2', ...files];

const unshare = ['/usr/bin/unshare', '/bin/unshare'].find((p) => {
  try {
    return statSync(p).isFile();
  } catch {
    return false;
  }
});
let r;
if (process.getuid?.() === 0 && unshare !== undefined) {
  const copies = mkdtempSync(join(tmpdir(), 'orch-test-sysctl-'));
  const lines = [];
  for (const [t] of KERNEL_TUNABLES) {
    const path = `/proc/sys/${t}`;
    let value;
    try {
      value = readFileSync(path, 'utf8');
    } catch {
      continue;
    }
    const copy = join(copies, t.replaceAll('/', '.'));
    writeFileSync(copy, value);
    lines.push(`mount --bind '${copy}' '${path}' || { echo "run-tests: cannot isolate ${path} from the tests" >&2; exit 97; }`);
  }
  lines.push('exec "$@"');
  r = spawnSync(unshare, ['--mount', '--propagation', 'private', 'sh', '-c', lines.join('\n'), 'sh', ...testCommand], { stdio: 'inherit' });
  rmSync(copies, { recursive: true, force: true });
} else {
  r = spawnSync(testCommand[0], testCommand.slice(1), { stdio: 'inherit' });
}
process.exit(r.status ?? 1);
