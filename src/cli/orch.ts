/**
 * `orch`: the all-in-one local cluster for development (`npm start`). In one process: orch-apiserver on the
 * embedded store under --home, with Node and RBAC authorization, and one orchlet (built-in process runtime,
 * node name = the host name, node IP 127.0.0.1, root dir <home>/orchlet, static pods from <home>/manifests)
 * registered with it under its own node identity (system:node:<name>), and service-account tokens signed with
 * <home>/pki/sa.key. Writes <home>/admin.kubeconfig (for
 * kubectl: a client certificate of user admin in group system:masters, issued by <home>/pki/client-ca) and
 * <home>/orchlet.kubeconfig (the agent's credentials), prints one line saying how to use kubectl, and stops
 * the agent then the server on SIGINT/SIGTERM.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { appendFile, chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { stringify } from 'yaml';
import { Agent, nodeNameOf } from '../agent/agent.js';
import { parseAgentOptions } from '../agent/options.js';
import { parseServerOptions } from '../server/options.js';
import { createControlPlane } from '../server/controlplane.js';
import { makeCA, makeClientCert, type CertAndKey } from '../server/certs.js';
import { flag, formatHelp, parseFlags, toOptions } from '../util/flags.js';
import { versionLine } from '../util/version.js';
import { agentConfigFromOptions } from './orchlet.js';
import { fail, stopOnSignals } from './run.js';

const PROGRAM = 'orch';

const FLAGS = [
  flag('home', 'string', '.orch', 'Directory for the data, certificates, token file, kubeconfigs and the node agent.', { status: 'supported' }),
  flag('secure-port', 'int', '6443', 'Port of the API server (0 picks a free one).', { status: 'supported' }),
  flag('orchlet-port', 'int', '10250', "Port of the node agent's HTTPS server (logs); 0 picks a free one.", { status: 'supported' }),
  flag('no-node', 'bool', 'false', 'Start the API server only, without the node agent.', { status: 'supported' }),
  flag('help', 'bool', undefined, 'Print help.', { status: 'supported', short: 'h' }),
  flag('version', 'bool', undefined, 'Print version and quit.', { status: 'supported' }),
] as const;

/** The token of `user` in <home>/tokens.csv, added with a random token on first start. */
async function tokenFor(tokenFile: string, user: string, groups: string): Promise<string> {
  if (existsSync(tokenFile)) {
    const line = (await readFile(tokenFile, 'utf8')).split('\n').find((l) => l.split(',')[1] === user);
    if (line) return line.split(',')[0]!;
  }
  const token = randomBytes(24).toString('hex');
  await appendFile(tokenFile, `${token},${user},${user},"${groups}"\n`, { mode: 0o600 });
  return token;
}

/** The client CA of <home>/pki (made on first start): it signs the admin's certificate. */
async function clientCA(home: string): Promise<{ caFile: string; ca: CertAndKey }> {
  const dir = join(home, 'pki');
  const caFile = join(dir, 'client-ca.crt');
  const keyFile = join(dir, 'client-ca.key');
  if (existsSync(caFile) && existsSync(keyFile)) return { caFile, ca: { cert: await readFile(caFile, 'utf8'), key: await readFile(keyFile, 'utf8') } };
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const ca = await makeCA('orch-client-ca');
  await writeFile(keyFile, ca.key, { mode: 0o600 });
  await writeFile(caFile, ca.cert, { mode: 0o644 });
  return { caFile, ca };
}

/** The service-account signing key (ECDSA P-256, PKCS#8 PEM) under <home>/pki, made on first start. */
async function serviceAccountKey(home: string): Promise<string> {
  const keyFile = join(home, 'pki', 'sa.key');
  if (!existsSync(keyFile)) {
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
    await writeFile(keyFile, privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(), { mode: 0o600 });
  }
  return keyFile;
}

/** The admin's client certificate (CN admin, O system:masters), made on first start. */
async function adminCert(home: string, ca: CertAndKey): Promise<CertAndKey> {
  const certFile = join(home, 'pki', 'admin.crt');
  const keyFile = join(home, 'pki', 'admin.key');
  if (existsSync(certFile) && existsSync(keyFile)) return { cert: await readFile(certFile, 'utf8'), key: await readFile(keyFile, 'utf8') };
  const pair = await makeClientCert({ caCert: ca.cert, caKey: ca.key, commonName: 'admin', organizations: ['system:masters'] });
  await writeFile(keyFile, pair.key, { mode: 0o600 });
  await writeFile(certFile, pair.cert, { mode: 0o644 });
  return pair;
}

