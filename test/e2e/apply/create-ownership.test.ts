/**
 * What a create records in managedFields, compared with what Kubernetes 1.23 writes for the same kubectl
 * commands. The field manager compares the request, decoded and defaulted, with the kind's Go zero value,
 * before PrepareForCreate, admission and the REST layer run: so the creator owns the defaults (a Pod's
 * dnsPolicy, a PVC's volumeMode) but not a Namespace's "kubernetes" finalizer, a PVC's protection finalizer,
 * a Service's allocated cluster IPs or a Pod's injected service account; and the containers the zero value
 * already has (a Pod's spec.containers, a PVC's spec.resources) carry no "." of their own.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { requireBinary } from '../../helpers/binaries.js';
import { startCluster, type TestCluster } from '../../helpers/cluster.js';

const present = requireBinary(undefined, 'kubectl') !== null;

describe('managedFields of a create', { skip: !present && 'kubectl not installed' }, () => {
  let c: TestCluster;
  before(async () => {
    c = await startCluster();
  });
  after(async () => c?.stop());
  const k = async (args: string[], input?: string) => {
    const r = await c.kubectl(args, input !== undefined ? { input } : {});
    assert.equal(r.code, 0, r.stderr);
    return r;
  };
  const entries = async (resource: string, name: string) =>
    JSON.parse((await k(['get', resource, name, '-o', 'json', '--show-managed-fields'])).stdout).metadata.managedFields as {
      manager: string;
      operation: string;
      apiVersion: string;
      fieldsV1: unknown;
    }[];

  it('kubectl create namespace: the defaulted name label, not the finalizer', async () => {
    await k(['create', 'namespace', 'owned']);
    const [entry, ...rest] = await entries('namespace', 'owned');
    assert.equal(rest.length, 0);
    assert.equal(entry?.manager, 'kubectl-create');
    assert.equal(entry?.operation, 'Update');
    assert.equal(entry?.apiVersion, 'v1');
    assert.deepEqual(entry?.fieldsV1, { 'f:metadata': { 'f:labels': { '.': {}, 'f:kubernetes.io/metadata.name': {} } } });
  });

  it('kubectl create of a PVC: spec and resources without ".", volumeMode defaulted, no protection finalizer', async () => {
    const pvc = {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'owned', namespace: 'default' },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
    };
    await k(['create', '-f', '-'], JSON.stringify(pvc));
    const [entry, ...rest] = await entries('pvc', 'owned');
    assert.equal(rest.length, 0);
    assert.equal(entry?.manager, 'kubectl-create');
    assert.deepEqual(entry?.fieldsV1, {
      'f:spec': { 'f:accessModes': {}, 'f:resources': { 'f:requests': { '.': {}, 'f:storage': {} } }, 'f:volumeMode': {} },
    });
  });

  it('kubectl run: the pod defaults, not what admission injects', async () => {
    await k(['run', 'owned', '--image=busybox']);
    const [entry] = await entries('pod', 'owned');
    assert.equal(entry?.manager, 'kubectl-run');
    assert.deepEqual(entry?.fieldsV1, {
      'f:metadata': { 'f:labels': { '.': {}, 'f:run': {} } },
      'f:spec': {
        'f:containers': {
          'k:{"name":"owned"}': {
            '.': {},
            'f:image': {},
            'f:imagePullPolicy': {},
            'f:name': {},
            'f:resources': {},
            'f:terminationMessagePath': {},
            'f:terminationMessagePolicy': {},
          },
        },
        'f:dnsPolicy': {},
        'f:enableServiceLinks': {},
        'f:restartPolicy': {},
        'f:schedulerName': {},
        'f:securityContext': {},
        'f:terminationGracePeriodSeconds': {},
      },
    });
  });

  it('kubectl create service: the defaults, not the allocated cluster IPs and IP families', async () => {
    await k(['create', 'service', 'clusterip', 'owned', '--tcp=80:8080']);
    const [entry] = await entries('service', 'owned');
    assert.equal(entry?.manager, 'kubectl-create');
    assert.deepEqual(entry?.fieldsV1, {
      'f:metadata': { 'f:labels': { '.': {}, 'f:app': {} } },
      'f:spec': {
        'f:internalTrafficPolicy': {},
        'f:ports': { '.': {}, 'k:{"port":80,"protocol":"TCP"}': { '.': {}, 'f:name': {}, 'f:port': {}, 'f:protocol': {}, 'f:targetPort': {} } },
        'f:selector': {},
        'f:sessionAffinity': {},
        'f:type': {},
      },
    });
  });
});
