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
import { SERVER_FLAGS } from '../../src/server/options.js';
import { AGENT_FLAGS } from '../../src/agent/options.js';

const BIN = fileURLToPath(new URL('../../../bin/orch-apiserver', import.meta.url));
const ORCHLET = fileURLToPath(new URL('../../../bin/orchlet', import.meta.url));

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

describe('--help and --version on the executables', () => {
  // Every option of documents 2 and 3 is declared in SERVER_FLAGS / AGENT_FLAGS; the executables' own --help lists
  // each one (with its type), exits 0 and leaves standard error empty.
  for (const [bin, name, flags] of [
    [BIN, 'orch-apiserver', SERVER_FLAGS],
    [ORCHLET, 'orchlet', AGENT_FLAGS],
  ] as const) {
    it(`${name} --help lists every option, ${name} --version prints the version`, () => {
      const help = execFileSync(bin, ['--help'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
      const missing = flags.filter((f) => !new RegExp(`^\\s+(-\\w, )?--${f.name}(\\s|=|$)`, 'm').test(help)).map((f) => f.name);
      assert.deepEqual(missing, [], `options missing from ${name} --help`);
      assert.match(help, new RegExp(`^Usage:`, 'm'));
      assert.equal(execFileSync(bin, ['--version'], { encoding: 'utf8' }).trim(), `${name} ${versionInfo().gitVersion}`);
    });
  }
});
