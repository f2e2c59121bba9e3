/**
 * The ServiceAccount admission plugin, as Kubernetes 1.23 (plugin/pkg/admission/serviceaccount), on pod
 * creation:
 *   - mutation: a pod without spec.serviceAccountName gets `default`; unless automounting is off (the pod's
 *     automountServiceAccountToken, else the service account's), every init and app container without a
 *     mount at /var/run/secrets/kubernetes.io/serviceaccount mounts a projected volume kube-api-access-<5>
 *     (the bound token for 3607 s, ca.crt from the kube-root-ca.crt ConfigMap, the namespace) when the
 *     server issues tokens (see ServiceAccountAdmissionDeps.mountToken); a pod
 *     without imagePullSecrets gets the service account's.
 *   - validation: the service account must exist ("error looking up service account <ns>/<name>: ..."),
 *     a `default` one being waited for a moment since its controller makes it; with the annotation
 *     kubernetes.io/enforce-mountable-secrets=true the pod may use only the secrets the account lists.
 *     Mirror pods (kubernetes.io/config.mirror) are left alone but may reference no service account,
 *     secret or token projection.
 */
import { lister } from './informer.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { apiErrors, isStatusError } from '../errors.js';
import type { KObject } from '../kind.js';
import { generateName, type Admission, type AdmissionAttributes, type ResourceStore } from '../store.js';

export const DEFAULT_SERVICE_ACCOUNT_NAME = 'default';
export const DEFAULT_API_TOKEN_MOUNT_PATH = '/var/run/secrets/kubernetes.io/serviceaccount';
export const SERVICE_ACCOUNT_VOLUME_NAME = 'kube-api-access';
export const ROOT_CA_CONFIGMAP_NAME = 'kube-root-ca.crt';
const ENFORCE_MOUNTABLE_SECRETS_ANNOTATION = 'kubernetes.io/enforce-mountable-secrets';
const MIRROR_POD_ANNOTATION = 'kubernetes.io/config.mirror';

type Json = Record<string, any>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const objects = (v: unknown): Json[] => (Array.isArray(v) ? v.filter(isObject) : []);
const str = (v: unknown): string => (typeof v === 'string' ? v : '');

/** TokenVolumeSource: the projected volume every pod gets unless it opts out. */
export function tokenVolumeSource(): Json {
  return {
    defaultMode: 0o644,
    sources: [
      { serviceAccountToken: { expirationSeconds: 3607, path: 'token' } },
      { configMap: { name: ROOT_CA_CONFIGMAP_NAME, items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
      { downwardAPI: { items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }] } },
    ],
  };
}

export interface ServiceAccountAdmissionDeps {
  serviceAccounts: () => ResourceStore | undefined;
  namespaces: () => ResourceStore | undefined;
  /**
   * Whether the server issues tokens (serviceaccounts/token). Kubernetes 1.23 always does; an orch server
   * without --service-account-signing-key-file does not, and then mounts no token volume a node agent
   * could never fill.
   */
  mountToken: () => boolean;
  /** The pause between lookups of a `default` account not there yet (default 100-200 ms). */
  retryIntervalMs?: number;
}

const isPodCreate = (a: AdmissionAttributes): boolean =>
  a.operation === 'CREATE' && a.decl.group === '' && a.decl.resource === 'pods' && a.subresource === '' && !!a.object;

const isMirror = (pod: KObject): boolean => pod.metadata?.annotations?.[MIRROR_POD_ANNOTATION] !== undefined;

function shouldAutomount(sa: KObject, spec: Json): boolean {
  if (typeof spec['automountServiceAccountToken'] === 'boolean') return spec['automountServiceAccountToken'];
  if (typeof sa['automountServiceAccountToken'] === 'boolean') return sa['automountServiceAccountToken'];
  return true;
}

