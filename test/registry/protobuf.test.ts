import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  messageDescriptor,
  PROTOBUF_MAGIC,
  decodeEnvelope,
  decodeKubernetesProtobuf,
  decodeMessage,
  encodeKubernetesProtobuf,
  encodeMessage,
  encodeWatchEventProtobuf,
} from '../../src/registry/protobuf.js';
import { isStatusError } from '../../src/registry/errors.js';
import { requireBinary } from '../helpers/binaries.js';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

/** The body `kubectl create namespace foo` (v1.32) sent, as captured from the wire. */
const KUBECTL_CREATE_NAMESPACE_FOO = Buffer.from(
  '6b3873000a0f0a02763112094e616d657370616365121b0a130a03666f6f12001a0022002a00320038004200120' +
    '01a020a001a002200',
  'hex',
);

/**
 * The same object as kube-apiserver 1.23 marshals it (hand-checked against its gogo-generated ObjectMeta
 * marshaller): ObjectMeta's non-pointer clusterName (field 15, removed in 1.25) is written even when empty (7a 00),
 * as every non-pointer scalar is; the lengths grow by 2.
 */
const KUBE_APISERVER_123_NAMESPACE_FOO = Buffer.from(
  '6b3873000a0f0a02763112094e616d657370616365121d0a150a03666f6f12001a0022002a003200380042007a00' + '12001a020a001a002200',
  'hex',
);

const fullNamespace = {
  apiVersion: 'v1',
  kind: 'Namespace',
  metadata: {
    name: 'team-a',
    generateName: 'team-',
    selfLink: '/api/v1/namespaces/team-a',
    uid: '6f1c2c8e-6a57-4a0e-9d2b-3f5e3e1f0a11',
    resourceVersion: '12345',
    generation: 3,
    creationTimestamp: '2024-03-01T12:34:56Z',
    deletionTimestamp: '2024-03-02T00:00:00Z',
    deletionGracePeriodSeconds: 0,
    labels: { 'kubernetes.io/metadata.name': 'team-a', tier: 'gold', empty: '' },
    annotations: { note: 'héllo ✓', 'z.example.com/last': '' },
    ownerReferences: [
      { apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: 'u-1', controller: false, blockOwnerDeletion: true },
      { apiVersion: 'apps/v1', kind: 'Deployment', name: 'd', uid: 'u-2' },
    ],
    finalizers: ['example.com/keep', 'kubernetes'],
    clusterName: 'c1',
    managedFields: [
      {
        manager: 'kubectl-create',
        operation: 'Update',
        apiVersion: 'v1',
        time: '2024-03-01T12:34:56Z',
        fieldsType: 'FieldsV1',
        fieldsV1: { 'f:metadata': { 'f:labels': { '.': {}, 'f:tier': {} } } },
      },
      { manager: 'kube-controller-manager', operation: 'Update', apiVersion: 'v1', fieldsType: 'FieldsV1', fieldsV1: {}, subresource: 'status' },
    ],
  },
  spec: { finalizers: ['kubernetes'] },
  status: {
    phase: 'Terminating',
    conditions: [
      {
        type: 'NamespaceDeletionContentFailure',
        status: 'False',
        lastTransitionTime: '2024-03-02T00:00:01Z',
        reason: 'ContentDeleted',
        message: 'All content successfully deleted, may be waiting on finalization',
      },
      { type: 'NamespaceFinalizersRemaining', status: 'True', lastTransitionTime: null },
    ],
  },
};

const fullPvc = {
  apiVersion: 'v1',
  kind: 'PersistentVolumeClaim',
  metadata: {
    name: 'data',
    namespace: 'default',
    uid: 'a7d4d5c1-0000-4000-8000-000000000001',
    resourceVersion: '77',
    creationTimestamp: '1969-12-31T23:59:59Z',
    labels: { app: 'db' },
    annotations: { 'pv.kubernetes.io/bind-completed': 'yes' },
    ownerReferences: [{ apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'db', uid: 'u-3', controller: true, blockOwnerDeletion: false }],
    finalizers: ['kubernetes.io/pvc-protection'],
  },
  spec: {
    accessModes: ['ReadWriteOnce', 'ReadOnlyMany'],
    selector: {
      matchLabels: { release: 'stable' },
      matchExpressions: [
        { key: 'env', operator: 'In', values: ['prod', 'staging'] },
        { key: 'legacy', operator: 'DoesNotExist' },
      ],
    },
    resources: { limits: { storage: '10Gi' }, requests: { storage: '1500Mi', 'example.com/iops': '100m' } },
    volumeName: 'pv-0001',
    storageClassName: '',
    volumeMode: 'Filesystem',
    dataSource: { apiGroup: 'snapshot.storage.k8s.io', kind: 'VolumeSnapshot', name: 'snap' },
    dataSourceRef: { kind: 'PersistentVolumeClaim', name: 'src' },
  },
  status: {
    phase: 'Bound',
    accessModes: ['ReadWriteOnce'],
    capacity: { storage: '10Gi' },
    conditions: [
      {
        type: 'Resizing',
        status: 'True',
        lastProbeTime: '2030-01-01T00:00:00Z',
        lastTransitionTime: '2029-12-31T23:00:00Z',
        reason: 'Expanding',
        message: 'waiting',
      },
    ],
    allocatedResources: { storage: '10Gi' },
    resizeStatus: '',
  },
};

