/**
 * ConfigMaps, Secrets, ServiceAccounts, Leases and Nodes through the kubectl on PATH: imperative create
 * (protobuf bodies), get (server-side tables), apply, patch and delete, against a server this test starts.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { requireBinary } from '../helpers/binaries.js';
import { startCluster, type TestCluster } from '../helpers/cluster.js';

const present = requireBinary(undefined, 'kubectl') !== null;
if (!present && process.env.CI === 'true') throw new Error('kubectl is required under CI=true');
const skip = !present && 'kubectl not installed';

describe('kubectl: core kinds', () => {
  let c: TestCluster;
  const k = (args: string[], input?: string) => c.kubectl(args, input !== undefined ? { input } : {});
  const ok = async (args: string[], input?: string) => {
    const r = await k(args, input);
    assert.equal(r.code, 0, `kubectl ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };
  const json = async (args: string[]) => JSON.parse(await ok([...args, '-o', 'json']));

  before(async () => {
    if (present) {
      c = await startCluster();
      await ok(['create', 'namespace', 'core']);
    }
  });
  after(async () => c?.stop());

  it('configmaps: create, get, apply, patch, immutability, delete', { skip }, async () => {
    assert.match(await ok(['create', 'configmap', 'x', '-n', 'core', '--from-literal=a=b', '--from-literal=c=d']), /configmap\/x created/);
    const cm = await json(['get', 'cm', 'x', '-n', 'core']);
    assert.deepEqual(cm.data, { a: 'b', c: 'd' });
    assert.match(await ok(['get', 'configmaps', '-n', 'core']), /^NAME\s+DATA\s+AGE\n(kube-root-ca\.crt\s+\d+\s+\S+\n)?x\s+2\s+\S+\n$/);

    const manifest = (v: string, immutable = false) =>
      `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"applied","namespace":"core"},"data":{"k":"${v}"},"binaryData":{"bin":"AAEC"}${immutable ? ',"immutable":true' : ''}}`;
    assert.match(await ok(['apply', '-f', '-'], manifest('1')), /configmap\/applied created/);
    assert.match(await ok(['apply', '-f', '-'], manifest('1')), /configmap\/applied unchanged/);
    assert.match(await ok(['apply', '-f', '-'], manifest('2', true)), /configmap\/applied configured/);
    assert.match(await ok(['get', 'cm', 'applied', '-n', 'core']), /\napplied\s+2\s+/);

    const refused = await k(['patch', 'cm', 'applied', '-n', 'core', '-p', '{"data":{"k":"3"}}']);
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /ConfigMap "applied" is invalid: data: Forbidden: field is immutable when `immutable` is set/);
    await ok(['patch', 'cm', 'x', '-n', 'core', '--type=merge', '-p', '{"data":{"e":"f"}}']);
    assert.equal((await json(['get', 'cm', 'x', '-n', 'core'])).data.e, 'f');

    const bad = await k(['create', 'configmap', 'bad', '-n', 'core', '--from-literal=a=b', '--dry-run=server', '-o', 'name']);
    assert.equal(bad.code, 0, bad.stderr);
    const badKey = await k(['create', '-f', '-'], '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bad","namespace":"core"},"data":{"a/b":"c"}}');
    assert.notEqual(badKey.code, 0);
    assert.match(badKey.stderr, /ConfigMap "bad" is invalid: data\[a\/b\]: Invalid value: "a\/b": a valid config key must consist of alphanumeric characters/);

    assert.match(await ok(['delete', 'cm', 'x', 'applied', '-n', 'core']), /configmap "x" deleted\nconfigmap "applied" deleted/);
    assert.doesNotMatch(await ok(['get', 'cm', '-n', 'core', '-o', 'name']), /configmap\/(x|applied)\n/);
  });

  it('secrets: create generic, stringData, types, field selector, immutability, delete', { skip }, async () => {
    assert.match(await ok(['create', 'secret', 'generic', 's', '-n', 'core', '--from-literal=p=q']), /secret\/s created/);
    const s = await json(['get', 'secret', 's', '-n', 'core']);
    assert.equal(s.type, 'Opaque');
    assert.deepEqual(s.data, { p: Buffer.from('q').toString('base64') });

    const tls = (crt: string) =>
      `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"tls","namespace":"core"},"type":"kubernetes.io/tls","stringData":{"tls.crt":"${crt}","tls.key":"key"}}`;
    assert.match(await ok(['apply', '-f', '-'], tls('cert')), /secret\/tls created/);
    const applied = await json(['get', 'secret', 'tls', '-n', 'core']);
    assert.equal(applied.stringData, undefined);
    assert.equal(Buffer.from(applied.data['tls.crt'], 'base64').toString(), 'cert');
    await ok(['apply', '-f', '-'], tls('cert2'));
    assert.equal(Buffer.from((await json(['get', 'secret', 'tls', '-n', 'core'])).data['tls.crt'], 'base64').toString(), 'cert2');

    assert.match(await ok(['get', 'secrets', '-n', 'core']), /^NAME\s+TYPE\s+DATA\s+AGE\n(.*\n)*s\s+Opaque\s+1\s+\S+\n(.*\n)*tls\s+kubernetes\.io\/tls\s+2\s+/);
    assert.equal((await ok(['get', 'secrets', '-n', 'core', '--field-selector', 'type=kubernetes.io/tls', '-o', 'name'])).trim(), 'secret/tls');

    const missing = await k(['create', '-f', '-'], '{"apiVersion":"v1","kind":"Secret","metadata":{"name":"bad","namespace":"core"},"type":"kubernetes.io/tls","data":{"tls.key":"a2V5"}}');
    assert.notEqual(missing.code, 0);
    assert.match(missing.stderr, /Secret "bad" is invalid: data\[tls\.crt\]: Required value/);
    const notBase64 = await k(['create', '-f', '-'], '{"apiVersion":"v1","kind":"Secret","metadata":{"name":"bad","namespace":"core"},"data":{"a":"not base64!"}}');
    assert.notEqual(notBase64.code, 0);
    assert.match(notBase64.stderr, /cannot be handled as a Secret: .*illegal base64 data at input byte/);

    const retype = await k(['patch', 'secret', 's', '-n', 'core', '--type=merge', '-p', '{"type":"kubernetes.io/basic-auth"}']);
    assert.notEqual(retype.code, 0);
    // kubectl lists the causes: the type, then the keys the new type would need.
    assert.match(retype.stderr, /Secret "s" is invalid: \n\* type: Invalid value: "kubernetes.io\/basic-auth": field is immutable\n\* data\[%s\]\[username\]: Required value\n/);
    await ok(['patch', 'secret', 's', '-n', 'core', '-p', '{"stringData":{"extra":"v"},"immutable":true}']);
    const frozen = await json(['get', 'secret', 's', '-n', 'core']);
    assert.deepEqual(Object.keys(frozen.data).sort(), ['extra', 'p']);
    assert.equal(frozen.immutable, true);
    const refused = await k(['patch', 'secret', 's', '-n', 'core', '-p', '{"stringData":{"p":"changed"}}']);
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /data: Forbidden: field is immutable when `immutable` is set/);

    assert.match(await ok(['delete', 'secret', 's', 'tls', '-n', 'core']), /secret "s" deleted\nsecret "tls" deleted/);
  });

  it('serviceaccounts: create, get, apply (merge on secrets by name), patch, delete', { skip }, async () => {
    assert.match(await ok(['create', 'serviceaccount', 'sa', '-n', 'core']), /serviceaccount\/sa created/);
    assert.match(await ok(['get', 'sa', 'sa', '-n', 'core']), /^NAME\s+SECRETS\s+AGE\nsa\s+0\s+\S+\n$/);
    const manifest = (secrets: string[]) =>
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'ServiceAccount',
        metadata: { name: 'robot', namespace: 'core' },
        secrets: secrets.map((name) => ({ name, kind: 'Secret' })),
        automountServiceAccountToken: false,
      });
    assert.match(await ok(['apply', '-f', '-'], manifest(['one'])), /serviceaccount\/robot created/);
    await ok(['patch', 'sa', 'robot', '-n', 'core', '-p', '{"secrets":[{"name":"two"}],"imagePullSecrets":[{"name":"pull"}]}']);
    const robot = await json(['get', 'serviceaccount', 'robot', '-n', 'core']);
    assert.deepEqual(robot.secrets, [{ name: 'two' }, { name: 'one' }]);
    assert.deepEqual(robot.imagePullSecrets, [{ name: 'pull' }]);
    assert.equal(robot.automountServiceAccountToken, false);
    assert.match(await ok(['get', 'sa', 'robot', '-n', 'core']), /\nrobot\s+2\s+/);
    assert.match(await ok(['apply', '-f', '-'], manifest(['one', 'three'])), /serviceaccount\/robot configured/);
    assert.deepEqual((await json(['get', 'sa', 'robot', '-n', 'core'])).secrets.map((s: { name: string }) => s.name).sort(), ['one', 'three', 'two']);
    assert.match(await ok(['delete', 'sa', 'sa', 'robot', '-n', 'core']), /serviceaccount "sa" deleted\nserviceaccount "robot" deleted/);
  });

  it('leases: apply, get, patch, validation, delete', { skip }, async () => {
    const manifest = (holder: string) =>
      JSON.stringify({
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name: 'leader', namespace: 'core' },
        spec: { holderIdentity: holder, leaseDurationSeconds: 15, acquireTime: '2024-01-01T00:00:00.123456Z', leaseTransitions: 0 },
      });
    assert.match(await ok(['apply', '-f', '-'], manifest('node-a')), /lease\.coordination\.k8s\.io\/leader created/);
    assert.match(await ok(['get', 'leases', '-n', 'core']), /^NAME\s+HOLDER\s+AGE\nleader\s+node-a\s+\S+\n$/);
    assert.match(await ok(['apply', '-f', '-'], manifest('node-b')), /lease\.coordination\.k8s\.io\/leader configured/);
    // MicroTime parses exactly six fractional digits, as Go's RFC3339Micro layout does.
    const short = await k(['patch', 'lease', 'leader', '-n', 'core', '--type=merge', '-p', '{"spec":{"renewTime":"2024-01-01T00:00:10.5Z"}}']);
    assert.notEqual(short.code, 0);
    assert.match(short.stderr, /cannot parse "\.5Z" as "\.000000"/);
    await ok(['patch', 'lease', 'leader', '-n', 'core', '--type=merge', '-p', '{"spec":{"renewTime":"2024-01-01T00:00:10.500000Z","leaseTransitions":1}}']);
    const lease = await json(['get', 'lease.coordination.k8s.io', 'leader', '-n', 'core']);
    assert.deepEqual(lease.spec, {
      holderIdentity: 'node-b',
      leaseDurationSeconds: 15,
      acquireTime: '2024-01-01T00:00:00.123456Z',
      renewTime: '2024-01-01T00:00:10.500000Z',
      leaseTransitions: 1,
    });
    const bad = await k(['patch', 'lease', 'leader', '-n', 'core', '--type=merge', '-p', '{"spec":{"leaseDurationSeconds":0}}']);
    assert.notEqual(bad.code, 0);
    // kubectl words it from the Status details (the kind without its group).
    assert.match(bad.stderr, /The Lease "leader" is invalid: spec\.leaseDurationSeconds: Invalid value: 0: must be greater than 0/);
    assert.match(await ok(['delete', 'lease', 'leader', '-n', 'core']), /lease\.coordination\.k8s\.io "leader" deleted/);
  });

  it('the namespace controller deletes configmaps, secrets, serviceaccounts and leases with their namespace', { skip }, async () => {
    await ok(['create', 'namespace', 'doomed']);
    await ok(['create', 'configmap', 'cm', '-n', 'doomed', '--from-literal=a=b']);
    await ok(['create', 'secret', 'generic', 'sec', '-n', 'doomed', '--from-literal=a=b']);
    await ok(['create', 'serviceaccount', 'sa', '-n', 'doomed']);
    await ok(['apply', '-f', '-'], '{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"l","namespace":"doomed"},"spec":{}}');
    assert.match(await ok(['delete', 'namespace', 'doomed', '--wait=true', '--timeout=30s']), /namespace "doomed" deleted/);
    const gone = await k(['get', 'namespace', 'doomed']);
    assert.notEqual(gone.code, 0);
    assert.match(gone.stderr, /namespaces "doomed" not found/);
  });
});
