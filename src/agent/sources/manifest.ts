// Decoding, checking and defaulting of pod manifests read by the file source (and later the URL
// source), with kubelet's identity for static pods (pkg/kubelet/config/common.go):
//   uid          md5 of the manifest, then "host:<node>" and "file:<path>" for files, "url:<url>" for the
//                URL source and "url:orchlet-manifest:<name>" for manifests submitted to the agent's
//                endpoint; kept if the manifest sets one
//   name         <name>-<nodeName>
//   namespace    'default' when absent
//   spec.nodeName the node
//   annotations  kubernetes.io/config.hash (= uid), kubernetes.io/config.source ('file', 'http' for the
//                URL source, 'push' for the agent's manifest endpoint);
//                kubernetes.io/config.seen is added by the merge when it first sees the pod.
// The hash is taken over the manifest's JSON with object keys sorted, so key order and YAML vs JSON
// spelling do not change a pod's identity; any change of content does (an edited manifest is a new
// pod: the old one is deleted and the new one added, as in kubelet).
import { createHash } from 'node:crypto';
import { parse as parseYAML } from 'yaml';
import { isDNS1123Label, isDNS1123Subdomain } from '../../util/validation.js';
import type { Container, Pod } from '../types.js';

export const CONFIG_SOURCE_ANNOTATION = 'kubernetes.io/config.source';
export const CONFIG_HASH_ANNOTATION = 'kubernetes.io/config.hash';
export const CONFIG_SEEN_ANNOTATION = 'kubernetes.io/config.seen';

export type SourceName = 'file' | 'http' | 'push' | 'api';

export const CONFIG_MIRROR_ANNOTATION = 'kubernetes.io/config.mirror';

/** Thrown for a manifest that cannot be decoded or is not a valid pod; the message says why. */
export class ManifestError extends Error {
  override name = 'ManifestError';
}

/**
 * Decodes one manifest (a YAML or JSON document holding a Pod, or a PodList / List of pods) into
 * plain objects. Throws ManifestError; never returns an empty list for a non-empty file.
 */
