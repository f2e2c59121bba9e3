// Which user a container's process runs as. One pure function, used both by the agent when it
// builds a container's config (a refusal becomes the waiting reason CreateContainerConfigError) and
// by the process runtime before it starts anything (so no caller can get around it).
//
// Policy:
//   - runAsUser / runAsGroup come from the container's securityContext, else the pod's;
//   - supplementary groups: the pod's fsGroup, then its supplementalGroups (kubelet's order); the
//     process has no others (the agent's own groups are dropped);
//   - no runAsUser: the unprivileged user 65534 (nobody); no runAsGroup: group 65534 (nogroup),
//     or group 0 for a privileged container running as root;
//   - user 0 or group 0 (root), also as a supplementary group, only for a privileged container on an
//     agent that allows privileged pods; a privileged container without runAsUser runs as root;
//   - a privileged container on an agent that does not allow privileged pods is refused.
import type { SecurityContext } from '../types.js';
import type { LinuxContainerSecurityContext } from './runtime.js';

export const NOBODY_UID = 65534;
export const NOBODY_GID = 65534;

export interface ProcessIdentity {
  uid: number;
  gid: number;
  /** Supplementary groups (fsGroup and supplementalGroups); none when empty or unset. */
  groups?: number[];
}

export type IdentityResult = { ok: true; identity: ProcessIdentity } | { ok: false; message: string };

/** The CRI security context of a container: container-level fields override pod-level ones. */
export function effectiveSecurityContext(
  podSC: SecurityContext | undefined,
  containerSC: SecurityContext | undefined,
): LinuxContainerSecurityContext {
  const out: LinuxContainerSecurityContext = {};
  const runAsUser = containerSC?.runAsUser ?? podSC?.runAsUser;
  const runAsGroup = containerSC?.runAsGroup ?? podSC?.runAsGroup;
  if (runAsUser !== undefined) out.runAsUser = runAsUser;
  if (runAsGroup !== undefined) out.runAsGroup = runAsGroup;
  if (containerSC?.privileged === true) out.privileged = true;
  const groups = supplementaryGroups(podSC);
  if (groups.length > 0) out.supplementalGroups = groups;
  return out;
}

/** The pod's supplementary groups as kubelet passes them to the runtime: fsGroup first, then supplementalGroups, without repeats. */
export function supplementaryGroups(podSC: SecurityContext | undefined): number[] {
  const out: number[] = [];
  const add = (g: unknown): void => {
    if (typeof g === 'number' && Number.isInteger(g) && g >= 0 && !out.includes(g)) out.push(g);
  };
  add(podSC?.fsGroup);
  if (Array.isArray(podSC?.supplementalGroups)) for (const g of podSC.supplementalGroups) add(g);
  return out;
}

/** Resolves the uid/gid of a container, or says why the node refuses it (see the file comment). */
export function resolveIdentity(sc: LinuxContainerSecurityContext | undefined, allowPrivileged: boolean): IdentityResult {
  const privileged = sc?.privileged === true;
  if (privileged && !allowPrivileged) {
    return { ok: false, message: 'privileged containers are not allowed on this node (the agent does not allow privileged pods)' };
  }
  const groups = sc?.supplementalGroups ?? [];
  const withGroups = (identity: ProcessIdentity): IdentityResult => ({ ok: true, identity: groups.length > 0 ? { ...identity, groups: [...groups] } : identity });
  if (privileged) {
    const uid = sc?.runAsUser ?? 0;
    return withGroups({ uid, gid: sc?.runAsGroup ?? (uid === 0 ? 0 : NOBODY_GID) });
  }
  if (sc?.runAsUser === 0) {
    return {
      ok: false,
      message: 'runAsUser 0 (root) is refused: running as root requires privileged: true and an agent that allows privileged pods',
    };
  }
  if (sc?.runAsGroup === 0) {
    return {
      ok: false,
      message: 'runAsGroup 0 (root) is refused: running as group root requires privileged: true and an agent that allows privileged pods',
    };
  }
  if (groups.includes(0)) {
    return {
      ok: false,
      message: 'group 0 (root) as fsGroup or supplemental group is refused: it requires privileged: true and an agent that allows privileged pods',
    };
  }
  return withGroups({ uid: sc?.runAsUser ?? NOBODY_UID, gid: sc?.runAsGroup ?? NOBODY_GID });
}
