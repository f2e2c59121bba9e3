/**
 * Services and Endpoints through kubectl (the one on PATH, 1.27 and 1.33) and raw HTTPS, against servers
 * this test starts: the `kubernetes` Service and its Endpoints (advertise address, secure port, recreated
 * when deleted), `kubectl create service clusterip/nodeport`, `kubectl expose`, the tables (default and
 * wide), cluster IP and node port allocation (explicit duplicates refused with Kubernetes' messages,
 * released on delete and on type changes, dry runs take nothing, 50 concurrent creates get distinct
 * addresses), dual-stack ranges, --orchestrator-service-node-port, --master-service-namespace and the
 * master-count reconciler. The servers are the real bin/orch-apiserver (the options as a user gives them).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { requireBinary } from '../helpers/binaries.js';
import { kubectlPath } from '../helpers/cluster.js';
import { startBinCluster, type BinCluster } from '../helpers/binserver.js';
import { eventually } from '../helpers/eventually.js';

const present = requireBinary(undefined, 'kubectl') !== null;
if (!present && process.env.CI === 'true') throw new Error('kubectl is required under CI=true');
const skip = !present && 'kubectl not installed';
const VERSIONS = [undefined, '1.27', '1.33'].filter((v) => v === undefined || kubectlPath(v) !== null);

const inRange = (ip: string, prefix: string) => ip.startsWith(prefix) && Number(ip.slice(prefix.length)) >= 2 && Number(ip.slice(prefix.length)) <= 254;


describe('kubectl: services and endpoints', () => {
  let c: BinCluster;
  const k = (args: string[], opts: { input?: string; version?: string | undefined } = {}) =>
    c.kubectl(args, { ...(opts.input !== undefined ? { input: opts.input } : {}), ...(opts.version ? { version: opts.version } : {}) });
  const ok = async (args: string[], opts: { input?: string; version?: string | undefined } = {}) => {
    const r = await k(args, opts);
    assert.equal(r.code, 0, `kubectl ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };
  const fails = async (args: string[], pattern: RegExp) => {
    const r = await k(args);
    assert.notEqual(r.code, 0, `kubectl ${args.join(' ')} should fail`);
    assert.match(r.stderr, pattern);
  };
  const json = async (args: string[]) => JSON.parse(await ok([...args, '-o', 'json']));

  before(async () => {
    if (present) {
      c = await startBinCluster(['--advertise-address=192.0.2.10', '--service-cluster-ip-range=10.96.0.0/24', '--service-node-port-range=30000-30100']);
      await ok(['create', 'namespace', 'svc']);
    }
  });
  after(async () => c?.stop());

  it('the kubernetes Service and its Endpoints', { skip }, async () => {
    const port = c.server.port;
    for (const version of VERSIONS) {
      assert.match(
        await ok(['get', 'svc', 'kubernetes'], { version }),
        /^NAME\s+TYPE\s+CLUSTER-IP\s+EXTERNAL-IP\s+PORT\(S\)\s+AGE\nkubernetes\s+ClusterIP\s+10\.96\.0\.1\s+<none>\s+443\/TCP\s+\S+\n$/,
        `kubectl ${version ?? ''}`,
      );
      assert.match(await ok(['get', 'endpoints', 'kubernetes'], { version }), new RegExp(`^NAME\\s+ENDPOINTS\\s+AGE\\nkubernetes\\s+192\\.0\\.2\\.10:${port}\\s+\\S+\\n$`));
    }
    const svc = await json(['get', 'svc', 'kubernetes']);
    assert.deepEqual(svc.metadata.labels, { component: 'apiserver', provider: 'kubernetes' });
    assert.deepEqual(svc.spec.ports, [{ name: 'https', port: 443, protocol: 'TCP', targetPort: port }]);
    assert.equal(svc.spec.ipFamilyPolicy, 'SingleStack');
    assert.deepEqual(svc.spec.ipFamilies, ['IPv4']);
    assert.deepEqual(svc.spec.clusterIPs, ['10.96.0.1']);
    const ep = await json(['get', 'ep', 'kubernetes']);
    assert.equal(ep.metadata.labels['endpointslice.kubernetes.io/skip-mirror'], 'true');
    assert.deepEqual(ep.subsets, [{ addresses: [{ ip: '192.0.2.10' }], ports: [{ name: 'https', port, protocol: 'TCP' }] }]);

    // Deleted, it comes back with the same address; its Endpoints go with it and come back too.
    assert.match(await ok(['delete', 'svc', 'kubernetes']), /service "kubernetes" deleted/);
    const back = await eventually('the kubernetes service', async () => {
      const r = await k(['get', 'svc', 'kubernetes', '-o', 'json']);
      return r.code === 0 ? JSON.parse(r.stdout) : undefined;
    });
    assert.equal(back.spec.clusterIP, '10.96.0.1');
    assert.notEqual(back.metadata.uid, svc.metadata.uid);
    await eventually('the kubernetes endpoints', async () => {
      const r = await k(['get', 'ep', 'kubernetes', '-o', 'json']);
      return r.code === 0 && JSON.parse(r.stdout).subsets?.[0]?.addresses?.[0]?.ip === '192.0.2.10' ? true : undefined;
    });
  });

  it('create service clusterip and nodeport, tables, expose', { skip }, async () => {
    assert.match(await ok(['create', 'service', 'clusterip', 'web', '-n', 'svc', '--tcp=80:8080']), /service\/web created/);
    const web = await json(['get', 'svc', 'web', '-n', 'svc']);
    assert.ok(inRange(web.spec.clusterIP, '10.96.0.'), web.spec.clusterIP);
    assert.deepEqual(web.spec.clusterIPs, [web.spec.clusterIP]);
    assert.deepEqual(web.spec.ports, [{ name: '80-8080', port: 80, protocol: 'TCP', targetPort: 8080 }]);
    assert.deepEqual(web.spec.selector, { app: 'web' });
    assert.equal(web.spec.type, 'ClusterIP');
    assert.equal(web.spec.sessionAffinity, 'None');
    assert.equal(web.spec.ipFamilyPolicy, 'SingleStack');
    assert.deepEqual(web.spec.ipFamilies, ['IPv4']);
    assert.equal(web.spec.internalTrafficPolicy, 'Cluster');
    assert.equal(web.spec.externalTrafficPolicy, undefined);
    assert.deepEqual(web.status, { loadBalancer: {} });

    assert.match(await ok(['create', 'service', 'nodeport', 'np', '-n', 'svc', '--tcp=81:8081']), /service\/np created/);
    const np = await json(['get', 'svc', 'np', '-n', 'svc']);
    const nodePort: number = np.spec.ports[0].nodePort;
    assert.ok(nodePort >= 30000 && nodePort <= 30100, String(nodePort));
    assert.equal(np.spec.externalTrafficPolicy, 'Cluster');

    for (const version of VERSIONS) {
      const table = await ok(['get', 'svc', '-n', 'svc'], { version });
      assert.match(table, /^NAME\s+TYPE\s+CLUSTER-IP\s+EXTERNAL-IP\s+PORT\(S\)\s+AGE\n/);
      assert.match(table, new RegExp(`\\nnp\\s+NodePort\\s+${np.spec.clusterIP.replace(/\./g, '\\.')}\\s+<none>\\s+81:${nodePort}/TCP\\s+\\S+\\n`));
      assert.match(table, new RegExp(`\\nweb\\s+ClusterIP\\s+${web.spec.clusterIP.replace(/\./g, '\\.')}\\s+<none>\\s+80/TCP\\s+\\S+\\n`));
      const wide = await ok(['get', 'svc', 'web', '-n', 'svc', '-o', 'wide'], { version });
      assert.match(wide, /^NAME\s+TYPE\s+CLUSTER-IP\s+EXTERNAL-IP\s+PORT\(S\)\s+AGE\s+SELECTOR\nweb\s+ClusterIP\s+\S+\s+<none>\s+80\/TCP\s+\S+\s+app=web\n$/);
    }

    // expose: a new Service from an existing one's selector and ports.
    assert.match(await ok(['expose', 'service', 'web', '-n', 'svc', '--name=web2', '--port=90', '--target-port=9090']), /service\/web2 exposed/);
    const web2 = await json(['get', 'svc', 'web2', '-n', 'svc']);
    assert.deepEqual(web2.spec.selector, { app: 'web' });
    assert.deepEqual(web2.spec.ports, [{ port: 90, protocol: 'TCP', targetPort: 9090 }]);
    assert.notEqual(web2.spec.clusterIP, web.spec.clusterIP);

    // Headless and ExternalName services take no address.
    await ok(['create', 'service', 'clusterip', 'headless', '-n', 'svc', '--clusterip=None']);
    const headless = await json(['get', 'svc', 'headless', '-n', 'svc']);
    assert.deepEqual(headless.spec.clusterIPs, ['None']);
    await ok(['create', 'service', 'externalname', 'ext', '-n', 'svc', '--external-name=example.com']);
    assert.match(await ok(['get', 'svc', 'ext', '-n', 'svc']), /\next\s+ExternalName\s+<none>\s+example\.com\s+<none>\s+\S+\n$/);
  });

  it('explicit cluster IPs and node ports: duplicates and ranges refused, released on delete and type change', { skip }, async () => {
    await ok(['create', 'service', 'clusterip', 'a', '-n', 'svc', '--tcp=80']);
    const ip: string = (await json(['get', 'svc', 'a', '-n', 'svc'])).spec.clusterIP;
    await fails(
      ['create', 'service', 'clusterip', 'dup', '-n', 'svc', '--tcp=80', `--clusterip=${ip}`],
      new RegExp(`Service "dup" is invalid: spec\\.clusterIPs: Invalid value: \\[\\]string\\{"${ip.replace(/\./g, '\\.')}"\\}: failed to allocate IP ${ip.replace(/\./g, '\\.')}: provided IP is already allocated`),
    );
    await fails(
      ['create', 'service', 'clusterip', 'out', '-n', 'svc', '--tcp=80', '--clusterip=10.0.0.5'],
      /spec\.clusterIPs: Invalid value: \[\]string\{"10\.0\.0\.5"\}: failed to allocate IP 10\.0\.0\.5: provided IP is not in the valid range\. The range of valid IPs is 10\.96\.0\.0\/24/,
    );
    await fails(
      ['create', 'service', 'clusterip', 'mine', '-n', 'svc', '--tcp=80', '--clusterip=10.96.0.1'],
      /failed to allocate IP 10\.96\.0\.1: provided IP is already allocated/,
    );
    // The cluster IP may not change.
    await fails(
      ['patch', 'svc', 'a', '-n', 'svc', '-p', '{"spec":{"clusterIP":"10.96.0.250"}}'],
      /spec\.clusterIPs\[0\]: Invalid value: \[\]string\{"10\.96\.0\.250"\}: may not change once set/,
    );
    // Released on delete: the same address can be asked for again.
    await ok(['delete', 'svc', 'a', '-n', 'svc']);
    await ok(['create', 'service', 'clusterip', 'dup', '-n', 'svc', '--tcp=80', `--clusterip=${ip}`]);

    // A dry run takes nothing.
    const dry = JSON.parse(await ok(['create', 'service', 'clusterip', 'dry', '-n', 'svc', '--tcp=80', '--dry-run=server', '-o', 'json']));
    assert.match(dry.spec.clusterIP, /^10\.96\.0\.\d+$/);
    await ok(['create', 'service', 'clusterip', 'wet', '-n', 'svc', '--tcp=80', `--clusterip=${dry.spec.clusterIP}`]);

    // Node ports: one no service holds yet.
    const held = ((await json(['get', 'svc', '-A'])).items as { spec: { ports?: { nodePort?: number }[] } }[]).flatMap((s) => (s.spec.ports ?? []).map((p) => p.nodePort));
    const free = [30042, 30043, 30044].find((p) => !held.includes(p))!;
    await ok(['create', 'service', 'nodeport', 'n1', '-n', 'svc', '--tcp=80', `--node-port=${free}`]);
    await fails(
      ['create', 'service', 'nodeport', 'n2', '-n', 'svc', '--tcp=80', `--node-port=${free}`],
      new RegExp(`Service "n2" is invalid: spec\\.ports\\[0\\]\\.nodePort: Invalid value: ${free}: provided port is already allocated`),
    );
    await fails(
      ['create', 'service', 'nodeport', 'n3', '-n', 'svc', '--tcp=80', '--node-port=31000'],
      /spec\.ports\[0\]\.nodePort: Invalid value: 31000: provided port is not in the valid range\. The range of valid ports is 30000-30100/,
    );
    // NodePort -> ClusterIP releases the node port (and drops externalTrafficPolicy).
    await ok(['patch', 'svc', 'n1', '-n', 'svc', '-p', '{"spec":{"type":"ClusterIP"}}']);
    const n1 = await json(['get', 'svc', 'n1', '-n', 'svc']);
    assert.equal(n1.spec.ports[0].nodePort, undefined);
    assert.equal(n1.spec.externalTrafficPolicy, undefined);
    await ok(['create', 'service', 'nodeport', 'n2', '-n', 'svc', '--tcp=80', `--node-port=${free}`]);
    // Released on delete.
    await ok(['delete', 'svc', 'n2', '-n', 'svc']);
    await ok(['create', 'service', 'nodeport', 'n4', '-n', 'svc', '--tcp=80', `--node-port=${free}`]);
    // ClusterIP -> ExternalName releases the address.
    const wet: string = (await json(['get', 'svc', 'wet', '-n', 'svc'])).spec.clusterIP;
    await ok(['patch', 'svc', 'wet', '-n', 'svc', '-p', '{"spec":{"type":"ExternalName","externalName":"example.com"}}']);
    const ext = await json(['get', 'svc', 'wet', '-n', 'svc']);
    assert.equal(ext.spec.clusterIP, undefined);
    assert.equal(ext.spec.ipFamilies, undefined);
    await ok(['create', 'service', 'clusterip', 'reuse', '-n', 'svc', '--tcp=80', `--clusterip=${wet}`]);
  });

  it('50 concurrent creates get distinct addresses and node ports', { skip }, async () => {
    await ok(['create', 'namespace', 'many']);
    const replies = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        c.request('POST', '/api/v1/namespaces/many/services', {
          body: { apiVersion: 'v1', kind: 'Service', metadata: { name: `s${i}` }, spec: { type: 'NodePort', ports: [{ port: 80 }] } },
        }),
      ),
    );
    for (const r of replies) assert.equal(r.status, 201, r.text);
    const ips = replies.map((r) => r.json.spec.clusterIP as string);
    const ports = replies.map((r) => r.json.spec.ports[0].nodePort as number);
    assert.equal(new Set(ips).size, 50);
    assert.equal(new Set(ports).size, 50);
    for (const ip of ips) assert.ok(inRange(ip, '10.96.0.'), ip);
    const listed = (await c.request('GET', '/api/v1/namespaces/many/services')).json.items as { spec: { clusterIP: string } }[];
    assert.deepEqual(listed.map((s) => s.spec.clusterIP).sort(), [...ips].sort());
    // All released by a delete of the namespace's services.
    assert.equal((await c.request('DELETE', '/api/v1/namespaces/many/services')).status, 200);
    const again = await c.request('POST', '/api/v1/namespaces/many/services', {
      body: { apiVersion: 'v1', kind: 'Service', metadata: { name: 'again' }, spec: { clusterIP: ips[0], type: 'NodePort', ports: [{ port: 80, nodePort: ports[0] }] } },
    });
    assert.equal(again.status, 201, again.text);
  });

  it('endpoints: validation, table, deleted with their service', { skip }, async () => {
    const manifest = (ip: string) =>
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Endpoints',
        metadata: { name: 'web', namespace: 'svc' },
        subsets: [{ addresses: [{ ip }, { ip: '10.1.0.3' }], ports: [{ port: 8080 }] }],
      });
    const loop = await k(['create', '-f', '-'], { input: manifest('127.0.0.1') });
    assert.notEqual(loop.code, 0);
    assert.match(loop.stderr, /Endpoints "web" is invalid: subsets\[0\]\.addresses\[0\]\.ip: Invalid value: "127\.0\.0\.1": may not be in the loopback range \(127\.0\.0\.0\/8, ::1\/128\)/);
    await ok(['apply', '-f', '-'], { input: manifest('10.1.0.2') });
    assert.match(await ok(['get', 'ep', 'web', '-n', 'svc']), /^NAME\s+ENDPOINTS\s+AGE\nweb\s+10\.1\.0\.2:8080,10\.1\.0\.3:8080\s+\S+\n$/);
    assert.equal((await json(['get', 'ep', 'web', '-n', 'svc'])).subsets[0].ports[0].protocol, 'TCP');
    await ok(['delete', 'svc', 'web', '-n', 'svc']);
    const gone = await k(['get', 'ep', 'web', '-n', 'svc']);
    assert.notEqual(gone.code, 0);
    assert.match(gone.stderr, /endpoints "web" not found/);
  });
});

describe('services: dual-stack range, node-port kubernetes Service, master-count', () => {
  let c: BinCluster;
  before(async () => {
    if (present) {
      c = await startBinCluster([
        '--advertise-address=192.0.2.11',
        '--service-cluster-ip-range=10.97.0.0/24,fd00:97::/112',
        '--orchestrator-service-node-port=30443',
        '--endpoint-reconciler-type=master-count',
        '--apiserver-count=1',
        '--master-service-namespace=control',
      ]);
    }
  });
  after(async () => c?.stop());

  const create = (name: string, spec: Record<string, unknown>) =>
    c.request('POST', '/api/v1/namespaces/default/services', { body: { apiVersion: 'v1', kind: 'Service', metadata: { name }, spec: { ports: [{ port: 80 }], ...spec } } });

  it('the kubernetes Service in --master-service-namespace, NodePort, master-count endpoints', { skip }, async () => {
    const svc = await c.kubectl(['get', 'svc', 'kubernetes', '-n', 'control']);
    assert.equal(svc.code, 0, svc.stderr);
    assert.match(svc.stdout, /\nkubernetes\s+NodePort\s+10\.97\.0\.1\s+<none>\s+443:30443\/TCP\s+\S+\n$/);
    const ep = await c.kubectl(['get', 'ep', 'kubernetes', '-n', 'control']);
    assert.match(ep.stdout, new RegExp(`\\nkubernetes\\s+192\\.0\\.2\\.11:${c.server.port}\\s+`));
    assert.equal((await c.request('GET', '/api/v1/namespaces/default/services/kubernetes')).status, 404);
    // The node port is taken: nobody else gets it.
    const r = await create('np', { type: 'NodePort', ports: [{ port: 80, nodePort: 30443 }] });
    assert.equal(r.status, 422);
    assert.equal(r.json.message, 'Service "np" is invalid: spec.ports[0].nodePort: Invalid value: 30443: provided port is already allocated');
  });

  it('single-stack by default, dual-stack on request, either family', { skip }, async () => {
    const single = await create('single', {});
    assert.equal(single.status, 201, single.text);
    assert.deepEqual(single.json.spec.ipFamilies, ['IPv4']);
    assert.equal(single.json.spec.ipFamilyPolicy, 'SingleStack');
    assert.match(single.json.spec.clusterIP, /^10\.97\.0\.\d+$/);

    const dual = await create('dual', { ipFamilyPolicy: 'RequireDualStack' });
    assert.equal(dual.status, 201, dual.text);
    assert.deepEqual(dual.json.spec.ipFamilies, ['IPv4', 'IPv6']);
    assert.equal(dual.json.spec.clusterIPs.length, 2);
    assert.match(dual.json.spec.clusterIPs[0], /^10\.97\.0\.\d+$/);
    assert.match(dual.json.spec.clusterIPs[1], /^fd00:97::[0-9a-f]+$/);

    const v6 = await create('v6', { ipFamilies: ['IPv6'] });
    assert.equal(v6.status, 201, v6.text);
    assert.match(v6.json.spec.clusterIP, /^fd00:97::[0-9a-f]+$/);
    assert.deepEqual(v6.json.spec.ipFamilies, ['IPv6']);

    const prefer = await create('prefer', { ipFamilyPolicy: 'PreferDualStack', ipFamilies: ['IPv6'] });
    assert.equal(prefer.status, 201, prefer.text);
    assert.deepEqual(prefer.json.spec.ipFamilies, ['IPv6', 'IPv4']);

    // The secondary address is released by a downgrade to SingleStack, and can then be asked for by name.
    const secondary: string = dual.json.spec.clusterIPs[1];
    const taken = await create('taken', { ipFamilies: ['IPv6'], clusterIP: secondary });
    assert.equal(taken.status, 422);
    assert.match(taken.json.message, /provided IP is already allocated/);
    const down = await c.request('PATCH', '/api/v1/namespaces/default/services/dual', {
      body: { spec: { ipFamilyPolicy: 'SingleStack', ipFamilies: ['IPv4'], clusterIPs: [dual.json.spec.clusterIPs[0]] } },
      contentType: 'application/merge-patch+json',
    });
    assert.equal(down.status, 200, down.text);
    assert.deepEqual(down.json.spec.clusterIPs, [dual.json.spec.clusterIPs[0]]);
    const reuse = await create('reuse', { ipFamilies: ['IPv6'], clusterIP: secondary });
    assert.equal(reuse.status, 201, reuse.text);
  });
});