/** mountServiceAccountToken: the projected volume and a read-only mount in each container that lacks one. */
function mountServiceAccountToken(spec: Json): void {
  const volumes = objects(spec['volumes']);
  const existing = volumes.find((v) => str(v['name']).startsWith(`${SERVICE_ACCOUNT_VOLUME_NAME}-`));
  const volumeName = existing ? str(existing['name']) : generateName(`${SERVICE_ACCOUNT_VOLUME_NAME}-`);
  let needsVolume = false;
  for (const field of ['initContainers', 'containers']) {
    for (const c of objects(spec[field])) {
      const mounts = objects(c['volumeMounts']);
      if (mounts.some((m) => m['mountPath'] === DEFAULT_API_TOKEN_MOUNT_PATH)) continue;
      c['volumeMounts'] = [...mounts, { name: volumeName, readOnly: true, mountPath: DEFAULT_API_TOKEN_MOUNT_PATH }];
      needsVolume = true;
    }
  }
  if (!existing && needsVolume) spec['volumes'] = [...volumes, { name: volumeName, projected: tokenVolumeSource() }];
}

/** The secrets a pod names (podutil.VisitPodSecretNames, the common sources). */
function podSecretNames(spec: Json): { volumes: string[]; env: { container: string; init: boolean; env: string; secret: string }[]; pull: string[] } {
  const volumes: string[] = [];
  for (const v of objects(spec['volumes'])) {
    if (isObject(v['secret'])) volumes.push(str(v['secret']['secretName']));
    if (isObject(v['projected'])) for (const s of objects(v['projected']['sources'])) if (isObject(s['secret'])) volumes.push(str(s['secret']['name']));
  }
  const env: { container: string; init: boolean; env: string; secret: string }[] = [];
  for (const [field, init] of [['initContainers', true], ['containers', false]] as const) {
    for (const c of objects(spec[field])) {
      for (const e of objects(c['env'])) {
        const ref = e['valueFrom']?.secretKeyRef;
        if (isObject(ref)) env.push({ container: str(c['name']), init, env: str(e['name']), secret: str(ref['name']) });
      }
      for (const e of objects(c['envFrom'])) if (isObject(e['secretRef'])) env.push({ container: str(c['name']), init, env: '', secret: str(e['secretRef']['name']) });
    }
  }
  return { volumes, env, pull: objects(spec['imagePullSecrets']).map((r) => str(r['name'])) };
}

/** limitSecretReferences: the pod may use only the secrets (and pull secrets) its service account lists. */
function limitSecretReferences(sa: KObject, spec: Json): string | undefined {
  const saName = sa.metadata?.name ?? '';
  const mountable = new Set(objects(sa['secrets']).map((s) => str(s['name'])));
  const used = podSecretNames(spec);
  for (const name of used.volumes) {
    if (!mountable.has(name)) return `volume with secret.secretName="${name}" is not allowed because service account ${saName} does not reference that secret`;
  }
  for (const e of used.env) {
    if (!mountable.has(e.secret)) {
      return `${e.init ? 'init container' : 'container'} ${e.container} with envVar ${e.env} referencing secret.secretName="${e.secret}" is not allowed because service account ${saName} does not reference that secret`;
    }
  }
  const pullable = new Set(objects(sa['imagePullSecrets']).map((s) => str(s['name'])));
  for (const [i, name] of used.pull.entries()) {
    if (!pullable.has(name)) return `imagePullSecrets[${i}].name="${name}" is not allowed because service account ${saName} does not reference that imagePullSecret`;
  }
  return undefined;
}

function mirrorPodProblem(spec: Json): string | undefined {
  if (str(spec['serviceAccountName']) !== '') return 'a mirror pod may not reference service accounts';
  const used = podSecretNames(spec);
  if (used.volumes.length + used.env.length + used.pull.length > 0) return 'a mirror pod may not reference secrets';
  for (const v of objects(spec['volumes'])) {
    if (isObject(v['projected']) && objects(v['projected']['sources']).some((s) => isObject(s['serviceAccountToken']))) {
      return 'a mirror pod may not use ServiceAccountToken volume projections';
    }
  }
  return undefined;
}

