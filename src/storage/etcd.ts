/**
 * The etcd v3 backend: the storage contract (interface.ts) over an etcd cluster, through the `etcd3` client.
 *
 * Reads and writes use etcd3's low-level KV/Lease/Maintenance clients (`client.kv.range`, `client.kv.txn`, ...)
 * so that every response header, range count and transaction branch is visible. Watches use the raw watch
 * stream (`client.watchClient.watch()`), one stream per Watch, instead of etcd3's `Watcher`, because:
 *  - a Watcher moves its resume revision to `header.revision + 1` when it is created and on every response, so
 *    a watcher that is still replaying history when its stream breaks resumes past events it never delivered;
 *  - a Watcher reports a compacted start revision as an 'error' "Watcher canceled: " with an empty reason and
 *    without the response's `compact_revision`;
 *  - a bounded watch has to stop and restart the etcd watch at a revision of its choosing.
 *
 * Fault handling. etcd3 runs every call through a global cockatiel policy (by default three retries) and a
 * per-host policy (by default a circuit breaker that, after three consecutive failures, refuses every call for
 * five seconds, so a client stays broken for up to five seconds after etcd is back). Here the global policy is a
 * no-op and retries are done in `call()`, within one deadline of `healthcheckTimeoutMs` per operation, and only
 * where that is safe: reads are retried on any transient failure, writes only when the request cannot have
 * reached etcd (no connection). With one endpoint the host policy is a no-op too (a dead etcd fails fast
 * anyway); with several it is a short breaker (two failures, one second) so that calls move to live members.
 * gRPC's reconnect backoff is capped at one second, so the client reconnects by itself soon after etcd returns.
 */
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import {
  ClientClosedError,
  Etcd3,
  EtcdError,
  EtcdLeaseInvalidError,
  GRPCDeadlineExceededError,
  GRPCGenericError,
  GRPCInvalidArgumentError,
  isRecoverableError,
  type IDuplexStream,
  type IEvent,
  type IKeyValue,
  type IOptions,
  type IResponseHeader,
  type ITxnRequest,
  type ITxnResponse,
  type IWatchRequest,
  type IWatchResponse,
} from 'etcd3';
import { StorageError, errors } from './errors.js';
import type { Dialer } from '../util/dial.js';
import { forwardThrough, type Forwarder } from '../util/forward.js';
import type {
  DeleteResult,
  GetResult,
  KV,
  KeyValue,
  ListOptions,
  ListResult,
  PutOptions,
  ReadOptions,
  StoreStats,
  Watch,
  WatchEvent,
  WatchOptions,
} from './interface.js';

export interface EtcdOptions {
  /** Client URLs, e.g. ['http://127.0.0.1:2379']; all http or all https. */
  endpoints: string[];
  /** TLS to etcd: PEM files of the CA, and of the client certificate and key (both or neither). */
  caFile?: string;
  certFile?: string;
  keyFile?: string;
  /**
   * Default 2000. Every call fails with `Unavailable` within about this time when etcd cannot be reached (it is
   * the deadline of one operation, retries included).
   */
  healthcheckTimeoutMs?: number;
  /**
   * The etcd egress (--egress-selector-config-file): each endpoint is reached through a local forwarding
   * listener (util/forward.ts) whose connections are dialled with it; TLS still verifies the endpoint's name.
   */
  dial?: Dialer;
}

/** Undelivered events a watch holds before it stops its etcd watch until the consumer catches up. */
const WATCH_MAX_BUFFERED = 1000;
/** A stopped watch restarts when the consumer has taken it down to this many undelivered events. */
const WATCH_RESUME_AT = 250;
const WATCH_BACKOFF_MIN_MS = 50;
const WATCH_BACKOFF_MAX_MS = 1000;
/** Fewest milliseconds between two progress requests on one watch stream. */
const PROGRESS_REQUEST_MIN_MS = 100;

type WatchStream = IDuplexStream<IWatchRequest, IWatchResponse>;
type CallOpts = { deadline: number };

const ZERO_KEY = Buffer.from([0]);
const NEVER_ABORTED = new AbortController().signal;

/**
 * Connects to etcd and checks that it answers: fails with `Unavailable` when it does not within
 * `healthcheckTimeoutMs` (after that, an outage only fails calls; the client reconnects by itself).
 *
 * A watch "from now" (no afterRevision) starts after the newest revision this client has seen in any
 * response, not at a fresh read: the etcd watch is created a round trip after `watch()` returns, and this way a
 * write made right after the call cannot be missed. It may also deliver writes of other clients made between
 * that revision and the call. Closing the store fails its open watches with `Closed` once their buffered
 * events have been read (as the SQLite store does).
 */
