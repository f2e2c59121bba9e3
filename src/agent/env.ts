// A container's environment as kubelet builds it (kubelet_pods.go makeEnvironmentVariables):
// envFrom sources first (ConfigMaps and Secrets, each key with the source's prefix; keys that are
// not valid variable names are skipped and reported), then env entries in order, each either a
// value with $(VAR) references to variables defined before it, or a valueFrom: configMapKeyRef,
// secretKeyRef, fieldRef (the downward API) or resourceFieldRef. A missing object or key that is
// not optional is an error whose message kubelet shows with CreateContainerConfigError. Service link
// variables (servicelinks.ts) come last.
// Also the downward API's field and resource values (shared with the downwardAPI volumes).
import { tryParseQuantity } from '../util/quantity.js';
import { ObjectNotFound, type ObjectKind, type ObjectRef, type ObjectSource } from './objects.js';
import type { ServiceEnvSource } from './servicelinks.js';
import type { Container, Pod } from './types.js';

type Json = Record<string, any>;

export interface EnvContext {
  pod: Pod;
  objects: ObjectSource;
  hostIP?: string;
  podIP?: string;
  /** The node's allocatable cpu (cores) and memory (bytes): limits.* of a container without limits. */
  allocatable: { cpu: number; memory: number; 'ephemeral-storage'?: number };
  /** Reports variables skipped from envFrom (kubelet's InvalidEnvironmentVariableNames event). */
  onInvalidNames?: (message: string) => void;
  /** Service links (servicelinks.ts): variables after the container's own, never replacing one. */
  services?: ServiceEnvSource;
}

const ENV_NAME = /^[-._a-zA-Z][-._a-zA-Z0-9]*$/;

/** The objects (ConfigMaps, Secrets) a pod refers to in env, envFrom, imagePullSecrets and volumes. */
export function podObjectRefs(pod: Pod): ObjectRef[] {
  const ns = pod.metadata.namespace;
  const out = new Map<string, ObjectRef>();
  const add = (kind: ObjectKind, name: unknown): void => {
    if (typeof name === 'string' && name !== '') out.set(`${kind}/${name}`, { kind, namespace: ns, name });
  };
  for (const c of [...(pod.spec.initContainers ?? []), ...pod.spec.containers]) {
    for (const f of (c.envFrom ?? []) as Json[]) {
      add('configmaps', f.configMapRef?.name);
      add('secrets', f.secretRef?.name);
    }
    for (const e of (c.env ?? []) as Json[]) {
      add('configmaps', e.valueFrom?.configMapKeyRef?.name);
      add('secrets', e.valueFrom?.secretKeyRef?.name);
    }
  }
  for (const r of (pod.spec.imagePullSecrets ?? []) as Json[]) add('secrets', r.name);
  for (const v of (pod.spec.volumes ?? []) as Json[]) {
    add('configmaps', v.configMap?.name);
    add('secrets', v.secret?.secretName);
    for (const s of (v.projected?.sources ?? []) as Json[]) {
      add('configmaps', s.configMap?.name);
      add('secrets', s.secret?.name);
    }
  }
  return [...out.values()];
}

/** The data of a ConfigMap or Secret as strings (Secret data and binaryData are base64). */
export function objectData(kind: ObjectKind, obj: Json): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  if (kind === 'configmaps') {
    for (const [k, v] of Object.entries((obj.data ?? {}) as Record<string, string>)) out.set(k, Buffer.from(String(v), 'utf8'));
    for (const [k, v] of Object.entries((obj.binaryData ?? {}) as Record<string, string>)) out.set(k, Buffer.from(String(v), 'base64'));
  } else {
    for (const [k, v] of Object.entries((obj.data ?? {}) as Record<string, string>)) out.set(k, Buffer.from(String(v), 'base64'));
    for (const [k, v] of Object.entries((obj.stringData ?? {}) as Record<string, string>)) out.set(k, Buffer.from(String(v), 'utf8'));
  }
  return out;
}

/** Reads an object; undefined when it is missing and optional. */
async function optionalObject(ctx: EnvContext, kind: ObjectKind, name: string, optional: boolean): Promise<Map<string, Buffer> | undefined> {
  try {
    return objectData(kind, await ctx.objects.get(kind, ctx.pod.metadata.namespace, name));
  } catch (err) {
    if (err instanceof ObjectNotFound && optional) return undefined;
    throw err;
  }
}

/**
 * The value of a downward API field path (metadata.name, metadata.namespace, metadata.uid,
 * metadata.labels['k'], metadata.annotations['k'], metadata.labels and metadata.annotations as
 * kubelet formats them for volumes, spec.nodeName, spec.serviceAccountName, status.hostIP,
 * status.podIP, status.podIPs). Throws for an unsupported path.
 */
export function fieldValue(ctx: Pick<EnvContext, 'pod' | 'hostIP' | 'podIP'>, fieldPath: string): string {
  const { pod } = ctx;
  const sub = /^metadata\.(labels|annotations)\['(.*)'\]$/.exec(fieldPath);
  if (sub) return (sub[1] === 'labels' ? pod.metadata.labels : pod.metadata.annotations)?.[sub[2]!] ?? '';
  switch (fieldPath) {
    case 'metadata.name':
      return pod.metadata.name;
    case 'metadata.namespace':
      return pod.metadata.namespace;
    case 'metadata.uid':
      return pod.metadata.uid;
    case 'metadata.labels':
      return formatMap(pod.metadata.labels ?? {});
    case 'metadata.annotations':
      return formatMap(pod.metadata.annotations ?? {});
    case 'spec.nodeName':
      return pod.spec.nodeName ?? '';
    case 'spec.serviceAccountName':
      return typeof pod.spec.serviceAccountName === 'string' ? pod.spec.serviceAccountName : '';
    case 'status.hostIP':
      return ctx.hostIP ?? '';
    case 'status.podIP':
    case 'status.podIPs':
      return ctx.podIP ?? ctx.hostIP ?? '';
  }
  throw new Error(`unsupported fieldPath: ${fieldPath}`);
}

