/**
 * --storage-media-type on etcd: a server stores in JSON, the next one on the same etcd in protobuf, the last in
 * YAML; each reads everything the ones before wrote, through the API (kubectl and raw requests, JSON and
 * protobuf answers), and etcd holds each value in the encoding that wrote it.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpsRequest } from 'node:https';
import { Etcd3 } from 'etcd3';
import { requireBinary } from '../helpers/binaries.js';
import { startCluster, type TestCluster } from '../helpers/cluster.js';
import { startEtcd, type EtcdProcess } from '../helpers/etcd.js';
import { decodeObject } from '../../src/util/protobuf.js';

const kubectl = requireBinary(undefined, 'kubectl') !== null;
const etcdBin = requireBinary(undefined, 'etcd') !== null;
if ((!kubectl || !etcdBin) && process.env.CI === 'true') throw new Error('kubectl and etcd are required under CI=true');
const skip = (!kubectl && 'kubectl not installed') || (!etcdBin && 'etcd not installed');

/** A GET answered in protobuf: the body's bytes. */
function getProtobuf(c: TestCluster, path: string): Promise<{ status: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      c.url + path,
      { headers: { authorization: `Bearer ${c.token}`, accept: 'application/vnd.kubernetes.protobuf' }, ca: c.cp.server.caCert, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (d: Buffer) => chunks.push(d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

const ENCODINGS = [
  ['application/json', 'json'],
  ['application/vnd.kubernetes.protobuf', 'protobuf'],
  ['application/yaml', 'yaml'],
] as const;

describe('--storage-media-type: an etcd written by orch, read back after switching', { skip }, () => {
  let etcd: EtcdProcess;
  let client: Etcd3;
  let c: TestCluster | undefined;
  before(async () => {
    etcd = await startEtcd();
    client = new Etcd3({ hosts: etcd.endpoint });
  });
  after(async () => {
    await c?.stop();
    client.close();
    await etcd.stop();
  });
  const kind = (v: Buffer) => (v.subarray(0, 4).toString('latin1') === 'k8s\0' ? 'protobuf' : v.toString()[0] === '{' ? 'json' : 'yaml');

  it('each setting writes its encoding and reads every earlier one', async () => {
    const written: string[] = [];
    for (const [mediaType, name] of ENCODINGS) {
      await c?.stop();
      c = await startCluster([`--kvstore-servers=${etcd.endpoint}`, `--storage-media-type=${mediaType}`]);
      const ok = async (args: string[]) => {
        const r = await c!.kubectl(args);
        assert.equal(r.code, 0, `kubectl ${args.join(' ')}: ${r.stderr}`);
        return r.stdout;
      };
      await ok(['create', 'configmap', `cm-${name}`, `--from-literal=written-as=${name}`, '--from-literal=note=héllo ✓']);
      await ok(['create', 'namespace', `ns-${name}`]);
      written.push(name);
      const raw = await client.get(`/registry/configmaps/default/cm-${name}`).buffer();
      assert.ok(raw);
      assert.equal(kind(raw), name, `etcd holds cm-${name} as ${name}`);

      // Every value written so far reads back, whatever encoding wrote it.
      for (const w of written) {
        assert.equal(await ok(['get', 'configmap', `cm-${w}`, '-o', 'jsonpath={.data.written-as}/{.data.note}']), `${w}/héllo ✓`);
        const pb = await getProtobuf(c, `/api/v1/namespaces/default/configmaps/cm-${w}`);
        assert.equal(pb.status, 200);
        assert.deepEqual(decodeObject(pb.body)['data'], { 'written-as': w, note: 'héllo ✓' });
        const ns = await c.request('GET', `/api/v1/namespaces/ns-${w}`);
        assert.equal((ns.json as { status: { phase: string } }).status.phase, 'Active');
      }
      const names = (await ok(['get', 'configmaps', '-o', 'name'])).split('\n').filter((l) => l.startsWith('configmap/cm-'));
      assert.deepEqual(names.sort(), written.map((w) => `configmap/cm-${w}`).sort());
    }
    // A value is rewritten in the current setting (YAML) when it is updated.
    await c!.kubectl(['label', 'configmap', 'cm-json', 'rewritten=yes']);
    assert.equal(kind((await client.get('/registry/configmaps/default/cm-json').buffer())!), 'yaml');
  });
});
