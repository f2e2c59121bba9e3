/**
 * The orch-apiserver launcher run as a user runs it (through its `#!/usr/bin/env -S node ...` line): the node
 * options it gives V8 (young generation and heap growth, for the server's memory) are accepted, and the program runs.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { versionInfo } from '../../src/util/version.js';

const BIN = fileURLToPath(new URL('../../../bin/orch-apiserver', import.meta.url));

describe('bin/orch-apiserver launcher', () => {
  it('runs through its #! line with its node options', () => {
    const first = readFileSync(BIN, 'utf8').split('\n', 1)[0]!;
    assert.match(first, /^#!\/usr\/bin\/env -S node --max-semi-space-size=\d+ --heap-growing-percent=\d+$/);
    const out = execFileSync(BIN, ['--version'], { encoding: 'utf8' });
    assert.equal(out.trim(), `orch-apiserver ${versionInfo().gitVersion}`);
  });

  it('gives V8 a small young generation', () => {
    // The same node options on a probe that keeps 2 million objects: without the cap its new space grows to 32 MiB.
    const opts = readFileSync(BIN, 'utf8').split('\n', 1)[0]!.replace(/^#!\/usr\/bin\/env -S node /, '').split(' ');
    const semi = Number(/--max-semi-space-size=(\d+)/.exec(opts.join(' '))![1]);
    const probe = `const v8=require('node:v8');const a=[];for(let i=0;i<2e6;i++)a.push({i});console.log(v8.getHeapSpaceStatistics().find(s=>s.space_name==='new_space').space_size)`;
    const size = Number(execFileSync(process.execPath, [...opts, '-e', probe], { encoding: 'utf8' }).trim());
    assert.ok(size <= 2 * semi * 1048576, `new space ${size} bytes with --max-semi-space-size=${semi}`);
  });
});
