/**
 * `orch`: the all-in-one local cluster for development (`npm start`). Starts orch-apiserver on the embedded
 * store under --home, with an admin token, and writes an admin kubeconfig to <home>/admin.kubeconfig.
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { stringify } from 'yaml';
import { parseServerOptions } from '../server/options.js';
import { createControlPlane } from '../server/controlplane.js';
import { flag, formatHelp, parseFlags, toOptions } from '../util/flags.js';
import { versionLine } from '../util/version.js';
import { fail, stopOnSignals } from './run.js';

const PROGRAM = 'orch';

const FLAGS = [
  flag('home', 'string', '.orch', 'Directory for the data, certificates, token file and admin kubeconfig.', { status: 'supported' }),
  flag('secure-port', 'int', '6443', 'Port of the API server (0 picks a free one).', { status: 'supported' }),
  flag('help', 'bool', undefined, 'Print help.', { status: 'supported', short: 'h' }),
  flag('version', 'bool', undefined, 'Print version and quit.', { status: 'supported' }),
] as const;

/** The admin token from <home>/tokens.csv, created with a random token on first start. */
async function adminToken(tokenFile: string): Promise<string> {
  if (existsSync(tokenFile)) {
    const line = (await readFile(tokenFile, 'utf8')).split('\n').find((l) => l.includes(',admin,'));
    if (line) return line.split(',')[0]!;
  }
  const token = randomBytes(24).toString('hex');
  await writeFile(tokenFile, `${token},admin,admin,"system:masters"\n`, { mode: 0o600 });
  return token;
}

function kubeconfig(server: string, caCert: string, token: string): string {
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'orch', cluster: { server, 'certificate-authority-data': Buffer.from(caCert).toString('base64') } }],
    users: [{ name: 'admin', user: { token } }],
    contexts: [{ name: 'orch', context: { cluster: 'orch', user: 'admin' } }],
    'current-context': 'orch',
  });
}

export async function main(argv: string[]): Promise<void> {
  let o;
  try {
    o = toOptions(FLAGS, parseFlags(argv, FLAGS, { program: PROGRAM }));
  } catch (err) {
    fail(PROGRAM, err);
  }
  if (o.help) {
    process.stdout.write(formatHelp(PROGRAM, 'An all-in-one local orch cluster for development.', FLAGS));
    return;
  }
  if (o.version) {
    process.stdout.write(versionLine(PROGRAM) + '\n');
    return;
  }
  try {
    const home = resolve(o.home);
    await mkdir(home, { recursive: true, mode: 0o700 });
    await chmod(home, 0o700);
    const tokenFile = join(home, 'tokens.csv');
    const token = await adminToken(tokenFile);
    const options = parseServerOptions([
      `--secure-port=${o.securePort || 6443}`,
      '--bind-address=127.0.0.1',
      `--data-dir=${join(home, 'data')}`,
      `--cert-dir=${join(home, 'certs')}`,
      `--token-auth-file=${tokenFile}`,
    ]);
    const cp = await createControlPlane(options, { securePort: o.securePort });
    await cp.start();
    const url = `https://127.0.0.1:${cp.server.port}`;
    const kubeconfigPath = join(home, 'admin.kubeconfig');
    await writeFile(kubeconfigPath, kubeconfig(url, cp.server.caCert, token), { mode: 0o600 });
    process.stderr.write(
      `${PROGRAM}: API server serving on ${url}\n` +
        `${PROGRAM}: admin kubeconfig written to ${kubeconfigPath}\n` +
        `${PROGRAM}:   export KUBECONFIG=${kubeconfigPath}\n` +
        `${PROGRAM}: no node agent is started: orchlet cannot join a server yet (it runs static pods standalone, see the README).\n`,
    );
    stopOnSignals(PROGRAM, () => cp.stop());
  } catch (err) {
    fail(PROGRAM, err);
  }
}
