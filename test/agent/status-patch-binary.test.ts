// The real bin/orchlet (process runtime, API-server mode) against the real bin/orch-apiserver: the
// pod status PATCHes it sends, as the server's audit log records their bodies, are kubelet's two-way
// patches: metadata.uid, and once the pod runs, a later transition (the container exits) carries
// only what changed: no unchanged hostIP, podIP, startTime or qosClass; the conditions that changed,
// by type, with $setElementOrder/conditions.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startBinCluster, type BinCluster } from '../helpers/binserver.js';
import { eventually } from '../helpers/eventually.js';
import { freePort } from '../helpers/ports.js';
import { loopbackAgentArgs, spawnOrchlet, type OrchletProcess } from '../helpers/orchlet-process.js';

type Json = Record<string, any>;

void describe('status patches of bin/orchlet, from the audit log', () => {
  let c: BinCluster;
  let dir = '';
  let agent: OrchletProcess | undefined;
  const NODE = `stpatch-${process.pid}`;
  let auditLog = '';

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'orch-status-patch-'));
    const policy = join(dir, 'policy.yaml');
    await writeFile(
      policy,
      ['apiVersion: audit.k8s.io/v1', 'kind: Policy', 'omitStages: [RequestReceived]', 'rules:', '- level: Request', '  resources:', '  - group: ""', '    resources: [pods/status]', '- level: None', ''].join('\n'),
    );
    auditLog = join(dir, 'audit.log');
    c = await startBinCluster([`--audit-policy-file=${policy}`, `--audit-log-path=${auditLog}`]);
    agent = spawnOrchlet([
      `--orchconfig=${c.kubeconfig}`,
      ...loopbackAgentArgs({ node: NODE, dir, port: await freePort() }),
    ]);
  });

  after(async () => {
    if (agent && agent.child.exitCode === null) {
      agent.child.kill('SIGTERM');
      await agent.exited;
    }
    await c?.server.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  void it('sends metadata.uid and, after Running, only the fields that changed', async (t) => {
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'exits', namespace: 'default' },
      spec: { nodeName: NODE, restartPolicy: 'Never', containers: [{ name: 'c', image: 'busybox', command: ['sh', '-c', 'sleep 3; exit 3'] }] },
    };
    const created = await c.request('POST', '/api/v1/namespaces/default/pods', { body: pod });
    assert.equal(created.status, 201, created.text);
    const uid = String((created.json as Json).metadata.uid);
    const patches = await eventually(
      'a Failed status patch in the audit log',
      async () => {
        const events = (await readFile(auditLog, 'utf8').catch(() => ''))
          .split('\n')
          .filter((l) => l !== '')
          .map((l) => JSON.parse(l) as Json)
          .filter((e) => e.stage === 'ResponseComplete' && e.verb === 'patch' && e.objectRef?.subresource === 'status' && e.objectRef?.name === 'exits');
        return events.some((e) => e.requestObject?.status?.phase === 'Failed') ? events : undefined;
      },
      { timeoutMs: 60_000 },
    ).catch((err: unknown) => {
      throw new Error(`${String(err)}\norchlet stderr:\n${agent?.stderr() ?? ''}`);
    });
    for (const e of patches) t.diagnostic(JSON.stringify(e.requestObject));
    for (const e of patches) {
      assert.equal(e.responseStatus?.code, 200);
      assert.deepEqual(e.requestObject.metadata, { uid });
    }
    const running = patches.findIndex((e) => e.requestObject.status.phase === 'Running');
    const failed = patches.findIndex((e) => e.requestObject.status.phase === 'Failed');
    assert.ok(running >= 0 && failed > running, `Running then Failed: ${JSON.stringify(patches.map((e) => e.requestObject))}`);
    const last = patches[failed]!.requestObject.status as Json;
    for (const k of ['hostIP', 'podIP', 'podIPs', 'startTime', 'qosClass']) assert.equal(k in last, false, `${k} unchanged, not sent: ${JSON.stringify(last)}`);
    assert.deepEqual(last['$setElementOrder/conditions'], [{ type: 'Initialized' }, { type: 'Ready' }, { type: 'ContainersReady' }, { type: 'PodScheduled' }]);
    for (const cond of last.conditions as Json[]) assert.ok(['Ready', 'ContainersReady'].includes(cond.type), `only the changed conditions: ${JSON.stringify(last.conditions)}`);
    assert.equal((last.containerStatuses as Json[])[0]!.state.terminated.exitCode, 3);
    // the server merged it into the whole status
    const stored = (await c.request('GET', '/api/v1/namespaces/default/pods/exits')).json as Json;
    assert.equal(stored.status.phase, 'Failed');
    assert.equal(stored.status.podIP, '127.0.0.1');
    assert.deepEqual((stored.status.conditions as Json[]).map((x) => x.type), ['Initialized', 'Ready', 'ContainersReady', 'PodScheduled']);
  });
});