export async function openEtcd(opts: EtcdOptions): Promise<KV> {
  if (!opts.endpoints || opts.endpoints.length === 0) throw errors.invalid('etcd: no endpoints given');
  const timeoutMs = opts.healthcheckTimeoutMs ?? 2000;
  if (!(timeoutMs > 0)) throw errors.invalid(`etcd: healthcheckTimeoutMs must be positive, got ${timeoutMs}`);
  const forwarded = opts.dial ? await forwardEndpoints(opts.endpoints, opts.dial) : undefined;
  const options: IOptions = {
    hosts: forwarded?.hosts ?? opts.endpoints,
    grpcOptions: {
      // Reconnect soon after etcd comes back (gRPC's default backoff grows to two minutes).
      'grpc.initial_reconnect_backoff_ms': 100,
      'grpc.max_reconnect_backoff_ms': 1000,
      // Notice a silently dead connection under an open watch (etcd allows pings every 5 s by default).
      'grpc.keepalive_time_ms': 15_000,
      'grpc.keepalive_timeout_ms': Math.max(timeoutMs, 5000),
      // A list can be larger than gRPC's default 4 MiB receive limit.
      'grpc.max_receive_message_length': -1,
      ...forwarded?.grpcOptions,
    },
    faultHandling: {
      host: () =>
        (opts.endpoints.length > 1 ? new HostBreaker(2, 1000) : NOOP_POLICY) as unknown as ReturnType<HostPolicyFactory>,
      global: NOOP_POLICY as unknown as GlobalPolicy,
    },
  };
  const credentials = await loadCredentials(opts);
  if (credentials) options.credentials = credentials;
  const client = new Etcd3(options);
  const kv = new EtcdKV(client, timeoutMs);
  if (forwarded) {
    const close = kv.close.bind(kv);
    kv.close = async () => {
      await close();
      await Promise.all(forwarded.forwarders.map((f) => f.close()));
    };
  }
  try {
    await kv.currentRevision();
  } catch (err) {
    await kv.close();
    throw err;
  }
  return kv;
}

/**
 * A local forwarder per endpoint, the endpoints rewritten to them, and for TLS the name the certificates
 * are checked against: the endpoints' host name (gRPC takes one per client, so all must share it).
 */
async function forwardEndpoints(endpoints: string[], dial: Dialer): Promise<{ hosts: string[]; grpcOptions: Record<string, string>; forwarders: Forwarder[] }> {
  const forwarders: Forwarder[] = [];
  const hosts: string[] = [];
  const names = new Set<string>();
  try {
    for (const e of endpoints) {
      const url = new URL(e.includes('://') ? e : `http://${e}`);
      const host = url.hostname.replace(/^\[|\]$/g, '');
      const port = Number(url.port || 2379);
      const f = await forwardThrough(dial, host, port);
      forwarders.push(f);
      hosts.push(`${url.protocol}//127.0.0.1:${f.port}`);
      if (url.protocol === 'https:') names.add(host);
    }
  } catch (err) {
    await Promise.all(forwarders.map((f) => f.close()));
    throw err;
  }
  if (names.size > 1) {
    await Promise.all(forwarders.map((f) => f.close()));
    throw errors.invalid(`etcd: through an egress proxy, TLS endpoints must share one host name, got ${[...names].join(', ')}`);
  }
  const [name] = names;
  return { hosts, forwarders, grpcOptions: name ? { 'grpc.ssl_target_name_override': name, 'grpc.default_authority': name } : {} };
}

type FaultHandling = NonNullable<IOptions['faultHandling']>;
type HostPolicyFactory = NonNullable<FaultHandling['host']>;
type GlobalPolicy = NonNullable<FaultHandling['global']>;

async function loadCredentials(opts: EtcdOptions): Promise<IOptions['credentials']> {
  if (!opts.caFile && !opts.certFile && !opts.keyFile) return undefined;
  if (!opts.certFile !== !opts.keyFile) throw errors.invalid('etcd: certFile and keyFile must be given together');
  const read = async (file: string | undefined): Promise<Buffer | undefined> => {
    if (!file) return undefined;
    try {
      return await readFile(file);
    } catch (err) {
      throw errors.invalid(`etcd: cannot read ${file}: ${(err as Error).message}`);
    }
  };
  const [ca, cert, key] = await Promise.all([read(opts.caFile), read(opts.certFile), read(opts.keyFile)]);
  // Without a CA file gRPC uses the system roots (etcd3 passes rootCertificate straight to createSsl).
  return { rootCertificate: ca as Buffer, certChain: cert, privateKey: key };
}

