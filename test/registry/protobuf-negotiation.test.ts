/**
 * Content negotiation of Kubernetes protobuf under both spellings: application/vnd.kubernetes.protobuf and the
 * spec's application/vnd.orch.protobuf. An answer carries the spelling the client accepted (objects, lists and
 * watch streams with ;stream=watch); bodies are read under either; a Table (no protobuf form) falls back to JSON
 * when the Accept allows it and is a 406 when it does not.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startCluster, type TestCluster } from '../helpers/cluster.js';
import { WatchFrameReader, decodeObject, encodeObject, hasProtobufMagic, type WatchFrame } from '../../src/util/protobuf.js';

interface Answer {
  status: number;
  contentType: string;
  body: Buffer;
}

describe('protobuf negotiation: both spellings', () => {
  let c: TestCluster;
  before(async () => {
    c = await startCluster();
  });
  after(async () => {
    await c.stop();
  });

  const send = async (method: string, path: string, headers: Record<string, string>, body?: Buffer): Promise<Answer> => {
    const r = await c.request(method, path, { headers, ...(body !== undefined ? { body, contentType: headers['content-type'] ?? 'application/json' } : {}) });
    return { status: r.status, contentType: String(r.headers['content-type'] ?? ''), body: r.body };
  };

  for (const spelling of ['application/vnd.orch.protobuf', 'application/vnd.kubernetes.protobuf']) {
    it(`create, get and list answer as ${spelling} when it is accepted`, async () => {
      const name = spelling.includes('orch') ? 'o' : 'k';
      const body = encodeObject({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'default' }, data: { a: name } });
      const created = await send('POST', '/api/v1/namespaces/default/configmaps', { 'content-type': spelling, accept: `${spelling}, application/json` }, body);
      assert.equal(created.status, 201, created.body.toString());
      assert.equal(created.contentType, spelling);
      assert.ok(hasProtobufMagic(created.body));
      const got = await send('GET', `/api/v1/namespaces/default/configmaps/${name}`, { accept: spelling });
      assert.equal(got.status, 200);
      assert.equal(got.contentType, spelling);
      const obj = decodeObject(got.body);
      assert.equal(obj['kind'], 'ConfigMap');
      assert.deepEqual(obj['data'], { a: name });
      const list = await send('GET', '/api/v1/namespaces/default/configmaps', { accept: spelling });
      assert.equal(list.contentType, spelling);
      const items = decodeObject(list.body)['items'] as Array<{ metadata: { name: string } }>;
      assert.ok(items.some((i) => i.metadata.name === name));
      const missing = await send('GET', '/api/v1/namespaces/default/configmaps/missing', { accept: spelling });
      assert.equal(missing.status, 404);
      assert.equal(missing.contentType, spelling);
      assert.equal(decodeObject(missing.body)['reason'], 'NotFound');
    });

    it(`a watch accepted as ${spelling} streams length-prefixed WatchEvents under ${spelling};stream=watch`, async () => {
      const w = await send('GET', '/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=1', { accept: `${spelling};stream=watch, application/json;stream=watch` });
      assert.equal(w.status, 200);
      assert.equal(w.contentType, `${spelling};stream=watch`);
      const frames: WatchFrame[] = new WatchFrameReader().push(w.body);
      assert.ok(frames.length >= 1);
      assert.equal(frames[0]!.type, 'ADDED');
      assert.equal(frames[0]!.object['kind'], 'ConfigMap');
    });
  }

  it('JSON stays the answer when JSON comes first, and for a bare */*', async () => {
    const a = await send('GET', '/api/v1/namespaces/default/configmaps/o', { accept: 'application/json, application/vnd.orch.protobuf' });
    assert.match(a.contentType, /^application\/json/);
    const b = await send('GET', '/api/v1/namespaces/default/configmaps/o', { accept: '*/*' });
    assert.match(b.contentType, /^application\/json/);
  });

  it('a Table asked for in protobuf alone is a 406; with a JSON clause after it, the Table comes as JSON', async () => {
    const table = 'application/vnd.orch.protobuf;as=Table;g=meta.k8s.io;v=v1';
    const only = await send('GET', '/api/v1/namespaces/default/configmaps', { accept: table });
    assert.equal(only.status, 406, only.body.toString());
    const fallback = await send('GET', '/api/v1/namespaces/default/configmaps', { accept: `${table}, application/json;as=Table;g=meta.k8s.io;v=v1` });
    assert.equal(fallback.status, 200);
    assert.match(fallback.contentType, /^application\/json/);
    assert.equal(JSON.parse(fallback.body.toString())['kind'], 'Table');
  });
});