type Credentials = { token: string } | { cert: CertAndKey };

function kubeconfig(server: string, caCert: string, user: string, credentials: Credentials): string {
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'orch', cluster: { server, 'certificate-authority-data': b64(caCert) } }],
    users: [
      {
        name: user,
        user: 'token' in credentials ? { token: credentials.token } : { 'client-certificate-data': b64(credentials.cert.cert), 'client-key-data': b64(credentials.cert.key) },
      },
    ],
    contexts: [{ name: 'orch', context: { cluster: 'orch', user } }],
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
    process.stdout.write(formatHelp(PROGRAM, 'An all-in-one local orch cluster for development: the API server and one node agent.', FLAGS));
    return;
  }
  if (o.version) {
    process.stdout.write(versionLine(PROGRAM) + '\n');
    return;
  }
  try {
    const home = resolve(o.home);
    // Others may only traverse the home (0711): the agent's pod directories below it are traversable so that
    // containers running as their own user reach their volumes; everything else in it is the owner's alone.
    await mkdir(home, { recursive: true, mode: 0o711 });
    await chmod(home, 0o711);
    await mkdir(join(home, 'data'), { recursive: true, mode: 0o700 });
    await chmod(join(home, 'data'), 0o700);
    const tokenFile = join(home, 'tokens.csv');
    const { caFile, ca } = await clientCA(home);
    const admin = await adminCert(home, ca);
    const saKey = await serviceAccountKey(home);
    const nodeName = nodeNameOf(undefined);
    const nodeToken = o.noNode ? '' : await tokenFor(tokenFile, `system:node:${nodeName}`, 'system:nodes');
    const options = parseServerOptions([
      `--secure-port=${o.securePort || 6443}`,
      '--bind-address=127.0.0.1',
      `--data-dir=${join(home, 'data')}`,
      `--cert-dir=${join(home, 'certs')}`,
      ...(existsSync(tokenFile) ? [`--token-auth-file=${tokenFile}`] : []),
      `--client-ca-file=${caFile}`,
      '--authorization-mode=Node,RBAC',
      // Service-account tokens: `kubectl create token`, and the kube-api-access volume of every pod.
      '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
      `--service-account-key-file=${saKey}`,
      `--service-account-signing-key-file=${saKey}`,
    ]);
    const cp = await createControlPlane(options, { securePort: o.securePort });
    await cp.start();
    const url = `https://127.0.0.1:${cp.server.port}`;
    const kubeconfigPath = join(home, 'admin.kubeconfig');
    await writeFile(kubeconfigPath, kubeconfig(url, cp.server.caCert, 'admin', { cert: admin }), { mode: 0o600 });
    let agent: Agent | undefined;
    if (!o.noNode) {
      const agentKubeconfig = join(home, 'orchlet.kubeconfig');
      await writeFile(agentKubeconfig, kubeconfig(url, cp.server.caCert, `system:node:${nodeName}`, { token: nodeToken }), { mode: 0o600 });
      const rootDir = join(home, 'orchlet');
      await mkdir(join(home, 'manifests'), { recursive: true, mode: 0o700 });
      const agentOptions = parseAgentOptions([
        `--orchconfig=${agentKubeconfig}`,
        `--root-dir=${rootDir}`,
        `--cert-dir=${join(rootDir, 'pki')}`,
        `--pod-manifest-path=${join(home, 'manifests')}`,
        '--node-ip=127.0.0.1',
        '--address=127.0.0.1',
        `--port=${o.orchletPort || 10250}`,
        '--read-only-port=0',
        '--healthz-port=0',
        // a one-host sandbox on 127.0.0.1: the host's firewall is left alone (kubelet's default makes its chains)
        '--make-iptables-util-chains=false',
      ]);
      const log = (level: 'info' | 'error', message: string): void => {
        if (level === 'error') process.stderr.write(`orchlet: E ${message}\n`);
      };
      const config = await agentConfigFromOptions(agentOptions, log);
      if (config.server) config.server.port = o.orchletPort; // 0: a free port (the option itself refuses 0)
      agent = new Agent(config);
      await agent.start();
    }
    const node = agent ? `, node ${nodeName} (orchlet on port ${agent.servers?.port ?? 0})` : '';
    process.stderr.write(`${PROGRAM}: API server on ${url}${node}; use it with: export KUBECONFIG=${kubeconfigPath}; kubectl get nodes\n`);
    stopOnSignals(PROGRAM, async () => {
      await agent?.stop();
      await cp.stop();
    });
  } catch (err) {
    fail(PROGRAM, err);
  }
}
