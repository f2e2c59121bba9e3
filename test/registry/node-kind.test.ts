/**
 * Node: the strategy (status and spec kept by the right endpoint, configSource dropped, podCIDR conversion),
 * the validation messages of Kubernetes 1.23, the table cells and the protobuf round trip.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ALL_DEFINITIONS, BUILTIN_KINDS, nodeKind } from '../../src/registry/kinds/index.js';
import { decodeKubernetesProtobuf, encodeKubernetesProtobuf } from '../../src/registry/protobuf.js';
import { tableCells, tableColumnDefinitions } from '../../src/endpoints/table.js';
import type { KObject, StrategyContext } from '../../src/registry/kind.js';
import type { FieldError } from '../../src/util/validation.js';

const CTX: StrategyContext = { featureGates: {}, namespace: '', subresource: '' };
const STATUS_CTX: StrategyContext = { ...CTX, subresource: 'status' };
const msgs = (errs: FieldError[]) => errs.map((e) => e.toString());

function create(obj: KObject, ctx = CTX): { obj: KObject; errs: string[] } {
  nodeKind.strategy.prepareForCreate?.(obj, ctx);
  nodeKind.strategy.default?.(obj, ctx);
  const errs = msgs(nodeKind.strategy.validate(obj, ctx));
  if (errs.length === 0) nodeKind.strategy.canonicalize?.(obj);
  return { obj, errs };
}

function update(obj: KObject, old: KObject, ctx = CTX): { obj: KObject; errs: string[] } {
  nodeKind.strategy.prepareForUpdate?.(obj, old, ctx);
  nodeKind.strategy.default?.(obj, ctx);
  const errs = msgs(nodeKind.strategy.validateUpdate(obj, old, ctx));
  if (errs.length === 0) nodeKind.strategy.canonicalize?.(obj);
  return { obj, errs };
}

function updateStatus(obj: KObject, old: KObject, ctx = STATUS_CTX): { obj: KObject; errs: string[] } {
  const sub = nodeKind.subresources!.status!;
  sub.prepareForUpdate(obj, old, ctx);
  nodeKind.strategy.default?.(obj, ctx);
  const errs = msgs(sub.validateUpdate(obj, old, ctx));
  if (errs.length === 0) nodeKind.strategy.canonicalize?.(obj);
  return { obj, errs };
}

const node = (spec: Record<string, unknown> = {}, status: Record<string, unknown> = {}, labels?: Record<string, string>): KObject => ({
  apiVersion: 'v1',
  kind: 'Node',
  metadata: { name: 'n1', ...(labels ? { labels } : {}) },
  spec,
  status,
});

function stored(obj: KObject): KObject {
  const { obj: out, errs } = create(obj);
  assert.deepEqual(errs, []);
  out.metadata = { ...out.metadata, uid: 'u1', resourceVersion: '5', creationTimestamp: '2024-01-01T00:00:00Z' };
  return out;
}

const READY = { type: 'Ready', status: 'True', reason: 'KubeletReady' };

describe('Node', () => {
  it('declaration', () => {
    assert.ok(BUILTIN_KINDS.includes(nodeKind));
    assert.equal(nodeKind.resource, 'nodes');
    assert.equal(nodeKind.namespaced, false);
    assert.deepEqual(nodeKind.shortNames, ['no']);
    assert.ok(nodeKind.subresources?.status);
    const status = ALL_DEFINITIONS['io.k8s.api.core.v1.NodeStatus']!.properties!;
    assert.equal(status['conditions']!['x-kubernetes-patch-merge-key'], 'type');
    assert.equal(status['addresses']!['x-kubernetes-patch-strategy'], 'merge');
    assert.equal(status['images']!['x-kubernetes-patch-strategy'], undefined);
    const spec = ALL_DEFINITIONS['io.k8s.api.core.v1.NodeSpec']!.properties!;
    assert.equal(spec['taints']!['x-kubernetes-patch-strategy'], undefined);
    assert.equal(spec['podCIDRs']!['x-kubernetes-patch-strategy'], 'merge');
    assert.deepEqual(ALL_DEFINITIONS['io.k8s.api.core.v1.Taint']!.required, ['key', 'effect']);
  });

  it('create keeps status, canonicalizes quantities, drops configSource without DynamicKubeletConfig', () => {
    const configSource = { configMap: { namespace: 'kube-system', name: 'cfg', kubeletConfigKey: 'kubelet' } };
    const { obj, errs } = create(node({ configSource }, { capacity: { cpu: '1000m', memory: '1.5Gi' }, conditions: [READY], config: { error: 'x' } }));
    assert.deepEqual(errs, []);
    assert.deepEqual(obj.status.capacity, { cpu: '1', memory: '1536Mi' });
    assert.deepEqual(obj.status.conditions, [READY]);
    assert.equal(obj.spec.configSource, undefined);
    assert.equal(obj.status.config, undefined);
    const gated = create(node({ configSource }), { ...CTX, featureGates: { DynamicKubeletConfig: true } });
    assert.deepEqual(gated.obj.spec.configSource, configSource);
  });

  it('podCIDR and podCIDRs follow the v1 conversion', () => {
    assert.deepEqual(create(node({ podCIDR: '10.0.0.0/24' })).obj.spec, { podCIDR: '10.0.0.0/24', podCIDRs: ['10.0.0.0/24'] });
    assert.deepEqual(create(node({ podCIDR: 'x', podCIDRs: ['10.0.1.0/24', 'fd00::/64'] })).obj.spec, {
      podCIDR: '10.0.1.0/24',
      podCIDRs: ['10.0.1.0/24', 'fd00::/64'],
    });
  });

  it('validates taints, podCIDRs and quantities', () => {
    const { errs } = create(
      node(
        {
          taints: [
            { key: 'a', effect: 'NoSchedule' },
            { key: 'a', effect: 'NoSchedule', value: 'v' },
            { key: 'b/c/d', effect: 'Sometimes' },
            { key: 'e', value: 'x y' },
          ],
          podCIDRs: ['10.0.0.0/24', '10.0.1.0/24'],
        },
        { capacity: { cpu: '-1', pods: '1.5' } },
      ),
    );
    assert.deepEqual(errs, [
      'metadata.taints[1]: Duplicate value: core.Taint{Key:"a", Value:"v", Effect:"NoSchedule", TimeAdded:(*v1.Time)(nil)}: taints must be unique by key and effect pair',
      "metadata.taints[2].key: Invalid value: \"b/c/d\": a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
      'metadata.taints[2].effect: Unsupported value: "Sometimes": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"',
      "metadata.taints[3].value: Invalid value: \"x y\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
      'metadata.taints[3].effect: Required value',
      'status.capacity[cpu]: Invalid value: "-1": must be greater than or equal to 0',
      'status.capacity[pods]: Invalid value: "1500m": must be an integer',
      'spec.podCIDRs: Invalid value: []string{"10.0.0.0/24", "10.0.1.0/24"}: may specify no more than one CIDR for each IP family',
    ]);
    assert.deepEqual(create(node({ podCIDRs: ['nope'] })).errs, ['spec.podCIDRs[0]: Invalid value: []string{"nope"}: must be valid CIDR']);
  });

  it('update keeps status; the status subresource keeps spec', () => {
    const old = stored(node({ podCIDR: '10.0.0.0/24', providerID: 'p://1' }, { conditions: [READY] }));
    const cordoned = update({ ...structuredClone(old), spec: { ...old.spec, unschedulable: true }, status: {} }, old);
    assert.deepEqual(cordoned.errs, []);
    assert.equal(cordoned.obj.spec.unschedulable, true);
    assert.deepEqual(cordoned.obj.status.conditions, [READY]);

    const st = updateStatus({ ...structuredClone(old), spec: { unschedulable: true }, status: { nodeInfo: { kubeletVersion: 'v1.23.17' } } }, old);
    assert.deepEqual(st.errs, []);
    assert.deepEqual(st.obj.spec, old.spec);
    assert.equal(st.obj.status.nodeInfo.kubeletVersion, 'v1.23.17');

    const bad = update({ ...structuredClone(old), spec: { podCIDRs: ['10.0.9.0/24'], providerID: 'p://2', externalID: 'x' } }, old);
    assert.deepEqual(bad.errs, [
      'spec.podCIDRs: Forbidden: node updates may not change podCIDR except from "" to valid',
      'spec.providerID: Forbidden: node updates may not change providerID except from "" to valid',
      'spec.externalID: Forbidden: may not be updated',
    ]);
    const dup = updateStatus(
      { ...structuredClone(old), status: { addresses: [{ type: 'InternalIP', address: '10.1.1.1' }, { type: 'InternalIP', address: '10.1.1.1' }] } },
      old,
    );
    assert.deepEqual(dup.errs, ['status.addresses[1]: Duplicate value: core.NodeAddress{Type:"InternalIP", Address:"10.1.1.1"}']);
  });

  it('field selector spec.unschedulable', () => {
    const sel = nodeKind.fieldSelectors!['spec.unschedulable']!;
    assert.equal(sel(node()), 'false');
    assert.equal(sel(node({ unschedulable: true })), 'true');
  });

  it('table: NAME STATUS ROLES AGE VERSION, wide columns', () => {
    assert.deepEqual(
      tableColumnDefinitions(nodeKind).map((c) => [c.name, c.priority]),
      [
        ['Name', 0],
        ['Status', 0],
        ['Roles', 0],
        ['Age', 0],
        ['Version', 0],
        ['Internal-IP', 1],
        ['External-IP', 1],
        ['OS-Image', 1],
        ['Kernel-Version', 1],
        ['Container-Runtime', 1],
      ],
    );
    const now = Date.parse('2024-01-01T00:05:00Z');
    const bare = stored(node());
    const cells = tableCells(nodeKind, bare, now);
    assert.deepEqual([cells[0], cells[1], cells[2], cells[4], ...cells.slice(5)], ['n1', 'Unknown', '<none>', '', '<none>', '<none>', '<unknown>', '<unknown>', '<unknown>']);

    const full = stored(
      node(
        { unschedulable: true },
        {
          conditions: [{ type: 'MemoryPressure', status: 'False' }, READY],
          addresses: [
            { type: 'Hostname', address: 'n1' },
            { type: 'InternalIP', address: '10.0.0.5' },
            { type: 'ExternalIP', address: '1.2.3.4' },
          ],
          nodeInfo: { kubeletVersion: 'v1.23.17', osImage: 'Ubuntu 22.04', kernelVersion: '5.15.0', containerRuntimeVersion: 'containerd://1.6.0' },
        },
        { 'node-role.kubernetes.io/worker': '', 'node-role.kubernetes.io/control-plane': '', 'kubernetes.io/role': 'master', 'node-role.kubernetes.io/': 'x' },
      ),
    );
    const c = tableCells(nodeKind, full, now);
    assert.deepEqual([c[0], c[1], c[2], c[4], ...c.slice(5)], [
      'n1',
      'Ready,SchedulingDisabled',
      'control-plane,master,worker',
      'v1.23.17',
      '10.0.0.5',
      '1.2.3.4',
      'Ubuntu 22.04',
      '5.15.0',
      'containerd://1.6.0',
    ]);
    const notReady = stored(node({}, { conditions: [{ type: 'Ready', status: 'Unknown' }] }));
    assert.equal(tableCells(nodeKind, notReady, now)[1], 'NotReady');
  });

  it('protobuf round trip', () => {
    const obj = stored(
      node(
        { podCIDR: '10.0.0.0/24', taints: [{ key: 'k', value: 'v', effect: 'NoExecute', timeAdded: '2024-01-01T00:00:01Z' }], unschedulable: true },
        {
          capacity: { cpu: '2', memory: '4Gi' },
          conditions: [{ ...READY, lastHeartbeatTime: '2024-01-01T00:00:02Z', lastTransitionTime: '2024-01-01T00:00:03Z', message: 'ok' }],
          addresses: [{ type: 'InternalIP', address: '10.0.0.5' }],
          daemonEndpoints: { kubeletEndpoint: { Port: 10250 } },
          images: [{ names: ['busybox:1'], sizeBytes: 1234 }],
          volumesAttached: [{ name: 'v', devicePath: '/dev/x' }],
        },
      ),
    );
    const back = decodeKubernetesProtobuf(encodeKubernetesProtobuf(obj)) as KObject;
    assert.deepEqual(back.spec, obj.spec);
    assert.deepEqual(back.status.conditions, obj.status.conditions);
    assert.deepEqual(back.status.capacity, obj.status.capacity);
    assert.deepEqual(back.status.daemonEndpoints, { kubeletEndpoint: { Port: 10250 } });
    assert.deepEqual(back.status.images, obj.status.images);
    assert.deepEqual(back.status.volumesAttached, obj.status.volumesAttached);
    assert.equal(back.status.nodeInfo.kubeletVersion, '');
    const list = decodeKubernetesProtobuf(encodeKubernetesProtobuf({ apiVersion: 'v1', kind: 'NodeList', metadata: {}, items: [obj] })) as KObject;
    assert.equal(list.items.length, 1);
  });
});
