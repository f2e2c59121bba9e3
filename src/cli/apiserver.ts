import { parseServerOptions, serverHelp } from '../server/options.js';
import { createControlPlane } from '../server/controlplane.js';
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
  try {
    const cp = await createControlPlane(options);
    await cp.start();
    process.stderr.write(`${PROGRAM}: serving on ${cp.server.url}\n`);
    stopOnSignals(PROGRAM, () => cp.stop());
  } catch (err) {
    fail(PROGRAM, err);
  }
}
