// End to end through kubectl: --allowed-unsafe-sysctls. A pod with an unsafe sysctl that is not allowed fails
// with reason SysctlForbidden (status message and Warning event as kubelet's sysctl admit handler); an allowed
// one is admitted.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startCluster, type TestCluster } from '../helpers/cluster.js';
import { startAgent, type TestAgent } from '../helpers/agent.js';
import { eventually } from '../helpers/eventually.js';
import { sysctlAllowlist } from '../../src/agent/sysctl.js';

type Json = Record<string, any>;

void describe('orchlet pod sysctls (kubectl)', () => {
  let c: TestCluster;
  let a: TestAgent;
  before(async () => {
    c = await startCluster();
    a = await startAgent(c, { extra: { sysctls: sysctlAllowlist(['kernel.msg*']) } });
  });
  after(async () => {
    await a?.stop();
    await c?.stop();
  });
  const create = async (name: string, sysctl: string) => {
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: 'default' },
      spec: {
        nodeName: a.nodeName,
        terminationGracePeriodSeconds: 1,
        securityContext: { sysctls: [{ name: sysctl, value: '1024' }] },
        containers: [{ name: 'main', image: 'busybox', command: ['sleep', '600'] }],
      },
    };
    const r = await c.kubectl(['create', '-f', '-'], { input: JSON.stringify(pod) });
    assert.equal(r.code, 0, r.stderr);
  };
  const get = async (name: string): Promise<Json | undefined> => {
    const r = await c.kubectl(['get', 'pod', name, '-o', 'json']);
    return r.code === 0 ? (JSON.parse(r.stdout) as Json) : undefined;
  };

  void it('fails a pod whose unsafe sysctl is not allowed with SysctlForbidden; admits an allowed one', async () => {
    await create('forbidden', 'net.core.somaxconn');
    await create('allowed', 'kernel.msgmax');
    const p = await eventually('pod forbidden Failed', async () => {
      const x = await get('forbidden');
      return x?.status?.phase === 'Failed' ? x : undefined;
    }, { timeoutMs: 20_000 });
    assert.equal(p.status.reason, 'SysctlForbidden');
    assert.equal(p.status.message, 'Pod forbidden sysctl: "net.core.somaxconn" not allowlisted');
    const ev = await eventually('the SysctlForbidden event', async () => {
      const r = await c.kubectl(['get', 'events', '--field-selector', 'involvedObject.name=forbidden', '-o', 'json']);
      return ((JSON.parse(r.stdout) as Json).items as Json[]).find((e) => e.reason === 'SysctlForbidden');
    });
    assert.equal(ev.type, 'Warning');
    assert.equal(ev.message, 'forbidden sysctl: "net.core.somaxconn" not allowlisted');
    await eventually('pod allowed Running', async () => (await get('allowed'))?.status?.phase === 'Running', { timeoutMs: 20_000 });
    await c.kubectl(['delete', 'pod', 'forbidden', 'allowed', '--wait=false']);
  });
});
