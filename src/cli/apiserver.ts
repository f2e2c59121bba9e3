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
    await cp.start();
    process.stderr.write(`${PROGRAM}: serving on ${cp.server.url}\n`);
    stopOnSignals(PROGRAM, () => cp.stop());
  } catch (err) {
    logger?.flush(); // what was logged before the failure goes out before the process exits
    fail(PROGRAM, err);
  }
}
