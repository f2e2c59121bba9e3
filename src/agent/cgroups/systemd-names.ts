// kubelet's cgroup names under the systemd driver (cgroup_manager_linux.go, with libcontainer's
// ExpandSlice): a cgroup name is a list of components ({"kubepods", "burstable", "pod<uid>"}); the
// systemd driver joins them with '-' into one slice unit (a '-' inside a component becomes '_',
// since systemd reads '-' as a level of the hierarchy) and expands the unit into its cgroupfs path:
//   /kubepods/burstable/pod1234-ab  ->  /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234_ab.slice
// Pure functions; the driver (systemd.ts) and the pods' cgroup parent (podconfig.ts) call them.

const SUFFIX = '.slice';

/** libcontainer's ExpandSlice: "a-b.slice" -> "/a.slice/a-b.slice"; "-.slice" -> "/"; throws on a malformed name. */
export function expandSlice(slice: string): string {
  if (slice.length < SUFFIX.length || !slice.endsWith(SUFFIX) || slice.includes('/')) throw new Error(`invalid slice name: ${slice}`);
  const name = slice.slice(0, -SUFFIX.length);
  if (name === '-') return '/';
  let path = '';
  let prefix = '';
  for (const part of name.split('-')) {
    if (part === '') throw new Error(`invalid slice name: ${slice}`);
    path += `/${prefix}${part}${SUFFIX}`;
    prefix += `${part}-`;
  }
  return path;
}

/** ParseCgroupfsToCgroupName: "/a/b" -> ["a", "b"]; "/" or "" -> []. */
export function parseCgroupfsName(name: string): string[] {
  return name.split('/').filter((p) => p !== '');
}

/** CgroupName.ToSystemd: the expanded cgroupfs path of the components' slice ("/" for none). */
export function cgroupNameToSystemd(parts: readonly string[]): string {
  if (parts.length === 0 || (parts.length === 1 && parts[0] === '')) return '/';
  return expandSlice(parts.map((p) => p.replaceAll('-', '_')).join('-') + SUFFIX);
}

/** ParseSystemdToCgroupName: the last slice of a path, split back into components ("a-b_c.slice" -> ["a", "b-c"]). */
export function parseSystemdName(name: string): string[] {
  const base = name.split('/').filter((p) => p !== '').pop() ?? '';
  const unit = base.endsWith(SUFFIX) ? base.slice(0, -SUFFIX.length) : base;
  return unit.split('-').map((p) => p.replaceAll('_', '-'));
}

/**
 * The systemd driver's cgroupfs path of a name orchlet uses: a cgroupfs-style path (the pods'
 * hierarchy under --cgroup-root) is converted component by component; a name already in systemd
 * form (ending in .slice, as --system-reserved-cgroup=system.slice) is read as kubelet reads it.
 */
export function systemdPathOf(name: string): string {
  return cgroupNameToSystemd(name.endsWith(SUFFIX) ? parseSystemdName(name) : parseCgroupfsName(name));
}

/** The unit of an expanded path and the slice it goes in (libcontainer's Name and Parent; the root slice is "-.slice"). */
export function sliceUnitOf(path: string): { unit: string; parent: string } {
  const parts = path.split('/').filter((p) => p !== '');
  const unit = parts.pop();
  if (unit === undefined) throw new Error('the root slice is not a unit orchlet makes');
  return { unit, parent: parts.pop() ?? '-.slice' };
}
