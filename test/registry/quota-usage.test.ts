import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { evaluatorFor, prettyPrint, usageFor, usageToList, type ScopeSelector } from '../../src/registry/admission/quota-usage.js';

const pods = evaluatorFor('', 'pods');
const pod = (spec: Record<string, unknown>, status: Record<string, unknown> = {}) => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec, status });
const container = (name: string, requests?: Record<string, string>, limits?: Record<string, string>) => ({ name, image: 'x', resources: { ...(requests ? { requests } : {}), ...(limits ? { limits } : {}) } });
const scope = (scopeName: string, operator = 'Exists', values: string[] = []): ScopeSelector => ({ scopeName, operator, values });

describe('quota usage (Kubernetes 1.23 evaluators)', () => {
  it('sums containers, raises to the largest init container and adds the overhead (to limits too), as requests.* and limits.*', () => {
    const p = pod({
      containers: [container('a', { cpu: '100m', memory: '64Mi' }, { memory: '128Mi' }), container('b', { cpu: '200m', memory: '64Mi', 'example.com/gpu': '1' })],
      initContainers: [container('init', { cpu: '500m' })],
      overhead: { cpu: '10m' },
    });
    assert.deepEqual(usageToList(pods.usage(p, Date.now())), {
      'count/pods': '1',
      cpu: '510m',
      'limits.cpu': '10m',
      'limits.memory': '128Mi',
      memory: '128Mi',
      pods: '1',
      'requests.cpu': '510m',
      'requests.example.com/gpu': '1',
      'requests.memory': '128Mi',
    });
  });

  it('counts a finished pod, or one past its deletion grace period, only as count/pods', () => {
    assert.deepEqual(usageToList(pods.usage(pod({ containers: [container('a', { cpu: '1' })] }, { phase: 'Succeeded' }), Date.now())), { 'count/pods': '1' });
    const deleting = { ...pod({ containers: [] }), metadata: { name: 'p', deletionTimestamp: new Date(Date.now() - 60_000).toISOString(), deletionGracePeriodSeconds: 30 } };
    assert.deepEqual(usageToList(pods.usage(deleting, Date.now())), { 'count/pods': '1' });
  });

  it('matches the pod scopes', () => {
    const bestEffort = pod({ containers: [container('a')] });
    const burstable = pod({ containers: [container('a', { memory: '1Mi' })], activeDeadlineSeconds: 10, priorityClassName: 'high' });
    assert.equal(pods.matchesScope(scope('BestEffort'), bestEffort), true);
    assert.equal(pods.matchesScope(scope('NotBestEffort'), burstable), true);
    assert.equal(pods.matchesScope(scope('Terminating'), burstable), true);
    assert.equal(pods.matchesScope(scope('NotTerminating'), bestEffort), true);
    assert.equal(pods.matchesScope(scope('PriorityClass'), burstable), true);
    assert.equal(pods.matchesScope(scope('PriorityClass'), bestEffort), false);
    assert.equal(pods.matchesScope(scope('PriorityClass', 'In', ['high', 'low']), burstable), true);
    assert.equal(pods.matchesScope(scope('PriorityClass', 'NotIn', ['high']), burstable), false);
    assert.equal(evaluatorFor('', 'configmaps').matchesScope(scope('BestEffort'), bestEffort), false, 'scoped quotas count pods only');
  });

  it('requires containers to state what a compute quota limits', () => {
    const p = pod({ containers: [container('a', { cpu: '1' }), container('b')], initContainers: [container('i', { memory: '1Mi' })] });
    assert.equal(pods.constraints!(['requests.cpu', 'memory', 'pods'], p), 'must specify memory for: a,b; requests.cpu for: b,i');
    assert.equal(pods.constraints!(['pods', 'count/pods'], p), undefined);
  });

  it('counts services by type, claims by storage class with storage rounded up, and any kind by count/', () => {
    const svc = evaluatorFor('', 'services');
    const ports = [{ port: 80 }, { port: 81, nodePort: 30001 }];
    assert.deepEqual(usageToList(svc.usage({ spec: { type: 'NodePort', ports } }, 0)), { 'count/services': '1', services: '1', 'services.nodeports': '2' });
    assert.deepEqual(usageToList(svc.usage({ spec: { type: 'LoadBalancer', ports, allocateLoadBalancerNodePorts: false } }, 0)), {
      'count/services': '1',
      services: '1',
      'services.loadbalancers': '1',
      'services.nodeports': '1',
    });
    const pvc = evaluatorFor('', 'persistentvolumeclaims');
    assert.deepEqual(usageToList(pvc.usage({ spec: { storageClassName: 'fast', resources: { requests: { storage: '1500m' } } } }, 0)), {
      'count/persistentvolumeclaims': '1',
      'fast.storageclass.storage.k8s.io/persistentvolumeclaims': '1',
      'fast.storageclass.storage.k8s.io/requests.storage': '2',
      persistentvolumeclaims: '1',
      'requests.storage': '2',
    });
    const leases = evaluatorFor('coordination.k8s.io', 'leases');
    assert.deepEqual(leases.matchingResources(['count/leases.coordination.k8s.io', 'pods']), ['count/leases.coordination.k8s.io']);
    assert.deepEqual(evaluatorFor('', 'configmaps').matchingResources(['configmaps', 'count/configmaps', 'secrets']), ['configmaps', 'count/configmaps']);
  });

  it('adds up a namespace’s objects for a quota, keeping the first quantity’s format, and prints as Kubernetes', () => {
    const quota = { spec: { hard: { 'requests.memory': '1Gi', pods: '10' } }, status: { hard: { 'requests.memory': '1Gi', pods: '10' } } };
    const items = [pod({ containers: [container('a', { memory: '512Mi' })] }), pod({ containers: [container('a', { memory: '256Mi' })] }), pod({ containers: [] }, { phase: 'Failed' })];
    const used = usageFor(quota, pods, items, ['requests.memory', 'pods'], Date.now());
    assert.deepEqual(usageToList(used), { pods: '2', 'requests.memory': '768Mi' });
    assert.equal(prettyPrint(used), 'pods=2,requests.memory=768Mi');
    assert.deepEqual(usageToList(usageFor(quota, pods, [], ['requests.memory', 'pods'], 0)), { pods: '0', 'requests.memory': '0' });
  });
});
