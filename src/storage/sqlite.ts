/**
 * The embedded store: etcd v3 semantics over SQLite (better-sqlite3), in the manner of k3s's kine.
 *
 * `log` is the source of truth: every write appends one row whose id is the write's revision (create, update
 * or delete tombstone), so a read at an old revision is "the newest row per key at or below it" and a watch
 * reads rows after a revision. `current` is an index of the newest live row per key, kept in the same
 * transaction, so that reads of the newest state do not scan history. Compaction deletes rows that a newer row
 * at or below the compaction revision supersedes.
 *
 * The store belongs to one process: the file is opened in exclusive locking mode, so a second server on the
 * same data directory fails to start instead of corrupting it. Writes are committed to the WAL before the
 * call resolves, so an acknowledged write survives kill -9 of the process.
 */
import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { StorageError, errors } from './errors.js';
import {
  prefixEnd,
  type DeleteResult,
  type GetResult,
  type KV,
  type KeyValue,
  type ListOptions,
  type ListResult,
  type PutOptions,
  type ReadOptions,
  type StoreStats,
  type Watch,
  type WatchEvent,
  type WatchOptions,
} from './interface.js';
import { EventLog, LogWatch, watchBucket } from './eventlog.js';

/** Pages of write-ahead log after which a commit checkpoints it (see the constructor). */
const WAL_AUTOCHECKPOINT_PAGES = 4000;

export interface SqliteOptions {
  /** Path of the database file, or ':memory:'. */
  path: string;
  /** How often expired leases are swept, in ms (default 500). */
  leaseSweepIntervalMs?: number;
  /**
   * Events kept in memory for watchers that are nearly caught up (default 2,000 events or 4 MiB); a watcher
   * further behind reads its events from the log.
   */
  recentEvents?: number;
  recentEventBytes?: number;
}