function statusErrorWith(re: RegExp) {
  return (err: unknown) => {
    assert.ok(isStatusError(err, 'BadRequest'), `expected a BadRequest StatusError, got ${String(err)}`);
    assert.match(err.status.message ?? '', re);
    return true;
  };
}

describe('protobuf descriptors', () => {
  it('transcribe the field numbers of generated.proto', () => {
    const nums = (m: string) => Object.fromEntries(messageDescriptor(m)!.fields.map((f) => [f.json, f.no]));
    assert.equal(nums('meta.v1.ObjectMeta')['managedFields'], 17);
    assert.equal(nums('meta.v1.ObjectMeta')['clusterName'], 15);
    assert.deepEqual(nums('meta.v1.OwnerReference'), { apiVersion: 5, kind: 1, name: 3, uid: 4, controller: 6, blockOwnerDeletion: 7 });
    assert.deepEqual(nums('meta.v1.TypeMeta'), { kind: 1, apiVersion: 2 });
    assert.deepEqual(nums('runtime.TypeMeta'), { apiVersion: 1, kind: 2 });
    assert.equal(nums('core.v1.PersistentVolumeClaimSpec')['dataSourceRef'], 8);
    assert.equal(messageDescriptor('core.v1.PersistentVolumeClaimSpec')!.fields.find((f) => f.no === 8)!.type, 'core.v1.TypedLocalObjectReference');
    assert.equal(nums('core.v1.NamespaceCondition')['lastTransitionTime'], 4);
  });
});

describe('protobuf encoding: exact bytes', () => {
  it('LabelSelectorRequirement: strings and an unpacked repeated string', () => {
    // key=1 "a", operator=2 "In", values=3 "x", values=3 "y"
    assert.equal(hex(encodeMessage('meta.v1.LabelSelectorRequirement', { key: 'a', operator: 'In', values: ['x', 'y'] })), '0a0161120249' + '6e1a01781a0179');
  });

  it('a negative int64 is a 10-byte varint; unset pointers are not written', () => {
    assert.equal(hex(encodeMessage('meta.v1.DeleteOptions', { gracePeriodSeconds: -1 })), '08ffffffffffffffffff01');
    assert.equal(hex(encodeMessage('meta.v1.DeleteOptions', {})), '');
    assert.deepEqual(decodeMessage('meta.v1.DeleteOptions', Buffer.from('08ffffffffffffffffff01', 'hex')), { gracePeriodSeconds: -1 });
  });

  it('Status: non-pointer scalars and structs are always written, maps sorted by key', () => {
    // metadata=1 {selfLink, resourceVersion, continue all ""}, status=2 "Failure", message=3 "", reason=4 "NotFound", code=6 404
    const bytes = encodeMessage('meta.v1.Status', { status: 'Failure', reason: 'NotFound', code: 404 });
    assert.equal(hex(bytes), '0a060a001200' + '1a00' + '1207' + Buffer.from('Failure').toString('hex') + '1a00' + '2208' + Buffer.from('NotFound').toString('hex') + '30940' + '3');
    assert.equal(
      hex(encodeMessage('core.v1.ResourceRequirements', { requests: { storage: '1Gi', cpu: '1' } })),
      // requests=2 entries sorted: {key "cpu", value Quantity{"1"}}, {key "storage", value {"1Gi"}}
      '120a0a03637075120' + '30a0131' + '12100a0773746f72616765120' + '50a03314769',
    );
  });

  it('short strings past ASCII are written as UTF-8 (the ASCII fast path falls back)', () => {
    const bytes = encodeMessage('meta.v1.ObjectMeta', { name: 'aé', labels: { k: '日本', e: 'x😀' } });
    assert.equal(hex(bytes.subarray(0, 5)), '0a0361c3a9');
    const back = decodeMessage('meta.v1.ObjectMeta', bytes) as { name: string; labels: Record<string, string> };
    assert.equal(back.name, 'aé');
    assert.deepEqual(back.labels, { e: 'x😀', k: '日本' });
  });

  it('the envelope and a watch frame', () => {
    const ns = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'foo', creationTimestamp: null }, spec: {}, status: {} };
    assert.equal(hex(encodeKubernetesProtobuf(ns)), hex(KUBE_APISERVER_123_NAMESPACE_FOO));
    // both forms (1.23's with clusterName, newer clients' without) decode to the same object
    assert.deepEqual(decodeKubernetesProtobuf(KUBE_APISERVER_123_NAMESPACE_FOO), decodeKubernetesProtobuf(KUBECTL_CREATE_NAMESPACE_FOO));
    const frame = encodeWatchEventProtobuf('ADDED', ns);
    assert.equal(frame.readUInt32BE(0), frame.length - 4);
    // WatchEvent{type=1 "ADDED", object=2 RawExtension{raw=1 <envelope>}}
    const env = KUBE_APISERVER_123_NAMESPACE_FOO;
    const rawExt = Buffer.concat([Buffer.from([0x0a, env.length]), env]);
    const expected = Buffer.concat([Buffer.from('0a05', 'hex'), Buffer.from('ADDED'), Buffer.from([0x12, rawExt.length]), rawExt]);
    assert.equal(hex(frame.subarray(4)), hex(expected));
  });
});

