import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile, unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileSource, readManifestPath } from '../../src/agent/sources/file.js';
import {
  checkPodManifest,
  CONFIG_HASH_ANNOTATION,
  CONFIG_SEEN_ANNOTATION,
  CONFIG_SOURCE_ANNOTATION,
  decodeManifest,
  staticPodFromManifest,
  staticPodHash,
} from '../../src/agent/sources/manifest.js';
import { deepEqual, PodMerge, type PodSet, type PodSnapshot } from '../../src/agent/sources/merge.js';
import { ApiSource } from '../../src/agent/sources/api.js';
import { ApiClient, type Json } from '../../src/agent/client/client.js';
import { createServer, type ServerResponse } from 'node:http';
import type { Pod } from '../../src/agent/types.js';
import { waitFor } from './runtime-contract.js';

const manifest = (name: string, extra: Record<string, unknown> = {}) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name },
  spec: { containers: [{ name: 'app', image: 'busybox', command: ['sleep', '1'] }] },
  ...extra,
});

const staticPod = (name: string, node = 'node1', path = `/m/${name}.yaml`): Pod => staticPodFromManifest(manifest(name), 'file', node, path);

void describe('static pod identity', () => {
  void it('names, namespaces, annotates and hashes like kubelet', () => {
    const pod = staticPod('web', 'Node1');
    assert.equal(pod.metadata.name, 'web-node1');
    assert.equal(pod.metadata.namespace, 'default');
    assert.match(pod.metadata.uid, /^[0-9a-f]{32}$/);
    assert.equal(pod.metadata.annotations?.[CONFIG_HASH_ANNOTATION], pod.metadata.uid);
    assert.equal(pod.metadata.annotations?.[CONFIG_SOURCE_ANNOTATION], 'file');
    assert.equal(pod.spec.nodeName, 'Node1');
    assert.equal(pod.spec.restartPolicy, 'Always');
    assert.equal(pod.spec.terminationGracePeriodSeconds, 30);
    assert.deepEqual(pod.spec.tolerations, [{ operator: 'Exists', effect: 'NoExecute' }]);
  });

  void it('keeps the uid stable for the same manifest and node, changes it otherwise', () => {
    const a = staticPodHash(manifest('web'), 'n1', '/m/web.yaml');
    assert.equal(a, staticPodHash(JSON.parse(JSON.stringify(manifest('web'))), 'n1', '/m/web.yaml'));
    assert.notEqual(a, staticPodHash(manifest('web'), 'n2', '/m/web.yaml'));
    assert.notEqual(a, staticPodHash(manifest('web', { spec: { containers: [] } }), 'n1', '/m/web.yaml'));
    // key order does not matter
    const reordered = { spec: manifest('web').spec, metadata: { name: 'web' }, kind: 'Pod', apiVersion: 'v1' };
    assert.equal(a, staticPodHash(reordered, 'n1', '/m/web.yaml'));
  });

  void it('keeps a namespace and a uid given in the manifest', () => {
    const pod = staticPodFromManifest(manifest('web', { metadata: { name: 'web', namespace: 'kube-system', uid: 'u1' } }), 'file', 'n', '/p');
    assert.equal(pod.metadata.namespace, 'kube-system');
    assert.equal(pod.metadata.uid, 'u1');
  });

  void it('checks manifests: image required, names valid, restart policy known', () => {
    assert.deepEqual(checkPodManifest(manifest('web')), []);
    const bad = checkPodManifest({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'Web_1' },
      spec: { restartPolicy: 'Sometimes', containers: [{ name: 'a' }, { name: 'a', image: 'x', securityContext: { runAsUser: -1 } }] },
    });
    assert.ok(bad.some((e) => e.startsWith('metadata.name: Invalid value')), bad.join('\n'));
    assert.ok(bad.includes('spec.containers[0].image: Required value'), bad.join('\n'));
    assert.ok(bad.some((e) => e.startsWith('spec.restartPolicy: Unsupported value')), bad.join('\n'));
    assert.ok(bad.includes('spec.containers[1].name: Duplicate value: "a"'), bad.join('\n'));
    assert.ok(bad.some((e) => e.startsWith('spec.containers[1].securityContext.runAsUser')), bad.join('\n'));
    assert.ok(checkPodManifest({ ...manifest('x'), kind: 'Deployment' }).some((e) => e.startsWith('kind:')));
  });

  void it('decodes YAML, JSON and pod lists', () => {
    assert.equal(decodeManifest('apiVersion: v1\nkind: Pod\nmetadata: {name: a}\n').length, 1);
    assert.equal(decodeManifest(JSON.stringify(manifest('a'))).length, 1);
    assert.equal(decodeManifest(JSON.stringify({ kind: 'PodList', items: [manifest('a'), manifest('b')] })).length, 2);
    assert.throws(() => decodeManifest('a: [1'));
    assert.throws(() => decodeManifest('- 1\n- 2\n'));
  });
});