interface Row {
  id: number;
  name: string;
  create_revision: number;
  prev_revision: number;
  version: number;
  deleted: number;
  lease: number;
  value: Buffer;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS log (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL,
  create_revision INTEGER NOT NULL,
  prev_revision INTEGER NOT NULL,
  version INTEGER NOT NULL,
  deleted INTEGER NOT NULL,
  lease INTEGER NOT NULL,
  value BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS log_name_id ON log (name, id);
CREATE TABLE IF NOT EXISTS current (
  name TEXT PRIMARY KEY,
  id INTEGER NOT NULL,
  lease INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS current_lease ON current (lease) WHERE lease != 0;
CREATE TABLE IF NOT EXISTS lease (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  ttl INTEGER NOT NULL,
  expires_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (
  k TEXT PRIMARY KEY,
  v INTEGER NOT NULL
) WITHOUT ROWID;
`;

type WriteFn = () => { row: Row; prev: Row | undefined };
type WriteOutcome = { row: Row; prev: Row | undefined } | { failed: unknown };

interface PendingWrite {
  fn: WriteFn;
  resolve: (row: Row) => void;
  reject: (err: unknown) => void;
}

const COLS = 'l.id, l.name, l.create_revision, l.prev_revision, l.version, l.deleted, l.lease, l.value';

function toKV(r: Row): KeyValue {
  return {
    key: r.name,
    value: r.value,
    createRevision: r.create_revision,
    modRevision: r.id,
    version: r.version,
    lease: r.lease,
  };
}

export async function openSqlite(opts: SqliteOptions): Promise<KV> {
  return new SqliteKV(opts);
}

class SqliteKV implements KV {
  readonly backend = 'sqlite';
  private readonly db: Database.Database;
  private rev: number;
  private compactRev: number;
  private closed = false;
  private readonly events: EventLog;
  private readonly sweeper: NodeJS.Timeout;
  private readonly st;
  private readonly tx;
  /** Writes waiting for the next group commit, in call order. */
  private queue: PendingWrite[] = [];
  private flushScheduled = false;
  private readonly flushQueued = () => this.flush();

  constructor(opts: SqliteOptions) {
    const memory = opts.path === ':memory:';
    if (!memory) mkdirSync(dirname(opts.path), { recursive: true });
    this.db = new Database(opts.path);
    try {
      this.db.pragma('busy_timeout = 0');
      if (!memory) {
        this.db.pragma('locking_mode = EXCLUSIVE');
        // auto_vacuum must be chosen before the first table exists; it lets compaction give pages back.
        this.db.pragma('auto_vacuum = INCREMENTAL');
        this.db.pragma('journal_mode = WAL');
        this.db.pragma('synchronous = NORMAL');
        // A checkpoint (copying the log into the database, with an fsync of each) runs inside the commit that
        // crosses this many pages of log, stalling the event loop for milliseconds. SQLite's default of 1,000
        // pages (4 MiB) meant one every ~200 sequential writes; 4,000 pages (16 MiB of log) make them a quarter
        // as frequent, and pages written again between checkpoints are copied once. Compaction still
        // checkpoints and truncates the log.
        this.db.pragma(`wal_autocheckpoint = ${WAL_AUTOCHECKPOINT_PAGES}`);
      }
      this.db.exec(SCHEMA);
    } catch (err) {
      this.db.close();
      if ((err as { code?: string }).code === 'SQLITE_BUSY') {
        throw errors.unavailable(`the embedded store ${opts.path} is in use by another process`, err);
      }
      throw err;
    }
    this.st = this.prepare();
    this.tx = this.transactions();
    const seq = this.db.prepare(`SELECT seq FROM sqlite_sequence WHERE name = 'log'`).get() as { seq: number } | undefined;
    this.rev = seq?.seq ?? 0;
    this.compactRev = (this.st.getMeta.get('compact_revision') as { v: number } | undefined)?.v ?? 0;
    this.events = new EventLog(opts.recentEvents ?? 2_000, opts.recentEventBytes ?? 4 * 1024 * 1024, this.rev);
    this.sweepLeases();
    this.sweeper = setInterval(() => this.sweepLeases(), opts.leaseSweepIntervalMs ?? 500);
    this.sweeper.unref();
  }

  private prepare() {
    const db = this.db;
    return {
      getCurrent: db.prepare(`SELECT ${COLS} FROM current c JOIN log l ON l.id = c.id WHERE c.name = ?`),
      getAt: db.prepare(
        `SELECT ${COLS} FROM log l WHERE l.name = ? AND l.id <= ? ORDER BY l.id DESC LIMIT 1`,
      ),
      getById: db.prepare(`SELECT ${COLS} FROM log l WHERE l.id = ?`),
      listCurrent: db.prepare(
        `SELECT ${COLS} FROM current c JOIN log l ON l.id = c.id WHERE c.name >= ? AND c.name < ? ORDER BY c.name LIMIT ?`,
      ),
      countCurrent: db.prepare(`SELECT COUNT(*) AS n FROM current WHERE name >= ? AND name < ?`),
      listAt: db.prepare(
        `SELECT ${COLS} FROM log l WHERE l.id IN (
           SELECT MAX(id) FROM log WHERE name >= ? AND name < ? AND id <= ? GROUP BY name
         ) AND l.deleted = 0 ORDER BY l.name LIMIT ?`,
      ),
      countAt: db.prepare(
        `SELECT COUNT(*) AS n FROM log l WHERE l.id IN (
           SELECT MAX(id) FROM log WHERE name >= ? AND name < ? AND id <= ? GROUP BY name
         ) AND l.deleted = 0`,
      ),
      insert: db.prepare(
        `INSERT INTO log (id, name, create_revision, prev_revision, version, deleted, lease, value)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      /** Whether a key has a live row: no join and no copy of the value, for a create's existence check. */
      hasCurrent: db.prepare(`SELECT 1 FROM current WHERE name = ?`).pluck(),
      /**
       * A create's index row: it also checks that the key has no live row (then it changes nothing, 0 changes),
       * in the same statement.
       */
      insertCurrent: db.prepare(`INSERT OR IGNORE INTO current (name, id, lease) VALUES (?, ?, ?)`),
      upsertCurrent: db.prepare(
        `INSERT INTO current (name, id, lease) VALUES (?, ?, ?)
         ON CONFLICT(name) DO UPDATE SET id = excluded.id, lease = excluded.lease`,
      ),
      deleteCurrent: db.prepare(`DELETE FROM current WHERE name = ?`),
      after: db.prepare(`SELECT ${COLS} FROM log l WHERE l.id > ? AND l.id <= ? ORDER BY l.id LIMIT ?`),
      afterRange: db.prepare(
        `SELECT ${COLS} FROM log l WHERE l.name >= ? AND l.name < ? AND l.id > ? AND l.id <= ? ORDER BY l.id LIMIT ?`,
      ),
      compact: db.prepare(
        `DELETE FROM log WHERE id <= :rev AND (deleted = 1 OR id < (
           SELECT MAX(id) FROM log l2 WHERE l2.name = log.name AND l2.id <= :rev))`,
      ),
      getMeta: db.prepare(`SELECT v FROM meta WHERE k = ?`),
      setMeta: db.prepare(`INSERT INTO meta (k, v) VALUES (?, ?) ON CONFLICT(k) DO UPDATE SET v = excluded.v`),
      leaseInsert: db.prepare(`INSERT INTO lease (ttl, expires_at) VALUES (?, ?)`),
      leaseGet: db.prepare(`SELECT id FROM lease WHERE id = ?`),
      leaseExpired: db.prepare(`SELECT id FROM lease WHERE expires_at <= ?`),
      leaseDelete: db.prepare(`DELETE FROM lease WHERE id = ?`),
      leaseKeys: db.prepare(`SELECT name FROM current WHERE lease = ?`),
    };
  }

  /** The transaction functions, built once: better-sqlite3 wraps each in BEGIN/COMMIT (SAVEPOINT when nested). */
  private transactions() {
    const db = this.db;
    const st = this.st;
    return {
      /** One write in its own transaction. */
      one: db.transaction((fn: WriteFn) => fn()),
      /**
       * Several writes in one transaction. Revisions are taken in order, one per write that succeeds;
       * `this.rev` moves only after the commit. A write's own refusal (a KeyExists, a Conflict, a missing
       * lease: a StorageError) is thrown by its checks before it changes anything, so it needs no savepoint of
       * its own. Any other failure (from SQLite, in the middle of a write) throws BatchWriteFailed, which rolls
       * the whole transaction back; flush then runs the writes one transaction each, so that only the failing
       * write fails.
       */
      batch: db
        .transaction((batch: PendingWrite[], out: WriteOutcome[]) => {
          // append takes the next revision from this.rev: move it per write, and restore it until the commit.
          const base = this.rev;
          try {
            for (let i = 0; i < batch.length; i++) {
              try {
                const r = batch[i]!.fn();
                out.push(r);
                this.rev = r.row.id;
              } catch (err) {
                if (!(err instanceof StorageError)) throw new BatchWriteFailed(err);
                out.push({ failed: err });
              }
            }
            return this.rev;
          } finally {
            this.rev = base;
          }
        }),
      list: db.transaction((current: boolean, start: string, end: string, at: number, limit: number) => {
        const rows = (current ? st.listCurrent.all(start, end, limit) : st.listAt.all(start, end, at, limit)) as Row[];
        let remaining = 0;
        if (limit > 0 && rows.length === limit) {
          const total = (current ? st.countCurrent.get(start, end) : st.countAt.get(start, end, at)) as { n: number };
          remaining = total.n - rows.length;
        }
        return { rows, remaining };
      }),
    };
  }

  private check(): void {
    if (this.closed) throw errors.closed();
  }

  /** Validates a read revision: 0 means current; older than the compaction or newer than the store fail. */
  private readRevision(revision: number | undefined): number {
    const r = revision ?? 0;
    if (!Number.isInteger(r) || r < 0) throw errors.invalid(`invalid revision ${r}`);
    if (r === 0) return this.rev;
    if (r < this.compactRev) throw errors.compacted(r, this.compactRev, this.rev);
    if (r > this.rev) throw errors.future(r, this.rev);
    return r;
  }

  async get(key: string, opts?: ReadOptions): Promise<GetResult> {
    this.check();
    const at = this.readRevision(opts?.revision);
    const row = (at === this.rev ? this.st.getCurrent.get(key) : this.st.getAt.get(key, at)) as Row | undefined;
    return { kv: row && !row.deleted ? toKV(row) : null, revision: at };
  }

  async list(prefix: string, opts: ListOptions = {}): Promise<ListResult> {
    this.check();
    const at = this.readRevision(opts.revision);
    const end = prefixEnd(prefix);
    let start = prefix;
    if (opts.startKey !== undefined) {
      if (!opts.startKey.startsWith(prefix)) throw errors.invalid(`start key ${opts.startKey} is outside ${prefix}`);
      start = opts.startKey;
    }
    const limit = opts.limit && opts.limit > 0 ? opts.limit : -1;
    const { rows, remaining } = this.tx.list(at === this.rev, start, end, at, limit);
    return { kvs: rows.map(toKV), revision: at, more: remaining > 0, remaining };
  }

  async count(prefix: string): Promise<number> {
    this.check();
    return (this.st.countCurrent.get(prefix, prefixEnd(prefix)) as { n: number }).n;
  }

  private currentRow(key: string): Row | undefined {
    return this.st.getCurrent.get(key) as Row | undefined;
  }

  private checkLease(lease: number | undefined): number {
    if (!lease) return 0;
    if (!this.st.leaseGet.get(lease)) throw errors.leaseNotFound(lease);
    return lease;
  }

  /**
   * Creates a key, inside a transaction: its index row first, which fails (changing nothing) when the key has a
   * live row, then its log row.
   */
  private appendCreate(key: string, value: Buffer, lease: number): Row {
    const id = this.rev + 1;
    if (this.st.insertCurrent.run(key, id, lease).changes === 0) throw errors.exists(key);
    this.st.insert.run(id, key, id, 0, 1, 0, lease, value);
    return { id, name: key, create_revision: id, prev_revision: 0, version: 1, deleted: 0, lease, value };
  }

  /** Appends one row of an existing key (an update or a delete tombstone); must run inside a transaction. */
  private append(key: string, value: Buffer, prev: Row, deleted: boolean, lease: number): Row {
    const id = this.rev + 1;
    const row: Row = {
      id,
      name: key,
      create_revision: prev.create_revision,
      prev_revision: prev.id,
      version: deleted ? 0 : prev.version + 1,
      deleted: deleted ? 1 : 0,
      lease,
      value,
    };
    this.st.insert.run(id, key, row.create_revision, row.prev_revision, row.version, row.deleted, lease, value);
    if (deleted) this.st.deleteCurrent.run(key);
    else this.st.upsertCurrent.run(key, id, lease);
    return row;
  }

  /** Runs a write in a transaction of its own, now; on success moves the revision and tells the watchers. */
  private writeNow(fn: WriteFn): Row {
    this.check();
    const r = this.tx.one.immediate(fn);
    this.rev = r.row.id;
    this.publish(r);
    return r.row;
  }

  private publish({ row, prev }: { row: Row; prev: Row | undefined }): void {
    const kv = toKV(row);
    const event: WatchEvent = row.deleted
      ? { type: 'delete', kv: { ...kv, value: Buffer.alloc(0) }, prevKv: toKV(prev!) }
      : { type: 'put', kv, prevKv: prev ? toKV(prev) : null };
    this.events.publish(event);
  }

  /**
   * Queues a write for the next group commit: the writes called in one turn of the event loop share one
   * transaction (one commit to the WAL), each still with a revision of its own and its own failure. The
   * promise settles after the commit, so an acknowledged write is durable.
   */
  private write(fn: WriteFn): Promise<Row> {
    this.check();
    return new Promise<Row>((resolve, reject) => {
      this.queue.push({ fn, resolve, reject });
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        setImmediate(this.flushQueued);
      }
    });
  }

