/**
 * PodSecurity admission, as Kubernetes 1.23's (k8s.io/pod-security-admission, the in-tree plugin):
 *   - pods (create, and updates that change an image or a seccomp annotation; subresources other than
 *     ephemeralcontainers are skipped): the namespace's enforce policy refuses a violating pod with 403
 *     ('violates PodSecurity "restricted:latest": reason (detail), ...'); the audit policy's violations become
 *     the pod-security.kubernetes.io/audit-violations annotation of the request's audit event; the warn
 *     policy's become a Warning (only when the pod is admitted). The enforce policy evaluated is recorded as
 *     the pod-security.kubernetes.io/enforce-policy audit annotation.
 *   - pod controllers (podtemplates, replicationcontrollers, replicasets, deployments, statefulsets,
 *     daemonsets, jobs, cronjobs): their pod template is checked for audit and warn only.
 *   - namespaces: the labels must name valid levels and versions (422 otherwise); a namespace update that
 *     makes enforce stricter is answered with warnings naming the existing pods that violate the new level.
 * Exempt namespaces, users and runtime classes (PodSecurityConfiguration) are skipped, recorded as the
 * pod-security.kubernetes.io/exempt audit annotation; the configuration's defaults apply to unlabelled modes.
 */
import { lister } from '../informer.js';
import { apiErrors, isStatusError } from '../../errors.js';
import type { KObject } from '../../kind.js';
import type { Admission, AdmissionAttributes, ResourceStore } from '../../store.js';
import { evaluate, forbiddenDetail, forbiddenReason, type Json } from './checks.js';
import { DEFAULT_CONFIG, policyFromLabels, policyString, type LevelVersion, type Policy, type PodSecurityConfig } from './policy.js';

export { parsePodSecurityConfig, type PodSecurityConfig } from './policy.js';

const ANNOTATION_PREFIX = 'pod-security.kubernetes.io/';
/** Existing pods checked when a namespace's enforce level changes (Kubernetes' namespaceMaxPodsToCheck). */
const MAX_PODS_TO_CHECK = 3000;

export interface PodSecurityDeps {
  namespaces: () => ResourceStore | undefined;
  pods: () => ResourceStore | undefined;
  config?: PodSecurityConfig;
}

const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const obj = (v: unknown): Json => (isObj(v) ? v : {});

/** The pod template of a pod controller, by resource; undefined when the resource is not a controller. */
const TEMPLATE_PATHS: Record<string, readonly string[]> = {
  '/podtemplates': ['template'],
  '/replicationcontrollers': ['spec', 'template'],
  'apps/replicasets': ['spec', 'template'],
  'apps/deployments': ['spec', 'template'],
  'apps/statefulsets': ['spec', 'template'],
  'apps/daemonsets': ['spec', 'template'],
  'batch/jobs': ['spec', 'template'],
  'batch/cronjobs': ['spec', 'jobTemplate', 'spec', 'template'],
};

function podTemplate(o: KObject, path: readonly string[]): Json | undefined {
  let cur: unknown = o;
  for (const p of path) {
    if (!isObj(cur)) return undefined;
    cur = cur[p];
  }
  return isObj(cur) ? cur : undefined;
}

/** Kubernetes' isSignificantPodUpdate: a container's image or a seccomp annotation changed, or containers were added. */
function significantPodUpdate(pod: KObject, old: KObject): boolean {
  const ann = obj(pod.metadata?.annotations);
  const oldAnn = obj(old.metadata?.annotations);
  if (ann['seccomp.security.alpha.kubernetes.io/pod'] !== oldAnn['seccomp.security.alpha.kubernetes.io/pod']) return true;
  const spec = obj(pod['spec']);
  const oldSpec = obj(old['spec']);
  const changed = (c: Json, oc: Json | undefined): boolean => {
    if (!oc || c['image'] !== oc['image']) return true;
    const key = `container.seccomp.security.alpha.kubernetes.io/${String(c['name'] ?? '')}`;
    return ann[key] !== oldAnn[key];
  };
  for (const field of ['containers', 'initContainers']) {
    const list = Array.isArray(spec[field]) ? (spec[field] as Json[]) : [];
    const oldList = Array.isArray(oldSpec[field]) ? (oldSpec[field] as Json[]) : [];
    if (list.length !== oldList.length) return true;
    if (list.some((c, i) => changed(c, oldList[i]))) return true;
  }
  const oldEphemeral = Array.isArray(oldSpec['ephemeralContainers']) ? (oldSpec['ephemeralContainers'] as Json[]) : [];
  const ephemeral = Array.isArray(spec['ephemeralContainers']) ? (spec['ephemeralContainers'] as Json[]) : [];
  return ephemeral.some((c) => changed(c, oldEphemeral.find((oc) => oc['name'] === c['name'])));
}

