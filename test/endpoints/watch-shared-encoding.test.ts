/**
 * Watchers of one resource share the encoding of each event (endpoints/watchstream.ts): one per event type and
 * content type. Watchers asking for different content types, for a Table or for metadata only, open together
 * on the same events, must each still get their own form.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startCluster, type TestCluster } from '../helpers/cluster.js';
import { WatchFrameReader, encodeObject } from '../../src/util/protobuf.js';

interface Answer {
  contentType: string;
  body: Buffer;
}

describe('watch events encoded once and shared between watchers', () => {
  let c: TestCluster;
  before(async () => {
    c = await startCluster();
  });
  after(async () => {
    await c.stop();
  });

  const send = async (method: string, path: string, headers: Record<string, string>, body?: Buffer): Promise<Answer> => {
    const r = await c.request(method, path, { headers, ...(body !== undefined ? { body, contentType: headers['content-type'] ?? 'application/json' } : {}) });
    return { contentType: String(r.headers['content-type'] ?? ''), body: r.body };
  };

  it('JSON, protobuf, Table and metadata-only watchers each get the same events in their own form', async () => {
    const listed = await send('GET', '/api/v1/namespaces/default/configmaps', { accept: 'application/json' });
    const rv = (JSON.parse(listed.body.toString()) as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
    const path = `/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=${rv}&timeoutSeconds=2`;
    const table = 'application/json;as=Table;v=v1;g=meta.k8s.io';
    const meta = 'application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io';
    const watches = [
      send('GET', path, { accept: 'application/json' }),
      send('GET', path, { accept: 'application/json' }),
      send('GET', path, { accept: 'application/vnd.kubernetes.protobuf;stream=watch' }),
      send('GET', path, { accept: 'application/vnd.kubernetes.protobuf;stream=watch' }),
      send('GET', path, { accept: table }),
      send('GET', path, { accept: meta }),
    ];
    await new Promise((r) => setTimeout(r, 300));
    const cm = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'shared', namespace: 'default' }, data: { a: '1' } };
    await send('POST', '/api/v1/namespaces/default/configmaps', { 'content-type': 'application/vnd.kubernetes.protobuf', accept: 'application/json' }, encodeObject(cm));
    await send('PATCH', '/api/v1/namespaces/default/configmaps/shared', { 'content-type': 'application/merge-patch+json' }, Buffer.from('{"data":{"a":"2"}}'));
    await send('DELETE', '/api/v1/namespaces/default/configmaps/shared', {});
    const [j1, j2, p1, p2, t, m] = await Promise.all(watches);

    const jsonEvents = (a: Answer) =>
      a.body
        .toString()
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as { type: string; object: { kind: string; data?: { a: string }; rows?: unknown[]; metadata?: { name?: string } } });
    for (const j of [j1!, j2!]) {
      assert.equal(j.contentType, 'application/json');
      const evs = jsonEvents(j);
      assert.deepEqual(
        evs.map((e) => [e.type, e.object.kind, e.object.data?.a]),
        [
          ['ADDED', 'ConfigMap', '1'],
          ['MODIFIED', 'ConfigMap', '2'],
          ['DELETED', 'ConfigMap', '2'],
        ],
      );
    }
    assert.equal(j1!.body.toString(), j2!.body.toString());
    for (const p of [p1!, p2!]) {
      assert.equal(p.contentType, 'application/vnd.kubernetes.protobuf;stream=watch');
      const frames = new WatchFrameReader().push(p.body);
      assert.deepEqual(
        frames.map((f) => [f.type, f.object['kind'], (f.object['data'] as { a: string }).a]),
        [
          ['ADDED', 'ConfigMap', '1'],
          ['MODIFIED', 'ConfigMap', '2'],
          ['DELETED', 'ConfigMap', '2'],
        ],
      );
    }
    assert.ok(p1!.body.equals(p2!.body));
    const tables = jsonEvents(t!);
    assert.deepEqual(
      tables.map((e) => [e.type, e.object.kind]),
      [
        ['ADDED', 'Table'],
        ['MODIFIED', 'Table'],
        ['DELETED', 'Table'],
      ],
    );
    const metas = jsonEvents(m!);
    assert.deepEqual(
      metas.map((e) => [e.type, e.object.kind, e.object.metadata?.name, e.object.data]),
      [
        ['ADDED', 'PartialObjectMetadata', 'shared', undefined],
        ['MODIFIED', 'PartialObjectMetadata', 'shared', undefined],
        ['DELETED', 'PartialObjectMetadata', 'shared', undefined],
      ],
    );
  });
});