  /** Commits the queued writes, then publishes their events and settles their promises, in order. */
  private flush(): void {
    this.flushScheduled = false;
    const batch = this.queue;
    if (batch.length === 0) return;
    this.queue = [];
    if (this.closed) {
      for (const w of batch) w.reject(errors.closed());
      return;
    }
    if (batch.length === 1) {
      const w = batch[0]!;
      let r: { row: Row; prev: Row | undefined };
      try {
        r = this.tx.one.immediate(w.fn);
      } catch (err) {
        w.reject(err);
        return;
      }
      this.rev = r.row.id;
      this.publish(r);
      w.resolve(r.row);
      return;
    }
    const out: WriteOutcome[] = [];
    let last: number;
    try {
      last = this.tx.batch.immediate(batch, out);
    } catch (err) {
      if (err instanceof BatchWriteFailed) {
        // One write failed half-way: nothing was committed; each write again in a transaction of its own.
        for (const w of batch) {
          let r: { row: Row; prev: Row | undefined };
          try {
            r = this.tx.one.immediate(w.fn);
          } catch (e) {
            w.reject(e);
            continue;
          }
          this.rev = r.row.id;
          this.publish(r);
          w.resolve(r.row);
        }
        return;
      }
      // The transaction as a whole failed (its commit): none of the writes happened.
      for (const w of batch) w.reject(err);
      return;
    }
    this.rev = last;
    for (const r of out) if ('row' in r) this.publish(r);
    for (let i = 0; i < batch.length; i++) {
      const r = out[i]!;
      if ('row' in r) batch[i]!.resolve(r.row);
      else batch[i]!.reject(r.failed);
    }
  }

