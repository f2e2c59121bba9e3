#!/usr/bin/env node
// Generates src/util/protobuf-messages.ts: the protobuf message table of every kind orch serves (and of the
// messages they reach), in the compact form src/util/protobuf.ts reads.
//
// Field numbers, proto types, repeated/map come from Kubernetes' generated.proto files; how each Go field is
// declared (pointer, omitempty, inline), which decides what gogo writes and what encoding/json shows, comes
// from the types.go next to them. Both are read from Debian's kubernetes source package, fetched by
// scripts/fetch-kubernetes-src.sh into a cache directory outside the repository (or KUBERNETES_SRC=<dir of
// staging/src/k8s.io>). Nothing of those files is committed: only the table below.
//
// The kinds come from the kind declarations (dist/src/registry/kinds: run `npx tsc -p .` first): each kind,
// its list kind and the bodies of its subresources, so a new kind gets its encoding by re-running this.
// Debian's package is Kubernetes 1.20; fields and versions added up to 1.23 that orch serves are listed in
// ADDED_AFTER_1_20 with their 1.23 field numbers. The run fails when a served schema field has no number.
//
// Run: npx tsc -p . && node scripts/gen-protobuf.mjs   (then review the diff; the output is committed)
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync, writeFileSync, existsSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..');
const src = process.env.KUBERNETES_SRC ||
  execFileSync('bash', [join(repo, 'scripts', 'fetch-kubernetes-src.sh')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();

/** Packages Debian's 1.20 lacks, and the 1.20 package with the same messages and numbers. */
const PACKAGE_ALIASES = {
  'k8s.io.api.flowcontrol.v1beta2': 'k8s.io.api.flowcontrol.v1beta1',
  'k8s.io.api.policy.v1': 'k8s.io.api.policy.v1beta1',
};

/**
 * Fields added between 1.20 and 1.23 (numbers from 1.23's generated.proto), per message:
 * [name, number, proto type (scalar or full message name), 'optional'|'repeated'|'map', Go presence].
 */
const ADDED_AFTER_1_20 = {
  'k8s.io.api.core.v1.PersistentVolumeClaimSpec': [['dataSourceRef', 8, 'k8s.io.api.core.v1.TypedLocalObjectReference', 'optional', 'pointer']],
  'k8s.io.api.core.v1.PersistentVolumeClaimStatus': [
    ['allocatedResources', 5, 'k8s.io.apimachinery.pkg.api.resource.Quantity', 'map', 'omitempty'],
    ['resizeStatus', 6, 'string', 'optional', 'pointer'],
  ],
  'k8s.io.api.core.v1.PodSpec': [['os', 36, 'k8s.io.api.core.v1.PodOS', 'optional', 'pointer']],
  'k8s.io.api.core.v1.PodOS': [['name', 1, 'string', 'optional', 'always']],
  'k8s.io.api.core.v1.ServiceSpec': [
    ['allocateLoadBalancerNodePorts', 20, 'bool', 'optional', 'pointer'],
    ['loadBalancerClass', 21, 'string', 'optional', 'pointer'],
    ['internalTrafficPolicy', 22, 'string', 'optional', 'pointer'],
  ],
  'k8s.io.api.core.v1.Probe': [['terminationGracePeriodSeconds', 7, 'int64', 'optional', 'pointer']],
  // 1.23 splits Handler into ProbeHandler (with grpc) and LifecycleHandler, same numbers; both stay Handler here.
  'k8s.io.api.core.v1.Handler': [['grpc', 4, 'k8s.io.api.core.v1.GRPCAction', 'optional', 'pointer']],
  'k8s.io.api.core.v1.GRPCAction': [
    ['port', 1, 'int32', 'optional', 'always'],
    ['service', 2, 'string', 'optional', 'pointer'],
  ],
  'k8s.io.api.core.v1.WindowsSecurityContextOptions': [['hostProcess', 4, 'bool', 'optional', 'pointer']],
  'k8s.io.api.core.v1.PodAffinityTerm': [['namespaceSelector', 4, 'k8s.io.apimachinery.pkg.apis.meta.v1.LabelSelector', 'optional', 'pointer']],
  'k8s.io.api.certificates.v1.CertificateSigningRequestSpec': [['expirationSeconds', 8, 'int32', 'optional', 'pointer']],
  'k8s.io.apimachinery.pkg.apis.meta.v1.ManagedFieldsEntry': [['subresource', 8, 'string', 'optional', 'omitempty']],
  // 1.21 replaced IngressClassSpec.parameters' TypedLocalObjectReference by this (same first numbers).
  'k8s.io.api.networking.v1.IngressClassParametersReference': [
    ['apiGroup', 1, 'string', 'optional', 'pointer'],
    ['kind', 2, 'string', 'optional', 'always'],
    ['name', 3, 'string', 'optional', 'always'],
    ['scope', 4, 'string', 'optional', 'pointer'],
    ['namespace', 5, 'string', 'optional', 'pointer'],
  ],
};

/** Fields whose message type changed between 1.20 and 1.23 (same number), per message: field → 1.23 type. */
const RETYPED_AFTER_1_20 = {
  'k8s.io.api.networking.v1.IngressClassSpec': { parameters: 'k8s.io.api.networking.v1.IngressClassParametersReference' },
};

// ---------------------------------------------------------------------------------------------------------
// generated.proto

/** The source trees with messages of kinds orch serves. */
const PROTO_DIRS = ['api', 'apimachinery', 'kube-aggregator'];

function walk(dir, name, out = []) {
  for (const e of readdirSync(dir)) {
    const p = join(dir, e);
    if (statSync(p).isDirectory()) walk(p, name, out);
    else if (name(e)) out.push(p);
  }
  return out;
}

/** Full message name → { fields: [{name, no, type, label}] } (types made fully qualified). */
function readProtos() {
  const messages = new Map();
  const files = PROTO_DIRS.flatMap((d) => walk(join(src, d), (e) => e === 'generated.proto'));
  const scalars = new Set(['string', 'bool', 'int32', 'int64', 'bytes', 'double', 'float', 'uint32', 'uint64', 'fixed32', 'fixed64', 'sint32', 'sint64']);
  for (const file of files) {
    const text = readFileSync(file, 'utf8').replace(/\/\/[^\n]*/g, '');
    const pkg = /\bpackage\s+([\w.]+);/.exec(text)?.[1];
    if (!pkg) continue;
    const qualify = (t) => (scalars.has(t) ? t : t.includes('.') ? t : `${pkg}.${t}`);
    const msgRe = /\bmessage\s+(\w+)\s*\{([^{}]*)\}/g;
    for (let m; (m = msgRe.exec(text)); ) {
      const fields = [];
      const fieldRe = /(optional|repeated)?\s*(map<\s*string\s*,\s*([\w.]+)\s*>|[\w.]+)\s+(\w+)\s*=\s*(\d+)\s*;/g;
      for (let f; (f = fieldRe.exec(m[2])); ) {
        const isMap = f[2].startsWith('map<');
        fields.push({ name: f[4], no: Number(f[5]), type: qualify(isMap ? f[3] : f[2]), label: isMap ? 'map' : f[1] ?? 'optional' });
      }
      messages.set(`${pkg}.${m[1]}`, { fields });
    }
  }
  return messages;
}

// ---------------------------------------------------------------------------------------------------------
// types.go: how each field is declared in Go

/** `${pkg}.${Struct}` → Map(protoName → {presence, inline, order}). */
function readGoTypes() {
  const structs = new Map();
  const dirs = new Set(PROTO_DIRS.flatMap((d) => walk(join(src, d), (e) => e === 'generated.proto')).map(dirname));
  for (const dir of dirs) {
    const proto = readFileSync(join(dir, 'generated.proto'), 'utf8');
    const pkg = /\bpackage\s+([\w.]+);/.exec(proto)?.[1];
    for (const e of readdirSync(dir)) {
      if (!e.endsWith('.go') || e.endsWith('_test.go') || e.startsWith('zz_') || e.startsWith('generated')) continue;
      const text = readFileSync(join(dir, e), 'utf8');
      const structRe = /\ntype\s+(\w+)\s+struct\s*\{([\s\S]*?)\n\}/g;
      for (let s; (s = structRe.exec(text)); ) {
        const fields = new Map();
        let order = 0;
        for (const line of s[2].split('\n')) {
          const f = /^\s*(?:(\w+)\s+)?(\S+)\s+`([^`]*)`/.exec(line);
          if (!f) continue;
          const tag = f[3];
          const json = /json:"([^"]*)"/.exec(tag)?.[1];
          const pb = /protobuf:"([^"]*)"/.exec(tag)?.[1];
          if (json === undefined || pb === undefined) continue;
          // An embedded struct's tag may carry no name: go-to-protobuf names it after the type, lower-cased.
          const goName = f[1] ?? f[2].replace(/^\*/, '').replace(/^\w+\./, '');
          const protoName = /name=(\w+)/.exec(pb)?.[1] ?? goName[0].toLowerCase() + goName.slice(1);
          const [jsonName, ...opts] = json.split(',');
          const goType = f[2];
          const presence = goType.startsWith('*') || goType === '[]byte' ? 'pointer' : opts.includes('omitempty') ? 'omitempty' : 'always';
          fields.set(protoName, { presence, inline: opts.includes('inline') || jsonName === '', jsonName, order: order++ });
        }
        structs.set(`${pkg}.${s[1]}`, fields);
      }
    }
  }
  return structs;
}

// ---------------------------------------------------------------------------------------------------------
// Names

/** 'k8s.io.api.core.v1.Pod' → 'core.v1.Pod'; meta, runtime, resource and intstr as src/util/protobuf.ts names them. */
function shortName(full) {
  for (const p of ['k8s.io.api.', 'k8s.io.kube_aggregator.pkg.apis.', 'k8s.io.apimachinery.pkg.apis.', 'k8s.io.apimachinery.pkg.api.', 'k8s.io.apimachinery.pkg.util.', 'k8s.io.apimachinery.pkg.']) {
    if (full.startsWith(p)) return full.slice(p.length);
  }
  return full;
}
const fromOpenAPI = (name) => name.replace(/^io\.k8s\./, 'k8s.io.').replace(/^k8s\.io\.kube-aggregator\./, 'k8s.io.kube_aggregator.');

/** Messages with their own JSON form (src/util/protobuf.ts codes them by name): their fields are not walked. */
const CUSTOM = new Set([
  'k8s.io.apimachinery.pkg.apis.meta.v1.Time',
  'k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime',
  'k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1',
  'k8s.io.apimachinery.pkg.apis.meta.v1.Duration',
  'k8s.io.apimachinery.pkg.api.resource.Quantity',
  'k8s.io.apimachinery.pkg.util.intstr.IntOrString',
  'k8s.io.apimachinery.pkg.runtime.RawExtension',
  'k8s.io.api.authentication.v1.ExtraValue',
  'k8s.io.api.authorization.v1.ExtraValue',
  'k8s.io.api.certificates.v1.ExtraValue',
]);

// ---------------------------------------------------------------------------------------------------------

const protos = readProtos();
const goTypes = readGoTypes();

function lookupMessage(full) {
  const added = ADDED_AFTER_1_20[full];
  if (typeof added === 'string') return lookupMessage(added);
  let msg = protos.get(full);
  let goFields = goTypes.get(full);
  if (!msg) {
    for (const [pkg, alias] of Object.entries(PACKAGE_ALIASES)) {
      if (full.startsWith(pkg + '.')) {
        const other = alias + full.slice(pkg.length);
        msg = protos.get(other);
        goFields = goTypes.get(other);
        if (msg) msg = { fields: msg.fields.map((f) => ({ ...f, type: f.type.startsWith(alias + '.') ? pkg + f.type.slice(alias.length) : f.type })) };
      }
    }
  }
  if (!msg && !Array.isArray(added)) return undefined;
  const retyped = RETYPED_AFTER_1_20[full] ?? {};
  const fields = (msg?.fields ?? []).map((f) => (retyped[f.name] ? { ...f, type: retyped[f.name] } : f)).map((f) => {
    const go = goFields?.get(f.name);
    return { ...f, json: go?.jsonName || f.name, presence: go?.presence ?? (f.label === 'optional' && protos.has(f.type) ? 'omitempty' : 'pointer'), inline: go?.inline ?? false, order: go?.order ?? 1000 + f.no };
  });
  if (Array.isArray(added)) {
    for (const [name, no, type, label, presence] of added) {
      if (no < 0) continue;
      if (!fields.some((f) => f.name === name)) fields.push({ name, json: name, no, type, label, presence, inline: false, order: 2000 + no });
    }
  }
  fields.sort((a, b) => a.order - b.order);
  return { fields };
}

// Roots: every kind, list kind and subresource body, from the declarations.
const kindsModule = await import(pathToFileURL(join(repo, 'dist', 'src', 'registry', 'kinds', 'index.js')).href);
const { BUILTIN_KINDS, ALL_DEFINITIONS } = kindsModule;
const kinds = new Map(); // 'apiVersion/Kind' → full message
const apiVersionOf = (g, v) => (g ? `${g}/${v}` : v);
for (const k of BUILTIN_KINDS) {
  const av = apiVersionOf(k.group, k.version);
  kinds.set(`${av}/${k.kind}`, fromOpenAPI(k.definition));
  if (k.listDefinition !== k.definition) kinds.set(`${av}/${k.listKind}`, fromOpenAPI(k.listDefinition));
  for (const a of Object.values(k.actions ?? {})) {
    for (const b of a.bodyKinds ?? []) kinds.set(`${apiVersionOf(b.group, b.version)}/${b.kind}`, fromOpenAPI(b.definition));
  }
  for (const s of Object.values(k.subresources ?? {})) {
    for (const b of s?.bodyKinds ?? []) kinds.set(`${apiVersionOf(b.group, b.version)}/${b.kind}`, fromOpenAPI(b.definition));
  }
}
// Not served, but stored: the service IP and node port range allocators' bitmaps (src/registry/allocators).
kinds.set('v1/RangeAllocation', 'k8s.io.api.core.v1.RangeAllocation');
const META = 'k8s.io.apimachinery.pkg.apis.meta.v1.';
const extraRoots = [`${META}TypeMeta`, `${META}Status`, `${META}DeleteOptions`, `${META}WatchEvent`, `${META}APIGroup`, `${META}APIGroupList`, `${META}APIResourceList`, `${META}APIVersions`, 'k8s.io.apimachinery.pkg.runtime.Unknown', `${META}PartialObjectMetadata`, `${META}PartialObjectMetadataList`];

const out = new Map();
const problems = [];
function visit(full) {
  if (out.has(full)) return;
  if (CUSTOM.has(full)) {
    out.set(full, null);
    return;
  }
  const msg = lookupMessage(full);
  if (!msg) {
    problems.push(`no message ${full}`);
    out.set(full, null);
    return;
  }
  out.set(full, msg);
  for (const f of msg.fields) if (f.type.includes('.')) visit(f.type);
}
for (const m of [...kinds.values(), ...extraRoots]) visit(m);
for (const [key, m] of kinds) if (!out.get(m) && !CUSTOM.has(m)) problems.push(`kind ${key}: no message ${m}`);

// Every property of the served schemas must have a field (inline fields count through their message).
function jsonFields(full, seen = new Set()) {
  const msg = out.get(full);
  const names = new Set();
  if (!msg || seen.has(full)) return names;
  seen.add(full);
  for (const f of msg.fields) {
    if (f.inline) for (const n of jsonFields(f.type, seen)) names.add(n);
    else names.add(f.json);
  }
  return names;
}
for (const [full, msg] of out) {
  if (!msg) continue;
  const def = ALL_DEFINITIONS[full.replace(/^k8s\.io\./, 'io.k8s.').replace(/^io\.k8s\.kube_aggregator\./, 'io.k8s.kube-aggregator.')];
  if (!def?.properties) continue;
  const have = jsonFields(full);
  for (const p of Object.keys(def.properties)) {
    if (p === 'apiVersion' || p === 'kind') continue;
    if (!have.has(p)) problems.push(`${full}.${p}: no field number`);
  }
}
if (problems.length) {
  console.error(problems.join('\n'));
  process.exit(1);
}

// ---------------------------------------------------------------------------------------------------------
// Output

const PRESENCE = { omitempty: 'o', always: 'a', pointer: 'p' };
const lines = [];
for (const [full, msg] of [...out].sort(([a], [b]) => shortName(a).localeCompare(shortName(b)))) {
  if (!msg) continue;
  const fields = msg.fields.map((f) => {
    const flags = PRESENCE[f.presence] + (f.label === 'repeated' ? 'r' : f.label === 'map' ? 'm' : '') + (f.inline ? 'i' : '');
    return `${f.json}:${f.no}:${shortName(f.type)}:${flags}`;
  });
  lines.push(`  ${JSON.stringify(shortName(full))}: ${JSON.stringify(fields.join(' '))},`);
}
const kindLines = [...kinds].sort(([a], [b]) => a.localeCompare(b)).map(([k, m]) => `  ${JSON.stringify(k)}: ${JSON.stringify(shortName(m))},`);
const text = `// Generated by scripts/gen-protobuf.mjs from the kind declarations and the field numbers of Kubernetes'
// generated.proto (Debian's kubernetes source package, plus the 1.21-1.23 additions the script lists). Do not edit.
//
// A message is its fields in Go struct order, each \`name:number:type:flags\`: type is a scalar (string, bool,
// int32, int64, bytes, double) or a message; flags are the Go declaration (o omitempty, a always, p pointer),
// then r (repeated), m (map<string, type>), i (inline: its fields show in the parent's JSON).

/** Message name → its fields. */
export const KUBERNETES_MESSAGES: Readonly<Record<string, string>> = {
${lines.join('\n')}
};

/** 'apiVersion/Kind' of every kind, list kind and subresource body orch serves → its message. */
export const KUBERNETES_KINDS: Readonly<Record<string, string>> = {
${kindLines.join('\n')}
};
`;
const target = join(repo, 'src', 'util', 'protobuf-messages.ts');
if (!existsSync(dirname(target))) throw new Error(`no ${dirname(target)}`);
writeFileSync(target, text);
console.log(`wrote ${target}: ${lines.length} messages, ${kindLines.length} kinds`);