describe('protobuf decoding', () => {
  it('decodes the body kubectl sends for `create namespace foo` into Go’s JSON form', () => {
    assert.deepEqual(decodeKubernetesProtobuf(KUBECTL_CREATE_NAMESPACE_FOO), {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: 'foo', creationTimestamp: null },
      spec: {},
      status: {},
    });
  });

  it('round-trips a full Namespace and a full PVC', () => {
    for (const obj of [fullNamespace, fullPvc]) {
      const body = encodeKubernetesProtobuf(obj);
      assert.deepEqual(body.subarray(0, 4), PROTOBUF_MAGIC);
      const env = decodeEnvelope(body);
      assert.equal(env.kind, obj.kind);
      assert.equal(env.apiVersion, 'v1');
      assert.deepEqual(decodeKubernetesProtobuf(body, { apiVersion: 'v1', kind: obj.kind }), obj);
      // and re-encoding the decoded object gives the same bytes
      assert.equal(hex(encodeKubernetesProtobuf(decodeKubernetesProtobuf(body))), hex(body));
    }
  });

  it('applies Go’s JSON rules to zero values', () => {
    // PVC with every non-pointer field zero: spec.resources and status appear as {}, pointers stay out,
    // a set pointer (storageClassName "") is kept, condition type/status (no omitempty) appear as "".
    const body = encodeKubernetesProtobuf({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'x', generation: 0 },
      spec: { storageClassName: '' },
      status: { conditions: [{}] },
    });
    assert.deepEqual(decodeKubernetesProtobuf(body), {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'x', creationTimestamp: null },
      spec: { resources: {}, storageClassName: '' },
      status: { conditions: [{ type: '', status: '', lastProbeTime: null, lastTransitionTime: null }] },
    });
  });

  it('decodes lists, DeleteOptions and Status', () => {
    const list = { apiVersion: 'v1', kind: 'NamespaceList', metadata: { resourceVersion: '9', remainingItemCount: 0 }, items: [] };
    assert.deepEqual(decodeKubernetesProtobuf(encodeKubernetesProtobuf(list)), list);
    const pvcs = {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaimList',
      metadata: { continue: 'abc' },
      items: [{ metadata: { name: 'a', creationTimestamp: '2024-01-01T00:00:00Z' }, spec: { resources: {} }, status: { phase: 'Pending' } }],
    };
    assert.deepEqual(decodeKubernetesProtobuf(encodeKubernetesProtobuf(pvcs)), pvcs);
    for (const apiVersion of ['v1', 'meta.k8s.io/v1']) {
      const opts = {
        apiVersion,
        kind: 'DeleteOptions',
        gracePeriodSeconds: 0,
        preconditions: { uid: 'u', resourceVersion: '' },
        orphanDependents: false,
        propagationPolicy: 'Foreground',
        dryRun: ['All'],
      };
      assert.deepEqual(decodeKubernetesProtobuf(encodeKubernetesProtobuf(opts)), opts);
    }
    const status = {
      apiVersion: 'v1',
      kind: 'Status',
      metadata: {},
      status: 'Failure',
      message: 'namespaces "x" not found',
      reason: 'NotFound',
      details: { name: 'x', kind: 'namespaces', causes: [{ reason: 'FieldValueInvalid', field: 'metadata.name' }], retryAfterSeconds: 2 },
      code: 404,
    };
    assert.deepEqual(decodeKubernetesProtobuf(encodeKubernetesProtobuf(status)), status);
  });

  it('rejects what it cannot decode with BadRequest', () => {
    assert.throws(() => decodeKubernetesProtobuf(Buffer.from('{"kind":"Namespace"}')), statusErrorWith(/does not appear to be a protobuf message/));
    const foo = Buffer.concat([PROTOBUF_MAGIC, Buffer.from('0a090a0276311203466f6f', 'hex')]);
    assert.throws(() => decodeKubernetesProtobuf(foo), statusErrorWith(/^no kind "Foo" is registered for version "v1" in scheme/));
    const truncated = KUBECTL_CREATE_NAMESPACE_FOO.subarray(0, 30);
    assert.throws(() => decodeKubernetesProtobuf(truncated), statusErrorWith(/unable to decode protobuf/));
    assert.throws(
      () => decodeKubernetesProtobuf(KUBECTL_CREATE_NAMESPACE_FOO, { apiVersion: 'v1', kind: 'PersistentVolumeClaim' }),
      statusErrorWith(/must be of type PersistentVolumeClaim/),
    );
    // an envelope without a type takes it from `expect`
    const untyped = Buffer.concat([PROTOBUF_MAGIC, Buffer.from('0a00121b', 'hex'), KUBECTL_CREATE_NAMESPACE_FOO.subarray(23, 50)]);
    assert.equal(decodeKubernetesProtobuf(untyped, { apiVersion: 'v1', kind: 'Namespace' })['kind'], 'Namespace');
  });
});