  async create(key: string, value: Uint8Array, opts?: PutOptions): Promise<KeyValue> {
    if (!key) throw errors.invalid('empty key');
    const row = await this.write(() => {
      let lease = 0;
      if (opts?.lease) {
        // As etcd's transaction compares before its put checks the lease, an existing key is a KeyExists even when
        // the lease is gone; both are checked before anything is written (a refusal changes nothing, see batch).
        if (this.st.hasCurrent.get(key) !== undefined) throw errors.exists(key);
        lease = this.checkLease(opts.lease);
      }
      return { row: this.appendCreate(key, asBuffer(value), lease), prev: undefined };
    });
    return toKV(row);
  }

  async update(key: string, value: Uint8Array, expectedModRevision: number, opts?: PutOptions): Promise<KeyValue> {
    const row = await this.write(() => {
      const prev = this.currentRow(key);
      if (!prev) throw errors.notFound(key);
      if (prev.id !== expectedModRevision) throw errors.conflict(key, toKV(prev));
      const lease = this.checkLease(opts?.lease);
      return { row: this.append(key, asBuffer(value), prev, false, lease), prev };
    });
    return toKV(row);
  }

  async delete(key: string, expectedModRevision?: number): Promise<DeleteResult> {
    let prevKv: KeyValue | undefined;
    const row = await this.write(() => {
      const prev = this.currentRow(key);
      if (!prev) throw errors.notFound(key);
      if (expectedModRevision !== undefined && prev.id !== expectedModRevision) throw errors.conflict(key, toKV(prev));
      prevKv = toKV(prev);
      return { row: this.append(key, Buffer.alloc(0), prev, true, 0), prev };
    });
    return { prevKv: prevKv!, revision: row.id };
  }

