import { parseServerOptions, serverHelp } from '../server/options.js';
import { createControlPlane, loggerFrom } from '../server/controlplane.js';
import type { Logger } from '../util/log.js';
import { logFlags } from './flaglog.js';
import { versionLine } from '../util/version.js';
import { fail, stopOnSignals } from './run.js';

const PROGRAM = 'orch-apiserver';

export async function main(argv: string[]): Promise<void> {
  let options;
  try {
    options = parseServerOptions(argv);
  } catch (err) {
    fail(PROGRAM, err);
  }
  if (options.help) {
    process.stdout.write(serverHelp());
    return;
  }
  if (options.version) {
    process.stdout.write(versionLine(PROGRAM) + '\n');
    return;
  }
  let logger: Logger | undefined;
  try {
    logger = loggerFrom(options);
    logFlags(logger, options);
    const cp = await createControlPlane(options, { logger });
    // The server listens before its post-start hooks have run: a signal then stops it as it would later (the
    // stop exits the process), and what the stop makes the hooks fail with is not an error of the start.
    let stopping = false;
    stopOnSignals(PROGRAM, () => {
      stopping = true;
      return cp.stop();
    });
    try {
      await cp.start();
    } catch (err) {
      if (stopping) return;
      throw err;
    }
    if (stopping) return;
    process.stderr.write(`${PROGRAM}: serving on ${cp.server.url}\n`);
  } catch (err) {
    logger?.flush(); // what was logged before the failure goes out before the process exits
    fail(PROGRAM, err);
  }
}
