// Whether the container runtime is up (kubelet's runtimeState and updateRuntimeUp), for the
// node's Ready condition.
//
// Every 5 s the runtime's Status is asked for. A call that fails leaves the state as it was; an
// answer whose RuntimeReady condition is missing or false is a runtime error, a missing or false
// NetworkReady a network error; an answer with RuntimeReady true records the time of the sync.
// errors() is what keeps the node NotReady, in kubelet's words:
//   - "container runtime status check may not have completed yet" before the first good answer;
//   - "container runtime is down" when the last good answer is older than 30 s
//     (maxWaitForContainerRuntime);
//   - "PLEG is not healthy: pleg was last seen active 3m0.5s ago; threshold is 3m0s" from the
//     health checks (a CRI runtime's relist that has not succeeded for 3 minutes);
//   - "container runtime not ready: RuntimeReady=false reason:... message:..." and
//     "container runtime network not ready: NetworkReady=false reason:... message:...".

export interface RuntimeConditionLike {
  type: string;
  status: boolean;
  reason?: string;
  message?: string;
}

export interface RuntimeStateOptions {
  /** The runtime's conditions; rejects when the runtime cannot be reached. */
  status: () => Promise<RuntimeConditionLike[]>;
  /** How often the runtime is asked (kubelet: 5 s). */
  periodMs?: number;
  /** How long without a good answer until the runtime is down (kubelet: 30 s). */
  downAfterMs?: number;
  /** kubelet's runtime health checks (the PLEG): each returns why it is unhealthy, or undefined. */
  healthChecks?: { name: string; check: () => string | undefined }[];
  /** Called after each check whose outcome differs from the one before. */
  onChange?: () => void;
  log?: (level: 'info' | 'error', message: string) => void;
  now?: () => number;
}

function conditionText(c: RuntimeConditionLike | undefined, type: string): string {
  if (!c) return `<nil> (no ${type} condition)`;
  return `${c.type}=${String(c.status)} reason:${c.reason ?? ''} message:${c.message ?? ''}`;
}

export class RuntimeState {
  private lastSync = 0;
  private runtimeError: string | undefined;
  private networkError: string | undefined;
  private timer: NodeJS.Timeout | undefined;
  private last = '';
  private checking = false;
  private readonly now: () => number;

  constructor(private readonly o: RuntimeStateOptions) {
    this.now = o.now ?? Date.now;
  }

  /** Checks now, then every period. */
  async start(): Promise<void> {
    await this.check();
    this.timer = setInterval(() => void this.check(), this.o.periodMs ?? 5000);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** One check of the runtime's status (kubelet's updateRuntimeUp). */
  async check(): Promise<void> {
    if (this.checking) return;
    this.checking = true;
    try {
      let conditions: RuntimeConditionLike[] | undefined;
      try {
        conditions = await this.o.status();
      } catch (err) {
        this.o.log?.('error', `container runtime sanity check failed: ${err instanceof Error ? err.message : String(err)}`);
      }
      if (conditions) {
        const network = conditions.find((c) => c.type === 'NetworkReady');
        this.networkError = network?.status === true ? undefined : `container runtime network not ready: ${conditionText(network, 'NetworkReady')}`;
        const runtime = conditions.find((c) => c.type === 'RuntimeReady');
        if (runtime?.status === true) {
          this.runtimeError = undefined;
          this.lastSync = this.now();
        } else {
          this.runtimeError = `container runtime not ready: ${conditionText(runtime, 'RuntimeReady')}`;
        }
      }
    } finally {
      this.checking = false;
    }
    const now = this.errors().join(', ');
    if (now !== this.last) {
      this.last = now;
      if (now !== '') this.o.log?.('error', `container runtime: ${now}`);
      else this.o.log?.('info', 'container runtime is ready');
      this.o.onChange?.();
    }
  }

  /** Why the node is not ready because of its runtime (empty: the runtime is fine). */
  errors(): string[] {
    const out: string[] = [];
    if (this.lastSync === 0) out.push('container runtime status check may not have completed yet');
    else if (this.now() - this.lastSync >= (this.o.downAfterMs ?? 30_000)) out.push('container runtime is down');
    for (const hc of this.o.healthChecks ?? []) {
      const err = hc.check();
      if (err !== undefined) out.push(`${hc.name} is not healthy: ${err}`);
    }
    if (this.runtimeError !== undefined) out.push(this.runtimeError);
    if (this.networkError !== undefined) out.push(this.networkError);
    return out;
  }
}
