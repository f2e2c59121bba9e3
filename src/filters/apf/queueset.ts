/**
 * One priority level's dispatcher, after Kubernetes 1.23's fair-queuing queueset
 * (apiserver/pkg/util/flowcontrol/fairqueuing/queueset): at most `limit` requests execute at once; a
 * request that cannot start at once is rejected (limitResponse Reject) or put into one of `queues` queues,
 * chosen by shuffle sharding its flow's hash into a hand of `handSize` queues and taking the shortest (by
 * waiting plus executing requests). A full queue (queueLengthLimit) rejects; a request waiting longer than
 * the wait limit is rejected. Free seats go to the non-empty queue with the smallest virtual start time,
 * which advances by the seats of each dispatched request (Kubernetes also measures execution times; every
 * request counts as unit time here).
 *
 * With queues, every request is counted in the queue its flow shuffle-shards to, also one that starts at once
 * (Kubernetes enqueues and dispatches every request of a queuing level), so each queue's executing requests
 * and seats in use are known (the debug dump_queues).
 *
 * Requests are as wide as their work estimate: a request needs max(initial, final) seats free to start
 * (one wider than the whole limit starts only when no seat is in use, as 1.23's canAccommodateSeats), and
 * the head of the fairest queue that does not fit stops dispatching, so a wide list holds back the narrow
 * requests behind it. Its seats are given back when it finishes, or after its additional latency.
 */

export interface QueuingConfig {
  queues: number;
  handSize: number;
  queueLengthLimit: number;
}

export type RejectReason = 'concurrency-limit' | 'queue-full' | 'time-out' | 'cancelled';

/** What the debug dumps show of a waiting request (dump_requests, and the sums of dump_queues). */
export interface QueuedRequest {
  flowSchema: string;
  /** The flow distinguisher ('' with less than two queues, as Kubernetes computes it only then). */
  distinguisher: string;
  /** When it arrived (ms since the epoch). */
  arrivedMs: number;
  initialSeats: number;
  finalSeats: number;
  additionalLatencyMs: number;
  userName: string;
  verb: string;
  path: string;
  namespace: string;
  name: string;
  apiGroup: string;
  apiVersion: string;
  resource: string;
  subresource: string;
}

/** One queue as the debug dumps show it. */
export interface QueueDump {
  waiting: QueuedRequest[];
  executing: number;
  seatsInUse: number;
  /** The queue's virtual start, in seats dispatched (each counted as Kubernetes' estimated service time). */
  virtualStart: number;
}

interface Waiter {
  queue: Queue;
  seats: number;
  request: QueuedRequest | undefined;
  settle(granted: boolean, reason?: RejectReason): void;
}

class Queue {
  readonly waiting: Waiter[] = [];
  head = 0;
  executing = 0;
  seatsInUse = 0;
  virtualStart = 0;
  get length(): number {
    return this.waiting.length - this.head;
  }
  shift(): Waiter | undefined {
    const w = this.waiting[this.head];
    if (w === undefined) return undefined;
    this.waiting[this.head++] = undefined as unknown as Waiter;
    if (this.head > 64 && this.head * 2 > this.waiting.length) {
      this.waiting.splice(0, this.head);
      this.head = 0;
    }
    return w;
  }
  remove(w: Waiter): boolean {
    const i = this.waiting.indexOf(w, this.head);
    if (i < 0) return false;
    this.waiting.splice(i, 1);
    return true;
  }
}

/** What a granted request holds: give it back exactly once with release() (its seats after `afterMs`). */
export interface Seat {
  readonly seats: number;
  release(afterMs?: number): void;
}

/**
 * Deals a hand of `handSize` distinct queue indexes out of `deck` from `hash` (< 2^53): mixed-radix digits
 * of the hash pick among the cards not yet dealt (the shuffle-sharding dealer).
 */
export function dealHand(hash: number, deck: number, handSize: number): number[] {
  const digits: number[] = [];
  let h = hash;
  for (let i = 0; i < handSize; i++) {
    const base = deck - i;
    digits.push(h % base);
    h = Math.floor(h / base);
  }
  const hand: number[] = [];
  for (let i = 0; i < handSize; i++) {
    let card = digits[i]!;
    // Skip over the cards dealt before, in increasing order, so that the hand has no duplicates.
    const dealt = hand.slice().sort((a, b) => a - b);
    for (const d of dealt) if (card >= d) card++;
    hand.push(card);
  }
  return hand;
}

export class QueueSet {
  /** Requests executing. */
  executing = 0;
  /** Seats held: by executing requests, and by finished ones during their additional latency. */
  seatsInUse = 0;
  waiting = 0;
  private readonly timers = new Set<NodeJS.Timeout>();
  private queues: Queue[] = [];
  private queuing: QueuingConfig | undefined;
  private virtualTime = 0;
  private robin = 0;

  constructor(
    public limit: number,
    queuing: QueuingConfig | undefined,
    private readonly waitLimitMs: number,
  ) {
    this.configure(limit, queuing);
  }

  /** The number of queues (0 for a level that rejects instead of queuing). */
  get queueCount(): number {
    return this.queues.length;
  }

