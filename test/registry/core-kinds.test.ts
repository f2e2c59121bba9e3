/**
 * ConfigMap, Secret, ServiceAccount, Lease and Node: the strategies and the validation messages of
 * Kubernetes 1.23, through the hooks the store runs.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ALL_DEFINITIONS, BUILTIN_KINDS, configMapKind, leaseKind, secretKind, serviceAccountKind } from '../../src/registry/kinds/index.js';
import { isConfigMapKey } from '../../src/registry/kinds/configmap.js';
import { decodeKubernetesProtobuf, encodeKubernetesProtobuf } from '../../src/registry/protobuf.js';
import { tableCells, tableColumnDefinitions } from '../../src/endpoints/table.js';
import type { KObject, KindDecl, StrategyContext } from '../../src/registry/kind.js';
import type { FieldError } from '../../src/util/validation.js';

const CTX: StrategyContext = { featureGates: {}, namespace: 'default', subresource: '' };
const msgs = (errs: FieldError[]) => errs.map((e) => e.toString());

/** Runs the create hooks as the store does (prepareForCreate → default → validate → canonicalize). */
function create(kind: KindDecl, obj: KObject, ctx = CTX): { obj: KObject; errs: string[] } {
  kind.strategy.prepareForCreate?.(obj, ctx);
  kind.strategy.default?.(obj, ctx);
  const errs = msgs(kind.strategy.validate(obj, ctx));
  if (errs.length === 0) kind.strategy.canonicalize?.(obj);
  return { obj, errs };
}

/** Runs the update hooks (prepareForUpdate → default → validateUpdate → canonicalize). */
function update(kind: KindDecl, obj: KObject, old: KObject, ctx = CTX): { obj: KObject; errs: string[] } {
  kind.strategy.prepareForUpdate?.(obj, old, ctx);
  kind.strategy.default?.(obj, ctx);
  const errs = msgs(kind.strategy.validateUpdate(obj, old, ctx));
  if (errs.length === 0) kind.strategy.canonicalize?.(obj);
  return { obj, errs };
}

/** A stored object: created without errors, with what the store adds. */
function stored(kind: KindDecl, obj: KObject): KObject {
  const { obj: out, errs } = create(kind, obj);
  assert.deepEqual(errs, []);
  out.metadata = { ...out.metadata, uid: 'u1', resourceVersion: '5', creationTimestamp: '2024-01-01T00:00:00Z' };
  return out;
}

function roundTrip(obj: KObject): Record<string, unknown> {
  return decodeKubernetesProtobuf(encodeKubernetesProtobuf(obj));
}

const CONFIG_KEY_MSG =
  "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";

