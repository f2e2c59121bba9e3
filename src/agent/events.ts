// Events orchlet records (client-go's event recorder and correlator as kubelet uses them): core/v1
// Events with source.component "kubelet" and the node as host. Sending is asynchronous, through the
// event client's own rate limiter (--event-qps/--event-burst). An event that repeats one already
// sent (same object, type, reason and message) is not created again: the existing Event's count
// and lastTimestamp are patched, as the correlator does. At most 1000 events wait to be sent; more
// are dropped (the broadcaster's DropIfChannelFull).
import { ApiError, isNotFound, type ApiClient, type Json } from './client/client.js';
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
const MAX_REMEMBERED = 4096;

export class EventRecorder implements EventSink {
  private readonly queue: { ref: ObjectReference; type: EventType; reason: string; message: string; at: Date }[] = [];
  private readonly sent = new Map<string, Sent>();
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

  private async send(ref: ObjectReference, type: EventType, reason: string, message: string, at: Date): Promise<void> {
    const namespace = ref.namespace !== undefined && ref.namespace !== '' ? ref.namespace : 'default';
    const key = JSON.stringify([ref.kind, ref.namespace, ref.name, ref.uid, ref.fieldPath, type, reason, message]);
    const now = rfc3339(at);
    const prev = this.sent.get(key);
    if (prev) {
      prev.count++;
      try {
        await this.client.patch(`/api/v1/namespaces/${prev.namespace}/events/${prev.name}`, { count: prev.count, lastTimestamp: now, message }, 'strategic');
        return;
      } catch (err) {
        if (!isNotFound(err)) throw err;
        this.sent.delete(key);
      }
    }
    const name = `${ref.name}.${(BigInt(at.getTime()) * 1_000_000n + BigInt(this.seq++ % 1_000_000)).toString(16)}`;
    const involvedObject: Json = { kind: ref.kind, name: ref.name };
    for (const f of ['namespace', 'uid', 'apiVersion', 'resourceVersion', 'fieldPath'] as const) if (ref[f] !== undefined && ref[f] !== '') involvedObject[f] = ref[f];
    await this.client.create(`/api/v1/namespaces/${namespace}/events`, {
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
    });
    if (this.sent.size >= MAX_REMEMBERED) this.sent.delete(this.sent.keys().next().value!);
    this.sent.set(key, { name, namespace, count: 1, firstTimestamp: now });
  }
}
