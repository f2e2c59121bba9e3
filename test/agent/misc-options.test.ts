// orchlet options of issue 10 that act on the API server's objects, through kubectl against a
// cluster with an in-process agent: service links (with --master-service-namespace),
// --enable-controller-attach-detach and --contention-profiling (the agent's /debug/pprof/block). Plus the
// pure service-link variables.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startCluster, type TestCluster } from '../helpers/cluster.js';
import { startAgent, type TestAgent } from '../helpers/agent.js';
import { waitFor } from './runtime-contract.js';
import { serviceEnvVars, servicesForPod } from '../../src/agent/servicelinks.js';
import { containerEnv } from '../../src/agent/env.js';
import { NO_OBJECTS } from '../../src/agent/objects.js';
import type { Pod } from '../../src/agent/types.js';

type Json = Record<string, any>;

/** GET over HTTPS from the agent's self-signed server. */
function httpsGet(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    request(url, { rejectUnauthorized: false }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    })
      .on('error', reject)
      .end();
  });
}

const svc = (namespace: string, name: string, clusterIP: string, ports: Json[]): Json => ({ metadata: { namespace, name }, spec: { clusterIP, ports } });

void describe('service link variables', () => {
  void it('FromServices: host, ports, named ports and the docker link variables', () => {
    const env = serviceEnvVars([
      svc('a', 'my-svc', '10.0.0.7', [{ name: 'http', port: 80 }, { name: 'dns-udp', port: 53, protocol: 'UDP' }]),
      svc('a', 'v6', 'fd00::1', [{ port: 443 }]),
      svc('a', 'headless', 'None', [{ port: 1 }]),
    ]);
    assert.deepEqual(Object.fromEntries(env), {
      MY_SVC_SERVICE_HOST: '10.0.0.7',
      MY_SVC_SERVICE_PORT: '80',
      MY_SVC_SERVICE_PORT_HTTP: '80',
      MY_SVC_SERVICE_PORT_DNS_UDP: '53',
      MY_SVC_PORT: 'tcp://10.0.0.7:80',
      MY_SVC_PORT_80_TCP: 'tcp://10.0.0.7:80',
      MY_SVC_PORT_80_TCP_PROTO: 'tcp',
      MY_SVC_PORT_80_TCP_PORT: '80',
      MY_SVC_PORT_80_TCP_ADDR: '10.0.0.7',
      MY_SVC_PORT_53_UDP: 'udp://10.0.0.7:53',
      MY_SVC_PORT_53_UDP_PROTO: 'udp',
      MY_SVC_PORT_53_UDP_PORT: '53',
      MY_SVC_PORT_53_UDP_ADDR: '10.0.0.7',
      V6_SERVICE_HOST: 'fd00::1',
      V6_SERVICE_PORT: '443',
      V6_PORT: 'tcp://[fd00::1]:443',
      V6_PORT_443_TCP: 'tcp://[fd00::1]:443',
      V6_PORT_443_TCP_PROTO: 'tcp',
      V6_PORT_443_TCP_PORT: '443',
      V6_PORT_443_TCP_ADDR: 'fd00::1',
    });
  });

  void it('the pod namespace with enableServiceLinks, the master namespace\'s kubernetes Service always', () => {
    const all = [svc('default', 'kubernetes', '10.0.0.1', [{ port: 443 }]), svc('default', 'other', '10.0.0.2', [{ port: 1 }]), svc('ns', 'web', '10.0.0.3', [{ port: 2 }])];
    const names = (l: Json[]) => l.map((s) => `${s.metadata.namespace}/${s.metadata.name}`).sort();
    assert.deepEqual(names(servicesForPod(all, 'ns', true, 'default')), ['default/kubernetes', 'ns/web']);
    assert.deepEqual(names(servicesForPod(all, 'ns', false, 'default')), ['default/kubernetes']);
    assert.deepEqual(names(servicesForPod(all, 'ns', false, 'elsewhere')), []);
    assert.deepEqual(names(servicesForPod(all, 'default', true, 'default')), ['default/kubernetes', 'default/other']);
  });

  void it('come after the container\'s own variables, never replace one, and $(VAR) may name them', async () => {
    const pod = { metadata: { name: 'p', namespace: 'ns', uid: 'u' }, spec: { containers: [] } } as unknown as Pod;
    const c = { name: 'c', image: 'x', env: [{ name: 'WEB_SERVICE_HOST', value: 'mine' }, { name: 'URL', value: 'http://$(WEB_SERVICE_HOST):$(WEB_SERVICE_PORT)' }] } as Pod['spec']['containers'][0];
    const services = { envFor: () => new Map([['WEB_SERVICE_HOST', '10.0.0.3'], ['WEB_SERVICE_PORT', '2']]) };
    const env = await containerEnv({ pod, objects: NO_OBJECTS, allocatable: { cpu: 1, memory: 0 }, services }, c);
    assert.deepEqual([...env], [['WEB_SERVICE_HOST', 'mine'], ['URL', 'http://mine:2'], ['WEB_SERVICE_PORT', '2']]);
  });
});

