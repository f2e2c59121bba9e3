import { agentHelp, parseAgentOptions } from '../agent/options.js';
import { versionLine } from '../util/version.js';
import { fail } from './run.js';

const PROGRAM = 'orchlet';

export async function main(argv: string[]): Promise<void> {
  let options;
  try {
    options = parseAgentOptions(argv);
  } catch (err) {
    fail(PROGRAM, err);
  }
  if (options.help) {
    process.stdout.write(agentHelp());
    return;
  }
  if (options.version) {
    process.stdout.write(versionLine(PROGRAM) + '\n');
    return;
  }
  fail(PROGRAM, new Error('running the node agent is not implemented yet (only its options are parsed so far)'));
}
