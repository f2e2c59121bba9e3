// Events orchlet records (client-go's event recorder and correlator as kubelet uses them): core/v1
// Events with source.component "kubelet" and the node as host. Sending is asynchronous, through the
// event client's own rate limiter (--event-qps/--event-burst: events wait for it, none is dropped by
// it). Before sending, each event goes through client-go 1.23's EventCorrelator, in order:
//   - aggregation: from the 10th event of one object, type and reason with distinct messages within
//     10 minutes, one event "(combined from similar events): <message>" stands for them;
//   - deduplication: an event that repeats one already sent (same object and field path, type, reason
//     and message) is not created again: the existing Event's count and lastTimestamp are patched;
//   - the spam filter: a token bucket per involved object (25 events, then one every 5 minutes); an
//     event over that budget is dropped.
// At most 1000 events wait to be sent; more are dropped (the broadcaster's DropIfChannelFull).
import { ApiError, DISCARD_ANSWER, isNotFound, type ApiClient, type Json } from './client/client.js';
import { rfc3339 } from './time.js';

export interface ObjectReference {
  kind: string;
  name: string;
  namespace?: string;
  uid?: string;
  apiVersion?: string;
  resourceVersion?: string;
  fieldPath?: string;
}

export type EventType = 'Normal' | 'Warning';

export interface EventSink {
  event(ref: ObjectReference, type: EventType, reason: string, message: string): void;
}

/** Records nothing (standalone mode). */
export const NO_EVENTS: EventSink = { event: () => {} };

interface Sent {
  name: string;
  namespace: string;
  count: number;
  firstTimestamp: string;
}

const MAX_QUEUE = 1000;
/** The correlator's LRU caches (maxLruCacheEntries). */
const MAX_REMEMBERED = 4096;
/** defaultAggregateMaxEvents, defaultAggregateIntervalInSeconds. */
const AGGREGATE_MAX_EVENTS = 10;
const AGGREGATE_INTERVAL_MS = 600_000;
/** defaultSpamBurst, defaultSpamQPS (one event per 5 minutes). */
const SPAM_BURST = 25;
const SPAM_QPS = 1 / 300;

/** A Map used as an LRU cache of at most MAX_REMEMBERED entries (get refreshes). */
class Lru<V> {
  private readonly m = new Map<string, V>();
  get(k: string): V | undefined {
    const v = this.m.get(k);
    if (v !== undefined) {
      this.m.delete(k);
      this.m.set(k, v);
    }
    return v;
  }
  set(k: string, v: V): void {
    this.m.delete(k);
    if (this.m.size >= MAX_REMEMBERED) this.m.delete(this.m.keys().next().value!);
    this.m.set(k, v);
  }
  delete(k: string): void {
    this.m.delete(k);
  }
}

/** One correlated event: what to send, and under which key its Event is remembered. */
interface Correlated {
  key: string;
  message: string;
  /** The Event already created under `key` (a patch), or none (a create). */
  prev?: Sent;
}

export class EventRecorder implements EventSink {
  private readonly queue: { ref: ObjectReference; type: EventType; reason: string; message: string; at: Date }[] = [];
  private readonly sent = new Lru<Sent>();
  private readonly aggregates = new Lru<{ messages: Set<string>; last: number }>();
  private readonly spam = new Lru<{ tokens: number; last: number }>();
  private draining = false;
  /** Until when sending is off because the server has no Event kind (ms since the epoch). */
  private disabledUntil = 0;
  private seq = 0;

  constructor(
    private readonly client: ApiClient,
    private readonly host: string,
    private readonly log: (message: string) => void = () => {},
  ) {}

  event(ref: ObjectReference, type: EventType, reason: string, message: string): void {
    if (Date.now() < this.disabledUntil || this.queue.length >= MAX_QUEUE) return;
    this.queue.push({ ref, type, reason, message, at: new Date() });
    if (!this.draining) void this.drain();
  }

  /** Resolves when every queued event was sent or dropped. */
  async flush(): Promise<void> {
    while (this.draining || this.queue.length > 0) await new Promise((r) => setTimeout(r, 20));
  }