/** A policy that just runs the call (etcd3 only ever calls `execute`). */
const NOOP_POLICY = {
  execute<T>(fn: (ctx: { signal: AbortSignal }) => PromiseLike<T> | T): Promise<T> {
    return Promise.resolve().then(() => fn({ signal: NEVER_ABORTED }));
  },
};

class BreakerOpenError extends Error {
  constructor() {
    super('etcd endpoint temporarily skipped after repeated failures');
  }
}

/**
 * A small circuit breaker for one host when there are several: after `threshold` consecutive transient
 * failures the host is skipped for `openMs`, then tried again (one more failure skips it again).
 */
class HostBreaker {
  private failures = 0;
  private openUntil = 0;
  constructor(
    private readonly threshold: number,
    private readonly openMs: number,
  ) {}

  async execute<T>(fn: (ctx: { signal: AbortSignal }) => PromiseLike<T> | T): Promise<T> {
    if (Date.now() < this.openUntil) throw new BreakerOpenError();
    try {
      const result = await fn({ signal: NEVER_ABORTED });
      this.failures = 0;
      return result;
    } catch (err) {
      if (isTransient(err) && ++this.failures >= this.threshold) {
        this.openUntil = Date.now() + this.openMs;
        this.failures = this.threshold - 1;
      }
      throw err;
    }
  }
}

function isTransient(err: unknown): boolean {
  if (err instanceof BreakerOpenError) return true;
  if (typeof err !== 'object' || err === null) return false;
  if (isRecoverableError(err as Error)) return true;
  const msg = (err as Error).message ?? '';
  return /no leader|leader changed|request timed out|too many requests|ECONNREFUSED|ECONNRESET|No connection established/i.test(
    msg,
  );
}

