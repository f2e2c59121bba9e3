/**
 * --runtime-config: which group versions the server serves (discovery, OpenAPI and routing), as
 * kube-apiserver 1.23 merges it (APIEnablementOptions and MergeAPIResourceConfigs):
 *
 *  - 'api/legacy' is accepted and ignored (it has done nothing for years); 'v1' and 'api/v1' name the core
 *    group's v1;
 *  - the matchers apply first, in the order api/all, api/ga (v[0-9]+), api/beta, api/alpha;
 *  - then each '<group>/<version>' key, which wins over the matchers;
 *  - by default GA and beta versions are served and alpha versions are not;
 *  - an unknown group, a version the group does not have, or 'api/all=false' alone is a startup error.
 *
 * Disabling a group version removes it from the HTTP API only: the server's own controllers keep using
 * its storage, as kube-apiserver's internal clients of it would simply fail instead.
 */
import type { KindDecl } from '../registry/kind.js';

const MATCHERS: [string, (version: string) => boolean][] = [
  ['api/all', () => true],
  ['api/ga', (v) => /^v[0-9]+$/.test(v)],
  ['api/beta', (v) => /^v[0-9]+beta[0-9]+$/.test(v)],
  ['api/alpha', (v) => /^v[0-9]+alpha[0-9]+$/.test(v)],
];

const gvKey = (group: string, version: string) => `${group}/${version}`;

/**
 * The kinds whose group version --runtime-config leaves enabled, in their order. Throws an Error whose
 * message names --runtime-config for an invalid configuration.
 */
export function servedKinds(kinds: readonly KindDecl[], runtimeConfig: Readonly<Record<string, boolean>>): readonly KindDecl[] {
  const overrides = new Map<string, boolean>();
  for (const [key, value] of Object.entries(runtimeConfig)) {
    if (key === 'api/legacy') continue;
    overrides.set(key === 'v1' || key === 'api/v1' ? '/v1' : key, value);
  }
  if (overrides.size === 0) return kinds.filter((k) => !/alpha/.test(k.version));
  if (overrides.size === 1 && overrides.get('api/all') === false) {
    throw new Error('--runtime-config: invalid key with only api/all=false');
  }
  const versions = new Map<string, string>();
  for (const k of kinds) versions.set(gvKey(k.group, k.version), k.version);
  const groups = new Set(kinds.map((k) => k.group));
  const enabled = new Map<string, boolean>();
  for (const [gv, v] of versions) enabled.set(gv, !/alpha/.test(v));
  for (const [flag, matches] of MATCHERS) {
    const value = overrides.get(flag);
    if (value === undefined) continue;
    for (const [gv, v] of versions) if (matches(v)) enabled.set(gv, value);
  }
  const unknownGroups: string[] = [];
  for (const [key, value] of overrides) {
    if (MATCHERS.some(([flag]) => flag === key)) continue;
    const slash = key.indexOf('/');
    const group = key.slice(0, slash);
    if (!groups.has(group)) {
      unknownGroups.push(group === '' ? 'core' : group);
      continue;
    }
    if (!versions.has(key)) throw new Error(`--runtime-config: group version ${key.replace(/^\//, '')} that has not been registered`);
    enabled.set(key, value);
  }
  if (unknownGroups.length > 0) throw new Error(`--runtime-config: unknown api groups ${unknownGroups.sort().join(',')}`);
  return kinds.filter((k) => enabled.get(gvKey(k.group, k.version)) === true);
}