  private async drain(): Promise<void> {
    this.draining = true;
    try {
      for (let e = this.queue.shift(); e !== undefined; e = this.queue.shift()) {
        try {
          await this.send(e.ref, e.type, e.reason, e.message, e.at);
        } catch (err) {
          if (err instanceof ApiError && err.code === 404 && !(err.status?.details as Json | undefined)?.name) {
            // The server has no Event kind: drop events for a minute, then try again.
            this.disabledUntil = Date.now() + 60_000;
            this.queue.length = 0;
            this.log(`events are not recorded for a minute: the server does not serve events (${err.message})`);
          } else this.log(`event ${e.reason} for ${e.ref.kind} ${e.ref.name} not recorded: ${err instanceof Error ? err.message : String(err)}`);
        }
      }
    } finally {
      this.draining = false;
    }
  }

  /** EventCorrelate: aggregation, then deduplication, then the spam filter (undefined: dropped). */
  private correlate(ref: ObjectReference, type: EventType, reason: string, message: string, at: number): Correlated | undefined {
    const object = [ref.kind, ref.namespace ?? '', ref.name, ref.uid ?? '', ref.apiVersion ?? ''];
    let key = JSON.stringify([...object, ref.fieldPath ?? '', type, reason, message]);
    // EventAggregate (EventAggregatorByReasonFunc: the object, type and reason; the message is the local key)
    const aggregateKey = JSON.stringify([...object, type, reason]);
    let record = this.aggregates.get(aggregateKey);
    if (!record || at - record.last > AGGREGATE_INTERVAL_MS) record = { messages: new Set(), last: at };
    record.messages.add(message);
    record.last = at;
    this.aggregates.set(aggregateKey, record);
    if (record.messages.size >= AGGREGATE_MAX_EVENTS) {
      record.messages.delete(record.messages.values().next().value!);
      key = aggregateKey;
      message = `(combined from similar events): ${message}`;
    }
    // eventObserve: a repeat patches the Event created first (its count grows even when the filter drops it)
    const prev = this.sent.get(key);
    if (prev) prev.count++;
    // EventSourceObjectSpamFilter (getSpamKey: the source, which is always ours, and the object)
    const spamKey = JSON.stringify(object);
    const bucket = this.spam.get(spamKey) ?? { tokens: SPAM_BURST, last: at };
    bucket.tokens = Math.min(SPAM_BURST, bucket.tokens + ((at - bucket.last) / 1000) * SPAM_QPS);
    bucket.last = at;
    const allowed = bucket.tokens >= 1;
    if (allowed) bucket.tokens -= 1;
    this.spam.set(spamKey, bucket);
    if (!allowed) return undefined;
    return prev ? { key, message, prev } : { key, message };
  }

  private async send(ref: ObjectReference, type: EventType, reason: string, original: string, at: Date): Promise<void> {
    const namespace = ref.namespace !== undefined && ref.namespace !== '' ? ref.namespace : 'default';
    const c = this.correlate(ref, type, reason, original, at.getTime());
    if (!c) return;
    const { key, message, prev } = c;
    const now = rfc3339(at);
    if (prev) {
      try {
        // (the answers are not read, so not decoded either)
        await this.client.patch(`/api/v1/namespaces/${prev.namespace}/events/${prev.name}`, { count: prev.count, lastTimestamp: now, message }, 'strategic', DISCARD_ANSWER);
        return;
      } catch (err) {
        if (!isNotFound(err)) throw err;
        this.sent.delete(key);
      }
    }
    const name = `${ref.name}.${(BigInt(at.getTime()) * 1_000_000n + BigInt(this.seq++ % 1_000_000)).toString(16)}`;
    const involvedObject: Json = { kind: ref.kind, name: ref.name };
    for (const f of ['namespace', 'uid', 'apiVersion', 'resourceVersion', 'fieldPath'] as const) if (ref[f] !== undefined && ref[f] !== '') involvedObject[f] = ref[f];
    const event = {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name, namespace },
      involvedObject,
      reason,
      message,
      source: { component: 'kubelet', host: this.host },
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
      type,
      eventTime: null,
      reportingComponent: '',
      reportingInstance: '',
    };
    await this.client.create(`/api/v1/namespaces/${namespace}/events`, event, DISCARD_ANSWER);
    this.sent.set(key, { name, namespace, count: 1, firstTimestamp: now });
  }
}
