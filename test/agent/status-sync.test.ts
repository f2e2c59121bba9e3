// Status posting against a fake API server that records each pod status PATCH: one post per pod for
// pods that turn Running together, changes made while a post waits for the rate limiter folded into
// that post, nothing re-sent when the status did not change, the PATCH body (uid precondition, fields
// to clear), and no more posts in flight than the concurrency allows.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { ApiClient, type Json } from '../../src/agent/client/client.js';
import { TokenBucket } from '../../src/agent/client/ratelimit.js';
import { StatusManager } from '../../src/agent/status-manager.js';
import { StatusSync } from '../../src/agent/status-sync.js';
import type { Pod, PodStatus } from '../../src/agent/types.js';
import { waitFor } from './runtime-contract.js';

interface Patch {
  path: string;
  body: Json;
}

async function fakeServer(hold?: (release: () => void) => void) {
  const patches: Patch[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      const answer = (): void => {
        inFlight--;
        patches.push({ path: req.url ?? '', body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Json });
        res.setHeader('content-type', 'application/json');
        res.end('{}');
      };
      if (hold) hold(answer);
      else answer();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    patches,
    maxInFlight: () => maxInFlight,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

const pod = (name: string): Pod => ({ metadata: { name, namespace: 'ns', uid: `uid-${name}` }, spec: { containers: [{ name: 'c', image: 'i' }] } }) as unknown as Pod;
const status = (phase: string, extra: Partial<PodStatus> = {}): PodStatus => ({ phase, conditions: [], containerStatuses: [], ...extra }) as unknown as PodStatus;

function setup(client: ApiClient, current: Json = {}, concurrency?: number) {
  const statusManager = new StatusManager();
  const sync = new StatusSync({
    client,
    statusManager,
    target: (p) => ({ namespace: p.metadata.namespace, name: p.metadata.name, uid: p.metadata.uid, current }),
    log: () => {},
    ...(concurrency !== undefined ? { concurrency } : {}),
  });
  sync.start();
  return { statusManager, sync };
}

void describe('status posting', () => {
  void it('posts each of 100 pods that turn Running together once, and a status again only when it changed', async () => {
    const s = await fakeServer();
    const client = new ApiClient({ server: s.url }, { qps: 0 });
    const { statusManager, sync } = setup(client);
    try {
      const pods = Array.from({ length: 100 }, (_, i) => pod(`p${i}`));
      for (const p of pods) statusManager.setPodStatus(p, status('Running'));
      await waitFor('100 posts', () => (s.patches.length >= 100 ? true : undefined));
      assert.deepEqual(new Set(s.patches.map((x) => x.path)).size, 100);
      statusManager.setPodStatus(pods[0]!, status('Running')); // the same status: no change, no post
      sync.mark(pods[1]!.metadata.uid); // asked again, nothing new to send
      statusManager.setPodStatus(pods[2]!, status('Succeeded'));
      await waitFor('the changed pod', () => (s.patches.length >= 101 ? true : undefined));
      await new Promise((r) => setTimeout(r, 50));
      assert.equal(s.patches.length, 101);
      assert.equal(s.patches[100]!.path, '/api/v1/namespaces/ns/pods/p2/status');
      assert.equal((s.patches[100]!.body.status as Json).phase, 'Succeeded');
    } finally {
      sync.stop();
      client.close();
      s.close();
    }
  });

  void it('folds the changes made while a post waits for the rate limiter into that post', async () => {
    const s = await fakeServer();
    let now = 0;
    // one token at once, then one per 100 ms of the fake clock (the bucket's timer still waits 100 ms of real time)
    const client = new ApiClient({ server: s.url }, {}, new TokenBucket(10, 1, () => now));
    const { statusManager, sync } = setup(client);
    try {
      const a = pod('a');
      statusManager.setPodStatus(a, status('Pending')); // takes the one token
      await waitFor('the first post', () => (s.patches.length >= 1 ? true : undefined));
      statusManager.setPodStatus(a, status('Running'));
      statusManager.setPodStatus(a, status('Running', { podIP: '10.0.0.1' }));
      statusManager.setPodStatus(a, status('Running', { podIP: '10.0.0.2' }));
      assert.equal(client.limiter.waiting, 1, 'one post waits for a token, not one per change');
      now = 1000;
      await waitFor('the second post', () => (s.patches.length >= 2 ? true : undefined));
      await new Promise((r) => setTimeout(r, 250));
      assert.deepEqual(
        s.patches.map((x) => { const st = x.body.status as { phase?: string; podIP?: string }; return `${st.phase ?? ''} ${st.podIP ?? ''}`; }),
        ['Pending ', 'Running 10.0.0.2'],
      );
    } finally {
      sync.stop();
      client.close();
      s.close();
    }
  });

  void it('sends the uid and clears fields the server has that the status does not set; keeps to its concurrency', async () => {
    const held: (() => void)[] = [];
    const s = await fakeServer((release) => held.push(release));
    const client = new ApiClient({ server: s.url }, { qps: 0 });
    const { statusManager, sync } = setup(client, { phase: 'Pending', message: 'old', nominatedNodeName: 'n1' }, 4);
    try {
      for (let i = 0; i < 10; i++) statusManager.setPodStatus(pod(`q${i}`), status('Running'));
      await waitFor('4 posts held', () => (held.length >= 4 ? true : undefined));
      await new Promise((r) => setTimeout(r, 50));
      assert.equal(held.length, 4, 'no more than 4 in flight');
      while (s.patches.length < 10) {
        held.splice(0).forEach((release) => release());
        await new Promise((r) => setTimeout(r, 10));
      }
      assert.equal(s.maxInFlight(), 4);
      const body = s.patches[0]!.body;
      assert.deepEqual((body.metadata as Json).uid, `uid-${/pods\/(q\d+)\//.exec(s.patches[0]!.path)![1]}`);
      assert.equal((body.status as Json).message, null, 'message cleared');
      assert.equal('nominatedNodeName' in (body.status as Json), false, 'nominatedNodeName is not ours to clear');
    } finally {
      held.splice(0).forEach((release) => release());
      sync.stop();
      client.close();
      s.close();
    }
  });
});