  watch(key: string, opts: WatchOptions = {}): Watch {
    const prefix = opts.prefix ?? false;
    const match = prefix ? (k: string) => k.startsWith(key) : (k: string) => k === key;
    const after = opts.afterRevision && opts.afterRevision > 0 ? opts.afterRevision : this.rev;
    const end = prefix ? prefixEnd(key) : key + '\0';
    return new LogWatch(this.events, match, after, {
      compactedRevision: () => this.compactRev,
      currentRevision: () => this.rev,
      closed: () => this.closed,
      readAfter: (from, to, limit) => this.readEvents(key, end, from, to, limit),
    }, watchBucket(key));
  }

  /** Events with revisions in (from, to] for keys in [start, end), oldest first, from the log. */
  private readEvents(start: string, end: string, from: number, to: number, limit: number): WatchEvent[] {
    const rows = this.st.afterRange.all(start, end, from, to, limit) as Row[];
    return rows.map((row) => {
      const prev = row.prev_revision ? (this.st.getById.get(row.prev_revision) as Row | undefined) : undefined;
      const kv = toKV(row);
      if (row.deleted) {
        return { type: 'delete', kv, prevKv: prev ? toKV(prev) : { ...kv, version: 0 } };
      }
      return { type: 'put', kv, prevKv: prev ? toKV(prev) : null };
    });
  }

