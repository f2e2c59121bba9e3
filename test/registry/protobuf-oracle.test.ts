/**
 * Kubernetes' own message definitions as an oracle: the generated.proto files of Debian's kubernetes source
 * package (scripts/fetch-kubernetes-src.sh fetches it into a cache outside the repository; .ci/run does it under
 * CI) loaded with protobufjs.
 *   - Every message orch's table has that Kubernetes 1.20 defines agrees field by field: number, name, type,
 *     repeated/map (fields added in 1.21-1.23 are the only ones 1.20 lacks).
 *   - Bytes orch writes for a full object of every served kind decode there, and what that side encodes back
 *     decodes in orch to the same object (less the fields 1.20 does not have).
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import protobuf from 'protobufjs';
import { decodeMessage, encodeMessage, kindMessage, messageDescriptor, messageNames, type MessageDescriptor } from '../../src/util/protobuf.js';
import { sampleObject, servedKinds } from './protobuf-samples.js';
import { jsonDiff } from './protobuf-kinds.test.js';

const CACHE = process.env.ORCH_KUBERNETES_SRC_CACHE ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'orch-kubernetes-src');

/** The staging/src/k8s.io directory of the source package: KUBERNETES_SRC, the cache, or fetched now. */
function kubernetesSource(): string | null {
  if (process.env.KUBERNETES_SRC) return process.env.KUBERNETES_SRC;
  const cached = () => {
    if (!existsSync(CACHE)) return null;
    const dir = readdirSync(CACHE).filter((d) => d.startsWith('kubernetes-')).sort().pop();
    const src = dir && join(CACHE, dir, 'staging', 'src', 'k8s.io');
    return src && existsSync(join(src, 'api', 'core', 'v1', 'generated.proto')) ? src : null;
  };
  const found = cached();
  if (found) return found;
  try {
    return execFileSync('bash', [join(process.cwd(), 'scripts', 'fetch-kubernetes-src.sh'), CACHE], { encoding: 'utf8', timeout: 300_000, stdio: ['ignore', 'pipe', 'pipe'] }).trim();
  } catch (err) {
    if (process.env.CI === 'true') throw new Error(`Debian's kubernetes source package is required under CI=true: ${(err as Error).message}`, { cause: err });
    return null;
  }
}

const src = kubernetesSource();
const skip = src === null ? "Debian's kubernetes source package could not be fetched (scripts/fetch-kubernetes-src.sh)" : false;

/** Packages orch serves that Debian's 1.20 lacks, and the 1.20 package with the same messages and numbers. */
const PACKAGE_ALIASES: Readonly<Record<string, string>> = { 'flowcontrol.v1beta2': 'flowcontrol.v1beta1', 'policy.v1': 'policy.v1beta1' };
/** Messages 1.21-1.23 added, and fields whose message they changed (same numbers; scripts/gen-protobuf.mjs). */
const NEW_AFTER_1_20 = new Set(['core.v1.PodOS', 'core.v1.GRPCAction', 'networking.v1.IngressClassParametersReference']);
const RETYPED_AFTER_1_20 = new Set(['networking.v1.IngressClassSpec.parameters']);
/** Messages 1.23 renamed (Handler split into ProbeHandler and LifecycleHandler). */
const RENAMED: Readonly<Record<string, string>> = {};
/** Fields 1.21-1.23 added (scripts/gen-protobuf.mjs lists them): 1.20 does not have them. */
const ADDED_AFTER_1_20 = new Set([
  'core.v1.PersistentVolumeClaimSpec.dataSourceRef', 'core.v1.PersistentVolumeClaimStatus.allocatedResources',
  'core.v1.PersistentVolumeClaimStatus.resizeStatus', 'core.v1.PodSpec.os', 'core.v1.ServiceSpec.allocateLoadBalancerNodePorts',
  'core.v1.ServiceSpec.loadBalancerClass', 'core.v1.ServiceSpec.internalTrafficPolicy', 'core.v1.Probe.terminationGracePeriodSeconds',
  'core.v1.Handler.grpc', 'core.v1.WindowsSecurityContextOptions.hostProcess', 'core.v1.PodAffinityTerm.namespaceSelector',
  'meta.v1.ManagedFieldsEntry.subresource', 'certificates.v1.CertificateSigningRequestSpec.expirationSeconds',
]);

function fullName(short: string): string {
  const parts = short.split('.');
  const name = parts.pop()!;
  const p = parts.join('.');
  const pkg = PACKAGE_ALIASES[p] ?? p;
  const base =
    pkg === 'meta.v1' ? 'k8s.io.apimachinery.pkg.apis.' : pkg === 'runtime' ? 'k8s.io.apimachinery.pkg.' : pkg === 'resource' ? 'k8s.io.apimachinery.pkg.api.' : pkg === 'intstr' ? 'k8s.io.apimachinery.pkg.util.' : pkg.startsWith('apiregistration.') ? 'k8s.io.kube_aggregator.pkg.apis.' : 'k8s.io.api.';
  return `${base}${pkg}.${RENAMED[name] ?? name}`;
}