export function serviceAccountAdmission(deps: ServiceAccountAdmissionDeps): Admission {
  // The accounts from an in-memory copy (as Kubernetes' lister); a miss asks storage.
  const accounts = lister(deps.serviceAccounts);
  const get = async (namespace: string, name: string): Promise<KObject | undefined> => {
    if (!accounts.served()) return undefined;
    try {
      return await accounts.get(namespace, name);
    } catch (err) {
      if (isStatusError(err, 'NotFound')) return undefined;
      throw err;
    }
  };
  /** getServiceAccount: the `default` account is looked for ten times, as its controller is making it. */
  const lookup = async (namespace: string, name: string): Promise<KObject | undefined> => {
    const attempts = name === DEFAULT_SERVICE_ACCOUNT_NAME ? 10 : 1;
    const interval = deps.retryIntervalMs ?? 100 + Math.floor(Math.random() * 100);
    for (let i = 0; i < attempts; i++) {
      if (i > 0) {
        // A namespace that does not exist will never get its account: NamespaceLifecycle refuses the pod.
        if (!(await namespaceExists(namespace))) return undefined;
        await sleep(interval);
      }
      const sa = await get(namespace, name);
      if (sa) return sa;
    }
    return undefined;
  };
  const namespaceExists = async (namespace: string): Promise<boolean> => {
    try {
      await deps.namespaces()?.get({ namespace: '' }, namespace);
      return true;
    } catch (err) {
      if (isStatusError(err, 'NotFound')) return false;
      throw err;
    }
  };
  const forbidden = (a: AdmissionAttributes, message: string) => apiErrors.forbidden({ group: '', resource: 'pods' }, a.name, message);
  const notFound = (a: AdmissionAttributes, name: string) =>
    forbidden(a, `error looking up service account ${a.namespace}/${name}: serviceaccount ${JSON.stringify(name)} not found`);

  return {
    handles: (d, op) => op === 'CREATE' && d.group === '' && d.resource === 'pods',
    async mutate(a) {
      if (!isPodCreate(a) || isMirror(a.object!)) return;
      const spec: Json = isObject(a.object!['spec']) ? a.object!['spec'] : (a.object!['spec'] = {});
      if (str(spec['serviceAccountName']) === '') spec['serviceAccountName'] = DEFAULT_SERVICE_ACCOUNT_NAME;
      const sa = await lookup(a.namespace, spec['serviceAccountName'] as string);
      // A missing account is refused in validation, after NamespaceLifecycle had its say.
      if (!sa) return;
      if (deps.mountToken() && shouldAutomount(sa, spec)) mountServiceAccountToken(spec);
      const pull = objects(sa['imagePullSecrets']);
      if (objects(spec['imagePullSecrets']).length === 0 && pull.length > 0) spec['imagePullSecrets'] = pull.map((r) => ({ name: str(r['name']) }));
    },
    async validate(a) {
      if (!isPodCreate(a)) return;
      const spec: Json = isObject(a.object!['spec']) ? a.object!['spec'] : {};
      if (isMirror(a.object!)) {
        const problem = mirrorPodProblem(spec);
        if (problem) throw forbidden(a, problem);
        return;
      }
      const name = str(spec['serviceAccountName']);
      if (name === '') throw forbidden(a, `no service account specified for pod ${a.namespace}/${a.name}`);
      const sa = await get(a.namespace, name);
      if (!sa) throw notFound(a, name);
      if (sa.metadata?.annotations?.[ENFORCE_MOUNTABLE_SECRETS_ANNOTATION] === 'true') {
        const problem = limitSecretReferences(sa, spec);
        if (problem) throw forbidden(a, problem);
      }
    },
  };
}