  /** Each queue, in index order, with its waiting requests in order (for /debug/api_priority_and_fairness). */
  dumpQueues(): QueueDump[] {
    return this.queues.map((q) => ({
      waiting: q.waiting.slice(q.head).flatMap((w) => (w.request ? [w.request] : [])),
      executing: q.executing,
      seatsInUse: q.seatsInUse,
      virtualStart: q.virtualStart,
    }));
  }

  /** Queues with a request waiting (the dump's ActiveQueues). */
  activeQueues(): number {
    return this.queues.reduce((n, q) => n + (q.length > 0 ? 1 : 0), 0);
  }

  /** Applies a new limit and queuing configuration; waiting requests are kept (re-dealt when the queues change). */
  configure(limit: number, queuing: QueuingConfig | undefined): void {
    this.limit = limit;
    const old = this.queuing;
    this.queuing = queuing;
    if (!queuing) {
      for (const q of this.queues) for (let w = q.shift(); w; w = q.shift()) w.settle(false, 'concurrency-limit');
      this.queues = [];
      this.waiting = 0;
    } else if (!old || old.queues !== queuing.queues) {
      const moved = this.queues.flatMap((q) => q.waiting.slice(q.head));
      this.queues = Array.from({ length: queuing.queues }, () => new Queue());
      moved.forEach((w, i) => {
        const q = this.queues[i % this.queues.length]!;
        w.queue = q;
        q.waiting.push(w);
      });
    }
    this.dispatch();
  }

  /**
   * A seat at once, a promise of one (queued; false when rejected later), or the reason of an immediate
   * rejection. `flowHash` is asked only when the level has queues; `whenQueued` only when the request has
   * to queue, given the function that withdraws the waiting request (for a client that goes away), and
   * `describe` then too, for the debug dumps.
   */
  acquire(
    flowHash: () => number,
    whenQueued?: (cancel: () => void) => void,
    seats = 1,
    describe?: () => QueuedRequest,
  ): Seat | Promise<Seat | RejectReason> | RejectReason {
    const cfg = this.queuing;
    if (!cfg) return this.fits(seats) ? this.seat(undefined, seats) : 'concurrency-limit';
    const queue = this.chooseQueue(flowHash(), cfg);
    if (this.waiting === 0 && this.fits(seats)) return this.seat(queue, seats);
    if (queue.length >= cfg.queueLengthLimit) return 'queue-full';
    return new Promise((resolve) => {
      const waiter: Waiter = {
        queue,
        seats,
        request: describe?.(),
        settle: (granted, reason) => {
          clearTimeout(timer);
          resolve(granted ? this.seat(waiter.queue, seats) : (reason ?? 'time-out'));
        },
      };
      if (queue.length === 0) queue.virtualStart = Math.max(queue.virtualStart, this.virtualTime);
      queue.waiting.push(waiter);
      this.waiting++;
      const timer = setTimeout(() => {
        if (this.withdraw(waiter)) waiter.settle(false, 'time-out');
      }, this.waitLimitMs);
      whenQueued?.(() => {
        if (this.withdraw(waiter)) waiter.settle(false, 'cancelled');
      });
    });
  }

  private withdraw(w: Waiter): boolean {
    if (!w.queue.remove(w)) return false;
    this.waiting--;
    return true;
  }

  /** Whether `seats` more can start now (a request wider than the limit: only when no seat is in use). */
  private fits(seats: number): boolean {
    return seats > this.limit ? this.seatsInUse === 0 : this.seatsInUse + seats <= this.limit;
  }

  /** Takes the seats of a starting request. */
  private seat(queue: Queue | undefined, seats: number): Seat {
    let held = true;
    this.executing++;
    this.seatsInUse += seats;
    if (queue) {
      queue.executing++;
      queue.seatsInUse += seats;
    }
    const giveBack = () => {
      this.seatsInUse -= seats;
      if (queue) queue.seatsInUse -= seats;
      this.dispatch();
    };
    return {
      seats,
      release: (afterMs = 0) => {
        if (!held) return;
        held = false;
        this.executing--;
        if (queue) queue.executing--;
        if (afterMs <= 0) return giveBack();
        const t = setTimeout(() => {
          this.timers.delete(t);
          giveBack();
        }, afterMs);
        t.unref();
        this.timers.add(t);
      },
    };
  }

  private chooseQueue(hash: number, cfg: QueuingConfig): Queue {
    const hand = dealHand(hash, this.queues.length, Math.min(cfg.handSize, this.queues.length));
    let best = this.queues[hand[0]!]!;
    for (const i of hand) {
      const q = this.queues[i]!;
      if (q.length + q.executing < best.length + best.executing) best = q;
    }
    return best;
  }

  /** Starts waiting requests while seats are free, fairest queue first. */
  private dispatch(): void {
    while (this.waiting > 0) {
      let best: Queue | undefined;
      const n = this.queues.length;
      for (let k = 0; k < n; k++) {
        const q = this.queues[(this.robin + k) % n]!;
        if (q.length > 0 && (!best || q.virtualStart < best.virtualStart)) best = q;
      }
      if (!best) return;
      const head = best.waiting[best.head]!;
      if (!this.fits(head.seats)) return;
      this.robin = (this.queues.indexOf(best) + 1) % n;
      const w = best.shift()!;
      this.waiting--;
      this.virtualTime = Math.max(this.virtualTime, best.virtualStart);
      best.virtualStart += w.seats;
      w.settle(true);
    }
  }
}