  async compact(revision: number): Promise<void> {
    this.check();
    if (revision <= this.compactRev) throw errors.compacted(revision, this.compactRev, this.rev);
    if (revision > this.rev) throw errors.future(revision, this.rev);
    this.db.transaction(() => {
      this.st.compact.run({ rev: revision });
      this.st.setMeta.run('compact_revision', revision);
    })();
    this.compactRev = revision;
    if (this.db.name !== ':memory:') {
      this.db.pragma('incremental_vacuum');
      this.db.pragma('wal_checkpoint(TRUNCATE)');
    }
  }

  async currentRevision(): Promise<number> {
    this.check();
    return this.rev;
  }

  async grantLease(ttlSeconds: number): Promise<number> {
    this.check();
    if (!(ttlSeconds > 0)) throw errors.invalid(`lease TTL must be positive, got ${ttlSeconds}`);
    const r = this.st.leaseInsert.run(ttlSeconds, Date.now() + ttlSeconds * 1000);
    return Number(r.lastInsertRowid);
  }

  /** Deletes the keys of every expired lease, one delete (and event) per key, then the lease. */
  private sweepLeases(): void {
    if (this.closed) return;
    const expired = this.st.leaseExpired.all(Date.now()) as { id: number }[];
    for (const { id } of expired) {
      const keys = this.st.leaseKeys.all(id) as { name: string }[];
      for (const { name } of keys) {
        try {
          this.writeNow(() => {
            const prev = this.currentRow(name);
            if (!prev || prev.lease !== id) throw errors.notFound(name);
            return { row: this.append(name, Buffer.alloc(0), prev, true, 0), prev };
          });
        } catch (err) {
          if (!(err instanceof StorageError)) throw err;
        }
      }
      this.st.leaseDelete.run(id);
    }
  }

  async stats(): Promise<StoreStats> {
    this.check();
    const pages = this.db.pragma('page_count', { simple: true }) as number;
    const size = this.db.pragma('page_size', { simple: true }) as number;
    return { dbSizeBytes: pages * size };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    // Writes already called are committed (and acknowledged) before the store closes.
    this.flush();
    this.closed = true;
    clearInterval(this.sweeper);
    this.events.close();
    this.db.close();
  }
}

/** A batched write that failed other than by its own refusal: the batch is rolled back and retried write by write. */
class BatchWriteFailed extends Error {
  constructor(readonly failure: unknown) {
    super('a write of the batch failed');
  }
}

function asBuffer(v: Uint8Array): Buffer {
  return Buffer.isBuffer(v) ? v : Buffer.from(v.buffer, v.byteOffset, v.byteLength);
}