describe("protobuf against Kubernetes' generated.proto (protobufjs)", { skip }, () => {
  let root: protobuf.Root;
  before(() => {
    root = new protobuf.Root();
    root.resolvePath = (_origin, target) => (target.startsWith('/') ? target : target.startsWith('k8s.io/') ? join(src!, '..', target) : join(src!, target));
    const files: string[] = [];
    const walk = (dir: string) => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        if (e.isDirectory()) walk(join(dir, e.name));
        else if (e.name === 'generated.proto') files.push(join(dir, e.name));
      }
    };
    walk(join(src!, 'api'));
    walk(join(src!, 'apimachinery'));
    walk(join(src!, 'kube-aggregator'));
    root.loadSync(files, { keepCase: true });
    root.resolveAll();
  });
  const oracle = (short: string): protobuf.Type | null => {
    try {
      return root.lookupType(fullName(short));
    } catch {
      return null;
    }
  };

  it('every message agrees field by field: number, name, type, repeated, map', () => {
    let checked = 0;
    const problems: string[] = [];
    for (const name of messageNames()) {
      const d = messageDescriptor(name)!;
      if (d.custom) continue;
      const t = oracle(name);
      if (!t) {
        if (!NEW_AFTER_1_20.has(name)) problems.push(`${name}: not in 1.20`);
        continue;
      }
      checked++;
      for (const f of d.fields) {
        const of = t.fieldsById[f.no];
        if (!of) {
          if (!ADDED_AFTER_1_20.has(`${name}.${f.json}`)) problems.push(`${name}.${f.json}: no field ${f.no}`);
          continue;
        }
        if (of.name.toLowerCase() !== f.json.toLowerCase()) problems.push(`${name}.${f.json}: field ${f.no} is ${of.name}`);
        const isMap = of instanceof protobuf.MapField;
        if (isMap !== f.map) problems.push(`${name}.${f.json}: map ${isMap} != ${f.map}`);
        if (!isMap && of.repeated !== f.repeated) problems.push(`${name}.${f.json}: repeated ${of.repeated} != ${f.repeated}`);
        const theirType = of.resolvedType ? of.resolvedType.fullName.replace(/^\./, '') : of.type;
        const ours = f.scalar ? f.type : fullName(f.type);
        if (theirType !== ours && !RETYPED_AFTER_1_20.has(`${name}.${f.json}`)) problems.push(`${name}.${f.json}: type ${theirType} != ${ours}`);
      }
      // Nothing 1.20 has is missing in orch.
      for (const of of t.fieldsArray) {
        if (!d.lookup[of.id]) problems.push(`${name}: orch lacks ${of.name} = ${of.id}`);
      }
    }
    assert.deepEqual(problems, []);
    assert.ok(checked > 200, `${checked} messages checked`);
  });

  /** Drops what 1.20 does not have, so that objects compare after a trip through its definitions. */
  function prune(d: MessageDescriptor, v: unknown, theirs?: protobuf.Type | null): unknown {
    if (d.custom || v === null || typeof v !== 'object' || Array.isArray(v)) return v;
    const t = theirs ?? oracle(d.name);
    const out: Record<string, unknown> = { ...(v as Record<string, unknown>) };
    for (const f of d.fields) {
      if (f.inline) {
        const it = t?.fieldsById[f.no]?.resolvedType;
        const inner = prune(messageDescriptor(f.type)!, out, it instanceof protobuf.Type ? it : null) as Record<string, unknown>;
        for (const key of Object.keys(out)) if (!(key in inner)) delete out[key];
        Object.assign(out, inner);
        continue;
      }
      if (!(f.json in out)) continue;
      if (t && !t.fieldsById[f.no]) {
        delete out[f.json];
        continue;
      }
      if (f.scalar) continue;
      const fd = messageDescriptor(f.type)!;
      const ft = t?.fieldsById[f.no]?.resolvedType;
      const tt = ft instanceof protobuf.Type ? ft : null;
      const x = out[f.json];
      if (f.map) out[f.json] = Object.fromEntries(Object.entries(x as Record<string, unknown>).map(([k, e]) => [k, prune(fd, e, tt)]));
      else if (f.repeated) out[f.json] = (x as unknown[]).map((e) => prune(fd, e, tt));
      else out[f.json] = prune(fd, x, tt);
    }
    return out;
  }

  for (const k of servedKinds()) {
    it(`${k.apiVersion} ${k.kind}: orch's bytes decode there, and theirs decode in orch`, () => {
      const message = kindMessage(k.apiVersion, k.kind)!;
      const t = oracle(message);
      assert.ok(t, `${message} in 1.20`);
      const { apiVersion: _a, kind: _k, ...obj } = sampleObject(k.apiVersion, k.kind, k.definition);
      const ours = encodeMessage(message, obj);
      const decoded = t.decode(ours);
      assert.equal(t.verify(decoded), null);
      // Spot checks by their names: the same values reached the same fields.
      const plain = t.toObject(decoded, { longs: Number, bytes: String }) as Record<string, Record<string, unknown>>;
      const meta = obj['metadata'] as Record<string, unknown> | undefined;
      if (meta) {
        assert.equal(plain['metadata']!['name'], meta['name']);
        assert.deepEqual(plain['metadata']!['labels'], meta['labels']);
      }
      const theirs = Buffer.from(t.encode(decoded).finish());
      const back = decodeMessage(message, theirs);
      assert.deepEqual(jsonDiff(back, prune(messageDescriptor(message)!, obj)), []);
    });
  }
});
