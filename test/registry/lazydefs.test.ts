import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { describe, it } from 'node:test';
import { lazyDefinitions, mergeDefinitions } from '../../src/registry/lazydefs.js';
import { ALL_DEFINITIONS, BUILTIN_KINDS } from '../../src/registry/kinds/index.js';
import type { Definitions } from '../../src/registry/schema.js';

const isAccessor = (defs: Definitions, name: string) => Object.getOwnPropertyDescriptor(defs, name)?.get !== undefined;

describe('lazy definitions', () => {
  it('are named up front and built once, on the first read through any set holding them', () => {
    let loads = 0;
    const lazy = lazyDefinitions(['a.A', 'a.B'], () => {
      loads++;
      return { 'a.A': { type: 'object', description: 'A' }, 'a.B': { type: 'string' } };
    });
    const merged = mergeDefinitions({ 'm.Meta': { type: 'object' } }, lazy);
    assert.deepEqual(Object.keys(merged), ['m.Meta', 'a.A', 'a.B']);
    assert.ok('a.B' in merged);
    assert.equal(loads, 0);
    assert.equal(merged['a.A']?.description, 'A');
    assert.equal(loads, 1);
    assert.ok(!isAccessor(merged, 'a.A'));
    assert.deepEqual({ ...lazy }, { 'a.A': { type: 'object', description: 'A' }, 'a.B': { type: 'string' } });
    assert.equal(loads, 1);
    merged['a.B'] = { type: 'integer' };
    assert.equal(merged['a.B']?.type, 'integer');
    assert.equal(lazy['a.B']?.type, 'string');
  });

  it('the pod schemas are not built by loading the kinds, and read as generated', () => {
    const pod = BUILTIN_KINDS.find((k) => k.group === '' && k.kind === 'Pod')!;
    assert.ok(isAccessor(pod.definitions, 'io.k8s.api.core.v1.PodSpec'));
    assert.ok(isAccessor(ALL_DEFINITIONS, 'io.k8s.api.core.v1.PodSpec'));
    const data = (createRequire(import.meta.url)('../../src/registry/kinds/pod/definitions-data.cjs') as { POD_DEFINITIONS: Definitions }).POD_DEFINITIONS;
    assert.deepEqual(Object.keys(pod.definitions), Object.keys(data));
    assert.deepEqual(ALL_DEFINITIONS['io.k8s.api.core.v1.PodSpec'], data['io.k8s.api.core.v1.PodSpec']);
    assert.ok(Object.keys(ALL_DEFINITIONS['io.k8s.api.core.v1.Container']?.properties ?? {}).includes('image'));
  });
});
