// End to end: orchlet in API-server mode against a server this file starts, seen through kubectl.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:https';
import { createServer, type Server } from 'node:http';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startCluster, type TestCluster } from '../helpers/cluster.js';
import { startAgent, type TestAgent } from '../helpers/agent.js';
import { waitFor } from '../agent/runtime-contract.js';

type Json = Record<string, any>;

/** GET on the agent's main server (self-signed certificate), the body as text. */
function agentGet(agent: TestAgent, path: string, onChunk?: (text: string, stop: () => void) => void): Promise<{ code: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${agent.url}${path}`, { rejectUnauthorized: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        body += c;
        onChunk?.(body, () => {
          req.destroy();
          resolve({ code: res.statusCode ?? 0, body });
        });
      });
      res.on('end', () => resolve({ code: res.statusCode ?? 0, body }));
    });
    req.on('error', (err) => (req.destroyed ? undefined : reject(err)));
    req.end();
  });
}

void describe('orchlet in API-server mode (kubectl)', () => {
  let c: TestCluster;
  let a: TestAgent;
  let manifests: string;
  let urlServer: Server;
  let urlBody = '';
  const kubectlJSON = async (args: string[]): Promise<Json | undefined> => {
    const r = await c.kubectl([...args, '-o', 'json']);
    return r.code === 0 ? (JSON.parse(r.stdout) as Json) : undefined;
  };
  const getPod = (name: string) => kubectlJSON(['get', 'pod', name]);
  const create = async (obj: Json): Promise<void> => {
    const r = await c.kubectl(['create', '-f', '-'], { input: JSON.stringify(obj) });
    assert.equal(r.code, 0, r.stderr);
  };
  const pod = (name: string, script: string, spec: Json = {}): Json => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default' },
    spec: { nodeName: a.nodeName, terminationGracePeriodSeconds: 2, ...spec, containers: [{ name: 'main', image: 'busybox', command: ['sh', '-c', script] }] },
  });
  const waitPod = (name: string, what: string, check: (p: Json) => boolean, timeoutMs = 20_000) =>
    waitFor(`pod ${name}: ${what}`, async () => {
      const p = await getPod(name);
      return p && check(p) ? p : undefined;
    }, timeoutMs);

  before(async () => {
    c = await startCluster();
    manifests = join(c.dir, 'manifests');
    await mkdir(manifests);
    urlServer = createServer((req, res) => {
      if (req.headers['x-token'] !== 'secret') res.writeHead(403).end();
      else res.writeHead(200, { 'content-type': 'application/yaml' }).end(urlBody);
    });
    await new Promise<void>((r) => urlServer.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(urlServer.address() as { port: number }).port}/pods`;
    a = await startAgent(c, { podManifestPath: manifests, manifestURL: url, extra: { manifestURLHeaders: { 'X-Token': ['secret'] } } });
  });
  after(async () => {
    urlServer?.close();
    await a?.stop();
    await c?.stop();
  });

  void it('registers the node, which turns Ready, and renews its Lease', async () => {
    const node = await waitFor('node Ready', async () => {
      const n = await kubectlJSON(['get', 'node', a.nodeName]);
      return n?.status?.conditions?.find((x: Json) => x.type === 'Ready')?.status === 'True' ? n : undefined;
    });
    const ready = node.status.conditions.find((x: Json) => x.type === 'Ready');
    assert.equal(ready.reason, 'KubeletReady');
    assert.equal(ready.message, 'kubelet is posting ready status');
    assert.deepEqual(
      node.status.conditions.map((x: Json) => `${x.type}=${x.status}:${x.reason}`),
      ['MemoryPressure=False:KubeletHasSufficientMemory', 'DiskPressure=False:KubeletHasNoDiskPressure', 'PIDPressure=False:KubeletHasSufficientPID', 'Ready=True:KubeletReady'],
    );
    assert.equal(node.metadata.labels['kubernetes.io/hostname'], a.nodeName);
    assert.equal(node.metadata.labels['kubernetes.io/os'], 'linux');
    assert.equal(node.metadata.labels['beta.kubernetes.io/os'], 'linux');
    assert.ok(node.metadata.labels['kubernetes.io/arch']);
    assert.equal(node.status.daemonEndpoints.kubeletEndpoint.Port, a.agent.servers!.port);
    assert.deepEqual(node.status.addresses, [{ type: 'InternalIP', address: '127.0.0.1' }, { type: 'Hostname', address: a.nodeName }]);
    assert.equal(node.status.capacity.pods, '110');
    assert.match(node.status.nodeInfo.containerRuntimeVersion, /^orch:\/\//);
    assert.match(node.status.nodeInfo.kubeletVersion, /^v1\.23\./);
    const mem = (q: string): number => Number(q.replace(/Ki$/, '')) * (q.endsWith('Ki') ? 1024 : 1);
    // allocatable memory is capacity minus the 100Mi hard eviction threshold
    assert.equal(mem(node.status.capacity.memory) - mem(node.status.allocatable.memory), 100 * 1024 * 1024);
    const wide = await c.kubectl(['get', 'nodes', '-o', 'wide']);
    assert.match(wide.stdout, new RegExp(`${a.nodeName}\\s+Ready\\s`));

    const lease = await kubectlJSON(['get', 'lease', '-n', 'kube-node-lease', a.nodeName]);
    assert.ok(lease, 'the node lease exists');
    assert.equal(lease.spec.holderIdentity, a.nodeName);
    assert.equal(lease.spec.leaseDurationSeconds, 4);
    assert.match(lease.spec.renewTime, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    assert.deepEqual(lease.metadata.ownerReferences?.map((o: Json) => `${o.kind}/${o.name}/${o.uid}`), [`Node/${a.nodeName}/${node.metadata.uid}`]);
    await waitFor('the lease renewed', async () => {
      const l = await kubectlJSON(['get', 'lease', '-n', 'kube-node-lease', a.nodeName]);
      return l && l.spec.renewTime !== lease.spec.renewTime ? true : undefined;
    });
  });

  void it('runs a pod bound to the node: Running with Kubernetes status; kubectl logs and /containerLogs', async () => {
    await create(pod('hello', 'echo one; echo two; echo three; while sleep 0.2; do :; done'));
    const p = await waitPod('hello', 'Running', (x) => x.status?.phase === 'Running');
    assert.equal(p.status.podIP, '127.0.0.1');
    assert.deepEqual(p.status.podIPs, [{ ip: '127.0.0.1' }]);
    assert.equal(p.status.hostIP, '127.0.0.1');
    assert.equal(p.status.qosClass, 'BestEffort');
    assert.ok(p.status.startTime);
    assert.deepEqual(
      [...p.status.conditions].map((x: Json) => `${x.type}=${x.status}`).sort(),
      ['ContainersReady=True', 'Initialized=True', 'PodScheduled=True', 'Ready=True'],
    );
    const cs = p.status.containerStatuses[0];
    assert.equal(cs.ready, true);
    assert.equal(cs.started, true);
    assert.equal(cs.restartCount, 0);
    assert.match(cs.containerID, /^orch:\/\/[0-9a-f]{64}$/);
    assert.ok(cs.state.running.startedAt);
    const table = await c.kubectl(['get', 'pod', 'hello', '-o', 'wide']);
    assert.match(table.stdout, new RegExp(`hello\\s+1/1\\s+Running\\s+0\\s+\\S+\\s+127\\.0\\.0\\.1\\s+${a.nodeName}`));

    const logs = await waitFor('three log lines', async () => {
      const r = await agentGet(a, '/containerLogs/default/hello/main');
      return r.code === 200 && r.body.includes('three') ? r.body : undefined;
    });
    assert.equal(logs, 'one\ntwo\nthree\n');
    assert.equal((await agentGet(a, '/containerLogs/default/hello/main?tailLines=1')).body, 'three\n');
    // kubectl logs through the server's pods/log, which asks this agent
    const kl = await c.kubectl(['logs', 'hello']);
    assert.equal(kl.code, 0, kl.stderr);
    assert.equal(kl.stdout, 'one\ntwo\nthree\n');
    assert.equal((await c.kubectl(['logs', 'hello', '--tail=2'])).stdout, 'two\nthree\n');
    assert.match((await c.kubectl(['logs', 'hello', '-c', 'main', '--timestamps'])).stdout, /^\d{4}-\d\d-\d\dT[\d:.]+Z one\n/);
    const klPrev = await c.kubectl(['logs', 'hello', '--previous']);
    assert.notEqual(klPrev.code, 0);
    assert.match(klPrev.stderr, /previous terminated container "main" in pod "hello" not found/);
    assert.equal((await agentGet(a, '/containerLogs/default/hello/main?limitBytes=6')).body, 'one\ntw');
    assert.match((await agentGet(a, '/containerLogs/default/hello/main?timestamps=true')).body, /^\d{4}-\d\d-\d\dT[\d:.]+Z one\n/);
    assert.equal((await agentGet(a, '/containerLogs/default/hello/main?sinceTime=2999-01-01T00:00:00Z')).body, '');
    const previous = await agentGet(a, '/containerLogs/default/hello/main?previous=true');
    assert.equal(previous.code, 400);
    assert.equal(previous.body, 'previous terminated container "main" in pod "hello" not found');
    assert.equal((await agentGet(a, '/containerLogs/default/nope/main')).code, 404);
    assert.equal((await agentGet(a, '/containerLogs/default/hello/nope')).body, 'container "nope" not found in pod "hello"');
    assert.equal((await agentGet(a, '/containerLogs/default/hello/main?tailLines=-1')).code, 422);

    const events = await waitFor('Pulled, Created and Started events', async () => {
      const list = await kubectlJSON(['get', 'events', '--field-selector', 'involvedObject.name=hello']);
      const reasons = (list?.items ?? []).map((e: Json) => e.reason as string);
      return ['Pulled', 'Created', 'Started'].every((r) => reasons.includes(r)) ? (list!.items as Json[]) : undefined;
    });
    const started = events.find((e) => e.reason === 'Started')!;
    assert.equal(started.message, 'Started container main');
    assert.equal(started.type, 'Normal');
    assert.deepEqual(started.source, { component: 'kubelet', host: a.nodeName });
    assert.equal(started.involvedObject.fieldPath, 'spec.containers{main}');
    assert.equal(started.involvedObject.uid, p.metadata.uid);
    const describe = await c.kubectl(['describe', 'pod', 'hello']);
    assert.match(describe.stdout, /Normal\s+Started\s+\S+\s+kubelet\s+Started container main/);

    const podList = JSON.parse((await agentGet(a, '/pods')).body) as Json;
    assert.equal(podList.kind, 'PodList');
    assert.ok(podList.items.some((x: Json) => x.metadata.name === 'hello' && x.status.phase === 'Running'));
    assert.equal((await agentGet(a, '/healthz')).body, 'ok');
  });

  void it('follows a log (follow=true) and ends the stream when the container exits', async () => {
    await create(pod('ticker', 'for i in 1 2 3 4 5; do echo tick $i; sleep 0.3; done', { restartPolicy: 'Never' }));
    await waitPod('ticker', 'started', (x) => x.status?.containerStatuses?.[0]?.containerID !== undefined);
    const [r, kf] = await Promise.all([agentGet(a, '/containerLogs/default/ticker/main?follow=true'), c.kubectl(['logs', '-f', 'ticker'])]);
    assert.equal(r.body, 'tick 1\ntick 2\ntick 3\ntick 4\ntick 5\n');
    assert.equal(kf.code, 0, kf.stderr);
    assert.equal(kf.stdout, 'tick 1\ntick 2\ntick 3\ntick 4\ntick 5\n', 'kubectl logs -f');
    const done = await waitPod('ticker', 'Succeeded', (x) => x.status?.phase === 'Succeeded');
    assert.equal(done.status.containerStatuses[0].state.terminated.reason, 'Completed');
    assert.equal(done.status.conditions.find((x: Json) => x.type === 'Ready').reason, 'PodCompleted');
  });

  void it('applies restart policies as Kubernetes does', async () => {
    await create(pod('never', 'echo bye; exit 3', { restartPolicy: 'Never' }));
    await create(pod('onfailure', 'echo fail; exit 1', { restartPolicy: 'OnFailure' }));
    await create(pod('always', 'echo done; exit 0', { restartPolicy: 'Always' }));
    const never = await waitPod('never', 'Failed', (x) => x.status?.phase === 'Failed');
    assert.equal(never.status.containerStatuses[0].state.terminated.exitCode, 3);
    assert.equal(never.status.containerStatuses[0].state.terminated.reason, 'Error');
    assert.equal(never.status.containerStatuses[0].restartCount, 0);
    const onFailure = await waitPod('onfailure', 'CrashLoopBackOff after restarts', (x) => {
      const s = x.status?.containerStatuses?.[0];
      return s?.restartCount >= 1 && s?.state?.waiting?.reason === 'CrashLoopBackOff';
    });
    assert.equal(onFailure.status.phase, 'Running');
    await waitFor('a BackOff event', async () => {
      const list = await kubectlJSON(['get', 'events', '--field-selector', 'involvedObject.name=onfailure,reason=BackOff']);
      const e = list?.items?.[0];
      return e?.type === 'Warning' && e.message === 'Back-off restarting failed container' ? true : undefined;
    });
    assert.equal(onFailure.status.containerStatuses[0].lastState.terminated.exitCode, 1);
    const prev = await agentGet(a, '/containerLogs/default/onfailure/main?previous=true');
    assert.equal(prev.body, 'fail\n');
    assert.equal((await c.kubectl(['logs', 'onfailure', '--previous'])).stdout, 'fail\n');
    const always = await waitPod('always', 'restarted after success', (x) => x.status?.containerStatuses?.[0]?.restartCount >= 1);
    assert.equal(always.status.phase, 'Running');
    assert.equal(always.status.containerStatuses[0].lastState.terminated?.reason ?? always.status.containerStatuses[0].state.terminated?.reason, 'Completed');
    for (const name of ['never', 'onfailure', 'always']) assert.equal((await c.kubectl(['delete', 'pod', name, '--wait=true'])).code, 0);
  });

  void it('deleting a pod stops its container within the grace period and the pod disappears', async () => {
    await create(pod('doomed', 'trap "echo got TERM; exit 0" TERM; while sleep 0.1; do :; done'));
    const p = await waitPod('doomed', 'Running', (x) => x.status?.phase === 'Running');
    const id = String(p.status.containerStatuses[0].containerID).replace('orch://', '');
    const r = await c.kubectl(['delete', 'pod', 'doomed', '--wait=true'], { timeoutMs: 30_000 });
    assert.equal(r.code, 0, r.stderr);
    assert.equal((await c.kubectl(['get', 'pod', 'doomed'])).code, 1);
    await waitFor('the container is gone', async () => ((await a.agent.runtime.listContainers({ id })).length === 0 ? true : undefined));
    await waitFor('the pod worker is gone', () => (a.agent.workers.state(String(p.metadata.uid)) === undefined ? true : undefined));
  });

  void it('static pods from a directory get mirror pods that survive deletion', async () => {
    const manifest = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'static-web', labels: { app: 'web' } }, spec: { containers: [{ name: 'web', image: 'busybox', command: ['sh', '-c', 'echo static; exec sleep 600'] }] } };
    await writeFile(join(manifests, 'web.yaml'), JSON.stringify(manifest));
    const mirrorName = `static-web-${a.nodeName}`;
    const mirror = await waitPod(mirrorName, 'Running mirror', (x) => x.status?.phase === 'Running', 30_000);
    const ann = mirror.metadata.annotations;
    assert.equal(ann['kubernetes.io/config.source'], 'file');
    assert.match(ann['kubernetes.io/config.hash'], /^[0-9a-f]{32}$/);
    assert.equal(ann['kubernetes.io/config.mirror'], ann['kubernetes.io/config.hash']);
    assert.ok(ann['kubernetes.io/config.seen']);
    const node = await kubectlJSON(['get', 'node', a.nodeName]);
    assert.deepEqual(mirror.metadata.ownerReferences, [{ apiVersion: 'v1', kind: 'Node', name: a.nodeName, uid: node!.metadata.uid, controller: true }]);
    assert.equal(mirror.metadata.labels.app, 'web');
    const containerID = mirror.status.containerStatuses[0].containerID;

    // Not --wait: the agent deletes the mirror and creates the next one at once (as kubelet does in one
    // syncPod). kubectl's wait for deletion (1.27 to 1.33) compares UIDs only on its first GET; it then lists
    // by name, checks its store after the informer's 100 ms sync poll and waits for a DELETED event from the
    // list's resourceVersion on. A recreation between that GET and that check leaves it holding the new mirror
    // with the DELETED event already behind it, so it waits for ever, against Kubernetes too: kubectl's race,
    // not the server's (the server's answers are pinned down in delete-wait-recreate.test.ts).
    assert.equal((await c.kubectl(['delete', 'pod', mirrorName, '--wait=false'])).code, 0);
    const again = await waitPod(mirrorName, 'recreated', (x) => x.metadata.uid !== mirror.metadata.uid && x.status?.phase === 'Running', 30_000);
    assert.equal(again.status.containerStatuses[0].containerID, containerID, 'the static pod kept running');
    assert.equal(again.status.containerStatuses[0].restartCount, 0);

    await rm(join(manifests, 'web.yaml'));
    await waitFor('mirror removed with the manifest', async () => ((await c.kubectl(['get', 'pod', mirrorName])).code !== 0 ? true : undefined), 30_000);
  });

  void it('static pods from --manifest-url and from the agent\'s manifest endpoint get mirror pods', async () => {
    urlBody = ['apiVersion: v1', 'kind: Pod', 'metadata: {name: from-url}', 'spec:', '  containers:', '  - {name: c, image: busybox, command: [sleep, "600"]}'].join('\n');
    const fromURL = await waitPod(`from-url-${a.nodeName}`, 'Running mirror', (x) => x.status?.phase === 'Running', 30_000);
    assert.equal(fromURL.metadata.annotations['kubernetes.io/config.source'], 'http');

    const put = (body: string): Promise<{ code: number; body: string }> =>
      new Promise((resolve, reject) => {
        const req = request(`${a.url}/manifests/pushed`, { method: 'PUT', rejectUnauthorized: false }, (res) => {
          let text = '';
          res.on('data', (d: Buffer) => (text += d.toString()));
          res.on('end', () => resolve({ code: res.statusCode ?? 0, body: text }));
        });
        req.on('error', reject);
        req.end(body);
      });
    assert.equal((await put('kind: Pod\n')).code, 400, 'an invalid manifest is refused');
    const created = await put(JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'pushed' }, spec: { containers: [{ name: 'c', image: 'busybox', command: ['sleep', '600'] }] } }));
    assert.equal(created.code, 201, created.body);
    const pushed = await waitPod(`pushed-${a.nodeName}`, 'Running mirror', (x) => x.status?.phase === 'Running', 30_000);
    assert.equal(pushed.metadata.annotations['kubernetes.io/config.source'], 'push');
    const listed = JSON.parse((await agentGet(a, '/manifests')).body) as Json;
    assert.deepEqual(listed.items.map((i: Json) => i.metadata.name), ['pushed']);
    const del = await new Promise<number>((resolve, reject) => {
      const req = request(`${a.url}/manifests/pushed`, { method: 'DELETE', rejectUnauthorized: false }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end();
    });
    assert.equal(del, 200);
    urlBody = '';
    await waitFor('both mirrors gone', async () => {
      const gone = (await c.kubectl(['get', 'pod', `pushed-${a.nodeName}`])).code !== 0 && (await c.kubectl(['get', 'pod', `from-url-${a.nodeName}`])).code !== 0;
      return gone ? true : undefined;
    }, 30_000);
  });

  void it('registers the node again when it is deleted, with a new Lease', async () => {
    const before = await kubectlJSON(['get', 'node', a.nodeName]);
    assert.equal((await c.kubectl(['delete', 'node', a.nodeName, '--wait=true'])).code, 0);
    const after = await waitFor('the node is back and Ready', async () => {
      const n = await kubectlJSON(['get', 'node', a.nodeName]);
      const ready = n?.status?.conditions?.find((x: Json) => x.type === 'Ready')?.status === 'True';
      return n && n.metadata.uid !== before!.metadata.uid && ready ? n : undefined;
    }, 20_000);
    await waitFor('a Lease owned by the new Node', async () => {
      const l = await kubectlJSON(['get', 'lease', '-n', 'kube-node-lease', a.nodeName]);
      return l?.metadata?.ownerReferences?.[0]?.uid === after.metadata.uid ? true : undefined;
    }, 20_000);
  });
});