export function podSecurity(deps: PodSecurityDeps): Admission {
  const config = deps.config ?? DEFAULT_CONFIG;
  const ex = config.exemptions;

  // Namespaces from an in-memory copy (as Kubernetes' lister); a miss asks storage.
  const namespaces = lister(deps.namespaces);
  const namespacePolicy = async (a: AdmissionAttributes): Promise<{ policy: Policy; error?: string } | undefined> => {
    if (!namespaces.served()) return undefined;
    let ns: KObject;
    try {
      ns = await namespaces.get('', a.namespace);
    } catch (err) {
      if (isStatusError(err, 'NotFound')) return undefined;
      throw err;
    }
    const { policy, errors } = policyFromLabels(obj(ns.metadata?.labels), config.defaults);
    return errors.length > 0 ? { policy, error: `Failed to parse policy: ${errors.map((e) => e.toString()).join(', ')}` } : { policy };
  };

  /** Whether the request is exempt (recorded in the audit event). */
  const exempt = (a: AdmissionAttributes, runtimeClass?: unknown): boolean => {
    let why: string | undefined;
    if (a.namespace !== '' && ex.namespaces.includes(a.namespace)) why = 'namespace';
    else if (a.user?.name && ex.usernames.includes(a.user.name)) why = 'user';
    else if (typeof runtimeClass === 'string' && runtimeClass !== '' && ex.runtimeClasses.includes(runtimeClass)) why = 'runtimeClass';
    if (why) a.annotate(`${ANNOTATION_PREFIX}exempt`, why);
    return why !== undefined;
  };

  /** Evaluates a pod or a template; throws the enforce refusal, annotates audit, pushes the warning. */
  const evaluatePod = (a: AdmissionAttributes, nsPolicy: { policy: Policy; error?: string }, meta: Json, spec: Json, enforce: boolean): void => {
    if (exempt(a, spec['runtimeClassName'])) return;
    const { policy } = nsPolicy;
    if (nsPolicy.error) a.annotate(`${ANNOTATION_PREFIX}error`, nsPolicy.error);
    const cache = new Map<string, ReturnType<typeof evaluate>>();
    const run = (lv: LevelVersion) => {
      const key = policyString(lv);
      let r = cache.get(key);
      if (!r) {
        r = evaluate(lv.level, lv.version, meta, spec);
        cache.set(key, r);
      }
      return r;
    };
    let refusal: Error | undefined;
    if (enforce) {
      a.annotate(`${ANNOTATION_PREFIX}enforce-policy`, policyString(policy.enforce));
      const failed = run(policy.enforce);
      if (failed.length > 0) {
        refusal = apiErrors.forbidden(
          { group: a.decl.group, resource: a.decl.resource },
          a.name,
          `violates PodSecurity ${JSON.stringify(policyString(policy.enforce))}: ${forbiddenDetail(failed)}`,
        );
      }
    }
    const audited = run(policy.audit);
    if (audited.length > 0) {
      a.annotate(`${ANNOTATION_PREFIX}audit-violations`, `would violate PodSecurity ${JSON.stringify(policyString(policy.audit))}: ${forbiddenDetail(audited)}`);
    }
    if (refusal) throw refusal;
    const warned = run(policy.warn);
    if (warned.length > 0) a.warnings.push(`would violate PodSecurity ${JSON.stringify(policyString(policy.warn))}: ${forbiddenDetail(warned)}`);
  };

  const allPrivileged = (p: Policy, modes: readonly (keyof Policy)[]): boolean => modes.every((m) => p[m].level === 'privileged');

  const validatePod = async (a: AdmissionAttributes, pod: KObject): Promise<void> => {
    if (a.subresource !== '' && a.subresource !== 'ephemeralcontainers') return;
    if (a.operation === 'UPDATE' && a.oldObject && !significantPodUpdate(pod, a.oldObject)) return;
    if (exempt(a)) return;
    const nsPolicy = await namespacePolicy(a);
    if (!nsPolicy || (!nsPolicy.error && allPrivileged(nsPolicy.policy, ['enforce', 'audit', 'warn']))) return;
    evaluatePod(a, nsPolicy, obj(pod.metadata), obj(pod['spec']), true);
  };

  const validateController = async (a: AdmissionAttributes, path: readonly string[]): Promise<void> => {
    if (a.subresource !== '' || !a.object) return;
    if (exempt(a)) return;
    const nsPolicy = await namespacePolicy(a);
    if (!nsPolicy || (!nsPolicy.error && allPrivileged(nsPolicy.policy, ['audit', 'warn']))) return;
    const template = podTemplate(a.object, path);
    if (!template) return;
    evaluatePod(a, nsPolicy, obj(template['metadata']), obj(template['spec']), false);
  };

  /** Warnings naming the existing pods that violate a new enforce level (Kubernetes' EvaluatePodsInNamespace). */
  const existingPodWarnings = async (namespace: string, enforce: LevelVersion): Promise<string[]> => {
    const store = deps.pods();
    if (!store) return [];
    const list = await store.list({ namespace }, {});
    const pods = ((list['items'] ?? []) as KObject[]).slice();
    const total = pods.length;
    const checked = pods.slice(0, MAX_PODS_TO_CHECK);
    const byReason = new Map<string, { first: string; count: number }>();
    for (const pod of checked) {
      const spec = obj(pod['spec']);
      const rc = spec['runtimeClassName'];
      if (typeof rc === 'string' && rc !== '' && ex.runtimeClasses.includes(rc)) continue;
      const failed = evaluate(enforce.level, enforce.version, obj(pod.metadata), spec);
      if (failed.length === 0) continue;
      const reason = forbiddenReason(failed);
      const name = pod.metadata?.name ?? '';
      const seen = byReason.get(reason);
      if (!seen) byReason.set(reason, { first: name, count: 1 });
      else byReason.set(reason, { first: name < seen.first ? name : seen.first, count: seen.count + 1 });
    }
    const warnings: string[] = [];
    if (checked.length < total) warnings.push(`new PodSecurity enforce level only checked against the first ${checked.length} of ${total} existing pods`);
    if (byReason.size > 0) warnings.push(`existing pods in namespace ${JSON.stringify(namespace)} violate the new PodSecurity enforce level ${JSON.stringify(policyString(enforce))}`);
    const podWarnings = [...byReason].map(([reason, { first, count }]) => {
      if (count === 1) return `${first}: ${reason}`;
      if (count === 2) return `${first} (and 1 other pod): ${reason}`;
      return `${first} (and ${count - 1} other pods): ${reason}`;
    });
    return [...warnings, ...podWarnings.sort()];
  };

  const validateNamespace = async (a: AdmissionAttributes): Promise<void> => {
    if (a.subresource !== '' || !a.object) return;
    const labels = obj(a.object.metadata?.labels) as Record<string, string>;
    const { policy, errors } = policyFromLabels(labels, config.defaults);
    const old = a.operation === 'UPDATE' && a.oldObject ? policyFromLabels(obj(a.oldObject.metadata?.labels), config.defaults) : undefined;
    if (errors.length > 0) {
      // An update that leaves the same bad labels as before is let through, as Kubernetes does.
      const text = (errs: typeof errors) => errs.map((e) => e.toString()).join('\n');
      if (!old || text(old.errors) !== text(errors)) throw apiErrors.invalid('', 'Namespace', a.name, errors);
      return;
    }
    if (!old || old.errors.length > 0) return;
    const before = old.policy.enforce;
    const after = policy.enforce;
    if (policyString(before) === policyString(after) || after.level === 'privileged') return;
    const rank = (l: LevelVersion['level']): number => ['privileged', 'baseline', 'restricted'].indexOf(l);
    if (policyString({ ...before, level: after.level }) === policyString(after) && rank(after.level) <= rank(before.level)) return;
    if (ex.namespaces.includes(a.name)) return;
    a.warnings.push(...(await existingPodWarnings(a.name, after)));
  };

  return {
    async validate(a) {
      if (a.operation !== 'CREATE' && a.operation !== 'UPDATE') return;
      if (a.decl.group === '' && a.decl.resource === 'namespaces') return validateNamespace(a);
      if (a.decl.group === '' && a.decl.resource === 'pods') return a.object ? validatePod(a, a.object) : undefined;
      const path = TEMPLATE_PATHS[`${a.decl.group === '' ? '' : a.decl.group}/${a.decl.resource}`];
      if (path) return validateController(a, path);
    },
  };
}
