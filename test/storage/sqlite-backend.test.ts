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