/** A transient failure where the request cannot have reached etcd, so that even a write may be retried. */
function notSent(err: unknown): boolean {
  if (err instanceof BreakerOpenError) return true;
  const msg = (err as Error)?.message ?? '';
  return /No connection established|ECONNREFUSED|etcdserver: no leader|etcdserver: too many requests|Name resolution failed/i.test(
    msg,
  );
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

function toBuffer(v: Uint8Array): Buffer {
  return Buffer.isBuffer(v) ? v : Buffer.from(v.buffer, v.byteOffset, v.byteLength);
}

/** The first key after every key that starts with `prefix`, byte-wise ('\0' = no end: every key). */
function rangeEnd(prefix: Buffer): Buffer {
  const end = Buffer.from(prefix);
  for (let i = end.length - 1; i >= 0; i--) {
    const b = end.readUInt8(i);
    if (b < 0xff) {
      end.writeUInt8(b + 1, i);
      return end.subarray(0, i + 1);
    }
  }
  return ZERO_KEY;
}

function toKV(kv: IKeyValue): KeyValue {
  return {
    key: kv.key.toString('utf8'),
    value: kv.value ?? Buffer.alloc(0),
    createRevision: Number(kv.create_revision),
    modRevision: Number(kv.mod_revision),
    version: Number(kv.version),
    lease: Number(kv.lease),
  };
}

function toEvent(ev: IEvent): WatchEvent {
  const prev = ev.prev_kv ? toKV(ev.prev_kv) : null;
  if (ev.type === 'Delete') {
    const kv: KeyValue = {
      key: ev.kv.key.toString('utf8'),
      value: Buffer.alloc(0),
      createRevision: prev?.createRevision ?? 0,
      modRevision: Number(ev.kv.mod_revision),
      version: 0,
      lease: 0,
    };
    // etcd leaves prev_kv out when the previous revision is already compacted.
    return { type: 'delete', kv, prevKv: prev ?? { ...kv } };
  }
  return { type: 'put', kv: toKV(ev.kv), prevKv: prev };
}

function checkRevision(revision: number | undefined): number {
  const r = revision ?? 0;
  if (!Number.isSafeInteger(r) || r < 0) throw errors.invalid(`invalid revision ${r}`);
  return r;
}

/** A random lease ID that a JS number holds exactly (etcd's own IDs use all 63 bits). */
function randomLeaseId(): number {
  const b = randomBytes(8);
  const id = (b.readUInt32BE(0) & 0x1fffff) * 2 ** 32 + b.readUInt32BE(4);
  return id === 0 ? 1 : id;
}

function closeStream(stream: WatchStream | null): void {
  if (!stream) return;
  // Half-close first: etcd3 marks the host failed (and resets its connections) on an error of a stream that
  // is still writable, and cancelling makes the stream emit a CANCELLED error.
  try {
    stream.end();
  } catch {
    // already ended
  }
  try {
    stream.cancel();
  } catch {
    // already finished
  }
}

interface ErrorContext {
  key?: string;
  revision?: number;
  lease?: number;
}

class EtcdKV implements KV {
  readonly backend = 'etcd';
  private closed = false;
  /** Newest revision seen in any response: where a watch "from now" starts. */
  lastSeen = 0;
  /** Newest revision this client compacted to. */
  private compactedTo = 0;
  private readonly watches = new Set<EtcdWatch>();

  constructor(
    readonly client: Etcd3,
    private readonly timeoutMs: number,
  ) {}

  get isClosed(): boolean {
    return this.closed;
  }

  private check(): void {
    if (this.closed) throw errors.closed();
  }

  observe(header: IResponseHeader | undefined | null): void {
    if (!header) return;
    const rev = Number(header.revision);
    if (rev > this.lastSeen) this.lastSeen = rev;
  }

  /**
   * Runs one etcd call with a deadline of `timeoutMs` for the whole operation. Transient failures are retried
   * within the deadline: always for `retry: 'always'` (reads), else only when the request was not sent.
   * Transient failures that are not retried become `Unavailable`; other errors are thrown as they are.
   */
  async call<T extends { header?: IResponseHeader }>(
    what: string,
    fn: (opts: CallOpts) => Promise<T>,
    retry: 'always' | 'unsent',
  ): Promise<T> {
    this.check();
    const deadline = Date.now() + this.timeoutMs;
    let delay = 25;
    // The last attempt usually just runs out of time; an earlier error says why (e.g. connection refused).
    let reason: unknown = null;
    for (;;) {
      try {
        const res = await fn({ deadline });
        this.observe(res.header);
        return res;
      } catch (err) {
        if (this.closed) throw errors.closed();
        if (err instanceof ClientClosedError) throw errors.closed();
        if (!isTransient(err)) throw err;
        if (!(err instanceof GRPCDeadlineExceededError) || reason === null) reason = err;
        const left = deadline - Date.now();
        if (left <= 5 || (retry === 'unsent' && !notSent(err))) {
          throw errors.unavailable(`etcd ${what}: ${message(reason)}`, err);
        }
        await sleep(Math.min(delay, left));
        delay = Math.min(delay * 2, 400);
      }
    }
  }

  /** Turns an error from etcd into a StorageError (non-etcd errors, i.e. bugs, are returned as they are). */
  async translate(err: unknown, ctx: ErrorContext = {}): Promise<unknown> {
    if (err instanceof StorageError) return err;
    if (this.closed || err instanceof ClientClosedError) return errors.closed();
    const msg = message(err);
    if (msg.includes('required revision has been compacted')) return this.compactedError(ctx.revision ?? 0);
    if (msg.includes('required revision is a future revision')) {
      const current = await this.currentRevision().catch(() => this.lastSeen);
      return errors.future(ctx.revision ?? 0, current);
    }
    if (err instanceof EtcdLeaseInvalidError || msg.includes('requested lease not found')) {
      return errors.leaseNotFound(ctx.lease ?? 0);
    }
    if (isTransient(err)) return errors.unavailable(msg, err);
    if (
      err instanceof GRPCInvalidArgumentError ||
      /key is not provided|request is too large|too many operations|duplicate key/.test(msg)
    ) {
      return errors.invalid(`etcd: ${msg}`);
    }
    if (err instanceof EtcdError || err instanceof GRPCGenericError) return errors.unavailable(msg, err);
    return err;
  }

  /** A Compacted error with the store's compaction revision, which a range error does not carry. */
  async compactedError(revision: number): Promise<StorageError> {
    try {
      const info = await this.compactionInfo();
      // etcd's cancel response carries no header revision: ask for it.
      const current = await this.currentRevision().catch(() => this.lastSeen);
      return errors.compacted(revision, info.compactRevision, current);
    } catch {
      return errors.compacted(revision, Math.max(this.compactedTo, revision + 1), this.lastSeen);
    }
  }

  /** etcd refuses a watch from revision 1 at once with its compaction revision: ask that way. */
  private compactionInfo(): Promise<{ compactRevision: number; currentRevision: number }> {
    return new Promise((resolve, reject) => {
      let stream: WatchStream | null = null;
      let done = false;
      const finish = (fn: () => void): void => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        closeStream(stream);
        fn();
      };
      const timer = setTimeout(() => finish(() => reject(new Error('timeout'))), Math.min(this.timeoutMs, 2000));
      this.client.watchClient.watch().then(
        (s) => {
          stream = s;
          if (done) {
            closeStream(s);
            return;
          }
          s.on('data', (res) => {
            this.observe(res.header);
            const compactRevision = Number(res.compact_revision || 0);
            if (res.canceled && compactRevision > 0) {
              finish(() => resolve({ compactRevision, currentRevision: Number(res.header.revision) }));
            } else if (res.canceled || res.events.length > 0) {
              finish(() => reject(new Error('not compacted')));
            }
          });
          s.on('error', (e) => finish(() => reject(e)));
          s.on('end', () => finish(() => reject(new Error('watch stream ended'))));
          s.write({ create_request: { key: ZERO_KEY, start_revision: 1 } });
        },
        (e: unknown) => finish(() => reject(e instanceof Error ? e : new Error(String(e)))),
      );
    });
  }

  async get(key: string, opts?: ReadOptions): Promise<GetResult> {
    const revision = checkRevision(opts?.revision);
    if (key === '') return { kv: null, revision: revision || (await this.currentRevision()) };
    try {
      const res = await this.call(
        'get',
        (o) => this.client.kv.range({ key: Buffer.from(key), revision }, o),
        'always',
      );
      const first = res.kvs[0];
      return { kv: first ? toKV(first) : null, revision: revision || Number(res.header.revision) };
    } catch (err) {
      throw await this.translate(err, { key, revision });
    }
  }

  async list(prefix: string, opts: ListOptions = {}): Promise<ListResult> {
    const revision = checkRevision(opts.revision);
    const p = Buffer.from(prefix);
    let start = p;
    if (opts.startKey !== undefined) {
      if (!opts.startKey.startsWith(prefix)) throw errors.invalid(`start key ${opts.startKey} is outside ${prefix}`);
      start = Buffer.from(opts.startKey);
    }
    if (start.length === 0) start = ZERO_KEY;
    const limit = opts.limit && opts.limit > 0 ? Math.floor(opts.limit) : 0;
    try {
      const res = await this.call(
        'list',
        (o) => this.client.kv.range({ key: start, range_end: rangeEnd(p), limit, revision }, o),
        'always',
      );
      const kvs = res.kvs.map(toKV);
      // etcd's count is every key in [start, end) at the revision, however many were returned.
      const remaining = Math.max(0, Number(res.count) - kvs.length);
      return { kvs, revision: revision || Number(res.header.revision), more: remaining > 0, remaining };
    } catch (err) {
      throw await this.translate(err, { key: prefix, revision });
    }
  }

  async count(prefix: string): Promise<number> {
    const p = Buffer.from(prefix);
    try {
      const res = await this.call(
        'count',
        (o) => this.client.kv.range({ key: p.length ? p : ZERO_KEY, range_end: rangeEnd(p), count_only: true }, o),
        'always',
      );
      return Number(res.count);
    } catch (err) {
      throw await this.translate(err, { key: prefix });
    }
  }

  private txn(what: string, req: ITxnRequest, ctx: ErrorContext): Promise<ITxnResponse> {
    return this.call(what, (o) => this.client.kv.txn(req, o), 'unsent').catch(async (err: unknown) => {
      throw await this.translate(err, ctx);
    });
  }

  async create(key: string, value: Uint8Array, opts?: PutOptions): Promise<KeyValue> {
    this.check();
    if (!key) throw errors.invalid('empty key');
    const k = Buffer.from(key);
    const lease = opts?.lease ?? 0;
    const res = await this.txn(
      'create',
      {
        compare: [{ key: k, target: 'Create', result: 'Equal', create_revision: 0 }],
        success: [{ request_put: { key: k, value: toBuffer(value), lease } }],
        failure: [],
      },
      { key, lease },
    );
    if (!res.succeeded) throw errors.exists(key);
    const rev = Number(res.header.revision);
    return { key, value, createRevision: rev, modRevision: rev, version: 1, lease };
  }

  async update(key: string, value: Uint8Array, expectedModRevision: number, opts?: PutOptions): Promise<KeyValue> {
    this.check();
    if (!key) throw errors.notFound(key);
    const k = Buffer.from(key);
    const lease = opts?.lease ?? 0;
    const res = await this.txn(
      'update',
      {
        compare: [
          // A missing key compares as mod_revision 0, so also require that it exists.
          { key: k, target: 'Version', result: 'Greater', version: 0 },
          { key: k, target: 'Mod', result: 'Equal', mod_revision: expectedModRevision },
        ],
        success: [{ request_put: { key: k, value: toBuffer(value), lease, prev_kv: true } }],
        failure: [{ request_range: { key: k } }],
      },
      { key, lease },
    );
    if (!res.succeeded) throw this.missOrConflict(key, res);
    const prev = res.responses[0]?.response_put?.prev_kv;
    const rev = Number(res.header.revision);
    return {
      key,
      value,
      createRevision: prev ? Number(prev.create_revision) : rev,
      modRevision: rev,
      version: prev ? Number(prev.version) + 1 : 1,
      lease,
    };
  }

  async delete(key: string, expectedModRevision?: number): Promise<DeleteResult> {
    this.check();
    if (!key) throw errors.notFound(key);
    const k = Buffer.from(key);
    const compare: NonNullable<ITxnRequest['compare']> = [
      { key: k, target: 'Version', result: 'Greater', version: 0 },
    ];
    if (expectedModRevision !== undefined) {
      compare.push({ key: k, target: 'Mod', result: 'Equal', mod_revision: expectedModRevision });
    }
    const res = await this.txn(
      'delete',
      {
        compare,
        success: [{ request_delete_range: { key: k, prev_kv: true } }],
        failure: [{ request_range: { key: k } }],
      },
      { key },
    );
    if (!res.succeeded) throw this.missOrConflict(key, res);
    const prev = res.responses[0]?.response_delete_range?.prev_kvs?.[0];
    const revision = Number(res.header.revision);
    if (!prev) throw errors.notFound(key); // cannot happen: the compare saw the key
    return { prevKv: toKV(prev), revision };
  }

  private missOrConflict(key: string, res: ITxnResponse): StorageError {
    const current = res.responses[0]?.response_range?.kvs?.[0];
    return current ? errors.conflict(key, toKV(current)) : errors.notFound(key);
  }

  watch(key: string, opts: WatchOptions = {}): Watch {
    const w = new EtcdWatch(this, key, opts);
    if (this.closed) w.fail(errors.closed());
    else this.watches.add(w);
    return w;
  }

  forget(w: EtcdWatch): void {
    this.watches.delete(w);
  }

  async compact(revision: number): Promise<void> {
    const rev = checkRevision(revision);
    try {
      await this.call('compact', (o) => this.client.kv.compact({ revision: rev, physical: false }, o), 'unsent');
    } catch (err) {
      throw await this.translate(err, { revision: rev });
    }
    if (rev > this.compactedTo) this.compactedTo = rev;
  }

  async currentRevision(): Promise<number> {
    try {
      const res = await this.call(
        'currentRevision',
        (o) => this.client.kv.range({ key: ZERO_KEY, count_only: true }, o),
        'always',
      );
      return Number(res.header.revision);
    } catch (err) {
      throw await this.translate(err);
    }
  }

  /** A revision-check read at `revision` (used by watches to see whether their start is compacted). */
  async readAt(key: Buffer, revision: number): Promise<void> {
    try {
      await this.call(
        'watch start',
        (o) => this.client.kv.range({ key: key.length ? key : ZERO_KEY, revision, keys_only: true, limit: 1 }, o),
        'always',
      );
    } catch (err) {
      throw await this.translate(err, { revision });
    }
  }

  async grantLease(ttlSeconds: number): Promise<number> {
    this.check();
    if (!(ttlSeconds > 0) || !Number.isFinite(ttlSeconds)) {
      throw errors.invalid(`lease TTL must be positive, got ${ttlSeconds}`);
    }
    const ttl = Math.ceil(ttlSeconds);
    for (let attempt = 0; ; attempt++) {
      // Lease IDs are int64; choose one that survives the trip through a JS number.
      const id = randomLeaseId();
      try {
        const res = await this.call('grantLease', (o) => this.client.leaseClient.leaseGrant({ TTL: ttl, ID: id }, o), 'unsent');
        if (res.error) throw errors.unavailable(`etcd grantLease: ${res.error}`);
        return Number(res.ID);
      } catch (err) {
        if (attempt < 5 && message(err).includes('lease already exists')) continue;
        throw await this.translate(err);
      }
    }
  }

  async stats(): Promise<StoreStats> {
    try {
      const res = await this.call('stats', (o) => this.client.maintenance.status(o), 'always');
      return { dbSizeBytes: Number(res.dbSize) };
    } catch (err) {
      throw await this.translate(err);
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const w of [...this.watches]) w.fail(errors.closed());
    this.watches.clear();
    this.client.close();
  }
}