void describe('merge', () => {
  const now = () => new Date('2024-05-01T10:00:00.5Z');
  const set = (pods: Pod[]): PodSnapshot => ({ op: 'SET', source: 'file', pods });

  void it('turns snapshots into ADD, UPDATE and DELETE by uid', () => {
    const m = new PodMerge({ now });
    const a = staticPod('a');
    const b = staticPod('b');
    let out = m.apply(set([a, b]));
    assert.deepEqual(out.map((u) => [u.op, u.pods.map((p) => p.metadata.name)]), [['ADD', ['a-node1', 'b-node1']]]);
    assert.equal(out[0]!.pods[0]!.metadata.annotations?.[CONFIG_SEEN_ANNOTATION], '2024-05-01T10:00:00.5Z');
    assert.deepEqual(m.apply(set([a, b])), [], 'an unchanged snapshot changes nothing');
    const b2 = structuredClone(b);
    b2.metadata.labels = { x: 'y' };
    const c = staticPod('c');
    out = m.apply(set([b2, c]));
    assert.deepEqual(out.map((u) => [u.op, u.pods.map((p) => p.metadata.name)]), [
      ['DELETE', ['a-node1']],
      ['ADD', ['c-node1']],
      ['UPDATE', ['b-node1']],
    ]);
    assert.equal(out[2]!.pods[0]!.metadata.annotations?.[CONFIG_SEEN_ANNOTATION], '2024-05-01T10:00:00.5Z');
    assert.deepEqual(m.pods().map((p) => p.metadata.name).sort(), ['b-node1', 'c-node1']);
    out = m.apply(set([]));
    assert.deepEqual(out.map((u) => [u.op, u.pods.length]), [['DELETE', 2]]);
  });

  void it('drops a pod whose full name repeats in a source', () => {
    const dups: string[] = [];
    const m = new PodMerge({ now, onDuplicate: (p) => dups.push(p.metadata.name) });
    const a = staticPod('a', 'node1', '/m/a.yaml');
    const a2 = staticPod('a', 'node1', '/m/a-copy.yaml');
    assert.notEqual(a.metadata.uid, a2.metadata.uid);
    const out = m.apply(set([a, a2]));
    assert.equal(out[0]!.pods.length, 1);
    assert.deepEqual(dups, ['a-node1']);
  });
});

