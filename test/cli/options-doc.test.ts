/**
 * The generated options reference (docs/options/*.md, scripts/gen-options-doc.mjs): the committed pages are
 * exactly what the script produces from the option declarations, and say what --help says (the same groups in
 * the same order, every option with its type word and status).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { typeWord, type FlagSpec } from '../../src/util/flags.js';
import { SERVER_FLAGS, serverHelp } from '../../src/server/options.js';
import { AGENT_FLAGS, agentHelp } from '../../src/agent/options.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const SCRIPT = join(ROOT, 'scripts', 'gen-options-doc.mjs');

const PROGRAMS = [
  { page: 'orch-apiserver.md', specs: SERVER_FLAGS as readonly FlagSpec[], help: serverHelp },
  { page: 'orchlet.md', specs: AGENT_FLAGS as readonly FlagSpec[], help: agentHelp },
];

/** The group headings of a --help text, in order. */
function helpGroups(help: string): string[] {
  return help.split('\n').filter((l) => /^[A-Z][^:]*:$/.test(l) && l !== 'Usage:').map((l) => l.slice(0, -1));
}

void describe('options reference (docs/options)', () => {
  void it('the committed pages are what scripts/gen-options-doc.mjs produces (run npm run gen:options-doc when this fails)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'orch-options-doc-'));
    try {
      await promisify(execFile)(process.execPath, [SCRIPT, '--out-dir', dir]);
      for (const { page } of PROGRAMS) {
        const generated = await readFile(join(dir, page), 'utf8');
        const committed = await readFile(join(ROOT, 'docs', 'options', page), 'utf8');
        assert.equal(committed, generated, `docs/options/${page} is stale: run npm run gen:options-doc`);
      }
      // --check says the same.
      await promisify(execFile)(process.execPath, [SCRIPT, '--check']);
      const stale = await promisify(execFile)(process.execPath, [SCRIPT, '--check', '--out-dir', join(dir, 'missing')]).then(
        () => 0,
        (e: { code?: number; stderr?: string }) => {
          assert.match(e.stderr ?? '', /differs from the option declarations: run npm run gen:options-doc/);
          return e.code;
        },
      );
      assert.equal(stale, 1);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  for (const { page, specs, help } of PROGRAMS) {
    void it(`${page}: the groups of --help in order, every option with its type and status`, async () => {
      const text = await readFile(join(ROOT, 'docs', 'options', page), 'utf8');
      const headings = [...text.matchAll(/^## (.+)$/gm)].map((m) => m[1]);
      assert.deepEqual(headings, helpGroups(help()));
      const rows = new Map<string, string[]>();
      for (const line of text.split('\n')) {
        const m = /^\| (?:`-[a-z]`, )?`--([a-z0-9-]+)`/.exec(line);
        if (m) rows.set(m[1]!, line.split(' | ').map((c) => c.trim()));
      }
      assert.equal(rows.size, specs.length);
      for (const s of specs) {
        const row = rows.get(s.name);
        assert.ok(row, `--${s.name} has a row`);
        assert.equal(row[1], typeWord(s) || 'bool', `type of --${s.name}`);
        assert.equal(row[3], s.status === 'supported' ? 'supported' : 'not implemented yet', `status of --${s.name}`);
      }
    });
  }
});