/**
 * One watch: an etcd watch stream, restarted from the revision after the last event taken in whenever it breaks
 * (etcd down, connection lost) or was stopped because the consumer fell behind.
 *
 * Events of one revision always arrive in one etcd response (fragmenting is off), so the watch only ever stops
 * between revisions, and "the revision after the last event taken in" is an exact resume point: nothing is
 * skipped and nothing is taken twice.
 */
class EtcdWatch implements Watch, AsyncIterator<WatchEvent> {
  private readonly request: { key: Buffer; range_end?: Buffer };
  private readonly explicitStart: boolean;
  /** Revision to start the next etcd watch at: one after the newest event taken in. */
  private nextRev: number;
  private buf: (WatchEvent | undefined)[] = [];
  private head = 0;
  private gen = 0;
  private stream: WatchStream | null = null;
  private streaming = false;
  private paused = false;
  private ended = false;
  private failure: StorageError | null = null;
  /** False until an explicit start revision is known not to be compacted. */
  private ready: boolean;
  /** The first etcd watch of a watch "from now", before it took in anything. */
  private firstStream = true;
  private backoffMs = 0;
  private retryTimer: NodeJS.Timeout | null = null;
  private waiters: (() => void)[] = [];
  /** Most undelivered events held at once (for tests and metrics). */
  highWater = 0;
  /** How many times the etcd watch was stopped because the consumer fell behind. */
  pauses = 0;
  /** The newest revision of an etcd progress notification on this watch (0: none yet). */
  private progressRev = 0;
  private lastProgressRequest = 0;