void describe('merge of deltas', () => {
  const now = () => new Date('2024-05-01T10:00:00.5Z');
  const apiPod = (name: string, uid: string, extra: Partial<Pod['metadata']> = {}): Pod =>
    ({ metadata: { name, namespace: 'ns', uid, ...extra }, spec: { containers: [{ name: 'c', image: 'i' }] } }) as unknown as Pod;
  const delta = (set: Pod[], removed: Pod[] = []): PodSnapshot => ({ op: 'DELTA', source: 'api', set, removed });
  const ops = (out: ReturnType<PodMerge['apply']>) => out.map((u) => [u.op, u.pods.map((p) => `${p.metadata.name}/${p.metadata.uid}`)]);

  void it('adds, updates and removes only the pods a delta names, on top of a SET', () => {
    const dups: string[] = [];
    const m = new PodMerge({ now, onDuplicate: (p) => dups.push(p.metadata.uid) });
    const a = apiPod('a', '1');
    const b = apiPod('b', '2');
    assert.deepEqual(ops(m.apply({ op: 'SET', source: 'api', pods: [a, b] })), [['ADD', ['a/1', 'b/2']]]);
    const c = apiPod('c', '3');
    assert.deepEqual(ops(m.apply(delta([c]))), [['ADD', ['c/3']]], 'a and b are not in the delta and stay as they are');
    assert.equal(m.apply(delta([c])).length, 0, 'the same object again changes nothing');
    assert.equal(m.apply(delta([structuredClone(c)])).length, 0, 'an equal copy changes nothing');
    const c2 = apiPod('c', '3', { labels: { x: 'y' } });
    const out = m.apply(delta([c2]));
    assert.deepEqual(ops(out), [['UPDATE', ['c/3']]]);
    assert.equal(out[0]!.pods[0]!.metadata.annotations?.[CONFIG_SEEN_ANNOTATION], '2024-05-01T10:00:00.5Z', 'config.seen is kept');
    // the name of b held by another uid: a duplicate; once b is removed, the new uid takes the name
    assert.equal(m.apply(delta([apiPod('b', '4')])).length, 0);
    assert.deepEqual(dups, ['4']);
    assert.deepEqual(ops(m.apply(delta([apiPod('b', '4')], [b]))), [['DELETE', ['b/2']], ['ADD', ['b/4']]]);
    assert.deepEqual(ops(m.apply(delta([], [apiPod('gone', '99')]))), [], 'removing an unknown uid changes nothing');
    assert.deepEqual(m.pods().map((p) => `${p.metadata.name}/${p.metadata.uid}`).sort(), ['a/1', 'b/4', 'c/3']);
    // a SET after deltas (a relist) compares against what the deltas left
    assert.deepEqual(ops(m.apply({ op: 'SET', source: 'api', pods: [a] })), [['DELETE', ['c/3', 'b/4']]]);
  });
});

void describe('deepEqual (the merge\'s change test)', () => {
  void it('compares JSON values as canonical JSON would', () => {
    assert.equal(deepEqual({ a: 1, b: [1, { c: 'x' }] }, { b: [1, { c: 'x' }], a: 1 }), true, 'key order does not count');
    assert.equal(deepEqual({ a: 1, u: undefined }, { a: 1 }), true, 'a key set to undefined is absent');
    assert.equal(deepEqual({ a: 1 }, { a: 1, b: 2 }), false);
    assert.equal(deepEqual({ a: [1, 2] }, { a: [2, 1] }), false, 'array order counts');
    assert.equal(deepEqual({ a: null }, { a: {} }), false);
    assert.equal(deepEqual(undefined, {}), false, 'absent differs from empty');
    assert.equal(deepEqual([], {}), false);
    assert.equal(deepEqual('1', 1), false);
  });
});

