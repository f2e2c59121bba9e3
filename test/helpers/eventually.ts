import assert from 'node:assert/strict';

export interface EventuallyOptions {
  /** How long to keep trying (default 10 s). */
  timeoutMs?: number;
  /** The pause between tries (default 50 ms). */
  intervalMs?: number;
  /** Treat a probe that throws as "not yet" (the last error is reported on timeout). */
  retryErrors?: boolean;
}

/**
 * Polls `probe` until it returns something other than undefined or false, and returns that. On timeout the
 * test fails naming `what` (and the probe's last error when errors are retried).
 */
export async function eventually<T>(
  what: string | (() => string),
  probe: () => T | undefined | false | Promise<T | undefined | false>,
  opts: EventuallyOptions = {},
): Promise<T> {
  const deadline = Date.now() + (opts.timeoutMs ?? 10_000);
  let lastError: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined && v !== false) return v;
    } catch (err) {
      if (!opts.retryErrors) throw err;
      lastError = err;
    }
    if (Date.now() > deadline) {
      const name = typeof what === 'string' ? what : what();
      const cause = lastError === undefined ? '' : ` (last error: ${lastError instanceof Error ? lastError.message : JSON.stringify(lastError)})`;
      assert.fail(`timed out after ${opts.timeoutMs ?? 10_000} ms waiting for ${name}${cause}`);
    }
    await new Promise((r) => setTimeout(r, opts.intervalMs ?? 50));
  }
}