  constructor(
    private readonly kv: EtcdKV,
    key: string,
    opts: WatchOptions,
  ) {
    const k = Buffer.from(key);
    this.request = opts.prefix ? { key: k.length ? k : ZERO_KEY, range_end: rangeEnd(k) } : { key: k };
    const after = opts.afterRevision && opts.afterRevision > 0 ? Math.floor(opts.afterRevision) : 0;
    this.explicitStart = after > 0;
    // "From now": from the newest revision this client has seen. Any write made after this call gets a later
    // revision, so it cannot be missed, even though the etcd watch is created a round trip later.
    this.nextRev = (this.explicitStart ? after : kv.lastSeen) + 1;
    this.ready = !this.explicitStart;
    if (kv.isClosed) return;
    if (!opts.prefix && k.length === 0) {
      this.fail(errors.invalid('cannot watch the empty key'));
      return;
    }
    if (this.explicitStart) void this.checkStart(after);
    this.connect();
  }

  [Symbol.asyncIterator](): AsyncIterator<WatchEvent> {
    return this;
  }

  private get size(): number {
    return this.buf.length - this.head;
  }

  async next(): Promise<IteratorResult<WatchEvent>> {
    for (;;) {
      if (this.ended) return { value: undefined, done: true };
      if (this.ready && this.head < this.buf.length) {
        const ev = this.buf[this.head]!;
        this.buf[this.head++] = undefined;
        if (this.head >= 1024 && this.head * 2 >= this.buf.length) {
          this.buf = this.buf.slice(this.head);
          this.head = 0;
        }
        if (this.paused && !this.failure && this.size <= WATCH_RESUME_AT) {
          this.paused = false;
          this.connect();
        }
        return { value: ev, done: false };
      }
      if (this.failure) {
        this.ended = true;
        this.kv.forget(this);
        throw this.failure;
      }
      await new Promise<void>((r) => this.waiters.push(r));
    }
  }