void describe('API pod source', () => {
  void it('emits a SET after the list and only the changes of each watch batch; mirrors apart', async () => {
    let watch: ServerResponse | undefined;
    const pod = (name: string, uid: string, rv: string, mirror = false): Json => ({
      metadata: { name, namespace: 'ns', uid, resourceVersion: rv, ...(mirror ? { annotations: { 'kubernetes.io/config.mirror': 'h' } } : {}) },
      spec: { nodeName: 'n1', containers: [{ name: 'c', image: 'i' }] },
    });
    const server = createServer((req, res) => {
      res.setHeader('content-type', 'application/json');
      if (!(req.url ?? '').includes('watch=true')) {
        res.end(JSON.stringify({ kind: 'PodList', metadata: { resourceVersion: '10' }, items: [pod('a', '1', '5'), pod('b', '2', '6'), pod('m', '3', '7', true)] }));
        return;
      }
      res.flushHeaders();
      watch = res;
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const client = new ApiClient({ server: `http://127.0.0.1:${(server.address() as { port: number }).port}` }, { qps: 0 });
    const seen: string[] = [];
    const mirrors: string[][] = [];
    const src = new ApiSource(client, {
      nodeName: 'n1',
      onSnapshot: (s) =>
        seen.push(s.op === 'SET' ? `SET ${s.pods.map((p) => p.metadata.name).join(',')}` : `DELTA -${s.removed.map((p) => p.metadata.name).join(',')} +${s.set.map((p) => `${p.metadata.name}${p.metadata.deletionTimestamp ? '(deleted)' : ''}`).join(',')}`),
      onMirrors: (m) => mirrors.push([...m.keys()]),
    });
    try {
      await src.start();
      assert.deepEqual(seen, ['SET a,b']);
      assert.deepEqual(mirrors, [['ns/m']]);
      await waitFor('the watch', () => watch);
      const send = (type: string, obj: Json) => watch!.write(JSON.stringify({ type, object: obj }) + '\n');
      send('ADDED', pod('c', '4', '11'));
      await waitFor('c', () => (seen.length === 2 ? true : undefined));
      assert.deepEqual(seen[1], 'DELTA - +c');
      send('MODIFIED', pod('c', '4', '12'));
      send('DELETED', pod('a', '1', '13'));
      await waitFor('a deleted', () => (seen.length === 4 ? true : undefined));
      assert.deepEqual(seen.slice(2), ['DELTA - +a(deleted)', 'DELTA -a +c']);
      assert.equal(mirrors.length, 1, 'no mirror changed: onMirrors not called again');
      send('DELETED', pod('m', '3', '14', true));
      await waitFor('mirror gone', () => (mirrors.length === 2 ? true : undefined));
      assert.deepEqual(mirrors[1], []);
      assert.equal(src.get('ns', 'c')?.metadata && (src.get('ns', 'c')!.metadata as Json).resourceVersion, '12');
    } finally {
      src.stop();
      client.close();
      server.closeAllConnections();
      server.close();
    }
  });
});

void describe('file source', () => {
  void it('reads a directory: regular files in name order, dot files ignored, invalid files skipped', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'orchlet-src-'));
    try {
      await writeFile(join(dir, 'b.yaml'), JSON.stringify(manifest('b')));
      await writeFile(join(dir, 'a.json'), JSON.stringify(manifest('a')));
      await writeFile(join(dir, '.hidden.yaml'), JSON.stringify(manifest('hidden')));
      await writeFile(join(dir, 'bad.yaml'), 'kind: Pod\n');
      const errors: string[] = [];
      const pods = await readManifestPath(dir, 'n', (p) => errors.push(p));
      assert.deepEqual(pods.map((p) => p.metadata.name), ['a-n', 'b-n']);
      assert.deepEqual(errors, [join(dir, 'bad.yaml')]);
      assert.deepEqual((await readManifestPath(join(dir, 'a.json'), 'n')).map((p) => p.metadata.name), ['a-n']);
      assert.deepEqual(await readManifestPath(join(dir, 'missing'), 'n'), []);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  void it('emits a snapshot at start and again when files change (watch)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'orchlet-src-'));
    const snaps: PodSet[] = [];
    const src = new FileSource({ path: dir, nodeName: 'n', periodMs: 0, onSnapshot: (s) => snaps.push(s), watchDebounceMs: 20 });
    try {
      await writeFile(join(dir, 'a.yaml'), JSON.stringify(manifest('a')));
      await src.start();
      assert.deepEqual(snaps.map((s) => s.pods.map((p) => p.metadata.name)), [['a-n']]);
      assert.equal(snaps[0]!.op, 'SET');
      assert.equal(snaps[0]!.source, 'file');
      await writeFile(join(dir, 'b.yaml'), JSON.stringify(manifest('b')));
      await waitFor('snapshot with b', () => (snaps.at(-1)?.pods.length === 2 ? true : undefined));
      await unlink(join(dir, 'a.yaml'));
      await waitFor('snapshot without a', () => (snaps.at(-1)?.pods.map((p) => p.metadata.name).join() === 'b-n' ? true : undefined));
    } finally {
      src.stop();
      await rm(dir, { recursive: true, force: true });
    }
  });

  void it('re-reads every period without watch events', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'orchlet-src-'));
    const snaps: PodSet[] = [];
    const src = new FileSource({ path: join(dir, 'one.yaml'), nodeName: 'n', periodMs: 50, onSnapshot: (s) => snaps.push(s) });
    try {
      await src.start();
      assert.deepEqual(snaps[0]!.pods, []);
      await waitFor('two more snapshots', () => (snaps.length >= 3 ? true : undefined));
    } finally {
      src.stop();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
