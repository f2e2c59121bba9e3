// Client-side rate limiting (client-go's flowcontrol token bucket): `qps` tokens a second up to
// `burst`; every request takes one token, waiting in arrival order when none is left. A limiter
// with qps <= 0 never waits (kubelet's heartbeat client has no limit).

export class TokenBucket {
  private tokens: number;
  private last: number;
  private readonly waiters: (() => void)[] = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(
    readonly qps: number,
    readonly burst: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.tokens = Math.max(1, burst);
    this.last = now();
  }

  /** Resolves when the caller may send one request, with the milliseconds it waited (0 without waiting). */
  take(): Promise<number> {
    if (this.qps <= 0) return Promise.resolve(0);
    this.refill();
    if (this.waiters.length === 0 && this.tokens >= 1) {
      this.tokens -= 1;
      return Promise.resolve(0);
    }
    const since = this.now();
    return new Promise((resolve) => {
      this.waiters.push(() => resolve(this.now() - since));
      this.schedule();
    });
  }

  /** Requests waiting for a token now. */
  get waiting(): number {
    return this.waiters.length;
  }

  private refill(): void {
    const now = this.now();
    this.tokens = Math.min(Math.max(1, this.burst), this.tokens + ((now - this.last) / 1000) * this.qps);
    this.last = now;
  }

  private schedule(): void {
    if (this.timer !== undefined) return;
    const wait = Math.max(0, ((1 - this.tokens) / this.qps) * 1000);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.refill();
      while (this.waiters.length > 0 && this.tokens >= 1) {
        this.tokens -= 1;
        this.waiters.shift()!();
      }
      if (this.waiters.length > 0) this.schedule();
    }, wait);
  }
}
