/**
 * The storage contract: what the API server needs from a key-value store with etcd v3 semantics.
 *
 * Every backend (the embedded SQLite store, in a file or in memory, and etcd) implements `KV` and passes the
 * one conformance suite in test/storage. Keys are strings compared byte-wise; values are opaque bytes.
 * Every write moves one global revision counter forward by one; that counter is the source of every
 * resourceVersion the server hands out.
 */

/** A key as stored, with the revisions etcd reports for it. */
export interface KeyValue {
  key: string;
  value: Uint8Array;
  /** Revision of the write that created the key (its latest incarnation). */
  createRevision: number;
  /** Revision of the latest write to the key; for a delete event, the revision of the delete. */
  modRevision: number;
  /** Writes since creation: 1 after create, +1 per update; 0 in a delete event. */
  version: number;
  /** Lease the key is attached to, 0 for none. */
  lease: number;
  /**
   * Set on a value read through an encryption provider or key other than the one that writes now: rewriting
   * it, even unchanged, re-encrypts it (see transformer/kv.ts).
   */
  stale?: boolean;
}

export interface ReadOptions {
  /** Read as of this revision; 0 or absent reads the newest state. */
  revision?: number;
}

export interface GetResult {
  kv: KeyValue | null;
  /** The revision the read was served at (the store's revision for a current read). */
  revision: number;
}

export interface ListOptions extends ReadOptions {
  /** Most keys to return; 0 or absent for all. */
  limit?: number;
  /** First key to return (inclusive); must start with the listed prefix. Used for continue tokens. */
  startKey?: string;
}

export interface ListResult {
  /** Keys in byte order. */
  kvs: KeyValue[];
  /** The revision the whole list was read at; pass it back to read the next page consistently. */
  revision: number;
  /** True when keys remain after the last one returned. */
  more: boolean;
  /** How many keys remain after the last one returned. */
  remaining: number;
}

export interface PutOptions {
  /** Attach the key to this lease (from grantLease); the key is deleted when the lease expires. */
  lease?: number;
}

export interface DeleteResult {
  /** The value the key held just before the delete. */
  prevKv: KeyValue;
  /** Revision of the delete. */
  revision: number;
}

/**
 * A change to a watched key. `put` is a create (prevKv null) or an update; `delete` carries the deleted
 * value in prevKv and, in kv, the key with modRevision set to the revision of the delete and an empty value.
 */
export type WatchEvent =
  | { type: 'put'; kv: KeyValue; prevKv: KeyValue | null }
  | { type: 'delete'; kv: KeyValue; prevKv: KeyValue };

export interface WatchOptions {
  /** Treat the watched key as a prefix. */
  prefix?: boolean;
  /**
   * Deliver every event with a revision greater than this one, in revision order, then live events.
   * 0 or absent: from the store's current revision (only events that happen after the call).
   * An older revision than the last compaction fails the watch with a `Compacted` error.
   */
  afterRevision?: number;
}

/**
 * A stream of events. Iterate it with `for await`; the iteration ends when `close()` is called and throws a
 * StorageError when the watch fails (Compacted, Unavailable, Closed). A watch is bounded: a consumer that does
 * not read does not make the store buffer without limit.
 */
export interface Watch extends AsyncIterable<WatchEvent> {
  close(): void;
  /**
   * Progress notification, when the backend knows it at the moment of the call: a revision such that every
   * matching event up to it has already been handed out by next() (while the watch waits for new events it
   * is the store's revision as of its last look). undefined when not known; backends may lack it.
   */
  progress?(): number | undefined;
}

export interface StoreStats {
  /** Size of the store's data on disk (or in memory), in bytes. */
  dbSizeBytes: number;
}

export interface KV {
  /** 'sqlite' or 'etcd'; informational. */
  readonly backend: string;

  get(key: string, opts?: ReadOptions): Promise<GetResult>;
  /** Keys under `prefix` in byte order, one consistent snapshot at one revision. */
  list(prefix: string, opts?: ListOptions): Promise<ListResult>;
  /** Number of keys currently under `prefix`. */
  count(prefix: string): Promise<number>;

  /** Creates the key; fails with `KeyExists` when it is present. */
  create(key: string, value: Uint8Array, opts?: PutOptions): Promise<KeyValue>;
  /**
   * Replaces the value when the key's modRevision equals `expectedModRevision`. Fails with `NotFound` when the
   * key is absent and `Conflict` (carrying the current value) when its revision differs.
   */
  update(key: string, value: Uint8Array, expectedModRevision: number, opts?: PutOptions): Promise<KeyValue>;
  /**
   * Deletes the key, guarded by its modRevision when one is given. Fails with `NotFound` or `Conflict`
   * (carrying the current value).
   */
  delete(key: string, expectedModRevision?: number): Promise<DeleteResult>;

  watch(key: string, opts?: WatchOptions): Watch;

  /** Drops history older than `revision`: reads and watches before it then fail with `Compacted`. */
  compact(revision: number): Promise<void>;
  /** The store's newest revision. */
  currentRevision(): Promise<number>;

  /** A lease that expires `ttlSeconds` from now; keys put with it are deleted then. */
  grantLease(ttlSeconds: number): Promise<number>;

  stats(): Promise<StoreStats>;
  close(): Promise<void>;
}

/**
 * The first key after every key that starts with `prefix` (etcd's range end for a prefix). Keys are compared
 * byte-wise; orch's keys are ASCII, where byte order and string order agree.
 */
export function prefixEnd(prefix: string): string {
  for (let i = prefix.length - 1; i >= 0; i--) {
    const c = prefix.charCodeAt(i);
    if (c < 0x7f) return prefix.slice(0, i) + String.fromCharCode(c + 1);
  }
  return '\u007f';
}
