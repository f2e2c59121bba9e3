/**
 * Finding external programs that tests depend on (etcd, ...).
 *
 * Locally a missing program skips the tests that need it; under CI (CI=true) a missing program is a failure,
 * so that a broken CI image cannot turn a whole suite into silent skips.
 */
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import type { TestContext } from 'node:test';

/** The full path of an executable named `name` on PATH, /usr/bin or /usr/sbin, or null. */
export function findBinary(name: string): string | null {
  const dirs = (process.env.PATH ?? '').split(delimiter).filter((d) => d !== '');
  for (const extra of ['/usr/bin', '/usr/sbin']) if (!dirs.includes(extra)) dirs.push(extra);
  for (const dir of dirs) {
    const candidate = join(dir, name);
    try {
      if (!statSync(candidate).isFile()) continue;
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return null;
}

/**
 * The path of a program a test needs. When it is missing: under CI=true this throws (the test fails, naming
 * the program); otherwise it returns null and the caller skips, e.g. `t.skip('etcd not installed')`.
 */
export function requireBinary(t: TestContext | undefined, name: string): string | null {
  const path = findBinary(name);
  if (path !== null) return path;
  if (process.env.CI === 'true') {
    throw new Error(`required program "${name}" was not found on PATH, /usr/bin or /usr/sbin (CI=true: not skipping)`);
  }
  t?.diagnostic(`"${name}" not found on PATH, /usr/bin or /usr/sbin`);
  return null;
}
