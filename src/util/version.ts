// Version information in the shape Kubernetes serves at /version and prints for --version.
//
// The Kubernetes version we are compatible with is fixed here; our own release number comes
// from package.json, read at run time by walking up from this module's directory (the module
// lives at src/util/ when run from source and at dist/src/util/ once compiled).
import { readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The Kubernetes release whose API and flags we follow. */
export const COMPAT_MAJOR = '1';
export const COMPAT_MINOR = '23';
export const COMPAT_PATCH = '17';

export interface VersionInfo {
  major: string;
  minor: string;
  gitVersion: string;
  gitCommit: string;
  gitTreeState: string;
  buildDate: string;
  goVersion: string;
  compiler: string;
  platform: string;
}

const moduleFile = fileURLToPath(import.meta.url);
let cachedPackageVersion: string | undefined;

/** Our own version, from the nearest package.json named "orch" above this module ('0.0.0' if none is found). */
export function packageVersion(): string {
  if (cachedPackageVersion !== undefined) return cachedPackageVersion;
  let dir = dirname(moduleFile);
  for (;;) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: unknown; version?: unknown };
      if (pkg.name === 'orch' && typeof pkg.version === 'string') {
        cachedPackageVersion = pkg.version;
        return pkg.version;
      }
    } catch {
      // no (readable) package.json here: keep walking up
    }
    const parent = dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  cachedPackageVersion = '0.0.0';
  return cachedPackageVersion;
}

const GO_ARCH: Record<string, string> = { x64: 'amd64', ia32: '386', arm64: 'arm64', arm: 'arm', ppc64: 'ppc64le', s390x: 's390x', riscv64: 'riscv64' };

/** 'YYYY-MM-DDTHH:MM:SSZ', the form Kubernetes uses for buildDate. */
function isoSeconds(d: Date): string {
  return d.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

function buildDate(): string {
  const fromEnv = process.env.ORCH_BUILD_DATE;
  if (fromEnv) return fromEnv;
  try {
    // The compiled module's modification time is the closest thing to a build date we have.
    return isoSeconds(statSync(moduleFile).mtime);
  } catch {
    return '1970-01-01T00:00:00Z';
  }
}

/**
 * The version object served at /version and printed by --version.
 * gitCommit and gitTreeState come from ORCH_GIT_COMMIT / ORCH_GIT_TREE_STATE when set, else 'unknown';
 * buildDate from ORCH_BUILD_DATE, else the modification time of this compiled module.
 */
export function versionInfo(): VersionInfo {
  return {
    major: COMPAT_MAJOR,
    minor: COMPAT_MINOR,
    gitVersion: `v${COMPAT_MAJOR}.${COMPAT_MINOR}.${COMPAT_PATCH}+orch.${packageVersion()}`,
    gitCommit: process.env.ORCH_GIT_COMMIT || 'unknown',
    gitTreeState: process.env.ORCH_GIT_TREE_STATE || 'unknown',
    buildDate: buildDate(),
    goVersion: `node ${process.version}`,
    compiler: 'tsc',
    platform: `${process.platform}/${GO_ARCH[process.arch] ?? process.arch}`,
  };
}

/** The one line printed by `--version`, e.g. 'orch-apiserver v1.23.17+orch.0.1.0'. */
export function versionLine(program: string): string {
  return `${program} ${versionInfo().gitVersion}`;
}