  async return(): Promise<IteratorResult<WatchEvent>> {
    this.close();
    return { value: undefined, done: true };
  }

  /**
   * The watch's progress, once etcd has sent a progress notification (periodic with etcd's
   * --experimental-watch-progress-notify-interval, or answering the progress request this call makes at
   * most every PROGRESS_REQUEST_MIN_MS): every event up to it has been handed out. Known only while the
   * consumer waits in next() with nothing buffered: it has then taken in everything handed out.
   */
  progress(): number | undefined {
    if (!this.ready || this.ended || this.failure || this.size > 0 || this.waiters.length === 0) return undefined;
    const now = Date.now();
    if (this.stream && now - this.lastProgressRequest >= PROGRESS_REQUEST_MIN_MS) {
      this.lastProgressRequest = now;
      this.stream.write({ progress_request: {} });
    }
    return this.progressRev > 0 ? this.nextRev - 1 : undefined;
  }

  close(): void {
    if (this.ended) return;
    this.ended = true;
    this.stop();
    this.buf = [];
    this.head = 0;
    this.kv.forget(this);
    this.wake();
  }

  /** Fails the watch: the consumer gets the events already taken in, then `err`. */
  fail(err: StorageError): void {
    if (this.ended || this.failure) return;
    this.failure = err;
    if (!this.ready) {
      this.buf = [];
      this.head = 0;
    }
    this.stop();
    this.wake();
  }

  private wake(): void {
    const ws = this.waiters;
    this.waiters = [];
    for (const w of ws) w();
  }

  /** Ends the current etcd watch (if any) and any pending restart; later responses of it are ignored. */
  private stop(): void {
    this.gen++;
    closeStream(this.stream);
    this.stream = null;
    this.streaming = false;
    if (this.retryTimer) {
      clearTimeout(this.retryTimer);
      this.retryTimer = null;
    }
  }