void describe('orchlet with an API server: service links and controller-managed attach/detach', () => {
  let c: TestCluster;
  let a: TestAgent | undefined;
  before(async () => {
    c = await startCluster();
  });
  after(async () => {
    await a?.stop();
    await c?.stop();
  });

  const kubectlOK = async (args: string[], input?: string): Promise<string> => {
    const r = await c.kubectl(args, input !== undefined ? { input } : {});
    assert.equal(r.code, 0, `kubectl ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };
  const envOfPod = async (ns: string, name: string, nodeName: string, enableServiceLinks: boolean): Promise<Map<string, string>> => {
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: ns },
      spec: { nodeName, restartPolicy: 'Never', enableServiceLinks, automountServiceAccountToken: false, containers: [{ name: 'main', image: 'busybox', command: ['sh', '-c', 'env'] }] },
    };
    // the namespace's default ServiceAccount comes from a controller: retry until admission finds it
    await waitFor(`pod ${name} admitted`, async () => ((await c.kubectl(['create', '-f', '-'], { input: JSON.stringify(pod) })).code === 0 ? true : undefined));
    const p = await waitFor(`pod ${name} to finish`, async () => {
      const r = await c.kubectl(['get', 'pod', '-n', ns, name, '-o', 'json']);
      const x = r.code === 0 ? (JSON.parse(r.stdout) as Json) : undefined;
      return x?.status?.phase === 'Succeeded' || x?.status?.phase === 'Failed' ? x : undefined;
    }, 30_000);
    assert.equal(p.status.phase, 'Succeeded', JSON.stringify(p.status));
    const out = await kubectlOK(['logs', '-n', ns, name]);
    return new Map(out.split('\n').filter((l) => l.includes('=')).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
  };
  const clusterIP = async (ns: string, name: string): Promise<string> => (await kubectlOK(['get', 'svc', '-n', ns, name, '-o', 'jsonpath={.spec.clusterIP}'])).trim();

  void it('gives containers the variables of their namespace\'s Services and the kubernetes Service of --master-service-namespace', async () => {
    await kubectlOK(['create', 'namespace', 'links']);
    await kubectlOK(['create', 'namespace', 'ctl']);
    await kubectlOK(['create', 'service', 'clusterip', 'web-front', '-n', 'links', '--tcp=8080:80', '--tcp=53:53']);
    await kubectlOK(['create', 'service', 'clusterip', 'headless', '-n', 'links', '--clusterip=None']);
    // the master services of the namespace the agent is told about: its `kubernetes` Service only
    await kubectlOK(['create', 'service', 'clusterip', 'kubernetes', '-n', 'ctl', '--tcp=6443:6443']);
    await kubectlOK(['create', 'service', 'clusterip', 'not-master', '-n', 'ctl', '--tcp=1:1']);
    a = await startAgent(c, { extra: { masterServiceNamespace: 'ctl' } });
    const web = await clusterIP('links', 'web-front');
    const master = await clusterIP('ctl', 'kubernetes');

    const env = await envOfPod('links', 'with-links', a.nodeName, true);
    assert.equal(env.get('WEB_FRONT_SERVICE_HOST'), web);
    assert.equal(env.get('WEB_FRONT_SERVICE_PORT'), '8080');
    assert.equal(env.get('WEB_FRONT_SERVICE_PORT_8080_80'), '8080'); // kubectl names the port 8080-80
    assert.equal(env.get('WEB_FRONT_PORT'), `tcp://${web}:8080`);
    assert.equal(env.get('WEB_FRONT_PORT_53_TCP_ADDR'), web);
    assert.equal(env.get('KUBERNETES_SERVICE_HOST'), master);
    assert.equal(env.get('KUBERNETES_SERVICE_PORT'), '6443');
    assert.ok(![...env.keys()].some((k) => k.startsWith('HEADLESS_') || k.startsWith('NOT_MASTER_')), [...env.keys()].join(' '));

    const without = await envOfPod('links', 'no-links', a.nodeName, false);
    assert.equal(without.get('KUBERNETES_SERVICE_HOST'), master);
    assert.equal(without.get('WEB_FRONT_SERVICE_HOST'), undefined);
  });

  void it('--enable-controller-attach-detach sets the Node annotation; off, re-registration removes it', async () => {
    const nodeName = `cmad-${process.pid}`;
    const annotation = async (): Promise<string> =>
      (await kubectlOK(['get', 'node', nodeName, '-o', 'jsonpath={.metadata.annotations.volumes\\.kubernetes\\.io/controller-managed-attach-detach}'])).trim();
    const first = await startAgent(c, { nodeName });
    try {
      await waitFor('the node registered', async () => ((await c.kubectl(['get', 'node', nodeName])).code === 0 ? true : undefined));
      assert.equal(await annotation(), 'true');
    } finally {
      await first.stop();
    }
    // the same Node, registered again by an agent with the option off
    const second = await startAgent(c, { nodeName, controllerManagedAttachDetach: false });
    try {
      await waitFor('the annotation removed', async () => ((await annotation()) === '' ? true : undefined));
      assert.match(second.logs.join('\n'), new RegExp(`node ${nodeName} registered`));
    } finally {
      await second.stop();
    }
  });
  void it('--contention-profiling: the debugging handlers serve /debug/pprof/ profiles, and /debug/pprof/block only with the option', async () => {
    const server = (contentionProfiling: boolean, rootDir: string) => ({
      address: '127.0.0.1',
      port: 0,
      readOnlyPort: 0,
      healthzAddress: '127.0.0.1',
      healthzPort: 0,
      enableServer: true,
      enableDebuggingHandlers: true,
      anonymousAuth: true,
      certDir: join(rootDir, 'pki'),
      contentionProfiling,
    });
    const pki = await mkdtemp(join(tmpdir(), 'orch-pprof-'));
    const on = await startAgent(c, { extra: { server: server(true, pki) } });
    const off = await startAgent(c, { extra: { server: server(false, join(pki, 'off')) } });
    try {
      const index = await httpsGet(`${on.url}/debug/pprof/`);
      assert.equal(index.status, 200);
      assert.match(index.body, /href='block\?debug=1'>block</);
      const block = await httpsGet(`${on.url}/debug/pprof/block`);
      assert.equal(block.status, 200);
      assert.match(block.body, /^--- event loop delay \(monitorEventLoopDelay, resolution 10 ms\), nanoseconds\nsamples \d+\n/);
      assert.equal((await httpsGet(`${on.url}/debug/pprof/cmdline`)).status, 200);
      assert.equal((await httpsGet(`${off.url}/debug/pprof/block`)).status, 404);
      assert.doesNotMatch((await httpsGet(`${off.url}/debug/pprof/`)).body, /block/);
    } finally {
      await on.stop();
      await off.stop();
      await rm(pki, { recursive: true, force: true });
    }
  });
});