export function decodeManifest(text: string): Record<string, unknown>[] {
  let doc: unknown;
  try {
    doc = parseYAML(text);
  } catch (err) {
    throw new ManifestError(`cannot decode: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (!isObject(doc)) throw new ManifestError('expected a Pod object');
  if (doc.kind === 'PodList' || doc.kind === 'List') {
    const items = doc.items;
    if (!Array.isArray(items)) throw new ManifestError(`${String(doc.kind)}: items must be a list`);
    return items.map((item, i) => {
      if (!isObject(item)) throw new ManifestError(`items[${i}]: expected a Pod object`);
      return item;
    });
  }
  return [doc];
}

/** Field problems of a decoded manifest; empty when it is a pod orchlet can run. */
export function checkPodManifest(obj: Record<string, unknown>): string[] {
  const errs: string[] = [];
  if (obj.apiVersion !== 'v1') errs.push(`apiVersion: Unsupported value: ${JSON.stringify(obj.apiVersion)}: supported values: "v1"`);
  if (obj.kind !== 'Pod') errs.push(`kind: Unsupported value: ${JSON.stringify(obj.kind)}: supported values: "Pod"`);
  const meta = obj.metadata;
  if (!isObject(meta)) errs.push('metadata: Required value');
  else {
    if (typeof meta.name !== 'string' || meta.name === '') errs.push('metadata.name: Required value: name or generateName is required');
    else for (const e of isDNS1123Subdomain(meta.name)) errs.push(`metadata.name: Invalid value: "${meta.name}": ${e}`);
    if (meta.namespace !== undefined && (typeof meta.namespace !== 'string' || isDNS1123Label(meta.namespace).length > 0)) {
      errs.push(`metadata.namespace: Invalid value: ${JSON.stringify(meta.namespace)}: must be a DNS-1123 label`);
    }
  }
  const spec = obj.spec;
  if (!isObject(spec)) {
    errs.push('spec: Required value');
    return errs;
  }
  const rp = spec.restartPolicy;
  if (rp !== undefined && rp !== 'Always' && rp !== 'OnFailure' && rp !== 'Never') {
    errs.push(`spec.restartPolicy: Unsupported value: ${JSON.stringify(rp)}: supported values: "Always", "OnFailure", "Never"`);
  }
  const grace = spec.terminationGracePeriodSeconds;
  if (grace !== undefined && (!Number.isInteger(grace) || (grace as number) < 0)) {
    errs.push('spec.terminationGracePeriodSeconds: Invalid value: must be an integer greater than or equal to 0');
  }
  errs.push(...checkSecurityContext(spec.securityContext, 'spec.securityContext'));
  if (!Array.isArray(spec.containers) || spec.containers.length === 0) errs.push('spec.containers: Required value');
  const names = new Set<string>();
  for (const [field, list] of [['containers', spec.containers], ['initContainers', spec.initContainers]] as const) {
    if (list === undefined) continue;
    if (!Array.isArray(list)) {
      errs.push(`spec.${field}: Invalid value: must be a list`);
      continue;
    }
    list.forEach((c: unknown, i: number) => errs.push(...checkContainer(c, `spec.${field}[${i}]`, names)));
  }
  return errs;
}

function checkContainer(c: unknown, path: string, names: Set<string>): string[] {
  if (!isObject(c)) return [`${path}: Invalid value: must be an object`];
  const errs: string[] = [];
  if (typeof c.name !== 'string' || c.name === '') errs.push(`${path}.name: Required value`);
  else {
    for (const e of isDNS1123Label(c.name)) errs.push(`${path}.name: Invalid value: "${c.name}": ${e}`);
    if (names.has(c.name)) errs.push(`${path}.name: Duplicate value: "${c.name}"`);
    names.add(c.name);
  }
  if (typeof c.image !== 'string' || c.image.trim() === '') errs.push(`${path}.image: Required value`);
  for (const f of ['command', 'args'] as const) {
    const v = c[f];
    if (v !== undefined && (!Array.isArray(v) || v.some((s) => typeof s !== 'string'))) errs.push(`${path}.${f}: Invalid value: must be a list of strings`);
  }
  if (c.workingDir !== undefined && typeof c.workingDir !== 'string') errs.push(`${path}.workingDir: Invalid value: must be a string`);
  if (c.env !== undefined) {
    if (!Array.isArray(c.env)) errs.push(`${path}.env: Invalid value: must be a list`);
    else
      c.env.forEach((e: unknown, i: number) => {
        if (!isObject(e) || typeof e.name !== 'string' || e.name === '') errs.push(`${path}.env[${i}].name: Required value`);
        else if (e.value !== undefined && typeof e.value !== 'string') errs.push(`${path}.env[${i}].value: Invalid value: must be a string`);
        else if (e.valueFrom !== undefined) errs.push(`${path}.env[${i}].valueFrom: Forbidden: not supported by orchlet yet`);
      });
  }
  errs.push(...checkSecurityContext(c.securityContext, `${path}.securityContext`));
  return errs;
}

function checkSecurityContext(sc: unknown, path: string): string[] {
  if (sc === undefined) return [];
  if (!isObject(sc)) return [`${path}: Invalid value: must be an object`];
  const errs: string[] = [];
  for (const f of ['runAsUser', 'runAsGroup'] as const) {
    const v = sc[f];
    if (v !== undefined && (!Number.isInteger(v) || (v as number) < 0 || (v as number) > 2147483647)) {
      errs.push(`${path}.${f}: Invalid value: ${JSON.stringify(v)}: must be between 0 and 2147483647, inclusive`);
    }
  }
  if (sc.privileged !== undefined && typeof sc.privileged !== 'boolean') errs.push(`${path}.privileged: Invalid value: must be a boolean`);
  return errs;
}

/** The static-pod identity hash (see the file comment): 32 hex digits. */
export function staticPodHash(manifest: unknown, nodeName: string, sourcePath: string, source: SourceName = 'file'): string {
  const h = createHash('md5');
  h.update(canonicalJSON(manifest));
  if (source === 'file') {
    h.update(`host:${nodeName}`);
    h.update(`file:${sourcePath}`);
  } else h.update(`url:${sourcePath}`);
  return h.digest('hex');
}

/**
 * Turns a checked manifest into the pod orchlet runs: identity as described in the file comment,
 * API defaults the agent relies on (restartPolicy Always, terminationGracePeriodSeconds 30), and the
 * NoExecute toleration kubelet gives static pods. Does not mutate `manifest`.
 */
export function staticPodFromManifest(manifest: Record<string, unknown>, source: SourceName, nodeName: string, sourcePath: string): Pod {
  const obj = structuredClone(manifest) as unknown as Pod;
  const meta = obj.metadata;
  const uid = typeof meta.uid === 'string' && meta.uid !== '' ? meta.uid : staticPodHash(manifest, nodeName, sourcePath, source);
  meta.uid = uid;
  meta.name = `${meta.name}-${nodeName.toLowerCase()}`;
  if (typeof meta.namespace !== 'string' || meta.namespace === '') meta.namespace = 'default';
  meta.annotations = { ...(meta.annotations ?? {}), [CONFIG_HASH_ANNOTATION]: uid, [CONFIG_SOURCE_ANNOTATION]: source };
  const spec = obj.spec;
  spec.nodeName = nodeName;
  spec.restartPolicy ??= 'Always';
  spec.terminationGracePeriodSeconds ??= 30;
  const tolerations = spec.tolerations ?? [];
  if (!tolerations.some((t) => t.operator === 'Exists' && t.effect === 'NoExecute' && t.key === undefined)) {
    spec.tolerations = [...tolerations, { operator: 'Exists', effect: 'NoExecute' }];
  }
  const defaultContainer = (c: Container): void => {
    c.terminationMessagePath ??= '/dev/termination-log';
    c.terminationMessagePolicy ??= 'File';
    c.imagePullPolicy ??= c.image.endsWith(':latest') || !c.image.includes(':') ? 'Always' : 'IfNotPresent';
  };
  spec.containers.forEach(defaultContainer);
  spec.initContainers?.forEach(defaultContainer);
  obj.status = { phase: 'Pending' };
  return obj;
}

/** JSON with object keys sorted at every level. */
export function canonicalJSON(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJSON).join(',')}]`;
  if (isObject(v)) {
    const keys = Object.keys(v).filter((k) => v[k] !== undefined).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJSON(v[k])}`).join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Decodes, checks and turns one manifest text into static pods; throws ManifestError naming the problems. */
export function podsFromManifestText(text: string, source: SourceName, nodeName: string, sourcePath: string): Pod[] {
  if (text.trim() === '') return [];
  const objects = decodeManifest(text);
  for (const obj of objects) {
    const problems = checkPodManifest(obj);
    if (problems.length > 0) throw new ManifestError(`invalid pod: ${problems.join('; ')}`);
  }
  return objects.map((obj) => staticPodFromManifest(obj, source, nodeName, sourcePath));
}