  /** An explicit start revision older than the compaction fails the watch, as a read at it would. */
  private async checkStart(after: number): Promise<void> {
    let delay = WATCH_BACKOFF_MIN_MS;
    while (!this.ended && !this.failure) {
      try {
        await this.kv.readAt(this.request.key, after);
        break;
      } catch (err) {
        if (err instanceof StorageError && err.code === 'FutureRevision') break;
        if (err instanceof StorageError && err.code === 'Unavailable') {
          await sleep(delay);
          delay = Math.min(delay * 2, WATCH_BACKOFF_MAX_MS);
          continue;
        }
        this.fail(err instanceof StorageError ? err : errors.unavailable(message(err), err));
        return;
      }
    }
    this.ready = true;
    this.wake();
  }

  private connect(): void {
    if (this.ended || this.failure || this.paused || this.streaming || this.kv.isClosed) return;
    this.streaming = true;
    const gen = ++this.gen;
    this.kv.client.watchClient.watch().then(
      (stream) => {
        if (gen !== this.gen) {
          stream.on('error', () => undefined);
          closeStream(stream);
          return;
        }
        this.stream = stream;
        stream.on('data', (res) => this.onResponse(gen, res));
        stream.on('error', (err) => this.onBroken(gen, err));
        stream.on('end', () => this.onBroken(gen, new Error('etcd watch stream ended')));
        stream.write({
          create_request: {
            ...this.request,
            start_revision: this.nextRev,
            prev_kv: true,
            progress_notify: true,
          },
        });
      },
      (err: unknown) => this.onBroken(gen, err),
    );
  }

  /** The etcd watch broke: start another after a backoff, from the revision after the last event taken in. */
  private onBroken(gen: number, _err: unknown): void {
    if (gen !== this.gen) return;
    this.stop();
    this.firstStream = false;
    if (this.ended || this.failure || this.paused || this.kv.isClosed) return;
    const delay = this.backoffMs;
    this.backoffMs = Math.min(Math.max(WATCH_BACKOFF_MIN_MS, this.backoffMs * 2), WATCH_BACKOFF_MAX_MS);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.connect();
    }, delay);
    this.retryTimer.unref();
  }

  private onResponse(gen: number, res: IWatchResponse): void {
    if (gen !== this.gen) return;
    this.kv.observe(res.header);
    this.backoffMs = 0;
    if (res.canceled) {
      this.onCanceled(res);
      return;
    }
    if (res.created) return;
    if (res.events.length === 0) {
      // Progress notification (periodic, or answering a progress request), sent only to a watcher that is
      // caught up: nothing is pending up to its header.
      const rev = Number(res.header.revision);
      if (rev + 1 > this.nextRev) this.nextRev = rev + 1;
      if (rev > this.progressRev) this.progressRev = rev;
      return;
    }
    this.firstStream = false;
    const floor = this.nextRev;
    let last = 0;
    let full = false;
    for (const ev of res.events) {
      const rev = Number(ev.kv.mod_revision);
      if (rev < floor) continue; // already taken in before a restart
      if (rev !== last && this.size >= WATCH_MAX_BUFFERED) {
        full = true;
        break;
      }
      this.buf.push(toEvent(ev));
      last = rev;
    }
    if (last > 0) this.nextRev = last + 1;
    if (this.size > this.highWater) this.highWater = this.size;
    if (full || this.size >= WATCH_MAX_BUFFERED) {
      // The consumer fell behind: stop the etcd watch; next() restarts it from nextRev once it has caught up.
      this.paused = true;
      this.pauses++;
      this.stop();
    }
    this.wake();
  }

  private onCanceled(res: IWatchResponse): void {
    const compactRevision = Number(res.compact_revision || 0);
    // etcd's cancel response has no header revision (0); the newest one seen is close enough.
    const current = Number(res.header?.revision ?? 0) || this.kv.lastSeen;
    if (compactRevision > 0) {
      if (!this.explicitStart && this.firstStream) {
        // "From now" started from a revision someone else has compacted since: start at the compaction.
        this.firstStream = false;
        this.nextRev = compactRevision;
        this.stop();
        this.connect();
        return;
      }
      this.fail(errors.compacted(this.nextRev - 1, compactRevision, current));
      return;
    }
    const reason = res.cancel_reason || 'no reason given';
    if (res.created) this.fail(errors.invalid(`etcd refused the watch: ${reason}`));
    else this.fail(errors.unavailable(`etcd canceled the watch: ${reason}`));
  }
}
