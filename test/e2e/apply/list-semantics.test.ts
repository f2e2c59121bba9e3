/**
 * Merge semantics driven by the kind's schema, through kubectl apply --server-side on built-in kinds: map
 * lists keyed as Kubernetes keys them (a Service's ports by port and protocol, the protocol defaulting to
 * TCP; a Pod's containers by name and their ports by containerPort and protocol), each applier owning its
 * items; atomic maps (a Service's selector) owned and replaced as a whole; sets (a Pod's finalizers).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { requireBinary } from '../../helpers/binaries.js';
import { startCluster, type TestCluster } from '../../helpers/cluster.js';

const present = requireBinary(undefined, 'kubectl') !== null;

const service = (ports: { port: number; protocol?: string; name?: string }[], selector?: Record<string, string>) =>
  JSON.stringify({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'lists', namespace: 'default' },
    spec: { ...(selector ? { selector } : {}), ports },
  });

describe('server-side apply: lists and maps as the schema declares them', { skip: !present && 'kubectl not installed' }, () => {
  let c: TestCluster;
  before(async () => {
    c = await startCluster();
  });
  after(async () => c?.stop());
  const k = (args: string[], input?: string) => c.kubectl(args, input !== undefined ? { input } : {});
  const apply = (manager: string, body: string) => k(['apply', '--server-side', `--field-manager=${manager}`, '-f', '-'], body);
  const get = async (kind: string, name: string) => JSON.parse((await k(['get', kind, name, '-o', 'json', '--show-managed-fields'])).stdout);
  const fieldsOf = (obj: any, manager: string) => obj.metadata.managedFields.find((e: { manager: string }) => e.manager === manager)?.fieldsV1;

  it("keys a Service's ports on port and the defaulted protocol; each applier owns its own items", async () => {
    const a = await apply('web', service([{ name: 'http', port: 80 }], { app: 'web' }));
    assert.equal(a.code, 0, a.stderr);
    const b = await apply('tls', service([{ name: 'https', port: 443 }]));
    assert.equal(b.code, 0, b.stderr);
    const svc = await get('service', 'lists');
    assert.deepEqual(
      svc.spec.ports.map((p: { port: number; protocol: string }) => `${p.port}/${p.protocol}`),
      ['80/TCP', '443/TCP'],
    );
    assert.deepEqual(fieldsOf(svc, 'tls'), {
      'f:spec': { 'f:ports': { 'k:{"port":443,"protocol":"TCP"}': { '.': {}, 'f:name': {}, 'f:port': {} } } },
    });
    // A UDP port 80 is another item.
    const udp = await apply('tls', service([{ name: 'https', port: 443 }, { name: 'dns', port: 80, protocol: 'UDP' }]));
    assert.equal(udp.code, 0, udp.stderr);
    assert.equal((await get('service', 'lists')).spec.ports.length, 3);
    // web stops applying its port: its item goes, the others stay.
    const drop = await apply('web', service([], { app: 'web' }));
    assert.equal(drop.code, 0, drop.stderr);
    assert.deepEqual(
      (await get('service', 'lists')).spec.ports.map((p: { port: number; protocol: string }) => `${p.port}/${p.protocol}`),
      ['443/TCP', '80/UDP'],
    );
  });

  it("owns a Service's selector as a whole (an atomic map): another value for any key conflicts on the map", async () => {
    const r = await apply('tls', service([{ name: 'https', port: 443 }, { name: 'dns', port: 80, protocol: 'UDP' }], { tier: 'edge' }));
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /Apply failed with 1 conflict: conflict with "web": \.spec\.selector/);
    assert.deepEqual(fieldsOf(await get('service', 'lists'), 'web'), { 'f:spec': { 'f:selector': {} } });
  });

  it("keys a Pod's containers by name and their ports by containerPort and protocol", async () => {
    const pod = (image: string) =>
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'lists', namespace: 'default' },
        spec: { containers: [{ name: 'app', image, ports: [{ containerPort: 8080 }] }] },
      });
    const a = await apply('deployer', pod('busybox:1'));
    assert.equal(a.code, 0, a.stderr);
    assert.deepEqual(fieldsOf(await get('pod', 'lists'), 'deployer'), {
      'f:spec': {
        'f:containers': {
          'k:{"name":"app"}': {
            '.': {},
            'f:image': {},
            'f:name': {},
            'f:ports': { 'k:{"containerPort":8080,"protocol":"TCP"}': { '.': {}, 'f:containerPort': {} } },
          },
        },
      },
    });
    const b = await apply('other', pod('busybox:2'));
    assert.notEqual(b.code, 0);
    assert.match(b.stderr, /conflict with "deployer": \.spec\.containers\[name="app"\]\.image/);
  });
});