describe('ConfigMap', () => {
  const cm = (extra: Record<string, unknown> = {}): KObject => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'cfg', namespace: 'default' },
    ...extra,
  });

  it('declaration', () => {
    assert.equal(configMapKind.resource, 'configmaps');
    assert.deepEqual(configMapKind.shortNames, ['cm']);
    assert.equal(configMapKind.namespaced, true);
    assert.equal(configMapKind.strategy.allowCreateOnUpdate, false);
    assert.equal(configMapKind.strategy.allowUnconditionalUpdate, true);
    assert.ok(BUILTIN_KINDS.includes(configMapKind));
    assert.deepEqual(ALL_DEFINITIONS['io.k8s.api.core.v1.ConfigMap']!.properties!['binaryData']!.additionalProperties, { format: 'byte', type: 'string' });
  });

  it('IsConfigMapKey', () => {
    assert.deepEqual(isConfigMapKey('a.b_C-9'), []);
    assert.deepEqual(isConfigMapKey('a/b'), [CONFIG_KEY_MSG]);
    assert.deepEqual(isConfigMapKey(''), [CONFIG_KEY_MSG]);
    assert.deepEqual(isConfigMapKey('.'), ["must not be '.'"]);
    assert.deepEqual(isConfigMapKey('..'), ["must not be '..'"]);
    assert.deepEqual(isConfigMapKey('..a'), ["must not start with '..'"]);
    assert.deepEqual(isConfigMapKey('a'.repeat(254)), ['must be no more than 253 characters']);
  });

  it('validates keys, duplicates across data and binaryData, and the total size', () => {
    const { errs } = create(configMapKind, cm({ data: { 'a/b': 'x', dup: 'y' }, binaryData: { dup: 'eA==', '..x': 'eA==' } }));
    assert.deepEqual(errs, [
      `data[a/b]: Invalid value: "a/b": ${CONFIG_KEY_MSG}`,
      'data[dup]: Invalid value: "dup": duplicate of key present in binaryData',
      `binaryData[..x]: Invalid value: "..x": must not start with '..'`,
    ]);
    const big = create(configMapKind, cm({ data: { a: 'x'.repeat(1024 * 1024) }, binaryData: { b: 'eA==' } }));
    assert.deepEqual(big.errs, ['[]: Too long: must have at most 1048576 bytes']);
    assert.deepEqual(create(configMapKind, cm({ data: { a: 'x'.repeat(1024 * 1024) } })).errs, []);
  });

  it('immutable: data, binaryData and immutable itself cannot change', () => {
    const old = stored(configMapKind, cm({ data: { a: 'b' }, immutable: true }));
    assert.deepEqual(update(configMapKind, cm({ data: { a: 'b' }, immutable: true, metadata: { ...old.metadata, labels: { x: 'y' } } }), old).errs, []);
    assert.deepEqual(update(configMapKind, cm({ data: { a: 'c' }, binaryData: { z: 'eA==' } }), old).errs, [
      'immutable: Forbidden: field is immutable when `immutable` is set',
      'data: Forbidden: field is immutable when `immutable` is set',
      'binaryData: Forbidden: field is immutable when `immutable` is set',
    ]);
    const mutable = stored(configMapKind, cm({ data: { a: 'b' } }));
    assert.deepEqual(update(configMapKind, cm({ data: { a: 'c' }, immutable: true }), mutable).errs, []);
  });

  it('drops empty maps as Go omits them', () => {
    const { obj } = create(configMapKind, cm({ data: {}, binaryData: {} }));
    assert.equal(obj['data'], undefined);
    assert.equal(obj['binaryData'], undefined);
  });

  it('table: NAME DATA AGE', () => {
    assert.deepEqual(
      tableColumnDefinitions(configMapKind).map((c) => c.name),
      ['Name', 'Data', 'Age'],
    );
    const obj = stored(configMapKind, cm({ data: { a: 'b', c: 'd' }, binaryData: { e: 'eA==' } }));
    const cells = tableCells(configMapKind, obj, Date.parse('2024-01-01T00:05:00Z'));
    assert.deepEqual(cells, ['cfg', 3, '5m']);
  });

  it('protobuf round trip', () => {
    const obj = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cfg', namespace: 'default', creationTimestamp: null }, immutable: false, data: { a: 'b' }, binaryData: { c: 'AAEC' } };
    assert.deepEqual(roundTrip(obj), obj);
  });
});