describe('protobuf: a body from real kubectl', () => {
  it('decodes what `kubectl create namespace foo` sends', async (t) => {
    const kubectl = requireBinary(t, 'kubectl');
    if (kubectl === null) {
      t.skip('kubectl is not installed: cannot capture a real protobuf body');
      return;
    }
    let captured: { contentType: string | undefined; body: Buffer } | undefined;
    const json = (res: ServerResponse, code: number, body: unknown) => {
      res.writeHead(code, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    const server = createServer((req: IncomingMessage, res: ServerResponse) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const path = (req.url ?? '').split('?')[0];
        if (req.method === 'POST') {
          captured = { contentType: req.headers['content-type'], body: Buffer.concat(chunks) };
          json(res, 500, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'captured', reason: 'InternalError', code: 500 });
        } else if (path === '/api') {
          json(res, 200, { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: '127.0.0.1' }] });
        } else if (path === '/apis') {
          json(res, 200, { kind: 'APIGroupList', apiVersion: 'v1', groups: [] });
        } else if (path === '/api/v1') {
          json(res, 200, {
            kind: 'APIResourceList',
            apiVersion: 'v1',
            groupVersion: 'v1',
            resources: [{ name: 'namespaces', singularName: 'namespace', namespaced: false, kind: 'Namespace', verbs: ['create', 'get', 'list'] }],
          });
        } else json(res, 404, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', reason: 'NotFound', code: 404 });
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const dir = mkdtempSync(join(tmpdir(), 'orch-pb-'));
    try {
      const { port } = server.address() as AddressInfo;
      const kubeconfig = join(dir, 'kubeconfig');
      writeFileSync(
        kubeconfig,
        [
          'apiVersion: v1',
          'kind: Config',
          `clusters: [{name: c, cluster: {server: "http://127.0.0.1:${port}"}}]`,
          'users: [{name: u, user: {token: t}}]',
          'contexts: [{name: c, context: {cluster: c, user: u}}]',
          'current-context: c',
          '',
        ].join('\n'),
      );
      await new Promise<void>((resolve) => {
        execFile(
          kubectl,
          ['--kubeconfig', kubeconfig, '--cache-dir', join(dir, 'cache'), 'create', 'namespace', 'foo', '--dry-run=server'],
          { timeout: 30_000, env: { ...process.env, HOME: dir } },
          () => resolve(), // it fails (the server answers 500): only the request matters
        );
      });
    } finally {
      server.close();
      rmSync(dir, { recursive: true, force: true });
    }
    assert.ok(captured, 'kubectl did not POST');
    assert.equal(captured.contentType, 'application/vnd.kubernetes.protobuf');
    assert.deepEqual(decodeKubernetesProtobuf(captured.body, { apiVersion: 'v1', kind: 'Namespace' }), {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: 'foo', creationTimestamp: null },
      spec: {},
      status: {},
    });
    // kubectl (1.25+, no clusterName field) writes the fixture's bytes; our encoder writes 1.23's, which differ
    // only by ObjectMeta's empty clusterName (7a 00).
    assert.equal(hex(captured.body), hex(KUBECTL_CREATE_NAMESPACE_FOO));
    assert.equal(hex(encodeKubernetesProtobuf(decodeKubernetesProtobuf(captured.body))), hex(KUBE_APISERVER_123_NAMESPACE_FOO));
  });
});
