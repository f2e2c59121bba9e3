// End to end through kubectl: the kube-api-access projected volume the ServiceAccount admission
// plugin gives every pod (a bound token from TokenRequest, ca.crt from kube-root-ca.crt, the
// namespace) is laid out by orchlet and readable by the container.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeJwt } from 'jose';
import { startCluster, type TestCluster } from '../helpers/cluster.js';
import { startAgent, type TestAgent } from '../helpers/agent.js';
import { waitFor } from '../agent/runtime-contract.js';

type Json = Record<string, any>;

void describe('orchlet: service account token volumes (kubectl)', () => {
  let c: TestCluster;
  let a: TestAgent;
  let keyDir: string;

  before(async () => {
    keyDir = await mkdtemp(join(tmpdir(), 'orchlet-sa-'));
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
    await writeFile(join(keyDir, 'sa.key'), rsa.privateKey.export({ format: 'pem', type: 'pkcs8' }));
    c = await startCluster([
      '--service-account-issuer=https://orch.test',
      `--service-account-key-file=${join(keyDir, 'sa.key')}`,
      `--service-account-signing-key-file=${join(keyDir, 'sa.key')}`,
    ]);
    a = await startAgent(c);
  });
  after(async () => {
    await a?.stop();
    await c?.stop();
    await rm(keyDir, { recursive: true, force: true });
  });

  void it('writes the bound token, ca.crt and namespace of kube-api-access-* for the container', async () => {
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'with-token', namespace: 'default' },
      spec: {
        nodeName: a.nodeName,
        restartPolicy: 'Never',
        containers: [{ name: 'main', image: 'busybox', command: ['sh', '-c', 'd=$ORCH_ROOTFS/var/run/secrets/kubernetes.io/serviceaccount; cat $d/namespace; echo; ls $d; cat $d/token; echo; head -1 $d/ca.crt'] }],
      },
    };
    // The namespace's default ServiceAccount is made by a controller: retry until admission finds it.
    await waitFor('the pod to be admitted', async () => ((await c.kubectl(['create', '-f', '-'], { input: JSON.stringify(pod) })).code === 0 ? true : undefined));
    const p = await waitFor('with-token to finish', async () => {
      const r = await c.kubectl(['get', 'pod', 'with-token', '-o', 'json']);
      const x = r.code === 0 ? (JSON.parse(r.stdout) as Json) : undefined;
      return x?.status?.phase === 'Succeeded' || x?.status?.phase === 'Failed' ? x : undefined;
    }, 20_000);
    assert.equal(p.status.phase, 'Succeeded', JSON.stringify(p.status));
    assert.match(String(p.spec.volumes[0].name), /^kube-api-access-[a-z0-9]{5}$/);
    const lines = (await c.kubectl(['logs', 'with-token'])).stdout.split('\n');
    assert.equal(lines[0], 'default');
    assert.deepEqual(lines.slice(1, 4), ['ca.crt', 'namespace', 'token']);
    const claims = decodeJwt(lines[4]!) as Json;
    assert.equal(claims.sub, 'system:serviceaccount:default:default');
    assert.equal(claims['kubernetes.io'].pod.name, 'with-token');
    assert.equal(claims['kubernetes.io'].pod.uid, p.metadata.uid);
    assert.equal(lines[5], '-----BEGIN CERTIFICATE-----');
  });
});
