/**
 * Nodes through the kubectl on PATH: apply, the status subresource, get (default and wide tables),
 * cordon / uncordon, the spec.unschedulable field selector, and delete, against a server this test starts.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { requireBinary } from '../helpers/binaries.js';
import { startCluster, type TestCluster } from '../helpers/cluster.js';

const present = requireBinary(undefined, 'kubectl') !== null;
if (!present && process.env.CI === 'true') throw new Error('kubectl is required under CI=true');
const skip = !present && 'kubectl not installed';

describe('kubectl: nodes', () => {
  let c: TestCluster;
  const k = (args: string[], input?: string) => c.kubectl(args, input !== undefined ? { input } : {});
  const ok = async (args: string[], input?: string) => {
    const r = await k(args, input);
    assert.equal(r.code, 0, `kubectl ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };
  const json = async (args: string[]) => JSON.parse(await ok([...args, '-o', 'json']));

  before(async () => {
    // The node's spec is compared whole: TaintNodesByCondition's taint (lifted by a controller later) is left out.
    if (present) c = await startCluster(['--disable-admission-plugins=TaintNodesByCondition']);
  });
  after(async () => c?.stop());

  it('apply, status subresource, get, cordon, field selector, delete', { skip }, async () => {
    const manifest = JSON.stringify({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: 'n1', labels: { 'node-role.kubernetes.io/worker': '' } },
      spec: { podCIDR: '10.244.0.0/24' },
    });
    assert.match(await ok(['apply', '-f', '-'], manifest), /node\/n1 created/);
    assert.match(await ok(['get', 'nodes']), /^NAME\s+STATUS\s+ROLES\s+AGE\s+VERSION\nn1\s+Unknown\s+worker\s+\S+\s*\n$/);

    const status = {
      status: {
        conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'kubelet is posting ready status' }],
        addresses: [
          { type: 'InternalIP', address: '10.0.0.5' },
          { type: 'Hostname', address: 'n1' },
        ],
        capacity: { cpu: '4000m', memory: '8Gi', pods: '110' },
        nodeInfo: { kubeletVersion: 'v1.23.17', osImage: 'Ubuntu 22.04.3 LTS', kernelVersion: '5.15.0-88-generic', containerRuntimeVersion: 'containerd://1.7.2' },
      },
    };
    await ok(['patch', 'node', 'n1', '--subresource=status', '--type=merge', '-p', JSON.stringify(status)]);
    const n = await json(['get', 'node', 'n1']);
    assert.deepEqual(n.spec, { podCIDR: '10.244.0.0/24', podCIDRs: ['10.244.0.0/24'] });
    assert.deepEqual(n.status.capacity, { cpu: '4', memory: '8Gi', pods: '110' });
    assert.equal(n.status.nodeInfo.kubeletVersion, 'v1.23.17');

    // The main resource keeps status; the status subresource keeps spec.
    await ok(['patch', 'node', 'n1', '--type=merge', '-p', '{"status":{"nodeInfo":{"kubeletVersion":"v0"}}}']);
    await ok(['patch', 'node', 'n1', '--subresource=status', '--type=merge', '-p', '{"spec":{"unschedulable":true}}']);
    const kept = await json(['get', 'no', 'n1']);
    assert.equal(kept.status.nodeInfo.kubeletVersion, 'v1.23.17');
    assert.equal(kept.spec.unschedulable, undefined);

    assert.match(await ok(['get', 'nodes']), /^NAME\s+STATUS\s+ROLES\s+AGE\s+VERSION\nn1\s+Ready\s+worker\s+\S+\s+v1\.23\.17\n$/);
    assert.match(
      await ok(['get', 'nodes', '-o', 'wide']),
      /^NAME\s+STATUS\s+ROLES\s+AGE\s+VERSION\s+INTERNAL-IP\s+EXTERNAL-IP\s+OS-IMAGE\s+KERNEL-VERSION\s+CONTAINER-RUNTIME\nn1\s+Ready\s+worker\s+\S+\s+v1\.23\.17\s+10\.0\.0\.5\s+<none>\s+Ubuntu 22\.04\.3 LTS\s+5\.15\.0-88-generic\s+containerd:\/\/1\.7\.2\n$/,
    );

    assert.match(await ok(['cordon', 'n1']), /node\/n1 cordoned/);
    assert.equal((await json(['get', 'node', 'n1'])).spec.unschedulable, true);
    assert.match(await ok(['get', 'nodes']), /\nn1\s+Ready,SchedulingDisabled\s+worker\s+/);
    assert.equal((await ok(['get', 'nodes', '--field-selector', 'spec.unschedulable=true', '-o', 'name'])).trim(), 'node/n1');
    assert.equal((await ok(['get', 'nodes', '--field-selector', 'spec.unschedulable=false', '-o', 'name'])).trim(), '');
    assert.match(await ok(['uncordon', 'n1']), /node\/n1 uncordoned/);
    assert.match(await ok(['get', 'nodes']), /\nn1\s+Ready\s+worker\s+/);

    const bad = await k(['patch', 'node', 'n1', '--type=merge', '-p', '{"spec":{"taints":[{"key":"a","effect":"Never"}]}}']);
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /Node "n1" is invalid: metadata\.taints\[0\]\.effect: Unsupported value: "Never"/);

    assert.match(await ok(['delete', 'node', 'n1']), /node "n1" deleted/);
    assert.equal((await ok(['get', 'nodes', '-o', 'name'])).trim(), '');
  });
});
