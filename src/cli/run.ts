/**
 * Shared start-up of the programs: option errors end the process with status 1 and a message naming the
 * option; SIGTERM and SIGINT stop the program gracefully, a second signal exits at once.
 */
import { FlagError } from '../util/flags.js';

export function fail(program: string, err: unknown): never {
  if (err instanceof FlagError) {
    process.stderr.write(`${program}: ${err.message}\nRun '${program} --help' for the options.\n`);
  } else {
    process.stderr.write(`${program}: ${err instanceof Error ? err.message : String(err)}\n`);
  }
  process.exit(1);
}

/** Calls `stop` on the first SIGTERM/SIGINT; exits when it resolves, or at once on a second signal. */
export function stopOnSignals(program: string, stop: () => Promise<void>): void {
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) process.exit(1);
    stopping = true;
    process.stderr.write(`${program}: ${signal} received, shutting down\n`);
    stop().then(
      () => process.exit(0),
      (err: unknown) => fail(program, err),
    );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}
