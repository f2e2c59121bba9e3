/**
 * ImagePolicyWebhook admission, as Kubernetes 1.23's (plugin/pkg/admission/imagepolicy): pod creates and
 * updates (and pods/ephemeralcontainers) are sent to a backend as an imagepolicy.k8s.io/v1alpha1
 * ImageReview (every container's image, the pod's *.image-policy.k8s.io/* annotations, the namespace); a
 * review that does not allow the pod refuses it (403 'image policy webhook backend denied one or more
 * images: <reason>'). The answer's auditAnnotations go to the audit event under
 * imagepolicywebhook.image-policy.k8s.io/. Answers are cached for allowTTL / denyTTL seconds by the review's
 * spec. When the backend cannot be reached (after one retry after retryBackoff ms), defaultAllow decides: the
 * pod is admitted with the alpha.image-policy.k8s.io/failed-open annotation (and the
 * image-policy-failed-open audit annotation), or refused.
 *
 * Configuration (the `imagePolicy` key of the plugin's configuration, or of the legacy configuration file):
 *   imagePolicy: {kubeConfigFile: webhook.kubeconfig, allowTTL: 50, denyTTL: 50, retryBackoff: 500, defaultAllow: true}
 * The backend call itself is given by the server (`review`), made from kubeConfigFile.
 */
import { dirname, isAbsolute, resolve } from 'node:path';
import { apiErrors } from '../errors.js';
import type { Admission } from '../store.js';
import { listOf, objOf, type Json } from './pod-helpers.js';

const AUDIT_PREFIX = 'imagepolicywebhook.image-policy.k8s.io/';
const FAILED_OPEN_ANNOTATION = 'alpha.image-policy.k8s.io/failed-open';
const PODS = { group: '', resource: 'pods' };

export interface ImagePolicyConfig {
  /** The backend's kubeconfig-format file, absolute. */
  kubeConfigFile: string;
  allowTTLSeconds: number;
  denyTTLSeconds: number;
  retryBackoffMs: number;
  defaultAllow: boolean;
}

/** Reads the plugin's configuration (Kubernetes' defaults: allowTTL 300 s, denyTTL 30 s, retryBackoff 500 ms). */
export function parseImagePolicyConfig(object: unknown, source: string): ImagePolicyConfig {
  const o = objOf(objOf(object)['imagePolicy']);
  const file = typeof o['kubeConfigFile'] === 'string' ? o['kubeConfigFile'] : '';
  if (file === '') throw new Error(`${source}: imagePolicy.kubeConfigFile is required`);
  const num = (field: string, dflt: number, max: number): number => {
    const v = o[field];
    if (v === undefined || v === null || v === 0) return dflt;
    if (typeof v !== 'number' || v < 0 || v > max) throw new Error(`${source}: imagePolicy.${field} must be a number between 0 and ${max}`);
    return v;
  };
  return {
    kubeConfigFile: isAbsolute(file) ? file : resolve(dirname(source), file),
    allowTTLSeconds: num('allowTTL', 300, 1800),
    denyTTLSeconds: num('denyTTL', 30, 1800),
    retryBackoffMs: num('retryBackoff', 500, 300_000),
    defaultAllow: o['defaultAllow'] === true,
  };
}

export interface ImagePolicyDeps {
  config: ImagePolicyConfig;
  /** POSTs the review to the backend and answers its reply; throws when the backend cannot be reached. */
  review: (review: Json) => Promise<Json>;
  now?: () => number;
}

export function imagePolicyWebhook(deps: ImagePolicyDeps): Admission {
  const { config } = deps;
  const now = deps.now ?? Date.now;
  const cache = new Map<string, { status: Json; expires: number }>();

  const call = async (review: Json): Promise<Json> => {
    try {
      return await deps.review(review);
    } catch {
      await new Promise((r) => setTimeout(r, config.retryBackoffMs));
      return deps.review(review);
    }
  };

  return {
    async validate(a) {
      if (a.decl.group !== '' || a.decl.resource !== 'pods' || !a.object) return;
      if (a.subresource !== '' && a.subresource !== 'ephemeralcontainers') return;
      if (a.operation !== 'CREATE' && a.operation !== 'UPDATE') return;
      const pod = a.object;
      const spec = objOf(pod['spec']);
      const containers = [...listOf(spec['containers']), ...listOf(spec['initContainers']), ...listOf(spec['ephemeralContainers'])];
      const annotations: Record<string, string> = {};
      for (const [k, v] of Object.entries(objOf(pod.metadata?.annotations))) {
        if (/^[^/]*\.image-policy\.k8s\.io\//.test(k) && typeof v === 'string') annotations[k] = v;
      }
      const reviewSpec: Json = { containers: containers.map((c) => ({ image: c['image'] })) };
      if (Object.keys(annotations).length > 0) reviewSpec['annotations'] = annotations;
      if (a.namespace !== '') reviewSpec['namespace'] = a.namespace;
      const key = JSON.stringify(reviewSpec);
      let status: Json;
      const cached = cache.get(key);
      if (cached && cached.expires > now()) {
        status = cached.status;
      } else {
        let answer: Json;
        try {
          answer = await call({ apiVersion: 'imagepolicy.k8s.io/v1alpha1', kind: 'ImageReview', metadata: { creationTimestamp: null }, spec: reviewSpec, status: { allowed: false } });
        } catch (err) {
          if (config.defaultAllow) {
            a.annotate(`${AUDIT_PREFIX}image-policy-failed-open`, 'true');
            const meta = (pod.metadata ??= {});
            meta.annotations = { ...(meta.annotations ?? {}), [FAILED_OPEN_ANNOTATION]: 'true' };
            return;
          }
          throw apiErrors.forbidden(PODS, a.name, (err as Error).message);
        }
        status = objOf(answer['status']);
        cache.set(key, { status, expires: now() + 1000 * (status['allowed'] === true ? config.allowTTLSeconds : config.denyTTLSeconds) });
      }
      for (const [k, v] of Object.entries(objOf(status['auditAnnotations']))) if (typeof v === 'string') a.annotate(AUDIT_PREFIX + k, v);
      if (status['allowed'] !== true) {
        const reason = typeof status['reason'] === 'string' ? status['reason'] : '';
        throw apiErrors.forbidden(
          PODS,
          a.name,
          reason !== '' ? `image policy webhook backend denied one or more images: ${reason}` : 'one or more images rejected by webhook backend',
        );
      }
    },
  };
}
