#!/usr/bin/env node
// Checks that imports under src/ only point downward through the layers.
// A file may import from its own layer or from a lower one, never from a higher one.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

const root = resolve(dirname(new URL(import.meta.url).pathname), '..');
const src = join(root, 'src');

// Server stack, bottom to top. 'util' is shared by everything.
const LAYERS = {
  util: 0,
  storage: 1,
  registry: 2,
  endpoints: 3,
  filters: 4,
  server: 5,
  agent: 5, // the node agent may use util only (checked below), never the server stack
  cli: 9,
};
const AGENT_MAY_IMPORT = new Set(['util', 'agent']);

function layerOf(file) {
  const top = relative(src, file).split(sep)[0];
  if (!(top in LAYERS)) return null;
  return top;
}

function walk(dir, out = []) {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p, out);
    else if (p.endsWith('.ts')) out.push(p);
  }
  return out;
}

const importRe = /(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;
const problems = [];
for (const file of walk(src)) {
  const from = layerOf(file);
  if (from === null) {
    problems.push(`${relative(root, file)}: not inside a known layer (${Object.keys(LAYERS).join(', ')})`);
    continue;
  }
  const text = readFileSync(file, 'utf8');
  for (const m of text.matchAll(importRe)) {
    const spec = m[1] ?? m[2];
    if (!spec.startsWith('.')) continue;
    const target = resolve(dirname(file), spec);
    if (!target.startsWith(src + sep)) {
      problems.push(`${relative(root, file)}: imports ${spec}, outside src/`);
      continue;
    }
    const to = layerOf(target);
    if (to === null) continue;
    const bad = from === 'agent' ? !AGENT_MAY_IMPORT.has(to) : to === 'agent' && from !== 'cli' ? true : LAYERS[to] > LAYERS[from];
    if (bad) problems.push(`${relative(root, file)} (${from}) imports ${spec} (${to}): imports must point downward`);
  }
}
if (problems.length) {
  console.error('layer check failed:\n  ' + problems.join('\n  '));
  process.exit(1);
}
console.log('layer check: ok');