describe('Secret', () => {
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  const secret = (extra: Record<string, unknown> = {}): KObject => ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 's', namespace: 'default' },
    ...extra,
  });

  it('declaration', () => {
    assert.equal(secretKind.resource, 'secrets');
    assert.equal(secretKind.shortNames, undefined);
    assert.deepEqual(Object.keys(secretKind.fieldSelectors ?? {}), ['type']);
    assert.equal(secretKind.fieldSelectors!['type']!(stored(secretKind, secret())), 'Opaque');
    assert.ok(BUILTIN_KINDS.includes(secretKind));
  });

  it('defaults the type to Opaque and merges stringData into data, overwriting', () => {
    const { obj, errs } = create(secretKind, secret({ data: { a: b64('1'), b: b64('2') }, stringData: { b: 'two', c: 'three' } }));
    assert.deepEqual(errs, []);
    assert.equal(obj['type'], 'Opaque');
    assert.equal(obj['stringData'], undefined);
    assert.deepEqual(obj['data'], { a: b64('1'), b: b64('two'), c: b64('three') });
  });

  it('validates data keys (stringData ones too) and the total size', () => {
    assert.deepEqual(create(secretKind, secret({ data: { 'a b': b64('x') }, stringData: { '..': 'y' } })).errs, [
      `data[..]: Invalid value: "..": must not be '..'`,
      `data[a b]: Invalid value: "a b": ${CONFIG_KEY_MSG}`,
    ]);
    const big = Buffer.alloc(1024 * 1024 + 1).toString('base64');
    assert.deepEqual(create(secretKind, secret({ data: { big } })).errs, ['data: Too long: must have at most 1048576 bytes']);
  });

  it('type-specific keys', () => {
    const errs = (type: string, extra: Record<string, unknown> = {}) => create(secretKind, secret({ type, ...extra })).errs;
    assert.deepEqual(errs('kubernetes.io/service-account-token'), ['metadata.annotations[kubernetes.io/service-account.name]: Required value']);
    assert.deepEqual(errs('kubernetes.io/service-account-token', { metadata: { name: 's', annotations: { 'kubernetes.io/service-account.name': 'default' } } }), []);
    assert.deepEqual(errs('kubernetes.io/dockerconfigjson'), ['data[.dockerconfigjson]: Required value']);
    assert.deepEqual(errs('kubernetes.io/dockerconfigjson', { data: { '.dockerconfigjson': b64('{"auths":{}}') } }), []);
    assert.deepEqual(errs('kubernetes.io/dockerconfigjson', { data: { '.dockerconfigjson': b64('{x') } }), [
      `data[.dockerconfigjson]: Invalid value: "<secret contents redacted>": invalid character 'x' looking for beginning of object key string`,
    ]);
    assert.deepEqual(errs('kubernetes.io/dockerconfigjson', { data: { '.dockerconfigjson': b64('[]') } }), [
      'data[.dockerconfigjson]: Invalid value: "<secret contents redacted>": json: cannot unmarshal array into Go value of type map[string]interface {}',
    ]);
    assert.deepEqual(errs('kubernetes.io/dockercfg'), ['data[.dockercfg]: Required value']);
    assert.deepEqual(errs('kubernetes.io/basic-auth'), ['data[%s][username]: Required value', 'data[%s][password]: Required value']);
    assert.deepEqual(errs('kubernetes.io/basic-auth', { data: { password: '' } }), []);
    assert.deepEqual(errs('kubernetes.io/ssh-auth', { data: { 'ssh-privatekey': '' } }), ['data[%s][ssh-privatekey]: Required value']);
    assert.deepEqual(errs('kubernetes.io/tls', { data: { 'tls.key': b64('k') } }), ['data[tls.crt]: Required value']);
    assert.deepEqual(errs('kubernetes.io/tls'), ['data[tls.crt]: Required value', 'data[tls.key]: Required value']);
    assert.deepEqual(errs('bootstrap.kubernetes.io/token'), []);
    assert.deepEqual(errs('example.com/custom'), []);
  });

  it('update: the type is immutable; a replacement without a type is Opaque', () => {
    const old = stored(secretKind, secret({ type: 'kubernetes.io/tls', data: { 'tls.crt': b64('c'), 'tls.key': b64('k') } }));
    assert.deepEqual(update(secretKind, secret({ type: 'Opaque' }), old).errs, ['type: Invalid value: "Opaque": field is immutable']);
    assert.deepEqual(update(secretKind, secret({ data: old['data'] }), old).errs, ['type: Invalid value: "Opaque": field is immutable']);
    assert.deepEqual(update(secretKind, secret({ type: 'kubernetes.io/tls', stringData: { 'tls.crt': 'c2', 'tls.key': 'k2' } }), old).errs, []);
  });

  it('update: immutable secrets keep data and immutable', () => {
    const old = stored(secretKind, secret({ data: { a: b64('1') }, immutable: true }));
    assert.deepEqual(update(secretKind, secret({ data: { a: b64('1') }, immutable: true }), old).errs, []);
    assert.deepEqual(update(secretKind, secret({ stringData: { a: '2' }, immutable: true }), old).errs, [
      'data: Forbidden: field is immutable when `immutable` is set',
    ]);
    assert.deepEqual(update(secretKind, secret({ data: { a: b64('1') } }), old).errs, ['immutable: Forbidden: field is immutable when `immutable` is set']);
  });

  it('table: NAME TYPE DATA AGE', () => {
    assert.deepEqual(
      tableColumnDefinitions(secretKind).map((c) => c.name),
      ['Name', 'Type', 'Data', 'Age'],
    );
    const obj = stored(secretKind, secret({ stringData: { a: 'b' } }));
    assert.deepEqual(tableCells(secretKind, obj, Date.parse('2024-01-01T02:00:00Z')), ['s', 'Opaque', 1, '120m']);
  });

  it('protobuf round trip (bytes and stringData)', () => {
    const obj = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's', creationTimestamp: null }, immutable: true, data: { a: 'AAEC/w==' }, stringData: { b: 'c' }, type: 'Opaque' };
    assert.deepEqual(roundTrip(obj), obj);
  });
});

