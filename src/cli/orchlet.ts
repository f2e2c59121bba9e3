import { Agent, nodeNameOf } from '../agent/agent.js';
import { agentHelp, parseAgentOptions, type AgentOptions } from '../agent/options.js';
import { versionLine } from '../util/version.js';
import { fail, stopOnSignals } from './run.js';

const PROGRAM = 'orchlet';

/**
 * Options the option table accepts (status 'supported') whose behaviour is not built yet: refused
 * with a clear message rather than silently ignored. Standalone mode uses --pod-manifest-path,
 * --file-check-frequency, --root-dir, --sync-frequency, --hostname-override and -v.
 */
const NOT_YET: Record<string, string> = {
  orchconfig: 'API-server mode is not implemented yet (run standalone with --pod-manifest-path)',
  config: 'configuration files are not implemented yet',
  'manifest-url': 'the URL pod source is not implemented yet',
  'manifest-url-header': 'the URL pod source is not implemented yet',
  'container-runtime-endpoint': 'only the built-in process runtime exists so far',
};

function checkImplemented(o: AgentOptions): void {
  for (const [name, why] of Object.entries(NOT_YET)) {
    if (o.explicitFlags.has(name)) throw new Error(`--${name}: ${why}`);
  }
}

export async function main(argv: string[]): Promise<void> {
  let options: AgentOptions;
  try {
    options = parseAgentOptions(argv);
    checkImplemented(options);
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
  const log = (level: 'info' | 'error', message: string): void => {
    process.stderr.write(`${PROGRAM}: ${level === 'error' ? 'E' : 'I'} ${message}\n`);
  };
  const agent = new Agent({
    nodeName: nodeNameOf(options.hostnameOverride),
    rootDir: options.rootDir,
    ...(options.podManifestPath !== undefined ? { podManifestPath: options.podManifestPath } : {}),
    fileCheckFrequencyMs: options.fileCheckFrequency,
    syncFrequencyMs: options.syncFrequency,
    log,
  });
  stopOnSignals(PROGRAM, () => agent.stop());
  try {
    await agent.start();
  } catch (err) {
    fail(PROGRAM, err);
  }
  if (options.podManifestPath === undefined) {
    log('info', 'no --pod-manifest-path given and API-server mode is not implemented yet: no pods will run');
  }
  log('info', `running standalone as node ${nodeNameOf(options.hostnameOverride)}, root dir ${options.rootDir}`);
}