/** kubelet's fieldpath.FormatMap: `key="value"` lines in key order, Go-quoted. */
export function formatMap(m: Record<string, string>): string {
  return Object.keys(m)
    .sort()
    .map((k) => `${k}=${JSON.stringify(m[k])}`)
    .join('\n');
}

/** A resourceFieldRef's value (kubelet's ExtractContainerResourceValue): ceil(quantity / divisor). */
export function resourceValue(ctx: Pick<EnvContext, 'pod' | 'allocatable'>, containerName: string | undefined, ref: Json): string {
  const c = [...ctx.pod.spec.containers, ...(ctx.pod.spec.initContainers ?? [])].find((x) => x.name === (ref.containerName || containerName));
  if (!c) throw new Error(`container ${String(ref.containerName ?? containerName)} not found`);
  const [kind, res] = String(ref.resource ?? '').split('.', 2) as [string, string | undefined];
  if ((kind !== 'limits' && kind !== 'requests') || res === undefined) throw new Error(`unsupported container resource: ${String(ref.resource)}`);
  const resources = (c.resources ?? {}) as { limits?: Record<string, unknown>; requests?: Record<string, unknown> };
  const raw = resources[kind]?.[res] ?? (kind === 'requests' ? resources.limits?.[res] : undefined);
  const divisor = tryParseQuantity(String(ref.divisor ?? '1')) ?? tryParseQuantity('1')!;
  const divMilli = Number(divisor.milliValue()) || 1000;
  let milli: number;
  if (typeof raw === 'string' || typeof raw === 'number') milli = Number(tryParseQuantity(String(raw))?.milliValue() ?? 0n);
  else if (kind === 'limits') milli = ((ctx.allocatable as Record<string, number | undefined>)[res] ?? 0) * 1000;
  else milli = 0;
  return String(Math.ceil(milli / divMilli));
}

/**
 * The environment of a container, in order. Throws ObjectNotFound (or Error) with kubelet's message
 * when a reference cannot be resolved.
 */
export async function containerEnv(ctx: EnvContext, c: Container): Promise<Map<string, string>> {
  const env = new Map<string, string>();
  const serviceEnv = ctx.services?.envFor(ctx.pod);
  // $(VAR) sees the container's variables first, then the service links (kubelet's MappingFuncFor).
  const refs = serviceEnv ? { has: (k: string) => env.has(k) || serviceEnv.has(k), get: (k: string) => env.get(k) ?? serviceEnv.get(k) } : env;
  for (const f of (c.envFrom ?? []) as Json[]) {
    const prefix = typeof f.prefix === 'string' ? f.prefix : '';
    const [kind, ref, label] = f.configMapRef
      ? (['configmaps', f.configMapRef as Json, 'configMap'] as const)
      : f.secretRef
        ? (['secrets', f.secretRef as Json, 'secret'] as const)
        : [undefined, undefined, ''];
    if (!kind || !ref) continue;
    const data = await optionalObject(ctx, kind, String(ref.name), ref.optional === true);
    if (!data) continue;
    const invalid: string[] = [];
    for (const [k, v] of data) {
      const name = prefix + k;
      if (!ENV_NAME.test(name)) invalid.push(k);
      else env.set(name, v.toString('utf8'));
    }
    if (invalid.length > 0) {
      ctx.onInvalidNames?.(
        `Keys [${invalid.sort().join(', ')}] from the EnvFrom ${label} ${ctx.pod.metadata.namespace}/${String(ref.name)} were skipped since they are considered invalid environment variable names.`,
      );
    }
  }
  for (const e of (c.env ?? []) as Json[]) {
    const name = String(e.name);
    const vf = e.valueFrom as Json | undefined;
    if (!vf) {
      env.set(name, expandVars(String(e.value ?? ''), refs));
      continue;
    }
    if (vf.configMapKeyRef || vf.secretKeyRef) {
      const kind: ObjectKind = vf.configMapKeyRef ? 'configmaps' : 'secrets';
      const ref = (vf.configMapKeyRef ?? vf.secretKeyRef) as Json;
      const optional = ref.optional === true;
      const data = await optionalObject(ctx, kind, String(ref.name), optional);
      if (!data) continue;
      const v = data.get(String(ref.key));
      if (v === undefined) {
        if (optional) continue;
        const what = kind === 'configmaps' ? 'ConfigMap' : 'Secret';
        throw new ObjectNotFound(`couldn't find key ${String(ref.key)} in ${what} ${ctx.pod.metadata.namespace}/${String(ref.name)}`);
      }
      env.set(name, v.toString('utf8'));
    } else if (vf.fieldRef) {
      env.set(name, fieldValue(ctx, String((vf.fieldRef as Json).fieldPath)));
    } else if (vf.resourceFieldRef) {
      env.set(name, resourceValue(ctx, c.name, vf.resourceFieldRef as Json));
    }
  }
  for (const [k, v] of serviceEnv ?? []) if (!env.has(k)) env.set(k, v);
  return env;
}

/**
 * Kubernetes variable references: $(NAME) becomes the value of an earlier env var NAME, an unknown
 * reference stays as written, $$ is an escaped $.
 */
export function expandVars(s: string, env: Pick<ReadonlyMap<string, string>, 'has' | 'get'>): string {
  return s.replace(/\$\$|\$\(([^)]*)\)/g, (m: string, name: string | undefined) => {
    if (m === '$$') return '$';
    return name !== undefined && env.has(name) ? env.get(name)! : m;
  });
}