describe('ServiceAccount', () => {
  const sa = (extra: Record<string, unknown> = {}): KObject => ({
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { name: 'robot', namespace: 'default' },
    ...extra,
  });

  it('declaration', () => {
    assert.equal(serviceAccountKind.resource, 'serviceaccounts');
    assert.deepEqual(serviceAccountKind.shortNames, ['sa']);
    assert.ok(BUILTIN_KINDS.includes(serviceAccountKind));
    const secrets = ALL_DEFINITIONS['io.k8s.api.core.v1.ServiceAccount']!.properties!['secrets']!;
    assert.equal(secrets['x-kubernetes-patch-merge-key'], 'name');
    assert.equal(secrets['x-kubernetes-patch-strategy'], 'merge');
    assert.equal(ALL_DEFINITIONS['io.k8s.api.core.v1.ObjectReference']!['x-kubernetes-map-type'], 'atomic');
  });

  it('secret references keep their names only, on create and update', () => {
    const { obj, errs } = create(serviceAccountKind, sa({ secrets: [{ name: 'a', kind: 'Secret', uid: 'x', fieldPath: 'f' }, { namespace: 'n' }], automountServiceAccountToken: false }));
    assert.deepEqual(errs, []);
    assert.deepEqual(obj['secrets'], [{ name: 'a' }, {}]);
    assert.equal(obj['automountServiceAccountToken'], false);
    const old = stored(serviceAccountKind, sa());
    assert.deepEqual(update(serviceAccountKind, sa({ secrets: [{ name: 'b', namespace: 'other' }] }), old).obj['secrets'], [{ name: 'b' }]);
  });

  it('table: NAME SECRETS AGE', () => {
    assert.deepEqual(
      tableColumnDefinitions(serviceAccountKind).map((c) => c.name),
      ['Name', 'Secrets', 'Age'],
    );
    const obj = stored(serviceAccountKind, sa({ secrets: [{ name: 'a' }, { name: 'b' }] }));
    assert.deepEqual(tableCells(serviceAccountKind, obj, Date.parse('2024-01-01T00:00:30Z')), ['robot', 2, '30s']);
  });

  it('protobuf round trip', () => {
    const obj = {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: 'robot', creationTimestamp: null },
      secrets: [{ kind: 'Secret', name: 'a', fieldPath: 'x' }],
      imagePullSecrets: [{ name: 'pull' }],
      automountServiceAccountToken: true,
    };
    assert.deepEqual(roundTrip(obj), obj);
  });
});

describe('Lease', () => {
  const lease = (spec: Record<string, unknown> = {}): KObject => ({
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: { name: 'leader', namespace: 'kube-system' },
    spec,
  });

  it('declaration', () => {
    assert.equal(leaseKind.group, 'coordination.k8s.io');
    assert.equal(leaseKind.resource, 'leases');
    assert.equal(leaseKind.strategy.allowCreateOnUpdate, true);
    assert.equal(leaseKind.strategy.allowUnconditionalUpdate, false);
    assert.ok(BUILTIN_KINDS.includes(leaseKind));
    assert.deepEqual(ALL_DEFINITIONS['io.k8s.api.coordination.v1.LeaseSpec']!.properties!['renewTime'], {
      $ref: '#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime',
      description: 'renewTime is a time when the current holder of a lease has last updated the lease.',
    });
  });

  it('validates the duration and the transitions, as Kubernetes words it', () => {
    assert.deepEqual(create(leaseKind, lease({ holderIdentity: 'a', leaseDurationSeconds: 15, leaseTransitions: 0 })).errs, []);
    assert.deepEqual(create(leaseKind, lease({ leaseDurationSeconds: 0, leaseTransitions: -1 })).errs, [
      'spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0',
      'spec.leaseTransitions: Invalid value: -1: must to greater or equal than 0',
    ]);
    const old = stored(leaseKind, lease({ leaseDurationSeconds: 15 }));
    assert.deepEqual(update(leaseKind, lease({ leaseDurationSeconds: -5 }), old).errs, ['spec.leaseDurationSeconds: Invalid value: -5: must be greater than 0']);
    assert.deepEqual(create(leaseKind, { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: 'x' } }).obj['spec'], {});
  });

  it('table: NAME HOLDER AGE', () => {
    assert.deepEqual(
      tableColumnDefinitions(leaseKind).map((c) => c.name),
      ['Name', 'Holder', 'Age'],
    );
    assert.deepEqual(tableCells(leaseKind, stored(leaseKind, lease({ holderIdentity: 'node-1' })), Date.parse('2024-01-01T00:00:30Z')), ['leader', 'node-1', '30s']);
    assert.deepEqual(tableCells(leaseKind, stored(leaseKind, lease()), Date.parse('2024-01-01T00:00:30Z')), ['leader', '', '30s']);
  });

  it('protobuf round trip with micro times', () => {
    const obj = {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: 'leader', namespace: 'kube-system', creationTimestamp: null },
      spec: { holderIdentity: 'node-1', leaseDurationSeconds: 40, acquireTime: '2024-01-01T00:00:00.123456Z', renewTime: '2024-01-01T00:00:10.000001Z', leaseTransitions: 0 },
    };
    assert.deepEqual(roundTrip(obj), obj);
  });
});
