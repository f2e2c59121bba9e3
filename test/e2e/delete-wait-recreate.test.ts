// A pod deleted and at once created again under the same name (as the node agent does for a mirror pod a user
// deletes): the server's answers to `kubectl delete --wait` and to a watch by name resumed from before the delete.
//
// kubectl's wait for deletion (kubectl/pkg/cmd/wait, 1.27 to 1.33) compares UIDs only on its first GET; after
// that it lists by metadata.name (resourceVersion=0), waits for the informer to sync (polled every 100 ms),
// checks the store, and then waits for a DELETED event from the watch that starts at the list's resourceVersion.
// When the old object is deleted after its GET and the new one created before that store check, the DELETED
// event is at or before the list's resourceVersion and the store holds the new object: kubectl waits for ever,
// against Kubernetes too. These tests pin down what the server must answer so that kubectl succeeds whenever the
// deletion is not inside that window: here, after kubectl's watch has started.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { startCluster, kubectlPath, type TestCluster } from '../helpers/cluster.js';

type Json = Record<string, any>;

const pod = (name: string): Json => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name },
  // Bound to a node, so that a graceful delete only sets deletionTimestamp (the node's agent would finish it).
  spec: { nodeName: 'n1', containers: [{ name: 'c', image: 'busybox' }] },
});

void describe('delete --wait of a pod that is deleted and created again under the same name', () => {
  let c: TestCluster;
  before(async () => {
    c = await startCluster();
  });
  after(async () => {
    await c?.stop();
  });

  const create = async (name: string): Promise<Json> => {
    const r = await c.request('POST', '/api/v1/namespaces/default/pods', { body: pod(name) });
    assert.equal(r.status, 201, r.text);
    return r.json as Json;
  };
  /** What the agent does on seeing deletionTimestamp on a mirror pod: delete now, only that UID, then create. */
  const deleteAndRecreate = async (name: string, uid: string): Promise<Json> => {
    const d = await c.request('DELETE', `/api/v1/namespaces/default/pods/${name}`, { body: { gracePeriodSeconds: 0, preconditions: { uid } } });
    assert.equal(d.status, 200, d.text);
    return create(name);
  };

  void it('a watch by name resumed from before the deletion sees DELETED of the old UID, then ADDED of the new', async () => {
    const old = await create('resumed');
    const graceful = await c.request('DELETE', '/api/v1/namespaces/default/pods/resumed', { body: {} });
    assert.equal(graceful.status, 200, graceful.text);
    assert.ok(graceful.json.metadata.deletionTimestamp, 'a bound pod is deleted gracefully');
    const fresh = await deleteAndRecreate('resumed', old.metadata.uid);
    assert.notEqual(fresh.metadata.uid, old.metadata.uid);

    const sel = 'fieldSelector=metadata.name%3Dresumed';
    const list = await c.request('GET', `/api/v1/namespaces/default/pods?${sel}&resourceVersion=0`);
    assert.deepEqual(list.json.items.map((p: Json) => p.metadata.uid), [fresh.metadata.uid]);
    for (const [from, expected] of [
      [old.metadata.resourceVersion, ['MODIFIED', 'DELETED', 'ADDED']],
      [graceful.json.metadata.resourceVersion, ['DELETED', 'ADDED']],
    ] as const) {
      const w = await c.request('GET', `/api/v1/namespaces/default/pods?watch=true&${sel}&resourceVersion=${from}&timeoutSeconds=1`);
      assert.equal(w.status, 200, w.text);
      const events = w.text.split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l) as Json);
      assert.deepEqual(events.map((e) => e.type), expected, `watch from ${from}: ${w.text}`);
      const deleted = events.find((e) => e.type === 'DELETED')!;
      assert.equal(deleted.object.metadata.uid, old.metadata.uid);
      assert.ok(deleted.object.metadata.deletionTimestamp);
      assert.equal(events.at(-1)!.object.metadata.uid, fresh.metadata.uid);
    }
  });

  for (const version of [undefined, '1.27', '1.33']) {
    void it(`kubectl ${version ?? '(on PATH)'} delete --wait returns when the pod is recreated after its watch started`, async (t) => {
      const bin = kubectlPath(version);
      if (!bin) {
        if (process.env.CI === 'true') throw new Error(`kubectl ${version ?? ''} is not installed`);
        t.skip(`kubectl ${version ?? ''} is not installed`);
        return;
      }
      const name = `waited-${version?.replace('.', '-') ?? 'default'}`;
      const old = await create(name);
      const child = spawn(bin, ['--kubeconfig', c.kubeconfig, 'delete', 'pod', name, '--wait=true', '--timeout=60s', '-v=6'], {
        env: { ...process.env, HOME: c.dir, KUBECACHEDIR: join(c.dir, 'cache') },
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      let recreated: Promise<Json> | undefined;
      child.stderr.on('data', (d: Buffer) => {
        stderr += d.toString();
        // kubectl logs each response at -v=6; once its watch by name is open, the agent's part runs.
        if (!recreated && stderr.split('\n').some((l) => l.includes('watch=true') && l.includes('200 OK'))) recreated = deleteAndRecreate(name, old.metadata.uid);
      });
      const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
      assert.ok(recreated, `kubectl did not open its watch:\n${stderr}`);
      const fresh = await recreated;
      assert.equal(code, 0, stderr);
      assert.equal(stdout, `pod "${name}" deleted\n`);
      const now = await c.request('GET', `/api/v1/namespaces/default/pods/${name}`);
      assert.equal(now.json.metadata.uid, fresh.metadata.uid);
    });
  }
});
