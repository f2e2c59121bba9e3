// End to end: kubectl exec, attach and port-forward through the server's pods/exec, pods/attach and
// pods/portforward to an orchlet with the built-in process runtime, which serves the WebSocket channel
// protocols itself (v5.channel.k8s.io, kubectl 1.30 and later); SPDY/3.1 is not served by it yet.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { kubectlPath, startCluster, type TestCluster } from '../helpers/cluster.js';
import { startAgent, type TestAgent } from '../helpers/agent.js';
import { waitFor } from '../agent/runtime-contract.js';

type Json = Record<string, any>;

/** kubectl versions that speak WebSocket (v5.channel.k8s.io) for exec: the newest present. */
const VERSIONS = ['1.33'].filter((v) => kubectlPath(v) !== null);

void describe('kubectl exec and attach on the process runtime', () => {
  let c: TestCluster;
  let a: TestAgent;
  const pod = (name: string, command: string[], spec: Json = {}): Json => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default' },
    spec: { nodeName: a.nodeName, terminationGracePeriodSeconds: 1, automountServiceAccountToken: false, ...spec, containers: [{ name: 'main', image: 'busybox', command }] },
  });
  const create = async (obj: Json): Promise<void> => {
    const r = await c.kubectl(['create', '-f', '-'], { input: JSON.stringify(obj) });
    assert.equal(r.code, 0, r.stderr);
  };
  const waitRunning = (name: string) =>
    waitFor(`pod ${name} Running`, async () => {
      const r = await c.kubectl(['get', 'pod', name, '-o', 'json']);
      const p = r.code === 0 ? (JSON.parse(r.stdout) as Json) : undefined;
      return p?.status?.containerStatuses?.[0]?.state?.running ? p : undefined;
    }, 20_000);

  before(async () => {
    c = await startCluster();
    a = await startAgent(c);
    await create(pod('shell', ['sh', '-c', 'echo ready; exec sleep 600']));
    await waitRunning('shell');
  });
  after(async () => {
    await a?.stop();
    await c?.stop();
  });

  for (const version of VERSIONS) {
    void it(`kubectl ${version} exec: output, error output and the exit code`, async () => {
      const r = await c.kubectl(['exec', 'shell', '--', 'sh', '-c', 'echo out; echo err >&2; exit 3'], { version });
      assert.equal(r.code, 3, r.stderr);
      assert.equal(r.stdout, 'out\n');
      assert.match(r.stderr, /^err$/m);
      const ok = await c.kubectl(['exec', 'shell', '--', 'sh', '-c', 'echo fine'], { version });
      assert.equal(ok.code, 0, ok.stderr);
      assert.equal(ok.stdout, 'fine\n');
    });

    void it(`kubectl ${version} exec -i: stdin reaches the command, and its end too`, async () => {
      const r = await c.kubectl(['exec', '-i', 'shell', '--', 'sh', '-c', 'while read l; do echo "got $l"; done; echo done'], { version, input: 'one\ntwo\n' });
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, 'got one\ngot two\ndone\n');
    });
  }

  void it('refuses what Kubernetes refuses: no upgrade, an unknown container, a pod without a node', async () => {
    const plain = await c.request('POST', '/api/v1/namespaces/default/pods/shell/exec?command=true');
    assert.equal(plain.status, 400);
    assert.equal(plain.json?.message, 'Upgrade request required');
    const wrong = await c.kubectl(['exec', 'shell', '-c', 'nope', '--', 'true']);
    assert.notEqual(wrong.code, 0);
    assert.match(wrong.stderr, /container nope is not valid for pod shell/);
    await create({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'unbound' }, spec: { containers: [{ name: 'main', image: 'busybox', command: ['true'] }] } });
    const unbound = await c.request('POST', '/api/v1/namespaces/default/pods/unbound/exec?command=true', { headers: { connection: 'Upgrade', upgrade: 'SPDY/3.1' } });
    assert.equal(unbound.status, 400);
    assert.equal(unbound.json?.message, 'pod unbound does not have a host assigned');
  });

  void it('kubectl attach shows what the container prints while attached', async () => {
    await create(pod('talker', ['sh', '-c', 'i=0; while [ $i -lt 40 ]; do echo "tick $i"; i=$((i+1)); sleep 0.1; done'], { restartPolicy: 'Never' }));
    await waitRunning('talker');
    const r = await c.kubectl(['attach', 'talker']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /tick 39\n$/);
  });

  void it('an SPDY-only kubectl (before 1.30) is told that this runtime serves WebSocket only', async (t) => {
    if (kubectlPath('1.27') === null) return t.skip('kubectl 1.27 is not installed');
    const r = await c.kubectl(['exec', 'shell', '--', 'true'], { version: '1.27' });
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /SPDY\/3\.1 is not served by the orch process runtime/);
  });
});
