/**
 * The seccomp profile of a container, as kubelet 1.23 chooses it (kuberuntime's getSeccompProfile): the
 * container's securityContext.seccompProfile, else the pod's, else the 1.23 annotations
 * (container.seccomp.security.alpha.kubernetes.io/<name>, then seccomp.security.alpha.kubernetes.io/pod), else
 * RuntimeDefault with --seccomp-default under the SeccompDefault gate, else Unconfined. A Localhost profile is a
 * file under <root-dir>/seccomp.
 *
 * Runtimes that run images (CRI) get it in the container's security context; the built-in process runtime
 * starts host processes and applies no seccomp filter (see README).
 */
import { join } from 'node:path';
import type { Container, Pod } from './types.js';

export interface SeccompProfile {
  profileType: 'RuntimeDefault' | 'Unconfined' | 'Localhost';
  /** Localhost: the profile file's absolute path. */
  localhostRef?: string;
}

export interface SeccompOptions {
  /** --seccomp-default with the SeccompDefault gate on. */
  seccompDefault?: boolean;
  /** <root-dir>/seccomp: where Localhost profiles live. */
  profileRoot?: string;
}

interface ApiProfile {
  type?: string;
  localhostProfile?: string;
}

function fromApi(p: ApiProfile, root: string): SeccompProfile | undefined {
  if (p.type === 'RuntimeDefault') return { profileType: 'RuntimeDefault' };
  if (p.type === 'Unconfined') return { profileType: 'Unconfined' };
  if (p.type === 'Localhost') return { profileType: 'Localhost', localhostRef: join(root, p.localhostProfile ?? '') };
  return undefined;
}

function fromAnnotation(value: string | undefined, root: string): SeccompProfile | undefined {
  if (value === undefined) return undefined;
  if (value === 'runtime/default' || value === 'docker/default') return { profileType: 'RuntimeDefault' };
  if (value === 'unconfined') return { profileType: 'Unconfined' };
  if (value.startsWith('localhost/')) return { profileType: 'Localhost', localhostRef: join(root, value.slice('localhost/'.length)) };
  return undefined;
}

/** The profile for container `c` of `pod`. */
export function seccompProfileOf(pod: Pod, c: Container, o: SeccompOptions = {}): SeccompProfile {
  const root = o.profileRoot ?? '/var/lib/orchlet/seccomp';
  const cSC = (c.securityContext ?? {}) as { seccompProfile?: ApiProfile };
  const pSC = (pod.spec.securityContext ?? {}) as { seccompProfile?: ApiProfile };
  const annotations = (pod.metadata.annotations ?? {});
  return (
    (cSC.seccompProfile && fromApi(cSC.seccompProfile, root)) ??
    (pSC.seccompProfile && fromApi(pSC.seccompProfile, root)) ??
    fromAnnotation(annotations[`container.seccomp.security.alpha.kubernetes.io/${c.name}`], root) ??
    fromAnnotation(annotations['seccomp.security.alpha.kubernetes.io/pod'], root) ??
    (o.seccompDefault === true ? { profileType: 'RuntimeDefault' } : { profileType: 'Unconfined' })
  );
}
