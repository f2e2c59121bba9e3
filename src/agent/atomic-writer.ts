// kubelet's AtomicWriter (pkg/volume/util/atomic_writer.go): the files of a ConfigMap, Secret,
// downwardAPI or projected volume change all at once. The data lives in a timestamped directory
// `..<yyyy_mm_dd_hh_mm_ss.random>`; `..data` is a symlink to it; each top-level path of the payload
// is a symlink `<name> -> ..data/<name>`. An update writes a new timestamped directory, points
// `..data_tmp` at it and renames that over `..data` (one atomic rename), then removes the old
// directory and the top-level links no longer in the payload. Nothing is written when the payload
// equals what is there.
import { randomInt } from 'node:crypto';
import { chmod, lstat, mkdir, readdir, readFile, readlink, rename, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { dirname, join, normalize, sep } from 'node:path';

export interface FileProjection {
  data: Buffer;
  mode: number;
}

const DATA_LINK = '..data';
const DATA_TMP = '..data_tmp';

/** Checks a payload path as kubelet does: relative, no '..' element, not starting with '..'. */
export function checkPayloadPath(p: string): string | undefined {
  if (p === '') return 'invalid path: must not be empty';
  if (p.startsWith('/')) return `invalid path: must be relative path: ${p}`;
  if (p.split('/').includes('..')) return `invalid path: must not contain '..': ${p}`;
  if (p.startsWith('..')) return `invalid path: must not start with '..': ${p}`;
  return undefined;
}

function timestampDirName(now: Date): string {
  const p = (n: number, w = 2): string => String(n).padStart(w, '0');
  const ts = `${now.getUTCFullYear()}_${p(now.getUTCMonth() + 1)}_${p(now.getUTCDate())}_${p(now.getUTCHours())}_${p(now.getUTCMinutes())}_${p(now.getUTCSeconds())}`;
  return `..${ts}.${randomInt(1e9)}`;
}

async function unchanged(dataDir: string, payload: ReadonlyMap<string, FileProjection>): Promise<boolean> {
  for (const [path, f] of payload) {
    const full = join(dataDir, path);
    const [content, st] = await Promise.all([readFile(full).catch(() => undefined), stat(full).catch(() => undefined)]);
    if (!content || !st || !content.equals(f.data) || (st.mode & 0o7777) !== f.mode) return false;
  }
  const count = async (dir: string): Promise<number> => {
    let n = 0;
    for (const e of await readdir(dir, { withFileTypes: true })) n += e.isDirectory() ? await count(join(dir, e.name)) : 1;
    return n;
  };
  return (await count(dataDir).catch(() => -1)) === payload.size;
}

/** Writes the payload into `target` (created if missing); resolves with whether anything changed. */
export async function writeAtomic(target: string, payload: ReadonlyMap<string, FileProjection>, now = new Date()): Promise<boolean> {
  for (const p of payload.keys()) {
    const problem = checkPayloadPath(p);
    if (problem) throw new Error(problem);
  }
  await mkdir(target, { recursive: true });
  const current = await readlink(join(target, DATA_LINK)).catch(() => undefined);
  if (current !== undefined && (await unchanged(join(target, current), payload))) return false;
  const tsName = timestampDirName(now);
  const tsDir = join(target, tsName);
  await mkdir(tsDir, { mode: 0o755 });
  await chmod(tsDir, 0o755);
  for (const [p, f] of payload) {
    const full = join(tsDir, normalize(p));
    await mkdir(dirname(full), { recursive: true, mode: 0o755 });
    await writeFile(full, f.data);
    await chmod(full, f.mode);
  }
  await rm(join(target, DATA_TMP), { force: true });
  await symlink(tsName, join(target, DATA_TMP));
  await rename(join(target, DATA_TMP), join(target, DATA_LINK));
  const top = new Set([...payload.keys()].map((p) => normalize(p).split(sep)[0]!));
  for (const name of top) {
    const link = join(target, name);
    const st = await lstat(link).catch(() => undefined);
    if (!st) await symlink(join(DATA_LINK, name), link);
  }
  for (const e of await readdir(target)) {
    if (e === DATA_LINK || e === tsName) continue;
    if (e.startsWith('..') || !top.has(e)) await rm(join(target, e), { recursive: true, force: true });
  }
  return true;
}
