import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openSqlite } from '../../src/storage/sqlite.js';
import { StorageError } from '../../src/storage/errors.js';
import { storageConformance } from './conformance.js';

storageConformance('embedded store in memory', async () => {
  const kv = await openSqlite({ path: ':memory:', leaseSweepIntervalMs: 100 });
  return { kv, cleanup: () => kv.close() };
});

storageConformance('embedded store in a file', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'orch-sqlite-'));
  const kv = await openSqlite({ path: join(dir, 'state.db'), leaseSweepIntervalMs: 100 });
  return {
    kv,
    cleanup: async () => {
      await kv.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
});

describe('embedded store in a file: durability and size', () => {
  it('keeps every acknowledged write after kill -9 of the writing process', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'orch-kill9-'));
    const path = join(dir, 'state.db');
    try {
      const writer = fileURLToPath(new URL('./fixtures/sqlite-writer.js', import.meta.url));
      const child = spawn(process.execPath, [writer, path], { stdio: ['ignore', 'pipe', 'inherit'] });
      let acked = -1;
      let buf = '';
      await new Promise<void>((resolve, reject) => {
        child.stdout.on('data', (chunk: Buffer) => {
          buf += chunk.toString();
          const lines = buf.split('\n');
          buf = lines.pop()!;
          for (const l of lines) acked = Number(l);
          if (acked >= 1500 && !child.killed) {
            child.kill('SIGKILL');
            resolve();
          }
        });
        child.on('exit', (code, signal) => {
          if (signal !== 'SIGKILL') reject(new Error(`writer exited early: ${code} ${signal}`));
        });
      });
      await new Promise((r) => child.once('close', r));
      const kv = await openSqlite({ path });
      try {
        for (let i = 0; i <= acked; i++) {
          const k = await kv.get(`/kill9/k${i}`);
          assert.equal(Buffer.from(k.kv?.value ?? []).toString(), `value-${i}`, `key k${i} lost`);
          const u = await kv.get(`/kill9/u${i}`);
          assert.equal(Buffer.from(u.kv?.value ?? []).toString(), '1', `update of u${i} lost`);
        }
      } finally {
        await kv.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('commits writes called together as a group: one revision per write, each failure its own', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'orch-group-'));
    const path = join(dir, 'state.db');
    let kv = await openSqlite({ path });
    try {
      const a = await kv.create('/g/a', Buffer.from('a0'));
      const r0 = await kv.currentRevision();
      const watch = kv.watch('/g/', { prefix: true });
      // All called in one turn: they share a commit, yet each gets its own revision or its own error.
      const results = await Promise.allSettled([
        kv.create('/g/b', Buffer.from('b')),
        kv.create('/g/a', Buffer.from('dup')),
        kv.update('/g/a', Buffer.from('a1'), a.modRevision),
        kv.update('/g/a', Buffer.from('stale'), a.modRevision),
        kv.create('/g/c', Buffer.from('c')),
        kv.delete('/g/missing'),
      ]);
      const code = (r: PromiseSettledResult<unknown>) => (r.status === 'rejected' ? (r.reason as StorageError).code : 'ok');
      assert.deepEqual(results.map(code), ['ok', 'KeyExists', 'ok', 'Conflict', 'ok', 'NotFound']);
      const revs = results.flatMap((r) => (r.status === 'fulfilled' ? [(r.value as { modRevision: number }).modRevision] : []));
      assert.deepEqual(revs, [r0 + 1, r0 + 2, r0 + 3]);
      assert.equal(await kv.currentRevision(), r0 + 3);
      const seen: string[] = [];
      for await (const ev of watch) {
        seen.push(`${ev.kv.modRevision} ${ev.kv.key} ${Buffer.from(ev.kv.value).toString()}`);
        if (seen.length === 3) break;
      }
      assert.deepEqual(seen, [`${r0 + 1} /g/b b`, `${r0 + 2} /g/a a1`, `${r0 + 3} /g/c c`]);
      // A write that fails other than by its own refusal (here a value that is not bytes) fails alone: the
      // others of its group are committed, with consecutive revisions.
      const mixed = await Promise.allSettled([
        kv.create('/g/e', Buffer.from('e')),
        kv.create('/g/bad', 'not bytes' as unknown as Uint8Array),
        kv.create('/g/e', Buffer.from('dup')),
        kv.create('/g/f', Buffer.from('f')),
      ]);
      assert.deepEqual(
        mixed.map((r) => (r.status === 'rejected' ? (r.reason instanceof StorageError ? r.reason.code : 'other') : 'ok')),
        ['ok', 'other', 'KeyExists', 'ok'],
      );
      assert.deepEqual(
        mixed.flatMap((r) => (r.status === 'fulfilled' ? [(r.value as { modRevision: number }).modRevision] : [])),
        [r0 + 4, r0 + 5],
      );
      assert.equal((await kv.get('/g/bad')).kv, null);
      await kv.delete('/g/e');
      await kv.delete('/g/f');
      const r1 = await kv.currentRevision();
      // Writes called just before close are committed, and survive a reopen.
      const last = kv.create('/g/d', Buffer.from('d'));
      await kv.close();
      assert.equal((await last).modRevision, r1 + 1);
      kv = await openSqlite({ path });
      assert.equal(await kv.currentRevision(), r1 + 1);
      assert.equal(Buffer.from((await kv.get('/g/a')).kv!.value).toString(), 'a1');
      assert.equal((await kv.get('/g/d')).kv!.modRevision, r1 + 1);
    } finally {
      await kv.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('refuses a second opener of the same file while the first holds it', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'orch-lock-'));
    const path = join(dir, 'state.db');
    const kv = await openSqlite({ path });
    try {
      await kv.create('/a', Buffer.from('1'));
      await assert.rejects(openSqlite({ path }), (err: unknown) => err instanceof StorageError && err.code === 'Unavailable');
    } finally {
      await kv.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('keeps revisions and history across a reopen, and stops growing once history is compacted', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'orch-size-'));
    const path = join(dir, 'state.db');
    let kv = await openSqlite({ path });
    try {
      const revs: number[] = [];
      const value = Buffer.alloc(512, 'x');
      for (let k = 0; k < 100; k++) revs.push((await kv.create(`/size/k${k}`, value)).modRevision);
      const round = async () => {
        for (let k = 0; k < 100; k++) revs[k] = (await kv.update(`/size/k${k}`, value, revs[k]!)).modRevision;
      };
      for (let i = 0; i < 20; i++) await round();
      await kv.compact(await kv.currentRevision());
      const sizeAfterFirst = (await stat(path)).size;
      for (let i = 0; i < 20; i++) await round();
      await kv.compact(await kv.currentRevision());
      const sizeAfterSecond = (await stat(path)).size;
      assert.ok(sizeAfterSecond <= sizeAfterFirst * 1.1, `file grew from ${sizeAfterFirst} to ${sizeAfterSecond}`);
      const rev = await kv.currentRevision();
      await kv.close();
      kv = await openSqlite({ path });
      assert.equal(await kv.currentRevision(), rev);
      const next = await kv.create('/size/new', value);
      assert.equal(next.modRevision, rev + 1);
      await assert.rejects(kv.get('/size/k0', { revision: rev - 5 }), (e: unknown) => e instanceof StorageError && e.code === 'Compacted');
    } finally {
      await kv.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
